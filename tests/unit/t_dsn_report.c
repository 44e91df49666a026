/* Unit tests for libglobal/dsn_report: the notices are parsed back here
 * (a small MIME reader) and checked field by field: structure, boundary,
 * per-message and per-recipient fields, the returned original. */
#include <atf-c.h>
#include <stdlib.h>
#include <string.h>
#include "dsn_report.h"
#include "qfile.h"
#include "str.h"

#define QID "4QMZ7X2KCB7H"

/* ---- a small MIME reader --------------------------------------------- */

typedef struct field {
	char *name, *value;
} field_t;

typedef struct fields {
	field_t v[64];
	size_t n;
} fields_t;

/* Parses a header block at text (unfolding continuation lines, which
 * keep their leading white space); returns the start of the body (after
 * the empty line) or NULL when there is none. */
static const char *parse_fields(const char *text, fields_t *f)
{
	const char *p = text;

	f->n = 0;
	while (*p && *p != '\n') {
		const char *eol = strchr(p, '\n'), *colon;
		if (!eol)
			return NULL;
		if ((*p == ' ' || *p == '\t') && f->n > 0) {
			field_t *last = &f->v[f->n - 1];
			size_t old = strlen(last->value), add = (size_t)(eol - p);
			last->value = realloc(last->value, old + add + 1);
			memcpy(last->value + old, p, add);
			last->value[old + add] = 0;
		} else {
			colon = memchr(p, ':', (size_t)(eol - p));
			ATF_REQUIRE_MSG(colon, "header line without colon: %.*s",
			    (int)(eol - p), p);
			ATF_REQUIRE(f->n < 64);
			f->v[f->n].name = strndup(p, (size_t)(colon - p));
			colon++;
			while (*colon == ' ')
				colon++;
			f->v[f->n].value = strndup(colon, (size_t)(eol - colon));
			f->n++;
		}
		p = eol + 1;
	}
	return *p == '\n' ? p + 1 : p;
}

static const char *get(const fields_t *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcasecmp(f->v[i].name, name) == 0)
			return f->v[i].value;
	return NULL;
}

static size_t count(const fields_t *f, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < f->n; i++)
		n += strcasecmp(f->v[i].name, name) == 0;
	return n;
}

static void free_fields(fields_t *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].name);
		free(f->v[i].value);
	}
	f->n = 0;
}

/* boundary="..." from a Content-Type value. */
static char *boundary_of(const char *ct)
{
	const char *b = strstr(ct, "boundary=\"");
	const char *e;

	ATF_REQUIRE_MSG(b, "no boundary in %s", ct);
	b += 10;
	e = strchr(b, '"');
	ATF_REQUIRE(e);
	return strndup(b, (size_t)(e - b));
}

typedef struct mime {
	fields_t top;
	char *boundary;
	char *part[8];		/* whole text of each part */
	size_t nparts;
	fields_t ph[8];		/* headers of each part */
	const char *pbody[8];	/* body of each part (into part[i]) */
} mime_t;

/* Splits a multipart message; checks the delimiter lines strictly: every
 * part starts after a "--B" line, the last is closed by "--B--", and no
 * other line starts with "--B". */
