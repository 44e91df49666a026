/* The scheduler core: transports, messages, recipient memory limits
 * (doc/scheduling-rules.md §8), entry completion and the driver interface.
 * Jobs and preemption are in sched_job.c, queues in sched_queue.c. */
#include <limits.h>
#include <math.h>
#include <string.h>
#include <strings.h>
#include "sched_int.h"
#include "log.h"
#include "mem.h"

sched_t *sched_new(const sched_params_t *p, const sched_driver_t *drv)
{
	sched_t *s = xcalloc(1, sizeof(*s));

	s->p = *p;
	s->drv = *drv;
	if (drv->msg_done == NULL)
		log_panic("sched_new: driver without msg_done");
	if (p->dsc_limit > 0)
		s->dsc = dsc_new(p->dsc_limit, &p->backoff);
	s->tbyname = htable_new(8, 0);
	list_init(&s->msgs);
	list_init(&s->wait_global);
	list_init(&s->refill);
	list_init(&s->done);
	list_init(&s->gc);
	return s;
}

static void free_entry_list(list_t *l)
{
	list_node_t *n;
	while ((n = list_first(l)) != NULL) {
		sched_entry_t *e = list_entry(n, sched_entry_t, qnode);
		list_remove(n);
		for (size_t i = 0; i < e->n; i++)
			free(e->rcpt[i].addr);
		free(e->rcpt);
		free(e);
	}
}

static void free_peer(void *v)
{
	sched_peer_t *p = v;
	free(p->hkey);
	free(p);
}

/* Calls fn for every queue of every transport, in transport order and
 * each transport's table order.  It walks a copy of each table, so fn
 * may free the queue. */
static void each_queue(sched_t *s, void (*fn)(sched_queue_t *q, void *ctx),
    void *ctx)
{
	for (int i = 0; i < s->nt; i++) {
		size_t nq;
		htable_entry_t **qs = htable_list(s->tv[i]->queues, &nq);
		for (size_t k = 0; k < nq; k++)
			fn(qs[k]->value, ctx);
		free(qs);
	}
}

static void queue_free(sched_queue_t *q, void *ctx)
{
	(void)ctx;
	free_entry_list(&q->todo);
	free_entry_list(&q->busy);
	q->ntodo = q->nbusy = 0;
	q->on_gc = false;
	sched_queue_free(q);
}

void sched_free(sched_t *s)
{
	list_node_t *n;

	if (s == NULL)
		return;
	/* Messages first (their jobs), then queues with any entries. */
	while ((n = list_first(&s->msgs)) != NULL) {
		sched_msg_t *m = list_entry(n, sched_msg_t, node);
		list_node_t *jn;
		while ((jn = list_first(&m->jobs)) != NULL) {
			sched_job_t *j = list_entry(jn, sched_job_t, mnode);
			sched_job_retire(j);
			list_remove(&j->mnode);
			htable_free(j->peers, free_peer);
			free(j);
		}
		list_remove(&m->node);
		free(m->id);
		free(m->stop_reason);
		free(m);
	}
	each_queue(s, queue_free, NULL);
	for (int i = 0; i < s->nt; i++) {
		sched_transport_t *t = s->tv[i];
		htable_free(t->queues, NULL);
		sched_heap_free(&t->runq);
		free(t->name);
		free(t);
	}
	free(s->tv);
	htable_free(s->tbyname, NULL);
	free(s->heap);
	dsc_free(s->dsc);
	sched_admin_free(s);
	str_release(&s->tmp);
	free(s);
}

