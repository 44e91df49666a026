/* Unit tests for libglobal/tls: contexts and their load errors, protocol
 * syntax, handshakes between our client and server (or a raw OpenSSL peer
 * where we need one that misbehaves) over loopback TCP and socketpairs,
 * data through stream_t, the security levels, timeouts (asserting the
 * status or flag, never elapsed time) and failures mid-handshake.
 *
 * Certificates are made at test time in the test's own directory with the
 * openssl command: a throwaway CA, a second CA nobody trusts, a server
 * certificate for mx.example.test, one for wrong.example.test, an expired
 * one and a self-signed one.  No key is ever committed.
 *
 * The server side runs in a forked child (with an alarm as a backstop);
 * it reports through the file child.out and its exit status.  Children
 * use exit(), so sanitizer builds check them for leaks too. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include "log.h"
#include "pconfig.h"
#include "sock.h"
#include "str.h"
#include "stream.h"
#include "tls.h"

#define IO_MS 10000		/* generous: only failures ever wait this long */
#define SHORT_MS 300		/* for the timeout tests */
#define CHILD_ALARM 30
#define BIG (1024 * 1024)

/* ---- certificates ---- */

static const char pki_script[] =
    "set -e\n"
    "exec >pki.log 2>&1\n"
    "ec='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'\n"
    "openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj '/CN=Petrel Test CA'\n"
    "openssl req -x509 $ec -keyout ca2.key -out ca2.pem -days 2 -subj '/CN=Other Test CA'\n"
    "leaf() {\n"	/* leaf NAME CN DAYS KEYTYPE */
    "  openssl req $4 -keyout $1.key -out $1.csr -subj \"/CN=$2\"\n"
    "  printf 'subjectAltName=DNS:%s\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' $2 > $1.ext\n"
    "  openssl x509 -req -in $1.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days $3 -out $1.pem -extfile $1.ext\n"
    "}\n"
    "leaf server mx.example.test 2 '-newkey rsa:2048 -nodes'\n"
    "leaf wrong wrong.example.test 2 \"$ec\"\n"
    "openssl req -x509 $ec -keyout self.key -out self.pem -days 2 -subj /CN=mx.example.test"
    " -addext subjectAltName=DNS:mx.example.test\n"
    "cat server.pem server.key > combined.pem\n"
    "echo 'this is not PEM' > garbage.pem\n"
    "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1"
    " -aes256 -pass pass:secret -out locked.key\n"
    /* Last, as a newer openssl may refuse negative days: see expired. */
    "leaf expired mx.example.test -1 \"$ec\" || rm -f expired.pem\n";

static void make_pki(void)
{
	FILE *f = fopen("pki.sh", "w");

	ATF_REQUIRE(f != NULL);
	fputs(pki_script, f);
	ATF_REQUIRE_EQ(fclose(f), 0);
	if (system("sh pki.sh") != 0) {
		system("cat pki.log >&2");
		atf_tc_fail("could not make test certificates (see pki.log)");
	}
}

/* ---- child processes ---- */

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
	FILE *f = fopen("child.out", "a");
	va_list ap;

	if (f == NULL)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static char *child_output(void)
{
	static char buf[8192];
	FILE *f = fopen("child.out", "r");
	size_t n = 0;

	if (f != NULL) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

typedef void (*child_fn)(int fd, void *arg);

static pid_t fork_child(child_fn fn, int fd, int other, void *arg)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		alarm(CHILD_ALARM);
		if (other >= 0)
			close(other);
		fn(fd, arg);
		exit(0);
	}
	return pid;
}

/* Exit status of the child (bounded wait), or fails the test. */
static int reap(pid_t pid)
{
	int status;

	for (int i = 0; i < (CHILD_ALARM + 5) * 100; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid) {
			if (WIFSIGNALED(status))
				atf_tc_fail("child killed by signal %d; it said: %s",
				    WTERMSIG(status), child_output());
			return WEXITSTATUS(status);
		}
		ATF_REQUIRE(r == 0);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	atf_tc_fail("child did not finish");
}

/* A server child on a loopback listener: the child accepts one
 * connection and runs fn on it; the parent gets a connected, non-blocking
 * descriptor (sock_tcp_connect's). */
static int connect_child(child_fn fn, void *arg, pid_t *pidp)
{
	int lfds[SOCK_LISTEN_MAX], port, fd;
	char spec[64];

	ATF_REQUIRE_EQ(sock_tcp_listen("127.0.0.1:0", 4, lfds), 1);
	port = sock_local_port(lfds[0]);
	ATF_REQUIRE(port > 0);
	fflush(NULL);
	*pidp = fork();
	ATF_REQUIRE(*pidp >= 0);
	if (*pidp == 0) {
		int afd;
		alarm(CHILD_ALARM);
		afd = sock_accept(lfds[0], NULL, NULL);
		close(lfds[0]);
		if (afd < 0) {
			report("accept: %s", strerror(errno));
			exit(90);
		}
		fn(afd, arg);
		exit(0);
	}
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", port);
	ATF_REQUIRE_EQ(sock_tcp_connect_str(spec, IO_MS, &fd), 0);
	close(lfds[0]);
	return fd;
}

/* Small socket buffers, so that large transfers really meet EAGAIN and
 * the layer's wanted direction is exercised. */
