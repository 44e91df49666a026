/* Logical lines: the line syntax shared by main.cf, master.cf and the
 * text form of lookup tables (texthash:, postmap input).
 *
 * A physical line ends at '\n'; one '\r' before the '\n' is dropped.  A
 * line that holds only white space, or whose first non-white character
 * is '#', is skipped: it neither starts nor ends a logical line, so
 * comments may stand between continuation lines.  A line that starts
 * with white space continues the logical line before it; any other line
 * starts a new one.  Each logical line is handed to a callback with the
 * number of its first physical line (counting from 1, skipped lines
 * included).
 *
 * Two rules differ between the formats, so they are flags:
 *  - which characters indent a line (and make it blank): space and tab,
 *    or with LINES_ANY_SPACE any ASCII white space (\t \n \v \f \r, ' ');
 *  - how a continuation joins: each physical line trimmed at both ends
 *    and joined with one space, or with LINES_VERBATIM only trailing
 *    white space dropped, so the continuation's own indentation is the
 *    separator (values keep their inner white space as written).
 *
 * Usage, over a buffer:
 *
 *	lines_opts_t o = { .line = fn, .error = on_err, .ctx = ctx };
 *	rc = lines_walk(text, len, &o);
 *
 * or fed one physical line at a time (a file read with getline):
 *
 *	lines_t l;
 *	lines_init(&l, &o);
 *	while (... && lines_feed(&l, buf, n) == 0)
 *		;
 *	rc = lines_finish(&l);
 *
 * Callbacks return 0 to go on, or any other value to stop the walk;
 * lines_walk/lines_feed/lines_finish then return that value (the caller
 * keeps its own message).  They return 0 when every line was handled. */
#ifndef PETREL_LINES_H
#define PETREL_LINES_H
#include <stdbool.h>
#include <stddef.h>
#include "str.h"

#define LINES_ANY_SPACE	0x1	/* any ASCII white space indents, not only ' ' '\t' */
#define LINES_VERBATIM	0x2	/* keep a continuation's indentation as the separator */

/* What the error callback is told about.  It returns 0 to go on (what is
 * then left out is said for each), or non-zero to stop the walk. */
enum lines_error {
	LINES_ORPHAN,	/* an indented line with no logical line before it;
			 * that line is left out (a next one is reported too) */
	LINES_TOO_LONG,	/* the logical line would grow past max_len; it is
			 * left out with the rest of its continuation lines */
	LINES_NUL,	/* a NUL byte in the physical line; that line is left
			 * out as if it were a comment */
};

/* line is the logical line (NUL-terminated, the callback may modify it
 * in place; it is valid only during the call). */
typedef int (*lines_line_fn)(char *line, int lineno, void *ctx);
/* lineno: the physical line for LINES_ORPHAN and LINES_NUL, the first
 * line of the logical line for LINES_TOO_LONG. */
typedef int (*lines_error_fn)(enum lines_error what, int lineno, void *ctx);

typedef struct lines_opts {
	int flags;		/* LINES_ANY_SPACE, LINES_VERBATIM */
	size_t max_len;		/* longest logical line in bytes; 0 = no limit */
	lines_line_fn line;
	lines_error_fn error;	/* NULL: any error stops the walk with -1 */
	void *ctx;		/* passed to both callbacks */
} lines_opts_t;

/* State of a walk fed line by line; the fields are private except
 * lineno (physical lines fed so far, for the caller's own messages). */
typedef struct lines {
	lines_opts_t opts;
	int lineno;
	int start;		/* first line of the pending logical line; 0 = none */
	bool skipping;		/* dropping the continuations of a bad line */
	int rc;			/* non-zero once stopped */
	str_t logical;
	str_t scratch;
} lines_t;

void lines_init(lines_t *l, const lines_opts_t *opts);
/* One physical line of len bytes, without its '\n'.  Returns 0, or the
 * value that stopped the walk (then and after, lines are ignored). */
int lines_feed(lines_t *l, const char *line, size_t len);
/* Hands over the pending logical line unless the walk has stopped, and
 * frees what l holds.  Returns 0 or the value that stopped the walk. */
int lines_finish(lines_t *l);
/* Frees what l holds without handing over the pending logical line (the
 * caller gave up, e.g. on a read error). */
void lines_discard(lines_t *l);

/* Splits len bytes of text at '\n' and walks them. */
int lines_walk(const char *text, size_t len, const lines_opts_t *opts);

#endif
