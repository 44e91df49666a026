/* local/msg: the copy every local delivery makes (From line, headers in
 * front, >From quoting, LF line ends, the mbox blank line) and the
 * Delivered-To: loop check. */
#include <atf-c.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "local/msg.h"
#include "str.h"

static int to_str(const void *data, size_t len, void *ctx)
{
	str_append(ctx, data, len);
	return 0;
}

static char *copy(const char *text, int flags, const char *sender,
    const char *dt)
{
	lmsg_t *m = lmsg_from_mem(text, strlen(text));
	lmsg_copy_t o = { flags, sender, dt, 1767225600 };
	str_t out = STR_INIT, err = STR_INIT;

	ATF_REQUIRE_EQ(lmsg_copy(m, &o, to_str, &out, &err), LMSG_OK);
	lmsg_free(m);
	str_release(&err);
	if (out.buf == NULL)
		str_set(&out, "");
	return str_steal(&out);
}

#define CHECK_COPY(text, flags, sender, dt, want) do { \
	char *_got = copy(text, flags, sender, dt); \
	ATF_CHECK_MSG(strcmp(_got, want) == 0, "got:\n[%s]\nwant:\n[%s]", \
	    _got, want); \
	free(_got); \
} while (0)

ATF_TC_WITHOUT_HEAD(plain_copy);
ATF_TC_BODY(plain_copy, tc)
{
	/* No options: the message with LF line ends. */
	CHECK_COPY("Subject: x\r\n\r\nbody\r\n", 0, "a@b", NULL,
	    "Subject: x\n\nbody\n");
	/* A last line without its end stays without one. */
	CHECK_COPY("Subject: x\n\nno end", 0, "a@b", NULL,
	    "Subject: x\n\nno end");
	/* From lines untouched without quoting. */
	CHECK_COPY("S: x\n\nFrom here\n", 0, "a@b", NULL, "S: x\n\nFrom here\n");
	CHECK_COPY("", 0, "a@b", NULL, "");
}

ATF_TC_WITHOUT_HEAD(headers_in_front);
ATF_TC_BODY(headers_in_front, tc)
{
	CHECK_COPY("Subject: x\n\nbody\n", LMSG_RETURN_PATH, "alice@example.org",
	    "bob@example.net",
	    "Return-Path: <alice@example.org>\nDelivered-To: bob@example.net\n"
	    "Subject: x\n\nbody\n");
	/* The null sender; a local part that needs quotes. */
	CHECK_COPY("S: x\n\nb\n", LMSG_RETURN_PATH, "", "john doe@example.net",
	    "Return-Path: <>\nDelivered-To: \"john doe\"@example.net\nS: x\n\nb\n");
}

ATF_TC_WITHOUT_HEAD(mbox_form);
ATF_TC_BODY(mbox_form, tc)
{
	str_t from = STR_INIT;
	char want[512];

	lmsg_from_line("alice@example.org", 1767225600, &from);
	ATF_REQUIRE(strncmp(from.buf, "From alice@example.org ", 23) == 0);
	/* asctime layout: "Www Mmm dd hh:mm:ss yyyy" */
	ATF_CHECK_EQ(from.len, 23 + 24 + 1);
	ATF_CHECK(from.buf[from.len - 1] == '\n');
	snprintf(want, sizeof(want), "%s"
	    "Return-Path: <alice@example.org>\n"
	    "Subject: x\n\n>From the start\n>>From quoted before\n"
	    " From indented\nFromage\n>>>From x\n>>From\n\n", from.buf);
	CHECK_COPY("Subject: x\n\nFrom the start\n>From quoted before\n"
	    " From indented\nFromage\n>>From x\n>>From\n",
	    LMSG_FROM_LINE | LMSG_QUOTE_FROM | LMSG_BLANK_END | LMSG_RETURN_PATH,
	    "alice@example.org", NULL, want);
	/* A message without a final LF still ends with one blank line. */
	str_reset(&from);
	lmsg_from_line("", 1767225600, &from);
	ATF_CHECK(strncmp(from.buf, "From MAILER-DAEMON ", 19) == 0);
	snprintf(want, sizeof(want), "%sS: x\n\nlast\n\n", from.buf);
	CHECK_COPY("S: x\n\nlast", LMSG_FROM_LINE | LMSG_BLANK_END, "", NULL,
	    want);
	/* A space in the sender does not break the From line. */
	str_reset(&from);
	lmsg_from_line("john doe@x", 0, &from);
	ATF_CHECK(strncmp(from.buf, "From \"john_doe\"@x ", 18) == 0);
	str_release(&from);
}

