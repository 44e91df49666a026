/* anvil: the counters on a virtual clock (anvil/anvil_store.c), the
 * protocol's checks and encoders, the client against a small server
 * built on the same store, and smtpd's use of it (smtpd/smtpd_anvil.c:
 * the replies a session gives over a limit, the exceptions, and what
 * happens when anvil cannot be reached). */
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "anvil.h"
#include "anvil/anvil_store.h"
#include "event.h"
#include "sock.h"
#include "t_smtpd_harness.h"

#define UNIT 60000		/* the time unit, ms */
/* A session with input text. */
#define RUN(cfg, addr, text, td, opts) \
	session_opts((cfg), (addr), (text), strlen(text), (td), (opts), 0)

static anvil_counts_t look(anvil_store_t *st, int64_t now, const char *id)
{
	anvil_counts_t c;

	anvil_store_lookup(st, now, id, &c);
	return c;
}

ATF_TC_WITHOUT_HEAD(store_connect);
ATF_TC_BODY(store_connect, tc)
{
	anvil_store_t *st = anvil_store_new(UNIT, 100);
	anvil_entry_t *a, *b, *c;

	a = anvil_store_connect(st, 1000, "smtp:192.0.2.1");
	ATF_REQUIRE(a != NULL);
	ATF_CHECK_EQ(a->c.count, 1);
	ATF_CHECK_EQ(a->c.rate, 1);
	b = anvil_store_connect(st, 2000, "smtp:192.0.2.1");
	ATF_CHECK(b == a);
	ATF_CHECK_EQ(a->c.count, 2);
	ATF_CHECK_EQ(a->c.rate, 2);
	/* Per service and address. */
	c = anvil_store_connect(st, 2000, "smtp:192.0.2.2");
	ATF_CHECK(c != a);
	ATF_CHECK_EQ(c->c.count, 1);
	c = anvil_store_connect(st, 2000, "submission:192.0.2.1");
	ATF_CHECK_EQ(c->c.rate, 1);
	ATF_CHECK_EQ(anvil_store_size(st), 3);
	/* The window began at 1000: at 60999 it still counts... */
	anvil_store_disconnect(st, 3000, a);
	ATF_CHECK_EQ(a->c.count, 1);
	a = anvil_store_connect(st, 60999, "smtp:192.0.2.1");
	ATF_CHECK_EQ(a->c.rate, 3);
	ATF_CHECK_EQ(a->c.count, 2);
	/* ...at 61000 a new one begins; the open connections stay. */
	a = anvil_store_connect(st, 61000, "smtp:192.0.2.1");
	ATF_CHECK_EQ(a->c.rate, 1);
	ATF_CHECK_EQ(a->c.count, 3);
	/* Not an ident. */
	ATF_CHECK(anvil_store_connect(st, 61000, "") == NULL);
	ATF_CHECK(anvil_store_connect(st, 61000, "smtp: x") == NULL);
	anvil_store_free(st);
}

