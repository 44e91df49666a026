/* The queue-file writer: temporary file, records through a buffer, one
 * file fsync, rename to the queue ID, the rename made durable by a
 * directory fsync that may be shared with other writers (dirsync).
 * doc/queue-file.md §4. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "crc32c.h"
#include "dirsync.h"
#include "file.h"
#include "log.h"
#include "mem.h"
#include "qfile_int.h"

#define WBUF_SIZE 65536

unsigned long qfw_fsync_count;
int qfw_version = 2;

enum wstate { W_ENVELOPE, W_CONTENT, W_EXTRACTED, W_DONE };

struct qfw {
	char queue[16];
	char id[QUEUE_ID_SIZE];
	str_t state_path;	/* the group commit's state file */
	str_t top_dir;		/* queue_directory/QUEUE */
	str_t tmp_path;
	str_t final_dir;
	str_t final_path;
	bool hashed;
	int fd;
	str_t buf;		/* not yet written */
	off_t off;		/* file offset of the next byte */
	struct timeval created, arrival;
	int seen;		/* QF_SEEN_* */
	enum wstate state;
	str_t pend;		/* start of a line without its LF yet */
	uint64_t sizes[4];
	uint64_t attempts, warn;
	bool failed;
	bool committed;
	int version;		/* qfw_version when created */
	str_t err;
	/* qfw_track_rcpts: where each recipient record's type byte and
	 * mark are, for qfw_rcpts_done */
	bool track;
	off_t *rcpt_off;
	size_t nrcpt_off, rcpt_cap;
};

static unsigned long tmp_counter;
unsigned long qfw_spares_taken, qfile_recycled;

/* ---- Recycling (qfile.h) ---- */

/* Spare names read from spare/ and not tried yet (one process writes
 * one queue tree). */
#define SPARE_BATCH 32
static struct {
	char names[SPARE_BATCH][QUEUE_ID_SIZE];
	int n, next;
	bool empty;		/* spare/ was empty ... */
	struct timespec mtime;	/* ... and has not changed since */
} spares;

static void spare_refill(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	spares.n = spares.next = 0;
	if (d == NULL)
		return;
	while (spares.n < SPARE_BATCH && (de = readdir(d)) != NULL)
		if (queue_id_valid(de->d_name))
			bcopy_str(spares.names[spares.n++], QUEUE_ID_SIZE, de->d_name);
	closedir(d);
}

/* A spare file as tmp_path, empty, with mode and our lock on it; or -1
 * (none left, or none to be had: the caller creates a file). */
static int take_spare(const char *dir, const char *tmp_path, mode_t mode)
{
	str_t path = STR_INIT;
	struct stat st;
	bool refilled = false;
	int fd = -1;

	while (fd < 0) {
		if (spares.next >= spares.n) {
			/* One look at the directory a message: the names it
			 * gave may all be taken, or busy, right now. */
			if (refilled)
				break;
			refilled = true;
			/* An empty spare/ is read again only once something
			 * was put into it (its time changed): a stat, not a
			 * read of the directory, for every message meanwhile. */
			if (stat(dir, &st) < 0)
				break;
			if (spares.empty && st.st_mtim.tv_sec == spares.mtime.tv_sec
			    && st.st_mtim.tv_nsec == spares.mtime.tv_nsec)
				break;
			spares.mtime = st.st_mtim;
			spare_refill(dir);
			spares.empty = spares.n == 0;
			if (spares.empty)
				break;
		}
		str_setf(&path, "%s/%s", dir, spares.names[spares.next++]);
		/* Taken by another writer meanwhile: the open, the lock or the
		 * rename fails, and the next name is tried. */
		fd = open(str_cstr(&path), O_WRONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1
		    || file_lock(fd, FILE_LOCK_EXCLUSIVE | FILE_LOCK_NOWAIT) < 0
		    || rename(str_cstr(&path), tmp_path) < 0) {
			close(fd);
			fd = -1;
			continue;
		}
		if (ftruncate(fd, 0) < 0 || fchmod(fd, mode) < 0) {
			(void)unlink(tmp_path);
			close(fd);
			fd = -1;
			continue;
		}
		qfw_spares_taken++;
	}
	str_release(&path);
	return fd;
}

static long count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	long n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (queue_id_valid(de->d_name))
			n++;
	closedir(d);
	return n;
}

