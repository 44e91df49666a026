/* Unit tests for libsched/feedback: the Postfix 2.5 concurrency feedback of
 * doc/scheduling-rules.md §4, followed step by step for the three feedback
 * styles, plus dead destinations, probes, the rate delay and parsing. */
#include <atf-c.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "libsched/feedback.h"
#include "log.h"

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9;
}
#define CHECK_NEAR(a, b) ATF_CHECK_MSG(near((a), (b)), "%s = %.12g, expected %.12g", #a, (double)(a), (double)(b))

static feedback_settings_t mkset(feedback_kind_t pk, double px, feedback_kind_t nk, double nx)
{
	feedback_settings_t s;
	feedback_settings_init(&s);
	s.positive.kind = pk;
	s.positive.x = px;
	s.negative.kind = nk;
	s.negative.x = nx;
	return s;
}

/* Apply n positive events, keeping busy high enough that the safety rule
 * never holds growth back; check the window after each one. */
static void pos_trace(feedback_state_t *st, const feedback_settings_t *s,
    const int *expect, int n)
{
	for (int i = 0; i < n; i++) {
		st->busy = st->window;
		feedback_positive(st, s);
		ATF_CHECK_MSG(st->window == expect[i],
		    "positive event %d: window %d, expected %d", i + 1,
		    st->window, expect[i]);
	}
}

static void neg_trace(feedback_state_t *st, const feedback_settings_t *s,
    const int *expect, int n)
{
	for (int i = 0; i < n; i++) {
		feedback_negative(st, s);
		ATF_CHECK_MSG(st->window == expect[i],
		    "negative event %d: window %d, expected %d", i + 1,
		    st->window, expect[i]);
	}
}

ATF_TC_WITHOUT_HEAD(init_and_defaults);
ATF_TC_BODY(init_and_defaults, tc)
{
	feedback_settings_t s;
	feedback_state_t st;
	str_t err = STR_INIT;

	feedback_settings_init(&s);
	ATF_CHECK_EQ(s.initial_concurrency, 5);
	ATF_CHECK_EQ(s.concurrency_limit, 20);
	CHECK_NEAR(s.failed_cohort_limit, 1);
	ATF_CHECK(s.positive.kind == FEEDBACK_KIND_CONSTANT && s.positive.x == 1);
	ATF_CHECK(s.negative.kind == FEEDBACK_KIND_CONSTANT && s.negative.x == 1);
	ATF_CHECK_EQ(s.rate_delay, 0);
	ATF_CHECK(!s.debug);
	ATF_CHECK(feedback_settings_check(&s, &err));

	feedback_init(&st, &s, "smtp:example.com");
	ATF_CHECK_EQ(st.window, 5);
	ATF_CHECK_EQ(st.busy, 0);
	ATF_CHECK(st.success == 0 && st.failure == 0 && st.fail_cohorts == 0);
	ATF_CHECK(!st.dead && !st.probing);
	ATF_CHECK_STREQ(st.name, "smtp:example.com");

	/* The initial window never exceeds the limit... */
	s.concurrency_limit = 3;
	feedback_init(&st, &s, NULL);
	ATF_CHECK_EQ(st.window, 3);
	/* ...except that 0 means no limit. */
	s.concurrency_limit = 0;
	s.initial_concurrency = 50;
	feedback_init(&st, &s, NULL);
	ATF_CHECK_EQ(st.window, 50);
	str_release(&err);
}

/* Constant 1 (Postfix's default): +1 per success, -1 per failure. */
ATF_TC_WITHOUT_HEAD(constant_one);
ATF_TC_BODY(constant_one, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_CONSTANT, 1, FEEDBACK_KIND_CONSTANT, 1);
	feedback_state_t st;
	s.failed_cohort_limit = 100;	/* study the window, not death */
	feedback_init(&st, &s, NULL);
	int up[17];
	for (int i = 0; i < 17; i++)
		up[i] = 6 + i > 20 ? 20 : 6 + i;	/* 6..20, then clamped */
	pos_trace(&st, &s, up, 17);
	int down[21];
	for (int i = 0; i < 21; i++)
		down[i] = 19 - i < 1 ? 1 : 19 - i;	/* 19..1, then clamped */
	neg_trace(&st, &s, down, 21);
}

/* 1/concurrency: growth at the END of a run of N positive events (N the
 * window); the run from 6 needs six events although 6 x 1/6 adds up to
 * 0.9999999999999999 in floating point. */
ATF_TC_WITHOUT_HEAD(positive_inverse);
ATF_TC_BODY(positive_inverse, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_INVERSE, 1, FEEDBACK_KIND_CONSTANT, 1);
	feedback_state_t st;
	feedback_init(&st, &s, NULL);
	int expect[] = { 5, 5, 5, 5, 6,  6, 6, 6, 6, 6, 7,  7, 7, 7, 7, 7, 7, 8 };
	pos_trace(&st, &s, expect, 18);
	CHECK_NEAR(st.success, 0);
	st.busy = 8;
	feedback_positive(&st, &s);
	CHECK_NEAR(st.success, 1.0 / 8);
	for (int i = 0; i < 300; i++) {
		st.busy = st.window;
		feedback_positive(&st, &s);
	}
	ATF_CHECK_EQ(st.window, 20);	/* clamped at the limit */
}

/* x/sqrt_concurrency: g(4) = 0.5, g(5) = 0.447, g(6) = 0.408; the
 * remainder of success carries over into the next window. */
ATF_TC_WITHOUT_HEAD(positive_inverse_sqrt);
ATF_TC_BODY(positive_inverse_sqrt, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_INVERSE_SQRT, 1, FEEDBACK_KIND_CONSTANT, 1);
	feedback_state_t st;
	s.initial_concurrency = 4;
	feedback_init(&st, &s, NULL);
	int expect[] = { 4, 5, 5, 5, 6, 6, 7 };
	pos_trace(&st, &s, expect, 7);
	/* 3/sqrt(5) - 1 + 2/sqrt(6) - 1 left over. */
	CHECK_NEAR(st.success, 3 / sqrt(5) - 1 + 2 / sqrt(6) - 1);

	/* 0.5/sqrt_concurrency halves it: at 4, g = 0.25, four events. */
	s.positive.x = 0.5;
	feedback_init(&st, &s, NULL);
	int half[] = { 4, 4, 4, 5 };
	pos_trace(&st, &s, half, 4);
}

