/* Per-destination concurrency feedback (see feedback.h). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "feedback.h"
#include "log.h"

/* Sums of 1/N or 1/sqrt(N) steps do not add up exactly (six times 1/6
 * is 0.9999999999999999), so the thresholds of the pseudo-code allow this
 * much rounding error; otherwise a run would be one event too long
 * (doc/scheduling-rules.md §4.6). */
#define FEEDBACK_EPSILON 1e-9

/* ---- feedback functions ---- */

/* "PARAM: WHAT "TEXT": WHY" into err (if not NULL); returns false. */
static bool parse_fail(str_t *err, const char *param, const char *what,
    const char *text, size_t len, const char *why)
{
	if (err) {
		str_reset(err);
		if (param)
			str_catf(err, "%s: ", param);
		str_catf(err, "%s \"", what);
		str_quote_printable(err, text, len);
		str_catf(err, "\": %s", why);
	}
	return false;
}

/* text without leading and trailing blanks: the start, and its length in
 * *len (NULL text is ""). */
static const char *trim(const char *text, size_t *len)
{
	const char *s = text ? text : "";
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	*len = n;
	return s;
}

static bool func_fail(str_t *err, const char *param, const char *text,
    size_t len, const char *why)
{
	return parse_fail(err, param, "invalid feedback value", text, len, why);
}

bool feedback_func_parse(const char *text, const char *param,
    feedback_func_t *out, str_t *err)
{
	static const char expect[] =
	    "expected NUMBER, NUMBER/concurrency or NUMBER/sqrt_concurrency, "
	    "NUMBER in [0, 1]";
	size_t len;
	const char *s = trim(text, &len);
	feedback_func_t fn;

	/* The number: plain decimal only (strtod would also take "inf",
	 * "nan" and hex, which make no sense here). */
	size_t i = 0, digits = 0, dots = 0;
	while (i < len && (isdigit((unsigned char)s[i]) || s[i] == '.')) {
		if (s[i] == '.')
			dots++;
		else
			digits++;
		i++;
	}
	if (digits == 0 || dots > 1)
		return func_fail(err, param, s, len, expect);
	char num[64];
	if (i >= sizeof(num))
		return func_fail(err, param, s, len, "number too long");
	memcpy(num, s, i);
	num[i] = 0;
	fn.x = strtod(num, NULL);
	if (!(fn.x >= 0 && fn.x <= 1))
		return func_fail(err, param, s, len, "the number must be in [0, 1]");

	while (i < len && isspace((unsigned char)s[i]))
		i++;
	if (i == len) {
		fn.kind = FEEDBACK_KIND_CONSTANT;
	} else if (s[i] == '/') {
		i++;
		while (i < len && isspace((unsigned char)s[i]))
			i++;
		size_t rest = len - i;
		if (rest == strlen("concurrency")
		    && strncasecmp(s + i, "concurrency", rest) == 0)
			fn.kind = FEEDBACK_KIND_INVERSE;
		else if (rest == strlen("sqrt_concurrency")
		    && strncasecmp(s + i, "sqrt_concurrency", rest) == 0)
			fn.kind = FEEDBACK_KIND_INVERSE_SQRT;
		else
			return func_fail(err, param, s, len, expect);
	} else {
		return func_fail(err, param, s, len, expect);
	}
	*out = fn;
	return true;
}

double feedback_func_eval(const feedback_func_t *fn, int window)
{
	double n = window < 1 ? 1 : window;

	switch (fn->kind) {
	case FEEDBACK_KIND_INVERSE:
		return fn->x / n;
	case FEEDBACK_KIND_INVERSE_SQRT:
		return fn->x / sqrt(n);
	case FEEDBACK_KIND_CONSTANT:
	default:
		return fn->x;
	}
}

const char *feedback_func_format(const feedback_func_t *fn, str_t *out)
{
	str_setf(out, "%g", fn->x);
	if (fn->kind == FEEDBACK_KIND_INVERSE)
		str_cat(out, "/concurrency");
	else if (fn->kind == FEEDBACK_KIND_INVERSE_SQRT)
		str_cat(out, "/sqrt_concurrency");
	return str_cstr(out);
}

