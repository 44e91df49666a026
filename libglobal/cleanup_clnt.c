/* The client side of the cleanup protocol; see cleanup_clnt.h and
 * doc/protocol-cleanup.md. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "attr.h"
#include "cleanup_clnt.h"
#include "mem.h"
#include "sock.h"

enum cstate {
	CS_IDLE,		/* between transactions */
	CS_ENVELOPE,		/* envelope sent, recipients may follow */
	CS_DATA,		/* content started */
	CS_BROKEN,		/* error: the connection is unusable */
};

struct cleanup_clnt {
	int fd;
	int timeout_ms;
	enum cstate state;
	str_t out;		/* encoded messages not yet written */
	str_t data;		/* content not yet encoded */
	str_t err;		/* sticky client-side error */
	attr_reader_t *reader;
	bool id_pending;	/* CLEANUP_FLAG_QUEUE_ID sent, ID not read */
	bool have_reply;	/* a final reply came instead of the ID */
	cleanup_reply_t early;	/* that reply */
};

/* The reply is small; tight limits keep a confused peer cheap.  The
 * early queue ID message (CLEANUP_FLAG_QUEUE_ID) has queue_id alone, so
 * one reader takes both and read_reply checks what a reply needs. */
static const attr_spec_t reply_spec[] = {
	{ "status", ATTR_TYPE_INT, 0, NULL },
	{ "dsn", ATTR_TYPE_STR, 0, NULL },
	{ "text", ATTR_TYPE_STR, 0, NULL },
	{ "queue_id", ATTR_TYPE_STR, 0, NULL },
	{ NULL, 0, 0, NULL },
};
static const attr_limits_t reply_limits = {
	.max_value = 4096, .max_attrs = 64, .max_group_attrs = 64,
	.max_total = 65536, .max_depth = 1,
};

void cleanup_reply_set(cleanup_reply_t *reply, int status, const char *dsn,
    const char *fmt, ...)
{
	va_list ap;

	reply->status = status;
	bcopy_str(reply->dsn, sizeof(reply->dsn), dsn);
	va_start(ap, fmt);
	/* vsnprintf cuts; a cut reason is still a reason. */
	vsnprintf(reply->text, sizeof(reply->text), fmt, ap);
	va_end(ap);
	reply->queue_id[0] = '\0';
}

static cleanup_clnt_t *client_new(int fd, int timeout_ms)
{
	cleanup_clnt_t *c = xcalloc(1, sizeof(*c));

	c->fd = fd;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	c->state = CS_IDLE;
	c->reader = attr_reader_new(reply_spec, ATTR_READ_LENIENT,
	    &reply_limits);
	return c;
}

cleanup_clnt_t *cleanup_clnt_fd(int fd, int timeout_ms)
{
	return client_new(fd, timeout_ms);
}

cleanup_clnt_t *cleanup_clnt_connect(const char *service, int timeout_ms,
    str_t *err)
{
	char path[4096];
	int fd = -1, rc;

	if (service == NULL || *service == '\0')
		service = CLEANUP_SERVICE;
	if (timeout_ms <= 0)
		timeout_ms = 30000;
	if (strchr(service, '/') != NULL) {
		bcopy_str(path, sizeof(path), service);
		rc = sock_unix_connect(path, timeout_ms, &fd);
	} else {
		/* master.cf decides private or public; a stale socket left
		 * by an older configuration refuses, so try the other.  The
		 * one that answered is tried first next time. */
		static int first;	/* 0: private first, 1: public */
		static const char *const where[2] = { "private", "public" };

		bfmt(path, sizeof(path), "%s/%s", where[first], service);
		rc = sock_unix_connect(path, timeout_ms, &fd);
		if (rc == ENOENT || rc == ECONNREFUSED) {
			char other[4096];

			bfmt(other, sizeof(other), "%s/%s", where[!first], service);
			int rc2 = sock_unix_connect(other, timeout_ms, &fd);
			if (rc2 == 0 || rc == ENOENT) {
				rc = rc2;
				bcopy_str(path, sizeof(path), other);
				if (rc2 == 0)
					first = !first;
			}
		}
	}
	if (rc != 0) {
		if (err != NULL)
			str_setf(err, "cannot connect to cleanup service %s: %s",
			    path, strerror(rc));
		return NULL;
	}
	/* sock_unix_connect gives a close-on-exec descriptor. */
	return client_new(fd, timeout_ms);
}

