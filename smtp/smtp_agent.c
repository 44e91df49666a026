/* smtp(8) and lmtp(8): the SMTP and LMTP client delivery agents (one
 * agent, smtp_agent_main; smtp.c and lmtp.c choose the protocol).
 *
 * A delivery agent under master (dlv_agent_main, SERVER_SINGLE): qmgr
 * sends a request naming the queue file, the next hop and a batch of
 * recipients; the engine (libsmtp: smtp/smtp.h) delivers it, reading
 * the content from the queue file; the reply carries each recipient's
 * status and the flags qmgr's concurrency feedback and destination
 * status cache need.  Sessions are kept between requests (connection
 * reuse) and closed after smtp_connection_cache_time_limit by a timer
 * on the skeleton's event loop; plain-text sessions this process would
 * strand (when it exits, or works for another next hop) go to the scache
 * daemon, where every smtp process of the transport finds them.
 * doc/smtp.md and man/smtp.8 describe it; LMTP (no TLS, no SASL, no
 * shared cache, no loop detection): doc/lmtp.md and man/lmtp.8. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "delivery.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "qfile.h"
#include "queue_path.h"
#include "scache.h"
#include "server.h"
#include "smtp.h"

static struct {
	smtp_config_t cfg;
	tls_ctx_t *tls;
	str_t tls_error;
	smtp_client_t *cl;
	scache_clnt_t *sc;	/* the shared cache, or NULL */
	bool lmtp;		/* the lmtp agent */
	queue_layout_t ql;
	event_timer_t cache_timer;
	bool timer_ready;
} A;

/* Closes kept sessions that have been idle long enough, and the
 * connection to the shared cache when unused for ipc_idle; waits for the
 * next of these. */
static void cache_tick(void *ctx)
{
	int64_t next, now = event_now_ms();

	(void)ctx;
	if (A.cl == NULL)
		return;
	smtp_client_cache_expire(A.cl, now, false);
	next = smtp_client_cache_deadline(A.cl);
	if (A.sc != NULL) {
		int64_t d;
		scache_clnt_idle(A.sc, now);
		d = scache_clnt_deadline(A.sc);
		if (d >= 0 && (next < 0 || d < next))
			next = d;
	}
	if (next >= 0 && server_loop() != NULL) {
		int64_t wait = next - event_now_ms();
		event_timer_start(server_loop(), &A.cache_timer,
		    wait < 0 ? 0 : wait);
	}
}

