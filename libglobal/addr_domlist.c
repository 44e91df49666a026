/* Domain lists for mydestination, relay_domains and the like: names,
 * ".parent" patterns, address literals, lookup tables and negation, first
 * match wins.  See addr.h for the pattern forms. */
#include <string.h>
#include <strings.h>
#include "addr.h"
#include "maps.h"
#include "mem.h"

typedef struct pattern {
	bool negate;
	char *name;		/* lower-case, no trailing dot; NULL for tables */
	bool subdomains;	/* ".name": subdomains only */
	size_t table;		/* a table: its entry in the list's tables */
} pattern_t;

struct addr_domlist {
	char *param;
	int flags;
	pattern_t *v;
	size_t n;
	maps_t *tables;		/* the type:table patterns, opened at once */
};

void addr_domlist_free(addr_domlist_t *l)
{
	if (l == NULL)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
	maps_free(l->tables);
	free(l->param);
	free(l);
}

/* Lower-cases d into buf without one trailing dot; false if it cannot
 * be a domain (empty, too long). */
static bool fold(const char *d, size_t n, char *buf, size_t size)
{
	if (n > 0 && d[n - 1] == '.')
		n--;
	if (n == 0 || n >= size)
		return false;
	for (size_t i = 0; i < n; i++)
		buf[i] = (d[i] >= 'A' && d[i] <= 'Z') ?
		    (char)(d[i] - 'A' + 'a') : d[i];
	buf[n] = '\0';
	return true;
}

static bool add_pattern(addr_domlist_t *l, const char *tok, size_t n,
    str_t *err)
{
	pattern_t pt = { false, NULL, false, 0 };
	char buf[ADDR_DOMAIN_MAX + 2];
	const char *why;

	if (n > 0 && tok[0] == '!') {
		pt.negate = true;
		tok++;
		n--;
	}
	if (n == 0) {
		str_setf(err, "%s: '!' without a pattern", l->param);
		return false;
	}
	if (tok[0] != '[' && memchr(tok, ':', n) != NULL) {
		/* Strict: a table that does not open refuses the list, with
		 * "param: reason". */
		if (!maps_add(l->tables, tok, n, err))
			return false;
		pt.table = maps_count(l->tables) - 1;
	} else {
		if (tok[0] == '/') {
			str_setf(err, "%s: file patterns are not supported "
			    "(use texthash:%.*s)", l->param, (int)n, tok);
			return false;
		}
		if (tok[0] == '.') {
			pt.subdomains = true;
			tok++;
			n--;
		}
		why = NULL;
		if (!fold(tok, n, buf, sizeof(buf)))
			why = n == 0 || (n == 1 && tok[0] == '.') ? "empty" :
			    "domain longer than 255 octets";
		else
			addr_valid_domain(buf, strlen(buf), ADDR_DOM_LITERAL |
			    ADDR_DOM_NUMERIC | ADDR_DOM_UTF8, &why);
		if (why != NULL) {
			str_setf(err, "%s: bad domain pattern \"%.*s\": %s",
			    l->param, (int)(n > 100 ? 100 : n), tok, why);
			return false;
		}
		if (pt.subdomains && buf[0] == '[') {
			str_setf(err, "%s: \".\" before an address literal",
			    l->param);
			return false;
		}
		pt.name = xstrdup(buf);
	}
	l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
	l->v[l->n++] = pt;
	return true;
}

addr_domlist_t *addr_domlist_new(const char *name, const char *spec,
    int flags, str_t *err)
{
	addr_domlist_t *l = xcalloc(1, sizeof(*l));
	const char *p = spec != NULL ? spec : "", *tok;	/* unset: empty */
	size_t len;
	int rc;

	l->param = xstrdup(name != NULL ? name : "domain list");
	l->flags = flags;
	l->tables = maps_open(l->param, NULL, MAPS_FLAG_STRICT, NULL, NULL);
	/* Entries end at white space or a comma, except inside the braces
	 * of inline:{ ... } and friends. */
	while ((rc = maps_token(&p, &tok, &len)) != 0) {
		if (rc < 0) {
			str_setf(err, "%s: missing '}'", l->param);
			goto fail;
		}
		if (!add_pattern(l, tok, len, err))
			goto fail;
	}
	return l;
fail:
	addr_domlist_free(l);
	return NULL;
}

/* 1/0/-1 for a table lookup of key; err gets "spec: reason". */
static int table_has(addr_domlist_t *l, pattern_t *pt, const char *key,
    str_t *err)
{
	return maps_get_entry(l->tables, pt->table, key, NULL, err);
}

static int match_one(addr_domlist_t *l, pattern_t *pt, const char *d,
    size_t dn, str_t *err)
{
	bool parent = (l->flags & ADDR_DOMLIST_PARENT) != 0;

	if (pt->name == NULL) {
		char key[ADDR_DOMAIN_MAX + 3];
		int r = table_has(l, pt, d, err);

		if (r != 0 || d[0] == '[')
			return r;
		/* Parents: ".example.com" keys always, "example.com" keys
		 * with parent_domain_matches_subdomains. */
		for (const char *dot = strchr(d, '.'); dot != NULL;
		    dot = strchr(dot + 1, '.')) {
			if ((r = table_has(l, pt, dot, err)) != 0)
				return r;
			if (parent && dot[1] != '\0') {
				bcopy_str(key, sizeof(key), dot + 1);
				if ((r = table_has(l, pt, key, err)) != 0)
					return r;
			}
		}
		return 0;
	}
	{
		size_t pn = strlen(pt->name);

		if (!pt->subdomains && strcmp(d, pt->name) == 0)
			return 1;
		if ((pt->subdomains || parent) && pt->name[0] != '[' &&
		    dn > pn + 1 && d[dn - pn - 1] == '.' &&
		    strcmp(d + dn - pn, pt->name) == 0)
			return 1;
	}
	return 0;
}

int addr_domlist_match(addr_domlist_t *l, const char *domain, str_t *err)
{
	char d[ADDR_DOMAIN_MAX + 2];
	size_t dn;

	if (l == NULL || domain == NULL ||
	    !fold(domain, strlen(domain), d, sizeof(d)))
		return 0;
	dn = strlen(d);
	for (size_t i = 0; i < l->n; i++) {
		int r = match_one(l, &l->v[i], d, dn, err);

		if (r < 0)
			return -1;
		if (r > 0)
			return l->v[i].negate ? 0 : 1;
	}
	return 0;
}
