/* qmgr's control channel (qmgr/qmgr_control.c) against the scheduler
 * core and a real queue directory, with the client side of
 * libglobal/qmgr_clnt.c: every request, its replies, the message
 * actions on the active queue (stop, wait for the pass to end, act), the
 * suspended destinations' state file, and malformed requests. */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t_sched_harness.h"
#include "testutil.h"
#include "attr.h"
#include "event.h"
#include "file.h"
#include "sock.h"
#include "qfile.h"
#include "statuslog.h"
#include "qmgr/qmgr_control.h"

static double fake_now;
static int kicks;
static str_t triggers = STR_INIT;

static double t_now(void)
{
	return fake_now;
}

static void t_kick(void)
{
	kicks++;
}

static void t_trigger(const char *buf, size_t len)
{
	str_append(&triggers, buf, len);
}

static const qmgr_control_ops_t ops = { t_now, t_trigger, t_kick };

typedef struct fix {
	h_t h;
	event_loop_t *loop;
	queue_layout_t ql;
	qmgr_control_t *c;
	int cfd;			/* the client's end */
	attr_reader_t *rd;
} fix_t;

static void fix_init(fix_t *f, const char *state)
{
	str_t err = STR_INIT;
	qmgr_control_conf_t conf = { 0 };
	sched_tparams_t tp;
	int sv[2];

	h_init(&f->h, NULL);
	sched_tparams_init(&tp, "smtp");
	tp.process_limit = 1;
	tp.destination_recipient_limit = 1;
	h_transport(&f->h, "smtp", &tp);
	f->loop = event_loop_new(EVENT_BACKEND_DEFAULT);
	ATF_REQUIRE(f->loop != NULL);
	ATF_REQUIRE(queue_layout_init(&f->ql, "q", "deferred, defer", 1, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&f->ql, &err) == 0);
	conf.path = "";			/* no listener: a socketpair */
	conf.state_path = state ? state : "";
	conf.poll_ms = 5;
	f->c = qmgr_control_new(f->loop, f->h.s, &f->ql, &ops, &conf, &err);
	ATF_REQUIRE_MSG(f->c != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	ATF_REQUIRE(qmgr_control_attach(f->c, sv[0]) == 0);
	f->cfd = sv[1];
	f->rd = attr_reader_new(NULL, ATTR_READ_LENIENT, NULL);
	fake_now = f->h.now;
	str_release(&err);
}

static void fix_free(fix_t *f)
{
	qmgr_control_free(f->c);
	close(f->cfd);
	attr_reader_free(f->rd);
	event_loop_free(f->loop);
	queue_layout_free(&f->ql);
	h_free(&f->h);
}

static void send_req(fix_t *f, const str_t *req)
{
	ATF_REQUIRE(attr_write_fd(f->cfd, str_cstr(req), str_len(req), 2000) == 0);
}

/* Runs the loop (bounded) until a reply is complete; NULL if none came.
 * between() runs each round (the test plays the daemon). */
static str_t leftover = STR_INIT;

/* Feeds buffered bytes to the reader: a complete reply, or NULL. */
static attr_msg_t *feed(fix_t *f)
{
	while (str_len(&leftover) > 0) {
		size_t used = 0;
		enum attr_result r = attr_reader_feed(f->rd, str_cstr(&leftover),
		    str_len(&leftover), &used);
		str_t rest = STR_INIT;
		str_append(&rest, str_cstr(&leftover) + used,
		    str_len(&leftover) - used);
		str_release(&leftover);
		leftover = rest;
		if (r == ATTR_DONE)
			return attr_reader_take(f->rd);
		ATF_REQUIRE(r == ATTR_NEED_MORE);
	}
	return NULL;
}

static attr_msg_t *get_reply(fix_t *f, void (*between)(fix_t *), int rounds)
{
	char buf[65536];
	attr_msg_t *m;

	(void)sock_set_nonblock(f->cfd, true);
	if ((m = feed(f)) != NULL)
		return m;
	for (int i = 0; i < rounds; i++) {
		ssize_t n;
		event_run_once(f->loop, 10);
		if (between)
			between(f);
		while ((n = read(f->cfd, buf, sizeof(buf))) > 0) {
			str_append(&leftover, buf, (size_t)n);
			if ((m = feed(f)) != NULL)
				return m;
		}
	}
	return NULL;
}

static attr_msg_t *call(fix_t *f, const str_t *req)
{
	attr_msg_t *m;

	send_req(f, req);
	m = get_reply(f, NULL, 200);
	ATF_REQUIRE_MSG(m != NULL, "no reply");
	return m;
}

static attr_msg_t *simple(fix_t *f, const char *request, const char *nexthop,
    const char *reason)
{
	str_t req = STR_INIT;
	attr_msg_t *m;

	attr_put_str(&req, "request", request);
	if (nexthop)
		attr_put_str(&req, "nexthop", nexthop);
	if (reason)
		attr_put_str(&req, "reason", reason);
	attr_put_end(&req);
	m = call(f, &req);
	str_release(&req);
	return m;
}

static const attr_msg_t *find_group(const attr_msg_t *m, const char *list,
    const char *key, const char *value)
{
	const attr_list_t *l;

	if (!attr_get_list(m, list, &l))
		return NULL;
	for (size_t i = 0; i < attr_list_count(l); i++) {
		const char *v;
		const attr_msg_t *g = attr_list_group(l, i);
		if (attr_get_str(g, key, &v) && strcmp(v, value) == 0)
			return g;
	}
	return NULL;
}

static int64_t get_l(const attr_msg_t *m, const char *name)
{
	int64_t v;
	ATF_REQUIRE_MSG(attr_get_long(m, name, &v), "no %s", name);
	return v;
}

static int32_t get_i(const attr_msg_t *m, const char *name)
{
	int32_t v;
	ATF_REQUIRE_MSG(attr_get_int(m, name, &v), "no %s", name);
	return v;
}

static const char *get_s(const attr_msg_t *m, const char *name)
{
	const char *v;
	ATF_REQUIRE_MSG(attr_get_str(m, name, &v), "no %s", name);
	return v;
}

ATF_TC_WITHOUT_HEAD(status);
ATF_TC_BODY(status, tc)
{
	fix_t f;
	attr_msg_t *m;
	const attr_msg_t *g;
	const attr_list_t *jobs;
	str_t req = STR_INIT;

	fix_init(&f, NULL);
	h_add(&f.h, 'a', 4, "smtp", "a.example");
	h_add(&f.h, 'b', 2, "smtp", "b.example");
	ATF_REQUIRE_EQ(h_dispatch(&f.h), 1);
	ATF_REQUIRE(sched_dest_suspend(f.h.s, "c.example", "maintenance", f.h.now));

	attr_put_str(&req, "request", "status");
	attr_put_int(&req, "max_jobs", 1);
	attr_put_end(&req);
	m = call(&f, &req);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_OK);
	ATF_REQUIRE_EQ(get_l(m, "messages"), 2);
	ATF_REQUIRE_EQ(get_l(m, "rcpt_in_core"), 6);
	g = find_group(m, "transport", "name", "smtp");
	ATF_REQUIRE(g != NULL);
	ATF_REQUIRE_EQ(get_i(g, "busy"), 1);
	ATF_REQUIRE_EQ(get_i(g, "process_limit"), 1);
	ATF_REQUIRE_EQ(get_l(g, "jobs"), 2);
	/* max_jobs 1: one job listed, one left out */
	ATF_REQUIRE(attr_get_list(g, "job", &jobs));
	ATF_REQUIRE_EQ(attr_list_count(jobs), 1);
	ATF_REQUIRE_EQ(get_l(g, "jobs_omitted"), 1);
	ATF_REQUIRE_STREQ(get_s(attr_list_group(jobs, 0), "id"), "M1a");
	g = find_group(m, "queue", "nexthop", "a.example");
	ATF_REQUIRE(g != NULL);
	ATF_REQUIRE_STREQ(get_s(g, "transport"), "smtp");
	ATF_REQUIRE_EQ(get_i(g, "busy"), 1);
	ATF_REQUIRE_EQ(get_l(g, "todo"), 3);
	ATF_REQUIRE_EQ(get_i(g, "window"), 5);
	ATF_REQUIRE_STREQ(get_s(g, "success"), "0.000");
	ATF_REQUIRE_EQ(get_i(g, "dead"), 0);
	g = find_group(m, "held", "nexthop", "c.example");
	ATF_REQUIRE(g != NULL);
	ATF_REQUIRE_STREQ(get_s(g, "reason"),
	    "delivery suspended by administrator: maintenance");
	ATF_REQUIRE_EQ(get_l(m, "dsc_count"), 0);
	attr_msg_free(m);

	/* Several requests on one connection, pipelined. */
	str_reset(&req);
	attr_print(&req, ATTR_STR("request", "dsc"), ATTR_END);
	attr_print(&req, ATTR_STR("request", "status"), ATTR_END);
	send_req(&f, &req);
	m = get_reply(&f, NULL, 100);
	ATF_REQUIRE(m != NULL && attr_find(m, "dsc") != NULL
	    && attr_find(m, "transport") == NULL);
	attr_msg_free(m);
	m = get_reply(&f, NULL, 100);
	ATF_REQUIRE(m != NULL && attr_find(m, "transport") != NULL);
	attr_msg_free(m);
	str_release(&req);
	fix_free(&f);
}

