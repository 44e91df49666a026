#include <string.h>
#include <strings.h>
#include "htable.h"
#include "mem.h"

struct htable {
	htable_entry_t **slots;
	size_t nslots;		/* power of two */
	size_t count;
	int flags;
};

/* FNV-1a: short keys (domains, parameter names) hash well and fast. */
static unsigned hash_key(const char *key, int nocase)
{
	unsigned h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		unsigned c = *p;
		if (nocase && c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		h ^= c;
		h *= 16777619u;
	}
	return h;
}

static int key_eq(const htable_t *t, const char *a, const char *b)
{
	return (t->flags & HTABLE_FLAG_NOCASE) ? strcasecmp(a, b) == 0 : strcmp(a, b) == 0;
}

htable_t *htable_new(size_t hint, int flags)
{
	htable_t *t = xmalloc(sizeof(*t));
	size_t n = 16;
	while (n < hint)
		n *= 2;
	t->slots = xcalloc(n, sizeof(*t->slots));
	t->nslots = n;
	t->count = 0;
	t->flags = flags;
	return t;
}

void htable_free(htable_t *t, void (*free_value)(void *))
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->nslots; i++) {
		htable_entry_t *e = t->slots[i], *next;
		for (; e; e = next) {
			next = e->next;
			if (free_value)
				free_value(e->value);
			free(e->key);
			free(e);
		}
	}
	free(t->slots);
	free(t);
}

static void grow(htable_t *t)
{
	size_t n = t->nslots * 2;
	htable_entry_t **slots = xcalloc(n, sizeof(*slots));
	for (size_t i = 0; i < t->nslots; i++) {
		htable_entry_t *e = t->slots[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = slots[e->hash & (n - 1)];
			slots[e->hash & (n - 1)] = e;
		}
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = n;
}

htable_entry_t *htable_find(const htable_t *t, const char *key)
{
	unsigned h = hash_key(key, t->flags & HTABLE_FLAG_NOCASE);
	for (htable_entry_t *e = t->slots[h & (t->nslots - 1)]; e; e = e->next)
		if (e->hash == h && key_eq(t, e->key, key))
			return e;
	return NULL;
}

void *htable_get(const htable_t *t, const char *key)
{
	htable_entry_t *e = htable_find(t, key);
	return e ? e->value : NULL;
}

htable_entry_t *htable_add(htable_t *t, const char *key, void *value)
{
	if (htable_find(t, key))
		return NULL;
	if (t->count >= t->nslots)
		grow(t);
	htable_entry_t *e = xmalloc(sizeof(*e));
	e->key = xstrdup(key);
	e->value = value;
	e->hash = hash_key(key, t->flags & HTABLE_FLAG_NOCASE);
	e->next = t->slots[e->hash & (t->nslots - 1)];
	t->slots[e->hash & (t->nslots - 1)] = e;
	t->count++;
	return e;
}

void *htable_put(htable_t *t, const char *key, void *value)
{
	htable_entry_t *e = htable_find(t, key);
	if (e) {
		void *old = e->value;
		e->value = value;
		return old;
	}
	htable_add(t, key, value);
	return NULL;
}

void *htable_delete(htable_t *t, const char *key)
{
	unsigned h = hash_key(key, t->flags & HTABLE_FLAG_NOCASE);
	htable_entry_t **pp = &t->slots[h & (t->nslots - 1)];
	for (; *pp; pp = &(*pp)->next) {
		htable_entry_t *e = *pp;
		if (e->hash == h && key_eq(t, e->key, key)) {
			void *v = e->value;
			*pp = e->next;
			free(e->key);
			free(e);
			t->count--;
			return v;
		}
	}
	return NULL;
}

size_t htable_size(const htable_t *t)
{
	return t->count;
}

void htable_walk(const htable_t *t, void (*fn)(htable_entry_t *, void *), void *ctx)
{
	for (size_t i = 0; i < t->nslots; i++)
		for (htable_entry_t *e = t->slots[i]; e; e = e->next)
			fn(e, ctx);
}

htable_entry_t **htable_list(const htable_t *t, size_t *n)
{
	htable_entry_t **v = xcalloc(t->count + 1, sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; i < t->nslots; i++)
		for (htable_entry_t *e = t->slots[i]; e; e = e->next)
			v[k++] = e;
	*n = k;
	return v;
}
