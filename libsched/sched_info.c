/* Read-only inspection of the scheduler core (postq -S, qmgr-sim, tests)
 * and a full consistency check for tests. */
#include <stdlib.h>
#include <string.h>
#include "sched_int.h"

void sched_get_stats(const sched_t *s, sched_stats_t *st)
{
	memset(st, 0, sizeof(*st));
	st->messages = s->nmsgs;
	st->rcpt_in_core = s->rcpt_in_core;
	st->rcpt_peak = s->rcpt_peak;
	st->selected = s->selected;
	st->preemptions = s->preemptions;
	st->suspended_rcpts = s->suspended_rcpts;
	st->reads = s->reads;
	st->new_msgs = s->new_msgs;
	st->rcpt_sent = s->rcpt_sent;
	st->rcpt_bounced = s->rcpt_bounced;
	st->rcpt_deferred = s->rcpt_deferred;
}

static void transport_info(const sched_transport_t *t,
    sched_transport_info_t *ti)
{
	memset(ti, 0, sizeof(*ti));
	ti->name = t->name;
	ti->busy = t->busy;
	ti->process_limit = t->p.process_limit;
	ti->jobs = t->njobs;
	ti->queues = htable_size(t->queues);
	ti->rcpt_in_core = t->rcpt_in_core;
	ti->rcpt_peak = t->rcpt_peak;
	ti->rcpt_limit = t->p.recipient_limit;
	ti->extra_limit = t->p.extra_recipient_limit;
	ti->selected = t->selected;
	ti->preemptions = t->preemptions;
}

void sched_walk_transports(const sched_t *s,
    void (*fn)(const sched_transport_info_t *, void *), void *ctx)
{
	for (int i = 0; i < s->nt; i++) {
		sched_transport_info_t ti;
		transport_info(s->tv[i], &ti);
		fn(&ti, ctx);
	}
}

static void queue_info(const sched_queue_t *q, sched_queue_info_t *qi)
{
	memset(qi, 0, sizeof(*qi));
	qi->transport = q->t->name;
	qi->nexthop = q->nexthop;
	qi->window = q->fb.window;
	qi->busy = (int)q->nbusy;
	qi->success = q->fb.success;
	qi->failure = q->fb.failure;
	qi->fail_cohorts = q->fb.fail_cohorts;
	qi->todo_entries = q->ntodo;
	qi->busy_entries = q->nbusy;
	qi->dead = q->fb.dead;
	qi->suspended = q->suspended;
	qi->probing = q->fb.probing;
	qi->retry_at = q->suspended ? q->retry_at : 0;
	qi->reason = q->reason;
	qi->deliveries = q->deliveries;
	qi->conn_failures = q->conn_failures;
	qi->suspended_rcpts = q->suspended_rcpts;
	qi->limited = q->limited;
	qi->limits = q->lim;
	qi->msg_bucket = q->msg_tb;
	qi->conn_bucket = q->conn_tb;
	qi->rate_held = q->rate_held;
	qi->deferrals = q->deferrals;
}

struct qwalk {
	void (*fn)(const sched_queue_info_t *, void *);
	void *ctx;
};

static void queue_walk_one(htable_entry_t *he, void *v)
{
	struct qwalk *w = v;
	sched_queue_info_t qi;
	queue_info(he->value, &qi);
	w->fn(&qi, w->ctx);
}

void sched_walk_queues(const sched_t *s, const sched_transport_t *t,
    void (*fn)(const sched_queue_info_t *, void *), void *ctx)
{
	struct qwalk w = { fn, ctx };
	for (int i = 0; i < s->nt; i++)
		if (t == NULL || s->tv[i] == t)
			htable_walk(s->tv[i]->queues, queue_walk_one, &w);
}

bool sched_queue_lookup(const sched_t *s, const char *transport,
    const char *nexthop, sched_queue_info_t *out)
{
	sched_transport_t *t = htable_get(s->tbyname, transport);
	sched_queue_t *q;

	if (t == NULL || (q = htable_get(t->queues, nexthop)) == NULL)
		return false;
	queue_info(q, out);
	return true;
}

