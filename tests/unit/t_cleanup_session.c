/* Unit tests of the cleanup protocol: the session (cleanup/cleanup_session.c)
 * in a child process on one end of a socketpair, the client library
 * (libglobal/cleanup_clnt.c) or raw bytes on the other; and the client
 * library against fake servers. */
#include <atf-c.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#include "attr.h"
#include "cleanup/cleanup.h"
#include "log.h"
#include "pconfig.h"
#include "qfile.h"
#include "server.h"

static cleanup_cfg_t cfg;

static void setup(const char *extra)
{
	char cwd[PATH_MAX];
	str_t text = STR_INIT, err = STR_INIT;

	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	str_setf(&text, "queue_directory = %s/q\nmyhostname = host.example.com\n"
	    "ipc_timeout = 10s\n%s\n", cwd, extra ? extra : "");
	if (pconfig_load_text(str_cstr(&text), "main.cf") < 0)
		atf_tc_fail("main.cf: %s", pconfig_errors());
	if (cleanup_cfg_load(&cfg, &err) < 0)
		atf_tc_fail("cleanup_cfg_load: %s", str_cstr(&err));
	if (queue_create_dirs(&cfg.ql, &err) < 0)
		atf_tc_fail("queue dirs: %s", str_cstr(&err));
	str_release(&text);
	str_release(&err);
}

/* Starts a session in a child; returns the client's end. */
static int start_session(pid_t *pid)
{
	int sv[2];

	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	*pid = fork();
	ATF_REQUIRE(*pid >= 0);
	if (*pid == 0) {
		close(sv[0]);
		cleanup_session(&cfg, sv[1]);
		_exit(0);
	}
	close(sv[1]);
	return sv[0];
}

/* The session must have ended by itself, normally. */
static void wait_session(pid_t pid)
{
	int st;

	for (int i = 0; i < 100; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			ATF_CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			    "session ended with status 0x%x", st);
			return;
		}
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	atf_tc_fail("session did not end");
}

