/* libFuzzer target for the milter client (libglobal/milter.c): the input
 * is what a milter sends back, byte for byte.
 *
 * A thread plays the milters on a UNIX socket: it accepts the client's
 * connections in order, writes each its part of the input and ends its
 * half of the connection.  The client goes through a
 * whole session on it, two milters of a list on two connections so the
 * second is shown the message after the first one's edits: negotiation,
 * connect, helo, MAIL, RCPT, DATA, a header and a body, end of message,
 * and the modifications it was given.  Whatever the bytes, the client
 * must end every stage with a verdict (a broken milter gets the default
 * action), never crash, leak or read out of bounds (the sanitizers), and
 * never wait: the milter's side is closed, so no read waits for its
 * timeout.  The first input byte chooses the default action and the
 * protocol version offered; the rest is split between the two milters at
 * the second byte's proportion. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "milter.h"
#include "str.h"

static char sock_path[108];
static int listen_fd = -1;

struct feed {
	const uint8_t *data;
	size_t len;
};

/* The milters' side: connections in the order the client makes them;
 * the k-th gets feed k (nothing after the second), then its half is
 * closed.  Kept open (what the client sends piles up unread) until the
 * client is done, then closed.  Deterministic: one thread, accept order. */
static struct feed feeds[2];
static int stop_pipe[2] = { -1, -1 };	/* a byte: the client is done */

static void *serve(void *arg)
{
	int fds[8], n = 0;

	(void)arg;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = listen_fd, .events = POLLIN },
		    { .fd = stop_pipe[0], .events = POLLIN } };
		char c;
		int fd;
		if (poll(pfd, 2, -1) <= 0)
			continue;
		/* Pending connections first: they were made before the
		 * stop byte. */
		if (!(pfd[0].revents & POLLIN)) {
			if (read(stop_pipe[0], &c, 1) == 1)
				break;
			continue;
		}
		if ((fd = accept(listen_fd, NULL, NULL)) < 0)
			continue;
		if (n < 2)
			for (size_t off = 0; off < feeds[n].len; ) {
				ssize_t w = send(fd, feeds[n].data + off,
				    feeds[n].len - off, MSG_NOSIGNAL);
				if (w <= 0)
					break;
				off += (size_t)w;
			}
		(void)shutdown(fd, SHUT_WR);
		if (n < 8)
			fds[n++] = fd;
		else
			close(fd);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return NULL;
}

static void setup(void)
{
	struct sockaddr_un sun;

	signal(SIGPIPE, SIG_IGN);
	snprintf(sock_path, sizeof(sock_path), "/tmp/fuzz_milter.%ld",
	    (long)getpid());
	unlink(sock_path);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, sock_path, strlen(sock_path) + 1);
	if (pipe(stop_pipe) < 0) {
		perror("fuzz_milter: pipe");
		abort();
	}
	listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sun,
	    sizeof(sun)) < 0 || listen(listen_fd, 4) < 0) {
		perror("fuzz_milter: listen");
		abort();
	}
}

static const char *macro(void *ctx, const char *name)
{
	(void)ctx;
	if (strcmp(name, "i") == 0)
		return "1NGGQT2CRHVAFHAH";
	if (strcmp(name, "j") == 0)
		return "mx.example.test";
	return strcmp(name, "{client_addr}") == 0 ? "192.0.2.1" : NULL;
}

/* One stage: a verdict other than CONTINUE ends the session. */
#define STAGE(call) do { \
	milter_reply_release(&r); \
	r = (milter_reply_t)MILTER_REPLY_INIT; \
	if ((call) != MILTER_CONTINUE) \
		goto out; \
} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum milter_defact acts[] = { MILTER_DEF_TEMPFAIL,
	    MILTER_DEF_ACCEPT, MILTER_DEF_REJECT, MILTER_DEF_QUARANTINE };
	milter_params_t p;
	milters_t *ms;
	milter_reply_t r = MILTER_REPLY_INIT;
	milter_edits_t ed = MILTER_EDITS_INIT;
	pthread_t th;
	str_t err = STR_INIT, list = STR_INIT;
	const char *mail[] = { "<a@example.org>", "SIZE=100", NULL };
	const char *rcpt[] = { "<b@example.net>", NULL };
	static const char msg[] = "Subject: fuzz\r\nX-A: 1\r\n\r\nbody\r\n";
	size_t cut;

	if (listen_fd < 0)
		setup();
	if (size < 2 || size > 65536)
		return 0;
	memset(&p, 0, sizeof(p));
	p.connect_ms = p.command_ms = p.content_ms = 2000;
	p.default_action = acts[data[0] & 3];
	p.protocol = 2 + (data[0] >> 2) % 5;
	p.actions = ~0u;
	p.body_limit = 1 << 20;
	cut = (size - 2) * data[1] / 255;
	feeds[0] = (struct feed){ data + 2, cut };
	feeds[1] = (struct feed){ data + 2 + cut, size - 2 - cut };
	str_setf(&list, "unix:%s, unix:%s", sock_path, sock_path);
	ms = milters_new(str_cstr(&list), &p, &err);
	if (ms == NULL) {
		fprintf(stderr, "fuzz_milter: %s\n", str_cstr(&err));
		abort();
	}
	milters_set_macros(ms, macro, NULL);
	if (pthread_create(&th, NULL, serve, NULL) != 0)
		abort();
	STAGE(milters_connect(ms, "client.example", "192.0.2.1", 4711, 4, &r));
	STAGE(milters_helo(ms, "client.example", &r));
	STAGE(milters_mail(ms, mail, &r));
	STAGE(milters_rcpt(ms, rcpt, &r));
	STAGE(milters_data(ms, &r));
	STAGE(milters_content(ms, msg, sizeof(msg) - 1, &r));
	STAGE(milters_eom(ms, &ed, &r));
out:
	milters_free(ms);	/* every connection it made is pending or served */
	if (write(stop_pipe[1], "x", 1) != 1)
		abort();
	pthread_join(th, NULL);
	milter_reply_release(&r);
	milter_edits_release(&ed);
	str_release(&err);
	str_release(&list);
	return 0;
}
