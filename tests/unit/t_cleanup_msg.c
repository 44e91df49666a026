#define _GNU_SOURCE
/* Unit tests of cleanup's message processing (cleanup/cleanup_msg.c)
 * without the daemon: envelope checks, header completion and rewriting,
 * recipient extraction, limits, and the queue file it leaves in
 * ./q/incoming (read back with the qfile reader). */
#include <atf-c.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cleanup/cleanup.h"
#include "milter.h"
#include "mem.h"
#include "pconfig.h"
#include "qfile.h"

static cleanup_cfg_t cfg;

#define ARRIVAL		1700000000000000LL
#define DATE		"Tue, 14 Nov 2023 22:13:20 +0000 (UTC)"
#define MSGID_HEAD	"<20231114221320."

static void setup(const char *extra)
{
	char cwd[PATH_MAX];
	str_t text = STR_INIT, err = STR_INIT;

	setenv("TZ", "UTC", 1);
	tzset();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	str_setf(&text, "queue_directory = %s/q\nmyhostname = host.example.com\n"
	    "mydomain = example.com\n%s\n", cwd, extra ? extra : "");
	if (pconfig_load_text(str_cstr(&text), "main.cf") < 0)
		atf_tc_fail("main.cf: %s", pconfig_errors());
	if (cleanup_cfg_load(&cfg, &err) < 0)
		atf_tc_fail("cleanup_cfg_load: %s", str_cstr(&err));
	if (queue_create_dirs(&cfg.ql, &err) < 0)
		atf_tc_fail("queue dirs: %s", str_cstr(&err));
	str_release(&text);
	str_release(&err);
}

static void teardown(void)
{
	cleanup_cfg_free(&cfg);
	pconfig_reset();
}

static cleanup_msg_envelope_t env0(const char *sender)
{
	cleanup_msg_envelope_t e = { .sender = sender, .uid = -1,
	    .arrival_us = ARRIVAL };
	return e;
}

/* Runs one message through cleanup_msg_*, the content in pieces of chunk
 * bytes.  rcpts is NULL-terminated. */
static cleanup_reply_t submit_chunked(const cleanup_msg_envelope_t *env,
    const char *const *rcpts, const void *content, size_t len, size_t chunk)
{
	cleanup_reply_t reply;
	cleanup_msg_t *m = cleanup_msg_new(&cfg, env);

	for (size_t i = 0; rcpts != NULL && rcpts[i] != NULL; i++)
		cleanup_msg_rcpt(m, rcpts[i], NULL, false, 0);
	for (size_t off = 0; off < len; off += chunk)
		cleanup_msg_data(m, (const char *)content + off,
		    len - off < chunk ? len - off : chunk);
	cleanup_msg_end(m, &reply);
	cleanup_msg_free(m);
	return reply;
}

static cleanup_reply_t submit(const cleanup_msg_envelope_t *env,
    const char *const *rcpts, const char *content)
{
	return submit_chunked(env, rcpts, content, strlen(content), 65536);
}

