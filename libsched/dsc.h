/* Destination status cache (doc/scheduling-rules.md §6): a bounded LRU of
 * destinations known to be unreachable, so that a backlog for a dead site
 * is deferred at once ("delivery temporarily suspended: REASON") instead of
 * costing a connection attempt per message.
 *
 * Pure logic, TIME UNIT: double seconds (virtual clock passed as 'now').
 *
 * Key: transport + nexthop + optional extra (e.g. the MX host/IP set, or
 * NULL/"" when unknown).  Lookups must use the same extra as the insert.
 * Keys compare case-insensitively (domain names; transport names never
 * differ only by case in practice).
 *
 * Life of an entry:
 *   dsc_mark_dead()   a queue was declared dead (feedback.h FEEDBACK_DEAD), or
 *                     a probe failed: creates the entry (failures = 1,
 *                     died_at = now) or extends it (failures + 1);
 *                     retry_at = now + backoff_delay(failures, now -
 *                     died_at), i.e. the configured back-off function per
 *                     consecutive failure, clamped to [minimal_backoff_time,
 *                     maximal_backoff_time] (+ jitter if configured).
 *                     With the postfix function the "age" is the time since
 *                     died_at, so the interval doubles: MIN, MIN, 2 MIN ...
 *                     A report while the entry is SUSPENDED and before
 *                     retry_at (a delivery that was in flight when the site
 *                     died) only refreshes the reason: it does not count
 *                     as a new consecutive failure.
 *   dsc_check()       before handing out mail for a destination:
 *                       DSC_DELIVER   not in the cache: deliver normally;
 *                       DSC_SUSPENDED defer now, reason in the entry;
 *                       DSC_PROBE     the retry time has come and this
 *                                     caller gets THE probe: deliver one
 *                                     message with window 1 (feedback.h
 *                                     feedback_probe_start); until the outcome
 *                                     is reported every other check says
 *                                     DSC_SUSPENDED (a probe that has not
 *                                     reported after maximal_backoff_time
 *                                     is presumed lost: the next check
 *                                     hands out a new one).
 *   dsc_probe_ok()    the probe (or any delivery) succeeded: entry removed.
 *   dsc_mark_dead()   the probe failed: entry extended (longer interval).
 *   dsc_probe_abort() the probe ended without a verdict (agent crash,
 *                     shutdown): back to suspended with the same retry
 *                     time, so the next check hands out a new probe.
 *
 * Lookups and inserts are O(1) (hash table + intrusive LRU list).  Every
 * dsc_check or dsc_mark_dead of an entry makes it most recently used;
 * inserting into a full cache evicts the least recently used entry.
 * A limit of 0 disables the cache (nothing is stored, checks say
 * DSC_DELIVER).
 *
 * Entries whose retry time passed more than maximal_backoff_time ago
 * without anyone asking for a probe are stale (no mail for that site);
 * dsc_expire() (O(n), for periodic housekeeping) drops them, so the
 * cache stays short-lived.
 *
 * Pointers to entries stay valid until the next call that may remove
 * entries (dsc_mark_dead on a full cache, dsc_probe_ok, dsc_clear*,
 * dsc_expire, dsc_free). */
#ifndef PETREL_QMGR_DSC_H
#define PETREL_QMGR_DSC_H
#include <stdbool.h>
#include <stddef.h>
#include "str.h"
#include "backoff.h"

#define DSC_DEF_LIMIT	10000	/* destination_status_cache_limit */

typedef enum dsc_state {
	DSC_STATE_SUSPENDED = 0,	/* dead; waiting for retry_at */
	DSC_STATE_PROBING,		/* the one probe delivery is in flight */
} dsc_state_t;

