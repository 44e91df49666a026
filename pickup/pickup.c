/* pickup: move locally submitted mail from maildrop/ to cleanup.
 *
 * A trigger daemon under master(8) (conf/master.cf: wakeup 60, maxproc
 * 1).  Each trigger (postdrop's after a submission, master's wakeup)
 * makes it scan maildrop/: every file named by a valid queue ID is read
 * and checked as a queue file; a damaged or unreadable one is moved to
 * corrupt/ with a log line; a good one is sent to cleanup with the
 * client library and removed only after cleanup replied that the queue
 * file is committed.  A temporary failure leaves the file for the next
 * scan; a permanent rejection (which postdrop's own checks make rare)
 * moves it to corrupt/ with cleanup's reason, so that it is neither lost
 * nor retried for ever.  See pickup(8) and doc/submission.md. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cleanup_clnt.h"
#include "content_filter.h"
#include "file.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "submit.h"
#include "qfile.h"
#include "queue_path.h"
#include "server.h"
#include "str.h"

/* A temporary file in maildrop/ that no live postdrop holds (its lock
 * died with it) and that is this old was left by a postdrop that was
 * killed, or by a crash that lost its rename: see tmp_file(). */
#define STALE_TMP_AGE	300
/* Recipients read from a maildrop file at a time. */
#define RCPT_BATCH	100

static queue_layout_t ql;
/* content_filter and receive_override_options (doc/content-filter.md),
 * passed on to cleanup with each message. */
static char *content_filter;
static int cleanup_flags;

/* One maildrop file found by a scan. */
typedef struct entry {
	char *path;		/* relative to queue_directory */
	char id[QUEUE_ID_SIZE];
} entry_t;

typedef struct scan {
	entry_t *v;
	size_t n, cap;
} scan_t;

/* What became of one file. */
enum result {
	R_DONE,			/* queued (removed), moved, or gone */
	R_KEEP,			/* temporary failure: try again next scan */
	R_STOP,			/* cleanup is unreachable: end this scan */
};

static void scan_add(scan_t *s, const char *path, const char *id)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
	}
	s->v[s->n].path = xstrdup(path);
	bcopy_str(s->v[s->n].id, sizeof(s->v[s->n].id), id);
	s->n++;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const entry_t *)a)->id, ((const entry_t *)b)->id);
}

/* A stale temporary file at path: complete (a crash lost the rename of a
 * committed file, or postdrop died between its fsync and its rename):
 * give it its queue ID and pick it up; incomplete (postdrop died while
 * writing, its sendmail reported the failure): remove it. */
static void tmp_file(const char *path, scan_t *s)
{
	qf_err_t err;
	qfile_t *qf;
	struct stat st;
	struct timeval tv;
	char id[QUEUE_ID_SIZE];
	str_t target = STR_INIT, dir = STR_INIT;

	/* The age first: qfile_tmp_is_stale() tries a lock, and a writer
	 * that created the file a moment ago and has not locked it yet would
	 * then fail to lock it (postdrop refuses the message).  A file being
	 * written is young or locked. */
	if (lstat(path, &st) < 0 || time(NULL) - st.st_mtime < STALE_TMP_AGE)
		return;
	if (qfile_tmp_is_stale(path, STALE_TMP_AGE) != 1)
		return;
	if ((qf = qfile_open_path(path, 0, &err)) == NULL) {
		if (!err.damaged)
			return;
		if (unlink(path) == 0)
			log_warning("removed %s: an incomplete file left by a "
			    "postdrop that did not finish (%s)", path, err.reason);
		return;
	}
	if (fstat(qfile_fd(qf), &st) == 0) {
		qfile_arrival(qf, &tv);
		queue_id_make(id, &tv, st.st_ino);
		queue_dir_path(&ql, QUEUE_MAILDROP, id, &dir);
		str_setf(&target, "%s/%s", str_cstr(&dir), id);
		/* Never over another file; rename() would replace it. */
		if (lstat(str_cstr(&target), &st) < 0 && errno == ENOENT &&
		    file_mkdirs(str_cstr(&dir), 0700) == 0 &&
		    rename(path, str_cstr(&target)) == 0) {
			log_warning("%s: recovered %s, a complete maildrop file "
			    "that had lost its rename", id, path);
			scan_add(s, str_cstr(&target), id);
		}
	}
	qfile_close(qf);
	str_release(&target);
	str_release(&dir);
}

