/* Unit tests for libsched/dsc: the destination status cache of
 * doc/scheduling-rules.md §6 (suspension, one probe at the retry time,
 * growing intervals, LRU bound, admin listing and clearing). */
#include <atf-c.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "libsched/dsc.h"

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (1 + fabs(b));
}
#define CHECK_NEAR(a, b) ATF_CHECK_MSG(near((a), (b)), "%s = %.12g, expected %.12g", #a, (double)(a), (double)(b))

static const char *REFUSED =
    "connect to mx.example.com[192.0.2.1]:25: Connection refused";

ATF_TC_WITHOUT_HEAD(insert_and_lookup);
ATF_TC_BODY(insert_and_lookup, tc)
{
	dsc_t *dsc = dsc_new(100, NULL);	/* default back-off */
	const dsc_entry_t *e;
	str_t txt = STR_INIT;

	ATF_CHECK_EQ(dsc_limit(dsc), 100);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "example.com", NULL, 0, &e), DSC_DELIVER);
	ATF_CHECK(e == NULL);
	e = dsc_mark_dead(dsc, "smtp", "example.com", NULL, REFUSED, 1000);
	ATF_REQUIRE(e != NULL);
	ATF_CHECK_EQ(dsc_count(dsc), 1);
	ATF_CHECK_STREQ(e->transport, "smtp");
	ATF_CHECK_STREQ(e->nexthop, "example.com");
	ATF_CHECK_STREQ(e->extra, "");
	ATF_CHECK_STREQ(e->reason, REFUSED);
	ATF_CHECK_EQ(e->state, DSC_STATE_SUSPENDED);
	ATF_CHECK_EQ(e->failures, 1);
	CHECK_NEAR(e->died_at, 1000);
	CHECK_NEAR(e->last_fail, 1000);
	CHECK_NEAR(e->retry_at, 1300);	/* minimal_backoff_time */

	const dsc_entry_t *got = NULL;
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "example.com", NULL, 1000, &got), DSC_SUSPENDED);
	ATF_CHECK(got == e);
	ATF_CHECK_STREQ(dsc_suspend_text(got, &txt),
	    "delivery temporarily suspended: connect to mx.example.com[192.0.2.1]:25: Connection refused");
	/* Domain names compare case-insensitively. */
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "EXAMPLE.com", NULL, 1000, NULL), DSC_SUSPENDED);
	/* Other transports, nexthops and extra keys are separate. */
	ATF_CHECK_EQ(dsc_check(dsc, "relay", "example.com", NULL, 1000, NULL), DSC_DELIVER);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "example.org", NULL, 1000, NULL), DSC_DELIVER);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "example.com", "mx1,mx2", 1000, NULL), DSC_DELIVER);
	/* NULL and "" extra are the same key. */
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "example.com", "", 1000, NULL), DSC_SUSPENDED);
	/* Keys cannot collide by shifting text between parts. */
	dsc_mark_dead(dsc, "a:b", "c", NULL, "x", 1000);
	ATF_CHECK_EQ(dsc_check(dsc, "a", "b:c", NULL, 1000, NULL), DSC_DELIVER);
	ATF_CHECK(dsc_peek(dsc, "a:b", "c", "") != NULL);
	ATF_CHECK(dsc_peek(dsc, "a", "b:c", "") == NULL);

	/* Extra key (MX set) entries. */
	e = dsc_mark_dead(dsc, "smtp", "example.net", "mx1.example.net,mx2.example.net", NULL, 1000);
	ATF_CHECK_STREQ(e->extra, "mx1.example.net,mx2.example.net");
	ATF_CHECK_STREQ(e->reason, "unknown reason");
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "example.net", NULL, 1000, NULL), DSC_DELIVER);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "example.net", "mx1.example.net,mx2.example.net", 1000, NULL), DSC_SUSPENDED);
	str_release(&txt);
	dsc_free(dsc);
}

