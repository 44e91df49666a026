/* Finding the servers of a next hop: MX lookup, ordering, loop and null
 * MX detection, host addresses.  See doc/dns.md for the rules. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "dns.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"

/* Most MX hosts whose addresses are looked up for one next hop, and most
 * addresses kept per host: a hostile zone cannot make one delivery do
 * unbounded work. */
#define MX_HOSTS_MAX	50
#define HOST_ADDR_MAX	32

#define NOT_FOUND_TEXT	"Host or domain name not found. Name service error for name=%s type=%s: "

/* ---- next hop syntax ---- */

static bool parse_port(const char *s, unsigned *port)
{
	unsigned long v;
	if (!str_to_ulong(s, &v) || v < 1 || v > 65535)
		return false;
	*port = (unsigned)v;
	return true;
}

int dns_nexthop_parse(const char *spec, unsigned default_port,
    dns_nexthop_t *nh, str_t *why)
{
	const char *hs, *he, *colon;
	unsigned char tmp[sizeof(struct in6_addr)];

	memset(nh, 0, sizeof(*nh));
	nh->port = default_port;
	if (*spec == '\0') {
		str_set(why, "empty next hop");
		return -1;
	}
	if (*spec == '[') {
		const char *close = strchr(spec, ']');
		if (close == NULL) {
			str_setf(why, "next hop \"%s\": missing ']'", spec);
			return -1;
		}
		hs = spec + 1;
		he = close;
		nh->bracketed = true;
		if (close[1] == ':') {
			if (!parse_port(close + 2, &nh->port)) {
				str_setf(why, "next hop \"%s\": port must be a number from 1 to 65535", spec);
				return -1;
			}
		} else if (close[1] != '\0') {
			str_setf(why, "next hop \"%s\": unexpected text after ']'", spec);
			return -1;
		}
	} else {
		colon = strchr(spec, ':');
		if (colon != NULL && strchr(colon + 1, ':') != NULL) {
			str_setf(why, "next hop \"%s\": an IPv6 address goes in brackets, [IPv6:ADDR]", spec);
			return -1;
		}
		hs = spec;
		he = colon != NULL ? colon : spec + strlen(spec);
		if (colon != NULL && !parse_port(colon + 1, &nh->port)) {
			str_setf(why, "next hop \"%s\": port must be a number from 1 to 65535", spec);
			return -1;
		}
	}
	if (he == hs) {
		str_setf(why, "next hop \"%s\": empty host", spec);
		return -1;
	}
	if ((size_t)(he - hs) >= sizeof(nh->host)) {
		str_setf(why, "next hop \"%.40s...\": host too long", spec);
		return -1;
	}
	memcpy(nh->host, hs, (size_t)(he - hs));
	nh->host[he - hs] = '\0';

	if (nh->bracketed && strncasecmp(nh->host, "IPv6:", 5) == 0) {
		memmove(nh->host, nh->host + 5, strlen(nh->host + 5) + 1);
		if (inet_pton(AF_INET6, nh->host, tmp) != 1) {
			str_setf(why, "next hop \"%s\": bad IPv6 address", spec);
			return -1;
		}
		nh->literal = true;
	} else if (inet_pton(AF_INET, nh->host, tmp) == 1 ||
	    (nh->bracketed && inet_pton(AF_INET6, nh->host, tmp) == 1)) {
		nh->literal = true;
	} else if (!dns_valid_hostname(nh->host)) {
		str_setf(why, "next hop \"%s\": bad host name syntax", spec);
		return -1;
	}
	return 0;
}

/* ---- configuration ---- */

int dns_opts_from_config(dns_opts_t *o, str_t *why)
{
	const char *v;

	memset(o, 0, sizeof(*o));
	v = pconfig_get_str("smtp_host_lookup");
	if ((o->lookup = dns_parse_host_lookup(v)) < 0) {
		str_setf(why, "bad smtp_host_lookup value \"%s\"", v);
		return -1;
	}
	v = pconfig_get_str("inet_protocols");
	if ((o->families = dns_parse_protocols(v)) < 0) {
		str_setf(why, "bad inet_protocols value \"%s\"", v);
		return -1;
	}
	v = pconfig_get_str("smtp_address_preference");
	o->prefer = strcmp(v, "ipv4") == 0 ? DNS_PREFER_IPV4 :
	    strcmp(v, "ipv6") == 0 ? DNS_PREFER_IPV6 : DNS_PREFER_ANY;
	o->address_limit = (size_t)pconfig_get_int("smtp_mx_address_limit");
	o->defer_if_no_mx_address =
	    pconfig_get_bool("smtp_defer_if_no_mx_address_found");
	o->myhostname = pconfig_get_str("myhostname");
	return 0;
}

