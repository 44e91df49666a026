/* hash: Berkeley DB 5.3 hash files, read side and write side.
 *
 * hash:/path/file reads /path/file.db.  Records are plain BDB hash
 * records: the key is the table key (lower-cased unless the table is case
 * sensitive) and the value the table value, both without a trailing NUL;
 * doc/lookup-tables.md has the details.  Files built by Postfix store
 * both with a trailing NUL: the reader finds out which kind it has from
 * the first records (trying both ways while the table is empty) and
 * strips the NUL from what it returns.
 *
 * Readers never lock: writers build a new file and rename it over the old
 * one, so an open handle keeps reading the old, complete file.  A reader
 * notices the rename (or any other change of inode, size or mtime) at its
 * next check, at most once a second, and reopens transparently.  Files are
 * read without mmap so that a file truncated in place by a careless
 * rebuild gives read errors, not SIGBUS. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <db.h>
#include "dict.h"
#include "log.h"
#include "mem.h"

/* Berkeley DB reports details through a callback without a context
 * pointer; the callers are single-threaded, so a static sink is enough. */
static str_t *bdb_sink;

static void bdb_errcall(const DB_ENV *env, const char *pfx, const char *msg)
{
	(void)env;
	(void)pfx;
	if (bdb_sink == NULL || msg == NULL)
		return;
	if (str_len(bdb_sink) != 0)
		str_cat(bdb_sink, "; ");
	str_cat(bdb_sink, msg);
}

/* why = "what: DB error (details from Berkeley DB)". */
static void bdb_error(str_t *why, const char *what, int ret, str_t *detail)
{
	str_setf(why, "%s: %s", what, db_strerror(ret));
	if (detail && str_len(detail) != 0)
		str_catf(why, " (%s)", str_cstr(detail));
}

/* ---- Reader ---- */

typedef struct dict_hash {
	dict_t d;
	dict_file_t f;		/* name + ".db", and when to reopen it */
	DB *db;			/* NULL while the file cannot be opened */
	int nul;		/* keys end in NUL: 0 no, 1 yes, -1 unknown */
	str_t val;		/* lookup result */
	str_t wkey, wval;	/* walk results */
} dict_hash_t;

/* Closes a handle even after Berkeley DB "panicked" on a damaged page:
 * without DB_NOPANIC close gives up early and leaks the handle's private
 * environment. */
static void close_db(DB *db)
{
	DB_ENV *env = db->get_env(db);

	if (env != NULL)
		env->set_flags(env, DB_NOPANIC, 1);
	db->close(db, 0);
}

/* Postfix writes "key\0" -> "value\0", Petrel and db_load "key" ->
 * "value".  Postfix's alias tables also hold YP_LAST_MODIFIED and
 * YP_MASTER_NAME records without NUL, so one record does not tell: any
 * of the first few with a NUL-terminated key means Postfix's form (1),
 * none means Petrel's (0); -1 for an empty or unreadable table (lookups
 * then try both). */
#define STYLE_SAMPLE 16

static int key_style(DB *db)
{
	DBC *c;
	DBT k, v;
	int style = -1;

	if (db->cursor(db, NULL, &c, 0) != 0)
		return -1;
	for (int i = 0; i < STYLE_SAMPLE; i++) {
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		if (c->get(c, &k, &v, DB_NEXT) != 0)
			break;
		if (k.size > 0 && ((const char *)k.data)[k.size - 1] == 0) {
			style = 1;
			break;
		}
		style = 0;
	}
	c->close(c);
	return style;
}

/* Opens path read-only and records what file it is. */
static DB *open_db(const char *path, struct stat *st, int *nul, str_t *why)
{
	str_t detail = STR_INIT;
	char what[64 + 4096];
	DB *db;
	int ret, fd;

	bfmt(what, sizeof(what), "cannot open %s", path);
	if ((ret = db_create(&db, NULL, 0)) != 0) {
		bdb_error(why, what, ret, NULL);
		return NULL;
	}
	db->set_errcall(db, bdb_errcall);
	bdb_sink = &detail;
	ret = db->open(db, NULL, path, NULL, DB_HASH, DB_RDONLY | DB_NOMMAP, 0);
	bdb_sink = NULL;
	if (ret == 0 && (ret = db->fd(db, &fd)) == 0 && fstat(fd, st) < 0)
		ret = errno;
	if (ret != 0) {
		bdb_error(why, what, ret, &detail);
		close_db(db);
		db = NULL;
	} else {
		*nul = key_style(db);
	}
	str_release(&detail);
	return db;
}

