/* qmgr: the active queue.  Crash recovery at start, the incoming and
 * deferred scans, moving messages into active/ within
 * qmgr_message_active_limit (alternating between new and deferred mail),
 * and the congestion warning. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include "file.h"
#include "log.h"
#include "qmgr_int.h"

int qmgr_move(const char *from, const char *to, const char *id, bool sync)
{
	str_t src = STR_INIT, dst = STR_INIT, err = STR_INIT;
	int rc = -1, saved;

	if (sync)
		goto slow;
	/* Moves between incoming and active need no directory fsync: after
	 * a crash the file is in one or the other, and both are recovered.
	 * One rename() from where the layout puts it; a miss (a file from
	 * before a change of hash_queue_depth, or a missing hashed
	 * subdirectory) takes the slow way. */
	queue_path(&Q.ql, from, id, &src);
	queue_path(&Q.ql, to, id, &dst);
	if (rename(str_cstr(&src), str_cstr(&dst)) == 0) {
		rc = 0;
		goto out;
	}
	if (errno != ENOENT)
		goto out;
	/* A hashed subdirectory of the target may be missing. */
slow:
	rc = queue_move(&Q.ql, from, to, id, &err);
out:
	saved = errno;
	if (rc < 0 && saved != ENOENT)
		log_warning("%s: move from %s to %s: %s", id, from, to,
		    str_len(&err) ? str_cstr(&err) : strerror(saved));
	str_release(&src);
	str_release(&dst);
	str_release(&err);
	errno = saved;
	return rc;
}

/* Everything left in active/ belonged to a qmgr that died: back to
 * incoming, where the normal scan finds it.  Recipients marked done stay
 * done; the batch that was in flight may be delivered again (at least
 * once, never lost). */
void qmgr_active_recover(void)
{
	qmgr_scan_t sc;
	char id[QUEUE_ID_SIZE];
	unsigned long n = 0, failed = 0;
	str_t dir = STR_INIT;

	qmgr_scan_init(&sc, Q.ql.dir, QUEUE_ACTIVE);
	qmgr_scan_request(&sc, false);
	while (qmgr_scan_next(&sc, id)) {
		if (qmgr_move(QUEUE_ACTIVE, QUEUE_INCOMING, id, false) == 0)
			n++;
		else if (errno != ENOENT)
			failed++;
	}
	qmgr_scan_free(&sc);
	if (n > 0) {
		/* One directory sync for the whole batch of renames. */
		str_setf(&dir, "%s/%s", Q.ql.dir, QUEUE_INCOMING);
		(void)file_fsync_dir(str_cstr(&dir));
		str_setf(&dir, "%s/%s", Q.ql.dir, QUEUE_ACTIVE);
		(void)file_fsync_dir(str_cstr(&dir));
		log_info("recovered %lu message%s left in the active queue",
		    n, n == 1 ? "" : "s");
	}
	if (failed > 0)
		log_warning("%lu message%s could not be moved out of the active "
		    "queue", failed, failed == 1 ? "" : "s");
	str_release(&dir);
}

void qmgr_scan_incoming(void)
{
	qmgr_scan_request(&Q.incoming, false);
}

void qmgr_scan_deferred(bool all)
{
	qmgr_scan_request(&Q.deferred, all);
}

/* Is a deferred file due?  Its modification time is its retry time. */
static bool due(const char *path, double now)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return false;		/* gone: someone else took it */
	return (double)st.st_mtime <= now;
}

/* Moves messages into the active queue while there is room: one from
 * incoming, then one due from deferred, and so on (new mail is never
 * stuck behind a backlog, old mail never starves).  Bounded work per
 * call; the pump calls again while scans have more. */
void qmgr_active_feed(void)
{
	int moved = 0, looked = 0;
	double now = qmgr_now(), until = now + QMGR_FEED_TIME;
	char id[QUEUE_ID_SIZE];

	/* A bounded share of the round: replies from agents (and the
	 * deliveries they make possible) must not wait behind a backlog. */
	while (Q.active < Q.active_limit && moved < QMGR_FEED_BATCH
	    && looked < QMGR_SCAN_BATCH && (moved % 8 || qmgr_now() < until)) {
		bool inc = qmgr_scan_running(&Q.incoming);
		bool def = qmgr_scan_running(&Q.deferred);
		const char *from;

		if (!inc && !def)
			break;
		if (def && (!inc || Q.take_deferred)) {
			if (!qmgr_scan_next(&Q.deferred, id))
				continue;
			looked++;
			if (!Q.deferred.flag && !due(str_cstr(&Q.deferred.path), now))
				continue;
			Q.take_deferred = false;
			from = QUEUE_DEFERRED;
		} else {
			if (!qmgr_scan_next(&Q.incoming, id))
				continue;
			looked++;
			Q.take_deferred = true;
			from = QUEUE_INCOMING;
		}
		if (qmgr_move(from, QUEUE_ACTIVE, id, false) < 0)
			continue;
		moved++;
		qmgr_msg_load(id);
	}
	if (Q.active < Q.active_limit && (qmgr_scan_running(&Q.incoming)
	    || qmgr_scan_running(&Q.deferred)))
		qmgr_kick();
}

typedef struct top_queue {
	const char *transport, *nexthop;
	size_t entries;
	size_t total;
} top_queue_t;

static void find_top(const sched_queue_info_t *qi, void *ctx)
{
	top_queue_t *t = ctx;
	size_t n = qi->todo_entries + qi->busy_entries;

	t->total += n;
	if (n > t->entries) {
		t->entries = n;
		t->transport = qi->transport;
		t->nexthop = qi->nexthop;
	}
}

/* The active queue is full and mail is waiting: say so, at most once per
 * qmgr_clog_warn_time, naming the destination that holds the most. */
void qmgr_active_clog_check(double now)
{
	top_queue_t top = { NULL, NULL, 0, 0 };

	if (Q.clog_warn_time <= 0 || Q.active < Q.active_limit)
		return;
	if (!qmgr_scan_running(&Q.incoming) && !qmgr_scan_running(&Q.deferred))
		return;
	if (Q.last_clog_warn > 0 && now - Q.last_clog_warn < (double)Q.clog_warn_time)
		return;
	Q.last_clog_warn = now;
	sched_walk_queues(Q.s, NULL, find_top, &top);
	if (top.transport != NULL)
		log_warning("active queue congested: %ld of %ld messages "
		    "(qmgr_message_active_limit), more mail waiting; mail for "
		    "%s:%s holds %zu of %zu pending deliveries", Q.active,
		    Q.active_limit, top.transport, top.nexthop, top.entries,
		    top.total);
	else
		log_warning("active queue congested: %ld of %ld messages "
		    "(qmgr_message_active_limit), more mail waiting", Q.active,
		    Q.active_limit);
}
