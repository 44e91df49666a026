/* DNS for the SMTP client: finding the servers of a next hop.
 *
 * Three layers, each usable on its own (see doc/dns.md):
 *
 * 1. The reply parser (dns_parse.c): a DNS message from the network is
 *    untrusted input.  dns_parse_reply() checks every count, length and
 *    compression pointer against the packet, follows CNAMEs inside the
 *    answer section (bounded), and returns the MX, A or AAAA records of
 *    the name asked for, with a status.  It never reads outside the
 *    packet and never reports success for a packet it could not fully
 *    read.
 *
 * 2. Lookups (dns.c): dns_lookup() sends one query with the resolver
 *    library's reentrant API (res_ninit/res_nmkquery/res_nsend on a
 *    private res_state, so the process's global resolver state is never
 *    used) to the system's name servers or to one given server
 *    (dns_server_address, for tests), and parses the reply with layer 1.
 *    dns_native_lookup() asks getaddrinfo() (so /etc/hosts, nsswitch).
 *
 * 3. Finding the servers (dns_mx.c): dns_find_servers() turns a next hop
 *    ("example.com", "[mx.example.com]", "[192.0.2.1]") into the ordered
 *    list of addresses the SMTP client tries, or a failure with a DSN
 *    status and a reason: MX lookup, preference order with equal
 *    preferences shuffled, our own MX preference and worse dropped, mail
 *    loop and null MX (RFC 7505) detection, implicit MX, A/AAAA per
 *    inet_protocols ordered per smtp_address_preference, cut to
 *    smtp_mx_address_limit.
 *
 * Nothing here is thread-safe by itself; one resolver per thread. */
#ifndef PETREL_DNS_H
#define PETREL_DNS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/types.h>
#include "sock.h"
#include "str.h"

/* Record types and class we deal in. */
#define DNS_T_A		1
#define DNS_T_CNAME	5
#define DNS_T_MX	15
#define DNS_T_AAAA	28
#define DNS_C_IN	1

/* A name is at most 255 bytes on the wire.  Its text form (labels joined
 * by dots, no trailing dot, the root as ".") escapes every byte that is
 * not a letter, digit, '-' or '_' as \DDD, so it needs up to four text
 * bytes per wire byte; this buffer size holds any name. */
#define DNS_NAME_WIRE_MAX	255
#define DNS_NAME_TEXTLEN	1024
/* CNAMEs followed inside one answer before giving up. */
#define DNS_CNAME_MAX		8
/* Largest reply we accept (TCP replies can be this long). */
#define DNS_PACKET_MAX		65535

/* ---- Layer 1: parsing replies ---- */

enum dns_status {
	DNS_FOUND,		/* records of the type asked for */
	DNS_NXDOMAIN,		/* the name does not exist */
	DNS_NODATA,		/* the name exists, no records of that type */
	DNS_TEMPFAIL,		/* SERVFAIL, REFUSED, timeout, network, ... */
	DNS_MALFORMED,		/* a reply we could not trust; temporary */
};

/* Temporary failures (the mail waits and the lookup is tried again). */
static inline bool dns_status_temporary(enum dns_status s)
{
	return s == DNS_TEMPFAIL || s == DNS_MALFORMED;
}
const char *dns_status_str(enum dns_status s);
/* "A", "MX", ... or "TYPE99". */
const char *dns_type_str(uint16_t type, char *buf, size_t size);

typedef struct dns_rr {
	uint16_t type;			/* DNS_T_A, DNS_T_AAAA or DNS_T_MX */
	uint32_t ttl;
	unsigned pref;			/* MX preference */
	char *name;			/* MX exchange (text form) */
	unsigned char addr[16];		/* A: 4 bytes, AAAA: 16 */
} dns_rr_t;

typedef struct dns_reply {
	int rcode;			/* 0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN... */
	char *canon;			/* the name after CNAMEs (text form) */
	dns_rr_t *rr;			/* records of the asked type for canon */
	size_t nrr;
} dns_reply_t;

#define DNS_REPLY_INIT { 0, NULL, NULL, 0 }

/* Parses the reply pkt[0..len) to a query for qname (text form; NULL
 * takes the reply's own question) and qtype.  Returns the status; with
 * DNS_FOUND reply->rr holds the records (in answer order).  Any status
 * other than DNS_FOUND leaves a reason in why (if not NULL): the rcode,
 * or what was wrong with the packet.  reply is reset first; free it with
 * dns_reply_free() whatever the status. */
