/* Internal structures of the scheduler core, shared by libsched/sched*.c.
 * Nothing outside those files includes this. */
#ifndef PETREL_QMGR_SCHED_INT_H
#define PETREL_QMGR_SCHED_INT_H
#include "sched.h"
#include "list.h"
#include "htable.h"

/* An indexed binary min-heap (sched_heap.c). */
typedef struct sheap {
	void **v;
	size_t n, cap;
	uint64_t (*key)(const void *);
	void (*setidx)(void *, size_t);	/* SIZE_MAX when removed */
} sched_heap_t;

void sched_heap_init(sched_heap_t *h, uint64_t (*key)(const void *),
    void (*setidx)(void *, size_t));
void sched_heap_push(sched_heap_t *h, void *x);
void sched_heap_remove(sched_heap_t *h, size_t i);
void sched_heap_update(sched_heap_t *h, size_t i);
void sched_heap_free(sched_heap_t *h);
static inline void *sched_heap_min(const sched_heap_t *h)
{
	return h->n ? h->v[0] : NULL;
}

struct sched {
	sched_params_t p;
	sched_driver_t drv;
	dsc_t *dsc;
	sched_transport_t **tv;		/* transports, in declaration order */
	int nt;
	int rr;				/* next transport for round-robin */
	htable_t *tbyname;
	long rcpt_in_core, rcpt_peak;
	list_t msgs;			/* every message in the core */
	size_t nmsgs;
	list_t wait_global;		/* messages waiting for global room */
	list_t refill;			/* messages to read more of (flush) */
	list_t done;			/* finished messages (flush) */
	list_t gc;			/* queues that may be empty (flush) */
	int flushing;			/* flush in progress */
	/* Min-heap of queues waiting for a rate delay to pass. */
	sched_queue_t **heap;
	size_t nheap, capheap;
	str_t tmp;			/* reason formatting */
	htable_t *held;			/* nexthop -> sched_hold_t: suspended
					 * by the administrator (sched_admin.c) */
	unsigned long selected, preemptions, suspended_rcpts, reads;
	/* Since the core was made (metrics): messages on their first
	 * pass, and recipient results by kind. */
	unsigned long new_msgs, rcpt_sent, rcpt_bounced, rcpt_deferred;
};

struct sched_transport {
	sched_t *s;
	char *name;
	int index;
	sched_tparams_t p;
	htable_t *queues;		/* nexthop -> sched_queue_t */
	list_t jobs;			/* the scheduler job list */
	size_t njobs;
	sched_job_t *current;		/* where selection starts */
	/* The linked jobs that are not blockers, by list position: the
	 * selection takes the first, so blockers cost nothing. */
	sched_heap_t runq;
	/* Preemption candidate cache. */
	bool cand_valid;
	sched_job_t *cand_current;	/* the current job it was computed for */
	sched_job_t *cand;		/* the result (NULL = none) */
	double cand_time;
	int busy;			/* deliveries in flight */
	long rcpt_in_core, rcpt_peak;
	list_t wait;			/* messages waiting for room here */
	unsigned long selected, preemptions;
};

struct sched_queue {
	sched_transport_t *t;
	char *nexthop;
	char *name;			/* "transport:nexthop" for logs */
	feedback_state_t fb;
	list_t todo, busy;		/* entries */
	size_t ntodo, nbusy;
	/* Peers with pending entries whose job is blocked (possibly stale:
	 * their job may run again), by job list position. */
	sched_heap_t blocked;
	bool suspended;			/* DSC: defer new mail at once */
	bool dsc_known;			/* may be in the DSC: check before use */
	double retry_at;		/* end of suspension */
	char *reason;			/* why suspended */
	bool on_gc;
	list_node_t gc_node;
	size_t heap_idx;		/* SIZE_MAX when not in the heap */
	double wake;
	unsigned long deliveries, conn_failures, suspended_rcpts;
	/* Rate limits (doc/scheduling-rules.md §9); only when limited. */
	bool limited;
	sched_limits_t lim;
	tbucket_t msg_tb, conn_tb;
	unsigned long rate_held;
	unsigned long deferrals;		/* recipients deferred */
};

struct sched_msg {
	sched_t *s;
	char *id;
	void *ctx;
	double arrival, queued;
	bool null_sender;
	int attempts;
	size_t unread;			/* estimate of recipients not offered */
	bool reading;			/* inside read_more */
	bool offered_any;		/* this read took something */
	bool refused;			/* this read hit a limit */
	bool finished;			/* on the done list */
	bool drv_wait;			/* the driver asked to wait
					 * (sched_msg_wait): no reads until
					 * sched_msg_resume */
	long in_core;			/* recipients queued, not final */
	unsigned long sent, bounced, deferred;
	list_t jobs;			/* sched_job_t.mnode */
	list_node_t node;		/* s->msgs */
	list_node_t wait_node;		/* a wait list, or s->refill */
	enum { MW_NONE, MW_TRANSPORT, MW_GLOBAL, MW_REFILL } wait_kind;
	sched_transport_t *wait_on;	/* for MW_TRANSPORT */
	double refill_time;		/* last read */
	list_node_t done_node;
	char *stop_reason;		/* sched_msg_stop: defer the rest */
	const sched_rcpt_spec_t *arr;	/* recipients given as an array */
	size_t narr, arr_next;
};

