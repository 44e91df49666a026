/* Unit tests for libglobal/maps: the tokeniser (braces kept whole), the
 * ordered lookup, errors told from "not found", broken tables kept or
 * refused, an entry the caller answers itself, entries added one at a
 * time (maps_add), tables opened at their first lookup, and a rebuilt
 * file seen after maps_refresh. */
#include <atf-c.h>
#include <string.h>
#include <unistd.h>
#include "dict.h"
#include "maps.h"

/* Every entry of list, each followed by '|'; "!" after one with a '{'
 * never closed. */
static void tokens(const char *list, str_t *out)
{
	const char *p = list, *tok;
	size_t len;
	int rc;

	str_reset(out);
	while ((rc = maps_token(&p, &tok, &len)) != 0) {
		str_append(out, tok, len);
		str_cat(out, rc < 0 ? "!|" : "|");
	}
}

ATF_TC_WITHOUT_HEAD(tokens_and_braces);
ATF_TC_BODY(tokens_and_braces, tc)
{
	str_t s = STR_INIT;

	tokens("", &s);
	ATF_CHECK_STREQ(str_cstr(&s), "");
	tokens(" ,\t\r\n, ", &s);
	ATF_CHECK_STREQ(str_cstr(&s), "");
	tokens("hash:/a, texthash:/b\tcidr:/c,,\n regexp:/d", &s);
	ATF_CHECK_STREQ(str_cstr(&s), "hash:/a|texthash:/b|cidr:/c|regexp:/d|");
	tokens("hash:/a inline:{ a=x, b=y } static:z", &s);
	ATF_CHECK_STREQ(str_cstr(&s), "hash:/a|inline:{ a=x, b=y }|static:z|");
	tokens("inline:{ { k = v, w }, k2=v2 },hash:/a", &s);
	ATF_CHECK_STREQ(str_cstr(&s), "inline:{ { k = v, w }, k2=v2 }|hash:/a|");
	/* A '}' with no '{' is just a character. */
	tokens("a} b", &s);
	ATF_CHECK_STREQ(str_cstr(&s), "a}|b|");
	tokens("hash:/a inline:{ a=x, b=y", &s);
	ATF_CHECK_STREQ(str_cstr(&s), "hash:/a|inline:{ a=x, b=y!|");
	str_release(&s);

	/* In place. */
	char buf[] = " a, inline:{ b, c }\td inline:{ e, f";
	char *cp = buf;
	ATF_CHECK_STREQ(maps_token_cut(&cp), "a");
	ATF_CHECK_STREQ(maps_token_cut(&cp), "inline:{ b, c }");
	ATF_CHECK_STREQ(maps_token_cut(&cp), "d");
	ATF_CHECK_STREQ(maps_token_cut(&cp), "inline:{ e, f");
	ATF_CHECK(maps_token_cut(&cp) == NULL);
	ATF_CHECK(maps_token_cut(&cp) == NULL);
}

