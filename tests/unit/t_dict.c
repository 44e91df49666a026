/* Unit tests for libutil/dict: table specs, static:, inline:, texthash:
 * and the text format parser.  hash: is in t_dict_hash.c. */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dict.h"
#include "mem.h"
#include "str.h"
#include "testutil.h"

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *fp = fopen(path, "w");
	ATF_REQUIRE(fp != NULL);
	ATF_REQUIRE_EQ(fwrite(text, 1, len, fp), len);
	ATF_REQUIRE_EQ(fclose(fp), 0);
}

#define WRITE(path, lit) write_file(path, lit, sizeof(lit) - 1)

/* dict_open must fail with a message containing want. */
static void open_fails(const char *spec, int flags, const char *want)
{
	str_t err = STR_INIT;
	dict_t *d = dict_open(spec, flags, &err);
	ATF_CHECK_MSG(d == NULL, "%s: opened", spec ? spec : "(null)");
	dict_close(d);
	ATF_CHECK_MSG(strstr(str_cstr(&err), want) != NULL,
	    "%s: error \"%s\" lacks \"%s\"", spec ? spec : "(null)",
	    str_cstr(&err), want);
	str_release(&err);
}

/* Collects a walk as "k=v;" text. */
static int collect(const char *key, const char *value, void *ctx)
{
	str_catf(ctx, "%s=%s;", key, value);
	return 0;
}

static int stop_after_one(const char *key, const char *value, void *ctx)
{
	(void)key;
	(void)value;
	(*(int *)ctx)++;
	return 7;
}

ATF_TC_WITHOUT_HEAD(spec_errors);
ATF_TC_BODY(spec_errors, tc)
{
	open_fails(NULL, 0, "empty lookup table");
	open_fails("", 0, "empty lookup table");
	open_fails("nocolon", 0, "expected type:name");
	open_fails(":name", 0, "expected type:name");
	open_fails("Hash:x", 0, "bad character");
	open_fails("hash:", 0, "missing name");
	open_fails("inline:", 0, "missing name");
	open_fails("nosuch:foo", 0, "unsupported lookup table type \"nosuch\"");
	open_fails("nosuch:foo", 0, "texthash");	/* lists the known types */
}

ATF_TC_WITHOUT_HEAD(static_table);
ATF_TC_BODY(static_table, tc)
{
	dict_t *d = open_ok("static:OK", 0);
	char *big = xmalloc(DICT_KEY_MAX * 3);

	memset(big, 'x', DICT_KEY_MAX * 3 - 1);
	big[DICT_KEY_MAX * 3 - 1] = 0;
	check_value(d, "anything", "OK");
	check_value(d, "ANY@example.com", "OK");
	check_value(d, big, "OK");	/* every key, even huge ones */
	ATF_CHECK_STREQ(dict_type(d), "static");
	ATF_CHECK_STREQ(dict_name(d), "OK");
	ATF_CHECK_STREQ(dict_spec(d), "static:OK");
	/* A static table has no entries to list. */
	str_t out = STR_INIT;
	ATF_CHECK_EQ(dict_walk(d, collect, &out), -1);
	ATF_CHECK(dict_error(d));
	ATF_CHECK(strstr(dict_errmsg(d), "cannot be listed") != NULL);
	ATF_CHECK_EQ(dict_refresh(d), 0);
	dict_close(d);
	str_release(&out);
	free(big);

	d = open_ok("static:{ value with  spaces }", 0);
	check_value(d, "k", "value with  spaces");
	dict_close(d);
	d = open_ok("static:{ {nested} braces }", 0);
	check_value(d, "k", "{nested} braces");
	dict_close(d);
}

ATF_TC_WITHOUT_HEAD(static_errors);
ATF_TC_BODY(static_errors, tc)
{
	open_fails("static:{ value", 0, "unbalanced \"{\"");
	open_fails("static:{ {value }", 0, "unbalanced \"{\"");
	open_fails("static:value}", 0, "unbalanced \"}\"");
	open_fails("static:{}", 0, "missing value");
	open_fails("static:{   }", 0, "missing value");
	open_fails("static:   ", 0, "missing value");
	open_fails("static:{a} b", 0, "unexpected text after the closing \"}\"");
}

