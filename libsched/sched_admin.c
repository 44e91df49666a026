/* The scheduler core's administrative hooks (sched.h "Administration"):
 * stopping one message's pass (postsuper -d/-h/-r of a message in the
 * active queue) and suspending a destination (postsuper -P/-U).  Both
 * defer mail at once rather than keep it in memory, so a suspended
 * destination with a large backlog costs nothing while it waits
 * (doc/scheduling-rules.md §10). */
#include <string.h>
#include "sched_int.h"
#include "mem.h"

#define HOLD_TEXT "delivery suspended by administrator"

sched_msg_t *sched_msg_find(const sched_t *s, const char *id)
{
	list_node_t *n;

	if (id == NULL)
		return NULL;
	list_foreach(n, &s->msgs) {
		sched_msg_t *m = list_entry(n, sched_msg_t, node);
		if (strcmp(m->id, id) == 0)
			return m;
	}
	return NULL;
}

bool sched_msg_stopped(const sched_msg_t *m)
{
	return m->stop_reason != NULL;
}

bool sched_msg_stop(sched_t *s, const char *id, const char *reason,
    double now)
{
	sched_msg_t *m = sched_msg_find(s, id);
	list_node_t *jn;

	if (m == NULL)
		return false;
	if (m->stop_reason == NULL)
		m->stop_reason = xstrdup(reason && *reason ? reason
		    : "delivery stopped by administrator");
	/* Pending entries of every job and peer go back now.  Finishing an
	 * entry may free its peer (when nothing of it is busy), so take one
	 * entry at a time from the start. */
	list_foreach(jn, &m->jobs) {
		sched_job_t *j = list_entry(jn, sched_job_t, mnode);
		for (;;) {
			list_node_t *pn = list_first(&j->ready);
			sched_peer_t *p;
			if (pn == NULL)
				break;
			p = list_entry(pn, sched_peer_t, rnode);
			sched_entry_defer_todo(list_entry(list_first(&p->todo),
			    sched_entry_t, pnode), m->stop_reason, now);
		}
	}
	/* The unread rest is offered, and deferred, now: sched_msg_offer
	 * refuses nothing of a stopped message. */
	if (m->unread > 0 && !m->reading && !m->finished)
		sched_msg_read(m, now);
	sched_flush(s, now);
	return true;
}

const char *sched_held_text(const sched_t *s, const char *nexthop)
{
	const sched_hold_t *h;

	if (s->held == NULL || nexthop == NULL)
		return NULL;
	h = htable_get(s->held, nexthop);
	return h ? h->reason : NULL;
}

const char *sched_dest_suspended(const sched_t *s, const char *nexthop)
{
	return sched_held_text(s, nexthop);
}

static void hold_free(void *v)
{
	sched_hold_t *h = v;

	free(h->nexthop);
	free(h->reason);
	free(h);
}

void sched_admin_free(sched_t *s)
{
	if (s->held)
		htable_free(s->held, hold_free);
	s->held = NULL;
}

bool sched_dest_suspend(sched_t *s, const char *nexthop, const char *reason,
    double now)
{
	sched_hold_t *h;
	str_t text = STR_INIT;

	if (nexthop == NULL || *nexthop == 0)
		return false;
	if (reason && *reason)
		str_setf(&text, HOLD_TEXT ": %s", reason);
	else
		str_set(&text, HOLD_TEXT);
	if (s->held == NULL)
		s->held = htable_new(8, HTABLE_FLAG_NOCASE);
	if ((h = htable_get(s->held, nexthop)) != NULL) {
		free(h->reason);
		h->reason = str_steal(&text);
		return true;
	}
	h = xcalloc(1, sizeof(*h));
	h->nexthop = xstrdup(nexthop);
	h->reason = str_steal(&text);
	h->since = now;
	htable_add(s->held, h->nexthop, h);

	/* Pending entries for it, in every transport, go back now. */
	for (int i = 0; i < s->nt; i++) {
		sched_queue_t *q = sched_queue_find(s->tv[i], nexthop);
		list_node_t *n;
		if (q == NULL)
			continue;
		while ((n = list_first(&q->todo)) != NULL) {
			sched_entry_t *e = list_entry(n, sched_entry_t, qnode);
			q->suspended_rcpts += e->n;
			s->suspended_rcpts += e->n;
			sched_entry_defer_todo(e, h->reason, now);
		}
		sched_queue_gc_mark(q);
	}
	sched_flush(s, now);
	return true;
}

bool sched_dest_resume(sched_t *s, const char *nexthop, double now)
{
	sched_hold_t *h;

	(void)now;
	if (s->held == NULL || nexthop == NULL
	    || (h = htable_get(s->held, nexthop)) == NULL)
		return false;
	htable_delete(s->held, nexthop);
	hold_free(h);
	return true;
}

void sched_walk_suspended(const sched_t *s,
    void (*fn)(const sched_hold_info_t *, void *), void *ctx)
{
	htable_entry_t **v;
	size_t n;

	if (s->held == NULL)
		return;
	v = htable_list(s->held, &n);
	for (size_t i = 0; i < n; i++) {
		const sched_hold_t *h = v[i]->value;
		sched_hold_info_t hi = { h->nexthop, h->reason, h->since };
		fn(&hi, ctx);
	}
	free(v);
}

size_t sched_suspended_count(const sched_t *s)
{
	return s->held ? htable_size(s->held) : 0;
}
