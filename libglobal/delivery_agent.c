/* The delivery protocol over a connection: the blocking client
 * (dlv_call) and the agent's main loop (dlv_agent_main). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "delivery.h"
#include "delivery_int.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "server.h"
#include "sock.h"

/* Milliseconds left before deadline (-1: none); 0 when passed. */
static int left_ms(int64_t deadline)
{
	int64_t l;

	if (deadline < 0)
		return -1;
	l = deadline - event_now_ms();
	if (l < 0)
		l = 0;
	return l > INT_MAX ? INT_MAX : (int)l;
}

int dlv_call(int fd, const dlv_request_t *req, dlv_reply_t *rep,
    int timeout_ms, str_t *err)
{
	int64_t deadline = timeout_ms < 0 ? -1 : event_now_ms() + timeout_ms;
	str_t buf = STR_INIT;
	attr_reader_t *r = NULL;
	attr_msg_t *msg = NULL;
	int rc = -1;

	memset(rep, 0, sizeof(*rep));
	if (dlv_request_encode(req, &buf, err) < 0) {
		str_t why = STR_INIT;
		str_setf(&why, "invalid request: %s", str_cstr(err));
		str_set(err, str_cstr(&why));
		str_release(&why);
		goto out;
	}
	if (attr_write_fd(fd, buf.buf, buf.len, left_ms(deadline)) < 0) {
		str_setf(err, "sending the request: %s", errno == ETIMEDOUT ?
		    "timed out" : strerror(errno));
		goto out;
	}
	r = dlv_reply_reader_new();
	switch (attr_read_fd(r, fd, left_ms(deadline))) {
	case ATTR_DONE:
		msg = attr_reader_take(r);
		break;
	case ATTR_EOF:
		str_setf(err, "connection closed without a reply");
		goto out;
	case ATTR_TIMEOUT:
		str_setf(err, "timed out waiting for the reply");
		goto out;
	default:
		if (attr_reader_errcode(r) == ATTR_E_IO)
			str_setf(err, "reading the reply: %s",
			    attr_reader_error(r));
		else
			str_setf(err, "malformed reply: %s",
			    attr_reader_error(r));
		goto out;
	}
	if (dlv_reply_decode(msg, req, rep, err) < 0) {
		str_t why = STR_INIT;
		str_setf(&why, "malformed reply: %s", str_cstr(err));
		str_set(err, str_cstr(&why));
		str_release(&why);
		dlv_reply_free(rep);
		goto out;
	}
	rc = 0;
out:
	if (msg)
		attr_msg_free(msg);
	if (r)
		attr_reader_free(r);
	str_release(&buf);
	return rc;
}

int dlv_call_path(const char *path, const dlv_request_t *req,
    dlv_reply_t *rep, int timeout_ms, str_t *err)
{
	int fd, e, rc;

	memset(rep, 0, sizeof(*rep));
	if ((e = sock_unix_connect(path, timeout_ms < 0 ? 0 : timeout_ms,
	    &fd)) != 0) {
		str_setf(err, "connect to %s: %s", path, strerror(e));
		return -1;
	}
	rc = dlv_call(fd, req, rep, timeout_ms, err);
	close(fd);
	return rc;
}

/* ---- The agent ------------------------------------------------------ */

static int client_fd = -1;
/* Set from main.cf by dlv_agent_main; the defaults serve tests that call
 * dlv_agent_serve_fd without a configuration. */
static bool agent_soft_bounce;
static int agent_log_digits = 2;