static int incoming_files(void)
{
	DIR *d = opendir("q/incoming");
	struct dirent *de;
	int n = 0;

	ATF_REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void send_msg(cleanup_clnt_t *c, const char *rcpt, const char *body)
{
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;

	env.sender = "a@example.org";
	ATF_CHECK_EQ(cleanup_clnt_send_envelope(c, &env), 0);
	if (rcpt != NULL)
		ATF_CHECK_EQ(cleanup_clnt_send_rcpt(c, rcpt, NULL, 0), 0);
	ATF_CHECK_EQ(cleanup_clnt_write(c, body, strlen(body)), 0);
}

ATF_TC_WITHOUT_HEAD(transactions);
ATF_TC_BODY(transactions, tc)
{
	pid_t pid;
	cleanup_clnt_t *c;
	cleanup_reply_t r;
	int tfd;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char t;

	setup(NULL);
	/* qmgr's trigger endpoint, as a datagram socket */
	ATF_REQUIRE_EQ(mkdir("public", 0700), 0);
	tfd = socket(AF_UNIX, SOCK_DGRAM, 0);
	bcopy_str(sun.sun_path, sizeof(sun.sun_path), "public/qmgr");
	ATF_REQUIRE_EQ(bind(tfd, (struct sockaddr *)&sun, sizeof(sun)), 0);

	c = cleanup_clnt_fd(start_session(&pid), 10000);
	/* 1: queued, qmgr told */
	send_msg(c, "b@example.net", "Subject: 1\n\none\n");
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), 0);
	ATF_CHECK_EQ(r.status, CLEANUP_STAT_OK);
	ATF_CHECK(queue_id_valid(r.queue_id));
	ATF_CHECK(strstr(r.text, r.queue_id) != NULL);
	ATF_CHECK_EQ(recv(tfd, &t, 1, 0), 1);
	ATF_CHECK_EQ(t, TRIGGER_SCAN_INCOMING);
	/* 2: aborted: nothing queued, the connection goes on */
	send_msg(c, "b@example.net", "Subject: 2\n\ntwo\n");
	ATF_CHECK_EQ(cleanup_clnt_abort(c, &r), 0);
	ATF_CHECK_EQ(r.status, CLEANUP_STAT_TEMP);
	ATF_CHECK_STREQ(r.dsn, "4.3.0");
	ATF_CHECK(strstr(r.text, "aborted") != NULL);
	/* 3: refused, the connection goes on */
	send_msg(c, NULL, "Subject: 3\n\nthree\n");
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
	ATF_CHECK_EQ(r.status, CLEANUP_STAT_PERM);
	ATF_CHECK_STREQ(r.dsn, "5.1.0");
	ATF_CHECK_STREQ(r.queue_id, "");
	ATF_CHECK(cleanup_clnt_error(c) == NULL);
	/* 3b: milter edits over the client library, a body in pieces */
	cleanup_envelope_t menv = CLEANUP_ENVELOPE_INIT;
	menv.sender = "a@example.org";
	menv.flags = CLEANUP_FLAG_MILTER;
	cleanup_clnt_send_envelope(c, &menv);
	cleanup_clnt_send_rcpt(c, "b@example.net", NULL, 0);
	cleanup_clnt_write(c, "Subject: 3b\n\nold\n", 17);
	ATF_CHECK_EQ(cleanup_clnt_send_edit(c, 1, 0, "X-Edit", "yes", NULL, 0), 0);
	str_t nb = STR_INIT;
	for (int i = 0; i < 20000; i++)
		str_cat(&nb, "new body line\r\n");
	ATF_CHECK_EQ(cleanup_clnt_send_edit(c, 7, 0, NULL, NULL, nb.buf, nb.len), 0);
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), 0);
	qf_err_t qe3;
	qfile_t *qf3 = qfile_open(&cfg.ql, QUEUE_INCOMING, r.queue_id, 0, &qe3);
	ATF_REQUIRE(qf3 != NULL);
	str_t ln = STR_INIT, all = STR_INIT;
	while (qfile_read_line(qf3, &ln, 1 << 20) > 0) {
		str_append(&all, ln.buf, ln.len);
		str_putc(&all, '\n');
	}
	ATF_CHECK(strstr(str_cstr(&all), "\nX-Edit: yes\n\nnew body line\n") !=
	    NULL);
	ATF_CHECK(strstr(str_cstr(&all), "old") == NULL);
	ATF_CHECK_EQ(qfile_content_size(qf3), str_len(&all) - 0);
	qfile_close(qf3);
	str_release(&ln);
	str_release(&all);
	str_release(&nb);
	/* 4: a big message in many chunks */
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	env.sender = "a@example.org";
	cleanup_clnt_send_envelope(c, &env);
	cleanup_clnt_send_rcpt(c, "b@example.net", NULL, 0);
	cleanup_clnt_write(c, "Subject: 4\n\n", 12);
	char line[1000];
	memset(line, 'z', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\n';
	for (int i = 0; i < 3000; i++)
		ATF_REQUIRE_EQ(cleanup_clnt_write(c, line, sizeof(line)), 0);
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), 0);
	qf_err_t qe;
	qfile_t *qf = qfile_open(&cfg.ql, QUEUE_INCOMING, r.queue_id, 0, &qe);
	ATF_REQUIRE(qf != NULL);
	ATF_CHECK(qfile_content_size(qf) > 3000000);
	qfile_close(qf);
	cleanup_clnt_close(c);
	wait_session(pid);
	ATF_CHECK_EQ(incoming_files(), 3);
	close(tfd);
	cleanup_cfg_free(&cfg);
}

