/* Mail transactions on an established session: MAIL, RCPT, DATA, the
 * content and the final reply, with PIPELINING when the server offers it.
 *
 * Commands go through a small queue: each one sent is remembered until
 * its reply has been read.  With PIPELINING up to SMTP_PIPE_WINDOW
 * commands are outstanding (MAIL, the RCPTs and DATA normally leave in
 * one write, as the stream flushes only when a reply must be waited
 * for); without it the window is one command, so every reply is read
 * before the next command is chosen.  The replies decide the recipients:
 *
 *   MAIL 5xx / DATA 5xx / final 5xx   every recipient of the transaction
 *                                     (still open) bounces
 *   MAIL 4xx / DATA 4xx / final 4xx   they stay pending with the reason:
 *                                     the next server may take them,
 *                                     else they are deferred
 *   RCPT 2xx / 4xx / 5xx              that recipient: accepted / pending
 *                                     with the reason / bounced
 *   RCPT 452                          too many recipients: again in a new
 *                                     transaction on this session
 *   final 2xx                         the accepted recipients are sent
 *
 * A lost connection, a timeout or a malformed reply ends the session:
 * the open recipients stay pending with "lost connection with ... while
 * sending ...". */
#include <stdlib.h>
#include <string.h>
#include "addr.h"
#include "dsn_notify.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "qfile.h"
#include "smtp_int.h"

enum { C_RSET, C_MAIL, C_RCPT, C_DATA };

/* Recipient state within one transaction (smtp_rcpt_t.tstate). */
enum { T_NONE, T_SENT, T_OK, T_DONE };

typedef struct trans {
	smtp_client_t *cl;
	smtp_sess_t *ss;
	smtp_request_t *req;
	size_t *idx;		/* recipients of this transaction */
	size_t n;
	struct { int type; size_t i; } q[SMTP_PIPE_WINDOW];
	size_t qhead, qlen;
	size_t window;
	bool mail_ok;		/* MAIL accepted */
	bool mail_failed;	/* MAIL refused: the rest is noise */
	bool stale;		/* RSET of a reused session failed */
	bool dead;		/* the session is unusable */
	bool data_go;		/* 354 to DATA */
	size_t accepted;
	bool from_reply;	/* t->why quotes the server's reply t->r */
	smtp_reply_t r;
	str_t cmd;
	str_t why;
} trans_t;

static const char *cmd_name(int type)
{
	switch (type) {
	case C_RSET: return "RSET";
	case C_MAIL: return "MAIL FROM";
	case C_RCPT: return "RCPT TO";
	default: return "DATA";
	}
}

static int cmd_timeout(const smtp_config_t *cfg, int type)
{
	switch (type) {
	case C_RSET: return cfg->rset_timeout_ms;
	case C_MAIL: return cfg->mail_timeout_ms;
	case C_RCPT: return cfg->rcpt_timeout_ms;
	default: return cfg->data_init_timeout_ms;
	}
}

static const char *relay(const trans_t *t)
{
	return str_cstr(&t->ss->relay);
}

/* Open recipients of the transaction (not decided, not set aside). */
static bool open_rcpt(const smtp_rcpt_t *r)
{
	return r->status == SMTP_R_PENDING && r->tstate != T_DONE;
}

/* Every open recipient: bounce (5xx) or keep pending with the reason. */
static void fail_open(trans_t *t, bool only_accepted, const char *dsn,
    bool hard, const char *text)
{
	for (size_t k = 0; k < t->n; k++) {
		smtp_rcpt_t *r = &t->req->rcpt[t->idx[k]];
		if (!open_rcpt(r) || (only_accepted && r->tstate != T_OK))
			continue;
		if (hard)
			smtp_rcpt_result(r, SMTP_R_BOUNCE, dsn, relay(t), "%s",
			    text);
		else
			smtp_rcpt_soft(r, dsn, relay(t), "%s", text);
		if (t->from_reply)
			smtp_rcpt_remote(r, t->ss->host, str_cstr(&t->r.text));
		r->tstate = T_DONE;
	}
}

/* The session failed (I/O): open recipients keep the reason. */
static void fail_io(trans_t *t, int io, const char *stage)
{
	smtp_io_reason(t->ss, io, stage, &t->r, &t->why);
	t->from_reply = false;
	fail_open(t, false, smtp_io_dsn(io), false, str_cstr(&t->why));
	t->dead = true;
	t->ss->broken = true;
}

