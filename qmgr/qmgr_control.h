/* qmgr's side of the control channel (libglobal/qmgr_clnt.h,
 * doc/protocol-qmgr-control.md): a listener on private/qmgr-control in
 * qmgr's event loop, serving the scheduler view, the destination status
 * cache, its clearing, destination suspension, and the delete / hold /
 * requeue of messages in the active queue.
 *
 * It works on the scheduler core (sched.h) and the queue directory only,
 * so it runs the same under the qmgr daemon and in unit tests.  The
 * daemon starts it with one call after its core exists:
 *
 *	static const qmgr_control_ops_t ops = { qmgr_now, qmgr_trigger,
 *	    qmgr_kick };
 *	qmgr_control_start(loop, Q.s, &Q.ql, &ops);
 *
 * Requests are handled between two rounds of the event loop, never from
 * inside the core's callbacks; a request that changes the core (a stop,
 * a suspension, a cleared DSC entry) calls ops->kick so that the daemon
 * runs its pump (finished messages, new selections). */
#ifndef PETREL_QMGR_CONTROL_SRV_H
#define PETREL_QMGR_CONTROL_SRV_H
#include <stdbool.h>
#include <stddef.h>
#include "event.h"
#include "qmgr_clnt.h"
#include "queue_path.h"
#include "sched.h"
#include "str.h"

typedef struct qmgr_control_ops {
	/* The core's clock (seconds, never going back; the daemon's is
	 * the wall clock, so times in replies are wall-clock times). */
	double (*now)(void);
	/* Trigger bytes handled like those from the qmgr endpoint
	 * (TRIGGER_SCAN_INCOMING after a requeue); may be NULL. */
	void (*trigger)(const char *buf, size_t len);
	/* Run the daemon's pump soon; may be NULL. */
	void (*kick)(void);
} qmgr_control_ops_t;

typedef struct qmgr_control qmgr_control_t;

typedef struct qmgr_control_conf {
	const char *path;		/* NULL: QMGR_CONTROL_PATH */
	const char *state_path;		/* NULL: QMGR_CONTROL_STATE; "": none */
	int max_clients;		/* 0: 16 */
	int idle_timeout_ms;		/* 0: 60000 */
	int poll_ms;			/* 0: 50 (pending message actions) */
} qmgr_control_conf_t;

/* Binds the socket (mode 0600; relative paths are relative to the
 * working directory, queue_directory under master), loads the suspended
 * destinations from the state file into the core, registers with loop.
 * NULL with err on failure (the daemon logs it and runs without). */
qmgr_control_t *qmgr_control_new(event_loop_t *loop, sched_t *s,
    const queue_layout_t *ql, const qmgr_control_ops_t *ops,
    const qmgr_control_conf_t *conf, str_t *err);
/* The daemon's one call: defaults, errors logged as warnings. */
qmgr_control_t *qmgr_control_start(event_loop_t *loop, sched_t *s,
    const queue_layout_t *ql, const qmgr_control_ops_t *ops);
/* Closes the listener and every connection (pending message actions
 * are dropped: the messages stay where they are). */
void qmgr_control_free(qmgr_control_t *c);

/* Serves an already connected descriptor (tests: a socketpair).  The
 * peer check is skipped.  Returns 0, or -1 when too many clients. */
int qmgr_control_attach(qmgr_control_t *c, int fd);

/* Message actions still waiting for deliveries in flight. */
size_t qmgr_control_pending(const qmgr_control_t *c);

#endif
