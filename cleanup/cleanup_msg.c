/* cleanup: one message, from the envelope to the committed queue file.
 *
 * The envelope is checked and written as it arrives (sender, attributes,
 * each recipient after rewriting and alias expansion).  The content's
 * header is collected (at most header_size_limit bytes), completed and
 * rewritten once its end is seen; recipients taken from it (-t) are
 * written then, before the first content record, so they are ordinary
 * envelope recipients.  The body is passed to the queue file as it comes.
 * The first problem is remembered; from then on input is only counted
 * and dropped, and the queue file is gone. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include "cleanup.h"
#include "content_filter.h"
#include "dsn_notify.h"
#include "log.h"
#include "maps.h"
#include "mem.h"
#include "pconfig.h"
#include "milter.h"
#include "qfile.h"
#include "statuslog.h"

typedef struct field {
	size_t off;		/* in hbuf */
	size_t len;		/* with continuation lines and terminator */
	size_t namelen;
	enum cleanup_hdr_kind kind;
	enum cleanup_checks_act act;	/* header_checks: IGNORE, PREPEND,
					 * REPLACE */
	size_t eoff, elen;	/* PREPEND/REPLACE text, in hedit */
} field_t;

/* Body lines longer than this are checked in pieces of this size. */
#define BODY_LINE_MAX 4096

enum cstate { C_HEADER, C_BODY };

struct cleanup_msg {
	cleanup_cfg_t *cfg;
	qfw_t *w;
	char id[QUEUE_ID_SIZE];
	bool committed;
	/* first error */
	int status;
	char dsn[16];
	str_t why;
	/* envelope */
	int flags;
	char *sender_given;
	str_t sender;		/* rewritten */
	char *full_name;
	int64_t uid;
	char *log_ident;
	char *client_name, *client_address, *helo_name, *protocol, *tls_info;
	char *received_auth;
	struct timeval arrival;
	size_t nrcpt;		/* written to the queue file */
	size_t given;		/* envelope recipients received */
	char *first_rcpt;	/* for "for <...>" in Received: */
	cleanup_addr_dup_t dup;
	/* content */
	enum cstate cstate;
	str_t hbuf;
	size_t scan;		/* start of the next line to look at */
	size_t probe;		/* no LF in hbuf[scan, probe) */
	long known_nl;		/* the partial line at scan is a header
				 * field with this name length (0: not
				 * known yet); both spare rescans when a
				 * long line comes in small pieces */
	field_t *fields;
	size_t nfields, cap;
	bool first_line_seen;
	const char *eol;	/* "\n" or "\r\n", from the first line */
	uint64_t size;		/* content bytes received */
	uint64_t written;	/* content bytes written */
	str_t message_id;	/* for the log */
	/* content checks */
	bool quiet;		/* fail() need not log: already logged */
	bool discard;		/* DISCARD: accepted, then dropped */
	bool hold;		/* HOLD: committed into hold/ */
	char *redirect;		/* REDIRECT: the one recipient left */
	char *filter;		/* content filter: envelope, then FILTER */
	str_t hkey;		/* a logical header */
	str_t hedit;		/* PREPEND/REPLACE texts */
	str_t bline;		/* the body line being collected */
	bool bpartial;		/* bline has begun */
	uint64_t bseen;		/* bytes of this body segment so far */
	size_t braw;		/* raw bytes of the line in bline */
	cleanup_mime_t *mime;	/* MIME structure: with any body-side check */
	/* milters (cleanup_milter.c) */
	bool edits_possible;	/* recipients tracked for DELRCPT */
	char **wrcpt;		/* recipients in queue-file order */
	size_t nwritten, wcap;
	milter_edits_t edits;	/* to apply at the end */
	str_t hold_reason;	/* milter quarantine */
	struct milters *milters;	/* non_smtpd_milters, this message */
	const char *milter_rcpt;	/* {rcpt_addr} */
	bool milter_data_sent;
	bool milter_bounce;	/* non_smtpd_milters rejected: bounce it */
	char bounce_dsn[16];
	str_t bounce_text;
};

static void cleanup_msg_milters_start(cleanup_msg_t *m);
static void cleanup_msg_milters_rcpt(cleanup_msg_t *m, const char *addr);
static void cleanup_msg_milters_data(cleanup_msg_t *m, const void *buf,
    size_t len);
static void cleanup_msg_milters_eom(cleanup_msg_t *m);

/* ---- Errors ----------------------------------------------------------------- */

static void fail(cleanup_msg_t *m, int status, const char *dsn, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

static void fail(cleanup_msg_t *m, int status, const char *dsn, const char *fmt,
    ...)
{
	va_list ap;
	str_t who = STR_INIT;

	if (m->status != CLEANUP_STAT_OK)
		return;
	m->status = status;
	bcopy_str(m->dsn, sizeof(m->dsn), dsn);
	va_start(ap, fmt);
	str_reset(&m->why);
	str_vcatf(&m->why, fmt, ap);
	va_end(ap);
	if (str_len(&m->why) > CLEANUP_TEXT_MAX)
		str_truncate(&m->why, CLEANUP_TEXT_MAX);
	if (m->log_ident != NULL)
		str_setf(&who, " (%s)", m->log_ident);
	if (m->quiet)
		;		/* the check that refused it has logged */
	else if (status == CLEANUP_STAT_PERM)
		log_info("%s%sreject: %s %s; from=<%s>%s", m->id,
		    m->id[0] ? ": " : "", dsn, str_cstr(&m->why),
		    m->sender_given != NULL ? m->sender_given : "", str_cstr(&who));
	else
		log_warning("%s%smessage not accepted, try again later: %s %s; "
		    "from=<%s>%s", m->id, m->id[0] ? ": " : "", dsn,
		    str_cstr(&m->why), m->sender_given != NULL ?
		    m->sender_given : "", str_cstr(&who));
	str_release(&who);
	if (m->w != NULL) {
		qfw_free(m->w);		/* removes the temporary file */
		m->w = NULL;
	}
	str_release(&m->hbuf);
	free(m->fields);
	m->fields = NULL;
	m->nfields = m->cap = 0;
}

static bool ok(const cleanup_msg_t *m)
{
	return m->status == CLEANUP_STAT_OK;
}

/* A queue file that cannot be made or written: the details (paths,
 * errno text) go to the log only; the client learns whether storage ran
 * out (4.3.1, RFC 3463) or something else failed. */
static void queue_failed(cleanup_msg_t *m, const char *what, const char *detail)
{
	bool full = strstr(detail, strerror(ENOSPC)) != NULL
#ifdef EDQUOT
	    || strstr(detail, strerror(EDQUOT)) != NULL
#endif
	    ;

	log_warning("%s%s%s: %s", m->id, m->id[0] ? ": " : "", what, detail);
	if (full)
		fail(m, CLEANUP_STAT_TEMP, "4.3.1", "insufficient system storage");
	else
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "queue file write error");
}

static void write_failed(cleanup_msg_t *m)
{
	queue_failed(m, "queue file write error",
	    m->w != NULL ? qfw_error(m->w) : "no file");
}

/* Printable text for replies and logs (client bytes escaped). */
static const char *pr(str_t *buf, const char *s)
{
	str_reset(buf);
	str_quote_printable(buf, s, strlen(s) > 300 ? 300 : strlen(s));
	return str_cstr(buf);
}

/* Text attributes: no control bytes, bounded. */
static bool text_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static char *dup_opt(const char *s)
{
	return s != NULL ? xstrdup(s) : NULL;
}

/* Sender or recipient rewriting: completion, then the canonical maps
 * unless the client asked for none (no_address_mappings). */
static int rewrite_addr(const cleanup_msg_t *m, bool sender, const char *addr,
    str_t *out, str_t *err)
{
	if (m->flags & CLEANUP_FLAG_NO_MAPPINGS) {
		cleanup_addr_complete(m->cfg, addr, out);
		return CLEANUP_ADDR_OK;
	}
	return sender ? cleanup_addr_rewrite_sender(m->cfg, addr, out, err) :
	    cleanup_addr_rewrite_recipient(m->cfg, addr, out, err);
}

/* ---- Recipients --------------------------------------------------------- */

/* Expands a rewritten recipient and writes what is new. */
static void add_recipient(cleanup_msg_t *m, const char *given, const char *addr,
    const char *orcpt, int notify)
{
	char **list;
	size_t n;
	str_t err = STR_INIT;

	if (m->flags & CLEANUP_FLAG_NO_MAPPINGS) {
		/* receive_override_options = no_address_mappings */
		list = xcalloc(1, sizeof(*list));
		list[0] = xstrdup(addr);
		n = 1;
	} else if (cleanup_addr_virtual_expand(m->cfg, addr, &list, &n,
	    &err) != CLEANUP_ADDR_OK) {
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "%s", str_cstr(&err));
		str_release(&err);
		return;
	}
	str_release(&err);
	for (size_t i = 0; i < n && ok(m); i++) {
		qf_rcpt_in_t r = { 0 };

		if (cleanup_addr_dup_seen(&m->dup, list[i]))
			continue;
		if (m->nrcpt >= (size_t)m->cfg->recipient_limit) {
			fail(m, CLEANUP_STAT_PERM, "5.5.3", "too many recipients "
			    "(more than %ld, cleanup_recipient_limit)",
			    m->cfg->recipient_limit);
			break;
		}
		r.address = list[i];
		if (m->cfg->enable_original_recipient &&
		    strcmp(given, list[i]) != 0)
			r.orig = given;
		r.orcpt = orcpt;
		r.notify = notify;
		if (qfw_rcpt(m->w, &r) < 0) {
			write_failed(m);
		} else {
			m->nrcpt++;
			if (m->edits_possible) {
				if (m->nwritten == m->wcap) {
					m->wcap = m->wcap ? 2 * m->wcap : 8;
					m->wrcpt = xreallocarray(m->wrcpt,
					    m->wcap, sizeof(*m->wrcpt));
				}
				m->wrcpt[m->nwritten++] = xstrdup(list[i]);
			}
		}
	}
	cleanup_addr_list_free(list, n);
}

