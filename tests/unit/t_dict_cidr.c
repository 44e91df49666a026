/* Unit tests for libutil/dict cidr: tables: IPv4 and IPv6 rules, first
 * match wins, single addresses, negation, if/endif blocks, keys that are
 * not addresses, and syntax errors named file:line. */
#include <atf-c.h>
#include <string.h>
#include "dict.h"
#include "str.h"
#include "testutil.h"

/* Opening must fail with an error containing want. */
static void open_fails(const char *text, const char *want)
{
	str_t err = STR_INIT;
	dict_t *d;

	put_file("bad", text);
	d = dict_open("cidr:bad", 0, &err);
	ATF_CHECK_MSG(d == NULL, "opened: %s", text);
	ATF_CHECK_MSG(strstr(str_cstr(&err), want) != NULL,
	    "want \"%s\" in \"%s\"", want, str_cstr(&err));
	dict_close(d);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(first_match);
ATF_TC_BODY(first_match, tc)
{
	put_file("net",
	    "# networks\n"
	    "192.168.1.0/24     lan\n"
	    "192.168.0.0/16     site\n"
	    "10.1.2.3           one host\n"
	    "10.0.0.0/8         ten\n"
	    "2001:db8::/32      doc6\n"
	    "[2001:db8:1::]/48  never (the rule above wins)\n"
	    "::1                loop6\n"
	    "0.0.0.0/0          any4\n");
	dict_t *d = open_ok("cidr:net", 0);
	check_value(d, "192.168.1.7", "lan");
	check_value(d, "192.168.2.7", "site");
	check_value(d, "10.1.2.3", "one host");
	check_value(d, "10.1.2.4", "ten");
	check_value(d, "2001:db8:1::5", "doc6");
	check_value(d, "2001:DB8::abcd", "doc6");
	check_value(d, "::1", "loop6");
	check_value(d, "::2", NULL);
	check_value(d, "8.8.8.8", "any4");
	/* IPv4-mapped IPv6 is looked up as IPv4. */
	check_value(d, "::ffff:10.9.9.9", "ten");
	/* not addresses */
	check_value(d, "example.com", NULL);
	check_value(d, "10.1.2", NULL);
	check_value(d, "[10.1.2.3]", "one host");
	check_value(d, "10.1.2.3/32", NULL);
	/* A cidr: table cannot be listed. */
	str_t out = STR_INIT;
	ATF_CHECK_EQ(dict_walk(d, NULL, NULL), -1);
	str_release(&out);
	dict_close(d);
}

ATF_TC_WITHOUT_HEAD(negation_and_blocks);
ATF_TC_BODY(negation_and_blocks, tc)
{
	put_file("net",
	    "if 172.16.0.0/12\n"
	    "172.16.5.0/24    inner\n"
	    "if !172.16.6.0/24\n"
	    "0.0.0.0/0        in-12-not-6\n"
	    "endif\n"
	    "endif\n"
	    "!10.0.0.0/8      not-ten\n"
	    "0.0.0.0/0        ten\n");
	dict_t *d = open_ok("cidr:net", 0);
	check_value(d, "172.16.5.1", "inner");
	check_value(d, "172.16.7.1", "in-12-not-6");
	/* in 172.16.6/24: the inner block is skipped; not in 10/8 */
	check_value(d, "172.16.6.1", "not-ten");
	check_value(d, "10.2.3.4", "ten");
	/* IPv6 is outside any IPv4 network, so the negation matches it. */
	check_value(d, "2001:db8::1", "not-ten");
	dict_close(d);
}

ATF_TC_WITHOUT_HEAD(syntax_errors);
ATF_TC_BODY(syntax_errors, tc)
{
	open_fails("10.0.0.0/8 ok\n10.0.0.1/8 x\n", "bad:2: non-zero host bits in \"10.0.0.1/8\"");
	open_fails("10.0.0.0/33 x\n", "bad:1: bad prefix length");
	open_fails("2001:db8::/129 x\n", "bad:1: bad prefix length");
	open_fails("10.0.0.0/ x\n", "bad:1: bad prefix length");
	open_fails("10.0.0.0/8x x\n", "bad:1: bad prefix length");
	open_fails("example.com x\n", "bad:1: bad network address \"example.com\"");
	open_fails("\n\n10.0.0.0/8\n", "bad:3: missing result");
	open_fails("if 10.0.0.0/8\n", "bad:1: \"if\" without \"endif\"");
	open_fails("endif\n", "bad:1: \"endif\" without \"if\"");
	open_fails("if\nendif\n", "bad:1: \"if\" without a network");
	open_fails("if 10.0.0.0/8 x\nendif\n", "bad:1: text after \"if 10.0.0.0/8\"");
	open_fails("if 10.0.0.0/8\nendif x\n", "bad:2: text after \"endif\"");
	open_fails("  10.0.0.0/8 x\n", "bad:1: line starts with white space");
	str_t err = STR_INIT;
	ATF_CHECK(dict_open("cidr:/nonexistent/file", 0, &err) == NULL);
	ATF_CHECK(strstr(str_cstr(&err), "cannot open /nonexistent/file") != NULL);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(long_key);
ATF_TC_BODY(long_key, tc)
{
	char key[DICT_KEY_MAX + 10];

	put_file("net", "0.0.0.0/0 any\n::/0 any6\n");
	dict_t *d = open_ok("cidr:net", 0);
	memset(key, '1', sizeof(key) - 1);
	key[sizeof(key) - 1] = 0;
	check_value(d, key, NULL);
	check_value(d, "", NULL);
	check_value(d, "::", "any6");
	dict_close(d);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, first_match);
	ATF_TP_ADD_TC(tp, negation_and_blocks);
	ATF_TP_ADD_TC(tp, syntax_errors);
	ATF_TP_ADD_TC(tp, long_key);
	return atf_no_error();
}
