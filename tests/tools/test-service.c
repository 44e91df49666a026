/* test-service: a tiny daemon on the server skeleton, for master's tests,
 * plus the client side the shell tests need.
 *
 * Under master (options first, then the mode):
 *   test-service [skeleton options] [single]     one client at a time
 *   test-service [skeleton options] multi        event driven
 *   test-service [skeleton options] trigger FILE appends "PID BYTES" per
 *                                                trigger to FILE
 *   test-service [skeleton options] fail         dies at start-up
 * single and multi answer line commands, one reply line each:
 *   echo TEXT    TEXT
 *   pid          the process id
 *   id           uid=U gid=G euid=U egid=G groups=G1,G2
 *   root         dev:inode of "/" (compare with the queue directory)
 *   env NAME     the variable's value, or "(unset)"
 *   param NAME   the configuration parameter's value
 *   service      service name, type and the daemon's own arguments
 *   uses         requests served by this process so far
 *   hang         never answers (for the watchdog)
 *   crash        abort()
 *   quit         closes the connection
 *
 * Tools for the tests (no master involved):
 *   test-service client [-t ms] ENDPOINT CMD...
 *       connects to ENDPOINT (a path with '/': UNIX socket; else
 *       host:port; pass:PATH hands a connection to a "pass" service at
 *       PATH), sends each CMD and prints each reply line.  CMD
 *       "wait:FILE" waits (at most 20 s) until FILE exists instead.
 *       Exit 0; 1 connect failed; 2 connection closed or timed out.
 *   test-service freeport        prints a free TCP port on 127.0.0.1
 *   test-service trigger-send PATH BYTES
 *   test-service trigger-wakeup PATH BYTES [COUNT]
 *       trigger_wakeup() with each byte of BYTES, COUNT (default 1)
 *       times over; exit 0 if every call returned 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "server.h"
#include "sock.h"
#include "str.h"

extern char **environ;

static const char *trigger_file;
static int trigger_fd = -1;

/* One command line in, one reply line out.  Returns false to close. */
static bool command(const char *line, str_t *out)
{
	str_reset(out);
	if (strncmp(line, "echo ", 5) == 0) {
		str_cat(out, line + 5);
	} else if (strcmp(line, "pid") == 0) {
		str_catf(out, "%ld", (long)getpid());
	} else if (strcmp(line, "id") == 0) {
		gid_t g[64];
		int n = getgroups(64, g);
		str_catf(out, "uid=%ld gid=%ld euid=%ld egid=%ld groups=", (long)getuid(),
		    (long)getgid(), (long)geteuid(), (long)getegid());
		for (int i = 0; i < n; i++)
			str_catf(out, "%s%ld", i ? "," : "", (long)g[i]);
	} else if (strcmp(line, "root") == 0) {
		struct stat st;
		if (stat("/", &st) == 0)
			str_catf(out, "%lu:%lu", (unsigned long)st.st_dev,
			    (unsigned long)st.st_ino);
		else
			str_catf(out, "ERR %s", strerror(errno));
	} else if (strncmp(line, "env ", 4) == 0) {
		const char *v = getenv(line + 4);
		str_cat(out, v ? v : "(unset)");
	} else if (strcmp(line, "envnames") == 0) {
		for (char **e = environ; *e; e++) {
			const char *eq = strchr(*e, '=');
			str_catf(out, "%s%.*s", e == environ ? "" : ",",
			    (int)(eq ? eq - *e : (long)strlen(*e)), *e);
		}
	} else if (strncmp(line, "param ", 6) == 0) {
		pconfig_item_t it;
		if (pconfig_item(line + 6, &it))
			str_cat(out, pconfig_get_str(it.name));
		else
			str_cat(out, "ERR unknown parameter");
	} else if (strcmp(line, "service") == 0) {
		str_catf(out, "%s %s", server_service_name(), server_service_type());
		for (int i = 0; i < server_argc(); i++)
			str_catf(out, " %s", server_argv()[i]);
	} else if (strcmp(line, "uses") == 0) {
		str_catf(out, "%lu", server_use_count());
	} else if (strcmp(line, "hang") == 0) {
		for (;;)
			pause();
	} else if (strcmp(line, "crash") == 0) {
		signal(SIGABRT, SIG_DFL);
		abort();
	} else if (strcmp(line, "quit") == 0) {
		return false;
	} else {
		str_cat(out, "ERR unknown command");
	}
	str_putc(out, '\n');
	return true;
}