void sched_walk_jobs(const sched_t *s, const sched_transport_t *t,
    void (*fn)(const sched_job_info_t *, void *), void *ctx)
{
	list_node_t *n;

	(void)s;
	if (t == NULL)
		return;
	list_foreach(n, &t->jobs) {
		const sched_job_t *j = list_entry(n, sched_job_t, tnode);
		sched_job_info_t ji;
		memset(&ji, 0, sizeof(ji));
		ji.id = j->m->id;
		ji.msg_ctx = j->m->ctx;
		ji.stack_level = j->stack_level;
		ji.parent_id = j->parent ? j->parent->m->id : NULL;
		ji.children = list_count(&j->children);
		ji.slots_available = j->slots_available;
		ji.slots_used = j->slots_used;
		ji.read_entries = j->read_entries;
		ji.selected_entries = j->selected_entries;
		ji.todo_entries = j->ntodo;
		ji.unread = j->m->unread;
		ji.blocker = IS_BLOCKER(j);
		ji.current = t->current == j;
		fn(&ji, ctx);
	}
}

#define FAIL(...) do { if (err) str_setf(err, __VA_ARGS__); return false; } while (0)

static bool check_queue(const sched_queue_t *q, str_t *err)
{
	size_t n = 0;
	list_node_t *x;

	list_foreach(x, &q->todo) {
		const sched_entry_t *e = list_entry(x, sched_entry_t, qnode);
		if (e->busy || e->peer->q != q)
			FAIL("queue %s: bad todo entry", q->name);
		n++;
	}
	if (n != q->ntodo)
		FAIL("queue %s: todo count %zu, list %zu", q->name, q->ntodo, n);
	n = 0;
	list_foreach(x, &q->busy) {
		const sched_entry_t *e = list_entry(x, sched_entry_t, qnode);
		if (!e->busy || e->peer->q != q)
			FAIL("queue %s: bad busy entry", q->name);
		n++;
	}
	if (n != q->nbusy || (int)n != q->fb.busy)
		FAIL("queue %s: busy count %zu/%d, list %zu", q->name, q->nbusy,
		    q->fb.busy, n);
	if (q->suspended && q->ntodo > 0 && !q->on_gc)
		FAIL("queue %s: suspended with pending mail", q->name);
	for (size_t i = 0; i < q->blocked.n; i++) {
		const sched_peer_t *p = q->blocked.v[i];
		if (p->q != q || p->bidx != i || p->ntodo <= 0)
			FAIL("queue %s: bad blocked peer at %zu", q->name, i);
		if (i > 0 && p->j->label < ((const sched_peer_t *)
		    q->blocked.v[(i - 1) / 2])->j->label)
			FAIL("queue %s: blocked heap out of order", q->name);
	}
	return true;
}

struct jcheck {
	long todo, rcpt;
	bool ok;
	str_t *err;
};

static void peer_check(htable_entry_t *he, void *v)
{
	struct jcheck *c = v;
	const sched_peer_t *p = he->value;
	long n = 0;
	list_node_t *x;

	list_foreach(x, &p->todo) {
		const sched_entry_t *e = list_entry(x, sched_entry_t, pnode);
		if (e->peer != p || e->busy)
			c->ok = false;
		c->rcpt += (long)e->n;
		n++;
	}
	if (n != p->ntodo || (p->ntodo > 0) != list_linked(&p->rnode)
	    || (p->ntodo == 0 && p->nbusy == 0))
		c->ok = false;
	c->todo += n;
}

