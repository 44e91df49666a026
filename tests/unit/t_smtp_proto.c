/* The SMTP client against a scripted server, for replies smtp-sink does
 * not give: 5xx and malformed greetings, multi-line replies without
 * enhanced codes, a reply to EHLO of 421, HELO refused, STARTTLS refused,
 * plain text after the STARTTLS reply, SMTPUTF8 offered, 354 with every
 * recipient refused, and a kept session whose RSET fails. */
#include "t_smtp_harness.h"

static const char *const one_rcpt[] = { "a@example.com", NULL };

static void deliver(delivery_t *d, smtp_client_t *cl, int port,
    const char *const *rcpts)
{
	char nh[64];

	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	dl_init(d, nh, "s@example.com", MSG_TEXT, rcpts);
	smtp_deliver(cl, &d->req);
}

/* Runs script, delivers to one_rcpt (or rcpts), frees the client, and
 * checks that the script saw what it expected. */
static void run_script(delivery_t *d, const char *const *script,
    const char *const *rcpts, str_t *slog)
{
	smtp_client_t *cl;
	int port = script_start(script);

	cl = smtp_client_new(&cfg, NULL);
	deliver(d, cl, port, rcpts != NULL ? rcpts : one_rcpt);
	smtp_client_free(cl);
	script_finish(slog);
	ATF_CHECK_MSG(strstr(str_cstr(slog), "FAIL") == NULL, "%s", str_cstr(slog));
}

