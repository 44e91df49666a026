/* qmgr's side of the control channel; see qmgr_control.h and
 * doc/protocol-qmgr-control.md. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include "attr.h"
#include "file.h"
#include "htable.h"
#include "list.h"
#include "log.h"
#include "mem.h"
#include "queue_id.h"
#include "sock.h"
#include "qmgr_control.h"

/* Reply sizes: at most this many destination queues, jobs per transport
 * and DSC entries in a reply (the reply says how many were left out). */
#define QC_MAX_QUEUES		5000
#define QC_MAX_JOBS		1000
#define QC_DEF_JOBS		20
#define QC_MAX_DSC		10000
#define QC_STATUS_DSC		1000
/* Message actions waiting for deliveries in flight, all clients. */
#define QC_MAX_PENDING		100000
/* Nexthops and reasons given to suspend. */
#define QC_MAX_NEXTHOP		255
#define QC_MAX_REASON		200

/* Requests are small: a list of queue IDs at most. */
static const attr_limits_t qc_req_limits = {
	.max_value = 4096,
	.max_attrs = 2 * QMGR_CLNT_MAX_IDS + 64,
	.max_group_attrs = 32,
	.max_total = 1u << 20,
	.max_depth = 1,
};

typedef struct qc_result {
	char id[QUEUE_ID_SIZE];
	int status;
	const char *queue;		/* static string, or NULL */
	char *reason;
} qc_result_t;

struct qc_conn;

/* A "message" request waiting for actions on active messages. */
typedef struct qc_req {
	struct qc_conn *conn;
	qmgr_clnt_action_t act;
	size_t n, left;
	qc_result_t *res;
	event_timer_t deadline;
} qc_req_t;

typedef struct qc_pending {
	char id[QUEUE_ID_SIZE];
	qmgr_clnt_action_t act;
	qc_req_t *req;			/* NULL once the client stopped waiting */
	size_t idx;
	list_node_t node;
} qc_pending_t;

typedef struct qc_conn {
	struct qmgr_control *c;
	int fd;
	attr_reader_t *rd;
	str_t in;			/* bytes not fed to the reader yet */
	str_t out;
	size_t outpos;
	qc_req_t *waiting;
	bool eof;
	event_timer_t idle;
	list_node_t node;
} qc_conn_t;

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

static void conn_close(qc_conn_t *k);
static void conn_process(qc_conn_t *k);
static void conn_update(qc_conn_t *k);

static bool in_queue(const qmgr_control_t *c, const char *queue,
    const char *id)
{
	str_t path = STR_INIT;
	bool r = queue_find(c->ql, queue, id, &path) == 0;

	str_release(&path);
	return r;
}

static double now_of(const qmgr_control_t *c)
{
	return c->ops.now();
}

static void kick(const qmgr_control_t *c)
{
	if (c->ops.kick)
		c->ops.kick();
}

/* ---- Suspended destinations, kept across restarts ------------------- */

static bool text_ok(const char *s, size_t max, bool spaces)
{
	size_t n = 0;

	for (; *s; s++, n++) {
		unsigned char ch = (unsigned char)*s;
		if (ch < 0x20 || ch == 0x7f || (!spaces && ch == ' '))
			return false;
	}
	return n <= max;
}

static void state_save(qmgr_control_t *c)
{
	htable_entry_t **v;
	size_t n;
	str_t data = STR_INIT, dir = STR_INIT;
	const char *slash;

	if (c->state_path == NULL)
		return;
	v = htable_list(c->reasons, &n);
	str_set(&data, "# Destinations suspended with postsuper -P (written by "
	    "qmgr): nexthop TAB reason\n");
	for (size_t i = 0; i < n; i++)
		str_catf(&data, "%s\t%s\n", v[i]->key, (char *)v[i]->value);
	free(v);
	if ((slash = strrchr(c->state_path, '/')) != NULL) {
		str_setf(&dir, "%.*s", (int)(slash - c->state_path), c->state_path);
		(void)file_mkdirs(str_cstr(&dir), 0700);
	}
	if (file_replace(c->state_path, str_cstr(&data), str_len(&data), 0600) < 0)
		log_warning("cannot save the suspended destinations in %s: %s; "
		    "they are forgotten when qmgr restarts", c->state_path,
		    strerror(errno));
	str_release(&data);
	str_release(&dir);
}

