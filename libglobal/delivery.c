/* The delivery protocol: requests, replies, their validation (delivery.h,
 * doc/protocol-delivery.md). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "delivery.h"
#include "delivery_int.h"
#include "dsn.h"
#include "dsn_notify.h"
#include "log.h"
#include "mem.h"
#include "nametab.h"
#include "qfile.h"
#include "queue_id.h"
#include "queue_path.h"

/* ---- Actions --------------------------------------------------------- */

static const char *const action_names[] = {
	[DLV_ACT_NONE] = "none",
	[DLV_ACT_DELIVERED] = "delivered",
	[DLV_ACT_RELAYED] = "relayed",
	[DLV_ACT_EXPANDED] = "expanded",
	[DLV_ACT_FAILED] = "failed",
	[DLV_ACT_DELAYED] = "delayed",
};

const char *dlv_action_name(dlv_action_t a)
{
	return nametab_name(action_names, NAMETAB_SIZE(action_names), (int)a);
}

dlv_action_t dlv_action_parse(const char *s)
{
	return (dlv_action_t)nametab_value(action_names,
	    NAMETAB_SIZE(action_names), s);
}

char dlv_action_class(dlv_action_t a)
{
	switch (a) {
	case DLV_ACT_DELIVERED:
	case DLV_ACT_RELAYED:
	case DLV_ACT_EXPANDED:
		return '2';
	case DLV_ACT_FAILED:
		return '5';
	case DLV_ACT_DELAYED:
		return '4';
	default:
		return 0;
	}
}

/* ---- Shared checks --------------------------------------------------- */

/* NULL-safe copy. */
char *dlv_strdup(const char *s)
{
	return xstrdup(s ? s : "");
}

bool dlv_text_ok(const char *s, enum dlv_text kind, size_t max,
    const char *what, str_t *err)
{
	size_t len = strlen(s);

	if (len > max) {
		str_setf(err, "%s: %zu octets, limit %zu", what, len, max);
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		bool bad = c < 0x20 || c == 0x7f ||
		    (kind == DLV_TEXT_ASCII && c > 0x7e);
		if (bad) {
			str_setf(err, "%s: forbidden byte 0x%02x at %zu", what,
			    c, i);
			return false;
		}
	}
	return true;
}

void dlv_clean_text(str_t *out, const char *s, size_t max)
{
	size_t len;

	str_reset(out);
	if (!s)
		return;
	len = strlen(s);
	if (len > max)
		len = max;
	str_reserve(out, len);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		/* Tabs and line ends inside a remote reply become spaces
		 * (multi-line replies read naturally); other bytes '?'. */
		if (c == '\t' || c == '\r' || c == '\n')
			c = ' ';
		else if (c < 0x20 || c > 0x7e)
			c = '?';
		str_putc(out, c);
	}
}

bool dlv_rcpt_ok(const dlv_rcpt_t *r, const char *what, str_t *err)
{
	str_t name = STR_INIT;
	bool ok = false;

	if (!r->address || !*r->address) {
		str_setf(err, "%s.address: empty", what);
		goto out;
	}
	str_setf(&name, "%s.address", what);
	if (!dlv_text_ok(r->address, DLV_TEXT_LINE, DLV_MAX_ADDR,
	    str_cstr(&name), err))
		goto out;
	str_setf(&name, "%s.orig", what);
	if (!dlv_text_ok(r->orig ? r->orig : "", DLV_TEXT_LINE, DLV_MAX_ADDR,
	    str_cstr(&name), err))
		goto out;
	str_setf(&name, "%s.orcpt", what);
	if (!dlv_text_ok(r->orcpt ? r->orcpt : "", DLV_TEXT_LINE,
	    DLV_MAX_ADDR, str_cstr(&name), err))
		goto out;
	if (!dsn_notify_valid(r->notify)) {
		str_setf(err, "%s.notify: invalid value %d", what, r->notify);
		goto out;
	}
	if (r->offset < 0) {
		str_setf(err, "%s.offset: negative", what);
		goto out;
	}
	ok = true;
out:
	str_release(&name);
	return ok;
}

