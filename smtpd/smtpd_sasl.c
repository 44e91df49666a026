/* SMTP AUTH backends: what smtpd needs from an authentication server
 * (mechanisms, one exchange at a time), and the one real backend,
 * Dovecot's authentication protocol (version 1.x) on a UNIX socket.
 *
 * The Dovecot client, as its server speaks it:
 *
 *   -> VERSION 1 1 / CPID <pid>
 *   <- VERSION 1 x / MECH <name> [properties...]* / SPID / CUID /
 *      COOKIE / DONE
 *   -> AUTH <id> <mech> service=smtp nologin lip= rip= lport= rport=
 *      [secured] [resp=<base64>]
 *   <- CONT <id> <base64> | OK <id> user=<name> [resp=..] |
 *      FAIL <id> [reason=..] [temp] [user=..]
 *   -> CONT <id> <base64>   (after a CONT)
 *
 * Fields are separated by TAB, lines end with LF; values escape TAB, LF,
 * CR and \001 as \001t, \001n, \001r, \0011.
 *
 * What comes from the server is not trusted more than what comes from a
 * client: every line is bounded (AUTH_LINE_MAX), every wait is bounded
 * by smtpd_sasl_timeout (one deadline for the whole exchange step), a
 * reply to another request or a malformed line ends the connection, and
 * the exchange is a temporary failure (454).  What goes to the server is
 * built only from checked bytes: mechanism names match the list the
 * server sent, responses are valid base64 (checked by the caller), and
 * address fields are numeric.  The connection is kept from one session
 * to the next (one per smtpd process) and made again when it broke. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "base64.h"
#include "log.h"
#include "mem.h"
#include "smtpd.h"

/* Longest line we take from the server: challenges are small (SCRAM,
 * DIGEST-MD5 stay well under 1 KiB); Dovecot's own limit is 16 KiB. */
#define AUTH_LINE_MAX 16384
/* A handshake has a few lines per mechanism. */
#define AUTH_HANDSHAKE_LINES 256

/* ---- Shared helpers ------------------------------------------------- */

static const struct {
	const char *word;
	unsigned bit;
} mech_props[] = {
	{ "anonymous", SMTPD_SASL_P_ANONYMOUS },
	{ "plaintext", SMTPD_SASL_P_PLAINTEXT },
	{ "dictionary", SMTPD_SASL_P_DICTIONARY },
	{ "active", SMTPD_SASL_P_ACTIVE },
	{ "forward-secrecy", SMTPD_SASL_P_FORWARD_SECRECY },
	{ "mutual-auth", SMTPD_SASL_P_MUTUAL_AUTH },
};

bool smtpd_sasl_mech_allowed(unsigned props, unsigned opts)
{
	if ((opts & SASL_OPT_NOANONYMOUS) && (props & SMTPD_SASL_P_ANONYMOUS))
		return false;
	if ((opts & SASL_OPT_NOPLAINTEXT) && (props & SMTPD_SASL_P_PLAINTEXT))
		return false;
	if ((opts & SASL_OPT_NOACTIVE) && (props & SMTPD_SASL_P_ACTIVE))
		return false;
	if ((opts & SASL_OPT_NODICTIONARY) && (props & SMTPD_SASL_P_DICTIONARY))
		return false;
	if ((opts & SASL_OPT_FORWARD_SECRECY) &&
	    !(props & SMTPD_SASL_P_FORWARD_SECRECY))
		return false;
	if ((opts & SASL_OPT_MUTUAL_AUTH) && !(props & SMTPD_SASL_P_MUTUAL_AUTH))
		return false;
	return true;
}

bool smtpd_sasl_mech_name_ok(const char *s, size_t len)
{
	/* RFC 4422 3.1: 1 to 20 of A-Z 0-9 - _ (any case here). */
	if (len == 0 || len > 20)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
	}
	return true;
}

/* ---- Dovecot -------------------------------------------------------- */

typedef struct dovecot {
	smtpd_sasl_backend_t base;
	char *path;
	char *service;
	int timeout_ms;
	stream_t *s;		/* NULL: not connected */
	unsigned long next_id;
	unsigned long pending;	/* request in progress, 0 = none */
	smtpd_sasl_mech_t *mechs;
	size_t nmechs;
	str_t line;
	struct timespec deadline;
	bool peer_closed;	/* the last failure: the server hung up */
	time_t quiet_until;	/* after a timeout: no new attempt before */
} dovecot_t;

/* After the server let a request time out, new connections are not
 * tried for this long: a hung server must not cost every EHLO a full
 * smtpd_sasl_timeout. */
#define AUTH_QUIET_SECONDS 10

static void dv_close(dovecot_t *d)
{
	if (d->s)
		stream_close(d->s);
	d->s = NULL;
	d->pending = 0;
}

