/* Requests to the bounce daemon (dsn_notice.h, doc/protocol-delivery.md
 * section 7). */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "delivery_int.h"
#include "dsn_notice.h"
#include "mem.h"
#include "nametab.h"
#include "queue_id.h"
#include "sock.h"

static const char *const kind_names[] = {
	[DSN_NOTICE_NONE] = "none",
	[DSN_NOTICE_BOUNCE] = "bounce",
	[DSN_NOTICE_DELAY] = "delay",
	[DSN_NOTICE_SUCCESS] = "success",
};

const char *dsn_notice_kind_name(dsn_notice_kind_t k)
{
	return nametab_name(kind_names, NAMETAB_SIZE(kind_names), (int)k);
}

dsn_notice_kind_t dsn_notice_kind_parse(const char *s)
{
	return (dsn_notice_kind_t)nametab_value(kind_names,
	    NAMETAB_SIZE(kind_names), s);
}

void dsn_notice_init(dsn_notice_req_t *req, dsn_notice_kind_t kind,
    const char *queue, const char *queue_id, int flags)
{
	memset(req, 0, sizeof(*req));
	req->kind = kind;
	req->queue = dlv_strdup(queue);
	req->queue_id = dlv_strdup(queue_id);
	req->flags = flags;
}

void dsn_notice_add(dsn_notice_req_t *req, const sl_rec_t *rec)
{
	sl_list_t l = { req->rec, req->nrec, req->nrec, false };

	sl_list_add(&l, rec);
	req->rec = l.v;
	req->nrec = l.n;
}

void dsn_notice_free(dsn_notice_req_t *req)
{
	if (!req)
		return;
	free(req->queue);
	free(req->queue_id);
	for (size_t i = 0; i < req->nrec; i++)
		sl_rec_free(&req->rec[i]);
	free(req->rec);
	memset(req, 0, sizeof(*req));
}

static bool req_ok(const dsn_notice_req_t *req, str_t *err)
{
	str_t what = STR_INIT;
	bool ok = true;

	if (req->kind == DSN_NOTICE_NONE ||
	    (unsigned)req->kind > DSN_NOTICE_SUCCESS) {
		str_setf(err, "request: unknown kind");
		return false;
	}
	if (!dlv_queue_file_ok(req->queue, req->queue_id, err))
		return false;
	if (req->flags & ~DSN_N_MASK) {
		str_setf(err, "flags: unknown bits 0x%x", req->flags & ~DSN_N_MASK);
		return false;
	}
	if (req->nrec > DSN_NOTICE_MAX_INLINE) {
		str_setf(err, "rcpt: %zu records, limit %d", req->nrec,
		    DSN_NOTICE_MAX_INLINE);
		return false;
	}
	for (size_t i = 0; ok && i < req->nrec; i++) {
		str_setf(&what, "rcpt[%zu]", i);
		ok = statuslog_rec_ok(&req->rec[i], str_cstr(&what), err);
	}
	str_release(&what);
	return ok;
}

int dsn_notice_encode(const dsn_notice_req_t *req, str_t *out, str_t *err)
{
	if (!req_ok(req, err))
		return -1;
	attr_put_str(out, "request", dsn_notice_kind_name(req->kind));
	attr_put_str(out, "queue", req->queue);
	attr_put_str(out, "queue_id", req->queue_id);
	if (req->flags)
		attr_put_int(out, "flags", req->flags);
	if (req->nrec) {
		attr_put_list(out, "rcpt", req->nrec);
		for (size_t i = 0; i < req->nrec; i++)
			statuslog_encode(&req->rec[i], out);
	}
	attr_put_end(out);
	return 0;
}

static const attr_spec_t notice_spec[] = {
	{ "request", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "queue", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "queue_id", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "flags", ATTR_TYPE_INT, 0, NULL },
	{ "rcpt", ATTR_TYPE_LIST, 0, statuslog_rec_schema },
	{ NULL, 0, 0, NULL },
};

attr_reader_t *dsn_notice_reader_new(void)
{
	return attr_reader_new(notice_spec, ATTR_READ_STRICT, &dlv_limits);
}

int dsn_notice_decode(const attr_msg_t *msg, dsn_notice_req_t *req,
    str_t *err)
{
	const attr_list_t *l;

	memset(req, 0, sizeof(*req));
	req->kind = dsn_notice_kind_parse(dlv_get_str(msg, "request"));
	req->queue = dlv_strdup(dlv_get_str(msg, "queue"));
	req->queue_id = dlv_strdup(dlv_get_str(msg, "queue_id"));
	req->flags = dlv_get_int(msg, "flags");
	if (req->kind == DSN_NOTICE_NONE) {
		str_setf(err, "request: unknown kind");
		return -1;
	}
	if (attr_get_list(msg, "rcpt", &l)) {
		size_t n = attr_list_count(l);
		if (n > DSN_NOTICE_MAX_INLINE) {
			str_setf(err, "rcpt: %zu records, limit %d", n,
			    DSN_NOTICE_MAX_INLINE);
			return -1;
		}
		req->rec = xcalloc(n ? n : 1, sizeof(*req->rec));
		for (size_t i = 0; i < n; i++) {
			const attr_msg_t *g = attr_list_group(l, i);
			dlv_rcpt_decode(g, &req->rec[i].rcpt);
			dlv_status_decode(g, &req->rec[i].st);
			req->rec[i].time = dlv_get_long(g, "time");
		}
		req->nrec = n;
	}
	return req_ok(req, err) ? 0 : -1;
}

