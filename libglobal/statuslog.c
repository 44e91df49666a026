/* Per-message status logs (statuslog.h, doc/protocol-delivery.md §6). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "attr.h"
#include "delivery_int.h"
#include "dsn.h"
#include "file.h"
#include "log.h"
#include "mem.h"
#include "queue_id.h"
#include "statuslog.h"

const attr_spec_t statuslog_rec_schema[] = {
	DLV_SPEC_RCPT
	DLV_SPEC_OFFSET
	DLV_SPEC_STATUS
	{ "time", ATTR_TYPE_LONG, ATTR_REQUIRED, NULL },
	{ NULL, 0, 0, NULL },
};


static const attr_limits_t rec_limits = {
	.max_value = DLV_MAX_VALUE,
	.max_attrs = 64,
	.max_group_attrs = 32,
	.max_total = 64 * 1024,
	.max_depth = 0,
};

static bool log_name_ok(const char *log, str_t *err)
{
	if (log && (strcmp(log, QUEUE_DEFER) == 0 ||
	    strcmp(log, QUEUE_BOUNCE) == 0 || strcmp(log, QUEUE_TRACE) == 0))
		return true;
	str_setf(err, "unknown status log \"%s\"", log ? log : "(null)");
	return false;
}

void statuslog_encode(const sl_rec_t *rec, str_t *out)
{
	dlv_rcpt_encode(out, &rec->rcpt);
	dlv_status_encode(out, &rec->st, DLV_MAX_TEXT);
	attr_put_long(out, "time", rec->time);
	attr_put_end(out);
}

/* Validation of a record, for writing and reading: the delivery rules,
 * except that the status class need not agree with the action (expired
 * mail is "failed" with its last 4.x.x code). */
bool statuslog_rec_ok(const sl_rec_t *rec, const char *what, str_t *err)
{
	if (!dlv_rcpt_ok(&rec->rcpt, what, err) ||
	    !dlv_status_ok(&rec->st, false, what, err))
		return false;
	if (rec->time < 0) {
		str_setf(err, "%s.time: negative", what);
		return false;
	}
	return true;
}

/* Record strings may be NULL in a caller's record; the checks want "". */
static void rec_fill(sl_rec_t *dst, const sl_rec_t *src)
{
	*dst = *src;
#define Z(f) if (!dst->f) dst->f = (char *)""
	Z(rcpt.address); Z(rcpt.orig); Z(rcpt.orcpt);
	Z(st.reason); Z(st.diag_type); Z(st.diag_text); Z(st.relay);
	Z(st.remote_mta);
#undef Z
}

/* A crash during an append can leave a cut record (or NULs) at the end;
 * appending after it would make the whole log unreadable, so the tail
 * is cut back to the last complete record first.  Values never hold a
 * line feed (no control characters), so a record boundary is exactly
 * where the file holds "\n.\n". */
