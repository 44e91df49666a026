/* Per-destination concurrency feedback (doc/scheduling-rules.md §4, as
 * in the Postfix 2.5 scheduler) and destination_rate_delay (§4.8).
 *
 * With destination_concurrency_feedback_mode = learn the same rules run
 * underneath a learned session limit (doc/scheduling-rules.md §4.7;
 * doc/scheduler-feedback.md section 2a): the window stays at the concurrency
 * where the destination started refusing sessions, with a probe above it now
 * and then.
 *
 * Pure logic, TIME UNIT: double seconds (virtual clock; the rate delay
 * and the learn mode's probes use time).  One feedback_state_t lives in each
 * destination queue
 * (transport x nexthop); one feedback_settings_t per transport, filled by the
 * caller from main.cf (TRANSPORT_X overriding default_X).
 *
 * The caller's protocol for one delivery:
 *     if (feedback_can_start(&q->fb, set, now)) {
 *         tk = feedback_delivery_start(&q->fb, set, now); busy++, remembers now
 *         ... hand the entry to a delivery agent, keep tk with it ...
 *     }
 *     ... later, when the agent reports:
 *     feedback_delivery_end(&q->fb, set, now, FEEDBACK_POSITIVE, &tk);
 *                                          or FEEDBACK_NEGATIVE
 *                                          or FEEDBACK_NONE
 * (feedback_delivery_done is the same without a ticket; the learn mode then
 * guesses the delivery's concurrency from busy.)
 * feedback_delivery_end applies the feedback while the finished delivery still
 * counts as busy (as Postfix does) and then decrements busy.  Callers
 * that track busy themselves may set st->busy and call feedback_positive() /
 * feedback_negative() directly.
 *
 * Positive feedback = a delivery that did not fail while connecting or in
 * the handshake (rejected recipients included: the server talked to us).
 * Negative feedback = connect refused/timed out, no greeting, 421 at the
 * greeting, TLS handshake failure, connection dropped before the first
 * reply.  Other failures are FEEDBACK_NONE (doc/scheduling-rules.md §4.3).
 *
 * The algorithm (doc/scheduling-rules.md §4.4, §4.5), N = window, g/f =
 * positive/negative feedback function:
 *   positive: fail_cohorts = 0;
 *             if (window < busy + initial) {
 *                 success += g(N);
 *                 while (success >= 1) window++, failure = 0, success -= 1;
 *             }
 *             window = min(window, limit)          (limit 0 = no limit)
 *   negative: if (window > 0) {
 *                 fail_cohorts += 1 / window;
 *                 if (fail_cohorts > failed_cohort_limit) window = 0: dead
 *             }
 *             if (window > 0) {
 *                 failure -= f(N);
 *                 while (failure < 0) window--, failure += 1, success = 0;
 *                 window = max(window, 1);
 *             }
 * g and f are evaluated with N = the window before the event.
 *
 * Dead destinations and probes (doc/scheduling-rules.md §5): when
 * feedback_negative reports FEEDBACK_DEAD the
 * caller enters the destination in the DSC (dsc.h) and defers its mail.
 * At the DSC retry time the caller calls feedback_probe_start() (window 1, not
 * dead) and starts the single probe delivery; its outcome then either
 * revives the queue (positive: window = initial, FEEDBACK_REVIVED) or kills it
 * again at once (negative: window 0, FEEDBACK_DEAD), whatever the cohort count.
 * A positive event on a dead queue that is not probing (a delivery that
 * was in flight when the site was declared dead got through) revives it
 * too, as Postfix does; the caller then also clears the DSC entry.
 * Negative events on a dead queue change nothing.
 *
 * Rounding (doc/scheduling-rules.md §4.6): sums of 1/N steps are not exact in
 * floating point (six times 1/6 is 0.9999999999999999), so the comparisons
 * above allow an error of 1e-9 (success >= 1 - 1e-9, failure < -1e-9,
 * fail_cohorts > limit + 1e-9); otherwise a run would sometimes be one event
 * too long.
 *
 * Debug logging (settings.debug, destination_concurrency_feedback_debug):
 * every feedback event logs one line through log_info, e.g.
 *   "feedback: smtp:example.com positive: window 5->6 busy 5
 *    success 0.00 failure 0.00 fail_cohorts 0.00"
 * (one line; see feedback.c for the exact fields). */
#ifndef PETREL_QMGR_FEEDBACK_H
#define PETREL_QMGR_FEEDBACK_H
#include <stdbool.h>
#include "str.h"

