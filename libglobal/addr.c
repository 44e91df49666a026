/* Mail addresses: errors, character classes, the RFC 5321 mailbox parser
 * shared by the SMTP and internal-form code, domain and literal
 * validation, quoting, and the small helpers (split, lower-case).
 * See addr.h and doc/addresses.md. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include "addr.h"
#include "mem.h"

/* ---- Errors ----------------------------------------------------------- */

addr_status_t addr_seterr(addr_err_t *err, addr_status_t status,
    const char *fmt, ...)
{
	if (err != NULL) {
		va_list ap;
		err->status = status;
		va_start(ap, fmt);
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
		va_end(ap);
	}
	return status;
}

void addr_err_reply(const addr_err_t *e, bool is_rcpt, int *code,
    const char **dsn)
{
	int c;
	const char *d;

	switch (e->status) {
	case ADDR_OK:
		c = 250;
		d = is_rcpt ? "2.1.5" : "2.1.0";
		break;
	case ADDR_ERR_SYNTAX:
	case ADDR_ERR_TOOLONG:
		/* RFC 3463: X.1.7 bad sender, X.1.3 bad recipient syntax. */
		c = 501;
		d = is_rcpt ? "5.1.3" : "5.1.7";
		break;
	case ADDR_ERR_8BIT:
		c = 553;	/* RFC 6531 section 3.6.2 */
		d = "5.6.7";
		break;
	case ADDR_ERR_PARAM_UNSUPP:
		c = 555;	/* RFC 5321: parameters not recognised */
		d = "5.5.4";
		break;
	case ADDR_ERR_CMD:
	case ADDR_ERR_PARAM:
	default:
		c = 501;
		d = "5.5.4";
		break;
	}
	if (code != NULL)
		*code = c;
	if (dsn != NULL)
		*dsn = d;
}

/* ---- Character classes ------------------------------------------------ */

bool addr_is_atext(int c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	switch (c) {
	case '!': case '#': case '$': case '%': case '&': case '\'':
	case '*': case '+': case '-': case '/': case '=': case '?':
	case '^': case '_': case '`': case '{': case '|': case '}':
	case '~':
		return true;
	default:
		return false;
	}
}

const char *addr_byte_name(int c, char buf[8])
{
	c &= 0xff;
	if (c > 32 && c < 127 && c != '\'')
		snprintf(buf, 8, "'%c'", c);
	else if (c == ' ')
		snprintf(buf, 8, "space");
	else
		snprintf(buf, 8, "\\x%02X", (unsigned)c);
	return buf;
}

/* ---- Address literals and domains ------------------------------------- */

int addr_ip_literal(const char *dom, size_t len, void *bin)
{
	char buf[INET6_ADDRSTRLEN + 8];
	unsigned char tmp[16];
	const char *in;
	size_t n;
	int af = AF_INET;

	if (dom == NULL || len < 3 || dom[0] != '[' || dom[len - 1] != ']')
		return 0;
	in = dom + 1;
	n = len - 2;
	if (n > 5 && strncasecmp(in, "IPv6:", 5) == 0) {
		af = AF_INET6;
		in += 5;
		n -= 5;
	}
	if (n == 0 || n >= sizeof(buf) || memchr(in, '\0', n) != NULL)
		return 0;
	memcpy(buf, in, n);
	buf[n] = '\0';
	/* inet_pton accepts exactly dotted-quad decimal for AF_INET (no
	 * octal, hex or short forms) and the RFC 4291 text forms for
	 * AF_INET6, without zone indexes. */
	if (inet_pton(af, buf, tmp) != 1)
		return 0;
	if (bin != NULL)
		memcpy(bin, tmp, af == AF_INET ? 4 : 16);
	return af;
}

bool addr_is_ip_literal(const char *dom)
{
	return dom != NULL && addr_ip_literal(dom, strlen(dom), NULL) != 0;
}

/* Why a bracketed domain is not an IP literal we accept. */
static const char *literal_why(const char *dom, size_t len)
{
	if (len < 2 || dom[len - 1] != ']' ||
	    memchr(dom + 1, ']', len - 2) != NULL)
		return "address literal without a closing ]";
	if (len > 6 && strncasecmp(dom + 1, "IPv6:", 5) == 0)
		return "invalid IPv6 address literal";
	if (memchr(dom + 1, ':', len - 2) != NULL)
		return "unsupported address literal (only [IPv4] and "
		    "[IPv6:...] are accepted)";
	return "invalid IPv4 address literal";
}