static void small_buffers(int fd)
{
	int size = 65536;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

/* ---- the server side ---- */

struct server_arg {
	const char *cert;
	const char *key;
	const char *protocols;
	int handshake_ms;	/* 0: IO_MS */
	int read_ms;		/* 0: IO_MS */
};

static tls_ctx_t *server_ctx(const struct server_arg *a, str_t *err)
{
	tls_server_config_t cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.cert_file = a->cert;
	cfg.key_file = a->key;
	cfg.protocols = a->protocols;
	return tls_server_ctx(&cfg, err);
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

/* Server: handshake, then a small command loop until EOF:
 *   ECHO text   -> "text"
 *   BIG n       -> n pattern bytes
 *   SINK n      -> reads n bytes, replies "OK" if they are the pattern
 *   DESC        -> the session description, trust and SNI name
 * At EOF it reports "eof" or "error: ..." and closes with close_notify. */
static void serve(int fd, void *arg)
{
	const struct server_arg *a = arg;
	str_t err = STR_INIT, line = STR_INIT;
	tls_ctx_t *ctx;
	tls_sess_t *t;
	stream_t *s;
	int st;

	small_buffers(fd);
	if ((ctx = server_ctx(a, &err)) == NULL) {
		report("ctx: %s", str_cstr(&err));
		exit(10);
	}
	s = stream_open(fd);
	stream_set_timeouts(s, a->read_ms ? a->read_ms : IO_MS, IO_MS);
	st = tls_server_start(ctx, s, a->handshake_ms ? a->handshake_ms : IO_MS,
	    &t, &err);
	if (st != TLS_OK) {
		report("start %d: %s", st, str_cstr(&err));
		stream_close(s);
		tls_ctx_free(ctx);
		str_release(&err);
		exit(st == TLS_ERR_TIMEOUT ? 12 : 11);
	}
	log_init("smtpd");
	if (log_to_file("smtpd.log") == 0)
		tls_sess_log(t, "client.example.test[127.0.0.1]");
	for (;;) {
		int r = stream_getline(s, &line, 1000);
		unsigned long n;
		if (r == STREAM_LINE_NONE)
			break;
		if (strncmp(str_cstr(&line), "ECHO ", 5) == 0) {
			stream_printf(s, "%s\r\n", str_cstr(&line) + 5);
		} else if (strncmp(str_cstr(&line), "BIG ", 4) == 0 &&
		    str_to_ulong(str_cstr(&line) + 4, &n)) {
			for (size_t i = 0; i < n; i++)
				stream_putc(s, pattern(i));
		} else if (strncmp(str_cstr(&line), "SINK ", 5) == 0 &&
		    str_to_ulong(str_cstr(&line) + 5, &n)) {
			bool ok = true;
			for (size_t i = 0; i < n; i++)
				if (stream_getc(s) != pattern(i))
					ok = false;
			stream_puts(s, ok ? "OK\r\n" : "BAD\r\n");
		} else if (strcmp(str_cstr(&line), "DESC") == 0) {
			stream_printf(s, "%s|%s|%s\r\n", tls_sess_describe(t),
			    tls_trust_name(tls_sess_trust(t)),
			    tls_sess_server_name(t));
		} else if (strcmp(str_cstr(&line), "WAIT") == 0) {
			/* A read that must time out: the client stays quiet. */
			r = stream_getline(s, &line, 1000);
			report("wait: %d timedout=%d", r, stream_timedout(s));
			stream_clearerr(s);
			stream_puts(s, stream_timedout(s) ? "?\r\n" : "TIMEDOUT\r\n");
		} else {
			stream_puts(s, "WHAT\r\n");
		}
		if (stream_flush(s) < 0)
			break;
	}
	if (stream_error(s))
		report("error: errno %d: %s", stream_errno(s), tls_sess_error(t));
	else if (stream_timedout(s))
		report("timeout");
	else if (stream_eof(s))
		report("eof");
	tls_close(t, s, IO_MS);
	tls_ctx_free(ctx);
	str_release(&err);
	str_release(&line);
	exit(0);
}

/* ---- the client side ---- */

struct client {
	tls_ctx_t *ctx;
	stream_t *s;
	tls_sess_t *t;
	str_t err;
	int status;
	pid_t pid;
};

static tls_ctx_t *client_ctx(const char *cafile, const char *protocols)
{
	tls_client_config_t cfg;
	str_t err = STR_INIT;
	tls_ctx_t *ctx;

	memset(&cfg, 0, sizeof(cfg));
	cfg.CAfile = cafile;
	cfg.protocols = protocols;
	ctx = tls_client_ctx(&cfg, &err);
	ATF_REQUIRE_MSG(ctx != NULL, "client ctx: %s", str_cstr(&err));
	str_release(&err);
	return ctx;
}

/* Starts a server child with sa, then a client handshake at level with
 * host/nexthop, trusting cafile (NULL: the system store). */
static void client_run_ctx(struct client *c, tls_ctx_t *ctx,
    struct server_arg *sa, enum tls_level level, const char *host,
    const char *nexthop)
{
	tls_peer_t peer;
	int fd;

	memset(c, 0, sizeof(*c));
	c->ctx = ctx;
	fd = connect_child(serve, sa, &c->pid);
	small_buffers(fd);
	c->s = stream_open(fd);
	stream_set_timeouts(c->s, IO_MS, IO_MS);
	peer.level = level;
	peer.host = host;
	peer.nexthop = nexthop;
	c->status = tls_client_start(c->ctx, c->s, &peer, IO_MS, &c->t, &c->err);
}

static void client_run(struct client *c, struct server_arg *sa,
    const char *cafile, enum tls_level level, const char *host,
    const char *nexthop)
{
	client_run_ctx(c, client_ctx(cafile, NULL), sa, level, host, nexthop);
}

/* Ends the connection; returns the server child's exit status. */
static int client_end(struct client *c)
{
	int st;

	if (c->t != NULL)
		ATF_CHECK_EQ(tls_close(c->t, c->s, IO_MS), 0);
	else
		stream_close(c->s);
	st = reap(c->pid);
	tls_ctx_free(c->ctx);
	str_release(&c->err);
	return st;
}

static const char *ask(stream_t *s, const char *cmd)
{
	static str_t line = STR_INIT;

	ATF_REQUIRE_EQ(stream_printf(s, "%s\r\n", cmd), 0);
	ATF_REQUIRE_MSG(stream_getline(s, &line, 4096) == STREAM_LINE_CRLF,
	    "no reply to %s: eof=%d err=%d timedout=%d", cmd, stream_eof(s),
	    stream_errno(s), stream_timedout(s));
	return str_cstr(&line);
}

#define DESC_RE "^TLSv1\\.[23] with cipher [A-Z0-9_-]+ \\([0-9]+/[0-9]+ bits\\)$"

/* ---- tests ---- */

ATF_TC_WITHOUT_HEAD(handshake_and_data);
ATF_TC_BODY(handshake_and_data, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;
	char desc[256], desc_copy[256];
	unsigned char *buf;

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_ENCRYPT, "mx.example.test", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_STREQ(tls_sess_protocol(c.t), "TLSv1.3");
	ATF_CHECK_STREQ(tls_sess_describe(c.t),
	    "TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits)");
	ATF_CHECK_MATCH(DESC_RE, tls_sess_describe(c.t));
	ATF_CHECK_EQ(tls_sess_trust(c.t), TLS_TRUSTED);
	ATF_CHECK_STREQ(tls_sess_peer_cn(c.t), "mx.example.test");
	ATF_CHECK_STREQ(tls_sess_issuer_cn(c.t), "Petrel Test CA");

	/* Lines both ways. */
	ATF_CHECK_STREQ(ask(c.s, "ECHO hello"), "hello");
	ATF_CHECK_STREQ(ask(c.s, "ECHO second line"), "second line");
	/* The server sees the same session; no client certificate, so
	 * Anonymous; SNI carried the host name. */
	snprintf(desc, sizeof(desc), "%s|Anonymous|mx.example.test",
	    tls_sess_describe(c.t));
	snprintf(desc_copy, sizeof(desc_copy), "%s", tls_sess_describe(c.t));
	ATF_CHECK_STREQ(ask(c.s, "DESC"), desc);

	/* Large transfers: server to client, then client to server. */
	buf = malloc(BIG);
	ATF_REQUIRE(buf != NULL);
	ATF_REQUIRE_EQ(stream_printf(c.s, "BIG %d\r\n", BIG), 0);
	ATF_REQUIRE_EQ(stream_read(c.s, buf, BIG), BIG);
	for (size_t i = 0; i < BIG; i++)
		if (buf[i] != pattern(i))
			atf_tc_fail("byte %zu differs", i);
	for (size_t i = 0; i < BIG; i++)
		buf[i] = pattern(i);
	ATF_REQUIRE_EQ(stream_printf(c.s, "SINK %d\r\n", BIG), 0);
	ATF_REQUIRE_MSG(stream_write(c.s, buf, BIG) == 0, "write: errno %d "
	    "timedout %d: %s", stream_errno(c.s), stream_timedout(c.s),
	    tls_sess_error(c.t));
	ATF_CHECK_STREQ(ask(c.s, "ECHO after"), "OK");
	ATF_CHECK_STREQ(ask(c.s, "ECHO still"), "after");
	free(buf);

	/* Our close_notify is a clean end of input for the server. */
	ATF_CHECK_EQ(client_end(&c), 0);
	ATF_CHECK_STREQ(child_output(), "eof\n");

	/* The server's log line, in Postfix's words. */
	char logline[1024], expect[512];
	FILE *f = fopen("smtpd.log", "r");
	ATF_REQUIRE(f != NULL);
	ATF_REQUIRE(fgets(logline, sizeof(logline), f) != NULL);
	fclose(f);
	snprintf(expect, sizeof(expect), "]: Anonymous TLS connection established"
	    " from client.example.test[127.0.0.1]: %s\n", desc_copy);
	ATF_CHECK_MSG(strlen(logline) > strlen(expect) &&
	    strcmp(logline + strlen(logline) - strlen(expect), expect) == 0,
	    "log line: %s", logline);
}

ATF_TC_WITHOUT_HEAD(tls12_description);
ATF_TC_BODY(tls12_description, tc)
{
	struct server_arg sa = { "server.pem", "server.key", "TLSv1.2", 0, 0 };
	struct client c;

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_MAY, "mx.example.test", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_STREQ(tls_sess_protocol(c.t), "TLSv1.2");
	/* RSA server key, server preference: ECDHE with AES-256-GCM. */
	ATF_CHECK_STREQ(tls_sess_describe(c.t),
	    "TLSv1.2 with cipher ECDHE-RSA-AES256-GCM-SHA384 (256/256 bits)");
	ATF_CHECK_MATCH(DESC_RE, tls_sess_describe(c.t));
	ATF_CHECK_STREQ(ask(c.s, "ECHO tls12"), "tls12");
	ATF_CHECK_EQ(client_end(&c), 0);
}

ATF_TC_WITHOUT_HEAD(may_untrusted);
ATF_TC_BODY(may_untrusted, tc)
{
	struct server_arg sa = { "self.pem", "self.key", NULL, 0, 0 };
	struct client c;

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_MAY, "mx.example.test", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(tls_sess_trust(c.t), TLS_UNTRUSTED);
	ATF_CHECK_STREQ(tls_trust_name(tls_sess_trust(c.t)), "Untrusted");
	ATF_CHECK(tls_sess_name_matched(c.t));
	ATF_CHECK_MATCH("^server certificate not trusted: self.signed certificate$",
	    tls_sess_verify_reason(c.t));
	ATF_CHECK_STREQ(ask(c.s, "ECHO plain enough"), "plain enough");
	ATF_CHECK_EQ(client_end(&c), 0);
}

ATF_TC_WITHOUT_HEAD(verify_trusted);
ATF_TC_BODY(verify_trusted, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;
	char peer[64], expect[256], logline[1024];
	FILE *f;

	make_pki();
	log_init("t_tls");
	ATF_REQUIRE_EQ(log_to_file("maillog"), 0);
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_VERIFY, "mx.example.test",
	    "example.test");
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(tls_sess_trust(c.t), TLS_TRUSTED);
	ATF_CHECK(tls_sess_name_matched(c.t));
	ATF_CHECK_STREQ(tls_sess_verify_reason(c.t), "");
	/* The log line in Postfix's words. */
	snprintf(peer, sizeof(peer), "mx.example.test[127.0.0.1]:%d", 25);
	tls_sess_log(c.t, peer);
	snprintf(expect, sizeof(expect),
	    "t_tls[%ld]: Trusted TLS connection established to %s: %s\n",
	    (long)getpid(), peer, tls_sess_describe(c.t));
	f = fopen("maillog", "r");
	ATF_REQUIRE(f != NULL);
	ATF_REQUIRE(fgets(logline, sizeof(logline), f) != NULL);
	fclose(f);
	ATF_CHECK_MSG(strlen(logline) > strlen(expect) &&
	    strcmp(logline + strlen(logline) - strlen(expect), expect) == 0,
	    "log line: %s", logline);
	ATF_CHECK_STREQ(ask(c.s, "ECHO verified"), "verified");
	ATF_CHECK_EQ(client_end(&c), 0);
	log_to_stderr();

	/* The nexthop name alone is enough at verify. */
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_VERIFY, "mx.other.test",
	    "mx.example.test");
	ATF_CHECK_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(client_end(&c), 0);

	/* A trailing dot and another case change nothing. */
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_VERIFY, "MX.Example.Test.", NULL);
	ATF_CHECK_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(client_end(&c), 0);
}

