/* The queue manager's scheduler core.  The rules it applies are stated
 * in doc/scheduling-rules.md: the job list and preemption (sections 2, 3),
 * dead destinations (5), memory limits (8), rate shaping (9) here, with
 * the concurrency feedback (4) from feedback.h, the destination status
 * cache (6) from dsc.h and the back-off functions (7) from backoff.h.
 *
 * Pure logic: no sockets, no disk, no clock of its own.  TIME UNIT: every
 * call takes 'now', a double in seconds (a virtual clock in tests and in
 * qmgr-sim, a real clock in the qmgr daemon); 'now' must never go back.
 *
 * Data model (doc/scheduling-rules.md §2.1): a transport (smtp, relay, local,
 * ...) owns destination queues (transport x nexthop) and jobs (message x
 * transport).  A peer is job x queue; it holds the entries of one message
 * for one destination.  An entry is a batch of at most
 * destination_recipient_limit recipients of one message for one queue.
 *
 * The driver (the qmgr daemon, qmgr-sim, unit tests) does this:
 *
 *   s = sched_new(&params, &driver);
 *   sched_transport_add(s, "smtp", &tparams);       once per transport
 *   m = sched_msg_add(s, &desc, now);      the core calls driver.read_more
 *                                          to pull recipients, now and
 *                                          whenever memory allows more
 *   while ((e = sched_select(s, now)) != NULL)
 *       hand e (transport, nexthop, recipients) to a delivery agent;
 *   ... when the agent reports:
 *   sched_delivery_done(s, e, results, flags, reason, now);
 *   ... and at sched_next_wakeup(s) (rate delays) call sched_select again.
 *
 * The core reports every recipient's final outcome of this pass through
 * the active queue (driver.rcpt_done: sent, bounced, or deferred with a
 * reason) and the end of each message (driver.msg_done: all done, or
 * deferred with the next retry time from the back-off function, or
 * expired).  Callbacks may be invoked from inside any sched_* call except
 * the inspection functions; a callback must not call back into the core,
 * except read_more which calls sched_msg_offer().  A message handle is
 * invalid after its msg_done callback returns.
 *
 * Memory (doc/scheduling-rules.md §8): recipients in memory are bounded
 * globally (qmgr_message_recipient_limit) and per transport (recipient_limit,
 * plus extra_recipient_limit for jobs that preempt); a message is read in
 * batches through read_more, and every message may always hold
 * qmgr_message_recipient_minimum recipients so that small messages can be
 * read (and preempt) while a bulk message fills the pools.
 *
 * Complexity: selection, delivery completion and recipient assignment are
 * O(log n) amortised (heaps of runnable jobs and of blocked peers, hash
 * lookups, intrusive lists), except the preemption candidate search (a scan
 * of the job list after the current job, bounded by
 * SCHED_CANDIDATE_SCAN_MAX jobs and cached) and the round-robin over a
 * job's peers (bounded by the peers that have pending entries).
 * doc/scheduler.md has the design and every decision. */
#ifndef PETREL_QMGR_SCHED_H
#define PETREL_QMGR_SCHED_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "str.h"
#include "backoff.h"
#include "feedback.h"
#include "dsc.h"
#include "tbucket.h"

typedef struct sched sched_t;
typedef struct sched_transport sched_transport_t;
typedef struct sched_queue sched_queue_t;
typedef struct sched_msg sched_msg_t;
typedef struct sched_job sched_job_t;
typedef struct sched_peer sched_peer_t;
typedef struct sched_entry sched_entry_t;

/* At most this many jobs after the current one are scanned for a
 * preemption candidate (Postfix scans without a bound). */
#define SCHED_CANDIDATE_SCAN_MAX	1000
/* A positive candidate search result is reused for this long (Postfix:
 * within the same second); a negative one until the current job or the
 * job list changes. */
#define SCHED_CANDIDATE_CACHE_TTL	1.0

/* Rate limits of one destination queue (doc/scheduling-rules.md §9):
 * two token buckets (tbucket.h) and a reuse count for the agent. */
typedef struct sched_limits {
	double msg_rate;		/* deliveries per second; 0 = no limit */
	double msg_burst;		/* bucket size, >= 1 */
	double conn_rate;		/* connections per second; 0 = no limit */
	double conn_burst;		/* bucket size, >= 1 */
	long msgs_per_conn;		/* deliveries per connection; 0 = no limit */
} sched_limits_t;

