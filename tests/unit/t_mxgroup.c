/* Destination grouping by MX hosts (doc/scheduler.md section 11): the
 * group key of a nexthop (qmgr/mxgroup.c), its cache, the query qmgr
 * sends, and the core's keyed queues (sched_msg_offer_key) and
 * driver waits (sched_msg_wait/resume). */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "qmgr/mxgroup.h"
#include "libsched/sched.h"
#include "libsched/dsc.h"
#include "dns.h"
#include "mem.h"
#include "str.h"

/* ---- keys ---- */

ATF_TC_WITHOUT_HEAD(nexthop_kinds);
ATF_TC_BODY(nexthop_kinds, tc)
{
	char host[DNS_NAME_TEXTLEN];
	unsigned port;

	ATF_CHECK_EQ(mxgroup_nexthop("example.com", host, sizeof(host), &port),
	    MXG_LOOKUP);
	ATF_CHECK_STREQ(host, "example.com");
	ATF_CHECK_EQ(port, 0);
	ATF_CHECK_EQ(mxgroup_nexthop("example.com:2525", host, sizeof(host),
	    &port), MXG_LOOKUP);
	ATF_CHECK_STREQ(host, "example.com");
	ATF_CHECK_EQ(port, 2525);
	/* [host] and addresses name one server already: no lookup. */
	ATF_CHECK_EQ(mxgroup_nexthop("[mx.example.com]", host, sizeof(host),
	    &port), MXG_FIXED);
	ATF_CHECK_EQ(mxgroup_nexthop("[192.0.2.1]:25", host, sizeof(host),
	    &port), MXG_FIXED);
	ATF_CHECK_EQ(mxgroup_nexthop("192.0.2.1", host, sizeof(host), &port),
	    MXG_FIXED);
	ATF_CHECK_EQ(mxgroup_nexthop("[IPv6:2001:db8::1]", host, sizeof(host),
	    &port), MXG_FIXED);
	/* Garbage is left to the agent, under its own name. */
	ATF_CHECK_EQ(mxgroup_nexthop("", host, sizeof(host), &port), MXG_FIXED);
	ATF_CHECK_EQ(mxgroup_nexthop("bad host", host, sizeof(host), &port),
	    MXG_FIXED);
	ATF_CHECK_EQ(mxgroup_nexthop("[x", host, sizeof(host), &port), MXG_FIXED);
	ATF_CHECK_EQ(mxgroup_nexthop("a.example:99999", host, sizeof(host),
	    &port), MXG_FIXED);
}

static dns_rr_t mx(unsigned pref, const char *name, uint32_t ttl)
{
	dns_rr_t rr;
	memset(&rr, 0, sizeof(rr));
	rr.type = DNS_T_MX;
	rr.pref = pref;
	rr.name = (char *)name;
	rr.ttl = ttl;
	return rr;
}

/* The key of domain from records, or "FAIL: reason". */
static const char *key_of(const char *domain, unsigned port,
    enum dns_status st, dns_rr_t *rr, size_t n, double *ttl)
{
	static char out[4096];
	dns_reply_t rep = DNS_REPLY_INIT;
	str_t key = STR_INIT, why = STR_INIT;
	double t = -1;

	rep.rr = rr;
	rep.nrr = n;
	if (mxgroup_key_from_reply(domain, port, st, &rep, &key, &t, &why))
		snprintf(out, sizeof(out), "%s", str_cstr(&key));
	else
		snprintf(out, sizeof(out), "FAIL: %s", str_cstr(&why));
	if (ttl)
		*ttl = t;
	str_release(&key);
	str_release(&why);
	return out;
}

