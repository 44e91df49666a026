/* JSON strings. */
#include "json.h"

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

void json_str(str_t *out, const char *s)
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
