/* DNS lookups: one query at a time through a private resolver state.
 *
 * res_nquery() is not used: on any rcode but NOERROR, or an empty answer,
 * it returns -1 and throws the reply away, so NXDOMAIN, SERVFAIL and a
 * reply we could not parse would look alike.  res_nmkquery() + res_nsend()
 * give us the reply whatever its rcode, and dns_parse_reply() decides. */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdlib.h>
#include <string.h>
#include "dns.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"

/* Bounds on what resolv.conf may ask for, so that one lookup cannot hold
 * a delivery for minutes. */
#define MAX_TIMEOUT	5
#define MAX_ATTEMPTS	2

struct dns_resolver {
	struct __res_state res;
	bool inited;
	bool have_server;
	struct sockaddr_in server;
	int timeout;		/* 0: resolv.conf's, cut to MAX_TIMEOUT */
	int attempts;
	dns_transport_fn transport;
	void *transport_ctx;
};

dns_resolver_t *dns_resolver_new(const char *server, str_t *why)
{
	dns_resolver_t *r = xcalloc(1, sizeof(*r));

	if (server != NULL && *server != '\0') {
		struct sockaddr_storage ss;
		/* Loopback only: the setting exists for tests, and must
		 * not become a way to send a production MTA's lookups to
		 * some other host. */
		if (sock_addr_parse(server, 53, &ss, NULL) < 0 ||
		    ss.ss_family != AF_INET ||
		    (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) != 127) {
			if (why != NULL)
				str_setf(why, "bad DNS server address \"%s\": want a loopback IPv4 address, 127.X.Y.Z or 127.X.Y.Z:PORT",
				    server);
			free(r);
			return NULL;
		}
		memcpy(&r->server, &ss, sizeof(r->server));
		r->have_server = true;
	}
	return r;
}

dns_resolver_t *dns_resolver_from_config(str_t *why)
{
	return dns_resolver_new(pconfig_get_str("dns_server_address"), why);
}

void dns_resolver_free(dns_resolver_t *r)
{
	if (r == NULL)
		return;
	if (r->inited)
		res_nclose(&r->res);
	free(r);
}

void dns_resolver_set_limits(dns_resolver_t *r, int timeout, int attempts)
{
	r->timeout = timeout < 1 ? 1 : timeout > 30 ? 30 : timeout;
	r->attempts = attempts < 1 ? 1 : attempts > 5 ? 5 : attempts;
	if (r->inited) {
		r->res.retrans = r->timeout;
		r->res.retry = r->attempts;
	}
}

void dns_resolver_set_transport(dns_resolver_t *r, dns_transport_fn fn,
    void *ctx)
{
	r->transport = fn;
	r->transport_ctx = ctx;
}

/* res_ninit on first use: a process that never looks anything up never
 * reads resolv.conf. */
static int resolver_init(dns_resolver_t *r, str_t *why)
{
	if (r->inited)
		return 0;
	memset(&r->res, 0, sizeof(r->res));
	if (res_ninit(&r->res) < 0) {
		str_setf(why, "cannot initialize the resolver");
		return -1;
	}
	r->inited = true;
	if (r->have_server) {
		/* One server, ours.  The library notices the changed list
		 * on the next send and drops what it had from resolv.conf
		 * (including IPv6 servers kept elsewhere in the state). */
		r->res.nscount = 1;
		r->res.nsaddr_list[0] = r->server;
	}
	if (r->timeout > 0) {
		r->res.retrans = r->timeout;
		r->res.retry = r->attempts;
	} else {
		if (r->res.retrans > MAX_TIMEOUT || r->res.retrans < 1)
			r->res.retrans = MAX_TIMEOUT;
		if (r->res.retry > MAX_ATTEMPTS || r->res.retry < 1)
			r->res.retry = MAX_ATTEMPTS;
	}
	/* No search lists, no appending of the local domain: we send
	 * exactly the names we are given. */
	r->res.options &= ~(RES_DNSRCH | RES_DEFNAMES);
	r->res.options |= RES_RECURSE;
	/* With a server of our own (tests), resolv.conf's options (edns0,
	 * use-vc, rotate, ...) would make the outcome depend on the
	 * machine: plain UDP queries with TCP retry only on truncation. */
	if (r->have_server)
		r->res.options = RES_INIT | RES_RECURSE;
	return 0;
}