/* No limits, bursts 1. */
void sched_limits_init(sched_limits_t *l);
/* Any limit set? */
bool sched_limits_any(const sched_limits_t *l);
/* A rate table value: blank-separated words messages=RATE, burst=N,
 * connections=RATE, connection_burst=N, messages_per_connection=N (RATE
 * as tb_rate_parse, N an integer >= 1, or >= 0 for
 * messages_per_connection).  *out starts as a copy of *base; the words
 * given replace its fields.  False with a one-line reason in err (and
 * *out undefined) on any error, including an empty value. */
bool sched_limits_parse(const char *text, const sched_limits_t *base,
    sched_limits_t *out, str_t *err);
/* The same words, canonical ("messages=500/h burst=20"), only the limits
 * that are set; "none" without any.  Returns str_cstr(out). */
const char *sched_limits_format(const sched_limits_t *l, str_t *out);

/* Per-transport settings (main.cf default_X / TRANSPORT_X; process_limit
 * comes from master.cf). */
typedef struct sched_tparams {
	int process_limit;		/* deliveries in flight, default 100 */
	int delivery_slot_cost;		/* default 5; < 2 disables preemption */
	int delivery_slot_loan;		/* default 3 */
	int delivery_slot_discount;	/* percent, default 50 */
	int minimum_delivery_slots;	/* default 3 */
	int destination_recipient_limit; /* default 50 (local: 1) */
	long recipient_limit;		/* in-memory recipients, default 20000 */
	long extra_recipient_limit;	/* more for preempting jobs, default 1000 */
	long recipient_refill_limit;	/* read a batch when this much room, 100 */
	double recipient_refill_delay;	/* or when this long since the last, 5s */
	feedback_settings_t conc;	/* concurrency feedback (feedback.h) */
	sched_limits_t limits;		/* rate limits of every destination */
	/* Ask driver.dest_limits for each new destination queue of this
	 * transport (it has a rate table). */
	bool dest_limits;
	int destination_grouping;	/* SCHED_GROUP_*: how the driver keys
					 * this transport's queues (the core
					 * only reports it) */
} sched_tparams_t;

/* destination_grouping: queues keyed by nexthop, or by the set of the
 * nexthop's MX hosts (doc/scheduler.md section 11). */
enum { SCHED_GROUP_DOMAIN = 0, SCHED_GROUP_MX = 1 };
/* "domain" or "mx" (any case) to SCHED_GROUP_*; -1 for anything else. */
int sched_grouping_parse(const char *value);
const char *sched_grouping_str(int grouping);

/* Defaults for a transport called 'name' (for "local": recipient limit 1
 * per entry and concurrency limit 2: doc/scheduling-rules.md §2.1, §4.1). */
void sched_tparams_init(sched_tparams_t *p, const char *name);
/* Set one parameter by its main.cf name without the transport prefix
 * ("delivery_slot_cost", "destination_concurrency_limit",
 * "initial_destination_concurrency", "destination_rate_delay", ...; a
 * "default_" prefix is accepted too).  Times take s/m/h/d/w units.
 * Returns false with a one-line reason in err for an unknown name or a
 * bad value. */
bool sched_tparams_set(sched_tparams_t *p, const char *name,
    const char *value, str_t *err);
bool sched_tparams_check(const sched_tparams_t *p, str_t *err);

/* Global settings. */
typedef struct sched_params {
	long message_recipient_limit;	/* qmgr_message_recipient_limit, 20000 */
	long message_recipient_minimum;	/* qmgr_message_recipient_minimum, 10 */
	size_t dsc_limit;		/* destination_status_cache_limit */
	backoff_params_t backoff;	/* back-off, lifetimes (backoff.h) */
} sched_params_t;

void sched_params_init(sched_params_t *p);
/* qmgr_message_recipient_limit, qmgr_message_recipient_minimum,
 * destination_status_cache_limit, backoff_function, minimal_backoff_time,
 * maximal_backoff_time, backoff_retry_count, backoff_jitter,
 * maximal_queue_lifetime, bounce_queue_lifetime. */
bool sched_params_set(sched_params_t *p, const char *name,
    const char *value, str_t *err);
bool sched_params_check(const sched_params_t *p, str_t *err);

/* "300", "300s", "5m", "1.5h", "2d", "1w" -> seconds. */
bool sched_parse_time(const char *text, double *out);

/* The driver's handle on one of its recipients: the core keeps it with
 * the recipient and hands it back (rcpt_done, sched_entry_rcpt), never
 * looking inside.  A driver that keeps a record per recipient passes a
 * pointer to it: struct sched_drv_rcpt is declared here and defined by
 * that driver alone (qmgr: its qmgr_rcpt_t), so the pointer comes back
 * typed, without casts.  A driver that numbers its recipients passes the
 * number (qmgr-sim, the tests). */
