/* Per-destination concurrency feedback (see feedback.h). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "feedback.h"
#include "log.h"

/* Sums of 1/N or 1/sqrt(N) steps do not add up exactly (six times 1/6
 * is 0.9999999999999999), so the thresholds of the pseudo-code allow this
 * much rounding error; otherwise a run would be one event too long. */
#define FB_EPSILON 1e-9

/* ---- feedback functions ---- */

static bool parse_fail(str_t *err, const char *param, const char *text,
    size_t len, const char *why)
{
	if (err) {
		str_reset(err);
		if (param)
			str_catf(err, "%s: ", param);
		str_cat(err, "invalid feedback value \"");
		str_quote_printable(err, text, len);
		str_catf(err, "\": %s", why);
	}
	return false;
}

bool fb_func_parse(const char *text, const char *param, fb_func_t *out,
    str_t *err)
{
	static const char expect[] =
	    "expected NUMBER, NUMBER/concurrency or NUMBER/sqrt_concurrency, "
	    "NUMBER in [0, 1]";
	const char *s = text ? text : "";
	size_t len;
	fb_func_t fn;

	while (isspace((unsigned char)*s))
		s++;
	len = strlen(s);
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;

	/* The number: plain decimal only (strtod would also take "inf",
	 * "nan" and hex, which make no sense here). */
	size_t i = 0, digits = 0, dots = 0;
	while (i < len && (isdigit((unsigned char)s[i]) || s[i] == '.')) {
		if (s[i] == '.')
			dots++;
		else
			digits++;
		i++;
	}
	if (digits == 0 || dots > 1)
		return parse_fail(err, param, s, len, expect);
	char num[64];
	if (i >= sizeof(num))
		return parse_fail(err, param, s, len, "number too long");
	memcpy(num, s, i);
	num[i] = 0;
	fn.x = strtod(num, NULL);
	if (!(fn.x >= 0 && fn.x <= 1))
		return parse_fail(err, param, s, len, "the number must be in [0, 1]");

	while (i < len && isspace((unsigned char)s[i]))
		i++;
	if (i == len) {
		fn.kind = FB_KIND_CONSTANT;
	} else if (s[i] == '/') {
		i++;
		while (i < len && isspace((unsigned char)s[i]))
			i++;
		size_t rest = len - i;
		if (rest == strlen("concurrency")
		    && strncasecmp(s + i, "concurrency", rest) == 0)
			fn.kind = FB_KIND_INVERSE;
		else if (rest == strlen("sqrt_concurrency")
		    && strncasecmp(s + i, "sqrt_concurrency", rest) == 0)
			fn.kind = FB_KIND_INVERSE_SQRT;
		else
			return parse_fail(err, param, s, len, expect);
	} else {
		return parse_fail(err, param, s, len, expect);
	}
	*out = fn;
	return true;
}

double fb_func_eval(const fb_func_t *fn, int window)
{
	double n = window < 1 ? 1 : window;

	switch (fn->kind) {
	case FB_KIND_INVERSE:
		return fn->x / n;
	case FB_KIND_INVERSE_SQRT:
		return fn->x / sqrt(n);
	case FB_KIND_CONSTANT:
	default:
		return fn->x;
	}
}

const char *fb_func_format(const fb_func_t *fn, str_t *out)
{
	str_setf(out, "%g", fn->x);
	if (fn->kind == FB_KIND_INVERSE)
		str_cat(out, "/concurrency");
	else if (fn->kind == FB_KIND_INVERSE_SQRT)
		str_cat(out, "/sqrt_concurrency");
	return str_cstr(out);
}

/* ---- settings ---- */

void fb_settings_init(fb_settings_t *s)
{
	memset(s, 0, sizeof(*s));
	s->initial_concurrency = FB_DEF_INITIAL_CONCURRENCY;
	s->concurrency_limit = FB_DEF_CONCURRENCY_LIMIT;
	s->failed_cohort_limit = FB_DEF_FAILED_COHORT_LIMIT;
	s->positive.kind = FB_KIND_CONSTANT;
	s->positive.x = 1;
	s->negative.kind = FB_KIND_CONSTANT;
	s->negative.x = 1;
	s->rate_delay = FB_DEF_RATE_DELAY;
	s->debug = false;
}

static bool func_ok(const fb_func_t *fn)
{
	return (unsigned)fn->kind <= FB_KIND_INVERSE_SQRT
	    && fn->x >= 0 && fn->x <= 1;
}

bool fb_settings_check(const fb_settings_t *s, str_t *err)
{
	const char *why = NULL;

	if (s->initial_concurrency < 1)
		why = "initial_destination_concurrency must be >= 1";
	else if (s->concurrency_limit < 0)
		why = "destination_concurrency_limit must be >= 0 (0 = no limit)";
	else if (!(s->failed_cohort_limit >= 0) || !isfinite(s->failed_cohort_limit))
		why = "destination_concurrency_failed_cohort_limit must be a finite number >= 0";
	else if (!func_ok(&s->positive))
		why = "destination_concurrency_positive_feedback is invalid";
	else if (!func_ok(&s->negative))
		why = "destination_concurrency_negative_feedback is invalid";
	else if (!(s->rate_delay >= 0) || !isfinite(s->rate_delay))
		why = "destination_rate_delay must be a finite number >= 0";
	if (why == NULL)
		return true;
	if (err)
		str_set(err, why);
	return false;
}

