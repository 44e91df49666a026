/* Unit tests for libglobal/addr_smtp: MAIL FROM / RCPT TO arguments, the
 * ESMTP parameters and xtext. */
#include <atf-c.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "addr.h"

#define M false			/* MAIL */
#define R true			/* RCPT */
#define S ADDR_F_SMTPUTF8
#define L ADDR_F_LENIENT

struct pcase {
	int line;
	bool rcpt;
	const char *arg;
	size_t len;		/* 0: strlen(arg) */
	int flags;
	addr_status_t want;
	const char *addr;	/* success: internal form */
	const char *why;	/* failure: part of the reason */
};

#define OK(r, a, f, x)		{ __LINE__, r, a, 0, f, ADDR_OK, x, NULL }
#define BAD(r, a, f, st, w)	{ __LINE__, r, a, 0, f, st, NULL, w }
#define BADN(r, a, f, st, w)	{ __LINE__, r, a, sizeof(a) - 1, f, st, NULL, w }

static const struct pcase cases[] = {
	/* The null path and plain addresses. */
	OK(M, "FROM:<>", 0, ""),
	OK(M, "from:<>", 0, ""),
	OK(M, "FROM:<> ", 0, ""),
	OK(M, "FROM: <a@example.com>", 0, "a@example.com"),
	OK(M, "FROM:\t<a@example.com>", 0, "a@example.com"),
	OK(M, "FROM:<A.B-c+d@Example.COM>", 0, "A.B-c+d@Example.COM"),
	OK(M, "FROM:<!#$%&'*+-/=?^_`{|}~@example.com>", 0,
	    "!#$%&'*+-/=?^_`{|}~@example.com"),
	OK(R, "TO:<user@mail-1.example.co.uk>", 0,
	    "user@mail-1.example.co.uk"),
	OK(R, "to:<user@123.example>", 0, "user@123.example"),
	/* Quoted local parts: stored unquoted. */
	OK(M, "FROM:<\"john doe\"@example.com>", 0, "john doe@example.com"),
	OK(M, "FROM:<\"a\\\"b\\\\c\"@example.com>", 0, "a\"b\\c@example.com"),
	OK(M, "FROM:<\"a@b\"@example.com>", 0, "a@b@example.com"),
	OK(M, "FROM:<\"\\a\"@example.com>", 0, "a@example.com"),
	OK(M, "FROM:<\"\"@example.com>", 0, "@example.com"),
	OK(M, "FROM:<\"a..b\"@example.com>", 0, "a..b@example.com"),
	OK(M, "FROM:<\"<>,;:\"@example.com>", 0, "<>,;:@example.com"),
	/* Source routes: accepted and dropped. */
	OK(M, "FROM:<@relay.example:user@example.com>", 0,
	    "user@example.com"),
	OK(R, "TO:<@a.example,@b.example,@[192.0.2.1]:u@example.com>", 0,
	    "u@example.com"),
	/* Address literals. */
	OK(R, "TO:<a@[192.0.2.1]>", 0, "a@[192.0.2.1]"),
	OK(R, "TO:<a@[ipv6:2001:db8::1]>", 0, "a@[IPv6:2001:db8::1]"),
	OK(R, "TO:<a@[IPv6:::ffff:192.0.2.1]>", 0, "a@[IPv6:::ffff:192.0.2.1]"),
	OK(R, "TO:<a@[IPv6:2001:DB8:0:0:0:0:0:1]>", 0,
	    "a@[IPv6:2001:DB8:0:0:0:0:0:1]"),
	/* Postmaster without a domain, RCPT only. */
	OK(R, "TO:<postmaster>", 0, "postmaster"),
	OK(R, "TO:<PostMaster>", 0, "PostMaster"),
	/* SMTPUTF8: given by the caller or, for MAIL, in the command. */
	OK(M, "FROM:<j\xc3\xb6rg@ex\xc3\xa4mple.de> SMTPUTF8", 0,
	    "j\xc3\xb6rg@ex\xc3\xa4mple.de"),
	OK(R, "TO:<\xe7\x94\xa8\xe6\x88\xb7@\xe4\xbe\x8b\xe5\xad\x90.cn>", S,
	    "\xe7\x94\xa8\xe6\x88\xb7@\xe4\xbe\x8b\xe5\xad\x90.cn"),
	OK(R, "TO:<\"j\xc3\xb6 rg\"@example.de>", S, "j\xc3\xb6 rg@example.de"),
	/* Lenient: no brackets, no domain, sloppy dots, long local part. */
	OK(M, "FROM:user@example.com", L, "user@example.com"),
	OK(M, "FROM: user@example.com SIZE=10", L, "user@example.com"),
	OK(R, "TO:postmaster", L, "postmaster"),
	OK(R, "TO:<user>", L, "user"),
	OK(R, "TO:<user>", ADDR_F_NO_DOMAIN, "user"),
	OK(M, "FROM:<a..b@example.com>", ADDR_F_LAX_DOTS, "a..b@example.com"),
	OK(M, "FROM:<.a.@example.com>", L, ".a.@example.com"),

	/* Command syntax. */
	BAD(M, "", 0, ADDR_ERR_CMD, "Syntax: MAIL FROM:<address>"),
	BAD(M, "FROM", 0, ADDR_ERR_CMD, "Syntax"),
	BAD(M, "FROM:", 0, ADDR_ERR_CMD, "Syntax"),
	BAD(M, "FROM:   ", 0, ADDR_ERR_CMD, "Syntax"),
	BAD(M, "FROM <a@example.com>", 0, ADDR_ERR_CMD, "Syntax"),
	BAD(M, "TO:<a@example.com>", 0, ADDR_ERR_CMD, "Syntax"),
	BAD(R, "FROM:<a@example.com>", 0, ADDR_ERR_CMD,
	    "Syntax: RCPT TO:<address>"),
	/* Brackets. */
	BAD(M, "FROM:a@example.com", 0, ADDR_ERR_SYNTAX, "enclosed in <>"),
	BAD(R, "TO:postmaster", 0, ADDR_ERR_SYNTAX, "enclosed in <>"),
	BAD(M, "FROM:<a@example.com", 0, ADDR_ERR_SYNTAX, "missing '>'"),
	BAD(M, "FROM:<a@example.com", L, ADDR_ERR_SYNTAX, "missing '>'"),
	BAD(M, "FROM:<a@example.com>x", 0, ADDR_ERR_SYNTAX,
	    "unexpected 'x' after the address"),
	BAD(M, "FROM:<a@example.com>>", 0, ADDR_ERR_SYNTAX, "after the address"),
	BAD(M, "FROM:<<a@example.com>>", 0, ADDR_ERR_SYNTAX,
	    "invalid character '<' in local part"),
	BAD(M, "FROM:a@example.com>", L, ADDR_ERR_SYNTAX, "domain"),
	BAD(R, "TO:<>", 0, ADDR_ERR_SYNTAX, "not a valid recipient"),
	BAD(R, "TO:<>", L, ADDR_ERR_SYNTAX, "not a valid recipient"),
	/* Local parts. */
	BAD(M, "FROM:<a b@example.com>", 0, ADDR_ERR_SYNTAX,
	    "invalid character space in local part"),
	BAD(M, "FROM:<a,b@example.com>", 0, ADDR_ERR_SYNTAX,
	    "invalid character ',' in local part"),
	BAD(M, "FROM:<a..b@example.com>", 0, ADDR_ERR_SYNTAX,
	    "two dots in a row"),
	BAD(M, "FROM:<.a@example.com>", 0, ADDR_ERR_SYNTAX,
	    "starts or ends with a dot"),
	BAD(M, "FROM:<a.@example.com>", 0, ADDR_ERR_SYNTAX,
	    "starts or ends with a dot"),
	BAD(M, "FROM:<\"unterminated@example.com>", 0, ADDR_ERR_SYNTAX,
	    "unterminated quoted"),
	BAD(M, "FROM:<\"a\\", 0, ADDR_ERR_SYNTAX, "unterminated quoted"),
	BAD(M, "FROM:<\"a\"b@example.com>", 0, ADDR_ERR_SYNTAX,
	    "unexpected 'b' after the local part"),
	BAD(M, "FROM:<\"a\tb\"@example.com>", 0, ADDR_ERR_SYNTAX,
	    "control character in local part"),
	BAD(M, "FROM:<\"a\\\rb\"@example.com>", 0, ADDR_ERR_SYNTAX,
	    "control character in local part"),
	BAD(M, "FROM:<user>", 0, ADDR_ERR_SYNTAX, "has no domain"),
	BAD(M, "FROM:<postmaster>", 0, ADDR_ERR_SYNTAX, "has no domain"),
	BAD(R, "TO:<\"postmaster\">", 0, ADDR_ERR_SYNTAX, "has no domain"),
	BAD(R, "TO:<user>", 0, ADDR_ERR_SYNTAX, "has no domain"),
	BAD(R, "TO:<\"\">", L, ADDR_ERR_SYNTAX,
	    "empty local part without a domain"),
	BAD(R, "TO:\"\" NOTIFY=NEVER", L, ADDR_ERR_SYNTAX,
	    "empty local part without a domain"),
	BAD(R, "TO:<\"a@b\">", L, ADDR_ERR_SYNTAX,
	    "quoted '@' in an address without a domain"),
	/* NUL and control bytes. */
	BADN(M, "FROM:<a\0b@example.com>", 0, ADDR_ERR_SYNTAX,
	    "NUL byte in local part"),
	BADN(M, "FROM:<a@exa\0mple.com>", 0, ADDR_ERR_SYNTAX,
	    "NUL byte in domain"),
	BADN(M, "FROM:<\"a\0\"@example.com>", 0, ADDR_ERR_SYNTAX, "NUL byte"),
	BAD(M, "FROM:<a\x01@example.com>", 0, ADDR_ERR_SYNTAX,
	    "control character in local part"),
	BAD(M, "FROM:<a@exa\rmple.com>", 0, ADDR_ERR_SYNTAX,
	    "control character in domain"),
	BAD(M, "FROM:<a@example.com\x7f>", 0, ADDR_ERR_SYNTAX,
	    "control character in domain"),
	BAD(M, "FROM:<a@example.com>\n", 0, ADDR_ERR_SYNTAX,
	    "unexpected \\x0A after the address"),
	BADN(M, "FROM:<a@example.com> SIZE=1\0", 0, ADDR_ERR_PARAM, "NUL byte"),
	/* Source routes. */
	BAD(M, "FROM:<@example.com>", 0, ADDR_ERR_SYNTAX,
	    "source route without ':'"),
	BAD(M, "FROM:<@a.example:>", 0, ADDR_ERR_SYNTAX, "empty local part"),
	BAD(M, "FROM:<@a.example,b.example:u@example.com>", 0, ADDR_ERR_SYNTAX,
	    "'@' expected after ','"),
	BAD(M, "FROM:<@a_b.example:u@example.com>", 0, ADDR_ERR_SYNTAX,
	    "source route: invalid character in domain"),
	BAD(M, "FROM:<@:u@example.com>", 0, ADDR_ERR_SYNTAX,
	    "source route: empty domain"),
	/* Domains. */
	BAD(M, "FROM:<a@>", 0, ADDR_ERR_SYNTAX, "empty domain name"),
	BAD(M, "FROM:<a@-bad.example>", 0, ADDR_ERR_SYNTAX, "hyphen"),
	BAD(M, "FROM:<a@bad-.example>", 0, ADDR_ERR_SYNTAX, "hyphen"),
	BAD(M, "FROM:<a@ex..ample>", 0, ADDR_ERR_SYNTAX, "empty label"),
	BAD(M, "FROM:<a@.example>", 0, ADDR_ERR_SYNTAX, "empty label"),
	BAD(M, "FROM:<a@example.com.>", 0, ADDR_ERR_SYNTAX, "ends with a dot"),
	BAD(M, "FROM:<a@exa_mple.com>", 0, ADDR_ERR_SYNTAX,
	    "invalid character in domain"),
	BAD(M, "FROM:<a@b@example.com>", 0, ADDR_ERR_SYNTAX,
	    "invalid character in domain"),
	BAD(M, "FROM:<a@1.2.3.4>", 0, ADDR_ERR_SYNTAX, "[192.0.2.1]"),
	BAD(M, "FROM:<a@example.com >", 0, ADDR_ERR_SYNTAX,
	    "invalid character in domain"),
	/* Address literals. */
	BAD(R, "TO:<a@[192.0.2.256]>", 0, ADDR_ERR_SYNTAX, "invalid IPv4"),
	BAD(R, "TO:<a@[192.0.2]>", 0, ADDR_ERR_SYNTAX, "invalid IPv4"),
	BAD(R, "TO:<a@[192.0.2.1.5]>", 0, ADDR_ERR_SYNTAX, "invalid IPv4"),
	BAD(R, "TO:<a@[0x7f.0.0.1]>", 0, ADDR_ERR_SYNTAX, "invalid IPv4"),
	BAD(R, "TO:<a@[ 192.0.2.1]>", 0, ADDR_ERR_SYNTAX, "invalid IPv4"),
	BAD(R, "TO:<a@[]>", 0, ADDR_ERR_SYNTAX, "invalid IPv4"),
	BAD(R, "TO:<a@[IPv6:2001:db8::g]>", 0, ADDR_ERR_SYNTAX, "invalid IPv6"),
	BAD(R, "TO:<a@[IPv6:192.0.2.1]>", 0, ADDR_ERR_SYNTAX, "invalid IPv6"),
	BAD(R, "TO:<a@[IPv6:1:2:3:4:5:6:7:8:9]>", 0, ADDR_ERR_SYNTAX,
	    "invalid IPv6"),
	BAD(R, "TO:<a@[IPv6:fe80::1%eth0]>", 0, ADDR_ERR_SYNTAX, "invalid IPv6"),
	BAD(R, "TO:<a@[IPv6:]>", 0, ADDR_ERR_SYNTAX, "invalid IPv6"),
	BAD(R, "TO:<a@[2001:db8::1]>", 0, ADDR_ERR_SYNTAX, "unsupported"),
	BAD(R, "TO:<a@[x-tag:foo]>", 0, ADDR_ERR_SYNTAX, "unsupported"),
	BAD(R, "TO:<a@[192.0.2.1>", 0, ADDR_ERR_SYNTAX, "closing ]"),
	BAD(R, "TO:<a@[192.0.2.1]x>", 0, ADDR_ERR_SYNTAX, "closing ]"),
	/* 8-bit. */
	BAD(M, "FROM:<j\xc3\xb6rg@example.de>", 0, ADDR_ERR_8BIT, "SMTPUTF8"),
	BAD(M, "FROM:<jorg@ex\xc3\xa4mple.de>", 0, ADDR_ERR_8BIT, "SMTPUTF8"),
	BAD(R, "TO:<j\xc3\xb6rg@example.de>", 0, ADDR_ERR_8BIT, "SMTPUTF8"),
	/* SMTPUTF8 on RCPT does not count: it is a MAIL parameter. */
	BAD(R, "TO:<j\xc3\xb6rg@example.de> SMTPUTF8", 0, ADDR_ERR_PARAM_UNSUPP,
	    "not a RCPT TO parameter"),
	BAD(M, "FROM:<j\xffrg@example.de> SMTPUTF8", 0, ADDR_ERR_SYNTAX,
	    "invalid UTF-8 in local part"),
	BAD(M, "FROM:<j\xc0\xafrg@example.de>", S, ADDR_ERR_SYNTAX,
	    "invalid UTF-8"),	/* overlong '/' */
	BAD(M, "FROM:<jorg@ex\xed\xa0\x80.de>", S, ADDR_ERR_SYNTAX,
	    "invalid UTF-8 in domain"),	/* surrogate */
	BAD(M, "FROM:<\"j\xc3\"@example.de>", S, ADDR_ERR_SYNTAX,
	    "invalid UTF-8"),

	/* Parameters. */
	OK(M, "FROM:<a@b.example>  SIZE=1   BODY=7BIT ", 0, "a@b.example"),
	OK(M, "FROM:<a@b.example> XFOO=bar X-Y", 0, "a@b.example"),
	BAD(M, "FROM:<a@b.example> =x", 0, ADDR_ERR_PARAM, "bad parameter keyword"),
	BAD(M, "FROM:<a@b.example> -X", 0, ADDR_ERR_PARAM, "bad parameter keyword"),
	BAD(M, "FROM:<a@b.example> X_Y=1", 0, ADDR_ERR_PARAM,
	    "bad parameter keyword (unexpected '_')"),
	BAD(M, "FROM:<a@b.example> SIZE=1=2", 0, ADDR_ERR_PARAM,
	    "'=' in parameter value"),
	BAD(M, "FROM:<a@b.example> SIZE=", 0, ADDR_ERR_PARAM,
	    "empty parameter value"),
	BAD(M, "FROM:<a@b.example> X=\x01", 0, ADDR_ERR_PARAM,
	    "control character in parameter value"),
	BAD(M, "FROM:<a@b.example> X=\xc3\xa9", 0, ADDR_ERR_PARAM,
	    "non-ASCII parameter value without SMTPUTF8"),
	OK(M, "FROM:<a@b.example> X=\xc3\xa9 SMTPUTF8", 0, "a@b.example"),
	BAD(M, "FROM:<a@b.example> X=\xc3 SMTPUTF8", 0, ADDR_ERR_PARAM,
	    "invalid UTF-8 in parameter value"),
	BAD(M, "FROM:<a@b.example> SIZE=1 size=2", 0, ADDR_ERR_PARAM,
	    "duplicate parameter size"),
	BAD(M, "FROM:<a@b.example> SIZE", 0, ADDR_ERR_PARAM,
	    "SIZE requires a value"),
	BAD(M, "FROM:<a@b.example> SIZE=12a", 0, ADDR_ERR_PARAM,
	    "SIZE value is not a valid number"),
	BAD(M, "FROM:<a@b.example> SIZE=-1", 0, ADDR_ERR_PARAM,
	    "SIZE value is not a valid number"),
	BAD(M, "FROM:<a@b.example> SIZE=99999999999999999999999", 0,
	    ADDR_ERR_PARAM, "SIZE value"),
	BAD(M, "FROM:<a@b.example> BODY=9BIT", 0, ADDR_ERR_PARAM,
	    "BODY must be"),
	BAD(M, "FROM:<a@b.example> RET=NONE", 0, ADDR_ERR_PARAM,
	    "RET must be FULL or HDRS"),
	BAD(M, "FROM:<a@b.example> SMTPUTF8=yes", 0, ADDR_ERR_PARAM,
	    "SMTPUTF8 takes no value"),
	BAD(M, "FROM:<a@b.example> ENVID=a+4", 0, ADDR_ERR_PARAM,
	    "ENVID is not valid xtext"),
	BAD(M, "FROM:<a@b.example> ENVID=a+0Ab", 0, ADDR_ERR_PARAM,
	    "ENVID is not valid xtext"),
	BAD(M, "FROM:<a@b.example> AUTH=+ZZ", 0, ADDR_ERR_PARAM,
	    "AUTH is not valid xtext"),
	BAD(M, "FROM:<a@b.example> NOTIFY=NEVER", 0, ADDR_ERR_PARAM_UNSUPP,
	    "NOTIFY is not a MAIL FROM parameter"),
	BAD(M, "FROM:<a@b.example> orcpt=rfc822;a@b", 0, ADDR_ERR_PARAM_UNSUPP,
	    "orcpt is not a MAIL FROM parameter"),
	BAD(R, "TO:<a@b.example> SIZE=10", 0, ADDR_ERR_PARAM_UNSUPP,
	    "SIZE is not a RCPT TO parameter"),
	BAD(R, "TO:<a@b.example> RET=FULL", 0, ADDR_ERR_PARAM_UNSUPP,
	    "RET is not a RCPT TO parameter"),
	OK(R, "TO:<a@b.example> NOTIFY=NEVER", 0, "a@b.example"),
	OK(R, "TO:<a@b.example> NOTIFY=delay,Success", 0, "a@b.example"),
	BAD(R, "TO:<a@b.example> NOTIFY=NEVER,SUCCESS", 0, ADDR_ERR_PARAM,
	    "NOTIFY=NEVER cannot be combined"),
	BAD(R, "TO:<a@b.example> NOTIFY=FAILURE,NEVER", 0, ADDR_ERR_PARAM,
	    "NOTIFY=NEVER cannot be combined"),
	BAD(R, "TO:<a@b.example> NOTIFY=SUCCESS,", 0, ADDR_ERR_PARAM,
	    "NOTIFY must be NEVER or a list"),
	BAD(R, "TO:<a@b.example> NOTIFY=,SUCCESS", 0, ADDR_ERR_PARAM,
	    "NOTIFY must be"),
	BAD(R, "TO:<a@b.example> NOTIFY=SUCCESS,,DELAY", 0, ADDR_ERR_PARAM,
	    "NOTIFY must be"),
	BAD(R, "TO:<a@b.example> NOTIFY=ALWAYS", 0, ADDR_ERR_PARAM,
	    "NOTIFY must be"),
	BAD(R, "TO:<a@b.example> NOTIFY=SUCCESSFUL", 0, ADDR_ERR_PARAM,
	    "NOTIFY must be"),
	BAD(R, "TO:<a@b.example> NOTIFY", 0, ADDR_ERR_PARAM,
	    "NOTIFY requires a value"),
	BAD(R, "TO:<a@b.example> ORCPT=rfc822", 0, ADDR_ERR_PARAM,
	    "ORCPT must be addr-type;address"),
	BAD(R, "TO:<a@b.example> ORCPT=;a@b", 0, ADDR_ERR_PARAM,
	    "ORCPT must be addr-type;address"),
	BAD(R, "TO:<a@b.example> ORCPT=rfc822;", 0, ADDR_ERR_PARAM,
	    "ORCPT must be addr-type;address"),
	BAD(R, "TO:<a@b.example> ORCPT=rfc(822;a@b", 0, ADDR_ERR_PARAM,
	    "not an atom"),
	BAD(R, "TO:<a@b.example> ORCPT=rfc822;a+4", 0, ADDR_ERR_PARAM,
	    "ORCPT address is not valid xtext"),
	BAD(R, "TO:<a@b.example> ORCPT=rfc822;a+GGb", 0, ADDR_ERR_PARAM,
	    "not valid xtext"),
	BAD(R, "TO:<a@b.example> ORCPT=rfc822;a+00b", 0, ADDR_ERR_PARAM,
	    "not valid xtext"),
};