enum dns_status dns_parse_reply(const unsigned char *pkt, size_t len,
    const char *qname, uint16_t qtype, dns_reply_t *reply, str_t *why);
void dns_reply_free(dns_reply_t *reply);

/* Reads the name at *offp of pkt[0..len) into out (text form), following
 * compression pointers, which must point backwards, strictly before the
 * previous jump, and not into the header.  *offp moves past the name as
 * it appears at *offp.  Returns 0, or -1 with a reason in why. */
int dns_name_read(const unsigned char *pkt, size_t len, size_t *offp,
    char *out, size_t outsize, str_t *why);

/* Case-insensitive name equality ignoring one trailing dot on each. */
bool dns_name_equal(const char *a, const char *b);
/* A host name we are willing to look up: dot-separated labels of
 * letters, digits, '-' and '_', 1 to 63 bytes each, not starting or
 * ending with '-', at most 253 bytes in all; one trailing dot allowed. */
bool dns_valid_hostname(const char *name);

/* ---- Layer 2: lookups ---- */

typedef struct dns_resolver dns_resolver_t;

/* A resolver.  server NULL or "": the system's name servers (from
 * /etc/resolv.conf, read on the first query).  Otherwise "ADDR" or
 * "ADDR:PORT" (port 53 by default), a loopback IPv4 address (127/8; the
 * resolver library keeps only IPv4 server addresses where a program can
 * set them, and the setting is for tests): every query goes to that
 * server only, with resolv.conf's options ignored.  Returns NULL with a
 * reason in why for a bad server. */
dns_resolver_t *dns_resolver_new(const char *server, str_t *why);
/* The resolver from dns_server_address. */
dns_resolver_t *dns_resolver_from_config(str_t *why);
void dns_resolver_free(dns_resolver_t *r);
/* Bounds the time a query may take: timeout seconds per attempt (1 to
 * 30) and attempts per server (1 to 5).  Defaults: resolv.conf's, cut
 * to 5 s and 2 attempts. */
void dns_resolver_set_limits(dns_resolver_t *r, int timeout, int attempts);

/* Replaces the network (for tests): fn gets the query's name and type
 * and fills buf with a reply, returning its length, or -1 with errno
 * (ETIMEDOUT, ECONNREFUSED, ...). */
typedef ssize_t (*dns_transport_fn)(void *ctx, const char *name,
    uint16_t type, unsigned char *buf, size_t size);
void dns_resolver_set_transport(dns_resolver_t *r, dns_transport_fn fn,
    void *ctx);

/* One query of name (a valid host name) and type; the reply parsed as by
 * dns_parse_reply().  A name that is not a valid host name is
 * DNS_NXDOMAIN without a query. */
enum dns_status dns_lookup(dns_resolver_t *r, const char *name,
    uint16_t type, dns_reply_t *reply, str_t *why);

/* For callers that do their own I/O (qmgr's non-blocking MX lookups):
 * builds a query of name (a valid host name) and type into buf, with a
 * fresh random ID in its first two bytes, and returns its length; or -1
 * with a reason.  The reply is for dns_parse_reply(). */
ssize_t dns_query_make(dns_resolver_t *r, const char *name, uint16_t type,
    unsigned char *buf, size_t size, str_t *why);
/* The server such a caller sends to: dns_server_address when set, else
 * the first IPv4 name server of resolv.conf.  0, or -1 with a reason. */
int dns_resolver_server(dns_resolver_t *r, struct sockaddr_in *out,
    str_t *why);

/* Address families (inet_protocols). */
#define DNS_INET4	1
#define DNS_INET6	2
/* Parses inet_protocols ("all", "ipv4", "ipv6", "ipv4, ipv6") to a mask;
 * -1 if invalid. */
int dns_parse_protocols(const char *value);

/* Same IPv4 or IPv6 address (ports and scopes ignored). */
bool dns_addr_equal(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b);

/* Addresses of host by getaddrinfo(), families per mask, duplicates
 * removed, port 0.  Returns DNS_FOUND with *n > 0, DNS_NXDOMAIN,
 * DNS_NODATA or DNS_TEMPFAIL (reason in why). */
