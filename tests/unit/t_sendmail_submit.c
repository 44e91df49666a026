/* Unit tests for the local submission helpers shared by sendmail,
 * postdrop and pickup (postdrop/submit.c): option values, addresses,
 * authorized_submit_users, the stream schema and the header scan. */
#include <atf-c.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attr.h"
#include "dsn_notify.h"
#include "pconfig.h"
#include "postdrop/hdr_scan.h"
#include "submit.h"
#include "qfile.h"
#include "str.h"

/* sendmail -N reads its list with the one NOTIFY parser. */
static int notify_list(const char *s)
{
	return dsn_notify_parse(s, strlen(s), DSN_NOTIFY_LIST, NULL);
}

ATF_TC_WITHOUT_HEAD(notify_ret_envid);
ATF_TC_BODY(notify_ret_envid, tc)
{
	str_t x = STR_INIT;

	ATF_CHECK_EQ(notify_list("never"), DSN_NOTIFY_NEVER);
	ATF_CHECK_EQ(notify_list("NEVER"), DSN_NOTIFY_NEVER);
	ATF_CHECK_EQ(notify_list("success,delay"),
	    DSN_NOTIFY_SUCCESS | DSN_NOTIFY_DELAY);
	ATF_CHECK_EQ(notify_list(" Failure , success "),
	    DSN_NOTIFY_SUCCESS | DSN_NOTIFY_FAILURE);
	ATF_CHECK_EQ(notify_list("never,success"), -1);
	ATF_CHECK_EQ(notify_list(""), -1);
	ATF_CHECK_EQ(notify_list(","), -1);
	ATF_CHECK_EQ(notify_list("sometimes"), -1);

	ATF_CHECK_EQ(submit_parse_ret("full"), QF_RET_FULL);
	ATF_CHECK_EQ(submit_parse_ret("HDRS"), QF_RET_HDRS);
	ATF_CHECK_EQ(submit_parse_ret("body"), -1);

	ATF_CHECK(submit_envid_ok("abc+1=x", &x));
	ATF_CHECK_STREQ(str_cstr(&x), "abc+2B1+3Dx");
	ATF_CHECK(!submit_envid_ok("a b", NULL));
	ATF_CHECK(!submit_envid_ok("", NULL));
	ATF_CHECK(!submit_envid_ok("caf\xc3\xa9", NULL));
	/* 100 bytes once encoded is the limit. */
	char buf[120];
	memset(buf, 'e', 100);
	buf[100] = 0;
	ATF_CHECK(submit_envid_ok(buf, NULL));
	buf[99] = '+';		/* "+2B": 102 bytes */
	ATF_CHECK(!submit_envid_ok(buf, NULL));

	ATF_CHECK(submit_full_name_ok("J\xc3\xb6rg M\xc3\xbcller", 13));
	ATF_CHECK(!submit_full_name_ok("a\nBcc: x", 8));
	ATF_CHECK(!submit_full_name_ok("a\tb", 3));
	memset(buf, 'n', sizeof(buf));
	ATF_CHECK(submit_full_name_ok(buf, sizeof(buf)));
	str_release(&x);
}

ATF_TC_WITHOUT_HEAD(addresses);
ATF_TC_BODY(addresses, tc)
{
	str_t out = STR_INIT;
	submit_err_t err;

	ATF_CHECK(submit_addr("alice@example.org", 17, true, &out, &err));
	ATF_CHECK_STREQ(str_cstr(&out), "alice@example.org");
	ATF_CHECK(submit_addr("", 0, true, &out, &err));
	ATF_CHECK_STREQ(str_cstr(&out), "");
	ATF_CHECK(submit_addr("bob", 3, false, &out, &err));
	ATF_CHECK_STREQ(str_cstr(&out), "bob");
	ATF_CHECK(submit_addr("\"john doe\"@x.org", 16, false, &out, &err));
	ATF_CHECK_STREQ(str_cstr(&out), "john doe@x.org");

	ATF_CHECK(!submit_addr("", 0, false, &out, &err));
	ATF_CHECK_EQ(err.status, EX_NOUSER);
	ATF_CHECK(strstr(err.text, "empty recipient") != NULL);
	ATF_CHECK(!submit_addr("a b@x.org", 9, false, &out, &err));
	ATF_CHECK_EQ(err.status, EX_NOUSER);
	ATF_CHECK_MSG(strstr(err.text, "bad recipient address syntax: <a b@x.org>")
	    != NULL, "%s", err.text);
	ATF_CHECK(!submit_addr("x@@y", 4, true, &out, &err));
	ATF_CHECK(strstr(err.text, "bad sender address") != NULL);
	ATF_CHECK(!submit_addr("x@y\0z", 5, false, &out, &err));
	/* The reason is one printable line, whatever the input. */
	ATF_CHECK(!submit_addr("a\nb@c", 5, false, &out, &err));
	ATF_CHECK(strchr(err.text, '\n') == NULL);
	str_release(&out);
}

