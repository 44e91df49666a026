/* One delivery request, start to end: a kept session for the next hop if
 * there is one, else the servers from DNS tried in order (a connection
 * failure or a failed handshake moves on to the next address; sessions
 * that got through the handshake count against smtp_mx_session_limit),
 * recipients left over after a soft failure offered to the next server,
 * the rest deferred with their last reason; then the classification qmgr
 * needs and the log lines. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include "addr.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "smtp_int.h"

void smtp_rcpt_result(smtp_rcpt_t *r, enum smtp_rstat st, const char *dsn,
    const char *relay, const char *fmt, ...)
{
	va_list ap;

	r->status = st;
	bcopy_str(r->dsn, sizeof(r->dsn), dsn);
	str_set(&r->relay, relay);
	str_reset(&r->diag);
	va_start(ap, fmt);
	str_vcatf(&r->diag, fmt, ap);
	va_end(ap);
	r->dsn_passed = false;
	str_reset(&r->remote_reply);
	str_reset(&r->remote_mta);
	switch (st) {
	case SMTP_R_SENT: r->action = DLV_ACT_DELIVERED; break;
	case SMTP_R_DEFER: r->action = DLV_ACT_DELAYED; break;
	case SMTP_R_BOUNCE: r->action = DLV_ACT_FAILED; break;
	default: r->action = DLV_ACT_NONE; break;
	}
}

void smtp_rcpt_soft(smtp_rcpt_t *r, const char *dsn, const char *relay,
    const char *fmt, ...)
{
	va_list ap;

	bcopy_str(r->dsn, sizeof(r->dsn), dsn);
	if (r->dsn[0] != '4')		/* a soft failure is a 4.x.x */
		r->dsn[0] = '4';
	str_set(&r->relay, relay);
	str_reset(&r->diag);
	str_reset(&r->remote_reply);
	str_reset(&r->remote_mta);
	va_start(ap, fmt);
	str_vcatf(&r->diag, fmt, ap);
	va_end(ap);
}

void smtp_rcpt_remote(smtp_rcpt_t *r, const char *mta, const char *reply)
{
	str_set(&r->remote_mta, mta);
	str_set(&r->remote_reply, reply);
}

void smtp_request_init(smtp_request_t *req, smtp_rcpt_t *rcpt, size_t n)
{
	memset(req, 0, sizeof(*req));
	req->rcpt = rcpt;
	req->nrcpt = n;
	req->sender = "";
	req->queue_id = "NOQUEUE";
	for (size_t i = 0; i < n; i++) {
		rcpt[i].status = SMTP_R_PENDING;
		rcpt[i].dsn[0] = '\0';
		rcpt[i].action = DLV_ACT_NONE;
		rcpt[i].dsn_passed = false;
		memset(&rcpt[i].diag, 0, sizeof(rcpt[i].diag));
		memset(&rcpt[i].relay, 0, sizeof(rcpt[i].relay));
		memset(&rcpt[i].remote_reply, 0, sizeof(rcpt[i].remote_reply));
		memset(&rcpt[i].remote_mta, 0, sizeof(rcpt[i].remote_mta));
		rcpt[i].tstate = 0;
		rcpt[i].again = false;
	}
}

void smtp_request_release(smtp_request_t *req)
{
	for (size_t i = 0; i < req->nrcpt; i++) {
		str_release(&req->rcpt[i].diag);
		str_release(&req->rcpt[i].relay);
		str_release(&req->rcpt[i].remote_reply);
		str_release(&req->rcpt[i].remote_mta);
	}
	str_release(&req->reason);
}

static size_t pending(const smtp_request_t *req)
{
	size_t n = 0;

	for (size_t i = 0; i < req->nrcpt; i++)
		if (req->rcpt[i].status == SMTP_R_PENDING)
			n++;
	return n;
}

/* Every pending recipient: deferred with its own soft reason if it has
 * one, else with the request-wide failure (at: the last attempt). */
static void finish_pending(smtp_request_t *req, const char *dsn, bool hard,
    const char *relay, const char *reason, const smtp_attempt_t *at)
{
	for (size_t i = 0; i < req->nrcpt; i++) {
		smtp_rcpt_t *r = &req->rcpt[i];
		if (r->status != SMTP_R_PENDING)
			continue;
		if (smtp_rcpt_tried(r)) {
			r->status = SMTP_R_DEFER;
			r->action = DLV_ACT_DELAYED;
			continue;
		}
		smtp_rcpt_result(r, hard ? SMTP_R_BOUNCE : SMTP_R_DEFER, dsn,
		    relay, "%s", reason);
		if (at != NULL && str_len(&at->remote_reply) > 0)
			smtp_rcpt_remote(r, str_cstr(&at->remote_mta),
			    str_cstr(&at->remote_reply));
	}
}

