/* A minimal, strict HTTP/1.0 and 1.1 request reader for the metrics
 * service, and its answers.  It reads the head of one request line by
 * line and decides the answer: 200 for GET or HEAD of /metrics, 404 for
 * another path, 405 for another method, 505 for another HTTP version,
 * 400 for anything malformed.  Bodies are never read; nothing the client
 * sent is echoed.  doc/metrics.md, "The HTTP side". */
#include <string.h>
#include "metrics.h"

void http_req_init(http_req_t *r)
{
	memset(r, 0, sizeof(*r));
}

void http_req_fail(http_req_t *r, int status, const char *why)
{
	r->status = status;
	r->why = why;
}

static bool refuse(http_req_t *r, int status, const char *why)
{
	http_req_fail(r, status, why);
	return true;
}

/* RFC 9110 tchar. */
static bool tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	    || (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool token(const char *p, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!tchar((unsigned char)p[i]))
			return false;
	return true;
}

static bool digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The request line: METHOD SP TARGET SP HTTP/D.D, one space each. */
static bool request_line(http_req_t *r, const char *line, size_t len)
{
	const char *sp1, *sp2, *target, *ver;
	size_t mlen, tlen, vlen;

	if (len > HTTP_REQLINE_MAX)
		return refuse(r, 400, "request line too long");
	if ((sp1 = memchr(line, ' ', len)) == NULL)
		return refuse(r, 400, "malformed request line");
	mlen = (size_t)(sp1 - line);
	target = sp1 + 1;
	if ((sp2 = memchr(target, ' ', len - mlen - 1)) == NULL)
		return refuse(r, 400, "malformed request line");
	tlen = (size_t)(sp2 - target);
	ver = sp2 + 1;
	vlen = len - mlen - tlen - 2;
	if (!token(line, mlen))
		return refuse(r, 400, "malformed method");
	/* The target: origin form, visible ASCII only. */
	if (tlen == 0 || target[0] != '/')
		return refuse(r, 400, "malformed request target");
	for (size_t i = 0; i < tlen; i++) {
		unsigned char c = (unsigned char)target[i];
		if (c <= 0x20 || c >= 0x7f)
			return refuse(r, 400, "malformed request target");
	}
	if (vlen != 8 || memcmp(ver, "HTTP/", 5) != 0 || !digit(ver[5])
	    || ver[6] != '.' || !digit(ver[7]))
		return refuse(r, 400, "malformed HTTP version");
	if (ver[5] != '1' || (ver[7] != '0' && ver[7] != '1'))
		return refuse(r, 505, "HTTP version not supported");
	r->v11 = ver[7] == '1';
	if (mlen == 4 && memcmp(line, "HEAD", 4) == 0)
		r->head = true;
	else if (!(mlen == 3 && memcmp(line, "GET", 3) == 0))
		return refuse(r, 405, "method not allowed");
	/* "/metrics", with or without a query. */
	if (!(tlen >= 8 && memcmp(target, "/metrics", 8) == 0
	    && (tlen == 8 || target[8] == '?')))
		return refuse(r, 404, "no such path");
	return false;
}

static bool name_is(const char *p, size_t n, const char *name)
{
	size_t k = strlen(name);

	if (n != k)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != name[i])
			return false;
	}
	return true;
}

/* One header line: NAME ":" OWS VALUE OWS. */
static bool header_line(http_req_t *r, const char *line, size_t len)
{
	const char *colon, *v;
	size_t nlen, vlen;

	if (len > HTTP_HEADER_MAX)
		return refuse(r, 400, "header line too long");
	if (++r->lines > HTTP_HEADERS_MAX + 1)
		return refuse(r, 400, "too many header lines");
	if ((r->bytes += len + 2) > HTTP_HEADER_BYTES)
		return refuse(r, 400, "header too large");
	if (line[0] == ' ' || line[0] == '\t')
		return refuse(r, 400, "folded header line");
	if ((colon = memchr(line, ':', len)) == NULL)
		return refuse(r, 400, "header line without a colon");
	nlen = (size_t)(colon - line);
	if (!token(line, nlen))
		return refuse(r, 400, "malformed header name");
	v = colon + 1;
	vlen = len - nlen - 1;
	for (size_t i = 0; i < vlen; i++) {
		unsigned char c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return refuse(r, 400, "control character in a header");
	}
	while (vlen > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (name_is(line, nlen, "host"))
		r->hosts++;
	else if (name_is(line, nlen, "transfer-encoding"))
		return refuse(r, 400, "a request body is not accepted");
	else if (name_is(line, nlen, "content-length")
	    && !(vlen == 1 && v[0] == '0'))
		return refuse(r, 400, "a request body is not accepted");
	return false;
}

bool http_req_line(http_req_t *r, const char *line, size_t len)
{
	if (r->status != 0 || r->done)
		return true;
	if (r->lines == 0) {
		r->lines = 1;
		if (request_line(r, line, len)) {
			/* 404 and 405 still need a sane head, but nothing in
			 * it can change the answer: answer now. */
			return true;
		}
		return false;
	}
	if (len == 0) {
		r->done = true;
		if (r->v11 && r->hosts != 1)
			return refuse(r, 400, r->hosts == 0
			    ? "HTTP/1.1 request without Host"
			    : "more than one Host header");
		if (r->hosts > 1)
			return refuse(r, 400, "more than one Host header");
		r->status = 200;
		return true;
	}
	return header_line(r, line, len);
}

const char *http_status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 505: return "HTTP Version Not Supported";
	default: return "Error";
	}
}

void http_answer(str_t *out, int status, bool head, const char *ctype,
    const char *body, size_t blen)
{
	str_catf(out, "HTTP/1.1 %d %s\r\n", status, http_status_text(status));
	str_catf(out, "Content-Type: %s\r\n",
	    ctype ? ctype : "text/plain; charset=utf-8");
	str_catf(out, "Content-Length: %zu\r\n", blen);
	if (status == 405)
		str_cat(out, "Allow: GET, HEAD\r\n");
	str_cat(out, "Connection: close\r\n\r\n");
	if (!head)
		str_append(out, body, blen);
}
