/* Buffered streams over a file descriptor with poll()-based timeouts; see
 * stream.h for the rules. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "event.h"
#include "mem.h"
#include "stream.h"

#define F_EOF		0x01
#define F_ERR		0x02
#define F_TIMEOUT	0x04

#define MIN_BUFSIZE	64

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0		/* e.g. macOS: the daemon ignores SIGPIPE */
#endif

struct stream {
	int fd;
	int flags;
	int err;		/* errno behind F_ERR / F_TIMEOUT */
	int werr;		/* errno of the first lost output, for close */
	int rtimeout;		/* ms, 0 = none */
	int wtimeout;
	bool nonblock;		/* O_NONBLOCK was set when last checked */
	bool is_sock;		/* send() with MSG_NOSIGNAL: no SIGPIPE */
	const stream_io_t *io;
	void *ctx;
	unsigned char *rbuf;
	size_t rsize, rpos, rend;	/* unread input is rbuf[rpos..rend) */
	unsigned char *wbuf;
	size_t wsize, woff, wlen;	/* unflushed output is wbuf[woff..wlen) */
	str_t fmt;		/* scratch for long stream_printf() output */
	const volatile sig_atomic_t *cancel;	/* reads that wait fail */
};

/* The process's watched descriptors (see stream.h). */
static struct watch {
	int fd;
	short events;
	void (*fn)(int fd, short revents, void *ctx);
	void *ctx;
} watches[STREAM_WATCH_MAX];
static int nwatch;

int stream_watch_add(int fd, short events,
    void (*fn)(int fd, short revents, void *ctx), void *ctx)
{
	int i;

	for (i = 0; i < nwatch && watches[i].fd != fd; i++)
		;
	if (i == STREAM_WATCH_MAX) {
		errno = ENOSPC;
		return -1;
	}
	watches[i] = (struct watch){ fd, events, fn, ctx };
	if (i == nwatch)
		nwatch++;
	return 0;
}

void stream_watch_remove(int fd)
{
	for (int i = 0; i < nwatch; i++) {
		if (watches[i].fd == fd) {
			watches[i] = watches[--nwatch];
			return;
		}
	}
}

void stream_set_cancel(stream_t *s, const volatile sig_atomic_t *flag)
{
	s->cancel = flag;
}

static void check_nonblock(stream_t *s)
{
	int fl = fcntl(s->fd, F_GETFL);

	s->nonblock = fl >= 0 && (fl & O_NONBLOCK);
}

stream_t *stream_open_bufsize(int fd, size_t rsize, size_t wsize)
{
	stream_t *s = xcalloc(1, sizeof(*s));
	struct stat st;

	s->fd = fd;
	s->rsize = rsize < MIN_BUFSIZE ? MIN_BUFSIZE : rsize;
	s->wsize = wsize < MIN_BUFSIZE ? MIN_BUFSIZE : wsize;
	s->rbuf = xmalloc(s->rsize);
	s->wbuf = xmalloc(s->wsize);
	s->is_sock = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
	check_nonblock(s);
	return s;
}

stream_t *stream_open(int fd)
{
	return stream_open_bufsize(fd, STREAM_BUFSIZE, STREAM_BUFSIZE);
}

static void stream_destroy(stream_t *s)
{
	free(s->rbuf);
	free(s->wbuf);
	str_release(&s->fmt);
	free(s);
}

int stream_detach(stream_t *s)
{
	int r, saved;

	if (s == NULL)
		return 0;
	r = stream_flush(s);
	saved = errno;
	if (r == 0 && s->werr) {
		r = -1;
		saved = s->werr;
	}
	stream_destroy(s);
	errno = saved;
	return r;
}

int stream_close(stream_t *s)
{
	int fd, r, saved;

	if (s == NULL)
		return 0;
	fd = s->fd;
	r = stream_detach(s);
	saved = errno;
	if (fd >= 0 && close(fd) < 0 && r == 0) {
		r = -1;
		saved = errno;
	}
	errno = saved;
	return r;
}

int stream_fd(const stream_t *s)
{
	return s->fd;
}

void stream_set_timeouts(stream_t *s, int read_ms, int write_ms)
{
	s->rtimeout = read_ms > 0 ? read_ms : 0;
	s->wtimeout = write_ms > 0 ? write_ms : 0;
}

int stream_set_io(stream_t *s, const stream_io_t *io, void *ctx)
{
	if (stream_flush(s) < 0)
		return -1;
	s->io = io;
	s->ctx = ctx;
	return 0;
}

