/* Unit tests for libutil/dict lmdb: tables: the writer, lookups, listing,
 * records with a trailing NUL (as Postfix writes them), reopening rebuilt
 * files, the jailed mode, and missing or foreign files. */
#include <atf-c.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config.h"
#include "dict.h"
#include "str.h"
#include "testutil.h"
#ifdef HAVE_LMDB
#include <lmdb.h>
#endif

#ifdef HAVE_LMDB
static void build(const char *spec, int flags, ...)
{
	str_t err = STR_INIT;
	dict_writer_t *w = dict_writer_open(spec, flags, &err);
	const char *k, *v;
	va_list ap;

	if (w == NULL)
		atf_tc_fail("writer %s: %s", spec, str_cstr(&err));
	va_start(ap, flags);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		enum dict_put_status st = dict_writer_put(w, k, v, &err);
		ATF_REQUIRE_MSG(st == DICT_PUT_NEW || st == DICT_PUT_REPLACED,
		    "put %s: %d %s", k, st, str_cstr(&err));
	}
	va_end(ap);
	if (dict_writer_commit(w, &err) != 0)
		atf_tc_fail("commit %s: %s", spec, str_cstr(&err));
	str_release(&err);
}

static int collect(const char *key, const char *value, void *ctx)
{
	str_catf(ctx, "%s=%s;", key, value);
	return 0;
}

