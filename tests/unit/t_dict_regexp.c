/* Unit tests for libutil/dict regexp: and pcre: tables: first match wins,
 * case-insensitive by default and the i flag, negation, if/endif blocks,
 * $n substitution, other delimiters, and syntax errors named file:line.
 * Every case runs for both types (same syntax, different engines). */
#include <atf-c.h>
#include <string.h>
#include "config.h"
#include "dict.h"
#include "str.h"
#include "testutil.h"

static void need(const char *type)
{
#ifndef HAVE_PCRE2
	if (strcmp(type, "pcre") == 0)
		atf_tc_skip("built without PCRE2 (libpcre2-dev)");
#else
	(void)type;
#endif
}

static dict_t *open_type(const char *type, const char *file, const char *text)
{
	char spec[256];

	put_file(file, text);
	bfmt(spec, sizeof(spec), "%s:%s", type, file);
	return open_ok(spec, 0);
}

/* Opening type:bad with text must fail with an error containing want. */
static void open_fails(const char *type, const char *text, const char *want)
{
	str_t err = STR_INIT;
	char spec[64];
	dict_t *d;

	put_file("bad", text);
	bfmt(spec, sizeof(spec), "%s:bad", type);
	d = dict_open(spec, 0, &err);
	ATF_CHECK_MSG(d == NULL, "%s opened: %s", type, text);
	ATF_CHECK_MSG(strstr(str_cstr(&err), want) != NULL,
	    "%s: want \"%s\" in \"%s\"", type, want, str_cstr(&err));
	dict_close(d);
	str_release(&err);
}

static void first_match(const char *type)
{
	need(type);
	dict_t *d = open_type(type, "re",
	    "# rules\n"
	    "/^postmaster@/         local:postmaster\n"
	    "/^(.*)@(example)\\.com$/ relay=$1 dom=${2} paren=$(1) dollar=$$\n"
	    "/@example\\.com$/        never: the rule above matches first\n"
	    "/^Exact@Case\\.org$/i   case-sensitive\n"
	    "!/\\.(com|org)$/         neither com nor org\n"
	    "#/comment/ x\n"
	    "\n"
	    "/^(a)|(b)$/             a=[$1] b=[$2]\n"
	    "/^(x?)$/                $1\n"
	    "/^x+$/                  only x\n"
	    "|^with/slash|           other delimiter\n"
	    "/a\\/b/                  escaped delimiter\n"
	    "/^long/                 first part\n"
	    "   second part\n");
	check_value(d, "postmaster@example.org", "local:postmaster");
	check_value(d, "POSTMASTER@x.com", "local:postmaster");
	check_value(d, "Bob.Smith@EXAMPLE.com", "relay=Bob.Smith dom=EXAMPLE paren=Bob.Smith dollar=$");
	check_value(d, "Exact@Case.org", "case-sensitive");
	check_value(d, "exact@case.org", NULL);
	check_value(d, "someone@example.net", "neither com nor org");
	/* ".org" ends the negated pattern: not matched; (a)|(b) decides. */
	check_value(d, "a", "neither com nor org");
	check_value(d, "b.org", NULL);
	dict_close(d);

	d = open_type(type, "re2",
	    "/^(a)|(b)$/   a=[$1] b=[$2]\n"
	    "/^(x?)$/      $1\n"
	    "/^x+$/        only x\n"
	    "|^with/slash| other delimiter\n"
	    "/c\\/d/        escaped delimiter\n"
	    "/^long/       first part\n"
	    "   second part\n");
	/* a group that did not take part gives nothing */
	check_value(d, "a", "a=[a] b=[]");
	check_value(d, "b", "a=[] b=[b]");
	/* an expansion that comes out empty is no answer: the next rule */
	check_value(d, "x", "x");
	check_value(d, "xx", "only x");
	check_value(d, "with/slash", "other delimiter");
	check_value(d, "c/d", "escaped delimiter");
	check_value(d, "longer", "first part   second part");
	check_value(d, "zzz", NULL);
	/* not listable */
	ATF_CHECK_EQ(dict_walk(d, NULL, NULL), -1);
	dict_close(d);
}

static void blocks(const char *type)
{
	need(type);
	dict_t *d = open_type(type, "re",
	    "if /@example\\.com$/\n"
	    "/^postmaster@/   pm-com\n"
	    "if !/^a/\n"
	    "/./              com-not-a\n"
	    "endif\n"
	    "endif\n"
	    "/^postmaster@/   pm-other\n"
	    "if /^zz/\n"
	    "endif\n");
	check_value(d, "postmaster@example.com", "pm-com");
	check_value(d, "bob@example.com", "com-not-a");
	check_value(d, "alice@example.com", NULL);
	check_value(d, "postmaster@example.org", "pm-other");
	check_value(d, "zz", NULL);
	dict_close(d);
}

