/* Lists of option words into bit masks (name_mask.h). */
#include <string.h>
#include <strings.h>
#include "name_mask.h"

#define SEPARATORS	", \t\r\n"

const char *name_mask_scan(const name_mask_t *table, size_t n,
    const char *value, unsigned *mask, size_t *len)
{
	const char *p = value != NULL ? value : "";

	*mask = 0;
	for (;;) {
		size_t wl, k;

		p += strspn(p, SEPARATORS);
		if (*p == '\0')
			return NULL;
		wl = strcspn(p, SEPARATORS);
		for (k = 0; k < n; k++)
			if (strlen(table[k].word) == wl &&
			    strncasecmp(p, table[k].word, wl) == 0)
				break;
		if (k == n) {
			*len = wl;
			return p;
		}
		*mask |= table[k].bit;
		p += wl;
	}
}
