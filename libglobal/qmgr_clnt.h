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
 *     and unlinks (qc_msg_apply), which cannot half-happen and lose no
 *     race against qmgr's own renames.
 *
 * This file has the names both sides use, the client, and the one
 * implementation of the message actions. */
#ifndef PETREL_QMGR_CONTROL_H
#define PETREL_QMGR_CONTROL_H
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
#define QC_REQ_STATUS		"status"	/* scheduler view (postq -S) */
#define QC_REQ_DSC		"dsc"		/* status cache (postq -D) */
#define QC_REQ_DSC_CLEAR	"dsc_clear"	/* postsuper -x */
#define QC_REQ_SUSPEND		"suspend"	/* postsuper -P */
#define QC_REQ_RESUME		"resume"	/* postsuper -U */
#define QC_REQ_MESSAGE		"message"	/* postsuper -d/-h/-H/-r */

/* Reply "status". */
#define QC_OK			0
#define QC_NOTHING		1	/* nothing to do (e.g. not suspended) */
#define QC_FAIL			(-1)	/* "reason" says why */

/* Per-message results of a "message" request. */
#define QC_MSG_DONE		0	/* applied (and logged by qmgr) */
#define QC_MSG_NOT_ACTIVE	1	/* not in the active queue: the
					 * tool acts on it itself */
#define QC_MSG_GONE		2	/* its pass ended and it left the
					 * queue (delivered or returned)
					 * before the action */
#define QC_MSG_PENDING		3	/* deliveries still in flight when
					 * the wait ended: qmgr applies it
					 * (and logs it) when they report */
#define QC_MSG_ERROR		(-1)	/* "reason" says why */

/* Most queue IDs in one "message" request. */
#define QC_MAX_IDS		10000
/* Default and largest wait of a "message" request, seconds. */
#define QC_WAIT_DEFAULT		60
#define QC_WAIT_MAX		3600

typedef enum qc_action {
	QC_ACT_DELETE = 0,	/* postsuper -d */
	QC_ACT_HOLD,		/* postsuper -h */
	QC_ACT_RELEASE,		/* postsuper -H */
	QC_ACT_REQUEUE,		/* postsuper -r */
} qc_action_t;

/* "delete", "hold", "release", "requeue". */
const char *qc_action_name(qc_action_t a);
bool qc_action_parse(const char *name, qc_action_t *a);
/* The log text: "removed", "placed on hold", "released from hold",
 * "requeued" (logged as "QUEUEID: TEXT"). */
const char *qc_action_done_text(qc_action_t a);
/* The deferral reason of the recipients of an active message whose
 * pass is stopped for the action. */
const char *qc_action_stop_reason(qc_action_t a);

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
int qc_msg_apply(const queue_layout_t *ql, const char *queue, const char *id,
    qc_action_t act, str_t *err);

/* ---- Client ----------------------------------------------------------- */

typedef struct qc_client qc_client_t;

/* Connects to queue_dir/QMGR_CONTROL_PATH.  NULL with errno and err:
 * ENOENT or ECONNREFUSED mean that no qmgr is running (or one without a
 * control channel); EACCES/EPERM that the caller may not use it. */
qc_client_t *qc_connect(const char *queue_dir, int timeout_ms, str_t *err);
/* Sends one encoded request and waits for its reply (timeout_ms for the
 * whole exchange; -1 none).  Returns the reply (attr_msg_free), or NULL
 * with err when the exchange failed (the connection is then useless).
 * A reply with status QC_FAIL is returned like any other. */
attr_msg_t *qc_call(qc_client_t *c, const str_t *req, int timeout_ms,
    str_t *err);
void qc_close(qc_client_t *c);

/* Reply helpers: the status (QC_FAIL when absent) and the reason ("" when
 * absent). */
int qc_reply_status(const attr_msg_t *m);
const char *qc_reply_reason(const attr_msg_t *m);

/* One-shot helpers for the simple requests: connect, ask, close.
 * Return the reply status (QC_OK, QC_NOTHING) or QC_FAIL with err;
 * errno ENOENT/ECONNREFUSED when qmgr is not running.  count (may be
 * NULL) gets the reply's "count" when there is one. */
int qc_request_simple(const char *queue_dir, const char *request,
    const char *nexthop, const char *reason, long *count, int timeout_ms,
    str_t *err);

#endif
