/* SMTP sessions: connecting to one server address, the handshake
 * (greeting, EHLO or HELO, STARTTLS and EHLO again), QUIT, and the cache
 * of idle sessions kept for the next delivery to the same next hop.
 *
 * Every failure before the session is usable is described in the
 * attempt (smtp_attempt_t): the reason as Postfix words it, a DSN status,
 * whether it was permanent, whether TCP itself failed, and whether "may"
 * should try again without TLS. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "event.h"
#include "log.h"
#include "mem.h"
#include "sock.h"
#include "smtp/smtp_int.h"

static void attempt_fail(smtp_attempt_t *at, bool hard, const char *dsn,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void attempt_fail(smtp_attempt_t *at, bool hard, const char *dsn,
    const char *fmt, ...)
{
	va_list ap;

	str_reset(&at->reason);
	va_start(ap, fmt);
	str_vcatf(&at->reason, fmt, ap);
	va_end(ap);
	bcopy_str(at->dsn, sizeof(at->dsn), dsn);
	at->hard = hard;
}

/* The failure was the server's reply r. */
static void at_remote(smtp_attempt_t *at, const smtp_sess_t *ss,
    const smtp_reply_t *r)
{
	str_set(&at->remote_mta, ss->host);
	str_set(&at->remote_reply, str_cstr(&r->text));
}

static smtp_sess_t *sess_new(const dns_server_t *srv, int fd)
{
	smtp_sess_t *ss = xcalloc(1, sizeof(*ss));

	ss->s = stream_open(fd);
	ss->host = xstrdup(srv->hostname);
	bcopy_str(ss->addr, sizeof(ss->addr), srv->addrstr);
	ss->port = srv->port;
	str_setf(&ss->namaddr, "%s[%s]", ss->host, ss->addr);
	str_setf(&ss->relay, "%s[%s]:%u", ss->host, ss->addr, ss->port);
	ss->born_ms = event_now_ms();
	return ss;
}

static void sess_free(smtp_sess_t *ss)
{
	if (ss->s != NULL)
		stream_close(ss->s);
	if (ss->tls != NULL)
		tls_sess_free(ss->tls);
	free(ss->key);
	free(ss->host);
	str_release(&ss->namaddr);
	str_release(&ss->relay);
	str_release(&ss->line);
	free(ss);
}

/* Sends one command line; false if the stream has failed. */
static bool send_cmd(smtp_sess_t *ss, const char *cmd)
{
	stream_puts(ss->s, cmd);
	stream_puts(ss->s, "\r\n");
	return !stream_error(ss->s) && !stream_timedout(ss->s);
}

/* EHLO (or HELO when EHLO is refused or not wanted).  true when the
 * session may go on. */
static bool say_hello(smtp_client_t *cl, smtp_sess_t *ss, smtp_reply_t *r,
    smtp_attempt_t *at)
{
	char cmd[300];
	int io;

	if (cl->cfg.always_send_ehlo) {
		bfmt(cmd, sizeof(cmd), "EHLO %s", cl->cfg.helo_name);
		send_cmd(ss, cmd);
		io = smtp_reply_read(ss, cl->cfg.helo_timeout_ms, r);
		if (io != SMTP_IO_OK) {
			smtp_io_reason(ss, io, "performing the EHLO handshake", r,
			    &at->reason);
			bcopy_str(at->dsn, sizeof(at->dsn), smtp_io_dsn(io));
			at->hard = false;
			return false;
		}
		if (r->code / 100 == 2) {
			smtp_ehlo_features(r, &ss->features, &ss->size_limit);
			return true;
		}
		if (r->code == 421) {	/* closing: HELO would not help */
			attempt_fail(at, false, r->dsn, "host %s refused to talk "
			    "to me: %s", str_cstr(&ss->namaddr), str_cstr(&r->text));
			at_remote(at, ss, r);
			return false;
		}
	}
	bfmt(cmd, sizeof(cmd), "HELO %s", cl->cfg.helo_name);
	send_cmd(ss, cmd);
	io = smtp_reply_read(ss, cl->cfg.helo_timeout_ms, r);
	if (io != SMTP_IO_OK) {
		smtp_io_reason(ss, io, "performing the HELO handshake", r,
		    &at->reason);
		bcopy_str(at->dsn, sizeof(at->dsn), smtp_io_dsn(io));
		at->hard = false;
		return false;
	}
	if (r->code / 100 != 2) {
		attempt_fail(at, r->code / 100 == 5, r->dsn, "host %s refused to "
		    "talk to me: %s (in reply to HELO command)",
		    str_cstr(&ss->namaddr), str_cstr(&r->text));
		at_remote(at, ss, r);
		return false;
	}
	ss->features = 0;
	ss->size_limit = 0;
	return true;
}

