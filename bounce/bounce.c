/* bounce(8): delivery status notifications (RFC 3464).
 *
 * qmgr asks for a notice about one message (dsn_notice.h): a
 * non-delivery notice from the message's bounce log, a delay warning
 * from its defer log, or a success notice from the records it sends.
 * bounce reads the queue file and the log, builds the multipart/report
 * (dsn_report.h) and hands it to cleanup like any mail.  Never a bounce
 * of a bounce: a failed message from <> is reported to
 * 2bounce_notice_recipient as a double bounce, sent from
 * double_bounce_sender, and a failed double bounce (or any failed mail
 * from double_bounce_sender) is logged and dropped.  notify_classes adds
 * postmaster copies.  doc/bounce.md has the details. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "addr.h"
#include "cleanup_clnt.h"
#include "dsn_notice.h"
#include "dsn_notify.h"
#include "dsn_report.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "qfile.h"
#include "queue_path.h"
#include "server.h"
#include "statuslog.h"
#include "str.h"

/* notify_classes bits */
enum {
	NC_BOUNCE = 1 << 0,
	NC_2BOUNCE = 1 << 1,
	NC_DELAY = 1 << 2,
};

static struct {
	queue_layout_t ql;
	const char *myhostname;
	const char *myorigin;
	const char *mail_name;
	const char *double_bounce_sender;
	const char *bounce_rcpt;	/* bounce_notice_recipient */
	const char *twobounce_rcpt;	/* 2bounce_notice_recipient */
	const char *delay_rcpt;		/* delay_notice_recipient */
	int classes;
	size_t size_limit;
	long queue_lifetime;
	int ipc_ms;			/* qmgr <-> bounce */
	int cleanup_ms;			/* bounce -> cleanup */
	const char *cleanup_service;
} cfg;

static int ms_of(long seconds, long cap)
{
	if (seconds > cap)
		seconds = cap;
	return (int)(seconds * 1000);
}

