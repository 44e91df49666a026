/* Access restrictions: smtpd_{client,helo,sender,relay,recipient,data,
 * end_of_data}_restrictions.
 *
 * A list is parsed once at start-up into items (the tables of its
 * check_*_access items opened then, as entries of one maps_t, maps.h);
 * evaluation walks the items in order and stops at the first that
 * permits or rejects.  A new kind of restriction is one enum value, one
 * table row and one case in eval_item(). */
#include <ctype.h>
#include <netinet/in.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "log.h"
#include "mem.h"
#include "smtpd.h"

enum rkind {
	R_PERMIT, R_REJECT, R_DEFER,
	R_PERMIT_MYNETWORKS,
	R_PERMIT_SASL,
	R_REJECT_UNAUTH_DEST, R_DEFER_UNAUTH_DEST, R_PERMIT_AUTH_DEST,
	R_REJECT_UNKNOWN_RCPT_DOMAIN, R_REJECT_UNKNOWN_SENDER_DOMAIN,
	R_REJECT_NON_FQDN_RCPT, R_REJECT_NON_FQDN_SENDER,
	R_REJECT_NON_FQDN_HELO, R_REJECT_INVALID_HELO,
	R_REJECT_UNLISTED_RCPT,
	R_REJECT_SENDER_LOGIN_MISMATCH, R_REJECT_AUTH_SENDER_LOGIN_MISMATCH,
	R_REJECT_UNAUTH_SENDER_LOGIN_MISMATCH,
	R_CHECK_CLIENT, R_CHECK_HELO, R_CHECK_SENDER, R_CHECK_RCPT,
};

static const struct {
	const char *name;
	enum rkind kind;
	bool table;		/* takes a type:table argument */
} rnames[] = {
	{ "permit", R_PERMIT, false },
	{ "reject", R_REJECT, false },
	{ "defer", R_DEFER, false },
	{ "permit_mynetworks", R_PERMIT_MYNETWORKS, false },
	{ "permit_sasl_authenticated", R_PERMIT_SASL, false },
	{ "reject_unauth_destination", R_REJECT_UNAUTH_DEST, false },
	{ "defer_unauth_destination", R_DEFER_UNAUTH_DEST, false },
	{ "permit_auth_destination", R_PERMIT_AUTH_DEST, false },
	{ "reject_unknown_recipient_domain", R_REJECT_UNKNOWN_RCPT_DOMAIN, false },
	{ "reject_unknown_sender_domain", R_REJECT_UNKNOWN_SENDER_DOMAIN, false },
	{ "reject_non_fqdn_recipient", R_REJECT_NON_FQDN_RCPT, false },
	{ "reject_non_fqdn_sender", R_REJECT_NON_FQDN_SENDER, false },
	{ "reject_non_fqdn_helo_hostname", R_REJECT_NON_FQDN_HELO, false },
	{ "reject_invalid_helo_hostname", R_REJECT_INVALID_HELO, false },
	{ "reject_unlisted_recipient", R_REJECT_UNLISTED_RCPT, false },
	{ "reject_sender_login_mismatch", R_REJECT_SENDER_LOGIN_MISMATCH, false },
	{ "reject_authenticated_sender_login_mismatch",
	    R_REJECT_AUTH_SENDER_LOGIN_MISMATCH, false },
	{ "reject_unauthenticated_sender_login_mismatch",
	    R_REJECT_UNAUTH_SENDER_LOGIN_MISMATCH, false },
	{ "check_client_access", R_CHECK_CLIENT, true },
	{ "check_helo_access", R_CHECK_HELO, true },
	{ "check_sender_access", R_CHECK_SENDER, true },
	{ "check_recipient_access", R_CHECK_RCPT, true },
};

typedef struct ritem {
	enum rkind kind;
	const char *name;	/* static, from rnames */
	size_t table;		/* check_*_access: its entry in r->tables */
} ritem_t;

/* Which list: decides the wording of a generic reject. */
enum rclass { RC_CLIENT, RC_HELO, RC_SENDER, RC_RCPT, RC_DATA, RC_EOD };

struct smtpd_restr {
	ritem_t *v;
	size_t n;
	char *param;
	enum rclass cls;
	/* The tables of check_*_access, opened when the list is parsed; one
	 * that does not open is kept as broken (maps.h). */
	maps_t *tables;
};