sched_transport_t *sched_transport_add(sched_t *s, const char *name,
    const sched_tparams_t *p, str_t *err)
{
	sched_transport_t *t;

	if (name == NULL || *name == 0) {
		if (err)
			str_setf(err, "empty transport name");
		return NULL;
	}
	if (htable_get(s->tbyname, name)) {
		if (err)
			str_setf(err, "transport \"%s\" declared twice", name);
		return NULL;
	}
	if (!sched_tparams_check(p, err))
		return NULL;
	t = xcalloc(1, sizeof(*t));
	t->s = s;
	t->name = xstrdup(name);
	t->p = *p;
	t->index = s->nt;
	t->queues = htable_new(16, HTABLE_FLAG_NOCASE);
	list_init(&t->jobs);
	list_init(&t->wait);
	sched_transport_heaps_init(t);
	s->tv = xreallocarray(s->tv, (size_t)s->nt + 1, sizeof(*s->tv));
	s->tv[s->nt++] = t;
	htable_add(s->tbyname, name, t);
	return t;
}

sched_transport_t *sched_transport_find(const sched_t *s, const char *name)
{
	return htable_get(s->tbyname, name);
}

/* "delivery temporarily suspended: REASON" */
void sched_defer_text(sched_t *s, const char *reason, str_t *out)
{
	(void)s;
	str_setf(out, "delivery temporarily suspended: %s",
	    reason && *reason ? reason : "unknown reason");
}

/* ---- Recipient memory (doc/scheduling-rules.md §8). ---- */

static sched_job_t *msg_job(const sched_msg_t *m, const sched_transport_t *t)
{
	list_node_t *n;
	list_foreach(n, &m->jobs) {
		sched_job_t *j = list_entry(n, sched_job_t, mnode);
		if (j->t == t)
			return j;
	}
	return NULL;
}

/* The transport's in-memory cap for this message: jobs that preempt may
 * also use the extra recipient limit (doc/scheduling-rules.md §8.2). */
static long transport_cap(const sched_msg_t *m, const sched_transport_t *t)
{
	const sched_job_t *j = msg_job(m, t);
	long cap = t->p.recipient_limit;
	if (j && j->stack_level > 0)
		cap += t->p.extra_recipient_limit;
	return cap;
}

/* How many more recipients of m could be read now for transport t
 * (doc/scheduling-rules.md §8.2). */
long sched_room(const sched_msg_t *m, const sched_transport_t *t)
{
	const sched_t *s = m->s;
	long g = s->p.message_recipient_limit - s->rcpt_in_core;
	long r = g;
	long floor = s->p.message_recipient_minimum - m->in_core;

	if (t) {
		long tr = transport_cap(m, t) - t->rcpt_in_core;
		if (tr < r)
			r = tr;
	}
	return r > floor ? r : floor;
}

/* Is the next batch worth reading (doc/scheduling-rules.md §8.4)? */
static bool refill_due(const sched_msg_t *m, const sched_transport_t *t,
    double now)
{
	long room = sched_room(m, t);
	long want = t ? t->p.recipient_refill_limit : 100;
	double delay = t ? t->p.recipient_refill_delay : 5;

	if (room <= 0)
		return false;
	/* A batch is worth reading when it is big enough (or is all that is
	 * left), or when the last read is long enough ago. */
	if ((size_t)want > m->unread)
		want = (long)m->unread;
	return room >= want || now - m->refill_time >= delay
	    || m->in_core < m->s->p.message_recipient_minimum;
}

static void msg_unwait(sched_msg_t *m)
{
	if (m->wait_kind != MW_NONE) {
		list_remove(&m->wait_node);
		m->wait_kind = MW_NONE;
		m->wait_on = NULL;
	}
}

static void msg_wait(sched_msg_t *m, sched_transport_t *t)
{
	msg_unwait(m);
	if (t) {
		m->wait_kind = MW_TRANSPORT;
		m->wait_on = t;
		list_append(&t->wait, &m->wait_node);
	} else {
		m->wait_kind = MW_GLOBAL;
		list_append(&m->s->wait_global, &m->wait_node);
	}
}

static void msg_want_refill(sched_msg_t *m)
{
	msg_unwait(m);
	m->wait_kind = MW_REFILL;
	list_append(&m->s->refill, &m->wait_node);
}

void sched_msg_refill_check(sched_msg_t *m, sched_transport_t *t, double now)
{
	if (m->unread > 0 && !m->reading && refill_due(m, t, now))
		sched_msg_read(m, now);
}

