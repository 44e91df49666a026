/* Allocation that never returns NULL: running out of memory is a panic,
 * because a daemon that limps on without memory loses mail quietly. */
#ifndef PETREL_MEM_H
#define PETREL_MEM_H
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
/* Grows an array of count*size bytes with overflow checking. */
void *xreallocarray(void *p, size_t count, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
void *xmemdup(const void *p, size_t n);
#define xfree(p) free(p)
#include <stdlib.h>

#endif
