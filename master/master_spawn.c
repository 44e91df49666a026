/* master: starting children on demand, their status reports, reaping,
 * throttling, wakeups and stopping. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fdutil.h"
#include "log.h"
#include "master.h"
#include "mem.h"
#include "pconfig.h"
#include "sock.h"

/* A graceful stop kills what is left this long after stop_drain_timeout:
 * qmgr stops waiting for deliveries at stop_drain_timeout and needs a
 * moment to record the last results and exit by itself. */
#define STOP_KILL_GRACE_MS 2000

extern char **environ;

/* ---- the children's environment ---- */

char **master_child_env(const char *config_dir)
{
	static const char *const keep_prefix[] = {
		/* sanitizer settings of test and debug builds */
		"ASAN_", "LSAN_", "UBSAN_", "MSAN_", "TSAN_",
	};
	char **env = xcalloc(8, sizeof(char *));
	size_t n = 0, cap = 8;
	str_t v = STR_INIT;

#define ADD(s) do { \
		if (n + 2 > cap) { \
			cap *= 2; \
			env = xreallocarray(env, cap, sizeof(char *)); \
		} \
		env[n++] = (s); \
		env[n] = NULL; \
	} while (0)

	str_setf(&v, "MAIL_CONFIG=%s", config_dir);
	ADD(str_steal(&v));
	ADD(xstrdup("PATH=/usr/bin:/bin:/usr/sbin:/sbin"));
	for (char **e = environ; e && *e; e++) {
		bool keep = strncmp(*e, "TZ=", 3) == 0;
		for (size_t i = 0; i < sizeof(keep_prefix) / sizeof(keep_prefix[0]); i++)
			if (strncmp(*e, keep_prefix[i], strlen(keep_prefix[i])) == 0)
				keep = true;
		if (keep)
			ADD(xstrdup(*e));
	}
#undef ADD
	return env;
}

/* ---- spawning ---- */

/* In the child: status pipe at 3, listeners from 4, nothing else but
 * 0-2; then exec.  Never returns. */
__attribute__((noreturn))
static void child_exec(master_service_t *s)
{
	const mastercf_entry_t *e = s->ent;
	int top = SERVER_LISTEN_FD + s->nfds + 1;
	bool relay = master.log_wr >= 0 && *pconfig_get_str("maillog_file");
	int logfd = -1;
	int *tmp = xcalloc((size_t)s->nfds + 1, sizeof(int));
	char **argv = xcalloc((size_t)e->argc + 16, sizeof(char *));
	char count[16];
	sigset_t none;
	int a = 0;

	/* Undo master's signal set-up. */
	signal(SIGHUP, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	/* Move every source above the targets first, so that no dup2()
	 * overwrites a source still to be moved. */
	if (relay && (logfd = fcntl(master.log_wr, F_DUPFD_CLOEXEC, top)) < 0)
		relay = false;
	tmp[0] = fcntl(s->status_wr, F_DUPFD_CLOEXEC, top);
	for (int i = 0; i < s->nfds; i++)
		tmp[i + 1] = fcntl(s->fds[i], F_DUPFD_CLOEXEC, top);
	for (int i = 0; i <= s->nfds; i++) {
		if (tmp[i] < 0 || dup2(tmp[i], SERVER_STATUS_FD + i) < 0) {
			log_error("service %s: descriptor set-up: %s", s->label,
			    strerror(errno));
			_exit(126);
		}
	}
	/* The log relay is the child's standard error (master_log.c). */
	if (relay && dup2(logfd, 2) < 0)
		relay = false;
	fd_close_from(SERVER_LISTEN_FD + s->nfds);

	snprintf(count, sizeof(count), "%d", s->nfds);
	argv[a++] = s->command;
	argv[a++] = "-c";
	argv[a++] = (char *)master.config_dir;
	argv[a++] = "-n";
	argv[a++] = e->service;
	argv[a++] = "-t";
	argv[a++] = (char *)mastercf_type_name(e->type);
	argv[a++] = "-s";
	argv[a++] = count;
	if (e->unpriv)
		argv[a++] = "-u";
	if (e->chroot)
		argv[a++] = "-j";
	if (relay)
		argv[a++] = "-l";
	for (int i = 1; i < e->argc; i++)
		argv[a++] = e->argv[i];
	argv[a] = NULL;
	execve(s->command, argv, master.envp);
	/* fd_close_from() took our log descriptor: open it again to say why. */
	const char *logfile = pconfig_get_str("maillog_file");
	if (*logfile == 0)
		log_to_syslog();
	else if (log_to_file(logfile) < 0)
		log_to_stderr();
	log_error("service %s: cannot run %s: %s", s->label, s->command,
	    strerror(errno));
	_exit(127);
}

static void spawn(master_service_t *s)
{
	master_child_t *c;
	sigset_t all, old;
	pid_t pid;

	/* No signal may run master's handlers in the child before it has
	 * reset them: a SIGTERM there would be lost. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid != 0)
		sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		log_warning("service %s: fork: %s", s->label, strerror(errno));
		/* Do not spin on a full process table. */
		s->throttled = true;
		event_timer_start(master.loop, &s->throttle_timer,
		    pconfig_get_time("service_throttle_time") * 1000);
		master_update_listen(s);
		return;
	}
	if (pid == 0)
		child_exec(s);
	c = xcalloc(1, sizeof(*c));
	c->pid = pid;
	c->svc = s;
	c->label = xstrdup(s->label);
	c->avail = true;
	list_append(&s->children, &c->node);
	s->total++;
	s->avail++;
	master.children++;
	log_debug("service %s: started %s pid %ld", s->label, s->command, (long)pid);
	master_update_listen(s);
}