/* STARTTLS per the security level.  true when the session may go on
 * (with TLS, or in plain text where the level allows it). */
static bool start_tls(smtp_client_t *cl, smtp_sess_t *ss,
    const dns_nexthop_t *nh, smtp_reply_t *r, smtp_attempt_t *at)
{
	enum tls_level level = cl->cfg.tls_level;
	tls_peer_t peer;
	str_t err = STR_INIT;
	int io, st;

	if (!(ss->features & SMTP_F_STARTTLS)) {
		if (level == TLS_LEVEL_MAY)
			return true;
		attempt_fail(at, false, "4.7.4", "TLS is required, but was not "
		    "offered by host %s", str_cstr(&ss->namaddr));
		return false;
	}
	send_cmd(ss, "STARTTLS");
	io = smtp_reply_read(ss, cl->cfg.helo_timeout_ms, r);
	if (io != SMTP_IO_OK) {
		smtp_io_reason(ss, io, "sending STARTTLS", r, &at->reason);
		bcopy_str(at->dsn, sizeof(at->dsn), smtp_io_dsn(io));
		at->hard = false;
		return false;
	}
	if (r->code / 100 != 2) {
		if (level == TLS_LEVEL_MAY) {
			log_info("host %s refused STARTTLS: %s; going on without "
			    "TLS", str_cstr(&ss->namaddr), str_cstr(&r->text));
			return true;
		}
		attempt_fail(at, false, "4.7.4", "TLS is required, but host %s "
		    "refused to start TLS: %s", str_cstr(&ss->namaddr),
		    str_cstr(&r->text));
		at_remote(at, ss, r);
		return false;
	}
	/* Anything the server sent after its 220 is not protected: refuse. */
	if (stream_pending(ss->s) > 0) {
		attempt_fail(at, false, "4.7.5", "host %s sent plain text after "
		    "its reply to STARTTLS", str_cstr(&ss->namaddr));
		at->tls_retry = level == TLS_LEVEL_MAY;
		return false;
	}
	peer.level = level;
	peer.host = ss->host;
	peer.nexthop = nh->host;
	st = tls_client_start(cl->tls, ss->s, &peer, cl->cfg.starttls_timeout_ms,
	    &ss->tls, &err);
	if (st != TLS_OK) {
		if (st == TLS_ERR_VERIFY)
			attempt_fail(at, false, "4.7.5", "server certificate not "
			    "verified for %s: %s", str_cstr(&ss->relay),
			    str_cstr(&err));
		else
			attempt_fail(at, false, "4.7.5", "cannot start TLS with "
			    "%s: %s%s", str_cstr(&ss->relay),
			    st == TLS_ERR_TIMEOUT ? "timed out; " : "",
			    str_cstr(&err));
		at->tls_retry = level == TLS_LEVEL_MAY && st != TLS_ERR_VERIFY;
		ss->broken = true;
		str_release(&err);
		return false;
	}
	str_release(&err);
	cl->stats.tls++;
	tls_sess_log(ss->tls, str_cstr(&ss->relay));
	/* RFC 3207: forget what the server said before; ask again. */
	if (!say_hello(cl, ss, r, at))
		return false;
	return true;
}

