/* Destination queues: concurrency feedback (feedback.h), dead
 * destinations and the destination status cache (dsc.h), the rate-delay
 * timer heap, and the blocker wake-up (doc/scheduling-rules.md §4, §5,
 * §9, §2.4). */
#include <math.h>
#include <stdint.h>
#include "sched_int.h"
#include "log.h"
#include "mem.h"

sched_queue_t *sched_queue_find(sched_transport_t *t, const char *nexthop)
{
	return htable_get(t->queues, nexthop);
}

sched_queue_t *sched_queue_create(sched_transport_t *t, const char *nexthop,
    double now)
{
	sched_t *s = t->s;
	sched_queue_t *q = xcalloc(1, sizeof(*q));
	const dsc_entry_t *de;
	str_t name = STR_INIT;

	q->t = t;
	q->nexthop = xstrdup(nexthop);
	str_setf(&name, "%s:%s", t->name, nexthop);
	q->name = str_steal(&name);
	feedback_init(&q->fb, &t->p.conc, q->name);
	list_init(&q->todo);
	list_init(&q->busy);
	sched_queue_heaps_init(q);
	q->heap_idx = SIZE_MAX;
	htable_add(t->queues, nexthop, q);
	q->lim = t->p.limits;
	if (t->p.dest_limits && s->drv.dest_limits)
		s->drv.dest_limits(s->drv.ctx, t->name, nexthop, &q->lim);
	if (sched_limits_any(&q->lim)) {
		q->limited = true;
		tb_init(&q->msg_tb, q->lim.msg_rate, q->lim.msg_burst, now);
		tb_init(&q->conn_tb, q->lim.conn_rate, q->lim.conn_burst, now);
	}

	/* A destination the DSC knows starts dead: suspended until its
	 * retry time, then one probe decides. */
	if (s->dsc && (de = dsc_peek(s->dsc, t->name, nexthop, NULL)) != NULL) {
		/* A probe whose queue is gone can never report: hand it out
		 * again. */
		if (de->state == DSC_STATE_PROBING)
			dsc_probe_abort(s->dsc, t->name, nexthop, NULL);
		q->dsc_known = true;
		feedback_kill(&q->fb, &t->p.conc);
		q->reason = xstrdup(de->reason ? de->reason : "unknown reason");
		if (de->retry_at > now) {
			q->suspended = true;
			q->retry_at = de->retry_at;
		}
	}
	return q;
}

void sched_queue_free(sched_queue_t *q)
{
	sched_transport_t *t = q->t;

	if (q->ntodo || q->nbusy)
		log_panic("sched: free queue %s with %zu/%zu entries", q->name,
		    q->ntodo, q->nbusy);
	sched_queue_wake_remove(t->s, q);
	sched_heap_free(&q->blocked);
	if (q->on_gc)
		list_remove(&q->gc_node);
	htable_delete(t->queues, q->nexthop);
	free(q->nexthop);
	free(q->name);
	free(q->reason);
	free(q);
}

void sched_queue_gc_mark(sched_queue_t *q)
{
	if (!q->on_gc) {
		q->on_gc = true;
		list_append(&q->t->s->gc, &q->gc_node);
	}
}

/* Suspension ends lazily at its retry time; the queue then stays dead
 * until the DSC hands out the probe (doc/scheduling-rules.md §5.2). */
bool sched_queue_suspended(sched_queue_t *q, double now)
{
	if (q->suspended && now >= q->retry_at)
		q->suspended = false;
	return q->suspended;
}

/* doc/scheduling-rules.md §9.2: a whole token in each bucket that has a
 * rate? */
static bool rate_ok(const sched_queue_t *q, double now)
{
	return (!(q->lim.msg_rate > 0) || tb_can_take(&q->msg_tb, now))
	    && (!(q->lim.conn_rate > 0) || tb_can_take(&q->conn_tb, now));
}

/* The latest of when(bucket) over the buckets in use, at least now. */
static double rate_latest(const sched_queue_t *q, double now,
    double (*when)(const tbucket_t *, double))
{
	double w = now, x;

	if (q->lim.msg_rate > 0 && (x = when(&q->msg_tb, now)) > w)
		w = x;
	if (q->lim.conn_rate > 0 && (x = when(&q->conn_tb, now)) > w)
		w = x;
	return w;
}

/* When the buckets allow the next delivery (now if they do). */
static double rate_next(const sched_queue_t *q, double now)
{
	return rate_latest(q, now, tb_next_token);
}

/* When the buckets are full again (now if they are). */
static double rate_full(const sched_queue_t *q, double now)
{
	return rate_latest(q, now, tb_full_time);
}