/* With no CAfile or CApath the system store is used through its hashed
 * directory, searched at verification time: making a context reads no
 * certificate (the bundle file would be read whole, 15-25 ms at every
 * start of an smtp process), and a chain signed by a CA in that
 * directory still verifies.  SSL_CERT_DIR points OpenSSL's default
 * directory at one made here. */
ATF_TC_WITHOUT_HEAD(system_store_directory);
ATF_TC_BODY(system_store_directory, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;
	char dir[1024];
	tls_ctx_t *ctx;

	make_pki();
	ATF_REQUIRE(system("mkdir -p store && cp ca.pem store/ && "
	    "openssl rehash store >/dev/null 2>&1") == 0);
	ATF_REQUIRE(getcwd(dir, sizeof(dir) - 8) != NULL);
	strncat(dir, "/store", sizeof(dir) - strlen(dir) - 1);
	ATF_REQUIRE(setenv("SSL_CERT_DIR", dir, 1) == 0);
	/* The bundle file would be read at once: another CA's here. */
	ATF_REQUIRE(setenv("SSL_CERT_FILE", "ca2.pem", 1) == 0);
	ctx = client_ctx(NULL, NULL);
	ATF_CHECK_EQ(tls_ctx_trust_objects(ctx), 0);
	tls_ctx_free(ctx);
	client_run(&c, &sa, NULL, TLS_LEVEL_VERIFY, "mx.example.test",
	    "example.test");
	ATF_CHECK_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	if (c.status == TLS_OK)
		ATF_CHECK_EQ(tls_sess_trust(c.t), TLS_TRUSTED);
	ATF_CHECK_EQ(client_end(&c), 0);
	unsetenv("SSL_CERT_DIR");
	unsetenv("SSL_CERT_FILE");
}

/* A process about to chroot reads its CAs at once: the default store's
 * directory (no bundle file) and a configured CApath, each still trusted
 * after the directory is gone, as it is inside the jail. */
