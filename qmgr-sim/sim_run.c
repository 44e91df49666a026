/* qmgr-sim engine: an event queue on a virtual clock drives the real
 * scheduler core.  Deliveries end after their simulated time, deferred
 * messages come back through the deferred-queue scan (queue_run_delay),
 * and the active queue takes new and deferred mail alternately within
 * qmgr_message_active_limit (doc/scheduling-rules.md §8.6).  doc/qmgr-sim.md
 * describes the model and the output. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sim.h"
#include "htable.h"
#include "log.h"
#include "mem.h"

enum { EV_ARRIVAL, EV_DONE, EV_SCAN, EV_WAKE, EV_SAMPLE };

typedef struct ev {
	double t;
	uint64_t seq;
	int type;
	void *p;
} ev_t;

typedef struct flight {
	sched_entry_t *e;
	sim_dest_t *d;
	int flags;
	bool session;
	sched_rcpt_result_t *res;
	char reason[200];
} flight_t;

typedef struct run {
	sim_t *sim;
	const sim_opts_t *o;
	FILE *out;
	sched_t *s;
	ev_t *heap;
	size_t nheap, capheap;
	uint64_t seq;
	double now;
	uint64_t rng;
	htable_t *dest_by_name;
	sim_msg_t **msgs;
	size_t nmsgs, capmsgs;
	sim_msg_t *in_head, *in_tail;	/* incoming, FIFO */
	sim_msg_t *el_head, *el_tail;	/* deferred and due, FIFO */
	sim_msg_t **deferred;		/* waiting for their retry time */
	size_t ndeferred, capdeferred;
	long active;
	bool take_deferred;
	int arrivals_pending;
	long flights;
	double wake_at;			/* scheduled EV_WAKE, or -1 */
	str_t order;
	htable_t *reasons;		/* deferral reason -> long * */
	unsigned long arrived, done, expired, deferrals, retries;
	unsigned long rcpt_sent, rcpt_bounced;
} run_t;

static void observe(run_t *r, sim_dest_t *d);
static void mx_report(const sim_t *sim, FILE *out);
#define DEST_KEY(d)	((d)->key ? (d)->key : (d)->name)

/* ---- Deterministic random numbers (splitmix64). ---- */