/* Monotonic seconds, microsecond resolution, for the delays. */
static double mono_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs the request over one session; false when the session proved
 * stale (nothing happened). */
static bool use_session(smtp_client_t *cl, smtp_sess_t *ss,
    smtp_request_t *req, bool reused)
{
	double t0 = mono_sec();
	int rc = smtp_session_deliver(cl, ss, req, reused);

	req->delay_xfer += mono_sec() - t0;
	if (rc == SMTP_TRANS_STALE) {
		log_info("%s: kept connection to %s no longer usable; "
		    "connecting again", req->queue_id, str_cstr(&ss->relay));
		smtp_session_close(cl, ss);
		return false;
	}
	smtp_session_done(cl, ss, str_cstr(&cl->key));
	return true;
}

/* An LMTP next hop: "unix:PATH" (relative to the queue directory, the
 * current one, or absolute) sets *unix_path into spec; "inet:HOST:PORT",
 * "HOST:PORT", "[HOST]:PORT" (the inet: is optional, the port defaults
 * to 24) fills nh.  There is never an MX lookup (RFC 2033: LMTP is not
 * for the Internet), as if the host were in brackets.  0, or -1 with a
 * reason. */
static int lmtp_nexthop(const char *spec, unsigned port, dns_nexthop_t *nh,
    const char **unix_path, str_t *why)
{
	struct sockaddr_un sun;
	socklen_t len;

	*unix_path = NULL;
	if (strncmp(spec, "unix:", 5) == 0) {
		if (sock_unix_addr(spec + 5, &sun, &len) < 0) {
			str_set(why, spec[5] == '\0' ? "empty socket path" :
			    "socket path too long");
			return -1;
		}
		*unix_path = spec + 5;
		return 0;
	}
	if (strncmp(spec, "inet:", 5) == 0)
		spec += 5;
	if (dns_nexthop_parse(spec, port, nh, why) < 0) {
		/* HOST:PORT with an IPv4 address and no brackets. */
		const char *colon = strrchr(spec, ':');
		size_t hl = colon != NULL ? (size_t)(colon - spec) : strlen(spec);
		char buf[DNS_NAME_TEXTLEN + 16];

		if (spec[0] == '[' || hl == 0 || hl >= DNS_NAME_TEXTLEN)
			return -1;
		bfmt(buf, sizeof(buf), "[%.*s]%s", (int)hl, spec,
		    colon != NULL ? colon : "");
		str_reset(why);
		if (dns_nexthop_parse(buf, port, nh, why) < 0)
			return -1;
	}
	nh->bracketed = true;
	return 0;
}