bool addr_valid_domain(const char *name, size_t len, int flags,
    const char **why)
{
	const char *w = NULL;
	size_t label = 0;
	bool numeric = true;

	if (len == 0) {
		w = "empty domain name";
		goto bad;
	}
	if (name[0] == '[') {
		if (!(flags & ADDR_DOM_LITERAL))
			w = "address literal not allowed here";
		else if (len > ADDR_DOMAIN_MAX)
			w = "domain longer than 255 octets";
		else if (addr_ip_literal(name, len, NULL) == 0)
			w = literal_why(name, len);
		goto bad;
	}
	if (len > ADDR_DOMAIN_MAX) {
		w = "domain longer than 255 octets";
		goto bad;
	}
	if (name[len - 1] == '.') {
		if (!(flags & ADDR_DOM_TRAILING_DOT) || len == 1) {
			w = "domain name ends with a dot";
			goto bad;
		}
		len--;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == '.') {
			if (label == 0) {
				w = "empty label in domain name";
				goto bad;
			}
			if (name[i - 1] == '-') {
				w = "domain label starts or ends with a hyphen";
				goto bad;
			}
			label = 0;
			continue;
		}
		if (c == '-') {
			if (label == 0) {
				w = "domain label starts or ends with a hyphen";
				goto bad;
			}
			numeric = false;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			numeric = false;
		} else if (c >= '0' && c <= '9') {
			;
		} else if (c >= 0x80) {
			size_t n;

			if (!(flags & ADDR_DOM_UTF8)) {
				w = "non-ASCII character in domain name";
				goto bad;
			}
			n = str_utf8_len(name + i,
			    len - i);
			if (n == 0) {
				w = "invalid UTF-8 in domain name";
				goto bad;
			}
			numeric = false;
			label += n - 1;
			i += n - 1;
		} else if (c < 32 || c == 127) {
			w = c == 0 ? "NUL byte in domain name" :
			    "control character in domain name";
			goto bad;
		} else {
			w = "invalid character in domain name "
			    "(letters, digits, '-' and '.' only)";
			goto bad;
		}
		if (++label > ADDR_LABEL_MAX) {
			w = "domain label longer than 63 octets";
			goto bad;
		}
	}
	if (label == 0) {
		w = "empty label in domain name";
		goto bad;
	}
	if (name[len - 1] == '-') {
		w = "domain label starts or ends with a hyphen";
		goto bad;
	}
	if (numeric && !(flags & ADDR_DOM_NUMERIC)) {
		w = "numeric domain name (write an address literal such as "
		    "[192.0.2.1])";
		goto bad;
	}
	return true;
bad:
	if (why != NULL)
		*why = w;
	return w == NULL;
}

/* ---- The RFC 5321 mailbox --------------------------------------------- */

void addr_mbox_free(addr_mbox_t *mb)
{
	str_release(&mb->local);
	str_release(&mb->domain);
}

static bool has_double_dot(const char *l, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (l[i] == '.' && l[i - 1] == '.')
			return true;
	return false;
}

static bool is_stop(const char *stop, unsigned char c)
{
	return c != 0 && strchr(stop, c) != NULL;
}

static addr_status_t ctl_err(addr_err_t *err, unsigned char c,
    const char *where)
{
	return addr_seterr(err, ADDR_ERR_SYNTAX, "%s in %s",
	    c == 0 ? "NUL byte" : "control character", where);
}

/* What quoted and dot strings of a local part both refuse, at u[0]
 * (left bytes there): control characters and bad UTF-8.  The length of
 * the character (above 1 for UTF-8, which marks mb eight-bit), or 0
 * with err set. */
static size_t local_char(const unsigned char *u, size_t left,
    addr_mbox_t *mb, addr_err_t *err)
{
	size_t n;

	if (u[0] < 32 || u[0] == 127) {
		ctl_err(err, u[0], "local part");
		return 0;
	}
	if (u[0] < 0x80)
		return 1;
	if ((n = str_utf8_len(u, left)) == 0) {
		addr_seterr(err, ADDR_ERR_SYNTAX,
		    "invalid UTF-8 in local part");
		return 0;
	}
	mb->eightbit = true;
	return n;
}