static double rnd(run_t *r)
{
	uint64_t z = (r->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 9007199254740992.0;
}

static double rnd_backoff(void *ctx)
{
	return rnd(ctx);
}

/* ---- Event heap, ordered by time then insertion. ---- */

static bool ev_before(const ev_t *a, const ev_t *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void ev_push(run_t *r, double t, int type, void *p)
{
	size_t i;
	if (r->nheap == r->capheap) {
		r->capheap = r->capheap ? 2 * r->capheap : 256;
		r->heap = xreallocarray(r->heap, r->capheap, sizeof(*r->heap));
	}
	i = r->nheap++;
	r->heap[i] = (ev_t){ t, r->seq++, type, p };
	while (i > 0) {
		size_t up = (i - 1) / 2;
		if (!ev_before(&r->heap[i], &r->heap[up]))
			break;
		ev_t x = r->heap[i];
		r->heap[i] = r->heap[up];
		r->heap[up] = x;
		i = up;
	}
}

static ev_t ev_pop(run_t *r)
{
	ev_t top = r->heap[0];
	size_t i = 0;
	r->heap[0] = r->heap[--r->nheap];
	for (;;) {
		size_t l = 2 * i + 1, rr = l + 1, m = i;
		if (l < r->nheap && ev_before(&r->heap[l], &r->heap[m]))
			m = l;
		if (rr < r->nheap && ev_before(&r->heap[rr], &r->heap[m]))
			m = rr;
		if (m == i)
			break;
		ev_t x = r->heap[i];
		r->heap[i] = r->heap[m];
		r->heap[m] = x;
		i = m;
	}
	return top;
}

/* ---- Messages. ---- */

/* Recipient i of the n-th message goes to destination (n + i) mod count
 * of its arrival's list: messages and recipients spread round-robin. */
static sim_dest_t *rcpt_dest(run_t *r, const sim_msg_t *m, long i)
{
	return &r->sim->dests[m->arr->dests[(m->num + i) % m->arr->ndests]];
}

static void fifo_put(sim_msg_t **head, sim_msg_t **tail, sim_msg_t *m)
{
	m->qnext = NULL;
	if (*tail)
		(*tail)->qnext = m;
	else
		*head = m;
	*tail = m;
}

static sim_msg_t *fifo_get(sim_msg_t **head, sim_msg_t **tail)
{
	sim_msg_t *m = *head;
	if (m) {
		*head = m->qnext;
		if (*head == NULL)
			*tail = NULL;
	}
	return m;
}

static size_t cb_read_more(void *ctx, sched_msg_t *m, double now)
{
	run_t *r = ctx;
	sim_msg_t *sm = sched_msg_ctx(m);
	char addr[300];
	(void)now;

	while (sm->next < sm->nrcpt) {
		long i = sm->next;
		sim_dest_t *d;
		if (sm->done && (sm->done[i / 8] & (1u << (i % 8)))) {
			sm->next++;
			continue;
		}
		d = rcpt_dest(r, sm, i);
		bfmt(addr, sizeof(addr), "r%ld@%s", i, d->name);
		if (!sched_msg_offer_key(m, d->transport, d->name, d->key, addr,
		    (sched_cookie_t){ .index = (uint64_t)i }))
			break;
		sm->next++;
		sm->offered++;
	}
	return (size_t)(sm->pending - sm->offered);
}

static void mark_final(sim_msg_t *sm, long i)
{
	if (sm->done == NULL)
		sm->done = xcalloc((size_t)(sm->nrcpt + 7) / 8, 1);
	if (!(sm->done[i / 8] & (1u << (i % 8)))) {
		sm->done[i / 8] |= (uint8_t)(1u << (i % 8));
		sm->ndone++;
	}
}

static void cb_rcpt_done(void *ctx, sched_msg_t *m, const sched_rcpt_t *rc,
    sched_rcpt_status_t st, const char *reason, double now)
{
	run_t *r = ctx;
	sim_msg_t *sm = sched_msg_ctx(m);
	long i = (long)rc->cookie.index;
	sim_dest_t *d = rcpt_dest(r, sm, i);
	(void)now;

	switch (st) {
	case SCHED_RCPT_SENT:
		mark_final(sm, i);
		d->sent++;
		r->rcpt_sent++;
		break;
	case SCHED_RCPT_BOUNCED:
		mark_final(sm, i);
		d->bounced++;
		r->rcpt_bounced++;
		break;
	default: {
		long *cnt;
		const char *why = reason ? reason : "(no reason)";
		d->deferred++;
		r->deferrals++;
		if ((cnt = htable_get(r->reasons, why)) == NULL) {
			cnt = xcalloc(1, sizeof(*cnt));
			htable_add(r->reasons, why, cnt);
		}
		(*cnt)++;
		break;
	}
	}
}

static void cb_msg_done(void *ctx, sched_msg_t *m, const sched_msg_result_t *res,
    double now)
{
	run_t *r = ctx;
	sim_msg_t *sm = sched_msg_ctx(m);

	r->active--;
	sm->attempts = res->attempt;
	switch (res->status) {
	case SCHED_MSG_DONE:
		sm->state = SIM_MSG_DONE;
		sm->final_time = now;
		r->done++;
		break;
	case SCHED_MSG_EXPIRED:
		sm->state = SIM_MSG_EXPIRED;
		sm->final_time = now;
		r->expired++;
		break;
	case SCHED_MSG_DEFERRED:
	default:
		sm->state = SIM_MSG_DEFERRED;
		sm->retry = res->retry_time;
		if (r->ndeferred == r->capdeferred) {
			r->capdeferred = r->capdeferred ? 2 * r->capdeferred : 64;
			r->deferred = xreallocarray(r->deferred, r->capdeferred,
			    sizeof(*r->deferred));
		}
		r->deferred[r->ndeferred++] = sm;
		break;
	}
}

static void new_message(run_t *r, const sim_arrival_t *a)
{
	sim_msg_t *sm = xcalloc(1, sizeof(*sm));
	if (r->nmsgs == r->capmsgs) {
		r->capmsgs = r->capmsgs ? 2 * r->capmsgs : 256;
		r->msgs = xreallocarray(r->msgs, r->capmsgs, sizeof(*r->msgs));
	}
	sm->num = (long)r->nmsgs;
	bfmt(sm->id, sizeof(sm->id), "M%ld", sm->num + 1);
	r->msgs[r->nmsgs++] = sm;
	sm->arr = a;
	sm->arrival = r->now;
	sm->nrcpt = a->rcpts;
	sm->state = SIM_MSG_INCOMING;
	fifo_put(&r->in_head, &r->in_tail, sm);
	r->arrived++;
}

/* Fill the active queue: new and deferred mail alternately (new mail
 * first), within qmgr_message_active_limit. */
static void intake(run_t *r)
{
	while (r->active < r->sim->active_limit) {
		sim_msg_t *sm;
		sched_msg_desc_t d;

		if (r->take_deferred && r->el_head)
			sm = fifo_get(&r->el_head, &r->el_tail);
		else if (r->in_head)
			sm = fifo_get(&r->in_head, &r->in_tail);
		else if (r->el_head)
			sm = fifo_get(&r->el_head, &r->el_tail);
		else
			break;
		r->take_deferred = !r->take_deferred;
		if (sm->attempts > 0)
			r->retries++;
		sm->state = SIM_MSG_ACTIVE;
		sm->next = 0;
		sm->offered = 0;
		sm->pending = sm->nrcpt - sm->ndone;
		r->active++;
		memset(&d, 0, sizeof(d));
		d.id = sm->id;
		d.arrival = sm->arrival;
		d.null_sender = sm->arr->null_sender;
		d.attempts = sm->attempts;
		d.recipients = (size_t)sm->pending;
		d.ctx = sm;
		sched_msg_add(r->s, &d, r->now);
	}
}

static int retry_cmp(const void *a, const void *b)
{
	const sim_msg_t *x = *(sim_msg_t *const *)a, *y = *(sim_msg_t *const *)b;
	if (x->retry != y->retry)
		return x->retry < y->retry ? -1 : 1;
	return x->num < y->num ? -1 : x->num > y->num;
}

/* The deferred-queue scan: messages whose retry time has come. */
static void scan_deferred(run_t *r)
{
	size_t keep = 0, ndue = 0;
	sim_msg_t **due = NULL;

	for (size_t i = 0; i < r->ndeferred; i++) {
		sim_msg_t *sm = r->deferred[i];
		if (sm->retry <= r->now) {
			due = xreallocarray(due, ndue + 1, sizeof(*due));
			due[ndue++] = sm;
		} else {
			r->deferred[keep++] = sm;
		}
	}
	r->ndeferred = keep;
	if (ndue > 1)
		qsort(due, ndue, sizeof(*due), retry_cmp);
	for (size_t i = 0; i < ndue; i++) {
		due[i]->state = SIM_MSG_ELIGIBLE;
		fifo_put(&r->el_head, &r->el_tail, due[i]);
	}
	free(due);
}

/* ---- Deliveries. ---- */

static bool in_dead(const sim_dest_t *d, double t)
{
	for (int i = 0; i < d->ndead; i++)
		if (t >= d->dead[i].start && t < d->dead[i].end)
			return true;
	return false;
}

/* The server's session limit at t (limit, or the latest limit_at change). */
static int limit_at(const sim_dest_t *d, double t)
{
	int limit = d->limit;

	for (int i = 0; i < d->nlimit_at && d->limit_at[i].at <= t; i++)
		limit = d->limit_at[i].limit;
	return limit;
}

static double attempt_interval(const sim_t *sim)
{
	return sim->queue_run_delay > 0 ? sim->queue_run_delay : 300;
}

static void start_delivery(run_t *r, sched_entry_t *e)
{
	sim_msg_t *sm = sched_msg_ctx(sched_entry_msg(e));
	sim_dest_t *d = htable_get(r->dest_by_name, sched_entry_nexthop(e));
	flight_t *f = xcalloc(1, sizeof(*f));
	size_t n = sched_entry_count(e);
	bool first = sched_msg_attempts(sched_entry_msg(e)) == 0;
	double dur;
	int fail = 0;		/* 1 refused, 2 timeout, 3 421 */

	if (d == NULL)
		log_panic("qmgr-sim: entry for unknown destination %s",
		    sched_entry_nexthop(e));
	f->e = e;
	f->d = d;
	str_cat(&r->order, sm->arr->label);
	d->deliveries++;
	{
		/* Connection attempts per queue_run_delay interval. */
		size_t b = (size_t)(r->now / attempt_interval(r->sim));
		if (b >= d->nattempts) {
			size_t n = d->nattempts ? d->nattempts : 16;
			while (n <= b)
				n *= 2;
			d->attempts = xreallocarray(d->attempts, n, sizeof(*d->attempts));
			memset(d->attempts + d->nattempts, 0,
			    (n - d->nattempts) * sizeof(*d->attempts));
			d->nattempts = n;
		}
		d->attempts[b]++;
	}
	if (first)
		d->first_deliveries++;

	if (in_dead(d, r->now)) {
		fail = d->dead_mode == SIM_FAIL_TIMEOUT ? 2 : 1;
	} else if (d->refuse_p > 0 || d->timeout_p > 0) {
		double x = rnd(r);
		if (x < d->refuse_p)
			fail = 1;
		else if (x < d->refuse_p + d->timeout_p)
			fail = 2;
	}
	if (fail == 0) {
		/* The server's limit (a group's: its first dest's sessions). */
		int limit = limit_at(d, r->now);
		if (limit > 0 && d->server->sessions >= limit)
			fail = 3;
	}
	switch (fail) {
	case 1:
		bfmt(f->reason, sizeof(f->reason),
		    "connect to %s[192.0.2.1]:25: Connection refused", d->name);
		dur = d->connect;
		d->refused++;
		break;
	case 2:
		bfmt(f->reason, sizeof(f->reason),
		    "connect to %s[192.0.2.1]:25: Connection timed out", d->name);
		dur = d->timeout_time;
		d->timedout++;
		break;
	case 3:
		bfmt(f->reason, sizeof(f->reason), "host %s[192.0.2.1] refused to "
		    "talk to me: 421 4.7.0 too many connections", d->name);
		dur = d->connect + d->reject;
		d->rejected++;
		break;
	default:
		f->session = true;
		if (++d->server->sessions > d->server->max_sessions)
			d->server->max_sessions = d->server->sessions;
		dur = d->connect + (double)n * d->service;
		f->res = xcalloc(n, sizeof(*f->res));
		for (size_t i = 0; i < n; i++) {
			double x = (d->permfail_p > 0 || d->tempfail_p > 0) ? rnd(r) : 1;
			if (x < d->permfail_p) {
				f->res[i].status = SCHED_RCPT_BOUNCED;
				f->res[i].reason = "550 5.1.1 user unknown";
			} else if (x < d->permfail_p + d->tempfail_p) {
				f->res[i].status = SCHED_RCPT_DEFERRED;
				f->res[i].reason = "450 4.2.1 mailbox busy, try again later";
			} else {
				f->res[i].status = SCHED_RCPT_SENT;
				f->res[i].reason = "250 2.0.0 ok";
			}
		}
		break;
	}
	if (fail) {
		f->flags = SCHED_DLV_CONN_FAIL;
		d->conn_fail++;
		if (first)
			d->first_deferred++;
	}
	if (++d->server->conns > d->server->max_conns)
		d->server->max_conns = d->server->conns;
	r->flights++;
	ev_push(r, r->now + dur, EV_DONE, f);
	observe(r, d);
}

static void finish_delivery(run_t *r, flight_t *f)
{
	if (f->session)
		f->d->server->sessions--;
	f->d->server->conns--;
	r->flights--;
	sched_delivery_done(r->s, f->e, f->res, f->flags,
	    f->reason[0] ? f->reason : NULL, r->now);
	observe(r, f->d);
	free(f->res);
	free(f);
}

static void dispatch(run_t *r)
{
	sched_entry_t *e;
	double w;

	while ((e = sched_select(r->s, r->now)) != NULL)
		start_delivery(r, e);
	w = sched_next_wakeup(r->s);
	if (isfinite(w) && w > r->now && w != r->wake_at) {
		r->wake_at = w;
		ev_push(r, w, EV_WAKE, NULL);
	}
}

/* Time-weighted window and concurrency of a destination while it has
 * deliveries in flight: the values observed last hold until now; then
 * observe again.  Called whenever a delivery of d starts or ends (the
 * only times its window and busy count change). */
static void observe(run_t *r, sim_dest_t *d)
{
	double dt = r->now - d->last_t;
	sched_queue_info_t qi;

	if (dt > 0 && d->obs_busy > 0) {
		d->w_integral += d->obs_window * dt;
		d->b_integral += d->obs_busy * dt;
		d->busy_time += dt;
	}
	d->last_t = r->now;
	if (sched_queue_lookup(r->s, d->transport, DEST_KEY(d), &qi)) {
		d->obs_window = qi.window;
		d->obs_busy = qi.busy;
		if (qi.window > d->max_window)
			d->max_window = qi.window;
	} else {
		d->obs_window = d->obs_busy = 0;
	}
}

/* One line per MX group (dests with mx=): the provider's view. */
static void mx_report(const sim_t *sim, FILE *out)
{
	for (int i = 0; i < sim->ndests; i++) {
		const sim_dest_t *srv = &sim->dests[i];
		unsigned long dl = 0, cf = 0, rj = 0, ff = 0, fd = 0;
		int nd = 0;
		if (srv->mx == NULL || srv->server != srv)
			continue;
		for (int k = i; k < sim->ndests; k++) {
			const sim_dest_t *d = &sim->dests[k];
			if (d->server != srv)
				continue;
			nd++;
			dl += d->deliveries;
			cf += d->conn_fail;
			rj += d->rejected;
			ff += d->first_deliveries;
			fd += d->first_deferred;
		}
		fprintf(out, "mx %s: dests=%d max_connections=%d max_sessions=%d "
		    "deliveries=%lu conn_failures=%lu rejected_421=%lu "
		    "first_attempt_deferred=%lu (%.1f%%)\n", srv->mx, nd,
		    srv->max_conns, srv->max_sessions, dl, cf, rj, fd,
		    ff ? 100.0 * (double)fd / (double)ff : 0.0);
	}
}

static void sample(run_t *r)
{
	for (int i = 0; i < r->sim->ndests; i++) {
		sim_dest_t *d = &r->sim->dests[i];
		sched_queue_info_t qi;
		if (!sched_queue_lookup(r->s, d->transport, DEST_KEY(d), &qi))
			continue;
		fprintf(r->out, "%.3f,%s,%s,%d,%d,%zu,%s\n", r->now, d->transport,
		    d->name, qi.window, qi.busy, qi.todo_entries,
		    qi.suspended ? "suspended" : qi.probing ? "probing"
		    : qi.dead ? "dead" : "ok");
	}
}

static bool finished(const run_t *r)
{
	return r->arrivals_pending == 0 && r->flights == 0 && r->active == 0
	    && r->in_head == NULL && r->el_head == NULL && r->ndeferred == 0;
}

/* ---- Report. ---- */

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	size_t i;
	if (n == 0)
		return 0;
	i = (size_t)ceil(p / 100.0 * (double)n);
	if (i > 0)
		i--;
	if (i >= n)
		i = n - 1;
	return v[i];
}

static void print_latency_line(FILE *out, const char *what, double *v, size_t n)
{
	double sum = 0;
	if (n > 1)
		qsort(v, n, sizeof(*v), dbl_cmp);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	fprintf(out, "%s n=%zu", what, n);
	if (n)
		fprintf(out, " min=%.3f mean=%.3f p50=%.3f p90=%.3f p99=%.3f max=%.3f",
		    v[0], sum / (double)n, pct(v, n, 50), pct(v, n, 90),
		    pct(v, n, 99), v[n - 1]);
	fputc('\n', out);
}

struct lbl {
	char *label;
	size_t n, done, expired;
	double *lat;
	double last_done;
};

struct rsn {
	const char *text;
	long n;
};

static int rsn_cmp(const void *a, const void *b)
{
	const struct rsn *x = a, *y = b;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->text, y->text);
}

