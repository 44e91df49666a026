/* The delivery protocol: qmgr <-> delivery agents (smtp, local, discard,
 * error/retry, test-agent).  doc/protocol-delivery.md is the specification;
 * the encoding is the attribute protocol of attr.h.
 *
 * One connection carries requests and replies in turn: qmgr writes a
 * request (one message, one batch of recipients of one message for one
 * nexthop), the agent writes exactly one reply, and either side may close
 * between messages.
 *
 *   qmgr side                          agent side
 *   ---------                          ----------
 *   dlv_request_encode(req, out)       dlv_agent_main(argc, argv, &agent)
 *   write; then read with                 (reads the request, calls
 *   dlv_reply_reader_new() and             agent.deliver(req, rep, ctx),
 *   dlv_reply_decode(msg, req, rep)        writes the reply)
 *   or all of it: dlv_call()
 *
 * Ownership: every decoded structure owns its strings (copies), so it
 * outlives the attr_msg_t it came from; free with dlv_request_free() /
 * dlv_reply_free().  Strings are never NULL after a decode: an absent
 * optional string is "". */
#ifndef PETREL_DELIVERY_H
#define PETREL_DELIVERY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "attr.h"
#include "str.h"

/* ---- Limits (checked by the decoders) ------------------------------- */

#define DLV_MAX_RCPT	5000	/* recipients in one request: qmgr batches */
#define DLV_MAX_ADDR	2048	/* octets of an address, orig, ORCPT */
#define DLV_MAX_TEXT	4096	/* octets of a reason or diagnostic text;
				 * dlv_status_set() cuts longer text */
#define DLV_MAX_SHORT	512	/* nexthop, relay, remote_mta, ENVID, types */
/* Attribute reader limits used by both decoders (any string value). */
#define DLV_MAX_VALUE	8192

/* ---- Request flags (attribute "flags") ------------------------------ */

enum {
	DLV_F_VERBOSE = 1 << 0,		/* log this delivery verbosely */
	DLV_F_SMTPUTF8 = 1 << 1,	/* the message needs SMTPUTF8 */
	DLV_F_8BITMIME = 1 << 2,	/* the body is 8BITMIME */
	DLV_F_MASK = (1 << 3) - 1,	/* other bits are a protocol error */
};

/* ---- Reply flags (attribute "flags" of the reply) ------------------- */

enum {
	/* The attempt failed while connecting or in the handshake (connect
	 * refused or timed out, no greeting, 421 at greeting, TLS failure,
	 * dropped before the first reply): NEGATIVE concurrency feedback.
	 * Without it a reply is positive feedback, even if every recipient
	 * was refused (the server talked to us). */
	DLV_R_CONN_FAIL = 1 << 0,
	/* The whole destination should be avoided for a while (its servers
	 * are all unreachable, or the agent knows it is pointless to try):
	 * qmgr puts transport+nexthop into the destination status cache and
	 * defers its other mail with "delivery temporarily suspended:
	 * <reply reason>". */
	DLV_R_AVOID = 1 << 1,
	DLV_R_MASK = (1 << 2) - 1,
};

/* ---- DSN actions (RFC 3464 section 2.3.3) --------------------------- */

typedef enum dlv_action {
	DLV_ACT_NONE = 0,	/* not set yet (never on the wire) */
	DLV_ACT_DELIVERED,	/* final delivery: status 2.x.x */
	DLV_ACT_RELAYED,	/* handed to a system that sends no DSN: 2.x.x */
	DLV_ACT_EXPANDED,	/* alias/list expansion: 2.x.x */
	DLV_ACT_FAILED,		/* permanent failure (bounce): 5.x.x */
	DLV_ACT_DELAYED,	/* temporary failure (defer): 4.x.x */
} dlv_action_t;

/* "delivered", "relayed", "expanded", "failed", "delayed" ("none"). */
const char *dlv_action_name(dlv_action_t a);
/* Parses the names above (exact, lower case); DLV_ACT_NONE if unknown. */
dlv_action_t dlv_action_parse(const char *s);
/* The status class digit an action requires: '2', '4' or '5' (0 for
 * DLV_ACT_NONE). */
char dlv_action_class(dlv_action_t a);

/* ---- Request -------------------------------------------------------- */

/* One recipient of a request, as in the queue file. */
typedef struct dlv_rcpt {
	char *address;		/* internal form (addr.h), never empty */
	char *orig;		/* original recipient before rewriting, or "" */
	char *orcpt;		/* DSN ORCPT as in the queue file
				 * ("rfc822;xtext"), or "" */
	int notify;		/* DSN_NOTIFY_* bits (dsn_notify.h), 0 = not
				 * given */
	int64_t offset;		/* of its R record in the queue file (>= 0):
				 * the key qmgr uses to mark it done */
} dlv_rcpt_t;

