/* Sockets: UNIX and TCP listen/connect, descriptor passing, numeric
 * address parsing and formatting; see sock.h. */
#define _GNU_SOURCE	/* accept4, MSG_CMSG_CLOEXEC, struct ucred on glibc */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "event.h"
#include "sock.h"
#include "str.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0
#endif

/* Milliseconds left until deadline (0 = none) as a poll() timeout. */
static int left_ms(int64_t deadline)
{
	int64_t left;

	if (deadline == 0)
		return -1;
	left = deadline - event_now_ms();
	if (left <= 0)
		return 0;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

/* Sets or clears bit in the flags read with get and written with set. */
static int fcntl_bit(int fd, int get, int set, int bit, bool on)
{
	int fl = fcntl(fd, get);

	if (fl < 0)
		return -1;
	fl = on ? fl | bit : fl & ~bit;
	return fcntl(fd, set, fl) < 0 ? -1 : 0;
}

int sock_set_nonblock(int fd, bool on)
{
	return fcntl_bit(fd, F_GETFL, F_SETFL, O_NONBLOCK, on);
}

int sock_set_blocking_timeout(int fd, int timeout_ms)
{
	struct timeval tv;

	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	if (sock_set_nonblock(fd, false) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		return -1;
	return 0;
}

int sock_set_cloexec(int fd, bool on)
{
	return fcntl_bit(fd, F_GETFD, F_SETFD, FD_CLOEXEC, on);
}

/* A close-on-exec socket, non-blocking if asked. */
int sock_new(int domain, int type, bool nonblock)
{
	int fd;

#if defined(SOCK_CLOEXEC) && defined(SOCK_NONBLOCK)
	fd = socket(domain, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
#else
	fd = socket(domain, type, 0);
	if (fd >= 0 && (sock_set_cloexec(fd, true) < 0 ||
	    (nonblock && sock_set_nonblock(fd, true) < 0))) {
		int saved = errno;
		close(fd);
		errno = saved;
		fd = -1;
	}
#endif
	return fd;
}

static void close_keep_errno(int fd)
{
	int saved = errno;

	close(fd);
	errno = saved;
}

/* Waits for a non-blocking connect to finish; returns its errno (0 on
 * success). */
static int finish_connect(int fd, int64_t deadline)
{
	struct pollfd pfd;
	int r;

	pfd.fd = fd;
	pfd.events = POLLOUT;
	for (;;) {
		pfd.revents = 0;
		r = poll(&pfd, 1, left_ms(deadline));
		if (r > 0)
			break;
		if (r == 0)
			return ETIMEDOUT;
		if (errno != EINTR)
			return errno;
	}
	return sock_connect_error(fd);
}

/* ---- UNIX domain ---- */

int sock_unix_addr(const char *path, struct sockaddr_un *sun, socklen_t *len)
{
	size_t n = strlen(path);

	if (n == 0) {
		errno = EINVAL;
		return -1;
	}
	if (n >= sizeof(sun->sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, n + 1);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	return 0;
}

int sock_unix_connect(const char *path, int timeout_ms, int *fdp)
{
	struct sockaddr_un sun;
	socklen_t len;
	int64_t deadline = timeout_ms > 0 ? event_now_ms() + timeout_ms : 0;
	int fd, err;

	if (sock_unix_addr(path, &sun, &len) < 0)
		return errno;
	if ((fd = sock_new(AF_UNIX, SOCK_STREAM, true)) < 0)
		return errno;
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sun, len) == 0) {
			err = 0;
			break;
		}
		err = errno;
		if (err == EINPROGRESS || err == EINTR) {
			err = finish_connect(fd, deadline);
			break;
		}
		/* Linux says EAGAIN, without a way to wait for it, when the
		 * listener's queue is full: retry for as long as we may. */
		if (err != EAGAIN || timeout_ms < 0)
			break;
		if (deadline && left_ms(deadline) == 0) {
			err = ETIMEDOUT;
			break;
		}
		int nap = left_ms(deadline);
		poll(NULL, 0, nap < 0 || nap > 10 ? 10 : nap);
	}
	if (err) {
		close(fd);
		return err;
	}
	*fdp = fd;
	return 0;
}

/* Is someone listening on the socket file at path?  1 yes, 0 no (stale
 * or gone), -1 with errno if that cannot be told. */
static int unix_alive(const char *path)
{
	int fd, err = sock_unix_connect_start(path, &fd);

	if (err == 0 || err == EINPROGRESS) {
		close(fd);
		return 1;
	}
	if (err == EAGAIN)
		return 1;	/* queue full: alive */
	if (err == ECONNREFUSED || err == ENOENT)
		return 0;
	errno = err;
	return -1;
}

int sock_unix_listen(const char *path, int backlog, mode_t mode)
{
	struct sockaddr_un sun;
	struct stat st;
	socklen_t len;
	mode_t old;
	int fd, r;

	if (sock_unix_addr(path, &sun, &len) < 0)
		return -1;
	mode &= 07777;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			errno = EEXIST;
			return -1;
		}
		r = unix_alive(path);
		if (r < 0)
			return -1;
		if (r > 0) {
			errno = EADDRINUSE;
			return -1;
		}
		if (unlink(path) < 0 && errno != ENOENT)
			return -1;
	}
	if ((fd = sock_new(AF_UNIX, SOCK_STREAM, false)) < 0)
		return -1;
	/* bind() creates the file subject to the umask; narrow it so the
	 * socket is never more open than asked, then set mode exactly.  The
	 * umask is process-wide: fine for Petrel's single-threaded daemons. */
	old = umask(~mode & 0777);
	r = bind(fd, (struct sockaddr *)&sun, len);
	umask(old);
	if (r < 0) {
		close_keep_errno(fd);
		return -1;
	}
	if (chmod(path, mode) < 0 || listen(fd, backlog) < 0) {
		int saved = errno;
		unlink(path);
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* ---- descriptor passing ---- */

ssize_t sock_send_with_fd(int sock, const void *buf, size_t len, int fd,
    int flags)
{
	struct msghdr msg;
	struct iovec iov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	iov.iov_base = (void *)buf;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		struct cmsghdr *cmsg;
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

/* Descriptors one recvmsg() makes room for; a sender passing more is
 * misbehaving, but they are received (and closed) rather than left
 * behind in truncated control data. */
#define RECV_FDS_ROOM 8

ssize_t sock_recv_with_fds(int sock, void *buf, size_t len, int *fds,
    int maxfds, int *nfds, bool *extra, int flags)
{
	struct msghdr msg;
	struct iovec iov;
	struct cmsghdr *cmsg;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(RECV_FDS_ROOM * sizeof(int))];
	} u;
	ssize_t n;

	*nfds = 0;
	*extra = false;
#ifdef MSG_CMSG_CLOEXEC
	flags |= MSG_CMSG_CLOEXEC;
#endif
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = buf;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(sock, &msg, flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if (msg.msg_flags & MSG_CTRUNC)
		*extra = true;
	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		size_t count;
		if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < count; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
			if (*nfds < maxfds) {
#ifndef MSG_CMSG_CLOEXEC
				sock_set_cloexec(fd, true);
#endif
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				*extra = true;
			}
		}
	}
	return n;
}

