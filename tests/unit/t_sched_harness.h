/* A tiny deterministic driver for the scheduler core, shared by the
 * t_sched*.c unit tests: messages are arrays of recipients spread over
 * destinations, deliveries take a fixed time per destination, and the
 * selection order is recorded as a string of message labels. */
#ifndef T_SCHED_HARNESS_H
#define T_SCHED_HARNESS_H
#include <atf-c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libsched/sched.h"
#include "mem.h"

#define H_MAXMSG 256
#define H_MAXFLIGHT 256

typedef struct h_msg {
	char label;
	char id[16];
	long n;				/* recipients */
	long next;			/* next to offer */
	const char *dests[4];		/* round-robin over these */
	int ndests;
	const char *transport;
	bool done;
	sched_msg_result_t res;
	double done_time;
	long sent, deferred, bounced;
} h_msg_t;

typedef struct h_flight {
	sched_entry_t *e;
	double end;
	int flags;
	const char *reason;
} h_flight_t;

typedef struct h {
	sched_t *s;
	sched_params_t sp;
	h_msg_t msgs[H_MAXMSG];
	int nmsgs;
	h_flight_t fl[H_MAXFLIGHT];
	int nfl;
	char order[4096];
	size_t olen;
	double now;
	/* Per destination behaviour: service time, and a hook that can fail
	 * the delivery. */
	double (*service)(struct h *, const char *dest);
	int (*outcome)(struct h *, sched_entry_t *e, const char **reason);
	long max_in_core;		/* peak seen by the harness itself */
	int msgs_done;
	char last_defer_reason[256];
	long suspended_reasons;		/* "delivery temporarily suspended: ..." */
	char hops[1024];		/* first letter of each selected nexthop */
	size_t nhops;
} h_t;

static size_t h_read_more(void *ctx, sched_msg_t *m, double now)
{
	h_msg_t *hm = sched_msg_ctx(m);
	char addr[64];
	(void)ctx;
	(void)now;
	while (hm->next < hm->n) {
		const char *d = hm->dests[hm->next % hm->ndests];
		snprintf(addr, sizeof(addr), "u%ld@%s", hm->next, d);
		if (!sched_msg_offer(m, hm->transport, d, addr,
		    (sched_cookie_t){ .index = (uint64_t)hm->next }))
			break;
		hm->next++;
	}
	return (size_t)(hm->n - hm->next);
}

static void h_rcpt_done(void *ctx, sched_msg_t *m, const sched_rcpt_t *r,
    sched_rcpt_status_t st, const char *reason, double now)
{
	h_t *h = ctx;
	h_msg_t *hm = sched_msg_ctx(m);
	(void)r;
	(void)now;
	if (st == SCHED_RCPT_SENT)
		hm->sent++;
	else if (st == SCHED_RCPT_BOUNCED)
		hm->bounced++;
	else {
		hm->deferred++;
		if (reason && strncmp(reason, "delivery temporarily suspended: ", 32) == 0)
			h->suspended_reasons++;
		snprintf(h->last_defer_reason, sizeof(h->last_defer_reason), "%s",
		    reason ? reason : "");
	}
}

static void h_msg_done(void *ctx, sched_msg_t *m, const sched_msg_result_t *res,
    double now)
{
	h_t *h = ctx;
	h_msg_t *hm = sched_msg_ctx(m);
	hm->done = true;
	hm->res = *res;
	hm->done_time = now;
	h->msgs_done++;
}

static void h_selected(void *ctx, const sched_entry_t *e, double now)
{
	h_t *h = ctx;
	(void)now;
	if (h->nhops + 1 < sizeof(h->hops)) {
		h->hops[h->nhops++] = sched_entry_nexthop(e)[0];
		h->hops[h->nhops] = 0;
	}
}

static double h_default_service(h_t *h, const char *dest)
{
	(void)h;
	(void)dest;
	return 1;
}

static void h_init(h_t *h, const sched_params_t *sp)
{
	sched_driver_t drv = { 0 };
	memset(h, 0, sizeof(*h));
	if (sp)
		h->sp = *sp;
	else
		sched_params_init(&h->sp);
	drv.ctx = h;
	drv.read_more = h_read_more;
	drv.rcpt_done = h_rcpt_done;
	drv.msg_done = h_msg_done;
	drv.selected = h_selected;
	h->s = sched_new(&h->sp, &drv);
	h->service = h_default_service;
}

static sched_transport_t *h_transport(h_t *h, const char *name,
    const sched_tparams_t *tp)
{
	str_t err = STR_INIT;
	sched_transport_t *t = sched_transport_add(h->s, name, tp, &err);
	ATF_REQUIRE_MSG(t != NULL, "%s", str_cstr(&err));
	str_release(&err);
	return t;
}