bool feedback_mode_parse(const char *text, const char *param,
    feedback_mode_t *out, str_t *err)
{
	size_t len;
	const char *s = trim(text, &len);

	if (len == strlen("postfix") && strncasecmp(s, "postfix", len) == 0) {
		*out = FEEDBACK_MODE_POSTFIX;
		return true;
	}
	if (len == strlen("learn") && strncasecmp(s, "learn", len) == 0) {
		*out = FEEDBACK_MODE_LEARN;
		return true;
	}
	return parse_fail(err, param, "unknown feedback mode", s, len,
	    "expected postfix or learn");
}

const char *feedback_mode_name(feedback_mode_t mode)
{
	return mode == FEEDBACK_MODE_LEARN ? "learn" : "postfix";
}

/* ---- settings ---- */

void feedback_settings_init(feedback_settings_t *s)
{
	memset(s, 0, sizeof(*s));
	s->initial_concurrency = FEEDBACK_DEF_INITIAL_CONCURRENCY;
	s->concurrency_limit = FEEDBACK_DEF_CONCURRENCY_LIMIT;
	s->failed_cohort_limit = FEEDBACK_DEF_FAILED_COHORT_LIMIT;
	s->positive.kind = FEEDBACK_KIND_CONSTANT;
	s->positive.x = 1;
	s->negative.kind = FEEDBACK_KIND_CONSTANT;
	s->negative.x = 1;
	s->rate_delay = FEEDBACK_DEF_RATE_DELAY;
	s->debug = false;
}

static bool func_ok(const feedback_func_t *fn)
{
	return (unsigned)fn->kind <= FEEDBACK_KIND_INVERSE_SQRT
	    && fn->x >= 0 && fn->x <= 1;
}

bool feedback_settings_check(const feedback_settings_t *s, str_t *err)
{
	const char *why = NULL;

	if ((unsigned)s->mode > FEEDBACK_MODE_LEARN)
		why = "destination_concurrency_feedback_mode must be postfix or learn";
	else if (s->initial_concurrency < 1)
		why = "initial_destination_concurrency must be >= 1";
	else if (s->concurrency_limit < 0)
		why = "destination_concurrency_limit must be >= 0 (0 = no limit)";
	else if (!(s->failed_cohort_limit >= 0) || !isfinite(s->failed_cohort_limit))
		why = "destination_concurrency_failed_cohort_limit must be a finite number >= 0";
	else if (!func_ok(&s->positive))
		why = "destination_concurrency_positive_feedback is invalid";
	else if (!func_ok(&s->negative))
		why = "destination_concurrency_negative_feedback is invalid";
	else if (!(s->rate_delay >= 0) || !isfinite(s->rate_delay))
		why = "destination_rate_delay must be a finite number >= 0";
	if (why == NULL)
		return true;
	if (err)
		str_set(err, why);
	return false;
}

/* ---- state ---- */

/* doc/scheduling-rules.md §4.1. */
static int initial_window(const feedback_settings_t *s)
{
	int w = s->initial_concurrency;
	if (s->concurrency_limit > 0 && w > s->concurrency_limit)
		w = s->concurrency_limit;
	return w < 1 ? 1 : w;
}

static void debug_log(const feedback_state_t *st, const feedback_settings_t *s,
    const char *event, int before, int flags)
{
	if (!s->debug)
		return;
	if (s->mode == FEEDBACK_MODE_LEARN) {
		static const char *const probe[] = { "idle", "ready", "out" };
		log_info("feedback: %s %s: window %d->%d busy %d success %.3f "
		    "failure %.3f fail_cohorts %.3f base %d ceiling %d probe %s%s%s",
		    st->name ? st->name : "(unnamed)", event, before, st->window,
		    st->busy, st->success, st->failure, st->fail_cohorts,
		    st->base, st->ceiling,
		    probe[(unsigned)st->probe_state <= FEEDBACK_PROBE_OUT ?
		    st->probe_state : 0],
		    (flags & FEEDBACK_DEAD) ? " dead" : "",
		    (flags & FEEDBACK_REVIVED) ? " revived" : "");
		return;
	}
	log_info("feedback: %s %s: window %d->%d busy %d success %.3f "
	    "failure %.3f fail_cohorts %.3f%s%s",
	    st->name ? st->name : "(unnamed)", event, before, st->window,
	    st->busy, st->success, st->failure, st->fail_cohorts,
	    (flags & FEEDBACK_DEAD) ? " dead" : "",
	    (flags & FEEDBACK_REVIVED) ? " revived" : "");
}

