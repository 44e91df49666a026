/* STARTTLS in smtpd, over a socket pair with a real TLS handshake: the
 * server session runs in a thread, the test is the client (our own TLS
 * client from libglobal/tls.h).  The certificate is made at test time. */
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include "t_smtpd_harness.h"

static void make_cert(void)
{
	if (system("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
	    "-nodes -keyout key.pem -out cert.pem -days 2 -subj /CN=mx.example.test "
	    ">pki.log 2>&1") != 0) {
		(void)!system("cat pki.log >&2");
		atf_tc_fail("could not make a test certificate (see pki.log)");
	}
}

typedef struct server {
	const smtpd_cfg_t *cfg;
	int fd;
	tdest_t td;
	int messages;
} server_t;

static void *serve(void *arg)
{
	server_t *sv = arg;
	smtpd_peer_t peer;

	peer_at(&peer, "192.0.2.1");
	sv->messages = smtpd_session_run(sv->cfg, stream_open(sv->fd), &peer,
	    &sv->td.base, NULL);
	return NULL;
}

static void start(server_t *sv, const smtpd_cfg_t *cfg, pthread_t *th,
    stream_t **client)
{
	int p[2];

	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0);
	memset(sv, 0, sizeof(*sv));
	sv->cfg = cfg;
	sv->fd = p[1];
	td_init(&sv->td);
	ATF_REQUIRE(pthread_create(th, NULL, serve, sv) == 0);
	*client = stream_open(p[0]);
	stream_set_timeouts(*client, 10000, 10000);
}

/* One whole reply (continuation lines included), lines joined by \n. */
static char *get_reply(stream_t *s)
{
	str_t line = STR_INIT, all = STR_INIT;

	for (int i = 0; i < 50; i++) {
		int r = stream_getline(s, &line, 1000);
		if (r != STREAM_LINE_CRLF) {
			str_cat(&all, "<EOF>");
			break;
		}
		str_cat(&all, str_cstr(&line));
		if (line.len < 4 || line.buf[3] != '-')
			break;
		str_putc(&all, '\n');
	}
	str_release(&line);
	return str_steal(&all);
}

static void send_cmd(stream_t *s, const char *text)
{
	ATF_REQUIRE(stream_puts(s, text) == 0);
	ATF_REQUIRE(stream_flush(s) == 0);
}

#define EXPECT_REPLY(s, re) do { \
	char *r_ = get_reply(s); \
	ATF_CHECK_MATCH(re, r_); \
	free(r_); \
} while (0)