static void load(const char *text)
{
	ATF_REQUIRE_MSG(pconfig_load_text(text, "main.cf") == 0, "%s",
	    pconfig_errors());
}

ATF_TC_WITHOUT_HEAD(authorized_users);
ATF_TC_BODY(authorized_users, tc)
{
	struct passwd *pw = getpwuid(getuid());
	str_t why = STR_INIT, cf = STR_INIT;

	ATF_REQUIRE(pw != NULL);
	load("");
	ATF_CHECK_EQ(submit_user_allowed(getuid(), &why), 1);
	str_setf(&cf, "authorized_submit_users = somebody_else, %s", pw->pw_name);
	load(str_cstr(&cf));
	ATF_CHECK_EQ(submit_user_allowed(getuid(), &why), 1);
	load("authorized_submit_users = somebody_else");
	ATF_CHECK_EQ(submit_user_allowed(getuid(), &why), 0);
	ATF_CHECK_MSG(strstr(str_cstr(&why), "is not allowed to submit mail") != NULL,
	    "%s", str_cstr(&why));
	str_setf(&cf, "authorized_submit_users = !%s, static:anyone", pw->pw_name);
	load(str_cstr(&cf));
	ATF_CHECK_EQ(submit_user_allowed(getuid(), &why), 0);
	str_setf(&cf, "authorized_submit_users = inline:{ x=1, %s=1 }", pw->pw_name);
	load(str_cstr(&cf));
	ATF_CHECK_EQ(submit_user_allowed(getuid(), &why), 1);
	load("authorized_submit_users = inline:{ x=1 }");
	ATF_CHECK_EQ(submit_user_allowed(getuid(), &why), 0);
	load("authorized_submit_users = hash:/nonexistent/table");
	ATF_CHECK_EQ(submit_user_allowed(getuid(), &why), -1);
	ATF_CHECK(strstr(str_cstr(&why), "authorized_submit_users") != NULL);
	pconfig_reset();
	str_release(&why);
	str_release(&cf);
}

/* The schema: one reader takes an envelope and then content messages. */
ATF_TC_WITHOUT_HEAD(stream_schema);
ATF_TC_BODY(stream_schema, tc)
{
	attr_reader_t *r = submit_reader();
	str_t m = STR_INIT;
	size_t used;
	attr_msg_t *msg;
	const char *s;

	attr_put_items(&m, ATTR_INT(SUBMIT_A_VERSION, 1),
	    ATTR_STR(SUBMIT_A_SENDER, "a@b"), ATTR_END);
	attr_put_list(&m, SUBMIT_A_RCPT, 2);
	attr_print(&m, ATTR_STR(SUBMIT_A_ADDRESS, "x@y"), ATTR_END);
	attr_print(&m, ATTR_STR(SUBMIT_A_ADDRESS, "z@y"), ATTR_END);
	attr_put_end(&m);
	attr_print(&m, ATTR_DATA(SUBMIT_A_DATA, "hi\n", 3), ATTR_END);
	ATF_REQUIRE_EQ(attr_reader_feed(r, m.buf, m.len, &used), ATTR_DONE);
	msg = attr_reader_take(r);
	ATF_CHECK(attr_get_str(msg, SUBMIT_A_SENDER, &s));
	attr_msg_free(msg);
	ATF_REQUIRE_EQ(attr_reader_feed(r, m.buf + used, m.len - used, &used),
	    ATTR_DONE);
	msg = attr_reader_take(r);
	ATF_CHECK(attr_find(msg, SUBMIT_A_DATA) != NULL);
	attr_msg_free(msg);

	/* Strict: an attribute the stream does not have is an error. */
	str_reset(&m);
	attr_print(&m, ATTR_STR("client_address", "1.2.3.4"), ATTR_END);
	ATF_CHECK_EQ(attr_reader_feed(r, m.buf, m.len, &used), ATTR_ERROR);
	attr_reader_reset(r);
	/* A chunk over SUBMIT_CHUNK is refused. */
	{
		char *big = calloc(1, SUBMIT_CHUNK + 1);
		str_reset(&m);
		attr_print(&m, ATTR_DATA(SUBMIT_A_DATA, big, SUBMIT_CHUNK + 1),
		    ATTR_END);
		ATF_CHECK_EQ(attr_reader_feed(r, m.buf, m.len, &used), ATTR_ERROR);
		free(big);
	}
	attr_reader_free(r);
	str_release(&m);
}

