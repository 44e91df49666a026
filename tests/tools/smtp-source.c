/* smtp-source: an SMTP load generator for tests and benchmarks.
 *
 * N sessions in parallel (one thread each) share M messages; each session
 * connects, says EHLO (HELO if refused), optionally STARTTLS, sends up to
 * -M messages of R recipients each (pipelined when the server offers
 * PIPELINING), says QUIT and starts over until no message is left.  At the
 * end it prints the rate and the counts of 2xx/4xx/5xx replies, and exits
 * non-zero if any message was not accepted.  See doc/test-tools.md. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "file.h"
#include "log.h"
#include "mem.h"
#include "sock.h"
#include "str.h"

static struct {
	unsigned long sessions, messages, per_session, rcpts, size;
	unsigned long first;		/* -N: number of the first message - 1 */
	const char *sender, *rcpt_pattern, *helo, *bind_addr;
	int accepted_fd;		/* -o: one line per accepted message */
	bool no_pipelining, starttls, accept_failures, use_helo;
	unsigned long timeout;		/* seconds, per reply */
} cf = {
	.sessions = 1,
	.messages = 1,
	.per_session = 1,
	.rcpts = 1,
	.size = 1024,
	.sender = "sender@smtp-source.test",
	.rcpt_pattern = "user%d@example.com",
	.helo = "smtp-source.test",
	.timeout = 30,
	.accepted_fd = -1,
};

static struct addrinfo *target;
static char target_name[300];
static SSL_CTX *tls_ctx;
static str_t body = STR_INIT;	/* shared, already dot-stuffed */

static pthread_mutex_t claim_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long claimed;

/* Counters, one set per session thread, added up at the end. */
struct counts {
	unsigned long long accepted, failed, rcpt_ok, rcpt_bad, connections,
	    connect_failures, tls, r2, r3, r4, r5, bytes;
};

struct session {
	unsigned long id;
	pthread_t tid;
	int fd;
	SSL *ssl;
	char in[8192];
	size_t in_start, in_end;
	str_t out;
	char last[512];		/* last reply line, for messages */
	bool pipelining, size_ext, tls_offered;
	struct counts c;
};

/* Takes the next message number (1-based), or 0 if all are taken. */
static unsigned long claim(void)
{
	unsigned long n = 0;
	pthread_mutex_lock(&claim_lock);
	if (claimed < cf.messages)
		n = ++claimed + cf.first;
	pthread_mutex_unlock(&claim_lock);
	return n;
}

/* Expands %d (recipient number), %n (message number) and %%.  Patterns
 * were checked by check_pattern, so nothing else follows a '%'. */
static void expand(str_t *out, const char *pat, unsigned long rcpt,
    unsigned long msg)
{
	for (const char *p = pat; *p; p++) {
		if (*p != '%') {
			str_putc(out, *p);
			continue;
		}
		p++;
		if (*p == 'd')
			str_catf(out, "%lu", rcpt);
		else if (*p == 'n')
			str_catf(out, "%lu", msg);
		else
			str_putc(out, '%');
	}
}

static void check_pattern(const char *opt, const char *pat)
{
	for (const char *p = pat; *p; p++) {
		if (*p == '%') {
			p++;
			if (*p != 'd' && *p != 'n' && *p != '%')
				log_fatal("%s: only %%d, %%n and %%%% may follow '%%': %s", opt, pat);
		} else if (*p == '<' || *p == '>' || (unsigned char)*p <= ' ') {
			log_fatal("%s: no brackets, spaces or control characters: %s", opt, pat);
		}
	}
}

/* Writes all of buf, through TLS once it is on.  (The plain path may use
 * write(): SIGPIPE is ignored, so a peer that went away gives EPIPE.) */
