/* The client rate and concurrency protocol: requests to the anvil daemon,
 * which counts per-client events (connections, messages, recipients, new
 * TLS sessions, AUTH commands) for every smtpd process, and the client
 * smtpd uses.  doc/protocol-anvil.md is the specification.
 *
 *   client (smtpd)                           daemon (anvil)
 *   anvil_clnt_connect(ac, ident, &n, &r)    anvil_request_parse(msg, &req)
 *   anvil_clnt_event(ac, op, ident, &rate)   ... count, answer with
 *   anvil_clnt_disconnect(ac, ident)         anvil_reply_encode()
 *
 * An ident is "SERVICE:ADDRESS" (smtp:192.0.2.1).  Every request but
 * disconnect gets exactly one reply, in order. */
#ifndef PETREL_ANVIL_H
#define PETREL_ANVIL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "attr.h"
#include "str.h"

/* Limits (checked by both sides). */
#define ANVIL_IDENT_MAX		256	/* octets of an ident */
#define ANVIL_MSG_MAX		1024	/* octets of one message */

/* Request names, in the order of anvil_op_t. */
#define ANVIL_REQ_CONNECT	"connect"
#define ANVIL_REQ_DISCONNECT	"disconnect"
#define ANVIL_REQ_MESSAGE	"message"
#define ANVIL_REQ_RECIPIENT	"recipient"
#define ANVIL_REQ_NEWTLS	"newtls"
#define ANVIL_REQ_NEWTLS_REPORT	"newtls_report"
#define ANVIL_REQ_AUTH		"auth"
#define ANVIL_REQ_LOOKUP	"lookup"

/* Reply status. */
enum { ANVIL_STAT_OK = 0 };

typedef enum anvil_op {
	ANVIL_OP_CONNECT,
	ANVIL_OP_DISCONNECT,
	ANVIL_OP_MESSAGE,
	ANVIL_OP_RECIPIENT,
	ANVIL_OP_NEWTLS,
	ANVIL_OP_NEWTLS_REPORT,
	ANVIL_OP_AUTH,
	ANVIL_OP_LOOKUP,
	ANVIL_OP_COUNT
} anvil_op_t;

/* The request name of op. */
const char *anvil_op_name(anvil_op_t op);

/* A decoded request; ident points into the message it came from. */
typedef struct anvil_req {
	anvil_op_t op;
	const char *ident;
} anvil_req_t;

/* What a lookup reports (and what the daemon keeps per ident). */
typedef struct anvil_counts {
	int32_t count;		/* connections open now */
	int32_t rate;		/* connections in the current time unit */
	int32_t message, recipient, newtls, auth;	/* events, same unit */
} anvil_counts_t;

/* Reader limits and schemas of requests and replies. */
extern const attr_limits_t anvil_limits;
attr_reader_t *anvil_request_reader_new(void);
attr_reader_t *anvil_reply_reader_new(void);

/* An ident is 1..ANVIL_IDENT_MAX octets of printable ASCII without
 * space. */
bool anvil_ident_ok(const char *s);

/* Encoders (append one message to out). */
void anvil_request_encode(str_t *out, anvil_op_t op, const char *ident);
/* The reply to op: connect carries count and rate, the events their
 * rate, lookup every counter (c may be NULL for the others). */
void anvil_reply_encode(str_t *out, anvil_op_t op, const anvil_counts_t *c);

/* Checks a decoded request beyond the schema.  0, or -1 with a one-line
 * reason that is safe to log. */
int anvil_request_parse(const attr_msg_t *m, anvil_req_t *req, str_t *err);

/* ---- The client ---- */

typedef struct anvil_clnt anvil_clnt_t;

/* path: the endpoint (private/anvil, relative to the queue directory);
 * timeout_ms: the longest a request and its reply may take.  Nothing is
 * opened yet: the connection is made by the first request and kept. */
anvil_clnt_t *anvil_clnt_new(const char *path, int timeout_ms);
void anvil_clnt_free(anvil_clnt_t *ac);

/* Each returns 0 with the counters filled, or -1 when anvil cannot be
 * asked: the caller then applies no limit.  A failure closes the
 * connection, is logged (at most once a minute per process) and makes
 * the client leave anvil alone for ANVIL_CLNT_BACKOFF_MS, failing at once
 * without a system call meanwhile. */
int anvil_clnt_connect(anvil_clnt_t *ac, const char *ident, int *count,
    int *rate);
/* op: ANVIL_OP_MESSAGE, _RECIPIENT, _NEWTLS, _NEWTLS_REPORT or _AUTH. */
int anvil_clnt_event(anvil_clnt_t *ac, anvil_op_t op, const char *ident,
    int *rate);
int anvil_clnt_lookup(anvil_clnt_t *ac, const char *ident, anvil_counts_t *c);
/* No reply is read: the request is written and the caller goes on. */
void anvil_clnt_disconnect(anvil_clnt_t *ac, const char *ident);
/* False while the client leaves anvil alone after a failure. */
bool anvil_clnt_usable(const anvil_clnt_t *ac);

/* The longest a request and its reply may take (client), and a request
 * begun may take to arrive whole (daemon). */
#define ANVIL_TIMEOUT_MS	2000
#define ANVIL_CLNT_BACKOFF_MS	10000
#define ANVIL_CLNT_WARN_MS	60000

#endif