int sock_send_fd(int sock, int fd)
{
	char byte = 0;

	return sock_send_with_fd(sock, &byte, 1, fd, 0) == 1 ? 0 : -1;
}

int sock_recv_fd(int sock)
{
	char byte;
	int fds[1], nfds;
	bool extra;
	ssize_t n = sock_recv_with_fds(sock, &byte, 1, fds, 1, &nfds, &extra, 0);

	if (n < 0)
		return -1;
	if (n == 0 && nfds == 0) {
		errno = ECONNRESET;
		return -1;
	}
	if (nfds != 1 || extra) {
		if (nfds == 1)
			close(fds[0]);
		errno = EBADMSG;
		return -1;
	}
	return fds[0];
}

/* ---- addresses ---- */

static socklen_t addr_len(const struct sockaddr_storage *ss)
{
	switch (ss->ss_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

static int get_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return -1;
}

static void set_port(struct sockaddr_storage *ss, unsigned port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
}

int sock_split_hostport(const char *spec, int default_port, char *host,
    size_t hsize, unsigned *port)
{
	const char *h, *hend, *p;
	size_t hlen;

	if (spec[0] == '[') {
		h = spec + 1;
		hend = strchr(h, ']');
		if (hend == NULL || hend == h)
			goto bad;
		if (hend[1] == ':')
			p = hend + 2;
		else if (hend[1] == 0)
			p = NULL;
		else
			goto bad;
	} else {
		const char *colon = strchr(spec, ':');
		/* A bare IPv6 address: its last group would pass for a port. */
		if (colon && strchr(colon + 1, ':'))
			goto bad;
		h = spec;
		hend = colon ? colon : spec + strlen(spec);
		p = colon ? colon + 1 : NULL;
	}
	if (p != NULL) {
		unsigned long v = 0;
		size_t i;
		for (i = 0; p[i]; i++) {
			if (!isdigit((unsigned char)p[i]) || i >= 5)
				goto bad;
			v = v * 10 + (unsigned long)(p[i] - '0');
		}
		if (i == 0 || v > 65535)
			goto bad;
		*port = (unsigned)v;
	} else {
		if (default_port < 0 || default_port > 65535)
			goto bad;
		*port = (unsigned)default_port;
	}
	hlen = (size_t)(hend - h);
	if (memchr(h, '[', hlen) || memchr(h, ']', hlen))
		goto bad;
	if (hlen >= hsize) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(host, h, hlen);
	host[hlen] = 0;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int sock_addr_parse(const char *spec, int default_port,
    struct sockaddr_storage *ss, socklen_t *lenp)
{
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
	unsigned port;
	char *scope;

	if (sock_split_hostport(spec, default_port, host, sizeof(host), &port) < 0) {
		errno = EINVAL;
		return -1;
	}
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
	} else {
		if ((scope = strchr(host, '%')) != NULL)
			*scope++ = 0;
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			goto bad;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		if (scope != NULL) {
			unsigned long id;
			if (str_to_ulong(scope, &id) && id <= UINT32_MAX)
				sin6->sin6_scope_id = (uint32_t)id;
			else if ((sin6->sin6_scope_id = if_nametoindex(scope)) == 0)
				goto bad;
		}
	}
	if (lenp)
		*lenp = addr_len(ss);
	return 0;
bad:
	memset(ss, 0, sizeof(*ss));
	errno = EINVAL;
	return -1;
}

bool sock_addr_str(const struct sockaddr *sa, char *buf, size_t size)
{
	char tmp[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];

	switch (sa->sa_family) {
	case AF_INET:
		if (!inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    tmp, sizeof(tmp)))
			break;
		return bcopy_str(buf, size, tmp);
	case AF_INET6: {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		char ifname[IF_NAMESIZE];
		size_t n;
		if (!inet_ntop(AF_INET6, &sin6->sin6_addr, tmp, sizeof(tmp)))
			break;
		n = strlen(tmp);
		if (sin6->sin6_scope_id) {
			if (if_indextoname(sin6->sin6_scope_id, ifname))
				bfmt(tmp + n, sizeof(tmp) - n, "%%%s", ifname);
			else
				bfmt(tmp + n, sizeof(tmp) - n, "%%%u",
				    (unsigned)sin6->sin6_scope_id);
		}
		return bcopy_str(buf, size, tmp);
	}
	case AF_UNIX: {
		const struct sockaddr_un *sun = (const struct sockaddr_un *)sa;
		/* sun_path need not be NUL-terminated when it is full. */
		size_t n = strnlen(sun->sun_path, sizeof(sun->sun_path));
		if (n + 1 > size) {
			if (size) {
				memcpy(buf, sun->sun_path, size - 1);
				buf[size - 1] = 0;
			}
			return false;
		}
		memcpy(buf, sun->sun_path, n);
		buf[n] = 0;
		return true;
	}
	default:
		errno = EAFNOSUPPORT;
		break;
	}
	bcopy_str(buf, size, "?");
	return false;
}

