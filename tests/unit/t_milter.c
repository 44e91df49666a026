/* The milter client (libglobal/milter.c): framing, negotiation, each
 * reply, macros, content, modifications and failures, against a milter
 * end written here.  The milter runs in a child process on a UNIX socket
 * in the test's directory and follows a script; it checks what the
 * client sends and exits non-zero (with the reason on stderr) when it is
 * not what the script says. */
#include <arpa/inet.h>
#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "milter.h"
#include "sock.h"
#include "str.h"

#define SOCK "m.sock"

/* ---- The milter end ------------------------------------------------ */

static int mfd = -1;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
    noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(1);
}

/* Reads one packet; macro packets are kept in *macros (may be NULL). */
static int next(str_t *data, str_t *macros)
{
	str_t why = STR_INIT;
	int cmd;

	for (;;) {
		if (milter_read_packet(mfd, 10000, 1 << 20, &cmd, data, &why) < 0)
			die("milter end: %s", str_cstr(&why));
		if (cmd != SMFIC_MACRO)
			break;
		if (macros != NULL)
			str_append(macros, data->buf, data->len);
	}
	str_release(&why);
	return cmd;
}

static void expect(int want, str_t *data)
{
	str_t d = STR_INIT;
	int cmd = next(data ? data : &d, NULL);

	if (cmd != want)
		die("milter end: got command '%c', want '%c'", cmd, want);
	str_release(&d);
}

static void send_pkt(int cmd, const void *data, size_t len)
{
	str_t out = STR_INIT;

	milter_packet(&out, cmd, data, len);
	if (write(mfd, out.buf, out.len) != (ssize_t)out.len)
		die("milter end: write: %s", strerror(errno));
	str_release(&out);
}

/* One command expected, one reply without data. */
static void step(int cmd, int reply)
{
	expect(cmd, NULL);
	send_pkt(reply, NULL, 0);
}

static void send_str(int cmd, const char *s)
{
	send_pkt(cmd, s, strlen(s) + 1);
}

/* The negotiation reply: version, actions, steps, then macro lists
 * ("stage\0names" pairs as stage numbers and strings). */
static void negotiate(uint32_t version, uint32_t actions, uint32_t steps,
    const char *const *lists)
{
	str_t d = STR_INIT, r = STR_INIT;
	uint32_t v[3];

	expect(SMFIC_OPTNEG, &d);
	if (d.len != 12)
		die("option negotiation of %zu bytes", d.len);
	memcpy(v, d.buf, 12);
	if (ntohl(v[0]) != 6)
		die("MTA version %u", ntohl(v[0]));
	v[0] = htonl(version);
	v[1] = htonl(actions);
	v[2] = htonl(steps);
	str_append(&r, v, 12);
	for (size_t i = 0; lists != NULL && lists[i] != NULL; i += 2) {
		uint32_t st = htonl((uint32_t)atoi(lists[i]));
		str_append(&r, &st, 4);
		str_append(&r, lists[i + 1], strlen(lists[i + 1]) + 1);
	}
	send_pkt(SMFIC_OPTNEG, r.buf, r.len);
	str_release(&d);
	str_release(&r);
}

typedef void (*script_fn)(void);

/* Starts a milter end on path running script; returns its pid. */
static pid_t milter_start_at(const char *path, script_fn script)
{
	int lfd = sock_unix_listen(path, 5, 0600);
	pid_t pid;

	ATF_REQUIRE(lfd >= 0);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		alarm(20);
		mfd = sock_accept(lfd, NULL, NULL);
		if (mfd < 0)
			die("accept: %s", strerror(errno));
		script();
		_exit(0);
	}
	close(lfd);
	return pid;
}

static pid_t milter_start(script_fn script)
{
	return milter_start_at(SOCK, script);
}

static void milter_done(pid_t pid)
{
	int st;

	ATF_REQUIRE(waitpid(pid, &st, 0) == pid);
	ATF_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "the milter end failed (status 0x%x)", st);
	unlink(SOCK);
}

static milter_params_t params(int timeout_s, enum milter_defact d)
{
	milter_params_t p;

	memset(&p, 0, sizeof(p));
	p.connect_ms = p.command_ms = p.content_ms = timeout_s * 1000;
	p.default_action = d;
	p.protocol = 6;
	p.actions = 0x1ff;
	p.macros[MILTER_M_CONNECT] = "j {client_addr}";
	p.macros[MILTER_M_MAIL] = "{mail_addr}";
	return p;
}

