/* postq (mailq): look at the mail queue and at what qmgr is doing.
 *
 *	postq [-C config_dir] [-j]		list the queue (mailq layout,
 *						or JSON lines with -j)
 *	postq -f				flush: every deferred message now
 *	postq -s site				flush the mail for one destination
 *	postq -i queue_id			deliver one message now
 *	postq -S [-j] [-v]			the scheduler, live from qmgr
 *	postq -D [-j]				the destination status cache
 *	postq -q [-j] [-F] [-b buckets] [-t minutes] [queue ...]
 *						queue shape
 *	postq -c queue_id ...			postcat -q queue_id ...
 *
 * Invoked as "mailq" it lists the queue.  man/postq.1 and doc/postq.md
 * describe the options and every output format. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config.h"
#include "log.h"
#include "pconfig.h"
#include "pq.h"
#include "qmgr_clnt.h"
#include "queue_flush.h"
#include "queue_list.h"
#include "server.h"
#include "showq_clnt.h"
#include "user_list.h"

static const char *config_dir;

static void usage(void)
{
	fprintf(stderr,
	    "usage: postq [-C config_dir] [-j] [-v]\n"
	    "       postq [-C config_dir] -f | -s site | -i queue_id\n"
	    "       postq [-C config_dir] -S [-j] [-v] | -D [-j]\n"
	    "       postq [-C config_dir] -q [-j] [-F] [-b buckets] [-t minutes] "
	    "[queue ...]\n"
	    "       postq [-C config_dir] -c queue_id ...\n");
	exit(2);
}

static void load_config(void)
{
	if (config_dir == NULL)
		config_dir = getenv("MAIL_CONFIG");
	if (config_dir == NULL || *config_dir == 0)
		config_dir = DEF_CONFIG_DIR;
	pconfig_defer_warnings();
	if (pconfig_load(config_dir) < 0)
		log_fatal("%s", pconfig_errors());
	/* Warnings (an unknown parameter) go to the mail log, never to the
	 * user's terminal or cron mail; errors still go to stderr. */
	if (pconfig_warnings()[0] != '\0') {
		const char *file = pconfig_get_str("maillog_file");
		bool logged = true;
		if (*file == 0)
			log_to_syslog();
		else if (log_to_file(file) < 0)
			logged = false;
		if (logged)
			pconfig_log_warnings();
		log_to_stderr();
	}
}

