/* RFC 5322 address lists in To/Cc/Bcc/From/Sender/Reply-To, parsed
 * leniently (obsolete forms, bare local parts), and the rewriter that
 * replaces addresses while keeping everything around them.
 *
 * Two passes: a tokenizer (atoms, quoted strings, domain literals,
 * specials; comments and folding white space dropped but remembered as
 * gaps between token spans), then a splitter that cuts the token list at
 * top-level commas and group delimiters and parses each piece.  Both are
 * linear and recursion-free, so nested comments cost nothing extra. */
#include <string.h>
#include <strings.h>
#include "addr.h"
#include "mem.h"

enum tok_type { TK_ATOM, TK_QSTR, TK_DLIT, TK_SPECIAL, TK_BAD };

typedef struct tok {
	enum tok_type type;
	char c;			/* TK_SPECIAL: which */
	size_t start, end;	/* span in the value */
	size_t off, len;	/* text (unquoted for TK_QSTR) in the pool */
	const char *bad;	/* TK_BAD: why */
} tok_t;

typedef struct toks {
	tok_t *v;
	size_t n, cap;
	str_t pool;
} toks_t;

static bool is_wsp(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Bytes that end an atom. */
static bool is_delim(unsigned char c)
{
	return c != 0 && strchr("()<>[]:;@\\,.\"", c) != NULL;
}

static tok_t *tok_push(toks_t *t, size_t start)
{
	tok_t *k;

	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 32;
		t->v = xreallocarray(t->v, t->cap, sizeof(*t->v));
	}
	k = &t->v[t->n++];
	memset(k, 0, sizeof(*k));
	k->start = start;
	k->off = str_len(&t->pool);
	return k;
}

static void tokenize(const char *s, size_t len, toks_t *t)
{
	size_t p = 0;

	while (p < len) {
		unsigned char c = (unsigned char)s[p];
		tok_t *k;

		if (is_wsp(c)) {	/* folding included: CRLF/LF + WSP */
			p++;
			continue;
		}
		if (c == '(') {
			int depth = 1;
			size_t start = p++;

			while (p < len && depth > 0) {
				if (s[p] == '\\')
					p++;
				else if (s[p] == '(')
					depth++;
				else if (s[p] == ')')
					depth--;
				p++;
			}
			if (depth > 0) {
				k = tok_push(t, start);
				k->type = TK_BAD;
				k->bad = "unterminated comment";
				k->end = len;
			}
			if (p > len)
				p = len;
			continue;
		}
		k = tok_push(t, p);
		if (c == '"') {
			k->type = TK_QSTR;
			for (p++;; p++) {
				if (p >= len) {
					k->type = TK_BAD;
					k->bad = "unterminated quoted string";
					break;
				}
				c = (unsigned char)s[p];
				if (c == '"') {
					p++;
					break;
				}
				if (c == '\\' && p + 1 < len)
					c = (unsigned char)s[++p];
				if (c == '\r' || c == '\n')	/* unfold */
					continue;
				str_putc(&t->pool, c);
			}
		} else if (c == '[') {
			k->type = TK_DLIT;
			for (;; p++) {
				if (p >= len) {
					k->type = TK_BAD;
					k->bad = "unterminated domain literal";
					break;
				}
				c = (unsigned char)s[p];
				if (c == '\r' || c == '\n')
					continue;
				str_putc(&t->pool, c);
				if (c == ']') {
					p++;
					break;
				}
			}
		} else if (c != 0 && strchr("<>@,;:.", c) != NULL) {
			k->type = TK_SPECIAL;
			k->c = (char)c;
			str_putc(&t->pool, c);
			p++;
		} else if (is_delim(c)) {	/* ) ] \ */
			k->type = TK_BAD;
			k->bad = c == ')' ? "unbalanced ')'" :
			    c == ']' ? "unbalanced ']'" : "stray backslash";
			p++;
		} else {
			k->type = TK_ATOM;
			while (p < len && !is_wsp((unsigned char)s[p]) &&
			    !is_delim((unsigned char)s[p]))
				str_putc(&t->pool, s[p++]);
		}
		k->end = p;
		k->len = str_len(&t->pool) - k->off;
	}
}

static const char *tok_text(const toks_t *t, size_t i)
{
	/* An empty pool has no buffer yet (NULL + 0 is undefined). */
	return t->pool.buf ? t->pool.buf + t->v[i].off : "";
}

static bool is_special(const toks_t *t, size_t i, char c)
{
	return t->v[i].type == TK_SPECIAL && t->v[i].c == c;
}

/* Words a..b joined as written, a single space wherever the source had
 * white space or a comment between two tokens. */
static char *phrase(const toks_t *t, size_t a, size_t b)
{
	str_t s = STR_INIT;

	for (size_t i = a; i < b; i++) {
		if (t->v[i].type == TK_BAD)
			continue;
		if (str_len(&s) > 0 && t->v[i].start > t->v[i - 1].end)
			str_putc(&s, ' ');
		str_append(&s, tok_text(t, i), t->v[i].len);
	}
	return str_steal(&s);
}

