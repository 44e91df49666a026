/* Binary min-heap of pointers with position tracking; see heap.h. */
#include "heap.h"
#include "mem.h"

struct heap {
	void **v;
	size_t len;
	size_t cap;
	heap_cmp_fn cmp;
	heap_index_fn set_index;
};

heap_t *heap_new(heap_cmp_fn cmp, heap_index_fn set_index)
{
	heap_t *h = xcalloc(1, sizeof(*h));

	h->cmp = cmp;
	h->set_index = set_index;
	return h;
}

void heap_free(heap_t *h)
{
	if (h == NULL)
		return;
	free(h->v);
	free(h);
}

size_t heap_size(const heap_t *h)
{
	return h->len;
}

static inline void place(heap_t *h, size_t i, void *e)
{
	h->v[i] = e;
	if (h->set_index)
		h->set_index(e, i);
}

/* Moves the element at i towards the root while it is less than its
 * parent; returns its final position. */
static size_t sift_up(heap_t *h, size_t i)
{
	void *e = h->v[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (h->cmp(e, h->v[parent]) >= 0)
			break;
		place(h, i, h->v[parent]);
		i = parent;
	}
	place(h, i, e);
	return i;
}

static void sift_down(heap_t *h, size_t i)
{
	void *e = h->v[i];

	for (;;) {
		size_t child = 2 * i + 1;
		if (child >= h->len)
			break;
		if (child + 1 < h->len && h->cmp(h->v[child + 1], h->v[child]) < 0)
			child++;
		if (h->cmp(h->v[child], e) >= 0)
			break;
		place(h, i, h->v[child]);
		i = child;
	}
	place(h, i, e);
}

void heap_push(heap_t *h, void *elem)
{
	if (h->len == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 16;
		h->v = xreallocarray(h->v, h->cap, sizeof(*h->v));
	}
	h->v[h->len++] = elem;
	sift_up(h, h->len - 1);
}

void *heap_peek(const heap_t *h)
{
	return h->len ? h->v[0] : NULL;
}

void *heap_at(const heap_t *h, size_t index)
{
	return index < h->len ? h->v[index] : NULL;
}

void *heap_remove(heap_t *h, size_t index)
{
	void *e;

	if (index >= h->len)
		return NULL;
	e = h->v[index];
	h->len--;
	if (index < h->len) {
		/* Fill the hole with the last element; it may belong above or
		 * below the hole, so try both directions. */
		h->v[index] = h->v[h->len];
		if (sift_up(h, index) == index)
			sift_down(h, index);
	}
	if (h->set_index)
		h->set_index(e, HEAP_NONE);
	return e;
}

void *heap_pop(heap_t *h)
{
	return heap_remove(h, 0);
}

void heap_update(heap_t *h, size_t index)
{
	if (index >= h->len)
		return;
	if (sift_up(h, index) == index)
		sift_down(h, index);
}
