/* The scheduler core's administrative hooks used by qmgr's control
 * channel (libsched/sched_admin.c): stopping one message's pass, suspending
 * and resuming a destination. */
#include "t_sched_harness.h"

static void tparams(sched_tparams_t *tp, int procs, int rcpt_limit)
{
	sched_tparams_init(tp, "smtp");
	tp->process_limit = procs;
	tp->destination_recipient_limit = rcpt_limit;
}

ATF_TC_WITHOUT_HEAD(stop_pending);
ATF_TC_BODY(stop_pending, tc)
{
	h_t h;
	sched_tparams_t tp;
	h_msg_t *a, *b;

	h_init(&h, NULL);
	tparams(&tp, 1, 1);
	h_transport(&h, "smtp", &tp);
	a = h_add(&h, 'a', 10, "smtp", "a.example");
	b = h_add(&h, 'b', 3, "smtp", "b.example");
	ATF_REQUIRE_EQ(h_dispatch(&h), 1);	/* one of a in flight */
	ATF_REQUIRE(sched_msg_find(h.s, a->id) != NULL);
	ATF_REQUIRE(!sched_msg_stopped(sched_msg_find(h.s, a->id)));

	ATF_REQUIRE(sched_msg_stop(h.s, a->id, "message deleted by test", h.now));
	/* The 9 pending went back at once; the one in flight finishes. */
	ATF_REQUIRE_EQ(a->deferred, 9);
	ATF_REQUIRE_STREQ(h.last_defer_reason, "message deleted by test");
	ATF_REQUIRE(!a->done);
	ATF_REQUIRE(sched_msg_stopped(sched_msg_find(h.s, a->id)));
	h_check(&h);
	/* Stopping again changes nothing. */
	ATF_REQUIRE(sched_msg_stop(h.s, a->id, "again", h.now));
	ATF_REQUIRE_EQ(a->deferred, 9);

	h_run(&h, 1000);
	ATF_REQUIRE(a->done);
	ATF_REQUIRE_EQ(a->sent, 1);
	ATF_REQUIRE_EQ(a->res.status, SCHED_MSG_DEFERRED);
	/* The other message is not affected. */
	ATF_REQUIRE(b->done);
	ATF_REQUIRE_EQ(b->sent, 3);
	ATF_REQUIRE_EQ(b->deferred, 0);
	ATF_REQUIRE(sched_msg_find(h.s, a->id) == NULL);
	ATF_REQUIRE(!sched_msg_stop(h.s, a->id, "gone", h.now));
	ATF_REQUIRE(!sched_msg_stop(h.s, "NOSUCH", "x", h.now));
	h_free(&h);
}

/* A message read in batches: the unread rest is deferred too, and with
 * nothing in flight the pass ends inside the call. */
ATF_TC_WITHOUT_HEAD(stop_unread);
ATF_TC_BODY(stop_unread, tc)
{
	h_t h;
	sched_params_t sp;
	sched_tparams_t tp;
	h_msg_t *a;

	sched_params_init(&sp);
	sp.message_recipient_limit = 40;
	sp.message_recipient_minimum = 10;
	h_init(&h, &sp);
	tparams(&tp, 5, 5);
	tp.recipient_limit = 40;
	h_transport(&h, "smtp", &tp);
	a = h_add(&h, 'a', 1000, "smtp", "a.example");
	ATF_REQUIRE(a->next < 1000);		/* only part read */
	ATF_REQUIRE(sched_msg_stop(h.s, a->id, NULL, h.now));
	ATF_REQUIRE(a->done);
	ATF_REQUIRE_EQ(a->next, 1000);
	ATF_REQUIRE_EQ(a->deferred, 1000);
	ATF_REQUIRE_STREQ(h.last_defer_reason, "delivery stopped by administrator");
	ATF_REQUIRE_EQ(a->res.status, SCHED_MSG_DEFERRED);
	h_check(&h);
	h_free(&h);
}