static void fail(cleanup_clnt_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void fail(cleanup_clnt_t *c, const char *fmt, ...)
{
	va_list ap;

	if (c->state == CS_BROKEN)
		return;
	va_start(ap, fmt);
	str_reset(&c->err);
	str_vcatf(&c->err, fmt, ap);
	va_end(ap);
	c->state = CS_BROKEN;
}

/* Writes out everything encoded so far. */
static int flush_out(cleanup_clnt_t *c)
{
	if (c->state == CS_BROKEN)
		return -1;
	if (str_len(&c->out) == 0)
		return 0;
	if (attr_write_fd(c->fd, str_cstr(&c->out), str_len(&c->out),
	    c->timeout_ms) < 0) {
		fail(c, "write to cleanup service: %s", errno == ETIMEDOUT ?
		    "timeout" : strerror(errno));
		return -1;
	}
	str_reset(&c->out);
	return 0;
}

/* Encodes the buffered content as one data message. */
static void encode_data(cleanup_clnt_t *c)
{
	if (str_len(&c->data) == 0)
		return;
	attr_print(&c->out, ATTR_STR("op", "data"),
	    ATTR_DATA("data", str_cstr(&c->data), str_len(&c->data)),
	    ATTR_END);
	str_reset(&c->data);
}

static void put_opt_str(str_t *out, const char *name, const char *v)
{
	if (v != NULL)
		attr_put_str(out, name, v);
}

int cleanup_clnt_send_envelope(cleanup_clnt_t *c, const cleanup_envelope_t *env)
{
	if (c->state == CS_BROKEN)
		return -1;
	if (c->state != CS_IDLE) {
		fail(c, "cleanup client: envelope inside a transaction");
		return -1;
	}
	for (size_t i = 0; i < env->nattrs; i++)
		if (env->attrs[i].name == NULL || env->attrs[i].value == NULL) {
			fail(c, "cleanup client: named attribute %zu without "
			    "name or value", i);
			return -1;
		}
	attr_put_str(&c->out, "op", "envelope");
	attr_put_str(&c->out, "sender", env->sender != NULL ? env->sender : "");
	if (env->flags != 0)
		attr_put_int(&c->out, "flags", env->flags);
	put_opt_str(&c->out, "envid", env->envid);
	if (env->ret != 0)
		attr_put_int(&c->out, "ret", env->ret);
	put_opt_str(&c->out, "full_name", env->full_name);
	if (env->uid >= 0)
		attr_put_long(&c->out, "uid", env->uid);
	if (env->arrival_us > 0)
		attr_put_long(&c->out, "arrival", env->arrival_us);
	put_opt_str(&c->out, "log_ident", env->log_ident);
	put_opt_str(&c->out, "client_name", env->client_name);
	put_opt_str(&c->out, "client_address", env->client_address);
	put_opt_str(&c->out, "client_port", env->client_port);
	put_opt_str(&c->out, "helo_name", env->helo_name);
	put_opt_str(&c->out, "protocol", env->protocol);
	put_opt_str(&c->out, "tls_info", env->tls_info);
	put_opt_str(&c->out, "sasl_method", env->sasl_method);
	put_opt_str(&c->out, "sasl_username", env->sasl_username);
	put_opt_str(&c->out, "received_auth", env->received_auth);
	if (env->content_filter != NULL && env->content_filter[0] != '\0')
		attr_put_str(&c->out, "content_filter", env->content_filter);
	if (env->nattrs > 0) {
		attr_put_list(&c->out, "attrs", env->nattrs);
		for (size_t i = 0; i < env->nattrs; i++)
			attr_print(&c->out,
			    ATTR_STR("name", env->attrs[i].name),
			    ATTR_STR("value", env->attrs[i].value), ATTR_END);
	}
	attr_put_end(&c->out);
	c->state = CS_ENVELOPE;
	c->id_pending = (env->flags & CLEANUP_FLAG_QUEUE_ID) != 0;
	c->have_reply = false;
	return 0;
}

int cleanup_clnt_send_rcpt(cleanup_clnt_t *c, const char *address,
    const char *orcpt, int notify)
{
	if (c->state == CS_BROKEN)
		return -1;
	if (c->state != CS_ENVELOPE) {
		fail(c, "cleanup client: recipient %s",
		    c->state == CS_IDLE ? "before the envelope" :
		    "after the content");
		return -1;
	}
	if (address == NULL) {
		fail(c, "cleanup client: recipient without address");
		return -1;
	}
	attr_put_str(&c->out, "op", "rcpt");
	attr_put_str(&c->out, "address", address);
	put_opt_str(&c->out, "orcpt", orcpt);
	if (notify != 0)
		attr_put_int(&c->out, "notify", notify);
	attr_put_end(&c->out);
	if (str_len(&c->out) >= CLEANUP_CHUNK)
		return flush_out(c);
	return 0;
}

int cleanup_clnt_write(cleanup_clnt_t *c, const void *buf, size_t len)
{
	const char *p = buf;

	if (c->state == CS_BROKEN)
		return -1;
	if (c->state == CS_IDLE) {
		fail(c, "cleanup client: content before the envelope");
		return -1;
	}
	c->state = CS_DATA;
	while (len > 0) {
		size_t room = CLEANUP_CHUNK - str_len(&c->data);
		size_t n = len < room ? len : room;

		str_append(&c->data, p, n);
		p += n;
		len -= n;
		if (str_len(&c->data) == CLEANUP_CHUNK) {
			encode_data(c);
			if (flush_out(c) < 0)
				return -1;
		}
	}
	return 0;
}

int cleanup_clnt_send_edit(cleanup_clnt_t *c, int type, uint32_t index,
    const char *name, const char *value, const void *body, size_t blen)
{
	if (c->state == CS_BROKEN)
		return -1;
	if (c->state == CS_IDLE) {
		fail(c, "cleanup client: edit before the envelope");
		return -1;
	}
	if (str_len(&c->data) > 0)
		encode_data(c);		/* the content goes first */
	c->state = CS_DATA;
	do {
		/* A body in pieces of at most CLEANUP_CHUNK. */
		size_t n = blen > CLEANUP_CHUNK ? CLEANUP_CHUNK : blen;

		attr_put_str(&c->out, "op", "edit");
		attr_put_int(&c->out, "type", type);
		if (index != 0)
			attr_put_int(&c->out, "index", (int32_t)index);
		put_opt_str(&c->out, "name", name);
		put_opt_str(&c->out, "value", value);
		if (body != NULL)
			attr_put_data(&c->out, "body", body, n);
		attr_put_end(&c->out);
		if (str_len(&c->out) >= CLEANUP_CHUNK && flush_out(c) < 0)
			return -1;
		body = body != NULL ? (const char *)body + n : NULL;
		blen -= n;
	} while (blen > 0);
	return 0;
}

/* Checks a message read as a reply and fills reply: 0, or -1 with the
 * reason in reply.  Frees m. */
static int parse_reply(attr_msg_t *m, cleanup_reply_t *reply)
{
	const char *s, *dsn, *text;
	int32_t st;

	if (!attr_get_int(m, "status", &st) || !attr_get_str(m, "dsn", &dsn) ||
	    !attr_get_str(m, "text", &text)) {
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
		    "bad reply from cleanup service: %s missing",
		    !attr_get_int(m, "status", &st) ? "status" :
		    !attr_get_str(m, "dsn", &s) ? "dsn" : "text");
		attr_msg_free(m);
		return -1;
	}
	if (st != CLEANUP_STAT_OK && st != CLEANUP_STAT_TEMP &&
	    st != CLEANUP_STAT_PERM) {
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
		    "bad reply from cleanup service: status %d", (int)st);
		attr_msg_free(m);
		return -1;
	}
	reply->status = st;
	bcopy_str(reply->dsn, sizeof(reply->dsn), dsn);
	bcopy_str(reply->text, sizeof(reply->text), text);
	reply->queue_id[0] = '\0';
	if (attr_get_str(m, "queue_id", &s) && queue_id_valid(s))
		bcopy_str(reply->queue_id, sizeof(reply->queue_id), s);
	attr_msg_free(m);
	if (st == CLEANUP_STAT_OK && reply->queue_id[0] == '\0') {
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
		    "bad reply from cleanup service: success without a queue ID");
		return -1;
	}
	return 0;
}