/* learn: forget the ceiling and the probe (start, revival). */
static void learn_reset(feedback_state_t *st)
{
	st->base = st->window;
	st->ceiling = 0;
	st->probe_state = FEEDBACK_PROBE_IDLE;
	st->probe_interval = FEEDBACK_LEARN_PROBE_MIN;
	st->next_probe = 0;
}

/* learn: the window the scheduler uses (doc/scheduling-rules.md §4.7,
 * rule 1). */
static int learn_window(const feedback_state_t *st)
{
	int cap;

	if (st->dead || st->base <= 0)
		return 0;
	if (st->ceiling <= 0)
		return st->base;
	cap = st->ceiling + (st->probe_state == FEEDBACK_PROBE_READY ? 1 : 0);
	return st->base < cap ? st->base : cap;
}

void feedback_init(feedback_state_t *st, const feedback_settings_t *s,
    const char *name)
{
	memset(st, 0, sizeof(*st));
	st->window = initial_window(s);
	st->name = name;
	learn_reset(st);
}

static void revive(feedback_state_t *st, const feedback_settings_t *s)
{
	st->window = initial_window(s);
	st->success = st->failure = st->fail_cohorts = 0;
	st->dead = st->probing = false;
	learn_reset(st);
}

/* The Postfix growth rule (doc/scheduling-rules.md §4.4) on *w (the
 * window, or base in learn mode),
 * clamped to the concurrency limit and to cap (0: none). */
static void pf_grow(feedback_state_t *st, const feedback_settings_t *s, int *w,
    int cap)
{
	st->fail_cohorts = 0;
	/* Growth is held back while many deliveries are in flight: their
	 * feedback (possibly negative) is still to come. */
	if (*w < st->busy + s->initial_concurrency) {
		st->success += feedback_func_eval(&s->positive, *w);
		while (st->success >= 1 - FEEDBACK_EPSILON) {
			*w += 1;
			st->failure = 0;
			st->success -= 1;
		}
	}
	if (s->concurrency_limit > 0 && *w > s->concurrency_limit)
		*w = s->concurrency_limit;
	if (cap > 0 && *w > cap)
		*w = cap;
}

/* The Postfix shrink rule and failed-cohort count (doc/scheduling-rules.md
 * §4.5) on *w; true when the
 * destination is now dead (*w = 0). */
static bool pf_shrink(feedback_state_t *st, const feedback_settings_t *s,
    int *w)
{
	bool died = false;

	if (*w > 0) {
		st->fail_cohorts += 1.0 / *w;
		if (st->fail_cohorts > s->failed_cohort_limit +
		    FEEDBACK_EPSILON) {
			*w = 0;
			st->dead = true;
			died = true;
		}
	}
	if (*w > 0) {
		st->failure -= feedback_func_eval(&s->negative, *w);
		while (st->failure < -FEEDBACK_EPSILON) {
			*w -= 1;
			st->failure += 1;
			st->success = 0;
		}
		if (*w < 1)
			*w = 1;
	}
	return died;
}

/* learn: open a probe when its time has come (doc/scheduling-rules.md
 * §4.7, rule 3). */
static void learn_maybe_probe(feedback_state_t *st,
    const feedback_settings_t *s, double now)
{
	if (st->dead || st->probing || st->ceiling <= 0
	    || st->probe_state != FEEDBACK_PROBE_IDLE || st->base < st->ceiling
	    || now < st->next_probe
	    || (s->concurrency_limit > 0 && st->ceiling >= s->concurrency_limit))
		return;
	st->probe_state = FEEDBACK_PROBE_READY;
	st->base = st->ceiling + 1;
	st->success = st->failure = 0;
}

static void learn_after_probe(feedback_state_t *st, double now)
{
	st->probe_state = FEEDBACK_PROBE_IDLE;
	st->next_probe = now + st->probe_interval;
}

/* One feedback event in learn mode (doc/scheduling-rules.md §4.7).  tk
 * may be NULL. */
