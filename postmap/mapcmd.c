/* postmap / postalias common code (see mapcmd.h, man/postmap.1). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config.h"
#include "dict.h"
#include "htable.h"
#include "log.h"
#include "mapcmd.h"
#include "mem.h"
#include "pconfig.h"
#include "server.h"

struct mapcmd_build {
	const mapcmd_spec_t *spec;
	dict_writer_t *w;
	unsigned long count;
};

int mapcmd_put(mapcmd_build_t *b, const char *key, const char *value,
    const char *file, int lineno, str_t *err)
{
	str_t why = STR_INIT;

	switch (dict_writer_put(b->w, key, value, &why)) {
	case DICT_PUT_ERROR:
		str_setf(err, "%s:%d: %s", file, lineno, str_cstr(&why));
		str_release(&why);
		return -1;
	case DICT_PUT_DUPLICATE:
		log_warning("%s:%d: duplicate key \"%s\": the first value is "
		    "kept (-r keeps the last)", file, lineno, key);
		break;
	case DICT_PUT_NEW:
		b->count++;
		break;
	case DICT_PUT_REPLACED:
		break;
	}
	str_release(&why);
	return 0;
}

/* "type:name" for an argument; a bare name is hash:name. */
static char *table_spec(const char *arg)
{
	const char *colon = strchr(arg, ':');
	str_t s = STR_INIT;

	/* A ':' after a '/' is part of a path, not a type. */
	if (colon != NULL && memchr(arg, '/', (size_t)(colon - arg)) == NULL)
		return xstrdup(arg);
	str_setf(&s, "hash:%s", arg);
	return str_steal(&s);
}

/* An exclusive lock on the table file target (path.db, path.lmdb) for a
 * writer, so that updates (-i, -d) and rebuilds of one table happen one
 * after the other and none is lost.  flock(2), not fcntl: reading the
 * old table opens and closes the same file, which would drop an fcntl
 * lock.  Readers take no lock (they see the old or the new file).  The
 * file locked must still be the one at target once the lock is held:
 * another writer may have renamed a new table over it meanwhile.
 * Returns the descriptor, -1 when there is no table (errno ENOENT), -2
 * after logging an error. */
static int lock_table(const char *target)
{
	for (int tries = 0; tries < 100; tries++) {
		struct stat held, now;
		int fd = open(target, O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			if (errno == ENOENT)
				return -1;
			log_error("cannot open %s: %s", target, strerror(errno));
			return -2;
		}
		if (flock(fd, LOCK_EX) < 0) {
			log_error("cannot lock %s: %s", target, strerror(errno));
			close(fd);
			return -2;
		}
		if (fstat(fd, &held) == 0 && stat(target, &now) == 0
		    && held.st_dev == now.st_dev && held.st_ino == now.st_ino)
			return fd;
		close(fd);
	}
	log_error("%s: replaced by other writers 100 times while waiting for "
	    "its lock; giving up", target);
	return -2;
}

static void unlock_table(int fd)
{
	if (fd >= 0)
		close(fd);	/* drops the flock */
}

