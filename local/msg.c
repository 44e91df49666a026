/* The message being delivered and its copy (see msg.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "addr.h"
#include "htable.h"
#include "mem.h"
#include "msg.h"

/* Content lines are read in pieces of at most this many bytes. */
#define LMSG_PIECE	8192
/* Output is handed to the sink in pieces of about this size. */
#define LMSG_OUTBUF	(64 * 1024)
/* Delivered-To: headers remembered (more is a loop by any measure). */
#define LMSG_DT_MAX	1000

void lstatus_set(lstatus_t *st, const char *dsn, const char *fmt, ...)
{
	va_list ap;

	bcopy_str(st->dsn, sizeof(st->dsn), dsn);
	str_reset(&st->text);
	va_start(ap, fmt);
	str_vcatf(&st->text, fmt, ap);
	va_end(ap);
}

void lstatus_free(lstatus_t *st)
{
	str_release(&st->text);
	st->dsn[0] = 0;
}

void lstatus_copy(lstatus_t *dst, const lstatus_t *src)
{
	lstatus_set(dst, src->dsn, "%s", str_cstr(&src->text));
}

struct lmsg {
	qfile_t *qf;		/* or memory: */
	char *mem;
	size_t len, pos;
	bool dt_read;		/* the Delivered-To: headers were read */
	htable_t *dt;		/* lower-cased values */
	size_t ndt;
};

lmsg_t *lmsg_from_qfile(qfile_t *qf)
{
	lmsg_t *m = xcalloc(1, sizeof(*m));

	m->qf = qf;
	return m;
}

lmsg_t *lmsg_from_mem(const char *data, size_t len)
{
	lmsg_t *m = xcalloc(1, sizeof(*m));

	m->mem = xmemdup(data, len);
	m->len = len;
	return m;
}

void lmsg_free(lmsg_t *m)
{
	if (m == NULL)
		return;
	if (m->dt != NULL)
		htable_free(m->dt, NULL);
	free(m->mem);
	free(m);
}

static void rewind_content(lmsg_t *m)
{
	if (m->qf != NULL)
		qfile_content_rewind(m->qf);
	else
		m->pos = 0;
}

/* The next piece of content, as qfile_read_line: enum qf_line or -1. */
static int next_piece(lmsg_t *m, str_t *line, str_t *err)
{
	if (m->qf != NULL) {
		int r = qfile_read_line(m->qf, line, LMSG_PIECE);
		if (r < 0)
			str_setf(err, "cannot read queue file %s: %s",
			    qfile_id(m->qf), qfile_error(m->qf)->reason);
		return r;
	}
	str_reset(line);
	if (m->pos >= m->len)
		return QF_LINE_END;
	const char *p = m->mem + m->pos;
	size_t avail = m->len - m->pos;
	const char *nl = memchr(p, '\n', avail < LMSG_PIECE + 2 ? avail :
	    LMSG_PIECE + 2);
	if (nl == NULL) {
		size_t n = avail > LMSG_PIECE ? LMSG_PIECE : avail;
		str_append(line, p, n);
		m->pos += n;
		return n < avail ? QF_LINE_MORE : QF_LINE_NONE;
	}
	size_t n = (size_t)(nl - p);
	bool cr = n > 0 && p[n - 1] == '\r';
	if (n - cr > LMSG_PIECE) {
		str_append(line, p, LMSG_PIECE);
		m->pos += LMSG_PIECE;
		return QF_LINE_MORE;
	}
	str_append(line, p, n - cr);
	m->pos += n + 1;
	return cr ? QF_LINE_CRLF : QF_LINE_LF;
}

static void dt_value(lmsg_t *m, const char *v, size_t len)
{
	str_t s = STR_INIT;

	while (len > 0 && isspace((unsigned char)*v))
		v++, len--;
	while (len > 0 && isspace((unsigned char)v[len - 1]))
		len--;
	if (len >= 2 && v[0] == '<' && v[len - 1] == '>')
		v++, len -= 2;
	if (len == 0 || m->ndt >= LMSG_DT_MAX)
		return;
	str_append(&s, v, len);
	str_lower(s.buf);
	if (htable_find(m->dt, str_cstr(&s)) == NULL) {
		htable_add(m->dt, str_cstr(&s), NULL);
		m->ndt++;
	}
	str_release(&s);
}

/* Reads the header once, collecting Delivered-To: values (folded lines
 * joined). */
static int read_dt(lmsg_t *m)
{
	str_t line = STR_INIT, hdr = STR_INIT, err = STR_INIT;
	int r, rc = 0;
	bool more = false;

	m->dt = htable_new(16, 0);
	rewind_content(m);
	for (;;) {
		r = next_piece(m, &line, &err);
		if (r < 0) {
			rc = -1;
			break;
		}
		if (r == QF_LINE_END)
			break;
		bool cont = more;
		more = r == QF_LINE_MORE;
		if (cont) {
			/* The rest of a long line: part of the header at hand. */
			str_append(&hdr, line.buf, line.len);
			continue;
		}
		if (line.len == 0)
			break;		/* end of the header */
		if (line.buf[0] == ' ' || line.buf[0] == '\t') {
			str_append(&hdr, line.buf, line.len);
			continue;
		}
		if (hdr.len > 13 && strncasecmp(hdr.buf, "Delivered-To:", 13) == 0)
			dt_value(m, hdr.buf + 13, hdr.len - 13);
		str_reset(&hdr);
		/* Not a header line (no colon before a blank): the body
		 * started without a separator; stop there. */
		size_t k = strcspn(line.buf, ": \t");
		if (line.buf[k] != ':')
			break;
		str_append(&hdr, line.buf, line.len);
		if (r == QF_LINE_NONE)
			break;
	}
	if (hdr.len > 13 && strncasecmp(hdr.buf, "Delivered-To:", 13) == 0)
		dt_value(m, hdr.buf + 13, hdr.len - 13);
	str_release(&line);
	str_release(&hdr);
	str_release(&err);
	m->dt_read = true;
	return rc;
}

