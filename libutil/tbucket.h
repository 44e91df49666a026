/* Token buckets and rates ("500/h"), for traffic shaping (qmgr's
 * per-destination rate limits, doc/scheduler.md section 8a).
 *
 * Pure logic on a caller's clock: TIME UNIT double seconds, never going
 * back.  A bucket of rate r (tokens per second, > 0) and size b (>= 1)
 * starts full; tokens flow in continuously at r up to b.  Comparisons
 * with a whole token allow TB_EPSILON, since sums of 1/r steps are not
 * exact in binary floating point. */
#ifndef PETREL_TBUCKET_H
#define PETREL_TBUCKET_H
#include <stdbool.h>
#include "str.h"

#define TB_EPSILON	1e-9

typedef struct tbucket {
	double rate;			/* tokens per second, > 0 */
	double burst;			/* bucket size, >= 1 */
	double tokens;			/* at 'stamp' */
	double stamp;
} tbucket_t;

/* Parse a rate: "N/UNIT" with N a finite number > 0 and UNIT s, m, h, d
 * (or second, minute, hour, day, and their plurals; case-insensitive;
 * blanks allowed around '/'); "0" or "none" (or an empty string) is no
 * limit (*per_sec = 0).  On error returns false with a one-line reason in
 * err (if not NULL) and leaves *per_sec alone. */
bool tb_rate_parse(const char *text, double *per_sec, str_t *err);
/* Canonical text of a rate into out ("500/h", "1/s" for 60/m, "0" for
 * none): the first of s, m, h, d in which the count is a whole number,
 * else per second with up to 6 decimals; returns str_cstr(out). */
const char *tb_rate_format(double per_sec, str_t *out);

/* A full bucket at 'now'. */
void tb_init(tbucket_t *b, double rate, double burst, double now);
/* Tokens at 'now' (does not change the bucket). */
double tb_tokens(const tbucket_t *b, double now);
/* At least one whole token at 'now'? */
bool tb_can_take(const tbucket_t *b, double now);
/* Take one token at 'now'; false (and nothing taken) if there is none. */
bool tb_take(tbucket_t *b, double now);
/* Earliest time >= now with a whole token (now if there is one). */
double tb_next_token(const tbucket_t *b, double now);
/* Earliest time the bucket is full again (now if it is). */
double tb_full_time(const tbucket_t *b, double now);

#endif