/* Sends raw bytes, reads what comes back until EOF (escaped). */
static void raw(const char *bytes, size_t len, str_t *reply)
{
	pid_t pid;
	int fd = start_session(&pid);
	char buf[4096];
	ssize_t n;

	ATF_REQUIRE_EQ(write(fd, bytes, len), (ssize_t)len);
	shutdown(fd, SHUT_WR);	/* what the session sees after the bytes */
	str_reset(reply);
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ATF_REQUIRE_MSG(poll(&p, 1, 5000) == 1, "no reply and no EOF");
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		str_append(reply, buf, (size_t)n);
	}
	close(fd);
	wait_session(pid);
}

#define RAW(lit, out) raw(lit, sizeof(lit) - 1, out)

static void proto_error(const char *bytes, size_t len, const char *why)
{
	str_t reply = STR_INIT;

	raw(bytes, len, &reply);
	ATF_CHECK_MSG(strncmp(str_cstr(&reply), "I status 4\nS dsn 5:4.3.0\n",
	    24) == 0 && strstr(str_cstr(&reply), "protocol error") != NULL &&
	    strstr(str_cstr(&reply), why) != NULL,
	    "reply \"%s\" lacks \"%s\"", str_cstr(&reply), why);
	ATF_CHECK_EQ(incoming_files(), 0);
	str_release(&reply);
}

#define PROTO_ERROR(lit, why) proto_error(lit, sizeof(lit) - 1, why)

ATF_TC_WITHOUT_HEAD(protocol_errors);
ATF_TC_BODY(protocol_errors, tc)
{
	str_t reply = STR_INIT;

	setup(NULL);
	PROTO_ERROR("GET / HTTP/1.0\r\n\r\n", "unexpected byte");
	PROTO_ERROR("\x00\x01\x02\xff", "unexpected byte");
	PROTO_ERROR("S op 4:rcpt\nS address 3:a@b\n.\n", "recipient before an envelope");
	PROTO_ERROR("S op 4:data\nD data 1:x\n.\n", "content before an envelope");
	PROTO_ERROR("S op 3:end\n.\n", "end without a transaction");
	PROTO_ERROR("S op 5:abort\n.\n", "abort without a transaction");
	PROTO_ERROR("S op 5:hello\n.\n", "unknown request \"hello\"");
	PROTO_ERROR("S sender 0:\n.\n", "missing");
	PROTO_ERROR("S op 8:envelope\n.\n", "envelope without sender");
	PROTO_ERROR("S op 8:envelope\nI sender 5\n.\n", "wrong type");
	PROTO_ERROR("S op 8:envelope\nS sender 0:\n.\nS op 8:envelope\nS sender 0:\n.\n",
	    "envelope inside a transaction");
	PROTO_ERROR("S op 8:envelope\nS sender 0:\n.\nS op 4:data\nD data 2:x\n\n.\n"
	    "S op 4:rcpt\nS address 3:a@b\n.\n", "recipient after content");
	PROTO_ERROR("S op 8:envelope\nS sender 0:\n.\nS op 4:data\n.\n",
	    "data request without data");
	PROTO_ERROR("S op 8:envelope\nS sender 0:\n.\nS op 4:rcpt\n.\n",
	    "recipient without address");
	PROTO_ERROR("S op 8:envelope\nS sender 0:\n.\nS op 4:data\nD data 99999999:",
	    "exceeds limit");
	/* op edit: only inside a transaction, with a type, and nothing but
	 * edits after it */
	PROTO_ERROR("S op 4:edit\nI type 1\n.\n", "edit before an envelope");
	PROTO_ERROR("S op 8:envelope\nS sender 0:\n.\nS op 4:edit\n.\n",
	    "edit without type");
	PROTO_ERROR("S op 8:envelope\nS sender 0:\n.\nS op 4:edit\nI type 1\n"
	    "S name 1:X\nS value 1:y\n.\nS op 4:data\nD data 2:x\n\n.\n",
	    "content after an edit");
	PROTO_ERROR("S op 8:envelope\nS sender 0:\n.\nS op 4:edit\nI type 1\n"
	    "S name 1:X\nS value 1:y\n.\nS op 4:rcpt\nS address 3:a@b\n.\n",
	    "recipient after an edit");
	/* A clean close between transactions, and one in the middle, get
	 * no reply and leave nothing. */
	RAW("", &reply);
	ATF_CHECK_EQ(str_len(&reply), 0);
	RAW("S op 8:envelope\nS sender 0:\n.\nS op 4:rcpt\nS address 13:b@example.net\n.\n"
	    "S op 4:data\nD data 5:S: x\n\n.\n", &reply);
	ATF_CHECK_EQ(str_len(&reply), 0);
	RAW("S op 8:envelope\nS sender 0:\n.\nS op 4:da", &reply);
	ATF_CHECK_EQ(str_len(&reply), 0);
	ATF_CHECK_EQ(incoming_files(), 0);
	/* Unknown attributes are skipped; the transaction works. */
	RAW("S op 8:envelope\nS sender 0:\nS future 3:new\n.\nS op 4:rcpt\n"
	    "S address 13:b@example.net\nI priority 3\n.\nS op 4:data\n"
	    "D data 6:S: x\n\n\n.\nS op 3:end\n.\n", &reply);
	ATF_CHECK_MSG(strncmp(str_cstr(&reply), "I status 0\nS dsn 5:2.0.0\n",
	    24) == 0, "%s", str_cstr(&reply));
	ATF_CHECK_EQ(incoming_files(), 1);
	str_release(&reply);
	cleanup_cfg_free(&cfg);
}

