/* Delivery to a command (see command.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include "event.h"
#include "fdutil.h"
#include "command.h"
#include "user.h"

/* Bytes of the command's output kept for the status text. */
#define OUTPUT_KEEP	1000

/* The child: never returns. */
__attribute__((noreturn))
static void child(const command_opts_t *o, int in, int out)
{
	sigset_t none;

	(void)setsid();
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(EX_OSERR);
	fd_close_from(3);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP)
			(void)signal(s, SIG_DFL);
	if (getuid() == 0 && o->uid != 0) {
		/* For good: real, effective and saved ids. */
		if (geteuid() != 0 && seteuid(0) < 0)
			_exit(EX_OSERR);
		if (setgroups(1, &o->gid) < 0 || setgid(o->gid) < 0
		    || setuid(o->uid) < 0 || getuid() != o->uid
		    || geteuid() != o->uid || setuid(0) == 0) {
			fprintf(stderr, "cannot take user id %lu\n",
			    (unsigned long)o->uid);
			_exit(EX_OSERR);
		}
	}
	umask(077);
	if (o->cwd == NULL || chdir(o->cwd) < 0)
		(void)chdir("/");
	execle("/bin/sh", "sh", "-c", o->command, (char *)NULL, o->env);
	fprintf(stderr, "cannot run /bin/sh: %s\n", strerror(errno));
	_exit(EX_OSERR);
}

typedef struct run {
	int in, out;		/* our ends */
	pid_t pid;
	long long deadline;	/* ms; 0 = none */
	str_t output;
	size_t dropped;
	bool out_eof;
} run_t;

static int remaining(const run_t *r)
{
	if (r->deadline == 0)
		return 1000;
	long long left = r->deadline - event_now_ms();
	return left <= 0 ? 0 : left > 1000 ? 1000 : (int)left;
}

static bool expired(const run_t *r)
{
	return r->deadline != 0 && event_now_ms() >= r->deadline;
}

static void drain(run_t *r)
{
	char buf[4096];
	ssize_t n;

	while (!r->out_eof) {
		n = read(r->out, buf, sizeof(buf));
		if (n > 0) {
			size_t keep = 0;
			if (r->output.len < OUTPUT_KEEP)
				keep = OUTPUT_KEEP - r->output.len;
			if (keep > (size_t)n)
				keep = (size_t)n;
			str_append(&r->output, buf, keep);
			r->dropped += (size_t)n - keep;
			continue;
		}
		if (n == 0)
			r->out_eof = true;
		else if (errno == EINTR)
			continue;
		else if (errno != EAGAIN)
			r->out_eof = true;
		break;
	}
}

/* lmsg_copy's sink: write to the command, reading its output meanwhile
 * so that neither side can block the other. */
static int to_command(const void *data, size_t len, void *ctx)
{
	run_t *r = ctx;
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(r->in, p, len);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -1;	/* EPIPE: it stopped reading */
		if (expired(r)) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct pollfd pf[2] = {
			{ .fd = r->in, .events = POLLOUT },
			{ .fd = r->out_eof ? -1 : r->out, .events = POLLIN },
		};
		if (poll(pf, 2, remaining(r)) < 0 && errno != EINTR)
			return -1;
		if (pf[1].revents)
			drain(r);
	}
	return 0;
}

/* Waits for the child to exit (reading its output) until the deadline.
 * True with *wstatus when it exited. */
static bool wait_child(run_t *r, int *wstatus)
{
	for (;;) {
		pid_t w = waitpid(r->pid, wstatus, WNOHANG);
		if (w == r->pid)
			return true;
		if (w < 0 && errno != EINTR)
			return true;	/* cannot happen: our own child */
		if (expired(r))
			return false;
		struct pollfd pf = { .fd = r->out_eof ? -1 : r->out,
		    .events = POLLIN };
		/* Short sleeps once the output is closed: the command may
		 * have gone to the background with its output elsewhere. */
		int t = r->out_eof ? 20 : remaining(r);
		if (t > 100)
			t = 100;
		if (poll(&pf, 1, t) > 0)
			drain(r);
	}
}

/* The output, made printable, for a status text. */
static void said(const run_t *r, str_t *out)
{
	size_t n = r->output.len;

	str_reset(out);
	while (n > 0 && (r->output.buf[n - 1] == '\n'
	    || r->output.buf[n - 1] == '\r' || r->output.buf[n - 1] == ' '))
		n--;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)r->output.buf[i];
		str_putc(out, c == '\n' ? ' ' : c < 0x20 || c >= 0x7f ? '?' : c);
	}
	if (r->dropped > 0)
		str_cat(out, "...");
}