struct sched_job {
	sched_msg_t *m;
	sched_transport_t *t;
	list_node_t mnode;		/* m->jobs */
	list_node_t tnode;		/* t->jobs when linked */
	int stack_level;		/* -1 = not on the job list */
	uint64_t label;			/* increasing along t->jobs */
	size_t ridx;			/* in t->runq, or SIZE_MAX */
	sched_job_t *parent;
	list_t children;
	list_node_t sibling;
	bool blocked;			/* no destination can take a delivery */
	list_t ready;			/* peers with todo entries, round-robin */
	htable_t *peers;		/* nexthop -> peer (all live peers;
					 * "key\tnexthop" for a nexthop queued
					 * under another key: grouping) */
	long read_entries, selected_entries, ntodo;
	long slots_available, slots_used;
	long rcpt_in_core;
};

struct sched_peer {
	sched_job_t *j;
	sched_queue_t *q;
	char *hkey;			/* grouping: "KEY\tNEXTHOP", its name in
					 * j->peers; NULL when the entries'
					 * nexthop is the queue's key */
	const char *nexthop;		/* the entries' nexthop (in hkey), or NULL */
	list_t todo;			/* entries (sched_entry_t.pnode) */
	long ntodo, nbusy;
	list_node_t rnode;		/* j->ready while ntodo > 0 */
	size_t bidx;			/* in q->blocked, or SIZE_MAX */
};

struct sched_entry {
	sched_peer_t *peer;
	list_node_t qnode;		/* q->todo or q->busy */
	list_node_t pnode;		/* peer->todo while todo */
	sched_rcpt_t *rcpt;
	size_t n, cap;
	bool busy;
	bool probe;
	feedback_ticket_t fbt;	/* from feedback_delivery_start, while busy */
};

#define PEER_NEXTHOP(p)		((p)->nexthop ? (p)->nexthop : (p)->q->nexthop)
#define PEER_HKEY(p)		((p)->hkey ? (p)->hkey : (p)->q->nexthop)
#define JOB_HAS_TODO(j)		((j)->ntodo > 0)
/* read(J) and max(J) of doc/scheduling-rules.md §3.1. */
#define MIN_ENTRIES(j)		((j)->read_entries)
#define MAX_ENTRIES(j)		((j)->read_entries + (long)(j)->m->unread)
#define IS_BLOCKER(j)		((j)->blocked)
#define RESET_CAND_CACHE(t)	((t)->cand_valid = false)

/* sched_job.c */
sched_job_t *sched_job_obtain(sched_msg_t *m, sched_transport_t *t);
void sched_job_retire(sched_job_t *j);
void sched_job_free(sched_job_t *j);
sched_entry_t *sched_job_entry_select(sched_transport_t *t, double now);
void sched_job_wake(sched_queue_t *q, int n);
void sched_peer_todo_gone(sched_peer_t *p);
void sched_transport_heaps_init(sched_transport_t *t);
void sched_queue_heaps_init(sched_queue_t *q);

/* sched_queue.c */
sched_queue_t *sched_queue_find(sched_transport_t *t, const char *nexthop);
sched_queue_t *sched_queue_create(sched_transport_t *t, const char *nexthop,
    double now);
void sched_queue_free(sched_queue_t *q);
bool sched_queue_suspended(sched_queue_t *q, double now);
bool sched_queue_can_start(sched_queue_t *q, double now);
bool sched_queue_may_start(sched_queue_t *q, double now);
void sched_queue_started(sched_queue_t *q, sched_entry_t *e, double now);
void sched_queue_done(sched_queue_t *q, sched_entry_t *e, int flags,
    const char *reason, double now);
void sched_queue_defer_todo(sched_queue_t *q, double now);
void sched_entry_take_todo(sched_entry_t *e);
void sched_entry_defer_todo(sched_entry_t *e, const char *text, double now);
void sched_queue_kill(sched_queue_t *q, const char *reason, double now);
void sched_queue_revive(sched_queue_t *q, double now);
void sched_queue_gc_mark(sched_queue_t *q);
void sched_queue_check_unblock(sched_queue_t *q, double now);
void sched_queue_wake_remove(sched_t *s, sched_queue_t *q);
void sched_queue_wake_set(sched_t *s, sched_queue_t *q, double when);
void sched_run_timers(sched_t *s, double now);
bool sched_queue_rate_keep(sched_queue_t *q, double now);

/* sched_params.c: an integer in [lo, hi], the whole string. */
bool sched_parse_long(const char *value, long lo, long hi, long *out);

/* sched_admin.c */
typedef struct sched_hold {
	char *nexthop;
	char *reason;			/* the deferral text */
	double since;
} sched_hold_t;
const char *sched_held_text(const sched_t *s, const char *nexthop);
void sched_admin_free(sched_t *s);

/* sched.c */
void sched_entry_finish(sched_entry_t *e, const sched_rcpt_result_t *res,
    sched_rcpt_status_t all, const char *reason, double now);
void sched_msg_refill_check(sched_msg_t *m, sched_transport_t *t,
    double now);
void sched_msg_read(sched_msg_t *m, double now);
long sched_room(const sched_msg_t *m, const sched_transport_t *t);
void sched_flush(sched_t *s, double now);
void sched_defer_text(sched_t *s, const char *reason, str_t *out);

#endif
