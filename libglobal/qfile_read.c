/* The queue-file reader: validation at open, recipients in batches,
 * content as lines, in-place updates, the move to corrupt/.
 * doc/queue-file.md §5 and §6. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crc32c.h"
#include "file.h"
#include "log.h"
#include "mem.h"
#include "qfile_int.h"

enum sc_user { SC_NONE, SC_RCPT, SC_CONTENT };

struct qfile {
	int fd;
	bool rdwr;
	str_t path;
	char id[QUEUE_ID_SIZE];
	qf_scan_t *sc;
	enum sc_user sc_user;
	qf_err_t err;

	/* Envelope values. */
	str_t sender;
	str_t envid;
	bool have_envid;
	int ret;
	struct timeval arrival;
	char **attr_name;
	char **attr_value;
	bool *attr_late;	/* from the extracted section */
	size_t nattrs;
	uint64_t sizes[4];
	uint64_t attempts, warn;
	int torn;
	uint64_t half_marked;
	off_t env_end;		/* offset of M */
	off_t end_off;		/* offset of E */

	/* Recipient cursor. */
	off_t rcpt_pos;
	enum qf_state rcpt_state;
	bool rcpt_eof;

	/* Content cursor. */
	off_t line_pos;
	bool content_eof;
	str_t pend;		/* bytes of the current line not yet returned */
	bool pend_final;	/* pend holds the end of the line */
};

static void free_attrs(qfile_t *qf)
{
	for (size_t i = 0; i < qf->nattrs; i++) {
		free(qf->attr_name[i]);
		free(qf->attr_value[i]);
	}
	free(qf->attr_name);
	free(qf->attr_value);
	free(qf->attr_late);
	qf->attr_name = qf->attr_value = NULL;
	qf->attr_late = NULL;
	qf->nattrs = 0;
}

void qfile_close(qfile_t *qf)
{
	if (qf == NULL)
		return;
	if (qf->fd >= 0)
		close(qf->fd);
	qf_scan_free(qf->sc);
	free_attrs(qf);
	str_release(&qf->path);
	str_release(&qf->sender);
	str_release(&qf->envid);
	str_release(&qf->pend);
	free(qf);
}

/* Opens without following symlinks, regular files only. */
static int open_file(const char *path, bool rdwr)
{
	struct stat st;
	int fd;

	if (!rdwr)
		return file_open_read(path, FILE_ANY_OWNER);
	fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = S_ISREG(st.st_mode) ? errno : EINVAL;
		close(fd);
		errno = e;
		return -1;
	}
	/* O_NONBLOCK (against a fifo planted here) stays: it means nothing
	 * for a regular file. */
	return fd;
}

