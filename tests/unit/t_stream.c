/* Unit tests for libutil/stream: buffering, line splitting, CR LF
 * handling, EOF, timeouts (asserting the flag, never elapsed time), error
 * flags, printf, pending input and I/O layers.  All over socketpairs,
 * pipes and files in the test's own directory. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "str.h"
#include "stream.h"

static void mkpair(int sv[2], int type)
{
	ATF_REQUIRE_EQ(socketpair(AF_UNIX, type, 0, sv), 0);
}

static void nonblock(int fd)
{
	ATF_REQUIRE(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
}

static void put(int fd, const char *text)
{
	size_t len = strlen(text);
	ATF_REQUIRE_EQ(write(fd, text, len), (ssize_t)len);
}

/* Reads whatever is immediately available on a raw descriptor. */
static size_t drain(int fd, char *buf, size_t size)
{
	size_t got = 0;
	ssize_t n;
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (got < size - 1 && (n = read(fd, buf + got, size - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = 0;
	fcntl(fd, F_SETFL, fl);
	return got;
}

ATF_TC_WITHOUT_HEAD(lines_and_terminators);
ATF_TC_BODY(lines_and_terminators, tc)
{
	int sv[2];
	str_t line = STR_INIT;

	mkpair(sv, SOCK_STREAM);
	put(sv[1], "a\r\nb\nc\rd\r\n\r\n\nlast");
	close(sv[1]);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "a");
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_LF);
	ATF_CHECK_STREQ(str_cstr(&line), "b");
	/* A CR that is not right before the LF is data. */
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "c\rd");
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_EQ(str_len(&line), 0);
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_LF);
	ATF_CHECK_EQ(str_len(&line), 0);
	/* EOF in mid-line: the data, no terminator, the EOF flag. */
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_PARTIAL);
	ATF_CHECK_STREQ(str_cstr(&line), "last");
	ATF_CHECK(stream_eof(s));
	ATF_CHECK(!stream_error(s) && !stream_timedout(s));
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_NONE);
	ATF_CHECK_EQ(str_len(&line), 0);
	ATF_CHECK_EQ(stream_getc(s), STREAM_EOF);
	ATF_CHECK_EQ(stream_close(s), 0);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(long_line_pieces);
ATF_TC_BODY(long_line_pieces, tc)
{
	int sv[2];
	str_t line = STR_INIT;

	mkpair(sv, SOCK_STREAM);
	/* 25 bytes, then exactly-max lines ending LF, CR LF, and a max-long
	 * piece followed by a bare CR (which must stay data). */
	put(sv[1], "0123456789abcdefghijKLMNO\r\n"
	    "0123456789\n" "0123456789\r\n" "0123456789\rX\n" "012345678\r\n");
	close(sv[1]);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_MORE);
	ATF_CHECK_STREQ(str_cstr(&line), "0123456789");
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_MORE);
	ATF_CHECK_STREQ(str_cstr(&line), "abcdefghij");
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "KLMNO");
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_LF);
	ATF_CHECK_STREQ(str_cstr(&line), "0123456789");
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "0123456789");
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_MORE);
	ATF_CHECK_STREQ(str_cstr(&line), "0123456789");
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_LF);
	ATF_CHECK_STREQ(str_cstr(&line), "\rX");
	/* 9 data bytes + CR fill max; the CR is still the terminator's. */
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "012345678");
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_NONE);
	ATF_CHECK(stream_eof(s));
	stream_close(s);
	str_release(&line);
}

/* Every line length against every piece size, through a tiny buffer so
 * that terminators straddle buffer refills at every offset: joining the
 * pieces must give back each line and its terminator exactly. */