bool sched_check(const sched_t *s, str_t *err)
{
	long total_rcpt = 0;

	for (int i = 0; i < s->nt; i++) {
		const sched_transport_t *t = s->tv[i];
		size_t nq, nj = 0;
		htable_entry_t **qs = htable_list(t->queues, &nq);
		list_node_t *n;
		int busy = 0;
		bool cur_found = t->current == NULL;

		for (size_t k = 0; k < nq; k++) {
			const sched_queue_t *q = qs[k]->value;
			if (!check_queue(q, err)) {
				free(qs);
				return false;
			}
			busy += (int)q->nbusy;
		}
		free(qs);
		if (busy != t->busy)
			FAIL("transport %s: busy %d, queues say %d", t->name, t->busy, busy);
		size_t nrun = 0;
		const sched_job_t *prev = NULL;
		bool before_current = t->current != NULL;
		list_foreach(n, &t->jobs) {
			const sched_job_t *j = list_entry(n, sched_job_t, tnode);
			nj++;
			if (j == t->current) {
				cur_found = true;
				before_current = false;
			}
			if (j->stack_level < 0)
				FAIL("job %s on the list with level %d", j->m->id, j->stack_level);
			if (prev && prev->label >= j->label)
				FAIL("job %s: label not increasing", j->m->id);
			prev = j;
			if (j->blocked != (j->ridx == SIZE_MAX))
				FAIL("job %s: blocked %d but run queue index %zu",
				    j->m->id, j->blocked, j->ridx);
			if (!j->blocked) {
				nrun++;
				if (j->ridx >= t->runq.n || t->runq.v[j->ridx] != j)
					FAIL("job %s: not in the run queue", j->m->id);
				/* Selection takes the first runnable job as the
				 * first from the current one on. */
				if (before_current)
					FAIL("job %s: runnable before the current job %s",
					    j->m->id, t->current->m->id);
			}
			if (j->parent) {
				if (j->parent->t != t || j->parent->stack_level < 0)
					FAIL("job %s: bad parent", j->m->id);
			}
			list_node_t *c;
			list_foreach(c, &j->children) {
				const sched_job_t *ch = list_entry(c, sched_job_t, sibling);
				if (ch->parent != j)
					FAIL("job %s: child %s has another parent",
					    j->m->id, ch->m->id);
			}
		}
		if (nj != t->njobs)
			FAIL("transport %s: %zu jobs, list %zu", t->name, t->njobs, nj);
		if (nrun != t->runq.n)
			FAIL("transport %s: %zu runnable jobs, run queue %zu", t->name,
			    nrun, t->runq.n);
		for (size_t i = 1; i < t->runq.n; i++)
			if (((const sched_job_t *)t->runq.v[i])->label
			    < ((const sched_job_t *)t->runq.v[(i - 1) / 2])->label)
				FAIL("transport %s: run queue out of order", t->name);
		if (!cur_found)
			FAIL("transport %s: current job not on the list", t->name);
		if (t->rcpt_in_core < 0)
			FAIL("transport %s: negative recipient count", t->name);
	}
	{
		list_node_t *n;
		list_foreach(n, &s->msgs) {
			const sched_msg_t *m = list_entry(n, sched_msg_t, node);
			long mr = 0;
			list_node_t *jn;
			list_foreach(jn, &m->jobs) {
				const sched_job_t *j = list_entry(jn, sched_job_t, mnode);
				struct jcheck c = { 0, 0, true, err };
				if (j->peers)
					htable_walk(j->peers, peer_check, &c);
				if (!c.ok)
					FAIL("job %s/%s: bad peer", m->id, j->t->name);
				if (c.todo != j->ntodo)
					FAIL("job %s/%s: todo %ld, peers %ld", m->id,
					    j->t->name, j->ntodo, c.todo);
				if (j->selected_entries + j->ntodo > j->read_entries)
					FAIL("job %s: selected %ld + todo %ld > read %ld",
					    m->id, j->selected_entries, j->ntodo, j->read_entries);
				if (j->stack_level < 0 && j->parent)
					FAIL("job %s: unlinked with a parent", m->id);
				mr += j->rcpt_in_core;
			}
			if (mr != m->in_core)
				FAIL("message %s: in core %ld, jobs %ld", m->id, m->in_core, mr);
			total_rcpt += mr;
		}
	}
	if (total_rcpt != s->rcpt_in_core)
		FAIL("recipients in core %ld, messages say %ld", s->rcpt_in_core,
		    total_rcpt);
	return true;
}
