/* SMTP AUTH in the client against a scripted server: PLAIN with its
 * initial response and LOGIN with its two prompts, byte for byte; the
 * credentials lookup order (sender, @domain, [host]:port, [host], host);
 * a 535 deferred with the server's words (bounced with soft bounce off),
 * not a handshake failure for qmgr, while a 421 is; no AUTH on a
 * plaintext session under the default security options; a server
 * without AUTH gets the mail without; the mechanism filter; malformed
 * challenges cancelled with "*"; kept sessions reused only for the same
 * user and password, in the process and through the shared cache; the
 * password never in the log or in a key. */
#include "t_smtp_harness.h"
#include "scache.h"
#include "smtp/smtp_int.h"

static const char *const one_rcpt[] = { "a@example.com", NULL };

/* A texthash: table of credentials (lines "key value"), "%d" in a line
 * standing for port; opened into cfg.sasl. */
static void use_maps(int port, const char *const *lines)
{
	FILE *f = fopen("passwd", "w");
	str_t err = STR_INIT;

	ATF_REQUIRE(f != NULL);
	for (; *lines != NULL; lines++) {
		fprintf(f, *lines, port);
		fputc('\n', f);
	}
	ATF_REQUIRE(fclose(f) == 0);
	cfg.sasl.enable = true;
	ATF_REQUIRE_MSG(smtp_sasl_maps_open(&cfg.sasl, "texthash:passwd",
	    &err) == 0, "%s", str_cstr(&err));
	str_release(&err);
}

static void sasl_cfg(void)
{
	cfg_init();
	/* The scripted server has no TLS: these tests allow plaintext
	 * mechanisms unless they test the default. */
	cfg.sasl.opts = cfg.sasl.tls_opts = SASL_OPT_NOANONYMOUS;
}

static void deliver_as(delivery_t *d, smtp_client_t *cl, int port,
    const char *sender)
{
	char nh[64];

	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	dl_init(d, nh, sender, MSG_TEXT, one_rcpt);
	smtp_deliver(cl, &d->req);
}

/* Runs one delivery from s@example.com against script with the
 * credentials table lines; checks the script saw what it expected. */
static smtp_stats_t run(delivery_t *d, const char *const *script,
    const char *const *maps, str_t *slog)
{
	smtp_client_t *cl;
	smtp_stats_t st;
	int port = script_start(script);

	use_maps(port, maps);
	cl = smtp_client_new(&cfg, NULL);
	deliver_as(d, cl, port, "s@example.com");
	st = *smtp_client_stats(cl);
	smtp_client_free(cl);
	script_finish(slog);
	ATF_CHECK_MSG(strstr(str_cstr(slog), "FAIL") == NULL, "%s",
	    str_cstr(slog));
	return st;
}

static const char *const alice[] = { "[127.0.0.1]:%d alice:s3cret", NULL };

/* Neither the password nor its base64 forms in our log. */
static void check_no_secret(void)
{
	str_t t = STR_INIT;

	log_text(&t);
	ATF_CHECK_MSG(strstr(str_cstr(&t), "s3cret") == NULL &&
	    strstr(str_cstr(&t), "czNjcmV0") == NULL &&
	    strstr(str_cstr(&t), "AGFsaWNlAHMzY3JldA") == NULL,
	    "the password is in the log: %s", str_cstr(&t));
	str_release(&t);
}

#define TRANSACTION \
	"< MAIL FROM:<s@example.com>", "> 250 ok", \
	"< RCPT TO:<a@example.com>", "> 250 ok", \
	"< DATA", "> 354 go", "<DATA", "> 250 2.0.0 queued"