ATF_TC_WITHOUT_HEAD(split_exhaustive);
ATF_TC_BODY(split_exhaustive, tc)
{
	enum { MAXLEN = 150 };
	str_t data = STR_INIT, line = STR_INIT, joined = STR_INIT;
	int fd;

	for (int len = 0; len <= MAXLEN; len++) {
		for (int i = 0; i < len; i++)
			str_putc(&data, 'a' + (len + i) % 26);
		str_cat(&data, len % 3 == 0 ? "\n" : "\r\n");
	}
	fd = open("lines", O_RDWR | O_CREAT | O_TRUNC, 0600);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE_EQ(write(fd, data.buf, data.len), (ssize_t)data.len);
	for (size_t max = 1; max <= 70; max++) {
		ATF_REQUIRE_EQ(lseek(fd, 0, SEEK_SET), 0);
		stream_t *s = stream_open_bufsize(fd, 64, 64);
		int r, len = 0;
		str_reset(&joined);
		while ((r = stream_getline(s, &line, max)) != STREAM_LINE_NONE) {
			ATF_REQUIRE(str_len(&line) <= max);
			str_append(&joined, line.buf, line.len);
			if (r == STREAM_LINE_MORE) {
				ATF_REQUIRE_EQ(str_len(&line), max);
				continue;
			}
			ATF_REQUIRE_MSG(r == (len % 3 == 0 ? STREAM_LINE_LF :
			    STREAM_LINE_CRLF), "max %zu len %d r %d", max, len, r);
			ATF_REQUIRE_EQ(str_len(&joined), (size_t)len);
			for (int i = 0; i < len; i++)
				ATF_REQUIRE(joined.buf[i] == 'a' + (len + i) % 26);
			str_reset(&joined);
			len++;
		}
		ATF_CHECK_EQ(len, MAXLEN + 1);
		ATF_CHECK(stream_eof(s) && !stream_error(s));
		ATF_CHECK_EQ(stream_detach(s), 0);
	}
	close(fd);
	str_release(&data);
	str_release(&line);
	str_release(&joined);
}

/* Packets make every read return a small piece, so a CR arrives in one
 * read and its LF in the next. */
ATF_TC_WITHOUT_HEAD(crlf_across_reads);
ATF_TC_BODY(crlf_across_reads, tc)
{
	int sv[2];
	str_t line = STR_INIT;

	mkpair(sv, SOCK_SEQPACKET);
	put(sv[1], "abc\r");
	put(sv[1], "\ndef\r");
	put(sv[1], "\r\n");
	put(sv[1], "ghij\r");
	put(sv[1], "\n");
	close(sv[1]);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "abc");
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "def\r");
	/* Max reached exactly before the CR: the look-ahead must wait for
	 * the next read to see the LF. */
	ATF_CHECK_EQ(stream_getline(s, &line, 4), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "ghij");
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_NONE);
	stream_close(s);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(cr_at_eof);