void smtp_deliver(smtp_client_t *cl, smtp_request_t *req)
{
	dns_nexthop_t nh;
	dns_servers_t servers = DNS_SERVERS_INIT;
	smtp_attempt_t at;
	str_t why = STR_INIT;
	size_t sessions = 0, attempts = 0, connect_failures = 0;
	size_t auth_refusals = 0;
	bool handshake_ok = false;
	smtp_sess_t *ss;
	char used_addr[SOCK_ADDR_STRLEN] = "";
	unsigned used_port = 0;
	bool reused_ok = false;
	const char *unix_path = NULL;

	memset(&at, 0, sizeof(at));
	memset(&nh, 0, sizeof(nh));
	cl->req_reuse_limit = req->reuse_limit;
	req->conn_failed = req->avoid_destination = false;
	req->delay_conn = req->delay_xfer = 0;
	str_reset(&req->reason);
	for (size_t i = 0; i < req->nrcpt; i++) {
		smtp_rcpt_t *r = &req->rcpt[i];
		r->status = SMTP_R_PENDING;
		r->action = DLV_ACT_NONE;
		r->dsn[0] = '\0';
		r->dsn_passed = false;
		r->again = false;
		str_reset(&r->diag);
		str_reset(&r->relay);
	}
	if (req->nrcpt == 0)
		goto done;
	if (cl->cfg.tls_level > TLS_LEVEL_MAY && cl->tls == NULL) {
		finish_pending(req, "4.7.5", false, "none",
		    str_len(&cl->tls_error) > 0 ? str_cstr(&cl->tls_error) :
		    "TLS is required, but no TLS client context is available",
		    NULL);
		goto done;
	}
	if (cl->cfg.lmtp ? lmtp_nexthop(req->nexthop, cl->cfg.default_port,
	    &nh, &unix_path, &why) < 0 :
	    dns_nexthop_parse(req->nexthop, cl->cfg.default_port, &nh,
	    &why) < 0) {
		/* A domain from an address bounces; a bracket or a port is
		 * configuration (relayhost, transport maps): defer.  An LMTP
		 * next hop is always configuration. */
		bool conf = cl->cfg.lmtp || strpbrk(req->nexthop, "[]:") != NULL;
		str_t r = STR_INIT;
		str_setf(&r, "bad next hop \"%s\": %s%s", req->nexthop,
		    str_cstr(&why), conf ? " (configuration error)" : "");
		finish_pending(req, conf ? "4.3.5" : "5.1.2", !conf, "none",
		    str_cstr(&r), NULL);
		str_release(&r);
		goto done;
	}

	/* The credentials (smtp_sasl_password_maps) are part of the key of
	 * kept sessions, so they are known before any is taken. */
	if (cl->cfg.sasl.enable) {
		int rc = smtp_sasl_prepare(cl, req->sender, req->nexthop, &why);
		if (rc < 0) {
			log_warning("%s: %s", req->queue_id, str_cstr(&why));
			finish_pending(req, rc == -1 ? "4.3.0" : "4.3.5", false,
			    "none", str_cstr(&why), NULL);
			goto done;
		}
	} else {
		str_set(&cl->key, req->nexthop);
	}

	/* Sessions kept for other next hops would wait here unused while
	 * this process works for this one: other processes may have them. */
	smtp_cache_handover(cl, str_cstr(&cl->key));
	/* A kept session first, ours or another process's: no DNS, no
	 * handshake. */
	if ((ss = smtp_cache_take(cl, str_cstr(&cl->key))) != NULL ||
	    (ss = smtp_shared_take(cl, str_cstr(&cl->key), NULL)) != NULL) {
		bcopy_str(used_addr, sizeof(used_addr), ss->addr);
		used_port = ss->port;
		if (use_session(cl, ss, req, true)) {
			reused_ok = true;
			cl->stats.reused++;
			handshake_ok = true;
			sessions++;
		}
		if (pending(req) == 0)
			goto done;
	}

	if (unix_path != NULL) {
		/* One server: the socket (its path as its host name). */
		servers.v = xcalloc(1, sizeof(*servers.v));
		servers.n = 1;
		servers.v[0].hostname = xstrdup(unix_path);
		servers.v[0].addr.ss_family = AF_UNIX;
		servers.v[0].pref = DNS_PREF_NONE;
	} else {
		double t0 = mono_sec();
		enum dns_result dr = dns_find_servers(&nh, &cl->cfg.dns, &servers);
		req->delay_conn += mono_sec() - t0;
		if (dr != DNS_RESULT_OK) {
			finish_pending(req, servers.dsn, dr == DNS_RESULT_BOUNCE,
			    "none", str_cstr(&servers.reason), NULL);
			if (dr == DNS_RESULT_DEFER && !handshake_ok) {
				/* Nobody can be reached for now: a site
				 * failure, as Postfix has it. */
				req->conn_failed = true;
				req->avoid_destination = true;
				str_set(&req->reason, str_cstr(&servers.reason));
			}
			goto done;
		}
	}

	for (size_t k = 0; k < servers.n && pending(req) > 0; k++) {
		bool use_tls = true;

		if (cl->cfg.mx_session_limit > 0 &&
		    sessions >= cl->cfg.mx_session_limit)
			break;
		/* The kept session's server already had its say. */
		if (reused_ok && used_port == servers.v[k].port &&
		    strcmp(used_addr, servers.v[k].addrstr) == 0)
			continue;
		/* A session with this server that another next hop (or
		 * another process) left in the shared cache. */
		if ((ss = smtp_shared_take(cl, str_cstr(&cl->key),
		    &servers.v[k])) != NULL &&
		    use_session(cl, ss, req, true)) {
			cl->stats.reused++;
			handshake_ok = true;
			sessions++;
			continue;
		}
		for (int round = 0; round < 2; round++) {
			double t0 = mono_sec();
			attempts++;
			ss = smtp_session_open(cl, &servers.v[k], &nh, use_tls, &at);
			req->delay_conn += mono_sec() - t0;
			if (ss != NULL)
				break;
			if (at.connect_failed)
				connect_failures++;
			if (at.auth_refused)
				auth_refusals++;
			if (!at.tls_retry)
				break;
			/* may: a failed TLS handshake, once more in clear. */
			log_info("%s: trying %s[%s]:%u again without TLS",
			    req->queue_id, servers.v[k].hostname,
			    servers.v[k].addrstr, servers.v[k].port);
			use_tls = false;
		}
		if (ss == NULL)
			continue;
		handshake_ok = true;
		sessions++;
		(void)use_session(cl, ss, req, false);
	}
	if (pending(req) > 0) {
		if (attempts == 0 && str_len(&at.reason) == 0)
			str_setf(&at.reason, "no server of %s could be tried",
			    req->nexthop);
		finish_pending(req, at.dsn[0] ? at.dsn : "4.4.1", at.hard,
		    str_len(&at.relay) ? str_cstr(&at.relay) : "none",
		    str_cstr(&at.reason), &at);
	}
	/* A server that answered our AUTH with a refusal talked to us: as
	 * with a refused MAIL, that is no reason to lower the destination's
	 * concurrency (doc/smtp.md "What qmgr learns"). */
	if (!handshake_ok && attempts > 0 && auth_refusals == 0) {
		req->conn_failed = true;
		req->avoid_destination = connect_failures == attempts;
		str_set(&req->reason, str_cstr(&at.reason));
	}
done:
	smtp_sasl_forget(cl);
	dns_servers_free(&servers);
	str_release(&at.reason);
	str_release(&at.relay);
	str_release(&at.remote_reply);
	str_release(&at.remote_mta);
	str_release(&why);
}

