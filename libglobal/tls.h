/* TLS on OpenSSL 3 for the SMTP server (smtpd) and client (smtp):
 * contexts loaded once per process, a handshake on an already connected
 * descriptor with a time limit, and then a stream I/O layer so that the
 * connection's stream_t reads and writes go through TLS.  doc/tls.md has
 * the whole story (security levels, what is verified, log formats).
 *
 * Server (smtpd):
 *
 *	tls_ctx_t *ctx = tls_server_ctx_from_config(&err);
 *	if (ctx == NULL)	// no STARTTLS, say why
 *		log_warning("TLS disabled: %s", str_cstr(&err));
 *	...
 *	// STARTTLS: discard pipelined input first, then reply
 *	stream_purge(s);
 *	stream_puts(s, "220 2.0.0 Ready to start TLS\r\n");
 *	if (tls_server_start(ctx, s, timeout_ms, &sess, &err) != TLS_OK)
 *		... log err, close the connection ...
 *	tls_sess_log(sess, "client.example[192.0.2.1]");
 *	... stream_getline(s, ...) etc. now decrypt ...
 *	tls_close(sess, s, timeout_ms);	// close_notify, stream_close, free
 *
 * Client (smtp):
 *
 *	tls_peer_t peer = { TLS_LEVEL_VERIFY, "mx.example.com", "example.com" };
 *	switch (tls_client_start(ctx, s, &peer, timeout_ms, &sess, &err)) {
 *	case TLS_OK: break;	// tls_sess_trust(sess) says how far
 *	case TLS_ERR_VERIFY:	// handshake done, policy not met: defer
 *	default:		// may: retry in plain text on a new connection
 *	}
 *
 * Nothing here is fatal: every failure returns a status and a message
 * (the OpenSSL error queue drained into it).  Starting TLS makes the
 * descriptor non-blocking (it stays so), because with an I/O layer the
 * stream's timeouts hold only for non-blocking descriptors. */
#ifndef PETREL_TLS_H
#define PETREL_TLS_H
#include <stdbool.h>
#include "str.h"
#include "stream.h"

typedef struct tls_ctx tls_ctx_t;
typedef struct tls_sess tls_sess_t;

/* Client security levels, as Postfix defines them (smtp_tls_security_level). */
enum tls_level {
	TLS_LEVEL_NONE,		/* no TLS */
	TLS_LEVEL_MAY,		/* opportunistic: TLS if offered, nothing verified */
	TLS_LEVEL_ENCRYPT,	/* TLS required, nothing verified */
	TLS_LEVEL_VERIFY,	/* TLS, trusted chain, name = host or nexthop */
	TLS_LEVEL_SECURE,	/* TLS, trusted chain, name = nexthop or a subdomain */
};

/* What the peer's certificate proved (Postfix's words in the log line). */
enum tls_trust {
	TLS_ANONYMOUS,		/* no peer certificate */
	TLS_UNTRUSTED,		/* a certificate whose chain did not verify */
	TLS_TRUSTED,		/* the chain verified against the CAs */
};

/* Results of tls_server_start() / tls_client_start(). */
enum tls_status {
	TLS_OK = 0,
	TLS_ERR_HANDSHAKE,	/* protocol or I/O failure, peer hung up, ... */
	TLS_ERR_TIMEOUT,	/* the handshake did not finish in time */
	TLS_ERR_VERIFY,		/* handshake done but the level's checks failed */
};

/* Server context settings.  NULL or "" means the default. */
typedef struct tls_server_config {
	const char *cert_file;	/* PEM: the certificate, then its chain (required) */
	const char *key_file;	/* PEM private key; default: cert_file */
	const char *chain_file;	/* more PEM chain certificates (optional) */
	const char *protocols;	/* e.g. ">=TLSv1.2" (the default) */
	const char *ciphers;	/* TLS 1.2 cipher list; default TLS_DEFAULT_CIPHERS */
} tls_server_config_t;

/* Client context settings.  NULL or "" means the default. */
typedef struct tls_client_config {
	const char *CAfile;	/* trusted CAs (PEM) */
	const char *CApath;	/* directory of hashed CA certificates */
	/* With neither CAfile nor CApath the system's default CA store is
	 * used. */
	const char *cert_file;	/* client certificate (optional) */
	const char *key_file;	/* its key; default: cert_file */
	const char *protocols;
	const char *ciphers;
	/* Every CA certificate is read now, none when a chain is verified:
	 * for a process about to chroot, where a CA directory's files will
	 * not be reachable (doc/master.md, "The jail"). */
	bool load_now;
} tls_client_config_t;

/* The TLS 1.2 cipher list used unless a config says otherwise (TLS 1.3
 * suites are OpenSSL's defaults, all of them strong). */
#define TLS_DEFAULT_CIPHERS \
	"ECDHE+AESGCM:ECDHE+CHACHA20:DHE+AESGCM:DHE+CHACHA20:HIGH:" \
	"!aNULL:!eNULL:!MD5:!RC4:!3DES:!PSK:!SRP:!DSS:!CAMELLIA:!ARIA"

/* Per-connection facts for a client handshake.  Names are bare DNS names
 * (no brackets, no port; a trailing dot is ignored). */
typedef struct tls_peer {
	enum tls_level level;
	const char *host;	/* the server's host name (MX name): SNI, logs, verify */
	const char *nexthop;	/* the nexthop domain: verify and secure */
} tls_peer_t;

/* Contexts.  NULL on failure with the reason in err (replaced), e.g.
 * "cannot open certificate file /etc/petrel/cert.pem: No such file or
 * directory" or "private key in KEY does not match the certificate in
 * CERT". */
