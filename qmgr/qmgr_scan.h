/* Incremental scans of a queue directory for the queue manager.
 *
 * A scan walks queue_directory/QUEUE and its hashed subdirectories (one
 * character names, up to QUEUE_HASH_MAX_DEPTH levels, whatever the
 * configured depth: a changed hash_queue_depth must not hide mail) and
 * hands out the names that are valid queue IDs, one per call, so that
 * the caller can bound the work done per event-loop round.  Temporary
 * files (tmp.*) and anything else are skipped.
 *
 * A scan requested while one runs sets "again": when the walk ends it
 * starts over once, so mail that arrived in a directory the walk had
 * already passed is not left behind until the next request. */
#ifndef PETREL_QMGR_SCAN_H
#define PETREL_QMGR_SCAN_H
#include <dirent.h>
#include <stdbool.h>
#include "queue_id.h"
#include "queue_path.h"
#include "str.h"

typedef struct qmgr_scan {
	char *dir;			/* queue_directory/QUEUE */
	DIR *level[QUEUE_HASH_MAX_DEPTH + 1];
	size_t plen[QUEUE_HASH_MAX_DEPTH + 1];	/* path length per level */
	int depth;			/* open levels; 0: not running */
	bool again;			/* restart once the walk ends */
	bool flag, again_flag;		/* the caller's (e.g. "ignore retry
					 * time"), for this walk and the next */
	str_t path;			/* of the last name handed out */
	unsigned long found;		/* names handed out in this walk */
} qmgr_scan_t;

void qmgr_scan_init(qmgr_scan_t *sc, const char *queue_dir, const char *queue);
void qmgr_scan_free(qmgr_scan_t *sc);
/* Requests a walk.  flag is kept for the walk; when one runs, it also
 * applies to the rest of it and to the walk after it (flags of several
 * requests are or'ed). */
void qmgr_scan_request(qmgr_scan_t *sc, bool flag);
bool qmgr_scan_running(const qmgr_scan_t *sc);
/* The next queue ID into id, its path in sc->path; false when the walk
 * is over (a pending "again" starts the next walk at once, so false
 * means no walk is left to do). */
bool qmgr_scan_next(qmgr_scan_t *sc, char id[QUEUE_ID_SIZE]);

#endif
