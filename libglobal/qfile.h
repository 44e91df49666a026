/* Queue files: typed, length-prefixed records; a durable writer; a
 * validating reader with bounded memory; in-place updates.
 * The format and the rules are in doc/queue-file.md. */
#ifndef PETREL_QFILE_H
#define PETREL_QFILE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>
#include "dsn_notify.h"
#include "queue_id.h"
#include "queue_path.h"
#include "str.h"

/* Record types. */
#define QF_REC_VERSION 'V'
#define QF_REC_SIZES 'Z'
#define QF_REC_ATTEMPTS 'A'
#define QF_REC_WARN 'W'
#define QF_REC_TIME 'T'
#define QF_REC_SENDER 'S'
#define QF_REC_ENVID 'I'
#define QF_REC_RET 'F'
#define QF_REC_ATTR 'a'
#define QF_REC_ORIG 'O'
#define QF_REC_ORCPT 'D'
#define QF_REC_NOTIFY 'N'
#define QF_REC_RCPT 'R'
#define QF_REC_DONE 'r'
#define QF_REC_MESSAGE 'M'
#define QF_REC_LINE 'L'
#define QF_REC_PART 'l'
#define QF_REC_EXTRACTED 'X'
#define QF_REC_END 'E'

/* The version writers write, and the old one readers still read (no
 * check values: doc/queue-file.md §3, Record checks). */
#define QF_VERSION "2"
#define QF_VERSION_1 "1"
/* Version 2: every record after the head ends in a CRC-32C of its type
 * (R for R and r), length and data, 4 bytes, least significant first;
 * R and r records have the done mark (R or r) before it. */
#define QF_CHECK_LEN 4
/* Fixed offsets of the head records (type byte). */
#define QF_OFF_SIZES 3
#define QF_OFF_ATTEMPTS 77
#define QF_OFF_WARN 103
#define QF_HEAD_SIZE 129
/* Slot sizes (data bytes). */
#define QF_SLOT_VALUE_LEN 16
#define QF_SLOT_CHECK_LEN 8
#define QF_SIZES_LEN (4 * QF_SLOT_VALUE_LEN + QF_SLOT_CHECK_LEN)
#define QF_SLOT1_LEN (QF_SLOT_VALUE_LEN + QF_SLOT_CHECK_LEN)
#define QF_END_LEN 16
/* Largest data length of any record; writers split lines at QF_LINE_CHUNK. */
#define QF_MAX_RECORD 65536
#define QF_LINE_CHUNK 8192
#define QF_MAX_ATTRS 256
#define QF_MAX_ATTR_NAME 64

/* Record N holds DSN_NOTIFY_* bits (dsn_notify.h) in decimal. */
/* DSN RET values (record F). */
#define QF_RET_NONE 0
#define QF_RET_FULL 1
#define QF_RET_HDRS 2

/* Torn slot bits (qfile_torn_slots). */
#define QF_TORN_ATTEMPTS 1
#define QF_TORN_WARN 2

/* CRC-32 (ISO-HDLC, zlib's) of data, continuing from crc (start with 0). */
uint32_t qf_crc32(uint32_t crc, const void *data, size_t len);

/* Human name of a record type ("sender", "recipient"...), or NULL. */
const char *qf_rec_name(int type);

/* ---------------------------------------------------------------------
 * Errors.  damaged: the file breaks the format at offset (reason says
 * how); otherwise an I/O or system error (errnum, reason says what). */
typedef struct qf_err {
	bool damaged;
	int errnum;
	off_t offset;		/* damaged: where the damage starts; else -1 */
	char reason[256];
} qf_err_t;

/* ---------------------------------------------------------------------
 * The scanner: walks the records of a file from the start, validating
 * each against the format and the order, bounded memory.  For tools that
 * must show what can be read of a damaged file (postcat); programs
 * normally use qfile_open. */
typedef struct qf_scan qf_scan_t;

typedef struct qf_rec {
	int type;		/* a half-marked recipient is QF_REC_RCPT */
	off_t offset;		/* of the type byte */
	const char *data;	/* valid until the next call; NUL-terminated */
	size_t len;
	bool half_marked;	/* type byte and mark disagree: not done */
} qf_rec_t;

