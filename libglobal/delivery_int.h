/* Shared by delivery*.c, statuslog.c and dsn_notice.c: the pieces of the
 * delivery protocol that the status logs and bounce requests reuse. */
#ifndef PETREL_DELIVERY_INT_H
#define PETREL_DELIVERY_INT_H
#include <stdarg.h>
#include "attr.h"
#include "delivery.h"

enum dlv_text {
	DLV_TEXT_LINE,		/* no C0 controls or DEL; UTF-8 allowed */
	DLV_TEXT_ASCII,		/* printable ASCII only */
};

extern const attr_limits_t dlv_limits;

/* The attributes of a recipient and of a delivery status, written once
 * for the three schemas that carry them: the request's recipients
 * (DLV_SPEC_RCPT, DLV_SPEC_OFFSET), the reply's recipients
 * (DLV_SPEC_OFFSET, DLV_SPEC_STATUS, "notified") and the status-log
 * records (all three, then "time").  Each expands to initialisers of
 * attr_spec_t array elements, with a trailing comma. */
#define DLV_SPEC_RCPT \
	{ "address", ATTR_TYPE_STR, ATTR_REQUIRED, NULL }, \
	{ "orig", ATTR_TYPE_STR, 0, NULL }, \
	{ "orcpt", ATTR_TYPE_STR, 0, NULL }, \
	{ "notify", ATTR_TYPE_INT, 0, NULL },
#define DLV_SPEC_OFFSET \
	{ "offset", ATTR_TYPE_LONG, ATTR_REQUIRED, NULL },
#define DLV_SPEC_STATUS \
	{ "status", ATTR_TYPE_STR, ATTR_REQUIRED, NULL }, \
	{ "action", ATTR_TYPE_STR, ATTR_REQUIRED, NULL }, \
	{ "reason", ATTR_TYPE_STR, ATTR_REQUIRED, NULL }, \
	{ "diag_type", ATTR_TYPE_STR, 0, NULL }, \
	{ "diag_text", ATTR_TYPE_STR, 0, NULL }, \
	{ "relay", ATTR_TYPE_STR, 0, NULL }, \
	{ "remote_mta", ATTR_TYPE_STR, 0, NULL },

char *dlv_strdup(const char *s);
/* Checks s against kind and max; on failure err = "what: why". */
bool dlv_text_ok(const char *s, enum dlv_text kind, size_t max,
    const char *what, str_t *err);
/* Copies s to out cut to max octets, controls and non-ASCII made '?'
 * (tab, CR, LF become spaces). */
void dlv_clean_text(str_t *out, const char *s, size_t max);
/* The queue file a request names: a known queue and a valid queue ID
 * (NULL is neither); on failure err = "queue: ..." or "queue_id: ...". */
bool dlv_queue_file_ok(const char *queue, const char *queue_id,
    str_t *err);
/* Recipient / status checks; what names the group ("rcpt[3]"). */
bool dlv_rcpt_ok(const dlv_rcpt_t *r, const char *what, str_t *err);
bool dlv_status_ok(const dlv_status_t *st, bool strict_class,
    const char *what, str_t *err);

const char *dlv_get_str(const attr_msg_t *m, const char *name);
int32_t dlv_get_int(const attr_msg_t *m, const char *name);
int64_t dlv_get_long(const attr_msg_t *m, const char *name);

/* Group encoders/decoders (no end marker). */
void dlv_rcpt_encode(str_t *out, const dlv_rcpt_t *r);
void dlv_rcpt_decode(const attr_msg_t *g, dlv_rcpt_t *r);
void dlv_rcpt_free(dlv_rcpt_t *r);
void dlv_status_encode(str_t *out, const dlv_status_t *st, size_t textmax);
void dlv_status_decode(const attr_msg_t *g, dlv_status_t *st);
void dlv_status_free(dlv_status_t *st);
void dlv_status_vset(dlv_status_t *st, dlv_action_t action,
    const char *status, const char *relay, const char *fmt, va_list ap);

/* Status-log records (statuslog.c), also the inline records of bounce
 * requests (dsn_notice.c). */
struct sl_rec;
extern const attr_spec_t statuslog_rec_schema[];
bool statuslog_rec_ok(const struct sl_rec *rec, const char *what, str_t *err);

#endif
