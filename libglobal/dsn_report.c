/* Delivery status notifications (dsn_report.h, RFC 3464, RFC 3462). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "addr.h"
#include "dsn.h"
#include "dsn_report.h"
#include "mem.h"

/* Longest original line copied as is; longer ones are cut (the notice
 * must stay within the RFC 5322 line limit of 998). */
#define ORIG_LINE_MAX 990

const char *dsn_report_subject(dsn_notice_kind_t kind, dsn_audience_t who)
{
	switch (kind) {
	case DSN_NOTICE_DELAY:
		return who == DSN_TO_SENDER ? "Delayed Mail (still being retried)" :
		    "Postmaster Warning: Delayed Mail";
	case DSN_NOTICE_SUCCESS:
		return "Successful Mail Delivery Report";
	default:
		if (who == DSN_TO_DOUBLE_BOUNCE)
			return "Postmaster Notice: Undeliverable Bounce";
		return who == DSN_TO_SENDER ?
		    "Undelivered Mail Returned to Sender" :
		    "Postmaster Copy: Undelivered Mail";
	}
}

void dsn_put_field(str_t *out, const char *name, const char *value)
{
	size_t col = strlen(name) + 2, len = strlen(value);
	const char *p = value;

	str_cat(out, name);
	str_cat(out, ": ");
	while (len > 0) {
		size_t room = col < 78 ? 78 - col : 0, take;
		if (len <= room) {
			str_append(out, p, len);
			break;
		}
		/* Break at the last space that fits, else at the first space
		 * after it, else hard at the limit. */
		take = 0;
		for (size_t i = room; i > 0; i--)
			if (p[i] == ' ') {
				take = i;
				break;
			}
		if (take == 0) {
			for (size_t i = room + 1; i < len && i < 900; i++)
				if (p[i] == ' ') {
					take = i;
					break;
				}
		}
		if (take == 0)
			take = len < 900 ? len : 900;
		str_append(out, p, take);
		p += take;
		len -= take;
		if (len == 0)
			break;
		/* The space stays at the start of the continuation line:
		 * unfolding restores the value exactly. */
		str_putc(out, '\n');
		col = 0;
	}
	str_putc(out, '\n');
}

/* "rfc822; addr" with the local part quoted as needed. */
static void put_addr_field(str_t *out, const char *name, const char *addr)
{
	str_t v = STR_INIT;

	str_cat(&v, "rfc822; ");
	addr_externalize(addr, &v);
	dsn_put_field(out, name, str_cstr(&v));
	str_release(&v);
}

/* The ORCPT as stored ("type;xtext") decoded for Original-Recipient. */
static void put_orcpt(str_t *out, const char *orcpt)
{
	const char *semi = strchr(orcpt, ';');
	str_t v = STR_INIT, dec = STR_INIT;

	if (!semi || semi == orcpt) {
		str_release(&v);
		return;
	}
	str_append(&v, orcpt, (size_t)(semi - orcpt));
	str_cat(&v, "; ");
	if (addr_xtext_decode(semi + 1, strlen(semi + 1), &dec))
		str_cat(&v, str_cstr(&dec));
	else
		str_cat(&v, semi + 1);
	dsn_put_field(out, "Original-Recipient", str_cstr(&v));
	str_release(&v);
	str_release(&dec);
}

static void put_date_field(str_t *out, const char *name, time_t t)
{
	str_t d = STR_INIT;

	dsn_rfc822_date(t, &d);
	dsn_put_field(out, name, str_cstr(&d));
	str_release(&d);
}

static const char *action_for(const dsn_report_t *r, const sl_rec_t *rec)
{
	switch (r->kind) {
	case DSN_NOTICE_BOUNCE:
		return "failed";
	case DSN_NOTICE_DELAY:
		return "delayed";
	default:
		return rec->st.action == DLV_ACT_RELAYED ? "relayed" :
		    rec->st.action == DLV_ACT_EXPANDED ? "expanded" : "delivered";
	}
}

/* Appends text wrapped at 72 columns, each line indented by indent. */
static void put_wrapped(str_t *out, const char *text, const char *indent)
{
	const char *p = text;
	size_t len = strlen(text);

	while (len > 0) {
		size_t take = len;
		if (take > 72) {
			take = 0;
			for (size_t i = 72; i > 20; i--)
				if (p[i] == ' ') {
					take = i;
					break;
				}
			if (take == 0)
				take = 72;
		}
		str_cat(out, indent);
		str_append(out, p, take);
		str_putc(out, '\n');
		p += take;
		len -= take;
		while (len > 0 && *p == ' ') {
			p++;
			len--;
		}
	}
}