ATF_TC_BODY(cr_at_eof, tc)
{
	int sv[2];
	str_t line = STR_INIT;

	mkpair(sv, SOCK_STREAM);
	put(sv[1], "abcd\r");
	close(sv[1]);
	stream_t *s = stream_open(sv[0]);
	/* Full piece, then a CR with nothing after it: the line continues
	 * with the CR, which then ends without a terminator. */
	ATF_CHECK_EQ(stream_getline(s, &line, 4), STREAM_LINE_MORE);
	ATF_CHECK_STREQ(str_cstr(&line), "abcd");
	ATF_CHECK_EQ(stream_getline(s, &line, 4), STREAM_LINE_PARTIAL);
	ATF_CHECK_STREQ(str_cstr(&line), "\r");
	ATF_CHECK(stream_eof(s));
	stream_close(s);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(getline_bad_max);
ATF_TC_BODY(getline_bad_max, tc)
{
	int sv[2];
	str_t line = STR_INIT;

	mkpair(sv, SOCK_STREAM);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_getline(s, &line, 0), STREAM_LINE_NONE);
	ATF_CHECK(stream_error(s));
	ATF_CHECK_EQ(stream_errno(s), EINVAL);
	stream_close(s);
	close(sv[1]);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(getc_ungetc_read);
ATF_TC_BODY(getc_ungetc_read, tc)
{
	int sv[2];
	char buf[64];
	static char big[100000];

	mkpair(sv, SOCK_STREAM);
	stream_t *s = stream_open(sv[0]);
	/* Push-back on a fresh, empty stream works too. */
	ATF_CHECK_EQ(stream_ungetc(s, 'Z'), 'Z');
	ATF_CHECK_EQ(stream_getc(s), 'Z');
	ATF_CHECK_EQ(stream_ungetc(s, STREAM_EOF), STREAM_EOF);
	put(sv[1], "\xff" "hello world");
	ATF_CHECK_EQ(stream_getc(s), 0xff);	/* bytes are unsigned */
	ATF_CHECK_EQ(stream_getc(s), 'h');
	ATF_CHECK_EQ(stream_ungetc(s, 'H'), 'H');
	ATF_CHECK_EQ(stream_pending(s), 11);
	ATF_CHECK_EQ(stream_read(s, buf, 5), 5);
	ATF_CHECK(memcmp(buf, "Hello", 5) == 0);
	ATF_CHECK_EQ(stream_read_some(s, buf, sizeof(buf)), 6);
	ATF_CHECK(memcmp(buf, " world", 6) == 0);
	/* A read larger than the buffer, and exact reads across it. */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	stream_t *w = stream_open(sv[1]);
	/* Write from a child: the socket buffer may be smaller than big. */
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		_exit(stream_write(w, big, sizeof(big)) == 0 &&
		    stream_flush(w) == 0 ? 0 : 1);
	}
	stream_detach(w);
	close(sv[1]);
	static char in[sizeof(big)];
	ATF_CHECK_EQ(stream_read(s, in, 10), 10);
	ATF_CHECK_EQ(stream_read(s, in + 10, sizeof(in) - 10),
	    (ssize_t)sizeof(in) - 10);
	ATF_CHECK(memcmp(in, big, sizeof(big)) == 0);
	int status;
	ATF_REQUIRE_EQ(waitpid(pid, &status, 0), pid);
	ATF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Exact read cut short by EOF fails; read_some then reports 0. */
	ATF_CHECK_EQ(stream_read(s, buf, 1), -1);
	ATF_CHECK(stream_eof(s) && !stream_error(s));
	ATF_CHECK_EQ(stream_read_some(s, buf, 1), 0);
	stream_close(s);
}

ATF_TC_WITHOUT_HEAD(short_exact_read);
ATF_TC_BODY(short_exact_read, tc)
{
	int sv[2];
	char buf[16];

	mkpair(sv, SOCK_STREAM);
	put(sv[1], "abc");
	close(sv[1]);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_read(s, buf, 5), -1);
	ATF_CHECK(stream_eof(s));
	ATF_CHECK(memcmp(buf, "abc", 3) == 0);
	stream_close(s);
}

static void read_timeout_case(bool nb)
{
	int sv[2];
	str_t line = STR_INIT;

	mkpair(sv, SOCK_STREAM);
	if (nb)
		nonblock(sv[0]);
	stream_t *s = stream_open(sv[0]);
	stream_set_timeouts(s, 150, 0);
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_NONE);
	ATF_CHECK(stream_timedout(s));
	ATF_CHECK(!stream_eof(s) && !stream_error(s));
	ATF_CHECK_EQ(stream_errno(s), ETIMEDOUT);
	/* Sticky: data that arrives now is not read until clearerr. */
	put(sv[1], "abc");
	ATF_CHECK_EQ(stream_getc(s), STREAM_EOF);
	stream_clearerr(s);
	ATF_CHECK(!stream_timedout(s));
	/* Timeout in mid-line returns what arrived, marked partial. */
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_PARTIAL);
	ATF_CHECK_STREQ(str_cstr(&line), "abc");
	ATF_CHECK(stream_timedout(s));
	stream_clearerr(s);
	put(sv[1], "def\n");
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_LF);
	ATF_CHECK_STREQ(str_cstr(&line), "def");
	stream_close(s);
	close(sv[1]);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(read_timeout_blocking);
ATF_TC_BODY(read_timeout_blocking, tc)
{
	read_timeout_case(false);
}