static milters_t *client(const char *list, int timeout_s,
    enum milter_defact d)
{
	str_t err = STR_INIT;
	milter_params_t p = params(timeout_s, d);
	milters_t *ms = milters_new(list, &p, &err);

	ATF_REQUIRE_MSG(ms != NULL, "%s", str_cstr(&err));
	str_release(&err);
	return ms;
}

static const char *macro(void *ctx, const char *name)
{
	(void)ctx;
	if (strcmp(name, "j") == 0)
		return "mx.example";
	if (strcmp(name, "{client_addr}") == 0)
		return "192.0.2.1";
	if (strcmp(name, "i") == 0)
		return "QID1";
	return NULL;		/* {mail_addr} and the rest: not sent */
}

static enum milter_verdict connect_ok(milters_t *ms, milter_reply_t *r)
{
	milters_set_macros(ms, macro, NULL);
	return milters_connect(ms, "client.example", "192.0.2.1", 4711, 4, r);
}

/* ---- Framing -------------------------------------------------------- */

ATF_TC_WITHOUT_HEAD(framing);
ATF_TC_BODY(framing, tc)
{
	int sv[2], cmd;
	str_t out = STR_INIT, data = STR_INIT, why = STR_INIT;
	const char bad0[4] = { 0, 0, 0, 0 };
	const char big[4] = { 0, 0x10, 0, 0 };	/* 1 MiB + */
	const char shrt[6] = { 0, 0, 0, 9, 'c', 'x' };

	milter_packet(&out, SMFIC_HELO, "h\0", 2);
	ATF_CHECK_EQ(out.len, 7);
	ATF_CHECK(memcmp(out.buf, "\0\0\0\3Hh\0", 7) == 0);

	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	ATF_REQUIRE(write(sv[1], out.buf, out.len) == 7);
	ATF_CHECK(milter_read_packet(sv[0], 1000, 100, &cmd, &data, &why) == 0);
	ATF_CHECK_EQ(cmd, 'H');
	ATF_CHECK(data.len == 2 && memcmp(data.buf, "h\0", 2) == 0);
	/* length 0 */
	ATF_REQUIRE(write(sv[1], bad0, 4) == 4);
	ATF_CHECK(milter_read_packet(sv[0], 1000, 100, &cmd, &data, &why) < 0);
	ATF_CHECK(strstr(str_cstr(&why), "length 0") != NULL);
	/* over the limit */
	ATF_REQUIRE(write(sv[1], big, 4) == 4);
	ATF_CHECK(milter_read_packet(sv[0], 1000, 65536, &cmd, &data, &why) < 0);
	ATF_CHECK_MSG(strstr(str_cstr(&why), "more than") != NULL, "%s",
	    str_cstr(&why));
	close(sv[0]);
	close(sv[1]);
	/* nothing: timeout, bounded */
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	time_t t0 = time(NULL);
	ATF_CHECK(milter_read_packet(sv[0], 300, 100, &cmd, &data, &why) < 0);
	ATF_CHECK(strstr(str_cstr(&why), "timeout") != NULL);
	ATF_CHECK(time(NULL) - t0 <= 2);
	/* short: closed inside a packet */
	ATF_REQUIRE(write(sv[1], shrt, 6) == 6);
	close(sv[1]);
	ATF_CHECK(milter_read_packet(sv[0], 1000, 100, &cmd, &data, &why) < 0);
	ATF_CHECK_MSG(strstr(str_cstr(&why), "short") != NULL, "%s",
	    str_cstr(&why));
	close(sv[0]);
	str_release(&out);
	str_release(&data);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(replycode_text);
ATF_TC_BODY(replycode_text, tc)
{
	int code = 0;

	ATF_CHECK(milter_replycode_ok("550 5.7.1 no", 12, &code) && code == 550);
	ATF_CHECK(milter_replycode_ok("451-4.7.1 a\r\n451 4.7.1 b", 24, &code) &&
	    code == 451);
	ATF_CHECK(!milter_replycode_ok("250 ok", 6, &code));
	ATF_CHECK(!milter_replycode_ok("550-a\r\n451 b", 12, &code));
	ATF_CHECK(!milter_replycode_ok("550-a", 5, &code));
	ATF_CHECK(!milter_replycode_ok("550 a\r\n550 b", 12, &code));
	ATF_CHECK(!milter_replycode_ok("550 a\r\n", 7, &code));
	ATF_CHECK(!milter_replycode_ok("55x a", 5, &code));
	ATF_CHECK(!milter_replycode_ok("550 a\tb", 7, &code));
	ATF_CHECK(!milter_replycode_ok("", 0, &code));
}

ATF_TC_WITHOUT_HEAD(list_syntax);
ATF_TC_BODY(list_syntax, tc)
{
	str_t why = STR_INIT;
	milter_params_t p = params(30, MILTER_DEF_TEMPFAIL);
	milters_t *ms;

	ATF_CHECK(milter_list_check("", &why));
	ATF_CHECK(milter_list_check("inet:127.0.0.1:8891, unix:/run/x.sock "
	    "inet:[::1]:11332", &why));
	ATF_CHECK(milter_list_check("{ inet:127.0.0.1:8891, connect_timeout=10s, "
	    "default_action=accept, protocol=6 } unix:/y", &why));
	ATF_CHECK(!milter_list_check("inet:127.0.0.1", &why));
	ATF_CHECK(strstr(str_cstr(&why), "inet:host:port") != NULL);
	ATF_CHECK(!milter_list_check("tcp:1.2.3.4:5", &why));
	ATF_CHECK(!milter_list_check("{ unix:/x, default_action=maybe }", &why));
	ATF_CHECK(!milter_list_check("{ unix:/x, protocol=7 }", &why));
	ATF_CHECK(!milter_list_check("{ unix:/x, command_timeout=0 }", &why));
	ATF_CHECK(!milter_list_check("{ unix:/x, nosuch=1 }", &why));
	ATF_CHECK(strstr(str_cstr(&why), "unknown milter setting") != NULL);
	ATF_CHECK(!milter_list_check("{ unix:/x", &why));
	ATF_CHECK(!milter_list_check("{ }", &why));
	ms = milters_new("unix:/a { inet:127.0.0.1:1, default_action=reject }",
	    &p, &why);
	ATF_REQUIRE(ms != NULL);
	ATF_CHECK_EQ(milters_count(ms), 2);
	milters_free(ms);
	str_release(&why);
}

/* ---- Negotiation and stages ----------------------------------------- */

static void s_stages(void)
{
	str_t d = STR_INIT, mac = STR_INIT;
	static const char *const lists[] = { "0", "j {client_addr}", "2", "i",
	    NULL };
	int cmd;

	negotiate(6, SMFIF_ADDHDRS, SMFIP_NR_HELO | SMFIP_NORCPT, lists);
	/* connect: macros first, then C host\0 '4' port address\0 */
	cmd = next(&d, &mac);
	if (cmd != SMFIC_CONNECT)
		die("want connect, got '%c'", cmd);
	static const char want_mac[] = "Cj\0mx.example\0{client_addr}\0"
	    "192.0.2.1";
	if (mac.len != sizeof(want_mac) || memcmp(mac.buf, want_mac,
	    sizeof(want_mac)))
		die("connect macros wrong (%zu bytes)", mac.len);
	if (d.len != 15 + 1 + 2 + 10 || memcmp(d.buf, "client.example\0" "4", 16) ||
	    (unsigned char)d.buf[16] != 4711 / 256 ||
	    (unsigned char)d.buf[17] != 4711 % 256 ||
	    memcmp(d.buf + 18, "192.0.2.1\0", 10))
		die("connect data wrong");
	send_pkt(SMFIR_CONTINUE, NULL, 0);
	/* helo without a reply (NR_HELO) */
	expect(SMFIC_HELO, &d);
	if (strcmp(d.buf, "helo.example") != 0)
		die("helo %s", d.buf);
	/* mail: the milter's list ("i") replaced the parameter's */
	str_reset(&mac);
	cmd = next(&d, &mac);
	if (cmd != SMFIC_MAIL)
		die("want mail, got '%c'", cmd);
	if (mac.len != 1 + 2 + 5 || memcmp(mac.buf, "Mi\0QID1\0", 8))
		die("mail macros wrong");
	if (d.len != 14 || memcmp(d.buf, "<a@b>\0SIZE=10\0", 14))
		die("mail args wrong");
	send_pkt(SMFIR_PROGRESS, NULL, 0);
	send_pkt(SMFIR_CONTINUE, NULL, 0);
	/* no RCPT (NORCPT): DATA next */
	step(SMFIC_DATA, SMFIR_CONTINUE);
	expect(SMFIC_QUIT, NULL);
	str_release(&d);
	str_release(&mac);
}

ATF_TC_WITHOUT_HEAD(stages_and_macros);
ATF_TC_BODY(stages_and_macros, tc)
{
	pid_t pid = milter_start(s_stages);
	milters_t *ms = client("unix:" SOCK, 5, MILTER_DEF_TEMPFAIL);
	milter_reply_t r = MILTER_REPLY_INIT;
	const char *mail[] = { "<a@b>", "SIZE=10", NULL };
	const char *rcpt[] = { "<c@d>", NULL };

	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_helo(ms, "helo.example", &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_rcpt(ms, rcpt, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_data(ms, &r), MILTER_CONTINUE);
	milters_free(ms);
	milter_done(pid);
	milter_reply_release(&r);
}

/* Each verdict once: reject, tempfail, reply code, discard, accept. */
static void s_verdicts(void)
{
	negotiate(2, 0, 0, NULL);
	step(SMFIC_CONNECT, SMFIR_CONTINUE);
	step(SMFIC_HELO, SMFIR_REJECT);
	step(SMFIC_HELO, SMFIR_TEMPFAIL);
	expect(SMFIC_MAIL, NULL);
	send_str(SMFIR_REPLYCODE, "553-5.7.1 first\r\n553 5.7.1 second");
	expect(SMFIC_ABORT, NULL);
	step(SMFIC_MAIL, SMFIR_CONTINUE);
	expect(SMFIC_RCPT, NULL);
	send_str(SMFIR_REPLYCODE, "452 4.5.3 later");
	step(SMFIC_RCPT, SMFIR_DISCARD);
	expect(SMFIC_ABORT, NULL);
	step(SMFIC_MAIL, SMFIR_ACCEPT);
	/* accepted for the message: nothing more until the next one */
	expect(SMFIC_ABORT, NULL);
	step(SMFIC_MAIL, SMFIR_CONTINUE);
	expect(SMFIC_QUIT, NULL);
}

ATF_TC_WITHOUT_HEAD(verdicts);
ATF_TC_BODY(verdicts, tc)
{
	pid_t pid = milter_start(s_verdicts);
	milters_t *ms = client("unix:" SOCK, 5, MILTER_DEF_TEMPFAIL);
	milter_reply_t r = MILTER_REPLY_INIT;
	const char *mail[] = { "<a@b>", NULL };
	const char *rcpt[] = { "<c@d>", NULL };

	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_helo(ms, "h", &r), MILTER_REJECT);
	ATF_CHECK_STREQ(str_cstr(&r.text), "550 5.7.1 Command rejected");
	ATF_CHECK_STREQ(r.who, "unix:" SOCK);
	ATF_CHECK_EQ(milters_helo(ms, "h", &r), MILTER_TEMPFAIL);
	ATF_CHECK_STREQ(str_cstr(&r.text),
	    "451 4.7.1 Service unavailable - try again later");
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_REJECT);
	ATF_CHECK_STREQ(str_cstr(&r.text), "553-5.7.1 first\r\n553 5.7.1 second");
	milters_abort(ms);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_rcpt(ms, rcpt, &r), MILTER_TEMPFAIL);
	ATF_CHECK_STREQ(str_cstr(&r.text), "452 4.5.3 later");
	ATF_CHECK_EQ(milters_rcpt(ms, rcpt, &r), MILTER_DISCARD);
	milters_abort(ms);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);	/* accept */
	ATF_CHECK_EQ(milters_rcpt(ms, rcpt, &r), MILTER_CONTINUE);	/* not asked */
	ATF_CHECK_EQ(milters_data(ms, &r), MILTER_CONTINUE);		/* v2: none */
	milters_abort(ms);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);
	milters_free(ms);
	milter_done(pid);
	milter_reply_release(&r);
}