ATF_TC_WITHOUT_HEAD(table);
ATF_TC_BODY(table, tc)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		size_t len = c->len ? c->len : strlen(c->arg);
		addr_smtp_t p;
		addr_err_t err = { ADDR_OK, "" };
		addr_status_t st = c->rcpt ?
		    addr_smtp_rcpt(c->arg, len, c->flags, &p, &err) :
		    addr_smtp_mail(c->arg, len, c->flags, &p, &err);

		ATF_CHECK_MSG(st == c->want, "line %d: status %d, want %d (%s)",
		    c->line, st, c->want, err.text);
		if (st != ADDR_OK) {
			ATF_CHECK_MSG(p.addr == NULL && p.nparams == 0,
			    "line %d: output not empty on failure", c->line);
			ATF_CHECK_EQ_MSG(err.status, st, "line %d", c->line);
			if (c->why != NULL)
				ATF_CHECK_MSG(strstr(err.text, c->why) != NULL,
				    "line %d: \"%s\" lacks \"%s\"", c->line,
				    err.text, c->why);
			/* Messages go into replies and logs. */
			for (const char *t = err.text; *t; t++)
				ATF_CHECK_MSG(*t >= 32 && *t < 127,
				    "line %d: unprintable message", c->line);
			continue;
		}
		if (c->addr != NULL)
			ATF_CHECK_MSG(strcmp(p.addr, c->addr) == 0,
			    "line %d: got \"%s\", want \"%s\"", c->line,
			    p.addr, c->addr);
		addr_smtp_free(&p);
		ATF_CHECK(p.addr == NULL);
	}
}