struct sched_drv_rcpt;
typedef union sched_cookie {
	struct sched_drv_rcpt *rcpt;
	uint64_t index;
} sched_cookie_t;

/* One recipient as the core keeps it. */
typedef struct sched_rcpt {
	char *addr;			/* the address (copied) */
	sched_cookie_t cookie;		/* the driver's handle */
} sched_rcpt_t;

typedef enum sched_rcpt_status {
	SCHED_RCPT_SENT = 0,
	SCHED_RCPT_DEFERRED,
	SCHED_RCPT_BOUNCED,
} sched_rcpt_status_t;

typedef enum sched_msg_status {
	SCHED_MSG_DONE = 0,		/* every recipient sent or bounced */
	SCHED_MSG_DEFERRED,		/* some deferred: retry at retry_time */
	SCHED_MSG_EXPIRED,		/* some deferred and the queue lifetime
					 * is over: return them as undeliverable */
} sched_msg_status_t;

typedef struct sched_msg_result {
	sched_msg_status_t status;
	double retry_time;		/* for SCHED_MSG_DEFERRED */
	int attempt;			/* this attempt, 1-based */
	unsigned long sent, bounced, deferred;	/* recipients, this pass */
} sched_msg_result_t;

/* The driver's callbacks. */
typedef struct sched_driver {
	void *ctx;
	/* Offer more recipients of msg with sched_msg_offer() until it returns
	 * false (no room: keep that recipient for the next call) or none are
	 * left; return how many are still unread (an estimate is fine, but 0
	 * exactly when all were offered).  Not called for messages added with
	 * an array of recipients; required otherwise. */
	size_t (*read_more)(void *ctx, sched_msg_t *msg, double now);
	/* The outcome of one recipient (may be NULL). */
	void (*rcpt_done)(void *ctx, sched_msg_t *msg, const sched_rcpt_t *rcpt,
	    sched_rcpt_status_t status, const char *reason, double now);
	/* The end of a message's pass through the active queue (required).
	 * The message handle dies when this returns. */
	void (*msg_done)(void *ctx, sched_msg_t *msg,
	    const sched_msg_result_t *res, double now);
	/* An entry was selected (may be NULL; for tracing). */
	void (*selected)(void *ctx, const sched_entry_t *e, double now);
	/* Rate limits of a new destination queue of a transport whose
	 * parameters have dest_limits set: *lim holds the transport's limits
	 * and may be changed (may be NULL). */
	void (*dest_limits)(void *ctx, const char *transport,
	    const char *nexthop, sched_limits_t *lim);
} sched_driver_t;

sched_t *sched_new(const sched_params_t *p, const sched_driver_t *drv);
/* Frees everything; messages still in the core are dropped silently. */
void sched_free(sched_t *s);

/* Declare a transport (before messages use it).  NULL with a reason in
 * err if the name exists or the parameters are bad. */
sched_transport_t *sched_transport_add(sched_t *s, const char *name,
    const sched_tparams_t *p, str_t *err);
sched_transport_t *sched_transport_find(const sched_t *s, const char *name);

/* A resolved recipient, for messages given as an array. */
typedef struct sched_rcpt_spec {
	const char *transport;
	const char *nexthop;
	const char *addr;
	sched_cookie_t cookie;
} sched_rcpt_spec_t;

/* A message entering the active queue. */
typedef struct sched_msg_desc {
	const char *id;			/* queue id (copied) */
	double arrival;			/* first arrival: back-off age, lifetime */
	bool null_sender;		/* bounce_queue_lifetime applies */
	int attempts;			/* delivery attempts made before */
	size_t recipients;		/* recipients to offer (estimate) */
	void *ctx;			/* the driver's, see sched_msg_ctx() */
	/* Either the recipients as an array, which must stay valid until
	 * msg_done (the core reads it in batches like read_more would, and
	 * 'recipients' is ignored), or NULL: driver.read_more pulls them. */
	const sched_rcpt_spec_t *rcpts;
	size_t nrcpts;
} sched_msg_desc_t;

/* Adds the message (queued now: the FIFO position) and calls read_more
 * for the first batch.  May call msg_done before returning (e.g. every
 * recipient deferred at once for a suspended destination): then NULL is
 * returned. */
sched_msg_t *sched_msg_add(sched_t *s, const sched_msg_desc_t *d, double now);

/* From read_more only: one resolved recipient.  Returns true when the
 * recipient was taken (queued, or finished at once: deferred because the
 * destination is suspended in the DSC, or the transport is unknown, with
 * rcpt_done called), false when there is no room now (offer it again at
 * the next read_more). */
