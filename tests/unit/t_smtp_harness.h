/* Shared pieces of the SMTP client tests (t_smtp_*.c): starting and
 * stopping smtp-sink and fakedns (from ../tools/, next to the test
 * programs), reading the sink's counters and saved messages, a scripted
 * SMTP server for replies no sink gives, test certificates, and a
 * one-call delivery through the engine.  Everything listens on
 * 127.0.0.0/8 with ports the kernel picks; every wait is bounded. */
#ifndef T_SMTP_HARNESS_H
#define T_SMTP_HARNESS_H
#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "qfile.h"
#include "sock.h"
#include "smtp/smtp.h"
#include "str.h"

#define H_FN static __attribute__((unused))

H_FN void h_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

H_FN void h_tool(const atf_tc_t *tc, const char *name, char *buf, size_t size)
{
	ATF_REQUIRE(atf_tc_has_config_var(tc, "srcdir"));
	snprintf(buf, size, "%s/../tools/%s", atf_tc_get_config_var(tc, "srcdir"),
	    name);
	ATF_REQUIRE_MSG(access(buf, X_OK) == 0, "%s: %s (make tests builds it)",
	    buf, strerror(errno));
}

/* Stops a child: SIGTERM, then SIGKILL after 5 s. */
H_FN void h_stop(pid_t pid)
{
	int i;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (i = 0; i < 100; i++) {
		if (waitpid(pid, NULL, WNOHANG) != 0)
			return;
		h_sleep_ms(50);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Waits (5 s at most) for a number in file; -1 if it never came. */
H_FN int h_wait_number(const char *file, pid_t pid)
{
	for (int i = 0; i < 100; i++) {
		FILE *fp = fopen(file, "r");
		int v = -1;
		if (fp != NULL) {
			if (fscanf(fp, "%d", &v) != 1)
				v = -1;
			fclose(fp);
			if (v > 0)
				return v;
		}
		if (pid > 0 && waitpid(pid, NULL, WNOHANG) != 0)
			return -1;
		h_sleep_ms(50);
	}
	return -1;
}

/* Remembers a child in NAME.pid, so the cleanup part of a test can stop
 * it even after the body failed. */
H_FN void h_pidfile(const char *name, pid_t pid)
{
	char file[64];
	FILE *fp;

	snprintf(file, sizeof(file), "%s.pid", name);
	if ((fp = fopen(file, "w")) != NULL) {
		fprintf(fp, "%d\n", (int)pid);
		fclose(fp);
	}
}

/* The cleanup of every test: stops whatever children are left. */
H_FN void h_cleanup(void)
{
	const char *names[] = { "sink0", "sink1", "sink2", "sink3", "fakedns",
	    "script", NULL };

	for (int i = 0; names[i] != NULL; i++) {
		char file[64];
		FILE *fp;
		int pid = -1;
		snprintf(file, sizeof(file), "%s.pid", names[i]);
		if ((fp = fopen(file, "r")) == NULL)
			continue;
		if (fscanf(fp, "%d", &pid) == 1 && pid > 0 &&
		    waitpid(pid, NULL, WNOHANG) == 0)
			h_stop(pid);
		else if (pid > 0 && kill(pid, 0) == 0)
			h_stop(pid);
		fclose(fp);
		unlink(file);
	}
}

/* A test case whose cleanup stops the servers it started. */
#define SMTP_TC(name)							\
	ATF_TC_WITH_CLEANUP(name);					\
	ATF_TC_HEAD(name, tc)						\
	{								\
		atf_tc_set_md_var(tc, "descr", "smtp client: " #name);	\
	}								\
	ATF_TC_CLEANUP(name, tc)					\
	{								\
		(void)tc;						\
		h_cleanup();						\
	}								\
	ATF_TC_BODY(name, tc)

/* Fails the test on a sanitizer report in a file. */
H_FN void h_check_clean(const char *file)
{
	str_t text = STR_INIT;

	if (file_read_all(file, &text, 1 << 20) == 0)
		ATF_CHECK_MSG(strstr(str_cstr(&text), "Sanitizer") == NULL &&
		    strstr(str_cstr(&text), "runtime error") == NULL,
		    "%s: %s", file, str_cstr(&text));
	str_release(&text);
}

/* ---- smtp-sink ---- */

#define SINK_MAX 4
typedef struct sink {
	pid_t pid;
	int port;
	char name[32];
} sink_t;
H_FN sink_t sinks[SINK_MAX];

/* Starts sink number n listening on addr ("127.0.0.1:0"), options in a
 * NULL-terminated list; returns its port. */
H_FN int sink_start_v(const atf_tc_t *tc, int n, const char *addr,
    const char *const *opts)
{
	char path[4096], portfile[64], stats[64], err[64];
	const char *argv[64];
	int k = 0;
	sink_t *s = &sinks[n];

	h_tool(tc, "smtp-sink", path, sizeof(path));
	snprintf(s->name, sizeof(s->name), "sink%d", n);
	snprintf(portfile, sizeof(portfile), "%s.port", s->name);
	snprintf(stats, sizeof(stats), "%s.stats", s->name);
	snprintf(err, sizeof(err), "%s.err", s->name);
	unlink(portfile);
	argv[k++] = "smtp-sink";
	argv[k++] = "-P";
	argv[k++] = portfile;
	argv[k++] = "-s";
	argv[k++] = stats;
	for (; opts != NULL && *opts != NULL && k < 60; opts++) {
		if (strcmp(*opts, "-d") == 0 && opts[1] != NULL)
			ATF_REQUIRE(mkdir(opts[1], 0755) == 0 || errno == EEXIST);
		argv[k++] = *opts;
	}
	argv[k++] = addr;
	argv[k] = NULL;
	fflush(NULL);
	s->pid = fork();
	ATF_REQUIRE(s->pid >= 0);
	if (s->pid == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int out = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2);
		if (out >= 0)
			dup2(out, 1);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	h_pidfile(s->name, s->pid);
	s->port = h_wait_number(portfile, s->pid);
	if (s->port <= 0) {
		str_t t = STR_INIT;
		file_read_all(err, &t, 8192);
		for (size_t i = 0; i < str_len(&t); i++)
			if (t.buf[i] == '\n')
				t.buf[i] = ' ';
		atf_tc_fail("smtp-sink did not start: %s", str_cstr(&t));
	}
	return s->port;
}

H_FN int sink_start(const atf_tc_t *tc, ...)
{
	const char *opts[40];
	va_list ap;
	int k = 0;

	va_start(ap, tc);
	while (k < 39 && (opts[k] = va_arg(ap, const char *)) != NULL)
		k++;
	va_end(ap);
	opts[k] = NULL;
	return sink_start_v(tc, 0, "127.0.0.1:0", opts);
}

/* Stops sink n (it writes its counters one last time). */
H_FN void sink_stop(int n)
{
	char err[64];

	if (sinks[n].pid <= 0)
		return;
	h_stop(sinks[n].pid);
	sinks[n].pid = 0;
	snprintf(err, sizeof(err), "%s.pid", sinks[n].name);
	unlink(err);
	snprintf(err, sizeof(err), "%s.err", sinks[n].name);
	h_check_clean(err);
}

H_FN void sink_stop_all(void)
{
	for (int n = 0; n < SINK_MAX; n++)
		sink_stop(n);
}

/* A counter of sink n (after sink_stop: exact). */
H_FN long sink_stat(int n, const char *key)
{
	char file[64];
	str_t t = STR_INIT;
	size_t kl = strlen(key);
	long v = -1;

	snprintf(file, sizeof(file), "sink%d.stats", n);
	if (file_read_all(file, &t, 1 << 16) == 0) {
		const char *p = str_cstr(&t);
		while (p != NULL && *p) {
			if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
				v = strtol(p + kl + 1, NULL, 10);
				break;
			}
			p = strchr(p, '\n');
			if (p != NULL)
				p++;
		}
	}
	str_release(&t);
	return v;
}

/* Waits (5 s at most) for a counter of a running sink to reach want. */
H_FN bool sink_stat_wait(int n, const char *key, long want)
{
	for (int i = 0; i < 100; i++) {
		if (sink_stat(n, key) == want)
			return true;
		h_sleep_ms(50);
	}
	return false;
}

/* How often needle occurs in sink n's stderr (with -v: the dialogue). */
H_FN int sink_log_count(int n, const char *needle)
{
	char file[64];
	str_t t = STR_INIT;
	int count = 0;

	snprintf(file, sizeof(file), "sink%d.err", n);
	if (file_read_all(file, &t, 1 << 24) == 0)
		for (const char *p = str_cstr(&t); (p = strstr(p, needle)) != NULL;
		    p += strlen(needle))
			count++;
	str_release(&t);
	return count;
}

/* The saved message number k (1-based order of names) in dir, CRs kept. */
H_FN void sink_message(const char *dir, int k, str_t *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char best[256] = "", path[512];
	int seen = 0;
	char **names = NULL;
	size_t n = 0;

	ATF_REQUIRE_MSG(d != NULL, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "msg-", 4) != 0)
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (strcmp(names[j], names[i]) < 0) {
				char *t = names[i];
				names[i] = names[j];
				names[j] = t;
			}
	for (size_t i = 0; i < n; i++) {
		if (++seen == k)
			snprintf(best, sizeof(best), "%s", names[i]);
		free(names[i]);
	}
	free(names);
	ATF_REQUIRE_MSG(best[0] != '\0', "no message %d in %s", k, dir);
	snprintf(path, sizeof(path), "%s/%s", dir, best);
	str_reset(out);
	ATF_REQUIRE(file_read_all(path, out, 1 << 24) == 0);
}

/* ---- fakedns ---- */

H_FN pid_t dns_pid;

H_FN int dns_start(const atf_tc_t *tc, const char *zone)
{
	char path[4096];
	FILE *fp;
	int port;

	h_tool(tc, "fakedns", path, sizeof(path));
	fp = fopen("zone", "w");
	ATF_REQUIRE(fp != NULL);
	fputs(zone, fp);
	ATF_REQUIRE(fclose(fp) == 0);
	unlink("fakedns.port");
	fflush(NULL);
	dns_pid = fork();
	ATF_REQUIRE(dns_pid >= 0);
	if (dns_pid == 0) {
		int fd = open("fakedns.err", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		execl(path, "fakedns", "-v", "-P", "fakedns.port", "-z", "zone",
		    "127.0.0.1:0", (char *)NULL);
		_exit(127);
	}
	h_pidfile("fakedns", dns_pid);
	port = h_wait_number("fakedns.port", dns_pid);
	ATF_REQUIRE_MSG(port > 0, "fakedns did not start (fakedns.err)");
	return port;
}

H_FN void dns_stop(void)
{
	if (dns_pid > 0) {
		h_stop(dns_pid);
		dns_pid = 0;
		unlink("fakedns.pid");
		h_check_clean("fakedns.err");
	}
}

/* Starts fakedns with zone and points cfg's lookups at it (DNS only,
 * IPv4); free the resolver returned after the client. */
H_FN dns_resolver_t *use_fakedns(const atf_tc_t *tc, const char *zone);

/* ---- a scripted server ----
 *
 * For replies smtp-sink does not give.  The script is a list of lines:
 *   "> TEXT"    send TEXT and CRLF
 *   "< PREFIX"  read a line; it must start with PREFIX (any case)
 *   "<DATA"     read message lines up to the single dot
 *   "CLOSE"     hang up; the next line serves the next connection
 *   "NEXT"      leave this connection open, unread, and serve the next
 *   "SLEEP MS"  wait
 * Every line received is appended to script.log as "C: line", failures
 * as "FAIL: ...", and each connection starts with "CONNECT". */

H_FN pid_t script_pid;

H_FN void script_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
H_FN void script_log(const char *fmt, ...)
{
	FILE *f = fopen("script.log", "a");
	va_list ap;

	if (f == NULL)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

/* Reads one line (without CRLF) from fd, byte by byte (the test server
 * need not be fast); false at EOF. */
H_FN bool script_getline(int fd, char *buf, size_t size)
{
	size_t n = 0;
	char c;

	for (;;) {
		ssize_t k = read(fd, &c, 1);
		if (k <= 0)
			return false;
		if (c == '\n')
			break;
		if (n + 1 < size)
			buf[n++] = c;
	}
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	return true;
}

H_FN void script_run(int lfd, const char *const *script)
{
	int fd = -1;
	char line[4096];

	for (; *script != NULL; script++) {
		const char *s = *script;
		if (fd < 0) {
			fd = accept(lfd, NULL, NULL);
			if (fd < 0)
				_exit(1);
			script_log("CONNECT");
		}
		if (s[0] == '>') {
			char out[4096];
			snprintf(out, sizeof(out), "%s\r\n", s + 2);
			if (write(fd, out, strlen(out)) < 0)
				script_log("FAIL: write");
		} else if (strcmp(s, "<DATA") == 0) {
			for (;;) {
				if (!script_getline(fd, line, sizeof(line))) {
					script_log("FAIL: EOF in DATA");
					break;
				}
				script_log("D: %s", line);
				if (strcmp(line, ".") == 0)
					break;
			}
		} else if (s[0] == '<') {
			if (!script_getline(fd, line, sizeof(line))) {
				script_log("FAIL: EOF, expected %s", s + 2);
				close(fd);
				fd = -1;
				continue;
			}
			script_log("C: %s", line);
			if (strncasecmp(line, s + 2, strlen(s + 2)) != 0)
				script_log("FAIL: expected %s", s + 2);
		} else if (strcmp(s, "CLOSE") == 0) {
			close(fd);
			fd = -1;
		} else if (strcmp(s, "NEXT") == 0) {
			fd = -1;	/* still open: closed when we exit */
		} else if (strncmp(s, "SLEEP ", 6) == 0) {
			h_sleep_ms(atoi(s + 6));
		}
	}
	/* Give the client a moment to read the last reply, then record
	 * anything else it sends until it hangs up. */
	if (fd >= 0) {
		while (script_getline(fd, line, sizeof(line)))
			script_log("C: %s", line);
		close(fd);
	}
	script_log("END");
}

/* Starts the scripted server; returns its port. */
H_FN int script_start(const char *const *script)
{
	int fds[SOCK_LISTEN_MAX], port;

	unlink("script.log");
	ATF_REQUIRE(sock_tcp_listen("127.0.0.1:0", 10, fds) == 1);
	port = sock_local_port(fds[0]);
	fflush(NULL);
	script_pid = fork();
	ATF_REQUIRE(script_pid >= 0);
	if (script_pid == 0) {
		alarm(30);
		script_run(fds[0], script);
		exit(0);
	}
	close(fds[0]);
	h_pidfile("script", script_pid);
	return port;
}

/* Waits for the script to end (10 s at most); returns its log. */
H_FN const char *script_finish(str_t *log)
{
	for (int i = 0; i < 200 && script_pid > 0; i++) {
		if (waitpid(script_pid, NULL, WNOHANG) != 0) {
			script_pid = 0;
			break;
		}
		h_sleep_ms(50);
	}
	if (script_pid > 0) {
		h_stop(script_pid);
		script_pid = 0;
	}
	unlink("script.pid");
	str_reset(log);
	file_read_all("script.log", log, 1 << 20);
	return str_cstr(log);
}

/* ---- certificates ---- */

H_FN const char pki_script[] =
    "set -e\n"
    "exec >pki.log 2>&1\n"
    "ec='-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes'\n"
    "openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj '/CN=Petrel SMTP Test CA'\n"
    "openssl req $ec -keyout server.key -out server.csr -subj /CN=mx.example.test\n"
    "printf 'subjectAltName=DNS:mx.example.test\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > server.ext\n"
    "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out server.pem -extfile server.ext\n";

H_FN void make_pki(void)
{
	FILE *f = fopen("pki.sh", "w");

	ATF_REQUIRE(f != NULL);
	fputs(pki_script, f);
	ATF_REQUIRE_EQ(fclose(f), 0);
	if (system("sh pki.sh") != 0) {
		if (system("cat pki.log >&2") != 0)
			(void)0;
		atf_tc_fail("could not make test certificates (see pki.log)");
	}
}

/* ---- the engine ---- */

H_FN smtp_config_t cfg;

/* Defaults for tests: 10 s timeouts (only failures wait that long), no
 * DNS, no TLS, the connection cache on. */
H_FN void cfg_init(void)
{
	log_init("t_smtp");
	log_to_file("smtp.log");
	smtp_config_defaults(&cfg);
	bcopy_str(cfg.helo_name, sizeof(cfg.helo_name), "client.test");
	cfg.connect_timeout_ms = cfg.helo_timeout_ms = 10000;
	cfg.starttls_timeout_ms = cfg.mail_timeout_ms = 10000;
	cfg.rcpt_timeout_ms = cfg.data_init_timeout_ms = 10000;
	cfg.data_xfer_timeout_ms = cfg.data_done_timeout_ms = 10000;
	cfg.rset_timeout_ms = cfg.quit_timeout_ms = 10000;
	cfg.cache_time_limit_ms = 10000;
}

H_FN dns_resolver_t *use_fakedns(const atf_tc_t *tc, const char *zone)
{
	char spec[64];
	str_t why = STR_INIT;
	dns_resolver_t *r;
	int port = dns_start(tc, zone);

	snprintf(spec, sizeof(spec), "127.0.0.1:%d", port);
	r = dns_resolver_new(spec, &why);
	ATF_REQUIRE_MSG(r != NULL, "%s", str_cstr(&why));
	dns_resolver_set_limits(r, 2, 2);
	cfg.dns.lookup = DNS_LOOKUP_DNS;
	cfg.dns.families = DNS_INET4;
	cfg.dns.resolver = r;
	cfg.dns.myhostname = "client.test";
	str_release(&why);
	return r;
}

#define MSG_TEXT "Subject: test\r\nFrom: sender@example.com\r\n\r\nHello.\r\n"

#define RCPT_MAX 64
typedef struct delivery {
	smtp_request_t req;
	smtp_rcpt_t rcpt[RCPT_MAX];
	smtp_memtext_t mem;
	char nexthop[128];
} delivery_t;

/* Prepares a delivery of text from sender to the NULL-terminated list
 * of recipients. */
H_FN void dl_init(delivery_t *d, const char *nexthop, const char *sender,
    const char *text, const char *const *rcpts)
{
	size_t n = 0;

	memset(d, 0, sizeof(*d));
	while (rcpts[n] != NULL && n < RCPT_MAX) {
		d->rcpt[n].in.address = (char *)rcpts[n];
		n++;
	}
	smtp_request_init(&d->req, d->rcpt, n);
	snprintf(d->nexthop, sizeof(d->nexthop), "%s", nexthop);
	d->req.nexthop = d->nexthop;
	d->req.queue_id = "TESTID";
	d->req.sender = sender;
	d->req.size = strlen(text);
	smtp_content_mem(&d->req.content, &d->mem, text, strlen(text));
}

H_FN void dl_free(delivery_t *d)
{
	smtp_request_release(&d->req);
}

H_FN const char *rstat_name(enum smtp_rstat s)
{
	switch (s) {
	case SMTP_R_SENT: return "sent";
	case SMTP_R_DEFER: return "deferred";
	case SMTP_R_BOUNCE: return "bounced";
	default: return "pending";
	}
}

/* Checks recipient i: status, DSN, and a piece of the diagnostic. */
#define CHECK_RCPT(dl_, i_, st_, dsn_, piece_) do {			\
	const smtp_rcpt_t *r_ = &(dl_)->rcpt[i_];			\
	ATF_CHECK_MSG(r_->status == (st_), "rcpt %d <%s>: %s, want %s (%s)", \
	    (int)(i_), r_->in.address, rstat_name(r_->status), rstat_name(st_), \
	    str_cstr(&r_->diag));					\
	ATF_CHECK_MSG(strcmp(r_->dsn, (dsn_)) == 0,			\
	    "rcpt %d: dsn %s, want %s (%s)", (int)(i_), r_->dsn, (dsn_),	\
	    str_cstr(&r_->diag));					\
	ATF_CHECK_MSG(strstr(str_cstr(&r_->diag), (piece_)) != NULL,	\
	    "rcpt %d: diag \"%s\" lacks \"%s\"", (int)(i_),		\
	    str_cstr(&r_->diag), (piece_));				\
} while (0)

/* The log written so far. */
H_FN const char *log_text(str_t *out)
{
	str_reset(out);
	file_read_all("smtp.log", out, 1 << 22);
	return str_cstr(out);
}

#endif
