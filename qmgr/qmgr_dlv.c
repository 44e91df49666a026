/* qmgr: deliveries.  Each entry the core selects goes to its transport's
 * agent (master.cf service, private/TRANSPORT) over a non-blocking UNIX
 * socket: connect, write the request, read the reply as it arrives, all
 * in the event loop, under a deadline of TRANSPORT_time_limit plus
 * qmgr_ipc_timeout.  An agent that crashes, hangs or answers garbage
 * costs its recipients a deferral with a clear reason, and counts
 * against its transport (transport_retry_time); qmgr goes on. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "log.h"
#include "mem.h"
#include "qmgr_int.h"
#include "sock.h"

/* Listen queue full (EAGAIN on Linux): try again this often. */
#define CONNECT_RETRY_MS	50
#define READ_CHUNK		16384

static void dlv_event(int fd, int events, void *ctx);

size_t qmgr_dlv_count(void)
{
	return list_count(&Q.dlvs);
}

/* Off the event loop, the socket closed (the reply, if any, is kept
 * for the recipients' outcomes). */
static void detach(qmgr_dlv_t *d)
{
	if (d->fd >= 0) {
		event_remove(Q.loop, d->fd);
		close(d->fd);
		d->fd = -1;
	}
	event_timer_cancel(&d->timer);
	event_timer_cancel(&d->retry);
}

static void dlv_free(qmgr_dlv_t *d)
{
	detach(d);
	if (list_linked(&d->node))
		list_remove(&d->node);
	str_release(&d->out);
	str_release(&d->reason);
	if (d->rd)
		attr_reader_free(d->rd);
	dlv_request_free(&d->req);
	if (d->have_reply)
		dlv_reply_free(&d->rep);
	free(d);
}

/* The delivery failed without a usable reply: every recipient deferred
 * with the reason; no concurrency feedback (the destination said
 * nothing).  agent_fault: count it against the transport. */
