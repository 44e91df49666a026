/* smtpd(8) internals: the SMTP server's parts, shared by smtpd.c (the
 * daemon), the unit tests and the fuzz target.  doc/smtpd.md describes
 * the behaviour; this header is the map of the code.
 *
 *   smtpd_cmd.c      command line -> verb + argument (pure, fuzzed)
 *   smtpd_net.c      network lists (mynetworks): CIDR patterns, tables
 *   smtpd_check.c    restriction lists (smtpd_*_restrictions) and the
 *                    checks behind them (relay, access tables, unlisted
 *                    recipients, DNS existence of a domain)
 *   smtpd_cfg.c      the configuration snapshot a session runs with
 *   smtpd_dest.c     where accepted mail goes: cleanup(8), or sendmail
 *                    for the stand-alone mode (smtpd -S)
 *   smtpd_anvil.c    client connection count and rate limits, counted
 *                    by anvil(8) for all smtpd processes
 *   smtpd_session.c  one SMTP session: the protocol engine
 *
 * Everything that talks to the client goes through a stream_t, so a
 * session can run over a socket, over stdin/stdout, or over memory (the
 * tests and the fuzzer install a stream I/O layer). */
#ifndef PETREL_SMTPD_H
#define PETREL_SMTPD_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "addr.h"
#include "cleanup_clnt.h"
#include "content_filter.h"
#include "dns.h"
#include "local_rcpt.h"
#include "maps.h"
#include "milter.h"
#include "sasl_opts.h"
#include "sock.h"
#include "str.h"
#include "stream.h"
#include "tls.h"

/* ---- Commands (smtpd_cmd.c) ------------------------------------------ */

enum smtpd_verb {
	SMTPD_V_NONE = 0,	/* empty line */
	SMTPD_V_UNKNOWN,	/* a word we do not know */
	SMTPD_V_HELO, SMTPD_V_EHLO, SMTPD_V_MAIL, SMTPD_V_RCPT,
	SMTPD_V_DATA, SMTPD_V_BDAT, SMTPD_V_RSET, SMTPD_V_NOOP,
	SMTPD_V_QUIT, SMTPD_V_VRFY, SMTPD_V_HELP, SMTPD_V_STARTTLS,
	SMTPD_V_EXPN, SMTPD_V_ETRN, SMTPD_V_AUTH,
	SMTPD_V_COUNT
};

/* What is wrong with a command line before its verb is even looked at. */
enum smtpd_cmd_status {
	SMTPD_CMD_OK = 0,
	SMTPD_CMD_NUL,		/* a NUL byte */
	SMTPD_CMD_CONTROL,	/* another control byte (TAB and bare CR aside) */
};

typedef struct smtpd_cmd {
	enum smtpd_verb verb;
	const char *word;	/* the verb as sent (points into the line) */
	size_t wordlen;
	const char *arg;	/* after the verb and its blanks, trailing
				 * blanks cut; "" when there is none */
	size_t arglen;
} smtpd_cmd_t;

/* Splits one command line (without its terminator; any bytes).  The verb
 * is the text up to the first blank, matched without regard to case.
 * Blanks are spaces and tabs.  The result points into line. */
enum smtpd_cmd_status smtpd_cmd_parse(const char *line, size_t len,
    smtpd_cmd_t *cmd);
/* Upper-case canonical name of a known verb ("MAIL"); "UNKNOWN"/"". */
const char *smtpd_verb_name(enum smtpd_verb v);

/* BDAT argument: "SIZE" or "SIZE LAST" (LAST in any case).  Size is 1 to
 * 19 digits.  False for anything else. */
bool smtpd_bdat_parse(const char *arg, size_t len, uint64_t *size,
    bool *last);

/* A HELO/EHLO argument we can store and pass on: 1..255 bytes, no control
 * bytes, no blanks inside.  Returns false with *why otherwise. */
bool smtpd_helo_ok(const char *arg, size_t len, const char **why);

/* ---- Network lists (smtpd_net.c) ------------------------------------- */

/* A list like mynetworks: blank/comma separated patterns, first match
 * wins: 192.0.2.1, 192.0.2.0/24, [2001:db8::1], [2001:db8::]/32 (brackets
 * optional for IPv6), type:table (the address looked up as a key),
 * !pattern (a match means "no match", stop).  Host bits set under the
 * mask are an error (192.0.2.1/24), as is anything unparsable. */
