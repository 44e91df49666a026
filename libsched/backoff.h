/* Retry back-off for deferred mail and for the destination status cache
 * (doc/scheduling-rules.md §7), and the queue lifetime test (§7.5).
 *
 * Pure logic: no clock, no randomness of its own.  TIME UNIT: every time
 * and duration here is a double in seconds (a virtual clock in tests and
 * in the simulator, time(NULL) or a monotonic reading in the daemon).
 *
 * Functions (MIN = minimal_backoff_time, MAX = maximal_backoff_time,
 * NUM = backoff_retry_count, n = attempt number, 1-based):
 *   postfix      delay = age of the message at the failure, clamped to
 *                [MIN, MAX] (so the interval roughly doubles each time);
 *                n is ignored.
 *   linear       I = (MAX - MIN) / NUM; t(n) = MIN + I (n - 1) for n < NUM,
 *                t(NUM) = MAX
 *   arithmetic   d = 2 (MAX - MIN) / (NUM (NUM - 1));
 *                t(n) = MIN + d n (n - 1) / 2
 *   geometric    K = 10^(lg(MAX/MIN) / (NUM - 1)); t(n) = MIN K^(n-1)
 *   exponential  k = 10^(lg(MAX/MIN) / (NUM - 1)); p = MIN / k;
 *                t(n) = p k^n          (equal to geometric, see below)
 *   For the four curves n > NUM gives MAX, n < 1 counts as 1, and
 *   NUM == 1 gives t(1) = MIN then MAX (doc/scheduling-rules.md §7.3).
 *
 * Two properties of the curves, both kept on purpose:
 *   - linear: the step is (MAX - MIN) / NUM, yet t(NUM) = MAX, so the
 *     last step is two intervals.
 *   - geometric and exponential are algebraically identical
 *     (p k^n = MIN k^(n-1)); both are provided, each computed by its own
 *     formula, and the tests check they agree.
 * doc/scheduler-feedback.md has the full discussion.
 *
 * Jitter (backoff_jitter, percent J): the delay d becomes
 * d * (1 + J/100 * (2r - 1)) with r in [0, 1) from a caller-supplied
 * random source, then is clamped to [MIN, MAX] again, so a retry time
 * never leaves the configured bounds.  With no random source or J == 0
 * there is no jitter. */
#ifndef PETREL_QMGR_BACKOFF_H
#define PETREL_QMGR_BACKOFF_H
#include <stdbool.h>
#include "str.h"

typedef enum backoff_fn {
	BACKOFF_POSTFIX = 0,
	BACKOFF_LINEAR,
	BACKOFF_ARITHMETIC,
	BACKOFF_GEOMETRIC,
	BACKOFF_EXPONENTIAL,
} backoff_fn_t;

/* Defaults (seconds unless said otherwise): doc/scheduling-rules.md §7.1. */
#define BACKOFF_DEF_FUNCTION		BACKOFF_POSTFIX
#define BACKOFF_DEF_MIN_TIME		300.0		/* minimal_backoff_time */
#define BACKOFF_DEF_MAX_TIME		4000.0		/* maximal_backoff_time */
#define BACKOFF_DEF_RETRY_COUNT		10		/* backoff_retry_count */
#define BACKOFF_DEF_JITTER		0.0		/* backoff_jitter, percent */
#define BACKOFF_DEF_QUEUE_LIFETIME	(5 * 86400.0)	/* maximal_queue_lifetime */
#define BACKOFF_DEF_BOUNCE_LIFETIME	(5 * 86400.0)	/* bounce_queue_lifetime */

/* A random source: returns a number in [0, 1).  Tests pass a fixed one. */
typedef double (*backoff_rand_fn)(void *ctx);

typedef struct backoff_params {
	backoff_fn_t function;		/* backoff_function */
	double min_time;		/* minimal_backoff_time, >= 0 (> 0 for
					 * geometric/exponential) */
	double max_time;		/* maximal_backoff_time, >= min_time */
	int retry_count;		/* backoff_retry_count (NUM), >= 1 */
	double jitter;			/* backoff_jitter, percent in [0, 100] */
	double queue_lifetime;		/* maximal_queue_lifetime, >= 0 */
	double bounce_lifetime;		/* bounce_queue_lifetime, >= 0 */
	backoff_rand_fn rand;		/* random source for jitter, or NULL */
	void *rand_ctx;			/* passed to rand */
} backoff_params_t;

/* Fill p with the defaults above (no random source). */
void backoff_params_init(backoff_params_t *p);

/* Check p; on error return false and put a one-line reason (naming the
 * parameter) in err (if not NULL).  The computing functions below do not
 * crash on bad parameters (they clamp), but their values are then
 * meaningless: a daemon checks once at start-up. */
bool backoff_params_check(const backoff_params_t *p, str_t *err);

/* "postfix", "linear", "arithmetic", "geometric", "exponential"
 * (case-insensitive, surrounding blanks ignored).  On an unknown name
 * returns false, leaves *out alone, and sets err to e.g.
 * "unknown backoff_function \"cubic\": expected postfix, linear, ...". */
bool backoff_parse_function(const char *name, backoff_fn_t *out, str_t *err);
/* Canonical name ("postfix", ...); "unknown" for an invalid value. */
const char *backoff_function_name(backoff_fn_t fn);

/* The raw formula t(n) of a curve (linear .. exponential) for
 * attempt n, without clamping or jitter (n > NUM gives MAX, n < 1 counts
 * as 1).  For BACKOFF_POSTFIX returns MIN (it depends on age, not n). */
double backoff_curve(const backoff_params_t *p, int attempt);

/* The delay before the next try after failed attempt number 'attempt'
 * (1-based; the first failure is attempt 1) of something that first
 * arrived 'age' seconds ago: the function's value clamped to [MIN, MAX],
 * then jitter if configured.  The postfix function uses only age, the
 * others only attempt (doc/scheduling-rules.md §7.2-§7.4). */
double backoff_delay(const backoff_params_t *p, int attempt, double age);

/* Apply only the jitter of p to a delay and clamp to [MIN, MAX]
 * (exposed for the DSC and for tests). */
double backoff_apply_jitter(const backoff_params_t *p, double delay);

/* Next retry time: now + backoff_delay(p, attempt, now - arrival). */
double backoff_next_retry(const backoff_params_t *p, int attempt,
    double arrival, double now);

/* Queue lifetime: bounce_lifetime for null-sender (bounce) mail,
 * queue_lifetime otherwise. */
double backoff_lifetime(const backoff_params_t *p, bool null_sender);

/* True if a message that arrived at 'arrival' has used up its lifetime
 * at 'now' (now - arrival >= lifetime) and must be returned as
 * undeliverable instead of deferred again.  A lifetime of 0 therefore
 * means "try once", as in Postfix (doc/scheduling-rules.md §7.5). */
bool backoff_expired(const backoff_params_t *p, double arrival, double now,
    bool null_sender);

#endif
