/* One client of an attribute-protocol SERVER_MULTI daemon
 * (server_conn.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "log.h"
#include "server.h"
#include "server_conn.h"
#include "sock.h"

static void conn_timeout(void *ctx)
{
	server_conn_t *c = ctx;

	log_warning("client %lu: request not complete within %d ms; closing",
	    c->id, c->timeout_ms);
	c->ops->close(c);
}

void server_conn_bad(server_conn_t *c, const char *fmt, ...)
{
	str_t why = STR_INIT;
	va_list ap;

	va_start(ap, fmt);
	str_vcatf(&why, fmt, ap);
	va_end(ap);
	log_warning("client %lu: malformed request: %s", c->id,
	    str_cstr(&why));
	str_release(&why);
	c->ops->close(c);
}

/* Replies are small and a client waits for each: one non-blocking send.
 * One that does not take it is not waited for. */
bool server_conn_reply(server_conn_t *c, const str_t *out, int fd)
{
	ssize_t n = sock_send_with_fd(c->fd, out->buf, out->len, fd,
	    MSG_DONTWAIT);

	if (n == (ssize_t)out->len)
		return true;
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
		log_debug("client %lu: gone before its reply", c->id);
	else
		log_warning("client %lu: cannot take its reply (%s); closing",
		    c->id, n < 0 ? strerror(errno) : "socket buffer full");
	c->ops->close(c);
	return false;
}

static void conn_event(int fd, int events, void *ctx)
{
	static char buf[SERVER_CONN_READ_MAX];	/* one thread */
	server_conn_t *c = ctx;
	size_t off = 0;
	enum attr_result res = ATTR_DONE;
	ssize_t n;

	(void)events;
	n = c->ops->recv != NULL ? c->ops->recv(c, buf, c->read_max) :
	    recv(fd, buf, c->read_max, MSG_DONTWAIT);
	if (n == SERVER_CONN_CLOSED)
		return;
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		log_debug("client %lu: %s", c->id, strerror(errno));
		c->ops->close(c);
		return;
	}
	if (n == 0) {
		c->ops->close(c);
		return;
	}
	while (off < (size_t)n) {
		size_t used;
		res = attr_reader_feed(c->r, buf + off, (size_t)n - off, &used);
		off += used;
		if (res == ATTR_DONE) {
			attr_msg_t *m = attr_reader_take(c->r);
			bool ok = c->ops->request(c, m);
			attr_msg_free(m);
			if (!ok)
				return;
		} else if (res == ATTR_ERROR) {
			server_conn_bad(c, "%s", attr_reader_error(c->r));
			return;
		} else {
			break;
		}
	}
	/* A request begun must end within the protocol timeout. */
	if (res == ATTR_NEED_MORE) {
		if (!event_timer_pending(&c->timer))
			event_timer_start(server_loop(), &c->timer,
			    c->timeout_ms);
	} else {
		event_timer_cancel(&c->timer);
	}
}

bool server_conn_start(server_conn_t *c, int fd, unsigned long id,
    attr_reader_t *r, int timeout_ms, size_t read_max,
    const server_conn_ops_t *ops)
{
	c->fd = fd;
	c->id = id;
	c->r = r;
	c->timeout_ms = timeout_ms;
	c->read_max = read_max > 0 && read_max < SERVER_CONN_READ_MAX ?
	    read_max : SERVER_CONN_READ_MAX;
	c->ops = ops;
	event_timer_init(&c->timer, conn_timeout, c);
	if (event_add(server_loop(), fd, EVENT_READ, conn_event, c) < 0) {
		log_warning("client %lu: %s", id, strerror(errno));
		attr_reader_free(r);
		c->r = NULL;
		server_disconnect(fd);
		return false;
	}
	return true;
}

void server_conn_stop(server_conn_t *c)
{
	event_timer_cancel(&c->timer);
	attr_reader_free(c->r);
	c->r = NULL;
	server_disconnect(c->fd);
}

static void idle_expired(void *ctx)
{
	server_idle_t *idle = ctx;

	if (idle->busy())
		return;
	log_debug("exiting: idle for max_idle");
	idle->stop();
	exit(0);
}

void server_idle_init(server_idle_t *idle, int64_t max_idle_ms,
    bool (*busy)(void), void (*stop)(void))
{
	idle->max_idle_ms = max_idle_ms;
	idle->busy = busy;
	idle->stop = stop;
	event_timer_init(&idle->timer, idle_expired, idle);
}

void server_idle_check(server_idle_t *idle)
{
	if (!idle->busy()) {
		if (idle->max_idle_ms > 0 && !event_timer_pending(&idle->timer))
			event_timer_start(server_loop(), &idle->timer,
			    idle->max_idle_ms);
	} else {
		event_timer_cancel(&idle->timer);
	}
}

void server_idle_cancel(server_idle_t *idle)
{
	event_timer_cancel(&idle->timer);
}
