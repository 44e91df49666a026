#include "list.h"

size_t list_count(const list_t *l)
{
	size_t n = 0;
	const list_node_t *p;
	for (p = l->next; p != l; p = p->next)
		n++;
	return n;
}
