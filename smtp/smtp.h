/* The SMTP client engine: delivers one request (a message, a next hop and
 * a batch of recipients) over SMTP and reports, per recipient, what
 * happened; plus what qmgr needs for its concurrency feedback and
 * destination status cache.  The agent main (smtp.c) reads requests from
 * qmgr and the content from the queue file; everything else is here, in
 * libsmtp.a, so that tests drive it directly against smtp-sink.
 * doc/smtp.md describes the behaviour in full.
 *
 *	smtp_config_t cfg;
 *	smtp_config_defaults(&cfg);		// or smtp_config_load()
 *	smtp_client_t *cl = smtp_client_new(&cfg, tls_ctx_or_NULL);
 *	smtp_request_t req;
 *	smtp_request_init(&req, rcpts, nrcpt);	// then fill the envelope
 *	smtp_deliver(cl, &req);			// never fails as a whole
 *	... req.rcpt[i].status/dsn/diag/relay, req.conn_failed ...
 *	smtp_request_release(&req);
 *	smtp_client_free(cl);			// QUIT to cached sessions
 *
 * Sessions are kept after a delivery (connection reuse) and handed to the
 * next request for the same next hop; smtp_client_cache_deadline() and
 * smtp_client_cache_expire() let the caller close them in time.  With a
 * shared cache (smtp_client_set_shared) sessions also move to and come
 * from other processes. */
#ifndef PETREL_SMTP_H
#define PETREL_SMTP_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include "delivery.h"
#include "dns.h"
#include "dsn_notify.h"
#include "sasl_opts.h"
#include "str.h"
#include "tls.h"

struct qfile;

/* ---- Requests and results ---- */

enum smtp_rstat {
	SMTP_R_PENDING = 0,	/* not decided yet (never after smtp_deliver) */
	SMTP_R_SENT,		/* the server took responsibility (2xx) */
	SMTP_R_DEFER,		/* try again later */
	SMTP_R_BOUNCE,		/* permanent failure: return to sender */
};

typedef struct smtp_rcpt {
	/* In: the recipient as the delivery request has it (delivery.h),
	 * read only.  orig (the ORCPT fallback) and orcpt may be NULL or
	 * ""; offset is not used. */
	dlv_rcpt_t in;
	/* Out. */
	enum smtp_rstat status;
	char dsn[16];		/* "2.0.0", "4.4.1", "5.1.1" */
	dlv_action_t action;	/* DSN action (delivery.h): DLV_ACT_RELAYED
				 * or _DELIVERED with SMTP_R_SENT, _DELAYED,
				 * _FAILED; DLV_ACT_NONE while pending */
	bool dsn_passed;	/* NOTIFY went to a DSN-aware server: it, not
				 * we, reports success */
	str_t diag;		/* server reply or our reason, one line */
	str_t relay;		/* "mx.example.com[192.0.2.1]:25" or "none" */
	str_t remote_reply;	/* the server's reply the status comes from
				 * (DSN Diagnostic-Code: smtp), "" if none */
	str_t remote_mta;	/* that server's host name (Remote-MTA) */
	/* Engine state. */
	int tstate;
	bool again;		/* 452: try in a new transaction */
} smtp_rcpt_t;

enum smtp_body { SMTP_BODY_UNKNOWN, SMTP_BODY_7BIT, SMTP_BODY_8BITMIME };

/* Where the message content comes from: lines without their terminator
 * (the engine sends CRLF), as qfile_read_line() returns them. */
typedef struct smtp_content {
	/* Back to the first line; 0 or -1 (with a reason in err). */
	int (*rewind)(void *ctx, str_t *err);
	/* Like qfile_read_line: enum qf_line, or -1 with a reason in err. */
	int (*read)(void *ctx, str_t *line, size_t max, str_t *err);
	void *ctx;
} smtp_content_t;

typedef struct smtp_request {
	const char *queue_id;	/* for log lines */
	const char *nexthop;	/* "example.com", "[192.0.2.1]:2525", ... */
	const char *sender;	/* internal form, "" for the null sender */
	const char *envid;	/* DSN ENVID (decoded) or NULL */
	int ret;		/* QF_RET_* */
	bool smtputf8;		/* the sender asked for SMTPUTF8 */
	enum smtp_body body;
	uint64_t size;		/* content bytes, for SIZE= */
	smtp_content_t content;
	smtp_rcpt_t *rcpt;
	size_t nrcpt;
	unsigned reuse_limit;	/* deliveries a session may carry (qmgr's
				 * messages_per_connection); 0: no limit */
	/* Out: what qmgr needs beyond the recipients. */
	bool conn_failed;	/* no server got past connecting and the
				 * handshake (greeting, EHLO, STARTTLS): negative
				 * concurrency feedback */
	bool avoid_destination;	/* the whole destination is out of reach
				 * (no server accepted a TCP connection, or the
				 * DNS failed temporarily): qmgr's DSC */
	str_t reason;		/* with conn_failed: the last failure */
	double delay_conn;	/* seconds connecting and in handshakes */
	double delay_xfer;	/* seconds in transactions */
} smtp_request_t;

