/* Per-message status logs: the defer log (queue_directory/defer/ID: why
 * recipients were deferred; postq shows it, delay warnings are built from
 * it) and the bounce log (bounce/ID: recipients that failed; the bounce
 * daemon builds the non-delivery notice from it).  The trace log
 * (trace/ID) uses the same format.  IDs are the message's queue ID; the
 * defer and bounce directories may be hashed like the queues
 * (hash_queue_names).
 *
 * Format (doc/protocol-delivery.md "Status logs"): the file is a sequence
 * of attribute-protocol messages (attr.h), one per record, each with the
 * recipient (address, orig, orcpt, notify, offset), its status (status,
 * action, reason, diag_type, diag_text, relay, remote_mta) and the time.
 * Appends are single write()s to an O_APPEND file, so records from
 * several writers never interleave; a crash can leave at most a cut last
 * record, which readers skip (statuslog_next says so).  The same
 * recipient may appear more than once (a batch redone after a crash, or
 * deferred on several attempts): readers that need one line per
 * recipient keep the last record for each offset. */
#ifndef PETREL_STATUSLOG_H
#define PETREL_STATUSLOG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "delivery.h"
#include "queue_path.h"
#include "str.h"

/* One record. */
typedef struct sl_rec {
	dlv_rcpt_t rcpt;
	dlv_status_t st;
	int64_t time;		/* when it happened, seconds since the epoch */
} sl_rec_t;

enum {
	SL_SYNC = 1 << 0,	/* fsync the file (and, when the file was
				 * created, its directory) before returning */
};

/* Appends n records (one write()) to log ("defer", "bounce" or "trace")
 * of message id, creating the file (mode 0600) and a missing hashed
 * subdirectory.  Returns 0, or -1 with err set (nothing or a cut record
 * written).  Strings NULL count as "". */
int statuslog_append(const queue_layout_t *ql, const char *log,
    const char *id, const sl_rec_t *recs, size_t n, int flags, str_t *err);
/* One record from a recipient and its status (when 0: now). */
int statuslog_append1(const queue_layout_t *ql, const char *log,
    const char *id, const dlv_rcpt_t *r, const dlv_status_t *st,
    time_t when, int flags, str_t *err);

/* Reading, one record at a time (bounded memory for huge logs). */
typedef struct sl_reader sl_reader_t;

/* Opens log/id for reading.  NULL with errno ENOENT when there is no
 * such log (err says so too), or another error. */
sl_reader_t *statuslog_open(const queue_layout_t *ql, const char *log,
    const char *id, str_t *err);
/* The same for a path. */
sl_reader_t *statuslog_open_path(const char *path, str_t *err);
/* 1 with the next record in *rec (valid until the next call; the reader
 * owns its strings), 0 at the end, -1 on damage or an I/O error (err).
 * A cut record at the very end (a crash during an append) is the end:
 * 0, and statuslog_truncated() is then true. */
int statuslog_next(sl_reader_t *r, sl_rec_t *rec, str_t *err);
bool statuslog_truncated(const sl_reader_t *r);
void statuslog_close(sl_reader_t *r);

/* Whole-log helpers. */
typedef struct sl_list {
	sl_rec_t *v;
	size_t n, cap;
	bool truncated;		/* a cut last record was skipped */
} sl_list_t;
#define SL_LIST_INIT { NULL, 0, 0, false }
/* Reads up to max records (0: no limit) into list (appended).  Returns
 * 0; 1 when max stopped it; -1 on error (ENOENT when there is no log). */
int statuslog_read(const queue_layout_t *ql, const char *log, const char *id,
    sl_list_t *list, size_t max, str_t *err);
/* Appends a copy of rec (its strings copied). */
void sl_list_add(sl_list_t *list, const sl_rec_t *rec);
/* Keeps only the last record for each recipient offset, in the order
 * of those last records. */
void sl_list_dedup(sl_list_t *list);
void sl_list_free(sl_list_t *list);
/* Frees the strings of a record filled by statuslog_read (not by
 * statuslog_next). */
void sl_rec_free(sl_rec_t *rec);

/* Removes log/id, wherever the hash levels put it (the configured place
 * first, then the others: a log written under an earlier
 * hash_queue_depth).  0 (also when there was none), -1 with err. */
int statuslog_remove(const queue_layout_t *ql, const char *log,
    const char *id, str_t *err);
/* The same, at the configured place only: one unlink(), for a log that
 * can only have been written under the current layout. */
int statuslog_discard(const queue_layout_t *ql, const char *log,
    const char *id, str_t *err);
/* 1 when log/id exists, 0 when not, -1 on error. */
int statuslog_exists(const queue_layout_t *ql, const char *log,
    const char *id);

/* Encodes one record as it is stored (tests, tools). */
void statuslog_encode(const sl_rec_t *rec, str_t *out);

#endif
