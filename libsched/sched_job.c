/* Jobs, the per-transport scheduler job list (doc/scheduling-rules.md
 * §2.2, §2.3), preemption (§3) and blockers (§2.4).
 *
 * The job list of a transport is FIFO by the time each message entered
 * the active queue, except that a job that preempts another is moved in
 * front of it.  Preemption forms a tree: a job's parent is the job it
 * preempted, a job may have several children (it was preempted by one
 * job, which then blocked, and by another), and when a parent leaves the
 * list its children are adopted by its own parent (or become orphans).
 * stack_level is the depth in that tree; -1 means "not on the list".
 *
 * Blockers (§2.4) are kept out of the way rather than skipped: the
 * jobs that are not blocked sit in a heap ordered by list position
 * (labels), so selection takes the first of them in O(log n), and each
 * queue keeps a heap of the blocked jobs' peers waiting for it, so a
 * queue that can take c more deliveries wakes the first c of them
 * instead of every blocker of the transport. */
#include <math.h>
#include <stdint.h>
#include "sched_int.h"
#include "log.h"
#include "mem.h"

static sched_job_t *job_of(list_node_t *n)
{
	return n ? list_entry(n, sched_job_t, tnode) : NULL;
}

static sched_job_t *job_next(const sched_job_t *j)
{
	return job_of(list_next(&j->t->jobs, &j->tnode));
}

static sched_job_t *job_prev(const sched_job_t *j)
{
	return job_of(list_prev(&j->t->jobs, &j->tnode));
}

static sched_job_t *job_first(const sched_transport_t *t)
{
	return job_of(list_first(&t->jobs));
}

static uint64_t job_key(const void *x)
{
	return ((const sched_job_t *)x)->label;
}

static void job_setidx(void *x, size_t i)
{
	((sched_job_t *)x)->ridx = i;
}

static uint64_t peer_key(const void *x)
{
	return ((const sched_peer_t *)x)->j->label;
}

static void peer_setidx(void *x, size_t i)
{
	((sched_peer_t *)x)->bidx = i;
}

void sched_transport_heaps_init(sched_transport_t *t)
{
	sched_heap_init(&t->runq, job_key, job_setidx);
}

void sched_queue_heaps_init(sched_queue_t *q)
{
	sched_heap_init(&q->blocked, peer_key, peer_setidx);
}

/* Labels follow the job list order (order maintenance): a new position
 * takes the middle of the gap between its neighbours; when there is no
 * gap, a window around it, doubled until its labels are sparse enough,
 * is spread evenly.  Relabelling keeps the order, so the heaps stay
 * valid. */
#define LABEL_GAP	((uint64_t)1 << 32)

static void job_relabel(sched_job_t *j)
{
	sched_job_t *first = j, *last = j;
	uint64_t count = 1;

	for (;;) {
		sched_job_t *before = job_prev(first), *after = job_next(last);
		uint64_t lo = before ? before->label : 0;
		uint64_t hi = after ? after->label : UINT64_MAX;
		uint64_t step = (hi - lo) / (count + 1);

		if (step >= 2 * count || (before == NULL && after == NULL && step >= 1)) {
			uint64_t l = lo;
			for (sched_job_t *x = first;; x = job_next(x)) {
				l += step;
				x->label = l;
				if (x == last)
					break;
			}
			return;
		}
		for (uint64_t k = count; k > 0; k--) {
			if ((k & 1) && job_prev(first))
				first = job_prev(first);
			else if (job_next(last))
				last = job_next(last);
			else if (job_prev(first))
				first = job_prev(first);
			else
				break;
			count++;
		}
	}
}

static void job_label(sched_job_t *j)
{
	sched_job_t *a = job_prev(j), *b = job_next(j);
	uint64_t lo = a ? a->label : 0;

	if (b == NULL) {
		if (lo <= UINT64_MAX - LABEL_GAP) {
			j->label = lo + LABEL_GAP;
			return;
		}
	} else if (b->label - lo >= 2) {
		j->label = lo + (b->label - lo) / 2;
		return;
	}
	job_relabel(j);
}

