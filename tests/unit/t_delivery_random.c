/* Randomised robustness of the delivery-protocol decoders: valid
 * messages (request, reply, status-log record, bounce request) mutated
 * thousands of times (bytes flipped, inserted, deleted, cut, regions
 * repeated) must decode to something valid or fail with a reason, never
 * crash or leak (the sanitizer build checks that).  Deterministic: a
 * fixed seed. */
#include <atf-c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "delivery.h"
#include "dsn_notice.h"
#include "qfile.h"
#include "statuslog.h"
#include "str.h"

#define QID "4QMZ7X2KCB7H"
#define ROUNDS 4000

static uint64_t seed = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return n ? (uint32_t)((seed >> 33) % n) : 0;
}

static void mutate(const str_t *in, str_t *out)
{
	static const char interesting[] = "\n.:-0123456789 SILDN\x00\xff";
	int steps = 1 + (int)rnd(3);

	str_reset(out);
	str_append(out, in->buf, in->len);
	for (int s = 0; s < steps && out->len > 0; s++) {
		size_t pos = rnd((uint32_t)out->len);
		switch (rnd(6)) {
		case 0:	/* flip */
			out->buf[pos] ^= (char)(1 << rnd(8));
			break;
		case 1:	/* replace with an interesting byte */
			out->buf[pos] = interesting[rnd(sizeof(interesting) - 1)];
			break;
		case 2: {	/* delete */
			size_t n = 1 + rnd(8);
			if (pos + n > out->len)
				n = out->len - pos;
			memmove(out->buf + pos, out->buf + pos + n,
			    out->len - pos - n);
			out->len -= n;
			out->buf[out->len] = 0;
			break;
		}
		case 3: {	/* insert */
			str_t t = STR_INIT;
			str_append(&t, out->buf, pos);
			str_putc(&t, interesting[rnd(sizeof(interesting) - 1)]);
			str_append(&t, out->buf + pos, out->len - pos);
			str_reset(out);
			str_append(out, t.buf, t.len);
			str_release(&t);
			break;
		}
		case 4:	/* cut */
			out->len = pos;
			out->buf[pos] = 0;
			break;
		default: {	/* repeat a region */
			size_t n = 1 + rnd(40);
			str_t t = STR_INIT;
			if (pos + n > out->len)
				n = out->len - pos;
			str_append(&t, out->buf, pos + n);
			str_append(&t, out->buf + pos, out->len - pos);
			str_reset(out);
			str_append(out, t.buf, t.len);
			str_release(&t);
			break;
		}
		}
	}
}

static void sample_request(dlv_request_t *req)
{
	dlv_request_init(req, "active", QID, "alice@example.org", "example.net");
	req->content_offset = 412;
	req->ret = QF_RET_FULL;
	dlv_request_add_rcpt(req, "bob@example.net", "Bob@example.net",
	    "rfc822;bob@example.net", DSN_NOTIFY_FAILURE, 170);
	dlv_request_add_rcpt(req, "eve@example.net", NULL, NULL, 0, 236);
}

/* Feeds buf to a fresh reader; on DONE runs decode. */
typedef int (*decode_fn)(const attr_msg_t *m, str_t *err, void *ctx);

static int feed(attr_reader_t *r, const str_t *buf, decode_fn fn, void *ctx,
    int *decoded)
{
	size_t used;
	str_t err = STR_INIT;
	int rc = -1;

	if (attr_reader_feed(r, buf->buf, buf->len, &used) == ATTR_DONE) {
		attr_msg_t *m = attr_reader_take(r);
		rc = fn(m, &err, ctx);
		attr_msg_free(m);
		if (rc < 0)
			ATF_CHECK_MSG(str_len(&err) > 0, "error without a reason");
		else
			(*decoded)++;
	}
	str_release(&err);
	return rc;
}

static int dec_request(const attr_msg_t *m, str_t *err, void *ctx)
{
	dlv_request_t req;
	str_t again = STR_INIT;
	int rc = dlv_request_decode(m, &req, err);
	(void)ctx;

	/* Whatever decodes must encode again (the rules are the same). */
	if (rc == 0)
		ATF_CHECK_MSG(dlv_request_encode(&req, &again, err) == 0,
		    "decoded but not encodable: %s", str_cstr(err));
	dlv_request_free(&req);
	str_release(&again);
	return rc;
}

static int dec_reply(const attr_msg_t *m, str_t *err, void *ctx)
{
	dlv_reply_t rep;
	int rc = dlv_reply_decode(m, ctx, &rep, err);

	if (rc == 0)
		for (size_t i = 0; i < rep.n; i++)
			ATF_CHECK(rep.st[i].status[0] == dlv_action_class(rep.st[i].action));
	dlv_reply_free(&rep);
	return rc;
}

