/* The daemon skeleton; see server.h and doc/master.md. */
#include "fdutil.h"
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "dict.h"
#include "log.h"
#include "mastercf.h"
#include "mem.h"
#include "pconfig.h"
#include "selfpipe.h"
#include "server.h"
#include "sock.h"
#include "str.h"

/* Sanitizer (test) builds. */
#if defined(__SANITIZE_ADDRESS__)
#define PETREL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PETREL_ASAN 1
#endif
#endif

/* Bytes of one trigger read at a time. */
#define TRIGGER_BUF 1024

static struct {
	const server_spec_t *spec;
	char progname[64];
	const char *service;
	const char *type_name;
	mastercf_type_t type;
	int argc;
	char **argv;
	int nlisten;
	int listen_fd[SERVER_LISTEN_MAX];
	bool listening;		/* listen descriptors in the loop */
	bool under_master;
	event_loop_t *loop;
	event_timer_t idle_timer;
	event_timer_t keepalive_timer;
	unsigned long use_count;
	long max_use;		/* 0 = no limit */
	long max_idle;		/* seconds; 0 = no limit */
	long daemon_timeout;	/* seconds */
	int clients;		/* MULTI: open clients; TRIGGER: stream
				 * trigger connections being read */
	bool retiring;		/* no new work; exit when idle */
	pid_t master_pid;	/* our parent at start (master) */
	bool check_only;	/* -C: check the configuration, exit */
	bool jailed;		/* chroots (or did) into queue_directory */
	bool log_relay;		/* -l: log lines go to master over fd 2 */
	int last_status;
	int32_t pid;		/* for status reports */
	bool watchdog_armed;	/* alarm() set since the last alarm(0) */
	time_t watchdog_sec;	/* when (coarse monotonic seconds) */
} S;

/* Set once the daemon is stopping (SIGTERM from master, or master gone);
 * streams given it with stream_set_cancel() stop waiting for input. */
static volatile sig_atomic_t stop_flag;

const char *server_service_name(void) { return S.service; }
const char *server_service_type(void) { return S.type_name; }
const char *server_program_name(void) { return S.progname; }
int server_argc(void) { return S.argc; }
bool server_jailed(void) { return S.jailed; }

bool server_jail_has(const char *path, const char *needed_for)
{
	if (!S.jailed || access(path, R_OK) == 0)
		return true;
	log_warning("chroot jail %s: %s is missing (%s): add it to "
	    "chroot_files in main.cf and run \"petrel reload\"",
	    pconfig_get_str("queue_directory"), path, needed_for);
	return false;
}
char **server_argv(void) { return S.argv; }
event_loop_t *server_loop(void) { return S.loop; }
unsigned long server_use_count(void) { return S.use_count; }
bool server_stopping(void) { return stop_flag != 0; }
const volatile sig_atomic_t *server_stop_flag(void) { return &stop_flag; }

/* ---- status messages to master ---- */

static void report(int status)
{
	struct server_status m = { .pid = S.pid, .status = status };

	if (!S.under_master || S.last_status == status)
		return;
	S.last_status = status;
	/* One write of a few bytes to a pipe is atomic; a failure means
	 * master is gone, which the status watch notices on its own. */
	if (write(SERVER_STATUS_FD, &m, sizeof(m)) < 0 && errno != EPIPE)
		log_warning("status report to master: %s", strerror(errno));
}

/* ---- watchdog ---- */

static void watchdog_fire(int sig)
{
	(void)sig;
	/* If logging itself hangs, the default action of this second alarm
	 * ends the process. */
	signal(SIGALRM, SIG_DFL);
	alarm(5);
	log_error("watchdog timeout: stuck in one request for about %ld s "
	    "(daemon_timeout); exiting", S.daemon_timeout);
	_exit(1);
}

/* Re-arms the alarm, at most once a second: a request that pets the
 * watchdog for every record it reads costs no system call per record
 * (the coarse monotonic clock is read without one). */