ATF_TC_WITHOUT_HEAD(inline_table);
ATF_TC_BODY(inline_table, tc)
{
	dict_t *d = open_ok("inline:{ key1=value1, Key2=value2,key3=v3 key4=v=4,"
	    " { key 5 = value with spaces, and comma }, {k6={x}} }", 0);
	check_value(d, "key1", "value1");
	check_value(d, "KEY1", "value1");	/* lookup folds */
	check_value(d, "key2", "value2");	/* so does building */
	check_value(d, "Key2", "value2");
	check_value(d, "key3", "v3");
	check_value(d, "key4", "v=4");
	check_value(d, "key 5", "value with spaces, and comma");
	check_value(d, "k6", "{x}");
	check_value(d, "key6", NULL);
	check_value(d, "", NULL);
	str_t out = STR_INIT;
	ATF_CHECK_EQ(dict_walk(d, collect, &out), 0);
	ATF_CHECK_STREQ(str_cstr(&out), "key1=value1;key2=value2;key3=v3;"
	    "key4=v=4;key 5=value with spaces, and comma;k6={x};");
	int calls = 0;
	ATF_CHECK_EQ(dict_walk(d, stop_after_one, &calls), 1);
	ATF_CHECK_EQ(calls, 1);
	dict_close(d);
	str_release(&out);

	d = open_ok("inline:{}", 0);	/* empty is fine */
	check_value(d, "x", NULL);
	dict_close(d);
}

ATF_TC_WITHOUT_HEAD(inline_case_sensitive);
ATF_TC_BODY(inline_case_sensitive, tc)
{
	dict_t *d = open_ok("inline:{ Key=upper, key=lower }", DICT_FLAG_CASE_SENSITIVE);
	check_value(d, "Key", "upper");
	check_value(d, "key", "lower");
	check_value(d, "KEY", NULL);
	dict_close(d);
}

ATF_TC_WITHOUT_HEAD(inline_errors);
ATF_TC_BODY(inline_errors, tc)
{
	open_fails("inline:a=b", 0, "expected \"{\"");
	open_fails("inline:{ a=b", 0, "unbalanced \"{\"");
	open_fails("inline:{ a=b, { c=d }", 0, "unbalanced \"{\"");
	open_fails("inline:{ a=b }}", 0, "unexpected text after the closing \"}\"");
	open_fails("inline:{ a=b } x", 0, "unexpected text");
	open_fails("inline:{ ab }", 0, "missing \"=\" in \"ab\"");
	open_fails("inline:{ a=b, {c d} }", 0, "missing \"=\" in \"c d\"");
	open_fails("inline:{ =b }", 0, "empty key");
	open_fails("inline:{ { = b } }", 0, "empty key");
	open_fails("inline:{ a= }", 0, "missing value for key \"a\"");
	open_fails("inline:{ a=b{c} }", 0, "unexpected \"{\"");
}