/* Collects queue files under dir (maildrop/, and its one-letter hash
 * subdirectories when maildrop is or was hashed); removes stale
 * temporary files at the top. */
static void scan_dir(const char *dir, int depth, scan_t *s)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	str_t path = STR_INIT;

	if (d == NULL) {
		log_warning("cannot scan %s: %s", dir, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL) {
		const char *name = de->d_name;
		struct stat st;

		if (name[0] == '.')
			continue;
		str_setf(&path, "%s/%s", dir, name);
		if (queue_id_valid(name)) {
			scan_add(s, str_cstr(&path), name);
		} else if (depth < QUEUE_HASH_MAX_DEPTH && name[1] == 0 &&
		    lstat(str_cstr(&path), &st) == 0 && S_ISDIR(st.st_mode)) {
			scan_dir(str_cstr(&path), depth + 1, s);
		} else if (depth == 0 && qfile_tmp_name(name)) {
			tmp_file(str_cstr(&path), s);
		}
	}
	closedir(d);
	str_release(&path);
}

/* Parks a file that cleanup refused for good. */
static void park_rejected(const char *id, const char *why)
{
	str_t err = STR_INIT, where = STR_INIT;

	/* queue_move would replace a file of that name: never do that. */
	if (queue_find(&ql, QUEUE_CORRUPT, id, &where) == 0) {
		str_setf(&err, "rejected by cleanup: %s", why);
		qfile_move_corrupt(&ql, QUEUE_MAILDROP, id, str_cstr(&err));
	} else if (queue_move(&ql, QUEUE_MAILDROP, QUEUE_CORRUPT, id, &err) < 0)
		log_warning("%s: cannot move to %s/: %s; it stays in %s/", id,
		    QUEUE_CORRUPT, str_cstr(&err), QUEUE_MAILDROP);
	else
		log_warning("%s: rejected by cleanup: %s; moved to %s/", id, why,
		    QUEUE_CORRUPT);
	str_release(&err);
	str_release(&where);
}

static bool transient_errno(int e)
{
	return e == EIO || e == EMFILE || e == ENFILE || e == ENOMEM ||
	    e == EINTR || e == EAGAIN || e == ENOBUFS;
}

/* The connection to cleanup, kept for the whole scan. */
static cleanup_clnt_t *cln;

static void drop_cleanup(void)
{
	if (cln) {
		cleanup_clnt_close(cln);
		cln = NULL;
	}
}

static enum result pickup_file(const entry_t *e)
{
	qf_err_t qerr;
	qfile_t *qf;
	struct stat st;
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	cleanup_reply_t reply;
	qf_rcpt_batch_t batch = { 0 };
	str_t line = STR_INIT, ident = STR_INIT, err = STR_INIT;
	struct timeval tv;
	const char *s;
	long n;
	int r;
	enum result res = R_DONE;

	if (lstat(e->path, &st) < 0) {
		if (errno != ENOENT)
			log_warning("%s: %s", e->path, strerror(errno));
		return errno == ENOENT ? R_DONE : R_KEEP;
	}
	if (!S_ISREG(st.st_mode)) {
		qfile_move_corrupt(&ql, QUEUE_MAILDROP, e->id,
		    "not a regular file");
		return R_DONE;
	}
	if ((qf = qfile_open_path(e->path, 0, &qerr)) == NULL) {
		if (qerr.damaged) {
			qfile_move_damaged(&ql, QUEUE_MAILDROP, e->id, &qerr);
			return R_DONE;
		}
		if (qerr.errnum == ENOENT)
			return R_DONE;
		if (transient_errno(qerr.errnum)) {
			log_warning("%s: %s; will try again", e->id, qerr.reason);
			return R_KEEP;
		}
		/* Unreadable for good (permissions, a link): it would block
		 * nothing but would be retried for ever. */
		qfile_move_corrupt(&ql, QUEUE_MAILDROP, e->id, qerr.reason);
		return R_DONE;
	}
	if (fstat(qfile_fd(qf), &st) < 0) {
		log_warning("%s: fstat: %s", e->id, strerror(errno));
		qfile_close(qf);
		return R_KEEP;
	}

