/* postsuper: queue administration, safe while Petrel runs.
 *
 *	postsuper [-c config_dir] [-v] [-w seconds] [-s] [-p]
 *	    [-d queue_id|ALL|-] [-h ...] [-H ...] [-r ...]
 *	    [-x destination|ALL] [-P destination] [-U destination] [queue ...]
 *
 * -d delete, -h hold, -H release from hold, -r requeue; each may repeat,
 * "-" reads queue IDs from standard input, ALL takes every message of the
 * selected queues (the trailing queue names, else each option's
 * defaults).  -s checks and repairs the queue tree, -p removes stale
 * temporary files.  -x, -P and -U talk to qmgr: forget a dead
 * destination, suspend or resume delivery to one.  The order of work is
 * -s, -p, -d, -h, -H, -r, -x, -P, -U.  man/postsuper.1 has the details;
 * doc/protocol-qmgr-control.md how the actions stay safe while qmgr
 * runs. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "queue_flush.h"
#include "super.h"
#include "qmgr_clnt.h"
#include "server.h"

/* Temporary files younger than this are never purged (a writer may be
 * between creating and locking one). */
#define PURGE_MIN_AGE	600

typedef struct arglist {
	char **v;
	int n;
} arglist_t;

static const char *config_dir;
static bool stdin_used;

static void usage(void)
{
	fprintf(stderr, "usage: postsuper [-c config_dir] [-v] [-w seconds] "
	    "[-s] [-p] [-d queue_id|ALL|-]\n"
	    "           [-h queue_id|ALL|-] [-H queue_id|ALL|-] "
	    "[-r queue_id|ALL|-]\n"
	    "           [-x destination|ALL] [-P destination] "
	    "[-U destination] [queue ...]\n");
	exit(2);
}

static void add(arglist_t *l, char *v)
{
	l->v = xreallocarray(l->v, (size_t)l->n + 1, sizeof(*l->v));
	l->v[l->n++] = v;
}

static void summary(qmgr_clnt_action_t act, const super_admin_stats_t *st)
{
	static const char *const what[] = { "Deleted", "Placed on hold",
	    "Released from hold", "Requeued" };

	if (st->done > 0)
		fprintf(stderr, "postsuper: %s: %lu message%s\n", what[act],
		    st->done, st->done == 1 ? "" : "s");
	if (st->pending > 0)
		fprintf(stderr, "postsuper: %s when their deliveries end: %lu "
		    "message%s\n", what[act], st->pending,
		    st->pending == 1 ? "" : "s");
}

/* Queue IDs from standard input: white space separated (one a line in
 * practice, as postq prints them; a trailing * or ! is dropped). */
static void read_stdin(super_admin_t *a)
{
	str_t word = STR_INIT;
	int ch;

	if (stdin_used)
		return;			/* checked in main: only one "-" */
	stdin_used = true;
	for (;;) {
		ch = getchar();
		if (ch == EOF || isspace(ch)) {
			if (str_len(&word) > 0) {
				size_t n = str_len(&word);
				if (str_cstr(&word)[n - 1] == '*'
				    || str_cstr(&word)[n - 1] == '!')
					str_truncate(&word, n - 1);
				super_admin_id(a, str_cstr(&word));
				str_reset(&word);
			}
			if (ch == EOF)
				break;
		} else if (str_len(&word) < 256) {
			str_putc(&word, ch);
		}
	}
	str_release(&word);
}

