/* Unit tests for libsched/backoff: the five back-off functions of
 * doc/scheduling-rules.md §7 against their formulas, clamping, jitter
 * with a fixed random source, parsing and queue lifetimes. */
#include <atf-c.h>
#include <math.h>
#include <string.h>
#include "libsched/backoff.h"

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (1 + fabs(b));
}
#define NEAR(a, b) near((a), (b))
#define CHECK_NEAR(a, b) ATF_CHECK_MSG(NEAR((a), (b)), "%s = %.12g, expected %.12g", #a, (double)(a), (double)(b))

static backoff_params_t mk(backoff_fn_t fn, double min, double max, int num)
{
	backoff_params_t p;
	backoff_params_init(&p);
	p.function = fn;
	p.min_time = min;
	p.max_time = max;
	p.retry_count = num;
	return p;
}

/* Parameter sets used throughout: (MIN, MAX, NUM). */
static const struct { double min, max; int num; } sets[] = {
	{ 300, 4000, 10 },	/* Petrel defaults */
	{ 5, 260, 10 },		/* an AWS SNS-like example */
	{ 100, 1000, 10 },
	{ 60, 3600, 2 },
	{ 60, 3600, 3 },
	{ 1, 512, 10 },
	{ 10, 10, 5 },		/* MIN == MAX: flat */
};
#define NSETS (sizeof(sets) / sizeof(sets[0]))

ATF_TC_WITHOUT_HEAD(defaults);
ATF_TC_BODY(defaults, tc)
{
	backoff_params_t p;
	str_t err = STR_INIT;
	backoff_params_init(&p);
	ATF_CHECK_EQ(p.function, BACKOFF_POSTFIX);
	ATF_CHECK_EQ(p.min_time, 300);
	ATF_CHECK_EQ(p.max_time, 4000);
	ATF_CHECK_EQ(p.retry_count, 10);
	ATF_CHECK_EQ(p.jitter, 0);
	ATF_CHECK_EQ(p.queue_lifetime, 5 * 86400);
	ATF_CHECK_EQ(p.bounce_lifetime, 5 * 86400);
	ATF_CHECK(p.rand == NULL);
	ATF_CHECK(backoff_params_check(&p, &err));
	str_release(&err);
}

/* Postfix: delay = age at the failure, clamped; the attempt number does
 * not matter. */
ATF_TC_WITHOUT_HEAD(postfix_function);
ATF_TC_BODY(postfix_function, tc)
{
	backoff_params_t p = mk(BACKOFF_POSTFIX, 300, 4000, 10);
	CHECK_NEAR(backoff_delay(&p, 1, 0), 300);	/* brand new: MIN */
	CHECK_NEAR(backoff_delay(&p, 1, 299.5), 300);
	CHECK_NEAR(backoff_delay(&p, 1, 300), 300);
	CHECK_NEAR(backoff_delay(&p, 2, 600), 600);
	CHECK_NEAR(backoff_delay(&p, 7, 1234.5), 1234.5);
	CHECK_NEAR(backoff_delay(&p, 99, 1234.5), 1234.5);
	CHECK_NEAR(backoff_delay(&p, 3, 4000), 4000);
	CHECK_NEAR(backoff_delay(&p, 3, 86400), 4000);	/* MAX */
	CHECK_NEAR(backoff_delay(&p, 1, -5), 300);	/* clock skew */
	/* Retrying at each delay doubles the age: 300, 600, 1200, 2400, MAX. */
	double arrival = 1000, now = 1000;
	double expect[] = { 300, 300, 600, 1200, 2400, 4000, 4000 };
	now += 0;
	for (int i = 0; i < 7; i++) {
		double next = backoff_next_retry(&p, i + 1, arrival, now);
		CHECK_NEAR(next - now, expect[i]);
		now = next;
	}
	CHECK_NEAR(backoff_curve(&p, 5), 300);
}

/* Linear (doc/scheduling-rules.md §7.3): interval = (MAX - MIN)/NUM,
 * t(n) = MIN + interval (n - 1) for n < NUM, t(NUM) = MAX. */
