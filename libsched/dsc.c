/* Destination status cache (see dsc.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "dsc.h"
#include "htable.h"
#include "list.h"
#include "mem.h"

typedef struct dsc_node {
	dsc_entry_t e;			/* first: the public view */
	char *key;			/* the hash key, owned */
	list_node_t lru;		/* on dsc->lru, most recent first */
} dsc_node_t;

struct dsc {
	htable_t *tab;			/* key -> dsc_node_t */
	list_t lru;
	size_t limit;
	backoff_params_t bp;
};

/* Length-prefixed parts make the key unambiguous whatever characters the
 * names contain ("a:b" + "c" never collides with "a" + "b:c"):
 * doc/scheduling-rules.md §6.1. */
static char *make_key(const char *transport, const char *nexthop,
    const char *extra)
{
	str_t k = STR_INIT;
	transport = transport ? transport : "";
	nexthop = nexthop ? nexthop : "";
	extra = extra ? extra : "";
	str_catf(&k, "%zu:%s%zu:%s%zu:%s", strlen(transport), transport,
	    strlen(nexthop), nexthop, strlen(extra), extra);
	return str_steal(&k);
}

static dsc_node_t *find(const dsc_t *dsc, const char *transport,
    const char *nexthop, const char *extra)
{
	char *key = make_key(transport, nexthop, extra);
	dsc_node_t *n = htable_get(dsc->tab, key);
	free(key);
	return n;
}

static void node_free(dsc_node_t *n)
{
	free((char *)n->e.transport);
	free((char *)n->e.nexthop);
	free((char *)n->e.extra);
	free(n->e.reason);
	free(n->key);
	free(n);
}

static void node_remove(dsc_t *dsc, dsc_node_t *n)
{
	htable_delete(dsc->tab, n->key);
	list_remove(&n->lru);
	node_free(n);
}

static void touch(dsc_t *dsc, dsc_node_t *n)
{
	list_remove(&n->lru);
	list_prepend(&dsc->lru, &n->lru);
}

dsc_t *dsc_new(size_t limit, const backoff_params_t *bp)
{
	dsc_t *dsc = xcalloc(1, sizeof(*dsc));
	dsc->tab = htable_new(limit < 1024 ? limit + 1 : 1024, HTABLE_FLAG_NOCASE);
	list_init(&dsc->lru);
	dsc->limit = limit;
	if (bp)
		dsc->bp = *bp;
	else
		backoff_params_init(&dsc->bp);
	return dsc;
}

void dsc_free(dsc_t *dsc)
{
	if (dsc == NULL)
		return;
	dsc_clear_all(dsc);
	htable_free(dsc->tab, NULL);
	free(dsc);
}

size_t dsc_count(const dsc_t *dsc)
{
	return htable_size(dsc->tab);
}

size_t dsc_limit(const dsc_t *dsc)
{
	return dsc->limit;
}

static void set_retry(dsc_t *dsc, dsc_node_t *n, double now)
{
	n->e.retry_at = now + backoff_delay(&dsc->bp, n->e.failures,
	    now - n->e.died_at);
}

/* doc/scheduling-rules.md §6.3 (eviction when full: §6.2). */
const dsc_entry_t *dsc_mark_dead(dsc_t *dsc, const char *transport,
    const char *nexthop, const char *extra, const char *reason, double now)
{
	dsc_node_t *n;

	if (dsc->limit == 0)
		return NULL;
	n = find(dsc, transport, nexthop, extra);
	if (n == NULL) {
		if (htable_size(dsc->tab) >= dsc->limit) {
			list_node_t *old = list_last(&dsc->lru);
			node_remove(dsc, list_entry(old, dsc_node_t, lru));
		}
		n = xcalloc(1, sizeof(*n));
		n->e.transport = xstrdup(transport ? transport : "");
		n->e.nexthop = xstrdup(nexthop ? nexthop : "");
		n->e.extra = xstrdup(extra ? extra : "");
		n->key = make_key(transport, nexthop, extra);
		htable_add(dsc->tab, n->key, n);
		list_prepend(&dsc->lru, &n->lru);
		n->e.died_at = now;
		n->e.failures = 1;
		set_retry(dsc, n, now);
	} else {
		touch(dsc, n);
		/* Only a failure after the suspension ended (the probe, or a
		 * late attempt past retry_at) lengthens it; more reports of
		 * the same outage (deliveries that were in flight when the
		 * site died) just refresh the reason. */
		if (n->e.state == DSC_STATE_PROBING || now >= n->e.retry_at) {
			n->e.failures += 1;
			set_retry(dsc, n, now);
		}
	}
	free(n->e.reason);
	n->e.reason = xstrdup(reason && *reason ? reason : "unknown reason");
	n->e.last_fail = now;
	n->e.state = DSC_STATE_SUSPENDED;
	return &n->e;
}