static int run_action(const queue_layout_t *ql, qmgr_clnt_action_t act,
    const arglist_t *l, char **queues, int wait)
{
	super_admin_t *a;
	super_admin_stats_t st;
	str_t err = STR_INIT;
	int rc = 0;

	if (l->n == 0)
		return 0;
	a = super_admin_new(ql, act, (const char *const *)queues, wait);
	for (int i = 0; i < l->n; i++) {
		if (strcmp(l->v[i], "ALL") == 0) {
			if (super_admin_all(a, &err) < 0) {
				log_error("%s", str_cstr(&err));
				rc = 1;
			}
		} else if (strcmp(l->v[i], "-") == 0) {
			read_stdin(a);
		} else {
			super_admin_id(a, l->v[i]);
		}
	}
	super_admin_finish(a, &st);
	super_admin_free(a);
	summary(act, &st);
	/* Tell qmgr about mail it should look at now (when it runs). */
	if (st.released_deferred || st.requeued_incoming) {
		str_reset(&err);
		if (queue_flush_trigger(config_dir,
		    st.requeued_incoming ? "I" : "D", &err) < 0 && log_verbose)
			log_info("%s", str_cstr(&err));
	}
	if (st.errors > 0 || st.missing > 0)
		rc = 1;
	str_release(&err);
	return rc;
}

/* -x, -P, -U: requests to qmgr (which logs what it did). */
static int run_dest(const queue_layout_t *ql, const char *request,
    const char *dest)
{
	str_t err = STR_INIT;
	long count = 0;
	int st, rc = 0;
	bool all = strcmp(request, QMGR_CLNT_REQ_DSC_CLEAR) == 0
	    && strcmp(dest, "ALL") == 0;

	st = qmgr_clnt_request_simple(ql->dir, request, all ? NULL : dest, NULL,
	    &count, 10000, &err);
	if (st == QMGR_CLNT_FAIL) {
		log_error("%s", str_cstr(&err));
		rc = 1;
	} else if (strcmp(request, QMGR_CLNT_REQ_DSC_CLEAR) == 0) {
		fprintf(stderr, "postsuper: %ld dead destination%s forgotten\n",
		    count, count == 1 ? "" : "s");
	} else if (strcmp(request, QMGR_CLNT_REQ_SUSPEND) == 0) {
		fprintf(stderr, "postsuper: delivery to %s suspended; its mail "
		    "waits in the deferred queue (postsuper -U %s resumes)\n",
		    dest, dest);
	} else if (st == QMGR_CLNT_NOTHING) {
		fprintf(stderr, "postsuper: %s: %s\n", dest, str_cstr(&err));
	} else {
		/* Resumed: its mail waits in deferred with retry times set
		 * while it was suspended; make it due now. */
		long n;
		str_reset(&err);
		n = queue_flush_site(ql, dest, &err);
		if (n < 0) {
			log_error("%s", str_cstr(&err));
			rc = 1;
		}
		fprintf(stderr, "postsuper: delivery to %s resumed; %ld deferred "
		    "message%s due now\n", dest, n < 0 ? 0 : n, n == 1 ? "" : "s");
		str_reset(&err);
		if (n > 0 && queue_flush_trigger(config_dir, "D", &err) < 0) {
			log_error("%s", str_cstr(&err));
			rc = 1;
		}
	}
	str_release(&err);
	return rc;
}