/* ---- configuration and the client ---- */

void smtp_config_defaults(smtp_config_t *c)
{
	memset(c, 0, sizeof(*c));
	c->connect_timeout_ms = 30000;
	c->helo_timeout_ms = 300000;
	c->starttls_timeout_ms = 300000;
	c->mail_timeout_ms = 300000;
	c->rcpt_timeout_ms = 300000;
	c->data_init_timeout_ms = 120000;
	c->data_xfer_timeout_ms = 180000;
	c->data_done_timeout_ms = 600000;
	c->rset_timeout_ms = 20000;
	c->quit_timeout_ms = 300000;
	bcopy_str(c->helo_name, sizeof(c->helo_name), "localhost");
	c->default_port = 25;
	c->mx_session_limit = 2;
	c->line_length_limit = 998;
	c->skip_5xx_greeting = true;
	c->always_send_ehlo = true;
	c->tls_level = TLS_LEVEL_NONE;
	c->connection_cache = true;
	c->cache_time_limit_ms = 2000;
	c->reuse_time_limit_ms = 300000;
	c->reuse_count_limit = 0;
	c->dns.lookup = DNS_LOOKUP_NATIVE;
	c->dns.families = DNS_INET4 | DNS_INET6;
	c->dns.prefer = DNS_PREFER_ANY;
	c->dns.address_limit = 5;
	bcopy_str(c->sasl.proto, sizeof(c->sasl.proto), "smtp");
	c->sasl.soft_bounce = true;
	c->sasl.opts = c->sasl.tls_opts = SASL_OPT_NOPLAINTEXT |
	    SASL_OPT_NOANONYMOUS;
}

smtp_client_t *smtp_client_new(const smtp_config_t *cfg, tls_ctx_t *tls)
{
	smtp_client_t *cl = xcalloc(1, sizeof(*cl));

	cl->cfg = *cfg;
	cl->tls = tls;
	list_init(&cl->cache);
	return cl;
}

void smtp_client_set_tls_error(smtp_client_t *cl, const char *why)
{
	str_set(&cl->tls_error, why);
}

void smtp_client_free(smtp_client_t *cl)
{
	if (cl == NULL)
		return;
	smtp_cache_drain(cl);
	str_release(&cl->tls_error);
	str_release(&cl->tag);
	str_release(&cl->key);
	str_release(&cl->memo_tag);
	explicit_bzero(&cl->memo, sizeof(cl->memo));
	str_release(&cl->label);
	str_release(&cl->props);
	free(cl->service);
	free(cl);
}

const smtp_stats_t *smtp_client_stats(const smtp_client_t *cl)
{
	return &cl->stats;
}
