/* The SMTP client engine against smtp-sink: deliveries to
 * [127.0.0.1]:PORT, per-recipient results, every fault mode of the sink
 * that the client must survive, ESMTP extensions, the content as the
 * sink saved it, connection reuse counted by the sink, and the
 * classification of failures for qmgr. */
#include "t_smtp_harness.h"

static const char *const one_rcpt[] = { "a@example.com", NULL };

/* A delivery of MSG_TEXT to rcpts at the sink; results in d. */
static void run(delivery_t *d, smtp_client_t *cl, int port, const char *sender,
    const char *const *rcpts)
{
	char nh[64];

	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	dl_init(d, nh, sender, MSG_TEXT, rcpts);
	smtp_deliver(cl, &d->req);
}

SMTP_TC(basic)
{
	const char *const rcpts[] = { "a@example.com", "b@example.com",
	    "john doe@example.com", NULL };	/* internal form: unquoted */
	delivery_t d;
	smtp_client_t *cl;
	str_t t = STR_INIT, want = STR_INIT;
	int port;

	cfg_init();
	port = sink_start(tc, "-d", "saved", NULL);
	ATF_REQUIRE(mkdir("saved", 0755) == 0 || errno == EEXIST);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "sender@example.com", rcpts);
	for (int i = 0; i < 3; i++)
		CHECK_RCPT(&d, i, SMTP_R_SENT, "2.0.0", "250 2.0.0");
	str_setf(&want, "127.0.0.1[127.0.0.1]:%d", port);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), str_cstr(&want));
	ATF_CHECK_EQ(d.rcpt[0].action, DLV_ACT_DELIVERED);
	ATF_CHECK(!d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	/* No status line from the engine: the agent loop logs it for every
	 * agent (libglobal/delivery_log.c, t_delivery:agent_logs). */
	ATF_CHECK_MSG(strstr(log_text(&t), "status=sent") == NULL, "log: %s",
	    str_cstr(&t));
	dl_free(&d);
	smtp_client_free(cl);	/* QUIT */
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
	ATF_CHECK_EQ(sink_stat(0, "recipients"), 3);
	ATF_CHECK_EQ(sink_stat(0, "ehlo"), 1);
	ATF_CHECK_EQ(sink_stat(0, "quit"), 1);
	sink_message("saved", 1, &t);
	ATF_CHECK(strstr(str_cstr(&t), "helo=client.test") != NULL);
	ATF_CHECK(strstr(str_cstr(&t), "X-Sink-Rcpt-To: <\"john doe\"@example.com>") != NULL);
	ATF_CHECK(strstr(str_cstr(&t), "\r\n" MSG_TEXT) != NULL);
	str_release(&t);
	str_release(&want);
}

SMTP_TC(rcpt_mix)
{
	const char *const rcpts[] = { "ok@example.com", "tempfail@example.com",
	    "permfail@example.com", "ok2@example.com", NULL };
	delivery_t d;
	smtp_client_t *cl;
	str_t t = STR_INIT;
	int port;

	cfg_init();
	port = sink_start(tc, NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "sender@example.com", rcpts);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	CHECK_RCPT(&d, 1, SMTP_R_DEFER, "4.2.0", "host 127.0.0.1[127.0.0.1] said: 450 4.2.0");
	CHECK_RCPT(&d, 1, SMTP_R_DEFER, "4.2.0", "(in reply to RCPT TO command)");
	CHECK_RCPT(&d, 2, SMTP_R_BOUNCE, "5.1.1", "said: 550 5.1.1");
	CHECK_RCPT(&d, 3, SMTP_R_SENT, "2.0.0", "250");
	ATF_CHECK_EQ(d.rcpt[1].action, DLV_ACT_DELAYED);
	ATF_CHECK_EQ(d.rcpt[2].action, DLV_ACT_FAILED);
	/* The server's own words, for the DSN's Diagnostic-Code. */
	ATF_CHECK(strncmp(str_cstr(&d.rcpt[1].remote_reply), "450 4.2.0 <tempfail@example.com>", 32) == 0);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[1].remote_mta), "127.0.0.1");
	ATF_CHECK(strncmp(str_cstr(&d.rcpt[0].remote_reply), "250 2.0.0", 9) == 0);
	/* The server answered: not a connection failure. */
	ATF_CHECK(!d.req.conn_failed);
	/* The reasons the agent's log line and the notice will carry. */
	ATF_CHECK_STREQ(d.rcpt[1].dsn, "4.2.0");
	ATF_CHECK(strncmp(str_cstr(&d.rcpt[1].diag), "host 127.0.0.1[127.0.0.1] said: 450", 35) == 0);
	ATF_CHECK_STREQ(d.rcpt[2].dsn, "5.1.1");
	ATF_CHECK(strncmp(str_cstr(&d.rcpt[2].diag), "host 127.0.0.1[127.0.0.1] said: 550", 35) == 0);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
	ATF_CHECK_EQ(sink_stat(0, "recipients"), 2);
	str_release(&t);
}

