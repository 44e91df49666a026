/* Local submission: what sendmail(1), postdrop(1) and pickup(8) share.
 *
 * sendmail parses its command line and the message on standard input
 * and sends postdrop a "submission stream" on a pipe; postdrop, which
 * trusts nobody (a user can run it directly with any input), checks the
 * stream again and writes it as one queue file into maildrop/; pickup
 * reads maildrop files and hands them to cleanup.  doc/submission.md is
 * the specification; in short:
 *
 *   stream   = envelope *chunk (end / abort)     ; attribute messages
 *   envelope = version sender [full_name] [flags] [envid] [ret] [notify]
 *              [rcpt list of { address }]
 *   chunk    = { data }        ; up to SUBMIT_CHUNK content bytes
 *   end      = { end }         ; total content bytes, as a check
 *   abort    = { abort }       ; sendmail gave up (the reason is text)
 *
 * Addresses in the stream are in external form (as a person writes them,
 * without angle brackets); postdrop converts them to Petrel's internal
 * form.  The maildrop file is an ordinary queue file (doc/queue-file.md)
 * with the attributes below. */
#ifndef PETREL_SUBMIT_H
#define PETREL_SUBMIT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "attr.h"
#include "str.h"

/* Exit statuses (sysexits.h values, spelled out for the BSDs and Linux
 * alike). */
#include <sysexits.h>

#define SUBMIT_VERSION		1
/* Content bytes in one chunk message. */
#define SUBMIT_CHUNK		65536

/* Envelope flags. */
#define SUBMIT_F_EXTRACT	1	/* sendmail -t: recipients from To/Cc/Bcc */
#define SUBMIT_F_ALL		SUBMIT_F_EXTRACT

/* Field limits (bytes). */
#define SUBMIT_FULL_NAME_MAX	256
#define SUBMIT_ADDR_MAX		2048	/* one address, external form */
#define SUBMIT_RCPT_MAX		10000	/* recipients in one submission */

/* Attribute names in the stream. */
#define SUBMIT_A_VERSION	"version"
#define SUBMIT_A_SENDER		"sender"
#define SUBMIT_A_FULL_NAME	"full_name"
#define SUBMIT_A_FLAGS		"flags"
#define SUBMIT_A_ENVID		"envid"
#define SUBMIT_A_RET		"ret"
#define SUBMIT_A_NOTIFY		"notify"
#define SUBMIT_A_RCPT		"rcpt"
#define SUBMIT_A_ADDRESS	"address"
#define SUBMIT_A_DATA		"data"
#define SUBMIT_A_END		"end"
#define SUBMIT_A_ABORT		"abort"

/* Named attributes of a maildrop file (queue-file `a` records). */
#define MAILDROP_A_UID		"uid"		/* real uid of the submitter */
#define MAILDROP_A_FULL_NAME	"full_name"	/* sendmail -F */
#define MAILDROP_A_EXTRACT	"extract"	/* "yes": sendmail -t */
#define MAILDROP_A_NOTIFY	"notify"	/* -N bits for extracted recipients */

/* A reader for the stream (strict schema, the stream limits). */
attr_reader_t *submit_reader(void);

/* ---- Checked values ------------------------------------------------- */

/* One error: the sysexits status and a printable, one-line reason. */
typedef struct submit_err {
	int status;
	char text[512];
} submit_err_t;

/* External address (sender may be empty: the null sender) to internal
 * form in out (replaced).  false with EX_NOUSER and the reason. */
bool submit_addr(const char *ext, size_t len, bool is_sender, str_t *out,
    submit_err_t *err);
/* "FULL"/"HDRS" (any case) to QF_RET_*, or -1. */
int submit_parse_ret(const char *s);
/* A -V envelope ID: printable ASCII, and at most ADDR_ENVID_MAX bytes
 * once xtext-encoded (appended to xtext, which may be NULL). */
bool submit_envid_ok(const char *s, str_t *xtext);
/* A -F full name: no control characters, at most SUBMIT_FULL_NAME_MAX. */
bool submit_full_name_ok(const char *s, size_t len);

/* authorized_submit_users: the login name of uid (or "unknown") must be
 * on the list.  Returns 1 allowed, 0 refused, -1 a table could not be
 * read (why says so). */
int submit_user_allowed(uid_t uid, str_t *why);

/* Sets err and returns false, for one-line returns. */
bool submit_fail(submit_err_t *err, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