static bool orcpt_ok(const char *s)
{
	const char *semi = strchr(s, ';');
	str_t dec = STR_INIT;
	bool good;

	if (semi == NULL || semi == s || strlen(s) > ADDR_ORCPT_MAX)
		return false;
	for (const char *p = s; p < semi; p++)
		if (!addr_is_atext((unsigned char)*p))
			return false;
	good = addr_xtext_decode(semi + 1, strlen(semi + 1), &dec);
	str_release(&dec);
	return good;
}

void cleanup_msg_rcpt(cleanup_msg_t *m, const char *address, const char *orcpt,
    bool has_notify, int32_t notify)
{
	str_t why = STR_INIT, tmp = STR_INIT, out = STR_INIT;

	m->given++;
	if (!ok(m))
		return;
	if (!cleanup_addr_valid(address, strlen(address), &why)) {
		fail(m, CLEANUP_STAT_PERM, "5.1.3", "bad recipient address "
		    "<%s>: %s", pr(&tmp, address), str_cstr(&why));
		goto out;
	}
	if (orcpt != NULL && !orcpt_ok(orcpt)) {
		fail(m, CLEANUP_STAT_PERM, "5.5.4", "bad ORCPT \"%s\" for <%s>",
		    pr(&tmp, orcpt), address);
		goto out;
	}
	if (m->milters != NULL) {
		cleanup_msg_milters_rcpt(m, address);
		if (!ok(m))
			goto out;
	}
	if (has_notify && !dsn_notify_valid(notify)) {
		fail(m, CLEANUP_STAT_PERM, "5.5.4", "bad NOTIFY value %d for <%s>",
		    (int)notify, address);
		goto out;
	}
	if (rewrite_addr(m, false, address, &out, &why) != CLEANUP_ADDR_OK) {
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "%s", str_cstr(&why));
		goto out;
	}
	if (m->first_rcpt == NULL)
		m->first_rcpt = xstrdup(str_cstr(&out));
	add_recipient(m, address, str_cstr(&out), orcpt, has_notify ? notify : 0);
out:
	str_release(&why);
	str_release(&tmp);
	str_release(&out);
}

/* ---- Envelope ----------------------------------------------------------- */

static const char *const reserved_attrs[] = {
	"client_name", "client_address", "client_port", "helo_name",
	"protocol", "sasl_method", "sasl_username", "log_ident",
	FILTER_ATTR, NULL,
};

static bool attr_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > QF_MAX_ATTR_NAME || !(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '_'))
			return false;
	return true;
}

/* Checks the envelope; false after fail(). */
static bool check_envelope(cleanup_msg_t *m, const cleanup_msg_envelope_t *env)
{
	str_t why = STR_INIT, tmp = STR_INIT;
	const struct { const char *name, *v; size_t max; } texts[] = {
		{ "full_name", env->full_name, 1000 },
		{ "log_ident", env->log_ident, CLEANUP_LOG_IDENT_MAX },
		{ "client_name", env->client_name, 1000 },
		{ "client_address", env->client_address, 100 },
		{ "client_port", env->client_port, 20 },
		{ "helo_name", env->helo_name, 1000 },
		{ "protocol", env->protocol, 64 },
		{ "tls_info", env->tls_info, 1000 },
		{ "sasl_method", env->sasl_method, 100 },
		{ "sasl_username", env->sasl_username, 1000 },
		{ "received_auth", env->received_auth, 1000 },
	};
	bool good = false;

	if (env->flags & ~CLEANUP_FLAG_MASK) {
		fail(m, CLEANUP_STAT_PERM, "5.5.4", "unsupported flags 0x%x",
		    (unsigned)env->flags);
		goto out;
	}
	if (env->sender[0] != '\0' &&
	    !cleanup_addr_valid(env->sender, strlen(env->sender), &why)) {
		fail(m, CLEANUP_STAT_PERM, "5.1.7", "bad sender address <%s>: %s",
		    pr(&tmp, env->sender), str_cstr(&why));
		goto out;
	}
	if (env->envid != NULL) {
		bool x = strlen(env->envid) <= ADDR_ENVID_MAX &&
		    addr_xtext_decode(env->envid, strlen(env->envid), &tmp);
		if (!x || env->envid[0] == '\0') {
			fail(m, CLEANUP_STAT_PERM, "5.5.4", "bad ENVID \"%s\"",
			    pr(&tmp, env->envid));
			goto out;
		}
	}
	if (env->ret < 0 || env->ret > 2) {
		fail(m, CLEANUP_STAT_PERM, "5.5.4", "bad RET value %d", env->ret);
		goto out;
	}
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		if (texts[i].v != NULL && !text_ok(texts[i].v, texts[i].max)) {
			fail(m, CLEANUP_STAT_PERM, "5.5.4", "bad %s \"%s\": control "
			    "bytes or longer than %zu bytes", texts[i].name,
			    pr(&tmp, texts[i].v), texts[i].max);
			goto out;
		}
	}
	if (env->content_filter != NULL && env->content_filter[0] != '\0' &&
	    !filter_valid(env->content_filter, &why)) {
		fail(m, CLEANUP_STAT_PERM, "5.5.4", "bad content_filter \"%s\": "
		    "%s", pr(&tmp, env->content_filter), str_cstr(&why));
		goto out;
	}
	if (env->nattrs > CLEANUP_ATTRS_MAX) {
		fail(m, CLEANUP_STAT_PERM, "5.5.4", "more than %d named attributes",
		    CLEANUP_ATTRS_MAX);
		goto out;
	}
	for (size_t i = 0; i < env->nattrs; i++) {
		const char *name = env->attrs[i].name;

		if (!attr_name_valid(name)) {
			fail(m, CLEANUP_STAT_PERM, "5.5.4", "bad attribute name "
			    "\"%s\"", pr(&tmp, name));
			goto out;
		}
		for (int k = 0; reserved_attrs[k] != NULL; k++)
			if (strcmp(name, reserved_attrs[k]) == 0) {
				fail(m, CLEANUP_STAT_PERM, "5.5.4", "attribute "
				    "name \"%s\" is reserved", name);
				goto out;
			}
		for (size_t j = 0; j < i; j++)
			if (strcmp(name, env->attrs[j].name) == 0) {
				fail(m, CLEANUP_STAT_PERM, "5.5.4", "attribute "
				    "\"%s\" given twice", name);
				goto out;
			}
		if (!text_ok(env->attrs[i].value, CLEANUP_ATTR_VALUE_MAX)) {
			fail(m, CLEANUP_STAT_PERM, "5.5.4", "bad value for "
			    "attribute \"%s\"", name);
			goto out;
		}
	}
	good = true;
out:
	str_release(&why);
	str_release(&tmp);
	return good;
}

cleanup_msg_t *cleanup_msg_new(cleanup_cfg_t *cfg,
    const cleanup_msg_envelope_t *env)
{
	cleanup_msg_t *m = xcalloc(1, sizeof(*m));
	str_t err = STR_INIT;
	const char *sender = env->sender != NULL ? env->sender : "";

	m->cfg = cfg;
	m->status = CLEANUP_STAT_OK;
	m->flags = env->flags;
	m->uid = env->uid;
	m->eol = "\n";
	m->cstate = C_HEADER;
	cleanup_addr_dup_init(&m->dup, cfg->dup_filter_limit);
	/* Only text that passes check_envelope is kept for logs. */
	m->log_ident = env->log_ident != NULL &&
	    text_ok(env->log_ident, CLEANUP_LOG_IDENT_MAX) ?
	    xstrdup(env->log_ident) : NULL;
	if (env->arrival_us > 0) {
		m->arrival.tv_sec = (time_t)(env->arrival_us / 1000000);
		m->arrival.tv_usec = (suseconds_t)(env->arrival_us % 1000000);
	} else {
		gettimeofday(&m->arrival, NULL);
	}

	m->w = qfw_create(&cfg->ql, cfg->queue, 0600, &err);
	if (m->w == NULL) {
		queue_failed(m, "cannot create queue file", str_cstr(&err));
		str_release(&err);
		return m;
	}
	bcopy_str(m->id, sizeof(m->id), qfw_id(m->w));
	/* REDIRECT marks the recipients written so far done. */
	m->edits_possible = (env->flags & CLEANUP_FLAG_MILTER) != 0 ||
	    cleanup_msg_milters_wanted(cfg, env);
	if (cfg->header_checks != NULL || cfg->mime_header_checks != NULL ||
	    cfg->nested_header_checks != NULL || cfg->body_checks != NULL ||
	    m->edits_possible)
		qfw_track_rcpts(m->w);
	if (qfw_arrival(m->w, &m->arrival) < 0) {
		write_failed(m);
		goto out;
	}
	{
		str_t tmp = STR_INIT;
		m->sender_given = xstrdup(pr(&tmp, sender));
		str_release(&tmp);
	}
	if (!check_envelope(m, env))
		goto out;
	m->full_name = dup_opt(env->full_name);
	m->client_name = dup_opt(env->client_name);
	m->client_address = dup_opt(env->client_address);
	m->helo_name = dup_opt(env->helo_name);
	m->protocol = dup_opt(env->protocol);
	m->tls_info = dup_opt(env->tls_info);
	m->received_auth = dup_opt(env->received_auth);
	if (env->content_filter != NULL && env->content_filter[0] != '\0')
		m->filter = xstrdup(env->content_filter);

	/* The client= (smtpd) and uid= from= (pickup) lines are the
	 * clients' own, as in Postfix: CLEANUP_FLAG_QUEUE_ID gives them the
	 * queue ID for it (cleanup_session.c). */
	if (rewrite_addr(m, true, sender, &m->sender,
	    &err) != CLEANUP_ADDR_OK) {
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "%s", str_cstr(&err));
		goto out;
	}
	if (qfw_sender(m->w, str_cstr(&m->sender)) < 0 ||
	    (env->envid != NULL && qfw_envid(m->w, env->envid) < 0) ||
	    (env->ret != 0 && qfw_ret(m->w, env->ret) < 0)) {
		write_failed(m);
		goto out;
	}
	const struct { const char *n, *v; } own[] = {
		{ "log_ident", env->log_ident },
		{ "client_name", env->client_name },
		{ "client_address", env->client_address },
		{ "client_port", env->client_port },
		{ "helo_name", env->helo_name },
		{ "protocol", env->protocol },
		{ "sasl_method", env->sasl_method },
		{ "sasl_username", env->sasl_username },
	};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (own[i].v != NULL && qfw_attr(m->w, own[i].n, own[i].v) < 0) {
			write_failed(m);
			goto out;
		}
	for (size_t i = 0; i < env->nattrs; i++)
		if (qfw_attr(m->w, env->attrs[i].name, env->attrs[i].value) < 0) {
			write_failed(m);
			goto out;
		}
	if (cleanup_msg_milters_wanted(cfg, env))
		cleanup_msg_milters_start(m);