SMTP_TC(plain_initial_response)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250-AUTH PLAIN LOGIN",
		"> 250 8BITMIME",
		"< AUTH PLAIN AGFsaWNlAHMzY3JldA==",
		"> 235 2.7.0 Authentication successful",
		TRANSACTION,
		"< QUIT", "> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;
	smtp_stats_t st;

	(void)tc;
	sasl_cfg();
	st = run(&d, script, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	ATF_CHECK_EQ(st.auth_ok, 1);
	ATF_CHECK(strstr(str_cstr(&slog), "C: AUTH PLAIN AGFsaWNlAHMzY3JldA==\n") != NULL);
	check_no_secret();
	dl_free(&d);
	str_release(&slog);
}

SMTP_TC(login_two_prompts)
{
	/* LOGIN first in the server's list: the first usable one wins;
	 * the old "AUTH=" line is understood too. */
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250-AUTH=LOGIN",
		"> 250 AUTH LOGIN PLAIN",
		"< AUTH LOGIN",
		"> 334 VXNlcm5hbWU6",
		"< YWxpY2U=",
		"> 334 UGFzc3dvcmQ6",
		"< czNjcmV0",
		"> 235 2.7.0 ok",
		TRANSACTION,
		"< QUIT", "> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;
	smtp_stats_t st;

	(void)tc;
	sasl_cfg();
	st = run(&d, script, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	ATF_CHECK_EQ(st.auth_ok, 1);
	check_no_secret();
	dl_free(&d);
	str_release(&slog);
}

static const char *const refuse_535[] = {
	"> 220 script.test ESMTP",
	"< EHLO client.test",
	"> 250-script.test",
	"> 250 AUTH PLAIN",
	"< AUTH PLAIN",
	"> 535 5.7.8 Error: authentication failed: bad credentials",
	"< QUIT", "> 221 bye",
	NULL
};

SMTP_TC(refused_535_defers)
{
	delivery_t d;
	str_t slog = STR_INIT;
	smtp_stats_t st;

	(void)tc;
	sasl_cfg();
	st = run(&d, refuse_535, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.8", "SASL authentication failed; "
	    "server 127.0.0.1[127.0.0.1] said: 535 5.7.8 Error: authentication "
	    "failed: bad credentials");
	ATF_CHECK_STREQ(str_cstr(&d.rcpt[0].remote_reply),
	    "535 5.7.8 Error: authentication failed: bad credentials");
	ATF_CHECK_EQ(st.auth_failed, 1);
	/* The server answered: no negative concurrency feedback. */
	ATF_CHECK(!d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	check_no_secret();
	dl_free(&d);
	str_release(&slog);
}

SMTP_TC(refused_535_bounces_without_soft_bounce)
{
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	sasl_cfg();
	cfg.sasl.soft_bounce = false;
	run(&d, refuse_535, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_BOUNCE, "5.7.8", "SASL authentication failed; "
	    "server 127.0.0.1[127.0.0.1] said: 535 5.7.8");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	str_release(&slog);
}

/* A 421 to AUTH: the server is closing, as a 421 greeting: a handshake
 * failure, negative feedback. */
SMTP_TC(closing_421_is_handshake_failure)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH PLAIN",
		"< AUTH PLAIN",
		"> 421 4.3.2 Service shutting down",
		"CLOSE",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	sasl_cfg();
	run(&d, script, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.2", "SASL authentication failed; "
	    "server 127.0.0.1[127.0.0.1] said: 421 4.3.2 Service shutting down");
	ATF_CHECK(d.req.conn_failed);
	ATF_CHECK(!d.req.avoid_destination);
	dl_free(&d);
	str_release(&slog);
}

/* The connection lost in the middle of LOGIN: a handshake failure. */
SMTP_TC(lost_during_login)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH LOGIN",
		"< AUTH LOGIN",
		"> 334 VXNlcm5hbWU6",
		"< YWxpY2U=",
		"CLOSE",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	sasl_cfg();
	run(&d, script, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.4.2", "lost connection with "
	    "127.0.0.1[127.0.0.1] while sending the SASL user name");
	ATF_CHECK(d.req.conn_failed);
	dl_free(&d);
	str_release(&slog);
}

/* Default options (noplaintext, noanonymous) on a session without TLS:
 * no AUTH command at all, the mail waits with the reason. */
