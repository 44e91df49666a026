/* The pieces below the queue tools (postq, showq, postsuper): attribute
 * messages as JSON, the queue walker's classification, the message
 * reader with defer-log reasons, the authorized_*_users lists, and the
 * message actions (qmgr_clnt_msg_apply) on a real queue directory. */
#include <atf-c.h>
#include <errno.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "testutil.h"
#include "attr.h"
#include "file.h"
#include "pconfig.h"
#include "qfile.h"
#include "qmgr_clnt.h"
#include "queue_list.h"
#include "queue_walk.h"
#include "statuslog.h"
#include "postq/pq.h"
#include "user_list.h"

ATF_TC_WITHOUT_HEAD(json_attr);
ATF_TC_BODY(json_attr, tc)
{
	str_t enc = STR_INIT, out = STR_INIT;
	attr_reader_t *rd = attr_reader_new(NULL, ATTR_READ_LENIENT, NULL);
	attr_msg_t *m;
	size_t used;

	attr_put_int(&enc, "status", 0);
	attr_put_long(&enc, "time", 1700000000);
	attr_put_list(&enc, "queue", 2);
	attr_print(&enc, ATTR_STR("nexthop", "a.example"), ATTR_INT("dead", 1),
	    ATTR_STR("success", "0.250"), ATTR_STR("fail_cohorts", "x"), ATTR_END);
	attr_print(&enc, ATTR_INT("held", 0), ATTR_END);
	attr_put_end(&enc);
	ATF_REQUIRE_EQ(attr_reader_feed(rd, str_cstr(&enc), str_len(&enc), &used),
	    ATTR_DONE);
	m = attr_reader_take(rd);
	pq_json_attr(&out, m);
	ATF_CHECK_STREQ(str_cstr(&out), "{\"status\":0,\"time\":1700000000,"
	    "\"queue\":[{\"nexthop\":\"a.example\",\"dead\":true,"
	    "\"success\":0.250,\"fail_cohorts\":\"x\"},{\"held\":false}]}");
	attr_msg_free(m);
	attr_reader_free(rd);
	str_release(&enc);
	str_release(&out);
}

static int kinds(const queue_walk_ent_t *d, void *ctx)
{
	str_t *s = ctx;
	static const char *const k[] = { "msg", "tmp", "stray", "dir", "other" };

	str_catf(s, "%s:%d:%s;", d->name, d->depth, k[d->kind]);
	return 0;
}

ATF_TC_WITHOUT_HEAD(walk);
ATF_TC_BODY(walk, tc)
{
	queue_layout_t ql;
	str_t err = STR_INIT, s = STR_INIT;
	queue_walk_files_t f = QUEUE_WALK_FILES_INIT;

	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred", 1, &err) == 0);
	ATF_REQUIRE(file_mkdirs("q/deferred/A/B", 0700) == 0);
	ATF_REQUIRE(mkdir("q/deferred/sub", 0700) == 0);
	put_file("q/deferred/A/1NB6Q3P0B4K7G2", "x");
	put_file("q/deferred/A/B/1NB6Q3P0B4K8", "x");
	put_file("q/deferred/tmp.1.2.3", "x");
	put_file("q/deferred/junk", "x");
	put_file("q/deferred/1nb6q3p0b4k7g2", "x");	/* not canonical */
	ATF_REQUIRE(symlink("/etc/passwd", "q/deferred/1NB6Q3P0B4M3") == 0);
	ATF_REQUIRE_EQ(queue_walk_each(&ql, "deferred", kinds, &s, &err), 0);
	ATF_CHECK_STREQ(str_cstr(&s), "1NB6Q3P0B4M3:0:other;"
	    "1nb6q3p0b4k7g2:0:stray;1NB6Q3P0B4K7G2:1:msg;1NB6Q3P0B4K8:2:msg;"
	    "junk:0:stray;sub:0:dir;tmp.1.2.3:0:tmp;");
	/* collected: messages only, by ID */
	ATF_REQUIRE_EQ(queue_walk_collect(&ql, "deferred", &f, &err), 0);
	ATF_REQUIRE_EQ(f.n, 2);
	ATF_CHECK_STREQ(f.v[0].id, "1NB6Q3P0B4K7G2");
	ATF_CHECK_STREQ(f.v[1].id, "1NB6Q3P0B4K8");
	ATF_CHECK_STREQ(f.v[1].path, "q/deferred/A/B/1NB6Q3P0B4K8");
	queue_walk_files_free(&f);
	/* a missing queue is empty; a bad name an error */
	ATF_REQUIRE_EQ(queue_walk_collect(&ql, "hold", &f, &err), 0);
	ATF_CHECK_EQ(f.n, 0);
	ATF_CHECK_EQ(queue_walk_collect(&ql, "nosuch", &f, &err), -1);
	queue_walk_files_free(&f);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&s);
}