/* A constant below 1: growth after 1/x events. */
ATF_TC_WITHOUT_HEAD(positive_constant_fraction);
ATF_TC_BODY(positive_constant_fraction, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_CONSTANT, 0.25, FEEDBACK_KIND_CONSTANT, 1);
	feedback_state_t st;
	feedback_init(&st, &s, NULL);
	int expect[] = { 5, 5, 5, 6, 6, 6, 6, 7 };
	pos_trace(&st, &s, expect, 8);
	/* x = 0: never grows. */
	s.positive.x = 0;
	feedback_init(&st, &s, NULL);
	int flat[] = { 5, 5, 5, 5, 5 };
	pos_trace(&st, &s, flat, 5);
}

/* Negative 1/concurrency: the window drops at the START of a run (the
 * first failure), then the run continues with f of the smaller window. */
ATF_TC_WITHOUT_HEAD(negative_inverse);
ATF_TC_BODY(negative_inverse, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_CONSTANT, 1, FEEDBACK_KIND_INVERSE, 1);
	feedback_state_t st;
	s.failed_cohort_limit = 100;
	s.initial_concurrency = 4;
	feedback_init(&st, &s, NULL);
	/* failure: -1/4 -> 3 (0.75); -1/3 0.4167; -1/3 0.0833;
	 * -1/3 < 0 -> 2 (0.75); -1/2 0.25; -1/2 < 0 -> 1 (0.75); -1 -> 0,
	 * clamped to 1. */
	int expect[] = { 3, 3, 3, 2, 2, 1, 1 };
	neg_trace(&st, &s, expect, 7);
	CHECK_NEAR(st.failure, 0.75);
	ATF_CHECK(!st.dead);
}

/* Negative constant 0.5: back off at the start of each run of 2. */
ATF_TC_WITHOUT_HEAD(negative_constant_fraction);
ATF_TC_BODY(negative_constant_fraction, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_CONSTANT, 1, FEEDBACK_KIND_CONSTANT, 0.5);
	feedback_state_t st;
	s.failed_cohort_limit = 100;
	s.initial_concurrency = 4;
	feedback_init(&st, &s, NULL);
	int expect[] = { 3, 3, 2, 2, 1, 1, 1 };
	neg_trace(&st, &s, expect, 7);
}

/* Negative x/sqrt_concurrency: f(9) = 1/3: the first failure backs off
 * to 8 leaving failure 2/3; f(8) = 0.354: 0.313, then < 0 -> 7. */
ATF_TC_WITHOUT_HEAD(negative_inverse_sqrt);
ATF_TC_BODY(negative_inverse_sqrt, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_CONSTANT, 1, FEEDBACK_KIND_INVERSE_SQRT, 1);
	feedback_state_t st;
	s.failed_cohort_limit = 100;
	s.initial_concurrency = 9;
	feedback_init(&st, &s, NULL);
	int expect[] = { 8, 8, 7 };
	neg_trace(&st, &s, expect, 3);
	CHECK_NEAR(st.failure, 2.0 / 3 - 2 / sqrt(8) + 1);
}

/* Growth resets failure, backing off resets success. */
ATF_TC_WITHOUT_HEAD(accumulator_resets);
ATF_TC_BODY(accumulator_resets, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_INVERSE, 1, FEEDBACK_KIND_CONSTANT, 0.5);
	feedback_state_t st;
	s.failed_cohort_limit = 100;
	feedback_init(&st, &s, NULL);
	st.busy = 5;
	feedback_positive(&st, &s);
	feedback_positive(&st, &s);
	feedback_positive(&st, &s);
	CHECK_NEAR(st.success, 0.6);
	feedback_negative(&st, &s);		/* 5 -> 4, success dropped */
	ATF_CHECK_EQ(st.window, 4);
	CHECK_NEAR(st.success, 0);
	CHECK_NEAR(st.failure, 0.5);
	/* At window 4, four positive events are needed again (not two). */
	int expect[] = { 4, 4, 4, 5 };
	pos_trace(&st, &s, expect, 4);
	CHECK_NEAR(st.failure, 0);	/* growth cleared the failure half */
	/* So the next failure backs off at once. */
	feedback_negative(&st, &s);
	ATF_CHECK_EQ(st.window, 4);
	/* A failure that does not complete a step leaves success alone. */
	st.busy = 4;
	feedback_positive(&st, &s);
	CHECK_NEAR(st.success, 0.25);
	feedback_negative(&st, &s);		/* failure 0.5 -> 0: no step */
	ATF_CHECK_EQ(st.window, 4);
	CHECK_NEAR(st.success, 0.25);
}

/* Safety rule: grow only while window < busy + initial. */
ATF_TC_WITHOUT_HEAD(safety_rule);
ATF_TC_BODY(safety_rule, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_CONSTANT, 1, FEEDBACK_KIND_CONSTANT, 1);
	feedback_state_t st;
	feedback_init(&st, &s, NULL);
	st.busy = 0;			/* 5 < 0 + 5 is false */
	ATF_CHECK_EQ(feedback_positive(&st, &s), 0);
	ATF_CHECK_EQ(st.window, 5);
	CHECK_NEAR(st.success, 0);	/* not even accumulated */
	st.busy = 1;			/* 5 < 6 */
	ATF_CHECK_EQ(feedback_positive(&st, &s), FEEDBACK_GREW);
	ATF_CHECK_EQ(st.window, 6);
	ATF_CHECK_EQ(feedback_positive(&st, &s), 0);	/* 6 < 6 is false */
	ATF_CHECK_EQ(st.window, 6);
	st.busy = 2;
	feedback_positive(&st, &s);
	ATF_CHECK_EQ(st.window, 7);

	/* feedback_delivery_done applies feedback while the finished delivery
	 * still counts as busy: 5 < 1 + 5, so it grows. */
	feedback_init(&st, &s, NULL);
	feedback_delivery_start(&st, &s, 0);
	ATF_CHECK_EQ(feedback_delivery_done(&st, &s, 1, FEEDBACK_POSITIVE), FEEDBACK_GREW);
	ATF_CHECK_EQ(st.window, 6);
	ATF_CHECK_EQ(st.busy, 0);

	/* The held-back success still resets fail_cohorts. */
	feedback_init(&st, &s, NULL);
	feedback_negative(&st, &s);
	ATF_CHECK(st.fail_cohorts > 0);
	st.busy = 0;
	feedback_positive(&st, &s);
	CHECK_NEAR(st.fail_cohorts, 0);
}