ATF_TC_WITHOUT_HEAD(linear_function);
ATF_TC_BODY(linear_function, tc)
{
	/* Hand-computed: MIN 100, MAX 1000, NUM 10: interval 90,
	 * t(n) = 100 + 90 (n - 1) for n < 10, t(10) = 1000. */
	backoff_params_t p = mk(BACKOFF_LINEAR, 100, 1000, 10);
	for (int n = 1; n < 10; n++)
		CHECK_NEAR(backoff_delay(&p, n, 0), 100.0 + 90.0 * (n - 1));
	CHECK_NEAR(backoff_delay(&p, 10, 0), 1000);
	CHECK_NEAR(backoff_delay(&p, 11, 0), 1000);
	CHECK_NEAR(backoff_delay(&p, 1000, 0), 1000);
	CHECK_NEAR(backoff_delay(&p, 0, 0), 100);	/* n < 1 counts as 1 */
	CHECK_NEAR(backoff_delay(&p, -3, 0), 100);
	/* Age is ignored by the curves. */
	CHECK_NEAR(backoff_delay(&p, 3, 1e6), 280);

	for (size_t s = 0; s < NSETS; s++) {
		p = mk(BACKOFF_LINEAR, sets[s].min, sets[s].max, sets[s].num);
		double interval = (sets[s].max - sets[s].min) / sets[s].num;
		CHECK_NEAR(backoff_curve(&p, 1), sets[s].min);
		CHECK_NEAR(backoff_curve(&p, sets[s].num), sets[s].max);
		CHECK_NEAR(backoff_curve(&p, sets[s].num + 1), sets[s].max);
		for (int n = 2; n < sets[s].num; n++)	/* constant step */
			CHECK_NEAR(backoff_curve(&p, n) - backoff_curve(&p, n - 1), interval);
		if (sets[s].num >= 2)	/* the last step is two intervals */
			CHECK_NEAR(backoff_curve(&p, sets[s].num) -
			    backoff_curve(&p, sets[s].num - 1), sets[s].num == 2 ?
			    sets[s].max - sets[s].min : 2 * interval);
	}
	/* Defaults: interval 370, t(2) = 670, t(9) = 3260, t(10) = 4000. */
	p = mk(BACKOFF_LINEAR, 300, 4000, 10);
	CHECK_NEAR(backoff_curve(&p, 2), 670);
	CHECK_NEAR(backoff_curve(&p, 9), 3260);
	CHECK_NEAR(backoff_curve(&p, 10), 4000);
}

/* Arithmetic: d = 2 (MAX - MIN)/(NUM (NUM - 1)), t(n) = t(n-1) + d (n-1). */
ATF_TC_WITHOUT_HEAD(arithmetic_function);
ATF_TC_BODY(arithmetic_function, tc)
{
	/* Hand-computed: MIN 100, MAX 1000, NUM 10: d = 20,
	 * t(n) = 100 + 10 n (n - 1). */
	backoff_params_t p = mk(BACKOFF_ARITHMETIC, 100, 1000, 10);
	double hand[] = { 100, 120, 160, 220, 300, 400, 520, 660, 820, 1000 };
	for (int n = 1; n <= 10; n++)
		CHECK_NEAR(backoff_delay(&p, n, 0), hand[n - 1]);
	CHECK_NEAR(backoff_delay(&p, 11, 0), 1000);

	for (size_t s = 0; s < NSETS; s++) {
		double min = sets[s].min, max = sets[s].max;
		int num = sets[s].num;
		p = mk(BACKOFF_ARITHMETIC, min, max, num);
		double d = 2 * (max - min) / (num * (num - 1.0));
		double t = min;		/* the arithmetic recurrence */
		CHECK_NEAR(backoff_curve(&p, 1), min);
		for (int n = 2; n <= num; n++) {
			t += d * (n - 1);
			CHECK_NEAR(backoff_curve(&p, n), t);
		}
		CHECK_NEAR(backoff_curve(&p, num), max);
		CHECK_NEAR(backoff_curve(&p, num + 1), max);
		CHECK_NEAR(backoff_curve(&p, num + 50), max);
	}
}

/* Geometric: t(n) = MIN K^(n-1), K = 10^(lg(MAX/MIN)/(NUM-1)). */
ATF_TC_WITHOUT_HEAD(geometric_function);
ATF_TC_BODY(geometric_function, tc)
{
	/* Hand-computed: MIN 1, MAX 512, NUM 10: K = 2. */
	backoff_params_t p = mk(BACKOFF_GEOMETRIC, 1, 512, 10);
	for (int n = 1; n <= 10; n++)
		CHECK_NEAR(backoff_curve(&p, n), ldexp(1, n - 1));
	CHECK_NEAR(backoff_curve(&p, 11), 512);

	for (size_t s = 0; s < NSETS; s++) {
		double min = sets[s].min, max = sets[s].max;
		int num = sets[s].num;
		p = mk(BACKOFF_GEOMETRIC, min, max, num);
		double K = pow(10, log10(max / min) / (num - 1));
		for (int n = 1; n <= num; n++) {
			CHECK_NEAR(backoff_curve(&p, n), min * pow(K, n - 1));
			/* Same curve written as MIN (MAX/MIN)^((n-1)/(NUM-1)). */
			CHECK_NEAR(backoff_curve(&p, n),
			    min * pow(max / min, (n - 1.0) / (num - 1)));
		}
		CHECK_NEAR(backoff_curve(&p, 1), min);
		CHECK_NEAR(backoff_curve(&p, num), max);
		CHECK_NEAR(backoff_curve(&p, num + 1), max);
	}
}