static int site_fail(h_t *h, sched_entry_t *e, const char **reason)
{
	(void)h;
	if (strcmp(sched_entry_nexthop(e), "dead.example") == 0) {
		*reason = "connect to mx.dead.example[192.0.2.1]:25: Connection refused";
		return SCHED_DLV_SITE_FAIL;
	}
	return 0;
}

ATF_TC_WITHOUT_HEAD(dsc);
ATF_TC_BODY(dsc, tc)
{
	fix_t f;
	attr_msg_t *m;
	const attr_msg_t *g;
	long count = -1;

	fix_init(&f, NULL);
	f.h.outcome = site_fail;
	h_add(&f.h, 'a', 3, "smtp", "dead.example");
	h_add(&f.h, 'b', 1, "smtp", "live.example");
	h_run(&f.h, 100);
	fake_now = f.h.now;

	m = simple(&f, "dsc", NULL, NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_OK);
	ATF_REQUIRE_EQ(get_l(m, "dsc_count"), 1);
	g = find_group(m, "dsc", "nexthop", "dead.example");
	ATF_REQUIRE(g != NULL);
	ATF_REQUIRE_STREQ(get_s(g, "transport"), "smtp");
	ATF_REQUIRE_STREQ(get_s(g, "state"), "suspended");
	ATF_REQUIRE_STREQ(get_s(g, "reason"),
	    "connect to mx.dead.example[192.0.2.1]:25: Connection refused");
	ATF_REQUIRE_EQ(get_i(g, "failures"), 1);
	ATF_REQUIRE(get_l(g, "retry_at") > (int64_t)f.h.now);
	ATF_REQUIRE(strstr(get_s(g, "line"), "smtp dead.example state=suspended") != NULL);
	attr_msg_free(m);

	/* The status view shows it too. */
	m = simple(&f, "status", NULL, NULL);
	ATF_REQUIRE(find_group(m, "dsc", "nexthop", "dead.example") != NULL);
	attr_msg_free(m);

	/* Clearing something else: nothing; then it. */
	m = simple(&f, "dsc_clear", "other.example", NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_NOTHING);
	ATF_REQUIRE_EQ(get_l(m, "count"), 0);
	attr_msg_free(m);
	kicks = 0;
	m = simple(&f, "dsc_clear", "DEAD.example", NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_OK);
	ATF_REQUIRE_EQ(get_l(m, "count"), 1);
	ATF_REQUIRE(kicks > 0);
	attr_msg_free(m);
	ATF_REQUIRE_EQ(dsc_count(sched_dsc(f.h.s)), 0);
	m = simple(&f, "dsc_clear", "", NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_FAIL);
	attr_msg_free(m);

	/* All at once (no nexthop). */
	h_add(&f.h, 'c', 1, "smtp", "dead.example");
	h_run(&f.h, 100);
	ATF_REQUIRE_EQ(dsc_count(sched_dsc(f.h.s)), 1);
	m = simple(&f, "dsc_clear", NULL, NULL);
	ATF_REQUIRE_EQ(get_l(m, "count"), 1);
	attr_msg_free(m);
	fix_free(&f);
	(void)count;
}

