/* DSN status codes and dates (dsn.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dsn.h"
#include "mail_date.h"

/* 1..3 digits, no leading zero unless the number is 0. */
static size_t number_len(const char *s, size_t len)
{
	size_t n = 0;

	while (n < len && n < 4 && isdigit((unsigned char)s[n]))
		n++;
	if (n == 0 || n > 3)
		return 0;
	if (n > 1 && s[0] == '0')
		return 0;
	return n;
}

/* Length of a status code at s (exactly, stopping at anything else), or
 * 0. */
static size_t status_len(const char *s, size_t len)
{
	size_t i, n;

	if (len < 5 || (s[0] != '2' && s[0] != '4' && s[0] != '5') ||
	    s[1] != '.')
		return 0;
	i = 2;
	if ((n = number_len(s + i, len - i)) == 0)
		return 0;
	i += n;
	if (i >= len || s[i] != '.')
		return 0;
	i++;
	if ((n = number_len(s + i, len - i)) == 0)
		return 0;
	return i + n;
}

bool dsn_status_valid_len(const char *s, size_t len)
{
	return s && status_len(s, len) == len && len > 0;
}

bool dsn_status_valid(const char *s)
{
	return s && dsn_status_valid_len(s, strlen(s));
}

size_t dsn_status_in_reply(const char *text, char out[DSN_STATUS_SIZE])
{
	size_t len = strlen(text), skip = 0, n;
	char cls = 0;

	if (len >= 4 && isdigit((unsigned char)text[0]) &&
	    isdigit((unsigned char)text[1]) && isdigit((unsigned char)text[2]) &&
	    (text[3] == ' ' || text[3] == '-')) {
		cls = text[0];
		skip = 4;
	}
	n = status_len(text + skip, len - skip);
	if (n == 0 || n >= DSN_STATUS_SIZE)
		return 0;
	/* The code must end at a word boundary ("5.1.1x" is not one). */
	if (skip + n < len && !isspace((unsigned char)text[skip + n]))
		return 0;
	if (cls && text[skip] != cls)
		return 0;
	memcpy(out, text + skip, n);
	out[n] = 0;
	return skip + n;
}

const char *dsn_status_for_smtp(int code)
{
	if (code >= 200 && code < 300)
		return "2.0.0";
	if (code >= 500 && code < 600)
		return "5.0.0";
	return "4.0.0";
}

void dsn_rfc822_date(time_t t, str_t *out)
{
	mail_date_format(t, 0, out);
}