void server_watchdog_pet(void)
{
	struct timespec ts;

	if (S.daemon_timeout <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	if (S.watchdog_armed && ts.tv_sec == S.watchdog_sec)
		return;
	S.watchdog_sec = ts.tv_sec;
	S.watchdog_armed = true;
	alarm((unsigned)(S.daemon_timeout > INT_MAX ? INT_MAX : S.daemon_timeout));
}

/* The loop never waits longer than a quarter of daemon_timeout, so the
 * alarm re-armed every round fires only when one round (one request)
 * takes the remaining three quarters or more. */
static void keepalive(void *ctx)
{
	(void)ctx;
	event_timer_start(S.loop, &S.keepalive_timer, S.daemon_timeout * 250);
}

/* ---- exit ---- */

__attribute__((noreturn))
static void server_exit(const char *why)
{
	log_debug("exiting: %s (%lu requests served)", why, S.use_count);
	if (S.spec->pre_exit)
		S.spec->pre_exit(S.spec->ctx);
#ifdef PETREL_ASAN
	/* Test builds only: LeakSanitizer's check at exit needs /proc,
	 * which a chroot jail does not have (it would report a fatal error
	 * instead).  Such a daemon used to be killed at stop and was never
	 * checked either. */
	if (S.jailed)
		_exit(0);
#endif
	exit(0);
}

static void idle_expired(void *ctx)
{
	(void)ctx;
	server_exit("idle for max_idle");
}

static void idle_start(void)
{
	if (S.max_idle > 0 && !(S.spec->flags & SERVER_F_UNLIMITED))
		event_timer_start(S.loop, &S.idle_timer, S.max_idle * 1000);
}

static bool used_up(void)
{
	return S.max_use > 0 && !(S.spec->flags & SERVER_F_UNLIMITED) &&
	    S.use_count >= (unsigned long)S.max_use;
}

static void trigger_event(int lfd, int events, void *ctx);
static void single_event(int lfd, int events, void *ctx);
static void multi_event(int lfd, int events, void *ctx);

/* ---- the accept lock ----
 * A pool of SINGLE processes waits on the same listening descriptors.
 * Where the event loop can wake just one of them (EPOLLEXCLUSIVE) that is
 * all it takes; elsewhere (or with accept_lock = yes) only the holder of
 * a lock on pid/TYPE.SERVICE watches them, and hands the lock on as soon
 * as it has accepted a client.  The others wait for the lock, not for
 * connections, so one client wakes one process. */
static int accept_lock_fd = -1;
static bool accept_lock_held;

/* Before the chroot: the lock file.  Whether it is used is decided once
 * the event loop exists (accept_lock_decide). */
static void accept_lock_open(void)
{
	str_t path = STR_INIT;

	if (S.spec->model != SERVER_SINGLE || S.nlisten == 0 ||
	    strcmp(pconfig_get_str("accept_lock"), "no") == 0)
		return;
	str_setf(&path, "%s/%s.", pconfig_get_str("process_id_directory"),
	    S.type_name);
	for (const char *p = S.service; *p; p++)
		str_putc(&path, *p == '/' ? '_' : *p);
	accept_lock_fd = open(str_cstr(&path), O_RDONLY | O_CREAT | O_CLOEXEC |
	    O_NOFOLLOW, 0600);
	if (accept_lock_fd < 0)
		log_warning("accept lock %s: %s (idle processes of this service "
		    "may all wake for one client)", str_cstr(&path), strerror(errno));
	str_release(&path);
}

static void accept_lock_decide(void)
{
	if (accept_lock_fd >= 0 &&
	    strcmp(pconfig_get_str("accept_lock"), "auto") == 0 &&
	    event_loop_exclusive(S.loop)) {
		close(accept_lock_fd);
		accept_lock_fd = -1;
	}
	if (accept_lock_fd >= 0)
		log_debug("accept lock in use");
}

static void listen_on(void);

/* An idle process without the lock waits for it.  Nothing else is
 * waiting for this process meanwhile: the watchdog is off, and SIGHUP
 * interrupts the wait (the handler's wake-up byte then retires us). */
static void accept_lock_wait(void)
{
	struct sigaction sa, old, oldterm;
	int r;

	alarm(0);
	S.watchdog_armed = false;
	sigaction(SIGHUP, NULL, &old);
	sa = old;
	sa.sa_flags &= ~SA_RESTART;
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGTERM, &sa, &oldterm);
	r = selfpipe_raised(SIGHUP) || selfpipe_raised(SIGTERM) ? -1
	    : flock(accept_lock_fd, LOCK_EX);
	sigaction(SIGHUP, &old, NULL);
	sigaction(SIGTERM, &oldterm, NULL);
	if (r == 0) {
		accept_lock_held = true;
		listen_on();
	} else if (errno != EINTR && !selfpipe_raised(SIGHUP)
	    && !selfpipe_raised(SIGTERM)) {
		log_fatal("accept lock: %s", strerror(errno));
	}
}