/* The validation pass: every record, keeping the envelope values. */
static int validate(qfile_t *qf, qf_err_t *err)
{
	qf_rec_t rec;
	int r;

	while ((r = qf_scan_next(qf->sc, &rec, err)) > 0) {
		switch (rec.type) {
		case QF_REC_TIME:
			qf_parse_time(rec.data, rec.len, &qf->arrival);
			break;
		case QF_REC_SENDER:
			str_reset(&qf->sender);
			str_append(&qf->sender, rec.data, rec.len);
			break;
		case QF_REC_ENVID:
			str_reset(&qf->envid);
			str_append(&qf->envid, rec.data, rec.len);
			qf->have_envid = true;
			break;
		case QF_REC_RET:
			qf->ret = rec.data[0] == 'F' ? QF_RET_FULL : QF_RET_HDRS;
			break;
		case QF_REC_ATTR: {
			const char *eq = memchr(rec.data, '=', rec.len);
			size_t nl = (size_t)(eq - rec.data);
			/* One of the extracted section replaces the
			 * envelope's of its name; a name twice in one
			 * section is damage. */
			bool late = qf->sc->state == QF_ST_EXTRACTED;
			size_t i;
			for (i = 0; i < qf->nattrs; i++)
				if (strlen(qf->attr_name[i]) == nl
				    && memcmp(qf->attr_name[i], rec.data, nl) == 0)
					break;
			if (i < qf->nattrs && (!late || qf->attr_late[i])) {
				qf_err_damage(err, rec.offset,
				    "second attribute '%s'", qf->attr_name[i]);
				return -1;
			}
			if (i == qf->nattrs) {
				qf->attr_name = xreallocarray(qf->attr_name,
				    qf->nattrs + 1, sizeof(char *));
				qf->attr_value = xreallocarray(qf->attr_value,
				    qf->nattrs + 1, sizeof(char *));
				qf->attr_late = xreallocarray(qf->attr_late,
				    qf->nattrs + 1, sizeof(bool));
				qf->attr_name[i] = xstrndup(rec.data, nl);
				qf->nattrs++;
			} else {
				free(qf->attr_value[i]);
			}
			qf->attr_value[i] = xstrndup(eq + 1, rec.len - nl - 1);
			qf->attr_late[i] = late;
			break;
		}
		case QF_REC_MESSAGE:
			qf->env_end = rec.offset;
			break;
		case QF_REC_END:
			qf->end_off = rec.offset;
			break;
		default:
			break;
		}
	}
	if (r < 0)
		return -1;
	qf_scan_sizes(qf->sc, qf->sizes);
	qf->attempts = qf->sc->attempts;
	qf->warn = qf->sc->warn;
	qf->torn = qf->sc->torn;
	qf->half_marked = qf->sc->half_marked;
	return 0;
}

qfile_t *qfile_open_path(const char *path, int flags, qf_err_t *err)
{
	qfile_t *qf;
	const char *base = strrchr(path, '/');

	memset(err, 0, sizeof(*err));
	err->offset = -1;
	qf = xcalloc(1, sizeof(*qf));
	qf->rdwr = (flags & QF_OPEN_RDWR) != 0;
	str_set(&qf->path, path);
	base = base ? base + 1 : path;
	if (queue_id_valid(base))
		bcopy_str(qf->id, sizeof(qf->id), base);
	if ((qf->fd = open_file(path, qf->rdwr)) < 0) {
		qf_err_sys(err, errno, "open %s", path);
		qf->fd = -1;
		qfile_close(qf);
		return NULL;
	}
	qf->sc = qf_scan_new(qf->fd);
	if (validate(qf, err) < 0) {
		qfile_close(qf);
		return NULL;
	}
	if (qf->torn)
		log_warning("%s: torn %s slot in queue file %s (a crash during "
		    "an update); using 0", qf->id[0] ? qf->id : path,
		    (qf->torn & QF_TORN_ATTEMPTS) ? "attempts" : "warning time",
		    path);
	if (qf->half_marked)
		log_warning("%s: %llu recipient%s half marked done in queue file "
		    "%s (a crash during an update, or a damaged byte): read as "
		    "not done", qf->id[0] ? qf->id : path,
		    (unsigned long long)qf->half_marked,
		    qf->half_marked == 1 ? "" : "s", path);
	/* Memory: keep only the envelope while the file is open. */
	qf_scan_drop_buffer(qf->sc);
	qf->rcpt_pos = QF_HEAD_SIZE;
	qf->rcpt_state = QF_ST_ENVELOPE;
	qf->line_pos = (off_t)qf->sizes[0];
	return qf;
}

qfile_t *qfile_open(const queue_layout_t *ql, const char *queue,
    const char *id, int flags, qf_err_t *err)
{
	str_t path = STR_INIT, found = STR_INIT;
	qfile_t *qf;

	if (!queue_name_valid(queue) || !queue_id_valid(id)) {
		memset(err, 0, sizeof(*err));
		qf_err_sys(err, EINVAL, "%s/%s", queue, id);
		return NULL;
	}
	/* Where the layout puts it; elsewhere only if it is not there (a
	 * file from before a change of hash_queue_depth). */
	queue_path(ql, queue, id, &path);
	qf = qfile_open_path(str_cstr(&path), flags, err);
	if (qf == NULL && !err->damaged && (err->errnum == ENOENT ||
	    err->errnum == ENOTDIR)) {
		if (queue_find(ql, queue, id, &found) == 0 &&
		    strcmp(str_cstr(&found), str_cstr(&path)) != 0)
			qf = qfile_open_path(str_cstr(&found), flags, err);
	}
	str_release(&path);
	str_release(&found);
	return qf;
}