bool sched_msg_offer(sched_msg_t *m, const char *transport,
    const char *nexthop, const char *addr, sched_cookie_t cookie);
/* The same with a scheduling key (destination grouping, doc/scheduler.md
 * section 11): the recipient is queued in the transport's queue for key
 * (window, feedback, dead state, DSC entry), while its entry keeps
 * nexthop for the delivery agent.  key NULL or equal to nexthop is
 * sched_msg_offer. */
bool sched_msg_offer_key(sched_msg_t *m, const char *transport,
    const char *nexthop, const char *key, const char *addr,
    sched_cookie_t cookie);
/* From read_more only: the driver cannot offer the next recipient yet
 * (its scheduling key is being looked up).  The message keeps what was
 * offered, stays in the core, and is not read again until
 * sched_msg_resume; read_more returns the unread count as usual. */
void sched_msg_wait(sched_msg_t *m);
/* The driver can offer again: read the message's next batch now. */
void sched_msg_resume(sched_msg_t *m, double now);

const char *sched_msg_id(const sched_msg_t *m);
void *sched_msg_ctx(const sched_msg_t *m);
double sched_msg_queued(const sched_msg_t *m);
int sched_msg_attempts(const sched_msg_t *m);

/* Next entry to deliver: transports round-robin, skipping those at their
 * process limit (doc/scheduling-rules.md §2.3).  NULL if nothing can go
 * now. */
sched_entry_t *sched_select(sched_t *s, double now);
/* The same for one transport (a delivery agent of t is free). */
sched_entry_t *sched_select_transport(sched_t *s, sched_transport_t *t,
    double now);

const char *sched_entry_transport(const sched_entry_t *e);
const char *sched_entry_nexthop(const sched_entry_t *e);
sched_msg_t *sched_entry_msg(const sched_entry_t *e);
size_t sched_entry_count(const sched_entry_t *e);
const sched_rcpt_t *sched_entry_rcpt(const sched_entry_t *e, size_t i);
/* True if this delivery is the half-open probe of a DSC destination. */
bool sched_entry_is_probe(const sched_entry_t *e);
/* The rate limits of the entry's destination (messages_per_connection
 * goes to the agent). */
const sched_limits_t *sched_entry_limits(const sched_entry_t *e);

/* Delivery flags. */
enum {
	/* The delivery failed while connecting or in the handshake:
	 * negative concurrency feedback (doc/scheduling-rules.md §4.3). */
	SCHED_DLV_CONN_FAIL = 1,
	/* Avoid this destination as a whole: declare it dead now and enter
	 * it in the DSC with 'reason' (doc/scheduling-rules.md §5.1). */
	SCHED_DLV_SITE_FAIL = 2,
	/* No verdict about the destination (agent crashed, shutdown): no
	 * feedback. */
	SCHED_DLV_NO_FEEDBACK = 4,
};

typedef struct sched_rcpt_result {
	sched_rcpt_status_t status;
	const char *reason;		/* may be NULL */
} sched_rcpt_result_t;

/* The agent finished entry e: res[i] is the outcome of recipient i
 * (sched_entry_count(e) of them); res == NULL means every recipient
 * deferred with 'reason' if flags has CONN_FAIL, SITE_FAIL or NO_FEEDBACK,
 * sent otherwise.  e is invalid afterwards. */
void sched_delivery_done(sched_t *s, sched_entry_t *e,
    const sched_rcpt_result_t *res, int flags, const char *reason,
    double now);

/* Time of the next internal event (a rate-delayed destination may
 * start again), or INFINITY.  Calling sched_select then is enough. */
double sched_next_wakeup(const sched_t *s);

/* The destination status cache, for listing (postq -D). */
const dsc_t *sched_dsc(const sched_t *s);
/* Admin clear (postsuper -x nexthop, or all when nexthop is NULL):
 * forget DSC entries and revive matching suspended queues.  Returns the
 * number of DSC entries removed. */
size_t sched_dsc_clear(sched_t *s, const char *nexthop, double now);

/* Administration (postsuper, through qmgr's control channel;
 * sched_admin.c; doc/scheduling-rules.md §10).
 *
 * sched_msg_stop: the message with this queue ID stops its pass through
 * the active queue: every recipient not yet handed to an agent (pending
 * entries, and those read later) is deferred at once with 'reason';
 * deliveries in flight finish normally; msg_done follows when the last
 * one reports (possibly before this returns).  False when no message
 * with that ID is in the core. */
bool sched_msg_stop(sched_t *s, const char *id, const char *reason,
    double now);