static void serve(stream_t *st, void *ctx)
{
	str_t line = STR_INIT, out = STR_INIT;
	(void)ctx;

	stream_set_timeouts(st, 30000, 30000);
	while (stream_getline(st, &line, 4096) != STREAM_LINE_NONE) {
		if (!command(str_cstr(&line), &out))
			break;
		if (stream_write(st, str_cstr(&out), str_len(&out)) < 0 ||
		    stream_flush(st) < 0)
			break;
	}
	str_release(&line);
	str_release(&out);
}

/* Event-driven clients: a buffer of partial input each. */
typedef struct client {
	int fd;
	str_t in;
} client_t;

static void client_event(int fd, int events, void *ctx)
{
	client_t *c = ctx;
	char buf[1024];
	str_t out = STR_INIT;
	ssize_t n;
	(void)events;

	n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		char *nl;
		str_append(&c->in, buf, (size_t)n);
		while ((nl = memchr(str_cstr(&c->in), '\n', str_len(&c->in))) != NULL) {
			size_t l = (size_t)(nl - str_cstr(&c->in));
			char *cmd = xstrndup(str_cstr(&c->in), l);
			bool go;
			if (l > 0 && cmd[l - 1] == '\r')
				cmd[l - 1] = 0;
			go = command(cmd, &out);
			free(cmd);
			/* Replies are tiny; a blocking write is fine in a test tool. */
			if (go) {
				sock_set_nonblock(fd, false);
				go = file_write_all(fd, str_cstr(&out), str_len(&out)) == 0;
				sock_set_nonblock(fd, true);
			}
			if (!go) {
				n = 0;
				break;
			}
			memmove(c->in.buf, nl + 1, str_len(&c->in) - l - 1);
			str_truncate(&c->in, str_len(&c->in) - l - 1);
		}
	}
	str_release(&out);
	if (n <= 0) {
		str_release(&c->in);
		free(c);
		server_disconnect(fd);
	}
}

static void multi_connect(int fd, void *ctx)
{
	client_t *c = xcalloc(1, sizeof(*c));
	(void)ctx;
	c->fd = fd;
	event_add(server_loop(), fd, EVENT_READ, client_event, c);
}

static void trigger_pre_jail(void *ctx)
{
	(void)ctx;
	trigger_fd = open(trigger_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (trigger_fd < 0)
		log_fatal("open %s: %s", trigger_file, strerror(errno));
}

static void trigger(const char *buf, size_t len, void *ctx)
{
	str_t line = STR_INIT;
	(void)ctx;
	str_catf(&line, "%ld %.*s\n", (long)getpid(), (int)len, buf);
	if (write(trigger_fd, str_cstr(&line), str_len(&line)) < 0)
		log_warning("write %s: %s", trigger_file, strerror(errno));
	str_release(&line);
}

static void fail_post_jail(void *ctx)
{
	(void)ctx;
	log_fatal("failing at start-up as asked");
}

/* ---- client side ---- */

static int client(int argc, char **argv)
{
	int timeout = 10000, fd, r, i = 0;
	const char *ep;

	while (argc > 1 && strcmp(argv[0], "-t") == 0) {
		timeout = atoi(argv[1]);
		argc -= 2;
		argv += 2;
	}
	if (argc < 1) {
		fprintf(stderr, "usage: test-service client [-t ms] ENDPOINT CMD...\n");
		return 64;
	}
	ep = argv[0];
	if (strncmp(ep, "pass:", 5) == 0) {
		/* A "pass" service: hand it one end of a socket pair over a
		 * UNIX connection, talk over the other end. */
		int conn, sp[2];
		r = sock_unix_connect(ep + 5, timeout, &conn);
		if (r != 0) {
			fprintf(stderr, "connect %s: %s\n", ep + 5, strerror(r));
			return 1;
		}
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) < 0 ||
		    (sock_set_nonblock(conn, false), sock_send_fd(conn, sp[1])) < 0) {
			fprintf(stderr, "pass %s: %s\n", ep + 5, strerror(errno));
			return 1;
		}
		close(sp[1]);
		close(conn);
		fd = sp[0];
	} else {
		r = strchr(ep, '/') ? sock_unix_connect(ep, timeout, &fd) :
		    sock_tcp_connect_str(ep, timeout, &fd);
		if (r != 0) {
			fprintf(stderr, "connect %s: %s\n", ep, strerror(r));
			return 1;
		}
	}
	stream_t *st = stream_open(fd);
	str_t line = STR_INIT;
	stream_set_timeouts(st, timeout, timeout);
	for (i = 1; i < argc; i++) {
		if (strncmp(argv[i], "wait:", 5) == 0) {
			struct stat sb;
			int n = 0;
			while (stat(argv[i] + 5, &sb) < 0 && n++ < 200)
				usleep(100000);
			continue;
		}
		stream_printf(st, "%s\n", argv[i]);
		if (stream_getline(st, &line, 4096) == STREAM_LINE_NONE) {
			printf("%s\n", stream_timedout(st) ? "TIMEOUT" : "EOF");
			fflush(stdout);
			stream_close(st);
			str_release(&line);
			return 2;
		}
		printf("%s\n", str_cstr(&line));
		fflush(stdout);
	}
	stream_close(st);
	str_release(&line);
	return 0;
}

