/* Unit tests of finding the servers of a next hop (libglobal/dns_mx.c):
 * the resolver's transport is replaced by a fake that builds replies from
 * a table here, so no query leaves the process.  The native (getaddrinfo)
 * tests use only "localhost" and numeric addresses, which /etc/hosts and
 * the library answer without a name server. */
#include <atf-c.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "dns.h"
#include "pconfig.h"
#include "t_dns_pkt.h"

/* ---- a fake name server ---- */

struct zrec {
	const char *name;
	uint16_t type;
	const char *data;	/* "10 mx.example.com", "192.0.2.1", CNAME target */
};

struct fake {
	const struct zrec *recs;
	const char *servfail;	/* names answering SERVFAIL, " a b " */
	const char *timeout;	/* names never answering */
	const char *garbage;	/* names answering with a broken packet */
	int nq;
	str_t log;		/* "name/TYPE " per query */
};

static bool listed(const char *list, const char *name)
{
	char key[300];
	if (list == NULL)
		return false;
	snprintf(key, sizeof(key), " %s ", name);
	return strstr(list, key) != NULL;
}

static ssize_t fake_transport(void *ctx, const char *name, uint16_t type,
    unsigned char *buf, size_t size)
{
	struct fake *f = ctx;
	pkt_t p;
	char tb[16];
	bool exists = false;

	f->nq++;
	str_catf(&f->log, "%s/%s ", name, dns_type_str(type, tb, sizeof(tb)));
	if (listed(f->timeout, name)) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (listed(f->servfail, name)) {
		p_reply(&p, name, type, 2);
	} else {
		p_reply(&p, name, type, 0);
		for (const struct zrec *z = f->recs; z && z->name; z++) {
			if (!dns_name_equal(z->name, name))
				continue;
			exists = true;
			if (z->type == type && type == DNS_T_MX) {
				unsigned pref;
				char host[256];
				ATF_REQUIRE(sscanf(z->data, "%u %255s", &pref, host) == 2);
				p_mx(&p, SEC_AN, name, pref, host);
			} else if (z->type == type && type == DNS_T_A) {
				p_a(&p, SEC_AN, name, z->data);
			} else if (z->type == type && type == DNS_T_AAAA) {
				p_aaaa(&p, SEC_AN, name, z->data);
			}
		}
		if (!exists)
			p.b[3] = (p.b[3] & 0xF0) | 3;	/* NXDOMAIN */
	}
	if (listed(f->garbage, name))
		p.n -= 1;
	ATF_REQUIRE(p.n <= size);
	memcpy(buf, p.b, p.n);
	return (ssize_t)p.n;
}

/* A transport that fails the test: for cases that must not query. */
static ssize_t no_transport(void *ctx, const char *name, uint16_t type,
    unsigned char *buf, size_t size)
{
	(void)ctx; (void)type; (void)buf; (void)size;
	atf_tc_fail("unexpected DNS query for %s", name);
	return -1;
}

/* ---- deterministic random numbers ---- */

struct seq {
	const uint32_t *v;
	size_t n, i;
};

static uint32_t seq_rand(void *ctx)
{
	struct seq *s = ctx;
	return s->v[s->i++ % s->n];
}

