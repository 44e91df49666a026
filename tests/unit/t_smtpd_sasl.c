/* smtpd's Dovecot authentication client against a scripted server on a
 * UNIX socket in the test's directory: what a real Dovecot never sends
 * (wrong request IDs, over-long lines, NUL bytes, a foreign protocol
 * version, silence, hang-ups) must give a temporary failure and a
 * closed connection, never a hang or a success; and what the client
 * sends is exactly the protocol (checked line by line).  The real
 * exchange with Dovecot is tests/system/t_smtpd_auth. */
#include <atf-c.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "smtpd/smtpd.h"

#define SOCK "auth.sock"
#define HELLO "VERSION\t1\t2\nMECH\tPLAIN\tplaintext\nMECH\tLOGIN\tplaintext\n" \
	"MECH\tANONYMOUS\tanonymous\nMECH\tSCRAM-SHA-1\tmutual-auth\tdictionary\n" \
	"SPID\t1\nCUID\t1\nCOOKIE\tabc\nDONE\n"

/* The server: steps of a script.  "A" accept a connection, "<" read one
 * line into ./got, ">TEXT" send TEXT, "Z" sleep 3 s, "C" close. */
static void serve(int ls, const char *const *script)
{
	FILE *got = fopen("got", "a");
	int fd = -1;
	char buf[1];

	for (; *script; script++) {
		const char *st = *script;
		switch (st[0]) {
		case 'A':
			fd = accept(ls, NULL, NULL);
			break;
		case '<': {
			ssize_t n;
			while ((n = read(fd, buf, 1)) == 1 && buf[0] != '\n')
				fputc(buf[0], got);
			fputc('\n', got);
			fflush(got);
			break;
		}
		case '>':
			(void)!write(fd, st + 1, strlen(st + 1));
			break;
		case 'Z':
			sleep(3);
			break;
		case 'C':
			close(fd);
			fd = -1;
			break;
		}
	}
	fclose(got);
	sleep(5);		/* keep the last connection open */
}

static pid_t server(const char *const *script)
{
	int ls;
	pid_t pid;

	unlink(SOCK);
	unlink("got");
	ls = sock_unix_listen(SOCK, 5, 0600);
	ATF_REQUIRE(ls >= 0);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		serve(ls, script);
		_exit(0);
	}
	close(ls);
	return pid;
}

