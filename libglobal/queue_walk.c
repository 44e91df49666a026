/* Walking queue directories and collecting their messages. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "mem.h"
#include "qfile.h"
#include "queue_walk.h"

static bool hash_name(const char *name)
{
	return name[0] != 0 && name[1] == 0
	    && strchr(queue_id_alphabet, name[0]) != NULL;
}

typedef struct walk {
	const char *queue;
	queue_walk_fn fn;
	void *ctx;
	str_t *err;
} walk_t;

/* Sorted names, so that walks (and what they report) are reproducible. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_dir(walk_t *w, const char *dir, int depth)
{
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	str_t path = STR_INIT;
	int rc = 0;

	if ((d = opendir(dir)) == NULL) {
		if (errno == ENOENT && depth == 0)
			return 0;
		str_setf(w->err, "open directory %s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = xreallocarray(names, cap, sizeof(*names));
		}
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct stat st;
		queue_walk_ent_t e;

		str_setf(&path, "%s/%s", dir, names[i]);
		if (lstat(str_cstr(&path), &st) < 0) {
			if (errno == ENOENT)
				continue;	/* gone meanwhile */
			str_setf(w->err, "%s: %s", str_cstr(&path), strerror(errno));
			rc = -1;
			break;
		}
		e.queue = w->queue;
		e.path = str_cstr(&path);
		e.name = names[i];
		e.depth = depth;
		e.st = &st;
		if (S_ISDIR(st.st_mode)) {
			if (hash_name(names[i]) && depth < QUEUE_HASH_MAX_DEPTH) {
				str_t sub = STR_INIT;
				str_set(&sub, str_cstr(&path));
				rc = walk_dir(w, str_cstr(&sub), depth + 1);
				str_release(&sub);
				continue;
			}
			e.kind = QUEUE_WALK_STRAY_DIR;
		} else if (S_ISREG(st.st_mode)) {
			e.kind = queue_id_valid(names[i]) ? QUEUE_WALK_MSG
			    : qfile_tmp_name(names[i]) ? QUEUE_WALK_TMP
			    : QUEUE_WALK_STRAY_FILE;
		} else {
			e.kind = QUEUE_WALK_OTHER;
		}
		rc = w->fn(&e, w->ctx);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	str_release(&path);
	return rc;
}

int queue_walk_each(const queue_layout_t *ql, const char *queue,
    queue_walk_fn fn, void *ctx, str_t *err)
{
	walk_t w = { queue, fn, ctx, err };
	str_t dir = STR_INIT;
	int rc;

	str_setf(&dir, "%s/%s", ql->dir, queue);
	rc = walk_dir(&w, str_cstr(&dir), 0);
	str_release(&dir);
	return rc;
}

typedef struct collect {
	queue_walk_files_t *out;
	const char *queue;
} collect_t;

static int collect_one(const queue_walk_ent_t *d, void *ctx)
{
	collect_t *c = ctx;
	queue_walk_files_t *f = c->out;
	queue_walk_file_t *x;

	if (d->kind != QUEUE_WALK_MSG)
		return 0;
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->v = xreallocarray(f->v, f->cap, sizeof(*f->v));
	}
	x = &f->v[f->n++];
	x->queue = c->queue;
	bcopy_str(x->id, sizeof(x->id), d->name);
	x->path = xstrdup(d->path);
	return 0;
}

static int cmp_file(const void *a, const void *b)
{
	const queue_walk_file_t *x = a, *y = b;
	int r = strcmp(x->id, y->id);

	return r ? r : strcmp(x->path, y->path);
}

int queue_walk_collect(const queue_layout_t *ql, const char *queue,
    queue_walk_files_t *out, str_t *err)
{
	collect_t c = { out, queue };
	size_t start = out->n;
	int qi = queue_index(queue);

	if (qi < 0) {
		str_setf(err, "unknown queue name '%s'", queue);
		return -1;
	}
	c.queue = queue_names[qi];
	if (queue_walk_each(ql, queue, collect_one, &c, err) < 0)
		return -1;
	if (out->n - start > 1)
		qsort(out->v + start, out->n - start, sizeof(*out->v), cmp_file);
	return 0;
}

void queue_walk_files_free(queue_walk_files_t *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].path);
	free(f->v);
	f->v = NULL;
	f->n = f->cap = 0;
}