ATF_TC_WITHOUT_HEAD(read_timeout_nonblocking);
ATF_TC_BODY(read_timeout_nonblocking, tc)
{
	read_timeout_case(true);
}

/* Without a timeout, a non-blocking descriptor still waits (poll) rather
 * than failing with EAGAIN. */
ATF_TC_WITHOUT_HEAD(nonblocking_waits);
ATF_TC_BODY(nonblocking_waits, tc)
{
	int sv[2];
	str_t line = STR_INIT;

	mkpair(sv, SOCK_STREAM);
	nonblock(sv[0]);
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		usleep(100000);
		_exit(write(sv[1], "late\n", 5) == 5 ? 0 : 1);
	}
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_LF);
	ATF_CHECK_STREQ(str_cstr(&line), "late");
	ATF_CHECK(!stream_error(s));
	waitpid(pid, NULL, 0);
	stream_close(s);
	close(sv[1]);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(write_timeout_nonblocking);
ATF_TC_BODY(write_timeout_nonblocking, tc)
{
	int sv[2];
	static char chunk[65536];

	mkpair(sv, SOCK_STREAM);
	nonblock(sv[0]);
	stream_t *s = stream_open(sv[0]);
	stream_set_timeouts(s, 0, 150);
	int r = 0;
	/* Nobody reads sv[1]: the socket buffer fills and the write times
	 * out.  Bounded to 64 MB in case the buffer is enormous. */
	for (int i = 0; i < 1024 && r == 0; i++)
		r = stream_write(s, chunk, sizeof(chunk));
	ATF_CHECK_EQ(r, -1);
	ATF_CHECK(stream_timedout(s));
	ATF_CHECK_EQ(stream_errno(s), ETIMEDOUT);
	ATF_CHECK_EQ(stream_write(s, "x", 1), -1);	/* sticky */
	/* Close reports the lost output, even after clearerr. */
	stream_clearerr(s);
	ATF_CHECK_EQ(stream_close(s), -1);
	ATF_CHECK_EQ(errno, ETIMEDOUT);
	close(sv[1]);
}

/* A blocking pipe: the stream polls before each small write. */
ATF_TC_WITHOUT_HEAD(write_timeout_blocking_pipe);
ATF_TC_BODY(write_timeout_blocking_pipe, tc)
{
	int p[2];
	char chunk[64];

	memset(chunk, 'x', sizeof(chunk));
	ATF_REQUIRE_EQ(pipe(p), 0);
	stream_t *s = stream_open_bufsize(p[1], 64, 64);
	stream_set_timeouts(s, 0, 150);
	int r = 0;
	for (int i = 0; i < 1000000 && r == 0; i++)
		r = stream_write(s, chunk, sizeof(chunk));
	ATF_CHECK_EQ(r, -1);
	ATF_CHECK(stream_timedout(s));
	stream_close(s);
	close(p[0]);
}

ATF_TC_WITHOUT_HEAD(write_to_closed_peer);
ATF_TC_BODY(write_to_closed_peer, tc)
{
	int sv[2], p[2];

	/* Socket: no SIGPIPE even though it is not ignored here. */
	mkpair(sv, SOCK_STREAM);
	close(sv[1]);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_puts(s, "hello\n"), 0);	/* buffered */
	ATF_CHECK_EQ(stream_flush(s), -1);
	ATF_CHECK(stream_error(s));
	ATF_CHECK_EQ(stream_errno(s), EPIPE);
	ATF_CHECK_EQ(stream_putc(s, 'x'), -1);
	ATF_CHECK_EQ(stream_printf(s, "%d", 1), -1);
	ATF_CHECK_EQ(stream_close(s), -1);

	/* Pipe: daemons ignore SIGPIPE; then it is an ordinary error. */
	signal(SIGPIPE, SIG_IGN);
	ATF_REQUIRE_EQ(pipe(p), 0);
	close(p[0]);
	s = stream_open(p[1]);
	ATF_CHECK_EQ(stream_puts(s, "hello\n"), 0);
	ATF_CHECK_EQ(stream_close(s), -1);
	ATF_CHECK_EQ(errno, EPIPE);
}