void *stream_io_ctx(const stream_t *s)
{
	return s->ctx;
}

bool stream_eof(const stream_t *s)
{
	return (s->flags & F_EOF) != 0;
}

bool stream_error(const stream_t *s)
{
	return (s->flags & F_ERR) != 0;
}

bool stream_timedout(const stream_t *s)
{
	return (s->flags & F_TIMEOUT) != 0;
}

int stream_errno(const stream_t *s)
{
	return s->err;
}

void stream_clearerr(stream_t *s)
{
	s->flags = 0;
	s->err = 0;
}

static int fail(stream_t *s, int flag, int err)
{
	s->flags |= flag;
	s->err = err;
	errno = err;
	return -1;
}

/* A stream that failed keeps failing until stream_clearerr(). */
static int broken(stream_t *s)
{
	if (s->flags & (F_ERR | F_TIMEOUT)) {
		errno = s->err;
		return 1;
	}
	return 0;
}

/* Waits until the descriptor is ready for want or the deadline (0 = none)
 * passes.  Readiness includes hang-up and error conditions: the following
 * read or write reports those.  The process's watches are polled too;
 * a read (cancelable) ends with ECANCELED once the stream's cancel flag
 * is set. */
static int wait_ready(stream_t *s, int want, int64_t deadline, bool cancelable)
{
	struct pollfd pfd[1 + STREAM_WATCH_MAX];
	struct watch fired[STREAM_WATCH_MAX];
	short frev[STREAM_WATCH_MAX];
	int timeout, r, n, nf;

	if (s->fd < 0)		/* poll() would ignore it and time out */
		return fail(s, F_ERR, EBADF);
	for (;;) {
		if (cancelable && s->cancel && *s->cancel)
			return fail(s, F_ERR, ECANCELED);
		if (deadline) {
			int64_t left = deadline - event_now_ms();
			timeout = left > 0 ? (left > INT32_MAX ? INT32_MAX : (int)left) : 0;
		} else {
			timeout = -1;
		}
		pfd[0].fd = s->fd;
		pfd[0].events = want == STREAM_WANT_WRITE ? POLLOUT : POLLIN;
		pfd[0].revents = 0;
		n = 1;
		for (int i = 0; i < nwatch; i++, n++) {
			pfd[n].fd = watches[i].fd;
			pfd[n].events = watches[i].events;
			pfd[n].revents = 0;
		}
		r = poll(pfd, (nfds_t)n, timeout);
		if (r < 0) {
			if (errno != EINTR)
				return fail(s, F_ERR, errno);
			continue;
		}
		/* Watches first; a function may change the list, so act on a
		 * copy of what fired. */
		nf = 0;
		for (int i = 1; i < n; i++) {
			if (pfd[i].revents != 0 && i - 1 < nwatch &&
			    watches[i - 1].fd == pfd[i].fd) {
				frev[nf] = pfd[i].revents;
				fired[nf++] = watches[i - 1];
			}
		}
		for (int i = 0; i < nf; i++)
			fired[i].fn(fired[i].fd, frev[i], fired[i].ctx);
		if (pfd[0].revents != 0) {
			if (pfd[0].revents & POLLNVAL)
				return fail(s, F_ERR, EBADF);
			return 0;
		}
		if (r == 0)
			return fail(s, F_TIMEOUT, ETIMEDOUT);
	}
}

/* Like broken(), for writers: output refused here is output lost. */
static int wbroken(stream_t *s)
{
	if (broken(s)) {
		if (!s->werr)
			s->werr = s->err;
		return 1;
	}
	return 0;
}

/* One write of at most len bytes, waiting as the timeout allows. */
static ssize_t do_write1(stream_t *s, const void *buf, size_t len)
{
	int64_t deadline = s->wtimeout ? event_now_ms() + s->wtimeout : 0;
	bool poll_first = !s->io && !s->nonblock && s->wtimeout;
	int want;
	ssize_t n;

	for (;;) {
		if (poll_first && wait_ready(s, STREAM_WANT_WRITE, deadline, false) < 0)
			return -1;
		want = STREAM_WANT_WRITE;
		if (s->io)
			n = s->io->write(s->ctx, s->fd, buf, len, &want);
		else if (s->is_sock)
			n = send(s->fd, buf, len, MSG_NOSIGNAL);
		else
			n = write(s->fd, buf, len);
		if (n > 0)
			return n;
		if (n == 0)	/* no progress and no error: never loop on it */
			return fail(s, F_ERR, EIO);
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return fail(s, F_ERR, errno);
		if (wait_ready(s, want, deadline, false) < 0)
			return -1;
	}
}

