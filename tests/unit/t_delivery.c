/* Unit tests for libglobal/delivery: request and reply round trips,
 * validation of malformed input, the agent loop and the blocking client
 * over a socketpair, the reply builders and the log line. */
#include <atf-c.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attr.h"
#include "delivery.h"
#include "file.h"
#include "log.h"
#include "qfile.h"
#include "str.h"

#define QID "4QMZ7X2KCB7H"

static void sample_request(dlv_request_t *req)
{
	dlv_request_init(req, "active", QID, "alice@example.org", "example.net");
	req->content_offset = 412;
	req->content_size = 2048;
	req->arrival = 1767225600123456LL;
	req->active = 1767225601000000LL;
	free(req->envid);
	req->envid = strdup("env-1");
	req->ret = QF_RET_HDRS;
	req->flags = DLV_F_8BITMIME;
	dlv_request_add_rcpt(req, "bob@example.net", "Bob@Example.NET",
	    "rfc822;bob@example.net", DSN_NOTIFY_FAILURE | DSN_NOTIFY_DELAY, 170);
	dlv_request_add_rcpt(req, "eve@example.net", NULL, NULL, 0, 236);
	dlv_request_add_rcpt(req, "j\xc3\xb6rg@example.net", NULL, NULL,
	    DSN_NOTIFY_NEVER, 300);
}

/* Decodes buf with reader r; returns the message or NULL (err set). */
static attr_msg_t *read_msg(attr_reader_t *r, const str_t *buf, str_t *err)
{
	size_t used = 0;
	enum attr_result res = attr_reader_feed(r, buf->buf, buf->len, &used);

	if (res != ATTR_DONE) {
		str_setf(err, "reader: %d %s", res, attr_reader_error(r));
		return NULL;
	}
	ATF_CHECK_EQ(used, buf->len);
	return attr_reader_take(r);
}

static int decode_request(const str_t *buf, dlv_request_t *req, str_t *err)
{
	attr_reader_t *r = dlv_request_reader_new();
	attr_msg_t *m = read_msg(r, buf, err);
	int rc = -1;

	memset(req, 0, sizeof(*req));
	if (m) {
		rc = dlv_request_decode(m, req, err);
		attr_msg_free(m);
	}
	attr_reader_free(r);
	return rc;
}

static int decode_reply(const str_t *buf, const dlv_request_t *req,
    dlv_reply_t *rep, str_t *err)
{
	attr_reader_t *r = dlv_reply_reader_new();
	attr_msg_t *m = read_msg(r, buf, err);
	int rc = -1;

	memset(rep, 0, sizeof(*rep));
	if (m) {
		rc = dlv_reply_decode(m, req, rep, err);
		attr_msg_free(m);
	}
	attr_reader_free(r);
	return rc;
}

ATF_TC_WITHOUT_HEAD(request_round_trip);
ATF_TC_BODY(request_round_trip, tc)
{
	dlv_request_t req, got;
	str_t buf = STR_INIT, err = STR_INIT;

	sample_request(&req);
	ATF_REQUIRE_MSG(dlv_request_encode(&req, &buf, &err) == 0, "%s",
	    str_cstr(&err));
	ATF_REQUIRE_MSG(decode_request(&buf, &got, &err) == 0, "%s",
	    str_cstr(&err));
	ATF_CHECK_STREQ(got.queue, "active");
	ATF_CHECK_STREQ(got.queue_id, QID);
	ATF_CHECK_EQ(got.content_offset, 412);
	ATF_CHECK_EQ(got.content_size, 2048);
	ATF_CHECK_EQ(got.arrival, 1767225600123456LL);
	ATF_CHECK_EQ(got.active, 1767225601000000LL);
	ATF_CHECK_EQ(got.active, 1767225601000000LL);
	ATF_CHECK_STREQ(got.sender, "alice@example.org");
	ATF_CHECK_STREQ(got.nexthop, "example.net");
	ATF_CHECK_STREQ(got.envid, "env-1");
	ATF_CHECK_EQ(got.ret, QF_RET_HDRS);
	ATF_CHECK_EQ(got.flags, DLV_F_8BITMIME);
	ATF_REQUIRE_EQ(got.nrcpt, 3);
	ATF_CHECK_STREQ(got.rcpt[0].address, "bob@example.net");
	ATF_CHECK_STREQ(got.rcpt[0].orig, "Bob@Example.NET");
	ATF_CHECK_STREQ(got.rcpt[0].orcpt, "rfc822;bob@example.net");
	ATF_CHECK_EQ(got.rcpt[0].notify, DSN_NOTIFY_FAILURE | DSN_NOTIFY_DELAY);
	ATF_CHECK_EQ(got.rcpt[0].offset, 170);
	/* absent optional strings decode as "" */
	ATF_CHECK_STREQ(got.rcpt[1].orig, "");
	ATF_CHECK_STREQ(got.rcpt[1].orcpt, "");
	ATF_CHECK_EQ(got.rcpt[1].notify, 0);
	ATF_CHECK_STREQ(got.rcpt[2].address, "j\xc3\xb6rg@example.net");
	ATF_CHECK_EQ(got.rcpt[2].notify, DSN_NOTIFY_NEVER);
	/* the null sender */
	dlv_request_free(&got);
	free(req.sender);
	req.sender = strdup("");
	str_reset(&buf);
	ATF_REQUIRE(dlv_request_encode(&req, &buf, &err) == 0);
	ATF_REQUIRE(decode_request(&buf, &got, &err) == 0);
	ATF_CHECK_STREQ(got.sender, "");
	dlv_request_free(&got);
	dlv_request_free(&req);
	str_release(&buf);
	str_release(&err);
}

