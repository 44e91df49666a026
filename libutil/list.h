/* Intrusive doubly linked circular lists: the node lives inside the
 * object, so linking and unlinking never allocate and are O(1).  The
 * scheduler's hot path depends on that. */
#ifndef PETREL_LIST_H
#define PETREL_LIST_H
#include <stddef.h>
#include <stdbool.h>

typedef struct list_node {
	struct list_node *prev, *next;
} list_node_t;

/* A list head is a node that links to itself when empty. */
typedef list_node_t list_t;

#define LIST_HEAD_INIT(name) { &(name), &(name) }

static inline void list_init(list_t *l)
{
	l->prev = l->next = l;
}

static inline bool list_empty(const list_t *l)
{
	return l->next == l;
}

/* True if the node is on some list (nodes are cleared when removed). */
static inline bool list_linked(const list_node_t *n)
{
	return n->next != NULL && n->next != n;
}

static inline void list_insert_between(list_node_t *n, list_node_t *prev,
    list_node_t *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

static inline void list_append(list_t *l, list_node_t *n)
{
	list_insert_between(n, l->prev, l);
}

static inline void list_prepend(list_t *l, list_node_t *n)
{
	list_insert_between(n, l, l->next);
}

/* Insert n just before pos (pos may be the head: then n goes last). */
static inline void list_insert_before(list_node_t *pos, list_node_t *n)
{
	list_insert_between(n, pos->prev, pos);
}

static inline void list_insert_after(list_node_t *pos, list_node_t *n)
{
	list_insert_between(n, pos, pos->next);
}

static inline void list_remove(list_node_t *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = NULL;
}

static inline list_node_t *list_first(const list_t *l)
{
	return list_empty(l) ? NULL : l->next;
}

static inline list_node_t *list_last(const list_t *l)
{
	return list_empty(l) ? NULL : l->prev;
}

/* Next/previous node, or NULL at the end of the list. */
static inline list_node_t *list_next(const list_t *l, const list_node_t *n)
{
	return n->next == l ? NULL : n->next;
}

static inline list_node_t *list_prev(const list_t *l, const list_node_t *n)
{
	return n->prev == l ? NULL : n->prev;
}

size_t list_count(const list_t *l);

#define list_entry(node, type, member) \
	((type *)((char *)(node) - offsetof(type, member)))

/* Iterate; the _safe form allows removing the current node. */
#define list_foreach(n, l) \
	for ((n) = (l)->next; (n) != (l); (n) = (n)->next)
#define list_foreach_safe(n, tmp, l) \
	for ((n) = (l)->next, (tmp) = (n)->next; (n) != (l); \
	     (n) = (tmp), (tmp) = (n)->next)

#endif
