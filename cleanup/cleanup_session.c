/* cleanup: the protocol session with one client (doc/protocol-cleanup.md):
 * transactions of envelope, rcpt*, data*, end|abort, each answered by
 * one reply; anything else ends the connection with a logged reason. */
#include <errno.h>
#include <string.h>
#include "attr.h"
#include "cleanup.h"
#include "log.h"
#include "mem.h"
#include "server.h"

static const attr_spec_t attr_group[] = {
	{ "name", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "value", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ NULL, 0, 0, NULL },
};

/* Every attribute of every request; which ones a request needs is
 * checked per op below. */
static const attr_spec_t req_spec[] = {
	{ "op", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	/* envelope */
	{ "sender", ATTR_TYPE_STR, 0, NULL },
	{ "flags", ATTR_TYPE_INT, 0, NULL },
	{ "envid", ATTR_TYPE_STR, 0, NULL },
	{ "ret", ATTR_TYPE_INT, 0, NULL },
	{ "full_name", ATTR_TYPE_STR, 0, NULL },
	{ "uid", ATTR_TYPE_LONG, 0, NULL },
	{ "arrival", ATTR_TYPE_LONG, 0, NULL },
	{ "log_ident", ATTR_TYPE_STR, 0, NULL },
	{ "client_name", ATTR_TYPE_STR, 0, NULL },
	{ "client_address", ATTR_TYPE_STR, 0, NULL },
	{ "client_port", ATTR_TYPE_STR, 0, NULL },
	{ "helo_name", ATTR_TYPE_STR, 0, NULL },
	{ "protocol", ATTR_TYPE_STR, 0, NULL },
	{ "tls_info", ATTR_TYPE_STR, 0, NULL },
	{ "sasl_method", ATTR_TYPE_STR, 0, NULL },
	{ "sasl_username", ATTR_TYPE_STR, 0, NULL },
	{ "received_auth", ATTR_TYPE_STR, 0, NULL },
	{ "content_filter", ATTR_TYPE_STR, 0, NULL },
	{ "attrs", ATTR_TYPE_LIST, 0, attr_group },
	/* rcpt */
	{ "address", ATTR_TYPE_STR, 0, NULL },
	{ "orcpt", ATTR_TYPE_STR, 0, NULL },
	{ "notify", ATTR_TYPE_INT, 0, NULL },
	/* data */
	{ "data", ATTR_TYPE_DATA, 0, NULL },
	/* edit */
	{ "type", ATTR_TYPE_INT, 0, NULL },
	{ "index", ATTR_TYPE_INT, 0, NULL },
	{ "name", ATTR_TYPE_STR, 0, NULL },
	{ "value", ATTR_TYPE_STR, 0, NULL },
	{ "body", ATTR_TYPE_DATA, 0, NULL },
	{ NULL, 0, 0, NULL },
};

/* A data chunk is at most 1 MiB; an envelope has a few hundred
 * attributes at most. */
static const attr_limits_t req_limits = {
	.max_value = 1024 * 1024,
	.max_attrs = 4096,
	.max_group_attrs = 64,
	.max_total = 1024 * 1024 + 65536,
	.max_depth = 1,
};

void cleanup_session_trigger_qmgr(void)
{
	static const char *const paths[] = { "public/qmgr", "private/qmgr" };
	/* Where the last wake-up went: found once, then one call each. */
	static size_t which;

	for (size_t n = 0; n < 2; n++, which = (which + 1) % 2) {
		if (trigger_wakeup(paths[which], TRIGGER_SCAN_INCOMING) == 0)
			return;
		if (errno != ENOENT)
			break;
	}
	/* Not an error: qmgr finds the file when it next scans incoming. */
	if (log_verbose)
		log_debug("cannot trigger qmgr: %s", strerror(errno));
}

static int send_reply(int fd, const cleanup_reply_t *r, int timeout_ms)
{
	str_t out = STR_INIT;
	int rc;

	attr_print(&out, ATTR_INT("status", r->status), ATTR_STR("dsn", r->dsn),
	    ATTR_STR("text", r->text), ATTR_STR("queue_id", r->queue_id),
	    ATTR_END);
	rc = attr_write_fd(fd, str_cstr(&out), str_len(&out), timeout_ms);
	if (rc < 0)
		log_warning("cannot send reply to cleanup client: %s",
		    errno == ETIMEDOUT ? "timeout" : strerror(errno));
	str_release(&out);
	return rc;
}

/* CLEANUP_FLAG_QUEUE_ID: the ID at once, for the client's own log line
 * about the message ("" when the envelope already failed: the reply at
 * the end says why).  One small write per message, asked for by smtpd
 * and pickup only. */
static int send_queue_id(int fd, const cleanup_msg_t *m, int timeout_ms)
{
	str_t out = STR_INIT;
	int rc;

	attr_print(&out, ATTR_STR("queue_id", cleanup_msg_ok(m) ?
	    cleanup_msg_queue_id(m) : ""), ATTR_END);
	rc = attr_write_fd(fd, str_cstr(&out), str_len(&out), timeout_ms);
	if (rc < 0)
		log_warning("%s: cannot send the queue ID to the cleanup "
		    "client: %s", cleanup_msg_queue_id(m), errno == ETIMEDOUT ?
		    "timeout" : strerror(errno));
	str_release(&out);
	return rc;
}

static const char *opt_str(const attr_msg_t *msg, const char *name)
{
	const char *v;

	return attr_get_str(msg, name, &v) ? v : NULL;
}

/* Starts a message from an envelope request. */
static cleanup_msg_t *envelope(cleanup_cfg_t *cfg, const attr_msg_t *msg)
{
	cleanup_msg_envelope_t env = { .uid = -1 };
	const attr_list_t *list;
	cleanup_attr_t *attrs = NULL;
	int32_t i32;
	int64_t i64;
	cleanup_msg_t *m;

	env.sender = opt_str(msg, "sender");
	if (attr_get_int(msg, "flags", &i32))
		env.flags = i32;
	env.envid = opt_str(msg, "envid");
	if (attr_get_int(msg, "ret", &i32))
		env.ret = i32;
	env.full_name = opt_str(msg, "full_name");
	if (attr_get_long(msg, "uid", &i64))
		env.uid = i64 < 0 ? -1 : i64;
	if (attr_get_long(msg, "arrival", &i64) && i64 > 0)
		env.arrival_us = i64;
	env.log_ident = opt_str(msg, "log_ident");
	env.client_name = opt_str(msg, "client_name");
	env.client_address = opt_str(msg, "client_address");
	env.client_port = opt_str(msg, "client_port");
	env.helo_name = opt_str(msg, "helo_name");
	env.protocol = opt_str(msg, "protocol");
	env.tls_info = opt_str(msg, "tls_info");
	env.sasl_method = opt_str(msg, "sasl_method");
	env.sasl_username = opt_str(msg, "sasl_username");
	env.received_auth = opt_str(msg, "received_auth");
	env.content_filter = opt_str(msg, "content_filter");
	if (attr_get_list(msg, "attrs", &list)) {
		env.nattrs = attr_list_count(list);
		attrs = xcalloc(env.nattrs + 1, sizeof(*attrs));
		for (size_t k = 0; k < env.nattrs; k++) {
			const attr_msg_t *g = attr_list_group(list, k);
			attr_get_str(g, "name", &attrs[k].name);
			attr_get_str(g, "value", &attrs[k].value);
		}
		env.attrs = attrs;
	}
	m = cleanup_msg_new(cfg, &env);
	free(attrs);
	return m;
}

void cleanup_session(cleanup_cfg_t *cfg, int fd)
{
	attr_reader_t *r = attr_reader_new(req_spec, ATTR_READ_LENIENT,
	    &req_limits);
	cleanup_msg_t *m = NULL;
	enum { S_IDLE, S_RCPT, S_DATA, S_EDIT } st = S_IDLE;
	str_t why = STR_INIT;
	cleanup_reply_t reply;

	for (;;) {
		attr_msg_t *msg;
		const char *op;

		server_watchdog_pet();
		switch (attr_read_fd(r, fd, cfg->ipc_timeout_ms)) {
		case ATTR_DONE:
			break;
		case ATTR_EOF:
			if (m != NULL)
				log_info("%s: client closed the connection in "
				    "the middle of a message; nothing queued",
				    cleanup_msg_queue_id(m));
			goto done;
		case ATTR_TIMEOUT:
			log_warning("%s%stimeout reading from cleanup client; "
			    "closing the connection",
			    m ? cleanup_msg_queue_id(m) :
			    "", m && *cleanup_msg_queue_id(m) ? ": " : "");
			goto done;
		default:
			if (attr_reader_errcode(r) == ATTR_E_IO) {
				/* EOF inside a message, or a read error. */
				log_warning("%s%sconnection with cleanup client "
				    "broken: %s",
				    m ? cleanup_msg_queue_id(m) : "",
				    m && *cleanup_msg_queue_id(m) ? ": " : "",
				    attr_reader_error(r));
				goto done;
			}
			str_set(&why, attr_reader_error(r));
			goto protocol_error;
		}
		msg = attr_reader_take(r);
		attr_get_str(msg, "op", &op);
		if (strcmp(op, "envelope") == 0) {
			if (st != S_IDLE) {
				str_set(&why, "envelope inside a transaction");
			} else if (opt_str(msg, "sender") == NULL) {
				str_set(&why, "envelope without sender");
			} else {
				int32_t fl = 0;
				m = envelope(cfg, msg);
				st = S_RCPT;
				if (attr_get_int(msg, "flags", &fl) &&
				    (fl & CLEANUP_FLAG_QUEUE_ID) &&
				    send_queue_id(fd, m, cfg->ipc_timeout_ms) < 0) {
					attr_msg_free(msg);
					goto done;
				}
			}
		} else if (strcmp(op, "rcpt") == 0) {
			const char *a = opt_str(msg, "address");
			int32_t notify = 0;
			bool has = attr_get_int(msg, "notify", &notify);

			if (st != S_RCPT)
				str_setf(&why, "recipient %s", st == S_IDLE ?
				    "before an envelope" : st == S_EDIT ?
				    "after an edit" : "after content");
			else if (a == NULL)
				str_set(&why, "recipient without address");
			else
				cleanup_msg_rcpt(m, a, opt_str(msg, "orcpt"),
				    has, notify);
		} else if (strcmp(op, "data") == 0) {
			const void *p;
			size_t n;

			if (st == S_IDLE) {
				str_set(&why, "content before an envelope");
			} else if (st == S_EDIT) {
				str_set(&why, "content after an edit");
			} else if (!attr_get_data(msg, "data", &p, &n) ||
			    n == 0) {
				str_set(&why, "data request without data");
			} else {
				st = S_DATA;
				cleanup_msg_data(m, p, n);
			}
		} else if (strcmp(op, "edit") == 0) {
			int32_t type = 0, index = 0;
			const void *p = NULL;
			size_t n = 0;

			if (st == S_IDLE) {
				str_set(&why, "edit before an envelope");
			} else if (!attr_get_int(msg, "type", &type)) {
				str_set(&why, "edit without type");
			} else {
				(void)attr_get_int(msg, "index", &index);
				(void)attr_get_data(msg, "body", &p, &n);
				st = S_EDIT;
				cleanup_msg_edit(m, type, index < 0 ? 0 :
				    (uint32_t)index, opt_str(msg, "name"),
				    opt_str(msg, "value"), p, n);
			}
		} else if (strcmp(op, "end") == 0 || strcmp(op, "abort") == 0) {
			bool end = op[0] == 'e';

			if (st == S_IDLE) {
				str_setf(&why, "%s without a transaction", op);
			} else {
				bool queued = false;

				if (end) {
					queued = cleanup_msg_end(m, &reply);
				} else {
					if (log_verbose)
						log_debug("%s: aborted by client",
						    cleanup_msg_queue_id(m));
					cleanup_reply_set(&reply, CLEANUP_STAT_TEMP,
					    "4.3.0", "message aborted by client");
				}
				cleanup_msg_free(m);
				m = NULL;
				st = S_IDLE;
				int wrc = send_reply(fd, &reply, cfg->ipc_timeout_ms);
				if (queued)
					cleanup_session_trigger_qmgr();
				if (wrc < 0) {
					attr_msg_free(msg);
					goto done;
				}
			}
		} else {
			str_t tmp = STR_INIT;
			str_quote_printable(&tmp, op, strlen(op) > 64 ? 64 :
			    strlen(op));
			str_setf(&why, "unknown request \"%s\"", str_cstr(&tmp));
			str_release(&tmp);
		}
		attr_msg_free(msg);
		if (str_len(&why) > 0)
			goto protocol_error;
	}

protocol_error:
	log_warning("%s%sprotocol error from cleanup client: %s; closing the "
	    "connection", m ? cleanup_msg_queue_id(m) : "",
	    m && *cleanup_msg_queue_id(m) ? ": " : "", str_cstr(&why));
	cleanup_reply_set(&reply, CLEANUP_STAT_TEMP, "4.3.0",
	    "protocol error: %s", str_cstr(&why));
	send_reply(fd, &reply, 1000);
done:
	cleanup_msg_free(m);
	attr_reader_free(r);
	str_release(&why);
}
