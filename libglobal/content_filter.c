/* Content filter values and receive_override_options
 * (doc/content-filter.md). */
#include <string.h>
#include "cleanup_clnt.h"
#include "content_filter.h"
#include "name_mask.h"
#include "resolve.h"

bool filter_valid(const char *value, str_t *why)
{
	const char *colon = strchr(value, ':');
	size_t len = strlen(value);
	str_t t = STR_INIT, n = STR_INIT;
	bool good = false;

	if (len > FILTER_VALUE_MAX) {
		if (why)
			str_setf(why, "longer than %d bytes", FILTER_VALUE_MAX);
		goto out;
	}
	if (colon == NULL) {
		if (why)
			str_set(why, "no colon: the form is transport:nexthop "
			    "(transport: or transport:[host]:port)");
		goto out;
	}
	if (!resolve_split_transport(value, &t, &n) || str_len(&t) == 0) {
		if (why)
			str_setf(why, "bad transport name \"%.*s\"",
			    (int)(colon - value > 64 ? 64 : colon - value), value);
		goto out;
	}
	for (const char *p = colon + 1; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			if (why)
				str_set(why, "blank or control byte in the "
				    "nexthop");
			goto out;
		}
	good = true;
out:
	str_release(&t);
	str_release(&n);
	return good;
}

bool filter_split(const char *value, str_t *transport, str_t *nexthop)
{
	return filter_valid(value, NULL) &&
	    resolve_split_transport(value, transport, nexthop);
}

void filter_route(const char *transport, const char *nexthop,
    const char *default_nexthop, const char *address, const char *fallback,
    str_t *out_transport, str_t *out_nexthop)
{
	const char *at = strrchr(address, '@');

	str_set(out_transport, transport);
	if (nexthop != NULL && *nexthop != '\0')
		str_set(out_nexthop, nexthop);
	else if (default_nexthop != NULL && *default_nexthop != '\0')
		str_set(out_nexthop, default_nexthop);
	else if (at != NULL && at[1] != '\0')
		str_set(out_nexthop, at + 1);
	else
		str_set(out_nexthop, fallback != NULL ? fallback : "");
}

static const name_mask_t recv_opts[] = {
	{ "no_unknown_recipient_checks", RECV_NO_UNKNOWN_RCPT },
	{ "no_header_body_checks", RECV_NO_CHECKS },
	{ "no_address_mappings", RECV_NO_MAPPINGS },
	{ "no_milters", RECV_NO_MILTERS },
};

int recv_override_parse(const char *value, int *bits, str_t *err)
{
	unsigned mask;
	size_t n;
	const char *bad = name_mask_scan(recv_opts,
	    sizeof(recv_opts) / sizeof(recv_opts[0]), value, &mask, &n);

	*bits = 0;
	if (bad != NULL) {
		str_setf(err, "receive_override_options: unknown option "
		    "\"%.*s\" (known: no_unknown_recipient_checks, "
		    "no_header_body_checks, no_address_mappings, no_milters)",
		    (int)(n > 64 ? 64 : n), bad);
		return -1;
	}
	*bits = (int)mask;
	return 0;
}

int filter_cleanup_flags(int bits)
{
	return ((bits & RECV_NO_CHECKS) ? CLEANUP_FLAG_NO_CHECKS : 0) |
	    ((bits & RECV_NO_MAPPINGS) ? CLEANUP_FLAG_NO_MAPPINGS : 0) |
	    ((bits & RECV_NO_MILTERS) ? CLEANUP_FLAG_NO_MILTERS : 0);
}
