/* Finding and trying servers: MX preference order, falling back to the
 * next MX when one refuses connections, greets with 421 or refuses the
 * sender, smtp_mx_session_limit, and DNS failures (NXDOMAIN, null MX,
 * SERVFAIL), with names from fakedns and sinks on 127.0.0.1-3 sharing
 * one port (the next hop's port applies to every MX host). */
#include "t_smtp_harness.h"

static const char *const one_rcpt[] = { "a@example.com", NULL };

static const char zone[] =
    "order.test MX 20 b.order.test\n"
    "order.test MX 10 a.order.test\n"
    "a.order.test A 127.0.0.2\n"
    "b.order.test A 127.0.0.1\n"
    "fallback.test MX 10 dead.fallback.test\n"
    "fallback.test MX 20 live.fallback.test\n"
    "dead.fallback.test A 127.0.0.2\n"
    "live.fallback.test A 127.0.0.1\n"
    "dead.test MX 10 a.dead.test\n"
    "dead.test MX 20 b.dead.test\n"
    "a.dead.test A 127.0.0.2\n"
    "b.dead.test A 127.0.0.3\n"
    "three.test MX 10 m1.three.test\n"
    "three.test MX 20 m2.three.test\n"
    "three.test MX 30 m3.three.test\n"
    "m1.three.test A 127.0.0.1\n"
    "m2.three.test A 127.0.0.2\n"
    "m3.three.test A 127.0.0.3\n"
    "implicit.test A 127.0.0.1\n"
    "gone.test NXDOMAIN\n"
    "nullmx.test MX 0 .\n"
    "broken.test SERVFAIL\n";

/* Sink n on 127.0.0.(n+1) at port (0: any; the first one picks). */
static int sink_at(const atf_tc_t *tc, int n, int port, const char *opt)
{
	char addr[64];
	const char *opts[] = { opt, NULL };

	snprintf(addr, sizeof(addr), "127.0.0.%d:%d", n + 1, port);
	return sink_start_v(tc, n, addr, opts);
}

static void deliver(delivery_t *d, smtp_client_t *cl, const char *domain, int port)
{
	char nh[128];

	snprintf(nh, sizeof(nh), "%s:%d", domain, port);
	dl_init(d, nh, "s@example.com", MSG_TEXT, one_rcpt);
	smtp_deliver(cl, &d->req);
}

/* The lower preference wins even when it is listed second. */
SMTP_TC(mx_order)
{
	delivery_t d;
	smtp_client_t *cl;
	dns_resolver_t *r;
	str_t want = STR_INIT;
	int port;

	cfg_init();
	r = use_fakedns(tc, zone);
	port = sink_at(tc, 0, 0, NULL);
	sink_at(tc, 1, port, NULL);
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, "order.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	str_setf(&want, "a.order.test[127.0.0.2]:%d", port);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), str_cstr(&want));
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop_all();
	dns_stop();
	ATF_CHECK_EQ(sink_stat(1, "messages"), 1);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 0);
	dns_resolver_free(r);
	str_release(&want);
}