ATF_TC_WITHOUT_HEAD(store_events);
ATF_TC_BODY(store_events, tc)
{
	anvil_store_t *st = anvil_store_new(UNIT, 100);
	anvil_entry_t *e;
	anvil_counts_t c;
	bool conn;

	e = anvil_store_connect(st, 0, "smtp:192.0.2.1");
	ATF_REQUIRE(anvil_store_event(st, 10, ANVIL_OP_MESSAGE,
	    "smtp:192.0.2.1", &conn) == e);
	ATF_CHECK(!conn);
	anvil_store_event(st, 20, ANVIL_OP_MESSAGE, "smtp:192.0.2.1", &conn);
	for (int i = 0; i < 5; i++)
		anvil_store_event(st, 30, ANVIL_OP_RECIPIENT, "smtp:192.0.2.1",
		    &conn);
	anvil_store_event(st, 40, ANVIL_OP_NEWTLS, "smtp:192.0.2.1", &conn);
	anvil_store_event(st, 50, ANVIL_OP_AUTH, "smtp:192.0.2.1", &conn);
	anvil_store_event(st, 50, ANVIL_OP_AUTH, "smtp:192.0.2.1", &conn);
	c = look(st, 100, "smtp:192.0.2.1");
	ATF_CHECK_EQ(c.count, 1);
	ATF_CHECK_EQ(c.rate, 1);
	ATF_CHECK_EQ(c.message, 2);
	ATF_CHECK_EQ(c.recipient, 5);
	ATF_CHECK_EQ(c.newtls, 1);
	ATF_CHECK_EQ(c.auth, 2);
	/* Not an event. */
	ATF_CHECK(anvil_store_event(st, 50, ANVIL_OP_LOOKUP, "smtp:192.0.2.1",
	    &conn) == NULL);
	/* A lookup does not count, and reports a window that ran out as
	 * zeros without ending it (only an event does). */
	c = look(st, UNIT, "smtp:192.0.2.1");
	ATF_CHECK_EQ(c.count, 1);
	ATF_CHECK_EQ(c.rate + c.message + c.recipient + c.newtls + c.auth, 0);
	ATF_CHECK_EQ(e->c.message, 2);
	/* The first event of a new window starts every rate again. */
	anvil_store_event(st, UNIT, ANVIL_OP_MESSAGE, "smtp:192.0.2.1", &conn);
	ATF_CHECK_EQ(e->c.message, 1);
	ATF_CHECK_EQ(e->c.recipient, 0);
	ATF_CHECK_EQ(e->c.auth, 0);
	/* An unknown ident (anvil restarted in a session) is entered as a
	 * connection first, and the caller is told. */
	e = anvil_store_event(st, UNIT, ANVIL_OP_RECIPIENT, "smtp:192.0.2.7",
	    &conn);
	ATF_REQUIRE(e != NULL);
	ATF_CHECK(conn);
	ATF_CHECK_EQ(e->c.count, 1);
	ATF_CHECK_EQ(e->c.rate, 1);
	ATF_CHECK_EQ(e->c.recipient, 1);
	/* Unknown idents look like zeros. */
	c = look(st, UNIT, "smtp:203.0.113.1");
	ATF_CHECK_EQ(c.count + c.rate + c.message, 0);
	anvil_store_free(st);
}

ATF_TC_WITHOUT_HEAD(store_expiry);
ATF_TC_BODY(store_expiry, tc)
{
	anvil_store_t *st = anvil_store_new(UNIT, 100);
	anvil_entry_t *a, *b;
	bool conn;

	ATF_CHECK_EQ(anvil_store_next_expiry(st), -1);
	a = anvil_store_connect(st, 0, "smtp:192.0.2.1");
	b = anvil_store_connect(st, 0, "smtp:192.0.2.2");
	/* With connections open nothing expires. */
	ATF_CHECK_EQ(anvil_store_next_expiry(st), -1);
	anvil_store_expire(st, 10 * UNIT);
	ATF_CHECK_EQ(anvil_store_size(st), 2);
	anvil_store_disconnect(st, 1000, a);
	anvil_store_disconnect(st, 2000, b);
	ATF_CHECK_EQ(anvil_store_next_expiry(st), 1000 + UNIT);
	/* Activity while idle postpones it. */
	anvil_store_event(st, 5000, ANVIL_OP_MESSAGE, "smtp:192.0.2.1", &conn);
	ATF_CHECK(!conn);
	ATF_CHECK_EQ(anvil_store_next_expiry(st), 2000 + UNIT);
	anvil_store_expire(st, 2000 + UNIT - 1);
	ATF_CHECK_EQ(anvil_store_size(st), 2);
	anvil_store_expire(st, 2000 + UNIT);
	ATF_CHECK_EQ(anvil_store_size(st), 1);
	ATF_CHECK_EQ(look(st, 2000 + UNIT, "smtp:192.0.2.2").rate, 0);
	ATF_CHECK_EQ(anvil_store_next_expiry(st), 5000 + UNIT);
	/* A new connection takes it off the idle list. */
	a = anvil_store_connect(st, 6000, "smtp:192.0.2.1");
	ATF_CHECK_EQ(anvil_store_next_expiry(st), -1);
	anvil_store_disconnect(st, 7000, a);
	anvil_store_expire(st, 7000 + UNIT);
	ATF_CHECK_EQ(anvil_store_size(st), 0);
	ATF_CHECK_EQ(anvil_store_next_expiry(st), -1);
	anvil_store_free(st);
}

