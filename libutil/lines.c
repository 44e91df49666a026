/* Logical lines (see lines.h). */
#include <string.h>
#include "lines.h"

static bool ascii_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f'
	    || c == '\r';
}

static bool indents(const lines_t *l, int c)
{
	if (l->opts.flags & LINES_ANY_SPACE)
		return ascii_space(c);
	return c == ' ' || c == '\t';
}

void lines_init(lines_t *l, const lines_opts_t *opts)
{
	memset(l, 0, sizeof(*l));
	l->opts = *opts;
	l->logical = (str_t)STR_INIT;
	l->scratch = (str_t)STR_INIT;
}

static int report(lines_t *l, enum lines_error what, int lineno)
{
	int rc = l->opts.error ? l->opts.error(what, lineno, l->opts.ctx) : -1;

	if (rc != 0)
		l->rc = rc;
	return rc;
}

/* Hands over the pending logical line, if any, and forgets it. */
static int flush(lines_t *l)
{
	int rc = 0;

	if (l->start != 0 && !l->skipping) {
		str_reserve(&l->logical, 0);	/* buf is never NULL */
		rc = l->opts.line(l->logical.buf, l->start, l->opts.ctx);
	}
	str_reset(&l->logical);
	l->start = 0;
	l->skipping = false;
	if (rc != 0)
		l->rc = rc;
	return rc;
}

int lines_feed(lines_t *l, const char *line, size_t len)
{
	const char *piece;
	size_t i = 0, n, sep = 0;

	if (l->rc != 0)
		return l->rc;
	l->lineno++;
	if (memchr(line, 0, len) != NULL)
		return report(l, LINES_NUL, l->lineno);
	if (len > 0 && line[len - 1] == '\r')
		len--;
	while (i < len && indents(l, (unsigned char)line[i]))
		i++;
	if (i == len || line[i] == '#')
		return 0;	/* blank or comment */
	if (i > 0) {
		if (l->start == 0)
			return report(l, LINES_ORPHAN, l->lineno);
		if (l->skipping)
			return 0;
	} else {
		if (flush(l) != 0)
			return l->rc;
		l->start = l->lineno;
	}
	if (l->opts.flags & LINES_VERBATIM) {
		/* Only the line end goes: a continuation brings its own
		 * leading white space as the separator. */
		piece = line;
		n = len;
		while (n > 0 && ascii_space((unsigned char)line[n - 1]))
			n--;
	} else {
		/* Trimmed like str_trim() does (the callers used it before
		 * this helper existed), joined with one space. */
		str_reset(&l->scratch);
		str_append(&l->scratch, line + i, len - i);
		piece = str_trim(l->scratch.buf);
		n = strlen(piece);
		sep = i > 0;
	}
	if (l->opts.max_len != 0 &&
	    str_len(&l->logical) + sep + n > l->opts.max_len) {
		l->skipping = true;
		str_reset(&l->logical);
		return report(l, LINES_TOO_LONG, l->start);
	}
	if (sep)
		str_putc(&l->logical, ' ');
	str_append(&l->logical, piece, n);
	return 0;
}

void lines_discard(lines_t *l)
{
	str_release(&l->logical);
	str_release(&l->scratch);
	l->start = 0;
}

int lines_finish(lines_t *l)
{
	if (l->rc == 0)
		flush(l);
	lines_discard(l);
	return l->rc;
}

int lines_walk(const char *text, size_t len, const lines_opts_t *opts)
{
	const char *p = text, *end = text + len;
	lines_t l;

	lines_init(&l, opts);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (lines_feed(&l, p, n) != 0)
			break;
		p += n + (nl != NULL);
	}
	return lines_finish(&l);
}
