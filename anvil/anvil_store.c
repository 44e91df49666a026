/* anvil's counters; see anvil_store.h. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "anvil_store.h"
#include "htable.h"
#include "mem.h"

struct anvil_store {
	htable_t *map;		/* ident -> anvil_entry_t */
	list_t idle;		/* entries without connections, by last_ms */
	int64_t unit_ms;
	size_t limit;
	anvil_stats_t stats;
};

anvil_store_t *anvil_store_new(int64_t unit_ms, size_t limit)
{
	anvil_store_t *st = xcalloc(1, sizeof(*st));

	st->map = htable_new(64, 0);
	list_init(&st->idle);
	st->unit_ms = unit_ms > 0 ? unit_ms : 1;
	st->limit = limit > 0 ? limit : 1;
	return st;
}

static void entry_free(void *p)
{
	anvil_entry_t *e = p;

	free(e->ident);
	free(e);
}

void anvil_store_free(anvil_store_t *st)
{
	if (st == NULL)
		return;
	htable_free(st->map, entry_free);
	for (int i = 0; i < ANVIL_PEAK_COUNT; i++)
		free(st->stats.peak[i].ident);
	free(st);
}

static void entry_delete(anvil_store_t *st, anvil_entry_t *e)
{
	if (list_linked(&e->idle))
		list_remove(&e->idle);
	htable_delete(st->map, e->ident);
	entry_free(e);
}

/* The rate window: a new one begins at the first event a unit or more
 * after the start of the last. */
static void window(anvil_store_t *st, anvil_entry_t *e, int64_t now)
{
	if (now - e->start_ms >= st->unit_ms) {
		e->c.rate = e->c.message = e->c.recipient = 0;
		e->c.newtls = e->c.auth = 0;
		e->start_ms = now;
	}
}

/* Activity: an idle entry moves to the end of the idle list. */
static void touch(anvil_store_t *st, anvil_entry_t *e, int64_t now)
{
	e->last_ms = now;
	if (e->c.count == 0) {
		if (list_linked(&e->idle))
			list_remove(&e->idle);
		list_append(&st->idle, &e->idle);
	}
}

static void peak(anvil_store_t *st, enum anvil_peak_kind k, int32_t v,
    const anvil_entry_t *e, int64_t now)
{
	anvil_peak_t *p = &st->stats.peak[k];

	if (v <= p->value)
		return;
	p->value = v;
	if (p->ident == NULL || strcmp(p->ident, e->ident) != 0) {
		free(p->ident);
		p->ident = xstrdup(e->ident);
	}
	p->when_ms = now;
}

static void incr(int32_t *v)
{
	if (*v < INT32_MAX)
		(*v)++;
}

static anvil_entry_t *entry_new(anvil_store_t *st, int64_t now,
    const char *ident)
{
	anvil_entry_t *e;
	size_t n;

	/* Room first: the idle entry unused longest goes. */
	while (htable_size(st->map) >= st->limit && !list_empty(&st->idle)) {
		entry_delete(st, list_entry(list_first(&st->idle),
		    anvil_entry_t, idle));
		st->stats.dropped++;
	}
	e = xcalloc(1, sizeof(*e));
	e->ident = xstrdup(ident);
	e->start_ms = now;
	e->last_ms = now;
	htable_add(st->map, ident, e);
	n = htable_size(st->map);
	if (n > st->stats.max_size) {
		st->stats.max_size = n;
		st->stats.max_size_ms = now;
	}
	return e;
}

anvil_entry_t *anvil_store_connect(anvil_store_t *st, int64_t now,
    const char *ident)
{
	anvil_entry_t *e = htable_get(st->map, ident);

	if (!anvil_ident_ok(ident))
		return NULL;
	if (e == NULL)
		e = entry_new(st, now, ident);
	window(st, e, now);
	if (list_linked(&e->idle))
		list_remove(&e->idle);
	incr(&e->c.count);
	incr(&e->c.rate);
	e->last_ms = now;
	peak(st, ANVIL_PEAK_CONN_RATE, e->c.rate, e, now);
	peak(st, ANVIL_PEAK_CONN_COUNT, e->c.count, e, now);
	return e;
}

void anvil_store_disconnect(anvil_store_t *st, int64_t now, anvil_entry_t *e)
{
	if (e->c.count > 0)
		e->c.count--;
	touch(st, e, now);
}

anvil_entry_t *anvil_store_event(anvil_store_t *st, int64_t now,
    anvil_op_t op, const char *ident, bool *connected)
{
	anvil_entry_t *e = htable_get(st->map, ident);
	int32_t *v;
	enum anvil_peak_kind k;

	*connected = false;
	if (!anvil_ident_ok(ident))
		return NULL;
	switch (op) {
	case ANVIL_OP_MESSAGE:
		k = ANVIL_PEAK_MESSAGE;
		break;
	case ANVIL_OP_RECIPIENT:
		k = ANVIL_PEAK_RECIPIENT;
		break;
	case ANVIL_OP_NEWTLS:
		k = ANVIL_PEAK_NEWTLS;
		break;
	case ANVIL_OP_AUTH:
		k = ANVIL_PEAK_AUTH;
		break;
	default:
		return NULL;
	}
	if (e == NULL) {
		e = anvil_store_connect(st, now, ident);
		*connected = true;
	}
	window(st, e, now);
	v = k == ANVIL_PEAK_MESSAGE ? &e->c.message :
	    k == ANVIL_PEAK_RECIPIENT ? &e->c.recipient :
	    k == ANVIL_PEAK_NEWTLS ? &e->c.newtls : &e->c.auth;
	incr(v);
	touch(st, e, now);
	peak(st, k, *v, e, now);
	return e;
}

anvil_entry_t *anvil_store_find(anvil_store_t *st, const char *ident)
{
	return htable_get(st->map, ident);
}

void anvil_store_lookup(anvil_store_t *st, int64_t now, const char *ident,
    anvil_counts_t *c)
{
	anvil_entry_t *e = htable_get(st->map, ident);

	memset(c, 0, sizeof(*c));
	if (e == NULL)
		return;
	*c = e->c;
	/* Stale rates are not reported (nor reset: a lookup is no event). */
	if (now - e->start_ms >= st->unit_ms)
		c->rate = c->message = c->recipient = c->newtls = c->auth = 0;
}

void anvil_store_expire(anvil_store_t *st, int64_t now)
{
	list_node_t *n;

	while ((n = list_first(&st->idle)) != NULL) {
		anvil_entry_t *e = list_entry(n, anvil_entry_t, idle);
		if (now - e->last_ms < st->unit_ms)
			break;
		entry_delete(st, e);
	}
}

int64_t anvil_store_next_expiry(const anvil_store_t *st)
{
	list_node_t *n = list_first(&st->idle);

	if (n == NULL)
		return -1;
	return list_entry(n, anvil_entry_t, idle)->last_ms + st->unit_ms;
}

size_t anvil_store_size(const anvil_store_t *st)
{
	return htable_size(st->map);
}

const anvil_stats_t *anvil_store_stats(const anvil_store_t *st)
{
	return &st->stats;
}

void anvil_store_stats_reset(anvil_store_t *st)
{
	for (int i = 0; i < ANVIL_PEAK_COUNT; i++)
		st->stats.peak[i].value = 0;
	st->stats.max_size = 0;
	st->stats.dropped = 0;
}
