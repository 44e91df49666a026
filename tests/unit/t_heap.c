/* Unit tests for libutil/heap: ordering, index tracking, removal and
 * re-keying from arbitrary positions. */
#include <atf-c.h>
#include <stdint.h>
#include <stdlib.h>
#include "heap.h"

struct item {
	long key;
	size_t idx;
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

static void set_idx(void *e, size_t i)
{
	((struct item *)e)->idx = i;
}

/* Deterministic pseudo-random numbers so failures can be replayed. */
static uint32_t rng_state = 12345;
static uint32_t rng(void)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return rng_state >> 8;
}

/* Every element sits where its index says and no child is less than its
 * parent. */
static void check_heap(heap_t *h)
{
	for (size_t i = 0; i < heap_size(h); i++) {
		struct item *e = heap_at(h, i);
		ATF_REQUIRE_EQ(e->idx, i);
		if (i > 0)
			ATF_REQUIRE(cmp_item(heap_at(h, (i - 1) / 2), e) <= 0);
	}
}

ATF_TC_WITHOUT_HEAD(empty);
ATF_TC_BODY(empty, tc)
{
	heap_t *h = heap_new(cmp_item, set_idx);
	ATF_CHECK_EQ(heap_size(h), 0);
	ATF_CHECK(heap_peek(h) == NULL);
	ATF_CHECK(heap_pop(h) == NULL);
	ATF_CHECK(heap_remove(h, 0) == NULL);
	ATF_CHECK(heap_remove(h, HEAP_NONE) == NULL);
	heap_update(h, 3);	/* out of range: harmless */
	ATF_CHECK(heap_at(h, 0) == NULL);
	heap_free(h);
	heap_free(NULL);
}

ATF_TC_WITHOUT_HEAD(sorted_order);
ATF_TC_BODY(sorted_order, tc)
{
	enum { N = 2000 };
	struct item *it = calloc(N, sizeof(*it));
	heap_t *h = heap_new(cmp_item, set_idx);

	for (int i = 0; i < N; i++) {
		it[i].key = (long)(rng() % 500);	/* many duplicates */
		heap_push(h, &it[i]);
	}
	check_heap(h);
	ATF_CHECK_EQ(heap_size(h), N);
	long prev = -1;
	for (int i = 0; i < N; i++) {
		struct item *e = heap_pop(h);
		ATF_REQUIRE(e != NULL);
		ATF_CHECK(e->key >= prev);
		ATF_CHECK_EQ(e->idx, HEAP_NONE);	/* told it left */
		prev = e->key;
	}
	ATF_CHECK(heap_pop(h) == NULL);
	heap_free(h);
	free(it);
}

ATF_TC_WITHOUT_HEAD(remove_by_index);
ATF_TC_BODY(remove_by_index, tc)
{
	enum { N = 1000 };
	struct item *it = calloc(N, sizeof(*it));
	heap_t *h = heap_new(cmp_item, set_idx);

	for (int i = 0; i < N; i++) {
		it[i].key = (long)(rng() % 10000);
		heap_push(h, &it[i]);
	}
	/* Remove every third element through its tracked index. */
	for (int i = 0; i < N; i += 3) {
		ATF_REQUIRE(heap_remove(h, it[i].idx) == &it[i]);
		ATF_CHECK_EQ(it[i].idx, HEAP_NONE);
		/* A second removal through the stale index does nothing. */
		ATF_CHECK(heap_remove(h, it[i].idx) == NULL);
	}
	check_heap(h);
	ATF_CHECK_EQ(heap_size(h), N - (N + 2) / 3);
	long prev = -1;
	size_t n = 0;
	struct item *e;
	while ((e = heap_pop(h)) != NULL) {
		ATF_CHECK(e->key >= prev);
		ATF_CHECK((e - it) % 3 != 0);	/* removed ones never come back */
		prev = e->key;
		n++;
	}
	ATF_CHECK_EQ(n, N - (N + 2) / 3);
	heap_free(h);
	free(it);
}

ATF_TC_WITHOUT_HEAD(rekey);
ATF_TC_BODY(rekey, tc)
{
	enum { N = 500 };
	struct item *it = calloc(N, sizeof(*it));
	heap_t *h = heap_new(cmp_item, set_idx);

	for (int i = 0; i < N; i++) {
		it[i].key = i * 10;
		heap_push(h, &it[i]);
	}
	/* Move the least to the back and a deep element to the front. */
	it[0].key = 100000;
	heap_update(h, it[0].idx);
	it[N - 1].key = -5;
	heap_update(h, it[N - 1].idx);
	check_heap(h);
	ATF_CHECK(heap_peek(h) == &it[N - 1]);
	/* Random re-keys keep the invariant. */
	for (int r = 0; r < 2000; r++) {
		struct item *e = &it[rng() % N];
		e->key = (long)(rng() % 100000) - 50000;
		heap_update(h, e->idx);
	}
	check_heap(h);
	long prev = -100000;
	struct item *last = NULL;
	size_t n = 0;
	while ((last = heap_pop(h)) != NULL) {
		ATF_CHECK(last->key >= prev);
		prev = last->key;
		n++;
	}
	ATF_CHECK_EQ(n, N);
	heap_free(h);
	free(it);
}

ATF_TC_WITHOUT_HEAD(no_index_callback);
ATF_TC_BODY(no_index_callback, tc)
{
	struct item a = { 3, 0 }, b = { 1, 0 }, c = { 2, 0 };
	heap_t *h = heap_new(cmp_item, NULL);
	heap_push(h, &a);
	heap_push(h, &b);
	heap_push(h, &c);
	ATF_CHECK(heap_pop(h) == &b);
	ATF_CHECK(heap_pop(h) == &c);
	ATF_CHECK(heap_pop(h) == &a);
	heap_free(h);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, empty);
	ATF_TP_ADD_TC(tp, sorted_order);
	ATF_TP_ADD_TC(tp, remove_by_index);
	ATF_TP_ADD_TC(tp, rekey);
	ATF_TP_ADD_TC(tp, no_index_callback);
	return atf_no_error();
}