typedef struct smtpd_netlist smtpd_netlist_t;
smtpd_netlist_t *smtpd_netlist_new(const char *param, const char *spec,
    str_t *err);
/* addr: a numeric address as text ("192.0.2.1", "2001:db8::1"; an
 * IPv4-mapped IPv6 address matches as IPv4).  1 match, 0 no match, -1 a
 * table could not be read (err). */
int smtpd_netlist_match(smtpd_netlist_t *l, const char *addr, str_t *err);
void smtpd_netlist_free(smtpd_netlist_t *l);

/* ---- Restrictions (smtpd_check.c) ------------------------------------ */

/* One reply to the client: code, enhanced status, text (no CR/LF). */
typedef struct smtpd_reply {
	int code;
	char dsn[16];
	str_t text;
} smtpd_reply_t;
#define SMTPD_REPLY_INIT { 0, "", STR_INIT }

/* Outcome of a restriction list. */
enum smtpd_chk {
	SMTPD_CHK_DUNNO = 0,	/* no decision: go on */
	SMTPD_CHK_OK,		/* permit: stop this list */
	SMTPD_CHK_REJECT,	/* reject (4xx or 5xx) with a reply */
};

/* Where in the session a list is evaluated, for messages. */
enum smtpd_stage {
	SMTPD_ST_CONNECT, SMTPD_ST_HELO, SMTPD_ST_MAIL, SMTPD_ST_RCPT,
	SMTPD_ST_DATA, SMTPD_ST_EOD, SMTPD_ST_VRFY,
};

typedef struct smtpd_cfg smtpd_cfg_t;
typedef struct smtpd_restr smtpd_restr_t;

/* What the checks may look at.  NULL fields are unknown (a restriction
 * that needs one does nothing). */
typedef struct smtpd_check_ctx {
	const smtpd_cfg_t *cfg;
	const char *client_name;	/* "unknown" if not known */
	const char *client_addr;	/* numeric */
	const char *helo;		/* HELO/EHLO argument */
	const char *sender;		/* internal form, "" = <> */
	const char *rcpt;		/* internal form */
	const char *local_addr;		/* our end of the connection */
	bool trusted;			/* stand-alone mode: a local user */
	const char *sasl_username;	/* SMTP AUTH login, NULL if none */
	/* The transaction's content filter: a FILTER answer of an access
	 * table replaces it (the last one wins); NULL: FILTER is not
	 * possible here (logged and ignored). */
	str_t *filter;
} smtpd_check_ctx_t;

/* Parses a restriction list (blank/comma separated; check_*_access takes
 * the next word as its table).  Tables are opened here; one that cannot
 * be opened is kept as broken (its checks answer 451 4.3.0 and log why)
 * and a warning goes to err_warn.  NULL with err set for an unknown
 * restriction or a missing table argument. */
smtpd_restr_t *smtpd_restr_parse(const char *param, const char *value,
    str_t *err, str_t *err_warn);
void smtpd_restr_free(smtpd_restr_t *r);
bool smtpd_restr_empty(const smtpd_restr_t *r);
/* True if the list can refuse relaying on its own (reject_unauth_
 * destination, defer_unauth_destination, reject, defer): the never-an-
 * open-relay check at start-up. */
bool smtpd_restr_stops_relay(const smtpd_restr_t *r);
/* True if the list has a reject_*sender_login_mismatch. */
bool smtpd_restr_uses_login_maps(const smtpd_restr_t *r);

/* Evaluates list r; on SMTPD_CHK_REJECT fills reply. */
enum smtpd_chk smtpd_check(const smtpd_restr_t *r, smtpd_check_ctx_t *ctx,
    enum smtpd_stage stage, smtpd_reply_t *reply);

/* The individual checks, also used by smtpd_session.c (VRFY, the
 * implicit reject_unlisted_recipient) and the unit tests. */
/* Is rcpt's domain ours to accept from anyone (mydestination,
 * relay_domains, our own address literal), with no sender-specified
 * routing in the local part?  1 yes, 0 no, -1 a table failed (reply). */
int smtpd_rcpt_authorized(smtpd_check_ctx_t *ctx, const char *rcpt,
    smtpd_reply_t *reply);
