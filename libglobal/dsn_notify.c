/* DSN NOTIFY bits: validation, parsing, formatting (dsn_notify.h). */
#include <string.h>
#include <strings.h>
#include "dsn_notify.h"

static const struct {
	const char *upper, *lower;
	size_t len;
	int bit;
} keywords[] = {			/* the order dsn_notify_format writes */
	{ "NEVER", "never", 5, DSN_NOTIFY_NEVER },
	{ "SUCCESS", "success", 7, DSN_NOTIFY_SUCCESS },
	{ "FAILURE", "failure", 7, DSN_NOTIFY_FAILURE },
	{ "DELAY", "delay", 5, DSN_NOTIFY_DELAY },
};
#define NKEYWORDS (sizeof(keywords) / sizeof(keywords[0]))

bool dsn_notify_valid(long bits)
{
	if (bits == 0 || bits == DSN_NOTIFY_NEVER)
		return true;
	return (bits & ~(long)DSN_NOTIFY_ANY) == 0;
}

static bool is_sep(char c, const char *seps)
{
	return c != '\0' && strchr(seps, c) != NULL;
}

/* The bit of the keyword word[0..n), or 0. */
static int keyword_bit(const char *word, size_t n)
{
	for (size_t k = 0; k < NKEYWORDS; k++)
		if (n == keywords[k].len &&
		    strncasecmp(word, keywords[k].upper, n) == 0)
			return keywords[k].bit;
	return 0;
}

static int fail(const char **why, const char *reason)
{
	if (why != NULL)
		*why = reason;
	return -1;
}

int dsn_notify_parse(const char *text, size_t len,
    enum dsn_notify_syntax syntax, const char **why)
{
	const char *seps = syntax == DSN_NOTIFY_LIST ? ", \t" : ",";
	bool collapse = syntax != DSN_NOTIFY_SMTP;
	size_t i = 0;
	int bits = 0;

	for (;;) {
		size_t start, n;
		int bit;

		if (collapse)
			while (i < len && is_sep(text[i], seps))
				i++;
		if (collapse && i == len)
			break;
		start = i;
		while (i < len && text[i] != '\0' && !is_sep(text[i], seps))
			i++;
		n = i - start;
		bit = keyword_bit(text + start, n);
		if (bit == 0 && syntax != DSN_NOTIFY_LENIENT)
			return fail(why, "NOTIFY must be NEVER or a list of "
			    "SUCCESS, FAILURE, DELAY");
		bits |= bit;
		if (i >= len || text[i] == '\0')
			break;
		i++;			/* the separator */
	}
	if (syntax == DSN_NOTIFY_LENIENT)
		return bits;
	if (bits == 0)
		return fail(why, "NOTIFY must be NEVER or a list of "
		    "SUCCESS, FAILURE, DELAY");
	if ((bits & DSN_NOTIFY_NEVER) && bits != DSN_NOTIFY_NEVER)
		return fail(why, "NOTIFY=NEVER cannot be combined with other "
		    "values");
	return bits;
}

void dsn_notify_format(int bits, bool lower, str_t *out)
{
	bool first = true;

	for (size_t k = 0; k < NKEYWORDS; k++) {
		if (!(bits & keywords[k].bit))
			continue;
		if (!first)
			str_putc(out, ',');
		str_cat(out, lower ? keywords[k].lower : keywords[k].upper);
		first = false;
	}
}
