/* Hash table with string keys (chained, grows by doubling).
 *
 * Keys are copied; values are opaque pointers owned by the caller.
 * Case-insensitive tables fold ASCII case for hashing and comparison,
 * as lookup tables and domain names need. */
#ifndef PETREL_HTABLE_H
#define PETREL_HTABLE_H
#include <stdbool.h>
#include <stddef.h>

typedef struct htable htable_t;

typedef struct htable_entry {
	char *key;
	void *value;
	struct htable_entry *next;
	unsigned hash;
} htable_entry_t;

enum { HTABLE_FLAG_NOCASE = 1 };

htable_t *htable_new(size_t size_hint, int flags);
/* Frees the table; free_value (may be NULL) is called on each value. */
void htable_free(htable_t *t, void (*free_value)(void *));
/* Adds key; returns the new entry, or NULL if the key exists already. */
htable_entry_t *htable_add(htable_t *t, const char *key, void *value);
/* Adds or replaces; returns the previous value (or NULL). */
void *htable_put(htable_t *t, const char *key, void *value);
void *htable_get(const htable_t *t, const char *key);
htable_entry_t *htable_find(const htable_t *t, const char *key);
/* Removes key; returns its value (NULL if absent). */
void *htable_delete(htable_t *t, const char *key);
size_t htable_size(const htable_t *t);
/* Calls fn for every entry, in no particular order.  fn must not add or
 * delete entries. */
void htable_walk(const htable_t *t, void (*fn)(htable_entry_t *, void *), void *ctx);
/* A snapshot array of the entries (malloc'ed; n set); the caller frees it. */
htable_entry_t **htable_list(const htable_t *t, size_t *n);

#endif