ATF_TC_WITHOUT_HEAD(store_cap);
ATF_TC_BODY(store_cap, tc)
{
	anvil_store_t *st = anvil_store_new(UNIT, 3);
	anvil_entry_t *e[4];

	e[0] = anvil_store_connect(st, 0, "smtp:192.0.2.1");
	e[1] = anvil_store_connect(st, 1, "smtp:192.0.2.2");
	e[2] = anvil_store_connect(st, 2, "smtp:192.0.2.3");
	anvil_store_disconnect(st, 10, e[1]);
	anvil_store_disconnect(st, 20, e[0]);
	/* Full: the idle entry unused longest (.2) goes for a new one. */
	e[3] = anvil_store_connect(st, 30, "smtp:192.0.2.4");
	ATF_CHECK_EQ(anvil_store_size(st), 3);
	ATF_CHECK_EQ(anvil_store_stats(st)->dropped, 1);
	ATF_CHECK_EQ(look(st, 30, "smtp:192.0.2.2").rate, 0);
	ATF_CHECK_EQ(look(st, 30, "smtp:192.0.2.1").rate, 1);
	/* Then .1; after that only entries with connections are left, and
	 * those are never dropped: the cap is passed. */
	anvil_store_connect(st, 40, "smtp:192.0.2.5");
	ATF_CHECK_EQ(look(st, 40, "smtp:192.0.2.1").rate, 0);
	anvil_store_connect(st, 50, "smtp:192.0.2.6");
	ATF_CHECK_EQ(anvil_store_size(st), 4);
	ATF_CHECK_EQ(anvil_store_stats(st)->dropped, 2);
	ATF_CHECK_EQ(look(st, 50, "smtp:192.0.2.3").count, 1);
	ATF_CHECK_EQ(look(st, 50, "smtp:192.0.2.4").count, 1);
	anvil_store_free(st);
}

ATF_TC_WITHOUT_HEAD(store_peaks);
ATF_TC_BODY(store_peaks, tc)
{
	anvil_store_t *st = anvil_store_new(UNIT, 100);
	const anvil_stats_t *s = anvil_store_stats(st);
	bool conn;

	anvil_store_connect(st, 100, "smtp:192.0.2.1");
	anvil_store_connect(st, 200, "smtp:192.0.2.2");
	anvil_store_connect(st, 300, "smtp:192.0.2.2");
	anvil_store_event(st, 400, ANVIL_OP_AUTH, "smtp:192.0.2.1", &conn);
	ATF_CHECK_EQ(s->peak[ANVIL_PEAK_CONN_RATE].value, 2);
	ATF_CHECK_STREQ(s->peak[ANVIL_PEAK_CONN_RATE].ident, "smtp:192.0.2.2");
	ATF_CHECK_EQ(s->peak[ANVIL_PEAK_CONN_RATE].when_ms, 300);
	ATF_CHECK_EQ(s->peak[ANVIL_PEAK_CONN_COUNT].value, 2);
	ATF_CHECK_EQ(s->peak[ANVIL_PEAK_AUTH].value, 1);
	ATF_CHECK_STREQ(s->peak[ANVIL_PEAK_AUTH].ident, "smtp:192.0.2.1");
	ATF_CHECK_EQ(s->peak[ANVIL_PEAK_MESSAGE].value, 0);
	ATF_CHECK_EQ(s->max_size, 2);
	ATF_CHECK_EQ(s->max_size_ms, 200);
	anvil_store_stats_reset(st);
	ATF_CHECK_EQ(s->peak[ANVIL_PEAK_CONN_RATE].value, 0);
	ATF_CHECK_EQ(s->max_size, 0);
	anvil_store_connect(st, 500, "smtp:192.0.2.1");
	ATF_CHECK_EQ(s->peak[ANVIL_PEAK_CONN_RATE].value, 2);
	ATF_CHECK_STREQ(s->peak[ANVIL_PEAK_CONN_RATE].ident, "smtp:192.0.2.1");
	anvil_store_free(st);
}

