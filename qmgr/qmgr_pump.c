/* The qmgr daemon's core loop: the clock, the pump, trigger requests,
 * start-up.  (qmgr.c holds only main(), so that tests can link this.) */
#include <math.h>
#include <string.h>
#include <sys/time.h>
#include "log.h"
#include "pconfig.h"
#include "qmgr_int.h"
#include "server.h"

qmgr_t Q;

/* The scheduler core wants a clock that never goes back; back-off, ages
 * and lifetimes need the wall clock (arrival times and the deferred
 * queue's file times are wall-clock times).  A clock stepped back holds
 * still until it catches up. */
double qmgr_now(void)
{
	struct timeval tv;
	double t;

	gettimeofday(&tv, NULL);
	t = (double)tv.tv_sec + tv.tv_usec / 1e6;
	if (t < Q.now_last)
		t = Q.now_last;
	Q.now_last = t;
	return t;
}

static void pump_event(void *ctx)
{
	(void)ctx;
	qmgr_pump();
}

void qmgr_kick(void)
{
	if (!event_timer_pending(&Q.pump_timer))
		event_timer_start(Q.loop, &Q.pump_timer, 0);
}

/* Starts every delivery the core allows now. */
static void dispatch(str_t *why)
{
	sched_entry_t *e;
	double now = qmgr_now();

	while ((e = sched_select(Q.s, now)) != NULL) {
		qmgr_transport_t *tr = qmgr_transport_get(sched_entry_transport(e));
		if (tr == NULL) {
			/* The core only knows transports we declared. */
			qmgr_dlv_give_up(e, "mail transport unavailable", now);
		} else if (qmgr_transport_suspended(tr, now)) {
			str_setf(why, "delivery temporarily suspended: %s",
			    str_cstr(&tr->suspend_reason));
			qmgr_dlv_give_up(e, str_cstr(why), now);
		} else {
			qmgr_dlv_start(e, tr);
		}
		now = qmgr_now();
	}
}

/* One round of work: finish messages, start the deliveries the core
 * allows, fill the active queue, and start what that made possible.
 * Deliveries go first: an agent that has just answered waits for its
 * next request while we read new messages, which can take a while when
 * incoming/ has a backlog. */
void qmgr_pump(void)
{
	double now, w;
	str_t why = STR_INIT;

	if (Q.pumping)
		return;
	Q.pumping = true;
	qmgr_msg_finish_run();
	dispatch(&why);
	qmgr_active_feed();
	dispatch(&why);
	str_release(&why);
	now = qmgr_now();
	qmgr_msg_finish_run();
	w = sched_next_wakeup(Q.s);
	if (isfinite(w)) {
		double ms = (w - now) * 1000.0;
		event_timer_start(Q.loop, &Q.wake_timer,
		    ms < 0 ? 0 : ms > 3.6e6 ? 3600000 : (int64_t)ceil(ms));
	} else {
		event_timer_cancel(&Q.wake_timer);
	}
	qmgr_active_clog_check(now);
	Q.pumping = false;
}

/* The deferred queue is scanned every queue_run_delay. */
static void run_timer_event(void *ctx)
{
	(void)ctx;
	qmgr_scan_deferred(false);
	event_timer_start(Q.loop, &Q.run_timer, Q.queue_run_delay * 1000);
	qmgr_kick();
}

/* Stale temporary files (a writer killed in mid-write): removed at start
 * and every temp_file_max_age (doc/queue-file.md §4). */
static void purge_timer_event(void *ctx)
{
	long age = Q.temp_max_age > 0 ? Q.temp_max_age : 1;

	(void)ctx;
	Q.tmp_purged += (unsigned long)qfile_tmp_purge(&Q.ql, (time_t)age);
	event_timer_start(Q.loop, &Q.purge_timer, (int64_t)age * 1000);
}

void qmgr_trigger(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		switch (buf[i]) {
		case TRIGGER_WAKEUP:
		case TRIGGER_SCAN_INCOMING:
			qmgr_scan_incoming();
			break;
		case TRIGGER_SCAN_DEFERRED:
			qmgr_scan_deferred(false);
			break;
		case TRIGGER_SCAN_ALL:
			/* A flush: every deferred message is eligible now,
			 * whatever its retry time. */
			qmgr_scan_incoming();
			qmgr_scan_deferred(true);
			break;
		case TRIGGER_FLUSH: {
			size_t n = sched_dsc_clear(Q.s, NULL, qmgr_now());
			qmgr_transport_unsuspend_all();
			if (n > 0)
				log_info("flush: forgot %zu dead destination%s",
				    n, n == 1 ? "" : "s");
			break;
		}
		default:
			log_warning("unknown trigger request 0x%02x ignored",
			    (unsigned char)buf[i]);
			break;
		}
	}
	qmgr_kick();
}

void qmgr_init(event_loop_t *loop)
{
	Q.loop = loop;
	event_timer_init(&Q.pump_timer, pump_event, NULL);
	event_timer_init(&Q.wake_timer, pump_event, NULL);
	event_timer_init(&Q.run_timer, run_timer_event, NULL);
	event_timer_init(&Q.purge_timer, purge_timer_event, NULL);
	qmgr_conf_init();
	qmgr_scan_init(&Q.incoming, Q.ql.dir, QUEUE_INCOMING);
	qmgr_scan_init(&Q.deferred, Q.ql.dir, QUEUE_DEFERRED);
	qmgr_active_recover();
	purge_timer_event(NULL);
	qmgr_scan_incoming();
	qmgr_scan_deferred(false);
	event_timer_start(Q.loop, &Q.run_timer, Q.queue_run_delay * 1000);
	qmgr_kick();
}


/* Stopped or retired by master (petrel stop, a reload) or master is
 * gone: start nothing new, record the replies of deliveries in flight
 * for up to stop_drain_timeout (master kills what is left a little
 * later), finish the messages that need nothing more, and leave the
 * rest in the active queue for the next qmgr (which recovers it). */
void qmgr_shutdown(void)
{
	size_t left;

	Q.exiting = true;
	event_timer_cancel(&Q.pump_timer);
	left = qmgr_dlv_drain((double)pconfig_get_time("stop_drain_timeout"));
	qmgr_msg_finish_run();
	if (left > 0)
		log_info("exiting with %zu deliveries in flight; their messages "
		    "stay in the active queue and are recovered at the next "
		    "start", left);
}