/* ---- state ---- */

static int initial_window(const fb_settings_t *s)
{
	int w = s->initial_concurrency;
	if (s->concurrency_limit > 0 && w > s->concurrency_limit)
		w = s->concurrency_limit;
	return w < 1 ? 1 : w;
}

static void debug_log(const fb_state_t *st, const fb_settings_t *s,
    const char *event, int before, int flags)
{
	if (!s->debug)
		return;
	log_info("feedback: %s %s: window %d->%d busy %d success %.3f "
	    "failure %.3f fail_cohorts %.3f%s%s",
	    st->name ? st->name : "(unnamed)", event, before, st->window,
	    st->busy, st->success, st->failure, st->fail_cohorts,
	    (flags & FB_DEAD) ? " dead" : "",
	    (flags & FB_REVIVED) ? " revived" : "");
}

void fb_init(fb_state_t *st, const fb_settings_t *s, const char *name)
{
	memset(st, 0, sizeof(*st));
	st->window = initial_window(s);
	st->name = name;
}

static void revive(fb_state_t *st, const fb_settings_t *s)
{
	st->window = initial_window(s);
	st->success = st->failure = st->fail_cohorts = 0;
	st->dead = st->probing = false;
}

int fb_positive(fb_state_t *st, const fb_settings_t *s)
{
	int before = st->window;
	int flags = 0;

	if (st->probing || st->dead) {
		/* The probe got through, or a delivery that was in flight when
		 * the site was declared dead succeeded: the site is back. */
		revive(st, s);
		flags = FB_REVIVED;
		debug_log(st, s, "positive", before, flags);
		return flags;
	}
	st->fail_cohorts = 0;
	/* Growth is held back while many deliveries are in flight: their
	 * feedback (possibly negative) is still to come. */
	if (st->window < st->busy + s->initial_concurrency) {
		st->success += fb_func_eval(&s->positive, st->window);
		while (st->success >= 1 - FB_EPSILON) {
			st->window += 1;
			st->failure = 0;
			st->success -= 1;
		}
	}
	if (s->concurrency_limit > 0 && st->window > s->concurrency_limit)
		st->window = s->concurrency_limit;
	if (st->window > before)
		flags |= FB_GREW;
	debug_log(st, s, "positive", before, flags);
	return flags;
}

int fb_negative(fb_state_t *st, const fb_settings_t *s)
{
	int before = st->window;
	int flags = 0;

	if (st->probing) {
		fb_kill(st, s);
		flags = FB_DEAD;
		debug_log(st, s, "negative", before, flags);
		return flags;
	}
	if (st->window > 0) {
		st->fail_cohorts += 1.0 / st->window;
		if (st->fail_cohorts > s->failed_cohort_limit + FB_EPSILON) {
			st->window = 0;
			st->dead = true;
			flags |= FB_DEAD;
		}
	}
	if (st->window > 0) {
		st->failure -= fb_func_eval(&s->negative, st->window);
		while (st->failure < -FB_EPSILON) {
			st->window -= 1;
			st->failure += 1;
			st->success = 0;
		}
		if (st->window < 1)
			st->window = 1;
	}
	if (st->window < before && !(flags & FB_DEAD))
		flags |= FB_SHRANK;
	debug_log(st, s, "negative", before, flags);
	return flags;
}

void fb_probe_start(fb_state_t *st, const fb_settings_t *s)
{
	int before = st->window;
	st->window = 1;
	st->success = st->failure = st->fail_cohorts = 0;
	st->dead = false;
	st->probing = true;
	debug_log(st, s, "probe", before, 0);
}

void fb_kill(fb_state_t *st, const fb_settings_t *s)
{
	int before = st->window;
	st->window = 0;
	st->success = st->failure = 0;
	st->dead = true;
	st->probing = false;
	if (before != 0)
		debug_log(st, s, "kill", before, FB_DEAD);
}

int fb_effective_window(const fb_state_t *st, const fb_settings_t *s)
{
	if (st->dead || st->window <= 0)
		return 0;
	if (s->rate_delay > 0)
		return 1;
	return st->window;
}

double fb_next_start_time(const fb_state_t *st, const fb_settings_t *s)
{
	if (!(s->rate_delay > 0) || !st->started)
		return -HUGE_VAL;
	return st->last_start + s->rate_delay;
}

bool fb_can_start(const fb_state_t *st, const fb_settings_t *s, double now)
{
	if (st->busy >= fb_effective_window(st, s))
		return false;
	return now >= fb_next_start_time(st, s);
}

void fb_delivery_start(fb_state_t *st, const fb_settings_t *s, double now)
{
	(void)s;
	st->busy += 1;
	st->started = true;
	st->last_start = now;
}

int fb_delivery_done(fb_state_t *st, const fb_settings_t *s, double now,
    fb_outcome_t outcome)
{
	int flags = 0;

	(void)now;
	if (outcome == FB_POSITIVE)
		flags = fb_positive(st, s);
	else if (outcome == FB_NEGATIVE)
		flags = fb_negative(st, s);
	if (st->busy > 0)
		st->busy -= 1;
	return flags;
}