static void listen_event(int fd, int events, void *ctx)
{
	master_service_t *s = ctx;
	(void)fd;
	(void)events;
	if (s->listening)
		spawn(s);
}

void master_update_listen(master_service_t *s)
{
	bool want = !master.stopping && !s->throttled && s->avail == 0 &&
	    (s->maxproc == 0 || s->total < s->maxproc);

	if (want == s->listening)
		return;
	for (int i = 0; i < s->nfds; i++) {
		if (want)
			event_add(master.loop, s->fds[i], EVENT_READ, listen_event, s);
		else
			event_remove(master.loop, s->fds[i]);
	}
	s->listening = want;
}

/* ---- status reports ---- */

static master_child_t *find_child(master_service_t *s, pid_t pid)
{
	list_node_t *n;
	list_foreach(n, &s->children) {
		master_child_t *c = list_entry(n, master_child_t, node);
		if (c->pid == pid)
			return c;
	}
	return NULL;
}

static void status_message(master_service_t *s, const struct server_status *m)
{
	master_child_t *c = find_child(s, (pid_t)m->pid);

	if (c == NULL)
		return;		/* already reaped, or not ours */
	c->ready = true;
	if (c->retiring)
		return;		/* counts as busy until it is gone */
	switch (m->status) {
	case SERVER_STAT_AVAIL:
		if (!c->avail) {
			c->avail = true;
			s->avail++;
		}
		break;
	case SERVER_STAT_BUSY:
		s->used = true;
		if (c->avail) {
			c->avail = false;
			s->avail--;
		}
		break;
	default:
		log_warning("service %s: pid %ld sent unknown status %d", s->label,
		    (long)m->pid, m->status);
		return;
	}
	master_update_listen(s);
}

void master_status_event(int fd, int events, void *ctx)
{
	master_service_t *s = ctx;
	char buf[512];
	ssize_t n;
	(void)events;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			((char *)&s->sbuf)[s->slen++] = buf[i];
			if (s->slen == sizeof(s->sbuf)) {
				s->slen = 0;
				status_message(s, &s->sbuf);
			}
		}
		/* A pipe gives what it holds: less than asked means empty
		 * (no read just to see EAGAIN); a later write wakes us. */
		if ((size_t)n < sizeof(buf))
			break;
	}
}

/* ---- throttling ---- */

static void throttle(master_service_t *s, const char *how)
{
	long t = pconfig_get_time("service_throttle_time");

	if (s->throttled)
		return;
	log_warning("service %s: %s %s at start-up -- throttling: no new "
	    "process for %ld s (service_throttle_time)", s->label, s->command,
	    how, t);
	s->throttled = true;
	event_timer_start(master.loop, &s->throttle_timer, t * 1000);
	master_update_listen(s);
}

void master_throttle_expired(void *ctx)
{
	master_service_t *s = ctx;
	s->throttled = false;
	log_info("service %s: throttle time over; starting processes again",
	    s->label);
	master_update_listen(s);
}

/* ---- reaping ---- */

static master_child_t *find_any(pid_t pid)
{
	list_node_t *n, *m;
	list_foreach(n, &master.services) {
		master_service_t *s = list_entry(n, master_service_t, node);
		list_foreach(m, &s->children) {
			master_child_t *c = list_entry(m, master_child_t, node);
			if (c->pid == pid)
				return c;
		}
	}
	list_foreach(m, &master.detached) {
		master_child_t *c = list_entry(m, master_child_t, node);
		if (c->pid == pid)
			return c;
	}
	return NULL;
}

static void child_gone(master_child_t *c, int status)
{
	master_service_t *s = c->svc;
	char how[64];
	bool normal = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	bool expected = WIFSIGNALED(status) && WTERMSIG(status) == c->signalled;

	if (WIFEXITED(status))
		snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(status));
	else
		snprintf(how, sizeof(how), "ended (wait status 0x%x)", status);
	if (normal || expected)
		log_debug("service %s: pid %ld %s", c->label, (long)c->pid, how);
	else
		log_warning("service %s: process pid %ld %s", c->label, (long)c->pid, how);

	list_remove(&c->node);
	master.children--;
	if (s) {
		s->total--;
		if (c->avail)
			s->avail--;
		if (!c->ready && !c->signalled && !master.stopping)
			throttle(s, how);
		master_update_listen(s);
	}
	free(c->label);
	free(c);
}

