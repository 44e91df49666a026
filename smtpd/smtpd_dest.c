/* Where accepted mail goes.
 *
 * cleanup: the daemon's way.  One connection per message, opened when the
 * client says DATA (or sends its first BDAT chunk), so that sessions that
 * never get that far hold no cleanup process.  The envelope and the
 * recipients are sent at once, the content as it arrives; cleanup answers
 * only after the queue file is durable.
 *
 * sendmail: the stand-alone mode (smtpd -S, for sendmail -bs) runs as the
 * local user, who cannot reach cleanup's private socket; each message is
 * piped to sendmail(1), which hands it to postdrop like any local
 * submission.  Its exit status 0 means the message is on disk. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "dsn_notify.h"
#include "log.h"
#include "mem.h"
#include "smtpd.h"

/* ---- cleanup -------------------------------------------------------- */

typedef struct dest_cleanup {
	smtpd_dest_t base;
	char *service;
	int timeout_ms;
	cleanup_clnt_t *c;
	str_t client;		/* "client=NAME[ADDR]..." for the log line */
	char id[QUEUE_ID_SIZE];	/* read early for the milters' "i" */
	bool have_id;
} dest_cleanup_t;

static int cl_open(smtpd_dest_t *d, const smtpd_txn_info_t *t, str_t *why)
{
	dest_cleanup_t *dc = (dest_cleanup_t *)d;
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	cleanup_attr_t attrs[2];
	size_t na = 0;

	dc->c = cleanup_clnt_connect(dc->service, dc->timeout_ms, why);
	if (dc->c == NULL)
		return -1;
	env.sender = t->sender;
	/* The queue ID at once: "ID: client=..." is ours to log (Postfix's
	 * smtpd does), before cleanup may commit the message. */
	env.flags = CLEANUP_FLAG_SMTP | CLEANUP_FLAG_QUEUE_ID |
	    t->cleanup_flags;
	env.content_filter = t->content_filter;
	if (t->milters)
		env.flags |= CLEANUP_FLAG_MILTER;
	dc->have_id = false;
	env.envid = t->envid;
	env.ret = t->ret;
	env.log_ident = t->log_ident;
	env.client_name = t->client_name;
	env.client_address = t->client_addr;
	env.client_port = t->client_port;
	env.helo_name = t->helo;
	env.protocol = t->protocol;
	env.tls_info = t->tls_info;
	env.sasl_method = t->sasl_method;
	env.sasl_username = t->sasl_username;
	if (t->sasl_header)
		env.received_auth = t->sasl_username;
	/* For the delivery agents: how the body was declared and whether
	 * the message needs an SMTPUTF8-capable path. */
	if (t->body != NULL)
		attrs[na++] = (cleanup_attr_t){ "body_type", t->body };
	if (t->smtputf8)
		attrs[na++] = (cleanup_attr_t){ "smtputf8", "yes" };
	env.attrs = na ? attrs : NULL;
	env.nattrs = na;
	/* Postfix's format: name[addr] (with :port under
	 * smtpd_client_port_logging), then the SASL login if any. */
	str_set(&dc->client, "client=");
	str_cat(&dc->client, t->namaddr ? t->namaddr : "unknown[unknown]");
	if (env.sasl_method != NULL)
		str_catf(&dc->client, ", sasl_method=%s", env.sasl_method);
	if (env.sasl_username != NULL)
		str_catf(&dc->client, ", sasl_username=%s", env.sasl_username);
	/* Errors are sticky and come back from cleanup_clnt_finish. */
	(void)cleanup_clnt_send_envelope(dc->c, &env);
	for (size_t i = 0; i < t->nrcpts; i++)
		(void)cleanup_clnt_send_rcpt(dc->c, t->rcpts[i].addr,
		    t->rcpts[i].orcpt, t->rcpts[i].notify);
	return 0;
}

static int cl_write(smtpd_dest_t *d, const void *buf, size_t len)
{
	dest_cleanup_t *dc = (dest_cleanup_t *)d;
	return dc->c ? cleanup_clnt_write(dc->c, buf, len) : -1;
}