/* ---- Content and modifications -------------------------------------- */

static void s_content(void)
{
	str_t d = STR_INIT, body = STR_INIT;
	int cmd, chunks = 0;
	uint32_t idx;
	str_t m = STR_INIT;

	negotiate(6, 0x1ff, SMFIP_SKIP, NULL);
	step(SMFIC_CONNECT, SMFIR_CONTINUE);
	step(SMFIC_MAIL, SMFIR_CONTINUE);
	step(SMFIC_DATA, SMFIR_CONTINUE);
	expect(SMFIC_HEADER, &d);
	if (d.len != 8 + 2 + 1 || memcmp(d.buf, "Subject\0hi\0", 11))
		die("first header wrong");
	send_pkt(SMFIR_CONTINUE, NULL, 0);
	expect(SMFIC_HEADER, &d);
	/* folded: lines joined with LF, leading space of the value gone */
	static const char want_fold[] = "X-Fold\0a\n\tb\n c";
	if (d.len != sizeof(want_fold) || memcmp(d.buf, want_fold,
	    sizeof(want_fold)))
		die("folded header wrong: %.*s", (int)d.len, d.buf);
	send_pkt(SMFIR_CONTINUE, NULL, 0);
	step(SMFIC_EOH, SMFIR_CONTINUE);
	while ((cmd = next(&d, NULL)) == SMFIC_BODY) {
		if (d.len > MILTER_CHUNK)
			die("body chunk of %zu bytes", d.len);
		str_append(&body, d.buf, d.len);
		chunks++;
		send_pkt(SMFIR_CONTINUE, NULL, 0);
	}
	if (cmd != SMFIC_BODYEOB)
		die("want end of body, got '%c'", cmd);
	if (chunks != 2 || body.len != 70000 ||
	    memcmp(body.buf, "line.\r\n", 7) != 0)
		die("body: %d chunks, %zu bytes", chunks, body.len);
	/* every modification */
	send_pkt(SMFIR_ADDHEADER, "X-Added\0v1", 11);
	str_reset(&m);
	idx = htonl(0);
	str_append(&m, &idx, 4);
	str_append(&m, "X-Ins\0v2\0", 9);
	send_pkt(SMFIR_INSHEADER, m.buf, m.len);
	str_reset(&m);
	idx = htonl(2);
	str_append(&m, &idx, 4);
	str_append(&m, "Subject\0\0", 9);
	send_pkt(SMFIR_CHGHEADER, m.buf, m.len);
	send_str(SMFIR_ADDRCPT, "<new@x>");
	send_pkt(SMFIR_ADDRCPT_PAR, "<p@x>\0NOTIFY=NEVER\0", 19);
	send_str(SMFIR_DELRCPT, "<old@x>");
	send_str(SMFIR_CHGFROM, "<s@x>");
	send_pkt(SMFIR_REPLBODY, "new ", 4);
	send_pkt(SMFIR_REPLBODY, "body\r\n", 6);
	send_str(SMFIR_QUARANTINE, "look at it");
	send_pkt(SMFIR_PROGRESS, NULL, 0);
	send_pkt(SMFIR_ACCEPT, NULL, 0);
	expect(SMFIC_QUIT, NULL);
	str_release(&d);
	str_release(&m);
	str_release(&body);
}