/* Clamping at the limit and at 1. */
ATF_TC_WITHOUT_HEAD(clamping);
ATF_TC_BODY(clamping, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_CONSTANT, 1, FEEDBACK_KIND_CONSTANT, 1);
	feedback_state_t st;
	s.concurrency_limit = 7;
	s.failed_cohort_limit = 100;
	feedback_init(&st, &s, NULL);
	int up[] = { 6, 7, 7, 7 };
	pos_trace(&st, &s, up, 4);
	st.busy = 7;
	ATF_CHECK_EQ(feedback_positive(&st, &s), 0);	/* no FEEDBACK_GREW at the limit */
	int down[] = { 6, 5, 4, 3, 2, 1, 1, 1 };
	neg_trace(&st, &s, down, 8);
	/* No limit (0): keeps growing. */
	s.concurrency_limit = 0;
	feedback_init(&st, &s, NULL);
	for (int i = 0; i < 100; i++) {
		st.busy = st.window;
		feedback_positive(&st, &s);
	}
	ATF_CHECK_EQ(st.window, 105);
}

/* Dead after the failed-cohort limit; with the defaults (window 5,
 * constant 1): fail_cohorts 1/5, +1/4, +1/3 = 0.783, +1/2 = 1.283 > 1. */
ATF_TC_WITHOUT_HEAD(dead_after_cohort_limit);
ATF_TC_BODY(dead_after_cohort_limit, tc)
{
	feedback_settings_t s;
	feedback_state_t st;
	feedback_settings_init(&s);
	feedback_init(&st, &s, NULL);
	ATF_CHECK_EQ(feedback_negative(&st, &s), FEEDBACK_SHRANK);
	ATF_CHECK_EQ(feedback_negative(&st, &s), FEEDBACK_SHRANK);
	ATF_CHECK_EQ(feedback_negative(&st, &s), FEEDBACK_SHRANK);
	ATF_CHECK_EQ(st.window, 2);
	CHECK_NEAR(st.fail_cohorts, 1.0 / 5 + 1.0 / 4 + 1.0 / 3);
	ATF_CHECK(!st.dead);
	ATF_CHECK_EQ(feedback_negative(&st, &s), FEEDBACK_DEAD);
	ATF_CHECK_EQ(st.window, 0);
	ATF_CHECK(st.dead);
	ATF_CHECK_EQ(feedback_effective_window(&st, &s), 0);
	ATF_CHECK(!feedback_can_start(&st, &s, 0));
	/* More failures on a dead queue change nothing. */
	ATF_CHECK_EQ(feedback_negative(&st, &s), 0);
	ATF_CHECK_EQ(st.window, 0);

	/* With 1/concurrency negative feedback the window stays at 4, so
	 * five cohort fractions: 0.2 + 4 x 0.25 = 1.2 > 1 on the 5th. */
	s.negative.kind = FEEDBACK_KIND_INVERSE;
	feedback_init(&st, &s, NULL);
	int expect[] = { 4, 4, 4, 4, 0 };
	neg_trace(&st, &s, expect, 5);
	ATF_CHECK(st.dead);

	/* Exactly one cohort (5 x 1/5 with negative feedback 0) is not more
	 * than the limit 1; the 6th failure is. */
	s.negative.kind = FEEDBACK_KIND_CONSTANT;
	s.negative.x = 0;
	feedback_init(&st, &s, NULL);
	int flat[] = { 5, 5, 5, 5, 5, 0 };
	neg_trace(&st, &s, flat, 6);
	ATF_CHECK(st.dead);

	/* A higher limit takes longer. */
	s.failed_cohort_limit = 2;
	feedback_init(&st, &s, NULL);
	int longer[] = { 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0 };
	neg_trace(&st, &s, longer, 11);
}

/* A success resets fail_cohorts, so only consecutive failures kill. */
ATF_TC_WITHOUT_HEAD(success_resets_cohorts);
ATF_TC_BODY(success_resets_cohorts, tc)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_CONSTANT, 1, FEEDBACK_KIND_CONSTANT, 0);
	feedback_state_t st;
	feedback_init(&st, &s, NULL);
	for (int i = 0; i < 4; i++)
		feedback_negative(&st, &s);
	CHECK_NEAR(st.fail_cohorts, 0.8);
	st.busy = 0;			/* held back by the safety rule... */
	feedback_positive(&st, &s);
	CHECK_NEAR(st.fail_cohorts, 0);	/* ...still resets */
	for (int i = 0; i < 5; i++)
		ATF_CHECK_EQ(feedback_negative(&st, &s), 0);
	ATF_CHECK(!st.dead);		/* without the reset: dead at the 2nd */
	ATF_CHECK_EQ(feedback_negative(&st, &s), FEEDBACK_DEAD);
}

/* Half-open probing after death, and revival. */
ATF_TC_WITHOUT_HEAD(probe_and_revive);
ATF_TC_BODY(probe_and_revive, tc)
{
	feedback_settings_t s;
	feedback_state_t st;
	feedback_settings_init(&s);
	feedback_init(&st, &s, NULL);
	feedback_kill(&st, &s);
	ATF_CHECK(st.dead && st.window == 0);
	ATF_CHECK(!feedback_can_start(&st, &s, 0));

	feedback_probe_start(&st, &s);
	ATF_CHECK(!st.dead && st.probing);
	ATF_CHECK_EQ(st.window, 1);
	ATF_CHECK(feedback_can_start(&st, &s, 0));
	feedback_delivery_start(&st, &s, 0);
	ATF_CHECK(!feedback_can_start(&st, &s, 0));	/* only one probe */
	/* The probe fails: dead again at once (one failure at window 1 is
	 * only one cohort, which alone would not exceed the limit). */
	ATF_CHECK_EQ(feedback_delivery_done(&st, &s, 1, FEEDBACK_NEGATIVE), FEEDBACK_DEAD);
	ATF_CHECK(st.dead && !st.probing && st.window == 0);
	ATF_CHECK_EQ(st.busy, 0);

	feedback_probe_start(&st, &s);
	feedback_delivery_start(&st, &s, 2);
	ATF_CHECK_EQ(feedback_delivery_done(&st, &s, 3, FEEDBACK_POSITIVE), FEEDBACK_REVIVED);
	ATF_CHECK(!st.dead && !st.probing);
	ATF_CHECK_EQ(st.window, 5);		/* initial concurrency */
	ATF_CHECK(st.success == 0 && st.failure == 0 && st.fail_cohorts == 0);

	/* A straggler success on a dead (not probing) queue revives too. */
	feedback_kill(&st, &s);
	ATF_CHECK_EQ(feedback_positive(&st, &s), FEEDBACK_REVIVED);
	ATF_CHECK_EQ(st.window, 5);
}