static void state_load(qmgr_control_t *c)
{
	str_t data = STR_INIT;
	char *p, *line;
	int n = 0;

	if (c->state_path == NULL)
		return;
	if (file_read_all(c->state_path, &data, 1 << 20) < 0) {
		if (errno != ENOENT)
			log_warning("cannot read the suspended destinations from "
			    "%s: %s", c->state_path, strerror(errno));
		str_release(&data);
		return;
	}
	p = str_cstr(&data) ? (char *)str_cstr(&data) : NULL;
	while (p != NULL && (line = strsep(&p, "\n")) != NULL) {
		char *tab = strchr(line, '\t');
		const char *reason = "";
		if (*line == 0 || *line == '#')
			continue;
		if (tab != NULL) {
			*tab = 0;
			reason = tab + 1;
		}
		if (!text_ok(line, QC_MAX_NEXTHOP, false) || *line == 0
		    || !text_ok(reason, QC_MAX_REASON, true)) {
			log_warning("%s: bad line ignored", c->state_path);
			continue;
		}
		sched_dest_suspend(c->s, line, reason, now_of(c));
		free(htable_put(c->reasons, line, xstrdup(reason)));
		n++;
	}
	if (n > 0)
		log_info("%d destination%s suspended by administrator (postsuper "
		    "-U to resume)", n, n == 1 ? "" : "s");
	str_release(&data);
}

/* ---- Replies ---------------------------------------------------------- */

static void reply_status(str_t *out, int status, const char *reason)
{
	attr_put_int(out, "status", status);
	if (reason != NULL && *reason)
		attr_put_str(out, "reason", reason);
}

static void put_double(str_t *out, const char *name, double v)
{
	char buf[64];

	if (!isfinite(v))
		v = 0;
	(void)bfmt(buf, sizeof(buf), "%.3f", v);
	attr_put_str(out, name, buf);
}

/* A rate in tokens per second, with enough decimals for 1/d. */
static void put_rate(str_t *out, const char *name, double v)
{
	char buf[64];

	(void)bfmt(buf, sizeof(buf), "%.9f", isfinite(v) ? v : 0);
	attr_put_str(out, name, buf);
}

/* Section 8a of doc/scheduler.md: a limited queue's limits and the
 * tokens left now (absent for a queue without limits). */
static void put_limits(str_t *out, const sched_queue_info_t *qi, double now)
{
	const sched_limits_t *l = &qi->limits;
	double next = now;
	str_t text = STR_INIT;

	attr_put_str(out, "limits", sched_limits_format(l, &text));
	str_release(&text);
	if (l->msg_rate > 0) {
		put_rate(out, "message_rate", l->msg_rate);
		attr_put_long(out, "message_burst", (int64_t)l->msg_burst);
		put_double(out, "message_tokens", tb_tokens(&qi->msg_bucket, now));
		next = tb_next_token(&qi->msg_bucket, now);
	}
	if (l->conn_rate > 0) {
		double cn = tb_next_token(&qi->conn_bucket, now);
		put_rate(out, "connection_rate", l->conn_rate);
		attr_put_long(out, "connection_burst", (int64_t)l->conn_burst);
		put_double(out, "connection_tokens",
		    tb_tokens(&qi->conn_bucket, now));
		if (cn > next)
			next = cn;
	}
	if (l->msgs_per_conn > 0)
		attr_put_long(out, "messages_per_connection", l->msgs_per_conn);
	put_double(out, "next_token_in", next - now);
	attr_put_long(out, "rate_held", (int64_t)qi->rate_held);
}

static int64_t secs(double t)
{
	return isfinite(t) ? (int64_t)floor(t) : 0;
}

/* -- status -- */

typedef struct vec {
	void *v;
	size_t n, cap, size, max, omitted;
} vec_t;

static void *vec_push(vec_t *v)
{
	if (v->n >= v->max) {
		v->omitted++;
		return NULL;
	}
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 16;
		v->v = xreallocarray(v->v, v->cap, v->size);
	}
	return (char *)v->v + v->size * v->n++;
}

static void collect_queue(const sched_queue_info_t *qi, void *ctx)
{
	sched_queue_info_t *d = vec_push(ctx);
	if (d)
		*d = *qi;
}

static void collect_job(const sched_job_info_t *ji, void *ctx)
{
	sched_job_info_t *d = vec_push(ctx);
	if (d)
		*d = *ji;
}

static void collect_transport(const sched_transport_info_t *ti, void *ctx)
{
	sched_transport_info_t *d = vec_push(ctx);
	if (d)
		*d = *ti;
}

static void collect_dsc(const dsc_entry_t *e, void *ctx)
{
	const dsc_entry_t **d = vec_push(ctx);
	if (d)
		*d = e;
}