ATF_TC_WITHOUT_HEAD(suspend_state);
ATF_TC_BODY(suspend_state, tc)
{
	fix_t f;
	attr_msg_t *m;
	str_t data = STR_INIT;

	fix_init(&f, "state/suspended");
	m = simple(&f, "suspend", "a.example", "maintenance window");
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_OK);
	attr_msg_free(m);
	m = simple(&f, "suspend", "b.example", NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_OK);
	attr_msg_free(m);
	ATF_REQUIRE_STREQ(sched_dest_suspended(f.h.s, "a.example"),
	    "delivery suspended by administrator: maintenance window");
	ATF_REQUIRE(file_read_all("state/suspended", &data, 65536) == 0);
	CHECK_LINE(str_cstr(&data), "a.example\tmaintenance window");
	CHECK_LINE(str_cstr(&data), "b.example\t");
	/* Bad input. */
	m = simple(&f, "suspend", "a b", NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_FAIL);
	attr_msg_free(m);
	m = simple(&f, "suspend", NULL, NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_FAIL);
	attr_msg_free(m);
	m = simple(&f, "suspend", "c.example", "two\nlines");
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_FAIL);
	ATF_REQUIRE(sched_dest_suspended(f.h.s, "c.example") == NULL);
	attr_msg_free(m);
	fix_free(&f);

	/* A new qmgr reads them back. */
	fix_init(&f, "state/suspended");
	ATF_REQUIRE_STREQ(sched_dest_suspended(f.h.s, "a.example"),
	    "delivery suspended by administrator: maintenance window");
	ATF_REQUIRE_STREQ(sched_dest_suspended(f.h.s, "b.example"),
	    "delivery suspended by administrator");
	m = simple(&f, "resume", "A.EXAMPLE", NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_OK);
	attr_msg_free(m);
	m = simple(&f, "resume", "a.example", NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_NOTHING);
	ATF_REQUIRE_STREQ(qmgr_clnt_reply_reason(m), "destination not suspended");
	attr_msg_free(m);
	ATF_REQUIRE(sched_dest_suspended(f.h.s, "a.example") == NULL);
	str_reset(&data);
	ATF_REQUIRE(file_read_all("state/suspended", &data, 65536) == 0);
	ATF_REQUIRE(strstr(str_cstr(&data), "a.example") == NULL);
	CHECK_LINE(str_cstr(&data), "b.example\t");
	fix_free(&f);
	str_release(&data);
}