/* At the retry time exactly one caller gets the probe. */
ATF_TC_WITHOUT_HEAD(probe_exactly_once);
ATF_TC_BODY(probe_exactly_once, tc)
{
	dsc_t *dsc = dsc_new(10, NULL);
	const dsc_entry_t *e;
	dsc_mark_dead(dsc, "smtp", "dead.example", NULL, REFUSED, 1000);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "dead.example", NULL, 1299.999, NULL), DSC_SUSPENDED);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "dead.example", NULL, 1300, &e), DSC_PROBE);
	ATF_CHECK_EQ(e->state, DSC_STATE_PROBING);
	CHECK_NEAR(e->probe_started, 1300);
	ATF_CHECK_EQ(e->probes, 1);
	/* Everyone else stays suspended while the probe is in flight. */
	int probes = 0;
	for (int i = 0; i < 1000; i++)
		if (dsc_check(dsc, "smtp", "dead.example", NULL, 1300 + i, NULL) == DSC_PROBE)
			probes++;
	ATF_CHECK_EQ(probes, 0);
	ATF_CHECK_EQ(e->probes, 1);
	/* Probe success: the entry goes, mail flows. */
	ATF_CHECK(dsc_probe_ok(dsc, "smtp", "dead.example", NULL));
	ATF_CHECK_EQ(dsc_count(dsc), 0);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "dead.example", NULL, 2400, NULL), DSC_DELIVER);
	ATF_CHECK(!dsc_probe_ok(dsc, "smtp", "dead.example", NULL));
	/* A late check (long after the retry time) also gets one probe. */
	dsc_mark_dead(dsc, "smtp", "dead.example", NULL, REFUSED, 5000);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "dead.example", NULL, 6000, NULL), DSC_PROBE);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "dead.example", NULL, 6000, NULL), DSC_SUSPENDED);
	dsc_free(dsc);
}

/* Probe failures extend the entry; with the postfix function the interval
 * is the time since death, clamped: 300, 300, 600, 1200, 2400, 4000. */
ATF_TC_WITHOUT_HEAD(failure_extends_postfix);
ATF_TC_BODY(failure_extends_postfix, tc)
{
	dsc_t *dsc = dsc_new(10, NULL);
	const dsc_entry_t *e;
	double now = 1000;
	double expect[] = { 300, 300, 600, 1200, 2400, 4000, 4000, 4000 };

	e = dsc_mark_dead(dsc, "smtp", "dead.example", NULL, "first", now);
	for (int i = 0; i < 8; i++) {
		ATF_CHECK_EQ(e->failures, i + 1);
		CHECK_NEAR(e->retry_at - now, expect[i]);
		ATF_CHECK_EQ(dsc_check(dsc, "smtp", "dead.example", NULL, e->retry_at - 1, NULL), DSC_SUSPENDED);
		now = e->retry_at;
		ATF_CHECK_EQ(dsc_check(dsc, "smtp", "dead.example", NULL, now, NULL), DSC_PROBE);
		e = dsc_mark_dead(dsc, "smtp", "dead.example", NULL, "probe failed", now);
	}
	CHECK_NEAR(e->died_at, 1000);		/* the episode's start stays */
	ATF_CHECK_STREQ(e->reason, "probe failed");
	ATF_CHECK_EQ(e->probes, 8);
	ATF_CHECK_EQ(e->state, DSC_STATE_SUSPENDED);
	dsc_free(dsc);
}

/* The same with the four curves: interval n = t(n). */
ATF_TC_WITHOUT_HEAD(failure_extends_seed_functions);
ATF_TC_BODY(failure_extends_seed_functions, tc)
{
	backoff_fn_t fns[] = { BACKOFF_LINEAR, BACKOFF_ARITHMETIC,
	    BACKOFF_GEOMETRIC, BACKOFF_EXPONENTIAL };
	for (int f = 0; f < 4; f++) {
		backoff_params_t bp;
		backoff_params_init(&bp);
		bp.function = fns[f];
		bp.min_time = 100;
		bp.max_time = 1000;
		bp.retry_count = 5;
		dsc_t *dsc = dsc_new(10, &bp);
		double now = 0, prev = 0;
		const dsc_entry_t *e = dsc_mark_dead(dsc, "smtp", "x", NULL, "r", now);
		for (int n = 1; n <= 7; n++) {
			double interval = e->retry_at - now;
			CHECK_NEAR(interval, backoff_delay(&bp, n, 0));
			ATF_CHECK(interval >= prev);		/* growing */
			ATF_CHECK(interval >= 100 && interval <= 1000);
			prev = interval;
			now = e->retry_at;
			ATF_CHECK_EQ(dsc_check(dsc, "smtp", "x", NULL, now, NULL), DSC_PROBE);
			e = dsc_mark_dead(dsc, "smtp", "x", NULL, "r", now);
		}
		CHECK_NEAR(prev, 1000);		/* n > NUM: MAX */
		dsc_free(dsc);
	}
	/* Linear by hand (interval (1000 - 100) / 5 = 180, t(5) = MAX):
	 * 100, 280, 460, 640, 1000, 1000. */
	backoff_params_t bp;
	backoff_params_init(&bp);
	bp.function = BACKOFF_LINEAR;
	bp.min_time = 100;
	bp.max_time = 1000;
	bp.retry_count = 5;
	dsc_t *dsc = dsc_new(10, &bp);
	double hand[] = { 100, 280, 460, 640, 1000, 1000 };
	double now = 0;
	const dsc_entry_t *e = dsc_mark_dead(dsc, "smtp", "x", NULL, "r", now);
	for (int i = 0; i < 6; i++) {
		CHECK_NEAR(e->retry_at - now, hand[i]);
		now = e->retry_at;
		dsc_check(dsc, "smtp", "x", NULL, now, NULL);
		e = dsc_mark_dead(dsc, "smtp", "x", NULL, "r", now);
	}
	dsc_free(dsc);
}

