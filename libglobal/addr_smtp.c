/* SMTP MAIL FROM:<path> / RCPT TO:<path> arguments with their ESMTP
 * parameters (RFC 5321 section 4.1.2, RFC 1870 SIZE, RFC 6152 BODY,
 * RFC 3461 DSN, RFC 6531 SMTPUTF8, RFC 4954 AUTH), and xtext. */
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include "addr.h"
#include "dsn_notify.h"
#include "mem.h"

/* ---- xtext ------------------------------------------------------------ */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

bool addr_xtext_decode(const char *in, size_t len, str_t *out)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '+') {
			int hi, lo;

			if (len - i < 3)
				return false;
			hi = hexval((unsigned char)in[i + 1]);
			lo = hexval((unsigned char)in[i + 2]);
			if (hi < 0 || lo < 0)
				return false;
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
			/* Decoded text ends up in queue files and DSNs:
			 * printable ASCII only. */
			if (c < 32 || c > 126)
				return false;
		} else if (c < 33 || c > 126 || c == '=') {
			return false;
		}
		str_putc(out, c);
	}
	return true;
}

void addr_xtext_encode(const char *in, size_t len, str_t *out)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c < 33 || c > 126 || c == '+' || c == '=') {
			str_putc(out, '+');
			str_putc(out, hex[c >> 4]);
			str_putc(out, hex[c & 15]);
		} else {
			str_putc(out, c);
		}
	}
}

/* ---- Parameters ------------------------------------------------------- */

static const struct {
	const char *name;
	enum addr_param_kind kind;
	bool rcpt;		/* RCPT parameter (else MAIL) */
} known_params[] = {
	{ "SIZE", ADDR_P_SIZE, false },
	{ "BODY", ADDR_P_BODY, false },
	{ "RET", ADDR_P_RET, false },
	{ "ENVID", ADDR_P_ENVID, false },
	{ "SMTPUTF8", ADDR_P_SMTPUTF8, false },
	{ "AUTH", ADDR_P_AUTH, false },
	{ "NOTIFY", ADDR_P_NOTIFY, true },
	{ "ORCPT", ADDR_P_ORCPT, true },
};

void addr_smtp_free(addr_smtp_t *p)
{
	free(p->addr);
	free(p->local);
	free(p->domain);
	for (size_t i = 0; i < p->nparams; i++) {
		free(p->params[i].keyword);
		free(p->params[i].value);
	}
	free(p->envid);
	free(p->auth);
	free(p->orcpt_type);
	free(p->orcpt);
	memset(p, 0, sizeof(*p));
}

/* A keyword for a message: printable, bounded. */
static const char *kwname(const char *kw, char buf[24])
{
	size_t i;

	for (i = 0; kw[i] != '\0' && i < 20; i++)
		buf[i] = kw[i] > 32 && kw[i] < 127 ? kw[i] : '?';
	buf[i] = '\0';
	return buf;
}

