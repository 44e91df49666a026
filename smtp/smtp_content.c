/* Message content: where it comes from (a queue file, or text in
 * memory), and how it goes out after DATA: every line ended by CRLF
 * whatever it had (LF, CRLF, nothing at the very end), a leading dot
 * doubled (RFC 5321 4.5.2), and lines longer than smtp_line_length_limit
 * broken by inserting CRLF and a space (so a folded header stays one
 * header and MIME structure is not disturbed more than needed). */
#include <string.h>
#include "qfile.h"
#include "smtp_int.h"

/* ---- sources ---- */

static int qf_rewind(void *ctx, str_t *err)
{
	(void)err;
	qfile_content_rewind(ctx);
	return 0;
}

static int qf_read(void *ctx, str_t *line, size_t max, str_t *err)
{
	qfile_t *qf = ctx;
	int k = qfile_read_line(qf, line, max);

	if (k < 0) {
		const qf_err_t *e = qfile_error(qf);
		str_setf(err, "error reading queue file %s: %s", qfile_id(qf),
		    e != NULL ? e->reason : "unknown error");
	}
	return k;
}

void smtp_content_qfile(smtp_content_t *c, struct qfile *qf)
{
	c->rewind = qf_rewind;
	c->read = qf_read;
	c->ctx = qf;
}

static int mem_rewind(void *ctx, str_t *err)
{
	(void)err;
	((smtp_memtext_t *)ctx)->pos = 0;
	return 0;
}

static int mem_read(void *ctx, str_t *line, size_t max, str_t *err)
{
	smtp_memtext_t *m = ctx;
	const char *p = m->text + m->pos;
	size_t left = m->len - m->pos, n;
	const char *nl;

	(void)err;
	str_reset(line);
	if (left == 0)
		return QF_LINE_END;
	nl = memchr(p, '\n', left);
	n = nl != NULL ? (size_t)(nl - p) : left;
	if (n > max) {
		str_append(line, p, max);
		m->pos += max;
		return QF_LINE_MORE;
	}
	if (nl == NULL) {
		str_append(line, p, n);
		m->pos += n;
		return QF_LINE_NONE;
	}
	m->pos += n + 1;
	if (n > 0 && p[n - 1] == '\r') {
		str_append(line, p, n - 1);
		return QF_LINE_CRLF;
	}
	str_append(line, p, n);
	return QF_LINE_LF;
}

void smtp_content_mem(smtp_content_t *c, smtp_memtext_t *m, const char *text,
    size_t len)
{
	m->text = text;
	m->len = len;
	m->pos = 0;
	c->rewind = mem_rewind;
	c->read = mem_read;
	c->ctx = m;
}

/* ---- sending ---- */

/* Pieces read from the source at a time; a longer line comes in pieces. */
#define PIECE_MAX 65536

int smtp_send_body(stream_t *s, smtp_content_t *c, size_t limit,
    bool *content_err, str_t *err)
{
	str_t line = STR_INIT;
	size_t col = 0;		/* bytes on the current output line */
	int rc = 0;

	*content_err = false;
	if (limit < 2)		/* a fold needs room for the space and a byte */
		limit = 0;
	if (c->rewind(c->ctx, err) < 0) {
		*content_err = true;
		return -1;
	}
	for (;;) {
		int k = c->read(c->ctx, &line, PIECE_MAX, err);
		const char *p = str_cstr(&line);
		size_t left = str_len(&line);

		if (k < 0) {
			*content_err = true;
			rc = -1;
			break;
		}
		if (k == QF_LINE_END)
			break;
		if (col == 0 && left > 0 && p[0] == '.') {
			stream_putc(s, '.');
			col = 1;
		}
		while (left > 0) {
			size_t n = left;
			if (limit > 0) {
				if (col >= limit) {
					stream_write(s, "\r\n ", 3);
					col = 1;
				}
				if (n > limit - col)
					n = limit - col;
			}
			stream_write(s, p, n);
			p += n;
			left -= n;
			col += n;
		}
		if (k != QF_LINE_MORE) {
			stream_write(s, "\r\n", 2);
			col = 0;
		}
		if (stream_error(s) || stream_timedout(s)) {
			rc = -1;
			break;
		}
	}
	if (rc == 0 && col > 0)		/* the source ended in mid-line */
		stream_write(s, "\r\n", 2);
	str_release(&line);
	if (rc == 0 && (stream_write(s, ".\r\n", 3) < 0 || stream_flush(s) < 0))
		rc = -1;
	return rc;
}
