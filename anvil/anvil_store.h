/* anvil's counters: one entry per ident (service:client address) with
 * its connection count and its event rates over the current time unit.
 * No I/O and no clock of its own: every call gets the time (monotonic
 * milliseconds), so the unit tests run it on a virtual clock.
 *
 * Rates are counted in a fixed window, as Postfix's anvil does: the
 * window starts at the first event of an entry and every rate of the
 * entry starts again from zero at the first event one time unit or more
 * later.
 *
 * An entry with open connections stays; one without (idle) is forgotten
 * a time unit after its last event (its rates have run out by then).
 * The entries are capped: when a new ident would go over the cap, the
 * idle entry unused longest is dropped first; entries with open
 * connections are never dropped (the smtpd processes holding them bound
 * their number), so the cap may be passed by those. */
#ifndef PETREL_ANVIL_STORE_H
#define PETREL_ANVIL_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "anvil.h"
#include "list.h"

typedef struct anvil_entry {
	char *ident;
	anvil_counts_t c;
	int64_t start_ms;	/* the rate window began */
	int64_t last_ms;	/* last event */
	list_node_t idle;	/* in the idle list when c.count == 0 */
} anvil_entry_t;

/* The peak of one counter since the last report. */
typedef struct anvil_peak {
	int32_t value;		/* 0: nothing happened */
	char *ident;
	int64_t when_ms;
} anvil_peak_t;

enum anvil_peak_kind {
	ANVIL_PEAK_CONN_RATE, ANVIL_PEAK_CONN_COUNT, ANVIL_PEAK_MESSAGE,
	ANVIL_PEAK_RECIPIENT, ANVIL_PEAK_NEWTLS, ANVIL_PEAK_AUTH,
	ANVIL_PEAK_COUNT
};

typedef struct anvil_stats {
	anvil_peak_t peak[ANVIL_PEAK_COUNT];
	size_t max_size;	/* most entries at once */
	int64_t max_size_ms;
	unsigned long dropped;	/* idle entries dropped for the cap */
} anvil_stats_t;

typedef struct anvil_store anvil_store_t;

/* unit_ms: anvil_rate_time_unit; limit: the cap on entries (>= 1). */
anvil_store_t *anvil_store_new(int64_t unit_ms, size_t limit);
void anvil_store_free(anvil_store_t *st);

/* A new connection of ident: the entry (its count and rate counted),
 * NULL only if the ident is not valid.  The caller keeps the pointer
 * until it calls anvil_store_disconnect() with it: an entry with
 * connections is never freed. */
anvil_entry_t *anvil_store_connect(anvil_store_t *st, int64_t now,
    const char *ident);
/* One connection of e ends. */
void anvil_store_disconnect(anvil_store_t *st, int64_t now, anvil_entry_t *e);
/* An event (ANVIL_OP_MESSAGE, _RECIPIENT, _NEWTLS, _AUTH) of ident: its
 * entry with the rate counted.  An ident anvil does not know (it was
 * restarted during the session) is entered as a connection first, and
 * *connected says so (the caller then holds it as after connect). */
anvil_entry_t *anvil_store_event(anvil_store_t *st, int64_t now,
    anvil_op_t op, const char *ident, bool *connected);
/* The entry of ident, or NULL. */
anvil_entry_t *anvil_store_find(anvil_store_t *st, const char *ident);
/* The counters of ident now, without counting anything (zeros for an
 * ident not known, or whose window has run out). */
void anvil_store_lookup(anvil_store_t *st, int64_t now, const char *ident,
    anvil_counts_t *c);

/* Forgets idle entries unused for a time unit. */
void anvil_store_expire(anvil_store_t *st, int64_t now);
/* When anvil_store_expire() has something to do next (-1: never). */
int64_t anvil_store_next_expiry(const anvil_store_t *st);
size_t anvil_store_size(const anvil_store_t *st);

/* Peaks since the last reset. */
const anvil_stats_t *anvil_store_stats(const anvil_store_t *st);
void anvil_store_stats_reset(anvil_store_t *st);

#endif