/* Room was freed in t: the first message waiting for it (or for global
 * room) may read its next batch.  Waiters are served in FIFO order
 * (doc/scheduling-rules.md §8.3). */
static void wake_waiters(sched_t *s, sched_transport_t *t, double now)
{
	list_node_t *n;

	while ((n = list_first(&t->wait)) != NULL) {
		sched_msg_t *m = list_entry(n, sched_msg_t, wait_node);
		if (!refill_due(m, t, now))
			break;
		msg_want_refill(m);
	}
	while ((n = list_first(&s->wait_global)) != NULL) {
		sched_msg_t *m = list_entry(n, sched_msg_t, wait_node);
		if (!refill_due(m, NULL, now))
			break;
		msg_want_refill(m);
	}
}

static void msg_check_finished(sched_msg_t *m)
{
	if (!m->finished && !m->reading && m->unread == 0 && m->in_core == 0) {
		m->finished = true;
		msg_unwait(m);
		list_append(&m->s->done, &m->done_node);
	}
}

/* Read the message's next batch; a driver that offers nothing without
 * hitting a limit ends the pass (doc/scheduling-rules.md §8.4). */
void sched_msg_read(sched_msg_t *m, double now)
{
	sched_t *s = m->s;
	size_t unread;

	msg_unwait(m);
	if (m->drv_wait)
		return;			/* sched_msg_resume reads */
	m->reading = true;
	m->offered_any = false;
	m->refused = false;
	m->refill_time = now;
	s->reads++;
	if (m->arr) {
		while (m->arr_next < m->narr) {
			const sched_rcpt_spec_t *r = &m->arr[m->arr_next];
			if (!sched_msg_offer(m, r->transport, r->nexthop, r->addr,
			    r->cookie))
				break;
			m->arr_next++;
		}
		unread = m->narr - m->arr_next;
	} else if (s->drv.read_more) {
		unread = s->drv.read_more(s->drv.ctx, m, now);
	} else {
		unread = m->unread;	/* handled as "nothing offered" below */
	}
	m->reading = false;
	m->unread = unread;
	if (unread > 0 && !m->refused) {
		if (m->offered_any) {
			/* The driver stopped early on its own: read on. */
			msg_want_refill(m);
		} else {
			/* Nothing offered, no limit hit: the driver cannot
			 * produce the rest.  Finish the pass and let the
			 * message be retried rather than loop. */
			log_warning("%s: %zu recipients announced but not offered;"
			    " deferring the message", m->id, unread);
			m->unread = 0;
			m->deferred++;
		}
	}
	msg_check_finished(m);
}

/* ---- Messages. ---- */

sched_msg_t *sched_msg_add(sched_t *s, const sched_msg_desc_t *d, double now)
{
	sched_msg_t *m = xcalloc(1, sizeof(*m));
	bool gone;

	m->s = s;
	m->id = xstrdup(d->id ? d->id : "?");
	m->ctx = d->ctx;
	m->arrival = d->arrival;
	m->queued = now;
	m->null_sender = d->null_sender;
	m->attempts = d->attempts;
	m->unread = d->rcpts ? d->nrcpts : d->recipients;
	m->arr = d->rcpts;
	m->narr = d->rcpts ? d->nrcpts : 0;
	m->refill_time = now;
	list_init(&m->jobs);
	list_append(&s->msgs, &m->node);
	s->nmsgs++;
	if (d->attempts == 0)
		s->new_msgs++;
	sched_run_timers(s, now);
	sched_msg_read(m, now);
	gone = m->finished;
	sched_flush(s, now);
	return gone ? NULL : m;
}

static void defer_now(sched_msg_t *m, const char *addr, sched_cookie_t cookie,
    const char *reason, double now)
{
	sched_t *s = m->s;
	sched_rcpt_t r;

	r.addr = (char *)addr;
	r.cookie = cookie;
	m->deferred++;
	s->rcpt_deferred++;
	if (s->drv.rcpt_done)
		s->drv.rcpt_done(s->drv.ctx, m, &r, SCHED_RCPT_DEFERRED, reason, now);
}