smtp_sess_t *smtp_session_open(smtp_client_t *cl, const dns_server_t *srv,
    const dns_nexthop_t *nh, bool use_tls, smtp_attempt_t *at)
{
	smtp_sess_t *ss;
	smtp_reply_t r;
	int fd = -1, err, io;
	bool ok = false;

	at->tls_retry = false;
	at->connect_failed = false;
	str_reset(&at->relay);
	str_reset(&at->remote_reply);
	str_reset(&at->remote_mta);
	cl->stats.connects++;
	err = sock_tcp_connect((const struct sockaddr *)&srv->addr, srv->addrlen,
	    cl->cfg.connect_timeout_ms, &fd);
	if (err != 0) {
		attempt_fail(at, false, "4.4.1", "connect to %s[%s]:%u: %s",
		    srv->hostname, srv->addrstr, srv->port,
		    err == ETIMEDOUT ? "Connection timed out" : strerror(err));
		at->connect_failed = true;
		log_info("%s", str_cstr(&at->reason));
		return NULL;
	}
	cl->stats.connected++;
	ss = sess_new(srv, fd);
	str_set(&at->relay, str_cstr(&ss->relay));
	smtp_reply_init(&r);
	io = smtp_reply_read(ss, cl->cfg.helo_timeout_ms, &r);
	if (io != SMTP_IO_OK) {
		smtp_io_reason(ss, io, "receiving the initial server greeting",
		    &r, &at->reason);
		bcopy_str(at->dsn, sizeof(at->dsn), smtp_io_dsn(io));
		at->hard = false;
		ss->broken = true;
	} else if (r.code / 100 != 2) {
		bool hard = r.code / 100 == 5 && !cl->cfg.skip_5xx_greeting;
		attempt_fail(at, hard, r.dsn, "host %s refused to talk to me: %s",
		    str_cstr(&ss->namaddr), str_cstr(&r.text));
		at_remote(at, ss, &r);
		if (!hard)
			at->dsn[0] = '4';
		ss->broken = true;	/* it said no: just hang up */
	} else if (!say_hello(cl, ss, &r, at)) {
		ss->broken = ss->broken || stream_error(ss->s) ||
		    stream_timedout(ss->s) || stream_eof(ss->s);
	} else if (use_tls && cl->tls != NULL &&
	    cl->cfg.tls_level != TLS_LEVEL_NONE &&
	    !start_tls(cl, ss, nh, &r, at)) {
		ss->broken = ss->broken || stream_error(ss->s) ||
		    stream_timedout(ss->s) || stream_eof(ss->s);
	} else {
		ok = true;
	}
	smtp_reply_free(&r);
	if (!ok) {
		log_info("%s", str_cstr(&at->reason));
		smtp_session_close(cl, ss);
		return NULL;
	}
	cl->stats.sessions++;
	return ss;
}

void smtp_session_close(smtp_client_t *cl, smtp_sess_t *ss)
{
	if (!ss->broken) {
		smtp_reply_t r;
		smtp_reply_init(&r);
		if (send_cmd(ss, "QUIT"))
			(void)smtp_reply_read(ss, cl->cfg.quit_timeout_ms, &r);
		smtp_reply_free(&r);
		if (ss->tls != NULL)
			(void)tls_shutdown(ss->tls, ss->s, cl->cfg.quit_timeout_ms);
	}
	sess_free(ss);
}

/* ---- the cache of idle sessions ---- */

static void cache_remove(smtp_client_t *cl, smtp_sess_t *ss)
{
	list_remove(&ss->node);
	cl->ncache--;
}

