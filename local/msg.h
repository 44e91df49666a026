/* The message being delivered, as local writes it out: a source of
 * content lines (the queue file, or memory for tests), the status of a
 * delivery (RFC 3463 code and text), and the copy that every kind of
 * delivery shares: an optional mbox "From " line, Return-Path: and
 * Delivered-To: headers put in front, ">From " quoting, line ends made
 * LF, and the blank line that ends an mbox message. */
#ifndef PETREL_LOCAL_MSG_H
#define PETREL_LOCAL_MSG_H
#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "qfile.h"
#include "str.h"

/* ---- Delivery status ------------------------------------------------ */

/* What happened to one delivery: dsn "2.0.0" / "4.2.2" / "5.1.1"...
 * (the first digit is the class) and one line of text. */
typedef struct lstatus {
	char dsn[16];
	str_t text;
} lstatus_t;

#define LSTATUS_INIT { "", STR_INIT }

void lstatus_set(lstatus_t *st, const char *dsn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lstatus_free(lstatus_t *st);
/* '2', '4' or '5' (0 when not set). */
static inline char lstatus_class(const lstatus_t *st)
{
	return st->dsn[0];
}
/* Copies src into dst. */
void lstatus_copy(lstatus_t *dst, const lstatus_t *src);

/* ---- The message ---------------------------------------------------- */

typedef struct lmsg lmsg_t;

/* Content from an open queue file (not closed by lmsg_free). */
lmsg_t *lmsg_from_qfile(qfile_t *qf);
/* Content from memory (copied): RFC 5322 text, lines ending in LF or
 * CR LF. */
lmsg_t *lmsg_from_mem(const char *data, size_t len);
void lmsg_free(lmsg_t *m);

/* True when the message header has "Delivered-To: addr" (compared
 * without case; the header is read once).  -1 when the content cannot
 * be read. */
int lmsg_has_delivered_to(lmsg_t *m, const char *addr);

/* ---- Copying it out ------------------------------------------------- */

enum {
	LMSG_FROM_LINE = 1 << 0,	/* "From sender date" first (mbox) */
	LMSG_QUOTE_FROM = 1 << 1,	/* ">From " quoting (mboxrd: any
					 * number of '>' before "From ") */
	LMSG_BLANK_END = 1 << 2,	/* end with an empty line (mbox) */
	LMSG_RETURN_PATH = 1 << 3,	/* Return-Path: <sender> */
};

typedef struct lmsg_copy {
	int flags;
	const char *sender;		/* internal form; "" = null sender */
	const char *delivered_to;	/* internal form, or NULL: no header */
	time_t now;			/* for the From line; 0 = time(NULL) */
} lmsg_copy_t;

/* Receives the output in pieces; returns 0, or -1 with errno set. */
typedef int (*lmsg_sink_fn)(const void *data, size_t len, void *ctx);

/* Results of lmsg_copy. */
#define LMSG_OK		0
#define LMSG_EWRITE	-1	/* the sink failed; errno is its errno */
#define LMSG_EREAD	-2	/* the message could not be read (err) */

/* Writes the message through sink, buffered (pieces of up to 64 KiB).
 * err gets the reason of LMSG_EREAD. */
int lmsg_copy(lmsg_t *m, const lmsg_copy_t *o, lmsg_sink_fn sink, void *ctx,
    str_t *err);

/* The mbox "From " line for sender at t, with its LF. */
void lmsg_from_line(const char *sender, time_t t, str_t *out);

#endif
