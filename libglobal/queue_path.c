/* Queue directories and paths. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "queue_id.h"
#include "queue_path.h"

const char *const queue_names[] = {
	QUEUE_MAILDROP, QUEUE_INCOMING, QUEUE_ACTIVE, QUEUE_DEFERRED,
	QUEUE_HOLD, QUEUE_CORRUPT, QUEUE_DEFER, QUEUE_BOUNCE, QUEUE_TRACE,
	NULL,
};

const char *const queue_message_names[] = {
	QUEUE_MAILDROP, QUEUE_INCOMING, QUEUE_ACTIVE, QUEUE_DEFERRED,
	QUEUE_HOLD, QUEUE_CORRUPT, NULL,
};

int queue_index(const char *name)
{
	for (int i = 0; queue_names[i] != NULL; i++)
		if (strcmp(queue_names[i], name) == 0)
			return i;
	return -1;
}

bool queue_name_valid(const char *name)
{
	return queue_index(name) >= 0;
}

int queue_layout_init(queue_layout_t *ql, const char *queue_dir,
    const char *hash_names, long depth, str_t *err)
{
	char *copy, *cp, *name;
	unsigned hashed = 0;

	if (depth < 1 || depth > QUEUE_HASH_MAX_DEPTH) {
		if (err)
			str_setf(err, "bad hash_queue_depth %ld (1 to %d)",
			    depth, QUEUE_HASH_MAX_DEPTH);
		return -1;
	}
	cp = copy = xstrdup(hash_names);
	while ((name = str_token(&cp, ", \t\r\n")) != NULL) {
		int i = queue_index(name);
		if (i < 0) {
			if (err)
				str_setf(err, "hash_queue_names: unknown queue name '%s'",
				    name);
			free(copy);
			return -1;
		}
		hashed |= 1U << i;
	}
	free(copy);
	ql->dir = xstrdup(queue_dir);
	ql->hashed = hashed;
	ql->depth = (int)depth;
	return 0;
}

int queue_layout_from_config(queue_layout_t *ql, str_t *err)
{
	return queue_layout_init(ql, pconfig_get_str("queue_directory"),
	    pconfig_get_str("hash_queue_names"),
	    pconfig_get_int("hash_queue_depth"), err);
}

int queue_layout_here(queue_layout_t *ql, str_t *err)
{
	return queue_layout_init(ql, ".", pconfig_get_str("hash_queue_names"),
	    pconfig_get_int("hash_queue_depth"), err);
}

void queue_layout_free(queue_layout_t *ql)
{
	free(ql->dir);
	ql->dir = NULL;
}

bool queue_is_hashed(const queue_layout_t *ql, const char *queue)
{
	int i = queue_index(queue);

	return i >= 0 && (ql->hashed & (1U << i)) != 0;
}

void queue_dir_path_depth(const queue_layout_t *ql, const char *queue,
    const char *id, int depth, str_t *out)
{
	if (!queue_id_valid(id) && depth > 0)
		log_panic("queue_dir_path: bad queue ID '%s'", id);
	str_setf(out, "%s/%s", ql->dir, queue);
	/* Level k uses the k-th last microsecond digit: those change
	 * fastest, so a burst spreads over all subdirectories. */
	for (int k = 1; k <= depth; k++) {
		str_putc(out, '/');
		str_putc(out, id[QUEUE_ID_TIME_LEN - k]);
	}
}

void queue_dir_path(const queue_layout_t *ql, const char *queue,
    const char *id, str_t *out)
{
	queue_dir_path_depth(ql, queue, id,
	    queue_is_hashed(ql, queue) ? ql->depth : 0, out);
}

void queue_path(const queue_layout_t *ql, const char *queue,
    const char *id, str_t *out)
{
	queue_dir_path(ql, queue, id, out);
	str_putc(out, '/');
	str_cat(out, id);
}

int queue_find(const queue_layout_t *ql, const char *queue, const char *id,
    str_t *out)
{
	struct stat st;
	int want = queue_is_hashed(ql, queue) ? ql->depth : 0;

	if (!queue_name_valid(queue) || !queue_id_valid(id)) {
		errno = EINVAL;
		return -1;
	}
	for (int i = -1; i <= QUEUE_HASH_MAX_DEPTH; i++) {
		int d = i < 0 ? want : i;
		if (i == want)
			continue;	/* tried first */
		queue_dir_path_depth(ql, queue, id, d, out);
		str_putc(out, '/');
		str_cat(out, id);
		if (lstat(str_cstr(out), &st) == 0)
			return 0;
		if (errno != ENOENT && errno != ENOTDIR)
			return -1;
	}
	errno = ENOENT;
	return -1;
}

