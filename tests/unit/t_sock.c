/* Unit tests for libutil/sock.  Network use is confined to 127.0.0.1 and
 * ::1 with kernel-chosen ports; UNIX sockets live in the test's own
 * directory (kyua gives each test case a fresh one). */
#include <atf-c.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "sock.h"

static bool is_nonblock(int fd)
{
	return (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
}

static bool is_cloexec(int fd)
{
	return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0;
}

/* Skips the test if this host cannot bind ::1. */
static void require_ipv6(void)
{
	struct sockaddr_in6 sin6;
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd < 0)
		atf_tc_skip("no IPv6 sockets: %s", strerror(errno));
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_addr = in6addr_loopback;
	if (bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)) < 0) {
		int e = errno;
		close(fd);
		atf_tc_skip("cannot bind ::1: %s", strerror(e));
	}
	close(fd);
}

/* Listen on addr port 0, connect, accept, and pass a few bytes each way;
 * checks flags and formatting on the way. */
static void tcp_roundtrip(const char *listen_spec, const char *host, bool v6)
{
	int lfds[SOCK_LISTEN_MAX], cfd, afd, port;
	char spec[128], text[SOCK_ADDR_STRLEN], expect[SOCK_ADDR_STRLEN];
	struct sockaddr_storage peer;
	socklen_t plen;
	char buf[8];

	ATF_REQUIRE_EQ_MSG(sock_tcp_listen(listen_spec, 16, lfds), 1,
	    "listen %s: %s", listen_spec, strerror(errno));
	ATF_CHECK(is_cloexec(lfds[0]));
	ATF_CHECK(!is_nonblock(lfds[0]));
	port = sock_local_port(lfds[0]);
	ATF_REQUIRE(port > 0 && port < 65536);
	if (v6) {
		int on = 0;
		socklen_t olen = sizeof(on);
		ATF_CHECK_EQ(getsockopt(lfds[0], IPPROTO_IPV6, IPV6_V6ONLY,
		    &on, &olen), 0);
		ATF_CHECK_EQ(on, 1);
		snprintf(spec, sizeof(spec), "[%s]:%d", host, port);
	} else {
		snprintf(spec, sizeof(spec), "%s:%d", host, port);
	}
	ATF_REQUIRE_EQ_MSG(sock_tcp_connect_str(spec, 2000, &cfd), 0,
	    "connect %s", spec);
	ATF_CHECK(is_nonblock(cfd));
	ATF_CHECK(is_cloexec(cfd));
	afd = sock_accept(lfds[0], &peer, &plen);
	ATF_REQUIRE(afd >= 0);
	ATF_CHECK(is_cloexec(afd));
	/* The peer as text is host and the client's own port. */
	ATF_CHECK(sock_addr_str((struct sockaddr *)&peer, text, sizeof(text)));
	ATF_CHECK_STREQ(text, host);
	ATF_CHECK(sock_addr_port_str((struct sockaddr *)&peer, text, sizeof(text)));
	snprintf(expect, sizeof(expect), v6 ? "[%s]:%d" : "%s:%d", host,
	    sock_local_port(cfd));
	ATF_CHECK_STREQ(text, expect);
	ATF_REQUIRE_EQ(write(afd, "hi", 2), 2);
	ATF_REQUIRE_EQ(sock_set_nonblock(cfd, false), 0);
	ATF_CHECK(!is_nonblock(cfd));
	ATF_CHECK_EQ(read(cfd, buf, 2), 2);
	ATF_CHECK(memcmp(buf, "hi", 2) == 0);
	close(afd);
	close(cfd);
	close(lfds[0]);
}

ATF_TC_WITHOUT_HEAD(tcp4_loopback);
ATF_TC_BODY(tcp4_loopback, tc)
{
	tcp_roundtrip("127.0.0.1:0", "127.0.0.1", false);
}

ATF_TC_WITHOUT_HEAD(tcp6_loopback);
ATF_TC_BODY(tcp6_loopback, tc)
{
	require_ipv6();
	tcp_roundtrip("[::1]:0", "::1", true);
}

