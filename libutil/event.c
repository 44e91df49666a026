/* Event loop over epoll, kqueue or poll(), with heap-ordered timers; see
 * event.h for the rules callbacks can rely on. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_EPOLL
#include <sys/epoll.h>
#endif
#ifdef HAVE_KQUEUE
#include <sys/types.h>
#include <sys/event.h>
#include <sys/time.h>
#endif
#include "event.h"
#include "heap.h"
#include "mem.h"

/* One registered descriptor.  gen identifies the registration, so an event
 * collected for an earlier registration of the same number is recognised
 * and dropped. */
struct fdent {
	event_fd_fn fn;		/* NULL: not registered */
	void *ctx;
	uint32_t gen;
	int events;		/* interest as the caller set it */
	int kernel;		/* interest the backend currently has */
	bool exclusive;		/* EVENT_EXCLUSIVE at event_add() */
#ifdef HAVE_KQUEUE
	/* kqueue reports each direction separately: where in this round's
	 * ready list the descriptor already is, to merge the two. */
	uint64_t kq_round;
	int kq_slot;
#endif
};

/* An event collected by a backend wait, dispatched afterwards. */
struct ready {
	int fd;
	uint32_t gen;
	int events;
};

struct backend;

struct event_loop {
	const struct backend *be;
	int kfd;		/* epoll or kqueue descriptor */
	struct fdent *fds;
	int nfds;		/* size of fds[] */
	int nregistered;
	uint32_t next_gen;
	struct ready *ready;
	int nready, ready_cap;
	/* poll backend: the pollfd array, rebuilt when registrations change */
	struct pollfd *pfd;
	uint32_t *pgen;
	int npfd, pfd_cap;
	bool pfd_dirty;
	heap_t *timers;
	uint64_t timer_seq;
	uint64_t round;		/* backend waits so far */
	bool dispatching;
	volatile sig_atomic_t stop;
};

struct backend {
	const char *name;
	bool exclusive;		/* honours EVENT_EXCLUSIVE */
	int (*init)(event_loop_t *);
	void (*fini)(event_loop_t *);
	/* Makes the kernel interest of fd equal to want (0 = none). */
	int (*set)(event_loop_t *, int fd, struct fdent *, int want);
	/* Fills loop->ready; returns 0 or -1 with errno. */
	int (*wait)(event_loop_t *, int timeout_ms);
};

int64_t event_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void ready_add(event_loop_t *loop, int fd, uint32_t gen, int events)
{
	if (loop->nready == loop->ready_cap) {
		loop->ready_cap = loop->ready_cap ? 2 * loop->ready_cap : 64;
		loop->ready = xreallocarray(loop->ready, (size_t)loop->ready_cap,
		    sizeof(*loop->ready));
	}
	loop->ready[loop->nready].fd = fd;
	loop->ready[loop->nready].gen = gen;
	loop->ready[loop->nready].events = events;
	loop->nready++;
}

/* ---- poll() ---- */

static int poll_init(event_loop_t *loop)
{
	loop->kfd = -1;
	return 0;
}

static void poll_fini(event_loop_t *loop)
{
	free(loop->pfd);
	free(loop->pgen);
}

static int poll_set(event_loop_t *loop, int fd, struct fdent *e, int want)
{
	(void)fd;
	(void)e;
	(void)want;
	loop->pfd_dirty = true;
	return 0;
}

static void poll_rebuild(event_loop_t *loop)
{
	int n = 0;

	if (loop->pfd_cap < loop->nregistered) {
		loop->pfd_cap = loop->nregistered;
		loop->pfd = xreallocarray(loop->pfd, (size_t)loop->pfd_cap,
		    sizeof(*loop->pfd));
		loop->pgen = xreallocarray(loop->pgen, (size_t)loop->pfd_cap,
		    sizeof(*loop->pgen));
	}
	for (int fd = 0; fd < loop->nfds; fd++) {
		struct fdent *e = &loop->fds[fd];
		if (e->fn == NULL || e->events == 0)
			continue;
		loop->pfd[n].fd = fd;
		loop->pfd[n].events = (short)(((e->events & EVENT_READ) ? POLLIN : 0) |
		    ((e->events & EVENT_WRITE) ? POLLOUT : 0));
		loop->pgen[n] = e->gen;
		n++;
	}
	loop->npfd = n;
	loop->pfd_dirty = false;
}