/* Reads one message from cleanup: NULL with the reason in why. */
static attr_msg_t *read_msg(cleanup_clnt_t *c, int timeout_ms,
    const char *what, str_t *why)
{
	switch (attr_read_fd(c->reader, c->fd, timeout_ms)) {
	case ATTR_DONE:
		return attr_reader_take(c->reader);
	case ATTR_EOF:
		str_set(why, "lost connection with cleanup service");
		break;
	case ATTR_TIMEOUT:
		str_setf(why, "timeout waiting for the cleanup service's %s",
		    what);
		break;
	default:
		str_setf(why, "bad reply from cleanup service: %s",
		    attr_reader_error(c->reader));
		break;
	}
	return NULL;
}

/* Reads the early queue ID message (CLEANUP_FLAG_QUEUE_ID; it has no
 * status).  Returns 1 with the ID in id ("" when the envelope failed),
 * 0 when a final reply came instead (kept in c->early for
 * end_transaction: cleanup answers before the end only on a protocol
 * error), -1 on an error (sticky). */
static int read_queue_id(cleanup_clnt_t *c, char id[QUEUE_ID_SIZE],
    int timeout_ms)
{
	str_t why = STR_INIT;
	attr_msg_t *m;
	const char *s;
	int32_t st;

	id[0] = '\0';
	c->id_pending = false;
	if ((m = read_msg(c, timeout_ms, "queue ID", &why)) == NULL) {
		fail(c, "%s", str_cstr(&why));
		str_release(&why);
		return -1;
	}
	if (attr_get_int(m, "status", &st)) {
		(void)parse_reply(m, &c->early);
		c->have_reply = true;
		return 0;
	}
	if (!attr_get_str(m, "queue_id", &s) || (*s && !queue_id_valid(s))) {
		attr_msg_free(m);
		fail(c, "bad reply from cleanup service: no valid queue ID");
		return -1;
	}
	bcopy_str(id, QUEUE_ID_SIZE, s);
	attr_msg_free(m);
	return 1;
}

