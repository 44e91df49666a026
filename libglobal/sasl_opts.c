/* SASL security options (sasl_opts.h). */
#include "name_mask.h"
#include "sasl_opts.h"

static const name_mask_t words[] = {
	{ "noplaintext", SASL_OPT_NOPLAINTEXT },
	{ "noanonymous", SASL_OPT_NOANONYMOUS },
	{ "noactive", SASL_OPT_NOACTIVE },
	{ "nodictionary", SASL_OPT_NODICTIONARY },
	{ "mutual_auth", SASL_OPT_MUTUAL_AUTH },
	{ "forward_secrecy", SASL_OPT_FORWARD_SECRECY },
};

const char *sasl_opts_scan(const char *value, unsigned *mask, size_t *len)
{
	return name_mask_scan(words, sizeof(words) / sizeof(words[0]), value,
	    mask, len);
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