static void said(trans_t *t, const char *what)
{
	str_setf(&t->why, "host %s said: %s (in reply to %s command)",
	    str_cstr(&t->ss->namaddr), str_cstr(&t->r.text), what);
	t->from_reply = true;
}

/* Reads and acts on the reply to the oldest outstanding command. */
static void read_one(trans_t *t)
{
	int type = t->q[t->qhead].type;
	size_t i = t->q[t->qhead].i;
	smtp_rcpt_t *r;
	int io, cls;

	t->qhead = (t->qhead + 1) % SMTP_PIPE_WINDOW;
	t->qlen--;
	if (t->dead)
		return;
	io = smtp_reply_read(t->ss, cmd_timeout(&t->cl->cfg, type), &t->r);
	if (io != SMTP_IO_OK) {
		if (type == C_RSET) {
			t->stale = true;
			t->dead = true;
			t->ss->broken = true;
			return;
		}
		str_t stage = STR_INIT;
		str_setf(&stage, "sending %s", type == C_DATA ? "DATA command" :
		    cmd_name(type));
		fail_io(t, io, str_cstr(&stage));
		str_release(&stage);
		return;
	}
	cls = t->r.code / 100;
	/* 421: the server is closing the session (RFC 5321 3.8); never
	 * keep it for another delivery. */
	if (t->r.code == 421)
		t->ss->broken = true;
	switch (type) {
	case C_RSET:
		if (cls != 2) {
			t->stale = true;
			t->dead = true;
			t->ss->broken = true;
		}
		break;
	case C_MAIL:
		if (cls == 2) {
			t->mail_ok = true;
			break;
		}
		t->mail_failed = true;
		said(t, "MAIL FROM");
		fail_open(t, false, t->r.dsn, cls == 5, str_cstr(&t->why));
		break;
	case C_RCPT:
		r = &t->req->rcpt[i];
		if (!t->mail_ok || !open_rcpt(r))
			break;		/* MAIL failed: already decided */
		if (cls == 2) {
			r->tstate = T_OK;
			t->accepted++;
			break;
		}
		said(t, "RCPT TO");
		if (cls == 5) {
			smtp_rcpt_result(r, SMTP_R_BOUNCE, t->r.dsn, relay(t),
			    "%s", str_cstr(&t->why));
			smtp_rcpt_remote(r, t->ss->host, str_cstr(&t->r.text));
		} else {
			smtp_rcpt_soft(r, t->r.dsn, relay(t), "%s",
			    str_cstr(&t->why));
			smtp_rcpt_remote(r, t->ss->host, str_cstr(&t->r.text));
			/* 452: the server's recipient limit, not a verdict
			 * on this recipient (RFC 5321 4.5.3.1.10). */
			r->again = t->r.code == 452;
		}
		r->tstate = T_DONE;
		break;
	case C_DATA:
		if (t->r.code == 354) {
			t->data_go = true;
			break;
		}
		if (!t->mail_ok || t->accepted == 0)
			break;		/* expected: nobody to send to */
		said(t, "DATA");
		fail_open(t, true, t->r.dsn, cls == 5, str_cstr(&t->why));
		break;
	}
}

/* Queues one command (the text is in t->cmd), reading replies first to
 * stay within the window. */
static void send_cmd(trans_t *t, int type, size_t i)
{
	while (t->qlen >= t->window && !t->dead)
		read_one(t);
	if (t->dead)
		return;
	str_cat(&t->cmd, "\r\n");
	stream_write(t->ss->s, str_cstr(&t->cmd), str_len(&t->cmd));
	t->q[(t->qhead + t->qlen) % SMTP_PIPE_WINDOW].type = type;
	t->q[(t->qhead + t->qlen) % SMTP_PIPE_WINDOW].i = i;
	t->qlen++;
}

static void drain(trans_t *t)
{
	while (t->qlen > 0)
		read_one(t);
}