SMTP_TC(mail_rejected)
{
	const char *const rcpts[] = { "a@example.com", "b@example.com", NULL };
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	port = sink_start(tc, NULL);
	cl = smtp_client_new(&cfg, NULL);
	/* 5xx to MAIL FROM: every recipient of the batch bounces. */
	run(&d, cl, port, "permfail@example.com", rcpts);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.7.1", "(in reply to MAIL FROM command)");
	CHECK_RCPT(&d, 1, SMTP_R_BOUNCE, "5.7.1", "said: 550 5.7.1");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	/* 4xx: deferred, on the same (kept) session. */
	run(&d, cl, port, "tempfail@example.com", rcpts);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.0", "(in reply to MAIL FROM command)");
	CHECK_RCPT(&d, 1, SMTP_R_DEFER, "4.3.0", "said: 451 4.3.0");
	dl_free(&d);
	/* And a good one afterwards still goes through. */
	run(&d, cl, port, "good@example.com", rcpts);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "mail_rejected"), 2);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
}

SMTP_TC(data_rejected)
{
	const char *const rcpts[] = { "a@example.com", "permfail@example.com", NULL };
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	port = sink_start(tc, "--data-reply=5", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", rcpts);
	/* 5xx to DATA: the accepted recipient bounces with it; the
	 * refused one keeps its own reason. */
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.5.0", "(in reply to DATA command)");
	CHECK_RCPT(&d, 1, SMTP_R_BOUNCE, "5.1.1", "(in reply to RCPT TO command)");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 0);

	port = sink_start(tc, "--data-reply=4", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.0", "said: 451 4.3.0");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);

	port = sink_start(tc, "--dot-reply=5", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.6.0", "(in reply to end of DATA command)");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
}

/* A connection dropped during the message: deferred, nothing delivered;
 * the next attempt delivers exactly once. */
SMTP_TC(drop_mid_data)
{
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	port = sink_start(tc, "-D", "body:1", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.2", "lost connection with 127.0.0.1[127.0.0.1] while sending");
	ATF_CHECK(!d.req.conn_failed);
	ATF_CHECK_EQ(smtp_client_cached(cl), 0);
	dl_free(&d);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
	ATF_CHECK_EQ(sink_stat(0, "dropped"), 1);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 2);
}

SMTP_TC(drop_at_dot)
{
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	port = sink_start(tc, "-D", "dot", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.2", "while sending end of data -- message may be sent more than once");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
}

SMTP_TC(drop_at_rcpt)
{
	const char *const rcpts[] = { "a@example.com", "drop-rcpt@example.com",
	    "permfail@example.com", NULL };
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	port = sink_start(tc, NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", rcpts);
	/* After a drop nobody is delivered; every open recipient waits. */
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.2", "lost connection");
	CHECK_RCPT(&d, 1, SMTP_R_DEFER, "4.4.2", "lost connection with 127.0.0.1[127.0.0.1] while sending");
	CHECK_RCPT(&d, 2, SMTP_R_DEFER, "4.4.2", "lost connection");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
}

SMTP_TC(greeting_421)
{
	delivery_t d;
	smtp_client_t *cl;
	str_t t = STR_INIT;
	int port;

	cfg_init();
	port = sink_start(tc, "--greeting=421", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.2", "host 127.0.0.1[127.0.0.1] refused to talk to me: 421");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);	/* it answered */
	ATF_CHECK(strstr(str_cstr(&d.req.reason), "refused to talk to me") != NULL);
	ATF_CHECK(strncmp(str_cstr(&d.rcpt[0].remote_reply), "421 4.3.2", 9) == 0);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "mail"), 0);
	str_release(&t);
}

SMTP_TC(greeting_hang)
{
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	cfg.helo_timeout_ms = 300;
	port = sink_start(tc, "--greeting=hang", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.2", "conversation with 127.0.0.1[127.0.0.1] timed out while receiving the initial server greeting");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
}

/* Timeouts after the handshake are normal results. */
SMTP_TC(rcpt_timeout)
{
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	cfg.rcpt_timeout_ms = 300;
	/* Without PIPELINING, so that the sink's delayed RCPT reply is
	 * the one awaited (it would hold the MAIL reply back otherwise). */
	port = sink_start(tc, "-W", "3000", "-x", "pipelining", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.2", "timed out while sending RCPT TO");
	ATF_CHECK(!d.req.conn_failed);
	ATF_CHECK_EQ(smtp_client_cached(cl), 0);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
}

SMTP_TC(connect_refused)
{
	int fds[SOCK_LISTEN_MAX], port;
	delivery_t d;
	smtp_client_t *cl;
	char want[128];

	cfg_init();
	/* A port nobody listens on: bind one, then close it. */
	ATF_REQUIRE(sock_tcp_listen("127.0.0.1:0", 1, fds) == 1);
	port = sock_local_port(fds[0]);
	close(fds[0]);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	snprintf(want, sizeof(want), "connect to 127.0.0.1[127.0.0.1]:%d: Connection refused", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.1", want);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), "none");
	ATF_CHECK_EQ(str_len(&d.rcpt[0].remote_reply), 0);
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(d.req.avoid_destination);
	ATF_CHECK_STREQ(str_cstr(&d.req.reason), want);
	dl_free(&d);
	smtp_client_free(cl);
}

SMTP_TC(pipelining)
{
	const char *const rcpts[] = { "a@example.com", "b@example.com",
	    "c@example.com", NULL };
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	/* With PIPELINING, MAIL, RCPTs and DATA go out together: the sink
	 * sees the RCPTs even though it refuses the sender. */
	port = sink_start(tc, "-v", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "permfail@example.com", rcpts);
	CHECK_RCPT(&d, 2, SMTP_R_BOUNCE, "5.7.1", "MAIL FROM");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_log_count(0, "< RCPT TO:"), 3);
	ATF_CHECK_EQ(sink_log_count(0, "< DATA"), 1);

	/* Without it, each reply is awaited: no RCPT after a refused MAIL,
	 * and a normal delivery still works. */
	port = sink_start(tc, "-v", "-x", "pipelining", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "permfail@example.com", rcpts);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.7.1", "MAIL FROM");
	dl_free(&d);
	run(&d, cl, port, "s@example.com", rcpts);
	for (int i = 0; i < 3; i++)
		CHECK_RCPT(&d, i, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	/* Nobody accepted: no DATA at all. */
	{
		const char *const bad[] = { "permfail@example.com", NULL };
		run(&d, cl, port, "s@example.com", bad);
		CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.1.1", "RCPT TO");
		dl_free(&d);
	}
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_log_count(0, "< RCPT TO:"), 4);
	ATF_CHECK_EQ(sink_log_count(0, "< DATA"), 1);
	ATF_CHECK_EQ(sink_stat(0, "data"), 1);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
}

SMTP_TC(size_limit)
{
	delivery_t d;
	smtp_client_t *cl;
	str_t t = STR_INIT, body = STR_INIT;
	int port;

	cfg_init();
	for (int i = 0; i < 20; i++)
		str_cat(&body, "0123456789012345678901234567890123456789012345678901234567890123456789\r\n");
	port = sink_start(tc, "-z", "1000", "-d", "saved", NULL);
	ATF_REQUIRE(mkdir("saved", 0755) == 0 || errno == EEXIST);
	cl = smtp_client_new(&cfg, NULL);
	{
		char nh[64];
		snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
		dl_init(&d, nh, "s@example.com", str_cstr(&body), one_rcpt);
	}
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.3.4", "message size 1440 exceeds size limit 1000 of server 127.0.0.1[127.0.0.1]");
	dl_free(&d);
	/* A message that fits goes with SIZE=. */
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "mail"), 1);
	sink_message("saved", 1, &t);
	str_setf(&body, "X-Sink-Mail-From: <s@example.com> SIZE=%zu\r\n", strlen(MSG_TEXT));
	ATF_CHECK_MSG(strstr(str_cstr(&t), str_cstr(&body)) != NULL, "%s", str_cstr(&t));
	str_release(&t);
	str_release(&body);
}

SMTP_TC(dsn)
{
	const char *const rcpts[] = { "a@example.com", "b@example.com",
	    "c@example.com", "d@example.com", NULL };
	delivery_t d;
	smtp_client_t *cl;
	str_t t = STR_INIT;
	char nh[64];
	int port;

	cfg_init();
	port = sink_start(tc, "-d", "saved", NULL);
	ATF_REQUIRE(mkdir("saved", 0755) == 0 || errno == EEXIST);
	cl = smtp_client_new(&cfg, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	dl_init(&d, nh, "s@example.com", MSG_TEXT, rcpts);
	d.req.envid = "ENV+42 x";	/* decoded: encoded on the wire */
	d.req.ret = QF_RET_HDRS;
	d.rcpt[0].in.notify = DSN_NOTIFY_SUCCESS | DSN_NOTIFY_FAILURE;
	d.rcpt[0].in.orcpt = "rfc822;orig+2Ba@example.com";
	d.rcpt[1].in.notify = DSN_NOTIFY_NEVER;
	d.rcpt[1].in.orig = "old b@example.com";
	d.rcpt[2].in.notify = DSN_NOTIFY_DELAY;
	d.rcpt[2].in.orcpt = "bad orcpt";	/* not well formed: not sent */
	smtp_deliver(cl, &d.req);
	for (int i = 0; i < 4; i++)
		CHECK_RCPT(&d, i, SMTP_R_SENT, "2.0.0", "250");
	/* The server speaks DSN: success notices are its business. */
	ATF_CHECK(d.rcpt[0].dsn_passed);
	ATF_CHECK_EQ(d.rcpt[0].action, DLV_ACT_DELIVERED);
	ATF_CHECK(!d.rcpt[3].dsn_passed);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	sink_message("saved", 1, &t);
	ATF_CHECK_MSG(strstr(str_cstr(&t), " RET=HDRS ENVID=ENV+2B42+20x\r\n") != NULL, "%s", str_cstr(&t));
	ATF_CHECK(strstr(str_cstr(&t), "X-Sink-Rcpt-To: <a@example.com> NOTIFY=SUCCESS,FAILURE ORCPT=rfc822;orig+2Ba@example.com\r\n") != NULL);
	ATF_CHECK(strstr(str_cstr(&t), "X-Sink-Rcpt-To: <b@example.com> NOTIFY=NEVER ORCPT=rfc822;\"old+20b\"@example.com\r\n") != NULL);
	ATF_CHECK(strstr(str_cstr(&t), "X-Sink-Rcpt-To: <c@example.com> NOTIFY=DELAY\r\n") != NULL);
	ATF_CHECK(strstr(str_cstr(&t), "X-Sink-Rcpt-To: <d@example.com>\r\n") != NULL);

	/* Without DSN downstream nothing is passed, and a recipient who
	 * asked for success notices gets "relayed". */
	port = sink_start(tc, "-x", "dsn", "-d", "saved2", NULL);
	ATF_REQUIRE(mkdir("saved2", 0755) == 0 || errno == EEXIST);
	cl = smtp_client_new(&cfg, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	dl_init(&d, nh, "s@example.com", MSG_TEXT, rcpts);
	d.req.envid = "ENV";
	d.req.ret = QF_RET_FULL;
	d.rcpt[0].in.notify = DSN_NOTIFY_SUCCESS;
	d.rcpt[0].in.orcpt = "rfc822;a@example.com";
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	ATF_CHECK_EQ(d.rcpt[0].action, DLV_ACT_RELAYED);
	ATF_CHECK(!d.rcpt[0].dsn_passed);
	ATF_CHECK_EQ(d.rcpt[1].action, DLV_ACT_DELIVERED);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	sink_message("saved2", 1, &t);
	ATF_CHECK(strstr(str_cstr(&t), "RET=") == NULL);
	ATF_CHECK(strstr(str_cstr(&t), "ENVID=") == NULL);
	ATF_CHECK(strstr(str_cstr(&t), "X-Sink-Rcpt-To: <a@example.com>\r\n") != NULL);
	str_release(&t);
}

/* Dot-stuffing, CRLF whatever the stored line ends were, long lines
 * folded at smtp_line_length_limit, a last line without its newline. */
SMTP_TC(content)
{
	delivery_t d;
	smtp_client_t *cl;
	str_t text = STR_INIT, want = STR_INIT, t = STR_INIT;
	char nh[64], *longline;
	const char *body;
	int port;

	cfg_init();
	longline = malloc(2501);
	memset(longline, 'x', 2500);
	longline[2500] = '\0';
	str_setf(&text, "Subject: dots\n\n.\n..two\n.leading dot\r\nbare lf\nmid.dot\n"
	    "%s\n.%s\nlast line without newline", longline, longline + 1);
	/* Expected after the sink undid the stuffing: lines of at most
	 * 998 bytes on the wire (a stuffed dot counts), folded with CRLF SP. */
	str_setf(&want, "Subject: dots\r\n\r\n.\r\n..two\r\n.leading dot\r\nbare lf\r\nmid.dot\r\n");
	str_append(&want, longline, 998);
	str_cat(&want, "\r\n ");
	str_append(&want, longline, 997);
	str_cat(&want, "\r\n ");
	str_append(&want, longline, 505);
	str_cat(&want, "\r\n.");
	str_append(&want, longline, 997 - 1);	/* the stuffed dot took one */
	str_cat(&want, "\r\n ");
	str_append(&want, longline, 997);
	str_cat(&want, "\r\n ");
	str_append(&want, longline, 2499 - 996 - 997);
	str_cat(&want, "\r\nlast line without newline\r\n");

	port = sink_start(tc, "-d", "saved", NULL);
	ATF_REQUIRE(mkdir("saved", 0755) == 0 || errno == EEXIST);
	cl = smtp_client_new(&cfg, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	dl_init(&d, nh, "s@example.com", str_cstr(&text), one_rcpt);
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);

	/* No limit: lines go as they are. */
	smtp_client_free(cl);
	cfg.line_length_limit = 0;
	cl = smtp_client_new(&cfg, NULL);
	dl_init(&d, nh, "s@example.com", str_cstr(&text), one_rcpt);
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "bare_lf"), 0);

	sink_message("saved", 1, &t);
	body = strstr(str_cstr(&t), "Subject: dots");
	ATF_REQUIRE(body != NULL);
	ATF_CHECK_EQ(strlen(body), str_len(&want));
	ATF_CHECK_MSG(strcmp(body, str_cstr(&want)) == 0, "content differs");

	sink_message("saved", 2, &t);
	body = strstr(str_cstr(&t), "Subject: dots");
	ATF_REQUIRE(body != NULL);
	str_setf(&want, "Subject: dots\r\n\r\n.\r\n..two\r\n.leading dot\r\nbare lf\r\nmid.dot\r\n%s\r\n.%s\r\nlast line without newline\r\n",
	    longline, longline + 1);
	ATF_CHECK_MSG(strcmp(body, str_cstr(&want)) == 0, "content differs (no limit)");
	free(longline);
	str_release(&text);
	str_release(&want);
	str_release(&t);
}

/* The content from a real queue file. */
SMTP_TC(qfile_content)
{
	queue_layout_t ql;
	str_t err = STR_INIT, t = STR_INIT;
	qfw_t *w;
	qfile_t *qf;
	qf_err_t qe;
	qf_rcpt_in_t rin = { "a@example.com", NULL, NULL, 0 };
	smtp_rcpt_t rcpt[1];
	smtp_request_t req;
	smtp_client_t *cl;
	char nh[64], id[64];
	const char *content = "Subject: from the queue\n\n.dot\nbody\r\n";
	int port;

	cfg_init();
	ATF_REQUIRE(queue_layout_init(&ql, "q", "", 1, &err) == 0);
	ATF_REQUIRE_MSG(queue_create_dirs(&ql, &err) == 0, "%s", str_cstr(&err));
	w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err);
	ATF_REQUIRE(w != NULL);
	ATF_REQUIRE(qfw_sender(w, "s@example.com") == 0);
	ATF_REQUIRE(qfw_rcpt(w, &rin) == 0);
	ATF_REQUIRE(qfw_content(w, content, strlen(content)) == 0);
	ATF_REQUIRE(qfw_commit(w) == 0);
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	qfw_free(w);
	qf = qfile_open(&ql, QUEUE_INCOMING, id, 0, &qe);
	ATF_REQUIRE_MSG(qf != NULL, "%s", qe.reason);

	port = sink_start(tc, "-d", "saved", NULL);
	ATF_REQUIRE(mkdir("saved", 0755) == 0 || errno == EEXIST);
	cl = smtp_client_new(&cfg, NULL);
	memset(rcpt, 0, sizeof(rcpt));
	rcpt[0].in.address = "a@example.com";
	smtp_request_init(&req, rcpt, 1);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	req.nexthop = nh;
	req.queue_id = id;
	req.sender = qfile_sender(qf);
	req.size = qfile_content_size(qf);
	smtp_content_qfile(&req.content, qf);
	smtp_deliver(cl, &req);
	ATF_CHECK_MSG(rcpt[0].status == SMTP_R_SENT, "%s", str_cstr(&rcpt[0].diag));
	smtp_request_release(&req);
	smtp_client_free(cl);
	qfile_close(qf);
	sink_stop(0);
	sink_message("saved", 1, &t);
	ATF_CHECK(strstr(str_cstr(&t), "\r\nSubject: from the queue\r\n\r\n.dot\r\nbody\r\n") != NULL);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&t);
}

SMTP_TC(eightbit)
{
	delivery_t d;
	smtp_client_t *cl;
	str_t t = STR_INIT;
	char nh[64];
	int port;

	cfg_init();
	port = sink_start(tc, "-d", "saved", NULL);
	ATF_REQUIRE(mkdir("saved", 0755) == 0 || errno == EEXIST);
	cl = smtp_client_new(&cfg, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	dl_init(&d, nh, "s@example.com", "Subject: caf\xc3\xa9\r\n\r\n\xc3\xa9t\xc3\xa9\r\n", one_rcpt);
	d.req.body = SMTP_BODY_8BITMIME;
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	sink_message("saved", 1, &t);
	ATF_CHECK_MSG(strstr(str_cstr(&t), " BODY=8BITMIME\r\n") != NULL, "%s", str_cstr(&t));
	ATF_CHECK(strstr(str_cstr(&t), "\xc3\xa9t\xc3\xa9\r\n") != NULL);

	port = sink_start(tc, "-x", "8bitmime", "-d", "saved2", NULL);
	ATF_REQUIRE(mkdir("saved2", 0755) == 0 || errno == EEXIST);
	cl = smtp_client_new(&cfg, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	dl_init(&d, nh, "s@example.com", "Subject: x\r\n\r\n\xc3\xa9\r\n", one_rcpt);
	d.req.body = SMTP_BODY_8BITMIME;
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	sink_message("saved2", 1, &t);
	ATF_CHECK(strstr(str_cstr(&t), "BODY=") == NULL);
	str_release(&t);
}

SMTP_TC(smtputf8_refused)
{
	const char *const rcpts[] = { "j\xc3\xb6ran@example.com", "a@example.com", NULL };
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	port = sink_start(tc, NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", rcpts);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.6.7", "SMTPUTF8 is required, but was not offered by host 127.0.0.1[127.0.0.1]");
	CHECK_RCPT(&d, 1, SMTP_R_BOUNCE, "5.6.7", "SMTPUTF8");
	dl_free(&d);
	/* Asked for, but the envelope is ASCII: sent without it. */
	{
		char nh[64];
		snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
		dl_init(&d, nh, "s@example.com", MSG_TEXT, one_rcpt);
	}
	d.req.smtputf8 = true;
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "mail"), 1);
}

SMTP_TC(helo_fallback)
{
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	port = sink_start(tc, "--no-ehlo", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "helo"), 1);
	ATF_CHECK_EQ(sink_stat(0, "ehlo"), 0);

	/* smtp_always_send_ehlo = no: HELO straight away. */
	port = sink_start(tc, NULL);
	cfg.always_send_ehlo = false;
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "helo"), 1);
	ATF_CHECK_EQ(sink_stat(0, "ehlo"), 0);
}

