/* libpostq: JSON output and times. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "pq.h"

/* Length of the UTF-8 sequence at s (valid, shortest form, no
 * surrogates), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned min, v;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07, min = 0x10000;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return n;
}

void pq_json_str(str_t *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	str_putc(out, '"');
	while (*p) {
		size_t n;
		switch (*p) {
		case '"': str_cat(out, "\\\""); p++; continue;
		case '\\': str_cat(out, "\\\\"); p++; continue;
		case '\n': str_cat(out, "\\n"); p++; continue;
		case '\r': str_cat(out, "\\r"); p++; continue;
		case '\t': str_cat(out, "\\t"); p++; continue;
		}
		if (*p < 0x20 || *p == 0x7f || (n = utf8_len(p)) == 0) {
			str_catf(out, "\\u%04x", *p);
			p++;
			continue;
		}
		str_append(out, (const char *)p, n);
		p += n;
	}
	str_putc(out, '"');
}

/* Integer attributes that are yes/no, and string attributes that carry
 * decimal fractions (the protocol has no floating-point type). */
static const char *const flag_names[] = { "dead", "suspended", "probing",
    "held", "blocker", "current", NULL };
static const char *const num_names[] = { "success", "failure",
    "fail_cohorts", "message_rate", "message_tokens", "connection_rate",
    "connection_tokens", "next_token_in", NULL };

static bool in(const char *const *v, const char *name)
{
	for (; *v; v++)
		if (strcmp(*v, name) == 0)
			return true;
	return false;
}

static bool numeric(const char *s)
{
	char *end;

	if (*s == 0)
		return false;
	(void)strtod(s, &end);
	return *end == 0 && strspn(s, "-0123456789.") == strlen(s);
}

void pq_json_attr(str_t *out, const attr_msg_t *m)
{
	str_putc(out, '{');
	for (size_t i = 0; i < attr_msg_count(m); i++) {
		const attr_t *a = attr_msg_at(m, i);
		if (i)
			str_putc(out, ',');
		pq_json_str(out, a->name);
		str_putc(out, ':');
		switch (a->type) {
		case ATTR_TYPE_INT:
			if (in(flag_names, a->name))
				str_cat(out, a->u.i ? "true" : "false");
			else
				str_catf(out, "%d", (int)a->u.i);
			break;
		case ATTR_TYPE_LONG:
			str_catf(out, "%lld", (long long)a->u.l);
			break;
		case ATTR_TYPE_STR:
		case ATTR_TYPE_DATA:
			if (in(num_names, a->name) && numeric(a->u.b.p))
				str_cat(out, a->u.b.p);
			else
				pq_json_str(out, a->u.b.p);
			break;
		case ATTR_TYPE_LIST: {
			const attr_list_t *l = a->u.list;
			str_putc(out, '[');
			for (size_t k = 0; k < attr_list_count(l); k++) {
				if (k)
					str_putc(out, ',');
				pq_json_attr(out, attr_list_group(l, k));
			}
			str_putc(out, ']');
			break;
		}
		default:
			str_cat(out, "null");
			break;
		}
	}
	str_putc(out, '}');
}

const char *pq_time_text(time_t t, char buf[64])
{
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL
	    || strftime(buf, 64, "%a %b %e %H:%M:%S", &tm) == 0)
		(void)bfmt(buf, 64, "%lld", (long long)t);
	return buf;
}