int qfile_recycle(const queue_layout_t *ql, const char *path, const char *id)
{
	/* How full spare/ is: counted now and then (writers take files out
	 * of it behind our back), counted up in between. */
	static long estimate;
	static unsigned long since_count;
	str_t dir = STR_INIT, spare = STR_INIT;
	int rc;

	str_setf(&dir, "%s/%s", ql->dir, QUEUE_SPARE_DIR);
	if (since_count++ % 256 == 0) {
		estimate = count_entries(str_cstr(&dir));
		if (estimate < 0)
			estimate = QFILE_SPARE_MAX;	/* no spare/: no recycling */
	}
	if (queue_id_valid(id) && estimate < QFILE_SPARE_MAX) {
		str_setf(&spare, "%s/%s", str_cstr(&dir), id);
		/* Out of the queue at once (a crash now leaves a spare with
		 * old content, which the writer that takes it truncates);
		 * then emptied: a spare holds no blocks and no old mail. */
		if (rename(path, str_cstr(&spare)) == 0) {
			/* A second name for the file is a queue entry a power
			 * cut brought back (a rename out of a queue that never
			 * reached the disk, while the file went round again):
			 * emptying the file would empty that message too, so
			 * only this name goes (doc/queue-file.md, "Power
			 * loss, simulated"). */
			struct stat st;
			if (lstat(str_cstr(&spare), &st) == 0 && st.st_nlink > 1) {
				rc = unlink(str_cstr(&spare));
				str_release(&dir);
				str_release(&spare);
				return rc;
			}
			(void)truncate(str_cstr(&spare), 0);
			estimate++;
			qfile_recycled++;
			str_release(&dir);
			str_release(&spare);
			return 0;
		}
	}
	rc = unlink(path);
	str_release(&dir);
	str_release(&spare);
	return rc;
}

static int werr(qfw_t *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records the first error; every later call fails with it. */
static int werr(qfw_t *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->failed) {
		va_start(ap, fmt);
		str_reset(&w->err);
		str_vcatf(&w->err, fmt, ap);
		va_end(ap);
		w->failed = true;
	}
	return -1;
}

static int flush_buf(qfw_t *w)
{
	if (str_len(&w->buf) == 0)
		return 0;
	if (file_write_all(w->fd, w->buf.buf, w->buf.len) < 0)
		return werr(w, "write %s: %s", str_cstr(&w->tmp_path),
		    strerror(errno));
	str_reset(&w->buf);
	return 0;
}

/* A record after the head: type, length, data, and in version 2 the
 * done mark (recipients) and the check (doc/queue-file.md §3). */
static int put_rec(qfw_t *w, int type, const void *data, size_t len)
{
	unsigned char hdr[5], tail[1 + QF_CHECK_LEN];
	size_t n = 0, v = len, tn = 0;

	if (w->failed)
		return -1;
	hdr[n++] = (unsigned char)type;
	do {
		hdr[n] = v & 0x7f;
		v >>= 7;
		if (v)
			hdr[n] |= 0x80;
		n++;
	} while (v);
	if (w->version >= 2) {
		/* Writers write R only; r is the same record marked done. */
		uint32_t c = crc32c(crc32c(0, hdr, n), data, len);
		if (type == QF_REC_RCPT)
			tail[tn++] = QF_REC_RCPT;
		for (int i = 0; i < QF_CHECK_LEN; i++)
			tail[tn++] = (unsigned char)(c >> (8 * i));
	}
	/* Large records go straight out instead of through the buffer. */
	if (str_len(&w->buf) + n + len + tn > WBUF_SIZE && flush_buf(w) < 0)
		return -1;
	str_append(&w->buf, hdr, n);
	if (len > WBUF_SIZE / 2) {
		if (flush_buf(w) < 0)
			return -1;
		if (file_write_all(w->fd, data, len) < 0)
			return werr(w, "write %s: %s", str_cstr(&w->tmp_path),
			    strerror(errno));
	} else {
		str_append(&w->buf, data, len);
	}
	str_append(&w->buf, tail, tn);
	w->off += (off_t)(n + len + tn);
	return 0;
}

static int put_str(qfw_t *w, int type, const char *s)
{
	return put_rec(w, type, s, strlen(s));
}

/* The arrival time goes first in the envelope, so that dumps read in
 * order: written before the first other envelope record. */
static int put_time(qfw_t *w)
{
	char tbuf[40];

	if (w->seen & QF_SEEN_TIME)
		return 0;
	w->seen |= QF_SEEN_TIME;
	snprintf(tbuf, sizeof(tbuf), "%lld.%06ld", (long long)w->arrival.tv_sec,
	    (long)w->arrival.tv_usec);
	return put_str(w, QF_REC_TIME, tbuf);
}

/* An envelope record (after the arrival time). */
static int put_env(qfw_t *w, int type, const char *s)
{
	if (put_time(w) < 0)
		return -1;
	return put_str(w, type, s);
}

/* The head: V, Z, A, W with the current values (fixed size). */
static void make_head(qfw_t *w, char head[QF_HEAD_SIZE])
{
	char *p = head;

	*p++ = QF_REC_VERSION;
	*p++ = 1;
	*p++ = w->version == 1 ? QF_VERSION_1[0] : QF_VERSION[0];
	*p++ = QF_REC_SIZES;
	*p++ = QF_SIZES_LEN;
	qf_slot_encode(p, w->sizes, 4);
	p += QF_SIZES_LEN;
	*p++ = QF_REC_ATTEMPTS;
	*p++ = QF_SLOT1_LEN;
	qf_slot_encode(p, &w->attempts, 1);
	p += QF_SLOT1_LEN;
	*p++ = QF_REC_WARN;
	*p++ = QF_SLOT1_LEN;
	qf_slot_encode(p, &w->warn, 1);
}