bool sched_msg_stopped(const sched_msg_t *m);
/* Finds a message by queue ID (O(messages in the core)). */
sched_msg_t *sched_msg_find(const sched_t *s, const char *id);

/* Administrative suspension of a destination (nexthop, any transport,
 * case-insensitive): until sched_dest_resume, its pending entries and
 * every recipient for it offered later are deferred at once with
 * "delivery suspended by administrator" (plus ": REASON" when reason is
 * not empty); deliveries in flight finish.  The mail waits in the
 * deferred queue, not in memory.  Suspending a suspended destination
 * updates its reason.  Returns false for an empty nexthop. */
bool sched_dest_suspend(sched_t *s, const char *nexthop, const char *reason,
    double now);
/* True if nexthop was suspended (the caller then makes its deferred mail
 * eligible again: the core does not see the deferred queue). */
bool sched_dest_resume(sched_t *s, const char *nexthop, double now);
/* The deferral text of a suspended destination, or NULL. */
const char *sched_dest_suspended(const sched_t *s, const char *nexthop);
typedef struct sched_hold_info {
	const char *nexthop;
	const char *text;		/* the deferral text */
	double since;			/* when it was suspended */
} sched_hold_info_t;
/* Suspended destinations, in no particular order. */
void sched_walk_suspended(const sched_t *s,
    void (*fn)(const sched_hold_info_t *, void *), void *ctx);
size_t sched_suspended_count(const sched_t *s);

/* Read-only inspection (postq -S, qmgr-sim, tests). */
typedef struct sched_transport_info {
	const char *name;
	int busy, process_limit;
	size_t jobs;			/* on the scheduler job list */
	size_t queues;
	long rcpt_in_core, rcpt_peak;	/* recipients in memory */
	long rcpt_limit, extra_limit;
	unsigned long selected, preemptions;
} sched_transport_info_t;

typedef struct sched_queue_info {
	const char *transport, *nexthop;
	int window, busy;
	double success, failure, fail_cohorts;
	size_t todo_entries, busy_entries;
	bool dead;			/* window 0 (dead, awaiting a probe) */
	bool suspended;			/* in the DSC, mail deferred at once */
	bool probing;			/* the half-open probe is in flight */
	double retry_at;		/* when suspended */
	const char *reason;		/* DSC reason, or NULL */
	unsigned long deliveries, conn_failures, suspended_rcpts;
	/* Rate limits (doc/scheduling-rules.md §9); the buckets as of their
	 * last change: tb_tokens(&msg_bucket, now) gives the tokens left
	 * now. */
	bool limited;			/* any limit set */
	sched_limits_t limits;
	tbucket_t msg_bucket, conn_bucket; /* meaningful when the rate > 0 */
	unsigned long rate_held;	/* selections held back by a bucket */
	unsigned long deferrals;	/* recipients deferred, since the
					 * queue was made */
} sched_queue_info_t;

typedef struct sched_job_info {
	const char *id;			/* message id */
	void *msg_ctx;
	int stack_level;		/* 0, or depth of preemption */
	const char *parent_id;		/* preempted job's message, or NULL */
	size_t children;
	long slots_available, slots_used;
	long read_entries, selected_entries, todo_entries;
	size_t unread;			/* message recipients not read yet */
	bool blocker;
	bool current;
} sched_job_info_t;

typedef struct sched_stats {
	size_t messages;		/* in the core now */
	long rcpt_in_core, rcpt_peak;
	unsigned long selected, preemptions, suspended_rcpts, reads;
	/* Since the core was made: messages added on their first pass
	 * (attempts 0), and recipient results (sent, bounced, deferred:
	 * those deferred at once included). */
	unsigned long new_msgs, rcpt_sent, rcpt_bounced, rcpt_deferred;
} sched_stats_t;

void sched_get_stats(const sched_t *s, sched_stats_t *st);
void sched_walk_transports(const sched_t *s,
    void (*fn)(const sched_transport_info_t *, void *), void *ctx);
/* Queues of one transport (t == NULL: all), in no particular order. */
void sched_walk_queues(const sched_t *s, const sched_transport_t *t,
    void (*fn)(const sched_queue_info_t *, void *), void *ctx);
bool sched_queue_lookup(const sched_t *s, const char *transport,
    const char *nexthop, sched_queue_info_t *out);
/* Jobs of t in scheduler order (nothing for t == NULL). */
void sched_walk_jobs(const sched_t *s, const sched_transport_t *t,
    void (*fn)(const sched_job_info_t *, void *), void *ctx);
/* Internal consistency check (counts, lists, stack tree); returns false
 * with a reason in err.  O(everything): for tests. */
bool sched_check(const sched_t *s, str_t *err);

#endif
