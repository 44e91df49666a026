/* One SMTP session: the protocol engine (RFC 5321 with PIPELINING, SIZE,
 * 8BITMIME, ENHANCEDSTATUSCODES, DSN, SMTPUTF8, CHUNKING and STARTTLS).
 *
 * Replies are buffered in the stream and go out when the engine has to
 * wait for input (the stream flushes before it blocks), so a pipelining
 * client gets all its replies in one write.  Every reply and log line
 * format is in doc/smtpd.md. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "base64.h"
#include "log.h"
#include "mem.h"
#include "server.h"
#include "smtpd.h"

/* Content is handed on in pieces of at most this size (BDAT). */
#define CHUNK (64 * 1024)

enum rd { RD_OK, RD_TOOLONG, RD_LOST, RD_TIMEOUT, RD_BARE_LF };

typedef struct sess {
	const smtpd_cfg_t *cfg;
	stream_t *s;
	const smtpd_peer_t *peer;
	smtpd_dest_t *dest;
	const smtpd_session_opts_t *opts;
	char namaddr[DNS_NAME_TEXTLEN + SOCK_ADDR_STRLEN + 16];
	char log_ident[32];
	str_t line;
	bool stop;

	/* session */
	char *helo;
	bool esmtp;
	tls_sess_t *tls;
	char *tls_info;
	smtpd_reply_t client_reject;	/* smtpd_delay_reject = no */
	bool client_rejected;
	char *sasl_method, *sasl_username;	/* after AUTH */

	/* transaction */
	bool in_mail;
	char *sender;
	char *envid;
	int ret;
	const char *body;
	bool smtputf8;
	smtpd_rcpt_t *rcpts;
	size_t nrcpts, rcap;
	long rcpt_over;
	str_t filter;		/* FILTER of an access table, or empty */
	bool dest_open;		/* a message is open at the destination */
	bool bdat;		/* ... opened by BDAT */
	uint64_t bdat_bytes;	/* content so far */

	/* accounting */
	long errors, junk;
	int messages;
	const char *where;	/* last command, for "lost connection after" */
	bool cur_ok;
	unsigned ok[SMTPD_V_COUNT], total[SMTPD_V_COUNT];

	smtpd_reply_t rp;
	smtpd_check_ctx_t chk;

	/* smtpd_milters (doc/milter.md) */
	milters_t *milters;	/* NULL: no milters in this session */
	bool milter_msg;	/* the milters saw MAIL of this transaction */
	bool milter_discard;	/* DISCARD: accept the message, drop it */
	bool milter_refused;	/* refused at CONNECT: not asked again */
	str_t milter_text;	/* a CONNECT or HELO refusal: MAIL gets it */
	const char *milter_rcpt;	/* {rcpt_addr} */
	str_t mbuf;		/* macro values made on the fly */
} sess_t;

/* ---- Output -------------------------------------------------------- */

/* One reply line.  dsn is dropped when ENHANCEDSTATUSCODES is not
 * offered; control bytes in the text (from a table) become '?'. */
static void put_line(sess_t *ss, int code, char sep, const char *dsn,
    const char *text)
{
	str_t out = STR_INIT;

	str_catf(&out, "%03d%c", code, sep);
	if (dsn && *dsn && !(ss->cfg->ext_discard & SMTPD_EXT_ENHANCED))
		str_catf(&out, "%s ", dsn);
	for (const char *p = text; *p && out.len < 510; p++)
		str_putc(&out, ((unsigned char)*p < 0x20 || *p == 0x7f) ? '?' : *p);
	if (log_verbose > 0)
		log_debug("> %s: %s", ss->namaddr, str_cstr(&out));
	str_cat(&out, "\r\n");
	(void)stream_write(ss->s, out.buf, out.len);
	str_release(&out);
	ss->cur_ok = code < 400;
}

static void vreply(sess_t *ss, int code, const char *dsn, const char *fmt,
    va_list ap)
{
	str_t t = STR_INIT;
	str_vcatf(&t, fmt, ap);
	put_line(ss, code, ' ', dsn, str_cstr(&t));
	str_release(&t);
}

