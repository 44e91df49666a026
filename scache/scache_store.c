/* The connection cache's store; see scache_store.h. */
#include <stdlib.h>
#include <string.h>
#include "heap.h"
#include "htable.h"
#include "mem.h"
#include "scache_store.h"

/* The sessions under one label, oldest first. */
typedef struct scache_bucket {
	list_t list;
	size_t n;
	char *key;		/* the table's copy */
} scache_bucket_t;

struct scache_store {
	htable_t *by_dest;
	htable_t *by_endp;
	htable_t *by_ident;
	list_t all;		/* every session, oldest first */
	size_t n;
	heap_t *expiry;
	size_t per_dest, total;
	int64_t ttl_limit_ms;
	scache_hooks_t hooks;
	scache_stats_t stats;
	uint64_t seq;
};

static int expiry_cmp(const void *a, const void *b)
{
	const scache_sess_t *x = a, *y = b;

	if (x->expires_ms != y->expires_ms)
		return x->expires_ms < y->expires_ms ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void expiry_index(void *elem, size_t index)
{
	((scache_sess_t *)elem)->heap_index = index;
}

scache_store_t *scache_store_new(size_t per_dest, size_t total,
    int64_t ttl_limit_ms, const scache_hooks_t *hooks)
{
	scache_store_t *st = xcalloc(1, sizeof(*st));

	st->by_dest = htable_new(64, 0);
	st->by_endp = htable_new(64, 0);
	st->by_ident = htable_new(64, 0);
	list_init(&st->all);
	st->expiry = heap_new(expiry_cmp, expiry_index);
	st->per_dest = per_dest > 0 ? per_dest : 1;
	st->total = total > 0 ? total : 1;
	st->ttl_limit_ms = ttl_limit_ms > 0 ? ttl_limit_ms : 1;
	if (hooks != NULL)
		st->hooks = *hooks;
	return st;
}

static scache_bucket_t *bucket_get(htable_t *t, const char *key)
{
	scache_bucket_t *b = htable_get(t, key);

	if (b == NULL) {
		htable_entry_t *e;
		b = xcalloc(1, sizeof(*b));
		list_init(&b->list);
		e = htable_add(t, key, b);
		b->key = e->key;
	}
	return b;
}

static void bucket_unlink(htable_t *t, scache_bucket_t *b, list_node_t *node)
{
	list_remove(node);
	if (--b->n == 0) {
		htable_delete(t, b->key);
		free(b);
	}
}

/* Out of every index; the session is then nobody's but the caller's. */
static void unlink_sess(scache_store_t *st, scache_sess_t *ss)
{
	list_remove(&ss->all_node);
	bucket_unlink(st->by_dest, ss->db, &ss->dest_node);
	bucket_unlink(st->by_endp, ss->eb, &ss->endp_node);
	ss->db = ss->eb = NULL;
	heap_remove(st->expiry, ss->heap_index);
	if (ss->ident != NULL)
		htable_delete(st->by_ident, ss->ident);
	st->n--;
}

void scache_sess_free(scache_sess_t *ss)
{
	if (ss == NULL)
		return;
	free(ss->dest);
	free(ss->endpoint);
	free(ss->props);
	free(ss->ident);
	free(ss);
}

void scache_store_drop(scache_store_t *st, scache_sess_t *ss,
    enum scache_drop why)
{
	unlink_sess(st, ss);
	switch (why) {
	case SCACHE_DROP_EXPIRED: st->stats.expired++; break;
	case SCACHE_DROP_EVICTED: st->stats.evicted++; break;
	case SCACHE_DROP_SERVER: st->stats.server_closed++; break;
	default: break;
	}
	if (st->hooks.dropped != NULL)
		st->hooks.dropped(st->hooks.ctx, ss, why);
	scache_sess_free(ss);
}

void scache_store_free(scache_store_t *st)
{
	list_node_t *n;

	if (st == NULL)
		return;
	while ((n = list_first(&st->all)) != NULL)
		scache_store_drop(st, list_entry(n, scache_sess_t, all_node),
		    SCACHE_DROP_EXIT);
	htable_free(st->by_dest, NULL);
	htable_free(st->by_endp, NULL);
	htable_free(st->by_ident, NULL);
	heap_free(st->expiry);
	free(st);
}

scache_sess_t *scache_store_save(scache_store_t *st, int64_t now_ms,
    const char *dest, const char *endpoint, int64_t ttl_ms,
    const char *props, int fd, const char *ident)
{
	scache_sess_t *ss;
	scache_bucket_t *b;

	if (ident != NULL && htable_get(st->by_ident, ident) != NULL)
		return NULL;
	/* Room first: the oldest of this destination, then of all. */
	b = htable_get(st->by_dest, dest);
	if (b != NULL && b->n >= st->per_dest)
		scache_store_drop(st, list_entry(list_first(&b->list),
		    scache_sess_t, dest_node), SCACHE_DROP_EVICTED);
	if (st->n >= st->total)
		scache_store_drop(st, list_entry(list_first(&st->all),
		    scache_sess_t, all_node), SCACHE_DROP_EVICTED);

	ss = xcalloc(1, sizeof(*ss));
	ss->fd = fd;
	ss->dest = xstrdup(dest);
	ss->endpoint = xstrdup(endpoint);
	ss->props = xstrdup(props != NULL ? props : "");
	ss->ident = ident != NULL ? xstrdup(ident) : NULL;
	ss->saved_ms = now_ms;
	if (ttl_ms > st->ttl_limit_ms)
		ttl_ms = st->ttl_limit_ms;
	if (ttl_ms < 0)
		ttl_ms = 0;
	ss->expires_ms = now_ms + ttl_ms;
	ss->seq = ++st->seq;
	list_append(&st->all, &ss->all_node);
	ss->db = bucket_get(st->by_dest, dest);
	list_append(&ss->db->list, &ss->dest_node);
	ss->db->n++;
	ss->eb = bucket_get(st->by_endp, endpoint);
	list_append(&ss->eb->list, &ss->endp_node);
	ss->eb->n++;
	heap_push(st->expiry, ss);
	if (ss->ident != NULL)
		htable_add(st->by_ident, ss->ident, ss);
	st->n++;
	st->stats.saved++;
	if (st->n > st->stats.max_sessions)
		st->stats.max_sessions = st->n;
	if (st->hooks.added != NULL)
		st->hooks.added(st->hooks.ctx, ss);
	return ss;
}

scache_sess_t *scache_store_take(scache_store_t *st, bool by_endpoint,
    const char *label)
{
	scache_bucket_t *b = htable_get(by_endpoint ? st->by_endp : st->by_dest,
	    label);
	scache_sess_t *ss;

	if (b == NULL) {
		if (by_endpoint)
			st->stats.endp_misses++;
		else
			st->stats.dest_misses++;
		return NULL;
	}
	/* The one idle longest: every session of a destination stays in
	 * rotation while its mail flows, so none idles out only to be
	 * replaced by a new connection when the load rises again. */
	ss = by_endpoint ? list_entry(list_first(&b->list), scache_sess_t,
	    endp_node) : list_entry(list_first(&b->list), scache_sess_t,
	    dest_node);
	unlink_sess(st, ss);
	if (by_endpoint)
		st->stats.endp_hits++;
	else
		st->stats.dest_hits++;
	return ss;
}

size_t scache_store_expire(scache_store_t *st, int64_t now_ms)
{
	scache_sess_t *ss;
	size_t k = 0;

	while ((ss = heap_peek(st->expiry)) != NULL && ss->expires_ms <= now_ms) {
		scache_store_drop(st, ss, SCACHE_DROP_EXPIRED);
		k++;
	}
	return k;
}

int64_t scache_store_next_expiry(const scache_store_t *st)
{
	const scache_sess_t *ss = heap_peek(st->expiry);

	return ss != NULL ? ss->expires_ms : -1;
}

size_t scache_store_count(const scache_store_t *st)
{
	return st->n;
}

size_t scache_store_count_dest(const scache_store_t *st, const char *dest)
{
	const scache_bucket_t *b = htable_get(st->by_dest, dest);

	return b != NULL ? b->n : 0;
}

size_t scache_store_count_endpoint(const scache_store_t *st,
    const char *endpoint)
{
	const scache_bucket_t *b = htable_get(st->by_endp, endpoint);

	return b != NULL ? b->n : 0;
}

const scache_stats_t *scache_store_stats(const scache_store_t *st)
{
	return &st->stats;
}

void scache_store_stats_reset(scache_store_t *st)
{
	memset(&st->stats, 0, sizeof(st->stats));
	st->stats.max_sessions = st->n;
}