/* Is the domain of addr local (mydestination, no domain, our literal)?
 * 1, 0, -1 (table failure, err). */
int smtpd_domain_is_local(const smtpd_cfg_t *cfg, const char *domain,
    const char *local_addr, str_t *err);
/* reject_unlisted_recipient: DUNNO or REJECT (550 User unknown, or 451
 * when a table could not be read). */
enum smtpd_chk smtpd_check_unlisted(smtpd_check_ctx_t *ctx,
    const char *rcpt, smtpd_reply_t *reply);

/* ---- Configuration (smtpd_cfg.c) ------------------------------------- */

enum smtpd_bare_lf { SMTPD_LF_ACCEPT, SMTPD_LF_NORMALIZE, SMTPD_LF_REJECT };
enum smtpd_tls_level { SMTPD_TLS_NONE, SMTPD_TLS_MAY, SMTPD_TLS_ENCRYPT };

/* EHLO keywords (smtpd_discard_ehlo_keywords). */
enum {
	SMTPD_EXT_PIPELINING = 1 << 0, SMTPD_EXT_SIZE = 1 << 1,
	SMTPD_EXT_8BITMIME = 1 << 2, SMTPD_EXT_DSN = 1 << 3,
	SMTPD_EXT_ENHANCED = 1 << 4, SMTPD_EXT_SMTPUTF8 = 1 << 5,
	SMTPD_EXT_CHUNKING = 1 << 6, SMTPD_EXT_STARTTLS = 1 << 7,
	SMTPD_EXT_VRFY = 1 << 8, SMTPD_EXT_AUTH = 1 << 9,
};

/* ---- Lists of tables (smtpd_check.c) --------------------------------- */

/* A parameter that lists tables (smtpd_sender_login_maps, maps.h): each
 * key is looked up in each table in turn, the first found wins, and a
 * table that fails does not hide a later one that finds it.  A table
 * that cannot be opened is kept as broken (a warning is logged; its
 * lookups fail); unix:passwd.byname is answered with getpwnam().  NULL
 * when value names no table; maps_free() frees it. */
maps_t *smtpd_maps_open(const char *param, const char *value);
/* An address: addr, addr without its recipient_delimiter extension;
 * then, with SMTPD_MAPS_LOCALPART, the local part with and without
 * extension; then, with SMTPD_MAPS_ATDOMAIN, "@domain".  1 found (*value, if
 * not NULL, valid until the next lookup), 0 not found, -1 not found and
 * a table failed (err). */
enum { SMTPD_MAPS_LOCALPART = 1, SMTPD_MAPS_ATDOMAIN = 2 };
int smtpd_maps_find_addr(const smtpd_cfg_t *cfg, maps_t *m,
    const char *addr, int flags, const char **value, str_t *err);

/* ---- SMTP AUTH (smtpd_sasl.c) ---------------------------------------- */

/* Mechanism properties, as the backend describes them. */
enum {
	SMTPD_SASL_P_ANONYMOUS = 1 << 0, SMTPD_SASL_P_PLAINTEXT = 1 << 1,
	SMTPD_SASL_P_DICTIONARY = 1 << 2, SMTPD_SASL_P_ACTIVE = 1 << 3,
	SMTPD_SASL_P_FORWARD_SECRECY = 1 << 4,
	SMTPD_SASL_P_MUTUAL_AUTH = 1 << 5,
};
#define SMTPD_SASL_MECHS_MAX 32

typedef struct smtpd_sasl_mech {
	char name[24];		/* upper case */
	unsigned props;		/* SMTPD_SASL_P_* */
} smtpd_sasl_mech_t;

enum smtpd_sasl_status {
	SMTPD_SASL_OK,		/* authenticated (user); out: final data or "" */
	SMTPD_SASL_CONT,	/* out: the next challenge (base64) */
	SMTPD_SASL_FAIL,	/* refused; out: reason or "", user if known */
	SMTPD_SASL_TEMP,	/* backend trouble; out: reason */
};

typedef struct smtpd_sasl_req {
	const char *mech;	/* one of the backend's, upper case */
	const char *resp;	/* initial response, valid base64; "" for
				 * an empty one; NULL: none */
	const char *client_addr, *client_port, *local_addr, *local_port;
	bool secured;		/* in TLS */
} smtpd_sasl_req_t;