SMTP_TC(greeting_5xx)
{
	static const char *const script[] = { "> 554 5.7.1 go away", NULL };
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	/* smtp_skip_5xx_greeting = yes: like a 4xx, try later. */
	run_script(&d, script, NULL, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.1", "refused to talk to me: 554 5.7.1 go away");
	ATF_CHECK(d.req.conn_failed);
	dl_free(&d);
	cfg.skip_5xx_greeting = false;
	run_script(&d, script, NULL, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.7.1", "refused to talk to me: 554 5.7.1 go away");
	dl_free(&d);
	str_release(&slog);
}

SMTP_TC(greeting_malformed)
{
	static const char *const script[] = { "> hello there", NULL };
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	run_script(&d, script, NULL, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.5.0", "host 127.0.0.1[127.0.0.1] sent a malformed reply while receiving the initial server greeting: hello there");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	dl_free(&d);
	str_release(&slog);
}

/* The server hangs up before it says anything. */
SMTP_TC(greeting_lost)
{
	static const char *const script[] = { "CLOSE", NULL };
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	run_script(&d, script, NULL, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.2", "lost connection with 127.0.0.1[127.0.0.1] while receiving the initial server greeting");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	dl_free(&d);
	str_release(&slog);
}

/* Multi-line replies; without enhanced codes the class gives X.0.0. */
SMTP_TC(multiline_replies)
{
	static const char *const script[] = {
		"> 220-script.test ESMTP",
		"> 220 second greeting line",
		"< EHLO",
		"> 250-script.test",
		"> 250-SIZE",
		"> 250 PIPELINING",
		"< MAIL FROM:<s@example.com> SIZE=",
		"< RCPT TO:<a@example.com>",
		"< RCPT TO:<b@example.com>",
		"< DATA",
		"> 250 sender ok",
		"> 550-Line one",
		"> 550 Line two",
		"> 250 ok",
		"> 354 go ahead",
		"<DATA",
		"> 250-queued",
		"> 250 as 12345",
		"< QUIT",
		"> 221 bye",
		NULL
	};
	const char *const rcpts[] = { "a@example.com", "b@example.com", NULL };
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	run_script(&d, script, rcpts, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.0.0", "host 127.0.0.1[127.0.0.1] said: 550-Line one 550 Line two (in reply to RCPT TO command)");
	CHECK_RCPT(&d, 1, SMTP_R_SENT, "2.0.0", "250-queued 250 as 12345");
	dl_free(&d);
	str_release(&slog);
}

/* Reply lines that never end: malformed, the session is given up. */
SMTP_TC(reply_too_long)
{
	static const char *script[1100];
	delivery_t d;
	str_t slog = STR_INIT;
	int k = 0;

	(void)tc;
	cfg_init();
	script[k++] = "> 220 script.test";
	script[k++] = "< EHLO";
	for (int i = 0; i < 1050; i++)
		script[k++] = "> 250-more";
	script[k++] = "> 250 end";
	script[k] = NULL;
	run_script(&d, script, NULL, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.5.0", "malformed reply while performing the EHLO handshake: reply too long");
	ATF_CHECK(d.req.conn_failed);
	dl_free(&d);
	str_release(&slog);
}

/* 421 to EHLO: no HELO, the server is closing. */
SMTP_TC(ehlo_421)
{
	static const char *const script[] = {
		"> 220 script.test",
		"< EHLO",
		"> 421 4.3.2 shutting down",
		"CLOSE",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	run_script(&d, script, NULL, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.2", "refused to talk to me: 421 4.3.2 shutting down");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(strstr(str_cstr(&slog), "C: HELO") == NULL);
	dl_free(&d);
	str_release(&slog);
}

/* EHLO refused, then HELO refused with 5xx: the only server will not
 * talk to us at all. */
SMTP_TC(helo_refused)
{
	static const char *const script[] = {
		"> 220 script.test",
		"< EHLO client.test",
		"> 502 5.5.2 what?",
		"< HELO client.test",
		"> 550 5.7.1 not you",
		"< QUIT",
		"> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	run_script(&d, script, NULL, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.7.1", "refused to talk to me: 550 5.7.1 not you (in reply to HELO command)");
	ATF_CHECK(d.req.conn_failed);
	dl_free(&d);
	str_release(&slog);
}

static tls_ctx_t *ctx_or_skip(void)
{
	tls_client_config_t tc;
	str_t err = STR_INIT;
	tls_ctx_t *ctx;

	memset(&tc, 0, sizeof(tc));
	ctx = tls_client_ctx(&tc, &err);
	ATF_REQUIRE_MSG(ctx != NULL, "%s", str_cstr(&err));
	str_release(&err);
	return ctx;
}

/* STARTTLS refused: may goes on in plain text on the same session;
 * encrypt defers. */
SMTP_TC(starttls_refused)
{
	static const char *const may_script[] = {
		"> 220 script.test",
		"< EHLO",
		"> 250-script.test",
		"> 250 STARTTLS",
		"< STARTTLS",
		"> 454 4.7.0 TLS not available",
		"< MAIL FROM:<s@example.com>",
		"> 250 ok",
		"< RCPT TO:<a@example.com>",
		"> 250 ok",
		"< DATA",
		"> 354 go",
		"<DATA",
		"> 250 queued",
		"< QUIT",
		"> 221 bye",
		NULL
	};
	static const char *const encrypt_script[] = {
		"> 220 script.test",
		"< EHLO",
		"> 250-script.test",
		"> 250 STARTTLS",
		"< STARTTLS",
		"> 454 4.7.0 TLS not available",
		"< QUIT",
		"> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	int port;

	(void)tc;
	cfg_init();
	ctx = ctx_or_skip();
	cfg.tls_level = TLS_LEVEL_MAY;
	port = script_start(may_script);
	cl = smtp_client_new(&cfg, ctx);
	deliver(&d, cl, port, one_rcpt);
	smtp_client_free(cl);
	script_finish(&slog);
	ATF_CHECK_MSG(strstr(str_cstr(&slog), "FAIL") == NULL, "%s", str_cstr(&slog));
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250 queued");
	dl_free(&d);

	cfg.tls_level = TLS_LEVEL_ENCRYPT;
	port = script_start(encrypt_script);
	cl = smtp_client_new(&cfg, ctx);
	deliver(&d, cl, port, one_rcpt);
	smtp_client_free(cl);
	script_finish(&slog);
	ATF_CHECK_MSG(strstr(str_cstr(&slog), "FAIL") == NULL, "%s", str_cstr(&slog));
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.4", "TLS is required, but host 127.0.0.1[127.0.0.1] refused to start TLS: 454 4.7.0 TLS not available");
	ATF_CHECK(d.req.conn_failed);
	dl_free(&d);
	tls_ctx_free(ctx);
	str_release(&slog);
}

/* Plain text right behind the 220 to STARTTLS (a man in the middle
 * injecting replies): never taken as protected data. */
SMTP_TC(starttls_injection)
{
	static const char *const script[] = {
		"> 220 script.test",
		"< EHLO",
		"> 250-script.test",
		"> 250 STARTTLS",
		"< STARTTLS",
		"> 220 go ahead\r\n250 injected",
		"SLEEP 300",
		"CLOSE",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT, t = STR_INIT;
	smtp_client_t *cl;
	tls_ctx_t *ctx;
	int port;

	(void)tc;
	cfg_init();
	ctx = ctx_or_skip();
	cfg.tls_level = TLS_LEVEL_ENCRYPT;
	port = script_start(script);
	cl = smtp_client_new(&cfg, ctx);
	deliver(&d, cl, port, one_rcpt);
	smtp_client_free(cl);
	script_finish(&slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.5", "sent plain text after its reply to STARTTLS");
	ATF_CHECK(d.req.conn_failed);
	dl_free(&d);
	tls_ctx_free(ctx);
	str_release(&slog);
	str_release(&t);
}

/* A server offering SMTPUTF8 gets the parameter and the UTF-8 address. */
SMTP_TC(smtputf8_offered)
{
	static const char *const script[] = {
		"> 220 script.test",
		"< EHLO",
		"> 250-script.test",
		"> 250-8BITMIME",
		"> 250 SMTPUTF8",
		"< MAIL FROM:<s@example.com> SMTPUTF8",
		"> 250 ok",
		"< RCPT TO:<j\xc3\xb6ran@example.com>",
		"> 250 ok",
		"< DATA",
		"> 354 go",
		"<DATA",
		"> 250 queued",
		"< QUIT",
		"> 221 bye",
		NULL
	};
	const char *const rcpts[] = { "j\xc3\xb6ran@example.com", NULL };
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	run_script(&d, script, rcpts, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250 queued");
	dl_free(&d);
	str_release(&slog);
}

/* Pipelined, every recipient refused, yet DATA gets 354: the client
 * ends the empty message at once. */
SMTP_TC(data_354_without_recipients)
{
	static const char *const script[] = {
		"> 220 script.test",
		"< EHLO",
		"> 250-script.test",
		"> 250 PIPELINING",
		"< MAIL FROM:",
		"< RCPT TO:<a@example.com>",
		"< DATA",
		"> 250 ok",
		"> 550 5.1.1 no such user",
		"> 354 go ahead anyway",
		"< .",
		"> 554 5.5.1 no valid recipients",
		"< QUIT",
		"> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	run_script(&d, script, NULL, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.1.1", "no such user (in reply to RCPT TO command)");
	ATF_CHECK(strstr(str_cstr(&slog), "D: Subject") == NULL);
	dl_free(&d);
	str_release(&slog);
}

/* A kept session whose RSET fails: the delivery goes over a new
 * connection, and the failure is nobody's fault. */
SMTP_TC(reuse_rset_fails)
{
	static const char *const script[] = {
		"> 220 script.test",
		"< EHLO",
		"> 250-script.test",
		"> 250 PIPELINING",
		"< MAIL FROM:",
		"< RCPT TO:",
		"< DATA",
		"> 250 ok",
		"> 250 ok",
		"> 354 go",
		"<DATA",
		"> 250 first queued",
		"< RSET",
		"< MAIL FROM:",
		"< RCPT TO:",
		"< DATA",
		"> 421 4.4.2 idle too long",
		"CLOSE",
		"> 220 script.test",
		"< EHLO",
		"> 250 script.test",
		"< MAIL FROM:",
		"> 250 ok",
		"< RCPT TO:",
		"> 250 ok",
		"< DATA",
		"> 354 go",
		"<DATA",
		"> 250 second queued",
		"< QUIT",
		"> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT, t = STR_INIT;
	smtp_client_t *cl;
	int port;

	(void)tc;
	cfg_init();
	port = script_start(script);
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, port, one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250 first queued");
	dl_free(&d);
	deliver(&d, cl, port, one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250 second queued");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_stats(cl)->connects, 2);
	ATF_CHECK_EQ(smtp_client_stats(cl)->reused, 0);
	smtp_client_free(cl);
	script_finish(&slog);
	ATF_CHECK_MSG(strstr(str_cstr(&slog), "FAIL") == NULL, "%s", str_cstr(&slog));
	ATF_CHECK(strstr(log_text(&t), "no longer usable; connecting again") != NULL);
	str_release(&slog);
	str_release(&t);
}

/* 421 in the middle of a transaction: deferred, and the session is not
 * kept (the next delivery connects again). */
SMTP_TC(rcpt_421)
{
	static const char *const script[] = {
		"> 220 script.test",
		"< EHLO",
		"> 250 script.test",
		"< MAIL FROM:",
		"> 250 ok",
		"< RCPT TO:<a@example.com>",
		"> 421 4.7.0 too busy, closing",
		"CLOSE",
		"> 220 script.test",
		"< EHLO",
		"> 250 script.test",
		"< MAIL FROM:",
		"> 250 ok",
		"< RCPT TO:<a@example.com>",
		"> 250 ok",
		"< DATA",
		"> 354 go",
		"<DATA",
		"> 250 queued",
		"< QUIT",
		"> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;
	smtp_client_t *cl;
	int port;

	(void)tc;
	cfg_init();
	port = script_start(script);
	cl = smtp_client_new(&cfg, NULL);
	deliver(&d, cl, port, one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.0", "said: 421 4.7.0 too busy, closing (in reply to RCPT TO command)");
	ATF_CHECK(!d.req.conn_failed);
	ATF_CHECK_EQ(smtp_client_cached(cl), 0);
	dl_free(&d);
	deliver(&d, cl, port, one_rcpt);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250 queued");
	dl_free(&d);
	smtp_client_free(cl);
	script_finish(&slog);
	ATF_CHECK_MSG(strstr(str_cstr(&slog), "FAIL") == NULL, "%s", str_cstr(&slog));
	str_release(&slog);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, greeting_5xx);
	ATF_TP_ADD_TC(tp, greeting_malformed);
	ATF_TP_ADD_TC(tp, greeting_lost);
	ATF_TP_ADD_TC(tp, multiline_replies);
	ATF_TP_ADD_TC(tp, reply_too_long);
	ATF_TP_ADD_TC(tp, ehlo_421);
	ATF_TP_ADD_TC(tp, helo_refused);
	ATF_TP_ADD_TC(tp, starttls_refused);
	ATF_TP_ADD_TC(tp, starttls_injection);
	ATF_TP_ADD_TC(tp, smtputf8_offered);
	ATF_TP_ADD_TC(tp, data_354_without_recipients);
	ATF_TP_ADD_TC(tp, reuse_rset_fails);
	ATF_TP_ADD_TC(tp, rcpt_421);
	return atf_no_error();
}
