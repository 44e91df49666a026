/* libutil/sock: UNIX-domain datagram sockets and connections started for
 * an event loop.  Sockets live in the test case's own directory. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

static void recv_is(int fd, const char *want)
{
	char buf[64];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	ATF_REQUIRE_MSG(n >= 0, "recv: %s", strerror(errno));
	ATF_CHECK_EQ((size_t)n, strlen(want));
	ATF_CHECK(memcmp(buf, want, (size_t)n) == 0);
}

/* A path longer than any sun_path. */
static const char *long_path(void)
{
	static char p[300];

	memset(p, 'x', sizeof(p) - 1);
	p[sizeof(p) - 1] = 0;
	return p;
}

ATF_TC_WITHOUT_HEAD(dgram_listen);
ATF_TC_BODY(dgram_listen, tc)
{
	struct stat st;
	int fd, fd2;

	fd = sock_unix_dgram_listen("d.sock", 0620);
	ATF_REQUIRE(fd >= 0);
	ATF_CHECK(is_cloexec(fd));
	ATF_CHECK(!is_nonblock(fd));
	ATF_REQUIRE_EQ(lstat("d.sock", &st), 0);
	ATF_CHECK(S_ISSOCK(st.st_mode));
	ATF_CHECK_EQ(st.st_mode & 07777, 0620);
	/* The path must not exist. */
	errno = 0;
	fd2 = sock_unix_dgram_listen("d.sock", 0600);
	ATF_CHECK_EQ(fd2, -1);
	ATF_CHECK_EQ(errno, EADDRINUSE);
	ATF_CHECK_EQ(sock_unix_dgram_listen(long_path(), 0600), -1);
	ATF_CHECK_EQ(errno, ENAMETOOLONG);
	close(fd);
}

ATF_TC_WITHOUT_HEAD(dgram_connect);
ATF_TC_BODY(dgram_connect, tc)
{
	int lfd, sfd, fd = -1;

	lfd = sock_unix_dgram_listen("d.sock", 0600);
	ATF_REQUIRE(lfd >= 0);
	ATF_REQUIRE_EQ(sock_unix_dgram_connect("d.sock", &fd), 0);
	ATF_CHECK(is_cloexec(fd));
	ATF_CHECK(is_nonblock(fd));
	ATF_REQUIRE_EQ(send(fd, "wake", 4, 0), 4);
	recv_is(lfd, "wake");
	close(fd);
	ATF_CHECK_EQ(sock_unix_dgram_connect("none.sock", &fd), ENOENT);
	ATF_CHECK_EQ(sock_unix_dgram_connect(long_path(), &fd), ENAMETOOLONG);
	ATF_CHECK_EQ(sock_unix_dgram_connect("", &fd), EINVAL);
	/* A stream socket is the wrong type; a file nobody has bound any
	 * more refuses. */
	sfd = sock_unix_listen("s.sock", 4, 0600);
	ATF_REQUIRE(sfd >= 0);
	ATF_CHECK_EQ(sock_unix_dgram_connect("s.sock", &fd), EPROTOTYPE);
	close(sfd);
	close(lfd);
	ATF_CHECK_EQ(sock_unix_dgram_connect("d.sock", &fd), ECONNREFUSED);
}

ATF_TC_WITHOUT_HEAD(dgram_sendto);
ATF_TC_BODY(dgram_sendto, tc)
{
	int lfd, fd;

	lfd = sock_unix_dgram_listen("d.sock", 0600);
	ATF_REQUIRE(lfd >= 0);
	fd = sock_new(AF_UNIX, SOCK_DGRAM, true);
	ATF_REQUIRE(fd >= 0);
	ATF_CHECK_EQ(sock_unix_sendto(fd, "d.sock", "D", 1), 1);
	ATF_CHECK_EQ(sock_unix_sendto(fd, "d.sock", "I", 1), 1);
	recv_is(lfd, "D");
	recv_is(lfd, "I");
	errno = 0;
	ATF_CHECK_EQ(sock_unix_sendto(fd, "none.sock", "D", 1), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	ATF_CHECK_EQ(sock_unix_sendto(fd, long_path(), "D", 1), -1);
	ATF_CHECK_EQ(errno, ENAMETOOLONG);
	close(lfd);
	ATF_CHECK_EQ(sock_unix_sendto(fd, "d.sock", "D", 1), -1);
	ATF_CHECK_EQ(errno, ECONNREFUSED);
	close(fd);
}

ATF_TC_WITHOUT_HEAD(connect_start);
ATF_TC_BODY(connect_start, tc)
{
	int lfd, fd = -1, afd, r;

	lfd = sock_unix_listen("s.sock", 4, 0600);
	ATF_REQUIRE(lfd >= 0);
	r = sock_unix_connect_start("s.sock", &fd);
	/* UNIX-domain connects finish at once where the queue has room;
	 * both answers are allowed by the contract. */
	ATF_REQUIRE_MSG(r == 0 || r == EINPROGRESS, "%s", strerror(r));
	ATF_CHECK(is_nonblock(fd));
	ATF_CHECK(is_cloexec(fd));
	ATF_CHECK_EQ(sock_connect_error(fd), 0);
	afd = sock_accept(lfd, NULL, NULL);
	ATF_REQUIRE(afd >= 0);
	ATF_REQUIRE_EQ(write(fd, "x", 1), 1);
	recv_is(afd, "x");
	close(afd);
	close(fd);
	ATF_CHECK_EQ(sock_unix_connect_start("none.sock", &fd), ENOENT);
	ATF_CHECK_EQ(sock_unix_connect_start(long_path(), &fd), ENAMETOOLONG);
	close(lfd);
	/* The file stays; nobody listens. */
	ATF_CHECK_EQ(sock_unix_connect_start("s.sock", &fd), ECONNREFUSED);
	/* A datagram socket is the wrong type. */
	lfd = sock_unix_dgram_listen("d.sock", 0600);
	ATF_REQUIRE(lfd >= 0);
	ATF_CHECK_EQ(sock_unix_connect_start("d.sock", &fd), EPROTOTYPE);
	close(lfd);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, dgram_listen);
	ATF_TP_ADD_TC(tp, dgram_connect);
	ATF_TP_ADD_TC(tp, dgram_sendto);
	ATF_TP_ADD_TC(tp, connect_start);
	return atf_no_error();
}