/* destination_rate_delay: concurrency 1 and one start per interval. */
ATF_TC_WITHOUT_HEAD(rate_delay);
ATF_TC_BODY(rate_delay, tc)
{
	feedback_settings_t s;
	feedback_state_t st;
	feedback_settings_init(&s);
	feedback_init(&st, &s, NULL);
	/* Without a rate delay: window 5, no time limit. */
	ATF_CHECK(isinf(feedback_next_start_time(&st, &s)) && feedback_next_start_time(&st, &s) < 0);
	for (int i = 0; i < 5; i++) {
		ATF_CHECK(feedback_can_start(&st, &s, 0));
		feedback_delivery_start(&st, &s, 0);
	}
	ATF_CHECK(!feedback_can_start(&st, &s, 0));
	ATF_CHECK(feedback_next_start_time(&st, &s) < 0);

	s.rate_delay = 10;
	feedback_init(&st, &s, NULL);
	ATF_CHECK_EQ(feedback_effective_window(&st, &s), 1);
	ATF_CHECK(feedback_next_start_time(&st, &s) < 0);	/* never started */
	ATF_CHECK(feedback_can_start(&st, &s, 100));
	feedback_delivery_start(&st, &s, 100);
	CHECK_NEAR(feedback_next_start_time(&st, &s), 110);
	ATF_CHECK(!feedback_can_start(&st, &s, 100));		/* busy */
	feedback_delivery_done(&st, &s, 103, FEEDBACK_POSITIVE);
	ATF_CHECK(!feedback_can_start(&st, &s, 103));		/* too early */
	ATF_CHECK(!feedback_can_start(&st, &s, 109.999));
	ATF_CHECK(feedback_can_start(&st, &s, 110));
	ATF_CHECK(feedback_can_start(&st, &s, 500));
	/* A delivery longer than the interval: the next waits for it. */
	feedback_delivery_start(&st, &s, 110);
	ATF_CHECK(!feedback_can_start(&st, &s, 130));
	feedback_delivery_done(&st, &s, 130, FEEDBACK_POSITIVE);
	ATF_CHECK(feedback_can_start(&st, &s, 130));
	/* The window still evolves underneath (for when the delay is
	 * removed), but the effective concurrency stays 1. */
	ATF_CHECK(st.window > 1);
	ATF_CHECK_EQ(feedback_effective_window(&st, &s), 1);
	feedback_kill(&st, &s);
	ATF_CHECK_EQ(feedback_effective_window(&st, &s), 0);
	ATF_CHECK(!feedback_can_start(&st, &s, 1000));
}

ATF_TC_WITHOUT_HEAD(delivery_done_outcomes);
ATF_TC_BODY(delivery_done_outcomes, tc)
{
	feedback_settings_t s;
	feedback_state_t st;
	feedback_settings_init(&s);
	feedback_init(&st, &s, NULL);
	feedback_delivery_start(&st, &s, 0);
	feedback_delivery_start(&st, &s, 0);
	ATF_CHECK_EQ(st.busy, 2);
	ATF_CHECK_EQ(feedback_delivery_done(&st, &s, 1, FEEDBACK_NONE), 0);
	ATF_CHECK_EQ(st.busy, 1);
	ATF_CHECK_EQ(st.window, 5);
	ATF_CHECK_EQ(feedback_delivery_done(&st, &s, 1, FEEDBACK_NEGATIVE), FEEDBACK_SHRANK);
	ATF_CHECK_EQ(st.window, 4);
	ATF_CHECK_EQ(st.busy, 0);
	feedback_delivery_done(&st, &s, 1, FEEDBACK_NONE);	/* unmatched: stays 0 */
	ATF_CHECK_EQ(st.busy, 0);
}

/* Long mixed run: invariants hold whatever the order. */
ATF_TC_WITHOUT_HEAD(invariants);
ATF_TC_BODY(invariants, tc)
{
	feedback_kind_t kinds[] = { FEEDBACK_KIND_CONSTANT, FEEDBACK_KIND_INVERSE, FEEDBACK_KIND_INVERSE_SQRT };
	unsigned seed = 12345;
	for (int k = 0; k < 3; k++) {
		feedback_settings_t s = mkset(kinds[k], 1, kinds[k], 1);
		feedback_state_t st;
		s.failed_cohort_limit = 3;
		feedback_init(&st, &s, NULL);
		for (int i = 0; i < 20000; i++) {
			seed = seed * 1103515245u + 12345u;
			st.busy = (int)((seed >> 8) % 25);
			if ((seed >> 20) % 4 == 0)
				feedback_negative(&st, &s);
			else
				feedback_positive(&st, &s);
			if (st.dead) {
				ATF_CHECK_EQ(st.window, 0);
				feedback_positive(&st, &s);	/* revive and go on */
			}
			ATF_REQUIRE(st.window >= 1 && st.window <= 20);
			ATF_REQUIRE(st.success > -1e-6 && st.success < 1);
			ATF_REQUIRE(st.failure > -1e-6 && st.failure < 1);
		}
	}
}