/* doc/scheduling-rules.md §6.4. */
dsc_verdict_t dsc_check(dsc_t *dsc, const char *transport,
    const char *nexthop, const char *extra, double now,
    const dsc_entry_t **entry)
{
	dsc_node_t *n = find(dsc, transport, nexthop, extra);

	if (entry)
		*entry = n ? &n->e : NULL;
	if (n == NULL)
		return DSC_DELIVER;
	touch(dsc, n);
	if (n->e.state == DSC_STATE_PROBING) {
		/* A probe that never reported back (lost by a caller) must not
		 * suspend the site for ever: after maximal_backoff_time it is
		 * presumed lost and a new one goes out. */
		if (now < n->e.probe_started + dsc->bp.max_time)
			return DSC_SUSPENDED;
	} else if (now < n->e.retry_at) {
		return DSC_SUSPENDED;
	}
	n->e.state = DSC_STATE_PROBING;
	n->e.probe_started = now;
	n->e.probes += 1;
	return DSC_PROBE;
}

const dsc_entry_t *dsc_peek(const dsc_t *dsc, const char *transport,
    const char *nexthop, const char *extra)
{
	dsc_node_t *n = find(dsc, transport, nexthop, extra);
	return n ? &n->e : NULL;
}

bool dsc_probe_ok(dsc_t *dsc, const char *transport, const char *nexthop,
    const char *extra)
{
	return dsc_clear(dsc, transport, nexthop, extra);
}

bool dsc_probe_abort(dsc_t *dsc, const char *transport, const char *nexthop,
    const char *extra)
{
	dsc_node_t *n = find(dsc, transport, nexthop, extra);

	if (n == NULL || n->e.state != DSC_STATE_PROBING)
		return false;
	n->e.state = DSC_STATE_SUSPENDED;
	return true;
}

const char *dsc_suspend_text(const dsc_entry_t *e, str_t *out)
{
	str_setf(out, "delivery temporarily suspended: %s", e->reason);
	return str_cstr(out);
}

const char *dsc_format_entry(const dsc_entry_t *e, double now, str_t *out)
{
	double retry_in = e->retry_at - now;

	if (retry_in < 0 || e->state == DSC_STATE_PROBING)
		retry_in = 0;
	str_reset(out);
	str_quote_printable(out, e->transport, strlen(e->transport));
	str_putc(out, ' ');
	str_quote_printable(out, e->nexthop, strlen(e->nexthop));
	if (*e->extra) {
		str_putc(out, ' ');
		str_quote_printable(out, e->extra, strlen(e->extra));
	}
	str_catf(out, " state=%s failures=%d probes=%lu age=%.0f retry_in=%.0f reason=",
	    e->state == DSC_STATE_PROBING ? "probing" : "suspended",
	    e->failures, e->probes, floor(now - e->died_at), ceil(retry_in));
	str_quote_printable(out, e->reason, strlen(e->reason));
	return str_cstr(out);
}

void dsc_walk(const dsc_t *dsc, void (*fn)(const dsc_entry_t *, void *),
    void *ctx)
{
	const list_node_t *ln;

	list_foreach(ln, &dsc->lru)
		fn(&list_entry(ln, dsc_node_t, lru)->e, ctx);
}

bool dsc_clear(dsc_t *dsc, const char *transport, const char *nexthop,
    const char *extra)
{
	dsc_node_t *n = find(dsc, transport, nexthop, extra);

	if (n == NULL)
		return false;
	node_remove(dsc, n);
	return true;
}

size_t dsc_clear_nexthop(dsc_t *dsc, const char *nexthop)
{
	list_node_t *ln, *tmp;
	size_t count = 0;

	if (nexthop == NULL)
		return 0;
	list_foreach_safe(ln, tmp, &dsc->lru) {
		dsc_node_t *n = list_entry(ln, dsc_node_t, lru);
		if (strcasecmp(n->e.nexthop, nexthop) == 0) {
			node_remove(dsc, n);
			count++;
		}
	}
	return count;
}

size_t dsc_clear_all(dsc_t *dsc)
{
	list_node_t *ln, *tmp;
	size_t count = 0;

	list_foreach_safe(ln, tmp, &dsc->lru) {
		node_remove(dsc, list_entry(ln, dsc_node_t, lru));
		count++;
	}
	return count;
}

/* doc/scheduling-rules.md §6.5. */
size_t dsc_expire(dsc_t *dsc, double now)
{
	list_node_t *ln, *tmp;
	size_t count = 0;

	list_foreach_safe(ln, tmp, &dsc->lru) {
		dsc_node_t *n = list_entry(ln, dsc_node_t, lru);
		if (n->e.state == DSC_STATE_SUSPENDED
		    && now > n->e.retry_at + dsc->bp.max_time) {
			node_remove(dsc, n);
			count++;
		}
	}
	return count;
}
