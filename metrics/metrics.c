/* metrics(8): the scheduler's state and counters and the queue sizes for
 * Prometheus, at GET /metrics on an inet service of master.cf.
 *
 * One client at a time (SERVER_SINGLE): read the head of one HTTP
 * request within HTTP_READ_MS, answer, close.  A scrape asks qmgr for
 * one status reply over the control channel and counts the queue
 * directories; when qmgr cannot be reached the answer is still 200, with
 * petrel_qmgr_up 0.  Runs as mail_owner, chrooted in the queue directory
 * (everything it opens is relative to it).  doc/metrics.md. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include "event.h"
#include "log.h"
#include "metrics.h"
#include "qmgr_clnt.h"
#include "server.h"
#include "sock.h"

/* qmgr's answer, connect and reply together. */
#define QMGR_TIMEOUT_MS	3000
#define WRITE_TIMEOUT_MS 10000
#define MAX_DSC		1000
/* After the answer: what the client still sends is read and dropped. */
#define DRAIN_MS	1000
#define DRAIN_MAX	65536
#define CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

/* qmgr's status without job lists, with at most MAX_DSC status cache
 * entries (qmgr's own cap for a status reply); NULL (logged) when
 * qmgr cannot be reached or the exchange fails. */
static attr_msg_t *ask_qmgr(void)
{
	str_t req = STR_INIT, err = STR_INIT;
	qmgr_clnt_t *c;
	attr_msg_t *m = NULL;

	if ((c = qmgr_clnt_connect(".", QMGR_TIMEOUT_MS, &err)) == NULL) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			log_info("%s", str_cstr(&err));
		else
			log_warning("cannot reach qmgr: %s", str_cstr(&err));
		goto out;
	}
	attr_put_str(&req, "request", QMGR_CLNT_REQ_STATUS);
	attr_put_int(&req, "max_jobs", 0);
	attr_put_int(&req, "max_dsc", MAX_DSC);
	attr_put_end(&req);
	if ((m = qmgr_clnt_call(c, &req, QMGR_TIMEOUT_MS, &err)) == NULL)
		log_warning("qmgr status request: %s", str_cstr(&err));
	else if (qmgr_clnt_reply_status(m) != QMGR_CLNT_OK)
		log_warning("qmgr status request refused: %s",
		    qmgr_clnt_reply_reason(m));
	qmgr_clnt_close(c);
out:
	str_release(&req);
	str_release(&err);
	return m;
}

static double mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void scrape(str_t *body)
{
	double t0 = mono_seconds();
	metrics_input_t in;
	queue_layout_t ql;
	str_t err = STR_INIT;
	bool have_ql;
	attr_msg_t *m;

	memset(&in, 0, sizeof(in));
	m = ask_qmgr();
	in.status = m;
	have_ql = queue_layout_here(&ql, &err) == 0;
	if (!have_ql)
		log_error("%s", str_cstr(&err));
	for (size_t i = 0; i < METRICS_NQUEUES; i++) {
		str_reset(&err);
		in.queue[i] = -1;
		if (have_ql && metrics_count_queue(&ql, metrics_queues[i],
		    &in.queue[i], &err) < 0) {
			log_warning("counting the %s queue: %s", metrics_queues[i],
			    str_cstr(&err));
			in.queue[i] = -1;
		}
	}
	in.duration = mono_seconds() - t0;
	metrics_render(body, &in);
	if (have_ql)
		queue_layout_free(&ql);
	if (m != NULL)
		attr_msg_free(m);
	str_release(&err);
}

static void peer_text(int fd, char *buf, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0
	    || !sock_addr_port_str((struct sockaddr *)&ss, buf, size))
		(void)bfmt(buf, size, "unknown");
}

/* Reads the head of the request into r; false when the client went away
 * or was too slow (nothing to answer). */
static bool read_head(stream_t *st, http_req_t *r, const char *peer)
{
	int64_t deadline = event_now_ms() + HTTP_READ_MS;
	str_t line = STR_INIT;
	bool ok = true;

	http_req_init(r);
	for (;;) {
		int64_t left = deadline - event_now_ms();
		size_t max = r->lines == 0 ? HTTP_REQLINE_MAX : HTTP_HEADER_MAX;
		int rc;

		if (left <= 0) {
			log_warning("%s: no complete request within %d s", peer,
			    HTTP_READ_MS / 1000);
			ok = false;
			break;
		}
		stream_set_timeouts(st, (int)left, WRITE_TIMEOUT_MS);
		rc = stream_getline(st, &line, max + 1);
		if (rc == STREAM_LINE_MORE) {
			http_req_fail(r, 400, r->lines == 0 ? "request line too long"
			    : "header line too long");
			break;
		}
		if (rc != STREAM_LINE_LF && rc != STREAM_LINE_CRLF) {
			if (stream_timedout(st))
				log_warning("%s: no complete request within %d s",
				    peer, HTTP_READ_MS / 1000);
			else if (r->lines > 0 || rc == STREAM_LINE_PARTIAL)
				log_warning("%s: connection closed in the middle of "
				    "the request", peer);
			ok = false;
			break;
		}
		if (http_req_line(r, str_cstr(&line), str_len(&line)))
			break;
	}
	str_release(&line);
	return ok;
}

static void serve(stream_t *st, void *ctx)
{
	str_t out = STR_INIT, body = STR_INIT;
	char peer[128];
	http_req_t r;
	(void)ctx;

	peer_text(stream_fd(st), peer, sizeof(peer));
	if (!read_head(st, &r, peer))
		goto out;
	if (r.status == 200) {
		scrape(&body);
		http_answer(&out, 200, r.head, CONTENT_TYPE, str_cstr(&body),
		    str_len(&body));
	} else {
		log_warning("%s: %d %s: %s", peer, r.status,
		    http_status_text(r.status), r.why);
		str_setf(&body, "%d %s\n", r.status, http_status_text(r.status));
		http_answer(&out, r.status, r.head, NULL, str_cstr(&body),
		    str_len(&body));
	}
	stream_set_timeouts(st, HTTP_READ_MS, WRITE_TIMEOUT_MS);
	if (stream_write(st, str_cstr(&out), str_len(&out)) < 0
	    || stream_flush(st) < 0)
		log_warning("%s: cannot send the answer: %s", peer,
		    stream_timedout(st) ? "timed out"
		    : strerror(stream_errno(st)));
	/* Close our side first, then read (and drop) what the client sent
	 * beyond the head, a bounded amount for a bounded time: closing
	 * with unread input would reset the connection, and the client
	 * could lose the answer. */
	(void)shutdown(stream_fd(st), SHUT_WR);
	stream_set_timeouts(st, DRAIN_MS, WRITE_TIMEOUT_MS);
	for (size_t n = 0; n < DRAIN_MAX;) {
		char buf[4096];
		ssize_t k = stream_read_some(st, buf, sizeof(buf));
		if (k <= 0)
			break;
		n += (size_t)k;
	}
out:
	str_release(&out);
	str_release(&body);
}

int main(int argc, char **argv)
{
	static const server_spec_t spec = {
		.model = SERVER_SINGLE,
		.serve = serve,
	};

	server_main(argc, argv, &spec);
}