static ssize_t send_query(dns_resolver_t *r, const char *name, uint16_t type,
    unsigned char *ans, size_t size, str_t *why)
{
	unsigned char q[NS_PACKETSZ + 64];
	int qlen, n;

	if (r->transport != NULL) {
		errno = 0;
		ssize_t got = r->transport(r->transport_ctx, name, type, ans, size);
		if (got < 0 && errno == 0)
			errno = EIO;
		return got;
	}
	if (resolver_init(r, why) < 0) {
		errno = EIO;
		return -1;
	}
	qlen = res_nmkquery(&r->res, ns_o_query, name, ns_c_in, type, NULL, 0,
	    NULL, q, sizeof(q));
	if (qlen < 0) {
		errno = EINVAL;
		return -1;
	}
	/* res_nsend() treats SERVFAIL, REFUSED and NOTIMP as "try the
	 * next server" and, when none is left, fails as if nothing had
	 * answered.  The last reply is still in the buffer, though: mark
	 * the buffer so that a reply to this query can be told from stale
	 * bytes, and name the rcode in the reason (the status is a
	 * temporary failure either way). */
	ans[0] = q[0] ^ 0xFF;
	ans[2] = 0;
	errno = 0;
	n = res_nsend(&r->res, q, qlen, ans, (int)size);
	if (n < 0) {
		int e = errno != 0 ? errno : ETIMEDOUT;
		if (ans[0] == q[0] && ans[1] == q[1] && (ans[2] & 0x80)) {
			static const char *const names[] = { "NOERROR", "FORMERR",
			    "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED" };
			unsigned rc = ans[3] & 0x0F;
			if (rc < 6)
				str_setf(why, "server reply %s", names[rc]);
			else
				str_setf(why, "server reply with rcode %u", rc);
		}
		errno = e;
		return -1;
	}
	return n;
}

ssize_t dns_query_make(dns_resolver_t *r, const char *name, uint16_t type,
    unsigned char *buf, size_t size, str_t *why)
{
	int n;

	if (!dns_valid_hostname(name)) {
		str_setf(why, "not a valid host name");
		return -1;
	}
	if (resolver_init(r, why) < 0)
		return -1;
	n = res_nmkquery(&r->res, ns_o_query, name, ns_c_in, type, NULL, 0,
	    NULL, buf, (int)(size > INT_MAX ? INT_MAX : size));
	if (n < 0) {
		str_setf(why, "cannot build a query for %s", name);
		return -1;
	}
	return n;
}

int dns_resolver_server(dns_resolver_t *r, struct sockaddr_in *out,
    str_t *why)
{
	if (r->have_server) {
		*out = r->server;
		return 0;
	}
	if (resolver_init(r, why) < 0)
		return -1;
	for (int i = 0; i < r->res.nscount && i < MAXNS; i++)
		if (r->res.nsaddr_list[i].sin_family == AF_INET) {
			*out = r->res.nsaddr_list[i];
			return 0;
		}
	str_setf(why, "no IPv4 name server in the resolver configuration");
	return -1;
}

