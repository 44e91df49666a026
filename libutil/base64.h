/* Base64 (RFC 4648 section 4, the standard alphabet with '=' padding),
 * as SMTP AUTH (RFC 4954) and MIME use it.
 *
 * The decoder is strict: the input length must be a multiple of four,
 * padding only at the end (at most two '='), no white space, no other
 * characters, and unused bits of the last group must be zero, so that
 * every text has exactly one meaning.  Callers that get base64 from the
 * network reject what does not decode. */
#ifndef PETREL_BASE64_H
#define PETREL_BASE64_H
#include <stdbool.h>
#include <stddef.h>
#include "str.h"

/* Encoded length of n bytes (without the NUL). */
static inline size_t base64_encoded_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/* Appends the encoding of data[0..n) to out. */
void base64_encode(str_t *out, const void *data, size_t n);

/* Appends the bytes text[0..n) encodes to out (binary safe: out's length
 * says how many).  false, with out as it was, when text is not strict
 * base64 (above). */
bool base64_decode(str_t *out, const char *text, size_t n);

/* Whether text[0..n) has the form above: a length that is a multiple of
 * four, only alphabet characters, '=' only as the last one or two ("" is
 * well formed).  Unlike base64_decode it does not look at the unused bits
 * of a padded last group: for text passed on to another decoder (smtpd's
 * SASL responses, which the authentication server decodes). */
bool base64_well_formed(const char *text, size_t n);

#endif