SMTP_TC(plaintext_default_no_auth)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH PLAIN LOGIN",
		"< QUIT", "> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	cfg_init();
	ATF_REQUIRE_EQ(cfg.sasl.opts, SASL_OPT_NOPLAINTEXT | SASL_OPT_NOANONYMOUS);
	run(&d, script, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.0", "SASL authentication failed; "
	    "cannot authenticate to server 127.0.0.1[127.0.0.1]: no mechanism "
	    "available (offered: PLAIN LOGIN; plaintext connection)");
	ATF_CHECK(strstr(str_cstr(&slog), "AUTH") == NULL ||
	    strstr(str_cstr(&slog), "C: AUTH") == NULL);
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	str_release(&slog);
}

/* With credentials, a server that does not offer AUTH gets the mail
 * without (Postfix does the same). */
SMTP_TC(server_without_auth)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 8BITMIME",
		TRANSACTION,
		"< QUIT", "> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;
	smtp_stats_t st;

	(void)tc;
	sasl_cfg();
	st = run(&d, script, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	ATF_CHECK_EQ(st.auth_ok + st.auth_failed, 0);
	dl_free(&d);
	str_release(&slog);
}

/* No credentials for this next hop: no AUTH, although offered. */
SMTP_TC(no_credentials_no_auth)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH PLAIN LOGIN",
		TRANSACTION,
		"< QUIT", "> 221 bye",
		NULL
	};
	static const char *const other[] = { "[127.0.0.2]:%d x:y", NULL };
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	sasl_cfg();
	run(&d, script, other, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	str_release(&slog);
}

SMTP_TC(mechanism_filter)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH CRAM-MD5 PLAIN LOGIN",
		"< AUTH LOGIN",
		"> 334 VXNlcm5hbWU6",
		"< YWxpY2U=",
		"> 334 UGFzc3dvcmQ6",
		"< czNjcmV0",
		"> 235 2.7.0 ok",
		TRANSACTION,
		"< QUIT", "> 221 bye",
		NULL
	};
	static const char *const only_cram[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH CRAM-MD5 DIGEST-MD5",
		"< QUIT", "> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT, err = STR_INIT;

	(void)tc;
	sasl_cfg();
	ATF_REQUIRE(smtp_sasl_filter_set(&cfg.sasl, "!plain, login", &err) == 0);
	run(&d, script, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	smtp_config_release(&cfg);
	/* Nothing we know among what is offered. */
	cfg.sasl.filter[0] = '\0';
	run(&d, only_cram, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.0", "no mechanism available "
	    "(offered: CRAM-MD5 DIGEST-MD5; plaintext connection)");
	dl_free(&d);
	/* Tables are not filters here; names are checked. */
	ATF_CHECK(smtp_sasl_filter_set(&cfg.sasl, "hash:/etc/x", &err) < 0);
	ATF_CHECK(strstr(str_cstr(&err), "not a mechanism name") != NULL);
	str_release(&slog);
	str_release(&err);
}

/* A challenge that is not base64: cancelled with "*". */
SMTP_TC(malformed_challenge)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH LOGIN",
		"< AUTH LOGIN",
		"> 334 not base64 at all!",
		"< *",
		"> 501 5.7.0 cancelled",
		"< QUIT", "> 221 bye",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;

	(void)tc;
	sasl_cfg();
	run(&d, script, alice, &slog);
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.7.0", "server 127.0.0.1[127.0.0.1] "
	    "sent a malformed challenge: 334 not base64 at all!");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	str_release(&slog);
}

/* The lookup order: sender, @domain (sender-dependent only), then the
 * next hop as given, without the port, without the brackets. */