ATF_TC_WITHOUT_HEAD(parse);
ATF_TC_BODY(parse, tc)
{
	str_t err = STR_INIT, fmt = STR_INIT;
	feedback_func_t fn;
	static const struct { const char *in; feedback_kind_t kind; double x; const char *canon; } ok[] = {
		{ "1", FEEDBACK_KIND_CONSTANT, 1, "1" },
		{ "0", FEEDBACK_KIND_CONSTANT, 0, "0" },
		{ "0.25", FEEDBACK_KIND_CONSTANT, 0.25, "0.25" },
		{ ".5", FEEDBACK_KIND_CONSTANT, 0.5, "0.5" },
		{ "1/concurrency", FEEDBACK_KIND_INVERSE, 1, "1/concurrency" },
		{ " 1 / concurrency ", FEEDBACK_KIND_INVERSE, 1, "1/concurrency" },
		{ "0.5/Concurrency", FEEDBACK_KIND_INVERSE, 0.5, "0.5/concurrency" },
		{ "1/sqrt_concurrency", FEEDBACK_KIND_INVERSE_SQRT, 1, "1/sqrt_concurrency" },
		{ "1.0/SQRT_CONCURRENCY", FEEDBACK_KIND_INVERSE_SQRT, 1, "1/sqrt_concurrency" },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ATF_CHECK_MSG(feedback_func_parse(ok[i].in, "p", &fn, &err), "%s: %s", ok[i].in, str_cstr(&err));
		ATF_CHECK_EQ(fn.kind, ok[i].kind);
		CHECK_NEAR(fn.x, ok[i].x);
		ATF_CHECK_STREQ(feedback_func_format(&fn, &fmt), ok[i].canon);
	}
	static const char *bad[] = { "", "   ", "2", "1.5", "-1", "1/", "/concurrency",
	    "1/conc", "1/concurrency x", "inf", "nan", "0x1", "1e0", "1..0",
	    "1 concurrency", "1/sqrt", "abc", "1/sqrt_concurrencyy" };
	fn.kind = FEEDBACK_KIND_INVERSE;
	fn.x = 0.125;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		str_reset(&err);
		ATF_CHECK_MSG(!feedback_func_parse(bad[i], "smtp_destination_concurrency_positive_feedback", &fn, &err), "accepted %s", bad[i]);
		ATF_CHECK(strstr(str_cstr(&err), "smtp_destination_concurrency_positive_feedback: invalid feedback value") == str_cstr(&err));
	}
	ATF_CHECK(fn.kind == FEEDBACK_KIND_INVERSE && fn.x == 0.125);	/* untouched */
	ATF_CHECK(!feedback_func_parse("1.5/concurrency", NULL, &fn, &err));
	ATF_CHECK(strstr(str_cstr(&err), "[0, 1]") != NULL);
	ATF_CHECK(strncmp(str_cstr(&err), "invalid", 7) == 0);	/* no param */
	ATF_CHECK(!feedback_func_parse(NULL, NULL, &fn, NULL));

	/* Evaluation. */
	fn.kind = FEEDBACK_KIND_INVERSE; fn.x = 1;
	CHECK_NEAR(feedback_func_eval(&fn, 4), 0.25);
	CHECK_NEAR(feedback_func_eval(&fn, 0), 1);	/* N < 1 as 1 */
	fn.kind = FEEDBACK_KIND_INVERSE_SQRT; fn.x = 0.5;
	CHECK_NEAR(feedback_func_eval(&fn, 16), 0.125);
	fn.kind = FEEDBACK_KIND_CONSTANT; fn.x = 0.3;
	CHECK_NEAR(feedback_func_eval(&fn, 16), 0.3);
	str_release(&err);
	str_release(&fmt);
}

ATF_TC_WITHOUT_HEAD(settings_check);
ATF_TC_BODY(settings_check, tc)
{
	str_t err = STR_INIT;
	feedback_settings_t s;
#define BAD(stmt, word) do { \
		feedback_settings_init(&s); \
		stmt; \
		str_reset(&err); \
		ATF_CHECK(!feedback_settings_check(&s, &err)); \
		ATF_CHECK_MSG(strstr(str_cstr(&err), word) != NULL, "%s", str_cstr(&err)); \
	} while (0)
	BAD(s.initial_concurrency = 0, "initial_destination_concurrency");
	BAD(s.concurrency_limit = -1, "destination_concurrency_limit");
	BAD(s.failed_cohort_limit = -0.5, "failed_cohort_limit");
	BAD(s.failed_cohort_limit = NAN, "failed_cohort_limit");
	BAD(s.positive.x = 1.5, "positive_feedback");
	BAD(s.negative.kind = (feedback_kind_t)7, "negative_feedback");
	BAD(s.rate_delay = -1, "destination_rate_delay");
#undef BAD
	feedback_settings_init(&s);
	s.concurrency_limit = 0;
	ATF_CHECK(feedback_settings_check(&s, NULL));
	str_release(&err);
}

/* destination_concurrency_feedback_debug: one readable line per event. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[8192];
	size_t n = 0;
	if (f == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

ATF_TC_WITHOUT_HEAD(debug_log);
ATF_TC_BODY(debug_log, tc)
{
	feedback_settings_t s;
	feedback_state_t st;
	log_init("petrel/qmgr");
	ATF_REQUIRE(log_to_file("fb.log") == 0);
	feedback_settings_init(&s);
	feedback_init(&st, &s, "smtp:example.com");
	st.busy = 3;
	feedback_positive(&st, &s);			/* debug off: nothing */
	s.debug = true;
	feedback_positive(&st, &s);
	feedback_negative(&st, &s);
	for (int i = 0; i < 4; i++)	/* 6, 5, 4, 3, then dead */
		feedback_negative(&st, &s);
	log_to_stderr();
	char *text = slurp("fb.log");
	ATF_REQUIRE(text != NULL);
	ATF_CHECK_MSG(strstr(text, "feedback: smtp:example.com positive: window 6->7 busy 3 "
	    "success 0.000 failure 0.000 fail_cohorts 0.000\n") != NULL, "%s", text);
	ATF_CHECK(strstr(text, "5->6") == NULL);	/* the non-debug event */
	ATF_CHECK(strstr(text, "feedback: smtp:example.com negative: window 7->6 busy 3 "
	    "success 0.000 failure 0.000 fail_cohorts 0.143\n") != NULL);
	ATF_CHECK(strstr(text, "negative: window 3->0 busy 3 success 0.000 failure 0.000 fail_cohorts 1.093 dead\n") != NULL);
	int lines = 0;
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	ATF_CHECK_EQ(lines, 6);
}


/* ---- learn mode (doc/scheduler-feedback.md section 2a) ---- */

static feedback_settings_t learnset(void)
{
	feedback_settings_t s = mkset(FEEDBACK_KIND_INVERSE, 1, FEEDBACK_KIND_INVERSE, 1);
	s.mode = FEEDBACK_MODE_LEARN;
	return s;
}

/* A ticket as feedback_delivery_start would have given it, for events whose
 * concurrency a test wants to choose. */
static feedback_ticket_t ticket(const feedback_state_t *st, int conc)
{
	feedback_ticket_t tk = { .conc = conc, .probe = false, .negatives = st->negatives };
	return tk;
}

