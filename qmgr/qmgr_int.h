/* The qmgr daemon's internals: the state shared by qmgr.c (main, triggers,
 * the pump), qmgr_conf.c (parameters, transports), qmgr_active.c (queue
 * scans, the active queue, crash recovery), qmgr_msg.c (messages:
 * loading, recipient outcomes, the end of a pass), qmgr_dlv.c
 * (deliveries to agents), qmgr_notice.c (requests to the bounce
 * daemon), qmgr_pump.c (clock, pump, triggers, start-up).  doc/qmgr.md describes the daemon. */
#ifndef PETREL_QMGR_INT_H
#define PETREL_QMGR_INT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include "attr.h"
#include "delivery.h"
#include "dsn_notice.h"
#include "event.h"
#include "htable.h"
#include "list.h"
#include "qfile.h"
#include "qmgr_scan.h"
#include "queue_path.h"
#include "resolve.h"
#include "sched.h"
#include "statuslog.h"
#include "str.h"

/* Consecutive failures of a transport's delivery agents (crash, timeout,
 * malformed reply, no agent to connect to) after which the transport is
 * suspended for transport_retry_time. */
#define QMGR_AGENT_FAIL_LIMIT	3
/* Work per event-loop round, so that replies from agents are never kept
 * waiting behind a long queue scan. */
#define QMGR_FEED_BATCH		100	/* messages moved into active */
#define QMGR_FEED_TIME		0.002	/* seconds of a round spent on that */
#define QMGR_SCAN_BATCH		2000	/* deferred files looked at */
/* Recipients read from a queue file at a time. */
#define QMGR_READ_BATCH		100

typedef struct qmgr_transport {
	char *name;
	char *endpoint;			/* "private/NAME" */
	sched_transport_t *st;
	long time_limit;		/* TRANSPORT_time_limit, seconds */
	int fail_count;			/* consecutive agent failures */
	double suspended_until;		/* 0: not suspended */
	str_t suspend_reason;
	unsigned long deliveries, agent_failures;
	bool group_mx;			/* destination_grouping = mx */
} qmgr_transport_t;

struct qmgr_dlv;

/* A recipient in the scheduler core: the core's cookie points here
 * (sched_cookie_t.rcpt: qmgr is the driver that defines the core's
 * struct sched_drv_rcpt). */
typedef struct sched_drv_rcpt {
	dlv_rcpt_t r;			/* address, orig, orcpt, notify, offset */
	struct qmgr_dlv *dlv;		/* the delivery it is in, or NULL */
	size_t idx;			/* its index in that delivery */
	const char *nodlv_dsn;		/* the DSN of a deferral that no agent
					 * reported: "4.3.0" once qmgr gave up
					 * its delivery (agent failure,
					 * suspended or unknown transport);
					 * NULL: "4.4.1", the core's own
					 * deferral (a destination known to
					 * be down) */
} qmgr_rcpt_t;

/* Copies of status log records, appended in batches. */
typedef struct rec_batch {
	sl_rec_t v[QMGR_READ_BATCH];
	size_t n;
} rec_batch_t;

/* The end of a message's pass, step by step (some steps wait for the
 * bounce daemon). */
enum qmgr_fin_step {
	FIN_NONE = 0,			/* still in the scheduler */
	FIN_EXPIRE,			/* return the deferred recipients */
	FIN_BOUNCE,			/* non-delivery notice */
	FIN_SUCCESS,			/* success notices */
	FIN_DELAY,			/* delay warning */
	FIN_DISPOSE,			/* remove, or move to deferred */
};