SMTP_TC(lookup_order)
{
	static const char *const maps[] = {
		"alice@example.com u1:p1",
		"@example.com u2:p2",
		"[relay.example]:587 u3:p3",
		"[relay.example] u4:p4",
		"relay.example u5:p5:with:colons",
		"plain.example u6",
		"bad.example :nouser",
		NULL
	};
	smtp_client_t *cl;
	str_t err = STR_INIT;

	(void)tc;
	sasl_cfg();
	use_maps(0, maps);
	cfg.sasl.sender_dependent = true;
	cl = smtp_client_new(&cfg, NULL);
#define LOOKUP(sender_, nh_, user_, pass_) do {				\
	ATF_REQUIRE_EQ(smtp_sasl_prepare(cl, sender_, nh_, &err), 0);	\
	ATF_CHECK_MSG(cl->creds.found && strcmp(cl->creds.user, user_) == 0 && \
	    strcmp(cl->creds.pass, pass_) == 0, "%s %s: %s:%s", sender_, nh_, \
	    cl->creds.user, cl->creds.pass);				\
} while (0)
	LOOKUP("alice@example.com", "[relay.example]:587", "u1", "p1");
	LOOKUP("bob@example.com", "[relay.example]:587", "u2", "p2");
	LOOKUP("bob@other.example", "[relay.example]:587", "u3", "p3");
	LOOKUP("", "[relay.example]:587", "u3", "p3");
	LOOKUP("bob@other.example", "[relay.example]:25", "u4", "p4");
	LOOKUP("bob@other.example", "[relay.example]", "u4", "p4");
	LOOKUP("bob@other.example", "relay.example", "u5", "p5:with:colons");
	LOOKUP("bob@other.example", "relay.example:2525", "u5", "p5:with:colons");
	LOOKUP("x@y", "plain.example", "u6", "");
	/* The key carries the user; none without credentials. */
	LOOKUP("alice@example.com", "[relay.example]:587", "u1", "p1");
	/* The user and 16 hex digits of a digest of the credentials. */
	ATF_CHECK_MSG(strncmp(str_cstr(&cl->key), "[relay.example]:587|sasl:u1:",
	    28) == 0 && str_len(&cl->key) == 28 + 16 &&
	    strspn(str_cstr(&cl->key) + 28, "0123456789abcdef") == 16,
	    "key %s", str_cstr(&cl->key));
	{
		str_t k1 = STR_INIT;
		str_set(&k1, str_cstr(&cl->key));
		/* u2:p2 differs, u3:p3 too: other keys; the same again: the
		 * same key (and never the password in it) */
		LOOKUP("bob@example.com", "[relay.example]:587", "u2", "p2");
		ATF_CHECK(strcmp(str_cstr(&k1), str_cstr(&cl->key)) != 0);
		LOOKUP("alice@example.com", "[relay.example]:587", "u1", "p1");
		ATF_CHECK_STREQ(str_cstr(&k1), str_cstr(&cl->key));
		ATF_CHECK(strstr(str_cstr(&k1), "p1") == NULL);
		str_release(&k1);
	}
	ATF_REQUIRE_EQ(smtp_sasl_prepare(cl, "x@y", "none.example", &err), 0);
	ATF_CHECK(!cl->creds.found);
	ATF_CHECK_STREQ(str_cstr(&cl->key), "none.example");
	/* An unusable entry is a configuration error, without its value. */
	ATF_CHECK_EQ(smtp_sasl_prepare(cl, "x@y", "bad.example", &err), -2);
	ATF_CHECK(strstr(str_cstr(&err), "not user:password") != NULL);
	ATF_CHECK(strstr(str_cstr(&err), "nouser") == NULL);
	smtp_client_free(cl);
	/* Without sender-dependent authentication the sender is not a key. */
	cfg.sasl.sender_dependent = false;
	cl = smtp_client_new(&cfg, NULL);
	LOOKUP("alice@example.com", "[relay.example]:587", "u3", "p3");
	smtp_client_free(cl);
	smtp_config_release(&cfg);
	str_release(&err);
#undef LOOKUP
}

/* An entry that is not user:password defers the mail (4.3.5, a
 * configuration error) before any connection, naming the key only. */