/* ---- random numbers for the shuffle ---- */

/* A small generator for production use: the shuffle spreads load over
 * equal MX hosts, it need not be unpredictable. */
static uint32_t default_rand(void *ctx)
{
	static uint64_t s;
	(void)ctx;
	if (s == 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		s = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
		    ((uint64_t)getpid() << 16) ^ 0x9E3779B97F4A7C15ull;
	}
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return (uint32_t)(s >> 32);
}

static uint32_t next_rand(const dns_opts_t *o)
{
	return o->rand != NULL ? o->rand(o->rand_ctx) : default_rand(NULL);
}

/* ---- results ---- */

static void fail(dns_servers_t *out, enum dns_result res, const char *dsn,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void fail(dns_servers_t *out, enum dns_result res, const char *dsn,
    const char *fmt, ...)
{
	va_list ap;
	for (size_t i = 0; i < out->n; i++)
		free(out->v[i].hostname);
	free(out->v);
	out->v = NULL;
	out->n = 0;
	out->result = res;
	bcopy_str(out->dsn, sizeof(out->dsn), dsn);
	str_reset(&out->reason);
	va_start(ap, fmt);
	str_vcatf(&out->reason, fmt, ap);
	va_end(ap);
}

void dns_servers_free(dns_servers_t *out)
{
	for (size_t i = 0; i < out->n; i++)
		free(out->v[i].hostname);
	free(out->v);
	str_release(&out->reason);
	*out = (dns_servers_t)DNS_SERVERS_INIT;
}

static void add_server(dns_servers_t *out, const char *host,
    const struct sockaddr_storage *ss, unsigned port, int pref)
{
	dns_server_t *s;

	out->v = xreallocarray(out->v, out->n + 1, sizeof(*out->v));
	s = &out->v[out->n++];
	memset(s, 0, sizeof(*s));
	s->hostname = xstrdup(host);
	s->addr = *ss;
	if (ss->ss_family == AF_INET) {
		((struct sockaddr_in *)&s->addr)->sin_port = htons((uint16_t)port);
		s->addrlen = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)&s->addr)->sin6_port = htons((uint16_t)port);
		s->addrlen = sizeof(struct sockaddr_in6);
	}
	sock_addr_str((struct sockaddr *)&s->addr, s->addrstr, sizeof(s->addrstr));
	s->port = port;
	s->pref = pref;
}

/* Within each run of equal preference, the preferred family first
 * (stable), then the list cut to the address limit. */
static void order_and_limit(dns_servers_t *out, const dns_opts_t *o)
{
	if (o->prefer != DNS_PREFER_ANY) {
		int first = o->prefer == DNS_PREFER_IPV4 ? AF_INET : AF_INET6;
		dns_server_t *tmp = xcalloc(out->n ? out->n : 1, sizeof(*tmp));
		for (size_t a = 0, b; a < out->n; a = b) {
			size_t k = 0;
			for (b = a; b < out->n && out->v[b].pref == out->v[a].pref; b++)
				;
			for (size_t i = a; i < b; i++)
				if (out->v[i].addr.ss_family == first)
					tmp[k++] = out->v[i];
			for (size_t i = a; i < b; i++)
				if (out->v[i].addr.ss_family != first)
					tmp[k++] = out->v[i];
			memcpy(out->v + a, tmp, (b - a) * sizeof(*tmp));
		}
		free(tmp);
	}
	if (o->address_limit > 0 && out->n > o->address_limit) {
		for (size_t i = o->address_limit; i < out->n; i++)
			free(out->v[i].hostname);
		out->n = o->address_limit;
	}
}

/* ---- host addresses ---- */

struct addrs {
	struct sockaddr_storage a[HOST_ADDR_MAX];
	size_t n;
};

static void addrs_add(struct addrs *ad, int family, const unsigned char *raw)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, raw, 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, raw, 16);
	}
	for (size_t i = 0; i < ad->n; i++)
		if (dns_addr_equal(&ad->a[i], &ss))
			return;
	if (ad->n < HOST_ADDR_MAX)
		ad->a[ad->n++] = ss;
}

