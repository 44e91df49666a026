/* cleanup-submit: a test client of cleanup(8) on the client library.
 *
 *   cleanup-submit [options] FILE [RCPT...]
 *
 *   -s SOCKET    socket path or service name (default: cleanup, i.e.
 *                private/cleanup or public/cleanup in the current dir)
 *   -t MS        timeout (default 10000)
 *   -f SENDER    envelope sender (default "")
 *   -F NAME      full name;  -u UID  submitting uid;  -e ENVID;  -r RET
 *   -x           EXTRACT flag (recipients from the header, like -t)
 *   -S           SMTP flag; -C NAME -I ADDR -H HELO -P PROTO -T TLSINFO
 *                give the client attributes
 *   -L IDENT     log_ident;  -a NAME=VALUE  a named attribute (repeat)
 *   -O ORCPT     ORCPT for every recipient;  -N BITS  NOTIFY for every one
 *   -o FILTER    content_filter;  -X FLAGS  more envelope flags (number,
 *                e.g. 8 NO_CHECKS, 16 NO_MAPPINGS)
 *   -c N         write the content in pieces of N bytes (default 65536)
 *   -q           ask for the queue ID at once (CLEANUP_FLAG_QUEUE_ID) and
 *                read it before the end: prints "early QUEUEID|-" first
 *   -k           ask for it but never read it (cleanup_clnt_finish skips it)
 *   -A           abort instead of ending the transaction
 *   -n N         submit the message N times over one connection
 *   -g           garbage mode: send FILE's bytes as they are, print what
 *                comes back (escaped), exit 0 if the peer closed
 *
 * FILE "-" is standard input.  For each transaction one line goes to
 * standard output: "STATUS DSN QUEUEID|- TEXT".  Exit status: 0 all
 * queued, 4 temporary failure, 5 permanent failure, 2 usage. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cleanup_clnt.h"
#include "file.h"
#include "sock.h"
#include "str.h"

static void usage(void)
{
	fprintf(stderr, "usage: cleanup-submit [-AgkqSx] [-s socket] [-t ms] "
	    "[-f sender] [-F name] [-u uid] [-e envid] [-r ret] [-C name] "
	    "[-I addr] [-H helo] [-P proto] [-T tls] [-L ident] "
	    "[-a name=value] [-o filter] [-X flags] [-O orcpt] [-N notify] [-c size] [-n count] "
	    "file [rcpt...]\n");
	exit(2);
}

static int garbage(const char *sock, int timeout, const str_t *content)
{
	int fd, rc;
	char buf[4096];
	str_t out = STR_INIT;

	if (strchr(sock, '/') == NULL) {
		snprintf(buf, sizeof(buf), "private/%s", sock);
		rc = sock_unix_connect(buf, timeout, &fd);
		if (rc == ENOENT) {
			snprintf(buf, sizeof(buf), "public/%s", sock);
			rc = sock_unix_connect(buf, timeout, &fd);
		}
	} else {
		rc = sock_unix_connect(sock, timeout, &fd);
	}
	if (rc != 0) {
		fprintf(stderr, "cleanup-submit: connect: %s\n", strerror(rc));
		return 4;
	}
	/* The peer may close before reading everything: ignore EPIPE. */
	(void)!send(fd, str_cstr(content), str_len(content), MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, timeout) <= 0) {
			printf("TIMEOUT\n");
			str_release(&out);
			close(fd);
			return 4;
		}
		n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		str_quote_printable(&out, buf, (size_t)n);
	}
	printf("%s\nCLOSED\n", str_cstr(&out));
	str_release(&out);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	const char *sock = NULL, *orcpt = NULL;
	int timeout = 10000, notify = 0, ch, count = 1, worst = 0;
	size_t chunk = 65536;
	bool do_abort = false, garbage_mode = false, early = false;
	cleanup_attr_t attrs[64];
	str_t content = STR_INIT, err = STR_INIT;
	cleanup_clnt_t *c;

	while ((ch = getopt(argc, argv, "AC:F:H:I:L:N:O:P:ST:X:a:c:e:f:gkn:o:qr:s:t:u:x")) != -1) {
		switch (ch) {
		case 'A': do_abort = true; break;
		case 'k': env.flags |= CLEANUP_FLAG_QUEUE_ID; break;
		case 'q': env.flags |= CLEANUP_FLAG_QUEUE_ID; early = true; break;
		case 'C': env.client_name = optarg; break;
		case 'F': env.full_name = optarg; break;
		case 'H': env.helo_name = optarg; break;
		case 'I': env.client_address = optarg; break;
		case 'L': env.log_ident = optarg; break;
		case 'N': notify = atoi(optarg); break;
		case 'O': orcpt = optarg; break;
		case 'P': env.protocol = optarg; break;
		case 'S': env.flags |= CLEANUP_FLAG_SMTP; break;
		case 'T': env.tls_info = optarg; break;
		case 'a': {
			char *eq = strchr(optarg, '=');
			if (eq == NULL || env.nattrs == 64)
				usage();
			*eq = '\0';
			attrs[env.nattrs].name = optarg;
			attrs[env.nattrs].value = eq + 1;
			env.nattrs++;
			env.attrs = attrs;
			break;
		}
		case 'c': chunk = (size_t)atol(optarg); break;
		case 'e': env.envid = optarg; break;
		case 'f': env.sender = optarg; break;
		case 'g': garbage_mode = true; break;
		case 'n': count = atoi(optarg); break;
		case 'r': env.ret = atoi(optarg); break;
		case 's': sock = optarg; break;
		case 't': timeout = atoi(optarg); break;
		case 'u': env.uid = atoll(optarg); break;
		case 'x': env.flags |= CLEANUP_FLAG_EXTRACT; break;
		case 'o': env.content_filter = optarg; break;
		case 'X': env.flags |= atoi(optarg); break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1 || chunk == 0 || count < 1)
		usage();
	if (strcmp(argv[0], "-") == 0 ? file_read_fd(0, &content, 256 << 20) < 0 :
	    file_read_all(argv[0], &content, 256 << 20) < 0) {
		fprintf(stderr, "cleanup-submit: %s: %s\n", argv[0],
		    strerror(errno));
		str_release(&content);
		return 2;
	}
	if (garbage_mode) {
		int rc = garbage(sock ? sock : CLEANUP_SERVICE, timeout, &content);
		str_release(&content);
		return rc;
	}

	c = cleanup_clnt_connect(sock, timeout, &err);
	if (c == NULL) {
		printf("4 4.3.0 - %s\n", str_cstr(&err));
		str_release(&content);
		str_release(&err);
		return 4;
	}
	for (int k = 0; k < count; k++) {
		cleanup_reply_t reply;

		cleanup_clnt_send_envelope(c, &env);
		for (int i = 1; i < argc; i++)
			cleanup_clnt_send_rcpt(c, argv[i], orcpt, notify);
		for (size_t off = 0; off < str_len(&content); off += chunk) {
			size_t n = str_len(&content) - off;
			cleanup_clnt_write(c, str_cstr(&content) + off,
			    n < chunk ? n : chunk);
		}
		if (early) {
			char id[QUEUE_ID_SIZE];
			printf("early %s\n", cleanup_clnt_queue_id(c, id) == 0 ? id : "-");
		}
		if (do_abort)
			cleanup_clnt_abort(c, &reply);
		else
			cleanup_clnt_finish(c, &reply);
		printf("%d %s %s %s\n", reply.status, reply.dsn,
		    reply.queue_id[0] ? reply.queue_id : "-", reply.text);
		if (reply.status > worst)
			worst = reply.status;
		if (cleanup_clnt_error(c) != NULL)
			break;
	}
	fflush(stdout);
	cleanup_clnt_close(c);
	str_release(&content);
	str_release(&err);
	return worst;
}