/* An authentication server.  One exchange at a time: start, next while
 * CONT, or abort.  Nothing here blocks for longer than its timeout. */
typedef struct smtpd_sasl_backend smtpd_sasl_backend_t;
struct smtpd_sasl_backend {
	/* The mechanisms offered: 0, or -1 with why (unavailable). */
	int (*mechs)(smtpd_sasl_backend_t *b, const smtpd_sasl_mech_t **v,
	    size_t *n, str_t *why);
	enum smtpd_sasl_status (*start)(smtpd_sasl_backend_t *b,
	    const smtpd_sasl_req_t *req, str_t *out, str_t *user);
	/* resp: the client's response, valid base64 ("" for empty). */
	enum smtpd_sasl_status (*next)(smtpd_sasl_backend_t *b,
	    const char *resp, str_t *out, str_t *user);
	void (*abort)(smtpd_sasl_backend_t *b);
	void (*free)(smtpd_sasl_backend_t *b);
};

/* Dovecot's authentication protocol on the UNIX socket path (relative
 * to the working directory, the queue directory of a daemon). */
smtpd_sasl_backend_t *smtpd_sasl_dovecot(const char *path,
    const char *service, int timeout_ms);

/* May a mechanism with these properties be offered under opts? */
bool smtpd_sasl_mech_allowed(unsigned props, unsigned opts);
/* A SASL mechanism name (RFC 4422: 1-20 of A-Z 0-9 - _). */
bool smtpd_sasl_mech_name_ok(const char *s, size_t len);

struct smtpd_cfg {
	char *myhostname;
	/* After-queue content filter (doc/content-filter.md): "" none;
	 * recv_override: receive_override_options (RECV_* bits). */
	char *content_filter;
	int recv_override;
	char *myorigin;
	char *banner;
	long timeout_ms, starttls_timeout_ms, ipc_timeout_ms;
	long hard_limit, soft_limit, junk_limit;
	long error_sleep;		/* seconds */
	long rcpt_limit, rcpt_overshoot;
	uint64_t size_limit;		/* 0 = none */
	size_t line_limit;
	long conn_limit;		/* smtpd_client_connection_count_limit */
	long conn_rate_limit, mail_rate_limit, rcpt_rate_limit,
	    newtls_rate_limit, auth_rate_limit;	/* smtpd_client_*_rate_limit */
	bool helo_required, delay_reject, disable_vrfy, reject_unlisted;
	bool peername_lookup, smtputf8, strict_envelopes, port_logging;
	bool tls_received;
	enum smtpd_bare_lf bare_lf;
	int ext_discard;		/* SMTPD_EXT_* not offered */
	enum smtpd_tls_level tls_level;
	tls_ctx_t *tls;			/* NULL: no STARTTLS possible */
	char *tls_error;		/* why tls is NULL at may/encrypt */
	smtpd_restr_t *client_restr, *helo_restr, *sender_restr,
	    *relay_restr, *rcpt_restr, *data_restr, *eod_restr;
	smtpd_netlist_t *mynetworks, *limit_exceptions;
	addr_domlist_t *mydestination, *relay_domains;
	addr_domlist_t *virtual_domains;	/* virtual_mailbox_domains */
	maps_t *virtual_maps;	/* virtual_mailbox_maps, or NULL */
	addr_domlist_t *alias_domains;	/* virtual_alias_domains */
	maps_t *alias_maps;	/* virtual_alias_maps, or NULL */
	local_rcpt_t *lrcpt;		/* local_recipient_maps (local_rcpt.h) */
	/* SMTP AUTH */
	bool sasl_enable, tls_auth_only, tls_wrapper, sasl_header;
	bool broken_sasl;
	unsigned sasl_opts, sasl_tls_opts;	/* SASL_OPT_* (sasl_opts.h) */
	char *sasl_path, *sasl_service;
	long sasl_timeout_ms;
	size_t sasl_resp_limit;
	maps_t *login_maps;	/* smtpd_sender_login_maps, or NULL */
	char *recipient_delimiter;
	dns_resolver_t *dns;		/* NULL: created on first use */
	bool dns_failed;
	int relay_code, access_code, unknown_addr_code, unknown_local_code,
	    unknown_virtual_code, unknown_alias_code, non_fqdn_code;
	char **forbidden;		/* smtpd_forbidden_commands, NULL-ended */
	char *sendmail_path;		/* stand-alone mode */
	char *cleanup_service;
	/* smtpd_milters ("" none) and the milter_* parameters */
	char *milters;
	milter_params_t milter_params;
	char *milter_macro_v, *milter_daemon_name;
};

