/* "petrel check": the queue directory tree, the accounts, the
 * configuration files' permissions.  See petrel(1). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "event.h"
#include "jail.h"
#include "fdutil.h"
#include "content_filter.h"
#include "log.h"
#include "mastercf.h"
#include "postfix_compat.h"
#include "mem.h"
#include "pconfig.h"
#include "petrel_check.h"
#include "queue_dirs.h"
#include "queue_path.h"
#include "server.h"
#include "str.h"
#include <time.h>

/* A daemon's configuration check (-C) must end within this. */
#define DAEMON_CHECK_MS	10000
/* Most of a failing check's messages that are passed on. */
#define DAEMON_CHECK_OUT 8192

extern char **environ;

/* The first of the candidates that exists. */
static const char *find_prog(const char *const *cands)
{
	for (; *cands; cands++)
		if (access(*cands, X_OK) == 0)
			return *cands;
	return NULL;
}

/* Runs argv (no shell); 0 if it exited 0. */
static int run(char *const argv[])
{
	str_t cmd = STR_INIT;
	pid_t pid;
	int st;

	for (int i = 0; argv[i]; i++)
		str_catf(&cmd, "%s%s", i ? " " : "", argv[i]);
	log_info("running: %s", str_cstr(&cmd));
	str_release(&cmd);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int create_group(const char *name)
{
	static const char *const groupadd[] = { "/usr/sbin/groupadd",
		"/sbin/groupadd", NULL };
	static const char *const pw[] = { "/usr/sbin/pw", NULL };
	const char *p;

	if ((p = find_prog(groupadd)) != NULL)
		return run((char *const[]){ (char *)p, "--system", (char *)name, NULL });
	if ((p = find_prog(pw)) != NULL)
		return run((char *const[]){ (char *)p, "groupadd", (char *)name, NULL });
	log_error("no groupadd or pw command: create group %s by hand", name);
	return -1;
}

static int create_user(const char *name, const char *home)
{
	static const char *const useradd[] = { "/usr/sbin/useradd",
		"/sbin/useradd", NULL };
	static const char *const pw[] = { "/usr/sbin/pw", NULL };
	static const char *const shells[] = { "/usr/sbin/nologin", "/sbin/nologin",
		"/usr/bin/false", "/bin/false", NULL };
	const char *shell = find_prog(shells);
	const char *p;

	if (shell == NULL)
		shell = "/bin/false";
	if ((p = find_prog(useradd)) != NULL) {
		/* The account's own group: an existing one of that name, or a
		 * new one. */
		if (getgrnam(name))
			return run((char *const[]){ (char *)p, "--system", "--no-create-home",
			    "--home-dir", (char *)home, "--shell", (char *)shell,
			    "-g", (char *)name, (char *)name, NULL });
		return run((char *const[]){ (char *)p, "--system", "--no-create-home",
		    "--home-dir", (char *)home, "--shell", (char *)shell,
		    "--user-group", (char *)name, NULL });
	}
	if ((p = find_prog(pw)) != NULL)
		return run((char *const[]){ (char *)p, "useradd", (char *)name,
		    "-d", (char *)home, "-s", (char *)shell, "-c", "Petrel mail system",
		    NULL });
	log_error("no useradd or pw command: create account %s by hand", name);
	return -1;
}

/* Root: mail_owner and setgid_group exist (created if not); fills o. */
static int accounts(queue_owners_t *o, const char *qdir)
{
	const char *owner = pconfig_get_str("mail_owner");
	const char *group = pconfig_get_str("setgid_group");
	struct passwd *pw;
	struct group *gr;

	if ((gr = getgrnam(group)) == NULL) {
		log_warning("setgid_group '%s' does not exist -- creating it", group);
		if (create_group(group) < 0 || (gr = getgrnam(group)) == NULL) {
			log_error("cannot create group %s", group);
			return -1;
		}
	}
	o->setgid_gid = gr->gr_gid;
	if ((pw = getpwnam(owner)) == NULL) {
		log_warning("mail_owner '%s' does not exist -- creating it", owner);
		if (create_user(owner, qdir) < 0 || (pw = getpwnam(owner)) == NULL) {
			log_error("cannot create account %s", owner);
			return -1;
		}
	}
	if (pw->pw_uid == 0) {
		log_error("mail_owner '%s' has uid 0; choose an unprivileged account",
		    owner);
		return -1;
	}
	if (pw->pw_gid == o->setgid_gid)
		log_warning("mail_owner '%s' has setgid_group '%s' as its group: "
		    "keep them apart", owner, group);
	o->mail_uid = pw->pw_uid;
	o->mail_gid = pw->pw_gid;
	return 0;
}

/* Configuration files: only root (or the instance's user) may write. */
static int check_config_file(const char *path, bool must_exist)
{
	struct stat st;
	uid_t me = geteuid();

	if (stat(path, &st) < 0) {
		if (errno == ENOENT && !must_exist)
			return 0;
		log_error("%s: %s", path, strerror(errno));
		return 1;
	}
	if (st.st_uid != me && st.st_uid != 0) {
		log_warning("%s: owned by uid %ld, not by %s", path, (long)st.st_uid,
		    me == 0 ? "root" : "this user");
		return 0;
	}
	if (st.st_mode & 022)
		log_warning("%s: writable by group or others (mode %04o)", path,
		    (unsigned)(st.st_mode & 07777));
	return 0;
}

/* The group commit's state file must be mail_owner's (libutil/dirsync.c
 * makes it only in a directory the process owns, but older versions let
 * a root postdrop make it): another owner's is removed, and the next
 * writer makes it anew. */
static void stale_dirsync_state(const char *qdir, uid_t mail_uid)
{
	str_t path = STR_INIT;
	struct stat st;

	str_setf(&path, "%s/%s", qdir, QUEUE_DIRSYNC_STATE);
	if (lstat(str_cstr(&path), &st) == 0 && st.st_uid != mail_uid) {
		if (unlink(str_cstr(&path)) == 0)
			log_info("removed %s: owned by uid %ld, not mail_owner",
			    str_cstr(&path), (long)st.st_uid);
		else
			log_warning("%s: owned by uid %ld, not mail_owner; cannot "
			    "remove it: %s", str_cstr(&path), (long)st.st_uid,
			    strerror(errno));
	}
	str_release(&path);
}

/* What master gives a child: the configuration directory, a fixed PATH,
 * TZ, and the sanitizer settings of test builds. */
static char **check_env(const char *config_dir)
{
	static const char *const keep[] = { "TZ=", "ASAN_", "LSAN_", "UBSAN_",
		"MSAN_", "TSAN_" };
	size_t n = 0, cap = 4;
	char **env = xcalloc(cap, sizeof(char *));
	str_t v = STR_INIT;

	str_setf(&v, "MAIL_CONFIG=%s", config_dir);
	env[n++] = str_steal(&v);
	env[n++] = xstrdup("PATH=/usr/bin:/bin:/usr/sbin:/sbin");
	for (char **e = environ; e && *e; e++) {
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
			if (strncmp(*e, keep[i], strlen(keep[i])) != 0)
				continue;
			if (n + 2 > cap) {
				cap *= 2;
				env = xreallocarray(env, cap, sizeof(char *));
			}
			env[n++] = xstrdup(*e);
			break;
		}
	}
	env[n] = NULL;
	return env;
}

