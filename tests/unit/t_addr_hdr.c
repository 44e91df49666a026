/* Unit tests for libglobal/addr_hdr: RFC 5322 address lists and the
 * header rewriter. */
#include <atf-c.h>
#include <stdio.h>
#include <string.h>
#include "addr.h"

/* One line per entry: "addr" [" dn=<display>"] [" g=<group>"]
 * [" nodom"] [" angle"], or "BAD(<reason>)"; entries joined by " | ". */
static void dump(const addr_hdr_list_t *l, str_t *out)
{
	for (size_t i = 0; i < l->n; i++) {
		const addr_hdr_entry_t *e = &l->v[i];

		if (i > 0)
			str_cat(out, " | ");
		if (e->flags & ADDR_H_BAD) {
			str_catf(out, "BAD(%s)", e->error);
			continue;
		}
		str_cat(out, e->addr);
		if (e->display != NULL)
			str_catf(out, " dn=%s", e->display);
		if (e->group != NULL)
			str_catf(out, " g=%s", e->group);
		if (!(e->flags & ADDR_H_DOMAIN))
			str_cat(out, " nodom");
		if (e->flags & ADDR_H_ANGLE)
			str_cat(out, " angle");
	}
}

struct hcase {
	int line;
	const char *in;
	size_t len;		/* 0: strlen */
	const char *want;	/* dump() of the result */
	size_t ngroups;
};

#define H(in, want)		{ __LINE__, in, 0, want, 0 }
#define HG(in, want, g)		{ __LINE__, in, 0, want, g }
#define HN(in, want)		{ __LINE__, in, sizeof(in) - 1, want, 0 }

