/* Base64 encoding and strict decoding (base64.h). */
#include <stdint.h>
#include "base64.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void base64_encode(str_t *out, const void *data, size_t n)
{
	const unsigned char *p = data;
	char *w;
	size_t i;

	str_reserve(out, base64_encoded_len(n));
	w = out->buf + out->len;
	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 |
		    p[i + 2];
		*w++ = alphabet[v >> 18];
		*w++ = alphabet[(v >> 12) & 63];
		*w++ = alphabet[(v >> 6) & 63];
		*w++ = alphabet[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		*w++ = alphabet[v >> 18];
		*w++ = alphabet[(v >> 12) & 63];
		*w++ = '=';
		*w++ = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		*w++ = alphabet[v >> 18];
		*w++ = alphabet[(v >> 12) & 63];
		*w++ = alphabet[(v >> 6) & 63];
		*w++ = '=';
	}
	out->len = (size_t)(w - out->buf);
	out->buf[out->len] = '\0';
}

/* The value of an alphabet character, or -1. */
static int value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* How many '=' end text[0..n), n a multiple of four. */
static size_t padding(const unsigned char *t, size_t n)
{
	if (n == 0 || t[n - 1] != '=')
		return 0;
	return t[n - 2] == '=' ? 2 : 1;
}

bool base64_well_formed(const char *text, size_t n)
{
	const unsigned char *t = (const unsigned char *)text;
	size_t end;

	if (n % 4 != 0)
		return false;
	end = n - padding(t, n);
	for (size_t i = 0; i < end; i++)
		if (value(t[i]) < 0)
			return false;
	return true;
}

bool base64_decode(str_t *out, const char *text, size_t n)
{
	const unsigned char *t = (const unsigned char *)text;
	size_t start = out->len, pad;
	char *w;

	if (!base64_well_formed(text, n))
		return false;
	pad = padding(t, n);
	str_reserve(out, n / 4 * 3);
	w = out->buf + out->len;
	for (size_t i = 0; i < n; i += 4) {
		bool last = i + 4 == n;
		int c = last && pad == 2 ? 0 : value(t[i + 2]);
		int d = last && pad >= 1 ? 0 : value(t[i + 3]);
		uint32_t v = (uint32_t)value(t[i]) << 18 |
		    (uint32_t)value(t[i + 1]) << 12 | (uint32_t)c << 6 |
		    (uint32_t)d;

		*w++ = (char)(v >> 16);
		if (last && pad == 2) {
			if ((v & 0xffff) != 0)	/* bits that no byte uses */
				goto bad;
			break;
		}
		*w++ = (char)(v >> 8);
		if (last && pad == 1) {
			if ((v & 0xff) != 0)
				goto bad;
			break;
		}
		*w++ = (char)v;
	}
	out->len = (size_t)(w - out->buf);
	out->buf[out->len] = '\0';
	return true;
bad:
	out->len = start;
	if (out->buf != NULL)
		out->buf[start] = '\0';
	return false;
}
