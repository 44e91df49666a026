/* The connection cache protocol: requests to the scache daemon, which
 * keeps idle SMTP sessions (connected sockets, passed as descriptors) for
 * every smtp process, and the client the smtp agent uses.
 * doc/protocol-scache.md is the specification.
 *
 *   client (smtp)                         daemon (scache)
 *   scache_clnt_save(sc, dest, endpoint,   scache_request_parse(msg, &req)
 *       ttl_ms, props, fd)                  ... store, answer with
 *   fd = scache_clnt_find(sc, how, label,   scache_reply_encode()
 *       &props)
 *
 * One request, one reply; a descriptor rides on the first byte of the
 * save request and of a find reply that found something. */
#ifndef PETREL_SCACHE_H
#define PETREL_SCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "attr.h"
#include "str.h"

/* Limits (checked by both sides). */
#define SCACHE_LABEL_MAX	512	/* octets of a dest or endpoint label */
#define SCACHE_PROPS_MAX	2048	/* octets of the properties */
#define SCACHE_MSG_MAX		8192	/* octets of one message */
/* Descriptors that may wait for the request they belong to. */
#define SCACHE_FDS_PENDING	2

/* Request names. */
#define SCACHE_REQ_SAVE		"save"
#define SCACHE_REQ_FIND_DEST	"find_dest"
#define SCACHE_REQ_FIND_ENDP	"find_endpoint"

/* Reply status. */
enum { SCACHE_STAT_OK = 0, SCACHE_STAT_NONE = 1 };

typedef enum scache_op {
	SCACHE_OP_SAVE,
	SCACHE_OP_FIND_DEST,
	SCACHE_OP_FIND_ENDP,
} scache_op_t;

/* A decoded request; the strings point into the message it came from. */
typedef struct scache_req {
	scache_op_t op;
	const char *dest;	/* save, find_dest; else NULL */
	const char *endpoint;	/* save, find_endpoint; else NULL */
	const char *props;	/* save; else NULL */
	int32_t ttl_ms;		/* save: > 0 */
} scache_req_t;

/* Reader limits and schemas of requests and replies. */
extern const attr_limits_t scache_limits;
attr_reader_t *scache_request_reader_new(void);
attr_reader_t *scache_reply_reader_new(void);

/* A label is 1..SCACHE_LABEL_MAX octets without space or control
 * characters. */
bool scache_label_ok(const char *s);
/* Label text for a log line: other than printable ASCII becomes '?',
 * cut to SCACHE_LABEL_MAX. */
void scache_label_printable(const char *s, str_t *out);

/* Encoders (append one message to out). */
void scache_save_encode(str_t *out, const char *dest, const char *endpoint,
    int32_t ttl_ms, const char *props);
void scache_find_encode(str_t *out, scache_op_t op, const char *label);
/* status SCACHE_STAT_OK with the session's labels and properties (find),
 * or only a status (save; nothing found: the strings are NULL). */
void scache_reply_encode(str_t *out, int status, const char *dest,
    const char *endpoint, const char *props);

/* Checks a decoded request beyond the schema (which attributes each
 * request takes, labels, sizes, ttl).  0, or -1 with a one-line reason
 * that is safe to log. */
int scache_request_parse(const attr_msg_t *m, scache_req_t *req, str_t *err);

/* ---- The client ---- */

typedef struct scache_clnt scache_clnt_t;

/* path: the endpoint (private/scache, relative to the queue directory);
 * timeout_ms: the longest a request and its reply may take (twice that
 * when the reply dribbles in); idle_ms: scache_clnt_idle() drops the
 * connection after that long unused.  Nothing is opened yet. */
scache_clnt_t *scache_clnt_new(const char *path, int timeout_ms, int idle_ms);
/* Closes the connection, frees. */
void scache_clnt_free(scache_clnt_t *sc);

/* Results of a save. */
enum scache_save_result {
	SCACHE_SAVED,	/* the cache has the session: close our copy */
	SCACHE_UNSENT,	/* nothing was sent: the session is still ours */
	SCACHE_UNKNOWN,	/* sent, no answer: it may be in the cache; close
			 * our copy without QUIT */
};
enum scache_save_result scache_clnt_save(scache_clnt_t *sc, const char *dest,
    const char *endpoint, int ttl_ms, const char *props, int fd);
/* A session for label (op SCACHE_OP_FIND_DEST or SCACHE_OP_FIND_ENDP):
 * its descriptor (close-on-exec; now the caller's) with the properties in
 * props, or -1 when there is none or the cache cannot be asked. */
int scache_clnt_find(scache_clnt_t *sc, scache_op_t op, const char *label,
    str_t *props);
/* Drops the connection when unused for idle_ms by now_ms (monotonic). */
void scache_clnt_idle(scache_clnt_t *sc, int64_t now_ms);
/* When scache_clnt_idle() has something to do (-1: never). */
int64_t scache_clnt_deadline(const scache_clnt_t *sc);
/* False while the client leaves the cache alone after a failure. */
bool scache_clnt_usable(const scache_clnt_t *sc);
/* How long a failure makes the client leave the cache alone. */
#define SCACHE_CLNT_BACKOFF_MS	60000

#endif