/* Reads every smtpd parameter and opens the tables, TLS context and
 * lists.  Problems that make the server unsafe or meaningless (a bad
 * restriction name, a bad mynetworks pattern, restrictions that would
 * relay for anyone) fail: NULL with err.  Lesser problems (a table that
 * cannot be opened, a certificate that does not load) are logged as
 * warnings and degrade to temporary failures. */
smtpd_cfg_t *smtpd_cfg_load(str_t *err);
void smtpd_cfg_free(smtpd_cfg_t *cfg);

/* ---- Destinations (smtpd_dest.c) ------------------------------------- */

typedef struct smtpd_rcpt {
	char *addr;		/* internal form */
	char *orcpt;		/* "type;xtext" as sent, or NULL */
	int notify;		/* DSN_NOTIFY_* bits (dsn_notify.h), 0 = not
				 * given */
} smtpd_rcpt_t;

/* Everything about a message but its content. */
typedef struct smtpd_txn_info {
	const char *sender;		/* internal form, "" = <> */
	const char *envid;		/* xtext as sent, or NULL */
	int ret;			/* 0, 1 FULL, 2 HDRS */
	const char *body;		/* "8BITMIME", "7BIT" or NULL */
	bool smtputf8;
	const smtpd_rcpt_t *rcpts;
	size_t nrcpts;
	const char *client_name, *client_addr, *client_port, *helo;
	const char *protocol;		/* ESMTP, ESMTPS, SMTP, ... */
	const char *tls_info;		/* "using TLSv1.3 with ..." or NULL */
	const char *log_ident;
	const char *namaddr;		/* NAME[ADDR] as in log lines */
	const char *sasl_method, *sasl_username;	/* SMTP AUTH, or NULL */
	bool sasl_header;		/* the user name in Received: */
	const char *content_filter;	/* "transport:nexthop", or NULL */
	int cleanup_flags;		/* CLEANUP_FLAG_NO_* */
	bool milters;			/* milter edits may follow the content */
} smtpd_txn_info_t;

typedef struct smtpd_dest smtpd_dest_t;
struct smtpd_dest {
	/* Starts a message: 0, or -1 with the reason in why (the client
	 * gets 451 4.3.0). */
	int (*open)(smtpd_dest_t *d, const smtpd_txn_info_t *t, str_t *why);
	/* Content, any split.  -1 once it failed (sticky until finish). */
	int (*write)(smtpd_dest_t *d, const void *buf, size_t len);
	/* Ends the message; reply is always filled (status 0 queued). */
	void (*finish)(smtpd_dest_t *d, cleanup_reply_t *reply);
	/* Forgets the message; nothing of it may be queued. */
	void (*abort)(smtpd_dest_t *d);
	/* The open message's queue ID (logging "ID: client=..." the first
	 * time), or NULL when the destination has none (yet).  May be NULL
	 * itself: a destination without milters (stand-alone mode). */
	const char *(*queue_id)(smtpd_dest_t *d);
	/* A milter's modification, after the content (cleanup's op edit). */
	int (*edit)(smtpd_dest_t *d, const milter_edit_t *e);
	void (*free)(smtpd_dest_t *d);
};

/* Mail to cleanup(8) over its socket (service: CLEANUP_SERVICE or a
 * path), each message on a new connection. */
smtpd_dest_t *smtpd_dest_cleanup(const char *service, int timeout_ms);
/* Stand-alone mode: each message is piped to "SENDMAIL -i -f SENDER
 * [-N ...] [-R ...] [-V ...] -- RCPT..." (sendmail_path), whose exit
 * status 0 means queued. */
smtpd_dest_t *smtpd_dest_sendmail(const char *path);

/* ---- Sessions (smtpd_session.c) -------------------------------------- */

