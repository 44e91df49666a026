/* qmgr: messages in the active queue.  Loading a queue file into the
 * scheduler core, reading and resolving its recipients in batches, what
 * happens to each recipient (queue file, status logs, log line), and the
 * end of a pass: notices, then removal or the move to deferred. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "content_filter.h"
#include "dsn_notify.h"
#include "log.h"
#include "mem.h"
#include "qmgr_int.h"

#define SL_DEFER	"defer"
#define SL_BOUNCE	"bounce"
#define SL_TRACE	"trace"

/* ---- recipients ---------------------------------------------------- */

static qmgr_rcpt_t *rcpt_new(const qf_rcpt_t *r)
{
	qmgr_rcpt_t *qr = xcalloc(1, sizeof(*qr));

	qr->r.address = xstrdup(str_cstr(&r->address));
	qr->r.orig = xstrdup(str_cstr(&r->orig));
	qr->r.orcpt = xstrdup(str_cstr(&r->orcpt));
	qr->r.notify = r->notify;
	qr->r.offset = (int64_t)r->offset;
	return qr;
}

void qmgr_rcpt_free(qmgr_rcpt_t *qr)
{
	if (qr == NULL)
		return;
	free(qr->r.address);
	free(qr->r.orig);
	free(qr->r.orcpt);
	free(qr);
}

static void mark_done(qmgr_msg_t *msg, int64_t offset)
{
	if (qfile_rcpt_done(msg->qf, (off_t)offset, 0) < 0)
		log_warning("%s: cannot mark recipient at offset %" PRId64
		    " done: %s (it may be delivered again)", msg->id, offset,
		    qfile_error(msg->qf)->reason);
}

/* Copies of status log records, for appending in batches. */

static char *dup0(const char *s)
{
	return xstrdup(s ? s : "");
}

static void batch_add(rec_batch_t *b, const dlv_rcpt_t *r,
    const dlv_status_t *st, int64_t when)
{
	sl_rec_t *x = &b->v[b->n++];

	memset(x, 0, sizeof(*x));
	x->rcpt.address = dup0(r->address);
	x->rcpt.orig = dup0(r->orig);
	x->rcpt.orcpt = dup0(r->orcpt);
	x->rcpt.notify = r->notify;
	x->rcpt.offset = r->offset;
	bcopy_str(x->st.status, sizeof(x->st.status), st->status);
	x->st.action = st->action;
	x->st.reason = dup0(st->reason);
	x->st.diag_type = dup0(st->diag_type);
	x->st.diag_text = dup0(st->diag_text);
	x->st.relay = dup0(st->relay);
	x->st.remote_mta = dup0(st->remote_mta);
	x->st.notified = st->notified;
	x->time = when;
}

/* Appends the batch to the bounce log (synced), then marks its
 * recipients done. */
static void batch_flush(qmgr_msg_t *msg, rec_batch_t *b)
{
	str_t err = STR_INIT;

	if (b->n > 0)
		msg->wrote_bounce = true;
	if (b->n > 0 && statuslog_append(&Q.ql, SL_BOUNCE, msg->id, b->v, b->n,
	    SL_SYNC, &err) < 0) {
		log_warning("%s: bounce log: %s; %zu failed recipient%s "
		    "stay%s queued", msg->id, str_cstr(&err), b->n,
		    b->n == 1 ? "" : "s", b->n == 1 ? "s" : "");
		msg->unlogged += b->n;
	} else {
		for (size_t i = 0; i < b->n; i++)
			mark_done(msg, b->v[i].rcpt.offset);
	}
	for (size_t i = 0; i < b->n; i++)
		sl_rec_free(&b->v[i]);
	b->n = 0;
	str_release(&err);
}

/* Bounced recipients wait in their message's batch until the end of the
 * current event (qmgr_msg_sync_bounces), so that a delivery with many
 * failed recipients costs one synced append, not one per recipient. */
static void bounce_pending(qmgr_msg_t *msg, const dlv_rcpt_t *r,
    const dlv_status_t *st)
{
	if (msg->bpend == NULL)
		msg->bpend = xcalloc(1, sizeof(*msg->bpend));
	if (msg->bpend->n == 0)
		list_append(&Q.bounce_sync, &msg->bsync_node);
	batch_add(msg->bpend, r, st, (int64_t)time(NULL));
	if (msg->bpend->n == QMGR_READ_BATCH) {
		batch_flush(msg, msg->bpend);
		list_remove(&msg->bsync_node);
	}
}

