/* postdrop's header scan. */
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include "addr.h"
#include "hdr_scan.h"

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