static int learn_event(feedback_state_t *st, const feedback_settings_t *s,
    feedback_outcome_t outcome, const feedback_ticket_t *tk, double now)
{
	int before = st->window;
	int flags = 0;
	feedback_ticket_t guess;
	const char *event = outcome == FEEDBACK_POSITIVE ? "positive" :
	    "negative";

	if (tk == NULL) {
		guess.conc = st->busy;
		guess.probe = st->probe_state == FEEDBACK_PROBE_OUT
		    && st->ceiling > 0 && st->busy > st->ceiling;
		guess.negatives = st->negatives;
		tk = &guess;
	}
	if (outcome == FEEDBACK_POSITIVE) {
		if (st->probing || st->dead) {
			revive(st, s);
			flags = FEEDBACK_REVIVED;
			debug_log(st, s, event, before, flags);
			return flags;
		}
		pf_grow(st, s, &st->base, st->ceiling > 0 ? st->ceiling
		    + (st->probe_state != FEEDBACK_PROBE_IDLE ? 1 : 0) : 0);
		if (tk->probe && st->probe_state == FEEDBACK_PROBE_OUT) {
			if (tk->negatives == st->negatives && tk->conc > st->ceiling) {
				/* The server took one session more. */
				st->ceiling = tk->conc;
				if (s->concurrency_limit > 0
				    && st->ceiling > s->concurrency_limit)
					st->ceiling = s->concurrency_limit;
				if (st->base < st->ceiling)
					st->base = st->ceiling;
				/* The limit may be rising: the next probe at
				 * once, then back off from the minimum. */
				st->probe_interval = FEEDBACK_LEARN_PROBE_MIN;
				st->probe_state = FEEDBACK_PROBE_IDLE;
				st->next_probe = now;
			} else {
				learn_after_probe(st, now);
			}
		}
	} else if (outcome == FEEDBACK_NEGATIVE) {
		if (st->probing) {
			feedback_kill(st, s);
			flags = FEEDBACK_DEAD;
			debug_log(st, s, event, before, flags);
			return flags;
		}
		if (st->dead) {
			debug_log(st, s, event, before, 0);
			return 0;
		}
		st->negatives++;
		if (pf_shrink(st, s, &st->base)) {
			st->window = 0;
			st->probe_state = FEEDBACK_PROBE_IDLE;
			flags = FEEDBACK_DEAD;
			debug_log(st, s, event, before, flags);
			return flags;
		}
		if (tk->probe && st->probe_state == FEEDBACK_PROBE_OUT) {
			/* The limit is where we thought: probe less often. */
			st->probe_interval *= 2;
			if (st->probe_interval > FEEDBACK_LEARN_PROBE_MAX)
				st->probe_interval = FEEDBACK_LEARN_PROBE_MAX;
			learn_after_probe(st, now);
		} else if (!tk->probe && tk->conc >= 2
		    && (st->ceiling <= 0 || tk->conc - 1 < st->ceiling)) {
			/* Lowered one step at a time: qmgr and the server
			 * see a session end at slightly different times, so a
			 * single refusal at a low concurrency may say more
			 * about that skew than about the limit.  A real fall
			 * refuses again at once and takes the next step. */
			if (st->ceiling <= 0) {
				st->probe_interval = FEEDBACK_LEARN_PROBE_MIN;
				st->ceiling = tk->conc - 1;
			} else {
				st->ceiling -= 1;
			}
			if (st->probe_state == FEEDBACK_PROBE_READY)
				st->probe_state = FEEDBACK_PROBE_IDLE;
			st->next_probe = now + st->probe_interval;
		}
	} else if (tk->probe && st->probe_state == FEEDBACK_PROBE_OUT) {
		learn_after_probe(st, now);	/* no verdict */
	}
	learn_maybe_probe(st, s, now);
	st->window = learn_window(st);
	if (st->window > before)
		flags |= FEEDBACK_GREW;
	else if (st->window < before)
		flags |= FEEDBACK_SHRANK;
	if (outcome != FEEDBACK_NONE)
		debug_log(st, s, event, before, flags);
	return flags;
}

/* feedback_positive and feedback_negative get no time: in learn mode the start
 * of the latest delivery stands for it (probe timing only). */
