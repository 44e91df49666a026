/* DSN data helpers: RFC 3463 enhanced status codes, finding them in SMTP
 * replies, RFC 5322 dates for notices. */
#ifndef PETREL_DSN_H
#define PETREL_DSN_H
#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include "str.h"

/* Longest status code text ("5.999.999") plus NUL. */
#define DSN_STATUS_SIZE 16

/* True for "C.S.D": C one of 2, 4, 5; S and D 1 to 3 digits without a
 * leading zero (RFC 3463: 0..999); nothing after. */
bool dsn_status_valid(const char *s);
/* The same on len bytes. */
bool dsn_status_valid_len(const char *s, size_t len);

/* Finds an enhanced status code at the start of an SMTP reply text, after
 * the 3-digit code ("550 5.1.1 unknown" or "550-5.1.1 ..." or just
 * "5.1.1 text"); its class must equal the reply code's first digit.
 * Copies it to out and returns its length in the text (so the caller can
 * skip it), or 0 when there is none. */
size_t dsn_status_in_reply(const char *text, char out[DSN_STATUS_SIZE]);

/* Default code for an SMTP reply code with no enhanced code: 2xx
 * "2.0.0", 4xx "4.0.0", 5xx "5.0.0"; other values "4.0.0" (a reply we do
 * not understand is not a reason to bounce). */
const char *dsn_status_for_smtp(int code);

/* RFC 5322 date-time of t in local time: "Tue, 3 Feb 2026 14:05:09 +0100"
 * (mail_date_format() without the zone name); appended to out. */
void dsn_rfc822_date(time_t t, str_t *out);

#endif