static void collect_held(const sched_hold_info_t *hi, void *ctx)
{
	sched_hold_info_t *d = vec_push(ctx);
	if (d)
		*d = *hi;
}

static void put_dsc_entries(str_t *out, const qmgr_control_t *c, size_t max,
    double now)
{
	vec_t v = { NULL, 0, 0, sizeof(const dsc_entry_t *), max, 0 };
	const dsc_t *dsc = sched_dsc(c->s);
	str_t line = STR_INIT;

	if (dsc != NULL)
		dsc_walk(dsc, collect_dsc, &v);
	attr_put_long(out, "dsc_count", dsc ? (int64_t)dsc_count(dsc) : 0);
	attr_put_long(out, "dsc_limit", dsc ? (int64_t)dsc_limit(dsc) : 0);
	attr_put_long(out, "dsc_omitted", (int64_t)v.omitted);
	attr_put_list(out, "dsc", v.n);
	for (size_t i = 0; i < v.n; i++) {
		const dsc_entry_t *e = ((const dsc_entry_t **)v.v)[i];
		attr_put_str(out, "transport", e->transport);
		attr_put_str(out, "nexthop", e->nexthop);
		if (*e->extra)
			attr_put_str(out, "extra", e->extra);
		attr_put_str(out, "state", e->state == DSC_STATE_PROBING
		    ? "probing" : "suspended");
		attr_put_str(out, "reason", e->reason ? e->reason : "");
		attr_put_int(out, "failures", e->failures);
		attr_put_long(out, "probes", (int64_t)e->probes);
		attr_put_long(out, "died_at", secs(e->died_at));
		attr_put_long(out, "last_fail", secs(e->last_fail));
		attr_put_long(out, "retry_at", (int64_t)ceil(e->retry_at));
		attr_put_str(out, "line", dsc_format_entry(e, now, &line));
		attr_put_end(out);
	}
	free(v.v);
	str_release(&line);
}

