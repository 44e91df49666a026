/* cidr: a file of "network/prefix result" rules, IPv4 and IPv6, read
 * into memory when the table is opened (as in Postfix's cidr_table(5)).
 *
 *   # comment
 *   192.168.0.0/16     REJECT
 *   10.1.2.3           OK                (a single address: /32 or /128)
 *   2001:db8::/32      permit
 *   !10.0.0.0/8        not ten           (matches what is outside)
 *   if 172.16.0.0/12
 *   172.16.1.0/24      inner
 *   endif
 *
 * The key is an address; rules are tried in file order and the first
 * match answers.  A key that is not an address is not found.  An address
 * with host bits set below its prefix, a bad prefix, a missing result or
 * an unbalanced if/endif is an error at open time ("file:line: ...").
 * IPv4 and IPv6 never match each other, except that a key written as an
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d) is looked up as IPv4. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "dict.h"
#include "mem.h"

enum cidr_kind { CIDR_MATCH, CIDR_IF, CIDR_ENDIF };

struct cidr_rule {
	enum cidr_kind kind;
	bool negate;
	int family;		/* AF_INET, AF_INET6 */
	unsigned prefix;	/* bits */
	uint8_t addr[16];
	size_t endif;		/* CIDR_IF: index of its endif */
	char *result;		/* CIDR_MATCH */
};

typedef struct dict_cidr {
	dict_t d;
	struct cidr_rule *rules;
	size_t n, cap;
} dict_cidr_t;

struct cidr_parse {
	dict_cidr_t *c;
	dict_nest_t nest;	/* the open if rules */
};

static bool blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v'
	    || c == '\f';
}

static bool prefix_match(const uint8_t *a, const uint8_t *net, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, net, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[full] ^ net[full]) & (uint8_t)(0xff << (8 - rest))) == 0;
}

/* Parses an address (optionally in brackets); family 0 when it is none. */
static int parse_addr(const char *s, size_t len, uint8_t *out)
{
	char buf[INET6_ADDRSTRLEN + 8];

	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof(buf))
		return 0;
	memcpy(buf, s, len);
	buf[len] = 0;
	if (inet_pton(AF_INET, buf, out) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, buf, out) == 1)
		return AF_INET6;
	return 0;
}

/* "addr[/prefix]" into r; message in err on failure. */
static bool parse_network(const char *pat, struct cidr_rule *r, str_t *err)
{
	const char *slash = strchr(pat, '/');
	size_t alen = slash ? (size_t)(slash - pat) : strlen(pat);
	unsigned long bits;
	char *end;

	r->family = parse_addr(pat, alen, r->addr);
	if (r->family == 0) {
		str_set(err, "bad network address \"");
		str_quote_printable(err, pat, alen);
		str_cat(err, "\"");
		return false;
	}
	r->prefix = r->family == AF_INET ? 32 : 128;
	if (slash != NULL) {
		if (slash[1] < '0' || slash[1] > '9') {
			str_setf(err, "bad prefix length in \"%s\"", pat);
			return false;
		}
		bits = strtoul(slash + 1, &end, 10);
		if (*end != 0 || bits > r->prefix) {
			str_setf(err, "bad prefix length in \"%s\" (0 to %u)", pat,
			    r->prefix);
			return false;
		}
		r->prefix = (unsigned)bits;
	}
	/* Host bits set: the administrator meant another network. */
	for (unsigned i = r->prefix; i < (r->family == AF_INET ? 32u : 128u); i++) {
		if (r->addr[i / 8] & (0x80 >> (i % 8))) {
			str_setf(err, "non-zero host bits in \"%s\"", pat);
			return false;
		}
	}
	return true;
}

static struct cidr_rule *new_rule(dict_cidr_t *c)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->rules = xreallocarray(c->rules, c->cap, sizeof(*c->rules));
	}
	memset(&c->rules[c->n], 0, sizeof(c->rules[0]));
	return &c->rules[c->n++];
}

/* Ends the word that starts s (NUL over the blank after it) and returns
 * what follows the blanks after it ("" at the end of the line). */
static char *first_word(char *s)
{
	while (*s && !blank((unsigned char)*s))
		s++;
	if (*s)
		*s++ = 0;
	while (blank((unsigned char)*s))
		s++;
	return s;
}