static int freeport(void)
{
	int fds[SOCK_LISTEN_MAX];
	int n = sock_tcp_listen("127.0.0.1:0", 1, fds);
	if (n < 1) {
		perror("listen");
		return 1;
	}
	printf("%d\n", sock_local_port(fds[0]));
	close(fds[0]);
	return 0;
}

/* The first argument that is neither an option nor an option's value. */
static const char *find_mode(int argc, char **argv, int *where)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-') {
			*where = i;
			return a;
		}
		if (strchr("cnost", a[1]) && a[2] == 0)
			i++;
	}
	*where = argc;
	return "single";
}

int main(int argc, char **argv)
{
	server_spec_t spec = { .model = SERVER_SINGLE, .serve = serve };
	int where;
	const char *mode;

	if (argc > 1 && strcmp(argv[1], "client") == 0)
		return client(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "freeport") == 0)
		return freeport();
	if (argc == 4 && strcmp(argv[1], "trigger-send") == 0) {
		if (trigger_send(argv[2], argv[3], strlen(argv[3]), 5000) < 0) {
			fprintf(stderr, "trigger %s: %s\n", argv[2], strerror(errno));
			return 1;
		}
		return 0;
	}
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "trigger-wakeup") == 0) {
		long count = 1;
		if (argc == 5 && (!str_to_long(argv[4], &count) || count < 0)) {
			fprintf(stderr, "test-service: bad count %s\n", argv[4]);
			return 64;
		}
		for (long i = 0; i < count; i++) {
			for (const char *b = argv[3]; *b; b++) {
				if (trigger_wakeup(argv[2], *b) < 0) {
					fprintf(stderr, "wakeup %s: %s\n", argv[2],
					    strerror(errno));
					return 1;
				}
			}
		}
		return 0;
	}
	mode = find_mode(argc, argv, &where);
	if (strcmp(mode, "multi") == 0) {
		spec.model = SERVER_MULTI;
		spec.connect = multi_connect;
	} else if (strcmp(mode, "trigger") == 0) {
		if (where + 1 >= argc) {
			fprintf(stderr, "test-service: trigger FILE\n");
			return 64;
		}
		trigger_file = argv[where + 1];
		spec.model = SERVER_TRIGGER;
		spec.pre_jail = trigger_pre_jail;
		spec.trigger = trigger;
	} else if (strcmp(mode, "fail") == 0) {
		spec.post_jail = fail_post_jail;
	} else if (strcmp(mode, "single") != 0) {
		fprintf(stderr, "test-service: unknown mode %s\n", mode);
		return 64;
	}
	server_main(argc, argv, &spec);
}
