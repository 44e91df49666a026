/* qmgr: requests to the bounce daemon (dsn_notice.h), in the event loop
 * like deliveries: connect, write, read the reply, with a deadline of
 * qmgr_ipc_timeout.  The outcome goes to the caller's done(). */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "log.h"
#include "mem.h"
#include "qmgr_int.h"
#include "sock.h"

#define CONNECT_RETRY_MS	50

typedef struct notice {
	qmgr_msg_t *msg;
	void (*done)(qmgr_msg_t *, bool, const char *);
	int fd;
	bool connecting, reading;
	str_t out;
	size_t outpos;
	attr_reader_t *rd;
	event_timer_t timer, retry;
	double deadline;
} notice_t;

static void notice_event(int fd, int events, void *ctx);
static void notice_connect(notice_t *n);

static void notice_end(notice_t *n, bool ok, const char *reason)
{
	if (n->fd >= 0) {
		event_remove(Q.loop, n->fd);
		close(n->fd);
	}
	event_timer_cancel(&n->timer);
	event_timer_cancel(&n->retry);
	n->done(n->msg, ok, reason);
	str_release(&n->out);
	if (n->rd)
		attr_reader_free(n->rd);
	free(n);
}

static void notice_failf(notice_t *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void notice_failf(notice_t *n, const char *fmt, ...)
{
	str_t why = STR_INIT;
	va_list ap;

	va_start(ap, fmt);
	str_vcatf(&why, fmt, ap);
	va_end(ap);
	notice_end(n, false, str_cstr(&why));
	str_release(&why);
}

static void timeout_event(void *ctx)
{
	notice_failf(ctx, "bounce service %s: no reply within %lds",
	    Q.bounce_endpoint, Q.ipc_timeout);
}

static void retry_event(void *ctx)
{
	notice_connect(ctx);
}

static void notice_connect(notice_t *n)
{
	int fd, err = sock_unix_connect_start(Q.bounce_endpoint, &fd);

	if (err == 0 || err == EINPROGRESS) {
		n->fd = fd;
		n->connecting = true;
		event_add(Q.loop, fd, EVENT_WRITE, notice_event, n);
		return;
	}
	if (err == ENAMETOOLONG) {
		notice_failf(n, "bounce service %s: path too long",
		    Q.bounce_endpoint);
		return;
	}
	if (err == EMFILE || err == ENFILE) {
		notice_failf(n, "socket: %s", strerror(err));
		return;
	}
	if (err == EAGAIN && qmgr_now() < n->deadline) {
		event_timer_start(Q.loop, &n->retry, CONNECT_RETRY_MS);
		return;
	}
	notice_failf(n, "bounce service %s: connect: %s", Q.bounce_endpoint,
	    strerror(err));
}

static void notice_read(notice_t *n)
{
	char buf[4096];
	ssize_t r = read(n->fd, buf, sizeof(buf));
	size_t used;
	enum attr_result ar;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		notice_failf(n, "bounce service %s: connection closed without "
		    "a reply", Q.bounce_endpoint);
		return;
	}
	ar = attr_reader_feed(n->rd, buf, (size_t)r, &used);
	if (ar == ATTR_NEED_MORE)
		return;
	if (ar == ATTR_DONE) {
		attr_msg_t *m = attr_reader_take(n->rd);
		dsn_notice_reply_t rep;
		str_t err = STR_INIT;
		memset(&rep, 0, sizeof(rep));
		if (dsn_notice_reply_decode(m, &rep, &err) < 0) {
			notice_failf(n, "bounce service %s: malformed reply: %s",
			    Q.bounce_endpoint, str_cstr(&err));
		} else {
			str_setf(&err, "%s%s%s", rep.reason ? rep.reason : "",
			    rep.notice_id && *rep.notice_id ? ", notice " : "",
			    rep.notice_id && *rep.notice_id ? rep.notice_id : "");
			notice_end(n, rep.status == 0, str_cstr(&err));
		}
		dsn_notice_reply_free(&rep);
		attr_msg_free(m);
		str_release(&err);
		return;
	}
	notice_failf(n, "bounce service %s: malformed reply: %s",
	    Q.bounce_endpoint, attr_reader_error(n->rd));
}

static void notice_event(int fd, int events, void *ctx)
{
	notice_t *n = ctx;
	(void)fd;
	(void)events;

	if (n->connecting) {
		int err = sock_connect_error(n->fd);
		if (err != 0) {
			notice_failf(n, "bounce service %s: connect: %s",
			    Q.bounce_endpoint, strerror(err));
			return;
		}
		n->connecting = false;
	}
	if (n->reading) {
		notice_read(n);
		return;
	}
	while (n->outpos < str_len(&n->out)) {
		ssize_t w = send(n->fd, str_cstr(&n->out) + n->outpos,
		    str_len(&n->out) - n->outpos, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			notice_failf(n, "bounce service %s: write: %s",
			    Q.bounce_endpoint, strerror(errno));
			return;
		}
		n->outpos += (size_t)w;
	}
	n->reading = true;
	event_modify(Q.loop, n->fd, EVENT_READ);
}

void qmgr_notice_send(qmgr_msg_t *msg, dsn_notice_req_t *req,
    void (*done)(qmgr_msg_t *msg, bool ok, const char *reason))
{
	notice_t *n = xcalloc(1, sizeof(*n));
	str_t err = STR_INIT;

	n->msg = msg;
	n->done = done;
	n->fd = -1;
	n->deadline = qmgr_now() + (double)Q.ipc_timeout;
	event_timer_init(&n->timer, timeout_event, n);
	event_timer_init(&n->retry, retry_event, n);
	if (dsn_notice_encode(req, &n->out, &err) < 0) {
		dsn_notice_free(req);
		notice_failf(n, "cannot make the request: %s", str_cstr(&err));
		str_release(&err);
		return;
	}
	dsn_notice_free(req);
	str_release(&err);
	n->rd = dsn_notice_reply_reader_new();
	event_timer_start(Q.loop, &n->timer, (int64_t)Q.ipc_timeout * 1000);
	notice_connect(n);
}