static void cl_finish(smtpd_dest_t *d, cleanup_reply_t *reply)
{
	dest_cleanup_t *dc = (dest_cleanup_t *)d;
	char id[QUEUE_ID_SIZE];

	if (dc->c == NULL) {
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
		    "no connection to cleanup");
		return;
	}
	/* Logged before the end: the message cannot be committed (and
	 * qmgr cannot log about it) before this line is written. */
	if (!dc->have_id && cleanup_clnt_queue_id(dc->c, id) == 0)
		log_info("%s: %s", id, str_cstr(&dc->client));
	dc->have_id = false;
	cleanup_clnt_finish(dc->c, reply);
	cleanup_clnt_close(dc->c);
	dc->c = NULL;
}

static const char *cl_queue_id(smtpd_dest_t *d)
{
	dest_cleanup_t *dc = (dest_cleanup_t *)d;

	if (dc->c == NULL)
		return NULL;
	if (!dc->have_id) {
		dc->have_id = true;
		if (cleanup_clnt_queue_id(dc->c, dc->id) == 0)
			log_info("%s: %s", dc->id, str_cstr(&dc->client));
	}
	return dc->id[0] ? dc->id : NULL;
}

static int cl_edit(smtpd_dest_t *d, const milter_edit_t *e)
{
	dest_cleanup_t *dc = (dest_cleanup_t *)d;

	if (dc->c == NULL)
		return -1;
	return cleanup_clnt_send_edit(dc->c, (int)e->type, e->index, e->name,
	    e->type == MILTER_E_REPLBODY ? NULL : e->value,
	    e->type == MILTER_E_REPLBODY ? e->value : NULL,
	    e->type == MILTER_E_REPLBODY ? e->vlen : 0);
}

static void cl_abort(smtpd_dest_t *d)
{
	dest_cleanup_t *dc = (dest_cleanup_t *)d;

	dc->have_id = false;
	/* Closing in mid-transaction makes cleanup remove its file; no
	 * need to wait for its reply. */
	if (dc->c != NULL)
		cleanup_clnt_close(dc->c);
	dc->c = NULL;
}

static void cl_free(smtpd_dest_t *d)
{
	dest_cleanup_t *dc = (dest_cleanup_t *)d;
	cl_abort(d);
	str_release(&dc->client);
	free(dc->service);
	free(dc);
}

smtpd_dest_t *smtpd_dest_cleanup(const char *service, int timeout_ms)
{
	dest_cleanup_t *dc = xcalloc(1, sizeof(*dc));

	dc->base.open = cl_open;
	dc->base.write = cl_write;
	dc->base.finish = cl_finish;
	dc->base.abort = cl_abort;
	dc->base.queue_id = cl_queue_id;
	dc->base.edit = cl_edit;
	dc->base.free = cl_free;
	dc->service = service ? xstrdup(service) : NULL;
	dc->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	return &dc->base;
}

/* ---- sendmail ------------------------------------------------------- */

typedef struct dest_sendmail {
	smtpd_dest_t base;
	char *path;
	pid_t pid;
	int fd;
	bool failed;
} dest_sendmail_t;