static long ms_left(const dovecot_t *d)
{
	struct timespec now;
	long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long)(d->deadline.tv_sec - now.tv_sec) * 1000 +
	    (d->deadline.tv_nsec - now.tv_nsec) / 1000000;
	return ms;
}

static void arm(dovecot_t *d)
{
	clock_gettime(CLOCK_MONOTONIC, &d->deadline);
	d->deadline.tv_sec += d->timeout_ms / 1000;
	d->deadline.tv_nsec += (long)(d->timeout_ms % 1000) * 1000000;
	if (d->deadline.tv_nsec >= 1000000000) {
		d->deadline.tv_sec++;
		d->deadline.tv_nsec -= 1000000000;
	}
}

/* One line from the server into d->line: 0, or -1 with why. */
static int dv_getline(dovecot_t *d, str_t *why)
{
	long left = ms_left(d);
	int r;

	d->peer_closed = false;
	if (left <= 0) {
		str_set(why, "timeout exceeded");
		d->quiet_until = time(NULL) + AUTH_QUIET_SECONDS;
		return -1;
	}
	stream_set_timeouts(d->s, (int)left, (int)left);
	r = stream_getline(d->s, &d->line, AUTH_LINE_MAX);
	if (r == STREAM_LINE_LF || r == STREAM_LINE_CRLF) {
		if (d->line.len > 0 && memchr(d->line.buf, 0, d->line.len)) {
			str_set(why, "NUL byte in a reply");
			return -1;
		}
		return 0;
	}
	if (r == STREAM_LINE_MORE) {
		str_setf(why, "reply longer than %d bytes", AUTH_LINE_MAX);
	} else if (stream_timedout(d->s)) {
		str_set(why, "timeout exceeded");
		d->quiet_until = time(NULL) + AUTH_QUIET_SECONDS;
	} else if (stream_error(d->s)) {
		str_setf(why, "read: %s", strerror(stream_errno(d->s)));
		d->peer_closed = stream_errno(d->s) == ECONNRESET;
	} else {
		str_set(why, "connection closed");
		d->peer_closed = true;
	}
	return -1;
}

/* Splits d->line in place at TABs: at most max fields. */
static size_t split(str_t *line, char **f, size_t max)
{
	char *p = line->buf ? line->buf : (char *)"";
	size_t n = 0;

	if (line->buf == NULL) {
		f[n++] = p;
		return n;
	}
	while (n < max) {
		f[n++] = p;
		p = strchr(p, '\t');
		if (p == NULL)
			break;
		*p++ = 0;
	}
	return n;
}

/* Dovecot's escaping: \001 followed by 1, t, r or n. */
static void unescape(const char *v, str_t *out)
{
	str_reset(out);
	for (; *v; v++) {
		if (*v == '\001' && v[1] != 0) {
			v++;
			str_putc(out, *v == 't' ? '\t' : *v == 'r' ? '\r' :
			    *v == 'n' ? '\n' : *v == '1' ? '\001' : *v);
		} else {
			str_putc(out, *v);
		}
	}
}

static int dv_handshake(dovecot_t *d, str_t *why)
{
	bool version = false;
	char *f[16];

	free(d->mechs);
	d->mechs = NULL;
	d->nmechs = 0;
	if (stream_printf(d->s, "VERSION\t1\t1\nCPID\t%ld\n", (long)getpid()) < 0 ||
	    stream_flush(d->s) < 0) {
		str_setf(why, "write: %s", strerror(stream_errno(d->s)));
		return -1;
	}
	for (int lines = 0; lines < AUTH_HANDSHAKE_LINES; lines++) {
		size_t n;
		if (dv_getline(d, why) < 0)
			return -1;
		n = split(&d->line, f, 16);
		if (strcmp(f[0], "VERSION") == 0) {
			if (n < 2 || strcmp(f[1], "1") != 0) {
				str_setf(why, "unsupported protocol version %.20s",
				    n < 2 ? "(none)" : f[1]);
				return -1;
			}
			version = true;
		} else if (strcmp(f[0], "MECH") == 0) {
			unsigned props = 0;
			if (!version || n < 2 ||
			    !smtpd_sasl_mech_name_ok(f[1], strlen(f[1]))) {
				str_set(why, "malformed MECH line");
				return -1;
			}
			if (d->nmechs >= SMTPD_SASL_MECHS_MAX)
				continue;	/* more than anyone offers */
			for (size_t i = 2; i < n; i++)
				for (size_t k = 0; k < sizeof(mech_props) /
				    sizeof(mech_props[0]); k++)
					if (strcmp(f[i], mech_props[k].word) == 0)
						props |= mech_props[k].bit;
			d->mechs = xreallocarray(d->mechs, d->nmechs + 1,
			    sizeof(*d->mechs));
			bcopy_str(d->mechs[d->nmechs].name,
			    sizeof(d->mechs[d->nmechs].name), f[1]);
			for (char *c = d->mechs[d->nmechs].name; *c; c++)
				if (*c >= 'a' && *c <= 'z')
					*c = (char)(*c - 'a' + 'A');
			d->mechs[d->nmechs].props = props;
			d->nmechs++;
		} else if (strcmp(f[0], "DONE") == 0) {
			if (!version) {
				str_set(why, "no VERSION line");
				return -1;
			}
			return 0;
		}
		/* SPID, CUID, COOKIE and anything newer: not needed */
	}
	str_set(why, "handshake too long");
	return -1;
}