/* ---- the client library against fake servers ---- */

/* A server that answers the first request with reply (then closes)
 * after reading want bytes (0: at once), or never (reply NULL). */
static pid_t fake_server(int *cfd, const char *reply, size_t want)
{
	int sv[2];
	pid_t pid;

	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		char buf[4096];
		size_t got = 0;
		close(sv[0]);
		while (got < want) {
			ssize_t n = read(sv[1], buf, sizeof(buf));
			if (n <= 0)
				_exit(1);
			got += (size_t)n;
		}
		if (reply == NULL) {
			sleep(30);
			_exit(0);
		}
		(void)!write(sv[1], reply, strlen(reply));
		/* Close with unread data: the client's writes fail. */
		close(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	*cfd = sv[0];
	return pid;
}

ATF_TC_WITHOUT_HEAD(client_failures);
ATF_TC_BODY(client_failures, tc)
{
	cleanup_clnt_t *c;
	cleanup_reply_t r;
	str_t err = STR_INIT;
	pid_t pid;
	int fd, st;
	char big[65536];

	signal(SIGPIPE, SIG_IGN);
	/* nobody there */
	ATF_CHECK(cleanup_clnt_connect("no/such/socket", 1000, &err) == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "no/such/socket") != NULL, "%s",
	    str_cstr(&err));
	ATF_CHECK(cleanup_clnt_connect("nosuchservice", 1000, &err) == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "public/nosuchservice") != NULL,
	    "%s", str_cstr(&err));

	/* cleanup refuses early and closes while we stream: we get its
	 * reason, not our write error */
	pid = fake_server(&fd, "I status 5\nS dsn 5:5.3.4\nS text 8:too big!\n"
	    "S queue_id 0:\n.\n", 0);
	c = cleanup_clnt_fd(fd, 5000);
	send_msg(c, "b@example.net", "Subject: x\n\n");
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 200; i++)
		cleanup_clnt_write(c, big, sizeof(big));
	ATF_CHECK(cleanup_clnt_error(c) != NULL);
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
	ATF_CHECK_EQ(r.status, CLEANUP_STAT_PERM);
	ATF_CHECK_STREQ(r.dsn, "5.3.4");
	ATF_CHECK_STREQ(r.text, "too big!");
	cleanup_clnt_close(c);
	waitpid(pid, &st, 0);

	/* no reply in time */
	pid = fake_server(&fd, NULL, 1);
	c = cleanup_clnt_fd(fd, 300);
	send_msg(c, "b@example.net", "Subject: x\n\n");
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
	ATF_CHECK_EQ(r.status, CLEANUP_STAT_TEMP);
	ATF_CHECK_STREQ(r.dsn, "4.3.0");
	ATF_CHECK(strstr(r.text, "timeout") != NULL);
	cleanup_clnt_close(c);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);

	/* a malformed reply, a success without queue ID, a closed
	 * connection */
	static const struct { const char *reply, *want; } bad[] = {
		{ "garbage\n", "bad reply" },
		{ "I status 0\nS dsn 5:2.0.0\nS text 2:ok\n.\n", "without a queue ID" },
		{ "I status 3\nS dsn 5:2.0.0\nS text 2:ok\n.\n", "status 3" },
		{ "", "lost connection" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pid = fake_server(&fd, bad[i].reply, 1);
		c = cleanup_clnt_fd(fd, 5000);
		send_msg(c, "b@example.net", "Subject: x\n\n");
		ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
		ATF_CHECK_EQ(r.status, CLEANUP_STAT_TEMP);
		ATF_CHECK_MSG(strstr(r.text, bad[i].want) != NULL, "%s: %s",
		    bad[i].want, r.text);
		cleanup_clnt_close(c);
		waitpid(pid, &st, 0);
	}

	/* misuse is reported through the reply too */
	pid = fake_server(&fd, "", 0);
	c = cleanup_clnt_fd(fd, 1000);
	ATF_CHECK_EQ(cleanup_clnt_send_rcpt(c, "b@example.net", NULL, 0), -1);
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
	ATF_CHECK_EQ(r.status, CLEANUP_STAT_TEMP);
	ATF_CHECK_MSG(strstr(r.text, "recipient before the envelope") != NULL, "%s", r.text);
	cleanup_clnt_close(c);
	waitpid(pid, &st, 0);
	/* NULL strings are refused, not sent */
	pid = fake_server(&fd, "", 0);
	c = cleanup_clnt_fd(fd, 1000);
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	ATF_CHECK_EQ(cleanup_clnt_send_envelope(c, &env), 0);
	ATF_CHECK_EQ(cleanup_clnt_send_rcpt(c, NULL, NULL, 0), -1);
	ATF_CHECK_MSG(strstr(cleanup_clnt_error(c), "without address") != NULL,
	    "%s", cleanup_clnt_error(c));
	cleanup_clnt_close(c);
	waitpid(pid, &st, 0);
	str_release(&err);
}