static void report(run_t *r)
{
	FILE *out = r->out;
	sim_t *sim = r->sim;
	double *lat = xcalloc(r->nmsgs + 1, sizeof(*lat));
	size_t nlat = 0, nlbl = 0;
	struct lbl *lbls = NULL;
	sched_stats_t st;

	fprintf(out, "scenario: %s\n", sim->name);
	fprintf(out, "end time: %.3f\n", r->now);
	fprintf(out, "messages: arrived=%lu delivered=%lu expired=%lu "
	    "still_queued=%lu retries=%lu\n", r->arrived, r->done, r->expired,
	    r->arrived - r->done - r->expired, r->retries);
	fprintf(out, "recipients: sent=%lu bounced=%lu deferrals=%lu\n",
	    r->rcpt_sent, r->rcpt_bounced, r->deferrals);
	for (size_t i = 0; i < r->nmsgs; i++) {
		sim_msg_t *sm = r->msgs[i];
		struct lbl *l = NULL;
		for (size_t k = 0; k < nlbl; k++)
			if (strcmp(lbls[k].label, sm->arr->label) == 0)
				l = &lbls[k];
		if (l == NULL) {
			lbls = xreallocarray(lbls, nlbl + 1, sizeof(*lbls));
			l = &lbls[nlbl++];
			memset(l, 0, sizeof(*l));
			l->label = sm->arr->label;
		}
		l->n++;
		if (sm->state == SIM_MSG_DONE) {
			lat[nlat++] = sm->final_time - sm->arrival;
			l->lat = xreallocarray(l->lat, l->done + 1, sizeof(*l->lat));
			l->lat[l->done++] = sm->final_time - sm->arrival;
			if (sm->final_time > l->last_done)
				l->last_done = sm->final_time;
		} else if (sm->state == SIM_MSG_EXPIRED)
			l->expired++;
	}
	print_latency_line(out, "latency:", lat, nlat);
	for (size_t k = 0; k < nlbl; k++) {
		str_t what = STR_INIT;
		str_setf(&what, "label %s: messages=%zu delivered=%zu expired=%zu "
		    "last_done=%.3f latency:", lbls[k].label, lbls[k].n,
		    lbls[k].done, lbls[k].expired, lbls[k].last_done);
		print_latency_line(out, str_cstr(&what), lbls[k].lat, lbls[k].done);
		str_release(&what);
		free(lbls[k].lat);
	}
	free(lbls);
	free(lat);
	for (int i = 0; i < sim->ndests; i++) {
		sim_dest_t *d = &sim->dests[i];
		fprintf(out, "dest %s: transport=%s deliveries=%lu conn_failures=%lu "
		    "refused=%lu timedout=%lu rejected_421=%lu sent=%lu deferred=%lu "
		    "bounced=%lu\n", d->name, d->transport, d->deliveries,
		    d->conn_fail, d->refused, d->timedout, d->rejected, d->sent,
		    d->deferred, d->bounced);
		fprintf(out, "dest %s: first_attempt_deliveries=%lu "
		    "first_attempt_deferred=%lu (%.1f%%) mean_window=%.2f "
		    "mean_concurrency=%.2f max_window=%d busy_time=%.1f\n", d->name,
		    d->first_deliveries, d->first_deferred,
		    d->first_deliveries ? 100.0 * (double)d->first_deferred
		    / (double)d->first_deliveries : 0.0,
		    d->busy_time > 0 ? d->w_integral / d->busy_time : 0.0,
		    d->busy_time > 0 ? d->b_integral / d->busy_time : 0.0,
		    d->max_window, d->busy_time);
		if (d->limits) {
			sched_limits_t base, l;
			str_t t = STR_INIT;
			sched_limits_init(&base);
			if (sched_limits_parse(d->limits, &base, &l, NULL))
				fprintf(out, "dest %s: limits=\"%s\"\n", d->name,
				    sched_limits_format(&l, &t));
			str_release(&t);
		}
		{
			size_t nb = (size_t)(r->now / attempt_interval(sim)) + 1;
			unsigned long mx = 0;
			fprintf(out, "dest %s: attempts_per_%gs=", d->name,
			    attempt_interval(sim));
			for (size_t b = 0; b < nb; b++) {
				unsigned long a = b < d->nattempts ? d->attempts[b] : 0;
				if (a > mx)
					mx = a;
				if (b < 100)
					fprintf(out, "%s%lu", b ? "," : "", a);
				else if (b == 100)
					fprintf(out, ",...");
			}
			fprintf(out, " max=%lu\n", mx);
		}
	}
	mx_report(sim, out);
	sched_get_stats(r->s, &st);
	fprintf(out, "core: selected=%lu preemptions=%lu suspended_rcpts=%lu "
	    "reads=%lu peak_rcpt=%ld rcpt_limit=%ld\n", st.selected,
	    st.preemptions, st.suspended_rcpts, st.reads, st.rcpt_peak,
	    sim->sp.message_recipient_limit);
	{
		size_t n;
		htable_entry_t **es = htable_list(r->reasons, &n);
		struct rsn *v = xcalloc(n + 1, sizeof(*v));
		for (size_t i = 0; i < n; i++) {
			v[i].text = es[i]->key;
			v[i].n = *(long *)es[i]->value;
		}
		qsort(v, n, sizeof(*v), rsn_cmp);
		for (size_t i = 0; i < n; i++)
			fprintf(out, "deferral: %ld \"%s\"\n", v[i].n, v[i].text);
		free(v);
		free(es);
	}
}

