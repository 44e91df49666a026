/* Unit tests for libutil/lines: logical lines as main.cf, master.cf and
 * texthash: sources use them (comments, blank lines, CR LF, continuation
 * joining in both modes, indentation sets, errors that go on or stop,
 * the length limit, NUL bytes, and the line-by-line interface). */
#include <atf-c.h>
#include <stdlib.h>
#include <string.h>
#include "lines.h"
#include "str.h"

/* Records what the walk hands over: "N:[line]" for a logical line,
 * "!what@N" for an error; stops when told to. */
struct rec {
	str_t out;
	int stop_line;		/* stop (returning 7) at the logical line starting here */
	int stop_errors;	/* errors stop the walk (returning 9) */
};

static int rec_line(char *line, int lineno, void *ctx)
{
	struct rec *r = ctx;

	str_catf(&r->out, "%d:[", lineno);
	str_quote_printable(&r->out, line, strlen(line));
	str_cat(&r->out, "]\n");
	return lineno == r->stop_line ? 7 : 0;
}

static int rec_error(enum lines_error what, int lineno, void *ctx)
{
	static const char *const name[] = {
		[LINES_ORPHAN] = "orphan", [LINES_TOO_LONG] = "long",
		[LINES_NUL] = "nul",
	};
	struct rec *r = ctx;

	str_catf(&r->out, "!%s@%d\n", name[what], lineno);
	return r->stop_errors ? 9 : 0;
}

/* Walks text (strlen) with flags and max_len; returns what was recorded
 * (malloc'ed) and the walk's result in *rc. */
static char *walk_n(const char *text, size_t len, int flags, size_t max_len,
    struct rec *r, int *rc)
{
	lines_opts_t o = { .flags = flags, .max_len = max_len,
		.line = rec_line, .error = rec_error, .ctx = r };

	*rc = lines_walk(text, len, &o);
	return str_steal(&r->out);
}

static char *walk_s(const char *text, int flags, size_t max_len,
    struct rec *r, int *rc)
{
	return walk_n(text, strlen(text), flags, max_len, r, rc);
}

static char *walk(const char *text, int flags, int *rc)
{
	struct rec r = { STR_INIT, 0, 0 };
	return walk_n(text, strlen(text), flags, 0, &r, rc);
}

#define CHECK_WALK(text, flags, want) do { \
		int rc_; \
		char *got_ = walk((text), (flags), &rc_); \
		ATF_CHECK_EQ(rc_, 0); \
		ATF_CHECK_STREQ(got_, (want)); \
		free(got_); \
	} while (0)

ATF_TC_WITHOUT_HEAD(plain_lines);
ATF_TC_BODY(plain_lines, tc)
{
	/* Numbering counts skipped lines; CR before LF goes; the last line
	 * needs no newline; '#' only counts at the start. */
	CHECK_WALK("a = 1\n"
	    "\n"
	    "# comment\n"
	    "   \t\n"
	    "b = 2 # not a comment\r\n"
	    "   # indented comment\n"
	    "c = 3", 0,
	    "1:[a = 1]\n5:[b = 2 # not a comment]\n7:[c = 3]\n");
	CHECK_WALK("", 0, "");
	CHECK_WALK("\n\n# only comments\n", 0, "");
	/* A blank line that is only CR LF. */
	CHECK_WALK("x\r\n\r\ny\n", 0, "1:[x]\n3:[y]\n");
}

ATF_TC_WITHOUT_HEAD(continuation_one_space);
ATF_TC_BODY(continuation_one_space, tc)
{
	/* Default mode: each physical line trimmed, joined with one space;
	 * blank and comment lines between continuation lines are skipped
	 * without ending the logical line (main.cf and master.cf do this). */
	CHECK_WALK("name =   a   \n"
	    "\t\t  b\r\n"
	    "# a comment inside the entry\n"
	    "\n"
	    "    # an indented one\n"
	    "  c  d  \n"
	    "next = 1\n"
	    " 2\n", 0,
	    "1:[name =   a b c  d]\n7:[next = 1 2]\n");
}