static void mail_cmd(trans_t *t, bool utf8)
{
	const smtp_request_t *req = t->req;
	unsigned f = t->ss->features;

	str_set(&t->cmd, "MAIL FROM:<");
	addr_externalize(req->sender, &t->cmd);
	str_putc(&t->cmd, '>');
	if (f & SMTP_F_SIZE)
		str_catf(&t->cmd, " SIZE=%llu", (unsigned long long)req->size);
	if ((f & SMTP_F_8BITMIME) && req->body == SMTP_BODY_8BITMIME)
		str_cat(&t->cmd, " BODY=8BITMIME");
	if ((f & SMTP_F_SMTPUTF8) && utf8)
		str_cat(&t->cmd, " SMTPUTF8");
	if (f & SMTP_F_DSN) {
		if (req->ret == QF_RET_FULL)
			str_cat(&t->cmd, " RET=FULL");
		else if (req->ret == QF_RET_HDRS)
			str_cat(&t->cmd, " RET=HDRS");
		if (req->envid != NULL && req->envid[0] != '\0') {
			str_t x = STR_INIT;
			addr_xtext_encode(req->envid, strlen(req->envid), &x);
			/* RFC 3461 4.4: at most 100 characters; a longer
			 * one is left out rather than refused. */
			if (str_len(&x) <= ADDR_ENVID_MAX)
				str_catf(&t->cmd, " ENVID=%s", str_cstr(&x));
			str_release(&x);
		}
	}
}