qfw_t *qfw_create(const queue_layout_t *ql, const char *queue, mode_t mode,
    str_t *err)
{
	qfw_t *w;
	struct stat st;
	char head[QF_HEAD_SIZE];

	if (!queue_name_valid(queue)) {
		if (err)
			str_setf(err, "unknown queue '%s'", queue);
		return NULL;
	}
	w = xcalloc(1, sizeof(*w));
	w->fd = -1;
	w->version = qfw_version == 1 ? 1 : 2;
	bcopy_str(w->queue, sizeof(w->queue), queue);
	w->hashed = queue_is_hashed(ql, queue);
	str_setf(&w->state_path, "%s/%s", ql->dir, QUEUE_DIRSYNC_STATE);
	/* A name that can never be a queue ID (it has dots), unique by pid,
	 * counter and clock; O_EXCL catches the rest.  Into incoming/, a
	 * spare file gets it if there is one. */
	for (int tries = 0; w->fd < 0; tries++) {
		struct timeval tv;
		gettimeofday(&tv, NULL);
		str_setf(&w->top_dir, "%s/%s", ql->dir, queue);
		str_setf(&w->tmp_path, "%s/tmp.%ld.%lu.%lx", str_cstr(&w->top_dir),
		    (long)getpid(), ++tmp_counter,
		    (unsigned long)(tv.tv_usec ^ (tv.tv_sec << 20)));
		if (tries == 0 && strcmp(queue, QUEUE_INCOMING) == 0) {
			str_t sdir = STR_INIT;
			str_setf(&sdir, "%s/%s", ql->dir, QUEUE_SPARE_DIR);
			w->fd = take_spare(str_cstr(&sdir), str_cstr(&w->tmp_path),
			    mode);
			str_release(&sdir);
			if (w->fd >= 0)
				break;
		}
		w->fd = file_create_excl(str_cstr(&w->tmp_path), mode);
		if (w->fd < 0 && (errno != EEXIST || tries > 100)) {
			if (err)
				str_setf(err, "create %s: %s", str_cstr(&w->tmp_path),
				    strerror(errno));
			str_release(&w->tmp_path);
			str_release(&w->top_dir);
			str_release(&w->state_path);
			free(w);
			return NULL;
		}
	}
	/* The lock tells qfile_tmp_is_stale that we are alive.  Wait for it:
	 * a scanner holds its shared lock only for an instant. */
	if (file_lock(w->fd, FILE_LOCK_EXCLUSIVE) < 0
	    || fstat(w->fd, &st) < 0) {
		if (err)
			str_setf(err, "lock/stat %s: %s", str_cstr(&w->tmp_path),
			    strerror(errno));
		qfw_free(w);
		return NULL;
	}
	gettimeofday(&w->created, NULL);
	w->arrival = w->created;
	queue_id_make(w->id, &w->created, st.st_ino);
	queue_dir_path(ql, queue, w->id, &w->final_dir);
	str_setf(&w->final_path, "%s/%s", str_cstr(&w->final_dir), w->id);
	str_reserve(&w->buf, WBUF_SIZE);
	/* The head with zero sizes; filled in by the commit. */
	make_head(w, head);
	str_append(&w->buf, head, sizeof(head));
	w->off = QF_HEAD_SIZE;
	return w;
}

int qfw_set_queue(qfw_t *w, const queue_layout_t *ql, const char *queue)
{
	if (w->state == W_DONE || !queue_name_valid(queue))
		return -1;
	bcopy_str(w->queue, sizeof(w->queue), queue);
	w->hashed = queue_is_hashed(ql, queue);
	str_setf(&w->top_dir, "%s/%s", ql->dir, queue);
	queue_dir_path(ql, queue, w->id, &w->final_dir);
	str_setf(&w->final_path, "%s/%s", str_cstr(&w->final_dir), w->id);
	return 0;
}

const char *qfw_id(const qfw_t *w)
{
	return w->id;
}

const char *qfw_path(const qfw_t *w)
{
	return str_cstr(w->committed ? &w->final_path : &w->tmp_path);
}

const char *qfw_error(const qfw_t *w)
{
	return w->failed ? str_cstr(&w->err) : "";
}

static int begin_extracted(qfw_t *w);

static int envelope_only(qfw_t *w, const char *what)
{
	if (w->failed)
		return -1;
	if (w->state != W_ENVELOPE)
		return werr(w, "%s after the content", what);
	return 0;
}

int qfw_arrival(qfw_t *w, const struct timeval *tv)
{
	if (envelope_only(w, "arrival time") < 0)
		return -1;
	if (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec > 999999)
		return werr(w, "bad arrival time");
	if (w->seen & QF_SEEN_TIME)
		return werr(w, "arrival time after other envelope records");
	w->arrival = *tv;
	return 0;
}

static int check_text(qfw_t *w, const char *what, const char *s,
    size_t min, size_t max)
{
	size_t n = strlen(s);

	if (n < min || n > max)
		return werr(w, "%s of %zu bytes (allowed %zu to %zu)", what, n,
		    min, max);
	return 0;
}

