/* libpostq: postsuper's message actions (-d, -h, -H, -r) on single IDs,
 * lists and ALL, safe while qmgr runs.
 *
 * The rule (doc/protocol-qmgr-control.md "Message actions"): a message in
 * the active queue belongs to qmgr, so it is asked to do it (it stops
 * the message's pass, lets deliveries in flight finish, then acts and
 * logs); a message anywhere else is handled here with one atomic rename
 * or unlink (qmgr_clnt_msg_apply), which fails with ENOENT when qmgr moved the
 * file first: then it is looked up again.  With no qmgr running, the
 * active queue is nobody's and is handled here too. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "mem.h"
#include "queue_walk.h"
#include "super.h"

/* Lookups of one ID that lost a race against qmgr before giving up. */
#define ADMIN_TRIES	5

struct super_admin {
	const queue_layout_t *ql;
	qmgr_clnt_action_t act;
	const char *const *queues;
	int wait;
	super_admin_stats_t st;
	/* qmgr: not asked yet, running (connected), or not running. */
	enum { QM_UNKNOWN, QM_UP, QM_DOWN, QM_BROKEN } qm;
	qmgr_clnt_t *qc;
	char (*batch)[QUEUE_ID_SIZE];	/* active IDs for qmgr */
	size_t nbatch;
	int tries;			/* of the ID being handled */
};

static const char *const def_delete[] = { QUEUE_HOLD, QUEUE_INCOMING,
    QUEUE_ACTIVE, QUEUE_DEFERRED, NULL };
static const char *const def_hold[] = { QUEUE_INCOMING, QUEUE_ACTIVE,
    QUEUE_DEFERRED, NULL };
static const char *const def_release[] = { QUEUE_HOLD, NULL };

const char *const *super_admin_default_queues(qmgr_clnt_action_t act)
{
	switch (act) {
	case QMGR_CLNT_ACT_HOLD:
		return def_hold;
	case QMGR_CLNT_ACT_RELEASE:
		return def_release;
	case QMGR_CLNT_ACT_DELETE:
	case QMGR_CLNT_ACT_REQUEUE:
	default:
		return def_delete;
	}
}

super_admin_t *super_admin_new(const queue_layout_t *ql, qmgr_clnt_action_t act,
    const char *const *queues, int wait)
{
	super_admin_t *a = xcalloc(1, sizeof(*a));

	a->ql = ql;
	a->act = act;
	a->queues = queues && *queues ? queues :
	    super_admin_default_queues(act);
	a->wait = wait;
	a->batch = xcalloc(QMGR_CLNT_MAX_IDS, sizeof(*a->batch));
	return a;
}

/* Is qmgr there to ask?  Connects once. */
static int qmgr_state(super_admin_t *a)
{
	str_t err = STR_INIT;

	if (a->qm != QM_UNKNOWN)
		return a->qm;
	a->qc = qmgr_clnt_connect(a->ql->dir, 10000, &err);
	if (a->qc != NULL) {
		a->qm = QM_UP;
	} else if (errno == ENOENT || errno == ECONNREFUSED) {
		a->qm = QM_DOWN;
	} else {
		log_error("%s: messages in the active queue are left alone",
		    str_cstr(&err));
		a->qm = QM_BROKEN;
	}
	str_release(&err);
	return a->qm;
}

static void done(super_admin_t *a, const char *id)
{
	super_log_action("%s: %s", id, qmgr_clnt_action_done_text(a->act));
	a->st.done++;
}

static void flush_batch(super_admin_t *a);

/* One ID: find it in the selected queues and act, or queue it for qmgr. */
static void one(super_admin_t *a, const char *id)
{
	str_t path = STR_INIT, err = STR_INIT;

	for (int tries = 0; tries < ADMIN_TRIES; tries++) {
		const char *q = NULL;
		int rc;

		for (int i = 0; a->queues[i] != NULL; i++)
			if (queue_find(a->ql, a->queues[i], id, &path) == 0) {
				q = a->queues[i];
				break;
			}
		if (q == NULL) {
			if (tries == 0) {
				log_warning("%s: no such message in the selected "
				    "queues", id);
				a->st.missing++;
			} else {
				/* It was there a moment ago: qmgr finished it. */
				log_warning("%s: the message left the queue before "
				    "it could be %s", id,
				    qmgr_clnt_action_done_text(a->act));
				a->st.gone++;
			}
			goto out;
		}
		if (strcmp(q, QUEUE_ACTIVE) == 0) {
			int qm = qmgr_state(a);
			if (qm == QM_BROKEN) {
				a->st.errors++;
				goto out;
			}
			if (qm == QM_UP) {
				bcopy_str(a->batch[a->nbatch++], QUEUE_ID_SIZE, id);
				if (a->nbatch == QMGR_CLNT_MAX_IDS)
					flush_batch(a);
				goto out;
			}
			/* No qmgr: active/ is nobody's. */
		}
		str_reset(&err);
		rc = qmgr_clnt_msg_apply(a->ql, q, id, a->act, &err);
		if (rc == 0) {
			done(a, id);
			if (a->act == QMGR_CLNT_ACT_RELEASE)
				a->st.released_deferred = true;
			if (a->act == QMGR_CLNT_ACT_REQUEUE)
				a->st.requeued_incoming = true;
			goto out;
		}
		if (rc > 0) {
			if (log_verbose)
				log_info("%s", str_cstr(&err));
			a->st.nothing++;
			goto out;
		}
		if (errno != ENOENT) {
			log_error("%s", str_cstr(&err));
			a->st.errors++;
			goto out;
		}
		/* Moved meanwhile (qmgr took it): look again. */
	}
	log_error("%s: the message keeps moving; try again", id);
	a->st.errors++;
out:
	str_release(&path);
	str_release(&err);
}