smtpd_restr_t *smtpd_restr_parse(const char *param, const char *value,
    str_t *err, str_t *err_warn)
{
	smtpd_restr_t *r = xcalloc(1, sizeof(*r));
	char *copy = xstrdup(value ? value : ""), *cp = copy, *tok;
	size_t cap = 0;

	r->param = xstrdup(param);
	r->tables = maps_open(param, NULL, 0, NULL, NULL);
	if (strstr(param, "helo"))
		r->cls = RC_HELO;
	else if (strstr(param, "sender"))
		r->cls = RC_SENDER;
	else if (strstr(param, "relay") || strstr(param, "recipient"))
		r->cls = RC_RCPT;
	else if (strstr(param, "end_of_data"))
		r->cls = RC_EOD;
	else if (strstr(param, "data"))
		r->cls = RC_DATA;
	else
		r->cls = RC_CLIENT;
	while ((tok = maps_token_cut(&cp)) != NULL) {
		size_t k;
		for (k = 0; k < sizeof(rnames) / sizeof(rnames[0]); k++)
			if (strcmp(tok, rnames[k].name) == 0)
				break;
		if (k == sizeof(rnames) / sizeof(rnames[0])) {
			str_setf(err, "%s: unknown restriction \"%s\"", param, tok);
			goto fail;
		}
		if (r->n == cap) {
			cap = cap ? cap * 2 : 8;
			r->v = xreallocarray(r->v, cap, sizeof(*r->v));
		}
		ritem_t *it = &r->v[r->n++];
		memset(it, 0, sizeof(*it));
		it->kind = rnames[k].kind;
		it->name = rnames[k].name;
		if (rnames[k].table) {
			char *t = maps_token_cut(&cp);
			if (t == NULL || strchr(t, ':') == NULL) {
				str_setf(err, "%s: %s needs a type:table argument",
				    param, rnames[k].name);
				goto fail;
			}
			(void)maps_add(r->tables, t, strlen(t), NULL);
			it->table = maps_count(r->tables) - 1;
			if (maps_broken(r->tables, it->table) != NULL &&
			    err_warn)
				str_catf(err_warn, "%s: %s %s: %s; its checks "
				    "answer 451 4.3.0 until it can be opened\n",
				    param, rnames[k].name, t,
				    maps_broken(r->tables, it->table));
		}
	}
	free(copy);
	return r;
fail:
	free(copy);
	smtpd_restr_free(r);
	return NULL;
}

void smtpd_restr_free(smtpd_restr_t *r)
{
	if (r == NULL)
		return;
	free(r->v);
	maps_free(r->tables);
	free(r->param);
	free(r);
}

bool smtpd_restr_empty(const smtpd_restr_t *r)
{
	return r == NULL || r->n == 0;
}

bool smtpd_restr_stops_relay(const smtpd_restr_t *r)
{
	for (size_t i = 0; r && i < r->n; i++)
		switch (r->v[i].kind) {
		case R_REJECT_UNAUTH_DEST:
		case R_DEFER_UNAUTH_DEST:
		case R_REJECT:
		case R_DEFER:
			return true;
		default:
			break;
		}
	return false;
}

bool smtpd_restr_uses_login_maps(const smtpd_restr_t *r)
{
	for (size_t i = 0; r && i < r->n; i++)
		switch (r->v[i].kind) {
		case R_REJECT_SENDER_LOGIN_MISMATCH:
		case R_REJECT_AUTH_SENDER_LOGIN_MISMATCH:
		case R_REJECT_UNAUTH_SENDER_LOGIN_MISMATCH:
			return true;
		default:
			break;
		}
	return false;
}

/* ---- Replies ------------------------------------------------------- */