ATF_TC_WITHOUT_HEAD(trust_loaded_now);
ATF_TC_BODY(trust_loaded_now, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	tls_client_config_t cfg;
	struct client c;
	str_t err = STR_INIT;
	char dir[1024];
	tls_ctx_t *ctx;

	make_pki();
	ATF_REQUIRE(system("mkdir -p store capath && cp ca.pem store/ && "
	    "cp ca.pem capath/ && openssl rehash store >/dev/null 2>&1 && "
	    "openssl rehash capath >/dev/null 2>&1") == 0);
	ATF_REQUIRE(getcwd(dir, sizeof(dir) - 8) != NULL);
	strncat(dir, "/store", sizeof(dir) - strlen(dir) - 1);
	ATF_REQUIRE(setenv("SSL_CERT_DIR", dir, 1) == 0);
	ATF_REQUIRE(setenv("SSL_CERT_FILE", "no-such-bundle.pem", 1) == 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.load_now = true;
	ctx = tls_client_ctx(&cfg, &err);
	ATF_REQUIRE_MSG(ctx != NULL, "%s", str_cstr(&err));
	/* ca.pem twice (the file and its hashed link), one certificate */
	ATF_CHECK_EQ(tls_ctx_trust_objects(ctx), 1);
	ATF_REQUIRE(rename("store", "store.gone") == 0);
	client_run_ctx(&c, ctx, &sa, TLS_LEVEL_VERIFY, "mx.example.test",
	    "example.test");
	ATF_CHECK_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	if (c.status == TLS_OK)
		ATF_CHECK_EQ(tls_sess_trust(c.t), TLS_TRUSTED);
	ATF_CHECK_EQ(client_end(&c), 0);
	unsetenv("SSL_CERT_DIR");
	unsetenv("SSL_CERT_FILE");

	cfg.CApath = "capath";
	ctx = tls_client_ctx(&cfg, &err);
	ATF_REQUIRE_MSG(ctx != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE(rename("capath", "capath.gone") == 0);
	client_run_ctx(&c, ctx, &sa, TLS_LEVEL_VERIFY, "mx.example.test",
	    "example.test");
	ATF_CHECK_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(client_end(&c), 0);
	/* an empty directory is an error then, not an empty store */
	ATF_REQUIRE(mkdir("empty", 0755) == 0);
	cfg.CApath = "empty";
	ATF_CHECK(tls_client_ctx(&cfg, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err),
	    "CA directory empty: no certificate could be read");
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(verify_wrong_hostname);
ATF_TC_BODY(verify_wrong_hostname, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct server_arg wrong = { "wrong.pem", "wrong.key", NULL, 0, 0 };
	struct client c;

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_VERIFY, "mx.other.test",
	    "other.test");
	ATF_CHECK_EQ(c.status, TLS_ERR_VERIFY);
	ATF_CHECK(c.t == NULL);
	ATF_CHECK_STREQ(str_cstr(&c.err), "hostname mismatch: expected "
	    "mx.other.test or other.test, certificate names: DNS:mx.example.test");
	ATF_CHECK_EQ(client_end(&c), 0);

	/* A certificate from the right CA for another name. */
	client_run(&c, &wrong, "ca.pem", TLS_LEVEL_VERIFY, "mx.example.test",
	    "mx.example.test");
	ATF_CHECK_EQ(c.status, TLS_ERR_VERIFY);
	ATF_CHECK_STREQ(str_cstr(&c.err), "hostname mismatch: expected "
	    "mx.example.test, certificate names: DNS:wrong.example.test");
	ATF_CHECK_EQ(client_end(&c), 0);

	/* The same at encrypt: connected, with the mismatch noted. */
	client_run(&c, &wrong, "ca.pem", TLS_LEVEL_ENCRYPT, "mx.example.test",
	    NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(tls_sess_trust(c.t), TLS_TRUSTED);
	ATF_CHECK(!tls_sess_name_matched(c.t));
	ATF_CHECK_MATCH("^hostname mismatch", tls_sess_verify_reason(c.t));
	ATF_CHECK_EQ(client_end(&c), 0);
}

ATF_TC_WITHOUT_HEAD(verify_unknown_ca);
ATF_TC_BODY(verify_unknown_ca, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;

	make_pki();
	client_run(&c, &sa, "ca2.pem", TLS_LEVEL_VERIFY, "mx.example.test", NULL);
	ATF_CHECK_EQ(c.status, TLS_ERR_VERIFY);
	ATF_CHECK_STREQ(str_cstr(&c.err),
	    "server certificate not trusted: unable to get local issuer certificate");
	ATF_CHECK_EQ(client_end(&c), 0);

	/* Nor does a self-signed certificate pass at secure. */
	struct server_arg self = { "self.pem", "self.key", NULL, 0, 0 };
	client_run(&c, &self, "ca.pem", TLS_LEVEL_SECURE, "mx.example.test",
	    "example.test");
	ATF_CHECK_EQ(c.status, TLS_ERR_VERIFY);
	ATF_CHECK_MATCH("^server certificate not trusted: self.signed certificate$",
	    str_cstr(&c.err));
	ATF_CHECK_EQ(client_end(&c), 0);

	/* encrypt does not care. */
	client_run(&c, &sa, "ca2.pem", TLS_LEVEL_ENCRYPT, "mx.example.test", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(tls_sess_trust(c.t), TLS_UNTRUSTED);
	ATF_CHECK_EQ(client_end(&c), 0);
}

ATF_TC_WITHOUT_HEAD(verify_expired);
ATF_TC_BODY(verify_expired, tc)
{
	struct server_arg sa = { "expired.pem", "expired.key", NULL, 0, 0 };
	struct client c;

	make_pki();
	if (access("expired.pem", F_OK) != 0)
		atf_tc_skip("this openssl cannot make an expired certificate"
		    " (x509 -days -1)");
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_VERIFY, "mx.example.test", NULL);
	ATF_CHECK_EQ(c.status, TLS_ERR_VERIFY);
	ATF_CHECK_STREQ(str_cstr(&c.err),
	    "server certificate not trusted: certificate has expired");
	ATF_CHECK_EQ(client_end(&c), 0);
}

ATF_TC_WITHOUT_HEAD(secure_level);
ATF_TC_BODY(secure_level, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;

	make_pki();
	/* mx.example.test is a subdomain of the nexthop example.test. */
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_SECURE, "mx.example.test",
	    "example.test");
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(tls_sess_trust(c.t), TLS_TRUSTED);
	ATF_CHECK_STREQ(ask(c.s, "ECHO secure"), "secure");
	ATF_CHECK_EQ(client_end(&c), 0);

	/* The nexthop itself. */
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_SECURE, "whatever.test",
	    "mx.example.test");
	ATF_CHECK_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_EQ(client_end(&c), 0);

	/* The MX host name (from DNS) does not count at secure. */
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_SECURE, "mx.example.test",
	    "other.test");
	ATF_CHECK_EQ(c.status, TLS_ERR_VERIFY);
	ATF_CHECK_STREQ(str_cstr(&c.err), "hostname mismatch: expected "
	    "other.test or a subdomain of it, certificate names: DNS:mx.example.test");
	ATF_CHECK_EQ(client_end(&c), 0);

	/* A parent domain of the certificate's name is no match. */
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_SECURE, "mx.example.test",
	    "a.mx.example.test");
	ATF_CHECK_EQ(c.status, TLS_ERR_VERIFY);
	ATF_CHECK_EQ(client_end(&c), 0);
}

/* A plaintext SMTP server that never answers a ClientHello. */
static void silent_server(int fd, void *arg)
{
	char buf[512];
	ssize_t n;

	(void)arg;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	close(fd);
	exit(0);
}