static void listen_off(bool close_them);

static void accept_lock_release(void)
{
	if (!accept_lock_held)
		return;
	listen_off(false);
	accept_lock_held = false;
	if (flock(accept_lock_fd, LOCK_UN) < 0)
		log_fatal("accept lock: %s", strerror(errno));
}

/* Watches the listening descriptors.  A pool of SINGLE processes shares
 * them: one connection wakes one idle process, not the whole pool. */
static void listen_on(void)
{
	enum server_model m = S.spec->model;
	event_fd_fn fn = m == SERVER_SINGLE ? single_event :
	    m == SERVER_MULTI ? multi_event : trigger_event;
	int flags = m == SERVER_TRIGGER ? 0 : EVENT_EXCLUSIVE;

	if (S.listening || S.retiring)
		return;
	if (accept_lock_fd >= 0 && !accept_lock_held)
		return;
	for (int i = 0; i < S.nlisten; i++) {
		if (S.listen_fd[i] < 0)
			continue;
		if (event_add(S.loop, S.listen_fd[i], EVENT_READ | flags, fn,
		    NULL) < 0)
			log_fatal("listening descriptor %d: %s", S.listen_fd[i],
			    strerror(errno));
	}
	S.listening = true;
}

static void listen_off(bool close_them)
{
	for (int i = 0; i < S.nlisten; i++) {
		if (S.listen_fd[i] < 0)
			continue;
		if (S.listening)
			event_remove(S.loop, S.listen_fd[i]);
		if (close_them) {
			close(S.listen_fd[i]);
			S.listen_fd[i] = -1;
		}
	}
	S.listening = false;
}

/* Chrooted, a table file that changed cannot be reopened: the process
 * makes way for one that opens it before its chroot (dict.h). */
static bool table_changed;

static void on_table_changed(const char *spec)
{
	(void)spec;
	table_changed = true;
}

/* Stop taking work: master gets "busy" so it starts another process
 * if clients come, and our copies of the listening sockets go away so a
 * restarted service can bind them again. */
static void retire(const char *why)
{
	if (!S.retiring)
		log_debug("retiring: %s", why);
	S.retiring = true;
	report(SERVER_STAT_BUSY);
	accept_lock_release();
	listen_off(true);
}

/* Stopping: a retirement that also asks the daemon to end what it
 * serves at the next boundary (smtpd: after the current transaction;
 * see server_stopping()).  master's watch and the signal pipe are of no
 * more use to the streams then. */
static void stop(const char *why)
{
	if (!stop_flag)
		log_debug("stopping: %s", why);
	stop_flag = 1;
	retire(why);
}

static void signals_pending(void)
{
	if (selfpipe_take(SIGTERM))
		stop("SIGTERM from master");
	if (selfpipe_take(SIGHUP))
		retire("SIGHUP from master");
	if (table_changed) {
		table_changed = false;
		retire("a lookup table changed (chroot)");
	}
}

/* Decides after each round or request whether to go on. */
static void check_exit(void)
{
	/* A signal during the request: act before taking the next. */
	signals_pending();
	if (S.spec->model != SERVER_SINGLE) {
		if (S.clients > 0) {
			/* Finish them first; take no new ones if leaving. */
			if (S.spec->model == SERVER_TRIGGER && used_up())
				retire("max_use reached");
			return;
		}
		if (S.retiring)
			server_exit("retired");
		if (used_up())
			server_exit("max_use reached");
		return;
	}
	if (S.retiring)
		server_exit("retired");
	if (used_up())
		server_exit("max_use reached");
}

/* ---- signals ---- */

static void sig_pipe_event(int fd, int events, void *ctx)
{
	(void)fd;
	(void)events;
	(void)ctx;
	selfpipe_drain();
	signals_pending();
}

/* Master closed its end of the status pipe: it dropped or replaced this
 * service (a reload: finish and leave, as on SIGHUP), or it is gone
 * (nobody will start, watch or stop us: stop, as on SIGTERM, so that
 * the clients we serve end soon and a new master finds the endpoints
 * free).  A reload sends SIGHUP before it closes the pipe, and the
 * handler has run before we see the pipe's error; our parent's id is
 * no proof of life, since a dying master's descriptors close before its
 * children are given to another parent. */