static int dv_connect(dovecot_t *d, str_t *why)
{
	int fd, rc;

	if (d->s != NULL)
		return 0;
	if (d->quiet_until != 0 && time(NULL) < d->quiet_until) {
		str_setf(why, "%s timed out less than %d seconds ago", d->path,
		    AUTH_QUIET_SECONDS);
		return -1;
	}
	d->quiet_until = 0;
	arm(d);
	rc = sock_unix_connect(d->path, d->timeout_ms, &fd);
	if (rc != 0) {
		str_setf(why, "cannot connect to %s: %s", d->path, strerror(rc));
		return -1;
	}
	d->s = stream_open(fd);
	d->next_id = 0;
	if (dv_handshake(d, why) < 0) {
		str_t w = STR_INIT;
		str_setf(&w, "%s: %s", d->path, str_cstr(why));
		str_set(why, str_cstr(&w));
		str_release(&w);
		dv_close(d);
		return -1;
	}
	return 0;
}

static int dv_mechs(smtpd_sasl_backend_t *b, const smtpd_sasl_mech_t **v,
    size_t *n, str_t *why)
{
	dovecot_t *d = (dovecot_t *)b;

	if (dv_connect(d, why) < 0)
		return -1;
	*v = d->mechs;
	*n = d->nmechs;
	return 0;
}

/* Reads the server's answer to request d->pending. */
static enum smtpd_sasl_status dv_answer(dovecot_t *d, str_t *out, str_t *user)
{
	char *f[64], idbuf[24];
	size_t n;
	str_t why = STR_INIT;
	enum smtpd_sasl_status st = SMTPD_SASL_TEMP;

	if (dv_getline(d, &why) < 0)
		goto broken;
	n = split(&d->line, f, 64);
	bfmt(idbuf, sizeof(idbuf), "%lu", d->pending);
	if (n < 2 || strcmp(f[1], idbuf) != 0) {
		str_setf(&why, "reply for another request (%.20s %.20s)", f[0],
		    n < 2 ? "" : f[1]);
		goto broken;
	}
	if (strcmp(f[0], "CONT") == 0) {
		if (n < 3 || !base64_well_formed(f[2], strlen(f[2]))) {
			str_set(&why, "malformed CONT reply");
			goto broken;
		}
		str_set(out, f[2]);
		str_release(&why);
		return SMTPD_SASL_CONT;
	}
	if (strcmp(f[0], "OK") == 0) {
		bool have_user = false;
		for (size_t i = 2; i < n; i++) {
			if (strncmp(f[i], "user=", 5) == 0) {
				unescape(f[i] + 5, user);
				have_user = user->len > 0;
			} else if (strncmp(f[i], "resp=", 5) == 0) {
				if (!base64_well_formed(f[i] + 5, strlen(f[i] + 5))) {
					str_set(&why, "malformed final response");
					goto broken;
				}
				str_set(out, f[i] + 5);
			}
		}
		if (!have_user) {
			str_set(&why, "OK without a user name");
			goto broken;
		}
		d->pending = 0;
		str_release(&why);
		return SMTPD_SASL_OK;
	}
	if (strcmp(f[0], "FAIL") == 0) {
		st = SMTPD_SASL_FAIL;
		for (size_t i = 2; i < n; i++) {
			if (strncmp(f[i], "reason=", 7) == 0)
				unescape(f[i] + 7, out);
			else if (strncmp(f[i], "user=", 5) == 0)
				unescape(f[i] + 5, user);
			else if (strcmp(f[i], "temp") == 0)
				st = SMTPD_SASL_TEMP;
		}
		d->pending = 0;
		str_release(&why);
		return st;
	}
	str_setf(&why, "unexpected reply \"%.20s\"", f[0]);
broken:
	/* No way to stay in step: start over on the next request. */
	log_warning("SASL: authentication server %s: %s", d->path,
	    str_cstr(&why));
	dv_close(d);
	str_set(out, "Connection lost to authentication server");
	str_reset(user);
	str_release(&why);
	return SMTPD_SASL_TEMP;
}

