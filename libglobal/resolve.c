/* Address resolution (resolve.h, doc/resolve.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "addr.h"
#include "delivery.h"
#include "dict.h"
#include "htable.h"
#include "list.h"
#include "log.h"
#include "maps.h"
#include "mem.h"
#include "pconfig.h"
#include "resolve.h"

/* A route: transport and nexthop as configured ("" = unset). */
typedef struct route {
	char *transport;
	char *nexthop;
} route_t;

typedef struct ipaddr {
	int af;
	unsigned char bin[16];
} ipaddr_t;

/* A cached result, in the LRU list (most recent first). */
typedef struct centry {
	list_node_t lru;
	char *key;		/* copy of the htable's key */
	time_t stamp;
	resolve_status_t status;
	int flags;
	char dsn[16];
	char *transport, *nexthop, *address, *reason;
} centry_t;

struct resolver {
	addr_domlist_t *mydest;
	addr_domlist_t *relay;
	addr_domlist_t *virt;	/* virtual_mailbox_domains */
	addr_domlist_t *valias;	/* virtual_alias_domains */
	maps_t *tmaps;		/* transport_maps */
	route_t local, relayc, deflt, virtc;
	char *relayhost;
	char *myhostname;
	char *delim;
	ipaddr_t *myaddr;
	size_t nmyaddr;
	/* Cache. */
	htable_t *cache;
	list_t lru;
	size_t limit;
	long ttl;
	time_t (*now)(void);
	resolve_stats_t stats;
};

void resolve_reply_free(resolve_reply_t *r)
{
	str_release(&r->transport);
	str_release(&r->nexthop);
	str_release(&r->address);
	str_release(&r->reason);
}

