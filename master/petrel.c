/* petrel: start, stop and look after the mail system.
 *
 *   petrel [-v] [-c config_dir] start | start-fg | stop | abort | reload |
 *                               status | check | flush | logrotate
 *
 * See petrel(1) and doc/master.md. */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cmd_log.h"
#include "endpoint.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "petrel_check.h"
#include "petrel_logrotate.h"
#include "pidfile.h"
#include "qfile.h"
#include "queue_flush.h"
#include "server.h"
#include "str.h"

/* Bounds of the waits: polls of WAIT_STEP_MS. */
#define WAIT_STEP_MS	100
#define START_WAIT_MS	30000
#define STOP_WAIT_MS	30000
#define ABORT_WAIT_MS	10000

static const char *config_dir;
static str_t pidfile = STR_INIT;

static void usage(void)
{
	fprintf(stderr, "usage: petrel [-v] [-c config_dir] start | start-fg | "
	    "stop | abort | reload | status | check | flush | logrotate\n");
	exit(64);
}

static void nap(void)
{
	struct timespec ts = { 0, WAIT_STEP_MS * 1000000L };
	nanosleep(&ts, NULL);
}

static pid_t running(void)
{
	pid_t pid = master_running(str_cstr(&pidfile));

	if (pid < 0) {
		log_error("cannot examine %s: %s", str_cstr(&pidfile), strerror(errno));
		return 0;
	}
	return pid;
}

/* Waits until master is gone; true if it is. */
static bool wait_gone(int ms)
{
	for (int waited = 0; waited < ms; waited += WAIT_STEP_MS) {
		if (running() == 0)
			return true;
		nap();
	}
	return running() == 0;
}

static char *master_path(void)
{
	str_t p = STR_INIT;
	str_setf(&p, "%s/master", pconfig_get_str("daemon_directory"));
	return str_steal(&p);
}

