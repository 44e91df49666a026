/* Buffered streams over a file descriptor, for daemons that must not use
 * stdio (no per-operation timeouts, silent truncation of long lines).
 *
 * Timeouts.  Each stream has a read and a write timeout in milliseconds
 * (0 = wait forever).  The timeout bounds every single wait for the
 * descriptor to become ready, so an operation that keeps making progress
 * is not cut off, and one that stalls for longer than the timeout fails.
 * Waiting uses poll(), so timeouts hold for blocking and non-blocking
 * descriptors alike (on a blocking descriptor the stream polls before each
 * read/write; a write of more than the kernel buffer can still block past
 * the timeout there, so use non-blocking descriptors for strict limits).
 *
 * Errors.  Nothing here aborts on an I/O problem.  Operations return -1
 * (or STREAM_EOF / STREAM_LINE_NONE) and set one of three sticky flags:
 *   stream_eof()      the peer closed / end of file was read;
 *   stream_error()    a system call failed (stream_errno() says why);
 *   stream_timedout() a wait exceeded the timeout (errno ETIMEDOUT).
 * Once set, a flag stays until stream_clearerr(); while the error or
 * timeout flag is set every read and write fails at once, and while the
 * EOF flag is set reads return end of input without a system call (data
 * already buffered is still delivered).
 *
 * Pipelining.  Before a read has to wait for new input, the stream first
 * flushes its own pending output: a peer that pipelines commands gets the
 * replies so far before we block (RFC 2920 asks servers to do exactly that),
 * and a client never waits for a reply to a command still in our buffer.
 *
 * I/O layers.  stream_set_io() replaces read()/write() with a caller's
 * function pair (e.g. TLS).  Such a function returns the byte count, 0 for
 * end of file (read only), or -1 with errno; errno EAGAIN means "retry when
 * the descriptor is ready", and the function may set *want to
 * STREAM_WANT_READ or STREAM_WANT_WRITE to say which direction to wait for
 * (a TLS read can need the socket writable).  With a layer the stream never
 * polls before calling it (a layer may hold buffered data of its own), so
 * timeouts require the descriptor to be non-blocking.
 *
 * Watches.  A process may name a few descriptors (stream_watch_add) that
 * every wait of every stream polls too, at no extra system call: a
 * daemon's signal pipe and master's status pipe, so that a stop request
 * or master's death is noticed even while a request blocks on a client.
 * When a watched descriptor reports an event its function runs (inside
 * the wait) and the wait goes on.  A stream may also be given a cancel
 * flag (stream_set_cancel): once the flag is set, a read that has to wait
 * fails at once with ECANCELED (error flag), whatever its timeout;
 * buffered input is still returned first. */
#ifndef PETREL_STREAM_H
#define PETREL_STREAM_H
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "str.h"

typedef struct stream stream_t;

#define STREAM_EOF (-1)
#define STREAM_WANT_READ 1
#define STREAM_WANT_WRITE 2
#define STREAM_BUFSIZE 8192
/* Longest output of one stream_printf() call. */
#define STREAM_PRINTF_MAX (1024 * 1024)

typedef struct stream_io {
	ssize_t (*read)(void *ctx, int fd, void *buf, size_t len, int *want);
	ssize_t (*write)(void *ctx, int fd, const void *buf, size_t len,
	    int *want);
} stream_io_t;

/* Results of stream_getline(). */
enum stream_line {
	STREAM_LINE_NONE = -1,	/* nothing read: EOF, error or timeout */
	STREAM_LINE_LF = 1,	/* complete line ended by LF */
	STREAM_LINE_CRLF,	/* complete line ended by CR LF */
	STREAM_LINE_MORE,	/* max bytes returned; the line continues */
	STREAM_LINE_PARTIAL,	/* EOF/error/timeout in mid-line; no terminator */
};

/* Buffers of STREAM_BUFSIZE bytes each; never fails. */
stream_t *stream_open(int fd);
stream_t *stream_open_bufsize(int fd, size_t rsize, size_t wsize);
/* Flushes, closes the descriptor and frees the stream (always).  Returns 0,
 * or -1 with errno if the flush or the close failed or if any earlier
 * write failed (so checking only the close still catches lost output;
 * stream_clearerr() does not forget that). */