ATF_TC_WITHOUT_HEAD(printf_and_write);
ATF_TC_BODY(printf_and_write, tc)
{
	int sv[2];
	str_t line = STR_INIT;
	char *longarg = malloc(20001);

	memset(longarg, 'q', 20000);
	longarg[20000] = 0;
	mkpair(sv, SOCK_STREAM);
	stream_t *w = stream_open(sv[0]);
	stream_t *r = stream_open(sv[1]);
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		stream_printf(w, "250-%s %d\r\n", "hello", 42);
		stream_putc(w, '<');
		stream_printf(w, "%s>\r\n", longarg);	/* larger than the buffer */
		stream_puts(w, "250 ok\r\n");
		_exit(stream_close(w) == 0 ? 0 : 1);
	}
	stream_detach(w);
	close(sv[0]);
	ATF_CHECK_EQ(stream_getline(r, &line, 1000), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "250-hello 42");
	ATF_CHECK_EQ(stream_getline(r, &line, 30000), STREAM_LINE_CRLF);
	ATF_CHECK_EQ(str_len(&line), 20002);
	ATF_CHECK(line.buf[0] == '<' && line.buf[20001] == '>');
	ATF_CHECK(strspn(line.buf + 1, "q") == 20000);
	ATF_CHECK_EQ(stream_getline(r, &line, 1000), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "250 ok");
	ATF_CHECK_EQ(stream_getline(r, &line, 1000), STREAM_LINE_NONE);
	int status;
	waitpid(pid, &status, 0);
	ATF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	stream_close(r);
	free(longarg);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(printf_too_long);
ATF_TC_BODY(printf_too_long, tc)
{
	int sv[2];
	size_t n = STREAM_PRINTF_MAX + 10;
	char *big = malloc(n + 1);

	memset(big, 'x', n);
	big[n] = 0;
	mkpair(sv, SOCK_STREAM);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_printf(s, "%s", big), -1);
	ATF_CHECK(stream_error(s));
	ATF_CHECK_EQ(stream_errno(s), EMSGSIZE);
	ATF_CHECK_EQ(stream_unflushed(s), 0);
	stream_close(s);
	close(sv[1]);
	free(big);
}

ATF_TC_WITHOUT_HEAD(pending_and_purge);
ATF_TC_BODY(pending_and_purge, tc)
{
	int sv[2];
	str_t line = STR_INIT;
	const char *rest = "MAIL FROM:<a@b>\r\nRCPT TO:<c@d>\r\n";

	mkpair(sv, SOCK_STREAM);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_pending(s), 0);
	put(sv[1], "STARTTLS\r\n");
	put(sv[1], rest);
	/* Both writes are in the socket before the first read. */
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "STARTTLS");
	ATF_CHECK_EQ(stream_pending(s), strlen(rest));
	ATF_CHECK_EQ(stream_purge(s), strlen(rest));
	ATF_CHECK_EQ(stream_pending(s), 0);
	put(sv[1], "EHLO x\r\n");
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "EHLO x");
	stream_close(s);
	close(sv[1]);
	str_release(&line);
}

/* Output still buffered is flushed before a read would block, so a
 * request/response exchange cannot deadlock on our own buffer. */
static void autoflush_case(bool nb)
{
	int sv[2];
	char buf[64];
	str_t line = STR_INIT;

	mkpair(sv, SOCK_STREAM);
	if (nb)
		nonblock(sv[0]);
	stream_t *s = stream_open(sv[0]);
	stream_set_timeouts(s, 100, 100);
	ATF_CHECK_EQ(stream_puts(s, "QUIT\r\n"), 0);
	ATF_CHECK_EQ(stream_unflushed(s), 6);
	ATF_CHECK_EQ(drain(sv[1], buf, sizeof(buf)), 0);	/* not yet sent */
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_NONE);
	ATF_CHECK(stream_timedout(s));
	ATF_CHECK_EQ(stream_unflushed(s), 0);
	ATF_CHECK_EQ(drain(sv[1], buf, sizeof(buf)), 6);
	ATF_CHECK_STREQ(buf, "QUIT\r\n");
	stream_close(s);
	close(sv[1]);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(flush_before_blocking_read);
