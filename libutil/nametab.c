/* Names of enum values (nametab.h). */
#include <string.h>
#include "nametab.h"

const char *nametab_name(const char *const *names, size_t n, int v,
    const char *dflt)
{
	if (v < 0 || (size_t)v >= n || names[v] == NULL)
		return dflt;
	return names[v];
}

int nametab_value(const char *const *names, size_t n, int first,
    const char *s)
{
	if (s == NULL || first < 0)
		return -1;
	for (size_t i = (size_t)first; i < n; i++)
		if (names[i] && strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}