typedef struct qmgr_msg {
	char id[QUEUE_ID_SIZE];
	qfile_t *qf;			/* open read-write while active */
	sched_msg_t *sm;		/* NULL once the core is done with it */
	double arrival;			/* seconds since the epoch */
	double active_time;		/* when it entered the active queue */
	bool null_sender;
	/* The content filter (queue-file attribute content_filter): every
	 * recipient goes to this transport and nexthop; filter_bad: the
	 * value is malformed, every recipient is deferred. */
	char *filter_tr, *filter_nh;
	bool filter_bad;
	/* Reading recipients: a batch read ahead, the next one to offer. */
	qf_rcpt_batch_t batch;
	size_t bpos;
	uint64_t consumed;		/* records read from the file */
	bool read_error;		/* reading failed: never "all done" */
	/* This pass. */
	unsigned long sent, bounced, deferred;
	unsigned long deferred_here;	/* deferred without the core
					 * (address resolution) */
	unsigned long unlogged;		/* failed, but no bounce record */
	/* Status logs.  A message on its first pass has none but the ones
	 * this pass writes, at the configured hash level: no need to look
	 * for them elsewhere, or at all when this pass wrote none. */
	bool old_logs;			/* attempts > 0, or a recipient was
					 * already done: earlier passes' logs */
	bool wrote_defer, wrote_bounce, wrote_trace;
	unsigned long rcpt_in_core;	/* offered, no outcome yet */
	sched_msg_result_t res;
	double res_time;		/* when the core reported it */
	enum qmgr_fin_step step;
	bool notice_busy;		/* a bounce daemon request in flight */
	const char *notice_kind;	/* for log lines */
	bool notice_failed;		/* a bounce/success notice failed */
	sl_reader_t *trace_rd;		/* FIN_SUCCESS: the trace log */
	rec_batch_t *bpend;		/* bounce records not yet on disk */
	list_node_t bsync_node;		/* on Q.bounce_sync while bpend has some */
	list_node_t fin_node;		/* on Q.finish while finishing */
	list_node_t mxg_node;		/* waiting for an MX group lookup */
	list_node_t node;		/* on Q.messages */
} qmgr_msg_t;

/* One delivery in flight: an entry of the core at an agent. */
typedef struct qmgr_dlv {
	qmgr_transport_t *tr;
	sched_entry_t *e;
	qmgr_msg_t *msg;
	int fd;
	enum { DLV_CONNECT, DLV_WRITE, DLV_READ } state;
	str_t out;
	size_t outpos;
	attr_reader_t *rd;
	dlv_request_t req;
	dlv_reply_t rep;
	bool have_reply;
	bool failed;			/* agent failure: deferred with reason */
	str_t reason;
	double start;			/* handed to the agent */
	event_timer_t timer;		/* whole-delivery deadline */
	event_timer_t retry;		/* connect retry (listen queue full) */
	double connect_deadline;
	list_node_t node;
} qmgr_dlv_t;

/* The daemon's state. */
typedef struct qmgr {
	event_loop_t *loop;
	queue_layout_t ql;
	sched_t *s;
	sched_params_t sp;
	resolver_t *resolver;
	htable_t *transports;		/* name -> qmgr_transport_t */
	char *bounce_endpoint;		/* "private/bounce", or NULL */
	/* Parameters. */
	long active_limit;		/* qmgr_message_active_limit (effective) */
	int group_mx;			/* transports with destination_grouping
					 * = mx (0: no lookups, no cost) */
	long queue_run_delay;
	long temp_max_age;		/* temp_file_max_age */
	long clog_warn_time;
	long ipc_timeout;		/* qmgr_ipc_timeout */
	long transport_retry_time;
	long delay_warning_time;
	bool soft_bounce;
	char *default_filter_nexthop;	/* "" : the recipient's domain */
	char *myhostname;
	int log_digits;			/* delay_logging_resolution_limit */
	/* The active queue. */
	list_t messages;		/* every qmgr_msg_t */
	long active;			/* messages in active/ that we own */
	list_t finish;			/* messages at the end of their pass */
	list_t dlvs;			/* deliveries in flight */
	list_t bounce_sync;		/* messages with bounce records pending */
	qmgr_scan_t incoming, deferred;
	bool take_deferred;		/* alternation: deferred next */
	double last_clog_warn;
	double now_last;		/* qmgr_now() never goes back */
	/* Timers. */
	event_timer_t pump_timer;	/* run qmgr_pump() soon */
	event_timer_t wake_timer;	/* sched_next_wakeup */
	event_timer_t run_timer;	/* deferred queue scan */
	event_timer_t purge_timer;	/* stale temporary files */
	bool pumping;
	bool exiting;			/* no new work; no notices */
	/* Statistics (and the test hooks). */
	unsigned long loaded, removed, deferred_msgs, expired;
	unsigned long tmp_purged;
} qmgr_t;

