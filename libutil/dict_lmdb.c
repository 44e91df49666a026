/* lmdb: LMDB files, read side and write side.
 *
 * lmdb:/path/file reads /path/file.lmdb, a single-file LMDB environment
 * (MDB_NOSUBDIR) holding one unnamed database of key/value records
 * encoded as in hash: (key lower-cased unless case sensitive, no trailing
 * NUL; records with a trailing NUL, as Postfix writes them by default,
 * are read too).
 *
 * Readers open the file read-only with MDB_NOLOCK: they take no lock at
 * all and create no lock file, so they never block a writer.  That is
 * safe because Petrel never changes a table file in place: the writer
 * builds a new file next to it and renames it over the old one, so an
 * open reader keeps its complete old file.  Readers notice a rebuilt file
 * exactly as hash: readers do (at most once a second by stat, or by fstat
 * of the open file once jailed) and reopen it.  One read transaction is
 * kept per table and renewed per lookup: no allocation on the lookup
 * path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "config.h"
#include "dict.h"
#include "log.h"
#include "mem.h"

#ifndef HAVE_LMDB

dict_t *dict_lmdb_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	(void)name;
	(void)flags;
	str_setf(err, "%s: lmdb: tables are not supported by this build "
	    "(LMDB was not found by configure)", spec);
	return NULL;
}

dict_writer_t *dict_lmdb_writer_open(const char *spec, const char *name,
    int flags, str_t *err)
{
	(void)name;
	(void)flags;
	str_setf(err, "%s: lmdb: tables are not supported by this build "
	    "(LMDB was not found by configure)", spec);
	return NULL;
}

#else
#include <lmdb.h>

/* Address space reserved for a table being written (the file only grows
 * as records are added). */
#define LMDB_MAPSIZE ((size_t)(sizeof(size_t) >= 8 ? (size_t)1 << 30 : (size_t)1 << 28))

static char *lmdb_path(const char *name)
{
	str_t p = STR_INIT;

	str_setf(&p, "%s.lmdb", name);
	return str_steal(&p);
}

/* ---- Reader ---- */

struct lmdb_handle {
	MDB_env *env;
	MDB_txn *txn;		/* reset between lookups */
	MDB_dbi dbi;
	int nul;		/* keys end in NUL: 1 yes, 0 no, -1 unknown */
};

typedef struct dict_lmdb {
	dict_t d;
	dict_file_t f;		/* name + ".lmdb", and when to reopen it */
	struct lmdb_handle h;	/* env NULL while the file cannot be opened */
	str_t val, wkey, wval;
} dict_lmdb_t;

static void close_handle(struct lmdb_handle *h)
{
	if (h->txn)
		mdb_txn_abort(h->txn);
	if (h->env)
		mdb_env_close(h->env);
	memset(h, 0, sizeof(*h));
}

static int open_handle(const char *path, struct lmdb_handle *h,
    struct stat *st, str_t *why)
{
	MDB_cursor *c;
	MDB_val k, v;
	int ret, fd;

	memset(h, 0, sizeof(*h));
	h->nul = -1;
	if ((ret = mdb_env_create(&h->env)) != 0)
		goto fail;
	ret = mdb_env_open(h->env, path, MDB_RDONLY | MDB_NOSUBDIR | MDB_NOLOCK
	    | MDB_NOTLS, 0644);
	if (ret != 0)
		goto fail;
	if ((ret = mdb_env_get_fd(h->env, &fd)) != 0)
		goto fail;
	if (fstat(fd, st) < 0) {
		ret = errno;
		goto fail;
	}
	if ((ret = mdb_txn_begin(h->env, NULL, MDB_RDONLY, &h->txn)) != 0)
		goto fail;
	if ((ret = mdb_dbi_open(h->txn, NULL, 0, &h->dbi)) != 0)
		goto fail;
	/* Postfix writes "key\0" (but its YP_* alias records without):
	 * any of the first records with a NUL tells, as for hash:. */
	if (mdb_cursor_open(h->txn, h->dbi, &c) == 0) {
		MDB_cursor_op op = MDB_FIRST;
		for (int i = 0; i < 16 && mdb_cursor_get(c, &k, &v, op) == 0; i++) {
			op = MDB_NEXT;
			if (k.mv_size > 0 && ((const char *)k.mv_data)[k.mv_size - 1] == 0) {
				h->nul = 1;
				break;
			}
			h->nul = 0;
		}
		mdb_cursor_close(c);
	}
	mdb_txn_reset(h->txn);
	return 0;
fail:
	str_setf(why, "cannot open %s: %s", path, mdb_strerror(ret));
	close_handle(h);
	return -1;
}