ATF_TC_WITHOUT_HEAD(content_and_edits);
ATF_TC_BODY(content_and_edits, tc)
{
	pid_t pid = milter_start(s_content);
	milters_t *ms = client("unix:" SOCK, 5, MILTER_DEF_TEMPFAIL);
	milter_reply_t r = MILTER_REPLY_INIT;
	milter_edits_t ed = MILTER_EDITS_INIT;
	const char *mail[] = { "<a@b>", NULL };
	str_t body = STR_INIT;
	const char *msg = "Subject: hi\r\nX-Fold: a\n\tb\r\n c\n\r\n";

	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_data(ms, &r), MILTER_CONTINUE);
	/* the header in small pieces, the body with bare LF */
	for (const char *p = msg; *p; ) {
		size_t n = strlen(p) < 3 ? strlen(p) : 3;
		ATF_CHECK_EQ(milters_content(ms, p, n, &r), MILTER_CONTINUE);
		p += n;
	}
	for (int i = 0; i < 10000; i++)
		str_cat(&body, "line.\n");
	ATF_CHECK_EQ(milters_content(ms, body.buf, body.len, &r),
	    MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_eom(ms, &ed, &r), MILTER_CONTINUE);
	ATF_REQUIRE_EQ(ed.n, 9);
	ATF_CHECK(ed.e[0].type == MILTER_E_ADDHDR &&
	    strcmp(ed.e[0].name, "X-Added") == 0 &&
	    strcmp(ed.e[0].value, "v1") == 0);
	ATF_CHECK(ed.e[1].type == MILTER_E_INSHDR && ed.e[1].index == 0 &&
	    strcmp(ed.e[1].name, "X-Ins") == 0);
	ATF_CHECK(ed.e[2].type == MILTER_E_CHGHDR && ed.e[2].index == 2 &&
	    ed.e[2].value[0] == '\0');
	ATF_CHECK(ed.e[3].type == MILTER_E_ADDRCPT &&
	    strcmp(ed.e[3].name, "<new@x>") == 0 && ed.e[3].value == NULL);
	ATF_CHECK(ed.e[4].type == MILTER_E_ADDRCPT &&
	    strcmp(ed.e[4].value, "NOTIFY=NEVER") == 0);
	ATF_CHECK(ed.e[5].type == MILTER_E_DELRCPT);
	ATF_CHECK(ed.e[6].type == MILTER_E_CHGFROM &&
	    strcmp(ed.e[6].name, "<s@x>") == 0);
	ATF_CHECK(ed.e[7].type == MILTER_E_REPLBODY && ed.e[7].vlen == 10 &&
	    memcmp(ed.e[7].value, "new body\r\n", 10) == 0);
	ATF_CHECK(ed.e[8].type == MILTER_E_QUARANTINE &&
	    strcmp(ed.e[8].value, "look at it") == 0);
	milter_edits_release(&ed);
	milters_free(ms);
	milter_done(pid);
	milter_reply_release(&r);
	str_release(&body);
}