static void set_reply(smtpd_reply_t *rp, int code, const char *dsn,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void set_reply(smtpd_reply_t *rp, int code, const char *dsn,
    const char *fmt, ...)
{
	va_list ap;

	rp->code = code;
	bcopy_str(rp->dsn, sizeof(rp->dsn), dsn);
	str_reset(&rp->text);
	va_start(ap, fmt);
	str_vcatf(&rp->text, fmt, ap);
	va_end(ap);
}

/* dsn with the class digit of code: "5.7.1" for 554, "4.7.1" for 450. */
static const char *dsn_for(int code, const char *detail, char buf[16])
{
	bfmt(buf, 16, "%d.%s", code / 100, detail);
	return buf;
}

/* The address as it appears in replies and logs: <external form>. */
static void angle_addr(const char *internal, str_t *out)
{
	str_putc(out, '<');
	addr_externalize(internal, out);
	str_putc(out, '>');
}

/* ---- Small helpers ------------------------------------------------- */

static const char *domain_of(const char *addr)
{
	const char *at = strrchr(addr, '@');
	return at ? at + 1 : NULL;
}

static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

/* Same IP address, one side an address literal "[..]"/"[IPv6:..]". */
static bool literal_is(const char *dom, const char *addr)
{
	unsigned char a[16], b[16];
	int fa, fb;
	struct sockaddr_storage ss;

	if (addr == NULL || *addr == 0)
		return false;
	fa = addr_ip_literal(dom, strlen(dom), a);
	if (fa == 0 || sock_addr_parse(addr, 0, &ss, NULL) < 0)
		return false;
	fb = ss.ss_family;
	if (fb == AF_INET)
		memcpy(b, &((struct sockaddr_in *)&ss)->sin_addr, 4);
	else if (fb == AF_INET6)
		memcpy(b, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	else
		return false;
	return fa == fb && memcmp(a, b, fa == AF_INET ? 4 : 16) == 0;
}

int smtpd_domain_is_local(const smtpd_cfg_t *cfg, const char *domain,
    const char *local_addr, str_t *err)
{
	if (domain == NULL || *domain == 0)
		return 1;
	if (domain[0] == '[')
		return literal_is(domain, local_addr) ? 1 : 0;
	return addr_domlist_match(cfg->mydestination, domain, err);
}

/* ---- Table lookups ------------------------------------------------- */

/* Looks key up in table i of m (a list's check_*_access tables); 1
 * found (*val), 0 not, -1 error (maps_failed says why). */
static int lookup(maps_t *m, size_t i, const char *key, const char **val)
{
	return maps_get_entry(m, i, key, val, NULL);
}

/* Domain keys: the name, then ".parent" and "parent" for each parent. */
static int lookup_domain(maps_t *m, size_t i, const char *dom,
    const char **val)
{
	int rc = lookup(m, i, dom, val);
	for (const char *p = strchr(dom, '.'); rc == 0 && p; p = strchr(p + 1, '.')) {
		rc = lookup(m, i, p, val);
		if (rc == 0 && p[1] != 0)
			rc = lookup(m, i, p + 1, val);
	}
	return rc;
}

/* Address keys: user@domain, user@domain without extension, the domain
 * (and parents), user@, user@ without extension.  The null address is
 * looked up as "<>". */
static int lookup_address(const smtpd_cfg_t *cfg, maps_t *m, size_t i,
    const char *addr, const char **val)
{
	str_t k = STR_INIT;
	addr_split_t sp;
	int rc;

	if (*addr == 0)
		return lookup(m, i, "<>", val);
	addr_split(addr, cfg->recipient_delimiter, &sp);
	rc = lookup(m, i, addr, val);
	if (rc == 0 && sp.ext != NULL) {
		str_set(&k, sp.user);
		if (sp.domain)
			str_catf(&k, "@%s", sp.domain);
		rc = lookup(m, i, str_cstr(&k), val);
	}
	if (rc == 0 && sp.domain != NULL)
		rc = lookup_domain(m, i, sp.domain, val);
	if (rc == 0) {
		const char *at = strrchr(addr, '@');
		str_reset(&k);
		str_append(&k, addr, at ? (size_t)(at - addr) : strlen(addr));
		str_putc(&k, '@');
		rc = lookup(m, i, str_cstr(&k), val);
	}
	if (rc == 0 && sp.ext != NULL) {
		str_setf(&k, "%s@", sp.user);
		rc = lookup(m, i, str_cstr(&k), val);
	}
	addr_split_free(&sp);
	str_release(&k);
	return rc;
}

/* Client keys: the host name and its parents (when known), then the
 * address and its prefixes (1.2.3.4, 1.2.3, 1.2, 1; IPv6 by groups). */
static int lookup_client(maps_t *m, size_t i, const char *name,
    const char *addr, const char **val)
{
	int rc = 0;
	str_t k = STR_INIT;

	if (name && strcmp(name, "unknown") != 0)
		rc = lookup_domain(m, i, name, val);
	if (rc == 0 && addr && *addr) {
		char sep = strchr(addr, ':') ? ':' : '.';
		str_set(&k, addr);
		for (;;) {
			rc = lookup(m, i, str_cstr(&k), val);
			if (rc != 0)
				break;
			char *p = strrchr(k.buf, sep);
			if (p == NULL || p == k.buf)
				break;
			str_truncate(&k, (size_t)(p - k.buf));
			/* "2001:db8::" would leave "2001:db8:"; skip empties */
			while (k.len > 0 && k.buf[k.len - 1] == sep)
				str_truncate(&k, k.len - 1);
			if (k.len == 0)
				break;
		}
	}
	str_release(&k);
	return rc;
}

/* What an access table said. */
static enum smtpd_chk access_result(const smtpd_check_ctx_t *ctx,
    const char *spec, const char *value, const char *subject,
    const char *what, smtpd_reply_t *rp)
{
	char word[32], dsnbuf[16];
	size_t wl = strcspn(value, " \t");
	const char *text = value + wl;
	bool numeric = wl > 0;

	while (*text == ' ' || *text == '\t')
		text++;
	if (wl >= sizeof(word))
		wl = sizeof(word) - 1;
	memcpy(word, value, wl);
	word[wl] = 0;
	for (size_t i = 0; i < wl; i++)
		if (!isdigit((unsigned char)word[i]))
			numeric = false;
	if (strcasecmp(word, "OK") == 0 || strcasecmp(word, "PERMIT") == 0)
		return SMTPD_CHK_OK;
	if (strcasecmp(word, "DUNNO") == 0)
		return SMTPD_CHK_DUNNO;
	if (strcasecmp(word, "FILTER") == 0) {
		/* The message's content filter; the last one wins and the
		 * evaluation goes on (Postfix).  A malformed value is a
		 * configuration error of the table, said with its value:
		 * it is ignored, and the mail not refused for it. */
		str_t why = STR_INIT, v = STR_INIT;
		size_t vl = strlen(text);
		while (vl > 0 && (text[vl - 1] == ' ' || text[vl - 1] == '\t'))
			vl--;
		str_append(&v, text, vl);
		if (!filter_valid(str_cstr(&v), &why))
			log_warning("%s: bad FILTER \"%.100s\" for %s: %s; "
			    "ignored", spec, str_cstr(&v), subject,
			    str_cstr(&why));
		else if (ctx->filter == NULL)
			log_warning("%s: FILTER %s for %s: not possible at this "
			    "stage (after the envelope went to cleanup); "
			    "ignored", spec, str_cstr(&v), subject);
		else {
			log_info("filter: %s: %s triggers FILTER %s", subject,
			    what, str_cstr(&v));
			str_set(ctx->filter, str_cstr(&v));
		}
		str_release(&v);
		str_release(&why);
		return SMTPD_CHK_DUNNO;
	}
	if (strcasecmp(word, "REJECT") == 0 || strcasecmp(word, "DEFER") == 0) {
		int code = toupper((unsigned char)word[0]) == 'R' ?
		    ctx->cfg->access_code : 450;
		set_reply(rp, code, dsn_for(code, "7.1", dsnbuf), "%s: %s rejected: %s",
		    subject, what, *text ? text : "Access denied");
		return SMTPD_CHK_REJECT;
	}
	if (numeric && wl == 3 && (word[0] == '4' || word[0] == '5')) {
		int code = atoi(word);
		const char *dsn = dsn_for(code, "7.1", dsnbuf);
		/* "550 5.1.1 text": an enhanced code of the right class */
		if (text[0] == word[0] && text[1] == '.' &&
		    isdigit((unsigned char)text[2])) {
			size_t dl = strcspn(text, " \t");
			if (dl < 16) {
				memcpy(dsnbuf, text, dl);
				dsnbuf[dl] = 0;
				dsn = dsnbuf;
				text += dl;
				while (*text == ' ' || *text == '\t')
					text++;
			}
		}
		set_reply(rp, code, dsn, "%s: %s rejected: %s", subject, what,
		    *text ? text : "Access denied");
		return SMTPD_CHK_REJECT;
	}
	if (numeric && *text == 0)	/* all-numeric values mean OK (Postfix) */
		return SMTPD_CHK_OK;
	log_warning("%s: unknown access result \"%s\" for %s; answering 451",
	    spec, value, subject);
	set_reply(rp, 451, "4.3.5", "%s: %s rejected: Server configuration error",
	    subject, what);
	return SMTPD_CHK_REJECT;
}

static enum smtpd_chk temp_lookup_failure(const char *subject,
    const char *why, smtpd_reply_t *rp)
{
	log_warning("%s: table lookup failed: %s", subject, why);
	set_reply(rp, 451, "4.3.0", "%s: Temporary lookup failure", subject);
	return SMTPD_CHK_REJECT;
}

static enum smtpd_chk check_access(const smtpd_check_ctx_t *ctx,
    maps_t *tables, const ritem_t *it, smtpd_reply_t *rp)
{
	str_t subject = STR_INIT;
	const char *val = NULL, *what, *why;
	size_t t = it->table;
	enum smtpd_chk res = SMTPD_CHK_DUNNO;
	int rc;

	switch (it->kind) {
	case R_CHECK_CLIENT:
		str_setf(&subject, "<%s[%s]>", ctx->client_name ? ctx->client_name
		    : "unknown", ctx->client_addr ? ctx->client_addr : "");
		what = "Client host";
		break;
	case R_CHECK_HELO:
		if (ctx->helo == NULL)
			return SMTPD_CHK_DUNNO;
		str_setf(&subject, "<%s>", ctx->helo);
		what = "Helo command";
		break;
	case R_CHECK_SENDER:
		if (ctx->sender == NULL)
			return SMTPD_CHK_DUNNO;
		angle_addr(ctx->sender, &subject);
		what = "Sender address";
		break;
	default:
		if (ctx->rcpt == NULL)
			return SMTPD_CHK_DUNNO;
		angle_addr(ctx->rcpt, &subject);
		what = "Recipient address";
		break;
	}
	/* A table that did not open answers 451 even when no key would be
	 * looked up. */
	if ((why = maps_broken(tables, t)) != NULL) {
		res = temp_lookup_failure(str_cstr(&subject), why, rp);
		goto out;
	}
	switch (it->kind) {
	case R_CHECK_CLIENT:
		rc = lookup_client(tables, t, ctx->client_name,
		    ctx->client_addr, &val);
		break;
	case R_CHECK_HELO:
		rc = lookup_domain(tables, t, ctx->helo, &val);
		break;
	case R_CHECK_SENDER:
		rc = lookup_address(ctx->cfg, tables, t, ctx->sender, &val);
		break;
	default:
		rc = lookup_address(ctx->cfg, tables, t, ctx->rcpt, &val);
		break;
	}
	if (rc < 0) {
		(void)maps_failed(tables, &why);
		res = temp_lookup_failure(str_cstr(&subject), why, rp);
		goto out;
	}
	if (rc > 0) {
		char *copy = xstrdup(val);	/* valid until the next lookup */
		res = access_result(ctx, maps_spec(tables, t), copy,
		    str_cstr(&subject), what, rp);
		free(copy);
	}
out:
	str_release(&subject);
	return res;
}

/* ---- Destination checks -------------------------------------------- */

int smtpd_rcpt_authorized(smtpd_check_ctx_t *ctx, const char *rcpt,
    smtpd_reply_t *rp)
{
	const smtpd_cfg_t *cfg = ctx->cfg;
	const char *at = strrchr(rcpt, '@');
	const char *dom = at ? at + 1 : NULL;
	size_t llen = at ? (size_t)(at - rcpt) : strlen(rcpt);
	str_t err = STR_INIT, subject = STR_INIT;
	int rc;

	/* user%host@ours, host!user@ours, "a@b"@ours: sender-specified
	 * routing through us is relaying, whatever the domain. */
	for (size_t i = 0; i < llen; i++)
		if (rcpt[i] == '@' || rcpt[i] == '%' || rcpt[i] == '!')
			return 0;
	if (dom == NULL) {
		/* A bare user (lenient RCPT TO:<user>) is completed with
		 * $myorigin later; judge that domain. */
		if (strcasecmp(rcpt, "postmaster") == 0)
			return 1;
		dom = cfg->myorigin;
	}
	rc = smtpd_domain_is_local(cfg, dom, ctx->local_addr, &err);
	if (rc == 0 && dom[0] != '[')
		rc = addr_domlist_match(cfg->alias_domains, dom, &err);
	if (rc == 0 && dom[0] != '[')
		rc = addr_domlist_match(cfg->virtual_domains, dom, &err);
	if (rc == 0 && dom[0] != '[')
		rc = addr_domlist_match(cfg->relay_domains, dom, &err);
	if (rc < 0) {
		angle_addr(rcpt, &subject);
		temp_lookup_failure(str_cstr(&subject), str_cstr(&err), rp);
	}
	str_release(&err);
	str_release(&subject);
	return rc;
}

static enum smtpd_chk check_unauth(smtpd_check_ctx_t *ctx, const ritem_t *it,
    smtpd_reply_t *rp)
{
	char dsnbuf[16];
	str_t subject = STR_INIT;
	int rc;

	if (ctx->rcpt == NULL)
		return SMTPD_CHK_DUNNO;
	rc = smtpd_rcpt_authorized(ctx, ctx->rcpt, rp);
	if (rc < 0)
		return SMTPD_CHK_REJECT;
	if (rc > 0)
		return it->kind == R_PERMIT_AUTH_DEST ? SMTPD_CHK_OK : SMTPD_CHK_DUNNO;
	if (it->kind == R_PERMIT_AUTH_DEST)
		return SMTPD_CHK_DUNNO;
	int code = it->kind == R_DEFER_UNAUTH_DEST ? 450 : ctx->cfg->relay_code;
	angle_addr(ctx->rcpt, &subject);
	set_reply(rp, code, dsn_for(code, "7.1", dsnbuf), "%s: Relay access denied",
	    str_cstr(&subject));
	str_release(&subject);
	return SMTPD_CHK_REJECT;
}

static enum smtpd_chk check_non_fqdn(smtpd_check_ctx_t *ctx,
    const char *addr, const char *what, smtpd_reply_t *rp)
{
	const char *dom = domain_of(addr);
	char dsnbuf[16];
	str_t subject = STR_INIT;

	if (*addr == 0)		/* the null sender */
		return SMTPD_CHK_DUNNO;
	if (dom != NULL && (dom[0] == '[' || strchr(dom, '.') != NULL))
		return SMTPD_CHK_DUNNO;
	angle_addr(addr, &subject);
	set_reply(rp, ctx->cfg->non_fqdn_code,
	    dsn_for(ctx->cfg->non_fqdn_code, "5.2", dsnbuf),
	    "%s: %s rejected: need fully-qualified address",
	    str_cstr(&subject), what);
	str_release(&subject);
	return SMTPD_CHK_REJECT;
}

/* Does the domain exist for mail: MX, else A or AAAA.  1 yes, 0 no, -1
 * temporary failure (why). */
static int domain_exists(const smtpd_cfg_t *cfg, const char *dom, str_t *why)
{
	static const uint16_t types[] = { DNS_T_MX, DNS_T_A, DNS_T_AAAA };
	smtpd_cfg_t *mcfg = (smtpd_cfg_t *)cfg;	/* lazily made resolver */
	bool temp = false;

	if (mcfg->dns == NULL) {
		if (mcfg->dns_failed) {
			str_set(why, "no resolver");
			return -1;
		}
		mcfg->dns = dns_resolver_from_config(why);
		if (mcfg->dns == NULL) {
			mcfg->dns_failed = true;
			log_warning("DNS resolver: %s", str_cstr(why));
			return -1;
		}
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		dns_reply_t rep = DNS_REPLY_INIT;
		str_t w = STR_INIT;
		enum dns_status st = dns_lookup(cfg->dns, dom, types[i], &rep, &w);
		dns_reply_free(&rep);
		if (st == DNS_FOUND) {
			str_release(&w);
			return 1;
		}
		if (st == DNS_NXDOMAIN) {
			str_release(&w);
			return temp ? -1 : 0;
		}
		if (dns_status_temporary(st)) {
			temp = true;
			str_set(why, str_cstr(&w));
		}
		str_release(&w);
	}
	return temp ? -1 : 0;
}

static enum smtpd_chk check_unknown_domain(smtpd_check_ctx_t *ctx,
    const char *addr, const char *what, smtpd_reply_t *rp)
{
	const char *dom = domain_of(addr);
	str_t why = STR_INIT, subject = STR_INIT;
	char dsnbuf[16];
	enum smtpd_chk res = SMTPD_CHK_DUNNO;
	int rc;

	if (*addr == 0 || dom == NULL || dom[0] == '[' || !is_ascii(dom))
		return SMTPD_CHK_DUNNO;
	rc = smtpd_domain_is_local(ctx->cfg, dom, ctx->local_addr, &why);
	if (rc != 0)		/* ours, or a table problem someone else sees */
		goto out;
	rc = domain_exists(ctx->cfg, dom, &why);
	if (rc > 0)
		goto out;
	angle_addr(addr, &subject);
	if (rc == 0) {
		int code = ctx->cfg->unknown_addr_code;
		set_reply(rp, code, dsn_for(code, "1.2", dsnbuf),
		    "%s: %s rejected: Domain not found", str_cstr(&subject), what);
	} else {
		set_reply(rp, 450, "4.4.3",
		    "%s: %s rejected: Domain lookup failed (%s)",
		    str_cstr(&subject), what, str_cstr(&why));
	}
	res = SMTPD_CHK_REJECT;
out:
	str_release(&why);
	str_release(&subject);
	return res;
}

/* ---- Lists of tables ------------------------------------------------ */

/* The passwd file is no lookup table of ours; it is answered with
 * getpwnam() (in a chroot, the jail needs its own etc/passwd:
 * doc/smtpd.md).  Account names in lower case, as local(8) delivers. */
static int passwd_get(const char *key, const char **value)
{
	char name[256];

	if (*key == 0 || strchr(key, '@') != NULL ||
	    !bcopy_str(name, sizeof(name), key))
		return 0;
	str_lower(name);
	if (getpwnam(name) == NULL)
		return 0;
	if (value)
		*value = key;
	return 1;
}

static const maps_own_t passwd_map = { "unix:passwd.byname", passwd_get };

maps_t *smtpd_maps_open(const char *param, const char *value)
{
	maps_t *m = maps_open(param, value, MAPS_FLAG_PAST_ERRORS, &passwd_map,
	    NULL);

	if (maps_count(m) == 0) {
		maps_free(m);
		return NULL;
	}
	for (size_t i = 0; i < maps_count(m); i++)
		if (maps_broken(m, i) != NULL)
			log_warning("%s: %s: %s; its lookups answer 451 4.3.0 "
			    "until it can be read", param, maps_spec(m, i),
			    maps_broken(m, i));
	return m;
}

int smtpd_maps_find_addr(const smtpd_cfg_t *cfg, maps_t *m,
    const char *addr, int flags, const char **value, str_t *err)
{
	addr_split_t sp;
	str_t k = STR_INIT;
	const char *at = strrchr(addr, '@');
	bool failed = false;
	int rc;

#define TRY(key) do { \
		rc = maps_get(m, (key), value, err); \
		if (rc > 0) \
			goto out; \
		if (rc < 0) \
			failed = true; \
	} while (0)

	addr_split(addr, cfg->recipient_delimiter, &sp);
	TRY(addr);
	if (sp.ext != NULL && sp.domain != NULL) {
		str_setf(&k, "%s@%s", sp.user, sp.domain);
		TRY(str_cstr(&k));
	}
	if (flags & SMTPD_MAPS_LOCALPART) {
		str_reset(&k);
		str_append(&k, addr, at ? (size_t)(at - addr) : strlen(addr));
		TRY(str_cstr(&k));
		if (sp.ext != NULL)
			TRY(sp.user);
	}
	if ((flags & SMTPD_MAPS_ATDOMAIN) && sp.domain != NULL) {
		str_setf(&k, "@%s", sp.domain);
		TRY(str_cstr(&k));
	}
	rc = failed ? -1 : 0;
#undef TRY
out:
	addr_split_free(&sp);
	str_release(&k);
	return rc;
}

/* ---- Virtual recipients -------------------------------------------- */

/* A recipient of virtual_alias_domains must be an alias in
 * virtual_alias_maps; one of virtual_mailbox_domains must be in
 * virtual_mailbox_maps (when set) or be an alias.  Keys: user@domain,
 * user@domain without its extension, @domain, as Postfix has them.  A
 * domain that is also local was judged by local_recipient_maps. */
static enum smtpd_chk check_virtual(smtpd_check_ctx_t *ctx, const char *rcpt,
    const char *dom, smtpd_reply_t *rp)
{
	const smtpd_cfg_t *cfg = ctx->cfg;
	str_t err = STR_INIT, subject = STR_INIT;
	enum smtpd_chk res = SMTPD_CHK_DUNNO;
	const char *table;
	maps_t *m;
	char dsnbuf[16];
	int code, rc;

	if (dom[0] == '[')
		return SMTPD_CHK_DUNNO;
	if ((rc = addr_domlist_match(cfg->alias_domains, dom, &err)) != 0) {
		table = "alias";
		m = NULL;
		code = cfg->unknown_alias_code;
	} else if (cfg->virtual_maps != NULL && (rc = addr_domlist_match(
	    cfg->virtual_domains, dom, &err)) != 0) {
		table = "mailbox";
		m = cfg->virtual_maps;
		code = cfg->unknown_virtual_code;
	} else {
		goto out;
	}
	angle_addr(rcpt, &subject);
	if (rc < 0) {
		res = temp_lookup_failure(str_cstr(&subject), str_cstr(&err), rp);
		goto out;
	}
	if (smtpd_domain_is_local(cfg, dom, ctx->local_addr, &err) != 0)
		goto out;
	str_reset(&err);
	rc = 0;
	if (cfg->alias_maps != NULL)
		rc = smtpd_maps_find_addr(cfg, cfg->alias_maps, rcpt,
		    SMTPD_MAPS_ATDOMAIN, NULL, &err);
	if (rc == 0 && m != NULL)
		rc = smtpd_maps_find_addr(cfg, m, rcpt, SMTPD_MAPS_ATDOMAIN,
		    NULL, &err);
	if (rc > 0)
		goto out;
	if (rc < 0) {
		log_warning("%s: virtual_%s_maps: %s", str_cstr(&subject), table,
		    str_cstr(&err));
		set_reply(rp, 451, "4.3.0", "%s: Temporary lookup failure",
		    str_cstr(&subject));
	} else {
		set_reply(rp, code, dsn_for(code, "1.1", dsnbuf),
		    "%s: Recipient address rejected: User unknown in virtual "
		    "%s table", str_cstr(&subject), table);
	}
	res = SMTPD_CHK_REJECT;
out:
	str_release(&err);
	str_release(&subject);
	return res;
}

/* ---- Local recipients ---------------------------------------------- */

enum smtpd_chk smtpd_check_unlisted(smtpd_check_ctx_t *ctx, const char *rcpt,
    smtpd_reply_t *rp)
{
	const smtpd_cfg_t *cfg = ctx->cfg;
	const char *dom = domain_of(rcpt);
	str_t err = STR_INIT, subject = STR_INIT;
	enum smtpd_chk res = SMTPD_CHK_DUNNO;
	char dsnbuf[16];
	bool temp = false;
	int rc;

	/* receive_override_options = no_unknown_recipient_checks (the
	 * reinjection service of a content filter). */
	if (!local_rcpt_enabled(cfg->lrcpt) ||
	    (cfg->recv_override & RECV_NO_UNKNOWN_RCPT))
		goto out;
	rc = smtpd_domain_is_local(cfg, dom ? dom : cfg->myorigin, ctx->local_addr, &err);
	if (rc == 0)
		goto out;
	angle_addr(rcpt, &subject);
	if (rc < 0) {
		res = temp_lookup_failure(str_cstr(&subject), str_cstr(&err), rp);
		goto out;
	}
	{
		/* RFC 5321 4.5.1: postmaster is always accepted. */
		const char *at = strrchr(rcpt, '@');
		size_t ll = at ? (size_t)(at - rcpt) : strlen(rcpt);
		if (ll == 10 && strncasecmp(rcpt, "postmaster", 10) == 0)
			goto out;
	}
	{
		/* The rule local delivers by (local_rcpt.h). */
		const char *at = strrchr(rcpt, '@');
		str_t lp = STR_INIT;
		str_append(&lp, rcpt, at ? (size_t)(at - rcpt) : strlen(rcpt));
		str_reset(&err);
		rc = local_rcpt_known(cfg->lrcpt, str_cstr(&lp), dom, &err);
		str_release(&lp);
		if (rc > 0)
			goto out;
		if (rc < 0) {
			temp = true;
			log_warning("%s: local_recipient_maps: %s",
			    str_cstr(&subject), str_cstr(&err));
		}
	}
	if (temp) {
		set_reply(rp, 451, "4.3.0", "%s: Temporary lookup failure",
		    str_cstr(&subject));
	} else {
		int code = cfg->unknown_local_code;
		set_reply(rp, code, dsn_for(code, "1.1", dsnbuf),
		    "%s: Recipient address rejected: User unknown in local "
		    "recipient table", str_cstr(&subject));
	}
	res = SMTPD_CHK_REJECT;
out:
	str_release(&err);
	str_release(&subject);
	if (res == SMTPD_CHK_DUNNO && dom != NULL)
		res = check_virtual(ctx, rcpt, dom, rp);
	return res;
}

/* ---- Sender login mismatch ----------------------------------------- */

/* Postfix's semantics: the owners of a sender address are the login
 * names smtpd_sender_login_maps gives for it (blank or comma separated).
 * auth: a logged-in client must own the address (an address without
 * owners is refused too unless allow_unowned); unauth: a client that did
 * not log in may not use an address that has owners. */
static enum smtpd_chk check_login_mismatch(smtpd_check_ctx_t *ctx,
    bool auth, bool unauth, smtpd_reply_t *rp)
{
	const smtpd_cfg_t *cfg = ctx->cfg;
	const char *owners = NULL;
	str_t err = STR_INIT, subject = STR_INIT;
	enum smtpd_chk res = SMTPD_CHK_DUNNO;
	int rc;

	if (cfg->login_maps == NULL || ctx->sender == NULL || *ctx->sender == 0)
		return SMTPD_CHK_DUNNO;
	if (ctx->sasl_username != NULL ? !auth : !unauth)
		return SMTPD_CHK_DUNNO;
	angle_addr(ctx->sender, &subject);
	rc = smtpd_maps_find_addr(cfg, cfg->login_maps, ctx->sender,
	    SMTPD_MAPS_ATDOMAIN, &owners, &err);
	if (rc < 0) {
		res = temp_lookup_failure(str_cstr(&subject), str_cstr(&err), rp);
		goto out;
	}
	if (ctx->sasl_username == NULL) {
		if (rc > 0) {
			set_reply(rp, 553, "5.7.1", "%s: Sender address rejected: "
			    "not logged in", str_cstr(&subject));
			res = SMTPD_CHK_REJECT;
		}
		goto out;
	}
	if (rc > 0) {
		char *copy = xstrdup(owners), *cp = copy, *name;
		bool found = false;
		while (!found && (name = maps_token_cut(&cp)) != NULL)
			found = strcasecmp(name, ctx->sasl_username) == 0;
		free(copy);
		if (found)
			goto out;
	}
	set_reply(rp, 553, "5.7.1", "%s: Sender address rejected: not owned "
	    "by user %s", str_cstr(&subject), ctx->sasl_username);
	res = SMTPD_CHK_REJECT;
out:
	str_release(&err);
	str_release(&subject);
	return res;
}

/* ---- Evaluation ---------------------------------------------------- */

/* Who a generic reject is about, by the list it is in (as Postfix words
 * it): "<name[addr]>: Client host rejected", "<rcpt>: Recipient address
 * rejected", ... */
static void subject_of(const smtpd_check_ctx_t *ctx, enum rclass cls,
    str_t *subject, const char **what)
{
	switch (cls) {
	case RC_HELO:
		if (ctx->helo) {
			str_setf(subject, "<%s>", ctx->helo);
			*what = "Helo command rejected";
			return;
		}
		break;
	case RC_SENDER:
		if (ctx->sender) {
			angle_addr(ctx->sender, subject);
			*what = "Sender address rejected";
			return;
		}
		break;
	case RC_RCPT:
		if (ctx->rcpt) {
			angle_addr(ctx->rcpt, subject);
			*what = "Recipient address rejected";
			return;
		}
		break;
	case RC_DATA:
		str_set(subject, "<DATA>");
		*what = "Data command rejected";
		return;
	case RC_EOD:
		str_set(subject, "<END-OF-MESSAGE>");
		*what = "End-of-data rejected";
		return;
	case RC_CLIENT:
		break;
	}
	str_setf(subject, "<%s[%s]>", ctx->client_name ? ctx->client_name :
	    "unknown", ctx->client_addr ? ctx->client_addr : "");
	*what = "Client host rejected";
}

static enum smtpd_chk eval_item(smtpd_check_ctx_t *ctx,
    const smtpd_restr_t *r, const ritem_t *it, smtpd_reply_t *rp)
{
	enum rclass cls = r->cls;
	str_t err = STR_INIT, subject = STR_INIT;
	enum smtpd_chk res = SMTPD_CHK_DUNNO;
	const char *why;
	char dsnbuf[16];
	int rc;

	switch (it->kind) {
	case R_PERMIT:
		res = SMTPD_CHK_OK;
		break;
	case R_REJECT:
	case R_DEFER: {
		int code = it->kind == R_REJECT ? 554 : 450;
		subject_of(ctx, cls, &subject, &why);
		set_reply(rp, code, dsn_for(code, "7.1", dsnbuf),
		    "%s: %s: Access denied", str_cstr(&subject), why);
		res = SMTPD_CHK_REJECT;
		break;
	}
	case R_PERMIT_MYNETWORKS:
		if (ctx->client_addr == NULL)
			break;
		rc = smtpd_netlist_match(ctx->cfg->mynetworks, ctx->client_addr, &err);
		if (rc > 0)
			res = SMTPD_CHK_OK;
		else if (rc < 0) {
			str_setf(&subject, "<%s[%s]>", ctx->client_name,
			    ctx->client_addr);
			res = temp_lookup_failure(str_cstr(&subject),
			    str_cstr(&err), rp);
		}
		break;
	case R_PERMIT_SASL:
		if (ctx->sasl_username != NULL)
			res = SMTPD_CHK_OK;
		break;
	case R_REJECT_UNAUTH_DEST:
	case R_DEFER_UNAUTH_DEST:
	case R_PERMIT_AUTH_DEST:
		res = check_unauth(ctx, it, rp);
		break;
	case R_REJECT_UNKNOWN_RCPT_DOMAIN:
		if (ctx->rcpt)
			res = check_unknown_domain(ctx, ctx->rcpt,
			    "Recipient address", rp);
		break;
	case R_REJECT_UNKNOWN_SENDER_DOMAIN:
		if (ctx->sender)
			res = check_unknown_domain(ctx, ctx->sender,
			    "Sender address", rp);
		break;
	case R_REJECT_NON_FQDN_RCPT:
		if (ctx->rcpt)
			res = check_non_fqdn(ctx, ctx->rcpt, "Recipient address", rp);
		break;
	case R_REJECT_NON_FQDN_SENDER:
		if (ctx->sender)
			res = check_non_fqdn(ctx, ctx->sender, "Sender address", rp);
		break;
	case R_REJECT_NON_FQDN_HELO:
	case R_REJECT_INVALID_HELO: {
		bool valid, fqdn;
		int code;
		if (ctx->helo == NULL)
			break;
		if (ctx->helo[0] == '[') {
			valid = fqdn = addr_ip_literal(ctx->helo,
			    strlen(ctx->helo), NULL) != 0;
		} else {
			valid = addr_valid_domain(ctx->helo, strlen(ctx->helo),
			    ADDR_DOM_TRAILING_DOT | ADDR_DOM_UTF8, &why);
			fqdn = valid && strchr(ctx->helo, '.') != NULL;
		}
		if (it->kind == R_REJECT_INVALID_HELO) {
			if (valid)
				break;
			code = 501;
			why = "Invalid name";
		} else {
			if (fqdn)
				break;
			code = ctx->cfg->non_fqdn_code;
			why = "need fully-qualified hostname";
		}
		set_reply(rp, code, dsn_for(code, "5.2", dsnbuf),
		    "<%s>: Helo command rejected: %s", ctx->helo, why);
		res = SMTPD_CHK_REJECT;
		break;
	}
	case R_REJECT_UNLISTED_RCPT:
		if (ctx->rcpt)
			res = smtpd_check_unlisted(ctx, ctx->rcpt, rp);
		break;
	case R_REJECT_SENDER_LOGIN_MISMATCH:
		res = check_login_mismatch(ctx, true, true, rp);
		break;
	case R_REJECT_AUTH_SENDER_LOGIN_MISMATCH:
		res = check_login_mismatch(ctx, true, false, rp);
		break;
	case R_REJECT_UNAUTH_SENDER_LOGIN_MISMATCH:
		res = check_login_mismatch(ctx, false, true, rp);
		break;
	case R_CHECK_CLIENT:
	case R_CHECK_HELO:
	case R_CHECK_SENDER:
	case R_CHECK_RCPT:
		res = check_access(ctx, r->tables, it, rp);
		break;
	}
	str_release(&err);
	str_release(&subject);
	return res;
}

enum smtpd_chk smtpd_check(const smtpd_restr_t *r, smtpd_check_ctx_t *ctx,
    enum smtpd_stage stage, smtpd_reply_t *reply)
{
	(void)stage;
	if (ctx->trusted)
		return SMTPD_CHK_OK;
	for (size_t i = 0; r && i < r->n; i++) {
		enum smtpd_chk res = eval_item(ctx, r, &r->v[i], reply);
		if (log_verbose > 0)
			log_debug("%s: %s: %s", r->param, r->v[i].name,
			    res == SMTPD_CHK_OK ? "permit" :
			    res == SMTPD_CHK_REJECT ? "reject" : "no decision");
		if (res != SMTPD_CHK_DUNNO)
			return res;
	}
	return SMTPD_CHK_DUNNO;
}