int qfw_sender(qfw_t *w, const char *addr)
{
	if (envelope_only(w, "sender") < 0
	    || check_text(w, "sender", addr, 0, 4096) < 0)
		return -1;
	if (w->seen & QF_SEEN_SENDER)
		return werr(w, "second sender");
	w->seen |= QF_SEEN_SENDER;
	return put_env(w, QF_REC_SENDER, addr);
}

int qfw_envid(qfw_t *w, const char *envid)
{
	if (envelope_only(w, "ENVID") < 0
	    || check_text(w, "ENVID", envid, 1, 512) < 0)
		return -1;
	if (w->seen & QF_SEEN_ENVID)
		return werr(w, "second ENVID");
	w->seen |= QF_SEEN_ENVID;
	return put_env(w, QF_REC_ENVID, envid);
}

int qfw_ret(qfw_t *w, int ret)
{
	if (envelope_only(w, "RET") < 0)
		return -1;
	if (ret != QF_RET_FULL && ret != QF_RET_HDRS)
		return werr(w, "bad RET value %d", ret);
	if (w->seen & QF_SEEN_RET)
		return werr(w, "second RET");
	w->seen |= QF_SEEN_RET;
	return put_env(w, QF_REC_RET, ret == QF_RET_FULL ? "FULL" : "HDRS");
}

int qfw_attr(qfw_t *w, const char *name, const char *value)
{
	size_t nl = strlen(name);
	str_t rec = STR_INIT;
	int r;

	if (w->failed)
		return -1;
	if (w->state == W_DONE)
		return werr(w, "attribute after commit");
	bool good = nl > 0 && nl <= QF_MAX_ATTR_NAME && name[0] >= 'a'
	    && name[0] <= 'z';
	for (size_t i = 1; good && i < nl; i++)
		good = (name[i] >= 'a' && name[i] <= 'z')
		    || (name[i] >= '0' && name[i] <= '9') || name[i] == '_';
	if (!good)
		return werr(w, "bad attribute name '%.64s'", name);
	str_setf(&rec, "%s=%s", name, value);
	if (str_len(&rec) > 8192) {
		str_release(&rec);
		return werr(w, "attribute %s: value too long", name);
	}
	/* After the content: in the extracted section, where it replaces
	 * an envelope attribute of its name (doc/queue-file.md). */
	r = (w->state == W_CONTENT ? begin_extracted(w) : 0) < 0
	    || put_time(w) < 0 ? -1 : put_rec(w, QF_REC_ATTR, rec.buf, rec.len);
	str_release(&rec);
	return r;
}

int qfw_warn_time(qfw_t *w, time_t when)
{
	if (w->failed)
		return -1;
	w->warn = when < 0 ? 0 : (uint64_t)when;
	return 0;
}

int qfw_attempts(qfw_t *w, unsigned long n)
{
	if (w->failed)
		return -1;
	w->attempts = n;
	return 0;
}

/* Line pieces: L for a piece that ends a line, l for one that goes on. */
static int put_line(qfw_t *w, int type, const char *data, size_t len)
{
	w->sizes[1] += len;
	return put_rec(w, type, data, len);
}

static int begin_content(qfw_t *w)
{
	if (w->state != W_ENVELOPE)
		return 0;
	if (!(w->seen & QF_SEEN_SENDER))
		return werr(w, "content before the sender");
	if (put_time(w) < 0 || put_rec(w, QF_REC_MESSAGE, "", 0) < 0)
		return -1;
	w->sizes[0] = (uint64_t)w->off;
	w->state = W_CONTENT;
	return 0;
}

/* Ends the content: a pending line without LF becomes the last line. */
static int end_content(qfw_t *w)
{
	if (begin_content(w) < 0)
		return -1;
	if (w->state == W_CONTENT && str_len(&w->pend) > 0) {
		if (put_line(w, QF_REC_LINE, w->pend.buf, w->pend.len) < 0)
			return -1;
		str_reset(&w->pend);
	}
	return 0;
}

/* The first recipient or attribute after the content starts the
 * extracted section. */
static int begin_extracted(qfw_t *w)
{
	if (end_content(w) < 0)
		return -1;
	w->sizes[2] = (uint64_t)w->off;
	if (put_rec(w, QF_REC_EXTRACTED, "", 0) < 0)
		return -1;
	w->state = W_EXTRACTED;
	return 0;
}

