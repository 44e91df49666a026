/* cleanup: the MIME structure of a message body, for the content checks
 * (doc/cleanup.md, "Header and body checks").  Fed the body lines one at
 * a time (terminators off), it tells apart the headers of MIME parts and
 * of attached messages (message/rfc822), joined into logical headers,
 * from body lines.  It only looks: the content passes unchanged. */
#include <string.h>
#include <strings.h>
#include "cleanup.h"
#include "mem.h"

enum mstate { M_BODY, M_HEADER };

struct cleanup_mime {
	cleanup_mime_hdr_fn hdr;
	cleanup_mime_body_fn body;
	void (*body_start)(void *ctx);
	void *ctx;
	size_t hmax;		/* a logical header is cut at this size */
	enum mstate state;
	int hclass;		/* of the headers being read */
	bool have_hdr;		/* hbuf holds a header */
	str_t hbuf;
	/* the part whose header is being read */
	bool multipart, rfc822;
	str_t boundary;
	/* enclosing multipart boundaries, outermost first */
	str_t bnd[CLEANUP_MIME_DEPTH];
	int depth;
	bool too_deep;		/* logged once */
};

cleanup_mime_t *cleanup_mime_new(size_t hmax, cleanup_mime_hdr_fn hdr,
    cleanup_mime_body_fn body, void (*body_start)(void *ctx), void *ctx)
{
	cleanup_mime_t *m = xcalloc(1, sizeof(*m));

	m->hdr = hdr;
	m->body = body;
	m->body_start = body_start;
	m->ctx = ctx;
	m->hmax = hmax;
	m->state = M_BODY;
	return m;
}

void cleanup_mime_free(cleanup_mime_t *m)
{
	if (m == NULL)
		return;
	str_release(&m->hbuf);
	str_release(&m->boundary);
	for (int i = 0; i < CLEANUP_MIME_DEPTH; i++)
		str_release(&m->bnd[i]);
	free(m);
}