/* Reports of the same outage before the retry time do not lengthen it. */
ATF_TC_WITHOUT_HEAD(duplicate_reports);
ATF_TC_BODY(duplicate_reports, tc)
{
	dsc_t *dsc = dsc_new(10, NULL);
	const dsc_entry_t *e = dsc_mark_dead(dsc, "smtp", "d", NULL, "refused", 1000);
	e = dsc_mark_dead(dsc, "smtp", "d", NULL, "timed out", 1010);
	ATF_CHECK_EQ(e->failures, 1);
	CHECK_NEAR(e->retry_at, 1300);
	CHECK_NEAR(e->last_fail, 1010);
	ATF_CHECK_STREQ(e->reason, "timed out");
	/* Past the retry time without a probe (a direct attempt): counts. */
	e = dsc_mark_dead(dsc, "smtp", "d", NULL, "refused", 1300);
	ATF_CHECK_EQ(e->failures, 2);
	CHECK_NEAR(e->retry_at, 1600);
	dsc_free(dsc);
}

/* A probe that ends without a verdict, and a probe that is lost. */
ATF_TC_WITHOUT_HEAD(probe_abort_and_lost);
ATF_TC_BODY(probe_abort_and_lost, tc)
{
	dsc_t *dsc = dsc_new(10, NULL);
	const dsc_entry_t *e = dsc_mark_dead(dsc, "smtp", "d", NULL, "r", 1000);
	ATF_CHECK(!dsc_probe_abort(dsc, "smtp", "d", NULL));	/* not probing */
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "d", NULL, 1300, NULL), DSC_PROBE);
	ATF_CHECK(dsc_probe_abort(dsc, "smtp", "d", NULL));
	ATF_CHECK_EQ(e->state, DSC_STATE_SUSPENDED);
	ATF_CHECK_EQ(e->failures, 1);			/* no verdict: no count */
	CHECK_NEAR(e->retry_at, 1300);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "d", NULL, 1301, NULL), DSC_PROBE);
	ATF_CHECK_EQ(e->probes, 2);
	/* Lost probe: suspended until maximal_backoff_time has passed. */
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "d", NULL, 1301 + 3999, NULL), DSC_SUSPENDED);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "d", NULL, 1301 + 4000, NULL), DSC_PROBE);
	ATF_CHECK_EQ(e->probes, 3);
	ATF_CHECK(!dsc_probe_abort(dsc, "smtp", "nothere", NULL));
	dsc_free(dsc);
}

static void collect(const dsc_entry_t *e, void *ctx)
{
	str_t *s = ctx;
	str_catf(s, "%s/%s,", e->transport, e->nexthop);
}

