/* Token buckets and rates (tbucket.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "tbucket.h"

static const struct {
	const char *name;
	double secs;
} units[] = {
	{ "s", 1 }, { "sec", 1 }, { "second", 1 }, { "seconds", 1 },
	{ "m", 60 }, { "min", 60 }, { "minute", 60 }, { "minutes", 60 },
	{ "h", 3600 }, { "hour", 3600 }, { "hours", 3600 },
	{ "d", 86400 }, { "day", 86400 }, { "days", 86400 },
};

static bool rate_err(str_t *err, const char *text, const char *why)
{
	if (err)
		str_setf(err, "bad rate \"%s\": %s", text, why);
	return false;
}

bool tb_rate_parse(const char *text, double *per_sec, str_t *err)
{
	const char *p = text, *u;
	char *end;
	double n;
	size_t ulen;

	if (text == NULL)
		text = p = "";
	while (isspace((unsigned char)*p))
		p++;
	if (*p == 0 || strcasecmp(p, "none") == 0 || strcmp(p, "0") == 0) {
		*per_sec = 0;
		return true;
	}
	if (!isdigit((unsigned char)*p) && *p != '.')
		return rate_err(err, text, "expected N/UNIT with N > 0 "
		    "(e.g. 500/h), or 0 for no limit");
	errno = 0;
	n = strtod(p, &end);
	if (end == p || errno || !isfinite(n))
		return rate_err(err, text, "the count is not a number");
	p = end;
	while (isspace((unsigned char)*p))
		p++;
	if (*p != '/')
		return rate_err(err, text, "expected N/UNIT (e.g. 500/h, 10/m)");
	p++;
	while (isspace((unsigned char)*p))
		p++;
	u = p;
	while (isalpha((unsigned char)*p))
		p++;
	ulen = (size_t)(p - u);
	while (isspace((unsigned char)*p))
		p++;
	if (*p != 0 || ulen == 0)
		return rate_err(err, text, "expected a unit s, m, h or d after '/'");
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strlen(units[i].name) == ulen
		    && strncasecmp(u, units[i].name, ulen) == 0) {
			if (!(n > 0))
				return rate_err(err, text, "the count must be "
				    "more than 0 (use 0 alone for no limit)");
			*per_sec = n / units[i].secs;
			return true;
		}
	}
	return rate_err(err, text, "unknown unit (s, m, h or d)");
}

const char *tb_rate_format(double per_sec, str_t *out)
{
	static const struct { char c; double secs; } fmt[] = {
		{ 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 },
	};

	if (!(per_sec > 0)) {
		str_set(out, "0");
		return str_cstr(out);
	}
	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		double n = per_sec * fmt[i].secs;
		double r = nearbyint(n);
		if (r >= 1 && fabs(n - r) < 1e-6 * r && r < 1e15) {
			str_setf(out, "%.0f/%c", r, fmt[i].c);
			return str_cstr(out);
		}
	}
	str_setf(out, "%.6f", per_sec);
	/* Trim trailing zeros of the fraction. */
	while (str_len(out) > 0 && str_cstr(out)[str_len(out) - 1] == '0')
		str_truncate(out, str_len(out) - 1);
	if (str_len(out) > 0 && str_cstr(out)[str_len(out) - 1] == '.')
		str_truncate(out, str_len(out) - 1);
	str_cat(out, "/s");
	return str_cstr(out);
}

void tb_init(tbucket_t *b, double rate, double burst, double now)
{
	b->rate = rate;
	b->burst = burst >= 1 ? burst : 1;
	b->tokens = b->burst;
	b->stamp = now;
}

double tb_tokens(const tbucket_t *b, double now)
{
	double t = b->tokens;

	if (now > b->stamp)
		t += (now - b->stamp) * b->rate;
	return t < b->burst ? t : b->burst;
}

bool tb_can_take(const tbucket_t *b, double now)
{
	return tb_tokens(b, now) >= 1 - TB_EPSILON;
}

bool tb_take(tbucket_t *b, double now)
{
	double t = tb_tokens(b, now);

	if (t < 1 - TB_EPSILON)
		return false;
	t -= 1;
	b->tokens = t > 0 ? t : 0;
	if (now > b->stamp)
		b->stamp = now;
	return true;
}

double tb_next_token(const tbucket_t *b, double now)
{
	double t = tb_tokens(b, now);

	if (t >= 1 - TB_EPSILON)
		return now;
	return (now > b->stamp ? now : b->stamp) + (1 - t) / b->rate;
}

double tb_full_time(const tbucket_t *b, double now)
{
	double t = tb_tokens(b, now);

	if (t >= b->burst - TB_EPSILON)
		return now;
	return (now > b->stamp ? now : b->stamp) + (b->burst - t) / b->rate;
}