/* How much a failed lookup tells: when nothing was found, the reason
 * given is the most telling failure, and a temporary one wins so that the
 * mail waits rather than bounces. */
static int rank(enum dns_status s)
{
	switch (s) {
	case DNS_FOUND: return 0;
	case DNS_NODATA: return 1;
	case DNS_NXDOMAIN: return 2;
	default: return 3;
	}
}

/* The addresses of host: A then AAAA (families per o) by DNS, and/or
 * getaddrinfo(), per o->lookup.  On failure, why holds a whole reason
 * line for a DSN. */
static enum dns_status host_addrs(const dns_opts_t *o, const char *host,
    struct addrs *ad, str_t *why)
{
	enum dns_status st = DNS_NODATA;
	str_t detail = STR_INIT;
	const char *failed_type = "A";
	bool tried = false;

	ad->n = 0;
	str_reset(why);
	if (o->lookup & DNS_LOOKUP_DNS) {
		static const struct { int family; int mask; uint16_t type; } q[] = {
			{ AF_INET, DNS_INET4, DNS_T_A },
			{ AF_INET6, DNS_INET6, DNS_T_AAAA },
		};
		enum dns_status dst = DNS_FOUND;	/* no failure yet */
		for (int i = 0; i < 2; i++) {
			dns_reply_t reply;
			str_t w = STR_INIT;
			if (!(o->families & q[i].mask))
				continue;
			enum dns_status s = dns_lookup(o->resolver, host, q[i].type, &reply, &w);
			tried = true;
			if (s == DNS_FOUND) {
				for (size_t k = 0; k < reply.nrr; k++)
					addrs_add(ad, q[i].family, reply.rr[k].addr);
			} else if (rank(s) > rank(dst)) {
				dst = s;
				failed_type = q[i].type == DNS_T_A ? "A" : "AAAA";
				str_set(&detail, str_cstr(&w));
			}
			dns_reply_free(&reply);
			str_release(&w);
			/* A name that does not exist has no AAAA either. */
			if (s == DNS_NXDOMAIN)
				break;
		}
		if (ad->n > 0) {
			str_release(&detail);
			return DNS_FOUND;
		}
		st = dst == DNS_FOUND ? DNS_NODATA : dst;
	}
	if (o->lookup & DNS_LOOKUP_NATIVE) {
		size_t n = 0;
		str_t w = STR_INIT;
		enum dns_status s = dns_native_lookup(host, o->families, ad->a,
		    HOST_ADDR_MAX, &n, &w);
		ad->n = n;
		if (s == DNS_FOUND) {
			str_release(&w);
			str_release(&detail);
			return DNS_FOUND;
		}
		if (!tried || rank(s) > rank(st)) {
			failed_type = "address";
			str_set(&detail, str_cstr(&w));
			st = s;
		}
		tried = true;
		str_release(&w);
	}
	if (!tried) {
		str_setf(why, "no way to look up the address of %s (smtp_host_lookup)", host);
		str_release(&detail);
		return DNS_TEMPFAIL;
	}
	if (dns_status_temporary(st))
		st = DNS_TEMPFAIL;
	str_setf(why, NOT_FOUND_TEXT "%s", host, failed_type,
	    st == DNS_TEMPFAIL ? "Host not found, try again" :
	    st == DNS_NXDOMAIN ? "Host not found" :
	    "No address associated with the name");
	if (str_len(&detail) > 0)
		str_catf(why, " (%s)", str_cstr(&detail));
	str_release(&detail);
	return st;
}

static bool is_own_addr(const dns_opts_t *o, const struct addrs *ad)
{
	for (size_t i = 0; i < ad->n; i++)
		for (size_t k = 0; k < o->n_own_addrs; k++)
			if (dns_addr_equal(&ad->a[i], &o->own_addrs[k]))
				return true;
	return false;
}

static bool is_myhostname(const dns_opts_t *o, const char *host)
{
	return o->myhostname != NULL && *o->myhostname != '\0' &&
	    dns_name_equal(host, o->myhostname);
}

/* A failed address lookup as a result: temporary defers, the rest
 * bounce. */