	/* The owner of the file is who ran postdrop; the recorded uid is
	 * only a cross-check. */
	if ((s = qfile_attr(qf, MAILDROP_A_UID)) != NULL &&
	    strtol(s, NULL, 10) != (long)st.st_uid)
		log_warning("%s: file owner uid %ld differs from the recorded "
		    "uid %s; using the owner", e->id, (long)st.st_uid, s);
	env.sender = qfile_sender(qf);
	env.uid = st.st_uid;
	s = qfile_attr(qf, MAILDROP_A_EXTRACT);
	env.flags = s && strcmp(s, "yes") == 0 ? CLEANUP_FLAG_EXTRACT : 0;
	/* "ID: uid=N from=<sender>" is ours to log, as Postfix's pickup
	 * does: cleanup gives us the ID at once. */
	env.flags |= CLEANUP_FLAG_QUEUE_ID | cleanup_flags;
	env.content_filter = content_filter;
	env.envid = qfile_envid(qf);
	env.ret = qfile_ret(qf) == QF_RET_FULL ? 1 :
	    qfile_ret(qf) == QF_RET_HDRS ? 2 : 0;
	env.full_name = qfile_attr(qf, MAILDROP_A_FULL_NAME);
	qfile_arrival(qf, &tv);
	env.arrival_us = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
	str_setf(&ident, "pickup %s/%s", QUEUE_MAILDROP, e->id);
	env.log_ident = str_cstr(&ident);

	if (cln == NULL && (cln = cleanup_clnt_connect(CLEANUP_SERVICE,
	    (int)pconfig_get_time("ipc_timeout") * 1000, &err)) == NULL) {
		log_warning("cannot connect to cleanup: %s; mail stays in %s/ "
		    "until the next scan", str_cstr(&err), QUEUE_MAILDROP);
		res = R_STOP;
		goto out;
	}
	cleanup_clnt_send_envelope(cln, &env);
	while ((n = qfile_rcpt_read(qf, &batch, RCPT_BATCH, 0)) > 0)
		for (long i = 0; i < n; i++) {
			const qf_rcpt_t *rc = &batch.rcpt[i];
			cleanup_clnt_send_rcpt(cln, str_cstr(&rc->address),
			    str_len(&rc->orcpt) ? str_cstr(&rc->orcpt) : NULL,
			    rc->notify);
		}
	if (n < 0)
		goto damaged;
	qfile_content_rewind(qf);
	while ((r = qfile_read_line(qf, &line, CLEANUP_CHUNK)) > 0) {
		cleanup_clnt_write(cln, str_cstr(&line), str_len(&line));
		if (r == QF_LINE_LF)
			cleanup_clnt_write(cln, "\n", 1);
		else if (r == QF_LINE_CRLF)
			cleanup_clnt_write(cln, "\r\n", 2);
	}
	if (r < 0)
		goto damaged;
	/* Before the end, so before cleanup can commit it and qmgr log
	 * about it. */
	{
		char qid[QUEUE_ID_SIZE];
		if (cleanup_clnt_queue_id(cln, qid) == 0)
			log_info("%s: uid=%ld from=<%s>", qid, (long)st.st_uid,
			    env.sender);
	}
	cleanup_clnt_finish(cln, &reply);
	switch (reply.status) {
	case CLEANUP_STAT_OK:
		/* Committed in incoming/: only now may the file go. */
		if (unlink(e->path) < 0 && errno != ENOENT)
			log_warning("%s: queued as %s, but cannot remove %s: %s "
			    "(it will be queued again)", e->id, reply.queue_id,
			    e->path, strerror(errno));
		log_debug("%s: queued as %s", e->id, reply.queue_id);
		break;
	case CLEANUP_STAT_PERM: {
		str_t why = STR_INIT;
		str_setf(&why, "%s %s", reply.dsn, reply.text);
		park_rejected(e->id, str_cstr(&why));
		str_release(&why);
		break;
	}
	default:
		log_warning("%s: not queued: %s %s; it stays in %s/", e->id,
		    reply.dsn, reply.text, QUEUE_MAILDROP);
		res = R_KEEP;
		/* A broken connection means cleanup went away: stop here
		 * rather than fail every other file the same way. */
		if (cleanup_clnt_error(cln) != NULL) {
			drop_cleanup();
			res = R_STOP;
		}
	}
	goto out;

damaged:
	/* The file changed under us (it was valid when opened). */
	cleanup_clnt_abort(cln, NULL);
	if (qfile_error(qf)->damaged)
		qfile_move_damaged(&ql, QUEUE_MAILDROP, e->id, qfile_error(qf));
	else {
		log_warning("%s: %s; will try again", e->id,
		    qfile_error(qf)->reason);
		res = R_KEEP;
	}
out:
	if (cln && cleanup_clnt_error(cln) != NULL)
		drop_cleanup();
	qf_rcpt_batch_free(&batch);
	qfile_close(qf);
	str_release(&line);
	str_release(&ident);
	str_release(&err);
	return res;
}