/* Two addresses with port 0 end up on one port. */
ATF_TC_WITHOUT_HEAD(listen_addrs_shared_port);
ATF_TC_BODY(listen_addrs_shared_port, tc)
{
	struct sockaddr_storage addrs[2];
	int fds[2], cfd;
	char spec[64];

	require_ipv6();
	ATF_REQUIRE_EQ(sock_addr_parse("127.0.0.1:0", -1, &addrs[0], NULL), 0);
	ATF_REQUIRE_EQ(sock_addr_parse("[::1]:0", -1, &addrs[1], NULL), 0);
	ATF_REQUIRE_EQ(sock_tcp_listen_addrs(addrs, 2, 8, fds), 2);
	int port = sock_local_port(fds[0]);
	ATF_CHECK(port > 0);
	ATF_CHECK_EQ(sock_local_port(fds[1]), port);
	snprintf(spec, sizeof(spec), "[::1]:%d", port);
	ATF_CHECK_EQ(sock_tcp_connect_str(spec, 2000, &cfd), 0);
	close(cfd);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", port);
	ATF_CHECK_EQ(sock_tcp_connect_str(spec, 2000, &cfd), 0);
	close(cfd);
	close(fds[0]);
	close(fds[1]);
	ATF_CHECK_EQ(sock_tcp_listen_addrs(addrs, 0, 8, fds), -1);
	ATF_CHECK_EQ(errno, EINVAL);
}