static int poll_wait(event_loop_t *loop, int timeout)
{
	int r;

	if (loop->pfd_dirty)
		poll_rebuild(loop);
	r = poll(loop->pfd, (nfds_t)loop->npfd, timeout);
	if (r < 0)
		return -1;
	for (int i = 0; i < loop->npfd && r > 0; i++) {
		short re = loop->pfd[i].revents;
		int ev = 0;
		if (re == 0)
			continue;
		r--;
		if (re & POLLIN)
			ev |= EVENT_READ;
		if (re & POLLOUT)
			ev |= EVENT_WRITE;
		if (re & (POLLERR | POLLHUP | POLLNVAL))
			ev |= EVENT_ERROR;
		ready_add(loop, loop->pfd[i].fd, loop->pgen[i], ev);
	}
	return 0;
}

static const struct backend poll_backend = {
	"poll", false, poll_init, poll_fini, poll_set, poll_wait
};

/* ---- epoll ---- */

#ifdef HAVE_EPOLL
#define EPOLL_BATCH 256

static int epoll_init(event_loop_t *loop)
{
	loop->kfd = epoll_create1(EPOLL_CLOEXEC);
	return loop->kfd < 0 ? -1 : 0;
}

static void epoll_fini(event_loop_t *loop)
{
	if (loop->kfd >= 0)
		close(loop->kfd);
}

static int epoll_set(event_loop_t *loop, int fd, struct fdent *e, int want)
{
	struct epoll_event ev;
	int op;

	/* An interest of 0 is a removal: epoll would otherwise keep reporting
	 * hang-ups that nobody asked for. */
	if (want == 0) {
		if (e->kernel == 0)
			return 0;
		/* The caller may have closed fd already; it is gone then. */
		if (epoll_ctl(loop->kfd, EPOLL_CTL_DEL, fd, NULL) < 0 &&
		    errno != EBADF && errno != ENOENT)
			return -1;
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = ((want & EVENT_READ) ? EPOLLIN : 0) |
	    ((want & EVENT_WRITE) ? EPOLLOUT : 0);
	ev.data.u64 = ((uint64_t)e->gen << 32) | (uint32_t)fd;
	op = e->kernel ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (e->exclusive) {
		/* EPOLLEXCLUSIVE is only allowed with EPOLL_CTL_ADD: a change
		 * is a removal and a new registration. */
		ev.events |= EPOLLEXCLUSIVE;
		if (op == EPOLL_CTL_MOD &&
		    epoll_ctl(loop->kfd, EPOLL_CTL_DEL, fd, NULL) < 0)
			return -1;
		op = EPOLL_CTL_ADD;
		if (epoll_ctl(loop->kfd, op, fd, &ev) == 0)
			return 0;
		if (errno != EINVAL)
			return -1;
		/* A kernel before 4.5: every waiter wakes, as elsewhere. */
		e->exclusive = false;
		ev.events &= ~(uint32_t)EPOLLEXCLUSIVE;
	}
	return epoll_ctl(loop->kfd, op, fd, &ev);
}

static int epoll_wait_fn(event_loop_t *loop, int timeout)
{
	struct epoll_event evs[EPOLL_BATCH];
	int n = epoll_wait(loop->kfd, evs, EPOLL_BATCH, timeout);

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		uint32_t re = evs[i].events;
		int ev = 0;
		if (re & EPOLLIN)
			ev |= EVENT_READ;
		if (re & EPOLLOUT)
			ev |= EVENT_WRITE;
		if (re & (EPOLLERR | EPOLLHUP))
			ev |= EVENT_ERROR;
		ready_add(loop, (int)(uint32_t)evs[i].data.u64,
		    (uint32_t)(evs[i].data.u64 >> 32), ev);
	}
	return 0;
}

static const struct backend epoll_backend = {
	"epoll", true, epoll_init, epoll_fini, epoll_set, epoll_wait_fn
};
#endif

/* ---- kqueue ---- */

#ifdef HAVE_KQUEUE
#define KQUEUE_BATCH 256
/* udata is void * on most systems and intptr_t on older NetBSD. */
#define KQ_UDATA(gen) ((__typeof__(((struct kevent *)0)->udata))(uintptr_t)(gen))

static void set_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl >= 0)
		(void)fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
}