/* Long addresses built at run time: the RFC 5321 limits. */
ATF_TC_WITHOUT_HEAD(limits);
ATF_TC_BODY(limits, tc)
{
	char buf[1024], local[80], dom[300];
	addr_smtp_t p;
	addr_err_t err;

	memset(local, 'x', 64);
	local[64] = '\0';
	/* 64-octet local part: fine; 65: too long unless lenient. */
	snprintf(buf, sizeof(buf), "FROM:<%s@example.com>", local);
	ATF_CHECK_EQ(addr_smtp_mail(buf, strlen(buf), 0, &p, &err), ADDR_OK);
	addr_smtp_free(&p);
	snprintf(buf, sizeof(buf), "FROM:<%sy@example.com>", local);
	ATF_CHECK_EQ(addr_smtp_mail(buf, strlen(buf), 0, &p, &err),
	    ADDR_ERR_TOOLONG);
	ATF_CHECK(strstr(err.text, "local part longer than 64") != NULL);
	ATF_CHECK_EQ(addr_smtp_mail(buf, strlen(buf), ADDR_F_LONG_LOCAL, &p,
	    &err), ADDR_OK);
	addr_smtp_free(&p);
	/* The limit counts octets as sent: quotes and escapes too. */
	snprintf(buf, sizeof(buf), "FROM:<\"%.61s\\x\"@example.com>", local);
	ATF_CHECK_EQ(addr_smtp_mail(buf, strlen(buf), 0, &p, &err),
	    ADDR_ERR_TOOLONG);

	/* Domains: labels of 63, 252 octets in all still fit a path with a
	 * one-octet local part: <a@...> is 256. */
	memset(dom, 'd', sizeof(dom));
	dom[63] = dom[127] = dom[191] = '.';
	dom[252] = '\0';
	snprintf(buf, sizeof(buf), "TO:<a@%s>", dom);
	ATF_CHECK_EQ_MSG(addr_smtp_rcpt(buf, strlen(buf), 0, &p, &err), ADDR_OK,
	    "%s", err.text);
	ATF_CHECK_EQ(strlen(p.domain), 252);
	addr_smtp_free(&p);
	dom[252] = 'd';
	dom[253] = '\0';
	snprintf(buf, sizeof(buf), "TO:<a@%s>", dom);
	ATF_CHECK_EQ(addr_smtp_rcpt(buf, strlen(buf), 0, &p, &err),
	    ADDR_ERR_TOOLONG);
	ATF_CHECK(strstr(err.text, "path longer than 256") != NULL);
	/* Lenient form without brackets counts them anyway. */
	snprintf(buf, sizeof(buf), "TO:a@%s", dom);
	ATF_CHECK_EQ(addr_smtp_rcpt(buf, strlen(buf), ADDR_F_LENIENT, &p, &err),
	    ADDR_ERR_TOOLONG);
	/* A source route counts too. */
	dom[240] = '\0';
	snprintf(buf, sizeof(buf), "TO:<@relay.example:a@%s>", dom);
	ATF_CHECK_EQ(addr_smtp_rcpt(buf, strlen(buf), 0, &p, &err),
	    ADDR_ERR_TOOLONG);
	/* Domain over 255 octets. */
	memset(dom, 'd', sizeof(dom));
	for (int i = 63; i < 256; i += 64)
		dom[i] = '.';
	dom[256] = '\0';
	snprintf(buf, sizeof(buf), "TO:<a@%s>", dom);
	ATF_CHECK_EQ(addr_smtp_rcpt(buf, strlen(buf), 0, &p, &err),
	    ADDR_ERR_TOOLONG);
	ATF_CHECK_MSG(strstr(err.text, "domain longer than 255") != NULL, "%s",
	    err.text);
	/* A 64-octet label. */
	memset(dom, 'd', 64);
	snprintf(dom + 64, 10, ".example");
	snprintf(buf, sizeof(buf), "TO:<a@%s>", dom);
	ATF_CHECK_EQ(addr_smtp_rcpt(buf, strlen(buf), 0, &p, &err),
	    ADDR_ERR_SYNTAX);
	ATF_CHECK(strstr(err.text, "label longer than 63") != NULL);

	/* Parameters: at most ADDR_SMTP_PARAMS_MAX. */
	size_t n = (size_t)snprintf(buf, sizeof(buf), "FROM:<a@b.example>");
	for (int i = 0; i < ADDR_SMTP_PARAMS_MAX; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, " X%d=1", i);
	ATF_CHECK_EQ(addr_smtp_mail(buf, n, 0, &p, &err), ADDR_OK);
	ATF_CHECK_EQ(p.nparams, ADDR_SMTP_PARAMS_MAX);
	ATF_CHECK_EQ(p.nunknown, ADDR_SMTP_PARAMS_MAX);
	addr_smtp_free(&p);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, " ONEMORE");
	ATF_CHECK_EQ(addr_smtp_mail(buf, n, 0, &p, &err), ADDR_ERR_PARAM);
	ATF_CHECK(strstr(err.text, "too many parameters") != NULL);

	/* ENVID and ORCPT lengths (RFC 3461). */
	memcpy(buf, "FROM:<> ENVID=", 14);
	memset(buf + 14, 'e', 100);
	ATF_CHECK_EQ(addr_smtp_mail(buf, 114, 0, &p, &err), ADDR_OK);
	ATF_CHECK_EQ(strlen(p.envid), 100);
	addr_smtp_free(&p);
	buf[114] = 'e';
	ATF_CHECK_EQ(addr_smtp_mail(buf, 115, 0, &p, &err), ADDR_ERR_PARAM);
	ATF_CHECK(strstr(err.text, "ENVID longer than 100") != NULL);
	n = (size_t)snprintf(buf, sizeof(buf), "TO:<a@b.example> ORCPT=rfc822;");
	memset(buf + n, 'o', 600);
	ATF_CHECK_EQ(addr_smtp_rcpt(buf, n + 600, 0, &p, &err), ADDR_ERR_PARAM);
	ATF_CHECK(strstr(err.text, "ORCPT longer than 500") != NULL);
}