void smtp_session_done(smtp_client_t *cl, smtp_sess_t *ss, const char *key)
{
	int64_t now = event_now_ms();
	list_node_t *n;

	if (ss->broken || !cl->cfg.connection_cache ||
	    stream_error(ss->s) || stream_timedout(ss->s) || stream_eof(ss->s) ||
	    (cl->cfg.reuse_time_limit_ms > 0 &&
	    now - ss->born_ms >= cl->cfg.reuse_time_limit_ms) ||
	    (cl->cfg.reuse_count_limit > 0 &&
	    ss->uses > cl->cfg.reuse_count_limit)) {
		smtp_session_close(cl, ss);
		return;
	}
	free(ss->key);
	ss->key = xstrdup(key);
	ss->idle_ms = now;
	/* One kept session per next hop: the newer one wins. */
	for (n = list_first(&cl->cache); n != NULL;
	    n = list_next(&cl->cache, n)) {
		smtp_sess_t *o = list_entry(n, smtp_sess_t, node);
		if (strcmp(o->key, key) == 0) {
			cache_remove(cl, o);
			smtp_session_close(cl, o);
			break;
		}
	}
	if (cl->ncache >= SMTP_CACHE_MAX) {
		smtp_sess_t *o = list_entry(list_first(&cl->cache), smtp_sess_t,
		    node);
		cache_remove(cl, o);
		smtp_session_close(cl, o);
	}
	list_append(&cl->cache, &ss->node);
	cl->ncache++;
}

/* A kept session whose server already spoke (a 421 before closing) or
 * closed: the socket is readable while we have asked nothing. */
static bool server_spoke(smtp_sess_t *ss)
{
	struct pollfd p = { .fd = stream_fd(ss->s), .events = POLLIN };

	if (stream_pending(ss->s) > 0)
		return true;
	return poll(&p, 1, 0) != 0;
}

smtp_sess_t *smtp_cache_take(smtp_client_t *cl, const char *key)
{
	int64_t now = event_now_ms();
	list_node_t *n;

	for (n = list_first(&cl->cache); n != NULL;
	    n = list_next(&cl->cache, n)) {
		smtp_sess_t *ss = list_entry(n, smtp_sess_t, node);
		if (strcmp(ss->key, key) != 0)
			continue;
		cache_remove(cl, ss);
		if (now - ss->idle_ms > cl->cfg.cache_time_limit_ms) {
			smtp_session_close(cl, ss);
			return NULL;
		}
		if (server_spoke(ss)) {
			ss->broken = true;
			smtp_session_close(cl, ss);
			return NULL;
		}
		return ss;
	}
	return NULL;
}

size_t smtp_client_cached(const smtp_client_t *cl)
{
	return cl->ncache;
}

int64_t smtp_client_cache_deadline(const smtp_client_t *cl)
{
	int64_t best = -1;
	list_node_t *n;

	for (n = list_first(&cl->cache); n != NULL;
	    n = list_next(&cl->cache, n)) {
		smtp_sess_t *ss = list_entry(n, smtp_sess_t, node);
		int64_t d = ss->idle_ms + cl->cfg.cache_time_limit_ms;
		if (best < 0 || d < best)
			best = d;
	}
	return best;
}

void smtp_client_cache_expire(smtp_client_t *cl, int64_t now_ms, bool all)
{
	list_node_t *n, *next;

	for (n = list_first(&cl->cache); n != NULL; n = next) {
		smtp_sess_t *ss = list_entry(n, smtp_sess_t, node);
		next = list_next(&cl->cache, n);
		if (all || ss->idle_ms + cl->cfg.cache_time_limit_ms <= now_ms) {
			cache_remove(cl, ss);
			smtp_session_close(cl, ss);
		}
	}
}

size_t smtp_client_cache_fds(const smtp_client_t *cl, int *fds, size_t max)
{
	size_t k = 0;
	list_node_t *n;

	for (n = list_first(&cl->cache); n != NULL && k < max;
	    n = list_next(&cl->cache, n))
		fds[k++] = stream_fd(list_entry(n, smtp_sess_t, node)->s);
	return k;
}

void smtp_client_cache_check(smtp_client_t *cl, int fd)
{
	list_node_t *n;

	for (n = list_first(&cl->cache); n != NULL;
	    n = list_next(&cl->cache, n)) {
		smtp_sess_t *ss = list_entry(n, smtp_sess_t, node);
		if (stream_fd(ss->s) == fd) {
			if (server_spoke(ss)) {
				cache_remove(cl, ss);
				ss->broken = true;
				smtp_session_close(cl, ss);
			}
			return;
		}
	}
}