extern qmgr_t Q;

/* qmgr_pump.c */
void qmgr_init(event_loop_t *loop);
void qmgr_trigger(const char *buf, size_t len);
double qmgr_now(void);
/* Runs qmgr_pump() from the event loop soon (never from inside the
 * scheduler core's callbacks). */
void qmgr_kick(void);
void qmgr_pump(void);
/* Before a voluntary exit: finish what can be finished quickly. */
void qmgr_shutdown(void);

/* qmgr_conf.c */
/* qmgr_conf_preload reads what lies outside the queue directory (before
 * a chroot); qmgr_conf_init does it itself when that was not called. */
void qmgr_conf_preload(void);
void qmgr_conf_init(void);
/* Rate tables (doc/scheduler.md section 8a). */
const char *qmgr_rate_key(const char *transport, const char *nexthop);
void qmgr_dest_limits(void *ctx, const char *transport, const char *nexthop,
    sched_limits_t *lim);
qmgr_transport_t *qmgr_transport_get(const char *name);
bool qmgr_transport_suspended(qmgr_transport_t *tr, double now);
void qmgr_transport_failure(qmgr_transport_t *tr, const char *reason,
    double now);
void qmgr_transport_success(qmgr_transport_t *tr);
void qmgr_transport_unsuspend_all(void);

/* qmgr_mxgroup.c: destination grouping by MX hosts. */
struct mastercf;
/* Before the chroot: the name server and its socket, if a transport of
 * mcf groups by mx. */
void qmgr_mxgroup_preload(const struct mastercf *mcf);
/* The scheduling key of nexthop for a transport that groups by mx; NULL
 * when its lookup is in progress: msg is then a waiter, resumed
 * (sched_msg_resume) when it ends. */
const char *qmgr_mxgroup_key(const char *nexthop, qmgr_msg_t *msg,
    double now);
/* msg goes away: no longer a waiter. */
void qmgr_mxgroup_forget(qmgr_msg_t *msg);

/* qmgr_active.c */
void qmgr_active_recover(void);
void qmgr_active_feed(void);
void qmgr_scan_incoming(void);
void qmgr_scan_deferred(bool all);
void qmgr_active_clog_check(double now);
/* Moves queue file id between queues; sync: fsync the directories. */
int qmgr_move(const char *from, const char *to, const char *id, bool sync);

/* qmgr_msg.c */
extern const sched_driver_t qmgr_driver;
void qmgr_msg_load(const char *id);
void qmgr_msg_finish_run(void);
/* Appends pending bounce records (synced) and marks their recipients
 * done; runs before control returns to the event loop. */
void qmgr_msg_sync_bounces(void);
void qmgr_rcpt_free(qmgr_rcpt_t *qr);

/* qmgr_dlv.c */
void qmgr_dlv_start(sched_entry_t *e, qmgr_transport_t *tr);
size_t qmgr_dlv_count(void);
size_t qmgr_dlv_drain(double seconds);
/* Finishes entry e without a delivery (an agent failed, the transport
 * is suspended or unknown): every recipient is deferred with reason and
 * records DSN 4.3.0 (mail system trouble, qmgr_rcpt_t.nodlv_dsn), with
 * no concurrency feedback. */
void qmgr_dlv_give_up(sched_entry_t *e, const char *reason, double now);
/* The status of recipient qr for its log line and the logs: from the
 * agent's reply when there is one that agrees with the core's verdict,
 * else made up from the core's status and reason.  Returns true when
 * *out is the agent's own verdict (the agent logged the line), false
 * when qmgr decided (qmgr logs it). */
bool qmgr_dlv_status(const qmgr_rcpt_t *qr, sched_rcpt_status_t status,
    const char *reason, dlv_status_t *out, dlv_delays_t *dl,
    const qmgr_msg_t *msg, double now);

/* qmgr_notice.c */
/* Starts a request to the bounce daemon; done() is called once, from
 * the event loop, with the outcome. */
void qmgr_notice_send(qmgr_msg_t *msg, dsn_notice_req_t *req,
    void (*done)(qmgr_msg_t *msg, bool ok, const char *reason));

#endif
