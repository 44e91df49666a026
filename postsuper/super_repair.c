/* libpostq: postsuper -s (structure check and repair) and -p (purge stale
 * temporary files).  Nothing is ever deleted here except temporary files
 * no writer holds; whatever does not belong goes to corrupt/. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "pconfig.h"
#include "qfile.h"
#include "queue_walk.h"
#include "super.h"

static bool is_log_queue(const char *q)
{
	return strcmp(q, QUEUE_DEFER) == 0 || strcmp(q, QUEUE_BOUNCE) == 0
	    || strcmp(q, QUEUE_TRACE) == 0;
}

static void dir_of(const char *path, str_t *out)
{
	const char *slash = strrchr(path, '/');

	str_setf(out, "%.*s", slash ? (int)(slash - path) : 1,
	    slash ? path : ".");
}

/* Renames from to to, making to's directory first and both durable.
 * Never replaces an existing file (EEXIST). */
static int move_file(const char *from, const char *to)
{
	str_t dir = STR_INIT;
	struct stat st;
	int rc = -1;

	if (lstat(to, &st) == 0) {
		errno = EEXIST;
		return -1;
	}
	dir_of(to, &dir);
	if (file_mkdirs(str_cstr(&dir), 0700) < 0)
		goto out;
	if (rename(from, to) < 0)
		goto out;
	(void)file_fsync_dir(str_cstr(&dir));
	(void)file_fsync_parent(from);
	rc = 0;
out:
	str_release(&dir);
	return rc;
}

typedef struct repair {
	const queue_layout_t *ql;
	super_repair_stats_t *st;
	str_t *err;
} repair_t;

/* Moves a file that is not a queue file into corrupt/, under its own
 * name (plus .1, .2, ... when taken). */
static void to_corrupt(repair_t *r, const queue_walk_ent_t *d, const char *why)
{
	str_t to = STR_INIT;
	int rc = -1;

	for (int i = 0; i < 1000; i++) {
		if (i == 0)
			str_setf(&to, "%s/%s/%s", r->ql->dir, QUEUE_CORRUPT, d->name);
		else
			str_setf(&to, "%s/%s/%s.%d", r->ql->dir, QUEUE_CORRUPT,
			    d->name, i);
		if ((rc = move_file(d->path, str_cstr(&to))) == 0 || errno != EEXIST)
			break;
	}
	if (rc == 0) {
		log_warning("%s: %s; moved to %s", d->path, why, str_cstr(&to));
		r->st->to_corrupt++;
	} else if (errno != ENOENT) {
		log_error("%s: %s; cannot move it to %s: %s", d->path, why,
		    QUEUE_CORRUPT, strerror(errno));
		r->st->left++;
	}
	str_release(&to);
}

/* A message whose name does not match its inode gets a new one: the
 * same time part, its own inode.  Its status logs follow it. */
static void rename_id(repair_t *r, const queue_walk_ent_t *d)
{
	char nid[QUEUE_ID_SIZE];
	struct timeval tv;
	str_t to = STR_INIT, from = STR_INIT;

	if (!queue_id_parse(d->name, &tv, NULL))
		return;
	queue_id_make(nid, &tv, d->st->st_ino);
	queue_path(r->ql, d->queue, nid, &to);
	if (move_file(d->path, str_cstr(&to)) < 0) {
		if (errno != ENOENT) {
			log_error("%s: cannot rename to %s: %s", d->path,
			    str_cstr(&to), strerror(errno));
			r->st->left++;
		}
		goto out;
	}
	log_warning("%s: renamed to %s in %s (the name did not match the "
	    "file's inode: a copied or restored file)", d->name, nid, d->queue);
	r->st->renamed++;
	for (int i = 0; queue_names[i] != NULL; i++) {
		if (!is_log_queue(queue_names[i])
		    || queue_find(r->ql, queue_names[i], d->name, &from) < 0)
			continue;
		queue_path(r->ql, queue_names[i], nid, &to);
		if (move_file(str_cstr(&from), str_cstr(&to)) < 0)
			log_error("%s: cannot rename its %s log to %s: %s", d->name,
			    queue_names[i], str_cstr(&to), strerror(errno));
	}
out:
	str_release(&to);
	str_release(&from);
}