static void post_jail(void *ctx)
{
	str_t err = STR_INIT;
	char *classes, *cp, *tok;
	(void)ctx;

	if (queue_layout_here(&cfg.ql, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	cfg.myhostname = pconfig_get_str("myhostname");
	cfg.myorigin = pconfig_get_str("myorigin");
	cfg.mail_name = pconfig_get_str("mail_name");
	cfg.double_bounce_sender = pconfig_get_str("double_bounce_sender");
	cfg.bounce_rcpt = pconfig_get_str("bounce_notice_recipient");
	cfg.twobounce_rcpt = pconfig_get_str("2bounce_notice_recipient");
	cfg.delay_rcpt = pconfig_get_str("delay_notice_recipient");
	cfg.size_limit = (size_t)pconfig_get_size("bounce_size_limit");
	cfg.queue_lifetime = pconfig_get_time("maximal_queue_lifetime");
	cfg.ipc_ms = ms_of(pconfig_get_time("ipc_timeout"), 3600);
	cfg.cleanup_ms = ms_of(pconfig_get_time("ipc_timeout"), 300);
	cfg.cleanup_service = NULL;
	/* "-o bounce_cleanup_service=..." is not a parameter: tests point
	 * the daemon at a cleanup with the argument word cleanup=NAME. */
	for (int i = 0; i < server_argc(); i++) {
		const char *a = server_argv()[i];
		if (strncmp(a, "cleanup=", 8) == 0)
			cfg.cleanup_service = a + 8;
		else
			log_fatal("unknown argument \"%s\"", a);
	}
	classes = xstrdup(pconfig_get_str("notify_classes"));
	for (cp = classes; (tok = str_token(&cp, " \t,")) != NULL;) {
		if (strcasecmp(tok, "bounce") == 0)
			cfg.classes |= NC_BOUNCE;
		else if (strcasecmp(tok, "2bounce") == 0)
			cfg.classes |= NC_2BOUNCE;
		else if (strcasecmp(tok, "delay") == 0)
			cfg.classes |= NC_DELAY;
		/* resource, software, protocol, policy: other daemons' */
	}
	free(classes);
	str_release(&err);
}

/* Mail from double_bounce_sender (bare, or at myorigin/myhostname). */
static bool from_double_bounce(const char *sender)
{
	const char *dbs = cfg.double_bounce_sender, *at = strrchr(sender, '@');
	size_t llen = at ? (size_t)(at - sender) : strlen(sender);

	if (!*sender || !*dbs)
		return false;
	if (strchr(dbs, '@'))
		return strcasecmp(sender, dbs) == 0;
	if (llen != strlen(dbs) || strncasecmp(sender, dbs, llen) != 0)
		return false;
	return !at || strcasecmp(at + 1, cfg.myorigin) == 0 ||
	    strcasecmp(at + 1, cfg.myhostname) == 0;
}

/* ---- the original message ---------------------------------------------- */

static int qf_line(void *ctx, str_t *line, str_t *err)
{
	qfile_t *qf = ctx;
	str_t rest = STR_INIT;
	int r = qfile_read_line(qf, line, 4096);

	if (r < 0) {
		str_setf(err, "%s", qfile_error(qf)->reason);
		return -1;
	}
	if (r == QF_LINE_END)
		return 0;
	/* A longer line is cut by the notice builder anyway: skip the rest. */
	while (r == QF_LINE_MORE) {
		r = qfile_read_line(qf, &rest, 65536);
		if (r < 0) {
			str_setf(err, "%s", qfile_error(qf)->reason);
			str_release(&rest);
			return -1;
		}
	}
	str_release(&rest);
	return 1;
}

static void qf_rewind(void *ctx)
{
	qfile_content_rewind(ctx);
}

/* ---- sending ------------------------------------------------------------ */

/* Builds one notice and queues it through cleanup.  Returns 0 with the
 * new queue ID in id, or -1 with err. */
static int send_notice(qfile_t *qf, const dsn_report_t *rep,
    const char *env_sender, char id[QUEUE_ID_SIZE], str_t *err)
{
	str_t msg = STR_INIT;
	cleanup_clnt_t *c = NULL;
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	cleanup_reply_t reply;
	int rc = -1;

	id[0] = 0;
	if (rep->ret != DSN_RETURN_NONE)
		qfile_content_rewind(qf);
	if (dsn_report_build(rep, qf_line, qf_rewind, qf, &msg, err) < 0)
		goto out;
	if (!(c = cleanup_clnt_connect(cfg.cleanup_service, cfg.cleanup_ms,
	    err)))
		goto out;
	env.sender = env_sender;
	env.log_ident = "bounce";
	cleanup_clnt_send_envelope(c, &env);
	cleanup_clnt_send_rcpt(c, rep->to, NULL, 0);
	cleanup_clnt_write(c, msg.buf, msg.len);
	if (cleanup_clnt_finish(c, &reply) < 0) {
		str_setf(err, "cleanup: %s %s", reply.dsn, reply.text);
		goto out;
	}
	bcopy_str(id, QUEUE_ID_SIZE, reply.queue_id);
	rc = 0;
out:
	if (c)
		cleanup_clnt_close(c);
	str_release(&msg);
	return rc;
}

static bool wanted(dsn_notice_kind_t kind, int notify)
{
	switch (kind) {
	case DSN_NOTICE_BOUNCE:
		return notify == 0 || (notify & DSN_NOTIFY_FAILURE);
	case DSN_NOTICE_DELAY:
		return notify == 0 || (notify & DSN_NOTIFY_DELAY);
	case DSN_NOTICE_SUCCESS:
		return (notify & DSN_NOTIFY_SUCCESS) != 0;
	default:
		return false;
	}
}

static const char *kind_words(dsn_notice_kind_t k)
{
	return k == DSN_NOTICE_BOUNCE ? "non-delivery" :
	    k == DSN_NOTICE_DELAY ? "delay" : "delivery status";
}

/* Handles one request: 0 done, -1 try later (reason in why). */
static int handle(const dsn_notice_req_t *req, str_t *why, char *notice_id)
{
	const char *logname = req->kind == DSN_NOTICE_BOUNCE ? QUEUE_BOUNCE :
	    req->kind == DSN_NOTICE_DELAY ? QUEUE_DEFER : NULL;
	sl_list_t all = SL_LIST_INIT, mine = SL_LIST_INIT;
	str_t err = STR_INIT;
	qf_err_t qerr;
	qfile_t *qf;
	dsn_report_t rep;
	struct timeval arrival;
	const char *sender;
	bool from_null, from_dbs;
	char pid[QUEUE_ID_SIZE];
	int rc = -1;

	notice_id[0] = 0;
	qf = qfile_open(&cfg.ql, req->queue, req->queue_id, 0, &qerr);
	if (!qf) {
		str_setf(why, "cannot open %s/%s: %s", req->queue,
		    req->queue_id, qerr.reason);
		return -1;
	}
	/* The records: the log (unless NO_LOG), then the inline ones. */
	if (logname && !(req->flags & DSN_N_NO_LOG)) {
		if (statuslog_read(&cfg.ql, logname, req->queue_id, &all, 0,
		    &err) < 0 && errno != ENOENT) {
			str_setf(why, "%s log: %s", logname, str_cstr(&err));
			goto out;
		}
		if (all.truncated)
			log_warning("%s: %s log ends in a cut record (ignored)",
			    req->queue_id, logname);
	}
	for (size_t i = 0; i < req->nrec; i++)
		sl_list_add(&all, &req->rec[i]);
	sl_list_dedup(&all);
	for (size_t i = 0; i < all.n; i++)
		if (wanted(req->kind, all.v[i].rcpt.notify))
			sl_list_add(&mine, &all.v[i]);

	sender = qfile_sender(qf);
	from_null = !*sender;
	from_dbs = from_double_bounce(sender);
	qfile_arrival(qf, &arrival);
	memset(&rep, 0, sizeof(rep));
	rep.kind = req->kind;
	rep.myhostname = cfg.myhostname;
	rep.mail_name = cfg.mail_name;
	rep.queue_id = req->queue_id;
	rep.orig_sender = sender;
	rep.envid = qfile_envid(qf);
	rep.arrival = arrival.tv_sec;
	rep.now = time(NULL);
	rep.size_limit = cfg.size_limit;
	rep.content_size = (size_t)qfile_content_size(qf);
	rep.boundary_salt = NULL;
	if (req->kind == DSN_NOTICE_DELAY && cfg.queue_lifetime > 0)
		rep.will_retry_until = arrival.tv_sec + cfg.queue_lifetime;

	if (all.n == 0) {
		str_setf(why, "no recipients to report");
		rc = 0;
		goto done;
	}
	if (from_dbs) {
		/* Mail from the double-bounce address: never reported. */
		if (req->kind == DSN_NOTICE_BOUNCE)
			log_info("%s: undeliverable postmaster notification "
			    "discarded", req->queue_id);
		str_setf(why, "mail from %s is not reported",
		    cfg.double_bounce_sender);
		rc = 0;
		goto done;
	}
	if (req->kind == DSN_NOTICE_BOUNCE && from_null) {
		/* A bounce that bounced: to the postmaster, every recipient,
		 * from the double-bounce address (so it cannot loop). */
		rep.audience = DSN_TO_DOUBLE_BOUNCE;
		rep.to = cfg.twobounce_rcpt;
		rep.ret = DSN_RETURN_FULL;
		rep.rec = all.v;
		rep.nrec = all.n;
		if (send_notice(qf, &rep, cfg.double_bounce_sender, notice_id,
		    &err) < 0) {
			str_setf(why, "double bounce: %s", str_cstr(&err));
			goto out;
		}
		log_info("%s: postmaster non-delivery notification: %s",
		    req->queue_id, notice_id);
		str_setf(why, "double bounce sent to %s as %s",
		    cfg.twobounce_rcpt, notice_id);
		rc = 0;
		goto done;
	}
	/* The sender's notice (never to <>: delay and success notices for
	 * bounces are not sent). */
	if (!from_null && mine.n > 0) {
		int qret = qfile_ret(qf);
		rep.audience = DSN_TO_SENDER;
		rep.to = sender;
		rep.ret = req->kind != DSN_NOTICE_BOUNCE ? DSN_RETURN_HEADERS :
		    qret == QF_RET_HDRS ? DSN_RETURN_HEADERS : DSN_RETURN_FULL;
		rep.rec = mine.v;
		rep.nrec = mine.n;
		if (send_notice(qf, &rep, "", notice_id, &err) < 0) {
			str_setf(why, "%s notice: %s", kind_words(req->kind),
			    str_cstr(&err));
			goto out;
		}
		log_info("%s: sender %s notification: %s", req->queue_id,
		    kind_words(req->kind), notice_id);
		str_setf(why, "%s notice sent to <%s> as %s",
		    kind_words(req->kind), sender, notice_id);
	} else {
		str_setf(why, "no %s notice requested", kind_words(req->kind));
	}
	/* Postmaster copies: headers only, every recipient.  Best effort:
	 * the sender's notice is already queued and must not be repeated
	 * because a copy failed. */
	if ((req->kind == DSN_NOTICE_BOUNCE && (cfg.classes & NC_BOUNCE)) ||
	    (req->kind == DSN_NOTICE_DELAY && (cfg.classes & NC_DELAY))) {
		rep.audience = DSN_TO_POSTMASTER;
		rep.to = req->kind == DSN_NOTICE_BOUNCE ? cfg.bounce_rcpt :
		    cfg.delay_rcpt;
		rep.ret = DSN_RETURN_HEADERS;
		rep.rec = all.v;
		rep.nrec = all.n;
		if (send_notice(qf, &rep, cfg.double_bounce_sender, pid, &err) < 0)
			log_warning("%s: postmaster copy: %s", req->queue_id,
			    str_cstr(&err));
		else
			log_info("%s: postmaster %s notification: %s",
			    req->queue_id, kind_words(req->kind), pid);
	}
	rc = 0;
done:
	/* The bounce log has served its purpose once the notice is queued. */
	if (rc == 0 && req->kind == DSN_NOTICE_BOUNCE &&
	    !(req->flags & (DSN_N_NO_LOG | DSN_N_KEEP_LOG)) &&
	    statuslog_remove(&cfg.ql, QUEUE_BOUNCE, req->queue_id, &err) < 0)
		log_warning("%s: %s", req->queue_id, str_cstr(&err));
out:
	qfile_close(qf);
	sl_list_free(&all);
	sl_list_free(&mine);
	str_release(&err);
	return rc;
}

static void serve(stream_t *client, void *ctx)
{
	attr_reader_t *r = dsn_notice_reader_new();
	str_t out = STR_INIT, err = STR_INIT, why = STR_INIT;
	int fd = stream_fd(client);
	(void)ctx;

	for (;;) {
		dsn_notice_req_t req;
		char notice_id[QUEUE_ID_SIZE];
		attr_msg_t *msg;
		enum attr_result res = attr_read_fd(r, fd, cfg.ipc_ms);
		int st;

		if (res == ATTR_EOF)
			break;
		if (res != ATTR_DONE) {
			log_warning("bounce request: %s", res == ATTR_TIMEOUT ?
			    "timed out" : attr_reader_error(r));
			break;
		}
		msg = attr_reader_take(r);
		if (dsn_notice_decode(msg, &req, &err) < 0) {
			log_warning("malformed bounce request: %s", str_cstr(&err));
			attr_msg_free(msg);
			dsn_notice_free(&req);
			break;
		}
		attr_msg_free(msg);
		server_watchdog_pet();
		str_reset(&why);
		st = handle(&req, &why, notice_id);
		if (st < 0)
			log_warning("%s: %s notice not sent: %s", req.queue_id,
			    dsn_notice_kind_name(req.kind), str_cstr(&why));
		str_reset(&out);
		dsn_notice_reply_encode(st, str_cstr(&why), notice_id, &out);
		dsn_notice_free(&req);
		if (attr_write_fd(fd, out.buf, out.len, cfg.ipc_ms) < 0) {
			log_warning("bounce reply: %s", strerror(errno));
			break;
		}
	}
	attr_reader_free(r);
	str_release(&out);
	str_release(&err);
	str_release(&why);
}

int main(int argc, char **argv)
{
	server_spec_t spec;

	memset(&spec, 0, sizeof(spec));
	spec.model = SERVER_SINGLE;
	spec.serve = serve;
	spec.post_jail = post_jail;
	server_main(argc, argv, &spec);
}
