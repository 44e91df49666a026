/* Unit tests for libutil/event, each run on the poll() backend and on the
 * native one (epoll on Linux, kqueue on BSD): readiness, hang-up, timer
 * order, cancel and re-arm, changes made by callbacks during dispatch. */
#include "config.h"
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stdio.h>
#include <unistd.h>
#include "event.h"

#define BOTH_BACKENDS(name)						\
	ATF_TC_WITHOUT_HEAD(name##_poll);				\
	ATF_TC_BODY(name##_poll, tc) { name(EVENT_BACKEND_POLL); }	\
	ATF_TC_WITHOUT_HEAD(name##_native);				\
	ATF_TC_BODY(name##_native, tc) { name(EVENT_BACKEND_DEFAULT); }
#define ADD_BOTH(tp, name)						\
	do {								\
		ATF_TP_ADD_TC(tp, name##_poll);				\
		ATF_TP_ADD_TC(tp, name##_native);			\
	} while (0)

static event_loop_t *mkloop(enum event_backend b)
{
	event_loop_t *loop = event_loop_new(b);
	ATF_REQUIRE_MSG(loop != NULL, "event_loop_new: %s", strerror(errno));
	return loop;
}

static void mkpair(int sv[2])
{
	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
}

struct rec {
	int calls;
	int fd;
	int events;
};

static void on_fd(int fd, int events, void *ctx)
{
	struct rec *r = ctx;
	r->calls++;
	r->fd = fd;
	r->events = events;
}

ATF_TC_WITHOUT_HEAD(backends);
ATF_TC_BODY(backends, tc)
{
	event_loop_t *loop = mkloop(EVENT_BACKEND_POLL);
	ATF_CHECK_STREQ(event_loop_backend(loop), "poll");
	event_loop_free(loop);
	loop = mkloop(EVENT_BACKEND_DEFAULT);
#if defined(HAVE_EPOLL)
	ATF_CHECK_STREQ(event_loop_backend(loop), "epoll");
#elif defined(HAVE_KQUEUE)
	ATF_CHECK_STREQ(event_loop_backend(loop), "kqueue");
#endif
	event_loop_free(loop);
#ifndef HAVE_KQUEUE
	errno = 0;
	ATF_CHECK(event_loop_new(EVENT_BACKEND_KQUEUE) == NULL);
	ATF_CHECK_EQ(errno, ENOSYS);
#endif
#ifndef HAVE_EPOLL
	errno = 0;
	ATF_CHECK(event_loop_new(EVENT_BACKEND_EPOLL) == NULL);
	ATF_CHECK_EQ(errno, ENOSYS);
#endif
	event_loop_free(NULL);
}

static void readiness(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct rec r = { 0, -1, 0 }, w = { 0, -1, 0 };
	int p[2], sv[2];
	char c;

	ATF_REQUIRE_EQ(pipe(p), 0);
	ATF_REQUIRE_EQ(event_add(loop, p[0], EVENT_READ, on_fd, &r), 0);
	ATF_CHECK_EQ(event_interest(loop, p[0]), EVENT_READ);
	ATF_CHECK_EQ(event_run_once(loop, 0), 0);
	ATF_CHECK_EQ(r.calls, 0);
	ATF_REQUIRE_EQ(write(p[1], "x", 1), 1);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK_EQ(r.calls, 1);
	ATF_CHECK_EQ(r.fd, p[0]);
	ATF_CHECK_EQ(r.events, EVENT_READ);
	/* Level-triggered: still readable, reported again. */
	ATF_CHECK_EQ(event_run_once(loop, 0), 1);
	ATF_CHECK_EQ(r.calls, 2);
	ATF_REQUIRE_EQ(read(p[0], &c, 1), 1);
	ATF_CHECK_EQ(event_run_once(loop, 0), 0);
	/* Interest 0 pauses the descriptor. */
	ATF_REQUIRE_EQ(write(p[1], "y", 1), 1);
	ATF_CHECK_EQ(event_modify(loop, p[0], 0), 0);
	ATF_CHECK_EQ(event_interest(loop, p[0]), 0);
	ATF_CHECK_EQ(event_run_once(loop, 0), 0);
	ATF_CHECK_EQ(event_modify(loop, p[0], EVENT_READ), 0);
	ATF_CHECK_EQ(event_run_once(loop, 0), 1);
	ATF_CHECK_EQ(r.calls, 3);

	/* Write interest on an idle socket: writable at once, not readable. */
	mkpair(sv);
	ATF_REQUIRE_EQ(event_add(loop, sv[0], EVENT_WRITE, on_fd, &w), 0);
	ATF_REQUIRE_EQ(event_remove(loop, p[0]), 0);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK_EQ(w.fd, sv[0]);
	ATF_CHECK_EQ(w.events, EVENT_WRITE);
	ATF_CHECK_EQ(event_modify(loop, sv[0], EVENT_READ | EVENT_WRITE), 0);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK_EQ(w.events, EVENT_WRITE);
	ATF_REQUIRE_EQ(write(sv[1], "z", 1), 1);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK_EQ(w.events, EVENT_READ | EVENT_WRITE);
	/* Removed: data pending (p[0]) and writability (sv[0]) not reported. */
	ATF_CHECK_EQ(event_remove(loop, sv[0]), 0);
	ATF_CHECK_EQ(event_interest(loop, sv[0]), -1);
	ATF_CHECK_EQ(event_run_once(loop, 0), 0);
	ATF_CHECK_EQ(r.calls, 3);
	event_loop_free(loop);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}
BOTH_BACKENDS(readiness)

struct eofrec {
	event_loop_t *loop;
	int calls, eofs, events;
};

static void on_eof(int fd, int events, void *ctx)
{
	struct eofrec *e = ctx;
	char buf[16];

	e->calls++;
	e->events |= events;
	if (read(fd, buf, sizeof(buf)) == 0) {
		e->eofs++;
		event_remove(e->loop, fd);
	}
}

static void hangup(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct eofrec e = { loop, 0, 0, 0 };
	struct rec w = { 0, -1, 0 };
	int p[2], sv[2];

	ATF_REQUIRE_EQ(pipe(p), 0);
	ATF_REQUIRE_EQ(event_add(loop, p[0], EVENT_READ, on_eof, &e), 0);
	ATF_REQUIRE_EQ(write(p[1], "data", 4), 4);
	close(p[1]);
	for (int i = 0; i < 10 && e.eofs == 0; i++)
		ATF_REQUIRE(event_run_once(loop, 1000) >= 0);
	ATF_CHECK_EQ(e.eofs, 1);
	ATF_CHECK(e.calls >= 2);	/* data, then end of file */
	ATF_CHECK(e.events & EVENT_READ);
	ATF_CHECK_EQ(event_interest(loop, p[0]), -1);
	/* A writer whose peer is gone hears about it (WRITE, maybe ERROR). */
	mkpair(sv);
	close(sv[1]);
	ATF_REQUIRE_EQ(event_add(loop, sv[0], EVENT_WRITE, on_fd, &w), 0);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK(w.events & EVENT_WRITE);
	event_remove(loop, sv[0]);
	event_loop_free(loop);
	close(p[0]);
	close(sv[0]);
}
BOTH_BACKENDS(hangup)

struct order {
	int seen[16];
	int n;
};
struct tctx {
	struct order *o;
	int id;
};

static void on_timer_order(void *ctx)
{
	struct tctx *t = ctx;
	t->o->seen[t->o->n++] = t->id;
}

static void timer_order(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	/* Gaps far larger than the time it takes to start them all. */
	static const int delay[] = { 250, 50, 150, 50, 0, 100 };
	enum { N = sizeof(delay) / sizeof(delay[0]) };
	static const int expect[N] = { 4, 1, 3, 5, 2, 0 };
	event_timer_t t[N];
	struct tctx c[N];
	struct order o = { { 0 }, 0 };

	for (int i = 0; i < N; i++) {
		c[i].o = &o;
		c[i].id = i;
		event_timer_init(&t[i], on_timer_order, &c[i]);
		event_timer_start(loop, &t[i], delay[i]);
		ATF_CHECK(event_timer_pending(&t[i]));
	}
	for (int round = 0; round < 100 && o.n < N; round++)
		ATF_REQUIRE(event_run_once(loop, -1) >= 0);
	ATF_REQUIRE_EQ(o.n, N);
	for (int i = 0; i < N; i++) {
		ATF_CHECK_EQ_MSG(o.seen[i], expect[i], "position %d", i);
		ATF_CHECK(!event_timer_pending(&t[i]));
	}
	/* Nothing left: an unlimited wait returns at once. */
	ATF_CHECK_EQ(event_run_once(loop, -1), 0);
	event_loop_free(loop);
}
BOTH_BACKENDS(timer_order)

struct cancel_ctx {
	event_timer_t a, b, c;
	int fa, fb, fc;
};

static void on_a(void *ctx)
{
	struct cancel_ctx *x = ctx;
	x->fa++;
	event_timer_cancel(&x->c);	/* cancel another, from a callback */
}
static void on_b(void *ctx)
{
	((struct cancel_ctx *)ctx)->fb++;
}
static void on_c(void *ctx)
{
	((struct cancel_ctx *)ctx)->fc++;
}

static void timer_cancel(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct cancel_ctx x;
	event_timer_t zero, never = EVENT_TIMER_INIT(on_b, NULL);

	memset(&x, 0, sizeof(x));
	event_timer_init(&x.a, on_a, &x);
	event_timer_init(&x.b, on_b, &x);
	event_timer_init(&x.c, on_c, &x);
	event_timer_start(loop, &x.a, 20);
	event_timer_start(loop, &x.b, 40);
	event_timer_start(loop, &x.c, 60);
	event_timer_cancel(&x.b);
	ATF_CHECK(!event_timer_pending(&x.b));
	event_timer_cancel(&x.b);	/* twice: no-op */
	/* Zero-filled and never-started timers: not pending, cancel no-op
	 * (a zero-filled one must not remove the heap's first element). */
	memset(&zero, 0, sizeof(zero));
	ATF_CHECK(!event_timer_pending(&zero));
	event_timer_cancel(&zero);
	ATF_CHECK(!event_timer_pending(&never));
	event_timer_cancel(&never);
	ATF_CHECK(event_timer_pending(&x.a));
	ATF_CHECK(event_timer_pending(&x.c));
	ATF_CHECK_EQ(event_run(loop), 0);	/* returns when no timer is left */
	ATF_CHECK_EQ(x.fa, 1);
	ATF_CHECK_EQ(x.fb, 0);
	ATF_CHECK_EQ(x.fc, 0);
	/* Re-arming a pending timer re-keys it: it runs once. */
	event_timer_start(loop, &x.b, 10000);
	event_timer_start(loop, &x.b, 5);
	ATF_CHECK_EQ(event_run(loop), 0);
	ATF_CHECK_EQ(x.fb, 1);
	event_loop_free(loop);
}
BOTH_BACKENDS(timer_cancel)

struct rearm {
	event_loop_t *loop;
	event_timer_t t;
	int count;
};

static void on_rearm(void *ctx)
{
	struct rearm *r = ctx;
	if (++r->count < 5)
		event_timer_start(r->loop, &r->t, 0);
}

static void timer_rearm_self(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct rearm r;

	r.loop = loop;
	r.count = 0;
	event_timer_init(&r.t, on_rearm, &r);
	event_timer_start(loop, &r.t, 0);
	/* One run per round: the re-armed timer waits for the next one. */
	for (int i = 1; i <= 5; i++) {
		ATF_CHECK_EQ(event_run_once(loop, -1), 1);
		ATF_CHECK_EQ(r.count, i);
	}
	ATF_CHECK(!event_timer_pending(&r.t));
	ATF_CHECK_EQ(event_run_once(loop, 0), 0);
	event_loop_free(loop);
}
BOTH_BACKENDS(timer_rearm_self)

/* The first callback to run removes and closes all three readable
 * descriptors and registers new ones that reuse their numbers; the events
 * already collected for the old registrations must be dropped. */
struct rm_ctx {
	event_loop_t *loop;
	int old[3];
	int fresh[6];
	int calls, wrong;
};

static void on_wrong(int fd, int events, void *ctx)
{
	(void)fd;
	(void)events;
	((struct rm_ctx *)ctx)->wrong++;
}

static void on_remove_all(int fd, int events, void *ctx)
{
	struct rm_ctx *x = ctx;
	(void)fd;
	(void)events;
	x->calls++;
	for (int i = 0; i < 3; i++) {
		event_remove(x->loop, x->old[i]);
		close(x->old[i]);
	}
	for (int i = 0; i < 6; i += 2) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, &x->fresh[i]) < 0)
			continue;
		/* Readable now, so a misdelivered stale event would show. */
		if (write(x->fresh[i + 1], "n", 1) != 1)
			x->wrong += 100;	/* shows up as a failure */
		event_add(x->loop, x->fresh[i], EVENT_READ, on_wrong, x);
		event_add(x->loop, x->fresh[i + 1], EVENT_READ, on_wrong, x);
	}
}

static void remove_during_dispatch(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct rm_ctx x;
	int peer[3], sv[2];

	memset(&x, 0, sizeof(x));
	x.loop = loop;
	for (int i = 0; i < 3; i++) {
		mkpair(sv);
		x.old[i] = sv[0];
		peer[i] = sv[1];
		ATF_REQUIRE_EQ(write(peer[i], "x", 1), 1);
		ATF_REQUIRE_EQ(event_add(loop, x.old[i], EVENT_READ,
		    on_remove_all, &x), 0);
	}
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK_EQ(x.calls, 1);
	ATF_CHECK_EQ(x.wrong, 0);
	/* The test means something only if numbers were reused. */
	int reused = 0;
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 6; j++)
			reused += x.old[i] == x.fresh[j];
	ATF_CHECK_EQ(reused, 3);
	/* Next round the new registrations are live. */
	ATF_CHECK(event_run_once(loop, 1000) >= 1);
	ATF_CHECK(x.wrong >= 1);
	for (int i = 0; i < 6; i++) {
		event_remove(loop, x.fresh[i]);
		close(x.fresh[i]);
	}
	for (int i = 0; i < 3; i++)
		close(peer[i]);
	event_loop_free(loop);
}
BOTH_BACKENDS(remove_during_dispatch)

struct self_ctx {
	event_loop_t *loop;
	int calls;
};

static void on_remove_self(int fd, int events, void *ctx)
{
	struct self_ctx *s = ctx;
	(void)events;
	s->calls++;
	ATF_CHECK_EQ(event_remove(s->loop, fd), 0);
}

static void remove_self(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct self_ctx s = { loop, 0 };
	struct rec other = { 0, -1, 0 };
	int a[2], o[2];

	mkpair(a);
	mkpair(o);
	ATF_REQUIRE_EQ(write(a[1], "x", 1), 1);
	ATF_REQUIRE_EQ(write(o[1], "x", 1), 1);
	ATF_REQUIRE_EQ(event_add(loop, a[0], EVENT_READ, on_remove_self, &s), 0);
	ATF_REQUIRE_EQ(event_add(loop, o[0], EVENT_READ, on_fd, &other), 0);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 2);
	ATF_CHECK_EQ(s.calls, 1);
	ATF_CHECK_EQ(other.calls, 1);
	ATF_CHECK_EQ(event_run_once(loop, 0), 1);	/* only the other */
	ATF_CHECK_EQ(s.calls, 1);
	ATF_CHECK_EQ(other.calls, 2);
	event_loop_free(loop);
	close(a[0]);
	close(a[1]);
	close(o[0]);
	close(o[1]);
}
BOTH_BACKENDS(remove_self)

struct adder {
	event_loop_t *loop;
	event_timer_t t;
	int timer_fired, fd_calls;
	int newfd;
	struct rec newrec;
};

static void on_add_timer_fired(void *ctx)
{
	((struct adder *)ctx)->timer_fired++;
}

static void on_adder(int fd, int events, void *ctx)
{
	struct adder *a = ctx;
	(void)events;
	a->fd_calls++;
	event_timer_start(a->loop, &a->t, 0);
	event_remove(a->loop, fd);
	/* A readable descriptor added now waits for the next round. */
	event_add(a->loop, a->newfd, EVENT_READ, on_fd, &a->newrec);
}

static void add_during_dispatch(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct adder a;
	int p[2], q[2];

	memset(&a, 0, sizeof(a));
	a.loop = loop;
	event_timer_init(&a.t, on_add_timer_fired, &a);
	ATF_REQUIRE_EQ(pipe(p), 0);
	ATF_REQUIRE_EQ(pipe(q), 0);
	a.newfd = q[0];
	ATF_REQUIRE_EQ(write(p[1], "x", 1), 1);
	ATF_REQUIRE_EQ(write(q[1], "x", 1), 1);
	ATF_REQUIRE_EQ(event_add(loop, p[0], EVENT_READ, on_adder, &a), 0);
	/* The fd callback and the 0 ms timer it started. */
	ATF_CHECK_EQ(event_run_once(loop, 1000), 2);
	ATF_CHECK_EQ(a.fd_calls, 1);
	ATF_CHECK_EQ(a.timer_fired, 1);
	ATF_CHECK_EQ(a.newrec.calls, 0);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK_EQ(a.newrec.calls, 1);
	ATF_CHECK_EQ(a.newrec.fd, q[0]);
	event_loop_free(loop);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}
BOTH_BACKENDS(add_during_dispatch)

/* More ready descriptors than one epoll batch holds. */
struct many {
	event_loop_t *loop;
	int done;
};

static void on_many(int fd, int events, void *ctx)
{
	struct many *m = ctx;
	char c;
	(void)events;
	if (read(fd, &c, 1) == 1)
		m->done++;
	event_remove(m->loop, fd);
}

static void many_fds(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct rlimit rl;
	int n = 300;
	struct many m = { loop, 0 };

	ATF_REQUIRE_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < (rlim_t)(2 * n + 64)) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < (rlim_t)(2 * n + 64))
			n = ((int)rl.rlim_cur - 64) / 2;
	}
	ATF_REQUIRE(n > 10);
	int *fds = calloc((size_t)(2 * n), sizeof(int));
	for (int i = 0; i < n; i++) {
		ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, &fds[2 * i]), 0);
		ATF_REQUIRE_EQ(write(fds[2 * i + 1], "x", 1), 1);
		ATF_REQUIRE_EQ(event_add(loop, fds[2 * i], EVENT_READ, on_many, &m), 0);
	}
	for (int round = 0; round < 50 && m.done < n; round++)
		ATF_REQUIRE(event_run_once(loop, 1000) >= 0);
	ATF_CHECK_EQ(m.done, n);
	ATF_CHECK_EQ(event_run_once(loop, 0), 0);
	for (int i = 0; i < 2 * n; i++)
		close(fds[i]);
	free(fds);
	event_loop_free(loop);
}
BOTH_BACKENDS(many_fds)