/* Bounded LRU: the least recently used entry goes when full. */
ATF_TC_WITHOUT_HEAD(lru_eviction);
ATF_TC_BODY(lru_eviction, tc)
{
	dsc_t *dsc = dsc_new(3, NULL);
	str_t order = STR_INIT;
	dsc_mark_dead(dsc, "smtp", "a", NULL, "r", 0);
	dsc_mark_dead(dsc, "smtp", "b", NULL, "r", 1);
	dsc_mark_dead(dsc, "smtp", "c", NULL, "r", 2);
	dsc_walk(dsc, collect, &order);
	ATF_CHECK_STREQ(str_cstr(&order), "smtp/c,smtp/b,smtp/a,");
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "a", NULL, 3, NULL), DSC_SUSPENDED);	/* a used */
	dsc_mark_dead(dsc, "smtp", "d", NULL, "r", 4);		/* evicts b */
	ATF_CHECK_EQ(dsc_count(dsc), 3);
	ATF_CHECK(dsc_peek(dsc, "smtp", "b", NULL) == NULL);
	ATF_CHECK(dsc_peek(dsc, "smtp", "a", NULL) != NULL);
	str_reset(&order);
	dsc_walk(dsc, collect, &order);
	ATF_CHECK_STREQ(str_cstr(&order), "smtp/d,smtp/a,smtp/c,");
	/* Re-marking an existing entry evicts nothing and refreshes it. */
	dsc_mark_dead(dsc, "smtp", "c", NULL, "r2", 5);
	ATF_CHECK_EQ(dsc_count(dsc), 3);
	dsc_mark_dead(dsc, "smtp", "e", NULL, "r", 6);		/* evicts a */
	ATF_CHECK(dsc_peek(dsc, "smtp", "a", NULL) == NULL);
	ATF_CHECK(dsc_peek(dsc, "smtp", "c", NULL) != NULL);
	/* dsc_peek does not count as use. */
	dsc_peek(dsc, "smtp", "d", NULL);
	dsc_mark_dead(dsc, "smtp", "f", NULL, "r", 7);		/* evicts d */
	ATF_CHECK(dsc_peek(dsc, "smtp", "d", NULL) == NULL);
	ATF_CHECK_EQ(dsc_count(dsc), 3);

	/* Many entries: the bound holds, the newest survive. */
	char name[32];
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "host%d.example", i);
		dsc_mark_dead(dsc, "smtp", name, NULL, "r", 10 + i);
		ATF_REQUIRE(dsc_count(dsc) <= 3);
	}
	ATF_CHECK(dsc_peek(dsc, "smtp", "host19999.example", NULL) != NULL);
	ATF_CHECK(dsc_peek(dsc, "smtp", "host19997.example", NULL) != NULL);
	ATF_CHECK(dsc_peek(dsc, "smtp", "host19996.example", NULL) == NULL);
	str_release(&order);
	dsc_free(dsc);

	/* Big cache: every entry stays findable. */
	dsc = dsc_new(50000, NULL);
	for (int i = 0; i < 50000; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		dsc_mark_dead(dsc, "smtp", name, NULL, "r", 0);
	}
	ATF_CHECK_EQ(dsc_count(dsc), 50000);
	int missing = 0;
	for (int i = 0; i < 50000; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		missing += dsc_check(dsc, "smtp", name, NULL, 1, NULL) != DSC_SUSPENDED;
	}
	ATF_CHECK_EQ(missing, 0);
	dsc_free(dsc);
}

ATF_TC_WITHOUT_HEAD(disabled);
ATF_TC_BODY(disabled, tc)
{
	dsc_t *dsc = dsc_new(0, NULL);
	ATF_CHECK(dsc_mark_dead(dsc, "smtp", "a", NULL, "r", 0) == NULL);
	ATF_CHECK_EQ(dsc_count(dsc), 0);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "a", NULL, 0, NULL), DSC_DELIVER);
	dsc_free(dsc);
	dsc_free(NULL);
}

/* Admin: listing (postq -D) and clearing (postsuper -x). */
ATF_TC_WITHOUT_HEAD(list_and_clear);
ATF_TC_BODY(list_and_clear, tc)
{
	dsc_t *dsc = dsc_new(100, NULL);
	str_t line = STR_INIT, all = STR_INIT;
	const dsc_entry_t *e;

	e = dsc_mark_dead(dsc, "smtp", "example.com", NULL, REFUSED, 1000);
	ATF_CHECK_STREQ(dsc_format_entry(e, 1100, &line),
	    "smtp example.com state=suspended failures=1 probes=0 age=100 retry_in=200 "
	    "reason=connect to mx.example.com[192.0.2.1]:25: Connection refused");
	e = dsc_mark_dead(dsc, "relay", "Example.COM", "mx1,mx2", "bad\nreason", 1000);
	dsc_check(dsc, "relay", "example.com", "mx1,mx2", 1300.5, NULL);
	ATF_CHECK_STREQ(dsc_format_entry(e, 1300.5, &line),
	    "relay Example.COM mx1,mx2 state=probing failures=1 probes=1 age=300 retry_in=0 "
	    "reason=bad\\012reason");
	dsc_mark_dead(dsc, "smtp", "other.example", NULL, "r", 1000);
	dsc_mark_dead(dsc, "smtp", "example.com", "mx9", "r", 1000);

	dsc_walk(dsc, collect, &all);
	ATF_CHECK_STREQ(str_cstr(&all),
	    "smtp/example.com,smtp/other.example,relay/Example.COM,smtp/example.com,");

	ATF_CHECK(!dsc_clear(dsc, "smtp", "nothere", NULL));
	ATF_CHECK(dsc_clear(dsc, "smtp", "other.example", NULL));
	ATF_CHECK_EQ(dsc_count(dsc), 3);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "other.example", NULL, 1000, NULL), DSC_DELIVER);
	/* postsuper -x example.com: every transport and MX set. */
	ATF_CHECK_EQ(dsc_clear_nexthop(dsc, "example.com"), 3);
	ATF_CHECK_EQ(dsc_count(dsc), 0);
	ATF_CHECK_EQ(dsc_clear_nexthop(dsc, "example.com"), 0);
	ATF_CHECK_EQ(dsc_clear_nexthop(dsc, NULL), 0);

	dsc_mark_dead(dsc, "smtp", "a", NULL, "r", 0);
	dsc_mark_dead(dsc, "smtp", "b", NULL, "r", 0);
	ATF_CHECK_EQ(dsc_clear_all(dsc), 2);
	ATF_CHECK_EQ(dsc_count(dsc), 0);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "a", NULL, 0, NULL), DSC_DELIVER);
	/* The cache works as before after clearing. */
	dsc_mark_dead(dsc, "smtp", "a", NULL, "r", 0);
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "a", NULL, 0, NULL), DSC_SUSPENDED);
	str_release(&line);
	str_release(&all);
	dsc_free(dsc);
}