static void human_part(const dsn_report_t *r, str_t *out)
{
	str_t a = STR_INIT, d = STR_INIT;
	const char *name = r->mail_name && *r->mail_name ? r->mail_name : "Petrel";

	str_catf(out, "This is the %s mail system at host %s.\n\n", name,
	    r->myhostname);
	switch (r->kind) {
	case DSN_NOTICE_BOUNCE:
		if (r->audience == DSN_TO_DOUBLE_BOUNCE)
			put_wrapped(out, "A delivery status notification (a "
			    "bounce) could not be delivered to its recipients. "
			    "Bounces are never bounced back, so it comes to "
			    "you, the postmaster. The details are below.", "");
		else if (r->audience == DSN_TO_POSTMASTER)
			put_wrapped(out, "This is a copy, for the postmaster, "
			    "of a notice that a message could not be delivered "
			    "to one or more recipients.", "");
		else
			put_wrapped(out, "Your message could not be delivered "
			    "to one or more recipients, for the reasons shown "
			    "below. It is attached to this notice (or its "
			    "header, when the message is large).", "");
		str_putc(out, '\n');
		put_wrapped(out, "If you need help, please contact the "
		    "postmaster of this system and include this notice.", "");
		break;
	case DSN_NOTICE_DELAY:
		put_wrapped(out, "Your message could not be delivered yet to "
		    "the recipients listed below. The mail system keeps "
		    "trying; you do not need to send the message again.", "");
		if (r->will_retry_until > 0) {
			dsn_rfc822_date(r->will_retry_until, &d);
			str_catf(out, "\nIt will give up on %s and then return "
			    "the message to you.\n", str_cstr(&d));
		}
		break;
	default:
		put_wrapped(out, "Your message was successfully delivered to "
		    "the recipients listed below. You asked for this "
		    "notice (NOTIFY=SUCCESS).", "");
		break;
	}
	str_putc(out, '\n');
	for (size_t i = 0; i < r->nrec; i++) {
		const sl_rec_t *rec = &r->rec[i];
		str_reset(&a);
		addr_externalize(rec->rcpt.address, &a);
		str_catf(out, "<%s>:\n", str_cstr(&a));
		put_wrapped(out, rec->st.reason, "    ");
		str_putc(out, '\n');
	}
	str_release(&a);
	str_release(&d);
}

static void status_part(const dsn_report_t *r, str_t *out)
{
	str_t s = STR_INIT;

	str_setf(&s, "dns; %s", r->myhostname);
	dsn_put_field(out, "Reporting-MTA", str_cstr(&s));
	dsn_put_field(out, "X-Petrel-Queue-ID", r->queue_id);
	put_addr_field(out, "X-Petrel-Sender", r->orig_sender);
	if (r->envid && *r->envid)
		dsn_put_field(out, "Original-Envelope-Id", r->envid);
	put_date_field(out, "Arrival-Date", r->arrival);
	for (size_t i = 0; i < r->nrec; i++) {
		const sl_rec_t *rec = &r->rec[i];
		str_putc(out, '\n');
		put_addr_field(out, "Final-Recipient", rec->rcpt.address);
		if (rec->rcpt.orcpt && *rec->rcpt.orcpt)
			put_orcpt(out, rec->rcpt.orcpt);
		else if (rec->rcpt.orig && *rec->rcpt.orig &&
		    strcmp(rec->rcpt.orig, rec->rcpt.address) != 0)
			put_addr_field(out, "Original-Recipient", rec->rcpt.orig);
		dsn_put_field(out, "Action", action_for(r, rec));
		dsn_put_field(out, "Status", rec->st.status);
		if (rec->st.remote_mta && *rec->st.remote_mta) {
			str_setf(&s, "dns; %s", rec->st.remote_mta);
			dsn_put_field(out, "Remote-MTA", str_cstr(&s));
		}
		if (rec->st.diag_type && *rec->st.diag_type &&
		    rec->st.diag_text && *rec->st.diag_text)
			str_setf(&s, "%s; %s", rec->st.diag_type,
			    rec->st.diag_text);
		else
			str_setf(&s, "X-Petrel; %s", rec->st.reason);
		dsn_put_field(out, "Diagnostic-Code", str_cstr(&s));
		if (rec->time > 0)
			put_date_field(out, "Last-Attempt-Date", (time_t)rec->time);
		if (r->kind == DSN_NOTICE_DELAY && r->will_retry_until > 0)
			put_date_field(out, "Will-Retry-Until", r->will_retry_until);
	}
	str_release(&s);
}

/* The original (or its header) into part; sets *eightbit.  full: the
 * body too.  Lines starting with the boundary marker make *clash true. */
static int original_part(const dsn_report_t *r, bool full, dsn_line_fn lines,
    void *ctx, const char *boundary, str_t *part, bool *eightbit,
    bool *clash, str_t *err)
{
	str_t line = STR_INIT;
	size_t blen = strlen(boundary), total = 0;
	bool in_header = true;
	int res;

	while ((res = lines(ctx, &line, err)) == 1) {
		size_t n = line.len;
		if (in_header && n == 0) {
			in_header = false;
			if (!full)
				break;
		}
		if (n > ORIG_LINE_MAX)
			n = ORIG_LINE_MAX;
		/* A header alone is cut at the size limit too (a header can
		 * be as large as header_size_limit). */
		if (r->size_limit && total + n + 1 > r->size_limit)
			break;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)line.buf[i] >= 0x80)
				*eightbit = true;
		if (n >= blen + 2 && line.buf[0] == '-' && line.buf[1] == '-' &&
		    memcmp(line.buf + 2, boundary, blen) == 0)
			*clash = true;
		str_append(part, line.buf, n);
		str_putc(part, '\n');
		total += n + 1;
	}
	str_release(&line);
	return res < 0 ? -1 : 0;
}