void qmgr_msg_sync_bounces(void)
{
	list_node_t *n;

	while ((n = list_first(&Q.bounce_sync)) != NULL) {
		qmgr_msg_t *msg = list_entry(n, qmgr_msg_t, bsync_node);
		list_remove(n);
		batch_flush(msg, msg->bpend);
	}
}

/* One recipient's outcome: the queue file, the status logs, and the
 * log line when qmgr decided it (log): a delivery agent logs its own
 * verdicts, as Postfix's do.  Used for the core's verdicts and for
 * recipients that never reach the core (address resolution failed). */
static void rcpt_outcome(qmgr_msg_t *msg, const dlv_rcpt_t *r,
    sched_rcpt_status_t status, const dlv_status_t *st,
    const dlv_delays_t *dl, bool log)
{
	str_t err = STR_INIT, line = STR_INIT;

	switch (status) {
	case SCHED_RCPT_SENT:
		msg->sent++;
		/* A success notice was asked for: remember it in the trace
		 * log first, so that a crash cannot lose it silently.  Not
		 * when the next hop took the NOTIFY: it sends the notice. */
		if ((r->notify & DSN_NOTIFY_SUCCESS) && !(st && st->notified)) {
			msg->wrote_trace = true;
			if (statuslog_append1(&Q.ql, SL_TRACE, msg->id, r, st, 0,
			    0, &err) < 0)
				log_warning("%s: trace log: %s", msg->id,
				    str_cstr(&err));
		}
		mark_done(msg, r->offset);
		break;
	case SCHED_RCPT_BOUNCED:
		/* Never marked done before its bounce record is on disk:
		 * both happen in qmgr_msg_sync_bounces. */
		bounce_pending(msg, r, st);
		msg->bounced++;
		break;
	case SCHED_RCPT_DEFERRED:
		msg->deferred++;
		msg->wrote_defer = true;
		if (statuslog_append1(&Q.ql, SL_DEFER, msg->id, r, st, 0, 0,
		    &err) < 0)
			log_warning("%s: defer log: %s", msg->id, str_cstr(&err));
		break;
	}
	if (log) {
		dlv_log_format(&line, msg->id, r, st, dl, Q.log_digits);
		log_info("%s", str_cstr(&line));
		str_release(&line);
	}
	str_release(&err);
}

/* A recipient the resolver refused: bounced (RESOLVE_FAIL) or deferred
 * (RESOLVE_RETRY) here, without the core. */
static void rcpt_unresolved(qmgr_msg_t *msg, const qf_rcpt_t *r,
    const resolve_reply_t *rr, double now)
{
	qmgr_rcpt_t *qr = rcpt_new(r);
	dlv_status_t st;
	dlv_delays_t dl;
	bool fail = rr->status == RESOLVE_FAIL && !Q.soft_bounce;

	memset(&st, 0, sizeof(st));
	/* The resolver's code, in the class our verdict needs. */
	bcopy_str(st.status, sizeof(st.status), rr->dsn[0] ? rr->dsn
	    : fail ? "5.1.3" : "4.3.0");
	st.status[0] = fail ? '5' : '4';
	st.action = fail ? DLV_ACT_FAILED : DLV_ACT_DELAYED;
	st.reason = (char *)(str_len(&rr->reason) ? str_cstr(&rr->reason)
	    : "address resolution failed");
	st.diag_type = st.diag_text = st.remote_mta = (char *)"";
	st.relay = (char *)"none";
	memset(&dl, 0, sizeof(dl));
	dl.total = now - msg->arrival;
	dl.a = msg->active_time - msg->arrival;
	dl.b = now - msg->active_time;
	rcpt_outcome(msg, &qr->r, fail ? SCHED_RCPT_BOUNCED : SCHED_RCPT_DEFERRED,
	    &st, &dl, true);
	if (!fail)
		msg->deferred_here++;
	qmgr_rcpt_free(qr);
}

/* ---- the core's callbacks ------------------------------------------ */