static int repair_tail(int fd, const char *path, str_t *err)
{
	enum { WINDOW = 128 * 1024 };	/* > the largest record */
	struct stat st;
	char tail[3], *buf;
	off_t start, keep = 0;
	size_t len;

	if (fstat(fd, &st) < 0) {
		str_setf(err, "stat %s: %s", path, strerror(errno));
		return -1;
	}
	if (st.st_size == 0)
		return 0;
	if (st.st_size >= 3 && pread(fd, tail, 3, st.st_size - 3) == 3 &&
	    memcmp(tail, "\n.\n", 3) == 0)
		return 0;
	start = st.st_size > WINDOW ? st.st_size - WINDOW : 0;
	len = (size_t)(st.st_size - start);
	buf = xmalloc(len);
	if (pread(fd, buf, len, start) != (ssize_t)len) {
		str_setf(err, "read %s: %s", path, strerror(errno));
		free(buf);
		return -1;
	}
	for (size_t i = len; i >= 3; i--)
		if (memcmp(buf + i - 3, "\n.\n", 3) == 0) {
			keep = start + (off_t)i;
			break;
		}
	free(buf);
	if (keep == 0 && start > 0) {
		/* No boundary in a window larger than any record: this is
		 * not a cut append but damage; leave it for a human. */
		str_setf(err, "%s: damaged (no record boundary near the end)",
		    path);
		return -1;
	}
	log_warning("%s: removing %lld bytes of a cut record at the end",
	    path, (long long)(st.st_size - keep));
	if (ftruncate(fd, keep) < 0) {
		str_setf(err, "truncate %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int statuslog_append(const queue_layout_t *ql, const char *log,
    const char *id, const sl_rec_t *recs, size_t n, int flags, str_t *err)
{
	str_t path = STR_INIT, dir = STR_INIT, buf = STR_INIT, what = STR_INIT;
	bool created = false;
	int fd = -1, rc = -1;

	if (!log_name_ok(log, err))
		return -1;
	if (!id || !queue_id_valid(id)) {
		str_setf(err, "invalid queue ID");
		return -1;
	}
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		sl_rec_t r;
		rec_fill(&r, &recs[i]);
		str_setf(&what, "record %zu", i);
		if (!statuslog_rec_ok(&r, str_cstr(&what), err))
			goto out;
		statuslog_encode(&r, &buf);
	}
	queue_path(ql, log, id, &path);
	fd = open(str_cstr(&path), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && errno == ENOENT) {
		queue_dir_path(ql, log, id, &dir);
		if (file_mkdirs(str_cstr(&dir), 0700) < 0) {
			str_setf(err, "create %s: %s", str_cstr(&dir),
			    strerror(errno));
			goto out;
		}
		fd = open(str_cstr(&path), O_RDWR | O_APPEND | O_CREAT |
		    O_CLOEXEC | O_NOFOLLOW, 0600);
		created = fd >= 0;
	}
	if (fd < 0) {
		str_setf(err, "open %s: %s", str_cstr(&path), strerror(errno));
		goto out;
	}
	/* The lock keeps the repair below and the append of one writer
	 * together (qmgr is normally the only writer). */
	if (flock(fd, LOCK_EX) < 0) {
		str_setf(err, "lock %s: %s", str_cstr(&path), strerror(errno));
		goto out;
	}
	if (!created && repair_tail(fd, str_cstr(&path), err) < 0)
		goto out;
	/* One write: with O_APPEND the records land whole and together. */
	if (file_write_all(fd, buf.buf, buf.len) < 0) {
		str_setf(err, "write %s: %s", str_cstr(&path), strerror(errno));
		goto out;
	}
	if (flags & SL_SYNC) {
		if (file_fsync(fd) < 0) {
			str_setf(err, "fsync %s: %s", str_cstr(&path),
			    strerror(errno));
			goto out;
		}
		if (created && file_fsync_parent(str_cstr(&path)) < 0) {
			str_setf(err, "fsync the directory of %s: %s",
			    str_cstr(&path), strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	if (fd >= 0 && close(fd) < 0 && rc == 0) {
		str_setf(err, "close %s: %s", str_cstr(&path), strerror(errno));
		rc = -1;
	}
	str_release(&path);
	str_release(&dir);
	str_release(&buf);
	str_release(&what);
	return rc;
}

int statuslog_append1(const queue_layout_t *ql, const char *log,
    const char *id, const dlv_rcpt_t *r, const dlv_status_t *st,
    time_t when, int flags, str_t *err)
{
	sl_rec_t rec;

	rec.rcpt = *r;
	rec.st = *st;
	rec.time = when ? when : time(NULL);
	return statuslog_append(ql, log, id, &rec, 1, flags, err);
}

/* ---- Reading ---------------------------------------------------------- */

struct sl_reader {
	int fd;
	attr_reader_t *ar;
	char buf[8192];
	size_t len, pos;
	bool eof, truncated, failed;
	uint64_t offset;	/* of the next unread byte in the file */
	size_t pending;		/* bytes of a record not yet complete */
	uint64_t rec_start;	/* file offset where that record begins */
	sl_rec_t cur;		/* owned strings of the last record */
	char *path;
};

sl_reader_t *statuslog_open_path(const char *path, str_t *err)
{
	sl_reader_t *r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0) {
		int e = errno;
		str_setf(err, "open %s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	r = xcalloc(1, sizeof(*r));
	r->fd = fd;
	r->ar = attr_reader_new(statuslog_rec_schema, ATTR_READ_STRICT, &rec_limits);
	r->path = xstrdup(path);
	return r;
}

sl_reader_t *statuslog_open(const queue_layout_t *ql, const char *log,
    const char *id, str_t *err)
{
	str_t path = STR_INIT;
	sl_reader_t *r;
	int e;

	if (!log_name_ok(log, err)) {
		errno = EINVAL;
		return NULL;
	}
	if (!id || !queue_id_valid(id)) {
		str_setf(err, "invalid queue ID");
		errno = EINVAL;
		return NULL;
	}
	if (queue_find(ql, log, id, &path) < 0) {
		e = errno;
		str_setf(err, "no %s log for %s", log, id);
		str_release(&path);
		errno = e;
		return NULL;
	}
	r = statuslog_open_path(str_cstr(&path), err);
	e = errno;
	str_release(&path);
	errno = e;
	return r;
}

/* True when the file from the current record's start to its end is a
 * (possibly empty) prefix of a record followed by at least one NUL and
 * nothing but NULs. */
static bool zero_tail(sl_reader_t *r)
{
	struct stat st;
	attr_reader_t *ar;
	size_t len, nz, used = 0;
	char *buf;
	bool ok = false;

	if (fstat(r->fd, &st) < 0 || (uint64_t)st.st_size <= r->rec_start ||
	    (uint64_t)st.st_size - r->rec_start > 1024 * 1024)
		return false;
	len = (size_t)((uint64_t)st.st_size - r->rec_start);
	buf = xmalloc(len);
	if (pread(r->fd, buf, len, (off_t)r->rec_start) != (ssize_t)len)
		goto out;
	for (nz = len; nz > 0 && buf[nz - 1] == 0; nz--)
		;
	if (nz == len)
		goto out;		/* no NUL tail */
	ar = attr_reader_new(statuslog_rec_schema, ATTR_READ_STRICT,
	    &rec_limits);
	ok = nz == 0 || attr_reader_feed(ar, buf, nz, &used) == ATTR_NEED_MORE;
	attr_reader_free(ar);
out:
	free(buf);
	return ok;
}

static void cur_free(sl_reader_t *r)
{
	dlv_rcpt_free(&r->cur.rcpt);
	dlv_status_free(&r->cur.st);
}

int statuslog_next(sl_reader_t *r, sl_rec_t *rec, str_t *err)
{
	if (r->failed) {
		str_setf(err, "%s: earlier error", r->path);
		return -1;
	}
	cur_free(r);
	for (;;) {
		size_t used = 0;
		enum attr_result res;

		if (r->pos == r->len) {
			ssize_t n;
			if (r->eof)
				break;
			n = read(r->fd, r->buf, sizeof(r->buf));
			if (n < 0) {
				if (errno == EINTR)
					continue;
				str_setf(err, "read %s: %s", r->path,
				    strerror(errno));
				r->failed = true;
				return -1;
			}
			if (n == 0) {
				r->eof = true;
				break;
			}
			r->len = (size_t)n;
			r->pos = 0;
		}
		res = attr_reader_feed(r->ar, r->buf + r->pos, r->len - r->pos,
		    &used);
		r->pos += used;
		r->offset += used;
		r->pending += used;
		if (res == ATTR_NEED_MORE)
			continue;
		if (res == ATTR_DONE) {
			r->pending = 0;
			r->rec_start = r->offset;
			attr_msg_t *m = attr_reader_take(r->ar);
			str_t what = STR_INIT;
			bool ok;
			dlv_rcpt_decode(m, &r->cur.rcpt);
			dlv_status_decode(m, &r->cur.st);
			r->cur.time = dlv_get_long(m, "time");
			attr_msg_free(m);
			str_setf(&what, "%s: record ending at byte %llu",
			    r->path, (unsigned long long)r->offset);
			ok = statuslog_rec_ok(&r->cur, str_cstr(&what), err);
			str_release(&what);
			if (!ok) {
				r->failed = true;
				return -1;
			}
			*rec = r->cur;
			return 1;
		}
		/* Malformed.  A crash during an append cuts the last record
		 * (input that runs out, handled below) or, on file systems
		 * that extend the size before the data lands, leaves it
		 * followed by NUL bytes up to the end: also a cut append. */
		if (zero_tail(r)) {
			r->truncated = true;
			r->eof = true;
			return 0;
		}
		str_setf(err, "%s: damaged record near byte %llu: %s", r->path,
		    (unsigned long long)r->offset, attr_reader_error(r->ar));
		r->failed = true;
		return -1;
	}
	/* End of file: a partial record left over is a cut append. */
	if (r->pending > 0)
		r->truncated = true;
	return 0;
}

bool statuslog_truncated(const sl_reader_t *r)
{
	return r->truncated;
}

void statuslog_close(sl_reader_t *r)
{
	if (!r)
		return;
	cur_free(r);
	close(r->fd);
	attr_reader_free(r->ar);
	free(r->path);
	free(r);
}

void sl_rec_free(sl_rec_t *rec)
{
	dlv_rcpt_free(&rec->rcpt);
	dlv_status_free(&rec->st);
}

static void rec_copy(sl_rec_t *dst, const sl_rec_t *src)
{
	*dst = *src;
	dst->rcpt.address = dlv_strdup(src->rcpt.address);
	dst->rcpt.orig = dlv_strdup(src->rcpt.orig);
	dst->rcpt.orcpt = dlv_strdup(src->rcpt.orcpt);
	dst->st.reason = dlv_strdup(src->st.reason);
	dst->st.diag_type = dlv_strdup(src->st.diag_type);
	dst->st.diag_text = dlv_strdup(src->st.diag_text);
	dst->st.relay = dlv_strdup(src->st.relay);
	dst->st.remote_mta = dlv_strdup(src->st.remote_mta);
}

void sl_list_add(sl_list_t *list, const sl_rec_t *rec)
{
	if (list->n == list->cap) {
		list->cap = list->cap ? list->cap * 2 : 16;
		list->v = xreallocarray(list->v, list->cap, sizeof(*list->v));
	}
	rec_copy(&list->v[list->n++], rec);
}

int statuslog_read(const queue_layout_t *ql, const char *log, const char *id,
    sl_list_t *list, size_t max, str_t *err)
{
	sl_reader_t *r = statuslog_open(ql, log, id, err);
	sl_rec_t rec;
	size_t got = 0;
	int res;

	if (!r)
		return -1;
	while ((res = statuslog_next(r, &rec, err)) == 1) {
		sl_list_add(list, &rec);
		if (max && ++got >= max) {
			statuslog_close(r);
			return 1;
		}
	}
	if (res == 0 && statuslog_truncated(r))
		list->truncated = true;
	statuslog_close(r);
	return res < 0 ? -1 : 0;
}

struct dedup_key {
	int64_t offset;
	size_t pos;
};

static int dedup_cmp(const void *a, const void *b)
{
	const struct dedup_key *x = a, *y = b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

void sl_list_dedup(sl_list_t *list)
{
	struct dedup_key *k;
	bool *drop;
	size_t out = 0;

	if (list->n < 2)
		return;
	/* Sort (offset, position) pairs; every pair followed by one with
	 * the same offset is an older record of that recipient. */
	k = xreallocarray(NULL, list->n, sizeof(*k));
	drop = xcalloc(list->n, sizeof(*drop));
	for (size_t i = 0; i < list->n; i++) {
		k[i].offset = list->v[i].rcpt.offset;
		k[i].pos = i;
	}
	qsort(k, list->n, sizeof(*k), dedup_cmp);
	for (size_t i = 0; i + 1 < list->n; i++)
		if (k[i].offset == k[i + 1].offset)
			drop[k[i].pos] = true;
	for (size_t i = 0; i < list->n; i++) {
		if (drop[i]) {
			sl_rec_free(&list->v[i]);
			continue;
		}
		list->v[out++] = list->v[i];
	}
	list->n = out;
	free(k);
	free(drop);
}

void sl_list_free(sl_list_t *list)
{
	for (size_t i = 0; i < list->n; i++)
		sl_rec_free(&list->v[i]);
	free(list->v);
	memset(list, 0, sizeof(*list));
}

static int remove_log(const queue_layout_t *ql, const char *log,
    const char *id, bool anywhere, str_t *err)
{
	str_t path = STR_INIT;
	int rc = 0;

	if (!log_name_ok(log, err))
		return -1;
	if (!id || !queue_id_valid(id)) {
		str_setf(err, "invalid queue ID");
		return -1;
	}
	/* Where it normally is: one system call, hit or miss. */
	queue_path(ql, log, id, &path);
	if (unlink(str_cstr(&path)) == 0) {
		str_release(&path);
		return 0;
	}
	if (errno != ENOENT && errno != ENOTDIR) {
		str_setf(err, "remove %s: %s", str_cstr(&path), strerror(errno));
		str_release(&path);
		return -1;
	}
	if (!anywhere) {
		str_release(&path);
		return 0;
	}
	if (queue_find(ql, log, id, &path) < 0) {
		if (errno != ENOENT) {
			str_setf(err, "find %s/%s: %s", log, id, strerror(errno));
			rc = -1;
		}
	} else if (unlink(str_cstr(&path)) < 0 && errno != ENOENT) {
		str_setf(err, "remove %s: %s", str_cstr(&path), strerror(errno));
		rc = -1;
	}
	str_release(&path);
	return rc;
}

int statuslog_remove(const queue_layout_t *ql, const char *log,
    const char *id, str_t *err)
{
	return remove_log(ql, log, id, true, err);
}

int statuslog_discard(const queue_layout_t *ql, const char *log,
    const char *id, str_t *err)
{
	return remove_log(ql, log, id, false, err);
}

int statuslog_exists(const queue_layout_t *ql, const char *log,
    const char *id)
{
	str_t path = STR_INIT;
	int rc;

	if (!log || !queue_name_valid(log) || !id || !queue_id_valid(id)) {
		errno = EINVAL;
		return -1;
	}
	if (queue_find(ql, log, id, &path) == 0)
		rc = 1;
	else
		rc = errno == ENOENT ? 0 : -1;
	str_release(&path);
	return rc;
}