out:
	str_release(&err);
	return m;
}

bool cleanup_msg_ok(const cleanup_msg_t *m)
{
	return ok(m);
}

const char *cleanup_msg_queue_id(const cleanup_msg_t *m)
{
	return m->id;
}

/* ---- Content: the header ------------------------------------------------- */

static void content_out(cleanup_msg_t *m, const void *p, size_t n)
{
	if (!ok(m) || n == 0 || m->discard)
		return;
	if (qfw_content(m->w, p, n) < 0)
		write_failed(m);
	else
		m->written += n;
}

/* Header rewriting callback. */
typedef struct hctx {
	cleanup_msg_t *m;
	bool sender_type;
	bool failed;
	str_t err;
} hctx_t;

static bool hdr_map(const addr_hdr_entry_t *e, str_t *newaddr, void *ctx)
{
	hctx_t *h = ctx;
	int rc;

	if (h->failed)
		return false;
	rc = rewrite_addr(h->m, h->sender_type, e->addr, newaddr, &h->err);
	if (rc != CLEANUP_ADDR_OK) {
		h->failed = true;
		str_reset(newaddr);
		return false;
	}
	if (strcmp(str_cstr(newaddr), e->addr) == 0) {
		str_reset(newaddr);
		return false;
	}
	return true;
}

/* The value of field f: after the colon, without the final terminator. */
static void field_value(const cleanup_msg_t *m, const field_t *f,
    const char **v, size_t *vlen, size_t *termlen)
{
	const char *p = str_cstr(&m->hbuf) + f->off;
	const char *colon = memchr(p, ':', f->len);
	size_t start = (size_t)(colon - p) + 1, end = f->len;

	*termlen = 0;
	if (end > start && p[end - 1] == '\n') {
		end--;
		(*termlen)++;
		if (end > start && p[end - 1] == '\r') {
			end--;
			(*termlen)++;
		}
	}
	*v = p + start;
	*vlen = end - start;
}

/* Recipients of one To/Cc/Bcc field for -t. */
static void extract_field(cleanup_msg_t *m, const field_t *f)
{
	const char *v;
	size_t vlen, tl;
	addr_hdr_list_t list = ADDR_HDR_LIST_INIT;
	str_t out = STR_INIT, err = STR_INIT;

	field_value(m, f, &v, &vlen, &tl);
	addr_hdr_parse(v, vlen, &list);
	if (list.nbad > 0 || list.dropped > 0) {
		str_t name = STR_INIT;
		str_append(&name, str_cstr(&m->hbuf) + f->off, f->namelen);
		for (size_t i = 0; i < list.n; i++)
			if (list.v[i].flags & ADDR_H_BAD) {
				str_t bad = STR_INIT;
				str_quote_printable(&bad, v + list.v[i].start,
				    list.v[i].end - list.v[i].start > 200 ? 200 :
				    list.v[i].end - list.v[i].start);
				fail(m, CLEANUP_STAT_PERM, "5.1.3", "bad address "
				    "\"%s\" in %s: header: %s", str_cstr(&bad),
				    str_cstr(&name), list.v[i].error);
				str_release(&bad);
				break;
			}
		if (ok(m))
			fail(m, CLEANUP_STAT_PERM, "5.1.3", "more than %d "
			    "addresses in one %s: header", ADDR_HDR_ADDRS_MAX,
			    str_cstr(&name));
		str_release(&name);
	}
	for (size_t i = 0; i < list.n && ok(m); i++) {
		const addr_hdr_entry_t *e = &list.v[i];

		if (e->addr[0] == '\0')
			continue;	/* <> is nobody */
		if (rewrite_addr(m, false, e->addr, &out,
		    &err) != CLEANUP_ADDR_OK) {
			fail(m, CLEANUP_STAT_TEMP, "4.3.0", "%s", str_cstr(&err));
			break;
		}
		add_recipient(m, e->addr, str_cstr(&out), NULL, 0);
	}
	addr_hdr_list_free(&list);
	str_release(&out);
	str_release(&err);
}

static void add_received(cleanup_msg_t *m, str_t *out)
{
	const char *eol = m->eol;
	const cleanup_cfg_t *cfg = m->cfg;

	if (m->flags & CLEANUP_FLAG_SMTP) {
		const char *name = m->client_name ? m->client_name : "unknown";
		const char *helo = m->helo_name ? m->helo_name : name;

		str_catf(out, "Received: from %s", helo);
		if (m->client_address != NULL)
			str_catf(out, " (%s [%s%s])", name,
			    strchr(m->client_address, ':') ? "IPv6:" : "",
			    m->client_address);
		if (m->tls_info != NULL)
			str_catf(out, "%s\t(%s)", eol, m->tls_info);
		if (m->received_auth != NULL)
			str_catf(out, "%s\t(Authenticated sender: %s)", eol,
			    m->received_auth);
		str_catf(out, "%s\tby %s (%s) with %s id %s", eol,
		    cfg->myhostname, cfg->mail_name,
		    m->protocol ? m->protocol : "SMTP", m->id);
		if (m->given == 1 && m->first_rcpt != NULL) {
			str_t ext = STR_INIT;
			addr_externalize(m->first_rcpt, &ext);
			str_catf(out, "%s\tfor <%s>", eol, str_cstr(&ext));
			str_release(&ext);
		}
	} else if (m->uid >= 0) {
		str_catf(out, "Received: by %s (%s, from userid %lld)%s\tid %s",
		    cfg->myhostname, cfg->mail_name, (long long)m->uid, eol,
		    m->id);
	} else {
		return;
	}
	str_cat(out, "; ");
	cleanup_hdr_date(m->arrival.tv_sec, out);
	str_cat(out, eol);
}

/* ---- Content checks (header_checks, body_checks) ------------------------- */

/* " from=<s> to=<r> proto=P helo=<h>" of Postfix's log lines about a
 * message (what is known of it). */
static void log_envelope(const cleanup_msg_t *m, str_t *b)
{
	str_catf(b, " from=<%s>", m->sender_given != NULL ?
	    m->sender_given : "");
	if (m->first_rcpt != NULL)
		str_catf(b, " to=<%s>", m->first_rcpt);
	if (m->protocol != NULL)
		str_catf(b, " proto=%s", m->protocol);
	if (m->helo_name != NULL)
		str_catf(b, " helo=<%s>", m->helo_name);
}

/* Postfix's log line for a check's action:
 * "ID: reject: header Subject: x from NAME[ADDR]; from=<s> to=<r>
 * proto=ESMTP helo=<h>: 5.7.1 text" ("from local;" for local mail). */
static void act_log(cleanup_msg_t *m, const char *action, const char *class,
    const char *what, size_t wlen, const char *text, size_t tlen)
{
	str_t b = STR_INIT;

	str_catf(&b, "%s: %s: %s ", m->id, action, class);
	str_quote_printable(&b, what, wlen > 200 ? 200 : wlen);
	if (m->client_name != NULL && m->client_address != NULL)
		str_catf(&b, " from %s[%s];", m->client_name, m->client_address);
	else
		str_cat(&b, " from local;");
	log_envelope(m, &b);
	if (tlen > 0) {
		str_cat(&b, ": ");
		str_quote_printable(&b, text, tlen > 500 ? 500 : tlen);
	}
	log_info("%s", str_cstr(&b));
	str_release(&b);
}

/* Looks key up in the check tables of param; the action, with its text
 * in *text, *tlen.  A table that fails defers the message. */
static enum cleanup_checks_act check_lookup(cleanup_msg_t *m, struct maps *maps,
    const char *key, const char **text, size_t *tlen)
{
	const char *value;
	str_t why = STR_INIT;
	int rc = maps_get(maps, key, &value, &why);

	if (rc < 0) {
		log_warning("%s: %s lookup error: %s", m->id, maps_param(maps),
		    str_cstr(&why));
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "%s map lookup problem",
		    maps_param(maps));
	}
	str_release(&why);
	if (rc <= 0)
		return CA_NONE;
	return cleanup_checks_act_parse(value, text, tlen);
}

