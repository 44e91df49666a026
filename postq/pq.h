/* libpostq: what postq(1) and postsuper(1) share: walking the queue
 * directories, reading a message for display (envelope, pending
 * recipients, defer-log reasons, retry time), the mailq text and JSON
 * layouts, queue shape tables, the scheduler views from qmgr's control
 * channel, flushing, and the authorized_*_users checks.
 * doc/postq.md has the output formats. */
#ifndef PETREL_POSTQ_PQ_H
#define PETREL_POSTQ_PQ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include "attr.h"
#include "htable.h"
#include "qfile.h"
#include "qmgr_clnt.h"
#include "queue_path.h"
#include "str.h"

/* ---- Walking the queues (pq_walk.c) ----------------------------------- */

/* What a directory entry of a queue is. */
typedef enum pq_kind {
	PQ_MSG,			/* a regular file named by a valid queue ID */
	PQ_TMP,			/* a writer's temporary file (tmp.*) */
	PQ_STRAY_FILE,		/* any other regular file */
	PQ_STRAY_DIR,		/* a directory that is not a hash level */
	PQ_OTHER,		/* symlink, fifo, socket, device */
} pq_kind_t;

typedef struct pq_dirent {
	const char *queue;
	const char *path;	/* queue_directory/QUEUE/[H1/...]NAME */
	const char *name;
	int depth;		/* hash levels above it (0..QUEUE_HASH_MAX_DEPTH) */
	const struct stat *st;	/* lstat */
	pq_kind_t kind;
} pq_dirent_t;

/* Calls fn for every entry of queue, descending into hash
 * subdirectories (one character of the queue ID alphabet) up to
 * QUEUE_HASH_MAX_DEPTH levels, whatever the configured depth.  A
 * non-zero return from fn stops the walk with it.  A missing queue
 * directory is empty.  Returns 0, fn's value, or -1 with err. */
typedef int (*pq_walk_fn)(const pq_dirent_t *d, void *ctx);
int pq_walk(const queue_layout_t *ql, const char *queue, pq_walk_fn fn,
    void *ctx, str_t *err);

typedef struct pq_file {
	const char *queue;	/* static queue name */
	char id[QUEUE_ID_SIZE];
	char *path;
} pq_file_t;

typedef struct pq_files {
	pq_file_t *v;
	size_t n, cap;
} pq_files_t;

#define PQ_FILES_INIT { NULL, 0, 0 }

/* Appends the messages of queue, sorted by ID (arrival order).  0, or -1
 * with err. */
int pq_collect(const queue_layout_t *ql, const char *queue, pq_files_t *out,
    str_t *err);
void pq_files_free(pq_files_t *f);

/* The queues a listing shows, in order: maildrop incoming active deferred
 * hold. */
extern const char *const pq_list_queues[];

/* ---- One message (pq_msg.c) --------------------------------------------- */

typedef struct pq_msg {
	const char *queue;
	char id[QUEUE_ID_SIZE];
	qfile_t *qf;
	str_t error;		/* why it cannot be shown (damaged...) */
	uint64_t size;
	struct timeval arrival;
	const char *sender;	/* "" = null sender */
	unsigned long attempts;
	time_t next_retry;	/* deferred: the file time; else 0 */
	htable_t *reasons;	/* defer log: recipient offset -> reason */
	qf_rcpt_batch_t batch;
	size_t bpos;
	bool rcpt_error;
} pq_msg_t;

/* Opens f for display.  0: ready; 1: cannot be shown (m->error says
 * why: damaged, unreadable); -1: gone (moved or removed meanwhile:
 * skip it).  pq_msg_close in every case. */
int pq_msg_open(const queue_layout_t *ql, const pq_file_t *f, pq_msg_t *m);
/* The next recipient not yet done: 1 with *addr and *reason (NULL when
 * the defer log has none for it), 0 at the end, -1 on a read error
 * (m->error). */
int pq_msg_next_rcpt(pq_msg_t *m, const char **addr, const char **reason);
void pq_msg_close(pq_msg_t *m);

/* ---- Output helpers (pq_json.c) ----------------------------------------- */

/* Appends s as a JSON string: UTF-8 kept, control characters and
 * invalid bytes escaped (\u00XX for a byte that is not UTF-8). */
void pq_json_str(str_t *out, const char *s);
/* Appends an attribute message as a JSON object: integers as numbers,
 * the integers named in flags_names as true/false, the strings named in
 * num_names as numbers (when they are numbers), lists as arrays of
 * objects. */
void pq_json_attr(str_t *out, const attr_msg_t *m);
/* "Sun Nov 22 10:00:00" (local time). */
const char *pq_time_text(time_t t, char buf[64]);

/* ---- The queue listing (pq_list.c) ---------------------------------------- */

enum { PQ_LIST_JSON = 1 };

/* Appends one message in the mailq layout or as one JSON line. */
void pq_msg_text(str_t *out, pq_msg_t *m);
void pq_msg_json(str_t *out, pq_msg_t *m);
/* Lists every queue of pq_list_queues to out (flushed as it goes).
 * Returns 0, or -1 with err (a queue directory that cannot be read:
 * errno EACCES for a user without access). */
int pq_list(const queue_layout_t *ql, FILE *out, int flags, str_t *err);