void master_reap(void)
{
	list_node_t *n;
	int status;
	pid_t pid;

	/* Read what children said before they died, so a child that
	 * reported ready and then exited is not taken for a start-up
	 * failure. */
	list_foreach(n, &master.services) {
		master_service_t *s = list_entry(n, master_service_t, node);
		master_status_event(s->status_rd, EVENT_READ, s);
	}
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		master_child_t *c = find_any(pid);
		if (c == NULL) {
			log_debug("reaped unknown pid %ld", (long)pid);
			continue;
		}
		child_gone(c, status);
	}
	if (master.stopping && master.children == 0) {
		master_log_drain();
		log_info("terminating on signal; all processes stopped");
		exit(0);
	}
}

/* ---- retiring, stopping ---- */

static void signal_child(master_child_t *c, int sig)
{
	if (c->signalled == SIGKILL)
		return;
	if (sig != SIGHUP)
		c->signalled = sig;
	if (kill(c->pid, sig) < 0 && errno != ESRCH)
		log_warning("kill %ld: %s", (long)c->pid, strerror(errno));
}

void master_retire_children(master_service_t *s, bool detach)
{
	list_node_t *n, *tmp;

	list_foreach_safe(n, tmp, &s->children) {
		master_child_t *c = list_entry(n, master_child_t, node);
		if (!c->retiring)
			signal_child(c, SIGHUP);
		c->retiring = true;
		if (c->avail) {
			c->avail = false;
			s->avail--;
		}
		/* A child that never got ready may die from the SIGHUP: that
		 * is no start-up failure. */
		c->ready = true;
		if (detach) {
			s->total--;
			c->svc = NULL;
			list_remove(&c->node);
			list_append(&master.detached, &c->node);
		}
	}
	master_update_listen(s);
}

static void kill_all(int sig)
{
	list_node_t *n, *m;
	list_foreach(n, &master.services) {
		master_service_t *s = list_entry(n, master_service_t, node);
		list_foreach(m, &s->children)
			signal_child(list_entry(m, master_child_t, node), sig);
	}
	list_foreach(m, &master.detached)
		signal_child(list_entry(m, master_child_t, node), sig);
}

static void kill_stragglers(void *ctx)
{
	(void)ctx;
	if (master.children > 0)
		log_warning("%d process%s still running after stop_drain_timeout "
		    "(%ld s); killing %s", master.children,
		    master.children == 1 ? "" : "es",
		    pconfig_get_time("stop_drain_timeout"),
		    master.children == 1 ? "it" : "them");
	kill_all(SIGKILL);
}

/* A stop drains: the endpoints close at once (new clients are refused
 * instead of waiting in a listen queue nobody serves, and a request
 * waiting for a delivery agent that will never take it fails at once),
 * every child gets SIGTERM and finishes what it is in the middle of --
 * an SMTP transaction, a delivery, whose result qmgr records -- and
 * exits; what is left after stop_drain_timeout is killed.  An abort
 * kills everything at once. */
void master_stop(bool abort_now)
{
	list_node_t *n;
	long drain = pconfig_get_time("stop_drain_timeout");

	if (!master.stopping)
		log_info("%s", abort_now ? "abort: killing every process" :
		    "terminating on signal: stopping every process");
	master.stopping = true;
	list_foreach(n, &master.services) {
		master_service_t *s = list_entry(n, master_service_t, node);
		event_timer_cancel(&s->wakeup_timer);
		event_timer_cancel(&s->throttle_timer);
		master_update_listen(s);
		master_close_endpoint(s);
	}
	if (abort_now || drain <= 0) {
		kill_all(SIGKILL);
	} else {
		kill_all(SIGTERM);
		if (!event_timer_pending(&master.kill_timer)) {
			event_timer_init(&master.kill_timer, kill_stragglers, NULL);
			event_timer_start(master.loop, &master.kill_timer,
			    (int64_t)drain * 1000 + STOP_KILL_GRACE_MS);
		}
	}
	master_reap();
}

/* ---- wakeups ---- */

void master_wakeup_arm(master_service_t *s, bool now)
{
	const mastercf_entry_t *e = s->ent;

	if (e->wakeup <= 0 || e->type == MCF_INET || e->type == MCF_PASS) {
		event_timer_cancel(&s->wakeup_timer);
		return;
	}
	event_timer_start(master.loop, &s->wakeup_timer,
	    now ? 0 : (int64_t)e->wakeup * 1000);
}

void master_wakeup_event(void *ctx)
{
	master_service_t *s = ctx;
	const mastercf_entry_t *e = s->ent;
	static const char req = TRIGGER_WAKEUP;

	event_timer_start(master.loop, &s->wakeup_timer, (int64_t)e->wakeup * 1000);
	if (s->throttled || (e->wakeup_if_used && !s->used))
		return;
	if (e->type == MCF_FIFO) {
		/* Our own read-write descriptor: never blocks, never ENXIO. */
		if (write(s->fds[0], &req, 1) < 0 && errno != EAGAIN)
			log_warning("service %s: wakeup: %s", s->label, strerror(errno));
	} else if (trigger_wakeup(s->path, req) < 0) {
		log_warning("service %s: wakeup: %s", s->label, strerror(errno));
	}
}