static addr_hdr_entry_t *entry_push(addr_hdr_list_t *l)
{
	addr_hdr_entry_t *e;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	e = &l->v[l->n++];
	memset(e, 0, sizeof(*e));
	return e;
}

static void entry_release(addr_hdr_entry_t *e)
{
	free(e->addr);
	free(e->local);
	free(e->domain);
	free(e->display);
	free(e->group);
}

/* Local part and domain from tokens x..y; NULL or why. */
static const char *addr_spec(const toks_t *t, size_t x, size_t y,
    str_t *local, str_t *domain, bool *has_domain)
{
	size_t i = x;
	bool want_word = true;
	const char *why;

	*has_domain = false;
	for (; i < y && !is_special(t, i, '@'); i++) {
		if (t->v[i].type == TK_ATOM || t->v[i].type == TK_QSTR) {
			if (!want_word)
				return "words without '@' or <address>";
			want_word = false;
		} else if (is_special(t, i, '.')) {
			/* Obsolete and sloppy dot placement is tolerated:
			 * addr_externalize quotes such local parts. */
			want_word = true;
		} else {
			return "unexpected character in address";
		}
		str_append(local, tok_text(t, i), t->v[i].len);
	}
	if (i == x)
		return "empty local part";
	for (size_t j = 0; j < str_len(local); j++) {
		unsigned char c = (unsigned char)local->buf[j];
		size_t n;

		if (c < 32 || c == 127)
			return c ? "control character in local part" :
			    "NUL byte in local part";
		if (c < 0x80)
			continue;
		n = str_utf8_len(local->buf + j,
		    str_len(local) - j);
		if (n == 0)
			return "invalid UTF-8 in local part";
		j += n - 1;
	}
	if (i == y) {
		/* The internal form would read it as local@domain. */
		if (str_len(local) == 0)	/* would be the null address */
			return "empty local part without a domain";
		if (memchr(local->buf, '@', str_len(local)) != NULL)
			return "quoted '@' in an address without a domain";
		return NULL;
	}
	i++;			/* '@' */
	if (i < y && t->v[i].type == TK_DLIT) {
		str_append(domain, tok_text(t, i), t->v[i].len);
		i++;
	} else {
		/* Atoms and dots; two atoms in a row ("b.example x") are
		 * not one domain. */
		bool want_atom = true;

		for (; i < y; i++) {
			if (t->v[i].type == TK_ATOM && want_atom)
				want_atom = false;
			else if (is_special(t, i, '.'))
				want_atom = true;
			else
				break;
			str_append(domain, tok_text(t, i), t->v[i].len);
		}
	}
	if (i < y)
		return "unexpected text after the domain";
	if (!addr_valid_domain(str_cstr(domain), str_len(domain),
	    ADDR_DOM_UTF8 | ADDR_DOM_LITERAL, &why))
		return why;
	/* One spelling of the IPv6 tag, as in the SMTP parser. */
	if (domain->buf[0] == '[' &&
	    strncasecmp(domain->buf + 1, "IPv6:", 5) == 0)
		memcpy(domain->buf + 1, "IPv6:", 5);
	*has_domain = true;
	return NULL;
}

/* One list element, tokens a..b (non-empty).  Returns 1 for a good
 * address, 0 otherwise. */