/* A plaintext SMTP server that greets and complains. */
static void talking_server(int fd, void *arg)
{
	char buf[512];
	const char *msg = "220 plain.example.test ESMTP\r\n";

	(void)arg;
	sock_set_nonblock(fd, false);
	if (write(fd, msg, strlen(msg)) < 0)
		exit(1);
	if (read(fd, buf, sizeof(buf)) > 0) {
		/* The client may have given up already: no matter. */
		msg = "500 5.5.2 Error: bad syntax\r\n";
		(void)send(fd, msg, strlen(msg), MSG_NOSIGNAL);
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	exit(0);
}

ATF_TC_WITHOUT_HEAD(encrypt_plaintext_server);
ATF_TC_BODY(encrypt_plaintext_server, tc)
{
	tls_ctx_t *ctx = client_ctx(NULL, NULL);
	tls_peer_t peer = { TLS_LEVEL_ENCRYPT, "mx.example.test", NULL };
	str_t err = STR_INIT;
	tls_sess_t *t = (tls_sess_t *)&err;
	stream_t *s;
	pid_t pid;
	int st;

	/* Silent: the time limit ends it. */
	s = stream_open(connect_child(silent_server, NULL, &pid));
	st = tls_client_start(ctx, s, &peer, SHORT_MS, &t, &err);
	ATF_CHECK_EQ(st, TLS_ERR_TIMEOUT);
	ATF_CHECK(t == NULL);
	ATF_CHECK_MATCH("^TLS handshake timed out", str_cstr(&err));
	stream_close(s);
	ATF_CHECK_EQ(reap(pid), 0);

	/* Talking plain text: an error, not a hang (the long limit is
	 * never reached). */
	s = stream_open(connect_child(talking_server, NULL, &pid));
	st = tls_client_start(ctx, s, &peer, IO_MS, &t, &err);
	ATF_CHECK_EQ(st, TLS_ERR_HANDSHAKE);
	ATF_CHECK_MATCH("^TLS handshake failed: .*(wrong version number|"
	    "packet length too long|record layer failure)", str_cstr(&err));
	stream_close(s);
	ATF_CHECK_EQ(reap(pid), 0);

	/* Nothing was left in OpenSSL's error queue. */
	ATF_CHECK_EQ(ERR_peek_error(), 0);
	str_release(&err);
	tls_ctx_free(ctx);
}

ATF_TC_WITHOUT_HEAD(level_none_refused);
ATF_TC_BODY(level_none_refused, tc)
{
	tls_ctx_t *ctx = client_ctx(NULL, NULL);
	tls_peer_t peer = { TLS_LEVEL_NONE, "mx.example.test", NULL };
	str_t err = STR_INIT;
	tls_sess_t *t;
	int sv[2];
	stream_t *s;

	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	s = stream_open(sv[0]);
	ATF_CHECK_EQ(tls_client_start(ctx, s, &peer, SHORT_MS, &t, &err),
	    TLS_ERR_HANDSHAKE);
	ATF_CHECK(t == NULL);
	ATF_CHECK_MATCH("level none", str_cstr(&err));
	/* A client context is no server context, and the reverse. */
	ATF_CHECK_EQ(tls_server_start(ctx, s, SHORT_MS, &t, &err),
	    TLS_ERR_HANDSHAKE);
	ATF_CHECK_STREQ(str_cstr(&err), "TLS: not a server context");
	stream_close(s);
	close(sv[1]);
	str_release(&err);
	tls_ctx_free(ctx);
}

ATF_TC_WITHOUT_HEAD(server_load_errors);
ATF_TC_BODY(server_load_errors, tc)
{
	struct server_arg a;
	str_t err = STR_INIT;
	tls_ctx_t *ctx;
	char cwd[1024], expect[1200];

	make_pki();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);

	/* Good ones: separate files, and key and certificate in one. */
	a = (struct server_arg){ "server.pem", "server.key", NULL, 0, 0 };
	ctx = server_ctx(&a, &err);
	ATF_CHECK_MSG(ctx != NULL, "%s", str_cstr(&err));
	tls_ctx_free(ctx);
	a = (struct server_arg){ "combined.pem", NULL, NULL, 0, 0 };
	ctx = server_ctx(&a, &err);
	ATF_CHECK_MSG(ctx != NULL, "%s", str_cstr(&err));
	tls_ctx_free(ctx);

	a = (struct server_arg){ "server.pem", "garbage.pem", NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_MATCH("^cannot load private key from garbage.pem: ",
	    str_cstr(&err));

	a = (struct server_arg){ "server.pem", "missing.key", NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "cannot open private key file "
	    "missing.key: No such file or directory");

	snprintf(expect, sizeof(expect), "cannot open certificate file "
	    "%s/nope.pem: No such file or directory", cwd);
	snprintf(cwd + strlen(cwd), sizeof(cwd) - strlen(cwd), "/nope.pem");
	a = (struct server_arg){ cwd, "server.key", NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), expect);

	a = (struct server_arg){ "garbage.pem", "server.key", NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_MATCH("^cannot load certificate from garbage.pem: .*no start line",
	    str_cstr(&err));

	a = (struct server_arg){ "server.pem", "wrong.key", NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "private key in wrong.key does not "
	    "match the certificate in server.pem");
	/* The same with a key of the same type (both EC). */
	a = (struct server_arg){ "wrong.pem", "self.key", NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "private key in self.key does not "
	    "match the certificate in wrong.pem");

	/* A key with a pass phrase is refused, never prompted for. */
	a = (struct server_arg){ "server.pem", "locked.key", NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_MATCH("^cannot load private key from locked.key: it is "
	    "encrypted with a pass phrase", str_cstr(&err));

	a = (struct server_arg){ ".", "server.key", NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "certificate file . is not a regular file");

	a = (struct server_arg){ "", NULL, NULL, 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "no server certificate file given");

	a = (struct server_arg){ "server.pem", "server.key", "TLSv1.4", 0, 0 };
	ATF_CHECK(server_ctx(&a, &err) == NULL);
	ATF_CHECK_MATCH("unknown TLS protocol \"TLSv1.4\"", str_cstr(&err));

	/* The extra chain file. */
	tls_server_config_t cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.cert_file = "server.pem";
	cfg.key_file = "server.key";
	cfg.chain_file = "ca.pem";
	ctx = tls_server_ctx(&cfg, &err);
	ATF_CHECK_MSG(ctx != NULL, "%s", str_cstr(&err));
	tls_ctx_free(ctx);
	cfg.chain_file = "garbage.pem";
	ATF_CHECK(tls_server_ctx(&cfg, &err) == NULL);
	ATF_CHECK_MATCH("^cannot load certificate chain from garbage.pem",
	    str_cstr(&err));
	cfg.chain_file = NULL;
	cfg.ciphers = "NO-SUCH-CIPHER";
	ATF_CHECK(tls_server_ctx(&cfg, &err) == NULL);
	ATF_CHECK_MATCH("^bad TLS cipher list \"NO-SUCH-CIPHER\"", str_cstr(&err));

	/* Nothing was left in OpenSSL's error queue. */
	ATF_CHECK_EQ(ERR_peek_error(), 0);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(from_config);
ATF_TC_BODY(from_config, tc)
{
	str_t err = STR_INIT;
	tls_ctx_t *ctx;

	make_pki();
	ATF_REQUIRE_EQ(pconfig_load_text("", "main.cf"), 0);
	ATF_CHECK(tls_server_ctx_from_config(&err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err),
	    "smtpd_tls_cert_file is empty: no server certificate");
	/* smtpd_tls_key_file defaults to the certificate file. */
	ATF_REQUIRE_EQ(pconfig_load_text("smtpd_tls_cert_file = combined.pem\n",
	    "main.cf"), 0);
	ctx = tls_server_ctx_from_config(&err);
	ATF_CHECK_MSG(ctx != NULL, "%s", str_cstr(&err));
	tls_ctx_free(ctx);
	ATF_REQUIRE_EQ(pconfig_load_text("smtpd_tls_cert_file = server.pem\n"
	    "smtpd_tls_key_file = server.key\nsmtpd_tls_protocols = !TLSv1.3 bogus\n",
	    "main.cf"), 0);
	ATF_CHECK(tls_server_ctx_from_config(&err) == NULL);
	ATF_CHECK_MATCH("^smtpd_tls_protocols: unknown TLS protocol \"bogus\"",
	    str_cstr(&err));

	ATF_REQUIRE_EQ(pconfig_load_text("smtp_tls_CAfile = ca.pem\n", "main.cf"), 0);
	ctx = tls_client_ctx_from_config("smtp", false, &err);
	ATF_CHECK_MSG(ctx != NULL, "%s", str_cstr(&err));
	tls_ctx_free(ctx);
	ATF_REQUIRE_EQ(pconfig_load_text("smtp_tls_CAfile = nope.pem\n", "main.cf"), 0);
	ATF_CHECK(tls_client_ctx_from_config("smtp", false, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err),
	    "cannot open CA file nope.pem: No such file or directory");
	ATF_REQUIRE_EQ(pconfig_load_text("smtp_tls_protocols = <=TLSv1.1 >=TLSv1.2\n",
	    "main.cf"), 0);
	ATF_CHECK(tls_client_ctx_from_config("smtp", false, &err) == NULL);
	ATF_CHECK_MATCH("^smtp_tls_protocols: .*no version", str_cstr(&err));
	pconfig_reset();
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(client_load_errors);
ATF_TC_BODY(client_load_errors, tc)
{
	tls_client_config_t cfg;
	str_t err = STR_INIT;
	tls_ctx_t *ctx;

	make_pki();
	memset(&cfg, 0, sizeof(cfg));
	cfg.CAfile = "garbage.pem";
	ATF_CHECK(tls_client_ctx(&cfg, &err) == NULL);
	ATF_CHECK_MATCH("^cannot load CA certificates from garbage.pem: ",
	    str_cstr(&err));
	cfg.CAfile = NULL;
	cfg.CApath = "ca.pem";
	ATF_CHECK(tls_client_ctx(&cfg, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "CA directory ca.pem is not a directory");
	cfg.CApath = "nodir";
	ATF_CHECK(tls_client_ctx(&cfg, &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err),
	    "cannot use CA directory nodir: No such file or directory");
	cfg.CApath = ".";
	ctx = tls_client_ctx(&cfg, &err);
	ATF_CHECK_MSG(ctx != NULL, "%s", str_cstr(&err));
	tls_ctx_free(ctx);
	/* An optional client certificate is checked like the server's. */
	cfg.CApath = NULL;
	cfg.cert_file = "server.pem";
	cfg.key_file = "wrong.key";
	ATF_CHECK(tls_client_ctx(&cfg, &err) == NULL);
	ATF_CHECK_MATCH("does not match", str_cstr(&err));
	cfg.key_file = "server.key";
	ctx = tls_client_ctx(&cfg, &err);
	ATF_CHECK_MSG(ctx != NULL, "%s", str_cstr(&err));
	tls_ctx_free(ctx);
	ATF_CHECK_EQ(ERR_peek_error(), 0);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(protocols_parse);
ATF_TC_BODY(protocols_parse, tc)
{
	static const struct {
		const char *spec;
		int min, max;
	} ok[] = {
		{ "", TLS1_2_VERSION, TLS1_3_VERSION },
		{ ">=TLSv1.2", TLS1_2_VERSION, TLS1_3_VERSION },
		{ ">=TLSv1.3", TLS1_3_VERSION, TLS1_3_VERSION },
		{ "TLSv1.2", TLS1_2_VERSION, TLS1_2_VERSION },
		{ "TLSv1.2 TLSv1.3", TLS1_2_VERSION, TLS1_3_VERSION },
		{ "!SSLv2, !SSLv3, !TLSv1, !TLSv1.1", TLS1_2_VERSION, TLS1_3_VERSION },
		{ "!SSLv2:!SSLv3:!TLSv1", TLS1_1_VERSION, TLS1_3_VERSION },
		{ ">=TLSv1.1 <=TLSv1.2", TLS1_1_VERSION, TLS1_2_VERSION },
		{ ">=SSLv3", TLS1_VERSION, TLS1_3_VERSION },
		{ "tlsv1.3", TLS1_3_VERSION, TLS1_3_VERSION },
		{ " TLSv1.3 ,, ", TLS1_3_VERSION, TLS1_3_VERSION },
	};
	static const struct {
		const char *spec, *re;
	} bad[] = {
		{ "TLSv1.4", "^unknown TLS protocol \"TLSv1.4\" in \"TLSv1.4\"$" },
		{ "=>TLSv1.2", "unknown TLS protocol \"=>TLSv1.2\"" },
		{ ">= TLSv1.2", "unknown TLS protocol \"\"" },
		{ "SSLv3", "leave no version enabled" },
		{ "TLSv1.1 TLSv1.3", "leave a gap" },
		{ "!TLSv1.2", "leave a gap" },
		{ ">=TLSv1.3 <=TLSv1.2", "leave no version enabled" },
		{ "!TLSv1 !TLSv1.1 !TLSv1.2 !TLSv1.3", "leave no version" },
	};
	str_t err = STR_INIT;
	int min, max;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		min = max = -1;
		ATF_CHECK_EQ_MSG(tls_protocols_parse(ok[i].spec, &min, &max, &err),
		    0, "%s: %s", ok[i].spec, str_cstr(&err));
		ATF_CHECK_EQ_MSG(min, ok[i].min, "%s", ok[i].spec);
		ATF_CHECK_EQ_MSG(max, ok[i].max, "%s", ok[i].spec);
	}
	ATF_CHECK_EQ(tls_protocols_parse(NULL, &min, &max, &err), 0);
	ATF_CHECK_EQ(min, TLS1_2_VERSION);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		str_reset(&err);
		ATF_CHECK_EQ_MSG(tls_protocols_parse(bad[i].spec, &min, &max, &err),
		    -1, "%s", bad[i].spec);
		ATF_CHECK_MATCH_MSG(bad[i].re, str_cstr(&err), "%s: %s",
		    bad[i].spec, str_cstr(&err));
	}
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(names);
ATF_TC_BODY(names, tc)
{
	static const char *const levels[] = { "none", "may", "encrypt",
		"verify", "secure" };
	enum tls_level lvl;

	for (int i = 0; i < 5; i++) {
		ATF_CHECK(tls_level_parse(levels[i], &lvl));
		ATF_CHECK_EQ((int)lvl, i);
		ATF_CHECK_STREQ(tls_level_name(lvl), levels[i]);
	}
	ATF_CHECK(!tls_level_parse("Verify", &lvl));
	ATF_CHECK(!tls_level_parse("dane", &lvl));
	ATF_CHECK(!tls_level_parse(NULL, &lvl));
	ATF_CHECK_STREQ(tls_trust_name(TLS_ANONYMOUS), "Anonymous");
	ATF_CHECK_STREQ(tls_trust_name(TLS_UNTRUSTED), "Untrusted");
	ATF_CHECK_STREQ(tls_trust_name(TLS_TRUSTED), "Trusted");
	ATF_CHECK_STREQ(tls_status_name(TLS_ERR_VERIFY), "verification failed");
	ATF_CHECK_STREQ(tls_status_name(TLS_ERR_TIMEOUT), "handshake timed out");
}

/* Server child for the raw-peer tests: reports the start result only. */
static void start_only(int fd, void *arg)
{
	const struct server_arg *a = arg;
	str_t err = STR_INIT;
	tls_ctx_t *ctx;
	tls_sess_t *t;
	stream_t *s;
	int st;

	if ((ctx = server_ctx(a, &err)) == NULL) {
		report("ctx: %s", str_cstr(&err));
		exit(10);
	}
	s = stream_open(fd);
	st = tls_server_start(ctx, s, a->handshake_ms ? a->handshake_ms : IO_MS,
	    &t, &err);
	report("%d %s", st, str_cstr(&err));
	if (st == TLS_OK)
		tls_close(t, s, IO_MS);
	else
		stream_close(s);
	tls_ctx_free(ctx);
	str_release(&err);
	exit(ERR_peek_error() == 0 ? 0 : 20);
}

ATF_TC_WITHOUT_HEAD(tls11_refused);
ATF_TC_BODY(tls11_refused, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	SSL_CTX *raw;
	SSL *ssl;
	pid_t pid;
	int fd;

	make_pki();
	/* A client that insists on TLS 1.1 (security level 0, or OpenSSL 3
	 * would not even offer it). */
	raw = SSL_CTX_new(TLS_client_method());
	ATF_REQUIRE(raw != NULL);
	SSL_CTX_set_security_level(raw, 0);
	ATF_REQUIRE(SSL_CTX_set_cipher_list(raw, "DEFAULT:@SECLEVEL=0") == 1);
	ATF_REQUIRE(SSL_CTX_set_min_proto_version(raw, TLS1_1_VERSION));
	ATF_REQUIRE(SSL_CTX_set_max_proto_version(raw, TLS1_1_VERSION));
	fd = connect_child(start_only, &sa, &pid);
	sock_set_nonblock(fd, false);
	ssl = SSL_new(raw);
	SSL_set_fd(ssl, fd);
	ATF_CHECK(SSL_connect(ssl) != 1);
	ERR_clear_error();
	SSL_free(ssl);
	SSL_CTX_free(raw);
	close(fd);
	ATF_CHECK_EQ(reap(pid), 0);
	ATF_CHECK_MATCH("^1 TLS handshake failed: .*unsupported protocol",
	    child_output());
}

/* A server that speaks only TLS 1.1. */
static void tls11_server(int fd, void *arg)
{
	SSL_CTX *raw = SSL_CTX_new(TLS_server_method());
	SSL *ssl;
	int r;

	(void)arg;
	if (raw == NULL)
		exit(2);
	SSL_CTX_set_security_level(raw, 0);
	if (SSL_CTX_set_cipher_list(raw, "DEFAULT:@SECLEVEL=0") != 1 ||
	    !SSL_CTX_set_min_proto_version(raw, TLS1_1_VERSION) ||
	    !SSL_CTX_set_max_proto_version(raw, TLS1_1_VERSION) ||
	    SSL_CTX_use_certificate_chain_file(raw, "server.pem") != 1 ||
	    SSL_CTX_use_PrivateKey_file(raw, "server.key", SSL_FILETYPE_PEM) != 1)
		exit(3);
	sock_set_nonblock(fd, false);
	ssl = SSL_new(raw);
	SSL_set_fd(ssl, fd);
	r = SSL_accept(ssl);
	SSL_free(ssl);
	SSL_CTX_free(raw);
	close(fd);
	exit(r == 1 ? 1 : 0);
}

ATF_TC_WITHOUT_HEAD(client_refuses_tls11);
ATF_TC_BODY(client_refuses_tls11, tc)
{
	tls_ctx_t *ctx;
	tls_peer_t peer = { TLS_LEVEL_ENCRYPT, "mx.example.test", NULL };
	str_t err = STR_INIT;
	tls_sess_t *t;
	stream_t *s;
	pid_t pid;

	make_pki();
	ctx = client_ctx("ca.pem", NULL);
	s = stream_open(connect_child(tls11_server, NULL, &pid));
	ATF_CHECK_EQ(tls_client_start(ctx, s, &peer, IO_MS, &t, &err),
	    TLS_ERR_HANDSHAKE);
	ATF_CHECK_MATCH("^TLS handshake failed: .*(unsupported protocol|"
	    "protocol version)", str_cstr(&err));
	stream_close(s);
	ATF_CHECK_EQ(reap(pid), 0);
	tls_ctx_free(ctx);
	str_release(&err);
}

static const unsigned char hello_start[] = {
	0x16, 0x03, 0x01, 0x02, 0x00,	/* handshake record, 512 bytes */
	0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,	/* ClientHello, TLS 1.2 ... */
};

ATF_TC_WITHOUT_HEAD(client_gone_mid_handshake);
ATF_TC_BODY(client_gone_mid_handshake, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	pid_t pid;
	int fd;

	make_pki();
	/* Half a ClientHello, then gone. */
	fd = connect_child(start_only, &sa, &pid);
	ATF_REQUIRE_EQ(write(fd, hello_start, sizeof(hello_start)),
	    (ssize_t)sizeof(hello_start));
	close(fd);
	ATF_CHECK_EQ(reap(pid), 0);
	ATF_CHECK_MATCH("^1 TLS handshake failed: .*connection closed by peer",
	    child_output());

	/* Connected and gone without a byte. */
	unlink("child.out");
	fd = connect_child(start_only, &sa, &pid);
	close(fd);
	ATF_CHECK_EQ(reap(pid), 0);
	ATF_CHECK_MATCH("^1 TLS handshake failed: .*connection closed by peer",
	    child_output());

	/* A reset instead of a close. */
	unlink("child.out");
	fd = connect_child(start_only, &sa, &pid);
	ATF_REQUIRE_EQ(write(fd, hello_start, sizeof(hello_start)),
	    (ssize_t)sizeof(hello_start));
	struct linger lg = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	ATF_CHECK_EQ(reap(pid), 0);
	ATF_CHECK_MATCH("^1 TLS handshake failed: ", child_output());
}

ATF_TC_WITHOUT_HEAD(server_handshake_timeout);
ATF_TC_BODY(server_handshake_timeout, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, SHORT_MS, 0 };
	pid_t pid;
	int fd;

	make_pki();
	/* Connected, never a ClientHello: the child must give up alone. */
	fd = connect_child(start_only, &sa, &pid);
	ATF_CHECK_EQ(reap(pid), 0);
	close(fd);
	ATF_CHECK_MATCH("^2 TLS handshake timed out", child_output());
}

ATF_TC_WITHOUT_HEAD(read_timeout_through_layer);
ATF_TC_BODY(read_timeout_through_layer, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, SHORT_MS };
	struct client c;

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_MAY, "mx.example.test", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	/* The server's read times out while we are quiet; the flag is set
	 * (then cleared), and the session still works. */
	ATF_CHECK_STREQ(ask(c.s, "WAIT"), "TIMEDOUT");
	ATF_CHECK_STREQ(ask(c.s, "ECHO alive"), "alive");
	ATF_CHECK_EQ(client_end(&c), 0);
	ATF_CHECK_STREQ(child_output(), "wait: -1 timedout=1\neof\n");
}

ATF_TC_WITHOUT_HEAD(garbage_after_handshake);
ATF_TC_BODY(garbage_after_handshake, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;
	const char junk[] = "MAIL FROM:<injected@example.test>\r\n";
	char re[200];

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_MAY, "mx.example.test", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_STREQ(ask(c.s, "ECHO before"), "before");
	/* Plain text on the wire, bypassing TLS: the server's stream gets
	 * an error (EPROTO) with the reason, not garbage data. */
	ATF_REQUIRE_EQ(write(stream_fd(c.s), junk, sizeof(junk) - 1),
	    (ssize_t)sizeof(junk) - 1);
	ATF_CHECK_EQ(reap(c.pid), 0);
	/* The server has sent an alert and hung up: our close_notify may or
	 * may not get out, but closing must not crash or hang. */
	tls_close(c.t, c.s, IO_MS);
	tls_ctx_free(c.ctx);
	str_release(&c.err);
	snprintf(re, sizeof(re), "^error: errno %d: TLS read: .*(wrong version "
	    "number|record layer failure|packet length)", EPROTO);
	ATF_CHECK_MATCH_MSG(re, child_output(), "%s", child_output());
}

ATF_TC_WITHOUT_HEAD(hangup_without_close_notify);
ATF_TC_BODY(hangup_without_close_notify, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_MAY, "mx.example.test", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_STREQ(ask(c.s, "ECHO bye"), "bye");
	/* A FIN without close_notify: end of input for the server, not an
	 * error (SMTP frames its own data). */
	ATF_REQUIRE_EQ(shutdown(stream_fd(c.s), SHUT_WR), 0);
	ATF_CHECK_EQ(reap(c.pid), 0);
	ATF_CHECK_STREQ(child_output(), "eof\n");
	tls_close(c.t, c.s, IO_MS);
	tls_ctx_free(c.ctx);
	str_release(&c.err);
}

ATF_TC_WITHOUT_HEAD(sni_not_for_addresses);
ATF_TC_BODY(sni_not_for_addresses, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_MAY, "127.0.0.1", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_CHECK_MATCH("\\|Anonymous\\|$", ask(c.s, "DESC"));
	ATF_CHECK(!tls_sess_name_matched(c.t));
	ATF_CHECK_MATCH("hostname mismatch: expected 127.0.0.1,",
	    tls_sess_verify_reason(c.t));
	ATF_CHECK_EQ(client_end(&c), 0);
}

ATF_TC_WITHOUT_HEAD(plaintext_pending_refused);
ATF_TC_BODY(plaintext_pending_refused, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	const char in[] = "STARTTLS\r\nMAIL FROM:<evil@example.test>\r\n";
	str_t err = STR_INIT, line = STR_INIT;
	tls_ctx_t *ctx;
	tls_sess_t *t;
	stream_t *s;
	char buf[128];
	int sv[2];
	ssize_t n;

	make_pki();
	ctx = server_ctx(&sa, &err);
	ATF_REQUIRE_MSG(ctx != NULL, "%s", str_cstr(&err));
	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ATF_REQUIRE_EQ(write(sv[1], in, sizeof(in) - 1), (ssize_t)sizeof(in) - 1);
	s = stream_open(sv[0]);
	ATF_REQUIRE_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "STARTTLS");
	ATF_REQUIRE_EQ(stream_puts(s, "220 2.0.0 Ready to start TLS\r\n"), 0);
	/* The pipelined command is still buffered: refused. */
	ATF_CHECK_EQ(tls_server_start(ctx, s, SHORT_MS, &t, &err),
	    TLS_ERR_HANDSHAKE);
	ATF_CHECK_STREQ(str_cstr(&err), "TLS: 31 bytes of plaintext input "
	    "received before the TLS handshake");
	/* Purged, the handshake starts: the reply was flushed first, and
	 * with no ClientHello coming the time limit ends it. */
	ATF_CHECK_EQ(stream_purge(s), 31);
	ATF_CHECK_EQ(tls_server_start(ctx, s, SHORT_MS, &t, &err),
	    TLS_ERR_TIMEOUT);
	n = read(sv[1], buf, sizeof(buf) - 1);
	ATF_REQUIRE(n > 0);
	buf[n] = '\0';
	ATF_CHECK_STREQ(buf, "220 2.0.0 Ready to start TLS\r\n");
	stream_close(s);
	close(sv[1]);
	tls_ctx_free(ctx);
	str_release(&err);
	str_release(&line);
}

/* Over a socketpair (no TCP), the client gives up on a server that is
 * too slow, and the server, finding the client gone, fails cleanly. */
static void slow_server(int fd, void *arg)
{
	struct server_arg *a = arg;

	/* Wait until the client has given up and closed ("go" exists). */
	for (int i = 0; i < CHILD_ALARM * 100 && access("go", F_OK) != 0; i++)
		usleep(10000);
	start_only(fd, a);
}

ATF_TC_WITHOUT_HEAD(client_gives_up);
ATF_TC_BODY(client_gives_up, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	tls_ctx_t *ctx;
	tls_peer_t peer = { TLS_LEVEL_ENCRYPT, "mx.example.test", NULL };
	str_t err = STR_INIT;
	tls_sess_t *t;
	stream_t *s;
	pid_t pid;
	int sv[2], fd;

	make_pki();
	ctx = client_ctx("ca.pem", NULL);
	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork_child(slow_server, sv[1], sv[0], &sa);
	close(sv[1]);
	fd = sv[0];
	s = stream_open(fd);
	ATF_CHECK_EQ(tls_client_start(ctx, s, &peer, SHORT_MS, &t, &err),
	    TLS_ERR_TIMEOUT);
	/* The ClientHello is in the socket; the server reads it after we
	 * are gone. */
	stream_close(s);
	int g = open("go", O_CREAT | O_WRONLY, 0600);
	ATF_REQUIRE(g >= 0);
	close(g);
	ATF_CHECK_EQ(reap(pid), 0);
	ATF_CHECK_MATCH("^1 TLS handshake failed: ", child_output());
	tls_ctx_free(ctx);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(shutdown_then_write);
ATF_TC_BODY(shutdown_then_write, tc)
{
	struct server_arg sa = { "server.pem", "server.key", NULL, 0, 0 };
	struct client c;

	make_pki();
	client_run(&c, &sa, "ca.pem", TLS_LEVEL_MAY, "mx.example.test", NULL);
	ATF_REQUIRE_EQ_MSG(c.status, TLS_OK, "%s", str_cstr(&c.err));
	ATF_REQUIRE_EQ(stream_puts(c.s, "ECHO flushed by shutdown\r\n"), 0);
	/* Pending output goes out before close_notify. */
	ATF_CHECK_EQ(tls_shutdown(c.t, c.s, IO_MS), 0);
	ATF_CHECK_EQ(tls_shutdown(c.t, c.s, IO_MS), 0);	/* idempotent */
	/* The reply to what was sent before still arrives... */
	str_t line = STR_INIT;
	ATF_CHECK_EQ_MSG(stream_getline(c.s, &line, 100), STREAM_LINE_CRLF,
	    "errno %d: %s", stream_errno(c.s), tls_sess_error(c.t));
	ATF_CHECK_STREQ(str_cstr(&line), "flushed by shutdown");
	/* ...then the server's close_notify: end of input, no error. */
	ATF_CHECK_EQ(stream_getline(c.s, &line, 100), STREAM_LINE_NONE);
	ATF_CHECK(stream_eof(c.s));
	ATF_CHECK(!stream_error(c.s));
	str_release(&line);
	/* After our close_notify nothing more can be sent. */
	ATF_CHECK_EQ(stream_puts(c.s, "ECHO too late\r\n"), 0);
	ATF_CHECK_EQ(stream_flush(c.s), -1);
	ATF_CHECK_EQ(stream_errno(c.s), EPIPE);
	/* The lost output makes the close report failure; then the session
	 * can go. */
	ATF_CHECK_EQ(stream_close(c.s), -1);
	tls_sess_free(c.t);
	ATF_CHECK_EQ(reap(c.pid), 0);
	ATF_CHECK_STREQ(child_output(), "eof\n");
	tls_ctx_free(c.ctx);
	str_release(&c.err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, handshake_and_data);
	ATF_TP_ADD_TC(tp, tls12_description);
	ATF_TP_ADD_TC(tp, may_untrusted);
	ATF_TP_ADD_TC(tp, verify_trusted);
	ATF_TP_ADD_TC(tp, system_store_directory);
	ATF_TP_ADD_TC(tp, trust_loaded_now);
	ATF_TP_ADD_TC(tp, verify_wrong_hostname);
	ATF_TP_ADD_TC(tp, verify_unknown_ca);
	ATF_TP_ADD_TC(tp, verify_expired);
	ATF_TP_ADD_TC(tp, secure_level);
	ATF_TP_ADD_TC(tp, encrypt_plaintext_server);
	ATF_TP_ADD_TC(tp, level_none_refused);
	ATF_TP_ADD_TC(tp, server_load_errors);
	ATF_TP_ADD_TC(tp, from_config);
	ATF_TP_ADD_TC(tp, client_load_errors);
	ATF_TP_ADD_TC(tp, protocols_parse);
	ATF_TP_ADD_TC(tp, names);
	ATF_TP_ADD_TC(tp, tls11_refused);
	ATF_TP_ADD_TC(tp, client_refuses_tls11);
	ATF_TP_ADD_TC(tp, client_gone_mid_handshake);
	ATF_TP_ADD_TC(tp, server_handshake_timeout);
	ATF_TP_ADD_TC(tp, read_timeout_through_layer);
	ATF_TP_ADD_TC(tp, garbage_after_handshake);
	ATF_TP_ADD_TC(tp, hangup_without_close_notify);
	ATF_TP_ADD_TC(tp, sni_not_for_addresses);
	ATF_TP_ADD_TC(tp, plaintext_pending_refused);
	ATF_TP_ADD_TC(tp, client_gives_up);
	ATF_TP_ADD_TC(tp, shutdown_then_write);
	return atf_no_error();
}