/* The directory part of path (path has a '/'). */
static void dir_of(const char *path, str_t *out)
{
	const char *slash = strrchr(path, '/');

	str_reset(out);
	str_append(out, path, slash ? (size_t)(slash - path) : 0);
	if (str_len(out) == 0)
		str_set(out, slash ? "/" : ".");
}

int queue_move(const queue_layout_t *ql, const char *from, const char *to,
    const char *id, str_t *err)
{
	str_t src = STR_INIT, dst = STR_INIT, sdir = STR_INIT, ddir = STR_INIT;
	int ret = -1, saved;

	if (!queue_name_valid(to)) {
		errno = EINVAL;
		if (err)
			str_setf(err, "unknown queue name '%s'", to);
		goto out;
	}
	if (queue_find(ql, from, id, &src) < 0) {
		if (err)
			str_setf(err, "%s/%s: %s", from, id, strerror(errno));
		goto out;
	}
	queue_path(ql, to, id, &dst);
	dir_of(str_cstr(&src), &sdir);
	dir_of(str_cstr(&dst), &ddir);
	if (rename(str_cstr(&src), str_cstr(&dst)) < 0) {
		struct stat st;
		/* A missing hashed subdirectory: make it and retry once.  The
		 * new directory's own entry must be durable too. */
		if (errno != ENOENT || !queue_is_hashed(ql, to)
		    || stat(str_cstr(&ddir), &st) == 0) {
			if (err)
				str_setf(err, "rename %s to %s: %s", str_cstr(&src),
				    str_cstr(&dst), strerror(errno));
			goto out;
		}
		if (file_mkdirs(str_cstr(&ddir), 0700) < 0) {
			if (err)
				str_setf(err, "mkdir %s: %s", str_cstr(&ddir),
				    strerror(errno));
			goto out;
		}
		str_t up = STR_INIT;
		int r = 0;
		for (int k = 0; k < ql->depth && r == 0; k++) {
			dir_of(str_cstr(&ddir), &up);
			/* fsync every level we may have created: parent first
			 * is not needed, each fsync makes one entry durable */
			r = file_fsync_dir(str_cstr(&up));
			str_set(&ddir, str_cstr(&up));
		}
		str_release(&up);
		dir_of(str_cstr(&dst), &ddir);
		if (r < 0) {
			if (err)
				str_setf(err, "fsync directory above %s: %s",
				    str_cstr(&ddir), strerror(errno));
			goto out;
		}
		if (rename(str_cstr(&src), str_cstr(&dst)) < 0) {
			if (err)
				str_setf(err, "rename %s to %s: %s", str_cstr(&src),
				    str_cstr(&dst), strerror(errno));
			goto out;
		}
	}
	if (file_fsync_dir(str_cstr(&ddir)) < 0
	    || (strcmp(str_cstr(&sdir), str_cstr(&ddir)) != 0
		&& file_fsync_dir(str_cstr(&sdir)) < 0)) {
		if (err)
			str_setf(err, "fsync after moving %s to %s: %s", id, to,
			    strerror(errno));
		goto out;
	}
	ret = 0;
out:
	saved = errno;
	str_release(&src);
	str_release(&dst);
	str_release(&sdir);
	str_release(&ddir);
	errno = saved;
	return ret;
}

int queue_create_dirs(const queue_layout_t *ql, str_t *err)
{
	str_t p = STR_INIT;
	int ret = 0;

	if (file_mkdirs(ql->dir, 0700) < 0) {
		if (err)
			str_setf(err, "mkdir %s: %s", ql->dir, strerror(errno));
		return -1;
	}
	for (int i = 0; queue_names[i] != NULL && ret == 0; i++) {
		str_setf(&p, "%s/%s", ql->dir, queue_names[i]);
		if (mkdir(str_cstr(&p), 0700) < 0 && errno != EEXIST) {
			if (err)
				str_setf(err, "mkdir %s: %s", str_cstr(&p),
				    strerror(errno));
			ret = -1;
		}
	}
	for (int i = 0; ret == 0 && i < 2; i++) {
		str_setf(&p, "%s/%s", ql->dir, i ? QUEUE_SPARE_DIR : QUEUE_SAVED_DIR);
		if (mkdir(str_cstr(&p), 0700) < 0 && errno != EEXIST) {
			if (err)
				str_setf(err, "mkdir %s: %s", str_cstr(&p),
				    strerror(errno));
			ret = -1;
		}
	}
	str_release(&p);
	return ret;
}