static void reply(sess_t *ss, int code, const char *dsn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reply(sess_t *ss, int code, const char *dsn, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreply(ss, code, dsn, fmt, ap);
	va_end(ap);
}

/* An error reply: counts against the error limits; from the soft limit
 * on, each one is delayed by smtpd_error_sleep_time. */
static void fail(sess_t *ss, int code, const char *dsn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(sess_t *ss, int code, const char *dsn, const char *fmt, ...)
{
	va_list ap;

	ss->errors++;
	if (ss->errors >= ss->cfg->soft_limit && ss->cfg->error_sleep > 0) {
		(void)stream_flush(ss->s);
		if (ss->opts && ss->opts->sleep_fn)
			ss->opts->sleep_fn((unsigned)ss->cfg->error_sleep,
			    ss->opts->sleep_ctx);
		else
			sleep((unsigned)ss->cfg->error_sleep);
	}
	va_start(ap, fmt);
	vreply(ss, code, dsn, fmt, ap);
	va_end(ap);
}

static void fail_reply(sess_t *ss, const smtpd_reply_t *rp)
{
	fail(ss, rp->code, rp->dsn, "%s", str_cstr(&rp->text));
}

static const char *proto(const sess_t *ss, char buf[16])
{
	bfmt(buf, 16, "%s%s%s", ss->esmtp ? "ESMTP" : "SMTP", ss->tls ? "S" : "",
	    ss->chk.sasl_username ? "A" : "");
	return buf;
}

/* The "with" word of the Received header: RFC 3848, and RFC 6531 for a
 * transaction that used SMTPUTF8 (UTF8SMTP, UTF8SMTPS, ...). */
static const char *received_proto(const sess_t *ss, char buf[16])
{
	if (!ss->smtputf8)
		return proto(ss, buf);
	bfmt(buf, 16, "UTF8SMTP%s%s", ss->tls ? "S" : "",
	    ss->chk.sasl_username ? "A" : "");
	return buf;
}

/* NOQUEUE: reject: RCPT from NAME[ADDR]: 554 5.7.1 <x>: Relay access
 * denied; from=<s> to=<x> proto=ESMTP helo=<h> */
static void log_event(sess_t *ss, const char *id, const char *what,
    const char *stage, const char *text, const char *rcpt)
{
	str_t l = STR_INIT;
	char pb[16];

	str_catf(&l, "%s: %s: %s from %s: %s;", id, what, stage, ss->namaddr,
	    text);
	if (ss->sender != NULL) {
		str_cat(&l, " from=<");
		addr_externalize(ss->sender, &l);
		str_cat(&l, ">");
	}
	if (rcpt != NULL) {
		str_cat(&l, " to=<");
		addr_externalize(rcpt, &l);
		str_cat(&l, ">");
	}
	str_catf(&l, " proto=%s", proto(ss, pb));
	if (ss->helo)
		str_catf(&l, " helo=<%s>", ss->helo);
	/* The text may hold client bytes (8-bit addresses): quote them. */
	str_t q = STR_INIT;
	str_quote_printable(&q, l.buf, l.len);
	log_info("%s", str_cstr(&q));
	str_release(&q);
	str_release(&l);
}

static void log_reject(sess_t *ss, const char *stage, int code,
    const char *dsn, const char *text, const char *rcpt)
{
	str_t t = STR_INIT;

	str_setf(&t, "%d %s %s", code, dsn, text);
	log_event(ss, "NOQUEUE", "reject", stage, str_cstr(&t), rcpt);
	str_release(&t);
}

static void reject(sess_t *ss, const char *stage, const smtpd_reply_t *rp,
    const char *rcpt)
{
	log_reject(ss, stage, rp->code, rp->dsn, str_cstr(&rp->text), rcpt);
	fail_reply(ss, rp);
}

/* ---- State --------------------------------------------------------- */

static void txn_reset(sess_t *ss)
{
	if (ss->milter_msg)
		milters_abort(ss->milters);
	ss->milter_msg = false;
	ss->milter_discard = false;
	if (ss->dest_open)
		ss->dest->abort(ss->dest);
	ss->dest_open = false;
	ss->bdat = false;
	ss->in_mail = false;
	free(ss->sender);
	ss->sender = NULL;
	free(ss->envid);
	ss->envid = NULL;
	ss->ret = 0;
	ss->body = NULL;
	ss->smtputf8 = false;
	for (size_t i = 0; i < ss->nrcpts; i++) {
		free(ss->rcpts[i].addr);
		free(ss->rcpts[i].orcpt);
	}
	ss->nrcpts = 0;
	ss->rcpt_over = 0;
	ss->chk.sender = NULL;
	ss->chk.rcpt = NULL;
	str_reset(&ss->filter);
}

static void progress(sess_t *ss)
{
	if (ss->opts && ss->opts->progress)
		ss->opts->progress(ss->opts->progress_ctx);
}

/* ---- Input --------------------------------------------------------- */

static enum rd read_status(sess_t *ss)
{
	return stream_timedout(ss->s) ? RD_TIMEOUT : RD_LOST;
}

static bool auth_possible(const sess_t *ss);

/* The longest command line: line_length_limit, or where AUTH is on
 * offer enough for an AUTH command with an initial response of
 * smtpd_sasl_response_limit bytes (RFC 4954 section 4 allows 12288);
 * other commands longer than line_length_limit are refused after
 * reading. */
static size_t cmd_limit(const sess_t *ss)
{
	size_t auth = ss->cfg->sasl_resp_limit + 32;

	return auth > ss->cfg->line_limit && auth_possible(ss) ? auth :
	    ss->cfg->line_limit;
}

/* One command line into ss->line.  A line longer than cmd_limit() is
 * read to its end and dropped (RD_TOOLONG). */
static enum rd read_cmd(sess_t *ss, bool *crlf)
{
	size_t limit = cmd_limit(ss);
	int r = stream_getline(ss->s, &ss->line, limit);

	if (r == STREAM_LINE_NONE || r == STREAM_LINE_PARTIAL)
		return read_status(ss);
	if (r == STREAM_LINE_MORE) {
		do
			r = stream_getline(ss->s, &ss->line, limit);
		while (r == STREAM_LINE_MORE);
		if (r == STREAM_LINE_NONE || r == STREAM_LINE_PARTIAL)
			return read_status(ss);
		str_reset(&ss->line);
		return RD_TOOLONG;
	}
	*crlf = r == STREAM_LINE_CRLF;
	if (r == STREAM_LINE_LF && ss->cfg->bare_lf == SMTPD_LF_REJECT)
		return RD_BARE_LF;
	return RD_OK;
}

static void lost(sess_t *ss, enum rd why, const char *extra)
{
	if (why == RD_TIMEOUT) {
		log_info("timeout after %s%s from %s", ss->where, extra,
		    ss->namaddr);
		stream_clearerr(ss->s);
		reply(ss, 421, "4.4.2", "%s Error: timeout exceeded",
		    ss->cfg->myhostname);
		(void)stream_flush(ss->s);
	} else {
		log_info("lost connection after %s%s from %s", ss->where, extra,
		    ss->namaddr);
	}
	ss->stop = true;
}

static void bare_lf(sess_t *ss)
{
	log_info("bare <LF> received after %s from %s", ss->where, ss->namaddr);
	fail(ss, 521, "5.5.2", "%s Error: bare <LF> received",
	    ss->cfg->myhostname);
	ss->stop = true;
}

/* ---- Milters ------------------------------------------------------- */

/* The one place that decides whether this session meets smtpd_milters
 * (receive_override_options = no_milters belongs here): mail that
 * smtpd hands to cleanup; not the stand-alone mode, whose mail reaches
 * cleanup through pickup (non_smtpd_milters). */
static bool milters_wanted(const sess_t *ss)
{
	/* receive_override_options = no_milters (a reinjection service
	 * behind a content filter) switches smtpd_milters off. */
	return ss->cfg->milters != NULL && ss->cfg->milters[0] != '\0' &&
	    !(ss->cfg->recv_override & RECV_NO_MILTERS) &&
	    !ss->peer->stand_alone && ss->dest->edit != NULL;
}

static const char *sess_macro(void *ctx, const char *name)
{
	sess_t *ss = ctx;
	const char *v = NULL;

	if (name[0] != '{') {
		switch (name[0] == '\0' || name[1] != '\0' ? 0 : name[0]) {
		case 'i':
			return ss->dest_open && ss->dest->queue_id != NULL ?
			    ss->dest->queue_id(ss->dest) : NULL;
		case 'j':
			return ss->cfg->myhostname;
		case 'v':
			return ss->cfg->milter_macro_v;
		case '_':
			str_setf(&ss->mbuf, "%s [%s]", ss->peer->name,
			    ss->peer->addr);
			return str_cstr(&ss->mbuf);
		default:
			return NULL;
		}
	}
	if (strcmp(name, "{daemon_name}") == 0)
		v = ss->cfg->milter_daemon_name;
	else if (strcmp(name, "{daemon_addr}") == 0)
		v = ss->peer->local_addr;
	else if (strcmp(name, "{client_addr}") == 0)
		v = ss->peer->addr;
	else if (strcmp(name, "{client_port}") == 0)
		v = ss->peer->port;
	else if (strcmp(name, "{client_name}") == 0 ||
	    strcmp(name, "{client_ptr}") == 0)
		v = ss->peer->name;
	else if (strcmp(name, "{client_resolve}") == 0)
		v = strcmp(ss->peer->name, "unknown") != 0 ? "OK" : "FAIL";
	else if (strcmp(name, "{auth_type}") == 0)
		v = ss->sasl_method;
	else if (strcmp(name, "{auth_authen}") == 0)
		v = ss->sasl_username;
	else if (ss->tls != NULL && strcmp(name, "{tls_version}") == 0)
		v = tls_sess_protocol(ss->tls);
	else if (ss->tls != NULL && strcmp(name, "{cipher}") == 0)
		v = tls_sess_cipher(ss->tls);
	else if (ss->tls != NULL && strcmp(name, "{cert_subject}") == 0)
		v = tls_sess_peer_cn(ss->tls);
	else if (ss->tls != NULL && strcmp(name, "{cert_issuer}") == 0)
		v = tls_sess_issuer_cn(ss->tls);
	else if (strcmp(name, "{mail_addr}") == 0 && ss->sender != NULL) {
		str_reset(&ss->mbuf);
		addr_externalize(ss->sender, &ss->mbuf);
		v = str_cstr(&ss->mbuf);
	} else if (strcmp(name, "{rcpt_addr}") == 0 && ss->milter_rcpt) {
		str_reset(&ss->mbuf);
		addr_externalize(ss->milter_rcpt, &ss->mbuf);
		v = str_cstr(&ss->mbuf);
	} else if (strcmp(name, "{rcpt_host}") == 0 && ss->milter_rcpt &&
	    strrchr(ss->milter_rcpt, '@') != NULL)
		v = strrchr(ss->milter_rcpt, '@') + 1;
	else if (strcmp(name, "{mail_host}") == 0 && ss->sender != NULL &&
	    strrchr(ss->sender, '@') != NULL)
		v = strrchr(ss->sender, '@') + 1;
	return v != NULL && *v ? v : NULL;
}

/* A milter's reply ("550 5.7.1 text", lines joined by CR LF) to the
 * client; counted as an error when it refuses. */
static void milter_send(sess_t *ss, const char *text)
{
	ss->errors++;
	for (const char *p = text; *p;) {
		const char *e = strstr(p, "\r\n");
		size_t n = e ? (size_t)(e - p) : strlen(p);
		char *line = xstrndup(p, n);
		int code = atoi(line);

		put_line(ss, code, n > 3 ? line[3] : ' ', NULL,
		    n > 4 ? line + 4 : "");
		free(line);
		p += n + (e ? 2 : 0);
	}
}

/* The verdict of a stage: true when it refused (reply sent, logged as
 * Postfix logs milter-reject).  DISCARD is remembered for the end. */
static bool milter_verdict(sess_t *ss, const char *stage,
    enum milter_verdict v, milter_reply_t *r, const char *rcpt)
{
	const char *id = ss->dest_open && ss->dest->queue_id ?
	    ss->dest->queue_id(ss->dest) : NULL;
	str_t first = STR_INIT;
	const char *t = str_cstr(&r->text), *crlf = strstr(t, "\r\n");

	if (v == MILTER_CONTINUE)
		return false;
	if (v == MILTER_DISCARD) {
		if (!ss->milter_discard)
			log_event(ss, id ? id : "NOQUEUE", "milter-discard", stage,
			    "milter triggers DISCARD action", rcpt);
		ss->milter_discard = true;
		milter_reply_release(r);
		return false;
	}
	str_append(&first, t, crlf ? (size_t)(crlf - t) : strlen(t));
	log_event(ss, id ? id : "NOQUEUE", "milter-reject", stage,
	    str_cstr(&first), rcpt);
	str_release(&first);
	milter_send(ss, t);
	milter_reply_release(r);
	return true;
}

/* The session begins: connect to the milters and show them the client. */
static void milters_begin(sess_t *ss)
{
	str_t err = STR_INIT;
	milter_reply_t r = MILTER_REPLY_INIT;
	enum milter_verdict v;
	unsigned port = (unsigned)atoi(ss->peer->port);
	int fam = ss->peer->addr[0] == '\0' ? 0 :
	    strchr(ss->peer->addr, ':') != NULL ? 6 : 4;

	if (!milters_wanted(ss))
		return;
	ss->milters = milters_new(ss->cfg->milters, &ss->cfg->milter_params,
	    &err);
	if (ss->milters == NULL) {	/* checked at start: not expected */
		log_warning("smtpd_milters: %s", str_cstr(&err));
		str_release(&err);
		return;
	}
	str_release(&err);
	milters_set_macros(ss->milters, sess_macro, ss);
	v = milters_connect(ss->milters, ss->peer->name, ss->peer->addr, port,
	    fam, &r);
	if (v == MILTER_REJECT || v == MILTER_TEMPFAIL) {
		const char *t = str_cstr(&r.text), *crlf = strstr(t, "\r\n");
		str_t first = STR_INIT;
		str_append(&first, t, crlf ? (size_t)(crlf - t) : strlen(t));
		log_event(ss, "NOQUEUE", "milter-reject", "CONNECT",
		    str_cstr(&first), NULL);
		str_release(&first);
		ss->milter_refused = true;
		str_set(&ss->milter_text, t);
		if (v == MILTER_REJECT) {
			/* As Postfix: the greeting says no, MAIL says why. */
			reply(ss, 554, NULL, "%s ESMTP not accepting connections",
			    ss->cfg->myhostname);
			ss->errors++;
		}
	}
	milter_reply_release(&r);
}

/* Content to the destination and to the milters. */
static void content_write(sess_t *ss, const void *p, size_t n)
{
	(void)ss->dest->write(ss->dest, p, n);
	if (ss->milter_msg && n > 0) {
		milter_reply_t r = MILTER_REPLY_INIT;
		/* A refusal is remembered and answered at the end. */
		(void)milters_content(ss->milters, p, n, &r);
		milter_reply_release(&r);
	}
}

/* MAIL or RCPT arguments for the milters: the address as the client
 * sent it, in <>, then each ESMTP parameter.  argv points into buf. */
static void milter_args(const char *arg, size_t len, char *buf, size_t size,
    const char **argv, size_t max)
{
	size_t n = 0, i = 0, o = 0;

	if (len >= size)
		len = size - 1;
	memcpy(buf, arg, len);
	buf[len] = '\0';
	/* Past "FROM:" or "TO:" and blanks. */
	while (i < len && buf[i] != ':')
		i++;
	i = i < len ? i + 1 : 0;
	while (i < len && buf[i] == ' ')
		i++;
	o = i;
	while (i < len && n + 1 < max) {
		size_t start = i;
		if (buf[i] == '<') {
			while (i < len && buf[i] != '>')
				i++;
			if (i < len)
				i++;
		}
		while (i < len && buf[i] != ' ')
			i++;
		if (i < len)
			buf[i++] = '\0';
		argv[n++] = buf + start;
		while (i < len && buf[i] == ' ')
			i++;
	}
	(void)o;
	argv[n] = NULL;
}

/* ---- Handing content on -------------------------------------------- */

static bool dest_start(sess_t *ss, const char *stage)
{
	smtpd_txn_info_t t;
	str_t why = STR_INIT;
	char pb[16];

	memset(&t, 0, sizeof(t));
	t.sender = ss->sender;
	t.envid = ss->envid;
	t.ret = ss->ret;
	t.body = ss->body;
	t.smtputf8 = ss->smtputf8;
	t.rcpts = ss->rcpts;
	t.nrcpts = ss->nrcpts;
	t.client_name = ss->peer->name;
	t.client_addr = ss->peer->addr;
	t.client_port = *ss->peer->port ? ss->peer->port : NULL;
	t.helo = ss->helo;
	t.protocol = received_proto(ss, pb);
	t.tls_info = ss->cfg->tls_received ? ss->tls_info : NULL;
	t.log_ident = ss->log_ident;
	t.namaddr = ss->namaddr;
	t.sasl_method = ss->sasl_method;
	t.sasl_username = ss->sasl_username;
	t.sasl_header = ss->cfg->sasl_header;
	/* An access table's FILTER wins over content_filter (Postfix). */
	t.content_filter = str_len(&ss->filter) > 0 ? str_cstr(&ss->filter)
	    : ss->cfg->content_filter;
	t.cleanup_flags = filter_cleanup_flags(ss->cfg->recv_override);
	t.milters = ss->milters != NULL;
	if (ss->dest->open(ss->dest, &t, &why) < 0) {
		log_warning("%s from %s: cannot hand the message on: %s",
		    stage, ss->namaddr, str_cstr(&why));
		str_release(&why);
		return false;
	}
	str_release(&why);
	ss->dest_open = true;
	return true;
}

/* The end-of-data restrictions, then the destination's verdict. */
static void dest_end(sess_t *ss, const char *stage)
{
	cleanup_reply_t cr;

	if (!smtpd_restr_empty(ss->cfg->eod_restr)) {
		ss->chk.sender = ss->sender;
		ss->chk.rcpt = ss->nrcpts == 1 ? ss->rcpts[0].addr : NULL;
		/* The envelope has gone to cleanup: too late for FILTER. */
		ss->chk.filter = NULL;
		enum smtpd_chk eod = smtpd_check(ss->cfg->eod_restr, &ss->chk,
		    SMTPD_ST_EOD, &ss->rp);
		ss->chk.filter = &ss->filter;
		if (eod == SMTPD_CHK_REJECT) {
			reject(ss, "END-OF-MESSAGE", &ss->rp, NULL);
			txn_reset(ss);
			return;
		}
	}
	if (ss->milter_msg) {
		milter_edits_t ed = MILTER_EDITS_INIT;
		milter_reply_t r = MILTER_REPLY_INIT;
		enum milter_verdict v = milters_eom(ss->milters, &ed, &r);

		ss->milter_msg = false;
		if (v == MILTER_REJECT || v == MILTER_TEMPFAIL) {
			(void)milter_verdict(ss, stage, v, &r, NULL);
			milter_edits_release(&ed);
			txn_reset(ss);
			return;
		}
		if (v == MILTER_DISCARD)
			(void)milter_verdict(ss, stage, v, &r, NULL);
		for (size_t i = 0; i < ed.n && !ss->milter_discard; i++)
			(void)ss->dest->edit(ss->dest, &ed.e[i]);
		milter_edits_release(&ed);
		milter_reply_release(&r);
	}
	if (ss->milter_discard) {
		/* Accepted, and dropped: the client must not send it again. */
		const char *id = ss->dest->queue_id ?
		    ss->dest->queue_id(ss->dest) : NULL;
		char idb[QUEUE_ID_SIZE];
		bcopy_str(idb, sizeof(idb), id ? id : "");
		txn_reset(ss);
		if (*idb)
			reply(ss, 250, "2.0.0", "Ok: queued as %s", idb);
		else
			reply(ss, 250, "2.0.0", "Ok: queued");
		return;
	}
	ss->dest->finish(ss->dest, &cr);
	ss->dest_open = false;
	if (cr.status == CLEANUP_STAT_OK) {
		if (*cr.queue_id)
			reply(ss, 250, "2.0.0", "Ok: queued as %s", cr.queue_id);
		else
			reply(ss, 250, "2.0.0", "Ok: queued");
		ss->messages++;
	} else {
		/* 550 for content refused by header or body checks
		 * (5.7.1), as Postfix answers. */
		int code = cr.status == CLEANUP_STAT_PERM ?
		    (strcmp(cr.dsn, "5.3.4") == 0 ? 552 :
		    strcmp(cr.dsn, "5.7.1") == 0 ? 550 : 554) : 451;
		const char *dsn = cr.dsn[0] == (code == 451 ? '4' : '5') ? cr.dsn :
		    code == 451 ? "4.3.0" : "5.3.0";
		str_t t = STR_INIT;
		if (code == 550)
			str_set(&t, cr.text);	/* the check's own text */
		else
			str_setf(&t, "Error: %s", cr.text);
		log_reject(ss, stage, code, dsn, str_cstr(&t), NULL);
		fail(ss, code, dsn, "%s", str_cstr(&t));
		str_release(&t);
	}
	txn_reset(ss);
}

static void too_big(sess_t *ss, const char *stage, uint64_t bytes)
{
	log_reject(ss, stage, 552, "5.3.4", "Message size exceeds fixed limit",
	    NULL);
	log_info("message from %s: %ju bytes or more exceed message_size_limit "
	    "%ju", ss->namaddr, (uintmax_t)bytes, (uintmax_t)ss->cfg->size_limit);
	fail(ss, 552, "5.3.4", "Message size exceeds fixed limit");
	txn_reset(ss);
}

/* ---- Commands ------------------------------------------------------ */

/* ---- SMTP AUTH ----------------------------------------------------- */

/* Is AUTH on offer in this session (before asking the backend)? */
static bool auth_possible(const sess_t *ss)
{
	const smtpd_cfg_t *cfg = ss->cfg;

	return cfg->sasl_enable && !ss->peer->stand_alone &&
	    !(cfg->ext_discard & SMTPD_EXT_AUTH) &&
	    (ss->tls != NULL || !cfg->tls_auth_only);
}

/* The mechanisms this session may use, blank separated, into list:
 * the backend's, filtered by smtpd_sasl_(tls_)security_options.  False
 * when the backend cannot be reached (logged). */
static bool auth_mechs(sess_t *ss, str_t *list)
{
	const smtpd_sasl_mech_t *v;
	size_t n;
	str_t why = STR_INIT;
	unsigned opts = ss->tls ? ss->cfg->sasl_tls_opts : ss->cfg->sasl_opts;

	str_reset(list);
	if (ss->opts == NULL || ss->opts->sasl == NULL)
		return false;
	if (ss->opts->sasl->mechs(ss->opts->sasl, &v, &n, &why) < 0) {
		log_warning("SASL: %s; AUTH is not offered to %s",
		    str_cstr(&why), ss->namaddr);
		str_release(&why);
		return false;
	}
	str_release(&why);
	for (size_t i = 0; i < n; i++)
		if (smtpd_sasl_mech_allowed(v[i].props, opts)) {
			if (list->len)
				str_putc(list, ' ');
			str_cat(list, v[i].name);
		}
	return true;
}

static bool in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; *p; ) {
		size_t l = strcspn(p, " ");
		if (l == n && strncmp(p, word, n) == 0)
			return true;
		p += l;
		p += strspn(p, " ");
	}
	return false;
}