static void status_event(int fd, int events, void *ctx)
{
	(void)ctx;
	if (events & EVENT_ERROR) {
		event_remove(S.loop, fd);
		stream_watch_remove(fd);
		if (getppid() == S.master_pid &&
		    (selfpipe_raised(SIGHUP) || S.retiring))
			retire("master disconnected");
		else
			stop("master is gone");
	}
}

/* The same two descriptors, polled by every stream wait: a daemon busy
 * with a client notices a stop or master's death at once, not when the
 * client is done. */
static void stream_watch_event(int fd, short revents, void *ctx)
{
	(void)ctx;
	if ((int32_t)getpid() != S.pid) {
		/* A child of ours (forked, not yet executed) shares our event
		 * loop's kernel object and our status pipe: not its business. */
		stream_watch_remove(selfpipe_fd());
		stream_watch_remove(SERVER_STATUS_FD);
		return;
	}
	if (fd == SERVER_STATUS_FD) {
		if (revents & (POLLERR | POLLHUP | POLLNVAL))
			status_event(fd, EVENT_ERROR, NULL);
	} else {
		sig_pipe_event(fd, EVENT_READ, NULL);
	}
}

/* ---- the three models ---- */

static int accept_client(int lfd)
{
	int fd = sock_accept_nonblock(lfd);

	if (fd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_warning("accept: %s", strerror(errno));
		return -1;
	}
	if (S.type == MCF_PASS) {
		/* The client hands over the real connection on this one. */
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long t = pconfig_get_time("ipc_timeout");
		int r = poll(&p, 1, (int)(t > 60 ? 60000 : t * 1000));
		int cfd = r > 0 ? sock_recv_fd(fd) : -1;
		if (cfd < 0)
			log_warning("pass service: no descriptor received: %s",
			    r == 0 ? "timeout" : strerror(errno));
		close(fd);
		fd = cfd;
		if (fd < 0)
			return -1;
		sock_set_nonblock(fd, true);
	}
	return fd;
}

static void single_event(int lfd, int events, void *ctx)
{
	stream_t *st;
	int fd;
	(void)events;
	(void)ctx;

	if (S.retiring || (fd = accept_client(lfd)) < 0)
		return;
	/* Let the next idle process watch while we serve. */
	accept_lock_release();
	event_timer_cancel(&S.idle_timer);
	report(SERVER_STAT_BUSY);
	S.use_count++;
	server_watchdog_pet();
	st = stream_open(fd);
	S.spec->serve(st, S.spec->ctx);
	stream_close(st);
	check_exit();
	report(SERVER_STAT_AVAIL);
	idle_start();
}

void server_disconnect(int fd)
{
	event_remove(S.loop, fd);	/* may not be registered: fine */
	close(fd);
	if (S.clients > 0 && --S.clients == 0)
		idle_start();
}

static void multi_event(int lfd, int events, void *ctx)
{
	int fd;
	(void)events;
	(void)ctx;

	if (S.retiring || (fd = accept_client(lfd)) < 0)
		return;
	event_timer_cancel(&S.idle_timer);
	S.clients++;
	S.use_count++;
	if (used_up()) {
		/* The last client this process takes. */
		report(SERVER_STAT_BUSY);
		listen_off(true);
	}
	S.spec->connect(fd, S.spec->ctx);
}

/* The trigger model.  Wake-ups are idempotent: everything that is
 * waiting is read in one go and each distinct request byte is passed on
 * once, in the order first seen, so a burst of wake-ups costs the daemon
 * one call.  Stream clients are read without blocking, each within
 * trigger_timeout; at most TRIGGER_CONN_MAX at a time. */
#define TRIGGER_CONN_MAX 64

typedef struct trigger_conn {
	int fd;
	size_t len;
	event_timer_t timer;
	char buf[TRIGGER_BUF];
} trigger_conn_t;

/* Keeps the first occurrence of each byte; returns the new length. */
static size_t trigger_coalesce(char *buf, size_t len)
{
	bool seen[256] = { false };
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (!seen[c]) {
			seen[c] = true;
			buf[n++] = (char)c;
		}
	}
	return n;
}