static int kqueue_init(event_loop_t *loop)
{
	loop->kfd = kqueue();
	if (loop->kfd < 0)
		return -1;
	set_cloexec(loop->kfd);
	return 0;
}

static void kqueue_fini(event_loop_t *loop)
{
	if (loop->kfd >= 0)
		close(loop->kfd);
}

/* kqueue has one filter per direction: add the newly wanted ones and
 * delete the ones no longer wanted. */
static int kqueue_set(event_loop_t *loop, int fd, struct fdent *e, int want)
{
	struct kevent ch[2];
	int n = 0;
	int have = e->kernel;

	if ((want & EVENT_READ) && !(have & EVENT_READ))
		EV_SET(&ch[n++], fd, EVFILT_READ, EV_ADD | EV_ENABLE, 0, 0,
		    KQ_UDATA(e->gen));
	if ((want & EVENT_WRITE) && !(have & EVENT_WRITE))
		EV_SET(&ch[n++], fd, EVFILT_WRITE, EV_ADD | EV_ENABLE, 0, 0,
		    KQ_UDATA(e->gen));
	if (n > 0 && kevent(loop->kfd, ch, n, NULL, 0, NULL) < 0)
		return -1;
	n = 0;
	if (!(want & EVENT_READ) && (have & EVENT_READ))
		EV_SET(&ch[n++], fd, EVFILT_READ, EV_DELETE, 0, 0, KQ_UDATA(0));
	if (!(want & EVENT_WRITE) && (have & EVENT_WRITE))
		EV_SET(&ch[n++], fd, EVFILT_WRITE, EV_DELETE, 0, 0, KQ_UDATA(0));
	/* Deleting from a descriptor already closed fails harmlessly: the
	 * kernel dropped its filters with it.  Submit one at a time so that
	 * the first failure does not skip the second. */
	for (int i = 0; i < n; i++) {
		if (kevent(loop->kfd, &ch[i], 1, NULL, 0, NULL) < 0 &&
		    errno != EBADF && errno != ENOENT)
			return -1;
	}
	return 0;
}

static int kqueue_wait(event_loop_t *loop, int timeout)
{
	struct kevent evs[KQUEUE_BATCH];
	struct timespec ts, *tsp = NULL;
	int n;

	if (timeout >= 0) {
		ts.tv_sec = timeout / 1000;
		ts.tv_nsec = (long)(timeout % 1000) * 1000000L;
		tsp = &ts;
	}
	n = kevent(loop->kfd, NULL, 0, evs, KQUEUE_BATCH, tsp);
	if (n < 0)
		return -1;
	loop->round++;
	for (int i = 0; i < n; i++) {
		int fd = (int)evs[i].ident;
		uint32_t gen = (uint32_t)(uintptr_t)evs[i].udata;
		struct fdent *e;
		int ev = 0;
		if (evs[i].flags & EV_ERROR)
			ev = EVENT_ERROR;
		else if (evs[i].filter == EVFILT_READ)
			ev = EVENT_READ | ((evs[i].flags & EV_EOF) && evs[i].fflags ?
			    EVENT_ERROR : 0);
		else if (evs[i].filter == EVFILT_WRITE)
			ev = EVENT_WRITE | ((evs[i].flags & EV_EOF) ? EVENT_ERROR : 0);
		else
			continue;
		/* One callback per descriptor and round, as with the others. */
		e = fd >= 0 && fd < loop->nfds ? &loop->fds[fd] : NULL;
		if (e != NULL && e->kq_round == loop->round &&
		    loop->ready[e->kq_slot].gen == gen) {
			loop->ready[e->kq_slot].events |= ev;
			continue;
		}
		if (e != NULL) {
			e->kq_round = loop->round;
			e->kq_slot = loop->nready;
		}
		ready_add(loop, fd, gen, ev);
	}
	return 0;
}

static const struct backend kqueue_backend = {
	"kqueue", false, kqueue_init, kqueue_fini, kqueue_set, kqueue_wait
};
#endif

/* ---- timers ---- */