/* Decodes the one message in text with reader r. */
static attr_msg_t *decode(attr_reader_t *r, const str_t *text)
{
	size_t used;

	ATF_REQUIRE_EQ(attr_reader_feed(r, text->buf, text->len, &used),
	    ATTR_DONE);
	ATF_CHECK_EQ(used, text->len);
	return attr_reader_take(r);
}

ATF_TC_WITHOUT_HEAD(protocol);
ATF_TC_BODY(protocol, tc)
{
	attr_reader_t *rq = anvil_request_reader_new();
	attr_reader_t *rp = anvil_reply_reader_new();
	str_t out = STR_INIT, err = STR_INIT;
	anvil_counts_t c = { 2, 3, 4, 5, 6, 7 };
	anvil_req_t req;
	attr_msg_t *m;
	int32_t v;

	for (int op = 0; op < ANVIL_OP_COUNT; op++) {
		str_reset(&out);
		anvil_request_encode(&out, (anvil_op_t)op, "smtp:192.0.2.1");
		m = decode(rq, &out);
		ATF_CHECK_EQ(anvil_request_parse(m, &req, &err), 0);
		ATF_CHECK_EQ((int)req.op, op);
		ATF_CHECK_STREQ(req.ident, "smtp:192.0.2.1");
		attr_msg_free(m);
	}
	str_set(&out, "S request 4:kill\nS ident 6:smtp:x\n.\n");
	m = decode(rq, &out);
	ATF_CHECK_EQ(anvil_request_parse(m, &req, &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err), "unknown request \"kill\"");
	attr_msg_free(m);
	str_set(&out, "S request 7:connect\nS ident 3:a\tb\n.\n");
	m = decode(rq, &out);
	ATF_CHECK_EQ(anvil_request_parse(m, &req, &err), -1);
	ATF_CHECK_MATCH("^connect request: bad ident", str_cstr(&err));
	attr_msg_free(m);
	/* The schema: no ident, or an attribute it does not know. */
	str_set(&out, "S request 7:connect\n.\n");
	ATF_CHECK_EQ(attr_reader_feed(rq, out.buf, out.len, &(size_t){0}),
	    ATTR_ERROR);
	attr_reader_reset(rq);
	str_set(&out, "S request 7:connect\nS ident 1:x\nI n 1\n.\n");
	ATF_CHECK_EQ(attr_reader_feed(rq, out.buf, out.len, &(size_t){0}),
	    ATTR_ERROR);
	attr_reader_reset(rq);
	ATF_CHECK(anvil_ident_ok("smtp:[2001:db8::1]"));
	ATF_CHECK(!anvil_ident_ok(""));
	ATF_CHECK(!anvil_ident_ok("smtp:\xc3\xa9"));

	/* Replies: what each request gets. */
	str_reset(&out);
	anvil_reply_encode(&out, ANVIL_OP_CONNECT, &c);
	ATF_CHECK_STREQ(str_cstr(&out), "I status 0\nI count 2\nI rate 3\n.\n");
	str_reset(&out);
	anvil_reply_encode(&out, ANVIL_OP_RECIPIENT, &c);
	ATF_CHECK_STREQ(str_cstr(&out), "I status 0\nI rate 5\n.\n");
	str_reset(&out);
	anvil_reply_encode(&out, ANVIL_OP_AUTH, &c);
	m = decode(rp, &out);
	ATF_CHECK(attr_get_int(m, "rate", &v) && v == 7);
	attr_msg_free(m);
	str_reset(&out);
	anvil_reply_encode(&out, ANVIL_OP_LOOKUP, &c);
	m = decode(rp, &out);
	ATF_CHECK(attr_get_int(m, "newtls", &v) && v == 6);
	ATF_CHECK(attr_get_int(m, "message", &v) && v == 4);
	attr_msg_free(m);
	attr_reader_free(rq);
	attr_reader_free(rp);
	str_release(&out);
	str_release(&err);
}

/* ---- A small anvil for the client: one connection at a time, the
 * store above, no holding (that is the daemon's; t_anvil.sh). ---- */

