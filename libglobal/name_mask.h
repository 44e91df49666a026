/* Lists of option words into bit masks (smtpd_sasl_security_options,
 * receive_override_options, ...): words separated by blanks or commas,
 * matched without regard to case. */
#ifndef PETREL_NAME_MASK_H
#define PETREL_NAME_MASK_H
#include <stddef.h>

typedef struct name_mask {
	const char *word;
	unsigned bit;
} name_mask_t;

/* Reads the words of value (NULL: none) into *mask with the n entries
 * of table.  NULL when each is in the table; otherwise the first word
 * that is not, with *len its length (*mask then has the words before
 * it). */
const char *name_mask_scan(const name_mask_t *table, size_t n,
    const char *value, unsigned *mask, size_t *len);

#endif