/* Stale entries (retry time long past, nobody probed) expire. */
ATF_TC_WITHOUT_HEAD(expire);
ATF_TC_BODY(expire, tc)
{
	dsc_t *dsc = dsc_new(100, NULL);
	dsc_mark_dead(dsc, "smtp", "old", NULL, "r", 0);	/* retry 300 */
	dsc_mark_dead(dsc, "smtp", "new", NULL, "r", 3000);	/* retry 3300 */
	dsc_mark_dead(dsc, "smtp", "probing", NULL, "r", 0);
	dsc_check(dsc, "smtp", "probing", NULL, 300, NULL);
	ATF_CHECK_EQ(dsc_expire(dsc, 4300), 0);		/* not yet > 300+4000 */
	ATF_CHECK_EQ(dsc_expire(dsc, 4300.5), 1);
	ATF_CHECK(dsc_peek(dsc, "smtp", "old", NULL) == NULL);
	ATF_CHECK(dsc_peek(dsc, "smtp", "new", NULL) != NULL);
	ATF_CHECK(dsc_peek(dsc, "smtp", "probing", NULL) != NULL);	/* in flight */
	dsc_free(dsc);
}

/* Jitter from the back-off parameters spreads retry times. */
static double fixed_rand(void *ctx)
{
	return *(double *)ctx;
}

ATF_TC_WITHOUT_HEAD(jitter);
ATF_TC_BODY(jitter, tc)
{
	backoff_params_t bp;
	double r = 1.0;
	backoff_params_init(&bp);
	bp.function = BACKOFF_LINEAR;
	bp.min_time = 100;
	bp.max_time = 1000;
	bp.retry_count = 9;	/* interval 100: 100, 200, ... */
	bp.jitter = 25;		/* factors exact in binary */
	bp.rand = fixed_rand;
	bp.rand_ctx = &r;
	dsc_t *dsc = dsc_new(10, &bp);
	r = 0.75;		/* 100 x 1.125 */
	const dsc_entry_t *e = dsc_mark_dead(dsc, "smtp", "a", NULL, "r", 0);
	CHECK_NEAR(e->retry_at, 112.5);
	r = 0.25;		/* 200 x 0.875 */
	ATF_CHECK_EQ(dsc_check(dsc, "smtp", "a", NULL, 112.5, NULL), DSC_PROBE);
	e = dsc_mark_dead(dsc, "smtp", "a", NULL, "r", 112.5);
	CHECK_NEAR(e->retry_at, 112.5 + 175);
	dsc_free(dsc);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, insert_and_lookup);
	ATF_TP_ADD_TC(tp, probe_exactly_once);
	ATF_TP_ADD_TC(tp, failure_extends_postfix);
	ATF_TP_ADD_TC(tp, failure_extends_seed_functions);
	ATF_TP_ADD_TC(tp, duplicate_reports);
	ATF_TP_ADD_TC(tp, probe_abort_and_lost);
	ATF_TP_ADD_TC(tp, lru_eviction);
	ATF_TP_ADD_TC(tp, disabled);
	ATF_TP_ADD_TC(tp, list_and_clear);
	ATF_TP_ADD_TC(tp, expire);
	ATF_TP_ADD_TC(tp, jitter);
	return atf_no_error();
}
