/* SMTP AUTH in the client (RFC 4954): the credentials for a request from
 * smtp_sasl_password_maps, the choice of a mechanism under the security
 * options and the mechanism filter, and the PLAIN and LOGIN exchanges.
 *
 * The credentials are looked up once per request, before any session is
 * taken or made, because they are part of the key of kept sessions: a
 * session logged in with some credentials must never carry mail that
 * would be sent with others (or with none), in this process or, through
 * the shared cache, in another.  The password is never logged; the buffers that
 * held it on its way to the wire are wiped. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/evp.h>
#include "base64.h"
#include "log.h"
#include "maps.h"
#include "mem.h"
#include "smtp_int.h"

/* ---- configuration ---- */

int smtp_sasl_maps_open(smtp_sasl_config_t *c, const char *spec, str_t *err)
{
	char name[64];

	if (!bfmt(name, sizeof(name), "%s_sasl_password_maps", c->proto))
		name[0] = '\0';
	c->maps = maps_open(name, spec, MAPS_FLAG_STRICT, NULL, err);
	return c->maps != NULL ? 0 : -1;
}

/* Mechanism names as RFC 4422 has them, or "!name". */
int smtp_sasl_filter_set(smtp_sasl_config_t *c, const char *filter,
    str_t *err)
{
	char *copy = xstrdup(filter), *cp = copy, *t;
	int rc = 0;

	while ((t = str_token(&cp, ", \t\r\n")) != NULL) {
		const char *n = t[0] == '!' ? t + 1 : t;
		size_t len = strlen(n);
		bool ok = len > 0 && len <= 20;
		for (size_t i = 0; ok && i < len; i++)
			ok = isalnum((unsigned char)n[i]) || n[i] == '-' ||
			    n[i] == '_';
		if (!ok) {
			str_setf(err, "%s_sasl_mechanism_filter: \"%s\" is not "
			    "a mechanism name (lookup tables are not supported "
			    "here)", c->proto, t);
			rc = -1;
			break;
		}
	}
	free(copy);
	if (rc == 0 && !bcopy_str(c->filter, sizeof(c->filter), filter)) {
		str_setf(err, "%s_sasl_mechanism_filter: too long", c->proto);
		rc = -1;
	}
	return rc;
}

/* ---- the credentials of a request ---- */

/* Looks key up in every table, in order; the first that fails ends the
 * lookup.  1 found (*value), 0 not found, -1 a table failed (err). */
static int maps_find(const smtp_sasl_config_t *c, const char *key,
    const char **value, str_t *err)
{
	const char *spec, *reason;
	int rc = maps_get(c->maps, key, value, NULL);

	if (rc < 0) {
		spec = maps_failed(c->maps, &reason);
		str_setf(err, "%s_sasl_password_maps: %s: lookup of \"%s\" "
		    "failed: %s", c->proto, spec, key, reason);
	}
	return rc;
}

/* Most lookup keys: sender, @domain, inet:[host]:port, [host]:port,
 * [host], host. */
#define LOOKUP_KEYS_MAX 6

/* The keys, in order: the sender and its @domain (sender-dependent
 * authentication only), then the next hop as given, without its port,
 * without its brackets. */
static size_t lookup_keys(const smtp_sasl_config_t *c, const char *sender,
    const char *nexthop, str_t keys[LOOKUP_KEYS_MAX])
{
	size_t n = 0;
	const char *at;

	if (c->sender_dependent && sender != NULL && sender[0] != '\0') {
		str_set(&keys[n++], sender);
		if ((at = strrchr(sender, '@')) != NULL && at[1] != '\0')
			str_set(&keys[n++], at);
	}
	str_set(&keys[n++], nexthop);
	/* LMTP next hops unix:PATH and inet:HOST[:PORT]: then the rest
	 * alone, as an SMTP next hop. */
	if (strncmp(nexthop, "unix:", 5) == 0) {
		if (nexthop[5] != '\0')
			str_set(&keys[n++], nexthop + 5);
		return n;
	}
	if (strncmp(nexthop, "inet:", 5) == 0 && nexthop[5] != '\0') {
		nexthop += 5;
		str_set(&keys[n++], nexthop);
	}
	if (nexthop[0] == '[') {
		const char *close = strchr(nexthop, ']');
		if (close != NULL) {
			if (close[1] != '\0') {		/* [host]:port */
				str_reset(&keys[n]);
				str_append(&keys[n++], nexthop,
				    (size_t)(close - nexthop) + 1);
			}
			str_reset(&keys[n]);
			str_append(&keys[n++], nexthop + 1,
			    (size_t)(close - nexthop) - 1);
		}
	} else if (strchr(nexthop, ':') != NULL) {	/* domain:port */
		str_reset(&keys[n]);
		str_append(&keys[n++], nexthop, strcspn(nexthop, ":"));
	}
	return n;
}