/* ---- Failures -------------------------------------------------------- */

static void s_garbage(void)
{
	negotiate(6, 0, 0, NULL);
	expect(SMFIC_CONNECT, NULL);
	send_pkt('Z', NULL, 0);		/* no such reply */
	/* the client closed: nothing more comes */
	char c;
	if (read(mfd, &c, 1) != 0)
		die("the client did not close");
}

static void s_unasked_edit(void)
{
	negotiate(6, SMFIF_ADDHDRS, 0, NULL);
	step(SMFIC_CONNECT, SMFIR_CONTINUE);
	step(SMFIC_MAIL, SMFIR_CONTINUE);
	step(SMFIC_DATA, SMFIR_CONTINUE);
	step(SMFIC_EOH, SMFIR_CONTINUE);
	expect(SMFIC_BODYEOB, NULL);
	send_pkt(SMFIR_ADDHEADER, "X-A\0b", 6);
	send_str(SMFIR_DELRCPT, "<x@y>");	/* not negotiated: the client
						 * closes, nothing more */
	char c;
	while (read(mfd, &c, 1) > 0)
		;
}

static void s_bad_version(void)
{
	negotiate(7, 0, 0, NULL);
	char c;
	while (read(mfd, &c, 1) > 0)
		;
}

static void s_hang(void)
{
	negotiate(6, 0, 0, NULL);
	step(SMFIC_CONNECT, SMFIR_CONTINUE);
	expect(SMFIC_HELO, NULL);
	/* no reply: the client's command timeout */
	char c;
	while (read(mfd, &c, 1) > 0)
		;
}