tls_ctx_t *tls_server_ctx(const tls_server_config_t *cfg, str_t *err);
tls_ctx_t *tls_client_ctx(const tls_client_config_t *cfg, str_t *err);
/* The same from the smtpd_tls_* / PROTO_tls_* parameters (proto "smtp"
 * or "lmtp"); messages start with the parameter at fault where there is
 * one. */
tls_ctx_t *tls_server_ctx_from_config(str_t *err);
tls_ctx_t *tls_client_ctx_from_config(const char *proto, bool load_now,
    str_t *err);
void tls_ctx_free(tls_ctx_t *ctx);
/* Objects (certificates, CRLs) in the context's trust store so far: a
 * hashed CA directory adds them only as chains are verified (tests). */
int tls_ctx_trust_objects(const tls_ctx_t *ctx);

/* Handshake on stream_fd(s) (connected; made non-blocking here), bounded
 * by timeout_ms for the whole handshake (0 = no limit).  Pending output of
 * s (the "220 Ready to start TLS" reply) is flushed first.  Input already
 * buffered in s is refused (TLS_ERR_HANDSHAKE): it was sent in plain text
 * before the handshake and must not be mistaken for protected data; purge
 * it deliberately (stream_purge) if that is the protocol's rule.
 * On TLS_OK *sessp is set and the stream reads and writes through TLS;
 * otherwise *sessp is NULL, err says why, no layer is installed and the
 * connection is unusable (close it). */
int tls_server_start(tls_ctx_t *ctx, stream_t *s, int timeout_ms,
    tls_sess_t **sessp, str_t *err);
/* Client side: SNI is peer->host (unless it is an IP address).  The
 * certificate is always examined; peer->level decides what must hold:
 * none (refused here), may and encrypt (nothing), verify (trusted chain
 * and a name equal to host or nexthop), secure (trusted chain and a name
 * equal to nexthop or a subdomain of it).  A failed check returns
 * TLS_ERR_VERIFY with e.g. "server certificate not trusted: unable to get
 * local issuer certificate" or "hostname mismatch: expected
 * mx.example.com or example.com, certificate names: DNS:other.example". */
int tls_client_start(tls_ctx_t *ctx, stream_t *s, const tls_peer_t *peer,
    int timeout_ms, tls_sess_t **sessp, str_t *err);

/* "TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits)". */
const char *tls_sess_describe(const tls_sess_t *t);
const char *tls_sess_protocol(const tls_sess_t *t);	/* "TLSv1.3" */
const char *tls_sess_cipher(const tls_sess_t *t);
enum tls_trust tls_sess_trust(const tls_sess_t *t);
/* Client: whether a certificate name matched the level's names (always
 * computed against host and nexthop below verify, for information). */
bool tls_sess_name_matched(const tls_sess_t *t);
/* Why the peer is not trusted or its name did not match ("" if it is and
 * did): for a detail log line at may/encrypt. */
const char *tls_sess_verify_reason(const tls_sess_t *t);
/* The peer certificate's subject and issuer common names ("" if none). */
const char *tls_sess_peer_cn(const tls_sess_t *t);
const char *tls_sess_issuer_cn(const tls_sess_t *t);
/* Server: the name the client asked for with SNI ("" if none). */
const char *tls_sess_server_name(const tls_sess_t *t);
/* Text of the last TLS-level I/O failure seen by the stream layer (the
 * stream then has its error flag with errno EPROTO, or ECONNRESET etc.),
 * "" if none. */
const char *tls_sess_error(const tls_sess_t *t);
/* Logs (log_info) "Trusted TLS connection established to PEER: DESC" for
 * a client session, "Anonymous TLS connection established from PEER:
 * DESC" for a server session. */
void tls_sess_log(const tls_sess_t *t, const char *peer);

/* Flushes s through TLS and sends close_notify (not waiting for the
 * peer's), within timeout_ms.  The layer stays installed: later writes
 * fail with EPIPE.  0, or -1 if the flush or the alert failed. */
int tls_shutdown(tls_sess_t *t, stream_t *s, int timeout_ms);
/* Frees a session.  Call it only once the stream no longer uses it:
 * after stream_close()/stream_detach() or stream_set_io(s, NULL, NULL). */
void tls_sess_free(tls_sess_t *t);
/* The usual end: tls_shutdown, stream_close, tls_sess_free.  Returns 0,
 * or -1 if the shutdown or the close failed (everything is freed). */
int tls_close(tls_sess_t *t, stream_t *s, int timeout_ms);

/* Names of levels, trust classes and statuses; parsing a level name
 * returns false for an unknown one. */
bool tls_level_parse(const char *name, enum tls_level *level);
const char *tls_level_name(enum tls_level level);
const char *tls_trust_name(enum tls_trust trust);	/* "Trusted" */
const char *tls_status_name(int status);

/* Postfix protocol syntax: ">=TLSv1.2", "<=TLSv1.3", "TLSv1.2 TLSv1.3"
 * (only these), "!TLSv1, !TLSv1.1" (all but these), combinable, separated
 * by spaces, commas or colons; SSLv2 and SSLv3 are accepted but never
 * used.  The result must be a non-empty contiguous range: *min and *max
 * get OpenSSL version numbers (TLS1_2_VERSION ...).  "" means ">=TLSv1.2".
 * Returns 0, or -1 with the reason in err. */
int tls_protocols_parse(const char *spec, int *min, int *max, str_t *err);

/* Appends the OpenSSL error queue to out ("; "-separated) and empties it;
 * appends "no further detail" if the queue was empty. */
void tls_drain_errors(str_t *out);

#endif
