/* The qmgr control channel: names, the client, the message actions.
 * See qmgr_clnt.h and doc/protocol-qmgr-control.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "mem.h"
#include "qmgr_clnt.h"
#include "sock.h"
#include "statuslog.h"

static const char *const act_names[] = { "delete", "hold", "release",
    "requeue" };
static const char *const act_done[] = { "removed", "placed on hold",
    "released from hold", "requeued" };
static const char *const act_stop[] = {
	"delivery stopped: message deleted by administrator",
	"delivery stopped: message placed on hold by administrator",
	"delivery stopped by administrator",
	"delivery stopped: message requeued by administrator",
};

const char *qmgr_clnt_action_name(qmgr_clnt_action_t a)
{
	return (unsigned)a < 4 ? act_names[a] : "?";
}

bool qmgr_clnt_action_parse(const char *name, qmgr_clnt_action_t *a)
{
	for (int i = 0; i < 4; i++)
		if (name != NULL && strcmp(name, act_names[i]) == 0) {
			*a = (qmgr_clnt_action_t)i;
			return true;
		}
	return false;
}

const char *qmgr_clnt_action_done_text(qmgr_clnt_action_t a)
{
	return (unsigned)a < 4 ? act_done[a] : "?";
}

const char *qmgr_clnt_action_stop_reason(qmgr_clnt_action_t a)
{
	return (unsigned)a < 4 ? act_stop[a] : "delivery stopped by administrator";
}

/* ---- Message actions ------------------------------------------------- */

static void remove_log(const queue_layout_t *ql, const char *log,
    const char *id)
{
	str_t e = STR_INIT;

	if (statuslog_remove(ql, log, id, &e) < 0)
		log_warning("%s: %s", id, str_cstr(&e));
	str_release(&e);
}

int qmgr_clnt_msg_apply(const queue_layout_t *ql, const char *queue,
    const char *id, qmgr_clnt_action_t act, str_t *err)
{
	str_t path = STR_INIT;
	int rc = -1, saved = 0;

	if (!queue_name_valid(queue) || !queue_id_valid(id)) {
		str_setf(err, "bad queue name or queue ID");
		errno = EINVAL;
		return -1;
	}
	if (queue_find(ql, queue, id, &path) < 0) {
		saved = errno;
		str_setf(err, "%s: not in the %s queue", id, queue);
		goto out;
	}
	switch (act) {
	case QMGR_CLNT_ACT_DELETE:
		if (unlink(str_cstr(&path)) < 0) {
			saved = errno;
			str_setf(err, "remove %s: %s", str_cstr(&path),
			    strerror(saved));
			goto out;
		}
		/* Removed means removed, also after a crash. */
		(void)file_fsync_parent(str_cstr(&path));
		remove_log(ql, QUEUE_DEFER, id);
		remove_log(ql, QUEUE_BOUNCE, id);
		remove_log(ql, QUEUE_TRACE, id);
		rc = 0;
		break;
	case QMGR_CLNT_ACT_HOLD:
		if (strcmp(queue, QUEUE_HOLD) == 0) {
			str_setf(err, "%s: already on hold", id);
			rc = 1;
			break;
		}
		if (queue_move(ql, queue, QUEUE_HOLD, id, err) < 0) {
			saved = errno;
			goto out;
		}
		rc = 0;
		break;
	case QMGR_CLNT_ACT_RELEASE:
		if (strcmp(queue, QUEUE_HOLD) != 0) {
			str_setf(err, "%s: not on hold", id);
			rc = 1;
			break;
		}
		/* Due now: the file time of a deferred message is its retry
		 * time.  Set before the move, so qmgr never sees it early or
		 * late. */
		if (utimes(str_cstr(&path), NULL) < 0 && errno == ENOENT) {
			saved = errno;
			goto out;
		}
		if (queue_move(ql, QUEUE_HOLD, QUEUE_DEFERRED, id, err) < 0) {
			saved = errno;
			goto out;
		}
		rc = 0;
		break;
	case QMGR_CLNT_ACT_REQUEUE:
		if (strcmp(queue, QUEUE_INCOMING) == 0
		    || strcmp(queue, QUEUE_MAILDROP) == 0) {
			str_setf(err, "%s: already waiting in %s", id, queue);
			rc = 1;
			break;
		}
		if (utimes(str_cstr(&path), NULL) < 0 && errno == ENOENT) {
			saved = errno;
			goto out;
		}
		/* The defer log tells why the last pass deferred: gone before
		 * the move, since qmgr starts a new one as soon as it sees the
		 * file. */
		remove_log(ql, QUEUE_DEFER, id);
		if (queue_move(ql, queue, QUEUE_INCOMING, id, err) < 0) {
			saved = errno;
			goto out;
		}
		rc = 0;
		break;
	default:
		str_setf(err, "unknown action");
		saved = EINVAL;
		goto out;
	}
out:
	str_release(&path);
	if (rc < 0)
		errno = saved ? saved : EIO;
	return rc;
}

/* ---- Client ----------------------------------------------------------- */

struct qmgr_clnt {
	int fd;
	attr_reader_t *rd;
};