/* "rfc822;xtext" as stored, when it looks right. */
static bool orcpt_ok(const char *v)
{
	const char *semi = strchr(v, ';');
	str_t dec = STR_INIT;
	bool ok;

	if (semi == NULL || semi == v || strlen(v) > ADDR_ORCPT_MAX)
		return false;
	for (const char *p = v; p < semi; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-'))
			return false;
	ok = addr_xtext_decode(semi + 1, strlen(semi + 1), &dec);
	str_release(&dec);
	return ok;
}

static void rcpt_cmd(trans_t *t, const smtp_rcpt_t *r)
{
	str_set(&t->cmd, "RCPT TO:<");
	addr_externalize(r->in.address, &t->cmd);
	str_putc(&t->cmd, '>');
	if (!(t->ss->features & SMTP_F_DSN))
		return;
	if (r->in.notify != 0) {
		str_cat(&t->cmd, " NOTIFY=");
		dsn_notify_format(r->in.notify, false, &t->cmd);
	}
	if (r->in.orcpt != NULL && orcpt_ok(r->in.orcpt)) {
		str_catf(&t->cmd, " ORCPT=%s", r->in.orcpt);
	} else if (r->in.orig != NULL && r->in.orig[0] != '\0') {
		str_t ext = STR_INIT;
		addr_externalize(r->in.orig, &ext);
		if (str_len(&ext) <= ADDR_ORCPT_MAX - 20) {
			str_cat(&t->cmd, " ORCPT=rfc822;");
			addr_xtext_encode(str_cstr(&ext), str_len(&ext), &t->cmd);
		}
		str_release(&ext);
	}
}

/* The content after 354, and the final reply. */
/* A recipient's final reply (2xx sent, 4xx pending with the reason,
 * 5xx bounced), from t->r. */
static void final_one(trans_t *t, smtp_rcpt_t *r)
{
	int cls = t->r.code / 100;

	if (cls == 2) {
		bool passed = (t->ss->features & SMTP_F_DSN) != 0;
		/* Without DSN support downstream, a requested success
		 * notice is ours to send: "relayed". */
		smtp_rcpt_result(r, SMTP_R_SENT, t->r.dsn, relay(t), "%s",
		    str_cstr(&t->r.text));
		if (!passed && (r->in.notify & DSN_NOTIFY_SUCCESS))
			r->action = DLV_ACT_RELAYED;
		r->dsn_passed = passed && r->in.notify != 0;
	} else {
		said(t, "end of DATA");
		if (cls == 5)
			smtp_rcpt_result(r, SMTP_R_BOUNCE, t->r.dsn, relay(t),
			    "%s", str_cstr(&t->why));
		else
			smtp_rcpt_soft(r, t->r.dsn, relay(t), "%s",
			    str_cstr(&t->why));
	}
	smtp_rcpt_remote(r, t->ss->host, str_cstr(&t->r.text));
	r->tstate = T_DONE;
}

/* LMTP (RFC 2033 4.2): after the dot, one reply for each accepted
 * recipient, in the order of their RCPT commands.  A failure to read one
 * leaves it and the rest open ("message may be sent more than once"),
 * as a lost final reply does in SMTP; those already answered keep their
 * own status. */
static void lmtp_replies(trans_t *t)
{
	for (size_t k = 0; k < t->n; k++) {
		smtp_rcpt_t *r = &t->req->rcpt[t->idx[k]];
		int io;

		if (!open_rcpt(r) || r->tstate != T_OK)
			continue;
		io = smtp_reply_read(t->ss, t->cl->cfg.data_done_timeout_ms,
		    &t->r);
		if (io != SMTP_IO_OK) {
			fail_io(t, io, "sending end of data -- message may be "
			    "sent more than once");
			return;
		}
		if (t->r.code == 421)
			t->ss->broken = true;
		final_one(t, r);
	}
}

static void send_message(trans_t *t)
{
	smtp_client_t *cl = t->cl;
	bool content_err;
	int io, cls;

	stream_set_timeouts(t->ss->s, cl->cfg.data_xfer_timeout_ms,
	    cl->cfg.data_xfer_timeout_ms);
	if (smtp_send_body(t->ss->s, &t->req->content,
	    cl->cfg.line_length_limit, &content_err, &t->why) < 0) {
		if (content_err) {
			/* Hang up without the final dot: the server must not
			 * deliver half a message. */
			log_warning("%s: %s", t->req->queue_id,
			    str_cstr(&t->why));
			t->from_reply = false;
			fail_open(t, false, "4.3.0", false, str_cstr(&t->why));
			t->dead = true;
			t->ss->broken = true;
			return;
		}
		fail_io(t, stream_timedout(t->ss->s) ? SMTP_IO_TIMEOUT :
		    SMTP_IO_LOST, "sending message body");
		return;
	}
	if (cl->cfg.lmtp) {
		lmtp_replies(t);
		return;
	}
	io = smtp_reply_read(t->ss, cl->cfg.data_done_timeout_ms, &t->r);
	if (io != SMTP_IO_OK) {
		fail_io(t, io, "sending end of data -- message may be sent "
		    "more than once");
		return;
	}
	cls = t->r.code / 100;
	if (t->r.code == 421)
		t->ss->broken = true;
	if (cls == 2) {
		for (size_t k = 0; k < t->n; k++) {
			smtp_rcpt_t *r = &t->req->rcpt[t->idx[k]];
			bool passed = (t->ss->features & SMTP_F_DSN) != 0;
			if (!open_rcpt(r) || r->tstate != T_OK)
				continue;
			/* Without DSN support downstream, a requested
			 * success notice is ours to send: "relayed". */
			smtp_rcpt_result(r, SMTP_R_SENT, t->r.dsn, relay(t), "%s",
			    str_cstr(&t->r.text));
			smtp_rcpt_remote(r, t->ss->host, str_cstr(&t->r.text));
			if (!passed && (r->in.notify & DSN_NOTIFY_SUCCESS))
				r->action = DLV_ACT_RELAYED;
			r->dsn_passed = passed && r->in.notify != 0;
			r->tstate = T_DONE;
		}
		return;
	}
	said(t, "end of DATA");
	fail_open(t, true, t->r.dsn, cls == 5, str_cstr(&t->why));
}

/* One transaction for the recipients idx[0..n).  Returns false when the
 * session can take no more. */
static bool transaction(trans_t *t, bool reused, bool utf8)
{
	smtp_sess_t *ss = t->ss;

	t->qhead = t->qlen = 0;
	t->window = (ss->features & SMTP_F_PIPELINING) ? SMTP_PIPE_WINDOW : 1;
	t->mail_ok = t->mail_failed = t->stale = t->data_go = false;
	t->accepted = 0;
	for (size_t k = 0; k < t->n; k++) {
		t->req->rcpt[t->idx[k]].tstate = T_NONE;
		t->req->rcpt[t->idx[k]].again = false;
	}
	t->cl->stats.transactions++;
	if (reused) {
		str_set(&t->cmd, "RSET");
		send_cmd(t, C_RSET, 0);
	}
	mail_cmd(t, utf8);
	send_cmd(t, C_MAIL, 0);
	for (size_t k = 0; k < t->n; k++) {
		smtp_rcpt_t *r = &t->req->rcpt[t->idx[k]];
		if (t->window == 1)	/* no PIPELINING: MAIL must be OK first */
			drain(t);
		if (t->dead || t->mail_failed)
			break;
		rcpt_cmd(t, r);
		send_cmd(t, C_RCPT, t->idx[k]);
		if (r->tstate == T_NONE)
			r->tstate = T_SENT;
	}
	if (t->window == 1)		/* every reply is in: DATA if useful */
		drain(t);
	if (!t->dead && !t->mail_failed &&
	    (t->window > 1 || (t->mail_ok && t->accepted > 0))) {
		str_set(&t->cmd, "DATA");
		send_cmd(t, C_DATA, 0);
	}
	drain(t);
	if (t->stale)
		return false;
	if (t->data_go && !t->dead) {
		if (t->accepted > 0 && t->mail_ok) {
			send_message(t);
		} else {
			/* 354 with nobody accepted (a confused server):
			 * end the empty message, ignore the verdict. */
			stream_puts(ss->s, ".\r\n");
			if (smtp_reply_read(ss, t->cl->cfg.data_done_timeout_ms,
			    &t->r) != SMTP_IO_OK)
				ss->broken = t->dead = true;
		}
	}
	/* Recipients sent but never answered (the session died first). */
	t->from_reply = false;
	if (t->dead)
		fail_open(t, false, "4.4.2", false, str_len(&t->why) > 0 ?
		    str_cstr(&t->why) : "lost connection");
	return !t->dead;
}

static bool is_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

int smtp_session_deliver(smtp_client_t *cl, smtp_sess_t *ss,
    smtp_request_t *req, bool reused)
{
	trans_t t;
	bool need_utf8 = !is_ascii(req->sender);
	int rc = SMTP_TRANS_DONE;

	memset(&t, 0, sizeof(t));
	t.cl = cl;
	t.ss = ss;
	t.req = req;
	t.idx = xcalloc(req->nrcpt ? req->nrcpt : 1, sizeof(*t.idx));
	smtp_reply_init(&t.r);
	ss->uses++;
	for (size_t i = 0; i < req->nrcpt; i++)
		if (!is_ascii(req->rcpt[i].in.address))
			need_utf8 = true;
	/* A first pass with every pending recipient, then passes for those
	 * the server's recipient limit put off, while each pass gets some
	 * recipient accepted. */
	for (size_t pass = 0; pass <= req->nrcpt; pass++) {
		t.n = 0;
		for (size_t i = 0; i < req->nrcpt; i++) {
			smtp_rcpt_t *r = &req->rcpt[i];
			if (r->status == SMTP_R_PENDING && (pass == 0 || r->again))
				t.idx[t.n++] = i;
		}
		if (t.n == 0)
			break;
		if ((ss->features & SMTP_F_SIZE) && ss->size_limit > 0 &&
		    req->size > ss->size_limit) {
			for (size_t k = 0; k < t.n; k++)
				smtp_rcpt_result(&req->rcpt[t.idx[k]], SMTP_R_BOUNCE,
				    "5.3.4", str_cstr(&ss->relay), "message size "
				    "%llu exceeds size limit %llu of server %s",
				    (unsigned long long)req->size,
				    (unsigned long long)ss->size_limit,
				    str_cstr(&ss->namaddr));
			break;
		}
		if (need_utf8 && !(ss->features & SMTP_F_SMTPUTF8)) {
			for (size_t k = 0; k < t.n; k++)
				smtp_rcpt_result(&req->rcpt[t.idx[k]], SMTP_R_BOUNCE,
				    "5.6.7", str_cstr(&ss->relay), "SMTPUTF8 is "
				    "required, but was not offered by host %s",
				    str_cstr(&ss->namaddr));
			break;
		}
		bool ok = transaction(&t, reused && pass == 0,
		    need_utf8 || req->smtputf8);
		if (t.stale) {
			rc = SMTP_TRANS_STALE;
			break;
		}
		if (!ok)
			break;
		size_t again = 0;
		for (size_t k = 0; k < t.n; k++)
			if (req->rcpt[t.idx[k]].again &&
			    req->rcpt[t.idx[k]].status == SMTP_R_PENDING)
				again++;
		if (again == 0 || t.accepted == 0)
			break;
		/* The server's transaction state is clean after the final
		 * reply; a failed DATA leaves it mid-transaction. */
		if (!t.mail_ok || !t.data_go) {
			str_set(&t.cmd, "RSET");
			t.qhead = t.qlen = 0;
			t.window = 1;
			send_cmd(&t, C_RSET, 0);
			drain(&t);
			if (t.dead)
				break;
		}
	}
	for (size_t i = 0; i < req->nrcpt; i++)
		req->rcpt[i].again = false;
	smtp_reply_free(&t.r);
	str_release(&t.cmd);
	str_release(&t.why);
	free(t.idx);
	return rc;
}