/* "|sasl:USER:DIGEST": the user, with bytes a cache label cannot hold
 * (and '%') as %XX, and 16 hex digits of SHA-256 over the user and the
 * password, so that a session is reused only with the same credentials
 * (a password changed in the table, or two entries with one user and
 * two passwords, get sessions of their own) while the password itself
 * never goes into a label. */
static void make_tag(str_t *tag, const char *user, const char *pass)
{
	static const char ctx[] = "petrel smtp_sasl session key";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *h = EVP_MD_CTX_new();
	bool ok = h != NULL &&
	    EVP_DigestInit_ex(h, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(h, ctx, sizeof(ctx)) == 1 &&
	    EVP_DigestUpdate(h, user, strlen(user) + 1) == 1 &&
	    EVP_DigestUpdate(h, pass, strlen(pass)) == 1 &&
	    EVP_DigestFinal_ex(h, md, &mdlen) == 1 && mdlen >= 8;

	EVP_MD_CTX_free(h);
	if (!ok)		/* cannot happen with a working libcrypto */
		log_fatal("smtp_sasl: SHA-256 is not available");
	str_set(tag, "|sasl:");
	for (const unsigned char *p = (const unsigned char *)user; *p; p++) {
		if (*p <= 0x20 || *p >= 0x7f || *p == '%')
			str_catf(tag, "%%%02X", *p);
		else
			str_putc(tag, *p);
	}
	str_putc(tag, ':');
	for (int i = 0; i < 8; i++)
		str_catf(tag, "%02x", md[i]);
	explicit_bzero(md, sizeof(md));
}

void smtp_sasl_forget(smtp_client_t *cl)
{
	/* Only a request that had credentials left any. */
	if (cl->creds.found)
		explicit_bzero(&cl->creds, sizeof(cl->creds));
}

int smtp_sasl_prepare(smtp_client_t *cl, const char *sender,
    const char *nexthop, str_t *err)
{
	const smtp_sasl_config_t *c = &cl->cfg.sasl;
	str_t keys[LOOKUP_KEYS_MAX];
	const char *value = NULL, *colon;
	size_t n, ulen, plen;
	int rc = 0, found = 0;

	memset(keys, 0, sizeof(keys));
	smtp_sasl_forget(cl);
	str_reset(&cl->tag);
	str_set(&cl->key, nexthop);
	if (!c->enable || c->maps == NULL || maps_count(c->maps) == 0)
		return 0;
	n = lookup_keys(c, sender, nexthop, keys);
	for (size_t i = 0; i < n && found == 0; i++)
		found = maps_find(c, str_cstr(&keys[i]), &value, err);
	if (found < 0) {
		rc = -1;
		goto out;
	}
	if (found == 0)
		goto out;
	/* user:password; the password may hold colons, the user not. */
	colon = strchr(value, ':');
	ulen = colon != NULL ? (size_t)(colon - value) : strlen(value);
	plen = colon != NULL ? strlen(colon + 1) : 0;
	if (ulen == 0 || ulen > SMTP_SASL_FIELD_MAX ||
	    plen > SMTP_SASL_FIELD_MAX ||
	    strpbrk(value, "\r\n") != NULL) {
		/* Never the value itself: it holds a password. */
		str_setf(err, "%s_sasl_password_maps: the entry for %s is "
		    "not user:password (empty user name, a line break, or "
		    "longer than %d bytes)", c->proto, str_cstr(&keys[0]),
		    SMTP_SASL_FIELD_MAX);
		rc = -2;
		goto out;
	}
	memcpy(cl->creds.user, value, ulen);
	cl->creds.user[ulen] = '\0';
	if (colon != NULL)
		memcpy(cl->creds.pass, colon + 1, plen + 1);
	cl->creds.found = true;
	if (!cl->memo.found || strcmp(cl->memo.user, cl->creds.user) != 0 ||
	    strcmp(cl->memo.pass, cl->creds.pass) != 0) {
		make_tag(&cl->memo_tag, cl->creds.user, cl->creds.pass);
		cl->memo = cl->creds;
	}
	str_set(&cl->tag, str_cstr(&cl->memo_tag));
	str_cat(&cl->key, str_cstr(&cl->tag));
out:
	for (size_t i = 0; i < LOOKUP_KEYS_MAX; i++)
		str_release(&keys[i]);
	return rc;
}

/* ---- the mechanism ---- */

/* Whether the filter lets name through: the first entry that names it
 * decides (!name refuses); a name not listed is refused. */
static bool filter_allows(const char *filter, const char *name)
{
	char *copy, *cp, *t;
	bool allow = false;

	if (filter[0] == '\0')
		return true;
	copy = xstrdup(filter);
	cp = copy;
	while ((t = str_token(&cp, ", \t\r\n")) != NULL) {
		bool neg = t[0] == '!';
		if (strcasecmp(neg ? t + 1 : t, name) == 0) {
			allow = !neg;
			break;
		}
	}
	free(copy);
	return allow;
}

/* What PLAIN and LOGIN lack: the password crosses in the clear (base64),
 * so they are plaintext, open to active and dictionary attacks, without
 * mutual authentication or forward secrecy.  They are not anonymous. */
#define PLAINTEXT_REFUSED (SASL_OPT_NOPLAINTEXT | SASL_OPT_NOACTIVE | \
	SASL_OPT_NODICTIONARY | SASL_OPT_MUTUAL_AUTH | \
	SASL_OPT_FORWARD_SECRECY)