/* The wake-up a limited queue needs: the next token while it has
 * pending mail (and the rate delay, which must pass too), the time its
 * buckets are full while it has none (it is kept until then):
 * doc/scheduling-rules.md §9.3, §9.4. */
static void rate_arm(sched_queue_t *q, double now)
{
	const feedback_settings_t *set = &q->t->p.conc;
	double w, d;

	if (q->ntodo == 0 && q->nbusy == 0)
		w = rate_full(q, now);
	else {
		w = rate_next(q, now);
		if (set->rate_delay > 0
		    && (d = feedback_next_start_time(&q->fb, set)) > w)
			w = d;
	}
	if (w > now)
		sched_queue_wake_set(q->t->s, q, w);
}

/* From the gc: an empty limited queue is kept (not freed) while its
 * buckets are not full, else the limit would restart with every new
 * message; a timer brings it back to the gc when they are
 * (doc/scheduling-rules.md §9.4). */
bool sched_queue_rate_keep(sched_queue_t *q, double now)
{
	if (!q->limited || rate_full(q, now) <= now)
		return false;
	rate_arm(q, now);
	return true;
}

/* Is a DSC verdict needed before the next delivery? */
static bool needs_verdict(const sched_queue_t *q)
{
	return q->fb.dead || (q->dsc_known && !q->fb.probing);
}

/* The same test as sched_queue_can_start without its side effects. */
bool sched_queue_may_start(sched_queue_t *q, double now)
{
	const feedback_settings_t *set = &q->t->p.conc;

	if (sched_queue_suspended(q, now))
		return false;
	if (q->limited && !rate_ok(q, now))
		return false;
	if (needs_verdict(q))
		return q->fb.busy == 0 &&
		    now >= feedback_next_start_time(&q->fb, set);
	return feedback_can_start(&q->fb, set, now);
}

static void queue_suspend(sched_queue_t *q, const dsc_entry_t *de, double now)
{
	q->suspended = true;
	q->retry_at = de && de->retry_at > now ? de->retry_at : now;
	if (de && de->reason) {
		free(q->reason);
		q->reason = xstrdup(de->reason);
	}
	/* Its pending mail is deferred by sched_flush (not here: selection
	 * may be walking the lists this would change). */
	sched_queue_gc_mark(q);
}

/* May one more delivery start now?  For a dead or DSC-known queue this
 * asks the DSC, which may hand out the half-open probe: the caller must
 * then start a delivery (doc/scheduling-rules.md §4.8, §5.3, §6.4,
 * §9.3). */
bool sched_queue_can_start(sched_queue_t *q, double now)
{
	sched_transport_t *t = q->t;
	sched_t *s = t->s;
	const feedback_settings_t *set = &t->p.conc;

	if (sched_queue_suspended(q, now))
		return false;
	if (q->limited && !rate_ok(q, now)) {
		/* Held back: the mail waits here, the timer set when the
		 * last token was taken wakes its jobs. */
		q->rate_held++;
		return false;
	}
	if (needs_verdict(q)) {
		const dsc_entry_t *de = NULL;
		dsc_verdict_t v;

		if (q->fb.busy > 0 ||
		    now < feedback_next_start_time(&q->fb, set))
			return false;
		v = s->dsc ? dsc_check(s->dsc, t->name, q->nexthop, NULL, now, &de)
		    : DSC_DELIVER;
		if (v == DSC_SUSPENDED && de && de->state == DSC_STATE_PROBING) {
			/* A probe nobody can report (this queue has
			 * nothing in flight): take it over. */
			dsc_probe_abort(s->dsc, t->name, q->nexthop, NULL);
			v = dsc_check(s->dsc, t->name, q->nexthop, NULL, now, &de);
		}
		switch (v) {
		case DSC_PROBE:
			feedback_probe_start(&q->fb, set);
			break;
		case DSC_DELIVER:
			/* Not (or no longer) in the cache.  A queue that died
			 * without a cache entry (cache disabled or evicted)
			 * still gets a single probe first. */
			q->dsc_known = false;
			if (q->fb.dead)
				feedback_probe_start(&q->fb, set);
			break;
		case DSC_SUSPENDED:
		default:
			queue_suspend(q, de, now);
			return false;
		}
	}
	return feedback_can_start(&q->fb, set, now);
}

/* A delivery starts: busy, its tokens (doc/scheduling-rules.md §9.2),
 * the rate-delay timer (§4.8). */
