/* Content filters and receive_override_options (doc/content-filter.md):
 * the checks and parsers smtpd, pickup, cleanup and qmgr share. */
#ifndef PETREL_CONTENT_FILTER_H
#define PETREL_CONTENT_FILTER_H
#include <stdbool.h>
#include "str.h"

/* Longest content filter value (transport:nexthop). */
#define FILTER_VALUE_MAX 1000

/* The name of the queue-file attribute and of the cleanup envelope
 * attribute. */
#define FILTER_ATTR "content_filter"

/* True when value is a well-formed content filter: a transport name of
 * [A-Za-z0-9._-] (not empty), a colon, and a nexthop (may be empty)
 * without blanks or control bytes; at most FILTER_VALUE_MAX bytes.
 * Otherwise false with the reason in why (may be NULL).  An empty value
 * means "no filter" and is not accepted here: callers test for it. */
bool filter_valid(const char *value, str_t *why);

/* Splits a valid value at its first colon: the transport, and the
 * nexthop (empty when the value gives none).  False when the value is
 * not valid (filter_valid). */
bool filter_split(const char *value, str_t *transport, str_t *nexthop);

/* Where qmgr sends a recipient of a filtered message: the filter's
 * transport, and its nexthop, or when it gives none default_nexthop
 * (default_filter_nexthop), or when that is empty the domain of the
 * recipient address (Postfix 2.7 and later), or fallback for an
 * address without a domain.  The strings are replaced. */
void filter_route(const char *transport, const char *nexthop,
    const char *default_nexthop, const char *address, const char *fallback,
    str_t *out_transport, str_t *out_nexthop);

/* receive_override_options bits.  The NO_CHECKS, NO_MAPPINGS and
 * NO_MILTERS ones are passed to cleanup as its envelope flags
 * (filter_cleanup_flags); NO_UNKNOWN_RCPT is smtpd's own. */
#define RECV_NO_UNKNOWN_RCPT	(1 << 0)	/* no_unknown_recipient_checks */
#define RECV_NO_CHECKS		(1 << 1)	/* no_header_body_checks */
#define RECV_NO_MAPPINGS	(1 << 2)	/* no_address_mappings */
#define RECV_NO_MILTERS		(1 << 3)	/* no_milters */

/* Parses a receive_override_options value: names separated by blanks
 * or commas, in any case.  0 with the bits in *bits; -1 with err
 * naming the first unknown option (Postfix's other options, which
 * Petrel does not have, are unknown too). */
int recv_override_parse(const char *value, int *bits, str_t *err);

/* The cleanup envelope flags (CLEANUP_FLAG_NO_*) for these bits. */
int filter_cleanup_flags(int bits);

#endif