int lmsg_has_delivered_to(lmsg_t *m, const char *addr)
{
	str_t ext = STR_INIT;
	bool found;

	if (!m->dt_read && read_dt(m) < 0) {
		m->dt_read = false;
		htable_free(m->dt, NULL);
		m->dt = NULL;
		return -1;
	}
	addr_externalize(addr, &ext);
	str_lower(ext.buf ? ext.buf : (char *)"");
	found = ext.len > 0 && htable_find(m->dt, str_cstr(&ext)) != NULL;
	str_release(&ext);
	return found;
}

void lmsg_from_line(const char *sender, time_t t, str_t *out)
{
	char date[32];
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL
	    || strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", &tm) == 0)
		bcopy_str(date, sizeof(date), "Thu Jan  1 00:00:00 1970");
	str_cat(out, "From ");
	if (*sender == 0) {
		str_cat(out, "MAILER-DAEMON");
	} else {
		/* One word: a quoted local part with spaces would break the
		 * line's syntax, so blanks become '_'. */
		str_t ext = STR_INIT;
		addr_externalize(sender, &ext);
		for (size_t i = 0; i < ext.len; i++)
			str_putc(out, ext.buf[i] == ' ' || ext.buf[i] == '\t'
			    ? '_' : ext.buf[i]);
		str_release(&ext);
	}
	str_catf(out, " %s\n", date);
}

typedef struct out {
	str_t buf;
	lmsg_sink_fn sink;
	void *ctx;
	bool failed;
} out_t;

static void put(out_t *o, const void *data, size_t len)
{
	if (o->failed)
		return;
	str_append(&o->buf, data, len);
	if (o->buf.len >= LMSG_OUTBUF) {
		if (o->sink(o->buf.buf, o->buf.len, o->ctx) < 0)
			o->failed = true;
		str_reset(&o->buf);
	}
}

static bool is_from_line(const char *p, size_t len)
{
	size_t i = 0;

	while (i < len && p[i] == '>')
		i++;
	return len - i >= 5 && memcmp(p + i, "From ", 5) == 0;
}

int lmsg_copy(lmsg_t *m, const lmsg_copy_t *o, lmsg_sink_fn sink, void *ctx,
    str_t *err)
{
	out_t out = { STR_INIT, sink, ctx, false };
	str_t line = STR_INIT, tmp = STR_INIT;
	bool at_start = true;	/* at the start of a line */
	bool ended_nl = true;	/* the output so far ends with LF */
	int r, rc = LMSG_OK;

	if (o->flags & LMSG_FROM_LINE) {
		lmsg_from_line(o->sender, o->now ? o->now : time(NULL), &tmp);
		put(&out, tmp.buf, tmp.len);
	}
	if (o->flags & LMSG_RETURN_PATH) {
		str_reset(&tmp);
		addr_externalize(o->sender, &tmp);
		put(&out, "Return-Path: <", 14);
		put(&out, tmp.buf, tmp.len);
		put(&out, ">\n", 2);
	}
	if (o->delivered_to != NULL) {
		str_reset(&tmp);
		addr_externalize(o->delivered_to, &tmp);
		put(&out, "Delivered-To: ", 14);
		put(&out, tmp.buf, tmp.len);
		put(&out, "\n", 1);
	}
	rewind_content(m);
	while (!out.failed) {
		r = next_piece(m, &line, err);
		if (r < 0) {
			rc = LMSG_EREAD;
			break;
		}
		if (r == QF_LINE_END)
			break;
		if (at_start && (o->flags & LMSG_QUOTE_FROM)
		    && is_from_line(line.buf ? line.buf : "", line.len))
			put(&out, ">", 1);
		put(&out, line.buf, line.len);
		if (r == QF_LINE_MORE) {
			at_start = false;
			ended_nl = line.len == 0 ? ended_nl : false;
			continue;
		}
		if (r == QF_LINE_NONE) {
			ended_nl = line.len == 0 && at_start ? ended_nl : false;
			at_start = false;
			break;
		}
		put(&out, "\n", 1);
		at_start = true;
		ended_nl = true;
	}
	if (rc == LMSG_OK && (o->flags & LMSG_BLANK_END)) {
		if (!ended_nl)
			put(&out, "\n", 1);
		put(&out, "\n", 1);
	}
	if (rc == LMSG_OK && !out.failed && out.buf.len > 0
	    && sink(out.buf.buf, out.buf.len, ctx) < 0)
		out.failed = true;
	if (rc == LMSG_OK && out.failed)
		rc = LMSG_EWRITE;
	{
		int saved = errno;
		str_release(&out.buf);
		str_release(&line);
		str_release(&tmp);
		errno = saved;
	}
	return rc;
}