/* The actions every check has; false when act is not one of them. */
static bool common_action(cleanup_msg_t *m, enum cleanup_checks_act act,
    const char *class,
    const char *what, size_t wlen, const char *text, size_t tlen)
{
	str_t t = STR_INIT;

	switch (act) {
	case CA_NONE:
		break;
	case CA_REJECT:
		if (tlen == 0) {
			text = "message content rejected";
			tlen = strlen(text);
		}
		str_cat(&t, "5.7.1 ");
		str_quote_printable(&t, text, tlen > 300 ? 300 : tlen);
		act_log(m, "reject", class, what, wlen, str_cstr(&t),
		    str_len(&t));
		m->quiet = true;
		fail(m, CLEANUP_STAT_PERM, "5.7.1", "%s", str_cstr(&t) + 6);
		break;
	case CA_WARN:
		act_log(m, "warning", class, what, wlen, text, tlen);
		break;
	case CA_DISCARD:
		act_log(m, "discard", class, what, wlen, text, tlen);
		m->discard = true;
		break;
	case CA_HOLD:
		act_log(m, "hold", class, what, wlen, text, tlen);
		m->hold = true;
		break;
	case CA_REDIRECT: {
		char **list = NULL;
		size_t n = 0;
		str_t a = STR_INIT, err = STR_INIT;

		str_append(&a, text, tlen);
		if (cleanup_addr_parse_value(m->cfg, str_cstr(&a), &list, &n,
		    &err) < 0 || n != 1 || list[0][0] == '\0') {
			str_t w = STR_INIT;
			str_quote_printable(&w, text, tlen > 100 ? 100 : tlen);
			log_warning("%s: REDIRECT needs one address, not \"%s\"%s%s; "
			    "ignored", m->id, str_cstr(&w), str_len(&err) ? ": " :
			    "", str_cstr(&err));
			str_release(&w);
		} else {
			act_log(m, "redirect", class, what, wlen, text, tlen);
			free(m->redirect);
			m->redirect = xstrdup(list[0]);
		}
		if (list != NULL)
			cleanup_addr_list_free(list, n);
		str_release(&a);
		str_release(&err);
		break;
	}
	case CA_FILTER: {
		str_t v = STR_INIT, why = STR_INIT;

		/* The last FILTER wins, over the client's content_filter
		 * too (Postfix).  A malformed one was reported with its
		 * file:line when the table was opened. */
		str_append(&v, text, tlen);
		if (!filter_valid(str_cstr(&v), &why)) {
			str_t w = STR_INIT;
			str_quote_printable(&w, text, tlen > 100 ? 100 : tlen);
			log_warning("%s: FILTER needs transport:nexthop, not "
			    "\"%s\": %s; ignored", m->id, str_cstr(&w),
			    str_cstr(&why));
			str_release(&w);
		} else {
			act_log(m, "filter", class, what, wlen, text, tlen);
			free(m->filter);
			m->filter = str_steal(&v);
		}
		str_release(&v);
		str_release(&why);
		break;
	}
	default:
		str_release(&t);
		return false;
	}
	str_release(&t);
	return true;
}

static void unsupported(cleanup_msg_t *m, const char *param, const char *value,
    const char *class, const char *what, size_t wlen)
{
	str_t v = STR_INIT, w = STR_INIT;
	size_t n = strcspn(value, " \t");

	str_quote_printable(&v, value, n > 40 ? 40 : n);
	str_quote_printable(&w, what, wlen > 200 ? 200 : wlen);
	log_warning("%s: %s: action \"%s\" is not supported by Petrel "
	    "(%s %s); ignored", m->id, param, str_cstr(&v), class,
	    str_cstr(&w));
	str_release(&v);
	str_release(&w);
}

/* The logical header of field f into out: folded lines joined (the
 * line ends taken out, the white space kept), as Postfix does. */
static void logical_header(const cleanup_msg_t *m, const field_t *f, str_t *out)
{
	const char *p = str_cstr(&m->hbuf) + f->off;
	size_t len = f->len;

	str_reset(out);
	for (size_t j = 0; j < len; j++) {
		if (p[j] == '\n')
			continue;
		if (p[j] == '\r' && j + 1 < len && p[j + 1] == '\n')
			continue;
		str_append(out, p + j, 1);
	}
}

/* header_checks (mime_header_checks for Content-* and MIME-Version) on
 * each field of the primary header, in order, until a REJECT or
 * DISCARD.  IGNORE, PREPEND and REPLACE are remembered in the field for
 * finish_header. */
static void check_headers(cleanup_msg_t *m)
{
	for (size_t i = 0; i < m->nfields && ok(m) && !m->discard; i++) {
		field_t *f = &m->fields[i];
		const char *text;
		size_t tlen;
		enum cleanup_checks_act act;
		struct maps *maps;

		logical_header(m, f, &m->hkey);
		maps = cleanup_mime_is_header(str_cstr(&m->hkey),
		    str_len(&m->hkey)) ?
		    m->cfg->mime_header_checks : m->cfg->header_checks;
		if (maps == NULL)
			continue;
		act = check_lookup(m, maps, str_cstr(&m->hkey), &text, &tlen);
		if (common_action(m, act, "header", str_cstr(&m->hkey),
		    str_len(&m->hkey), text, tlen))
			continue;
		switch (act) {
		case CA_IGNORE:
			f->act = CA_IGNORE;
			break;
		case CA_PREPEND:
		case CA_REPLACE:
			if (tlen == 0 ||
			    cleanup_hdr_name_len(text, tlen, true) <= 0) {
				str_t t = STR_INIT;
				str_quote_printable(&t, text, tlen > 100 ? 100 : tlen);
				log_warning("%s: header_checks: %s text is not a "
				    "header field: \"%s\"; ignored", m->id,
				    act == CA_PREPEND ? "PREPEND" : "REPLACE",
				    str_cstr(&t));
				str_release(&t);
				break;
			}
			f->act = act;
			f->eoff = str_len(&m->hedit);
			f->elen = tlen;
			str_append(&m->hedit, text, tlen);
			break;
		default: {
			const char *value;
			/* The answer again, for the log. */
			if (maps_get(maps, str_cstr(&m->hkey), &value, NULL) == 1)
				unsupported(m, maps_param(maps), value, "header",
				    str_cstr(&m->hkey), str_len(&m->hkey));
			break;
		}
		}
	}
	str_release(&m->hkey);
}

/* A body line (MIME: not a part header): body_checks, when it begins
 * within body_checks_size_limit bytes of its segment. */
static void mime_body(void *ctx, const char *l, size_t len)
{
	cleanup_msg_t *m = ctx;
	const char *text;
	size_t tlen;
	enum cleanup_checks_act act;
	uint64_t at = m->bseen;

	m->bseen += m->braw;
	if (m->cfg->body_checks == NULL || !ok(m) || m->discard ||
	    at >= (uint64_t)m->cfg->body_checks_size_limit)
		return;
	act = check_lookup(m, m->cfg->body_checks, l, &text, &tlen);
	if (!common_action(m, act, "body", l, len, text, tlen)) {
		const char *value;
		if (maps_get(m->cfg->body_checks, l, &value, NULL) == 1)
			unsupported(m, "body_checks", value, "body", l, len);
	}
}

static void mime_body_start(void *ctx)
{
	((cleanup_msg_t *)ctx)->bseen = 0;
}

/* A header of a MIME part or of an attached message: MIME headers and
 * other part headers go to mime_header_checks, the other headers of an
 * attached message to nested_header_checks.  The content streams
 * through unchanged, so only the actions that do not edit it apply. */
static void mime_header(void *ctx, int hclass, const char *h, size_t len)
{
	cleanup_msg_t *m = ctx;
	struct maps *maps;
	const char *text;
	size_t tlen;
	enum cleanup_checks_act act;

	if (!ok(m) || m->discard)
		return;
	maps = hclass == CLEANUP_MIME_NESTED &&
	    !cleanup_mime_is_header(h, len) ?
	    m->cfg->nested_header_checks : m->cfg->mime_header_checks;
	if (maps == NULL)
		return;
	str_set(&m->hkey, "");
	str_append(&m->hkey, h, len);
	act = check_lookup(m, maps, str_cstr(&m->hkey), &text, &tlen);
	if (!common_action(m, act, "header", h, len, text, tlen)) {
		const char *value;
		if (maps_get(maps, str_cstr(&m->hkey), &value, NULL) == 1)
			unsupported(m, maps_param(maps), value, "header", h, len);
	}
}

/* The line collected in bline (CR LF or LF taken off), braw bytes of
 * content. */
static void body_line(cleanup_msg_t *m)
{
	size_t len = str_len(&m->bline);

	m->bpartial = false;
	if (len > 0 && str_cstr(&m->bline)[len - 1] == '\r')
		str_truncate(&m->bline, --len);
	cleanup_mime_line(m->mime, str_cstr(&m->bline), len);
	m->braw = 0;
	str_reset(&m->bline);
}

/* Body content as it passes, cut into lines for the MIME reader and
 * body_checks.  Nothing at all without body-side checks (mime NULL). */
static void body_in(cleanup_msg_t *m, const char *p, size_t n)
{
	if (m->mime == NULL)
		return;
	while (n > 0 && ok(m) && !m->discard) {
		const char *lf;
		size_t take, room;

		m->bpartial = true;
		lf = memchr(p, '\n', n);
		take = lf != NULL ? (size_t)(lf - p) : n;
		room = BODY_LINE_MAX - str_len(&m->bline);
		if (take > room) {
			/* A long line: this piece is read as a line. */
			str_append(&m->bline, p, room);
			m->braw += room;
			p += room;
			n -= room;
			body_line(m);
			continue;
		}
		str_append(&m->bline, p, take);
		m->braw += take;
		p += take;
		n -= take;
		if (lf == NULL)
			return;
		p++;
		n--;
		m->braw++;
		body_line(m);
	}
}

/* The end of the content: a last line without its terminator. */
static void body_end(cleanup_msg_t *m)
{
	if (m->mime == NULL || !ok(m) || m->discard)
		return;
	if (m->bpartial)
		body_line(m);
	cleanup_mime_end(m->mime);
}

/* The body begins: the MIME reader, when there are body-side checks,
 * starts from the primary header's Content-Type. */
static void body_begin(cleanup_msg_t *m)
{
	const cleanup_cfg_t *cfg = m->cfg;

	if ((cfg->body_checks == NULL && cfg->mime_header_checks == NULL &&
	    cfg->nested_header_checks == NULL) ||
	    (m->flags & CLEANUP_FLAG_NO_CHECKS))
		return;
	m->mime = cleanup_mime_new(cfg->header_size_limit > (1 << 20) ?
	    1 << 20 : (size_t)cfg->header_size_limit, mime_header, mime_body,
	    mime_body_start, m);
	for (size_t i = 0; i < m->nfields; i++) {
		const field_t *f = &m->fields[i];
		if (f->namelen == 12 && strncasecmp(str_cstr(&m->hbuf) + f->off,
		    "Content-Type", 12) == 0 && f->act != CA_IGNORE &&
		    f->act != CA_REPLACE) {
			const char *h, *colon;

			logical_header(m, f, &m->hkey);
			h = str_cstr(&m->hkey);
			colon = memchr(h, ':', str_len(&m->hkey));
			if (colon != NULL) {
				size_t at = (size_t)(colon - h) + 1;
				cleanup_mime_primary(m->mime, h + at,
				    str_len(&m->hkey) - at);
				return;
			}
			break;
		}
	}
	cleanup_mime_primary(m->mime, NULL, 0);
}