static ssize_t do_write(stream_t *s, const void *buf, size_t len)
{
	ssize_t n = do_write1(s, buf, len);

	if (n < 0 && !s->werr)
		s->werr = s->err;
	return n;
}

static int write_all(stream_t *s, const unsigned char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = do_write(s, p, len);
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int stream_flush(stream_t *s)
{
	while (s->woff < s->wlen) {
		ssize_t n;
		if (wbroken(s))
			return -1;
		n = do_write(s, s->wbuf + s->woff, s->wlen - s->woff);
		if (n < 0)
			return -1;
		s->woff += (size_t)n;
	}
	s->woff = s->wlen = 0;
	return 0;
}

size_t stream_unflushed(const stream_t *s)
{
	return s->wlen - s->woff;
}

/* One read of at most len bytes: >0, 0 at end of file, -1 on failure.
 * Pending output is flushed before we could block (see stream.h). */
static ssize_t do_read(stream_t *s, void *buf, size_t len)
{
	int64_t deadline = s->rtimeout ? event_now_ms() + s->rtimeout : 0;
	bool poll_first = !s->io && !s->nonblock && s->rtimeout;
	int want;
	ssize_t n;

	/* A blocking read may block: flush first.  Non-blocking and layered
	 * streams flush only when the read finds nothing to do. */
	if (!s->io && !s->nonblock && stream_flush(s) < 0)
		return -1;
	for (;;) {
		if (poll_first && wait_ready(s, STREAM_WANT_READ, deadline, true) < 0)
			return -1;
		want = STREAM_WANT_READ;
		if (s->io)
			n = s->io->read(s->ctx, s->fd, buf, len, &want);
		else
			n = read(s->fd, buf, len);
		if (n > 0)
			return n;
		if (n == 0) {
			s->flags |= F_EOF;
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return fail(s, F_ERR, errno);
		if (stream_flush(s) < 0)
			return -1;
		if (wait_ready(s, want, deadline, true) < 0)
			return -1;
	}
}

/* Reads more input after what is buffered, moving the unread bytes to the
 * front if the buffer is full.  Returns bytes added, 0 at end of input, -1
 * on failure. */
static ssize_t fill(stream_t *s)
{
	ssize_t n;

	if (broken(s))
		return -1;
	if (s->flags & F_EOF)
		return 0;
	if (s->rpos == s->rend) {
		s->rpos = s->rend = 0;
	} else if (s->rend == s->rsize) {
		memmove(s->rbuf, s->rbuf + s->rpos, s->rend - s->rpos);
		s->rend -= s->rpos;
		s->rpos = 0;
	}
	n = do_read(s, s->rbuf + s->rend, s->rsize - s->rend);
	if (n > 0)
		s->rend += (size_t)n;
	return n;
}

int stream_getc(stream_t *s)
{
	if (s->rpos == s->rend && fill(s) <= 0)
		return STREAM_EOF;
	return s->rbuf[s->rpos++];
}

int stream_ungetc(stream_t *s, int c)
{
	if (c == STREAM_EOF)
		return STREAM_EOF;
	if (s->rpos == 0) {
		if (s->rend == s->rsize)
			return STREAM_EOF;
		memmove(s->rbuf + 1, s->rbuf, s->rend);
		s->rend++;
		s->rpos = 1;
	}
	s->rbuf[--s->rpos] = (unsigned char)c;
	return (unsigned char)c;
}

/* Copies buffered input into p; returns how much. */
static size_t take(stream_t *s, void *p, size_t n)
{
	size_t avail = s->rend - s->rpos;

	if (n > avail)
		n = avail;
	if (n) {
		memcpy(p, s->rbuf + s->rpos, n);
		s->rpos += n;
	}
	return n;
}

ssize_t stream_read_some(stream_t *s, void *buf, size_t n)
{
	ssize_t r;

	if (n == 0)
		return 0;
	if (s->rpos < s->rend)
		return (ssize_t)take(s, buf, n);
	if (broken(s))
		return -1;
	if (s->flags & F_EOF)
		return 0;
	/* Large requests bypass the buffer: one copy fewer. */
	if (n >= s->rsize)
		return do_read(s, buf, n);
	r = fill(s);
	if (r <= 0)
		return r;
	return (ssize_t)take(s, buf, n);
}

ssize_t stream_read(stream_t *s, void *buf, size_t n)
{
	unsigned char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t r = stream_read_some(s, p + got, n - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return (ssize_t)n;
}

size_t stream_pending(const stream_t *s)
{
	return s->rend - s->rpos;
}

size_t stream_purge(stream_t *s)
{
	size_t n = s->rend - s->rpos;

	s->rpos = s->rend = 0;
	return n;
}

/* A complete line: strip a CR that directly precedes the LF. */
static int line_end(str_t *line)
{
	if (line->len > 0 && line->buf[line->len - 1] == '\r') {
		str_truncate(line, line->len - 1);
		return STREAM_LINE_CRLF;
	}
	return STREAM_LINE_LF;
}

int stream_getline(stream_t *s, str_t *line, size_t max)
{
	str_reset(line);
	if (max == 0) {
		fail(s, F_ERR, EINVAL);
		return STREAM_LINE_NONE;
	}
	for (;;) {
		size_t avail = s->rend - s->rpos;
		unsigned char *p, *nl;
		size_t n;

		if (line->len == max) {
			/* Full: only a terminator may still belong to this
			 * piece.  The CR of a CR LF needs one byte of look-ahead,
			 * which fill() keeps in the buffer. */
			if (avail == 0 && fill(s) <= 0)
				return STREAM_LINE_PARTIAL;
			p = s->rbuf + s->rpos;
			if (p[0] == '\n') {
				s->rpos++;
				return line_end(line);
			}
			if (p[0] == '\r') {
				if (s->rend - s->rpos < 2 && fill(s) <= 0)
					return STREAM_LINE_MORE;
				p = s->rbuf + s->rpos;
				if (p[1] == '\n') {
					s->rpos += 2;
					return STREAM_LINE_CRLF;
				}
			}
			return STREAM_LINE_MORE;
		}
		if (avail == 0) {
			if (fill(s) <= 0)
				return line->len ? STREAM_LINE_PARTIAL : STREAM_LINE_NONE;
			continue;
		}
		p = s->rbuf + s->rpos;
		n = max - line->len;
		if (n > avail)
			n = avail;
		nl = memchr(p, '\n', n);
		if (nl != NULL) {
			str_append(line, p, (size_t)(nl - p));
			s->rpos += (size_t)(nl - p) + 1;
			return line_end(line);
		}
		str_append(line, p, n);
		s->rpos += n;
	}
}

int stream_write(stream_t *s, const void *buf, size_t n)
{
	if (wbroken(s))
		return -1;
	if (n <= s->wsize - s->wlen) {
		if (n)
			memcpy(s->wbuf + s->wlen, buf, n);
		s->wlen += n;
		return 0;
	}
	if (stream_flush(s) < 0)
		return -1;
	if (n >= s->wsize)
		return write_all(s, buf, n);
	memcpy(s->wbuf, buf, n);
	s->wlen = n;
	return 0;
}

int stream_puts(stream_t *s, const char *cstr)
{
	return stream_write(s, cstr, strlen(cstr));
}

int stream_putc(stream_t *s, int c)
{
	unsigned char ch = (unsigned char)c;

	if (s->wlen < s->wsize && !(s->flags & (F_ERR | F_TIMEOUT))) {
		s->wbuf[s->wlen++] = ch;
		return 0;
	}
	return stream_write(s, &ch, 1);
}

int stream_vprintf(stream_t *s, const char *fmt, va_list ap)
{
	size_t room = s->wsize - s->wlen;
	va_list ap2;
	int n, r;

	if (wbroken(s))
		return -1;
	/* Common case: format straight into the write buffer. */
	va_copy(ap2, ap);
	n = vsnprintf((char *)s->wbuf + s->wlen, room, fmt, ap2);
	va_end(ap2);
	if (n < 0) {
		fail(s, F_ERR, errno ? errno : EINVAL);
		wbroken(s);
		return -1;
	}
	if ((size_t)n < room) {
		s->wlen += (size_t)n;
		return 0;
	}
	if ((size_t)n > STREAM_PRINTF_MAX) {
		fail(s, F_ERR, EMSGSIZE);
		wbroken(s);
		return -1;
	}
	str_reset(&s->fmt);
	str_vcatf(&s->fmt, fmt, ap);
	r = stream_write(s, s->fmt.buf, s->fmt.len);
	/* Do not keep a rare huge buffer around for the stream's lifetime. */
	if (s->fmt.cap > 4 * STREAM_BUFSIZE)
		str_release(&s->fmt);
	return r;
}

int stream_printf(stream_t *s, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = stream_vprintf(s, fmt, ap);
	va_end(ap);
	return r;
}