addr_status_t addr_parse_mailbox(const char *s, size_t len, size_t *pos,
    const char *stop, int flags, addr_mbox_t *mb, addr_err_t *err)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t p = *pos, start = p, dstart, w;
	const char *why;
	char nb[8];
	addr_err_t dummy;

	if (err == NULL)
		err = &dummy;
	mb->local = (str_t)STR_INIT;
	mb->domain = (str_t)STR_INIT;
	mb->has_domain = false;
	mb->eightbit = false;
	mb->local_raw = 0;

	if (p < len && s[p] == '"') {
		/* Quoted-string: qtextSMTP or a backslash pair, stored
		 * without the quoting. */
		p++;
		for (;;) {
			unsigned char c;

			if (p >= len)
				goto unterminated;
			c = u[p];
			if (c == '"') {
				p++;
				break;
			}
			if (c == '\\' && ++p >= len)
				goto unterminated;
			if ((w = local_char(u + p, len - p, mb, err)) == 0)
				goto fail;
			str_append(&mb->local, s + p, w);
			p += w;
		}
	} else {
		/* Dot-string, checked byte by byte for a precise reason. */
		while (p < len && s[p] != '@' && !is_stop(stop, u[p])) {
			unsigned char c = u[p];

			if ((w = local_char(u + p, len - p, mb, err)) == 0)
				goto fail;
			if (w > 1) {
				p += w;
				continue;
			}
			if (c != '.' && !addr_is_atext(c)) {
				addr_seterr(err, ADDR_ERR_SYNTAX,
				    "invalid character %s in local part "
				    "(quote it)", addr_byte_name(c, nb));
				goto fail;
			}
			p++;
		}
		if (p == start) {
			addr_seterr(err, ADDR_ERR_SYNTAX, "empty local part");
			goto fail;
		}
		str_append(&mb->local, s + start, p - start);
		if (!(flags & ADDR_F_LAX_DOTS)) {
			const char *l = str_cstr(&mb->local);
			size_t n = str_len(&mb->local);

			if (l[0] == '.' || l[n - 1] == '.') {
				addr_seterr(err, ADDR_ERR_SYNTAX,
				    "local part starts or ends with a dot");
				goto fail;
			}
			if (has_double_dot(l, n)) {
				addr_seterr(err, ADDR_ERR_SYNTAX,
				    "two dots in a row in local part");
				goto fail;
			}
		}
	}
	mb->local_raw = p - start;
	if (mb->local_raw > ADDR_LOCAL_MAX && !(flags & ADDR_F_LONG_LOCAL)) {
		addr_seterr(err, ADDR_ERR_TOOLONG,
		    "local part longer than %d octets", ADDR_LOCAL_MAX);
		goto fail;
	}
	if (p < len && s[p] == '@') {
		dstart = ++p;
		while (p < len && !is_stop(stop, u[p])) {
			if (u[p] < 32 || u[p] == 127) {
				ctl_err(err, u[p], "domain");
				goto fail;
			}
			if (u[p] >= 0x80)
				mb->eightbit = true;
			p++;
		}
		if (p - dstart > ADDR_DOMAIN_MAX) {
			addr_seterr(err, ADDR_ERR_TOOLONG,
			    "domain longer than %d octets", ADDR_DOMAIN_MAX);
			goto fail;
		}
		if (!addr_valid_domain(s + dstart, p - dstart,
		    ADDR_DOM_UTF8 | ADDR_DOM_LITERAL, &why)) {
			addr_seterr(err, ADDR_ERR_SYNTAX, "%s", why);
			goto fail;
		}
		str_append(&mb->domain, s + dstart, p - dstart);
		/* One spelling of the IPv6 tag, so that equal literals
		 * compare equal. */
		if (mb->domain.buf[0] == '[' &&
		    strncasecmp(mb->domain.buf + 1, "IPv6:", 5) == 0)
			memcpy(mb->domain.buf + 1, "IPv6:", 5);
		mb->has_domain = true;
	} else if (p < len && !is_stop(stop, u[p])) {
		addr_seterr(err, ADDR_ERR_SYNTAX,
		    "unexpected %s after the local part",
		    addr_byte_name(u[p], nb));
		goto fail;
	} else if (str_len(&mb->local) == 0) {
		/* "" alone would be the null address in internal form. */
		addr_seterr(err, ADDR_ERR_SYNTAX,
		    "empty local part without a domain");
		goto fail;
	} else if (memchr(str_cstr(&mb->local), '@', str_len(&mb->local))) {
		/* The internal form would read it as local@domain. */
		addr_seterr(err, ADDR_ERR_SYNTAX,
		    "quoted '@' in an address without a domain");
		goto fail;
	}
	*pos = p;
	return ADDR_OK;