static size_t cb_read_more(void *ctx, sched_msg_t *m, double now)
{
	qmgr_msg_t *msg = sched_msg_ctx(m);
	static resolve_reply_t rr = RESOLVE_REPLY_INIT;
	uint64_t total = qfile_rcpt_count(msg->qf);
	(void)ctx;

	while (!msg->read_error) {
		qf_rcpt_t *r;
		qmgr_rcpt_t *qr;
		const char *key;

		if (msg->bpos >= msg->batch.count) {
			long n;
			if (msg->consumed >= total)
				break;
			n = qfile_rcpt_read(msg->qf, &msg->batch,
			    QMGR_READ_BATCH, QF_RCPT_ALL);
			msg->bpos = 0;
			if (n <= 0) {
				/* The file was checked when it was opened:
				 * this is an I/O error or a changed file. */
				msg->batch.count = 0;
				msg->read_error = true;
				log_warning("%s: reading recipients: %s", msg->id,
				    n < 0 ? qfile_error(msg->qf)->reason
				    : "fewer recipients than the file announced");
				break;
			}
		}
		r = &msg->batch.rcpt[msg->bpos];
		if (r->done) {
			/* Done on a first pass: a qmgr before us worked on
			 * it and was killed, and may have left a bounce or
			 * trace log (a bounced recipient is marked done
			 * once its record is on disk) whose notice is still
			 * to be sent. */
			msg->old_logs = true;
			msg->bpos++;
			msg->consumed++;
			continue;
		}
		if (resolve_addr(Q.resolver, str_cstr(&r->address), &rr)
		    == RESOLVE_OK && msg->filter_bad) {
			rr.status = RESOLVE_RETRY;
			bcopy_str(rr.dsn, sizeof(rr.dsn), "4.3.5");
			str_set(&rr.reason, "malformed content_filter in the "
			    "queue file");
		}
		if (rr.status != RESOLVE_OK) {
			rcpt_unresolved(msg, r, &rr, now);
			msg->bpos++;
			msg->consumed++;
			continue;
		}
		/* A content filter takes every recipient the resolver
		 * accepted (Postfix: bad addresses still bounce). */
		if (msg->filter_tr != NULL)
			filter_route(msg->filter_tr, msg->filter_nh,
			    Q.default_filter_nexthop, str_cstr(&rr.address),
			    Q.myhostname, &rr.transport, &rr.nexthop);
		key = NULL;
		if (Q.group_mx > 0) {
			qmgr_transport_t *tr = qmgr_transport_get(
			    str_cstr(&rr.transport));
			if (tr != NULL && tr->group_mx && (key = qmgr_mxgroup_key(
			    str_cstr(&rr.nexthop), msg, now)) == NULL) {
				/* Its group is being looked up: wait in
				 * the active queue, read on when it is
				 * known (this recipient again first). */
				sched_msg_wait(m);
				break;
			}
		}
		qr = rcpt_new(r);
		msg->rcpt_in_core++;
		if (!sched_msg_offer_key(m, str_cstr(&rr.transport),
		    str_cstr(&rr.nexthop), key, qr->r.address,
		    (sched_cookie_t){ .rcpt = qr })) {
			/* No room now: offered again at the next call. */
			msg->rcpt_in_core--;
			qmgr_rcpt_free(qr);
			break;
		}
		msg->bpos++;
		msg->consumed++;
	}
	if (msg->read_error)
		return 0;
	return (size_t)(total - msg->consumed);
}

static void cb_rcpt_done(void *ctx, sched_msg_t *m, const sched_rcpt_t *rc,
    sched_rcpt_status_t status, const char *reason, double now)
{
	qmgr_msg_t *msg = sched_msg_ctx(m);
	qmgr_rcpt_t *qr = rc->cookie.rcpt;
	dlv_status_t st;
	dlv_delays_t dl;
	(void)ctx;

	bool by_agent = qmgr_dlv_status(qr, status, reason, &st, &dl, msg, now);
	rcpt_outcome(msg, &qr->r, status, &st, &dl, !by_agent);
	msg->rcpt_in_core--;
	qmgr_rcpt_free(qr);
}

static void cb_msg_done(void *ctx, sched_msg_t *m, const sched_msg_result_t *res,
    double now)
{
	qmgr_msg_t *msg = sched_msg_ctx(m);
	(void)ctx;

	msg->sm = NULL;
	msg->res = *res;
	msg->res_time = now;
	msg->step = FIN_EXPIRE;
	list_append(&Q.finish, &msg->fin_node);
	qmgr_kick();
}

