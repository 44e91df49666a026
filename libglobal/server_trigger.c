/* Sending a trigger to a local trigger service (fifo, UNIX stream or
 * datagram socket).  Used by master's wakeups, "petrel flush", and the
 * daemons that poke qmgr or pickup. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "server.h"
#include "sock.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes all of buf to a non-blocking fd before the deadline. */
static int write_until(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		if (poll(&p, 1, (int)(left > 60000 ? 60000 : left)) < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

static int send_dgram(const char *path, const char *buf, size_t len)
{
	struct sockaddr_un sun;
	int fd, r;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	r = (int)sendto(fd, buf, len, MSG_DONTWAIT, (struct sockaddr *)&sun,
	    sizeof(sun));
	if (r < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return 0;
}

int trigger_send(const char *path, const char *buf, size_t len, int timeout_ms)
{
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
	struct stat st;
	int fd, r;

	if (stat(path, &st) < 0)
		return -1;
	if (S_ISFIFO(st.st_mode)) {
		/* ENXIO when nobody has it open for reading. */
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -1;
		/* A full fifo means triggers are pending anyway. */
		r = write_until(fd, buf, len, deadline);
		if (r < 0 && errno == ETIMEDOUT)
			r = 0;
	} else if (S_ISSOCK(st.st_mode)) {
		r = sock_unix_connect(path, timeout_ms, &fd);
		if (r == EPROTOTYPE)
			return send_dgram(path, buf, len);
		if (r != 0) {
			errno = r;
			return -1;
		}
		r = write_until(fd, buf, len, deadline);
	} else {
		errno = ENOTSOCK;
		return -1;
	}
	if (r < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return close(fd);
}
