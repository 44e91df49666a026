/* SASL security options (sasl_opts.h). */
#include <string.h>
#include <strings.h>
#include "sasl_opts.h"

#define SEPARATORS	", \t\r\n"

static const struct {
	const char *word;
	unsigned bit;
} words[] = {
	{ "noplaintext", SASL_OPT_NOPLAINTEXT },
	{ "noanonymous", SASL_OPT_NOANONYMOUS },
	{ "noactive", SASL_OPT_NOACTIVE },
	{ "nodictionary", SASL_OPT_NODICTIONARY },
	{ "mutual_auth", SASL_OPT_MUTUAL_AUTH },
	{ "forward_secrecy", SASL_OPT_FORWARD_SECRECY },
};

const char *sasl_opts_scan(const char *value, unsigned *mask, size_t *len)
{
	const char *p = value != NULL ? value : "";

	*mask = 0;
	for (;;) {
		size_t n, k;

		p += strspn(p, SEPARATORS);
		if (*p == '\0')
			return NULL;
		n = strcspn(p, SEPARATORS);
		for (k = 0; k < sizeof(words) / sizeof(words[0]); k++)
			if (strlen(words[k].word) == n &&
			    strncasecmp(p, words[k].word, n) == 0)
				break;
		if (k == sizeof(words) / sizeof(words[0])) {
			*len = n;
			return p;
		}
		*mask |= words[k].bit;
		p += n;
	}
}

int sasl_opts_parse(const char *value, unsigned *mask, str_t *err)
{
	size_t n;
	const char *bad = sasl_opts_scan(value, mask, &n);

	if (bad == NULL)
		return 0;
	str_setf(err, "unknown SASL security option \"%.*s\"", (int)n, bad);
	return -1;
}