unterminated:
	addr_seterr(err, ADDR_ERR_SYNTAX, "unterminated quoted local part");
fail:
	addr_mbox_free(mb);
	return err->status;
}

/* ---- Internal and external forms -------------------------------------- */

bool addr_local_needs_quote(const char *l, size_t n)
{
	if (n == 0 || l[0] == '.' || l[n - 1] == '.')
		return true;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)l[i];

		if (c == '.') {
			if (l[i - 1] == '.')
				return true;
		} else if (c < 0x80 && !addr_is_atext(c)) {
			return true;
		}
	}
	return false;
}

void addr_externalize(const char *in, str_t *out)
{
	const char *at = strrchr(in, '@');
	size_t n = at != NULL ? (size_t)(at - in) : strlen(in);

	if (*in == '\0')
		return;
	if (addr_local_needs_quote(in, n)) {
		str_putc(out, '"');
		for (size_t i = 0; i < n; i++) {
			if (in[i] == '"' || in[i] == '\\')
				str_putc(out, '\\');
			str_putc(out, in[i]);
		}
		str_putc(out, '"');
	} else {
		str_append(out, in, n);
	}
	if (at != NULL)
		str_cat(out, at);
}

addr_status_t addr_internalize(const char *ext, size_t len, int flags,
    str_t *out, addr_err_t *err)
{
	addr_mbox_t mb;
	size_t pos = 0;
	addr_status_t st;
	addr_err_t dummy;

	if (err == NULL)
		err = &dummy;
	if (len == 0)
		return ADDR_OK;
	st = addr_parse_mailbox(ext, len, &pos, "", flags, &mb, err);
	if (st != ADDR_OK)
		return st;
	if (!mb.has_domain && !(flags & ADDR_F_NO_DOMAIN))
		st = addr_seterr(err, ADDR_ERR_SYNTAX,
		    "address has no domain (user@domain expected)");
	else if (mb.eightbit && !(flags & ADDR_F_SMTPUTF8))
		st = addr_seterr(err, ADDR_ERR_8BIT,
		    "non-ASCII address requires SMTPUTF8");
	if (st == ADDR_OK) {
		str_append(out, str_cstr(&mb.local), str_len(&mb.local));
		if (mb.has_domain) {
			str_putc(out, '@');
			str_append(out, str_cstr(&mb.domain),
			    str_len(&mb.domain));
		}
	}
	addr_mbox_free(&mb);
	return st;
}

/* ---- Helpers ---------------------------------------------------------- */

void addr_split(const char *in, const char *delims, addr_split_t *o)
{
	const char *at = strrchr(in, '@');
	size_t n = at != NULL ? (size_t)(at - in) : strlen(in);
	size_t cut = n;
	bool skip_dash = false;

	memset(o, 0, sizeof(*o));
	if (delims != NULL && *delims != '\0' && n > 0) {
		/* Mailing list names keep their '-' whatever the set. */
		if (strchr(delims, '-') != NULL &&
		    ((n >= 6 && strncasecmp(in, "owner-", 6) == 0) ||
		    (n >= 8 && strncasecmp(in + n - 8, "-request", 8) == 0)))
			skip_dash = true;
		for (size_t i = 0; i < n; i++) {
			if (in[i] == '\0' || strchr(delims, in[i]) == NULL ||
			    (skip_dash && in[i] == '-'))
				continue;
			cut = i;
			break;
		}
		if (cut == 0)	/* "+foo": no user to speak of */
			cut = n;
	}
	o->user = xstrndup(in, cut);
	if (cut < n) {
		o->delim = in[cut];
		o->ext = xstrndup(in + cut + 1, n - cut - 1);
	}
	if (at != NULL)
		o->domain = xstrdup(at + 1);
}

void addr_split_free(addr_split_t *s)
{
	free(s->user);
	free(s->ext);
	free(s->domain);
	memset(s, 0, sizeof(*s));
}

char *addr_lower(char *s, int flags)
{
	char *at = strrchr(s, '@');
	char *p = (flags & ADDR_LOWER_LOCAL) || at == NULL ? s : at + 1;

	if (at == NULL && !(flags & ADDR_LOWER_LOCAL))
		return s;
	for (; *p != '\0'; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return s;
}