/* A feedback function: g(N) = x/N, x/sqrt(N) or the constant x. */
typedef enum feedback_kind {
	FEEDBACK_KIND_CONSTANT = 0,		/* "x" */
	FEEDBACK_KIND_INVERSE,		/* "x/concurrency" */
	FEEDBACK_KIND_INVERSE_SQRT,		/* "x/sqrt_concurrency" */
} feedback_kind_t;

typedef struct feedback_func {
	feedback_kind_t kind;
	double x;			/* in [0, 1] */
} feedback_func_t;

/* Parse "1/concurrency", "1/sqrt_concurrency", "0.5/concurrency", "1",
 * "0.25", ... (blanks allowed around '/', names case-insensitive).  The
 * number must be in [0, 1].  On error returns false, leaves *out alone and
 * puts a one-line reason in err (if not NULL), naming 'param' (the
 * parameter being parsed, e.g. "smtp_destination_concurrency_positive_
 * feedback"; may be NULL). */
bool feedback_func_parse(const char *text, const char *param,
    feedback_func_t *out, str_t *err);
/* Value for window N (N < 1 is treated as 1, so nothing divides by 0;
 * doc/scheduling-rules.md §4.2). */
double feedback_func_eval(const feedback_func_t *fn, int window);
/* Canonical text ("1/concurrency", "0.5/sqrt_concurrency", "1") into out
 * (replacing its contents); returns str_cstr(out). */
const char *feedback_func_format(const feedback_func_t *fn, str_t *out);

/* Defaults as in Postfix (doc/scheduling-rules.md §4.1, §4.5, §4.8). */
#define FEEDBACK_DEF_INITIAL_CONCURRENCY 5 /* initial_destination_concurrency */
#define FEEDBACK_DEF_CONCURRENCY_LIMIT	20	/* default_destination_concurrency_limit */
#define FEEDBACK_DEF_FAILED_COHORT_LIMIT 1.0	/* ..._failed_cohort_limit */
#define FEEDBACK_DEF_RATE_DELAY		0.0	/* destination_rate_delay, s */

/* destination_concurrency_feedback_mode: postfix (doc/scheduling-rules.md
 * §4.4, §4.5 alone) or learn (the same underneath, plus a learned session
 * limit: doc/scheduler-feedback.md section 2a). */
typedef enum feedback_mode {
	FEEDBACK_MODE_POSTFIX = 0,
	FEEDBACK_MODE_LEARN,
} feedback_mode_t;

/* "postfix" or "learn" (case-insensitive, blanks trimmed).  On error
 * returns false, leaves *out alone and puts a one-line reason naming
 * param (may be NULL) in err (if not NULL). */
bool feedback_mode_parse(const char *text, const char *param,
    feedback_mode_t *out, str_t *err);
const char *feedback_mode_name(feedback_mode_t mode);

/* learn mode: probe interval bounds, seconds (doc/scheduling-rules.md
 * §4.7). */
#define FEEDBACK_LEARN_PROBE_MIN	1.0
#define FEEDBACK_LEARN_PROBE_MAX	20.0

/* Per-transport settings, filled by the caller. */
typedef struct feedback_settings {
	feedback_mode_t mode;	/* destination_concurrency_feedback_mode */
	int initial_concurrency;	/* >= 1 */
	int concurrency_limit;		/* >= 0; 0 = no limit (as Postfix) */
	double failed_cohort_limit;	/* >= 0 */
	feedback_func_t positive;		/* destination_concurrency_positive_feedback */
	feedback_func_t negative;		/* destination_concurrency_negative_feedback */
	double rate_delay;		/* destination_rate_delay, s, >= 0 */
	bool debug;			/* destination_concurrency_feedback_debug */
} feedback_settings_t;

/* Defaults: initial 5, limit 20, cohort limit 1, both feedbacks the
 * constant 1, no rate delay, no debug. */
void feedback_settings_init(feedback_settings_t *s);
/* Range checks; false with a one-line reason in err on error. */
bool feedback_settings_check(const feedback_settings_t *s, str_t *err);

/* Per-destination state.  Fields are public for reading (reports,
 * simulator statistics); change them only through the functions below,
 * except busy for callers that count in-flight deliveries themselves. */