int qfw_content(qfw_t *w, const void *data, size_t len)
{
	const char *p = data;

	if (w->failed)
		return -1;
	if (w->state == W_EXTRACTED || w->state == W_DONE)
		return werr(w, "content after extracted recipients");
	if (begin_content(w) < 0)
		return -1;
	while (len > 0) {
		const char *lf = memchr(p, '\n', len);
		size_t run = lf ? (size_t)(lf - p) + 1 : len;

		/* Split the run at QF_LINE_CHUNK bytes per record (counting
		 * what is pending from earlier calls). */
		while (run > 0) {
			size_t room = QF_LINE_CHUNK - str_len(&w->pend);
			if (run <= room && lf != NULL && p + run - 1 == lf) {
				/* The line ends within this record. */
				if (str_len(&w->pend) == 0) {
					if (put_line(w, QF_REC_LINE, p, run) < 0)
						return -1;
				} else {
					str_append(&w->pend, p, run);
					if (put_line(w, QF_REC_LINE, w->pend.buf,
					    w->pend.len) < 0)
						return -1;
					str_reset(&w->pend);
				}
			} else if (run <= room) {
				/* No LF yet: keep it for the next call. */
				str_append(&w->pend, p, run);
			} else if (str_len(&w->pend) == 0) {
				if (put_line(w, QF_REC_PART, p, QF_LINE_CHUNK) < 0)
					return -1;
				run = QF_LINE_CHUNK;
				p += run;
				len -= run;
				run = lf ? (size_t)(lf - p) + 1 : len;
				continue;
			} else {
				str_append(&w->pend, p, room);
				if (put_line(w, QF_REC_PART, w->pend.buf,
				    w->pend.len) < 0)
					return -1;
				str_reset(&w->pend);
				p += room;
				len -= room;
				run -= room;
				continue;
			}
			p += run;
			len -= run;
			run = 0;
		}
	}
	return 0;
}

/* The R record of a recipient (counted, and tracked for the done
 * marks). */
static int put_rcpt(qfw_t *w, const char *addr, size_t len)
{
	off_t at = w->off;

	if (put_rec(w, QF_REC_RCPT, addr, len) < 0)
		return -1;
	w->sizes[3]++;
	if (w->track) {
		/* the type byte; the mark (version 2) ends the record,
		 * before the check value */
		if (w->nrcpt_off + 2 > w->rcpt_cap) {
			w->rcpt_cap = w->rcpt_cap ? 2 * w->rcpt_cap : 16;
			w->rcpt_off = xreallocarray(w->rcpt_off, w->rcpt_cap,
			    sizeof(*w->rcpt_off));
		}
		w->rcpt_off[w->nrcpt_off++] = at;
		w->rcpt_off[w->nrcpt_off++] = w->version >= 2 ?
		    w->off - 1 - QF_CHECK_LEN : at;
	}
	return 0;
}

int qfw_rcpt(qfw_t *w, const qf_rcpt_in_t *r)
{
	char nbuf[4];

	if (w->failed)
		return -1;
	if (w->state == W_DONE)
		return werr(w, "recipient after commit");
	if (r->address == NULL
	    || check_text(w, "recipient", r->address, 1, 4096) < 0
	    || (r->orig && check_text(w, "original recipient", r->orig, 0,
		4096) < 0)
	    || (r->orcpt && check_text(w, "ORCPT", r->orcpt, 1, 1024) < 0))
		return werr(w, "recipient without address");
	if (!dsn_notify_valid(r->notify))
		return werr(w, "bad NOTIFY value %d", r->notify);
	if (w->state == W_CONTENT && begin_extracted(w) < 0)
		return -1;
	if (put_time(w) < 0)
		return -1;
	if (r->orig && put_str(w, QF_REC_ORIG, r->orig) < 0)
		return -1;
	if (r->orcpt && put_str(w, QF_REC_ORCPT, r->orcpt) < 0)
		return -1;
	if (r->notify) {
		snprintf(nbuf, sizeof(nbuf), "%d", r->notify);
		if (put_str(w, QF_REC_NOTIFY, nbuf) < 0)
			return -1;
	}
	return put_rcpt(w, r->address, strlen(r->address));
}

void qfw_track_rcpts(qfw_t *w)
{
	w->track = true;
}

/* Sets the byte at file offset at to c: in the buffer when it is not
 * written yet, else in place. */
static int set_byte(qfw_t *w, off_t at, char c)
{
	off_t bstart = w->off - (off_t)str_len(&w->buf);

	if (at >= bstart) {
		w->buf.buf[at - bstart] = c;
		return 0;
	}
	if (pwrite(w->fd, &c, 1, at) != 1)
		return werr(w, "write %s: %s", str_cstr(&w->tmp_path),
		    strerror(errno));
	return 0;
}

int qfw_rcpts_done(qfw_t *w)
{
	if (w->failed)
		return -1;
	if (!w->track || w->state == W_DONE)
		return werr(w, "recipients not tracked");
	/* Both bytes, as qfile_rcpt_done does in place for qmgr. */
	for (size_t i = 0; i < w->nrcpt_off; i++)
		if (set_byte(w, w->rcpt_off[i], QF_REC_DONE) < 0)
			return -1;
	return 0;
}

off_t qfw_rcpt_offset(const qfw_t *w, size_t i)
{
	return w->track && 2 * i < w->nrcpt_off ? w->rcpt_off[2 * i] : -1;
}

int qfw_rcpt_done_at(qfw_t *w, size_t i)
{
	if (w->failed)
		return -1;
	if (!w->track || w->state == W_DONE || 2 * i >= w->nrcpt_off)
		return werr(w, "recipient %zu not tracked", i);
	/* Both bytes, as qfw_rcpts_done. */
	if (set_byte(w, w->rcpt_off[2 * i], QF_REC_DONE) < 0 ||
	    set_byte(w, w->rcpt_off[2 * i + 1], QF_REC_DONE) < 0)
		return -1;
	return 0;
}