/* Exponential: k as K, p = MIN / k, t(n) = p k^n; equal to geometric. */
ATF_TC_WITHOUT_HEAD(exponential_function);
ATF_TC_BODY(exponential_function, tc)
{
	for (size_t s = 0; s < NSETS; s++) {
		double min = sets[s].min, max = sets[s].max;
		int num = sets[s].num;
		backoff_params_t e = mk(BACKOFF_EXPONENTIAL, min, max, num);
		backoff_params_t g = mk(BACKOFF_GEOMETRIC, min, max, num);
		double k = pow(10, log10(max / min) / (num - 1));
		double pc = min / k;
		for (int n = 1; n <= num; n++) {
			CHECK_NEAR(backoff_curve(&e, n), pc * pow(k, n));
			CHECK_NEAR(backoff_curve(&e, n), backoff_curve(&g, n));
			CHECK_NEAR(backoff_delay(&e, n, 0), backoff_delay(&g, n, 0));
		}
		CHECK_NEAR(backoff_curve(&e, 1), min);
		CHECK_NEAR(backoff_curve(&e, num), max);
		CHECK_NEAR(backoff_curve(&e, num + 1), max);
	}
}

/* NUM == 1: every curve gives MIN at n = 1, then MAX. */
ATF_TC_WITHOUT_HEAD(single_retry);
ATF_TC_BODY(single_retry, tc)
{
	backoff_fn_t fns[] = { BACKOFF_LINEAR, BACKOFF_ARITHMETIC,
	    BACKOFF_GEOMETRIC, BACKOFF_EXPONENTIAL };
	for (size_t i = 0; i < 4; i++) {
		backoff_params_t p = mk(fns[i], 300, 4000, 1);
		str_t err = STR_INIT;
		ATF_CHECK(backoff_params_check(&p, &err));
		str_release(&err);
		CHECK_NEAR(backoff_delay(&p, 1, 0), 300);
		CHECK_NEAR(backoff_delay(&p, 2, 0), 4000);
		ATF_CHECK(isfinite(backoff_curve(&p, 1)));
	}
}

/* backoff_delay clamps the curve into [MIN, MAX] and the results are
 * monotonic in n. */
ATF_TC_WITHOUT_HEAD(clamping_and_monotonic);
ATF_TC_BODY(clamping_and_monotonic, tc)
{
	backoff_fn_t fns[] = { BACKOFF_LINEAR, BACKOFF_ARITHMETIC,
	    BACKOFF_GEOMETRIC, BACKOFF_EXPONENTIAL };
	for (size_t i = 0; i < 4; i++) {
		for (size_t s = 0; s < NSETS; s++) {
			backoff_params_t p = mk(fns[i], sets[s].min, sets[s].max, sets[s].num);
			double prev = 0;
			for (int n = 1; n <= sets[s].num + 3; n++) {
				double d = backoff_delay(&p, n, 0);
				ATF_CHECK(d >= sets[s].min && d <= sets[s].max);
				ATF_CHECK(d >= prev - 1e-9);
				prev = d;
			}
		}
	}
	/* MIN == MAX: always that value. */
	backoff_params_t p = mk(BACKOFF_POSTFIX, 10, 10, 5);
	CHECK_NEAR(backoff_delay(&p, 1, 0), 10);
	CHECK_NEAR(backoff_delay(&p, 1, 1e9), 10);
}

/* Jitter with a fixed random source. */
struct seq { const double *v; size_t n, i; };
static double seq_rand(void *ctx)
{
	struct seq *s = ctx;
	double r = s->v[s->i % s->n];
	s->i++;
	return r;
}