ATF_TC_WITHOUT_HEAD(listen_errors);
ATF_TC_BODY(listen_errors, tc)
{
	int fds[SOCK_LISTEN_MAX], again[SOCK_LISTEN_MAX];
	char spec[64];

	ATF_CHECK_EQ(sock_tcp_listen("127.0.0.1", 8, fds), -1);	/* no port */
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_CHECK_EQ(sock_tcp_listen("127.0.0.1:65536", 8, fds), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_CHECK_EQ(sock_tcp_listen("localhost:25", 8, fds), -1);	/* numeric only */
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_CHECK_EQ(sock_tcp_listen("::1:25", 8, fds), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	/* A port in use. */
	ATF_REQUIRE_EQ(sock_tcp_listen("127.0.0.1:0", 8, fds), 1);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", sock_local_port(fds[0]));
	ATF_CHECK_EQ(sock_tcp_listen(spec, 8, again), -1);
	ATF_CHECK_EQ(errno, EADDRINUSE);
	close(fds[0]);
	/* The port of a UNIX socket makes no sense. */
	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	ATF_CHECK_EQ(sock_local_port(fds[0]), -1);
	close(fds[0]);
	close(fds[1]);
}

ATF_TC_WITHOUT_HEAD(connect_refused);
ATF_TC_BODY(connect_refused, tc)
{
	int fds[SOCK_LISTEN_MAX], fd = -1;
	char spec[64];

	/* A port that was just free: bind, learn it, close. */
	ATF_REQUIRE_EQ(sock_tcp_listen("127.0.0.1:0", 8, fds), 1);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", sock_local_port(fds[0]));
	close(fds[0]);
	ATF_CHECK_EQ(sock_tcp_connect_str(spec, 2000, &fd), ECONNREFUSED);
	ATF_CHECK_EQ(fd, -1);
	ATF_CHECK_EQ(sock_tcp_connect_str("nonsense", 2000, &fd), EINVAL);
	ATF_CHECK_EQ(sock_tcp_connect_str("localhost:25", 2000, &fd), EINVAL);
	struct sockaddr_un sun;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	ATF_CHECK_EQ(sock_tcp_connect((struct sockaddr *)&sun, sizeof(sun),
	    100, &fd), EINVAL);
}

/* A listener whose accept queue is full drops new SYNs on loopback (on
 * Linux), so a connect then times out: ETIMEDOUT, not refused. */
ATF_TC_WITHOUT_HEAD(connect_timeout);
ATF_TC_BODY(connect_timeout, tc)
{
	struct sockaddr_storage ss;
	int lfd, held[16], nheld = 0, err = 0, fd;
	char spec[64];

	ATF_REQUIRE_EQ(sock_addr_parse("127.0.0.1:0", -1, &ss, NULL), 0);
	ATF_REQUIRE_EQ(sock_tcp_listen_addrs(&ss, 1, 0, &lfd), 1);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", sock_local_port(lfd));
	while (nheld < 16) {
		err = sock_tcp_connect_str(spec, 200, &fd);
		if (err != 0)
			break;
		held[nheld++] = fd;
	}
	for (int i = 0; i < nheld; i++)
		close(held[i]);
	close(lfd);
	if (err == 0)
		atf_tc_skip("the kernel accepted %d connections beyond a "
		    "backlog of 0; cannot provoke a timeout on loopback", nheld);
	ATF_CHECK_EQ_MSG(err, ETIMEDOUT, "got %s", strerror(err));
}

ATF_TC_WITHOUT_HEAD(hostport_parsing);
ATF_TC_BODY(hostport_parsing, tc)
{
	static const struct {
		const char *spec;
		int def;
		const char *host;	/* NULL: must fail with EINVAL */
		unsigned port;
	} t[] = {
		{ "127.0.0.1:25", -1, "127.0.0.1", 25 },
		{ "[::1]:587", -1, "::1", 587 },
		{ "[fe80::1%eth0]:25", -1, "fe80::1%eth0", 25 },
		{ "*:2525", -1, "*", 2525 },
		{ ":2525", -1, "", 2525 },
		{ "mx.example.com:25", -1, "mx.example.com", 25 },
		{ "host", 25, "host", 25 },
		{ "[::1]", 25, "::1", 25 },
		{ "127.0.0.1:0", -1, "127.0.0.1", 0 },
		{ "127.0.0.1:65535", -1, "127.0.0.1", 65535 },
		{ "host", -1, NULL, 0 },	/* no port, no default */
		{ "host:", -1, NULL, 0 },
		{ "host:65536", -1, NULL, 0 },
		{ "host:123456", -1, NULL, 0 },
		{ "host:25x", -1, NULL, 0 },
		{ "host:-1", -1, NULL, 0 },
		{ "host:smtp", -1, NULL, 0 },	/* numeric ports only */
		{ "::1", 25, NULL, 0 },	/* IPv6 needs brackets */
		{ "::1:25", -1, NULL, 0 },
		{ "[::1", 25, NULL, 0 },
		{ "[::1]25", -1, NULL, 0 },
		{ "[]:25", -1, NULL, 0 },
		{ "[a]b]:25", -1, NULL, 0 },
		{ "a[b:25", -1, NULL, 0 },
	};
	char host[64];
	unsigned port;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int r = sock_split_hostport(t[i].spec, t[i].def, host,
		    sizeof(host), &port);
		if (t[i].host == NULL) {
			ATF_CHECK_EQ_MSG(r, -1, "%s accepted", t[i].spec);
			ATF_CHECK_EQ_MSG(errno, EINVAL, "%s", t[i].spec);
			continue;
		}
		ATF_CHECK_EQ_MSG(r, 0, "%s rejected", t[i].spec);
		ATF_CHECK_STREQ_MSG(host, t[i].host, "%s", t[i].spec);
		ATF_CHECK_EQ_MSG(port, t[i].port, "%s", t[i].spec);
	}
	ATF_CHECK_EQ(sock_split_hostport("verylonghostname:25", -1, host, 8,
	    &port), -1);
	ATF_CHECK_EQ(errno, ENAMETOOLONG);
}

ATF_TC_WITHOUT_HEAD(addr_parse_and_format);
ATF_TC_BODY(addr_parse_and_format, tc)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char buf[SOCK_ADDR_STRLEN];

	ATF_REQUIRE_EQ(sock_addr_parse("192.0.2.7:25", -1, &ss, &len), 0);
	ATF_CHECK_EQ(ss.ss_family, AF_INET);
	ATF_CHECK_EQ(len, sizeof(struct sockaddr_in));
	ATF_CHECK(sock_addr_port_str((struct sockaddr *)&ss, buf, sizeof(buf)));
	ATF_CHECK_STREQ(buf, "192.0.2.7:25");
	ATF_CHECK(sock_addr_str((struct sockaddr *)&ss, buf, sizeof(buf)));
	ATF_CHECK_STREQ(buf, "192.0.2.7");

	ATF_REQUIRE_EQ(sock_addr_parse("[2001:DB8:0::1]:587", -1, &ss, &len), 0);
	ATF_CHECK_EQ(ss.ss_family, AF_INET6);
	ATF_CHECK_EQ(len, sizeof(struct sockaddr_in6));
	ATF_CHECK(sock_addr_port_str((struct sockaddr *)&ss, buf, sizeof(buf)));
	ATF_CHECK_STREQ(buf, "[2001:db8::1]:587");	/* canonical form */
	ATF_CHECK(sock_addr_str((struct sockaddr *)&ss, buf, sizeof(buf)));
	ATF_CHECK_STREQ(buf, "2001:db8::1");

	/* Numeric scope ids survive a round trip when no interface has the
	 * index; the text then shows the number. */
	ATF_REQUIRE_EQ(sock_addr_parse("[fe80::1%4000000]:25", -1, &ss, NULL), 0);
	ATF_CHECK_EQ(((struct sockaddr_in6 *)&ss)->sin6_scope_id, 4000000);
	ATF_CHECK(sock_addr_port_str((struct sockaddr *)&ss, buf, sizeof(buf)));
	ATF_CHECK_STREQ(buf, "[fe80::1%4000000]:25");

	ATF_REQUIRE_EQ(sock_addr_parse("[192.0.2.1]", 25, &ss, NULL), 0);
	ATF_CHECK_EQ(ss.ss_family, AF_INET);

	/* Not numeric, or malformed. */
	static const char *bad[] = { "example.com:25", "127.1:25",
	    "1.2.3.256:25", "[::g]:25", "[fe80::1%nosuchif0]:25",
	    "192.0.2.1%eth0:25", "[1.2.3.4%1]:25", "", "*:25" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ATF_CHECK_EQ_MSG(sock_addr_parse(bad[i], -1, &ss, NULL), -1,
		    "%s accepted", bad[i]);
		ATF_CHECK_EQ(errno, EINVAL);
	}

	/* Cut to fit: false, still terminated. */
	ATF_REQUIRE_EQ(sock_addr_parse("192.0.2.7:25", -1, &ss, NULL), 0);
	ATF_CHECK(!sock_addr_port_str((struct sockaddr *)&ss, buf, 8));
	ATF_CHECK_EQ(strlen(buf), 7);
	ATF_CHECK(!sock_addr_str((struct sockaddr *)&ss, buf, 4));
	ATF_CHECK_STREQ(buf, "192");

	/* UNIX and unknown families. */
	struct sockaddr_un sun;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, "private/qmgr", 13);
	ATF_CHECK(sock_addr_port_str((struct sockaddr *)&sun, buf, sizeof(buf)));
	ATF_CHECK_STREQ(buf, "private/qmgr");
	memset(sun.sun_path, 'x', sizeof(sun.sun_path));	/* no NUL */
	char big[sizeof(sun.sun_path) + 8];
	ATF_CHECK(sock_addr_str((struct sockaddr *)&sun, big, sizeof(big)));
	ATF_CHECK_EQ(strlen(big), sizeof(sun.sun_path));
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNSPEC;
	ATF_CHECK(!sock_addr_port_str((struct sockaddr *)&ss, buf, sizeof(buf)));
	ATF_CHECK_STREQ(buf, "?");
}