void sched_queue_started(sched_queue_t *q, sched_entry_t *e, double now)
{
	const feedback_settings_t *set = &q->t->p.conc;

	e->fbt = feedback_delivery_start(&q->fb, set, now);
	e->probe = q->fb.probing;
	q->deliveries++;
	/* A rate-delayed destination needs a wake-up when it may start
	 * again: jobs may be blocked on it. */
	if (q->limited) {
		if (q->lim.msg_rate > 0)
			tb_take(&q->msg_tb, now);
		/* The conservative rule: every delivery may open a
		 * connection. */
		if (q->lim.conn_rate > 0)
			tb_take(&q->conn_tb, now);
		rate_arm(q, now);
	} else if (set->rate_delay > 0)
		sched_queue_wake_set(q->t->s, q,
		    feedback_next_start_time(&q->fb, set));
}

/* Take one pending (todo) entry off its peer's and its queue's todo
 * lists, counted as selected by its job (a peer left without todo
 * entries leaves the job's round and its queue's blocked heap). */
void sched_entry_take_todo(sched_entry_t *e)
{
	sched_peer_t *p = e->peer;
	sched_queue_t *q = p->q;
	sched_job_t *j = p->j;

	list_remove(&e->pnode);
	if (--p->ntodo == 0) {
		list_remove(&p->rnode);
		sched_peer_todo_gone(p);
	}
	list_remove(&e->qnode);
	q->ntodo--;
	j->ntodo--;
	j->selected_entries++;
}

/* Take one pending (todo) entry off its lists and report its recipients
 * deferred with text.  Counted as handled, so the job's estimates stay
 * right. */
void sched_entry_defer_todo(sched_entry_t *e, const char *text, double now)
{
	sched_entry_take_todo(e);
	sched_entry_finish(e, NULL, SCHED_RCPT_DEFERRED, text, now);
}

/* Defer every pending entry of a suspended queue, at once
 * (doc/scheduling-rules.md §5.2). */
void sched_queue_defer_todo(sched_queue_t *q, double now)
{
	sched_t *s = q->t->s;
	str_t text = STR_INIT;
	list_node_t *n;

	sched_defer_text(s, q->reason, &text);
	while ((n = list_first(&q->todo)) != NULL) {
		sched_entry_t *e = list_entry(n, sched_entry_t, qnode);
		q->suspended_rcpts += e->n;
		s->suspended_rcpts += e->n;
		sched_entry_defer_todo(e, str_cstr(&text), now);
	}
	str_release(&text);
}

/* The destination is dead: enter it in the DSC, defer its pending mail,
 * and defer new mail for it until the retry time (doc/scheduling-rules.md
 * §5.1; without the DSC §5.4). */
void sched_queue_kill(sched_queue_t *q, const char *reason, double now)
{
	sched_transport_t *t = q->t;
	sched_t *s = t->s;
	const dsc_entry_t *de = NULL;

	if (reason == NULL || *reason == 0)
		reason = "unknown reason";
	if (s->dsc)
		de = dsc_mark_dead(s->dsc, t->name, q->nexthop, NULL, reason, now);
	feedback_kill(&q->fb, &t->p.conc);
	q->dsc_known = true;
	q->suspended = true;
	q->retry_at = de ? de->retry_at
	    : now + backoff_delay(&s->p.backoff, 1, 0);
	free(q->reason);
	q->reason = xstrdup(reason);
	if (log_verbose)
		log_debug("sched: %s: dead until %.3f: %s", q->name, q->retry_at,
		    reason);
	sched_queue_defer_todo(q, now);
	sched_queue_gc_mark(q);
}

/* Back from the dead (probe or straggler succeeded, or admin clear:
 * doc/scheduling-rules.md §5.3, §5.5). */
void sched_queue_revive(sched_queue_t *q, double now)
{
	const feedback_settings_t *set = &q->t->p.conc;
	int busy = q->fb.busy;
	double last = q->fb.last_start;
	bool started = q->fb.started;

	(void)now;
	q->suspended = false;
	q->dsc_known = false;
	if (q->fb.dead || q->fb.probing) {
		feedback_init(&q->fb, set, q->name);
		q->fb.busy = busy;
		q->fb.last_start = last;
		q->fb.started = started;
	}
}

/* A delivery of q finished: feedback (doc/scheduling-rules.md §4.3), DSC
 * bookkeeping (§5.1, §5.3). */