/* Starts scanning fd (not closed by qf_scan_free) at offset 0. */
qf_scan_t *qf_scan_new(int fd);
void qf_scan_free(qf_scan_t *sc);
/* 1 with the next record in rec; 0 after the end record was returned and
 * the file was checked to end there; -1 on damage or an I/O error (err).
 * Once it returned -1 it keeps returning -1. */
int qf_scan_next(qf_scan_t *sc, qf_rec_t *rec, qf_err_t *err);
/* Decoded values of the head slots once read: the sizes slot (content
 * offset, content size, extracted offset, recipient count), attempts and
 * warning time (0 when torn; torn says which, QF_TORN_*). */
void qf_scan_sizes(const qf_scan_t *sc, uint64_t v[4]);
void qf_scan_slots(const qf_scan_t *sc, uint64_t *attempts, uint64_t *warn,
    int *torn);
/* The file's format version (1 or 2) once the version record was read,
 * else 0. */
int qf_scan_version(const qf_scan_t *sc);
/* Slot decoding: fills n values from a slot's data; false when the digits
 * or the check are wrong. */
bool qf_slot_decode(const char *data, size_t len, uint64_t *v, int n);
/* Encodes n values into out (n * 16 + 8 bytes, not NUL-terminated). */
void qf_slot_encode(char *out, const uint64_t *v, int n);

/* ---------------------------------------------------------------------
 * The writer. */
typedef struct qfw qfw_t;

/* A recipient to write: address required; the rest optional (NULL, 0). */
typedef struct qf_rcpt_in {
	const char *address;
	const char *orig;	/* original address, before rewriting */
	const char *orcpt;	/* DSN ORCPT "type;xtext" */
	int notify;		/* DSN_NOTIFY_* bits, 0 = not given */
} qf_rcpt_in_t;

/* Creates a temporary file in queue's directory (see the doc).  Returns
 * NULL with a message in err (may be NULL) on failure. */
qfw_t *qfw_create(const queue_layout_t *ql, const char *queue, mode_t mode,
    str_t *err);
const char *qfw_id(const qfw_t *w);
/* The temporary path while writing, the final path after commit. */
const char *qfw_path(const qfw_t *w);
/* Envelope.  Each returns 0 or -1 (sticky error, qfw_error).  Arrival
 * defaults to the creation time; qfw_arrival, when used, comes before
 * the other envelope calls (the time record is written first).  The
 * sender is required.  Envelope calls after the first qfw_content fail,
 * except qfw_rcpt, which then writes an extracted recipient, and
 * qfw_attr, which writes an attribute into the extracted section that
 * replaces the envelope's of that name (the content filter); warning
 * time and attempts may be set any time before the commit. */
int qfw_arrival(qfw_t *w, const struct timeval *tv);
int qfw_sender(qfw_t *w, const char *addr);
int qfw_envid(qfw_t *w, const char *envid);
int qfw_ret(qfw_t *w, int ret);
int qfw_attr(qfw_t *w, const char *name, const char *value);
int qfw_warn_time(qfw_t *w, time_t when);
int qfw_attempts(qfw_t *w, unsigned long n);
int qfw_rcpt(qfw_t *w, const qf_rcpt_in_t *r);
/* Remember where each recipient record is written from now on, for
 * qfw_rcpts_done (cleanup asks when content checks are configured). */
void qfw_track_rcpts(qfw_t *w);
/* Marks every recipient written since qfw_track_rcpts done (cleanup's
 * REDIRECT, before it adds the new recipient).  0 or -1 (sticky). */
int qfw_rcpts_done(qfw_t *w);
/* The offset of the i-th recipient record written since
 * qfw_track_rcpts (its key in status logs), or -1. */
off_t qfw_rcpt_offset(const qfw_t *w, size_t i);
/* Marks the i-th recipient written since qfw_track_rcpts done (a
 * milter's delete-recipient).  0 or -1 (sticky). */
int qfw_rcpt_done_at(qfw_t *w, size_t i);
/* Milter edits at the end of a message (cleanup): the content written
 * so far goes to out_fd, as it was given, and the file is cut back to
 * where the content begins, so that the edited content is written in
 * its place (same file, same queue ID; nothing is durable before the
 * commit anyway).  0, or -1 (sticky). */