static bool lmdb_is_open(dict_t *d)
{
	return ((dict_lmdb_t *)d)->h.env != NULL;
}

static int lmdb_fd(dict_t *d, int *fd)
{
	dict_lmdb_t *l = (dict_lmdb_t *)d;

	return l->h.env != NULL && mdb_env_get_fd(l->h.env, fd) == 0 ? 0 : -1;
}

static bool lmdb_reopen(dict_t *d, struct stat *st, str_t *why)
{
	dict_lmdb_t *l = (dict_lmdb_t *)d;
	struct lmdb_handle h;
	bool ok = open_handle(l->f.path, &h, st, why) == 0;

	close_handle(&l->h);
	if (ok)
		l->h = h;
	return ok;
}

static void lmdb_close(dict_t *d)
{
	close_handle(&((dict_lmdb_t *)d)->h);
}

static const dict_file_ops_t lmdb_file_ops = {
	.is_open = lmdb_is_open,
	.fd = lmdb_fd,
	.reopen = lmdb_reopen,
	.close = lmdb_close,
};

/* Reopens the file if it changed (dict_file_check()). */
static int lmdb_check(dict_lmdb_t *l, bool force)
{
	return dict_file_check(&l->d, &l->f, &lmdb_file_ops, force);
}

static void strip_nul(MDB_val *t)
{
	if (t->mv_size > 0 && ((const char *)t->mv_data)[t->mv_size - 1] == 0)
		t->mv_size--;
}

static bool record_ok(const MDB_val *t, size_t max, bool empty_ok)
{
	return t->mv_size <= max && (empty_ok || t->mv_size > 0)
	    && (t->mv_size == 0 || memchr(t->mv_data, 0, t->mv_size) == NULL);
}

static enum dict_status lmdb_get(dict_t *d, const char *key, const char **value)
{
	dict_lmdb_t *l = (dict_lmdb_t *)d;
	MDB_val k, v;
	int ret;

	if (lmdb_check(l, false) < 0)
		return DICT_STAT_ERROR;
	if ((ret = mdb_txn_renew(l->h.txn)) != 0) {
		dict_set_error(d, "%s: %s: %s", d->spec, l->f.path,
		    mdb_strerror(ret));
		return DICT_STAT_ERROR;
	}
	k.mv_data = (void *)key;
	k.mv_size = strlen(key) + (l->h.nul == 1);
	ret = mdb_get(l->h.txn, l->h.dbi, &k, &v);
	if (ret == MDB_NOTFOUND && l->h.nul < 0) {
		k.mv_size++;
		ret = mdb_get(l->h.txn, l->h.dbi, &k, &v);
	}
	if (ret == 0) {
		strip_nul(&v);
		if (record_ok(&v, DICT_VALUE_MAX, true)) {
			str_reset(&l->val);
			str_append(&l->val, v.mv_data, v.mv_size);
			*value = str_cstr(&l->val);
		} else {
			dict_set_error(d, "%s: %s: damaged value (%zu bytes)",
			    d->spec, l->f.path, v.mv_size);
			ret = -1;
		}
	} else if (ret != MDB_NOTFOUND) {
		dict_set_error(d, "%s: %s: lookup error: %s", d->spec,
		    l->f.path, mdb_strerror(ret));
	}
	mdb_txn_reset(l->h.txn);
	if (ret == MDB_NOTFOUND)
		return DICT_STAT_NOTFOUND;
	return ret == 0 ? DICT_STAT_FOUND : DICT_STAT_ERROR;
}