ATF_TC_WITHOUT_HEAD(key_from_mx);
ATF_TC_BODY(key_from_mx, tc)
{
	dns_rr_t a[] = { mx(20, "MX2.Provider.example.", 600),
	    mx(10, "mx1.provider.example", 300),
	    mx(30, "mx1.provider.example.", 900) };
	dns_rr_t b[] = { mx(5, "mx1.provider.example", 100000),
	    mx(5, "mx2.provider.example", 100000) };
	dns_rr_t c[] = { mx(10, "mx.example", 5) };
	double ttl;

	/* All preferences, lower case, no trailing dot, sorted, once. */
	ATF_CHECK_STREQ(key_of("a.example", 0, DNS_FOUND, a, 3, &ttl),
	    "{mx1.provider.example,mx2.provider.example}");
	ATF_CHECK_EQ(ttl, 300);
	/* Another domain with the same hosts in another order and other
	 * preferences: the same group. */
	ATF_CHECK_STREQ(key_of("b.example", 0, DNS_FOUND, b, 2, &ttl),
	    "{mx1.provider.example,mx2.provider.example}");
	ATF_CHECK_EQ(ttl, MXG_TTL_MAX);
	ATF_CHECK_STREQ(key_of("c.example", 0, DNS_FOUND, c, 1, &ttl),
	    "{mx.example}");
	ATF_CHECK_EQ(ttl, MXG_TTL_MIN);
	/* An explicit port is part of the key. */
	ATF_CHECK_STREQ(key_of("c.example", 2525, DNS_FOUND, c, 1, NULL),
	    "{mx.example}:2525");
	/* No MX: the domain is its own host. */
	ATF_CHECK_STREQ(key_of("NoMX.Example.", 0, DNS_NODATA, NULL, 0, NULL),
	    "{nomx.example}");
}

ATF_TC_WITHOUT_HEAD(key_fallbacks);
ATF_TC_BODY(key_fallbacks, tc)
{
	dns_rr_t null[] = { mx(0, ".", 300) };
	dns_rr_t bad[] = { mx(10, "bad\\032name", 300), mx(20, ".", 300) };
	dns_rr_t mixed[] = { mx(10, "bad\\032name", 300),
	    mx(20, "good.example", 300) };
	dns_rr_t many[MXG_MAX_HOSTS + 1];
	char names[MXG_MAX_HOSTS + 1][32];

	ATF_CHECK_STREQ(key_of("n.example", 0, DNS_FOUND, null, 1, NULL),
	    "FAIL: null MX");
	ATF_CHECK_STREQ(key_of("n.example", 0, DNS_NXDOMAIN, NULL, 0, NULL),
	    "FAIL: the domain does not exist");
	ATF_CHECK(strncmp(key_of("n.example", 0, DNS_TEMPFAIL, NULL, 0, NULL),
	    "FAIL: MX lookup failed", 22) == 0);
	ATF_CHECK(strncmp(key_of("n.example", 0, DNS_MALFORMED, NULL, 0, NULL),
	    "FAIL: MX lookup failed", 22) == 0);
	ATF_CHECK_STREQ(key_of("n.example", 0, DNS_FOUND, bad, 2, NULL),
	    "FAIL: no usable MX host name");
	ATF_CHECK_STREQ(key_of("n.example", 0, DNS_FOUND, mixed, 2, NULL),
	    "{good.example}");
	for (int i = 0; i <= MXG_MAX_HOSTS; i++) {
		snprintf(names[i], sizeof(names[i]), "mx%d.example", i);
		many[i] = mx(10, names[i], 300);
	}
	ATF_CHECK(strncmp(key_of("n.example", 0, DNS_FOUND, many,
	    MXG_MAX_HOSTS, NULL), "{mx0.example,", 13) == 0);
	ATF_CHECK_STREQ(key_of("n.example", 0, DNS_FOUND, many,
	    MXG_MAX_HOSTS + 1, NULL), "FAIL: more than 32 MX hosts");
}

/* ---- the cache ---- */

ATF_TC_WITHOUT_HEAD(cache);
ATF_TC_BODY(cache, tc)
{
	mxg_cache_t *c = mxgroup_cache_new(3);
	mxg_entry_t *e, *p;

	ATF_CHECK(mxgroup_cache_get(c, "a.example", 0) == NULL);
	e = mxgroup_cache_add(c, "a.example", 0);
	ATF_CHECK(e->key == NULL);		/* pending */
	ATF_CHECK(mxgroup_cache_get(c, "A.Example", 1000) == e);
	mxgroup_cache_set(e, "{mx.example}", 60, 10);
	ATF_CHECK_STREQ(e->key, "{mx.example}");
	ATF_CHECK(!e->fallback);
	ATF_CHECK(mxgroup_cache_get(c, "a.example", 69) == e);
	ATF_CHECK(mxgroup_cache_get(c, "a.example", 70) == NULL); /* expired */
	ATF_CHECK_EQ(mxgroup_cache_size(c), 0);
	/* A fallback is the nexthop itself. */
	e = mxgroup_cache_add(c, "b.example", 0);
	mxgroup_cache_set(e, NULL, MXG_FAIL_TTL, 0);
	ATF_CHECK_STREQ(e->key, "b.example");
	ATF_CHECK(e->fallback);
	/* Full: expired entries go first, then everything not pending. */
	p = mxgroup_cache_add(c, "p.example", 0);	/* stays pending */
	e = mxgroup_cache_add(c, "c.example", 0);
	mxgroup_cache_set(e, "{mx.example}", 3600, 0);
	ATF_CHECK_EQ(mxgroup_cache_size(c), 3);
	(void)mxgroup_cache_add(c, "d.example", 100);	/* b expired */
	ATF_CHECK(mxgroup_cache_get(c, "b.example", 100) == NULL);
	ATF_CHECK(mxgroup_cache_get(c, "c.example", 100) != NULL);
	ATF_CHECK_EQ(mxgroup_cache_size(c), 3);
	(void)mxgroup_cache_add(c, "e.example", 100);	/* none expired */
	ATF_CHECK(mxgroup_cache_get(c, "c.example", 100) == NULL);
	ATF_CHECK(mxgroup_cache_get(c, "p.example", 100) == p);
	ATF_CHECK(mxgroup_cache_get(c, "d.example", 100) != NULL);
	ATF_CHECK(mxgroup_cache_get(c, "e.example", 100) != NULL);
	mxgroup_cache_free(c);
}

