/* The anvil protocol: schemas, checks, encoders, and the client smtpd
 * uses.  See anvil.h and doc/protocol-anvil.md. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "anvil.h"
#include "attr_clnt.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "sock.h"

const attr_limits_t anvil_limits = {
	.max_value = ANVIL_IDENT_MAX,
	.max_attrs = 8,
	.max_group_attrs = 8,
	.max_total = ANVIL_MSG_MAX,
	.max_depth = 0,		/* no lists */
};

static const attr_spec_t request_schema[] = {
	{ "request", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "ident", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

static const attr_spec_t reply_schema[] = {
	{ "status", ATTR_TYPE_INT, ATTR_REQUIRED, NULL },
	{ "count", ATTR_TYPE_INT, 0, NULL },
	{ "rate", ATTR_TYPE_INT, 0, NULL },
	{ "message", ATTR_TYPE_INT, 0, NULL },
	{ "recipient", ATTR_TYPE_INT, 0, NULL },
	{ "newtls", ATTR_TYPE_INT, 0, NULL },
	{ "auth", ATTR_TYPE_INT, 0, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

static const char *const op_names[ANVIL_OP_COUNT] = {
	[ANVIL_OP_CONNECT] = ANVIL_REQ_CONNECT,
	[ANVIL_OP_DISCONNECT] = ANVIL_REQ_DISCONNECT,
	[ANVIL_OP_MESSAGE] = ANVIL_REQ_MESSAGE,
	[ANVIL_OP_RECIPIENT] = ANVIL_REQ_RECIPIENT,
	[ANVIL_OP_NEWTLS] = ANVIL_REQ_NEWTLS,
	[ANVIL_OP_NEWTLS_REPORT] = ANVIL_REQ_NEWTLS_REPORT,
	[ANVIL_OP_AUTH] = ANVIL_REQ_AUTH,
	[ANVIL_OP_LOOKUP] = ANVIL_REQ_LOOKUP,
};

const char *anvil_op_name(anvil_op_t op)
{
	return (unsigned)op < ANVIL_OP_COUNT ? op_names[op] : "?";
}

attr_reader_t *anvil_request_reader_new(void)
{
	return attr_reader_new(request_schema, ATTR_READ_STRICT, &anvil_limits);
}

attr_reader_t *anvil_reply_reader_new(void)
{
	return attr_reader_new(reply_schema, ATTR_READ_STRICT, &anvil_limits);
}

bool anvil_ident_ok(const char *s)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++)
		if (*p <= 0x20 || *p >= 0x7f || n >= ANVIL_IDENT_MAX)
			return false;
	return n > 0;
}

void anvil_request_encode(str_t *out, anvil_op_t op, const char *ident)
{
	attr_print(out, ATTR_STR("request", anvil_op_name(op)),
	    ATTR_STR("ident", ident), ATTR_END);
}

void anvil_reply_encode(str_t *out, anvil_op_t op, const anvil_counts_t *c)
{
	attr_put_int(out, "status", ANVIL_STAT_OK);
	switch (op) {
	case ANVIL_OP_CONNECT:
		attr_put_int(out, "count", c->count);
		attr_put_int(out, "rate", c->rate);
		break;
	case ANVIL_OP_MESSAGE:
		attr_put_int(out, "rate", c->message);
		break;
	case ANVIL_OP_RECIPIENT:
		attr_put_int(out, "rate", c->recipient);
		break;
	case ANVIL_OP_NEWTLS:
	case ANVIL_OP_NEWTLS_REPORT:
		attr_put_int(out, "rate", c->newtls);
		break;
	case ANVIL_OP_AUTH:
		attr_put_int(out, "rate", c->auth);
		break;
	case ANVIL_OP_LOOKUP:
		attr_put_int(out, "count", c->count);
		attr_put_int(out, "rate", c->rate);
		attr_put_int(out, "message", c->message);
		attr_put_int(out, "recipient", c->recipient);
		attr_put_int(out, "newtls", c->newtls);
		attr_put_int(out, "auth", c->auth);
		break;
	default:
		break;
	}
	attr_put_end(out);
}

int anvil_request_parse(const attr_msg_t *m, anvil_req_t *req, str_t *err)
{
	const char *name, *ident;
	int op;

	memset(req, 0, sizeof(*req));
	if (!attr_get_str(m, "request", &name) ||
	    !attr_get_str(m, "ident", &ident)) {
		str_set(err, "request without a request name or an ident");
		return -1;
	}
	for (op = 0; op < ANVIL_OP_COUNT; op++)
		if (strcmp(name, op_names[op]) == 0)
			break;
	if (op == ANVIL_OP_COUNT) {
		str_t p = STR_INIT;
		str_quote_printable(&p, name, strlen(name) > 64 ? 64 :
		    strlen(name));
		str_setf(err, "unknown request \"%s\"", str_cstr(&p));
		str_release(&p);
		return -1;
	}
	if (!anvil_ident_ok(ident)) {
		str_setf(err, "%s request: bad ident (empty, longer than %d, "
		    "or with space, control or non-ASCII characters)",
		    op_names[op], ANVIL_IDENT_MAX);
		return -1;
	}
	req->op = (anvil_op_t)op;
	req->ident = ident;
	return 0;
}

/* ---- The client ---- */

struct anvil_clnt {
	attr_clnt_t c;		/* the kept connection (attr_clnt.h) */
	int64_t warned_at;	/* last warning; 0: never */
};

/* Says that anvil failed, unless that was said less than a minute ago
 * (a pool of smtpd processes would otherwise log it for every
 * connection). */
static void clnt_warn(attr_clnt_t *c, const char *why)
{
	anvil_clnt_t *ac = (anvil_clnt_t *)c;
	int64_t now = event_now_ms();

	if (ac->warned_at != 0 && now - ac->warned_at < ANVIL_CLNT_WARN_MS)
		return;
	ac->warned_at = now;
	log_warning("anvil %s: %s; client connection and rate limits are "
	    "not enforced for %d s", c->path, why,
	    ANVIL_CLNT_BACKOFF_MS / 1000);
}

anvil_clnt_t *anvil_clnt_new(const char *path, int timeout_ms)
{
	anvil_clnt_t *ac = xcalloc(1, sizeof(*ac));

	attr_clnt_init(&ac->c, path, timeout_ms, anvil_reply_reader_new(),
	    ANVIL_CLNT_BACKOFF_MS, clnt_warn);
	return ac;
}

void anvil_clnt_free(anvil_clnt_t *ac)
{
	if (ac == NULL)
		return;
	attr_clnt_release(&ac->c);
	free(ac);
}

bool anvil_clnt_usable(const anvil_clnt_t *ac)
{
	return attr_clnt_usable(&ac->c);
}

/* All of ac->c.buf, or -1 with errno. */
static int clnt_send_once(anvil_clnt_t *ac)
{
	size_t off = 0;

	while (off < ac->c.buf.len) {
		ssize_t n = send(ac->c.fd, ac->c.buf.buf + off,
		    ac->c.buf.len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/* Connects if needed and sends ac->c.buf.  A kept connection that anvil
 * has closed meanwhile (it was restarted) is replaced once.  0, or -1
 * after attr_clnt_fail(). */
static int clnt_send(anvil_clnt_t *ac)
{
	bool fresh = ac->c.fd < 0;

	if (!anvil_clnt_usable(ac))
		return -1;
	if (fresh && !attr_clnt_connect(&ac->c))
		return -1;
	if (clnt_send_once(ac) == 0)
		return 0;
	if (!fresh && (errno == EPIPE || errno == ECONNRESET ||
	    errno == ENOTCONN)) {
		attr_clnt_close(&ac->c);
		if (!attr_clnt_connect(&ac->c))
			return -1;
		if (clnt_send_once(ac) == 0)
			return 0;
	}
	attr_clnt_fail(&ac->c, "sending a request: %s", errno == EAGAIN ||
	    errno == EWOULDBLOCK ? "timed out" : strerror(errno));
	return -1;
}

/* One reply, or NULL after attr_clnt_fail(). */
static attr_msg_t *clnt_recv(anvil_clnt_t *ac)
{
	int64_t deadline = event_now_ms() + ac->c.timeout_ms;
	char buf[ANVIL_MSG_MAX];
	int32_t status;

	for (;;) {
		size_t used;
		enum attr_result res;
		ssize_t n = recv(ac->c.fd, buf, sizeof(buf), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			attr_clnt_fail(&ac->c, "%s",
			    errno == EAGAIN || errno == EWOULDBLOCK ?
			    "timed out waiting for a reply" : strerror(errno));
			return NULL;
		}
		if (n == 0) {
			attr_clnt_fail(&ac->c,
			    "connection closed without a reply");
			return NULL;
		}
		res = attr_reader_feed(ac->c.r, buf, (size_t)n, &used);
		if (res == ATTR_DONE) {
			attr_msg_t *m;
			if (used != (size_t)n) {
				attr_clnt_fail(&ac->c,
				    "malformed reply: %zu bytes after it",
				    (size_t)n - used);
				return NULL;
			}
			m = attr_reader_take(ac->c.r);
			if (!attr_get_int(m, "status", &status) ||
			    status != ANVIL_STAT_OK) {
				attr_msg_free(m);
				attr_clnt_fail(&ac->c, "request failed");
				return NULL;
			}
			return m;
		}
		if (res == ATTR_ERROR) {
			attr_clnt_fail(&ac->c, "malformed reply: %s",
			    attr_reader_error(ac->c.r));
			return NULL;
		}
		if (event_now_ms() > deadline) {
			attr_clnt_fail(&ac->c, "timed out waiting for a reply");
			return NULL;
		}
	}
}

/* Sends one request and reads its reply. */
static attr_msg_t *clnt_call(anvil_clnt_t *ac, anvil_op_t op,
    const char *ident)
{
	if (!anvil_clnt_usable(ac))
		return NULL;
	str_reset(&ac->c.buf);
	anvil_request_encode(&ac->c.buf, op, ident);
	if (clnt_send(ac) < 0)
		return NULL;
	return clnt_recv(ac);
}

static bool get_int(anvil_clnt_t *ac, attr_msg_t *m, const char *name,
    int *v)
{
	int32_t i;

	if (!attr_get_int(m, name, &i)) {
		attr_clnt_fail(&ac->c, "malformed reply: no %s", name);
		return false;
	}
	*v = i;
	return true;
}

int anvil_clnt_connect(anvil_clnt_t *ac, const char *ident, int *count,
    int *rate)
{
	attr_msg_t *m = clnt_call(ac, ANVIL_OP_CONNECT, ident);
	bool ok;

	if (m == NULL)
		return -1;
	ok = get_int(ac, m, "count", count) && get_int(ac, m, "rate", rate);
	attr_msg_free(m);
	return ok ? 0 : -1;
}

int anvil_clnt_event(anvil_clnt_t *ac, anvil_op_t op, const char *ident,
    int *rate)
{
	attr_msg_t *m = clnt_call(ac, op, ident);
	bool ok;

	if (m == NULL)
		return -1;
	ok = get_int(ac, m, "rate", rate);
	attr_msg_free(m);
	return ok ? 0 : -1;
}

int anvil_clnt_lookup(anvil_clnt_t *ac, const char *ident, anvil_counts_t *c)
{
	attr_msg_t *m = clnt_call(ac, ANVIL_OP_LOOKUP, ident);
	int v[6];
	bool ok;

	if (m == NULL)
		return -1;
	ok = get_int(ac, m, "count", &v[0]) && get_int(ac, m, "rate", &v[1]) &&
	    get_int(ac, m, "message", &v[2]) &&
	    get_int(ac, m, "recipient", &v[3]) &&
	    get_int(ac, m, "newtls", &v[4]) && get_int(ac, m, "auth", &v[5]);
	attr_msg_free(m);
	if (!ok)
		return -1;
	c->count = v[0];
	c->rate = v[1];
	c->message = v[2];
	c->recipient = v[3];
	c->newtls = v[4];
	c->auth = v[5];
	return 0;
}

void anvil_clnt_disconnect(anvil_clnt_t *ac, const char *ident)
{
	/* Not worth a reconnection: a new anvil does not know the
	 * connection anyway. */
	if (ac->c.fd < 0)
		return;
	str_reset(&ac->c.buf);
	anvil_request_encode(&ac->c.buf, ANVIL_OP_DISCONNECT, ident);
	if (clnt_send_once(ac) < 0)
		attr_clnt_close(&ac->c);
}