/* Every rule the encoder enforces; the decoder enforces the same rules
 * (checked by patching an encoded good request where possible). */
ATF_TC_WITHOUT_HEAD(request_invalid);
ATF_TC_BODY(request_invalid, tc)
{
	static const struct {
		int what;
		const char *expect;
	} cases[] = {
		{ 0, "queue: unknown" },
		{ 1, "queue_id: invalid" },
		{ 2, "offset: negative" },
		{ 3, "nexthop: empty" },
		{ 4, "flags: unknown bits" },
		{ 5, "ret: invalid" },
		{ 6, "rcpt[1].notify: invalid" },
		{ 7, "offset 170 appears twice" },
		{ 8, "rcpt: 0 recipients" },
		{ 9, "rcpt[0].address: forbidden byte 0x0a" },
		{ 10, "rcpt[1].address: empty" },
		{ 11, "sender: forbidden byte 0x0d" },
		{ 12, "rcpt[0].address: 2049 octets" },
		{ 13, "rcpt: 5001 recipients" },
		{ 14, "rcpt[0].offset: negative" },
		{ 15, "nexthop: 513 octets" },
		{ 16, "exceeds 16777216: send fewer recipients" },
		{ 17, "active: negative" },
	};
	str_t buf = STR_INIT, err = STR_INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dlv_request_t req;
		sample_request(&req);
		switch (cases[i].what) {
		case 0: free(req.queue); req.queue = strdup("nosuch"); break;
		case 1: free(req.queue_id); req.queue_id = strdup("../etc"); break;
		case 2: req.content_offset = -1; break;
		case 3: free(req.nexthop); req.nexthop = strdup(""); break;
		case 17: req.active = -1; break;
		case 4: req.flags = 1 << 10; break;
		case 5: req.ret = 3; break;
		case 6: req.rcpt[1].notify = DSN_NOTIFY_NEVER | DSN_NOTIFY_SUCCESS; break;
		case 7: req.rcpt[2].offset = 170; break;
		case 8:
			for (size_t j = 0; j < req.nrcpt; j++) {
				free(req.rcpt[j].address);
				free(req.rcpt[j].orig);
				free(req.rcpt[j].orcpt);
			}
			req.nrcpt = 0;
			break;
		case 9: free(req.rcpt[0].address);
			req.rcpt[0].address = strdup("a\nb@x"); break;
		case 10: free(req.rcpt[1].address);
			req.rcpt[1].address = strdup(""); break;
		case 11: free(req.sender); req.sender = strdup("a\r@x"); break;
		case 12: {
			char *big = malloc(2050);
			memset(big, 'a', 2049);
			big[2049] = 0;
			free(req.rcpt[0].address);
			req.rcpt[0].address = big;
			break;
		}
		case 13:
			for (int j = 0; j < 4998; j++)
				dlv_request_add_rcpt(&req, "x@y", NULL, NULL, 0,
				    1000 + j);
			break;
		case 14: req.rcpt[0].offset = -5; break;
		case 16: {
			char big[2049];
			memset(big, 'a', 2048);
			big[2048] = 0;
			for (int j = 0; j < 4000; j++)
				dlv_request_add_rcpt(&req, big, big, big, 0,
				    1000 + j);
			break;
		}
		case 15: {
			char *big = malloc(514);
			memset(big, 'h', 513);
			big[513] = 0;
			free(req.nexthop);
			req.nexthop = big;
			break;
		}
		}
		str_reset(&buf);
		str_reset(&err);
		ATF_CHECK_EQ_MSG(dlv_request_encode(&req, &buf, &err), -1,
		    "case %zu encoded", i);
		ATF_CHECK_MSG(strstr(str_cstr(&err), cases[i].expect) != NULL,
		    "case %zu: \"%s\" lacks \"%s\"", i, str_cstr(&err),
		    cases[i].expect);
		dlv_request_free(&req);
	}
	str_release(&buf);
	str_release(&err);
}

/* Hand-made wire messages the request decoder must refuse. */
ATF_TC_WITHOUT_HEAD(request_wire_errors);
ATF_TC_BODY(request_wire_errors, tc)
{
	static const struct {
		const char *wire;
		const char *expect;
	} cases[] = {
		/* unknown attribute: strict */
		{ "S queue 6:active\nS queue_id 12:" QID "\nL offset 1\n"
		  "S sender 0:\nS nexthop 1:x\nS color 3:red\nN rcpt 1\n"
		  "S address 3:a@b\nL offset 9\n.\n.\n", "color" },
		/* missing required */
		{ "S queue 6:active\nS queue_id 12:" QID "\nL offset 1\n"
		  "S sender 0:\nN rcpt 1\nS address 3:a@b\nL offset 9\n.\n.\n",
		  "nexthop" },
		/* wrong type */
		{ "S queue 6:active\nS queue_id 12:" QID "\nS offset 1:1\n"
		  "S sender 0:\nS nexthop 1:x\nN rcpt 1\n"
		  "S address 3:a@b\nL offset 9\n.\n.\n", "wrong type" },
		/* recipient without offset */
		{ "S queue 6:active\nS queue_id 12:" QID "\nL offset 1\n"
		  "S sender 0:\nS nexthop 1:x\nN rcpt 1\n"
		  "S address 3:a@b\n.\n.\n", "offset" },
		/* a value over the protocol's limit */
		{ NULL, "exceeds limit" },
		/* NUL inside a string */
		{ NULL, "" },
	};
	str_t buf = STR_INIT, err = STR_INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dlv_request_t req;
		str_reset(&buf);
		str_reset(&err);
		if (cases[i].wire) {
			str_set(&buf, cases[i].wire);
		} else if (i == 4) {
			str_setf(&buf, "S queue 6:active\nS queue_id 12:" QID
			    "\nL offset 1\nS sender %d:", DLV_MAX_VALUE + 1);
			for (int j = 0; j <= DLV_MAX_VALUE; j++)
				str_putc(&buf, 'a');
			str_cat(&buf, "\n.\n");
		} else {
			str_setf(&buf, "S queue 6:active\nS queue_id 12:" QID
			    "\nL offset 1\nS sender 3:a");
			str_append(&buf, "\0b\n.\n", 5);
		}
		ATF_CHECK_EQ_MSG(decode_request(&buf, &req, &err), -1,
		    "case %zu decoded", i);
		ATF_CHECK_MSG(strstr(str_cstr(&err), cases[i].expect) != NULL,
		    "case %zu: \"%s\" lacks \"%s\"", i, str_cstr(&err),
		    cases[i].expect);
		dlv_request_free(&req);
	}
	str_release(&buf);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(reply_round_trip);
