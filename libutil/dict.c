/* Lookup tables: spec parsing, dispatch to back ends, error state, the
 * in-memory table shared by texthash: and inline:, and the text format
 * reader shared by texthash: and postmap. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "dict.h"
#include "htable.h"
#include "lines.h"
#include "log.h"
#include "mem.h"
#include <unistd.h>

static const struct dict_type {
	const char *name;
	dict_t *(*open)(const char *spec, const char *name, int flags, str_t *err);
} dict_types[] = {
	{ "hash", dict_hash_open },
	{ "texthash", dict_texthash_open },
	{ "inline", dict_inline_open },
	{ "static", dict_static_open },
	{ "cidr", dict_cidr_open },
	{ "regexp", dict_regexp_open },
	{ "pcre", dict_pcre_open },
	{ "lmdb", dict_lmdb_open },
	{ "unix", dict_unix_open },
};

#define NTYPES (sizeof(dict_types) / sizeof(dict_types[0]))

static bool type_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'
	    || c == '-';
}

static bool jailed;
static void (*jail_changed)(const char *spec);

void dict_set_jailed(void (*changed)(const char *spec))
{
	jailed = true;
	jail_changed = changed;
}

bool dict_jailed(void)
{
	return jailed;
}

void dict_report_changed(const char *spec)
{
	if (jail_changed)
		jail_changed(spec);
}

dict_t *dict_open(const char *spec, int flags, str_t *err)
{
	const char *colon;
	size_t tlen;

	str_reset(err);
	if (spec == NULL || *spec == 0) {
		str_set(err, "empty lookup table name: expected type:name");
		return NULL;
	}
	colon = strchr(spec, ':');
	if (colon == NULL || colon == spec) {
		str_set(err, "malformed lookup table \"");
		str_quote_printable(err, spec, strlen(spec));
		str_cat(err, "\": expected type:name");
		return NULL;
	}
	tlen = (size_t)(colon - spec);
	for (size_t i = 0; i < tlen; i++) {
		if (!type_char((unsigned char)spec[i])) {
			str_set(err, "malformed lookup table \"");
			str_quote_printable(err, spec, strlen(spec));
			str_cat(err, "\": bad character in table type");
			return NULL;
		}
	}
	for (size_t i = 0; i < NTYPES; i++) {
		if (strlen(dict_types[i].name) != tlen
		    || memcmp(dict_types[i].name, spec, tlen) != 0)
			continue;
		if (colon[1] == 0) {
			str_setf(err, "malformed lookup table \"%s\": missing name after \"%.*s:\"",
			    spec, (int)tlen, spec);
			return NULL;
		}
		return dict_types[i].open(spec, colon + 1, flags, err);
	}
	str_setf(err, "unsupported lookup table type \"%.*s\" in \"", (int)tlen, spec);
	str_quote_printable(err, spec, strlen(spec));
	str_cat(err, "\" (known types:");
	for (size_t i = 0; i < NTYPES; i++)
		str_catf(err, " %s", dict_types[i].name);
	str_cat(err, ")");
	return NULL;
}

dict_t *dict_alloc(size_t size, const char *spec, int flags)
{
	dict_t *d = xcalloc(1, size);
	const char *colon = strchr(spec, ':');

	if (colon == NULL || size < sizeof(*d))
		log_panic("dict_alloc: bad arguments");
	d->spec = xstrdup(spec);
	d->type = xstrndup(spec, (size_t)(colon - spec));
	d->name = xstrdup(colon + 1);
	d->flags = flags;
	return d;
}

void dict_close(dict_t *d)
{
	if (d == NULL)
		return;
	if (d->free)
		d->free(d);
	free(d->spec);
	free(d->type);
	free(d->name);
	str_release(&d->errmsg);
	str_release(&d->logged);
	str_release(&d->keybuf);
	free(d);
}

void dict_set_error(dict_t *d, const char *fmt, ...)
{
	va_list ap;

	d->error = true;
	str_reset(&d->errmsg);
	va_start(ap, fmt);
	str_vcatf(&d->errmsg, fmt, ap);
	va_end(ap);
	/* A table that stays broken would otherwise log on every lookup. */
	if (str_len(&d->logged) == 0
	    || strcmp(str_cstr(&d->logged), str_cstr(&d->errmsg)) != 0) {
		log_warning("%s", str_cstr(&d->errmsg));
		str_set(&d->logged, str_cstr(&d->errmsg));
	}
}

void dict_clear_error(dict_t *d)
{
	d->error = false;
	str_reset(&d->errmsg);
	if (str_len(&d->logged) != 0) {
		log_info("%s: lookup table is readable again", d->spec);
		str_reset(&d->logged);
	}
}