ATF_TC_WITHOUT_HEAD(failures);
ATF_TC_BODY(failures, tc)
{
	milter_reply_t r = MILTER_REPLY_INIT;
	milter_edits_t ed = MILTER_EDITS_INIT;
	const char *mail[] = { "<a@b>", NULL };
	milters_t *ms;
	pid_t pid;
	time_t t0;

	log_to_stderr();
	/* garbage: default tempfail, then the same for every command */
	pid = milter_start(s_garbage);
	ms = client("unix:" SOCK, 5, MILTER_DEF_TEMPFAIL);
	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_TEMPFAIL);
	ATF_CHECK_EQ(milters_helo(ms, "h", &r), MILTER_TEMPFAIL);
	milters_free(ms);
	milter_done(pid);

	/* an edit that was not negotiated: the milter's edits are dropped,
	 * default reject */
	pid = milter_start(s_unasked_edit);
	ms = client("unix:" SOCK, 5, MILTER_DEF_REJECT);
	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_data(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_eom(ms, &ed, &r), MILTER_REJECT);
	ATF_CHECK_EQ(ed.n, 0);
	milters_free(ms);
	milter_done(pid);

	/* version 7: refused; default accept skips the milter */
	pid = milter_start(s_bad_version);
	ms = client("unix:" SOCK, 5, MILTER_DEF_ACCEPT);
	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);
	milters_free(ms);
	milter_done(pid);

	/* a hang costs the command timeout (1 s), then quarantine */
	pid = milter_start(s_hang);
	ms = client("unix:" SOCK, 1, MILTER_DEF_QUARANTINE);
	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_CONTINUE);
	t0 = time(NULL);
	ATF_CHECK_EQ(milters_helo(ms, "h", &r), MILTER_CONTINUE);
	ATF_CHECK(time(NULL) - t0 >= 1 && time(NULL) - t0 <= 3);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_eom(ms, &ed, &r), MILTER_CONTINUE);
	ATF_REQUIRE_EQ(ed.n, 1);
	ATF_CHECK_EQ(ed.e[0].type, MILTER_E_QUARANTINE);
	milter_edits_release(&ed);
	milters_free(ms);
	milter_done(pid);

	/* nobody listening: the default action at once */
	ms = client("unix:nosuch.sock", 5, MILTER_DEF_REJECT);
	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_REJECT);
	milters_free(ms);
	milter_reply_release(&r);
}