ATF_TC_BODY(reply_round_trip, tc)
{
	dlv_request_t req;
	dlv_reply_t rep, got;
	str_t buf = STR_INIT, err = STR_INIT;

	sample_request(&req);
	dlv_reply_init(&rep, &req);
	ATF_CHECK(!dlv_status_isset(&rep, 0));
	dlv_status_set(&rep, 0, DLV_ACT_DELIVERED, "2.0.0",
	    "mx.example.net[192.0.2.1]:25", "250 2.0.0 Ok: queued as %s", "X1");
	rep.st[0].notified = true;
	dlv_status_set(&rep, 1, DLV_ACT_FAILED, "5.1.1",
	    "mx.example.net[192.0.2.1]:25",
	    "host mx.example.net[192.0.2.1] said: 550 5.1.1 no such user "
	    "(in reply to RCPT TO command)");
	dlv_status_diag(&rep, 1, "smtp", "550 5.1.1 no such user",
	    "mx.example.net");
	dlv_status_set(&rep, 2, DLV_ACT_DELAYED, "4.4.1", NULL, "timeout");
	dlv_reply_set_flags(&rep, DLV_R_CONN_FAIL | DLV_R_AVOID,
	    "connect to %s: Connection refused", "mx.example.net");
	rep.conn_us = 1500;
	rep.xfer_us = 250000;
	dlv_reply_encode(&rep, &buf);
	ATF_REQUIRE_MSG(decode_reply(&buf, &req, &got, &err) == 0, "%s",
	    str_cstr(&err));
	ATF_CHECK_EQ(got.flags, DLV_R_CONN_FAIL | DLV_R_AVOID);
	ATF_CHECK_STREQ(got.reason, "connect to mx.example.net: Connection refused");
	ATF_CHECK_EQ(got.conn_us, 1500);
	ATF_CHECK_EQ(got.xfer_us, 250000);
	ATF_REQUIRE_EQ(got.n, 3);
	ATF_CHECK_STREQ(got.st[0].status, "2.0.0");
	ATF_CHECK_EQ(got.st[0].action, DLV_ACT_DELIVERED);
	ATF_CHECK_STREQ(got.st[0].reason, "250 2.0.0 Ok: queued as X1");
	ATF_CHECK_STREQ(got.st[0].relay, "mx.example.net[192.0.2.1]:25");
	ATF_CHECK(got.st[0].notified);
	ATF_CHECK(!got.st[1].notified);
	ATF_CHECK(!got.st[2].notified);
	ATF_CHECK_STREQ(got.st[1].status, "5.1.1");
	ATF_CHECK_EQ(got.st[1].action, DLV_ACT_FAILED);
	ATF_CHECK_STREQ(got.st[1].diag_type, "smtp");
	ATF_CHECK_STREQ(got.st[1].diag_text, "550 5.1.1 no such user");
	ATF_CHECK_STREQ(got.st[1].remote_mta, "mx.example.net");
	ATF_CHECK_STREQ(got.st[2].status, "4.4.1");
	ATF_CHECK_EQ(got.st[2].action, DLV_ACT_DELAYED);
	ATF_CHECK_STREQ(got.st[2].relay, "");
	ATF_CHECK_STREQ(got.st[2].diag_type, "");
	ATF_CHECK_EQ(got.offset[2], 300);
	dlv_reply_free(&got);

	/* "notified" belongs to a delivered recipient only. */
	rep.st[1].notified = true;
	str_reset(&buf);
	dlv_reply_encode(&rep, &buf);
	ATF_CHECK_EQ(decode_reply(&buf, &req, &got, &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err), "rcpt[1].notified with action failed");
	dlv_reply_free(&got);
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	str_release(&buf);
	str_release(&err);
}