/* The header is complete (hbuf[0, body) holds its fields; need_blank:
 * the body starts with a line that is not a header, so the empty line
 * that separates them must be added). */
static void finish_header(cleanup_msg_t *m, size_t body, bool need_blank)
{
	const char *h = str_cstr(&m->hbuf);
	size_t received = 0;
	bool have_mid = false, have_date = false, have_from = false;
	bool resent = false, extract = (m->flags & CLEANUP_FLAG_EXTRACT) != 0;
	bool smtp = (m->flags & CLEANUP_FLAG_SMTP) != 0;
	str_t out = STR_INIT, tmp = STR_INIT;
	hctx_t hc = { m, false, false, STR_INIT };

	if ((m->cfg->header_checks != NULL ||
	    m->cfg->mime_header_checks != NULL) &&
	    !(m->flags & CLEANUP_FLAG_NO_CHECKS)) {
		check_headers(m);
		if (!ok(m))
			goto out;
	}
	for (size_t i = 0; i < m->nfields; i++) {
		field_t *f = &m->fields[i];

		if (memchr(h + f->off, '\0', f->len) != NULL) {
			str_t name = STR_INIT;
			str_quote_printable(&name, h + f->off, f->namelen > 100 ?
			    100 : f->namelen);
			fail(m, CLEANUP_STAT_PERM, "5.6.0", "NUL byte in message "
			    "header %s:", str_cstr(&name));
			str_release(&name);
			goto out;
		}
		if (f->act == CA_IGNORE || f->act == CA_REPLACE)
			continue;	/* gone */
		switch (f->kind) {
		case HK_RECEIVED: received++; break;
		case HK_MESSAGE_ID: have_mid = true; break;
		case HK_DATE: have_date = true; break;
		case HK_FROM: have_from = true; break;
		case HK_RESENT_TO: case HK_RESENT_CC: case HK_RESENT_BCC:
			resent = true;
			break;
		default: break;
		}
	}
	if (smtp || m->uid >= 0)
		received++;		/* the one we add */
	if ((long)received > m->cfg->hopcount_limit) {
		fail(m, CLEANUP_STAT_PERM, "5.4.6", "too many hops: %zu Received: "
		    "headers, more than hopcount_limit %ld (mail loop?)",
		    received, m->cfg->hopcount_limit);
		goto out;
	}
	if (extract) {
		/* sendmail -t: the Resent- headers when there are any. */
		for (size_t i = 0; i < m->nfields && ok(m); i++) {
			enum cleanup_hdr_kind k = m->fields[i].kind;
			if (m->fields[i].act == CA_IGNORE ||
			    m->fields[i].act == CA_REPLACE)
				continue;
			if (resent ? (k == HK_RESENT_TO || k == HK_RESENT_CC ||
			    k == HK_RESENT_BCC) : (k == HK_TO || k == HK_CC ||
			    k == HK_BCC))
				extract_field(m, &m->fields[i]);
		}
		if (!ok(m))
			goto out;
	}
	if (m->nrcpt == 0) {
		fail(m, CLEANUP_STAT_PERM, "5.1.0", extract ? "no recipient "
		    "addresses found in the message header" : "no recipients");
		goto out;
	}

	/* The completed header. */
	if (body > 0 && h[body - 1] != '\n')
		need_blank = true;	/* header only, last line unterminated */
	add_received(m, &out);
	for (size_t i = 0; i < m->nfields; i++) {
		field_t *f = &m->fields[i];
		const char *v;
		size_t vlen, tl, n;

		if (f->act == CA_PREPEND) {
			str_append(&out, str_cstr(&m->hedit) + f->eoff, f->elen);
			str_cat(&out, m->eol);
		} else if (f->act == CA_IGNORE) {
			continue;
		} else if (f->act == CA_REPLACE) {
			str_append(&out, str_cstr(&m->hedit) + f->eoff, f->elen);
			str_cat(&out, m->eol);
			continue;
		}
		if (f->kind == HK_RETURN_PATH)
			continue;
		if (!smtp && (f->kind == HK_BCC || f->kind == HK_RESENT_BCC))
			continue;
		if (f->kind == HK_MESSAGE_ID && str_len(&m->message_id) == 0) {
			/* Logged unfolded and trimmed, escaped, bounded. */
			field_value(m, f, &v, &vlen, &tl);
			while (vlen > 0 && (*v == ' ' || *v == '\t' ||
			    *v == '\r' || *v == '\n')) {
				v++;
				vlen--;
			}
			while (vlen > 0 && (v[vlen - 1] == ' ' ||
			    v[vlen - 1] == '\t' || v[vlen - 1] == '\r' ||
			    v[vlen - 1] == '\n'))
				vlen--;
			str_quote_printable(&m->message_id, v,
			    vlen > 500 ? 500 : vlen);
		}
		if (!cleanup_hdr_is_address(f->kind)) {
			str_append(&out, h + f->off, f->len);
			continue;
		}
		field_value(m, f, &v, &vlen, &tl);
		hc.sender_type = cleanup_hdr_is_sender(f->kind);
		str_reset(&tmp);
		n = addr_hdr_rewrite(v, vlen, hdr_map, &hc, &tmp);
		if (hc.failed) {
			fail(m, CLEANUP_STAT_TEMP, "4.3.0", "%s",
			    str_cstr(&hc.err));
			goto out;
		}
		if (n == 0) {
			str_append(&out, h + f->off, f->len);
		} else {
			str_append(&out, h + f->off, (size_t)(v - (h + f->off)));
			str_append(&out, str_cstr(&tmp), str_len(&tmp));
			str_append(&out, v + vlen, tl);
		}
		str_reset(&tmp);
	}
	if (m->nfields > 0) {
		const field_t *last = &m->fields[m->nfields - 1];
		if (h[last->off + last->len - 1] != '\n' &&
		    last->act != CA_IGNORE && last->act != CA_REPLACE)
			str_cat(&out, m->eol);
	}
	if (!have_mid) {
		str_reset(&tmp);
		cleanup_hdr_message_id(m->arrival.tv_sec, m->id,
		    m->cfg->myhostname, &tmp);
		str_catf(&out, "Message-ID: %s%s", str_cstr(&tmp), m->eol);
		str_set(&m->message_id, str_cstr(&tmp));
	}
	if (!have_date) {
		str_cat(&out, "Date: ");
		cleanup_hdr_date(m->arrival.tv_sec, &out);
		str_cat(&out, m->eol);
	}
	if (!have_from) {
		str_t a = STR_INIT;
		if (str_len(&m->sender) == 0) {
			str_setf(&tmp, "MAILER-DAEMON@%s", m->cfg->myorigin);
			addr_externalize(str_cstr(&tmp), &a);
		} else {
			addr_externalize(str_cstr(&m->sender), &a);
		}
		str_cat(&out, "From: ");
		if (m->full_name != NULL && m->full_name[0] != '\0') {
			cleanup_hdr_phrase(m->full_name, &out);
			str_catf(&out, " <%s>", str_cstr(&a));
		} else {
			str_cat(&out, str_cstr(&a));
		}
		str_cat(&out, m->eol);
		str_release(&a);
	}
	if (need_blank && body < str_len(&m->hbuf))
		str_cat(&out, m->eol);
	if (str_len(&m->message_id) > 0)
		log_info("%s: message-id=%s", m->id, str_cstr(&m->message_id));
	content_out(m, str_cstr(&out), str_len(&out));
out:
	str_release(&out);
	str_release(&tmp);
	str_release(&hc.err);
}

/* Moves from header to body: the completed header, then what is left
 * of hbuf. */
static void end_header(cleanup_msg_t *m, size_t body, bool need_blank)
{
	if (!m->first_line_seen) {
		/* Decided before the first line ended: look for its end in
		 * what is there. */
		const char *h = str_cstr(&m->hbuf);
		const char *lf = memchr(h, '\n', str_len(&m->hbuf));
		if (lf != NULL && lf > h && lf[-1] == '\r')
			m->eol = "\r\n";
		m->first_line_seen = true;
	}
	finish_header(m, body, need_blank);
	if (ok(m))
		body_begin(m);
	if (ok(m)) {
		content_out(m, str_cstr(&m->hbuf) + body,
		    str_len(&m->hbuf) - body);
		body_in(m, str_cstr(&m->hbuf) + body, str_len(&m->hbuf) - body);
	}
	m->cstate = C_BODY;
	str_release(&m->hbuf);
	free(m->fields);
	m->fields = NULL;
	m->nfields = m->cap = 0;
}

static void add_field(cleanup_msg_t *m, size_t off, size_t len, size_t namelen)
{
	if (m->nfields == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 32;
		m->fields = xreallocarray(m->fields, m->cap, sizeof(*m->fields));
	}
	m->fields[m->nfields].off = off;
	m->fields[m->nfields].len = len;
	m->fields[m->nfields].namelen = namelen;
	m->fields[m->nfields].act = CA_NONE;
	m->fields[m->nfields].eoff = m->fields[m->nfields].elen = 0;
	m->fields[m->nfields].kind = cleanup_hdr_kind(str_cstr(&m->hbuf) + off,
	    namelen);
	m->nfields++;
}

static void header_too_big(cleanup_msg_t *m)
{
	fail(m, CLEANUP_STAT_PERM, "5.3.4", "message header larger than "
	    "header_size_limit (%ld bytes)", m->cfg->header_size_limit);
}