/* The job's peer for q; grouped_nexthop is the entries' nexthop when it
 * is not q's key (grouping), else NULL. */
static sched_peer_t *peer_obtain(sched_job_t *j, sched_queue_t *q,
    const char *grouped_nexthop)
{
	sched_t *s = j->m->s;
	sched_peer_t *p;
	const char *hk = q->nexthop;

	if (grouped_nexthop) {
		str_setf(&s->tmp, "%s\t%s", q->nexthop, grouped_nexthop);
		hk = str_cstr(&s->tmp);
	}
	if (j->peers == NULL)
		j->peers = htable_new(4, HTABLE_FLAG_NOCASE);
	else if ((p = htable_get(j->peers, hk)) != NULL)
		return p;
	p = xcalloc(1, sizeof(*p));
	p->j = j;
	p->q = q;
	p->bidx = SIZE_MAX;
	if (grouped_nexthop) {
		p->hkey = xstrdup(hk);
		p->nexthop = p->hkey + strlen(q->nexthop) + 1;
	}
	list_init(&p->todo);
	htable_add(j->peers, PEER_HKEY(p), p);
	return p;
}

bool sched_msg_offer(sched_msg_t *m, const char *transport,
    const char *nexthop, const char *addr, sched_cookie_t cookie)
{
	return sched_msg_offer_key(m, transport, nexthop, NULL, addr, cookie);
}

void sched_msg_wait(sched_msg_t *m)
{
	if (m->reading) {
		m->drv_wait = true;
		m->refused = true;	/* not "nothing offered": a wait */
	}
}

void sched_msg_resume(sched_msg_t *m, double now)
{
	if (m == NULL || !m->drv_wait)
		return;
	m->drv_wait = false;
	if (m->unread > 0 && !m->finished && !m->reading)
		msg_want_refill(m);
	sched_flush(m->s, now);
}

/* One recipient: deferred at once (doc/scheduling-rules.md §2.5, §5.2,
 * §10), refused at a memory limit (§8.2, §8.3), or batched into an entry
 * (§2.1). */
