/* The connection cache's store: idle sessions (descriptors with their
 * labels and properties) indexed by destination and by endpoint label,
 * with their expiry times and the limits per destination and in all.
 * No I/O and no clock of its own (the caller passes the time), so tests
 * drive it directly; the daemon (scache.c) watches the descriptors and
 * closes what the store lets go of.  doc/protocol-scache.md. */
#ifndef PETREL_SCACHE_STORE_H
#define PETREL_SCACHE_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "list.h"

/* Why the store lets go of a session (the hook closes it). */
enum scache_drop {
	SCACHE_DROP_EXPIRED,	/* its ttl passed */
	SCACHE_DROP_EVICTED,	/* a newer one took its place (limits) */
	SCACHE_DROP_SERVER,	/* the server spoke or hung up */
	SCACHE_DROP_EXIT,	/* the store is freed */
};

typedef struct scache_sess {
	int fd;
	char *dest;
	char *endpoint;
	char *props;
	char *ident;		/* the socket's identity (duplicates), or NULL */
	int64_t saved_ms;
	int64_t expires_ms;
	void *user;		/* the daemon's */
	/* The store's. */
	uint64_t seq;
	size_t heap_index;
	list_node_t all_node, dest_node, endp_node;
	struct scache_bucket *db, *eb;
} scache_sess_t;

typedef struct scache_hooks {
	/* The store now holds ss (watch its descriptor). */
	void (*added)(void *ctx, scache_sess_t *ss);
	/* The store lets go of ss: close ss->fd (the store frees ss after). */
	void (*dropped)(void *ctx, scache_sess_t *ss, enum scache_drop why);
	void *ctx;
} scache_hooks_t;

typedef struct scache_stats {
	unsigned long saved;
	unsigned long dest_hits, dest_misses;
	unsigned long endp_hits, endp_misses;
	unsigned long expired, server_closed, evicted;
	size_t max_sessions;	/* most held at once */
} scache_stats_t;

typedef struct scache_store scache_store_t;

/* per_dest, total >= 1; ttl_limit_ms > 0.  hooks may have NULL members. */
scache_store_t *scache_store_new(size_t per_dest, size_t total,
    int64_t ttl_limit_ms, const scache_hooks_t *hooks);
/* Drops every session (SCACHE_DROP_EXIT), frees. */
void scache_store_free(scache_store_t *st);

/* Keeps fd under dest and endpoint until now_ms + ttl_ms (ttl cut to the
 * limit), dropping the oldest of dest, then the oldest of all, to stay
 * within the limits.  ident (NULL: no check) names the socket: a session
 * with the same ident is already held, so NULL is returned and nothing
 * changes (the caller closes fd).  Else the new session. */
scache_sess_t *scache_store_save(scache_store_t *st, int64_t now_ms,
    const char *dest, const char *endpoint, int64_t ttl_ms,
    const char *props, int fd, const char *ident);
/* The session saved last under the label (by endpoint, or by
 * destination), removed from the store: the caller's now (its fd is not
 * watched or closed by the store any more; scache_sess_free() when done).
 * NULL if none. */
scache_sess_t *scache_store_take(scache_store_t *st, bool by_endpoint,
    const char *label);
void scache_sess_free(scache_sess_t *ss);
/* Drops one held session (the hook closes it). */
void scache_store_drop(scache_store_t *st, scache_sess_t *ss,
    enum scache_drop why);
/* Drops the sessions due by now_ms; returns how many. */
size_t scache_store_expire(scache_store_t *st, int64_t now_ms);
/* When the next session is due (-1: none). */
int64_t scache_store_next_expiry(const scache_store_t *st);

size_t scache_store_count(const scache_store_t *st);
/* Sessions held under a label (tests, logs). */
size_t scache_store_count_dest(const scache_store_t *st, const char *dest);
size_t scache_store_count_endpoint(const scache_store_t *st,
    const char *endpoint);
const scache_stats_t *scache_store_stats(const scache_store_t *st);
/* Clears the counters (max_sessions restarts at the current count). */
void scache_store_stats_reset(scache_store_t *st);

#endif
