/* master: the supervisor of every Petrel daemon.  Reads main.cf and
 * master.cf, opens the service endpoints, starts daemons on demand,
 * restarts them, throttles services that fail at start-up, sends
 * wakeups, reloads on SIGHUP and stops everything on SIGTERM.
 * See doc/master.md and master(8). */
#include "fdutil.h"
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "jail.h"
#include "master.h"
#include "mem.h"
#include "pconfig.h"
#include "postfix_compat.h"
#include "pidfile.h"
#include "selfpipe.h"
#include "sock.h"

struct master_state master;

static void signal_event(int fd, int events, void *ctx)
{
	bool term;
	(void)fd;
	(void)events;
	(void)ctx;

	selfpipe_drain();
	if (selfpipe_take(SIGCHLD))
		master_reap();
	if (selfpipe_take(SIGQUIT))
		master_stop(true);
	/* Both taken: one stop for either or both. */
	term = selfpipe_take(SIGTERM);
	if (selfpipe_take(SIGINT) || term)
		master_stop(false);
	if (selfpipe_take(SIGUSR1))
		master_log_reopen("logrotate");
	if (selfpipe_take(SIGHUP) && !master.stopping)
		master_reload();
}

static void setup_signals(void)
{
	static const int sigs[] = { SIGHUP, SIGTERM, SIGINT, SIGQUIT, SIGCHLD, SIGUSR1 };

	if (selfpipe_open() < 0)
		log_fatal("pipe: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		selfpipe_catch(sigs[i], SA_RESTART | SA_NOCLDSTOP);
	signal(SIGPIPE, SIG_IGN);
	event_add(master.loop, selfpipe_fd(), EVENT_READ, signal_event, NULL);
}

static void usage(void)
{
	fprintf(stderr, "usage: master [-dtv] [-c config_dir]\n"
	    "  -c dir  configuration directory (default %s, or $MAIL_CONFIG)\n"
	    "  -d      stay in the foreground\n"
	    "  -t      test: exit 0 if no master runs for this queue, 1 if one does\n"
	    "  -v      verbose logging (repeat for more)\n", DEF_CONFIG_DIR);
	exit(64);
}

static void setup_logging(void)
{
	const char *file = pconfig_get_str("maillog_file");
	str_t name = STR_INIT;

	str_setf(&name, "%s/master", pconfig_get_str("syslog_name"));
	log_init(str_cstr(&name));
	str_release(&name);
	if (*file) {
		if (log_to_file(file) < 0)
			log_fatal("maillog_file %s: %s", file, strerror(errno));
	} else {
		log_to_syslog();
	}
}

/* Goes to the background.  The foreground process waits for a word on
 * a pipe: "ok" once the daemon has its lock and endpoints, or EOF if it
 * died (its messages went to our shared stderr). */
static int detach(void)
{
	int p[2];
	pid_t pid;
	char buf[4];
	ssize_t n;

	if (pipe(p) < 0)
		log_fatal("pipe: %s", strerror(errno));
	if ((pid = fork()) < 0)
		log_fatal("fork: %s", strerror(errno));
	if (pid > 0) {
		close(p[1]);
		do
			n = read(p[0], buf, sizeof(buf));
		while (n < 0 && errno == EINTR);
		_exit(n == 2 && memcmp(buf, "ok", 2) == 0 ? 0 : 1);
	}
	close(p[0]);
	sock_set_cloexec(p[1], true);
	setsid();
	return p[1];
}

static void ready(int fd, bool foreground)
{
	int null;

	if (fd >= 0) {
		if (write(fd, "ok", 2) < 0) {
			/* the waiting parent is gone: nobody to tell */
		}
		close(fd);
	}
	if (foreground)
		return;
	/* Daemon: no terminal.  Early errors of children (before they read
	 * main.cf) and sanitizer reports still reach maillog_file. */
	log_also_stderr(0);
	if ((null = open("/dev/null", O_RDWR)) < 0)
		return;
	dup2(null, 0);
	dup2(null, 1);
	const char *file = pconfig_get_str("maillog_file");
	int errfd = *file ? open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
	dup2(errfd >= 0 ? errfd : null, 2);
	if (errfd >= 0)
		close(errfd);
	if (null > 2)
		close(null);
}

int main(int argc, char **argv)
{
	const char *config_dir = getenv("MAIL_CONFIG");
	char real[PATH_MAX];
	bool foreground = false, test_only = false;
	str_t path = STR_INIT, errors = STR_INIT;
	pid_t holder;
	int c, ready_fd = -1, lock_fd;

	fd_sane_stdio();
	log_init("petrel/master");
	while ((c = getopt(argc, argv, "c:dtv")) != -1) {
		switch (c) {
		case 'c': config_dir = optarg; break;
		case 'd': foreground = true; break;
		case 't': test_only = true; break;
		case 'v': log_verbose++; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (config_dir == NULL)
		config_dir = DEF_CONFIG_DIR;
	if (realpath(config_dir, real) == NULL)
		log_fatal("configuration directory %s: %s", config_dir, strerror(errno));
	master.config_dir = real;

	/* main.cf's warnings are logged below, once the log is set up (and
	 * by nobody else: the daemons leave them to master). */
	pconfig_defer_warnings();
	if (pconfig_load(master.config_dir) < 0)
	{
		log_lines(LOG_LVL_ERROR, pconfig_errors());
		log_fatal("errors in %s/main.cf", master.config_dir);
	}
	master_pidfile_path(&path);
	if (test_only) {
		pid_t pid = master_running(str_cstr(&path));
		str_release(&path);
		return pid > 0 ? 1 : 0;
	}
	str_setf(&path, "%s/master.cf", master.config_dir);
	master.mcf = mastercf_load(str_cstr(&path), &errors);
	if (master.mcf == NULL || str_len(&errors) > 0) {
		log_lines(LOG_LVL_ERROR, str_cstr(&errors));
		log_fatal("errors in %s", str_cstr(&path));
	}
	str_setf(&path, "%s/main.cf", master.config_dir);
	if (file_read_all_follow(str_cstr(&path), &master.maincf_text, 16 << 20) < 0)
		str_reset(&master.maincf_text);

	setup_logging();
	log_also_stderr(1);
	pconfig_log_warnings();
	/* Services of a Postfix master.cf whose daemon Petrel does not have
	 * are left out, with a warning (petrel check says the same). */
	if (postfix_mastercf_filter(master.mcf,
	    pconfig_get_str("daemon_directory"), &errors) > 0)
		log_lines(LOG_LVL_WARNING, str_cstr(&errors));
	master.queue_dir = xstrdup(pconfig_get_str("queue_directory"));
	if (chdir(master.queue_dir) < 0)
		log_fatal("queue_directory %s: %s (petrel check creates it)",
		    master.queue_dir, strerror(errno));
	master.private_instance = geteuid() != 0;
	if (!master.private_instance) {
		const char *owner = pconfig_get_str("mail_owner");
		struct passwd *pw = getpwnam(owner);
		if (pw == NULL)
			log_fatal("mail_owner account '%s' does not exist "
			    "(petrel check creates it)", owner);
		if (pw->pw_uid == 0)
			log_fatal("mail_owner '%s' has uid 0; choose an unprivileged "
			    "account", owner);
	}

	if (!foreground)
		ready_fd = detach();

	master_pidfile_path(&path);
	lock_fd = master_pidfile_lock(str_cstr(&path), &holder);
	if (lock_fd < 0) {
		if (errno == EAGAIN)
			log_fatal("the Petrel mail system is already running for "
			    "queue_directory %s (master pid %ld)", master.queue_dir,
			    (long)holder);
		log_fatal("lock file %s: %s (petrel check creates its directory)",
		    str_cstr(&path), strerror(errno));
	}
	(void)lock_fd;	/* held open until we exit */

	if ((master.loop = event_loop_new(EVENT_BACKEND_DEFAULT)) == NULL)
		log_fatal("event loop: %s", strerror(errno));
	list_init(&master.services);
	list_init(&master.detached);
	master.envp = master_child_env(master.config_dir);
	master.foreground = foreground;
	master_log_init();
	setup_signals();
	if (master.private_instance) {
		struct passwd *pw = getpwuid(geteuid());
		log_info("private instance: every process runs as %s (uid %ld); "
		    "unpriv and chroot in master.cf are not applied",
		    pw ? pw->pw_name : "?", (long)geteuid());
	}
	if (!master.private_instance && jail_wanted(master.mcf))
		(void)jail_refresh(master.queue_dir,
		    pconfig_get_str("chroot_files"));
	master_services_start(true);
	log_info("daemon started -- version %s, configuration %s",
	    PETREL_VERSION, master.config_dir);
	ready(ready_fd, foreground);
	str_release(&path);
	str_release(&errors);

	for (;;) {
		if (event_run_once(master.loop, -1) < 0 && errno != EINTR)
			log_fatal("event loop: %s", strerror(errno));
	}
}