/* Feeds text to a fresh scan, whole or one byte at a time. */
static bool scan(hdr_scan_t *h, const char *text, size_t len, bool bytewise,
    size_t limit, long hops, submit_err_t *err)
{
	bool ok = true;

	hdr_scan_init(h, limit, hops);
	if (bytewise) {
		for (size_t i = 0; i < len && ok; i++)
			ok = hdr_scan_feed(h, text + i, 1, err);
	} else {
		ok = hdr_scan_feed(h, text, len, err);
	}
	if (ok)
		ok = hdr_scan_finish(h, err);
	return ok;
}

#define SCAN(h, text, bw, err) scan(h, text, sizeof(text) - 1, bw, 102400, 50, err)

ATF_TC_WITHOUT_HEAD(header_scan);
ATF_TC_BODY(header_scan, tc)
{
	hdr_scan_t h;
	submit_err_t err;
	str_t msg = STR_INIT;

	for (int bw = 0; bw < 2; bw++) {
		/* To/Cc/Bcc counted, folded lines included; bad entries too. */
		ATF_CHECK(SCAN(&h, "From: a@b\nTo: x@y,\n  Z <z@y>\r\n"
		    "Cc: w@y, bad@@y\nSubject: s\n\nTo: not@header\n", bw, &err));
		ATF_CHECK_EQ(hdr_scan_rcpts(&h)->good, 3);
		ATF_CHECK_EQ(hdr_scan_rcpts(&h)->bad, 1);
		ATF_CHECK_MSG(strstr(hdr_scan_rcpts(&h)->first_bad, "bad@@y") != NULL,
		    "%s", hdr_scan_rcpts(&h)->first_bad);
		hdr_scan_free(&h);

		/* Resent- fields win when there are any. */
		ATF_CHECK(SCAN(&h, "To: a@b, c@d\nResent-To: e@f\n\n", bw, &err));
		ATF_CHECK_EQ(hdr_scan_rcpts(&h)->good, 1);
		hdr_scan_free(&h);

		/* The header ends at a line that is not a field. */
		ATF_CHECK(SCAN(&h, "Subject: x\nthis is body\nTo: a@b\n", bw, &err));
		ATF_CHECK_EQ(hdr_scan_rcpts(&h)->good, 0);
		hdr_scan_free(&h);

		/* NUL: refused in the header, fine in the body. */
		ATF_CHECK(!SCAN(&h, "Subject: a\0b\n\n", bw, &err));
		ATF_CHECK_EQ(err.status, EX_DATAERR);
		ATF_CHECK(strstr(err.text, "NUL") != NULL);
		hdr_scan_free(&h);
		ATF_CHECK(SCAN(&h, "Subject: ab\n\nbody\0body\n", bw, &err));
		hdr_scan_free(&h);

		/* A last header line without LF is checked too. */
		ATF_CHECK(!SCAN(&h, "Subject: ab\nX: \0", bw, &err));
		hdr_scan_free(&h);
	}

	/* Hops: hopcount_limit Received: fields are a loop. */
	str_reset(&msg);
	for (int i = 0; i < 49; i++)
		str_cat(&msg, "Received: from x by y\n");
	str_cat(&msg, "\n");
	ATF_CHECK(scan(&h, msg.buf, msg.len, false, 102400, 50, &err));
	ATF_CHECK_EQ(h.received, 49);
	hdr_scan_free(&h);
	str_reset(&msg);
	for (int i = 0; i < 50; i++)
		str_cat(&msg, "received : from x by y\n");
	ATF_CHECK(!scan(&h, msg.buf, msg.len, false, 102400, 50, &err));
	ATF_CHECK_EQ(err.status, EX_DATAERR);
	ATF_CHECK(strstr(err.text, "too many hops") != NULL);
	hdr_scan_free(&h);

	/* header_size_limit: a big header is refused, also while a long
	 * line is still arriving; a big first body line is not a header. */
	str_reset(&msg);
	str_cat(&msg, "Subject: ");
	for (int i = 0; i < 2000; i++)
		str_cat(&msg, "x");
	ATF_CHECK(!scan(&h, msg.buf, msg.len, false, 1000, 50, &err));
	ATF_CHECK(strstr(err.text, "header is too big") != NULL);
	ATF_CHECK(str_len(&h.line) <= 2100);
	hdr_scan_free(&h);
	str_reset(&msg);
	for (int i = 0; i < 100000; i++)
		str_cat(&msg, "y ");
	ATF_CHECK(scan(&h, msg.buf, msg.len, true, 1000, 50, &err));
	hdr_scan_free(&h);
	str_release(&msg);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, notify_ret_envid);
	ATF_TP_ADD_TC(tp, addresses);
	ATF_TP_ADD_TC(tp, authorized_users);
	ATF_TP_ADD_TC(tp, stream_schema);
	ATF_TP_ADD_TC(tp, header_scan);
	return atf_no_error();
}
