/* Unit tests for libglobal/statuslog: per-message defer/bounce logs. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "file.h"
#include "qfile.h"
#include "queue_path.h"
#include "statuslog.h"
#include "str.h"

#define QID "4QMZ7X2KCB7H"

static void layout(queue_layout_t *ql)
{
	str_t err = STR_INIT;

	ATF_REQUIRE_MSG(queue_layout_init(ql, "q", "deferred, defer", 2,
	    &err) == 0, "%s", str_cstr(&err));
	ATF_REQUIRE(queue_create_dirs(ql, &err) == 0);
	str_release(&err);
}

static sl_rec_t mkrec(const char *addr, int64_t off, dlv_action_t act,
    const char *status, const char *reason)
{
	sl_rec_t r;

	memset(&r, 0, sizeof(r));
	r.rcpt.address = (char *)addr;
	r.rcpt.offset = off;
	r.st.action = act;
	bcopy_str(r.st.status, sizeof(r.st.status), status);
	r.st.reason = (char *)reason;
	r.time = 1767225600;
	return r;
}

ATF_TC_WITHOUT_HEAD(append_read);
ATF_TC_BODY(append_read, tc)
{
	queue_layout_t ql;
	sl_list_t l = SL_LIST_INIT;
	str_t err = STR_INIT, path = STR_INIT;
	sl_rec_t r[3];
	struct stat st;

	layout(&ql);
	ATF_CHECK_EQ(statuslog_exists(&ql, QUEUE_DEFER, QID), 0);
	ATF_CHECK_EQ(statuslog_read(&ql, QUEUE_DEFER, QID, &l, 0, &err), -1);
	ATF_CHECK_EQ(errno, ENOENT);

	r[0] = mkrec("bob@example.net", 170, DLV_ACT_DELAYED, "4.4.1",
	    "connect to mx.example.net[192.0.2.1]:25: Connection refused");
	r[0].rcpt.orig = (char *)"Bob@example.net";
	r[0].rcpt.orcpt = (char *)"rfc822;Bob@example.net";
	r[0].rcpt.notify = DSN_NOTIFY_DELAY | DSN_NOTIFY_FAILURE;
	r[0].st.relay = (char *)"mx.example.net[192.0.2.1]:25";
	r[0].st.remote_mta = (char *)"mx.example.net";
	r[0].st.diag_type = (char *)"smtp";
	r[0].st.diag_text = (char *)"421 4.4.1 busy";
	r[1] = mkrec("eve@example.net", 236, DLV_ACT_DELAYED, "4.2.2",
	    "mailbox full");
	r[2] = mkrec("j\xc3\xb6rg@example.net", 300, DLV_ACT_DELAYED, "4.0.0",
	    "x");
	ATF_REQUIRE_MSG(statuslog_append(&ql, QUEUE_DEFER, QID, r, 2, SL_SYNC,
	    &err) == 0, "%s", str_cstr(&err));
	ATF_REQUIRE(statuslog_append1(&ql, QUEUE_DEFER, QID, &r[2].rcpt,
	    &r[2].st, 99, 0, &err) == 0);
	ATF_CHECK_EQ(statuslog_exists(&ql, QUEUE_DEFER, QID), 1);
	/* hashed like the queue: two levels under defer/, mode 0600 */
	queue_path(&ql, QUEUE_DEFER, QID, &path);
	ATF_REQUIRE(path.len > 8);
	ATF_CHECK_MSG(strncmp(path.buf, "q/defer/", 8) == 0 &&
	    strchr(path.buf + 8, '/') != NULL, "%s", path.buf);
	ATF_REQUIRE(stat(str_cstr(&path), &st) == 0);
	ATF_CHECK_EQ(st.st_mode & 0777, 0600);

	ATF_REQUIRE_MSG(statuslog_read(&ql, QUEUE_DEFER, QID, &l, 0, &err) == 0,
	    "%s", str_cstr(&err));
	ATF_REQUIRE_EQ(l.n, 3);
	ATF_CHECK(!l.truncated);
	ATF_CHECK_STREQ(l.v[0].rcpt.address, "bob@example.net");
	ATF_CHECK_STREQ(l.v[0].rcpt.orig, "Bob@example.net");
	ATF_CHECK_STREQ(l.v[0].rcpt.orcpt, "rfc822;Bob@example.net");
	ATF_CHECK_EQ(l.v[0].rcpt.notify, DSN_NOTIFY_DELAY | DSN_NOTIFY_FAILURE);
	ATF_CHECK_EQ(l.v[0].rcpt.offset, 170);
	ATF_CHECK_STREQ(l.v[0].st.status, "4.4.1");
	ATF_CHECK_EQ(l.v[0].st.action, DLV_ACT_DELAYED);
	ATF_CHECK_STREQ(l.v[0].st.reason,
	    "connect to mx.example.net[192.0.2.1]:25: Connection refused");
	ATF_CHECK_STREQ(l.v[0].st.relay, "mx.example.net[192.0.2.1]:25");
	ATF_CHECK_STREQ(l.v[0].st.remote_mta, "mx.example.net");
	ATF_CHECK_STREQ(l.v[0].st.diag_type, "smtp");
	ATF_CHECK_STREQ(l.v[0].st.diag_text, "421 4.4.1 busy");
	ATF_CHECK_EQ(l.v[0].time, 1767225600);
	ATF_CHECK_STREQ(l.v[1].st.reason, "mailbox full");
	ATF_CHECK_STREQ(l.v[1].rcpt.orig, "");
	ATF_CHECK_STREQ(l.v[2].rcpt.address, "j\xc3\xb6rg@example.net");
	ATF_CHECK_EQ(l.v[2].time, 99);
	sl_list_free(&l);

	/* max */
	ATF_CHECK_EQ(statuslog_read(&ql, QUEUE_DEFER, QID, &l, 2, &err), 1);
	ATF_CHECK_EQ(l.n, 2);
	sl_list_free(&l);

	ATF_CHECK_EQ(statuslog_remove(&ql, QUEUE_DEFER, QID, &err), 0);
	ATF_CHECK_EQ(statuslog_exists(&ql, QUEUE_DEFER, QID), 0);
	ATF_CHECK_EQ(statuslog_remove(&ql, QUEUE_DEFER, QID, &err), 0);
	/* the bounce log is separate (and not hashed here) */
	ATF_REQUIRE(statuslog_append(&ql, QUEUE_BOUNCE, QID, r, 1, 0, &err) == 0);
	ATF_CHECK(access("q/bounce/" QID, F_OK) == 0);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&path);
}

