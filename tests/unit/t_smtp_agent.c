/* The smtp delivery agent through master: a private instance (petrel
 * start) runs build/bin/smtp as the "smtp" service; the test plays qmgr,
 * writing queue files into q/active and sending delivery requests over
 * q/private/smtp (dlv_call_path), with smtp-sink and fakedns as the
 * world.  Checked: per-recipient replies (action, status, relay, the
 * server's reply as Diagnostic-Code), the content as the sink saved it,
 * the connection-failure and avoid-destination flags, a missing queue
 * file, connection reuse across requests and its time limit, MX lookup
 * via dns_server_address, our own address as MX (a loop), and STARTTLS
 * configured in main.cf. */
#include "t_smtp_harness.h"
#include "delivery.h"
#include "queue_path.h"

/* The instance: etc/ (main.cf, master.cf), q/ (queue), maillog; the
 * smtp service with the connection cache unless mcf says otherwise. */
static void instance_mcf(const atf_tc_t *tc, const char *extra,
    const char *mcf);

static void instance(const atf_tc_t *tc, const char *extra)
{
	/* One process, so that every request meets the kept sessions. */
	instance_mcf(tc, extra, "smtp unix - n n - 1 smtp\n"
	    "scache unix - n n - 1 scache\n");
}

static void instance_mcf(const atf_tc_t *tc, const char *extra,
    const char *mcf)
{
	char bin[4096], cwd[2048];
	FILE *fp;
	str_t cmd = STR_INIT;

	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(bin, sizeof(bin), "%s/../../bin", atf_tc_get_config_var(tc, "srcdir"));
	ATF_REQUIRE(mkdir("etc", 0755) == 0 || errno == EEXIST);
	fp = fopen("etc/main.cf", "w");
	ATF_REQUIRE(fp != NULL);
	fprintf(fp, "queue_directory = %s/q\n"
	    "daemon_directory = %s\n"
	    "maillog_file = %s/maillog\n"
	    "inet_interfaces = 127.0.0.1\n"
	    "myhostname = client.test\n"
	    "smtp_helo_timeout = 10s\n"
	    "%s", cwd, bin, cwd, extra != NULL ? extra : "");
	ATF_REQUIRE(fclose(fp) == 0);
	fp = fopen("etc/master.cf", "w");
	ATF_REQUIRE(fp != NULL);
	fputs(mcf, fp);
	ATF_REQUIRE(fclose(fp) == 0);
	str_setf(&cmd, "%s/petrel -c %s/etc start >petrel.out 2>&1", bin, cwd);
	if (system(str_cstr(&cmd)) != 0) {
		str_t t = STR_INIT;
		file_read_all("petrel.out", &t, 8192);
		for (size_t i = 0; i < str_len(&t); i++)
			if (t.buf[i] == '\n')
				t.buf[i] = ' ';
		atf_tc_fail("petrel start failed: %s", str_cstr(&t));
	}
	str_release(&cmd);
}

/* Stops the instance (also from the cleanup part). */
static void instance_stop(void)
{
	char cwd[2048];
	str_t cmd = STR_INIT;
	const char *bin;
	FILE *fp;
	char line[4096];

	if (access("etc/main.cf", F_OK) != 0 || getcwd(cwd, sizeof(cwd)) == NULL)
		return;
	/* daemon_directory names the programs. */
	fp = fopen("etc/main.cf", "r");
	bin = NULL;
	while (fp != NULL && fgets(line, sizeof(line), fp) != NULL) {
		if (strncmp(line, "daemon_directory = ", 19) == 0) {
			line[strcspn(line, "\n")] = '\0';
			bin = line + 19;
			break;
		}
	}
	if (fp != NULL)
		fclose(fp);
	if (bin == NULL)
		return;
	str_setf(&cmd, "%s/petrel -c %s/etc stop >/dev/null 2>&1 || "
	    "%s/petrel -c %s/etc abort >/dev/null 2>&1", bin, cwd, bin, cwd);
	if (system(str_cstr(&cmd)) != 0)
		(void)0;
	str_release(&cmd);
}

