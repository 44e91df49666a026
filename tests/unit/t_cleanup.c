/* Unit tests of cleanup's address and header helpers (cleanup/cleanup_addr.c,
 * cleanup_hdr.c): validity, completion, canonical rewriting with its key
 * order, virtual alias expansion and its limits, the duplicate filter,
 * header names, dates, Message-ID, display names. */
#include <atf-c.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cleanup/cleanup.h"
#include "maps.h"
#include "dict.h"
#include "mem.h"
#include "pconfig.h"

static cleanup_cfg_t cfg;

/* Loads main.cf text (queue in ./q) and the cleanup configuration. */
static void setup(const char *extra)
{
	char cwd[PATH_MAX];
	str_t text = STR_INIT, err = STR_INIT;

	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	str_setf(&text, "queue_directory = %s/q\nmyhostname = host.example.com\n"
	    "mydomain = example.com\n%s\n", cwd, extra ? extra : "");
	if (pconfig_load_text(str_cstr(&text), "main.cf") < 0)
		atf_tc_fail("main.cf: %s", pconfig_errors());
	if (cleanup_cfg_load(&cfg, &err) < 0)
		atf_tc_fail("cleanup_cfg_load: %s", str_cstr(&err));
	str_release(&text);
	str_release(&err);
}

static void teardown(void)
{
	cleanup_cfg_free(&cfg);
	pconfig_reset();
}

/* ---- validity and completion ---- */

ATF_TC_WITHOUT_HEAD(addr_valid);
ATF_TC_BODY(addr_valid, tc)
{
	static const char *good[] = {
		"user@example.com", "user", "john doe@example.com",
		"a\"b@x.example", "user@[192.0.2.1]", "jörg@example.de",
		"user+ext@sub.example.org", "first.last@example.com",
	};
	static const char *bad[] = {
		"user@", "user@exa mple.com", "user@-bad.example",
		"user@example..com", "us\ter@example.com", "a\nb@x.example",
		"user@1.2.3.4", "\x01@example.com",
	};
	str_t why = STR_INIT;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ATF_CHECK_MSG(cleanup_addr_valid(good[i], strlen(good[i]), &why),
		    "%s: %s", good[i], str_cstr(&why));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		str_reset(&why);
		ATF_CHECK_MSG(!cleanup_addr_valid(bad[i], strlen(bad[i]), &why),
		    "accepted %s", bad[i]);
		ATF_CHECK_MSG(str_len(&why) > 0, "no reason for %s", bad[i]);
	}
	ATF_CHECK(!cleanup_addr_valid("", 0, &why));
	ATF_CHECK(!cleanup_addr_valid("a\0b@x.example", 13, &why));
	ATF_CHECK(strstr(str_cstr(&why), "NUL") != NULL);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(addr_complete);
ATF_TC_BODY(addr_complete, tc)
{
	str_t out = STR_INIT;

	setup("myorigin = origin.example");
	cleanup_addr_complete(&cfg, "user", &out);
	ATF_CHECK_STREQ(str_cstr(&out), "user@origin.example");
	cleanup_addr_complete(&cfg, "user@x.example", &out);
	ATF_CHECK_STREQ(str_cstr(&out), "user@x.example");
	cleanup_addr_complete(&cfg, "", &out);
	ATF_CHECK_STREQ(str_cstr(&out), "");
	teardown();
	/* myorigin defaults to myhostname */
	setup(NULL);
	cleanup_addr_complete(&cfg, "bob", &out);
	ATF_CHECK_STREQ(str_cstr(&out), "bob@host.example.com");
	teardown();
	setup("append_at_myorigin = no");
	cleanup_addr_complete(&cfg, "bob", &out);
	ATF_CHECK_STREQ(str_cstr(&out), "bob");
	teardown();
	str_release(&out);
}

/* ---- canonical ---- */

