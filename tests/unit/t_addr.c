/* Unit tests for libglobal/addr: internal and external forms, the
 * helpers (split, lower-case, domain and literal checks) and domain
 * lists. */
#include <atf-c.h>
#include <arpa/inet.h>
#include <db.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "addr.h"
#include "dict.h"

ATF_TC_WITHOUT_HEAD(external_form);
ATF_TC_BODY(external_form, tc)
{
	static const struct {
		const char *internal, *external;
	} t[] = {
		{ "", "" },
		{ "a@b.example", "a@b.example" },
		{ "A.B+c@B.Example", "A.B+c@B.Example" },
		{ "postmaster", "postmaster" },
		{ "john doe@x.example", "\"john doe\"@x.example" },
		{ "john doe", "\"john doe\"" },
		{ "a..b@x.example", "\"a..b\"@x.example" },
		{ ".a@x.example", "\".a\"@x.example" },
		{ "a.@x.example", "\"a.\"@x.example" },
		{ ".@x.example", "\".\"@x.example" },
		{ "@x.example", "\"\"@x.example" },
		{ "a\"b@x.example", "\"a\\\"b\"@x.example" },
		{ "a\\b@x.example", "\"a\\\\b\"@x.example" },
		{ "a@b@x.example", "\"a@b\"@x.example" },
		{ "a,b@x.example", "\"a,b\"@x.example" },
		{ "<a>@x.example", "\"<a>\"@x.example" },
		{ "a:b;c@x.example", "\"a:b;c\"@x.example" },
		{ "a(b)@x.example", "\"a(b)\"@x.example" },
		{ "a[b]@x.example", "\"a[b]\"@x.example" },
		{ "!#$%&'*+-/=?^_`{|}~@x.example",
		  "!#$%&'*+-/=?^_`{|}~@x.example" },
		{ "j\xc3\xb6rg@ex\xc3\xa4mple.de", "j\xc3\xb6rg@ex\xc3\xa4mple.de" },
		{ "a@[IPv6:::1]", "a@[IPv6:::1]" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		str_t ext = STR_INIT, back = STR_INIT;
		addr_err_t err;

		addr_externalize(t[i].internal, &ext);
		ATF_CHECK_MSG(strcmp(str_cstr(&ext), t[i].external) == 0,
		    "%s: got %s want %s", t[i].internal, str_cstr(&ext),
		    t[i].external);
		/* And back: the round trip is exact. */
		ATF_CHECK_EQ_MSG(addr_internalize(str_cstr(&ext), str_len(&ext),
		    ADDR_F_LENIENT | ADDR_F_SMTPUTF8, &back, &err), ADDR_OK,
		    "%s: %s", str_cstr(&ext), err.text);
		ATF_CHECK_MSG(strcmp(str_cstr(&back), t[i].internal) == 0,
		    "%s: back as %s", t[i].internal, str_cstr(&back));
		str_release(&ext);
		str_release(&back);
	}
	ATF_CHECK(!addr_local_needs_quote("a.b", 3));
	ATF_CHECK(addr_local_needs_quote("a.b", 0));
	ATF_CHECK(addr_local_needs_quote("a b", 3));
	ATF_CHECK(!addr_local_needs_quote("a b", 1));
}

ATF_TC_WITHOUT_HEAD(internalize_errors);
ATF_TC_BODY(internalize_errors, tc)
{
	static const struct {
		const char *ext;
		int flags;
		addr_status_t st;
		const char *why;
	} t[] = {
		{ "a b@x.example", ADDR_F_LENIENT, ADDR_ERR_SYNTAX,
		  "invalid character space" },
		{ "user", 0, ADDR_ERR_SYNTAX, "has no domain" },
		{ "a..b@x.example", 0, ADDR_ERR_SYNTAX, "two dots" },
		{ "j\xc3\xb6rg@x.example", 0, ADDR_ERR_8BIT, "SMTPUTF8" },
		{ "\"a\"b@x.example", ADDR_F_LENIENT, ADDR_ERR_SYNTAX,
		  "after the local part" },
		{ "<a@x.example>", ADDR_F_LENIENT, ADDR_ERR_SYNTAX,
		  "invalid character '<'" },
		{ "a@x.example>", ADDR_F_LENIENT, ADDR_ERR_SYNTAX,
		  "invalid character in domain" },
		{ "a@", 0, ADDR_ERR_SYNTAX, "empty domain" },
		{ "\"a@b\"", ADDR_F_LENIENT, ADDR_ERR_SYNTAX, "quoted '@'" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		str_t out = STR_INIT;
		addr_err_t err;
		addr_status_t st = addr_internalize(t[i].ext, strlen(t[i].ext),
		    t[i].flags, &out, &err);

		ATF_CHECK_EQ_MSG(st, t[i].st, "%s: %s", t[i].ext, err.text);
		if (st != ADDR_OK)
			ATF_CHECK_MSG(strstr(err.text, t[i].why) != NULL,
			    "%s: %s", t[i].ext, err.text);
		ATF_CHECK_EQ(str_len(&out), 0);
		str_release(&out);
	}
	str_t out = STR_INIT;
	ATF_CHECK_EQ(addr_internalize("a b", 3, 0, &out, NULL),
	    ADDR_ERR_SYNTAX);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(split);
ATF_TC_BODY(split, tc)
{
	static const struct {
		const char *in, *delims;
		const char *user, *ext, *domain;
		char delim;
	} t[] = {
		{ "user+ext@Example.com", "+", "user", "ext", "Example.com", '+' },
		{ "user-ext@x", "+-", "user", "ext", "x", '-' },
		{ "a+b-c@x", "-+", "a", "b-c", "x", '+' },
		{ "a-b+c@x", "-+", "a", "b+c", "x", '-' },
		{ "user@x", "+", "user", NULL, "x", 0 },
		{ "user", "+", "user", NULL, NULL, 0 },
		{ "u+e", "+", "u", "e", NULL, '+' },
		{ "user+@x", "+", "user", "", "x", '+' },
		{ "+foo@x", "+", "+foo", NULL, "x", 0 },
		{ "u+e@x", "", "u+e", NULL, "x", 0 },
		{ "u+e@x", NULL, "u+e", NULL, "x", 0 },
		{ "a+b+c@x", "+", "a", "b+c", "x", '+' },
		/* '@' inside the local part: the domain is after the last. */
		{ "a+b@c@x", "+", "a", "b@c", "x", '+' },
		/* Mailing list names keep their '-'. */
		{ "owner-list@x", "-", "owner-list", NULL, "x", 0 },
		{ "list-request@x", "-", "list-request", NULL, "x", 0 },
		{ "Owner-List@x", "-", "Owner-List", NULL, "x", 0 },
		{ "owner-list+ext@x", "+-", "owner-list", "ext", "x", '+' },
		{ "owner-list+ext@x", "+", "owner-list", "ext", "x", '+' },
		{ "list-request@x", "+", "list-request", NULL, "x", 0 },
		{ "my-list-request@x", "-", "my-list-request", NULL, "x", 0 },
		{ "my-list@x", "-", "my", "list", "x", '-' },
		{ "", "+", "", NULL, NULL, 0 },
		{ "@x", "+", "", NULL, "x", 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		addr_split_t s;

		addr_split(t[i].in, t[i].delims, &s);
		ATF_CHECK_STREQ_MSG(s.user, t[i].user, "case %zu", i);
		if (t[i].ext == NULL)
			ATF_CHECK_MSG(s.ext == NULL, "case %zu: ext %s", i,
			    s.ext);
		else
			ATF_CHECK_MSG(s.ext != NULL &&
			    strcmp(s.ext, t[i].ext) == 0, "case %zu", i);
		if (t[i].domain == NULL)
			ATF_CHECK_MSG(s.domain == NULL, "case %zu", i);
		else
			ATF_CHECK_MSG(s.domain != NULL &&
			    strcmp(s.domain, t[i].domain) == 0, "case %zu", i);
		ATF_CHECK_EQ_MSG(s.delim, t[i].delim, "case %zu", i);
		addr_split_free(&s);
	}
}

ATF_TC_WITHOUT_HEAD(lower);
ATF_TC_BODY(lower, tc)
{
	char a[] = "User.Name@EXAMPLE.Com";
	char b[] = "User.Name@EXAMPLE.Com";
	char c[] = "USER";
	char d[] = "USER";
	char e[] = "A@B@EX.COM";
	char f[] = "J\xc3\x96RG@EX\xc3\x84MPLE.DE";

	ATF_CHECK_STREQ(addr_lower(a, 0), "User.Name@example.com");
	ATF_CHECK_STREQ(addr_lower(b, ADDR_LOWER_LOCAL), "user.name@example.com");
	ATF_CHECK_STREQ(addr_lower(c, 0), "USER");
	ATF_CHECK_STREQ(addr_lower(d, ADDR_LOWER_LOCAL), "user");
	ATF_CHECK_STREQ(addr_lower(e, 0), "A@B@ex.com");
	/* ASCII only: UTF-8 bytes are left alone. */
	ATF_CHECK_STREQ(addr_lower(f, 0), "J\xc3\x96RG@ex\xc3\x84mple.de");
}

ATF_TC_WITHOUT_HEAD(valid_domain);
ATF_TC_BODY(valid_domain, tc)
{
	enum { T = ADDR_DOM_TRAILING_DOT, U = ADDR_DOM_UTF8,
	    LIT = ADDR_DOM_LITERAL, N = ADDR_DOM_NUMERIC };
	static const struct {
		const char *name;
		int flags;
		const char *why;	/* NULL: valid */
	} t[] = {
		{ "example.com", 0, NULL },
		{ "EXAMPLE.com", 0, NULL },
		{ "localhost", 0, NULL },
		{ "a", 0, NULL },
		{ "a.b-c.d", 0, NULL },
		{ "a--b.example", 0, NULL },
		{ "xn--bcher-kva.example", 0, NULL },
		{ "123.example", 0, NULL },
		{ "example.123a", 0, NULL },
		{ "example.com.", T, NULL },
		{ "example.com.", 0, "ends with a dot" },
		{ ".", T, "ends with a dot" },
		{ "", 0, "empty domain name" },
		{ ".example", 0, "empty label" },
		{ "ex..ample", 0, "empty label" },
		{ "example..", T, "empty label" },
		{ "-a.com", 0, "hyphen" },
		{ "a-.com", 0, "hyphen" },
		{ "a.com-", 0, "hyphen" },
		{ "ex ample.com", 0, "invalid character" },
		{ "ex_ample.com", 0, "invalid character" },
		{ "ex@ample.com", 0, "invalid character" },
		{ "ex\tample.com", 0, "control character" },
		{ "1.2.3.4", 0, "numeric domain name" },
		{ "1.2.3.4", N, NULL },
		{ "12345", 0, "numeric" },
		{ "1.2.3.4.", T, "numeric" },
		{ "b\xc3\xbc" "cher.de", 0, "non-ASCII" },
		{ "b\xc3\xbc" "cher.de", U, NULL },
		{ "b\xff.de", U, "invalid UTF-8" },
		{ "b\xc3", U, "invalid UTF-8" },
		{ "[192.0.2.1]", LIT, NULL },
		{ "[192.0.2.1]", 0, "not allowed" },
		{ "[IPv6:::1]", LIT, NULL },
		{ "[IPv6:::1", LIT, "closing ]" },
		{ "[::1]", LIT, "unsupported" },
		{ "[192.0.2.1].com", LIT, "closing ]" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		const char *why = NULL;
		bool ok = addr_valid_domain(t[i].name, strlen(t[i].name),
		    t[i].flags, &why);

		ATF_CHECK_EQ_MSG(ok, t[i].why == NULL, "%s: %s", t[i].name,
		    why ? why : "ok");
		if (!ok && t[i].why != NULL)
			ATF_CHECK_MSG(why != NULL && strstr(why, t[i].why),
			    "%s: %s", t[i].name, why);
	}

	/* Lengths: 63-octet labels, 255 octets in all. */
	char buf[300];
	const char *why = NULL;
	memset(buf, 'a', sizeof(buf));
	ATF_CHECK(addr_valid_domain(buf, 63, 0, NULL));
	ATF_CHECK(!addr_valid_domain(buf, 64, 0, &why));
	ATF_CHECK(strstr(why, "label longer than 63") != NULL);
	for (int i = 63; i < 300; i += 64)
		buf[i] = '.';
	ATF_CHECK(addr_valid_domain(buf, 255, 0, NULL));	/* ends "aaa" */
	ATF_CHECK(!addr_valid_domain(buf, 256, T, &why));
	ATF_CHECK(strstr(why, "longer than 255") != NULL);
	/* A domain with a trailing dot still has at most 255 octets. */
	ATF_CHECK(!addr_valid_domain(buf, 256, 0, &why));
}

ATF_TC_WITHOUT_HEAD(ip_literal);
ATF_TC_BODY(ip_literal, tc)
{
	unsigned char bin[16];
	unsigned char want6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };

	ATF_CHECK_EQ(addr_ip_literal("[192.0.2.1]", 11, bin), AF_INET);
	ATF_CHECK(bin[0] == 192 && bin[1] == 0 && bin[2] == 2 && bin[3] == 1);
	ATF_CHECK_EQ(addr_ip_literal("[IPv6:2001:db8::1]", 18, bin), AF_INET6);
	ATF_CHECK(memcmp(bin, want6, 16) == 0);
	ATF_CHECK_EQ(addr_ip_literal("[ipv6:2001:DB8::1]", 18, NULL), AF_INET6);
	ATF_CHECK(addr_is_ip_literal("[IPv6:::1]"));
	ATF_CHECK(addr_is_ip_literal("[IPv6:::ffff:192.0.2.1]"));
	ATF_CHECK(addr_is_ip_literal("[0.0.0.0]"));
	static const char *bad[] = {
		"192.0.2.1", "[192.0.2.1", "192.0.2.1]", "[]", "[IPv6:]",
		"[IPv6:::1%lo]", "[1.2.3.4.5]", "[256.1.1.1]", "[1.2.3]",
		"[::1]", "[tag:x]", "[IPv4:1.2.3.4]", "[ 1.2.3.4]",
		"[1.2.3.4 ]", "[IPv6: ::1]", "[IPv6:::1]x", "",
		"[IPv6:1111:2222:3333:4444:5555:6666:7777:8888:9999]",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ATF_CHECK_MSG(!addr_is_ip_literal(bad[i]), "%s", bad[i]);
	ATF_CHECK(!addr_is_ip_literal(NULL));
	/* An embedded NUL is not hidden by the length. */
	ATF_CHECK_EQ(addr_ip_literal("[1.2.3.4\0]", 10, NULL), 0);
}

static int match(addr_domlist_t *l, const char *d)
{
	str_t err = STR_INIT;
	int r = addr_domlist_match(l, d, &err);

	str_release(&err);
	return r;
}

ATF_TC_WITHOUT_HEAD(domlist);
ATF_TC_BODY(domlist, tc)
{
	str_t err = STR_INIT;
	const char *spec = "example.com, .sub.example.org\t!bad.example.net "
	    ".example.net,,[192.0.2.1] Localhost.";
	addr_domlist_t *l = addr_domlist_new("relay_domains", spec, 0, &err);
	addr_domlist_t *p = addr_domlist_new("relay_domains", spec,
	    ADDR_DOMLIST_PARENT, &err);

	ATF_REQUIRE_MSG(l != NULL && p != NULL, "%s", str_cstr(&err));
	static const struct {
		const char *d;
		int plain, parent;
	} t[] = {
		{ "example.com", 1, 1 },
		{ "EXAMPLE.COM.", 1, 1 },
		{ "a.example.com", 0, 1 },
		{ "a.b.example.com", 0, 1 },
		{ "evilexample.com", 0, 0 },
		{ "example.com.evil", 0, 0 },
		{ "sub.example.org", 0, 0 },	/* ".x" is subdomains only */
		{ "x.sub.example.org", 1, 1 },
		{ "x.y.Sub.Example.Org", 1, 1 },
		{ "bad.example.net", 0, 0 },	/* excluded before .example.net */
		{ "x.bad.example.net", 1, 0 },	/* parent style: excluded too */
		{ "good.example.net", 1, 1 },
		{ "example.net", 0, 0 },
		{ "[192.0.2.1]", 1, 1 },
		{ "[192.0.2.2]", 0, 0 },
		{ "localhost", 1, 1 },
		{ "x.localhost", 0, 1 },
		{ "", 0, 0 },
		{ ".", 0, 0 },
		{ "com", 0, 0 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ATF_CHECK_EQ_MSG(match(l, t[i].d), t[i].plain, "%s", t[i].d);
		ATF_CHECK_EQ_MSG(match(p, t[i].d), t[i].parent, "%s", t[i].d);
	}
	/* Too long to be a domain: no match, no crash. */
	char big[600];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big + sizeof(big) - 13, ".example.com", 12);
	ATF_CHECK_EQ(match(p, big), 0);
	ATF_CHECK_EQ(match(l, NULL), 0);
	addr_domlist_free(l);
	addr_domlist_free(p);

	/* Empty list: nothing matches. */
	l = addr_domlist_new("mydestination", " ,  ", 0, &err);
	ATF_REQUIRE(l != NULL);
	ATF_CHECK_EQ(match(l, "example.com"), 0);
	addr_domlist_free(l);
	l = addr_domlist_new("mydestination", NULL, 0, &err);
	ATF_REQUIRE(l != NULL);
	ATF_CHECK_EQ(match(l, "example.com"), 0);
	addr_domlist_free(l);
	addr_domlist_free(NULL);
}

ATF_TC_WITHOUT_HEAD(domlist_tables);
ATF_TC_BODY(domlist_tables, tc)
{
	str_t err = STR_INIT;
	const char *spec = "!inline:{ no.dot.example=x },"
	    "inline:{ exact.example=x, .dot.example=x } other.example";
	addr_domlist_t *l = addr_domlist_new("relay_domains", spec, 0, &err);
	addr_domlist_t *p = addr_domlist_new("relay_domains", spec,
	    ADDR_DOMLIST_PARENT, &err);

	ATF_REQUIRE_MSG(l != NULL && p != NULL, "%s", str_cstr(&err));
	ATF_CHECK_EQ(match(l, "exact.example"), 1);
	ATF_CHECK_EQ(match(l, "EXACT.example."), 1);
	ATF_CHECK_EQ(match(l, "a.exact.example"), 0);
	ATF_CHECK_EQ(match(p, "a.exact.example"), 1);
	ATF_CHECK_EQ(match(l, "dot.example"), 0);
	ATF_CHECK_EQ(match(l, "a.dot.example"), 1);
	ATF_CHECK_EQ(match(l, "a.b.dot.example"), 1);
	ATF_CHECK_EQ(match(l, "no.dot.example"), 0);	/* negated table */
	ATF_CHECK_EQ(match(l, "other.example"), 1);
	ATF_CHECK_EQ(match(l, "example"), 0);
	addr_domlist_free(l);
	addr_domlist_free(p);

	/* A table that cannot be read: -1 and a reason, never "no". */
	DB *db;
	DBT k, v;
	ATF_REQUIRE_EQ(db_create(&db, NULL, 0), 0);
	ATF_REQUIRE_EQ(db->open(db, NULL, "dom.db", NULL, DB_HASH, DB_CREATE,
	    0644), 0);
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = (void *)"ok.example";
	k.size = 10;
	v.data = (void *)"x";
	v.size = 1;
	ATF_REQUIRE_EQ(db->put(db, NULL, &k, &v, 0), 0);
	k.data = (void *)"broken.example";
	k.size = 14;
	v.data = (void *)"a\0b";	/* a NUL in a value is damage */
	v.size = 3;
	ATF_REQUIRE_EQ(db->put(db, NULL, &k, &v, 0), 0);
	db->close(db, 0);
	l = addr_domlist_new("relay_domains", "hash:dom", 0, &err);
	ATF_REQUIRE_MSG(l != NULL, "%s", str_cstr(&err));
	ATF_CHECK_EQ(match(l, "ok.example"), 1);
	ATF_CHECK_EQ(match(l, "nope.example"), 0);
	str_reset(&err);
	ATF_CHECK_EQ(addr_domlist_match(l, "broken.example", &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "hash:dom") != NULL, "%s",
	    str_cstr(&err));
	addr_domlist_free(l);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(domlist_errors);
ATF_TC_BODY(domlist_errors, tc)
{
	static const struct {
		const char *spec, *why;
	} t[] = {
		{ "example.com !", "'!' without a pattern" },
		{ "/etc/petrel/domains", "file patterns are not supported" },
		{ "nosuchtype:foo", "nosuchtype" },
		{ "bad_domain.example", "invalid character" },
		{ "ex..ample", "empty label" },
		{ ".", "empty" },
		{ ".[192.0.2.1]", "before an address literal" },
		{ "[192.0.2.999]", "invalid IPv4" },
		{ "inline:{ a=b", "missing '}'" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		str_t err = STR_INIT;
		addr_domlist_t *l = addr_domlist_new("mydestination", t[i].spec,
		    0, &err);

		ATF_CHECK_MSG(l == NULL, "%s accepted", t[i].spec);
		addr_domlist_free(l);
		ATF_CHECK_MSG(strstr(str_cstr(&err), t[i].why) != NULL &&
		    strncmp(str_cstr(&err), "mydestination: ", 15) == 0,
		    "%s: %s", t[i].spec, str_cstr(&err));
		str_release(&err);
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, external_form);
	ATF_TP_ADD_TC(tp, internalize_errors);
	ATF_TP_ADD_TC(tp, split);
	ATF_TP_ADD_TC(tp, lower);
	ATF_TP_ADD_TC(tp, valid_domain);
	ATF_TP_ADD_TC(tp, ip_literal);
	ATF_TP_ADD_TC(tp, domlist);
	ATF_TP_ADD_TC(tp, domlist_tables);
	ATF_TP_ADD_TC(tp, domlist_errors);
	return atf_no_error();
}