static void host_failure(dns_servers_t *out, enum dns_status st, str_t *why)
{
	if (st == DNS_TEMPFAIL)
		fail(out, DNS_RESULT_DEFER, "4.4.3", "%s", str_cstr(why));
	else
		fail(out, DNS_RESULT_BOUNCE, "5.4.4", "%s", str_cstr(why));
}

/* A host without MX records: [host], or a domain as its own MX. */
static enum dns_result host_servers(const dns_nexthop_t *nh, const dns_opts_t *o,
    bool loop_check, dns_servers_t *out)
{
	struct addrs ad;
	str_t why = STR_INIT;
	enum dns_status st;

	if (loop_check && is_myhostname(o, nh->host)) {
		fail(out, DNS_RESULT_BOUNCE, "5.4.6", "mail for %s loops back to myself", nh->host);
		return out->result;
	}
	st = host_addrs(o, nh->host, &ad, &why);
	if (st != DNS_FOUND) {
		host_failure(out, st, &why);
	} else if (loop_check && is_own_addr(o, &ad)) {
		fail(out, DNS_RESULT_BOUNCE, "5.4.6", "mail for %s loops back to myself", nh->host);
	} else {
		for (size_t i = 0; i < ad.n; i++)
			add_server(out, nh->host, &ad.a[i], nh->port, DNS_PREF_NONE);
		order_and_limit(out, o);
	}
	str_release(&why);
	return out->result;
}

struct mx {
	unsigned pref;
	size_t idx;		/* answer order, for a stable sort */
	const char *name;
};