static const struct hcase cases[] = {
	H("a@b.example", "a@b.example"),
	H("  a@b.example  ", "a@b.example"),
	H("", ""),
	H(" \r\n ", ""),
	H("John Doe <john@example.com>", "john@example.com dn=John Doe angle"),
	H("John Q. Public <jqp@example.com>",
	    "jqp@example.com dn=John Q. Public angle"),
	H("<john@example.com>", "john@example.com angle"),
	/* Commas inside quotes do not split. */
	H("\"Doe, John\" <j@x.example>, b@y.example",
	    "j@x.example dn=Doe, John angle | b@y.example"),
	H("\"Doe, John\" (x, y) <j@x.example>",
	    "j@x.example dn=Doe, John angle"),
	/* Without quotes they do: "Doe" is then a bare local part. */
	H("Doe, John <j@x.example>",
	    "Doe nodom | j@x.example dn=John angle"),
	/* Comments, nested, with escapes, anywhere. */
	H("a@b.example (Comment (nested (deep)) here), c@d.example",
	    "a@b.example | c@d.example"),
	H("(lead) a@b.example", "a@b.example"),
	H("a(x)@(y)b(z).example", "a@b.example"),
	H("a@b.example (with \\) paren, and comma)", "a@b.example"),
	H("Joe (the \"boss\") <j@x.example>", "j@x.example dn=Joe angle"),
	/* Groups. */
	HG("undisclosed-recipients:;", "", 1),
	HG("Undisclosed recipients: ;", "", 1),
	HG("team: a@x.example, b@y.example;, c@z.example",
	    "a@x.example g=team | b@y.example g=team | c@z.example", 1),
	HG("team: Al <a@x.example>, \"B, C\" <b@y.example>;",
	    "a@x.example dn=Al g=team angle | b@y.example dn=B, C g=team angle",
	    1),
	HG("a: ;, b: x@y.example;", "x@y.example g=b", 2),
	HG("Open group: a@x.example", "a@x.example g=Open group", 1),
	HG("Empty:", "", 1),
	HG("x: y: a@b.example;;",
	    "BAD(unexpected character in address)", 1),
	/* Folding: CRLF or LF followed by white space. */
	H("Folded\r\n Name <a@b.example>,\r\n\tc@d.example",
	    "a@b.example dn=Folded Name angle | c@d.example"),
	H("a@b.example,\n c@d.example", "a@b.example | c@d.example"),
	H("\"Quoted\r\n Fold\" <a@b.example>",
	    "a@b.example dn=Quoted Fold angle"),
	/* Obsolete and lenient forms. */
	H("user", "user nodom"),
	HG("To:\"\"", "BAD(empty local part without a domain)", 1),
	H("\"a@b\", Joe <\"c@d\">",
	    "BAD(quoted '@' in an address without a domain) | "
	    "BAD(quoted '@' in an address without a domain)"),
	H("user, other@x.example", "user nodom | other@x.example"),
	H("Joe <user>", "user dn=Joe nodom angle"),
	H("\"john doe\"@example.com", "john doe@example.com"),
	H("\"a\\\"q\"@b.example", "a\"q@b.example"),
	H("john . doe @ example . com", "john.doe@example.com"),
	H("a.@b.example", "a.@b.example"),
	H("a..b@b.example", "a..b@b.example"),
	H("<@route.example,@r2.example:u@x.example>", "u@x.example angle"),
	H("a@b.example; c@d.example", "a@b.example | c@d.example"),
	H("a@b.example, , ,c@d.example,", "a@b.example | c@d.example"),
	H("a@b.example <c@d.example>", "c@d.example dn=a@b.example angle"),
	H("=?utf-8?q?J=C3=B6rg?= <j@example.com>",
	    "j@example.com dn==?utf-8?q?J=C3=B6rg?= angle"),
	H("J\xc3\xb6rg <j\xc3\xb6rg@ex\xc3\xa4mple.de>",
	    "j\xc3\xb6rg@ex\xc3\xa4mple.de dn=J\xc3\xb6rg angle"),
	H("a@[192.0.2.1]", "a@[192.0.2.1]"),
	H("a@[IPv6:2001:db8::1]", "a@[IPv6:2001:db8::1]"),
	H("a@[ipv6:2001:db8::1]", "a@[IPv6:2001:db8::1]"),
	/* Errors: one bad entry does not spoil the others. */
	H("Joe <a@b.example", "BAD(missing '>')"),
	H("John Smith, c@d.example",
	    "BAD(words without '@' or <address>) | c@d.example"),
	H("<a@b.example> trailing, c@d.example",
	    "BAD(unexpected text after '>') | c@d.example"),
	H("<a <b@c.example>>", "BAD('<' inside <>)"),
	H("<>", "BAD(empty address <>)"),
	H("Name <>, c@d.example", "BAD(empty address <>) | c@d.example"),
	H("(unterminated comment a@b.example", "BAD(unterminated comment)"),
	H("\"unterminated a@b.example", "BAD(unterminated quoted string)"),
	H("a@[192.0.2.1", "BAD(unterminated domain literal)"),
	H("a@b.example), c@d.example", "BAD(unbalanced ')') | c@d.example"),
	H("a\\b@c.example", "BAD(stray backslash)"),
	H("a@[bogus]", "BAD(invalid IPv4 address literal)"),
	H("a@[999.1.1.1], c@d.example",
	    "BAD(invalid IPv4 address literal) | c@d.example"),
	H("a@-x.example", "BAD(domain label starts or ends with a hyphen)"),
	H("a@x_y.example",
	    "BAD(invalid character in domain name (letters, digits, '-' and "
	    "'.' only))"),
	H("a@", "BAD(empty domain name)"),
	H("@b.example", "BAD(empty local part)"),
	H("a@b.example x", "BAD(unexpected text after the domain)"),
	H("a@b@c.example", "BAD(unexpected text after the domain)"),
	H("<@route.example u@x.example>", "BAD(source route without ':')"),
	H("Na[me] <a@b.example>", "BAD(invalid display name)"),
	H("\"a\tb\"@c.example", "BAD(control character in local part)"),
	HN("a\0b@c.example, d@e.example",
	    "BAD(NUL byte in local part) | d@e.example"),
	H("\xff@c.example", "BAD(invalid UTF-8 in local part)"),
	HG("ba)d: a@b.example;",
	    "BAD(unbalanced ')') | a@b.example g=bad", 1),
};

ATF_TC_WITHOUT_HEAD(table);
ATF_TC_BODY(table, tc)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hcase *c = &cases[i];
		addr_hdr_list_t l = ADDR_HDR_LIST_INIT;
		str_t got = STR_INIT;
		size_t len = c->len ? c->len : strlen(c->in);
		size_t good = addr_hdr_parse(c->in, len, &l), nbad = 0;

		dump(&l, &got);
		ATF_CHECK_MSG(strcmp(str_cstr(&got), c->want) == 0,
		    "line %d:\n got  %s\n want %s", c->line, str_cstr(&got),
		    c->want);
		ATF_CHECK_EQ_MSG(l.ngroups, c->ngroups, "line %d", c->line);
		for (size_t j = 0; j < l.n; j++)
			nbad += (l.v[j].flags & ADDR_H_BAD) != 0;
		ATF_CHECK_EQ_MSG(l.nbad, nbad, "line %d", c->line);
		ATF_CHECK_EQ_MSG(good, l.n - nbad, "line %d", c->line);
		str_release(&got);
		addr_hdr_list_free(&l);
	}
}