bool resolve_split_transport(const char *value, str_t *transport,
    str_t *nexthop)
{
	const char *colon = strchr(value, ':');
	size_t tlen = colon ? (size_t)(colon - value) : strlen(value);

	for (size_t i = 0; i < tlen; i++) {
		char c = value[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	str_reset(transport);
	str_append(transport, value, tlen);
	str_set(nexthop, colon ? colon + 1 : "");
	return true;
}

static bool route_parse(route_t *rt, const char *param, const char *value,
    str_t *err)
{
	str_t t = STR_INIT, n = STR_INIT;
	char *copy = xstrdup(value ? value : ""), *v = str_trim(copy);
	bool ok;

	ok = resolve_split_transport(v, &t, &n);
	if (!ok)
		str_setf(err, "%s: bad transport name in \"%s\"", param, v);
	else if (str_len(&t) == 0) {
		str_setf(err, "%s: no transport name in \"%s\"", param, v);
		ok = false;
	}
	if (ok) {
		rt->transport = xstrdup(str_cstr(&t));
		rt->nexthop = xstrdup(str_cstr(&n));
	}
	free(copy);
	str_release(&t);
	str_release(&n);
	return ok;
}

/* ---- This host's addresses ------------------------------------------ */

static void myaddr_add(resolver_t *res, int af, const void *bin)
{
	ipaddr_t *a;

	res->myaddr = xreallocarray(res->myaddr, res->nmyaddr + 1,
	    sizeof(*res->myaddr));
	a = &res->myaddr[res->nmyaddr++];
	memset(a, 0, sizeof(*a));
	a->af = af;
	memcpy(a->bin, bin, af == AF_INET ? 4 : 16);
}

/* Adds one address (numeric, or a name resolved to its addresses). */
static bool myaddr_parse(resolver_t *res, const char *tok, str_t *err)
{
	unsigned char bin[16];
	struct addrinfo hints, *ai, *p;
	char buf[300];
	size_t len = strlen(tok);
	int e;

	/* Accept "[addr]" as well as the bare form. */
	if (len >= 2 && tok[0] == '[' && tok[len - 1] == ']') {
		if (!bfmt(buf, sizeof(buf), "%.*s", (int)(len - 2), tok + 1))
			goto bad;
		tok = buf;
	}
	if (inet_pton(AF_INET, tok, bin) == 1) {
		myaddr_add(res, AF_INET, bin);
		return true;
	}
	if (inet_pton(AF_INET6, tok, bin) == 1) {
		myaddr_add(res, AF_INET6, bin);
		return true;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if ((e = getaddrinfo(tok, NULL, &hints, &ai)) != 0) {
		str_setf(err, "cannot find the address of interface \"%s\": %s",
		    tok, gai_strerror(e));
		return false;
	}
	for (p = ai; p; p = p->ai_next) {
		if (p->ai_family == AF_INET)
			myaddr_add(res, AF_INET,
			    &((struct sockaddr_in *)p->ai_addr)->sin_addr);
		else if (p->ai_family == AF_INET6)
			myaddr_add(res, AF_INET6,
			    &((struct sockaddr_in6 *)p->ai_addr)->sin6_addr);
	}
	freeaddrinfo(ai);
	return true;
bad:
	str_setf(err, "bad interface address \"%s\"", tok);
	return false;
}

static bool myaddr_list(resolver_t *res, const char *list, str_t *err)
{
	char *copy = xstrdup(list ? list : ""), *cp = copy, *tok;
	bool ok = true;

	while (ok && (tok = str_token(&cp, " \t,\r\n")) != NULL) {
		if (strcmp(tok, "all") == 0) {
			struct ifaddrs *ifa, *p;
			if (getifaddrs(&ifa) < 0) {
				str_setf(err, "getifaddrs: %s", strerror(errno));
				ok = false;
				break;
			}
			for (p = ifa; p; p = p->ifa_next) {
				if (!p->ifa_addr)
					continue;
				if (p->ifa_addr->sa_family == AF_INET)
					myaddr_add(res, AF_INET, &((struct
					    sockaddr_in *)p->ifa_addr)->sin_addr);
				else if (p->ifa_addr->sa_family == AF_INET6)
					myaddr_add(res, AF_INET6, &((struct
					    sockaddr_in6 *)p->ifa_addr)->sin6_addr);
			}
			freeifaddrs(ifa);
		} else if (strcmp(tok, "loopback-only") == 0) {
			ok = myaddr_parse(res, "127.0.0.1", err) &&
			    myaddr_parse(res, "::1", err);
		} else {
			ok = myaddr_parse(res, tok, err);
		}
	}
	free(copy);
	return ok;
}

static bool is_my_literal(const resolver_t *res, const char *dom)
{
	unsigned char bin[16];
	int af = addr_ip_literal(dom, strlen(dom), bin);

	for (size_t i = 0; af && i < res->nmyaddr; i++)
		if (res->myaddr[i].af == af &&
		    memcmp(res->myaddr[i].bin, bin, af == AF_INET ? 4 : 16) == 0)
			return true;
	return false;
}

/* ---- Set-up --------------------------------------------------------- */

static time_t default_now(void)
{
	return time(NULL);
}

resolver_t *resolver_new(const resolve_config_t *cfg, str_t *err)
{
	resolver_t *res = xcalloc(1, sizeof(*res));
	str_t def = STR_INIT;

	list_init(&res->lru);
	res->myhostname = xstrdup(cfg->myhostname && *cfg->myhostname ?
	    cfg->myhostname : "localhost");
	addr_lower(res->myhostname, ADDR_LOWER_LOCAL);
	{
		char *rh = xstrdup(cfg->relayhost ? cfg->relayhost : "");
		res->relayhost = xstrdup(str_trim(rh));
		free(rh);
	}
	res->delim = xstrdup(cfg->recipient_delimiter ?
	    cfg->recipient_delimiter : "");
	res->limit = cfg->cache_limit ? cfg->cache_limit : RESOLVE_CACHE_DEFAULT;
	res->ttl = cfg->cache_ttl ? cfg->cache_ttl : RESOLVE_CACHE_TTL;
	res->now = cfg->now ? cfg->now : default_now;
	res->cache = htable_new(64, 0);

	if (!(res->mydest = addr_domlist_new("mydestination",
	    cfg->mydestination, 0, err)))
		goto fail;
	if (!(res->relay = addr_domlist_new("relay_domains", cfg->relay_domains,
	    cfg->parent_matches ? ADDR_DOMLIST_PARENT : 0, err)))
		goto fail;
	if (!(res->virt = addr_domlist_new("virtual_mailbox_domains",
	    cfg->virtual_mailbox_domains, 0, err)))
		goto fail;
	if (!(res->valias = addr_domlist_new("virtual_alias_domains",
	    cfg->virtual_alias_domains, 0, err)))
		goto fail;
	str_setf(&def, "local:%s", res->myhostname);
	if (!route_parse(&res->local, "local_transport", cfg->local_transport ?
	    cfg->local_transport : str_cstr(&def), err) ||
	    !route_parse(&res->relayc, "relay_transport", cfg->relay_transport ?
	    cfg->relay_transport : "relay", err) ||
	    !route_parse(&res->virtc, "virtual_transport",
	    cfg->virtual_transport ? cfg->virtual_transport : "virtual", err) ||
	    !route_parse(&res->deflt, "default_transport",
	    cfg->default_transport ? cfg->default_transport : "smtp", err))
		goto fail;

	/* transport_maps: every table must open; the first that does not
	 * fails the resolver with what dict_open said. */
	res->tmaps = maps_open("transport_maps", cfg->transport_maps, 0, NULL,
	    err);
	for (size_t i = 0; i < maps_count(res->tmaps); i++)
		if (maps_broken(res->tmaps, i) != NULL) {
			str_setf(err, "transport_maps: %s",
			    maps_broken(res->tmaps, i));
			goto fail;
		}

	if (cfg->my_addresses) {
		if (!myaddr_list(res, cfg->my_addresses, err))
			goto fail;
	} else {
		if (!myaddr_list(res, cfg->inet_interfaces ?
		    cfg->inet_interfaces : "all", err) ||
		    !myaddr_list(res, cfg->proxy_interfaces, err))
			goto fail;
	}
	str_release(&def);
	return res;
fail:
	str_release(&def);
	resolver_free(res);
	return NULL;
}

resolver_t *resolver_from_config(str_t *err)
{
	resolve_config_t c;

	memset(&c, 0, sizeof(c));
	c.mydestination = pconfig_get_str("mydestination");
	c.relay_domains = pconfig_get_str("relay_domains");
	c.virtual_mailbox_domains = pconfig_get_str("virtual_mailbox_domains");
	c.virtual_transport = pconfig_get_str("virtual_transport");
	c.virtual_alias_domains = pconfig_get_str("virtual_alias_domains");
	c.transport_maps = pconfig_get_str("transport_maps");
	c.relayhost = pconfig_get_str("relayhost");
	c.default_transport = pconfig_get_str("default_transport");
	c.relay_transport = pconfig_get_str("relay_transport");
	c.local_transport = pconfig_get_str("local_transport");
	c.myhostname = pconfig_get_str("myhostname");
	c.recipient_delimiter = pconfig_get_str("recipient_delimiter");
	c.inet_interfaces = pconfig_get_str("inet_interfaces");
	c.proxy_interfaces = pconfig_get_str("proxy_interfaces");
	c.parent_matches = true;
	return resolver_new(&c, err);
}

static void centry_free(centry_t *e)
{
	free(e->transport);
	free(e->nexthop);
	free(e->address);
	free(e->reason);
	free(e->key);
	free(e);
}

static void centry_free_v(void *p)
{
	centry_free(p);
}

void resolver_free(resolver_t *res)
{
	if (!res)
		return;
	addr_domlist_free(res->mydest);
	addr_domlist_free(res->relay);
	addr_domlist_free(res->virt);
	addr_domlist_free(res->valias);
	maps_free(res->tmaps);
	free(res->local.transport);
	free(res->local.nexthop);
	free(res->relayc.transport);
	free(res->relayc.nexthop);
	free(res->deflt.transport);
	free(res->deflt.nexthop);
	free(res->virtc.transport);
	free(res->virtc.nexthop);
	free(res->relayhost);
	free(res->myhostname);
	free(res->delim);
	free(res->myaddr);
	htable_free(res->cache, centry_free_v);
	free(res);
}

/* ---- Resolution ------------------------------------------------------ */

static resolve_status_t finish(resolve_reply_t *out, resolve_status_t st,
    const char *dsn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static resolve_status_t finish(resolve_reply_t *out, resolve_status_t st,
    const char *dsn, const char *fmt, ...)
{
	va_list ap;

	out->status = st;
	bcopy_str(out->dsn, sizeof(out->dsn), dsn);
	str_reset(&out->reason);
	va_start(ap, fmt);
	str_vcatf(&out->reason, fmt, ap);
	va_end(ap);
	str_reset(&out->transport);
	str_reset(&out->nexthop);
	return st;
}

/* Looks key up in every transport map, in order.  1 found (*value), 0
 * not, -1 error (out filled). */
static int tmap_find(resolver_t *res, const char *key, const char **value,
    resolve_reply_t *out)
{
	const char *spec, *reason;
	int rc = maps_get(res->tmaps, key, value, NULL);

	if (rc < 0) {
		spec = maps_failed(res->tmaps, &reason);
		finish(out, RESOLVE_RETRY, "4.3.0",
		    "transport_maps lookup failure: %s: %s", spec, reason);
	}
	return rc;
}

/* transport_maps keys for the address, in order (see resolve.h); 1 with
 * *value and *key_used when found. */
static int tmap_lookup(resolver_t *res, const char *address,
    const char *domain, bool literal, const char **value, str_t *key_used,
    resolve_reply_t *out)
{
	str_t key = STR_INIT;
	int r;

	if (res->tmaps == NULL || maps_count(res->tmaps) == 0)
		return 0;
	if (domain) {
		addr_split_t sp;
		str_set(&key, address);
		if ((r = tmap_find(res, str_cstr(&key), value, out)) != 0)
			goto done;
		addr_split(address, res->delim, &sp);
		if (sp.ext) {
			str_setf(&key, "%s@%s", sp.user, domain);
			r = tmap_find(res, str_cstr(&key), value, out);
		} else {
			r = 0;
		}
		addr_split_free(&sp);
		if (r != 0)
			goto done;
		str_set(&key, domain);
		if ((r = tmap_find(res, str_cstr(&key), value, out)) != 0)
			goto done;
		for (const char *dot = literal ? NULL : strchr(domain, '.'); dot;
		    dot = strchr(dot + 1, '.')) {
			str_set(&key, dot);
			if ((r = tmap_find(res, str_cstr(&key), value, out)) != 0)
				goto done;
		}
	}
	str_set(&key, "*");
	r = tmap_find(res, str_cstr(&key), value, out);
done:
	if (r > 0)
		str_set(key_used, str_cstr(&key));
	str_release(&key);
	return r;
}

/* A recipient of virtual_alias_domains that cleanup did not rewrite
 * through virtual_alias_maps has no mailbox anywhere (Postfix's
 * wording). */
static const route_t valias_route = {
	(char *)"error", (char *)"5.1.1 User unknown in virtual alias table"
};

static resolve_status_t compute(resolver_t *res, const char *addr,
    resolve_reply_t *out)
{
	const char *at = strrchr(addr, '@');
	char *domain = NULL;
	const route_t *rt;
	const char *why, *value;
	str_t key = STR_INIT, t = STR_INIT, n = STR_INIT;
	const char *which = "mydestination";
	bool literal = false;
	size_t dlen;
	int r;

	out->flags = 0;
	str_reset(&out->address);
	if (!*addr)
		return finish(out, RESOLVE_FAIL, "5.1.3",
		    "empty recipient address");
	if (strlen(addr) > DLV_MAX_ADDR)
		return finish(out, RESOLVE_FAIL, "5.1.3",
		    "recipient address too long");
	if (at) {
		domain = xstrdup(at + 1);
		addr_lower(domain, ADDR_LOWER_LOCAL);
		dlen = strlen(domain);
		if (dlen > 1 && domain[dlen - 1] == '.' && domain[0] != '[')
			domain[--dlen] = 0;
		if (dlen == 0) {
			free(domain);
			return finish(out, RESOLVE_FAIL, "5.1.3",
			    "empty domain in recipient address");
		}
		if (!addr_valid_domain(domain, dlen, ADDR_DOM_LITERAL |
		    ADDR_DOM_UTF8, &why)) {
			finish(out, RESOLVE_FAIL, "5.1.2",
			    "bad recipient domain \"%s\": %s", domain, why);
			free(domain);
			return RESOLVE_FAIL;
		}
		if (domain[0] == '[') {
			if (!addr_ip_literal(domain, dlen, NULL)) {
				finish(out, RESOLVE_FAIL, "5.1.2",
				    "unsupported address literal %s", domain);
				free(domain);
				return RESOLVE_FAIL;
			}
			/* Canonical tag spelling for the nexthop. */
			if (strncmp(domain, "[ipv6:", 6) == 0)
				memcpy(domain + 1, "IPv6", 4);
			literal = true;
			out->flags |= RESOLVE_F_LITERAL;
		}
		str_append(&out->address, addr, (size_t)(at - addr) + 1);
		str_cat(&out->address, domain);
	} else {
		str_set(&out->address, addr);
	}

	/* 1. the class. */
	if (!domain || (literal && is_my_literal(res, domain))) {
		out->flags |= RESOLVE_CLASS_LOCAL;
	} else if ((r = addr_domlist_match(res->mydest, domain, &key)) != 0) {
		if (r < 0)
			goto table_error;
		out->flags |= RESOLVE_CLASS_LOCAL;
	} else if (!literal && ((which = "virtual_alias_domains"),
	    (r = addr_domlist_match(res->valias, domain, &key)) != 0)) {
		if (r < 0)
			goto table_error;
		out->flags |= RESOLVE_CLASS_ALIAS;
	} else if (!literal && ((which = "virtual_mailbox_domains"),
	    (r = addr_domlist_match(res->virt, domain, &key)) != 0)) {
		if (r < 0)
			goto table_error;
		out->flags |= RESOLVE_CLASS_VIRTUAL;
	} else if ((which = "relay_domains"),
	    (r = addr_domlist_match(res->relay, domain, &key)) != 0) {
		if (r < 0)
			goto table_error;
		out->flags |= RESOLVE_CLASS_RELAY;
	} else {
		out->flags |= RESOLVE_CLASS_DEFAULT;
	}

	/* 2. the class's route. */
	rt = (out->flags & RESOLVE_CLASS_LOCAL) ? &res->local :
	    (out->flags & RESOLVE_CLASS_ALIAS) ? &valias_route :
	    (out->flags & RESOLVE_CLASS_VIRTUAL) ? &res->virtc :
	    (out->flags & RESOLVE_CLASS_RELAY) ? &res->relayc : &res->deflt;
	str_set(&out->transport, rt->transport);
	if (*rt->nexthop)
		str_set(&out->nexthop, rt->nexthop);
	else if (out->flags & RESOLVE_CLASS_LOCAL)
		str_set(&out->nexthop, res->myhostname);
	else if (out->flags & RESOLVE_CLASS_VIRTUAL)
		str_set(&out->nexthop, domain);	/* never relayhost */
	else if (*res->relayhost)
		str_set(&out->nexthop, res->relayhost);
	else
		str_set(&out->nexthop, domain);

	/* 3. transport_maps. */
	r = tmap_lookup(res, str_cstr(&out->address), domain, literal, &value,
	    &key, out);
	if (r < 0)
		goto out;
	if (r > 0) {
		char *copy = xstrdup(value), *v = str_trim(copy);
		if (!resolve_split_transport(v, &t, &n)) {
			log_warning("transport_maps: malformed entry for \"%s\": "
			    "\"%.100s\"", str_cstr(&key), v);
			finish(out, RESOLVE_RETRY, "4.3.5",
			    "malformed transport_maps entry for %s",
			    str_cstr(&key));
			free(copy);
			goto out;
		}
		free(copy);
		if (str_len(&t))
			str_set(&out->transport, str_cstr(&t));
		if (str_len(&n))
			str_set(&out->nexthop, str_cstr(&n));
		out->flags |= RESOLVE_F_ROUTED;
	}
	out->status = RESOLVE_OK;
	out->dsn[0] = 0;
	str_reset(&out->reason);
	goto out;

table_error:
	finish(out, RESOLVE_RETRY, "4.3.0", "%s lookup failure: %s", which,
	    str_cstr(&key));
out:
	free(domain);
	str_release(&key);
	str_release(&t);
	str_release(&n);
	return out->status;
}

/* ---- The cache ------------------------------------------------------- */

static void cache_drop(resolver_t *res, centry_t *e)
{
	list_remove(&e->lru);
	htable_delete(res->cache, e->key);
	centry_free(e);
}

static void cache_put(resolver_t *res, const char *addr,
    const resolve_reply_t *r)
{
	centry_t *e;
	htable_entry_t *he;

	while (htable_size(res->cache) >= res->limit && !list_empty(&res->lru)) {
		cache_drop(res, list_entry(list_last(&res->lru), centry_t, lru));
		res->stats.evictions++;
	}
	e = xcalloc(1, sizeof(*e));
	e->stamp = res->now();
	e->status = r->status;
	e->flags = r->flags;
	memcpy(e->dsn, r->dsn, sizeof(e->dsn));
	e->transport = xstrdup(str_cstr(&r->transport));
	e->nexthop = xstrdup(str_cstr(&r->nexthop));
	e->address = xstrdup(str_cstr(&r->address));
	e->reason = xstrdup(str_cstr(&r->reason));
	if (!(he = htable_add(res->cache, addr, e))) {
		centry_free(e);
		return;
	}
	e->key = xstrdup(addr);
	list_prepend(&res->lru, &e->lru);
}

resolve_status_t resolve_addr(resolver_t *res, const char *addr,
    resolve_reply_t *out)
{
	centry_t *e;

	res->stats.lookups++;
	if (!addr)
		addr = "";
	if ((e = htable_get(res->cache, addr)) != NULL) {
		if (res->ttl >= 0 && res->now() - e->stamp >= res->ttl) {
			cache_drop(res, e);
		} else {
			res->stats.hits++;
			list_remove(&e->lru);
			list_prepend(&res->lru, &e->lru);
			out->status = e->status;
			out->flags = e->flags | RESOLVE_F_CACHED;
			memcpy(out->dsn, e->dsn, sizeof(out->dsn));
			str_set(&out->transport, e->transport);
			str_set(&out->nexthop, e->nexthop);
			str_set(&out->address, e->address);
			str_set(&out->reason, e->reason);
			return out->status;
		}
	}
	compute(res, addr, out);
	/* A temporary failure is never remembered: the next try may work. */
	if (out->status != RESOLVE_RETRY)
		cache_put(res, addr, out);
	return out->status;
}

void resolver_cache_flush(resolver_t *res)
{
	while (!list_empty(&res->lru))
		cache_drop(res, list_entry(list_first(&res->lru), centry_t, lru));
}

void resolver_stats(const resolver_t *res, resolve_stats_t *st)
{
	*st = res->stats;
	st->entries = htable_size(res->cache);
}