static void do_status(qmgr_control_t *c, const attr_msg_t *m, str_t *out)
{
	sched_stats_t st;
	vec_t tv = { NULL, 0, 0, sizeof(sched_transport_info_t), 1000, 0 };
	vec_t qv = { NULL, 0, 0, sizeof(sched_queue_info_t), QC_MAX_QUEUES, 0 };
	vec_t hv = { NULL, 0, 0, sizeof(sched_hold_info_t), 100000, 0 };
	double now = now_of(c);
	int32_t maxjobs = QC_DEF_JOBS, maxdsc = QC_STATUS_DSC;

	if (attr_get_int(m, "max_jobs", &maxjobs)) {
		if (maxjobs < 0)
			maxjobs = 0;
		if (maxjobs > QC_MAX_JOBS)
			maxjobs = QC_MAX_JOBS;
	}
	if (attr_get_int(m, "max_dsc", &maxdsc)) {
		if (maxdsc < 0)
			maxdsc = 0;
		if (maxdsc > QC_STATUS_DSC)
			maxdsc = QC_STATUS_DSC;
	}
	sched_get_stats(c->s, &st);
	reply_status(out, QMGR_CLNT_OK, NULL);
	attr_put_long(out, "time", secs(now));
	attr_put_long(out, "messages", (int64_t)st.messages);
	attr_put_long(out, "rcpt_in_core", st.rcpt_in_core);
	attr_put_long(out, "rcpt_peak", st.rcpt_peak);
	attr_put_long(out, "selected", (int64_t)st.selected);
	attr_put_long(out, "preemptions", (int64_t)st.preemptions);
	attr_put_long(out, "suspended_rcpts", (int64_t)st.suspended_rcpts);
	attr_put_long(out, "pending_actions", (int64_t)c->npending);
	attr_put_long(out, "new_messages", (int64_t)st.new_msgs);
	attr_put_long(out, "rcpt_sent", (int64_t)st.rcpt_sent);
	attr_put_long(out, "rcpt_bounced", (int64_t)st.rcpt_bounced);
	attr_put_long(out, "rcpt_deferred", (int64_t)st.rcpt_deferred);

	sched_walk_transports(c->s, collect_transport, &tv);
	attr_put_list(out, "transport", tv.n);
	for (size_t i = 0; i < tv.n; i++) {
		const sched_transport_info_t *ti =
		    &((sched_transport_info_t *)tv.v)[i];
		vec_t jv = { NULL, 0, 0, sizeof(sched_job_info_t),
		    (size_t)maxjobs, 0 };
		attr_put_str(out, "name", ti->name);
		attr_put_int(out, "busy", ti->busy);
		attr_put_int(out, "process_limit", ti->process_limit);
		attr_put_long(out, "jobs", (int64_t)ti->jobs);
		attr_put_long(out, "queues", (int64_t)ti->queues);
		attr_put_long(out, "rcpt_in_core", ti->rcpt_in_core);
		attr_put_long(out, "rcpt_limit", ti->rcpt_limit);
		attr_put_long(out, "extra_limit", ti->extra_limit);
		attr_put_long(out, "selected", (int64_t)ti->selected);
		attr_put_long(out, "preemptions", (int64_t)ti->preemptions);
		sched_walk_jobs(c->s, sched_transport_find(c->s, ti->name),
		    collect_job, &jv);
		attr_put_long(out, "jobs_omitted", (int64_t)jv.omitted);
		attr_put_list(out, "job", jv.n);
		for (size_t k = 0; k < jv.n; k++) {
			const sched_job_info_t *ji = &((sched_job_info_t *)jv.v)[k];
			attr_put_str(out, "id", ji->id);
			attr_put_int(out, "stack_level", ji->stack_level);
			if (ji->parent_id)
				attr_put_str(out, "parent", ji->parent_id);
			attr_put_long(out, "read_entries", ji->read_entries);
			attr_put_long(out, "selected_entries", ji->selected_entries);
			attr_put_long(out, "todo_entries", ji->todo_entries);
			attr_put_long(out, "unread", (int64_t)ji->unread);
			attr_put_long(out, "slots_available", ji->slots_available);
			attr_put_int(out, "blocker", ji->blocker);
			attr_put_int(out, "current", ji->current);
			attr_put_end(out);
		}
		free(jv.v);
		attr_put_end(out);
	}

	sched_walk_queues(c->s, NULL, collect_queue, &qv);
	attr_put_long(out, "queues_omitted", (int64_t)qv.omitted);
	attr_put_list(out, "queue", qv.n);
	for (size_t i = 0; i < qv.n; i++) {
		const sched_queue_info_t *qi = &((sched_queue_info_t *)qv.v)[i];
		attr_put_str(out, "transport", qi->transport);
		attr_put_str(out, "nexthop", qi->nexthop);
		attr_put_int(out, "window", qi->window);
		attr_put_int(out, "busy", qi->busy);
		put_double(out, "success", qi->success);
		put_double(out, "failure", qi->failure);
		put_double(out, "fail_cohorts", qi->fail_cohorts);
		attr_put_long(out, "todo", (int64_t)qi->todo_entries);
		attr_put_int(out, "dead", qi->dead);
		attr_put_int(out, "suspended", qi->suspended);
		attr_put_int(out, "probing", qi->probing);
		attr_put_int(out, "held",
		    sched_dest_suspended(c->s, qi->nexthop) != NULL);
		if (qi->suspended)
			attr_put_long(out, "retry_at", (int64_t)ceil(qi->retry_at));
		if (qi->reason)
			attr_put_str(out, "reason", qi->reason);
		attr_put_long(out, "deliveries", (int64_t)qi->deliveries);
		attr_put_long(out, "conn_failures", (int64_t)qi->conn_failures);
		attr_put_long(out, "suspended_rcpts", (int64_t)qi->suspended_rcpts);
		if (qi->limited)
			put_limits(out, qi, now);
		attr_put_long(out, "deferrals", (int64_t)qi->deferrals);
		attr_put_end(out);
	}

	sched_walk_suspended(c->s, collect_held, &hv);
	attr_put_list(out, "held", hv.n);
	for (size_t i = 0; i < hv.n; i++) {
		const sched_hold_info_t *hi = &((sched_hold_info_t *)hv.v)[i];
		attr_put_str(out, "nexthop", hi->nexthop);
		attr_put_str(out, "reason", hi->text);
		attr_put_long(out, "since", secs(hi->since));
		attr_put_end(out);
	}
	put_dsc_entries(out, c, (size_t)maxdsc, now);
	attr_put_end(out);
	free(tv.v);
	free(qv.v);
	free(hv.v);
}

static void do_dsc(qmgr_control_t *c, str_t *out)
{
	double now = now_of(c);

	reply_status(out, QMGR_CLNT_OK, NULL);
	attr_put_long(out, "time", secs(now));
	put_dsc_entries(out, c, QC_MAX_DSC, now);
	attr_put_end(out);
}