/* Writes raw records (sizes given) with LMDB itself. */
static void raw_build(const char *path, const char *k1, size_t k1len,
    const char *v1, size_t v1len)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { k1len, (void *)k1 }, v = { v1len, (void *)v1 };

	ATF_REQUIRE_EQ(mdb_env_create(&env), 0);
	ATF_REQUIRE_EQ(mdb_env_open(env, path, MDB_NOSUBDIR, 0644), 0);
	ATF_REQUIRE_EQ(mdb_txn_begin(env, NULL, 0, &txn), 0);
	ATF_REQUIRE_EQ(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	ATF_REQUIRE_EQ(mdb_put(txn, dbi, &k, &v, 0), 0);
	ATF_REQUIRE_EQ(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}
#endif

#define NEED_LMDB() do { } while (0)
#ifndef HAVE_LMDB
#undef NEED_LMDB
#define NEED_LMDB() atf_tc_skip("built without LMDB (liblmdb-dev)")
#endif

ATF_TC_WITHOUT_HEAD(writer_and_lookup);
ATF_TC_BODY(writer_and_lookup, tc)
{
	NEED_LMDB();
#ifdef HAVE_LMDB
	build("lmdb:map", 0, "Alice@Example.ORG", "local:alice", "bob", "smtp:[relay]:25", NULL);
	ATF_CHECK(access("map.lmdb", F_OK) == 0);
	/* no lock file: readers and writers use none */
	ATF_CHECK(access("map.lmdb-lock", F_OK) != 0);
	dict_t *d = open_ok("lmdb:map", 0);
	check_value(d, "alice@example.org", "local:alice");
	check_value(d, "ALICE@example.org", "local:alice");
	check_value(d, "bob", "smtp:[relay]:25");
	check_value(d, "carol", NULL);
	str_t out = STR_INIT;
	ATF_CHECK_EQ(dict_walk(d, collect, &out), 0);
	/* LMDB lists in key order */
	ATF_CHECK_STREQ(str_cstr(&out), "alice@example.org=local:alice;bob=smtp:[relay]:25;");
	dict_close(d);
	ATF_CHECK(access("map.lmdb-lock", F_OK) != 0);

	/* duplicates: first kept (reported), or replaced */
	str_t err = STR_INIT;
	dict_writer_t *w = dict_writer_open("lmdb:dup", 0, &err);
	ATF_REQUIRE(w != NULL);
	ATF_CHECK_EQ(dict_writer_put(w, "k", "one", &err), DICT_PUT_NEW);
	ATF_CHECK_EQ(dict_writer_put(w, "K", "two", &err), DICT_PUT_DUPLICATE);
	ATF_CHECK(strstr(str_cstr(&err), "duplicate key \"k\"") != NULL);
	ATF_CHECK_EQ(dict_writer_put(w, "", "x", &err), DICT_PUT_ERROR);
	ATF_CHECK_EQ(dict_writer_put(w, "x", "", &err), DICT_PUT_ERROR);
	ATF_CHECK_EQ(dict_writer_commit(w, &err), 0);
	d = open_ok("lmdb:dup", 0);
	check_value(d, "k", "one");
	dict_close(d);
	build("lmdb:dup", DICT_FLAG_DUP_REPLACE, "k", "one", "k", "two", NULL);
	d = open_ok("lmdb:dup", 0);
	check_value(d, "k", "two");
	dict_close(d);

	/* case-sensitive tables */
	build("lmdb:cs", DICT_FLAG_CASE_SENSITIVE, "Key", "v", NULL);
	d = open_ok("lmdb:cs", DICT_FLAG_CASE_SENSITIVE);
	check_value(d, "Key", "v");
	check_value(d, "key", NULL);
	dict_close(d);

	/* abort leaves nothing behind */
	w = dict_writer_open("lmdb:gone", 0, &err);
	ATF_REQUIRE(w != NULL);
	ATF_CHECK_EQ(dict_writer_put(w, "k", "v", &err), DICT_PUT_NEW);
	dict_writer_abort(w);
	ATF_CHECK(access("gone.lmdb", F_OK) != 0);
	ATF_CHECK_EQ(system("ls | grep -q tmp"), 256);
	str_release(&err);
	str_release(&out);
#endif
}

ATF_TC_WITHOUT_HEAD(postfix_nul_records);
ATF_TC_BODY(postfix_nul_records, tc)
{
	NEED_LMDB();
#ifdef HAVE_LMDB
	raw_build("pf.lmdb", "alice", 6, "local:alice", 12);
	dict_t *d = open_ok("lmdb:pf", 0);
	check_value(d, "alice", "local:alice");
	check_value(d, "Alice", "local:alice");
	check_value(d, "alic", NULL);
	str_t out = STR_INIT;
	ATF_CHECK_EQ(dict_walk(d, collect, &out), 0);
	ATF_CHECK_STREQ(str_cstr(&out), "alice=local:alice;");
	dict_close(d);
	/* A Postfix alias table: "@\0" and "YP_*" (no NUL) sort first. */
	raw_build("al.lmdb", "YP_LAST_MODIFIED", 16, "1795688052", 10);
	raw_build("al.lmdb", "@", 2, "@", 2);
	raw_build("al.lmdb", "YP_MASTER_NAME", 14, "host", 4);
	raw_build("al.lmdb", "postmaster", 11, "root", 5);
	d = open_ok("lmdb:al", 0);
	check_value(d, "postmaster", "root");
	dict_close(d);
	raw_build("bad.lmdb", "k", 1, "a\0b", 3);
	d = open_ok("lmdb:bad", 0);
	ATF_CHECK_EQ(dict_get(d, "k", NULL), DICT_STAT_ERROR);
	ATF_CHECK(strstr(dict_errmsg(d), "damaged value") != NULL);
	dict_close(d);
	str_release(&out);
#endif
}

static int changes;
static void on_changed(const char *spec)
{
	(void)spec;
	changes++;
}

ATF_TC_WITHOUT_HEAD(reopen_and_jail);
ATF_TC_BODY(reopen_and_jail, tc)
{
	NEED_LMDB();
#ifdef HAVE_LMDB
	build("lmdb:map", 0, "k", "v1", NULL);
	dict_t *d = open_ok("lmdb:map", 0);
	check_value(d, "k", "v1");
	build("lmdb:map", 0, "k", "v2", NULL);
	ATF_CHECK_EQ(dict_refresh(d), 0);
	check_value(d, "k", "v2");
	/* removed: errors, not stale data */
	ATF_REQUIRE_EQ(rename("map.lmdb", "away.lmdb"), 0);
	ATF_CHECK_EQ(dict_refresh(d), -1);
	ATF_CHECK_EQ(dict_get(d, "k", NULL), DICT_STAT_ERROR);
	ATF_CHECK(strstr(dict_errmsg(d), "cannot open map.lmdb") != NULL);
	ATF_REQUIRE_EQ(rename("away.lmdb", "map.lmdb"), 0);
	ATF_CHECK_EQ(dict_refresh(d), 0);
	check_value(d, "k", "v2");

	/* jailed: keeps its file, reports the rebuild once */
	dict_set_jailed(on_changed);
	build("lmdb:map", 0, "k", "v3", NULL);
	ATF_CHECK_EQ(dict_refresh(d), 0);
	ATF_CHECK_EQ(changes, 1);
	check_value(d, "k", "v2");
	ATF_CHECK_EQ(dict_refresh(d), 0);
	ATF_CHECK_EQ(changes, 1);
	dict_close(d);
#endif
}

ATF_TC_WITHOUT_HEAD(missing_and_foreign);
ATF_TC_BODY(missing_and_foreign, tc)
{
	NEED_LMDB();
#ifdef HAVE_LMDB
	str_t err = STR_INIT;
	ATF_CHECK(dict_open("lmdb:nothere", 0, &err) == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "cannot open nothere.lmdb") != NULL, "%s", str_cstr(&err));
	put_file("text.lmdb", "this is not an LMDB file, just some text\n");
	ATF_CHECK(dict_open("lmdb:text", 0, &err) == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "cannot open text.lmdb") != NULL, "%s", str_cstr(&err));
	put_file("empty.lmdb", "");
	ATF_CHECK(dict_open("lmdb:empty", 0, &err) == NULL);
	ATF_CHECK(dict_writer_open("lmdb:/nonexistent/dir/x", 0, &err) == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "cannot create") != NULL, "%s", str_cstr(&err));
	str_release(&err);
#endif
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, writer_and_lookup);
	ATF_TP_ADD_TC(tp, postfix_nul_records);
	ATF_TP_ADD_TC(tp, reopen_and_jail);
	ATF_TP_ADD_TC(tp, missing_and_foreign);
	return atf_no_error();
}
