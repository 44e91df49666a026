/* Internals of the SMTP client engine (the smtp directory only). */
#ifndef PETREL_SMTP_INT_H
#define PETREL_SMTP_INT_H
#include <stdbool.h>
#include <stdint.h>
#include "list.h"
#include "smtp.h"
#include "stream.h"
#include "tls.h"

/* Server features from the EHLO reply. */
enum {
	SMTP_F_ESMTP = 1 << 0,
	SMTP_F_PIPELINING = 1 << 1,
	SMTP_F_SIZE = 1 << 2,
	SMTP_F_8BITMIME = 1 << 3,
	SMTP_F_DSN = 1 << 4,
	SMTP_F_STARTTLS = 1 << 5,
	SMTP_F_SMTPUTF8 = 1 << 6,
	SMTP_F_ENHANCED = 1 << 7,
	SMTP_F_AUTH = 1 << 8,
};

/* Most bytes of the server's AUTH mechanism list kept. */
#define SMTP_AUTH_LIST_MAX	512

/* Reply lines: longest kept, most per reply, most bytes per reply. */
#define SMTP_REPLY_LINE_MAX	2048
#define SMTP_REPLY_LINES_MAX	1000
#define SMTP_REPLY_BYTES_MAX	65536
/* Commands sent ahead of their replies with PIPELINING. */
#define SMTP_PIPE_WINDOW	100
/* Sessions kept for reuse, all next hops together. */
#define SMTP_CACHE_MAX		16

/* Results of reading a reply. */
enum smtp_io {
	SMTP_IO_OK = 0,
	SMTP_IO_TIMEOUT,	/* no (complete) reply in time */
	SMTP_IO_LOST,		/* end of file or an I/O error */
	SMTP_IO_MALFORMED,	/* not an SMTP reply */
};

typedef struct smtp_reply {
	int code;		/* 200..599 */
	char dsn[16];		/* the reply's enhanced status, or X.0.0 */
	str_t text;		/* the whole reply, lines joined by spaces */
	str_t lines;		/* each line's text after the code, \n-ended */
} smtp_reply_t;

typedef struct smtp_sess {
	stream_t *s;
	tls_sess_t *tls;
	char *key;		/* next hop (cache key) */
	char *host;		/* server host name */
	char addr[SOCK_ADDR_STRLEN];
	unsigned port;
	str_t namaddr;		/* "host[addr]" */
	str_t relay;		/* "host[addr]:port" */
	unsigned features;
	uint64_t size_limit;	/* SIZE value, 0 = none given */
	str_t auth_mechs;	/* AUTH mechanisms offered, upper case,
				 * space-separated, in the server's order */
	char *tag;		/* credentials the session was made for
				 * ("|sasl:USER"), NULL for none */
	unsigned uses;		/* deliveries on this session */
	int64_t born_ms;
	int64_t idle_ms;	/* when it was kept */
	bool broken;		/* no more commands: close without QUIT */
	str_t line;		/* reply line buffer */
	list_node_t node;	/* in the client's cache */
} smtp_sess_t;

/* Credentials for one request, from smtp_sasl_password_maps. */
typedef struct smtp_creds {
	bool found;
	char user[SMTP_SASL_FIELD_MAX + 1];
	char pass[SMTP_SASL_FIELD_MAX + 1];
} smtp_creds_t;

struct smtp_client {
	smtp_config_t cfg;
	tls_ctx_t *tls;
	str_t tls_error;	/* why there is no TLS context */
	list_t cache;		/* kept sessions, oldest first */
	size_t ncache;
	smtp_shared_t shared;	/* .save NULL: no shared cache */
	char *service;		/* label prefix for the shared cache */
	str_t label;		/* scratch: labels, properties */
	str_t props;
	smtp_stats_t stats;
	unsigned rand_state;
	/* The request being delivered: deliveries a session may carry
	 * (0: no limit; smtp_request_t.reuse_limit). */
	unsigned req_reuse_limit;
	/* The request being delivered: its credentials (if any) and the
	 * tag that keys its sessions in the caches. */
	smtp_creds_t creds;
	str_t tag;
	/* The last credentials and their tag: most mail goes out with the
	 * same ones, and the digest is then not computed again. */
	smtp_creds_t memo;
	str_t memo_tag;
	str_t key;		/* next hop and tag: the kept sessions' key */
};

/* smtp_reply.c */
void smtp_reply_init(smtp_reply_t *r);
void smtp_reply_free(smtp_reply_t *r);
int smtp_reply_read(smtp_sess_t *ss, int timeout_ms, smtp_reply_t *r);
/* Parses EHLO reply lines into features and the SIZE limit. */
void smtp_ehlo_features(const smtp_reply_t *r, unsigned *features,
    uint64_t *size_limit, str_t *auth_mechs);