int stream_close(stream_t *s);
/* Like stream_close() but leaves the descriptor open. */
int stream_detach(stream_t *s);
int stream_fd(const stream_t *s);

/* Milliseconds, 0 = no timeout (negative values count as 0).  Whether
 * the descriptor is non-blocking is read once, by stream_open (a
 * blocking descriptor is polled before each read or write so that the
 * timeouts hold; a non-blocking one is tried first): change O_NONBLOCK
 * before opening the stream, or layer it (stream_set_io). */
void stream_set_timeouts(stream_t *s, int read_ms, int write_ms);
/* Flushes pending output through the old layer, then installs io (NULL for
 * plain read/write).  Returns -1 if the flush failed (io not installed).
 * Buffered input is kept: see stream_pending()/stream_purge(). */
int stream_set_io(stream_t *s, const stream_io_t *io, void *ctx);
void *stream_io_ctx(const stream_t *s);

bool stream_eof(const stream_t *s);
bool stream_error(const stream_t *s);
bool stream_timedout(const stream_t *s);
/* errno of the failure that set the error/timeout flag, else 0. */
int stream_errno(const stream_t *s);
void stream_clearerr(stream_t *s);

/* Watches, for the whole process (at most STREAM_WATCH_MAX).  events
 * are poll() events; 0 watches only error and hang-up conditions.  fn
 * gets the revents; it may remove watches (its own too) and must not use
 * a stream.  Adding a descriptor again replaces its entry.  -1 with
 * ENOSPC when full. */
#define STREAM_WATCH_MAX 4
int stream_watch_add(int fd, short events,
    void (*fn)(int fd, short revents, void *ctx), void *ctx);
void stream_watch_remove(int fd);
/* Reads that would wait fail with ECANCELED while *flag is non-zero (NULL:
 * never).  The flag is read again after every watch function ran. */
void stream_set_cancel(stream_t *s, const volatile sig_atomic_t *flag);

/* Reading. */
/* Next byte (0..255) or STREAM_EOF. */
int stream_getc(stream_t *s);
/* Pushes c back; one byte of push-back is always possible after a read.
 * Returns c, or STREAM_EOF if there is no room or c is STREAM_EOF. */
int stream_ungetc(stream_t *s, int c);
/* Exactly n bytes: returns n, or -1 if fewer arrived (flags say why; the
 * bytes that did arrive are in buf but the count is lost). */
ssize_t stream_read(stream_t *s, void *buf, size_t n);
/* Up to n bytes, waiting only if nothing is buffered: returns the count
 * (>0), 0 at end of input, -1 on error or timeout. */
ssize_t stream_read_some(stream_t *s, void *buf, size_t n);
/* Reads a line into line (replacing its contents) without its terminator;
 * returns one of enum stream_line.  At most max data bytes are stored; a
 * longer line comes back in pieces, each but the last with
 * STREAM_LINE_MORE.  A CR counts as part of the terminator only directly
 * before the LF.  max 0 is an error (EINVAL). */
int stream_getline(stream_t *s, str_t *line, size_t max);
/* Bytes buffered but not yet consumed; stream_purge() discards them (e.g.
 * input pipelined before STARTTLS) and returns how many there were. */
size_t stream_pending(const stream_t *s);
size_t stream_purge(stream_t *s);

/* Writing: 0 on success (data buffered or sent), -1 on failure. */
int stream_write(stream_t *s, const void *buf, size_t n);
int stream_puts(stream_t *s, const char *cstr);
int stream_putc(stream_t *s, int c);
/* Fails with EMSGSIZE (and the error flag) beyond STREAM_PRINTF_MAX. */
int stream_printf(stream_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int stream_vprintf(stream_t *s, const char *fmt, va_list ap);
int stream_flush(stream_t *s);
/* Bytes written to the stream but not yet to the descriptor. */
size_t stream_unflushed(const stream_t *s);

#endif
