/* Building delivery status notifications (RFC 3464): a
 * multipart/report; report-type=delivery-status message with
 *   1. a human-readable text/plain part,
 *   2. the message/delivery-status part (per-message fields, then one
 *      block per recipient: Final-Recipient, Original-Recipient, Action,
 *      Status, Remote-MTA, Diagnostic-Code, Last-Attempt-Date,
 *      Will-Retry-Until),
 *   3. the original message (message/rfc822) or its header
 *      (text/rfc822-headers), or nothing.
 * The bounce daemon feeds the result to cleanup; doc/bounce.md shows an
 * example.  Pure text work: no files, no network (the original message
 * comes from a line callback), so tests can build and parse notices. */
#ifndef PETREL_DSN_REPORT_H
#define PETREL_DSN_REPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "dsn_notice.h"
#include "statuslog.h"
#include "str.h"

/* What of the original goes into the notice. */
typedef enum dsn_return {
	DSN_RETURN_NONE = 0,	/* nothing */
	DSN_RETURN_HEADERS,	/* text/rfc822-headers */
	DSN_RETURN_FULL,	/* message/rfc822 (headers only when the
				 * message is larger than size_limit) */
} dsn_return_t;

/* Who the notice is for; changes the wording and the subject. */
typedef enum dsn_audience {
	DSN_TO_SENDER = 0,	/* the original sender */
	DSN_TO_POSTMASTER,	/* a postmaster copy (notify_classes) */
	DSN_TO_DOUBLE_BOUNCE,	/* a bounce that could not be delivered */
} dsn_audience_t;

typedef struct dsn_report {
	dsn_notice_kind_t kind;		/* bounce, delay, success */
	dsn_audience_t audience;
	const char *myhostname;		/* Reporting-MTA, Message-Id, From */
	const char *mail_name;		/* "Petrel" */
	const char *queue_id;		/* of the original */
	const char *orig_sender;	/* internal form, "" = <> */
	const char *to;			/* notice recipient, internal form */
	const char *envid;		/* Original-Envelope-Id or NULL/"" */
	time_t arrival;			/* of the original */
	time_t now;			/* Date:, Message-Id */
	time_t will_retry_until;	/* delay notices; 0: not stated */
	dsn_return_t ret;
	size_t size_limit;		/* bounce_size_limit (0: no limit) */
	size_t content_size;		/* size of the original, for the limit */
	const sl_rec_t *rec;		/* the recipients to report */
	size_t nrec;
	const char *boundary_salt;	/* makes the boundary unique; may be NULL */
} dsn_report_t;

/* Supplies the original message one line at a time, without its line
 * end, replacing line's contents: 1 a line, 0 the end, -1 an error (err
 * set).  Called again from the start after dsn_lines_rewind. */
typedef int (*dsn_line_fn)(void *ctx, str_t *line, str_t *err);
typedef void (*dsn_rewind_fn)(void *ctx);

/* Appends the whole notice (header and body, LF line ends) to out.
 * lines/rewind may be NULL when ret is DSN_RETURN_NONE.  Returns 0, or
 * -1 with err set (the original could not be read). */
int dsn_report_build(const dsn_report_t *r, dsn_line_fn lines,
    dsn_rewind_fn rewind, void *ctx, str_t *out, str_t *err);

/* Subject line of a notice. */
const char *dsn_report_subject(dsn_notice_kind_t kind, dsn_audience_t who);

/* Appends "Name: value" folded at white space so that no line passes 78
 * columns when it can be avoided (and never 990), then LF. */
void dsn_put_field(str_t *out, const char *name, const char *value);

#endif