static void dlv_fail(qmgr_dlv_t *d, bool agent_fault, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void dlv_fail(qmgr_dlv_t *d, bool agent_fault, const char *fmt, ...)
{
	va_list ap;
	double now = qmgr_now();

	va_start(ap, fmt);
	str_reset(&d->reason);
	str_vcatf(&d->reason, fmt, ap);
	va_end(ap);
	d->failed = true;
	if (Q.exiting) {
		/* Stopping: most likely the request never reached an agent
		 * (it waited in a listen queue that closed).  Not a failure
		 * of the destination or the agent: the recipients stay as
		 * they are in the active queue, and the next qmgr delivers
		 * them without a back-off. */
		log_info("%s: delivery abandoned while stopping (%s); the "
		    "message stays in the active queue", d->msg->id,
		    str_cstr(&d->reason));
		detach(d);
		return;
	}
	log_warning("%s: %s", d->msg->id, str_cstr(&d->reason));
	detach(d);
	if (agent_fault)
		qmgr_transport_failure(d->tr, str_cstr(&d->reason), now);
	qmgr_dlv_give_up(d->e, str_cstr(&d->reason), now);
	dlv_free(d);
	qmgr_kick();
}

static void dlv_complete(qmgr_dlv_t *d)
{
	size_t n = d->rep.n;
	sched_rcpt_result_t *res = xcalloc(n ? n : 1, sizeof(*res));
	const char *reason = d->rep.reason && *d->rep.reason ? d->rep.reason : NULL;
	int flags = 0;
	double now = qmgr_now();

	for (size_t i = 0; i < n; i++) {
		dlv_status_t *st = &d->rep.st[i];
		switch (st->action) {
		case DLV_ACT_DELIVERED:
		case DLV_ACT_RELAYED:
		case DLV_ACT_EXPANDED:
			res[i].status = SCHED_RCPT_SENT;
			break;
		case DLV_ACT_FAILED:
			if (Q.soft_bounce) {
				/* Would-be bounces become deferrals. */
				st->status[0] = '4';
				st->action = DLV_ACT_DELAYED;
				res[i].status = SCHED_RCPT_DEFERRED;
			} else {
				res[i].status = SCHED_RCPT_BOUNCED;
			}
			break;
		default:
			res[i].status = SCHED_RCPT_DEFERRED;
			break;
		}
		res[i].reason = st->reason;
		if (reason == NULL && res[i].status != SCHED_RCPT_SENT)
			reason = st->reason;
	}
	if (d->rep.flags & DLV_R_CONN_FAIL)
		flags |= SCHED_DLV_CONN_FAIL;
	if (d->rep.flags & DLV_R_AVOID)
		flags |= SCHED_DLV_SITE_FAIL;
	qmgr_transport_success(d->tr);
	detach(d);
	sched_delivery_done(Q.s, d->e, res, flags, reason, now);
	qmgr_msg_sync_bounces();
	free(res);
	dlv_free(d);
	qmgr_kick();
}

static void deadline_event(void *ctx)
{
	qmgr_dlv_t *d = ctx;

	dlv_fail(d, true, "delivery agent timed out (transport %s: no reply "
	    "within %lds)", d->tr->name, d->tr->time_limit + Q.ipc_timeout);
}

static void want(qmgr_dlv_t *d, int events)
{
	if (event_interest(Q.loop, d->fd) < 0)
		event_add(Q.loop, d->fd, events, dlv_event, d);
	else
		event_modify(Q.loop, d->fd, events);
}

static void connect_try(qmgr_dlv_t *d);
static void on_write(qmgr_dlv_t *d);

static void retry_event(void *ctx)
{
	connect_try(ctx);
}

static void connect_try(qmgr_dlv_t *d)
{
	int fd, err = sock_unix_connect_start(d->tr->endpoint, &fd);

	if (err == 0) {
		/* Connected at once (an agent was waiting): the request goes
		 * now, not one event-loop round later; the agent would sit
		 * in poll() meanwhile. */
		d->fd = fd;
		d->state = DLV_WRITE;
		on_write(d);
		return;
	}
	if (err == EINPROGRESS) {
		d->fd = fd;
		d->state = DLV_CONNECT;
		want(d, EVENT_WRITE);
		return;
	}
	if (err == ENAMETOOLONG) {
		dlv_fail(d, true, "delivery agent unavailable (transport %s: "
		    "socket path %s too long)", d->tr->name, d->tr->endpoint);
		return;
	}
	if (err == EMFILE || err == ENFILE) {
		/* Out of descriptors is our problem, not the agent's. */
		dlv_fail(d, false, "cannot reach delivery agent (transport %s: "
		    "socket: %s)", d->tr->name, strerror(err));
		return;
	}
	if (err == EAGAIN && qmgr_now() < d->connect_deadline) {
		/* The agents are all busy and the listen queue is full. */
		event_timer_start(Q.loop, &d->retry, CONNECT_RETRY_MS);
		return;
	}
	dlv_fail(d, true, "delivery agent unavailable (transport %s: "
	    "connect to %s: %s)", d->tr->name, d->tr->endpoint,
	    err == EAGAIN ? "listen queue full" : strerror(err));
}

static void on_read(qmgr_dlv_t *d)
{
	char buf[READ_CHUNK];
	ssize_t n = read(d->fd, buf, sizeof(buf));
	size_t used = 0;
	enum attr_result r;

	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		dlv_fail(d, true, "delivery agent crashed (transport %s: read: %s)",
		    d->tr->name, strerror(errno));
		return;
	}
	if (n == 0) {
		dlv_fail(d, true, "delivery agent crashed (transport %s: "
		    "connection closed without a reply)", d->tr->name);
		return;
	}
	r = attr_reader_feed(d->rd, buf, (size_t)n, &used);
	if (r == ATTR_NEED_MORE)
		return;
	if (r == ATTR_DONE) {
		attr_msg_t *m = attr_reader_take(d->rd);
		str_t err = STR_INIT;
		int rc = dlv_reply_decode(m, &d->req, &d->rep, &err);
		attr_msg_free(m);
		d->have_reply = true;
		if (rc < 0) {
			dlv_fail(d, true, "malformed reply from delivery agent "
			    "(transport %s: %s)", d->tr->name, str_cstr(&err));
		} else {
			dlv_complete(d);
		}
		str_release(&err);
		return;
	}
	dlv_fail(d, true, "malformed reply from delivery agent (transport %s: "
	    "%s)", d->tr->name, attr_reader_error(d->rd));
}