/* The first MX refuses connections: the second takes the mail. */
SMTP_TC(mx_fallback)
{
	delivery_t d;
	smtp_client_t *cl;
	dns_resolver_t *r;
	str_t t = STR_INIT, want = STR_INIT;
	int port;

	cfg_init();
	r = use_fakedns(tc, zone);
	port = sink_at(tc, 0, 0, NULL);
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, "fallback.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	str_setf(&want, "live.fallback.test[127.0.0.1]:%d", port);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), str_cstr(&want));
	ATF_CHECK(!d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	str_setf(&want, "connect to dead.fallback.test[127.0.0.2]:%d: Connection refused", port);
	ATF_CHECK_MSG(strstr(log_text(&t), str_cstr(&want)) != NULL, "%s", str_cstr(&t));
	dl_free(&d);
	/* The kept session serves the next message: no DNS, no refusal. */
	deliver(&d, cl, "fallback.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_stats(cl)->connects, 2);
	smtp_client_free(cl);
	sink_stop_all();
	dns_stop();
	ATF_CHECK_EQ(sink_stat(0, "messages"), 2);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	dns_resolver_free(r);
	str_release(&t);
	str_release(&want);
}

/* Every MX unreachable: a site failure. */
SMTP_TC(all_dead)
{
	delivery_t d;
	smtp_client_t *cl;
	dns_resolver_t *r;
	str_t want = STR_INIT;
	int fds[SOCK_LISTEN_MAX], port;

	cfg_init();
	r = use_fakedns(tc, zone);
	ATF_REQUIRE(sock_tcp_listen("127.0.0.1:0", 1, fds) == 1);
	port = sock_local_port(fds[0]);
	close(fds[0]);
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, "dead.test", port);
	str_setf(&want, "connect to b.dead.test[127.0.0.3]:%d: Connection refused", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.1", str_cstr(&want));
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(d.req.avoid_destination);
	ATF_CHECK_EQ(smtp_client_stats(cl)->connects, 2);
	dl_free(&d);
	smtp_client_free(cl);
	dns_stop();
	dns_resolver_free(r);
	str_release(&want);
}

/* A 421 greeting or a refused sender at the first MX: the second one
 * gets the mail; a failed handshake does not use up a session. */
SMTP_TC(next_mx_after_soft_failure)
{
	delivery_t d;
	smtp_client_t *cl;
	dns_resolver_t *r;
	str_t want = STR_INIT;
	int port;

	cfg_init();
	cfg.mx_session_limit = 1;
	r = use_fakedns(tc, zone);
	port = sink_at(tc, 0, 0, NULL);
	sink_at(tc, 1, port, "--greeting=421");
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, "order.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	str_setf(&want, "b.order.test[127.0.0.1]:%d", port);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), str_cstr(&want));
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop_all();
	ATF_CHECK_EQ(sink_stat(1, "connections"), 1);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);

	/* MAIL FROM refused with 451 at the first: the second delivers. */
	cfg.mx_session_limit = 2;
	port = sink_at(tc, 0, 0, NULL);
	sink_at(tc, 1, port, "--mail-reply=4");
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, "order.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	str_setf(&want, "b.order.test[127.0.0.1]:%d", port);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), str_cstr(&want));
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop_all();
	dns_stop();
	ATF_CHECK_EQ(sink_stat(1, "mail_rejected"), 1);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
	dns_resolver_free(r);
	str_release(&want);
}

/* smtp_mx_session_limit: sessions that got through the handshake. */
SMTP_TC(session_limit)
{
	delivery_t d;
	smtp_client_t *cl;
	dns_resolver_t *r;
	int port;

	cfg_init();
	cfg.mx_session_limit = 2;
	r = use_fakedns(tc, zone);
	port = sink_at(tc, 0, 0, "--mail-reply=4");
	sink_at(tc, 1, port, "--mail-reply=4");
	sink_at(tc, 2, port, "--mail-reply=4");
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, "three.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.0", "m2.three.test[127.0.0.2] said: 451");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop_all();
	ATF_CHECK_EQ(sink_stat(0, "mail_rejected"), 1);
	ATF_CHECK_EQ(sink_stat(1, "mail_rejected"), 1);
	ATF_CHECK_EQ(sink_stat(2, "connections"), 0);

	/* 0: no limit, every MX is tried. */
	cfg.mx_session_limit = 0;
	port = sink_at(tc, 0, 0, "--mail-reply=4");
	sink_at(tc, 1, port, "--mail-reply=4");
	sink_at(tc, 2, port, "--mail-reply=4");
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, "three.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.0", "m3.three.test[127.0.0.3] said: 451");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop_all();
	dns_stop();
	ATF_CHECK_EQ(sink_stat(2, "mail_rejected"), 1);
	dns_resolver_free(r);
}

SMTP_TC(dns_results)
{
	delivery_t d;
	smtp_client_t *cl;
	dns_resolver_t *r;
	str_t want = STR_INIT;
	int port;

	cfg_init();
	r = use_fakedns(tc, zone);
	port = sink_at(tc, 0, 0, NULL);
	cl = smtp_client_new(&cfg, NULL);
	/* No MX: the domain's own address (implicit MX). */
	deliver(&d, cl, "implicit.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	str_setf(&want, "implicit.test[127.0.0.1]:%d", port);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), str_cstr(&want));
	dl_free(&d);
	deliver(&d, cl, "gone.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.4.4", "Host or domain name not found");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	deliver(&d, cl, "nullmx.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.1.10", "does not accept mail (nullMX)");
	dl_free(&d);
	/* A temporary DNS failure: nobody can be reached, a site failure. */
	deliver(&d, cl, "broken.test", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.3", "SERVFAIL");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(d.req.avoid_destination);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), "none");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop_all();
	dns_stop();
	dns_resolver_free(r);
	str_release(&want);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, mx_order);
	ATF_TP_ADD_TC(tp, mx_fallback);
	ATF_TP_ADD_TC(tp, all_dead);
	ATF_TP_ADD_TC(tp, next_mx_after_soft_failure);
	ATF_TP_ADD_TC(tp, session_limit);
	ATF_TP_ADD_TC(tp, dns_results);
	return atf_no_error();
}
