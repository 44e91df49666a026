/* "petrel check": the queue directory tree, the accounts, the
 * configuration files' permissions.  See petrel(1). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "jail.h"
#include "log.h"
#include "mastercf.h"
#include "mem.h"
#include "pconfig.h"
#include "petrel_check.h"
#include "queue_dirs.h"
#include "queue_path.h"
#include "server.h"
#include "str.h"

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
	const char *owner = config_get_str("mail_owner");
	const char *group = config_get_str("setgid_group");
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

int petrel_check(const char *config_dir)
{
	const char *qdir = config_get_str("queue_directory");
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
	}
	str_setf(&path, "%s/master", config_get_str("daemon_directory"));
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
		problems += jail_refresh(qdir, config_get_str("chroot_files"));
	if (m)
		mastercf_free(m);
	str_release(&path);
	str_release(&errors);
	return problems;
}
