/* Internals of qmgr's side of the control channel, shared by its four
 * files (the public interface is qmgr_control.h):
 *
 *   qmgr_control.c  the listener, the connections, reading requests and
 *                   dispatching them, writing replies; set-up;
 *   qmgr_status.c   the "status" and "dsc" replies (postq -S, -D): read
 *                   only views of the scheduler core;
 *   qmgr_pending.c  "message" requests (postsuper -d/-h/-H/-r on the
 *                   active queue): stopping a message, waiting for its
 *                   deliveries in flight, carrying out the action;
 *   qmgr_suspend.c  destinations suspended by the administrator
 *                   (postsuper -P/-U), kept across restarts, and the
 *                   clearing of status cache entries (postsuper -x).
 *
 * A request handler appends exactly one reply to the connection's output
 * (attr_put_end() included), except qmgr_pending_request(), which may
 * leave the connection waiting and reply later. */
#ifndef PETREL_QMGR_CONTROL_INT_H
#define PETREL_QMGR_CONTROL_INT_H
#include <stdbool.h>
#include <stddef.h>
#include "attr.h"
#include "event.h"
#include "htable.h"
#include "list.h"
#include "qmgr_control.h"
#include "queue_id.h"

typedef struct qmgr_pending_result {
	char id[QUEUE_ID_SIZE];
	int status;
	const char *queue;		/* static string, or NULL */
	char *reason;
} qmgr_pending_result_t;

struct qmgr_control_conn;

/* A "message" request waiting for actions on active messages. */
typedef struct qmgr_pending_req {
	struct qmgr_control_conn *conn;
	qmgr_clnt_action_t act;
	size_t n, left;
	qmgr_pending_result_t *res;
	event_timer_t deadline;
} qmgr_pending_req_t;

typedef struct qmgr_pending {
	char id[QUEUE_ID_SIZE];
	qmgr_clnt_action_t act;
	qmgr_pending_req_t *req;	/* NULL once the client stopped
					 * waiting */
	size_t idx;
	list_node_t node;
} qmgr_pending_t;

typedef struct qmgr_control_conn {
	struct qmgr_control *c;
	int fd;
	attr_reader_t *rd;
	str_t in;			/* bytes not fed to the reader yet */
	str_t out;
	size_t outpos;
	qmgr_pending_req_t *waiting;
	bool eof;
	event_timer_t idle;
	list_node_t node;
} qmgr_control_conn_t;

struct qmgr_control {
	event_loop_t *loop;
	sched_t *s;
	const queue_layout_t *ql;
	qmgr_control_ops_t ops;
	qmgr_control_conf_t conf;
	char *state_path;
	int lfd;
	list_t conns;
	int nconns;
	list_t pending;
	size_t npending;
	event_timer_t poll;
	htable_t *reasons;		/* suspended nexthop -> admin reason */
};

/* qmgr_control.c: helpers for the request handlers. */
void qmgr_control_reply_status(str_t *out, int status, const char *reason);
double qmgr_control_now(const qmgr_control_t *c);
/* Asks the daemon to run its pump (ops->kick), when it gave one. */
void qmgr_control_kick(const qmgr_control_t *c);
/* Whether message id is in queue right now. */
bool qmgr_control_in_queue(const qmgr_control_t *c, const char *queue,
    const char *id);
/* Handles the buffered requests of a connection that stopped waiting. */
void qmgr_control_conn_process(qmgr_control_conn_t *k);

/* qmgr_status.c: request "status" (m gives max_jobs, max_dsc) and "dsc". */
void qmgr_status_reply(qmgr_control_t *c, const attr_msg_t *m, str_t *out);
void qmgr_status_dsc(qmgr_control_t *c, str_t *out);

/* qmgr_pending.c: request "message".  It replies at once when no message
 * is active; otherwise k waits (k->waiting) for the reply, which comes
 * from qmgr_pending_poll() or the request's deadline. */
void qmgr_pending_request(qmgr_control_conn_t *k, const attr_msg_t *m);
/* The timer callback (ctx: the qmgr_control_t) that checks the pending
 * actions every conf.poll_ms while there are any. */
void qmgr_pending_poll(void *ctx);
/* k closes while it waits: its actions go on without a listener. */
void qmgr_pending_abandon(qmgr_control_conn_t *k);
/* Drops every pending action (the messages stay where they are). */
void qmgr_pending_free_all(qmgr_control_t *c);

/* qmgr_suspend.c: requests "suspend"/"resume" (suspend false) and
 * "dsc_clear"; qmgr_suspend_load() puts the destinations saved in
 * c->state_path back into the core at start. */
void qmgr_suspend_request(qmgr_control_t *c, const attr_msg_t *m, str_t *out,
    bool suspend);
void qmgr_suspend_dsc_clear(qmgr_control_t *c, const attr_msg_t *m,
    str_t *out);
void qmgr_suspend_load(qmgr_control_t *c);

#endif