/* The builders keep every reply valid whatever the agent passes. */
ATF_TC_WITHOUT_HEAD(reply_builders);
ATF_TC_BODY(reply_builders, tc)
{
	dlv_request_t req;
	dlv_reply_t rep, got;
	str_t buf = STR_INIT, err = STR_INIT, big = STR_INIT;

	sample_request(&req);
	dlv_reply_init(&rep, &req);
	/* a status that disagrees with the action gets the default */
	dlv_status_set(&rep, 0, DLV_ACT_FAILED, "4.4.1", NULL, "x");
	ATF_CHECK_STREQ(rep.st[0].status, "5.0.0");
	dlv_status_set(&rep, 0, DLV_ACT_DELIVERED, "2.1", NULL, "x");
	ATF_CHECK_STREQ(rep.st[0].status, "2.0.0");
	dlv_status_set(&rep, 0, DLV_ACT_RELAYED, NULL, NULL, "%s", "");
	ATF_CHECK_STREQ(rep.st[0].status, "2.0.0");
	ATF_CHECK_STREQ(rep.st[0].reason, "relayed");	/* never empty */
	/* untrusted text: controls and 8-bit become '?', line ends spaces,
	 * long text is cut */
	dlv_status_set(&rep, 1, DLV_ACT_DELAYED, "4.2.0", "r\x01y",
	    "say \x1b[31mred\r\n\xff ok");
	ATF_CHECK_STREQ(rep.st[1].reason, "say ?[31mred  ? ok");
	ATF_CHECK_STREQ(rep.st[1].relay, "r?y");
	for (int i = 0; i < DLV_MAX_TEXT + 100; i++)
		str_putc(&big, 'x');
	dlv_status_diag(&rep, 1, "smtp", str_cstr(&big), NULL);
	ATF_CHECK_EQ(strlen(rep.st[1].diag_text), DLV_MAX_TEXT);
	/* recipient 2 left unset: goes out as delayed 4.3.0 */
	dlv_reply_encode(&rep, &buf);
	ATF_REQUIRE_MSG(decode_reply(&buf, &req, &got, &err) == 0, "%s",
	    str_cstr(&err));
	ATF_CHECK_EQ(got.st[2].action, DLV_ACT_DELAYED);
	ATF_CHECK_STREQ(got.st[2].status, "4.3.0");
	ATF_CHECK(strstr(got.st[2].reason, "did not report") != NULL);
	dlv_reply_free(&got);
	/* set_all: only the unset ones, or all with force */
	dlv_status_set_all(&rep, false, DLV_ACT_FAILED, "5.4.4", "none",
	    "unrouteable");
	ATF_CHECK_EQ(rep.st[0].action, DLV_ACT_RELAYED);
	ATF_CHECK_EQ(rep.st[2].action, DLV_ACT_FAILED);
	dlv_status_set_all(&rep, true, DLV_ACT_DELAYED, "4.4.1", NULL, "all");
	for (size_t i = 0; i < rep.n; i++)
		ATF_CHECK_STREQ(rep.st[i].status, "4.4.1");
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	str_release(&buf);
	str_release(&err);
	str_release(&big);
}

/* Replies the decoder must refuse: each is a good reply with one item
 * replaced. */
ATF_TC_WITHOUT_HEAD(reply_invalid);
ATF_TC_BODY(reply_invalid, tc)
{
	static const struct {
		const char *rcpt0;	/* group of recipient 0, or NULL */
		const char *head;	/* extra items before the list */
		int count;		/* groups to send (of 3) */
		const char *expect;
	} cases[] = {
		{ "L offset 170\nS status 3:5.1\nS action 6:failed\nS reason 1:x\n",
		  "", 3, "invalid status code \"5.1\"" },
		{ "L offset 170\nS status 5:6.0.0\nS action 6:failed\nS reason 1:x\n",
		  "", 3, "invalid status code" },
		{ "L offset 170\nS status 6:5.01.1\nS action 6:failed\nS reason 1:x\n",
		  "", 3, "invalid status code" },
		{ "L offset 170\nS status 9:5.1.1 abc\nS action 6:failed\nS reason 1:x\n",
		  "", 3, "invalid status code" },
		{ "L offset 170\nS status 5:4.4.1\nS action 6:failed\nS reason 1:x\n",
		  "", 3, "rcpt[0].action \"failed\" disagrees with status 4.4.1" },
		{ "L offset 170\nS status 5:2.0.0\nS action 4:sent\nS reason 1:x\n",
		  "", 3, "rcpt[0].action: missing or unknown" },
		{ "L offset 170\nS status 5:2.0.0\nS action 9:delivered\nS reason 0:\n",
		  "", 3, "rcpt[0].reason: empty" },
		{ "L offset 170\nS status 5:2.0.0\nS action 9:delivered\nS reason 3:a\tb\n",
		  "", 3, "rcpt[0].reason: forbidden byte 0x09" },
		{ "L offset 170\nS status 5:2.0.0\nS action 9:delivered\nS reason 3:a\xc3\xa9\n",
		  "", 3, "forbidden byte 0xc3" },
		{ "L offset 171\nS status 5:2.0.0\nS action 9:delivered\nS reason 1:x\n",
		  "", 3, "rcpt[0].offset 171 does not match the request (170)" },
		{ NULL, "", 2, "reply has 2 recipients, request had 3" },
		{ NULL, "I flags 4\n", 3, "flags: unknown bits 0x4" },
		{ NULL, "L conn_us -1\n", 3, "conn_us: negative" },
		{ "L offset 170\nS status 5:2.0.0\nS action 9:delivered\n", "", 3,
		  "reason" },
		{ "L offset 170\nS status 5:2.0.0\nS action 9:delivered\nS reason 1:x\n"
		  "S extra 1:y\n", "", 3, "extra" },
	};
	static const char *const good[3] = {
		"L offset 170\nS status 5:2.0.0\nS action 9:delivered\nS reason 2:ok\n",
		"L offset 236\nS status 5:2.0.0\nS action 9:delivered\nS reason 2:ok\n",
		"L offset 300\nS status 5:2.0.0\nS action 9:delivered\nS reason 2:ok\n",
	};
	dlv_request_t req;
	str_t buf = STR_INIT, err = STR_INIT;

	sample_request(&req);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dlv_reply_t rep;
		str_set(&buf, cases[i].head);
		str_catf(&buf, "N rcpt %d\n", cases[i].count);
		for (int j = 0; j < cases[i].count; j++) {
			str_cat(&buf, j == 0 && cases[i].rcpt0 ? cases[i].rcpt0 :
			    good[j]);
			str_cat(&buf, ".\n");
		}
		str_cat(&buf, ".\n");
		str_reset(&err);
		ATF_CHECK_EQ_MSG(decode_reply(&buf, &req, &rep, &err), -1,
		    "case %zu decoded", i);
		ATF_CHECK_MSG(strstr(str_cstr(&err), cases[i].expect) != NULL,
		    "case %zu: \"%s\" lacks \"%s\"", i, str_cstr(&err),
		    cases[i].expect);
		dlv_reply_free(&rep);
	}
	/* and the good one passes */
	{
		dlv_reply_t rep;
		str_set(&buf, "N rcpt 3\n");
		for (int j = 0; j < 3; j++) {
			str_cat(&buf, good[j]);
			str_cat(&buf, ".\n");
		}
		str_cat(&buf, ".\n");
		ATF_CHECK_MSG(decode_reply(&buf, &req, &rep, &err) == 0, "%s",
		    str_cstr(&err));
		dlv_reply_free(&rep);
	}
	dlv_request_free(&req);
	str_release(&buf);
	str_release(&err);
}

