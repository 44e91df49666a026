/* Delivery order of the preemptive scheduler (doc/scheduling-rules.md §3):
 * the two worked sequences, and sequences of our own for recursive
 * preemption, blockers, and a parent completing before its children.
 * One character of the order string = one selected entry = one delivery
 * slot, labelled with its message. */
#include "t_sched_harness.h"

/* One transport, one destination, one delivery at a time, one recipient
 * per entry (so one recipient = one slot), slot cost 2. */
static void seq_params(sched_tparams_t *tp, int loan, int discount)
{
	sched_tparams_init(tp, "smtp");
	tp->process_limit = 1;
	tp->destination_recipient_limit = 1;
	tp->delivery_slot_cost = 2;
	tp->delivery_slot_loan = loan;
	tp->delivery_slot_discount = discount;
	tp->minimum_delivery_slots = 3;
}

static void run_10_2_2(int loan, int discount, char *out, size_t size)
{
	h_t h;
	sched_tparams_t tp;
	h_init(&h, NULL);
	seq_params(&tp, loan, discount);
	h_transport(&h, "smtp", &tp);
	h_add(&h, '1', 10, "smtp", "d.example");
	h_add(&h, '2', 2, "smtp", "d.example");
	h_add(&h, '3', 2, "smtp", "d.example");
	h_run(&h, 1000);
	bcopy_str(out, size, h.order);
	for (int i = 0; i < h.nmsgs; i++) {
		ATF_CHECK(h.msgs[i].done);
		ATF_CHECK_EQ(h.msgs[i].sent, h.msgs[i].n);
		ATF_CHECK_EQ(h.msgs[i].res.status, SCHED_MSG_DONE);
	}
	h_free(&h);
}

ATF_TC_WITHOUT_HEAD(seq_no_loan);
ATF_TC_BODY(seq_no_loan, tc)
{
	char o[64];
	run_10_2_2(0, 0, o, sizeof(o));
	ATF_CHECK_STREQ(o, "11112211113311");
}

/* "Wait for only 50% of the slots": discount 50 without a loan, or a
 * loan of 1 slot without a discount, give the same order here. */
ATF_TC_WITHOUT_HEAD(seq_loan);
ATF_TC_BODY(seq_loan, tc)
{
	char o[64];
	run_10_2_2(0, 50, o, sizeof(o));
	ATF_CHECK_STREQ(o, "11221111331111");
	run_10_2_2(1, 0, o, sizeof(o));
	ATF_CHECK_STREQ(o, "11221111331111");
}

/* The defaults (loan 3, discount 50) preempt as soon as a slot exists;
 * slot cost 1 (or 0) disables preemption: plain FIFO. */
ATF_TC_WITHOUT_HEAD(seq_defaults_and_disabled);
ATF_TC_BODY(seq_defaults_and_disabled, tc)
{
	char o[64];
	run_10_2_2(3, 50, o, sizeof(o));
	ATF_CHECK_STREQ(o, "12211113311111");
	{
		h_t h;
		sched_tparams_t tp;
		h_init(&h, NULL);
		seq_params(&tp, 3, 50);
		tp.delivery_slot_cost = 1;
		h_transport(&h, "smtp", &tp);
		h_add(&h, '1', 10, "smtp", "d.example");
		h_add(&h, '2', 2, "smtp", "d.example");
		h_add(&h, '3', 2, "smtp", "d.example");
		h_run(&h, 1000);
		ATF_CHECK_STREQ(h.order, "11111111112233");
		h_free(&h);
	}
}

/* Window 1 per destination, min slots 1 (so mid-size jobs can be
 * preempted too), no loan or discount, slot cost 2. */
static void tree_params(sched_tparams_t *tp, int process_limit)
{
	seq_params(tp, 0, 0);
	tp->process_limit = process_limit;
	tp->minimum_delivery_slots = 1;
	tp->conc.initial_concurrency = 1;
	tp->conc.concurrency_limit = 1;
}

static double slow_c(h_t *h, const char *dest)
{
	(void)h;
	return strcmp(dest, "c.example") == 0 ? 100 : 1;
}

/* Recursive preemption: 2 (6 entries) preempts 1 (20) once 1 has 12
 * slots; 3 (1 entry) arrives while 2 runs and preempts 2 after 2 has
 * earned 2 slots, at level 2.  Then 2 finishes (its parent 1 pays
 * nothing extra: it used exactly what it was charged), then 1. */
ATF_TC_WITHOUT_HEAD(seq_recursive);
ATF_TC_BODY(seq_recursive, tc)
{
	h_t h;
	sched_tparams_t tp;
	char jobs[256];

	h_init(&h, NULL);
	seq_params(&tp, 0, 0);
	tp.minimum_delivery_slots = 1;
	h_transport(&h, "smtp", &tp);
	h_add(&h, '1', 20, "smtp", "d.example");
	h_add(&h, '2', 6, "smtp", "d.example");
	h_run_until(&h, 13);
	ATF_CHECK_STREQ(h.order, "1111111111112");
	ATF_CHECK_STREQ(h_jobs(&h, "smtp", jobs, sizeof(jobs)), "2/1/1,1/0/-");
	h_add(&h, '3', 1, "smtp", "d.example");
	ATF_CHECK_STREQ(h_jobs(&h, "smtp", jobs, sizeof(jobs)), "2/1/1,1/0/-,3/0/-");
	h_run(&h, 1000);
	ATF_CHECK_STREQ(h.order, "111111111111223222211111111");
	ATF_CHECK_EQ(h.msgs_done, 3);
	h_free(&h);
}

