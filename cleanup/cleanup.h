/* cleanup(8) internals: configuration, address rewriting, header
 * completion, one message's state, the protocol session.  The pieces are
 * library functions (libcleanup.a) so that the unit tests can drive them
 * without master.  doc/cleanup.md describes the behaviour. */
#ifndef PETREL_CLEANUP_H
#define PETREL_CLEANUP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include "addr.h"
#include "cleanup_client.h"
#include "dict.h"
#include "htable.h"
#include "queue_path.h"
#include "str.h"

/* ---- Configuration ------------------------------------------------------ */

typedef struct cln_cfg {
	char *myhostname;
	char *myorigin;
	char *mail_name;		/* in Received: headers */
	bool append_at_myorigin;
	char *recipient_delimiter;
	addr_domlist_t *local_domains;	/* $myorigin and $mydestination */
	struct maps *canonical;
	struct maps *sender_canonical;
	struct maps *recipient_canonical;
	struct maps *virtual_alias;
	long message_size_limit;	/* 0 = none */
	long header_size_limit;
	long hopcount_limit;
	long recipient_limit;
	long virt_recursion_limit;
	long virt_expansion_limit;
	long dup_filter_limit;		/* 0 = no limit */
	bool enable_original_recipient;
	/* Content checks (cleanup_checks.c); NULL when not configured, so
	 * a message without checks costs nothing more. */
	struct maps *header_checks;
	struct maps *mime_header_checks;
	struct maps *nested_header_checks;
	struct maps *body_checks;
	long body_checks_size_limit;
	char *non_smtpd_milters;	/* "" when none */
	queue_layout_t ql;
	const char *queue;		/* where messages go: incoming */
	int ipc_timeout_ms;
} cln_cfg_t;

/* From the loaded configuration (config_get_*): opens the tables.  -1
 * with a reason in err (a table that cannot be opened, a bad domain
 * list, a bad queue layout). */
int cln_cfg_load(cln_cfg_t *cfg, str_t *err);
void cln_cfg_free(cln_cfg_t *cfg);

/* ---- Addresses (cleanup_addr.c) ----------------------------------------- */

/* Result of a rewriting step: ok, or a temporary failure with a reason
 * (table error, mapping loop, over a limit). */
enum { CLN_OK = 0, CLN_TEMP = -1 };

/* True when s (length len) is a well-formed internal-form address (the
 * null address excluded): it survives externalize + internalize
 * unchanged.  why gets a reason otherwise. */
bool cln_addr_valid(const char *s, size_t len, str_t *why);
/* Completes a bare local part with @$myorigin (append_at_myorigin) and
 * lower-cases nothing; the null address stays null.  Replaces out. */
void cln_addr_complete(const cln_cfg_t *cfg, const char *addr, str_t *out);

/* One lookup of addr in maps with the Postfix key order: the address,
 * the address without its recipient_delimiter extension, then for a
 * local domain ($myorigin, $mydestination) the local part with and
 * without the extension, then "@domain".  1 with the value in value and
 * the extension to add to results in prop ("+ext", empty when the key
 * included it), 0 not found, -1 table error (err). */
int cln_maps_find(const cln_cfg_t *cfg, struct maps *maps, const char *addr,
    str_t *value, str_t *prop, str_t *err);

/* Parses a table value: addresses in mail syntax separated by commas
 * and/or white space, internalized, bare local parts completed.  -1 with
 * err for a malformed one. */
int cln_parse_value(const cln_cfg_t *cfg, const char *value,
    char ***list, size_t *n, str_t *err);
void cln_list_free(char **list, size_t n);

/* canonical rewriting of addr (which is complete) with maps: the first
 * address of the value replaces it ("@domain" keeps the local part,
 * extensions propagate), repeated until nothing changes.  CLN_OK with the
 * result in out (possibly unchanged), CLN_TEMP with err. */
int cln_canonical(const cln_cfg_t *cfg, struct maps *maps, const char *addr,
    str_t *out, str_t *err);
/* Sender / recipient rewriting: completion, then sender_ (recipient_)
 * canonical_maps, then canonical_maps. */
int cln_rewrite_sender(const cln_cfg_t *cfg, const char *addr, str_t *out,
    str_t *err);