bool sched_msg_offer_key(sched_msg_t *m, const char *transport,
    const char *nexthop, const char *key, const char *addr,
    sched_cookie_t cookie)
{
	sched_t *s = m->s;
	double now = m->refill_time;	/* the time of the current read */
	sched_transport_t *t;
	sched_queue_t *q;
	sched_job_t *j;
	sched_peer_t *p;
	sched_entry_t *e;
	long min = s->p.message_recipient_minimum;

	if (addr == NULL)
		addr = "";
	if (nexthop == NULL)
		nexthop = "";
	if (key == NULL || strcasecmp(key, nexthop) == 0)
		key = nexthop;		/* not grouped: as sched_msg_offer */
	/* Stopped by the administrator (sched_msg_stop): the rest goes back
	 * at once. */
	if (m->stop_reason != NULL) {
		defer_now(m, addr, cookie, m->stop_reason, now);
		m->offered_any = true;
		return true;
	}
	if (transport == NULL || (t = htable_get(s->tbyname, transport)) == NULL) {
		str_setf(&s->tmp, "mail transport unavailable: no transport \"%s\"",
		    transport ? transport : "");
		defer_now(m, addr, cookie, str_cstr(&s->tmp), now);
		m->offered_any = true;
		return true;
	}

	/* Mail for a destination the administrator suspended waits in the
	 * deferred queue (sched_dest_suspend). */
	if (s->held != NULL) {
		const char *why = sched_held_text(s, nexthop);
		if (why == NULL && key != nexthop)
			why = sched_held_text(s, key);
		if (why != NULL) {
			s->suspended_rcpts++;
			defer_now(m, addr, cookie, why, now);
			m->offered_any = true;
			return true;
		}
	}

	/* Mail for a destination the DSC holds dead goes back at once. */
	q = sched_queue_find(t, key);
	if (q ? sched_queue_suspended(q, now)
	    : (s->dsc && dsc_count(s->dsc) > 0)) {
		const char *why = NULL;
		if (q) {
			why = q->reason;
		} else {
			const dsc_entry_t *de = dsc_peek(s->dsc, t->name, key, NULL);
			if (de && (de->state == DSC_STATE_PROBING || de->retry_at > now))
				why = de->reason ? de->reason : "unknown reason";
			else
				goto live;
		}
		sched_defer_text(s, why, &s->tmp);
		if (q) {
			q->suspended_rcpts++;
			q->deferrals++;
		}
		s->suspended_rcpts++;
		defer_now(m, addr, cookie, str_cstr(&s->tmp), now);
		m->offered_any = true;
		return true;
	}
live:
	/* Memory limits; every message may hold the minimum. */
	if (m->in_core >= min) {
		if (s->rcpt_in_core >= s->p.message_recipient_limit) {
			m->refused = true;
			msg_wait(m, NULL);
			return false;
		}
		if (t->rcpt_in_core >= transport_cap(m, t)) {
			m->refused = true;
			msg_wait(m, t);
			return false;
		}
	}
	if (q == NULL)
		q = sched_queue_create(t, key, now);
	j = sched_job_obtain(m, t);
	p = peer_obtain(j, q, key != nexthop ? nexthop : NULL);

	/* Batch with the newest pending entry of this message for this
	 * destination while it has room. */
	e = p->ntodo ? list_entry(p->todo.prev, sched_entry_t, pnode) : NULL;
	if (e == NULL || e->n >= (size_t)t->p.destination_recipient_limit) {
		e = xcalloc(1, sizeof(*e));
		e->peer = p;
		list_append(&p->todo, &e->pnode);
		list_append(&q->todo, &e->qnode);
		if (p->ntodo++ == 0)
			list_append(&j->ready, &p->rnode);
		q->ntodo++;
		j->ntodo++;
		j->read_entries++;
	}
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 1;
		if (cap > (size_t)t->p.destination_recipient_limit)
			cap = (size_t)t->p.destination_recipient_limit;
		e->rcpt = xreallocarray(e->rcpt, cap, sizeof(*e->rcpt));
		e->cap = cap;
	}
	e->rcpt[e->n].addr = xstrdup(addr);
	e->rcpt[e->n].cookie = cookie;
	e->n++;
	m->in_core++;
	j->rcpt_in_core++;
	if (++t->rcpt_in_core > t->rcpt_peak)
		t->rcpt_peak = t->rcpt_in_core;
	if (++s->rcpt_in_core > s->rcpt_peak)
		s->rcpt_peak = s->rcpt_in_core;
	m->offered_any = true;
	return true;
}

const char *sched_msg_id(const sched_msg_t *m)
{
	return m->id;
}

void *sched_msg_ctx(const sched_msg_t *m)
{
	return m->ctx;
}

double sched_msg_queued(const sched_msg_t *m)
{
	return m->queued;
}

int sched_msg_attempts(const sched_msg_t *m)
{
	return m->attempts;
}

/* The result of a message's pass (doc/scheduling-rules.md §7.6). */
static void finish_message(sched_msg_t *m, double now)
{
	sched_t *s = m->s;
	sched_msg_result_t res;
	list_node_t *n;

	memset(&res, 0, sizeof(res));
	res.attempt = m->attempts + 1;
	res.sent = m->sent;
	res.bounced = m->bounced;
	res.deferred = m->deferred;
	if (m->deferred == 0) {
		res.status = SCHED_MSG_DONE;
	} else if (backoff_expired(&s->p.backoff, m->arrival, now, m->null_sender)) {
		res.status = SCHED_MSG_EXPIRED;
	} else {
		res.status = SCHED_MSG_DEFERRED;
		res.retry_time = backoff_next_retry(&s->p.backoff, res.attempt,
		    m->arrival, now);
	}
	s->drv.msg_done(s->drv.ctx, m, &res, now);

	while ((n = list_first(&m->jobs)) != NULL)
		sched_job_free(list_entry(n, sched_job_t, mnode));
	msg_unwait(m);
	list_remove(&m->node);
	s->nmsgs--;
	free(m->id);
	free(m->stop_reason);
	free(m);
}