bool dict_fold_key(str_t *buf, const char *key, int flags)
{
	size_t len = strnlen(key, DICT_KEY_MAX + 1);

	if (len == 0 || len > DICT_KEY_MAX)
		return false;
	str_reset(buf);
	str_append(buf, key, len);
	if ((flags & DICT_FLAG_CASE_SENSITIVE) == 0)
		str_lower(buf->buf);
	return true;
}

enum dict_status dict_get(dict_t *d, const char *key, const char **value)
{
	const char *v = NULL;
	enum dict_status st;

	if (value)
		*value = NULL;
	d->error = false;
	str_reset(&d->errmsg);
	if (key == NULL)
		return DICT_STAT_NOTFOUND;
	if (d->raw_key) {
		size_t len = strnlen(key, DICT_KEY_MAX + 1);
		if (len == 0 || len > DICT_KEY_MAX)
			return DICT_STAT_NOTFOUND;
	} else if (!d->any_key) {
		/* Keys that no table can hold are not looked up at all: this
		 * also bounds the work an attacker's key can cause. */
		if (!dict_fold_key(&d->keybuf, key, d->flags))
			return DICT_STAT_NOTFOUND;
		key = str_cstr(&d->keybuf);
	}
	st = d->get(d, key, &v);
	if (st == DICT_STAT_ERROR) {
		if (!d->error)	/* back ends always say why; be safe */
			dict_set_error(d, "%s: lookup failed", d->spec);
		return st;
	}
	if (str_len(&d->logged) != 0)
		dict_clear_error(d);
	if (st == DICT_STAT_FOUND && value)
		*value = v;
	return st;
}

const char *dict_lookup(dict_t *d, const char *key)
{
	const char *v;

	return dict_get(d, key, &v) == DICT_STAT_FOUND ? v : NULL;
}

bool dict_error(const dict_t *d)
{
	return d->error;
}

const char *dict_errmsg(const dict_t *d)
{
	return str_cstr(&d->errmsg);
}

int dict_walk(dict_t *d, dict_walk_fn fn, void *ctx)
{
	int r;

	d->error = false;
	str_reset(&d->errmsg);
	if (d->walk == NULL) {
		d->error = true;
		str_setf(&d->errmsg, "%s: a %s: table cannot be listed",
		    d->spec, d->type);
		return -1;
	}
	r = d->walk(d, fn, ctx);
	if (r < 0 && !d->error)
		dict_set_error(d, "%s: listing failed", d->spec);
	return r;
}

int dict_refresh(dict_t *d)
{
	d->error = false;
	str_reset(&d->errmsg);
	if (d->refresh == NULL)
		return 0;
	if (d->refresh(d) < 0) {
		if (!d->error)
			dict_set_error(d, "%s: table unavailable", d->spec);
		return -1;
	}
	if (str_len(&d->logged) != 0)
		dict_clear_error(d);
	return 0;
}

const char *dict_spec(const dict_t *d)
{
	return d->spec;
}

const char *dict_type(const dict_t *d)
{
	return d->type;
}

const char *dict_name(const dict_t *d)
{
	return d->name;
}

int dict_flags(const dict_t *d)
{
	return d->flags;
}

/* ---- Memory tables ---- */

typedef struct dict_mem {
	dict_t d;
	htable_t *index;	/* folded key -> entry number + 1 */
	char **keys;
	char **values;
	size_t n, cap;
} dict_mem_t;

static enum dict_status mem_get(dict_t *d, const char *key, const char **value)
{
	dict_mem_t *m = (dict_mem_t *)d;
	uintptr_t i = (uintptr_t)htable_get(m->index, key);

	if (i == 0)
		return DICT_STAT_NOTFOUND;
	*value = m->values[i - 1];
	return DICT_STAT_FOUND;
}

static int mem_walk(dict_t *d, dict_walk_fn fn, void *ctx)
{
	dict_mem_t *m = (dict_mem_t *)d;

	/* Entries are only added while building, so indexes stay valid
	 * even if fn looks keys up. */
	for (size_t i = 0; i < m->n; i++)
		if (fn(m->keys[i], m->values[i], ctx) != 0)
			return 1;
	return 0;
}

static void mem_free(dict_t *d)
{
	dict_mem_t *m = (dict_mem_t *)d;

	htable_free(m->index, NULL);
	for (size_t i = 0; i < m->n; i++) {
		free(m->keys[i]);
		free(m->values[i]);
	}
	free(m->keys);
	free(m->values);
}