int qfile_fd(const qfile_t *qf) { return qf->fd; }
const char *qfile_id(const qfile_t *qf) { return qf->id; }
const char *qfile_path(const qfile_t *qf) { return str_cstr(&qf->path); }
const char *qfile_sender(const qfile_t *qf) { return str_cstr(&qf->sender); }
const char *qfile_envid(const qfile_t *qf)
{
	return qf->have_envid ? str_cstr(&qf->envid) : NULL;
}
int qfile_ret(const qfile_t *qf) { return qf->ret; }
unsigned long qfile_attempts(const qfile_t *qf) { return (unsigned long)qf->attempts; }
time_t qfile_warn_time(const qfile_t *qf) { return (time_t)qf->warn; }
int qfile_torn_slots(const qfile_t *qf) { return qf->torn; }
uint64_t qfile_half_marked(const qfile_t *qf) { return qf->half_marked; }
uint64_t qfile_content_size(const qfile_t *qf) { return qf->sizes[1]; }
off_t qfile_content_offset(const qfile_t *qf) { return (off_t)qf->sizes[0]; }
uint64_t qfile_rcpt_count(const qfile_t *qf) { return qf->sizes[3]; }
const qf_err_t *qfile_error(const qfile_t *qf) { return &qf->err; }

void qfile_arrival(const qfile_t *qf, struct timeval *tv)
{
	*tv = qf->arrival;
}

const char *qfile_attr(const qfile_t *qf, const char *name)
{
	for (size_t i = 0; i < qf->nattrs; i++)
		if (strcmp(qf->attr_name[i], name) == 0)
			return qf->attr_value[i];
	return NULL;
}

bool qfile_attr_at(const qfile_t *qf, size_t i, const char **name,
    const char **value)
{
	if (i >= qf->nattrs)
		return false;
	*name = qf->attr_name[i];
	*value = qf->attr_value[i];
	return true;
}

/* ------------------------------------------------------------------ */
/* Recipients. */

void qfile_rcpt_rewind(qfile_t *qf)
{
	qf->rcpt_pos = QF_HEAD_SIZE;
	qf->rcpt_state = QF_ST_ENVELOPE;
	qf->rcpt_eof = false;
}

void qf_rcpt_batch_free(qf_rcpt_batch_t *b)
{
	for (size_t i = 0; i < b->cap; i++) {
		str_release(&b->rcpt[i].address);
		str_release(&b->rcpt[i].orig);
		str_release(&b->rcpt[i].orcpt);
	}
	free(b->rcpt);
	b->rcpt = NULL;
	b->cap = b->count = 0;
}

/* Entry n of the batch, growing the array (never beyond max). */
static qf_rcpt_t *batch_entry(qf_rcpt_batch_t *b, size_t n, size_t max)
{
	if (n >= b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		if (cap > max)
			cap = max;
		b->rcpt = xreallocarray(b->rcpt, cap, sizeof(*b->rcpt));
		memset(b->rcpt + b->cap, 0, (cap - b->cap) * sizeof(*b->rcpt));
		b->cap = cap;
	}
	return &b->rcpt[n];
}

static void clear_entry(qf_rcpt_t *r)
{
	str_reset(&r->address);
	str_reset(&r->orig);
	str_reset(&r->orcpt);
	r->notify = 0;
	r->done = r->extracted = false;
	r->offset = 0;
}