static void transport_line(const sched_transport_info_t *ti, void *ctx)
{
	run_t *r = ctx;
	fprintf(r->out, "transport %s: selected=%lu preemptions=%lu peak_rcpt=%ld "
	    "rcpt_limit=%ld extra_limit=%ld process_limit=%d\n", ti->name,
	    ti->selected, ti->preemptions, ti->rcpt_peak, ti->rcpt_limit,
	    ti->extra_limit, ti->process_limit);
}

static void latency_csv(run_t *r)
{
	fprintf(r->out, "message,label,arrival,final,latency,attempts,status\n");
	for (size_t i = 0; i < r->nmsgs; i++) {
		sim_msg_t *sm = r->msgs[i];
		bool fin = sm->state == SIM_MSG_DONE || sm->state == SIM_MSG_EXPIRED;
		fprintf(r->out, "%s,%s,%.3f,", sm->id, sm->arr->label, sm->arrival);
		if (fin)
			fprintf(r->out, "%.3f,%.3f", sm->final_time,
			    sm->final_time - sm->arrival);
		else
			fprintf(r->out, ",");
		fprintf(r->out, ",%d,%s\n", sm->attempts,
		    sm->state == SIM_MSG_DONE ? "delivered"
		    : sm->state == SIM_MSG_EXPIRED ? "expired" : "queued");
	}
}

