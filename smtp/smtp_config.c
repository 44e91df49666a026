/* The client's settings from the smtp_* parameters. */
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "maps.h"
#include "mem.h"
#include "pconfig.h"
#include "smtp_int.h"

static int ms(const char *name)
{
	long s = pconfig_get_time(name);

	if (s > INT_MAX / 1000)
		return INT_MAX;
	return s < 0 ? 0 : (int)(s * 1000);
}

/* A parameter of the protocol's family: "smtp_mail_timeout" or
 * "lmtp_mail_timeout". */
static const char *pname(char *buf, size_t size, const char *proto,
    const char *rest)
{
	if (!bfmt(buf, size, "%s_%s", proto, rest))
		buf[0] = '\0';
	return buf;
}

/* SMTP AUTH in the client, from PROTO_sasl_* (smtp or lmtp). */
static int load_sasl(smtp_sasl_config_t *s, const char *proto, str_t *err)
{
	char n[64];

	(void)bcopy_str(s->proto, sizeof(s->proto), proto);
	s->enable = pconfig_get_bool(pname(n, sizeof(n), proto,
	    "sasl_auth_enable"));
	s->sender_dependent = pconfig_get_bool(pname(n, sizeof(n), proto,
	    "sender_dependent_authentication"));
	s->soft_bounce = pconfig_get_bool(pname(n, sizeof(n), proto,
	    "sasl_auth_soft_bounce"));
	if (sasl_opts_parse(pconfig_get_str(pname(n, sizeof(n), proto,
	    "sasl_security_options")), &s->opts, err) < 0 ||
	    sasl_opts_parse(pconfig_get_str(pname(n, sizeof(n), proto,
	    "sasl_tls_security_options")), &s->tls_opts, err) < 0 ||
	    smtp_sasl_filter_set(s, pconfig_get_str(pname(n, sizeof(n), proto,
	    "sasl_mechanism_filter")), err) < 0)
		return -1;
	/* Opened now, before the chroot, as every table. */
	if (s->enable && smtp_sasl_maps_open(s, pconfig_get_str(pname(n,
	    sizeof(n), proto, "sasl_password_maps")), err) < 0)
		return -1;
	return 0;
}

/* What smtp and lmtp read alike, each from its own parameters (proto
 * "smtp" or "lmtp", greet "helo" or "lhlo"), and the resolver. */
static int load_common(smtp_config_t *c, const char *proto,
    const char *greet, str_t *err)
{
	char n[64], g[32];
	const char *v;
	dns_resolver_t *r;

#define T(field, rest) c->field = ms(pname(n, sizeof(n), proto, rest))
	T(connect_timeout_ms, "connect_timeout");
	T(mail_timeout_ms, "mail_timeout");
	T(rcpt_timeout_ms, "rcpt_timeout");
	T(data_init_timeout_ms, "data_init_timeout");
	T(data_xfer_timeout_ms, "data_xfer_timeout");
	T(data_done_timeout_ms, "data_done_timeout");
	T(rset_timeout_ms, "rset_timeout");
	T(quit_timeout_ms, "quit_timeout");
	T(cache_time_limit_ms, "connection_cache_time_limit");
	T(reuse_time_limit_ms, "connection_reuse_time_limit");
	(void)bfmt(g, sizeof(g), "%s_timeout", greet);
	T(helo_timeout_ms, g);
#undef T
	(void)bfmt(g, sizeof(g), "%s_name", greet);
	v = pconfig_get_str(pname(n, sizeof(n), proto, g));
	if (v[0] == '\0' || strpbrk(v, " \t\r\n") != NULL ||
	    !bcopy_str(c->helo_name, sizeof(c->helo_name), v)) {
		str_setf(err, "%s: bad value \"%s\"", n, v);
		return -1;
	}
	c->line_length_limit = (size_t)pconfig_get_int(pname(n, sizeof(n),
	    proto, "line_length_limit"));
	c->connection_cache = pconfig_get_bool(pname(n, sizeof(n), proto,
	    "connection_cache_on_demand"));
	c->starttls_timeout_ms = ms(pname(n, sizeof(n), proto,
	    "starttls_timeout"));
	v = pconfig_get_str(pname(n, sizeof(n), proto, "tls_security_level"));
	if (!tls_level_parse(v, &c->tls_level)) {
		str_setf(err, "%s: unknown level \"%s\"", n, v);
		return -1;
	}
	if (load_sasl(&c->sasl, proto, err) < 0)
		return -1;
	if (dns_opts_from_config(&c->dns, err) < 0)
		return -1;
	if ((c->dns.lookup & DNS_LOOKUP_DNS) != 0) {
		if ((r = dns_resolver_from_config(err)) == NULL)
			return -1;
		c->dns.resolver = r;
	}
	return 0;
}

