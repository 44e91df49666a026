/* The RFC 5322 date-time of a moment, in local time, as a message's
 * Date: header and a DSN's Arrival-Date: field write it:
 * "Tue, 3 Jun 2025 14:05:09 +0200", optionally followed by the zone's
 * name as a comment, " (CEST)".  Day and month names are English
 * whatever the locale (RFC 5322 wants them so).  When the local time
 * cannot be had, UTC is written (with +0000).  The zone name is added
 * only when the flag asks for it and the name is plain letters, digits,
 * '+' and '-' (a comment for people, never anything that would need
 * quoting). */
#ifndef PETREL_MAIL_DATE_H
#define PETREL_MAIL_DATE_H
#include <time.h>
#include "str.h"

enum {
	MAIL_DATE_ZONE_NAME = 1 << 0,	/* append " (ZONE)" */
};

/* Appends the date-time of t to out. */
void mail_date_format(time_t t, int flags, str_t *out);

#endif
