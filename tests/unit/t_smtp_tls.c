/* STARTTLS in the SMTP client: the security levels against smtp-sink
 * with certificates made at test time (a throwaway CA and a server
 * certificate for mx.example.test), host names from fakedns for the
 * verify level, the log line, TLS with connection reuse, and a scripted
 * server whose handshake fails (may: plain text on a new connection;
 * encrypt: defer). */
#include "t_smtp_harness.h"

static const char *const one_rcpt[] = { "a@example.com", NULL };

static tls_ctx_t *client_ctx(bool with_ca)
{
	tls_client_config_t tc;
	str_t err = STR_INIT;
	tls_ctx_t *ctx;

	memset(&tc, 0, sizeof(tc));
	/* Without a CA file: a directory with no CAs, so that nothing in
	 * the machine's store can vouch for the test certificate. */
	if (with_ca)
		tc.CAfile = "ca.pem";
	else {
		ATF_REQUIRE(mkdir("noca", 0755) == 0 || errno == EEXIST);
		tc.CApath = "noca";
	}
	ctx = tls_client_ctx(&tc, &err);
	ATF_REQUIRE_MSG(ctx != NULL, "%s", str_cstr(&err));
	str_release(&err);
	return ctx;
}

static int tls_sink(const atf_tc_t *tc)
{
	return sink_start(tc, "-c", "server.pem", "-k", "server.key", "-d", "saved",
	    NULL);
}

static void deliver_to(delivery_t *d, smtp_client_t *cl, const char *fmt, int port)
{
	char nh[128];

	snprintf(nh, sizeof(nh), fmt, port);
	dl_init(d, nh, "s@example.com", MSG_TEXT, one_rcpt);
	smtp_deliver(cl, &d->req);
}

/* Host names for the certificate checks: fakedns and DNS lookups. */
#define TLS_ZONE "mx.example.test A 127.0.0.1\nwrong.example.test A 127.0.0.1\n"

SMTP_TC(may)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	str_t t = STR_INIT, want = STR_INIT;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_MAY;
	ctx = client_ctx(false);
	port = tls_sink(tc);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[127.0.0.1]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_stats(cl)->tls, 1);
	str_setf(&want, "Untrusted TLS connection established to 127.0.0.1[127.0.0.1]:%d: TLSv1.", port);
	ATF_CHECK_MSG(strstr(log_text(&t), str_cstr(&want)) != NULL, "%s", str_cstr(&t));
	ATF_CHECK(strstr(str_cstr(&t), " with cipher ") != NULL);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "starttls"), 1);
	ATF_CHECK_EQ(sink_stat(0, "ehlo"), 2);	/* again after STARTTLS */
	sink_message("saved", 1, &t);
	ATF_CHECK(strstr(str_cstr(&t), " tls=TLSv1.") != NULL);
	tls_ctx_free(ctx);
	str_release(&t);
	str_release(&want);
}

/* may, and the server offers no STARTTLS: plain text. */
SMTP_TC(may_plain)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	str_t t = STR_INIT;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_MAY;
	ctx = client_ctx(true);
	port = sink_start(tc, NULL);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[127.0.0.1]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_CHECK(strstr(log_text(&t), "TLS connection established") == NULL);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "starttls"), 0);
	tls_ctx_free(ctx);
	str_release(&t);
}

SMTP_TC(encrypt_not_offered)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_ENCRYPT;
	ctx = client_ctx(true);
	port = sink_start(tc, NULL);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[127.0.0.1]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.4", "TLS is required, but was not offered by host 127.0.0.1[127.0.0.1]");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "mail"), 0);
	ATF_CHECK_EQ(sink_stat(0, "quit"), 1);
	tls_ctx_free(ctx);
}

/* encrypt: TLS, nothing verified (an untrusted chain is fine). */
SMTP_TC(encrypt)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_ENCRYPT;
	ctx = client_ctx(false);
	port = tls_sink(tc);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[127.0.0.1]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "starttls"), 1);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
	tls_ctx_free(ctx);
}