/* ---- over a connection ------------------------------------------------ */

static void test_deliver(const dlv_request_t *req, dlv_reply_t *rep, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < req->nrcpt; i++) {
		const char *a = req->rcpt[i].address;
		if (strncmp(a, "bounce", 6) == 0)
			dlv_status_set(rep, i, DLV_ACT_FAILED, "5.1.1", "test",
			    "no such user %s", a);
		else if (strncmp(a, "skip", 4) == 0)
			;	/* left unset on purpose */
		else
			dlv_status_set(rep, i, DLV_ACT_DELIVERED, NULL, "test",
			    "delivered to %s via %s", a, req->nexthop);
	}
}

/* Forks an agent serving one end of a socketpair; returns the other. */
static pid_t start_agent(int *fd, unsigned max_requests)
{
	int sv[2];
	pid_t pid;

	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		dlv_agent_t a = { .deliver = test_deliver,
			.max_requests = max_requests };
		int n;
		close(sv[0]);
		n = dlv_agent_serve_fd(sv[1], &a, 5000);
		_exit(n < 0 ? 100 : n);
	}
	close(sv[1]);
	*fd = sv[0];
	return pid;
}

static int wait_exit(pid_t pid)
{
	int st;

	ATF_REQUIRE(waitpid(pid, &st, 0) == pid);
	ATF_REQUIRE(WIFEXITED(st));
	return WEXITSTATUS(st);
}

ATF_TC_WITHOUT_HEAD(agent_loop);
ATF_TC_BODY(agent_loop, tc)
{
	dlv_request_t req;
	dlv_reply_t rep;
	str_t err = STR_INIT;
	int fd;
	pid_t pid = start_agent(&fd, 0);

	dlv_request_init(&req, "active", QID, "a@b", "dest.example");
	dlv_request_add_rcpt(&req, "ok@x", NULL, NULL, 0, 10);
	dlv_request_add_rcpt(&req, "bounce@x", NULL, NULL, 0, 20);
	dlv_request_add_rcpt(&req, "skip@x", NULL, NULL, 0, 30);
	/* two requests on one connection */
	for (int round = 0; round < 2; round++) {
		ATF_REQUIRE_MSG(dlv_call(fd, &req, &rep, 5000, &err) == 0, "%s",
		    str_cstr(&err));
		ATF_CHECK_EQ(rep.st[0].action, DLV_ACT_DELIVERED);
		ATF_CHECK_STREQ(rep.st[0].reason, "delivered to ok@x via dest.example");
		ATF_CHECK_EQ(rep.st[1].action, DLV_ACT_FAILED);
		ATF_CHECK_STREQ(rep.st[1].status, "5.1.1");
		ATF_CHECK_EQ(rep.st[2].action, DLV_ACT_DELAYED);
		ATF_CHECK_STREQ(rep.st[2].status, "4.3.0");
		dlv_reply_free(&rep);
	}
	close(fd);
	ATF_CHECK_EQ(wait_exit(pid), 2);

	/* max_requests: the agent closes after one */
	pid = start_agent(&fd, 1);
	ATF_REQUIRE(dlv_call(fd, &req, &rep, 5000, &err) == 0);
	dlv_reply_free(&rep);
	ATF_CHECK_EQ(dlv_call(fd, &req, &rep, 5000, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "closed") ||
	    strstr(str_cstr(&err), "sending") ||
	    strstr(str_cstr(&err), "reading the reply"), "%s", str_cstr(&err));
	close(fd);
	ATF_CHECK_EQ(wait_exit(pid), 1);
	dlv_request_free(&req);
	str_release(&err);
}

/* A malformed request: the agent logs, closes without a reply, and
 * reports an error (it would then serve the next client). */
ATF_TC_WITHOUT_HEAD(agent_bad_request);
ATF_TC_BODY(agent_bad_request, tc)
{
	static const char *const bad[] = {
		"garbage\n",
		"S queue 6:active\n.\n",
		"S queue 6:nosuch\nS queue_id 12:" QID "\nL offset 1\n"
		"S sender 0:\nS nexthop 1:x\nN rcpt 1\nS address 3:a@b\n"
		"L offset 9\n.\n.\n",
	};
	char c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int fd;
		pid_t pid = start_agent(&fd, 0);
		ATF_REQUIRE(write(fd, bad[i], strlen(bad[i])) ==
		    (ssize_t)strlen(bad[i]));
		ATF_CHECK_EQ(read(fd, &c, 1), 0);	/* closed, no reply */
		close(fd);
		ATF_CHECK_EQ(wait_exit(pid), 100);
	}
}