dict_t *dict_mem_new(const char *spec, int flags)
{
	dict_mem_t *m = (dict_mem_t *)dict_alloc(sizeof(*m), spec, flags);

	m->index = htable_new(16, 0);
	m->d.get = mem_get;
	m->d.walk = mem_walk;
	m->d.free = mem_free;
	return &m->d;
}

int dict_mem_add(dict_t *d, const char *key, const char *value,
    const char *where, str_t *err)
{
	dict_mem_t *m = (dict_mem_t *)d;
	size_t klen = strlen(key), vlen = strlen(value);
	uintptr_t i;
	char *k;

	if (klen == 0) {
		str_setf(err, "%s: empty key", where);
		return -1;
	}
	if (klen > DICT_KEY_MAX) {
		str_setf(err, "%s: key too long (%zu bytes, at most %d)",
		    where, klen, DICT_KEY_MAX);
		return -1;
	}
	if (vlen == 0) {
		str_setf(err, "%s: missing value for key \"", where);
		str_quote_printable(err, key, klen);
		str_cat(err, "\"");
		return -1;
	}
	if (vlen > DICT_VALUE_MAX) {
		str_setf(err, "%s: value too long (%zu bytes, at most %d)",
		    where, vlen, DICT_VALUE_MAX);
		return -1;
	}
	k = xstrdup(key);
	if ((d->flags & DICT_FLAG_CASE_SENSITIVE) == 0)
		str_lower(k);
	i = (uintptr_t)htable_get(m->index, k);
	if (i != 0) {
		if (d->flags & DICT_FLAG_DUP_ERROR) {
			str_setf(err, "%s: duplicate key \"", where);
			str_quote_printable(err, k, klen);
			str_cat(err, "\"");
			free(k);
			return -1;
		}
		if (d->flags & DICT_FLAG_DUP_REPLACE) {
			free(m->values[i - 1]);
			m->values[i - 1] = xstrdup(value);
		} else {
			str_t q = STR_INIT;
			str_quote_printable(&q, k, klen);
			log_warning("%s: duplicate key \"%s\": keeping the first value",
			    where, str_cstr(&q));
			str_release(&q);
		}
		free(k);
		return 0;
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->keys = xreallocarray(m->keys, m->cap, sizeof(*m->keys));
		m->values = xreallocarray(m->values, m->cap, sizeof(*m->values));
	}
	m->keys[m->n] = k;
	m->values[m->n] = xstrdup(value);
	m->n++;
	htable_add(m->index, k, (void *)(uintptr_t)m->n);
	return 0;
}

/* ---- The text format ---- */

/* A logical line may hold a longest key and a longest value. */
#define TEXT_LINE_MAX (DICT_KEY_MAX + DICT_VALUE_MAX + 64)

static bool ascii_space(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v'
	    || c == '\f';
}

struct text_walk {
	dict_line_fn fn;
	void *ctx;
	const char *path;
	str_t *err;
	int last;		/* the logical line handed last */
};

static int text_line(char *line, int lineno, void *ctx)
{
	struct text_walk *w = ctx;

	w->last = lineno;
	return w->fn(str_trim(line), w->path, lineno, w->ctx, w->err);
}

static int text_error(enum lines_error what, int lineno, void *ctx)
{
	struct text_walk *w = ctx;

	switch (what) {
	case LINES_ORPHAN:
		str_setf(w->err, "%s:%d: line starts with white space but continues no line",
		    w->path, lineno);
		break;
	case LINES_TOO_LONG:
		str_setf(w->err, "%s:%d: line too long (more than %d bytes)",
		    w->path, lineno, TEXT_LINE_MAX);
		break;
	case LINES_NUL:
		str_setf(w->err, "%s:%d: NUL byte in line", w->path, lineno);
		break;
	}
	return -1;
}

void dict_nest_push(dict_nest_t *n, size_t rule, int lineno)
{
	if (n->depth == n->cap) {
		n->cap = n->cap ? 2 * n->cap : 8;
		n->rule = xreallocarray(n->rule, n->cap, sizeof(*n->rule));
		n->line = xreallocarray(n->line, n->cap, sizeof(*n->line));
	}
	n->line[n->depth] = lineno;
	n->rule[n->depth++] = rule;
}

bool dict_nest_pop(dict_nest_t *n, size_t *rule, const char *file,
    int lineno, str_t *err)
{
	if (n->depth == 0) {
		str_setf(err, "%s:%d: \"endif\" without \"if\"", file, lineno);
		return false;
	}
	*rule = n->rule[--n->depth];
	return true;
}