/* A message with three recipients (the second done), and a defer log. */
static char *mkmsg(queue_layout_t *ql, const char *queue, char id[QUEUE_ID_SIZE])
{
	str_t err = STR_INIT;
	qfw_t *w = qfw_create(ql, queue, 0600, &err);
	qf_rcpt_in_t r = { NULL, NULL, NULL, 0 };

	ATF_REQUIRE_MSG(w != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE(qfw_sender(w, "alice@example.org") == 0);
	r.address = "a@x.example";
	ATF_REQUIRE(qfw_rcpt(w, &r) == 0);
	r.address = "b@x.example";
	ATF_REQUIRE(qfw_rcpt(w, &r) == 0);
	r.address = "c@y.example";
	ATF_REQUIRE(qfw_rcpt(w, &r) == 0);
	ATF_REQUIRE(qfw_attempts(w, 2) == 0);
	ATF_REQUIRE(qfw_content(w, "Subject: s\n\nbody\n", 17) == 0);
	ATF_REQUIRE(qfw_commit(w) == 0);
	bcopy_str(id, QUEUE_ID_SIZE, qfw_id(w));
	qfw_free(w);
	str_release(&err);
	return id;
}

ATF_TC_WITHOUT_HEAD(message_reader);
ATF_TC_BODY(message_reader, tc)
{
	queue_layout_t ql;
	str_t err = STR_INIT, out = STR_INIT;
	char id[QUEUE_ID_SIZE];
	queue_walk_files_t f = QUEUE_WALK_FILES_INIT;
	queue_msg_t m;
	qfile_t *qf;
	qf_err_t qe;
	qf_rcpt_batch_t b = { NULL, 0, 0 };
	dlv_rcpt_t dr = { (char *)"a@x.example", (char *)"", (char *)"", 0, 0 };
	dlv_status_t st = { "4.4.1", DLV_ACT_DELAYED, (char *)"old reason",
	    (char *)"", (char *)"", (char *)"none", (char *)"", false };
	const char *addr, *reason;

	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred, defer", 1, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	mkmsg(&ql, "deferred", id);
	/* offsets of the recipients; mark b done */
	qf = qfile_open(&ql, "deferred", id, QF_OPEN_RDWR, &qe);
	ATF_REQUIRE(qf != NULL);
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, 0), 3);
	ATF_REQUIRE(qfile_rcpt_done(qf, b.rcpt[1].offset, 0) == 0);
	/* two records for a: the last wins; one for c */
	dr.offset = b.rcpt[0].offset;
	ATF_REQUIRE(statuslog_append1(&ql, "defer", id, &dr, &st, 0, 0, &err) == 0);
	st.reason = (char *)"connection refused";
	ATF_REQUIRE(statuslog_append1(&ql, "defer", id, &dr, &st, 0, 0, &err) == 0);
	dr.address = (char *)"c@y.example";
	dr.offset = b.rcpt[2].offset;
	st.reason = (char *)"451 later";
	ATF_REQUIRE(statuslog_append1(&ql, "defer", id, &dr, &st, 0, 0, &err) == 0);
	qf_rcpt_batch_free(&b);
	qfile_close(qf);

	ATF_REQUIRE_EQ(queue_walk_collect(&ql, "deferred", &f, &err), 0);
	ATF_REQUIRE_EQ(f.n, 1);
	ATF_REQUIRE_EQ(queue_msg_open(&ql, &f.v[0], &m), 0);
	ATF_CHECK_STREQ(m.sender, "alice@example.org");
	ATF_CHECK_EQ(m.attempts, 2);
	ATF_CHECK_EQ(m.size, 17);
	ATF_CHECK(m.next_retry > 0);
	ATF_REQUIRE_EQ(queue_msg_next_rcpt(&m, &addr, &reason), 1);
	ATF_CHECK_STREQ(addr, "a@x.example");
	ATF_CHECK_STREQ(reason, "connection refused");
	ATF_REQUIRE_EQ(queue_msg_next_rcpt(&m, &addr, &reason), 1);
	ATF_CHECK_STREQ(addr, "c@y.example");
	ATF_CHECK_STREQ(reason, "451 later");
	ATF_CHECK_EQ(queue_msg_next_rcpt(&m, &addr, &reason), 0);
	queue_msg_close(&m);

	/* the JSON line of it */
	ATF_REQUIRE_EQ(queue_msg_open(&ql, &f.v[0], &m), 0);
	queue_list_msg_json(&out, &m);
	ATF_CHECK(strstr(str_cstr(&out), ",\"recipients\":[{\"address\":"
	    "\"a@x.example\",\"delay_reason\":\"connection refused\"},"
	    "{\"address\":\"c@y.example\",\"delay_reason\":\"451 later\"}]}\n")
	    != NULL);
	queue_msg_close(&m);

	/* gone meanwhile: -1; damaged: 1 with the reason */
	ATF_REQUIRE(truncate(f.v[0].path, 100) == 0);
	ATF_REQUIRE_EQ(queue_msg_open(&ql, &f.v[0], &m), 1);
	ATF_CHECK(strncmp(str_cstr(&m.error), "damaged queue file: at offset ",
	    30) == 0);
	queue_msg_close(&m);
	ATF_REQUIRE(unlink(f.v[0].path) == 0);
	ATF_REQUIRE_EQ(queue_msg_open(&ql, &f.v[0], &m), -1);
	queue_msg_close(&m);
	queue_walk_files_free(&f);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(authorized);
