/* cleanup: the answers of header_checks and body_checks (doc/cleanup.md,
 * "Header and body checks").  The lookups and their effects are in
 * cleanup_msg.c; this is the part without state, for the unit tests. */
#include <string.h>
#include <strings.h>
#include "cleanup.h"

static const struct {
	const char *name;
	enum cleanup_checks_act act;
} acts[] = {
	{ "REJECT", CA_REJECT }, { "WARN", CA_WARN },
	{ "DISCARD", CA_DISCARD }, { "HOLD", CA_HOLD },
	{ "REDIRECT", CA_REDIRECT }, { "FILTER", CA_FILTER },
	{ "IGNORE", CA_IGNORE },
	{ "PREPEND", CA_PREPEND }, { "REPLACE", CA_REPLACE },
	{ "DUNNO", CA_NONE }, { "OK", CA_NONE },
};

enum cleanup_checks_act cleanup_checks_act_parse(const char *value,
    const char **text, size_t *tlen)
{
	size_t n = strcspn(value, " \t"), len;
	const char *t = value + n;

	t += strspn(t, " \t");
	len = strlen(t);
	while (len > 0 && (t[len - 1] == ' ' || t[len - 1] == '\t'))
		len--;
	*text = t;
	*tlen = len;
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
		if (strlen(acts[i].name) == n &&
		    strncasecmp(value, acts[i].name, n) == 0)
			return acts[i].act;
	return CA_UNSUPPORTED;
}