void command_exit_status(lstatus_t *st, int ws, const char *what,
    const char *output)
{
	const char *dsn = "5.3.0";
	const char *sep = output && *output ? ": " : "";

	if (output == NULL)
		output = "";
	if (WIFSIGNALED(ws)) {
		lstatus_set(st, "5.3.0", "%s was killed by signal %d%s%s", what,
		    WTERMSIG(ws), sep, output);
		return;
	}
	if (!WIFEXITED(ws)) {
		lstatus_set(st, "4.3.0", "%s ended in an unknown way", what);
		return;
	}
	switch (WEXITSTATUS(ws)) {
	case 0:
		lstatus_set(st, "2.0.0", "delivered to %s", what);
		return;
	case EX_TEMPFAIL:
	case EX_OSERR:
	case EX_IOERR:
		dsn = "4.3.0";
		break;
	case EX_NOUSER:
		dsn = "5.1.1";
		break;
	case EX_NOHOST:
		dsn = "5.1.2";
		break;
	case EX_NOPERM:
		dsn = "5.7.1";
		break;
	case EX_CONFIG:
		dsn = "5.3.5";
		break;
	case EX_DATAERR:
		dsn = "5.6.0";
		break;
	case EX_PROTOCOL:
		dsn = "5.5.0";
		break;
	}
	lstatus_set(st, dsn, "%s failed with exit status %d%s%s", what,
	    WEXITSTATUS(ws), sep, output);
}

int command_deliver(const command_opts_t *o, lmsg_t *m,
    const lmsg_copy_t *copy, lstatus_t *st)
{
	int in[2], out[2], wstatus = 0, r, rc = -1;
	run_t run = { .in = -1, .out = -1, .output = STR_INIT };
	str_t err = STR_INIT, text = STR_INIT, what = STR_INIT;

	str_setf(&what, "command %s", o->command);
	if (pipe(in) < 0) {
		lstatus_set(st, "4.3.0", "cannot run %s: pipe: %s",
		    str_cstr(&what), strerror(errno));
		goto out;
	}
	if (pipe(out) < 0) {
		lstatus_set(st, "4.3.0", "cannot run %s: pipe: %s",
		    str_cstr(&what), strerror(errno));
		close(in[0]);
		close(in[1]);
		goto out;
	}
	if ((run.pid = fork()) < 0) {
		lstatus_set(st, "4.3.0", "cannot run %s: fork: %s",
		    str_cstr(&what), strerror(errno));
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		goto out;
	}
	if (run.pid == 0)
		child(o, in[0], out[1]);
	close(in[0]);
	close(out[1]);
	run.in = in[1];
	run.out = out[0];
	(void)fcntl(run.in, F_SETFD, FD_CLOEXEC);
	(void)fcntl(run.out, F_SETFD, FD_CLOEXEC);
	(void)fcntl(run.in, F_SETFL, O_NONBLOCK);
	(void)fcntl(run.out, F_SETFL, O_NONBLOCK);
	if (o->time_limit > 0)
		run.deadline = event_now_ms() + o->time_limit * 1000LL;

	/* A command that stops reading must give EPIPE, not kill us (the
	 * daemon skeleton ignores SIGPIPE; a library must not rely on it). */
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	sigemptyset(&ign.sa_mask);
	(void)sigaction(SIGPIPE, &ign, &old);
	r = lmsg_copy(m, copy, to_command, &run, &err);
	int werr = r == LMSG_EWRITE ? errno : 0;
	(void)sigaction(SIGPIPE, &old, NULL);
	close(run.in);
	run.in = -1;
	if (r == LMSG_EREAD) {
		/* Do not let a command act on part of a message. */
		kill(-run.pid, SIGKILL);
		kill(run.pid, SIGKILL);
		(void)waitpid(run.pid, NULL, 0);
		lstatus_set(st, "4.3.0", "%s", str_cstr(&err));
		goto out;
	}
	bool timed_out = werr == ETIMEDOUT;
	if (!timed_out && !wait_child(&run, &wstatus))
		timed_out = true;
	if (timed_out) {
		kill(-run.pid, SIGKILL);
		kill(run.pid, SIGKILL);
		(void)waitpid(run.pid, NULL, 0);
		lstatus_set(st, "5.3.0", "%s: time limit (%ld s) exceeded",
		    str_cstr(&what), o->time_limit);
		goto out;
	}
	drain(&run);
	said(&run, &text);
	/* A command that exits 0 without reading all of its input has
	 * taken what it wanted (EPIPE is then no error). */
	command_exit_status(st, wstatus, str_cstr(&what), str_cstr(&text));
	if (lstatus_class(st) == '2' && werr != 0 && werr != EPIPE)
		lstatus_set(st, "4.3.0", "cannot write to %s: %s",
		    str_cstr(&what), strerror(werr));
	else if (lstatus_class(st) == '2')
		rc = 0;
out:
	if (run.out >= 0)
		close(run.out);
	str_release(&run.output);
	str_release(&err);
	str_release(&text);
	str_release(&what);
	return rc;
}