const char *smtp_sasl_choose(const smtp_sasl_config_t *c, const char *offered,
    unsigned opts)
{
	const char *p = offered;

	if (opts & PLAINTEXT_REFUSED)
		return NULL;		/* nothing we implement qualifies */
	while (*p != '\0') {
		size_t n = strcspn(p, " ");
		const char *m = NULL;
		if (n == 5 && strncmp(p, "PLAIN", 5) == 0)
			m = "PLAIN";
		else if (n == 5 && strncmp(p, "LOGIN", 5) == 0)
			m = "LOGIN";
		if (m != NULL && filter_allows(c->filter, m))
			return m;
		p += n;
		while (*p == ' ')
			p++;
	}
	return NULL;
}

/* ---- the exchange ---- */

/* Sends line (a secret: wiped after). */
static bool send_secret(smtp_sess_t *ss, str_t *line)
{
	str_cat(line, "\r\n");
	stream_write(ss->s, line->buf, line->len);
	explicit_bzero(line->buf, line->len);
	str_reset(line);
	return !stream_error(ss->s) && !stream_timedout(ss->s);
}

/* A 334 challenge must be base64 (LOGIN's prompts say "Username:" and
 * "Password:", which we do not need to read). */
static bool challenge_ok(const smtp_reply_t *r)
{
	str_t d = STR_INIT;
	const char *t = str_len(&r->text) > 4 ? str_cstr(&r->text) + 4 : "";
	bool ok = base64_decode(&d, t, strlen(t));

	str_release(&d);
	return ok;
}