ATF_TC_WITHOUT_HEAD(inline_duplicates);
ATF_TC_BODY(inline_duplicates, tc)
{
	dict_t *d = open_ok("inline:{ a=first, A=second }", 0);
	check_value(d, "a", "first");	/* default: the first wins */
	str_t out = STR_INIT;
	ATF_CHECK_EQ(dict_walk(d, collect, &out), 0);
	ATF_CHECK_STREQ(str_cstr(&out), "a=first;");
	dict_close(d);
	d = open_ok("inline:{ a=first, A=second }", DICT_FLAG_DUP_REPLACE);
	check_value(d, "a", "second");
	dict_close(d);
	open_fails("inline:{ a=first, A=second }", DICT_FLAG_DUP_ERROR,
	    "duplicate key \"a\"");
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(untrusted_keys);
ATF_TC_BODY(untrusted_keys, tc)
{
	dict_t *d = open_ok("inline:{ a=1 }", 0);
	char *big = xmalloc(1 << 20);

	memset(big, 'a', (1 << 20) - 1);
	big[(1 << 20) - 1] = 0;
	/* Too long for any table: not found, and not an error. */
	check_value(d, big, NULL);
	big[DICT_KEY_MAX + 1] = 0;
	check_value(d, big, NULL);
	check_value(d, "", NULL);
	ATF_CHECK_EQ(dict_get(d, NULL, NULL), DICT_STAT_NOTFOUND);
	check_value(d, "\xff\xfe", NULL);	/* bytes above ASCII pass through */
	dict_close(d);

	/* Building refuses such keys. */
	str_t spec = STR_INIT;
	big[DICT_KEY_MAX + 1] = 0;
	str_setf(&spec, "inline:{ %s=1 }", big);
	open_fails(str_cstr(&spec), 0, "key too long");
	big[DICT_KEY_MAX] = 0;	/* the longest allowed */
	str_setf(&spec, "inline:{ %s=1 }", big);
	d = open_ok(str_cstr(&spec), 0);
	check_value(d, big, "1");
	dict_close(d);
	str_release(&spec);
	free(big);
}

ATF_TC_WITHOUT_HEAD(texthash_table);
ATF_TC_BODY(texthash_table, tc)
{
	WRITE("map",
	    "# a comment\n"
	    "\n"
	    "User@Example.COM   relay:[mx.example.com]  \n"
	    "   # an indented comment\n"
	    "plain\tvalue one\n"
	    "multi first part\n"
	    "\tsecond part\n"
	    "  \n"
	    "  third part\n"
	    "crlf\tdos line\r\n"
	    "last no newline");
	dict_t *d = open_ok("texthash:map", 0);
	check_value(d, "user@example.com", "relay:[mx.example.com]");
	check_value(d, "USER@EXAMPLE.COM", "relay:[mx.example.com]");
	check_value(d, "plain", "value one");
	check_value(d, "multi", "first part\tsecond part  third part");
	check_value(d, "crlf", "dos line");
	check_value(d, "last", "no newline");
	check_value(d, "#", NULL);
	check_value(d, "second", NULL);
	str_t out = STR_INIT;
	ATF_CHECK_EQ(dict_walk(d, collect, &out), 0);
	ATF_CHECK_STREQ(str_cstr(&out),
	    "user@example.com=relay:[mx.example.com];plain=value one;"
	    "multi=first part\tsecond part  third part;crlf=dos line;"
	    "last=no newline;");
	ATF_CHECK_EQ(dict_refresh(d), 0);
	dict_close(d);
	str_release(&out);

	d = open_ok("texthash:map", DICT_FLAG_CASE_SENSITIVE);
	check_value(d, "User@Example.COM", "relay:[mx.example.com]");
	check_value(d, "user@example.com", NULL);
	dict_close(d);
}

ATF_TC_WITHOUT_HEAD(texthash_errors);
ATF_TC_BODY(texthash_errors, tc)
{
	open_fails("texthash:nonexistent", 0, "cannot open nonexistent:");

	WRITE("novalue", "a 1\n# c\n\nlonely   \nb 2\n");
	open_fails("texthash:novalue", 0, "novalue:4: missing value for key \"lonely\"");

	/* A logical line is reported by its first physical line. */
	WRITE("cont", "a 1\nb\n\n  # comments and blank lines do not end it\n  2\nc 3\nd\n");
	open_fails("texthash:cont", 0, "cont:7: missing value for key \"d\"");

	WRITE("lead", "# header\n  indented 1\nb 2\n");
	open_fails("texthash:lead", 0, "lead:2: line starts with white space");

	write_file("nul", "a 1\nb x\0y\n", 10);
	open_fails("texthash:nul", 0, "nul:2: NUL byte");

	WRITE("dup", "a 1\nb 2\nA 3\n");
	open_fails("texthash:dup", DICT_FLAG_DUP_ERROR, "dup:3: duplicate key \"a\"");
	dict_t *d = open_ok("texthash:dup", 0);
	check_value(d, "a", "1");
	dict_close(d);
	d = open_ok("texthash:dup", DICT_FLAG_DUP_REPLACE);
	check_value(d, "a", "3");
	dict_close(d);

	/* A key longer than any table holds. */
	str_t text = STR_INIT;
	for (int i = 0; i < DICT_KEY_MAX + 1; i++)
		str_putc(&text, 'k');
	str_cat(&text, " v\n");
	write_file("longkey", str_cstr(&text), str_len(&text));
	open_fails("texthash:longkey", 0, "longkey:1: key too long");
	str_release(&text);
}

struct seen {
	str_t text;
	int stop_at;		/* stop with an error at this line (0: never) */
};

static int record_pair(const char *key, const char *value, const char *file,
    int lineno, void *ctx, str_t *err)
{
	struct seen *s = ctx;
	if (lineno == s->stop_at) {
		str_setf(err, "%s:%d: refused by the caller", file, lineno);
		return -1;
	}
	str_catf(&s->text, "%s:%d:%s=%s;", file, lineno, key, value);
	return 0;
}

ATF_TC_WITHOUT_HEAD(text_parser);
ATF_TC_BODY(text_parser, tc)
{
	struct seen s = { STR_INIT, 0 };
	str_t err = STR_INIT;

	/* Keys come as written: folding is the table's business. */
	WRITE("src", "\n# x\nKey One\n  more\nk2 v2\n\n\nk3    v 3\n");
	ATF_CHECK_EQ(dict_text_parse("src", record_pair, &s, &err), 0);
	ATF_CHECK_STREQ(str_cstr(&s.text), "src:3:Key=One  more;src:5:k2=v2;src:8:k3=v 3;");
	ATF_CHECK_STREQ(str_cstr(&err), "");

	/* The caller can stop the parse with its own file:line error. */
	str_reset(&s.text);
	s.stop_at = 5;
	ATF_CHECK_EQ(dict_text_parse("src", record_pair, &s, &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err), "src:5: refused by the caller");
	ATF_CHECK_STREQ(str_cstr(&s.text), "src:3:Key=One  more;");

	ATF_CHECK_EQ(dict_text_parse("missing", record_pair, &s, &err), -1);
	ATF_CHECK(strstr(str_cstr(&err), "cannot open missing") != NULL);
	str_release(&s.text);
	str_release(&err);
}

static int record_line(char *line, const char *file, int lineno, void *ctx,
    str_t *err)
{
	(void)err;
	str_catf(ctx, "%s:%d:[%s]", file, lineno, line);
	return 0;
}

ATF_TC_WITHOUT_HEAD(text_lines);
ATF_TC_BODY(text_lines, tc)
{
	str_t out = STR_INIT, err = STR_INIT;

	/* The raw logical lines, for formats with their own key syntax. */
	WRITE("aliases", "root: admin\npostmaster:\n\troot,\n\tother\n");
	ATF_CHECK_EQ(dict_text_lines("aliases", record_line, &out, &err), 0);
	ATF_CHECK_STREQ(str_cstr(&out),
	    "aliases:1:[root: admin]aliases:2:[postmaster:\troot,\tother]");
	str_release(&out);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, spec_errors);
	ATF_TP_ADD_TC(tp, static_table);
	ATF_TP_ADD_TC(tp, static_errors);
	ATF_TP_ADD_TC(tp, inline_table);
	ATF_TP_ADD_TC(tp, inline_case_sensitive);
	ATF_TP_ADD_TC(tp, inline_errors);
	ATF_TP_ADD_TC(tp, inline_duplicates);
	ATF_TP_ADD_TC(tp, untrusted_keys);
	ATF_TP_ADD_TC(tp, texthash_table);
	ATF_TP_ADD_TC(tp, texthash_errors);
	ATF_TP_ADD_TC(tp, text_parser);
	ATF_TP_ADD_TC(tp, text_lines);
	return atf_no_error();
}