static void canon(const char *addr, const char *want)
{
	str_t out = STR_INIT, err = STR_INIT;
	int rc = cleanup_addr_rewrite_recipient(&cfg, addr, &out, &err);

	ATF_CHECK_MSG(rc == CLEANUP_ADDR_OK, "%s: %s", addr, str_cstr(&err));
	ATF_CHECK_MSG(strcmp(str_cstr(&out), want) == 0, "%s: got %s, want %s",
	    addr, str_cstr(&out), want);
	str_release(&out);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(canonical_keys);
ATF_TC_BODY(canonical_keys, tc)
{
	setup("recipient_delimiter = +\n"
	    "mydestination = $myhostname, local.example\n"
	    "canonical_maps = inline:{ full@x.example=Full.Name@x.example, "
	    "plain@x.example=renamed@y.example, localuser=lu@z.example, "
	    "@old.example=@new.example, @catch.example=all@z.example, "
	    "{ spaced@x.example = \"john doe\"@x.example } }");
	canon("full@x.example", "Full.Name@x.example");
	/* case is folded in lookups */
	canon("FULL@X.example", "Full.Name@x.example");
	/* the extension is kept when the key lacked it */
	canon("plain+tag@x.example", "renamed+tag@y.example");
	/* the local part alone only for local domains */
	canon("localuser@local.example", "lu@z.example");
	canon("localuser", "lu@z.example");	/* completed to myorigin */
	canon("localuser@x.example", "localuser@x.example");
	canon("localuser+e@host.example.com", "lu+e@z.example");
	/* @domain: the local part stays with "@domain" values */
	canon("anyone@old.example", "anyone@new.example");
	canon("x+y@old.example", "x+y@new.example");
	canon("who@catch.example", "all@z.example");
	canon("spaced@x.example", "john doe@x.example");
	canon("nobody@else.example", "nobody@else.example");
	canon("", "");
	teardown();
}

ATF_TC_WITHOUT_HEAD(canonical_order_and_loops);
ATF_TC_BODY(canonical_order_and_loops, tc)
{
	str_t out = STR_INIT, err = STR_INIT;

	/* sender_/recipient_canonical_maps first, then canonical_maps;
	 * rewriting repeats until nothing changes. */
	setup("sender_canonical_maps = inline:{ s@x.example=s2@x.example }\n"
	    "recipient_canonical_maps = inline:{ r@x.example=r2@x.example }\n"
	    "canonical_maps = inline:{ s2@x.example=s3@x.example, "
	    "r2@x.example=r3@x.example, r3@x.example=r4@x.example, "
	    "s@x.example=never@x.example, "
	    "loop1@x.example=loop2@x.example, loop2@x.example=loop1@x.example }");
	ATF_CHECK_EQ(cleanup_addr_rewrite_sender(&cfg, "s@x.example", &out, &err), CLEANUP_ADDR_OK);
	ATF_CHECK_STREQ(str_cstr(&out), "s3@x.example");
	ATF_CHECK_EQ(cleanup_addr_rewrite_recipient(&cfg, "r@x.example", &out, &err), CLEANUP_ADDR_OK);
	ATF_CHECK_STREQ(str_cstr(&out), "r4@x.example");
	/* the sender table is not used for recipients */
	ATF_CHECK_EQ(cleanup_addr_rewrite_recipient(&cfg, "s@x.example", &out, &err), CLEANUP_ADDR_OK);
	ATF_CHECK_STREQ(str_cstr(&out), "never@x.example");
	/* a loop is a temporary failure with a reason, never a bounce */
	ATF_CHECK_EQ(cleanup_addr_rewrite_recipient(&cfg, "loop1@x.example", &out, &err),
	    CLEANUP_ADDR_TEMP);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "mapping loop") != NULL, "%s",
	    str_cstr(&err));
	teardown();
	str_release(&out);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(table_errors);