ATF_TC_WITHOUT_HEAD(ordered_lookup);
ATF_TC_BODY(ordered_lookup, tc)
{
	str_t err = STR_INIT;
	const char *v = NULL;
	maps_t *m = maps_open("test_maps",
	    "inline:{ a=first, { b = with spaces, and commas } } "
	    "inline:{ a=second, c=third }", 0, NULL, &err);

	ATF_REQUIRE_MSG(m != NULL, "%s", str_cstr(&err));
	ATF_CHECK_STREQ(maps_param(m), "test_maps");
	ATF_REQUIRE_EQ(maps_count(m), 2);
	ATF_CHECK(maps_broken(m, 0) == NULL && maps_broken(m, 1) == NULL);
	ATF_CHECK_EQ(maps_get(m, "a", &v, &err), 1);
	ATF_CHECK_STREQ(v, "first");
	ATF_CHECK_EQ(maps_get(m, "b", &v, &err), 1);
	ATF_CHECK_STREQ(v, "with spaces, and commas");
	ATF_CHECK_EQ(maps_get(m, "c", &v, &err), 1);
	ATF_CHECK_STREQ(v, "third");
	ATF_CHECK_EQ(maps_get(m, "nosuch", NULL, &err), 0);
	maps_free(m);

	/* Nothing listed: nothing found. */
	m = maps_open("test_maps", NULL, MAPS_FLAG_STRICT, NULL, &err);
	ATF_REQUIRE(m != NULL);
	ATF_CHECK_EQ(maps_count(m), 0);
	ATF_CHECK_EQ(maps_get(m, "a", NULL, &err), 0);
	maps_free(m);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(broken_table);
ATF_TC_BODY(broken_table, tc)
{
	str_t err = STR_INIT;
	const char *v = NULL, *reason = NULL;
	const char *list = "inline:{ a=x } hash:/nonexistent/t "
	    "inline:{ b=y }";
	maps_t *m;

	/* Strict: the open fails, naming the parameter. */
	ATF_CHECK(maps_open("test_maps", list, MAPS_FLAG_STRICT, NULL,
	    &err) == NULL);
	ATF_CHECK_MATCH("^test_maps: .*nonexistent", str_cstr(&err));
	ATF_CHECK(maps_open("test_maps", "inline:{ a=x", MAPS_FLAG_STRICT,
	    NULL, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "test_maps: missing '}'");

	/* Kept as broken, with its reason. */
	str_reset(&err);
	m = maps_open("test_maps", list, 0, NULL, &err);
	ATF_REQUIRE(m != NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "");
	ATF_REQUIRE_EQ(maps_count(m), 3);
	ATF_CHECK_STREQ(maps_spec(m, 1), "hash:/nonexistent/t");
	ATF_REQUIRE(maps_broken(m, 1) != NULL);
	ATF_CHECK_MATCH("nonexistent", maps_broken(m, 1));
	/* Found before it: not its business. */
	ATF_CHECK_EQ(maps_get(m, "a", &v, &err), 1);
	ATF_CHECK_STREQ(v, "x");
	/* Not found before it: the lookup fails there, not "not found". */
	ATF_CHECK_EQ(maps_get(m, "b", &v, &err), -1);
	ATF_CHECK_MATCH("^hash:/nonexistent/t: ", str_cstr(&err));
	ATF_CHECK_STREQ(maps_failed(m, &reason), "hash:/nonexistent/t");
	ATF_CHECK_STREQ(reason, maps_broken(m, 1));
	maps_free(m);

	/* Past errors: a later table that knows the key answers. */
	m = maps_open("test_maps", list, MAPS_FLAG_PAST_ERRORS, NULL, &err);
	ATF_REQUIRE(m != NULL);
	ATF_CHECK_EQ(maps_get(m, "b", &v, &err), 1);
	ATF_CHECK_STREQ(v, "y");
	ATF_CHECK_EQ(maps_get(m, "nosuch", &v, &err), -1);
	maps_free(m);

	/* An unclosed '{' without MAPS_FLAG_STRICT: broken, as dict_open
	 * says. */
	m = maps_open("test_maps", "inline:{ a=x", 0, NULL, &err);
	ATF_REQUIRE(m != NULL);
	ATF_REQUIRE_EQ(maps_count(m), 1);
	ATF_CHECK(maps_broken(m, 0) != NULL);
	maps_free(m);
	str_release(&err);
}

/* A table whose file goes away after it was opened: an error, not "not
 * found". */
ATF_TC_WITHOUT_HEAD(lookup_error);
ATF_TC_BODY(lookup_error, tc)
{
	str_t err = STR_INIT;
	const char *reason = NULL;
	dict_writer_t *w = dict_writer_open("hash:t", 0, &err);
	maps_t *m;

	ATF_REQUIRE_MSG(w != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE(dict_writer_put(w, "k", "v", &err) == DICT_PUT_NEW);
	ATF_REQUIRE_MSG(dict_writer_commit(w, &err) == 0, "%s", str_cstr(&err));
	m = maps_open("test_maps", "hash:t", MAPS_FLAG_STRICT, NULL, &err);
	ATF_REQUIRE_MSG(m != NULL, "%s", str_cstr(&err));
	ATF_CHECK_EQ(maps_get(m, "k", NULL, &err), 1);
	ATF_CHECK_EQ(maps_get(m, "x", NULL, &err), 0);
	ATF_REQUIRE(unlink("t.db") == 0);
	sleep(2);	/* hash: checks its file at most once a second */
	ATF_CHECK_EQ(maps_get(m, "k", NULL, &err), -1);
	ATF_CHECK_MATCH("^hash:t: ", str_cstr(&err));
	ATF_CHECK_STREQ(maps_failed(m, &reason), "hash:t");
	ATF_CHECK(reason != NULL && *reason != '\0');
	maps_free(m);
	str_release(&err);
}

static int own_get(const char *key, const char **value)
{
	if (strcmp(key, "mine") != 0)
		return 0;
	if (value != NULL)
		*value = "own answer";
	return 1;
}

ATF_TC_WITHOUT_HEAD(own_entry);
ATF_TC_BODY(own_entry, tc)
{
	static const maps_own_t own = { "unix:passwd.byname", own_get };
	str_t err = STR_INIT;
	const char *v = NULL;
	maps_t *m = maps_open("test_maps",
	    "inline:{ a=x } unix:passwd.byname inline:{ mine=table }",
	    MAPS_FLAG_STRICT, &own, &err);

	ATF_REQUIRE_MSG(m != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE_EQ(maps_count(m), 3);
	ATF_CHECK_EQ(maps_get(m, "mine", &v, &err), 1);
	ATF_CHECK_STREQ(v, "own answer");
	ATF_CHECK_EQ(maps_get(m, "a", &v, &err), 1);
	ATF_CHECK_STREQ(v, "x");
	maps_free(m);
	str_release(&err);
}

/* maps_add: one entry at a time, taken whole (the braces and
 * separators of a list cut by its owner), opened as the maps_t's flags
 * say: refused with MAPS_FLAG_STRICT, kept broken without, lazily with
 * MAPS_FLAG_LAZY; the caller's own entry applies too. */
ATF_TC_WITHOUT_HEAD(add_entry);
ATF_TC_BODY(add_entry, tc)
{
	static const maps_own_t own = { "unix:passwd.byname", own_get };
	static const char braced[] = "inline:{ a=x, { b = y, z } } rest";
	str_t err = STR_INIT;
	const char *v = NULL, *reason = NULL;
	maps_t *m = maps_open("test_list", NULL, MAPS_FLAG_STRICT, &own, &err);

	ATF_REQUIRE(m != NULL);
	ATF_CHECK_EQ(maps_count(m), 0);
	/* The length cuts the entry; ", {" stay inside it. */
	ATF_REQUIRE(maps_add(m, braced, strlen(braced) - 5, &err));
	ATF_REQUIRE(maps_add(m, "unix:passwd.byname", 18, &err));
	ATF_REQUIRE_EQ(maps_count(m), 2);
	ATF_CHECK_STREQ(maps_spec(m, 0), "inline:{ a=x, { b = y, z } }");
	ATF_CHECK(maps_dict(m, 0) != NULL);
	ATF_CHECK(maps_dict(m, 1) == NULL && maps_broken(m, 1) == NULL);
	ATF_CHECK_EQ(maps_get_entry(m, 0, "b", &v, &err), 1);
	ATF_CHECK_STREQ(v, "y, z");
	ATF_CHECK_EQ(maps_get_entry(m, 1, "b", &v, &err), 0);
	ATF_CHECK_EQ(maps_get_entry(m, 1, "mine", &v, &err), 1);
	ATF_CHECK_STREQ(v, "own answer");
	ATF_CHECK_EQ(maps_get(m, "a", &v, &err), 1);
	ATF_CHECK_STREQ(v, "x");
	/* Strict: refused, nothing added, the parameter named. */
	ATF_CHECK(!maps_add(m, "hash:/nonexistent/t", 19, &err));
	ATF_CHECK_MATCH("^test_list: .*nonexistent", str_cstr(&err));
	ATF_CHECK_EQ(maps_count(m), 2);
	maps_free(m);

	/* Not strict: kept broken, its lookups fail with the reason. */
	m = maps_open("test_list", NULL, 0, NULL, NULL);
	ATF_REQUIRE(maps_add(m, "hash:/nonexistent/t", 19, NULL));
	ATF_REQUIRE_EQ(maps_count(m), 1);
	ATF_REQUIRE(maps_broken(m, 0) != NULL);
	str_reset(&err);
	ATF_CHECK_EQ(maps_get_entry(m, 0, "k", &v, &err), -1);
	ATF_CHECK_MATCH("^hash:/nonexistent/t: ", str_cstr(&err));
	ATF_CHECK_STREQ(maps_failed(m, &reason), "hash:/nonexistent/t");
	ATF_CHECK_STREQ(reason, maps_broken(m, 0));
	maps_free(m);

	/* Lazy: opened at the first lookup. */
	m = maps_open("test_list", NULL, MAPS_FLAG_LAZY, NULL, NULL);
	ATF_REQUIRE(maps_add(m, "inline:{ k=v }", 14, NULL));
	ATF_CHECK(maps_dict(m, 0) == NULL && maps_broken(m, 0) == NULL);
	ATF_CHECK_EQ(maps_get_entry(m, 0, "k", &v, NULL), 1);
	ATF_CHECK_STREQ(v, "v");
	ATF_CHECK(maps_dict(m, 0) != NULL);
	maps_free(m);
	str_release(&err);
}

/* Writes hash:name with one pair. */
static void build(const char *spec, const char *key, const char *value)
{
	str_t err = STR_INIT;
	dict_writer_t *w = dict_writer_open(spec, 0, &err);

	ATF_REQUIRE_MSG(w != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE(dict_writer_put(w, key, value, &err) == DICT_PUT_NEW);
	ATF_REQUIRE_MSG(dict_writer_commit(w, &err) == 0, "%s", str_cstr(&err));
	str_release(&err);
}

/* MAPS_FLAG_LAZY: nothing is opened before the first lookup; a table
 * that does not open fails each lookup that reaches it, and is opened
 * once its file exists. */
ATF_TC_WITHOUT_HEAD(lazy_open);
ATF_TC_BODY(lazy_open, tc)
{
	str_t err = STR_INIT;
	const char *v = NULL, *reason = NULL;
	maps_t *m = maps_open("test_maps",
	    "inline:{ a=x, { b = y, z } } hash:later", MAPS_FLAG_LAZY |
	    MAPS_FLAG_STRICT, NULL, &err);

	ATF_REQUIRE_MSG(m != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE_EQ(maps_count(m), 2);
	ATF_CHECK(maps_dict(m, 0) == NULL && maps_dict(m, 1) == NULL);
	ATF_CHECK(maps_broken(m, 1) == NULL);
	ATF_CHECK_EQ(maps_get(m, "b", &v, &err), 1);
	ATF_CHECK_STREQ(v, "y, z");
	ATF_CHECK_STREQ(maps_found(m), "inline:{ a=x, { b = y, z } }");
	ATF_CHECK(maps_dict(m, 0) != NULL && maps_dict(m, 1) == NULL);
	/* Past the first table: the missing file fails the lookup. */
	ATF_CHECK_EQ(maps_get(m, "k", &v, &err), -1);
	ATF_CHECK_MATCH("^hash:later: ", str_cstr(&err));
	ATF_CHECK_STREQ(maps_failed(m, &reason), "hash:later");
	ATF_CHECK(maps_failed_open(m));
	ATF_CHECK(reason != NULL && strstr(reason, "later") != NULL);
	/* Once there, it opens at the next lookup. */
	build("hash:later", "k", "v1");
	ATF_CHECK_EQ(maps_get(m, "k", &v, &err), 1);
	ATF_CHECK_STREQ(v, "v1");
	ATF_CHECK_STREQ(maps_found(m), "hash:later");
	maps_free(m);

	/* The one error a lazy list still reports at open. */
	ATF_CHECK(maps_open("test_maps", "inline:{ a=x", MAPS_FLAG_LAZY |
	    MAPS_FLAG_STRICT, NULL, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "test_maps: missing '}'");
	str_release(&err);
}

/* A rebuilt file is read again after maps_refresh; a lookup error is
 * not an open failure. */
ATF_TC_WITHOUT_HEAD(refresh);
ATF_TC_BODY(refresh, tc)
{
	str_t err = STR_INIT;
	const char *v = NULL;
	maps_t *m;

	build("hash:t", "k", "old");
	m = maps_open("test_maps", "hash:t", MAPS_FLAG_STRICT, NULL, &err);
	ATF_REQUIRE_MSG(m != NULL, "%s", str_cstr(&err));
	ATF_CHECK_EQ(maps_get(m, "k", &v, &err), 1);
	ATF_CHECK_STREQ(v, "old");
	build("hash:t", "k", "new");
	maps_refresh(m);
	ATF_CHECK_EQ(maps_get(m, "k", &v, &err), 1);
	ATF_CHECK_STREQ(v, "new");
	ATF_REQUIRE(unlink("t.db") == 0);
	maps_refresh(m);
	ATF_CHECK_EQ(maps_get(m, "k", &v, &err), -1);
	ATF_CHECK(!maps_failed_open(m));
	maps_free(m);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, tokens_and_braces);
	ATF_TP_ADD_TC(tp, ordered_lookup);
	ATF_TP_ADD_TC(tp, broken_table);
	ATF_TP_ADD_TC(tp, lookup_error);
	ATF_TP_ADD_TC(tp, own_entry);
	ATF_TP_ADD_TC(tp, add_entry);
	ATF_TP_ADD_TC(tp, lazy_open);
	ATF_TP_ADD_TC(tp, refresh);
	return atf_no_error();
}