static void pre_jail(void *ctx)
{
	str_t err = STR_INIT;

	(void)ctx;
	if ((A.lmtp ? smtp_config_load_lmtp(&A.cfg, &err) :
	    smtp_config_load(&A.cfg, &err)) < 0)
		log_fatal("%s", str_cstr(&err));
	if (!A.lmtp && smtp_own_addresses(&A.cfg, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	/* The queue tree is the current directory (and the root after a
	 * chroot). */
	if (queue_layout_here(&A.ql, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	/* Keys and CA files are read now, before the chroot and before
	 * privileges are dropped. */
	if (A.cfg.tls_level != TLS_LEVEL_NONE) {
		const char *proto = A.lmtp ? "lmtp" : "smtp";
		A.tls = tls_client_ctx_from_config(proto, server_jailed(), &err);
		if (A.tls == NULL) {
			str_setf(&A.tls_error, "TLS is required "
			    "(%s_tls_security_level = %s), but the TLS client "
			    "could not be set up: %s", proto,
			    tls_level_name(A.cfg.tls_level), str_cstr(&err));
			log_warning("TLS disabled: %s", str_cstr(&err));
		}
	}
	str_release(&err);
}

static int shared_save(void *ctx, const char *dest, const char *endpoint,
    int ttl_ms, const char *props, int fd)
{
	return scache_clnt_save(ctx, dest, endpoint, ttl_ms, props, fd);
}

static int shared_find(void *ctx, bool by_endpoint, const char *label,
    str_t *props)
{
	return scache_clnt_find(ctx, by_endpoint ? SCACHE_OP_FIND_ENDP :
	    SCACHE_OP_FIND_DEST, label, props);
}

static int ms_of(const char *name)
{
	long s = pconfig_get_time(name);

	return s > INT_MAX / 1000 ? INT_MAX : (int)(s * 1000);
}

static void post_jail(void *ctx)
{
	const char *name = pconfig_get_str("scache_service_name");

	(void)ctx;
	/* In the jail: the files name lookups will need there. */
	if (strstr(pconfig_get_str("smtp_host_lookup"), "dns") != NULL &&
	    pconfig_get_str("dns_server_address")[0] == '\0')
		(void)server_jail_has("/etc/resolv.conf", "DNS lookups "
		    "(smtp_host_lookup)");
	if (strstr(pconfig_get_str("smtp_host_lookup"), "native") != NULL)
		(void)server_jail_has("/etc/hosts", "host name lookups "
		    "(smtp_host_lookup = native)");
	A.cl = smtp_client_new(&A.cfg, A.tls);
	if (str_len(&A.tls_error) > 0)
		smtp_client_set_tls_error(A.cl, str_cstr(&A.tls_error));
	/* Nothing to share when nothing is kept or every session is TLS;
	 * an empty service name turns sharing off. */
	if (!A.lmtp && A.cfg.connection_cache &&
	    A.cfg.tls_level <= TLS_LEVEL_MAY && name[0] != '\0') {
		str_t path = STR_INIT;
		smtp_shared_t sh;
		str_setf(&path, "private/%s", name);
		A.sc = scache_clnt_new(str_cstr(&path),
		    ms_of("connection_cache_protocol_timeout"), ms_of("ipc_idle"));
		str_release(&path);
		sh.save = shared_save;
		sh.find = shared_find;
		sh.ctx = A.sc;
		smtp_client_set_shared(A.cl, &sh, server_service_name());
	}
	event_timer_init(&A.cache_timer, cache_tick, NULL);
	A.timer_ready = true;
}

static void pre_exit(void *ctx)
{
	(void)ctx;
	if (A.timer_ready)
		event_timer_cancel(&A.cache_timer);
	/* Kept plain-text sessions go to the shared cache: the next process
	 * goes on with them.  QUIT to the rest. */
	smtp_client_free(A.cl);
	A.cl = NULL;
	scache_clnt_free(A.sc);
	A.sc = NULL;
	smtp_config_release(&A.cfg);
	if (A.tls != NULL)
		tls_ctx_free(A.tls);
	queue_layout_free(&A.ql);
	str_release(&A.tls_error);
}

static void deliver(const dlv_request_t *req, dlv_reply_t *rep, void *ctx)
{
	smtp_request_t sr;
	smtp_rcpt_t *rc;
	qfile_t *qf;
	qf_err_t qe;

	(void)ctx;
	qf = qfile_open(&A.ql, req->queue, req->queue_id, 0, &qe);
	if (qf == NULL) {
		log_warning("%s: cannot open the queue file: %s", req->queue_id,
		    qe.reason);
		dlv_status_set_all(rep, true, DLV_ACT_DELAYED, "4.3.0", "none",
		    "cannot open the queue file: %s", qe.reason);
		return;
	}
	rc = xcalloc(req->nrcpt, sizeof(*rc));
	for (size_t i = 0; i < req->nrcpt; i++)
		rc[i].in = req->rcpt[i];
	smtp_request_init(&sr, rc, req->nrcpt);
	sr.queue_id = req->queue_id;
	sr.nexthop = req->nexthop;
	sr.sender = req->sender;
	sr.envid = req->envid[0] ? req->envid : NULL;
	sr.ret = req->ret;
	sr.reuse_limit = (unsigned)req->reuse_limit;
	sr.smtputf8 = (req->flags & DLV_F_SMTPUTF8) != 0;
	sr.body = (req->flags & DLV_F_8BITMIME) ? SMTP_BODY_8BITMIME :
	    SMTP_BODY_UNKNOWN;
	sr.size = qfile_content_size(qf);
	smtp_content_qfile(&sr.content, qf);

	smtp_deliver(A.cl, &sr);

	for (size_t i = 0; i < req->nrcpt; i++) {
		const smtp_rcpt_t *r = &rc[i];
		dlv_status_set(rep, i, r->action, r->dsn,
		    str_len(&r->relay) ? str_cstr(&r->relay) : "none", "%s",
		    str_cstr(&r->diag));
		if (str_len(&r->remote_reply) > 0)
			dlv_status_diag(rep, i, "smtp", str_cstr(&r->remote_reply),
			    str_cstr(&r->remote_mta));
		if (r->dsn_passed && r->action == DLV_ACT_DELIVERED)
			rep->st[i].notified = true;
	}
	if (sr.conn_failed || sr.avoid_destination)
		dlv_reply_set_flags(rep, (sr.conn_failed ? DLV_R_CONN_FAIL : 0) |
		    (sr.avoid_destination ? DLV_R_AVOID : 0), "%s",
		    str_cstr(&sr.reason));
	rep->conn_us = (int64_t)(sr.delay_conn * 1e6);
	rep->xfer_us = (int64_t)(sr.delay_xfer * 1e6);
	smtp_request_release(&sr);
	free(rc);
	qfile_close(qf);
	/* Kept sessions get closed in time once we are idle again. */
	cache_tick(NULL);
}

/* petrel check: what pre_jail would refuse. */
static int check(void *ctx, str_t *err)
{
	smtp_config_t cfg;
	int rc;

	(void)ctx;
	if ((A.lmtp ? smtp_config_load_lmtp(&cfg, err) :
	    smtp_config_load(&cfg, err)) < 0)
		return -1;
	rc = A.lmtp ? 0 : smtp_own_addresses(&cfg, err);
	smtp_config_release(&cfg);
	return rc < 0 ? -1 : 0;
}

void smtp_agent_main(int argc, char **argv, bool lmtp)
{
	dlv_agent_t agent;

	A.lmtp = lmtp;
	memset(&agent, 0, sizeof(agent));
	agent.deliver = deliver;
	agent.pre_jail = pre_jail;
	agent.post_jail = post_jail;
	agent.pre_exit = pre_exit;
	agent.check = check;
	dlv_agent_main(argc, argv, &agent);
}