static int parse_entry(const toks_t *t, size_t a, size_t b,
    const char *group, addr_hdr_list_t *l)
{
	addr_hdr_entry_t *e;
	size_t lt = b, gt = b, x = a, y = b;
	str_t local = STR_INIT, domain = STR_INIT;
	const char *why = NULL;
	bool has_domain = false;

	if (l->n >= ADDR_HDR_ADDRS_MAX) {
		l->dropped++;
		return 0;
	}
	e = entry_push(l);
	e->group = group != NULL ? xstrdup(group) : NULL;
	if (group != NULL)
		e->flags |= ADDR_H_GROUP;
	e->start = t->v[a].start;
	e->end = t->v[b - 1].end;
	for (size_t i = a; i < b && why == NULL; i++)
		if (t->v[i].type == TK_BAD)
			why = t->v[i].bad;
	for (size_t i = a; i < b && lt == b; i++)
		if (is_special(t, i, '<'))
			lt = i;
	if (why == NULL && lt < b) {
		for (size_t i = lt + 1; i < b && gt == b; i++)
			if (is_special(t, i, '>'))
				gt = i;
		if (gt == b)
			why = "missing '>'";
		for (size_t i = lt + 1; i < gt && why == NULL; i++)
			if (is_special(t, i, '<'))
				why = "'<' inside <>";
		if (why == NULL && gt + 1 < b)
			why = "unexpected text after '>'";
		/* A display name is a phrase; '@' is tolerated there because
		 * "a@b <a@b>" is common and harmless. */
		for (size_t i = a; i < lt && why == NULL; i++)
			if (t->v[i].type != TK_ATOM &&
			    t->v[i].type != TK_QSTR &&
			    !is_special(t, i, '.') && !is_special(t, i, '@'))
				why = "invalid display name";
		if (why == NULL) {
			e->flags |= ADDR_H_ANGLE;
			if (lt > a)
				e->display = phrase(t, a, lt);
			x = lt + 1;
			y = gt;
			if (x == y)
				why = "empty address <>";
		}
		if (why == NULL && is_special(t, x, '@')) {
			/* Obsolete route "@a,@b:": dropped. */
			while (x < y && !is_special(t, x, ':'))
				x++;
			if (x == y)
				why = "source route without ':'";
			else if (++x == y)
				why = "empty address after the source route";
		}
	}
	if (why == NULL)
		why = addr_spec(t, x, y, &local, &domain, &has_domain);
	if (why == NULL && str_len(&local) + str_len(&domain) + 1 >
	    ADDR_HDR_ADDR_MAX)
		why = "address longer than 998 octets";
	if (why != NULL) {
		e->flags |= ADDR_H_BAD;
		e->error = why;
		l->nbad++;
		str_release(&local);
		str_release(&domain);
		return 0;
	}
	if (e->flags & ADDR_H_ANGLE) {
		/* Replace all between the brackets, route included. */
		e->start = t->v[lt].end;
		e->end = t->v[gt].start;
	} else {
		e->start = t->v[x].start;
		e->end = t->v[y - 1].end;
	}
	e->local = xstrdup(str_cstr(&local));
	if (has_domain) {
		e->flags |= ADDR_H_DOMAIN;
		e->domain = xstrdup(str_cstr(&domain));
		str_putc(&local, '@');
		str_append(&local, str_cstr(&domain), str_len(&domain));
	}
	e->addr = str_steal(&local);
	str_release(&domain);
	return 1;
}

size_t addr_hdr_parse(const char *value, size_t len, addr_hdr_list_t *l)
{
	toks_t t = { NULL, 0, 0, STR_INIT };
	size_t es = 0, good = 0;
	bool in_angle = false, in_group = false, addr_seen = false;
	char *group = NULL;

	tokenize(value, len, &t);
	for (size_t k = 0; k <= t.n; k++) {
		if (k < t.n) {
			if (t.v[k].type != TK_SPECIAL)
				continue;
			switch (t.v[k].c) {
			case '<':
				in_angle = addr_seen = true;
				continue;
			case '>':
				in_angle = false;
				continue;
			case '@':
				addr_seen = true;
				continue;
			case ':':
				/* "name:" before any address starts a group;
				 * elsewhere ':' belongs to a route or is an
				 * error of the entry. */
				if (in_angle || in_group || addr_seen)
					continue;
				for (size_t i = es; i < k; i++) {
					if (t.v[i].type != TK_BAD)
						continue;
					/* Report the damaged group name. */
					good += parse_entry(&t, es, k, NULL, l);
					break;
				}
				group = phrase(&t, es, k);
				in_group = true;
				l->ngroups++;
				es = k + 1;
				continue;
			case ',':
			case ';':
				if (in_angle)
					continue;
				break;
			default:
				continue;
			}
		}
		/* End of a list element: a comma, ';' (closing a group, or
		 * taken as a comma outside one), or the end. */
		if (k > es)
			good += parse_entry(&t, es, k, group, l);
		if (k < t.n && t.v[k].c == ';' && in_group) {
			in_group = false;
			free(group);
			group = NULL;
		}
		es = k + 1;
		addr_seen = in_angle = false;
	}
	free(group);
	free(t.v);
	str_release(&t.pool);
	return good;
}

void addr_hdr_list_free(addr_hdr_list_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		entry_release(&l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

size_t addr_hdr_rewrite(const char *value, size_t len, addr_hdr_map_fn fn,
    void *ctx, str_t *out)
{
	addr_hdr_list_t l = ADDR_HDR_LIST_INIT;
	str_t na = STR_INIT;
	size_t pos = 0, changed = 0;

	addr_hdr_parse(value, len, &l);
	for (size_t i = 0; i < l.n; i++) {
		addr_hdr_entry_t *e = &l.v[i];

		if (e->flags & ADDR_H_BAD)
			continue;
		str_reset(&na);
		if (!fn(e, &na, ctx))
			continue;
		str_append(out, value + pos, e->start - pos);
		if (str_len(&na) == 0) {
			if (!(e->flags & ADDR_H_ANGLE))
				str_cat(out, "<>");
		} else {
			addr_externalize(str_cstr(&na), out);
		}
		pos = e->end;
		changed++;
	}
	str_append(out, value + pos, len - pos);
	str_release(&na);
	addr_hdr_list_free(&l);
	return changed;
}