ATF_TC_WITHOUT_HEAD(fields);
ATF_TC_BODY(fields, tc)
{
	addr_smtp_t p;
	addr_err_t err;
	const char *m = "FROM:<@r.example:User@Example.COM> SIZE=10240 "
	    "body=8bitmime RET=HDRS ENVID=QQ+2B+3Dx AUTH=<> X-Foo=Bar ZZ";
	const char *r = "TO:<\"a b\"@[IPv6:::1]> NOTIFY=SUCCESS,DELAY "
	    "ORCPT=rfc822;a+20b+40x.example";

	ATF_REQUIRE_EQ_MSG(addr_smtp_mail(m, strlen(m), 0, &p, &err), ADDR_OK,
	    "%s", err.text);
	ATF_CHECK_STREQ(p.addr, "User@Example.COM");
	ATF_CHECK_STREQ(p.local, "User");
	ATF_CHECK_STREQ(p.domain, "Example.COM");
	ATF_CHECK(p.had_route && p.bracketed && !p.null_path && !p.eightbit);
	ATF_CHECK(p.has_size && p.size == 10240);
	ATF_CHECK_EQ(p.body, ADDR_BODY_8BITMIME);
	ATF_CHECK_EQ(p.ret, ADDR_RET_HDRS);
	ATF_CHECK_STREQ(p.envid, "QQ+=x");
	ATF_CHECK_STREQ(p.auth, "<>");
	ATF_CHECK(!p.smtputf8);
	ATF_CHECK_EQ(p.nparams, 7);
	ATF_CHECK_EQ(p.nunknown, 2);
	ATF_CHECK_EQ(p.params[0].kind, ADDR_P_SIZE);
	ATF_CHECK_STREQ(p.params[1].keyword, "body");
	ATF_CHECK_STREQ(p.params[1].value, "8bitmime");
	ATF_CHECK_EQ(p.params[5].kind, ADDR_P_UNKNOWN);
	ATF_CHECK_STREQ(p.params[5].keyword, "X-Foo");
	ATF_CHECK_STREQ(p.params[5].value, "Bar");
	ATF_CHECK_STREQ(p.params[6].keyword, "ZZ");
	ATF_CHECK(p.params[6].value == NULL);
	addr_smtp_free(&p);

	ATF_REQUIRE_EQ_MSG(addr_smtp_rcpt(r, strlen(r), 0, &p, &err), ADDR_OK,
	    "%s", err.text);
	ATF_CHECK_STREQ(p.addr, "a b@[IPv6:::1]");
	ATF_CHECK_STREQ(p.local, "a b");
	ATF_CHECK_STREQ(p.domain, "[IPv6:::1]");
	ATF_CHECK_EQ(p.notify, DSN_NOTIFY_SUCCESS | DSN_NOTIFY_DELAY);
	ATF_CHECK_STREQ(p.orcpt_type, "rfc822");
	ATF_CHECK_STREQ(p.orcpt, "a b@x.example");
	ATF_CHECK(!p.has_size && p.body == ADDR_BODY_NONE && p.ret == 0);
	addr_smtp_free(&p);

	r = "TO:<a@b.example> NOTIFY=NEVER";
	ATF_REQUIRE_EQ(addr_smtp_rcpt(r, strlen(r), 0, &p, &err), ADDR_OK);
	ATF_CHECK_EQ(p.notify, DSN_NOTIFY_NEVER);
	addr_smtp_free(&p);

	m = "FROM:<> SIZE=18446744073709551615 BODY=BINARYMIME RET=full";
	ATF_REQUIRE_EQ(addr_smtp_mail(m, strlen(m), 0, &p, &err), ADDR_OK);
	ATF_CHECK(p.null_path && p.addr[0] == '\0' && p.domain == NULL);
	ATF_CHECK(p.size == UINTMAX_C(18446744073709551615));
	ATF_CHECK_EQ(p.body, ADDR_BODY_BINARYMIME);
	ATF_CHECK_EQ(p.ret, ADDR_RET_FULL);
	addr_smtp_free(&p);

	m = "FROM:<j\xc3\xb6rg@example.de> BODY=7BIT SMTPUTF8";
	ATF_REQUIRE_EQ(addr_smtp_mail(m, strlen(m), 0, &p, &err), ADDR_OK);
	ATF_CHECK(p.smtputf8 && p.eightbit);
	ATF_CHECK_EQ(p.body, ADDR_BODY_7BIT);
	addr_smtp_free(&p);

	r = "TO:<PostMaster>";
	ATF_REQUIRE_EQ(addr_smtp_rcpt(r, strlen(r), 0, &p, &err), ADDR_OK);
	ATF_CHECK(p.postmaster && p.domain == NULL);
	addr_smtp_free(&p);
	r = "TO:<postmaster@example.com>";
	ATF_REQUIRE_EQ(addr_smtp_rcpt(r, strlen(r), 0, &p, &err), ADDR_OK);
	ATF_CHECK(!p.postmaster);
	addr_smtp_free(&p);
	r = "TO:user@example.com NOTIFY=FAILURE";
	ATF_REQUIRE_EQ(addr_smtp_rcpt(r, strlen(r), ADDR_F_LENIENT, &p, &err),
	    ADDR_OK);
	ATF_CHECK(!p.bracketed);
	ATF_CHECK_EQ(p.notify, DSN_NOTIFY_FAILURE);
	addr_smtp_free(&p);

	/* A NULL error pointer is allowed. */
	ATF_CHECK_EQ(addr_smtp_rcpt("TO:<>", 5, 0, &p, NULL), ADDR_ERR_SYNTAX);
	ATF_CHECK_EQ(addr_smtp_mail("FROM:<a b@c>", 12, 0, &p, NULL),
	    ADDR_ERR_SYNTAX);
}