SMTP_TC(verify)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	dns_resolver_t *r;
	str_t t = STR_INIT, want = STR_INIT;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_VERIFY;
	r = use_fakedns(tc, TLS_ZONE);
	ctx = client_ctx(true);
	port = tls_sink(tc);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[mx.example.test]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	str_setf(&want, "mx.example.test[127.0.0.1]:%d", port);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), str_cstr(&want));
	dl_free(&d);
	str_setf(&want, "Trusted TLS connection established to mx.example.test[127.0.0.1]:%d: TLSv1.", port);
	ATF_CHECK_MSG(strstr(log_text(&t), str_cstr(&want)) != NULL, "%s", str_cstr(&t));
	smtp_client_free(cl);
	sink_stop(0);
	dns_stop();
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
	tls_ctx_free(ctx);
	dns_resolver_free(r);
	str_release(&t);
	str_release(&want);
}

/* verify with a certificate for another name: deferred with the reason,
 * a handshake failure for qmgr, nothing sent. */
SMTP_TC(verify_wrong_name)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	dns_resolver_t *r;
	str_t want = STR_INIT;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_VERIFY;
	r = use_fakedns(tc, TLS_ZONE);
	ctx = client_ctx(true);
	port = tls_sink(tc);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[wrong.example.test]:%d", port);
	str_setf(&want, "server certificate not verified for wrong.example.test[127.0.0.1]:%d: hostname mismatch", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.5", str_cstr(&want));
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.5", "DNS:mx.example.test");
	str_setf(&want, "wrong.example.test[127.0.0.1]:%d", port);
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].relay), str_cstr(&want));
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	dns_stop();
	ATF_CHECK_EQ(sink_stat(0, "mail"), 0);
	tls_ctx_free(ctx);
	dns_resolver_free(r);
	str_release(&want);
}

SMTP_TC(verify_untrusted)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	dns_resolver_t *r;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_VERIFY;
	r = use_fakedns(tc, TLS_ZONE);
	ctx = client_ctx(false);
	port = tls_sink(tc);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[mx.example.test]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.5", "server certificate not trusted");
	ATF_CHECK(d.req.conn_failed);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	dns_stop();
	tls_ctx_free(ctx);
	dns_resolver_free(r);
}

/* A kept TLS session carries the next messages: one handshake. */
SMTP_TC(reuse)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	int port, sent = 0;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_ENCRYPT;
	ctx = client_ctx(false);
	port = tls_sink(tc);
	cl = smtp_client_new(&cfg, ctx);
	for (int i = 0; i < 20; i++) {
		deliver_to(&d, cl, "[127.0.0.1]:%d", port);
		sent += d.rcpt[0].status == SMTP_R_SENT;
		dl_free(&d);
	}
	ATF_CHECK_EQ(sent, 20);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	ATF_CHECK_EQ(sink_stat(0, "starttls"), 1);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 20);
	ATF_CHECK_EQ(sink_stat(0, "quit"), 1);
	tls_ctx_free(ctx);
}

static int no_save(void *ctx, const char *dest, const char *endpoint,
    int ttl_ms, const char *props, int fd)
{
	(void)dest;
	(void)endpoint;
	(void)ttl_ms;
	(void)props;
	(void)fd;
	(*(int *)ctx)++;
	return 0;
}

static int no_find(void *ctx, bool by_endpoint, const char *label,
    str_t *props)
{
	(void)ctx;
	(void)by_endpoint;
	(void)label;
	(void)props;
	return -1;
}

/* With a shared cache (level may): a TLS session never goes there (its
 * state cannot leave the process); it is reused in the process and ends
 * with QUIT.  A plain-text one (no STARTTLS offered) does go. */
SMTP_TC(reuse_shared)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	smtp_shared_t sh = { no_save, no_find, NULL };
	int port, saves = 0;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_MAY;
	ctx = client_ctx(false);
	port = tls_sink(tc);
	cl = smtp_client_new(&cfg, ctx);
	sh.ctx = &saves;
	smtp_client_set_shared(cl, &sh, "smtp");
	for (int i = 0; i < 5; i++) {
		deliver_to(&d, cl, "[127.0.0.1]:%d", port);
		CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
		dl_free(&d);
	}
	ATF_CHECK_EQ(saves, 0);
	ATF_CHECK_EQ(smtp_client_cached(cl), 1);
	smtp_client_free(cl);
	ATF_CHECK_EQ(saves, 0);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	ATF_CHECK_EQ(sink_stat(0, "starttls"), 1);
	ATF_CHECK_EQ(sink_stat(0, "quit"), 1);
	/* No STARTTLS offered: plain text, to the shared cache. */
	port = sink_start(tc, "-x", "starttls", NULL);
	cl = smtp_client_new(&cfg, ctx);
	smtp_client_set_shared(cl, &sh, "smtp");
	deliver_to(&d, cl, "[127.0.0.1]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_CHECK_EQ(saves, 1);
	smtp_client_free(cl);
	sink_stop(0);
	tls_ctx_free(ctx);
}