/* The client's view of a broken agent. */
ATF_TC_WITHOUT_HEAD(client_errors);
ATF_TC_BODY(client_errors, tc)
{
	dlv_request_t req;
	dlv_reply_t rep;
	str_t err = STR_INIT;

	signal(SIGPIPE, SIG_IGN);
	dlv_request_init(&req, "active", QID, "a@b", "dest.example");
	dlv_request_add_rcpt(&req, "ok@x", NULL, NULL, 0, 10);
	for (int mode = 0; mode < 4; mode++) {
		int sv[2];
		pid_t pid;
		ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		pid = fork();
		ATF_REQUIRE(pid >= 0);
		if (pid == 0) {
			char buf[4096];
			close(sv[0]);
			(void)!read(sv[1], buf, sizeof(buf));
			if (mode == 1)
				(void)!write(sv[1], "N rcpt 1\nbogus\n", 15);
			if (mode == 2)
				sleep(3);	/* hang past the client's timeout */
			if (mode == 3)	/* well-formed, wrong recipient count */
				(void)!write(sv[1], "N rcpt 0\n.\n", 11);
			_exit(0);
		}
		close(sv[1]);
		ATF_CHECK_EQ(dlv_call(sv[0], &req, &rep, mode == 2 ? 300 : 5000,
		    &err), -1);
		switch (mode) {
		case 0:
			ATF_CHECK_MSG(strstr(str_cstr(&err), "closed without a reply"),
			    "%s", str_cstr(&err));
			break;
		case 1:
			ATF_CHECK_MSG(strstr(str_cstr(&err), "malformed reply"),
			    "%s", str_cstr(&err));
			break;
		case 2:
			ATF_CHECK_MSG(strstr(str_cstr(&err), "timed out"),
			    "%s", str_cstr(&err));
			break;
		case 3:
			ATF_CHECK_MSG(strstr(str_cstr(&err),
			    "reply has 0 recipients, request had 1"), "%s",
			    str_cstr(&err));
			break;
		}
		dlv_reply_free(&rep);
		close(sv[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	/* no such socket */
	ATF_CHECK_EQ(dlv_call_path("private/nosuch", &req, &rep, 1000, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "connect to private/nosuch"), "%s",
	    str_cstr(&err));
	dlv_request_free(&req);
	str_release(&err);
}

/* The largest batch with the longest texts still makes a reply the
 * reader accepts: the encoder shortens texts to fit. */
ATF_TC_WITHOUT_HEAD(reply_size_bound);
ATF_TC_BODY(reply_size_bound, tc)
{
	dlv_request_t req;
	dlv_reply_t rep, got;
	str_t buf = STR_INIT, err = STR_INIT, big = STR_INIT, shortbig = STR_INIT;

	dlv_request_init(&req, "active", QID, "a@b", "x");
	for (int i = 0; i < DLV_MAX_RCPT; i++)
		dlv_request_add_rcpt(&req, "someone.with.a.long.name@example.net",
		    NULL, NULL, 0, i);
	for (int i = 0; i < DLV_MAX_TEXT; i++)
		str_putc(&big, 'a' + i % 26);
	for (int i = 0; i < DLV_MAX_SHORT; i++)
		str_putc(&shortbig, 'h');
	dlv_reply_init(&rep, &req);
	for (size_t i = 0; i < rep.n; i++) {
		dlv_status_set(&rep, i, DLV_ACT_FAILED, "5.1.1",
		    str_cstr(&shortbig), "%s", str_cstr(&big));
		dlv_status_diag(&rep, i, str_cstr(&shortbig), str_cstr(&big),
		    str_cstr(&shortbig));
	}
	dlv_reply_encode(&rep, &buf);
	ATF_CHECK_MSG(buf.len < 16 * 1024 * 1024, "%zu bytes", buf.len);
	ATF_REQUIRE_MSG(decode_reply(&buf, &req, &got, &err) == 0, "%s",
	    str_cstr(&err));
	ATF_CHECK_EQ(got.n, (size_t)DLV_MAX_RCPT);
	ATF_CHECK(strlen(got.st[0].reason) >= 64);
	ATF_CHECK(strncmp(got.st[0].reason, "abcdefgh", 8) == 0);
	dlv_reply_free(&got);
	/* a small batch keeps the whole text */
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	sample_request(&req);
	dlv_reply_init(&rep, &req);
	dlv_status_set_all(&rep, true, DLV_ACT_FAILED, NULL, NULL, "%s",
	    str_cstr(&big));
	str_reset(&buf);
	dlv_reply_encode(&rep, &buf);
	ATF_REQUIRE(decode_reply(&buf, &req, &got, &err) == 0);
	ATF_CHECK_EQ(strlen(got.st[2].reason), DLV_MAX_TEXT);
	dlv_reply_free(&got);
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	str_release(&buf);
	str_release(&err);
	str_release(&big);
	str_release(&shortbig);
}

ATF_TC_WITHOUT_HEAD(actions);
ATF_TC_BODY(actions, tc)
{
	static const char *const names[] = { "delivered", "relayed", "expanded",
		"failed", "delayed" };
	for (size_t i = 0; i < 5; i++) {
		dlv_action_t a = dlv_action_parse(names[i]);
		ATF_CHECK(a != DLV_ACT_NONE);
		ATF_CHECK_STREQ(dlv_action_name(a), names[i]);
	}
	ATF_CHECK_EQ(dlv_action_parse("Delivered"), DLV_ACT_NONE);
	ATF_CHECK_EQ(dlv_action_parse("none"), DLV_ACT_NONE);
	ATF_CHECK_EQ(dlv_action_class(DLV_ACT_EXPANDED), '2');
	ATF_CHECK_EQ(dlv_action_class(DLV_ACT_FAILED), '5');
	ATF_CHECK_EQ(dlv_action_class(DLV_ACT_DELAYED), '4');
	ATF_CHECK_EQ(dlv_action_class(DLV_ACT_NONE), 0);
}

ATF_TC_WITHOUT_HEAD(log_line);
ATF_TC_BODY(log_line, tc)
{
	dlv_rcpt_t r = { (char *)"bob@example.net", (char *)"Bob@example.net",
		(char *)"", 0, 1 };
	dlv_status_t st;
	dlv_delays_t dl = { 1.234, 0.01, 0.0001, 0.2, 1.0 };
	str_t out = STR_INIT;

	memset(&st, 0, sizeof(st));
	bcopy_str(st.status, sizeof(st.status), "2.0.0");
	st.action = DLV_ACT_DELIVERED;
	st.reason = (char *)"250 2.0.0 Ok: queued as ABC";
	st.relay = (char *)"mx.example.net[192.0.2.1]:25";
	dlv_log_format(&out, QID, &r, &st, &dl, 2);
	/* Postfix's field order, punctuation and delay format. */
	ATF_CHECK_STREQ(str_cstr(&out), QID ": to=<bob@example.net>, "
	    "orig_to=<Bob@example.net>, relay=mx.example.net[192.0.2.1]:25, "
	    "delay=1.2, delays=0.01/0/0.2/1, dsn=2.0.0, "
	    "status=sent (250 2.0.0 Ok: queued as ABC)");
	/* orig equal to the address is left out; no relay is "none" */
	str_reset(&out);
	r.orig = (char *)"bob@example.net";
	bcopy_str(st.status, sizeof(st.status), "4.4.1");
	st.action = DLV_ACT_DELAYED;
	st.reason = (char *)"connection refused";
	st.relay = (char *)"";
	dlv_log_format(&out, QID, &r, &st, NULL, 0);
	ATF_CHECK_STREQ(str_cstr(&out), QID ": to=<bob@example.net>, "
	    "relay=none, delay=0, delays=0/0/0/0, dsn=4.4.1, "
	    "status=deferred (connection refused)");
	str_reset(&out);
	st.action = DLV_ACT_FAILED;
	bcopy_str(st.status, sizeof(st.status), "5.1.1");
	dlv_log_format(&out, QID, &r, &st, NULL, 0);
	ATF_CHECK(strstr(str_cstr(&out), "status=bounced (") != NULL);
	/* relayed and expanded are "sent" too */
	str_reset(&out);
	st.action = DLV_ACT_RELAYED;
	bcopy_str(st.status, sizeof(st.status), "2.0.0");
	dlv_log_format(&out, QID, &r, &st, NULL, 0);
	ATF_CHECK(strstr(str_cstr(&out), ", dsn=2.0.0, status=sent (") != NULL);
	/* Addresses in external form, as Postfix logs them (quoted local
	 * part), both of them. */
	str_reset(&out);
	r.address = (char *)"john doe@example.net";
	r.orig = (char *)"a\"b@example.net";
	dlv_log_format(&out, QID, &r, &st, NULL, 0);
	ATF_CHECK_MSG(strstr(str_cstr(&out), ": to=<\"john doe\"@example.net>, "
	    "orig_to=<\"a\\\"b\"@example.net>, relay=") != NULL, "%s",
	    str_cstr(&out));
	str_release(&out);
}

/* Postfix's format_tv rules: two significant digits, at most the
 * configured decimals, rounded, whole seconds from 10 s. */
ATF_TC_WITHOUT_HEAD(delay_format);
ATF_TC_BODY(delay_format, tc)
{
	static const struct { double d; int digits; const char *want; } t[] = {
		{ 0, 2, "0" }, { -3, 2, "0" }, { 0.0001, 2, "0" },
		{ 0.004, 2, "0" }, { 0.005, 2, "0.01" }, { 0.2, 2, "0.2" },
		{ 0.394, 2, "0.39" }, { 0.999, 2, "1" }, { 1.234, 2, "1.2" },
		{ 1.25, 2, "1.3" }, { 9.96, 2, "10" }, { 12.7, 2, "13" },
		{ 123.4, 2, "123" }, { 3600, 2, "3600" }, { 1.6, 0, "2" },
		{ 0.4, 0, "0" }, { 0.0123, 3, "0.012" }, { 0.000123, 6, "0.00012" },
		{ 0.5, 9, "0.5" },
	};
	str_t out = STR_INIT;
	dlv_rcpt_t r = { (char *)"a@b", (char *)"", (char *)"", 0, 1 };
	dlv_status_t st;

	memset(&st, 0, sizeof(st));
	bcopy_str(st.status, sizeof(st.status), "2.0.0");
	st.action = DLV_ACT_DELIVERED;
	st.reason = (char *)"x";
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		dlv_delays_t dl = { t[i].d, 0, 0, 0, t[i].d };
		char want[128];
		str_reset(&out);
		dlv_log_format(&out, QID, &r, &st, &dl, t[i].digits);
		snprintf(want, sizeof(want), ", delay=%s, delays=0/0/0/%s, ",
		    t[i].want, t[i].want);
		ATF_CHECK_MSG(strstr(str_cstr(&out), want) != NULL,
		    "%g (%d digits): %s", t[i].d, t[i].digits, str_cstr(&out));
	}
	str_release(&out);
}

/* The parts of delays=a/b/c/d from the request's times and the agent's
 * own, as Postfix's agents count them. */
ATF_TC_WITHOUT_HEAD(delays);
ATF_TC_BODY(delays, tc)
{
	const int64_t t0 = 1767225600000000LL;
	dlv_delays_t dl;

	/* arrival, active +1 s, handoff +0.5 s, connection 0.25 s, now +2 s
	 * after the handoff */
	dlv_delays_compute(&dl, t0, t0 + 1000000, t0 + 1500000, 250000, 9,
	    t0 + 3500000);
	ATF_CHECK(dl.total > 3.49 && dl.total < 3.51);
	ATF_CHECK(dl.a > 0.99 && dl.a < 1.01);
	ATF_CHECK(dl.b > 0.49 && dl.b < 0.51);
	ATF_CHECK(dl.c > 0.24 && dl.c < 0.26);
	ATF_CHECK(dl.d > 1.74 && dl.d < 1.76);
	/* no connection: d is handoff -> now */
	dlv_delays_compute(&dl, t0, t0 + 1000000, t0 + 1500000, 0, 0,
	    t0 + 3500000);
	ATF_CHECK(dl.c == 0);
	ATF_CHECK(dl.d > 1.99 && dl.d < 2.01);
	/* unknown times and a clock step back give zeros, never negatives */
	dlv_delays_compute(&dl, 0, 0, t0, 0, 0, t0 - 5);
	ATF_CHECK(dl.total == 0 && dl.a == 0 && dl.b == 0 && dl.c == 0 &&
	    dl.d == 0);
}

/* The agent loop logs one line per recipient from the agent's process,
 * with the agent's verdicts (an unset one as the deferral qmgr will
 * record), and the request's times in delays=. */
ATF_TC_WITHOUT_HEAD(agent_logs);
ATF_TC_BODY(agent_logs, tc)
{
	dlv_request_t req;
	dlv_reply_t rep;
	str_t err = STR_INIT, text = STR_INIT;
	int fd;
	pid_t pid;
	struct timeval tv;

	ATF_REQUIRE(log_to_file("agent.log") == 0);
	pid = start_agent(&fd, 0);
	gettimeofday(&tv, NULL);
	dlv_request_init(&req, "active", QID, "a@b", "dest.example");
	/* arrived 20 s ago, active 10 s ago */
	req.arrival = ((int64_t)tv.tv_sec - 20) * 1000000;
	req.active = ((int64_t)tv.tv_sec - 10) * 1000000;
	dlv_request_add_rcpt(&req, "ok@x", "orig@x", NULL, 0, 10);
	dlv_request_add_rcpt(&req, "bounce@x", NULL, NULL, 0, 20);
	dlv_request_add_rcpt(&req, "skip@x", NULL, NULL, 0, 30);
	ATF_REQUIRE_MSG(dlv_call(fd, &req, &rep, 5000, &err) == 0, "%s",
	    str_cstr(&err));
	dlv_reply_free(&rep);
	close(fd);
	ATF_CHECK_EQ(wait_exit(pid), 1);
	ATF_REQUIRE(file_read_all("agent.log", &text, 1 << 20) >= 0);
	ATF_CHECK_MSG(strstr(str_cstr(&text), ": " QID ": to=<ok@x>, "
	    "orig_to=<orig@x>, relay=") != NULL, "%s", str_cstr(&text));
	ATF_CHECK_MSG(strstr(str_cstr(&text), ", delays=10/10/0/0, dsn=2.0.0, "
	    "status=sent (delivered to ok@x via dest.example)") != NULL ||
	    strstr(str_cstr(&text), ", delays=10/11/0/0, dsn=2.0.0, ") != NULL,
	    "%s", str_cstr(&text));
	ATF_CHECK(strstr(str_cstr(&text), QID ": to=<bounce@x>, relay=") != NULL);
	ATF_CHECK(strstr(str_cstr(&text), "dsn=5.1.1, status=bounced (") != NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&text), QID ": to=<skip@x>, relay=none, "
	    "delay=2") != NULL, "%s", str_cstr(&text));
	ATF_CHECK(strstr(str_cstr(&text), "dsn=4.3.0, status=deferred "
	    "(delivery agent did not report a status)") != NULL);
	log_to_stderr();
	dlv_request_free(&req);
	str_release(&err);
	str_release(&text);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, request_round_trip);
	ATF_TP_ADD_TC(tp, request_invalid);
	ATF_TP_ADD_TC(tp, request_wire_errors);
	ATF_TP_ADD_TC(tp, reply_round_trip);
	ATF_TP_ADD_TC(tp, reply_builders);
	ATF_TP_ADD_TC(tp, reply_invalid);
	ATF_TP_ADD_TC(tp, agent_loop);
	ATF_TP_ADD_TC(tp, agent_bad_request);
	ATF_TP_ADD_TC(tp, client_errors);
	ATF_TP_ADD_TC(tp, reply_size_bound);
	ATF_TP_ADD_TC(tp, actions);
	ATF_TP_ADD_TC(tp, log_line);
	ATF_TP_ADD_TC(tp, delay_format);
	ATF_TP_ADD_TC(tp, delays);
	ATF_TP_ADD_TC(tp, agent_logs);
	return atf_no_error();
}