long qfile_rcpt_read(qfile_t *qf, qf_rcpt_batch_t *b, size_t max,
    int flags)
{
	qf_rec_t rec;
	qf_rcpt_t *r = NULL;
	size_t n = 0;
	int st;

	b->count = 0;
	if (max == 0) {
		qf_err_sys(&qf->err, EINVAL, "recipient batch of 0");
		return -1;
	}
	if (qf->rcpt_eof)
		return 0;
	/* Always from the file: done markers written since are seen. */
	qf_scan_seek(qf->sc, qf->rcpt_pos, qf->rcpt_state);
	qf->sc_user = SC_RCPT;
	while (n < max) {
		if ((st = qf_scan_next(qf->sc, &rec, &qf->err)) < 0) {
			qf_scan_drop_buffer(qf->sc);
			qf->sc_user = SC_NONE;
			return -1;
		}
		if (st == 0) {
			qf->rcpt_eof = true;
			break;
		}
		switch (rec.type) {
		case QF_REC_ORIG:
		case QF_REC_ORCPT:
		case QF_REC_NOTIFY:
			if (r == NULL) {
				r = batch_entry(b, n, max);
				clear_entry(r);
			}
			if (rec.type == QF_REC_ORIG)
				str_append(&r->orig, rec.data, rec.len);
			else if (rec.type == QF_REC_ORCPT)
				str_append(&r->orcpt, rec.data, rec.len);
			else
				r->notify = atoi(rec.data);
			break;
		case QF_REC_RCPT:
		case QF_REC_DONE:
			if (r == NULL) {
				r = batch_entry(b, n, max);
				clear_entry(r);
			}
			str_append(&r->address, rec.data, rec.len);
			r->offset = rec.offset;
			r->done = rec.type == QF_REC_DONE;
			r->extracted = qf->sc->state == QF_ST_EXTRACTED;
			if (!r->done || (flags & QF_RCPT_ALL))
				n++;
			r = NULL;
			qf->rcpt_pos = qf->sc->base;
			qf->rcpt_state = qf->sc->state;
			break;
		case QF_REC_MESSAGE:
			/* Skip the content: on to the extracted section. */
			if (qf->sizes[2] == 0) {
				qf->rcpt_eof = true;
				goto out;
			}
			qf_scan_seek(qf->sc, (off_t)qf->sizes[2], QF_ST_CONTENT);
			break;
		case QF_REC_END:
			qf->rcpt_eof = true;
			goto out;
		default:
			break;
		}
	}
out:
	qf_scan_drop_buffer(qf->sc);
	qf->sc_user = SC_NONE;
	b->count = n;
	return (long)n;
}

/* ------------------------------------------------------------------ */
/* Content. */

void qfile_content_rewind(qfile_t *qf)
{
	qf->line_pos = (off_t)qf->sizes[0];
	qf->content_eof = false;
	str_reset(&qf->pend);
	qf->pend_final = false;
	if (qf->sc_user == SC_CONTENT)
		qf->sc_user = SC_NONE;
}

/* Moves the first n bytes of pend into line. */
static void take(qfile_t *qf, str_t *line, size_t n)
{
	str_append(line, qf->pend.buf, n);
	memmove(qf->pend.buf, qf->pend.buf + n, qf->pend.len - n);
	str_truncate(&qf->pend, qf->pend.len - n);
}