static int lmdb_walk(dict_t *d, dict_walk_fn fn, void *ctx)
{
	dict_lmdb_t *l = (dict_lmdb_t *)d;
	MDB_cursor *c;
	MDB_val k, v;
	int ret, rc = 0;
	MDB_cursor_op op = MDB_FIRST;

	if (lmdb_check(l, false) < 0)
		return -1;
	if ((ret = mdb_txn_renew(l->h.txn)) != 0
	    || (ret = mdb_cursor_open(l->h.txn, l->h.dbi, &c)) != 0) {
		dict_set_error(d, "%s: %s: %s", d->spec, l->f.path,
		    mdb_strerror(ret));
		mdb_txn_reset(l->h.txn);
		return -1;
	}
	l->f.walking = true;
	while ((ret = mdb_cursor_get(c, &k, &v, op)) == 0) {
		op = MDB_NEXT;
		strip_nul(&k);
		strip_nul(&v);
		if (!record_ok(&k, DICT_KEY_MAX, false) || !record_ok(&v, DICT_VALUE_MAX, true)) {
			dict_set_error(d, "%s: %s: damaged record (key %zu bytes, value %zu bytes)",
			    d->spec, l->f.path, k.mv_size, v.mv_size);
			rc = -1;
			break;
		}
		str_reset(&l->wkey);
		str_append(&l->wkey, k.mv_data, k.mv_size);
		str_reset(&l->wval);
		str_append(&l->wval, v.mv_data, v.mv_size);
		if (fn(str_cstr(&l->wkey), str_cstr(&l->wval), ctx) != 0) {
			rc = 1;
			break;
		}
	}
	if (rc == 0 && ret != MDB_NOTFOUND) {
		dict_set_error(d, "%s: %s: read error: %s", d->spec, l->f.path,
		    mdb_strerror(ret));
		rc = -1;
	}
	l->f.walking = false;
	mdb_cursor_close(c);
	mdb_txn_reset(l->h.txn);
	return rc;
}

static int lmdb_refresh(dict_t *d)
{
	return lmdb_check((dict_lmdb_t *)d, true);
}

static void lmdb_free(dict_t *d)
{
	dict_lmdb_t *l = (dict_lmdb_t *)d;

	close_handle(&l->h);
	dict_file_release(&l->f);
	str_release(&l->val);
	str_release(&l->wkey);
	str_release(&l->wval);
}

dict_t *dict_lmdb_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	dict_lmdb_t *l;
	char *path = lmdb_path(name);
	struct lmdb_handle h;
	struct stat st;
	str_t why = STR_INIT;

	if (open_handle(path, &h, &st, &why) < 0) {
		str_setf(err, "%s: %s", spec, str_cstr(&why));
		str_release(&why);
		free(path);
		return NULL;
	}
	str_release(&why);
	l = (dict_lmdb_t *)dict_alloc(sizeof(*l), spec, flags);
	dict_file_init(&l->f, path, &st);
	l->h = h;
	l->d.get = lmdb_get;
	l->d.walk = lmdb_walk;
	l->d.refresh = lmdb_refresh;
	l->d.free = lmdb_free;
	return &l->d;
}

/* ---- Writer ---- */

typedef struct lmdb_writer {
	dict_writer_t w;
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	int flags;
	str_t key;
} lmdb_writer_t;