/* Work that must not run in the middle of list walks: reading batches,
 * finishing messages, deferring the mail of suspended queues, freeing
 * empty queues.  Runs until nothing is left. */
void sched_flush(sched_t *s, double now)
{
	list_node_t *n;

	if (s->flushing)
		return;
	s->flushing = 1;
	for (;;) {
		if ((n = list_first(&s->refill)) != NULL) {
			sched_msg_t *m = list_entry(n, sched_msg_t, wait_node);
			msg_unwait(m);
			if (m->unread > 0 && !m->finished)
				sched_msg_read(m, now);
			continue;
		}
		if ((n = list_first(&s->done)) != NULL) {
			sched_msg_t *m = list_entry(n, sched_msg_t, done_node);
			list_remove(n);
			finish_message(m, now);
			continue;
		}
		if ((n = list_first(&s->gc)) != NULL) {
			sched_queue_t *q = list_entry(n, sched_queue_t, gc_node);
			list_remove(n);
			q->on_gc = false;
			if (q->suspended && q->ntodo > 0)
				sched_queue_defer_todo(q, now);
			else if (q->ntodo == 0 && q->nbusy == 0
			    && !sched_queue_rate_keep(q, now))
				sched_queue_free(q);
			continue;
		}
		break;
	}
	s->flushing = 0;
}

/* Report the recipients of an entry that left the queue's lists, and free
 * it.  res[i] per recipient, or 'all' with 'reason' when res is NULL. */
void sched_entry_finish(sched_entry_t *e, const sched_rcpt_result_t *res,
    sched_rcpt_status_t all, const char *reason, double now)
{
	sched_peer_t *p = e->peer;
	sched_job_t *j = p->j;
	sched_msg_t *m = j->m;
	sched_transport_t *t = j->t;
	sched_t *s = t->s;
	long n = (long)e->n;

	for (size_t i = 0; i < e->n; i++) {
		sched_rcpt_status_t st = res ? res[i].status : all;
		const char *why = res ? res[i].reason : reason;
		switch (st) {
		case SCHED_RCPT_SENT: m->sent++; s->rcpt_sent++; break;
		case SCHED_RCPT_BOUNCED: m->bounced++; s->rcpt_bounced++; break;
		case SCHED_RCPT_DEFERRED:
		default:
			st = SCHED_RCPT_DEFERRED;
			m->deferred++;
			s->rcpt_deferred++;
			p->q->deferrals++;
			break;
		}
		if (s->drv.rcpt_done)
			s->drv.rcpt_done(s->drv.ctx, m, &e->rcpt[i], st, why, now);
		free(e->rcpt[i].addr);
	}
	if (e->busy)
		p->nbusy--;
	free(e->rcpt);
	free(e);
	m->in_core -= n;
	j->rcpt_in_core -= n;
	t->rcpt_in_core -= n;
	s->rcpt_in_core -= n;
	if (p->ntodo == 0 && p->nbusy == 0) {
		htable_delete(j->peers, PEER_HKEY(p));
		sched_queue_gc_mark(p->q);
		free_peer(p);
	}
	wake_waiters(s, t, now);
	/* The last in-memory recipient of a partly read message is gone:
	 * read the next batch even if the pools are full (the minimum). */
	if (m->in_core == 0 && m->unread > 0 && !m->reading
	    && m->wait_kind != MW_REFILL)
		msg_want_refill(m);
	msg_check_finished(m);
}

/* ---- Selection and completion. ---- */

sched_entry_t *sched_select_transport(sched_t *s, sched_transport_t *t,
    double now)
{
	sched_entry_t *e;

	sched_run_timers(s, now);
	if (t->busy >= t->p.process_limit)
		return NULL;
	e = sched_job_entry_select(t, now);
	if (e) {
		t->selected++;
		s->selected++;
		if (s->drv.selected)
			s->drv.selected(s->drv.ctx, e, now);
	}
	sched_flush(s, now);
	return e;
}

