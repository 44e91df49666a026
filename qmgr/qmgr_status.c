/* qmgr's control channel: the "status" and "dsc" replies (postq -S and
 * -D), built from the scheduler core's walkers (sched.h) and the
 * destination status cache (dsc.h); see qmgr_control_int.h. */
#include <math.h>
#include <stdlib.h>
#include "mem.h"
#include "qmgr_control_int.h"

/* Reply sizes: at most this many destination queues, jobs per transport
 * and DSC entries in a reply (the reply says how many were left out). */
#define QMGR_STATUS_MAX_QUEUES	5000
#define QMGR_STATUS_MAX_JOBS	1000
#define QMGR_STATUS_DEF_JOBS	20
#define QMGR_STATUS_MAX_DSC	10000
#define QMGR_STATUS_DSC		1000

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

void qmgr_status_reply(qmgr_control_t *c, const attr_msg_t *m, str_t *out)
{
	sched_stats_t st;
	vec_t tv = { NULL, 0, 0, sizeof(sched_transport_info_t), 1000, 0 };
	vec_t qv = { NULL, 0, 0, sizeof(sched_queue_info_t),
	    QMGR_STATUS_MAX_QUEUES, 0 };
	vec_t hv = { NULL, 0, 0, sizeof(sched_hold_info_t), 100000, 0 };
	double now = qmgr_control_now(c);
	int32_t maxjobs = QMGR_STATUS_DEF_JOBS, maxdsc = QMGR_STATUS_DSC;

	if (attr_get_int(m, "max_jobs", &maxjobs)) {
		if (maxjobs < 0)
			maxjobs = 0;
		if (maxjobs > QMGR_STATUS_MAX_JOBS)
			maxjobs = QMGR_STATUS_MAX_JOBS;
	}
	if (attr_get_int(m, "max_dsc", &maxdsc)) {
		if (maxdsc < 0)
			maxdsc = 0;
		if (maxdsc > QMGR_STATUS_DSC)
			maxdsc = QMGR_STATUS_DSC;
	}
	sched_get_stats(c->s, &st);
	qmgr_control_reply_status(out, QMGR_CLNT_OK, NULL);
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

void qmgr_status_dsc(qmgr_control_t *c, str_t *out)
{
	double now = qmgr_control_now(c);

	qmgr_control_reply_status(out, QMGR_CLNT_OK, NULL);
	attr_put_long(out, "time", secs(now));
	put_dsc_entries(out, c, QMGR_STATUS_MAX_DSC, now);
	attr_put_end(out);
}