void smtp_request_init(smtp_request_t *req, smtp_rcpt_t *rcpt, size_t n);
void smtp_request_release(smtp_request_t *req);

/* Contents for requests: a queue file (positioned by the engine), and
 * text in memory (tests, tools).  The source must outlive the delivery. */
void smtp_content_qfile(smtp_content_t *c, struct qfile *qf);
typedef struct smtp_memtext {
	const char *text;
	size_t len, pos;
} smtp_memtext_t;
void smtp_content_mem(smtp_content_t *c, smtp_memtext_t *m, const char *text,
    size_t len);

/* ---- Configuration ---- */

/* Longest user name and password taken from smtp_sasl_password_maps. */
#define SMTP_SASL_FIELD_MAX	512

struct maps;

/* SMTP AUTH in the client (smtp_sasl_*, doc/smtp.md "SMTP AUTH"). */
typedef struct smtp_sasl_config {
	char proto[8];			/* "smtp" or "lmtp": names the
					 * parameters in messages */
	bool enable;			/* smtp_sasl_auth_enable */
	bool sender_dependent;		/* smtp_sender_dependent_authentication */
	bool soft_bounce;		/* smtp_sasl_auth_soft_bounce */
	unsigned opts;			/* smtp_sasl_security_options:
					 * SASL_OPT_* (sasl_opts.h) */
	unsigned tls_opts;		/* smtp_sasl_tls_security_options */
	char filter[512];		/* smtp_sasl_mechanism_filter */
	struct maps *maps;		/* smtp_sasl_password_maps, or NULL */
} smtp_sasl_config_t;

/* Opens the tables of spec ("type:name, type:name") into cfg->maps
 * (closed by smtp_config_release); 0, or -1 with a reason. */
int smtp_sasl_maps_open(smtp_sasl_config_t *cfg, const char *spec,
    str_t *err);
/* Checks and sets a mechanism filter; 0, or -1 with a reason. */
int smtp_sasl_filter_set(smtp_sasl_config_t *cfg, const char *filter,
    str_t *err);

typedef struct smtp_config {
	/* Timeouts in milliseconds (0 = none). */
	int connect_timeout_ms;
	int helo_timeout_ms;	/* greeting, EHLO/HELO, STARTTLS command */
	int starttls_timeout_ms;	/* the TLS handshake */
	int mail_timeout_ms;
	int rcpt_timeout_ms;
	int data_init_timeout_ms;
	int data_xfer_timeout_ms;
	int data_done_timeout_ms;
	int rset_timeout_ms;
	int quit_timeout_ms;
	char helo_name[256];	/* sent with EHLO/HELO, or LHLO */
	bool lmtp;		/* LMTP (RFC 2033): LHLO, a reply per
				 * recipient after the dot, next hops
				 * unix:PATH, inet:HOST:PORT, no MX lookup */
	unsigned default_port;	/* 25 (24 for LMTP) */
	size_t mx_session_limit;	/* 0: no limit */
	size_t line_length_limit;	/* 0: no limit */
	bool skip_5xx_greeting;
	bool always_send_ehlo;	/* false: HELO only */
	enum tls_level tls_level;
	bool connection_cache;	/* keep sessions for reuse */
	int cache_time_limit_ms;	/* idle time of a kept session */
	int reuse_time_limit_ms;	/* age after which it is not reused */
	unsigned reuse_count_limit;	/* uses per session; 0: no limit */
	dns_opts_t dns;		/* dns.resolver borrowed, not freed */
	smtp_sasl_config_t sasl;	/* maps closed by smtp_config_release */
} smtp_config_t;

/* Built-in defaults (the parameters' defaults; dns.lookup = native so
 * nothing is asked of the network unless the caller says so). */
void smtp_config_defaults(smtp_config_t *cfg);
/* LMTP: the defaults, then from the lmtp_* parameters (no TLS, no SASL). */
int smtp_config_load_lmtp(smtp_config_t *cfg, str_t *err);
/* From the smtp_* parameters of the loaded configuration (plus
 * inet_protocols, myhostname, dns_server_address: a resolver is created
 * and must be freed with smtp_config_release()).  0, or -1 with a reason. */