static void str_set_len(str_t *s, const char *p, size_t n)
{
	str_reset(s);
	str_append(s, p, n);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A token of Content-Type (RFC 2045: no specials, no blanks). */
static size_t token_len(const char *p, const char *end)
{
	const char *q = p;

	while (q < end && (unsigned char)*q > ' ' && *q != 0x7f &&
	    strchr("()<>@,;:\\\"/[]?=", *q) == NULL)
		q++;
	return (size_t)(q - p);
}

void cleanup_mime_ctype(const char *v, size_t len, bool *multipart,
    bool *rfc822, str_t *boundary)
{
	const char *p = v, *end = v + len;
	size_t n;

	*multipart = *rfc822 = false;
	str_reset(boundary);
	while (p < end && is_blank(*p))
		p++;
	n = token_len(p, end);
	if (n == 9 && strncasecmp(p, "multipart", 9) == 0)
		*multipart = true;
	else if (n == 7 && strncasecmp(p, "message", 7) == 0 &&
	    p + n < end && p[n] == '/' &&
	    token_len(p + n + 1, end) == 6 &&
	    strncasecmp(p + n + 1, "rfc822", 6) == 0)
		*rfc822 = true;
	if (!*multipart)
		return;
	/* ; name=value ... : the boundary parameter. */
	while ((p = memchr(p, ';', (size_t)(end - p))) != NULL) {
		p++;
		while (p < end && is_blank(*p))
			p++;
		n = token_len(p, end);
		if (n != 8 || strncasecmp(p, "boundary", 8) != 0)
			continue;
		p += n;
		while (p < end && is_blank(*p))
			p++;
		if (p >= end || *p != '=')
			continue;
		p++;
		while (p < end && is_blank(*p))
			p++;
		if (p < end && *p == '"') {
			const char *q = memchr(p + 1, '"', (size_t)(end - p - 1));
			if (q == NULL)
				return;
			n = (size_t)(q - p - 1);
			p++;
		} else {
			n = token_len(p, end);
		}
		if (n > 0 && n <= CLEANUP_MIME_BOUNDARY_MAX)
			str_set_len(boundary, p, n);
		return;
	}
}

/* The logical header in hbuf is complete. */
static void flush_header(cleanup_mime_t *m)
{
	const char *h = str_cstr(&m->hbuf);
	size_t len = str_len(&m->hbuf);

	if (!m->have_hdr)
		return;
	m->have_hdr = false;
	if (cleanup_hdr_name_len(h, len, true) == 12 &&
	    strncasecmp(h, "Content-Type", 12) == 0) {
		/* "Content-Type:" or "Content-Type :" */
		const char *colon = memchr(h, ':', len);
		size_t at = (size_t)(colon - h) + 1;
		cleanup_mime_ctype(h + at, len - at, &m->multipart, &m->rfc822,
		    &m->boundary);
	}
	m->hdr(m->ctx, m->hclass, h, len);
	str_reset(&m->hbuf);
}

/* The end of a part's header: what follows is its body. */
static void end_headers(cleanup_mime_t *m)
{
	flush_header(m);
	m->state = M_BODY;
	if (m->rfc822) {
		/* the body is a message: its header comes first */
		m->state = M_HEADER;
		m->hclass = CLEANUP_MIME_NESTED;
	} else if (m->multipart && str_len(&m->boundary) > 0) {
		if (m->depth < CLEANUP_MIME_DEPTH)
			str_set_len(&m->bnd[m->depth++], str_cstr(&m->boundary),
			    str_len(&m->boundary));
		else
			m->too_deep = true;
	}
	m->multipart = m->rfc822 = false;
	str_reset(&m->boundary);
	if (m->body_start != NULL && m->state == M_BODY)
		m->body_start(m->ctx);
}

/* "--B" or "--B--" for an enclosing boundary: its level (>= 0), else
 * -1; *last for the closing one. */
static int boundary_level(cleanup_mime_t *m, const char *l, size_t len,
    bool *last)
{
	if (len < 3 || l[0] != '-' || l[1] != '-')
		return -1;
	for (int i = m->depth - 1; i >= 0; i--) {
		size_t bl = str_len(&m->bnd[i]);
		const char *b = str_cstr(&m->bnd[i]);
		size_t rest;

		if (len < 2 + bl || memcmp(l + 2, b, bl) != 0)
			continue;
		rest = len - 2 - bl;
		*last = rest >= 2 && l[2 + bl] == '-' && l[3 + bl] == '-';
		/* only white space may follow (RFC 2046) */
		for (size_t k = 2 + bl + (*last ? 2 : 0); k < len; k++)
			if (!is_blank(l[k]))
				goto next;
		return i;
next:		;
	}
	return -1;
}

void cleanup_mime_primary(cleanup_mime_t *m, const char *ctype, size_t len)
{
	m->multipart = m->rfc822 = false;
	str_reset(&m->boundary);
	if (ctype != NULL)
		cleanup_mime_ctype(ctype, len, &m->multipart, &m->rfc822,
		    &m->boundary);
	end_headers(m);
}

void cleanup_mime_line(cleanup_mime_t *m, const char *l, size_t len)
{
	bool last;
	int lev;

	if (m->state == M_HEADER) {
		if (len > 0 && is_blank(l[0]) && m->have_hdr) {
			size_t room = m->hmax > str_len(&m->hbuf) ?
			    m->hmax - str_len(&m->hbuf) : 0;
			str_append(&m->hbuf, l, len < room ? len : room);
			return;
		}
		if (len == 0) {
			end_headers(m);
			return;
		}
		if (cleanup_hdr_name_len(l, len, true) > 0) {
			flush_header(m);
			str_append(&m->hbuf, l, len < m->hmax ? len : m->hmax);
			m->have_hdr = true;
			return;
		}
		/* not a header: the headers ended without an empty line */
		end_headers(m);
	}
	lev = boundary_level(m, l, len, &last);
	if (lev >= 0) {
		m->body(m->ctx, l, len);
		m->depth = lev + 1;
		if (last) {
			m->depth = lev;		/* the epilogue follows */
		} else {
			m->state = M_HEADER;	/* a part's header */
			m->hclass = CLEANUP_MIME_PART;
		}
		return;
	}
	m->body(m->ctx, l, len);
}

void cleanup_mime_end(cleanup_mime_t *m)
{
	if (m->state == M_HEADER)
		flush_header(m);
}

bool cleanup_mime_too_deep(const cleanup_mime_t *m)
{
	return m->too_deep;
}

bool cleanup_mime_is_header(const char *h, size_t len)
{
	return (len >= 8 && strncasecmp(h, "Content-", 8) == 0) ||
	    (len >= 13 && strncasecmp(h, "MIME-Version:", 13) == 0) ||
	    (len >= 13 && strncasecmp(h, "MIME-Version", 12) == 0 &&
	    (h[12] == ' ' || h[12] == '\t'));
}