/* Two milters in a list: asked in order; the first refusal decides and
 * the second is not asked for that command. */
static void s_first(void)
{
	negotiate(6, 0, 0, NULL);
	step(SMFIC_CONNECT, SMFIR_CONTINUE);
	step(SMFIC_HELO, SMFIR_REJECT);
	expect(SMFIC_QUIT, NULL);
}

ATF_TC_WITHOUT_HEAD(list_order);
ATF_TC_BODY(list_order, tc)
{
	pid_t pid = milter_start(s_first);
	/* the second milter does not exist: asking it would fail and,
	 * with the default tempfail, change the verdicts below */
	milters_t *ms = client("unix:" SOCK " { unix:nosuch.sock, "
	    "default_action=accept }", 5, MILTER_DEF_TEMPFAIL);
	milter_reply_t r = MILTER_REPLY_INIT;

	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_helo(ms, "h", &r), MILTER_REJECT);
	ATF_CHECK_STREQ(r.who, "unix:" SOCK);
	milters_free(ms);
	milter_done(pid);
	milter_reply_release(&r);
}

/* Two milters: the first gets the content as it comes and edits the
 * header; the second is shown, at the end, the header as edited (in
 * order) and the body from the spool file, in chunks. */
#define SOCK2 "m2.sock"

static void expect_header(const char *name, const char *value)
{
	str_t d = STR_INIT;
	size_t nl = strlen(name), vl = strlen(value);

	expect(SMFIC_HEADER, &d);
	if (d.len != nl + vl + 2 || memcmp(d.buf, name, nl + 1) != 0 ||
	    memcmp(d.buf + nl + 1, value, vl + 1) != 0)
		die("header: got %.*s, want %s: %s", (int)d.len, d.buf, name,
		    value);
	send_pkt(SMFIR_CONTINUE, NULL, 0);
	str_release(&d);
}

/* The body until the end of the message: its length. */
static size_t body_to_eob(void)
{
	str_t d = STR_INIT;
	size_t len = 0;
	int cmd;

	while ((cmd = next(&d, NULL)) == SMFIC_BODY) {
		if (d.len > MILTER_CHUNK)
			die("body chunk of %zu bytes", d.len);
		for (size_t i = 0; i < d.len; i++)
			if (d.buf[i] != "line.\r\n"[(len + i) % 7])
				die("body byte %zu wrong", len + i);
		len += d.len;
		send_pkt(SMFIR_CONTINUE, NULL, 0);
	}
	if (cmd != SMFIC_BODYEOB)
		die("want end of body, got '%c'", cmd);
	str_release(&d);
	return len;
}

static void chg(int cmd, uint32_t index, const char *name, const char *value)
{
	str_t m = STR_INIT;
	uint32_t idx = htonl(index);

	str_append(&m, &idx, 4);
	str_append(&m, name, strlen(name) + 1);
	str_append(&m, value, strlen(value) + 1);
	send_pkt(cmd, m.buf, m.len);
	str_release(&m);
}

