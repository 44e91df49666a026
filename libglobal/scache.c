/* The connection cache protocol: schemas, checks, encoders, and the
 * client.  See scache.h and doc/protocol-scache.md. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "attr_clnt.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "scache.h"
#include "sock.h"

const attr_limits_t scache_limits = {
	.max_value = SCACHE_PROPS_MAX,
	.max_attrs = 8,
	.max_group_attrs = 8,
	.max_total = SCACHE_MSG_MAX,
	.max_depth = 0,		/* no lists */
};

static const attr_spec_t request_schema[] = {
	{ "request", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "dest", ATTR_TYPE_STR, 0, NULL },
	{ "endpoint", ATTR_TYPE_STR, 0, NULL },
	{ "ttl", ATTR_TYPE_INT, 0, NULL },
	{ "props", ATTR_TYPE_STR, 0, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

static const attr_spec_t reply_schema[] = {
	{ "status", ATTR_TYPE_INT, ATTR_REQUIRED, NULL },
	{ "dest", ATTR_TYPE_STR, 0, NULL },
	{ "endpoint", ATTR_TYPE_STR, 0, NULL },
	{ "props", ATTR_TYPE_STR, 0, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

attr_reader_t *scache_request_reader_new(void)
{
	return attr_reader_new(request_schema, ATTR_READ_STRICT, &scache_limits);
}

attr_reader_t *scache_reply_reader_new(void)
{
	return attr_reader_new(reply_schema, ATTR_READ_STRICT, &scache_limits);
}

bool scache_label_ok(const char *s)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++)
		if (*p <= 0x20 || *p == 0x7f || n >= SCACHE_LABEL_MAX)
			return false;
	return n > 0;
}

void scache_label_printable(const char *s, str_t *out)
{
	str_reset(out);
	for (size_t i = 0; s[i] != '\0' && i < SCACHE_LABEL_MAX; i++) {
		unsigned char c = (unsigned char)s[i];
		str_putc(out, c > 0x20 && c < 0x7f ? c : '?');
	}
}

void scache_save_encode(str_t *out, const char *dest, const char *endpoint,
    int32_t ttl_ms, const char *props)
{
	attr_print(out, ATTR_STR("request", SCACHE_REQ_SAVE),
	    ATTR_STR("dest", dest), ATTR_STR("endpoint", endpoint),
	    ATTR_INT("ttl", ttl_ms), ATTR_STR("props", props), ATTR_END);
}

void scache_find_encode(str_t *out, scache_op_t op, const char *label)
{
	if (op == SCACHE_OP_FIND_ENDP)
		attr_print(out, ATTR_STR("request", SCACHE_REQ_FIND_ENDP),
		    ATTR_STR("endpoint", label), ATTR_END);
	else
		attr_print(out, ATTR_STR("request", SCACHE_REQ_FIND_DEST),
		    ATTR_STR("dest", label), ATTR_END);
}

void scache_reply_encode(str_t *out, int status, const char *dest,
    const char *endpoint, const char *props)
{
	attr_put_int(out, "status", status);
	if (dest != NULL)
		attr_put_str(out, "dest", dest);
	if (endpoint != NULL)
		attr_put_str(out, "endpoint", endpoint);
	if (props != NULL)
		attr_put_str(out, "props", props);
	attr_put_end(out);
}

/* The label attribute name is present exactly when wanted, and valid. */
static int label_attr(const attr_msg_t *m, const char *name, bool wanted,
    const char **v, const char *request, str_t *err)
{
	bool has = attr_get_str(m, name, v);

	if (!wanted) {
		*v = NULL;
		if (has) {
			str_setf(err, "%s request with a %s attribute", request,
			    name);
			return -1;
		}
		return 0;
	}
	if (!has) {
		str_setf(err, "%s request without a %s attribute", request, name);
		return -1;
	}
	if (!scache_label_ok(*v)) {
		str_setf(err, "%s request: bad %s label (empty, longer than %d, "
		    "or with space or control characters)", request, name,
		    SCACHE_LABEL_MAX);
		return -1;
	}
	return 0;
}

int scache_request_parse(const attr_msg_t *m, scache_req_t *req, str_t *err)
{
	const char *name;
	int32_t ttl;
	bool has_ttl, has_props;

	memset(req, 0, sizeof(*req));
	if (!attr_get_str(m, "request", &name)) {
		str_set(err, "no request name");
		return -1;
	}
	if (strcmp(name, SCACHE_REQ_SAVE) == 0) {
		req->op = SCACHE_OP_SAVE;
		name = SCACHE_REQ_SAVE;
	} else if (strcmp(name, SCACHE_REQ_FIND_DEST) == 0) {
		req->op = SCACHE_OP_FIND_DEST;
		name = SCACHE_REQ_FIND_DEST;
	} else if (strcmp(name, SCACHE_REQ_FIND_ENDP) == 0) {
		req->op = SCACHE_OP_FIND_ENDP;
		name = SCACHE_REQ_FIND_ENDP;
	} else {
		str_t p = STR_INIT;
		scache_label_printable(name, &p);
		str_setf(err, "unknown request \"%.64s\"", str_cstr(&p));
		str_release(&p);
		return -1;
	}
	if (label_attr(m, "dest", req->op != SCACHE_OP_FIND_ENDP, &req->dest,
	    name, err) < 0 ||
	    label_attr(m, "endpoint", req->op != SCACHE_OP_FIND_DEST,
	    &req->endpoint, name, err) < 0)
		return -1;
	has_ttl = attr_get_int(m, "ttl", &ttl);
	has_props = attr_get_str(m, "props", &req->props);
	if (req->op != SCACHE_OP_SAVE) {
		if (has_ttl || has_props) {
			str_setf(err, "%s request with a %s attribute", name,
			    has_ttl ? "ttl" : "props");
			return -1;
		}
		req->props = NULL;
		return 0;
	}
	if (!has_ttl || !has_props) {
		str_setf(err, "save request without a %s attribute",
		    !has_ttl ? "ttl" : "props");
		return -1;
	}
	if (ttl <= 0) {
		str_setf(err, "save request with ttl %ld (must be > 0)",
		    (long)ttl);
		return -1;
	}
	req->ttl_ms = ttl;
	return 0;
}

/* ---- The client ---- */

struct scache_clnt {
	attr_clnt_t c;		/* the kept connection (attr_clnt.h) */
	int idle_ms;
	int64_t last_ms;	/* last request done */
};

/* Says that the cache failed (every failure: the client then leaves
 * the cache alone for a minute, so this is at most once a minute). */
static void clnt_warn(attr_clnt_t *c, const char *why)
{
	log_warning("connection cache %s: %s; not used for %d s", c->path,
	    why, SCACHE_CLNT_BACKOFF_MS / 1000);
}

scache_clnt_t *scache_clnt_new(const char *path, int timeout_ms, int idle_ms)
{
	scache_clnt_t *sc = xcalloc(1, sizeof(*sc));

	attr_clnt_init(&sc->c, path, timeout_ms, scache_reply_reader_new(),
	    SCACHE_CLNT_BACKOFF_MS, clnt_warn);
	sc->idle_ms = idle_ms;
	return sc;
}

void scache_clnt_free(scache_clnt_t *sc)
{
	if (sc == NULL)
		return;
	attr_clnt_release(&sc->c);
	free(sc);
}

bool scache_clnt_usable(const scache_clnt_t *sc)
{
	return attr_clnt_usable(&sc->c);
}

/* Sends sc->c.buf with fd (-1: none) on its first byte.  0: sent; -1:
 * nothing sent (errno); -2: sent in part (the descriptor went). */
static int clnt_send_once(scache_clnt_t *sc, int fd)
{
	int64_t deadline = event_now_ms() + sc->c.timeout_ms;
	size_t off;
	ssize_t n;

	n = sock_send_with_fd(sc->c.fd, sc->c.buf.buf, sc->c.buf.len, fd, 0);
	if (n <= 0)
		return -1;
	for (off = (size_t)n; off < sc->c.buf.len; off += (size_t)n) {
		if (event_now_ms() > deadline)
			return -2;
		n = send(sc->c.fd, sc->c.buf.buf + off, sc->c.buf.len - off,
		    MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (n <= 0)
			return -2;
	}
	return 0;
}

/* Connects if needed and sends; a kept connection the daemon has closed
 * meanwhile (it exited after max_idle, say) is replaced once. */
static int clnt_send(scache_clnt_t *sc, int fd)
{
	bool fresh = sc->c.fd < 0;
	int rc;

	if (fresh && !attr_clnt_connect(&sc->c))
		return -1;
	rc = clnt_send_once(sc, fd);
	if (rc == -1 && !fresh && (errno == EPIPE || errno == ECONNRESET ||
	    errno == ENOTCONN)) {
		attr_clnt_close(&sc->c);
		if (!attr_clnt_connect(&sc->c))
			return -1;
		rc = clnt_send_once(sc, fd);
	}
	if (rc == -1)
		attr_clnt_fail(&sc->c, "sending a request: %s",
		    errno == EAGAIN ||
		    errno == EWOULDBLOCK ? "timed out" : strerror(errno));
	else if (rc == -2)
		attr_clnt_fail(&sc->c, "sending a request: %s",
		    errno == EAGAIN ||
		    errno == EWOULDBLOCK || errno == 0 ? "timed out" :
		    strerror(errno));
	return rc;
}

/* Reads one reply: its message and the descriptor that came with it (-1:
 * none).  0, or -1 after attr_clnt_fail(). */
static int clnt_recv(scache_clnt_t *sc, attr_msg_t **msg, int *rfd)
{
	int64_t deadline = event_now_ms() + sc->c.timeout_ms;
	char buf[SCACHE_MSG_MAX];

	*rfd = -1;
	*msg = NULL;
	for (;;) {
		int fds[1], nfds;
		bool extra;
		size_t used;
		enum attr_result res;
		ssize_t n = sock_recv_with_fds(sc->c.fd, buf, sizeof(buf), fds,
		    1, &nfds, &extra, 0);

		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				attr_clnt_fail(&sc->c,
				    "timed out waiting for a reply");
			else
				attr_clnt_fail(&sc->c, "reading a reply: %s",
				    strerror(errno));
			break;
		}
		if (nfds > 0) {
			if (*rfd >= 0) {
				close(fds[0]);
				extra = true;
			} else {
				*rfd = fds[0];
			}
		}
		if (extra) {
			attr_clnt_fail(&sc->c,
			    "malformed reply: more than one descriptor");
			break;
		}
		if (n == 0) {
			attr_clnt_fail(&sc->c,
			    "connection closed without a reply");
			break;
		}
		res = attr_reader_feed(sc->c.r, buf, (size_t)n, &used);
		if (res == ATTR_DONE) {
			if (used != (size_t)n) {
				attr_clnt_fail(&sc->c,
				    "malformed reply: %zu bytes after it",
				    (size_t)n - used);
				break;
			}
			*msg = attr_reader_take(sc->c.r);
			sc->last_ms = event_now_ms();
			return 0;
		}
		if (res == ATTR_ERROR) {
			attr_clnt_fail(&sc->c, "malformed reply: %s",
			    attr_reader_error(sc->c.r));
			break;
		}
		if (event_now_ms() > deadline) {
			attr_clnt_fail(&sc->c, "timed out waiting for a reply");
			break;
		}
	}
	if (*rfd >= 0)
		close(*rfd);
	*rfd = -1;
	return -1;
}

enum scache_save_result scache_clnt_save(scache_clnt_t *sc, const char *dest,
    const char *endpoint, int ttl_ms, const char *props, int fd)
{
	attr_msg_t *msg;
	int32_t status;
	int rfd, rc;

	if (!scache_clnt_usable(sc) || ttl_ms <= 0 || fd < 0)
		return SCACHE_UNSENT;
	str_reset(&sc->c.buf);
	scache_save_encode(&sc->c.buf, dest, endpoint, ttl_ms, props);
	rc = clnt_send(sc, fd);
	if (rc == -1)
		return SCACHE_UNSENT;
	if (rc == -2 || clnt_recv(sc, &msg, &rfd) < 0)
		return SCACHE_UNKNOWN;
	if (!attr_get_int(msg, "status", &status) || status != SCACHE_STAT_OK ||
	    rfd >= 0) {
		if (rfd >= 0)
			close(rfd);
		attr_msg_free(msg);
		attr_clnt_fail(&sc->c, "unexpected reply to a save request");
		return SCACHE_UNKNOWN;
	}
	attr_msg_free(msg);
	return SCACHE_SAVED;
}

int scache_clnt_find(scache_clnt_t *sc, scache_op_t op, const char *label,
    str_t *props)
{
	attr_msg_t *msg;
	const char *p, *l;
	int32_t status;
	int rfd;

	if (!scache_clnt_usable(sc))
		return -1;
	str_reset(&sc->c.buf);
	scache_find_encode(&sc->c.buf, op, label);
	if (clnt_send(sc, -1) != 0 || clnt_recv(sc, &msg, &rfd) < 0)
		return -1;
	if (!attr_get_int(msg, "status", &status))
		status = -1;
	if (status == SCACHE_STAT_NONE && rfd < 0) {
		attr_msg_free(msg);
		return -1;
	}
	if (status != SCACHE_STAT_OK || rfd < 0 ||
	    !attr_get_str(msg, "props", &p) ||
	    !attr_get_str(msg, op == SCACHE_OP_FIND_ENDP ? "endpoint" : "dest",
	    &l) || strcmp(l, label) != 0) {
		if (rfd >= 0)
			close(rfd);
		attr_msg_free(msg);
		attr_clnt_fail(&sc->c, "unexpected reply to a find request");
		return -1;
	}
	str_set(props, p);
	attr_msg_free(msg);
	return rfd;
}

void scache_clnt_idle(scache_clnt_t *sc, int64_t now_ms)
{
	if (sc->c.fd >= 0 && sc->idle_ms > 0 &&
	    now_ms - sc->last_ms >= sc->idle_ms)
		attr_clnt_close(&sc->c);
}

int64_t scache_clnt_deadline(const scache_clnt_t *sc)
{
	if (sc->c.fd < 0 || sc->idle_ms <= 0)
		return -1;
	return sc->last_ms + sc->idle_ms;
}