static void on_write(qmgr_dlv_t *d)
{
	while (d->outpos < str_len(&d->out)) {
		ssize_t n = send(d->fd, str_cstr(&d->out) + d->outpos,
		    str_len(&d->out) - d->outpos, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				want(d, EVENT_WRITE);
				return;
			}
			dlv_fail(d, true, "delivery agent crashed (transport %s: "
			    "write: %s)", d->tr->name, strerror(errno));
			return;
		}
		d->outpos += (size_t)n;
	}
	/* One request a connection: say so, and the agent sees the end
	 * right after its reply instead of waiting in poll() until we have
	 * read the reply and closed (it takes no new client meanwhile). */
	(void)shutdown(d->fd, SHUT_WR);
	d->state = DLV_READ;
	want(d, EVENT_READ);
}

static void dlv_event(int fd, int events, void *ctx)
{
	qmgr_dlv_t *d = ctx;
	(void)fd;

	switch (d->state) {
	case DLV_CONNECT: {
		int err = sock_connect_error(d->fd);
		if (err != 0) {
			dlv_fail(d, true, "delivery agent unavailable (transport "
			    "%s: connect to %s: %s)", d->tr->name, d->tr->endpoint,
			    strerror(err));
			return;
		}
		d->state = DLV_WRITE;
	}
		/* FALLTHROUGH */
	case DLV_WRITE:
		if (events & (EVENT_WRITE | EVENT_ERROR))
			on_write(d);
		break;
	case DLV_READ:
		if (events & (EVENT_READ | EVENT_ERROR))
			on_read(d);
		break;
	}
}

void qmgr_dlv_start(sched_entry_t *e, qmgr_transport_t *tr)
{
	qmgr_dlv_t *d = xcalloc(1, sizeof(*d));
	qmgr_msg_t *msg = sched_msg_ctx(sched_entry_msg(e));
	size_t n = sched_entry_count(e);
	str_t err = STR_INIT;
	struct timeval tv;
	const char *envid;

	d->tr = tr;
	d->e = e;
	d->msg = msg;
	d->fd = -1;
	d->start = qmgr_now();
	d->connect_deadline = d->start + (double)Q.ipc_timeout;
	event_timer_init(&d->timer, deadline_event, d);
	event_timer_init(&d->retry, retry_event, d);
	list_append(&Q.dlvs, &d->node);
	tr->deliveries++;

	dlv_request_init(&d->req, QUEUE_ACTIVE, msg->id, qfile_sender(msg->qf),
	    sched_entry_nexthop(e));
	d->req.content_offset = (int64_t)qfile_content_offset(msg->qf);
	d->req.content_size = (int64_t)qfile_content_size(msg->qf);
	qfile_arrival(msg->qf, &tv);
	d->req.arrival = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
	d->req.active = (int64_t)(msg->active_time * 1e6);
	if ((envid = qfile_envid(msg->qf)) != NULL) {
		free(d->req.envid);
		d->req.envid = xstrdup(envid);
	}
	d->req.ret = qfile_ret(msg->qf);
	if (log_verbose > 0)
		d->req.flags |= DLV_F_VERBOSE;
	{
		long mpc = sched_entry_limits(e)->msgs_per_conn;
		d->req.reuse_limit = mpc > INT_MAX ? INT_MAX : (int)mpc;
	}
	for (size_t i = 0; i < n; i++) {
		const sched_rcpt_t *rc = sched_entry_rcpt(e, i);
		qmgr_rcpt_t *qr = rc->cookie.rcpt;
		qr->dlv = d;
		qr->idx = i;
		dlv_request_add_rcpt(&d->req, qr->r.address, qr->r.orig,
		    qr->r.orcpt, qr->r.notify, qr->r.offset);
	}
	if (dlv_request_encode(&d->req, &d->out, &err) < 0) {
		/* Data an agent must refuse (a damaged or hand-made queue
		 * file): not the agent's fault. */
		dlv_fail(d, false, "cannot make a delivery request: %s",
		    str_cstr(&err));
		str_release(&err);
		return;
	}
	str_release(&err);
	d->rd = dlv_reply_reader_new();
	event_timer_start(Q.loop, &d->timer,
	    (int64_t)(d->tr->time_limit + Q.ipc_timeout) * 1000);
	connect_try(d);
}

void qmgr_dlv_give_up(sched_entry_t *e, const char *reason, double now)
{
	for (size_t i = 0; i < sched_entry_count(e); i++)
		sched_entry_rcpt(e, i)->cookie.rcpt->nodlv_dsn = "4.3.0";
	sched_delivery_done(Q.s, e, NULL, SCHED_DLV_NO_FEEDBACK, reason, now);
}