int cln_rewrite_recipient(const cln_cfg_t *cfg, const char *addr,
    str_t *out, str_t *err);

/* Virtual alias expansion of a rewritten recipient.  Fills *list with
 * the final addresses (an address not in the tables is itself; one that
 * lists itself is kept and not expanded again).  CLN_TEMP with err on a
 * table error, a loop, nesting deeper than virt_recursion_limit or more
 * than virt_expansion_limit results. */
int cln_virtual_expand(const cln_cfg_t *cfg, const char *addr,
    char ***list, size_t *n, str_t *err);

/* Duplicate filter: remembers at most limit addresses (0 = no limit).
 * cln_dup_seen answers true for an address seen before (domain case
 * folded) and remembers new ones while there is room. */
typedef struct cln_dup {
	htable_t *t;
	long limit;
} cln_dup_t;
void cln_dup_init(cln_dup_t *d, long limit);
bool cln_dup_seen(cln_dup_t *d, const char *addr);
void cln_dup_free(cln_dup_t *d);

/* ---- Headers (cleanup_hdr.c) -------------------------------------------- */

/* Length of the header field name at the start of line (the bytes before
 * optional white space and ':'), or 0 when line is not the first line of
 * a header field.  With complete false the line may be cut: the answer
 * is -1 while it cannot be decided yet. */
long cln_hdr_name_len(const char *line, size_t len, bool complete);

/* Kinds of header fields cleanup cares about. */
enum cln_hdr_kind {
	HK_OTHER = 0,
	HK_RETURN_PATH,
	HK_RECEIVED,
	HK_MESSAGE_ID,
	HK_DATE,
	HK_FROM,
	HK_SENDER_ADDR,		/* Sender, Reply-To, Errors-To, ... */
	HK_TO, HK_CC, HK_BCC,
	HK_RESENT_FROM,		/* sender-type Resent- headers */
	HK_RESENT_TO, HK_RESENT_CC, HK_RESENT_BCC,
	HK_RCPT_ADDR,		/* Apparently-To */
};
enum cln_hdr_kind cln_hdr_kind(const char *name, size_t len);
/* Sender-type address header (sender_canonical_maps). */
bool cln_hdr_is_sender(enum cln_hdr_kind k);
/* Any address header (rewritten). */
bool cln_hdr_is_address(enum cln_hdr_kind k);

/* RFC 5322 date-time of t in local time, e.g.
 * "Tue, 3 Jun 2025 14:05:09 +0200 (CEST)" (mail_date_format() with the
 * zone name); appended to out. */
void cln_rfc5322_date(time_t t, str_t *out);
/* "<YYYYMMDDHHMMSS.QUEUEID@host>" (UTC), appended. */
void cln_message_id(time_t t, const char *queue_id, const char *host,
    str_t *out);
/* A display name as an RFC 5322 phrase: atoms as they are, quoted
 * string when specials occur, RFC 2047 encoded words (UTF-8, base64)
 * when there are non-ASCII bytes.  Appended. */
void cln_phrase(const char *name, str_t *out);

/* ---- Content checks (cleanup_checks.c) --------------------------------- */

/* What a header_checks or body_checks answer asks for. */
enum cln_act {
	CA_NONE = 0,		/* DUNNO, OK, not found */
	CA_REJECT, CA_WARN, CA_DISCARD, CA_HOLD, CA_REDIRECT, CA_IGNORE,
	CA_PREPEND, CA_REPLACE, CA_FILTER,
	CA_UNSUPPORTED,		/* an action Petrel does not do (logged) */
};
/* Parses a table answer "ACTION [text]": the action, and in *text /
 * *tlen what follows it (white space skipped).  An unknown action is
 * CA_UNSUPPORTED. */
enum cln_act cln_act_parse(const char *value, const char **text,
    size_t *tlen);

/* ---- MIME structure (cleanup_mime.c) ------------------------------------ */

/* Header classes: a MIME part's header (multipart), the header of an
 * attached message (message/rfc822).  Which checks apply also depends
 * on the name (cln_hdr_is_mime). */
enum { CLN_MIME_PART = 1, CLN_MIME_NESTED = 2 };
#define CLN_MIME_DEPTH 20		/* nested multiparts followed */
#define CLN_MIME_BOUNDARY_MAX 200	/* RFC 2046 says 70 */