static int sm_open(smtpd_dest_t *d, const smtpd_txn_info_t *t, str_t *why)
{
	dest_sendmail_t *ds = (dest_sendmail_t *)d;
	char **argv;
	size_t n = 0;
	int p[2];
	str_t notify = STR_INIT, sender = STR_INIT;
	int nbits = 0;

	argv = xcalloc(t->nrcpts + 16, sizeof(*argv));
	argv[n++] = xstrdup("sendmail");
	argv[n++] = xstrdup("-i");
	addr_externalize(t->sender, &sender);
	argv[n++] = xstrdup("-f");
	argv[n++] = xstrdup(*t->sender ? str_cstr(&sender) : "<>");
	/* sendmail's -N applies to every recipient: pass it only when all
	 * of them asked for the same. */
	for (size_t i = 0; i < t->nrcpts; i++) {
		if (i == 0)
			nbits = t->rcpts[i].notify;
		else if (t->rcpts[i].notify != nbits)
			nbits = 0;
	}
	if (nbits != 0) {
		dsn_notify_format(nbits, true, &notify);
		argv[n++] = xstrdup("-N");
		argv[n++] = str_steal(&notify);
	}
	if (t->ret) {
		argv[n++] = xstrdup("-R");
		argv[n++] = xstrdup(t->ret == 1 ? "full" : "hdrs");
	}
	if (t->envid) {
		/* sendmail -V takes the ENVID decoded and encodes it again */
		str_t dec = STR_INIT;
		if (addr_xtext_decode(t->envid, strlen(t->envid), &dec)) {
			argv[n++] = xstrdup("-V");
			argv[n++] = str_steal(&dec);
		}
		str_release(&dec);
	}
	argv[n++] = xstrdup("--");
	for (size_t i = 0; i < t->nrcpts; i++) {
		str_t r = STR_INIT;
		addr_externalize(t->rcpts[i].addr, &r);
		argv[n++] = str_steal(&r);
	}
	argv[n] = NULL;
	str_release(&sender);
	str_release(&notify);

	ds->failed = false;
	ds->pid = -1;
	if (pipe(p) < 0) {
		str_setf(why, "pipe: %s", strerror(errno));
		goto out;
	}
	ds->pid = fork();
	if (ds->pid < 0) {
		str_setf(why, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		goto out;
	}
	if (ds->pid == 0) {
		/* Our stdout is the SMTP client: sendmail must not write
		 * there.  Its complaints go to our stderr. */
		if (dup2(p[0], 0) < 0 || dup2(2, 1) < 0)
			_exit(75);
		close(p[0]);
		close(p[1]);
		signal(SIGPIPE, SIG_DFL);
		execv(ds->path, argv);
		_exit(75);
	}
	close(p[0]);
	ds->fd = p[1];
	(void)fcntl(ds->fd, F_SETFD, FD_CLOEXEC);
out:
	for (size_t i = 0; i < n; i++)
		free(argv[i]);
	free(argv);
	return ds->pid > 0 ? 0 : -1;
}

static int sm_write(smtpd_dest_t *d, const void *buf, size_t len)
{
	dest_sendmail_t *ds = (dest_sendmail_t *)d;
	const char *p = buf;

	if (ds->failed || ds->fd < 0)
		return -1;
	while (len > 0) {
		ssize_t n = write(ds->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ds->failed = true;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int sm_wait(dest_sendmail_t *ds)
{
	int st;

	while (waitpid(ds->pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	ds->pid = -1;
	return st;
}

static void sm_finish(smtpd_dest_t *d, cleanup_reply_t *reply)
{
	dest_sendmail_t *ds = (dest_sendmail_t *)d;
	int st;

	if (ds->pid <= 0) {
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
		    "no submission in progress");
		return;
	}
	close(ds->fd);
	ds->fd = -1;
	st = sm_wait(ds);
	if (!ds->failed && st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		cleanup_reply_set(reply, CLEANUP_STAT_OK, "2.0.0", "queued");
		return;
	}
	if (st >= 0 && WIFEXITED(st))
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
		    "local submission failed: %s exit status %d", ds->path,
		    WEXITSTATUS(st));
	else
		cleanup_reply_set(reply, CLEANUP_STAT_TEMP, "4.3.0",
		    "local submission failed: %s did not finish", ds->path);
}

static void sm_abort(smtpd_dest_t *d)
{
	dest_sendmail_t *ds = (dest_sendmail_t *)d;

	if (ds->pid <= 0)
		return;
	/* Kill it before it can see end of input: a closed pipe alone
	 * would look like a complete message. */
	kill(ds->pid, SIGKILL);
	close(ds->fd);
	ds->fd = -1;
	(void)sm_wait(ds);
}

static void sm_free(smtpd_dest_t *d)
{
	dest_sendmail_t *ds = (dest_sendmail_t *)d;
	sm_abort(d);
	free(ds->path);
	free(ds);
}

smtpd_dest_t *smtpd_dest_sendmail(const char *path)
{
	dest_sendmail_t *ds = xcalloc(1, sizeof(*ds));

	ds->base.open = sm_open;
	ds->base.write = sm_write;
	ds->base.finish = sm_finish;
	ds->base.abort = sm_abort;
	ds->base.free = sm_free;
	ds->path = xstrdup(path);
	ds->pid = -1;
	ds->fd = -1;
	return &ds->base;
}