bool qmgr_dlv_status(const qmgr_rcpt_t *qr, sched_rcpt_status_t status,
    const char *reason, dlv_status_t *out, dlv_delays_t *dl,
    const qmgr_msg_t *msg, double now)
{
	const qmgr_dlv_t *d = qr->dlv;
	static const char want_class[] = { '2', '4', '5' };

	memset(out, 0, sizeof(*out));
	memset(dl, 0, sizeof(*dl));
	dl->total = now - msg->arrival;
	dl->a = msg->active_time - msg->arrival;
	if (dl->a < 0)
		dl->a = 0;
	if (d != NULL) {
		dl->b = d->start - msg->active_time;
		if (d->have_reply && (d->rep.conn_us > 0 || d->rep.xfer_us > 0)) {
			dl->c = (double)d->rep.conn_us / 1e6;
			dl->d = (double)d->rep.xfer_us / 1e6;
		} else {
			dl->d = now - d->start;
		}
	} else {
		dl->b = now - msg->active_time;
	}
	if (d != NULL && d->have_reply && !d->failed && qr->idx < d->rep.n
	    && d->rep.st[qr->idx].status[0] == want_class[status]) {
		*out = d->rep.st[qr->idx];
		return true;
	}
	/* No agent verdict for it (deferred by the core, an agent failure,
	 * or the core decided otherwise): the core's status and reason. */
	switch (status) {
	case SCHED_RCPT_SENT:
		bcopy_str(out->status, sizeof(out->status), "2.0.0");
		out->action = DLV_ACT_DELIVERED;
		break;
	case SCHED_RCPT_BOUNCED:
		bcopy_str(out->status, sizeof(out->status), "5.0.0");
		out->action = DLV_ACT_FAILED;
		break;
	case SCHED_RCPT_DEFERRED:
		/* Mail system trouble (agent failure, suspended transport) or
		 * a destination known to be down. */
		bcopy_str(out->status, sizeof(out->status),
		    qr->nodlv_dsn ? qr->nodlv_dsn : "4.4.1");
		out->action = DLV_ACT_DELAYED;
		break;
	}
	out->reason = (char *)(reason && *reason ? reason : "unknown reason");
	out->diag_type = out->diag_text = out->remote_mta = (char *)"";
	out->relay = (char *)"none";
	return false;
}

/* qmgr is leaving (retired by master): wait a little for the replies
 * of deliveries in flight, with poll() since we may be inside an event
 * callback, so that what the agents did is recorded rather than done
 * again after the restart.  Deliveries still waiting to connect are
 * abandoned (nothing reached an agent).  Returns how many are left. */
size_t qmgr_dlv_drain(double seconds)
{
	double deadline = qmgr_now() + seconds;

	while (!list_empty(&Q.dlvs)) {
		struct pollfd pfd[256];
		qmgr_dlv_t *who[256];
		list_node_t *n;
		int k = 0, ms, r;
		double left = deadline - qmgr_now();

		if (left <= 0)
			break;
		list_foreach(n, &Q.dlvs) {
			qmgr_dlv_t *d = list_entry(n, qmgr_dlv_t, node);
			if (d->fd < 0 || k == 256)
				continue;
			pfd[k].fd = d->fd;
			pfd[k].events = d->state == DLV_READ ? POLLIN : POLLOUT;
			pfd[k].revents = 0;
			who[k++] = d;
		}
		if (k == 0)
			break;
		ms = left > 0.1 ? 100 : (int)(left * 1000) + 1;
		r = poll(pfd, (nfds_t)k, ms);
		if (r < 0 && errno != EINTR)
			break;
		for (int i = 0; i < k && r > 0; i++) {
			int ev = 0;
			if (pfd[i].revents == 0)
				continue;
			if (pfd[i].revents & POLLIN)
				ev |= EVENT_READ;
			if (pfd[i].revents & POLLOUT)
				ev |= EVENT_WRITE;
			if (pfd[i].revents & (POLLERR | POLLHUP | POLLNVAL))
				ev |= EVENT_ERROR | (pfd[i].events & POLLIN ?
				    EVENT_READ : EVENT_WRITE);
			/* Only who[i] itself can go away in its handler. */
			dlv_event(pfd[i].fd, ev, who[i]);
		}
	}
	return qmgr_dlv_count();
}