/* Files in q/incoming (queued or temporary). */
static int incoming_files(void)
{
	DIR *d = opendir("q/incoming");
	struct dirent *de;
	int n = 0;

	ATF_REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static qfile_t *open_q(const char *id)
{
	qf_err_t err;
	qfile_t *qf = qfile_open(&cfg.ql, QUEUE_INCOMING, id, 0, &err);

	if (qf == NULL)
		atf_tc_fail("qfile_open %s: %s", id, err.reason);
	return qf;
}

/* The content of a queued message, terminators included. */
static void content_of(const char *id, str_t *out)
{
	qfile_t *qf = open_q(id);
	str_t line = STR_INIT;
	int r;

	str_reset(out);
	while ((r = qfile_read_line(qf, &line, 1 << 20)) > 0) {
		str_append(out, str_cstr(&line), str_len(&line));
		if (r == QF_LINE_LF)
			str_putc(out, '\n');
		else if (r == QF_LINE_CRLF)
			str_cat(out, "\r\n");
	}
	ATF_REQUIRE_EQ(r, QF_LINE_END);
	str_release(&line);
	qfile_close(qf);
}

/* Recipients as "addr[ orig=O][ orcpt=D][ notify=N];" */
static void rcpts_of(const char *id, str_t *out)
{
	qfile_t *qf = open_q(id);
	qf_rcpt_batch_t b = { 0 };
	long n;

	str_reset(out);
	while ((n = qfile_rcpt_read(qf, &b, 100, 0)) > 0)
		for (long i = 0; i < n; i++) {
			qf_rcpt_t *r = &b.rcpt[i];
			str_cat(out, str_cstr(&r->address));
			if (str_len(&r->orig))
				str_catf(out, " orig=%s", str_cstr(&r->orig));
			if (str_len(&r->orcpt))
				str_catf(out, " orcpt=%s", str_cstr(&r->orcpt));
			if (r->notify)
				str_catf(out, " notify=%d", r->notify);
			str_putc(out, ';');
		}
	ATF_REQUIRE_EQ(n, 0);
	qf_rcpt_batch_free(&b);
	qfile_close(qf);
}

/* want with every "QID" replaced by the queue ID. */
static void expect_content(const char *id, const char *want)
{
	str_t got = STR_INIT, w = STR_INIT;

	for (const char *p = want; *p; p++) {
		if (strncmp(p, "QID", 3) == 0) {
			str_cat(&w, id);
			p += 2;
		} else {
			str_putc(&w, *p);
		}
	}
	content_of(id, &got);
	ATF_CHECK_MSG(str_len(&got) == str_len(&w) &&
	    memcmp(str_cstr(&got), str_cstr(&w), str_len(&w)) == 0,
	    "content:\n---got---\n%s---want---\n%s---", str_cstr(&got),
	    str_cstr(&w));
	str_release(&got);
	str_release(&w);
}

/* Messages this test case queued (each case has its own directory). */
static int queued;

static void expect_ok(const cleanup_reply_t *r)
{
	queued++;
	ATF_REQUIRE_MSG(r->status == CLEANUP_STAT_OK, "not queued: %d %s %s",
	    r->status, r->dsn, r->text);
	ATF_CHECK_STREQ(r->dsn, "2.0.0");
	ATF_CHECK(queue_id_valid(r->queue_id));
}

/* A failure with this status and dsn whose text has want; nothing new
 * in incoming. */
static void expect_fail(const cleanup_reply_t *r, int status, const char *dsn,
    const char *want)
{
	ATF_CHECK_MSG(r->status == status && strcmp(r->dsn, dsn) == 0 &&
	    strstr(r->text, want) != NULL, "got %d %s %s; want %d %s ...%s...",
	    r->status, r->dsn, r->text, status, dsn, want);
	ATF_CHECK_STREQ(r->queue_id, "");
	ATF_CHECK_EQ(incoming_files(), queued);
}

static const char *const BOB[] = { "bob@example.net", NULL };

/* ---- header completion ---- */

ATF_TC_WITHOUT_HEAD(local_submission);
ATF_TC_BODY(local_submission, tc)
{
	cleanup_msg_envelope_t e = env0("alice");
	cleanup_reply_t r;
	str_t s = STR_INIT;

	setup(NULL);
	e.uid = 1000;
	e.full_name = "Alice Smith";
	r = submit(&e, BOB, "Subject: hi\nTo: bob\n\nbody\n");
	expect_ok(&r);
	ATF_CHECK_EQ(incoming_files(), 1);
	expect_content(r.queue_id,
	    "Received: by host.example.com (Petrel, from userid 1000)\n"
	    "\tid QID; " DATE "\n"
	    "Subject: hi\n"
	    "To: bob@host.example.com\n"
	    "Message-ID: " MSGID_HEAD "QID@host.example.com>\n"
	    "Date: " DATE "\n"
	    "From: Alice Smith <alice@host.example.com>\n"
	    "\n"
	    "body\n");
	qfile_t *qf = open_q(r.queue_id);
	ATF_CHECK_STREQ(qfile_sender(qf), "alice@host.example.com");
	struct timeval tv;
	qfile_arrival(qf, &tv);
	ATF_CHECK_EQ(tv.tv_sec, 1700000000);
	qfile_close(qf);
	rcpts_of(r.queue_id, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "bob@example.net;");
	str_release(&s);
	teardown();
}

ATF_TC_WITHOUT_HEAD(existing_headers_kept);
ATF_TC_BODY(existing_headers_kept, tc)
{
	/* Nothing added when the headers are there; Return-Path (folded
	 * too) goes; everything else byte for byte, 8-bit included. */
	const char *in =
	    "Return-Path: <x@y.example>\n"
	    "Message-ID: <abc@example.org>\n"
	    "Date: Mon, 1 Jan 2024 00:00:00 +0100\n"
	    "From: \"Smith, A.\" <a@example.org> (comment)\n"
	    "Subject: a folded\n"
	    "\tsubject with 8-bit \xe9\xe8 bytes\n"
	    "X-Weird:no space\n"
	    "return-path:\n"
	    "  <folded@y.example>\n"
	    "To: undisclosed-recipients:;\n"
	    "\n"
	    "body \xff\xfe\n"
	    "Return-Path: <in the body, kept>\n";
	const char *want =
	    "Message-ID: <abc@example.org>\n"
	    "Date: Mon, 1 Jan 2024 00:00:00 +0100\n"
	    "From: \"Smith, A.\" <a@example.org> (comment)\n"
	    "Subject: a folded\n"
	    "\tsubject with 8-bit \xe9\xe8 bytes\n"
	    "X-Weird:no space\n"
	    "To: undisclosed-recipients:;\n"
	    "\n"
	    "body \xff\xfe\n"
	    "Return-Path: <in the body, kept>\n";
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;

	setup(NULL);
	r = submit(&e, BOB, in);
	expect_ok(&r);
	expect_content(r.queue_id, want);
	teardown();
}

ATF_TC_WITHOUT_HEAD(smtp_received);
ATF_TC_BODY(smtp_received, tc)
{
	/* CRLF message: the added headers use CRLF too; Bcc stays for SMTP
	 * mail; client information goes into the queue file. */
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;

	setup(NULL);
	e.flags = CLEANUP_FLAG_SMTP;
	e.client_name = "mail.example.org";
	e.client_address = "192.0.2.1";
	e.client_port = "40000";
	e.helo_name = "helo.example.org";
	e.protocol = "ESMTPS";
	e.tls_info = "using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384";
	e.log_ident = "smtpd[42]";
	cleanup_attr_t extra[] = { { "x_custom", "value 1" } };
	e.attrs = extra;
	e.nattrs = 1;
	r = submit(&e, BOB, "Subject: s\r\nBcc: hidden@example.net\r\n\r\nbody\r\n");
	expect_ok(&r);
	expect_content(r.queue_id,
	    "Received: from helo.example.org (mail.example.org [192.0.2.1])\r\n"
	    "\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384)\r\n"
	    "\tby host.example.com (Petrel) with ESMTPS id QID\r\n"
	    "\tfor <bob@example.net>; " DATE "\r\n"
	    "Subject: s\r\n"
	    "Bcc: hidden@example.net\r\n"
	    "Message-ID: " MSGID_HEAD "QID@host.example.com>\r\n"
	    "Date: " DATE "\r\n"
	    "From: a@example.org\r\n"
	    "\r\n"
	    "body\r\n");
	qfile_t *qf = open_q(r.queue_id);
	ATF_CHECK_STREQ(qfile_attr(qf, "client_name"), "mail.example.org");
	ATF_CHECK_STREQ(qfile_attr(qf, "client_address"), "192.0.2.1");
	ATF_CHECK_STREQ(qfile_attr(qf, "client_port"), "40000");
	ATF_CHECK_STREQ(qfile_attr(qf, "helo_name"), "helo.example.org");
	ATF_CHECK_STREQ(qfile_attr(qf, "protocol"), "ESMTPS");
	ATF_CHECK_STREQ(qfile_attr(qf, "log_ident"), "smtpd[42]");
	ATF_CHECK_STREQ(qfile_attr(qf, "x_custom"), "value 1");
	qfile_close(qf);

	/* IPv6 client, no HELO, two recipients: no "for" */
	const char *two[] = { "b1@example.net", "b2@example.net", NULL };
	e = env0("");
	e.flags = CLEANUP_FLAG_SMTP;
	e.client_name = "unknown";
	e.client_address = "2001:db8::1";
	r = submit(&e, two, "Message-ID: <m@x>\nDate: d\nFrom: f@x.example\n\nb\n");
	expect_ok(&r);
	expect_content(r.queue_id,
	    "Received: from unknown (unknown [IPv6:2001:db8::1])\n"
	    "\tby host.example.com (Petrel) with SMTP id QID; " DATE "\n"
	    "Message-ID: <m@x>\nDate: d\nFrom: f@x.example\n\nb\n");
	teardown();
}

/* Milter edits (op edit): header indices as libmilter defines them hit
 * the header the milter meant although cleanup added a Received: before
 * and Message-ID:, Date: after; folded values take the message's line
 * end; a replaced body; recipients added and deleted; quarantine puts
 * the message into hold/.  Without edits the content is as usual. */
ATF_TC_WITHOUT_HEAD(milter_edits);
ATF_TC_BODY(milter_edits, tc)
{
	cleanup_msg_envelope_t e = env0("a@example.org");
	const char *two[] = { "b1@example.net", "b2@example.net", NULL };
	cleanup_reply_t r;
	cleanup_msg_t *m;
	str_t got = STR_INIT;

	setup(NULL);
	e.flags = CLEANUP_FLAG_SMTP | CLEANUP_FLAG_MILTER;
	e.client_name = "c.example";
	e.client_address = "192.0.2.1";
	m = cleanup_msg_new(&cfg, &e);
	for (int i = 0; two[i] != NULL; i++)
		cleanup_msg_rcpt(m, two[i], NULL, false, 0);
	cleanup_msg_data(m, "X-A: 1\r\nSubject: s\r\nX-A: 2\r\nFrom: f@x\r\n\r\nold\r\n",
	    46);
	cleanup_msg_edit(m, MILTER_E_CHGHDR, 2, "X-A", "two\n\tfolded", NULL, 0);
	cleanup_msg_edit(m, MILTER_E_CHGHDR, 1, "subject", "", NULL, 0);
	cleanup_msg_edit(m, MILTER_E_INSHDR, 0, "X-Top", "t", NULL, 0);
	/* 1: after the first header the milters saw (X-Top), so before
	 * cleanup's Received: */
	cleanup_msg_edit(m, MILTER_E_INSHDR, 1, "X-Mid", "m", NULL, 0);
	cleanup_msg_edit(m, MILTER_E_ADDHDR, 0, "X-End", " e", NULL, 0);
	cleanup_msg_edit(m, MILTER_E_CHGHDR, 1, "X-New", "n", NULL, 0);
	cleanup_msg_edit(m, MILTER_E_REPLBODY, 0, NULL, NULL, "new\r\n", 5);
	cleanup_msg_edit(m, MILTER_E_REPLBODY, 0, NULL, NULL, "body\r\n", 6);
	cleanup_msg_edit(m, MILTER_E_ADDRCPT, 0, "<c@example.net>", NULL, NULL, 0);
	cleanup_msg_edit(m, MILTER_E_ADDRCPT, 0, "<d@example.net>",
	    "NOTIFY=NEVER", NULL, 0);
	cleanup_msg_edit(m, MILTER_E_DELRCPT, 0, "<b1@example.net>", NULL, NULL, 0);
	cleanup_msg_edit(m, MILTER_E_CHGFROM, 0, "<new@example.org>", "RET=HDRS",
	    NULL, 0);
	ATF_REQUIRE(cleanup_msg_end(m, &r));
	cleanup_msg_free(m);
	expect_ok(&r);
	expect_content(r.queue_id,
	    "X-Top: t\r\n"
	    "X-Mid: m\r\n"
	    "Received: from c.example (c.example [192.0.2.1])\r\n"
	    "\tby host.example.com (Petrel) with SMTP id QID; " DATE "\r\n"
	    "X-A: 1\r\n"
	    "X-A: two\r\n\tfolded\r\n"
	    "From: f@x\r\n"
	    "Message-ID: " MSGID_HEAD "QID@host.example.com>\r\n"
	    "Date: " DATE "\r\n"
	    "X-End: e\r\n"
	    "X-New: n\r\n"
	    "\r\n"
	    "new\r\nbody\r\n");
	/* b1 deleted (done), even though the envelope was written again */
	rcpts_of(r.queue_id, &got);
	ATF_CHECK_STREQ(str_cstr(&got),
	    "b2@example.net;c@example.net;d@example.net notify=8;");
	qfile_t *qf = open_q(r.queue_id);
	ATF_CHECK_STREQ(qfile_sender(qf), "new@example.org");
	ATF_CHECK_EQ(qfile_ret(qf), QF_RET_HDRS);
	ATF_CHECK_STREQ(qfile_attr(qf, "client_name"), "c.example");
	qfile_close(qf);

	/* quarantine: into hold/; a message without edits as usual */
	e = env0("a@example.org");
	e.uid = 1000;
	e.flags = CLEANUP_FLAG_MILTER;
	m = cleanup_msg_new(&cfg, &e);
	cleanup_msg_rcpt(m, "b@example.net", NULL, false, 0);
	cleanup_msg_data(m, "Subject: q\n\nbody\n", 17);
	cleanup_msg_edit(m, MILTER_E_QUARANTINE, 0, NULL, "look", NULL, 0);
	ATF_REQUIRE(cleanup_msg_end(m, &r));
	cleanup_msg_free(m);
	char path[256];
	snprintf(path, sizeof(path), "q/hold/%s", r.queue_id);
	ATF_CHECK_MSG(access(path, F_OK) == 0, "%s not in hold/", r.queue_id);
	/* an unknown edit type: a clean temporary failure */
	m = cleanup_msg_new(&cfg, &e);
	cleanup_msg_rcpt(m, "b@example.net", NULL, false, 0);
	cleanup_msg_data(m, "Subject: q\n\nbody\n", 17);
	cleanup_msg_edit(m, 99, 0, NULL, NULL, NULL, 0);
	ATF_CHECK(!cleanup_msg_end(m, &r));
	cleanup_msg_free(m);
	ATF_CHECK_EQ(r.status, CLEANUP_STAT_TEMP);
	str_release(&got);
	teardown();
}

ATF_TC_WITHOUT_HEAD(null_sender_from);
ATF_TC_BODY(null_sender_from, tc)
{
	cleanup_msg_envelope_t e = env0("");
	cleanup_reply_t r;

	setup("myorigin = origin.example");
	r = submit(&e, BOB, "Subject: bounce\n\nx\n");
	expect_ok(&r);
	expect_content(r.queue_id,
	    "Subject: bounce\n"
	    "Message-ID: " MSGID_HEAD "QID@host.example.com>\n"
	    "Date: " DATE "\n"
	    "From: MAILER-DAEMON@origin.example\n"
	    "\nx\n");
	qfile_t *qf = open_q(r.queue_id);
	ATF_CHECK_STREQ(qfile_sender(qf), "");
	qfile_close(qf);
	teardown();
}

ATF_TC_WITHOUT_HEAD(odd_shapes);
ATF_TC_BODY(odd_shapes, tc)
{
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;
	const char *added =
	    "Message-ID: " MSGID_HEAD "QID@host.example.com>\n"
	    "Date: " DATE "\n"
	    "From: a@example.org\n";

	setup(NULL);
	/* no header at all: the empty line is added before the body */
	r = submit(&e, BOB, "just a body line\nSubject: not a header\n");
	expect_ok(&r);
	str_t w = STR_INIT;
	str_setf(&w, "%s\njust a body line\nSubject: not a header\n", added);
	expect_content(r.queue_id, str_cstr(&w));
	/* an mbox "From " line ends the header, it is not a header */
	r = submit(&e, BOB, "Subject: s\nFrom alice Tue Jun 3 2025\nbody\n");
	expect_ok(&r);
	str_setf(&w, "Subject: s\n%s\nFrom alice Tue Jun 3 2025\nbody\n", added);
	expect_content(r.queue_id, str_cstr(&w));
	/* empty message */
	r = submit(&e, BOB, "");
	expect_ok(&r);
	expect_content(r.queue_id, added);
	/* header only, last line without newline */
	r = submit(&e, BOB, "Subject: only");
	expect_ok(&r);
	str_setf(&w, "Subject: only\n%s", added);
	expect_content(r.queue_id, str_cstr(&w));
	/* body without final newline */
	r = submit(&e, BOB, "Subject: s\n\nno newline");
	expect_ok(&r);
	str_setf(&w, "Subject: s\n%s\nno newline", added);
	expect_content(r.queue_id, str_cstr(&w));
	/* a continuation line first is body */
	r = submit(&e, BOB, " indented\n");
	expect_ok(&r);
	str_setf(&w, "%s\n indented\n", added);
	expect_content(r.queue_id, str_cstr(&w));
	str_release(&w);
	teardown();
}

ATF_TC_WITHOUT_HEAD(chunking_invariance);
ATF_TC_BODY(chunking_invariance, tc)
{
	/* The result does not depend on how the content is split. */
	str_t in = STR_INIT, first = STR_INIT, got = STR_INIT;
	static const size_t chunks[] = { 1, 2, 3, 7, 100, 4096, 1 << 20 };
	cleanup_msg_envelope_t e = env0("a@example.org");
	char id0[QUEUE_ID_SIZE];

	setup(NULL);
	str_cat(&in, "Received: from x\r\n\tby y; date\r\n"
	    "Subject: ");
	for (int i = 0; i < 3000; i++)
		str_cat(&in, "long ");
	str_cat(&in, "\r\n\tcontinued\r\nTo: bob, \"x y\" <c@d.example>\r\n"
	    "\r\nbody\r\nline\nmixed\r\n.\r\n");
	for (size_t k = 0; k < sizeof(chunks) / sizeof(chunks[0]); k++) {
		cleanup_reply_t r = submit_chunked(&e, BOB, str_cstr(&in),
		    str_len(&in), chunks[k]);
		expect_ok(&r);
		content_of(r.queue_id, &got);
		/* the queue ID appears in the Message-ID: make them equal */
		char *p = strstr(got.buf, r.queue_id);
		ATF_REQUIRE(p != NULL);
		if (k == 0) {
			bcopy_str(id0, sizeof(id0), r.queue_id);
			str_set(&first, str_cstr(&got));
		} else {
			str_t fixed = STR_INIT;
			str_append(&fixed, got.buf, (size_t)(p - got.buf));
			str_cat(&fixed, id0);
			str_cat(&fixed, p + strlen(r.queue_id));
			ATF_CHECK_MSG(strcmp(str_cstr(&fixed), str_cstr(&first)) == 0,
			    "chunk %zu differs", chunks[k]);
			str_release(&fixed);
		}
	}
	ATF_CHECK(strstr(str_cstr(&first), "\r\nTo: bob@host.example.com, "
	    "\"x y\" <c@d.example>\r\n") != NULL);
	ATF_CHECK(strstr(str_cstr(&first), "\r\nFrom: a@example.org\r\n\r\nbody\r\n"
	    "line\nmixed\r\n.\r\n") != NULL);
	str_release(&in);
	str_release(&first);
	str_release(&got);
	teardown();
}

/* ---- limits and bad input ---- */

ATF_TC_WITHOUT_HEAD(long_lines);
ATF_TC_BODY(long_lines, tc)
{
	str_t in = STR_INIT, got = STR_INIT;
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;

	setup(NULL);
	str_cat(&in, "Subject: big\n\n");
	for (int i = 0; i < 1024 * 1024; i++)
		str_putc(&in, (char)('a' + i % 26));
	str_cat(&in, "\nend\n");
	r = submit_chunked(&e, BOB, str_cstr(&in), str_len(&in), 65536);
	expect_ok(&r);
	content_of(r.queue_id, &got);
	const char *body = strstr(str_cstr(&got), "\n\n");
	ATF_REQUIRE(body != NULL);
	ATF_CHECK_EQ(strlen(body + 2), str_len(&in) - 14);
	ATF_CHECK(memcmp(body + 2, str_cstr(&in) + 14, str_len(&in) - 14) == 0);

	/* A header line over header_size_limit: rejected. */
	teardown();
	setup("header_size_limit = 1000");
	str_set(&in, "Subject: ");
	for (int i = 0; i < 1000; i++)
		str_putc(&in, 'x');
	str_cat(&in, "\n\nbody\n");
	r = submit(&e, BOB, str_cstr(&in));
	expect_fail(&r, CLEANUP_STAT_PERM, "5.3.4", "header_size_limit");
	/* ... also when it is many short lines */
	str_reset(&in);
	for (int i = 0; i < 100; i++)
		str_cat(&in, "X-Header: 0123456789\n");
	str_cat(&in, "\nbody\n");
	r = submit(&e, BOB, str_cstr(&in));
	expect_fail(&r, CLEANUP_STAT_PERM, "5.3.4", "header_size_limit");
	/* ... and not when a long line is body */
	str_set(&in, "Subject: x\n\n");
	for (int i = 0; i < 5000; i++)
		str_putc(&in, 'y');
	r = submit_chunked(&e, BOB, str_cstr(&in), str_len(&in), 100);
	expect_ok(&r);
	str_release(&in);
	str_release(&got);
	teardown();
}

ATF_TC_WITHOUT_HEAD(nul_bytes);
ATF_TC_BODY(nul_bytes, tc)
{
	static const char hdr[] = "Subject: a\0b\n\nbody\n";
	static const char body[] = "Subject: s\n\nbo\0dy\n";
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;
	str_t got = STR_INIT;

	setup(NULL);
	r = submit_chunked(&e, BOB, hdr, sizeof(hdr) - 1, 3);
	expect_fail(&r, CLEANUP_STAT_PERM, "5.6.0", "NUL byte in message header");
	r = submit_chunked(&e, BOB, body, sizeof(body) - 1, 3);
	expect_ok(&r);
	content_of(r.queue_id, &got);
	ATF_CHECK(memmem(str_cstr(&got), str_len(&got), "\n\nbo\0dy\n", 8) != NULL);
	str_release(&got);
	teardown();
}

ATF_TC_WITHOUT_HEAD(hopcount);
ATF_TC_BODY(hopcount, tc)
{
	str_t in = STR_INIT;
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;

	setup("hopcount_limit = 5");
	for (int i = 0; i < 5; i++)
		str_cat(&in, "Received: from a by b; date\n");
	str_cat(&in, "\nbody\n");
	r = submit(&e, BOB, str_cstr(&in));
	expect_ok(&r);
	str_t path = STR_INIT;
	queue_path(&cfg.ql, QUEUE_INCOMING, r.queue_id, &path);
	ATF_REQUIRE_EQ(unlink(str_cstr(&path)), 0);
	queued--;
	/* ours makes six for local or SMTP mail */
	e.uid = 100;
	r = submit(&e, BOB, str_cstr(&in));
	expect_fail(&r, CLEANUP_STAT_PERM, "5.4.6", "too many hops");
	e.uid = -1;
	/* lower case counts too */
	str_set(&path, "received: x\n");
	str_cat(&path, str_cstr(&in));
	r = submit(&e, BOB, str_cstr(&path));
	expect_fail(&r, CLEANUP_STAT_PERM, "5.4.6", "hopcount_limit 5");
	str_release(&path);
	str_release(&in);
	teardown();
}

ATF_TC_WITHOUT_HEAD(size_limit);
ATF_TC_BODY(size_limit, tc)
{
	str_t in = STR_INIT;
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;

	setup("message_size_limit = 1000");
	str_set(&in, "Subject: s\n\n");
	while (str_len(&in) < 1000)
		str_putc(&in, 'x');
	r = submit_chunked(&e, BOB, str_cstr(&in), str_len(&in), 10);
	expect_ok(&r);
	str_t path = STR_INIT;
	queue_path(&cfg.ql, QUEUE_INCOMING, r.queue_id, &path);
	ATF_REQUIRE_EQ(unlink(str_cstr(&path)), 0);
	queued--;
	str_putc(&in, 'x');
	r = submit_chunked(&e, BOB, str_cstr(&in), str_len(&in), 10);
	expect_fail(&r, CLEANUP_STAT_PERM, "5.3.4", "message_size_limit");
	str_release(&path);
	str_release(&in);
	teardown();
}

/* A queue that cannot take the file: the reply names no path and no
 * system error text (those go to the log); a full file system is 4.3.1. */
ATF_TC_WITHOUT_HEAD(queue_trouble_private);
ATF_TC_BODY(queue_trouble_private, tc)
{
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;
	str_t big = STR_INIT;

	setup(NULL);
	if (geteuid() == 0) {
		/* A 64 KiB file system under q/incoming fills up. */
		if (system("mount -t tmpfs -o size=64k petrel-test q/incoming "
		    ">/dev/null 2>&1") != 0)
			atf_tc_skip("cannot mount a tmpfs here");
		str_set(&big, "Subject: big\n\n");
		while (str_len(&big) < 200000)
			str_cat(&big, "0123456789012345678901234567890123456789\n");
		r = submit(&e, BOB, str_cstr(&big));
		ATF_CHECK_EQ(system("umount q/incoming"), 0);
		ATF_CHECK_EQ(r.status, CLEANUP_STAT_TEMP);
		ATF_CHECK_STREQ(r.dsn, "4.3.1");
		ATF_CHECK_STREQ(r.text, "insufficient system storage");
	} else {
		ATF_REQUIRE_EQ(chmod("q/incoming", 0500), 0);
		r = submit(&e, BOB, "Subject: s\n\nbody\n");
		ATF_CHECK_EQ(chmod("q/incoming", 0700), 0);
		ATF_CHECK_EQ(r.status, CLEANUP_STAT_TEMP);
		ATF_CHECK_STREQ(r.dsn, "4.3.0");
		ATF_CHECK_STREQ(r.text, "queue file write error");
	}
	ATF_CHECK(strchr(r.text, '/') == NULL);
	str_release(&big);
	teardown();
}

ATF_TC_WITHOUT_HEAD(bad_envelopes);
ATF_TC_BODY(bad_envelopes, tc)
{
	cleanup_msg_envelope_t e;
	cleanup_reply_t r;
	cleanup_msg_t *m;
	const char *badr[] = { "ok@example.net", "a@b..example", NULL };
	const char *none[] = { NULL };

	setup(NULL);
	e = env0("bad@example..org");
	r = submit(&e, BOB, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.1.7", "bad sender address");
	e = env0("a@example.org");
	r = submit(&e, badr, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.1.3", "bad recipient address <a@b..example>");
	r = submit(&e, none, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.1.0", "no recipients");
	e.envid = "bad+ZZ";
	r = submit(&e, BOB, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "ENVID");
	e = env0("a@example.org");
	e.ret = 7;
	r = submit(&e, BOB, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "RET");
	e = env0("a@example.org");
	e.log_ident = "two\nlines";
	r = submit(&e, BOB, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "log_ident");
	e = env0("a@example.org");
	e.flags = 128;	/* the first unknown bit */
	r = submit(&e, BOB, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "flags");
	e = env0("a@example.org");
	cleanup_attr_t reserved[] = { { "client_name", "x" } };
	e.attrs = reserved;
	e.nattrs = 1;
	r = submit(&e, BOB, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "reserved");
	cleanup_attr_t badname[] = { { "Upper", "x" } };
	e.attrs = badname;
	r = submit(&e, BOB, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "attribute name");
	cleanup_attr_t twice[] = { { "a", "x" }, { "a", "y" } };
	e.attrs = twice;
	e.nattrs = 2;
	r = submit(&e, BOB, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "twice");

	/* ORCPT and NOTIFY are checked */
	e = env0("a@example.org");
	m = cleanup_msg_new(&cfg, &e);
	cleanup_msg_rcpt(m, "x@example.net", "rfc822", false, 0);
	cleanup_msg_end(m, &r);
	cleanup_msg_free(m);
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "ORCPT");
	m = cleanup_msg_new(&cfg, &e);
	cleanup_msg_rcpt(m, "x@example.net", NULL, true, DSN_NOTIFY_NEVER | 1);
	cleanup_msg_end(m, &r);
	cleanup_msg_free(m);
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.4", "NOTIFY");
	teardown();
}

ATF_TC_WITHOUT_HEAD(recipient_limit_and_dsn);
ATF_TC_BODY(recipient_limit_and_dsn, tc)
{
	const char *four[] = { "1@x.example", "2@x.example", "3@x.example",
	    "4@x.example", NULL };
	const char *dups[] = { "1@x.example", "1@X.EXAMPLE", "2@x.example",
	    "3@x.example", "2@x.example", NULL };
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;
	str_t s = STR_INIT;
	cleanup_msg_t *m;

	setup("cleanup_recipient_limit = 3");
	r = submit(&e, four, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.5.3", "too many recipients");
	/* duplicates do not count */
	r = submit(&e, dups, "S: x\n\nb\n");
	expect_ok(&r);
	rcpts_of(r.queue_id, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "1@x.example;2@x.example;3@x.example;");

	/* DSN values are stored */
	e.envid = "id+2B1";
	e.ret = QF_RET_HDRS;
	m = cleanup_msg_new(&cfg, &e);
	cleanup_msg_rcpt(m, "x@example.net", "rfc822;X+2Bx@example.net", true,
	    DSN_NOTIFY_SUCCESS | DSN_NOTIFY_FAILURE);
	cleanup_msg_rcpt(m, "y@example.net", NULL, true, DSN_NOTIFY_NEVER);
	cleanup_msg_end(m, &r);
	cleanup_msg_free(m);
	expect_ok(&r);
	rcpts_of(r.queue_id, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "x@example.net orcpt=rfc822;X+2Bx@example.net "
	    "notify=3;y@example.net notify=8;");
	qfile_t *qf = open_q(r.queue_id);
	ATF_CHECK_STREQ(qfile_envid(qf), "id+2B1");
	ATF_CHECK_EQ(qfile_ret(qf), QF_RET_HDRS);
	qfile_close(qf);
	str_release(&s);
	teardown();
}

/* ---- rewriting ---- */

ATF_TC_WITHOUT_HEAD(header_rewriting);
ATF_TC_BODY(header_rewriting, tc)
{
	cleanup_msg_envelope_t e = env0("alice");
	cleanup_reply_t r;

	setup("sender_canonical_maps = inline:{ alice@host.example.com=Alice.Smith@example.com }\n"
	    "recipient_canonical_maps = inline:{ alice@host.example.com=alice-in@example.com }\n"
	    "canonical_maps = inline:{ old@example.net=new@example.net }");
	r = submit(&e, BOB,
	    "From: Alice (the sender) <alice>\n"
	    "Reply-To: alice\n"
	    "To: \"Bob B.\" <old@example.net>,\n"
	    "  alice, group: old@example.net, bad address;\n"
	    "Cc: untouched@example.org (kept as is)\n"
	    "Subject: old@example.net is not an address header\n"
	    "\nold@example.net\n");
	expect_ok(&r);
	expect_content(r.queue_id,
	    "From: Alice (the sender) <Alice.Smith@example.com>\n"
	    "Reply-To: Alice.Smith@example.com\n"
	    "To: \"Bob B.\" <new@example.net>,\n"
	    "  alice-in@example.com, group: new@example.net, bad address;\n"
	    "Cc: untouched@example.org (kept as is)\n"
	    "Subject: old@example.net is not an address header\n"
	    "Message-ID: " MSGID_HEAD "QID@host.example.com>\n"
	    "Date: " DATE "\n"
	    "\nold@example.net\n");
	qfile_t *qf = open_q(r.queue_id);
	ATF_CHECK_STREQ(qfile_sender(qf), "Alice.Smith@example.com");
	qfile_close(qf);
	teardown();
}

ATF_TC_WITHOUT_HEAD(extract_recipients);
ATF_TC_BODY(extract_recipients, tc)
{
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;
	str_t s = STR_INIT;
	const char *env_rcpt[] = { "c@example.net", "extra@example.net", NULL };

	setup("canonical_maps = inline:{ old@example.net=new@example.net }");
	e.flags = CLEANUP_FLAG_EXTRACT;
	r = submit(&e, env_rcpt,
	    "To: \"B\" <b@example.net>, team: old@example.net, bare;\n"
	    "Cc: c@example.net (dup of an envelope recipient)\n"
	    "Bcc: secret@example.net,\n"
	    " secret2@example.net\n"
	    "Subject: t\n\nbody\nBcc: in the body\n");
	expect_ok(&r);
	rcpts_of(r.queue_id, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "c@example.net;extra@example.net;"
	    "b@example.net;new@example.net orig=old@example.net;"
	    "bare@host.example.com orig=bare;secret@example.net;"
	    "secret2@example.net;");
	expect_content(r.queue_id,
	    "To: \"B\" <b@example.net>, team: new@example.net, bare@host.example.com;\n"
	    "Cc: c@example.net (dup of an envelope recipient)\n"
	    "Subject: t\n"
	    "Message-ID: " MSGID_HEAD "QID@host.example.com>\n"
	    "Date: " DATE "\n"
	    "From: a@example.org\n"
	    "\nbody\nBcc: in the body\n");

	/* Resent- headers win; all Bcc kinds go */
	r = submit(&e, NULL,
	    "To: old-to@example.net\n"
	    "Resent-To: new-to@example.net\n"
	    "Resent-Bcc: rb@example.net\n"
	    "Bcc: ignored@example.net\n\nb\n");
	expect_ok(&r);
	rcpts_of(r.queue_id, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "new-to@example.net;rb@example.net;");
	content_of(r.queue_id, &s);
	ATF_CHECK(strstr(str_cstr(&s), "Bcc") == NULL);

	/* errors */
	r = submit(&e, NULL, "To: good@example.net, bad@@example.net\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.1.3", "in To: header");
	r = submit(&e, NULL, "To: undisclosed-recipients:;\nSubject: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.1.0", "no recipient addresses found");
	/* without -t the header is not looked at */
	e.flags = 0;
	r = submit(&e, NULL, "To: b@example.net\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_PERM, "5.1.0", "no recipients");
	str_release(&s);
	teardown();
}

ATF_TC_WITHOUT_HEAD(virtual_and_duplicates);
ATF_TC_BODY(virtual_and_duplicates, tc)
{
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_reply_t r;
	str_t s = STR_INIT;
	const char *rc[] = { "list@v.example", "c@w.example", "user",
	    "loop@v.example", NULL };

	setup("virtual_alias_maps = inline:{ { list@v.example = b@w.example, "
	    "c@w.example }, user@host.example.com=u@w.example, "
	    "loop@v.example=loop2@v.example, loop2@v.example=loop@v.example }");
	r = submit(&e, rc + 3, "S: x\n\nb\n");
	expect_fail(&r, CLEANUP_STAT_TEMP, "4.3.0", "loop");
	rc[3] = NULL;
	r = submit(&e, rc, "S: x\n\nb\n");
	expect_ok(&r);
	rcpts_of(r.queue_id, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "b@w.example orig=list@v.example;"
	    "c@w.example orig=list@v.example;u@w.example orig=user;");
	teardown();

	setup("virtual_alias_maps = inline:{ { list@v.example = b@w.example, "
	    "c@w.example } }\nenable_original_recipient = no");
	rc[2] = NULL;
	r = submit(&e, rc, "S: x\n\nb\n");
	expect_ok(&r);
	rcpts_of(r.queue_id, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "b@w.example;c@w.example;");
	str_release(&s);
	teardown();
}

ATF_TC_WITHOUT_HEAD(abandoned);
ATF_TC_BODY(abandoned, tc)
{
	/* A message freed before its end leaves nothing, not even a
	 * temporary file. */
	cleanup_msg_envelope_t e = env0("a@example.org");
	cleanup_msg_t *m;

	setup(NULL);
	m = cleanup_msg_new(&cfg, &e);
	cleanup_msg_rcpt(m, "b@example.net", NULL, false, 0);
	cleanup_msg_data(m, "Subject: x\n\nbody\n", 17);
	ATF_CHECK_EQ(incoming_files(), 1);	/* the temporary file */
	ATF_CHECK(queue_id_valid(cleanup_msg_queue_id(m)));
	cleanup_msg_free(m);
	ATF_CHECK_EQ(incoming_files(), 0);
	teardown();
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, local_submission);
	ATF_TP_ADD_TC(tp, existing_headers_kept);
	ATF_TP_ADD_TC(tp, smtp_received);
	ATF_TP_ADD_TC(tp, null_sender_from);
	ATF_TP_ADD_TC(tp, odd_shapes);
	ATF_TP_ADD_TC(tp, chunking_invariance);
	ATF_TP_ADD_TC(tp, long_lines);
	ATF_TP_ADD_TC(tp, nul_bytes);
	ATF_TP_ADD_TC(tp, hopcount);
	ATF_TP_ADD_TC(tp, size_limit);
	ATF_TP_ADD_TC(tp, queue_trouble_private);
	ATF_TP_ADD_TC(tp, bad_envelopes);
	ATF_TP_ADD_TC(tp, recipient_limit_and_dsn);
	ATF_TP_ADD_TC(tp, header_rewriting);
	ATF_TP_ADD_TC(tp, extract_recipients);
	ATF_TP_ADD_TC(tp, virtual_and_duplicates);
	ATF_TP_ADD_TC(tp, abandoned);
	ATF_TP_ADD_TC(tp, milter_edits);
	return atf_no_error();
}