/* Replies can be large (every destination queue): generous limits, but
 * still limits. */
static const attr_limits_t qmgr_clnt_limits = {
	.max_value = 65536,
	.max_attrs = 4000000,
	.max_group_attrs = 256,
	.max_total = 256u << 20,
	.max_depth = 3,
};

static int connect_path(const char *queue_dir, int timeout_ms, int *fd)
{
	str_t path = STR_INIT;
	struct sockaddr_un sun;
	int rc, cwd;

	str_setf(&path, "%s/%s", queue_dir, QMGR_CONTROL_PATH);
	if (str_len(&path) < sizeof(sun.sun_path)) {
		rc = sock_unix_connect(str_cstr(&path), timeout_ms, fd);
		str_release(&path);
		return rc;
	}
	/* A deep queue directory: connect by the relative name from
	 * inside it, as qmgr binds it. */
	str_release(&path);
	if ((cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return errno;
	if (chdir(queue_dir) < 0) {
		rc = errno;
		close(cwd);
		return rc;
	}
	rc = sock_unix_connect(QMGR_CONTROL_PATH, timeout_ms, fd);
	if (fchdir(cwd) < 0)
		log_fatal("cannot return to the working directory: %s",
		    strerror(errno));
	close(cwd);
	return rc;
}

qmgr_clnt_t *qmgr_clnt_connect(const char *queue_dir, int timeout_ms,
    str_t *err)
{
	qmgr_clnt_t *c;
	int fd = -1, rc;

	rc = connect_path(queue_dir, timeout_ms, &fd);
	if (rc != 0) {
		if (rc == ENOENT || rc == ECONNREFUSED)
			str_setf(err, "qmgr is not running (no control channel "
			    "at %s/%s: %s)", queue_dir, QMGR_CONTROL_PATH,
			    strerror(rc));
		else
			str_setf(err, "connect to %s/%s: %s", queue_dir,
			    QMGR_CONTROL_PATH, strerror(rc));
		errno = rc;
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->rd = attr_reader_new(NULL, ATTR_READ_LENIENT, &qmgr_clnt_limits);
	return c;
}

attr_msg_t *qmgr_clnt_call(qmgr_clnt_t *c, const str_t *req, int timeout_ms,
    str_t *err)
{
	enum attr_result r;

	if (attr_write_fd(c->fd, str_cstr(req), str_len(req), timeout_ms) < 0) {
		str_setf(err, "sending the request to qmgr: %s", strerror(errno));
		return NULL;
	}
	r = attr_read_fd(c->rd, c->fd, timeout_ms);
	switch (r) {
	case ATTR_DONE:
		return attr_reader_take(c->rd);
	case ATTR_EOF:
		str_setf(err, "qmgr closed the control connection without a "
		    "reply (see the mail log)");
		break;
	case ATTR_TIMEOUT:
		str_setf(err, "no reply from qmgr within %d ms", timeout_ms);
		break;
	default:
		str_setf(err, "bad reply from qmgr: %s",
		    attr_reader_error(c->rd));
		break;
	}
	return NULL;
}

void qmgr_clnt_close(qmgr_clnt_t *c)
{
	if (c == NULL)
		return;
	close(c->fd);
	attr_reader_free(c->rd);
	free(c);
}

int qmgr_clnt_reply_status(const attr_msg_t *m)
{
	int32_t v;

	return m && attr_get_int(m, "status", &v) ? v : QMGR_CLNT_FAIL;
}

const char *qmgr_clnt_reply_reason(const attr_msg_t *m)
{
	const char *s;

	return m && attr_get_str(m, "reason", &s) ? s : "";
}

int qmgr_clnt_request_simple(const char *queue_dir, const char *request,
    const char *nexthop, const char *reason, long *count, int timeout_ms,
    str_t *err)
{
	qmgr_clnt_t *c;
	attr_msg_t *rep;
	str_t req = STR_INIT;
	int64_t n;
	int st;

	if ((c = qmgr_clnt_connect(queue_dir, timeout_ms, err)) == NULL)
		return QMGR_CLNT_FAIL;
	attr_put_str(&req, "request", request);
	if (nexthop != NULL)
		attr_put_str(&req, "nexthop", nexthop);
	if (reason != NULL && *reason)
		attr_put_str(&req, "reason", reason);
	attr_put_end(&req);
	rep = qmgr_clnt_call(c, &req, timeout_ms, err);
	str_release(&req);
	qmgr_clnt_close(c);
	if (rep == NULL) {
		errno = EIO;
		return QMGR_CLNT_FAIL;
	}
	st = qmgr_clnt_reply_status(rep);
	if (st == QMGR_CLNT_FAIL)
		str_setf(err, "qmgr: %s", *qmgr_clnt_reply_reason(rep)
		    ? qmgr_clnt_reply_reason(rep) : "request failed");
	else if (*qmgr_clnt_reply_reason(rep))
		str_set(err, qmgr_clnt_reply_reason(rep));
	if (count != NULL)
		*count = attr_get_long(rep, "count", &n) ? (long)n : 0;
	attr_msg_free(rep);
	if (st == QMGR_CLNT_FAIL)
		errno = EIO;
	return st;
}
