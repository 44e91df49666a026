/* Local submission: the stream between sendmail and postdrop, checks of
 * its values, and the header scan.  See submit.h and doc/submission.md. */
#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "addr.h"
#include "dict.h"
#include "mastercf.h"
#include "mem.h"
#include "pconfig.h"
#include "qfile.h"
#include "submit.h"
#include "user_list.h"

/* ---- The stream ------------------------------------------------------ */

static const attr_spec_t rcpt_spec[] = {
	{ SUBMIT_A_ADDRESS, ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

/* One schema for the whole stream (a reader keeps the bytes it read
 * past a message, so the stream needs one reader); postdrop checks which
 * attributes each message may have. */
static const attr_spec_t stream_spec[] = {
	{ SUBMIT_A_VERSION, ATTR_TYPE_INT, 0, NULL },
	{ SUBMIT_A_SENDER, ATTR_TYPE_STR, 0, NULL },
	{ SUBMIT_A_FULL_NAME, ATTR_TYPE_STR, 0, NULL },
	{ SUBMIT_A_FLAGS, ATTR_TYPE_INT, 0, NULL },
	{ SUBMIT_A_ENVID, ATTR_TYPE_STR, 0, NULL },
	{ SUBMIT_A_RET, ATTR_TYPE_STR, 0, NULL },
	{ SUBMIT_A_NOTIFY, ATTR_TYPE_INT, 0, NULL },
	{ SUBMIT_A_RCPT, ATTR_TYPE_LIST, 0, rcpt_spec },
	{ SUBMIT_A_DATA, ATTR_TYPE_DATA, 0, NULL },
	{ SUBMIT_A_END, ATTR_TYPE_LONG, 0, NULL },
	{ SUBMIT_A_ABORT, ATTR_TYPE_STR, 0, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

/* An envelope of SUBMIT_RCPT_MAX recipients of SUBMIT_ADDR_MAX bytes
 * stays below max_total; content comes in SUBMIT_CHUNK pieces. */
static const attr_limits_t stream_limits = {
	.max_value = SUBMIT_CHUNK,
	.max_attrs = 2 * SUBMIT_RCPT_MAX + 16,
	.max_group_attrs = 16,
	.max_total = 4 * 1024 * 1024,
	.max_depth = 1,
};

attr_reader_t *submit_reader(void)
{
	return attr_reader_new(stream_spec, ATTR_READ_STRICT, &stream_limits);
}

bool submit_fail(submit_err_t *err, int status, const char *fmt, ...)
{
	va_list ap;

	err->status = status;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	/* The text may quote input: keep it on one printable line. */
	for (char *p = err->text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return false;
}

/* ---- Values ---------------------------------------------------------- */

bool submit_addr(const char *ext, size_t len, bool is_sender, str_t *out,
    submit_err_t *err)
{
	addr_err_t aerr;
	str_t shown = STR_INIT;
	bool ok;

	str_reset(out);
	if (len == 0 && !is_sender)
		return submit_fail(err, EX_NOUSER, "empty recipient address");
	if (len > SUBMIT_ADDR_MAX)
		return submit_fail(err, EX_NOUSER, "%s address is too long "
		    "(%zu bytes)", is_sender ? "sender" : "recipient", len);
	ok = addr_internalize(ext, len, ADDR_F_NO_DOMAIN | ADDR_F_LAX_DOTS |
	    ADDR_F_LONG_LOCAL | ADDR_F_SMTPUTF8, out, &aerr) == ADDR_OK;
	if (!ok) {
		str_quote_printable(&shown, ext, len > 200 ? 200 : len);
		submit_fail(err, EX_NOUSER, "bad %s address syntax: <%s>: %s",
		    is_sender ? "sender" : "recipient", str_cstr(&shown),
		    aerr.text);
		str_release(&shown);
		return false;
	}
	if (!is_sender && str_len(out) == 0)
		return submit_fail(err, EX_NOUSER, "empty recipient address");
	return true;
}

int submit_parse_ret(const char *s)
{
	if (strcasecmp(s, "full") == 0)
		return QF_RET_FULL;
	if (strcasecmp(s, "hdrs") == 0)
		return QF_RET_HDRS;
	return -1;
}

bool submit_envid_ok(const char *s, str_t *xtext)
{
	str_t enc = STR_INIT;
	bool ok = *s != 0;

	for (const char *p = s; *p && ok; p++)
		if (*p < 0x21 || *p > 0x7e)
			ok = false;
	if (ok) {
		addr_xtext_encode(s, strlen(s), &enc);
		ok = str_len(&enc) <= ADDR_ENVID_MAX;
		if (ok && xtext)
			str_append(xtext, str_cstr(&enc), str_len(&enc));
	}
	str_release(&enc);
	return ok;
}

bool submit_full_name_ok(const char *s, size_t len)
{
	if (len > SUBMIT_FULL_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int submit_user_allowed(uid_t uid, str_t *why)
{
	struct passwd *pw = getpwuid(uid);
	const char *user = pw ? pw->pw_name : "unknown";
	int result = user_list_match("authorized_submit_users", user, why);

	if (result == 0)
		str_setf(why, "user %s (uid %ld) is not allowed to submit mail "
		    "(authorized_submit_users)", user, (long)uid);
	return result;
}

bool submit_service_path(const char *config_dir, const char *service,
    str_t *out)
{
	str_t path = STR_INIT, errors = STR_INIT;
	mastercf_t *m;
	bool found = false;

	str_setf(&path, "%s/master.cf", config_dir);
	m = mastercf_load(str_cstr(&path), &errors);
	str_release(&path);
	str_release(&errors);
	if (m == NULL)
		return false;
	for (size_t i = 0; i < m->count && !found; i++) {
		const mastercf_entry_t *e = m->entries[i];
		if (strcmp(e->service, service) == 0 && (e->type == MCF_UNIX
		    || e->type == MCF_FIFO || e->type == MCF_UNIX_DGRAM)) {
			str_setf(out, "%s/%s", e->private_svc ? "private" :
			    "public", e->service);
			found = true;
		}
	}
	mastercf_free(m);
	return found;
}

/* ---- Header scan ----------------------------------------------------- */

void hdr_scan_init(hdr_scan_t *h, size_t header_limit, long hop_limit)
{
	memset(h, 0, sizeof(*h));
	h->header_limit = header_limit;
	h->hop_limit = hop_limit;
	h->line = (str_t)STR_INIT;
	h->value = (str_t)STR_INIT;
}

void hdr_scan_free(hdr_scan_t *h)
{
	str_release(&h->line);
	str_release(&h->value);
}

static void end_field(hdr_scan_t *h)
{
	if (h->field_open && h->field_rcpt) {
		addr_hdr_list_t list = ADDR_HDR_LIST_INIT;
		hdr_rcpts_t *rc = &h->rcpt[h->field_rcpt - 1];

		rc->fields++;
		rc->good += addr_hdr_parse(str_cstr(&h->value),
		    str_len(&h->value), &list);
		for (size_t i = 0; i < list.n && rc->bad == 0; i++) {
			const addr_hdr_entry_t *e = &list.v[i];
			str_t shown = STR_INIT;
			size_t n;

			if (!(e->flags & ADDR_H_BAD))
				continue;
			n = e->end - e->start;
			str_quote_printable(&shown, str_cstr(&h->value) + e->start,
			    n > 100 ? 100 : n);
			bfmt(rc->first_bad, sizeof(rc->first_bad), "'%s': %s",
			    str_cstr(&shown), e->error);
			str_release(&shown);
		}
		rc->bad += list.nbad;
		addr_hdr_list_free(&list);
	}
	h->field_open = false;
	h->field_rcpt = 0;
	str_reset(&h->value);
}

const hdr_rcpts_t *hdr_scan_rcpts(const hdr_scan_t *h)
{
	return h->rcpt[1].fields > 0 ? &h->rcpt[1] : &h->rcpt[0];
}

/* What a line is, from its first bytes: 1 a header line (a field
 * "name" [WSP] ":", or a continuation while a field is open), 0 not (the
 * body starts there), -1 cannot tell yet (only name characters so far).
 * *colon gets the offset of the colon of a field. */
static int classify(const char *s, size_t len, bool field_open,
    size_t *name_len, size_t *colon)
{
	size_t i = 0;

	*name_len = 0;
	if (len == 0)
		return -1;
	if (s[0] == ' ' || s[0] == '\t')
		return field_open ? 1 : 0;
	while (i < len && s[i] > 0x20 && s[i] < 0x7f && s[i] != ':')
		i++;
	*name_len = i;
	while (i < len && i > 0 && (s[i] == ' ' || s[i] == '\t'))
		i++;
	if (i >= len)
		return -1;
	if (i == 0 || s[i] != ':')
		return 0;
	*colon = i;
	return 1;
}

static bool name_is(const char *s, size_t n, const char *name)
{
	return strlen(name) == n && strncasecmp(s, name, n) == 0;
}

/* 0, 1 for To/Cc/Bcc, 2 for their Resent- forms. */
static int rcpt_field(const char *s, size_t n)
{
	int kind = 1;

	if (n > 7 && strncasecmp(s, "resent-", 7) == 0) {
		s += 7;
		n -= 7;
		kind = 2;
	}
	if (name_is(s, n, "to") || name_is(s, n, "cc") || name_is(s, n, "bcc"))
		return kind;
	return 0;
}

/* One complete line (without its LF) while in the header. */
static bool header_line(hdr_scan_t *h, submit_err_t *err)
{
	const char *s = str_cstr(&h->line);
	size_t len = str_len(&h->line), n, colon = 0;
	int cls;

	if (len > 0 && s[len - 1] == '\r')
		len--;
	cls = classify(s, len, h->field_open, &n, &colon);
	if (cls != 1) {
		/* The empty line, or the first line of the body. */
		end_field(h);
		h->in_body = true;
		return true;
	}
	h->header_bytes += str_len(&h->line) + 1;
	if (h->header_bytes > h->header_limit)
		return submit_fail(err, EX_DATAERR, "the message header is too "
		    "big: more than %zu bytes (header_size_limit)",
		    h->header_limit);
	if (memchr(s, 0, len) != NULL)
		return submit_fail(err, EX_DATAERR, "the message header contains "
		    "a NUL byte");
	if (s[0] == ' ' || s[0] == '\t') {
		if (h->field_rcpt) {
			str_putc(&h->value, '\n');
			str_append(&h->value, s, len);
		}
		return true;
	}
	end_field(h);
	h->field_open = true;
	if (name_is(s, n, "received") && ++h->received >= h->hop_limit)
		return submit_fail(err, EX_DATAERR, "too many hops: the message "
		    "has %ld or more Received: header fields (hopcount_limit "
		    "%ld): a mail loop?", h->received, h->hop_limit);
	if ((h->field_rcpt = rcpt_field(s, n)) != 0)
		str_append(&h->value, s + colon + 1, len - colon - 1);
	return true;
}

bool hdr_scan_feed(hdr_scan_t *h, const char *buf, size_t len,
    submit_err_t *err)
{
	while (len > 0 && !h->in_body) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) + 1 : len, nlen, colon;
		bool ok = true;

		str_append(&h->line, buf, nl ? n - 1 : n);
		buf += n;
		len -= n;
		if (nl) {
			ok = header_line(h, err);
			str_reset(&h->line);
		} else {
			/* A line still coming: decide as soon as possible, so
			 * that memory stays within header_size_limit. */
			switch (classify(str_cstr(&h->line), str_len(&h->line),
			    h->field_open, &nlen, &colon)) {
			case 0:
				end_field(h);
				h->in_body = true;
				break;
			case 1:
				if (h->header_bytes + str_len(&h->line) >
				    h->header_limit)
					ok = submit_fail(err, EX_DATAERR, "the "
					    "message header is too big: more "
					    "than %zu bytes (header_size_limit)",
					    h->header_limit);
				break;
			default:
				if (str_len(&h->line) > h->header_limit) {
					end_field(h);
					h->in_body = true;
				}
			}
		}
		if (!ok) {
			h->in_body = h->failed = true;
			return false;
		}
	}
	return true;
}

bool hdr_scan_finish(hdr_scan_t *h, submit_err_t *err)
{
	bool ok = true;

	if (!h->in_body && str_len(&h->line) > 0)
		ok = header_line(h, err);
	str_reset(&h->line);
	end_field(h);
	h->in_body = true;
	return ok;
}
