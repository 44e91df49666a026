/* Jobs, the per-transport scheduler job list, preemption (SCHEDULER.md
 * section 3) and blockers (section 5).
 *
 * The job list of a transport is FIFO by the time each message entered
 * the active queue, except that a job that preempts another is moved in
 * front of it.  Preemption forms a tree: a job's parent is the job it
 * preempted, a job may have several children (it was preempted by one
 * job, which then blocked, and by another), and when a parent leaves the
 * list its children are adopted by its own parent (or become orphans).
 * stack_level is the depth in that tree; -1 means "not on the list". */
#include <math.h>
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

static sched_job_t *job_first(const sched_transport_t *t)
{
	return job_of(list_first(&t->jobs));
}

/* Put a job on its transport's list by queue time.  Normally the job is
 * the youngest and the walk stops at once; a job revived after it ran out
 * of in-memory recipients may walk back over younger jobs.  Jobs that
 * preempted someone are not in time order, so only jobs without a parent
 * serve as anchors. */
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
	j->stack_level = 0;
	t->njobs++;
	/* An older job than the current one starts the next selection. */
	if (t->current == NULL || passed_current)
		t->current = j;
	RESET_CAND_CACHE(t);
}

/* Children of a job leaving the tree go to its parent (adoption), or
 * become orphans.  Their stack levels stay: a child adopted by its
 * grandparent does not settle slots with it (see job_pop). */
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
 * it is on the job list: the caller moves or unlinks it). */
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
	list_remove(&j->tnode);
	t->njobs--;
	j->stack_level = -1;
	RESET_CAND_CACHE(t);
}

/* Off the job list: no selectable entries left.  The job stays with its
 * message (slot counters intact) and comes back when it gets entries. */
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
		list_init(&j->children);
		list_init(&j->ready);
		list_append(&m->jobs, &j->mnode);
	}
	if (j->stack_level < 0)
		job_link(j);
	/* New entries change the job's estimates and may end its blocking;
	 * selection then restarts from the head to find it. */
	RESET_CAND_CACHE(t);
	if (IS_BLOCKER(j)) {
		j->blocker_tag = 0;
		t->current = job_first(t);
	}
	if (t->current == NULL)
		t->current = job_first(t);
	return j;
}

/* A queue that blocked jobs can take more: every blocker of the
 * transport is reconsidered (one tag change, O(1)). */
void sched_job_unblock_all(sched_transport_t *t)
{
	t->blocker_tag += 2;
	t->current = job_first(t);
	RESET_CAND_CACHE(t);
}

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

static bool candidate_ok(const sched_job_t *j, long max_slots)
{
	long needed;

	if (j->stack_level < 0 || !list_empty(&j->children) || IS_BLOCKER(j))
		return false;
	needed = MAX_ENTRIES(j) - j->selected_entries;
	return needed > 0 && needed <= max_slots;
}

/* The best job to preempt 'current': among the jobs after it that are not
 * blocked, have not been preempted themselves, and whose remaining
 * entries fit in the slots current can still accumulate, the one with the
 * highest (now - queued + 1) / entries. */
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
		&& candidate_ok(t->cand, max_slots))))
		return t->cand;

	if (max_slots > 0) {
		for (j = job_next(current); j && scanned < SCHED_CANDIDATE_SCAN_MAX;
		    j = job_next(j), scanned++) {
			long total, needed;
			double delay;

			if (!list_empty(&j->children) || IS_BLOCKER(j))
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

/* Maybe replace the current job by a smaller one (section 3). */
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

	/* A leaf child of another preemption goes over to this one. */
	if (j->stack_level > 0)
		job_pop(j);
	list_remove(&j->tnode);
	list_insert_before(&current->tnode, &j->tnode);
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

/* Round-robin over the job's peers that have pending entries. */
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
	 * enough room (or time) has come, so its pipeline does not run dry. */
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

	list_remove(&e->pnode);
	if (--p->ntodo == 0)
		list_remove(&p->rnode);
	p->nbusy++;
	list_remove(&e->qnode);
	q->ntodo--;
	list_append(&q->busy, &e->qnode);
	q->nbusy++;
	j->ntodo--;
	j->selected_entries++;
	j->t->busy++;
	e->busy = true;
	sched_queue_started(q, e, now);
	return e;
}

sched_entry_t *sched_job_entry_select(sched_transport_t *t, double now)
{
	sched_job_t *j, *next;

	if ((j = t->current) == NULL)
		return NULL;
	if (t->p.delivery_slot_cost >= 2)
		j = job_preempt(j, now);

	for (; j; j = next) {
		sched_peer_t *p;
		next = job_next(j);
		if (IS_BLOCKER(j))
			continue;
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
			 * skip it until one of them frees a slot. */
			list_node_t *n;
			j->blocker_tag = t->blocker_tag;
			list_foreach(n, &j->ready) {
				sched_peer_t *x = list_entry(n, sched_peer_t, rnode);
				x->q->blocker_tag = t->blocker_tag;
			}
			if (t->cand == j)
				RESET_CAND_CACHE(t);
		} else {
			/* Stalled: nothing in memory to select (the rest of
			 * the message waits for room).  Off the list until
			 * more recipients are read. */
			sched_job_retire(j);
		}
	}
	/* Everything left is blocked; a queue that frees a slot restarts
	 * the scan (sched_job_unblock_all). */
	t->current = NULL;
	return NULL;
}