/* ---- message actions ---- */

/* A queue file in queue; its ID in id. */
static void mkmsg(fix_t *f, const char *queue, char id[QUEUE_ID_SIZE])
{
	str_t err = STR_INIT;
	qf_rcpt_in_t r = { "bob@a.example", NULL, NULL, 0 };
	qfw_t *w = qfw_create(&f->ql, queue, 0600, &err);

	ATF_REQUIRE_MSG(w != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE(qfw_sender(w, "alice@example.org") == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r) == 0);
	ATF_REQUIRE(qfw_content(w, "Subject: t\n\nbody\n", 17) == 0);
	ATF_REQUIRE_MSG(qfw_commit(w) == 0, "%s", qfw_error(w));
	bcopy_str(id, QUEUE_ID_SIZE, qfw_id(w));
	qfw_free(w);
	str_release(&err);
}

/* The message in the core, under its queue ID: a recipients in flight
 * and more pending. */
static h_msg_t *core_msg(fix_t *f, const char *id, long n)
{
	h_msg_t *hm = &f->h.msgs[f->h.nmsgs++];
	sched_msg_desc_t d = { 0 };

	hm->label = 'm';
	bcopy_str(hm->id, sizeof(hm->id), id);
	hm->n = n;
	hm->dests[0] = "a.example";
	hm->ndests = 1;
	hm->transport = "smtp";
	d.id = id;
	d.recipients = (size_t)n;
	d.ctx = hm;
	sched_msg_add(f->h.s, &d, f->h.now);
	return hm;
}

static bool exists(fix_t *f, const char *queue, const char *id)
{
	str_t p = STR_INIT;
	bool r = queue_find(&f->ql, queue, id, &p) == 0;
	str_release(&p);
	return r;
}

static void move(fix_t *f, const char *from, const char *to, const char *id)
{
	str_t err = STR_INIT;
	ATF_REQUIRE_MSG(queue_move(&f->ql, from, to, id, &err) == 0, "%s",
	    str_cstr(&err));
	str_release(&err);
}

static attr_msg_t *msg_req(fix_t *f, const char *action, const char **ids,
    int n, int wait)
{
	str_t req = STR_INIT;

	attr_put_str(&req, "request", "message");
	attr_put_str(&req, "action", action);
	if (wait >= 0)
		attr_put_int(&req, "wait", wait);
	attr_put_list(&req, "queue_id", (size_t)n);
	for (int i = 0; i < n; i++)
		attr_print(&req, ATTR_STR("id", ids[i]), ATTR_END);
	attr_put_end(&req);
	send_req(f, &req);
	str_release(&req);
	return NULL;
}

static const attr_msg_t *result(const attr_msg_t *m, const char *id)
{
	const attr_msg_t *g = find_group(m, "result", "id", id);
	ATF_REQUIRE_MSG(g != NULL, "no result for %s", id);
	return g;
}

/* Plays the daemon: a message whose pass ended leaves active (to
 * deferred, as qmgr's dispose does). */
static char daemon_id[QUEUE_ID_SIZE];
static h_msg_t *daemon_msg;
static void daemon_round(fix_t *f)
{
	if (daemon_msg && daemon_msg->done && exists(f, QUEUE_ACTIVE, daemon_id))
		move(f, QUEUE_ACTIVE, QUEUE_DEFERRED, daemon_id);
}