static void trigger_deliver(char *buf, size_t len)
{
	len = trigger_coalesce(buf, len);
	event_timer_cancel(&S.idle_timer);
	report(SERVER_STAT_BUSY);
	S.use_count++;
	server_watchdog_pet();
	S.spec->trigger(buf, len, S.spec->ctx);
	check_exit();
	report(SERVER_STAT_AVAIL);
	idle_start();
}

static void trigger_conn_done(trigger_conn_t *c)
{
	event_remove(S.loop, c->fd);
	close(c->fd);
	event_timer_cancel(&c->timer);
	S.clients--;
	if (S.clients < TRIGGER_CONN_MAX)
		listen_on();
	trigger_deliver(c->buf, c->len);
	free(c);
}

static void trigger_conn_read(int fd, int events, void *ctx)
{
	trigger_conn_t *c = ctx;
	ssize_t n = read(fd, c->buf + c->len, sizeof(c->buf) - c->len);
	(void)events;

	if (n > 0) {
		c->len += (size_t)n;
		if (c->len < sizeof(c->buf))
			return;
	} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR)) {
		return;
	}
	/* End of file, a full buffer, or an error: the request is what
	 * came. */
	trigger_conn_done(c);
}

static void trigger_conn_timeout(void *ctx)
{
	trigger_conn_t *c = ctx;

	log_debug("trigger client sent %zu byte%s and no end within "
	    "trigger_timeout", c->len, c->len == 1 ? "" : "s");
	trigger_conn_done(c);
}

static void trigger_accept(int lfd)
{
	long t = pconfig_get_time("trigger_timeout");

	while (S.clients < TRIGGER_CONN_MAX) {
		int fd = accept_client(lfd);
		trigger_conn_t *c;
		if (fd < 0)
			break;
		c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		event_timer_init(&c->timer, trigger_conn_timeout, c);
		if (event_add(S.loop, fd, EVENT_READ, trigger_conn_read, c) < 0) {
			log_warning("trigger client: %s", strerror(errno));
			close(fd);
			free(c);
			break;
		}
		event_timer_start(S.loop, &c->timer,
		    (t > 60 ? 60 : t < 1 ? 1 : t) * 1000);
		S.clients++;
	}
	if (S.clients >= TRIGGER_CONN_MAX)
		listen_off(false);
}