static int mx_cmp(const void *a, const void *b)
{
	const struct mx *x = a, *y = b;
	if (x->pref != y->pref)
		return x->pref < y->pref ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static enum dns_result mx_servers(const dns_nexthop_t *nh, const dns_opts_t *o,
    const dns_reply_t *reply, dns_servers_t *out)
{
	const char *domain = nh->host;
	struct mx *mx;
	size_t n = 0, self_cut = (size_t)-1;
	bool any_temp = false, self_by_addr = false;
	str_t temp_why = STR_INIT, why = STR_INIT;

	/* RFC 7505: a lone MX of preference 0 pointing at the root. */
	if (reply->nrr == 1 && reply->rr[0].pref == 0 &&
	    strcmp(reply->rr[0].name, ".") == 0) {
		fail(out, DNS_RESULT_BOUNCE, "5.1.10",
		    "Domain %s does not accept mail (nullMX)", domain);
		return out->result;
	}
	mx = xcalloc(reply->nrr, sizeof(*mx));
	for (size_t i = 0; i < reply->nrr; i++) {
		/* "." among other MX records, or a name that is no host
		 * name, leads nowhere: skipped. */
		if (!dns_valid_hostname(reply->rr[i].name)) {
			log_warning("%s: skipping MX host with bad name syntax: %s",
			    domain, reply->rr[i].name);
			continue;
		}
		mx[n].pref = reply->rr[i].pref;
		mx[n].idx = i;
		mx[n].name = reply->rr[i].name;
		n++;
	}
	qsort(mx, n, sizeof(*mx), mx_cmp);
	for (size_t a = 0, b; a < n; a = b) {
		for (b = a; b < n && mx[b].pref == mx[a].pref; b++)
			;
		for (size_t i = b - 1; i > a; i--) {
			size_t j = a + next_rand(o) % (i - a + 1);
			struct mx t = mx[i];
			mx[i] = mx[j];
			mx[j] = t;
		}
	}
	/* We are one of the MX hosts by name: only better ones may take
	 * the mail; if there are none, it would come back to us. */
	for (size_t i = 0; i < n; i++) {
		if (is_myhostname(o, mx[i].name)) {
			self_cut = i;
			while (self_cut > 0 && mx[self_cut - 1].pref == mx[i].pref)
				self_cut--;
			n = self_cut;
			break;
		}
	}
	if (self_cut == 0) {
		fail(out, DNS_RESULT_BOUNCE, "5.4.6", "mail for %s loops back to myself", domain);
		goto done;
	}

	for (size_t i = 0; i < n && i < MX_HOSTS_MAX; i++) {
		struct addrs ad;
		/* Enough addresses: finish this preference, then stop (so
		 * the whole preference takes part in the family order and
		 * in the check for ourselves). */
		if (o->address_limit > 0 && out->n >= o->address_limit &&
		    out->v[out->n - 1].pref != (int)mx[i].pref)
			break;
		enum dns_status st = host_addrs(o, mx[i].name, &ad, &why);
		if (st == DNS_FOUND && is_own_addr(o, &ad)) {
			/* Ourselves by address: drop this preference and
			 * worse, including what we took of it. */
			while (out->n > 0 && out->v[out->n - 1].pref >= (int)mx[i].pref) {
				free(out->v[out->n - 1].hostname);
				out->n--;
			}
			self_by_addr = true;
			break;
		}
		if (st == DNS_FOUND) {
			for (size_t k = 0; k < ad.n; k++)
				add_server(out, mx[i].name, &ad.a[k], nh->port, (int)mx[i].pref);
		} else if (st == DNS_TEMPFAIL) {
			if (!any_temp)
				str_set(&temp_why, str_cstr(&why));
			any_temp = true;
		}
	}
	if (out->n == 0) {
		if (self_by_addr && !any_temp)
			fail(out, DNS_RESULT_BOUNCE, "5.4.6", "mail for %s loops back to myself", domain);
		else if (any_temp)
			fail(out, DNS_RESULT_DEFER, "4.4.3", "%s", str_cstr(&temp_why));
		else if (o->defer_if_no_mx_address)
			fail(out, DNS_RESULT_DEFER, "4.4.4",
			    "no MX host for %s has a valid address record", domain);
		else
			fail(out, DNS_RESULT_BOUNCE, "5.4.4",
			    "no MX host for %s has a valid address record", domain);
	} else {
		order_and_limit(out, o);
	}
done:
	free(mx);
	str_release(&temp_why);
	str_release(&why);
	return out->result;
}

enum dns_result dns_find_servers(const dns_nexthop_t *nh, const dns_opts_t *o,
    dns_servers_t *out)
{
	*out = (dns_servers_t)DNS_SERVERS_INIT;
	if ((o->lookup & DNS_LOOKUP_DNS) && o->resolver == NULL)
		log_panic("dns_find_servers: DNS lookups without a resolver");

	if (nh->literal) {
		struct sockaddr_storage ss;
		memset(&ss, 0, sizeof(ss));
		if (inet_pton(AF_INET, nh->host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
			ss.ss_family = AF_INET;
		} else if (inet_pton(AF_INET6, nh->host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
			ss.ss_family = AF_INET6;
		} else {
			fail(out, DNS_RESULT_BOUNCE, "5.1.2", "bad address literal \"%s\"", nh->host);
			return out->result;
		}
		if (!(o->families & (ss.ss_family == AF_INET ? DNS_INET4 : DNS_INET6))) {
			/* Configuration, not the address, is at fault:
			 * wait for it to be fixed. */
			fail(out, DNS_RESULT_DEFER, "4.4.4",
			    "%s address %s: that protocol is disabled by inet_protocols",
			    ss.ss_family == AF_INET ? "IPv4" : "IPv6", nh->host);
			return out->result;
		}
		add_server(out, nh->host, &ss, nh->port, DNS_PREF_NONE);
		return out->result;
	}
	if (!dns_valid_hostname(nh->host)) {
		fail(out, DNS_RESULT_BOUNCE, "5.1.2", "bad host/domain syntax: \"%s\"", nh->host);
		return out->result;
	}
	if (nh->bracketed)
		return host_servers(nh, o, false, out);
	/* Without DNS there are no MX records: the domain is its own MX. */
	if (!(o->lookup & DNS_LOOKUP_DNS))
		return host_servers(nh, o, true, out);

	dns_reply_t reply;
	str_t why = STR_INIT;
	enum dns_status st = dns_lookup(o->resolver, nh->host, DNS_T_MX, &reply, &why);
	switch (st) {
	case DNS_FOUND:
		mx_servers(nh, o, &reply, out);
		break;
	case DNS_NODATA:
		host_servers(nh, o, true, out);
		break;
	case DNS_NXDOMAIN:
		fail(out, DNS_RESULT_BOUNCE, "5.4.4", NOT_FOUND_TEXT "Host not found (%s)",
		    nh->host, "MX", str_cstr(&why));
		break;
	default:
		fail(out, DNS_RESULT_DEFER, "4.4.3", NOT_FOUND_TEXT "Host not found, try again (%s)",
		    nh->host, "MX", str_cstr(&why));
		break;
	}
	dns_reply_free(&reply);
	str_release(&why);
	return out->result;
}