/* Blockers: 1 and 2 go to a.example, 3 to b.example, window 1 each, two
 * agents.  1 and 2 are skipped while a.example is busy, 3 goes ahead;
 * per destination the order stays FIFO (a: 1 1 1 2 2). */
ATF_TC_WITHOUT_HEAD(seq_blockers);
ATF_TC_BODY(seq_blockers, tc)
{
	h_t h;
	sched_tparams_t tp;
	char jobs[256];

	h_init(&h, NULL);
	tree_params(&tp, 3);
	tp.delivery_slot_cost = 2;
	tp.minimum_delivery_slots = 3;
	h_transport(&h, "smtp", &tp);
	h_add(&h, '1', 3, "smtp", "a.example");
	h_add(&h, '2', 2, "smtp", "a.example");
	h_add(&h, '3', 2, "smtp", "b.example");
	h_dispatch(&h);
	ATF_CHECK_STREQ(h.order, "13");
	ATF_CHECK_STREQ(h_jobs(&h, "smtp", jobs, sizeof(jobs)),
	    "1/0/-b,2/0/-b,3/0/-b");
	h_run(&h, 1000);
	ATF_CHECK_STREQ(h.order, "1313122");
	ATF_CHECK_EQ(h.msgs_done, 3);
	h_free(&h);
}

/* A parent completing before its children, with adoption.  0 holds the
 * slow c.example (window 1) for 100s.  2 preempts 1 at t=12; 3 (for
 * c.example) arrives at 12.5 and preempts 2 at t=14 but is blocked at
 * once, so 2 goes on and completes first: 3 is adopted by 1.  1 then
 * completes before 3 too: 3 is an orphan, delivered when c.example frees
 * up. */
ATF_TC_WITHOUT_HEAD(seq_parent_first);
ATF_TC_BODY(seq_parent_first, tc)
{
	h_t h;
	sched_tparams_t tp;
	char jobs[256];

	h_init(&h, NULL);
	tree_params(&tp, 2);
	h_transport(&h, "smtp", &tp);
	h.service = slow_c;
	h_add(&h, '0', 1, "smtp", "c.example");
	h_add(&h, '1', 20, "smtp", "a.example");
	h_add(&h, '2', 6, "smtp", "a.example");
	h_run_until(&h, 12.5);
	ATF_CHECK_STREQ(h.order, "01111111111112");
	h_add(&h, '3', 1, "smtp", "c.example");
	h_run_until(&h, 14.5);
	ATF_CHECK_STREQ(h.order, "0111111111111222");
	ATF_CHECK_STREQ(h_jobs(&h, "smtp", jobs, sizeof(jobs)),
	    "3/2/2b,2/1/1,1/0/-");
	h_run_until(&h, 17.5);
	ATF_CHECK_STREQ(h_jobs(&h, "smtp", jobs, sizeof(jobs)), "3/2/1b,1/0/-");
	h_run_until(&h, 50);
	ATF_CHECK_STREQ(h.order, "011111111111122222211111111");
	ATF_CHECK_STREQ(h_jobs(&h, "smtp", jobs, sizeof(jobs)), "3/2/-b");
	h_run(&h, 1000);
	ATF_CHECK_STREQ(h.order, "0111111111111222222111111113");
	ATF_CHECK_EQ(h.msgs_done, 4);
	h_free(&h);
}

/* The candidate cache holds "no candidate" for the current job while it
 * runs alone; a new job on the list must drop it: the next selection
 * preempts at once (defaults: loan 3, discount 50). */
ATF_TC_WITHOUT_HEAD(seq_cache_dropped);
ATF_TC_BODY(seq_cache_dropped, tc)
{
	h_t h;
	sched_tparams_t tp;
	h_init(&h, NULL);
	seq_params(&tp, 3, 50);
	h_transport(&h, "smtp", &tp);
	h_add(&h, '1', 10, "smtp", "d.example");
	h_run_until(&h, 3.5);
	ATF_CHECK_STREQ(h.order, "1111");
	h_add(&h, 's', 1, "smtp", "d.example");
	h_run(&h, 1000);
	ATF_CHECK_STREQ(h.order, "1111s111111");
	h_free(&h);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, seq_no_loan);
	ATF_TP_ADD_TC(tp, seq_loan);
	ATF_TP_ADD_TC(tp, seq_defaults_and_disabled);
	ATF_TP_ADD_TC(tp, seq_recursive);
	ATF_TP_ADD_TC(tp, seq_blockers);
	ATF_TP_ADD_TC(tp, seq_parent_first);
	ATF_TP_ADD_TC(tp, seq_cache_dropped);
	return atf_no_error();
}