ATF_TC_BODY(flush_before_blocking_read, tc)
{
	autoflush_case(false);
	autoflush_case(true);
}

/* A toy I/O layer: XOR every byte with 0x20, and make every other read
 * ask to wait for writability first (as TLS renegotiation can). */
struct xor_ctx {
	int reads, writes, agains;
};

static ssize_t xor_read(void *ctx, int fd, void *buf, size_t len, int *want)
{
	struct xor_ctx *x = ctx;
	unsigned char *p = buf;
	ssize_t n;

	if (x->reads++ % 2 == 0) {
		x->agains++;
		*want = STREAM_WANT_WRITE;
		errno = EAGAIN;
		return -1;
	}
	n = read(fd, buf, len);
	for (ssize_t i = 0; i < n; i++)
		p[i] ^= 0x20;
	return n;
}

static ssize_t xor_write(void *ctx, int fd, const void *buf, size_t len,
    int *want)
{
	struct xor_ctx *x = ctx;
	unsigned char tmp[256];
	const unsigned char *p = buf;

	(void)want;
	x->writes++;
	if (len > sizeof(tmp))
		len = sizeof(tmp);
	for (size_t i = 0; i < len; i++)
		tmp[i] = p[i] ^ 0x20;
	return write(fd, tmp, len);
}

static const stream_io_t xor_io = { xor_read, xor_write };

ATF_TC_WITHOUT_HEAD(io_layer);
ATF_TC_BODY(io_layer, tc)
{
	int sv[2];
	char buf[64];
	str_t line = STR_INIT;
	struct xor_ctx x = { 0, 0, 0 };

	mkpair(sv, SOCK_STREAM);
	nonblock(sv[0]);
	stream_t *s = stream_open(sv[0]);
	stream_set_timeouts(s, 1000, 1000);
	/* Plain text buffered before the switch goes out in plain text. */
	ATF_CHECK_EQ(stream_puts(s, "220 go ahead\r\n"), 0);
	ATF_CHECK_EQ(stream_set_io(s, &xor_io, &x), 0);
	ATF_CHECK(stream_io_ctx(s) == &x);
	ATF_CHECK_EQ(drain(sv[1], buf, sizeof(buf)), 14);
	ATF_CHECK_STREQ(buf, "220 go ahead\r\n");
	ATF_CHECK_EQ(stream_puts(s, "abc"), 0);
	ATF_CHECK_EQ(stream_flush(s), 0);
	ATF_CHECK(x.writes >= 1);
	ATF_CHECK_EQ(drain(sv[1], buf, sizeof(buf)), 3);
	ATF_CHECK_STREQ(buf, "ABC");
	put(sv[1], "HELLO-*");	/* "hello\r\n" after XOR 0x20 */
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "hello");
	ATF_CHECK(x.agains >= 1);	/* the WANT_WRITE retry happened */
	ATF_CHECK(!stream_error(s) && !stream_timedout(s));
	/* Back to plain I/O. */
	ATF_CHECK_EQ(stream_set_io(s, NULL, NULL), 0);
	put(sv[1], "plain\n");
	ATF_CHECK_EQ(stream_getline(s, &line, 100), STREAM_LINE_LF);
	ATF_CHECK_STREQ(str_cstr(&line), "plain");
	stream_close(s);
	close(sv[1]);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(close_and_detach);
ATF_TC_BODY(close_and_detach, tc)
{
	int sv[2];
	char buf[16];

	mkpair(sv, SOCK_STREAM);
	stream_t *s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_fd(s), sv[0]);
	ATF_CHECK_EQ(stream_puts(s, "bye"), 0);
	/* Detach flushes but keeps the descriptor. */
	ATF_CHECK_EQ(stream_detach(s), 0);
	ATF_CHECK(fcntl(sv[0], F_GETFD) != -1);
	ATF_CHECK_EQ(drain(sv[1], buf, sizeof(buf)), 3);
	s = stream_open(sv[0]);
	ATF_CHECK_EQ(stream_close(s), 0);
	ATF_CHECK(fcntl(sv[0], F_GETFD) == -1 && errno == EBADF);
	/* The peer sees EOF. */
	ATF_CHECK_EQ(read(sv[1], buf, sizeof(buf)), 0);
	close(sv[1]);
	ATF_CHECK_EQ(stream_close(NULL), 0);
}