int smtp_config_load(smtp_config_t *cfg, str_t *err);
/* This host's addresses (inet_interfaces and proxy_interfaces: "all"
 * is every interface address, "loopback-only" 127.0.0.1 and ::1, else
 * the addresses or names listed) into cfg->dns.own_addrs, so that an MX
 * host that is us is recognised as a mail loop.  0, or -1 with a reason. */
int smtp_own_addresses(smtp_config_t *cfg, str_t *err);
void smtp_config_release(smtp_config_t *cfg);

/* ---- The client ---- */

typedef struct smtp_client smtp_client_t;

/* cfg is copied; tls (NULL: no TLS possible) is borrowed.  With a level
 * above may and no context every delivery defers, saying so. */
smtp_client_t *smtp_client_new(const smtp_config_t *cfg, tls_ctx_t *tls);
/* Why there is no TLS context (for the deferral reason above). */
void smtp_client_set_tls_error(smtp_client_t *cl, const char *why);
/* Hands every kept plain-text session to the shared cache (if any), QUIT
 * to the others, then frees. */
void smtp_client_free(smtp_client_t *cl);

/* Delivers req (see above).  Every recipient ends SENT, DEFER or BOUNCE. */
void smtp_deliver(smtp_client_t *cl, smtp_request_t *req);

/* Kept sessions: how many, the monotonic time (event_now_ms) at which the
 * next one must be closed (-1: none), closing those that are due (or all
 * with all), and the descriptors of kept sessions (a readable one means
 * the server spoke or left: smtp_client_cache_check closes it). */
size_t smtp_client_cached(const smtp_client_t *cl);
int64_t smtp_client_cache_deadline(const smtp_client_t *cl);
void smtp_client_cache_expire(smtp_client_t *cl, int64_t now_ms, bool all);
size_t smtp_client_cache_fds(const smtp_client_t *cl, int *fds, size_t max);
void smtp_client_cache_check(smtp_client_t *cl, int fd);

/* ---- Sessions shared with other processes ---- */

/* A cache outside the process (the scache daemon; the agent plugs in
 * libglobal/scache.h's client) that plain-text sessions go to when this
 * process would otherwise strand them: when it is freed, when a request
 * for another next hop comes, when a kept session is displaced.  Before
 * connecting, the engine asks it by destination, then by endpoint before
 * each TCP connection.  Labels are "SERVICE/NEXTHOP" and
 * "SERVICE/ADDR:PORT".  doc/smtp.md, doc/protocol-scache.md. */
typedef struct smtp_shared {
	/* Hands fd over under the labels, to stay idle at most ttl_ms.
	 * Returns an enum scache_save_result: SCACHE_SAVED and
	 * SCACHE_UNKNOWN (the engine closes its copy without QUIT),
	 * SCACHE_UNSENT (it is still ours: QUIT). */
	int (*save)(void *ctx, const char *dest, const char *endpoint,
	    int ttl_ms, const char *props, int fd);
	/* A session for the label (an endpoint label if by_endpoint, else a
	 * destination label): its descriptor with props set, or -1. */
	int (*find)(void *ctx, bool by_endpoint, const char *label,
	    str_t *props);
	void *ctx;
} smtp_shared_t;

/* Starts sharing (sh is copied; NULL stops).  service names this
 * process's transport in the labels (the master.cf service name).  No
 * sharing with smtp_connection_cache_on_demand = no or a TLS level above
 * may (every session is TLS then, and TLS state cannot leave the
 * process). */
void smtp_client_set_shared(smtp_client_t *cl, const smtp_shared_t *sh,
    const char *service);

/* Counters since the client was made (tests, benchmarks). */
typedef struct smtp_stats {
	unsigned long connects;		/* TCP connections attempted */
	unsigned long connected;	/* ... that succeeded */
	unsigned long sessions;		/* handshakes completed */
	unsigned long reused;		/* deliveries on a kept session */
	unsigned long transactions;	/* MAIL commands sent */
	unsigned long tls;		/* TLS sessions established */
	unsigned long shared_found;	/* sessions taken from the shared cache */
	unsigned long shared_saved;	/* sessions handed to it */
	unsigned long auth_ok;		/* SMTP AUTH logins that succeeded */
	unsigned long auth_failed;	/* ... that the server refused */
} smtp_stats_t;
const smtp_stats_t *smtp_client_stats(const smtp_client_t *cl);

/* The delivery agent under master (smtp_agent.c): SMTP, or LMTP with
 * lmtp.  Returns when master says so. */
void smtp_agent_main(int argc, char **argv, bool lmtp);

#endif