void super_admin_id(super_admin_t *a, const char *id)
{
	if (!queue_id_valid(id)) {
		log_warning("%s: not a valid queue ID", id);
		a->st.missing++;
		return;
	}
	one(a, id);
}

int super_admin_all(super_admin_t *a, str_t *err)
{
	for (int i = 0; a->queues[i] != NULL; i++) {
		queue_walk_files_t f = QUEUE_WALK_FILES_INIT;
		if (queue_walk_collect(a->ql, a->queues[i], &f, err) < 0) {
			queue_walk_files_free(&f);
			return -1;
		}
		for (size_t k = 0; k < f.n; k++)
			one(a, f.v[k].id);
		queue_walk_files_free(&f);
	}
	return 0;
}

/* Asks qmgr to act on the active IDs collected so far. */
static void flush_batch(super_admin_t *a)
{
	str_t req = STR_INIT, err = STR_INIT;
	attr_msg_t *rep;
	const attr_list_t *l;
	size_t n = a->nbatch;
	char (*ids)[QUEUE_ID_SIZE];

	if (n == 0)
		return;
	/* Handled below may add to the batch again (a message that left
	 * active meanwhile and came back): work on a copy. */
	ids = xmemdup(a->batch, n * sizeof(*ids));
	a->nbatch = 0;
	attr_put_str(&req, "request", QMGR_CLNT_REQ_MESSAGE);
	attr_put_str(&req, "action", qmgr_clnt_action_name(a->act));
	attr_put_int(&req, "wait", a->wait);
	attr_put_list(&req, "queue_id", n);
	for (size_t i = 0; i < n; i++)
		attr_print(&req, ATTR_STR("id", ids[i]), ATTR_END);
	attr_put_end(&req);
	rep = qmgr_clnt_call(a->qc, &req, (a->wait + 30) * 1000, &err);
	if (rep == NULL || qmgr_clnt_reply_status(rep) != QMGR_CLNT_OK
	    || !attr_get_list(rep, "result", &l) || attr_list_count(l) != n) {
		log_error("asking qmgr to %s %zu message%s in the active queue: "
		    "%s", qmgr_clnt_action_name(a->act), n, n == 1 ? "" : "s",
		    rep ? qmgr_clnt_reply_reason(rep) : str_cstr(&err));
		a->st.errors += n;
		if (rep == NULL) {
			qmgr_clnt_close(a->qc);
			a->qc = NULL;
			a->qm = QM_BROKEN;
		}
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const attr_msg_t *g = attr_list_group(l, i);
		int32_t st = QMGR_CLNT_MSG_ERROR;
		const char *why = "";
		(void)attr_get_int(g, "status", &st);
		(void)attr_get_str(g, "reason", &why);
		switch (st) {
		case QMGR_CLNT_MSG_DONE:
			/* qmgr logged it. */
			a->st.done++;
			if (a->act == QMGR_CLNT_ACT_REQUEUE)
				a->st.requeued_incoming = true;
			break;
		case QMGR_CLNT_MSG_NOT_ACTIVE:
			one(a, ids[i]);	/* it left active meanwhile */
			break;
		case QMGR_CLNT_MSG_GONE:
			log_warning("%s: the message left the queue before it "
			    "could be %s", ids[i],
			    qmgr_clnt_action_done_text(a->act));
			a->st.gone++;
			break;
		case QMGR_CLNT_MSG_PENDING:
			log_warning("%s: being delivered; qmgr will log \"%s: %s\" "
			    "when the delivery ends", ids[i], ids[i],
			    qmgr_clnt_action_done_text(a->act));
			a->st.pending++;
			break;
		default:
			log_error("%s: qmgr: %s", ids[i], *why ? why : "failed");
			a->st.errors++;
			break;
		}
	}
out:
	if (rep)
		attr_msg_free(rep);
	free(ids);
	str_release(&req);
	str_release(&err);
}

void super_admin_finish(super_admin_t *a, super_admin_stats_t *st)
{
	/* Bounded: each round handles what the previous one left. */
	for (int i = 0; i < ADMIN_TRIES && a->nbatch > 0; i++)
		flush_batch(a);
	if (a->nbatch > 0) {
		log_error("%zu messages keep moving in and out of the active "
		    "queue; try again", a->nbatch);
		a->st.errors += a->nbatch;
		a->nbatch = 0;
	}
	*st = a->st;
}

void super_admin_free(super_admin_t *a)
{
	if (a == NULL)
		return;
	qmgr_clnt_close(a->qc);
	free(a->batch);
	free(a);
}