/* ---- Queue shape (pq_shape.c) ------------------------------------------- */

typedef struct pq_shape_opts {
	int buckets;		/* columns, >= 2 (default 10) */
	int minutes;		/* first bucket's limit (default 5) */
	bool by_sender;		/* sender domains, not recipient domains */
	bool json;
	time_t now;
	const char *const *queues;	/* NULL: incoming active deferred hold */
} pq_shape_opts_t;

void pq_shape_defaults(pq_shape_opts_t *o);
int pq_shape(const queue_layout_t *ql, const pq_shape_opts_t *o, FILE *out,
    str_t *err);

/* ---- qmgr's views (pq_sched.c) ------------------------------------------ */

/* postq -S and postq -D from a control-channel reply. */
void pq_sched_text(str_t *out, const attr_msg_t *status, bool verbose);
void pq_sched_json(str_t *out, const attr_msg_t *status);
void pq_dsc_text(str_t *out, const attr_msg_t *reply);
void pq_dsc_json(str_t *out, const attr_msg_t *reply);

/* ---- Flushing (pq_flush.c) ---------------------------------------------- */

/* Sends trigger bytes to the qmgr service of master.cf in config_dir.
 * 0, or -1 with err. */
int pq_qmgr_trigger(const char *config_dir, const char *bytes, str_t *err);
/* Makes every deferred message with a recipient for site (its domain,
 * or the nexthop the resolver gives) due now.  Returns how many, or -1
 * with err. */
long pq_flush_site(const queue_layout_t *ql, const char *site, str_t *err);
/* Makes one message eligible now (postq -i): 0, or -1 with err. *queue
 * gets where it was. */
int pq_flush_id(const queue_layout_t *ql, const char *id, const char **queue,
    str_t *err);

/* ---- postsuper's message actions (pq_admin.c) ---------------------------- */

typedef struct pq_admin pq_admin_t;

typedef struct pq_admin_stats {
	unsigned long done;		/* carried out (and logged) */
	unsigned long nothing;		/* nothing to do (already on hold...) */
	unsigned long missing;		/* not in the selected queues */
	unsigned long gone;		/* left the queue meanwhile */
	unsigned long pending;		/* qmgr does it when deliveries end */
	unsigned long errors;
	bool released_deferred;		/* deferred/ got messages: tell qmgr */
	bool requeued_incoming;		/* incoming/ got messages */
} pq_admin_stats_t;

/* hold incoming active deferred (-d, -r); incoming active deferred (-h);
 * hold (-H). */
const char *const *pq_admin_default_queues(qmgr_clnt_action_t act);
/* An action on messages in queues (NULL: the default queues); wait:
 * seconds qmgr may take for messages being delivered. */
pq_admin_t *pq_admin_new(const queue_layout_t *ql, qmgr_clnt_action_t act,
    const char *const *queues, int wait);
/* One queue ID (acted on now, or collected for qmgr). */
void pq_admin_id(pq_admin_t *a, const char *id);
/* Every message in the queues.  -1 with err when a queue cannot be
 * read. */
int pq_admin_all(pq_admin_t *a, str_t *err);
/* Sends what is collected for qmgr and returns the counts. */
void pq_admin_finish(pq_admin_t *a, pq_admin_stats_t *st);
void pq_admin_free(pq_admin_t *a);

/* ---- postsuper -s and -p (pq_repair.c) ------------------------------------ */

typedef struct pq_repair_stats {
	unsigned long dirs_created;
	unsigned long moved;		/* to the right hash directory */
	unsigned long renamed;		/* new ID matching the inode */
	unsigned long to_corrupt;	/* stray files moved to corrupt/ */
	unsigned long left;		/* problems reported, not fixed */
	unsigned long purged;		/* stale temporary files removed */
} pq_repair_stats_t;

/* Checks and repairs the queue tree: missing queue directories created;
 * a message file in the wrong hash directory moved to where the layout
 * puts it; a message whose name does not match its inode (restored,
 * copied) renamed to a new ID (same time part, its inode), its status
 * logs too; anything else that is not a message, a status log or a
 * temporary file moved to corrupt/ (never deleted).  skip_active: leave
 * active/ alone (qmgr runs and owns it).  Every change is logged.
 * 0, or -1 with err (a directory that cannot be read). */
int pq_structure(const queue_layout_t *ql, bool skip_active,
    pq_repair_stats_t *st, str_t *err);
/* Removes stale temporary files (qfile_tmp_is_stale: no live writer,
 * not modified for min_age seconds) from every queue. */
int pq_purge(const queue_layout_t *ql, time_t min_age, pq_repair_stats_t *st,
    str_t *err);

/* ---- Logging of the administration commands (pq_auth.c) ------------------ */

/* Logs to maillog_file (or syslog) with errors and warnings copied to
 * stderr; the one-line-per-message records ("QUEUEID: removed") only
 * when echo_actions. */
void pq_log_setup(bool echo_actions);
void pq_log_action(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- Permissions (pq_auth.c) --------------------------------------------- */

/* Is uid in the list of parameter param (authorized_mailq_users,
 * authorized_flush_users): names, type:table lookups, !negation, first
 * match wins, root always.  1 yes, 0 no (why says so), -1 table error. */
int pq_user_allowed(const char *param, uid_t uid, str_t *why);

#endif