static bool hash_is_open(dict_t *d)
{
	return ((dict_hash_t *)d)->db != NULL;
}

static int hash_fd(dict_t *d, int *fd)
{
	dict_hash_t *h = (dict_hash_t *)d;

	return h->db != NULL && h->db->fd(h->db, fd) == 0 ? 0 : -1;
}

static bool hash_reopen(dict_t *d, struct stat *st, str_t *why)
{
	dict_hash_t *h = (dict_hash_t *)d;
	int nul;
	DB *db = open_db(h->f.path, st, &nul, why);

	if (h->db)
		close_db(h->db);
	h->db = db;
	if (db != NULL)
		h->nul = nul;
	return db != NULL;
}

static void hash_close(dict_t *d)
{
	dict_hash_t *h = (dict_hash_t *)d;

	if (h->db) {
		close_db(h->db);
		h->db = NULL;
	}
}

static const dict_file_ops_t hash_file_ops = {
	.is_open = hash_is_open,
	.fd = hash_fd,
	.reopen = hash_reopen,
	.close = hash_close,
};

/* Reopens the file if it changed (dict_file_check()). */
static int hash_check(dict_hash_t *h, bool force)
{
	return dict_file_check(&h->d, &h->f, &hash_file_ops, force);
}

/* A stored key or value is checked before use: a damaged or foreign file
 * must give an error, never a surprise in the caller. */
static bool record_ok(const DBT *t, size_t max, bool empty_ok)
{
	return t->size <= max && (empty_ok || t->size > 0)
	    && (t->size == 0 || memchr(t->data, 0, t->size) == NULL);
}

/* Postfix's values (and keys) end in one NUL that is not data. */
static void strip_nul(DBT *t)
{
	if (t->size > 0 && ((const char *)t->data)[t->size - 1] == 0)
		t->size--;
}

static enum dict_status hash_get(dict_t *d, const char *key, const char **value)
{
	dict_hash_t *h = (dict_hash_t *)d;
	str_t detail = STR_INIT;
	DBT k, v;
	int ret;

	if (hash_check(h, false) < 0)
		return DICT_STAT_ERROR;
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = (void *)key;
	/* The key is NUL-terminated, so "with NUL" is one byte more. */
	k.size = (u_int32_t)strlen(key) + (h->nul == 1);
	bdb_sink = &detail;
	ret = h->db->get(h->db, NULL, &k, &v, 0);
	if (ret == DB_NOTFOUND && h->nul < 0) {
		k.size++;
		memset(&v, 0, sizeof(v));
		ret = h->db->get(h->db, NULL, &k, &v, 0);
	}
	bdb_sink = NULL;
	if (ret == DB_NOTFOUND) {
		str_release(&detail);
		return DICT_STAT_NOTFOUND;
	}
	if (ret != 0) {
		str_t why = STR_INIT;
		bdb_error(&why, "lookup error", ret, &detail);
		dict_set_error(d, "%s: %s: %s", d->spec, h->f.path,
		    str_cstr(&why));
		str_release(&why);
		str_release(&detail);
		return DICT_STAT_ERROR;
	}
	str_release(&detail);
	strip_nul(&v);
	if (!record_ok(&v, DICT_VALUE_MAX, true)) {
		/* The key may come from the network: quote it for the log. */
		str_t q = STR_INIT;
		str_quote_printable(&q, key, strlen(key) > 100 ? 100 : strlen(key));
		dict_set_error(d, "%s: %s: damaged value for key \"%s\" (%u bytes%s)",
		    d->spec, h->f.path, str_cstr(&q), (unsigned)v.size,
		    v.size > DICT_VALUE_MAX ? ", too long" : ", NUL byte");
		str_release(&q);
		return DICT_STAT_ERROR;
	}
	str_reset(&h->val);
	str_append(&h->val, v.data, v.size);
	*value = str_cstr(&h->val);
	return DICT_STAT_FOUND;
}