int main(int argc, char **argv)
{
	arglist_t lists[4] = { { NULL, 0 } };	/* indexed by
						 * qmgr_clnt_action_t */
	arglist_t x = { NULL, 0 }, P = { NULL, 0 }, U = { NULL, 0 };
	bool structure = false, purge = false;
	int c, wait = QMGR_CLNT_WAIT_DEFAULT, rc = 0, verbose = 0;
	queue_layout_t ql;
	str_t err = STR_INIT;

	log_init("postsuper");
	while ((c = getopt(argc, argv, "c:vw:spd:h:H:r:x:P:U:")) != -1) {
		switch (c) {
		case 'c':
			config_dir = optarg;
			break;
		case 'v':
			verbose++;
			log_verbose++;
			break;
		case 'w':
			wait = atoi(optarg);
			if (wait < 0 || wait > QMGR_CLNT_WAIT_MAX)
				usage();
			break;
		case 's':
			structure = true;
			break;
		case 'p':
			purge = true;
			break;
		case 'd':
			add(&lists[QMGR_CLNT_ACT_DELETE], optarg);
			break;
		case 'h':
			add(&lists[QMGR_CLNT_ACT_HOLD], optarg);
			break;
		case 'H':
			add(&lists[QMGR_CLNT_ACT_RELEASE], optarg);
			break;
		case 'r':
			add(&lists[QMGR_CLNT_ACT_REQUEUE], optarg);
			break;
		case 'x':
			add(&x, optarg);
			break;
		case 'P':
			add(&P, optarg);
			break;
		case 'U':
			add(&U, optarg);
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (!structure && !purge && lists[0].n + lists[1].n + lists[2].n
	    + lists[3].n + x.n + P.n + U.n == 0)
		usage();
	{
		int dashes = 0;
		for (int a = 0; a < 4; a++)
			for (int i = 0; i < lists[a].n; i++)
				dashes += strcmp(lists[a].v[i], "-") == 0;
		if (dashes > 1)
			log_fatal("only one option may read queue IDs from "
			    "standard input");
	}
	for (int i = 0; i < argc; i++)
		if (!queue_name_valid(argv[i]) || queue_index(argv[i]) >= 6)
			log_fatal("%s: not a message queue name", argv[i]);

	if (config_dir == NULL)
		config_dir = getenv("MAIL_CONFIG");
	if (config_dir == NULL || *config_dir == 0)
		config_dir = DEF_CONFIG_DIR;
	if (pconfig_load(config_dir) < 0)
		log_fatal("%s", pconfig_errors());
	super_log_setup(verbose > 0);
	if (queue_layout_from_config(&ql, &err) < 0)
		log_fatal("%s", str_cstr(&err));

	if (structure) {
		super_repair_stats_t st = { 0 };
		/* qmgr owns active/ while it runs. */
		qmgr_clnt_t *qc = qmgr_clnt_connect(ql.dir, 5000, &err);
		bool running = qc != NULL || (errno != ENOENT
		    && errno != ECONNREFUSED);
		qmgr_clnt_close(qc);
		if (running)
			fprintf(stderr, "postsuper: qmgr is running: the active "
			    "queue is left alone\n");
		str_reset(&err);
		if (super_repair_structure(&ql, running, &st, &err) < 0) {
			log_error("%s", str_cstr(&err));
			rc = 1;
		}
		fprintf(stderr, "postsuper: structure: %lu director%s created, "
		    "%lu file%s moved, %lu renamed, %lu to corrupt, %lu left\n",
		    st.dirs_created, st.dirs_created == 1 ? "y" : "ies", st.moved,
		    st.moved == 1 ? "" : "s", st.renamed, st.to_corrupt, st.left);
		if (st.left > 0)
			rc = 1;
	}
	if (purge) {
		super_repair_stats_t st = { 0 };
		str_reset(&err);
		if (super_repair_purge(&ql, PURGE_MIN_AGE, &st, &err) < 0) {
			log_error("%s", str_cstr(&err));
			rc = 1;
		}
		fprintf(stderr, "postsuper: purged %lu stale temporary file%s\n",
		    st.purged, st.purged == 1 ? "" : "s");
	}
	for (int a = 0; a < 4; a++)
		rc |= run_action(&ql, (qmgr_clnt_action_t)a, &lists[a],
		    argc ? argv : NULL, wait);
	for (int i = 0; i < x.n; i++)
		rc |= run_dest(&ql, QMGR_CLNT_REQ_DSC_CLEAR, x.v[i]);
	for (int i = 0; i < P.n; i++)
		rc |= run_dest(&ql, QMGR_CLNT_REQ_SUSPEND, P.v[i]);
	for (int i = 0; i < U.n; i++)
		rc |= run_dest(&ql, QMGR_CLNT_REQ_RESUME, U.v[i]);

	for (int a = 0; a < 4; a++)
		free(lists[a].v);
	free(x.v);
	free(P.v);
	free(U.v);
	queue_layout_free(&ql);
	str_release(&err);
	return rc;
}
