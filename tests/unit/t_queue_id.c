/* Unit tests for queue IDs (libglobal/queue_id) and queue paths
 * (libglobal/queue_path): format, parser, ordering, uniqueness, hashed
 * subdirectories, moves between queues. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "qfile.h"
#include "queue_id.h"
#include "queue_path.h"
#include "str.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

ATF_TC_WITHOUT_HEAD(format_and_parse);
ATF_TC_BODY(format_and_parse, tc)
{
	char id[QUEUE_ID_SIZE];
	struct timeval tv = { 1700000000, 123456 }, got;
	ino_t ino;

	queue_id_make(id, &tv, 4242);
	ATF_CHECK(strlen(id) >= QUEUE_ID_MIN_LEN && strlen(id) <= QUEUE_ID_MAX_LEN);
	for (const char *p = id; *p; p++)
		ATF_CHECK_MSG(strchr(queue_id_alphabet, *p) != NULL,
		    "bad char %c in %s", *p, id);
	ATF_REQUIRE(queue_id_parse(id, &got, &ino));
	ATF_CHECK_EQ(got.tv_sec, tv.tv_sec);
	ATF_CHECK_EQ(got.tv_usec, tv.tv_usec);
	ATF_CHECK_EQ(ino, 4242);
	ATF_CHECK(queue_id_matches_inode(id, 4242));
	ATF_CHECK(!queue_id_matches_inode(id, 4243));

	/* Extremes round-trip: time 0, largest microseconds, 64-bit inode. */
	struct timeval t0 = { 0, 999999 };
	ino_t big = (ino_t)~(ino_t)0;
	queue_id_make(id, &t0, big);
	ATF_CHECK_EQ(strlen(id), sizeof(ino_t) == 8 ? 24 : 18);
	ATF_REQUIRE(queue_id_parse(id, &got, &ino));
	ATF_CHECK_EQ(got.tv_sec, 0);
	ATF_CHECK_EQ(got.tv_usec, 999999);
	ATF_CHECK(ino == big);
	queue_id_make(id, &t0, 1);
	ATF_CHECK_EQ(strlen(id), 12);
	ATF_CHECK(queue_id_valid(id));
}

ATF_TC_WITHOUT_HEAD(validator_rejects);
ATF_TC_BODY(validator_rejects, tc)
{
	char id[QUEUE_ID_SIZE], bad[64];
	struct timeval tv = { 1700000000, 5 };

	queue_id_make(id, &tv, 77);
	ATF_REQUIRE(queue_id_valid(id));
	const char *cases[] = {
		"", "1", "12345678901",		/* too short */
		"0123456789AB0CDEFGHJKMNPQ",	/* 25 chars */
		"tmp.123.1.abc",		/* writer's temporary name */
		"00000000000010",		/* inode with a leading zero */
		"00000000000",			/* no inode */
		"0000000ZZZZ1",			/* microseconds > 999999 */
		"00000000000I", "00000000000L", "00000000000O", "00000000000U",
		"0000000000a1", "00000000 001", "00000000000/",
		"0000000000001ZZZZZZZZZZZZ",	/* 25 */
		"00000000000ZZZZZZZZZZZZZ",	/* 13 inode digits > 64 bits */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ATF_CHECK_MSG(!queue_id_valid(cases[i]), "accepted '%s'", cases[i]);
	/* Lower case of a valid ID is not valid (IDs are canonical). */
	snprintf(bad, sizeof(bad), "%s", id);
	for (char *p = bad; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	if (strcmp(bad, id) != 0)
		ATF_CHECK(!queue_id_valid(bad));
	/* A suffix or trailing garbage makes it invalid. */
	snprintf(bad, sizeof(bad), "%s.1", id);
	ATF_CHECK(!queue_id_valid(bad));
	/* Largest 13-digit inode that fits 64 bits is accepted. */
	ATF_CHECK(queue_id_valid("00000000000FZZZZZZZZZZZZ"));
}

ATF_TC_WITHOUT_HEAD(ordering);
ATF_TC_BODY(ordering, tc)
{
	/* Later time sorts later, whatever the inodes. */
	struct timeval ts[] = {
		{ 0, 0 }, { 0, 1 }, { 0, 999999 }, { 1, 0 }, { 31, 5 },
		{ 32, 5 }, { 1700000000, 0 }, { 1700000000, 1 },
		{ 1700000001, 0 }, { 4102444800, 500000 },
	};
	ino_t inos[] = { 99999999, 1, 5000, 2, 1ULL << 40, 3, 77, 1, 123456789, 4 };
	char prev[QUEUE_ID_SIZE] = "", id[QUEUE_ID_SIZE];
	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++) {
		queue_id_make(id, &ts[i], inos[i]);
		ATF_CHECK_MSG(strcmp(prev, id) < 0, "%s !< %s", prev, id);
		snprintf(prev, sizeof(prev), "%s", id);
	}
	/* Same microsecond: distinct inodes give distinct IDs. */
	char a[QUEUE_ID_SIZE], b[QUEUE_ID_SIZE];
	queue_id_make(a, &ts[6], 10);
	queue_id_make(b, &ts[6], 11);
	ATF_CHECK(strcmp(a, b) != 0);
	ATF_CHECK(strncmp(a, b, QUEUE_ID_TIME_LEN) == 0);
}

ATF_TC_WITHOUT_HEAD(unique_tight_loop);
ATF_TC_BODY(unique_tight_loop, tc)
{
	/* Real files created as fast as possible: every ID differs, and
	 * the time prefixes never go down. */
	enum { N = 2000 };
	queue_layout_t ql;
	str_t err = STR_INIT;
	char **ids = calloc(N, sizeof(char *));
	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred", 1, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	for (int i = 0; i < N; i++) {
		qfw_t *w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err);
		ATF_REQUIRE_MSG(w != NULL, "%s", str_cstr(&err));
		ids[i] = strdup(qfw_id(w));
		ATF_REQUIRE(queue_id_valid(ids[i]));
		if (i > 0)
			ATF_CHECK(strncmp(ids[i - 1], ids[i], QUEUE_ID_TIME_LEN) <= 0);
		qfw_free(w);	/* removes the file: inodes get reused */
	}
	qsort(ids, N, sizeof(char *), cmp_str);
	for (int i = 1; i < N; i++)
		ATF_CHECK_MSG(strcmp(ids[i - 1], ids[i]) != 0, "duplicate %s",
		    ids[i]);
	for (int i = 0; i < N; i++)
		free(ids[i]);
	free(ids);
	queue_layout_free(&ql);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(layout_config);