ATF_TC_BODY(table_errors, tc)
{
	str_t out = STR_INIT, err = STR_INIT;
	dict_writer_t *w;
	char **list;
	size_t n;

	w = dict_writer_open("hash:map", 0, &err);
	ATF_REQUIRE(w != NULL);
	ATF_REQUIRE_EQ(dict_writer_put(w, "a@x.example", "b@x.example", &err),
	    DICT_PUT_NEW);
	ATF_REQUIRE_EQ(dict_writer_commit(w, &err), 0);
	setup("canonical_maps = hash:map\nvirtual_alias_maps = hash:map");
	ATF_CHECK_EQ(cleanup_addr_rewrite_recipient(&cfg, "a@x.example", &out, &err), CLEANUP_ADDR_OK);
	ATF_CHECK_STREQ(str_cstr(&out), "b@x.example");
	/* The table disappears: every lookup is an error, never "not
	 * found" (which would send mail to the unmapped address). */
	ATF_REQUIRE_EQ(unlink("map.db"), 0);
	dict_refresh(maps_dict(cfg.canonical, 0));
	dict_refresh(maps_dict(cfg.virtual_alias, 0));
	ATF_CHECK_EQ(cleanup_addr_rewrite_recipient(&cfg, "other@x.example", &out, &err),
	    CLEANUP_ADDR_TEMP);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "canonical_maps lookup error") !=
	    NULL, "%s", str_cstr(&err));
	str_reset(&err);
	ATF_CHECK_EQ(cleanup_addr_virtual_expand(&cfg, "other@x.example", &list, &n, &err),
	    CLEANUP_ADDR_TEMP);
	ATF_CHECK_EQ(n, 0);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "virtual_alias_maps lookup error")
	    != NULL, "%s", str_cstr(&err));
	teardown();

	/* A table that cannot be opened is a start-up error. */
	str_t text = STR_INIT;
	ATF_REQUIRE(pconfig_load_text("canonical_maps = texthash:/nonexistent/x\n",
	    "main.cf") == 0);
	ATF_CHECK_EQ(cleanup_cfg_load(&cfg, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "canonical_maps") != NULL, "%s",
	    str_cstr(&err));
	pconfig_reset();
	str_release(&text);
	str_release(&out);
	str_release(&err);
}

/* ---- virtual ---- */

/* Expands addr; want is the results joined by " ", or NULL for a
 * temporary failure whose reason contains why. */
static void expand(const char *addr, const char *want, const char *why)
{
	char **list;
	size_t n;
	str_t err = STR_INIT, got = STR_INIT;
	int rc = cleanup_addr_virtual_expand(&cfg, addr, &list, &n, &err);

	if (want == NULL) {
		ATF_CHECK_MSG(rc == CLEANUP_ADDR_TEMP, "%s: expanded", addr);
		ATF_CHECK_MSG(strstr(str_cstr(&err), why) != NULL,
		    "%s: error \"%s\" lacks \"%s\"", addr, str_cstr(&err), why);
	} else {
		ATF_CHECK_MSG(rc == CLEANUP_ADDR_OK, "%s: %s", addr, str_cstr(&err));
		for (size_t i = 0; i < n; i++)
			str_catf(&got, "%s%s", i ? " " : "", list[i]);
		ATF_CHECK_MSG(strcmp(str_cstr(&got), want) == 0,
		    "%s: got \"%s\", want \"%s\"", addr, str_cstr(&got), want);
		cleanup_addr_list_free(list, n);
	}
	str_release(&err);
	str_release(&got);
}

ATF_TC_WITHOUT_HEAD(virtual_expansion);
ATF_TC_BODY(virtual_expansion, tc)
{
	FILE *fp = fopen("virtual", "w");
	ATF_REQUIRE(fp != NULL);
	fputs("# aliases\n"
	    "list@v.example   a@v.example, b@v.example c@w.example\n"
	    "a@v.example      a1@w.example\n"
	    "b@v.example      b@v.example, b-copy@w.example\n"
	    "nest@v.example   list@v.example, a@v.example\n"
	    "@dom.example     catchall@w.example\n"
	    "known@dom.example known@w.example\n"
	    "bare@v.example   localuser\n"
	    "ext@v.example    e1@w.example, e2@w.example\n"
	    "loop1@v.example  loop2@v.example\n"
	    "loop2@v.example  x@w.example, loop1@v.example\n"
	    "d1@v.example     d2@v.example\n"
	    "d2@v.example     d3@v.example\n"
	    "d3@v.example     d4@v.example\n"
	    "d4@v.example     end@w.example\n"
	    "bad@v.example    not..valid@\n", fp);
	fclose(fp);
	setup("virtual_alias_maps = texthash:virtual\nrecipient_delimiter = +\n"
	    "virtual_alias_recursion_limit = 3\nvirtual_alias_expansion_limit = 4");
	expand("nobody@v.example", "nobody@v.example", NULL);
	expand("list@v.example", "a1@w.example b@v.example b-copy@w.example "
	    "c@w.example", NULL);
	/* a listed again (after list) is not expanded twice */
	expand("nest@v.example", "a1@w.example b@v.example b-copy@w.example "
	    "c@w.example", NULL);
	expand("someone@dom.example", "catchall@w.example", NULL);
	expand("known@dom.example", "known@w.example", NULL);
	expand("bare@v.example", "localuser@host.example.com", NULL);
	/* the extension goes to every result */
	expand("ext+x@v.example", "e1+x@w.example e2+x@w.example", NULL);
	expand("loop1@v.example", NULL, "loop");
	/* d1 -> d2 -> d3 -> d4 -> end: four lookups that found something,
	 * deeper than the limit of 3 */
	expand("d2@v.example", "end@w.example", NULL);
	expand("d1@v.example", NULL, "virtual_alias_recursion_limit");
	expand("bad@v.example", NULL, "bad address");
	teardown();

	setup("virtual_alias_maps = texthash:virtual\n"
	    "virtual_alias_expansion_limit = 3");
	expand("list@v.example", NULL, "virtual_alias_expansion_limit");
	expand("ext@v.example", "e1@w.example e2@w.example", NULL);
	teardown();
}