static int timer_cmp(const void *a, const void *b)
{
	const event_timer_t *x = a, *y = b;

	if (x->when != y->when)
		return x->when < y->when ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void timer_set_index(void *e, size_t index)
{
	((event_timer_t *)e)->index = index;
}

void event_timer_init(event_timer_t *t, event_timer_fn fn, void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->index = HEAP_NONE;
	t->fn = fn;
	t->ctx = ctx;
}

/* Checks the heap itself, so a zero-filled or stale timer is not pending. */
bool event_timer_pending(const event_timer_t *t)
{
	return t->loop != NULL && t->index != HEAP_NONE &&
	    heap_at(t->loop->timers, t->index) == t;
}

void event_timer_cancel(event_timer_t *t)
{
	if (event_timer_pending(t))
		heap_remove(t->loop->timers, t->index);
	t->index = HEAP_NONE;
	t->loop = NULL;
}

void event_timer_start(event_loop_t *loop, event_timer_t *t, int64_t ms)
{
	bool rekey = event_timer_pending(t) && t->loop == loop;

	if (!rekey)
		event_timer_cancel(t);
	if (ms < 0)
		ms = 0;
	t->when = event_now_ms() + ms;
	t->seq = loop->timer_seq++;
	t->loop = loop;
	if (rekey)
		heap_update(loop->timers, t->index);
	else
		heap_push(loop->timers, t);
}

/* ---- loop ---- */

event_loop_t *event_loop_new(enum event_backend which)
{
	const struct backend *be = NULL;
	event_loop_t *loop;

	switch (which) {
	case EVENT_BACKEND_DEFAULT:
#if defined(HAVE_EPOLL)
		be = &epoll_backend;
#elif defined(HAVE_KQUEUE)
		be = &kqueue_backend;
#else
		be = &poll_backend;
#endif
		break;
	case EVENT_BACKEND_POLL:
		be = &poll_backend;
		break;
	case EVENT_BACKEND_EPOLL:
#ifdef HAVE_EPOLL
		be = &epoll_backend;
#endif
		break;
	case EVENT_BACKEND_KQUEUE:
#ifdef HAVE_KQUEUE
		be = &kqueue_backend;
#endif
		break;
	}
	if (be == NULL) {
		errno = ENOSYS;
		return NULL;
	}
	loop = xcalloc(1, sizeof(*loop));
	loop->be = be;
	loop->kfd = -1;
	loop->next_gen = 1;
	if (be->init(loop) < 0) {
		int saved = errno;
		free(loop);
		errno = saved;
		return NULL;
	}
	loop->timers = heap_new(timer_cmp, timer_set_index);
	return loop;
}

void event_loop_free(event_loop_t *loop)
{
	event_timer_t *t;

	if (loop == NULL)
		return;
	while ((t = heap_pop(loop->timers)) != NULL)
		t->loop = NULL;
	heap_free(loop->timers);
	loop->be->fini(loop);
	free(loop->fds);
	free(loop->ready);
	free(loop);
}

const char *event_loop_backend(const event_loop_t *loop)
{
	return loop->be->name;
}

bool event_loop_exclusive(const event_loop_t *loop)
{
	return loop->be->exclusive;
}

static struct fdent *lookup(const event_loop_t *loop, int fd)
{
	if (fd < 0 || fd >= loop->nfds || loop->fds[fd].fn == NULL)
		return NULL;
	return &loop->fds[fd];
}

int event_interest(const event_loop_t *loop, int fd)
{
	const struct fdent *e = lookup(loop, fd);

	return e ? e->events : -1;
}

int event_add(event_loop_t *loop, int fd, int events, event_fd_fn fn, void *ctx)
{
	struct fdent *e;

	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	if ((events & ~(EVENT_READ | EVENT_WRITE | EVENT_EXCLUSIVE)) ||
	    fn == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (lookup(loop, fd) != NULL) {
		errno = EEXIST;
		return -1;
	}
	if (fd >= loop->nfds) {
		int n = loop->nfds ? loop->nfds : 64;
		while (n <= fd)
			n = n > INT_MAX / 2 ? INT_MAX : 2 * n;
		loop->fds = xreallocarray(loop->fds, (size_t)n, sizeof(*loop->fds));
		memset(loop->fds + loop->nfds, 0,
		    (size_t)(n - loop->nfds) * sizeof(*loop->fds));
		loop->nfds = n;
	}
	e = &loop->fds[fd];
	e->gen = loop->next_gen++;
	if (loop->next_gen == 0)	/* 0 never names a registration */
		loop->next_gen = 1;
	e->kernel = 0;
	e->exclusive = (events & EVENT_EXCLUSIVE) && loop->be->exclusive;
	events &= ~EVENT_EXCLUSIVE;
	if (loop->be->set(loop, fd, e, events) < 0) {
		int saved = errno;
		memset(e, 0, sizeof(*e));
		errno = saved;
		return -1;
	}
	e->fn = fn;
	e->ctx = ctx;
	e->events = events;
	e->kernel = events;
	loop->nregistered++;
	loop->pfd_dirty = true;
	return 0;
}

int event_modify(event_loop_t *loop, int fd, int events)
{
	struct fdent *e = lookup(loop, fd);

	if (e == NULL) {
		errno = ENOENT;
		return -1;
	}
	if (events & ~(EVENT_READ | EVENT_WRITE)) {
		errno = EINVAL;
		return -1;
	}
	if (events != e->kernel && loop->be->set(loop, fd, e, events) < 0)
		return -1;
	e->events = events;
	e->kernel = events;
	loop->pfd_dirty = true;
	return 0;
}

int event_remove(event_loop_t *loop, int fd)
{
	struct fdent *e = lookup(loop, fd);
	int r;

	if (e == NULL) {
		errno = ENOENT;
		return -1;
	}
	/* Forget the registration even if the kernel objects: the caller
	 * is done with the descriptor either way. */
	r = loop->be->set(loop, fd, e, 0);
	memset(e, 0, sizeof(*e));
	loop->nregistered--;
	loop->pfd_dirty = true;
	return r;
}

static int dispatch_fds(event_loop_t *loop)
{
	int count = 0;

	for (int i = 0; i < loop->nready; i++) {
		struct ready *r = &loop->ready[i];
		struct fdent *e = lookup(loop, r->fd);
		int ev;

		/* Removed, or replaced by a new registration, since the wait. */
		if (e == NULL || e->gen != r->gen || e->events == 0)
			continue;
		if (r->events & EVENT_ERROR)
			ev = e->events | EVENT_ERROR;
		else
			ev = r->events & e->events;
		if (ev == 0)
			continue;
		/* e is not touched after the call: fn may grow the table. */
		e->fn(r->fd, ev, e->ctx);
		count++;
	}
	loop->nready = 0;
	return count;
}

static int run_timers(event_loop_t *loop)
{
	int64_t now = event_now_ms();
	uint64_t limit = loop->timer_seq;
	event_timer_t *t;
	int count = 0;

	/* Timers started from here on carry seq >= limit and wait for the
	 * next round; due older timers sort before them (earlier or equal
	 * when, lower seq), so stopping at the first such timer is right. */
	while ((t = heap_peek(loop->timers)) != NULL && t->when <= now &&
	    t->seq < limit) {
		heap_pop(loop->timers);
		t->loop = NULL;
		t->fn(t->ctx);
		count++;
	}
	return count;
}

int event_run_once(event_loop_t *loop, int max_wait_ms)
{
	event_timer_t *t;
	int timeout = max_wait_ms < 0 ? -1 : max_wait_ms;
	int count;

	if (loop->dispatching) {
		errno = EBUSY;
		return -1;
	}
	t = heap_peek(loop->timers);
	if (t == NULL && loop->nregistered == 0 && timeout < 0)
		return 0;
	if (t != NULL) {
		int64_t delta = t->when - event_now_ms();
		if (delta < 0)
			delta = 0;
		if (timeout < 0 || delta < timeout)
			timeout = delta > INT_MAX ? INT_MAX : (int)delta;
	}
	loop->nready = 0;
	if (loop->be->wait(loop, timeout) < 0) {
		if (errno == EINTR)
			return 0;
		return -1;
	}
	loop->dispatching = true;
	count = dispatch_fds(loop);
	count += run_timers(loop);
	loop->dispatching = false;
	return count;
}

int event_run(event_loop_t *loop)
{
	/* The flag is cleared on the way out, not on the way in, so that a
	 * stop requested (by a signal) just before the call still counts. */
	while (!loop->stop) {
		if (heap_size(loop->timers) == 0 && loop->nregistered == 0)
			return 0;
		if (event_run_once(loop, -1) < 0)
			return -1;
	}
	loop->stop = 0;
	return 0;
}

void event_stop(event_loop_t *loop)
{
	loop->stop = 1;
}
