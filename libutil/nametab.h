/* Names of the values of a small enum, for the text forms of a protocol.
 *
 * A name table is an array of strings indexed by the enum's values, as
 * written with designated initialisers ([VALUE] = "name"); entries left
 * out are NULL and have no name.  Names are matched exactly (case
 * matters).  The caller keeps its own answer for a value or a name that
 * is not in the table: these functions only say that it is not there. */
#ifndef PETREL_NAMETAB_H
#define PETREL_NAMETAB_H
#include <stddef.h>

/* The number of entries of a name table defined as an array. */
#define NAMETAB_SIZE(names) (sizeof(names) / sizeof((names)[0]))

/* The name of value v in names[0..n-1], or dflt when v is out of range
 * or has no name. */
const char *nametab_name(const char *const *names, size_t n, int v,
    const char *dflt);
/* The value whose name is s, searching values first..n-1; -1 if none
 * (or s is NULL). */
int nametab_value(const char *const *names, size_t n, int first,
    const char *s);

#endif
