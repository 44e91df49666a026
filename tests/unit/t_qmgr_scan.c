/* Unit tests for qmgr's incremental queue scans (qmgr/qmgr_scan): every
 * queue ID at every hash depth exactly once, nothing else, the "again"
 * request, the caller's flag. */
#include <atf-c.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "qmgr/qmgr_scan.h"
#include "queue_id.h"
#include "str.h"

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	ATF_REQUIRE_MSG(fd >= 0, "create %s", path);
	close(fd);
}

static void make_id(char id[QUEUE_ID_SIZE], int n)
{
	struct timeval tv = { 1700000000 + n, 1000 * n };
	queue_id_make(id, &tv, (ino_t)(100 + n));
}

/* Counts how often each of the n IDs is handed out; fails on others. */
static int walk(qmgr_scan_t *sc, char ids[][QUEUE_ID_SIZE], int n, int *seen)
{
	char id[QUEUE_ID_SIZE];
	int total = 0;

	while (qmgr_scan_next(sc, id)) {
		int k;
		for (k = 0; k < n; k++)
			if (strcmp(ids[k], id) == 0)
				break;
		ATF_REQUIRE_MSG(k < n, "unexpected name %s", id);
		seen[k]++;
		/* The path names the file. */
		ATF_CHECK_MSG(access(str_cstr(&sc->path), F_OK) == 0, "path %s",
		    str_cstr(&sc->path));
		total++;
		ATF_REQUIRE(total < 1000);
	}
	return total;
}

ATF_TC_WITHOUT_HEAD(every_depth);
ATF_TC_BODY(every_depth, tc)
{
	char ids[6][QUEUE_ID_SIZE], path[512];
	int seen[6] = { 0 };
	qmgr_scan_t sc;

	ATF_REQUIRE(mkdir("q", 0700) == 0);
	ATF_REQUIRE(mkdir("q/deferred", 0700) == 0);
	for (int i = 0; i < 6; i++)
		make_id(ids[i], i);
	/* depth 0, 1, 2, 4 (whatever hash_queue_depth says now) */
	snprintf(path, sizeof(path), "q/deferred/%s", ids[0]);
	touch(path);
	ATF_REQUIRE(mkdir("q/deferred/A", 0700) == 0);
	snprintf(path, sizeof(path), "q/deferred/A/%s", ids[1]);
	touch(path);
	snprintf(path, sizeof(path), "q/deferred/A/%s", ids[2]);
	touch(path);
	ATF_REQUIRE(mkdir("q/deferred/A/7", 0700) == 0);
	snprintf(path, sizeof(path), "q/deferred/A/7/%s", ids[3]);
	touch(path);
	ATF_REQUIRE(mkdir("q/deferred/B", 0700) == 0);
	ATF_REQUIRE(mkdir("q/deferred/B/C", 0700) == 0);
	ATF_REQUIRE(mkdir("q/deferred/B/C/D", 0700) == 0);
	ATF_REQUIRE(mkdir("q/deferred/B/C/D/E", 0700) == 0);
	snprintf(path, sizeof(path), "q/deferred/B/C/D/E/%s", ids[4]);
	touch(path);
	/* too deep: not a queue position */
	ATF_REQUIRE(mkdir("q/deferred/B/C/D/E/F", 0700) == 0);
	snprintf(path, sizeof(path), "q/deferred/B/C/D/E/F/%s", ids[5]);
	touch(path);
	/* not queue files: temporary, junk, a directory with a long name,
	 * a symlink to a directory (never followed) */
	touch("q/deferred/tmp.123.4.5");
	touch("q/deferred/README");
	ATF_REQUIRE(mkdir("q/deferred/lost+found", 0700) == 0);
	snprintf(path, sizeof(path), "q/deferred/lost+found/%s", ids[5]);
	touch(path);
	ATF_REQUIRE(symlink("B", "q/deferred/Z") == 0);

	qmgr_scan_init(&sc, "q", "deferred");
	ATF_CHECK(!qmgr_scan_running(&sc));
	qmgr_scan_request(&sc, false);
	ATF_CHECK(qmgr_scan_running(&sc));
	ATF_CHECK_EQ(walk(&sc, ids, 6, seen), 5);
	for (int i = 0; i < 5; i++)
		ATF_CHECK_EQ_MSG(seen[i], 1, "id %d seen %d times", i, seen[i]);
	ATF_CHECK_EQ(seen[5], 0);
	ATF_CHECK(!qmgr_scan_running(&sc));
	/* nothing more without a request */
	{
		char id[QUEUE_ID_SIZE];
		ATF_CHECK(!qmgr_scan_next(&sc, id));
	}
	qmgr_scan_free(&sc);
}

ATF_TC_WITHOUT_HEAD(again_and_flag);
ATF_TC_BODY(again_and_flag, tc)
{
	char ids[3][QUEUE_ID_SIZE], path[512], id[QUEUE_ID_SIZE];
	int seen[3] = { 0 };
	qmgr_scan_t sc;

	ATF_REQUIRE(mkdir("q", 0700) == 0);
	ATF_REQUIRE(mkdir("q/incoming", 0700) == 0);
	for (int i = 0; i < 3; i++)
		make_id(ids[i], i);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "q/incoming/%s", ids[i]);
		touch(path);
	}
	qmgr_scan_init(&sc, "q", "incoming");
	qmgr_scan_request(&sc, false);
	ATF_CHECK(!sc.flag);
	ATF_REQUIRE(qmgr_scan_next(&sc, id));
	/* a request during the walk: the flag applies now and to the walk
	 * after this one, which starts when this one ends */
	qmgr_scan_request(&sc, true);
	ATF_CHECK(sc.flag);
	snprintf(path, sizeof(path), "q/incoming/%s", ids[2]);
	touch(path);
	seen[strcmp(id, ids[0]) == 0 ? 0 : 1]++;
	int n = walk(&sc, ids, 3, seen);
	/* this walk's rest (1 or 2 names, the new file may or may not be
	 * seen), then a whole second walk (3 names) */
	ATF_CHECK_MSG(n >= 4 && n <= 5, "%d names", n);
	ATF_CHECK_EQ(seen[0], 2);
	ATF_CHECK_EQ(seen[1], 2);
	ATF_CHECK(seen[2] >= 1);
	ATF_CHECK(!qmgr_scan_running(&sc));
	/* a plain request: no flag */
	qmgr_scan_request(&sc, false);
	ATF_CHECK(!sc.flag);
	ATF_CHECK_EQ(walk(&sc, ids, 3, seen), 3);
	qmgr_scan_free(&sc);
}

ATF_TC_WITHOUT_HEAD(missing_dir);
ATF_TC_BODY(missing_dir, tc)
{
	qmgr_scan_t sc;
	char id[QUEUE_ID_SIZE];

	qmgr_scan_init(&sc, "nowhere", "incoming");
	qmgr_scan_request(&sc, false);
	ATF_CHECK(!qmgr_scan_running(&sc));
	ATF_CHECK(!qmgr_scan_next(&sc, id));
	qmgr_scan_free(&sc);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, every_depth);
	ATF_TP_ADD_TC(tp, again_and_flag);
	ATF_TP_ADD_TC(tp, missing_dir);
	return atf_no_error();
}