static tls_sess_t *client_tls(stream_t *s)
{
	str_t err = STR_INIT;
	tls_ctx_t *ctx = tls_client_ctx(&(tls_client_config_t){ 0 }, &err);
	tls_peer_t peer = { TLS_LEVEL_ENCRYPT, "mx.example.test", "example.test" };
	tls_sess_t *sess = NULL;

	ATF_REQUIRE_MSG(ctx != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE_MSG(tls_client_start(ctx, s, &peer, 10000, &sess, &err) == TLS_OK,
	    "%s", str_cstr(&err));
	tls_ctx_free(ctx);
	str_release(&err);
	return sess;
}

/* The attack of CVE-2011-0411: a command sent in the clear right behind
 * STARTTLS must not be executed inside the TLS session. */
ATF_TC_WITHOUT_HEAD(starttls_injection);
ATF_TC_BODY(starttls_injection, tc)
{
	smtpd_cfg_t *cfg;
	server_t sv;
	pthread_t th;
	stream_t *c;
	tls_sess_t *sess;
	char *log;

	make_cert();
	log_into("log");
	cfg = cfg_with("smtpd_tls_security_level = may\n"
	    "smtpd_tls_cert_file = cert.pem\nsmtpd_tls_key_file = key.pem\n"
	    "smtpd_tls_received_header = yes\n");
	start(&sv, cfg, &th, &c);
	EXPECT_REPLY(c, "^220 mx.example.test ESMTP Petrel$");
	send_cmd(c, "EHLO c.example\r\n");
	EXPECT_REPLY(c, "\n250-STARTTLS\n");
	send_cmd(c, "STARTTLS\r\nMAIL FROM:<injected@example.org>\r\n");
	EXPECT_REPLY(c, "^220 2.0.0 Ready to start TLS$");
	sess = client_tls(c);
	ATF_CHECK_STREQ(tls_sess_protocol(sess), "TLSv1.3");
	/* The injected MAIL never happened, and the session started over:
	 * no MAIL before a new EHLO. */
	send_cmd(c, "RCPT TO:<alice@mx.example.test>\r\n");
	EXPECT_REPLY(c, "^503 5.5.1 Error: need MAIL command$");
	send_cmd(c, "MAIL FROM:<a@example.org>\r\n");
	EXPECT_REPLY(c, "^503 5.5.1 Error: send HELO/EHLO first$");
	send_cmd(c, "STARTTLS\r\n");
	EXPECT_REPLY(c, "^554 5.5.1 Error: TLS already active$");
	send_cmd(c, "EHLO c.example\r\n");
	char *r = get_reply(c);
	ATF_CHECK_MSG(strstr(r, "STARTTLS") == NULL, "%s", r);
	free(r);
	send_cmd(c, "MAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\n"
	    "DATA\r\n");
	EXPECT_REPLY(c, "^250 2.1.0 Ok$");
	EXPECT_REPLY(c, "^250 2.1.5 Ok$");
	EXPECT_REPLY(c, "^354 ");
	send_cmd(c, "secret\r\n.\r\nQUIT\r\n");
	EXPECT_REPLY(c, "^250 2.0.0 Ok: queued as QID1$");
	EXPECT_REPLY(c, "^221 2.0.0 Bye$");
	tls_close(sess, c, 1000);
	ATF_REQUIRE(pthread_join(th, NULL) == 0);
	ATF_CHECK_EQ(sv.messages, 1);
	ATF_CHECK_MATCH("helo=c.example proto=ESMTPS tls=using TLSv1.3 with cipher ",
	    str_cstr(sv.td.env));
	ATF_CHECK_MATCH("sender=a@example.org\n", str_cstr(sv.td.env));
	ATF_CHECK_STREQ(str_cstr(sv.td.last), "secret\r\n");
	log = slurp("log");
	log_to_stderr();
	ATF_CHECK_MATCH("warning: unknown\\[192.0.2.1\\]: discarding 34 bytes of "
	    "input pipelined after STARTTLS", log);
	ATF_CHECK_MATCH("Anonymous TLS connection established from unknown\\[192.0.2.1\\]: TLSv1.3", log);
	ATF_CHECK_MATCH("disconnect from unknown\\[192.0.2.1\\] ehlo=2 starttls=1/2 "
	    "mail=1/2 rcpt=1/2 data=1 quit=1 commands=7/10", log);
	free(log);
	smtpd_cfg_free(cfg);
}

/* encrypt: no mail before STARTTLS (530); after it, mail flows. */
ATF_TC_WITHOUT_HEAD(encrypt);
ATF_TC_BODY(encrypt, tc)
{
	smtpd_cfg_t *cfg;
	server_t sv;
	pthread_t th;
	stream_t *c;
	tls_sess_t *sess;

	make_cert();
	cfg = cfg_with("smtpd_tls_security_level = encrypt\n"
	    "smtpd_tls_cert_file = cert.pem\nsmtpd_tls_key_file = key.pem\n");
	start(&sv, cfg, &th, &c);
	EXPECT_REPLY(c, "^220 ");
	send_cmd(c, "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\n"
	    "MAIL FROM:<a@example.org> SMTPUTF8\r\nSTARTTLS now\r\n");
	EXPECT_REPLY(c, "\n250-STARTTLS\n");
	EXPECT_REPLY(c, "^530 5.7.0 Must issue a STARTTLS command first$");
	EXPECT_REPLY(c, "^530 5.7.0 Must issue a STARTTLS command first$");
	EXPECT_REPLY(c, "^501 5.5.4 Syntax: STARTTLS$");
	send_cmd(c, "STARTTLS\r\n");
	EXPECT_REPLY(c, "^220 2.0.0 Ready to start TLS$");
	sess = client_tls(c);
	send_cmd(c, "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nBDAT 5 LAST\r\nhello");
	free(get_reply(c));
	EXPECT_REPLY(c, "^250 2.1.0 Ok$");
	EXPECT_REPLY(c, "^250 2.1.5 Ok$");
	EXPECT_REPLY(c, "^250 2.0.0 Ok: queued as QID1$");
	/* The client hangs up without QUIT. */
	tls_close(sess, c, 1000);
	ATF_REQUIRE(pthread_join(th, NULL) == 0);
	ATF_CHECK_EQ(sv.messages, 1);
	ATF_CHECK_MATCH("proto=ESMTPS tls=-\n", str_cstr(sv.td.env));
	ATF_CHECK_STREQ(str_cstr(sv.td.last), "hello");
	smtpd_cfg_free(cfg);
}

/* A client that says STARTTLS and then sends no TLS: the session ends,
 * logged, without harm. */
ATF_TC_WITHOUT_HEAD(handshake_failure);
ATF_TC_BODY(handshake_failure, tc)
{
	smtpd_cfg_t *cfg;
	server_t sv;
	pthread_t th;
	stream_t *c;
	char *log;

	make_cert();
	log_into("log");
	cfg = cfg_with("smtpd_tls_security_level = may\n"
	    "smtpd_tls_cert_file = cert.pem\nsmtpd_tls_key_file = key.pem\n");
	start(&sv, cfg, &th, &c);
	EXPECT_REPLY(c, "^220 ");
	send_cmd(c, "STARTTLS\r\n");
	EXPECT_REPLY(c, "^220 2.0.0 Ready to start TLS$");
	send_cmd(c, "EHLO this is not a TLS client hello\r\n");
	EXPECT_REPLY(c, "^<EOF>$");
	stream_close(c);
	ATF_REQUIRE(pthread_join(th, NULL) == 0);
	log = slurp("log");
	log_to_stderr();
	ATF_CHECK_MATCH("warning: TLS handshake failed for unknown\\[192.0.2.1\\]: ", log);
	ATF_CHECK_MATCH("lost connection after STARTTLS from unknown\\[192.0.2.1\\]", log);
	free(log);
	smtpd_cfg_free(cfg);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, starttls_injection);
	ATF_TP_ADD_TC(tp, encrypt);
	ATF_TP_ADD_TC(tp, handshake_failure);
	return atf_no_error();
}