static addr_status_t param_value(addr_smtp_t *o, addr_param_t *pm,
    addr_err_t *err)
{
	const char *v = pm->value;
	size_t vlen = v != NULL ? strlen(v) : 0;
	char kb[24];
	str_t tmp = STR_INIT;

	if (pm->kind == ADDR_P_SMTPUTF8) {
		if (v != NULL)
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "SMTPUTF8 takes no value");
		o->smtputf8 = true;
		return ADDR_OK;
	}
	if (v == NULL)
		return addr_seterr(err, ADDR_ERR_PARAM, "%s requires a value",
		    kwname(pm->keyword, kb));
	switch (pm->kind) {
	case ADDR_P_SIZE: {
		uintmax_t n = 0;

		if (vlen > 20)
			goto bad_size;
		for (size_t i = 0; i < vlen; i++) {
			unsigned d;

			if (v[i] < '0' || v[i] > '9')
				goto bad_size;
			d = (unsigned)(v[i] - '0');
			if (n > (UINTMAX_MAX - d) / 10)
				goto bad_size;
			n = n * 10 + d;
		}
		o->has_size = true;
		o->size = n;
		return ADDR_OK;
bad_size:
		return addr_seterr(err, ADDR_ERR_PARAM,
		    "SIZE value is not a valid number");
	}
	case ADDR_P_BODY:
		if (strcasecmp(v, "7BIT") == 0)
			o->body = ADDR_BODY_7BIT;
		else if (strcasecmp(v, "8BITMIME") == 0)
			o->body = ADDR_BODY_8BITMIME;
		else if (strcasecmp(v, "BINARYMIME") == 0)
			o->body = ADDR_BODY_BINARYMIME;
		else
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "BODY must be 7BIT, 8BITMIME or BINARYMIME");
		return ADDR_OK;
	case ADDR_P_RET:
		if (strcasecmp(v, "FULL") == 0)
			o->ret = ADDR_RET_FULL;
		else if (strcasecmp(v, "HDRS") == 0)
			o->ret = ADDR_RET_HDRS;
		else
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "RET must be FULL or HDRS");
		return ADDR_OK;
	case ADDR_P_ENVID:
		if (vlen > ADDR_ENVID_MAX)
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "ENVID longer than %d characters", ADDR_ENVID_MAX);
		if (!addr_xtext_decode(v, vlen, &tmp)) {
			str_release(&tmp);
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "ENVID is not valid xtext");
		}
		o->envid = str_steal(&tmp);
		return ADDR_OK;
	case ADDR_P_AUTH:
		if (!addr_xtext_decode(v, vlen, &tmp)) {
			str_release(&tmp);
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "AUTH is not valid xtext");
		}
		o->auth = str_steal(&tmp);
		return ADDR_OK;
	case ADDR_P_NOTIFY: {
		const char *why = NULL;
		int bits =
		    dsn_notify_parse(v, strlen(v), DSN_NOTIFY_SMTP, &why);

		if (bits < 0)
			return addr_seterr(err, ADDR_ERR_PARAM, "%s", why);
		o->notify = bits;
		return ADDR_OK;
	}
	case ADDR_P_ORCPT: {
		const char *semi = strchr(v, ';');
		size_t tlen;

		if (vlen > ADDR_ORCPT_MAX)
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "ORCPT longer than %d characters", ADDR_ORCPT_MAX);
		if (semi == NULL || semi == v || semi[1] == '\0')
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "ORCPT must be addr-type;address");
		tlen = (size_t)(semi - v);
		for (size_t i = 0; i < tlen; i++)
			if (!addr_is_atext((unsigned char)v[i]))
				return addr_seterr(err, ADDR_ERR_PARAM,
				    "ORCPT address type is not an atom");
		if (!addr_xtext_decode(semi + 1, strlen(semi + 1), &tmp)) {
			str_release(&tmp);
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "ORCPT address is not valid xtext");
		}
		o->orcpt_type = xstrndup(v, tlen);
		o->orcpt = str_steal(&tmp);
		return ADDR_OK;
	}
	default:
		return ADDR_OK;
	}
}