static void do_dsc_clear(qmgr_control_t *c, const attr_msg_t *m, str_t *out)
{
	const char *nexthop = NULL;
	size_t n;

	(void)attr_get_str(m, "nexthop", &nexthop);
	if (nexthop != NULL && (*nexthop == 0
	    || !text_ok(nexthop, QC_MAX_NEXTHOP, false))) {
		reply_status(out, QMGR_CLNT_FAIL, "bad nexthop");
		attr_put_end(out);
		return;
	}
	n = sched_dsc_clear(c->s, nexthop, now_of(c));
	if (nexthop)
		log_info("destination status cache: %zu entr%s for %s cleared by "
		    "administrator", n, n == 1 ? "y" : "ies", nexthop);
	else
		log_info("destination status cache: %zu entr%s cleared by "
		    "administrator", n, n == 1 ? "y" : "ies");
	reply_status(out, n > 0 ? QMGR_CLNT_OK : QMGR_CLNT_NOTHING, n > 0 ? NULL
	    : "no such destination in the status cache");
	attr_put_long(out, "count", (int64_t)n);
	attr_put_end(out);
	kick(c);
}

static void do_suspend(qmgr_control_t *c, const attr_msg_t *m, str_t *out,
    bool suspend)
{
	const char *nexthop = NULL, *reason = "";

	(void)attr_get_str(m, "reason", &reason);
	if (!attr_get_str(m, "nexthop", &nexthop) || *nexthop == 0
	    || !text_ok(nexthop, QC_MAX_NEXTHOP, false)) {
		reply_status(out, QMGR_CLNT_FAIL, "missing or bad nexthop");
	} else if (!text_ok(reason, QC_MAX_REASON, true)) {
		reply_status(out, QMGR_CLNT_FAIL, "bad reason text");
	} else if (suspend) {
		sched_dest_suspend(c->s, nexthop, reason, now_of(c));
		free(htable_put(c->reasons, nexthop, xstrdup(reason)));
		state_save(c);
		log_info("%s: %s", nexthop, sched_dest_suspended(c->s, nexthop));
		reply_status(out, QMGR_CLNT_OK, NULL);
		kick(c);
	} else if (!sched_dest_resume(c->s, nexthop, now_of(c))) {
		reply_status(out, QMGR_CLNT_NOTHING, "destination not suspended");
	} else {
		free(htable_delete(c->reasons, nexthop));
		state_save(c);
		log_info("%s: delivery resumed by administrator", nexthop);
		reply_status(out, QMGR_CLNT_OK, NULL);
		kick(c);
	}
	attr_put_end(out);
}

/* -- message actions -- */

/* Sends the results.  resume: called when the results came in later (not
 * from inside the request's own handling), so the connection goes on
 * with the requests that follow. */