/* 452 too many recipients: the rest go in further transactions on the
 * same connection. */
SMTP_TC(rcpt_limit)
{
	const char *const rcpts[] = { "a@example.com", "b@example.com",
	    "c@example.com", "d@example.com", "e@example.com", NULL };
	delivery_t d;
	smtp_client_t *cl;
	int port;

	cfg_init();
	port = sink_start(tc, "-n", "2", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", rcpts);
	for (int i = 0; i < 5; i++)
		CHECK_RCPT(&d, i, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 3);
	ATF_CHECK_EQ(sink_stat(0, "recipients"), 5);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
}

/* Connection reuse: many messages, one connection (RSET between). */
SMTP_TC(reuse)
{
	delivery_t d;
	smtp_client_t *cl;
	int port, sent = 0;

	cfg_init();
	port = sink_start(tc, NULL);
	cl = smtp_client_new(&cfg, NULL);
	for (int i = 0; i < 200; i++) {
		run(&d, cl, port, "s@example.com", one_rcpt);
		sent += d.rcpt[0].status == SMTP_R_SENT;
		dl_free(&d);
	}
	ATF_CHECK_EQ(sent, 200);
	ATF_CHECK_EQ(smtp_client_stats(cl)->connects, 1);
	ATF_CHECK_EQ(smtp_client_stats(cl)->reused, 199);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 200);
	ATF_CHECK_EQ(sink_stat(0, "rset"), 199);
	ATF_CHECK_EQ(sink_stat(0, "quit"), 1);

	/* smtp_connection_reuse_count_limit = 9: ten deliveries a session. */
	port = sink_start(tc, NULL);
	cfg.reuse_count_limit = 9;
	cl = smtp_client_new(&cfg, NULL);
	for (int i = 0; i < 200; i++) {
		run(&d, cl, port, "s@example.com", one_rcpt);
		dl_free(&d);
	}
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 20);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 200);
	ATF_CHECK_EQ(sink_stat(0, "quit"), 20);

	/* No cache: a connection per message. */
	port = sink_start(tc, NULL);
	cfg.reuse_count_limit = 0;
	cfg.connection_cache = false;
	cl = smtp_client_new(&cfg, NULL);
	for (int i = 0; i < 5; i++) {
		run(&d, cl, port, "s@example.com", one_rcpt);
		dl_free(&d);
	}
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 5);
}