bool dlv_status_ok(const dlv_status_t *st, bool strict_class,
    const char *what, str_t *err)
{
	str_t name = STR_INIT;
	bool ok = false;
	char cls;

	if (!dsn_status_valid(st->status)) {
		str_setf(err, "%s.status: invalid status code \"", what);
		str_quote_printable(err, st->status, strnlen(st->status,
		    sizeof(st->status)));
		str_cat(err, "\"");
		goto out;
	}
	if ((cls = dlv_action_class(st->action)) == 0) {
		str_setf(err, "%s.action: missing or unknown", what);
		goto out;
	}
	if (strict_class && st->status[0] != cls) {
		str_setf(err, "%s.action \"%s\" disagrees with status %s",
		    what, dlv_action_name(st->action), st->status);
		goto out;
	}
	if (!st->reason || !*st->reason) {
		str_setf(err, "%s.reason: empty", what);
		goto out;
	}
#define CHECK(field, max) \
	str_setf(&name, "%s." #field, what); \
	if (!dlv_text_ok(st->field ? st->field : "", DLV_TEXT_ASCII, max, \
	    str_cstr(&name), err)) \
		goto out;
	CHECK(reason, DLV_MAX_TEXT);
	CHECK(diag_text, DLV_MAX_TEXT);
	CHECK(diag_type, DLV_MAX_SHORT);
	CHECK(relay, DLV_MAX_SHORT);
	CHECK(remote_mta, DLV_MAX_SHORT);
#undef CHECK
	ok = true;
out:
	str_release(&name);
	return ok;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

bool dlv_queue_file_ok(const char *queue, const char *queue_id, str_t *err)
{
	if (!queue || !queue_name_valid(queue)) {
		str_setf(err, "queue: unknown queue name");
		return false;
	}
	if (!queue_id || !queue_id_valid(queue_id)) {
		str_setf(err, "queue_id: invalid queue ID");
		return false;
	}
	return true;
}

/* The rules of doc/protocol-delivery.md section 4 for a request. */
static bool request_ok(const dlv_request_t *req, str_t *err)
{
	str_t name = STR_INIT;
	int64_t *offs;
	bool ok = false;

	if (!dlv_queue_file_ok(req->queue, req->queue_id, err))
		return false;
	if (req->content_offset < 0 || req->content_size < 0 ||
	    req->arrival < 0 || req->active < 0) {
		str_setf(err, "%s: negative",
		    req->content_offset < 0 ? "offset" :
		    req->content_size < 0 ? "size" :
		    req->arrival < 0 ? "arrival" : "active");
		return false;
	}
	if (!dlv_text_ok(req->sender ? req->sender : "", DLV_TEXT_LINE,
	    DLV_MAX_ADDR, "sender", err))
		return false;
	if (!req->nexthop || !*req->nexthop) {
		str_setf(err, "nexthop: empty");
		return false;
	}
	if (!dlv_text_ok(req->nexthop, DLV_TEXT_LINE, DLV_MAX_SHORT,
	    "nexthop", err) ||
	    !dlv_text_ok(req->envid ? req->envid : "", DLV_TEXT_LINE,
	    DLV_MAX_SHORT, "envid", err))
		return false;
	if (req->ret < QF_RET_NONE || req->ret > QF_RET_HDRS) {
		str_setf(err, "ret: invalid value %d", req->ret);
		return false;
	}
	if (req->flags & ~DLV_F_MASK) {
		str_setf(err, "flags: unknown bits 0x%x", req->flags & ~DLV_F_MASK);
		return false;
	}
	if (req->reuse_limit < 0) {
		str_setf(err, "reuse_limit: negative value %d", req->reuse_limit);
		return false;
	}
	if (req->nrcpt == 0 || req->nrcpt > DLV_MAX_RCPT) {
		str_setf(err, "rcpt: %zu recipients, allowed 1..%d", req->nrcpt,
		    DLV_MAX_RCPT);
		return false;
	}
	for (size_t i = 0; i < req->nrcpt; i++) {
		str_setf(&name, "rcpt[%zu]", i);
		if (!dlv_rcpt_ok(&req->rcpt[i], str_cstr(&name), err))
			goto out;
	}
	/* Offsets identify recipients: they must be unique. */
	offs = xreallocarray(NULL, req->nrcpt, sizeof(*offs));
	for (size_t i = 0; i < req->nrcpt; i++)
		offs[i] = req->rcpt[i].offset;
	qsort(offs, req->nrcpt, sizeof(*offs), cmp_i64);
	for (size_t i = 1; i < req->nrcpt; i++)
		if (offs[i] == offs[i - 1]) {
			str_setf(err, "rcpt: offset %lld appears twice",
			    (long long)offs[i]);
			free(offs);
			goto out;
		}
	free(offs);
	ok = true;
out:
	str_release(&name);
	return ok;
}

/* ---- Reader limits and schemas ---------------------------------------- */

const attr_limits_t dlv_limits = {
	.max_value = DLV_MAX_VALUE,
	/* Ten items a recipient (its attributes and the group) is more than
	 * any group holds. */
	.max_attrs = DLV_MAX_RCPT * 10 + 64,
	.max_group_attrs = 32,
	.max_total = 16 * 1024 * 1024,
	.max_depth = 1,
};

static const attr_spec_t req_rcpt_spec[] = {
	DLV_SPEC_RCPT
	DLV_SPEC_OFFSET
	{ NULL, 0, 0, NULL },
};

static const attr_spec_t req_spec[] = {
	{ "queue", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "queue_id", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "offset", ATTR_TYPE_LONG, ATTR_REQUIRED, NULL },
	{ "size", ATTR_TYPE_LONG, 0, NULL },
	{ "arrival", ATTR_TYPE_LONG, 0, NULL },
	{ "active", ATTR_TYPE_LONG, 0, NULL },
	{ "sender", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "nexthop", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "envid", ATTR_TYPE_STR, 0, NULL },
	{ "ret", ATTR_TYPE_INT, 0, NULL },
	{ "flags", ATTR_TYPE_INT, 0, NULL },
	{ "reuse_limit", ATTR_TYPE_INT, 0, NULL },
	{ "rcpt", ATTR_TYPE_LIST, ATTR_REQUIRED, req_rcpt_spec },
	{ NULL, 0, 0, NULL },
};

static const attr_spec_t rep_rcpt_spec[] = {
	DLV_SPEC_OFFSET
	DLV_SPEC_STATUS
	{ "notified", ATTR_TYPE_INT, 0, NULL },
	{ NULL, 0, 0, NULL },
};

static const attr_spec_t rep_spec[] = {
	{ "flags", ATTR_TYPE_INT, 0, NULL },
	{ "reason", ATTR_TYPE_STR, 0, NULL },
	{ "conn_us", ATTR_TYPE_LONG, 0, NULL },
	{ "xfer_us", ATTR_TYPE_LONG, 0, NULL },
	{ "rcpt", ATTR_TYPE_LIST, ATTR_REQUIRED, rep_rcpt_spec },
	{ NULL, 0, 0, NULL },
};

attr_reader_t *dlv_request_reader_new(void)
{
	return attr_reader_new(req_spec, ATTR_READ_STRICT, &dlv_limits);
}

attr_reader_t *dlv_reply_reader_new(void)
{
	return attr_reader_new(rep_spec, ATTR_READ_STRICT, &dlv_limits);
}

/* Getters with defaults; the schema checked the types. */
const char *dlv_get_str(const attr_msg_t *m, const char *name)
{
	const char *v;
	return attr_get_str(m, name, &v) ? v : "";
}

int32_t dlv_get_int(const attr_msg_t *m, const char *name)
{
	int32_t v;
	return attr_get_int(m, name, &v) ? v : 0;
}

int64_t dlv_get_long(const attr_msg_t *m, const char *name)
{
	int64_t v;
	return attr_get_long(m, name, &v) ? v : 0;
}

/* ---- Requests ------------------------------------------------------ */

void dlv_request_init(dlv_request_t *req, const char *queue,
    const char *queue_id, const char *sender, const char *nexthop)
{
	memset(req, 0, sizeof(*req));
	req->queue = dlv_strdup(queue);
	req->queue_id = dlv_strdup(queue_id);
	req->sender = dlv_strdup(sender);
	req->nexthop = dlv_strdup(nexthop);
	req->envid = dlv_strdup(NULL);
}

void dlv_request_add_rcpt(dlv_request_t *req, const char *address,
    const char *orig, const char *orcpt, int notify, int64_t offset)
{
	dlv_rcpt_t *r;

	req->rcpt = xreallocarray(req->rcpt, req->nrcpt + 1, sizeof(*req->rcpt));
	r = &req->rcpt[req->nrcpt++];
	r->address = dlv_strdup(address);
	r->orig = dlv_strdup(orig);
	r->orcpt = dlv_strdup(orcpt);
	r->notify = notify;
	r->offset = offset;
}

void dlv_rcpt_free(dlv_rcpt_t *r)
{
	free(r->address);
	free(r->orig);
	free(r->orcpt);
	memset(r, 0, sizeof(*r));
}

void dlv_request_free(dlv_request_t *req)
{
	if (!req)
		return;
	free(req->queue);
	free(req->queue_id);
	free(req->sender);
	free(req->nexthop);
	free(req->envid);
	for (size_t i = 0; i < req->nrcpt; i++)
		dlv_rcpt_free(&req->rcpt[i]);
	free(req->rcpt);
	memset(req, 0, sizeof(*req));
}

void dlv_rcpt_encode(str_t *out, const dlv_rcpt_t *r)
{
	attr_put_str(out, "address", r->address);
	if (r->orig && *r->orig)
		attr_put_str(out, "orig", r->orig);
	if (r->orcpt && *r->orcpt)
		attr_put_str(out, "orcpt", r->orcpt);
	if (r->notify)
		attr_put_int(out, "notify", r->notify);
	attr_put_long(out, "offset", r->offset);
}

int dlv_request_encode(const dlv_request_t *req, str_t *out, str_t *err)
{
	size_t start = out->len;

	if (!request_ok(req, err))
		return -1;
	attr_put_str(out, "queue", req->queue);
	attr_put_str(out, "queue_id", req->queue_id);
	attr_put_long(out, "offset", req->content_offset);
	attr_put_long(out, "size", req->content_size);
	if (req->arrival)
		attr_put_long(out, "arrival", req->arrival);
	if (req->active)
		attr_put_long(out, "active", req->active);
	attr_put_str(out, "sender", req->sender ? req->sender : "");
	attr_put_str(out, "nexthop", req->nexthop);
	if (req->envid && *req->envid)
		attr_put_str(out, "envid", req->envid);
	if (req->ret)
		attr_put_int(out, "ret", req->ret);
	if (req->flags)
		attr_put_int(out, "flags", req->flags);
	if (req->reuse_limit)
		attr_put_int(out, "reuse_limit", req->reuse_limit);
	attr_put_list(out, "rcpt", req->nrcpt);
	for (size_t i = 0; i < req->nrcpt; i++) {
		dlv_rcpt_encode(out, &req->rcpt[i]);
		attr_put_end(out);
	}
	attr_put_end(out);
	/* Only absurdly long addresses in a big batch get here; the caller
	 * sends fewer recipients at a time. */
	if (out->len - start > dlv_limits.max_total) {
		str_setf(err, "request of %zu bytes exceeds %zu: send fewer "
		    "recipients", out->len - start, dlv_limits.max_total);
		str_truncate(out, start);
		return -1;
	}
	return 0;
}

void dlv_rcpt_decode(const attr_msg_t *g, dlv_rcpt_t *r)
{
	r->address = dlv_strdup(dlv_get_str(g, "address"));
	r->orig = dlv_strdup(dlv_get_str(g, "orig"));
	r->orcpt = dlv_strdup(dlv_get_str(g, "orcpt"));
	r->notify = dlv_get_int(g, "notify");
	r->offset = dlv_get_long(g, "offset");
}

int dlv_request_decode(const attr_msg_t *msg, dlv_request_t *req, str_t *err)
{
	const attr_list_t *l;
	size_t n;

	memset(req, 0, sizeof(*req));
	req->queue = dlv_strdup(dlv_get_str(msg, "queue"));
	req->queue_id = dlv_strdup(dlv_get_str(msg, "queue_id"));
	req->content_offset = dlv_get_long(msg, "offset");
	req->content_size = dlv_get_long(msg, "size");
	req->arrival = dlv_get_long(msg, "arrival");
	req->active = dlv_get_long(msg, "active");
	req->sender = dlv_strdup(dlv_get_str(msg, "sender"));
	req->nexthop = dlv_strdup(dlv_get_str(msg, "nexthop"));
	req->envid = dlv_strdup(dlv_get_str(msg, "envid"));
	req->ret = dlv_get_int(msg, "ret");
	req->flags = dlv_get_int(msg, "flags");
	req->reuse_limit = dlv_get_int(msg, "reuse_limit");
	if (!attr_get_list(msg, "rcpt", &l)) {
		str_setf(err, "rcpt: missing");
		return -1;
	}
	n = attr_list_count(l);
	if (n > DLV_MAX_RCPT) {
		str_setf(err, "rcpt: %zu recipients, allowed 1..%d", n,
		    DLV_MAX_RCPT);
		return -1;
	}
	req->rcpt = xcalloc(n ? n : 1, sizeof(*req->rcpt));
	for (size_t i = 0; i < n; i++)
		dlv_rcpt_decode(attr_list_group(l, i), &req->rcpt[i]);
	req->nrcpt = n;
	return request_ok(req, err) ? 0 : -1;
}

/* ---- Replies ------------------------------------------------------- */

void dlv_reply_init(dlv_reply_t *rep, const dlv_request_t *req)
{
	memset(rep, 0, sizeof(*rep));
	rep->reason = dlv_strdup(NULL);
	rep->n = req ? req->nrcpt : 0;
	rep->st = xcalloc(rep->n ? rep->n : 1, sizeof(*rep->st));
	rep->offset = xcalloc(rep->n ? rep->n : 1, sizeof(*rep->offset));
	for (size_t i = 0; i < rep->n; i++)
		rep->offset[i] = req->rcpt[i].offset;
}

void dlv_status_free(dlv_status_t *st)
{
	free(st->reason);
	free(st->diag_type);
	free(st->diag_text);
	free(st->relay);
	free(st->remote_mta);
	memset(st, 0, sizeof(*st));
}

void dlv_reply_free(dlv_reply_t *rep)
{
	if (!rep)
		return;
	for (size_t i = 0; i < rep->n; i++)
		dlv_status_free(&rep->st[i]);
	free(rep->st);
	free(rep->offset);
	free(rep->reason);
	memset(rep, 0, sizeof(*rep));
}

/* Replaces *field with a cleaned copy of s. */
static void set_clean(char **field, const char *s, size_t max)
{
	str_t t = STR_INIT;

	dlv_clean_text(&t, s, max);
	free(*field);
	*field = t.buf ? str_steal(&t) : xstrdup("");
}

void dlv_status_vset(dlv_status_t *st, dlv_action_t action,
    const char *status, const char *relay, const char *fmt, va_list ap)
{
	char cls = dlv_action_class(action);
	str_t text = STR_INIT;

	if (cls == 0)
		log_panic("dlv_status_set: invalid action %d", (int)action);
	st->action = action;
	if (status && dsn_status_valid(status) && status[0] == cls) {
		bcopy_str(st->status, sizeof(st->status), status);
	} else {
		if (status)
			log_warning("delivery status \"%.20s\" is invalid for "
			    "action %s; using %c.0.0", status,
			    dlv_action_name(action), cls);
		bfmt(st->status, sizeof(st->status), "%c.0.0", cls);
	}
	str_vcatf(&text, fmt, ap);
	set_clean(&st->reason, str_cstr(&text), DLV_MAX_TEXT);
	if (!*st->reason)
		set_clean(&st->reason, dlv_action_name(action), DLV_MAX_TEXT);
	set_clean(&st->relay, relay, DLV_MAX_SHORT);
	if (!st->diag_type)
		st->diag_type = xstrdup("");
	if (!st->diag_text)
		st->diag_text = xstrdup("");
	if (!st->remote_mta)
		st->remote_mta = xstrdup("");
	str_release(&text);
}

void dlv_status_set(dlv_reply_t *rep, size_t i, dlv_action_t action,
    const char *status, const char *relay, const char *fmt, ...)
{
	va_list ap;

	if (i >= rep->n)
		log_panic("dlv_status_set: recipient %zu of %zu", i, rep->n);
	va_start(ap, fmt);
	dlv_status_vset(&rep->st[i], action, status, relay, fmt, ap);
	va_end(ap);
}

void dlv_status_diag(dlv_reply_t *rep, size_t i, const char *diag_type,
    const char *diag_text, const char *remote_mta)
{
	dlv_status_t *st;

	if (i >= rep->n)
		log_panic("dlv_status_diag: recipient %zu of %zu", i, rep->n);
	st = &rep->st[i];
	if (diag_type)
		set_clean(&st->diag_type, diag_type, DLV_MAX_SHORT);
	if (diag_text)
		set_clean(&st->diag_text, diag_text, DLV_MAX_TEXT);
	if (remote_mta)
		set_clean(&st->remote_mta, remote_mta, DLV_MAX_SHORT);
}

void dlv_status_set_all(dlv_reply_t *rep, bool force, dlv_action_t action,
    const char *status, const char *relay, const char *fmt, ...)
{
	va_list ap;

	for (size_t i = 0; i < rep->n; i++) {
		if (!force && dlv_status_isset(rep, i))
			continue;
		va_start(ap, fmt);
		dlv_status_vset(&rep->st[i], action, status, relay, fmt, ap);
		va_end(ap);
	}
}

void dlv_reply_set_flags(dlv_reply_t *rep, int flags, const char *fmt, ...)
{
	str_t text = STR_INIT;
	va_list ap;

	if (flags & ~DLV_R_MASK)
		log_panic("dlv_reply_set_flags: unknown flags 0x%x", flags);
	rep->flags = flags;
	va_start(ap, fmt);
	str_vcatf(&text, fmt, ap);
	va_end(ap);
	set_clean(&rep->reason, str_cstr(&text), DLV_MAX_TEXT);
	str_release(&text);
}

bool dlv_status_isset(const dlv_reply_t *rep, size_t i)
{
	return i < rep->n && rep->st[i].action != DLV_ACT_NONE;
}

static void put_opt(str_t *out, const char *name, const char *v, size_t max)
{
	if (v && *v) {
		size_t len = strlen(v);
		if (len > max) {
			char *cut = xstrndup(v, max);
			attr_put_str(out, name, cut);
			free(cut);
		} else {
			attr_put_str(out, name, v);
		}
	}
}

void dlv_status_encode(str_t *out, const dlv_status_t *st, size_t textmax)
{
	attr_put_str(out, "status", st->status);
	attr_put_str(out, "action", dlv_action_name(st->action));
	put_opt(out, "reason", st->reason, textmax);
	put_opt(out, "diag_type", st->diag_type, DLV_MAX_SHORT);
	put_opt(out, "diag_text", st->diag_text, textmax);
	put_opt(out, "relay", st->relay, DLV_MAX_SHORT);
	put_opt(out, "remote_mta", st->remote_mta, DLV_MAX_SHORT);
}

void dlv_reply_encode(const dlv_reply_t *rep, str_t *out)
{
	/* Texts are at most DLV_MAX_TEXT each; with thousands of recipients
	 * that could pass the reader's 16 MiB, so long texts are shortened
	 * to keep the whole reply well inside it. */
	size_t textmax = DLV_MAX_TEXT, budget = 12 * 1024 * 1024;
	dlv_status_t unset;

	if (rep->n) {
		/* Per recipient: two long texts, three short ones, names. */
		size_t per = budget / rep->n, fixed = DLV_MAX_SHORT * 3 + 200;
		size_t room = per > fixed ? (per - fixed) / 2 : 0;
		if (room < textmax)
			textmax = room < 64 ? 64 : room;
	}
	memset(&unset, 0, sizeof(unset));
	unset.action = DLV_ACT_DELAYED;
	bcopy_str(unset.status, sizeof(unset.status), "4.3.0");
	unset.reason = (char *)"delivery agent did not report a status";

	if (rep->flags)
		attr_put_int(out, "flags", rep->flags);
	put_opt(out, "reason", rep->reason, DLV_MAX_TEXT);
	if (rep->conn_us > 0)
		attr_put_long(out, "conn_us", rep->conn_us);
	if (rep->xfer_us > 0)
		attr_put_long(out, "xfer_us", rep->xfer_us);
	attr_put_list(out, "rcpt", rep->n);
	for (size_t i = 0; i < rep->n; i++) {
		attr_put_long(out, "offset", rep->offset[i]);
		dlv_status_encode(out, dlv_status_isset(rep, i) ? &rep->st[i] :
		    &unset, textmax);
		if (dlv_status_isset(rep, i) && rep->st[i].notified)
			attr_put_int(out, "notified", 1);
		attr_put_end(out);
	}
	attr_put_end(out);
}

void dlv_status_decode(const attr_msg_t *g, dlv_status_t *st)
{
	bcopy_str(st->status, sizeof(st->status), dlv_get_str(g, "status"));
	/* An over-long value is cut by bcopy_str; make it fail the check. */
	if (strlen(dlv_get_str(g, "status")) >= sizeof(st->status))
		st->status[0] = 'x';
	st->action = dlv_action_parse(dlv_get_str(g, "action"));
	st->reason = dlv_strdup(dlv_get_str(g, "reason"));
	st->diag_type = dlv_strdup(dlv_get_str(g, "diag_type"));
	st->diag_text = dlv_strdup(dlv_get_str(g, "diag_text"));
	st->relay = dlv_strdup(dlv_get_str(g, "relay"));
	st->remote_mta = dlv_strdup(dlv_get_str(g, "remote_mta"));
}

int dlv_reply_decode(const attr_msg_t *msg, const dlv_request_t *req,
    dlv_reply_t *rep, str_t *err)
{
	const attr_list_t *l;
	str_t name = STR_INIT;
	size_t n;
	int rc = -1;

	memset(rep, 0, sizeof(*rep));
	rep->flags = dlv_get_int(msg, "flags");
	rep->reason = dlv_strdup(dlv_get_str(msg, "reason"));
	rep->conn_us = dlv_get_long(msg, "conn_us");
	rep->xfer_us = dlv_get_long(msg, "xfer_us");
	if (!attr_get_list(msg, "rcpt", &l)) {
		str_setf(err, "rcpt: missing");
		return -1;
	}
	n = attr_list_count(l);
	if (n != req->nrcpt) {
		str_setf(err, "reply has %zu recipients, request had %zu", n,
		    req->nrcpt);
		return -1;
	}
	rep->st = xcalloc(n ? n : 1, sizeof(*rep->st));
	rep->offset = xcalloc(n ? n : 1, sizeof(*rep->offset));
	rep->n = n;
	for (size_t i = 0; i < n; i++) {
		const attr_msg_t *g = attr_list_group(l, i);
		rep->offset[i] = dlv_get_long(g, "offset");
		dlv_status_decode(g, &rep->st[i]);
		rep->st[i].notified = dlv_get_int(g, "notified") != 0;
	}
	if (rep->flags & ~DLV_R_MASK) {
		str_setf(err, "flags: unknown bits 0x%x", rep->flags & ~DLV_R_MASK);
		goto out;
	}
	if (!dlv_text_ok(rep->reason, DLV_TEXT_ASCII, DLV_MAX_TEXT, "reason",
	    err))
		goto out;
	if (rep->conn_us < 0 || rep->xfer_us < 0) {
		str_setf(err, "%s: negative", rep->conn_us < 0 ? "conn_us" :
		    "xfer_us");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (rep->offset[i] != req->rcpt[i].offset) {
			str_setf(err, "rcpt[%zu].offset %lld does not match the "
			    "request (%lld)", i, (long long)rep->offset[i],
			    (long long)req->rcpt[i].offset);
			goto out;
		}
		str_setf(&name, "rcpt[%zu]", i);
		if (!dlv_status_ok(&rep->st[i], true, str_cstr(&name), err))
			goto out;
		if (rep->st[i].notified && rep->st[i].action != DLV_ACT_DELIVERED) {
			str_setf(err, "rcpt[%zu].notified with action %s", i,
			    dlv_action_name(rep->st[i].action));
			goto out;
		}
	}
	rc = 0;
out:
	str_release(&name);
	return rc;
}