/* One cached destination (read-only for callers). */
typedef struct dsc_entry {
	const char *transport;
	const char *nexthop;
	const char *extra;		/* "" when none */
	char *reason;			/* last failure text */
	dsc_state_t state;
	double died_at;			/* first failure of this episode */
	double last_fail;		/* latest failure */
	double retry_at;		/* when a probe may go */
	double probe_started;		/* when the current probe was handed out */
	int failures;			/* consecutive failures (>= 1) */
	unsigned long probes;		/* probes handed out in this episode */
} dsc_entry_t;

typedef enum dsc_verdict {
	DSC_DELIVER = 0,		/* unknown destination: go ahead */
	DSC_SUSPENDED,			/* defer at once */
	DSC_PROBE,			/* deliver exactly one, as the probe */
} dsc_verdict_t;

typedef struct dsc dsc_t;

/* New cache holding at most 'limit' entries (0 = disabled).  The back-off
 * parameters are copied (min/max time, function, retry count, jitter and
 * random source are used). */
dsc_t *dsc_new(size_t limit, const backoff_params_t *bp);
void dsc_free(dsc_t *dsc);
size_t dsc_count(const dsc_t *dsc);
size_t dsc_limit(const dsc_t *dsc);

/* Record a failure (queue declared dead, or failed probe).  reason may be
 * NULL ("unknown reason").  Returns the entry (NULL if the cache is
 * disabled). */
const dsc_entry_t *dsc_mark_dead(dsc_t *dsc, const char *transport,
    const char *nexthop, const char *extra, const char *reason, double now);

/* Is the destination suspended now?  See the verdicts above.  If entry is
 * not NULL it is set to the cache entry (NULL for DSC_DELIVER). */
dsc_verdict_t dsc_check(dsc_t *dsc, const char *transport,
    const char *nexthop, const char *extra, double now,
    const dsc_entry_t **entry);

/* Look up without side effects (no LRU touch, no probe hand-out). */
const dsc_entry_t *dsc_peek(const dsc_t *dsc, const char *transport,
    const char *nexthop, const char *extra);

/* A delivery to the destination succeeded (the probe or a straggler):
 * forget the entry.  Returns true if there was one. */
bool dsc_probe_ok(dsc_t *dsc, const char *transport, const char *nexthop,
    const char *extra);
/* The probe ended with neither success nor failure: suspended again, same
 * retry time.  Returns true if an entry in the PROBING state was found. */
bool dsc_probe_abort(dsc_t *dsc, const char *transport, const char *nexthop,
    const char *extra);

/* The deferral text "delivery temporarily suspended: REASON" into out
 * (replacing its contents); returns str_cstr(out). */
const char *dsc_suspend_text(const dsc_entry_t *e, str_t *out);
/* One line for `postq -D`:
 *   "TRANSPORT NEXTHOP[ EXTRA] state=suspended|probing failures=N
 *    probes=P age=A retry_in=R reason=TEXT"
 * A = whole seconds since died_at, R = seconds until retry_at rounded up
 * (0 when due or probing); reason last; non-printable bytes escaped so it
 * stays one line.  Replaces out's contents; returns str_cstr(out). */
const char *dsc_format_entry(const dsc_entry_t *e, double now, str_t *out);

/* Calls fn for every entry, most recently used first; fn must not modify
 * the cache. */
void dsc_walk(const dsc_t *dsc, void (*fn)(const dsc_entry_t *, void *),
    void *ctx);

/* Admin: remove one destination (exact key); true if it was there. */
bool dsc_clear(dsc_t *dsc, const char *transport, const char *nexthop,
    const char *extra);
/* Admin (`postsuper -x destination`): remove every entry whose nexthop
 * equals 'nexthop' (case-insensitive), any transport and extra; returns
 * the number removed. */
size_t dsc_clear_nexthop(dsc_t *dsc, const char *nexthop);
/* Admin: empty the cache; returns the number removed. */
size_t dsc_clear_all(dsc_t *dsc);
/* Drop stale entries: SUSPENDED and now > retry_at + maximal_backoff_time.
 * Returns the number removed. */
size_t dsc_expire(dsc_t *dsc, double now);

#endif
