/* Unit tests of the separable parts of cleanup's content checks
 * (cleanup/cleanup_checks.c, cleanup_mime.c): parsing a table's answer
 * into an action, Content-Type parsing, and the MIME reader telling
 * part headers, attached-message headers and body lines apart. */
#include <atf-c.h>
#include <string.h>
#include "cleanup/cleanup.h"

ATF_TC_WITHOUT_HEAD(actions);
ATF_TC_BODY(actions, tc)
{
	const char *t;
	size_t n;

	ATF_CHECK_EQ(cleanup_checks_act_parse("REJECT go away  ", &t, &n), CA_REJECT);
	ATF_CHECK(n == 7 && strncmp(t, "go away", n) == 0);
	ATF_CHECK_EQ(cleanup_checks_act_parse("reject", &t, &n), CA_REJECT);
	ATF_CHECK_EQ(n, 0);
	ATF_CHECK_EQ(cleanup_checks_act_parse("Warn\tx", &t, &n), CA_WARN);
	ATF_CHECK(n == 1 && *t == 'x');
	ATF_CHECK_EQ(cleanup_checks_act_parse("DISCARD", &t, &n), CA_DISCARD);
	ATF_CHECK_EQ(cleanup_checks_act_parse("HOLD why", &t, &n), CA_HOLD);
	ATF_CHECK_EQ(cleanup_checks_act_parse("IGNORE", &t, &n), CA_IGNORE);
	ATF_CHECK_EQ(cleanup_checks_act_parse("PREPEND X-A: b", &t, &n), CA_PREPEND);
	ATF_CHECK(n == 6 && strncmp(t, "X-A: b", 6) == 0);
	ATF_CHECK_EQ(cleanup_checks_act_parse("REPLACE Subject: x", &t, &n), CA_REPLACE);
	ATF_CHECK_EQ(cleanup_checks_act_parse("DUNNO", &t, &n), CA_NONE);
	ATF_CHECK_EQ(cleanup_checks_act_parse("OK", &t, &n), CA_NONE);
	/* not an action, or one Petrel does not do */
	ATF_CHECK_EQ(cleanup_checks_act_parse("REJECTED", &t, &n), CA_UNSUPPORTED);
	ATF_CHECK_EQ(cleanup_checks_act_parse("FILTER smtp:[x]:25 ", &t, &n), CA_FILTER);
	ATF_CHECK(n == 11 && strncmp(t, "smtp:[x]:25", n) == 0);
	ATF_CHECK_EQ(cleanup_checks_act_parse("STRIP", &t, &n), CA_UNSUPPORTED);
	ATF_CHECK_EQ(cleanup_checks_act_parse("REDIRECT a@b", &t, &n), CA_REDIRECT);
	ATF_CHECK_EQ(cleanup_checks_act_parse("BCC a@b", &t, &n), CA_UNSUPPORTED);
	ATF_CHECK_EQ(cleanup_checks_act_parse("", &t, &n), CA_UNSUPPORTED);
}

static void ctype(const char *v, bool mp, bool rfc, const char *bnd)
{
	bool m, r;
	str_t b = STR_INIT;

	cleanup_mime_ctype(v, strlen(v), &m, &r, &b);
	ATF_CHECK_MSG(m == mp && r == rfc, "%s: multipart %d rfc822 %d", v,
	    m, r);
	ATF_CHECK_MSG(strcmp(str_cstr(&b), bnd) == 0, "%s: boundary \"%s\"", v,
	    str_cstr(&b));
	str_release(&b);
}

ATF_TC_WITHOUT_HEAD(content_type);
ATF_TC_BODY(content_type, tc)
{
	ctype(" text/plain; charset=us-ascii", false, false, "");
	ctype(" multipart/mixed; boundary=abc", true, false, "abc");
	ctype(" Multipart/Alternative;\tBOUNDARY = \"a b;c\"", true, false, "a b;c");
	ctype(" multipart/mixed; charset=x; boundary=\"q\"; x=y", true, false, "q");
	ctype(" multipart/mixed", true, false, "");
	ctype(" multipart/mixed; boundary=\"unclosed", true, false, "");
	ctype(" message/rfc822", false, true, "");
	ctype(" message/rfc822x", false, false, "");
	ctype(" message/partial", false, false, "");
	ctype("", false, false, "");
}

/* The reader's output as text: "H1 header", "H2 header", "B line",
 * "S" (a body segment begins). */
static str_t out;

static void on_hdr(void *ctx, int hclass, const char *h, size_t len)
{
	(void)ctx;
	str_catf(&out, "H%d ", hclass);
	str_append(&out, h, len);
	str_cat(&out, "\n");
}

