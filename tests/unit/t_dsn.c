/* Unit tests for libglobal/dsn (status codes, dates) and dsn_notice
 * (requests to the bounce daemon). */
#include <atf-c.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dsn.h"
#include "dsn_notice.h"
#include "qfile.h"
#include "str.h"

#define QID "4QMZ7X2KCB7H"

ATF_TC_WITHOUT_HEAD(status_valid);
ATF_TC_BODY(status_valid, tc)
{
	static const char *const good[] = { "2.0.0", "4.4.1", "5.1.1",
		"5.999.999", "4.0.10", "2.6.0" };
	static const char *const bad[] = { "", "5", "5.1", "5.1.", "3.0.0",
		"6.1.1", "5.01.1", "5.1.01", "5.1000.1", "5.1.1 ", " 5.1.1",
		"5..1", "5.a.1", "51.1.1", "5.1.1.1", "x.1.1" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ATF_CHECK_MSG(dsn_status_valid(good[i]), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ATF_CHECK_MSG(!dsn_status_valid(bad[i]), "\"%s\"", bad[i]);
	ATF_CHECK(!dsn_status_valid(NULL));
	ATF_CHECK(dsn_status_valid_len("5.1.1xyz", 5));
}

ATF_TC_WITHOUT_HEAD(status_in_reply);
ATF_TC_BODY(status_in_reply, tc)
{
	char out[DSN_STATUS_SIZE];

	ATF_CHECK_EQ(dsn_status_in_reply("550 5.1.1 no such user", out), 9);
	ATF_CHECK_STREQ(out, "5.1.1");
	ATF_CHECK_EQ(dsn_status_in_reply("421-4.7.0 try later", out), 9);
	ATF_CHECK_STREQ(out, "4.7.0");
	ATF_CHECK_EQ(dsn_status_in_reply("5.2.2 mailbox full", out), 5);
	ATF_CHECK_STREQ(out, "5.2.2");
	ATF_CHECK_EQ(dsn_status_in_reply("250 2.0.0", out), 9);
	/* the class must match the reply code */
	ATF_CHECK_EQ(dsn_status_in_reply("550 4.1.1 odd", out), 0);
	ATF_CHECK_EQ(dsn_status_in_reply("550 no code here", out), 0);
	ATF_CHECK_EQ(dsn_status_in_reply("550 5.1.1x", out), 0);
	ATF_CHECK_EQ(dsn_status_in_reply("", out), 0);
	ATF_CHECK_STREQ(dsn_status_for_smtp(250), "2.0.0");
	ATF_CHECK_STREQ(dsn_status_for_smtp(451), "4.0.0");
	ATF_CHECK_STREQ(dsn_status_for_smtp(554), "5.0.0");
	ATF_CHECK_STREQ(dsn_status_for_smtp(999), "4.0.0");
	ATF_CHECK_STREQ(dsn_status_for_smtp(0), "4.0.0");
}

ATF_TC_WITHOUT_HEAD(date);
ATF_TC_BODY(date, tc)
{
	str_t d = STR_INIT;

	setenv("TZ", "UTC", 1);
	tzset();
	dsn_rfc822_date(1767225600, &d);	/* 2026-01-01 00:00:00 UTC */
	ATF_CHECK_STREQ(str_cstr(&d), "Thu, 1 Jan 2026 00:00:00 +0000");
	str_reset(&d);
	setenv("TZ", "EST5", 1);
	tzset();
	dsn_rfc822_date(1767225600, &d);
	ATF_CHECK_STREQ(str_cstr(&d), "Wed, 31 Dec 2025 19:00:00 -0500");
	str_reset(&d);
	setenv("TZ", "IST-5:30", 1);
	tzset();
	dsn_rfc822_date(1767225600, &d);
	ATF_CHECK_STREQ(str_cstr(&d), "Thu, 1 Jan 2026 05:30:00 +0530");
	str_release(&d);
}

static sl_rec_t mkrec(const char *addr, int64_t off, dlv_action_t act,
    const char *status, const char *reason)
{
	sl_rec_t r;

	memset(&r, 0, sizeof(r));
	r.rcpt.address = (char *)addr;
	r.rcpt.offset = off;
	r.st.action = act;
	bcopy_str(r.st.status, sizeof(r.st.status), status);
	r.st.reason = (char *)reason;
	r.time = 1767225600;
	return r;
}

static int decode_notice(const str_t *buf, dsn_notice_req_t *req, str_t *err)
{
	attr_reader_t *r = dsn_notice_reader_new();
	size_t used;
	int rc = -1;

	memset(req, 0, sizeof(*req));
	if (attr_reader_feed(r, buf->buf, buf->len, &used) == ATTR_DONE) {
		attr_msg_t *m = attr_reader_take(r);
		rc = dsn_notice_decode(m, req, err);
		attr_msg_free(m);
	} else {
		str_set(err, attr_reader_error(r));
	}
	attr_reader_free(r);
	return rc;
}

ATF_TC_WITHOUT_HEAD(notice_round_trip);
ATF_TC_BODY(notice_round_trip, tc)
{
	dsn_notice_req_t req, got;
	str_t buf = STR_INIT, err = STR_INIT;
	sl_rec_t r = mkrec("bob@example.net", 170, DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");

	r.rcpt.notify = DSN_NOTIFY_SUCCESS;
	r.st.relay = (char *)"local";
	dsn_notice_init(&req, DSN_NOTICE_SUCCESS, "active", QID, DSN_N_NO_LOG);
	dsn_notice_add(&req, &r);
	ATF_REQUIRE_MSG(dsn_notice_encode(&req, &buf, &err) == 0, "%s",
	    str_cstr(&err));
	ATF_REQUIRE_MSG(decode_notice(&buf, &got, &err) == 0, "%s",
	    str_cstr(&err));
	ATF_CHECK_EQ(got.kind, DSN_NOTICE_SUCCESS);
	ATF_CHECK_STREQ(got.queue, "active");
	ATF_CHECK_STREQ(got.queue_id, QID);
	ATF_CHECK_EQ(got.flags, DSN_N_NO_LOG);
	ATF_REQUIRE_EQ(got.nrec, 1);
	ATF_CHECK_STREQ(got.rec[0].rcpt.address, "bob@example.net");
	ATF_CHECK_EQ(got.rec[0].rcpt.notify, DSN_NOTIFY_SUCCESS);
	ATF_CHECK_STREQ(got.rec[0].st.relay, "local");
	ATF_CHECK_EQ(got.rec[0].time, 1767225600);
	dsn_notice_free(&got);
	dsn_notice_free(&req);

	/* without inline records */
	str_reset(&buf);
	dsn_notice_init(&req, DSN_NOTICE_BOUNCE, "deferred", QID, 0);
	ATF_REQUIRE(dsn_notice_encode(&req, &buf, &err) == 0);
	ATF_REQUIRE(decode_notice(&buf, &got, &err) == 0);
	ATF_CHECK_EQ(got.kind, DSN_NOTICE_BOUNCE);
	ATF_CHECK_EQ(got.nrec, 0);
	dsn_notice_free(&got);
	dsn_notice_free(&req);

	/* invalid requests */
	dsn_notice_init(&req, DSN_NOTICE_DELAY, "nosuch", QID, 0);
	ATF_CHECK_EQ(dsn_notice_encode(&req, &buf, &err), -1);
	dsn_notice_free(&req);
	dsn_notice_init(&req, DSN_NOTICE_DELAY, "active", "bad", 0);
	ATF_CHECK_EQ(dsn_notice_encode(&req, &buf, &err), -1);
	dsn_notice_free(&req);
	dsn_notice_init(&req, DSN_NOTICE_DELAY, "active", QID, 64);
	ATF_CHECK_EQ(dsn_notice_encode(&req, &buf, &err), -1);
	dsn_notice_free(&req);
	dsn_notice_init(&req, DSN_NOTICE_BOUNCE, "active", QID, 0);
	r.st.reason = (char *)"";
	dsn_notice_add(&req, &r);
	ATF_CHECK_EQ(dsn_notice_encode(&req, &buf, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "rcpt[0].reason"), "%s",
	    str_cstr(&err));
	dsn_notice_free(&req);
	str_set(&buf, "S request 5:shout\nS queue 6:active\nS queue_id 12:"
	    QID "\n.\n");
	ATF_CHECK_EQ(decode_notice(&buf, &got, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "unknown kind"), "%s",
	    str_cstr(&err));
	dsn_notice_free(&got);
	str_release(&buf);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(notice_reply);
ATF_TC_BODY(notice_reply, tc)
{
	static const struct {
		const char *wire;
		int ok;
	} cases[] = {
		{ "I status 0\nS reason 4:sent\nS notice_id 12:" QID "\n.\n", 1 },
		{ "I status -1\n.\n", 1 },
		{ "I status 2\n.\n", 0 },
		{ "I status 0\nS notice_id 3:../\n.\n", 0 },
		{ "S reason 1:x\n.\n", 0 },
	};
	str_t buf = STR_INIT, err = STR_INIT;

	dsn_notice_reply_encode(0, "queued\nas", QID, &buf);
	for (size_t i = 0; i <= sizeof(cases) / sizeof(cases[0]); i++) {
		attr_reader_t *r = dsn_notice_reply_reader_new();
		dsn_notice_reply_t rep;
		size_t used;
		int rc = -1;
		if (i > 0)
			str_set(&buf, cases[i - 1].wire);
		memset(&rep, 0, sizeof(rep));
		if (attr_reader_feed(r, buf.buf, buf.len, &used) == ATTR_DONE) {
			attr_msg_t *m = attr_reader_take(r);
			rc = dsn_notice_reply_decode(m, &rep, &err);
			attr_msg_free(m);
		}
		if (i == 0) {
			ATF_CHECK_EQ(rc, 0);
			ATF_CHECK_STREQ(rep.reason, "queued as");
			ATF_CHECK_STREQ(rep.notice_id, QID);
		} else {
			ATF_CHECK_EQ_MSG(rc == 0, cases[i - 1].ok, "case %zu", i);
		}
		dsn_notice_reply_free(&rep);
		attr_reader_free(r);
	}
	ATF_CHECK_EQ(dsn_notice_kind_parse("delay"), DSN_NOTICE_DELAY);
	ATF_CHECK_STREQ(dsn_notice_kind_name(DSN_NOTICE_SUCCESS), "success");
	str_release(&buf);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, status_valid);
	ATF_TP_ADD_TC(tp, status_in_reply);
	ATF_TP_ADD_TC(tp, date);
	ATF_TP_ADD_TC(tp, notice_round_trip);
	ATF_TP_ADD_TC(tp, notice_reply);
	return atf_no_error();
}
