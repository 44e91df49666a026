#include <stdint.h>
#include <string.h>
#include "mem.h"
#include "log.h"

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		log_panic("out of memory allocating %zu bytes", n);
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (p == NULL)
		log_panic("out of memory allocating %zu x %zu bytes", count, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		log_panic("out of memory reallocating %zu bytes", n);
	return q;
}

void *xreallocarray(void *p, size_t count, size_t size)
{
	if (size != 0 && count > SIZE_MAX / size)
		log_panic("allocation overflow: %zu x %zu", count, size);
	return xrealloc(p, count * size);
}

char *xstrdup(const char *s)
{
	return xmemdup(s, strlen(s) + 1);
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *d = xmalloc(len + 1);
	memcpy(d, s, len);
	d[len] = 0;
	return d;
}

void *xmemdup(const void *p, size_t n)
{
	void *d = xmalloc(n);
	memcpy(d, p, n);
	return d;
}