ATF_TC_WITHOUT_HEAD(continuation_verbatim);
ATF_TC_BODY(continuation_verbatim, tc)
{
	/* LINES_VERBATIM (texthash:): trailing white space goes, a
	 * continuation keeps its indentation as the separator. */
	CHECK_WALK("key a  \n"
	    "\t\tb\n"
	    "# comment between\n"
	    "   c d \r\n"
	    "other v\n", LINES_VERBATIM,
	    "1:[key a\\011\\011b   c d]\n5:[other v]\n");
}

ATF_TC_WITHOUT_HEAD(indentation_set);
ATF_TC_BODY(indentation_set, tc)
{
	/* By default only blank and tab indent: a form feed or vertical tab
	 * at the start begins a new logical line (trimmed away). */
	CHECK_WALK("a\n\fb\n", 0, "1:[a]\n2:[b]\n");
	CHECK_WALK("a\n\v\n", 0, "1:[a]\n2:[]\n");
	/* With LINES_ANY_SPACE they indent, and a line of them is blank. */
	CHECK_WALK("a\n\fb\n", LINES_ANY_SPACE, "1:[a b]\n");
	CHECK_WALK("a\n\v\n", LINES_ANY_SPACE, "1:[a]\n");
	CHECK_WALK("a\n\fb\n", LINES_ANY_SPACE | LINES_VERBATIM, "1:[a\\014b]\n");
}

ATF_TC_WITHOUT_HEAD(orphan_goes_on);
ATF_TC_BODY(orphan_goes_on, tc)
{
	/* Every orphan line is reported and left out, also the second one:
	 * main.cf and master.cf collect all errors. */
	CHECK_WALK("  first\n"
	    "\tsecond\n"
	    "# comment\n"
	    "ok\n"
	    " more\n", 0,
	    "!orphan@1\n!orphan@2\n4:[ok more]\n");
}

ATF_TC_WITHOUT_HEAD(error_stops);
ATF_TC_BODY(error_stops, tc)
{
	struct rec r = { STR_INIT, 0, 1 };
	int rc;
	const char *text = "a\nb\n  c\n d\n";
	char *got;

	/* The error callback's value comes back; nothing after it. */
	r.stop_errors = 1;
	got = walk_s(" x\ny\n", 0, 0, &r, &rc);
	ATF_CHECK_EQ(rc, 9);
	ATF_CHECK_STREQ(got, "!orphan@1\n");
	free(got);

	/* The line callback's value comes back; the pending line is not
	 * handed over after a stop. */
	r.stop_errors = 0;
	r.stop_line = 2;
	got = walk_n(text, strlen(text), 0, 0, &r, &rc);
	ATF_CHECK_EQ(rc, 7);	/* from the last line, handed over by lines_finish */
	ATF_CHECK_STREQ(got, "1:[a]\n2:[b c d]\n");
	free(got);
	r.stop_line = 1;
	got = walk_n(text, strlen(text), 0, 0, &r, &rc);
	ATF_CHECK_EQ(rc, 7);
	ATF_CHECK_STREQ(got, "1:[a]\n");
	free(got);

	/* No error callback: an error stops with -1. */
	lines_opts_t o = { .line = rec_line, .ctx = &r };
	r.stop_line = 0;
	ATF_CHECK_EQ(lines_walk("a\n b\n", 5, &o), 0);
	ATF_CHECK_EQ(lines_walk(" b\na\n", 5, &o), -1);
	got = str_steal(&r.out);
	ATF_CHECK_STREQ(got, "1:[a b]\n");
	free(got);
}

ATF_TC_WITHOUT_HEAD(length_limit);
ATF_TC_BODY(length_limit, tc)
{
	struct rec r = { STR_INIT, 0, 0 };
	int rc;
	char *got;

	/* Exactly max_len bytes pass. */
	got = walk_s("abcd\n  ef\n", LINES_VERBATIM, 8, &r, &rc);
	ATF_CHECK_EQ(rc, 0);
	ATF_CHECK_STREQ(got, "1:[abcd  ef]\n");
	free(got);
	/* One more is an error at the first line of the logical line; going
	 * on drops that logical line with its remaining continuations. */
	got = walk_s("x\nabcd\n  efg\n more\n# c\n  and more\ny\n",
	    LINES_VERBATIM, 8, &r, &rc);
	ATF_CHECK_EQ(rc, 0);
	ATF_CHECK_STREQ(got, "1:[x]\n!long@2\n7:[y]\n");
	free(got);
	/* In the default mode the joining space counts. */
	got = walk_s("abcd\n   efg\n", 0, 8, &r, &rc);
	ATF_CHECK_STREQ(got, "1:[abcd efg]\n");
	free(got);
	got = walk_s("abcd\n   efgh\n", 0, 8, &r, &rc);
	ATF_CHECK_STREQ(got, "!long@1\n");
	free(got);
	/* A single physical line over the limit. */
	r.stop_errors = 1;
	got = walk_s("a\n123456789\nb\n", 0, 8, &r, &rc);
	ATF_CHECK_EQ(rc, 9);
	ATF_CHECK_STREQ(got, "1:[a]\n!long@2\n");
	free(got);
}