ATF_TC_WITHOUT_HEAD(learn_mode_parse);
ATF_TC_BODY(learn_mode_parse, tc)
{
	feedback_mode_t m = FEEDBACK_MODE_LEARN;
	feedback_settings_t s;
	str_t err = STR_INIT;

	feedback_settings_init(&s);
	ATF_CHECK_EQ(s.mode, FEEDBACK_MODE_POSTFIX);
	ATF_CHECK(feedback_mode_parse("postfix", NULL, &m, NULL));
	ATF_CHECK_EQ(m, FEEDBACK_MODE_POSTFIX);
	ATF_CHECK(feedback_mode_parse(" LEARN ", NULL, &m, NULL));
	ATF_CHECK_EQ(m, FEEDBACK_MODE_LEARN);
	ATF_CHECK(!feedback_mode_parse("learned", "smtp_destination_concurrency_feedback_mode", &m, &err));
	ATF_CHECK_EQ(m, FEEDBACK_MODE_LEARN);
	ATF_CHECK_STREQ(str_cstr(&err), "smtp_destination_concurrency_feedback_mode: "
	    "unknown feedback mode \"learned\": expected postfix or learn");
	ATF_CHECK(!feedback_mode_parse("", NULL, &m, &err));
	ATF_CHECK(!feedback_mode_parse(NULL, NULL, &m, NULL));
	ATF_CHECK_STREQ(feedback_mode_name(FEEDBACK_MODE_LEARN), "learn");
	ATF_CHECK_STREQ(feedback_mode_name(FEEDBACK_MODE_POSTFIX), "postfix");
	s.mode = (feedback_mode_t)5;
	ATF_CHECK(!feedback_settings_check(&s, &err));
	ATF_CHECK(strstr(str_cstr(&err), "destination_concurrency_feedback_mode") != NULL);
	str_release(&err);
}

/* No refusal, nothing learned: the window is Postfix's, event for event. */
ATF_TC_WITHOUT_HEAD(learn_without_refusals_is_postfix);
ATF_TC_BODY(learn_without_refusals_is_postfix, tc)
{
	feedback_settings_t sp = mkset(FEEDBACK_KIND_INVERSE, 1, FEEDBACK_KIND_INVERSE, 1);
	feedback_settings_t sl = learnset();
	feedback_state_t p, l;
	double now = 0;

	feedback_init(&p, &sp, NULL);
	feedback_init(&l, &sl, NULL);
	for (int i = 0; i < 300; i++) {
		feedback_ticket_t tl;
		now += 0.5;
		/* keep the window full, then end one delivery */
		while (p.busy < p.window)
			feedback_delivery_start(&p, &sp, now);
		while (l.busy < l.window)
			feedback_delivery_start(&l, &sl, now);
		tl = ticket(&l, l.busy);
		int fp = feedback_delivery_done(&p, &sp, now, FEEDBACK_POSITIVE);
		int fl = feedback_delivery_end(&l, &sl, now, FEEDBACK_POSITIVE, &tl);
		ATF_REQUIRE_EQ_MSG(p.window, l.window, "event %d", i);
		ATF_CHECK_EQ(fp, fl);
	}
	ATF_CHECK_EQ(l.window, FEEDBACK_DEF_CONCURRENCY_LIMIT);
	ATF_CHECK_EQ(l.ceiling, 0);
}

/* A server that takes 5 sessions: the refusal at concurrency 6 teaches
 * 5, growth stops there, probes come 1 s later and then less often. */
ATF_TC_WITHOUT_HEAD(learn_ceiling_and_probes);
ATF_TC_BODY(learn_ceiling_and_probes, tc)
{
	feedback_settings_t s = learnset();
	feedback_state_t st;
	feedback_ticket_t tk[8];
	int f;

	s.initial_concurrency = 8;
	feedback_init(&st, &s, NULL);
	ATF_REQUIRE_EQ(st.window, 8);
	for (int i = 0; i < 8; i++) {
		tk[i] = feedback_delivery_start(&st, &s, 0);
		ATF_CHECK_EQ(tk[i].conc, i + 1);
		ATF_CHECK(!tk[i].probe);
	}
	/* 6, 7 and 8 are refused; the one at 6 says the limit is 5 */
	f = feedback_delivery_end(&st, &s, 0.3, FEEDBACK_NEGATIVE, &tk[5]);
	ATF_CHECK_EQ(f, FEEDBACK_SHRANK);
	ATF_CHECK_EQ(st.ceiling, 5);
	ATF_CHECK_EQ(st.window, 5);
	feedback_delivery_end(&st, &s, 0.3, FEEDBACK_NEGATIVE, &tk[7]);
	feedback_delivery_end(&st, &s, 0.3, FEEDBACK_NEGATIVE, &tk[6]);
	ATF_CHECK_EQ(st.ceiling, 5);		/* later, higher: no rise */
	ATF_CHECK_EQ(st.window, 5);
	ATF_CHECK_EQ(st.probe_state, FEEDBACK_PROBE_IDLE);
	CHECK_NEAR(st.next_probe, 1.3);
	/* the five sessions end at t = 2: the probe time has come, the
	 * window opens one above the ceiling */
	f = feedback_delivery_end(&st, &s, 2, FEEDBACK_POSITIVE, &tk[0]);
	ATF_CHECK_EQ(f, FEEDBACK_GREW);
	ATF_CHECK_EQ(st.probe_state, FEEDBACK_PROBE_READY);
	ATF_CHECK_EQ(st.window, 6);
	for (int i = 1; i < 5; i++)
		feedback_delivery_end(&st, &s, 2, FEEDBACK_POSITIVE, &tk[i]);
	ATF_CHECK_EQ(st.window, 6);		/* held, however many successes */
	ATF_CHECK_EQ(st.busy, 0);
	/* six start: the sixth is the probe, and the window closes again */
	for (int i = 0; i < 6; i++)
		tk[i] = feedback_delivery_start(&st, &s, 2);
	ATF_CHECK(!tk[4].probe);
	ATF_CHECK(tk[5].probe);
	ATF_CHECK_EQ(st.probe_state, FEEDBACK_PROBE_OUT);
	ATF_CHECK_EQ(st.window, 5);
	ATF_CHECK(!feedback_can_start(&st, &s, 2));
	/* refused: the ceiling stays, the next probe in 2 s */
	feedback_delivery_end(&st, &s, 2.3, FEEDBACK_NEGATIVE, &tk[5]);
	ATF_CHECK_EQ(st.ceiling, 5);
	ATF_CHECK_EQ(st.window, 5);
	ATF_CHECK_EQ(st.probe_state, FEEDBACK_PROBE_IDLE);
	CHECK_NEAR(st.probe_interval, 2);
	CHECK_NEAR(st.next_probe, 4.3);
	ATF_CHECK(!st.dead);
	feedback_delivery_end(&st, &s, 4, FEEDBACK_POSITIVE, &tk[0]);
	ATF_CHECK_EQ(st.window, 5);		/* 4 < 4.3: not yet */
	feedback_delivery_end(&st, &s, 4.5, FEEDBACK_POSITIVE, &tk[1]);
	ATF_CHECK_EQ(st.window, 6);
	/* failed probes back off to FEEDBACK_LEARN_PROBE_MAX */
	for (int i = 0; i < 10; i++) {
		feedback_ticket_t p;
		st.probe_state = FEEDBACK_PROBE_READY;
		st.busy = 5;
		p = feedback_delivery_start(&st, &s, 10);
		ATF_REQUIRE(p.probe);
		feedback_delivery_end(&st, &s, 10, FEEDBACK_NEGATIVE, &p);
		st.fail_cohorts = 0;	/* as sessions' successes would */
	}
	CHECK_NEAR(st.probe_interval, FEEDBACK_LEARN_PROBE_MAX);
	CHECK_NEAR(st.next_probe, 10 + FEEDBACK_LEARN_PROBE_MAX);
	ATF_CHECK_EQ(st.ceiling, 5);
}