/* Looks at the lines collected so far; final: no more content comes. */
static void header_scan(cleanup_msg_t *m, bool final)
{
	for (;;) {
		const char *h = str_cstr(&m->hbuf);
		size_t len = str_len(&m->hbuf), start = m->scan;
		const char *p = h + start;
		size_t from = m->probe > start ? m->probe : start;
		const char *lf = memchr(h + from, '\n', len - from);
		size_t llen = lf != NULL ? (size_t)(lf - p) + 1 : len - start;
		bool complete = lf != NULL || final;
		long nl;

		if (start == len) {
			if (final)
				end_header(m, start, false);
			return;
		}
		if (!m->first_line_seen && lf != NULL) {
			m->first_line_seen = true;
			if (llen >= 2 && p[llen - 2] == '\r')
				m->eol = "\r\n";
		}
		if ((llen == 1 && p[0] == '\n') ||
		    (llen == 2 && p[0] == '\r' && p[1] == '\n')) {
			end_header(m, start, false);	/* the empty line */
			return;
		}
		if (llen == 1 && p[0] == '\r' && !complete)
			return;		/* maybe CR LF */
		if (p[0] == ' ' || p[0] == '\t') {
			if (m->nfields == 0) {
				end_header(m, start, true);
				return;
			}
			if (!complete)
				goto partial;
			m->fields[m->nfields - 1].len += llen;
		} else {
			nl = m->known_nl > 0 ? m->known_nl :
			    cleanup_hdr_name_len(p, llen, complete);
			if (nl > 0)
				m->known_nl = nl;
			if (nl == 0) {
				end_header(m, start, true);
				return;
			}
			if (nl < 0 || !complete)
				goto partial;
			add_field(m, start, llen, (size_t)nl);
		}
		m->scan = start + llen;
		m->known_nl = 0;
		if ((long)m->scan > m->cfg->header_size_limit) {
			header_too_big(m);
			return;
		}
		continue;
partial:
		m->probe = len;
		if ((long)len > m->cfg->header_size_limit)
			header_too_big(m);
		return;
	}
}

void cleanup_msg_data(cleanup_msg_t *m, const void *buf, size_t len)
{
	m->size += len;
	if (!ok(m))
		return;
	if (m->cfg->message_size_limit > 0 &&
	    m->size > (uint64_t)m->cfg->message_size_limit) {
		fail(m, CLEANUP_STAT_PERM, "5.3.4", "message size exceeds fixed "
		    "limit of %ld bytes (message_size_limit)",
		    m->cfg->message_size_limit);
		return;
	}
	if (m->milters != NULL) {
		cleanup_msg_milters_data(m, buf, len);
		if (!ok(m))
			return;
	}
	if (m->cstate == C_BODY) {
		content_out(m, buf, len);
		body_in(m, buf, len);
		return;
	}
	str_append(&m->hbuf, buf, len);
	header_scan(m, false);
}

/* ---- Milters ------------------------------------------------------------- */

bool cleanup_msg_milters_wanted(const cleanup_cfg_t *cfg,
    const cleanup_msg_envelope_t *env)
{
	/* The one place where cleanup decides that a message meets
	 * non_smtpd_milters: a local submission (pickup, sendmail: a uid),
	 * not SMTP mail (smtpd has its own milters) and not bounce's notices
	 * (Postfix's default internal_mail_filter_classes), nor when the
	 * client's receive_override_options say no_milters. */
	return cfg->non_smtpd_milters != NULL && cfg->non_smtpd_milters[0] &&
	    !(env->flags & (CLEANUP_FLAG_SMTP | CLEANUP_FLAG_NO_MILTERS)) &&
	    env->uid >= 0;
}

void cleanup_msg_edit(cleanup_msg_t *m, int type, uint32_t index,
    const char *name, const char *value, const void *body, size_t blen)
{
	milter_edit_t *e;

	if (!ok(m))
		return;
	if (type < MILTER_E_ADDHDR || type > MILTER_E_QUARANTINE) {
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "unknown edit type %d", type);
		return;
	}
	if (type == MILTER_E_REPLBODY) {
		/* Chunks of one body are joined. */
		e = NULL;
		for (size_t i = 0; i < m->edits.n; i++)
			if (m->edits.e[i].type == MILTER_E_REPLBODY)
				e = &m->edits.e[i];
		if (m->cfg->message_size_limit > 0 && e != NULL &&
		    e->vlen + blen > (size_t)m->cfg->message_size_limit) {
			fail(m, CLEANUP_STAT_PERM, "5.3.4", "replaced body larger "
			    "than message_size_limit");
			return;
		}
		if (e != NULL) {
			e->value = xrealloc(e->value, e->vlen + blen + 1);
			memcpy(e->value + e->vlen, body, blen);
			e->vlen += blen;
			e->value[e->vlen] = '\0';
			return;
		}
	}
	if (m->edits.n == m->edits.cap) {
		m->edits.cap = m->edits.cap ? 2 * m->edits.cap : 8;
		m->edits.e = xreallocarray(m->edits.e, m->edits.cap,
		    sizeof(*m->edits.e));
	}
	e = &m->edits.e[m->edits.n++];
	memset(e, 0, sizeof(*e));
	e->type = (enum milter_edit_type)type;
	e->index = index;
	e->name = name != NULL ? xstrdup(name) : NULL;
	if (type == MILTER_E_REPLBODY) {
		m->edits.body_replaced = true;
		e->value = xmalloc(blen + 1);
		memcpy(e->value, body, blen);
		e->vlen = blen;
		e->value[blen] = '\0';
	} else if (value != NULL) {
		e->value = xstrdup(value);
		e->vlen = strlen(value);
	}
}

/* A header field of the edited header: its text, terminator included. */
typedef struct efield {
	char *text;
	size_t len, namelen;
} efield_t;

/* "Name: value" with the message's line ends for the LF (or CR LF) that
 * fold a milter's value. */
static char *milter_field(const cleanup_msg_t *m, const char *name,
    const char *value, size_t *len, size_t *namelen)
{
	str_t t = STR_INIT;

	str_cat(&t, name);
	*namelen = str_len(&t);
	str_putc(&t, ':');
	if (*value != ' ' && *value != '\t')
		str_putc(&t, ' ');
	for (const char *p = value; *p; p++) {
		if (*p == '\r' && p[1] == '\n')
			continue;
		if (*p == '\n')
			str_cat(&t, m->eol);
		else
			str_putc(&t, *p);
	}
	str_cat(&t, m->eol);
	*len = str_len(&t);
	return str_steal(&t);
}

/* non_smtpd_milters: the macros cleanup knows. */
static const char *cleanup_msg_macro(void *ctx, const char *name)
{
	cleanup_msg_t *m = ctx;

	if (strcmp(name, "i") == 0)
		return m->id[0] ? m->id : NULL;
	if (strcmp(name, "j") == 0)
		return m->cfg->myhostname;
	if (strcmp(name, "{daemon_name}") == 0)
		return pconfig_get_str("milter_macro_daemon_name");
	if (strcmp(name, "v") == 0)
		return pconfig_get_str("milter_macro_v");
	if (strcmp(name, "_") == 0)
		return "localhost [127.0.0.1]";
	if (strcmp(name, "{client_addr}") == 0)
		return "127.0.0.1";
	if (strcmp(name, "{client_name}") == 0 ||
	    strcmp(name, "{client_ptr}") == 0)
		return "localhost";
	if (strcmp(name, "{mail_addr}") == 0)
		return str_cstr(&m->sender);
	if (strcmp(name, "{rcpt_addr}") == 0)
		return m->milter_rcpt;
	return NULL;
}

/* A verdict of non_smtpd_milters: the message's. */
static void cleanup_msg_milter_verdict(cleanup_msg_t *m, enum milter_verdict v,
    milter_reply_t *r)
{
	const char *t = str_cstr(&r->text);
	char dsn[16];

	if (v == MILTER_CONTINUE || !ok(m) || m->milter_bounce)
		return;
	if (v == MILTER_DISCARD) {
		log_info("%s: milter-discard: milter %s triggers DISCARD action; "
		    "from=<%s>", m->id, r->who ? r->who : "?",
		    m->sender_given ? m->sender_given : "");
		m->discard = true;
		return;
	}
	/* "550 5.7.1 text": the status and the text after it. */
	bcopy_str(dsn, sizeof(dsn), v == MILTER_REJECT ? "5.7.1" : "4.7.1");
	if (strlen(t) > 4) {
		const char *sp = strchr(t + 4, ' ');
		if (sp != NULL && (size_t)(sp - (t + 4)) < sizeof(dsn) &&
		    t[4] == t[0] && t[5] == '.') {
			memcpy(dsn, t + 4, (size_t)(sp - (t + 4)));
			dsn[sp - (t + 4)] = '\0';
			t = sp + 1;
		} else {
			t += 4;
		}
	}
	log_info("%s: milter-reject: END-OF-MESSAGE from localhost[127.0.0.1]: "
	    "%s; from=<%s>", m->id, str_cstr(&r->text), m->sender_given ?
	    m->sender_given : "");
	if (v == MILTER_REJECT) {
		/* The submitter was told long ago that the mail is taken:
		 * as Postfix, the message is queued with every recipient
		 * bounced, and the sender gets the notice. */
		m->milter_bounce = true;
		bcopy_str(m->bounce_dsn, sizeof(m->bounce_dsn), dsn);
		str_set(&m->bounce_text, t);
		milters_abort(m->milters);
		return;
	}
	m->quiet = true;
	fail(m, CLEANUP_STAT_TEMP, dsn, "%s", t);
}

static void cleanup_msg_milters_start(cleanup_msg_t *m)
{
	str_t err = STR_INIT, a = STR_INIT;
	milter_params_t p;
	milter_reply_t r = MILTER_REPLY_INIT;
	enum milter_verdict v;
	const char *argv[2];

	milter_params_load(&p);
	m->milters = milters_new(m->cfg->non_smtpd_milters, &p, &err);
	if (m->milters == NULL) {	/* checked at start: not here */
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "non_smtpd_milters: %s",
		    str_cstr(&err));
		goto out;
	}
	milters_set_macros(m->milters, cleanup_msg_macro, m);
	v = milters_connect(m->milters, "localhost", "127.0.0.1", 0, 4, &r);
	if (v == MILTER_CONTINUE)
		v = milters_helo(m->milters, "localhost", &r);
	if (v == MILTER_CONTINUE) {
		addr_externalize(str_cstr(&m->sender), &a);
		str_t b = STR_INIT;
		str_setf(&b, "<%s>", str_cstr(&a));
		argv[0] = str_cstr(&b);
		argv[1] = NULL;
		v = milters_mail(m->milters, argv, &r);
		str_release(&b);
	}
	cleanup_msg_milter_verdict(m, v, &r);
