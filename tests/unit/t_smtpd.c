/* smtpd's protocol engine, run in memory (t_smtpd_harness.h): replies
 * to every command in and out of order, limits, content handling, what
 * reaches the destination, and the log lines. */
#include "t_smtpd_harness.h"

#define GOOD_MAIL \
	"EHLO client.example\r\n" \
	"MAIL FROM:<sender@example.org>\r\n" \
	"RCPT TO:<alice@mx.example.test>\r\n" \
	"DATA\r\n" \
	"Subject: hi\r\n" \
	"\r\n" \
	"..leading dot\r\n" \
	"body\r\n" \
	".\r\n" \
	"QUIT\r\n"

ATF_TC_WITHOUT_HEAD(transaction);
ATF_TC_BODY(transaction, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *t, *r;

	td_init(&td);
	t = session(cfg, "192.0.2.1", GOOD_MAIL, &td);
	ATF_CHECK_MATCH("^220 mx.example.test ESMTP Petrel\r\n", t);
	r = replies(t);
	CHECK_REPLIES(r,
	    "250-mx.example.test\n"
	    "250-PIPELINING\n"
	    "250-SIZE 10240000\n"
	    "250-ENHANCEDSTATUSCODES\n"
	    "250-8BITMIME\n"
	    "250-DSN\n"
	    "250-SMTPUTF8\n"
	    "250 CHUNKING\n"
	    "250 2.1.0 Ok\n"
	    "250 2.1.5 Ok\n"
	    "354 End data with <CR><LF>.<CR><LF>\n"
	    "250 2.0.0 Ok: queued as QID1\n"
	    "221 2.0.0 Bye\n");
	ATF_CHECK_EQ(td.opens, 1);
	ATF_CHECK_EQ(td.finishes, 1);
	ATF_CHECK_EQ(td.aborts, 0);
	/* Dot-stuffing removed, CR LF kept, the final dot not passed on. */
	ATF_CHECK_STREQ(str_cstr(td.last),
	    "Subject: hi\r\n\r\n.leading dot\r\nbody\r\n");
	ATF_CHECK_STREQ(str_cstr(td.env),
	    "sender=sender@example.org\n"
	    "rcpt=alice@mx.example.test orcpt=- notify=0\n"
	    "envid=- ret=0 body=- smtputf8=0\n"
	    "client=unknown[192.0.2.1] port=4711 helo=client.example proto=ESMTP tls=-\n");
	free(t);
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(helo_smtp);
ATF_TC_BODY(helo_smtp, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1",
	    "HELO client.example\r\nMAIL FROM:<>\r\nRCPT TO:<alice@mx.example.test>\r\n"
	    "DATA\r\nx\r\n.\r\nHELO\r\nEHLO a b\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r,
	    "250 mx.example.test\n"
	    "250 2.1.0 Ok\n"
	    "250 2.1.5 Ok\n"
	    "354 End data with <CR><LF>.<CR><LF>\n"
	    "250 2.0.0 Ok: queued as QID1\n"
	    "501 5.5.4 Syntax: HELO hostname\n"
	    "501 5.5.4 Syntax: EHLO hostname\n"
	    "221 2.0.0 Bye\n");
	ATF_CHECK_MATCH("^sender=\n", str_cstr(td.env));
	ATF_CHECK_MATCH("proto=SMTP ", str_cstr(td.env));
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(out_of_order);
ATF_TC_BODY(out_of_order, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1",
	    "RCPT TO:<alice@mx.example.test>\r\n"
	    "DATA\r\n"
	    "BDAT 3\r\nabc"
	    "MAIL FROM:<a@example.org>\r\n"
	    "MAIL FROM:<a@example.org>\r\n"
	    "DATA\r\n"
	    "RCPT TO:<nobody@elsewhere.example>\r\n"
	    "DATA\r\n"
	    "RSET\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\n"
	    "STARTTLS\r\n"
	    "QUIT\r\n", &td);
	CHECK_REPLIES(r,
	    "503 5.5.1 Error: need MAIL command\n"
	    "503 5.5.1 Error: need RCPT command\n"
	    "503 5.5.1 Error: need MAIL command\n"
	    "250 2.1.0 Ok\n"
	    "503 5.5.1 Error: nested MAIL command\n"
	    "554 5.5.1 Error: no valid recipients\n"
	    "554 5.7.1 <nobody@elsewhere.example>: Relay access denied\n"
	    "554 5.5.1 Error: no valid recipients\n"
	    "250 2.0.0 Ok\n"
	    "503 5.5.1 Error: need MAIL command\n"
	    "502 5.5.1 Error: command not implemented\n"
	    "221 2.0.0 Bye\n");
	ATF_CHECK_EQ(td.opens, 0);
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(syntax);
ATF_TC_BODY(syntax, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r;
	const char in[] =
	    "EHLO c.example\r\n"
	    "MAIL FROM <a@example.org>\r\n"
	    "MAIL FROM:<a@@example.org>\r\n"
	    "MAIL FROM:<a@example.org> FOO=BAR\r\n"
	    "MAIL FROM:<a@example.org> BODY=BINARYMIME\r\n"
	    "MAIL FROM:<a@example.org> AUTH=<>\r\n"
	    "MAIL FROM:<j\xc3\xb6rg@example.org>\r\n"
	    "MAIL FROM:<a@example.org> SIZE=12\r\n"
	    "RCPT TO:<alice@mx.example.test> SIZE=1\r\n"
	    "RCPT TO:alice\r\n"
	    "RCPT TO:<>\r\n"
	    "WHATEVER\r\n"
	    "\r\n"
	    "   \r\n"
	    "NOOP\0x\r\n"
	    "NOOP \x01\r\n"
	    "DATA now\r\n"
	    "RSET please\r\n"
	    "QUIT\r\n";

	td_init(&td);
	char *t = session_opts(cfg, "192.0.2.1", in, sizeof(in) - 1, &td, NULL, 0);
	r = replies(t);
	CHECK_REPLIES(r,
	    "250-mx.example.test\n250-PIPELINING\n250-SIZE 10240000\n"
	    "250-ENHANCEDSTATUSCODES\n250-8BITMIME\n250-DSN\n250-SMTPUTF8\n"
	    "250 CHUNKING\n"
	    "501 5.5.4 Syntax: MAIL FROM:<address>\n"
	    "501 5.1.7 Bad sender address syntax: invalid character in domain "
	    "name (letters, digits, '-' and '.' only)\n"
	    "555 5.5.4 Unsupported option: FOO=BAR\n"
	    "555 5.5.4 Unsupported option: BODY=BINARYMIME\n"
	    "555 5.5.4 Unsupported option: AUTH=<>\n"
	    "553 5.6.7 Bad sender address syntax: non-ASCII address requires SMTPUTF8\n"
	    "250 2.1.0 Ok\n"
	    "555 5.5.4 Error: SIZE is not a RCPT TO parameter\n"
	    "250 2.1.5 Ok\n"
	    "501 5.1.3 Bad recipient address syntax: the null address <> is "
	    "not a valid recipient\n"
	    "500 5.5.2 Error: command not recognized\n"
	    "500 5.5.2 Error: bad syntax\n"
	    "500 5.5.2 Error: bad syntax\n"
	    "500 5.5.2 Error: NUL character in command\n"
	    "500 5.5.2 Error: control character in command\n"
	    "501 5.5.4 Syntax: DATA\n"
	    "501 5.5.4 Syntax: RSET\n"
	    "221 2.0.0 Bye\n");
	free(t);
	free(r);
	smtpd_cfg_free(cfg);
}

/* A command line over line_length_limit is refused as a whole, and the
 * session goes on in step with the client. */
ATF_TC_WITHOUT_HEAD(long_command);
ATF_TC_BODY(long_command, tc)
{
	smtpd_cfg_t *cfg = cfg_with("line_length_limit = 100\n");
	tdest_t td;
	str_t in = STR_INIT;
	char *r;

	td_init(&td);
	str_cat(&in, "NOOP ");
	for (int i = 0; i < 100000; i++)
		str_putc(&in, 'x');
	str_cat(&in, "\r\nNOOP\r\nQUIT\r\n");
	char *t = session_opts(cfg, "192.0.2.1", in.buf, in.len, &td, NULL, 777);
	r = replies(t);
	CHECK_REPLIES(r, "500 5.5.2 Error: line too long\n250 2.0.0 Ok\n221 2.0.0 Bye\n");
	free(t);
	free(r);
	str_release(&in);
	smtpd_cfg_free(cfg);
}

/* Everything sent at once is answered in order (PIPELINING), also when
 * the input arrives one byte at a time. */
ATF_TC_WITHOUT_HEAD(pipelining);
ATF_TC_BODY(pipelining, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	const char in[] =
	    "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nRCPT TO:<zed@mx.example.test>\r\n"
	    "RCPT TO:<bob@mx.example.test>\r\nDATA\r\nline\r\n.\r\n"
	    "MAIL FROM:<b@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\n"
	    "DATA\r\nsecond\r\n.\r\nQUIT\r\n";
	const char *want =
	    "250 2.1.0 Ok\n250 2.1.5 Ok\n"
	    "550 5.1.1 <zed@mx.example.test>: Recipient address rejected: User unknown in local recipient table\n"
	    "250 2.1.5 Ok\n354 End data with <CR><LF>.<CR><LF>\n"
	    "250 2.0.0 Ok: queued as QID1\n250 2.1.0 Ok\n250 2.1.5 Ok\n"
	    "354 End data with <CR><LF>.<CR><LF>\n250 2.0.0 Ok: queued as QID1\n"
	    "221 2.0.0 Bye\n";

	for (size_t step = 0; step <= 1; step++) {
		td_init(&td);
		char *t = session_opts(cfg, "192.0.2.1", in, sizeof(in) - 1, &td,
		    NULL, step);
		char *r = replies(t);
		char *past_ehlo = strstr(r, "250 CHUNKING\n");
		ATF_REQUIRE(past_ehlo != NULL);
		CHECK_REPLIES(past_ehlo + 13, want);
		ATF_CHECK_EQ(td.finishes, 2);
		ATF_CHECK_STREQ(str_cstr(td.last), "second\r\n");
		free(t);
		free(r);
	}
	smtpd_cfg_free(cfg);
}

/* Relay control: strangers may send only to our domains. */
ATF_TC_WITHOUT_HEAD(relay);
ATF_TC_BODY(relay, tc)
{
	smtpd_cfg_t *cfg = cfg_with("recipient_delimiter = +\n");
	tdest_t td;
	char *r;
	const char *in =
	    "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<x@elsewhere.example>\r\n"
	    "RCPT TO:<anyone@relay.example>\r\n"
	    "RCPT TO:<anyone@sub.relay.example>\r\n"
	    "RCPT TO:<x%elsewhere.example@mx.example.test>\r\n"
	    "RCPT TO:<elsewhere.example!x@mx.example.test>\r\n"
	    "RCPT TO:<\"x@elsewhere.example\"@mx.example.test>\r\n"
	    "RCPT TO:<alice@MX.Example.Test>\r\n"
	    "RCPT TO:<alice+box@mx.example.test>\r\n"
	    "RCPT TO:<Postmaster>\r\n"
	    "RCPT TO:<postmaster@mx.example.test>\r\n"
	    "RCPT TO:<alice@[192.0.2.25]>\r\n"
	    "RCPT TO:<alice@[192.0.2.26]>\r\n"
	    "QUIT\r\n";

	td_init(&td);
	r = talk(cfg, "192.0.2.1", in, &td);
	ATF_CHECK_MSG(strstr(r,
	    "250 2.1.0 Ok\n"
	    "554 5.7.1 <x@elsewhere.example>: Relay access denied\n"
	    "250 2.1.5 Ok\n"
	    "554 5.7.1 <anyone@sub.relay.example>: Relay access denied\n"
	    "554 5.7.1 <x%elsewhere.example@mx.example.test>: Relay access denied\n"
	    "554 5.7.1 <elsewhere.example!x@mx.example.test>: Relay access denied\n"
	    "554 5.7.1 <\"x@elsewhere.example\"@mx.example.test>: Relay access denied\n"
	    "250 2.1.5 Ok\n"
	    "250 2.1.5 Ok\n"
	    "250 2.1.5 Ok\n"
	    "250 2.1.5 Ok\n"
	    "250 2.1.5 Ok\n"
	    "554 5.7.1 <alice@[192.0.2.26]>: Relay access denied\n"
	    "221 2.0.0 Bye\n") != NULL, "%s", r);
	free(r);

	/* mynetworks may relay anywhere. */
	td_init(&td);
	r = talk(cfg, "127.0.0.1", in, &td);
	ATF_CHECK_MSG(strstr(r, "554") == NULL, "%s", r);
	free(r);
	/* An IPv6 stranger is no exception. */
	td_init(&td);
	r = talk(cfg, "2001:db8::1", in, &td);
	ATF_CHECK_MATCH("554 5.7.1 <x@elsewhere.example>: Relay access denied", r);
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(reject_log);
ATF_TC_BODY(reject_log, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r, *log;

	log_into("log");
	td_init(&td);
	r = talk(cfg, "192.0.2.1",
	    "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<x@elsewhere.example>\r\nQUIT\r\n", &td);
	log = slurp("log");
	log_to_stderr();
	ATF_CHECK_MATCH("smtpd\\[[0-9]+\\]: connect from unknown\\[192.0.2.1\\]\n", log);
	ATF_CHECK_MATCH("smtpd\\[[0-9]+\\]: NOQUEUE: reject: RCPT from unknown\\[192.0.2.1\\]: "
	    "554 5.7.1 <x@elsewhere.example>: Relay access denied; "
	    "from=<a@example.org> to=<x@elsewhere.example> proto=ESMTP "
	    "helo=<c.example>\n", log);
	ATF_CHECK_MATCH("disconnect from unknown\\[192.0.2.1\\] ehlo=1 mail=1 "
	    "rcpt=0/1 quit=1 commands=3/4\n", log);
	free(r);
	free(log);
	smtpd_cfg_free(cfg);
}

/* SIZE= over the limit at MAIL; a message over the limit after its
 * last byte: 552, and nothing is queued. */
ATF_TC_WITHOUT_HEAD(size_limit);
ATF_TC_BODY(size_limit, tc)
{
	smtpd_cfg_t *cfg = cfg_with("message_size_limit = 1000\n");
	tdest_t td;
	str_t in = STR_INIT;
	char *r;

	str_cat(&in, "EHLO c.example\r\nMAIL FROM:<a@example.org> SIZE=1001\r\n"
	    "MAIL FROM:<a@example.org> SIZE=1000\r\nRCPT TO:<alice@mx.example.test>\r\n"
	    "DATA\r\n");
	for (int i = 0; i < 30; i++)
		str_cat(&in, "0123456789012345678901234567890123456789\r\n");
	str_cat(&in, ".\r\nRSET\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nDATA\r\nsmall\r\n.\r\nQUIT\r\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", in.buf, &td);
	ATF_CHECK_MATCH("250-SIZE 1000\n", r);
	ATF_CHECK_MSG(strstr(r, "250 CHUNKING\n"
	    "552 5.3.4 Message size exceeds fixed limit\n"
	    "250 2.1.0 Ok\n250 2.1.5 Ok\n354 End data with <CR><LF>.<CR><LF>\n"
	    "552 5.3.4 Message size exceeds fixed limit\n"
	    "250 2.0.0 Ok\n250 2.1.0 Ok\n250 2.1.5 Ok\n"
	    "354 End data with <CR><LF>.<CR><LF>\n"
	    "250 2.0.0 Ok: queued as QID1\n221 2.0.0 Bye\n") != NULL, "%s", r);
	ATF_CHECK_EQ(td.aborts, 1);
	ATF_CHECK_EQ(td.finishes, 1);
	ATF_CHECK_STREQ(str_cstr(td.last), "small\r\n");
	free(r);
	str_release(&in);
	smtpd_cfg_free(cfg);
}

/* A line longer than line_length_limit in DATA passes whole. */
ATF_TC_WITHOUT_HEAD(long_data_line);
ATF_TC_BODY(long_data_line, tc)
{
	smtpd_cfg_t *cfg = cfg_with("line_length_limit = 100\n");
	tdest_t td;
	str_t in = STR_INIT, line = STR_INIT, want = STR_INIT;
	char *r;

	for (int i = 0; i < 5000; i++)
		str_putc(&line, (char)('a' + i % 26));
	str_cat(&in, "HELO c\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\nDATA\r\n");
	/* A stuffed dot at the start of a long line, and a dot at a piece
	 * boundary (which is no line start: kept). */
	str_catf(&in, ".%s\r\n", str_cstr(&line));
	str_catf(&in, "%.*s.%s\r\n.\r\nQUIT\r\n", 100, str_cstr(&line), str_cstr(&line));
	str_catf(&want, "%s\r\n%.*s.%s\r\n", str_cstr(&line), 100, str_cstr(&line),
	    str_cstr(&line));
	td_init(&td);
	r = talk(cfg, "192.0.2.1", in.buf, &td);
	ATF_CHECK_MATCH("250 2.0.0 Ok: queued as QID1\n", r);
	ATF_CHECK_EQ(str_len(td.last), str_len(&want));
	ATF_CHECK(strcmp(str_cstr(td.last), str_cstr(&want)) == 0);
	free(r);
	str_release(&in);
	str_release(&line);
	str_release(&want);
	smtpd_cfg_free(cfg);
}

/* Bare LF: normalize (default) ends data only on CR LF . CR LF; no
 * accepts any; yes refuses and hangs up. */
ATF_TC_WITHOUT_HEAD(bare_lf);
ATF_TC_BODY(bare_lf, tc)
{
	const char *in =
	    "HELO c\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\n"
	    "DATA\r\none\n.\nMAIL FROM:<smuggled@example.org>\r\n.\r\ntwo\r\n.\r\nQUIT\r\n";
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1", in, &td);
	ATF_CHECK_MATCH("354 End data with <CR><LF>.<CR><LF>\n"
	    "250 2.0.0 Ok: queued as QID1\n500 5.5.2 Error: command not recognized\n"
	    "221 2.7.0 Error: I can break rules, too. Goodbye.\n$", r);
	/* The smuggled transaction is content of the first message. */
	ATF_CHECK_STREQ(str_cstr(td.last),
	    "one\r\n.\r\nMAIL FROM:<smuggled@example.org>\r\n");
	ATF_CHECK_EQ(td.finishes, 1);
	free(r);
	smtpd_cfg_free(cfg);

	cfg = cfg_with("smtpd_forbid_bare_newline = no\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", in, &td);
	ATF_CHECK_STREQ(str_cstr(td.last), "one\r\n");
	/* "." alone is not an SMTP command: the client is cut off. */
	ATF_CHECK_MATCH("250 2.0.0 Ok: queued as QID1\n250 2.1.0 Ok\n"
	    "221 2.7.0 Error: I can break rules, too. Goodbye.\n$", r);
	free(r);
	smtpd_cfg_free(cfg);

	cfg = cfg_with("smtpd_forbid_bare_newline = yes\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", in, &td);
	CHECK_REPLIES(r, "521 5.5.2 mx.example.test Error: bare <LF> received\n");
	free(r);
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nDATA\r\nx\ny\r\n.\r\n", &td);
	ATF_CHECK_MATCH("354 .*\n521 5.5.2 mx.example.test Error: bare <LF> received\n$", r);
	ATF_CHECK_EQ(td.aborts, 1);
	ATF_CHECK_EQ(td.finishes, 0);
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(recipient_limit);
ATF_TC_BODY(recipient_limit, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_recipient_limit = 2\n"
	    "smtpd_recipient_overshoot_limit = 1\nsmtpd_hard_error_limit = 2\n");
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1",
	    "HELO c\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nRCPT TO:<bob@mx.example.test>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nRCPT TO:<alice@mx.example.test>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nNOOP\r\n", &td);
	/* One over the limit is flow control; beyond the overshoot each
	 * counts as an error, and two errors end the session. */
	CHECK_REPLIES(r, "250 mx.example.test\n250 2.1.0 Ok\n250 2.1.5 Ok\n250 2.1.5 Ok\n"
	    "452 4.5.3 Error: too many recipients\n"
	    "452 4.5.3 Error: too many recipients\n"
	    "452 4.5.3 Error: too many recipients\n"
	    "421 4.7.0 mx.example.test Error: too many errors\n");
	free(r);
	smtpd_cfg_free(cfg);
}

static unsigned sleeps;
static void count_sleep(unsigned secs, void *ctx)
{
	(void)ctx;
	ATF_CHECK_EQ(secs, 7);
	sleeps++;
}

/* Soft limit: from the third error on each error reply is delayed; hard
 * limit: after the fifth the session ends with 421. */
ATF_TC_WITHOUT_HEAD(error_limits);
ATF_TC_BODY(error_limits, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_soft_error_limit = 3\n"
	    "smtpd_hard_error_limit = 5\nsmtpd_error_sleep_time = 7s\n");
	smtpd_session_opts_t opts = { .sleep_fn = count_sleep };
	tdest_t td;
	const char *in = "X1\r\nX2\r\nNOOP\r\nX3\r\nX4\r\nX5\r\nNOOP\r\nX6\r\n";

	log_into("log");
	sleeps = 0;
	td_init(&td);
	char *t = session_opts(cfg, "192.0.2.1", in, strlen(in), &td, &opts, 0);
	char *r = replies(t), *log = slurp("log");
	log_to_stderr();
	CHECK_REPLIES(r, "500 5.5.2 Error: command not recognized\n"
	    "500 5.5.2 Error: command not recognized\n250 2.0.0 Ok\n"
	    "500 5.5.2 Error: command not recognized\n"
	    "500 5.5.2 Error: command not recognized\n"
	    "500 5.5.2 Error: command not recognized\n"
	    "421 4.7.0 mx.example.test Error: too many errors\n");
	ATF_CHECK_EQ(sleeps, 3);
	ATF_CHECK_MATCH("too many errors after UNKNOWN from unknown\\[192.0.2.1\\]", log);
	free(t);
	free(r);
	free(log);
	smtpd_cfg_free(cfg);
}