static int cidr_line(char *line, const char *file, int lineno, void *ctx,
    str_t *err)
{
	struct cidr_parse *p = ctx;
	dict_cidr_t *c = p->c;
	struct cidr_rule r;
	str_t why = STR_INIT;
	char *pat = line, *rest;
	size_t open;

	memset(&r, 0, sizeof(r));
	rest = first_word(pat);
	if (strcmp(pat, "endif") == 0) {
		if (*rest != 0) {
			str_setf(err, "%s:%d: text after \"endif\"", file, lineno);
			return -1;
		}
		if (!dict_nest_pop(&p->nest, &open, file, lineno, err))
			return -1;
		c->rules[open].endif = c->n;
		new_rule(c)->kind = CIDR_ENDIF;
		return 0;
	}
	if (strcmp(pat, "if") == 0) {
		r.kind = CIDR_IF;
		pat = rest;
		rest = first_word(pat);
		if (*pat == 0) {
			str_setf(err, "%s:%d: \"if\" without a network", file, lineno);
			return -1;
		}
		if (*rest != 0) {
			str_setf(err, "%s:%d: text after \"if %s\"", file, lineno, pat);
			return -1;
		}
	} else if (*rest == 0) {
		str_setf(err, "%s:%d: missing result after \"", file, lineno);
		str_quote_printable(err, pat, strlen(pat));
		str_cat(err, "\"");
		return -1;
	}
	if (*pat == '!') {
		r.negate = true;
		pat++;
	}
	if (!parse_network(pat, &r, &why)) {
		str_setf(err, "%s:%d: %s", file, lineno, str_cstr(&why));
		str_release(&why);
		return -1;
	}
	str_release(&why);
	if (r.kind == CIDR_MATCH) {
		if (strlen(rest) > DICT_VALUE_MAX) {
			str_setf(err, "%s:%d: result too long", file, lineno);
			return -1;
		}
		r.result = xstrdup(rest);
	} else {
		dict_nest_push(&p->nest, c->n, lineno);
	}
	*new_rule(c) = r;
	return 0;
}

static bool rule_matches(const struct cidr_rule *r, int family,
    const uint8_t *a)
{
	bool m = r->family == family && prefix_match(a, r->addr, r->prefix);

	return m != r->negate;
}

static enum dict_status cidr_get(dict_t *d, const char *key, const char **value)
{
	dict_cidr_t *c = (dict_cidr_t *)d;
	uint8_t a[16];
	int family = parse_addr(key, strlen(key), a);
	size_t i = 0;

	if (family == 0)
		return DICT_STAT_NOTFOUND;
	/* ::ffff:a.b.c.d is an IPv4 client seen through an IPv6 socket. */
	if (family == AF_INET6 && memcmp(a, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
		memmove(a, a + 12, 4);
		family = AF_INET;
	}
	while (i < c->n) {
		const struct cidr_rule *r = &c->rules[i];

		switch (r->kind) {
		case CIDR_ENDIF:
			i++;
			break;
		case CIDR_IF:
			i = rule_matches(r, family, a) ? i + 1 : r->endif + 1;
			break;
		case CIDR_MATCH:
			if (rule_matches(r, family, a)) {
				*value = r->result;
				return DICT_STAT_FOUND;
			}
			i++;
			break;
		}
	}
	return DICT_STAT_NOTFOUND;
}

static void cidr_free(dict_t *d)
{
	dict_cidr_t *c = (dict_cidr_t *)d;

	for (size_t i = 0; i < c->n; i++)
		free(c->rules[i].result);
	free(c->rules);
}

dict_t *dict_cidr_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	dict_cidr_t *c = (dict_cidr_t *)dict_alloc(sizeof(*c), spec, flags);
	struct cidr_parse p = { .c = c };
	str_t why = STR_INIT;
	int rc;

	c->d.get = cidr_get;
	c->d.free = cidr_free;
	c->d.raw_key = true;
	rc = dict_text_lines(name, cidr_line, &p, &why);
	if (rc == 0 && !dict_nest_closed(&p.nest, name, &why))
		rc = -1;
	dict_nest_free(&p.nest);
	if (rc < 0) {
		str_setf(err, "%s: %s", spec, str_cstr(&why));
		str_release(&why);
		dict_close(&c->d);
		return NULL;
	}
	str_release(&why);
	return &c->d;
}