int qfw_content_take(qfw_t *w, int out_fd);
/* After qfw_content_take: the envelope is written again with sender
 * (NULL: unchanged), and envid (NULL: unchanged) and ret (0: unchanged)
 * when given, recipients kept as they are (done marks, tracking), and
 * the content begins again (a milter's change of sender).  0, or -1
 * (sticky). */
int qfw_envelope_redo(qfw_t *w, const char *sender, const char *envid,
    int ret);
/* Message content, in pieces of any size (lines found by the writer). */
int qfw_content(qfw_t *w, const void *data, size_t len);
/* Ends the content, writes the end record, fsyncs, renames to the ID,
 * and returns once the rename is durable: after a directory fsync that
 * began after the rename, this writer's or one made by another process
 * committing into the same directory (saved/dirsync.queue, queue-file.md
 * §4).  0 on success; -1 removes the temporary file (or, when only the
 * directory fsync failed, leaves the complete named file). */
int qfw_commit(qfw_t *w);
/* Before the commit: the file is committed into queue instead of the
 * one it was created in (cleanup's HOLD action: hold/).  The temporary
 * file stays where it is; the commit's rename moves it (one file
 * system).  0, or -1 (unknown queue, or already committed). */
int qfw_set_queue(qfw_t *w, const queue_layout_t *ql, const char *queue);
/* Frees the writer; an uncommitted file is removed. */
void qfw_free(qfw_t *w);
const char *qfw_error(const qfw_t *w);
/* Testing hook: fsync(2) calls made by commits of this process (the
 * file's, and the directory's when this process made it). */
extern unsigned long qfw_fsync_count;
/* Testing hook: the format version new writers write (2; 1 makes the
 * files of before the record checks, to test that they are still read). */
extern int qfw_version;

/* A stale temporary file (tmp.*): not locked by a live writer and last
 * modified at least min_age seconds ago.  1 stale, 0 not (in use, young,
 * or gone), -1 error (errno).  Call it from a process that is not itself
 * writing queue files: fcntl locks belong to the process, so it cannot
 * see its own, and closing its descriptor would drop them. */
int qfile_tmp_is_stale(const char *path, time_t min_age);
/* True for the temporary names writers use. */
bool qfile_tmp_name(const char *name);
/* Removes the stale temporary files (qfile_tmp_is_stale with min_age)
 * from the top directories of the queues in qfile_tmp_queues, logging
 * each; returns how many.  Not maildrop/ (pickup recovers complete files
 * there), never spare/.  The same caveat as qfile_tmp_is_stale: call it
 * from a process that writes no queue files (petrel start, qmgr). */
long qfile_tmp_purge(const queue_layout_t *ql, time_t min_age);
extern const char *const qfile_tmp_queues[];

/* Recycling.  A finished queue file (every recipient done) is not
 * removed but moved to spare/ (QFILE_SPARE_MAX at most; beyond, it is
 * removed), and a writer of incoming/ takes a spare file, empties it and
 * writes the new message into it, instead of creating a new file: no
 * inode to allocate, none to free (on an ext4 without a journal, the
 * allocator scans past every inode freed in the last half minute, which
 * made creating a queue file the costliest step of a message at 1,000
 * messages a second).  Spare files are never read: a writer holds its
 * lock on one before it renames it to a temporary name, truncates it,
 * and from then on it is a new temporary file.  path is the file, id its
 * queue ID (the spare's name).  0, or -1 with errno (as unlink). */
#define QFILE_SPARE_MAX 512
int qfile_recycle(const queue_layout_t *ql, const char *path, const char *id);
/* Testing hooks: spare files taken by writers of this process, and
 * queue files recycled (not removed) by it. */
extern unsigned long qfw_spares_taken, qfile_recycled;

/* ---------------------------------------------------------------------
 * The reader. */
typedef struct qfile qfile_t;

#define QF_OPEN_RDWR 1		/* for the in-place updates */

/* Opens and validates queue/id (found with queue_find).  NULL with err
 * filled on failure (errnum ENOENT when the file is not there). */