static void parse_mime(const char *msg, mime_t *m)
{
	const char *body = parse_fields(msg, &m->top), *p, *start = NULL;
	size_t blen;

	memset(m->part, 0, sizeof(m->part));
	m->nparts = 0;
	ATF_REQUIRE(body);
	m->boundary = boundary_of(get(&m->top, "Content-Type"));
	blen = strlen(m->boundary);
	for (p = body; *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		bool delim = len >= blen + 2 && p[0] == '-' && p[1] == '-' &&
		    memcmp(p + 2, m->boundary, blen) == 0;
		if (delim) {
			bool close = len == blen + 4 && p[blen + 2] == '-' &&
			    p[blen + 3] == '-';
			ATF_REQUIRE_MSG(len == blen + 2 || close,
			    "line starting with the boundary: %.*s", (int)len, p);
			if (start) {
				/* The LF before the delimiter belongs to it. */
				size_t n = (size_t)(p - start);
				ATF_REQUIRE(n > 0 && start[n - 1] == '\n');
				ATF_REQUIRE(m->nparts < 8);
				m->part[m->nparts++] = strndup(start, n - 1);
			}
			if (close) {
				ATF_REQUIRE_MSG(eol && eol[1] == 0,
				    "text after the closing delimiter");
				start = NULL;
				break;
			}
			start = eol ? eol + 1 : p + len;
		}
		p = eol ? eol + 1 : p + len;
	}
	ATF_REQUIRE_MSG(start == NULL, "no closing delimiter");
	for (size_t i = 0; i < m->nparts; i++) {
		m->pbody[i] = parse_fields(m->part[i], &m->ph[i]);
		ATF_REQUIRE(m->pbody[i]);
	}
}

static void free_mime(mime_t *m)
{
	free_fields(&m->top);
	free(m->boundary);
	for (size_t i = 0; i < m->nparts; i++) {
		free_fields(&m->ph[i]);
		free(m->part[i]);
	}
}

/* The delivery-status body: blocks separated by empty lines. */
static size_t parse_status(const char *body, fields_t *blocks, size_t max)
{
	const char *p = body;
	size_t n = 0;

	while (*p && n < max) {
		p = parse_fields(p, &blocks[n++]);
		if (!p)
			break;
	}
	return n;
}

/* ---- the original message ---------------------------------------------- */

static const char original[] =
    "Received: from client.example.org (client.example.org [192.0.2.9])\n"
    "\tby mx.example.com (Petrel) with ESMTP id 4QMZ7X2KCB7H\n"
    "From: Alice <alice@example.org>\n"
    "To: bob@example.net, \"john doe\"@example.net\n"
    "Subject: quarterly report\n"
    "Message-Id: <1@example.org>\n"
    "\n"
    "Hello Bob,\n"
    "\n"
    "the numbers are attached.\n"
    "-- \n"
    "Alice\n";

typedef struct src {
	const char *text;
	size_t pos;
} src_t;

static int src_line(void *ctx, str_t *line, str_t *err)
{
	src_t *s = ctx;
	const char *p = s->text + s->pos, *eol;
	(void)err;

	if (!*p)
		return 0;
	eol = strchr(p, '\n');
	if (!eol)
		eol = p + strlen(p);
	str_reset(line);
	str_append(line, p, (size_t)(eol - p));
	s->pos = (size_t)(eol - s->text) + (*eol == '\n');
	return 1;
}

static void src_rewind(void *ctx)
{
	((src_t *)ctx)->pos = 0;
}

static sl_rec_t rec(const char *addr, const char *status, const char *reason)
{
	sl_rec_t r;

	memset(&r, 0, sizeof(r));
	r.rcpt.address = (char *)addr;
	r.rcpt.offset = 100;
	r.st.action = status[0] == '2' ? DLV_ACT_DELIVERED :
	    status[0] == '4' ? DLV_ACT_DELAYED : DLV_ACT_FAILED;
	bcopy_str(r.st.status, sizeof(r.st.status), status);
	r.st.reason = (char *)reason;
	r.time = 1767225900;
	return r;
}

static void base_report(dsn_report_t *r, sl_rec_t *recs, size_t n)
{
	memset(r, 0, sizeof(*r));
	r->kind = DSN_NOTICE_BOUNCE;
	r->audience = DSN_TO_SENDER;
	r->myhostname = "mx.example.com";
	r->mail_name = "Petrel";
	r->queue_id = QID;
	r->orig_sender = "alice@example.org";
	r->to = "alice@example.org";
	r->arrival = 1767225600;
	r->now = 1767226000;
	r->ret = DSN_RETURN_FULL;
	r->size_limit = 50000;
	r->content_size = sizeof(original) - 1;
	r->rec = recs;
	r->nrec = n;
}