/* NOOP, RSET and VRFY beyond smtpd_junk_command_limit count as errors. */
ATF_TC_WITHOUT_HEAD(junk_commands);
ATF_TC_BODY(junk_commands, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_junk_command_limit = 2\n"
	    "smtpd_hard_error_limit = 2\n");
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1", "NOOP\r\nRSET\r\nNOOP\r\nNOOP\r\nNOOP\r\n", &td);
	CHECK_REPLIES(r, "250 2.0.0 Ok\n250 2.0.0 Ok\n250 2.0.0 Ok\n250 2.0.0 Ok\n"
	    "421 4.7.0 mx.example.test Error: too many errors\n");
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(helo_required);
ATF_TC_BODY(helo_required, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_helo_required = yes\n");
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1", "MAIL FROM:<a@example.org>\r\nHELO c\r\n"
	    "MAIL FROM:<a@example.org>\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "503 5.5.1 Error: send HELO/EHLO first\n"
	    "250 mx.example.test\n250 2.1.0 Ok\n221 2.0.0 Bye\n");
	free(r);
	smtpd_cfg_free(cfg);

	/* Without it, MAIL without HELO is fine. */
	cfg = cfg_with(NULL);
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "MAIL FROM:<a@example.org>\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "250 2.1.0 Ok\n221 2.0.0 Bye\n");
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(vrfy);
ATF_TC_BODY(vrfy, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1", "EHLO c\r\nVRFY alice\r\nQUIT\r\n", &td);
	ATF_CHECK_MSG(strstr(r, "VRFY") == NULL || strstr(r, "250-VRFY") == NULL, "%s", r);
	ATF_CHECK_MATCH("252 2.5.2 Cannot VRFY user; try RCPT to attempt delivery\n221", r);
	free(r);
	smtpd_cfg_free(cfg);

	cfg = cfg_with("disable_vrfy_command = no\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "EHLO c\r\nVRFY alice@mx.example.test\r\n"
	    "VRFY <nobody@mx.example.test>\r\nVRFY someone@elsewhere.example\r\n"
	    "VRFY\r\nVRFY <<>\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("250-VRFY\n", r);
	ATF_CHECK_MSG(strstr(r, "250 CHUNKING\n"
	    "252 2.0.0 <alice@mx.example.test>\n"
	    "550 5.1.1 <nobody@mx.example.test>: Recipient address rejected: "
	    "User unknown in local recipient table\n"
	    "252 2.0.0 <someone@elsewhere.example>\n"
	    "501 5.5.4 Syntax: VRFY address\n"
	    "501 5.1.3 Bad recipient address syntax\n221 2.0.0 Bye\n") != NULL, "%s", r);
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(help_and_others);
ATF_TC_BODY(help_and_others, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELP\r\nhelp me\r\nEXPN list\r\nETRN x\r\n"
	    "AUTH PLAIN\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "214-2.0.0 Commands: HELO EHLO MAIL RCPT DATA BDAT RSET NOOP QUIT VRFY HELP STARTTLS AUTH\n"
	    "214 2.0.0 See RFC 5321\n"
	    "214-2.0.0 Commands: HELO EHLO MAIL RCPT DATA BDAT RSET NOOP QUIT VRFY HELP STARTTLS AUTH\n"
	    "214 2.0.0 See RFC 5321\n"
	    "502 5.5.1 Error: command not implemented\n"
	    "502 5.5.1 Error: command not implemented\n"
	    "503 5.5.1 Error: authentication not enabled\n"
	    "221 2.0.0 Bye\n");
	free(r);
	smtpd_cfg_free(cfg);
}

/* HTTP requests and headers are not SMTP: logged, 221, hang up. */
ATF_TC_WITHOUT_HEAD(non_smtp);
ATF_TC_BODY(non_smtp, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r, *log;

	log_into("log");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "GET / HTTP/1.0\r\nHost: x\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "221 2.7.0 Error: I can break rules, too. Goodbye.\n");
	free(r);
	r = talk(cfg, "192.0.2.1", "EHLO x\r\nHost: x\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("250 CHUNKING\n221 2.7.0 Error: I can break rules, too. Goodbye.\n$", r);
	free(r);
	r = talk(cfg, "192.0.2.1", "\x16\x03\x01garbage\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("^500 5.5.2 Error: control character in command\n221 2.0.0 Bye\n$", r);
	free(r);
	r = talk(cfg, "192.0.2.1", "#!%garbage\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "221 2.7.0 Error: I can break rules, too. Goodbye.\n");
	free(r);
	log = slurp("log");
	log_to_stderr();
	ATF_CHECK_MATCH("warning: non-SMTP command from unknown\\[192.0.2.1\\]: GET / HTTP/1.0", log);
	free(log);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(dsn_and_utf8);
ATF_TC_BODY(dsn_and_utf8, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1",
	    "EHLO c\r\n"
	    "MAIL FROM:<j\xc3\xb6rg@example.org> SMTPUTF8 BODY=8BITMIME RET=HDRS ENVID=abc+2Bd\r\n"
	    "RCPT TO:<alice@mx.example.test> NOTIFY=SUCCESS,DELAY ORCPT=rfc822;Alice+40mx.example.test\r\n"
	    "RCPT TO:<bob@mx.example.test> NOTIFY=NEVER\r\n"
	    "RCPT TO:<\xc3\xa5sa@mx.example.test>\r\n"
	    "DATA\r\nx\r\n.\r\nQUIT\r\n", &td);
	ATF_CHECK_MSG(strstr(r, "250 CHUNKING\n250 2.1.0 Ok\n250 2.1.5 Ok\n250 2.1.5 Ok\n"
	    "550 5.1.1 <\xc3\xa5sa@mx.example.test>: Recipient address rejected: "
	    "User unknown in local recipient table\n354") != NULL, "%s", r);
	ATF_CHECK_STREQ(str_cstr(td.env),
	    "sender=j\xc3\xb6rg@example.org\n"
	    "rcpt=alice@mx.example.test orcpt=rfc822;Alice+40mx.example.test notify=5\n"
	    "rcpt=bob@mx.example.test orcpt=- notify=8\n"
	    "envid=abc+2Bd ret=2 body=8BITMIME smtputf8=1\n"
	    "client=unknown[192.0.2.1] port=4711 helo=c proto=UTF8SMTP tls=-\n");
	free(r);
	smtpd_cfg_free(cfg);

	/* Without SMTPUTF8 and DSN the parameters are refused. */
	cfg = cfg_with("smtputf8_enable = no\nsmtpd_discard_ehlo_keywords = dsn, chunking\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "EHLO c\r\nMAIL FROM:<a@example.org> SMTPUTF8\r\n"
	    "MAIL FROM:<a@example.org> RET=FULL\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test> NOTIFY=NEVER\r\nBDAT 1 LAST\r\nx"
	    "QUIT\r\n", &td);
	CHECK_REPLIES(r, "250-mx.example.test\n250-PIPELINING\n250-SIZE 10240000\n"
	    "250-ENHANCEDSTATUSCODES\n250 8BITMIME\n"
	    "555 5.5.4 Unsupported option: SMTPUTF8\n"
	    "555 5.5.4 Unsupported option: RET=FULL\n"
	    "250 2.1.0 Ok\n"
	    "555 5.5.4 Unsupported option: NOTIFY=NEVER\n"
	    "500 5.5.2 Error: command not recognized\n"
	    "500 5.5.2 Error: command not recognized\n");	/* "xQUIT" */
	free(r);
	smtpd_cfg_free(cfg);

	/* No ENHANCEDSTATUSCODES: replies lose their x.y.z. */
	cfg = cfg_with("smtpd_discard_ehlo_keywords = enhancedstatuscodes\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "RCPT TO:<a@b.example>\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "503 Error: need MAIL command\n221 Bye\n");
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(bdat);
ATF_TC_BODY(bdat, tc)
{
	smtpd_cfg_t *cfg = cfg_with("message_size_limit = 20\n");
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1",
	    "EHLO c\r\nBDAT 6\r\nRSET\r\n"		/* bytes skipped, not commands */
	    "MAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\n"
	    "BDAT 7\r\nline 1\n"
	    "RCPT TO:<bob@mx.example.test>\r\n"
	    "DATA\r\n"
	    "BDAT 0\r\n"
	    "BDAT 8 LAST\r\nline 2\r\n"
	    "MAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\n"
	    "BDAT 15\r\n0123456789abcde"
	    "BDAT 15 last\r\n0123456789abcde"
	    "BDAT 3 LAST\r\nxyz"
	    "BDAT 12x\r\nQUIT\r\n", &td);
	ATF_CHECK_MSG(strstr(r, "250 CHUNKING\n"
	    "503 5.5.1 Error: need MAIL command\n"
	    "250 2.1.0 Ok\n250 2.1.5 Ok\n"
	    "250 2.0.0 Ok: 7 bytes\n"
	    "503 5.5.1 Error: RCPT after BDAT\n"
	    "503 5.5.1 Error: DATA after BDAT\n"
	    "250 2.0.0 Ok: 0 bytes\n"
	    "250 2.0.0 Ok: queued as QID1\n"
	    "250 2.1.0 Ok\n250 2.1.5 Ok\n"
	    "250 2.0.0 Ok: 15 bytes\n"
	    "552 5.3.4 Message size exceeds fixed limit\n"
	    "503 5.5.1 Error: need MAIL command\n"
	    "501 5.5.4 Syntax: BDAT count [LAST]\n") != NULL, "%s", r);
	ATF_CHECK_STREQ(str_cstr(td.last), "line 1\nline 2\r\n");
	ATF_CHECK_EQ(td.finishes, 1);
	ATF_CHECK_EQ(td.aborts, 1);
	free(r);
	smtpd_cfg_free(cfg);
}

/* What the destination says becomes the reply to the final dot. */
ATF_TC_WITHOUT_HEAD(dest_failures);
ATF_TC_BODY(dest_failures, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r;
	const char *msg = "HELO c\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nDATA\r\nx\r\n.\r\nQUIT\r\n";

	td_init(&td);
	td.fail_open = true;
	r = talk(cfg, "192.0.2.1", msg, &td);
	/* The content, if the client sends it anyway, is taken for
	 * commands, and a lone dot is no SMTP. */
	ATF_CHECK_MATCH("250 2.1.5 Ok\n451 4.3.0 Error: queue file write error\n"
	    "500 5.5.2 Error: command not recognized\n221 2.7.0 ", r);
	free(r);

	td_init(&td);
	cleanup_reply_set(&td.next, CLEANUP_STAT_TEMP, "4.3.0", "queue file write error");
	r = talk(cfg, "192.0.2.1", msg, &td);
	ATF_CHECK_MATCH("354 .*\n451 4.3.0 Error: queue file write error\n221", r);
	free(r);

	td_init(&td);
	cleanup_reply_set(&td.next, CLEANUP_STAT_PERM, "5.6.0", "NUL byte in header");
	r = talk(cfg, "192.0.2.1", msg, &td);
	ATF_CHECK_MATCH("354 .*\n554 5.6.0 Error: NUL byte in header\n221", r);
	free(r);

	td_init(&td);
	cleanup_reply_set(&td.next, CLEANUP_STAT_PERM, "5.3.4", "message too big");
	r = talk(cfg, "192.0.2.1", msg, &td);
	ATF_CHECK_MATCH("354 .*\n552 5.3.4 Error: message too big\n221", r);
	free(r);
	smtpd_cfg_free(cfg);
}

/* The client goes away in the middle: the message is abandoned. */
ATF_TC_WITHOUT_HEAD(lost_connection);
ATF_TC_BODY(lost_connection, tc)
{
	smtpd_cfg_t *cfg = cfg_with(NULL);
	tdest_t td;
	char *r, *log;

	log_into("log");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nDATA\r\npartial\r\nline", &td);
	log = slurp("log");
	log_to_stderr();
	ATF_CHECK_EQ(td.aborts, 1);
	ATF_CHECK_EQ(td.finishes, 0);
	ATF_CHECK_MATCH("lost connection after DATA \\(9 bytes\\) from unknown\\[192.0.2.1\\]", log);
	free(r);
	free(log);
	smtpd_cfg_free(cfg);
}

/* Access tables, client and sender checks, smtpd_delay_reject. */
ATF_TC_WITHOUT_HEAD(restrictions);
ATF_TC_BODY(restrictions, tc)
{
	smtpd_cfg_t *cfg = cfg_with(
	    "smtpd_client_restrictions = check_client_access "
	    "inline:{ {192.0.2.66=REJECT go away}, 192.0.2=OK }\n"
	    "smtpd_sender_restrictions = reject_non_fqdn_sender, check_sender_access "
	    "inline:{ {spammer@example.org=550 5.7.9 not you} }\n"
	    "smtpd_recipient_restrictions = check_recipient_access "
	    "inline:{ {alice@mx.example.test = DEFER busy} }, reject_non_fqdn_recipient\n");
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.66", "HELO c\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<bob@mx.example.test>\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "250 mx.example.test\n250 2.1.0 Ok\n"
	    "554 5.7.1 <unknown[192.0.2.66]>: Client host rejected: go away\n"
	    "221 2.0.0 Bye\n");
	free(r);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<spammer@example.org>\r\n"
	    "RCPT TO:<bob@mx.example.test>\r\nRSET\r\nMAIL FROM:<a@example>\r\n"
	    "RCPT TO:<bob@mx.example.test>\r\nRSET\r\nMAIL FROM:<>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nRCPT TO:<bob@mx.example.test>\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "250 mx.example.test\n250 2.1.0 Ok\n"
	    "550 5.7.9 <spammer@example.org>: Sender address rejected: not you\n"
	    "250 2.0.0 Ok\n250 2.1.0 Ok\n"
	    "504 5.5.2 <a@example>: Sender address rejected: need fully-qualified address\n"
	    "250 2.0.0 Ok\n250 2.1.0 Ok\n"
	    "450 4.7.1 <alice@mx.example.test>: Recipient address rejected: busy\n"
	    "250 2.1.5 Ok\n221 2.0.0 Bye\n");
	free(r);
	smtpd_cfg_free(cfg);

	/* smtpd_delay_reject = no: the client is refused at MAIL, the
	 * sender at MAIL, the HELO at HELO. */
	cfg = cfg_with(
	    "smtpd_delay_reject = no\n"
	    "smtpd_client_restrictions = check_client_access inline:{ 192.0.2.66=REJECT }\n"
	    "smtpd_helo_restrictions = reject_invalid_helo_hostname, reject_non_fqdn_helo_hostname\n"
	    "smtpd_sender_restrictions = check_sender_access inline:{ spammer@example.org=REJECT }\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.66", "HELO c.example\r\nMAIL FROM:<a@example.org>\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "250 mx.example.test\n"
	    "554 5.7.1 <unknown[192.0.2.66]>: Client host rejected: Access denied\n"
	    "221 2.0.0 Bye\n");
	free(r);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nHELO bad_name.example\r\nHELO [1.2.3.4]\r\n"
	    "HELO c.example\r\nMAIL FROM:<spammer@example.org>\r\nQUIT\r\n", &td);
	CHECK_REPLIES(r, "504 5.5.2 <c>: Helo command rejected: need fully-qualified hostname\n"
	    "501 5.5.2 <bad_name.example>: Helo command rejected: Invalid name\n"
	    "250 mx.example.test\n250 mx.example.test\n"
	    "554 5.7.1 <spammer@example.org>: Sender address rejected: Access denied\n"
	    "221 2.0.0 Bye\n");
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(data_restrictions);
ATF_TC_BODY(data_restrictions, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_data_restrictions = reject\n");
	tdest_t td;
	char *r;

	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nDATA\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("250 2.1.5 Ok\n554 5.7.1 <DATA>: Data command rejected: Access denied\n221", r);
	ATF_CHECK_EQ(td.opens, 0);
	free(r);
	smtpd_cfg_free(cfg);

	cfg = cfg_with("smtpd_end_of_data_restrictions = defer\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<a@example.org>\r\n"
	    "RCPT TO:<alice@mx.example.test>\r\nDATA\r\nx\r\n.\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("354 .*\n450 4.7.1 <END-OF-MESSAGE>: End-of-data rejected: Access denied\n221", r);
	ATF_CHECK_EQ(td.aborts, 1);
	ATF_CHECK_EQ(td.finishes, 0);
	free(r);
	smtpd_cfg_free(cfg);
}

/* smtpd_tls_security_level = encrypt without a usable certificate:
 * no mail at all, and STARTTLS says why. */
ATF_TC_WITHOUT_HEAD(encrypt_without_cert);
ATF_TC_BODY(encrypt_without_cert, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_tls_security_level = encrypt\n"
	    "smtpd_tls_cert_file = /nonexistent/cert.pem\n");
	tdest_t td;
	char *r;

	ATF_CHECK(cfg->tls == NULL && cfg->tls_error != NULL);
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "EHLO c\r\nMAIL FROM:<a@example.org>\r\nSTARTTLS\r\nQUIT\r\n", &td);
	ATF_CHECK_MSG(strstr(r, "STARTTLS\n") == NULL, "%s", r);
	ATF_CHECK_MATCH("530 5.7.0 Must issue a STARTTLS command first\n"
	    "454 4.7.0 TLS not available due to local problem\n221", r);
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TC_WITHOUT_HEAD(unlisted);
ATF_TC_BODY(unlisted, tc)
{
	smtpd_cfg_t *cfg;
	tdest_t td;
	char *r;

	/* No local_recipient_maps: everyone at our domains is accepted. */
	cfg = cfg_with("local_recipient_maps =\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<>\r\nRCPT TO:<zed@mx.example.test>\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("250 2.1.5 Ok\n", r);
	free(r);
	smtpd_cfg_free(cfg);

	/* A table that cannot be read: 451, never 550. */
	cfg = cfg_with("local_recipient_maps = texthash:/nonexistent/users\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<>\r\nRCPT TO:<zed@mx.example.test>\r\n"
	    "RCPT TO:<postmaster@mx.example.test>\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("451 4.3.0 <zed@mx.example.test>: Temporary lookup failure\n"
	    "250 2.1.5 Ok\n", r);
	free(r);
	smtpd_cfg_free(cfg);

	/* The passwd database: root exists on every system we run on. */
	cfg = cfg_with("local_recipient_maps = unix:passwd.byname\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<>\r\nRCPT TO:<root@mx.example.test>\r\n"
	    "RCPT TO:<ROOT@localhost>\r\nRCPT TO:<no-such-user-here@localhost>\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("250 2.1.5 Ok\n250 2.1.5 Ok\n550 5.1.1 <no-such-user-here@localhost>", r);
	free(r);
	smtpd_cfg_free(cfg);

	/* smtpd_reject_unlisted_recipient = no: not checked unless listed
	 * as a restriction. */
	cfg = cfg_with("smtpd_reject_unlisted_recipient = no\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<>\r\nRCPT TO:<zed@mx.example.test>\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("250 2.1.5 Ok\n", r);
	free(r);
	smtpd_cfg_free(cfg);
	cfg = cfg_with("smtpd_reject_unlisted_recipient = no\n"
	    "smtpd_recipient_restrictions = reject_unlisted_recipient\n");
	td_init(&td);
	r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<>\r\nRCPT TO:<zed@mx.example.test>\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("550 5.1.1 <zed@mx.example.test>: Recipient address rejected: User unknown", r);
	free(r);
	smtpd_cfg_free(cfg);
}

/* Stand-alone (smtpd -S): a local user; no relay control. */
ATF_TC_WITHOUT_HEAD(stand_alone);
ATF_TC_BODY(stand_alone, tc)
{
	smtpd_cfg_t *cfg = cfg_with("smtpd_tls_security_level = encrypt\n");
	memio_t m = { NULL, 0, 0, 0, STR_INIT };
	const char *in = "EHLO me\r\nMAIL FROM:<me@example.org>\r\n"
	    "RCPT TO:<anyone@elsewhere.example>\r\nDATA\r\nhi\r\n.\r\nQUIT\r\n";
	smtpd_peer_t peer;
	stream_t *s = stream_open(-1);
	tdest_t td;

	td_init(&td);
	m.in = in;
	m.len = strlen(in);
	smtpd_peer_stand_alone(&peer);
	ATF_REQUIRE(stream_set_io(s, &m_io, &m) == 0);
	ATF_CHECK_EQ(smtpd_session_run(cfg, s, &peer, &td.base, NULL), 1);
	char *r = replies(str_cstr(&m.out));
	ATF_CHECK_MSG(strstr(r, "STARTTLS") == NULL, "%s", r);
	ATF_CHECK_MATCH("250 2.1.5 Ok\n354 .*\n250 2.0.0 Ok: queued as QID1\n221", r);
	ATF_CHECK_MATCH("client=localhost\\[127.0.0.1\\] port=- ", str_cstr(td.env));
	free(r);
	str_release(&m.out);
	smtpd_cfg_free(cfg);
}

/* Configurations that would make an open relay, or are broken, are
 * refused at start-up. */
ATF_TC_WITHOUT_HEAD(pconfig_errors);
ATF_TC_BODY(pconfig_errors, tc)
{
	static const struct {
		const char *cf, *err;
	} cases[] = {
		{ "smtpd_relay_restrictions = permit_mynetworks\n",
		  "refusing to run as an open relay" },
		{ "smtpd_relay_restrictions =\nsmtpd_recipient_restrictions = permit\n",
		  "refusing to run as an open relay" },
		{ "smtpd_recipient_restrictions = reject_everything\n",
		  "smtpd_recipient_restrictions: unknown restriction \"reject_everything\"" },
		{ "smtpd_recipient_restrictions = check_recipient_access\n",
		  "check_recipient_access needs a type:table argument" },
		{ "mynetworks = 127.0.0.1/8\n", "non-null host address bits" },
		{ "mynetworks = 300.0.0.0/8\n", "bad network pattern" },
		{ "mydestination = /etc/x\n", "mydestination" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		str_t text = STR_INIT, err = STR_INIT;
		str_set(&text, BASE_CF);
		str_cat(&text, cases[i].cf);
		ATF_REQUIRE(pconfig_load_text(str_cstr(&text), "main.cf") == 0);
		smtpd_cfg_t *cfg = smtpd_cfg_load(&err);
		ATF_CHECK_MSG(cfg == NULL, "%s accepted", cases[i].cf);
		ATF_CHECK_MSG(strstr(str_cstr(&err), cases[i].err) != NULL,
		    "%s: got \"%s\"", cases[i].cf, str_cstr(&err));
		smtpd_cfg_free(cfg);
		str_release(&text);
		str_release(&err);
	}
	/* The relay restriction may live in smtpd_recipient_restrictions. */
	smtpd_cfg_t *cfg = cfg_with("smtpd_relay_restrictions =\n"
	    "smtpd_recipient_restrictions = permit_mynetworks, reject_unauth_destination\n");
	tdest_t td;
	td_init(&td);
	char *r = talk(cfg, "192.0.2.1", "HELO c\r\nMAIL FROM:<>\r\nRCPT TO:<x@elsewhere.example>\r\nQUIT\r\n", &td);
	ATF_CHECK_MATCH("554 5.7.1 <x@elsewhere.example>: Relay access denied", r);
	free(r);
	smtpd_cfg_free(cfg);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, transaction);
	ATF_TP_ADD_TC(tp, helo_smtp);
	ATF_TP_ADD_TC(tp, out_of_order);
	ATF_TP_ADD_TC(tp, syntax);
	ATF_TP_ADD_TC(tp, long_command);
	ATF_TP_ADD_TC(tp, pipelining);
	ATF_TP_ADD_TC(tp, relay);
	ATF_TP_ADD_TC(tp, reject_log);
	ATF_TP_ADD_TC(tp, size_limit);
	ATF_TP_ADD_TC(tp, long_data_line);
	ATF_TP_ADD_TC(tp, bare_lf);
	ATF_TP_ADD_TC(tp, recipient_limit);
	ATF_TP_ADD_TC(tp, error_limits);
	ATF_TP_ADD_TC(tp, junk_commands);
	ATF_TP_ADD_TC(tp, helo_required);
	ATF_TP_ADD_TC(tp, vrfy);
	ATF_TP_ADD_TC(tp, help_and_others);
	ATF_TP_ADD_TC(tp, non_smtp);
	ATF_TP_ADD_TC(tp, dsn_and_utf8);
	ATF_TP_ADD_TC(tp, bdat);
	ATF_TP_ADD_TC(tp, dest_failures);
	ATF_TP_ADD_TC(tp, lost_connection);
	ATF_TP_ADD_TC(tp, restrictions);
	ATF_TP_ADD_TC(tp, data_restrictions);
	ATF_TP_ADD_TC(tp, encrypt_without_cert);
	ATF_TP_ADD_TC(tp, unlisted);
	ATF_TP_ADD_TC(tp, stand_alone);
	ATF_TP_ADD_TC(tp, pconfig_errors);
	return atf_no_error();
}