ATF_TC_WITHOUT_HEAD(addr_is_loopback);
ATF_TC_BODY(addr_is_loopback, tc)
{
	static const char *yes[] = { "127.0.0.1:25", "127.255.0.9:25",
	    "[::1]:25", "[::ffff:127.0.0.1]:25", "[::ffff:127.1.2.3]:25" };
	static const char *no[] = { "128.0.0.1:25", "126.255.255.255:25",
	    "0.0.0.0:25", "10.0.0.1:25", "[::]:25", "[::2]:25",
	    "[::ffff:10.0.0.1]:25", "[::127.0.0.1]:25", "[2001:db8::1]:25" };
	struct sockaddr_storage ss;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		ATF_REQUIRE_EQ(sock_addr_parse(yes[i], -1, &ss, NULL), 0);
		ATF_CHECK_MSG(sock_addr_is_loopback((struct sockaddr *)&ss),
		    "%s: not loopback", yes[i]);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		ATF_REQUIRE_EQ(sock_addr_parse(no[i], -1, &ss, NULL), 0);
		ATF_CHECK_MSG(!sock_addr_is_loopback((struct sockaddr *)&ss),
		    "%s: loopback", no[i]);
	}
	/* Other families never are. */
	struct sockaddr_un sun;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	ATF_CHECK(!sock_addr_is_loopback((struct sockaddr *)&sun));
}