int feedback_positive(feedback_state_t *st, const feedback_settings_t *s)
{
	int before = st->window;
	int flags = 0;

	if (s->mode == FEEDBACK_MODE_LEARN)
		return learn_event(st, s, FEEDBACK_POSITIVE, NULL,
		    st->last_start);

	if (st->probing || st->dead) {
		/* The probe got through, or a delivery that was in flight when
		 * the site was declared dead succeeded: the site is back. */
		revive(st, s);
		flags = FEEDBACK_REVIVED;
		debug_log(st, s, "positive", before, flags);
		return flags;
	}
	pf_grow(st, s, &st->window, 0);
	if (st->window > before)
		flags |= FEEDBACK_GREW;
	debug_log(st, s, "positive", before, flags);
	return flags;
}

int feedback_negative(feedback_state_t *st, const feedback_settings_t *s)
{
	int before = st->window;
	int flags = 0;

	if (s->mode == FEEDBACK_MODE_LEARN)
		return learn_event(st, s, FEEDBACK_NEGATIVE, NULL,
		    st->last_start);

	if (st->probing) {
		feedback_kill(st, s);
		flags = FEEDBACK_DEAD;
		debug_log(st, s, "negative", before, flags);
		return flags;
	}
	if (pf_shrink(st, s, &st->window))
		flags |= FEEDBACK_DEAD;
	if (st->window < before && !(flags & FEEDBACK_DEAD))
		flags |= FEEDBACK_SHRANK;
	debug_log(st, s, "negative", before, flags);
	return flags;
}

/* The half-open state of doc/scheduling-rules.md §5.3. */
void feedback_probe_start(feedback_state_t *st, const feedback_settings_t *s)
{
	int before = st->window;
	st->window = 1;
	st->success = st->failure = st->fail_cohorts = 0;
	st->dead = false;
	st->probing = true;
	st->base = 1;
	st->probe_state = FEEDBACK_PROBE_IDLE;
	debug_log(st, s, "probe", before, 0);
}

void feedback_kill(feedback_state_t *st, const feedback_settings_t *s)
{
	int before = st->window;
	st->window = 0;
	st->success = st->failure = 0;
	st->dead = true;
	st->probing = false;
	st->base = 0;
	st->probe_state = FEEDBACK_PROBE_IDLE;
	if (before != 0)
		debug_log(st, s, "kill", before, FEEDBACK_DEAD);
}

int feedback_effective_window(const feedback_state_t *st,
    const feedback_settings_t *s)
{
	if (st->dead || st->window <= 0)
		return 0;
	if (s->rate_delay > 0)
		return 1;
	return st->window;
}

double feedback_next_start_time(const feedback_state_t *st,
    const feedback_settings_t *s)
{
	if (!(s->rate_delay > 0) || !st->started)
		return -HUGE_VAL;
	return st->last_start + s->rate_delay;
}

bool feedback_can_start(const feedback_state_t *st,
    const feedback_settings_t *s, double now)
{
	if (st->busy >= feedback_effective_window(st, s))
		return false;
	return now >= feedback_next_start_time(st, s);
}

feedback_ticket_t feedback_delivery_start(feedback_state_t *st,
    const feedback_settings_t *s, double now)
{
	feedback_ticket_t tk;

	st->busy += 1;
	st->started = true;
	st->last_start = now;
	tk.conc = st->busy;
	tk.negatives = st->negatives;
	tk.probe = false;
	if (s->mode == FEEDBACK_MODE_LEARN
	    && st->probe_state == FEEDBACK_PROBE_READY
	    && st->ceiling > 0 && st->busy > st->ceiling) {
		int before = st->window;
		tk.probe = true;
		st->probe_state = FEEDBACK_PROBE_OUT;
		st->window = learn_window(st);
		debug_log(st, s, "limit-probe", before, 0);
	}
	return tk;
}

int feedback_delivery_end(feedback_state_t *st, const feedback_settings_t *s,
    double now, feedback_outcome_t outcome, const feedback_ticket_t *tk)
{
	int flags = 0;

	if (s->mode == FEEDBACK_MODE_LEARN)
		flags = learn_event(st, s, outcome, tk, now);
	else if (outcome == FEEDBACK_POSITIVE)
		flags = feedback_positive(st, s);
	else if (outcome == FEEDBACK_NEGATIVE)
		flags = feedback_negative(st, s);
	if (st->busy > 0)
		st->busy -= 1;
	return flags;
}

int feedback_delivery_done(feedback_state_t *st, const feedback_settings_t *s,
    double now, feedback_outcome_t outcome)
{
	return feedback_delivery_end(st, s, now, outcome, NULL);
}