bool sock_addr_port_str(const struct sockaddr *sa, char *buf, size_t size)
{
	char addr[SOCK_ADDR_STRLEN];

	if (sa->sa_family == AF_UNIX)
		return sock_addr_str(sa, buf, size);
	if (!sock_addr_str(sa, addr, sizeof(addr))) {
		bcopy_str(buf, size, "?");
		return false;
	}
	if (sa->sa_family == AF_INET)
		return bfmt(buf, size, "%s:%u", addr,
		    (unsigned)ntohs(((const struct sockaddr_in *)sa)->sin_port));
	return bfmt(buf, size, "[%s]:%u", addr,
	    (unsigned)ntohs(((const struct sockaddr_in6 *)sa)->sin6_port));
}

bool sock_addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		    (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return false;
}

/* ---- TCP ---- */

int sock_local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int port;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if ((port = get_port(&ss)) < 0)
		errno = EAFNOSUPPORT;
	return port;
}

static int listen_one(const struct sockaddr_storage *ss, int backlog)
{
	socklen_t len = addr_len(ss);
	int fd, on = 1;

	if (len == 0) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if ((fd = sock_new(ss->ss_family, SOCK_STREAM, false)) < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		goto fail;
	if (ss->ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) < 0)
		goto fail;
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 ||
	    listen(fd, backlog) < 0)
		goto fail;
	return fd;