ATF_TC_WITHOUT_HEAD(unix_listen_connect);
ATF_TC_BODY(unix_listen_connect, tc)
{
	struct stat st;
	int lfd, cfd, afd;
	char buf[4];

	lfd = sock_unix_listen("sock", 8, 0620);
	ATF_REQUIRE_MSG(lfd >= 0, "listen: %s", strerror(errno));
	ATF_CHECK(is_cloexec(lfd));
	ATF_REQUIRE_EQ(lstat("sock", &st), 0);
	ATF_CHECK(S_ISSOCK(st.st_mode));
	ATF_CHECK_EQ(st.st_mode & 07777, 0620);	/* exact, umask or not */
	ATF_REQUIRE_EQ(sock_unix_connect("sock", 1000, &cfd), 0);
	ATF_CHECK(is_nonblock(cfd));
	ATF_CHECK(is_cloexec(cfd));
	afd = sock_accept(lfd, NULL, NULL);
	ATF_REQUIRE(afd >= 0);
	ATF_REQUIRE_EQ(write(afd, "ok", 2), 2);
	ATF_REQUIRE_EQ(sock_set_nonblock(cfd, false), 0);
	ATF_CHECK_EQ(read(cfd, buf, 2), 2);
	ATF_CHECK(memcmp(buf, "ok", 2) == 0);
	close(afd);
	close(cfd);
	/* Someone listens: the file is not taken over. */
	ATF_CHECK_EQ(sock_unix_listen("sock", 8, 0600), -1);
	ATF_CHECK_EQ(errno, EADDRINUSE);
	close(lfd);
	/* Now stale: connect is refused, and listen replaces it. */
	ATF_CHECK_EQ(sock_unix_connect("sock", 1000, &cfd), ECONNREFUSED);
	lfd = sock_unix_listen("sock", 8, 0666);
	ATF_CHECK_MSG(lfd >= 0, "relisten: %s", strerror(errno));
	ATF_REQUIRE_EQ(lstat("sock", &st), 0);
	ATF_CHECK_EQ(st.st_mode & 07777, 0666);
	close(lfd);
}