/* ---- the query qmgr sends ---- */

ATF_TC_WITHOUT_HEAD(query);
ATF_TC_BODY(query, tc)
{
	str_t why = STR_INIT;
	dns_resolver_t *r = dns_resolver_new("127.0.0.1:5353", &why);
	unsigned char q[512];
	ssize_t n;
	dns_reply_t rep = DNS_REPLY_INIT;
	struct sockaddr_in sin;

	ATF_REQUIRE_MSG(r != NULL, "%s", str_cstr(&why));
	ATF_REQUIRE_EQ(dns_resolver_server(r, &sin, &why), 0);
	ATF_CHECK_EQ(ntohs(sin.sin_port), 5353);
	n = dns_query_make(r, "a.example", DNS_T_MX, q, sizeof(q), &why);
	ATF_REQUIRE_MSG(n > 12, "%s", str_cstr(&why));
	/* Made into an empty answer, it is a well-formed reply to exactly
	 * that question. */
	q[2] |= 0x80;
	ATF_CHECK_EQ(dns_parse_reply(q, (size_t)n, "a.example", DNS_T_MX, &rep,
	    &why), DNS_NODATA);
	dns_reply_free(&rep);
	ATF_CHECK_EQ(dns_parse_reply(q, (size_t)n, "b.example", DNS_T_MX, &rep,
	    &why), DNS_MALFORMED);
	dns_reply_free(&rep);
	ATF_CHECK_EQ(dns_query_make(r, "bad name", DNS_T_MX, q, sizeof(q),
	    &why), -1);
	dns_resolver_free(r);
	str_release(&why);
}

/* ---- the core: keyed queues and driver waits ---- */

typedef struct g_msg {
	const char *nexthops[8];
	const char *keys[8];		/* NULL: the nexthop */
	int n, next;
	int wait_at;			/* -1: never; else wait once here */
	bool done;
	int sent, deferred, suspended;
	sched_msg_t *sm;
} g_msg_t;

typedef struct g {
	sched_t *s;
	sched_entry_t *fl[64];
	int nfl;
	int max_busy;
} g_t;

static size_t g_read_more(void *ctx, sched_msg_t *m, double now)
{
	g_msg_t *gm = sched_msg_ctx(m);
	(void)ctx;
	(void)now;
	while (gm->next < gm->n) {
		char addr[64];
		if (gm->next == gm->wait_at) {
			gm->wait_at = -1;
			sched_msg_wait(m);
			break;
		}
		snprintf(addr, sizeof(addr), "u%d@%s", gm->next,
		    gm->nexthops[gm->next]);
		if (!sched_msg_offer_key(m, "smtp", gm->nexthops[gm->next],
		    gm->keys[gm->next], addr,
		    (sched_cookie_t){ .index = (uint64_t)gm->next }))
			break;
		gm->next++;
	}
	return (size_t)(gm->n - gm->next);
}

static void g_rcpt_done(void *ctx, sched_msg_t *m, const sched_rcpt_t *r,
    sched_rcpt_status_t st, const char *reason, double now)
{
	g_msg_t *gm = sched_msg_ctx(m);
	(void)ctx;
	(void)r;
	(void)now;
	if (st == SCHED_RCPT_SENT)
		gm->sent++;
	else {
		gm->deferred++;
		if (reason && strstr(reason, "temporarily suspended"))
			gm->suspended++;
	}
}

