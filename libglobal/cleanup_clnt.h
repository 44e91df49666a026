/* The client side of the cleanup protocol (doc/protocol-cleanup.md):
 * how pickup, smtpd and bounce hand a message to cleanup(8).
 *
 *	cleanup_clnt_t *c = cleanup_clnt_connect(NULL, 30000, &err);
 *	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
 *	env.sender = "alice@example.org";
 *	env.uid = 1000;
 *	cleanup_clnt_send_envelope(c, &env);
 *	cleanup_clnt_send_rcpt(c, "bob@example.net", NULL, 0);
 *	while ((n = read(fd, buf, sizeof(buf))) > 0)
 *		cleanup_clnt_write(c, buf, n);
 *	cleanup_clnt_finish(c, &reply);	// reply.status, .dsn, .text, .queue_id
 *	cleanup_clnt_close(c);
 *
 * Nothing is sent and no reply is awaited between calls more than
 * needed: the envelope, recipients and content are buffered and written
 * in chunks of at most CLEANUP_CHUNK bytes, and the only wait for
 * cleanup is the reply read by cleanup_clnt_finish/cleanup_clnt_abort.  The
 * send/write calls return 0 or -1; an error is sticky (every later call
 * fails at once) and cleanup_clnt_finish then reports it as a temporary
 * failure, after trying to read cleanup's own reply (which explains a
 * connection cleanup closed).  So a caller may ignore the return values
 * of the send/write calls and look only at the reply. */
#ifndef PETREL_CLEANUP_CLIENT_H
#define PETREL_CLEANUP_CLIENT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "queue_id.h"
#include "str.h"

/* envelope flags */
#define CLEANUP_FLAG_EXTRACT	1	/* recipients from To/Cc/Bcc (-t) */
#define CLEANUP_FLAG_SMTP	2	/* from smtpd: Received header */
#define CLEANUP_FLAG_QUEUE_ID	4	/* send the queue ID at once, for the
					 * client's own log line (smtpd's
					 * client=, pickup's uid= from=):
					 * cleanup_clnt_queue_id() */
/* receive_override_options of the client (content_filter.h). */
#define CLEANUP_FLAG_NO_CHECKS	8	/* no header/body checks */
#define CLEANUP_FLAG_NO_MAPPINGS 16	/* no canonical, virtual alias maps */
#define CLEANUP_FLAG_NO_MILTERS	32	/* no milters in cleanup */
#define CLEANUP_FLAG_MILTER	64	/* milter edits may follow the
					 * content (op edit) */
#define CLEANUP_FLAG_MASK	127

/* reply status */
#define CLEANUP_STAT_OK		0
#define CLEANUP_STAT_TEMP	4
#define CLEANUP_STAT_PERM	5

/* Largest data chunk the client sends; cleanup accepts up to 1 MiB. */
#define CLEANUP_CHUNK		(64 * 1024)
/* Longest reply text. */
#define CLEANUP_TEXT_MAX	500
/* Limits on envelope text attributes (checked by cleanup). */
#define CLEANUP_LOG_IDENT_MAX	200
#define CLEANUP_ATTR_VALUE_MAX	4096
#define CLEANUP_ATTRS_MAX	200

/* The default service name (master.cf). */
#define CLEANUP_SERVICE		"cleanup"

/* A named attribute for the queue file. */
typedef struct cleanup_attr {
	const char *name;
	const char *value;
} cleanup_attr_t;

/* The envelope; NULL / 0 / -1 fields are not sent. */
typedef struct cleanup_envelope {
	const char *sender;	/* internal form; "" = <>; required */
	int flags;		/* CLEANUP_FLAG_* */
	const char *envid;	/* DSN ENVID (xtext) */
	int ret;		/* 0, 1 FULL, 2 HDRS */
	const char *full_name;	/* sendmail -F */
	int64_t uid;		/* submitting user, -1 = none */
	int64_t arrival_us;	/* microseconds since 1970, 0 = now */
	const char *log_ident;	/* for cleanup's log lines */
	/* SMTP client information (with CLEANUP_FLAG_SMTP). */
	const char *client_name;
	const char *client_address;
	const char *client_port;
	const char *helo_name;
	const char *protocol;	/* SMTP, ESMTP, ESMTPS, ... */
	const char *tls_info;
	const char *sasl_method;
	const char *sasl_username;
	/* The user name for "(Authenticated sender: NAME)" in the
	 * Received: header (smtpd_sasl_authenticated_header). */
	const char *received_auth;
	/* The content filter, "transport:nexthop" (content_filter.h);
	 * NULL or "" for none. */
	const char *content_filter;
	/* More named attributes for the queue file. */
	const cleanup_attr_t *attrs;
	size_t nattrs;
} cleanup_envelope_t;

