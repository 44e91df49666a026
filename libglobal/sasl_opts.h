/* SASL security options: the words of smtpd_sasl_security_options,
 * smtpd_sasl_tls_security_options, smtp_sasl_security_options and
 * smtp_sasl_tls_security_options (Postfix's), blank or comma separated,
 * in any case, as one bit mask for smtpd and the smtp client alike.
 * Each word names a mechanism property that is refused (no...) or
 * required (mutual_auth, forward_secrecy). */
#ifndef PETREL_SASL_OPTS_H
#define PETREL_SASL_OPTS_H
#include <stddef.h>
#include "str.h"

enum {
	SASL_OPT_NOPLAINTEXT = 1 << 0,
	SASL_OPT_NOANONYMOUS = 1 << 1,
	SASL_OPT_NOACTIVE = 1 << 2,
	SASL_OPT_NODICTIONARY = 1 << 3,
	SASL_OPT_MUTUAL_AUTH = 1 << 4,
	SASL_OPT_FORWARD_SECRECY = 1 << 5,
};

/* Reads the words of value into *mask.  NULL when each is an option;
 * otherwise the first word that is not, with *len its length (*mask
 * then has the words before it). */
const char *sasl_opts_scan(const char *value, unsigned *mask, size_t *len);
/* The same: 0, or -1 with err 'unknown SASL security option "WORD"'. */
int sasl_opts_parse(const char *value, unsigned *mask, str_t *err);

#endif