ATF_TC_WITHOUT_HEAD(jitter);
ATF_TC_BODY(jitter, tc)
{
	double vals[] = { 0.0, 0.5, 0.75, 0.25, 0.999999 };
	struct seq sq = { vals, 5, 0 };
	/* NUM 9: interval 100, so t(5) = 500 and t(9..) = 1000. */
	backoff_params_t p = mk(BACKOFF_LINEAR, 100, 1000, 9);
	p.jitter = 10;
	p.rand = seq_rand;
	p.rand_ctx = &sq;
	/* t(5) = 500; factor 1 + 0.1 (2r - 1). */
	CHECK_NEAR(backoff_delay(&p, 5, 0), 450);	/* r = 0 */
	CHECK_NEAR(backoff_delay(&p, 5, 0), 500);	/* r = 0.5 */
	CHECK_NEAR(backoff_delay(&p, 5, 0), 525);	/* r = 0.75 */
	CHECK_NEAR(backoff_delay(&p, 5, 0), 475);	/* r = 0.25 */
	double hi = backoff_delay(&p, 5, 0);		/* r ~ 1 */
	ATF_CHECK(hi < 550 && hi > 549.99);
	ATF_CHECK_EQ(sq.i, 5);			/* one draw per delay */

	/* Clamped at the ends: MIN can only go up, MAX only down. */
	sq.i = 0;
	CHECK_NEAR(backoff_delay(&p, 1, 0), 100);	/* 90 -> MIN */
	sq.i = 4;
	ATF_CHECK(backoff_delay(&p, 1, 0) > 109.99);
	sq.i = 4;
	CHECK_NEAR(backoff_delay(&p, 10, 0), 1000);	/* 1100 -> MAX */
	sq.i = 0;
	CHECK_NEAR(backoff_delay(&p, 10, 0), 900);

	/* Bounds over a sweep of r for every function and jitter 25%. */
	double sweep[101];
	for (int i = 0; i <= 100; i++)
		sweep[i] = i / 101.0;
	struct seq sw = { sweep, 101, 0 };
	backoff_fn_t fns[] = { BACKOFF_POSTFIX, BACKOFF_LINEAR,
	    BACKOFF_ARITHMETIC, BACKOFF_GEOMETRIC, BACKOFF_EXPONENTIAL };
	for (size_t f = 0; f < 5; f++) {
		backoff_params_t q = mk(fns[f], 300, 4000, 10);
		q.jitter = 25;
		q.rand = seq_rand;
		q.rand_ctx = &sw;
		for (int n = 1; n <= 12; n++) {
			double age = 250.0 * n;
			backoff_params_t nj = q;
			nj.rand = NULL;		/* no source: no jitter */
			double base = backoff_delay(&nj, n, age);
			for (int i = 0; i < 101; i++) {
				double d = backoff_delay(&q, n, age);
				ATF_CHECK(d >= 300 && d <= 4000);
				ATF_CHECK(d >= base * 0.75 - 1e-9);
				ATF_CHECK(d <= base * 1.25 + 1e-9);
			}
		}
	}
	/* Out-of-range random values are pulled into [0, 1). */
	double bad[] = { -1.0, 7.0, NAN };
	struct seq sb = { bad, 3, 0 };
	p.rand_ctx = &sb;
	CHECK_NEAR(backoff_delay(&p, 5, 0), 450);
	hi = backoff_delay(&p, 5, 0);
	ATF_CHECK(hi <= 550 && hi > 549.99);
	CHECK_NEAR(backoff_delay(&p, 5, 0), 450);
	/* jitter 0 with a source: no change, no draw. */
	p.jitter = 0;
	sb.i = 0;
	CHECK_NEAR(backoff_delay(&p, 5, 0), 500);
	ATF_CHECK_EQ(sb.i, 0);
	CHECK_NEAR(backoff_apply_jitter(&p, 5000), 1000);
	CHECK_NEAR(backoff_apply_jitter(&p, 5), 100);
}