/* ---- Run. ---- */

static void free_count(void *v)
{
	free(v);
}

/* The scenario's per-destination limits stand in for a rate table. */
static void cb_dest_limits(void *ctx, const char *transport,
    const char *nexthop, sched_limits_t *lim)
{
	run_t *r = ctx;
	sim_dest_t *d = htable_get(r->dest_by_name, nexthop);
	sched_limits_t l;

	(void)transport;
	if (d && d->limits && sched_limits_parse(d->limits, lim, &l, NULL))
		*lim = l;
}

void sim_run(sim_t *sim, const sim_opts_t *o, FILE *out)
{
	run_t r;
	sched_driver_t drv;
	sched_params_t sp = sim->sp;
	str_t err = STR_INIT;
	bool summary = o->summary || !(o->csv || o->latency || o->order);

	memset(&r, 0, sizeof(r));
	r.sim = sim;
	r.o = o;
	r.out = out;
	r.rng = sim->seed;
	r.wake_at = -1;
	r.reasons = htable_new(16, 0);
	r.dest_by_name = htable_new(16, HTABLE_FLAG_NOCASE);
	for (int i = 0; i < sim->ndests; i++) {
		sim_dest_t *d = &sim->dests[i];
		htable_add(r.dest_by_name, d->name, d);
		/* Dests of one mx group share the provider's server. */
		d->server = d;
		for (int k = 0; d->mx && k < i; k++)
			if (sim->dests[k].mx && strcasecmp(sim->dests[k].mx,
			    d->mx) == 0) {
				d->server = &sim->dests[k];
				break;
			}
	}
	if (sp.backoff.jitter > 0) {
		sp.backoff.rand = rnd_backoff;
		sp.backoff.rand_ctx = &r;
	}
	memset(&drv, 0, sizeof(drv));
	drv.ctx = &r;
	drv.read_more = cb_read_more;
	drv.rcpt_done = cb_rcpt_done;
	drv.msg_done = cb_msg_done;
	drv.dest_limits = cb_dest_limits;
	r.s = sched_new(&sp, &drv);
	for (int i = 0; i < sim->ndests; i++)
		for (int k = 0; sim->dests[i].limits && k < sim->ntransports; k++)
			if (strcmp(sim->transports[k].name,
			    sim->dests[i].transport) == 0)
				sim->transports[k].p.dest_limits = true;
	for (int i = 0; i < sim->ntransports; i++)
		if (sched_transport_add(r.s, sim->transports[i].name,
		    &sim->transports[i].p, &err) == NULL)
			log_fatal("qmgr-sim: %s", str_cstr(&err));
	str_release(&err);

	for (int i = 0; i < sim->narrivals; i++) {
		sim->arrivals[i].done = 0;
		if (sim->arrivals[i].repeat < 1)
			continue;
		ev_push(&r, sim->arrivals[i].at, EV_ARRIVAL, &sim->arrivals[i]);
		r.arrivals_pending++;
	}
	if (sim->queue_run_delay > 0)
		ev_push(&r, sim->queue_run_delay, EV_SCAN, NULL);
	if (o->csv) {
		fprintf(out, "time,transport,destination,window,busy,todo,state\n");
		ev_push(&r, 0, EV_SAMPLE, NULL);
	}

	while (r.nheap > 0) {
		ev_t ev = ev_pop(&r);
		if (ev.t > sim->run_end) {
			if (ev.type == EV_DONE) {
				flight_t *f = ev.p;
				free(f->res);
				free(f);
			}
			r.now = sim->run_end;
			break;
		}
		r.now = ev.t;
		switch (ev.type) {
		case EV_ARRIVAL: {
			sim_arrival_t *a = ev.p;
			for (long k = 0; k < a->count; k++)
				new_message(&r, a);
			if (++a->done < a->repeat)
				ev_push(&r, a->at + (double)a->done * a->every,
				    EV_ARRIVAL, a);
			else
				r.arrivals_pending--;
			break;
		}
		case EV_DONE:
			finish_delivery(&r, ev.p);
			break;
		case EV_SCAN:
			scan_deferred(&r);
			break;
		case EV_WAKE:
			if (ev.t == r.wake_at)
				r.wake_at = -1;
			break;
		case EV_SAMPLE:
			sample(&r);
			break;
		}
		intake(&r);
		dispatch(&r);
		if (o->check) {
			str_t e = STR_INIT;
			if (!sched_check(r.s, &e))
				log_panic("qmgr-sim: core inconsistent at %.3f: %s",
				    r.now, str_cstr(&e));
			str_release(&e);
		}
		if (finished(&r))
			break;
		/* Periodic events only while something is left to do. */
		if (ev.type == EV_SCAN)
			ev_push(&r, r.now + sim->queue_run_delay, EV_SCAN, NULL);
		else if (ev.type == EV_SAMPLE)
			ev_push(&r, r.now + sim->sample, EV_SAMPLE, NULL);
	}

	for (int i = 0; i < sim->ndests; i++)
		observe(&r, &sim->dests[i]);
	if (o->latency)
		latency_csv(&r);
	if (o->order)
		fprintf(out, "order: %s\n", str_cstr(&r.order));
	if (summary) {
		report(&r);
		sched_walk_transports(r.s, transport_line, &r);
	}
	{
		str_t e = STR_INIT;
		if (!sched_check(r.s, &e))
			log_panic("qmgr-sim: core inconsistent at the end: %s", str_cstr(&e));
		str_release(&e);
	}

	/* Flights still out at the end: drop them with the core. */
	while (r.nheap > 0) {
		ev_t ev = ev_pop(&r);
		if (ev.type == EV_DONE) {
			flight_t *f = ev.p;
			free(f->res);
			free(f);
		}
	}
	sched_free(r.s);
	free(r.heap);
	for (size_t i = 0; i < r.nmsgs; i++) {
		free(r.msgs[i]->done);
		free(r.msgs[i]);
	}
	free(r.msgs);
	free(r.deferred);
	str_release(&r.order);
	htable_free(r.reasons, free_count);
	htable_free(r.dest_by_name, NULL);
}

void sim_free(sim_t *s)
{
	if (s == NULL)
		return;
	for (int i = 0; i < s->ntransports; i++)
		free(s->transports[i].name);
	free(s->transports);
	for (int i = 0; i < s->ndests; i++) {
		free(s->dests[i].name);
		free(s->dests[i].transport);
		free(s->dests[i].mx);
		free(s->dests[i].key);
		free(s->dests[i].dead);
		free(s->dests[i].limits);
		free(s->dests[i].limit_at);
		free(s->dests[i].attempts);
	}
	free(s->dests);
	for (int i = 0; i < s->narrivals; i++) {
		free(s->arrivals[i].dests);
		free(s->arrivals[i].label);
	}
	free(s->arrivals);
	free(s->name);
	free(s);
}