ATF_TC_WITHOUT_HEAD(fields_and_append);
ATF_TC_BODY(fields_and_append, tc)
{
	addr_hdr_list_t l = ADDR_HDR_LIST_INIT;
	const char *to = "Joe <j@x.example>, user";
	const char *cc = "team: \"a b\"@y.example;";

	ATF_CHECK_EQ(addr_hdr_parse(to, strlen(to), &l), 2);
	ATF_CHECK_EQ(addr_hdr_parse(cc, strlen(cc), &l), 1);
	ATF_REQUIRE_EQ(l.n, 3);
	ATF_CHECK_STREQ(l.v[0].local, "j");
	ATF_CHECK_STREQ(l.v[0].domain, "x.example");
	ATF_CHECK_EQ(l.v[0].flags, ADDR_H_DOMAIN | ADDR_H_ANGLE);
	/* The span of a <> address is between the brackets. */
	ATF_CHECK_EQ(l.v[0].start, 5);
	ATF_CHECK_EQ(l.v[0].end, 16);
	ATF_CHECK_STREQ(l.v[1].local, "user");
	ATF_CHECK(l.v[1].domain == NULL);
	ATF_CHECK_EQ(l.v[1].flags, 0);
	ATF_CHECK_EQ(l.v[1].start, 19);
	ATF_CHECK_EQ(l.v[1].end, 23);
	ATF_CHECK_STREQ(l.v[2].addr, "a b@y.example");
	ATF_CHECK_STREQ(l.v[2].local, "a b");
	ATF_CHECK_STREQ(l.v[2].group, "team");
	ATF_CHECK_EQ(l.v[2].flags, ADDR_H_DOMAIN | ADDR_H_GROUP);
	ATF_CHECK_EQ(l.ngroups, 1);
	addr_hdr_list_free(&l);
	ATF_CHECK(l.v == NULL && l.n == 0);
}

ATF_TC_WITHOUT_HEAD(bounded);
ATF_TC_BODY(bounded, tc)
{
	/* More addresses than kept: counted, not stored. */
	size_t n = ADDR_HDR_ADDRS_MAX + 10;
	str_t v = STR_INIT;
	addr_hdr_list_t l = ADDR_HDR_LIST_INIT;

	for (size_t i = 0; i < n; i++)
		str_cat(&v, "a@b.example,");
	ATF_CHECK_EQ(addr_hdr_parse(str_cstr(&v), str_len(&v), &l),
	    ADDR_HDR_ADDRS_MAX);
	ATF_CHECK_EQ(l.n, ADDR_HDR_ADDRS_MAX);
	ATF_CHECK_EQ(l.dropped, 10);
	addr_hdr_list_free(&l);

	/* An address over 998 octets. */
	str_reset(&v);
	str_putc(&v, '"');
	for (int i = 0; i < 1000; i++)
		str_putc(&v, 'x');
	str_cat(&v, "\"@b.example");
	addr_hdr_parse(str_cstr(&v), str_len(&v), &l);
	ATF_REQUIRE_EQ(l.n, 1);
	ATF_CHECK_STREQ(l.v[0].error, "address longer than 998 octets");
	addr_hdr_list_free(&l);

	/* Deeply nested comments cost no stack. */
	str_reset(&v);
	for (int i = 0; i < 100000; i++)
		str_putc(&v, '(');
	for (int i = 0; i < 100000; i++)
		str_putc(&v, ')');
	str_cat(&v, " a@b.example");
	ATF_CHECK_EQ(addr_hdr_parse(str_cstr(&v), str_len(&v), &l), 1);
	addr_hdr_list_free(&l);
	str_release(&v);
}