/* Parses "KEY[=VALUE] ..." from s[pos..len). */
static addr_status_t parse_params(const char *s, size_t len, size_t pos,
    bool rcpt, int flags, addr_smtp_t *o, addr_err_t *err)
{
	const unsigned char *u = (const unsigned char *)s;
	bool utf8 = (flags & ADDR_F_SMTPUTF8) != 0;
	char kb[24], nb[8];

	/* Split and check the syntax first: on MAIL, a SMTPUTF8 keyword
	 * anywhere allows UTF-8 in the values before it. */
	for (;;) {
		size_t ks, ke, vs = 0, ve = 0;
		addr_param_t *pm;

		while (pos < len && (s[pos] == ' ' || s[pos] == '\t'))
			pos++;
		if (pos >= len)
			break;
		if (o->nparams == ADDR_SMTP_PARAMS_MAX)
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "too many parameters (at most %d)",
			    ADDR_SMTP_PARAMS_MAX);
		ks = pos;
		while (pos < len && (isalnum(u[pos]) || (pos > ks &&
		    s[pos] == '-')) && u[pos] < 0x80)
			pos++;
		ke = pos;
		if (ke == ks || (pos < len && s[pos] != '=' && s[pos] != ' ' &&
		    s[pos] != '\t'))
			return addr_seterr(err, ADDR_ERR_PARAM,
			    "bad parameter keyword (unexpected %s)",
			    addr_byte_name(pos < len ? u[pos] : ' ', nb));
		if (pos < len && s[pos] == '=') {
			vs = ++pos;
			while (pos < len && s[pos] != ' ' && s[pos] != '\t') {
				unsigned char c = u[pos];

				if (c < 32 || c == 127)
					return addr_seterr(err, ADDR_ERR_PARAM,
					    "%s in parameter value",
					    c ? "control character" :
					    "NUL byte");
				if (c == '=')
					return addr_seterr(err, ADDR_ERR_PARAM,
					    "'=' in parameter value");
				pos++;
			}
			ve = pos;
			if (ve == vs)
				return addr_seterr(err, ADDR_ERR_PARAM,
				    "empty parameter value");
		}
		pm = &o->params[o->nparams++];
		pm->keyword = xstrndup(s + ks, ke - ks);
		pm->value = vs ? xstrndup(s + vs, ve - vs) : NULL;
		pm->kind = ADDR_P_UNKNOWN;
		for (size_t i = 0; i < sizeof(known_params) /
		    sizeof(known_params[0]); i++)
			if (strcasecmp(pm->keyword, known_params[i].name) == 0)
				pm->kind = known_params[i].kind;
		if (!rcpt && pm->kind == ADDR_P_SMTPUTF8)
			utf8 = true;
	}
	for (size_t i = 0; i < o->nparams; i++) {
		addr_param_t *pm = &o->params[i];
		bool is_rcpt_param = false;
		addr_status_t st;

		for (size_t j = 0; j < i; j++)
			if (strcasecmp(o->params[j].keyword, pm->keyword) == 0)
				return addr_seterr(err, ADDR_ERR_PARAM,
				    "duplicate parameter %s",
				    kwname(pm->keyword, kb));
		if (pm->value != NULL) {
			const unsigned char *v = (const unsigned char *)
			    pm->value;
			for (size_t j = 0; v[j] != '\0'; j++) {
				size_t n;

				if (v[j] < 0x80)
					continue;
				if (!utf8)
					return addr_seterr(err, ADDR_ERR_PARAM,
					    "non-ASCII parameter value without "
					    "SMTPUTF8");
				n = str_utf8_len(v + j, strlen(pm->value) - j);
				if (n == 0)
					return addr_seterr(err, ADDR_ERR_PARAM,
					    "invalid UTF-8 in parameter value");
				j += n - 1;
			}
		}
		if (pm->kind == ADDR_P_UNKNOWN) {
			o->nunknown++;
			continue;
		}
		for (size_t k = 0; k < sizeof(known_params) /
		    sizeof(known_params[0]); k++)
			if (known_params[k].kind == pm->kind)
				is_rcpt_param = known_params[k].rcpt;
		if (is_rcpt_param != rcpt)
			return addr_seterr(err, ADDR_ERR_PARAM_UNSUPP,
			    "%s is not a %s parameter",
			    kwname(pm->keyword, kb),
			    rcpt ? "RCPT TO" : "MAIL FROM");
		st = param_value(o, pm, err);
		if (st != ADDR_OK)
			return st;
	}
	return ADDR_OK;
}

/* ---- The command ------------------------------------------------------ */