ATF_TC_WITHOUT_HEAD(message_delete_active);
ATF_TC_BODY(message_delete_active, tc)
{
	fix_t f;
	attr_msg_t *m;
	const attr_msg_t *g;
	char id[QUEUE_ID_SIZE], other[QUEUE_ID_SIZE];
	const char *ids[3];
	h_msg_t *hm;
	str_t err = STR_INIT;
	dlv_rcpt_t r = { (char *)"bob@a.example", (char *)"", (char *)"", 0, 0 };
	dlv_status_t st = { "4.4.1", DLV_ACT_DELAYED, (char *)"connection refused",
	    (char *)"", (char *)"", (char *)"none", (char *)"", false };

	fix_init(&f, NULL);
	mkmsg(&f, QUEUE_ACTIVE, id);
	mkmsg(&f, QUEUE_DEFERRED, other);
	ATF_REQUIRE(statuslog_append1(&f.ql, "defer", id, &r, &st, 0, 0, &err) == 0);
	hm = core_msg(&f, id, 5);
	ATF_REQUIRE_EQ(h_dispatch(&f.h), 1);	/* one in flight, 4 pending */
	bcopy_str(daemon_id, sizeof(daemon_id), id);
	daemon_msg = hm;

	ids[0] = id;
	ids[1] = other;
	ids[2] = "not-an-id";
	msg_req(&f, "delete", ids, 3, -1);
	/* Stopped: the pending recipients went back; a delivery is in
	 * flight, so no reply yet. */
	m = get_reply(&f, daemon_round, 20);
	ATF_REQUIRE(m == NULL);
	ATF_REQUIRE_EQ(hm->deferred, 4);
	ATF_REQUIRE_STREQ(f.h.last_defer_reason,
	    "delivery stopped: message deleted by administrator");
	ATF_REQUIRE_EQ(qmgr_control_pending(f.c), 1);
	ATF_REQUIRE(exists(&f, QUEUE_ACTIVE, id));
	/* The delivery ends, the pass ends, the daemon moves it out of
	 * active; the control channel deletes it and answers. */
	h_run(&f.h, 100);
	ATF_REQUIRE(hm->done);
	m = get_reply(&f, daemon_round, 100);
	ATF_REQUIRE(m != NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_OK);
	g = result(m, id);
	ATF_REQUIRE_EQ(get_i(g, "status"), QMGR_CLNT_MSG_DONE);
	ATF_REQUIRE_STREQ(get_s(g, "queue"), "deferred");
	g = result(m, other);
	ATF_REQUIRE_EQ(get_i(g, "status"), QMGR_CLNT_MSG_NOT_ACTIVE);
	{
		const attr_list_t *l;
		ATF_REQUIRE(attr_get_list(m, "result", &l));
		ATF_REQUIRE_EQ(attr_list_count(l), 3);
		g = attr_list_group(l, 2);
		ATF_REQUIRE_EQ(get_i(g, "status"), QMGR_CLNT_MSG_ERROR);
		ATF_REQUIRE_STREQ(get_s(g, "reason"), "not a valid queue ID");
	}
	attr_msg_free(m);
	ATF_REQUIRE(!exists(&f, QUEUE_ACTIVE, id));
	ATF_REQUIRE(!exists(&f, QUEUE_DEFERRED, id));
	ATF_REQUIRE_EQ(statuslog_exists(&f.ql, "defer", id), 0);
	ATF_REQUIRE(exists(&f, QUEUE_DEFERRED, other));
	ATF_REQUIRE_EQ(qmgr_control_pending(f.c), 0);
	daemon_msg = NULL;
	str_release(&err);
	fix_free(&f);
}