ATF_TC_WITHOUT_HEAD(dedup);
ATF_TC_BODY(dedup, tc)
{
	queue_layout_t ql;
	sl_list_t l = SL_LIST_INIT;
	str_t err = STR_INIT;
	sl_rec_t r[5];

	layout(&ql);
	r[0] = mkrec("a@x", 10, DLV_ACT_DELAYED, "4.0.0", "first a");
	r[1] = mkrec("b@x", 20, DLV_ACT_DELAYED, "4.0.0", "first b");
	r[2] = mkrec("a@x", 10, DLV_ACT_DELAYED, "4.4.1", "second a");
	r[3] = mkrec("c@x", 5, DLV_ACT_DELAYED, "4.0.0", "only c");
	r[4] = mkrec("a@x", 10, DLV_ACT_DELAYED, "4.4.2", "third a");
	ATF_REQUIRE(statuslog_append(&ql, QUEUE_DEFER, QID, r, 5, 0, &err) == 0);
	ATF_REQUIRE(statuslog_read(&ql, QUEUE_DEFER, QID, &l, 0, &err) == 0);
	ATF_REQUIRE_EQ(l.n, 5);
	sl_list_dedup(&l);
	ATF_REQUIRE_EQ(l.n, 3);
	/* the last record per offset, in the order of those records */
	ATF_CHECK_STREQ(l.v[0].st.reason, "first b");
	ATF_CHECK_STREQ(l.v[1].st.reason, "only c");
	ATF_CHECK_STREQ(l.v[2].st.reason, "third a");
	sl_list_free(&l);
	queue_layout_free(&ql);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(invalid_records);
ATF_TC_BODY(invalid_records, tc)
{
	queue_layout_t ql;
	str_t err = STR_INIT;
	sl_rec_t r;

	layout(&ql);
	r = mkrec("a@x", 10, DLV_ACT_DELAYED, "4.0", "x");
	ATF_CHECK_EQ(statuslog_append(&ql, QUEUE_DEFER, QID, &r, 1, 0, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "invalid status code"), "%s",
	    str_cstr(&err));
	r = mkrec("a@x", 10, DLV_ACT_NONE, "4.0.0", "x");
	ATF_CHECK_EQ(statuslog_append(&ql, QUEUE_DEFER, QID, &r, 1, 0, &err), -1);
	r = mkrec("", 10, DLV_ACT_DELAYED, "4.0.0", "x");
	ATF_CHECK_EQ(statuslog_append(&ql, QUEUE_DEFER, QID, &r, 1, 0, &err), -1);
	r = mkrec("a@x", 10, DLV_ACT_DELAYED, "4.0.0", "");
	ATF_CHECK_EQ(statuslog_append(&ql, QUEUE_DEFER, QID, &r, 1, 0, &err), -1);
	r = mkrec("a@x", 10, DLV_ACT_DELAYED, "4.0.0", "line\nbreak");
	ATF_CHECK_EQ(statuslog_append(&ql, QUEUE_DEFER, QID, &r, 1, 0, &err), -1);
	/* an expired message's recipients: failed with a 4.x.x code is fine
	 * in a log (not in a delivery reply) */
	r = mkrec("a@x", 10, DLV_ACT_FAILED, "4.4.1", "expired");
	ATF_CHECK_EQ(statuslog_append(&ql, QUEUE_BOUNCE, QID, &r, 1, 0, &err), 0);
	/* bad log name and queue ID */
	ATF_CHECK_EQ(statuslog_append(&ql, "deferred", QID, &r, 1, 0, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "unknown status log"), "%s",
	    str_cstr(&err));
	ATF_CHECK_EQ(statuslog_append(&ql, QUEUE_DEFER, "../x", &r, 1, 0, &err), -1);
	ATF_CHECK(access("q/defer", F_OK) == 0);
	queue_layout_free(&ql);
	str_release(&err);
}

/* A crash during an append leaves a cut record at the end: readers
 * stop there and say so.  Damage before the end is an error. */
ATF_TC_WITHOUT_HEAD(truncated_and_damaged);
ATF_TC_BODY(truncated_and_damaged, tc)
{
	queue_layout_t ql;
	sl_list_t l = SL_LIST_INIT;
	str_t err = STR_INIT, path = STR_INIT, data = STR_INIT, whole = STR_INIT;
	sl_rec_t r[2];
	struct stat st;
	size_t full, one;
	int fd;

	layout(&ql);
	r[0] = mkrec("a@x", 10, DLV_ACT_FAILED, "5.1.1", "unknown user");
	r[1] = mkrec("b@x", 20, DLV_ACT_FAILED, "5.2.2", "mailbox full");
	statuslog_encode(&r[0], &data);
	one = data.len;
	ATF_REQUIRE(statuslog_append(&ql, QUEUE_BOUNCE, QID, r, 2, 0, &err) == 0);
	queue_path(&ql, QUEUE_BOUNCE, QID, &path);
	ATF_REQUIRE(stat(str_cstr(&path), &st) == 0);
	full = (size_t)st.st_size;
	ATF_REQUIRE(file_read_all(str_cstr(&path), &whole, 1 << 20) == 0);
	ATF_REQUIRE_EQ(whole.len, full);
	/* every cut inside the second record, and the same cut followed by
	 * NULs (a size extended before the data reached the disk) */
	for (int pad = 0; pad < 2; pad++) {
		for (size_t cut = pad ? one : one + 1; cut < full; cut++) {
			fd = open(str_cstr(&path), O_WRONLY | O_TRUNC);
			ATF_REQUIRE(fd >= 0);
			ATF_REQUIRE(write(fd, whole.buf, cut) == (ssize_t)cut);
			close(fd);
			if (pad)	/* zeros up to beyond the full size */
				ATF_REQUIRE(truncate(str_cstr(&path),
				    (off_t)full + 7) == 0);
			ATF_REQUIRE_MSG(statuslog_read(&ql, QUEUE_BOUNCE, QID,
			    &l, 0, &err) == 0, "cut %zu pad %d: %s", cut, pad,
			    str_cstr(&err));
			ATF_CHECK_EQ_MSG(l.n, 1, "cut %zu pad %d", cut, pad);
			ATF_CHECK_MSG(l.truncated, "cut %zu pad %d", cut, pad);
			sl_list_free(&l);
		}
	}
	/* NULs after a complete second record are a cut third one */
	fd = open(str_cstr(&path), O_WRONLY | O_TRUNC);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE(write(fd, whole.buf, full) == (ssize_t)full);
	close(fd);
	ATF_REQUIRE(truncate(str_cstr(&path), (off_t)full + 100) == 0);
	ATF_REQUIRE(statuslog_read(&ql, QUEUE_BOUNCE, QID, &l, 0, &err) == 0);
	ATF_CHECK_EQ(l.n, 2);
	ATF_CHECK(l.truncated);
	sl_list_free(&l);
	/* exactly at a record boundary: nothing is missing */
	ATF_REQUIRE(truncate(str_cstr(&path), (off_t)one) == 0);
	ATF_REQUIRE(statuslog_read(&ql, QUEUE_BOUNCE, QID, &l, 0, &err) == 0);
	ATF_CHECK_EQ(l.n, 1);
	ATF_CHECK(!l.truncated);
	sl_list_free(&l);
	/* appending after a cut record (a crash during an append): the
	 * writer cuts the residue first, so the log stays readable */
	for (int pad = 0; pad < 2; pad++) {
		fd = open(str_cstr(&path), O_WRONLY | O_TRUNC);
		ATF_REQUIRE(fd >= 0);
		ATF_REQUIRE(write(fd, whole.buf, one + 10) == (ssize_t)(one + 10));
		close(fd);
		if (pad)
			ATF_REQUIRE(truncate(str_cstr(&path), (off_t)full) == 0);
		ATF_REQUIRE(statuslog_append(&ql, QUEUE_BOUNCE, QID, &r[1], 1, 0,
		    &err) == 0);
		ATF_CHECK_EQ(statuslog_read(&ql, QUEUE_BOUNCE, QID, &l, 0, &err), 0);
		ATF_REQUIRE_EQ(l.n, 2);
		ATF_CHECK(!l.truncated);
		ATF_CHECK_STREQ(l.v[0].rcpt.address, "a@x");
		ATF_CHECK_STREQ(l.v[1].rcpt.address, "b@x");
		sl_list_free(&l);
	}
	/* damage in the middle stays an error for readers */
	{
		str_t bad = STR_INIT;
		str_append(&bad, whole.buf, one);
		str_append(&bad, "X", 1);
		str_append(&bad, whole.buf + one + 1, full - one - 1);
		fd = open(str_cstr(&path), O_WRONLY | O_TRUNC);
		ATF_REQUIRE(fd >= 0);
		ATF_REQUIRE(write(fd, bad.buf, bad.len) == (ssize_t)bad.len);
		close(fd);
		ATF_CHECK_EQ(statuslog_read(&ql, QUEUE_BOUNCE, QID, &l, 0,
		    &err), -1);
		ATF_CHECK_EQ(l.n, 1);
		ATF_CHECK_MSG(strstr(str_cstr(&err), "damaged record"), "%s",
		    str_cstr(&err));
		sl_list_free(&l);
		str_release(&bad);
	}
	/* garbage */
	fd = open(str_cstr(&path), O_WRONLY | O_TRUNC);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE(write(fd, "hello\n", 6) == 6);
	close(fd);
	ATF_CHECK_EQ(statuslog_read(&ql, QUEUE_BOUNCE, QID, &l, 0, &err), -1);
	ATF_CHECK_EQ(l.n, 0);
	sl_list_free(&l);
	/* a well-formed record that breaks the rules */
	fd = open(str_cstr(&path), O_WRONLY | O_TRUNC);
	ATF_REQUIRE(fd >= 0);
	str_set(&data, "S address 3:a@x\nL offset 1\nS status 3:9.9\n"
	    "S action 6:failed\nS reason 1:x\nL time 1\n.\n");
	ATF_REQUIRE(write(fd, data.buf, data.len) == (ssize_t)data.len);
	close(fd);
	ATF_CHECK_EQ(statuslog_read(&ql, QUEUE_BOUNCE, QID, &l, 0, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "invalid status code"), "%s",
	    str_cstr(&err));
	sl_list_free(&l);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&path);
	str_release(&data);
	str_release(&whole);
}

