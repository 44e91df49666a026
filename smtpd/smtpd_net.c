/* Network lists: mynetworks and smtpd_client_event_limit_exceptions.
 * The list keeps its addresses and networks; its type:table patterns
 * are entries of a maps_t (maps.h), opened when the list is made. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "mem.h"
#include "smtpd.h"

typedef struct net_pat {
	bool negate;
	int family;		/* AF_INET, AF_INET6, or 0 for a table */
	unsigned char addr[16];
	unsigned bits;
	size_t table;		/* a table: its entry in the list's tables */
} net_pat_t;

struct smtpd_netlist {
	net_pat_t *v;
	size_t n;
	maps_t *tables;		/* the type:table patterns, opened at once */
};

/* Text address -> family and 16 bytes (IPv4 in the first 4).  An
 * IPv4-mapped IPv6 address becomes IPv4. */
static int parse_addr(const char *s, unsigned char out[16])
{
	struct in6_addr a6;

	memset(out, 0, 16);
	if (inet_pton(AF_INET, s, out) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, s, &a6) == 1) {
		static const unsigned char mapped[12] =
		    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (memcmp(a6.s6_addr, mapped, 12) == 0) {
			memcpy(out, a6.s6_addr + 12, 4);
			return AF_INET;
		}
		memcpy(out, a6.s6_addr, 16);
		return AF_INET6;
	}
	return 0;
}

static bool prefix_match(const unsigned char *a, const unsigned char *b,
    unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

static bool parse_pattern(smtpd_netlist_t *l, const char *param, char *tok,
    net_pat_t *p, str_t *err)
{
	char *slash, *text = tok;
	size_t max;

	memset(p, 0, sizeof(*p));
	if (*text == '!') {
		p->negate = true;
		text++;
	}
	/* A table: "type:name" where type is a word (an IPv6 address has
	 * a hex digit or colon first and no letters-only prefix followed
	 * by a colon that inet_pton would reject anyway: we try the
	 * address forms first). */
	slash = strchr(text, '/');
	if (slash)
		*slash = 0;
	char *host = text;
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host[hl - 1] = 0;
		host++;
	}
	p->family = parse_addr(host, p->addr);
	if (p->family == 0) {
		if (slash)
			*slash = '/';
		if (text[0] != '[' && strchr(text, ':') != NULL &&
		    strchr(text, ':') != text) {
			/* Not strict, so that the refusal names the
			 * table: the list is refused all the same. */
			(void)maps_add(l->tables, text, strlen(text), err);
			p->table = maps_count(l->tables) - 1;
			if (maps_broken(l->tables, p->table) != NULL) {
				str_setf(err, "%s: cannot open %s: %s", param,
				    text, maps_broken(l->tables, p->table));
				return false;
			}
			return true;
		}
		str_setf(err, "%s: bad network pattern \"%s\"", param, tok);
		return false;
	}
	max = p->family == AF_INET ? 32 : 128;
	p->bits = (unsigned)max;
	if (slash) {
		unsigned long b;
		bool ok = str_to_ulong(slash + 1, &b);
		/* An IPv4-mapped IPv6 network (Debian's default mynetworks
		 * has [::ffff:127.0.0.0]/104) is matched as the IPv4 network
		 * it maps: its mask counts the 96 bits of the prefix. */
		if (ok && p->family == AF_INET && strchr(host, ':') != NULL) {
			ok = b >= 96;
			b -= ok ? 96 : 0;
		}
		if (!ok || b > max) {
			*slash = '/';
			str_setf(err, "%s: bad network mask in \"%s\"", param, tok);
			return false;
		}
		p->bits = (unsigned)b;
		/* Host bits under the mask mean the writer misunderstood the
		 * notation; refuse rather than guess. */
		unsigned char masked[16];
		memset(masked, 0, sizeof(masked));
		for (unsigned i = 0; i < p->bits; i++)
			if (p->addr[i / 8] & (0x80 >> (i % 8)))
				masked[i / 8] |= (unsigned char)(0x80 >> (i % 8));
		if (memcmp(masked, p->addr, 16) != 0) {
			*slash = '/';
			str_setf(err, "%s: non-null host address bits in \"%s\"",
			    param, tok);
			return false;
		}
	}
	return true;
}

smtpd_netlist_t *smtpd_netlist_new(const char *param, const char *spec,
    str_t *err)
{
	smtpd_netlist_t *l = xcalloc(1, sizeof(*l));
	char *copy = xstrdup(spec ? spec : ""), *cp = copy, *tok;
	size_t cap = 0;

	l->tables = maps_open(param, NULL, 0, NULL, NULL);
	while ((tok = maps_token_cut(&cp)) != NULL) {
		if (l->n == cap) {
			cap = cap ? cap * 2 : 8;
			l->v = xreallocarray(l->v, cap, sizeof(*l->v));
		}
		if (!parse_pattern(l, param, tok, &l->v[l->n], err)) {
			free(copy);
			smtpd_netlist_free(l);
			return NULL;
		}
		l->n++;
	}
	free(copy);
	return l;
}

int smtpd_netlist_match(smtpd_netlist_t *l, const char *addr, str_t *err)
{
	unsigned char bin[16];
	int fam;
	char norm[INET6_ADDRSTRLEN];

	if (l == NULL)
		return 0;
	fam = parse_addr(addr, bin);
	if (fam == 0)
		return 0;
	if (inet_ntop(fam, bin, norm, sizeof(norm)) == NULL)
		return 0;
	for (size_t i = 0; i < l->n; i++) {
		net_pat_t *p = &l->v[i];
		bool hit;
		if (p->family == 0) {
			/* err gets "spec: reason" */
			int rc = maps_get_entry(l->tables, p->table, norm,
			    NULL, err);
			if (rc < 0)
				return -1;
			hit = rc > 0;
		} else {
			hit = p->family == fam && prefix_match(p->addr, bin, p->bits);
		}
		if (hit)
			return p->negate ? 0 : 1;
	}
	return 0;
}

void smtpd_netlist_free(smtpd_netlist_t *l)
{
	if (l == NULL)
		return;
	free(l->v);
	maps_free(l->tables);
	free(l);
}
