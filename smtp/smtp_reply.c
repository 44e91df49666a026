/* SMTP replies: reading a (multi-line) reply with a time limit and
 * bounded memory, its enhanced status code, EHLO features, and the words
 * for I/O failures.  A reply comes from the network: every line is
 * checked, lengths and line counts are capped, and what is kept for the
 * log is made printable. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "smtp_int.h"

void smtp_reply_init(smtp_reply_t *r)
{
	memset(r, 0, sizeof(*r));
}

void smtp_reply_free(smtp_reply_t *r)
{
	str_release(&r->text);
	str_release(&r->lines);
}

/* Printable copy of a reply line for logs and DSNs. */
static void cat_printable(str_t *out, const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x20 || c == 0x7f)
			str_putc(out, '?');
		else
			str_putc(out, c);	/* UTF-8 text is kept */
	}
}

/* "D.DDD.DDD" at p whose class is cls, followed by a space or the end:
 * its length, else 0. */
static size_t enhanced_len(const char *p, int cls)
{
	size_t i = 0;

	if (p[0] != '0' + cls || p[1] != '.')
		return 0;
	i = 2;
	for (int part = 0; part < 2; part++) {
		size_t d = 0;
		while (isdigit((unsigned char)p[i]) && d < 3) {
			i++;
			d++;
		}
		if (d == 0)
			return 0;
		if (part == 0) {
			if (p[i] != '.')
				return 0;
			i++;
		}
	}
	if (p[i] != '\0' && p[i] != ' ')
		return 0;
	return i;
}

int smtp_reply_read(smtp_sess_t *ss, int timeout_ms, smtp_reply_t *r)
{
	size_t nlines = 0, bytes = 0;

	stream_set_timeouts(ss->s, timeout_ms, timeout_ms);
	str_reset(&r->text);
	str_reset(&r->lines);
	r->code = 0;
	r->dsn[0] = '\0';
	for (;;) {
		int k = stream_getline(ss->s, &ss->line, SMTP_REPLY_LINE_MAX);
		const char *p;
		size_t len;

		if (k == STREAM_LINE_NONE || k == STREAM_LINE_PARTIAL)
			return stream_timedout(ss->s) ? SMTP_IO_TIMEOUT :
			    SMTP_IO_LOST;
		p = str_cstr(&ss->line);
		len = str_len(&ss->line);
		bytes += len;
		if (k == STREAM_LINE_MORE) {
			/* An overlong line: keep its start, drop the rest. */
			str_t junk = STR_INIT;
			int j;
			do {
				j = stream_getline(ss->s, &junk, SMTP_REPLY_LINE_MAX);
				bytes += str_len(&junk);
			} while (j == STREAM_LINE_MORE && bytes <= SMTP_REPLY_BYTES_MAX);
			str_release(&junk);
			if (j == STREAM_LINE_NONE || j == STREAM_LINE_PARTIAL)
				return stream_timedout(ss->s) ? SMTP_IO_TIMEOUT :
				    SMTP_IO_LOST;
			if (j == STREAM_LINE_MORE) {
				str_set(&r->text, "reply line too long");
				return SMTP_IO_MALFORMED;
			}
			p = str_cstr(&ss->line);
			len = str_len(&ss->line);
		}
		if (len < 3 || !isdigit((unsigned char)p[0]) ||
		    !isdigit((unsigned char)p[1]) ||
		    !isdigit((unsigned char)p[2]) ||
		    p[0] < '2' || p[0] > '5' ||
		    (len > 3 && p[3] != ' ' && p[3] != '-')) {
			str_reset(&r->text);
			cat_printable(&r->text, p, len > 200 ? 200 : len);
			return SMTP_IO_MALFORMED;
		}
		r->code = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
		if (nlines > 0)
			str_putc(&r->text, ' ');
		cat_printable(&r->text, p, len);
		if (len > 4)
			str_append(&r->lines, p + 4, len - 4);
		str_putc(&r->lines, '\n');
		nlines++;
		if (len <= 3 || p[3] == ' ')
			break;
		if (nlines >= SMTP_REPLY_LINES_MAX ||
		    bytes > SMTP_REPLY_BYTES_MAX) {
			str_set(&r->text, "reply too long");
			return SMTP_IO_MALFORMED;
		}
	}
	/* The enhanced code, if the first line has one of the right class. */
	{
		const char *t = str_cstr(&r->lines);
		size_t n = enhanced_len(t, r->code / 100);
		if (n > 0 && n < sizeof(r->dsn)) {
			memcpy(r->dsn, t, n);
			r->dsn[n] = '\0';
		} else {
			bfmt(r->dsn, sizeof(r->dsn), "%d.0.0", r->code / 100);
		}
	}
	return SMTP_IO_OK;
}