static void layout(queue_layout_t *ql)
{
	str_t err = STR_INIT;

	if (queue_layout_from_config(ql, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	str_release(&err);
}

static void check_user(const char *param)
{
	str_t why = STR_INIT;

	if (user_list_uid_allowed(param, getuid(), &why) != 1)
		log_fatal("permission denied: %s", str_cstr(&why));
	str_release(&why);
}

static int write_out(const str_t *s)
{
	if (fwrite(str_cstr(s), 1, str_len(s), stdout) != str_len(s)
	    || fflush(stdout) != 0) {
		log_error("write error: %s", strerror(errno));
		return 1;
	}
	return 0;
}

/* Root and mail_owner read the queue themselves. */
static bool privileged(void)
{
	struct passwd *pw;

	return getuid() == 0 || ((pw = getpwuid(getuid())) != NULL
	    && strcmp(pw->pw_name, pconfig_get_str("mail_owner")) == 0);
}

static int list_direct(const queue_layout_t *ql, bool json, const char *no_showq)
{
	str_t err = STR_INIT;
	int rc = 0;

	/* root and mail_owner always; others as the list says. */
	if (!privileged())
		check_user("authorized_mailq_users");
	if (queue_list_print(ql, stdout, json ? QUEUE_LIST_JSON : 0,
	    &err) < 0) {
		if (strstr(str_cstr(&err), "Permission denied") != NULL)
			log_error("cannot read the mail queue: %s (only root and "
			    "mail_owner can read %s directly); cannot connect to "
			    "the showq service: %s", str_cstr(&err), ql->dir,
			    no_showq ? no_showq : "not tried");
		else
			log_error("%s", str_cstr(&err));
		rc = 1;
	}
	str_release(&err);
	return rc;
}

/* Other users ask showq (which checks authorized_mailq_users itself).
 * When it cannot be reached, a user who can read the queue anyway (a
 * private instance) is served directly. */
static int do_list(bool json)
{
	queue_layout_t ql;
	str_t err = STR_INIT;
	int rc;

	layout(&ql);
	if (privileged()) {
		rc = list_direct(&ql, json, NULL);
	} else if ((rc = showq_clnt_list(ql.dir, json, stdout, stderr,
	    &err)) < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED || errno == EACCES
		    || errno == ENOTDIR)
			rc = list_direct(&ql, json, str_cstr(&err));
		else {
			log_error("cannot connect to the showq service: %s",
			    str_cstr(&err));
			rc = 1;
		}
	}
	queue_layout_free(&ql);
	str_release(&err);
	return rc;
}

/* The trigger that makes qmgr forget dead destinations and scan every
 * queue, whatever the retry times (what "petrel flush" sends). */
static int do_flush(void)
{
	str_t err = STR_INIT;
	int rc = 0;

	check_user("authorized_flush_users");
	if (queue_flush_trigger(config_dir, TRIGGER_FLUSH_REQUEST, &err) < 0) {
		log_error("cannot flush: %s", str_cstr(&err));
		rc = 1;
	}
	str_release(&err);
	return rc;
}

static int do_flush_site(const char *site)
{
	queue_layout_t ql;
	str_t err = STR_INIT;
	long n, cleared = 0;
	int rc = 0;

	check_user("authorized_flush_users");
	layout(&ql);
	if ((n = queue_flush_site(&ql, site, &err)) < 0) {
		log_error("%s", str_cstr(&err));
		rc = 1;
		goto out;
	}
	/* A dead destination would defer its mail again at once: forget it
	 * (when qmgr runs; otherwise there is nothing to forget). */
	str_reset(&err);
	if (qmgr_clnt_request_simple(ql.dir, QMGR_CLNT_REQ_DSC_CLEAR, site,
	    NULL, &cleared, 10000, &err) == QMGR_CLNT_FAIL && errno != ENOENT &&
	    errno != ECONNREFUSED)
		log_warning("%s", str_cstr(&err));
	str_reset(&err);
	if (queue_flush_trigger(config_dir, "D", &err) < 0) {
		log_error("%s", str_cstr(&err));
		rc = 1;
	}
	fprintf(stderr, "postq: %ld deferred message%s for %s made due now\n",
	    n, n == 1 ? "" : "s", site);
out:
	queue_layout_free(&ql);
	str_release(&err);
	return rc;
}

static int do_flush_id(const char *id)
{
	queue_layout_t ql;
	str_t err = STR_INIT;
	const char *queue;
	int rc = 0;

	check_user("authorized_flush_users");
	layout(&ql);
	if (pq_flush_id(&ql, id, &queue, &err) < 0) {
		log_error("%s", str_cstr(&err));
		rc = 1;
	} else if (strcmp(queue, QUEUE_ACTIVE) == 0) {
		fprintf(stderr, "postq: %s: already being delivered\n", id);
	} else if (strcmp(queue, QUEUE_MAILDROP) == 0) {
		fprintf(stderr, "postq: %s: waiting for pickup\n", id);
	} else if (queue_flush_trigger(config_dir,
	    strcmp(queue, QUEUE_INCOMING) == 0 ? "I" : "D", &err) < 0) {
		log_error("%s", str_cstr(&err));
		rc = 1;
	}
	queue_layout_free(&ql);
	str_release(&err);
	return rc;
}

static int do_control(const char *request, bool json, bool verbose)
{
	queue_layout_t ql;
	qmgr_clnt_t *c;
	str_t err = STR_INIT, req = STR_INIT, out = STR_INIT;
	attr_msg_t *rep = NULL;
	int rc = 1;

	layout(&ql);
	if ((c = qmgr_clnt_connect(ql.dir, 10000, &err)) == NULL) {
		if (errno == EACCES || errno == EPERM)
			log_error("%s (the control channel is for root and "
			    "mail_owner)", str_cstr(&err));
		else
			log_error("%s", str_cstr(&err));
		goto out;
	}
	attr_put_str(&req, "request", request);
	if (verbose)
		attr_put_int(&req, "max_jobs", 1000);
	attr_put_end(&req);
	rep = qmgr_clnt_call(c, &req, 30000, &err);
	qmgr_clnt_close(c);
	if (rep == NULL) {
		log_error("%s", str_cstr(&err));
		goto out;
	}
	if (qmgr_clnt_reply_status(rep) != QMGR_CLNT_OK) {
		log_error("qmgr: %s", qmgr_clnt_reply_reason(rep));
		goto out;
	}
	if (strcmp(request, QMGR_CLNT_REQ_STATUS) == 0) {
		if (json)
			pq_sched_json(&out, rep);
		else
			pq_sched_text(&out, rep, verbose);
	} else if (json) {
		pq_dsc_json(&out, rep);
	} else {
		pq_dsc_text(&out, rep);
	}
	rc = write_out(&out);
out:
	if (rep)
		attr_msg_free(rep);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&req);
	str_release(&out);
	return rc;
}