static bool numeric_ok(const char *s)
{
	/* addresses and ports: no TAB/LF can reach the protocol */
	for (; s && *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') ||
		    (*s >= 'A' && *s <= 'F') || *s == '.' || *s == ':'))
			return false;
	return true;
}

static enum smtpd_sasl_status dv_start(smtpd_sasl_backend_t *b,
    const smtpd_sasl_req_t *req, str_t *out, str_t *user)
{
	dovecot_t *d = (dovecot_t *)b;
	str_t l = STR_INIT, why = STR_INIT;
	enum smtpd_sasl_status st;

	str_reset(out);
	str_reset(user);
	for (int attempt = 0; attempt < 2; attempt++) {
		bool was_reused;

		if (d->pending)
			dv_close(d);
		/* A connection from an earlier call may have been closed by
		 * the server since (a restart): worth one more try. */
		was_reused = d->s != NULL;
		if (dv_connect(d, &why) < 0) {
			log_warning("SASL: %s", str_cstr(&why));
			str_set(out, "Connection lost to authentication server");
			st = SMTPD_SASL_TEMP;
			break;
		}
		arm(d);
		d->pending = ++d->next_id;
		str_setf(&l, "AUTH\t%lu\t%s\tservice=%s\tnologin", d->pending,
		    req->mech, d->service);
		if (req->local_addr && *req->local_addr && numeric_ok(req->local_addr))
			str_catf(&l, "\tlip=%s", req->local_addr);
		if (req->client_addr && *req->client_addr &&
		    numeric_ok(req->client_addr))
			str_catf(&l, "\trip=%s", req->client_addr);
		if (req->local_port && *req->local_port && numeric_ok(req->local_port))
			str_catf(&l, "\tlport=%s", req->local_port);
		if (req->client_port && *req->client_port &&
		    numeric_ok(req->client_port))
			str_catf(&l, "\trport=%s", req->client_port);
		if (req->secured)
			str_cat(&l, "\tsecured");
		if (req->resp != NULL)
			str_catf(&l, "\tresp=%s", req->resp);
		str_putc(&l, '\n');
		if (stream_write(d->s, l.buf, l.len) < 0 || stream_flush(d->s) < 0) {
			int e = stream_errno(d->s);
			log_warning("SASL: authentication server %s: write: %s",
			    d->path, strerror(e));
			d->peer_closed = e == EPIPE || e == ECONNRESET;
			dv_close(d);
			str_set(out, "Connection lost to authentication server");
			st = SMTPD_SASL_TEMP;
			if (was_reused && d->peer_closed)
				continue;
			break;
		}
		st = dv_answer(d, out, user);
		/* A kept connection the server closed meanwhile (it was
		 * restarted): once more on a new one. */
		if (st == SMTPD_SASL_TEMP && d->s == NULL && was_reused &&
		    d->peer_closed) {
			str_reset(out);
			str_reset(user);
			continue;
		}
		break;
	}
	str_release(&l);
	str_release(&why);
	return st;
}

static enum smtpd_sasl_status dv_next(smtpd_sasl_backend_t *b,
    const char *resp, str_t *out, str_t *user)
{
	dovecot_t *d = (dovecot_t *)b;

	str_reset(out);
	str_reset(user);
	if (d->s == NULL || d->pending == 0) {
		str_set(out, "Connection lost to authentication server");
		return SMTPD_SASL_TEMP;
	}
	arm(d);
	if (stream_printf(d->s, "CONT\t%lu\t%s\n", d->pending, resp) < 0 ||
	    stream_flush(d->s) < 0) {
		log_warning("SASL: authentication server %s: write: %s",
		    d->path, strerror(stream_errno(d->s)));
		dv_close(d);
		str_set(out, "Connection lost to authentication server");
		return SMTPD_SASL_TEMP;
	}
	return dv_answer(d, out, user);
}

/* The protocol has no way to cancel a request: the connection goes,
 * and with it the server's state of the exchange. */
static void dv_abort(smtpd_sasl_backend_t *b)
{
	dovecot_t *d = (dovecot_t *)b;

	if (d->pending)
		dv_close(d);
}

static void dv_free(smtpd_sasl_backend_t *b)
{
	dovecot_t *d = (dovecot_t *)b;

	dv_close(d);
	free(d->mechs);
	free(d->path);
	free(d->service);
	str_release(&d->line);
	free(d);
}

smtpd_sasl_backend_t *smtpd_sasl_dovecot(const char *path,
    const char *service, int timeout_ms)
{
	dovecot_t *d = xcalloc(1, sizeof(*d));

	d->base.mechs = dv_mechs;
	d->base.start = dv_start;
	d->base.next = dv_next;
	d->base.abort = dv_abort;
	d->base.free = dv_free;
	d->path = xstrdup(path);
	d->service = xstrdup(service);
	d->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	str_reset(&d->line);
	return &d->base;
}
