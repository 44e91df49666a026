/* Who is on the other end of an SMTP connection. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include "log.h"
#include "smtpd.h"

/* ::ffff:192.0.2.1 -> 192.0.2.1 (a dual-stack socket's IPv4 peer). */
static void unmap(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in s4;

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return;
	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	s4.sin_port = s6->sin6_port;
	memcpy(&s4.sin_addr, s6->sin6_addr.s6_addr + 12, 4);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &s4, sizeof(s4));
}

static socklen_t salen(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
	    sizeof(struct sockaddr_in6);
}

/* Reverse lookup confirmed by a forward lookup of the name: a PTR record
 * alone is whatever the owner of the address block wants it to be. */
static void lookup_name(const struct sockaddr_storage *ss, char *name,
    size_t size)
{
	char host[NI_MAXHOST];
	struct addrinfo hints, *res = NULL;
	bool confirmed = false;
	const char *why;

	bcopy_str(name, size, "unknown");
	if (getnameinfo((const struct sockaddr *)ss, salen(ss), host,
	    sizeof(host), NULL, 0, NI_NAMEREQD) != 0)
		return;
	if (!addr_valid_domain(host, strlen(host), ADDR_DOM_TRAILING_DOT, &why))
		return;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = ss->ss_family;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return;
	for (struct addrinfo *ai = res; ai && !confirmed; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET && ss->ss_family == AF_INET)
			confirmed = memcmp(&((struct sockaddr_in *)ai->ai_addr)->sin_addr,
			    &((const struct sockaddr_in *)ss)->sin_addr, 4) == 0;
		else if (ai->ai_family == AF_INET6 && ss->ss_family == AF_INET6)
			confirmed = memcmp(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr,
			    &((const struct sockaddr_in6 *)ss)->sin6_addr, 16) == 0;
	}
	freeaddrinfo(res);
	if (confirmed)
		bcopy_str(name, size, host);
	else
		log_warning("hostname %s does not resolve to address %s", host,
		    inet_ntop(ss->ss_family, ss->ss_family == AF_INET ?
		    (const void *)&((const struct sockaddr_in *)ss)->sin_addr :
		    (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr,
		    (char[INET6_ADDRSTRLEN]){ 0 }, INET6_ADDRSTRLEN));
}

void smtpd_peer_from_fd(const smtpd_cfg_t *cfg, int fd, smtpd_peer_t *peer)
{
	struct sockaddr_storage ss, ls;
	socklen_t len = sizeof(ss);

	memset(peer, 0, sizeof(*peer));
	bcopy_str(peer->name, sizeof(peer->name), "unknown");
	if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0 ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
		/* Not an IP peer (a UNIX socket in a test): say so. */
		bcopy_str(peer->addr, sizeof(peer->addr), "unknown");
		return;
	}
	unmap(&ss);
	sock_addr_str((struct sockaddr *)&ss, peer->addr, sizeof(peer->addr));
	bfmt(peer->port, sizeof(peer->port), "%u", ntohs(ss.ss_family == AF_INET ?
	    ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port));
	len = sizeof(ls);
	if (getsockname(fd, (struct sockaddr *)&ls, &len) == 0 &&
	    (ls.ss_family == AF_INET || ls.ss_family == AF_INET6)) {
		unmap(&ls);
		sock_addr_str((struct sockaddr *)&ls, peer->local_addr,
		    sizeof(peer->local_addr));
	}
	/* A loopback client is this host: named without a lookup, so that
	 * nothing (the test suite in particular) sends queries about 127.x
	 * to DNS. */
	if (!cfg->peername_lookup)
		return;
	if (sock_addr_is_loopback((struct sockaddr *)&ss))
		bcopy_str(peer->name, sizeof(peer->name), "localhost");
	else
		lookup_name(&ss, peer->name, sizeof(peer->name));
}

void smtpd_peer_stand_alone(smtpd_peer_t *peer)
{
	memset(peer, 0, sizeof(*peer));
	bcopy_str(peer->name, sizeof(peer->name), "localhost");
	bcopy_str(peer->addr, sizeof(peer->addr), "127.0.0.1");
	bcopy_str(peer->local_addr, sizeof(peer->local_addr), "127.0.0.1");
	peer->stand_alone = true;
}