const sched_driver_t qmgr_driver = {
	.ctx = NULL,
	.read_more = cb_read_more,
	.rcpt_done = cb_rcpt_done,
	.msg_done = cb_msg_done,
	.selected = NULL,
	.dest_limits = qmgr_dest_limits,
};

/* ---- loading ------------------------------------------------------- */

/* A file we could not open for a reason other than damage (out of
 * descriptors, an I/O error): out of the active queue, to be retried. */
static void park(const char *id, double now)
{
	str_t path = STR_INIT;
	struct timeval tv[2];
	double t = now + Q.sp.backoff.min_time;

	if (queue_find(&Q.ql, QUEUE_ACTIVE, id, &path) == 0) {
		tv[0].tv_sec = tv[1].tv_sec = (time_t)t;
		tv[0].tv_usec = tv[1].tv_usec = 0;
		(void)utimes(str_cstr(&path), tv);
	}
	(void)qmgr_move(QUEUE_ACTIVE, QUEUE_DEFERRED, id, true);
	str_release(&path);
}

void qmgr_msg_load(const char *id)
{
	qf_err_t err;
	qfile_t *qf;
	qmgr_msg_t *msg;
	struct timeval tv;
	sched_msg_desc_t d;
	str_t e = STR_INIT;
	double now = qmgr_now();

	qf = qfile_open(&Q.ql, QUEUE_ACTIVE, id, QF_OPEN_RDWR, &err);
	if (qf == NULL) {
		if (err.damaged) {
			(void)qfile_move_damaged(&Q.ql, QUEUE_ACTIVE, id, &err);
		} else if (err.errnum != ENOENT) {
			log_warning("%s: cannot open queue file: %s; retrying "
			    "later", id, err.reason);
			park(id, now);
		}
		return;
	}
	msg = xcalloc(1, sizeof(*msg));
	bcopy_str(msg->id, sizeof(msg->id), id);
	msg->qf = qf;
	qfile_arrival(qf, &tv);
	msg->arrival = (double)tv.tv_sec + tv.tv_usec / 1e6;
	msg->active_time = now;
	msg->null_sender = qfile_sender(qf)[0] == 0;
	{
		const char *f = qfile_attr(qf, FILTER_ATTR);
		str_t t = STR_INIT, n = STR_INIT;

		if (f != NULL && *f != '\0' && filter_split(f, &t, &n)) {
			msg->filter_tr = str_steal(&t);
			msg->filter_nh = str_steal(&n);
		} else if (f != NULL && *f != '\0') {
			msg->filter_bad = true;
			log_warning("%s: malformed content_filter \"%.100s\" in "
			    "the queue file; the recipients are deferred", id, f);
		}
		str_release(&t);
		str_release(&n);
	}
	list_append(&Q.messages, &msg->node);
	Q.active++;
	Q.loaded++;
	log_info("%s: from=<%s>, size=%" PRIu64 ", nrcpt=%" PRIu64
	    " (queue active)", id, qfile_sender(qf), qfile_content_size(qf),
	    qfile_rcpt_count(qf));

	/* The defer log tells why mail is waiting now: it starts afresh
	 * with each pass.  On the first pass it can only be a partial one
	 * of a qmgr that crashed, at the configured place.  A torn attempts
	 * slot (read as 0) may hide earlier passes: look for their logs. */
	msg->old_logs = qfile_attempts(qf) > 0
	    || (qfile_torn_slots(qf) & QF_TORN_ATTEMPTS);
	if ((msg->old_logs ? statuslog_remove : statuslog_discard)(&Q.ql,
	    SL_DEFER, id, &e) < 0)
		log_warning("%s: %s", id, str_cstr(&e));
	/* The first pass sets the time of the delay warning. */
	if (Q.delay_warning_time > 0 && qfile_attempts(qf) == 0
	    && qfile_warn_time(qf) == 0 && !(qfile_torn_slots(qf) & QF_TORN_WARN)
	    && qfile_set_warn_time(qf, tv.tv_sec + Q.delay_warning_time, 0) < 0)
		log_warning("%s: setting the delay warning time: %s", id,
		    qfile_error(qf)->reason);

	memset(&d, 0, sizeof(d));
	d.id = msg->id;
	d.arrival = msg->arrival;
	d.null_sender = msg->null_sender;
	d.attempts = (int)(qfile_attempts(qf) > 1000000 ? 1000000
	    : qfile_attempts(qf));
	d.recipients = (size_t)qfile_rcpt_count(qf);
	d.ctx = msg;
	/* May finish the message at once (msg_done queues it). */
	msg->sm = sched_msg_add(Q.s, &d, now);
	str_release(&e);
}

