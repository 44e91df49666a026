/* qmgr's side of the control channel: the listener, the connections,
 * reading requests and dispatching them to qmgr_status.c,
 * qmgr_pending.c and qmgr_suspend.c, writing the replies; see
 * qmgr_control.h, qmgr_control_int.h and doc/protocol-qmgr-control.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include "log.h"
#include "mem.h"
#include "sock.h"
#include "qmgr_control_int.h"

/* Requests are small: a list of queue IDs at most. */
static const attr_limits_t qmgr_control_req_limits = {
	.max_value = 4096,
	.max_attrs = 2 * QMGR_CLNT_MAX_IDS + 64,
	.max_group_attrs = 32,
	.max_total = 1u << 20,
	.max_depth = 1,
};

static void conn_close(qmgr_control_conn_t *k);
static void conn_update(qmgr_control_conn_t *k);

/* ---- For the request handlers ----------------------------------------- */

bool qmgr_control_in_queue(const qmgr_control_t *c, const char *queue,
    const char *id)
{
	str_t path = STR_INIT;
	bool r = queue_find(c->ql, queue, id, &path) == 0;

	str_release(&path);
	return r;
}

double qmgr_control_now(const qmgr_control_t *c)
{
	return c->ops.now();
}

void qmgr_control_kick(const qmgr_control_t *c)
{
	if (c->ops.kick)
		c->ops.kick();
}

void qmgr_control_reply_status(str_t *out, int status, const char *reason)
{
	attr_put_int(out, "status", status);
	if (reason != NULL && *reason)
		attr_put_str(out, "reason", reason);
}

/* ---- Connections ------------------------------------------------------ */

static void handle(qmgr_control_conn_t *k, attr_msg_t *m)
{
	qmgr_control_t *c = k->c;
	const char *req = NULL;

	(void)attr_get_str(m, "request", &req);
	if (req == NULL) {
		qmgr_control_reply_status(&k->out, QMGR_CLNT_FAIL,
		    "missing request name");
		attr_put_end(&k->out);
	} else if (strcmp(req, QMGR_CLNT_REQ_STATUS) == 0) {
		qmgr_status_reply(c, m, &k->out);
	} else if (strcmp(req, QMGR_CLNT_REQ_DSC) == 0) {
		qmgr_status_dsc(c, &k->out);
	} else if (strcmp(req, QMGR_CLNT_REQ_DSC_CLEAR) == 0) {
		qmgr_suspend_dsc_clear(c, m, &k->out);
	} else if (strcmp(req, QMGR_CLNT_REQ_SUSPEND) == 0) {
		qmgr_suspend_request(c, m, &k->out, true);
	} else if (strcmp(req, QMGR_CLNT_REQ_RESUME) == 0) {
		qmgr_suspend_request(c, m, &k->out, false);
	} else if (strcmp(req, QMGR_CLNT_REQ_MESSAGE) == 0) {
		qmgr_pending_request(k, m);
	} else {
		qmgr_control_reply_status(&k->out, QMGR_CLNT_FAIL,
		    "unknown request");
		attr_put_end(&k->out);
	}
}

static void conn_event(int fd, int events, void *ctx);

/* Interest: write while output is waiting; read while no request is
 * being worked on. */
static void conn_update(qmgr_control_conn_t *k)
{
	int ev = 0;

	if (k->outpos < str_len(&k->out))
		ev |= EVENT_WRITE;
	else if (k->waiting == NULL && !k->eof)
		ev |= EVENT_READ;
	(void)event_modify(k->c->loop, k->fd, ev);
	if (k->waiting == NULL)
		event_timer_start(k->c->loop, &k->idle, k->c->conf.idle_timeout_ms);
	else
		event_timer_cancel(&k->idle);
}

/* Feeds buffered input to the reader and handles complete requests,
 * one at a time. */
void qmgr_control_conn_process(qmgr_control_conn_t *k)
{
	while (k->waiting == NULL && str_len(&k->in) > 0) {
		size_t used = 0;
		enum attr_result r = attr_reader_feed(k->rd, str_cstr(&k->in),
		    str_len(&k->in), &used);
		/* Drop what the reader consumed. */
		str_t rest = STR_INIT;
		str_append(&rest, str_cstr(&k->in) + used, str_len(&k->in) - used);
		str_release(&k->in);
		k->in = rest;
		if (r == ATTR_DONE) {
			attr_msg_t *m = attr_reader_take(k->rd);
			handle(k, m);
			attr_msg_free(m);
			continue;
		}
		if (r == ATTR_ERROR) {
			log_warning("control connection: bad request: %s; "
			    "closing it", attr_reader_error(k->rd));
			str_reset(&k->in);
			k->eof = true;
		}
		break;
	}
	conn_update(k);
	if (k->eof && k->waiting == NULL && k->outpos >= str_len(&k->out))
		conn_close(k);
}