/* The job's position changed: fix its place in the heaps. */
static void job_rekey(sched_job_t *j)
{
	list_node_t *n;

	if (j->ridx != SIZE_MAX)
		sched_heap_update(&j->t->runq, j->ridx);
	list_foreach(n, &j->ready) {
		sched_peer_t *p = list_entry(n, sched_peer_t, rnode);
		if (p->bidx != SIZE_MAX)
			sched_heap_update(&p->q->blocked, p->bidx);
	}
}

/* doc/scheduling-rules.md §2.4: a job whose destinations can take
 * nothing leaves the run
 * queue; its peers wait in their queues' heaps. */
static void job_block(sched_job_t *j)
{
	sched_transport_t *t = j->t;
	list_node_t *n;

	j->blocked = true;
	if (j->ridx != SIZE_MAX)
		sched_heap_remove(&t->runq, j->ridx);
	list_foreach(n, &j->ready) {
		sched_peer_t *p = list_entry(n, sched_peer_t, rnode);
		if (p->bidx == SIZE_MAX)
			sched_heap_push(&p->q->blocked, p);
	}
	if (t->cand == j)
		RESET_CAND_CACHE(t);
}

/* It may run again: back in the run queue, and (as Postfix) the next
 * selection starts from the head of the list. */
static void job_unblock(sched_job_t *j)
{
	sched_transport_t *t = j->t;

	j->blocked = false;
	if (j->stack_level >= 0 && j->ridx == SIZE_MAX)
		sched_heap_push(&t->runq, j);
	t->current = job_first(t);
	RESET_CAND_CACHE(t);
}

/* A peer has no pending entries any more: it waits for no queue. */
void sched_peer_todo_gone(sched_peer_t *p)
{
	if (p->bidx != SIZE_MAX)
		sched_heap_remove(&p->q->blocked, p->bidx);
}

/* Put a job on its transport's list by queue time.  Normally the job is
 * the youngest and the walk stops at once; a job revived after it ran out
 * of in-memory recipients may walk back over younger jobs.  Jobs that
 * preempted someone are not in time order, so only jobs without a parent
 * serve as anchors (doc/scheduling-rules.md §2.2). */
static void job_link(sched_job_t *j)
{
	sched_transport_t *t = j->t;
	list_node_t *n;
	bool passed_current = false;

	for (n = t->jobs.prev; n != &t->jobs; n = n->prev) {
		sched_job_t *p = job_of(n);
		if (p->parent == NULL && j->m->queued - p->m->queued >= 0)
			break;
		if (p == t->current)
			passed_current = true;
	}
	list_insert_after(n, &j->tnode);
	job_label(j);
	j->stack_level = 0;
	j->blocked = false;
	sched_heap_push(&t->runq, j);
	t->njobs++;
	/* An older job than the current one starts the next selection. */
	if (t->current == NULL || passed_current)
		t->current = j;
	RESET_CAND_CACHE(t);
}

/* Children of a job leaving the tree go to its parent (adoption), or
 * become orphans.  Their stack levels stay: a child adopted by its
 * grandparent does not settle slots with it (see job_pop;
 * doc/scheduling-rules.md §3.6). */
static void job_parent_gone(sched_job_t *j, sched_job_t *parent)
{
	list_node_t *n;
	while ((n = list_first(&j->children)) != NULL) {
		sched_job_t *c = list_entry(n, sched_job_t, sibling);
		list_remove(&c->sibling);
		c->parent = parent;
		if (parent)
			list_append(&parent->children, &c->sibling);
	}
}

/* Take a job out of the preemption tree, back to level 0 (it stays where
 * it is on the job list: the caller moves or unlinks it), settling with
 * its parent (doc/scheduling-rules.md §3.6). */
static void job_pop(sched_job_t *j)
{
	sched_transport_t *t = j->t;
	sched_job_t *parent = j->parent;

	/* Settle with the job it preempted: it was charged the expected
	 * number of slots at preemption time, slots_used counts the
	 * difference since.  Only the original parent settles: an adoptive
	 * one never paid. */
	if (parent && j->stack_level == parent->stack_level + 1)
		parent->slots_available -= j->slots_used * t->p.delivery_slot_cost;
	if (parent) {
		list_remove(&j->sibling);
		j->parent = NULL;
	}
	job_parent_gone(j, parent);
	j->stack_level = 0;
	RESET_CAND_CACHE(t);
}

