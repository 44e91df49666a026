/* Unit tests for shaping (doc/scheduler.md section 8a): rates and token
 * buckets (libutil/tbucket), the rate table value syntax
 * (libsched/sched_rate.c), and the scheduler core holding a limited
 * destination's mail in the active queue on a virtual clock. */
#include "t_sched_harness.h"
#include "tbucket.h"

static int near(double a, double b)
{
	return fabs(a - b) <= 1e-9;
}
#define CHECK_NEAR(a, b) ATF_CHECK_MSG(near((a), (b)), "%s = %.12g, expected %.12g", #a, (double)(a), (double)(b))

static void rate_ok(const char *text, double want)
{
	double r = -1;
	str_t err = STR_INIT;
	ATF_CHECK_MSG(tb_rate_parse(text, &r, &err), "\"%s\": %s", text,
	    str_cstr(&err));
	ATF_CHECK_MSG(near(r, want), "\"%s\" = %.12g, expected %.12g", text, r,
	    want);
	str_release(&err);
}

static void rate_bad(const char *text, const char *why)
{
	double r = 42;
	str_t err = STR_INIT;
	ATF_CHECK_MSG(!tb_rate_parse(text, &r, &err), "\"%s\" accepted", text);
	ATF_CHECK_MSG(r == 42, "\"%s\": value changed on error", text);
	ATF_CHECK_MSG(strstr(str_cstr(&err), why) != NULL,
	    "\"%s\": reason \"%s\" lacks \"%s\"", text, str_cstr(&err), why);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(rate_parse);
ATF_TC_BODY(rate_parse, tc)
{
	rate_ok("500/h", 500.0 / 3600);
	rate_ok("10/m", 10.0 / 60);
	rate_ok("2/s", 2);
	rate_ok("1000/d", 1000.0 / 86400);
	rate_ok(" 1.5 / minute ", 1.5 / 60);
	rate_ok("30/Hours", 30.0 / 3600);
	rate_ok("0", 0);
	rate_ok("none", 0);
	rate_ok("", 0);
	rate_bad("0/s", "more than 0");
	rate_bad("0.0/h", "more than 0");
	rate_bad("-1/h", "expected N/UNIT");
	rate_bad("5/fortnight", "unknown unit");
	rate_bad("5", "expected N/UNIT");
	rate_bad("5/", "expected a unit");
	rate_bad("abc", "expected N/UNIT");
	rate_bad("5/h x", "expected a unit");
	rate_bad("1e999/s", "not a number");
}

ATF_TC_WITHOUT_HEAD(rate_format);
ATF_TC_BODY(rate_format, tc)
{
	str_t s = STR_INIT;
	ATF_CHECK_STREQ(tb_rate_format(500.0 / 3600, &s), "500/h");
	ATF_CHECK_STREQ(tb_rate_format(10.0 / 60, &s), "10/m");
	ATF_CHECK_STREQ(tb_rate_format(2, &s), "2/s");
	ATF_CHECK_STREQ(tb_rate_format(2.5, &s), "150/m");
	ATF_CHECK_STREQ(tb_rate_format(1.0 / 86400, &s), "1/d");
	ATF_CHECK_STREQ(tb_rate_format(0.5 / 86400, &s), "0.000006/s");
	ATF_CHECK_STREQ(tb_rate_format(0, &s), "0");
	str_release(&s);
}

/* 10/m, burst 5, on a virtual clock: exact token counts and times. */
ATF_TC_WITHOUT_HEAD(bucket);
ATF_TC_BODY(bucket, tc)
{
	tbucket_t b;

	tb_init(&b, 10.0 / 60, 5, 100);
	CHECK_NEAR(tb_tokens(&b, 100), 5);
	CHECK_NEAR(tb_full_time(&b, 100), 100);
	for (int i = 0; i < 5; i++)
		ATF_CHECK_MSG(tb_take(&b, 100), "take %d of the burst", i + 1);
	CHECK_NEAR(tb_tokens(&b, 100), 0);
	ATF_CHECK(!tb_can_take(&b, 100));
	ATF_CHECK(!tb_take(&b, 100));
	CHECK_NEAR(tb_next_token(&b, 100), 106);
	CHECK_NEAR(tb_tokens(&b, 103), 0.5);
	CHECK_NEAR(tb_next_token(&b, 103), 106);
	ATF_CHECK(!tb_take(&b, 105.9));
	/* Exactly at the due time (1/6 of a token per second adds up to
	 * 0.9999... in binary: the tolerance takes it). */
	ATF_CHECK(tb_take(&b, 106));
	CHECK_NEAR(tb_tokens(&b, 106), 0);
	CHECK_NEAR(tb_full_time(&b, 106), 136);
	/* Never above the burst. */
	CHECK_NEAR(tb_tokens(&b, 10000), 5);
	/* Sixty steps of 1/6 s... one token per 6 s for an hour: 600
	 * takes, each exactly when due. */
	{
		double t = 0;
		int n = 0;
		tbucket_t c;
		tb_init(&c, 10.0 / 60, 1, 0);
		tb_take(&c, 0);
		for (int i = 0; i < 600; i++) {
			t = tb_next_token(&c, t);
			if (tb_take(&c, t))
				n++;
		}
		ATF_CHECK_EQ(n, 600);
		CHECK_NEAR(t, 3600);
	}
	/* A burst below 1 is raised to 1. */
	tb_init(&b, 1, 0.5, 0);
	CHECK_NEAR(b.burst, 1);
}

ATF_TC_WITHOUT_HEAD(limits_parse);
ATF_TC_BODY(limits_parse, tc)
{
	sched_limits_t base, l;
	str_t err = STR_INIT, f = STR_INIT;

	sched_limits_init(&base);
	ATF_CHECK(!sched_limits_any(&base));
	ATF_REQUIRE_MSG(sched_limits_parse("messages=500/h burst=20 "
	    "connections=10/m messages_per_connection=50", &base, &l, &err),
	    "%s", str_cstr(&err));
	CHECK_NEAR(l.msg_rate, 500.0 / 3600);
	CHECK_NEAR(l.msg_burst, 20);
	CHECK_NEAR(l.conn_rate, 10.0 / 60);
	CHECK_NEAR(l.conn_burst, 1);
	ATF_CHECK_EQ(l.msgs_per_conn, 50);
	ATF_CHECK(sched_limits_any(&l));
	ATF_CHECK_STREQ(sched_limits_format(&l, &f), "messages=500/h burst=20 "
	    "connections=10/m connection_burst=1 messages_per_connection=50");
	/* Only what is named replaces the base. */
	base = l;
	ATF_REQUIRE(sched_limits_parse("connection_burst=3, messages=0", &base,
	    &l, &err));
	CHECK_NEAR(l.msg_rate, 0);
	CHECK_NEAR(l.msg_burst, 20);
	CHECK_NEAR(l.conn_rate, 10.0 / 60);
	CHECK_NEAR(l.conn_burst, 3);
	ATF_CHECK_EQ(l.msgs_per_conn, 50);
	sched_limits_init(&base);
	ATF_CHECK_STREQ(sched_limits_format(&base, &f), "none");

	static const struct { const char *in, *why; } bad[] = {
		{ "messages=0/s", "bad rate \"0/s\"" },
		{ "messages=5/fortnight", "unknown unit" },
		{ "burst=-1", "bad burst \"-1\"" },
		{ "burst=0", "bad burst \"0\"" },
		{ "connection_burst=x", "bad connection_burst" },
		{ "messages_per_connection=-2", "bad messages_per_connection" },
		{ "speed=1/s", "unknown limit \"speed\"" },
		{ "messages", "expected name=value" },
		{ "messages=", "expected name=value" },
		{ "", "empty value" },
		{ " , ", "empty value" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		str_reset(&err);
		ATF_CHECK_MSG(!sched_limits_parse(bad[i].in, &base, &l, &err),
		    "\"%s\" accepted", bad[i].in);
		ATF_CHECK_MSG(strstr(str_cstr(&err), bad[i].why) != NULL,
		    "\"%s\": \"%s\" lacks \"%s\"", bad[i].in, str_cstr(&err),
		    bad[i].why);
	}
	/* The same names as main.cf parameters. */
	{
		sched_tparams_t tp;
		sched_tparams_init(&tp, "smtp");
		ATF_CHECK(sched_tparams_set(&tp, "destination_message_rate", "60/m", &err));
		ATF_CHECK(sched_tparams_set(&tp, "default_destination_message_burst", "5", &err));
		ATF_CHECK(sched_tparams_set(&tp, "destination_connection_rate", "1/s", &err));
		ATF_CHECK(sched_tparams_set(&tp, "destination_connection_burst", "2", &err));
		ATF_CHECK(sched_tparams_set(&tp, "destination_messages_per_connection", "7", &err));
		CHECK_NEAR(tp.limits.msg_rate, 1);
		CHECK_NEAR(tp.limits.msg_burst, 5);
		CHECK_NEAR(tp.limits.conn_rate, 1);
		CHECK_NEAR(tp.limits.conn_burst, 2);
		ATF_CHECK_EQ(tp.limits.msgs_per_conn, 7);
		ATF_CHECK(!sched_tparams_set(&tp, "destination_message_rate", "0/s", &err));
		ATF_CHECK(!sched_tparams_set(&tp, "destination_message_burst", "-1", &err));
		ATF_CHECK(!sched_tparams_set(&tp, "destination_message_burst", "0", &err));
		ATF_CHECK(sched_tparams_check(&tp, &err));
	}
	str_release(&err);
	str_release(&f);
}

/* Start times of the deliveries to nexthops starting with 'a'. */
static double starts_a[64];
static int nstarts_a;

static void rec_selected(h_t *h)
{
	/* The harness records the first letter of each selected nexthop;
	 * pick up new ones with the time they started. */
	static size_t seen;
	if (h->nhops < seen)
		seen = 0;
	for (; seen < h->nhops; seen++)
		if (h->hops[seen] == 'a' && nstarts_a < 64)
			starts_a[nstarts_a++] = h->now;
}

/* Run deliveries and the core's timers on the virtual clock: after each
 * dispatch, go to the earlier of the next delivery end and
 * sched_next_wakeup(). */
static int run_timed(h_t *h, int max_steps, int *wakeups)
{
	int steps = 0;
	for (; steps < max_steps; steps++) {
		double w, end = INFINITY;
		h_dispatch(h);
		rec_selected(h);
		for (int k = 0; k < h->nfl; k++)
			if (h->fl[k].end < end)
				end = h->fl[k].end;
		w = sched_next_wakeup(h->s);
		if (isinf(end) && isinf(w))
			break;
		if (w < end) {
			ATF_REQUIRE_MSG(w > h->now, "wake-up %.9g not after now %.9g",
			    w, h->now);
			h->now = w;
			(*wakeups)++;
		} else
			h_step(h);
		h_check(h);
	}
	return steps;
}

static void add_n(h_t *h, int n, const char *dest, char label)
{
	for (int i = 0; i < n; i++)
		h_add(h, label, 1, label == 'b' ? "relay" : "smtp", dest);
}

/* A destination limited to 10/m with burst 2 (transport smtp) next to an
 * unlimited one (transport relay, the same process pool is not shared):
 * the limited one's deliveries start at 0, 0, 6, 12, 18, 24 (a timer
 * each time, no polling); the other's all at once; nothing deferred. */
/* A harness with transport smtp limited to rate/burst (and relay
 * without limits). */
static void limited_setup(h_t *h, const char *rate, const char *burst)
{
	sched_tparams_t tp;
	str_t err = STR_INIT;

	nstarts_a = 0;
	h_init(h, NULL);
	sched_tparams_init(&tp, "smtp");
	ATF_REQUIRE(sched_tparams_set(&tp, "destination_message_rate", rate, &err));
	ATF_REQUIRE(sched_tparams_set(&tp, "destination_message_burst", burst, &err));
	h_transport(h, "smtp", &tp);
	sched_tparams_init(&tp, "relay");
	h_transport(h, "relay", &tp);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(core_holds_and_wakes);
ATF_TC_BODY(core_holds_and_wakes, tc)
{
	h_t h;
	sched_queue_info_t qi;
	int wakeups = 0;
	static const double want[] = { 0, 0, 6, 12, 18, 24 };

	limited_setup(&h, "10/m", "2");
	add_n(&h, 6, "a.example", 'a');
	add_n(&h, 5, "b.example", 'b');
	h_dispatch(&h);
	rec_selected(&h);
	/* Two of a, five of b (its initial window) at t=0; the next token of
	 * a is due at 6. */
	ATF_CHECK_EQ(h.nfl, 7);
	CHECK_NEAR(sched_next_wakeup(h.s), 6);
	ATF_REQUIRE(sched_queue_lookup(h.s, "smtp", "a.example", &qi));
	ATF_CHECK(qi.limited);
	ATF_CHECK_EQ(qi.todo_entries, 4);
	CHECK_NEAR(tb_tokens(&qi.msg_bucket, 0), 0);
	CHECK_NEAR(tb_tokens(&qi.msg_bucket, 3), 0.5);
	ATF_CHECK(qi.rate_held > 0);
	ATF_REQUIRE(sched_queue_lookup(h.s, "relay", "b.example", &qi));
	ATF_CHECK(!qi.limited);

	run_timed(&h, 1000, &wakeups);
	ATF_CHECK_EQ(nstarts_a, 6);
	for (int i = 0; i < nstarts_a && i < 6; i++)
		ATF_CHECK_MSG(near(starts_a[i], want[i]),
		    "delivery %d to a started at %.9g, expected %.9g", i + 1,
		    starts_a[i], want[i]);
	ATF_CHECK_EQ(wakeups >= 4, true);
	for (int i = 0; i < h.nmsgs; i++) {
		ATF_CHECK_EQ(h.msgs[i].sent, 1);
		ATF_CHECK_EQ(h.msgs[i].deferred, 0);
		ATF_CHECK(h.msgs[i].res.status == SCHED_MSG_DONE);
	}
	/* Every b done at t=1, the last a at 25. */
	for (int i = 6; i < 11; i++)
		CHECK_NEAR(h.msgs[i].done_time, 1);
	CHECK_NEAR(h.msgs[5].done_time, 25);
	/* The empty limited queue stayed until its bucket was full again
	 * (2 tokens at 10/m: 12 s after the last take at 24), then went. */
	CHECK_NEAR(h.now, 36);
	ATF_CHECK(!sched_queue_lookup(h.s, "smtp", "a.example", &qi));
	h_free(&h);
}

/* A message arriving while the bucket refills does not get a fresh
 * bucket: the queue outlives its mail. */
ATF_TC_WITHOUT_HEAD(core_bucket_outlives_mail);
ATF_TC_BODY(core_bucket_outlives_mail, tc)
{
	h_t h;
	sched_queue_info_t qi;
	int wakeups = 0;

	limited_setup(&h, "1/m", "1");
	add_n(&h, 1, "a.example", 'a');
	h_run_until(&h, 10);
	ATF_CHECK(h.msgs[0].done);
	ATF_REQUIRE_MSG(sched_queue_lookup(h.s, "smtp", "a.example", &qi),
	    "the empty limited queue was freed");
	ATF_CHECK_EQ(qi.todo_entries + qi.busy_entries, 0);
	CHECK_NEAR(tb_tokens(&qi.msg_bucket, 10), 10.0 / 60);
	add_n(&h, 1, "a.example", 'a');
	run_timed(&h, 100, &wakeups);
	ATF_CHECK_EQ(nstarts_a, 2);
	CHECK_NEAR(starts_a[1], 60);
	ATF_CHECK_EQ(h.msgs[1].deferred, 0);
	h_free(&h);
}

/* Per destination limits from the driver (a rate table), a connection
 * rate by the conservative rule, and no cost for a transport without
 * limits: no wake-up at all. */
static void dl_cb(void *ctx, const char *transport, const char *nexthop,
    sched_limits_t *lim)
{
	(void)ctx;
	(void)transport;
	if (strcmp(nexthop, "a.example") == 0)
		ATF_REQUIRE(sched_limits_parse("connections=1/s connection_burst=1",
		    lim, lim, NULL));
}

ATF_TC_WITHOUT_HEAD(core_dest_limits);
ATF_TC_BODY(core_dest_limits, tc)
{
	h_t h;
	sched_driver_t drv = { 0 };
	sched_tparams_t tp;
	int wakeups = 0;

	nstarts_a = 0;
	memset(&h, 0, sizeof(h));
	sched_params_init(&h.sp);
	drv.ctx = &h;
	drv.read_more = h_read_more;
	drv.rcpt_done = h_rcpt_done;
	drv.msg_done = h_msg_done;
	drv.selected = h_selected;
	drv.dest_limits = dl_cb;
	h.s = sched_new(&h.sp, &drv);
	h.service = h_default_service;
	sched_tparams_init(&tp, "smtp");
	tp.dest_limits = true;
	h_transport(&h, "smtp", &tp);
	sched_tparams_init(&tp, "relay");
	tp.dest_limits = true;
	h_transport(&h, "relay", &tp);
	add_n(&h, 3, "a.example", 'a');
	add_n(&h, 3, "b.example", 'b');
	run_timed(&h, 1000, &wakeups);
	ATF_CHECK_EQ(nstarts_a, 3);
	CHECK_NEAR(starts_a[0], 0);
	CHECK_NEAR(starts_a[1], 1);
	CHECK_NEAR(starts_a[2], 2);
	for (int i = 3; i < 6; i++)
		CHECK_NEAR(h.msgs[i].done_time, 1);
	h_free(&h);

	/* Without limits: no timer, and the queue is freed when empty. */
	h_init(&h, NULL);
	sched_tparams_init(&tp, "smtp");
	h_transport(&h, "smtp", &tp);
	add_n(&h, 3, "a.example", 'a');
	h_dispatch(&h);
	ATF_CHECK(isinf(sched_next_wakeup(h.s)));
	h_run(&h, 100);
	{
		sched_queue_info_t qi;
		ATF_CHECK(!sched_queue_lookup(h.s, "smtp", "a.example", &qi));
	}
	h_free(&h);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, rate_parse);
	ATF_TP_ADD_TC(tp, rate_format);
	ATF_TP_ADD_TC(tp, bucket);
	ATF_TP_ADD_TC(tp, limits_parse);
	ATF_TP_ADD_TC(tp, core_holds_and_wakes);
	ATF_TP_ADD_TC(tp, core_bucket_outlives_mail);
	ATF_TP_ADD_TC(tp, core_dest_limits);
	return atf_no_error();
}