/* Case-insensitive keyword at the start of a line, ended by a space or
 * the end of the line; *rest gets what follows. */
static bool keyword(const char *line, size_t len, const char *kw,
    const char **rest)
{
	size_t n = strlen(kw);

	if (len < n || strncasecmp(line, kw, n) != 0)
		return false;
	if (len > n && line[n] != ' ' && line[n] != '=')
		return false;
	*rest = line + n;
	return true;
}

/* Appends the mechanism names of an AUTH line (after the keyword) to
 * list, upper case, space-separated, each once, within
 * SMTP_AUTH_LIST_MAX bytes. */
static void auth_list_add(str_t *list, const char *p, const char *end)
{
	while (p < end) {
		const char *w;
		size_t n;
		while (p < end && (*p == ' ' || *p == '='))
			p++;
		for (w = p; p < end && *p != ' '; p++)
			;
		n = (size_t)(p - w);
		if (n == 0 || n > 20)	/* RFC 4422: at most 20 characters */
			continue;
		if (str_len(list) + n + 1 > SMTP_AUTH_LIST_MAX)
			return;
		{
			char name[21];
			const char *q = str_cstr(list);
			bool dup = false;
			bool ok = true;
			for (size_t i = 0; i < n; i++) {
				unsigned char c = (unsigned char)w[i];
				ok = ok && (isalnum(c) || c == '-' || c == '_');
				name[i] = (char)toupper(c);
			}
			name[n] = '\0';
			if (!ok)	/* not a SASL mechanism name */
				continue;
			/* once is enough (the old AUTH= line repeats them) */
			while ((q = strstr(q, name)) != NULL) {
				if ((q == str_cstr(list) || q[-1] == ' ') &&
				    (q[n] == ' ' || q[n] == '\0')) {
					dup = true;
					break;
				}
				q += n;
			}
			if (dup)
				continue;
			if (str_len(list) > 0)
				str_putc(list, ' ');
			str_cat(list, name);
		}
	}
}

void smtp_ehlo_features(const smtp_reply_t *r, unsigned *features,
    uint64_t *size_limit, str_t *auth_mechs)
{
	const char *p = str_cstr(&r->lines), *end = p + str_len(&r->lines);
	bool first = true;

	*features = SMTP_F_ESMTP;
	*size_limit = 0;
	if (auth_mechs != NULL)
		str_reset(auth_mechs);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *rest;

		if (first) {		/* the greeting line of the reply */
			first = false;
		} else if (keyword(p, len, "PIPELINING", &rest)) {
			*features |= SMTP_F_PIPELINING;
		} else if (keyword(p, len, "SIZE", &rest)) {
			unsigned long long v = 0;
			*features |= SMTP_F_SIZE;
			rest += strspn(rest, " =");
			while (rest < p + len && isdigit((unsigned char)*rest) &&
			    v < UINT64_MAX / 10 - 10)
				v = v * 10 + (unsigned)(*rest++ - '0');
			*size_limit = v;
		} else if (keyword(p, len, "8BITMIME", &rest)) {
			*features |= SMTP_F_8BITMIME;
		} else if (keyword(p, len, "DSN", &rest)) {
			*features |= SMTP_F_DSN;
		} else if (keyword(p, len, "STARTTLS", &rest)) {
			*features |= SMTP_F_STARTTLS;
		} else if (keyword(p, len, "SMTPUTF8", &rest)) {
			*features |= SMTP_F_SMTPUTF8;
		} else if (keyword(p, len, "ENHANCEDSTATUSCODES", &rest)) {
			*features |= SMTP_F_ENHANCED;
		} else if (keyword(p, len, "AUTH", &rest)) {
			*features |= SMTP_F_AUTH;
			if (auth_mechs != NULL)
				auth_list_add(auth_mechs, rest, p + len);
		}
		p += len + 1;
	}
}

void smtp_io_reason(const smtp_sess_t *ss, int io, const char *stage,
    const smtp_reply_t *r, str_t *out)
{
	switch (io) {
	case SMTP_IO_TIMEOUT:
		str_setf(out, "conversation with %s timed out while %s",
		    str_cstr(&ss->namaddr), stage);
		break;
	case SMTP_IO_MALFORMED:
		str_setf(out, "host %s sent a malformed reply while %s: %s",
		    str_cstr(&ss->namaddr), stage,
		    r != NULL ? str_cstr(&r->text) : "");
		break;
	default:
		str_setf(out, "lost connection with %s while %s",
		    str_cstr(&ss->namaddr), stage);
		if (ss->tls != NULL && tls_sess_error(ss->tls)[0] != '\0')
			str_catf(out, " (%s)", tls_sess_error(ss->tls));
		break;
	}
}

const char *smtp_io_dsn(int io)
{
	return io == SMTP_IO_MALFORMED ? "4.5.0" : "4.4.2";
}