static addr_status_t parse_cmd(const char *s, size_t len, int flags,
    bool rcpt, addr_smtp_t *o, addr_err_t *err)
{
	const char *kw = rcpt ? "TO:" : "FROM:";
	const char *usage = rcpt ? "Syntax: RCPT TO:<address>" :
	    "Syntax: MAIL FROM:<address>";
	size_t kwlen = strlen(kw), pos, pstart, plen;
	addr_mbox_t mb;
	addr_status_t st;
	bool have_mb = false;
	char nb[8];
	addr_err_t dummy;

	if (err == NULL)
		err = &dummy;
	memset(o, 0, sizeof(*o));
	if (s == NULL || len < kwlen || strncasecmp(s, kw, kwlen) != 0) {
		addr_seterr(err, ADDR_ERR_CMD, "%s", usage);
		goto fail;
	}
	pos = kwlen;
	/* RFC 5321 has no space here, but clients send one so often that
	 * even strict mode takes it (doc/addresses.md). */
	while (pos < len && (s[pos] == ' ' || s[pos] == '\t'))
		pos++;
	if (pos >= len) {
		addr_seterr(err, ADDR_ERR_CMD, "%s", usage);
		goto fail;
	}
	pstart = pos;
	if (s[pos] == '<') {
		o->bracketed = true;
		pos++;
		if (pos < len && s[pos] == '>') {
			o->null_path = true;
			pos++;
		} else {
			if (pos < len && s[pos] == '@') {
				/* A-d-l: "@one,@two:" kept for RFC 5321
				 * section 4.1.2 compatibility, then dropped. */
				for (;;) {
					size_t ds = ++pos;
					const char *why;

					while (pos < len && s[pos] != ',' &&
					    s[pos] != ':' && s[pos] != '>')
						pos++;
					if (pos >= len || s[pos] == '>') {
						addr_seterr(err,
						    ADDR_ERR_SYNTAX,
						    "source route without ':'");
						goto fail;
					}
					if (!addr_valid_domain(s + ds, pos - ds,
					    ADDR_DOM_UTF8 | ADDR_DOM_LITERAL,
					    &why)) {
						addr_seterr(err,
						    ADDR_ERR_SYNTAX,
						    "source route: %s", why);
						goto fail;
					}
					if (s[pos] == ':')
						break;
					if (++pos >= len || s[pos] != '@') {
						addr_seterr(err,
						    ADDR_ERR_SYNTAX,
						    "source route: '@' expected "
						    "after ','");
						goto fail;
					}
				}
				pos++;
				o->had_route = true;
			}
			st = addr_parse_mailbox(s, len, &pos, ">", flags, &mb,
			    err);
			if (st != ADDR_OK)
				goto fail;
			have_mb = true;
			if (pos >= len) {
				addr_seterr(err, ADDR_ERR_SYNTAX,
				    "missing '>' at the end of the address");
				goto fail;
			}
			pos++;
		}
		plen = pos - pstart;
	} else {
		if (!(flags & ADDR_F_NO_BRACKETS)) {
			addr_seterr(err, ADDR_ERR_SYNTAX,
			    "address must be enclosed in <>");
			goto fail;
		}
		st = addr_parse_mailbox(s, len, &pos, " \t", flags, &mb, err);
		if (st != ADDR_OK)
			goto fail;
		have_mb = true;
		plen = pos - pstart + 2;	/* as if it had its <> */
	}
	if (plen > ADDR_PATH_MAX) {
		addr_seterr(err, ADDR_ERR_TOOLONG,
		    "address path longer than %d octets", ADDR_PATH_MAX);
		goto fail;
	}
	if (pos < len && s[pos] != ' ' && s[pos] != '\t') {
		addr_seterr(err, ADDR_ERR_SYNTAX,
		    "unexpected %s after the address",
		    addr_byte_name((unsigned char)s[pos], nb));
		goto fail;
	}
	st = parse_params(s, len, pos, rcpt, flags, o, err);
	if (st != ADDR_OK)
		goto fail;

	if (o->null_path) {
		if (rcpt) {
			addr_seterr(err, ADDR_ERR_SYNTAX,
			    "the null address <> is not a valid recipient");
			goto fail;
		}
		o->addr = xstrdup("");
		o->local = xstrdup("");
		return ADDR_OK;
	}
	if (!mb.has_domain) {
		o->postmaster = rcpt &&
		    strcasecmp(str_cstr(&mb.local), "postmaster") == 0 &&
		    mb.local_raw == 10;
		if (!o->postmaster && !(flags & ADDR_F_NO_DOMAIN)) {
			addr_seterr(err, ADDR_ERR_SYNTAX,
			    "address has no domain (user@domain expected)");
			goto fail;
		}
	}
	o->eightbit = mb.eightbit;
	if (mb.eightbit && !(flags & ADDR_F_SMTPUTF8) &&
	    !(o->smtputf8 && !rcpt)) {
		addr_seterr(err, ADDR_ERR_8BIT,
		    "non-ASCII address requires SMTPUTF8");
		goto fail;
	}
	o->local = xstrdup(str_cstr(&mb.local));
	if (mb.has_domain) {
		str_t a = STR_INIT;

		o->domain = xstrdup(str_cstr(&mb.domain));
		str_cat(&a, o->local);
		str_putc(&a, '@');
		str_cat(&a, o->domain);
		o->addr = str_steal(&a);
	} else {
		o->addr = xstrdup(o->local);
	}
	addr_mbox_free(&mb);
	return ADDR_OK;
fail:
	if (have_mb)
		addr_mbox_free(&mb);
	addr_smtp_free(o);
	return err->status;
}

addr_status_t addr_smtp_mail(const char *arg, size_t len, int flags,
    addr_smtp_t *out, addr_err_t *err)
{
	return parse_cmd(arg, len, flags, false, out, err);
}

addr_status_t addr_smtp_rcpt(const char *arg, size_t len, int flags,
    addr_smtp_t *out, addr_err_t *err)
{
	return parse_cmd(arg, len, flags, true, out, err);
}