/* A bad descriptor is an error flag, not a crash. */
ATF_TC_WITHOUT_HEAD(bad_fd);
ATF_TC_BODY(bad_fd, tc)
{
	str_t line = STR_INIT;
	stream_t *s = stream_open(-1);

	stream_set_timeouts(s, 100, 100);
	ATF_CHECK_EQ(stream_getline(s, &line, 10), STREAM_LINE_NONE);
	ATF_CHECK(stream_error(s));
	ATF_CHECK_EQ(stream_errno(s), EBADF);
	stream_clearerr(s);
	ATF_CHECK_EQ(stream_puts(s, "x"), 0);
	ATF_CHECK_EQ(stream_flush(s), -1);
	ATF_CHECK(stream_error(s));
	ATF_CHECK_EQ(stream_detach(s), -1);
	str_release(&line);
}

/* ---- watches and cancellation ---- */

static int watch_calls;
static short watch_revents;
static volatile sig_atomic_t cancel_flag;

static void watch_fn(int fd, short revents, void *ctx)
{
	(void)ctx;
	watch_calls++;
	watch_revents = revents;
	stream_watch_remove(fd);
	cancel_flag = 1;
}

/* A watched pipe whose reader goes away (master's status pipe when
 * master dies) is noticed by a read that waits on another descriptor;
 * with the cancel flag the read then ends with ECANCELED, without its
 * (long) timeout. */
ATF_TC_WITHOUT_HEAD(watch_cancels_read);
ATF_TC_BODY(watch_cancels_read, tc)
{
	int sv[2], p[2];
	stream_t *s;
	str_t line = STR_INIT;

	mkpair(sv, SOCK_STREAM);
	nonblock(sv[0]);
	ATF_REQUIRE_EQ(pipe(p), 0);
	watch_calls = 0;
	cancel_flag = 0;
	ATF_REQUIRE_EQ(stream_watch_add(p[1], 0, watch_fn, NULL), 0);
	s = stream_open(sv[0]);
	stream_set_timeouts(s, 60000, 0);
	stream_set_cancel(s, &cancel_flag);
	/* Buffered input comes first; the wait for more is what ends. */
	put(sv[1], "one\r\n");
	close(p[0]);
	ATF_REQUIRE_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_REQUIRE_STREQ(str_cstr(&line), "one");
	ATF_REQUIRE_EQ(stream_getline(s, &line, 100), STREAM_LINE_NONE);
	ATF_REQUIRE(stream_error(s));
	ATF_REQUIRE(!stream_timedout(s));
	ATF_REQUIRE_EQ(stream_errno(s), ECANCELED);
	ATF_REQUIRE_EQ(watch_calls, 1);
	ATF_REQUIRE(watch_revents & (POLLERR | POLLHUP));
	/* Once set, the flag ends a wait at once; data still gets through. */
	stream_clearerr(s);
	put(sv[1], "two\r\n");
	ATF_REQUIRE_EQ(stream_getline(s, &line, 100), STREAM_LINE_CRLF);
	ATF_REQUIRE_STREQ(str_cstr(&line), "two");
	ATF_REQUIRE_EQ(stream_getline(s, &line, 100), STREAM_LINE_NONE);
	ATF_REQUIRE_EQ(stream_errno(s), ECANCELED);
	/* Writes are never cancelled. */
	stream_clearerr(s);
	ATF_REQUIRE_EQ(stream_puts(s, "bye\r\n"), 0);
	ATF_REQUIRE_EQ(stream_flush(s), 0);
	stream_close(s);
	close(sv[1]);
	close(p[1]);
	str_release(&line);
}