typedef struct dlv_request {
	char *queue;		/* queue holding the file ("active") */
	char *queue_id;		/* a valid queue ID */
	int64_t content_offset;	/* qfile_content_offset() (>= 0) */
	int64_t content_size;	/* qfile_content_size() (>= 0) */
	int64_t arrival;	/* arrival time, microseconds since the epoch */
	int64_t active;		/* when this pass of qmgr took the message into
				 * the active queue, microseconds since the
				 * epoch (0: unknown); for delays=a/b/c/d */
	char *sender;		/* internal form; "" = null sender */
	char *nexthop;		/* resolve.h nexthop, never empty */
	char *envid;		/* DSN ENVID (decoded), or "" */
	int ret;		/* QF_RET_NONE/FULL/HDRS */
	int flags;		/* DLV_F_* */
	int reuse_limit;	/* deliveries one connection may carry, 0:
				 * no limit (messages_per_connection) */
	dlv_rcpt_t *rcpt;
	size_t nrcpt;		/* 1 .. DLV_MAX_RCPT */
} dlv_request_t;

/* Encodes req (appending to out).  Returns 0, or -1 with a reason in err
 * when req breaks a rule the decoder enforces (so qmgr never sends what
 * an agent must refuse). */
int dlv_request_encode(const dlv_request_t *req, str_t *out, str_t *err);
/* A reader for requests (strict schema, DLV limits). */
attr_reader_t *dlv_request_reader_new(void);
/* Decodes and validates a message read with that reader into *req
 * (zeroed first; free with dlv_request_free even on failure).  Returns
 * 0, or -1 with a one-line reason in err ("rcpt[3].address: ..."). */
int dlv_request_decode(const attr_msg_t *msg, dlv_request_t *req, str_t *err);
void dlv_request_free(dlv_request_t *req);

/* Builders for qmgr and tests: a request with copies of the strings
 * (NULL counts as "").  dlv_request_add_rcpt appends one recipient. */
void dlv_request_init(dlv_request_t *req, const char *queue,
    const char *queue_id, const char *sender, const char *nexthop);
void dlv_request_add_rcpt(dlv_request_t *req, const char *address,
    const char *orig, const char *orcpt, int notify, int64_t offset);

/* ---- Reply ---------------------------------------------------------- */

/* What happened to one recipient. */
typedef struct dlv_status {
	char status[16];	/* RFC 3463 "X.Y.Z", class agrees with action */
	dlv_action_t action;
	char *reason;		/* human text for the log line and the notice
				 * ("host mx[192.0.2.1] said: 550 5.1.1 no such
				 * user (in reply to RCPT TO command)"); printable
				 * ASCII, never empty */
	char *diag_type;	/* Diagnostic-Code type ("smtp", "x-unix"), or "" */
	char *diag_text;	/* Diagnostic-Code text (the remote reply), or "" */
	char *relay;		/* for the log: "mx.example.net[192.0.2.1]:25",
				 * "local", "none" ("" = "none") */
	char *remote_mta;	/* Remote-MTA host name (type dns), or "" */
	bool notified;		/* delivered to a next hop that took the
				 * recipient's NOTIFY (RFC 3461 section 5.2):
				 * it, not we, sends any success notice.
				 * Replies only (not status logs). */
} dlv_status_t;

typedef struct dlv_reply {
	int flags;		/* DLV_R_* */
	char *reason;		/* whole-request text: why the connection
				 * failed / why to avoid the site, or "" */
	int64_t conn_us;	/* time to set up the connection ("c" of
				 * delays=a/b/c/d), microseconds, 0 if unknown */
	int64_t xfer_us;	/* time to transmit ("d"), microseconds */
	dlv_status_t *st;	/* one per request recipient, same order */
	int64_t *offset;	/* echo of each recipient's offset */
	size_t n;
} dlv_reply_t;

/* Prepares a reply for req: n = req->nrcpt, every status unset. */
void dlv_reply_init(dlv_reply_t *rep, const dlv_request_t *req);
void dlv_reply_free(dlv_reply_t *rep);

/* Sets recipient i's status.  status: "X.Y.Z" (NULL: the action's default
 * 2.0.0 / 4.0.0 / 5.0.0; an invalid or disagreeing one is replaced by that
 * default with a warning logged).  relay may be NULL.  The reason is
 * formatted, cut to DLV_MAX_TEXT and made printable (controls and
 * non-ASCII become '?').  A recipient may be set again (last wins). */
