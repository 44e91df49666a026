/* Binary min-heap of pointers.
 *
 * The caller supplies the ordering (cmp < 0 means a comes first) and,
 * optionally, a callback that is told every time an element moves, with
 * its new position, or HEAP_NONE when it leaves the heap.  Keeping that
 * index in the element lets it be removed or re-keyed in O(log n) without
 * a search, which is what timer cancellation needs.
 *
 * The heap never calls cmp or the index callback with NULL elements, and
 * the functions taking an index return NULL / do nothing for an index that
 * is out of range, so a stale index is a no-op rather than a crash. */
#ifndef PETREL_HEAP_H
#define PETREL_HEAP_H
#include <stddef.h>
#include <stdint.h>

#define HEAP_NONE SIZE_MAX

typedef int (*heap_cmp_fn)(const void *a, const void *b);
typedef void (*heap_index_fn)(void *elem, size_t index);

typedef struct heap heap_t;

/* set_index may be NULL (then only heap_pop/heap_peek make sense). */
heap_t *heap_new(heap_cmp_fn cmp, heap_index_fn set_index);
/* Frees the heap, not the elements (their index is not updated). */
void heap_free(heap_t *h);
size_t heap_size(const heap_t *h);
void heap_push(heap_t *h, void *elem);
/* The least element, or NULL when empty. */
void *heap_peek(const heap_t *h);
void *heap_pop(heap_t *h);
/* Removes and returns the element at index (as last reported through
 * set_index); NULL if index is out of range. */
void *heap_remove(heap_t *h, size_t index);
/* Restores the order after the key of the element at index changed, in
 * either direction. */
void heap_update(heap_t *h, size_t index);
/* Element at index (0 is the least), NULL if out of range; for walking
 * the heap in no particular order. */
void *heap_at(const heap_t *h, size_t index);

#endif