SMTP_TC(unusable_entry_defers)
{
	static const char *const maps[] = { "[127.0.0.1]:%d :secretvalue", NULL };
	delivery_t d;
	smtp_client_t *cl;
	str_t t = STR_INIT;

	(void)tc;
	sasl_cfg();
	use_maps(9, maps);
	cl = smtp_client_new(&cfg, NULL);
	deliver_as(&d, cl, 9, "s@example.com");
	CHECK_RCPT(&d, 0, SMTP_R_DEFER, "4.3.5", "smtp_sasl_password_maps: the "
	    "entry for [127.0.0.1]:9 is not user:password");
	ATF_CHECK_EQ(smtp_client_stats(cl)->connects, 0);
	ATF_CHECK(!d.req.conn_failed);
	ATF_CHECK(strstr(log_text(&t), "secretvalue") == NULL);
	dl_free(&d);
	smtp_client_free(cl);
	smtp_config_release(&cfg);
	str_release(&t);
}

/* Kept sessions are keyed by the credentials: a second message whose
 * sender maps to the same user goes over the same session (RSET, no
 * second AUTH); one whose sender maps to another user gets its own
 * connection and login, never the first user's session. */
SMTP_TC(reuse_same_credentials_only)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH PLAIN",
		"< AUTH PLAIN AGFsaWNlAHMzY3JldA==",
		"> 235 2.7.0 ok",
		"< MAIL FROM:<alice@example.com>", "> 250 ok",
		"< RCPT TO:<a@example.com>", "> 250 ok",
		"< DATA", "> 354 go", "<DATA", "> 250 2.0.0 queued",
		/* alice2 maps to the same user: the same session */
		"< RSET", "> 250 ok",
		"< MAIL FROM:<alice2@example.com>", "> 250 ok",
		"< RCPT TO:<a@example.com>", "> 250 ok",
		"< DATA", "> 354 go", "<DATA", "> 250 2.0.0 queued",
		/* alice's session stays open (and unread: were it used for
		 * bob, its RSET would time out) */
		"NEXT",
		/* bob: a connection of his own */
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH PLAIN",
		"< AUTH PLAIN AGJvYgBwdzI=",
		"> 235 2.7.0 ok",
		"< MAIL FROM:<bob@example.com>", "> 250 ok",
		"< RCPT TO:<a@example.com>", "> 250 ok",
		"< DATA", "> 354 go", "<DATA", "> 250 2.0.0 queued",
		"NEXT",
		/* alice3: the same user with another password, another
		 * session */
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH PLAIN",
		"< AUTH PLAIN AGFsaWNlAG90aGVy",
		"> 235 2.7.0 ok",
		"< MAIL FROM:<alice3@example.com>", "> 250 ok",
		"< RCPT TO:<a@example.com>", "> 250 ok",
		"< DATA", "> 354 go", "<DATA", "> 250 2.0.0 queued",
		NULL
	};
	static const char *const maps[] = {
		"alice@example.com alice:s3cret",
		"alice2@example.com alice:s3cret",
		"bob@example.com bob:pw2",
		"alice3@example.com alice:other",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;
	smtp_client_t *cl;
	int port, connects = 0;
	const char *p;

	(void)tc;
	sasl_cfg();
	cfg.sasl.sender_dependent = true;
	cfg.rset_timeout_ms = 1000;
	cfg.quit_timeout_ms = 300;	/* sessions the script left unread */
	port = script_start(script);
	use_maps(port, maps);
	cl = smtp_client_new(&cfg, NULL);
	deliver_as(&d, cl, port, "alice@example.com");
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	deliver_as(&d, cl, port, "alice2@example.com");
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	deliver_as(&d, cl, port, "bob@example.com");
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	deliver_as(&d, cl, port, "alice3@example.com");
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_stats(cl)->auth_ok, 3);
	ATF_CHECK_EQ(smtp_client_stats(cl)->reused, 1);
	/* Three sessions kept, each under its own credentials. */
	ATF_CHECK_EQ(smtp_client_cached(cl), 3);
	ATF_CHECK_MSG(strstr(log_text(&slog), "no longer usable") == NULL,
	    "bob's mail was tried on alice's session: %s", str_cstr(&slog));
	smtp_client_free(cl);
	script_finish(&slog);
	ATF_CHECK_MSG(strstr(str_cstr(&slog), "FAIL") == NULL, "%s",
	    str_cstr(&slog));
	for (p = str_cstr(&slog); (p = strstr(p, "CONNECT")) != NULL; p++)
		connects++;
	ATF_CHECK_EQ(connects, 3);
	smtp_config_release(&cfg);
	str_release(&slog);
}