static h_msg_t *h_add(h_t *h, char label, long n, const char *transport,
    const char *dest)
{
	h_msg_t *hm;
	sched_msg_desc_t d = { 0 };
	ATF_REQUIRE(h->nmsgs < H_MAXMSG);
	hm = &h->msgs[h->nmsgs++];
	hm->label = label;
	snprintf(hm->id, sizeof(hm->id), "M%d%c", h->nmsgs, label);
	hm->n = n;
	hm->dests[0] = dest;
	hm->ndests = 1;
	hm->transport = transport;
	d.id = hm->id;
	d.arrival = h->now;
	d.recipients = (size_t)n;
	d.ctx = hm;
	sched_msg_add(h->s, &d, h->now);
	return hm;
}

static void h_check(h_t *h)
{
	str_t err = STR_INIT;
	bool ok = sched_check(h->s, &err);
	ATF_REQUIRE_MSG(ok, "sched_check: %s", str_cstr(&err));
	str_release(&err);
}

/* Start everything that can start now. */
static int h_dispatch(h_t *h)
{
	sched_entry_t *e;
	int n = 0;
	while (h->nfl < H_MAXFLIGHT && (e = sched_select(h->s, h->now)) != NULL) {
		h_msg_t *hm = sched_msg_ctx(sched_entry_msg(e));
		h_flight_t *f = &h->fl[h->nfl++];
		f->e = e;
		f->end = h->now + h->service(h, sched_entry_nexthop(e));
		f->flags = h->outcome ? h->outcome(h, e, &f->reason) : 0;
		if (h->olen + 1 < sizeof(h->order)) {
			h->order[h->olen++] = hm->label;
			h->order[h->olen] = 0;
		}
		n++;
	}
	return n;
}

/* Complete the earliest delivery (ties: the one started first). */
static bool h_step(h_t *h)
{
	int best = -1;
	for (int i = 0; i < h->nfl; i++)
		if (best < 0 || h->fl[i].end < h->fl[best].end)
			best = i;
	if (best < 0)
		return false;
	h_flight_t f = h->fl[best];
	memmove(&h->fl[best], &h->fl[best + 1],
	    (size_t)(h->nfl - best - 1) * sizeof(h->fl[0]));
	h->nfl--;
	if (f.end > h->now)
		h->now = f.end;
	sched_delivery_done(h->s, f.e, NULL, f.flags, f.reason, h->now);
	return true;
}

/* Run until nothing is in flight and nothing can start; bounded. */
static void h_run(h_t *h, int max_steps)
{
	sched_stats_t st;
	for (int i = 0; i < max_steps; i++) {
		h_dispatch(h);
		sched_get_stats(h->s, &st);
		if (st.rcpt_in_core > h->max_in_core)
			h->max_in_core = st.rcpt_in_core;
		if (!h_step(h))
			break;
	}
	h_check(h);
}

/* Complete deliveries that end by time t (dispatching after each, except
 * at t itself), then set the clock to t: the caller can add messages
 * that arrive at t before the next dispatch. */
__attribute__((unused)) static void h_run_until(h_t *h, double t)
{
	if (h->now < t)
		h_dispatch(h);
	for (int i = 0; i < 100000; i++) {
		int best = -1;
		for (int k = 0; k < h->nfl; k++)
			if (best < 0 || h->fl[k].end < h->fl[best].end)
				best = k;
		if (best < 0 || h->fl[best].end > t)
			break;
		h_step(h);
		if (h->now < t)
			h_dispatch(h);
	}
	if (h->now < t)
		h->now = t;
	h_check(h);
}

struct h_jobs_ctx {
	char buf[512];
	size_t len;
};

static void h_jobs_one(const sched_job_info_t *ji, void *v)
{
	struct h_jobs_ctx *c = v;
	const h_msg_t *hm = ji->msg_ctx;
	char parent = '-';
	if (ji->parent_id)
		parent = ji->parent_id[strlen(ji->parent_id) - 1];
	if (c->len + 16 < sizeof(c->buf))
		c->len += (size_t)snprintf(c->buf + c->len, sizeof(c->buf) - c->len,
		    "%s%c/%d/%c%s", c->len ? "," : "", hm->label, ji->stack_level,
		    parent, ji->blocker ? "b" : "");
}

/* The job list of a transport as "LABEL/LEVEL/PARENT[b],...". */
__attribute__((unused)) static const char *h_jobs(h_t *h, const char *transport, char *out, size_t size)
{
	struct h_jobs_ctx c = { "", 0 };
	sched_walk_jobs(h->s, sched_transport_find(h->s, transport), h_jobs_one, &c);
	bcopy_str(out, size, c.buf);
	return out;
}

static void h_free(h_t *h)
{
	sched_free(h->s);
}

#endif
