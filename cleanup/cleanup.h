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
#include "cleanup_clnt.h"
#include "dict.h"
#include "htable.h"
#include "queue_path.h"
#include "str.h"

/* ---- Configuration ------------------------------------------------------ */

typedef struct cleanup_cfg {
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
} cleanup_cfg_t;

/* From the loaded configuration (config_get_*): opens the tables.  -1
 * with a reason in err (a table that cannot be opened, a bad domain
 * list, a bad queue layout). */
int cleanup_cfg_load(cleanup_cfg_t *cfg, str_t *err);
void cleanup_cfg_free(cleanup_cfg_t *cfg);

/* ---- Addresses (cleanup_addr.c) ----------------------------------------- */

/* Result of a rewriting step: ok, or a temporary failure with a reason
 * (table error, mapping loop, over a limit). */
enum { CLEANUP_ADDR_OK = 0, CLEANUP_ADDR_TEMP = -1 };

/* True when s (length len) is a well-formed internal-form address (the
 * null address excluded): it survives externalize + internalize
 * unchanged.  why gets a reason otherwise. */
bool cleanup_addr_valid(const char *s, size_t len, str_t *why);
/* Completes a bare local part with @$myorigin (append_at_myorigin) and
 * lower-cases nothing; the null address stays null.  Replaces out. */
void cleanup_addr_complete(const cleanup_cfg_t *cfg, const char *addr,
    str_t *out);

/* One lookup of addr in maps with the Postfix key order: the address,
 * the address without its recipient_delimiter extension, then for a
 * local domain ($myorigin, $mydestination) the local part with and
 * without the extension, then "@domain".  1 with the value in value and
 * the extension to add to results in prop ("+ext", empty when the key
 * included it), 0 not found, -1 table error (err). */
int cleanup_addr_maps_find(const cleanup_cfg_t *cfg, struct maps *maps,
    const char *addr, str_t *value, str_t *prop, str_t *err);

/* Parses a table value: addresses in mail syntax separated by commas
 * and/or white space, internalized, bare local parts completed.  -1 with
 * err for a malformed one. */
int cleanup_addr_parse_value(const cleanup_cfg_t *cfg, const char *value,
    char ***list, size_t *n, str_t *err);
void cleanup_addr_list_free(char **list, size_t n);

/* canonical rewriting of addr (which is complete) with maps: the first
 * address of the value replaces it ("@domain" keeps the local part,
 * extensions propagate), repeated until nothing changes.  CLEANUP_ADDR_OK with
 * the result in out (possibly unchanged), CLEANUP_ADDR_TEMP with err. */
int cleanup_addr_canonical(const cleanup_cfg_t *cfg, struct maps *maps,
    const char *addr, str_t *out, str_t *err);
/* Sender / recipient rewriting: completion, then sender_ (recipient_)
 * canonical_maps, then canonical_maps. */
int cleanup_addr_rewrite_sender(const cleanup_cfg_t *cfg, const char *addr,
    str_t *out, str_t *err);
int cleanup_addr_rewrite_recipient(const cleanup_cfg_t *cfg, const char *addr,
    str_t *out, str_t *err);

/* Virtual alias expansion of a rewritten recipient.  Fills *list with
 * the final addresses (an address not in the tables is itself; one that
 * lists itself is kept and not expanded again).  CLEANUP_ADDR_TEMP with err on
 * a table error, a loop, nesting deeper than virt_recursion_limit or more
 * than virt_expansion_limit results. */
int cleanup_addr_virtual_expand(const cleanup_cfg_t *cfg, const char *addr,
    char ***list, size_t *n, str_t *err);

/* Duplicate filter: remembers at most limit addresses (0 = no limit).
 * cleanup_addr_dup_seen answers true for an address seen before (domain case
 * folded) and remembers new ones while there is room. */
typedef struct cleanup_addr_dup {
	htable_t *t;
	long limit;
} cleanup_addr_dup_t;
void cleanup_addr_dup_init(cleanup_addr_dup_t *d, long limit);
bool cleanup_addr_dup_seen(cleanup_addr_dup_t *d, const char *addr);
void cleanup_addr_dup_free(cleanup_addr_dup_t *d);

/* ---- Headers (cleanup_hdr.c) -------------------------------------------- */

/* Length of the header field name at the start of line (the bytes before
 * optional white space and ':'), or 0 when line is not the first line of
 * a header field.  With complete false the line may be cut: the answer
 * is -1 while it cannot be decided yet. */
long cleanup_hdr_name_len(const char *line, size_t len, bool complete);

