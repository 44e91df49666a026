/* smtp-sink: an SMTP server for tests and benchmarks.
 *
 * It accepts mail and throws it away (or saves one file per message),
 * counts what it saw in a stats file, and can misbehave on purpose: delays,
 * a session limit answered with 421, dropped connections at a chosen
 * stage, temporary or permanent failures for some recipients, rejected
 * MAIL/DATA/end of data, a 421 or no greeting at all, hidden extensions.
 * See doc/test-tools.md for the options and the recipient keywords.
 *
 * One thread per session: simple to reason about with delays and TLS, and
 * fast enough for the few hundred sessions a benchmark opens. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "file.h"
#include "list.h"
#include "log.h"
#include "mem.h"
#include "selfpipe.h"
#include "sock.h"
#include "str.h"

/* Stages at which the connection can be dropped. */
enum stage { ST_GREETING, ST_EHLO, ST_MAIL, ST_RCPT, ST_DATA, ST_BODY,
	ST_DOT, ST_COUNT };
static const char *const stage_names[ST_COUNT] = {
	"greeting", "ehlo", "mail", "rcpt", "data", "body", "dot",
};

enum ext { EXT_PIPELINING, EXT_SIZE, EXT_8BITMIME, EXT_DSN, EXT_ENH,
	EXT_STARTTLS, EXT_COUNT };
static const char *const ext_names[EXT_COUNT] = {
	"pipelining", "size", "8bitmime", "dsn", "enhancedstatuscodes",
	"starttls",
};

enum greet_mode { GREET_OK, GREET_421, GREET_HANG };

static struct config {
	bool allow_any;
	const char *portfile, *savedir, *statsfile, *hostname, *cert, *key;
	bool hide[EXT_COUNT];
	bool no_ehlo;
	unsigned long max_sessions;	/* 0: no limit */
	const char *limit_file;		/* --limit-file: max_sessions, on SIGHUP */
	unsigned long cmd_delay_ms, rcpt_delay_ms, dot_delay_ms;
	long drop_at[ST_COUNT];		/* 0 off, -1 always, N: the Nth time */
	enum greet_mode greet;
	unsigned long tempfail_pct, permfail_pct, seed;
	int mail_reply, data_reply, dot_reply;	/* 0, 4 or 5 */
	unsigned long max_size, max_line, rcpt_limit, error_limit;
	unsigned long idle_timeout;	/* seconds */
	unsigned long stats_interval_ms;	/* 0: write on every change */
} cf = {
	.hostname = "smtp-sink.test",
	.max_size = 50UL * 1024 * 1024,
	.max_line = 2048,
	.rcpt_limit = 10000,
	.error_limit = 20,
	.idle_timeout = 300,
	.seed = 1,
	.stats_interval_ms = 20,
};

/* ---- counters ---- */

static void sleep_ms(unsigned long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}


enum counter { S_CONNECTIONS, S_SESSIONS, S_REJECTED, S_ACTIVE, S_MAX_ACTIVE,
	S_EHLO, S_HELO, S_TLS, S_TLS_FAILED, S_MAIL, S_MAIL_REJECTED, S_RCPT,
	S_RCPT_OK, S_RCPT_4XX, S_RCPT_5XX, S_DATA, S_MESSAGES, S_RECIPIENTS,
	S_MSG_4XX, S_MSG_5XX, S_BYTES, S_BARE_LF, S_RSET, S_QUIT, S_DROPPED,
	S_TIMEOUTS, S_ERRORS, S_COUNT };
static const char *const stat_names[S_COUNT] = {
	"connections", "sessions", "rejected_sessions", "active",
	"max_active", "ehlo", "helo", "starttls", "tls_failed", "mail",
	"mail_rejected", "rcpt", "rcpt_ok", "rcpt_tempfail", "rcpt_permfail",
	"data", "messages", "recipients", "messages_tempfail",
	"messages_permfail", "bytes", "bare_lf", "rset", "quit", "dropped",
	"timeouts", "errors",
};

static pthread_mutex_t stat_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long stats[S_COUNT];
static bool stats_dirty;
static unsigned long stage_hits[ST_COUNT];
static unsigned long next_file;

static pthread_cond_t stat_cond = PTHREAD_COND_INITIALIZER;
static bool writer_stop;

static void stats_format(str_t *out, const unsigned long long *v)
{
	for (int i = 0; i < S_COUNT; i++)
		str_catf(out, "%s=%llu\n", stat_names[i], v[i]);
}