static pid_t server(const char *path)
{
	int lfd, fd;
	pid_t pid;
	struct sockaddr_un sun;

	unlink(path);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ATF_REQUIRE(lfd >= 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	bcopy_str(sun.sun_path, sizeof(sun.sun_path), path);
	ATF_REQUIRE(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	ATF_REQUIRE(listen(lfd, 8) == 0);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid > 0) {
		close(lfd);
		return pid;
	}
	anvil_store_t *st = anvil_store_new(UNIT, 100);
	alarm(30);
	while ((fd = accept(lfd, NULL, NULL)) >= 0) {
		attr_reader_t *r = anvil_request_reader_new();
		str_t out = STR_INIT, err = STR_INIT;
		enum attr_result res;
		while ((res = attr_read_fd(r, fd, 5000)) == ATTR_DONE) {
			attr_msg_t *m = attr_reader_take(r);
			anvil_req_t req;
			anvil_entry_t *e;
			anvil_counts_t c;
			bool conn;
			int64_t now = event_now_ms();
			if (anvil_request_parse(m, &req, &err) < 0)
				_exit(3);
			str_reset(&out);
			if (req.op == ANVIL_OP_CONNECT) {
				e = anvil_store_connect(st, now, req.ident);
				anvil_reply_encode(&out, req.op, &e->c);
			} else if (req.op == ANVIL_OP_DISCONNECT) {
				/* no holding here: any connection */
				if ((e = anvil_store_find(st, req.ident)) != NULL)
					anvil_store_disconnect(st, now, e);
			} else if (req.op == ANVIL_OP_LOOKUP ||
			    req.op == ANVIL_OP_NEWTLS_REPORT) {
				anvil_store_lookup(st, now, req.ident, &c);
				anvil_reply_encode(&out, req.op, &c);
			} else {
				e = anvil_store_event(st, now, req.op,
				    req.ident, &conn);
				anvil_reply_encode(&out, req.op, &e->c);
			}
			attr_msg_free(m);
			if (out.len && attr_write_fd(fd, out.buf, out.len,
			    5000) < 0)
				break;
		}
		attr_reader_free(r);
		close(fd);
	}
	_exit(0);
}

static void server_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

ATF_TC_WITHOUT_HEAD(client);
ATF_TC_BODY(client, tc)
{
	pid_t pid = server("anvil.sock");
	anvil_clnt_t *ac = anvil_clnt_new("anvil.sock", 2000);
	anvil_counts_t c;
	int count, rate;

	ATF_REQUIRE_EQ(anvil_clnt_connect(ac, "smtp:192.0.2.1", &count, &rate), 0);
	ATF_CHECK_EQ(count, 1);
	ATF_CHECK_EQ(rate, 1);
	ATF_REQUIRE_EQ(anvil_clnt_connect(ac, "smtp:192.0.2.1", &count, &rate), 0);
	ATF_CHECK_EQ(count, 2);
	ATF_CHECK_EQ(rate, 2);
	ATF_REQUIRE_EQ(anvil_clnt_event(ac, ANVIL_OP_MESSAGE, "smtp:192.0.2.1",
	    &rate), 0);
	ATF_CHECK_EQ(rate, 1);
	ATF_REQUIRE_EQ(anvil_clnt_event(ac, ANVIL_OP_AUTH, "smtp:192.0.2.1",
	    &rate), 0);
	ATF_REQUIRE_EQ(anvil_clnt_event(ac, ANVIL_OP_AUTH, "smtp:192.0.2.1",
	    &rate), 0);
	ATF_CHECK_EQ(rate, 2);
	/* No reply to a disconnect: the next request's reply is its own. */
	anvil_clnt_disconnect(ac, "smtp:192.0.2.1");
	ATF_REQUIRE_EQ(anvil_clnt_lookup(ac, "smtp:192.0.2.1", &c), 0);
	ATF_CHECK_EQ(c.count, 1);
	ATF_CHECK_EQ(c.rate, 2);
	ATF_CHECK_EQ(c.message, 1);
	ATF_CHECK_EQ(c.auth, 2);
	/* anvil goes away (restarted by master): the kept connection is
	 * replaced once, and the new anvil counts from zero. */
	server_stop(pid);
	pid = server("anvil.sock");
	ATF_REQUIRE_EQ(anvil_clnt_connect(ac, "smtp:192.0.2.1", &count, &rate), 0);
	ATF_CHECK_EQ(count, 1);
	ATF_CHECK(anvil_clnt_usable(ac));
	server_stop(pid);
	anvil_clnt_free(ac);
}

ATF_TC_WITHOUT_HEAD(client_down);
ATF_TC_BODY(client_down, tc)
{
	anvil_clnt_t *ac = anvil_clnt_new("nothing-here", 2000);
	char *log;
	int count, rate;

	log_into("log");
	ATF_CHECK_EQ(anvil_clnt_connect(ac, "smtp:192.0.2.1", &count, &rate), -1);
	ATF_CHECK(!anvil_clnt_usable(ac));
	/* Left alone meanwhile, and said once. */
	ATF_CHECK_EQ(anvil_clnt_event(ac, ANVIL_OP_MESSAGE, "smtp:192.0.2.1",
	    &rate), -1);
	anvil_clnt_disconnect(ac, "smtp:192.0.2.1");
	log = slurp("log");
	ATF_CHECK_MATCH("warning: anvil nothing-here: connect: No such file or "
	    "directory; client connection and rate limits are not enforced "
	    "for 10 s", log);
	ATF_CHECK_MSG(strstr(strstr(log, "anvil nothing-here") + 1,
	    "anvil nothing-here") == NULL, "warned twice: %s", log);
	free(log);
	anvil_clnt_free(ac);
}

/* ---- smtpd ---- */

ATF_TC_WITHOUT_HEAD(smtpd_limits);
ATF_TC_BODY(smtpd_limits, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_client_connection_rate_limit = 2\n"
	    "smtpd_client_message_rate_limit = 1\n"
	    "smtpd_client_recipient_rate_limit = 1\n"
	    "smtpd_client_auth_rate_limit = 1\n");
	smtpd_session_opts_t opts = { 0 };
	smtpd_reply_t rp = SMTPD_REPLY_INIT;
	smtpd_peer_t peer;
	pid_t pid = server("anvil.sock");
	tdest_t td;
	char *t, *log;

	log_into("log");
	opts.anvil = smtpd_anvil_new(cfg, "anvil.sock", "smtp");
	ATF_REQUIRE(opts.anvil != NULL);
	td_init(&td);
	t = RUN(cfg, "192.0.2.1", "MAIL FROM:<a@b.test>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nRCPT TO:<bob@mx.example.test>\r\n"
	    "RSET\r\nMAIL FROM:<a@b.test>\r\nQUIT\r\n", &td, &opts);
	ATF_CHECK_STREQ(t, "220 mx.example.test ESMTP Petrel\r\n"
	    "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
	    "450 4.7.1 Error: too many recipients from 192.0.2.1\r\n"
	    "250 2.0.0 Ok\r\n"
	    "450 4.7.1 Error: too much mail from 192.0.2.1\r\n"
	    "221 2.0.0 Bye\r\n");
	free(t);
	t = RUN(cfg, "192.0.2.1", "QUIT\r\n", &td, &opts);
	ATF_CHECK_STREQ(t, "220 mx.example.test ESMTP Petrel\r\n221 2.0.0 Bye\r\n");
	free(t);
	t = RUN(cfg, "192.0.2.1", "QUIT\r\n", &td, &opts);
	ATF_CHECK_STREQ(t, "421 4.7.0 mx.example.test Error: too many "
	    "connections from 192.0.2.1\r\n");
	free(t);
	/* Another address has its own counts. */
	t = RUN(cfg, "192.0.2.2", "MAIL FROM:<a@b.test>\r\nQUIT\r\n", &td,
	    &opts);
	ATF_CHECK_STREQ(t, "220 mx.example.test ESMTP Petrel\r\n"
	    "250 2.1.0 Ok\r\n221 2.0.0 Bye\r\n");
	free(t);
	/* mynetworks (the default exceptions) is neither limited nor
	 * counted. */
	for (int i = 0; i < 4; i++) {
		t = RUN(cfg, "127.0.0.1", "MAIL FROM:<a@b.test>\r\n", &td,
		    &opts);
		ATF_CHECK_STREQ(t, "220 mx.example.test ESMTP Petrel\r\n"
		    "250 2.1.0 Ok\r\n");
		free(t);
	}
	/* The AUTH hook, as the AUTH command will call it. */
	peer_at(&peer, "192.0.2.3");
	ATF_CHECK(!smtpd_anvil_connect(opts.anvil, &peer, "unknown[192.0.2.3]",
	    &rp));
	ATF_CHECK(!smtpd_anvil_auth(opts.anvil, &rp));
	ATF_CHECK(smtpd_anvil_auth(opts.anvil, &rp));
	ATF_CHECK_EQ(rp.code, 450);
	ATF_CHECK_STREQ(rp.dsn, "4.7.1");
	ATF_CHECK_STREQ(str_cstr(&rp.text), "Error: too many AUTH commands "
	    "from 192.0.2.3");
	smtpd_anvil_disconnect(opts.anvil);
	/* No limit without a session that is counted. */
	ATF_CHECK(!smtpd_anvil_auth(opts.anvil, &rp));
	ATF_CHECK(!smtpd_anvil_auth(NULL, &rp));

	log = slurp("log");
	ATF_CHECK_MATCH("warning: Recipient address rate limit exceeded: 2 "
	    "from unknown\\[192.0.2.1\\] for service smtp", log);
	ATF_CHECK_MATCH("warning: Message delivery request rate limit "
	    "exceeded: 2 from unknown\\[192.0.2.1\\] for service smtp", log);
	ATF_CHECK_MATCH("warning: Connection rate limit exceeded: 3 from "
	    "unknown\\[192.0.2.1\\] for service smtp", log);
	ATF_CHECK_MATCH("warning: AUTH command rate limit exceeded: 2 from "
	    "unknown\\[192.0.2.3\\] for service smtp", log);
	free(log);
	server_stop(pid);
	str_release(&rp.text);
	smtpd_anvil_free(opts.anvil);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(smtpd_no_anvil);
ATF_TC_BODY(smtpd_no_anvil, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_client_connection_rate_limit = 1\n"
	    "smtpd_client_message_rate_limit = 1\n");
	smtpd_session_opts_t opts = { 0 };
	tdest_t td;
	char *t, *log;

	log_into("log");
	opts.anvil = smtpd_anvil_new(cfg, "no-anvil.sock", "smtp");
	td_init(&td);
	/* Nobody refused for anvil's sake, one warning. */
	for (int i = 0; i < 3; i++) {
		t = RUN(cfg, "192.0.2.1", "MAIL FROM:<a@b.test>\r\n"
		    "RSET\r\nMAIL FROM:<a@b.test>\r\n", &td, &opts);
		ATF_CHECK_STREQ(t, "220 mx.example.test ESMTP Petrel\r\n"
		    "250 2.1.0 Ok\r\n250 2.0.0 Ok\r\n250 2.1.0 Ok\r\n");
		free(t);
	}
	log = slurp("log");
	ATF_CHECK_MATCH("warning: anvil no-anvil.sock: connect: ", log);
	ATF_CHECK(strstr(strstr(log, "anvil no-anvil.sock") + 1,
	    "anvil no-anvil.sock") == NULL);
	free(log);
	smtpd_anvil_free(opts.anvil);
	smtpd_cfg_free(cfg);

	/* Every limit off: no anvil client at all, not even a socket. */
	cfg = cfg_with("smtpd_client_connection_count_limit = 0\n");
	ATF_CHECK(smtpd_anvil_new(cfg, "anvil.sock", "smtp") == NULL);
	smtpd_cfg_free(cfg);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, store_connect);
	ATF_TP_ADD_TC(tp, store_events);
	ATF_TP_ADD_TC(tp, store_expiry);
	ATF_TP_ADD_TC(tp, store_cap);
	ATF_TP_ADD_TC(tp, store_peaks);
	ATF_TP_ADD_TC(tp, protocol);
	ATF_TP_ADD_TC(tp, client);
	ATF_TP_ADD_TC(tp, client_down);
	ATF_TP_ADD_TC(tp, smtpd_limits);
	ATF_TP_ADD_TC(tp, smtpd_no_anvil);
	return atf_no_error();
}