static uint32_t lcg_rand(void *ctx)
{
	uint32_t *s = ctx;
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* ---- helpers ---- */

static void opts_init(dns_opts_t *o, dns_resolver_t *r)
{
	memset(o, 0, sizeof(*o));
	o->lookup = DNS_LOOKUP_DNS;
	o->families = DNS_INET4 | DNS_INET6;
	o->prefer = DNS_PREFER_ANY;
	o->resolver = r;
	o->myhostname = "me.example.org";
}

static dns_resolver_t *fake_resolver(struct fake *f)
{
	dns_resolver_t *r = dns_resolver_new(NULL, NULL);
	ATF_REQUIRE(r != NULL);
	dns_resolver_set_transport(r, fake_transport, f);
	return r;
}

/* "host[addr]:port/pref host[addr]:port/pref" */
static void render(const dns_servers_t *s, str_t *out)
{
	str_reset(out);
	for (size_t i = 0; i < s->n; i++) {
		char pb[16] = "-";
		if (s->v[i].pref != DNS_PREF_NONE)
			snprintf(pb, sizeof(pb), "%d", s->v[i].pref);
		str_catf(out, "%s%s[%s]:%u/%s", i ? " " : "", s->v[i].hostname,
		    s->v[i].addrstr, s->v[i].port, pb);
	}
}

/* Runs a lookup of spec and checks the rendered list (result OK), or the
 * result, DSN and a fragment of the reason. */
static void expect_ok(const char *spec, const dns_opts_t *o, const char *want)
{
	dns_nexthop_t nh;
	dns_servers_t s;
	str_t why = STR_INIT, text = STR_INIT;

	ATF_REQUIRE_EQ_MSG(dns_nexthop_parse(spec, 25, &nh, &why), 0, "%s", str_cstr(&why));
	enum dns_result res = dns_find_servers(&nh, o, &s);
	ATF_CHECK_EQ_MSG(res, DNS_RESULT_OK, "%s: %s %s", spec, s.dsn, str_cstr(&s.reason));
	render(&s, &text);
	ATF_CHECK_STREQ_MSG(str_cstr(&text), want, "%s", spec);
	for (size_t i = 0; i < s.n; i++) {
		/* The address carries the port. */
		char ap[SOCK_ADDR_STRLEN], want_ap[SOCK_ADDR_STRLEN + 8];
		sock_addr_port_str((struct sockaddr *)&s.v[i].addr, ap, sizeof(ap));
		snprintf(want_ap, sizeof(want_ap), s.v[i].addr.ss_family == AF_INET6 ?
		    "[%s]:%u" : "%s:%u", s.v[i].addrstr, s.v[i].port);
		ATF_CHECK_STREQ(ap, want_ap);
	}
	dns_servers_free(&s);
	str_release(&why);
	str_release(&text);
}

static void expect_fail(const char *spec, const dns_opts_t *o, enum dns_result want,
    const char *dsn, const char *reason)
{
	dns_nexthop_t nh;
	dns_servers_t s;
	str_t why = STR_INIT;

	ATF_REQUIRE_EQ_MSG(dns_nexthop_parse(spec, 25, &nh, &why), 0, "%s", str_cstr(&why));
	enum dns_result res = dns_find_servers(&nh, o, &s);
	ATF_CHECK_EQ_MSG(res, want, "%s: result %d, %s %s", spec, res, s.dsn,
	    str_cstr(&s.reason));
	ATF_CHECK_STREQ_MSG(s.dsn, dsn, "%s: %s", spec, str_cstr(&s.reason));
	ATF_CHECK_MSG(strstr(str_cstr(&s.reason), reason) != NULL,
	    "%s: reason \"%s\" lacks \"%s\"", spec, str_cstr(&s.reason), reason);
	ATF_CHECK_EQ(s.n, 0);
	dns_servers_free(&s);
	str_release(&why);
}

static const struct zrec zone[] = {
	/* Three MX hosts, answered out of order. */
	{ "example.com", DNS_T_MX, "20 mx2.example.com" },
	{ "example.com", DNS_T_MX, "10 mx1.example.com" },
	{ "example.com", DNS_T_MX, "30 mx3.example.com" },
	{ "mx1.example.com", DNS_T_A, "192.0.2.1" },
	{ "mx2.example.com", DNS_T_A, "192.0.2.2" },
	{ "mx2.example.com", DNS_T_AAAA, "2001:db8::2" },
	{ "mx3.example.com", DNS_T_AAAA, "2001:db8::3" },
	/* Equal preferences. */
	{ "equal.example", DNS_T_MX, "10 a.equal.example" },
	{ "equal.example", DNS_T_MX, "10 b.equal.example" },
	{ "equal.example", DNS_T_MX, "10 c.equal.example" },
	{ "equal.example", DNS_T_MX, "5 first.equal.example" },
	{ "first.equal.example", DNS_T_A, "192.0.2.10" },
	{ "a.equal.example", DNS_T_A, "192.0.2.11" },
	{ "b.equal.example", DNS_T_A, "192.0.2.12" },
	{ "c.equal.example", DNS_T_A, "192.0.2.13" },
	/* We are an MX host. */
	{ "backup.example", DNS_T_MX, "10 mx1.example.com" },
	{ "backup.example", DNS_T_MX, "20 ME.example.org." },
	{ "backup.example", DNS_T_MX, "20 mx2.example.com" },
	{ "backup.example", DNS_T_MX, "30 mx3.example.com" },
	{ "primary.example", DNS_T_MX, "10 me.example.org" },
	{ "primary.example", DNS_T_MX, "20 mx1.example.com" },
	{ "tie.example", DNS_T_MX, "10 me.example.org" },
	{ "tie.example", DNS_T_MX, "10 mx1.example.com" },
	{ "me.example.org", DNS_T_A, "192.0.2.99" },
	/* We are an MX host by address only. */
	{ "byaddr.example", DNS_T_MX, "10 mx1.example.com" },
	{ "byaddr.example", DNS_T_MX, "20 alias-of-me.example.net" },
	{ "byaddr.example", DNS_T_MX, "30 mx3.example.com" },
	{ "byaddr-best.example", DNS_T_MX, "10 alias-of-me.example.net" },
	{ "byaddr-best.example", DNS_T_MX, "20 mx1.example.com" },
	{ "byaddr-tie.example", DNS_T_MX, "10 mx1.example.com" },
	{ "byaddr-tie.example", DNS_T_MX, "20 mx2.example.com" },
	{ "byaddr-tie.example", DNS_T_MX, "20 alias-of-me.example.net" },
	{ "alias-of-me.example.net", DNS_T_A, "192.0.2.99" },
	/* Null MX, and "." among others. */
	{ "nullmx.example", DNS_T_MX, "0 ." },
	{ "nullmx.example", DNS_T_A, "192.0.2.50" },
	{ "dotmx.example", DNS_T_MX, "0 ." },
	{ "dotmx.example", DNS_T_MX, "10 mx1.example.com" },
	{ "dot10.example", DNS_T_MX, "10 ." },
	/* Implicit MX. */
	{ "nomx.example", DNS_T_A, "192.0.2.20" },
	{ "nomx.example", DNS_T_AAAA, "2001:db8::20" },
	{ "me.example.org", DNS_T_AAAA, "2001:db8::99" },
	{ "implicit-me.example", DNS_T_A, "192.0.2.99" },
	/* MX hosts without addresses. */
	{ "noaddr.example", DNS_T_MX, "10 gone.example" },
	{ "noaddr.example", DNS_T_MX, "20 empty.example" },
	{ "empty.example", DNS_T_MX, "10 nothing.example" },
	{ "tempaddr.example", DNS_T_MX, "10 flaky.example" },
	{ "tempaddr.example", DNS_T_MX, "20 gone.example" },
	{ "partial.example", DNS_T_MX, "10 flaky.example" },
	{ "partial.example", DNS_T_MX, "20 mx1.example.com" },
	{ "flaky.example", DNS_T_A, "192.0.2.66" },
	/* A bad exchange name is skipped. */
	{ "badname.example", DNS_T_MX, "5 -bad.example" },
	{ "badname.example", DNS_T_MX, "10 mx1.example.com" },
	/* Many addresses, for the limit. */
	{ "many.example", DNS_T_MX, "10 m1.many.example" },
	{ "many.example", DNS_T_MX, "20 m2.many.example" },
	{ "many.example", DNS_T_MX, "30 m3.many.example" },
	{ "m1.many.example", DNS_T_A, "192.0.2.31" },
	{ "m1.many.example", DNS_T_A, "192.0.2.32" },
	{ "m2.many.example", DNS_T_A, "192.0.2.33" },
	{ "m2.many.example", DNS_T_A, "192.0.2.34" },
	{ "m3.many.example", DNS_T_A, "192.0.2.35" },
	/* Both families on two equal hosts. */
	{ "dual.example", DNS_T_MX, "10 d1.dual.example" },
	{ "dual.example", DNS_T_MX, "10 d2.dual.example" },
	{ "d1.dual.example", DNS_T_A, "192.0.2.41" },
	{ "d1.dual.example", DNS_T_AAAA, "2001:db8::41" },
	{ "d2.dual.example", DNS_T_A, "192.0.2.42" },
	{ "d2.dual.example", DNS_T_AAAA, "2001:db8::42" },
	{ "localhost", DNS_T_MX, "10 other.example" },
	{ NULL, 0, NULL },
};

ATF_TC_WITHOUT_HEAD(mx_order);
ATF_TC_BODY(mx_order, tc)
{
	struct fake f = { .recs = zone, .servfail = " flaky.example " };
	dns_resolver_t *r = fake_resolver(&f);
	dns_opts_t o;

	opts_init(&o, r);
	expect_ok("example.com", &o,
	    "mx1.example.com[192.0.2.1]:25/10 mx2.example.com[192.0.2.2]:25/20 "
	    "mx2.example.com[2001:db8::2]:25/20 mx3.example.com[2001:db8::3]:25/30");
	/* The port comes from the next hop. */
	expect_ok("example.com:2525", &o,
	    "mx1.example.com[192.0.2.1]:2525/10 mx2.example.com[192.0.2.2]:2525/20 "
	    "mx2.example.com[2001:db8::2]:2525/20 mx3.example.com[2001:db8::3]:2525/30");
	/* A bad exchange name is skipped, the rest used. */
	expect_ok("badname.example", &o, "mx1.example.com[192.0.2.1]:25/10");
	/* "." next to real MX hosts is not a null MX; it is skipped. */
	expect_ok("dotmx.example", &o, "mx1.example.com[192.0.2.1]:25/10");
	/* One MX host failing temporarily: the others are used. */
	expect_ok("partial.example", &o, "mx1.example.com[192.0.2.1]:25/20");
	/* The MX query, then A and AAAA per host in order. */
	str_reset(&f.log);
	expect_ok("example.com", &o,
	    "mx1.example.com[192.0.2.1]:25/10 mx2.example.com[192.0.2.2]:25/20 "
	    "mx2.example.com[2001:db8::2]:25/20 mx3.example.com[2001:db8::3]:25/30");
	ATF_CHECK_STREQ(str_cstr(&f.log), "example.com/MX mx1.example.com/A mx1.example.com/AAAA "
	    "mx2.example.com/A mx2.example.com/AAAA mx3.example.com/A mx3.example.com/AAAA ");
	dns_resolver_free(r);
	str_release(&f.log);
}

ATF_TC_WITHOUT_HEAD(equal_preference_shuffle);
ATF_TC_BODY(equal_preference_shuffle, tc)
{
	struct fake f = { .recs = zone };
	dns_resolver_t *r = fake_resolver(&f);
	dns_opts_t o;
	static const uint32_t zeros[] = { 0 };
	static const uint32_t keep[] = { 2, 1 };	/* j == i: no swap */
	struct seq s;

	opts_init(&o, r);
	o.rand = seq_rand;
	o.rand_ctx = &s;
	/* Group of 3 at preference 10, answer order a, b, c.  The shuffle
	 * walks i = 2, 1 and swaps i with rand % (i + 1). */
	s = (struct seq){ keep, 2, 0 };
	expect_ok("equal.example", &o,
	    "first.equal.example[192.0.2.10]:25/5 a.equal.example[192.0.2.11]:25/10 "
	    "b.equal.example[192.0.2.12]:25/10 c.equal.example[192.0.2.13]:25/10");
	s = (struct seq){ zeros, 1, 0 };
	expect_ok("equal.example", &o,
	    "first.equal.example[192.0.2.10]:25/5 b.equal.example[192.0.2.12]:25/10 "
	    "c.equal.example[192.0.2.13]:25/10 a.equal.example[192.0.2.11]:25/10");
	/* The same generator state gives the same order. */
	s = (struct seq){ zeros, 1, 0 };
	expect_ok("equal.example", &o,
	    "first.equal.example[192.0.2.10]:25/5 b.equal.example[192.0.2.12]:25/10 "
	    "c.equal.example[192.0.2.13]:25/10 a.equal.example[192.0.2.11]:25/10");

	/* Over many seeds every order of the three shows up, and the
	 * preference-5 host always comes first. */
	uint32_t state = 1;
	int seen[6] = { 0 };
	o.rand = lcg_rand;
	o.rand_ctx = &state;
	for (int run = 0; run < 200; run++) {
		dns_nexthop_t nh;
		dns_servers_t out;
		str_t why = STR_INIT;
		ATF_REQUIRE_EQ(dns_nexthop_parse("equal.example", 25, &nh, &why), 0);
		ATF_REQUIRE_EQ(dns_find_servers(&nh, &o, &out), DNS_RESULT_OK);
		ATF_REQUIRE_EQ(out.n, 4);
		ATF_CHECK_STREQ(out.v[0].hostname, "first.equal.example");
		char c1 = out.v[1].hostname[0], c2 = out.v[2].hostname[0];
		int code = (c1 - 'a') * 2 + (c2 > (c1 == 'a' ? 'b' : 'a') ? 1 : 0);
		if (code >= 0 && code < 6)
			seen[code]++;
		dns_servers_free(&out);
		str_release(&why);
	}
	for (int i = 0; i < 6; i++)
		ATF_CHECK_MSG(seen[i] > 0, "order %d never seen in 200 runs", i);

	/* Without a generator of our own, the internal one works. */
	o.rand = NULL;
	dns_nexthop_t nh;
	dns_servers_t out;
	str_t why = STR_INIT;
	ATF_REQUIRE_EQ(dns_nexthop_parse("equal.example", 25, &nh, &why), 0);
	ATF_CHECK_EQ(dns_find_servers(&nh, &o, &out), DNS_RESULT_OK);
	ATF_CHECK_EQ(out.n, 4);
	dns_servers_free(&out);
	str_release(&why);
	dns_resolver_free(r);
	str_release(&f.log);
}

ATF_TC_WITHOUT_HEAD(own_host_pruning);
ATF_TC_BODY(own_host_pruning, tc)
{
	struct fake f = { .recs = zone };
	dns_resolver_t *r = fake_resolver(&f);
	dns_opts_t o;
	struct sockaddr_storage own[2];

	opts_init(&o, r);
	/* We are preference 20 (by name, any case, trailing dot): 20 and
	 * worse go, including the other host at 20. */
	expect_ok("backup.example", &o, "mx1.example.com[192.0.2.1]:25/10");
	/* We are the best MX, or tied for best: nothing is left. */
	expect_fail("primary.example", &o, DNS_RESULT_BOUNCE, "5.4.6",
	    "mail for primary.example loops back to myself");
	expect_fail("tie.example", &o, DNS_RESULT_BOUNCE, "5.4.6",
	    "mail for tie.example loops back to myself");
	/* Without myhostname the name means nothing (and with 1 from the
	 * generator the two hosts at 10 stay in answer order). */
	static const uint32_t keep[] = { 1 };
	struct seq s = { keep, 1, 0 };
	o.rand = seq_rand;
	o.rand_ctx = &s;
	o.myhostname = NULL;
	expect_ok("tie.example", &o,
	    "me.example.org[192.0.2.99]:25/10 me.example.org[2001:db8::99]:25/10 "
	    "mx1.example.com[192.0.2.1]:25/10");

	/* By address: an MX host that resolves to one of ours. */
	memset(own, 0, sizeof(own));
	ATF_REQUIRE_EQ(sock_addr_parse("192.0.2.99", 0, &own[0], NULL), 0);
	ATF_REQUIRE_EQ(sock_addr_parse("[2001:db8::1234]", 0, &own[1], NULL), 0);
	o.own_addrs = own;
	o.n_own_addrs = 2;
	expect_ok("byaddr.example", &o, "mx1.example.com[192.0.2.1]:25/10");
	/* mx2 at 20 comes before us at 20 (the generator keeps the
	 * order): its addresses, already taken, are dropped again. */
	str_reset(&f.log);
	expect_ok("byaddr-tie.example", &o, "mx1.example.com[192.0.2.1]:25/10");
	ATF_CHECK(strstr(str_cstr(&f.log), "mx2.example.com/A") != NULL);
	expect_fail("byaddr-best.example", &o, DNS_RESULT_BOUNCE, "5.4.6",
	    "mail for byaddr-best.example loops back to myself");
	/* The implicit MX is us, by name or by address. */
	o.myhostname = "implicit-me.example";
	o.n_own_addrs = 0;
	expect_fail("implicit-me.example", &o, DNS_RESULT_BOUNCE, "5.4.6",
	    "mail for implicit-me.example loops back to myself");
	o.myhostname = NULL;
	o.n_own_addrs = 2;
	expect_fail("implicit-me.example", &o, DNS_RESULT_BOUNCE, "5.4.6",
	    "mail for implicit-me.example loops back to myself");
	/* A [host] next hop is never a loop: the caller asked for it. */
	expect_ok("[me.example.org]", &o,
	    "me.example.org[192.0.2.99]:25/- me.example.org[2001:db8::99]:25/-");
	dns_resolver_free(r);
	str_release(&f.log);
}

ATF_TC_WITHOUT_HEAD(null_mx);
ATF_TC_BODY(null_mx, tc)
{
	struct fake f = { .recs = zone };
	dns_resolver_t *r = fake_resolver(&f);
	dns_opts_t o;

	opts_init(&o, r);
	expect_fail("nullmx.example", &o, DNS_RESULT_BOUNCE, "5.1.10",
	    "Domain nullmx.example does not accept mail (nullMX)");
	/* No address lookup after a null MX. */
	str_reset(&f.log);
	expect_fail("nullmx.example", &o, DNS_RESULT_BOUNCE, "5.1.10", "nullMX");
	ATF_CHECK_STREQ(str_cstr(&f.log), "nullmx.example/MX ");
	/* A lone "." with a preference other than 0 is no null MX, just
	 * an MX host without an address. */
	expect_fail("dot10.example", &o, DNS_RESULT_BOUNCE, "5.4.4",
	    "no MX host for dot10.example has a valid address record");
	dns_resolver_free(r);
	str_release(&f.log);
}

ATF_TC_WITHOUT_HEAD(implicit_mx);
ATF_TC_BODY(implicit_mx, tc)
{
	struct fake f = { .recs = zone };
	dns_resolver_t *r = fake_resolver(&f);
	dns_opts_t o;

	opts_init(&o, r);
	expect_ok("nomx.example", &o,
	    "nomx.example[192.0.2.20]:25/- nomx.example[2001:db8::20]:25/-");
	o.families = DNS_INET6;
	expect_ok("nomx.example", &o, "nomx.example[2001:db8::20]:25/-");
	dns_resolver_free(r);
	str_release(&f.log);
}

ATF_TC_WITHOUT_HEAD(failures);
ATF_TC_BODY(failures, tc)
{
	struct fake f = {
		.recs = zone,
		.servfail = " broken.example flaky.example ",
		.timeout = " slow.example ",
		.garbage = " garbled.example ",
	};
	dns_resolver_t *r = fake_resolver(&f);
	dns_opts_t o;

	opts_init(&o, r);
	expect_fail("nowhere.example", &o, DNS_RESULT_BOUNCE, "5.4.4",
	    "Host or domain name not found. Name service error for name=nowhere.example type=MX: Host not found");
	expect_fail("broken.example", &o, DNS_RESULT_DEFER, "4.4.3",
	    "type=MX: Host not found, try again (server reply SERVFAIL)");
	expect_fail("slow.example", &o, DNS_RESULT_DEFER, "4.4.3", "timeout");
	expect_fail("garbled.example", &o, DNS_RESULT_DEFER, "4.4.3", "malformed DNS reply");
	/* MX hosts without addresses: bounce, or defer if configured. */
	expect_fail("noaddr.example", &o, DNS_RESULT_BOUNCE, "5.4.4",
	    "no MX host for noaddr.example has a valid address record");
	o.defer_if_no_mx_address = true;
	expect_fail("noaddr.example", &o, DNS_RESULT_DEFER, "4.4.4",
	    "no MX host for noaddr.example has a valid address record");
	o.defer_if_no_mx_address = false;
	/* A temporary failure among them: defer, with that host's reason. */
	expect_fail("tempaddr.example", &o, DNS_RESULT_DEFER, "4.4.3",
	    "name=flaky.example type=A: Host not found, try again (server reply SERVFAIL)");
	/* [host] lookups. */
	expect_fail("[nowhere.example]", &o, DNS_RESULT_BOUNCE, "5.4.4",
	    "name=nowhere.example type=A: Host not found");
	expect_fail("[empty.example]", &o, DNS_RESULT_BOUNCE, "5.4.4",
	    "name=empty.example type=A: No address associated with the name");
	expect_fail("[broken.example]", &o, DNS_RESULT_DEFER, "4.4.3",
	    "name=broken.example type=A: Host not found, try again");
	dns_resolver_free(r);
	str_release(&f.log);
}

ATF_TC_WITHOUT_HEAD(families_and_preference);
ATF_TC_BODY(families_and_preference, tc)
{
	struct fake f = { .recs = zone };
	dns_resolver_t *r = fake_resolver(&f);
	dns_opts_t o;
	static const uint32_t keep[] = { 1 };
	struct seq s = { keep, 1, 0 };

	opts_init(&o, r);
	o.rand = seq_rand;
	o.rand_ctx = &s;
	/* any: hosts in (shuffled) order, each host's A then AAAA. */
	expect_ok("dual.example", &o,
	    "d1.dual.example[192.0.2.41]:25/10 d1.dual.example[2001:db8::41]:25/10 "
	    "d2.dual.example[192.0.2.42]:25/10 d2.dual.example[2001:db8::42]:25/10");
	/* ipv6 first within the preference, hosts' order kept. */
	o.prefer = DNS_PREFER_IPV6;
	expect_ok("dual.example", &o,
	    "d1.dual.example[2001:db8::41]:25/10 d2.dual.example[2001:db8::42]:25/10 "
	    "d1.dual.example[192.0.2.41]:25/10 d2.dual.example[192.0.2.42]:25/10");
	/* ... but never across preferences. */
	expect_ok("example.com", &o,
	    "mx1.example.com[192.0.2.1]:25/10 mx2.example.com[2001:db8::2]:25/20 "
	    "mx2.example.com[192.0.2.2]:25/20 mx3.example.com[2001:db8::3]:25/30");
	o.prefer = DNS_PREFER_IPV4;
	expect_ok("dual.example", &o,
	    "d1.dual.example[192.0.2.41]:25/10 d2.dual.example[192.0.2.42]:25/10 "
	    "d1.dual.example[2001:db8::41]:25/10 d2.dual.example[2001:db8::42]:25/10");

	/* inet_protocols: only the enabled family is asked for. */
	o.prefer = DNS_PREFER_ANY;
	o.families = DNS_INET4;
	str_reset(&f.log);
	expect_ok("example.com", &o,
	    "mx1.example.com[192.0.2.1]:25/10 mx2.example.com[192.0.2.2]:25/20");
	ATF_CHECK_STREQ(str_cstr(&f.log), "example.com/MX mx1.example.com/A "
	    "mx2.example.com/A mx3.example.com/A ");
	o.families = DNS_INET6;
	str_reset(&f.log);
	expect_ok("example.com", &o,
	    "mx2.example.com[2001:db8::2]:25/20 mx3.example.com[2001:db8::3]:25/30");
	ATF_CHECK_STREQ(str_cstr(&f.log), "example.com/MX mx1.example.com/AAAA "
	    "mx2.example.com/AAAA mx3.example.com/AAAA ");
	dns_resolver_free(r);
	str_release(&f.log);
}

ATF_TC_WITHOUT_HEAD(address_limit);
ATF_TC_BODY(address_limit, tc)
{
	struct fake f = { .recs = zone };
	dns_resolver_t *r = fake_resolver(&f);
	dns_opts_t o;

	opts_init(&o, r);
	o.families = DNS_INET4;
	o.address_limit = 3;
	str_reset(&f.log);
	expect_ok("many.example", &o,
	    "m1.many.example[192.0.2.31]:25/10 m1.many.example[192.0.2.32]:25/10 "
	    "m2.many.example[192.0.2.33]:25/20");
	/* m3 is not looked up: the limit was reached before its
	 * preference. */
	ATF_CHECK_STREQ(str_cstr(&f.log), "many.example/MX m1.many.example/A m2.many.example/A ");
	o.address_limit = 2;
	str_reset(&f.log);
	expect_ok("many.example", &o,
	    "m1.many.example[192.0.2.31]:25/10 m1.many.example[192.0.2.32]:25/10");
	ATF_CHECK_STREQ(str_cstr(&f.log), "many.example/MX m1.many.example/A ");
	o.address_limit = 0;
	expect_ok("many.example", &o,
	    "m1.many.example[192.0.2.31]:25/10 m1.many.example[192.0.2.32]:25/10 "
	    "m2.many.example[192.0.2.33]:25/20 m2.many.example[192.0.2.34]:25/20 "
	    "m3.many.example[192.0.2.35]:25/30");
	/* The limit also cuts a [host]'s addresses. */
	o.address_limit = 1;
	expect_ok("[m1.many.example]:26", &o, "m1.many.example[192.0.2.31]:26/-");
	dns_resolver_free(r);
	str_release(&f.log);
}

ATF_TC_WITHOUT_HEAD(literals_and_brackets);
ATF_TC_BODY(literals_and_brackets, tc)
{
	struct fake f = { .recs = zone };
	dns_resolver_t *r = dns_resolver_new(NULL, NULL);
	dns_opts_t o;

	/* Literals never query. */
	dns_resolver_set_transport(r, no_transport, NULL);
	opts_init(&o, r);
	expect_ok("[192.0.2.1]", &o, "192.0.2.1[192.0.2.1]:25/-");
	expect_ok("[192.0.2.1]:2525", &o, "192.0.2.1[192.0.2.1]:2525/-");
	expect_ok("192.0.2.1:2526", &o, "192.0.2.1[192.0.2.1]:2526/-");
	expect_ok("[IPv6:2001:db8::1]", &o, "2001:db8::1[2001:db8::1]:25/-");
	expect_ok("[ipv6:2001:db8::1]:587", &o, "2001:db8::1[2001:db8::1]:587/-");
	expect_ok("[2001:db8::1]", &o, "2001:db8::1[2001:db8::1]:25/-");
	/* A literal of a disabled family waits for the configuration. */
	o.families = DNS_INET4;
	expect_fail("[IPv6:2001:db8::1]", &o, DNS_RESULT_DEFER, "4.4.4",
	    "IPv6 address 2001:db8::1: that protocol is disabled by inet_protocols");
	o.families = DNS_INET6;
	expect_fail("[192.0.2.1]", &o, DNS_RESULT_DEFER, "4.4.4", "disabled by inet_protocols");
	dns_resolver_free(r);

	/* [host]: addresses only, no MX query. */
	r = fake_resolver(&f);
	opts_init(&o, r);
	str_reset(&f.log);
	expect_ok("[mx2.example.com]:2525", &o,
	    "mx2.example.com[192.0.2.2]:2525/- mx2.example.com[2001:db8::2]:2525/-");
	ATF_CHECK_STREQ(str_cstr(&f.log), "mx2.example.com/A mx2.example.com/AAAA ");
	/* A domain with MX records used as [domain]: its A record only. */
	str_reset(&f.log);
	expect_ok("[nullmx.example]", &o, "nullmx.example[192.0.2.50]:25/-");
	ATF_CHECK_STREQ(str_cstr(&f.log), "nullmx.example/A nullmx.example/AAAA ");
	dns_resolver_free(r);
	str_release(&f.log);
}

/* Native lookups: "localhost" is in /etc/hosts (and getaddrinfo knows it
 * without a name server); nothing here may reach DNS. */
ATF_TC_WITHOUT_HEAD(native);
ATF_TC_BODY(native, tc)
{
	dns_resolver_t *r = dns_resolver_new(NULL, NULL);
	dns_opts_t o;
	dns_nexthop_t nh;
	dns_servers_t out;
	str_t why = STR_INIT;

	dns_resolver_set_transport(r, no_transport, NULL);
	opts_init(&o, r);
	o.lookup = DNS_LOOKUP_NATIVE;
	o.families = DNS_INET4;
	o.myhostname = NULL;
	expect_ok("[localhost]:2525", &o, "localhost[127.0.0.1]:2525/-");
	/* Without DNS a domain is its own MX: no MX query. */
	expect_ok("localhost", &o, "localhost[127.0.0.1]:25/-");
	/* ... and a loop when it is us. */
	o.myhostname = "localhost";
	expect_fail("localhost", &o, DNS_RESULT_BOUNCE, "5.4.6",
	    "mail for localhost loops back to myself");
	o.myhostname = NULL;
	/* Both families: at least the IPv4 loopback, only loopbacks. */
	o.families = DNS_INET4 | DNS_INET6;
	ATF_REQUIRE_EQ(dns_nexthop_parse("[localhost]", 25, &nh, &why), 0);
	ATF_REQUIRE_EQ(dns_find_servers(&nh, &o, &out), DNS_RESULT_OK);
	bool v4 = false;
	for (size_t i = 0; i < out.n; i++) {
		ATF_CHECK_MSG(strcmp(out.v[i].addrstr, "127.0.0.1") == 0 ||
		    strcmp(out.v[i].addrstr, "::1") == 0, "%s", out.v[i].addrstr);
		v4 |= strcmp(out.v[i].addrstr, "127.0.0.1") == 0;
	}
	ATF_CHECK(v4);
	dns_servers_free(&out);
	/* A numeric name through getaddrinfo. */
	size_t n;
	struct sockaddr_storage ss[4];
	ATF_CHECK_EQ(dns_native_lookup("192.0.2.5", DNS_INET4, ss, 4, &n, &why), DNS_FOUND);
	ATF_CHECK_EQ(n, 1);
	ATF_CHECK_EQ(dns_native_lookup("192.0.2.5", DNS_INET6, ss, 4, &n, &why) == DNS_FOUND, false);
	dns_resolver_free(r);

	/* dns, native: DNS has no A record for localhost (the fake zone
	 * knows it only as an MX owner: NODATA), so native is asked next. */
	struct fake f = { .recs = zone };
	r = fake_resolver(&f);
	opts_init(&o, r);
	o.lookup = DNS_LOOKUP_DNS | DNS_LOOKUP_NATIVE;
	o.families = DNS_INET4;
	o.myhostname = NULL;
	str_reset(&f.log);
	expect_ok("[localhost]", &o, "localhost[127.0.0.1]:25/-");
	ATF_CHECK_STREQ(str_cstr(&f.log), "localhost/A ");
	/* DNS first: an answer from DNS is used without native. */
	expect_ok("[mx1.example.com]", &o, "mx1.example.com[192.0.2.1]:25/-");
	/* dns alone: the same lookup fails. */
	o.lookup = DNS_LOOKUP_DNS;
	expect_fail("[localhost]", &o, DNS_RESULT_BOUNCE, "5.4.4", "name=localhost type=A");
	dns_resolver_free(r);
	str_release(&f.log);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(nexthop_parse);
ATF_TC_BODY(nexthop_parse, tc)
{
	static const struct {
		const char *spec;
		const char *host;
		bool bracketed, literal;
		unsigned port;
	} good[] = {
		{ "example.com", "example.com", false, false, 25 },
		{ "example.com:26", "example.com", false, false, 26 },
		{ "[mx.example.com]:2525", "mx.example.com", true, false, 2525 },
		{ "[mx.example.com]", "mx.example.com", true, false, 25 },
		{ "[192.0.2.1]", "192.0.2.1", true, true, 25 },
		{ "[192.0.2.1]:65535", "192.0.2.1", true, true, 65535 },
		{ "192.0.2.1", "192.0.2.1", false, true, 25 },
		{ "[IPv6:2001:db8::1]", "2001:db8::1", true, true, 25 },
		{ "[IPv6:2001:db8::1]:24", "2001:db8::1", true, true, 24 },
		{ "[::1]", "::1", true, true, 25 },
		{ "localhost", "localhost", false, false, 25 },
		{ "example.com.", "example.com.", false, false, 25 },
	};
	static const struct { const char *spec; const char *why; } bad[] = {
		{ "", "empty next hop" },
		{ "[mx.example.com", "missing ']'" },
		{ "[mx.example.com]x", "unexpected text" },
		{ "[mx.example.com]:", "port must be" },
		{ "[mx.example.com]:0", "port must be" },
		{ "[mx.example.com]:65536", "port must be" },
		{ "example.com:smtp", "port must be" },
		{ "example.com:-1", "port must be" },
		{ "2001:db8::1", "in brackets" },
		{ "[IPv6:192.0.2.1]", "bad IPv6 address" },
		{ "[IPv6:zz::1]", "bad IPv6 address" },
		{ "[]", "empty host" },
		{ ":25", "empty host" },
		{ "bad host", "bad host name syntax" },
		{ "a..b", "bad host name syntax" },
		{ "[exa_mple.com;rm]", "bad host name syntax" },
	};
	dns_nexthop_t nh;
	str_t why = STR_INIT;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ATF_CHECK_EQ_MSG(dns_nexthop_parse(good[i].spec, 25, &nh, &why), 0,
		    "%s: %s", good[i].spec, str_cstr(&why));
		ATF_CHECK_STREQ_MSG(nh.host, good[i].host, "%s", good[i].spec);
		ATF_CHECK_EQ_MSG(nh.bracketed, good[i].bracketed, "%s", good[i].spec);
		ATF_CHECK_EQ_MSG(nh.literal, good[i].literal, "%s", good[i].spec);
		ATF_CHECK_EQ_MSG(nh.port, good[i].port, "%s", good[i].spec);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		str_reset(&why);
		ATF_CHECK_EQ_MSG(dns_nexthop_parse(bad[i].spec, 25, &nh, &why), -1,
		    "%s accepted", bad[i].spec);
		ATF_CHECK_MSG(strstr(str_cstr(&why), bad[i].why) != NULL,
		    "%s: \"%s\" lacks \"%s\"", bad[i].spec, str_cstr(&why), bad[i].why);
	}
	/* The default port is the caller's. */
	ATF_CHECK_EQ(dns_nexthop_parse("[192.0.2.1]", 24, &nh, &why), 0);
	ATF_CHECK_EQ(nh.port, 24);
	/* A host name longer than any name fits no buffer. */
	char longspec[1200];
	memset(longspec, 'a', sizeof(longspec) - 1);
	longspec[sizeof(longspec) - 1] = '\0';
	ATF_CHECK_EQ(dns_nexthop_parse(longspec, 25, &nh, &why), -1);
	ATF_CHECK(strstr(str_cstr(&why), "too long") != NULL);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(settings);
ATF_TC_BODY(settings, tc)
{
	dns_opts_t o;
	str_t why = STR_INIT;
	dns_resolver_t *r;

	ATF_CHECK_EQ(dns_parse_protocols("all"), DNS_INET4 | DNS_INET6);
	ATF_CHECK_EQ(dns_parse_protocols("ipv4"), DNS_INET4);
	ATF_CHECK_EQ(dns_parse_protocols("ipv6"), DNS_INET6);
	ATF_CHECK_EQ(dns_parse_protocols("ipv4, ipv6"), DNS_INET4 | DNS_INET6);
	ATF_CHECK_EQ(dns_parse_protocols("ipv5"), -1);
	ATF_CHECK_EQ(dns_parse_protocols(""), -1);
	ATF_CHECK_EQ(dns_parse_host_lookup("dns"), DNS_LOOKUP_DNS);
	ATF_CHECK_EQ(dns_parse_host_lookup("native"), DNS_LOOKUP_NATIVE);
	ATF_CHECK_EQ(dns_parse_host_lookup("dns, native"), DNS_LOOKUP_DNS | DNS_LOOKUP_NATIVE);
	ATF_CHECK_EQ(dns_parse_host_lookup("nis"), -1);

	ATF_REQUIRE_EQ(pconfig_load_text(
	    "smtp_host_lookup = native, dns\n"
	    "inet_protocols = ipv6\n"
	    "smtp_address_preference = ipv4\n"
	    "smtp_mx_address_limit = 7\n"
	    "smtp_defer_if_no_mx_address_found = yes\n"
	    "myhostname = mail.example.org\n"
	    "dns_server_address = 127.0.0.1:5353\n", "main.cf"), 0);
	ATF_REQUIRE_EQ(dns_opts_from_config(&o, &why), 0);
	ATF_CHECK_EQ(o.lookup, DNS_LOOKUP_DNS | DNS_LOOKUP_NATIVE);
	ATF_CHECK_EQ(o.families, DNS_INET6);
	ATF_CHECK_EQ(o.prefer, DNS_PREFER_IPV4);
	ATF_CHECK_EQ(o.address_limit, 7);
	ATF_CHECK(o.defer_if_no_mx_address);
	ATF_CHECK_STREQ(o.myhostname, "mail.example.org");
	r = dns_resolver_from_config(&why);
	ATF_CHECK_MSG(r != NULL, "%s", str_cstr(&why));
	dns_resolver_free(r);
	pconfig_reset();
	ATF_REQUIRE_EQ(dns_opts_from_config(&o, &why), 0);
	ATF_CHECK_EQ(o.lookup, DNS_LOOKUP_DNS);
	ATF_CHECK_EQ(o.families, DNS_INET4 | DNS_INET6);
	ATF_CHECK_EQ(o.prefer, DNS_PREFER_ANY);
	ATF_CHECK_EQ(o.address_limit, 5);
	ATF_CHECK(!o.defer_if_no_mx_address);

	/* Server addresses: IPv4 with an optional port. */
	static const char *const ok[] = { "127.0.0.1", "127.0.0.1:5353", "127.1.2.3:53" };
	static const char *const nok[] = { "::1", "[::1]:53", "localhost", "127.0.0.1:x",
	    "127.0.0.1:70000", "192.0.2.1:53", "128.0.0.1", "" };
	for (size_t i = 0; i < 3; i++) {
		r = dns_resolver_new(ok[i], &why);
		ATF_CHECK_MSG(r != NULL, "%s: %s", ok[i], str_cstr(&why));
		dns_resolver_free(r);
	}
	for (size_t i = 0; i < 7; i++) {
		str_reset(&why);
		r = dns_resolver_new(nok[i], &why);
		ATF_CHECK_MSG(r == NULL, "%s accepted", nok[i]);
		ATF_CHECK(strstr(str_cstr(&why), "bad DNS server address") != NULL);
		dns_resolver_free(r);
	}
	/* Empty: the system resolver (nothing is queried here). */
	r = dns_resolver_new(nok[7], &why);
	ATF_CHECK(r != NULL);
	dns_resolver_free(r);
	str_release(&why);
}

/* dns_lookup refuses names that are not host names without a query. */
ATF_TC_WITHOUT_HEAD(lookup_bad_name);
ATF_TC_BODY(lookup_bad_name, tc)
{
	dns_resolver_t *r = dns_resolver_new(NULL, NULL);
	dns_reply_t reply;
	str_t why = STR_INIT;

	dns_resolver_set_transport(r, no_transport, NULL);
	ATF_CHECK_EQ(dns_lookup(r, "bad name", DNS_T_A, &reply, &why), DNS_NXDOMAIN);
	ATF_CHECK_STREQ(str_cstr(&why), "not a valid host name");
	dns_reply_free(&reply);
	ATF_CHECK_EQ(dns_lookup(r, "a\\046b", DNS_T_A, &reply, &why), DNS_NXDOMAIN);
	dns_reply_free(&reply);
	dns_resolver_free(r);
	str_release(&why);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, mx_order);
	ATF_TP_ADD_TC(tp, equal_preference_shuffle);
	ATF_TP_ADD_TC(tp, own_host_pruning);
	ATF_TP_ADD_TC(tp, null_mx);
	ATF_TP_ADD_TC(tp, implicit_mx);
	ATF_TP_ADD_TC(tp, failures);
	ATF_TP_ADD_TC(tp, families_and_preference);
	ATF_TP_ADD_TC(tp, address_limit);
	ATF_TP_ADD_TC(tp, literals_and_brackets);
	ATF_TP_ADD_TC(tp, native);
	ATF_TP_ADD_TC(tp, nexthop_parse);
	ATF_TP_ADD_TC(tp, settings);
	ATF_TP_ADD_TC(tp, lookup_bad_name);
	return atf_no_error();
}