qfile_t *qfile_open(const queue_layout_t *ql, const char *queue,
    const char *id, int flags, qf_err_t *err);
/* The same for a path; the ID is the last path component when it is a
 * valid queue ID, else empty. */
qfile_t *qfile_open_path(const char *path, int flags, qf_err_t *err);
void qfile_close(qfile_t *qf);

int qfile_fd(const qfile_t *qf);
const char *qfile_id(const qfile_t *qf);
const char *qfile_path(const qfile_t *qf);
const char *qfile_sender(const qfile_t *qf);
void qfile_arrival(const qfile_t *qf, struct timeval *tv);
const char *qfile_envid(const qfile_t *qf);	/* NULL if none */
int qfile_ret(const qfile_t *qf);		/* QF_RET_* */
/* Value of attribute name, or NULL. */
const char *qfile_attr(const qfile_t *qf, const char *name);
/* The i-th attribute in file order; false past the end. */
bool qfile_attr_at(const qfile_t *qf, size_t i, const char **name,
    const char **value);
unsigned long qfile_attempts(const qfile_t *qf);
time_t qfile_warn_time(const qfile_t *qf);
int qfile_torn_slots(const qfile_t *qf);
/* Recipients found half-marked done at open (read as not done). */
uint64_t qfile_half_marked(const qfile_t *qf);
uint64_t qfile_content_size(const qfile_t *qf);
off_t qfile_content_offset(const qfile_t *qf);
uint64_t qfile_rcpt_count(const qfile_t *qf);	/* done ones included */
/* Error of the last failed call. */
const qf_err_t *qfile_error(const qfile_t *qf);

/* A recipient read back. */
typedef struct qf_rcpt {
	str_t address;
	str_t orig;		/* empty if none */
	str_t orcpt;		/* empty if none */
	int notify;		/* 0 if none */
	off_t offset;		/* of its R/r record: for qfile_rcpt_done */
	bool done;
	bool extracted;
} qf_rcpt_t;

/* A batch reuses its array and strings from call to call. */
typedef struct qf_rcpt_batch {
	qf_rcpt_t *rcpt;
	size_t count;		/* filled by the last qfile_rcpt_read */
	size_t cap;		/* allocated entries, never more than max */
} qf_rcpt_batch_t;

#define QF_RCPT_ALL 1		/* also return done recipients */

/* Reads up to max (>= 1) recipients from where the last call stopped.
 * Returns the count (0 = no more), or -1 on error (qfile_error). */
long qfile_rcpt_read(qfile_t *qf, qf_rcpt_batch_t *b, size_t max,
    int flags);
void qfile_rcpt_rewind(qfile_t *qf);
void qf_rcpt_batch_free(qf_rcpt_batch_t *b);

/* Results of qfile_read_line. */
enum qf_line {
	QF_LINE_END = 0,	/* no more content */
	QF_LINE_LF = 1,		/* a line ended by LF */
	QF_LINE_CRLF,		/* a line ended by CR LF */
	QF_LINE_NONE,		/* the last line, without terminator */
	QF_LINE_MORE,		/* max bytes of a line that continues */
};
/* Content lines, from the start after qfile_content_rewind (also where
 * a fresh qfile_t starts).  line gets the data without terminator;
 * returns enum qf_line or -1 on error. */
void qfile_content_rewind(qfile_t *qf);
int qfile_read_line(qfile_t *qf, str_t *line, size_t max);

/* In-place updates (need QF_OPEN_RDWR).  QF_SYNC: fsync afterwards. */
#define QF_SYNC 1
int qfile_rcpt_done(qfile_t *qf, off_t offset, int flags);
int qfile_set_attempts(qfile_t *qf, unsigned long n, int flags);
int qfile_set_warn_time(qfile_t *qf, time_t when, int flags);

/* Moves queue/id to the corrupt queue (never replacing a file there),
 * logs why.  0 or -1 (errno; the file stays where it was). */
int qfile_move_corrupt(const queue_layout_t *ql, const char *queue,
    const char *id, const char *reason);
/* The same for a reader's damage error: the reason says where
 * ("at offset N: REASON"). */
int qfile_move_damaged(const queue_layout_t *ql, const char *queue,
    const char *id, const qf_err_t *err);

#endif