int qfile_read_line(qfile_t *qf, str_t *line, size_t max)
{
	qf_rec_t rec;
	int st;

	str_reset(line);
	if (max == 0) {
		qf_err_sys(&qf->err, EINVAL, "line length limit of 0");
		return -1;
	}
	if (qf->sc_user != SC_CONTENT) {
		qf_scan_seek(qf->sc, qf->line_pos, QF_ST_CONTENT);
		qf->sc_user = SC_CONTENT;
	}
	for (;;) {
		if (qf->pend_final) {
			size_t len = qf->pend.len, eol = 0;
			int kind = QF_LINE_NONE;
			if (len >= 1 && qf->pend.buf[len - 1] == '\n') {
				eol = 1;
				kind = QF_LINE_LF;
				if (len >= 2 && qf->pend.buf[len - 2] == '\r') {
					eol = 2;
					kind = QF_LINE_CRLF;
				}
			}
			if (len - eol <= max) {
				take(qf, line, len - eol);
				str_reset(&qf->pend);
				qf->pend_final = false;
				return kind;
			}
			/* Never cuts between CR and LF: those are in eol. */
			take(qf, line, max);
			return QF_LINE_MORE;
		}
		/* Without the line's end, keep one byte beyond max so that a
		 * piece never ends where the line does. */
		if (qf->pend.len > max) {
			take(qf, line, max);
			return QF_LINE_MORE;
		}
		if (qf->content_eof) {
			if (qf->pend.len > 0) {
				/* Cannot happen in a validated file. */
				take(qf, line, qf->pend.len);
				return QF_LINE_NONE;
			}
			return QF_LINE_END;
		}
		if ((st = qf_scan_next(qf->sc, &rec, &qf->err)) < 0)
			return -1;
		if (st == 0) {
			qf->content_eof = true;
			continue;
		}
		switch (rec.type) {
		case QF_REC_LINE:
			qf->pend_final = true;
			/* FALLTHROUGH */
		case QF_REC_PART:
			str_append(&qf->pend, rec.data, rec.len);
			break;
		default:
			/* X or E: the content is over. */
			qf->content_eof = true;
			break;
		}
		qf->line_pos = qf->sc->base;
	}
}

/* ------------------------------------------------------------------ */
/* In-place updates. */

static int need_rdwr(qfile_t *qf, const char *what)
{
	if (!qf->rdwr) {
		qf_err_sys(&qf->err, EBADF, "%s: %s opened read-only", what,
		    str_cstr(&qf->path));
		errno = EBADF;
		return -1;
	}
	return 0;
}

static int maybe_sync(qfile_t *qf, int flags)
{
	if ((flags & QF_SYNC) && file_fsync(qf->fd) < 0) {
		qf_err_sys(&qf->err, errno, "fsync %s", str_cstr(&qf->path));
		return -1;
	}
	return 0;
}

/* Version 2: the record at offset, checked, marked done in its type
 * byte and its mark with one pwrite (doc/queue-file.md §6). */
static int rcpt_done_v2(qfile_t *qf, off_t offset)
{
	/* type, length (2 bytes for 4096), data, mark, check */
	unsigned char buf[1 + 4 + 4096 + 1 + QF_CHECK_LEN];
	size_t len = 0, hdr;
	ssize_t r;

	if ((r = pread(qf->fd, buf, sizeof(buf), offset)) < 0) {
		qf_err_sys(&qf->err, errno, "read %s", str_cstr(&qf->path));
		return -1;
	}
	if (r < 1 || (buf[0] != QF_REC_RCPT && buf[0] != QF_REC_DONE)) {
		qf_err_sys(&qf->err, EINVAL, "no recipient record at offset %lld "
		    "of %s", (long long)offset, str_cstr(&qf->path));
		errno = EINVAL;
		return -1;
	}
	for (hdr = 1; hdr < 4 && hdr < (size_t)r; hdr++) {
		len |= (size_t)(buf[hdr] & 0x7f) << (7 * (hdr - 1));
		if ((buf[hdr] & 0x80) == 0)
			break;
	}
	hdr++;
	if (len < 1 || len > 4096 || hdr + len + 1 + QF_CHECK_LEN > (size_t)r) {
		qf_err_damage(&qf->err, offset, "recipient record cut short or "
		    "too long (marking it done)");
		errno = EINVAL;
		return -1;
	}
	unsigned char *mark = buf + hdr + len;
	uint32_t want = crc32c(qf_crc_rcpt_type(), buf + 1, hdr - 1 + len);
	uint32_t have = (uint32_t)mark[1] | (uint32_t)mark[2] << 8
	    | (uint32_t)mark[3] << 16 | (uint32_t)mark[4] << 24;
	if (have != want || (*mark != QF_REC_RCPT && *mark != QF_REC_DONE)) {
		qf_err_damage(&qf->err, offset, "recipient record fails its check "
		    "(stored 0x%08x, computed 0x%08x; marking it done)", have,
		    want);
		errno = EINVAL;
		return -1;
	}
	if (buf[0] == QF_REC_DONE && *mark == QF_REC_DONE)
		return 0;
	/* Both copies of the flag at once; the bytes between as read. */
	buf[0] = QF_REC_DONE;
	*mark = QF_REC_DONE;
	r = pwrite(qf->fd, buf, hdr + len + 1, offset);
	if (r != (ssize_t)(hdr + len + 1)) {
		qf_err_sys(&qf->err, r < 0 ? errno : EIO, "write %s",
		    str_cstr(&qf->path));
		return -1;
	}
	return 0;
}