ATF_TC_WITHOUT_HEAD(message_hold_requeue);
ATF_TC_BODY(message_hold_requeue, tc)
{
	fix_t f;
	attr_msg_t *m;
	char id[QUEUE_ID_SIZE], id2[QUEUE_ID_SIZE];
	const char *ids[1];
	h_msg_t *hm;

	fix_init(&f, NULL);
	/* Nothing in flight: the pass ends inside the stop. */
	mkmsg(&f, QUEUE_ACTIVE, id);
	hm = core_msg(&f, id, 2);
	bcopy_str(daemon_id, sizeof(daemon_id), id);
	daemon_msg = hm;
	ids[0] = id;
	msg_req(&f, "hold", ids, 1, -1);
	m = get_reply(&f, daemon_round, 100);
	ATF_REQUIRE(m != NULL);
	ATF_REQUIRE(hm->done);
	ATF_REQUIRE_EQ(get_i(result(m, id), "status"), QMGR_CLNT_MSG_DONE);
	attr_msg_free(m);
	ATF_REQUIRE(exists(&f, QUEUE_HOLD, id));
	ATF_REQUIRE(!exists(&f, QUEUE_DEFERRED, id));

	/* Requeue: to incoming, and qmgr is told to scan it. */
	mkmsg(&f, QUEUE_ACTIVE, id2);
	hm = core_msg(&f, id2, 1);
	bcopy_str(daemon_id, sizeof(daemon_id), id2);
	daemon_msg = hm;
	ids[0] = id2;
	str_reset(&triggers);
	msg_req(&f, "requeue", ids, 1, -1);
	m = get_reply(&f, daemon_round, 100);
	ATF_REQUIRE(m != NULL);
	ATF_REQUIRE_EQ(get_i(result(m, id2), "status"), QMGR_CLNT_MSG_DONE);
	attr_msg_free(m);
	ATF_REQUIRE(exists(&f, QUEUE_INCOMING, id2));
	ATF_REQUIRE_STREQ(str_cstr(&triggers), "I");

	/* Release is never qmgr's. */
	ids[0] = id;
	msg_req(&f, "release", ids, 1, -1);
	m = get_reply(&f, NULL, 100);
	ATF_REQUIRE(m != NULL);
	ATF_REQUIRE_EQ(get_i(result(m, id), "status"), QMGR_CLNT_MSG_NOT_ACTIVE);
	attr_msg_free(m);
	daemon_msg = NULL;
	fix_free(&f);
}

/* A message whose pass ends with everything delivered is gone; one still
 * being delivered when the wait ends is pending, then carried out. */
ATF_TC_WITHOUT_HEAD(message_gone_pending);
ATF_TC_BODY(message_gone_pending, tc)
{
	fix_t f;
	attr_msg_t *m;
	char id[QUEUE_ID_SIZE];
	const char *ids[1];
	h_msg_t *hm;
	str_t p = STR_INIT;

	fix_init(&f, NULL);
	mkmsg(&f, QUEUE_ACTIVE, id);
	hm = core_msg(&f, id, 1);
	ATF_REQUIRE_EQ(h_dispatch(&f.h), 1);
	ids[0] = id;
	msg_req(&f, "delete", ids, 1, 0);	/* no wait */
	m = get_reply(&f, NULL, 100);
	ATF_REQUIRE(m != NULL);
	ATF_REQUIRE_EQ(get_i(result(m, id), "status"), QMGR_CLNT_MSG_PENDING);
	ATF_REQUIRE_STREQ(get_s(result(m, id), "queue"), "active");
	attr_msg_free(m);
	ATF_REQUIRE_EQ(qmgr_control_pending(f.c), 1);
	/* It is delivered; the daemon removes the file. */
	h_run(&f.h, 100);
	ATF_REQUIRE(hm->done && hm->sent == 1);
	ATF_REQUIRE(queue_find(&f.ql, QUEUE_ACTIVE, id, &p) == 0);
	ATF_REQUIRE(unlink(str_cstr(&p)) == 0);
	for (int i = 0; i < 100 && qmgr_control_pending(f.c) > 0; i++)
		event_run_once(f.loop, 10);
	ATF_REQUIRE_EQ(qmgr_control_pending(f.c), 0);

	/* Gone while the client waits. */
	mkmsg(&f, QUEUE_ACTIVE, id);
	hm = core_msg(&f, id, 1);
	ATF_REQUIRE_EQ(h_dispatch(&f.h), 1);
	ids[0] = id;
	msg_req(&f, "hold", ids, 1, -1);
	ATF_REQUIRE(get_reply(&f, NULL, 5) == NULL);
	h_run(&f.h, 100);
	ATF_REQUIRE(queue_find(&f.ql, QUEUE_ACTIVE, id, &p) == 0);
	ATF_REQUIRE(unlink(str_cstr(&p)) == 0);
	m = get_reply(&f, NULL, 100);
	ATF_REQUIRE(m != NULL);
	ATF_REQUIRE_EQ(get_i(result(m, id), "status"), QMGR_CLNT_MSG_GONE);
	attr_msg_free(m);

	/* The client hangs up while waiting: the action still happens. */
	mkmsg(&f, QUEUE_ACTIVE, id);
	hm = core_msg(&f, id, 1);
	ATF_REQUIRE_EQ(h_dispatch(&f.h), 1);
	msg_req(&f, "hold", ids, 1, -1);
	ATF_REQUIRE(get_reply(&f, NULL, 5) == NULL);
	close(f.cfd);
	f.cfd = open("/dev/null", O_RDONLY);
	for (int i = 0; i < 5; i++)
		event_run_once(f.loop, 10);
	h_run(&f.h, 100);
	move(&f, QUEUE_ACTIVE, QUEUE_DEFERRED, id);
	for (int i = 0; i < 100 && qmgr_control_pending(f.c) > 0; i++)
		event_run_once(f.loop, 10);
	ATF_REQUIRE_EQ(qmgr_control_pending(f.c), 0);
	ATF_REQUIRE(exists(&f, QUEUE_HOLD, id));
	str_release(&p);
	fix_free(&f);
}