ATF_TC_WITHOUT_HEAD(virtual_wide_and_deep);
ATF_TC_BODY(virtual_wide_and_deep, tc)
{
	/* A diamond lattice: n levels of two addresses each pointing to
	 * both of the next level.  Unfolded it is 2^n paths; expansion must
	 * visit each address once. */
	FILE *fp = fopen("virtual", "w");
	ATF_REQUIRE(fp != NULL);
	for (int i = 0; i < 60; i++)
		for (int j = 0; j < 2; j++)
			fprintf(fp, "l%d_%d@v.example l%d_0@v.example, "
			    "l%d_1@v.example\n", i, j, i + 1, i + 1);
	fclose(fp);
	setup("virtual_alias_maps = texthash:virtual");
	expand("l0_0@v.example", "l60_0@v.example l60_1@v.example", NULL);
	teardown();
}

ATF_TC_WITHOUT_HEAD(dup_filter);
ATF_TC_BODY(dup_filter, tc)
{
	cleanup_addr_dup_t d;

	cleanup_addr_dup_init(&d, 0);
	ATF_CHECK(!cleanup_addr_dup_seen(&d, "a@x.example"));
	ATF_CHECK(cleanup_addr_dup_seen(&d, "a@x.example"));
	/* domains fold, local parts do not */
	ATF_CHECK(cleanup_addr_dup_seen(&d, "a@X.Example"));
	ATF_CHECK(!cleanup_addr_dup_seen(&d, "A@x.example"));
	cleanup_addr_dup_free(&d);

	cleanup_addr_dup_init(&d, 2);
	ATF_CHECK(!cleanup_addr_dup_seen(&d, "1@x"));
	ATF_CHECK(!cleanup_addr_dup_seen(&d, "2@x"));
	ATF_CHECK(!cleanup_addr_dup_seen(&d, "3@x"));	/* not remembered: full */
	ATF_CHECK(!cleanup_addr_dup_seen(&d, "3@x"));
	ATF_CHECK(cleanup_addr_dup_seen(&d, "1@x"));
	cleanup_addr_dup_free(&d);
}

/* ---- headers ---- */

ATF_TC_WITHOUT_HEAD(header_names);
ATF_TC_BODY(header_names, tc)
{
#define NL(s, c) cleanup_hdr_name_len(s, strlen(s), c)
	ATF_CHECK_EQ(NL("Subject: hi\n", true), 7);
	ATF_CHECK_EQ(NL("Subject:\n", true), 7);
	ATF_CHECK_EQ(NL("Subject : hi\n", true), 7);	/* obsolete WSP */
	ATF_CHECK_EQ(NL("X-8bit: \xe9\n", true), 6);
	ATF_CHECK_EQ(NL("From alice Tue Jun 3\n", true), 0);	/* mbox */
	ATF_CHECK_EQ(NL(": no name\n", true), 0);
	ATF_CHECK_EQ(NL(" continued\n", true), 0);
	ATF_CHECK_EQ(NL("Subject\n", true), 0);
	ATF_CHECK_EQ(NL("Sub\xe9ject: x\n", true), 0);
	/* undecided while the line is cut */
	ATF_CHECK_EQ(NL("Subj", false), -1);
	ATF_CHECK_EQ(NL("Subject  ", false), -1);
	ATF_CHECK_EQ(NL("Subj ect", false), 0);
	ATF_CHECK_EQ(NL("Subj", true), 0);
#undef NL
	ATF_CHECK_EQ(cleanup_hdr_kind("return-PATH", 11), HK_RETURN_PATH);
	ATF_CHECK_EQ(cleanup_hdr_kind("Received", 8), HK_RECEIVED);
	ATF_CHECK_EQ(cleanup_hdr_kind("BCC", 3), HK_BCC);
	ATF_CHECK_EQ(cleanup_hdr_kind("Resent-Bcc", 10), HK_RESENT_BCC);
	ATF_CHECK_EQ(cleanup_hdr_kind("Bccx", 4), HK_OTHER);
	ATF_CHECK_EQ(cleanup_hdr_kind("To", 1), HK_OTHER);
	ATF_CHECK(cleanup_hdr_is_sender(cleanup_hdr_kind("Reply-To", 8)));
	ATF_CHECK(!cleanup_hdr_is_sender(HK_TO));
	ATF_CHECK(cleanup_hdr_is_address(HK_RESENT_CC));
	ATF_CHECK(!cleanup_hdr_is_address(HK_MESSAGE_ID));
}