static int build(const mapcmd_spec_t *spec, const char *arg, int flags)
{
	char *tspec = table_spec(arg);
	const char *colon = strchr(tspec, ':');
	const char *path = colon + 1;
	str_t err = STR_INIT, db = STR_INIT;
	size_t tlen = (size_t)(colon - tspec);
	mapcmd_build_t b = { .spec = spec };
	struct stat st;
	int rc = MAPCMD_EX_FAIL, lock = -1;

	if (tlen != 4 || (strncmp(tspec, "hash", 4) != 0
	    && strncmp(tspec, "lmdb", 4) != 0)) {
		log_error("%s: cannot build tables of type \"%.*s\": only hash: "
		    "and lmdb: tables are built (texthash:, cidr:, regexp: and "
		    "pcre: read the text file directly)",
		    tspec, (int)tlen, tspec);
		goto out;
	}
	if (*path == 0) {
		log_error("%s: missing file name", tspec);
		goto out;
	}
	if (stat(path, &st) < 0) {
		log_error("%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		log_error("%s: not a regular file", path);
		goto out;
	}
	if ((b.w = dict_writer_open(tspec, flags, &err)) == NULL) {
		log_error("%s", str_cstr(&err));
		goto out;
	}
	str_set(&db, dict_writer_target(b.w));
	if ((lock = lock_table(str_cstr(&db))) == -2) {
		dict_writer_abort(b.w);
		goto out;
	}
	if (spec->load(path, &b, &err) < 0) {
		log_error("%s", str_cstr(&err));
		log_error("%s not changed", str_cstr(&db));
		dict_writer_abort(b.w);
		goto out;
	}
	if (dict_writer_commit(b.w, &err) < 0) {
		log_error("%s", str_cstr(&err));
		goto out;
	}
	/* Built by root for a file someone else owns: the table belongs to
	 * that owner too (local runs alias commands with the rights of the
	 * table's owner). */
	if (geteuid() == 0 && st.st_uid != 0
	    && lchown(str_cstr(&db), st.st_uid, st.st_gid) < 0) {
		log_error("chown %s: %s", str_cstr(&db), strerror(errno));
		goto out;
	}
	if (log_verbose)
		log_info("%s: %lu entries", str_cstr(&db), b.count);
	rc = MAPCMD_EX_OK;
out:
	unlock_table(lock);
	str_release(&err);
	str_release(&db);
	free(tspec);
	return rc;
}

/* ---- Updates of an existing table: -i and -d ----------------------------
 *
 * The table is written anew, as for a build: the old entries (less the
 * deleted ones) and the new ones go into a temporary file that replaces
 * the table in one rename, under the table's lock.  A daemon reading the
 * table sees the old or the new one, never a half-written file, and
 * reopens it by itself as after a rebuild. */

struct update {
	mapcmd_build_t *b;
	htable_t *del;		/* -d: keys to delete (value: found marker) */
	const char *target;
	str_t err;
	bool failed;
};

static int copy_entry(const char *key, const char *value, void *ctx)
{
	struct update *u = ctx;

	if (u->del != NULL && htable_find(u->del, key) != NULL) {
		htable_put(u->del, key, (void *)1);
		return 0;
	}
	switch (dict_writer_put(u->b->w, key, value, &u->err)) {
	case DICT_PUT_ERROR:
		u->failed = true;
		return 1;
	case DICT_PUT_NEW:
		u->b->count++;
		break;
	default:
		break;
	}
	return 0;
}

static void count_found(htable_entry_t *e, void *ctx)
{
	if (e->value != NULL)
		(*(unsigned long *)ctx)++;
}

/* Rewrites table arg with what -i reads from standard input (del NULL)
 * or without the keys of del.  Returns an exit status; *found counts
 * the keys of del found. */
static int update(const mapcmd_spec_t *spec, const char *arg, int flags,
    htable_t *del, unsigned long *found)
{
	char *tspec = table_spec(arg);
	const char *colon = strchr(tspec, ':');
	size_t tlen = (size_t)(colon - tspec);
	mapcmd_build_t b = { .spec = spec };
	struct update u = { .b = &b, .del = del, .err = STR_INIT };
	str_t db = STR_INIT;
	dict_t *old = NULL;
	struct stat was;
	int rc = MAPCMD_EX_FAIL, lock = -1;

	if (tlen != 4 || (strncmp(tspec, "hash", 4) != 0
	    && strncmp(tspec, "lmdb", 4) != 0)) {
		log_error("%s: cannot update tables of type \"%.*s\": only "
		    "hash: and lmdb: tables are written", tspec, (int)tlen,
		    tspec);
		goto out;
	}
	if (colon[1] == 0) {
		log_error("%s: missing file name", tspec);
		goto out;
	}
	/* Keys to delete are compared as the table stores them. */
	if ((b.w = dict_writer_open(tspec, flags, &u.err)) == NULL) {
		log_error("%s", str_cstr(&u.err));
		goto out;
	}
	str_set(&db, dict_writer_target(b.w));
	u.target = str_cstr(&db);
	lock = lock_table(u.target);
	if (lock == -2 || (lock == -1 && del != NULL)) {
		if (lock == -1)
			log_error("cannot open %s: %s", u.target,
			    strerror(ENOENT));
		dict_writer_abort(b.w);
		goto out;
	}
	if (lock >= 0) {
		if ((old = dict_open(tspec, flags, &u.err)) == NULL) {
			log_error("%s", str_cstr(&u.err));
			dict_writer_abort(b.w);
			goto out;
		}
		if (dict_walk(old, copy_entry, &u) < 0 || u.failed) {
			if (u.failed)
				log_error("%s: %s", u.target, str_cstr(&u.err));
			else
				log_error("%s: %s", tspec, dict_errmsg(old));
			log_error("%s not changed", u.target);
			dict_writer_abort(b.w);
			goto out;
		}
	}
	if (del == NULL && spec->load("/dev/stdin", &b, &u.err) < 0) {
		log_error("%s", str_cstr(&u.err));
		log_error("%s not changed", u.target);
		dict_writer_abort(b.w);
		goto out;
	}
	if (del != NULL) {
		unsigned long n = 0;
		htable_walk(del, count_found, &n);
		*found += n;
		if (n == 0) {		/* nothing to change */
			dict_writer_abort(b.w);
			rc = MAPCMD_EX_OK;
			goto out;
		}
	}
	if (dict_writer_commit(b.w, &u.err) < 0) {
		log_error("%s", str_cstr(&u.err));
		goto out;
	}
	/* The new file keeps the old one's owner and mode (local runs the
	 * commands of an alias table with its owner's rights). */
	if (lock >= 0 && fstat(lock, &was) == 0) {
		if (geteuid() == 0 && lchown(u.target, was.st_uid,
		    was.st_gid) < 0)
			log_warning("chown %s: %s", u.target, strerror(errno));
		if (chmod(u.target, was.st_mode & 07777) < 0)
			log_warning("chmod %s: %s", u.target, strerror(errno));
	}
	if (log_verbose)
		log_info("%s: %lu entries", u.target, b.count);
	rc = MAPCMD_EX_OK;
out:
	if (old != NULL)
		dict_close(old);
	unlock_table(lock);
	str_release(&u.err);
	str_release(&db);
	free(tspec);
	return rc;
}

static void clear_found(htable_entry_t *e, void *ctx)
{
	(void)ctx;
	e->value = NULL;
}

/* -d KEY or -d -: the keys deleted from every table.  0 when at least
 * one was found (in any table), 1 when none was, 2 when a table could
 * not be updated. */
static int delete_keys(const mapcmd_spec_t *spec, char **tables, int n,
    int flags, const char *key)
{
	htable_t *del = htable_new(16, 0);
	unsigned long found = 0;
	int rc = MAPCMD_EX_OK;
	char *line = NULL;
	size_t cap = 0;

	if (strcmp(key, "-") == 0) {
		while (getline(&line, &cap, stdin) > 0) {
			char *k = str_trim(line);
			if (*k == 0)
				continue;
			if (!(flags & DICT_FLAG_CASE_SENSITIVE))
				str_lower(k);
			(void)htable_add(del, k, NULL);
		}
		free(line);
	} else {
		char *k = xstrdup(key);
		if (!(flags & DICT_FLAG_CASE_SENSITIVE))
			str_lower(k);
		(void)htable_add(del, k, NULL);
		free(k);
	}
	for (int i = 0; i < n; i++) {
		htable_walk(del, clear_found, NULL);
		if (htable_size(del) > 0 && update(spec, tables[i], flags, del,
		    &found) != MAPCMD_EX_OK)
			rc = MAPCMD_EX_ERROR;
	}
	htable_free(del, NULL);
	if (rc == MAPCMD_EX_OK && found == 0)
		rc = MAPCMD_EX_NOTFOUND;
	return rc;
}

/* Opens every table for -q; NULL after logging on failure. */
static dict_t **open_all(char **tables, int n, int flags)
{
	dict_t **d = xcalloc((size_t)n, sizeof(*d));
	str_t err = STR_INIT;

	for (int i = 0; i < n; i++) {
		char *tspec = table_spec(tables[i]);

		d[i] = dict_open(tspec, flags, &err);
		free(tspec);
		if (d[i] == NULL) {
			log_error("%s", str_cstr(&err));
			while (i-- > 0)
				dict_close(d[i]);
			free(d);
			d = NULL;
			break;
		}
	}
	str_release(&err);
	return d;
}

static void close_all(dict_t **d, int n)
{
	for (int i = 0; i < n; i++)
		dict_close(d[i]);
	free(d);
}

/* The first table that has key answers.  Returns an exit status and
 * prints the value (after the key when show_key). */
static int query(dict_t **d, int n, const char *key, bool show_key,
    const char *sep)
{
	for (int i = 0; i < n; i++) {
		const char *value;
		enum dict_status st = dict_get(d[i], key, &value);

		if (st == DICT_STAT_ERROR) {
			log_error("%s: %s", dict_spec(d[i]), dict_errmsg(d[i]));
			return MAPCMD_EX_ERROR;
		}
		if (st == DICT_STAT_FOUND) {
			if (show_key)
				printf("%s%s%s\n", key, sep, value);
			else
				printf("%s\n", value);
			return MAPCMD_EX_OK;
		}
	}
	return MAPCMD_EX_NOTFOUND;
}

/* -q -: one key a line from standard input, "key<sep>value" for each
 * one found, flushed at once (so a program can hold a conversation).
 * The tables stay open, and hash: tables are reopened when rebuilt, as
 * in a daemon.  0 when at least one key was found. */
static int query_stdin(dict_t **d, int n, const char *sep)
{
	char *line = NULL;
	size_t cap = 0;
	int rc = MAPCMD_EX_NOTFOUND;

	while (getline(&line, &cap, stdin) > 0) {
		char *key = str_trim(line);
		int r;

		if (*key == 0)
			continue;
		r = query(d, n, key, true, sep);
		fflush(stdout);
		if (r == MAPCMD_EX_ERROR) {
			rc = r;
			break;
		}
		if (r == MAPCMD_EX_OK)
			rc = MAPCMD_EX_OK;
	}
	free(line);
	return rc;
}

static int print_entry(const char *key, const char *value, void *ctx)
{
	printf("%s%s%s\n", key, (const char *)ctx, value);
	return 0;
}

static int dump(char **tables, int n, int flags, const char *sep)
{
	str_t err = STR_INIT;
	int rc = MAPCMD_EX_OK;

	for (int i = 0; i < n && rc == MAPCMD_EX_OK; i++) {
		char *tspec = table_spec(tables[i]);
		dict_t *d = dict_open(tspec, flags, &err);

		if (d == NULL) {
			log_error("%s", str_cstr(&err));
			rc = MAPCMD_EX_ERROR;
		} else if (dict_walk(d, print_entry, (void *)sep) < 0) {
			log_error("%s: %s", tspec, dict_errmsg(d));
			rc = MAPCMD_EX_ERROR;
		}
		if (d != NULL)
			dict_close(d);
		free(tspec);
	}
	str_release(&err);
	return rc;
}

static void usage(const char *name)
{
	fprintf(stderr,
	    "usage: %s [-c config_dir] [-frv] [type:]file...\n"
	    "       %s [-c config_dir] [-f] -q key|- [type:]file...\n"
	    "       %s [-c config_dir] [-f] -s [type:]file...\n"
	    "       %s [-c config_dir] [-frv] -i [type:]file...\n"
	    "       %s [-c config_dir] [-f] -d key|- [type:]file...\n",
	    name, name, name, name, name);
	exit(MAPCMD_EX_USAGE);
}

int mapcmd_main(int argc, char **argv, const mapcmd_spec_t *spec)
{
	const char *dir = NULL, *key = NULL, *delkey = NULL;
	bool dumpmode = false, incremental = false;
	int flags = 0, c, rc = MAPCMD_EX_OK;

	log_init(spec->name);
	log_to_stderr();
	while ((c = getopt(argc, argv, "c:d:fiq:rsv")) != -1) {
		switch (c) {
		case 'c':
			dir = optarg;
			break;
		case 'd':
			delkey = optarg;
			break;
		case 'i':
			incremental = true;
			break;
		case 'f':
			flags |= DICT_FLAG_CASE_SENSITIVE;
			break;
		case 'q':
			key = optarg;
			break;
		case 'r':
			flags |= DICT_FLAG_DUP_REPLACE;
			break;
		case 's':
			dumpmode = true;
			break;
		case 'v':
			log_verbose++;
			break;
		default:
			usage(spec->name);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || (key != NULL) + dumpmode + incremental
	    + (delkey != NULL) > 1)
		usage(spec->name);
	if ((key != NULL && *key == 0) || (delkey != NULL && *delkey == 0)) {
		log_error("%s: empty key", key != NULL ? "-q" : "-d");
		return MAPCMD_EX_USAGE;
	}
	/* main.cf is read for its parameters being valid, as every command
	 * does; a broken one is reported but does not stop a table build. */
	if (dir == NULL)
		dir = getenv("MAIL_CONFIG");
	if (dir == NULL || *dir == 0)
		dir = DEF_CONFIG_DIR;
	if (access(dir, F_OK) == 0 && pconfig_load(dir) < 0)
		log_lines(LOG_LVL_WARNING, pconfig_errors());

	if (key != NULL) {
		dict_t **d = open_all(argv, argc, flags);

		if (d == NULL)
			return MAPCMD_EX_ERROR;
		if (strcmp(key, "-") == 0)
			rc = query_stdin(d, argc, spec->dump_sep);
		else
			rc = query(d, argc, key, false, spec->dump_sep);
		close_all(d, argc);
		return rc;
	}
	if (dumpmode)
		return dump(argv, argc, flags, spec->dump_sep);
	if (delkey != NULL)
		return delete_keys(spec, argv, argc, flags, delkey);
	if (incremental) {
		/* Standard input can be read once: one table. */
		if (argc != 1) {
			log_error("-i updates one table at a time");
			return MAPCMD_EX_USAGE;
		}
		return update(spec, argv[0], flags, NULL, NULL);
	}
	for (int i = 0; i < argc; i++)
		if (build(spec, argv[i], flags) != MAPCMD_EX_OK)
			rc = MAPCMD_EX_FAIL;
	return rc;
}