ATF_TC_BODY(authorized, tc)
{
	str_t why = STR_INIT;

	/* root always; uid 1 is "daemon" on the systems we build on, or has
	 * no name at all, which matches no name */
	ATF_REQUIRE(pconfig_load_text("authorized_mailq_users = nobody-here\n",
	    "main.cf") == 0);
	ATF_CHECK_EQ(user_list_uid_allowed("authorized_mailq_users", 0, &why), 1);
	ATF_CHECK_EQ(user_list_uid_allowed("authorized_mailq_users", 1, &why), 0);
	ATF_CHECK(strstr(str_cstr(&why), "is not allowed by authorized_mailq_users")
	    != NULL);
	ATF_REQUIRE(pconfig_load_text("authorized_mailq_users = static:anyone\n",
	    "main.cf") == 0);
	ATF_CHECK_EQ(user_list_uid_allowed("authorized_mailq_users", 1, &why), 1);
	/* the first match decides: a negated table entry */
	ATF_REQUIRE(pconfig_load_text("authorized_flush_users = !static:x, static:y\n",
	    "main.cf") == 0);
	ATF_CHECK_EQ(user_list_uid_allowed("authorized_flush_users", 1, &why), 0);
	ATF_REQUIRE(pconfig_load_text("authorized_flush_users = nosuchtype:x\n",
	    "main.cf") == 0);
	ATF_CHECK_EQ(user_list_uid_allowed("authorized_flush_users", 1, &why), -1);
	pconfig_reset();
	str_release(&why);
}

/* user_list_uid_match: the uid's login name, or the caller's name for a
 * uid without one (sendmail's "unknown", the queue tools' ""). */