/* ---- the end of a pass --------------------------------------------- */

/* The queue lifetime is over: every recipient still queued fails, with
 * the reason of its deferral in this pass (the defer log) or, for one
 * without a record, "delivery time expired". */
static void expire_recipients(qmgr_msg_t *msg, double now)
{
	rec_batch_t *b = xcalloc(1, sizeof(*b));
	str_t err = STR_INIT;
	sl_reader_t *rd;
	sl_rec_t rec;
	qf_rcpt_batch_t qb = { NULL, 0, 0 };
	long n;
	int rc;

	rd = statuslog_open(&Q.ql, SL_DEFER, msg->id, &err);
	if (rd != NULL) {
		while ((rc = statuslog_next(rd, &rec, &err)) == 1) {
			rec.st.action = DLV_ACT_FAILED;
			batch_add(b, &rec.rcpt, &rec.st, (int64_t)now);
			if (b->n == QMGR_READ_BATCH)
				batch_flush(msg, b);
		}
		if (rc < 0)
			log_warning("%s: defer log: %s", msg->id, str_cstr(&err));
		statuslog_close(rd);
	} else if (errno != ENOENT) {
		log_warning("%s: defer log: %s", msg->id, str_cstr(&err));
	}
	batch_flush(msg, b);

	qfile_rcpt_rewind(msg->qf);
	while ((n = qfile_rcpt_read(msg->qf, &qb, QMGR_READ_BATCH, 0)) > 0) {
		for (long i = 0; i < n; i++) {
			qmgr_rcpt_t *qr = rcpt_new(&qb.rcpt[i]);
			dlv_status_t st;
			memset(&st, 0, sizeof(st));
			bcopy_str(st.status, sizeof(st.status), "5.4.7");
			st.action = DLV_ACT_FAILED;
			st.reason = (char *)"delivery time expired";
			st.relay = (char *)"none";
			batch_add(b, &qr->r, &st, (int64_t)now);
			qmgr_rcpt_free(qr);
		}
		/* Marking done does not move the reader: safe mid-read. */
		batch_flush(msg, b);
	}
	if (n < 0)
		log_warning("%s: reading recipients: %s", msg->id,
		    qfile_error(msg->qf)->reason);
	qf_rcpt_batch_free(&qb);
	free(b);
	if (statuslog_remove(&Q.ql, SL_DEFER, msg->id, &err) < 0)
		log_warning("%s: %s", msg->id, str_cstr(&err));
	str_release(&err);
}

/* Recipients the core never saw (deferred by the resolver, left unread
 * after a read error, or failed without a bounce record on disk) keep
 * the message in the queue whatever the core's verdict.  Runs once the
 * pending bounce records were written. */
static void adjust_result(qmgr_msg_t *msg)
{
	double now = msg->res_time;

	if (msg->res.status != SCHED_MSG_DONE || (msg->deferred_here == 0
	    && !msg->read_error && msg->unlogged == 0))
		return;
	if (!msg->read_error && msg->unlogged == 0
	    && backoff_expired(&Q.sp.backoff, msg->arrival, now,
	    msg->null_sender)) {
		msg->res.status = SCHED_MSG_EXPIRED;
	} else {
		msg->res.status = SCHED_MSG_DEFERRED;
		msg->res.retry_time = backoff_next_retry(&Q.sp.backoff,
		    msg->res.attempt, msg->arrival, now);
	}
}

static void fin_advance(qmgr_msg_t *msg);

static void notice_done(qmgr_msg_t *msg, bool ok, const char *reason)
{
	msg->notice_busy = false;
	if (!ok) {
		log_warning("%s: %s notice not sent: %s; the message stays queued",
		    msg->id, msg->notice_kind, reason);
		if (msg->step != FIN_DISPOSE)	/* a delay warning may wait */
			msg->notice_failed = true;
	} else {
		log_debug("%s: %s notice: %s", msg->id, msg->notice_kind, reason);
	}
	qmgr_kick();
}