int qfw_content_take(qfw_t *w, int out_fd)
{
	off_t at, end;
	str_t rec = STR_INIT;
	int rfd;

	if (w->failed)
		return -1;
	if (w->state != W_CONTENT && w->state != W_ENVELOPE)
		return werr(w, "content cannot be taken back now");
	if (end_content(w) < 0 || flush_buf(w) < 0)
		return -1;
	/* The writer's descriptor is write-only (a spare file's, too). */
	rfd = open(str_cstr(&w->tmp_path), O_RDONLY | O_CLOEXEC);
	if (rfd < 0)
		return werr(w, "open %s: %s", str_cstr(&w->tmp_path),
		    strerror(errno));
	at = (off_t)w->sizes[0];
	end = w->off;
	/* Records: type, length (7 bits a byte, low first), data, check. */
	while (at < end) {
		unsigned char hb[16];
		ssize_t got = pread(rfd, hb, sizeof(hb), at);
		size_t len = 0, n = 1;
		int shift = 0;

		if (got < 2)
			goto bad;
		for (;;) {
			if (n >= (size_t)got || shift > 28)
				goto bad;
			len |= (size_t)(hb[n] & 0x7f) << shift;
			shift += 7;
			if (!(hb[n++] & 0x80))
				break;
		}
		if (hb[0] != QF_REC_LINE && hb[0] != QF_REC_PART)
			goto bad;
		str_reserve(&rec, len + 1);
		if (len > 0 && pread(rfd, rec.buf, len, at + (off_t)n) !=
		    (ssize_t)len)
			goto bad;
		if (len > 0 && file_write_all(out_fd, rec.buf, len) < 0) {
			str_release(&rec);
			close(rfd);
			return werr(w, "write spool: %s", strerror(errno));
		}
		at += (off_t)(n + len + (w->version >= 2 ? QF_CHECK_LEN : 0));
	}
	str_release(&rec);
	close(rfd);
	if (ftruncate(w->fd, (off_t)w->sizes[0]) < 0)
		return werr(w, "truncate %s: %s", str_cstr(&w->tmp_path),
		    strerror(errno));
	if (lseek(w->fd, (off_t)w->sizes[0], SEEK_SET) < 0)
		return werr(w, "seek %s: %s", str_cstr(&w->tmp_path),
		    strerror(errno));
	w->off = (off_t)w->sizes[0];
	w->sizes[1] = 0;
	return 0;
bad:
	str_release(&rec);
	close(rfd);
	return werr(w, "reading back the content of %s at offset %lld "
	    "(ending at %lld) failed", str_cstr(&w->tmp_path), (long long)at,
	    (long long)end);
}

int qfw_envelope_redo(qfw_t *w, const char *sender, const char *envid,
    int ret)
{
	size_t elen, at = 0;
	char *env;
	int rfd;
	bool seen_i = false, seen_f = false;

	if (w->failed)
		return -1;
	if (w->state != W_CONTENT || w->off != (off_t)w->sizes[0] ||
	    str_len(&w->pend) > 0)
		return werr(w, "envelope rewrite without the content taken back");
	if ((sender && check_text(w, "sender", sender, 0, 4096) < 0) ||
	    (envid && check_text(w, "ENVID", envid, 1, 512) < 0))
		return -1;
	if (flush_buf(w) < 0)
		return -1;
	rfd = open(str_cstr(&w->tmp_path), O_RDONLY | O_CLOEXEC);
	if (rfd < 0)
		return werr(w, "open %s: %s", str_cstr(&w->tmp_path),
		    strerror(errno));
	elen = (size_t)w->off - QF_HEAD_SIZE;
	env = xmalloc(elen + 1);
	if (pread(rfd, env, elen, QF_HEAD_SIZE) != (ssize_t)elen) {
		close(rfd);
		free(env);
		return werr(w, "read back the envelope of %s: %s",
		    str_cstr(&w->tmp_path), strerror(errno));
	}
	close(rfd);
	if (ftruncate(w->fd, QF_HEAD_SIZE) < 0 ||
	    lseek(w->fd, QF_HEAD_SIZE, SEEK_SET) < 0) {
		free(env);
		return werr(w, "truncate %s: %s", str_cstr(&w->tmp_path),
		    strerror(errno));
	}
	w->off = QF_HEAD_SIZE;
	w->sizes[0] = w->sizes[1] = w->sizes[2] = w->sizes[3] = 0;
	w->nrcpt_off = 0;
	w->state = W_ENVELOPE;
	/* The records again, the sender (ENVID, RET) replaced; recipients
	 * keep their done marks and are tracked again. */
	while (at < elen && !w->failed) {
		int type = (unsigned char)env[at];
		size_t len = 0, n = at + 1;
		int shift = 0;
		bool done = false;

		for (;;) {
			if (n >= elen || shift > 28)
				goto bad;
			len |= (size_t)((unsigned char)env[n] & 0x7f) << shift;
			shift += 7;
			if (!((unsigned char)env[n++] & 0x80))
				break;
		}
		if (n + len > elen)
			goto bad;
		const char *data = env + n;
		size_t next = n + len;
		if (type == QF_REC_RCPT || type == QF_REC_DONE) {
			if (w->version >= 2) {
				done = env[next] == QF_REC_DONE ||
				    type == QF_REC_DONE;
				next++;
			} else {
				done = type == QF_REC_DONE;
			}
		}
		if (w->version >= 2)
			next += QF_CHECK_LEN;
		if (next > elen)
			goto bad;
		at = next;
		switch (type) {
		case QF_REC_MESSAGE:
			at = elen;	/* the content comes again */
			continue;
		case QF_REC_SENDER:
			if (sender != NULL)
				(void)put_str(w, QF_REC_SENDER, sender);
			else
				(void)put_rec(w, type, data, len);
			if (envid != NULL && !seen_i) {
				seen_i = true;
				(void)put_str(w, QF_REC_ENVID, envid);
			}
			if (ret > 0 && !seen_f) {
				seen_f = true;
				(void)put_str(w, QF_REC_RET, ret == QF_RET_FULL ?
				    "FULL" : "HDRS");
			}
			continue;
		case QF_REC_ENVID:
			if (envid == NULL)
				(void)put_rec(w, type, data, len);
			continue;	/* the new one went after S */
		case QF_REC_RET:
			if (ret <= 0)
				(void)put_rec(w, type, data, len);
			continue;
		case QF_REC_RCPT:
		case QF_REC_DONE: {
			off_t rat = w->off;
			if (put_rcpt(w, data, len) < 0)
				continue;
			if (done) {
				(void)set_byte(w, rat, QF_REC_DONE);
				if (w->version >= 2)
					(void)set_byte(w, w->off - 1 -
					    QF_CHECK_LEN, QF_REC_DONE);
			}
			continue;
		}
		default:
			(void)put_rec(w, type, data, len);
			continue;
		}
	}
	free(env);
	if (w->failed)
		return -1;
	/* The content begins again where it ends now. */
	return begin_content(w);
bad:
	free(env);
	return werr(w, "malformed envelope in %s", str_cstr(&w->tmp_path));
}