static void errors(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct rec r = { 0, -1, 0 };
	int p[2];

	ATF_REQUIRE_EQ(pipe(p), 0);
	errno = 0;
	ATF_CHECK_EQ(event_add(loop, -1, EVENT_READ, on_fd, &r), -1);
	ATF_CHECK_EQ(errno, EBADF);
	ATF_CHECK_EQ(event_add(loop, p[0], 0x10, on_fd, &r), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_CHECK_EQ(event_add(loop, p[0], EVENT_READ, NULL, &r), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_CHECK_EQ(event_modify(loop, p[0], EVENT_READ), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	ATF_CHECK_EQ(event_remove(loop, p[0]), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	ATF_CHECK_EQ(event_remove(loop, 100000), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	ATF_CHECK_EQ(event_interest(loop, -5), -1);
	ATF_REQUIRE_EQ(event_add(loop, p[0], EVENT_READ, on_fd, &r), 0);
	ATF_CHECK_EQ(event_add(loop, p[0], EVENT_READ, on_fd, &r), -1);
	ATF_CHECK_EQ(errno, EEXIST);
	ATF_CHECK_EQ(event_modify(loop, p[0], 0x20), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_CHECK_EQ(event_interest(loop, p[0]), EVENT_READ);
	/* A high descriptor number grows the table. */
	int hi = fcntl(p[1], F_DUPFD, 900);
	if (hi >= 0) {
		ATF_CHECK_EQ(event_add(loop, hi, EVENT_WRITE, on_fd, &r), 0);
		ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
		ATF_CHECK_EQ(r.fd, hi);
		ATF_CHECK_EQ(event_remove(loop, hi), 0);
		close(hi);
	}
	/* epoll refuses regular files; the registration must not linger. */
	if (strcmp(event_loop_backend(loop), "epoll") == 0) {
		int f = open("plain", O_RDWR | O_CREAT, 0600);
		ATF_REQUIRE(f >= 0);
		ATF_CHECK_EQ(event_add(loop, f, EVENT_READ, on_fd, &r), -1);
		ATF_CHECK_EQ(errno, EPERM);
		ATF_CHECK_EQ(event_interest(loop, f), -1);
		close(f);
	}
	event_loop_free(loop);
	close(p[0]);
	close(p[1]);
}
BOTH_BACKENDS(errors)

struct stopper {
	event_loop_t *loop;
	int fired;
};

static void on_stop(void *ctx)
{
	struct stopper *s = ctx;
	s->fired++;
	event_stop(s->loop);
}

static void run_and_stop(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct stopper s = { loop, 0 };
	event_timer_t t, later;
	struct rec r = { 0, -1, 0 };
	int p[2];

	/* Nothing to wait for: returns at once. */
	ATF_CHECK_EQ(event_run(loop), 0);
	ATF_REQUIRE_EQ(pipe(p), 0);
	ATF_REQUIRE_EQ(event_add(loop, p[0], EVENT_READ, on_fd, &r), 0);
	event_timer_init(&t, on_stop, &s);
	event_timer_init(&later, on_stop, &s);
	event_timer_start(loop, &t, 10);
	event_timer_start(loop, &later, 60000);
	ATF_CHECK_EQ(event_run(loop), 0);
	ATF_CHECK_EQ(s.fired, 1);
	ATF_CHECK(event_timer_pending(&later));
	/* A stop requested before the call ends the run at once... */
	event_stop(loop);
	event_timer_start(loop, &t, 0);
	ATF_CHECK_EQ(event_run(loop), 0);
	ATF_CHECK_EQ(s.fired, 1);
	/* ...and is used up by it. */
	ATF_CHECK_EQ(event_run(loop), 0);
	ATF_CHECK_EQ(s.fired, 2);
	ATF_CHECK_EQ(r.calls, 0);
	event_timer_cancel(&later);
	event_loop_free(loop);
	close(p[0]);
	close(p[1]);
}
BOTH_BACKENDS(run_and_stop)

struct nest {
	event_loop_t *loop;
	int r, err;
};

static void on_nest(void *ctx)
{
	struct nest *n = ctx;
	n->r = event_run_once(n->loop, 0);
	n->err = errno;
}

static void nested_run(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct nest n = { loop, 0, 0 };
	event_timer_t t;

	event_timer_init(&t, on_nest, &n);
	event_timer_start(loop, &t, 0);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK_EQ(n.r, -1);
	ATF_CHECK_EQ(n.err, EBUSY);
	event_loop_free(loop);
}
BOTH_BACKENDS(nested_run)

static void free_with_pending(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct stopper s = { NULL, 0 };
	event_timer_t t;

	event_timer_init(&t, on_stop, &s);
	event_timer_start(loop, &t, 50000);
	ATF_CHECK(event_timer_pending(&t));
	event_loop_free(loop);
	ATF_CHECK(!event_timer_pending(&t));
	event_timer_cancel(&t);	/* harmless after the loop is gone */
	/* The timer can be used on another loop. */
	loop = mkloop(b);
	s.loop = loop;
	event_timer_start(loop, &t, 0);
	ATF_CHECK_EQ(event_run(loop), 0);
	ATF_CHECK_EQ(s.fired, 1);
	event_loop_free(loop);
}
BOTH_BACKENDS(free_with_pending)

/* A timer moved from one loop to another leaves the first. */
ATF_TC_WITHOUT_HEAD(timer_moves_loop);
ATF_TC_BODY(timer_moves_loop, tc)
{
	event_loop_t *a = mkloop(EVENT_BACKEND_POLL);
	event_loop_t *b = mkloop(EVENT_BACKEND_DEFAULT);
	struct stopper s = { b, 0 };
	event_timer_t t;

	event_timer_init(&t, on_stop, &s);
	event_timer_start(a, &t, 0);
	event_timer_start(b, &t, 0);
	ATF_CHECK_EQ(event_run_once(a, 0), 0);
	ATF_CHECK_EQ(event_run(b), 0);
	ATF_CHECK_EQ(s.fired, 1);
	event_loop_free(a);
	event_loop_free(b);
}

/* A pool of processes waiting on one listening socket: how many wake for
 * one connection?  Each child registers the shared socket (with or
 * without EVENT_EXCLUSIVE), says it is ready, waits once, and reports
 * whether it woke within 1 s.  Nobody accepts, so level-triggered
 * readiness stays on; a child that enters its wait late sees it too,
 * which is why the parent waits before connecting. */
#define POOL 8
static int woken_by_one_connection(int flags)
{
	int lsn, ready[2], done[2], woke = 0;
	pid_t pids[POOL];
	struct sockaddr_un sun;
	char c;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "pool.sock");
	unlink(sun.sun_path);
	ATF_REQUIRE((lsn = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0);
	ATF_REQUIRE(bind(lsn, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	ATF_REQUIRE(listen(lsn, 16) == 0);
	ATF_REQUIRE(pipe(ready) == 0 && pipe(done) == 0);
	for (int i = 0; i < POOL; i++) {
		ATF_REQUIRE((pids[i] = fork()) >= 0);
		if (pids[i] == 0) {
			event_loop_t *loop = event_loop_new(EVENT_BACKEND_DEFAULT);
			struct rec r = { 0, -1, 0 };
			if (loop == NULL || event_add(loop, lsn, EVENT_READ | flags,
			    on_fd, &r) < 0)
				_exit(2);
			if (write(ready[1], "r", 1) != 1)
				_exit(2);
			(void)event_run_once(loop, 1000);
			c = r.calls ? 'w' : 'n';
			_exit(write(done[1], &c, 1) == 1 ? 0 : 2);
		}
	}
	for (int i = 0; i < POOL; i++)
		ATF_REQUIRE(read(ready[0], &c, 1) == 1);
	usleep(100000);
	int cfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ATF_REQUIRE(connect(cfd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	for (int i = 0; i < POOL; i++) {
		int st;
		ATF_REQUIRE(read(done[0], &c, 1) == 1);
		woke += c == 'w';
		ATF_REQUIRE(waitpid(pids[i], &st, 0) == pids[i]);
		ATF_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	close(cfd);
	close(lsn);
	for (int i = 0; i < 2; i++) {
		close(ready[i]);
		close(done[i]);
	}
	return woke;
}

ATF_TC_WITHOUT_HEAD(exclusive_wakeup);
ATF_TC_BODY(exclusive_wakeup, tc)
{
	event_loop_t *loop = mkloop(EVENT_BACKEND_DEFAULT);
	bool excl = event_loop_exclusive(loop);
	int all, one;

	event_loop_free(loop);
	/* Without the flag the whole pool wakes: the herd this prevents. */
	all = woken_by_one_connection(0);
	ATF_CHECK_EQ_MSG(all, POOL, "%d of %d woke without EVENT_EXCLUSIVE",
	    all, POOL);
	one = woken_by_one_connection(EVENT_EXCLUSIVE);
	if (!excl) {
		ATF_CHECK_EQ(one, POOL);
		atf_tc_skip("backend %s wakes every waiter; the server "
		    "skeleton serialises accept instead", "default");
	}
	/* "One or more" says epoll(7); in practice one. */
	ATF_CHECK_MSG(one >= 1 && one <= 2, "%d of %d woke with "
	    "EVENT_EXCLUSIVE", one, POOL);
}

/* The flag survives a change of interest (epoll allows EPOLLEXCLUSIVE
 * only when adding) and is refused by event_modify. */
static void exclusive_modify(enum event_backend b)
{
	event_loop_t *loop = mkloop(b);
	struct rec r = { 0, -1, 0 };
	int sv[2];

	mkpair(sv);
	ATF_REQUIRE_EQ(event_add(loop, sv[0], EVENT_READ | EVENT_EXCLUSIVE,
	    on_fd, &r), 0);
	ATF_CHECK_EQ(event_interest(loop, sv[0]), EVENT_READ);
	ATF_REQUIRE_EQ(event_modify(loop, sv[0], 0), 0);
	ATF_REQUIRE_EQ(write(sv[1], "x", 1), 1);
	ATF_CHECK_EQ(event_run_once(loop, 0), 0);
	ATF_REQUIRE_EQ(event_modify(loop, sv[0], EVENT_READ), 0);
	ATF_CHECK_EQ(event_run_once(loop, 1000), 1);
	ATF_CHECK_EQ(r.calls, 1);
	ATF_CHECK_EQ(r.fd, sv[0]);
	errno = 0;
	ATF_CHECK_EQ(event_modify(loop, sv[0], EVENT_READ | EVENT_EXCLUSIVE), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	event_remove(loop, sv[0]);
	event_loop_free(loop);
	close(sv[0]);
	close(sv[1]);
}
BOTH_BACKENDS(exclusive_modify)

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, backends);
	ADD_BOTH(tp, readiness);
	ADD_BOTH(tp, hangup);
	ADD_BOTH(tp, timer_order);
	ADD_BOTH(tp, timer_cancel);
	ADD_BOTH(tp, timer_rearm_self);
	ADD_BOTH(tp, remove_during_dispatch);
	ADD_BOTH(tp, remove_self);
	ADD_BOTH(tp, add_during_dispatch);
	ADD_BOTH(tp, many_fds);
	ADD_BOTH(tp, errors);
	ADD_BOTH(tp, run_and_stop);
	ADD_BOTH(tp, nested_run);
	ADD_BOTH(tp, free_with_pending);
	ATF_TP_ADD_TC(tp, timer_moves_loop);
	ATF_TP_ADD_TC(tp, exclusive_wakeup);
	ADD_BOTH(tp, exclusive_modify);
	return atf_no_error();
}
