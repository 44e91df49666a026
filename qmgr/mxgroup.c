/* Destination grouping by MX hosts: keys and their cache (mxgroup.h,
 * doc/scheduler.md section 11). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "mxgroup.h"
#include "htable.h"
#include "mem.h"

enum mxg_need mxgroup_nexthop(const char *nexthop, char *host, size_t size,
    unsigned *port)
{
	dns_nexthop_t nh;
	str_t why = STR_INIT;
	int rc = dns_nexthop_parse(nexthop, 0, &nh, &why);

	str_release(&why);
	*port = 0;
	if (rc < 0 || nh.bracketed || nh.literal || strlen(nh.host) >= size)
		return MXG_FIXED;
	memcpy(host, nh.host, strlen(nh.host) + 1);
	*port = nh.port;
	return MXG_LOOKUP;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* name in lower case without its trailing dot, into a new string. */
static char *name_norm(const char *name)
{
	size_t n = strlen(name);
	char *s;

	if (n > 1 && name[n - 1] == '.')
		n--;
	s = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)tolower((unsigned char)name[i]);
	s[n] = 0;
	return s;
}

bool mxgroup_key_from_reply(const char *domain, unsigned port,
    enum dns_status st, const dns_reply_t *reply, str_t *key, double *ttl,
    str_t *why)
{
	char *names[MXG_MAX_HOSTS];
	size_t n = 0, nmx = 0;
	double t = MXG_TTL_MAX;

	str_reset(key);
	switch (st) {
	case DNS_FOUND:
		break;
	case DNS_NODATA:
		/* No MX record: the domain is its own host (implicit MX). */
		names[n++] = name_norm(domain);
		t = MXG_TTL_MIN;
		break;
	case DNS_NXDOMAIN:
		str_setf(why, "the domain does not exist");
		return false;
	default:
		str_setf(why, "MX lookup failed (%s)", dns_status_str(st));
		return false;
	}
	for (size_t i = 0; st == DNS_FOUND && i < reply->nrr; i++) {
		const dns_rr_t *rr = &reply->rr[i];
		if (rr->type != DNS_T_MX)
			continue;
		nmx++;
		if (rr->pref == 0 && strcmp(rr->name, ".") == 0
		    && reply->nrr == 1) {
			str_setf(why, "null MX");
			return false;
		}
		if (!dns_valid_hostname(rr->name))
			continue;
		if (n == MXG_MAX_HOSTS) {
			for (size_t k = 0; k < n; k++)
				free(names[k]);
			str_setf(why, "more than %d MX hosts", MXG_MAX_HOSTS);
			return false;
		}
		names[n++] = name_norm(rr->name);
		if ((double)rr->ttl < t)
			t = (double)rr->ttl;
	}
	if (n == 0) {
		str_setf(why, nmx ? "no usable MX host name" : "no MX record");
		return false;
	}
	qsort(names, n, sizeof(*names), name_cmp);
	str_putc(key, '{');
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || strcmp(names[i], names[i - 1]) != 0) {
			if (i > 0)
				str_putc(key, ',');
			str_cat(key, names[i]);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	str_putc(key, '}');
	if (port)
		str_catf(key, ":%u", port);
	*ttl = t < MXG_TTL_MIN ? MXG_TTL_MIN : t > MXG_TTL_MAX ? MXG_TTL_MAX : t;
	return true;
}

struct mxg_cache {
	htable_t *h;			/* nexthop -> mxg_entry_t */
	size_t limit;
};

mxg_cache_t *mxgroup_cache_new(size_t limit)
{
	mxg_cache_t *c = xcalloc(1, sizeof(*c));
	c->h = htable_new(64, HTABLE_FLAG_NOCASE);
	c->limit = limit ? limit : 1;
	return c;
}

static void entry_free(void *v)
{
	mxg_entry_t *e = v;
	free(e->nexthop);
	free(e->key);
	free(e);
}

void mxgroup_cache_free(mxg_cache_t *c)
{
	if (c == NULL)
		return;
	htable_free(c->h, entry_free);
	free(c);
}

static bool pending(const mxg_entry_t *e)
{
	return e->key == NULL;
}

mxg_entry_t *mxgroup_cache_get(mxg_cache_t *c, const char *nexthop,
    double now)
{
	mxg_entry_t *e = htable_get(c->h, nexthop);

	if (e && !pending(e) && now >= e->expires) {
		htable_delete(c->h, nexthop);
		entry_free(e);
		return NULL;
	}
	return e;
}

/* Drops the entries that are not pending and, unless all, not expired. */
static void cache_prune(mxg_cache_t *c, double now, bool all)
{
	size_t n;
	htable_entry_t **v = htable_list(c->h, &n);

	for (size_t i = 0; i < n; i++) {
		mxg_entry_t *e = v[i]->value;
		if (!pending(e) && (all || now >= e->expires)) {
			htable_delete(c->h, e->nexthop);
			entry_free(e);
		}
	}
	free(v);
}

mxg_entry_t *mxgroup_cache_add(mxg_cache_t *c, const char *nexthop,
    double now)
{
	mxg_entry_t *e;

	if (htable_size(c->h) >= c->limit) {
		cache_prune(c, now, false);
		if (htable_size(c->h) >= c->limit)
			cache_prune(c, now, true);
	}
	e = xcalloc(1, sizeof(*e));
	e->nexthop = xstrdup(nexthop);
	list_init(&e->waiters);
	htable_add(c->h, e->nexthop, e);
	return e;
}

void mxgroup_cache_set(mxg_entry_t *e, const char *key, double ttl,
    double now)
{
	free(e->key);
	e->fallback = key == NULL;
	e->key = xstrdup(key ? key : e->nexthop);
	e->expires = now + ttl;
	e->lookup = NULL;
}

size_t mxgroup_cache_size(const mxg_cache_t *c)
{
	return htable_size(c->h);
}