static void on_body(void *ctx, const char *l, size_t len)
{
	(void)ctx;
	str_cat(&out, "B ");
	str_append(&out, l, len);
	str_cat(&out, "\n");
}

static void on_start(void *ctx)
{
	(void)ctx;
	str_cat(&out, "S\n");
}

static const char *run(const char *ctype_value, const char *body)
{
	cleanup_mime_t *m = cleanup_mime_new(60, on_hdr, on_body, on_start, NULL);
	const char *p = body;

	str_reset(&out);
	cleanup_mime_primary(m, ctype_value, ctype_value ? strlen(ctype_value) : 0);
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		cleanup_mime_line(m, p, len);
		p += len + (nl != NULL);
	}
	cleanup_mime_end(m);
	cleanup_mime_free(m);
	return str_cstr(&out);
}

ATF_TC_WITHOUT_HEAD(reader);
ATF_TC_BODY(reader, tc)
{
	/* not MIME: every line is body, a header-like one too */
	ATF_CHECK_STREQ(run(NULL, "Subject: x\n--b\n"),
	    "S\nB Subject: x\nB --b\n");
	/* multipart: part headers (folded ones joined), boundaries as
	 * body, a closing boundary, epilogue; a boundary of another
	 * multipart is body text */
	ATF_CHECK_STREQ(run(" multipart/mixed; boundary=b",
	    "pre\n--b\nContent-Type: text/plain\nX-A: 1\n 2\n\nbody\n--bx\n"
	    "--b  \nX-B: 3\n\nb2\n--b--\nepi\n"),
	    "S\nB pre\nB --b\nH1 Content-Type: text/plain\nH1 X-A: 1 2\nS\n"
	    "B body\nB --bx\nB --b  \nH1 X-B: 3\nS\nB b2\nB --b--\nB epi\n");
	/* an attached message: its header is class 2, then its body; a
	 * multipart inside it; the outer boundary ends the inner one */
	ATF_CHECK_STREQ(run(" multipart/mixed; boundary=o",
	    "--o\nContent-Type: message/rfc822\n\nSubject: in\n"
	    "Content-Type: multipart/alternative; boundary=i\n\n--i\n"
	    "X-I: 1\n\ninner\n--o--\nafter\n"),
	    "S\nB --o\nH1 Content-Type: message/rfc822\nH2 Subject: in\n"
	    "H2 Content-Type: multipart/alternative; boundary=i\nS\nB --i\n"
	    "H1 X-I: 1\nS\nB inner\nB --o--\nB after\n");
	/* white space before the colon */
	ATF_CHECK_STREQ(run(" multipart/mixed; boundary=b",
	    "--b\nContent-Type : message/rfc822\n\nFrom: y\n\nz\n"),
	    "S\nB --b\nH1 Content-Type : message/rfc822\nH2 From: y\nS\nB z\n");
	/* the top level is an attached message */
	ATF_CHECK_STREQ(run(" message/rfc822", "From: x\n\nbody\n"),
	    "H2 From: x\nS\nB body\n");
	/* a part header ended by a line that is not a header; a header at
	 * the end of the content; the 60-byte cut */
	ATF_CHECK_STREQ(run(" multipart/mixed; boundary=b",
	    "--b\nX-A: 1\nnot a header\n--b\nX-Long: 12345678901234567890123456789012345678901234567890123456789\n"),
	    "S\nB --b\nH1 X-A: 1\nS\nB not a header\nB --b\n"
	    "H1 X-Long: 1234567890123456789012345678901234567890123456789012\n");
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(mime_names);
ATF_TC_BODY(mime_names, tc)
{
	ATF_CHECK(cleanup_mime_is_header("Content-Type: x", 15));
	ATF_CHECK(cleanup_mime_is_header("content-transfer-encoding: 7bit", 31));
	ATF_CHECK(cleanup_mime_is_header("MIME-Version: 1.0", 17));
	ATF_CHECK(cleanup_mime_is_header("Mime-Version : 1.0", 18));
	ATF_CHECK(!cleanup_mime_is_header("MIME-Versionx: 1.0", 18));
	ATF_CHECK(!cleanup_mime_is_header("Subject: Content-Type", 21));
	ATF_CHECK(!cleanup_mime_is_header("Content", 7));
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, actions);
	ATF_TP_ADD_TC(tp, content_type);
	ATF_TP_ADD_TC(tp, reader);
	ATF_TP_ADD_TC(tp, mime_names);
	return atf_no_error();
}
