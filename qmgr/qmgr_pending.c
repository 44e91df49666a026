/* qmgr's control channel: "message" requests, the delete / hold /
 * release / requeue of messages in the active queue (postsuper).  qmgr
 * stops the message's pass, waits for its deliveries in flight, then
 * finds it in the queue it went to and carries out the action there
 * (qmgr_clnt_msg_apply); see qmgr_control_int.h. */
#include <errno.h>
#include <stdlib.h>
#include "log.h"
#include "mem.h"
#include "qmgr_control_int.h"

/* Message actions waiting for deliveries in flight, all clients. */
#define QMGR_PENDING_MAX	100000

/* Frees a request (its deadline cancelled) and its results. */
static void req_free(qmgr_pending_req_t *r)
{
	event_timer_cancel(&r->deadline);
	for (size_t i = 0; i < r->n; i++)
		free(r->res[i].reason);
	free(r->res);
	free(r);
}

/* Sends the results.  resume: called when the results came in later (not
 * from inside the request's own handling), so the connection goes on
 * with the requests that follow. */
static void req_reply(qmgr_pending_req_t *r, bool resume)
{
	qmgr_control_conn_t *k = r->conn;
	str_t *out = &k->out;

	event_timer_cancel(&r->deadline);
	qmgr_control_reply_status(out, QMGR_CLNT_OK, NULL);
	attr_put_list(out, "result", r->n);
	for (size_t i = 0; i < r->n; i++) {
		qmgr_pending_result_t *x = &r->res[i];
		attr_put_str(out, "id", x->id);
		attr_put_int(out, "status", x->status);
		if (x->queue)
			attr_put_str(out, "queue", x->queue);
		if (x->reason)
			attr_put_str(out, "reason", x->reason);
		attr_put_end(out);
	}
	attr_put_end(out);
	k->waiting = NULL;
	req_free(r);
	if (resume)
		qmgr_control_conn_process(k);
}

static void result_set(qmgr_pending_t *p, int status, const char *queue,
    const char *reason)
{
	qmgr_pending_req_t *r = p->req;
	qmgr_pending_result_t *x;

	if (r == NULL)
		return;
	x = &r->res[p->idx];
	x->status = status;
	x->queue = queue;
	free(x->reason);
	x->reason = reason && *reason ? xstrdup(reason) : NULL;
	if (--r->left == 0)
		req_reply(r, true);
}

static void pending_free(qmgr_control_t *c, qmgr_pending_t *p)
{
	list_remove(&p->node);
	c->npending--;
	free(p);
}

static const char *const other_queues[] = { QUEUE_DEFERRED, QUEUE_INCOMING,
    QUEUE_HOLD, QUEUE_MAILDROP, QUEUE_CORRUPT, NULL };

/* One pending action: still in active (wait; stop it again if qmgr took
 * it anew), somewhere else (act now), or nowhere (its pass ended it).
 * Returns true when it is resolved. */
static bool pending_check(qmgr_control_t *c, qmgr_pending_t *p)
{
	str_t err = STR_INIT;
	sched_msg_t *m;
	int rc;

	if (qmgr_control_in_queue(c, QUEUE_ACTIVE, p->id)) {
		if ((m = sched_msg_find(c->s, p->id)) != NULL
		    && !sched_msg_stopped(m)) {
			(void)sched_msg_stop(c->s, p->id,
			    qmgr_clnt_action_stop_reason(p->act),
			    qmgr_control_now(c));
			qmgr_control_kick(c);
		}
		return false;
	}
	for (int i = 0; other_queues[i] != NULL; i++) {
		if (!qmgr_control_in_queue(c, other_queues[i], p->id))
			continue;
		rc = qmgr_clnt_msg_apply(c->ql, other_queues[i], p->id, p->act,
		    &err);
		if (rc < 0 && errno == ENOENT) {
			str_release(&err);
			return false;	/* moved meanwhile: next round */
		}
		if (rc < 0) {
			log_warning("%s: cannot carry out the administrator's %s "
			    "request: %s", p->id, qmgr_clnt_action_name(p->act),
			    str_cstr(&err));
			result_set(p, QMGR_CLNT_MSG_ERROR, other_queues[i],
			    str_cstr(&err));
		} else {
			if (rc == 0)
				log_info("%s: %s", p->id,
				    qmgr_clnt_action_done_text(p->act));
			if (rc == 0 && p->act == QMGR_CLNT_ACT_REQUEUE
			    && c->ops.trigger) {
				char t = 'I';	/* TRIGGER_SCAN_INCOMING */
				c->ops.trigger(&t, 1);
			}
			result_set(p, QMGR_CLNT_MSG_DONE, other_queues[i],
			    rc > 0 ? str_cstr(&err) : NULL);
		}
		str_release(&err);
		return true;
	}
	str_release(&err);
	/* In no queue, and not back in active in between: delivered or
	 * returned at the end of its pass. */
	if (qmgr_control_in_queue(c, QUEUE_ACTIVE, p->id))
		return false;
	result_set(p, QMGR_CLNT_MSG_GONE, NULL, "the message left the queue "
	    "before the request could be carried out");
	return true;
}