void dlv_status_set(dlv_reply_t *rep, size_t i, dlv_action_t action,
    const char *status, const char *relay, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The Diagnostic-Code and Remote-MTA of recipient i (cut and cleaned
 * like reasons).  Either may be NULL. */
void dlv_status_diag(dlv_reply_t *rep, size_t i, const char *diag_type,
    const char *diag_text, const char *remote_mta);
/* Sets every recipient that has no status yet (all when force). */
void dlv_status_set_all(dlv_reply_t *rep, bool force, dlv_action_t action,
    const char *status, const char *relay, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* The whole-request flags and reason (cleaned like reasons). */
void dlv_reply_set_flags(dlv_reply_t *rep, int flags, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True once recipient i has a status. */
bool dlv_status_isset(const dlv_reply_t *rep, size_t i);

/* Encodes rep; a recipient still unset is sent as delayed 4.3.0
 * "delivery agent did not report a status" (a bug in the agent must not
 * lose mail).  Never fails: the builders keep every value valid. */
void dlv_reply_encode(const dlv_reply_t *rep, str_t *out);
attr_reader_t *dlv_reply_reader_new(void);
/* Decodes and validates a reply to req: exactly req->nrcpt statuses,
 * offsets equal to the request's, valid status codes agreeing with their
 * actions, known flags.  Returns 0, or -1 with a reason in err; *rep is
 * always safe to free. */
int dlv_reply_decode(const attr_msg_t *msg, const dlv_request_t *req,
    dlv_reply_t *rep, str_t *err);

/* ---- Blocking client (tests, tools, simple callers) ----------------- */

/* Sends req on fd and reads the reply within timeout_ms (whole
 * exchange; -1 none).  Returns 0 with *rep filled, or -1 with err set
 * (connection closed, timeout, malformed reply).  After -1 the caller
 * treats the agent as failed (defer the batch) and closes fd. */
int dlv_call(int fd, const dlv_request_t *req, dlv_reply_t *rep,
    int timeout_ms, str_t *err);
/* Connects to a UNIX socket (e.g. "private/smtp" relative to the current
 * directory) and does dlv_call.  Same results. */
int dlv_call_path(const char *path, const dlv_request_t *req,
    dlv_reply_t *rep, int timeout_ms, str_t *err);

/* ---- Agent side ----------------------------------------------------- */

typedef struct dlv_agent {
	/* Delivers req, filling rep (already initialised for req).  Any
	 * recipient left unset goes back as delayed 4.3.0.  The agent may
	 * take a long time (the watchdog is petted per request). */
	void (*deliver)(const dlv_request_t *req, dlv_reply_t *rep, void *ctx);
	void (*pre_jail)(void *ctx);	/* as in server_spec_t; may be NULL */
	void (*post_jail)(void *ctx);
	void (*pre_exit)(void *ctx);
	/* petrel check (server_spec_t.check); may be NULL. */
	int (*check)(void *ctx, str_t *err);
	void *ctx;
	/* Requests one connection may carry before the agent closes it
	 * (0: no limit). */
	unsigned max_requests;
} dlv_agent_t;

/* The main loop of every delivery agent: server_main() with the
 * SERVER_SINGLE model; per connection reads requests (ipc_timeout per
 * message), calls deliver, writes the reply; a malformed request is
 * logged and the connection closed (the agent lives on).  Never
 * returns. */
__attribute__((noreturn))
void dlv_agent_main(int argc, char **argv, const dlv_agent_t *agent);

/* The descriptor of the connection being served (-1 outside a request):
 * for test tools that must answer with broken bytes. */
int dlv_agent_client_fd(void);

/* Serves one connection (what dlv_agent_main does per client; exposed
 * for tests): returns the number of requests answered, or -1 when the
 * connection ended on an error (logged). */
int dlv_agent_serve_fd(int fd, const dlv_agent_t *agent, int timeout_ms);

/* ---- Logging -------------------------------------------------------- */

/* Timing of one delivery for the log line, in seconds: a = arrival ->
 * active queue, b = active -> handed to the agent, c = connection setup,
 * d = transmission; total = arrival -> now. */
typedef struct dlv_delays {
	double total, a, b, c, d;
} dlv_delays_t;

/* Appends Postfix's per-recipient line (without the program prefix):
 * "ID: to=<rcpt>, orig_to=<orig>, relay=R, delay=T, delays=a/b/c/d,
 * dsn=X.Y.Z, status=sent|deferred|bounced (reason)".  Addresses in
 * external form (a local part quoted where needed, as Postfix's
 * info_log_address_format = external); orig_to is left out when empty
 * or equal to the address; status is "sent" for delivered/relayed/
 * expanded, "deferred" for delayed, "bounced" for failed; decimals:
 * delay_logging_resolution_limit (digits).  The one formatter of these
 * lines: the agents (dlv_log_reply) and qmgr (its own verdicts) use it. */
void dlv_log_format(str_t *out, const char *queue_id, const dlv_rcpt_t *r,
    const dlv_status_t *st, const dlv_delays_t *dl, int digits);

/* The delays of a delivery as Postfix counts them, all times in
 * microseconds since the epoch (0: unknown): a = active - arrival, b =
 * handoff - active, c = conn_us (connection set-up), d = the rest up to
 * now (handoff -> now for an agent without a connection: local,
 * discard, error; xfer_us only when handoff is unknown); total = now -
 * arrival.  Negative parts (a clock step) become 0. */
void dlv_delays_compute(dlv_delays_t *dl, int64_t arrival, int64_t active,
    int64_t handoff, int64_t conn_us, int64_t xfer_us, int64_t now);

/* The delivery agent's lines, as Postfix's agents write them: one per
 * recipient of rep (dlv_log_format, logged at info level), delays from
 * the request's arrival and active times, handoff (when the agent read
 * the request) and the reply's conn_us/xfer_us.  Every recipient must
 * have a status.  dlv_agent_serve_fd calls it for every request; qmgr
 * logs only the outcomes it decides itself (no agent reply). */
void dlv_log_reply(const dlv_request_t *req, const dlv_reply_t *rep,
    int64_t handoff, int64_t now, int digits);

#endif
