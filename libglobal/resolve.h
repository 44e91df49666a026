/* Address resolution: recipient -> (transport, nexthop, address).
 * doc/resolve.md has the rules with examples; in order:
 *
 *   1. class: the domain (lower-cased, one trailing dot dropped) is
 *      LOCAL when it matches mydestination, when it is an [ip-literal]
 *      of one of this host's addresses, or when the address has no
 *      domain; else RELAY when it matches relay_domains; else DEFAULT.
 *   2. class defaults: LOCAL -> local_transport ("local:$myhostname");
 *      RELAY -> relay_transport, nexthop relayhost if set, else the
 *      domain; DEFAULT -> default_transport, nexthop relayhost if set,
 *      else the domain.  A "transport:nexthop" value in
 *      relay_transport/default_transport names its own nexthop, which
 *      wins over relayhost and the domain.
 *   3. transport_maps (when set) overrides: keys tried in order
 *      user+ext@domain, user@domain, domain, .parent.domain for each
 *      parent (.b.example for a.b.example, then .example), "*".  A value
 *      is "transport:nexthop", "transport", ":nexthop" or ":"; an empty
 *      part keeps what step 2 gave.  The transport_maps lookup also
 *      applies to local domains.
 *
 * relayhost and nexthops are passed on as written ("[host]:port" means
 * no MX lookup to the smtp agent).  A lookup table that cannot be read
 * gives RESOLVE_RETRY (defer, never bounce).  Results are cached (bounded,
 * least recently used out first). */
#ifndef PETREL_RESOLVE_H
#define PETREL_RESOLVE_H
#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "str.h"

typedef enum resolve_status {
	RESOLVE_OK = 0,
	RESOLVE_RETRY,		/* temporary: a table failed, a bad table
				 * entry (configuration error): defer */
	RESOLVE_FAIL,		/* the address cannot be resolved at all (empty,
				 * bad domain): bounce, status 5.1.3 */
} resolve_status_t;

enum {				/* resolve_reply_t.flags */
	RESOLVE_CLASS_LOCAL = 1 << 0,	/* mydestination / our IP / no domain */
	RESOLVE_CLASS_RELAY = 1 << 1,	/* relay_domains */
	RESOLVE_CLASS_DEFAULT = 1 << 2,	/* anything else */
	RESOLVE_F_ROUTED = 1 << 3,	/* transport_maps gave the result */
	RESOLVE_F_LITERAL = 1 << 4,	/* the domain is an [ip-literal] */
	RESOLVE_F_CACHED = 1 << 5,	/* served from the cache */
	RESOLVE_CLASS_VIRTUAL = 1 << 6,	/* virtual_mailbox_domains */
	RESOLVE_CLASS_ALIAS = 1 << 7,	/* virtual_alias_domains */
};

typedef struct resolve_reply {
	resolve_status_t status;
	int flags;
	char dsn[16];		/* RETRY/FAIL: the status code for the defer
				 * or bounce ("4.3.0" table failure, "4.3.5"
				 * bad configuration, "5.1.2" bad domain,
				 * "5.1.3" bad address); "" when OK */
	str_t transport;	/* master.cf service name, e.g. "smtp" */
	str_t nexthop;		/* "example.com", "[10.0.0.1]:2525",
				 * "myhost.example" for local */
	str_t address;		/* the recipient with its domain lower-cased
				 * and a trailing dot dropped; local part as is */
	str_t reason;		/* RETRY/FAIL: why (one line) */
} resolve_reply_t;

#define RESOLVE_REPLY_INIT { RESOLVE_OK, 0, "", STR_INIT, STR_INIT, STR_INIT, STR_INIT }
void resolve_reply_free(resolve_reply_t *r);

/* The inputs.  Every string is the parameter's value (already expanded);
 * NULL means "" (except where said). */
typedef struct resolve_config {
	const char *mydestination;
	const char *relay_domains;
	const char *virtual_mailbox_domains;	/* NULL: none */
	const char *virtual_transport;	/* NULL: "virtual" */
	const char *virtual_alias_domains;	/* NULL: none */
	const char *transport_maps;	/* table specs, comma/space separated */
	const char *relayhost;
	const char *default_transport;	/* NULL: "smtp" */
	const char *relay_transport;	/* NULL: "relay" */
	const char *local_transport;	/* NULL: "local:<myhostname>" */
	const char *myhostname;		/* NULL: "localhost" */
	const char *recipient_delimiter;
	/* This host's addresses for [ip-literal] domains: a list of IPv4/IPv6
	 * addresses (no brackets) separated by commas/spaces.  NULL: derived
	 * from inet_interfaces and proxy_interfaces ("all": every interface
	 * address from getifaddrs(); "loopback-only": 127.0.0.1 and ::1). */
	const char *my_addresses;
	const char *inet_interfaces;	/* used only when my_addresses NULL */
	const char *proxy_interfaces;
	bool parent_matches;		/* parent_domain_matches_subdomains
					 * includes relay_domains */
	size_t cache_limit;		/* entries; 0: RESOLVE_CACHE_DEFAULT */
	/* Seconds a cached result is used (hash: tables can be rebuilt
	 * under a long-lived qmgr); 0: RESOLVE_CACHE_TTL; < 0: forever. */
	long cache_ttl;
	time_t (*now)(void);		/* clock for the ttl; NULL: time() */
} resolve_config_t;

#define RESOLVE_CACHE_DEFAULT 10000
#define RESOLVE_CACHE_TTL 60

typedef struct resolver resolver_t;

/* Opens the tables and domain lists.  NULL with a reason in err when a
 * list has a bad pattern, a table cannot be opened or a transport
 * parameter is malformed (a daemon logs it and exits: configuration
 * error). */
resolver_t *resolver_new(const resolve_config_t *cfg, str_t *err);
/* The same from the loaded configuration (pconfig.h): mydestination,
 * relay_domains, transport_maps, relayhost, default_transport,
 * relay_transport, local_transport, myhostname, recipient_delimiter,
 * inet_interfaces, proxy_interfaces; relay_domains matches subdomains
 * (Postfix's parent_domain_matches_subdomains default). */
resolver_t *resolver_from_config(str_t *err);
void resolver_free(resolver_t *res);

/* Resolves the internal-form address addr (addr.h).  Fills *out (its old
 * contents replaced) and returns out->status. */
resolve_status_t resolve_addr(resolver_t *res, const char *addr,
    resolve_reply_t *out);

/* Forgets every cached result (after a table changed). */
void resolver_cache_flush(resolver_t *res);

typedef struct resolve_stats {
	unsigned long lookups, hits, evictions;
	size_t entries;
} resolve_stats_t;
void resolver_stats(const resolver_t *res, resolve_stats_t *st);

/* Splits "transport:nexthop" (either part may be empty; no colon means
 * no nexthop) into the two strings (replaced).  False when the
 * transport part is not a valid service name ([A-Za-z0-9._-]). */
bool resolve_split_transport(const char *value, str_t *transport,
    str_t *nexthop);

#endif