ATF_TC_WITHOUT_HEAD(uid_match);
ATF_TC_BODY(uid_match, tc)
{
	str_t why = STR_INIT;
	struct passwd *pw = getpwuid(getuid());
	const char *user;
	uid_t nouid = 60000;

	ATF_REQUIRE(pw != NULL);
	while (getpwuid(nouid) != NULL && nouid < 65000)
		nouid++;
	ATF_REQUIRE(getpwuid(nouid) == NULL);
	ATF_REQUIRE(pconfig_load_text("authorized_submit_users = unknown\n",
	    "main.cf") == 0);
	ATF_CHECK_EQ(user_list_uid_match("authorized_submit_users", nouid,
	    "unknown", &user, &why), 1);
	ATF_CHECK_STREQ(user, "unknown");
	ATF_CHECK_EQ(user_list_uid_match("authorized_submit_users", nouid,
	    "", &user, &why), 0);
	ATF_CHECK_STREQ(user, "");
	/* Root has no exemption here: that is user_list_uid_allowed's. */
	ATF_CHECK_EQ(user_list_uid_match("authorized_submit_users", 0,
	    "unknown", &user, &why), 0);
	ATF_CHECK_STREQ(user, "root");
	ATF_REQUIRE(pconfig_load_text("authorized_submit_users = !root, "
	    "static:all\n", "main.cf") == 0);
	ATF_CHECK_EQ(user_list_uid_match("authorized_submit_users", 0,
	    "unknown", &user, &why), 0);
	ATF_CHECK_EQ(user_list_uid_allowed("authorized_submit_users", 0, &why),
	    1);
	pconfig_reset();
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(apply);
ATF_TC_BODY(apply, tc)
{
	queue_layout_t ql;
	str_t err = STR_INIT, p = STR_INIT;
	char id[QUEUE_ID_SIZE];
	struct stat st;
	dlv_rcpt_t dr = { (char *)"a@x.example", (char *)"", (char *)"", 0, 300 };
	dlv_status_t ds = { "4.4.1", DLV_ACT_DELAYED, (char *)"later",
	    (char *)"", (char *)"", (char *)"none", (char *)"", false };

	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred, defer", 1, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	mkmsg(&ql, "incoming", id);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "incoming", id, QMGR_CLNT_ACT_HOLD, &err), 0);
	ATF_CHECK_EQ(queue_find(&ql, "hold", id, &p), 0);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "hold", id, QMGR_CLNT_ACT_HOLD, &err), 1);
	ATF_CHECK_STREQ(str_cstr(&err) + strlen(id), ": already on hold");
	/* wrong queue: ENOENT (it moved) */
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "incoming", id, QMGR_CLNT_ACT_DELETE, &err), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	/* release: deferred, due now */
	ATF_REQUIRE(utimes(str_cstr(&p), (struct timeval[2]){ { 1000, 0 },
	    { 1000, 0 } }) == 0);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "incoming", id, QMGR_CLNT_ACT_RELEASE, &err), -1);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "hold", id, QMGR_CLNT_ACT_RELEASE, &err), 0);
	ATF_REQUIRE_EQ(queue_find(&ql, "deferred", id, &p), 0);
	ATF_REQUIRE(stat(str_cstr(&p), &st) == 0);
	ATF_CHECK(st.st_mtime > 1000);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "deferred", id, QMGR_CLNT_ACT_RELEASE, &err), 1);
	/* requeue: incoming, defer log gone */
	ATF_REQUIRE(statuslog_append1(&ql, "defer", id, &dr, &ds, 0, 0, &err) == 0);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "deferred", id, QMGR_CLNT_ACT_REQUEUE, &err), 0);
	ATF_CHECK_EQ(queue_find(&ql, "incoming", id, &p), 0);
	ATF_CHECK_EQ(statuslog_exists(&ql, "defer", id), 0);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "incoming", id, QMGR_CLNT_ACT_REQUEUE, &err), 1);
	/* delete: the file and every log */
	ATF_REQUIRE(statuslog_append1(&ql, "bounce", id, &dr, &ds, 0, 0, &err) == 0);
	ATF_REQUIRE(statuslog_append1(&ql, "trace", id, &dr, &ds, 0, 0, &err) == 0);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "incoming", id, QMGR_CLNT_ACT_DELETE, &err), 0);
	ATF_CHECK_EQ(queue_find(&ql, "incoming", id, &p), -1);
	ATF_CHECK_EQ(statuslog_exists(&ql, "bounce", id), 0);
	ATF_CHECK_EQ(statuslog_exists(&ql, "trace", id), 0);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "incoming", id, QMGR_CLNT_ACT_DELETE, &err), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	ATF_CHECK_EQ(qmgr_clnt_msg_apply(&ql, "nosuch", id, QMGR_CLNT_ACT_DELETE, &err), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	/* names */
	{
		qmgr_clnt_action_t a;
		ATF_CHECK(qmgr_clnt_action_parse("requeue", &a) && a == QMGR_CLNT_ACT_REQUEUE);
		ATF_CHECK(!qmgr_clnt_action_parse("zap", &a));
		ATF_CHECK_STREQ(qmgr_clnt_action_done_text(QMGR_CLNT_ACT_RELEASE),
		    "released from hold");
		ATF_CHECK_STREQ(qmgr_clnt_action_name(QMGR_CLNT_ACT_DELETE), "delete");
	}
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&p);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, json_attr);
	ATF_TP_ADD_TC(tp, walk);
	ATF_TP_ADD_TC(tp, message_reader);
	ATF_TP_ADD_TC(tp, authorized);
	ATF_TP_ADD_TC(tp, uid_match);
	ATF_TP_ADD_TC(tp, apply);
	return atf_no_error();
}