static void server_done(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* What the client sent, lines joined with "|". */
static char *sent(void)
{
	static char buf[4096];
	FILE *f = fopen("got", "r");
	size_t n = 0;
	int c;

	buf[0] = 0;
	if (f == NULL)
		return buf;
	while ((c = fgetc(f)) != EOF && n + 1 < sizeof(buf))
		buf[n++] = c == '\n' ? '|' : (char)c;
	buf[n] = 0;
	fclose(f);
	return buf;
}

static const smtpd_sasl_req_t plain_req = {
	.mech = "PLAIN", .resp = "AGFsaWNlAHB3",
	.client_addr = "192.0.2.1", .client_port = "4567",
	.local_addr = "192.0.2.25", .secured = true,
};

static void setup(void)
{
	log_init("t_smtpd_sasl");
	(void)log_to_file("log");
	signal(SIGPIPE, SIG_IGN);
}

ATF_TC_WITHOUT_HEAD(exchange);
ATF_TC_BODY(exchange, tc)
{
	static const char *const script[] = {
		"A", "<", "<", ">" HELLO,
		"<", ">OK\t1\tuser=al\001tice\tanother=x\n",
		"<", ">CONT\t2\tVXNlcm5hbWU6\n",
		"<", ">CONT\t2\t\n",
		"<", ">FAIL\t2\treason=bad\001npassword\tuser=bob\n",
		"<", ">FAIL\t3\ttemp\treason=db down\n",
		"<", ">OK\t4\tuser=carol\tresp=ZmluYWw=\n",
		NULL,
	};
	smtpd_sasl_backend_t *b;
	const smtpd_sasl_mech_t *m;
	size_t n;
	str_t out = STR_INIT, user = STR_INIT, why = STR_INIT;
	pid_t pid;

	setup();
	pid = server(script);
	b = smtpd_sasl_dovecot(SOCK, "smtp", 5000);
	ATF_REQUIRE_MSG(b->mechs(b, &m, &n, &why) == 0, "%s", str_cstr(&why));
	ATF_REQUIRE_EQ(n, 4);
	ATF_CHECK_STREQ(m[0].name, "PLAIN");
	ATF_CHECK_EQ(m[0].props, SMTPD_SASL_P_PLAINTEXT);
	ATF_CHECK_STREQ(m[2].name, "ANONYMOUS");
	ATF_CHECK_EQ(m[2].props, SMTPD_SASL_P_ANONYMOUS);
	ATF_CHECK_STREQ(m[3].name, "SCRAM-SHA-1");
	ATF_CHECK_EQ(m[3].props, SMTPD_SASL_P_MUTUAL_AUTH | SMTPD_SASL_P_DICTIONARY);

	ATF_CHECK_EQ(b->start(b, &plain_req, &out, &user), SMTPD_SASL_OK);
	ATF_CHECK_STREQ(str_cstr(&user), "al\tice");
	ATF_CHECK_STREQ(str_cstr(&out), "");

	smtpd_sasl_req_t r = { .mech = "LOGIN", .client_addr = "2001:db8::1" };
	ATF_CHECK_EQ(b->start(b, &r, &out, &user), SMTPD_SASL_CONT);
	ATF_CHECK_STREQ(str_cstr(&out), "VXNlcm5hbWU6");
	ATF_CHECK_EQ(b->next(b, "Ym9i", &out, &user), SMTPD_SASL_CONT);
	ATF_CHECK_STREQ(str_cstr(&out), "");
	ATF_CHECK_EQ(b->next(b, "", &out, &user), SMTPD_SASL_FAIL);
	ATF_CHECK_STREQ(str_cstr(&out), "bad\npassword");
	ATF_CHECK_STREQ(str_cstr(&user), "bob");

	r.resp = "";
	r.mech = "PLAIN";
	ATF_CHECK_EQ(b->start(b, &r, &out, &user), SMTPD_SASL_TEMP);
	ATF_CHECK_STREQ(str_cstr(&out), "db down");
	ATF_CHECK_EQ(b->start(b, &r, &out, &user), SMTPD_SASL_OK);
	ATF_CHECK_STREQ(str_cstr(&out), "ZmluYWw=");
	ATF_CHECK_STREQ(str_cstr(&user), "carol");

	ATF_CHECK_MATCH("^VERSION\t1\t1\\|CPID\t[0-9]+\\|"
	    "AUTH\t1\tPLAIN\tservice=smtp\tnologin\tlip=192.0.2.25\trip=192.0.2.1\t"
	    "rport=4567\tsecured\tresp=AGFsaWNlAHB3\\|"
	    "AUTH\t2\tLOGIN\tservice=smtp\tnologin\trip=2001:db8::1\\|"
	    "CONT\t2\tYm9i\\|CONT\t2\t\\|"
	    "AUTH\t3\tPLAIN\tservice=smtp\tnologin\trip=2001:db8::1\tresp=\\|"
	    "AUTH\t4\tPLAIN\tservice=smtp\tnologin\trip=2001:db8::1\tresp=\\|$", sent());
	b->free(b);
	server_done(pid);
	str_release(&out);
	str_release(&user);
	str_release(&why);
}

/* One hostile reply after a good handshake: a temporary failure, the
 * connection dropped (the next request makes a new one, which the
 * script does not accept: so it fails too, at once). */
static void one_bad(const char *reply, const char *log_re)
{
	const char *script[] = { "A", "<", "<", ">" HELLO, "<", reply, NULL };
	smtpd_sasl_backend_t *b;
	str_t out = STR_INIT, user = STR_INIT;
	pid_t pid = server(script);

	b = smtpd_sasl_dovecot(SOCK, "smtp", 2000);
	ATF_CHECK_EQ_MSG(b->start(b, &plain_req, &out, &user), SMTPD_SASL_TEMP,
	    "%s", reply);
	ATF_CHECK_STREQ(str_cstr(&out), "Connection lost to authentication server");
	ATF_CHECK_STREQ(str_cstr(&user), "");
	b->free(b);
	server_done(pid);
	FILE *f = fopen("log", "r");
	char line[512];
	bool found = false;
	ATF_REQUIRE(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, log_re))
			found = true;
	fclose(f);
	ATF_CHECK_MSG(found, "no \"%s\" in the log", log_re);
	str_release(&out);
	str_release(&user);
}

ATF_TC_WITHOUT_HEAD(hostile_replies);
ATF_TC_BODY(hostile_replies, tc)
{
	static char longline[20002];

	setup();
	one_bad(">OK\t7\tuser=mallory\n", "reply for another request (OK 7)");
	one_bad(">OK\t1\n", "OK without a user name");
	one_bad(">CONT\t1\tnot base64!\n", "malformed CONT reply");
	one_bad(">HELLO\t1\n", "unexpected reply \"HELLO\"");
	one_bad(">OK\t1\tuser=x\tresp=%%%\n", "malformed final response");
	one_bad(">\n", "reply for another request");
	memset(longline, 'A', sizeof(longline) - 2);
	memcpy(longline, ">CONT\t1\t", 8);
	longline[sizeof(longline) - 2] = '\n';
	one_bad(longline, "reply longer than 16384 bytes");
	one_bad("C", "connection closed");
}

