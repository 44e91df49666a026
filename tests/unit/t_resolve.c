/* Unit tests for libglobal/resolve: recipient -> (transport, nexthop,
 * address), table driven, with inline:, texthash: and hash: tables. */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dict.h"
#include "pconfig.h"
#include "resolve.h"
#include "str.h"

#define LOC RESOLVE_CLASS_LOCAL
#define REL RESOLVE_CLASS_RELAY
#define DEF RESOLVE_CLASS_DEFAULT
#define RT RESOLVE_F_ROUTED
#define LIT RESOLVE_F_LITERAL
#define VIR RESOLVE_CLASS_VIRTUAL
#define VAL RESOLVE_CLASS_ALIAS

typedef struct rcase {
	const char *in;
	resolve_status_t st;
	const char *transport;	/* OK: expected; else NULL */
	const char *nexthop;
	const char *address;	/* OK: expected normalised address */
	int flags;		/* OK: class and routed/literal bits; else 0 */
	const char *dsn;	/* RETRY/FAIL: expected code */
} rcase_t;

static const char *const base_tmaps =
    "inline:{ {special.example = smtp:[mx.special.example]:2525},"
    " {.sub.example = relay:},"
    " {user@tm.example = local:},"
    " {bob@ext.example = error:5.1.1 no such user},"
    " {only-nexthop.example = :[gw.example]},"
    " {only-transport.example = custom:},"
    " {colonless.example = discard},"
    " {bad.example = bad name!:x},"
    " {boss@host.example.com = smtp:[boss-gw.example]} }";

static void base_config(resolve_config_t *c)
{
	memset(c, 0, sizeof(*c));
	c->myhostname = "host.example.com";
	c->mydestination = "host.example.com, localhost.example.com, localhost";
	c->relay_domains = "relay.example, inline:{ {rtab.example = x} }";
	c->transport_maps = base_tmaps;
	c->recipient_delimiter = "+";
	c->my_addresses = "192.0.2.10 2001:db8::10, [198.51.100.1]";
	c->parent_matches = true;
}

static void run_cases(resolver_t *res, const rcase_t *cases, size_t n)
{
	resolve_reply_t r = RESOLVE_REPLY_INIT;

	for (size_t i = 0; i < n; i++) {
		const rcase_t *c = &cases[i];
		/* Twice: the second answer comes from the cache (unless a
		 * retry, which is never cached) and must be the same. */
		for (int pass = 0; pass < 2; pass++) {
			resolve_status_t st = resolve_addr(res, c->in, &r);
			ATF_CHECK_EQ_MSG(st, c->st, "%s: status %d, expected %d (%s)",
			    c->in, st, c->st, str_cstr(&r.reason));
			if (st != c->st)
				continue;
			if (st == RESOLVE_OK) {
				ATF_CHECK_STREQ_MSG(str_cstr(&r.transport),
				    c->transport, "%s: transport", c->in);
				ATF_CHECK_STREQ_MSG(str_cstr(&r.nexthop),
				    c->nexthop, "%s: nexthop", c->in);
				ATF_CHECK_STREQ_MSG(str_cstr(&r.address),
				    c->address, "%s: address", c->in);
				ATF_CHECK_EQ_MSG(r.flags & ~RESOLVE_F_CACHED,
				    c->flags, "%s: flags 0x%x, expected 0x%x",
				    c->in, r.flags, c->flags);
				ATF_CHECK_STREQ(r.dsn, "");
			} else {
				ATF_CHECK_STREQ_MSG(r.dsn, c->dsn, "%s: dsn %s",
				    c->in, r.dsn);
				ATF_CHECK_MSG(str_len(&r.reason) > 0,
				    "%s: no reason", c->in);
			}
			ATF_CHECK_EQ_MSG((r.flags & RESOLVE_F_CACHED) != 0,
			    pass == 1 && st != RESOLVE_RETRY,
			    "%s pass %d: cached flag", c->in, pass);
		}
	}
	resolve_reply_free(&r);
}