static int cmd_check(void)
{
	int problems = petrel_check(config_dir);

	if (problems > 0) {
		log_error("check found %d problem%s it could not fix", problems,
		    problems == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

/* Temporary files left by writers that died (a crash, a kill): nothing
 * of this instance writes now, but postdrop may; the lock tells
 * (doc/queue-file.md §4).  maildrop/ is pickup's. */
static void purge_temp_files(void)
{
	queue_layout_t ql;
	str_t err = STR_INIT;

	if (queue_layout_from_config(&ql, &err) < 0) {
		log_warning("not looking for stale temporary files: %s",
		    str_cstr(&err));
		str_release(&err);
		return;
	}
	(void)qfile_tmp_purge(&ql,
	    (time_t)pconfig_get_time("temp_file_max_age"));
	queue_layout_free(&ql);
	str_release(&err);
}

static int cmd_start(bool foreground)
{
	pid_t pid = running(), child;
	char *prog;
	int st;

	if (pid > 0) {
		log_error("the Petrel mail system is already running (master pid %ld)",
		    (long)pid);
		return 1;
	}
	if (cmd_check() != 0) {
		log_error("not starting the mail system");
		return 1;
	}
	purge_temp_files();
	prog = master_path();
	if (foreground) {
		log_info("starting the Petrel mail system in the foreground");
		execl(prog, prog, "-d", "-c", config_dir, (char *)NULL);
		log_error("cannot run %s: %s", prog, strerror(errno));
		return 1;
	}
	log_info("starting the Petrel mail system");
	if ((child = fork()) < 0) {
		log_error("fork: %s", strerror(errno));
		return 1;
	}
	if (child == 0) {
		execl(prog, prog, "-c", config_dir, (char *)NULL);
		log_error("cannot run %s: %s", prog, strerror(errno));
		_exit(127);
	}
	free(prog);
	/* master's foreground process exits once the daemon is ready. */
	for (int waited = 0;; waited += WAIT_STEP_MS) {
		pid_t r = waitpid(child, &st, WNOHANG);
		if (r == child)
			break;
		if (r < 0 && errno != EINTR) {
			log_error("waitpid: %s", strerror(errno));
			return 1;
		}
		if (waited >= START_WAIT_MS) {
			log_error("master did not report ready within %d s",
			    START_WAIT_MS / 1000);
			return 1;
		}
		nap();
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		log_error("master failed to start (see the messages above and the log)");
		return 1;
	}
	if ((pid = running()) <= 0) {
		log_error("master reported ready but holds no lock on %s",
		    str_cstr(&pidfile));
		return 1;
	}
	return 0;
}

static int cmd_stop(bool abort_now)
{
	pid_t pid = running();

	if (pid <= 0) {
		log_error("the Petrel mail system is not running");
		return 1;
	}
	log_info("%s the Petrel mail system (master pid %ld)",
	    abort_now ? "aborting" : "stopping", (long)pid);
	if (kill(pid, abort_now ? SIGQUIT : SIGTERM) < 0) {
		log_error("kill %ld: %s", (long)pid, strerror(errno));
		return 1;
	}
	/* A stop lets work in progress finish for stop_drain_timeout; master
	 * kills what is left soon after. */
	long drain = pconfig_get_time("stop_drain_timeout");
	int stop_ms = drain > 0 && drain < 3600 && (drain + 10) * 1000 > STOP_WAIT_MS ?
	    (int)(drain + 10) * 1000 : STOP_WAIT_MS;
	if (wait_gone(abort_now ? ABORT_WAIT_MS : stop_ms))
		return 0;
	if (abort_now) {
		log_warning("master pid %ld still running; killing it", (long)pid);
		kill(pid, SIGKILL);
		if (wait_gone(ABORT_WAIT_MS))
			return 0;
	}
	log_error("master pid %ld is still running after %d s", (long)pid,
	    (abort_now ? 2 * ABORT_WAIT_MS : stop_ms) / 1000);
	return 1;
}

static int cmd_reload(void)
{
	pid_t pid = running();

	if (pid <= 0) {
		log_error("the Petrel mail system is not running");
		return 1;
	}
	log_info("refreshing the Petrel mail system (master pid %ld)", (long)pid);
	if (kill(pid, SIGHUP) < 0) {
		log_error("kill %ld: %s", (long)pid, strerror(errno));
		return 1;
	}
	return 0;
}

static int cmd_status(void)
{
	pid_t pid = running();

	if (pid <= 0) {
		log_info("the Petrel mail system is not running");
		return 1;
	}
	log_info("the Petrel mail system is running: master pid %ld", (long)pid);
	printf("%ld\n", (long)pid);
	return 0;
}

static int cmd_flush(void)
{
	str_t where = STR_INIT, errors = STR_INIT;
	int rc = 1;

	if (running() <= 0) {
		log_error("cannot flush: the Petrel mail system is not running");
		return 1;
	}
	switch (queue_flush_send(config_dir, TRIGGER_FLUSH_REQUEST, &where,
	    &errors)) {
	case QUEUE_FLUSH_SENT:
		log_info("flush request sent to qmgr");
		rc = 0;
		break;
	case QUEUE_FLUSH_NO_MASTER_CF:
		log_lines(LOG_LVL_ERROR, str_cstr(&errors));
		log_error("cannot flush: no master.cf");
		break;
	case QUEUE_FLUSH_NO_QMGR:
		log_error("cannot flush: %s has no qmgr service (unix, fifo or "
		    "unix-dgram)", str_cstr(&where));
		break;
	case QUEUE_FLUSH_UNREACHABLE:
		log_error("cannot flush: qmgr service %s: %s%s",
		    str_cstr(&where), strerror(errno), errno == ENOENT ||
		    errno == ECONNREFUSED || errno == ENXIO ?
		    " (is qmgr running?)" : "");
		break;
	}
	str_release(&where);
	str_release(&errors);
	return rc;
}

int main(int argc, char **argv)
{
	char real[PATH_MAX];
	const char *cmd;
	int c;

	log_init("petrel/petrel");
	config_dir = getenv("MAIL_CONFIG");
	while ((c = getopt(argc, argv, "c:v")) != -1) {
		switch (c) {
		case 'c': config_dir = optarg; break;
		case 'v': log_verbose++; break;
		default: usage();
		}
	}
	if (optind + 1 != argc)
		usage();
	cmd = argv[optind];
	if (config_dir == NULL)
		config_dir = DEF_CONFIG_DIR;
	if (realpath(config_dir, real) == NULL)
		log_fatal("configuration directory %s: %s", config_dir, strerror(errno));
	config_dir = real;
	if (pconfig_load(config_dir) < 0) {
		log_lines(LOG_LVL_ERROR, pconfig_errors());
		/* Stopping or asking about a running system must work with a
		 * main.cf broken since it started. */
		if (strcmp(cmd, "start") == 0 || strcmp(cmd, "start-fg") == 0 ||
		    strcmp(cmd, "check") == 0)
			log_fatal("errors in %s/main.cf", config_dir);
		log_warning("errors in %s/main.cf; going on with the rest of it",
		    config_dir);
	}

	/* Messages go to the terminal and to the mail log. */
	cmd_log_init("petrel");
	log_also_stderr(1);
	master_pidfile_path(&pidfile);

	if (strcmp(cmd, "start") == 0)
		return cmd_start(false);
	if (strcmp(cmd, "start-fg") == 0)
		return cmd_start(true);
	if (strcmp(cmd, "stop") == 0)
		return cmd_stop(false);
	if (strcmp(cmd, "abort") == 0)
		return cmd_stop(true);
	if (strcmp(cmd, "reload") == 0)
		return cmd_reload();
	if (strcmp(cmd, "status") == 0)
		return cmd_status();
	if (strcmp(cmd, "check") == 0)
		return cmd_check();
	if (strcmp(cmd, "flush") == 0)
		return cmd_flush();
	if (strcmp(cmd, "logrotate") == 0)
		return petrel_logrotate(running());
	log_error("unknown command '%s'", cmd);
	usage();
}