/* Text for an I/O failure: "lost connection with H[A] while STAGE". */
void smtp_io_reason(const smtp_sess_t *ss, int io, const char *stage,
    const smtp_reply_t *r, str_t *out);
/* DSN status for a failure class: "4.4.2" (lost/timeout), "4.5.0". */
const char *smtp_io_dsn(int io);

/* smtp_content.c: sends the content dot-stuffed with CRLF, folding lines
 * longer than limit (0: no limit).  0, or -1: the stream failed (its
 * flags say how), or the content could not be read (*content_err set,
 * reason in err). */
int smtp_send_body(stream_t *s, smtp_content_t *c, size_t limit,
    bool *content_err, str_t *err);

/* smtp_session.c */
typedef struct smtp_attempt {
	/* The last failure before a session was established. */
	str_t reason;
	str_t relay;		/* "host[addr]:port" once connected, else "" */
	str_t remote_reply;	/* the server's refusal, if that was it */
	str_t remote_mta;
	char dsn[16];
	bool hard;		/* 5xx: bounce when nothing better comes */
	bool tls_retry;		/* may: handshake failed, try plain text */
	bool connect_failed;	/* TCP connect failed (vs. a handshake) */
	bool auth_refused;	/* the server answered AUTH with a refusal
				 * (or offered nothing usable): it talked to
				 * us, no negative feedback */
} smtp_attempt_t;

smtp_sess_t *smtp_session_open(smtp_client_t *cl, const dns_server_t *srv,
    const dns_nexthop_t *nh, bool use_tls, smtp_attempt_t *at);
/* Sends QUIT (unless broken), closes, frees. */
void smtp_session_close(smtp_client_t *cl, smtp_sess_t *ss);
/* After a delivery: keep for reuse or close. */
void smtp_session_done(smtp_client_t *cl, smtp_sess_t *ss, const char *key);
/* A kept session for key, or NULL. */
smtp_sess_t *smtp_cache_take(smtp_client_t *cl, const char *key);
/* A session for the key (next hop and credentials tag: cl->key; srv
 * NULL) or for server srv's address and port (and cl->tag) from the
 * shared cache, checked for use, or NULL. */
smtp_sess_t *smtp_shared_take(smtp_client_t *cl, const char *key,
    const dns_server_t *srv);
/* A request for key comes: kept plain-text sessions of other next hops
 * go to the shared cache (this process is busy elsewhere now). */
void smtp_cache_handover(smtp_client_t *cl, const char *key);
/* Every kept session: to the shared cache, or QUIT (the client ends). */
void smtp_cache_drain(smtp_client_t *cl);

/* smtp_sasl.c */
/* The credentials for the request (sender, next hop) into cl->creds, and
 * cl->tag and cl->key.  0; -1 when the tables failed (reason in err: the
 * delivery is deferred), -2 when the entry found is unusable (reason in
 * err: a configuration error). */
int smtp_sasl_prepare(smtp_client_t *cl, const char *sender,
    const char *nexthop, str_t *err);
/* Forgets the request's credentials. */
void smtp_sasl_forget(smtp_client_t *cl);
/* The mechanism to use among offered (upper case, space-separated) with
 * the filter and the options: "PLAIN", "LOGIN" or NULL. */
const char *smtp_sasl_choose(const smtp_sasl_config_t *c, const char *offered,
    unsigned opts);
/* SMTP AUTH on the established session ss with cl->creds.  true when
 * logged in; false with the failure in at. */
bool smtp_sasl_login(smtp_client_t *cl, smtp_sess_t *ss, smtp_reply_t *r,
    smtp_attempt_t *at);

/* smtp_trans.c: delivers the request's pending recipients over ss.
 * Returns SMTP_TRANS_STALE when a reused session turned out to be dead
 * before anything happened (recipients untouched), else SMTP_TRANS_DONE
 * (recipients decided, or pending with their soft reason recorded). */
enum { SMTP_TRANS_DONE, SMTP_TRANS_STALE };
int smtp_session_deliver(smtp_client_t *cl, smtp_sess_t *ss,
    smtp_request_t *req, bool reused);

/* smtp_deliver.c */
/* Records a result for r: status, DSN, relay, diag (printf-style). */
void smtp_rcpt_result(smtp_rcpt_t *r, enum smtp_rstat st, const char *dsn,
    const char *relay, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A soft failure kept with a pending recipient (tried again elsewhere,
 * else deferred with it). */
void smtp_rcpt_soft(smtp_rcpt_t *r, const char *dsn, const char *relay,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The server reply behind r's status (for the DSN). */
void smtp_rcpt_remote(smtp_rcpt_t *r, const char *mta, const char *reply);
/* Has a recorded soft failure. */
static inline bool smtp_rcpt_tried(const smtp_rcpt_t *r)
{
	return str_len(&r->diag) > 0;
}

#endif