static void trigger_event(int lfd, int events, void *ctx)
{
	char buf[TRIGGER_BUF];
	size_t got = 0;
	(void)events;
	(void)ctx;

	if (S.retiring)
		return;
	if (S.type != MCF_FIFO && S.type != MCF_UNIX_DGRAM) {
		trigger_accept(lfd);
		return;
	}
	/* Everything pending, up to the buffer (the rest comes next
	 * round).  The descriptor is non-blocking. */
	while (got < sizeof(buf)) {
		ssize_t n = S.type == MCF_FIFO ?
		    read(lfd, buf + got, sizeof(buf) - got) :
		    recv(lfd, buf + got, sizeof(buf) - got, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got == 0)
		return;		/* another process took it, or nothing came */
	trigger_deliver(buf, got);
}

/* ---- start-up ---- */

static void usage(void)
{
	log_fatal("usage: %s [-Dv] [-c config_dir] [-n service] [-o name=value] "
	    "[-s count -t type] [-u] [-j] [args...] (a daemon started by master)",
	    S.progname);
}

/* Replaces $name / ${name} for our two run-time names, then lets the
 * configuration expand the rest. */
static void run_debugger(void)
{
	const char *raw = pconfig_get_raw("debugger_command");
	str_t cmd = STR_INIT, out = STR_INIT;
	char pid[32];
	int st;

	if (raw == NULL || *raw == 0) {
		log_warning("-D given but debugger_command is empty; going on");
		return;
	}
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	for (const char *p = raw; *p; p++) {
		static const struct { const char *name; int which; } vars[] = {
			{ "process_name", 0 }, { "process_id", 1 },
		};
		bool done = false;
		if (*p == '$') {
			for (size_t i = 0; i < 2 && !done; i++) {
				size_t l = strlen(vars[i].name);
				const char *val = vars[i].which ? pid : S.progname;
				if (strncmp(p + 1, vars[i].name, l) == 0 &&
				    (p[1 + l] == 0 || !(p[1 + l] == '_' ||
				    (p[1 + l] >= 'a' && p[1 + l] <= 'z') ||
				    (p[1 + l] >= '0' && p[1 + l] <= '9')))) {
					str_cat(&cmd, val);
					p += l;
					done = true;
				} else if (p[1] == '{' && strncmp(p + 2, vars[i].name, l) == 0 &&
				    p[2 + l] == '}') {
					str_cat(&cmd, val);
					p += l + 2;
					done = true;
				}
			}
		}
		if (!done)
			str_putc(&cmd, *p);
	}
	if (pconfig_expand(str_cstr(&cmd), &out) < 0)
		log_warning("debugger_command: expansion loop");
	log_info("running debugger_command: %s", str_cstr(&out));
	st = system(str_cstr(&out));
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		log_warning("debugger_command failed (status %d)", st);
	str_release(&cmd);
	str_release(&out);
}

static void setup_logging(void)
{
	const char *file = pconfig_get_str("maillog_file");
	str_t name = STR_INIT;

	/* log_init keeps what fits of a long name. */
	str_setf(&name, "%s/%s", pconfig_get_str("syslog_name"), S.progname);
	log_init(str_cstr(&name));
	str_release(&name);
	if (*file) {
		struct stat st;
		/* The file is opened here too, as a fallback for when master
		 * is gone; with -l every line goes to master, which writes it
		 * into the file it has open (and reopens on logrotate and
		 * reload: a chrooted process could not). */
		if (log_to_file(file) < 0)
			log_fatal("maillog_file %s: %s", file, strerror(errno));
		if (S.log_relay && fstat(2, &st) == 0 && S_ISSOCK(st.st_mode))
			log_relay_to(2);
	} else {
		log_to_syslog();
	}
}

/* Drops to mail_owner and proves it cannot come back. */
static void drop_privileges(uid_t uid, gid_t gid, const char *owner)
{
	gid_t groups[4];
	int n;

	if (setgroups(1, &gid) < 0)
		log_fatal("setgroups(%ld): %s", (long)gid, strerror(errno));
	if (setgid(gid) < 0)
		log_fatal("setgid(%ld): %s", (long)gid, strerror(errno));
	if (setuid(uid) < 0)
		log_fatal("setuid(%ld): %s", (long)uid, strerror(errno));
	if (getuid() != uid || geteuid() != uid || getgid() != gid ||
	    getegid() != gid)
		log_fatal("privileges not dropped to %s (uid %ld/%ld gid %ld/%ld)",
		    owner, (long)getuid(), (long)geteuid(), (long)getgid(),
		    (long)getegid());
	if (setuid(0) == 0 || seteuid(0) == 0)
		log_fatal("could regain root after dropping privileges to %s", owner);
	n = getgroups(4, groups);
	if (n < 0 || n > 1 || (n == 1 && groups[0] != gid))
		log_fatal("supplementary groups not dropped to %s's group", owner);
}

static void check_listen_fds(int n)
{
	struct stat st;

	if (n < 0 || n > SERVER_LISTEN_MAX)
		log_fatal("bad -s count %d", n);
	if (fstat(SERVER_STATUS_FD, &st) < 0 || !S_ISFIFO(st.st_mode))
		log_fatal("descriptor %d is not master's status pipe "
		    "(this daemon is started by master)", SERVER_STATUS_FD);
	for (int i = 0; i < n; i++) {
		int fd = SERVER_LISTEN_FD + i;
		if (fstat(fd, &st) < 0)
			log_fatal("listening descriptor %d: %s", fd, strerror(errno));
		sock_set_cloexec(fd, true);
		S.listen_fd[i] = fd;
	}
	sock_set_cloexec(SERVER_STATUS_FD, true);
	S.nlisten = n;
}

/* -C (petrel check): the configuration with the -o settings has loaded;
 * the daemon's own check says whether it would start.  A message that
 * names a parameter ("name: ...") gets the place that set it. */
__attribute__((noreturn))
static void check_and_exit(const server_spec_t *spec)
{
	str_t err = STR_INIT;
	const char *qdir = pconfig_get_str("queue_directory");

	/* Relative table paths are relative to the queue, as in service. */
	if (chdir(qdir) < 0)
		log_fatal("queue_directory %s: %s", qdir, strerror(errno));
	if (spec->check && spec->check(spec->ctx, &err) < 0) {
		const char *msg = str_cstr(&err);
		size_t n = strcspn(msg, ": ");
		char *name = xstrndup(msg, n);
		pconfig_item_t it;

		if (msg[n] == ':' && pconfig_item(name, &it) &&
		    it.origin == PCONFIG_FILE && it.file)
			log_error("%s:%d: %s", it.file, it.line, msg);
		else if (msg[n] == ':' && pconfig_item(name, &it) &&
		    it.origin == PCONFIG_OVERRIDE)
			log_error("%s (set with -o)", msg);
		else
			log_error("%s", msg);
		free(name);
		exit(1);
	}
	str_release(&err);
	exit(0);
}

void server_main(int argc, char **argv, const server_spec_t *spec)
{
	const char *config_dir = getenv("MAIL_CONFIG");
	const char *slash, *owner, *qdir;
	str_t overrides = STR_INIT;	/* name=value\0 ... */
	size_t noverride = 0;
	struct sigaction sa;
	sigset_t none;
	uid_t uid = 0;
	gid_t gid = 0;
	bool unpriv = false, jail = false, debug = false;
	int nfds = -1, c, verbose = 0;

	fd_sane_stdio();
	S.spec = spec;
	S.pid = (int32_t)getpid();
	S.master_pid = getppid();
	slash = argv[0] ? strrchr(argv[0], '/') : NULL;
	snprintf(S.progname, sizeof(S.progname), "%s",
	    slash ? slash + 1 : argv[0] ? argv[0] : "daemon");
	log_init(S.progname);

	opterr = 0;
	while ((c = getopt(argc, argv, "+c:CDln:o:s:t:ujv")) != -1) {
		switch (c) {
		case 'c': config_dir = optarg; break;
		case 'C': S.check_only = true; break;
		case 'D': debug = true; break;
		case 'l': S.log_relay = true; break;
		case 'n': S.service = optarg; break;
		case 'o':
			str_append(&overrides, optarg, strlen(optarg) + 1);
			noverride++;
			break;
		case 's': {
			long v;
			if (!str_to_long(optarg, &v) || v < 0 || v > SERVER_LISTEN_MAX)
				usage();
			nfds = (int)v;
			break;
		}
		case 't': S.type_name = optarg; break;
		case 'u': unpriv = true; break;
		case 'j': jail = true; break;
		case 'v': verbose++; break;
		default: usage();
		}
	}
	S.argc = argc - optind;
	S.argv = argv + optind;
	if (S.service == NULL)
		S.service = S.progname;
	if (S.type_name == NULL)
		S.type_name = "unix";
	if (!mastercf_type_parse(S.type_name, &S.type))
		log_fatal("bad service type '%s'", S.type_name);
	if (nfds < 0 && !S.check_only)
		log_fatal("%s is a Petrel daemon: it runs under master(8) "
		    "(petrel start), not by hand", S.progname);

	/* Configuration, then master.cf's -o settings on top. */
	if (config_dir == NULL)
		config_dir = DEF_CONFIG_DIR;
	/* Warnings about main.cf (unknown names, Postfix parameters Petrel
	 * lacks) are master's to log, once at start and at each reload: a
	 * daemon that logged them too would repeat them at every process
	 * start.  Errors still stop the daemon with their reason. */
	pconfig_defer_warnings();
	if (pconfig_load(config_dir) < 0)
	{
		log_lines(LOG_LVL_ERROR, pconfig_errors());
		log_fatal("errors in %s/main.cf", config_dir);
	}
	{
		const char *p = str_cstr(&overrides);
		str_t err = STR_INIT;
		for (size_t i = 0; i < noverride; i++, p += strlen(p) + 1) {
			const char *eq = strchr(p, '=');
			char *name;
			if (eq == NULL)
				log_fatal("-o %s: expected name=value", p);
			name = xstrndup(p, (size_t)(eq - p));
			if (pconfig_override(str_trim(name), eq + 1, "-o",
			    &err) < 0)
				log_fatal("-o %s: %s", p, str_cstr(&err));
			free(name);
		}
		str_release(&err);
	}
	str_release(&overrides);
	/* Check mode logs to standard error only (petrel passes it on). */
	if (S.check_only)
		check_and_exit(spec);
	setup_logging();
	log_verbose += verbose;
	S.under_master = true;
	check_listen_fds(nfds);

	S.max_use = pconfig_get_int("max_use");
	S.max_idle = pconfig_get_time("max_idle");
	S.daemon_timeout = pconfig_get_time("daemon_timeout");

	if (debug)
		run_debugger();

	/* Everything that needs files outside the queue comes now. */
	owner = pconfig_get_str("mail_owner");
	if (geteuid() == 0 && unpriv) {
		struct passwd *pw = getpwnam(owner);
		if (pw == NULL)
			log_fatal("mail_owner account '%s' does not exist "
			    "(petrel check creates it)", owner);
		if (pw->pw_uid == 0)
			log_fatal("mail_owner '%s' has uid 0: refusing to run an "
			    "unprivileged service as root", owner);
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	tzset();
	qdir = pconfig_get_str("queue_directory");
	if (chdir(qdir) < 0)
		log_fatal("queue_directory %s: %s", qdir, strerror(errno));
	accept_lock_open();
	S.jailed = jail && geteuid() == 0;
	if (spec->pre_jail)
		spec->pre_jail(spec->ctx);
	if (S.jailed) {
		if (chroot(qdir) < 0 || chdir("/") < 0)
			log_fatal("chroot %s: %s", qdir, strerror(errno));
		dict_set_jailed(on_table_changed);
	} else if (jail) {
		log_debug("not root (private instance): no chroot");
	}
	if (geteuid() == 0 && unpriv)
		drop_privileges(uid, gid, owner);

	/* Signals: SIGHUP retires, SIGTERM stops (retires and ends the
	 * clients' sessions at their next boundary); SIGKILL ends at once. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* A terminal's Ctrl-C reaches every process of a foreground master
	 * (petrel start-fg, make run): master turns it into a stop, which
	 * reaches us as SIGTERM, drained. */
	signal(SIGINT, SIG_IGN);
	if (selfpipe_open() < 0)
		log_fatal("pipe: %s", strerror(errno));
	selfpipe_catch(SIGHUP, SA_RESTART);
	selfpipe_catch(SIGTERM, SA_RESTART);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = watchdog_fire;
	sigaction(SIGALRM, &sa, NULL);

	if ((S.loop = event_loop_new(EVENT_BACKEND_DEFAULT)) == NULL)
		log_fatal("event loop: %s", strerror(errno));
	event_timer_init(&S.idle_timer, idle_expired, NULL);
	event_timer_init(&S.keepalive_timer, keepalive, NULL);
	event_add(S.loop, selfpipe_fd(), EVENT_READ, sig_pipe_event, NULL);

	if (spec->post_jail)
		spec->post_jail(spec->ctx);

	if ((spec->model == SERVER_SINGLE && !spec->serve) ||
	    (spec->model == SERVER_MULTI && !spec->connect) ||
	    (spec->model == SERVER_TRIGGER && !spec->trigger))
		log_panic("server_main: no callback for the model");
	if (spec->model != SERVER_TRIGGER &&
	    (S.type == MCF_FIFO || S.type == MCF_UNIX_DGRAM))
		log_fatal("service type %s works only with a trigger daemon",
		    S.type_name);
	for (int i = 0; i < S.nlisten; i++)
		sock_set_nonblock(S.listen_fd[i], true);
	accept_lock_decide();
	listen_on();
	event_add(S.loop, SERVER_STATUS_FD, EVENT_READ, status_event, NULL);
	stream_watch_add(selfpipe_fd(), POLLIN, stream_watch_event, NULL);
	stream_watch_add(SERVER_STATUS_FD, 0, stream_watch_event, NULL);
	/* Master may have died before we watched: then the status pipe has
	 * no reader and the first round notices. */
	if (S.daemon_timeout > 0)
		keepalive(NULL);
	log_debug("ready: service %s type %s, %d listening descriptor%s",
	    S.service, S.type_name, S.nlisten, S.nlisten == 1 ? "" : "s");
	report(SERVER_STAT_AVAIL);
	idle_start();

	for (;;) {
		if (accept_lock_fd >= 0 && !accept_lock_held && !S.retiring)
			accept_lock_wait();
		server_watchdog_pet();
		if (event_run_once(S.loop, -1) < 0 && errno != EINTR)
			log_fatal("event loop: %s", strerror(errno));
		check_exit();
	}
}