/* Transports in turn (doc/scheduling-rules.md §2.3). */
sched_entry_t *sched_select(sched_t *s, double now)
{
	/* Timers due now run even when no transport has work (an empty
	 * rate-limited queue waiting to be freed), so that
	 * sched_next_wakeup() is never in the past after a selection. */
	sched_run_timers(s, now);
	for (int k = 0; k < s->nt; k++) {
		int i = (s->rr + k) % s->nt;
		sched_transport_t *t = s->tv[i];
		sched_entry_t *e;

		if (t->busy >= t->p.process_limit || t->njobs == 0)
			continue;
		if ((e = sched_select_transport(s, t, now)) != NULL) {
			s->rr = (i + 1) % s->nt;
			return e;
		}
	}
	sched_flush(s, now);
	return NULL;
}

const char *sched_entry_transport(const sched_entry_t *e)
{
	return e->peer->q->t->name;
}

const char *sched_entry_nexthop(const sched_entry_t *e)
{
	return PEER_NEXTHOP(e->peer);
}

sched_msg_t *sched_entry_msg(const sched_entry_t *e)
{
	return e->peer->j->m;
}

size_t sched_entry_count(const sched_entry_t *e)
{
	return e->n;
}

const sched_rcpt_t *sched_entry_rcpt(const sched_entry_t *e, size_t i)
{
	return i < e->n ? &e->rcpt[i] : NULL;
}

const sched_limits_t *sched_entry_limits(const sched_entry_t *e)
{
	return &e->peer->q->lim;
}

bool sched_entry_is_probe(const sched_entry_t *e)
{
	return e->probe;
}

void sched_delivery_done(sched_t *s, sched_entry_t *e,
    const sched_rcpt_result_t *res, int flags, const char *reason,
    double now)
{
	sched_queue_t *q = e->peer->q;
	sched_transport_t *t = q->t;
	sched_rcpt_status_t all;

	if (!e->busy)
		log_panic("sched_delivery_done: entry not in delivery");
	/* The peer keeps counting e as busy until sched_entry_finish: a dead
	 * destination defers the peer's other entries first, and the peer
	 * must outlive them. */
	list_remove(&e->qnode);
	q->nbusy--;
	t->busy--;
	all = (flags & (SCHED_DLV_CONN_FAIL | SCHED_DLV_SITE_FAIL
	    | SCHED_DLV_NO_FEEDBACK)) ? SCHED_RCPT_DEFERRED : SCHED_RCPT_SENT;
	if (reason == NULL && all == SCHED_RCPT_DEFERRED)
		reason = "delivery failed";
	/* Feedback first: a dead destination defers its pending mail with
	 * this delivery's reason. */
	sched_queue_done(q, e, flags, reason, now);
	sched_entry_finish(e, res, all, reason, now);
	sched_run_timers(s, now);
	sched_flush(s, now);
}

const dsc_t *sched_dsc(const sched_t *s)
{
	return s->dsc;
}

struct dsc_clear_ctx {
	const char *nexthop;	/* NULL: every queue */
	double now;
};

static void queue_dsc_clear(sched_queue_t *q, void *ctx)
{
	const struct dsc_clear_ctx *c = ctx;

	if (c->nexthop && strcasecmp(q->nexthop, c->nexthop) != 0)
		return;
	if (q->suspended || q->fb.dead || q->dsc_known) {
		sched_queue_revive(q, c->now);
		sched_job_wake(q, INT_MAX);
	}
}

/* doc/scheduling-rules.md §5.5. */
size_t sched_dsc_clear(sched_t *s, const char *nexthop, double now)
{
	struct dsc_clear_ctx c = { nexthop, now };
	size_t n = 0;

	if (s->dsc)
		n = nexthop ? dsc_clear_nexthop(s->dsc, nexthop)
		    : dsc_clear_all(s->dsc);
	each_queue(s, queue_dsc_clear, &c);
	sched_flush(s, now);
	return n;
}