ATF_TC_WITHOUT_HEAD(replies);
ATF_TC_BODY(replies, tc)
{
	static const struct {
		addr_status_t st;
		bool rcpt;
		int code;
		const char *dsn;
	} t[] = {
		{ ADDR_OK, false, 250, "2.1.0" },
		{ ADDR_OK, true, 250, "2.1.5" },
		{ ADDR_ERR_CMD, false, 501, "5.5.4" },
		{ ADDR_ERR_SYNTAX, false, 501, "5.1.7" },
		{ ADDR_ERR_SYNTAX, true, 501, "5.1.3" },
		{ ADDR_ERR_TOOLONG, true, 501, "5.1.3" },
		{ ADDR_ERR_8BIT, false, 553, "5.6.7" },
		{ ADDR_ERR_PARAM, true, 501, "5.5.4" },
		{ ADDR_ERR_PARAM_UNSUPP, false, 555, "5.5.4" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		addr_err_t e = { t[i].st, "" };
		int code = 0;
		const char *dsn = NULL;

		addr_err_reply(&e, t[i].rcpt, &code, &dsn);
		ATF_CHECK_EQ_MSG(code, t[i].code, "case %zu", i);
		ATF_CHECK_STREQ_MSG(dsn, t[i].dsn, "case %zu", i);
	}
}

ATF_TC_WITHOUT_HEAD(xtext);
ATF_TC_BODY(xtext, tc)
{
	static const struct {
		const char *in, *out;	/* out NULL: malformed */
	} t[] = {
		{ "", "" },
		{ "abc", "abc" },
		{ "a+2Bb", "a+b" },
		{ "+3D", "=" },
		{ "+2b+3d", "+=" },	/* lower-case hex tolerated */
		{ "a+20b", "a b" },
		{ "+7E", "~" },
		{ "+", NULL },
		{ "+4", NULL },
		{ "a+4", NULL },
		{ "+G0", NULL },
		{ "+0G", NULL },
		{ "a=b", NULL },
		{ "a b", NULL },
		{ "+00", NULL },
		{ "+0A", NULL },
		{ "+7F", NULL },
		{ "+C3+A9", NULL },	/* decodes to non-ASCII */
		{ "\xc3\xa9", NULL },
		{ "a\x01", NULL },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		str_t out = STR_INIT;
		bool ok = addr_xtext_decode(t[i].in, strlen(t[i].in), &out);

		ATF_CHECK_EQ_MSG(ok, t[i].out != NULL, "\"%s\"", t[i].in);
		if (ok && t[i].out != NULL)
			ATF_CHECK_STREQ(str_cstr(&out), t[i].out);
		str_release(&out);
	}

	str_t enc = STR_INIT, dec = STR_INIT;
	addr_xtext_encode("a+b=c d\x01\xc3\xa9~", 11, &enc);
	ATF_CHECK_STREQ(str_cstr(&enc), "a+2Bb+3Dc+20d+01+C3+A9~");
	/* Every printable string survives encode + decode. */
	char all[96];
	for (int c = 32; c < 127; c++)
		all[c - 32] = (char)c;
	str_reset(&enc);
	addr_xtext_encode(all, 95, &enc);
	ATF_CHECK(addr_xtext_decode(str_cstr(&enc), str_len(&enc), &dec));
	ATF_CHECK_EQ(str_len(&dec), 95);
	ATF_CHECK(memcmp(str_cstr(&dec), all, 95) == 0);
	str_release(&enc);
	str_release(&dec);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, table);
	ATF_TP_ADD_TC(tp, limits);
	ATF_TP_ADD_TC(tp, fields);
	ATF_TP_ADD_TC(tp, replies);
	ATF_TP_ADD_TC(tp, xtext);
	return atf_no_error();
}