fail:
	close_keep_errno(fd);
	return -1;
}

static int listen_addrs_once(const struct sockaddr_storage *addrs, int n,
    int backlog, int *fds)
{
	int shared = 0;

	for (int i = 0; i < n; i++) {
		struct sockaddr_storage a = addrs[i];
		if (shared > 0 && get_port(&a) == 0)
			set_port(&a, (unsigned)shared);
		fds[i] = listen_one(&a, backlog);
		if (fds[i] < 0) {
			while (i-- > 0)
				close_keep_errno(fds[i]);
			return -1;
		}
		if (i == 0 && get_port(&a) == 0 &&
		    (shared = sock_local_port(fds[0])) < 0) {
			close_keep_errno(fds[0]);
			return -1;
		}
	}
	return n;
}

int sock_tcp_listen_addrs(const struct sockaddr_storage *addrs, int n,
    int backlog, int *fds)
{
	int r = -1;

	if (n <= 0) {
		errno = EINVAL;
		return -1;
	}
	/* The port the kernel picked for the first address may be taken on
	 * another: pick again a few times before giving up. */
	for (int tries = 0; tries < 8; tries++) {
		r = listen_addrs_once(addrs, n, backlog, fds);
		if (r >= 0 || errno != EADDRINUSE || get_port(&addrs[0]) != 0 || n == 1)
			break;
	}
	return r;
}

int sock_tcp_listen(const char *spec, int backlog, int fds[SOCK_LISTEN_MAX])
{
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
	struct sockaddr_storage addrs[2];
	unsigned port;
	int r;

	if (sock_split_hostport(spec, -1, host, sizeof(host), &port) < 0) {
		errno = EINVAL;
		return -1;
	}
	if (strcmp(host, "*") != 0 && host[0] != 0) {
		if (sock_addr_parse(spec, -1, &addrs[0], NULL) < 0)
			return -1;
		return sock_tcp_listen_addrs(addrs, 1, backlog, fds);
	}
	/* Every address: IPv4 and IPv6 sockets side by side (V6ONLY). */
	memset(addrs, 0, sizeof(addrs));
	struct sockaddr_in *sin = (struct sockaddr_in *)&addrs[0];
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&addrs[1];
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_ANY);
	sin->sin_port = htons((uint16_t)port);
	sin6->sin6_family = AF_INET6;
	sin6->sin6_addr = in6addr_any;
	sin6->sin6_port = htons((uint16_t)port);
	r = sock_tcp_listen_addrs(addrs, 2, backlog, fds);
	if (r < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL ||
	    errno == EPROTONOSUPPORT))
		r = sock_tcp_listen_addrs(addrs, 1, backlog, fds);	/* no IPv6 */
	return r;
}

