/* Growable strings and byte buffers, and small string helpers.
 *
 * A str always keeps a NUL after its last byte, so str_cstr() is a valid C
 * string (for text without embedded NULs); binary data is fine too, len
 * says how much there is. */
#ifndef PETREL_STR_H
#define PETREL_STR_H
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct str {
	char *buf;
	size_t len;
	size_t cap;		/* bytes allocated, including the NUL */
} str_t;

#define STR_INIT { NULL, 0, 0 }

str_t *str_new(size_t hint);
void str_free(str_t *s);
/* For a str_t embedded in another struct (start from STR_INIT). */
void str_release(str_t *s);
/* Ensure room for extra more bytes (plus the NUL). */
void str_reserve(str_t *s, size_t extra);
void str_append(str_t *s, const void *data, size_t len);
void str_cat(str_t *s, const char *cstr);
void str_putc(str_t *s, int c);
void str_catf(str_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void str_vcatf(str_t *s, const char *fmt, va_list ap);
/* Replace the contents. */
void str_set(str_t *s, const char *cstr);
void str_setf(str_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void str_reset(str_t *s);
void str_truncate(str_t *s, size_t len);
/* Take the buffer (malloc'ed, NUL-terminated); s is left empty. */
char *str_steal(str_t *s);
static inline const char *str_cstr(const str_t *s)
{
	return s->buf ? s->buf : "";
}
static inline size_t str_len(const str_t *s)
{
	return s->len;
}

/* snprintf into a bounded buffer; returns false if the text was cut. */
bool bfmt(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Bounded copy; always NUL-terminates; returns false if cut. */
bool bcopy_str(char *dst, size_t size, const char *src);

/* Next token of *cp separated by any of delims, skipping empty tokens;
 * NULL at the end.  The string is modified in place. */
char *str_token(char **cp, const char *delims);
/* Strip leading and trailing white space in place; returns the start. */
char *str_trim(char *s);
/* ASCII case folding in place; returns s. */
char *str_lower(char *s);
/* Appends data to out with non-printable bytes as \ooo and \\ doubled,
 * safe for logs and one-line output. */
void str_quote_printable(str_t *out, const void *data, size_t len);
/* Length of the well-formed UTF-8 sequence at p, looking at no more than
 * avail bytes: 1 for an ASCII byte, 2 to 4 for a multibyte character
 * (shortest form, no surrogates, nothing past U+10FFFF), 0 if the bytes
 * there are not one (or the sequence is cut by avail). */
size_t str_utf8_len(const void *p, size_t avail);
/* The seconds in one time unit as Postfix writes them after a number:
 * 's' 1, 'm' 60, 'h' 3600, 'd' 86400, 'w' 604800 (lower case only); 0
 * for any other character. */
long str_time_unit(int unit);
/* Parses a non-negative decimal integer that must fill the whole string;
 * false on syntax error or overflow. */
bool str_to_ulong(const char *s, unsigned long *out);
bool str_to_long(const char *s, long *out);

#endif