static int counted_fsync(int fd)
{
	qfw_fsync_count++;
	return file_fsync(fd);
}

/* One handle on the state file per process (a daemon writes into one
 * queue directory tree), kept open between commits. */
static dirsync_t *dirsync_handle(const char *path)
{
	static dirsync_t *ds;
	static char *ds_path;

	if (ds == NULL || strcmp(ds_path, path) != 0) {
		dirsync_free(ds);
		free(ds_path);
		ds = dirsync_new(path);
		ds_path = xstrdup(path);
	}
	return ds;
}

/* Returns once the rename into dir is durable; counts the directory
 * fsyncs this process made for it (none when another writer's fsync
 * covered it). */
static int commit_dir_counted(qfw_t *w, const char *dir)
{
	unsigned long before = dirsync_fsync_count;
	int r = dirsync_commit(dirsync_handle(str_cstr(&w->state_path)), dir);
	int e = errno;

	qfw_fsync_count += dirsync_fsync_count - before;
	errno = e;
	return r;
}

int qfw_commit(qfw_t *w)
{
	char head[QF_HEAD_SIZE], ebuf[QF_END_LEN + 1];
	dirsync_t *ds = NULL;

	if (w->state == W_DONE)
		return werr(w, "second commit");
	if (w->failed || end_content(w) < 0)
		goto fail;
	snprintf(ebuf, sizeof(ebuf), "%016llx", (unsigned long long)w->off);
	if (put_rec(w, QF_REC_END, ebuf, QF_END_LEN) < 0 || flush_buf(w) < 0)
		goto fail;
	make_head(w, head);
	if (pwrite(w->fd, head, sizeof(head), 0) != (ssize_t)sizeof(head)) {
		werr(w, "write %s: %s", str_cstr(&w->tmp_path), strerror(errno));
		goto fail;
	}
	/* 1. the data, 2. the name, 3. the name made durable (by our own
	 * directory fsync or another writer's that began after the rename).
	 * While we fsync and rename, a writer about to fsync the directory
	 * may wait for our rename and fsync for both. */
	ds = dirsync_handle(str_cstr(&w->state_path));
	dirsync_begin(ds, str_cstr(&w->final_dir));
	if (counted_fsync(w->fd) < 0) {
		werr(w, "fsync %s: %s", str_cstr(&w->tmp_path), strerror(errno));
		goto fail;
	}
	if (rename(str_cstr(&w->tmp_path), str_cstr(&w->final_path)) < 0) {
		/* A hashed subdirectory that does not exist yet. */
		if (errno != ENOENT || !w->hashed
		    || file_mkdirs(str_cstr(&w->final_dir), 0700) < 0
		    || rename(str_cstr(&w->tmp_path),
			str_cstr(&w->final_path)) < 0) {
			werr(w, "rename %s to %s: %s", str_cstr(&w->tmp_path),
			    str_cstr(&w->final_path), strerror(errno));
			goto fail;
		}
		/* The new subdirectories must survive a crash as well: fsync
		 * each level above the file's directory, up to the queue's. */
		str_t up = STR_INIT;
		str_set(&up, str_cstr(&w->final_dir));
		while (strcmp(str_cstr(&up), str_cstr(&w->top_dir)) != 0) {
			char *slash = strrchr(up.buf, '/');
			if (slash == NULL)
				break;
			str_truncate(&up, (size_t)(slash - up.buf));
			if (file_fsync_dir(str_cstr(&up)) < 0) {
				werr(w, "fsync directory %s: %s", str_cstr(&up),
				    strerror(errno));
				break;
			}
		}
		str_release(&up);
		if (w->failed)
			goto fail_named;
	}
	w->committed = true;
	w->state = W_DONE;
	if (commit_dir_counted(w, str_cstr(&w->final_dir)) < 0) {
		/* The file is complete and named; only its durability is in
		 * doubt.  Report failure so the client retries: at worst the
		 * message is queued twice, never lost. */
		werr(w, "fsync directory %s: %s", str_cstr(&w->final_dir),
		    strerror(errno));
		goto fail_named;
	}
	/* After the fsyncs a close error cannot lose the data. */
	(void)close(w->fd);
	w->fd = -1;
	return 0;

fail_named:
	/* Named but not known to be durable: left in place (complete, so
	 * valid); the caller reports failure and the client retries. */
	dirsync_cancel(ds);
	w->committed = true;
	w->state = W_DONE;
	close(w->fd);
	w->fd = -1;
	return -1;

fail:
	dirsync_cancel(ds);
	if (w->fd >= 0) {
		unlink(str_cstr(&w->tmp_path));
		close(w->fd);
		w->fd = -1;
	}
	w->state = W_DONE;
	return -1;
}