static void g_msg_done(void *ctx, sched_msg_t *m, const sched_msg_result_t *res,
    double now)
{
	g_msg_t *gm = sched_msg_ctx(m);
	(void)ctx;
	(void)res;
	(void)now;
	gm->done = true;
}

static void g_init(g_t *g, int initial)
{
	sched_params_t sp;
	sched_tparams_t tp;
	sched_driver_t drv;
	str_t err = STR_INIT;

	memset(g, 0, sizeof(*g));
	memset(&drv, 0, sizeof(drv));
	sched_params_init(&sp);
	drv.ctx = g;
	drv.read_more = g_read_more;
	drv.rcpt_done = g_rcpt_done;
	drv.msg_done = g_msg_done;
	g->s = sched_new(&sp, &drv);
	sched_tparams_init(&tp, "smtp");
	tp.conc.initial_concurrency = initial;
	tp.destination_recipient_limit = 1;
	ATF_REQUIRE(sched_transport_add(g->s, "smtp", &tp, &err) != NULL);
	str_release(&err);
}

static void g_add(g_t *g, g_msg_t *gm, const char *id, double now)
{
	sched_msg_desc_t d;
	memset(&d, 0, sizeof(d));
	d.id = id;
	d.recipients = (size_t)gm->n;
	d.ctx = gm;
	gm->sm = sched_msg_add(g->s, &d, now);
}

static int g_dispatch(g_t *g, double now)
{
	sched_entry_t *e;
	int n = 0;
	while (g->nfl < 64 && (e = sched_select(g->s, now)) != NULL) {
		g->fl[g->nfl++] = e;
		n++;
	}
	if (g->nfl > g->max_busy)
		g->max_busy = g->nfl;
	return n;
}

static void g_finish_all(g_t *g, int flags, double now)
{
	while (g->nfl > 0)
		sched_delivery_done(g->s, g->fl[--g->nfl], NULL, flags,
		    flags ? "connect to mx.provider.example[192.0.2.1]:25: "
		    "Connection refused" : NULL, now);
}

static void g_check(g_t *g)
{
	str_t err = STR_INIT;
	bool ok = sched_check(g->s, &err);
	ATF_REQUIRE_MSG(ok, "sched_check: %s", str_cstr(&err));
	str_release(&err);
}

/* Three domains, 4 recipients each, one at a time per delivery. */
static void three_domains(g_msg_t *gm, const char *key)
{
	static const char *d[3] = { "a.example", "b.example", "c.example" };
	memset(gm, 0, sizeof(*gm));
	gm->n = 8;
	gm->wait_at = -1;
	for (int i = 0; i < gm->n; i++) {
		gm->nexthops[i] = d[i % 3];
		gm->keys[i] = key;
	}
}

ATF_TC_WITHOUT_HEAD(core_shared_window);
ATF_TC_BODY(core_shared_window, tc)
{
	g_t g;
	g_msg_t on, off;
	sched_queue_info_t qi;
	bool seen[3] = { false, false, false };

	/* Grouped: one window of 2 for the three domains. */
	g_init(&g, 2);
	three_domains(&on, "{mx.provider.example}");
	g_add(&g, &on, "ON", 0);
	ATF_CHECK_EQ(g_dispatch(&g, 0), 2);
	ATF_REQUIRE(sched_queue_lookup(g.s, "smtp", "{mx.provider.example}",
	    &qi));
	ATF_CHECK_EQ(qi.busy, 2);
	ATF_CHECK(!sched_queue_lookup(g.s, "smtp", "a.example", &qi));
	/* Each delivery still carries its own domain. */
	for (int round = 0; round < 10 && !on.done; round++) {
		for (int i = 0; i < g.nfl; i++) {
			const char *nh = sched_entry_nexthop(g.fl[i]);
			ATF_CHECK(nh[0] >= 'a' && nh[0] <= 'c');
			seen[nh[0] - 'a'] = true;
			for (size_t k = 0; k < sched_entry_count(g.fl[i]); k++)
				ATF_CHECK(strstr(sched_entry_rcpt(g.fl[i], k)->addr,
				    nh) != NULL);
		}
		g_check(&g);
		g_finish_all(&g, 0, round + 1);
		g_dispatch(&g, round + 1);
	}
	ATF_CHECK(on.done);
	ATF_CHECK_EQ(on.sent, 8);
	ATF_CHECK(seen[0] && seen[1] && seen[2]);
	/* The window grew with positive feedback, but never per domain. */
	ATF_CHECK(g.max_busy <= 8);
	sched_free(g.s);

	/* By domain: three windows of 2. */
	g_init(&g, 2);
	three_domains(&off, NULL);
	g_add(&g, &off, "OFF", 0);
	ATF_CHECK_EQ(g_dispatch(&g, 0), 6);
	g_finish_all(&g, 0, 1);
	sched_free(g.s);
}