ATF_TC_WITHOUT_HEAD(rules);
ATF_TC_BODY(rules, tc)
{
	static const rcase_t cases[] = {
		/* mydestination -> local_transport's default nexthop */
		{ "user@host.example.com", RESOLVE_OK, "local",
		  "host.example.com", "user@host.example.com", LOC, NULL },
		/* domain case folding and one trailing dot */
		{ "User@HOST.Example.COM.", RESOLVE_OK, "local",
		  "host.example.com", "User@host.example.com", LOC, NULL },
		{ "Someone@LOCALHOST", RESOLVE_OK, "local", "host.example.com",
		  "Someone@localhost", LOC, NULL },
		/* no domain: local */
		{ "postmaster", RESOLVE_OK, "local", "host.example.com",
		  "postmaster", LOC, NULL },
		/* quoted local parts are stored unquoted; the domain is after
		 * the last @ */
		{ "john doe@host.example.com", RESOLVE_OK, "local",
		  "host.example.com", "john doe@host.example.com", LOC, NULL },
		{ "a@b@example.org", RESOLVE_OK, "smtp", "example.org",
		  "a@b@example.org", DEF, NULL },
		/* ip literals: ours are local, others go to that address */
		{ "user@[192.0.2.10]", RESOLVE_OK, "local", "host.example.com",
		  "user@[192.0.2.10]", LOC | LIT, NULL },
		{ "user@[IPv6:2001:DB8::10]", RESOLVE_OK, "local",
		  "host.example.com", "user@[IPv6:2001:db8::10]", LOC | LIT, NULL },
		{ "user@[198.51.100.1]", RESOLVE_OK, "local", "host.example.com",
		  "user@[198.51.100.1]", LOC | LIT, NULL },
		{ "user@[192.0.2.99]", RESOLVE_OK, "smtp", "[192.0.2.99]",
		  "user@[192.0.2.99]", DEF | LIT, NULL },
		/* default_transport, nexthop = the domain */
		{ "user@Example.ORG", RESOLVE_OK, "smtp", "example.org",
		  "user@example.org", DEF, NULL },
		/* relay_domains: itself, subdomains, a table */
		{ "user@relay.example", RESOLVE_OK, "relay", "relay.example",
		  "user@relay.example", REL, NULL },
		{ "user@a.relay.example", RESOLVE_OK, "relay", "a.relay.example",
		  "user@a.relay.example", REL, NULL },
		{ "user@rtab.example", RESOLVE_OK, "relay", "rtab.example",
		  "user@rtab.example", REL, NULL },
		/* transport_maps */
		{ "user@special.example", RESOLVE_OK, "smtp",
		  "[mx.special.example]:2525", "user@special.example",
		  DEF | RT, NULL },
		{ "user@x.sub.example", RESOLVE_OK, "relay", "x.sub.example",
		  "user@x.sub.example", DEF | RT, NULL },
		{ "user@y.x.sub.example", RESOLVE_OK, "relay", "y.x.sub.example",
		  "user@y.x.sub.example", DEF | RT, NULL },
		/* ".sub.example" does not match sub.example itself */
		{ "user@sub.example", RESOLVE_OK, "smtp", "sub.example",
		  "user@sub.example", DEF, NULL },
		/* user+ext@domain found through user@domain */
		{ "user+foo@tm.example", RESOLVE_OK, "local", "tm.example",
		  "user+foo@tm.example", DEF | RT, NULL },
		{ "user@tm.example", RESOLVE_OK, "local", "tm.example",
		  "user@tm.example", DEF | RT, NULL },
		{ "other@tm.example", RESOLVE_OK, "smtp", "tm.example",
		  "other@tm.example", DEF, NULL },
		{ "bob@ext.example", RESOLVE_OK, "error", "5.1.1 no such user",
		  "bob@ext.example", DEF | RT, NULL },
		/* empty parts keep the defaults */
		{ "user@only-nexthop.example", RESOLVE_OK, "smtp", "[gw.example]",
		  "user@only-nexthop.example", DEF | RT, NULL },
		{ "user@only-transport.example", RESOLVE_OK, "custom",
		  "only-transport.example", "user@only-transport.example",
		  DEF | RT, NULL },
		{ "user@colonless.example", RESOLVE_OK, "discard",
		  "colonless.example", "user@colonless.example", DEF | RT, NULL },
		/* transport_maps applies to local domains too, by address */
		{ "boss@host.example.com", RESOLVE_OK, "smtp", "[boss-gw.example]",
		  "boss@host.example.com", LOC | RT, NULL },
		/* a broken table entry defers (configuration error) */
		{ "user@bad.example", RESOLVE_RETRY, NULL, NULL, NULL, 0, "4.3.5" },
		/* addresses that cannot be resolved */
		{ "", RESOLVE_FAIL, NULL, NULL, NULL, 0, "5.1.3" },
		{ "user@", RESOLVE_FAIL, NULL, NULL, NULL, 0, "5.1.3" },
		{ "user@bad_domain!", RESOLVE_FAIL, NULL, NULL, NULL, 0, "5.1.2" },
		{ "user@1.2.3.4", RESOLVE_FAIL, NULL, NULL, NULL, 0, "5.1.2" },
		{ "user@[tag:foo]", RESOLVE_FAIL, NULL, NULL, NULL, 0, "5.1.2" },
		{ "user@[300.1.1.1]", RESOLVE_FAIL, NULL, NULL, NULL, 0, "5.1.2" },
	};
	resolve_config_t c;
	str_t err = STR_INIT;
	resolver_t *res;

	base_config(&c);
	res = resolver_new(&c, &err);
	ATF_REQUIRE_MSG(res != NULL, "%s", str_cstr(&err));
	run_cases(res, cases, sizeof(cases) / sizeof(cases[0]));
	resolver_free(res);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(relayhost);
ATF_TC_BODY(relayhost, tc)
{
	static const rcase_t cases[] = {
		/* relayhost replaces the domain for default and relay mail,
		 * passed on as written */
		{ "user@example.org", RESOLVE_OK, "smtp",
		  "[smarthost.example]:587", "user@example.org", DEF, NULL },
		{ "user@relay.example", RESOLVE_OK, "relay",
		  "[smarthost.example]:587", "user@relay.example", REL, NULL },
		/* not for local mail, and transport_maps still wins */
		{ "user@localhost", RESOLVE_OK, "local", "host.example.com",
		  "user@localhost", LOC, NULL },
		{ "user@special.example", RESOLVE_OK, "smtp",
		  "[mx.special.example]:2525", "user@special.example",
		  DEF | RT, NULL },
		/* an empty nexthop in the map keeps the relayhost */
		{ "user@only-transport.example", RESOLVE_OK, "custom",
		  "[smarthost.example]:587", "user@only-transport.example",
		  DEF | RT, NULL },
	};
	resolve_config_t c;
	str_t err = STR_INIT;
	resolver_t *res;

	base_config(&c);
	c.relayhost = " [smarthost.example]:587 ";
	res = resolver_new(&c, &err);
	ATF_REQUIRE_MSG(res != NULL, "%s", str_cstr(&err));
	run_cases(res, cases, sizeof(cases) / sizeof(cases[0]));
	resolver_free(res);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(virtual_mailbox);
ATF_TC_BODY(virtual_mailbox, tc)
{
	static const rcase_t lmtp[] = {
		/* virtual_mailbox_domains: virtual_transport with its
		 * nexthop, never relayhost */
		{ "User@One.Test", RESOLVE_OK, "lmtp",
		  "unix:private/dovecot-lmtp", "User@one.test", VIR, NULL },
		{ "bob@two.test", RESOLVE_OK, "lmtp",
		  "unix:private/dovecot-lmtp", "bob@two.test", VIR, NULL },
		/* not a subdomain (unlike relay_domains) */
		{ "bob@sub.two.test", RESOLVE_OK, "smtp", "[smarthost]",
		  "bob@sub.two.test", DEF, NULL },
		/* local wins over virtual, virtual over relay */
		{ "x@host.example.com", RESOLVE_OK, "local",
		  "host.example.com", "x@host.example.com", LOC, NULL },
		{ "x@relay.example", RESOLVE_OK, "lmtp",
		  "unix:private/dovecot-lmtp", "x@relay.example", VIR, NULL },
		{ "x@a.relay.example", RESOLVE_OK, "relay", "[smarthost]",
		  "x@a.relay.example", REL, NULL },
		/* transport_maps still overrides */
		{ "x@routed.test", RESOLVE_OK, "smtp", "[elsewhere]",
		  "x@routed.test", VIR | RT, NULL },
	};
	static const rcase_t alias[] = {
		/* virtual_alias_domains: what cleanup left there is unknown */
		{ "nobody@alias.test", RESOLVE_OK, "error",
		  "5.1.1 User unknown in virtual alias table",
		  "nobody@alias.test", VAL, NULL },
		/* alias domains come before mailbox domains */
		{ "x@both.test", RESOLVE_OK, "error",
		  "5.1.1 User unknown in virtual alias table",
		  "x@both.test", VAL, NULL },
		{ "x@one.test", RESOLVE_OK, "lmtp", "unix:lmtp",
		  "x@one.test", VIR, NULL },
		/* local first */
		{ "x@localhost", RESOLVE_OK, "local", "host.example.com",
		  "x@localhost", LOC, NULL },
	};
	static const rcase_t deflt[] = {
		/* Postfix's default transport name; the domain as nexthop */
		{ "bob@two.test", RESOLVE_OK, "virtual", "two.test",
		  "bob@two.test", VIR, NULL },
	};
	resolve_config_t c;
	str_t err = STR_INIT;
	resolver_t *res;

	base_config(&c);
	c.relayhost = "[smarthost]";
	c.virtual_mailbox_domains = "one.test, two.test, relay.example, "
	    "routed.test, host.example.com";
	c.virtual_transport = "lmtp:unix:private/dovecot-lmtp";
	c.relay_domains = "relay.example";
	c.transport_maps = "inline:{ {routed.test = smtp:[elsewhere]} }";
	res = resolver_new(&c, &err);
	ATF_REQUIRE_MSG(res != NULL, "%s", str_cstr(&err));
	run_cases(res, lmtp, sizeof(lmtp) / sizeof(lmtp[0]));
	resolver_free(res);

	base_config(&c);
	c.virtual_alias_domains = "alias.test, both.test, localhost";
	c.virtual_mailbox_domains = "one.test, both.test";
	c.virtual_transport = "lmtp:unix:lmtp";
	res = resolver_new(&c, &err);
	ATF_REQUIRE_MSG(res != NULL, "%s", str_cstr(&err));
	run_cases(res, alias, sizeof(alias) / sizeof(alias[0]));
	resolver_free(res);

	base_config(&c);
	c.virtual_mailbox_domains = "two.test";
	res = resolver_new(&c, &err);
	ATF_REQUIRE_MSG(res != NULL, "%s", str_cstr(&err));
	run_cases(res, deflt, sizeof(deflt) / sizeof(deflt[0]));
	resolver_free(res);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(transport_params);
ATF_TC_BODY(transport_params, tc)
{
	static const rcase_t cases[] = {
		/* transport:nexthop in the class parameters wins over
		 * relayhost and the domain */
		{ "user@example.org", RESOLVE_OK, "smtp", "[outbound.example]",
		  "user@example.org", DEF, NULL },
		{ "user@relay.example", RESOLVE_OK, "relay", "[smarthost]",
		  "user@relay.example", REL, NULL },
		{ "user@host.example.com", RESOLVE_OK, "lmtp", "mailstore",
		  "user@host.example.com", LOC, NULL },
		/* "*" matches anything not found before it */
		{ "user@star.example", RESOLVE_OK, "star", "[catchall]",
		  "user@star.example", DEF | RT, NULL },
	};
	resolve_config_t c;
	str_t err = STR_INIT;
	resolver_t *res;

	base_config(&c);
	c.relayhost = "[smarthost]";
	c.default_transport = "smtp:[outbound.example]";
	c.local_transport = "lmtp:mailstore";
	c.transport_maps = "inline:{ {star.example = star:[catchall]} }";
	res = resolver_new(&c, &err);
	ATF_REQUIRE_MSG(res != NULL, "%s", str_cstr(&err));
	run_cases(res, cases, sizeof(cases) / sizeof(cases[0]));
	resolver_free(res);

	/* A wildcard catches everything, local mail included. */
	c.transport_maps = "inline:{ {keep.example = :}, {* = smtp:[catchall]} }";
	res = resolver_new(&c, &err);
	ATF_REQUIRE_MSG(res != NULL, "%s", str_cstr(&err));
	{
		static const rcase_t wc[] = {
			{ "user@any.example", RESOLVE_OK, "smtp", "[catchall]",
			  "user@any.example", DEF | RT, NULL },
			{ "user@localhost", RESOLVE_OK, "smtp", "[catchall]",
			  "user@localhost", LOC | RT, NULL },
			{ "user@keep.example", RESOLVE_OK, "smtp",
			  "[outbound.example]", "user@keep.example", DEF | RT,
			  NULL },
		};
		run_cases(res, wc, sizeof(wc) / sizeof(wc[0]));
	}
	resolver_free(res);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(texthash_and_order);
ATF_TC_BODY(texthash_and_order, tc)
{
	FILE *f = fopen("tmap", "w");
	resolve_config_t c;
	str_t err = STR_INIT;
	resolver_t *res;

	ATF_REQUIRE(f);
	fputs("# transport table\n"
	    "a.example     first:\n"
	    ".a.example    parent:\n"
	    "b.a.example   second:[b]\n", f);
	fclose(f);
	base_config(&c);
	/* Two tables: every key is tried in all tables before the next
	 * key, so the second table's exact domain beats the first's
	 * parent entry. */
	c.transport_maps = "texthash:tmap, inline:{ {c.b.a.example = third:} }";
	res = resolver_new(&c, &err);
	ATF_REQUIRE_MSG(res != NULL, "%s", str_cstr(&err));
	{
		static const rcase_t cases[] = {
			{ "u@a.example", RESOLVE_OK, "first", "a.example",
			  "u@a.example", DEF | RT, NULL },
			{ "u@b.a.example", RESOLVE_OK, "second", "[b]",
			  "u@b.a.example", DEF | RT, NULL },
			{ "u@c.b.a.example", RESOLVE_OK, "third", "c.b.a.example",
			  "u@c.b.a.example", DEF | RT, NULL },
			{ "u@d.b.a.example", RESOLVE_OK, "parent", "d.b.a.example",
			  "u@d.b.a.example", DEF | RT, NULL },
			{ "u@other.example", RESOLVE_OK, "smtp", "other.example",
			  "u@other.example", DEF, NULL },
		};
		run_cases(res, cases, sizeof(cases) / sizeof(cases[0]));
	}
	resolver_free(res);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(delimiter);
ATF_TC_BODY(delimiter, tc)
{
	resolve_config_t c;
	str_t err = STR_INIT;
	resolver_t *res;

	base_config(&c);
	c.recipient_delimiter = "-+";
	c.transport_maps = "inline:{ {joe@d.example = j:}, {owner-list@d.example = o:} }";
	res = resolver_new(&c, &err);
	ATF_REQUIRE(res);
	{
		static const rcase_t cases[] = {
			{ "joe+x@d.example", RESOLVE_OK, "j", "d.example",
			  "joe+x@d.example", DEF | RT, NULL },
			{ "joe-y@d.example", RESOLVE_OK, "j", "d.example",
			  "joe-y@d.example", DEF | RT, NULL },
			/* owner-... is not split when '-' is a delimiter */
			{ "owner-list@d.example", RESOLVE_OK, "o", "d.example",
			  "owner-list@d.example", DEF | RT, NULL },
			{ "joey@d.example", RESOLVE_OK, "smtp", "d.example",
			  "joey@d.example", DEF, NULL },
		};
		run_cases(res, cases, sizeof(cases) / sizeof(cases[0]));
	}
	resolver_free(res);

	/* Without a delimiter nothing is split. */
	c.recipient_delimiter = "";
	res = resolver_new(&c, &err);
	ATF_REQUIRE(res);
	{
		static const rcase_t cases[] = {
			{ "joe+x@d.example", RESOLVE_OK, "smtp", "d.example",
			  "joe+x@d.example", DEF, NULL },
		};
		run_cases(res, cases, sizeof(cases) / sizeof(cases[0]));
	}
	resolver_free(res);
	str_release(&err);
}

/* A hash: table that disappears: lookups fail, which must defer
 * (RESOLVE_RETRY), never bounce, and must not be cached. */
ATF_TC_WITHOUT_HEAD(table_errors);
ATF_TC_BODY(table_errors, tc)
{
	resolve_reply_t r = RESOLVE_REPLY_INIT;
	resolve_config_t c;
	str_t err = STR_INIT, path = STR_INIT;
	dict_writer_t *w;
	resolver_t *res;
	int tries;

	for (int which = 0; which < 3; which++) {
		const char *spec = "hash:tab";
		w = dict_writer_open(spec, 0, &err);
		ATF_REQUIRE_MSG(w, "%s", str_cstr(&err));
		ATF_REQUIRE(dict_writer_put(w, "listed.example", "relay:x", &err)
		    == DICT_PUT_NEW);
		ATF_REQUIRE_MSG(dict_writer_commit(w, &err) == 0, "%s",
		    str_cstr(&err));
		base_config(&c);
		if (which == 0)
			c.mydestination = "localhost, hash:tab";
		else if (which == 1)
			c.relay_domains = "hash:tab";
		else
			c.transport_maps = spec;
		res = resolver_new(&c, &err);
		ATF_REQUIRE_MSG(res, "%s", str_cstr(&err));
		ATF_CHECK_EQ(resolve_addr(res, "u@listed.example", &r), RESOLVE_OK);
		ATF_REQUIRE(unlink("tab.db") == 0);
		/* hash: notices a removed file within a second: bounded wait. */
		for (tries = 0; tries < 40; tries++) {
			if (resolve_addr(res, "u@unlisted.example", &r) ==
			    RESOLVE_RETRY)
				break;
			resolver_cache_flush(res);
			usleep(100000);
		}
		ATF_CHECK_MSG(tries < 40, "table %d: no error", which);
		ATF_CHECK_STREQ(r.dsn, "4.3.0");
		ATF_CHECK_MSG(strstr(str_cstr(&r.reason), "lookup failure"),
		    "%s", str_cstr(&r.reason));
		/* not cached: the same question fails the same way */
		ATF_CHECK_EQ(resolve_addr(res, "u@unlisted.example", &r),
		    RESOLVE_RETRY);
		ATF_CHECK((r.flags & RESOLVE_F_CACHED) == 0);
		resolver_free(res);
	}
	resolve_reply_free(&r);
	str_release(&err);
	str_release(&path);
}

ATF_TC_WITHOUT_HEAD(pconfig_errors);
ATF_TC_BODY(pconfig_errors, tc)
{
	resolve_config_t c;
	str_t err = STR_INIT;

	base_config(&c);
	c.transport_maps = "nosuchtype:foo";
	ATF_CHECK(resolver_new(&c, &err) == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "transport_maps"), "%s",
	    str_cstr(&err));
	base_config(&c);
	c.transport_maps = "texthash:/nonexistent/file";
	ATF_CHECK(resolver_new(&c, &err) == NULL);
	base_config(&c);
	c.default_transport = "bad name:x";
	ATF_CHECK(resolver_new(&c, &err) == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "default_transport"), "%s",
	    str_cstr(&err));
	base_config(&c);
	c.local_transport = ":nexthop-only";
	ATF_CHECK(resolver_new(&c, &err) == NULL);
	base_config(&c);
	c.mydestination = ".[192.0.2.1]";
	ATF_CHECK(resolver_new(&c, &err) == NULL);
	base_config(&c);
	c.my_addresses = "not-an-address.invalid";
	ATF_CHECK(resolver_new(&c, &err) == NULL);
	str_release(&err);
}

static time_t fake_now;
static time_t fake_clock(void)
{
	return fake_now;
}

ATF_TC_WITHOUT_HEAD(cache);
ATF_TC_BODY(cache, tc)
{
	resolve_reply_t r = RESOLVE_REPLY_INIT;
	resolve_config_t c;
	resolve_stats_t st;
	str_t err = STR_INIT;
	resolver_t *res;
	char addr[64];

	base_config(&c);
	c.cache_limit = 3;
	c.cache_ttl = 10;
	c.now = fake_clock;
	fake_now = 1000;
	res = resolver_new(&c, &err);
	ATF_REQUIRE(res);
	for (int i = 0; i < 5; i++) {
		snprintf(addr, sizeof(addr), "u%d@example.org", i);
		resolve_addr(res, addr, &r);
	}
	resolver_stats(res, &st);
	ATF_CHECK_EQ(st.entries, 3);
	ATF_CHECK_EQ(st.evictions, 2);
	ATF_CHECK_EQ(st.hits, 0);
	/* the most recent three are cached, the oldest two were evicted */
	resolve_addr(res, "u4@example.org", &r);
	ATF_CHECK(r.flags & RESOLVE_F_CACHED);
	resolve_addr(res, "u2@example.org", &r);
	ATF_CHECK(r.flags & RESOLVE_F_CACHED);
	resolve_addr(res, "u0@example.org", &r);
	ATF_CHECK(!(r.flags & RESOLVE_F_CACHED));
	/* u2 and u4 were used recently: u3 went out for u0 */
	resolve_addr(res, "u3@example.org", &r);
	ATF_CHECK(!(r.flags & RESOLVE_F_CACHED));
	resolve_addr(res, "u4@example.org", &r);
	ATF_CHECK(!(r.flags & RESOLVE_F_CACHED));	/* u2 then u4 went */
	/* ttl */
	resolve_addr(res, "u4@example.org", &r);
	ATF_CHECK(r.flags & RESOLVE_F_CACHED);
	fake_now += 10;
	resolve_addr(res, "u4@example.org", &r);
	ATF_CHECK(!(r.flags & RESOLVE_F_CACHED));
	ATF_CHECK_STREQ(str_cstr(&r.nexthop), "example.org");
	/* flush */
	resolver_cache_flush(res);
	resolver_stats(res, &st);
	ATF_CHECK_EQ(st.entries, 0);
	resolve_addr(res, "u4@example.org", &r);
	ATF_CHECK(!(r.flags & RESOLVE_F_CACHED));
	resolver_free(res);
	resolve_reply_free(&r);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(from_config);
ATF_TC_BODY(from_config, tc)
{
	resolve_reply_t r = RESOLVE_REPLY_INIT;
	str_t err = STR_INIT;
	resolver_t *res;

	ATF_REQUIRE(pconfig_load_text(
	    "myhostname = mx.example.net\n"
	    "mydomain = example.net\n"
	    "relay_domains = relayed.example\n"
	    "relayhost = [up.example]:2525\n"
	    "inet_interfaces = loopback-only\n"
	    "proxy_interfaces = 203.0.113.5\n", "main.cf") == 0);
	res = resolver_from_config(&err);
	ATF_REQUIRE_MSG(res, "%s", str_cstr(&err));
	/* mydestination default: $myhostname, localhost.$mydomain, localhost */
	ATF_CHECK_EQ(resolve_addr(res, "a@mx.example.net", &r), RESOLVE_OK);
	ATF_CHECK_STREQ(str_cstr(&r.transport), "local");
	ATF_CHECK_STREQ(str_cstr(&r.nexthop), "mx.example.net");
	ATF_CHECK_EQ(resolve_addr(res, "a@localhost.example.net", &r), RESOLVE_OK);
	ATF_CHECK(r.flags & RESOLVE_CLASS_LOCAL);
	ATF_CHECK_EQ(resolve_addr(res, "a@[127.0.0.1]", &r), RESOLVE_OK);
	ATF_CHECK(r.flags & RESOLVE_CLASS_LOCAL);
	ATF_CHECK_EQ(resolve_addr(res, "a@[203.0.113.5]", &r), RESOLVE_OK);
	ATF_CHECK(r.flags & RESOLVE_CLASS_LOCAL);
	ATF_CHECK_EQ(resolve_addr(res, "a@sub.relayed.example", &r), RESOLVE_OK);
	ATF_CHECK_STREQ(str_cstr(&r.transport), "relay");
	ATF_CHECK_STREQ(str_cstr(&r.nexthop), "[up.example]:2525");
	ATF_CHECK_EQ(resolve_addr(res, "a@example.com", &r), RESOLVE_OK);
	ATF_CHECK_STREQ(str_cstr(&r.transport), "smtp");
	ATF_CHECK_STREQ(str_cstr(&r.nexthop), "[up.example]:2525");
	resolver_free(res);
	resolve_reply_free(&r);
	str_release(&err);
	pconfig_reset();
}

ATF_TC_WITHOUT_HEAD(split_transport);
ATF_TC_BODY(split_transport, tc)
{
	str_t t = STR_INIT, n = STR_INIT;

	ATF_CHECK(resolve_split_transport("smtp:[h]:25", &t, &n));
	ATF_CHECK_STREQ(str_cstr(&t), "smtp");
	ATF_CHECK_STREQ(str_cstr(&n), "[h]:25");
	ATF_CHECK(resolve_split_transport(":x", &t, &n));
	ATF_CHECK_STREQ(str_cstr(&t), "");
	ATF_CHECK_STREQ(str_cstr(&n), "x");
	ATF_CHECK(resolve_split_transport("local", &t, &n));
	ATF_CHECK_STREQ(str_cstr(&t), "local");
	ATF_CHECK_STREQ(str_cstr(&n), "");
	ATF_CHECK(resolve_split_transport("error:5.1.1 gone: really", &t, &n));
	ATF_CHECK_STREQ(str_cstr(&n), "5.1.1 gone: really");
	ATF_CHECK(!resolve_split_transport("sm tp:x", &t, &n));
	ATF_CHECK(!resolve_split_transport("a/b:x", &t, &n));
	str_release(&t);
	str_release(&n);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, rules);
	ATF_TP_ADD_TC(tp, relayhost);
	ATF_TP_ADD_TC(tp, transport_params);
	ATF_TP_ADD_TC(tp, texthash_and_order);
	ATF_TP_ADD_TC(tp, delimiter);
	ATF_TP_ADD_TC(tp, table_errors);
	ATF_TP_ADD_TC(tp, pconfig_errors);
	ATF_TP_ADD_TC(tp, cache);
	ATF_TP_ADD_TC(tp, from_config);
	ATF_TP_ADD_TC(tp, split_transport);
	ATF_TP_ADD_TC(tp, virtual_mailbox);
	return atf_no_error();
}