ATF_TC_WITHOUT_HEAD(bad_requests);
ATF_TC_BODY(bad_requests, tc)
{
	fix_t f;
	attr_msg_t *m;
	str_t req = STR_INIT;
	char buf[64];

	fix_init(&f, NULL);
	m = simple(&f, "frobnicate", NULL, NULL);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_FAIL);
	ATF_REQUIRE_STREQ(qmgr_clnt_reply_reason(m), "unknown request");
	attr_msg_free(m);
	attr_print(&req, ATTR_INT("flags", 1), ATTR_END);
	m = call(&f, &req);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_FAIL);
	attr_msg_free(m);
	str_reset(&req);
	attr_print(&req, ATTR_STR("request", "message"), ATTR_STR("action", "zap"),
	    ATTR_END);
	m = call(&f, &req);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_FAIL);
	attr_msg_free(m);
	str_reset(&req);
	attr_print(&req, ATTR_STR("request", "message"), ATTR_STR("action", "hold"),
	    ATTR_END);
	m = call(&f, &req);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_FAIL);
	attr_msg_free(m);
	/* Garbage: the connection is closed, nothing else happens. */
	ATF_REQUIRE(write(f.cfd, "?garbage\n", 9) == 9);
	for (int i = 0; i < 10; i++)
		event_run_once(f.loop, 10);
	(void)sock_set_nonblock(f.cfd, false);
	ATF_REQUIRE_EQ(read(f.cfd, buf, sizeof(buf)), 0);
	str_release(&req);
	fix_free(&f);
}

/* The real listener and the client library. */
ATF_TC_WITHOUT_HEAD(listener_client);
ATF_TC_BODY(listener_client, tc)
{
	h_t h;
	event_loop_t *loop;
	queue_layout_t ql;
	qmgr_control_t *c;
	str_t err = STR_INIT, req = STR_INIT;
	qmgr_control_conf_t conf = { 0 };
	qmgr_clnt_t *cl;
	attr_msg_t *m;
	struct stat st;
	pid_t pid;
	int status;
	long count = -1;

	h_init(&h, NULL);
	loop = event_loop_new(EVENT_BACKEND_DEFAULT);
	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred", 1, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	ATF_REQUIRE(mkdir("q/private", 0700) == 0 || errno == EEXIST);
	conf.path = "q/" QMGR_CONTROL_PATH;
	conf.state_path = "";
	c = qmgr_control_new(loop, h.s, &ql, &ops, &conf, &err);
	ATF_REQUIRE_MSG(c != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE(stat("q/" QMGR_CONTROL_PATH, &st) == 0);
	ATF_REQUIRE_EQ(st.st_mode & 07777, 0600);

	/* The client runs in a child; we serve. */
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		int rc;
		cl = qmgr_clnt_connect("q", 5000, &err);
		if (cl == NULL)
			_exit(10);
		attr_print(&req, ATTR_STR("request", "status"), ATTR_END);
		m = qmgr_clnt_call(cl, &req, 5000, &err);
		if (m == NULL || qmgr_clnt_reply_status(m) != QMGR_CLNT_OK)
			_exit(11);
		attr_msg_free(m);
		qmgr_clnt_close(cl);
		rc = qmgr_clnt_request_simple("q", "suspend", "x.example", "why", NULL,
		    5000, &err);
		if (rc != QMGR_CLNT_OK)
			_exit(12);
		rc = qmgr_clnt_request_simple("q", "resume", "y.example", NULL, &count,
		    5000, &err);
		if (rc != QMGR_CLNT_NOTHING || strcmp(str_cstr(&err),
		    "destination not suspended") != 0)
			_exit(13);
		_exit(0);
	}
	for (int i = 0; i < 500; i++) {
		event_run_once(loop, 10);
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (i == 499) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
		}
	}
	ATF_REQUIRE_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "client status %d", status);
	ATF_REQUIRE(sched_dest_suspended(h.s, "x.example") != NULL);
	qmgr_control_free(c);

	/* Nobody listening: the client says qmgr is not running. */
	cl = qmgr_clnt_connect("q", 1000, &err);
	ATF_REQUIRE(cl == NULL);
	ATF_REQUIRE(errno == ECONNREFUSED || errno == ENOENT);
	ATF_REQUIRE(strstr(str_cstr(&err), "qmgr is not running") != NULL);
	event_loop_free(loop);
	queue_layout_free(&ql);
	h_free(&h);
	str_release(&err);
	str_release(&req);
}