static int accept_flags(int lfd, struct sockaddr_storage *peer, socklen_t *len,
    bool nonblock)
{
	struct sockaddr_storage ss;
	socklen_t slen;
	int fd;

	if (peer == NULL)
		peer = &ss;
	if (len == NULL)
		len = &slen;
	for (;;) {
		*len = sizeof(*peer);
#if defined(SOCK_CLOEXEC) && defined(SOCK_NONBLOCK)
		fd = accept4(lfd, (struct sockaddr *)peer, len,
		    SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0));
#else
		fd = accept(lfd, (struct sockaddr *)peer, len);
		if (fd >= 0 && (sock_set_cloexec(fd, true) < 0 ||
		    (nonblock && sock_set_nonblock(fd, true) < 0))) {
			close_keep_errno(fd);
			return -1;
		}
#endif
		if (fd >= 0)
			return fd;
		if (errno != EINTR && errno != ECONNABORTED)
			return -1;
	}
}

int sock_accept(int lfd, struct sockaddr_storage *peer, socklen_t *len)
{
	return accept_flags(lfd, peer, len, false);
}

int sock_accept_nonblock(int lfd)
{
	return accept_flags(lfd, NULL, NULL, true);
}

int sock_peer_uid(int fd, uid_t *uid)
{
#if defined(SO_PEERCRED)
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return -1;
	*uid = cr.uid;
	return 0;
#else
	gid_t gid;

	return getpeereid(fd, uid, &gid);
#endif
}

int sock_tcp_connect(const struct sockaddr *sa, socklen_t len, int timeout_ms,
    int *fdp)
{
	int64_t deadline = timeout_ms > 0 ? event_now_ms() + timeout_ms : 0;
	int fd, err;

	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return EINVAL;
	if ((fd = sock_new(sa->sa_family, SOCK_STREAM, true)) < 0)
		return errno;
	if (connect(fd, sa, len) == 0) {
		*fdp = fd;
		return 0;
	}
	err = errno;
	/* EINTR: the connection goes on in the background; wait as usual. */
	if (err == EINPROGRESS || err == EINTR)
		err = finish_connect(fd, deadline);
	if (err) {
		close(fd);
		return err;
	}
	*fdp = fd;
	return 0;
}

int sock_tcp_connect_str(const char *spec, int timeout_ms, int *fdp)
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (sock_addr_parse(spec, -1, &ss, &len) < 0)
		return EINVAL;
	return sock_tcp_connect((struct sockaddr *)&ss, len, timeout_ms, fdp);
}

/* ---- UNIX-domain datagrams, connections in an event loop ---- */

int sock_unix_dgram_listen(const char *path, mode_t mode)
{
	struct sockaddr_un sun;
	socklen_t len;
	int fd;

	if (sock_unix_addr(path, &sun, &len) < 0)
		return -1;
	if ((fd = sock_new(AF_UNIX, SOCK_DGRAM, false)) < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sun, len) < 0 ||
	    chmod(path, mode) < 0) {
		close_keep_errno(fd);
		return -1;
	}
	return fd;
}

/* A non-blocking socket of type connected, or connecting, to path:
 * sock_unix_connect_start's answers. */
static int unix_connect_type(const char *path, int type, int *fdp)
{
	struct sockaddr_un sun;
	socklen_t len;
	int fd, err;

	if (sock_unix_addr(path, &sun, &len) < 0)
		return errno;
	if ((fd = sock_new(AF_UNIX, type, true)) < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&sun, len) == 0) {
		*fdp = fd;
		return 0;
	}
	err = errno;
	/* EINTR: the connection goes on in the background. */
	if (err == EINPROGRESS || err == EINTR) {
		*fdp = fd;
		return EINPROGRESS;
	}
	close(fd);
	return err;
}

int sock_unix_dgram_connect(const char *path, int *fdp)
{
	int err = unix_connect_type(path, SOCK_DGRAM, fdp);

	/* A UNIX datagram connect never waits; an interrupted one is an
	 * error like any other. */
	if (err == EINPROGRESS) {
		close(*fdp);
		err = EINTR;
	}
	return err;
}

ssize_t sock_unix_sendto(int fd, const char *path, const void *buf,
    size_t len)
{
	struct sockaddr_un sun;
	socklen_t slen;

	if (sock_unix_addr(path, &sun, &slen) < 0)
		return -1;
	return sendto(fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&sun,
	    slen);
}

int sock_unix_connect_start(const char *path, int *fdp)
{
	return unix_connect_type(path, SOCK_STREAM, fdp);
}

int sock_connect_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return errno;
	return err;
}