/* Without a cancel flag a watch only runs its function: the read goes on
 * waiting and gets the data that comes later. */
ATF_TC_WITHOUT_HEAD(watch_without_cancel);
ATF_TC_BODY(watch_without_cancel, tc)
{
	int sv[2], p[2];
	stream_t *s;
	str_t line = STR_INIT;
	pid_t pid;

	mkpair(sv, SOCK_STREAM);
	nonblock(sv[0]);
	ATF_REQUIRE_EQ(pipe(p), 0);
	watch_calls = 0;
	cancel_flag = 0;
	ATF_REQUIRE_EQ(stream_watch_add(p[1], 0, watch_fn, NULL), 0);
	s = stream_open(sv[0]);
	stream_set_timeouts(s, 10000, 0);
	close(p[0]);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		usleep(200000);
		put(sv[1], "late\n");
		_exit(0);
	}
	ATF_REQUIRE_EQ(stream_getline(s, &line, 100), STREAM_LINE_LF);
	ATF_REQUIRE_STREQ(str_cstr(&line), "late");
	ATF_REQUIRE_EQ(watch_calls, 1);
	ATF_REQUIRE(waitpid(pid, NULL, 0) == pid);
	stream_close(s);
	close(sv[1]);
	close(p[1]);
	str_release(&line);
}

/* The watch list is bounded and replaces an entry for the same fd. */
ATF_TC_WITHOUT_HEAD(watch_list_bounds);
ATF_TC_BODY(watch_list_bounds, tc)
{
	for (int i = 0; i < STREAM_WATCH_MAX; i++)
		ATF_REQUIRE_EQ(stream_watch_add(100 + i, POLLIN, watch_fn, NULL), 0);
	ATF_REQUIRE_EQ(stream_watch_add(100, POLLIN, watch_fn, NULL), 0);
	ATF_REQUIRE_EQ(stream_watch_add(200, POLLIN, watch_fn, NULL), -1);
	ATF_REQUIRE_EQ(errno, ENOSPC);
	stream_watch_remove(100);
	ATF_REQUIRE_EQ(stream_watch_add(200, POLLIN, watch_fn, NULL), 0);
	for (int i = 1; i < STREAM_WATCH_MAX; i++)
		stream_watch_remove(100 + i);
	stream_watch_remove(200);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, lines_and_terminators);
	ATF_TP_ADD_TC(tp, long_line_pieces);
	ATF_TP_ADD_TC(tp, split_exhaustive);
	ATF_TP_ADD_TC(tp, crlf_across_reads);
	ATF_TP_ADD_TC(tp, cr_at_eof);
	ATF_TP_ADD_TC(tp, getline_bad_max);
	ATF_TP_ADD_TC(tp, getc_ungetc_read);
	ATF_TP_ADD_TC(tp, short_exact_read);
	ATF_TP_ADD_TC(tp, read_timeout_blocking);
	ATF_TP_ADD_TC(tp, read_timeout_nonblocking);
	ATF_TP_ADD_TC(tp, nonblocking_waits);
	ATF_TP_ADD_TC(tp, write_timeout_nonblocking);
	ATF_TP_ADD_TC(tp, write_timeout_blocking_pipe);
	ATF_TP_ADD_TC(tp, write_to_closed_peer);
	ATF_TP_ADD_TC(tp, printf_and_write);
	ATF_TP_ADD_TC(tp, printf_too_long);
	ATF_TP_ADD_TC(tp, pending_and_purge);
	ATF_TP_ADD_TC(tp, flush_before_blocking_read);
	ATF_TP_ADD_TC(tp, io_layer);
	ATF_TP_ADD_TC(tp, close_and_detach);
	ATF_TP_ADD_TC(tp, bad_fd);
	ATF_TP_ADD_TC(tp, watch_cancels_read);
	ATF_TP_ADD_TC(tp, watch_without_cancel);
	ATF_TP_ADD_TC(tp, watch_list_bounds);
	return atf_no_error();
}