typedef struct cln_mime cln_mime_t;
/* A logical header (folded lines joined, at most hmax bytes). */
typedef void (*cln_mime_hdr_fn)(void *ctx, int hclass, const char *h,
    size_t len);
/* A body line, boundary lines included. */
typedef void (*cln_mime_body_fn)(void *ctx, const char *l, size_t len);

/* body_start (may be NULL): a body segment begins (the main body, or a
 * part's after its header). */
cln_mime_t *cln_mime_new(size_t hmax, cln_mime_hdr_fn hdr,
    cln_mime_body_fn body, void (*body_start)(void *ctx), void *ctx);
void cln_mime_free(cln_mime_t *m);
/* The primary header's Content-Type value (NULL: none); the body
 * begins. */
void cln_mime_primary(cln_mime_t *m, const char *ctype, size_t len);
/* The next body line, without its terminator. */
void cln_mime_line(cln_mime_t *m, const char *l, size_t len);
/* The end of the content (a header still being read is passed on). */
void cln_mime_end(cln_mime_t *m);
/* More multiparts nested than CLN_MIME_DEPTH (the deeper ones are read
 * as body). */
bool cln_mime_too_deep(const cln_mime_t *m);
/* A Content-Type value: multipart/anything (with its boundary parameter,
 * empty when missing or too long), message/rfc822. */
void cln_mime_ctype(const char *v, size_t len, bool *multipart,
    bool *rfc822, str_t *boundary);
/* Content-* and MIME-Version: the headers mime_header_checks see. */
bool cln_hdr_is_mime(const char *h, size_t len);

/* ---- One message (cleanup_msg.c) ---------------------------------------- */

typedef struct cln_msg cln_msg_t;

/* The envelope as received (strings owned by the caller). */
typedef struct cln_envelope {
	const char *sender;
	int flags;
	const char *envid;
	int ret;
	const char *full_name;
	int64_t uid;		/* -1: none */
	int64_t arrival_us;	/* 0: now */
	const char *log_ident;
	const char *client_name, *client_address, *client_port;
	const char *helo_name, *protocol, *tls_info;
	const char *sasl_method, *sasl_username, *received_auth;
	const char *content_filter;	/* NULL or "": none */
	const cleanup_attr_t *attrs;
	size_t nattrs;
} cln_envelope_t;

/* Starts a message: checks and rewrites the envelope, creates the queue
 * file.  Never NULL: a problem is remembered and reported by
 * cln_msg_end. */
cln_msg_t *cln_msg_new(cln_cfg_t *cfg, const cln_envelope_t *env);
void cln_msg_rcpt(cln_msg_t *m, const char *address, const char *orcpt,
    bool has_notify, int32_t notify);
void cln_msg_data(cln_msg_t *m, const void *buf, size_t len);
/* A milter's modification (op edit, doc/protocol-cleanup.md): type a
 * milter_edit_type; index, name, value as milter.h describes; body
 * chunks of a replaced body are joined.  Applied at cln_msg_end. */
void cln_msg_edit(cln_msg_t *m, int type, uint32_t index, const char *name,
    const char *value, const void *body, size_t blen);
/* Does this message meet non_smtpd_milters?  The one place that decides
 * it (local submissions only; not SMTP mail, not bounce notices). */
bool cln_milters_wanted(const cln_cfg_t *cfg, const cln_envelope_t *env);
/* Completes and commits; reply says what happened.  Returns true when
 * the message was queued. */
bool cln_msg_end(cln_msg_t *m, cleanup_reply_t *reply);
/* Forgets the message (removes the queue file unless committed). */
void cln_msg_free(cln_msg_t *m);
const char *cln_msg_queue_id(const cln_msg_t *m);	/* "" if none */
bool cln_msg_ok(const cln_msg_t *m);	/* no error so far */

/* ---- The session (cleanup_session.c) ------------------------------------ */

/* Serves one client connection until it closes, times out or breaks the
 * protocol. */
void cln_session(cln_cfg_t *cfg, int fd);
/* Tells qmgr there is new mail (nothing if qmgr does not listen). */
void cln_trigger_qmgr(void);

#endif