ATF_TC_BODY(layout_config, tc)
{
	queue_layout_t ql;
	str_t err = STR_INIT;

	ATF_REQUIRE(queue_layout_init(&ql, "/q", "deferred, defer", 1, &err) == 0);
	ATF_CHECK(queue_is_hashed(&ql, "deferred"));
	ATF_CHECK(queue_is_hashed(&ql, "defer"));
	ATF_CHECK(!queue_is_hashed(&ql, "incoming"));
	ATF_CHECK(!queue_is_hashed(&ql, "nosuch"));
	queue_layout_free(&ql);
	ATF_REQUIRE(queue_layout_init(&ql, "/q", "  incoming\tactive,,hold ", 2,
	    &err) == 0);
	ATF_CHECK(queue_is_hashed(&ql, "incoming"));
	ATF_CHECK(queue_is_hashed(&ql, "active"));
	ATF_CHECK(queue_is_hashed(&ql, "hold"));
	ATF_CHECK(!queue_is_hashed(&ql, "deferred"));
	queue_layout_free(&ql);
	ATF_REQUIRE(queue_layout_init(&ql, "/q", "", 1, &err) == 0);
	ATF_CHECK(!queue_is_hashed(&ql, "deferred"));
	queue_layout_free(&ql);

	ATF_CHECK(queue_layout_init(&ql, "/q", "deferred, bogus", 1, &err) < 0);
	ATF_CHECK(strstr(str_cstr(&err), "unknown queue name 'bogus'") != NULL);
	ATF_CHECK(queue_layout_init(&ql, "/q", "deferred", 0, &err) < 0);
	ATF_CHECK(queue_layout_init(&ql, "/q", "deferred", 5, &err) < 0);
	ATF_CHECK(strstr(str_cstr(&err), "hash_queue_depth") != NULL);

	ATF_CHECK(queue_name_valid("maildrop") && queue_name_valid("trace"));
	ATF_CHECK(!queue_name_valid("Incoming") && !queue_name_valid(""));
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(hashed_paths);
ATF_TC_BODY(hashed_paths, tc)
{
	queue_layout_t ql;
	str_t p = STR_INIT, err = STR_INIT;
	/* Time 1NB6Q3P, microseconds 0B4K, inode 7G2. */
	const char *id = "1NB6Q3P0B4K7G2";

	ATF_REQUIRE(queue_id_valid(id));
	ATF_REQUIRE(queue_layout_init(&ql, "/var/q", "deferred", 1, &err) == 0);
	queue_path(&ql, "deferred", id, &p);
	ATF_CHECK_STREQ(str_cstr(&p), "/var/q/deferred/K/1NB6Q3P0B4K7G2");
	queue_path(&ql, "incoming", id, &p);
	ATF_CHECK_STREQ(str_cstr(&p), "/var/q/incoming/1NB6Q3P0B4K7G2");
	queue_dir_path(&ql, "deferred", id, &p);
	ATF_CHECK_STREQ(str_cstr(&p), "/var/q/deferred/K");
	queue_layout_free(&ql);

	ATF_REQUIRE(queue_layout_init(&ql, "/var/q", "deferred", 3, &err) == 0);
	queue_path(&ql, "deferred", id, &p);
	ATF_CHECK_STREQ(str_cstr(&p), "/var/q/deferred/K/4/B/1NB6Q3P0B4K7G2");
	queue_layout_free(&ql);
	ATF_REQUIRE(queue_layout_init(&ql, "/var/q", "deferred", 4, &err) == 0);
	queue_path(&ql, "deferred", id, &p);
	ATF_CHECK_STREQ(str_cstr(&p), "/var/q/deferred/K/4/B/0/1NB6Q3P0B4K7G2");
	queue_layout_free(&ql);

	/* The subdirectory spreads IDs of one second over many dirs. */
	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred", 1, &err) == 0);
	int seen[256] = { 0 }, dirs = 0;
	for (long us = 0; us < 64; us++) {
		char buf[QUEUE_ID_SIZE];
		struct timeval tv = { 1700000000, us };
		queue_id_make(buf, &tv, 1000);
		queue_dir_path(&ql, "deferred", buf, &p);
		unsigned char c = (unsigned char)p.buf[p.len - 1];
		if (!seen[c]++)
			dirs++;
	}
	ATF_CHECK_EQ(dirs, 32);
	queue_layout_free(&ql);
	str_release(&p);
	str_release(&err);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ATF_REQUIRE_MSG(fd >= 0, "%s: %s", path, strerror(errno));
	ATF_REQUIRE(write(fd, "x", 1) == 1);
	close(fd);
}

ATF_TC_WITHOUT_HEAD(move_between_queues);
ATF_TC_BODY(move_between_queues, tc)
{
	queue_layout_t ql;
	str_t p = STR_INIT, err = STR_INIT;
	const char *id = "1NB6Q3P0B4K7G2";
	struct stat st;

	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred", 2, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	for (int i = 0; queue_names[i]; i++) {
		str_setf(&p, "q/%s", queue_names[i]);
		ATF_CHECK_MSG(stat(str_cstr(&p), &st) == 0 && S_ISDIR(st.st_mode),
		    "%s", str_cstr(&p));
	}
	touch("q/incoming/1NB6Q3P0B4K7G2");
	/* incoming -> deferred creates deferred/K/4 */
	ATF_REQUIRE_MSG(queue_move(&ql, "incoming", "deferred", id, &err) == 0,
	    "%s", str_cstr(&err));
	ATF_CHECK(stat("q/deferred/K/4/1NB6Q3P0B4K7G2", &st) == 0);
	ATF_CHECK(stat("q/incoming/1NB6Q3P0B4K7G2", &st) < 0 && errno == ENOENT);
	ATF_REQUIRE(queue_find(&ql, "deferred", id, &p) == 0);
	ATF_CHECK_STREQ(str_cstr(&p), "q/deferred/K/4/1NB6Q3P0B4K7G2");
	/* deferred -> active -> hold */
	ATF_REQUIRE(queue_move(&ql, "deferred", "active", id, &err) == 0);
	ATF_CHECK(stat("q/active/1NB6Q3P0B4K7G2", &st) == 0);
	ATF_REQUIRE(queue_move(&ql, "active", "hold", id, &err) == 0);
	ATF_CHECK(stat("q/hold/1NB6Q3P0B4K7G2", &st) == 0);
	/* A missing file fails with ENOENT and a message. */
	ATF_CHECK(queue_move(&ql, "active", "hold", id, &err) < 0);
	ATF_CHECK_EQ(errno, ENOENT);
	ATF_CHECK(strstr(str_cstr(&err), "active/1NB6Q3P0B4K7G2") != NULL);
	ATF_CHECK(queue_move(&ql, "hold", "nosuch", id, &err) < 0);
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_CHECK(queue_find(&ql, "hold", "not-an-id", &p) < 0 && errno == EINVAL);

	/* queue_find also sees a file where another depth would put it. */
	ATF_REQUIRE(mkdir("q/deferred/K", 0700) == 0 || errno == EEXIST);
	ATF_REQUIRE(rename("q/hold/1NB6Q3P0B4K7G2",
	    "q/deferred/K/1NB6Q3P0B4K7G2") == 0);
	ATF_REQUIRE(queue_find(&ql, "deferred", id, &p) == 0);
	ATF_CHECK_STREQ(str_cstr(&p), "q/deferred/K/1NB6Q3P0B4K7G2");
	ATF_REQUIRE(queue_move(&ql, "deferred", "incoming", id, &err) == 0);
	ATF_CHECK(stat("q/incoming/1NB6Q3P0B4K7G2", &st) == 0);
	queue_layout_free(&ql);
	str_release(&p);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, format_and_parse);
	ATF_TP_ADD_TC(tp, validator_rejects);
	ATF_TP_ADD_TC(tp, ordering);
	ATF_TP_ADD_TC(tp, unique_tight_loop);
	ATF_TP_ADD_TC(tp, layout_config);
	ATF_TP_ADD_TC(tp, hashed_paths);
	ATF_TP_ADD_TC(tp, move_between_queues);
	return atf_no_error();
}