int dsn_report_build(const dsn_report_t *r, dsn_line_fn lines,
    dsn_rewind_fn rewind, void *ctx, str_t *out, str_t *err)
{
	str_t boundary = STR_INIT, orig = STR_INIT, human = STR_INIT,
	    status = STR_INIT, s = STR_INIT;
	dsn_return_t ret = lines ? r->ret : DSN_RETURN_NONE;
	bool eightbit = false, clash = true;
	struct tm tm;
	int rc = -1;

	human_part(r, &human);
	status_part(r, &status);
	if (ret == DSN_RETURN_FULL && r->size_limit &&
	    r->content_size > r->size_limit)
		ret = DSN_RETURN_HEADERS;
	/* A boundary that no line of the notice starts with; the generated
	 * parts never contain "--" at a line start, the original might. */
	for (int attempt = 0; clash && attempt < 10; attempt++) {
		str_setf(&boundary, "%s.%lld.%d/%s", r->queue_id,
		    (long long)r->now, attempt, r->myhostname);
		if (r->boundary_salt && *r->boundary_salt)
			str_catf(&boundary, ".%s", r->boundary_salt);
		clash = false;
		eightbit = false;
		str_reset(&orig);
		if (ret != DSN_RETURN_NONE) {
			if (attempt > 0 && rewind)
				rewind(ctx);
			if (original_part(r, ret == DSN_RETURN_FULL, lines, ctx,
			    str_cstr(&boundary), &orig, &eightbit, &clash,
			    err) < 0)
				goto out;
			if (clash && !rewind)
				break;	/* cannot re-read: keep the clash out */
		}
	}
	if (clash) {
		/* Unlucky or hostile: send without the original. */
		ret = DSN_RETURN_NONE;
		str_reset(&orig);
	}

	/* The usual form (Postfix, Exim, Sendmail): a display name, then
	 * the address in angle brackets. */
	str_setf(&s, "Mail Delivery System <MAILER-DAEMON@%s>", r->myhostname);
	dsn_put_field(out, "From", str_cstr(&s));
	dsn_put_field(out, "Subject", dsn_report_subject(r->kind, r->audience));
	str_set(&s, "<");
	addr_externalize(r->to, &s);
	str_putc(&s, '>');
	dsn_put_field(out, "To", str_cstr(&s));
	dsn_put_field(out, "Auto-Submitted", "auto-replied");
	gmtime_r(&r->now, &tm);
	/* Unique per message, kind and audience: a sender's notice and its
	 * postmaster copy are made in the same second. */
	str_setf(&s, "<%04d%02d%02d%02d%02d%02d.%s.%c%c@%s>", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    r->queue_id, "NBDS"[r->kind & 3], "SPD"[r->audience % 3],
	    r->myhostname);
	dsn_put_field(out, "Message-Id", str_cstr(&s));
	put_date_field(out, "Date", r->now);
	dsn_put_field(out, "MIME-Version", "1.0");
	str_setf(&s, "multipart/report; report-type=delivery-status; "
	    "boundary=\"%s\"", str_cstr(&boundary));
	dsn_put_field(out, "Content-Type", str_cstr(&s));
	dsn_put_field(out, "Content-Transfer-Encoding", eightbit ? "8bit" :
	    "7bit");
	str_cat(out, "\nThis is a MIME-encapsulated message.\n\n");

	str_catf(out, "--%s\n", str_cstr(&boundary));
	dsn_put_field(out, "Content-Description", "Notification");
	dsn_put_field(out, "Content-Type", "text/plain; charset=us-ascii");
	str_putc(out, '\n');
	str_append(out, human.buf, human.len);

	str_catf(out, "\n--%s\n", str_cstr(&boundary));
	dsn_put_field(out, "Content-Description", "Delivery report");
	dsn_put_field(out, "Content-Type", "message/delivery-status");
	str_putc(out, '\n');
	str_append(out, status.buf, status.len);

	if (ret != DSN_RETURN_NONE) {
		bool full = ret == DSN_RETURN_FULL;
		str_catf(out, "\n--%s\n", str_cstr(&boundary));
		const char *what = r->kind == DSN_NOTICE_BOUNCE ?
		    (full ? "Undelivered Message" : "Undelivered Message Headers") :
		    (full ? "Message" : "Message Headers");
		dsn_put_field(out, "Content-Description", what);
		dsn_put_field(out, "Content-Type", full ? "message/rfc822" :
		    "text/rfc822-headers");
		if (eightbit)
			dsn_put_field(out, "Content-Transfer-Encoding", "8bit");
		str_putc(out, '\n');
		str_append(out, orig.buf, orig.len);
	}
	str_catf(out, "\n--%s--\n", str_cstr(&boundary));
	rc = 0;
out:
	str_release(&boundary);
	str_release(&orig);
	str_release(&human);
	str_release(&status);
	str_release(&s);
	return rc;
}