void qmgr_pending_poll(void *ctx)
{
	qmgr_control_t *c = ctx;
	list_node_t *n, *tmp;

	list_foreach_safe(n, tmp, &c->pending) {
		qmgr_pending_t *p = list_entry(n, qmgr_pending_t, node);
		if (pending_check(c, p))
			pending_free(c, p);
	}
	if (c->npending > 0 && !event_timer_pending(&c->poll))
		event_timer_start(c->loop, &c->poll, c->conf.poll_ms);
}

static void req_deadline(void *ctx)
{
	qmgr_pending_req_t *r = ctx;
	qmgr_control_t *c = r->conn->c;
	list_node_t *n;

	/* The rest stays pending, owned by qmgr, logged when carried out. */
	list_foreach(n, &c->pending) {
		qmgr_pending_t *p = list_entry(n, qmgr_pending_t, node);
		if (p->req == r) {
			r->res[p->idx].status = QMGR_CLNT_MSG_PENDING;
			r->res[p->idx].queue = QUEUE_ACTIVE;
			free(r->res[p->idx].reason);
			r->res[p->idx].reason = xstrdup("deliveries in flight; "
			    "qmgr carries out the request when they end");
			p->req = NULL;
		}
	}
	req_reply(r, true);
}

void qmgr_pending_request(qmgr_control_conn_t *k, const attr_msg_t *m)
{
	qmgr_control_t *c = k->c;
	const attr_list_t *ids = NULL;
	const char *aname = NULL;
	qmgr_clnt_action_t act;
	int32_t wait = QMGR_CLNT_WAIT_DEFAULT;
	qmgr_pending_req_t *r;
	str_t *out = &k->out;
	bool any = false;

	if (!attr_get_str(m, "action", &aname)
	    || !qmgr_clnt_action_parse(aname, &act)) {
		qmgr_control_reply_status(out, QMGR_CLNT_FAIL,
		    "missing or unknown action");
		attr_put_end(out);
		return;
	}
	if (!attr_get_list(m, "queue_id", &ids) || attr_list_count(ids) == 0
	    || attr_list_count(ids) > QMGR_CLNT_MAX_IDS) {
		qmgr_control_reply_status(out, QMGR_CLNT_FAIL,
		    "missing queue_id list, or more than 10000 IDs");
		attr_put_end(out);
		return;
	}
	(void)attr_get_int(m, "wait", &wait);
	if (wait < 0)
		wait = 0;
	if (wait > QMGR_CLNT_WAIT_MAX)
		wait = QMGR_CLNT_WAIT_MAX;
	r = xcalloc(1, sizeof(*r));
	r->conn = k;
	r->act = act;
	r->n = r->left = attr_list_count(ids);
	r->res = xcalloc(r->n, sizeof(*r->res));
	event_timer_init(&r->deadline, req_deadline, r);
	k->waiting = r;
	for (size_t i = 0; i < r->n; i++) {
		const char *id = NULL;
		qmgr_pending_result_t *x = &r->res[i];
		qmgr_pending_t *p;

		(void)attr_get_str(attr_list_group(ids, i), "id", &id);
		if (id == NULL || !queue_id_valid(id)) {
			x->status = QMGR_CLNT_MSG_ERROR;
			x->reason = xstrdup("not a valid queue ID");
			r->left--;
			continue;
		}
		bcopy_str(x->id, sizeof(x->id), id);
		/* Release concerns the hold queue only, which is not ours. */
		if (act == QMGR_CLNT_ACT_RELEASE
		    || !qmgr_control_in_queue(c, QUEUE_ACTIVE, id)) {
			x->status = QMGR_CLNT_MSG_NOT_ACTIVE;
			r->left--;
			continue;
		}
		if (c->npending >= QMGR_PENDING_MAX) {
			x->status = QMGR_CLNT_MSG_ERROR;
			x->reason = xstrdup("too many requests waiting");
			r->left--;
			continue;
		}
		p = xcalloc(1, sizeof(*p));
		bcopy_str(p->id, sizeof(p->id), id);
		p->act = act;
		p->req = r;
		p->idx = i;
		list_append(&c->pending, &p->node);
		c->npending++;
		log_info("%s: stopping delivery: %s requested by administrator",
		    id, qmgr_clnt_action_name(act));
		(void)sched_msg_stop(c->s, id,
		    qmgr_clnt_action_stop_reason(act), qmgr_control_now(c));
		any = true;
	}
	if (any)
		qmgr_control_kick(c);
	if (r->left == 0) {
		req_reply(r, false);
		return;
	}
	event_timer_start(c->loop, &r->deadline, (int64_t)wait * 1000);
	if (!event_timer_pending(&c->poll))
		event_timer_start(c->loop, &c->poll, c->conf.poll_ms);
}

void qmgr_pending_abandon(qmgr_control_conn_t *k)
{
	qmgr_control_t *c = k->c;
	list_node_t *n;

	if (k->waiting == NULL)
		return;
	list_foreach(n, &c->pending) {
		qmgr_pending_t *p = list_entry(n, qmgr_pending_t, node);
		if (p->req == k->waiting)
			p->req = NULL;
	}
	req_free(k->waiting);
	k->waiting = NULL;
}

void qmgr_pending_free_all(qmgr_control_t *c)
{
	list_node_t *n;

	while ((n = list_first(&c->pending)) != NULL)
		pending_free(c, list_entry(n, qmgr_pending_t, node));
}
