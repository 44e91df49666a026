/* JSON strings. */
#include <string.h>
#include "json.h"

void json_str(str_t *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	const unsigned char *end = p + strlen((const char *)p);

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
		if (*p < 0x20 || *p == 0x7f ||
		    (n = str_utf8_len(p, (size_t)(end - p))) == 0) {
			str_catf(out, "\\u%04x", *p);
			p++;
			continue;
		}
		str_append(out, (const char *)p, n);
		p += n;
	}
	str_putc(out, '"');
}