static void build(const dsn_report_t *r, const char *orig, str_t *out)
{
	src_t s = { orig, 0 };
	str_t err = STR_INIT;

	str_reset(out);
	ATF_REQUIRE_MSG(dsn_report_build(r, src_line, src_rewind, &s, out,
	    &err) == 0, "%s", str_cstr(&err));
	str_release(&err);
	/* RFC 5322: no line longer than 998 octets */
	for (const char *p = out->buf; *p;) {
		size_t l = strcspn(p, "\n");
		ATF_CHECK_MSG(l <= 998, "line of %zu octets", l);
		p += l + (p[l] == '\n');
	}
}

ATF_TC_WITHOUT_HEAD(bounce_full);
ATF_TC_BODY(bounce_full, tc)
{
	sl_rec_t recs[3];
	dsn_report_t r;
	str_t out = STR_INIT;
	mime_t m;
	fields_t b[8];
	size_t nb;

	setenv("TZ", "UTC", 1);
	recs[0] = rec("bob@example.net", "5.1.1",
	    "host mx.example.net[192.0.2.1] said: 550 5.1.1 no such user "
	    "(in reply to RCPT TO command)");
	recs[0].rcpt.orcpt = (char *)"rfc822;Bob+2Bx@example.net";
	recs[0].st.diag_type = (char *)"smtp";
	recs[0].st.diag_text = (char *)"550 5.1.1 no such user";
	recs[0].st.remote_mta = (char *)"mx.example.net";
	recs[1] = rec("john doe@example.net", "4.4.1",
	    "connect to mx.example.net[192.0.2.1]:25: Connection refused");
	recs[1].st.action = DLV_ACT_FAILED;	/* expired */
	recs[2] = rec("carol@example.net", "5.2.2", "mailbox full");
	recs[2].rcpt.orig = (char *)"list@example.net";
	base_report(&r, recs, 3);
	build(&r, original, &out);
	parse_mime(str_cstr(&out), &m);

	/* top-level header */
	ATF_CHECK_STREQ(get(&m.top, "From"),
	    "Mail Delivery System <MAILER-DAEMON@mx.example.com>");
	ATF_CHECK_STREQ(get(&m.top, "To"), "<alice@example.org>");
	ATF_CHECK_STREQ(get(&m.top, "Subject"),
	    "Undelivered Mail Returned to Sender");
	ATF_CHECK_STREQ(get(&m.top, "Auto-Submitted"), "auto-replied");
	ATF_CHECK_STREQ(get(&m.top, "MIME-Version"), "1.0");
	ATF_CHECK_STREQ(get(&m.top, "Content-Transfer-Encoding"), "7bit");
	ATF_CHECK_STREQ(get(&m.top, "Message-Id"),
	    "<20260101000640." QID ".BS@mx.example.com>");
	ATF_CHECK_STREQ(get(&m.top, "Date"), "Thu, 1 Jan 2026 00:06:40 +0000");
	ATF_CHECK(strncmp(get(&m.top, "Content-Type"),
	    "multipart/report; report-type=delivery-status; boundary=\"", 57) == 0);
	ATF_REQUIRE_EQ(m.nparts, 3);

	/* 1: human-readable */
	ATF_CHECK_STREQ(get(&m.ph[0], "Content-Type"), "text/plain; charset=us-ascii");
	ATF_CHECK(strstr(m.pbody[0], "This is the Petrel mail system at host mx.example.com."));
	ATF_CHECK(strstr(m.pbody[0], "<bob@example.net>:\n    host mx.example.net[192.0.2.1] said:"));
	ATF_CHECK(strstr(m.pbody[0], "<\"john doe\"@example.net>:\n"));
	ATF_CHECK(strstr(m.pbody[0], "    mailbox full\n"));

	/* 2: message/delivery-status */
	ATF_CHECK_STREQ(get(&m.ph[1], "Content-Type"), "message/delivery-status");
	nb = parse_status(m.pbody[1], b, 8);
	ATF_REQUIRE_EQ(nb, 4);
	ATF_CHECK_STREQ(get(&b[0], "Reporting-MTA"), "dns; mx.example.com");
	ATF_CHECK_STREQ(get(&b[0], "X-Petrel-Queue-ID"), QID);
	ATF_CHECK_STREQ(get(&b[0], "X-Petrel-Sender"), "rfc822; alice@example.org");
	ATF_CHECK_STREQ(get(&b[0], "Arrival-Date"), "Thu, 1 Jan 2026 00:00:00 +0000");
	ATF_CHECK(get(&b[0], "Original-Envelope-Id") == NULL);
	ATF_CHECK(get(&b[0], "Final-Recipient") == NULL);

	ATF_CHECK_STREQ(get(&b[1], "Final-Recipient"), "rfc822; bob@example.net");
	ATF_CHECK_STREQ(get(&b[1], "Original-Recipient"), "rfc822; Bob+x@example.net");
	ATF_CHECK_STREQ(get(&b[1], "Action"), "failed");
	ATF_CHECK_STREQ(get(&b[1], "Status"), "5.1.1");
	ATF_CHECK_STREQ(get(&b[1], "Remote-MTA"), "dns; mx.example.net");
	ATF_CHECK_STREQ(get(&b[1], "Diagnostic-Code"), "smtp; 550 5.1.1 no such user");
	ATF_CHECK_STREQ(get(&b[1], "Last-Attempt-Date"), "Thu, 1 Jan 2026 00:05:00 +0000");
	ATF_CHECK_EQ(count(&b[1], "Final-Recipient"), 1);

	ATF_CHECK_STREQ(get(&b[2], "Final-Recipient"), "rfc822; \"john doe\"@example.net");
	ATF_CHECK(get(&b[2], "Original-Recipient") == NULL);
	ATF_CHECK_STREQ(get(&b[2], "Action"), "failed");
	ATF_CHECK_STREQ(get(&b[2], "Status"), "4.4.1");
	ATF_CHECK(get(&b[2], "Remote-MTA") == NULL);
	ATF_CHECK_STREQ(get(&b[2], "Diagnostic-Code"),
	    "X-Petrel; connect to mx.example.net[192.0.2.1]:25: Connection refused");
	ATF_CHECK_STREQ(get(&b[3], "Original-Recipient"), "rfc822; list@example.net");
	ATF_CHECK_STREQ(get(&b[3], "Status"), "5.2.2");
	for (size_t i = 0; i < nb; i++)
		free_fields(&b[i]);

	/* 3: the whole original, byte for byte */
	ATF_CHECK_STREQ(get(&m.ph[2], "Content-Type"), "message/rfc822");
	ATF_CHECK_STREQ(get(&m.ph[2], "Content-Description"), "Undelivered Message");
	ATF_CHECK_STREQ(m.pbody[2], original);
	free_mime(&m);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(headers_only);
ATF_TC_BODY(headers_only, tc)
{
	sl_rec_t recs[1];
	dsn_report_t r;
	str_t out = STR_INIT;
	const char *hdr_end = strstr(original, "\n\n");
	mime_t m;

	recs[0] = rec("bob@example.net", "5.1.1", "no such user");
	for (int how = 0; how < 2; how++) {
		base_report(&r, recs, 1);
		if (how == 0)
			r.ret = DSN_RETURN_HEADERS;	/* RET=HDRS */
		else
			r.size_limit = 100;	/* too large to return whole */
		r.content_size = sizeof(original) - 1;
		build(&r, original, &out);
		parse_mime(str_cstr(&out), &m);
		ATF_REQUIRE_EQ(m.nparts, 3);
		ATF_CHECK_STREQ(get(&m.ph[2], "Content-Type"), "text/rfc822-headers");
		ATF_CHECK_STREQ(get(&m.ph[2], "Content-Description"),
		    "Undelivered Message Headers");
		if (how == 0) {
			ATF_CHECK_EQ(strlen(m.pbody[2]),
			    (size_t)(hdr_end - original) + 1);
			ATF_CHECK(strncmp(m.pbody[2], original,
			    strlen(m.pbody[2])) == 0);
		} else {
			/* the header is cut at the limit too, at a line end */
			ATF_CHECK(strlen(m.pbody[2]) <= 100);
			ATF_CHECK(strncmp(m.pbody[2], original,
			    strlen(m.pbody[2])) == 0);
			ATF_CHECK(m.pbody[2][strlen(m.pbody[2]) - 1] == '\n');
		}
		ATF_CHECK(strstr(m.pbody[2], "Hello Bob") == NULL);
		free_mime(&m);
	}
	/* RET none: two parts */
	base_report(&r, recs, 1);
	r.ret = DSN_RETURN_NONE;
	build(&r, original, &out);
	parse_mime(str_cstr(&out), &m);
	ATF_CHECK_EQ(m.nparts, 2);
	free_mime(&m);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(delay_and_success);
ATF_TC_BODY(delay_and_success, tc)
{
	sl_rec_t recs[2];
	dsn_report_t r;
	str_t out = STR_INIT;
	fields_t b[4];
	mime_t m;

	setenv("TZ", "UTC", 1);
	recs[0] = rec("bob@example.net", "4.4.1", "connection timed out");
	base_report(&r, recs, 1);
	r.kind = DSN_NOTICE_DELAY;
	r.ret = DSN_RETURN_HEADERS;
	r.will_retry_until = 1767225600 + 5 * 86400;
	r.envid = "env-42";
	build(&r, original, &out);
	parse_mime(str_cstr(&out), &m);
	ATF_CHECK_STREQ(get(&m.top, "Subject"), "Delayed Mail (still being retried)");
	ATF_REQUIRE_EQ(m.nparts, 3);
	ATF_CHECK(strstr(m.pbody[0], "Tue, 6 Jan 2026 00:00:00 +0000"));
	ATF_REQUIRE_EQ(parse_status(m.pbody[1], b, 4), 2);
	ATF_CHECK_STREQ(get(&b[0], "Original-Envelope-Id"), "env-42");
	ATF_CHECK_STREQ(get(&b[1], "Action"), "delayed");
	ATF_CHECK_STREQ(get(&b[1], "Status"), "4.4.1");
	ATF_CHECK_STREQ(get(&b[1], "Will-Retry-Until"), "Tue, 6 Jan 2026 00:00:00 +0000");
	ATF_CHECK_STREQ(get(&m.ph[2], "Content-Description"), "Message Headers");
	free_fields(&b[0]);
	free_fields(&b[1]);
	free_mime(&m);

	recs[0] = rec("bob@example.net", "2.0.0", "delivered to mailbox");
	recs[1] = rec("list@example.net", "2.0.0", "relayed");
	recs[1].st.action = DLV_ACT_RELAYED;
	base_report(&r, recs, 2);
	r.kind = DSN_NOTICE_SUCCESS;
	r.ret = DSN_RETURN_HEADERS;
	build(&r, original, &out);
	parse_mime(str_cstr(&out), &m);
	ATF_CHECK_STREQ(get(&m.top, "Subject"), "Successful Mail Delivery Report");
	ATF_REQUIRE_EQ(parse_status(m.pbody[1], b, 4), 3);
	ATF_CHECK_STREQ(get(&b[1], "Action"), "delivered");
	ATF_CHECK_STREQ(get(&b[1], "Status"), "2.0.0");
	ATF_CHECK_STREQ(get(&b[2], "Action"), "relayed");
	ATF_CHECK(get(&b[2], "Will-Retry-Until") == NULL);
	for (int i = 0; i < 3; i++)
		free_fields(&b[i]);
	free_mime(&m);

	/* postmaster copies and double bounces */
	ATF_CHECK_STREQ(dsn_report_subject(DSN_NOTICE_BOUNCE, DSN_TO_POSTMASTER),
	    "Postmaster Copy: Undelivered Mail");
	ATF_CHECK_STREQ(dsn_report_subject(DSN_NOTICE_BOUNCE, DSN_TO_DOUBLE_BOUNCE),
	    "Postmaster Notice: Undeliverable Bounce");
	base_report(&r, recs, 1);
	r.audience = DSN_TO_DOUBLE_BOUNCE;
	r.orig_sender = "";
	r.to = "postmaster";
	build(&r, original, &out);
	parse_mime(str_cstr(&out), &m);
	ATF_CHECK_STREQ(get(&m.top, "To"), "<postmaster>");
	ATF_REQUIRE_EQ(parse_status(m.pbody[1], b, 4), 2);
	ATF_CHECK_STREQ(get(&b[0], "X-Petrel-Sender"), "rfc822; ");
	free_fields(&b[0]);
	free_fields(&b[1]);
	free_mime(&m);
	str_release(&out);
}

/* An original that contains the first boundary the builder would pick
 * (and an 8-bit body): another boundary is chosen, the original is kept
 * intact and the encoding says 8bit. */
ATF_TC_WITHOUT_HEAD(boundary_clash_8bit);
ATF_TC_BODY(boundary_clash_8bit, tc)
{
	sl_rec_t recs[1];
	dsn_report_t r;
	str_t out = STR_INIT, orig = STR_INIT;
	mime_t m;

	recs[0] = rec("bob@example.net", "5.1.1", "no such user");
	base_report(&r, recs, 1);
	str_setf(&orig, "Subject: trap\n\nbody\n--%s.%lld.0/%s\nS\xc3\xa9\n",
	    QID, (long long)r.now, r.myhostname);
	r.content_size = orig.len;
	build(&r, str_cstr(&orig), &out);
	parse_mime(str_cstr(&out), &m);
	ATF_CHECK(strstr(m.boundary, ".1/") != NULL);
	ATF_REQUIRE_EQ(m.nparts, 3);
	ATF_CHECK_STREQ(m.pbody[2], str_cstr(&orig));
	ATF_CHECK_STREQ(get(&m.top, "Content-Transfer-Encoding"), "8bit");
	ATF_CHECK_STREQ(get(&m.ph[2], "Content-Transfer-Encoding"), "8bit");
	free_mime(&m);
	str_release(&out);
	str_release(&orig);
}

ATF_TC_WITHOUT_HEAD(folding);
ATF_TC_BODY(folding, tc)
{
	str_t out = STR_INIT, text = STR_INIT;
	fields_t f;

	for (int i = 0; i < 60; i++)
		str_catf(&text, "word%d ", i);
	str_cat(&text, "end");
	dsn_put_field(&out, "Diagnostic-Code", str_cstr(&text));
	str_cat(&out, "\n");
	for (const char *p = out.buf; *p;) {
		size_t l = strcspn(p, "\n");
		ATF_CHECK_MSG(l <= 78, "line of %zu columns", l);
		p += l + (p[l] == '\n');
	}
	ATF_REQUIRE(parse_fields(str_cstr(&out), &f) != NULL);
	ATF_CHECK_STREQ(get(&f, "Diagnostic-Code"), str_cstr(&text));
	free_fields(&f);
	/* no space: one long line, never beyond the hard limit */
	str_reset(&out);
	str_reset(&text);
	for (int i = 0; i < 2000; i++)
		str_putc(&text, 'x');
	dsn_put_field(&out, "X", str_cstr(&text));
	for (const char *p = out.buf; *p;) {
		size_t l = strcspn(p, "\n");
		ATF_CHECK(l <= 998);
		p += l + (p[l] == '\n');
	}
	str_release(&out);
	str_release(&text);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, bounce_full);
	ATF_TP_ADD_TC(tp, headers_only);
	ATF_TP_ADD_TC(tp, delay_and_success);
	ATF_TP_ADD_TC(tp, boundary_clash_8bit);
	ATF_TP_ADD_TC(tp, folding);
	return atf_no_error();
}