/* A server that says 220 to STARTTLS and then talks nonsense; the second
 * connection is a plain one. */
static const char *const bad_tls_script[] = {
	"> 220 script.test ESMTP",
	"< EHLO client.test",
	"> 250-script.test",
	"> 250 STARTTLS",
	"< STARTTLS",
	"> 220 2.0.0 go ahead",
	"SLEEP 200",
	"> this is not TLS at all",
	"CLOSE",
	"> 220 script.test ESMTP",
	"< EHLO client.test",
	"> 250-script.test",
	"> 250 STARTTLS",
	"< MAIL FROM:<s@example.com>",
	"> 250 2.1.0 ok",
	"< RCPT TO:<a@example.com>",
	"> 250 2.1.5 ok",
	"< DATA",
	"> 354 go on",
	"<DATA",
	"> 250 2.0.0 queued",
	"< QUIT",
	"> 221 bye",
	NULL
};

SMTP_TC(may_fallback)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	str_t t = STR_INIT, want = STR_INIT;
	const char *slog;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_MAY;
	ctx = client_ctx(true);
	port = script_start(bad_tls_script);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[127.0.0.1]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250 2.0.0 queued");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	smtp_client_free(cl);
	slog = script_finish(&t);
	ATF_CHECK_MSG(strstr(slog, "FAIL") == NULL, "%s", slog);
	ATF_CHECK_MSG(strstr(slog, "C: QUIT") != NULL, "%s", slog);
	str_setf(&want, "trying 127.0.0.1[127.0.0.1]:%d again without TLS", port);
	ATF_CHECK_MSG(strstr(log_text(&t), str_cstr(&want)) != NULL, "%s", str_cstr(&t));
	ATF_CHECK(strstr(str_cstr(&t), "cannot start TLS with 127.0.0.1[127.0.0.1]:") != NULL);
	tls_ctx_free(ctx);
	str_release(&t);
	str_release(&want);
}

SMTP_TC(encrypt_handshake_fails)
{
	delivery_t d;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	str_t t = STR_INIT;
	const char *slog;
	int port;

	cfg_init();
	make_pki();
	cfg.tls_level = TLS_LEVEL_ENCRYPT;
	ctx = client_ctx(true);
	port = script_start(bad_tls_script);
	cl = smtp_client_new(&cfg, ctx);
	deliver_to(&d, cl, "[127.0.0.1]:%d", port);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.5", "cannot start TLS with 127.0.0.1[127.0.0.1]:");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	dl_free(&d);
	smtp_client_free(cl);
	h_stop(script_pid);	/* it would wait for a second connection */
	script_pid = 0;
	slog = script_finish(&t);
	ATF_CHECK_MSG(strstr(slog, "C: STARTTLS") != NULL, "%s", slog);
	ATF_CHECK_MSG(strstr(slog, "C: MAIL") == NULL, "%s", slog);
	tls_ctx_free(ctx);
	str_release(&t);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, may);
	ATF_TP_ADD_TC(tp, may_plain);
	ATF_TP_ADD_TC(tp, encrypt_not_offered);
	ATF_TP_ADD_TC(tp, encrypt);
	ATF_TP_ADD_TC(tp, verify);
	ATF_TP_ADD_TC(tp, verify_wrong_name);
	ATF_TP_ADD_TC(tp, verify_untrusted);
	ATF_TP_ADD_TC(tp, reuse);
	ATF_TP_ADD_TC(tp, reuse_shared);
	ATF_TP_ADD_TC(tp, may_fallback);
	ATF_TP_ADD_TC(tp, encrypt_handshake_fails);
	return atf_no_error();
}