void sched_queue_done(sched_queue_t *q, sched_entry_t *e, int flags,
    const char *reason, double now)
{
	sched_transport_t *t = q->t;
	sched_t *s = t->s;
	feedback_outcome_t outcome;
	int r;

	if (flags & SCHED_DLV_NO_FEEDBACK)
		outcome = FEEDBACK_NONE;
	else if (flags & SCHED_DLV_CONN_FAIL)
		outcome = FEEDBACK_NEGATIVE;
	else
		outcome = FEEDBACK_POSITIVE;
	if (outcome == FEEDBACK_NEGATIVE)
		q->conn_failures++;
	r = feedback_delivery_end(&q->fb, &t->p.conc, now, outcome, &e->fbt);

	if ((flags & SCHED_DLV_SITE_FAIL) || (r & FEEDBACK_DEAD)) {
		sched_queue_kill(q, reason, now);
	} else if (outcome == FEEDBACK_POSITIVE &&
	    (q->dsc_known || (r & FEEDBACK_REVIVED))) {
		if (s->dsc)
			dsc_probe_ok(s->dsc, t->name, q->nexthop, NULL);
		sched_queue_revive(q, now);
	} else if (outcome == FEEDBACK_NONE && e->probe) {
		/* No verdict: the next check hands out a new probe. */
		if (s->dsc)
			dsc_probe_abort(s->dsc, t->name, q->nexthop, NULL);
		feedback_kill(&q->fb, &t->p.conc);
		q->dsc_known = true;
	}
	sched_queue_check_unblock(q, now);
	sched_queue_gc_mark(q);
}

/* doc/scheduling-rules.md §2.4: a queue that blocked jobs and can take c
 * more deliveries (no more than its rate tokens, §9.3) wakes the first c
 * of them. */
void sched_queue_check_unblock(sched_queue_t *q, double now)
{
	int c;

	if (q->blocked.n == 0 || q->ntodo == 0 || !sched_queue_may_start(q, now))
		return;
	c = needs_verdict(q) ? 1
	    : feedback_effective_window(&q->fb, &q->t->p.conc) - q->fb.busy;
	if (q->limited) {
		/* No more jobs than there are tokens. */
		double tk = q->lim.msg_rate > 0 ? tb_tokens(&q->msg_tb, now) : c;
		if (q->lim.conn_rate > 0 && tb_tokens(&q->conn_tb, now) < tk)
			tk = tb_tokens(&q->conn_tb, now);
		if (tk + TB_EPSILON < c)
			c = (int)(tk + TB_EPSILON);
	}
	sched_job_wake(q, c > 0 ? c : 1);
}

/* The rate-delay heap: queues ordered by wake time. */
static void heap_swap(sched_t *s, size_t a, size_t b)
{
	sched_queue_t *x = s->heap[a];
	s->heap[a] = s->heap[b];
	s->heap[b] = x;
	s->heap[a]->heap_idx = a;
	s->heap[b]->heap_idx = b;
}

static void heap_up(sched_t *s, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (s->heap[p]->wake <= s->heap[i]->wake)
			break;
		heap_swap(s, p, i);
		i = p;
	}
}

static void heap_down(sched_t *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->nheap && s->heap[l]->wake < s->heap[m]->wake)
			m = l;
		if (r < s->nheap && s->heap[r]->wake < s->heap[m]->wake)
			m = r;
		if (m == i)
			break;
		heap_swap(s, i, m);
		i = m;
	}
}

void sched_queue_wake_remove(sched_t *s, sched_queue_t *q)
{
	size_t i = q->heap_idx;

	if (i == SIZE_MAX)
		return;
	q->heap_idx = SIZE_MAX;
	if (i != --s->nheap) {
		s->heap[i] = s->heap[s->nheap];
		s->heap[i]->heap_idx = i;
		heap_up(s, i);
		heap_down(s, s->heap[i]->heap_idx);
	}
}

void sched_queue_wake_set(sched_t *s, sched_queue_t *q, double when)
{
	sched_queue_wake_remove(s, q);
	if (s->nheap == s->capheap) {
		s->capheap = s->capheap ? 2 * s->capheap : 16;
		s->heap = xreallocarray(s->heap, s->capheap, sizeof(*s->heap));
	}
	q->wake = when;
	q->heap_idx = s->nheap;
	s->heap[s->nheap++] = q;
	heap_up(s, q->heap_idx);
}

void sched_run_timers(sched_t *s, double now)
{
	while (s->nheap > 0 && s->heap[0]->wake <= now) {
		sched_queue_t *q = s->heap[0];
		sched_queue_wake_remove(s, q);
		sched_queue_check_unblock(q, now);
		/* A timer that fired early (clock granularity) waits again
		 * for the exact time. */
		if (q->limited && q->ntodo > 0 && q->heap_idx == SIZE_MAX)
			rate_arm(q, now);
		sched_queue_gc_mark(q);
	}
}

double sched_next_wakeup(const sched_t *s)
{
	return s->nheap > 0 ? s->heap[0]->wake : INFINITY;
}