int qfile_rcpt_done(qfile_t *qf, off_t offset, int flags)
{
	char c;
	ssize_t r;

	if (need_rdwr(qf, "mark recipient done") < 0)
		return -1;
	/* Only the recipient regions: the envelope after the head and the
	 * extracted section. */
	if (!((offset >= QF_HEAD_SIZE && offset < qf->env_end)
	    || (qf->sizes[2] != 0 && offset > (off_t)qf->sizes[2]
		&& offset < qf->end_off))) {
		qf_err_sys(&qf->err, EINVAL, "offset %lld is not in a recipient "
		    "section of %s", (long long)offset, str_cstr(&qf->path));
		errno = EINVAL;
		return -1;
	}
	if (qf_scan_version(qf->sc) >= 2)
		return rcpt_done_v2(qf, offset) < 0 ? -1 : maybe_sync(qf, flags);
	if ((r = pread(qf->fd, &c, 1, offset)) != 1) {
		qf_err_sys(&qf->err, r < 0 ? errno : EIO, "read %s",
		    str_cstr(&qf->path));
		return -1;
	}
	if (c == QF_REC_DONE)
		return 0;
	if (c != QF_REC_RCPT) {
		qf_err_sys(&qf->err, EINVAL, "no recipient record at offset %lld "
		    "of %s", (long long)offset, str_cstr(&qf->path));
		errno = EINVAL;
		return -1;
	}
	c = QF_REC_DONE;
	if ((r = pwrite(qf->fd, &c, 1, offset)) != 1) {
		qf_err_sys(&qf->err, r < 0 ? errno : EIO, "write %s",
		    str_cstr(&qf->path));
		return -1;
	}
	return maybe_sync(qf, flags);
}

static int set_slot(qfile_t *qf, off_t rec_off, uint64_t v, int flags,
    const char *what)
{
	char slot[QF_SLOT1_LEN];
	ssize_t r;

	if (need_rdwr(qf, what) < 0)
		return -1;
	qf_slot_encode(slot, &v, 1);
	/* One write of the whole slot (after type and length bytes). */
	if ((r = pwrite(qf->fd, slot, sizeof(slot), rec_off + 2))
	    != (ssize_t)sizeof(slot)) {
		qf_err_sys(&qf->err, r < 0 ? errno : EIO, "write %s",
		    str_cstr(&qf->path));
		return -1;
	}
	return maybe_sync(qf, flags);
}

int qfile_set_attempts(qfile_t *qf, unsigned long n, int flags)
{
	if (set_slot(qf, QF_OFF_ATTEMPTS, n, flags, "update attempts") < 0)
		return -1;
	qf->attempts = n;
	qf->torn &= ~QF_TORN_ATTEMPTS;
	return 0;
}