static void job_unlink(sched_job_t *j)
{
	sched_transport_t *t = j->t;

	if (j->stack_level != 0 || j->parent)
		log_panic("sched: unlink job %s: still on the preemption stack",
		    j->m->id);
	job_parent_gone(j, NULL);
	if (t->current == j)
		t->current = job_next(j);
	if (j->ridx != SIZE_MAX)
		sched_heap_remove(&t->runq, j->ridx);
	{
		list_node_t *x;
		list_foreach(x, &j->ready)
			sched_peer_todo_gone(list_entry(x, sched_peer_t, rnode));
	}
	list_remove(&j->tnode);
	t->njobs--;
	j->stack_level = -1;
	RESET_CAND_CACHE(t);
}

/* Off the job list: no selectable entries left.  The job stays with its
 * message (slot counters intact) and comes back when it gets entries
 * (doc/scheduling-rules.md §2.2). */
void sched_job_retire(sched_job_t *j)
{
	if (j->stack_level > 0)
		job_pop(j);
	if (j->stack_level == 0)
		job_unlink(j);
}

void sched_job_free(sched_job_t *j)
{
	sched_job_retire(j);
	list_remove(&j->mnode);
	htable_free(j->peers, NULL);	/* peers are freed when they empty */
	free(j);
}

sched_job_t *sched_job_obtain(sched_msg_t *m, sched_transport_t *t)
{
	sched_job_t *j = NULL;
	list_node_t *n;

	list_foreach(n, &m->jobs) {
		sched_job_t *x = list_entry(n, sched_job_t, mnode);
		if (x->t == t) {
			j = x;
			break;
		}
	}
	if (j == NULL) {
		j = xcalloc(1, sizeof(*j));
		j->m = m;
		j->t = t;
		j->stack_level = -1;
		j->ridx = SIZE_MAX;
		list_init(&j->children);
		list_init(&j->ready);
		list_append(&m->jobs, &j->mnode);
	}
	if (j->stack_level < 0)
		job_link(j);
	/* New entries change the job's estimates and may end its blocking;
	 * selection then restarts from the head to find it. */
	RESET_CAND_CACHE(t);
	if (j->blocked)
		job_unblock(j);
	if (t->current == NULL)
		t->current = job_first(t);
	return j;
}

/* Wake up to n blocked jobs waiting for q, first in list order.  (Postfix
 * wakes every blocker of the transport and rescans the list.)  Peers of
 * jobs that run again are dropped on the way (doc/scheduling-rules.md
 * §2.4). */
void sched_job_wake(sched_queue_t *q, int n)
{
	while (n > 0 && q->blocked.n > 0) {
		sched_peer_t *p = sched_heap_min(&q->blocked);
		sched_heap_remove(&q->blocked, 0);
		if (p->j->blocked) {
			job_unblock(p->j);
			n--;
		}
	}
}

/* doc/scheduling-rules.md §3.1. */
static void count_slots(sched_job_t *j)
{
	sched_transport_t *t = j->t;

	/* One more slot towards preempting this job; and slots_used tracks
	 * the difference to the expected cost of a preempting job. */
	j->slots_available++;
	j->slots_used++;
	if (j != t->cand_current)
		RESET_CAND_CACHE(t);
}

/* Could the job take a delivery now?  A blocked job that was not woken
 * yet (queues wake only as many jobs as they can take) may: Postfix
 * re-examines every blocker then, so for preemption it counts as not
 * blocked (doc/scheduling-rules.md §2.4). */
static bool job_may_run(const sched_job_t *j, double now)
{
	list_node_t *n;

	if (!j->blocked)
		return true;
	list_foreach(n, &j->ready) {
		sched_peer_t *p = list_entry(n, sched_peer_t, rnode);
		if (sched_queue_may_start(p->q, now))
			return true;
	}
	return false;
}