/* ---- Reply ---------------------------------------------------------- */

static const attr_spec_t reply_spec[] = {
	{ "status", ATTR_TYPE_INT, ATTR_REQUIRED, NULL },
	{ "reason", ATTR_TYPE_STR, 0, NULL },
	{ "notice_id", ATTR_TYPE_STR, 0, NULL },
	{ NULL, 0, 0, NULL },
};

void dsn_notice_reply_encode(int status, const char *reason,
    const char *notice_id, str_t *out)
{
	str_t clean = STR_INIT;

	attr_put_int(out, "status", status);
	if (reason && *reason) {
		dlv_clean_text(&clean, reason, DLV_MAX_TEXT);
		attr_put_str(out, "reason", str_cstr(&clean));
	}
	if (notice_id && *notice_id)
		attr_put_str(out, "notice_id", notice_id);
	attr_put_end(out);
	str_release(&clean);
}

attr_reader_t *dsn_notice_reply_reader_new(void)
{
	return attr_reader_new(reply_spec, ATTR_READ_STRICT, &dlv_limits);
}

int dsn_notice_reply_decode(const attr_msg_t *msg, dsn_notice_reply_t *rep,
    str_t *err)
{
	memset(rep, 0, sizeof(*rep));
	rep->status = dlv_get_int(msg, "status");
	rep->reason = dlv_strdup(dlv_get_str(msg, "reason"));
	rep->notice_id = dlv_strdup(dlv_get_str(msg, "notice_id"));
	if (rep->status != 0 && rep->status != -1) {
		str_setf(err, "status: invalid value %d", rep->status);
		return -1;
	}
	if (!dlv_text_ok(rep->reason, DLV_TEXT_ASCII, DLV_MAX_TEXT, "reason",
	    err))
		return -1;
	if (*rep->notice_id && !queue_id_valid(rep->notice_id)) {
		str_setf(err, "notice_id: invalid queue ID");
		return -1;
	}
	return 0;
}

void dsn_notice_reply_free(dsn_notice_reply_t *rep)
{
	if (!rep)
		return;
	free(rep->reason);
	free(rep->notice_id);
	memset(rep, 0, sizeof(*rep));
}

int dsn_notice_call(const char *path, const dsn_notice_req_t *req,
    dsn_notice_reply_t *rep, int timeout_ms, str_t *err)
{
	struct timespec t0, t1;
	str_t buf = STR_INIT;
	attr_reader_t *r = NULL;
	attr_msg_t *msg = NULL;
	int fd = -1, e, rc = -1, left = timeout_ms;

	memset(rep, 0, sizeof(*rep));
	if (dsn_notice_encode(req, &buf, err) < 0)
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((e = sock_unix_connect(path, timeout_ms < 0 ? 0 : timeout_ms,
	    &fd)) != 0) {
		str_setf(err, "connect to %s: %s", path, strerror(e));
		goto out;
	}
	if (attr_write_fd(fd, buf.buf, buf.len, timeout_ms) < 0) {
		str_setf(err, "sending to %s: %s", path, strerror(errno));
		goto out;
	}
	if (timeout_ms >= 0) {
		long spent;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		spent = (t1.tv_sec - t0.tv_sec) * 1000L +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000L;
		left = spent >= timeout_ms ? 0 : (int)(timeout_ms - spent);
	}
	r = dsn_notice_reply_reader_new();
	switch (attr_read_fd(r, fd, left)) {
	case ATTR_DONE:
		msg = attr_reader_take(r);
		break;
	case ATTR_EOF:
		str_setf(err, "%s closed the connection without a reply", path);
		goto out;
	case ATTR_TIMEOUT:
		str_setf(err, "timed out waiting for %s", path);
		goto out;
	default:
		str_setf(err, "malformed reply from %s: %s", path,
		    attr_reader_error(r));
		goto out;
	}
	if (dsn_notice_reply_decode(msg, rep, err) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0)
		dsn_notice_reply_free(rep);
	if (msg)
		attr_msg_free(msg);
	if (r)
		attr_reader_free(r);
	if (fd >= 0)
		close(fd);
	str_release(&buf);
	return rc;
}