ATF_TC_WITHOUT_HEAD(dates_and_ids);
ATF_TC_BODY(dates_and_ids, tc)
{
	str_t s = STR_INIT;

	setenv("TZ", "UTC", 1);
	tzset();
	cleanup_hdr_date(0, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "Thu, 1 Jan 1970 00:00:00 +0000 (UTC)");
	str_reset(&s);
	setenv("TZ", "IST-5:30", 1);
	tzset();
	cleanup_hdr_date(1700000000, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "Wed, 15 Nov 2023 03:43:20 +0530 (IST)");
	str_reset(&s);
	setenv("TZ", "NST+3:30", 1);
	tzset();
	cleanup_hdr_date(1700000000, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "Tue, 14 Nov 2023 18:43:20 -0330 (NST)");
	str_reset(&s);
	/* the Message-ID uses UTC whatever the zone */
	cleanup_hdr_message_id(1700000000, "1NB6Q3P0B4K7G2", "host.example.com", &s);
	ATF_CHECK_STREQ(str_cstr(&s),
	    "<20231114221320.1NB6Q3P0B4K7G2@host.example.com>");
	str_release(&s);
}

static void phrase(const char *in, const char *want)
{
	str_t s = STR_INIT;

	cleanup_hdr_phrase(in, &s);
	ATF_CHECK_MSG(strcmp(str_cstr(&s), want) == 0, "%s: got %s, want %s",
	    in, str_cstr(&s), want);
	str_release(&s);
}

ATF_TC_WITHOUT_HEAD(display_names);
ATF_TC_BODY(display_names, tc)
{
	phrase("Alice Smith", "Alice Smith");
	phrase("Smith, Alice", "\"Smith, Alice\"");
	phrase("A. \"Al\" Smith", "\"A. \\\"Al\\\" Smith\"");
	phrase("back\\slash", "\"back\\\\slash\"");
	phrase("J\xc3\xb6rg", "=?UTF-8?B?SsO2cmc=?=");
	/* long names: several encoded words, none over 75 characters, no
	 * UTF-8 character split */
	str_t in = STR_INIT, out = STR_INIT;
	for (int i = 0; i < 40; i++)
		str_cat(&in, "\xc3\xa9");	/* é, 2 bytes */
	cleanup_hdr_phrase(str_cstr(&in), &out);
	ATF_CHECK_STREQ(str_cstr(&out),
	    "=?UTF-8?B?w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6k=?= "
	    "=?UTF-8?B?w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOp?=");
	str_release(&in);
	str_release(&out);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, addr_valid);
	ATF_TP_ADD_TC(tp, addr_complete);
	ATF_TP_ADD_TC(tp, canonical_keys);
	ATF_TP_ADD_TC(tp, canonical_order_and_loops);
	ATF_TP_ADD_TC(tp, table_errors);
	ATF_TP_ADD_TC(tp, virtual_expansion);
	ATF_TP_ADD_TC(tp, virtual_wide_and_deep);
	ATF_TP_ADD_TC(tp, dup_filter);
	ATF_TP_ADD_TC(tp, header_names);
	ATF_TP_ADD_TC(tp, dates_and_ids);
	ATF_TP_ADD_TC(tp, display_names);
	return atf_no_error();
}