/* A kept session is closed (QUIT) once idle for the cache time limit,
 * and is not reused for another next hop. */
SMTP_TC(cache_expire)
{
	delivery_t d;
	smtp_client_t *cl;
	char nh[64];
	int port, fds[4];
	int64_t deadline;

	cfg_init();
	cfg.cache_time_limit_ms = 200;
	port = sink_start(tc, NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_cached(cl), 1);
	ATF_CHECK_EQ(smtp_client_cache_fds(cl, fds, 4), 1);
	deadline = smtp_client_cache_deadline(cl);
	ATF_CHECK(deadline > 0);
	smtp_client_cache_expire(cl, deadline - 1, false);
	ATF_CHECK_EQ(smtp_client_cached(cl), 1);
	/* The same server under another next-hop name: a new session. */
	snprintf(nh, sizeof(nh), "127.0.0.1:%d", port);
	dl_init(&d, nh, "s@example.com", MSG_TEXT, one_rcpt);
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_cached(cl), 2);
	ATF_CHECK(sink_stat_wait(0, "quit", 0));
	smtp_client_cache_expire(cl, smtp_client_cache_deadline(cl) + 1000, false);
	ATF_CHECK_EQ(smtp_client_cached(cl), 0);
	ATF_CHECK_EQ(smtp_client_cache_deadline(cl), -1);
	ATF_CHECK(sink_stat_wait(0, "quit", 2));
	/* Idle past the limit when the next request comes: not used. */
	run(&d, cl, port, "s@example.com", one_rcpt);
	dl_free(&d);
	h_sleep_ms(300);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 4);
	ATF_CHECK_EQ(sink_stat(0, "rset"), 0);
}

