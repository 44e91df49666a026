/* Writing JSON text into a str_t.  Only what the tools' JSON output needs:
 * values are written by the callers (numbers with str_catf, literals
 * with str_cat); this module makes strings safe.  No parser. */
#ifndef PETREL_JSON_H
#define PETREL_JSON_H
#include "str.h"

/* Appends s (NULL: "") as a JSON string in double quotes: valid UTF-8
 * kept as it is; '"' '\\' and \n \r \t escaped with a backslash; other
 * control characters, DEL and every byte that does not start a valid,
 * shortest-form, non-surrogate UTF-8 sequence written as \u00XX. */
void json_str(str_t *out, const char *s);

#endif