/* A successful probe raises the ceiling and opens the next probe at once
 * (the limit may be rising); a probe that succeeds while another delivery
 * was refused proves nothing. */
ATF_TC_WITHOUT_HEAD(learn_probe_success);
ATF_TC_BODY(learn_probe_success, tc)
{
	feedback_settings_t s = learnset();
	feedback_state_t st;
	feedback_ticket_t t, p, other;

	feedback_init(&st, &s, NULL);
	st.busy = 5;
	t = ticket(&st, 5);
	feedback_delivery_end(&st, &s, 0, FEEDBACK_NEGATIVE, &t);	/* limit 4 */
	ATF_CHECK_EQ(st.ceiling, 4);
	st.busy = 4;
	t = ticket(&st, 4);
	feedback_delivery_end(&st, &s, 5, FEEDBACK_POSITIVE, &t);
	ATF_REQUIRE_EQ(st.probe_state, FEEDBACK_PROBE_READY);
	ATF_CHECK_EQ(st.window, 5);
	st.busy = 4;
	p = feedback_delivery_start(&st, &s, 5);
	ATF_REQUIRE(p.probe);
	ATF_CHECK_EQ(p.conc, 5);
	feedback_delivery_end(&st, &s, 7, FEEDBACK_POSITIVE, &p);
	ATF_CHECK_EQ(st.ceiling, 5);
	ATF_CHECK_EQ(st.probe_state, FEEDBACK_PROBE_READY);	/* at once */
	ATF_CHECK_EQ(st.window, 6);
	CHECK_NEAR(st.probe_interval, FEEDBACK_LEARN_PROBE_MIN);
	/* inconclusive: another delivery refused while the probe flew */
	st.busy = 5;
	p = feedback_delivery_start(&st, &s, 8);
	ATF_REQUIRE(p.probe);
	other = ticket(&st, 6);
	other.negatives = p.negatives;
	other.probe = false;
	feedback_delivery_end(&st, &s, 8.1, FEEDBACK_NEGATIVE, &other);
	ATF_CHECK_EQ(st.ceiling, 5);			/* c - 1 = 5: no change */
	feedback_delivery_end(&st, &s, 9, FEEDBACK_POSITIVE, &p);
	ATF_CHECK_EQ(st.ceiling, 5);
	ATF_CHECK_EQ(st.probe_state, FEEDBACK_PROBE_IDLE);
	CHECK_NEAR(st.next_probe, 9 + FEEDBACK_LEARN_PROBE_MIN);
	/* never above destination_concurrency_limit, and no probe there */
	s.concurrency_limit = 5;
	st.busy = 5;
	t = ticket(&st, 5);
	feedback_delivery_end(&st, &s, 20, FEEDBACK_POSITIVE, &t);
	ATF_CHECK_EQ(st.window, 5);
	ATF_CHECK_EQ(st.probe_state, FEEDBACK_PROBE_IDLE);
}

/* A falling limit is followed one step per refusal; a refusal at concurrency 1
 * teaches nothing; a lost probe (no feedback) is not held for ever;
 * revival forgets the ceiling. */
ATF_TC_WITHOUT_HEAD(learn_fall_and_forget);
ATF_TC_BODY(learn_fall_and_forget, tc)
{
	feedback_settings_t s = learnset();
	feedback_state_t st;
	feedback_ticket_t t, p;

	s.failed_cohort_limit = 10;
	s.initial_concurrency = 10;
	feedback_init(&st, &s, NULL);
	st.busy = 10;
	t = ticket(&st, 9);
	feedback_delivery_end(&st, &s, 0, FEEDBACK_NEGATIVE, &t);
	ATF_CHECK_EQ(st.ceiling, 8);
	/* later refusals lower it one step each, however low they came */
	t = ticket(&st, 4);
	feedback_delivery_end(&st, &s, 0, FEEDBACK_NEGATIVE, &t);
	ATF_CHECK_EQ(st.ceiling, 7);
	ATF_CHECK_EQ(st.window, 7);
	for (int i = 0; i < 5; i++) {
		t = ticket(&st, 4);
		feedback_delivery_end(&st, &s, 0, FEEDBACK_NEGATIVE, &t);
	}
	ATF_CHECK_EQ(st.ceiling, 3);		/* 6, 5, 4, 3, then c - 1 = 3 */
	ATF_CHECK_EQ(st.window, 3);
	t = ticket(&st, 9);				/* late report */
	feedback_delivery_end(&st, &s, 0, FEEDBACK_NEGATIVE, &t);
	ATF_CHECK_EQ(st.ceiling, 3);
	t = ticket(&st, 1);
	feedback_delivery_end(&st, &s, 0, FEEDBACK_NEGATIVE, &t);
	ATF_CHECK_EQ(st.ceiling, 3);
	/* a probe that never reports */
	st.busy = 3;
	t = ticket(&st, 3);
	feedback_delivery_end(&st, &s, 50, FEEDBACK_POSITIVE, &t);
	st.busy = 3;
	ATF_REQUIRE_EQ(st.window, 4);
	p = feedback_delivery_start(&st, &s, 50);
	ATF_REQUIRE(p.probe);
	feedback_delivery_end(&st, &s, 51, FEEDBACK_NONE, &p);
	ATF_CHECK_EQ(st.probe_state, FEEDBACK_PROBE_IDLE);
	ATF_CHECK(st.next_probe > 51);
	/* death and revival */
	feedback_kill(&st, &s);
	ATF_CHECK_EQ(st.window, 0);
	feedback_probe_start(&st, &s);
	ATF_CHECK_EQ(st.window, 1);
	ATF_CHECK_EQ(feedback_positive(&st, &s), FEEDBACK_REVIVED);
	ATF_CHECK_EQ(st.ceiling, 0);
	ATF_CHECK_EQ(st.window, 10);
}