/* Records from concurrent writers never interleave. */
ATF_TC_WITHOUT_HEAD(concurrent_appends);
ATF_TC_BODY(concurrent_appends, tc)
{
	enum { WRITERS = 4, EACH = 200 };
	queue_layout_t ql;
	sl_list_t l = SL_LIST_INIT;
	str_t err = STR_INIT;
	pid_t pid[WRITERS];
	int counts[WRITERS] = { 0 };

	layout(&ql);
	for (int w = 0; w < WRITERS; w++) {
		pid[w] = fork();
		ATF_REQUIRE(pid[w] >= 0);
		if (pid[w] == 0) {
			char addr[32], reason[600];
			for (int i = 0; i < EACH; i++) {
				sl_rec_t r;
				snprintf(addr, sizeof(addr), "w%d-%d@x", w, i);
				memset(reason, 'a' + w, sizeof(reason) - 1);
				reason[sizeof(reason) - 1] = 0;
				r = mkrec(addr, w * 100000 + i, DLV_ACT_DELAYED,
				    "4.0.0", reason);
				if (statuslog_append(&ql, QUEUE_DEFER, QID, &r, 1,
				    0, &err) < 0)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int st;
		ATF_REQUIRE(waitpid(pid[w], &st, 0) == pid[w]);
		ATF_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	ATF_REQUIRE_MSG(statuslog_read(&ql, QUEUE_DEFER, QID, &l, 0, &err) == 0,
	    "%s", str_cstr(&err));
	ATF_CHECK_EQ(l.n, WRITERS * EACH);
	for (size_t i = 0; i < l.n; i++) {
		int w = (int)(l.v[i].rcpt.offset / 100000);
		ATF_REQUIRE(w >= 0 && w < WRITERS);
		ATF_CHECK_EQ(l.v[i].st.reason[0], 'a' + w);
		counts[w]++;
	}
	for (int w = 0; w < WRITERS; w++)
		ATF_CHECK_EQ(counts[w], EACH);
	sl_list_free(&l);
	queue_layout_free(&ql);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(reader_iteration);
ATF_TC_BODY(reader_iteration, tc)
{
	queue_layout_t ql;
	str_t err = STR_INIT;
	sl_reader_t *rd;
	sl_rec_t rec;
	int n = 0, res;

	layout(&ql);
	for (int i = 0; i < 1000; i++) {
		char addr[32];
		sl_rec_t r;
		snprintf(addr, sizeof(addr), "u%d@x", i);
		r = mkrec(addr, i, DLV_ACT_FAILED, "5.0.0", "no");
		ATF_REQUIRE(statuslog_append(&ql, QUEUE_BOUNCE, QID, &r, 1, 0,
		    &err) == 0);
	}
	rd = statuslog_open(&ql, QUEUE_BOUNCE, QID, &err);
	ATF_REQUIRE(rd);
	while ((res = statuslog_next(rd, &rec, &err)) == 1) {
		char addr[32];
		snprintf(addr, sizeof(addr), "u%d@x", n);
		ATF_CHECK_STREQ(rec.rcpt.address, addr);
		n++;
	}
	ATF_CHECK_EQ(res, 0);
	ATF_CHECK_EQ(n, 1000);
	ATF_CHECK(!statuslog_truncated(rd));
	statuslog_close(rd);
	ATF_CHECK(statuslog_open(&ql, QUEUE_DEFER, QID, &err) == NULL);
	ATF_CHECK_EQ(errno, ENOENT);
	queue_layout_free(&ql);
	str_release(&err);
}

/* A log written under an earlier hash_queue_depth: statuslog_remove
 * finds it wherever it is; statuslog_discard (the first-pass fast path)
 * looks only at the configured place. */
ATF_TC_WITHOUT_HEAD(remove_and_discard);
ATF_TC_BODY(remove_and_discard, tc)
{
	queue_layout_t ql, flat;
	str_t err = STR_INIT, path = STR_INIT;
	sl_rec_t r = mkrec("a@example.com", 100, DLV_ACT_DELAYED, "4.0.0", "later");

	layout(&ql);		/* defer hashed two levels deep */
	ATF_REQUIRE(queue_layout_init(&flat, "q", "deferred", 1, &err) == 0);
	/* Written flat, as before a change of layout. */
	ATF_REQUIRE(statuslog_append(&flat, QUEUE_DEFER, QID, &r, 1, 0, &err) == 0);
	queue_path(&flat, QUEUE_DEFER, QID, &path);
	ATF_REQUIRE(access(str_cstr(&path), F_OK) == 0);
	ATF_CHECK_EQ(statuslog_discard(&ql, QUEUE_DEFER, QID, &err), 0);
	ATF_CHECK_MSG(access(str_cstr(&path), F_OK) == 0,
	    "discard looked beyond the configured place");
	ATF_CHECK_EQ(statuslog_remove(&ql, QUEUE_DEFER, QID, &err), 0);
	ATF_CHECK(access(str_cstr(&path), F_OK) < 0 && errno == ENOENT);
	/* At the configured place both remove it; none there is no error. */
	ATF_REQUIRE(statuslog_append(&ql, QUEUE_DEFER, QID, &r, 1, 0, &err) == 0);
	ATF_CHECK_EQ(statuslog_exists(&ql, QUEUE_DEFER, QID), 1);
	ATF_CHECK_EQ(statuslog_discard(&ql, QUEUE_DEFER, QID, &err), 0);
	ATF_CHECK_EQ(statuslog_exists(&ql, QUEUE_DEFER, QID), 0);
	ATF_CHECK_EQ(statuslog_discard(&ql, QUEUE_DEFER, QID, &err), 0);
	ATF_CHECK_EQ(statuslog_discard(&ql, QUEUE_DEFER, "bad id", &err), -1);
	queue_layout_free(&flat);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&path);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, append_read);
	ATF_TP_ADD_TC(tp, remove_and_discard);
	ATF_TP_ADD_TC(tp, dedup);
	ATF_TP_ADD_TC(tp, invalid_records);
	ATF_TP_ADD_TC(tp, truncated_and_damaged);
	ATF_TP_ADD_TC(tp, concurrent_appends);
	ATF_TP_ADD_TC(tp, reader_iteration);
	return atf_no_error();
}