static void req_reply(qc_req_t *r, bool resume)
{
	qc_conn_t *k = r->conn;
	str_t *out = &k->out;

	event_timer_cancel(&r->deadline);
	reply_status(out, QMGR_CLNT_OK, NULL);
	attr_put_list(out, "result", r->n);
	for (size_t i = 0; i < r->n; i++) {
		qc_result_t *x = &r->res[i];
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
	for (size_t i = 0; i < r->n; i++)
		free(r->res[i].reason);
	free(r->res);
	free(r);
	if (resume)
		conn_process(k);
}

static void result_set(qc_pending_t *p, int status, const char *queue,
    const char *reason)
{
	qc_req_t *r = p->req;
	qc_result_t *x;

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

static void pending_free(qmgr_control_t *c, qc_pending_t *p)
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
static bool pending_check(qmgr_control_t *c, qc_pending_t *p)
{
	str_t err = STR_INIT;
	sched_msg_t *m;
	int rc;

	if (in_queue(c, QUEUE_ACTIVE, p->id)) {
		if ((m = sched_msg_find(c->s, p->id)) != NULL
		    && !sched_msg_stopped(m)) {
			(void)sched_msg_stop(c->s, p->id,
			    qmgr_clnt_action_stop_reason(p->act), now_of(c));
			kick(c);
		}
		return false;
	}
	for (int i = 0; other_queues[i] != NULL; i++) {
		if (!in_queue(c, other_queues[i], p->id))
			continue;
		rc = qmgr_clnt_msg_apply(c->ql, other_queues[i], p->id, p->act, &err);
		if (rc < 0 && errno == ENOENT) {
			str_release(&err);
			return false;	/* moved meanwhile: next round */
		}
		if (rc < 0) {
			log_warning("%s: cannot carry out the administrator's %s "
			    "request: %s", p->id, qmgr_clnt_action_name(p->act),
			    str_cstr(&err));
			result_set(p, QMGR_CLNT_MSG_ERROR, other_queues[i], str_cstr(&err));
		} else {
			if (rc == 0)
				log_info("%s: %s", p->id, qmgr_clnt_action_done_text(p->act));
			if (rc == 0 && p->act == QMGR_CLNT_ACT_REQUEUE && c->ops.trigger) {
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
	if (in_queue(c, QUEUE_ACTIVE, p->id))
		return false;
	result_set(p, QMGR_CLNT_MSG_GONE, NULL, "the message left the queue before "
	    "the request could be carried out");
	return true;
}

static void poll_pending(void *ctx)
{
	qmgr_control_t *c = ctx;
	list_node_t *n, *tmp;

	list_foreach_safe(n, tmp, &c->pending) {
		qc_pending_t *p = list_entry(n, qc_pending_t, node);
		if (pending_check(c, p))
			pending_free(c, p);
	}
	if (c->npending > 0 && !event_timer_pending(&c->poll))
		event_timer_start(c->loop, &c->poll, c->conf.poll_ms);
}

static void req_deadline(void *ctx)
{
	qc_req_t *r = ctx;
	qmgr_control_t *c = r->conn->c;
	list_node_t *n;

	/* The rest stays pending, owned by qmgr, logged when carried out. */
	list_foreach(n, &c->pending) {
		qc_pending_t *p = list_entry(n, qc_pending_t, node);
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

static void do_message(qc_conn_t *k, const attr_msg_t *m)
{
	qmgr_control_t *c = k->c;
	const attr_list_t *ids = NULL;
	const char *aname = NULL;
	qmgr_clnt_action_t act;
	int32_t wait = QMGR_CLNT_WAIT_DEFAULT;
	qc_req_t *r;
	str_t *out = &k->out;
	bool any = false;

	if (!attr_get_str(m, "action", &aname) || !qmgr_clnt_action_parse(aname, &act)) {
		reply_status(out, QMGR_CLNT_FAIL, "missing or unknown action");
		attr_put_end(out);
		return;
	}
	if (!attr_get_list(m, "queue_id", &ids) || attr_list_count(ids) == 0
	    || attr_list_count(ids) > QMGR_CLNT_MAX_IDS) {
		reply_status(out, QMGR_CLNT_FAIL, "missing queue_id list, or more than "
		    "10000 IDs");
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
		qc_result_t *x = &r->res[i];
		qc_pending_t *p;

		(void)attr_get_str(attr_list_group(ids, i), "id", &id);
		if (id == NULL || !queue_id_valid(id)) {
			x->status = QMGR_CLNT_MSG_ERROR;
			x->reason = xstrdup("not a valid queue ID");
			r->left--;
			continue;
		}
		bcopy_str(x->id, sizeof(x->id), id);
		/* Release concerns the hold queue only, which is not ours. */
		if (act == QMGR_CLNT_ACT_RELEASE || !in_queue(c, QUEUE_ACTIVE, id)) {
			x->status = QMGR_CLNT_MSG_NOT_ACTIVE;
			r->left--;
			continue;
		}
		if (c->npending >= QC_MAX_PENDING) {
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
		(void)sched_msg_stop(c->s, id, qmgr_clnt_action_stop_reason(act),
		    now_of(c));
		any = true;
	}
	if (any)
		kick(c);
	if (r->left == 0) {
		req_reply(r, false);
		return;
	}
	event_timer_start(c->loop, &r->deadline, (int64_t)wait * 1000);
	if (!event_timer_pending(&c->poll))
		event_timer_start(c->loop, &c->poll, c->conf.poll_ms);
}

/* ---- Connections ------------------------------------------------------ */

static void handle(qc_conn_t *k, attr_msg_t *m)
{
	qmgr_control_t *c = k->c;
	const char *req = NULL;

	(void)attr_get_str(m, "request", &req);
	if (req == NULL) {
		reply_status(&k->out, QMGR_CLNT_FAIL, "missing request name");
		attr_put_end(&k->out);
	} else if (strcmp(req, QMGR_CLNT_REQ_STATUS) == 0) {
		do_status(c, m, &k->out);
	} else if (strcmp(req, QMGR_CLNT_REQ_DSC) == 0) {
		do_dsc(c, &k->out);
	} else if (strcmp(req, QMGR_CLNT_REQ_DSC_CLEAR) == 0) {
		do_dsc_clear(c, m, &k->out);
	} else if (strcmp(req, QMGR_CLNT_REQ_SUSPEND) == 0) {
		do_suspend(c, m, &k->out, true);
	} else if (strcmp(req, QMGR_CLNT_REQ_RESUME) == 0) {
		do_suspend(c, m, &k->out, false);
	} else if (strcmp(req, QMGR_CLNT_REQ_MESSAGE) == 0) {
		do_message(k, m);
	} else {
		reply_status(&k->out, QMGR_CLNT_FAIL, "unknown request");
		attr_put_end(&k->out);
	}
}

static void conn_event(int fd, int events, void *ctx);

/* Interest: write while output is waiting; read while no request is
 * being worked on. */
static void conn_update(qc_conn_t *k)
{
	int ev = 0;

	if (k->outpos < str_len(&k->out))
		ev |= EVENT_WRITE;
	else if (k->waiting == NULL && !k->eof)
		ev |= EVENT_READ;
	(void)event_modify(k->c->loop, k->fd, ev);
	if (k->waiting == NULL)
		event_timer_start(k->c->loop, &k->idle, k->c->conf.idle_timeout_ms);
	else
		event_timer_cancel(&k->idle);
}

/* Feeds buffered input to the reader and handles complete requests,
 * one at a time. */
static void conn_process(qc_conn_t *k)
{
	while (k->waiting == NULL && str_len(&k->in) > 0) {
		size_t used = 0;
		enum attr_result r = attr_reader_feed(k->rd, str_cstr(&k->in),
		    str_len(&k->in), &used);
		/* Drop what the reader consumed. */
		str_t rest = STR_INIT;
		str_append(&rest, str_cstr(&k->in) + used, str_len(&k->in) - used);
		str_release(&k->in);
		k->in = rest;
		if (r == ATTR_DONE) {
			attr_msg_t *m = attr_reader_take(k->rd);
			handle(k, m);
			attr_msg_free(m);
			continue;
		}
		if (r == ATTR_ERROR) {
			log_warning("control connection: bad request: %s; "
			    "closing it", attr_reader_error(k->rd));
			str_reset(&k->in);
			k->eof = true;
		}
		break;
	}
	conn_update(k);
	if (k->eof && k->waiting == NULL && k->outpos >= str_len(&k->out))
		conn_close(k);
}

static void conn_event(int fd, int events, void *ctx)
{
	qc_conn_t *k = ctx;
	char buf[16384];
	ssize_t n;

	if (events & EVENT_WRITE) {
		while (k->outpos < str_len(&k->out)) {
			n = send(fd, str_cstr(&k->out) + k->outpos,
			    str_len(&k->out) - k->outpos, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n <= 0) {
				conn_close(k);	/* the client went away */
				return;
			}
			k->outpos += (size_t)n;
		}
		if (k->outpos >= str_len(&k->out)) {
			str_reset(&k->out);
			k->outpos = 0;
		}
	}
	if ((events & EVENT_READ) && k->waiting == NULL) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		if (n <= 0) {
			k->eof = true;
		} else {
			str_append(&k->in, buf, (size_t)n);
		}
	}
	conn_process(k);
}

static void conn_idle(void *ctx)
{
	qc_conn_t *k = ctx;

	conn_close(k);
}

static void conn_close(qc_conn_t *k)
{
	qmgr_control_t *c = k->c;

	if (k->waiting != NULL) {
		/* Its pending actions carry on without a listener. */
		list_node_t *n;
		list_foreach(n, &c->pending) {
			qc_pending_t *p = list_entry(n, qc_pending_t, node);
			if (p->req == k->waiting)
				p->req = NULL;
		}
		event_timer_cancel(&k->waiting->deadline);
		for (size_t i = 0; i < k->waiting->n; i++)
			free(k->waiting->res[i].reason);
		free(k->waiting->res);
		free(k->waiting);
		k->waiting = NULL;
	}
	event_timer_cancel(&k->idle);
	(void)event_remove(c->loop, k->fd);
	close(k->fd);
	attr_reader_free(k->rd);
	str_release(&k->in);
	str_release(&k->out);
	list_remove(&k->node);
	c->nconns--;
	free(k);
}

int qmgr_control_attach(qmgr_control_t *c, int fd)
{
	qc_conn_t *k;

	if (c->nconns >= c->conf.max_clients) {
		log_warning("control channel: more than %d clients; refusing one",
		    c->conf.max_clients);
		return -1;
	}
	(void)sock_set_nonblock(fd, true);
	k = xcalloc(1, sizeof(*k));
	k->c = c;
	k->fd = fd;
	k->rd = attr_reader_new(NULL, ATTR_READ_LENIENT, &qc_req_limits);
	event_timer_init(&k->idle, conn_idle, k);
	if (event_add(c->loop, fd, EVENT_READ, conn_event, k) < 0) {
		log_warning("control channel: event_add: %s", strerror(errno));
		attr_reader_free(k->rd);
		free(k);
		return -1;
	}
	list_append(&c->conns, &k->node);
	c->nconns++;
	event_timer_start(c->loop, &k->idle, c->conf.idle_timeout_ms);
	return 0;
}

static void accept_event(int fd, int events, void *ctx)
{
	qmgr_control_t *c = ctx;
	uid_t uid;
	int cfd;

	(void)events;
	if ((cfd = sock_accept(fd, NULL, NULL)) < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_warning("control channel: accept: %s", strerror(errno));
		return;
	}
	/* The socket sits in the private directory already; this also
	 * keeps out a process that got hold of it some other way. */
	if (sock_peer_uid(cfd, &uid) < 0) {
		log_warning("control channel: peer credentials: %s; closing",
		    strerror(errno));
		close(cfd);
		return;
	}
	if (uid != 0 && uid != geteuid()) {
		log_warning("control channel: connection from uid %ld refused "
		    "(only root and uid %ld may use it)", (long)uid,
		    (long)geteuid());
		close(cfd);
		return;
	}
	if (qmgr_control_attach(c, cfd) < 0)
		close(cfd);
}

/* ---- Set-up ------------------------------------------------------------ */

qmgr_control_t *qmgr_control_new(event_loop_t *loop, sched_t *s,
    const queue_layout_t *ql, const qmgr_control_ops_t *ops,
    const qmgr_control_conf_t *conf, str_t *err)
{
	qmgr_control_t *c;
	const char *path;

	if (ops == NULL || ops->now == NULL) {
		str_setf(err, "qmgr_control_new: no clock");
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->loop = loop;
	c->s = s;
	c->ql = ql;
	c->ops = *ops;
	if (conf)
		c->conf = *conf;
	if (c->conf.max_clients <= 0)
		c->conf.max_clients = 16;
	if (c->conf.idle_timeout_ms <= 0)
		c->conf.idle_timeout_ms = 60000;
	if (c->conf.poll_ms <= 0)
		c->conf.poll_ms = 50;
	path = c->conf.path ? c->conf.path : QMGR_CONTROL_PATH;
	c->conf.path = NULL;
	if (c->conf.state_path == NULL)
		c->state_path = xstrdup(QMGR_CONTROL_STATE);
	else if (*c->conf.state_path)
		c->state_path = xstrdup(c->conf.state_path);
	c->conf.state_path = NULL;
	list_init(&c->conns);
	list_init(&c->pending);
	event_timer_init(&c->poll, poll_pending, c);
	c->reasons = htable_new(8, HTABLE_FLAG_NOCASE);
	c->lfd = -1;
	if (*path) {
		if ((c->lfd = sock_unix_listen(path, 16, 0600)) < 0) {
			str_setf(err, "control channel %s: %s", path, strerror(errno));
			goto fail;
		}
		(void)sock_set_nonblock(c->lfd, true);
		if (event_add(loop, c->lfd, EVENT_READ, accept_event, c) < 0) {
			str_setf(err, "control channel: event_add: %s",
			    strerror(errno));
			goto fail;
		}
	}
	state_load(c);
	return c;
fail:
	if (c->lfd >= 0)
		close(c->lfd);
	htable_free(c->reasons, free);
	free(c->state_path);
	free(c);
	return NULL;
}

qmgr_control_t *qmgr_control_start(event_loop_t *loop, sched_t *s,
    const queue_layout_t *ql, const qmgr_control_ops_t *ops)
{
	str_t err = STR_INIT;
	qmgr_control_t *c = qmgr_control_new(loop, s, ql, ops, NULL, &err);

	if (c == NULL)
		log_warning("%s; postq -S/-D and postsuper -x/-P/-U will not "
		    "work, and postsuper leaves the active queue alone",
		    str_cstr(&err));
	str_release(&err);
	return c;
}

void qmgr_control_free(qmgr_control_t *c)
{
	list_node_t *n;

	if (c == NULL)
		return;
	while ((n = list_first(&c->conns)) != NULL)
		conn_close(list_entry(n, qc_conn_t, node));
	while ((n = list_first(&c->pending)) != NULL)
		pending_free(c, list_entry(n, qc_pending_t, node));
	event_timer_cancel(&c->poll);
	if (c->lfd >= 0) {
		(void)event_remove(c->loop, c->lfd);
		close(c->lfd);
	}
	htable_free(c->reasons, free);
	free(c->state_path);
	free(c);
}

size_t qmgr_control_pending(const qmgr_control_t *c)
{
	return c->npending;
}