static int sess_write(struct session *s, const char *buf, size_t len)
{
	if (s->ssl == NULL)
		return file_write_all(s->fd, buf, len);
	while (len > 0) {
		int r = SSL_write(s->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
		if (r <= 0)
			return -1;
		buf += r;
		len -= (size_t)r;
	}
	return 0;
}

static int flush_out(struct session *s)
{
	int r = 0;
	if (str_len(&s->out) > 0) {
		r = sess_write(s, str_cstr(&s->out), str_len(&s->out));
		s->c.bytes += str_len(&s->out);
	}
	str_reset(&s->out);
	return r;
}

/* Queues a command (the CRLF is added). */
static void cmd(struct session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void cmd(struct session *s, const char *fmt, ...)
{
	va_list ap;
	size_t start = str_len(&s->out);
	va_start(ap, fmt);
	str_vcatf(&s->out, fmt, ap);
	va_end(ap);
	if (log_verbose)
		log_debug("%lu > %s", s->id, str_cstr(&s->out) + start);
	str_cat(&s->out, "\r\n");
}

static int fill(struct session *s)
{
	ssize_t n;
	if (s->in_start == s->in_end)
		s->in_start = s->in_end = 0;
	if (s->in_end == sizeof(s->in)) {
		memmove(s->in, s->in + s->in_start, s->in_end - s->in_start);
		s->in_end -= s->in_start;
		s->in_start = 0;
	}
	if (s->ssl != NULL) {
		int r = SSL_read(s->ssl, s->in + s->in_end,
		    (int)(sizeof(s->in) - s->in_end));
		if (r <= 0)
			return -1;
		n = r;
	} else {
		do
			n = recv(s->fd, s->in + s->in_end, sizeof(s->in) - s->in_end, 0);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return -1;
	}
	s->in_end += (size_t)n;
	return 0;
}

/* Reads one line into s->last (cut if longer); false at end of input,
 * error or timeout. */
static bool read_line(struct session *s)
{
	for (;;) {
		char *start = s->in + s->in_start;
		char *lf = memchr(start, '\n', s->in_end - s->in_start);
		if (lf != NULL) {
			size_t len = (size_t)(lf - start);
			if (len > 0 && start[len - 1] == '\r')
				len--;
			if (len >= sizeof(s->last))
				len = sizeof(s->last) - 1;
			memcpy(s->last, start, len);
			s->last[len] = 0;
			s->in_start = (size_t)(lf + 1 - s->in);
			return true;
		}
		if (s->in_start == 0 && s->in_end == sizeof(s->in)) {
			/* An absurdly long line: keep its start, drop the rest. */
			s->in_end = sizeof(s->last);
		}
		if (fill(s) < 0)
			return false;
	}
}

/* Reads a complete (possibly multi-line) reply; returns its code, or -1
 * if the connection broke or timed out.  With exts, records the EHLO
 * keywords. */
static int read_reply(struct session *s, bool exts)
{
	for (int lines = 0; lines < 1000; lines++) {
		if (!read_line(s)) {
			bfmt(s->last, sizeof(s->last), "(connection lost or timed out)");
			return -1;
		}
		if (log_verbose)
			log_debug("%lu < %s", s->id, s->last);
		const char *l = s->last;
		if (strlen(l) < 3 || l[0] < '2' || l[0] > '5' ||
		    l[1] < '0' || l[1] > '9' || l[2] < '0' || l[2] > '9' ||
		    (l[3] != 0 && l[3] != ' ' && l[3] != '-')) {
			return -1;	/* not SMTP */
		}
		if (exts && lines > 0) {
			const char *kw = l + 4;
			if (strncasecmp(kw, "PIPELINING", 10) == 0 && (kw[10] == 0 || kw[10] == ' '))
				s->pipelining = true;
			else if (strncasecmp(kw, "SIZE", 4) == 0 && (kw[4] == 0 || kw[4] == ' '))
				s->size_ext = true;
			else if (strncasecmp(kw, "STARTTLS", 8) == 0 && kw[8] == 0)
				s->tls_offered = true;
		}
		if (l[3] != '-') {
			int code = (l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0');
			switch (l[0]) {
			case '2': s->c.r2++; break;
			case '4': s->c.r4++; break;
			case '5': s->c.r5++; break;
			default: s->c.r3++; break;
			}
			return code;
		}
	}
	return -1;
}

static int connect_to(struct session *s)
{
	struct addrinfo *ai;
	int last_errno = 0;

	for (ai = target; ai != NULL; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		int flags, err = 0;
		socklen_t elen = sizeof(err);
		struct pollfd p;
		if (fd < 0) {
			last_errno = errno;
			continue;
		}
		if (cf.bind_addr != NULL) {
			struct addrinfo hints = { .ai_family = ai->ai_family,
				.ai_flags = AI_NUMERICHOST }, *b;
			if (getaddrinfo(cf.bind_addr, NULL, &hints, &b) != 0) {
				close(fd);
				last_errno = EADDRNOTAVAIL;
				continue;
			}
			int r = bind(fd, b->ai_addr, b->ai_addrlen);
			last_errno = errno;
			freeaddrinfo(b);
			if (r < 0) {
				close(fd);
				continue;
			}
		}
		flags = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, flags | O_NONBLOCK);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
			if (errno != EINPROGRESS) {
				last_errno = errno;
				close(fd);
				continue;
			}
			p.fd = fd;
			p.events = POLLOUT;
			if (poll(&p, 1, (int)cf.timeout * 1000) != 1 ||
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
				last_errno = err ? err : ETIMEDOUT;
				close(fd);
				continue;
			}
		}
		fcntl(fd, F_SETFL, flags);
		struct timeval tv = { (time_t)cf.timeout, 0 };
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		s->fd = fd;
		return 0;
	}
	log_warning("session %lu: cannot connect to %s: %s", s->id, target_name,
	    strerror(last_errno));
	return -1;
}

static void disconnect(struct session *s)
{
	if (s->ssl != NULL) {
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->in_start = s->in_end = 0;
	str_reset(&s->out);
}

static int say_hello(struct session *s)
{
	int code;
	s->pipelining = s->size_ext = s->tls_offered = false;
	if (!cf.use_helo) {
		cmd(s, "EHLO %s", cf.helo);
		if (flush_out(s) < 0 || (code = read_reply(s, true)) < 0)
			return -1;
		if (code / 100 == 2)
			return 0;
	}
	cmd(s, "HELO %s", cf.helo);
	if (flush_out(s) < 0 || (code = read_reply(s, false)) < 0)
		return -1;
	return code / 100 == 2 ? 0 : -1;
}

static int start_tls(struct session *s)
{
	int code;
	if (!s->tls_offered) {
		log_warning("session %lu: the server does not offer STARTTLS", s->id);
		return -1;
	}
	cmd(s, "STARTTLS");
	if (flush_out(s) < 0 || (code = read_reply(s, false)) < 0)
		return -1;
	if (code != 220) {
		log_warning("session %lu: STARTTLS refused: %s", s->id, s->last);
		return -1;
	}
	s->ssl = SSL_new(tls_ctx);
	if (s->ssl == NULL || !SSL_set_fd(s->ssl, s->fd) ||
	    !SSL_set_tlsext_host_name(s->ssl, target_name) ||
	    SSL_connect(s->ssl) != 1) {
		char buf[256];
		ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
		ERR_clear_error();
		log_warning("session %lu: TLS handshake failed: %s", s->id, buf);
		return -1;
	}
	if (log_verbose)
		log_debug("%lu: TLS established: %s with %s", s->id,
		    SSL_get_version(s->ssl), SSL_get_cipher_name(s->ssl));
	s->c.tls++;
	return say_hello(s);
}

static void build_message(str_t *msg, unsigned long n, const char *first_rcpt,
    const str_t *sender)
{
	char date[64];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S +0000", &tm);
	str_reset(msg);
	str_catf(msg, "From: <%s>\r\nTo: <%s>\r\nSubject: smtp-source message %lu\r\n"
	    "Message-ID: <%lu.%ld.%ld@smtp-source.test>\r\nDate: %s\r\n\r\n",
	    str_cstr(sender), first_rcpt, n, n, (long)getpid(), (long)now, date);
	str_append(msg, str_cstr(&body), str_len(&body));
	str_cat(msg, ".\r\n");
}

/* Sends message n on an open session.  Returns 0 if the session can go
 * on (whether or not the message was accepted), -1 if it broke. */
static int send_message(struct session *s, unsigned long n)
{
	str_t sender = STR_INIT, rcpt = STR_INIT, first = STR_INIT, msg = STR_INIT;
	unsigned long ok = 0;
	int code, rc = -1;
	bool accepted = false;
	bool pipe = s->pipelining && !cf.no_pipelining;

	expand(&sender, cf.sender, 0, n);
	expand(&first, cf.rcpt_pattern, 1, n);
	build_message(&msg, n, str_cstr(&first), &sender);
	if (s->size_ext)
		cmd(s, "MAIL FROM:<%s> SIZE=%zu", str_cstr(&sender), str_len(&msg));
	else
		cmd(s, "MAIL FROM:<%s>", str_cstr(&sender));
	if (!pipe) {
		if (flush_out(s) < 0 || (code = read_reply(s, false)) < 0)
			goto out;
		if (code / 100 != 2)
			goto reset;
	}
	for (unsigned long i = 1; i <= cf.rcpts; i++) {
		str_reset(&rcpt);
		expand(&rcpt, cf.rcpt_pattern, i, n);
		cmd(s, "RCPT TO:<%s>", str_cstr(&rcpt));
		if (!pipe) {
			if (flush_out(s) < 0 || (code = read_reply(s, false)) < 0)
				goto out;
			if (code / 100 == 2) {
				ok++;
				s->c.rcpt_ok++;
			} else {
				s->c.rcpt_bad++;
			}
		}
	}
	if (!pipe && ok == 0)
		goto reset;
	cmd(s, "DATA");
	if (flush_out(s) < 0)
		goto out;
	if (pipe) {
		bool mail_ok;
		if ((code = read_reply(s, false)) < 0)
			goto out;
		mail_ok = code / 100 == 2;
		for (unsigned long i = 1; i <= cf.rcpts; i++) {
			if ((code = read_reply(s, false)) < 0)
				goto out;
			if (code / 100 == 2 && mail_ok) {
				ok++;
				s->c.rcpt_ok++;
			} else {
				s->c.rcpt_bad++;
			}
		}
	}
	if ((code = read_reply(s, false)) < 0)
		goto out;
	if (code == 354) {
		/* A server that says 354 with no recipient gets an empty
		 * message, which it must then refuse. */
		if (ok == 0)
			str_set(&s->out, ".\r\n");
		else
			str_append(&s->out, str_cstr(&msg), str_len(&msg));
		if (log_verbose)
			log_debug("%lu > (message %lu, %zu bytes)", s->id, n, str_len(&s->out));
		if (flush_out(s) < 0 || (code = read_reply(s, false)) < 0)
			goto out;
		accepted = ok > 0 && code / 100 == 2;
		if (accepted && cf.accepted_fd >= 0) {
			/* One write of one line (O_APPEND), after the reply
			 * was read: a line means the client saw the 2xx. */
			char line[600];
			bfmt(line, sizeof(line), "%lu %s\n", n, s->last);
			if (file_write_all(cf.accepted_fd, line, strlen(line)) < 0)
				log_fatal("-o: %s", strerror(errno));
		}
		if (!accepted)
			log_info("session %lu: message %lu not accepted: %s", s->id, n, s->last);
		rc = 0;
		goto out;
	}
reset:
	log_info("session %lu: message %lu not accepted: %s", s->id, n, s->last);
	cmd(s, "RSET");
	if (flush_out(s) < 0 || read_reply(s, false) < 0)
		goto out;
	rc = 0;
out:
	if (accepted)
		s->c.accepted++;
	else
		s->c.failed++;
	if (rc < 0)
		log_info("session %lu: message %lu: %s", s->id, n, s->last);
	str_release(&sender);
	str_release(&rcpt);
	str_release(&first);
	str_release(&msg);
	return rc;
}

static void *session_thread(void *arg)
{
	struct session *s = arg;
	unsigned long n;

	while ((n = claim()) != 0) {
		unsigned long sent = 0;
		int code;

		s->c.connections++;
		if (connect_to(s) < 0) {
			s->c.connect_failures++;
			s->c.failed++;
			continue;
		}
		code = read_reply(s, false);
		if (code / 100 != 2 || say_hello(s) < 0 ||
		    (cf.starttls && start_tls(s) < 0)) {
			log_info("session %lu: no session: %s", s->id, s->last);
			s->c.failed++;
			disconnect(s);
			continue;
		}
		for (;;) {
			if (send_message(s, n) < 0) {
				disconnect(s);	/* no QUIT on a broken session */
				break;
			}
			sent++;
			if (cf.per_session && sent >= cf.per_session)
				break;
			if ((n = claim()) == 0)
				break;
		}
		if (s->fd >= 0) {
			cmd(s, "QUIT");
			if (flush_out(s) == 0)
				read_reply(s, false);
		}
		disconnect(s);
	}
	return NULL;
}

/* The shared body: numbered lines of 72 bytes, every tenth starting
 * with a dot (sent stuffed, to exercise the server's unstuffing), to about
 * cf.size bytes with the headers.  A line cut short at the end never
 * starts with a dot, so it cannot end the data early. */
static void build_body(void)
{
	unsigned long want = cf.size > 200 ? cf.size - 200 : 0;
	unsigned long line = 0;
	str_t l = STR_INIT;

	while (str_len(&body) + 2 < want) {
		size_t room = want - str_len(&body) - 2;
		line++;
		if (room >= 72 && line % 10 == 2)
			str_setf(&l, "..%06lu ", line);
		else
			str_setf(&l, "%06lu ", line);
		while (str_len(&l) < 72)
			str_cat(&l, "abcdefghijklmnopqrstuvwxyz0123456789");
		str_truncate(&l, room < 72 ? room : 72);
		str_cat(&l, "\r\n");
		str_append(&body, str_cstr(&l), str_len(&l));
	}
	if (str_len(&body) == 0)
		str_cat(&body, "smtp-source test message\r\n");
	str_release(&l);
}

static unsigned long num_arg(const char *opt, const char *arg,
    unsigned long min, unsigned long max)
{
	unsigned long v;
	if (!str_to_ulong(arg, &v) || v < min || v > max)
		log_fatal("bad value for %s: '%s' (%lu..%lu)", opt, arg, min, max);
	return v;
}

static void usage(void)
{
	fprintf(stderr,
	    "usage: smtp-source [options] host:port | [ipv6addr]:port\n"
	    "  -s N        parallel sessions (default 1)\n"
	    "  -m N        messages in total (default 1)\n"
	    "  -M N        messages per connection (default 1, 0: no limit)\n"
	    "  -r N        recipients per message (default 1)\n"
	    "  -l BYTES    message size (default 1024)\n"
	    "  -f ADDR     sender (default sender@smtp-source.test; %%n: message number)\n"
	    "  -t PATTERN  recipients (default user%%d@example.com; %%d: recipient\n"
	    "              number in the message, %%n: message number)\n"
	    "  -H NAME     EHLO/HELO name (default smtp-source.test)\n"
	    "  -E          say HELO, not EHLO\n"
	    "  -P          do not pipeline even if the server offers it\n"
	    "  -T          STARTTLS (required; the certificate is not checked)\n"
	    "  -b ADDR     bind to this local address (e.g. 127.0.0.2)\n"
	    "  -w SECS     timeout for connecting and for each reply (default 30)\n"
	    "  -a          exit 0 even if some messages were not accepted\n"
	    "  -N N        number the messages from N (default 1)\n"
	    "  -o FILE     append a line per accepted message: its number and the reply\n"
	    "  -v          log the dialogue to stderr\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct session *sess;
	struct counts t = { 0 };
	struct timespec t0, t1;
	int c;

	log_init("smtp-source");
	while ((c = getopt(argc, argv, "ab:EH:f:l:m:M:N:o:Pr:s:t:Tvw:")) != -1) {
		switch (c) {
		case 'a': cf.accept_failures = true; break;
		case 'b': cf.bind_addr = optarg; break;
		case 'E': cf.use_helo = true; break;
		case 'H': cf.helo = optarg; break;
		case 'f': cf.sender = optarg; break;
		case 'l': cf.size = num_arg("-l", optarg, 0, 1UL << 30); break;
		case 'm': cf.messages = num_arg("-m", optarg, 1, 100000000); break;
		case 'M': cf.per_session = num_arg("-M", optarg, 0, 100000000); break;
		case 'N': cf.first = num_arg("-N", optarg, 1, 1000000000) - 1; break;
		case 'o':
			cf.accepted_fd = open(optarg, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (cf.accepted_fd < 0)
				log_fatal("%s: %s", optarg, strerror(errno));
			break;
		case 'P': cf.no_pipelining = true; break;
		case 'r': cf.rcpts = num_arg("-r", optarg, 1, 100000); break;
		case 's': cf.sessions = num_arg("-s", optarg, 1, 10000); break;
		case 't': cf.rcpt_pattern = optarg; break;
		case 'T': cf.starttls = true; break;
		case 'v': log_verbose++; break;
		case 'w': cf.timeout = num_arg("-w", optarg, 1, 86400); break;
		default: usage();
		}
	}
	if (argc - optind != 1)
		usage();
	check_pattern("-f", cf.sender);
	check_pattern("-t", cf.rcpt_pattern);
	if (strlen(cf.helo) == 0 || strpbrk(cf.helo, " \r\n") != NULL)
		log_fatal("-H: a host name without spaces, please");

	/* host:port, [v6]:port; the host may be a name. */
	{
		const char *arg = argv[optind];
		char port[8];
		unsigned pn;
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
			.ai_flags = AI_NUMERICSERV };
		int r;
		if (sock_split_hostport(arg, -1, target_name, sizeof(target_name),
		    &pn) < 0 || target_name[0] == 0)
			log_fatal("bad server '%s' (host:port or [addr]:port)", arg);
		bfmt(port, sizeof(port), "%u", pn);
		if ((r = getaddrinfo(target_name, port, &hints, &target)) != 0)
			log_fatal("%s: %s", arg, gai_strerror(r));
	}
	if (cf.starttls) {
		tls_ctx = SSL_CTX_new(TLS_client_method());
		if (tls_ctx == NULL ||
		    !SSL_CTX_set_min_proto_version(tls_ctx, TLS1_2_VERSION))
			log_fatal("cannot set up TLS");
		SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_NONE, NULL);
	}
	signal(SIGPIPE, SIG_IGN);
	build_body();

	sess = xcalloc(cf.sessions, sizeof(*sess));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0; i < cf.sessions; i++) {
		pthread_attr_t attr;
		sess[i].id = i + 1;
		sess[i].fd = -1;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 1024 * 1024);
		if (pthread_create(&sess[i].tid, &attr, session_thread, &sess[i]) != 0)
			log_fatal("cannot start session thread %lu", i + 1);
		pthread_attr_destroy(&attr);
	}
	for (unsigned long i = 0; i < cf.sessions; i++) {
		struct counts *c = &sess[i].c;
		pthread_join(sess[i].tid, NULL);
		t.accepted += c->accepted;
		t.failed += c->failed;
		t.rcpt_ok += c->rcpt_ok;
		t.rcpt_bad += c->rcpt_bad;
		t.connections += c->connections;
		t.connect_failures += c->connect_failures;
		t.tls += c->tls;
		t.r2 += c->r2;
		t.r3 += c->r3;
		t.r4 += c->r4;
		t.r5 += c->r5;
		t.bytes += c->bytes;
		str_release(&sess[i].out);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) +
	    (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	double rate = secs > 0 ? (double)t.accepted / secs : 0;

	printf("smtp-source: %llu of %lu messages accepted in %.3f s: %.1f messages/s\n",
	    t.accepted, cf.messages, secs, rate);
	printf("messages=%lu\naccepted=%llu\nfailed=%llu\nrecipients_ok=%llu\n"
	    "recipients_rejected=%llu\nconnections=%llu\nconnect_failures=%llu\n"
	    "tls=%llu\nreplies_2xx=%llu\nreplies_3xx=%llu\nreplies_4xx=%llu\n"
	    "replies_5xx=%llu\n"
	    "bytes_sent=%llu\nseconds=%.3f\nrate=%.1f\n",
	    cf.messages, t.accepted, t.failed, t.rcpt_ok, t.rcpt_bad,
	    t.connections, t.connect_failures, t.tls, t.r2, t.r3, t.r4, t.r5,
	    t.bytes, secs, rate);
	fflush(stdout);

	free(sess);
	freeaddrinfo(target);
	str_release(&body);
	if (tls_ctx != NULL)
		SSL_CTX_free(tls_ctx);
	if (t.accepted < cf.messages && !cf.accept_failures)
		return 1;
	return 0;
}