/* Kinds of header fields cleanup cares about. */
enum cleanup_hdr_kind {
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
enum cleanup_hdr_kind cleanup_hdr_kind(const char *name, size_t len);
/* Sender-type address header (sender_canonical_maps). */
bool cleanup_hdr_is_sender(enum cleanup_hdr_kind k);
/* Any address header (rewritten). */
bool cleanup_hdr_is_address(enum cleanup_hdr_kind k);

/* RFC 5322 date-time of t in local time, e.g.
 * "Tue, 3 Jun 2025 14:05:09 +0200 (CEST)" (mail_date_format() with the
 * zone name); appended to out. */
void cleanup_hdr_date(time_t t, str_t *out);
/* "<YYYYMMDDHHMMSS.QUEUEID@host>" (UTC), appended. */
void cleanup_hdr_message_id(time_t t, const char *queue_id, const char *host,
    str_t *out);
/* A display name as an RFC 5322 phrase: atoms as they are, quoted
 * string when specials occur, RFC 2047 encoded words (UTF-8, base64)
 * when there are non-ASCII bytes.  Appended. */
void cleanup_hdr_phrase(const char *name, str_t *out);

/* ---- Content checks (cleanup_checks.c) --------------------------------- */

/* What a header_checks or body_checks answer asks for. */
enum cleanup_checks_act {
	CA_NONE = 0,		/* DUNNO, OK, not found */
	CA_REJECT, CA_WARN, CA_DISCARD, CA_HOLD, CA_REDIRECT, CA_IGNORE,
	CA_PREPEND, CA_REPLACE, CA_FILTER,
	CA_UNSUPPORTED,		/* an action Petrel does not do (logged) */
};
/* Parses a table answer "ACTION [text]": the action, and in *text /
 * *tlen what follows it (white space skipped).  An unknown action is
 * CA_UNSUPPORTED. */
enum cleanup_checks_act cleanup_checks_act_parse(const char *value,
    const char **text, size_t *tlen);

/* ---- MIME structure (cleanup_mime.c) ------------------------------------ */

/* Header classes: a MIME part's header (multipart), the header of an
 * attached message (message/rfc822).  Which checks apply also depends
 * on the name (cleanup_mime_is_header). */
enum { CLEANUP_MIME_PART = 1, CLEANUP_MIME_NESTED = 2 };
#define CLEANUP_MIME_DEPTH 20		/* nested multiparts followed */
#define CLEANUP_MIME_BOUNDARY_MAX 200	/* RFC 2046 says 70 */

typedef struct cleanup_mime cleanup_mime_t;
/* A logical header (folded lines joined, at most hmax bytes). */
typedef void (*cleanup_mime_hdr_fn)(void *ctx, int hclass, const char *h,
    size_t len);
/* A body line, boundary lines included. */
typedef void (*cleanup_mime_body_fn)(void *ctx, const char *l, size_t len);

/* body_start (may be NULL): a body segment begins (the main body, or a
 * part's after its header). */
cleanup_mime_t *cleanup_mime_new(size_t hmax, cleanup_mime_hdr_fn hdr,
    cleanup_mime_body_fn body, void (*body_start)(void *ctx), void *ctx);
void cleanup_mime_free(cleanup_mime_t *m);
/* The primary header's Content-Type value (NULL: none); the body
 * begins. */
void cleanup_mime_primary(cleanup_mime_t *m, const char *ctype, size_t len);
/* The next body line, without its terminator. */
void cleanup_mime_line(cleanup_mime_t *m, const char *l, size_t len);
/* The end of the content (a header still being read is passed on). */
void cleanup_mime_end(cleanup_mime_t *m);
/* More multiparts nested than CLEANUP_MIME_DEPTH (the deeper ones are read
 * as body). */
bool cleanup_mime_too_deep(const cleanup_mime_t *m);
/* A Content-Type value: multipart/anything (with its boundary parameter,
 * empty when missing or too long), message/rfc822. */
void cleanup_mime_ctype(const char *v, size_t len, bool *multipart,
    bool *rfc822, str_t *boundary);
/* Content-* and MIME-Version: the headers mime_header_checks see. */
bool cleanup_mime_is_header(const char *h, size_t len);

/* ---- One message (cleanup_msg.c) ---------------------------------------- */

typedef struct cleanup_msg cleanup_msg_t;

/* The envelope as received (strings owned by the caller). */
typedef struct cleanup_msg_envelope {
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
} cleanup_msg_envelope_t;

/* Starts a message: checks and rewrites the envelope, creates the queue
 * file.  Never NULL: a problem is remembered and reported by
 * cleanup_msg_end. */
cleanup_msg_t *cleanup_msg_new(cleanup_cfg_t *cfg,
    const cleanup_msg_envelope_t *env);
void cleanup_msg_rcpt(cleanup_msg_t *m, const char *address, const char *orcpt,
    bool has_notify, int32_t notify);
void cleanup_msg_data(cleanup_msg_t *m, const void *buf, size_t len);
/* A milter's modification (op edit, doc/protocol-cleanup.md): type a
 * milter_edit_type; index, name, value as milter.h describes; body
 * chunks of a replaced body are joined.  Applied at cleanup_msg_end. */
void cleanup_msg_edit(cleanup_msg_t *m, int type, uint32_t index,
    const char *name, const char *value, const void *body, size_t blen);
/* Does this message meet non_smtpd_milters?  The one place that decides
 * it (local submissions only; not SMTP mail, not bounce notices). */
bool cleanup_msg_milters_wanted(const cleanup_cfg_t *cfg,
    const cleanup_msg_envelope_t *env);
/* Completes and commits; reply says what happened.  Returns true when
 * the message was queued. */
bool cleanup_msg_end(cleanup_msg_t *m, cleanup_reply_t *reply);
/* Forgets the message (removes the queue file unless committed). */
void cleanup_msg_free(cleanup_msg_t *m);
const char *cleanup_msg_queue_id(const cleanup_msg_t *m);	/* "" if none */
bool cleanup_msg_ok(const cleanup_msg_t *m);	/* no error so far */

/* ---- The session (cleanup_session.c) ------------------------------------ */

/* Serves one client connection until it closes, times out or breaks the
 * protocol. */
void cleanup_session(cleanup_cfg_t *cfg, int fd);
/* Tells qmgr there is new mail (nothing if qmgr does not listen). */
void cleanup_session_trigger_qmgr(void);

#endif