/* Rewrite callback for the tests: a small canonical map. */
static bool mapper(const addr_hdr_entry_t *e, str_t *out, void *ctx)
{
	int *calls = ctx;

	(*calls)++;
	if (!(e->flags & ADDR_H_DOMAIN)) {
		str_cat(out, e->local);
		str_cat(out, "@origin.example");
		return true;
	}
	if (strcmp(e->addr, "old@x.example") == 0) {
		str_cat(out, "new@y.example");
		return true;
	}
	if (strcmp(e->addr, "quote@x.example") == 0) {
		str_cat(out, "john doe@x.example");
		return true;
	}
	if (strcmp(e->addr, "null@x.example") == 0)
		return true;	/* empty: the null address */
	return false;
}

static bool keep_all(const addr_hdr_entry_t *e, str_t *out, void *ctx)
{
	(void)e;
	(void)out;
	(void)ctx;
	return false;
}

/* Writes back the same address: must parse to the same list. */
static bool identity(const addr_hdr_entry_t *e, str_t *out, void *ctx)
{
	(void)ctx;
	str_cat(out, e->addr);
	return true;
}

ATF_TC_WITHOUT_HEAD(rewrite);
ATF_TC_BODY(rewrite, tc)
{
	static const struct {
		const char *in, *out;
		size_t changed;
	} t[] = {
		{ "Joe (the boss) <old@x.example>, user, \"Doe, J\" "
		  "<keep@x.example>,\r\n\tteam: quote@x.example;",
		  "Joe (the boss) <new@y.example>, user@origin.example, "
		  "\"Doe, J\" <keep@x.example>,\r\n\tteam: "
		  "\"john doe\"@x.example;", 3 },
		{ "old@x.example (Old Name)", "new@y.example (Old Name)", 1 },
		{ "John Smith, old@x.example", "John Smith, new@y.example", 1 },
		{ "<@r.example:old@x.example>", "<new@y.example>", 1 },
		{ "< old@x.example >", "<new@y.example>", 1 },
		{ "null@x.example, N <null@x.example>", "<>, N <>", 2 },
		{ "undisclosed-recipients:;", "undisclosed-recipients:;", 0 },
		{ "Broken <old@x.example", "Broken <old@x.example", 0 },
		{ "", "", 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		str_t out = STR_INIT;
		int calls = 0;
		size_t n = addr_hdr_rewrite(t[i].in, strlen(t[i].in), mapper,
		    &calls, &out);

		ATF_CHECK_MSG(strcmp(str_cstr(&out), t[i].out) == 0,
		    "case %zu:\n got  %s\n want %s", i, str_cstr(&out),
		    t[i].out);
		ATF_CHECK_EQ_MSG(n, t[i].changed, "case %zu", i);
		str_release(&out);
	}

	/* Nothing changed: byte for byte the same, comments and all. */
	const char *v = "A (x) <a@b.example>,\r\n (c) \"q\\\"\"@c.example, grp:;";
	str_t out = STR_INIT;
	ATF_CHECK_EQ(addr_hdr_rewrite(v, strlen(v), keep_all, NULL, &out), 0);
	ATF_CHECK_STREQ(str_cstr(&out), v);

	/* Identity through the external form: same addresses back. */
	str_reset(&out);
	v = "\"a b\" <\"x y\"@b.example>, \"q\\\"\"@c.example, a..b@c.example,"
	    " g: .lead@x.example, \"\"@e.example;";
	ATF_CHECK_EQ(addr_hdr_rewrite(v, strlen(v), identity, NULL, &out), 5);
	ATF_CHECK_STREQ(str_cstr(&out),
	    "\"a b\" <\"x y\"@b.example>, \"q\\\"\"@c.example, "
	    "\"a..b\"@c.example, g: \".lead\"@x.example, \"\"@e.example;");
	addr_hdr_list_t a = ADDR_HDR_LIST_INIT, b = ADDR_HDR_LIST_INIT;
	addr_hdr_parse(v, strlen(v), &a);
	addr_hdr_parse(str_cstr(&out), str_len(&out), &b);
	ATF_REQUIRE_EQ(a.n, b.n);
	for (size_t i = 0; i < a.n; i++)
		ATF_CHECK_STREQ(a.v[i].addr, b.v[i].addr);
	addr_hdr_list_free(&a);
	addr_hdr_list_free(&b);
	str_release(&out);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, table);
	ATF_TP_ADD_TC(tp, fields_and_append);
	ATF_TP_ADD_TC(tp, bounded);
	ATF_TP_ADD_TC(tp, rewrite);
	return atf_no_error();
}