static void free_env(char **env)
{
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

/* Passes on a failed check's messages, each with the service's place in
 * master.cf (the daemon's own "name[pid]: " prefix dropped). */
static void relay_lines(const mastercf_entry_t *e, const char *text)
{
	while (*text) {
		size_t len = strcspn(text, "\n");
		char *line = xstrndup(text, len);
		const char *msg = strstr(line, "]: ");

		msg = msg ? msg + 3 : line;
		if (strncmp(msg, "fatal: ", 7) == 0 || strncmp(msg, "error: ", 7) == 0)
			msg += 7;
		if (*msg)
			log_error("%s:%d: service %s/%s: %s: %s", e->file, e->line,
			    e->service, mastercf_type_name(e->type), e->argv[0], msg);
		free(line);
		text += len;
		if (*text)
			text++;
	}
}

/* Runs the service's program in check mode (server.h: -C) with the
 * service's arguments, as master would run it; 0 if it accepts the
 * configuration. */
static int daemon_check(const mastercf_entry_t *e, const char *cmd,
    const char *config_dir, char **env)
{
	char **argv = xcalloc((size_t)e->argc + 10, sizeof(char *));
	str_t out = STR_INIT;
	int p[2], a = 0, st = 0, rc = -1;
	int64_t deadline = event_now_ms() + DAEMON_CHECK_MS;
	bool timed_out = false;
	pid_t pid;

	argv[a++] = (char *)cmd;
	argv[a++] = "-c";
	argv[a++] = (char *)config_dir;
	argv[a++] = "-n";
	argv[a++] = e->service;
	argv[a++] = "-t";
	argv[a++] = (char *)mastercf_type_name(e->type);
	argv[a++] = "-C";
	for (int i = 1; i < e->argc; i++)
		argv[a++] = e->argv[i];
	argv[a] = NULL;
	if (pipe(p) < 0) {
		log_error("pipe: %s", strerror(errno));
		free(argv);
		return -1;
	}
	if ((pid = fork()) < 0) {
		log_error("fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		free(argv);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
		    dup2(p[1], 2) < 0)
			_exit(126);
		fd_close_from(3);
		execve(cmd, argv, env);
		_exit(127);
	}
	close(p[1]);
	/* Read what it says until it closes its end, within the bound. */
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		char buf[1024];
		int64_t left = deadline - event_now_ms();
		ssize_t n;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (poll(&pfd, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd.revents == 0)
			continue;
		n = read(p[0], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (str_len(&out) < DAEMON_CHECK_OUT)
			str_append(&out, buf, (size_t)n);
	}
	close(p[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (timed_out) {
		log_error("%s:%d: service %s/%s: %s did not finish its "
		    "configuration check within %d s", e->file, e->line, e->service,
		    mastercf_type_name(e->type), cmd, DAEMON_CHECK_MS / 1000);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		rc = 0;
	} else {
		relay_lines(e, str_cstr(&out));
		log_error("%s:%d: service %s/%s: %s refuses this configuration "
		    "(%s %d)", e->file, e->line, e->service,
		    mastercf_type_name(e->type), cmd,
		    WIFEXITED(st) ? "exit status" : "signal",
		    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	str_release(&out);
	free(argv);
	return rc;
}

/* Every master.cf service, used yet or not: master offers each one and
 * starts its program when a client comes, so a program that is missing
 * or refuses its configuration (main.cf with the service's -o settings)
 * is refused now rather than found out by the first client. */
static int check_services(const mastercf_t *m, const char *config_dir)
{
	char **env = check_env(config_dir);
	str_t cmd = STR_INIT;
	int problems = 0;

	for (size_t i = 0; i < m->count; i++) {
		const mastercf_entry_t *e = m->entries[i];
		if (e->argv[0][0] == '/')
			str_set(&cmd, e->argv[0]);
		else
			str_setf(&cmd, "%s/%s",
			    pconfig_get_str("daemon_directory"), e->argv[0]);
		if (access(str_cstr(&cmd), X_OK) < 0) {
			log_error("%s:%d: service %s/%s: %s: %s", e->file, e->line,
			    e->service, mastercf_type_name(e->type), str_cstr(&cmd),
			    strerror(errno));
			problems++;
			continue;
		}
		if (daemon_check(e, str_cstr(&cmd), config_dir, env) < 0)
			problems++;
	}
	str_release(&cmd);
	free_env(env);
	return problems;
}

/* Petrel has no virtual(8) agent: Postfix's default virtual_transport
 * (virtual) names a service only a configuration that adds one has.
 * Mail to virtual_mailbox_domains would wait in the queue for it. */
static void check_virtual_transport(const mastercf_t *m)
{
	const char *vt = pconfig_get_str("virtual_transport");
	const char *colon = strchr(vt, ':');
	size_t n = colon != NULL ? (size_t)(colon - vt) : strlen(vt);
	char name[256];

	if (pconfig_get_str("virtual_mailbox_domains")[0] == '\0' || n == 0 ||
	    n >= sizeof(name))
		return;
	memcpy(name, vt, n);
	name[n] = '\0';
	if (mastercf_find(m, name, "unix") == NULL)
		log_warning("virtual_transport = %s names no master.cf service "
		    "\"%s\": mail to virtual_mailbox_domains will be deferred "
		    "(Petrel has no virtual agent; use e.g. "
		    "lmtp:unix:private/dovecot-lmtp)", vt, name);
}

/* A content filter must name a master.cf service (of type unix: qmgr
 * talks to delivery agents there), or its mail waits in the queue: said
 * now, with where the value comes from.  The syntax is checked by the
 * daemons that read it (smtpd, pickup: check_services). */
static int check_filter_value(const mastercf_t *m, const char *value,
    const char *where)
{
	str_t t = STR_INIT, n = STR_INIT;
	int bad = 0;

	if (*value != '\0' && filter_split(value, &t, &n) &&
	    mastercf_find(m, str_cstr(&t), "unix") == NULL) {
		log_error("%s: content_filter = %s names no master.cf service "
		    "\"%s\" of type unix", where, value, str_cstr(&t));
		bad = 1;
	}
	str_release(&t);
	str_release(&n);
	return bad;
}

static int check_content_filters(const mastercf_t *m, const char *config_dir)
{
	str_t where = STR_INIT;
	int problems;

	str_setf(&where, "%s/main.cf", config_dir);
	problems = check_filter_value(m, pconfig_get_str("content_filter"),
	    str_cstr(&where));
	for (size_t i = 0; i < m->count; i++) {
		const mastercf_entry_t *e = m->entries[i];
		for (int k = 0; k < e->noverride; k++) {
			if (strcmp(e->override_name[k], "content_filter") != 0)
				continue;
			str_setf(&where, "%s:%d", e->file, e->line);
			problems += check_filter_value(m, e->override_value[k],
			    str_cstr(&where));
		}
	}
	str_release(&where);
	return problems;
}

int petrel_check(const char *config_dir)
{
	const char *qdir = pconfig_get_str("queue_directory");
	queue_owners_t o;
	str_t path = STR_INIT, errors = STR_INIT;
	mastercf_t *m;
	int problems = 0, r;

	if (*qdir != '/') {
		log_error("queue_directory must be an absolute path: %s", qdir);
		return 1;
	}
	problems += check_config_file(config_dir, true);
	str_setf(&path, "%s/main.cf", config_dir);
	problems += check_config_file(str_cstr(&path), true);
	str_setf(&path, "%s/master.cf", config_dir);
	problems += check_config_file(str_cstr(&path), true);
	m = mastercf_load(str_cstr(&path), &errors);
	if (m == NULL || str_len(&errors)) {
		log_lines(LOG_LVL_ERROR, str_cstr(&errors));
		problems++;
	} else if (postfix_mastercf_filter(m,
	    pconfig_get_str("daemon_directory"), &errors) > 0) {
		/* Not a problem: master leaves them out the same way. */
		log_lines(LOG_LVL_WARNING, str_cstr(&errors));
	}
	if (m != NULL)
		check_virtual_transport(m);
	if (m != NULL)
		problems += check_content_filters(m, config_dir);
	str_setf(&path, "%s/master", pconfig_get_str("daemon_directory"));
	if (access(str_cstr(&path), X_OK) < 0) {
		log_error("%s: %s (daemon_directory)", str_cstr(&path), strerror(errno));
		problems++;
	}

	if (geteuid() == 0) {
		o.master_uid = 0;
		o.master_gid = 0;
		if (accounts(&o, qdir) < 0) {
			if (m)
				mastercf_free(m);
			str_release(&path);
			str_release(&errors);
			return problems + 1;
		}
	} else {
		/* Private instance: all of it belongs to us. */
		o.master_uid = o.mail_uid = geteuid();
		o.master_gid = o.mail_gid = o.setgid_gid = getegid();
	}
	r = queue_dirs_check(qdir, &o, true);
	problems += r < 0 ? 1 : r;
	stale_dirsync_state(qdir, o.mail_uid);
	if (geteuid() == 0 && jail_wanted(m))
		problems += jail_refresh(qdir, pconfig_get_str("chroot_files"));
	/* The daemons check from the queue directory, as they run. */
	if (m && r == 0)
		problems += check_services(m, config_dir);
	if (m)
		mastercf_free(m);
	str_release(&path);
	str_release(&errors);
	return problems;
}
