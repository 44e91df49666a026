/* postsuper's own modules: acting on messages by queue ID or on whole
 * queues (super_admin.c), checking and repairing the queue tree and
 * purging stale temporary files (super_repair.c), and the logging of
 * what it did (super_log.c).  The queues are read with queue_walk.h;
 * messages being delivered are left to qmgr over its control channel.
 * postsuper(1) and doc/postq.md describe the commands. */
#ifndef PETREL_POSTSUPER_SUPER_H
#define PETREL_POSTSUPER_SUPER_H
#include <stdbool.h>
#include <time.h>
#include "qmgr_clnt.h"
#include "queue_path.h"
#include "str.h"

/* ---- Message actions (super_admin.c) ------------------------------------ */

typedef struct super_admin super_admin_t;

typedef struct super_admin_stats {
	unsigned long done;		/* carried out (and logged) */
	unsigned long nothing;		/* nothing to do (already on hold...) */
	unsigned long missing;		/* not in the selected queues */
	unsigned long gone;		/* left the queue meanwhile */
	unsigned long pending;		/* qmgr does it when deliveries end */
	unsigned long errors;
	bool released_deferred;		/* deferred/ got messages: tell qmgr */
	bool requeued_incoming;		/* incoming/ got messages */
} super_admin_stats_t;

/* hold incoming active deferred (-d, -r); incoming active deferred (-h);
 * hold (-H). */
const char *const *super_admin_default_queues(qmgr_clnt_action_t act);
/* An action on messages in queues (NULL: the default queues); wait:
 * seconds qmgr may take for messages being delivered. */
super_admin_t *super_admin_new(const queue_layout_t *ql, qmgr_clnt_action_t act,
    const char *const *queues, int wait);
/* One queue ID (acted on now, or collected for qmgr). */
void super_admin_id(super_admin_t *a, const char *id);
/* Every message in the queues.  -1 with err when a queue cannot be
 * read. */
int super_admin_all(super_admin_t *a, str_t *err);
/* Sends what is collected for qmgr and returns the counts. */
void super_admin_finish(super_admin_t *a, super_admin_stats_t *st);
void super_admin_free(super_admin_t *a);

/* ---- postsuper -s and -p (super_repair.c) ------------------------------- */

typedef struct super_repair_stats {
	unsigned long dirs_created;
	unsigned long moved;		/* to the right hash directory */
	unsigned long renamed;		/* new ID matching the inode */
	unsigned long to_corrupt;	/* stray files moved to corrupt/ */
	unsigned long left;		/* problems reported, not fixed */
	unsigned long purged;		/* stale temporary files removed */
} super_repair_stats_t;

/* Checks and repairs the queue tree: missing queue directories created;
 * a message file in the wrong hash directory moved to where the layout
 * puts it; a message whose name does not match its inode (restored,
 * copied) renamed to a new ID (same time part, its inode), its status
 * logs too; anything else that is not a message, a status log or a
 * temporary file moved to corrupt/ (never deleted).  skip_active: leave
 * active/ alone (qmgr runs and owns it).  Every change is logged.
 * 0, or -1 with err (a directory that cannot be read). */
int super_repair_structure(const queue_layout_t *ql, bool skip_active,
    super_repair_stats_t *st, str_t *err);
/* Removes stale temporary files (qfile_tmp_is_stale: no live writer,
 * not modified for min_age seconds) from every queue. */
int super_repair_purge(const queue_layout_t *ql, time_t min_age,
    super_repair_stats_t *st, str_t *err);

/* ---- Logging (super_log.c) --------------------------------------------- */

/* Logs to maillog_file (or syslog) with errors and warnings copied to
 * stderr; the one-line-per-message records ("QUEUEID: removed") only
 * when echo_actions. */
void super_log_setup(bool echo_actions);
void super_log_action(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

#endif