static void conn_event(int fd, int events, void *ctx)
{
	qmgr_control_conn_t *k = ctx;
	char buf[16384];
	ssize_t n;

	if (events & EVENT_WRITE) {
		while (k->outpos < str_len(&k->out)) {
			n = send(fd, str_cstr(&k->out) + k->outpos,
			    str_len(&k->out) - k->outpos, MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			if (n <= 0) {
				conn_close(k);	/* the client went away */
				return;
			}
			k->outpos += (size_t)n;
		}
		if (k->outpos >= str_len(&k->out)) {
			str_reset(&k->out);
			k->outpos = 0;
		}
	}
	if ((events & EVENT_READ) && k->waiting == NULL) {
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		if (n <= 0) {
			k->eof = true;
		} else {
			str_append(&k->in, buf, (size_t)n);
		}
	}
	qmgr_control_conn_process(k);
}

static void conn_idle(void *ctx)
{
	qmgr_control_conn_t *k = ctx;

	conn_close(k);
}

static void conn_close(qmgr_control_conn_t *k)
{
	qmgr_control_t *c = k->c;

	/* Its pending actions carry on without a listener. */
	qmgr_pending_abandon(k);
	event_timer_cancel(&k->idle);
	(void)event_remove(c->loop, k->fd);
	close(k->fd);
	attr_reader_free(k->rd);
	str_release(&k->in);
	str_release(&k->out);
	list_remove(&k->node);
	c->nconns--;
	free(k);
}

int qmgr_control_attach(qmgr_control_t *c, int fd)
{
	qmgr_control_conn_t *k;

	if (c->nconns >= c->conf.max_clients) {
		log_warning("control channel: more than %d clients; refusing one",
		    c->conf.max_clients);
		return -1;
	}
	(void)sock_set_nonblock(fd, true);
	k = xcalloc(1, sizeof(*k));
	k->c = c;
	k->fd = fd;
	k->rd = attr_reader_new(NULL, ATTR_READ_LENIENT,
	    &qmgr_control_req_limits);
	event_timer_init(&k->idle, conn_idle, k);
	if (event_add(c->loop, fd, EVENT_READ, conn_event, k) < 0) {
		log_warning("control channel: event_add: %s", strerror(errno));
		attr_reader_free(k->rd);
		free(k);
		return -1;
	}
	list_append(&c->conns, &k->node);
	c->nconns++;
	event_timer_start(c->loop, &k->idle, c->conf.idle_timeout_ms);
	return 0;
}

static void accept_event(int fd, int events, void *ctx)
{
	qmgr_control_t *c = ctx;
	uid_t uid;
	int cfd;

	(void)events;
	if ((cfd = sock_accept(fd, NULL, NULL)) < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_warning("control channel: accept: %s", strerror(errno));
		return;
	}
	/* The socket sits in the private directory already; this also
	 * keeps out a process that got hold of it some other way. */
	if (sock_peer_uid(cfd, &uid) < 0) {
		log_warning("control channel: peer credentials: %s; closing",
		    strerror(errno));
		close(cfd);
		return;
	}
	if (uid != 0 && uid != geteuid()) {
		log_warning("control channel: connection from uid %ld refused "
		    "(only root and uid %ld may use it)", (long)uid,
		    (long)geteuid());
		close(cfd);
		return;
	}
	if (qmgr_control_attach(c, cfd) < 0)
		close(cfd);
}

/* ---- Set-up ------------------------------------------------------------ */

qmgr_control_t *qmgr_control_new(event_loop_t *loop, sched_t *s,
    const queue_layout_t *ql, const qmgr_control_ops_t *ops,
    const qmgr_control_conf_t *conf, str_t *err)
{
	qmgr_control_t *c;
	const char *path;

	if (ops == NULL || ops->now == NULL) {
		str_setf(err, "qmgr_control_new: no clock");
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->loop = loop;
	c->s = s;
	c->ql = ql;
	c->ops = *ops;
	if (conf)
		c->conf = *conf;
	if (c->conf.max_clients <= 0)
		c->conf.max_clients = 16;
	if (c->conf.idle_timeout_ms <= 0)
		c->conf.idle_timeout_ms = 60000;
	if (c->conf.poll_ms <= 0)
		c->conf.poll_ms = 50;
	path = c->conf.path ? c->conf.path : QMGR_CONTROL_PATH;
	c->conf.path = NULL;
	if (c->conf.state_path == NULL)
		c->state_path = xstrdup(QMGR_CONTROL_STATE);
	else if (*c->conf.state_path)
		c->state_path = xstrdup(c->conf.state_path);
	c->conf.state_path = NULL;
	list_init(&c->conns);
	list_init(&c->pending);
	event_timer_init(&c->poll, qmgr_pending_poll, c);
	c->reasons = htable_new(8, HTABLE_FLAG_NOCASE);
	c->lfd = -1;
	if (*path) {
		if ((c->lfd = sock_unix_listen(path, 16, 0600)) < 0) {
			str_setf(err, "control channel %s: %s", path, strerror(errno));
			goto fail;
		}
		(void)sock_set_nonblock(c->lfd, true);
		if (event_add(loop, c->lfd, EVENT_READ, accept_event, c) < 0) {
			str_setf(err, "control channel: event_add: %s",
			    strerror(errno));
			goto fail;
		}
	}
	qmgr_suspend_load(c);
	return c;
fail:
	if (c->lfd >= 0)
		close(c->lfd);
	htable_free(c->reasons, free);
	free(c->state_path);
	free(c);
	return NULL;
}

qmgr_control_t *qmgr_control_start(event_loop_t *loop, sched_t *s,
    const queue_layout_t *ql, const qmgr_control_ops_t *ops)
{
	str_t err = STR_INIT;
	qmgr_control_t *c = qmgr_control_new(loop, s, ql, ops, NULL, &err);

	if (c == NULL)
		log_warning("%s; postq -S/-D and postsuper -x/-P/-U will not "
		    "work, and postsuper leaves the active queue alone",
		    str_cstr(&err));
	str_release(&err);
	return c;
}

void qmgr_control_free(qmgr_control_t *c)
{
	list_node_t *n;

	if (c == NULL)
		return;
	while ((n = list_first(&c->conns)) != NULL)
		conn_close(list_entry(n, qmgr_control_conn_t, node));
	qmgr_pending_free_all(c);
	event_timer_cancel(&c->poll);
	if (c->lfd >= 0) {
		(void)event_remove(c->loop, c->lfd);
		close(c->lfd);
	}
	htable_free(c->reasons, free);
	free(c->state_path);
	free(c);
}

size_t qmgr_control_pending(const qmgr_control_t *c)
{
	return c->npending;
}
