/* Sending a trigger to a local trigger service (fifo, UNIX stream or
 * datagram socket).
 *
 * Two kinds of sender:
 * - trigger_wakeup(): "there is new work", from cleanup, pickup's
 *   clients, master's periodic wakeups.  It never waits: a wake-up that
 *   finds the service's queue full is dropped, because the service has
 *   wake-ups pending and scans its queue anyway when it reads them.
 * - trigger_send(): a request that must arrive (petrel flush, postq -f),
 *   waiting at most a time limit for room. */
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
#include "event.h"
#include "server.h"
#include "sock.h"

static int close_keep(int fd)
{
	int saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

/* Waits until fd is writable or the deadline passes. */
static int wait_writable(int fd, int64_t deadline)
{
	int64_t left = deadline - event_now_ms();
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	if (left <= 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	if (poll(&p, 1, (int)(left > 60000 ? 60000 : left)) < 0 && errno != EINTR)
		return -1;
	return 0;
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
		if (wait_writable(fd, deadline) < 0)
			return -1;
	}
	return 0;
}

/* ---- wake-ups that never wait ---- */

/* One unbound datagram socket serves every wake-up of the process: one
 * sendto() each. */
static int wake_fd = -1;

static int wake_stream(const char *path, char req)
{
	int fd, r;

	/* A non-blocking connect to a UNIX socket completes at once or
	 * fails with EAGAIN when the listen queue is full: then wake-ups
	 * are pending already. */
	r = sock_unix_connect(path, -1, &fd);
	if (r == EAGAIN)
		return 0;
	if (r != 0) {
		errno = r;
		return -1;
	}
	/* A new connection's buffer has room for one byte. */
	if (write(fd, &req, 1) != 1 && errno != EAGAIN)
		return close_keep(fd);
	close(fd);
	return 0;
}

static int wake_fifo(const char *path, char req)
{
	/* ENXIO when nobody has it open for reading. */
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	/* A full fifo holds wake-ups already. */
	if (write(fd, &req, 1) != 1 && errno != EAGAIN)
		return close_keep(fd);
	close(fd);
	return 0;
}

int trigger_wakeup(const char *path, char req)
{
	struct stat st;

	if (wake_fd < 0 && (wake_fd = sock_new(AF_UNIX, SOCK_DGRAM, true)) < 0)
		return -1;
	if (sock_unix_sendto(wake_fd, path, &req, 1) == 1)
		return 0;
	switch (errno) {
	case EAGAIN:
#if EWOULDBLOCK != EAGAIN
	case EWOULDBLOCK:
#endif
	case ENOBUFS:
		return 0;		/* the service's queue is full */
	case EPROTOTYPE:
		return wake_stream(path, req);
	case ECONNREFUSED:
		/* A fifo, or a socket nobody has bound any more. */
		if (stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
			return wake_fifo(path, req);
		errno = ECONNREFUSED;
		return -1;
	default:
		return -1;
	}
}

/* ---- requests that must arrive ---- */

static int send_dgram(const char *path, const char *buf, size_t len,
    int64_t deadline)
{
	int fd, e;

	/* Connected, a datagram socket polls writable only when the
	 * receiver's queue has room. */
	if ((e = sock_unix_dgram_connect(path, &fd)) != 0) {
		errno = e;
		return -1;
	}
	for (;;) {
		if (send(fd, buf, len, MSG_DONTWAIT) >= 0)
			break;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return close_keep(fd);
		if (wait_writable(fd, deadline) < 0)
			return close_keep(fd);
	}
	close(fd);
	return 0;
}

int trigger_send(const char *path, const char *buf, size_t len, int timeout_ms)
{
	int64_t deadline =
	    event_now_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
	struct stat st;
	int fd, r;

	if (stat(path, &st) < 0)
		return -1;
	if (S_ISFIFO(st.st_mode)) {
		/* ENXIO when nobody has it open for reading. */
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -1;
		r = write_until(fd, buf, len, deadline);
	} else if (S_ISSOCK(st.st_mode)) {
		r = sock_unix_connect(path, timeout_ms, &fd);
		if (r == EPROTOTYPE)
			return send_dgram(path, buf, len, deadline);
		if (r != 0) {
			errno = r;
			return -1;
		}
		r = write_until(fd, buf, len, deadline);
	} else {
		errno = ENOTSOCK;
		return -1;
	}
	if (r < 0)
		return close_keep(fd);
	return close(fd);
}