/* The debug line shows base, ceiling and the probe state in learn mode. */
ATF_TC_WITHOUT_HEAD(learn_debug_log);
ATF_TC_BODY(learn_debug_log, tc)
{
	feedback_settings_t s = learnset();
	feedback_state_t st;
	feedback_ticket_t t;

	log_init("petrel/qmgr");
	ATF_REQUIRE(log_to_file("fb.log") == 0);
	s.debug = true;
	feedback_init(&st, &s, "smtp:busy.example");
	st.busy = 6;
	st.window = st.base = 6;
	t = ticket(&st, 6);
	feedback_delivery_end(&st, &s, 0, FEEDBACK_NEGATIVE, &t);
	log_to_stderr();
	char *text = slurp("fb.log");
	ATF_REQUIRE(text != NULL);
	ATF_CHECK_MSG(strstr(text, "feedback: smtp:busy.example negative: window 6->5 "
	    "busy 6 success 0.000 failure 0.833 fail_cohorts 0.167 base 5 ceiling 5 "
	    "probe idle\n") != NULL, "%s", text);
}

/* Dead-destination detection is not weakened: a destination refusing
 * everything dies after the same number of refusals as in Postfix mode,
 * whatever the order of the reports and the negative feedback; after a
 * limit was learned it dies no later than Postfix mode at that window. */
static int refusals_to_death(feedback_settings_t *s, feedback_state_t *st, int n,
    bool ascending)
{
	feedback_ticket_t tk[64];
	for (int i = 0; i < n; i++)
		tk[i] = feedback_delivery_start(st, s, 100);
	for (int k = 0; k < n; k++) {
		int i = ascending ? k : n - 1 - k;
		if (feedback_delivery_end(st, s, 100.3, FEEDBACK_NEGATIVE, &tk[i]) & FEEDBACK_DEAD)
			return k + 1;
	}
	return 0;
}

ATF_TC_WITHOUT_HEAD(learn_dead_detection);
ATF_TC_BODY(learn_dead_detection, tc)
{
	static const feedback_func_t neg[] = {
		{ FEEDBACK_KIND_CONSTANT, 1 }, { FEEDBACK_KIND_INVERSE, 1 },
		{ FEEDBACK_KIND_INVERSE_SQRT, 1 },
	};
	for (size_t i = 0; i < sizeof(neg) / sizeof(neg[0]); i++) {
		for (int asc = 0; asc < 2; asc++) {
			feedback_settings_t sp, sl;
			feedback_state_t p, l;
			feedback_settings_init(&sp);
			sp.negative = neg[i];
			sl = sp;
			sl.mode = FEEDBACK_MODE_LEARN;
			feedback_init(&p, &sp, NULL);
			feedback_init(&l, &sl, NULL);
			int np = refusals_to_death(&sp, &p, 5, asc);
			int nl = refusals_to_death(&sl, &l, 5, asc);
			ATF_CHECK_MSG(np > 0 && np == nl,
			    "negative %zu order %d: postfix %d, learn %d", i, asc, np, nl);
			ATF_CHECK(l.dead && l.window == 0);
		}
		/* learned limit 5, the destination then dies */
		feedback_settings_t sp, sl;
		feedback_state_t p, l;
		feedback_settings_init(&sp);
		sp.negative = neg[i];
		sp.initial_concurrency = 5;
		sl = sp;
		sl.mode = FEEDBACK_MODE_LEARN;
		feedback_init(&l, &sl, NULL);
		l.busy = 6;
		feedback_ticket_t t = ticket(&l, 6);
		feedback_delivery_end(&l, &sl, 0, FEEDBACK_NEGATIVE, &t);
		ATF_REQUIRE_EQ(l.ceiling, 5);
		l.busy = 5;
		t = ticket(&l, 5);
		feedback_delivery_end(&l, &sl, 0.5, FEEDBACK_POSITIVE, &t);	/* cohorts 0 */
		l.busy = 0;
		l.probe_state = FEEDBACK_PROBE_IDLE;
		l.window = 5;
		l.base = 5;
		feedback_init(&p, &sp, NULL);
		for (int asc = 0; asc < 2; asc++) {
			feedback_state_t pc = p, lc = l;
			int np = refusals_to_death(&sp, &pc, 5, asc);
			int nl = refusals_to_death(&sl, &lc, 5, asc);
			ATF_CHECK_MSG(nl > 0 && nl <= np,
			    "learned, negative %zu order %d: postfix %d, learn %d", i, asc, np, nl);
		}
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, init_and_defaults);
	ATF_TP_ADD_TC(tp, constant_one);
	ATF_TP_ADD_TC(tp, positive_inverse);
	ATF_TP_ADD_TC(tp, positive_inverse_sqrt);
	ATF_TP_ADD_TC(tp, positive_constant_fraction);
	ATF_TP_ADD_TC(tp, negative_inverse);
	ATF_TP_ADD_TC(tp, negative_constant_fraction);
	ATF_TP_ADD_TC(tp, negative_inverse_sqrt);
	ATF_TP_ADD_TC(tp, accumulator_resets);
	ATF_TP_ADD_TC(tp, safety_rule);
	ATF_TP_ADD_TC(tp, clamping);
	ATF_TP_ADD_TC(tp, dead_after_cohort_limit);
	ATF_TP_ADD_TC(tp, success_resets_cohorts);
	ATF_TP_ADD_TC(tp, probe_and_revive);
	ATF_TP_ADD_TC(tp, rate_delay);
	ATF_TP_ADD_TC(tp, delivery_done_outcomes);
	ATF_TP_ADD_TC(tp, invariants);
	ATF_TP_ADD_TC(tp, parse);
	ATF_TP_ADD_TC(tp, settings_check);
	ATF_TP_ADD_TC(tp, debug_log);
	ATF_TP_ADD_TC(tp, learn_mode_parse);
	ATF_TP_ADD_TC(tp, learn_without_refusals_is_postfix);
	ATF_TP_ADD_TC(tp, learn_ceiling_and_probes);
	ATF_TP_ADD_TC(tp, learn_probe_success);
	ATF_TP_ADD_TC(tp, learn_fall_and_forget);
	ATF_TP_ADD_TC(tp, learn_dead_detection);
	ATF_TP_ADD_TC(tp, learn_debug_log);
	return atf_no_error();
}