static int dec_notice(const attr_msg_t *m, str_t *err, void *ctx)
{
	dsn_notice_req_t req;
	int rc = dsn_notice_decode(m, &req, err);
	(void)ctx;

	dsn_notice_free(&req);
	return rc;
}

ATF_TC_WITHOUT_HEAD(requests);
ATF_TC_BODY(requests, tc)
{
	dlv_request_t req;
	str_t good = STR_INIT, bad = STR_INIT, err = STR_INIT;
	int decoded = 0;

	sample_request(&req);
	ATF_REQUIRE(dlv_request_encode(&req, &good, &err) == 0);
	for (int i = 0; i < ROUNDS; i++) {
		attr_reader_t *r = dlv_request_reader_new();
		mutate(&good, &bad);
		feed(r, &bad, dec_request, NULL, &decoded);
		attr_reader_free(r);
	}
	/* Some mutations leave a valid request (e.g. a changed letter in a
	 * value); most do not.  Print the figure, assert nothing about it. */
	printf("requests: %d of %d mutations decoded\n", decoded, ROUNDS);
	dlv_request_free(&req);
	str_release(&good);
	str_release(&bad);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(replies);
ATF_TC_BODY(replies, tc)
{
	dlv_request_t req;
	dlv_reply_t rep;
	str_t good = STR_INIT, bad = STR_INIT;
	int decoded = 0;

	sample_request(&req);
	dlv_reply_init(&rep, &req);
	dlv_status_set(&rep, 0, DLV_ACT_FAILED, "5.1.1", "mx[192.0.2.1]:25",
	    "550 5.1.1 no such user");
	dlv_status_diag(&rep, 0, "smtp", "550 5.1.1 no such user", "mx");
	dlv_status_set(&rep, 1, DLV_ACT_DELIVERED, "2.0.0", "mx", "ok");
	dlv_reply_set_flags(&rep, DLV_R_CONN_FAIL, "refused");
	dlv_reply_encode(&rep, &good);
	for (int i = 0; i < ROUNDS; i++) {
		attr_reader_t *r = dlv_reply_reader_new();
		mutate(&good, &bad);
		feed(r, &bad, dec_reply, &req, &decoded);
		attr_reader_free(r);
	}
	printf("replies: %d of %d mutations decoded\n", decoded, ROUNDS);
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	str_release(&good);
	str_release(&bad);
}

ATF_TC_WITHOUT_HEAD(notices_and_logs);
ATF_TC_BODY(notices_and_logs, tc)
{
	dsn_notice_req_t req;
	sl_rec_t rec;
	str_t good = STR_INIT, bad = STR_INIT, err = STR_INIT, one = STR_INIT;
	int decoded = 0;

	memset(&rec, 0, sizeof(rec));
	rec.rcpt.address = (char *)"bob@example.net";
	rec.rcpt.offset = 170;
	rec.st.action = DLV_ACT_FAILED;
	bcopy_str(rec.st.status, sizeof(rec.st.status), "5.1.1");
	rec.st.reason = (char *)"no such user";
	rec.time = 1767225600;
	dsn_notice_init(&req, DSN_NOTICE_BOUNCE, "active", QID, DSN_N_NO_LOG);
	dsn_notice_add(&req, &rec);
	dsn_notice_add(&req, &rec);
	ATF_REQUIRE(dsn_notice_encode(&req, &good, &err) == 0);
	for (int i = 0; i < ROUNDS; i++) {
		attr_reader_t *r = dsn_notice_reader_new();
		mutate(&good, &bad);
		feed(r, &bad, dec_notice, NULL, &decoded);
		attr_reader_free(r);
	}
	printf("notices: %d of %d mutations decoded\n", decoded, ROUNDS);

	/* status logs: mutated files read back */
	statuslog_encode(&rec, &one);
	str_reset(&good);
	for (int i = 0; i < 3; i++)
		str_append(&good, one.buf, one.len);
	for (int i = 0; i < ROUNDS / 4; i++) {
		FILE *f = fopen("log", "w");
		sl_reader_t *rd;
		sl_rec_t got;
		int res, n = 0;
		ATF_REQUIRE(f);
		mutate(&good, &bad);
		ATF_REQUIRE(fwrite(bad.buf, 1, bad.len, f) == bad.len || bad.len == 0);
		fclose(f);
		rd = statuslog_open_path("log", &err);
		ATF_REQUIRE(rd);
		while ((res = statuslog_next(rd, &got, &err)) == 1 && n < 10)
			n++;
		ATF_CHECK(n <= 4);
		statuslog_close(rd);
	}
	dsn_notice_free(&req);
	str_release(&good);
	str_release(&bad);
	str_release(&err);
	str_release(&one);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, requests);
	ATF_TP_ADD_TC(tp, replies);
	ATF_TP_ADD_TC(tp, notices_and_logs);
	return atf_no_error();
}