bool smtp_sasl_login(smtp_client_t *cl, smtp_sess_t *ss, smtp_reply_t *r,
    smtp_attempt_t *at)
{
	const smtp_sasl_config_t *c = &cl->cfg.sasl;
	const char *mech = smtp_sasl_choose(c, str_cstr(&ss->auth_mechs),
	    ss->tls != NULL ? c->tls_opts : c->opts);
	str_t line = STR_INIT, tmp = STR_INIT;
	int io, step = 0;
	bool ok = false;

	at->auth_refused = false;
	if (mech == NULL) {
		str_setf(&at->reason, "SASL authentication failed; cannot "
		    "authenticate to server %s: no mechanism available "
		    "(offered: %s; %s connection)", str_cstr(&ss->namaddr),
		    str_len(&ss->auth_mechs) ? str_cstr(&ss->auth_mechs) :
		    "none", ss->tls != NULL ? "TLS" : "plaintext");
		bcopy_str(at->dsn, sizeof(at->dsn), "4.7.0");
		at->hard = false;
		at->auth_refused = true;
		return false;
	}
	if (strcmp(mech, "PLAIN") == 0) {
		/* RFC 4616 with the initial response: no authorization
		 * identity, the user, the password. */
		str_append(&tmp, "", 1);
		str_cat(&tmp, cl->creds.user);
		str_append(&tmp, "", 1);
		str_cat(&tmp, cl->creds.pass);
		str_set(&line, "AUTH PLAIN ");
		base64_encode(&line, tmp.buf, tmp.len);
		explicit_bzero(tmp.buf, tmp.len);
		step = 2;
	} else {
		str_set(&line, "AUTH LOGIN");
	}
	for (;;) {
		const char *stage = step == 0 ? "sending AUTH LOGIN" :
		    step == 1 ? "sending the SASL user name" :
		    "sending the SASL credentials";
		send_secret(ss, &line);
		io = smtp_reply_read(ss, cl->cfg.helo_timeout_ms, r);
		if (io != SMTP_IO_OK) {
			smtp_io_reason(ss, io, stage, r, &at->reason);
			bcopy_str(at->dsn, sizeof(at->dsn), smtp_io_dsn(io));
			at->hard = false;
			break;
		}
		if (r->code == 334 && step < 2) {
			if (!challenge_ok(r)) {
				str_setf(&at->reason, "SASL authentication "
				    "failed; server %s sent a malformed "
				    "challenge: %s", str_cstr(&ss->namaddr),
				    str_cstr(&r->text));
				goto cancel;
			}
			/* LOGIN: the user name, then the password. */
			base64_encode(&line, step == 0 ? cl->creds.user :
			    cl->creds.pass, strlen(step == 0 ? cl->creds.user :
			    cl->creds.pass));
			step++;
			continue;
		}
		if (r->code == 334) {
			str_setf(&at->reason, "SASL authentication failed; "
			    "server %s asked for more than %s needs: %s",
			    str_cstr(&ss->namaddr), mech, str_cstr(&r->text));
			goto cancel;
		}
		if (r->code / 100 == 2) {
			ok = true;
			break;
		}
		/* A refusal: the server's words go into the reason (and so
		 * into the queue listing). */
		str_setf(&at->reason, "SASL authentication failed; server %s "
		    "said: %s", str_cstr(&ss->namaddr), str_cstr(&r->text));
		bcopy_str(at->dsn, sizeof(at->dsn), r->dsn);
		at->hard = r->code / 100 == 5 && !c->soft_bounce;
		if (!at->hard)
			at->dsn[0] = '4';
		str_set(&at->remote_mta, ss->host);
		str_set(&at->remote_reply, str_cstr(&r->text));
		/* 421: the server is closing the session, as at the greeting
		 * (a handshake failure); any other refusal was an answer. */
		at->auth_refused = r->code != 421;
		if (r->code == 421)
			ss->broken = true;
		break;
	}
	goto out;
cancel:
	/* RFC 4954: "*" cancels the exchange; the server answers 501. */
	bcopy_str(at->dsn, sizeof(at->dsn), "4.7.0");
	at->hard = false;
	at->auth_refused = true;
	str_set(&line, "*");
	send_secret(ss, &line);
	if (smtp_reply_read(ss, cl->cfg.helo_timeout_ms, r) != SMTP_IO_OK)
		ss->broken = true;
out:
	if (line.buf != NULL)
		explicit_bzero(line.buf, line.cap);
	if (tmp.buf != NULL)
		explicit_bzero(tmp.buf, tmp.cap);
	str_release(&line);
	str_release(&tmp);
	if (ok)
		cl->stats.auth_ok++;
	else
		cl->stats.auth_failed++;
	return ok;
}