/* Who the client is. */
typedef struct smtpd_peer {
	char name[DNS_NAME_TEXTLEN];	/* host name or "unknown" */
	char addr[SOCK_ADDR_STRLEN];	/* numeric, "" if not an IP peer */
	char port[8];
	char local_addr[SOCK_ADDR_STRLEN];
	bool stand_alone;		/* smtpd -S: a local user */
} smtpd_peer_t;

/* Fills peer from the socket fd (getpeername/getsockname; the name by
 * reverse lookup when smtpd_peername_lookup is on, confirmed forward;
 * loopback clients are "localhost" without any lookup). */
void smtpd_peer_from_fd(const smtpd_cfg_t *cfg, int fd, smtpd_peer_t *peer);
/* A local user on stdin/stdout: "localhost", 127.0.0.1. */
void smtpd_peer_stand_alone(smtpd_peer_t *peer);

/* ---- Client limits (smtpd_anvil.c) ---------------------------------- */

/* The per-process anvil(8) client and the state of the session being
 * served.  NULL when every limit is off (then no anvil is asked); every
 * function below takes NULL and then limits nothing. */
typedef struct smtpd_anvil smtpd_anvil_t;
/* path: anvil's endpoint (SMTPD_ANVIL_PATH); service: the master.cf
 * service name, the first half of each ident ("smtp:192.0.2.1"). */
smtpd_anvil_t *smtpd_anvil_new(const smtpd_cfg_t *cfg, const char *path,
    const char *service);
void smtpd_anvil_free(smtpd_anvil_t *a);
#define SMTPD_ANVIL_PATH "private/anvil"

/* Each returns true when the client is over a limit: the warning is
 * logged and reply holds the answer Postfix gives.  Clients in
 * smtpd_client_event_limit_exceptions, local users (smtpd -S) and a
 * session for which anvil cannot be asked are never over. */
/* When a session begins (count and rate): 421, then hang up. */
bool smtpd_anvil_connect(smtpd_anvil_t *a, const smtpd_peer_t *peer,
    const char *namaddr, smtpd_reply_t *reply);
/* When it ends, whatever happened. */
void smtpd_anvil_disconnect(smtpd_anvil_t *a);
/* MAIL FROM (smtpd_client_message_rate_limit): 450. */
bool smtpd_anvil_mail(smtpd_anvil_t *a, smtpd_reply_t *reply);
/* RCPT TO (smtpd_client_recipient_rate_limit): 450. */
bool smtpd_anvil_rcpt(smtpd_anvil_t *a, smtpd_reply_t *reply);
/* STARTTLS, before the handshake, counting nothing: 454 when the client
 * already made too many new TLS sessions. */
bool smtpd_anvil_starttls(smtpd_anvil_t *a, smtpd_reply_t *reply);
/* After a handshake (smtpd_client_new_tls_session_rate_limit): 421 over
 * TLS, then hang up. */
bool smtpd_anvil_newtls(smtpd_anvil_t *a, smtpd_reply_t *reply);
/* AUTH (smtpd_client_auth_rate_limit): 450, and the AUTH command is not
 * run.  For the AUTH command to call first. */
bool smtpd_anvil_auth(smtpd_anvil_t *a, smtpd_reply_t *reply);

typedef struct smtpd_session_opts {
	/* Called instead of sleep() for the error delay (tests). */
	void (*sleep_fn)(unsigned seconds, void *ctx);
	void *sleep_ctx;
	/* Client limits (NULL: none is enforced). */
	smtpd_anvil_t *anvil;
	/* Called for every command and every 64 KiB of content: the
	 * daemon re-arms its watchdog there (a session may legitimately
	 * last long as long as it moves). */
	void (*progress)(void *ctx);
	void *progress_ctx;
	/* The authentication server (smtpd_sasl_auth_enable; NULL: AUTH
	 * is answered with 454 when enabled). */
	smtpd_sasl_backend_t *sasl;
} smtpd_session_opts_t;

/* Runs one SMTP session on s until QUIT, a disconnect, a timeout or a
 * fatal client error, then closes s (after a TLS close_notify when
 * STARTTLS was done).  Returns how many messages were accepted. */
int smtpd_session_run(const smtpd_cfg_t *cfg, stream_t *s,
    const smtpd_peer_t *peer, smtpd_dest_t *dest,
    const smtpd_session_opts_t *opts);

#endif
