/* Small indexed binary min-heaps for the scheduler core: the runnable
 * jobs of a transport and the blocked peers of a queue, both keyed by job
 * list position (sched_job_t.label).  Every element knows its index, so
 * removal and re-keying are O(log n). */
#include <stdint.h>
#include "sched_int.h"
#include "mem.h"

static void place(sched_heap_t *h, size_t i, void *x)
{
	h->v[i] = x;
	h->setidx(x, i);
}

static void up(sched_heap_t *h, size_t i)
{
	void *x = h->v[i];
	uint64_t k = h->key(x);
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (h->key(h->v[p]) <= k)
			break;
		place(h, i, h->v[p]);
		i = p;
	}
	place(h, i, x);
}

static void down(sched_heap_t *h, size_t i)
{
	void *x = h->v[i];
	uint64_t k = h->key(x);
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		uint64_t mk = k;
		if (l < h->n && h->key(h->v[l]) < mk) {
			m = l;
			mk = h->key(h->v[l]);
		}
		if (r < h->n && h->key(h->v[r]) < mk)
			m = r;
		if (m == i)
			break;
		place(h, i, h->v[m]);
		i = m;
	}
	place(h, i, x);
}

void sched_heap_init(sched_heap_t *h, uint64_t (*key)(const void *),
    void (*setidx)(void *, size_t))
{
	h->v = NULL;
	h->n = h->cap = 0;
	h->key = key;
	h->setidx = setidx;
}

void sched_heap_push(sched_heap_t *h, void *x)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 8;
		h->v = xreallocarray(h->v, h->cap, sizeof(*h->v));
	}
	place(h, h->n++, x);
	up(h, h->n - 1);
}

void sched_heap_remove(sched_heap_t *h, size_t i)
{
	void *x = h->v[i];
	h->setidx(x, SIZE_MAX);
	if (i != --h->n) {
		place(h, i, h->v[h->n]);
		sched_heap_update(h, i);
	}
}

void sched_heap_update(sched_heap_t *h, size_t i)
{
	void *x = h->v[i];
	up(h, i);
	if (h->v[i] == x)
		down(h, i);
}

void sched_heap_free(sched_heap_t *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