ATF_TC_WITHOUT_HEAD(nul_byte);
ATF_TC_BODY(nul_byte, tc)
{
	static const char text[] = "a\n b\0c\n d\ne\n";
	struct rec r = { STR_INIT, 0, 0 };
	int rc;
	char *got;

	/* Going on, the line is left out like a comment. */
	got = walk_n(text, sizeof(text) - 1, 0, 0, &r, &rc);
	ATF_CHECK_EQ(rc, 0);
	ATF_CHECK_STREQ(got, "!nul@2\n1:[a d]\n4:[e]\n");
	free(got);
	r.stop_errors = 1;
	got = walk_n(text, sizeof(text) - 1, 0, 0, &r, &rc);
	ATF_CHECK_EQ(rc, 9);
	ATF_CHECK_STREQ(got, "!nul@2\n");
	free(got);
}

ATF_TC_WITHOUT_HEAD(feed_line_by_line);
ATF_TC_BODY(feed_line_by_line, tc)
{
	struct rec r = { STR_INIT, 0, 0 };
	lines_opts_t o = { .line = rec_line, .error = rec_error, .ctx = &r };
	lines_t l;
	char *got;

	lines_init(&l, &o);
	ATF_CHECK_EQ(lines_feed(&l, "a", 1), 0);
	ATF_CHECK_EQ(lines_feed(&l, " b", 2), 0);
	ATF_CHECK_EQ(l.lineno, 2);
	/* Nothing handed over until the logical line ends. */
	ATF_CHECK_EQ(str_len(&r.out), 0);
	ATF_CHECK_EQ(lines_feed(&l, "c\r", 2), 0);
	ATF_CHECK_EQ(lines_finish(&l), 0);
	got = str_steal(&r.out);
	ATF_CHECK_STREQ(got, "1:[a b]\n3:[c]\n");
	free(got);

	/* lines_discard drops the pending line. */
	lines_init(&l, &o);
	ATF_CHECK_EQ(lines_feed(&l, "a", 1), 0);
	ATF_CHECK_EQ(lines_feed(&l, "b", 1), 0);
	lines_discard(&l);
	got = str_steal(&r.out);
	ATF_CHECK_STREQ(got, "1:[a]\n");
	free(got);

	/* After a stop, feeding does nothing and returns the stop value. */
	r.stop_line = 1;
	lines_init(&l, &o);
	ATF_CHECK_EQ(lines_feed(&l, "a", 1), 0);
	ATF_CHECK_EQ(lines_feed(&l, "b", 1), 7);
	ATF_CHECK_EQ(lines_feed(&l, "c", 1), 7);
	ATF_CHECK_EQ(l.lineno, 2);
	ATF_CHECK_EQ(lines_finish(&l), 7);
	got = str_steal(&r.out);
	ATF_CHECK_STREQ(got, "1:[a]\n");
	free(got);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, plain_lines);
	ATF_TP_ADD_TC(tp, continuation_one_space);
	ATF_TP_ADD_TC(tp, continuation_verbatim);
	ATF_TP_ADD_TC(tp, indentation_set);
	ATF_TP_ADD_TC(tp, orphan_goes_on);
	ATF_TP_ADD_TC(tp, error_stops);
	ATF_TP_ADD_TC(tp, length_limit);
	ATF_TP_ADD_TC(tp, nul_byte);
	ATF_TP_ADD_TC(tp, feed_line_by_line);
	return atf_no_error();
}