/* Reads the reply to the transaction (after the queue ID message when
 * that is still to come).  -1 (reply filled with the reason) when there
 * is none or it is malformed. */
static int read_reply(cleanup_clnt_t *c, cleanup_reply_t *reply,
    int timeout_ms)
{
	str_t why = STR_INIT;
	attr_msg_t *m;

	if (c->id_pending && !c->have_reply) {
		char id[QUEUE_ID_SIZE];
		bool broken = c->state == CS_BROKEN;
		int rc;

		/* fail() keeps the first error: mark it broken only here. */
		rc = read_queue_id(c, id, timeout_ms);
		if (rc < 0 && !broken) {
			cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
			    "%s", str_cstr(&c->err));
			return -1;
		}
		if (rc < 0)
			return -1;
	}
	if (c->have_reply) {
		c->have_reply = false;
		*reply = c->early;
		return 0;
	}
	if ((m = read_msg(c, timeout_ms, "reply", &why)) == NULL) {
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0", "%s",
		    str_cstr(&why));
		str_release(&why);
		return -1;
	}
	return parse_reply(m, reply);
}

int cleanup_clnt_queue_id(cleanup_clnt_t *c, char id[QUEUE_ID_SIZE])
{
	id[0] = '\0';
	if (c->state == CS_BROKEN || !c->id_pending)
		return -1;
	encode_data(c);
	if (flush_out(c) < 0)
		return -1;
	return read_queue_id(c, id, c->timeout_ms) == 1 && id[0] ? 0 : -1;
}

/* Sends op (end or abort) and reads the reply. */
static int end_transaction(cleanup_clnt_t *c, const char *op,
    cleanup_reply_t *reply)
{
	if (c->state == CS_IDLE) {
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
		    "cleanup client: no transaction");
		return -1;
	}
	if (c->state != CS_BROKEN) {
		encode_data(c);
		attr_print(&c->out, ATTR_STR("op", op), ATTR_END);
		flush_out(c);
	}
	if (c->state == CS_BROKEN) {
		/* cleanup may have closed the connection after a reply that
		 * says why; prefer that to our write error. */
		cleanup_reply_t r;
		str_t why = STR_INIT;

		str_set(&why, str_cstr(&c->err));
		if (read_reply(c, &r, 1000) == 0 &&
		    r.status != CLEANUP_STAT_OK) {
			*reply = r;
		} else {
			cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
			    "%s", str_cstr(&why));
		}
		str_release(&why);
		return -1;
	}
	bool early = c->have_reply;
	if (read_reply(c, reply, c->timeout_ms) < 0 || early) {
		/* An answer before the end: cleanup closed the connection. */
		fail(c, "%s", reply->text);
		return -1;
	}
	c->state = CS_IDLE;
	return reply->status == CLEANUP_STAT_OK ? 0 : -1;
}

int cleanup_clnt_finish(cleanup_clnt_t *c, cleanup_reply_t *reply)
{
	return end_transaction(c, "end", reply);
}

int cleanup_clnt_abort(cleanup_clnt_t *c, cleanup_reply_t *reply)
{
	cleanup_reply_t r;

	if (reply == NULL)
		reply = &r;
	end_transaction(c, "abort", reply);
	return c->state == CS_IDLE ? 0 : -1;
}

const char *cleanup_clnt_error(const cleanup_clnt_t *c)
{
	return c->state == CS_BROKEN ? str_cstr(&c->err) : NULL;
}

void cleanup_clnt_close(cleanup_clnt_t *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	str_release(&c->out);
	str_release(&c->data);
	str_release(&c->err);
	attr_reader_free(c->reader);
	free(c);
}