static enum dict_put_status lw_put(dict_writer_t *w, const char *key,
    const char *value, str_t *err)
{
	lmdb_writer_t *lw = (lmdb_writer_t *)w;
	MDB_val k, v, old;
	bool existed = false;
	int ret;

	dict_fold_key(&lw->key, key, lw->flags);
	k.mv_data = lw->key.buf;
	k.mv_size = str_len(&lw->key);
	v.mv_data = (void *)value;
	v.mv_size = strlen(value);
	if (lw->flags & DICT_FLAG_DUP_REPLACE) {
		ret = mdb_get(lw->txn, lw->dbi, &k, &old);
		existed = ret == 0;
		if (ret == 0 || ret == MDB_NOTFOUND)
			ret = mdb_put(lw->txn, lw->dbi, &k, &v, 0);
	} else {
		ret = mdb_put(lw->txn, lw->dbi, &k, &v, MDB_NOOVERWRITE);
	}
	if (ret == MDB_KEYEXIST) {
		str_set(err, "duplicate key \"");
		str_quote_printable(err, lw->key.buf, k.mv_size);
		str_cat(err, "\": keeping the first value");
		return DICT_PUT_DUPLICATE;
	}
	if (ret != 0) {
		str_setf(err, "cannot write %s: %s%s", w->tmp, mdb_strerror(ret),
		    ret == MDB_MAP_FULL ? " (table too large)" : "");
		return DICT_PUT_ERROR;
	}
	return existed ? DICT_PUT_REPLACED : DICT_PUT_NEW;
}

static void lw_free(lmdb_writer_t *lw)
{
	if (lw->txn)
		mdb_txn_abort(lw->txn);
	if (lw->env)
		mdb_env_close(lw->env);
	free(lw->w.path);
	free(lw->w.tmp);
	str_release(&lw->key);
	free(lw);
}

static void lw_abort(dict_writer_t *w)
{
	unlink(w->tmp);
	lw_free((lmdb_writer_t *)w);
}

static int lw_commit(dict_writer_t *w, str_t *err)
{
	lmdb_writer_t *lw = (lmdb_writer_t *)w;
	int ret;

	ret = mdb_txn_commit(lw->txn);
	lw->txn = NULL;
	if (ret == 0)
		ret = mdb_env_sync(lw->env, 1);
	if (ret != 0) {
		str_setf(err, "cannot write %s: %s", w->tmp, mdb_strerror(ret));
		goto fail;
	}
	mdb_env_close(lw->env);
	lw->env = NULL;
	if ((ret = dict_writer_install(w->tmp, w->path, err)) < 0
	    && access(w->tmp, F_OK) == 0)
		goto fail;
	lw_free(lw);
	return ret;
fail:
	unlink(w->tmp);
	lw_free(lw);
	return -1;
}

dict_writer_t *dict_lmdb_writer_open(const char *spec, const char *name,
    int flags, str_t *err)
{
	static unsigned serial;
	lmdb_writer_t *lw = xcalloc(1, sizeof(*lw));
	str_t tmp = STR_INIT;
	int fd = -1, ret;

	(void)spec;
	lw->w.path = lmdb_path(name);
	lw->w.put = lw_put;
	lw->w.commit = lw_commit;
	lw->w.abort = lw_abort;
	lw->flags = flags;
	/* Reserve a fresh name; LMDB then fills the empty file. */
	for (int tries = 0; tries < 100 && fd < 0; tries++) {
		str_setf(&tmp, "%s.tmp.%ld.%u", lw->w.path, (long)getpid(), serial++);
		fd = open(str_cstr(&tmp), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		str_setf(err, "cannot create %s: %s", str_cstr(&tmp), strerror(errno));
		str_release(&tmp);
		lw_free(lw);
		return NULL;
	}
	close(fd);
	lw->w.tmp = str_steal(&tmp);
	if ((ret = mdb_env_create(&lw->env)) != 0
	    || (ret = mdb_env_set_mapsize(lw->env, LMDB_MAPSIZE)) != 0
	    || (ret = mdb_env_open(lw->env, lw->w.tmp, MDB_NOSUBDIR | MDB_NOLOCK
	    | MDB_NOTLS, 0644)) != 0
	    || (ret = mdb_txn_begin(lw->env, NULL, 0, &lw->txn)) != 0
	    || (ret = mdb_dbi_open(lw->txn, NULL, 0, &lw->dbi)) != 0) {
		str_setf(err, "cannot create %s: %s", lw->w.tmp, mdb_strerror(ret));
		lw_abort(&lw->w);
		return NULL;
	}
	return &lw->w;
}

#endif
