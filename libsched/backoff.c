/* Retry back-off functions and queue lifetime (see backoff.h). */
#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>
#include "backoff.h"

static const char *const fn_names[] = {
	[BACKOFF_POSTFIX] = "postfix",
	[BACKOFF_LINEAR] = "linear",
	[BACKOFF_ARITHMETIC] = "arithmetic",
	[BACKOFF_GEOMETRIC] = "geometric",
	[BACKOFF_EXPONENTIAL] = "exponential",
};
#define N_FN (sizeof(fn_names) / sizeof(fn_names[0]))

void backoff_params_init(backoff_params_t *p)
{
	memset(p, 0, sizeof(*p));
	p->function = BACKOFF_DEF_FUNCTION;
	p->min_time = BACKOFF_DEF_MIN_TIME;
	p->max_time = BACKOFF_DEF_MAX_TIME;
	p->retry_count = BACKOFF_DEF_RETRY_COUNT;
	p->jitter = BACKOFF_DEF_JITTER;
	p->queue_lifetime = BACKOFF_DEF_QUEUE_LIFETIME;
	p->bounce_lifetime = BACKOFF_DEF_BOUNCE_LIFETIME;
	p->rand = NULL;
	p->rand_ctx = NULL;
}

static bool fail(str_t *err, const char *msg)
{
	if (err)
		str_set(err, msg);
	return false;
}

bool backoff_params_check(const backoff_params_t *p, str_t *err)
{
	/* Written as !(x >= 0) so that NaN is rejected too. */
	if ((unsigned)p->function >= N_FN)
		return fail(err, "invalid backoff_function value");
	if (!(p->min_time >= 0) || !isfinite(p->min_time))
		return fail(err, "minimal_backoff_time must be a finite number >= 0");
	if (!(p->max_time >= p->min_time) || !isfinite(p->max_time))
		return fail(err, "maximal_backoff_time must be finite and >= minimal_backoff_time");
	if (p->retry_count < 1)
		return fail(err, "backoff_retry_count must be >= 1");
	if ((p->function == BACKOFF_GEOMETRIC || p->function == BACKOFF_EXPONENTIAL)
	    && !(p->min_time > 0))
		return fail(err, "minimal_backoff_time must be > 0 with a geometric or exponential backoff_function");
	if (!(p->jitter >= 0 && p->jitter <= 100))
		return fail(err, "backoff_jitter must be a percentage in [0, 100]");
	if (!(p->queue_lifetime >= 0))
		return fail(err, "maximal_queue_lifetime must be >= 0");
	if (!(p->bounce_lifetime >= 0))
		return fail(err, "bounce_queue_lifetime must be >= 0");
	return true;
}

bool backoff_parse_function(const char *name, backoff_fn_t *out, str_t *err)
{
	const char *s = name ? name : "";
	while (isspace((unsigned char)*s))
		s++;
	size_t len = strlen(s);
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	for (size_t i = 0; i < N_FN; i++) {
		if (strlen(fn_names[i]) == len && strncasecmp(s, fn_names[i], len) == 0) {
			*out = (backoff_fn_t)i;
			return true;
		}
	}
	if (err) {
		str_reset(err);
		str_cat(err, "unknown backoff_function \"");
		str_quote_printable(err, s, len);
		str_cat(err, "\": expected postfix, linear, arithmetic, geometric or exponential");
	}
	return false;
}

const char *backoff_function_name(backoff_fn_t fn)
{
	return (unsigned)fn < N_FN ? fn_names[fn] : "unknown";
}

double backoff_curve(const backoff_params_t *p, int attempt)
{
	double min = p->min_time, max = p->max_time;
	int num = p->retry_count;
	double n = attempt < 1 ? 1 : attempt;

	if (p->function == BACKOFF_POSTFIX || (unsigned)p->function >= N_FN)
		return min;
	/* Every curve starts at MIN and ends at MAX (doc/scheduling-rules.md
	 * §7.3). */
	if (n <= 1)
		return min;
	if (num <= 1 || n > num)
		return max;

	switch (p->function) {
	case BACKOFF_LINEAR: {
		/* interval = (MAX - MIN) / NUM, t(n) = MIN + interval (n - 1)
		 * for n < NUM, and t(NUM) = MAX for the last attempt (a final
		 * step of two intervals). */
		double interval = (max - min) / num;
		if (n >= num)
			return max;
		return min + interval * (n - 1);
	}
	case BACKOFF_ARITHMETIC: {
		double d = 2 * (max - min) / ((double)num * (num - 1));
		return min + d * n * (n - 1) / 2;
	}
	case BACKOFF_GEOMETRIC: {
		if (!(min > 0) || !(max > 0))
			return max;		/* rejected by check; stay finite */
		double K = pow(10, log10(max / min) / (num - 1));
		return min * pow(K, n - 1);
	}
	case BACKOFF_EXPONENTIAL: {
		if (!(min > 0) || !(max > 0))
			return max;
		double k = pow(10, log10(max / min) / (num - 1));
		double pc = min / k;
		return pc * pow(k, n);
	}
	default:
		return min;
	}
}

/* doc/scheduling-rules.md §7.4. */
static double clamp(const backoff_params_t *p, double d)
{
	/* NaN (only from absurd parameters) becomes MAX: wait long, not 0. */
	if (!(d >= p->min_time))
		d = isnan(d) ? p->max_time : p->min_time;
	if (d > p->max_time)
		d = p->max_time;
	return d;
}

double backoff_apply_jitter(const backoff_params_t *p, double delay)
{
	if (p->rand != NULL && p->jitter > 0) {
		double r = p->rand(p->rand_ctx);
		if (!(r >= 0))
			r = 0;
		if (r >= 1)
			r = nextafter(1.0, 0.0);
		delay *= 1 + p->jitter / 100 * (2 * r - 1);
	}
	return clamp(p, delay);
}

double backoff_delay(const backoff_params_t *p, int attempt, double age)
{
	double d;

	if (p->function == BACKOFF_POSTFIX)
		d = age;
	else
		d = backoff_curve(p, attempt);
	return backoff_apply_jitter(p, clamp(p, d));
}

double backoff_next_retry(const backoff_params_t *p, int attempt,
    double arrival, double now)
{
	return now + backoff_delay(p, attempt, now - arrival);
}

double backoff_lifetime(const backoff_params_t *p, bool null_sender)
{
	return null_sender ? p->bounce_lifetime : p->queue_lifetime;
}

bool backoff_expired(const backoff_params_t *p, double arrival, double now,
    bool null_sender)
{
	return now - arrival >= backoff_lifetime(p, null_sender);
}