ATF_TC_WITHOUT_HEAD(parse_function);
ATF_TC_BODY(parse_function, tc)
{
	str_t err = STR_INIT;
	backoff_fn_t fn = BACKOFF_LINEAR;
	const char *names[] = { "postfix", "linear", "arithmetic", "geometric", "exponential" };
	for (int i = 0; i < 5; i++) {
		ATF_CHECK(backoff_parse_function(names[i], &fn, &err));
		ATF_CHECK_EQ(fn, (backoff_fn_t)i);
		ATF_CHECK_STREQ(backoff_function_name(fn), names[i]);
	}
	ATF_CHECK(backoff_parse_function("  Geometric\t", &fn, &err));
	ATF_CHECK_EQ(fn, BACKOFF_GEOMETRIC);
	ATF_CHECK(!backoff_parse_function("cubic", &fn, &err));
	ATF_CHECK_EQ(fn, BACKOFF_GEOMETRIC);	/* untouched */
	ATF_CHECK(strstr(str_cstr(&err), "unknown backoff_function \"cubic\"") != NULL);
	ATF_CHECK(strstr(str_cstr(&err), "expected postfix, linear") != NULL);
	ATF_CHECK(!backoff_parse_function("", &fn, &err));
	ATF_CHECK(!backoff_parse_function(NULL, &fn, &err));
	ATF_CHECK(!backoff_parse_function("linearx", &fn, &err));
	ATF_CHECK(!backoff_parse_function("line", &fn, &err));
	ATF_CHECK(!backoff_parse_function("bad\nname", &fn, &err));
	ATF_CHECK(strchr(str_cstr(&err), '\n') == NULL);	/* one line */
	ATF_CHECK(!backoff_parse_function("x", &fn, NULL));	/* err optional */
	ATF_CHECK_STREQ(backoff_function_name((backoff_fn_t)42), "unknown");
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(params_check);
ATF_TC_BODY(params_check, tc)
{
	str_t err = STR_INIT;
	backoff_params_t p;
#define BAD(field, value, word) do { \
		backoff_params_init(&p); \
		p.field = value; \
		str_reset(&err); \
		ATF_CHECK(!backoff_params_check(&p, &err)); \
		ATF_CHECK_MSG(strstr(str_cstr(&err), word) != NULL, "%s", str_cstr(&err)); \
	} while (0)
	BAD(function, (backoff_fn_t)9, "backoff_function");
	BAD(min_time, -1, "minimal_backoff_time");
	BAD(min_time, NAN, "minimal_backoff_time");
	BAD(max_time, 299, "maximal_backoff_time");
	BAD(max_time, INFINITY, "maximal_backoff_time");
	BAD(retry_count, 0, "backoff_retry_count");
	BAD(jitter, -1, "backoff_jitter");
	BAD(jitter, 101, "backoff_jitter");
	BAD(queue_lifetime, -1, "maximal_queue_lifetime");
	BAD(bounce_lifetime, -1, "bounce_queue_lifetime");
	backoff_params_init(&p);
	p.function = BACKOFF_GEOMETRIC;
	p.min_time = 0;
	ATF_CHECK(!backoff_params_check(&p, &err));
	ATF_CHECK(strstr(str_cstr(&err), "> 0") != NULL);
	ATF_CHECK(isfinite(backoff_curve(&p, 3)));	/* no crash, finite */
	p.function = BACKOFF_LINEAR;
	ATF_CHECK(backoff_params_check(&p, &err));	/* 0 is fine for linear */
	ATF_CHECK(backoff_params_check(&p, NULL));
	p.retry_count = 0;
	ATF_CHECK(!backoff_params_check(&p, NULL));
	ATF_CHECK(isfinite(backoff_delay(&p, 3, 0)));
	str_release(&err);
#undef BAD
}

ATF_TC_WITHOUT_HEAD(queue_lifetime);
ATF_TC_BODY(queue_lifetime, tc)
{
	backoff_params_t p;
	backoff_params_init(&p);
	p.queue_lifetime = 5 * 86400;
	p.bounce_lifetime = 86400;
	double t0 = 1000;
	CHECK_NEAR(backoff_lifetime(&p, false), 5 * 86400);
	CHECK_NEAR(backoff_lifetime(&p, true), 86400);
	ATF_CHECK(!backoff_expired(&p, t0, t0, false));
	ATF_CHECK(!backoff_expired(&p, t0, t0 + 86399.5, true));
	ATF_CHECK(backoff_expired(&p, t0, t0 + 86400, true));	/* boundary */
	ATF_CHECK(!backoff_expired(&p, t0, t0 + 86400, false));
	ATF_CHECK(!backoff_expired(&p, t0, t0 + 5 * 86400 - 1, false));
	ATF_CHECK(backoff_expired(&p, t0, t0 + 5 * 86400, false));
	ATF_CHECK(backoff_expired(&p, t0, t0 + 6 * 86400, false));
	/* Lifetime 0: one attempt only, expired right away. */
	p.queue_lifetime = 0;
	ATF_CHECK(backoff_expired(&p, t0, t0, false));
	ATF_CHECK(!backoff_expired(&p, t0, t0, true));
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, defaults);
	ATF_TP_ADD_TC(tp, postfix_function);
	ATF_TP_ADD_TC(tp, linear_function);
	ATF_TP_ADD_TC(tp, arithmetic_function);
	ATF_TP_ADD_TC(tp, geometric_function);
	ATF_TP_ADD_TC(tp, exponential_function);
	ATF_TP_ADD_TC(tp, single_retry);
	ATF_TP_ADD_TC(tp, clamping_and_monotonic);
	ATF_TP_ADD_TC(tp, jitter);
	ATF_TP_ADD_TC(tp, parse_function);
	ATF_TP_ADD_TC(tp, params_check);
	ATF_TP_ADD_TC(tp, queue_lifetime);
	return atf_no_error();
}