/* The instance's log; fails on sanitizer reports. */
static const char *maillog(str_t *t)
{
	str_reset(t);
	file_read_all("maillog", t, 1 << 22);
	ATF_CHECK_MSG(strstr(str_cstr(t), "Sanitizer") == NULL &&
	    strstr(str_cstr(t), "runtime error") == NULL, "sanitizer report in maillog");
	return str_cstr(t);
}

#define AGENT_TC(name)							\
	ATF_TC_WITH_CLEANUP(name);					\
	ATF_TC_HEAD(name, tc)						\
	{								\
		atf_tc_set_md_var(tc, "descr", "smtp agent: " #name);	\
		atf_tc_set_md_var(tc, "require.user", "unprivileged");	\
	}								\
	ATF_TC_CLEANUP(name, tc)					\
	{								\
		(void)tc;						\
		instance_stop();					\
		h_cleanup();						\
	}								\
	ATF_TC_BODY(name, tc)

static queue_layout_t ql;

/* A message in q/active; returns its ID in id. */
static void make_message(char *id, size_t idsize, const char *sender,
    const char *const *rcpts, const char *content)
{
	str_t err = STR_INIT;
	qfw_t *w;

	if (ql.dir == NULL)
		ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred, defer", 1, &err) == 0);
	w = qfw_create(&ql, QUEUE_ACTIVE, 0600, &err);
	ATF_REQUIRE_MSG(w != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE(qfw_sender(w, sender) == 0);
	for (size_t i = 0; rcpts[i] != NULL; i++) {
		qf_rcpt_in_t r = { rcpts[i], NULL, NULL, 0 };
		if (i == 0) {
			r.notify = DSN_NOTIFY_SUCCESS | DSN_NOTIFY_FAILURE;
			r.orcpt = "rfc822;first@example.org";
		}
		ATF_REQUIRE(qfw_rcpt(w, &r) == 0);
	}
	ATF_REQUIRE(qfw_content(w, content, strlen(content)) == 0);
	ATF_REQUIRE_MSG(qfw_commit(w) == 0, "%s", qfw_error(w));
	snprintf(id, idsize, "%s", qfw_id(w));
	qfw_free(w);
	str_release(&err);
}

/* The request qmgr would send for message id to nexthop. */
static void make_request(dlv_request_t *req, const char *id, const char *nexthop)
{
	qf_err_t qe;
	qfile_t *qf = qfile_open(&ql, QUEUE_ACTIVE, id, 0, &qe);
	qf_rcpt_batch_t b;
	long n;

	ATF_REQUIRE_MSG(qf != NULL, "%s", qe.reason);
	dlv_request_init(req, QUEUE_ACTIVE, id, qfile_sender(qf), nexthop);
	req->content_offset = qfile_content_offset(qf);
	req->content_size = (int64_t)qfile_content_size(qf);
	req->arrival = 1767225600000000LL;
	memset(&b, 0, sizeof(b));
	n = qfile_rcpt_read(qf, &b, 100, 0);
	ATF_REQUIRE(n > 0);
	for (long i = 0; i < n; i++)
		dlv_request_add_rcpt(req, str_cstr(&b.rcpt[i].address),
		    str_cstr(&b.rcpt[i].orig), str_cstr(&b.rcpt[i].orcpt),
		    b.rcpt[i].notify, b.rcpt[i].offset);
	qf_rcpt_batch_free(&b);
	qfile_close(qf);
}

static void call(const dlv_request_t *req, dlv_reply_t *rep)
{
	str_t err = STR_INIT;

	ATF_REQUIRE_MSG(dlv_call_path("q/private/smtp", req, rep, 30000, &err) == 0,
	    "%s", str_cstr(&err));
	str_release(&err);
}

#define CONTENT "Subject: through the agent\n\n.a dot\nbody\n"

AGENT_TC(deliver)
{
	const char *const rcpts[] = { "ok@example.com", "tempfail@example.com",
	    "permfail@example.com", NULL };
	dlv_request_t req;
	dlv_reply_t rep;
	char id[64], nh[64], relay[128];
	str_t t = STR_INIT;
	int port;

	port = sink_start(tc, "-d", "saved", NULL);
	instance(tc, NULL);
	make_message(id, sizeof(id), "sender@example.org", rcpts, CONTENT);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	make_request(&req, id, nh);
	call(&req, &rep);
	snprintf(relay, sizeof(relay), "127.0.0.1[127.0.0.1]:%d", port);
	ATF_CHECK_EQ(rep.flags, 0);
	ATF_CHECK_EQ(rep.st[0].action, DLV_ACT_DELIVERED);
	ATF_CHECK_STREQ(rep.st[0].status, "2.0.0");
	ATF_CHECK_STREQ(rep.st[0].relay, relay);
	ATF_CHECK(strncmp(rep.st[0].reason, "250 2.0.0", 9) == 0);
	ATF_CHECK_EQ(rep.st[1].action, DLV_ACT_DELAYED);
	ATF_CHECK_STREQ(rep.st[1].status, "4.2.0");
	ATF_CHECK(strstr(rep.st[1].reason, "said: 450 4.2.0") != NULL);
	ATF_CHECK_STREQ(rep.st[1].diag_type, "smtp");
	ATF_CHECK(strncmp(rep.st[1].diag_text, "450 4.2.0", 9) == 0);
	ATF_CHECK_STREQ(rep.st[1].remote_mta, "127.0.0.1");
	ATF_CHECK_EQ(rep.st[2].action, DLV_ACT_FAILED);
	ATF_CHECK_STREQ(rep.st[2].status, "5.1.1");
	ATF_CHECK(rep.conn_us >= 0 && rep.xfer_us > 0);
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	instance_stop();
	sink_stop(0);
	sink_message("saved", 1, &t);
	ATF_CHECK(strstr(str_cstr(&t), "X-Sink-Mail-From: <sender@example.org>") != NULL);
	ATF_CHECK(strstr(str_cstr(&t), "X-Sink-Rcpt-To: <ok@example.com> NOTIFY=SUCCESS,FAILURE ORCPT=rfc822;first@example.org\r\n") != NULL);
	ATF_CHECK(strstr(str_cstr(&t), "\r\nSubject: through the agent\r\n\r\n.a dot\r\nbody\r\n") != NULL);
	maillog(&t);
	queue_layout_free(&ql);
	str_release(&t);
}

/* Many requests, one connection to the server; closed (QUIT) once idle
 * for smtp_connection_cache_time_limit. */
AGENT_TC(reuse)
{
	const char *const rcpts[] = { "a@example.com", NULL };
	char id[64], nh[64];
	int port, sent = 0;

	port = sink_start(tc, NULL);
	instance(tc, "smtp_connection_cache_time_limit = 1s\n");
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	for (int i = 0; i < 30; i++) {
		dlv_request_t req;
		dlv_reply_t rep;
		make_message(id, sizeof(id), "s@example.org", rcpts, CONTENT);
		make_request(&req, id, nh);
		call(&req, &rep);
		sent += rep.st[0].action == DLV_ACT_DELIVERED;
		dlv_reply_free(&rep);
		dlv_request_free(&req);
	}
	ATF_CHECK_EQ(sent, 30);
	ATF_CHECK(sink_stat_wait(0, "messages", 30));
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	/* The agent's timer closes the idle session. */
	ATF_CHECK(sink_stat_wait(0, "quit", 1));
	instance_stop();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	queue_layout_free(&ql);
}

/* A new smtp process for every request (max_use 1): the session goes
 * from each process to the connection cache and on to the next, so 30
 * requests take one connection; without the cache, 30. */
AGENT_TC(reuse_recycled)
{
	const char *const rcpts[] = { "a@example.com", NULL };
	char id[64], nh[64];
	int port, sent = 0;
	str_t t = STR_INIT;

	port = sink_start(tc, NULL);
	instance_mcf(tc, NULL, "smtp unix - n n - 1 smtp -o max_use=1\n"
	    "scache unix - n n - 1 scache\n");
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	for (int i = 0; i < 30; i++) {
		dlv_request_t req;
		dlv_reply_t rep;
		make_message(id, sizeof(id), "s@example.org", rcpts, CONTENT);
		make_request(&req, id, nh);
		call(&req, &rep);
		sent += rep.st[0].action == DLV_ACT_DELIVERED;
		dlv_reply_free(&rep);
		dlv_request_free(&req);
	}
	ATF_CHECK_EQ(sent, 30);
	ATF_CHECK(sink_stat_wait(0, "messages", 30));
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	ATF_CHECK_EQ(sink_stat(0, "rset"), 29);
	/* The cache closes it when idle (QUIT, without waiting). */
	ATF_CHECK(sink_stat_wait(0, "quit", 1));
	ATF_CHECK(strstr(maillog(&t), "warning") == NULL);
	instance_stop();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);

	/* The same without the cache in master.cf: every process connects
	 * (and says so once in the log), mail flows all the same. */
	port = sink_start(tc, NULL);
	instance_mcf(tc, NULL, "smtp unix - n n - 1 smtp -o max_use=1\n");
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	sent = 0;
	for (int i = 0; i < 10; i++) {
		dlv_request_t req;
		dlv_reply_t rep;
		make_message(id, sizeof(id), "s@example.org", rcpts, CONTENT);
		make_request(&req, id, nh);
		call(&req, &rep);
		sent += rep.st[0].action == DLV_ACT_DELIVERED;
		dlv_reply_free(&rep);
		dlv_request_free(&req);
	}
	ATF_CHECK_EQ(sent, 10);
	ATF_CHECK(sink_stat_wait(0, "messages", 10));
	ATF_CHECK_EQ(sink_stat(0, "connections"), 10);
	/* (The socket file of the first instance is still there.) */
	ATF_CHECK(strstr(maillog(&t), "connection cache private/scache: "
	    "connect: Connection refused; not used for 60 s") != NULL);
	instance_stop();
	sink_stop(0);
	str_release(&t);
	queue_layout_free(&ql);
}

AGENT_TC(failures)
{
	const char *const rcpts[] = { "a@example.com", NULL };
	dlv_request_t req;
	dlv_reply_t rep;
	char id[64], nh[64];
	int fds[SOCK_LISTEN_MAX], port;
	str_t t = STR_INIT;

	ATF_REQUIRE(sock_tcp_listen("127.0.0.1:0", 1, fds) == 1);
	port = sock_local_port(fds[0]);
	close(fds[0]);
	instance(tc, NULL);
	make_message(id, sizeof(id), "s@example.org", rcpts, CONTENT);
	/* Nobody listening: connection failure, and the site is out. */
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	make_request(&req, id, nh);
	call(&req, &rep);
	ATF_CHECK_EQ(rep.flags, DLV_R_CONN_FAIL | DLV_R_AVOID);
	ATF_CHECK(strstr(rep.reason, "Connection refused") != NULL);
	ATF_CHECK_EQ(rep.st[0].action, DLV_ACT_DELAYED);
	ATF_CHECK_STREQ(rep.st[0].status, "4.4.1");
	dlv_reply_free(&rep);
	dlv_request_free(&req);

	/* A 421 greeting: a connection failure, not a dead site. */
	port = sink_start(tc, "--greeting=421", NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	make_request(&req, id, nh);
	call(&req, &rep);
	ATF_CHECK_EQ(rep.flags, DLV_R_CONN_FAIL);
	ATF_CHECK(strstr(rep.reason, "refused to talk to me: 421") != NULL);
	dlv_reply_free(&rep);
	dlv_request_free(&req);

	/* The queue file is gone: deferred, the agent lives on. */
	make_request(&req, id, nh);
	{
		str_t path = STR_INIT;
		queue_path(&ql, QUEUE_ACTIVE, id, &path);
		ATF_REQUIRE(unlink(str_cstr(&path)) == 0);
		str_release(&path);
	}
	call(&req, &rep);
	ATF_CHECK_EQ(rep.st[0].action, DLV_ACT_DELAYED);
	ATF_CHECK_STREQ(rep.st[0].status, "4.3.0");
	ATF_CHECK(strstr(rep.st[0].reason, "cannot open the queue file") != NULL);
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	instance_stop();
	sink_stop(0);
	maillog(&t);
	queue_layout_free(&ql);
	str_release(&t);
}

/* MX lookup through fakedns (dns_server_address); an MX that is this
 * host (inet_interfaces) is a mail loop. */
AGENT_TC(mx)
{
	const char *const rcpts[] = { "a@mx.test", NULL };
	dlv_request_t req;
	dlv_reply_t rep;
	char id[64], nh[64], conf[256], relay[128];
	int port, dport;

	dport = dns_start(tc, "mx.test MX 10 dead.mx.test\n"
	    "mx.test MX 20 live.mx.test\n"
	    "dead.mx.test A 127.0.0.3\n"
	    "live.mx.test A 127.0.0.2\n"
	    "loop.test MX 10 self.loop.test\n"
	    "self.loop.test A 127.0.0.1\n");
	{
		const char *opts[] = { NULL };
		port = sink_start_v(tc, 0, "127.0.0.2:0", opts);
	}
	snprintf(conf, sizeof(conf), "dns_server_address = 127.0.0.1:%d\n"
	    "inet_protocols = ipv4\n", dport);
	instance(tc, conf);
	make_message(id, sizeof(id), "s@example.org", rcpts, CONTENT);
	snprintf(nh, sizeof(nh), "mx.test:%d", port);
	make_request(&req, id, nh);
	call(&req, &rep);
	snprintf(relay, sizeof(relay), "live.mx.test[127.0.0.2]:%d", port);
	ATF_CHECK_EQ(rep.flags, 0);
	ATF_CHECK_EQ(rep.st[0].action, DLV_ACT_DELIVERED);
	ATF_CHECK_STREQ(rep.st[0].relay, relay);
	dlv_reply_free(&rep);
	dlv_request_free(&req);

	snprintf(nh, sizeof(nh), "loop.test:%d", port);
	make_request(&req, id, nh);
	call(&req, &rep);
	ATF_CHECK_EQ(rep.st[0].action, DLV_ACT_FAILED);
	ATF_CHECK_STREQ(rep.st[0].status, "5.4.6");
	ATF_CHECK(strstr(rep.st[0].reason, "loops back to myself") != NULL);
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	instance_stop();
	sink_stop(0);
	dns_stop();
	ATF_CHECK_EQ(sink_stat(0, "messages"), 1);
	queue_layout_free(&ql);
}

/* STARTTLS from main.cf: encrypt with the test CA. */
AGENT_TC(tls)
{
	const char *const rcpts[] = { "a@example.com", NULL };
	dlv_request_t req;
	dlv_reply_t rep;
	char id[64], nh[64], cwd[2048], conf[4096];
	str_t t = STR_INIT;
	int port;

	make_pki();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	port = sink_start(tc, "-c", "server.pem", "-k", "server.key", NULL);
	snprintf(conf, sizeof(conf), "smtp_tls_security_level = encrypt\n"
	    "smtp_tls_CAfile = %s/ca.pem\n", cwd);
	instance(tc, conf);
	make_message(id, sizeof(id), "s@example.org", rcpts, CONTENT);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	make_request(&req, id, nh);
	call(&req, &rep);
	ATF_CHECK_EQ(rep.st[0].action, DLV_ACT_DELIVERED);
	dlv_reply_free(&rep);
	dlv_request_free(&req);
	instance_stop();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "starttls"), 1);
	ATF_CHECK_MSG(strstr(maillog(&t), "Trusted TLS connection established to 127.0.0.1[127.0.0.1]:") != NULL,
	    "%s", str_cstr(&t));
	queue_layout_free(&ql);
	str_release(&t);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, deliver);
	ATF_TP_ADD_TC(tp, reuse);
	ATF_TP_ADD_TC(tp, reuse_recycled);
	ATF_TP_ADD_TC(tp, failures);
	ATF_TP_ADD_TC(tp, mx);
	ATF_TP_ADD_TC(tp, tls);
	return atf_no_error();
}
