#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "str.h"
#include "mem.h"
#include "log.h"

str_t *str_new(size_t hint)
{
	str_t *s = xmalloc(sizeof(*s));
	s->buf = NULL;
	s->len = s->cap = 0;
	str_reserve(s, hint ? hint : 16);
	return s;
}

void str_release(str_t *s)
{
	free(s->buf);
	s->buf = NULL;
	s->len = s->cap = 0;
}

void str_free(str_t *s)
{
	if (s == NULL)
		return;
	str_release(s);
	free(s);
}

void str_reserve(str_t *s, size_t extra)
{
	size_t need;

	if (extra > SIZE_MAX - s->len - 1)
		log_panic("str_reserve: size overflow");
	need = s->len + extra + 1;
	if (need <= s->cap)
		return;
	size_t cap = s->cap ? s->cap : 16;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	s->buf = xrealloc(s->buf, cap);
	s->cap = cap;
	s->buf[s->len] = 0;
}

void str_append(str_t *s, const void *data, size_t len)
{
	str_reserve(s, len);
	if (len)
		memcpy(s->buf + s->len, data, len);
	s->len += len;
	s->buf[s->len] = 0;
}

void str_cat(str_t *s, const char *cstr)
{
	str_append(s, cstr, strlen(cstr));
}

void str_putc(str_t *s, int c)
{
	str_reserve(s, 1);
	s->buf[s->len++] = (char)c;
	s->buf[s->len] = 0;
}

void str_vcatf(str_t *s, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	str_reserve(s, 64);
	va_copy(ap2, ap);
	n = vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		log_panic("str_vcatf: bad format '%s'", fmt);
	if ((size_t)n >= s->cap - s->len) {
		str_reserve(s, (size_t)n);
		n = vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
	}
	s->len += (size_t)n;
}

void str_catf(str_t *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	str_vcatf(s, fmt, ap);
	va_end(ap);
}

void str_reset(str_t *s)
{
	s->len = 0;
	if (s->buf)
		s->buf[0] = 0;
}

void str_set(str_t *s, const char *cstr)
{
	str_reset(s);
	str_cat(s, cstr);
}

void str_setf(str_t *s, const char *fmt, ...)
{
	va_list ap;
	str_reset(s);
	va_start(ap, fmt);
	str_vcatf(s, fmt, ap);
	va_end(ap);
}

void str_truncate(str_t *s, size_t len)
{
	if (len < s->len) {
		s->len = len;
		s->buf[len] = 0;
	}
}

char *str_steal(str_t *s)
{
	char *b;
	if (s->buf == NULL)
		str_reserve(s, 0);
	b = s->buf;
	s->buf = NULL;
	s->len = s->cap = 0;
	return b;
}

bool bfmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

bool bcopy_str(char *dst, size_t size, const char *src)
{
	size_t len = strlen(src);
	if (size == 0)
		return false;
	if (len >= size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = 0;
		return false;
	}
	memcpy(dst, src, len + 1);
	return true;
}

char *str_token(char **cp, const char *delims)
{
	char *start;

	if (*cp == NULL)
		return NULL;
	start = *cp + strspn(*cp, delims);
	if (*start == 0) {
		*cp = NULL;
		return NULL;
	}
	char *end = start + strcspn(start, delims);
	if (*end) {
		*end = 0;
		*cp = end + 1;
	} else {
		*cp = NULL;
	}
	return start;
}

char *str_trim(char *s)
{
	char *end;
	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = 0;
	return s;
}

char *str_lower(char *s)
{
	for (char *p = s; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p + 'a' - 'A');
	return s;
}

void str_quote_printable(str_t *out, const void *data, size_t len)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\\')
			str_cat(out, "\\\\");
		else if (p[i] < 0x20 || p[i] >= 0x7f)
			str_catf(out, "\\%03o", p[i]);
		else
			str_putc(out, p[i]);
	}
}

bool str_to_ulong(const char *s, unsigned long *out)
{
	char *end;
	unsigned long v;
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno == ERANGE || *end != 0)
		return false;
	*out = v;
	return true;
}

bool str_to_long(const char *s, long *out)
{
	char *end;
	long v;
	const char *d = (*s == '-' || *s == '+') ? s + 1 : s;
	if (!isdigit((unsigned char)*d))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno == ERANGE || *end != 0)
		return false;
	*out = v;
	return true;
}

size_t str_utf8_len(const void *p, size_t avail)
{
	const unsigned char *s = p;
	unsigned c, min, cp;
	size_t n;

	if (avail == 0)
		return 0;
	c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07, min = 0x10000;
	else
		return 0;
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

long str_time_unit(int unit)
{
	switch (unit) {
	case 's': return 1;
	case 'm': return 60;
	case 'h': return 3600;
	case 'd': return 86400;
	case 'w': return 7 * 86400;
	default: return 0;
	}
}