/* ---- the shared cache (a fake in memory, as the scache daemon) ---- */

#define FAKE_MAX 4
static struct {
	struct { char dest[600], endp[600], props[2100]; int fd; } s[FAKE_MAX];
	int n;
	char asked[8][600];	/* labels asked for, in order */
	int nasked;
} F;

static int fake_save(void *ctx, const char *dest, const char *endpoint,
    int ttl_ms, const char *props, int fd)
{
	(void)ctx;
	(void)ttl_ms;
	if (F.n >= FAKE_MAX)
		return SCACHE_UNSENT;
	snprintf(F.s[F.n].dest, sizeof(F.s[F.n].dest), "%s", dest);
	snprintf(F.s[F.n].endp, sizeof(F.s[F.n].endp), "%s", endpoint);
	snprintf(F.s[F.n].props, sizeof(F.s[F.n].props), "%s", props);
	F.s[F.n].fd = dup(fd);
	F.n++;
	return SCACHE_SAVED;
}

static int fake_find(void *ctx, bool by_endpoint, const char *label,
    str_t *props)
{
	(void)ctx;
	if (F.nasked < 8)
		snprintf(F.asked[F.nasked++], sizeof(F.asked[0]), "%s", label);
	for (int i = 0; i < F.n; i++) {
		if (strcmp(by_endpoint ? F.s[i].endp : F.s[i].dest, label) != 0)
			continue;
		int fd = F.s[i].fd;
		str_set(props, F.s[i].props);
		F.s[i] = F.s[--F.n];
		return fd;
	}
	return -1;
}

static smtp_client_t *shared_client(void)
{
	smtp_client_t *cl = smtp_client_new(&cfg, NULL);
	smtp_shared_t sh = { fake_save, fake_find, NULL };

	smtp_client_set_shared(cl, &sh, "smtp");
	return cl;
}

/* Through the shared cache (other processes): an authenticated session
 * is saved under labels that carry the user, found by another process
 * for the same user, and never by a request without credentials. */