bool dict_nest_closed(const dict_nest_t *n, const char *file, str_t *err)
{
	if (n->depth == 0)
		return true;
	str_setf(err, "%s:%d: \"if\" without \"endif\"", file,
	    n->line[n->depth - 1]);
	return false;
}

void dict_nest_free(dict_nest_t *n)
{
	free(n->rule);
	free(n->line);
	memset(n, 0, sizeof(*n));
}

int dict_text_lines(const char *path, dict_line_fn fn, void *ctx, str_t *err)
{
	struct text_walk w = { fn, ctx, path, err, 0 };
	/* Any white space indents, and a continuation keeps its white space:
	 * values are taken as written. */
	lines_opts_t o = { .flags = LINES_ANY_SPACE | LINES_VERBATIM,
		.max_len = TEXT_LINE_MAX, .line = text_line, .error = text_error,
		.ctx = &w };
	lines_t l;
	FILE *fp;
	char *buf = NULL;
	size_t bufsize = 0;
	ssize_t n;
	int rc = 0;

	str_reset(err);
	if ((fp = fopen(path, "r")) == NULL) {
		str_setf(err, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	/* Read line by line, not whole: postmap input may be large. */
	lines_init(&l, &o);
	for (;;) {
		errno = 0;
		n = getline(&buf, &bufsize, fp);
		if (n < 0) {
			if (ferror(fp)) {
				str_setf(err, "%s:%d: read error: %s", path,
				    l.lineno + 1, strerror(errno ? errno : EIO));
				rc = -1;
			}
			break;
		}
		if (n > 0 && buf[n - 1] == '\n')
			n--;
		if ((rc = lines_feed(&l, buf, (size_t)n)) != 0)
			break;
	}
	if (rc == 0)
		rc = lines_finish(&l);
	else
		lines_discard(&l);
	if (rc != 0 && str_len(err) == 0)
		str_setf(err, "%s:%d: stopped", path, w.last);
	free(buf);
	fclose(fp);
	return rc != 0 ? -1 : 0;
}

struct pair_ctx {
	dict_pair_fn fn;
	void *ctx;
};

static int split_pair(char *line, const char *file, int lineno, void *ctx,
    str_t *err)
{
	struct pair_ctx *pc = ctx;
	char *key = line, *value = line;

	while (*value && !ascii_space((unsigned char)*value))
		value++;
	if (*value)
		*value++ = 0;
	while (ascii_space((unsigned char)*value))
		value++;
	/* The line is trimmed, so value has no trailing white space. */
	if (*value == 0) {
		str_setf(err, "%s:%d: missing value for key \"", file, lineno);
		str_quote_printable(err, key, strlen(key));
		str_cat(err, "\" (expected \"key value\")");
		return -1;
	}
	return pc->fn(key, value, file, lineno, pc->ctx, err);
}

int dict_text_parse(const char *path, dict_pair_fn fn, void *ctx, str_t *err)
{
	struct pair_ctx pc = { fn, ctx };

	return dict_text_lines(path, split_pair, &pc, err);
}

/* ---- Writers ---- */

dict_writer_t *dict_writer_open(const char *spec, int flags, str_t *err)
{
	const char *colon = spec ? strchr(spec, ':') : NULL;
	size_t tlen;

	str_reset(err);
	if (colon == NULL || colon == spec || colon[1] == 0) {
		str_setf(err, "malformed lookup table \"%s\": expected hash:/path/file",
		    spec ? spec : "");
		return NULL;
	}
	tlen = (size_t)(colon - spec);
	if (tlen == 4 && strncmp(spec, "hash", 4) == 0)
		return dict_hash_writer_open(spec, colon + 1, flags, err);
	if (tlen == 4 && strncmp(spec, "lmdb", 4) == 0)
		return dict_lmdb_writer_open(spec, colon + 1, flags, err);
	str_setf(err, "%s: cannot write tables of type \"%.*s\" (only hash: and lmdb:)",
	    spec, (int)tlen, spec);
	return NULL;
}

enum dict_put_status dict_writer_put(dict_writer_t *w, const char *key,
    const char *value, str_t *err)
{
	str_reset(err);
	if (!dict_writer_check(key, value, err))
		return DICT_PUT_ERROR;
	return w->put(w, key, value, err);
}

int dict_writer_commit(dict_writer_t *w, str_t *err)
{
	str_reset(err);
	return w->commit(w, err);
}

void dict_writer_abort(dict_writer_t *w)
{
	if (w != NULL)
		w->abort(w);
}

const char *dict_writer_path(const dict_writer_t *w)
{
	return w->tmp;
}

const char *dict_writer_target(const dict_writer_t *w)
{
	return w->path;
}

bool dict_writer_check(const char *key, const char *value, str_t *err)
{
	size_t klen, vlen;

	if (key == NULL || *key == 0) {
		str_set(err, "empty key");
		return false;
	}
	if (value == NULL || *value == 0) {
		str_set(err, "missing value for key \"");
		str_quote_printable(err, key, strlen(key));
		str_cat(err, "\"");
		return false;
	}
	if ((klen = strlen(key)) > DICT_KEY_MAX) {
		str_setf(err, "key too long (%zu bytes, at most %d)", klen, DICT_KEY_MAX);
		return false;
	}
	if ((vlen = strlen(value)) > DICT_VALUE_MAX) {
		str_setf(err, "value too long (%zu bytes, at most %d)", vlen, DICT_VALUE_MAX);
		return false;
	}
	return true;
}

/* fsync a file or directory by name. */
static int sync_path(const char *path, int flags, str_t *err)
{
	int fd = open(path, O_RDONLY | flags);

	if (fd < 0) {
		str_setf(err, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fsync(fd) < 0) {
		str_setf(err, "cannot fsync %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int dict_writer_install(const char *tmp, const char *final, str_t *err)
{
	const char *slash;
	char *dir;
	int ret;

	/* Data on disk before the name points at it. */
	if (sync_path(tmp, 0, err) < 0)
		return -1;
	if (rename(tmp, final) < 0) {
		str_setf(err, "cannot rename %s to %s: %s", tmp, final,
		    strerror(errno));
		return -1;
	}
	/* And the rename itself survives a crash. */
	slash = strrchr(final, '/');
	if (slash == NULL)
		dir = xstrdup(".");
	else if (slash == final)
		dir = xstrdup("/");
	else
		dir = xstrndup(final, (size_t)(slash - final));
	ret = sync_path(dir, O_DIRECTORY, err);
	free(dir);
	return ret;
}

bool dict_same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino
	    && a->st_size == b->st_size
	    && a->st_mtim.tv_sec == b->st_mtim.tv_sec
	    && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static time_t now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

void dict_file_init(dict_file_t *f, char *path, const struct stat *st)
{
	memset(f, 0, sizeof(*f));
	f->path = path;
	f->st = *st;
	f->checked = now_seconds();
	f->why = (str_t)STR_INIT;
}

int dict_file_check(dict_t *d, dict_file_t *f, const dict_file_ops_t *ops,
    bool force)
{
	struct stat st;
	time_t now;
	int fd;

	if (f->walking)
		return 0;
	now = now_seconds();
	if (dict_jailed()) {
		/* The path means nothing after the chroot: look at the open
		 * file. */
		if (ops->is_open(d) && (force || now != f->checked) &&
		    ops->fd(d, &fd) == 0)
			dict_jail_check(d, fd, &f->st, f->path, &f->changed);
		f->checked = now;
	} else if (force || (d->flags & DICT_FLAG_RECHECK_ALWAYS) ||
	    now != f->checked) {
		f->checked = now;
		if (stat(f->path, &st) < 0) {
			/* Removed: serving stale data would hide the problem;
			 * deferring mail makes it visible. */
			str_setf(&f->why, "cannot open %s: %s", f->path,
			    strerror(errno));
			ops->close(d);
		} else if (!ops->is_open(d) || !dict_same_file(&st, &f->st)) {
			bool was_open = ops->is_open(d);

			if (ops->reopen(d, &st, &f->why)) {
				if (was_open)
					log_info("%s: reopened rebuilt file %s",
					    d->spec, f->path);
				f->st = st;
			}
		}
	}
	if (!ops->is_open(d)) {
		dict_set_error(d, "%s: %s", d->spec, str_cstr(&f->why));
		return -1;
	}
	return 0;
}

void dict_file_release(dict_file_t *f)
{
	free(f->path);
	str_release(&f->why);
	memset(f, 0, sizeof(*f));
}

void dict_jail_check(dict_t *d, int fd, const struct stat *old,
    const char *path, bool *reported)
{
	struct stat st;

	/* The path means nothing after the chroot: look at the open file.
	 * A rebuilt table was renamed over it (no links left) or rewritten
	 * in place (size or mtime). */
	if (*reported || fstat(fd, &st) < 0)
		return;
	if (st.st_nlink == 0 || !dict_same_file(&st, old)) {
		*reported = true;
		log_info("%s: %s changed; this process keeps the old "
		    "contents and is replaced", d->spec, path);
		dict_report_changed(d->spec);
	}
}