/* The counters the metrics service exports: new messages, recipient
 * results, a destination's deferrals; and max_dsc, which keeps the
 * status cache out of a reply that needs only its size. */
ATF_TC_WITHOUT_HEAD(status_counters);
ATF_TC_BODY(status_counters, tc)
{
	static const sched_rcpt_status_t outcome[3] = { SCHED_RCPT_SENT,
	    SCHED_RCPT_BOUNCED, SCHED_RCPT_DEFERRED };
	fix_t f;
	attr_msg_t *m;
	const attr_msg_t *g;
	const attr_list_t *l;
	str_t req = STR_INIT;
	sched_entry_t *e;

	fix_init(&f, NULL);
	/* b.example dies: one entry in the status cache. */
	h_add(&f.h, 'b', 1, "smtp", "b.example");
	e = sched_select(f.h.s, f.h.now);
	ATF_REQUIRE(e != NULL);
	ATF_REQUIRE_STREQ(sched_entry_nexthop(e), "b.example");
	sched_delivery_done(f.h.s, e, NULL, SCHED_DLV_SITE_FAIL, "dead", f.h.now);
	/* One delivery at a time (process_limit 1, one recipient each):
	 * sent, bounced, deferred by a connection failure; a.example keeps
	 * one recipient pending, so its queue is still there. */
	h_add(&f.h, 'a', 4, "smtp", "a.example");
	for (int i = 0; i < 3; i++) {
		sched_rcpt_result_t r = { outcome[i], "why" };
		e = sched_select(f.h.s, f.h.now);
		ATF_REQUIRE(e != NULL);
		ATF_REQUIRE_STREQ(sched_entry_nexthop(e), "a.example");
		sched_delivery_done(f.h.s, e, &r,
		    i == 2 ? SCHED_DLV_CONN_FAIL : 0, "why", f.h.now);
	}

	attr_put_str(&req, "request", "status");
	attr_put_int(&req, "max_jobs", 0);
	attr_put_int(&req, "max_dsc", 0);
	attr_put_end(&req);
	m = call(&f, &req);
	ATF_REQUIRE_EQ(qmgr_clnt_reply_status(m), QMGR_CLNT_OK);
	ATF_REQUIRE_EQ(get_l(m, "new_messages"), 2);
	ATF_REQUIRE_EQ(get_l(m, "rcpt_sent"), 1);
	ATF_REQUIRE_EQ(get_l(m, "rcpt_bounced"), 1);
	ATF_REQUIRE_EQ(get_l(m, "rcpt_deferred"), 2);
	g = find_group(m, "queue", "nexthop", "a.example");
	ATF_REQUIRE(g != NULL);
	ATF_REQUIRE_EQ(get_l(g, "deliveries"), 3);
	ATF_REQUIRE_EQ(get_l(g, "deferrals"), 1);
	ATF_REQUIRE_EQ(get_l(g, "conn_failures"), 1);
	ATF_REQUIRE_EQ(get_l(m, "dsc_count"), 1);
	ATF_REQUIRE_EQ(get_l(m, "dsc_omitted"), 1);
	ATF_REQUIRE(attr_get_list(m, "dsc", &l));
	ATF_REQUIRE_EQ(attr_list_count(l), 0);
	g = find_group(m, "transport", "name", "smtp");
	ATF_REQUIRE(g != NULL && attr_get_list(g, "job", &l));
	ATF_REQUIRE_EQ(attr_list_count(l), 0);
	attr_msg_free(m);

	/* Without max_dsc the entries are listed, as before. */
	m = simple(&f, "status", NULL, NULL);
	ATF_REQUIRE(attr_get_list(m, "dsc", &l));
	ATF_REQUIRE_EQ(attr_list_count(l), 1);
	attr_msg_free(m);
	str_release(&req);
	fix_free(&f);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, status);
	ATF_TP_ADD_TC(tp, status_counters);
	ATF_TP_ADD_TC(tp, dsc);
	ATF_TP_ADD_TC(tp, suspend_state);
	ATF_TP_ADD_TC(tp, message_delete_active);
	ATF_TP_ADD_TC(tp, message_hold_requeue);
	ATF_TP_ADD_TC(tp, message_gone_pending);
	ATF_TP_ADD_TC(tp, bad_requests);
	ATF_TP_ADD_TC(tp, listener_client);
	return atf_no_error();
}
