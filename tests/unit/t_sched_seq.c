/* Delivery order of the preemptive scheduler (SCHEDULER.md section 3):
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

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, seq_no_loan);
	ATF_TP_ADD_TC(tp, seq_loan);
	ATF_TP_ADD_TC(tp, seq_defaults_and_disabled);
	return atf_no_error();
}