static void delay_done(qmgr_msg_t *msg, bool ok, const char *reason)
{
	msg->notice_busy = false;
	if (ok) {
		log_info("%s: delay warning sent to <%s>", msg->id,
		    qfile_sender(msg->qf));
		if (qfile_set_warn_time(msg->qf, 0, 0) < 0)
			log_warning("%s: clearing the delay warning time: %s",
			    msg->id, qfile_error(msg->qf)->reason);
	} else {
		log_warning("%s: delay warning not sent: %s; trying again at "
		    "the next attempt", msg->id, reason);
	}
	qmgr_kick();
}

static bool send_notice(qmgr_msg_t *msg, dsn_notice_req_t *req,
    const char *kind, void (*done)(qmgr_msg_t *, bool, const char *))
{
	msg->notice_kind = kind;
	if (Q.exiting) {
		/* Left in the active queue: the next qmgr asks. */
		dsn_notice_free(req);
		msg->notice_busy = true;
		return true;
	}
	if (Q.bounce_endpoint == NULL) {
		log_warning("%s: %s notice not sent: no bounce service in "
		    "master.cf", msg->id, kind);
		if (done != delay_done)
			msg->notice_failed = true;
		dsn_notice_free(req);
		return false;
	}
	msg->notice_busy = true;
	qmgr_notice_send(msg, req, done);
	return true;
}

/* Success notices, from the trace log, at most DSN_NOTICE_MAX_INLINE
 * recipients a request.  Returns true when a request was sent. */
static bool success_next(qmgr_msg_t *msg)
{
	str_t err = STR_INIT;
	dsn_notice_req_t req;
	sl_rec_t rec;
	int rc = 0;

	if (msg->trace_rd == NULL) {
		if (!msg->wrote_trace && !msg->old_logs)
			return false;
		msg->trace_rd = statuslog_open(&Q.ql, SL_TRACE, msg->id, &err);
		if (msg->trace_rd == NULL) {
			if (errno != ENOENT) {
				log_warning("%s: trace log: %s", msg->id,
				    str_cstr(&err));
				msg->notice_failed = true;
			}
			str_release(&err);
			return false;
		}
	}
	dsn_notice_init(&req, DSN_NOTICE_SUCCESS, QUEUE_ACTIVE, msg->id,
	    DSN_N_NO_LOG);
	while (req.nrec < DSN_NOTICE_MAX_INLINE
	    && (rc = statuslog_next(msg->trace_rd, &rec, &err)) == 1)
		dsn_notice_add(&req, &rec);
	if (rc < 0) {
		log_warning("%s: trace log: %s", msg->id, str_cstr(&err));
		msg->notice_failed = true;
	}
	if (req.nrec == 0) {
		statuslog_close(msg->trace_rd);
		msg->trace_rd = NULL;
		dsn_notice_free(&req);
		if (!msg->notice_failed
		    && statuslog_remove(&Q.ql, SL_TRACE, msg->id, &err) < 0)
			log_warning("%s: %s", msg->id, str_cstr(&err));
		str_release(&err);
		return false;
	}
	str_release(&err);
	return send_notice(msg, &req, "success", notice_done);
}