/* A kept session the server has closed meanwhile (its idle timeout):
 * noticed, and the message goes over a new connection. */
SMTP_TC(cache_server_closed)
{
	delivery_t d;
	smtp_client_t *cl;
	int port, fd;

	cfg_init();
	port = sink_start(tc, "-T", "1", NULL);
	cl = smtp_client_new(&cfg, NULL);
	run(&d, cl, port, "s@example.com", one_rcpt);
	dl_free(&d);
	ATF_REQUIRE_EQ(smtp_client_cache_fds(cl, &fd, 1), 1);
	ATF_REQUIRE(sink_stat_wait(0, "timeouts", 1));
	/* What an event loop would do when the descriptor turns readable. */
	smtp_client_cache_check(cl, fd);
	ATF_CHECK_EQ(smtp_client_cached(cl), 0);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	/* The same without the check: found out when taken from the cache. */
	ATF_REQUIRE(sink_stat_wait(0, "timeouts", 2));
	h_sleep_ms(100);
	ATF_CHECK_EQ(smtp_client_cached(cl), 1);
	run(&d, cl, port, "s@example.com", one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 3);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 3);
}

SMTP_TC(bad_nexthop)
{
	delivery_t d;
	smtp_client_t *cl;

	(void)tc;
	cfg_init();
	cl = smtp_client_new(&cfg, NULL);
	dl_init(&d, "bad..domain", "s@example.com", MSG_TEXT, one_rcpt);
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.1.2", "bad next hop");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	dl_init(&d, "[127.0.0.1]:99999", "s@example.com", MSG_TEXT, one_rcpt);
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.5", "configuration error");
	dl_free(&d);
	/* TLS required but no context: deferred, saying why. */
	smtp_client_free(cl);
	cfg.tls_level = TLS_LEVEL_ENCRYPT;
	cl = smtp_client_new(&cfg, NULL);
	smtp_client_set_tls_error(cl, "cannot load the CA file");
	dl_init(&d, "[127.0.0.1]:25", "s@example.com", MSG_TEXT, one_rcpt);
	smtp_deliver(cl, &d.req);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.5", "cannot load the CA file");
	dl_free(&d);
	smtp_client_free(cl);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, basic);
	ATF_TP_ADD_TC(tp, rcpt_mix);
	ATF_TP_ADD_TC(tp, mail_rejected);
	ATF_TP_ADD_TC(tp, data_rejected);
	ATF_TP_ADD_TC(tp, drop_mid_data);
	ATF_TP_ADD_TC(tp, drop_at_dot);
	ATF_TP_ADD_TC(tp, drop_at_rcpt);
	ATF_TP_ADD_TC(tp, greeting_421);
	ATF_TP_ADD_TC(tp, greeting_hang);
	ATF_TP_ADD_TC(tp, rcpt_timeout);
	ATF_TP_ADD_TC(tp, connect_refused);
	ATF_TP_ADD_TC(tp, pipelining);
	ATF_TP_ADD_TC(tp, size_limit);
	ATF_TP_ADD_TC(tp, dsn);
	ATF_TP_ADD_TC(tp, content);
	ATF_TP_ADD_TC(tp, qfile_content);
	ATF_TP_ADD_TC(tp, eightbit);
	ATF_TP_ADD_TC(tp, smtputf8_refused);
	ATF_TP_ADD_TC(tp, helo_fallback);
	ATF_TP_ADD_TC(tp, rcpt_limit);
	ATF_TP_ADD_TC(tp, reuse);
	ATF_TP_ADD_TC(tp, cache_expire);
	ATF_TP_ADD_TC(tp, cache_server_closed);
	ATF_TP_ADD_TC(tp, bad_nexthop);
	return atf_no_error();
}
