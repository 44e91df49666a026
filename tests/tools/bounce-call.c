/* bounce-call: status logs and bounce requests from the shell, for system
 * tests (doc/protocol-delivery.md sections 6 and 7).
 *
 *   bounce-call -c CONFIG_DIR append LOG ID REC...
 *   bounce-call -c CONFIG_DIR show LOG ID
 *   bounce-call [-t ms] send SOCKET KIND QUEUE ID [FLAGS [REC...]]
 *
 * REC is "address|offset|action|status|reason[|notify[|orig[|orcpt]]]";
 * LOG is defer, bounce or trace; KIND bounce, delay or success; FLAGS a
 * number (1 no log, 2 keep log).  show prints one record a line in the
 * REC form.  send prints "status=S id=ID reason=TEXT" and exits 0 when
 * a reply came (whatever its status), 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "dsn_notice.h"
#include "mem.h"
#include "pconfig.h"
#include "queue_path.h"
#include "statuslog.h"
#include "str.h"

static void usage(void)
{
	fprintf(stderr, "usage: bounce-call -c DIR append|show LOG ID [REC...]\n"
	    "       bounce-call [-t ms] send SOCKET KIND QUEUE ID [FLAGS [REC...]]\n");
	exit(2);
}

/* Parses REC into r (strings point into the modified copy s). */
static void parse_rec(char *s, sl_rec_t *r)
{
	char *f[8] = { 0 };
	int n = 0;

	memset(r, 0, sizeof(*r));
	while (n < 8 && (f[n] = strsep(&s, "|")) != NULL)
		n++;
	if (n < 5) {
		fprintf(stderr, "bounce-call: bad record (need 5 fields)\n");
		exit(2);
	}
	r->rcpt.address = f[0];
	r->rcpt.offset = strtoll(f[1], NULL, 10);
	r->st.action = dlv_action_parse(f[2]);
	bcopy_str(r->st.status, sizeof(r->st.status), f[3]);
	r->st.reason = f[4];
	r->rcpt.notify = n > 5 ? atoi(f[5]) : 0;
	r->rcpt.orig = n > 6 ? f[6] : NULL;
	r->rcpt.orcpt = n > 7 ? f[7] : NULL;
	r->time = time(NULL);
}

int main(int argc, char **argv)
{
	const char *confdir = NULL;
	int timeout = 30000, c;
	str_t err = STR_INIT;

	while ((c = getopt(argc, argv, "c:t:")) != -1) {
		switch (c) {
		case 'c': confdir = optarg; break;
		case 't': timeout = atoi(optarg); break;
		default: usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	if (strcmp(argv[0], "send") == 0) {
		dsn_notice_req_t req;
		dsn_notice_reply_t rep;
		if (argc < 5)
			usage();
		dsn_notice_init(&req, dsn_notice_kind_parse(argv[2]), argv[3],
		    argv[4], argc > 5 ? atoi(argv[5]) : 0);
		for (int i = 6; i < argc; i++) {
			sl_rec_t r;
			char *copy = xstrdup(argv[i]);
			parse_rec(copy, &r);
			dsn_notice_add(&req, &r);
			free(copy);
		}
		if (dsn_notice_call(argv[1], &req, &rep, timeout, &err) < 0) {
			fprintf(stderr, "bounce-call: %s\n", str_cstr(&err));
			return 1;
		}
		printf("status=%d id=%s reason=%s\n", rep.status, rep.notice_id,
		    rep.reason);
		dsn_notice_reply_free(&rep);
		dsn_notice_free(&req);
		return 0;
	}
	{
		queue_layout_t ql;
		if (!confdir || argc < 3)
			usage();
		if (pconfig_load(confdir) < 0) {
			fprintf(stderr, "bounce-call: %s", pconfig_errors());
			return 1;
		}
		if (queue_layout_from_config(&ql, &err) < 0) {
			fprintf(stderr, "bounce-call: %s\n", str_cstr(&err));
			return 1;
		}
		if (strcmp(argv[0], "append") == 0) {
			for (int i = 3; i < argc; i++) {
				sl_rec_t r;
				char *copy = xstrdup(argv[i]);
				parse_rec(copy, &r);
				if (statuslog_append(&ql, argv[1], argv[2], &r, 1,
				    SL_SYNC, &err) < 0) {
					fprintf(stderr, "bounce-call: %s\n",
					    str_cstr(&err));
					return 1;
				}
				free(copy);
			}
		} else if (strcmp(argv[0], "show") == 0) {
			sl_list_t l = SL_LIST_INIT;
			if (statuslog_read(&ql, argv[1], argv[2], &l, 0, &err) < 0) {
				fprintf(stderr, "bounce-call: %s\n", str_cstr(&err));
				return 1;
			}
			for (size_t i = 0; i < l.n; i++)
				printf("%s|%lld|%s|%s|%s|%d\n", l.v[i].rcpt.address,
				    (long long)l.v[i].rcpt.offset,
				    dlv_action_name(l.v[i].st.action),
				    l.v[i].st.status, l.v[i].st.reason,
				    l.v[i].rcpt.notify);
			sl_list_free(&l);
		} else {
			usage();
		}
		queue_layout_free(&ql);
	}
	str_release(&err);
	return 0;
}