/* Stopping a message with several destinations and a preempting job. */
ATF_TC_WITHOUT_HEAD(stop_multi);
ATF_TC_BODY(stop_multi, tc)
{
	h_t h;
	sched_tparams_t tp;
	sched_msg_desc_t d = { 0 };
	h_msg_t *a, *b;

	h_init(&h, NULL);
	tparams(&tp, 2, 1);
	h_transport(&h, "smtp", &tp);
	a = &h.msgs[h.nmsgs++];
	a->label = 'a';
	snprintf(a->id, sizeof(a->id), "MA");
	a->n = 30;
	a->dests[0] = "x.example";
	a->dests[1] = "y.example";
	a->dests[2] = "z.example";
	a->ndests = 3;
	a->transport = "smtp";
	d.id = a->id;
	d.recipients = 30;
	d.ctx = a;
	sched_msg_add(h.s, &d, h.now);
	h_dispatch(&h);
	b = h_add(&h, 'b', 2, "smtp", "x.example");
	h_step(&h);
	h_dispatch(&h);
	ATF_REQUIRE(sched_msg_stop(h.s, "MA", "held", h.now));
	h_check(&h);
	h_run(&h, 1000);
	ATF_REQUIRE(a->done && b->done);
	ATF_REQUIRE_EQ(a->sent + a->deferred, 30);
	ATF_REQUIRE(a->deferred >= 26);
	ATF_REQUIRE_EQ(b->sent, 2);
	h_free(&h);
}

static void count_held(const sched_hold_info_t *hi, void *ctx)
{
	str_t *s = ctx;
	str_catf(s, "%s=%s;", hi->nexthop, hi->text);
}

ATF_TC_WITHOUT_HEAD(suspend_resume);
ATF_TC_BODY(suspend_resume, tc)
{
	h_t h;
	sched_tparams_t tp;
	h_msg_t *a, *b, *c, *d;
	str_t s = STR_INIT;

	h_init(&h, NULL);
	tparams(&tp, 1, 1);
	h_transport(&h, "smtp", &tp);
	h_transport(&h, "relay", &tp);
	a = h_add(&h, 'a', 5, "smtp", "a.example");
	b = h_add(&h, 'b', 5, "smtp", "b.example");
	c = h_add(&h, 'c', 2, "relay", "a.example");
	ATF_REQUIRE(!sched_dest_suspend(h.s, "", NULL, h.now));
	ATF_REQUIRE_EQ(h_dispatch(&h), 2);	/* a in smtp, c in relay */
	ATF_REQUIRE(sched_dest_suspend(h.s, "A.Example", NULL, h.now));
	ATF_REQUIRE_EQ(sched_suspended_count(h.s), 1);
	ATF_REQUIRE_STREQ(sched_dest_suspended(h.s, "a.example"),
	    "delivery suspended by administrator");
	ATF_REQUIRE(sched_dest_suspended(h.s, "b.example") == NULL);
	/* Pending mail of a.example, both transports, went back. */
	ATF_REQUIRE_EQ(a->deferred, 4);
	ATF_REQUIRE_EQ(c->deferred, 1);
	ATF_REQUIRE_STREQ(h.last_defer_reason, "delivery suspended by administrator");
	h_check(&h);
	/* New mail for it goes back at once; other mail flows. */
	d = h_add(&h, 'd', 3, "smtp", "a.example");
	ATF_REQUIRE(d->done);
	ATF_REQUIRE_EQ(d->deferred, 3);
	ATF_REQUIRE_EQ(d->res.status, SCHED_MSG_DEFERRED);
	h_run(&h, 1000);
	ATF_REQUIRE(a->done && b->done && c->done);
	ATF_REQUIRE_EQ(a->sent, 1);		/* the one in flight */
	ATF_REQUIRE_EQ(c->sent, 1);
	ATF_REQUIRE_EQ(b->sent, 5);
	ATF_REQUIRE(strchr(h.hops, 'b') != NULL);

	/* A reason; the walk. */
	ATF_REQUIRE(sched_dest_suspend(h.s, "a.example", "maintenance", h.now));
	ATF_REQUIRE_EQ(sched_suspended_count(h.s), 1);
	sched_walk_suspended(h.s, count_held, &s);
	ATF_REQUIRE_STREQ(str_cstr(&s),
	    "A.Example=delivery suspended by administrator: maintenance;");

	/* Resumed: mail flows again. */
	ATF_REQUIRE(sched_dest_resume(h.s, "a.EXAMPLE", h.now));
	ATF_REQUIRE(!sched_dest_resume(h.s, "a.example", h.now));
	ATF_REQUIRE_EQ(sched_suspended_count(h.s), 0);
	d = h_add(&h, 'e', 3, "smtp", "a.example");
	h_run(&h, 1000);
	ATF_REQUIRE(d->done);
	ATF_REQUIRE_EQ(d->sent, 3);
	ATF_REQUIRE_EQ(d->deferred, 0);
	str_release(&s);
	h_free(&h);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, stop_pending);
	ATF_TP_ADD_TC(tp, stop_unread);
	ATF_TP_ADD_TC(tp, stop_multi);
	ATF_TP_ADD_TC(tp, suspend_resume);
	return atf_no_error();
}