/* doc/scheduling-rules.md §3.3. */
static bool candidate_ok(const sched_job_t *j, long max_slots, double now)
{
	long needed;

	if (j->stack_level < 0 || !list_empty(&j->children) || !job_may_run(j, now))
		return false;
	needed = MAX_ENTRIES(j) - j->selected_entries;
	return needed > 0 && needed <= max_slots;
}

/* The best job to preempt 'current': among the jobs after it that are not
 * blocked, have not been preempted themselves, and whose remaining
 * entries fit in the slots current can still accumulate, the one with the
 * highest (now - queued + 1) / entries (doc/scheduling-rules.md §3.3;
 * the cache: §3.7). */
static sched_job_t *job_candidate(sched_job_t *current, double now)
{
	sched_transport_t *t = current->t;
	long cost = t->p.delivery_slot_cost;
	long max_slots;
	sched_job_t *j, *best = NULL;
	double best_score = 0;
	int scanned = 0;

	max_slots = (MIN_ENTRIES(current) - current->selected_entries
	    + current->slots_available) / cost;
	if (t->cand_valid && t->cand_current == current
	    && (t->cand == NULL || (now - t->cand_time < SCHED_CANDIDATE_CACHE_TTL
		&& candidate_ok(t->cand, max_slots, now))))
		return t->cand;

	if (max_slots > 0) {
		for (j = job_next(current); j && scanned < SCHED_CANDIDATE_SCAN_MAX;
		    j = job_next(j), scanned++) {
			long total, needed;
			double delay;

			if (!list_empty(&j->children) || !job_may_run(j, now))
				continue;
			total = MAX_ENTRIES(j);
			needed = total - j->selected_entries;
			delay = now - j->m->queued + 1;
			if (needed > 0 && needed <= max_slots) {
				double score = delay / (double)total;
				if (score > best_score) {
					best_score = score;
					best = j;
				}
			}
			/* Level-0 jobs further on are younger: none can
			 * beat a score this job's age cannot reach. */
			if (delay <= best_score && j->stack_level == 0)
				break;
		}
	}
	t->cand_valid = true;
	t->cand_current = current;
	t->cand = best;
	t->cand_time = now;
	return best;
}

/* Maybe replace the current job by a smaller one (doc/scheduling-rules.md
 * §3.2, §3.4, §3.5). */
static sched_job_t *job_preempt(sched_job_t *current, double now)
{
	sched_transport_t *t = current->t;
	const sched_tparams_t *p = &t->p;
	sched_job_t *j;
	long needed;

	/* No slots yet (the count goes negative after a loan), or a job that
	 * can never accumulate the minimum: nothing to do. */
	if (current->slots_available <= 0
	    || MAX_ENTRIES(current) < (long)p->minimum_delivery_slots * p->delivery_slot_cost)
		return current;
	if ((j = job_candidate(current, now)) == NULL)
		return current;
	if (j == current || !list_empty(&j->children) || j->stack_level < 0)
		log_panic("sched: bad preemption candidate %s for %s",
		    j->m->id, current->m->id);

	/* Enough slots, counting the loan and the discount?  (Integer
	 * division of the slots, as Postfix.)  The loan only lets the
	 * preemption happen earlier: the full price is charged below. */
	needed = MAX_ENTRIES(j) - j->selected_entries;
	if (current->slots_available / p->delivery_slot_cost + p->delivery_slot_loan
	    < needed * (100 - p->delivery_slot_discount) / 100.0)
		return current;

	if (j->blocked)
		job_unblock(j);
	/* A leaf child of another preemption goes over to this one. */
	if (j->stack_level > 0)
		job_pop(j);
	list_remove(&j->tnode);
	list_insert_before(&current->tnode, &j->tnode);
	job_label(j);
	job_rekey(j);
	j->parent = current;
	list_append(&current->children, &j->sibling);
	j->stack_level = current->stack_level + 1;
	t->current = j;
	RESET_CAND_CACHE(t);

	/* One job can be preempted by several at once: charge the expected
	 * cost now; job_pop settles the difference. */
	current->slots_available -= needed * p->delivery_slot_cost;
	j->slots_used = -needed;
	t->preemptions++;
	t->s->preemptions++;
	if (log_verbose)
		log_debug("sched: %s: %s preempted by %s, level %d",
		    t->name, current->m->id, j->m->id, j->stack_level);
	return j;
}