static int64_t wall_us(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

/* What the agent decided, as qmgr will record it: a recipient left
 * without a status is deferred (as dlv_reply_encode sends it), and with
 * soft_bounce a failure is a deferral; then the lines, from this
 * process as Postfix's agents log them. */
static void agent_finish(const dlv_request_t *req, dlv_reply_t *rep,
    int64_t handoff)
{
	dlv_status_set_all(rep, false, DLV_ACT_DELAYED, "4.3.0", "none",
	    "delivery agent did not report a status");
	if (agent_soft_bounce)
		for (size_t i = 0; i < rep->n; i++)
			if (rep->st[i].action == DLV_ACT_FAILED) {
				rep->st[i].action = DLV_ACT_DELAYED;
				rep->st[i].status[0] = '4';
			}
	dlv_log_reply(req, rep, handoff, wall_us(), agent_log_digits);
}

int dlv_agent_client_fd(void)
{
	return client_fd;
}

int dlv_agent_serve_fd(int fd, const dlv_agent_t *agent, int timeout_ms)
{
	attr_reader_t *r = dlv_request_reader_new();
	str_t out = STR_INIT, err = STR_INIT;
	int count = 0;

	for (;;) {
		dlv_request_t req;
		dlv_reply_t rep;
		attr_msg_t *msg;
		int64_t handoff;
		enum attr_result res = attr_read_fd(r, fd, timeout_ms);

		if (res == ATTR_EOF)
			break;
		if (res == ATTR_TIMEOUT) {
			log_warning("delivery request: timed out after %d ms",
			    timeout_ms);
			count = -1;
			break;
		}
		if (res != ATTR_DONE) {
			log_warning("malformed delivery request: %s",
			    attr_reader_error(r));
			count = -1;
			break;
		}
		msg = attr_reader_take(r);
		if (dlv_request_decode(msg, &req, &err) < 0) {
			log_warning("malformed delivery request: %s",
			    str_cstr(&err));
			attr_msg_free(msg);
			dlv_request_free(&req);
			count = -1;
			break;
		}
		attr_msg_free(msg);
		handoff = wall_us();
		server_watchdog_pet();
		if (req.flags & DLV_F_VERBOSE)
			log_info("%s: request for %zu recipient%s, nexthop %s",
			    req.queue_id, req.nrcpt, req.nrcpt == 1 ? "" : "s",
			    req.nexthop);
		dlv_reply_init(&rep, &req);
		client_fd = fd;
		agent->deliver(&req, &rep, agent->ctx);
		client_fd = -1;
		agent_finish(&req, &rep, handoff);
		str_reset(&out);
		dlv_reply_encode(&rep, &out);
		dlv_reply_free(&rep);
		dlv_request_free(&req);
		if (attr_write_fd(fd, out.buf, out.len, timeout_ms) < 0) {
			log_warning("sending a delivery reply: %s",
			    errno == ETIMEDOUT ? "timed out" : strerror(errno));
			count = -1;
			break;
		}
		count++;
		if (agent->max_requests && (unsigned)count >= agent->max_requests)
			break;
	}
	attr_reader_free(r);
	str_release(&out);
	str_release(&err);
	return count;
}

static const dlv_agent_t *the_agent;

static void agent_serve(stream_t *client, void *ctx)
{
	long t = pconfig_get_time("ipc_timeout");
	int ms = t > INT_MAX / 1000 ? INT_MAX : (int)(t * 1000);
	(void)ctx;

	dlv_agent_serve_fd(stream_fd(client), the_agent, ms);
}

static void agent_hook(void (*fn)(void *), void *ctx)
{
	if (fn)
		fn(ctx);
}

static void agent_pre_jail(void *ctx)
{
	long digits = pconfig_get_int("delay_logging_resolution_limit");

	(void)ctx;
	agent_soft_bounce = pconfig_get_bool("soft_bounce");
	agent_log_digits = digits < 0 ? 0 : digits > 6 ? 6 : (int)digits;
	agent_hook(the_agent->pre_jail, the_agent->ctx);
}

static void agent_post_jail(void *ctx)
{
	(void)ctx;
	agent_hook(the_agent->post_jail, the_agent->ctx);
}

static int agent_check(void *ctx, str_t *err)
{
	(void)ctx;
	return the_agent->check ? the_agent->check(the_agent->ctx, err) : 0;
}

static void agent_pre_exit(void *ctx)
{
	(void)ctx;
	agent_hook(the_agent->pre_exit, the_agent->ctx);
}

void dlv_agent_main(int argc, char **argv, const dlv_agent_t *agent)
{
	server_spec_t spec;

	if (!agent || !agent->deliver)
		log_panic("dlv_agent_main: no deliver function");
	the_agent = agent;
	memset(&spec, 0, sizeof(spec));
	spec.model = SERVER_SINGLE;
	spec.serve = agent_serve;
	spec.pre_jail = agent_pre_jail;
	spec.post_jail = agent_post_jail;
	spec.pre_exit = agent_pre_exit;
	spec.check = agent_check;
	server_main(argc, argv, &spec);
}
