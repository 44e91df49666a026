/* SMTP sessions: connecting to one server address, the handshake
 * (greeting, EHLO or HELO, STARTTLS and EHLO again), QUIT, and the cache
 * of idle sessions kept for the next delivery to the same next hop.
 *
 * Every failure before the session is usable is described in the
 * attempt (smtp_attempt_t): the reason as Postfix words it, a DSN status,
 * whether it was permanent, whether TCP itself failed, and whether "may"
 * should try again without TLS.
 *
 * With a shared cache (the scache daemon, doc/smtp.md), a plain-text
 * session this process would strand goes there instead of being closed,
 * and one from there is taken before connecting. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attr.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "scache.h"
#include "sock.h"
#include "smtp_int.h"

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
	if (srv->addr.ss_family == AF_UNIX) {
		/* An LMTP socket: "localhost[private/dovecot-lmtp]" (the
		 * path is the hostname of its dns_server_t). */
		str_setf(&ss->namaddr, "localhost[%s]", ss->host);
		str_set(&ss->relay, str_cstr(&ss->namaddr));
	} else {
		str_setf(&ss->namaddr, "%s[%s]", ss->host, ss->addr);
		str_setf(&ss->relay, "%s[%s]:%u", ss->host, ss->addr,
		    ss->port);
	}
	ss->born_ms = event_now_ms();
	return ss;
}

/* The credentials tag of the request (cl->tag), for a new session;
 * NULL for none (no allocation on the common path). */
static void sess_tag(smtp_client_t *cl, smtp_sess_t *ss)
{
	free(ss->tag);
	ss->tag = str_len(&cl->tag) > 0 ? xstrdup(str_cstr(&cl->tag)) : NULL;
}