/* Round-robin over the job's peers that have pending entries
 * (doc/scheduling-rules.md §2.3). */
static sched_peer_t *peer_select(sched_job_t *j, double now)
{
	list_node_t *n, *tmp;

	list_foreach_safe(n, tmp, &j->ready) {
		sched_peer_t *p = list_entry(n, sched_peer_t, rnode);
		if (sched_queue_can_start(p->q, now)) {
			list_remove(&p->rnode);
			list_append(&j->ready, &p->rnode);
			return p;
		}
	}
	return NULL;
}

static sched_peer_t *job_peer_select(sched_job_t *j, double now)
{
	sched_msg_t *m = j->m;
	sched_peer_t *p;

	/* Read more of a partly read message while selecting it, when
	 * enough room (or time) has come, so its pipeline does not run dry
	 * (doc/scheduling-rules.md §8.4). */
	if (m->unread > 0 && !m->reading)
		sched_msg_refill_check(m, j->t, now);
	if (JOB_HAS_TODO(j) && (p = peer_select(j, now)) != NULL)
		return p;
	/* Nothing in memory for this job at all: read what room allows
	 * (Postfix also reads when the job is merely blocked, which breaks
	 * batches into tiny reads; a blocked job waits for refill_due). */
	if (!JOB_HAS_TODO(j) && m->unread > 0 && !m->reading
	    && sched_room(m, j->t) > 0) {
		sched_msg_read(m, now);
		if (JOB_HAS_TODO(j))
			return peer_select(j, now);
	}
	return NULL;
}

static sched_entry_t *entry_select(sched_peer_t *p, double now)
{
	sched_entry_t *e = list_entry(list_first(&p->todo), sched_entry_t, pnode);
	sched_queue_t *q = p->q;
	sched_job_t *j = p->j;

	sched_entry_take_todo(e);
	p->nbusy++;
	list_append(&q->busy, &e->qnode);
	q->nbusy++;
	j->t->busy++;
	e->busy = true;
	sched_queue_started(q, e, now);
	return e;
}

/* One transport's selection (doc/scheduling-rules.md §2.3). */
sched_entry_t *sched_job_entry_select(sched_transport_t *t, double now)
{
	sched_job_t *j;

	if (t->runq.n == 0) {
		t->current = NULL;
		return NULL;
	}
	if (t->current == NULL)
		t->current = job_first(t);
	if (t->p.delivery_slot_cost >= 2)
		job_preempt(t->current, now);

	/* The first job on the list that is not a blocker: every job before
	 * the current one is a blocker (sched_check verifies it), so this is
	 * the first non-blocker from the current job on, and a preempting
	 * job (just in front of the one it preempted) comes first. */
	while ((j = sched_heap_min(&t->runq)) != NULL) {
		sched_peer_t *p;
		if ((p = job_peer_select(j, now)) != NULL) {
			sched_entry_t *e = entry_select(p, now);
			count_slots(j);
			t->current = j;
			/* Fully selected and fully read: off the list now.
			 * (A selected entry never returns to the todo list.) */
			if (!JOB_HAS_TODO(j) && j->m->unread == 0)
				sched_job_retire(j);
			return e;
		} else if (JOB_HAS_TODO(j)) {
			/* Every destination of the job is at its window:
			 * out of the way until one of them frees a slot. */
			job_block(j);
		} else {
			/* Stalled: nothing in memory to select (the rest of
			 * the message waits for room).  Off the list until
			 * more recipients are read. */
			sched_job_retire(j);
		}
	}
	/* Everything left is blocked; a queue that frees a slot wakes its
	 * first blocked jobs (sched_job_wake). */
	t->current = NULL;
	return NULL;
}