#define CLEANUP_ENVELOPE_INIT { .sender = "", .uid = -1 }

typedef struct cleanup_reply {
	int status;			/* CLEANUP_STAT_* */
	char dsn[16];			/* "2.0.0", "4.3.0", ... */
	char text[CLEANUP_TEXT_MAX + 1];
	char queue_id[QUEUE_ID_SIZE];	/* "" unless status is OK */
} cleanup_reply_t;

typedef struct cleanup_clnt cleanup_clnt_t;

/* Connects to cleanup.  service NULL means CLEANUP_SERVICE; a name
 * without '/' is tried as private/NAME, then public/NAME (relative to
 * the current directory, which is queue_directory for daemons); a name
 * with '/' is a socket path.  timeout_ms (> 0) bounds the connect, each
 * write and the wait for each reply.  NULL with a reason in err (may be
 * NULL) on failure. */
cleanup_clnt_t *cleanup_clnt_connect(const char *service, int timeout_ms,
    str_t *err);
/* The same over a connected stream socket (tests); fd is the client's
 * from now on and closed by cleanup_clnt_close. */
cleanup_clnt_t *cleanup_clnt_fd(int fd, int timeout_ms);

/* Starts a transaction.  -1 if one is already open or after an error. */
int cleanup_clnt_send_envelope(cleanup_clnt_t *c,
    const cleanup_envelope_t *env);
/* One recipient: address in internal form, orcpt "type;xtext" or NULL,
 * notify DSN_NOTIFY_* bits (dsn_notify.h) or 0.  Must
 * come before the first cleanup_clnt_write. */
int cleanup_clnt_send_rcpt(cleanup_clnt_t *c, const char *address,
    const char *orcpt, int notify);
/* With CLEANUP_FLAG_QUEUE_ID: writes what is buffered and reads the
 * queue ID cleanup sent after the envelope, so that the client logs its
 * line about the message before cleanup can commit it (qmgr's line
 * about it comes after).  Returns 0 with the ID in id, or -1 with id ""
 * (the envelope failed, or a client-side error: cleanup_clnt_finish then
 * gives the reason).  Call it at most once a transaction, before
 * cleanup_clnt_finish; without it cleanup_clnt_finish skips the ID. */
int cleanup_clnt_queue_id(cleanup_clnt_t *c, char id[QUEUE_ID_SIZE]);
/* Message content, any split. */
int cleanup_clnt_write(cleanup_clnt_t *c, const void *buf, size_t len);
/* A milter's modification, after the content (op edit,
 * doc/protocol-cleanup.md): type is a milter_edit_type (milter.h);
 * index, name, value and a replaced body (NULL when none; sent in
 * pieces) as that type needs.  The client sets CLEANUP_FLAG_MILTER in
 * the envelope when edits may come. */
int cleanup_clnt_send_edit(cleanup_clnt_t *c, int type, uint32_t index,
    const char *name, const char *value, const void *body, size_t blen);
/* Ends the transaction and waits for the reply, which is always filled
 * in (a client-side failure becomes status TEMP, dsn 4.3.0 and the
 * reason).  Returns 0 when the message was queued, else -1.  After it
 * the connection can carry another transaction, unless it failed. */
int cleanup_clnt_finish(cleanup_clnt_t *c, cleanup_reply_t *reply);
/* Abandons the transaction (cleanup removes what it wrote) and reads
 * cleanup's reply; reply may be NULL.  Returns 0 if the connection is
 * still usable. */
int cleanup_clnt_abort(cleanup_clnt_t *c, cleanup_reply_t *reply);
/* The sticky client-side error, or NULL. */
const char *cleanup_clnt_error(const cleanup_clnt_t *c);
/* Closes the connection (an open transaction is aborted by cleanup). */
void cleanup_clnt_close(cleanup_clnt_t *c);

/* Fills reply: status, dsn and the formatted text (cut to fit). */
void cleanup_reply_set(cleanup_reply_t *reply, int status, const char *dsn,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