/* Write-then-rename, so a reader never sees a half-written file. */
static void stats_write_file(const unsigned long long *v)
{
	str_t text = STR_INIT, tmp = STR_INIT;
	int fd;

	stats_format(&text, v);
	str_setf(&tmp, "%s.tmp", cf.statsfile);
	fd = open(str_cstr(&tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644);
	if (fd < 0) {
		log_warning("open %s: %s", str_cstr(&tmp), strerror(errno));
	} else {
		ssize_t n = write(fd, str_cstr(&text), str_len(&text));
		if (close(fd) < 0 || n != (ssize_t)str_len(&text))
			log_warning("write %s: short write", str_cstr(&tmp));
		else if (rename(str_cstr(&tmp), cf.statsfile) < 0)
			log_warning("rename %s: %s", cf.statsfile,
			    strerror(errno));
	}
	str_release(&text);
	str_release(&tmp);
}

/* Called with stat_lock held. */
static void stats_write_locked(void)
{
	if (cf.statsfile != NULL)
		stats_write_file(stats);
	stats_dirty = false;
}

/* With -i MS (the default), one thread rewrites the file at most every
 * MS ms after a change, so that sessions never wait for the disk. */
static void *stats_writer(void *arg)
{
	unsigned long long snap[S_COUNT];
	(void)arg;
	pthread_mutex_lock(&stat_lock);
	while (!writer_stop) {
		if (!stats_dirty) {
			pthread_cond_wait(&stat_cond, &stat_lock);
			continue;
		}
		memcpy(snap, stats, sizeof(snap));
		stats_dirty = false;
		pthread_mutex_unlock(&stat_lock);
		stats_write_file(snap);
		sleep_ms(cf.stats_interval_ms);
		pthread_mutex_lock(&stat_lock);
	}
	pthread_mutex_unlock(&stat_lock);
	return NULL;
}

static void stat_add(enum counter which, long long delta)
{
	pthread_mutex_lock(&stat_lock);
	stats[which] += (unsigned long long)delta;
	if (which == S_ACTIVE && stats[S_ACTIVE] > stats[S_MAX_ACTIVE])
		stats[S_MAX_ACTIVE] = stats[S_ACTIVE];
	stats_dirty = true;
	/* With -i 0 the file is written before the reply that reports the
	 * change is sent: exact, but every session waits for the disk. */
	if (cf.stats_interval_ms == 0)
		stats_write_locked();
	else
		pthread_cond_signal(&stat_cond);
	pthread_mutex_unlock(&stat_lock);
}

static unsigned long long stat_get(enum counter which)
{
	unsigned long long v;
	pthread_mutex_lock(&stat_lock);
	v = stats[which];
	pthread_mutex_unlock(&stat_lock);
	return v;
}

/* True if the connection must be dropped on reaching this stage. */
static bool drop_now(enum stage st)
{
	bool hit;
	if (cf.drop_at[st] == 0)
		return false;
	pthread_mutex_lock(&stat_lock);
	stage_hits[st]++;
	hit = cf.drop_at[st] < 0 ||
	    stage_hits[st] == (unsigned long)cf.drop_at[st];
	pthread_mutex_unlock(&stat_lock);
	return hit;
}

/* Seeded xorshift64*: the same seed gives the same failure pattern. */
static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rng_state;

static unsigned rng_percent(void)
{
	uint64_t x;
	pthread_mutex_lock(&rng_lock);
	x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	pthread_mutex_unlock(&rng_lock);
	return (unsigned)((x * 2685821657736338717ULL) >> 33) % 100;
}

/* ---- sessions ---- */

enum mode { M_CMD, M_DATA, M_HANG };
enum dstate { D_BOL, D_MID, D_DOT, D_DOTCR };

/* Per-transaction faults chosen by recipient keywords. */
#define F_DROP_DATA	0x01
#define F_DROP_BODY	0x02
#define F_DROP_DOT	0x04
#define F_TEMP_DATA	0x08
#define F_PERM_DATA	0x10
#define F_TEMP_DOT	0x20
#define F_PERM_DOT	0x40

struct session {
	list_node_t node;
	int fd;
	unsigned long id;
	SSL *ssl;
	char peer[SOCK_ADDR_STRLEN];
	char tls_info[128];

	char *in;
	size_t in_size, in_start, in_end;
	bool skipping;		/* discarding an over-long command line */
	str_t out;
	bool closing;

	enum mode mode;
	bool helo_done, in_mail;
	char helo[256];
	unsigned long errors, msgs;

	/* transaction */
	str_t envelope;
	unsigned long rcpt_seen, rcpt_ok;
	unsigned flags;

	/* DATA */
	enum dstate dstate;
	bool last_cr, too_big, body_seen;
	unsigned long long msg_size, bare_lf;
	FILE *save;
	char save_tmp[4096];
	unsigned long save_seq;
};

static SSL_CTX *tls_ctx;
static pthread_mutex_t sess_lock = PTHREAD_MUTEX_INITIALIZER;
static list_t sessions = LIST_HEAD_INIT(sessions);
static unsigned long next_session_id;

static bool ext_on(enum ext e)
{
	if (cf.hide[e])
		return false;
	if (e == EXT_STARTTLS)
		return tls_ctx != NULL;
	return true;
}

static void reply(struct session *s, int code, const char *enh,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Queues one reply line; the enhanced status code is left out when the
 * extension is hidden, as a server without it would. */
static void reply(struct session *s, int code, const char *enh,
    const char *fmt, ...)
{
	va_list ap;
	size_t start = str_len(&s->out);

	if (cf.cmd_delay_ms)
		sleep_ms(cf.cmd_delay_ms);
	str_catf(&s->out, "%d ", code);
	if (enh != NULL && ext_on(EXT_ENH))
		str_catf(&s->out, "%s ", enh);
	va_start(ap, fmt);
	str_vcatf(&s->out, fmt, ap);
	va_end(ap);
	if (log_verbose)
		log_debug("%lu > %s", s->id, str_cstr(&s->out) + start);
	str_cat(&s->out, "\r\n");
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
	if (str_len(&s->out) > 0)
		r = sess_write(s, str_cstr(&s->out), str_len(&s->out));
	str_reset(&s->out);
	return r;
}

/* Reads more input into the buffer.  Returns >0 bytes, 0 at end of
 * input, -1 on error, -2 on idle timeout. */
static ssize_t sess_read(struct session *s)
{
	size_t room;
	ssize_t n;

	if (s->in_start == s->in_end)
		s->in_start = s->in_end = 0;
	if (s->in_end == s->in_size && s->in_start > 0) {
		memmove(s->in, s->in + s->in_start, s->in_end - s->in_start);
		s->in_end -= s->in_start;
		s->in_start = 0;
	}
	room = s->in_size - s->in_end;
	if (room == 0)
		return -1;	/* cannot happen: lines are bounded below in_size */
	if (s->ssl != NULL) {
		int r = SSL_read(s->ssl, s->in + s->in_end,
		    room > INT32_MAX ? INT32_MAX : (int)room);
		if (r <= 0) {
			int e = SSL_get_error(s->ssl, r);
			if (e == SSL_ERROR_ZERO_RETURN)
				return 0;
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return -2;
			if (e == SSL_ERROR_SYSCALL && r == 0)
				return 0;
			return -1;
		}
		n = r;
	} else {
		do
			n = recv(s->fd, s->in + s->in_end, room, 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return (errno == EAGAIN || errno == EWOULDBLOCK) ? -2 : -1;
	}
	s->in_end += (size_t)n;
	return n;
}

/* More input waiting right now?  Pipelined commands are all read and
 * answered before the replies are flushed in one write. */
static bool input_pending(struct session *s)
{
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	if (s->ssl != NULL && SSL_pending(s->ssl) > 0)
		return true;
	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static void drop(struct session *s, enum stage st)
{
	log_info("session %lu: dropping the connection at %s", s->id,
	    stage_names[st]);
	stat_add(S_DROPPED, 1);
	str_reset(&s->out);	/* a crashed server sends nothing more */
	s->closing = true;
}

static void txn_reset(struct session *s)
{
	s->in_mail = false;
	s->rcpt_seen = s->rcpt_ok = 0;
	s->flags = 0;
	str_reset(&s->envelope);
}

/* The local part of a path's address, lowercased, cut at '+', so that
 * tempfail+1@example.com and TempFail@x both mean "tempfail". */
static void keyword_of(const char *addr, char *kw, size_t size)
{
	const char *at = strrchr(addr, '@');
	size_t n = at ? (size_t)(at - addr) : strlen(addr);
	const char *plus = memchr(addr, '+', n);
	if (plus != NULL)
		n = (size_t)(plus - addr);
	if (n >= size)
		n = size - 1;
	memcpy(kw, addr, n);
	kw[n] = 0;
	str_lower(kw);
}

/* Parses "<path> params" after "FROM:" or "TO:".  On success *addr is the
 * text between the brackets (NUL-terminated in place) and *params the
 * rest.  Lenient about a space after the colon, strict about brackets. */
static bool parse_path(char *arg, char **addr, char **params)
{
	char *p = arg, *q;
	bool quoted = false;

	while (*p == ' ')
		p++;
	if (*p != '<')
		return false;
	for (q = p + 1; *q; q++) {
		if (*q == '"')
			quoted = !quoted;
		else if (*q == '\\' && quoted && q[1])
			q++;
		else if (*q == '>' && !quoted)
			break;
	}
	if (*q != '>')
		return false;
	*q = 0;
	*addr = p + 1;
	p = q + 1;
	if (*p != 0 && *p != ' ')
		return false;
	while (*p == ' ')
		p++;
	*params = p;
	return true;
}

/* Checks ESMTP parameters against the extensions on offer (a hidden
 * extension's parameters are refused, as a server without it would).
 * On failure err holds the reply as "code|enh|text".  Splits params. */
static bool check_params(char *params, bool is_mail, char *err,
    size_t errsize)
{
	char *tok;
	while ((tok = str_token(&params, " ")) != NULL) {
		char *eq = strchr(tok, '=');
		char *val = eq ? eq + 1 : NULL;
		size_t klen = eq ? (size_t)(eq - tok) : strlen(tok);
#define KEY(k) (klen == sizeof(k) - 1 && strncasecmp(tok, k, klen) == 0)
		if (is_mail && KEY("SIZE") && ext_on(EXT_SIZE)) {
			unsigned long size;
			if (val == NULL || !str_to_ulong(val, &size)) {
				bfmt(err, errsize, "501|5.5.4|Bad SIZE parameter");
				return false;
			}
			if (cf.max_size && size > cf.max_size) {
				bfmt(err, errsize, "552|5.3.4|Message size exceeds fixed limit");
				return false;
			}
		} else if (is_mail && KEY("BODY") && ext_on(EXT_8BITMIME)) {
			if (val == NULL || (strcasecmp(val, "7BIT") != 0 &&
			    strcasecmp(val, "8BITMIME") != 0)) {
				bfmt(err, errsize, "501|5.5.4|Bad BODY parameter");
				return false;
			}
		} else if (is_mail && (KEY("RET") || KEY("ENVID")) && ext_on(EXT_DSN)) {
			if (val == NULL || *val == 0 || (KEY("RET") &&
			    strcasecmp(val, "FULL") != 0 && strcasecmp(val, "HDRS") != 0)) {
				bfmt(err, errsize, "501|5.5.4|Bad %.*s parameter", (int)klen, tok);
				return false;
			}
		} else if (!is_mail && (KEY("NOTIFY") || KEY("ORCPT")) && ext_on(EXT_DSN)) {
			if (val == NULL || *val == 0) {
				bfmt(err, errsize, "501|5.5.4|Bad %.*s parameter", (int)klen, tok);
				return false;
			}
		} else {
			bfmt(err, errsize, "555|5.5.4|Unsupported option: %.64s", tok);
			return false;
		}
#undef KEY
	}
	return true;
}

/* Sends a "code|enh|text" reply built by check_params. */
static void reply_packed(struct session *s, char *packed)
{
	char *code = packed, *enh = strchr(code, '|'), *text;
	*enh++ = 0;
	text = strchr(enh, '|');
	*text++ = 0;
	reply(s, atoi(code), enh, "%s", text);
}

static void do_ehlo(struct session *s, char *arg, bool ehlo)
{
	if (drop_now(ST_EHLO)) {
		drop(s, ST_EHLO);
		return;
	}
	if (ehlo && cf.no_ehlo) {
		s->errors++;
		stat_add(S_ERRORS, 1);
		reply(s, 502, "5.5.2", "Error: command not recognized");
		return;
	}
	while (*arg == ' ')
		arg++;
	if (*arg == 0) {
		reply(s, 501, "5.5.4", "Syntax: %s hostname", ehlo ? "EHLO" : "HELO");
		return;
	}
	bcopy_str(s->helo, sizeof(s->helo), arg);
	s->helo_done = true;
	txn_reset(s);
	stat_add(ehlo ? S_EHLO : S_HELO, 1);
	if (!ehlo) {
		reply(s, 250, NULL, "%s", cf.hostname);
		return;
	}

	/* Multi-line reply: every line but the last has a dash. */
	const char *lines[EXT_COUNT + 1];
	char sizeline[64];
	int n = 0;
	if (ext_on(EXT_PIPELINING))
		lines[n++] = "PIPELINING";
	if (ext_on(EXT_SIZE)) {
		bfmt(sizeline, sizeof(sizeline), "SIZE %lu", cf.max_size);
		lines[n++] = sizeline;
	}
	if (ext_on(EXT_8BITMIME))
		lines[n++] = "8BITMIME";
	if (ext_on(EXT_DSN))
		lines[n++] = "DSN";
	if (ext_on(EXT_ENH))
		lines[n++] = "ENHANCEDSTATUSCODES";
	if (ext_on(EXT_STARTTLS) && s->ssl == NULL)
		lines[n++] = "STARTTLS";
	if (cf.cmd_delay_ms)
		sleep_ms(cf.cmd_delay_ms);
	str_catf(&s->out, "250%c%s\r\n", n ? '-' : ' ', cf.hostname);
	for (int i = 0; i < n; i++)
		str_catf(&s->out, "250%c%s\r\n", i == n - 1 ? ' ' : '-', lines[i]);
	if (log_verbose)
		log_debug("%lu > 250 %s (%d extensions)", s->id, cf.hostname, n);
}

static void do_mail(struct session *s, char *arg)
{
	char *addr, *params, kw[64], err[160];

	if (!s->helo_done) {
		reply(s, 503, "5.5.1", "Error: send HELO/EHLO first");
		return;
	}
	if (s->in_mail) {
		reply(s, 503, "5.5.1", "Error: nested MAIL command");
		return;
	}
	if (drop_now(ST_MAIL)) {
		drop(s, ST_MAIL);
		return;
	}
	stat_add(S_MAIL, 1);
	if (strncasecmp(arg, "FROM:", 5) != 0 || !parse_path(arg + 5, &addr, &params)) {
		reply(s, 501, "5.5.4", "Syntax: MAIL FROM:<address>");
		return;
	}
	str_reset(&s->envelope);
	str_catf(&s->envelope, "X-Sink-Mail-From: <%s>%s%s\r\n", addr,
	    *params ? " " : "", params);
	if (!check_params(params, true, err, sizeof(err))) {
		stat_add(S_MAIL_REJECTED, 1);
		reply_packed(s, err);
		return;
	}
	keyword_of(addr, kw, sizeof(kw));
	if (cf.mail_reply == 4 || strcmp(kw, "tempfail") == 0) {
		stat_add(S_MAIL_REJECTED, 1);
		reply(s, 451, "4.3.0", "Error: sender <%s> temporarily rejected (test)", addr);
		return;
	}
	if (cf.mail_reply == 5 || strcmp(kw, "permfail") == 0) {
		stat_add(S_MAIL_REJECTED, 1);
		reply(s, 550, "5.7.1", "Error: sender <%s> rejected (test)", addr);
		return;
	}
	s->in_mail = true;
	s->rcpt_seen = s->rcpt_ok = 0;
	s->flags = 0;
	reply(s, 250, "2.1.0", "Ok");
}

/* Decides one recipient: keywords first, then the random failures. */
static void rcpt_verdict(struct session *s, const char *addr,
    const str_t *line)
{
	char kw[64];
	unsigned long ms;

	if (cf.rcpt_limit && s->rcpt_seen >= cf.rcpt_limit) {
		stat_add(S_RCPT_4XX, 1);
		reply(s, 452, "4.5.3", "Error: too many recipients");
		return;
	}
	s->rcpt_seen++;
	keyword_of(addr, kw, sizeof(kw));
	if (strcmp(kw, "drop-rcpt") == 0) {
		drop(s, ST_RCPT);
		return;
	}
	if (strncmp(kw, "delay", 5) == 0 && str_to_ulong(kw + 5, &ms) && ms <= 600000)
		sleep_ms(ms);
	if (cf.rcpt_delay_ms)
		sleep_ms(cf.rcpt_delay_ms);

	if (strcmp(kw, "tempfail") == 0) {
		stat_add(S_RCPT_4XX, 1);
		reply(s, 450, "4.2.0", "<%s>: Recipient address temporarily rejected (test)", addr);
		return;
	}
	if (strcmp(kw, "permfail") == 0) {
		stat_add(S_RCPT_5XX, 1);
		reply(s, 550, "5.1.1", "<%s>: Recipient address rejected (test)", addr);
		return;
	}
	if (cf.tempfail_pct || cf.permfail_pct) {
		unsigned r = rng_percent();
		if (r < cf.tempfail_pct) {
			stat_add(S_RCPT_4XX, 1);
			reply(s, 450, "4.2.0", "<%s>: Recipient address temporarily rejected (random)", addr);
			return;
		}
		if (r < cf.tempfail_pct + cf.permfail_pct) {
			stat_add(S_RCPT_5XX, 1);
			reply(s, 550, "5.1.1", "<%s>: Recipient address rejected (random)", addr);
			return;
		}
	}
	static const struct { const char *kw; unsigned flag; } kws[] = {
		{ "drop-data", F_DROP_DATA }, { "drop-body", F_DROP_BODY },
		{ "drop-dot", F_DROP_DOT }, { "tempfail-data", F_TEMP_DATA },
		{ "permfail-data", F_PERM_DATA }, { "tempfail-dot", F_TEMP_DOT },
		{ "permfail-dot", F_PERM_DOT },
	};
	for (size_t i = 0; i < sizeof(kws) / sizeof(kws[0]); i++)
		if (strcmp(kw, kws[i].kw) == 0)
			s->flags |= kws[i].flag;
	s->rcpt_ok++;
	str_append(&s->envelope, str_cstr(line), str_len(line));
	stat_add(S_RCPT_OK, 1);
	reply(s, 250, "2.1.5", "Ok");
}

static void do_rcpt(struct session *s, char *arg)
{
	char *addr, *params, err[160];
	str_t line = STR_INIT;

	if (!s->in_mail) {
		reply(s, 503, "5.5.1", "Error: need MAIL command");
		return;
	}
	if (drop_now(ST_RCPT)) {
		drop(s, ST_RCPT);
		return;
	}
	stat_add(S_RCPT, 1);
	if (strncasecmp(arg, "TO:", 3) != 0 || !parse_path(arg + 3, &addr, &params)) {
		reply(s, 501, "5.5.4", "Syntax: RCPT TO:<address>");
		return;
	}
	/* Recorded before check_params splits the parameters. */
	str_setf(&line, "X-Sink-Rcpt-To: <%s>%s%s\r\n", addr,
	    *params ? " " : "", params);
	if (!check_params(params, false, err, sizeof(err))) {
		stat_add(S_RCPT_5XX, 1);
		reply_packed(s, err);
	} else {
		rcpt_verdict(s, addr, &line);
	}
	str_release(&line);
}

static void save_abort(struct session *s)
{
	if (s->save != NULL) {
		fclose(s->save);
		s->save = NULL;
		unlink(s->save_tmp);
	}
}

static void do_data(struct session *s)
{
	if (drop_now(ST_DATA)) {
		drop(s, ST_DATA);
		return;
	}
	if (!s->in_mail) {
		reply(s, 503, "5.5.1", "Error: need MAIL command");
		return;
	}
	if (s->rcpt_ok == 0) {
		reply(s, 554, "5.5.1", "Error: no valid recipients");
		return;
	}
	stat_add(S_DATA, 1);
	if (s->flags & F_DROP_DATA) {
		drop(s, ST_DATA);
		return;
	}
	if (cf.data_reply == 4 || (s->flags & F_TEMP_DATA)) {
		reply(s, 451, "4.3.0", "Error: DATA temporarily rejected (test)");
		return;
	}
	if (cf.data_reply == 5 || (s->flags & F_PERM_DATA)) {
		reply(s, 554, "5.5.0", "Error: DATA rejected (test)");
		return;
	}
	if (cf.savedir != NULL) {
		pthread_mutex_lock(&stat_lock);
		s->save_seq = ++next_file;
		pthread_mutex_unlock(&stat_lock);
		if (!bfmt(s->save_tmp, sizeof(s->save_tmp), "%s/.tmp-%08lu",
		    cf.savedir, s->save_seq))
			log_fatal("save directory name too long");
		s->save = fopen(s->save_tmp, "wbx");
		if (s->save == NULL) {
			log_warning("create %s: %s", s->save_tmp, strerror(errno));
			reply(s, 451, "4.3.0", "Error: cannot save the message");
			return;
		}
		fprintf(s->save, "X-Sink-Envelope: session=%lu client=%s helo=%s%s%s\r\n%s",
		    s->id, s->peer, s->helo, s->tls_info[0] ? " tls=" : "",
		    s->tls_info, str_cstr(&s->envelope));
	}
	s->mode = M_DATA;
	s->dstate = D_BOL;
	s->last_cr = s->too_big = s->body_seen = false;
	s->msg_size = s->bare_lf = 0;
	reply(s, 354, NULL, "End data with <CR><LF>.<CR><LF>");
}

static void emit(struct session *s, const char *p, size_t n)
{
	s->msg_size += n;
	if (cf.max_size && s->msg_size > cf.max_size) {
		s->too_big = true;
		save_abort(s);
	} else if (s->save != NULL) {
		fwrite(p, 1, n, s->save);
	}
}

static void end_of_data(struct session *s)
{
	s->mode = M_CMD;
	stat_add(S_BYTES, (long long)s->msg_size);
	if (s->bare_lf)
		stat_add(S_BARE_LF, (long long)s->bare_lf);
	if (drop_now(ST_DOT) || (s->flags & F_DROP_DOT)) {
		save_abort(s);
		drop(s, ST_DOT);
		return;
	}
	if (s->too_big) {
		save_abort(s);
		stat_add(S_MSG_5XX, 1);
		reply(s, 552, "5.3.4", "Error: message too big");
	} else if (cf.dot_reply == 4 || (s->flags & F_TEMP_DOT)) {
		save_abort(s);
		stat_add(S_MSG_4XX, 1);
		reply(s, 451, "4.3.0", "Error: message temporarily rejected (test)");
	} else if (cf.dot_reply == 5 || (s->flags & F_PERM_DOT)) {
		save_abort(s);
		stat_add(S_MSG_5XX, 1);
		reply(s, 554, "5.6.0", "Error: message rejected (test)");
	} else {
		if (s->save != NULL) {
			char final[4200];
			bool ok = fclose(s->save) == 0;
			s->save = NULL;
			bfmt(final, sizeof(final), "%s/msg-%08lu.eml", cf.savedir,
			    s->save_seq);
			if (!ok || rename(s->save_tmp, final) < 0) {
				log_warning("save %s: %s", final, strerror(errno));
				unlink(s->save_tmp);
				stat_add(S_MSG_4XX, 1);
				reply(s, 451, "4.3.0", "Error: cannot save the message");
				txn_reset(s);
				return;
			}
		}
		s->msgs++;
		pthread_mutex_lock(&stat_lock);
		stats[S_MESSAGES]++;
		stats[S_RECIPIENTS] += s->rcpt_ok;
		pthread_mutex_unlock(&stat_lock);
		stat_add(S_MESSAGES, 0);	/* writes the file */
		/* -y: a server slow to confirm what it has already taken (a
		 * client that gives up meanwhile sends it again later). */
		if (cf.dot_delay_ms)
			sleep_ms(cf.dot_delay_ms);
		reply(s, 250, "2.0.0", "Ok: queued as S%lu.%lu", s->id, s->msgs);
	}
	txn_reset(s);
}

/* Consumes message text from the input buffer: removes dot-stuffing,
 * finds the end (a line with a single dot; CRLF or a bare LF), and writes
 * the text through.  Works on any chunking of the input. */
static void consume_data(struct session *s)
{
	char *p = s->in + s->in_start, *end = s->in + s->in_end;

	if (p < end && !s->body_seen) {
		s->body_seen = true;
		if (drop_now(ST_BODY) || (s->flags & F_DROP_BODY)) {
			save_abort(s);
			s->in_start = s->in_end;
			drop(s, ST_BODY);
			return;
		}
	}
	while (p < end) {
		switch (s->dstate) {
		case D_BOL:
			if (*p == '.') {
				s->dstate = D_DOT;
				p++;
				continue;
			}
			s->dstate = D_MID;
			break;
		case D_DOT:
			if (*p == '\r') {
				s->dstate = D_DOTCR;
				p++;
				continue;
			}
			if (*p == '\n') {
				s->bare_lf++;
				p++;
				goto done;
			}
			s->dstate = D_MID;	/* the stuffed dot is dropped */
			break;
		case D_DOTCR:
			if (*p == '\n') {
				p++;
				goto done;
			}
			emit(s, "\r", 1);
			s->last_cr = true;
			s->dstate = D_MID;
			break;
		case D_MID: {
			char *lf = memchr(p, '\n', (size_t)(end - p));
			char *stop = lf ? lf + 1 : end;
			if (lf != NULL) {
				if (!(lf > p ? lf[-1] == '\r' : s->last_cr))
					s->bare_lf++;
				s->dstate = D_BOL;
			}
			s->last_cr = stop[-1] == '\r';
			emit(s, p, (size_t)(stop - p));
			p = stop;
			break;
		}
		}
	}
	s->in_start = s->in_end;
	return;
done:
	s->in_start = (size_t)(p - s->in);
	end_of_data(s);
}

static void do_starttls(struct session *s, const char *arg)
{
	if (!ext_on(EXT_STARTTLS) || s->ssl != NULL) {
		s->errors++;
		stat_add(S_ERRORS, 1);
		reply(s, 502, "5.5.1", "Error: command not implemented");
		return;
	}
	if (*arg) {
		reply(s, 501, "5.5.4", "Syntax: STARTTLS");
		return;
	}
	reply(s, 220, "2.0.0", "Ready to start TLS");
	if (flush_out(s) < 0) {
		s->closing = true;
		return;
	}
	/* Plaintext sent after STARTTLS must not count as TLS-protected
	 * commands (the command-injection attack), so it is thrown away. */
	if (s->in_end > s->in_start)
		log_info("session %lu: discarding %zu bytes pipelined after STARTTLS",
		    s->id, s->in_end - s->in_start);
	s->in_start = s->in_end = 0;
	s->ssl = SSL_new(tls_ctx);
	if (s->ssl == NULL || !SSL_set_fd(s->ssl, s->fd) || SSL_accept(s->ssl) != 1) {
		unsigned long e = ERR_get_error();
		char buf[256];
		ERR_error_string_n(e, buf, sizeof(buf));
		log_info("session %lu: TLS handshake failed: %s", s->id, buf);
		ERR_clear_error();
		stat_add(S_TLS_FAILED, 1);
		if (s->ssl != NULL)
			SSL_free(s->ssl);
		s->ssl = NULL;
		s->closing = true;
		return;
	}
	bfmt(s->tls_info, sizeof(s->tls_info), "%s/%s",
	    SSL_get_version(s->ssl), SSL_get_cipher_name(s->ssl));
	log_info("session %lu: TLS established: %s", s->id, s->tls_info);
	stat_add(S_TLS, 1);
	/* RFC 3207: the client starts over with EHLO. */
	s->helo_done = false;
	s->helo[0] = 0;
	txn_reset(s);
}

static void handle_command(struct session *s, char *line, size_t len)
{
	char *verb = line, *arg;

	if (log_verbose) {
		str_t q = STR_INIT;
		str_quote_printable(&q, line, len);
		log_debug("%lu < %s", s->id, str_cstr(&q));
		str_release(&q);
	}
	if (memchr(line, 0, len) != NULL) {
		s->errors++;
		stat_add(S_ERRORS, 1);
		reply(s, 500, "5.5.2", "Error: NUL byte in command");
		goto check_errors;
	}
	arg = line + strcspn(line, " ");
	if (*arg)
		*arg++ = 0;

	if (strcasecmp(verb, "EHLO") == 0)
		do_ehlo(s, arg, true);
	else if (strcasecmp(verb, "HELO") == 0)
		do_ehlo(s, arg, false);
	else if (strcasecmp(verb, "MAIL") == 0)
		do_mail(s, arg);
	else if (strcasecmp(verb, "RCPT") == 0)
		do_rcpt(s, arg);
	else if (strcasecmp(verb, "DATA") == 0)
		do_data(s);
	else if (strcasecmp(verb, "RSET") == 0) {
		txn_reset(s);
		stat_add(S_RSET, 1);
		reply(s, 250, "2.0.0", "Ok");
	} else if (strcasecmp(verb, "NOOP") == 0)
		reply(s, 250, "2.0.0", "Ok");
	else if (strcasecmp(verb, "QUIT") == 0) {
		stat_add(S_QUIT, 1);
		reply(s, 221, "2.0.0", "Bye");
		flush_out(s);
		s->closing = true;
	} else if (strcasecmp(verb, "STARTTLS") == 0)
		do_starttls(s, arg);
	else if (strcasecmp(verb, "VRFY") == 0)
		reply(s, 252, "2.0.0", "Cannot verify, send some mail");
	else if (strcasecmp(verb, "HELP") == 0)
		reply(s, 214, "2.0.0", "EHLO HELO MAIL RCPT DATA RSET NOOP QUIT STARTTLS");
	else {
		s->errors++;
		stat_add(S_ERRORS, 1);
		reply(s, 502, "5.5.2", "Error: command not recognized");
	}
check_errors:
	if (!s->closing && cf.error_limit && s->errors >= cf.error_limit) {
		reply(s, 421, "4.7.0", "Error: too many errors");
		flush_out(s);
		s->closing = true;
	}
}

/* Handles everything complete in the input buffer. */
static void process_input(struct session *s)
{
	while (!s->closing && s->in_start < s->in_end) {
		char *line, *lf;
		size_t len;

		if (s->mode == M_DATA) {
			consume_data(s);
			continue;
		}
		line = s->in + s->in_start;
		lf = memchr(line, '\n', s->in_end - s->in_start);
		if (lf == NULL) {
			/* No end of line in sight: remember to reject the
			 * line once it ends, and do not keep it. */
			if (s->in_end - s->in_start > cf.max_line) {
				s->skipping = true;
				s->in_start = s->in_end;
			}
			break;
		}
		s->in_start = (size_t)(lf + 1 - s->in);
		len = (size_t)(lf - line);
		if (len > 0 && line[len - 1] == '\r')
			len--;
		line[len] = 0;
		if (s->skipping || len > cf.max_line) {
			s->skipping = false;
			s->errors++;
			stat_add(S_ERRORS, 1);
			reply(s, 500, "5.5.2", "Error: line too long");
			continue;
		}
		handle_command(s, line, len);
	}
}

static void session_loop(struct session *s)
{
	if (drop_now(ST_GREETING)) {
		stat_add(S_DROPPED, 1);
		log_info("session %lu: dropping the connection at greeting", s->id);
		return;
	}
	if (cf.greet == GREET_421) {
		reply(s, 421, "4.3.2", "Service not available (test)");
		flush_out(s);
		return;
	}
	if (cf.greet == GREET_HANG) {
		/* No greeting: wait for the client to give up (or the idle
		 * timeout), reading whatever it sends. */
		for (;;) {
			ssize_t n = sess_read(s);
			if (n <= 0) {
				if (n == -2)
					stat_add(S_TIMEOUTS, 1);
				return;
			}
			s->in_start = s->in_end = 0;
		}
	}
	reply(s, 220, NULL, "%s ESMTP smtp-sink", cf.hostname);
	for (;;) {
		ssize_t n;
		process_input(s);
		if (s->closing)
			return;
		/* Replies wait while more commands are pending, but not
		 * without bound: a client that pipelines forever without
		 * reading must not make the sink grow. */
		if (s->in_end < s->in_size && str_len(&s->out) < 65536 &&
		    input_pending(s)) {
			n = sess_read(s);
		} else {
			if (flush_out(s) < 0)
				return;
			n = sess_read(s);
		}
		if (n == 0 || n == -1)
			return;
		if (n == -2) {
			stat_add(S_TIMEOUTS, 1);
			log_info("session %lu: idle timeout", s->id);
			reply(s, 421, "4.4.2", "Error: timeout exceeded");
			flush_out(s);
			return;
		}
	}
}

static void *session_thread(void *arg)
{
	struct session *s = arg;

	session_loop(s);
	save_abort(s);
	pthread_mutex_lock(&sess_lock);
	list_remove(&s->node);
	pthread_mutex_unlock(&sess_lock);
	if (s->ssl != NULL) {
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	close(s->fd);
	log_debug("session %lu: closed", s->id);
	str_release(&s->out);
	str_release(&s->envelope);
	free(s->in);
	free(s);
	stat_add(S_ACTIVE, -1);
	return NULL;
}

/* ---- listening, signals, main ---- */

/* --limit-file: the session limit is the number in the file (0: none),
 * read at start and on SIGHUP.  A file that cannot be read or holds
 * anything else leaves the limit as it was, with a warning. */
static void read_limit_file(void)
{
	str_t text = STR_INIT;
	char num[32];
	size_t len;
	unsigned long v;
	const char *s;

	if (cf.limit_file == NULL)
		return;
	if (file_read_all(cf.limit_file, &text, 64) < 0) {
		log_warning("%s: %s; the session limit stays %lu", cf.limit_file,
		    strerror(errno), cf.max_sessions);
		str_release(&text);
		return;
	}
	s = str_cstr(&text);
	len = str_len(&text);
	while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == ' '))
		len--;
	if (len == 0 || len >= sizeof(num)) {
		log_warning("%s: not a session limit; it stays %lu", cf.limit_file,
		    cf.max_sessions);
		str_release(&text);
		return;
	}
	memcpy(num, s, len);
	num[len] = 0;
	if (!str_to_ulong(num, &v) || v > 1000000)
		log_warning("%s: bad session limit \"%s\" (0..1000000); it stays %lu",
		    cf.limit_file, num, cf.max_sessions);
	else {
		cf.max_sessions = v;
		log_info("session limit %lu (from %s)", v, cf.limit_file);
	}
	str_release(&text);
}

/* "[addr]:port", "addr:port" (IPv4) or just "port" (127.0.0.1). */
static bool parse_endpoint(const char *text, struct sockaddr_storage *ss,
    socklen_t *len)
{
	char spec[SOCK_ADDR_STRLEN];

	if (strchr(text, ':') == NULL) {
		if (!bfmt(spec, sizeof(spec), "127.0.0.1:%s", text))
			return false;
		text = spec;
	}
	return sock_addr_parse(text, -1, ss, len) == 0;
}

/* Replaced atomically: a test polling for the file never reads half of it. */
static void write_portfile(const char *path, int fd)
{
	char text[16];
	int port = sock_local_port(fd);

	if (port < 0)
		log_fatal("getsockname: %s", strerror(errno));
	bfmt(text, sizeof(text), "%d\n", port);
	if (file_replace(path, text, strlen(text), 0644) < 0)
		log_fatal("write %s: %s", path, strerror(errno));
}

static void print_stats(void)
{
	str_t text = STR_INIT;
	pthread_mutex_lock(&stat_lock);
	stats_format(&text, stats);
	pthread_mutex_unlock(&stat_lock);
	fwrite(str_cstr(&text), 1, str_len(&text), stdout);
	fflush(stdout);
	str_release(&text);
}

static void start_session(int fd, const struct sockaddr_storage *ss)
{
	struct session *s;
	pthread_attr_t attr;
	pthread_t tid;
	struct timeval tv = { (time_t)cf.idle_timeout, 0 };
	int one = 1;

	stat_add(S_CONNECTIONS, 1);
	if (cf.max_sessions && stat_get(S_ACTIVE) >= cf.max_sessions) {
		static const char msg[] = "421 4.7.0 Error: too many sessions, try again later\r\n";
		stat_add(S_REJECTED, 1);
		(void)!send(fd, msg, sizeof(msg) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		shutdown(fd, SHUT_WR);
		close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

	s = xcalloc(1, sizeof(*s));
	s->fd = fd;
	s->in_size = cf.max_line + 2 > 16384 ? cf.max_line + 2 : 16384;
	s->in = xmalloc(s->in_size);
	sock_addr_port_str((const struct sockaddr *)ss, s->peer, sizeof(s->peer));

	pthread_mutex_lock(&sess_lock);
	s->id = ++next_session_id;
	list_append(&sessions, &s->node);
	pthread_mutex_unlock(&sess_lock);
	stat_add(S_SESSIONS, 1);
	stat_add(S_ACTIVE, 1);
	log_debug("session %lu: connection from %s", s->id, s->peer);

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 1024 * 1024);
	if (pthread_create(&tid, &attr, session_thread, s) != 0) {
		log_warning("cannot start a session thread");
		pthread_mutex_lock(&sess_lock);
		list_remove(&s->node);
		pthread_mutex_unlock(&sess_lock);
		close(fd);
		free(s->in);
		free(s);
		stat_add(S_ACTIVE, -1);
	}
	pthread_attr_destroy(&attr);
}

/* Ends every session and waits a little for the threads to finish, so
 * that the last counters are complete and nothing is left half-saved. */
static void shutdown_sessions(void)
{
	pthread_mutex_lock(&sess_lock);
	list_node_t *n;
	for (n = sessions.next; n != &sessions; n = n->next) {
		struct session *s = list_entry(n, struct session, node);
		shutdown(s->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&sess_lock);
	for (int i = 0; i < 300 && stat_get(S_ACTIVE) > 0; i++)
		sleep_ms(10);
}

static void set_drop(const char *arg)
{
	char name[32];
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
	unsigned long nth = 0;

	if (n >= sizeof(name))
		log_fatal("bad -D stage: %s", arg);
	memcpy(name, arg, n);
	name[n] = 0;
	if (colon != NULL && (!str_to_ulong(colon + 1, &nth) || nth == 0 ||
	    nth > 1000000000UL))
		log_fatal("bad -D count: %s", arg);
	for (int i = 0; i < ST_COUNT; i++) {
		if (strcasecmp(name, stage_names[i]) == 0) {
			cf.drop_at[i] = colon ? (long)nth : -1;
			return;
		}
	}
	log_fatal("bad -D stage '%s' (greeting, ehlo, mail, rcpt, data, body, dot)", name);
}

static void set_hidden(char *list)
{
	char *tok;
	while ((tok = str_token(&list, ", ")) != NULL) {
		int i;
		for (i = 0; i < EXT_COUNT; i++)
			if (strcasecmp(tok, ext_names[i]) == 0)
				break;
		if (i == EXT_COUNT)
			log_fatal("bad -x extension '%s' (pipelining, size, 8bitmime, dsn, enhancedstatuscodes, starttls)", tok);
		cf.hide[i] = true;
	}
}

static unsigned long num_arg(const char *opt, const char *arg,
    unsigned long max)
{
	unsigned long v;
	if (!str_to_ulong(arg, &v) || v > max)
		log_fatal("bad value for %s: '%s' (0..%lu)", opt, arg, max);
	return v;
}

static int reply_class_arg(const char *opt, const char *arg)
{
	if (strcmp(arg, "4") == 0 || strcmp(arg, "5") == 0)
		return arg[0] - '0';
	log_fatal("bad value for %s: '%s' (4 or 5)", opt, arg);
}

static void usage(void)
{
	fprintf(stderr,
	    "usage: smtp-sink [options] [addr:]port | [ipv6addr]:port\n"
	    "  -A           allow a non-loopback address\n"
	    "  -P FILE      write the bound port to FILE (use port 0)\n"
	    "  -s FILE      keep counters in FILE (key=value lines)\n"
	    "  -i MS        rewrite FILE at most every MS ms after a change (default\n"
	    "               20); 0: before every reply that changes a counter (slow)\n"
	    "  -d DIR       save each accepted message to DIR/msg-N.eml\n"
	    "  -h NAME      host name in the greeting and EHLO reply\n"
	    "  -c CERT -k KEY  offer STARTTLS with this certificate and key\n"
	    "  -x LIST      hide extensions: pipelining,size,8bitmime,dsn,\n"
	    "               enhancedstatuscodes,starttls\n"
	    "  --no-ehlo    answer EHLO with 502 (a HELO-only server)\n"
	    "  -S N         at most N concurrent sessions, 421 beyond\n"
	    "  --limit-file=FILE  the -S limit is the number in FILE (0: none),\n"
	    "               read at start and again on SIGHUP\n"
	    "  -w MS        delay every reply by MS ms\n"
	    "  -W MS        delay every RCPT reply by MS ms more\n"
	    "  -y MS        delay the reply to an accepted message's final dot by MS ms\n"
	    "  -D STAGE[:N] drop the connection at STAGE (greeting, ehlo, mail,\n"
	    "               rcpt, data, body, dot), every time or only the Nth\n"
	    "  --greeting=421|hang  421 at connect, or no greeting at all\n"
	    "  -t PCT, -p PCT  temporarily/permanently fail PCT%% of recipients\n"
	    "  -r SEED      seed for -t/-p (default 1)\n"
	    "  --mail-reply=4|5, --data-reply=4|5, --dot-reply=4|5\n"
	    "               reject every MAIL FROM, DATA, or end of data\n"
	    "  -z BYTES     maximum message size (default 52428800)\n"
	    "  -L BYTES     maximum command line length (default 2048)\n"
	    "  -n N         maximum recipients per message (default 10000)\n"
	    "  -e N         disconnect after N errors (default 20, 0: never)\n"
	    "  -T SECS      idle timeout (default 300)\n"
	    "  -v           log every command and reply to stderr\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "greeting", required_argument, NULL, 'G' },
		{ "mail-reply", required_argument, NULL, 'M' },
		{ "data-reply", required_argument, NULL, 'Y' },
		{ "dot-reply", required_argument, NULL, 'O' },
		{ "no-ehlo", no_argument, NULL, 'E' },
		{ "limit-file", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_storage ss;
	socklen_t sslen;
	pthread_t writer;
	int c, lfd, one = 1;

	log_init("smtp-sink");
	while ((c = getopt_long(argc, argv, "Ac:d:D:e:h:i:k:L:n:p:P:r:s:S:t:T:vw:W:x:y:z:",
	    longopts, NULL)) != -1) {
		switch (c) {
		case 'A': cf.allow_any = true; break;
		case 'c': cf.cert = optarg; break;
		case 'd': cf.savedir = optarg; break;
		case 'D': set_drop(optarg); break;
		case 'e': cf.error_limit = num_arg("-e", optarg, 1000000); break;
		case 'y': cf.dot_delay_ms = num_arg("-y", optarg, 3600000); break;
		case 'h': cf.hostname = optarg; break;
		case 'i': cf.stats_interval_ms = num_arg("-i", optarg, 3600000); break;
		case 'k': cf.key = optarg; break;
		case 'L': cf.max_line = num_arg("-L", optarg, 1048576); break;
		case 'n': cf.rcpt_limit = num_arg("-n", optarg, 1000000); break;
		case 'p': cf.permfail_pct = num_arg("-p", optarg, 100); break;
		case 'P': cf.portfile = optarg; break;
		case 'r': cf.seed = num_arg("-r", optarg, ~0UL); break;
		case 's': cf.statsfile = optarg; break;
		case 'S': cf.max_sessions = num_arg("-S", optarg, 1000000); break;
		case 't': cf.tempfail_pct = num_arg("-t", optarg, 100); break;
		case 'T': cf.idle_timeout = num_arg("-T", optarg, 86400); break;
		case 'v': log_verbose++; break;
		case 'w': cf.cmd_delay_ms = num_arg("-w", optarg, 3600000); break;
		case 'W': cf.rcpt_delay_ms = num_arg("-W", optarg, 3600000); break;
		case 'x': set_hidden(optarg); break;
		case 'z': cf.max_size = num_arg("-z", optarg, ~0UL); break;
		case 'G':
			if (strcmp(optarg, "421") == 0)
				cf.greet = GREET_421;
			else if (strcmp(optarg, "hang") == 0)
				cf.greet = GREET_HANG;
			else
				log_fatal("bad --greeting '%s' (421 or hang)", optarg);
			break;
		case 'M': cf.mail_reply = reply_class_arg("--mail-reply", optarg); break;
		case 'Y': cf.data_reply = reply_class_arg("--data-reply", optarg); break;
		case 'O': cf.dot_reply = reply_class_arg("--dot-reply", optarg); break;
		case 'E': cf.no_ehlo = true; break;
		case 'F': cf.limit_file = optarg; break;
		default: usage();
		}
	}
	if (argc - optind != 1)
		usage();
	if (cf.tempfail_pct + cf.permfail_pct > 100)
		log_fatal("-t and -p together exceed 100%%");
	if (cf.max_line < 16)
		log_fatal("-L must be at least 16");
	if (cf.idle_timeout == 0)
		log_fatal("-T must be at least 1");
	if (!parse_endpoint(argv[optind], &ss, &sslen))
		log_fatal("bad address '%s' (want [addr:]port or [ipv6]:port)", argv[optind]);
	if (!cf.allow_any && !sock_addr_is_loopback((struct sockaddr *)&ss))
		log_fatal("refusing to listen on a non-loopback address without -A: %s", argv[optind]);
	rng_state = cf.seed ? cf.seed : 0x9E3779B97F4A7C15ULL;
	if (cf.savedir != NULL) {
		struct stat st;
		if (stat(cf.savedir, &st) < 0 || !S_ISDIR(st.st_mode) ||
		    access(cf.savedir, W_OK) < 0)
			log_fatal("-d %s: not a writable directory", cf.savedir);
	}

	if (cf.cert != NULL || cf.key != NULL) {
		if (cf.cert == NULL)
			log_fatal("-k needs -c");
		tls_ctx = SSL_CTX_new(TLS_server_method());
		if (tls_ctx == NULL ||
		    !SSL_CTX_set_min_proto_version(tls_ctx, TLS1_2_VERSION) ||
		    SSL_CTX_use_certificate_chain_file(tls_ctx, cf.cert) != 1 ||
		    SSL_CTX_use_PrivateKey_file(tls_ctx, cf.key ? cf.key : cf.cert,
			SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(tls_ctx) != 1) {
			char buf[256];
			ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
			log_fatal("cannot load TLS certificate/key: %s", buf);
		}
	}

	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		log_fatal("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, sslen) < 0)
		log_fatal("bind %s: %s", argv[optind], strerror(errno));
	if (listen(lfd, 1024) < 0)
		log_fatal("listen: %s", strerror(errno));

	if (selfpipe_open() < 0)
		log_fatal("pipe: %s", strerror(errno));
	selfpipe_catch(SIGTERM, SA_RESTART);
	selfpipe_catch(SIGINT, SA_RESTART);
	selfpipe_catch(SIGUSR1, SA_RESTART);
	selfpipe_catch(SIGHUP, SA_RESTART);
	signal(SIGPIPE, SIG_IGN);
	read_limit_file();

	pthread_mutex_lock(&stat_lock);
	stats_write_locked();
	pthread_mutex_unlock(&stat_lock);
	if (cf.statsfile != NULL && cf.stats_interval_ms > 0 &&
	    pthread_create(&writer, NULL, stats_writer, NULL) != 0)
		log_fatal("cannot start the stats writer thread");
	if (cf.portfile != NULL)
		write_portfile(cf.portfile, lfd);
	log_info("listening on %s", argv[optind]);

	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = lfd, .events = POLLIN },
			{ .fd = selfpipe_fd(), .events = POLLIN },
		};
		int n = poll(pfd, 2, -1);

		if (n < 0 && errno != EINTR)
			log_fatal("poll: %s", strerror(errno));
		if (n <= 0)
			continue;
		if (pfd[1].revents & POLLIN) {
			int sig;
			bool stop = false;
			while ((sig = selfpipe_read()) > 0) {
				if (sig == SIGUSR1)
					print_stats();
				else if (sig == SIGHUP)
					read_limit_file();
				else
					stop = true;
			}
			if (stop)
				break;
		}
		if (pfd[0].revents & POLLIN) {
			struct sockaddr_storage peer;
			socklen_t plen = sizeof(peer);
			int fd = accept(lfd, (struct sockaddr *)&peer, &plen);
			if (fd < 0) {
				if (errno != EINTR && errno != EAGAIN &&
				    errno != ECONNABORTED)
					log_warning("accept: %s", strerror(errno));
				if (errno == EMFILE || errno == ENFILE)
					sleep_ms(100);
				continue;
			}
			fcntl(fd, F_SETFD, FD_CLOEXEC);
			start_session(fd, &peer);
		}
	}
	close(lfd);
	log_info("terminating");
	shutdown_sessions();
	pthread_mutex_lock(&stat_lock);
	writer_stop = true;
	pthread_cond_signal(&stat_cond);
	pthread_mutex_unlock(&stat_lock);
	if (cf.statsfile != NULL && cf.stats_interval_ms > 0)
		pthread_join(writer, NULL);
	pthread_mutex_lock(&stat_lock);
	stats_write_locked();
	pthread_mutex_unlock(&stat_lock);
	print_stats();
	if (stat_get(S_ACTIVE) > 0) {
		/* A session stuck in a long delay: do not wait for it. */
		_exit(0);
	}
	if (tls_ctx != NULL)
		SSL_CTX_free(tls_ctx);
	return 0;
}