SMTP_TC(shared_cache_labels)
{
	static const char *const script[] = {
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH PLAIN",
		"< AUTH PLAIN AGFsaWNlAHMzY3JldA==",
		"> 235 2.7.0 ok",
		"< MAIL FROM:<alice@example.com>", "> 250 ok",
		"< RCPT TO:<a@example.com>", "> 250 ok",
		"< DATA", "> 354 go", "<DATA", "> 250 2.0.0 queued",
		"< RSET", "> 250 ok",
		"< MAIL FROM:<alice2@example.com>", "> 250 ok",
		"< RCPT TO:<a@example.com>", "> 250 ok",
		"< DATA", "> 354 go", "<DATA", "> 250 2.0.0 queued",
		"CLOSE",
		"> 220 script.test ESMTP",
		"< EHLO client.test",
		"> 250-script.test",
		"> 250 AUTH PLAIN",
		"< MAIL FROM:<other@example.org>", "> 250 ok",
		"< RCPT TO:<a@example.com>", "> 250 ok",
		"< DATA", "> 354 go", "<DATA", "> 250 2.0.0 queued",
		/* the cache has it and closes it: no QUIT */
		NULL
	};
	static const char *const maps[] = {
		"alice@example.com alice:s3cret",
		"alice2@example.com alice:s3cret",
		NULL
	};
	delivery_t d;
	str_t slog = STR_INIT;
	smtp_client_t *c1, *c2;
	char want[128];
	int port;

	(void)tc;
	sasl_cfg();
	memset(&F, 0, sizeof(F));
	cfg.sasl.sender_dependent = true;
	port = script_start(script);
	use_maps(port, maps);
	c1 = shared_client();
	c2 = shared_client();
	deliver_as(&d, c1, port, "alice@example.com");
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	ATF_REQUIRE_EQ(F.n, 1);
	/* Both labels end with the user and the digest of the credentials
	 * (never the password). */
	snprintf(want, sizeof(want), "smtp/[127.0.0.1]:%d|sasl:alice:", port);
	ATF_CHECK_MSG(strncmp(F.s[0].dest, want, strlen(want)) == 0 &&
	    strlen(F.s[0].dest) == strlen(want) + 16, "dest %s", F.s[0].dest);
	snprintf(want, sizeof(want), "smtp/127.0.0.1:%d|sasl:alice:", port);
	ATF_CHECK_MSG(strncmp(F.s[0].endp, want, strlen(want)) == 0 &&
	    strlen(F.s[0].endp) == strlen(want) + 16, "endpoint %s",
	    F.s[0].endp);
	ATF_CHECK_STREQ(strrchr(F.s[0].dest, ':'), strrchr(F.s[0].endp, ':'));
	ATF_CHECK(strstr(F.s[0].dest, "s3cret") == NULL);
	/* Another process, the same user: the session, no second login. */
	deliver_as(&d, c2, port, "alice2@example.com");
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_stats(c2)->shared_found, 1);
	ATF_CHECK_EQ(smtp_client_stats(c2)->auth_ok, 0);
	ATF_REQUIRE_EQ(F.n, 1);
	/* No credentials: it asks for untagged labels only, and the
	 * logged-in session stays where it is. */
	F.nasked = 0;
	deliver_as(&d, c1, port, "other@example.org");
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "queued");
	dl_free(&d);
	ATF_CHECK(F.nasked >= 1);
	for (int i = 0; i < F.nasked; i++)
		ATF_CHECK_MSG(strstr(F.asked[i], "sasl") == NULL, "asked %s",
		    F.asked[i]);
	ATF_CHECK_EQ(smtp_client_stats(c1)->connects, 2);
	smtp_client_set_shared(c1, NULL, NULL);
	smtp_client_set_shared(c2, NULL, NULL);
	smtp_client_free(c1);
	smtp_client_free(c2);
	for (int i = 0; i < F.n; i++)
		close(F.s[i].fd);
	script_finish(&slog);
	ATF_CHECK_MSG(strstr(str_cstr(&slog), "FAIL") == NULL, "%s",
	    str_cstr(&slog));
	smtp_config_release(&cfg);
	str_release(&slog);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, plain_initial_response);
	ATF_TP_ADD_TC(tp, login_two_prompts);
	ATF_TP_ADD_TC(tp, refused_535_defers);
	ATF_TP_ADD_TC(tp, refused_535_bounces_without_soft_bounce);
	ATF_TP_ADD_TC(tp, closing_421_is_handshake_failure);
	ATF_TP_ADD_TC(tp, lost_during_login);
	ATF_TP_ADD_TC(tp, plaintext_default_no_auth);
	ATF_TP_ADD_TC(tp, server_without_auth);
	ATF_TP_ADD_TC(tp, no_credentials_no_auth);
	ATF_TP_ADD_TC(tp, mechanism_filter);
	ATF_TP_ADD_TC(tp, malformed_challenge);
	ATF_TP_ADD_TC(tp, lookup_order);
	ATF_TP_ADD_TC(tp, unusable_entry_defers);
	ATF_TP_ADD_TC(tp, reuse_same_credentials_only);
	ATF_TP_ADD_TC(tp, shared_cache_labels);
	return atf_no_error();
}