out:
	milter_reply_release(&r);
	str_release(&err);
	str_release(&a);
}

static void cleanup_msg_milters_rcpt(cleanup_msg_t *m, const char *addr)
{
	str_t a = STR_INIT, b = STR_INIT;
	milter_reply_t r = MILTER_REPLY_INIT;
	const char *argv[2];

	if (m->milter_bounce)
		return;

	addr_externalize(addr, &a);
	str_setf(&b, "<%s>", str_cstr(&a));
	argv[0] = str_cstr(&b);
	argv[1] = NULL;
	m->milter_rcpt = addr;
	cleanup_msg_milter_verdict(m, milters_rcpt(m->milters, argv, &r), &r);
	m->milter_rcpt = NULL;
	milter_reply_release(&r);
	str_release(&a);
	str_release(&b);
}

static void cleanup_msg_milters_data(cleanup_msg_t *m, const void *buf,
    size_t len)
{
	milter_reply_t r = MILTER_REPLY_INIT;

	if (m->milter_bounce)
		return;
	if (!m->milter_data_sent) {
		m->milter_data_sent = true;
		cleanup_msg_milter_verdict(m, milters_data(m->milters, &r), &r);
	}
	if (ok(m) && !m->discard)
		cleanup_msg_milter_verdict(m,
		    milters_content(m->milters, buf, len, &r), &r);
	milter_reply_release(&r);
}

static void cleanup_msg_milters_eom(cleanup_msg_t *m)
{
	milter_reply_t r = MILTER_REPLY_INIT;

	if (ok(m) && !m->discard && !m->milter_bounce && !m->milter_data_sent)
		cleanup_msg_milters_data(m, "", 0);
	if (ok(m) && !m->discard && !m->milter_bounce) {
		enum milter_verdict v = milters_eom(m->milters, &m->edits, &r);
		if (v != MILTER_CONTINUE)
			milter_edits_release(&m->edits);
		cleanup_msg_milter_verdict(m, v, &r);
	} else {
		milters_abort(m->milters);
	}
	milter_reply_release(&r);
	milters_free(m->milters);
	m->milters = NULL;
}

/* The value of ESMTP argument KEY= in args (words), or NULL; copied
 * into out. */
static const char *esmtp_arg(const char *args, const char *key, str_t *out)
{
	size_t kl = strlen(key);

	for (const char *p = args; p != NULL && *p;) {
		size_t wl;
		while (*p == ' ')
			p++;
		wl = strcspn(p, " ");
		if (wl > kl && strncasecmp(p, key, kl) == 0 && p[kl] == '=') {
			str_reset(out);
			str_append(out, p + kl + 1, wl - kl - 1);
			return str_cstr(out);
		}
		p += wl;
	}
	return NULL;
}

static bool milter_addr(const char *s, str_t *out);

/* A milter's change of sender: the envelope written again (the content
 * has been taken back).  The address is rewritten like the envelope
 * sender; RET= and ENVID= in its arguments replace the message's. */
static void change_sender(cleanup_msg_t *m, const milter_edit_t *e)
{
	str_t a = STR_INIT, out = STR_INIT, why = STR_INIT, v = STR_INIT;
	str_t tmp = STR_INIT;
	const char *envid, *retv;
	int ret = 0;

	if (!milter_addr(e->name, &a)) {
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "milter changed the sender "
		    "to a malformed address \"%s\"", pr(&tmp, e->name));
		goto out;
	}
	if (cleanup_addr_rewrite_sender(m->cfg, str_cstr(&a), &out,
	    &why) != CLEANUP_ADDR_OK) {
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "%s", str_cstr(&why));
		goto out;
	}
	retv = esmtp_arg(e->value, "RET", &v);
	if (retv != NULL)
		ret = strcasecmp(retv, "HDRS") == 0 ? QF_RET_HDRS :
		    strcasecmp(retv, "FULL") == 0 ? QF_RET_FULL : 0;
	envid = esmtp_arg(e->value, "ENVID", &why);
	if (qfw_envelope_redo(m->w, str_cstr(&out), envid, ret) < 0) {
		write_failed(m);
		goto out;
	}
	log_info("%s: milter changed the sender to <%s>", m->id,
	    pr(&tmp, str_cstr(&out)));
	str_set(&m->sender, str_cstr(&out));
out:
	str_release(&a);
	str_release(&out);
	str_release(&why);
	str_release(&v);
	str_release(&tmp);
}

/* The header and body edits: the content is taken back from the queue
 * file into an unlinked spool file, the header edited in memory, and the
 * new content written in its place (one extra pass, only for a message
 * that milters changed). */
static void apply_content_edits(cleanup_msg_t *m)
{
	str_t path = STR_INIT, line = STR_INIT, sep = STR_INIT;
	efield_t *f = NULL;
	size_t nf = 0, cap = 0, total = 0;
	const char *ours;
	const milter_edit_t *body = NULL;
	int fd;
	FILE *fp = NULL;
	char *lbuf = NULL;
	size_t lcap = 0;
	ssize_t n;
	bool more = true;

	str_setf(&path, "%s/%s/tmp.milter.XXXXXX", m->cfg->ql.dir,
	    m->cfg->queue);
	fd = mkstemp(path.buf);
	if (fd < 0) {
		queue_failed(m, "cannot create milter spool file", strerror(errno));
		goto out;
	}
	(void)unlink(str_cstr(&path));
	if (qfw_content_take(m->w, fd) < 0) {
		close(fd);
		write_failed(m);
		goto out;
	}
	{
		/* the last change of sender wins */
		const milter_edit_t *from = NULL;
		for (size_t i = 0; i < m->edits.n; i++)
			if (m->edits.e[i].type == MILTER_E_CHGFROM)
				from = &m->edits.e[i];
		if (from != NULL)
			change_sender(m, from);
		if (!ok(m)) {
			close(fd);
			goto out;
		}
	}
	fp = fdopen(fd, "r");
	if (fp == NULL || fseek(fp, 0, SEEK_SET) < 0) {
		if (fp == NULL)
			close(fd);
		queue_failed(m, "milter spool file", strerror(errno));
		goto out;
	}
	/* The header as written: fields (with their continuation lines)
	 * up to the empty line that ends it. */
	while ((n = getline(&lbuf, &lcap, fp)) > 0) {
		bool cont = lbuf[0] == ' ' || lbuf[0] == '\t';
		long nl;

		total += (size_t)n;
		if (lbuf[n - 1] != '\n' || (n == 1) || (n == 2 && lbuf[0] == '\r')) {
			str_append(&sep, lbuf, (size_t)n);	/* the empty line */
			break;
		}
		if (cont && nf > 0) {
			f[nf - 1].text = xrealloc(f[nf - 1].text, f[nf - 1].len +
			    (size_t)n + 1);
			memcpy(f[nf - 1].text + f[nf - 1].len, lbuf, (size_t)n + 1);
			f[nf - 1].len += (size_t)n;
			continue;
		}
		nl = cleanup_hdr_name_len(lbuf, (size_t)n, true);
		if (nl <= 0) {
			str_append(&sep, lbuf, (size_t)n);	/* body text */
			break;
		}
		if (nf == cap) {
			cap = cap ? 2 * cap : 32;
			f = xreallocarray(f, cap, sizeof(*f));
		}
		f[nf].text = xstrndup(lbuf, (size_t)n);
		f[nf].len = (size_t)n;
		f[nf].namelen = (size_t)nl;
		nf++;
	}
	if (n <= 0)
		more = false;
	(void)total;
	/* Our own Received: comes first and is not one the milters saw:
	 * known by its text, wherever inserts move it. */
	ours = ((m->flags & CLEANUP_FLAG_SMTP) || m->uid >= 0) && nf > 0 &&
	    f[0].namelen == 8 && strncasecmp(f[0].text, "Received", 8) == 0 ?
	    f[0].text : NULL;
	for (size_t i = 0; i < m->edits.n; i++) {
		const milter_edit_t *e = &m->edits.e[i];
		size_t at, len, namelen;
		char *text;

		switch (e->type) {
		case MILTER_E_ADDHDR:
		case MILTER_E_INSHDR:
			text = milter_field(m, e->name, e->value ? e->value : "",
			    &len, &namelen);
			/* Index 0 is the top of the message (as in
			 * Postfix); N > 0 goes after the Nth header the
			 * milters saw (cleanup's Received: not counted). */
			if (e->type == MILTER_E_ADDHDR || e->index == 0) {
				at = e->type == MILTER_E_ADDHDR ? nf : 0;
			} else {
				size_t seen = 0;
				for (at = 0; at < nf && seen < e->index; at++)
					if (f[at].text != ours)
						seen++;
			}
			if (nf == cap) {
				cap = cap ? 2 * cap : 32;
				f = xreallocarray(f, cap, sizeof(*f));
			}
			memmove(&f[at + 1], &f[at], (nf - at) * sizeof(*f));
			f[at] = (efield_t){ text, len, namelen };
			nf++;
			break;
		case MILTER_E_CHGHDR: {
			size_t want = e->index ? e->index : 1, seen = 0, nlen =
			    strlen(e->name), k;
			for (k = 0; k < nf; k++)
				if (f[k].text != ours && f[k].namelen == nlen &&
				    strncasecmp(f[k].text,
				    e->name, nlen) == 0 && ++seen == want)
					break;
			if (e->value == NULL || e->value[0] == '\0') {
				if (k < nf) {	/* delete */
					free(f[k].text);
					memmove(&f[k], &f[k + 1], (nf - k - 1) *
					    sizeof(*f));
					nf--;
				}
				break;
			}
			text = milter_field(m, e->name, e->value, &len, &namelen);
			if (k < nf) {
				free(f[k].text);
				f[k] = (efield_t){ text, len, namelen };
			} else {	/* not there: added, as sendmail does */
				if (nf == cap) {
					cap = cap ? 2 * cap : 32;
					f = xreallocarray(f, cap, sizeof(*f));
				}
				f[nf++] = (efield_t){ text, len, namelen };
			}
			break;
		}
		case MILTER_E_REPLBODY:
			body = e;
			break;
		default:
			break;
		}
	}
	for (size_t i = 0; i < nf && ok(m); i++)
		content_out(m, f[i].text, f[i].len);
	if (body != NULL) {
		/* The milter's body has CR LF line ends: the message's own. */
		const char *p = body->value, *end = p + body->vlen;
		if (str_len(&sep) == 0 || cleanup_hdr_name_len(str_cstr(&sep),
		    str_len(&sep), true) != 0)
			str_set(&sep, m->eol);
		content_out(m, str_cstr(&sep), str_len(&sep));
		while (p < end && ok(m)) {
			const char *lf = memchr(p, '\n', (size_t)(end - p));
			size_t k = lf ? (size_t)(lf - p) : (size_t)(end - p);
			if (k > 0 && p[k - 1] == '\r' && lf != NULL)
				k--;
			content_out(m, p, k);
			if (lf != NULL)
				content_out(m, m->eol, strlen(m->eol));
			p = lf ? lf + 1 : end;
		}
	} else {
		char buf[65536];
		size_t got;

		content_out(m, str_cstr(&sep), str_len(&sep));
		while (more && ok(m) && (got = fread(buf, 1, sizeof(buf), fp)) > 0)
			content_out(m, buf, got);
		if (ferror(fp))
			queue_failed(m, "milter spool file read", strerror(errno));
	}
out:
	if (fp != NULL)
		fclose(fp);
	for (size_t i = 0; i < nf; i++)
		free(f[i].text);
	free(f);
	free(lbuf);
	str_release(&path);
	str_release(&line);
	str_release(&sep);
}

