/* Requests to the bounce daemon (qmgr -> private/bounce): "send the
 * notice for this message now".  doc/bounce.md describes the daemon and
 * doc/protocol-delivery.md the encoding.
 *
 *   kind       records used                          notice
 *   bounce     bounce log of the message + inline     non-delivery (failed);
 *                                                     the bounce log is
 *                                                     removed once queued
 *   delay      defer log + inline                     delay warning (delayed)
 *   success    inline only                            success notice
 *                                                     (NOTIFY=SUCCESS)
 *
 * DSN_N_NO_LOG makes bounce/delay use the inline records only (a notice
 * for recipients never logged, e.g. "bounce this one now").
 *
 * The reply says whether the notice (or the decision not to send one:
 * NOTIFY=NEVER, a failed double bounce) is final.  On failure qmgr keeps
 * the message and its logs and asks again later. */
#ifndef PETREL_DSN_NOTICE_H
#define PETREL_DSN_NOTICE_H
#include <stdbool.h>
#include <stddef.h>
#include "attr.h"
#include "statuslog.h"
#include "str.h"

typedef enum dsn_notice_kind {
	DSN_NOTICE_NONE = 0,
	DSN_NOTICE_BOUNCE,	/* "bounce" */
	DSN_NOTICE_DELAY,	/* "delay" */
	DSN_NOTICE_SUCCESS,	/* "success" */
} dsn_notice_kind_t;

enum {
	DSN_N_NO_LOG = 1 << 0,	/* ignore the message's log; inline only */
	DSN_N_KEEP_LOG = 1 << 1,	/* bounce: do not remove the bounce log */
	DSN_N_MASK = (1 << 2) - 1,
};

#define DSN_NOTICE_MAX_INLINE	DLV_MAX_RCPT

typedef struct dsn_notice_req {
	dsn_notice_kind_t kind;
	char *queue;		/* queue that holds the message ("active") */
	char *queue_id;
	int flags;		/* DSN_N_* */
	sl_rec_t *rec;		/* inline records (copies) */
	size_t nrec;
} dsn_notice_req_t;

typedef struct dsn_notice_reply {
	int status;		/* 0: done (sent or nothing to send); -1: retry */
	char *reason;		/* what was done or why it failed */
	char *notice_id;	/* queue ID of the notice, "" when none sent */
} dsn_notice_reply_t;

const char *dsn_notice_kind_name(dsn_notice_kind_t k);
dsn_notice_kind_t dsn_notice_kind_parse(const char *s);

/* Builder: copies the strings; dsn_notice_add copies one record. */
void dsn_notice_init(dsn_notice_req_t *req, dsn_notice_kind_t kind,
    const char *queue, const char *queue_id, int flags);
void dsn_notice_add(dsn_notice_req_t *req, const sl_rec_t *rec);
void dsn_notice_free(dsn_notice_req_t *req);

/* Request wire format. */
int dsn_notice_encode(const dsn_notice_req_t *req, str_t *out, str_t *err);
attr_reader_t *dsn_notice_reader_new(void);
int dsn_notice_decode(const attr_msg_t *msg, dsn_notice_req_t *req,
    str_t *err);

/* Reply wire format. */
void dsn_notice_reply_encode(int status, const char *reason,
    const char *notice_id, str_t *out);
attr_reader_t *dsn_notice_reply_reader_new(void);
int dsn_notice_reply_decode(const attr_msg_t *msg, dsn_notice_reply_t *rep,
    str_t *err);
void dsn_notice_reply_free(dsn_notice_reply_t *rep);

/* Blocking client: connects to path (e.g. "private/bounce"), sends req,
 * reads the reply within timeout_ms.  Returns 0 with *rep filled, or -1
 * with err set (no reply: treat as status -1). */
int dsn_notice_call(const char *path, const dsn_notice_req_t *req,
    dsn_notice_reply_t *rep, int timeout_ms, str_t *err);

#endif