static void sess_free(smtp_sess_t *ss)
{
	if (ss->s != NULL)
		stream_close(ss->s);
	if (ss->tls != NULL)
		tls_sess_free(ss->tls);
	free(ss->key);
	free(ss->tag);
	free(ss->host);
	str_release(&ss->auth_mechs);
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

	if (cl->cfg.lmtp) {		/* RFC 2033: LHLO, nothing else */
		bfmt(cmd, sizeof(cmd), "LHLO %s", cl->cfg.helo_name);
		send_cmd(ss, cmd);
		io = smtp_reply_read(ss, cl->cfg.helo_timeout_ms, r);
		if (io != SMTP_IO_OK) {
			smtp_io_reason(ss, io, "performing the LHLO handshake", r,
			    &at->reason);
			bcopy_str(at->dsn, sizeof(at->dsn), smtp_io_dsn(io));
			at->hard = false;
			return false;
		}
		if (r->code / 100 != 2) {
			attempt_fail(at, r->code / 100 == 5, r->dsn, "host %s "
			    "refused to talk to me: %s (in reply to LHLO "
			    "command)", str_cstr(&ss->namaddr),
			    str_cstr(&r->text));
			at_remote(at, ss, r);
			return false;
		}
		smtp_ehlo_features(r, &ss->features, &ss->size_limit,
		    &ss->auth_mechs);
		return true;
	}
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
			smtp_ehlo_features(r, &ss->features, &ss->size_limit,
			    &ss->auth_mechs);
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
	str_reset(&ss->auth_mechs);
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
	at->auth_refused = false;
	str_reset(&at->relay);
	str_reset(&at->remote_reply);
	str_reset(&at->remote_mta);
	cl->stats.connects++;
	if (srv->addr.ss_family == AF_UNIX)
		err = sock_unix_connect(srv->hostname,
		    cl->cfg.connect_timeout_ms, &fd);
	else
		err = sock_tcp_connect((const struct sockaddr *)&srv->addr,
		    srv->addrlen, cl->cfg.connect_timeout_ms, &fd);
	if (err != 0) {
		if (srv->addr.ss_family == AF_UNIX)
			attempt_fail(at, false, "4.4.1", "connect to %s: %s",
			    srv->hostname, strerror(err));
		else
			attempt_fail(at, false, "4.4.1", "connect to %s[%s]:%u: "
			    "%s", srv->hostname, srv->addrstr, srv->port,
			    err == ETIMEDOUT ? "Connection timed out" :
			    strerror(err));
		at->connect_failed = true;
		log_info("%s", str_cstr(&at->reason));
		return NULL;
	}
	cl->stats.connected++;
	ss = sess_new(srv, fd);
	sess_tag(cl, ss);
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
	} else if (cl->creds.found && (ss->features & SMTP_F_AUTH) &&
	    !smtp_sasl_login(cl, ss, &r, at)) {
		/* With credentials and a server that offers AUTH we log in
		 * (one that does not offer it gets the mail without). */
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

/* ---- the shared cache ---- */

static bool shared_on(const smtp_client_t *cl)
{
	return cl->shared.save != NULL && cl->cfg.connection_cache &&
	    !cl->cfg.lmtp &&
	    cl->cfg.tls_level <= TLS_LEVEL_MAY;
}

void smtp_client_set_shared(smtp_client_t *cl, const smtp_shared_t *sh,
    const char *service)
{
	free(cl->service);
	cl->service = NULL;
	memset(&cl->shared, 0, sizeof(cl->shared));
	if (sh == NULL || sh->save == NULL || sh->find == NULL)
		return;
	cl->shared = *sh;
	cl->service = xstrdup(service != NULL && service[0] ? service : "smtp");
}

/* "SERVICE/ADDR:PORT", an IPv6 address in brackets, and the tag of the
 * credentials the session is for ("" for none, else "|sasl:USER"): a
 * session logged in as someone is found only by a request with the same
 * user. */
static void endpoint_label(const smtp_client_t *cl, const char *addr,
    unsigned port, const char *tag, str_t *out)
{
	if (strchr(addr, ':') != NULL)
		str_setf(out, "%s/[%s]:%u%s", cl->service, addr, port, tag);
	else
		str_setf(out, "%s/%s:%u%s", cl->service, addr, port, tag);
}

/* What is left of the session's idle time (the time it went idle plus
 * smtp_connection_cache_time_limit), cut so that it ends when the session
 * reaches smtp_connection_reuse_time_limit; 0 if nothing. */
static int64_t idle_left(const smtp_client_t *cl, const smtp_sess_t *ss,
    int64_t now)
{
	int64_t left = cl->cfg.cache_time_limit_ms - (now - ss->idle_ms);

	if (cl->cfg.reuse_time_limit_ms > 0) {
		int64_t age_left = cl->cfg.reuse_time_limit_ms - (now - ss->born_ms);
		if (age_left < left)
			left = age_left;
	}
	return left > 0 ? left : 0;
}

/* Has the session carried all it may?  smtp_connection_reuse_count_limit
 * counts reuses (so limit + 1 deliveries); qmgr's per-destination
 * messages_per_connection counts deliveries. */
static bool used_up(const smtp_client_t *cl, const smtp_sess_t *ss)
{
	return (cl->cfg.reuse_count_limit > 0 &&
	    ss->uses > cl->cfg.reuse_count_limit) ||
	    (cl->req_reuse_limit > 0 && ss->uses >= cl->req_reuse_limit);
}

/* Hands a session this process does not keep to the shared cache.  true
 * when it is gone from us (freed: the cache has it, or may have it), false
 * when it is still ours to close. */
static bool sess_handover(smtp_client_t *cl, smtp_sess_t *ss)
{
	int64_t ttl;
	str_t endp = STR_INIT;
	int r;

	if (!shared_on(cl) || ss->tls != NULL || ss->broken || ss->key == NULL ||
	    stream_error(ss->s) || stream_timedout(ss->s) || stream_eof(ss->s) ||
	    stream_pending(ss->s) > 0 || stream_unflushed(ss->s) > 0 ||
	    used_up(cl, ss))
		return false;
	if ((ttl = idle_left(cl, ss, event_now_ms())) <= 0)
		return false;
	str_setf(&cl->label, "%s/%s", cl->service, ss->key);
	endpoint_label(cl, ss->addr, ss->port, ss->tag != NULL ? ss->tag : "",
	    &endp);
	if (!scache_label_ok(str_cstr(&cl->label)) ||
	    !scache_label_ok(str_cstr(&endp))) {
		str_release(&endp);
		return false;
	}
	str_reset(&cl->props);
	attr_print(&cl->props, ATTR_STR("host", ss->host),
	    ATTR_STR("addr", ss->addr), ATTR_INT("port", ss->port),
	    ATTR_INT("features", ss->features),
	    ATTR_LONG("size_limit", ss->size_limit),
	    ATTR_LONG("born", ss->born_ms), ATTR_INT("uses", ss->uses),
	    ATTR_END);
	r = cl->shared.save(cl->shared.ctx, str_cstr(&cl->label),
	    str_cstr(&endp), ttl > INT_MAX ? INT_MAX : (int)ttl,
	    str_cstr(&cl->props), stream_fd(ss->s));
	str_release(&endp);
	if (r == SCACHE_UNSENT)
		return false;
	if (r == SCACHE_SAVED)
		cl->stats.shared_saved++;
	/* The connection lives on elsewhere: our copy goes, without QUIT. */
	sess_free(ss);
	return true;
}

/* A session this process does not keep: to the shared cache, or QUIT. */
static void sess_release(smtp_client_t *cl, smtp_sess_t *ss)
{
	if (!sess_handover(cl, ss))
		smtp_session_close(cl, ss);
}

static const attr_spec_t props_schema[] = {
	{ "host", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "addr", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "port", ATTR_TYPE_INT, ATTR_REQUIRED, NULL },
	{ "features", ATTR_TYPE_INT, ATTR_REQUIRED, NULL },
	{ "size_limit", ATTR_TYPE_LONG, ATTR_REQUIRED, NULL },
	{ "born", ATTR_TYPE_LONG, ATTR_REQUIRED, NULL },
	{ "uses", ATTR_TYPE_INT, ATTR_REQUIRED, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

static bool printable(const char *s, size_t max)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if (*s <= 0x20 || *s >= 0x7f || n >= max)
			return false;
	return n > 0;
}

/* A session from the shared cache: its descriptor and properties (from
 * another smtp process, through the cache: checked like any input).
 * want_endp, if not NULL, is the endpoint label asked for.  NULL with a
 * reason in why (fd then still the caller's). */
static smtp_sess_t *sess_from_shared(smtp_client_t *cl, int fd,
    const char *props, const char *want_endp, str_t *why)
{
	attr_reader_t *r = attr_reader_new(props_schema, ATTR_READ_STRICT,
	    &scache_limits);
	attr_msg_t *m = NULL;
	const char *host, *addr;
	int32_t port, features, uses;
	int64_t size_limit, born, now = event_now_ms();
	unsigned char bin[sizeof(struct in6_addr)];
	smtp_sess_t *ss = NULL;
	size_t used;

	if (attr_reader_feed(r, props, strlen(props), &used) != ATTR_DONE ||
	    used != strlen(props)) {
		str_setf(why, "properties: %s", attr_reader_error(r)[0] ?
		    attr_reader_error(r) : "incomplete or followed by more");
		goto out;
	}
	m = attr_reader_take(r);
	attr_get_str(m, "host", &host);
	attr_get_str(m, "addr", &addr);
	attr_get_int(m, "port", &port);
	attr_get_int(m, "features", &features);
	attr_get_long(m, "size_limit", &size_limit);
	attr_get_long(m, "born", &born);
	attr_get_int(m, "uses", &uses);
	if (!printable(host, 255) || (inet_pton(AF_INET, addr, bin) != 1 &&
	    inet_pton(AF_INET6, addr, bin) != 1) || port <= 0 ||
	    port > 65535 || features < 0 || size_limit < 0 || uses < 0 ||
	    born < 0) {
		str_set(why, "properties out of range");
		goto out;
	}
	if (want_endp != NULL) {
		str_t e = STR_INIT;
		bool same;
		endpoint_label(cl, addr, (unsigned)port, str_cstr(&cl->tag), &e);
		same = strcmp(str_cstr(&e), want_endp) == 0;
		str_release(&e);
		if (!same) {
			str_set(why, "the address is not the endpoint's");
			goto out;
		}
	}
	ss = xcalloc(1, sizeof(*ss));
	ss->s = stream_open(fd);
	ss->host = xstrdup(host);
	bcopy_str(ss->addr, sizeof(ss->addr), addr);
	ss->port = (unsigned)port;
	str_setf(&ss->namaddr, "%s[%s]", ss->host, ss->addr);
	str_setf(&ss->relay, "%s[%s]:%u", ss->host, ss->addr, ss->port);
	ss->features = (unsigned)features;
	ss->size_limit = (uint64_t)size_limit;
	ss->born_ms = born > now ? now : born;
	ss->uses = (unsigned)uses;
	ss->idle_ms = now;
	sess_tag(cl, ss);
out:
	if (m != NULL)
		attr_msg_free(m);
	attr_reader_free(r);
	return ss;
}

static bool server_spoke(smtp_sess_t *ss);

smtp_sess_t *smtp_shared_take(smtp_client_t *cl, const char *key,
    const dns_server_t *srv)
{
	smtp_sess_t *ss;
	str_t why = STR_INIT;
	int fd;

	if (!shared_on(cl))
		return NULL;
	if (srv == NULL)
		str_setf(&cl->label, "%s/%s", cl->service, key);
	else
		endpoint_label(cl, srv->addrstr, srv->port, str_cstr(&cl->tag),
		    &cl->label);
	if (!scache_label_ok(str_cstr(&cl->label)))
		return NULL;
	fd = cl->shared.find(cl->shared.ctx, srv != NULL, str_cstr(&cl->label),
	    &cl->props);
	if (fd < 0)
		return NULL;
	ss = sess_from_shared(cl, fd, str_cstr(&cl->props),
	    srv != NULL ? str_cstr(&cl->label) : NULL, &why);
	if (ss == NULL) {
		log_warning("connection cache: session for %s refused: %s",
		    str_cstr(&cl->label), str_cstr(&why));
		close(fd);
		str_release(&why);
		return NULL;
	}
	str_release(&why);
	cl->stats.shared_found++;
	/* The cache drops sessions whose server spoke or left, but that
	 * may have happened a moment ago. */
	if (server_spoke(ss)) {
		log_info("cached connection to %s no longer usable",
		    str_cstr(&ss->relay));
		ss->broken = true;
		smtp_session_close(cl, ss);
		return NULL;
	}
	if ((cl->cfg.reuse_time_limit_ms > 0 &&
	    event_now_ms() - ss->born_ms >= cl->cfg.reuse_time_limit_ms) ||
	    used_up(cl, ss)) {
		smtp_session_close(cl, ss);
		return NULL;
	}
	return ss;
}

/* ---- the cache of idle sessions ---- */

static void cache_remove(smtp_client_t *cl, smtp_sess_t *ss)
{
	list_remove(&ss->node);
	cl->ncache--;
}

void smtp_cache_handover(smtp_client_t *cl, const char *key)
{
	int64_t now = event_now_ms();
	list_node_t *n, *next;

	if (!shared_on(cl))
		return;
	for (n = list_first(&cl->cache); n != NULL; n = next) {
		smtp_sess_t *ss = list_entry(n, smtp_sess_t, node);
		next = list_next(&cl->cache, n);
		if (ss->tls != NULL || strcmp(ss->key, key) == 0)
			continue;
		cache_remove(cl, ss);
		if (now - ss->idle_ms > cl->cfg.cache_time_limit_ms)
			smtp_session_close(cl, ss);
		else
			sess_release(cl, ss);
	}
}

void smtp_cache_drain(smtp_client_t *cl)
{
	int64_t now = event_now_ms();
	list_node_t *n;

	while ((n = list_first(&cl->cache)) != NULL) {
		smtp_sess_t *ss = list_entry(n, smtp_sess_t, node);
		cache_remove(cl, ss);
		if (now - ss->idle_ms > cl->cfg.cache_time_limit_ms)
			smtp_session_close(cl, ss);
		else
			sess_release(cl, ss);
	}
}

void smtp_session_done(smtp_client_t *cl, smtp_sess_t *ss, const char *key)
{
	int64_t now = event_now_ms();
	list_node_t *n;

	if (ss->broken || !cl->cfg.connection_cache ||
	    stream_error(ss->s) || stream_timedout(ss->s) || stream_eof(ss->s) ||
	    (cl->cfg.reuse_time_limit_ms > 0 &&
	    now - ss->born_ms >= cl->cfg.reuse_time_limit_ms) ||
	    used_up(cl, ss)) {
		smtp_session_close(cl, ss);
		return;
	}
	free(ss->key);
	ss->key = xstrdup(key);
	ss->idle_ms = now;
	/* A plain-text session goes to the shared cache, where the next
	 * delivery finds it whichever process makes it; it stays here only
	 * when that cannot be (TLS, or the cache is not there). */
	if (sess_handover(cl, ss))
		return;
	/* One kept session per next hop: the newer one wins. */
	for (n = list_first(&cl->cache); n != NULL;
	    n = list_next(&cl->cache, n)) {
		smtp_sess_t *o = list_entry(n, smtp_sess_t, node);
		if (strcmp(o->key, key) == 0) {
			cache_remove(cl, o);
			sess_release(cl, o);
			break;
		}
	}
	if (cl->ncache >= SMTP_CACHE_MAX) {
		smtp_sess_t *o = list_entry(list_first(&cl->cache), smtp_sess_t,
		    node);
		cache_remove(cl, o);
		sess_release(cl, o);
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
		if (used_up(cl, ss)) {
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