int smtp_config_load(smtp_config_t *c, str_t *err)
{
	smtp_config_defaults(c);
	if (load_common(c, "smtp", "helo", err) < 0) {
		smtp_config_release(c);
		return -1;
	}
	c->mx_session_limit = (size_t)pconfig_get_int("smtp_mx_session_limit");
	c->skip_5xx_greeting = pconfig_get_bool("smtp_skip_5xx_greeting");
	c->always_send_ehlo = pconfig_get_bool("smtp_always_send_ehlo");
	c->reuse_count_limit =
	    (unsigned)pconfig_get_int("smtp_connection_reuse_count_limit");
	return 0;
}

int smtp_config_load_lmtp(smtp_config_t *c, str_t *err)
{
	smtp_config_defaults(c);
	c->lmtp = true;
	c->default_port = 24;
	/* One server per next hop: its soft failures are final. */
	c->mx_session_limit = 1;
	if (load_common(c, "lmtp", "lhlo", err) < 0) {
		smtp_config_release(c);
		return -1;
	}
	return 0;
}

/* At most this many of our own addresses are kept. */
#define OWN_MAX 256

static void own_add(struct sockaddr_storage *v, size_t *n,
    const struct sockaddr *sa)
{
	size_t len = sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6);

	if (*n >= OWN_MAX || (sa->sa_family != AF_INET &&
	    sa->sa_family != AF_INET6))
		return;
	memset(&v[*n], 0, sizeof(v[*n]));
	memcpy(&v[*n], sa, len);
	for (size_t i = 0; i < *n; i++)
		if (dns_addr_equal(&v[i], &v[*n]))
			return;
	(*n)++;
}

static int own_list(const char *list, struct sockaddr_storage *v, size_t *n,
    str_t *err)
{
	char *copy = xstrdup(list), *cp = copy, *tok;
	int rc = 0;

	while (rc == 0 && (tok = str_token(&cp, " \t,")) != NULL) {
		if (strcmp(tok, "all") == 0) {
			struct ifaddrs *ifa;
			if (getifaddrs(&ifa) < 0) {
				str_setf(err, "getifaddrs: %s", strerror(errno));
				rc = -1;
				break;
			}
			for (struct ifaddrs *p = ifa; p != NULL; p = p->ifa_next)
				if (p->ifa_addr != NULL)
					own_add(v, n, p->ifa_addr);
			freeifaddrs(ifa);
		} else {
			struct addrinfo hints, *ai;
			const char *host = strcmp(tok, "loopback-only") == 0 ?
			    NULL : tok;
			int e;
			if (host == NULL) {
				struct sockaddr_in s4 = { .sin_family = AF_INET };
				struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
				s4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
				s6.sin6_addr = in6addr_loopback;
				own_add(v, n, (struct sockaddr *)&s4);
				own_add(v, n, (struct sockaddr *)&s6);
				continue;
			}
			if (host[0] == '[') {	/* [addr] as in master.cf */
				host++;
				tok[strcspn(tok, "]")] = '\0';
			}
			memset(&hints, 0, sizeof(hints));
			hints.ai_socktype = SOCK_STREAM;
			if ((e = getaddrinfo(host, NULL, &hints, &ai)) != 0) {
				str_setf(err, "cannot find the address of "
				    "interface \"%s\": %s", host, gai_strerror(e));
				rc = -1;
				break;
			}
			for (struct addrinfo *p = ai; p != NULL; p = p->ai_next)
				own_add(v, n, p->ai_addr);
			freeaddrinfo(ai);
		}
	}
	free(copy);
	return rc;
}

int smtp_own_addresses(smtp_config_t *c, str_t *err)
{
	struct sockaddr_storage *v = xcalloc(OWN_MAX, sizeof(*v));
	size_t n = 0;

	if (own_list(pconfig_get_str("inet_interfaces"), v, &n, err) < 0 ||
	    own_list(pconfig_get_str("proxy_interfaces"), v, &n, err) < 0) {
		free(v);
		return -1;
	}
	free((void *)c->dns.own_addrs);
	c->dns.own_addrs = v;
	c->dns.n_own_addrs = n;
	return 0;
}

void smtp_config_release(smtp_config_t *c)
{
	maps_free(c->sasl.maps);
	c->sasl.maps = NULL;
	free((void *)c->dns.own_addrs);
	c->dns.own_addrs = NULL;
	c->dns.n_own_addrs = 0;
	if (c->dns.resolver != NULL)
		dns_resolver_free(c->dns.resolver);
	c->dns.resolver = NULL;
}