static void dispose(qmgr_msg_t *msg, double now)
{
	sched_msg_status_t status = msg->res.status;
	str_t err = STR_INIT, path = STR_INIT;

	if (msg->trace_rd != NULL) {
		statuslog_close(msg->trace_rd);
		msg->trace_rd = NULL;
	}
	/* A notice that could not be sent keeps the message (and its logs)
	 * for another pass, which asks again. */
	if (status != SCHED_MSG_DEFERRED && msg->notice_failed) {
		status = SCHED_MSG_DEFERRED;
		msg->res.retry_time = backoff_next_retry(&Q.sp.backoff,
		    msg->res.attempt, msg->arrival, now);
	}
	if (status == SCHED_MSG_DEFERRED) {
		struct timeval tv[2];
		double t = msg->res.retry_time;
		if (qfile_set_attempts(msg->qf, (unsigned long)msg->res.attempt,
		    QF_SYNC) < 0)
			log_warning("%s: updating the attempt count: %s", msg->id,
			    qfile_error(msg->qf)->reason);
		/* The file time is the retry time (whole seconds, rounded
		 * up so that a scan never takes it early). */
		tv[0].tv_sec = tv[1].tv_sec = (time_t)t + ((double)(time_t)t < t);
		tv[0].tv_usec = tv[1].tv_usec = 0;
		if (utimes(qfile_path(msg->qf), tv) < 0)
			log_warning("%s: setting the retry time: %s", msg->id,
			    strerror(errno));
		qfile_close(msg->qf);
		msg->qf = NULL;
		if (qmgr_move(QUEUE_ACTIVE, QUEUE_DEFERRED, msg->id, true) < 0)
			log_error("%s: cannot move to the deferred queue; it stays "
			    "in active until qmgr restarts", msg->id);
		Q.deferred_msgs++;
	} else {
		str_set(&path, qfile_path(msg->qf));
		/* On a first pass only this pass's defer log can exist, at
		 * the configured place. */
		if ((msg->old_logs || msg->wrote_defer)
		    && (msg->old_logs ? statuslog_remove : statuslog_discard)(
		    &Q.ql, SL_DEFER, msg->id, &err) < 0)
			log_warning("%s: %s", msg->id, str_cstr(&err));
		qfile_close(msg->qf);
		msg->qf = NULL;
		/* Removed, or kept empty for a new message (qfile.h). */
		if (qfile_recycle(&Q.ql, str_cstr(&path), msg->id) < 0 &&
		    errno != ENOENT) {
			log_error("%s: remove %s: %s", msg->id, str_cstr(&path),
			    strerror(errno));
		} else {
			log_info("%s: removed", msg->id);
			Q.removed++;
		}
	}
	list_remove(&msg->node);
	qmgr_mxgroup_forget(msg);
	Q.active--;
	qf_rcpt_batch_free(&msg->batch);
	free(msg->bpend);
	free(msg->filter_tr);
	free(msg->filter_nh);
	free(msg);
	str_release(&err);
	str_release(&path);
	qmgr_kick();			/* room in the active queue */
}

/* Moves a finished message along until it waits for the bounce daemon
 * or is gone. */
static void fin_advance(qmgr_msg_t *msg)
{
	double now = qmgr_now();
	dsn_notice_req_t req;

	while (!msg->notice_busy) {
		switch (msg->step) {
		case FIN_NONE:
			return;
		case FIN_EXPIRE:
			msg->step = FIN_BOUNCE;
			adjust_result(msg);
			if (msg->res.status == SCHED_MSG_EXPIRED) {
				expire_recipients(msg, now);
				log_info("%s: from=<%s>, status=expired, returned "
				    "to sender", msg->id, qfile_sender(msg->qf));
				Q.expired++;
			}
			break;
		case FIN_BOUNCE:
			msg->step = FIN_SUCCESS;
			if ((msg->wrote_bounce || msg->old_logs) &&
			    statuslog_exists(&Q.ql, SL_BOUNCE, msg->id) != 0) {
				dsn_notice_init(&req, DSN_NOTICE_BOUNCE,
				    QUEUE_ACTIVE, msg->id, 0);
				if (send_notice(msg, &req, "non-delivery",
				    notice_done))
					return;
			}
			break;
		case FIN_SUCCESS:
			if (!success_next(msg))
				msg->step = FIN_DELAY;
			else
				return;
			break;
		case FIN_DELAY:
			msg->step = FIN_DISPOSE;
			if (msg->res.status == SCHED_MSG_DEFERRED
			    && !msg->notice_failed
			    && Q.delay_warning_time > 0
			    && qfile_warn_time(msg->qf) > 0
			    && (double)qfile_warn_time(msg->qf) <= now) {
				dsn_notice_init(&req, DSN_NOTICE_DELAY,
				    QUEUE_ACTIVE, msg->id, 0);
				if (send_notice(msg, &req, "delay", delay_done))
					return;
			}
			break;
		case FIN_DISPOSE:
			list_remove(&msg->fin_node);
			dispose(msg, now);
			return;
		}
	}
}

void qmgr_msg_finish_run(void)
{
	list_node_t *n, *tmp;

	qmgr_msg_sync_bounces();
	list_foreach_safe(n, tmp, &Q.finish) {
		qmgr_msg_t *msg = list_entry(n, qmgr_msg_t, fin_node);
		if (!msg->notice_busy)
			fin_advance(msg);
	}
}