static int hash_walk(dict_t *d, dict_walk_fn fn, void *ctx)
{
	dict_hash_t *h = (dict_hash_t *)d;
	str_t detail = STR_INIT, why = STR_INIT;
	DBC *c = NULL;
	DBT k, v;
	int ret, rc = 0;

	if (hash_check(h, false) < 0)
		return -1;
	bdb_sink = &detail;
	if ((ret = h->db->cursor(h->db, NULL, &c, 0)) != 0) {
		bdb_sink = NULL;
		bdb_error(&why, "cannot read", ret, &detail);
		dict_set_error(d, "%s: %s: %s", d->spec, h->f.path,
		    str_cstr(&why));
		rc = -1;
		goto out;
	}
	h->f.walking = true;
	for (;;) {
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		bdb_sink = &detail;
		ret = c->get(c, &k, &v, DB_NEXT);
		bdb_sink = NULL;
		if (ret == DB_NOTFOUND)
			break;
		if (ret != 0) {
			bdb_error(&why, "read error", ret, &detail);
			dict_set_error(d, "%s: %s: %s", d->spec, h->f.path,
			    str_cstr(&why));
			rc = -1;
			break;
		}
		strip_nul(&k);
		strip_nul(&v);
		if (!record_ok(&k, DICT_KEY_MAX, false) || !record_ok(&v, DICT_VALUE_MAX, true)) {
			dict_set_error(d, "%s: %s: damaged record (key %u bytes, value %u bytes)",
			    d->spec, h->f.path, (unsigned)k.size,
			    (unsigned)v.size);
			rc = -1;
			break;
		}
		str_reset(&h->wkey);
		str_append(&h->wkey, k.data, k.size);
		str_reset(&h->wval);
		str_append(&h->wval, v.data, v.size);
		if (fn(str_cstr(&h->wkey), str_cstr(&h->wval), ctx) != 0) {
			rc = 1;
			break;
		}
	}
	h->f.walking = false;
	c->close(c);
out:
	bdb_sink = NULL;
	str_release(&detail);
	str_release(&why);
	return rc;
}

static int hash_refresh(dict_t *d)
{
	return hash_check((dict_hash_t *)d, true);
}

static void hash_free(dict_t *d)
{
	dict_hash_t *h = (dict_hash_t *)d;

	if (h->db)
		close_db(h->db);
	dict_file_release(&h->f);
	str_release(&h->val);
	str_release(&h->wkey);
	str_release(&h->wval);
}

static char *db_path(const char *name)
{
	str_t p = STR_INIT;

	str_setf(&p, "%s.db", name);
	return str_steal(&p);
}

dict_t *dict_hash_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	dict_hash_t *h;
	char *path = db_path(name);
	struct stat st;
	str_t why = STR_INIT;
	DB *db;
	int nul;

	if ((db = open_db(path, &st, &nul, &why)) == NULL) {
		str_setf(err, "%s: %s", spec, str_cstr(&why));
		str_release(&why);
		free(path);
		return NULL;
	}
	str_release(&why);
	h = (dict_hash_t *)dict_alloc(sizeof(*h), spec, flags);
	dict_file_init(&h->f, path, &st);
	h->db = db;
	h->nul = nul;
	h->d.get = hash_get;
	h->d.walk = hash_walk;
	h->d.refresh = hash_refresh;
	h->d.free = hash_free;
	return &h->d;
}

/* ---- Writer ---- */

typedef struct hash_writer {
	dict_writer_t w;
	DB *db;
	int flags;
	str_t key;
} hash_writer_t;

static enum dict_put_status hw_put(dict_writer_t *, const char *,
    const char *, str_t *);
static int hw_commit(dict_writer_t *, str_t *);
static void hw_abort(dict_writer_t *);