/* A server that answers with reply after the first bytes and reads on
 * until the client closes (the client's later writes succeed). */
static pid_t fake_server_linger(int *cfd, const char *reply)
{
	int sv[2];
	pid_t pid;

	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		char buf[4096];
		close(sv[0]);
		if (read(sv[1], buf, sizeof(buf)) <= 0)
			_exit(1);
		(void)!write(sv[1], reply, strlen(reply));
		while (read(sv[1], buf, sizeof(buf)) > 0)
			;
		_exit(0);
	}
	close(sv[1]);
	*cfd = sv[0];
	return pid;
}

/* CLEANUP_FLAG_QUEUE_ID against fake servers: the ID message, a final
 * reply in its place (a protocol error), garbage, nothing. */
ATF_TC_WITHOUT_HEAD(client_queue_id);
ATF_TC_BODY(client_queue_id, tc)
{
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	cleanup_clnt_t *c;
	cleanup_reply_t r;
	char id[QUEUE_ID_SIZE];
	pid_t pid;
	int fd, st;

	signal(SIGPIPE, SIG_IGN);
	env.sender = "a@example.org";
	env.flags = CLEANUP_FLAG_QUEUE_ID;
	/* the ID, then the reply */
	pid = fake_server_linger(&fd, "S queue_id 12:4QMZ7X2KCB7H\n.\nI status 0\n"
	    "S dsn 5:2.0.0\nS text 2:ok\nS queue_id 12:4QMZ7X2KCB7H\n.\n");
	c = cleanup_clnt_fd(fd, 5000);
	ATF_CHECK_EQ(cleanup_clnt_send_envelope(c, &env), 0);
	ATF_CHECK_EQ(cleanup_clnt_queue_id(c, id), 0);
	ATF_CHECK_STREQ(id, "4QMZ7X2KCB7H");
	ATF_CHECK_EQ(cleanup_clnt_queue_id(c, id), -1);	/* once */
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), 0);
	ATF_CHECK_STREQ(r.queue_id, "4QMZ7X2KCB7H");
	cleanup_clnt_close(c);
	waitpid(pid, &st, 0);
	/* not read by the caller: finish skips it */
	pid = fake_server_linger(&fd, "S queue_id 12:4QMZ7X2KCB7H\n.\nI status 0\n"
	    "S dsn 5:2.0.0\nS text 2:ok\nS queue_id 12:4QMZ7X2KCB7H\n.\n");
	c = cleanup_clnt_fd(fd, 5000);
	ATF_CHECK_EQ(cleanup_clnt_send_envelope(c, &env), 0);
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), 0);
	ATF_CHECK_STREQ(r.queue_id, "4QMZ7X2KCB7H");
	cleanup_clnt_close(c);
	waitpid(pid, &st, 0);
	/* the envelope failed: an empty ID, the reply says why */
	pid = fake_server(&fd, "S queue_id 0:\n.\nI status 5\nS dsn 5:5.1.7\n"
	    "S text 3:bad\nS queue_id 0:\n.\n", 1);
	c = cleanup_clnt_fd(fd, 5000);
	ATF_CHECK_EQ(cleanup_clnt_send_envelope(c, &env), 0);
	ATF_CHECK_EQ(cleanup_clnt_queue_id(c, id), -1);
	ATF_CHECK_STREQ(id, "");
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
	ATF_CHECK_STREQ(r.dsn, "5.1.7");
	cleanup_clnt_close(c);
	waitpid(pid, &st, 0);
	/* a protocol error answered instead of the ID: that answer is the
	 * result, and the connection is done */
	pid = fake_server(&fd, "I status 4\nS dsn 5:4.3.0\nS text 15:protocol error!"
	    "\nS queue_id 0:\n.\n", 1);
	c = cleanup_clnt_fd(fd, 5000);
	ATF_CHECK_EQ(cleanup_clnt_send_envelope(c, &env), 0);
	ATF_CHECK_EQ(cleanup_clnt_queue_id(c, id), -1);
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
	ATF_CHECK_EQ(r.status, CLEANUP_STAT_TEMP);
	ATF_CHECK_STREQ(r.text, "protocol error!");
	ATF_CHECK(cleanup_clnt_error(c) != NULL);
	cleanup_clnt_close(c);
	waitpid(pid, &st, 0);
	/* an invalid ID, and no answer at all */
	pid = fake_server(&fd, "S queue_id 6:../etc\n.\n", 1);
	c = cleanup_clnt_fd(fd, 5000);
	ATF_CHECK_EQ(cleanup_clnt_send_envelope(c, &env), 0);
	ATF_CHECK_EQ(cleanup_clnt_queue_id(c, id), -1);
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
	ATF_CHECK_MSG(strstr(r.text, "no valid queue ID") != NULL, "%s", r.text);
	cleanup_clnt_close(c);
	waitpid(pid, &st, 0);
	pid = fake_server(&fd, NULL, 1);
	c = cleanup_clnt_fd(fd, 300);
	ATF_CHECK_EQ(cleanup_clnt_send_envelope(c, &env), 0);
	ATF_CHECK_EQ(cleanup_clnt_queue_id(c, id), -1);
	ATF_CHECK_EQ(cleanup_clnt_finish(c, &r), -1);
	ATF_CHECK_MSG(strstr(r.text, "timeout") != NULL, "%s", r.text);
	cleanup_clnt_close(c);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, transactions);
	ATF_TP_ADD_TC(tp, protocol_errors);
	ATF_TP_ADD_TC(tp, client_failures);
	ATF_TP_ADD_TC(tp, client_queue_id);
	return atf_no_error();
}