ATF_TC_WITHOUT_HEAD(long_lines);
ATF_TC_BODY(long_lines, tc)
{
	/* A line longer than a read piece is copied whole, quoted once. */
	str_t in = STR_INIT, want = STR_INIT;

	str_cat(&in, "S: x\n\nFrom ");
	str_cat(&want, "S: x\n\n>From ");
	for (int i = 0; i < 30000; i++) {
		str_putc(&in, 'a' + i % 26);
		str_putc(&want, 'a' + i % 26);
	}
	str_cat(&in, "\nFrom y\n");
	str_cat(&want, "\n>From y\n");
	CHECK_COPY(in.buf, LMSG_QUOTE_FROM, "a@b", NULL, want.buf);
	str_release(&in);
	str_release(&want);
}

static int failing(const void *data, size_t len, void *ctx)
{
	(void)data;
	(void)len;
	(void)ctx;
	errno = ENOSPC;
	return -1;
}

ATF_TC_WITHOUT_HEAD(sink_error);
ATF_TC_BODY(sink_error, tc)
{
	lmsg_t *m = lmsg_from_mem("S: x\n\nb\n", 8);
	lmsg_copy_t o = { 0, "", NULL, 0 };
	str_t err = STR_INIT;

	errno = 0;
	ATF_CHECK_EQ(lmsg_copy(m, &o, failing, NULL, &err), LMSG_EWRITE);
	ATF_CHECK_EQ(errno, ENOSPC);
	lmsg_free(m);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(delivered_to);
ATF_TC_BODY(delivered_to, tc)
{
	const char *text =
	    "Received: from x\n"
	    "Delivered-To: Alice@Example.ORG\n"
	    "delivered-to:\n <bob@example.org>\n"
	    "Subject: Delivered-To: carol@example.org\n"
	    "\n"
	    "Delivered-To: dave@example.org\n";
	lmsg_t *m = lmsg_from_mem(text, strlen(text));

	ATF_CHECK_EQ(lmsg_has_delivered_to(m, "alice@example.org"), 1);
	ATF_CHECK_EQ(lmsg_has_delivered_to(m, "ALICE@example.org"), 1);
	ATF_CHECK_EQ(lmsg_has_delivered_to(m, "bob@example.org"), 1);
	/* Not a Delivered-To header; in the body. */
	ATF_CHECK_EQ(lmsg_has_delivered_to(m, "carol@example.org"), 0);
	ATF_CHECK_EQ(lmsg_has_delivered_to(m, "dave@example.org"), 0);
	ATF_CHECK_EQ(lmsg_has_delivered_to(m, "alice"), 0);
	lmsg_free(m);

	/* A quoted local part compares in its external form. */
	text = "Delivered-To: \"john doe\"@example.org\n\nb\n";
	m = lmsg_from_mem(text, strlen(text));
	ATF_CHECK_EQ(lmsg_has_delivered_to(m, "john doe@example.org"), 1);
	lmsg_free(m);

	/* No header at all: the body is not looked at. */
	text = "just a body line\nDelivered-To: x@y\n";
	m = lmsg_from_mem(text, strlen(text));
	ATF_CHECK_EQ(lmsg_has_delivered_to(m, "x@y"), 0);
	lmsg_free(m);
}

ATF_TC_WITHOUT_HEAD(status);
ATF_TC_BODY(status, tc)
{
	lstatus_t a = LSTATUS_INIT, b = LSTATUS_INIT;

	ATF_CHECK_EQ(lstatus_class(&a), 0);
	lstatus_set(&a, "4.2.2", "mailbox %s", "full");
	ATF_CHECK_EQ(lstatus_class(&a), '4');
	lstatus_copy(&b, &a);
	ATF_CHECK_STREQ(b.dsn, "4.2.2");
	ATF_CHECK_STREQ(str_cstr(&b.text), "mailbox full");
	lstatus_free(&a);
	lstatus_free(&b);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, plain_copy);
	ATF_TP_ADD_TC(tp, headers_in_front);
	ATF_TP_ADD_TC(tp, mbox_form);
	ATF_TP_ADD_TC(tp, long_lines);
	ATF_TP_ADD_TC(tp, sink_error);
	ATF_TP_ADD_TC(tp, delivered_to);
	ATF_TP_ADD_TC(tp, status);
	return atf_no_error();
}
