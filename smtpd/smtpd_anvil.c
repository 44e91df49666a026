/* Client connection count and rate limits, counted by anvil(8) for all
 * smtpd processes (doc/smtpd.md, "Client limits").
 *
 * Round trips: a session that is not exempt asks anvil once when it
 * begins (connect: count and rate) and tells it once when it ends
 * (disconnect, no reply waited for); MAIL, RCPT, STARTTLS and AUTH ask
 * only when their own limit is on.  With every limit off no anvil client
 * exists at all.  When anvil cannot be asked, no limit is applied: mail
 * is never refused because anvil is down. */
#include <stdlib.h>
#include <string.h>
#include "anvil.h"
#include "log.h"
#include "mem.h"
#include "smtpd.h"

struct smtpd_anvil {
	const smtpd_cfg_t *cfg;
	anvil_clnt_t *clnt;
	char *service;
	/* The session being served (one at a time per process). */
	bool active;		/* not exempt: events are counted */
	bool connected;		/* anvil knows the connection */
	char ident[ANVIL_IDENT_MAX + 1];
	char addr[SOCK_ADDR_STRLEN];
	char namaddr[DNS_NAME_TEXTLEN + SOCK_ADDR_STRLEN + 16];
};

smtpd_anvil_t *smtpd_anvil_new(const smtpd_cfg_t *cfg, const char *path,
    const char *service)
{
	smtpd_anvil_t *a;

	if (cfg->conn_limit <= 0 && cfg->conn_rate_limit <= 0 &&
	    cfg->mail_rate_limit <= 0 && cfg->rcpt_rate_limit <= 0 &&
	    cfg->newtls_rate_limit <= 0 && cfg->auth_rate_limit <= 0)
		return NULL;
	a = xcalloc(1, sizeof(*a));
	a->cfg = cfg;
	a->clnt = anvil_clnt_new(path, ANVIL_TIMEOUT_MS);
	a->service = xstrdup(service && *service ? service : "smtp");
	return a;
}

void smtpd_anvil_free(smtpd_anvil_t *a)
{
	if (a == NULL)
		return;
	anvil_clnt_free(a->clnt);
	free(a->service);
	free(a);
}

bool smtpd_anvil_connect(smtpd_anvil_t *a, const smtpd_peer_t *peer,
    const char *namaddr, smtpd_reply_t *reply)
{
	const smtpd_cfg_t *cfg;
	str_t err = STR_INIT;
	int count, rate, rc;

	if (a == NULL)
		return false;
	cfg = a->cfg;
	a->active = a->connected = false;
	if (peer->stand_alone || *peer->addr == '\0')
		return false;
	rc = smtpd_netlist_match(cfg->limit_exceptions, peer->addr, &err);
	if (rc < 0)
		log_warning("smtpd_client_event_limit_exceptions: %s; %s is "
		    "limited", str_cstr(&err), namaddr);
	str_release(&err);
	if (rc > 0)
		return false;
	bfmt(a->ident, sizeof(a->ident), "%s:%s", a->service, peer->addr);
	if (!anvil_ident_ok(a->ident))
		return false;	/* a service name with a space: no limits */
	bfmt(a->addr, sizeof(a->addr), "%s", peer->addr);
	bfmt(a->namaddr, sizeof(a->namaddr), "%s", namaddr);
	a->active = true;
	if (anvil_clnt_connect(a->clnt, a->ident, &count, &rate) < 0)
		return false;
	a->connected = true;
	if (cfg->conn_limit > 0 && count > cfg->conn_limit) {
		log_warning("Connection concurrency limit exceeded: %d from %s "
		    "for service %s", count, namaddr, a->service);
	} else if (cfg->conn_rate_limit > 0 && rate > cfg->conn_rate_limit) {
		log_warning("Connection rate limit exceeded: %d from %s for "
		    "service %s", rate, namaddr, a->service);
	} else {
		return false;
	}
	reply->code = 421;
	bfmt(reply->dsn, sizeof(reply->dsn), "4.7.0");
	str_setf(&reply->text, "%s Error: too many connections from %s",
	    cfg->myhostname, peer->addr);
	return true;
}

void smtpd_anvil_disconnect(smtpd_anvil_t *a)
{
	if (a == NULL)
		return;
	if (a->connected)
		anvil_clnt_disconnect(a->clnt, a->ident);
	a->active = a->connected = false;
}

/* One event when its limit is on: true when the client is over it. */
static bool over(smtpd_anvil_t *a, anvil_op_t op, long limit, int *rate)
{
	if (a == NULL || !a->active || limit <= 0)
		return false;
	if (anvil_clnt_event(a->clnt, op, a->ident, rate) < 0)
		return false;
	return *rate > limit;
}

static void set_reply(smtpd_reply_t *reply, int code, const char *dsn,
    const char *what, const char *who)
{
	reply->code = code;
	bfmt(reply->dsn, sizeof(reply->dsn), "%s", dsn);
	str_setf(&reply->text, "Error: %s from %s", what, who);
}

bool smtpd_anvil_mail(smtpd_anvil_t *a, smtpd_reply_t *reply)
{
	int rate;

	if (!over(a, ANVIL_OP_MESSAGE, a ? a->cfg->mail_rate_limit : 0, &rate))
		return false;
	log_warning("Message delivery request rate limit exceeded: %d from %s "
	    "for service %s", rate, a->namaddr, a->service);
	set_reply(reply, 450, "4.7.1", "too much mail", a->addr);
	return true;
}

bool smtpd_anvil_rcpt(smtpd_anvil_t *a, smtpd_reply_t *reply)
{
	int rate;

	if (!over(a, ANVIL_OP_RECIPIENT, a ? a->cfg->rcpt_rate_limit : 0,
	    &rate))
		return false;
	log_warning("Recipient address rate limit exceeded: %d from %s for "
	    "service %s", rate, a->namaddr, a->service);
	set_reply(reply, 450, "4.7.1", "too many recipients", a->addr);
	return true;
}

bool smtpd_anvil_starttls(smtpd_anvil_t *a, smtpd_reply_t *reply)
{
	int rate;

	if (!over(a, ANVIL_OP_NEWTLS_REPORT, a ? a->cfg->newtls_rate_limit : 0,
	    &rate))
		return false;
	log_warning("Refusing STARTTLS request from %s for service %s",
	    a->namaddr, a->service);
	set_reply(reply, 454, "4.7.0", "too many new TLS sessions",
	    a->namaddr);
	return true;
}

bool smtpd_anvil_newtls(smtpd_anvil_t *a, smtpd_reply_t *reply)
{
	int rate;

	if (!over(a, ANVIL_OP_NEWTLS, a ? a->cfg->newtls_rate_limit : 0, &rate))
		return false;
	log_warning("New TLS session rate limit exceeded: %d from %s for "
	    "service %s", rate, a->namaddr, a->service);
	reply->code = 421;
	bfmt(reply->dsn, sizeof(reply->dsn), "4.7.0");
	str_setf(&reply->text, "%s Error: too many new TLS sessions from %s",
	    a->cfg->myhostname, a->namaddr);
	return true;
}

bool smtpd_anvil_auth(smtpd_anvil_t *a, smtpd_reply_t *reply)
{
	int rate;

	if (!over(a, ANVIL_OP_AUTH, a ? a->cfg->auth_rate_limit : 0, &rate))
		return false;
	log_warning("AUTH command rate limit exceeded: %d from %s for service "
	    "%s", rate, a->namaddr, a->service);
	set_reply(reply, 450, "4.7.1", "too many AUTH commands", a->addr);
	return true;
}
