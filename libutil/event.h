/* Event loop: descriptor readiness and one-shot timers.
 *
 * Backends: epoll (Linux, HAVE_EPOLL), kqueue (BSD, HAVE_KQUEUE) and
 * poll() everywhere; EVENT_BACKEND_DEFAULT picks the first of those that
 * the build has.  All are level-triggered: a callback that leaves data
 * unread is called again on the next round.
 *
 * Descriptors.  event_add() registers interest (EVENT_READ, EVENT_WRITE or
 * both) with a callback fn(fd, events, ctx); events says what is ready,
 * plus EVENT_ERROR on an error or hang-up, in which case every event the
 * descriptor was registered for is reported as well so its reader or
 * writer finds out (the read returns 0 or the write fails).  An interest
 * of 0 keeps the registration but reports nothing.  Remove a descriptor
 * before closing it.
 *
 * Timers.  An event_timer_t lives in the caller's object (no allocation;
 * starting, re-starting and cancelling are O(log n)).  Timers run once,
 * on the monotonic clock in milliseconds, earliest first and in the order
 * started when due at the same time.  A timer (re)started by a callback is
 * never run in the same round, so a timer that restarts itself with 0 ms
 * cannot starve the loop.  Cancelling a timer that is not pending,
 * including a zero-filled one, is a no-op.
 *
 * Callbacks may add, modify and remove any descriptor (their own too) and
 * start or cancel any timer: an event already collected for a descriptor
 * that is then removed, or removed and registered again (same number, new
 * registration), is dropped, and one for an interest turned off is not
 * delivered.  A callback must not free the loop or call event_run*() on it.
 *
 * Signals: event_stop() is async-signal-safe; a signal interrupting the
 * wait makes event_run_once() return 0 so the caller can look at flags. */
#ifndef PETREL_EVENT_H
#define PETREL_EVENT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVENT_READ	0x01
#define EVENT_WRITE	0x02
#define EVENT_ERROR	0x04	/* reported only */
/* At event_add() only: of the processes waiting on this descriptor (a
 * listening socket shared by a pool of daemons), wake one, not all
 * (epoll: EPOLLEXCLUSIVE).  Backends that cannot do it ignore the flag;
 * event_loop_exclusive() tells which. */
#define EVENT_EXCLUSIVE	0x08

enum event_backend {
	EVENT_BACKEND_DEFAULT,
	EVENT_BACKEND_POLL,
	EVENT_BACKEND_EPOLL,
	EVENT_BACKEND_KQUEUE,
};

typedef struct event_loop event_loop_t;
typedef void (*event_fd_fn)(int fd, int events, void *ctx);
typedef void (*event_timer_fn)(void *ctx);

/* Fields are private; initialise with event_timer_init() or
 * EVENT_TIMER_INIT before first use. */
typedef struct event_timer {
	int64_t when;
	uint64_t seq;
	size_t index;
	event_loop_t *loop;
	event_timer_fn fn;
	void *ctx;
} event_timer_t;

#define EVENT_TIMER_INIT(fn, ctx) { 0, 0, (size_t)-1, NULL, (fn), (ctx) }

/* NULL with errno ENOSYS if the backend is not built in, or the errno of
 * the failed system call. */
event_loop_t *event_loop_new(enum event_backend backend);
/* Pending timers are disarmed (not run); descriptors are not closed. */
void event_loop_free(event_loop_t *loop);
/* "epoll", "kqueue" or "poll". */
const char *event_loop_backend(const event_loop_t *loop);
/* Does the backend honour EVENT_EXCLUSIVE? */
bool event_loop_exclusive(const event_loop_t *loop);

/* 0, or -1 with errno: EBADF (fd < 0), EINVAL (bad events or fn NULL),
 * EEXIST (already registered), ENOENT (not registered), or the kernel's
 * refusal (e.g. EPERM from epoll for a regular file). */
int event_add(event_loop_t *loop, int fd, int events, event_fd_fn fn, void *ctx);
int event_modify(event_loop_t *loop, int fd, int events);
int event_remove(event_loop_t *loop, int fd);
/* The registered interest, or -1 if fd is not registered. */
int event_interest(const event_loop_t *loop, int fd);

void event_timer_init(event_timer_t *t, event_timer_fn fn, void *ctx);
/* Arms t to run after ms milliseconds (negative counts as 0), replacing
 * any earlier arming, on this or another loop. */
void event_timer_start(event_loop_t *loop, event_timer_t *t, int64_t ms);
void event_timer_cancel(event_timer_t *t);
bool event_timer_pending(const event_timer_t *t);

/* Waits at most max_wait_ms (negative: until something happens; 0: do not
 * block) for events and due timers, and runs their callbacks.  Returns the
 * number of callbacks run, or -1 with errno if the wait failed (EBUSY if
 * called from a callback).  With nothing registered, no timer pending and
 * an unlimited wait it returns 0 at once rather than sleep forever. */
int event_run_once(event_loop_t *loop, int max_wait_ms);
/* Runs rounds until event_stop() (returns 0; the stop request is then
 * used up, and one made before the call counts), until nothing is
 * registered and no timer is pending (returns 0), or until a wait fails
 * (returns -1).  The round in which stop was requested completes. */
int event_run(event_loop_t *loop);
void event_stop(event_loop_t *loop);

/* Monotonic clock in milliseconds. */
int64_t event_now_ms(void);

#endif