ATF_TC_WITHOUT_HEAD(hostile_handshakes);
ATF_TC_BODY(hostile_handshakes, tc)
{
	static const struct {
		const char *hello, *why;
	} cases[] = {
		{ "VERSION\t2\t0\nDONE\n", "unsupported protocol version 2" },
		{ "MECH\tPLAIN\nDONE\n", "malformed MECH line" },
		{ "VERSION\t1\t2\nMECH\tPL AIN\nDONE\n", "malformed MECH line" },
		{ "VERSION\t1\t2\nMECH\t\nDONE\n", "malformed MECH line" },
		{ "DONE\n", "no VERSION line" },
		{ "VERSION\t1\t2\nMECH\tPLAIN", "connection closed" },
	};
	setup();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char reply[256];
		snprintf(reply, sizeof(reply), ">%s", cases[i].hello);
		const char *script[] = { "A", "<", "<", reply, "C", NULL };
		const smtpd_sasl_mech_t *m;
		size_t n;
		str_t why = STR_INIT;
		pid_t pid = server(script);
		smtpd_sasl_backend_t *b = smtpd_sasl_dovecot(SOCK, "smtp", 2000);
		ATF_CHECK_EQ_MSG(b->mechs(b, &m, &n, &why), -1, "%s", cases[i].hello);
		ATF_CHECK_MSG(strstr(str_cstr(&why), cases[i].why) != NULL,
		    "%s: %s", cases[i].hello, str_cstr(&why));
		b->free(b);
		server_done(pid);
		str_release(&why);
	}
}

/* A server that does not answer: each step is bounded by the timeout,
 * and for a while after that no new connection is tried (EHLO must not
 * wait again and again).  A server that hung up on a kept connection:
 * one new connection, at once. */
ATF_TC_WITHOUT_HEAD(silence_and_hangup);
ATF_TC_BODY(silence_and_hangup, tc)
{
	static const char *const mute[] = { "A", "<", "<", ">" HELLO, "<",
	    "Z", NULL };
	static const char *const hangup[] = { "A", "<", "<", ">" HELLO, "C",
	    "A", "<", "<", ">" HELLO, "<", ">OK\t1\tuser=alice\n", NULL };
	str_t out = STR_INIT, user = STR_INIT, why = STR_INIT;
	const smtpd_sasl_mech_t *m;
	size_t n;
	struct timespec t0, t1;
	pid_t pid;
	smtpd_sasl_backend_t *b;

	setup();
	pid = server(mute);
	b = smtpd_sasl_dovecot(SOCK, "smtp", 1000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ATF_CHECK_EQ(b->start(b, &plain_req, &out, &user), SMTPD_SASL_TEMP);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ATF_CHECK_MSG(t1.tv_sec - t0.tv_sec <= 2, "took %ld s",
	    (long)(t1.tv_sec - t0.tv_sec));
	ATF_CHECK(b->mechs(b, &m, &n, &why) == -1);
	ATF_CHECK_MATCH("timed out less than 10 seconds ago", str_cstr(&why));
	b->free(b);
	server_done(pid);

	pid = server(hangup);
	b = smtpd_sasl_dovecot(SOCK, "smtp", 2000);
	ATF_REQUIRE(b->mechs(b, &m, &n, &why) == 0);
	/* The server hung up the kept connection: the start goes to a
	 * new one. */
	ATF_CHECK_EQ(b->start(b, &plain_req, &out, &user), SMTPD_SASL_OK);
	ATF_CHECK_STREQ(str_cstr(&user), "alice");
	b->free(b);
	server_done(pid);

	/* No server at all. */
	unlink(SOCK);
	b = smtpd_sasl_dovecot(SOCK, "smtp", 1000);
	ATF_CHECK_EQ(b->start(b, &plain_req, &out, &user), SMTPD_SASL_TEMP);
	ATF_CHECK(b->mechs(b, &m, &n, &why) == -1);
	ATF_CHECK_MATCH("cannot connect to auth.sock: No such file", str_cstr(&why));
	b->free(b);
	str_release(&out);
	str_release(&user);
	str_release(&why);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, exchange);
	ATF_TP_ADD_TC(tp, hostile_replies);
	ATF_TP_ADD_TC(tp, hostile_handshakes);
	ATF_TP_ADD_TC(tp, silence_and_hangup);
	return atf_no_error();
}
