/* Destination grouping by MX hosts: the scheduling key of a nexthop
 * (doc/scheduler.md section 11).  Pure logic, no I/O: what a nexthop
 * needs (a lookup or not), the key from a parsed MX reply, and the
 * bounded cache of keys.  qmgr_mxgroup.c does the non-blocking lookups. */
#ifndef PETREL_QMGR_MXGROUP_H
#define PETREL_QMGR_MXGROUP_H
#include <stdbool.h>
#include <stddef.h>
#include "dns.h"
#include "list.h"
#include "str.h"

#define MXG_MAX_HOSTS	32	/* more MX hosts: scheduled by domain */
#define MXG_TTL_MIN	60.0	/* a found group is kept for the MX TTL, */
#define MXG_TTL_MAX	3600.0	/* clamped to this range */
#define MXG_FAIL_TTL	60.0	/* a fallback to the domain key */
#define MXG_CACHE_MAX	10000	/* nexthops cached */

enum mxg_need {
	MXG_FIXED,		/* the key is the nexthop itself: [host],
				 * an address, or a nexthop that does not
				 * parse (the agent reports that) */
	MXG_LOOKUP,		/* a domain: look up its MX hosts */
};

/* What nexthop needs; with MXG_LOOKUP the domain to query is in host
 * (size >= DNS_NAME_TEXTLEN) and *port is its explicit port or 0. */
enum mxg_need mxgroup_nexthop(const char *nexthop, char *host, size_t size,
    unsigned *port);

/* The key of domain (port 0: none) from the MX query's status and reply:
 * true with the key ("{a.example,b.example}" or "{...}:PORT") and the
 * time to keep it; false with a reason when the domain is to be
 * scheduled by its own name (null MX, NXDOMAIN, temporary failures, too
 * many or no usable MX hosts). */
bool mxgroup_key_from_reply(const char *domain, unsigned port,
    enum dns_status st, const dns_reply_t *reply, str_t *key, double *ttl,
    str_t *why);

/* The cache: nexthop -> key, with an expiry; an entry without a key is a
 * lookup in progress (never dropped; its waiters are the driver's). */
typedef struct mxg_entry {
	char *nexthop;
	char *key;		/* NULL while pending */
	bool fallback;		/* key is the nexthop: the lookup failed */
	double expires;
	void *lookup;		/* the driver's, while pending */
	list_t waiters;		/* the driver's, while pending */
} mxg_entry_t;

typedef struct mxg_cache mxg_cache_t;

mxg_cache_t *mxgroup_cache_new(size_t limit);
void mxgroup_cache_free(mxg_cache_t *c);
/* The entry of nexthop, or NULL (an expired one is dropped first). */
mxg_entry_t *mxgroup_cache_get(mxg_cache_t *c, const char *nexthop,
    double now);
/* A new pending entry for nexthop (which must not be there).  When the
 * cache is full, expired entries go; if none had expired, every entry
 * that is not pending goes. */
mxg_entry_t *mxgroup_cache_add(mxg_cache_t *c, const char *nexthop,
    double now);
/* The lookup ended: key (NULL: fall back to the nexthop) for ttl. */
void mxgroup_cache_set(mxg_entry_t *e, const char *key, double ttl,
    double now);
size_t mxgroup_cache_size(const mxg_cache_t *c);

#endif