static void auth_forget(sess_t *ss)
{
	free(ss->sasl_method);
	free(ss->sasl_username);
	ss->sasl_method = NULL;
	ss->sasl_username = NULL;
	ss->chk.sasl_username = NULL;
}

/* A user name for logs, headers and cleanup: printable, bounded. */
static char *printable_name(const str_t *u)
{
	size_t n = u->len > 255 ? 255 : u->len;
	char *v = xstrndup(u->buf ? u->buf : "", n);

	for (char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return v;
}

static void auth_fail_log(sess_t *ss, const char *mech, const char *reason,
    const str_t *user)
{
	char *u = user->len ? printable_name(user) : NULL;
	str_t q = STR_INIT;

	str_quote_printable(&q, reason, strlen(reason));
	log_warning("%s: SASL %s authentication failed: %s, sasl_username=%s",
	    ss->namaddr, mech, q.len ? str_cstr(&q) : "(reason unavailable)",
	    u ? u : "(unavailable)");
	str_release(&q);
	free(u);
}

enum auth_rd { AR_OK, AR_TOOLONG, AR_GONE, AR_BARE_LF };

/* One client response line (smtpd_sasl_response_limit). */
static enum auth_rd auth_read(sess_t *ss)
{
	int r = stream_getline(ss->s, &ss->line, ss->cfg->sasl_resp_limit);

	if (r == STREAM_LINE_NONE || r == STREAM_LINE_PARTIAL)
		return AR_GONE;
	if (r == STREAM_LINE_MORE) {
		do
			r = stream_getline(ss->s, &ss->line, ss->cfg->line_limit);
		while (r == STREAM_LINE_MORE);
		if (r == STREAM_LINE_NONE || r == STREAM_LINE_PARTIAL)
			return AR_GONE;
		return AR_TOOLONG;
	}
	if (r == STREAM_LINE_LF && ss->cfg->bare_lf == SMTPD_LF_REJECT)
		return AR_BARE_LF;
	return AR_OK;
}

/* AUTH mechanism [initial-response] (RFC 4954).  The one entry point of
 * the command: whatever limits AUTH attempts belongs at its top. */
static void cmd_auth(sess_t *ss, const smtpd_cmd_t *c)
{
	const smtpd_cfg_t *cfg = ss->cfg;
	smtpd_sasl_backend_t *b = ss->opts ? ss->opts->sasl : NULL;
	smtpd_sasl_req_t req;
	char mech[24];
	char *resp = NULL;
	size_t mlen;
	str_t list = STR_INIT, out = STR_INIT, user = STR_INIT;
	enum smtpd_sasl_status st;

	if (!cfg->sasl_enable || ss->peer->stand_alone ||
	    (cfg->ext_discard & SMTPD_EXT_AUTH)) {
		fail(ss, 503, "5.5.1", "Error: authentication not enabled");
		return;
	}
	if (ss->tls == NULL && cfg->tls_auth_only) {
		/* RFC 4954 section 6 */
		fail(ss, 538, "5.7.11", "Encryption required for requested "
		    "authentication mechanism");
		return;
	}
	if (!ss->esmtp) {
		fail(ss, 503, "5.5.1", "Error: send EHLO first");
		return;
	}
	if (ss->in_mail) {
		fail(ss, 503, "5.5.1", "Error: MAIL transaction in progress");
		return;
	}
	if (ss->sasl_username != NULL) {
		fail(ss, 503, "5.5.1", "Error: already authenticated");
		return;
	}
	/* smtpd_client_auth_rate_limit: every AUTH command counts, as in
	 * Postfix, once it is a real attempt. */
	if (ss->opts && smtpd_anvil_auth(ss->opts->anvil, &ss->rp)) {
		fail_reply(ss, &ss->rp);
		return;
	}
	mlen = strcspn(c->arg, " \t");
	if (mlen > c->arglen)
		mlen = c->arglen;
	if (mlen == 0) {
		fail(ss, 501, "5.5.4", "Syntax: AUTH mechanism");
		return;
	}
	if (!smtpd_sasl_mech_name_ok(c->arg, mlen) ||
	    !bfmt(mech, sizeof(mech), "%.*s", (int)mlen, c->arg)) {
		fail(ss, 504, "5.5.4", "Error: unsupported authentication mechanism");
		goto out;
	}
	for (char *p = mech; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	if (mlen < c->arglen) {
		const char *p = c->arg + mlen;
		size_t rest = c->arglen - mlen;
		while (rest && (*p == ' ' || *p == '\t'))
			p++, rest--;
		if (memchr(p, ' ', rest) || memchr(p, '\t', rest)) {
			fail(ss, 501, "5.5.4", "Syntax: AUTH mechanism");
			return;
		}
		/* "=" is an empty initial response (RFC 4954 section 4) */
		if (rest == 1 && p[0] == '=')
			resp = xstrdup("");
		else if (!base64_well_formed(p, rest)) {
			log_warning("%s: SASL %s authentication failed: malformed "
			    "base64 in the initial response", ss->namaddr, mech);
			fail(ss, 501, "5.5.2", "Error: invalid base64 data in the "
			    "initial response");
			return;
		} else
			resp = xstrndup(p, rest);
	}
	if (b == NULL || !auth_mechs(ss, &list)) {
		log_warning("%s: SASL %s authentication failed: authentication "
		    "server unavailable", ss->namaddr, mech);
		fail(ss, 454, "4.7.0", "Temporary authentication failure");
		goto out;
	}
	if (!in_list(str_cstr(&list), mech)) {
		fail(ss, 504, "5.5.4", "Error: unsupported authentication mechanism");
		goto out;
	}
	memset(&req, 0, sizeof(req));
	req.mech = mech;
	req.resp = resp;
	req.client_addr = ss->peer->addr;
	req.client_port = ss->peer->port;
	req.local_addr = ss->peer->local_addr;
	req.secured = ss->tls != NULL;
	for (st = b->start(b, &req, &out, &user); st == SMTPD_SASL_CONT;
	    st = b->next(b, str_cstr(&ss->line), &out, &user)) {
		put_line(ss, 334, ' ', NULL, str_cstr(&out));
		switch (auth_read(ss)) {
		case AR_OK:
			break;
		case AR_TOOLONG:
			b->abort(b);
			log_warning("%s: SASL %s authentication failed: response "
			    "exceeds length limit of %zu bytes", ss->namaddr, mech,
			    cfg->sasl_resp_limit);
			fail(ss, 500, "5.5.6", "Authentication exchange line is "
			    "too long");
			goto out;
		case AR_BARE_LF:
			b->abort(b);
			bare_lf(ss);
			goto out;
		case AR_GONE:
			b->abort(b);
			lost(ss, read_status(ss), "");
			goto out;
		}
		if (ss->line.len == 1 && ss->line.buf[0] == '*') {
			b->abort(b);
			log_warning("%s: SASL %s authentication aborted",
			    ss->namaddr, mech);
			fail(ss, 501, "5.7.0", "Authentication aborted");
			goto out;
		}
		if (!base64_well_formed(ss->line.buf ? ss->line.buf : "",
		    ss->line.len)) {
			b->abort(b);
			log_warning("%s: SASL %s authentication failed: malformed "
			    "base64 in a response", ss->namaddr, mech);
			fail(ss, 501, "5.5.2", "Error: invalid base64 data in the "
			    "response");
			goto out;
		}
		if (ss->line.buf == NULL)
			str_set(&ss->line, "");
		progress(ss);
	}
	switch (st) {
	case SMTPD_SASL_OK:
		/* Final server data goes in a 334; the client answers with
		 * an empty line (RFC 4954 section 4). */
		if (out.len > 0) {
			put_line(ss, 334, ' ', NULL, str_cstr(&out));
			enum auth_rd r = auth_read(ss);
			if (r != AR_OK) {
				if (r == AR_GONE)
					lost(ss, read_status(ss), "");
				else
					fail(ss, 501, "5.7.0", "Authentication aborted");
				goto out;
			}
			if (ss->line.len != 0) {
				fail(ss, 501, "5.7.0", "Authentication aborted");
				goto out;
			}
		}
		ss->sasl_username = printable_name(&user);
		ss->sasl_method = xstrdup(mech);
		ss->chk.sasl_username = ss->sasl_username;
		reply(ss, 235, "2.7.0", "Authentication successful");
		break;
	case SMTPD_SASL_TEMP:
		auth_fail_log(ss, mech, str_cstr(&out), &user);
		fail(ss, 454, "4.7.0", "Temporary authentication failure");
		break;
	default:
		auth_fail_log(ss, mech, str_cstr(&out), &user);
		fail(ss, 535, "5.7.8", "Error: authentication failed");
		break;
	}
out:
	free(resp);
	str_release(&list);
	str_release(&out);
	str_release(&user);
}

static void ehlo_reply(sess_t *ss)
{
	const smtpd_cfg_t *cfg = ss->cfg;
	const char *kw[14];
	char size[40];
	size_t n = 0;
	int off = cfg->ext_discard;
	str_t auth = STR_INIT, auth_eq = STR_INIT;

	if (!(off & SMTPD_EXT_PIPELINING))
		kw[n++] = "PIPELINING";
	if (!(off & SMTPD_EXT_SIZE)) {
		if (cfg->size_limit)
			bfmt(size, sizeof(size), "SIZE %ju", (uintmax_t)cfg->size_limit);
		else
			bcopy_str(size, sizeof(size), "SIZE");
		kw[n++] = size;
	}
	if (!(off & SMTPD_EXT_VRFY))
		kw[n++] = "VRFY";
	if (!(off & SMTPD_EXT_STARTTLS) && cfg->tls && ss->tls == NULL &&
	    cfg->tls_level != SMTPD_TLS_NONE && !ss->peer->stand_alone)
		kw[n++] = "STARTTLS";
	if (auth_possible(ss) && auth_mechs(ss, &auth_eq) && auth_eq.len > 0) {
		str_setf(&auth, "AUTH %s", str_cstr(&auth_eq));
		kw[n++] = str_cstr(&auth);
		/* Old Outlook versions know only the draft's form. */
		if (cfg->broken_sasl) {
			str_setf(&auth_eq, "AUTH=%s", auth.buf + 5);
			kw[n++] = str_cstr(&auth_eq);
		}
	}
	if (!(off & SMTPD_EXT_ENHANCED))
		kw[n++] = "ENHANCEDSTATUSCODES";
	if (!(off & SMTPD_EXT_8BITMIME))
		kw[n++] = "8BITMIME";
	if (!(off & SMTPD_EXT_DSN))
		kw[n++] = "DSN";
	if (!(off & SMTPD_EXT_SMTPUTF8))
		kw[n++] = "SMTPUTF8";
	if (!(off & SMTPD_EXT_CHUNKING))
		kw[n++] = "CHUNKING";
	put_line(ss, 250, n ? '-' : ' ', NULL, cfg->myhostname);
	for (size_t i = 0; i < n; i++)
		put_line(ss, 250, i + 1 < n ? '-' : ' ', NULL, kw[i]);
	str_release(&auth);
	str_release(&auth_eq);
}

static void cmd_helo(sess_t *ss, const smtpd_cmd_t *c)
{
	const char *why;
	char *name;

	if (!smtpd_helo_ok(c->arg, c->arglen, &why)) {
		fail(ss, 501, "5.5.4", "Syntax: %s hostname",
		    c->verb == SMTPD_V_EHLO ? "EHLO" : "HELO");
		return;
	}
	name = xstrndup(c->arg, c->arglen);
	if (!ss->cfg->delay_reject && !smtpd_restr_empty(ss->cfg->helo_restr)) {
		ss->chk.helo = name;
		if (smtpd_check(ss->cfg->helo_restr, &ss->chk, SMTPD_ST_HELO,
		    &ss->rp) == SMTPD_CHK_REJECT) {
			ss->chk.helo = ss->helo;
			log_reject(ss, c->verb == SMTPD_V_EHLO ? "EHLO" : "HELO",
			    ss->rp.code, ss->rp.dsn, str_cstr(&ss->rp.text), NULL);
			fail_reply(ss, &ss->rp);
			free(name);
			return;
		}
	}
	if (ss->milters != NULL && !ss->milter_refused) {
		/* A refusal is the reply to the next MAIL, as in Postfix
		 * (and as smtpd_delay_reject does for restrictions). */
		milter_reply_t r = MILTER_REPLY_INIT;
		enum milter_verdict v = milters_helo(ss->milters, name, &r);

		str_reset(&ss->milter_text);
		if (v == MILTER_REJECT || v == MILTER_TEMPFAIL)
			str_set(&ss->milter_text, str_cstr(&r.text));
		milter_reply_release(&r);
	}
	txn_reset(ss);
	free(ss->helo);
	ss->helo = name;
	ss->chk.helo = name;
	ss->esmtp = c->verb == SMTPD_V_EHLO;
	if (ss->esmtp)
		ehlo_reply(ss);
	else
		reply(ss, 250, NULL, "%s", ss->cfg->myhostname);
}

/* Refuses a known parameter of an extension we do not offer. */
static bool param_offered(const smtpd_cfg_t *cfg, const addr_param_t *p,
    const addr_smtp_t *a)
{
	switch (p->kind) {
	case ADDR_P_SIZE:
		return !(cfg->ext_discard & SMTPD_EXT_SIZE);
	case ADDR_P_BODY:
		if (a->body == ADDR_BODY_BINARYMIME)
			return false;
		return a->body != ADDR_BODY_8BITMIME ||
		    !(cfg->ext_discard & SMTPD_EXT_8BITMIME);
	case ADDR_P_RET:
	case ADDR_P_ENVID:
	case ADDR_P_NOTIFY:
	case ADDR_P_ORCPT:
		return !(cfg->ext_discard & SMTPD_EXT_DSN);
	case ADDR_P_SMTPUTF8:
		return !(cfg->ext_discard & SMTPD_EXT_SMTPUTF8);
	default:		/* unknown */
		return false;
	}
}

static bool check_params(sess_t *ss, const addr_smtp_t *a)
{
	for (size_t i = 0; i < a->nparams; i++) {
		const addr_param_t *p = &a->params[i];
		/* MAIL AUTH=: accepted where AUTH is offered, and ignored:
		 * we do not relay on another server's word who sent it
		 * (RFC 4954 section 5 allows that). */
		if (p->kind == ADDR_P_AUTH && auth_possible(ss))
			continue;
		if (!param_offered(ss->cfg, p, a)) {
			fail(ss, 555, "5.5.4", "Unsupported option: %s%s%s",
			    p->keyword, p->value ? "=" : "", p->value ? p->value : "");
			return false;
		}
	}
	return true;
}

static const char *param_value(const addr_smtp_t *a, enum addr_param_kind k)
{
	for (size_t i = 0; i < a->nparams; i++)
		if (a->params[i].kind == k)
			return a->params[i].value;
	return NULL;
}

static int addr_flags(const sess_t *ss)
{
	int f = ss->cfg->strict_envelopes ? 0 : ADDR_F_LENIENT;
	if (ss->smtputf8)
		f |= ADDR_F_SMTPUTF8;
	return f;
}

/* Addresses with 8-bit bytes in error texts: printable only. */
static void addr_error(sess_t *ss, const addr_err_t *e, bool rcpt,
    const char *verb)
{
	int code;
	const char *dsn;

	addr_err_reply(e, rcpt, &code, &dsn);
	if (e->status == ADDR_ERR_CMD)
		fail(ss, 501, "5.5.4", "Syntax: %s", verb);
	else if (e->status == ADDR_ERR_PARAM || e->status == ADDR_ERR_PARAM_UNSUPP)
		fail(ss, code, dsn, "Error: %s", e->text);
	else
		fail(ss, code, dsn, "Bad %s address syntax: %s",
		    rcpt ? "recipient" : "sender", e->text);
}

static bool need_tls(sess_t *ss)
{
	if (ss->cfg->tls_level == SMTPD_TLS_ENCRYPT && ss->tls == NULL &&
	    !ss->peer->stand_alone) {
		fail(ss, 530, "5.7.0", "Must issue a STARTTLS command first");
		return true;
	}
	return false;
}

static void cmd_mail(sess_t *ss, const smtpd_cmd_t *c)
{
	addr_smtp_t a;
	addr_err_t e;

	if (need_tls(ss))
		return;
	/* After STARTTLS the client must say EHLO again (RFC 3207): the
	 * session has started over. */
	if (ss->helo == NULL && (ss->cfg->helo_required || ss->tls != NULL)) {
		fail(ss, 503, "5.5.1", "Error: send HELO/EHLO first");
		return;
	}
	if (ss->in_mail) {
		fail(ss, 503, "5.5.1", "Error: nested MAIL command");
		return;
	}
	if (ss->client_rejected) {
		reject(ss, "MAIL", &ss->client_reject, NULL);
		return;
	}
	if (str_len(&ss->milter_text) > 0) {
		/* A milter refused the connection or the HELO. */
		milter_reply_t r = MILTER_REPLY_INIT;
		str_set(&r.text, str_cstr(&ss->milter_text));
		(void)milter_verdict(ss, "MAIL", ss->milter_text.buf[0] == '5' ?
		    MILTER_REJECT : MILTER_TEMPFAIL, &r, NULL);
		return;
	}
	if (ss->opts && smtpd_anvil_mail(ss->opts->anvil, &ss->rp)) {
		fail_reply(ss, &ss->rp);
		return;
	}
	if (addr_smtp_mail(c->arg, c->arglen, addr_flags(ss), &a, &e) != ADDR_OK) {
		addr_error(ss, &e, false, "MAIL FROM:<address>");
		return;
	}
	if (!check_params(ss, &a))
		goto out;
	if (a.has_size && ss->cfg->size_limit && a.size > ss->cfg->size_limit) {
		log_reject(ss, "MAIL", 552, "5.3.4",
		    "Message size exceeds fixed limit", NULL);
		fail(ss, 552, "5.3.4", "Message size exceeds fixed limit");
		goto out;
	}
	if (!ss->cfg->delay_reject && !smtpd_restr_empty(ss->cfg->sender_restr)) {
		ss->chk.sender = a.addr;
		if (smtpd_check(ss->cfg->sender_restr, &ss->chk, SMTPD_ST_MAIL,
		    &ss->rp) == SMTPD_CHK_REJECT) {
			ss->chk.sender = NULL;
			char *save = ss->sender;
			ss->sender = a.addr;	/* for the log line */
			log_reject(ss, "MAIL", ss->rp.code, ss->rp.dsn,
			    str_cstr(&ss->rp.text), NULL);
			ss->sender = save;
			fail_reply(ss, &ss->rp);
			goto out;
		}
	}
	if (ss->milters != NULL) {
		milter_reply_t r = MILTER_REPLY_INIT;
		char buf[1024];
		const char *argv[33];
		bool refused;

		milter_args(c->arg, c->arglen, buf, sizeof(buf), argv, 33);
		ss->sender = a.addr;		/* {mail_addr}, the log */
		ss->milter_msg = true;
		refused = milter_verdict(ss, "MAIL", milters_mail(ss->milters,
		    argv, &r), &r, NULL);
		ss->sender = NULL;
		if (refused) {
			milters_abort(ss->milters);
			ss->milter_msg = false;
			ss->milter_discard = false;
			goto out;
		}
	}
	ss->in_mail = true;
	ss->sender = xstrdup(a.addr);
	ss->chk.sender = ss->sender;
	const char *envid = param_value(&a, ADDR_P_ENVID);
	ss->envid = envid ? xstrdup(envid) : NULL;
	ss->ret = a.ret == ADDR_RET_FULL ? 1 : a.ret == ADDR_RET_HDRS ? 2 : 0;
	ss->body = a.body == ADDR_BODY_8BITMIME ? "8BITMIME" :
	    a.body == ADDR_BODY_7BIT ? "7BIT" : NULL;
	ss->smtputf8 = a.smtputf8;
	reply(ss, 250, "2.1.0", "Ok");
out:
	addr_smtp_free(&a);
}

/* The restriction lists for one recipient, in Postfix's order. */
static enum smtpd_chk rcpt_checks(sess_t *ss, const char *rcpt)
{
	const smtpd_cfg_t *cfg = ss->cfg;
	smtpd_check_ctx_t *x = &ss->chk;

	if (ss->peer->stand_alone)
		return SMTPD_CHK_OK;
	x->rcpt = rcpt;
	x->sender = ss->sender;
	if (cfg->delay_reject) {
		if (smtpd_check(cfg->client_restr, x, SMTPD_ST_RCPT, &ss->rp) == SMTPD_CHK_REJECT ||
		    smtpd_check(cfg->helo_restr, x, SMTPD_ST_RCPT, &ss->rp) == SMTPD_CHK_REJECT ||
		    smtpd_check(cfg->sender_restr, x, SMTPD_ST_RCPT, &ss->rp) == SMTPD_CHK_REJECT)
			return SMTPD_CHK_REJECT;
	}
	if (smtpd_check(cfg->relay_restr, x, SMTPD_ST_RCPT, &ss->rp) == SMTPD_CHK_REJECT ||
	    smtpd_check(cfg->rcpt_restr, x, SMTPD_ST_RCPT, &ss->rp) == SMTPD_CHK_REJECT)
		return SMTPD_CHK_REJECT;
	if (cfg->reject_unlisted &&
	    smtpd_check_unlisted(x, rcpt, &ss->rp) == SMTPD_CHK_REJECT)
		return SMTPD_CHK_REJECT;
	return SMTPD_CHK_OK;
}

static void cmd_rcpt(sess_t *ss, const smtpd_cmd_t *c)
{
	addr_smtp_t a;
	addr_err_t e;

	if (!ss->in_mail) {
		fail(ss, 503, "5.5.1", "Error: need MAIL command");
		return;
	}
	if (ss->bdat) {
		fail(ss, 503, "5.5.1", "Error: RCPT after BDAT");
		return;
	}
	if (ss->opts && smtpd_anvil_rcpt(ss->opts->anvil, &ss->rp)) {
		fail_reply(ss, &ss->rp);
		return;
	}
	if (addr_smtp_rcpt(c->arg, c->arglen, addr_flags(ss), &a, &e) != ADDR_OK) {
		addr_error(ss, &e, true, "RCPT TO:<address>");
		return;
	}
	if (!check_params(ss, &a))
		goto out;
	if ((long)ss->nrcpts >= ss->cfg->rcpt_limit) {
		/* Within the overshoot this is normal flow control (the
		 * client sends the rest in another transaction). */
		if (++ss->rcpt_over > ss->cfg->rcpt_overshoot)
			fail(ss, 452, "4.5.3", "Error: too many recipients");
		else
			reply(ss, 452, "4.5.3", "Error: too many recipients");
		goto out;
	}
	if (ss->client_rejected) {
		reject(ss, "RCPT", &ss->client_reject, a.addr);
		goto out;
	}
	if (rcpt_checks(ss, a.addr) == SMTPD_CHK_REJECT) {
		reject(ss, "RCPT", &ss->rp, a.addr);
		goto out;
	}
	if (ss->milter_msg) {
		milter_reply_t r = MILTER_REPLY_INIT;
		char buf[1024];
		const char *argv[33];
		bool refused;

		milter_args(c->arg, c->arglen, buf, sizeof(buf), argv, 33);
		ss->milter_rcpt = a.addr;
		refused = milter_verdict(ss, "RCPT", milters_rcpt(ss->milters,
		    argv, &r), &r, a.addr);
		ss->milter_rcpt = NULL;
		if (refused)
			goto out;
	}
	if (ss->nrcpts == ss->rcap) {
		ss->rcap = ss->rcap ? ss->rcap * 2 : 8;
		ss->rcpts = xreallocarray(ss->rcpts, ss->rcap, sizeof(*ss->rcpts));
	}
	smtpd_rcpt_t *r = &ss->rcpts[ss->nrcpts++];
	const char *orcpt = param_value(&a, ADDR_P_ORCPT);
	r->addr = xstrdup(a.addr);
	r->orcpt = orcpt ? xstrdup(orcpt) : NULL;
	r->notify = a.notify;
	reply(ss, 250, "2.1.5", "Ok");
out:
	ss->chk.rcpt = NULL;
	addr_smtp_free(&a);
}

/* Transaction checks shared by DATA and the first BDAT: false after a
 * reply. */
static bool data_ready(sess_t *ss, const char *stage)
{
	if (!ss->in_mail) {
		fail(ss, 503, "5.5.1", "Error: need %s command",
		    strcmp(stage, "DATA") == 0 ? "RCPT" : "MAIL");
		return false;
	}
	if (ss->nrcpts == 0) {
		fail(ss, 554, "5.5.1", "Error: no valid recipients");
		return false;
	}
	if (!ss->peer->stand_alone && !smtpd_restr_empty(ss->cfg->data_restr)) {
		ss->chk.sender = ss->sender;
		ss->chk.rcpt = ss->nrcpts == 1 ? ss->rcpts[0].addr : NULL;
		if (smtpd_check(ss->cfg->data_restr, &ss->chk, SMTPD_ST_DATA,
		    &ss->rp) == SMTPD_CHK_REJECT) {
			ss->chk.rcpt = NULL;
			reject(ss, stage, &ss->rp, NULL);
			return false;
		}
		ss->chk.rcpt = NULL;
	}
	if (!dest_start(ss, stage)) {
		fail(ss, 451, "4.3.0", "Error: queue file write error");
		return false;
	}
	if (ss->milter_msg) {
		milter_reply_t r = MILTER_REPLY_INIT;
		if (milter_verdict(ss, stage, milters_data(ss->milters, &r), &r,
		    NULL)) {
			txn_reset(ss);
			return false;
		}
	}
	return true;
}

enum data_end { DE_DONE, DE_LOST, DE_TIMEOUT, DE_BARE_LF };

/* Reads the message after 354 up to the final dot, handing each line
 * on as it comes.  A line longer than line_length_limit arrives in
 * pieces and is passed on whole, never cut.  Lines are passed on with
 * CR LF.  End of data: "." alone on a line; with smtpd_forbid_bare_
 * newline = normalize only as CR LF "." CR LF (so that a message cannot
 * smuggle a second one past a server that reads bare LF differently). */
static enum data_end read_data(sess_t *ss, uint64_t *bytes, bool *big)
{
	const smtpd_cfg_t *cfg = ss->cfg;
	bool bol = true, prev_crlf = true;
	uint64_t since = 0;

	*bytes = 0;
	*big = false;
	for (;;) {
		int r = stream_getline(ss->s, &ss->line, cfg->line_limit);
		const char *p;
		size_t n;
		bool complete;

		if (r == STREAM_LINE_NONE || r == STREAM_LINE_PARTIAL)
			return stream_timedout(ss->s) ? DE_TIMEOUT : DE_LOST;
		complete = r == STREAM_LINE_LF || r == STREAM_LINE_CRLF;
		if (r == STREAM_LINE_LF && cfg->bare_lf == SMTPD_LF_REJECT)
			return DE_BARE_LF;
		p = ss->line.buf ? ss->line.buf : "";
		n = ss->line.len;
		if (bol && complete && n == 1 && p[0] == '.') {
			if (cfg->bare_lf == SMTPD_LF_ACCEPT ||
			    (r == STREAM_LINE_CRLF && prev_crlf))
				return DE_DONE;
			/* A dot after or before a bare LF: content, kept. */
		} else if (bol && n > 0 && p[0] == '.') {
			p++;
			n--;
		}
		*bytes += n + (complete ? 2 : 0);
		since += n + 2;
		if (!*big && cfg->size_limit && *bytes > cfg->size_limit) {
			*big = true;
			ss->dest->abort(ss->dest);
			ss->dest_open = false;
		}
		if (!*big) {
			content_write(ss, p, n);
			if (complete)
				content_write(ss, "\r\n", 2);
		}
		if (complete) {
			bol = true;
			prev_crlf = r == STREAM_LINE_CRLF;
		} else {
			bol = false;
		}
		if (since >= CHUNK) {
			since = 0;
			progress(ss);
		}
	}
}

static void cmd_data(sess_t *ss, const smtpd_cmd_t *c)
{
	uint64_t bytes;
	bool big;

	if (c->arglen) {
		fail(ss, 501, "5.5.4", "Syntax: DATA");
		return;
	}
	if (ss->bdat) {
		fail(ss, 503, "5.5.1", "Error: DATA after BDAT");
		return;
	}
	if (!data_ready(ss, "DATA"))
		return;
	reply(ss, 354, NULL, "End data with <CR><LF>.<CR><LF>");
	switch (read_data(ss, &bytes, &big)) {
	case DE_DONE:
		break;
	case DE_LOST:
	case DE_TIMEOUT: {
		char extra[48];
		bfmt(extra, sizeof(extra), " (%ju bytes)", (uintmax_t)bytes);
		txn_reset(ss);
		lost(ss, stream_timedout(ss->s) ? RD_TIMEOUT : RD_LOST, extra);
		return;
	}
	case DE_BARE_LF:
		txn_reset(ss);
		bare_lf(ss);
		return;
	}
	if (big) {
		too_big(ss, "END-OF-MESSAGE", bytes);
		return;
	}
	dest_end(ss, "END-OF-MESSAGE");
}

/* Reads and (unless discard) hands on size bytes of a BDAT chunk.
 * false: the connection is gone. */
static bool bdat_read(sess_t *ss, uint64_t size, bool discard,
    uint64_t *total, bool *big)
{
	char buf[8192];

	while (size > 0) {
		size_t want = size < sizeof(buf) ? (size_t)size : sizeof(buf);
		ssize_t n = stream_read_some(ss->s, buf, want);
		if (n <= 0)
			return false;
		size -= (uint64_t)n;
		if (discard)
			continue;
		*total += (uint64_t)n;
		if (!*big && ss->cfg->size_limit && *total > ss->cfg->size_limit) {
			*big = true;
			ss->dest->abort(ss->dest);
			ss->dest_open = false;
		}
		if (!*big)
			content_write(ss, buf, (size_t)n);
		if ((*total & (CHUNK - 1)) < (uint64_t)n)
			progress(ss);
	}
	return true;
}

static void cmd_bdat(sess_t *ss, const smtpd_cmd_t *c)
{
	uint64_t size, total;
	bool last, big = false, ok;
	uint64_t dummy = 0;

	if (ss->cfg->ext_discard & SMTPD_EXT_CHUNKING) {
		fail(ss, 500, "5.5.2", "Error: command not recognized");
		return;
	}
	if (!smtpd_bdat_parse(c->arg, c->arglen, &size, &last)) {
		/* We cannot know where the chunk ends: no way to stay in
		 * step with the client. */
		fail(ss, 501, "5.5.4", "Syntax: BDAT count [LAST]");
		log_info("bad BDAT command from %s; disconnecting", ss->namaddr);
		ss->stop = true;
		return;
	}
	ok = ss->bdat || data_ready(ss, "BDAT");
	if (ok && !ss->bdat) {
		ss->bdat = true;
		ss->bdat_bytes = 0;
	}
	total = ok ? ss->bdat_bytes : 0;
	if (!bdat_read(ss, size, !ok, ok ? &total : &dummy, &big)) {
		char extra[48];
		bfmt(extra, sizeof(extra), " (%ju bytes)", (uintmax_t)total);
		txn_reset(ss);
		lost(ss, read_status(ss), extra);
		return;
	}
	if (!ok) {
		/* The refusal went out in data_ready; the chunk is gone. */
		txn_reset(ss);
		return;
	}
	ss->bdat_bytes = total;
	if (big) {
		too_big(ss, "BDAT", total);
		return;
	}
	if (!last) {
		reply(ss, 250, "2.0.0", "Ok: %ju bytes", (uintmax_t)size);
		return;
	}
	dest_end(ss, "END-OF-MESSAGE");
}

static void junk(sess_t *ss)
{
	if (++ss->junk > ss->cfg->junk_limit)
		ss->errors++;
}

static void cmd_vrfy(sess_t *ss, const smtpd_cmd_t *c)
{
	addr_smtp_t a;
	addr_err_t e;
	str_t arg = STR_INIT;

	junk(ss);
	/* Disabled VRFY reveals nothing but is not an error: RFC 5321
	 * (3.5.3) recommends 252, and a client may go on with RCPT. */
	if (ss->cfg->disable_vrfy) {
		reply(ss, 252, "2.5.2", "Cannot VRFY user; try RCPT to attempt delivery");
		return;
	}
	if (c->arglen == 0) {
		fail(ss, 501, "5.5.4", "Syntax: VRFY address");
		return;
	}
	/* VRFY takes a bare or a bracketed address. */
	str_cat(&arg, "TO:");
	str_append(&arg, c->arg, c->arglen);
	if (addr_smtp_rcpt(arg.buf, arg.len, ADDR_F_LENIENT | ADDR_F_SMTPUTF8,
	    &a, &e) != ADDR_OK) {
		str_release(&arg);
		fail(ss, 501, "5.1.3", "Bad recipient address syntax");
		return;
	}
	str_release(&arg);
	if (!ss->peer->stand_alone &&
	    smtpd_check_unlisted(&ss->chk, a.addr, &ss->rp) == SMTPD_CHK_REJECT) {
		reject(ss, "VRFY", &ss->rp, a.addr);
	} else {
		str_t ext = STR_INIT;
		addr_externalize(a.addr, &ext);
		reply(ss, 252, "2.0.0", "<%s>", str_cstr(&ext));
		str_release(&ext);
	}
	addr_smtp_free(&a);
}

static void cmd_starttls(sess_t *ss, const smtpd_cmd_t *c)
{
	const smtpd_cfg_t *cfg = ss->cfg;
	str_t err = STR_INIT;
	size_t junked;
	bool over;
	int rc;

	if (cfg->tls_level == SMTPD_TLS_NONE || ss->peer->stand_alone ||
	    (cfg->ext_discard & SMTPD_EXT_STARTTLS)) {
		fail(ss, 502, "5.5.1", "Error: command not implemented");
		return;
	}
	if (ss->tls != NULL) {
		fail(ss, 554, "5.5.1", "Error: TLS already active");
		return;
	}
	if (c->arglen) {
		fail(ss, 501, "5.5.4", "Syntax: STARTTLS");
		return;
	}
	if (ss->in_mail) {
		fail(ss, 503, "5.5.1", "Error: MAIL transaction in progress");
		return;
	}
	if (cfg->tls == NULL) {
		fail(ss, 454, "4.7.0", "TLS not available due to local problem");
		return;
	}
	if (ss->opts && smtpd_anvil_starttls(ss->opts->anvil, &ss->rp)) {
		fail_reply(ss, &ss->rp);
		return;
	}
	/* Anything the client sent after STARTTLS, before the handshake,
	 * was sent in the clear and could have been injected by a man in
	 * the middle; it must never be taken as protected input (CVE-2011-
	 * 0411 and its relatives). */
	junked = stream_purge(ss->s);
	if (junked > 0)
		log_warning("%s: discarding %zu bytes of input pipelined after "
		    "STARTTLS", ss->namaddr, junked);
	reply(ss, 220, "2.0.0", "Ready to start TLS");
	rc = tls_server_start(cfg->tls, ss->s, (int)cfg->starttls_timeout_ms,
	    &ss->tls, &err);
	/* Every handshake is a new TLS session (the server keeps no session
	 * cache and issues no tickets); a failed one counts too. */
	over = ss->opts && smtpd_anvil_newtls(ss->opts->anvil, &ss->rp);
	if (rc != TLS_OK) {
		log_warning("TLS handshake failed for %s: %s", ss->namaddr,
		    str_cstr(&err));
		log_info("lost connection after STARTTLS from %s", ss->namaddr);
		ss->stop = true;
		str_release(&err);
		return;
	}
	str_release(&err);
	stream_set_timeouts(ss->s, (int)cfg->timeout_ms, (int)cfg->timeout_ms);
	tls_sess_log(ss->tls, ss->namaddr);
	if (over) {
		reply(ss, ss->rp.code, ss->rp.dsn, "%s", str_cstr(&ss->rp.text));
		(void)stream_flush(ss->s);
		ss->stop = true;
		return;
	}
	str_t info = STR_INIT;
	str_setf(&info, "using %s", tls_sess_describe(ss->tls));
	free(ss->tls_info);
	ss->tls_info = str_steal(&info);
	/* RFC 3207 4.2: forget everything the client told us. */
	txn_reset(ss);
	auth_forget(ss);
	free(ss->helo);
	ss->helo = NULL;
	ss->chk.helo = NULL;
	ss->esmtp = false;
}

static void cmd_help(sess_t *ss)
{
	put_line(ss, 214, '-', "2.0.0", "Commands: HELO EHLO MAIL RCPT DATA "
	    "BDAT RSET NOOP QUIT VRFY HELP STARTTLS AUTH");
	put_line(ss, 214, ' ', "2.0.0", "See RFC 5321");
}

static bool forbidden(sess_t *ss, const smtpd_cmd_t *c)
{
	/* HTTP and proxy requests, mail headers sent as commands, or
	 * anything that does not start with a letter: not an SMTP client. */
	if (!((c->word[0] >= 'A' && c->word[0] <= 'Z') ||
	    (c->word[0] >= 'a' && c->word[0] <= 'z')))
		return true;
	if (c->word[c->wordlen - 1] == ':')
		return true;
	for (char **f = ss->cfg->forbidden; f && *f; f++)
		if (strlen(*f) == c->wordlen &&
		    strncasecmp(*f, c->word, c->wordlen) == 0)
			return true;
	return false;
}

/* ---- The session --------------------------------------------------- */

static void log_disconnect(sess_t *ss)
{
	str_t l = STR_INIT;
	unsigned tok = 0, ttot = 0;
	static const enum smtpd_verb order[] = {
		SMTPD_V_HELO, SMTPD_V_EHLO, SMTPD_V_STARTTLS, SMTPD_V_AUTH,
		SMTPD_V_MAIL, SMTPD_V_RCPT, SMTPD_V_DATA, SMTPD_V_BDAT,
		SMTPD_V_RSET, SMTPD_V_NOOP, SMTPD_V_VRFY, SMTPD_V_ETRN,
		SMTPD_V_EXPN, SMTPD_V_HELP, SMTPD_V_QUIT, SMTPD_V_UNKNOWN,
	};

	str_catf(&l, "disconnect from %s", ss->namaddr);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		enum smtpd_verb v = order[i];
		if (ss->total[v] == 0)
			continue;
		char name[16];
		bcopy_str(name, sizeof(name), smtpd_verb_name(v));
		str_lower(name);
		if (ss->ok[v] == ss->total[v])
			str_catf(&l, " %s=%u", name, ss->total[v]);
		else
			str_catf(&l, " %s=%u/%u", name, ss->ok[v], ss->total[v]);
		tok += ss->ok[v];
		ttot += ss->total[v];
	}
	if (tok == ttot)
		str_catf(&l, " commands=%u", ttot);
	else
		str_catf(&l, " commands=%u/%u", tok, ttot);
	log_info("%s", str_cstr(&l));
	str_release(&l);
}

static void dispatch(sess_t *ss, const smtpd_cmd_t *c)
{
	if (c->verb == SMTPD_V_UNKNOWN && ss->milters != NULL &&
	    !ss->milter_refused) {
		milter_reply_t r = MILTER_REPLY_INIT;
		char *cmd = xstrndup(ss->line.buf ? ss->line.buf : "",
		    ss->line.len);
		bool refused = milter_verdict(ss, "UNKNOWN", milters_unknown(
		    ss->milters, cmd, &r), &r, NULL);
		free(cmd);
		if (refused)
			return;
	}
	switch (c->verb) {
	case SMTPD_V_HELO:
	case SMTPD_V_EHLO:
		cmd_helo(ss, c);
		break;
	case SMTPD_V_MAIL:
		cmd_mail(ss, c);
		break;
	case SMTPD_V_RCPT:
		cmd_rcpt(ss, c);
		break;
	case SMTPD_V_DATA:
		cmd_data(ss, c);
		break;
	case SMTPD_V_BDAT:
		cmd_bdat(ss, c);
		break;
	case SMTPD_V_RSET:
		junk(ss);
		if (c->arglen) {
			fail(ss, 501, "5.5.4", "Syntax: RSET");
			break;
		}
		txn_reset(ss);
		reply(ss, 250, "2.0.0", "Ok");
		break;
	case SMTPD_V_NOOP:
		junk(ss);
		reply(ss, 250, "2.0.0", "Ok");
		break;
	case SMTPD_V_QUIT:
		reply(ss, 221, "2.0.0", "Bye");
		ss->stop = true;
		break;
	case SMTPD_V_VRFY:
		cmd_vrfy(ss, c);
		break;
	case SMTPD_V_HELP:
		cmd_help(ss);
		break;
	case SMTPD_V_STARTTLS:
		cmd_starttls(ss, c);
		break;
	case SMTPD_V_AUTH:
		cmd_auth(ss, c);
		break;
	case SMTPD_V_ETRN:
	case SMTPD_V_EXPN:
		fail(ss, 502, "5.5.1", "Error: command not implemented");
		break;
	default:
		fail(ss, 500, "5.5.2", "Error: command not recognized");
		break;
	}
}

/* The daemon is stopping (petrel stop, or master died) and no mail
 * transaction is open: say goodbye.  The client will come back. */
static bool shutting_down(sess_t *ss)
{
	if (!server_stopping() || ss->in_mail || ss->dest_open)
		return false;
	log_info("disconnect from %s after %s: the mail system is stopping",
	    ss->namaddr, ss->where);
	stream_clearerr(ss->s);
	reply(ss, 421, "4.3.2", "%s Service shutting down, closing "
	    "transmission channel", ss->cfg->myhostname);
	(void)stream_flush(ss->s);
	ss->stop = true;
	return true;
}

/* Reads, checks and runs commands until the session ends.  Outside a
 * mail transaction a wait for the next command ends as soon as the
 * daemon stops (the cancel flag); inside one the transaction is
 * finished first. */
static void command_loop(sess_t *ss)
{
	smtpd_cmd_t c;
	bool crlf;

	while (!ss->stop) {
		if (shutting_down(ss))
			break;
		stream_set_cancel(ss->s, ss->in_mail || ss->dest_open ? NULL :
		    server_stop_flag());
		if (ss->errors >= ss->cfg->hard_limit) {
			log_info("too many errors after %s from %s", ss->where,
			    ss->namaddr);
			reply(ss, 421, "4.7.0", "%s Error: too many errors",
			    ss->cfg->myhostname);
			break;
		}
		progress(ss);
		switch (read_cmd(ss, &crlf)) {
		case RD_OK:
			break;
		case RD_TOOLONG:
			fail(ss, 500, "5.5.2", "Error: line too long");
			continue;
		case RD_BARE_LF:
			bare_lf(ss);
			continue;
		default:
			if (stream_errno(ss->s) == ECANCELED && shutting_down(ss))
				continue;
			lost(ss, read_status(ss), "");
			continue;
		}
		if (log_verbose > 0) {
			/* An AUTH initial response is a password in base64:
			 * never logged, not even here. */
			size_t n = ss->line.len;
			bool cut = n > 5 && strncasecmp(ss->line.buf, "AUTH ", 5) == 0;
			if (cut) {
				const char *m = ss->line.buf + 5;
				m += strspn(m, " \t");
				m += strcspn(m, " \t");
				cut = (size_t)(m - ss->line.buf) < n;
				n = (size_t)(m - ss->line.buf);
			}
			str_t q = STR_INIT;
			str_quote_printable(&q, ss->line.buf, n);
			log_debug("< %s: %s%s", ss->namaddr, str_cstr(&q),
			    cut ? " (initial response not logged)" : "");
			str_release(&q);
		}
		switch (smtpd_cmd_parse(ss->line.buf ? ss->line.buf : "",
		    ss->line.len, &c)) {
		case SMTPD_CMD_NUL:
			ss->total[SMTPD_V_UNKNOWN]++;
			fail(ss, 500, "5.5.2", "Error: NUL character in command");
			continue;
		case SMTPD_CMD_CONTROL:
			ss->total[SMTPD_V_UNKNOWN]++;
			fail(ss, 500, "5.5.2", "Error: control character in command");
			continue;
		case SMTPD_CMD_OK:
			break;
		}
		if (c.verb == SMTPD_V_NONE) {
			ss->total[SMTPD_V_UNKNOWN]++;
			fail(ss, 500, "5.5.2", "Error: bad syntax");
			continue;
		}
		if (ss->line.len > ss->cfg->line_limit && c.verb != SMTPD_V_AUTH) {
			fail(ss, 500, "5.5.2", "Error: line too long");
			continue;
		}
		if (c.verb == SMTPD_V_UNKNOWN && forbidden(ss, &c)) {
			str_t q = STR_INIT;
			str_quote_printable(&q, ss->line.buf,
			    ss->line.len > 100 ? 100 : ss->line.len);
			log_warning("non-SMTP command from %s: %s", ss->namaddr,
			    str_cstr(&q));
			str_release(&q);
			ss->total[SMTPD_V_UNKNOWN]++;
			reply(ss, 221, "2.7.0", "Error: I can break rules, too. Goodbye.");
			break;
		}
		ss->where = c.verb == SMTPD_V_UNKNOWN ? "UNKNOWN" :
		    smtpd_verb_name(c.verb);
		ss->cur_ok = false;
		dispatch(ss, &c);
		ss->total[c.verb]++;
		if (ss->cur_ok)
			ss->ok[c.verb]++;
	}
}

/* smtpd_tls_wrappermode (port 465): the TLS handshake before the
 * greeting.  False when the session cannot go on. */
static bool wrapper_start(sess_t *ss)
{
	str_t err = STR_INIT;
	str_t info = STR_INIT;

	if (ss->cfg->tls == NULL) {
		log_warning("%s: smtpd_tls_wrappermode = yes but TLS is not "
		    "available: %s", ss->namaddr, ss->cfg->tls_error ?
		    ss->cfg->tls_error : "no certificate");
		return false;
	}
	if (tls_server_start(ss->cfg->tls, ss->s, (int)ss->cfg->starttls_timeout_ms,
	    &ss->tls, &err) != TLS_OK) {
		log_warning("TLS handshake failed for %s: %s", ss->namaddr,
		    str_cstr(&err));
		log_info("lost connection after CONNECT from %s", ss->namaddr);
		str_release(&err);
		return false;
	}
	str_release(&err);
	stream_set_timeouts(ss->s, (int)ss->cfg->timeout_ms,
	    (int)ss->cfg->timeout_ms);
	tls_sess_log(ss->tls, ss->namaddr);
	str_setf(&info, "using %s", tls_sess_describe(ss->tls));
	ss->tls_info = str_steal(&info);
	return true;
}

int smtpd_session_run(const smtpd_cfg_t *cfg, stream_t *s,
    const smtpd_peer_t *peer, smtpd_dest_t *dest,
    const smtpd_session_opts_t *opts)
{
	sess_t ss;
	int messages;

	memset(&ss, 0, sizeof(ss));
	ss.cfg = cfg;
	ss.s = s;
	ss.peer = peer;
	ss.dest = dest;
	ss.opts = opts;
	ss.where = "CONNECT";
	str_reset(&ss.line);
	ss.rp = (smtpd_reply_t)SMTPD_REPLY_INIT;
	ss.client_reject = (smtpd_reply_t)SMTPD_REPLY_INIT;
	if (cfg->port_logging && *peer->port)
		bfmt(ss.namaddr, sizeof(ss.namaddr), "%s[%s]:%s", peer->name,
		    peer->addr, peer->port);
	else
		bfmt(ss.namaddr, sizeof(ss.namaddr), "%s[%s]", peer->name,
		    peer->addr);
	bfmt(ss.log_ident, sizeof(ss.log_ident), "smtpd[%ld]", (long)getpid());
	ss.chk.cfg = cfg;
	ss.chk.filter = &ss.filter;
	ss.chk.client_name = peer->name;
	ss.chk.client_addr = peer->addr;
	ss.chk.local_addr = peer->local_addr;
	ss.chk.trusted = peer->stand_alone;
	stream_set_timeouts(s, (int)cfg->timeout_ms, (int)cfg->timeout_ms);

	log_info("connect from %s", ss.namaddr);
	if (cfg->tls_wrapper && !peer->stand_alone && !wrapper_start(&ss))
		ss.stop = true;
	if (!ss.stop && opts &&
	    smtpd_anvil_connect(opts->anvil, peer, ss.namaddr, &ss.rp)) {
		reply(&ss, ss.rp.code, ss.rp.dsn, "%s", str_cstr(&ss.rp.text));
		ss.stop = true;
	}
	if (!ss.stop && !cfg->delay_reject && !peer->stand_alone &&
	    smtpd_check(cfg->client_restr, &ss.chk, SMTPD_ST_CONNECT,
	    &ss.client_reject) == SMTPD_CHK_REJECT) {
		/* Refused later, at MAIL and RCPT, so the client hears why. */
		ss.client_rejected = true;
		log_reject(&ss, "CONNECT", ss.client_reject.code,
		    ss.client_reject.dsn, str_cstr(&ss.client_reject.text), NULL);
	}
	if (!ss.stop)
		milters_begin(&ss);
	if (!ss.stop) {
		if (!ss.milter_refused || ss.milter_text.buf[0] != '5')
			reply(&ss, 220, NULL, "%s", cfg->banner);
		command_loop(&ss);
	}
	(void)stream_flush(s);
	txn_reset(&ss);
	milters_free(ss.milters);
	str_release(&ss.milter_text);
	str_release(&ss.mbuf);
	log_disconnect(&ss);
	if (opts)
		smtpd_anvil_disconnect(opts->anvil);
	if (ss.tls)
		tls_close(ss.tls, s, 1000);
	else
		stream_close(s);
	messages = ss.messages;
	free(ss.helo);
	free(ss.tls_info);
	free(ss.sasl_method);
	free(ss.sasl_username);
	free(ss.rcpts);
	str_release(&ss.line);
	str_release(&ss.filter);
	str_release(&ss.rp.text);
	str_release(&ss.client_reject.text);
	return messages;
}