typedef struct feedback_state {
	int window;			/* concurrency allowed now; 0 = dead */
	int busy;			/* deliveries in flight */
	double success;			/* positive feedback accumulator */
	double failure;			/* negative feedback accumulator (<= 0 .. 1) */
	double fail_cohorts;		/* failed cohorts since the last success */
	bool dead;			/* fail_cohorts exceeded the limit */
	bool probing;			/* half-open: one probe delivery allowed */
	bool started;			/* a delivery has been started */
	double last_start;		/* start time of the latest delivery */
	const char *name;		/* for debug logs; borrowed, may be NULL */
	/* learn mode only (window = min(base, ceiling [+ 1 when a probe is
	 * ready]); see doc/scheduler-feedback.md section 2a). */
	int base;			/* the Postfix window underneath */
	int ceiling;			/* learned session limit; 0 = none */
	int probe_state;		/* FEEDBACK_PROBE_IDLE, _READY, _OUT */
	double probe_interval;		/* s, FEEDBACK_LEARN_PROBE_MIN..MAX */
	double next_probe;		/* earliest time of the next probe */
	unsigned long negatives;	/* negative events so far */
} feedback_state_t;

enum { FEEDBACK_PROBE_IDLE = 0, FEEDBACK_PROBE_READY, FEEDBACK_PROBE_OUT };

/* What feedback_delivery_start says about one delivery; the caller keeps it
 * with the delivery and gives it back to feedback_delivery_end. */
typedef struct feedback_ticket {
	int conc;			/* in flight at its start, itself included */
	bool probe;			/* learn: the probe above the ceiling */
	unsigned long negatives;	/* st->negatives at its start */
} feedback_ticket_t;

/* What an event did (bit flags; 0 = nothing changed in the window). */
enum {
	FEEDBACK_GREW = 1,			/* window went up */
	FEEDBACK_SHRANK = 2,		/* window went down (still >= 1) */
	FEEDBACK_DEAD = 4,	/* destination declared dead, window 0 */
	FEEDBACK_REVIVED = 8,		/* probe succeeded, window = initial */
};

/* Outcome of a delivery, for feedback_delivery_done. */
typedef enum feedback_outcome {
	FEEDBACK_NONE = 0,		/* no feedback (e.g. agent crashed) */
	FEEDBACK_POSITIVE,
	FEEDBACK_NEGATIVE,
} feedback_outcome_t;

/* window = initial clamped to the limit (and to >= 1), accumulators 0,
 * busy 0, not dead.  name (e.g. "smtp:example.com") is only used in debug
 * logs and must outlive the state (the queue's own name string). */
void feedback_init(feedback_state_t *st, const feedback_settings_t *s,
    const char *name);

/* The two feedback events; return FEEDBACK_* flags. */
int feedback_positive(feedback_state_t *st, const feedback_settings_t *s);
int feedback_negative(feedback_state_t *st, const feedback_settings_t *s);

/* Half-open state for a DSC probe: window 1, not dead, accumulators 0,
 * probing.  The next feedback_positive revives (window = initial), the next
 * feedback_negative kills at once. */
void feedback_probe_start(feedback_state_t *st, const feedback_settings_t *s);
/* Declare dead now (e.g. the DSC already knows the destination is down):
 * window 0, dead, not probing. */
void feedback_kill(feedback_state_t *st, const feedback_settings_t *s);

/* The concurrency that may actually be used: 0 if dead, min(window, 1)
 * with a rate delay, else window (doc/scheduling-rules.md §4.8). */
int feedback_effective_window(const feedback_state_t *st,
    const feedback_settings_t *s);
/* Earliest time a new delivery may start because of the rate delay:
 * last_start + rate_delay, or -HUGE_VAL if there is no rate delay or no
 * delivery was started yet.  (It says nothing about busy/window.) */
double feedback_next_start_time(const feedback_state_t *st,
    const feedback_settings_t *s);
/* May one more delivery start now?  busy < effective window, and with a
 * rate delay also busy == 0 and now >= feedback_next_start_time(). */
bool feedback_can_start(const feedback_state_t *st,
    const feedback_settings_t *s, double now);
/* A delivery starts: busy++, last_start = now.  Returns its ticket (in
 * learn mode it may be the probe: see section 2a). */
feedback_ticket_t feedback_delivery_start(feedback_state_t *st,
    const feedback_settings_t *s, double now);
/* A delivery ended: apply the outcome's feedback (busy still counting the
 * finished delivery), then busy-- (never below 0); in learn mode also the
 * learned ceiling and the probe timing.  tk is the delivery's ticket from
 * feedback_delivery_start (NULL: unknown; c is then taken as busy and an
 * outstanding probe as this delivery if busy is above the ceiling).
 * Returns FEEDBACK_* flags. */
int feedback_delivery_end(feedback_state_t *st, const feedback_settings_t *s,
    double now, feedback_outcome_t outcome, const feedback_ticket_t *tk);
/* feedback_delivery_end without a ticket. */
int feedback_delivery_done(feedback_state_t *st, const feedback_settings_t *s,
    double now, feedback_outcome_t outcome);

#endif