static void s_two_first(void)
{
	negotiate(6, 0x1ff, 0, NULL);
	step(SMFIC_CONNECT, SMFIR_CONTINUE);
	step(SMFIC_MAIL, SMFIR_CONTINUE);
	step(SMFIC_DATA, SMFIR_CONTINUE);
	expect_header("Subject", "old");
	expect_header("X-Mark", "one");
	expect_header("X-Mark", "two");
	step(SMFIC_EOH, SMFIR_CONTINUE);
	if (body_to_eob() != 70000)
		die("first milter: body length");
	chg(SMFIR_CHGHEADER, 1, "Subject", "new");
	chg(SMFIR_CHGHEADER, 1, "X-Mark", "");
	chg(SMFIR_INSHEADER, 1, "X-Ins", "i");
	send_pkt(SMFIR_CONTINUE, NULL, 0);
	expect(SMFIC_QUIT, NULL);
}

static void s_two_second(void)
{
	negotiate(6, 0x1ff, 0, NULL);
	step(SMFIC_CONNECT, SMFIR_CONTINUE);
	step(SMFIC_MAIL, SMFIR_CONTINUE);
	step(SMFIC_DATA, SMFIR_CONTINUE);
	expect_header("Subject", "new");
	expect_header("X-Ins", "i");
	expect_header("X-Mark", "two");
	step(SMFIC_EOH, SMFIR_CONTINUE);
	if (body_to_eob() != 70000)
		die("second milter: body length");
	send_pkt(SMFIR_ADDHEADER, "X-Two\0v", 8);
	send_pkt(SMFIR_CONTINUE, NULL, 0);
	expect(SMFIC_QUIT, NULL);
}

ATF_TC_WITHOUT_HEAD(two_milters_in_turn);
ATF_TC_BODY(two_milters_in_turn, tc)
{
	pid_t p1 = milter_start(s_two_first);
	pid_t p2 = milter_start_at(SOCK2, s_two_second);
	milters_t *ms = client("unix:" SOCK ", unix:" SOCK2, 5,
	    MILTER_DEF_TEMPFAIL);
	milter_reply_t r = MILTER_REPLY_INIT;
	milter_edits_t ed = MILTER_EDITS_INIT;
	const char *mail[] = { "<a@b>", NULL };
	const char *hdr = "Subject: old\nX-Mark: one\nX-Mark: two\n\n";
	str_t body = STR_INIT;
	DIR *dir;
	struct dirent *de;

	for (int i = 0; i < 10000; i++)
		str_cat(&body, "line.\n");
	ATF_CHECK_EQ(connect_ok(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_mail(ms, mail, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_data(ms, &r), MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_content(ms, hdr, strlen(hdr), &r),
	    MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_content(ms, body.buf, body.len, &r),
	    MILTER_CONTINUE);
	ATF_CHECK_EQ(milters_eom(ms, &ed, &r), MILTER_CONTINUE);
	/* both milters' edits, in list order, each against its message */
	ATF_REQUIRE_EQ(ed.n, 4);
	ATF_CHECK(ed.e[0].type == MILTER_E_CHGHDR &&
	    strcmp(ed.e[0].value, "new") == 0);
	ATF_CHECK(ed.e[2].type == MILTER_E_INSHDR && ed.e[2].index == 1);
	ATF_CHECK(ed.e[3].type == MILTER_E_ADDHDR &&
	    strcmp(ed.e[3].name, "X-Two") == 0);
	/* the spool file is gone (no name left in the directory) */
	ATF_REQUIRE((dir = opendir(".")) != NULL);
	while ((de = readdir(dir)) != NULL)
		ATF_CHECK_MSG(strncmp(de->d_name, "milter.", 7) != 0,
		    "spool file %s left", de->d_name);
	closedir(dir);
	milter_edits_release(&ed);
	milters_free(ms);
	milter_done(p1);
	milter_done(p2);
	unlink(SOCK2);
	milter_reply_release(&r);
	str_release(&body);
}

ATF_TP_ADD_TCS(tp)
{
	signal(SIGPIPE, SIG_IGN);
	ATF_TP_ADD_TC(tp, framing);
	ATF_TP_ADD_TC(tp, replycode_text);
	ATF_TP_ADD_TC(tp, list_syntax);
	ATF_TP_ADD_TC(tp, stages_and_macros);
	ATF_TP_ADD_TC(tp, verdicts);
	ATF_TP_ADD_TC(tp, content_and_edits);
	ATF_TP_ADD_TC(tp, failures);
	ATF_TP_ADD_TC(tp, list_order);
	ATF_TP_ADD_TC(tp, two_milters_in_turn);
	return atf_no_error();
}