int qfile_set_warn_time(qfile_t *qf, time_t when, int flags)
{
	uint64_t v = when < 0 ? 0 : (uint64_t)when;

	if (set_slot(qf, QF_OFF_WARN, v, flags, "update warning time") < 0)
		return -1;
	qf->warn = v;
	qf->torn &= ~QF_TORN_WARN;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Damaged files. */

int qfile_move_damaged(const queue_layout_t *ql, const char *queue,
    const char *id, const qf_err_t *err)
{
	char reason[sizeof(err->reason) + 40];

	snprintf(reason, sizeof(reason), "at offset %lld: %s",
	    (long long)err->offset, err->reason);
	return qfile_move_corrupt(ql, queue, id, reason);
}

static void parent_of(const char *path, str_t *out)
{
	const char *slash = strrchr(path, '/');

	str_reset(out);
	if (slash == NULL)
		str_set(out, ".");
	else if (slash == path)
		str_set(out, "/");
	else
		str_append(out, path, (size_t)(slash - path));
}

int qfile_move_corrupt(const queue_layout_t *ql, const char *queue,
    const char *id, const char *reason)
{
	str_t src = STR_INIT, dst = STR_INIT, dir = STR_INIT, sdir = STR_INIT;
	str_t base = STR_INIT;
	int ret = -1, saved = 0;

	if (queue_find(ql, queue, id, &src) < 0) {
		saved = errno;
		log_warning("%s: cannot move damaged queue file from %s to "
		    "corrupt/: %s", id, queue, strerror(errno));
		goto out;
	}
	if (strcmp(queue, QUEUE_CORRUPT) == 0) {
		log_warning("%s: damaged queue file in %s: %s", id, queue, reason);
		ret = 0;
		goto out;
	}
	queue_dir_path(ql, QUEUE_CORRUPT, id, &dir);
	if (file_mkdirs(str_cstr(&dir), 0700) < 0) {
		saved = errno;
		log_warning("%s: cannot create %s: %s", id, str_cstr(&dir),
		    strerror(errno));
		goto out;
	}
	str_setf(&base, "%s/%s", str_cstr(&dir), id);
	/* link() never replaces: a name already taken gets a suffix. */
	for (int i = 0;; i++) {
		if (i == 0)
			str_set(&dst, str_cstr(&base));
		else
			str_setf(&dst, "%s.%d", str_cstr(&base), i);
		if (link(str_cstr(&src), str_cstr(&dst)) == 0) {
			if (unlink(str_cstr(&src)) < 0) {
				saved = errno;
				log_warning("%s: linked into corrupt/ but cannot "
				    "unlink %s: %s", id, str_cstr(&src),
				    strerror(errno));
				goto out;
			}
			break;
		}
		if (errno == EEXIST && i < 1000)
			continue;
		if (errno == EPERM || errno == ENOTSUP || errno == EMLINK
		    || errno == ENOSYS) {
			/* No hard links here: rename, after checking the name
			 * is free (a race at worst replaces an older copy). */
			struct stat st;
			if (lstat(str_cstr(&dst), &st) == 0 && i < 1000)
				continue;
			if (rename(str_cstr(&src), str_cstr(&dst)) == 0)
				break;
		}
		saved = errno;
		log_warning("%s: cannot move %s to %s: %s", id, str_cstr(&src),
		    str_cstr(&dst), strerror(errno));
		goto out;
	}
	parent_of(str_cstr(&src), &sdir);
	if (file_fsync_dir(str_cstr(&dir)) < 0
	    || file_fsync_dir(str_cstr(&sdir)) < 0)
		log_warning("%s: fsync after moving to corrupt/: %s", id,
		    strerror(errno));
	log_warning("%s: damaged queue file in %s: %s; moved to %s", id, queue,
	    reason, str_cstr(&dst) + strlen(ql->dir) + 1);
	ret = 0;
out:
	str_release(&src);
	str_release(&dst);
	str_release(&dir);
	str_release(&sdir);
	str_release(&base);
	errno = saved;
	return ret;
}
