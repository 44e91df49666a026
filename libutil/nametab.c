/* Names of enum values (nametab.h). */
#include <string.h>
#include "nametab.h"

const char *nametab_name(const char *const *names, size_t n, int v)
{
	if (v < 0 || (size_t)v >= n || names[v] == NULL)
		return names[0];
	return names[v];
}

int nametab_value(const char *const *names, size_t n, const char *s)
{
	if (s == NULL)
		return 0;
	for (size_t i = 1; i < n; i++)
		if (names[i] && strcmp(names[i], s) == 0)
			return (int)i;
	return 0;
}
