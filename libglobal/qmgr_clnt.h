/* The qmgr control channel: how the administration tools (postq -S/-D,
 * postsuper -x/-P/-U, and postsuper -d/-h/-r on the active queue) talk to
 * the running queue manager.  doc/protocol-qmgr-control.md is the
 * specification; in short:
 *
 *   - qmgr listens on the UNIX stream socket queue_directory/
 *     private/qmgr-control (mode 0600 in the 0700 private directory) and
 *     serves only root and its own user (peer credentials checked);
 *   - a request is one attribute-protocol message (attr.h) with a
 *     "request" name; each gets one reply with a "status";
 *   - messages in the active queue belong to qmgr: the tools ask qmgr to
 *     delete, hold or requeue them (qmgr stops the message's pass, lets
 *     deliveries in flight finish, then acts and logs); messages in every
 *     other queue are handled by the tools directly with atomic renames
 *     and unlinks (qmgr_clnt_msg_apply), which cannot half-happen and
 *     lose no race against qmgr's own renames.
 *
 * This file has the names both sides use, the client, and the one
 * implementation of the message actions.  qmgr/qmgr_control.h is the
 * server side. */
#ifndef PETREL_QMGR_CLNT_H
#define PETREL_QMGR_CLNT_H
#include <stdbool.h>
#include <stddef.h>
#include "attr.h"
#include "queue_id.h"
#include "queue_path.h"
#include "str.h"

/* Relative to queue_directory (qmgr may run chrooted there). */
#define QMGR_CONTROL_PATH	"private/qmgr-control"
/* Destinations suspended with postsuper -P survive a qmgr restart. */
#define QMGR_CONTROL_STATE	"saved/qmgr-suspended"

/* Requests (attribute "request"). */
#define QMGR_CLNT_REQ_STATUS	"status"	/* scheduler view (postq -S) */
#define QMGR_CLNT_REQ_DSC	"dsc"		/* status cache (postq -D) */
#define QMGR_CLNT_REQ_DSC_CLEAR	"dsc_clear"	/* postsuper -x */
#define QMGR_CLNT_REQ_SUSPEND	"suspend"	/* postsuper -P */
#define QMGR_CLNT_REQ_RESUME	"resume"	/* postsuper -U */
#define QMGR_CLNT_REQ_MESSAGE	"message"	/* postsuper -d/-h/-H/-r */

/* Reply "status". */
#define QMGR_CLNT_OK		0
#define QMGR_CLNT_NOTHING	1	/* nothing to do (e.g. not suspended) */
#define QMGR_CLNT_FAIL		(-1)	/* "reason" says why */

/* Per-message results of a "message" request. */
#define QMGR_CLNT_MSG_DONE	0	/* applied (and logged by qmgr) */
#define QMGR_CLNT_MSG_NOT_ACTIVE 1	/* not in the active queue: the
					 * tool acts on it itself */
#define QMGR_CLNT_MSG_GONE	2	/* its pass ended and it left the
					 * queue (delivered or returned)
					 * before the action */
#define QMGR_CLNT_MSG_PENDING	3	/* deliveries still in flight when
					 * the wait ended: qmgr applies it
					 * (and logs it) when they report */
#define QMGR_CLNT_MSG_ERROR	(-1)	/* "reason" says why */

/* Most queue IDs in one "message" request. */
#define QMGR_CLNT_MAX_IDS	10000
/* Default and largest wait of a "message" request, seconds. */
#define QMGR_CLNT_WAIT_DEFAULT	60
#define QMGR_CLNT_WAIT_MAX	3600

typedef enum qmgr_clnt_action {
	QMGR_CLNT_ACT_DELETE = 0,	/* postsuper -d */
	QMGR_CLNT_ACT_HOLD,		/* postsuper -h */
	QMGR_CLNT_ACT_RELEASE,		/* postsuper -H */
	QMGR_CLNT_ACT_REQUEUE,		/* postsuper -r */
} qmgr_clnt_action_t;

/* "delete", "hold", "release", "requeue". */
const char *qmgr_clnt_action_name(qmgr_clnt_action_t a);
bool qmgr_clnt_action_parse(const char *name, qmgr_clnt_action_t *a);
/* The log text: "removed", "placed on hold", "released from hold",
 * "requeued" (logged as "QUEUEID: TEXT"). */
const char *qmgr_clnt_action_done_text(qmgr_clnt_action_t a);
/* The deferral reason of the recipients of an active message whose
 * pass is stopped for the action. */
const char *qmgr_clnt_action_stop_reason(qmgr_clnt_action_t a);

/* Applies an action to message id in queue (never "active": that is
 * qmgr's; a caller that owns active/ because no qmgr runs may pass it).
 *   delete   unlinks the file, then its defer, bounce and trace logs;
 *   hold     moves it to hold/;
 *   release  moves it from hold/ to deferred/ with file time now (due
 *            at the next deferred scan);
 *   requeue  moves it to incoming/ with file time now and removes its
 *            defer log: qmgr takes it again and resolves every recipient
 *            not yet done afresh.
 * Returns 0 when done, 1 when there was nothing to do (hold of a held
 * message, release of one not on hold, requeue of one in maildrop or
 * incoming: err says so), -1 with errno on failure: ENOENT when the file
 * is not (any more) in queue (it moved: look again), else err says what. */
int qmgr_clnt_msg_apply(const queue_layout_t *ql, const char *queue,
    const char *id, qmgr_clnt_action_t act, str_t *err);

/* ---- Client ----------------------------------------------------------- */

typedef struct qmgr_clnt qmgr_clnt_t;

/* Connects to queue_dir/QMGR_CONTROL_PATH.  NULL with errno and err:
 * ENOENT or ECONNREFUSED mean that no qmgr is running (or one without a
 * control channel); EACCES/EPERM that the caller may not use it. */
qmgr_clnt_t *qmgr_clnt_connect(const char *queue_dir, int timeout_ms,
    str_t *err);
/* Sends one encoded request and waits for its reply (timeout_ms for the
 * whole exchange; -1 none).  Returns the reply (attr_msg_free), or NULL
 * with err when the exchange failed (the connection is then useless).
 * A reply with status QMGR_CLNT_FAIL is returned like any other. */
attr_msg_t *qmgr_clnt_call(qmgr_clnt_t *c, const str_t *req, int timeout_ms,
    str_t *err);
void qmgr_clnt_close(qmgr_clnt_t *c);

/* Reply helpers: the status (QMGR_CLNT_FAIL when absent) and the reason
 * ("" when absent). */
int qmgr_clnt_reply_status(const attr_msg_t *m);
const char *qmgr_clnt_reply_reason(const attr_msg_t *m);

/* One-shot helpers for the simple requests: connect, ask, close.
 * Return the reply status (QMGR_CLNT_OK, QMGR_CLNT_NOTHING) or
 * QMGR_CLNT_FAIL with err;
 * errno ENOENT/ECONNREFUSED when qmgr is not running.  count (may be
 * NULL) gets the reply's "count" when there is one. */
int qmgr_clnt_request_simple(const char *queue_dir, const char *request,
    const char *nexthop, const char *reason, long *count, int timeout_ms,
    str_t *err);

#endif