ATF_TC_WITHOUT_HEAD(unix_errors);
ATF_TC_BODY(unix_errors, tc)
{
	char path[300];
	int fd, lfd;
	struct stat st;

	ATF_CHECK_EQ(sock_unix_connect("missing", 1000, &fd), ENOENT);
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = 0;
	ATF_CHECK_EQ(sock_unix_connect(path, 1000, &fd), ENAMETOOLONG);
	ATF_CHECK_EQ(sock_unix_listen(path, 8, 0600), -1);
	ATF_CHECK_EQ(errno, ENAMETOOLONG);
	ATF_CHECK_EQ(sock_unix_listen("", 8, 0600), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	/* A regular file in the way is refused and left alone. */
	fd = open("plain", O_WRONLY | O_CREAT, 0600);
	ATF_REQUIRE(fd >= 0);
	close(fd);
	ATF_CHECK_EQ(sock_unix_listen("plain", 8, 0600), -1);
	ATF_CHECK_EQ(errno, EEXIST);
	ATF_REQUIRE_EQ(lstat("plain", &st), 0);
	ATF_CHECK(S_ISREG(st.st_mode));
	/* Connecting to something that is not a socket. */
	ATF_CHECK_EQ(sock_unix_connect("plain", 1000, &fd), ECONNREFUSED);
	/* Missing directory. */
	lfd = sock_unix_listen("nodir/sock", 8, 0600);
	ATF_CHECK_EQ(lfd, -1);
	ATF_CHECK_EQ(errno, ENOENT);
}

#ifdef __linux__
/* A full UNIX listen queue makes Linux answer EAGAIN: connect keeps
 * trying until its timeout and reports ETIMEDOUT. */
ATF_TC_WITHOUT_HEAD(unix_connect_timeout);
ATF_TC_BODY(unix_connect_timeout, tc)
{
	int lfd, held[16], nheld = 0, err = 0, fd;

	lfd = sock_unix_listen("sock", 0, 0600);
	ATF_REQUIRE(lfd >= 0);
	while (nheld < 16) {
		err = sock_unix_connect("sock", 200, &fd);
		if (err != 0)
			break;
		held[nheld++] = fd;
	}
	for (int i = 0; i < nheld; i++)
		close(held[i]);
	close(lfd);
	ATF_REQUIRE_MSG(err != 0, "16 connections fit a backlog of 0");
	ATF_CHECK_EQ_MSG(err, ETIMEDOUT, "got %s", strerror(err));
}
#endif

ATF_TC_WITHOUT_HEAD(fd_passing);
ATF_TC_BODY(fd_passing, tc)
{
	int sv[2], p[2], got;
	char buf[8];

	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ATF_REQUIRE_EQ(pipe(p), 0);
	ATF_REQUIRE_EQ(sock_send_fd(sv[0], p[0]), 0);
	close(p[0]);	/* the receiver's copy keeps the pipe open */
	got = sock_recv_fd(sv[1]);
	ATF_REQUIRE(got >= 0);
	ATF_CHECK(is_cloexec(got));
	ATF_REQUIRE_EQ(write(p[1], "pass", 4), 4);
	ATF_CHECK_EQ(read(got, buf, 4), 4);
	ATF_CHECK(memcmp(buf, "pass", 4) == 0);
	close(got);
	close(p[1]);

	/* A plain byte without a descriptor. */
	ATF_REQUIRE_EQ(write(sv[0], "x", 1), 1);
	ATF_CHECK_EQ(sock_recv_fd(sv[1]), -1);
	ATF_CHECK_EQ(errno, EBADMSG);

	/* Nothing there on a non-blocking socket. */
	ATF_REQUIRE_EQ(sock_set_nonblock(sv[1], true), 0);
	ATF_CHECK_EQ(sock_recv_fd(sv[1]), -1);
	ATF_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
	ATF_REQUIRE_EQ(sock_set_nonblock(sv[1], false), 0);

	/* Peer gone. */
	close(sv[0]);
	ATF_CHECK_EQ(sock_recv_fd(sv[1]), -1);
	ATF_CHECK_EQ(errno, ECONNRESET);
	/* Sending to a closed peer is an error, not a SIGPIPE. */
	ATF_CHECK_EQ(sock_send_fd(sv[1], 0), -1);
	ATF_CHECK_EQ(errno, EPIPE);
	close(sv[1]);
}

/* Two descriptors in one message: refused, and both closed (not leaked). */
ATF_TC_WITHOUT_HEAD(fd_passing_two);
ATF_TC_BODY(fd_passing_two, tc)
{
	int sv[2], p[2];
	struct msghdr msg;
	struct iovec iov;
	char byte = 0, buf[8];
	union {
		struct cmsghdr align;
		char b[CMSG_SPACE(2 * sizeof(int))];
	} u;

	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ATF_REQUIRE_EQ(pipe(p), 0);
	memset(&msg, 0, sizeof(msg));
	memset(&u, 0, sizeof(u));
	iov.iov_base = &byte;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.b;
	msg.msg_controllen = sizeof(u.b);
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(2 * sizeof(int));
	memcpy(CMSG_DATA(c), p, 2 * sizeof(int));
	ATF_REQUIRE_EQ(sendmsg(sv[0], &msg, 0), 1);
	/* Only our copies of the pipe remain after the refusal... */
	ATF_CHECK_EQ(sock_recv_fd(sv[1]), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	/* ...so closing our write end gives the reader EOF. */
	close(p[1]);
	ATF_CHECK_EQ(read(p[0], buf, sizeof(buf)), 0);
	close(p[0]);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(fd_flags);
ATF_TC_BODY(fd_flags, tc)
{
	int p[2];

	ATF_REQUIRE_EQ(pipe(p), 0);
	ATF_CHECK(!is_nonblock(p[0]) && !is_cloexec(p[0]));
	ATF_CHECK_EQ(sock_set_nonblock(p[0], true), 0);
	ATF_CHECK(is_nonblock(p[0]));
	ATF_CHECK_EQ(sock_set_cloexec(p[0], true), 0);
	ATF_CHECK(is_cloexec(p[0]));
	ATF_CHECK_EQ(sock_set_nonblock(p[0], false), 0);
	ATF_CHECK(!is_nonblock(p[0]));
	ATF_CHECK_EQ(sock_set_cloexec(p[0], false), 0);
	ATF_CHECK(!is_cloexec(p[0]));
	close(p[0]);
	close(p[1]);
	ATF_CHECK_EQ(sock_set_nonblock(p[0], true), -1);
	ATF_CHECK_EQ(errno, EBADF);
	ATF_CHECK_EQ(sock_set_cloexec(-1, true), -1);
	ATF_CHECK_EQ(errno, EBADF);
}

/* A message and a descriptor in one sendmsg(): the bytes and the
 * descriptor arrive together; without a descriptor only the bytes;
 * several descriptors are received up to the room given, the rest closed
 * and reported. */
ATF_TC_WITHOUT_HEAD(fd_with_data);
ATF_TC_BODY(fd_with_data, tc)
{
	int sv[2], p[2], fds[2], nfds;
	bool extra;
	char buf[64];
	ssize_t n;

	ATF_REQUIRE_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ATF_REQUIRE_EQ(pipe(p), 0);
	ATF_REQUIRE_EQ(sock_send_with_fd(sv[0], "hello\n", 6, p[0], 0), 6);
	close(p[0]);
	n = sock_recv_with_fds(sv[1], buf, sizeof(buf), fds, 2, &nfds, &extra, 0);
	ATF_REQUIRE_EQ(n, 6);
	ATF_CHECK(memcmp(buf, "hello\n", 6) == 0);
	ATF_REQUIRE_EQ(nfds, 1);
	ATF_CHECK(!extra);
	ATF_CHECK(is_cloexec(fds[0]));
	ATF_REQUIRE_EQ(write(p[1], "x", 1), 1);
	ATF_CHECK_EQ(read(fds[0], buf, 1), 1);
	close(fds[0]);

	/* Bytes only. */
	ATF_REQUIRE_EQ(sock_send_with_fd(sv[0], "abc", 3, -1, 0), 3);
	n = sock_recv_with_fds(sv[1], buf, sizeof(buf), fds, 2, &nfds, &extra, 0);
	ATF_CHECK_EQ(n, 3);
	ATF_CHECK_EQ(nfds, 0);
	ATF_CHECK(!extra);

	/* No room for the descriptor: closed, and said so. */
	ATF_REQUIRE_EQ(sock_send_with_fd(sv[0], "d", 1, p[1], 0), 1);
	n = sock_recv_with_fds(sv[1], buf, sizeof(buf), fds, 0, &nfds, &extra, 0);
	ATF_CHECK_EQ(n, 1);
	ATF_CHECK_EQ(nfds, 0);
	ATF_CHECK(extra);

	/* Nothing there, non-blocking. */
	n = sock_recv_with_fds(sv[1], buf, sizeof(buf), fds, 2, &nfds, &extra,
	    MSG_DONTWAIT);
	ATF_CHECK_EQ(n, -1);
	ATF_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);

	/* End of file; and sending to a closed peer is EPIPE, no signal. */
	close(sv[0]);
	n = sock_recv_with_fds(sv[1], buf, sizeof(buf), fds, 2, &nfds, &extra, 0);
	ATF_CHECK_EQ(n, 0);
	ATF_CHECK_EQ(sock_send_with_fd(sv[1], "x", 1, p[1], 0), -1);
	ATF_CHECK_EQ(errno, EPIPE);
	close(sv[1]);
	close(p[1]);
}

/* A client socket made blocking with a timeout: a receive with nothing
 * to read gives up after about the timeout, with EAGAIN. */
ATF_TC_WITHOUT_HEAD(blocking_timeout);
ATF_TC_BODY(blocking_timeout, tc)
{
	int sv[2];
	char c;
	struct timespec t0, t1;
	long ms;
	ssize_t n;

	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	ATF_REQUIRE(sock_set_nonblock(sv[0], true) == 0);
	ATF_REQUIRE(sock_set_blocking_timeout(sv[0], 200) == 0);
	ATF_CHECK((fcntl(sv[0], F_GETFL) & O_NONBLOCK) == 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = recv(sv[0], &c, 1, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ATF_CHECK_EQ(n, -1);
	ATF_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000;
	ATF_CHECK_MSG(ms >= 150 && ms < 5000, "%ld ms", ms);
	ATF_REQUIRE(write(sv[1], "x", 1) == 1);
	ATF_CHECK_EQ(recv(sv[0], &c, 1, 0), 1);
	close(sv[0]);
	close(sv[1]);
}

/* sock_peer_uid: both ends of a socketpair see this process's user; a
 * descriptor that is no socket is refused. */
ATF_TC_WITHOUT_HEAD(peer_uid);
ATF_TC_BODY(peer_uid, tc)
{
	int sv[2], fd;
	uid_t uid;

	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	uid = (uid_t)-1;
	ATF_CHECK_EQ(sock_peer_uid(sv[0], &uid), 0);
	ATF_CHECK_EQ(uid, geteuid());
	uid = (uid_t)-1;
	ATF_CHECK_EQ(sock_peer_uid(sv[1], &uid), 0);
	ATF_CHECK_EQ(uid, geteuid());
	close(sv[0]);
	close(sv[1]);

	ATF_REQUIRE((fd = open("/dev/null", O_RDONLY)) >= 0);
	ATF_CHECK_EQ(sock_peer_uid(fd, &uid), -1);
	ATF_CHECK_EQ(errno, ENOTSOCK);
	close(fd);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, peer_uid);
	ATF_TP_ADD_TC(tp, blocking_timeout);
	ATF_TP_ADD_TC(tp, tcp4_loopback);
	ATF_TP_ADD_TC(tp, tcp6_loopback);
	ATF_TP_ADD_TC(tp, listen_addrs_shared_port);
	ATF_TP_ADD_TC(tp, listen_errors);
	ATF_TP_ADD_TC(tp, connect_refused);
	ATF_TP_ADD_TC(tp, connect_timeout);
	ATF_TP_ADD_TC(tp, hostport_parsing);
	ATF_TP_ADD_TC(tp, addr_parse_and_format);
	ATF_TP_ADD_TC(tp, addr_is_loopback);
	ATF_TP_ADD_TC(tp, unix_listen_connect);
	ATF_TP_ADD_TC(tp, unix_errors);
#ifdef __linux__
	ATF_TP_ADD_TC(tp, unix_connect_timeout);
#endif
	ATF_TP_ADD_TC(tp, fd_passing);
	ATF_TP_ADD_TC(tp, fd_passing_two);
	ATF_TP_ADD_TC(tp, fd_flags);
	ATF_TP_ADD_TC(tp, fd_with_data);
	return atf_no_error();
}