void qfw_free(qfw_t *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0) {
		if (!w->committed)
			unlink(str_cstr(&w->tmp_path));
		close(w->fd);
	}
	str_release(&w->top_dir);
	str_release(&w->state_path);
	str_release(&w->tmp_path);
	str_release(&w->final_dir);
	str_release(&w->final_path);
	str_release(&w->buf);
	str_release(&w->pend);
	str_release(&w->err);
	free(w->rcpt_off);
	free(w);
}

bool qfile_tmp_name(const char *name)
{
	return strncmp(name, "tmp.", 4) == 0 && name[4] != '\0';
}

int qfile_tmp_is_stale(const char *path, time_t min_age)
{
	struct stat fst, lst;
	int fd, r;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &fst) < 0) {
		r = -1;
		goto out;
	}
	if (!S_ISREG(fst.st_mode)) {
		errno = EINVAL;
		r = -1;
		goto out;
	}
	/* Young files are left alone before any lock is taken, so a scanner
	 * never holds the lock of a file whose writer is just starting. */
	if (time(NULL) - fst.st_mtime < min_age) {
		r = 0;
		goto out;
	}
	if (file_lock(fd, FILE_LOCK_SHARED | FILE_LOCK_NOWAIT) < 0) {
		/* A live writer holds it (or locking is broken). */
		r = errno == EAGAIN || errno == EACCES ? 0 : -1;
		goto out;
	}
	/* What we locked must still be what the name points to. */
	if (lstat(path, &lst) < 0) {
		r = errno == ENOENT ? 0 : -1;
		goto out;
	}
	r = lst.st_ino == fst.st_ino && lst.st_dev == fst.st_dev
	    && time(NULL) - fst.st_mtime >= min_age;
out:
	close(fd);
	return r;
}

const char *const qfile_tmp_queues[] = { QUEUE_INCOMING, QUEUE_ACTIVE,
	QUEUE_DEFERRED, QUEUE_HOLD, NULL };

long qfile_tmp_purge(const queue_layout_t *ql, time_t min_age)
{
	str_t dir = STR_INIT, path = STR_INIT;
	long removed = 0;

	for (int q = 0; qfile_tmp_queues[q] != NULL; q++) {
		DIR *d;
		struct dirent *de;

		/* Writers create their temporary files in the queue's top
		 * directory, hashed or not. */
		str_setf(&dir, "%s/%s", ql->dir, qfile_tmp_queues[q]);
		if ((d = opendir(str_cstr(&dir))) == NULL) {
			if (errno != ENOENT)
				log_warning("cannot look for stale temporary files "
				    "in %s: %s", str_cstr(&dir), strerror(errno));
			continue;
		}
		while ((de = readdir(d)) != NULL) {
			int r;
			if (!qfile_tmp_name(de->d_name))
				continue;
			str_setf(&path, "%s/%s", str_cstr(&dir), de->d_name);
			r = qfile_tmp_is_stale(str_cstr(&path), min_age);
			if (r < 0)
				log_warning("cannot check temporary file %s: %s",
				    str_cstr(&path), strerror(errno));
			if (r != 1)
				continue;
			if (unlink(str_cstr(&path)) < 0) {
				if (errno != ENOENT)
					log_warning("cannot remove stale temporary "
					    "file %s: %s", str_cstr(&path),
					    strerror(errno));
				continue;
			}
			log_info("removed stale temporary file %s/%s",
			    qfile_tmp_queues[q], de->d_name);
			removed++;
		}
		closedir(d);
	}
	str_release(&dir);
	str_release(&path);
	return removed;
}
