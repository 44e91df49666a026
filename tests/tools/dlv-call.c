/* dlv-call: sends one delivery request to an agent and prints the reply,
 * for system tests of delivery agents (doc/protocol-delivery.md).
 *
 *   dlv-call [-t ms] [-q queue] [-i queue_id] [-s sender] [-n count]
 *            SOCKET NEXTHOP RCPT...
 *
 * Prints "flags=F reason=TEXT" and then one line per recipient:
 * "ADDRESS ACTION STATUS RELAY REASON".  -n sends the same request that
 * many times over one connection (each reply printed).  Exit 0 after
 * the replies, 1 when the exchange failed (the reason on stderr), 2 on
 * usage errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "delivery.h"
#include "sock.h"
#include "str.h"

static void usage(void)
{
	fprintf(stderr, "usage: dlv-call [-t ms] [-q queue] [-i queue_id] "
	    "[-s sender] [-n count] SOCKET NEXTHOP RCPT...\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *queue = "active", *id = "4QMZ7X2KCB7H", *sender = "sender@example.org";
	int timeout = 10000, count = 1, c, fd, e;
	dlv_request_t req;
	str_t err = STR_INIT;

	while ((c = getopt(argc, argv, "i:n:q:s:t:")) != -1) {
		switch (c) {
		case 'i': id = optarg; break;
		case 'n': count = atoi(optarg); break;
		case 'q': queue = optarg; break;
		case 's': sender = optarg; break;
		case 't': timeout = atoi(optarg); break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 3 || count < 1)
		usage();
	dlv_request_init(&req, queue, id, sender, argv[1]);
	for (int i = 2; i < argc; i++)
		dlv_request_add_rcpt(&req, argv[i], NULL, NULL, 0, 100 + i);
	if ((e = sock_unix_connect(argv[0], timeout, &fd)) != 0) {
		fprintf(stderr, "dlv-call: connect to %s: %s\n", argv[0],
		    strerror(e));
		return 1;
	}
	for (int n = 0; n < count; n++) {
		dlv_reply_t rep;
		if (dlv_call(fd, &req, &rep, timeout, &err) < 0) {
			fprintf(stderr, "dlv-call: %s\n", str_cstr(&err));
			return 1;
		}
		printf("flags=%d reason=%s\n", rep.flags, rep.reason);
		for (size_t i = 0; i < rep.n; i++)
			printf("%s %s %s %s %s\n", req.rcpt[i].address,
			    dlv_action_name(rep.st[i].action), rep.st[i].status,
			    *rep.st[i].relay ? rep.st[i].relay : "-",
			    rep.st[i].reason);
		fflush(stdout);
		dlv_reply_free(&rep);
	}
	close(fd);
	dlv_request_free(&req);
	str_release(&err);
	return 0;
}