dict_writer_t *dict_hash_writer_open(const char *spec, const char *name,
    int flags, str_t *err)
{
	static unsigned serial;
	str_t detail = STR_INIT, tmp = STR_INIT;
	hash_writer_t *hw;
	DB *db = NULL;
	int ret = 0;

	(void)spec;
	hw = xcalloc(1, sizeof(*hw));
	hw->w.path = db_path(name);
	hw->w.put = hw_put;
	hw->w.commit = hw_commit;
	hw->w.abort = hw_abort;
	hw->flags = flags;
	/* A fresh name each time: DB_EXCL refuses to reuse a leftover of a
	 * crashed run, and two writers of one table do not collide. */
	for (int tries = 0; tries < 100; tries++) {
		str_setf(&tmp, "%s.tmp.%ld.%u", hw->w.path, (long)getpid(), serial++);
		if ((ret = db_create(&db, NULL, 0)) != 0)
			break;
		db->set_errcall(db, bdb_errcall);
		str_reset(&detail);
		bdb_sink = &detail;
		ret = db->open(db, NULL, str_cstr(&tmp), NULL, DB_HASH,
		    DB_CREATE | DB_EXCL, 0644);
		bdb_sink = NULL;
		if (ret == 0)
			break;
		close_db(db);
		db = NULL;
		if (ret != EEXIST)
			break;
	}
	if (db == NULL) {
		char what[64 + 4096];
		bfmt(what, sizeof(what), "cannot create %s", str_cstr(&tmp));
		bdb_error(err, what, ret, &detail);
		str_release(&detail);
		str_release(&tmp);
		free(hw->w.path);
		free(hw);
		return NULL;
	}
	str_release(&detail);
	hw->db = db;
	hw->w.tmp = str_steal(&tmp);
	return &hw->w;
}

static enum dict_put_status hw_put(dict_writer_t *w, const char *key,
    const char *value, str_t *err)
{
	hash_writer_t *hw = (hash_writer_t *)w;
	str_t detail = STR_INIT;
	size_t klen = strlen(key), vlen = strlen(value);
	DBT k, v, old;
	int ret;
	bool existed = false;

	dict_fold_key(&hw->key, key, hw->flags);
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	memset(&old, 0, sizeof(old));
	k.data = hw->key.buf;
	k.size = (u_int32_t)klen;
	v.data = (void *)value;
	v.size = (u_int32_t)vlen;
	bdb_sink = &detail;
	if (hw->flags & DICT_FLAG_DUP_REPLACE) {
		ret = hw->db->get(hw->db, NULL, &k, &old, 0);
		if (ret == 0)
			existed = true;
		if (ret == 0 || ret == DB_NOTFOUND)
			ret = hw->db->put(hw->db, NULL, &k, &v, 0);
	} else {
		ret = hw->db->put(hw->db, NULL, &k, &v, DB_NOOVERWRITE);
	}
	bdb_sink = NULL;
	if (ret == DB_KEYEXIST) {
		str_set(err, "duplicate key \"");
		str_quote_printable(err, hw->key.buf, klen);
		str_cat(err, "\": keeping the first value");
		str_release(&detail);
		return DICT_PUT_DUPLICATE;
	}
	if (ret != 0) {
		char what[64 + 4096];
		bfmt(what, sizeof(what), "cannot write %s", w->tmp);
		bdb_error(err, what, ret, &detail);
		str_release(&detail);
		return DICT_PUT_ERROR;
	}
	str_release(&detail);
	return existed ? DICT_PUT_REPLACED : DICT_PUT_NEW;
}

static void hw_free(hash_writer_t *hw)
{
	free(hw->w.path);
	free(hw->w.tmp);
	str_release(&hw->key);
	free(hw);
}

static void hw_abort(dict_writer_t *w)
{
	hash_writer_t *hw = (hash_writer_t *)w;

	if (hw->db)
		close_db(hw->db);
	unlink(w->tmp);
	hw_free(hw);
}

static int hw_commit(dict_writer_t *w, str_t *err)
{
	hash_writer_t *hw = (hash_writer_t *)w;
	str_t detail = STR_INIT;
	int ret;

	/* close writes every dirty page back to the file. */
	bdb_sink = &detail;
	ret = hw->db->close(hw->db, 0);
	bdb_sink = NULL;
	hw->db = NULL;
	if (ret != 0) {
		char what[64 + 4096];
		bfmt(what, sizeof(what), "cannot write %s", w->tmp);
		bdb_error(err, what, ret, &detail);
		goto fail;
	}
	if ((ret = dict_writer_install(w->tmp, w->path, err)) < 0
	    && access(w->tmp, F_OK) == 0)
		goto fail;
	str_release(&detail);
	hw_free(hw);
	return ret;
fail:
	str_release(&detail);
	unlink(w->tmp);
	hw_free(hw);
	return -1;
}