enum dns_status dns_lookup(dns_resolver_t *r, const char *name,
    uint16_t type, dns_reply_t *reply, str_t *why)
{
	unsigned char *ans;
	ssize_t n;
	enum dns_status st;
	str_t tmp = STR_INIT;
	str_t *w = why != NULL ? why : &tmp;

	*reply = (dns_reply_t)DNS_REPLY_INIT;
	str_reset(w);
	if (!dns_valid_hostname(name)) {
		str_setf(w, "not a valid host name");
		str_release(&tmp);
		return DNS_NXDOMAIN;
	}
	ans = xmalloc(DNS_PACKET_MAX);
	n = send_query(r, name, type, ans, DNS_PACKET_MAX, w);
	if (n < 0) {
		int e = errno;
		if (str_len(w) == 0) {
			if (e == ETIMEDOUT)
				str_set(w, "no reply from the name server (timeout)");
			else if (e == ECONNREFUSED)
				str_set(w, "name server refused the connection");
			else
				str_setf(w, "cannot reach the name server: %s", strerror(e));
		}
		st = DNS_TEMPFAIL;
	} else if ((size_t)n > DNS_PACKET_MAX) {
		/* The library reports the full length of a reply it had to
		 * cut to fit the buffer. */
		str_setf(w, "DNS reply of %zd bytes does not fit the buffer", n);
		st = DNS_TEMPFAIL;
	} else {
		st = dns_parse_reply(ans, (size_t)n, name, type, reply, w);
	}
	free(ans);
	str_release(&tmp);
	return st;
}

/* Word lists like "dns, native" against the words allowed. */
static int parse_words(const char *value, const char *const *words, int nwords)
{
	char *copy = xstrdup(value), *cp = copy, *tok;
	int mask = 0;

	while ((tok = str_token(&cp, " \t,")) != NULL) {
		int i;
		for (i = 0; i < nwords; i++)
			if (strcmp(tok, words[i]) == 0)
				break;
		if (i == nwords) {
			free(copy);
			return -1;
		}
		mask |= 1 << i;
	}
	free(copy);
	return mask == 0 ? -1 : mask;
}

int dns_parse_protocols(const char *value)
{
	static const char *const words[] = { "ipv4", "ipv6", "all" };
	int m = parse_words(value, words, 3);
	if (m < 0)
		return -1;
	if (m & 4)
		return DNS_INET4 | DNS_INET6;
	return m;		/* bits 1 and 2 are DNS_INET4, DNS_INET6 */
}

int dns_parse_host_lookup(const char *value)
{
	static const char *const words[] = { "dns", "native" };
	return parse_words(value, words, 2);	/* DNS_LOOKUP_DNS, _NATIVE */
}

bool dns_addr_equal(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr,
		    sizeof(struct in6_addr)) == 0;
	return false;
}

enum dns_status dns_native_lookup(const char *host, int families,
    struct sockaddr_storage *out, size_t max, size_t *n, str_t *why)
{
	struct addrinfo hints, *res = NULL, *ai;
	int rc;

	*n = 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = families == DNS_INET4 ? AF_INET :
	    families == DNS_INET6 ? AF_INET6 : AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0) {
		enum dns_status st;
		switch (rc) {
		case EAI_NONAME:
			st = DNS_NXDOMAIN;
			break;
#ifdef EAI_NODATA
		case EAI_NODATA:
			st = DNS_NODATA;
			break;
#endif
#ifdef EAI_ADDRFAMILY
		case EAI_ADDRFAMILY:
			st = DNS_NODATA;
			break;
#endif
		case EAI_SYSTEM:
			if (why != NULL)
				str_setf(why, "%s", strerror(errno));
			return DNS_TEMPFAIL;
		default:
			st = DNS_TEMPFAIL;
			break;
		}
		if (why != NULL)
			str_setf(why, "%s", gai_strerror(rc));
		return st;
	}
	for (ai = res; ai != NULL && *n < max; ai = ai->ai_next) {
		struct sockaddr_storage ss;
		if ((ai->ai_family != AF_INET || !(families & DNS_INET4)) &&
		    (ai->ai_family != AF_INET6 || !(families & DNS_INET6)))
			continue;
		if (ai->ai_addrlen > sizeof(ss))
			continue;
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		bool dup = false;
		for (size_t i = 0; i < *n && !dup; i++)
			dup = dns_addr_equal(&out[i], &ss);
		if (!dup)
			out[(*n)++] = ss;
	}
	freeaddrinfo(res);
	if (*n == 0) {
		if (why != NULL)
			str_set(why, "no address of an enabled protocol");
		return DNS_NODATA;
	}
	return DNS_FOUND;
}