static int repair_one(const queue_walk_ent_t *d, void *ctx)
{
	repair_t *r = ctx;
	str_t want = STR_INIT;

	if (strcmp(d->queue, QUEUE_CORRUPT) == 0)
		return 0;		/* anything may sit there */
	switch (d->kind) {
	case QUEUE_WALK_TMP:
		break;			/* postsuper -p */
	case QUEUE_WALK_STRAY_DIR:
		log_warning("%s: unexpected directory in the %s queue; left "
		    "alone", d->path, d->queue);
		r->st->left++;
		break;
	case QUEUE_WALK_OTHER:
		to_corrupt(r, d, "not a regular file");
		break;
	case QUEUE_WALK_STRAY_FILE:
		to_corrupt(r, d, is_log_queue(d->queue)
		    ? "not named by a queue ID" : "not a queue file name");
		break;
	case QUEUE_WALK_MSG:
		if (!is_log_queue(d->queue)
		    && !queue_id_matches_inode(d->name, d->st->st_ino)) {
			rename_id(r, d);
			break;
		}
		queue_path(r->ql, d->queue, d->name, &want);
		if (strcmp(str_cstr(&want), d->path) == 0)
			break;
		if (move_file(d->path, str_cstr(&want)) == 0) {
			log_warning("%s: moved to %s (hash_queue_names, "
			    "hash_queue_depth)", d->path, str_cstr(&want));
			r->st->moved++;
		} else if (errno == EEXIST) {
			to_corrupt(r, d, "a second file with this queue ID");
		} else if (errno != ENOENT) {
			log_error("%s: cannot move to %s: %s", d->path,
			    str_cstr(&want), strerror(errno));
			r->st->left++;
		}
		break;
	}
	str_release(&want);
	return 0;
}

/* As root, new directories belong to mail_owner (petrel check sets the
 * exact modes of a real installation). */
static void own(const char *path)
{
	struct passwd *pw;

	if (geteuid() != 0 ||
	    (pw = getpwnam(pconfig_get_str("mail_owner"))) == NULL)
		return;
	if (chown(path, pw->pw_uid, pw->pw_gid) < 0)
		log_warning("chown %s: %s", path, strerror(errno));
}

int super_repair_structure(const queue_layout_t *ql, bool skip_active,
    super_repair_stats_t *st, str_t *err)
{
	repair_t r = { ql, st, err };
	str_t p = STR_INIT;
	struct stat sb;
	int rc = 0;

	if (file_mkdirs(ql->dir, 0755) < 0) {
		str_setf(err, "%s: %s", ql->dir, strerror(errno));
		return -1;
	}
	for (int i = 0; queue_names[i] != NULL; i++) {
		str_setf(&p, "%s/%s", ql->dir, queue_names[i]);
		if (lstat(str_cstr(&p), &sb) == 0) {
			if (!S_ISDIR(sb.st_mode)) {
				log_error("%s is not a directory; fix it by hand",
				    str_cstr(&p));
				st->left++;
			}
			continue;
		}
		if (errno != ENOENT || mkdir(str_cstr(&p), 0700) < 0) {
			log_error("%s: %s", str_cstr(&p), strerror(errno));
			st->left++;
			continue;
		}
		own(str_cstr(&p));
		log_warning("created the missing queue directory %s", str_cstr(&p));
		st->dirs_created++;
	}
	if (st->dirs_created > 0)
		(void)file_fsync_dir(ql->dir);
	for (int i = 0; queue_names[i] != NULL && rc == 0; i++) {
		if (skip_active && strcmp(queue_names[i], QUEUE_ACTIVE) == 0)
			continue;
		str_setf(&p, "%s/%s", ql->dir, queue_names[i]);
		if (lstat(str_cstr(&p), &sb) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		rc = queue_walk_each(ql, queue_names[i], repair_one, &r, err);
	}
	str_release(&p);
	return rc;
}

typedef struct purge {
	time_t min_age;
	super_repair_stats_t *st;
} purge_t;

static int purge_one(const queue_walk_ent_t *d, void *ctx)
{
	purge_t *pu = ctx;
	int r;

	if (d->kind != QUEUE_WALK_TMP)
		return 0;
	r = qfile_tmp_is_stale(d->path, pu->min_age);
	if (r < 0) {
		log_warning("%s: %s", d->path, strerror(errno));
		return 0;
	}
	if (r == 0)
		return 0;		/* being written, or young */
	if (unlink(d->path) < 0) {
		if (errno != ENOENT)
			log_error("remove %s: %s", d->path, strerror(errno));
		return 0;
	}
	super_log_action("removed stale temporary file %s", d->path);
	pu->st->purged++;
	return 0;
}

int super_repair_purge(const queue_layout_t *ql, time_t min_age,
    super_repair_stats_t *st, str_t *err)
{
	purge_t pu = { min_age, st };

	for (int i = 0; queue_message_names[i] != NULL; i++)
		if (queue_walk_each(ql, queue_message_names[i], purge_one, &pu,
		    err) < 0)
			return -1;
	return 0;
}