enum dns_status dns_native_lookup(const char *host, int families,
    struct sockaddr_storage *out, size_t max, size_t *n, str_t *why);

/* ---- Layer 3: finding the servers of a next hop ---- */

/* A next hop: "host", "[host]", "[addr]", "[IPv6:addr]", each with an
 * optional ":port".  host is without brackets and "IPv6:"; bracketed
 * means no MX lookup; literal means host is a numeric address. */
typedef struct dns_nexthop {
	char host[DNS_NAME_TEXTLEN];
	bool bracketed;
	bool literal;
	unsigned port;
} dns_nexthop_t;

/* Splits spec; a spec without a port gets default_port.  Returns 0, or
 * -1 with a reason in why: empty, unbalanced brackets, a port that is not
 * a number from 1 to 65535, an IPv6 address without brackets, a host
 * that is neither a valid host name nor (bracketed) an IP address. */
int dns_nexthop_parse(const char *spec, unsigned default_port,
    dns_nexthop_t *nh, str_t *why);

/* How host addresses are looked up (smtp_host_lookup). */
#define DNS_LOOKUP_DNS		1
#define DNS_LOOKUP_NATIVE	2
/* Parses smtp_host_lookup ("dns", "native", "dns, native"); -1 if
 * invalid. */
int dns_parse_host_lookup(const char *value);

enum dns_addr_pref { DNS_PREFER_ANY, DNS_PREFER_IPV4, DNS_PREFER_IPV6 };

typedef struct dns_opts {
	int lookup;		/* DNS_LOOKUP_* mask; without DNS_LOOKUP_DNS no
				 * query is sent: a domain is looked up with
				 * getaddrinfo() as its own (implicit) MX */
	int families;		/* DNS_INET4 | DNS_INET6 */
	enum dns_addr_pref prefer;
	size_t address_limit;	/* most addresses returned; 0 = no limit */
	bool defer_if_no_mx_address; /* MX hosts without addresses: defer,
				 * not bounce */
	const char *myhostname;	/* an MX host of this name is us; NULL: none */
	const struct sockaddr_storage *own_addrs; /* an MX host with one of
				 * these addresses is us (port ignored) */
	size_t n_own_addrs;
	uint32_t (*rand)(void *ctx); /* shuffles equal preferences; NULL:
				 * an internal generator */
	void *rand_ctx;
	dns_resolver_t *resolver; /* needed with DNS_LOOKUP_DNS */
} dns_opts_t;

/* Fills o from the configuration (smtp_host_lookup, inet_protocols,
 * smtp_address_preference, smtp_mx_address_limit,
 * smtp_defer_if_no_mx_address_found, myhostname); own addresses, rand
 * and resolver are left empty.  Returns 0, or -1 with a reason. */
int dns_opts_from_config(dns_opts_t *o, str_t *why);

/* MX preference of a server found without an MX record (literal, [host],
 * implicit MX). */
#define DNS_PREF_NONE	(-1)

typedef struct dns_server {
	char *hostname;		/* MX host, or the next hop's host */
	struct sockaddr_storage addr;	/* with port */
	socklen_t addrlen;
	char addrstr[SOCK_ADDR_STRLEN];	/* "192.0.2.1", "2001:db8::1" */
	unsigned port;
	int pref;		/* MX preference or DNS_PREF_NONE */
} dns_server_t;

enum dns_result {
	DNS_RESULT_OK,		/* servers found */
	DNS_RESULT_DEFER,	/* temporary: try again later */
	DNS_RESULT_BOUNCE,	/* permanent: return the mail */
};

typedef struct dns_servers {
	enum dns_result result;
	dns_server_t *v;	/* in the order to try them */
	size_t n;
	char dsn[16];		/* on failure: "4.4.3", "5.4.4", "5.1.10"... */
	str_t reason;		/* on failure: one line for the DSN and log */
} dns_servers_t;

#define DNS_SERVERS_INIT { DNS_RESULT_OK, NULL, 0, "", STR_INIT }

/* Finds the servers of nh (see above and doc/dns.md for the rules and
 * reasons).  out is reset first; free it with dns_servers_free().
 * Returns out->result. */
enum dns_result dns_find_servers(const dns_nexthop_t *nh, const dns_opts_t *o,
    dns_servers_t *out);
void dns_servers_free(dns_servers_t *out);

#endif