/* A non_smtpd milter refused the message: every recipient gets a bounce
 * log record and is marked done, and the message is committed, so that
 * qmgr sends the sender the notice (as it does for a recipient found
 * done on a first pass). */
static void milter_bounce(cleanup_msg_t *m)
{
	str_t err = STR_INIT, reason = STR_INIT;

	str_setf(&reason, "message rejected by a milter: %s",
	    str_cstr(&m->bounce_text));
	for (size_t i = 0; i < m->nwritten && ok(m); i++) {
		dlv_rcpt_t rc = { .address = m->wrcpt[i], .orig = "",
		    .orcpt = "", .offset = qfw_rcpt_offset(m->w, i) };
		dlv_status_t st = { .action = DLV_ACT_FAILED, .reason =
		    reason.buf, .diag_type = "", .diag_text = "", .relay = "none",
		    .remote_mta = "" };

		bcopy_str(st.status, sizeof(st.status), m->bounce_dsn);
		if (statuslog_append1(&m->cfg->ql, "bounce", m->id, &rc, &st, 0,
		    i + 1 == m->nwritten ? SL_SYNC : 0, &err) < 0)
			queue_failed(m, "bounce log", str_cstr(&err));
	}
	if (ok(m) && qfw_rcpts_done(m->w) < 0)
		write_failed(m);
	if (!ok(m))
		(void)statuslog_remove(&m->cfg->ql, "bounce", m->id, &err);
	str_release(&err);
	str_release(&reason);
}

/* The internal form of a milter's "<address>" (brackets optional). */
static bool milter_addr(const char *s, str_t *out)
{
	size_t len = strlen(s);
	addr_err_t e;

	while (*s == ' ')
		s++, len--;
	if (len >= 2 && s[0] == '<' && s[len - 1] == '>') {
		s++;
		len -= 2;
	}
	str_reset(out);
	return addr_internalize(s, len, ADDR_F_SMTPUTF8, out, &e) == ADDR_OK;
}

/* Every edit of the milters, in order: the content ones in one pass,
 * then recipients, then the quarantine. */
static void apply_edits(cleanup_msg_t *m)
{
	bool content = false;
	str_t a = STR_INIT, tmp = STR_INIT;

	for (size_t i = 0; i < m->edits.n; i++) {
		enum milter_edit_type t = m->edits.e[i].type;
		if (t == MILTER_E_ADDHDR || t == MILTER_E_INSHDR ||
		    t == MILTER_E_CHGHDR || t == MILTER_E_REPLBODY ||
		    t == MILTER_E_CHGFROM)
			content = true;
	}
	if (content && ok(m))
		apply_content_edits(m);
	for (size_t i = 0; i < m->edits.n && ok(m); i++) {
		const milter_edit_t *e = &m->edits.e[i];

		switch (e->type) {
		case MILTER_E_ADDRCPT:
			if (!milter_addr(e->name, &a) || str_len(&a) == 0) {
				fail(m, CLEANUP_STAT_TEMP, "4.3.0", "milter added a "
				    "malformed recipient \"%s\"", pr(&tmp, e->name));
				break;
			}
			{
				/* NOTIFY= and ORCPT= of SMFIR_ADDRCPT_PAR */
				str_t nv = STR_INIT, ov = STR_INIT;
				const char *nt = esmtp_arg(e->value, "NOTIFY", &nv);
				const char *oc = esmtp_arg(e->value, "ORCPT", &ov);
				int bits = nt ? dsn_notify_parse(str_cstr(&nv),
				    str_len(&nv), DSN_NOTIFY_LENIENT, NULL) : 0;
				str_t od = STR_INIT;
				cleanup_msg_rcpt(m, str_cstr(&a), oc, bits != 0,
				    bits);
				str_release(&nv);
				str_release(&ov);
				str_release(&od);
			}
			log_info("%s: milter added recipient <%s>", m->id,
			    str_cstr(&a));
			break;
		case MILTER_E_DELRCPT:
			if (!milter_addr(e->name, &a))
				break;
			for (size_t k = 0; k < m->nwritten; k++)
				if (strcasecmp(m->wrcpt[k], str_cstr(&a)) == 0 &&
				    qfw_rcpt_done_at(m->w, k) < 0)
					write_failed(m);
			log_info("%s: milter deleted recipient <%s>", m->id,
			    str_cstr(&a));
			break;
		case MILTER_E_CHGFROM:
			break;		/* done with the content */
		case MILTER_E_QUARANTINE: {
			/* Postfix's line, with the milter's reason last. */
			str_t l = STR_INIT;
			m->hold = true;
			str_setf(&l, "%s: milter-hold: END-OF-MESSAGE from %s[%s]: "
			    "milter triggers HOLD action;", m->id,
			    m->client_name ? m->client_name : "localhost",
			    m->client_address ? m->client_address : "127.0.0.1");
			log_envelope(m, &l);
			str_catf(&l, ": %s", pr(&tmp, e->value ? e->value : ""));
			log_info("%s", str_cstr(&l));
			str_release(&l);
			break;
		}
		default:
			break;
		}
	}
	str_release(&a);
	str_release(&tmp);
}

bool cleanup_msg_end(cleanup_msg_t *m, cleanup_reply_t *reply)
{
	if (ok(m) && m->cstate == C_HEADER)
		header_scan(m, true);
	body_end(m);
	if (m->milters != NULL)
		cleanup_msg_milters_eom(m);
	if (ok(m) && m->milter_bounce)
		milter_bounce(m);
	else if (ok(m) && !m->discard && m->edits.n > 0)
		apply_edits(m);
	if (ok(m) && m->discard) {
		/* Accepted and dropped (logged by the check). */
		qfw_free(m->w);
		m->w = NULL;
		cleanup_reply_set(reply, CLEANUP_STAT_OK, "2.0.0",
		    "queued as %s", m->id);
		bcopy_str(reply->queue_id, sizeof(reply->queue_id), m->id);
		return true;
	}
	if (ok(m) && m->redirect != NULL) {
		/* every recipient replaced by the one address */
		qf_rcpt_in_t r = { .address = m->redirect };
		if (qfw_rcpts_done(m->w) < 0 || qfw_rcpt(m->w, &r) < 0)
			write_failed(m);
	}
	/* After the content: a check may have changed it (queue-file.md,
	 * extracted section). */
	if (ok(m) && m->filter != NULL &&
	    qfw_attr(m->w, FILTER_ATTR, m->filter) < 0)
		write_failed(m);
	if (ok(m) && m->hold &&
	    qfw_set_queue(m->w, &m->cfg->ql, QUEUE_HOLD) < 0)
		fail(m, CLEANUP_STAT_TEMP, "4.3.0", "cannot put the message on "
		    "hold");
	if (ok(m) && qfw_commit(m->w) < 0)
		write_failed(m);
	if (!ok(m)) {
		cleanup_reply_set(reply, m->status, m->dsn, "%s",
		    str_cstr(&m->why));
		return false;
	}
	m->committed = true;
	/* qmgr logs "from=<...>, size=N, nrcpt=N (queue active)" when it
	 * takes the message, as Postfix's does: not here too. */
	cleanup_reply_set(reply, CLEANUP_STAT_OK, "2.0.0", "queued as %s",
	    m->id);
	bcopy_str(reply->queue_id, sizeof(reply->queue_id), m->id);
	return true;
}

void cleanup_msg_free(cleanup_msg_t *m)
{
	if (m == NULL)
		return;
	if (m->w != NULL)
		qfw_free(m->w);
	str_release(&m->why);
	free(m->sender_given);
	str_release(&m->sender);
	free(m->full_name);
	free(m->log_ident);
	free(m->client_name);
	free(m->client_address);
	free(m->helo_name);
	free(m->protocol);
	free(m->tls_info);
	free(m->received_auth);
	free(m->first_rcpt);
	cleanup_addr_dup_free(&m->dup);
	str_release(&m->hbuf);
	free(m->fields);
	str_release(&m->message_id);
	str_release(&m->hkey);
	str_release(&m->hedit);
	str_release(&m->bline);
	cleanup_mime_free(m->mime);
	free(m->redirect);
	free(m->filter);
	for (size_t i = 0; i < m->nwritten; i++)
		free(m->wrcpt[i]);
	free(m->wrcpt);
	milter_edits_release(&m->edits);
	str_release(&m->hold_reason);
	str_release(&m->bounce_text);
	milters_free(m->milters);
	free(m);
}