static void syntax_errors(const char *type)
{
	need(type);
	open_fails(type, "/a/ ok\n/(a/ x\n", "bad:2: bad regular expression \"(a\"");
	open_fails(type, "/a/ $2\n", "bad:1: $2 in result but the pattern has 0 groups");
	open_fails(type, "/(a)/ $1 ${3}\n", "bad:1: $3 in result but the pattern has 1 group");
	open_fails(type, "/(a)/ $x\n", "bad:1: bad \"$\" in result");
	open_fails(type, "/(a)/ cost $\n", "bad:1: bad \"$\" in result");
	open_fails(type, "!/(a)/ $1\n", "bad:1: a negated pattern has no groups");
	open_fails(type, "/a/q x\n", "bad:1: unknown flag \"q\"");
	open_fails(type, "\n#\n/abc x\n", "bad:3: missing closing \"/\" after the pattern");
	open_fails(type, "/abc/\n", "bad:1: missing result after the pattern");
	open_fails(type, "abc x\n", "bad:1: expected /pattern/");
	open_fails(type, "if /a/\n/b/ c\n", "bad:1: \"if\" without \"endif\"");
	open_fails(type, "/a/ b\nendif\n", "bad:2: \"endif\" without \"if\"");
	open_fails(type, "if /a/ x\nendif\n", "bad:1: text after the \"if\" pattern");
	open_fails(type, " /a/ x\n", "bad:1: line starts with white space");
	str_t err = STR_INIT;
	char spec[64];
	bfmt(spec, sizeof(spec), "%s:/nonexistent/file", type);
	ATF_CHECK(dict_open(spec, 0, &err) == NULL);
	ATF_CHECK(strstr(str_cstr(&err), "cannot open /nonexistent/file") != NULL);
	str_release(&err);
}

static void long_key(const char *type)
{
	static char key[DICT_KEY_MAX + 2];

	need(type);
	dict_t *d = open_type(type, "re", "/^(a*)$/ $1\n");
	memset(key, 'a', DICT_KEY_MAX);
	key[DICT_KEY_MAX] = 0;
	/* the longest key matches and is substituted whole */
	const char *v = dict_lookup(d, key);
	ATF_CHECK(v != NULL && strlen(v) == DICT_KEY_MAX);
	key[DICT_KEY_MAX] = 'a';
	key[DICT_KEY_MAX + 1] = 0;
	check_value(d, key, NULL);
	dict_close(d);
}

#define BOTH(name) \
	ATF_TC_WITHOUT_HEAD(regexp_##name); \
	ATF_TC_BODY(regexp_##name, tc) { name("regexp"); } \
	ATF_TC_WITHOUT_HEAD(pcre_##name); \
	ATF_TC_BODY(pcre_##name, tc) { name("pcre"); }

BOTH(first_match)
BOTH(blocks)
BOTH(syntax_errors)
BOTH(long_key)

ATF_TC_WITHOUT_HEAD(flags);
ATF_TC_BODY(flags, tc)
{
	dict_t *d = open_type("regexp", "re", "/^a.b$/m  multiline\n");
	check_value(d, "a\nb", NULL);
	check_value(d, "A-B", "multiline");
	dict_close(d);
	open_fails("regexp", "/a/s x\n", "unknown flag \"s\" (regexp: knows i, x, m)");
	/* stacked repetitions: undefined in POSIX, exponential in glibc */
	open_fails("regexp", "/b)+++++++++++++++++++++++++++++++++++/ x\n",
	    "bad:1: bad regular expression");
	open_fails("regexp", "/a*{2}?/ x\n", "three or more repetition operators (*, +, ?, {}) in a row");
	d = open_type("regexp", "ok", "/^[+*]+\\++a{2}?.*?$/ fine\n");
	check_value(d, "*+++aa", "fine");
	dict_close(d);
#ifdef HAVE_PCRE2
	d = open_type("pcre", "pc",
	    "/^a.b$/s      dotall\n"
	    "/^x # comment\n   y$/x   extended\n"
	    "/b+/U         [ungreedy]\n"
	    "/(?<w>\\w+)-(\\d+)/  $1 and $2\n");
	check_value(d, "a\nb", "dotall");
	check_value(d, "xy", "extended");
	check_value(d, "abbb", "[ungreedy]");
	check_value(d, "Word-42", "Word and 42");
	dict_close(d);
	open_fails("pcre", "/a/q x\n", "unknown flag \"q\" (pcre: knows");
#endif
}

/* dict_pattern_results: every rule's result with its file and line,
 * blocks and comments skipped; other table types refused. */
static int collect(const char *file, int line, const char *result, void *ctx)
{
	str_catf(ctx, "%s:%d %s\n", file, line, result);
	return 0;
}

static void pattern_results(const char *type)
{
	str_t got = STR_INIT;
	dict_t *d;

	need(type);
	d = open_type(type, "rt", "# c\n/a/ FIRST x\nif /b/\n/c/ SECOND\n"
	    "  continued\nendif\n\n!/d/ THIRD\n");
	ATF_REQUIRE_EQ(dict_pattern_results(d, collect, &got), 0);
	ATF_CHECK_STREQ(str_cstr(&got),
	    "rt:2 FIRST x\nrt:4 SECOND  continued\nrt:8 THIRD\n");
	dict_close(d);
	d = open_ok("inline:{ a=b }", 0);
	ATF_CHECK_EQ(dict_pattern_results(d, collect, &got), -1);
	dict_close(d);
	str_release(&got);
}

ATF_TC_WITHOUT_HEAD(regexp_pattern_results);
ATF_TC_BODY(regexp_pattern_results, tc) { pattern_results("regexp"); }
ATF_TC_WITHOUT_HEAD(pcre_pattern_results);
ATF_TC_BODY(pcre_pattern_results, tc) { pattern_results("pcre"); }

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, regexp_pattern_results);
	ATF_TP_ADD_TC(tp, pcre_pattern_results);
	ATF_TP_ADD_TC(tp, regexp_first_match);
	ATF_TP_ADD_TC(tp, pcre_first_match);
	ATF_TP_ADD_TC(tp, regexp_blocks);
	ATF_TP_ADD_TC(tp, pcre_blocks);
	ATF_TP_ADD_TC(tp, regexp_syntax_errors);
	ATF_TP_ADD_TC(tp, pcre_syntax_errors);
	ATF_TP_ADD_TC(tp, regexp_long_key);
	ATF_TP_ADD_TC(tp, pcre_long_key);
	ATF_TP_ADD_TC(tp, flags);
	return atf_no_error();
}
