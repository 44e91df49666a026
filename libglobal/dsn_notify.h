/* DSN NOTIFY (RFC 3461 section 4.1): the one encoding of a recipient's
 * notification request, from the SMTP parameter and sendmail -N to the
 * cleanup protocol, the queue file (record N), the delivery protocol, the
 * status logs and the RCPT command the smtp client sends.
 *
 * The value is a set of bits; 0 means "not given" (the default notices:
 * failure and, for a long delay, delay).  A valid value is 0, NEVER alone,
 * or any combination of SUCCESS, FAILURE and DELAY (NEVER cannot be
 * combined, RFC 3461 section 4.1).  The bit values are part of the wire
 * and file formats (doc/protocol-delivery.md, doc/queue-file.md): never
 * renumber them.
 *
 * Text form: the keywords NEVER, SUCCESS, FAILURE, DELAY separated by
 * commas, case-insensitive on input.  dsn_notify_parse() reads it in the
 * three forms Petrel accepts (strict SMTP, sendmail -N, a milter's added
 * recipient); dsn_notify_format() writes it in the canonical order. */
#ifndef PETREL_DSN_NOTIFY_H
#define PETREL_DSN_NOTIFY_H
#include <stdbool.h>
#include "str.h"

enum {
	DSN_NOTIFY_SUCCESS = 1,
	DSN_NOTIFY_FAILURE = 2,
	DSN_NOTIFY_DELAY = 4,
	DSN_NOTIFY_NEVER = 8,
	DSN_NOTIFY_ANY = DSN_NOTIFY_SUCCESS | DSN_NOTIFY_FAILURE |
	    DSN_NOTIFY_DELAY,
};

/* True for a valid value: 0, DSN_NOTIFY_NEVER, or a combination of the
 * other bits. */
bool dsn_notify_valid(long bits);

/* How dsn_notify_parse() reads a list. */
enum dsn_notify_syntax {
	/* The SMTP parameter NOTIFY=...: keywords separated by single
	 * commas, no empty item, NEVER alone. */
	DSN_NOTIFY_SMTP,
	/* sendmail -N: keywords separated by commas, spaces or tabs (runs
	 * of them count as one, and may lead or trail); NEVER alone. */
	DSN_NOTIFY_LIST,
	/* The NOTIFY= of a recipient a milter adds (SMFIR_ADDRCPT_PAR):
	 * comma-separated, unknown words and empty items count as nothing
	 * and NEVER is not checked; never fails (the caller validates the
	 * result with dsn_notify_valid). */
	DSN_NOTIFY_LENIENT,
};

/* Parses len bytes of text into NOTIFY bits.  Returns the bits (never 0
 * for DSN_NOTIFY_SMTP and DSN_NOTIFY_LIST), or -1 with the reason in *why
 * (may be NULL): a word that is not a keyword or an empty list or item
 * ("NOTIFY must be NEVER or a list of SUCCESS, FAILURE, DELAY"), or NEVER
 * with other keywords ("NOTIFY=NEVER cannot be combined with other
 * values"). */
int dsn_notify_parse(const char *text, size_t len,
    enum dsn_notify_syntax syntax, const char **why);

/* Appends the keywords of bits to out: each bit set, in the order NEVER,
 * SUCCESS, FAILURE, DELAY, comma-separated ("SUCCESS,DELAY"); nothing
 * for 0.  lower: in lower case (sendmail -N). */
void dsn_notify_format(int bits, bool lower, str_t *out);

#endif