ATF_TC_WITHOUT_HEAD(core_shared_death);
ATF_TC_BODY(core_shared_death, tc)
{
	g_t g;
	g_msg_t m1, m2;

	g_init(&g, 2);
	three_domains(&m1, "{mx.provider.example}");
	g_add(&g, &m1, "M1", 0);
	ATF_CHECK_EQ(g_dispatch(&g, 0), 2);
	/* Both connections refused: the group is dead (failed cohorts
	 * 2 x 1/2 > limit 1 is reached on the second), and so is every
	 * domain in it. */
	g_finish_all(&g, SCHED_DLV_CONN_FAIL, 1);
	g_check(&g);
	ATF_CHECK(m1.done);
	ATF_CHECK_EQ(m1.deferred, 8);
	ATF_CHECK_EQ(m1.suspended, 6);
	ATF_CHECK_EQ(dsc_count(sched_dsc(g.s)), 1);
	ATF_CHECK(dsc_peek(sched_dsc(g.s), "smtp", "{mx.provider.example}",
	    NULL) != NULL);
	/* New mail for another domain of the group: deferred at once. */
	memset(&m2, 0, sizeof(m2));
	m2.n = 1;
	m2.wait_at = -1;
	m2.nexthops[0] = "c.example";
	m2.keys[0] = "{mx.provider.example}";
	g_add(&g, &m2, "M2", 2);
	ATF_CHECK_EQ(g_dispatch(&g, 2), 0);
	ATF_CHECK(m2.done);
	ATF_CHECK_EQ(m2.suspended, 1);
	/* Clearing the group's entry by its key revives it. */
	ATF_CHECK_EQ(sched_dsc_clear(g.s, "{mx.provider.example}", 3), 1);
	ATF_CHECK_EQ(dsc_count(sched_dsc(g.s)), 0);
	sched_free(g.s);
}

ATF_TC_WITHOUT_HEAD(core_wait_resume);
ATF_TC_BODY(core_wait_resume, tc)
{
	g_t g;
	g_msg_t m;

	g_init(&g, 5);
	three_domains(&m, "{mx.provider.example}");
	m.wait_at = 3;			/* the 4th recipient's key is pending */
	g_add(&g, &m, "W", 0);
	ATF_CHECK_EQ(m.next, 3);
	ATF_CHECK_EQ(g_dispatch(&g, 0), 3);
	g_finish_all(&g, 0, 1);
	g_check(&g);
	/* Not finished, not deferred: waiting for the driver. */
	ATF_CHECK(!m.done);
	ATF_CHECK_EQ(m.deferred, 0);
	ATF_CHECK_EQ(g_dispatch(&g, 1), 0);
	ATF_CHECK_EQ(m.next, 3);
	ATF_CHECK_EQ(m.sent, 3);
	sched_msg_resume(NULL, 2);		/* harmless */
	/* Resumed: the rest is read and delivered. */
	ATF_REQUIRE(m.sm != NULL);
	sched_msg_resume(m.sm, 2);
	ATF_CHECK_EQ(m.next, 8);
	ATF_CHECK_EQ(g_dispatch(&g, 2), 5);
	g_finish_all(&g, 0, 3);
	g_check(&g);
	ATF_CHECK(m.done);
	ATF_CHECK_EQ(m.sent, 8);
	ATF_CHECK_EQ(m.deferred, 0);
	sched_free(g.s);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, nexthop_kinds);
	ATF_TP_ADD_TC(tp, key_from_mx);
	ATF_TP_ADD_TC(tp, key_fallbacks);
	ATF_TP_ADD_TC(tp, cache);
	ATF_TP_ADD_TC(tp, query);
	ATF_TP_ADD_TC(tp, core_shared_window);
	ATF_TP_ADD_TC(tp, core_shared_death);
	ATF_TP_ADD_TC(tp, core_wait_resume);
	return atf_no_error();
}