static void scan_maildrop(void)
{
	scan_t s = { 0 };
	str_t dir = STR_INIT;
	size_t done = 0;

	str_setf(&dir, "%s", QUEUE_MAILDROP);
	scan_dir(str_cstr(&dir), 0, &s);
	/* Oldest first: the IDs sort by arrival. */
	if (s.n > 1)
		qsort(s.v, s.n, sizeof(*s.v), entry_cmp);
	for (size_t i = 0; i < s.n; i++) {
		enum result r = pickup_file(&s.v[i]);
		server_watchdog_pet();
		if (r == R_DONE)
			done++;
		if (r == R_STOP)
			break;
	}
	drop_cleanup();
	if (s.n > 0)
		log_debug("scan of %s: %zu files, %zu done", QUEUE_MAILDROP,
		    s.n, done);
	for (size_t i = 0; i < s.n; i++)
		free(s.v[i].path);
	free(s.v);
	str_release(&dir);
}

static void on_trigger(const char *buf, size_t len, void *ctx)
{
	(void)buf;
	(void)len;
	(void)ctx;
	/* Every trigger means the same: look at maildrop/. */
	scan_maildrop();
}

/* The parameters pickup passes on to cleanup: -1 with err for a bad
 * one (also petrel check's test of the service, -C). */
static int load_filter(void *ctx, str_t *err)
{
	const char *f = pconfig_get_str("content_filter");
	int bits;
	str_t why = STR_INIT;

	(void)ctx;
	if (recv_override_parse(pconfig_get_str("receive_override_options"),
	    &bits, err) < 0)
		return -1;
	if (*f != '\0' && !filter_valid(f, &why)) {
		str_setf(err, "content_filter = %.100s: %s", f, str_cstr(&why));
		str_release(&why);
		return -1;
	}
	str_release(&why);
	free(content_filter);
	content_filter = *f != '\0' ? xstrdup(f) : NULL;
	cleanup_flags = filter_cleanup_flags(bits);
	return 0;
}

static void init(void *ctx)
{
	str_t err = STR_INIT;

	(void)ctx;
	if (queue_layout_here(&ql, &err) < 0 || load_filter(NULL, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	str_release(&err);
}

static void fini(void *ctx)
{
	(void)ctx;
	queue_layout_free(&ql);
}

int main(int argc, char **argv)
{
	server_spec_t spec = {
		.model = SERVER_TRIGGER,
		.post_jail = init,
		.trigger = on_trigger,
		.pre_exit = fini,
		.check = load_filter,
	};

	server_main(argc, argv, &spec);
}
