/* smtpd's restriction logic: network lists, access tables and their
 * lookup keys, destination checks, the DNS domain check (with a fake
 * resolver transport, never the network), and the shared connection
 * counts across processes. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "config.h"
#include "t_dns_pkt.h"
#include "t_smtpd_harness.h"

ATF_TC_WITHOUT_HEAD(netlist);
ATF_TC_BODY(netlist, tc)
{
	str_t err = STR_INIT;
	/* Tables among networks, each its own entry: braces keep their
	 * commas, a negated table stops the walk. */
	smtpd_netlist_t *l = smtpd_netlist_new("mynetworks",
	    "!inline:{ 192.0.2.5=x, 192.0.2.6=y }, "
	    "127.0.0.0/8, !192.0.2.128/25 192.0.2.0/24 [::1]/128 "
	    "2001:db8::/32 198.51.100.7 inline:{ 203.0.113.9=x, 2001:db9::5=y }"
	    " inline:{ { 198.51.100.1 = a, b } }",
	    &err);
	ATF_REQUIRE_MSG(l != NULL, "%s", str_cstr(&err));
	static const struct {
		const char *addr;
		int want;
	} cases[] = {
		{ "127.0.0.1", 1 }, { "127.255.255.254", 1 }, { "128.0.0.1", 0 },
		{ "192.0.2.1", 1 }, { "192.0.2.127", 1 }, { "192.0.2.128", 0 },
		{ "192.0.2.255", 0 }, { "::1", 1 }, { "::2", 0 },
		{ "2001:db8:1::1", 1 }, { "2001:db9::1", 0 },
		{ "198.51.100.7", 1 }, { "198.51.100.8", 0 },
		{ "192.0.2.5", 0 }, { "192.0.2.6", 0 }, { "192.0.2.7", 1 },
		{ "198.51.100.1", 1 }, { "198.51.100.2", 0 },
		{ "203.0.113.9", 1 }, { "203.0.113.10", 0 },
		{ "2001:db9::5", 1 }, { "2001:0db9:0::5", 1 },
		{ "::ffff:127.0.0.1", 1 }, { "::ffff:10.0.0.1", 0 },
		{ "not an address", 0 }, { "", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ATF_CHECK_EQ_MSG(smtpd_netlist_match(l, cases[i].addr, &err),
		    cases[i].want, "%s", cases[i].addr);
	smtpd_netlist_free(l);

	/* Empty and NULL lists match nothing. */
	l = smtpd_netlist_new("x", "", &err);
	ATF_REQUIRE(l != NULL);
	ATF_CHECK_EQ(smtpd_netlist_match(l, "127.0.0.1", &err), 0);
	smtpd_netlist_free(l);
	ATF_CHECK_EQ(smtpd_netlist_match(NULL, "127.0.0.1", &err), 0);

	/* IPv4-mapped IPv6 networks, as in Debian's default mynetworks:
	 * the mask counts the 96 bits of the ::ffff: prefix. */
	l = smtpd_netlist_new("mynetworks", "[::ffff:10.0.0.0]/104 "
	    "[::ffff:192.0.2.7]/128", &err);
	ATF_REQUIRE_MSG(l != NULL, "%s", str_cstr(&err));
	ATF_CHECK_EQ(smtpd_netlist_match(l, "10.1.2.3", &err), 1);
	ATF_CHECK_EQ(smtpd_netlist_match(l, "::ffff:10.9.9.9", &err), 1);
	ATF_CHECK_EQ(smtpd_netlist_match(l, "11.0.0.1", &err), 0);
	ATF_CHECK_EQ(smtpd_netlist_match(l, "192.0.2.7", &err), 1);
	ATF_CHECK_EQ(smtpd_netlist_match(l, "192.0.2.8", &err), 0);
	smtpd_netlist_free(l);

	static const struct {
		const char *spec, *err;
	} bad[] = {
		{ "192.0.2.1/24", "non-null host address bits in \"192.0.2.1/24\"" },
		{ "192.0.2.0/33", "bad network mask in \"192.0.2.0/33\"" },
		{ "[::1]/129", "bad network mask" },
		{ "[::ffff:10.0.0.0]/95", "bad network mask" },
		{ "[::ffff:10.0.0.0]/129", "bad network mask" },
		{ "[::ffff:10.0.0.1]/104", "non-null host address bits" },
		{ "192.0.2.0/x", "bad network mask" },
		{ "example.com", "bad network pattern \"example.com\"" },
		{ "1.2.3", "bad network pattern" },
		{ "nosuchtype:foo", "cannot open nosuchtype:foo" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		str_reset(&err);
		l = smtpd_netlist_new("mynetworks", bad[i].spec, &err);
		ATF_CHECK_MSG(l == NULL, "%s accepted", bad[i].spec);
		ATF_CHECK_MSG(strstr(str_cstr(&err), bad[i].err) != NULL,
		    "%s: %s", bad[i].spec, str_cstr(&err));
		ATF_CHECK_MATCH("^mynetworks: ", str_cstr(&err));
		smtpd_netlist_free(l);
	}
	str_release(&err);
}

/* Runs list value as smtpd_recipient_restrictions for a context; returns
 * "DUNNO", "OK" or the reply "450 4.7.1 text". */
static char *check_with(smtpd_cfg_t *cfg, const char *list,
    smtpd_check_ctx_t *x)
{
	str_t err = STR_INIT, out = STR_INIT;
	smtpd_reply_t rp = SMTPD_REPLY_INIT;
	smtpd_restr_t *r = smtpd_restr_parse("smtpd_recipient_restrictions",
	    list, &err, NULL);

	ATF_REQUIRE_MSG(r != NULL, "%s", str_cstr(&err));
	x->cfg = cfg;
	switch (smtpd_check(r, x, SMTPD_ST_RCPT, &rp)) {
	case SMTPD_CHK_DUNNO:
		str_set(&out, "DUNNO");
		break;
	case SMTPD_CHK_OK:
		str_set(&out, "OK");
		break;
	case SMTPD_CHK_REJECT:
		str_setf(&out, "%d %s %s", rp.code, rp.dsn, str_cstr(&rp.text));
		break;
	}
	smtpd_restr_free(r);
	str_release(&rp.text);
	str_release(&err);
	return str_steal(&out);
}

#define EXPECT(cfg, list, ctxp, want) do { \
	char *got_ = check_with((cfg), (list), (ctxp)); \
	ATF_CHECK_MSG(strcmp(got_, (want)) == 0, "%s: got \"%s\", want \"%s\"", \
	    (list), got_, (want)); \
	free(got_); \
} while (0)

ATF_TC_WITHOUT_HEAD(access_results);
ATF_TC_BODY(access_results, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	smtpd_check_ctx_t x = { .client_name = "unknown", .client_addr = "192.0.2.1",
		.rcpt = "u@example.com" };
	static const struct {
		const char *value, *want;
	} cases[] = {
		{ "OK", "OK" }, { "ok", "OK" }, { "PERMIT", "OK" }, { "1234", "OK" },
		{ "DUNNO", "DUNNO" },
		{ "REJECT", "554 5.7.1 <u@example.com>: Recipient address rejected: Access denied" },
		{ "REJECT no thanks", "554 5.7.1 <u@example.com>: Recipient address rejected: no thanks" },
		{ "DEFER later", "450 4.7.1 <u@example.com>: Recipient address rejected: later" },
		{ "550 gone", "550 5.7.1 <u@example.com>: Recipient address rejected: gone" },
		{ "550 5.1.1 gone", "550 5.1.1 <u@example.com>: Recipient address rejected: gone" },
		/* An enhanced code of the wrong class is text. */
		{ "451 5.1.1 odd", "451 4.7.1 <u@example.com>: Recipient address rejected: 5.1.1 odd" },
		{ "421", "421 4.7.1 <u@example.com>: Recipient address rejected: Access denied" },
		{ "FROBNICATE", "451 4.3.5 <u@example.com>: Recipient address rejected: Server configuration error" },
		{ "250 fine", "451 4.3.5 <u@example.com>: Recipient address rejected: Server configuration error" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		str_t list = STR_INIT;
		str_setf(&list, "check_recipient_access inline:{ {u@example.com = %s} }",
		    cases[i].value);
		EXPECT(cfg, str_cstr(&list), &x, cases[i].want);
		str_release(&list);
	}
	/* access_map_reject_code */
	smtpd_cfg_free(cfg);
	cfg = cfg_with("access_map_reject_code = 550\n");
	EXPECT(cfg, "check_recipient_access inline:{ u@example.com=REJECT }", &x,
	    "550 5.7.1 <u@example.com>: Recipient address rejected: Access denied");
	/* Two tables in one list, each answering for itself; the braces
	 * keep the value's comma. */
	EXPECT(cfg, "check_client_access inline:{ 192.0.2.9=REJECT, "
	    "192.0.2.1=DUNNO }, check_recipient_access inline:{ "
	    "{u@example.com = 550 5.1.1 no, such user} }", &x,
	    "550 5.1.1 <u@example.com>: Recipient address rejected: "
	    "no, such user");
	/* A table that cannot be opened answers 451 for every lookup. */
	EXPECT(cfg, "check_recipient_access texthash:/nonexistent/access", &x,
	    "451 4.3.0 <u@example.com>: Temporary lookup failure");
	smtpd_cfg_free(cfg);
}

/* FILTER: the transaction's filter is set (the last one wins) and the
 * evaluation goes on; a malformed value, or one where no filter can be
 * set (the end of data), changes nothing. */
ATF_TC_WITHOUT_HEAD(access_filter);
ATF_TC_BODY(access_filter, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	str_t filter = STR_INIT;
	smtpd_check_ctx_t x = { .client_name = "unknown", .client_addr = "192.0.2.1",
		.rcpt = "u@example.com", .filter = &filter };

	EXPECT(cfg, "check_recipient_access inline:{ {u@example.com = FILTER smtp:[127.0.0.1]:10025 } }",
	    &x, "DUNNO");
	ATF_CHECK_STREQ(str_cstr(&filter), "smtp:[127.0.0.1]:10025");
	/* evaluation goes on after it: a later REJECT still refuses */
	EXPECT(cfg, "check_recipient_access inline:{ {u@example.com = FILTER scan:} }, reject",
	    &x, "554 5.7.1 <u@example.com>: Recipient address rejected: Access denied");
	ATF_CHECK_STREQ(str_cstr(&filter), "scan:");
	/* the last one wins */
	EXPECT(cfg, "check_client_access inline:{ {192.0.2.1 = FILTER one:} }, "
	    "check_recipient_access inline:{ {u@example.com = FILTER two:x} }",
	    &x, "DUNNO");
	ATF_CHECK_STREQ(str_cstr(&filter), "two:x");
	/* malformed: ignored, no refusal */
	EXPECT(cfg, "check_recipient_access inline:{ {u@example.com = FILTER nocolon} }",
	    &x, "DUNNO");
	ATF_CHECK_STREQ(str_cstr(&filter), "two:x");
	x.filter = NULL;
	EXPECT(cfg, "check_recipient_access inline:{ {u@example.com = FILTER three:} }",
	    &x, "DUNNO");
	smtpd_cfg_free(cfg);
	str_release(&filter);
}

/* cidr:, regexp: and pcre: access tables in restrictions and mynetworks;
 * a table with a syntax error answers 451 (mail waits), never a crash. */
ATF_TC_WITHOUT_HEAD(pattern_tables);
ATF_TC_BODY(pattern_tables, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	smtpd_check_ctx_t x = { .client_name = "unknown", .client_addr = "192.0.2.77",
		.rcpt = "Bob@Example.COM" };
	str_t err = STR_INIT;

	put_file("clients", "192.0.2.0/25 REJECT bad net\n0.0.0.0/0 DUNNO\n");
	EXPECT(cfg, "check_client_access cidr:clients", &x,
	    "554 5.7.1 <unknown[192.0.2.77]>: Client host rejected: bad net");
	x.client_addr = "192.0.2.200";
	EXPECT(cfg, "check_client_access cidr:clients", &x, "DUNNO");
	put_file("rcpts", "/^(.*)@example\\.com$/ REJECT no $1 here\n");
	EXPECT(cfg, "check_recipient_access regexp:rcpts", &x,
	    "554 5.7.1 <Bob@Example.COM>: Recipient address rejected: no Bob here");
#ifdef HAVE_PCRE2
	EXPECT(cfg, "check_recipient_access pcre:rcpts", &x,
	    "554 5.7.1 <Bob@Example.COM>: Recipient address rejected: no Bob here");
#endif
	put_file("broken", "/ok/ OK\n/(broken/ REJECT\n");
	EXPECT(cfg, "check_recipient_access regexp:broken", &x,
	    "451 4.3.0 <Bob@Example.COM>: Temporary lookup failure");
	smtpd_cfg_free(cfg);

	smtpd_netlist_t *l = smtpd_netlist_new("mynetworks", "cidr:clients", &err);
	ATF_REQUIRE_MSG(l != NULL, "%s", str_cstr(&err));
	ATF_CHECK_EQ(smtpd_netlist_match(l, "192.0.2.1", &err), 1);
	/* DUNNO is a value too: found means listed */
	ATF_CHECK_EQ(smtpd_netlist_match(l, "10.0.0.1", &err), 1);
	ATF_CHECK_EQ(smtpd_netlist_match(l, "2001:db8::1", &err), 0);
	smtpd_netlist_free(l);
	str_reset(&err);
	put_file("badnet", "10.0.0.1/8 x\n");
	l = smtpd_netlist_new("mynetworks", "cidr:badnet", &err);
	ATF_CHECK(l == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "badnet:1: non-zero host bits") != NULL,
	    "%s", str_cstr(&err));
	smtpd_netlist_free(l);
	str_release(&err);
}

/* Which keys each check looks up, in which order (first found wins). */
ATF_TC_WITHOUT_HEAD(lookup_keys);
ATF_TC_BODY(lookup_keys, tc)
{
	smtpd_cfg_t *cfg = cfg_with("recipient_delimiter = +\n");
	smtpd_check_ctx_t x = { .client_name = "host.sub.example.net",
		.client_addr = "192.0.2.77", .helo = "helo.example.org",
		.sender = "", .rcpt = "user+ext@a.b.example.com" };

	/* Client: name, parents (".parent", then "parent"), address, prefixes. */
	EXPECT(cfg, "check_client_access inline:{ 192.0.2.77=REJECT, host.sub.example.net=OK }", &x, "OK");
	EXPECT(cfg, "check_client_access inline:{ 192.0.2.77=OK, .example.net=REJECT }", &x,
	    "554 5.7.1 <host.sub.example.net[192.0.2.77]>: Client host rejected: Access denied");
	EXPECT(cfg, "check_client_access inline:{ 192.0.2=OK, example.net=DEFER }", &x,
	    "450 4.7.1 <host.sub.example.net[192.0.2.77]>: Client host rejected: Access denied");
	EXPECT(cfg, "check_client_access inline:{ 192.0.2=OK, 192.0.2.77=REJECT }", &x,
	    "554 5.7.1 <host.sub.example.net[192.0.2.77]>: Client host rejected: Access denied");
	EXPECT(cfg, "check_client_access inline:{ 192=REJECT }", &x,
	    "554 5.7.1 <host.sub.example.net[192.0.2.77]>: Client host rejected: Access denied");
	EXPECT(cfg, "check_client_access inline:{ 192.0.2.7=REJECT, 19=REJECT }", &x, "DUNNO");
	x.client_addr = "2001:db8:1::7";
	x.client_name = "unknown";
	EXPECT(cfg, "check_client_access inline:{ 2001:db8=REJECT }", &x,
	    "554 5.7.1 <unknown[2001:db8:1::7]>: Client host rejected: Access denied");
	/* "unknown" is never looked up as a name. */
	EXPECT(cfg, "check_client_access inline:{ unknown=REJECT }", &x, "DUNNO");

	/* Null sender: "<>". */
	EXPECT(cfg, "check_sender_access inline:{ <>=REJECT }", &x,
	    "554 5.7.1 <>: Sender address rejected: Access denied");
	/* HELO name and parents. */
	EXPECT(cfg, "check_helo_access inline:{ example.org=REJECT }", &x,
	    "554 5.7.1 <helo.example.org>: Helo command rejected: Access denied");

	/* Recipient: full, without extension, domain, parents, user@,
	 * user@ without extension. */
	static const struct {
		const char *key;
	} keys[] = {
		{ "user+ext@a.b.example.com" }, { "user@a.b.example.com" },
		{ "a.b.example.com" }, { ".b.example.com" }, { "b.example.com" },
		{ ".example.com" }, { "example.com" }, { ".com" }, { "com" },
		{ "user+ext@" }, { "user@" },
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		str_t list = STR_INIT;
		/* The key under test says REJECT; every later key says OK. */
		str_setf(&list, "check_recipient_access inline:{ %s=REJECT", keys[i].key);
		for (size_t k = i + 1; k < sizeof(keys) / sizeof(keys[0]); k++)
			str_catf(&list, ", %s=OK", keys[k].key);
		str_cat(&list, " }");
		EXPECT(cfg, str_cstr(&list), &x,
		    "554 5.7.1 <user+ext@a.b.example.com>: Recipient address rejected: Access denied");
		str_release(&list);
	}
	EXPECT(cfg, "check_recipient_access inline:{ ser@=REJECT, xample.com=REJECT }", &x, "DUNNO");
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(destination);
ATF_TC_BODY(destination, tc)
{
	smtpd_cfg_t *cfg = cfg_with("relay_domains = relay.example, .sub.relay.example\n"
	    "myorigin = elsewhere.example\n");
	smtpd_check_ctx_t x = { .client_name = "unknown", .client_addr = "192.0.2.1",
		.local_addr = "192.0.2.25" };
	static const struct {
		const char *rcpt, *want;
	} cases[] = {
		{ "a@mx.example.test", "DUNNO" },
		{ "a@LOCALHOST", "DUNNO" },
		{ "a@relay.example", "DUNNO" },
		{ "a@x.sub.relay.example", "DUNNO" },
		{ "a@sub.relay.example", "554 5.7.1 <a@sub.relay.example>: Relay access denied" },
		{ "a@[192.0.2.25]", "DUNNO" },
		{ "a@[IPv6:2001:db8::25]", "554 5.7.1 <a@[IPv6:2001:db8::25]>: Relay access denied" },
		{ "postmaster", "DUNNO" },
		/* A bare user belongs to $myorigin, which is not ours here. */
		{ "a", "554 5.7.1 <a>: Relay access denied" },
		{ "a%b@mx.example.test", "554 5.7.1 <a%b@mx.example.test>: Relay access denied" },
		{ "a@b@mx.example.test", "554 5.7.1 <\"a@b\"@mx.example.test>: Relay access denied" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		x.rcpt = cases[i].rcpt;
		EXPECT(cfg, "reject_unauth_destination", &x, cases[i].want);
	}
	x.rcpt = "a@elsewhere.example";
	EXPECT(cfg, "defer_unauth_destination", &x,
	    "450 4.7.1 <a@elsewhere.example>: Relay access denied");
	EXPECT(cfg, "permit_auth_destination, reject", &x,
	    "554 5.7.1 <a@elsewhere.example>: Recipient address rejected: Access denied");
	x.rcpt = "a@relay.example";
	EXPECT(cfg, "permit_auth_destination, reject", &x, "OK");
	/* permit_mynetworks, permit_sasl_authenticated. */
	EXPECT(cfg, "permit_mynetworks", &x, "DUNNO");
	x.client_addr = "127.0.0.2";
	EXPECT(cfg, "permit_mynetworks", &x, "OK");
	EXPECT(cfg, "permit_sasl_authenticated", &x, "DUNNO");
	x.sasl_username = "alice";
	EXPECT(cfg, "permit_sasl_authenticated", &x, "OK");
	/* A stand-alone (local) client passes everything. */
	x.trusted = true;
	x.rcpt = "a@elsewhere.example";
	EXPECT(cfg, "reject", &x, "OK");
	smtpd_cfg_free(cfg);
}

/* reject_*sender_login_mismatch: Postfix's replies and which half of
 * the rule each variant applies. */
ATF_TC_WITHOUT_HEAD(login_mismatch);
ATF_TC_BODY(login_mismatch, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_sender_login_maps = inline:{ "
	    "alice@example.org=alice, {carol+x@example.org = carol}, "
	    "{@team.example = alice, bob} } inline:{ dave@example.org=dave }\n"
	    "recipient_delimiter = +\n");
	smtpd_check_ctx_t x = { .client_name = "unknown", .client_addr = "192.0.2.1" };
	static const char *const all = "reject_sender_login_mismatch";
	static const char *const auth = "reject_authenticated_sender_login_mismatch";
	static const char *const unauth = "reject_unauthenticated_sender_login_mismatch";

	/* Not logged in. */
	x.sender = "alice@example.org";
	EXPECT(cfg, all, &x, "553 5.7.1 <alice@example.org>: Sender address rejected: not logged in");
	EXPECT(cfg, unauth, &x, "553 5.7.1 <alice@example.org>: Sender address rejected: not logged in");
	EXPECT(cfg, auth, &x, "DUNNO");
	x.sender = "anyone@team.example";	/* @domain key */
	EXPECT(cfg, all, &x, "553 5.7.1 <anyone@team.example>: Sender address rejected: not logged in");
	x.sender = "dave@example.org";		/* second table */
	EXPECT(cfg, all, &x, "553 5.7.1 <dave@example.org>: Sender address rejected: not logged in");
	x.sender = "nobody@example.net";	/* no owner */
	EXPECT(cfg, all, &x, "DUNNO");
	x.sender = "";				/* null sender: never */
	EXPECT(cfg, all, &x, "DUNNO");

	/* Logged in. */
	x.sasl_username = "bob";
	x.sender = "alice@example.org";
	EXPECT(cfg, all, &x, "553 5.7.1 <alice@example.org>: Sender address rejected: not owned by user bob");
	EXPECT(cfg, auth, &x, "553 5.7.1 <alice@example.org>: Sender address rejected: not owned by user bob");
	EXPECT(cfg, unauth, &x, "DUNNO");
	x.sender = "bob@team.example";
	EXPECT(cfg, all, &x, "DUNNO");
	x.sasl_username = "BOB";		/* login names fold case */
	EXPECT(cfg, all, &x, "DUNNO");
	x.sasl_username = "bob";
	/* An address without an owner is not bob's either. */
	x.sender = "nobody@example.net";
	EXPECT(cfg, all, &x, "553 5.7.1 <nobody@example.net>: Sender address rejected: not owned by user bob");
	/* Extensions: the full address first, then without it. */
	x.sasl_username = "carol";
	x.sender = "carol+x@example.org";
	EXPECT(cfg, all, &x, "DUNNO");
	x.sender = "carol+y@example.org";
	EXPECT(cfg, all, &x, "553 5.7.1 <carol+y@example.org>: Sender address rejected: not owned by user carol");
	x.sasl_username = "alice";
	x.sender = "alice+lists@example.org";
	EXPECT(cfg, all, &x, "DUNNO");
	smtpd_cfg_free(cfg);

	/* A table that cannot be read: 451, never a 5xx. */
	cfg = cfg_with("smtpd_sender_login_maps = hash:/nonexistent/table\n");
	x.sender = "alice@example.org";
	EXPECT(cfg, all, &x, "451 4.3.0 <alice@example.org>: Temporary lookup failure");
	smtpd_cfg_free(cfg);
	/* Without smtpd_sender_login_maps the checks do nothing. */
	cfg = cfg_with(NULL);
	EXPECT(cfg, all, &x, "DUNNO");
	smtpd_cfg_free(cfg);
}

/* Mechanism names and the security options' filter (the base64 check
 * for client responses is libutil's: t_base64). */
ATF_TC_WITHOUT_HEAD(sasl_helpers);
ATF_TC_BODY(sasl_helpers, tc)
{
	ATF_CHECK(smtpd_sasl_mech_name_ok("PLAIN", 5));
	ATF_CHECK(smtpd_sasl_mech_name_ok("digest-md5", 10));
	ATF_CHECK(smtpd_sasl_mech_name_ok("SCRAM-SHA-256-PLUS", 18));
	ATF_CHECK(!smtpd_sasl_mech_name_ok("", 0));
	ATF_CHECK(!smtpd_sasl_mech_name_ok("ABCDEFGHIJKLMNOPQRSTU", 21));
	ATF_CHECK(!smtpd_sasl_mech_name_ok("PL\tAIN", 6));
	ATF_CHECK(!smtpd_sasl_mech_name_ok("PLAIN=", 6));

	unsigned o;
	str_t err = STR_INIT;
	ATF_REQUIRE(sasl_opts_parse("noanonymous", &o, &err) == 0);
	ATF_CHECK(smtpd_sasl_mech_allowed(SMTPD_SASL_P_PLAINTEXT, o));
	ATF_CHECK(!smtpd_sasl_mech_allowed(SMTPD_SASL_P_ANONYMOUS, o));
	ATF_REQUIRE(sasl_opts_parse("noanonymous, noplaintext", &o, &err) == 0);
	ATF_CHECK(!smtpd_sasl_mech_allowed(SMTPD_SASL_P_PLAINTEXT, o));
	ATF_CHECK(smtpd_sasl_mech_allowed(SMTPD_SASL_P_DICTIONARY |
	    SMTPD_SASL_P_ACTIVE, o));
	ATF_REQUIRE(sasl_opts_parse("nodictionary noactive", &o, &err) == 0);
	ATF_CHECK(!smtpd_sasl_mech_allowed(SMTPD_SASL_P_DICTIONARY, o));
	ATF_CHECK(!smtpd_sasl_mech_allowed(SMTPD_SASL_P_ACTIVE, o));
	ATF_CHECK(smtpd_sasl_mech_allowed(SMTPD_SASL_P_ANONYMOUS, o));
	ATF_REQUIRE(sasl_opts_parse("forward_secrecy,mutual_auth", &o, &err) == 0);
	ATF_CHECK(!smtpd_sasl_mech_allowed(SMTPD_SASL_P_FORWARD_SECRECY, o));
	ATF_CHECK(smtpd_sasl_mech_allowed(SMTPD_SASL_P_FORWARD_SECRECY |
	    SMTPD_SASL_P_MUTUAL_AUTH, o));
	ATF_REQUIRE(sasl_opts_parse("", &o, &err) == 0);
	ATF_CHECK_EQ(o, 0);
	ATF_CHECK(sasl_opts_parse("noanonymous nosuch", &o, &err) < 0);
	ATF_CHECK_MATCH("unknown SASL security option \"nosuch\"", str_cstr(&err));
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(non_fqdn);
ATF_TC_BODY(non_fqdn, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	smtpd_check_ctx_t x = { .client_name = "unknown", .client_addr = "192.0.2.1" };

	x.rcpt = "a@b.example";
	EXPECT(cfg, "reject_non_fqdn_recipient", &x, "DUNNO");
	x.rcpt = "a@[192.0.2.1]";
	EXPECT(cfg, "reject_non_fqdn_recipient", &x, "DUNNO");
	x.rcpt = "a@localhost";
	EXPECT(cfg, "reject_non_fqdn_recipient", &x,
	    "504 5.5.2 <a@localhost>: Recipient address rejected: need fully-qualified address");
	x.rcpt = "a";
	EXPECT(cfg, "reject_non_fqdn_recipient", &x,
	    "504 5.5.2 <a>: Recipient address rejected: need fully-qualified address");
	x.sender = "";
	EXPECT(cfg, "reject_non_fqdn_sender", &x, "DUNNO");
	smtpd_cfg_free(cfg);
	cfg = cfg_with("non_fqdn_reject_code = 550\n");
	x.sender = "s@host";
	EXPECT(cfg, "reject_non_fqdn_sender", &x,
	    "550 5.5.2 <s@host>: Sender address rejected: need fully-qualified address");
	smtpd_cfg_free(cfg);
}

/* ---- reject_unknown_recipient_domain against a fake DNS ---- */

static str_t queries = STR_INIT;

static ssize_t fake_dns(void *ctx, const char *name, uint16_t type,
    unsigned char *buf, size_t size)
{
	pkt_t p = { .n = 0 };
	char tb[16];

	(void)ctx;
	str_catf(&queries, "%s/%s ", name, dns_type_str(type, tb, sizeof(tb)));
	if (strcmp(name, "fail.example") == 0) {
		p_reply(&p, name, type, 2);		/* SERVFAIL */
	} else if (strcmp(name, "mx.example") == 0 && type == DNS_T_MX) {
		p_reply(&p, name, type, 0);
		p_mx(&p, SEC_AN, name, 10, "mail.mx.example");
	} else if (strcmp(name, "a-only.example") == 0) {
		p_reply(&p, name, type, 0);
		if (type == DNS_T_A)
			p_a(&p, SEC_AN, name, "192.0.2.9");
	} else if (strcmp(name, "empty.example") == 0) {
		p_reply(&p, name, type, 0);		/* exists, no data */
	} else {
		p_reply(&p, name, type, 3);		/* NXDOMAIN */
	}
	ATF_REQUIRE(p.n <= size);
	memcpy(buf, p.b, p.n);
	return (ssize_t)p.n;
}

ATF_TC_WITHOUT_HEAD(unknown_domain);
ATF_TC_BODY(unknown_domain, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	smtpd_check_ctx_t x = { .client_name = "unknown", .client_addr = "192.0.2.1" };
	static const struct {
		const char *rcpt, *want, *queries;
	} cases[] = {
		{ "a@mx.example", "DUNNO", "mx.example/MX " },
		{ "a@a-only.example", "DUNNO", "a-only.example/MX a-only.example/A " },
		{ "a@empty.example", "450 4.1.2 <a@empty.example>: Recipient address rejected: Domain not found",
		  "empty.example/MX empty.example/A empty.example/AAAA " },
		{ "a@nowhere.example", "450 4.1.2 <a@nowhere.example>: Recipient address rejected: Domain not found",
		  "nowhere.example/MX " },
		{ "a@fail.example", NULL,
		  "fail.example/MX fail.example/A fail.example/AAAA " },
		/* Ours, literals, bare users and non-ASCII names: no query. */
		{ "a@mx.example.test", "DUNNO", "" },
		{ "a@[192.0.2.1]", "DUNNO", "" },
		{ "a", "DUNNO", "" },
		{ "a@b\xc3\xa4r.example", "DUNNO", "" },
	};

	cfg->dns = dns_resolver_new(NULL, NULL);
	ATF_REQUIRE(cfg->dns != NULL);
	dns_resolver_set_transport(cfg->dns, fake_dns, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		str_reset(&queries);
		x.rcpt = cases[i].rcpt;
		char *got = check_with(cfg, "reject_unknown_recipient_domain", &x);
		if (cases[i].want)
			ATF_CHECK_MSG(strcmp(got, cases[i].want) == 0, "%s: %s",
			    cases[i].rcpt, got);
		else
			ATF_CHECK_MATCH("^450 4.4.3 <a@fail.example>: Recipient address "
			    "rejected: Domain lookup failed", got);
		ATF_CHECK_MSG(strcmp(str_cstr(&queries), cases[i].queries) == 0,
		    "%s: queries %s", cases[i].rcpt, str_cstr(&queries));
		free(got);
	}
	/* The sender's domain likewise, and unknown_address_reject_code. */
	smtpd_cfg_free(cfg);
	cfg = cfg_with("unknown_address_reject_code = 550\n");
	cfg->dns = dns_resolver_new(NULL, NULL);
	dns_resolver_set_transport(cfg->dns, fake_dns, NULL);
	x.sender = "s@nowhere.example";
	EXPECT(cfg, "reject_unknown_sender_domain", &x,
	    "550 5.1.2 <s@nowhere.example>: Sender address rejected: Domain not found");
	x.sender = "";
	EXPECT(cfg, "reject_unknown_sender_domain", &x, "DUNNO");
	smtpd_cfg_free(cfg);
	str_release(&queries);
}

ATF_TC_WITHOUT_HEAD(restr_parse);
ATF_TC_BODY(restr_parse, tc)
{
	str_t err = STR_INIT, warn = STR_INIT;
	smtpd_restr_t *r;

	r = smtpd_restr_parse("p", "", &err, &warn);
	ATF_REQUIRE(r != NULL);
	ATF_CHECK(smtpd_restr_empty(r));
	ATF_CHECK(!smtpd_restr_stops_relay(r));
	smtpd_restr_free(r);
	r = smtpd_restr_parse("p", "permit_mynetworks reject_unauth_destination", &err, &warn);
	ATF_REQUIRE(r != NULL);
	ATF_CHECK(smtpd_restr_stops_relay(r));
	smtpd_restr_free(r);
	r = smtpd_restr_parse("p", "permit_mynetworks, permit", &err, &warn);
	ATF_CHECK(!smtpd_restr_stops_relay(r));
	smtpd_restr_free(r);
	r = smtpd_restr_parse("p", "check_client_access texthash:/nonexistent/t", &err, &warn);
	ATF_REQUIRE(r != NULL);
	ATF_CHECK_MATCH("^p: check_client_access texthash:/nonexistent/t: .*answer 451 4.3.0",
	    str_cstr(&warn));
	smtpd_restr_free(r);
	r = smtpd_restr_parse("p", "check_client_access permit", &err, &warn);
	ATF_CHECK(r == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "p: check_client_access needs a type:table argument");
	r = smtpd_restr_parse("p", "permit Permit", &err, &warn);
	ATF_CHECK(r == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "p: unknown restriction \"Permit\"");
	str_release(&err);
	str_release(&warn);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, netlist);
	ATF_TP_ADD_TC(tp, access_results);
	ATF_TP_ADD_TC(tp, access_filter);
	ATF_TP_ADD_TC(tp, lookup_keys);
	ATF_TP_ADD_TC(tp, pattern_tables);
	ATF_TP_ADD_TC(tp, destination);
	ATF_TP_ADD_TC(tp, login_mismatch);
	ATF_TP_ADD_TC(tp, sasl_helpers);
	ATF_TP_ADD_TC(tp, non_fqdn);
	ATF_TP_ADD_TC(tp, unknown_domain);
	ATF_TP_ADD_TC(tp, restr_parse);
	return atf_no_error();
}