static int do_shape(pq_shape_opts_t *o, char **queues)
{
	queue_layout_t ql;
	str_t err = STR_INIT;
	int rc = 0;

	check_user("authorized_mailq_users");
	for (char **q = queues; q && *q; q++)
		if (!queue_name_valid(*q))
			log_fatal("unknown queue name '%s'", *q);
	o->queues = queues && *queues ? (const char *const *)queues : NULL;
	layout(&ql);
	if (pq_shape(&ql, o, stdout, &err) < 0) {
		log_error("%s", str_cstr(&err));
		rc = 1;
	}
	queue_layout_free(&ql);
	str_release(&err);
	return rc;
}

/* postq -c: postcat from the same directory as this program. */
static int do_postcat(const char *self, int n, char **ids)
{
	str_t prog = STR_INIT;
	const char *slash = strrchr(self, '/');
	char **argv = calloc((size_t)n + 5, sizeof(char *));
	int k = 0;

	if (argv == NULL)
		log_fatal("out of memory");
	if (slash)
		str_setf(&prog, "%.*s/postcat", (int)(slash - self), self);
	else
		str_setf(&prog, "%s/postcat",
		    pconfig_get_str("command_directory"));
	argv[k++] = (char *)"postcat";
	argv[k++] = (char *)"-c";
	argv[k++] = (char *)config_dir;
	argv[k++] = (char *)"-q";
	for (int i = 0; i < n; i++)
		argv[k++] = ids[i];
	argv[k] = NULL;
	fflush(NULL);
	execv(str_cstr(&prog), argv);
	log_error("cannot run %s: %s", str_cstr(&prog), strerror(errno));
	free(argv);
	return 1;
}

int main(int argc, char **argv)
{
	const char *self = argv[0];
	const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
	char mode = 'l';
	const char *arg = NULL;
	bool json = false, verbose = false;
	pq_shape_opts_t so;
	int c, nmodes = 0;

	log_init(strcmp(base, "mailq") == 0 ? "mailq" : "postq");
	pq_shape_defaults(&so);
	while ((c = getopt(argc, argv, "C:jvpfs:i:SDqFb:t:c")) != -1) {
		switch (c) {
		case 'C':
			config_dir = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'v':
			verbose = true;
			log_verbose++;
			break;
		case 'p':
			break;			/* list: the default */
		case 'f':
		case 'S':
		case 'D':
		case 'q':
		case 'c':
			mode = (char)c;
			nmodes++;
			break;
		case 's':
		case 'i':
			mode = (char)c;
			arg = optarg;
			nmodes++;
			break;
		case 'F':
			so.by_sender = true;
			break;
		case 'b':
			so.buckets = atoi(optarg);
			break;
		case 't':
			so.minutes = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (nmodes > 1)
		usage();
	if (argc > 0 && mode != 'q' && mode != 'c')
		usage();
	load_config();
	switch (mode) {
	case 'l':
		return do_list(json);
	case 'f':
		return do_flush();
	case 's':
		return do_flush_site(arg);
	case 'i':
		return do_flush_id(arg);
	case 'S':
		return do_control(QMGR_CLNT_REQ_STATUS, json, verbose);
	case 'D':
		return do_control(QMGR_CLNT_REQ_DSC, json, false);
	case 'q':
		so.json = json;
		return do_shape(&so, argv);
	case 'c':
		if (argc == 0)
			usage();
		return do_postcat(self, argc, argv);
	}
	usage();
}
