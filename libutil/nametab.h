/* Names of the values of a small enum, for the text forms of a protocol.
 *
 * A name table is an array of strings indexed by the enum's values, as
 * written with designated initialisers ([VALUE] = "name"); entries left
 * out are NULL and have no name.  Entry 0 is the enum's "not set" value
 * (DLV_ACT_NONE, DSN_NOTICE_NONE): its name is what a value without a
 * name is called, and it is what a name not in the table stands for.
 * Names are matched exactly (case matters). */
#ifndef PETREL_NAMETAB_H
#define PETREL_NAMETAB_H
#include <stddef.h>

/* The number of entries of a name table defined as an array. */
#define NAMETAB_SIZE(names) (sizeof(names) / sizeof((names)[0]))

/* The name of value v in names[0..n-1]; names[0] when v is out of range
 * or has no name. */
const char *nametab_name(const char *const *names, size_t n, int v);
/* The value (1..n-1) whose name is s; 0 when there is none (s NULL, not
 * in the table, or the name of entry 0 itself). */
int nametab_value(const char *const *names, size_t n, const char *s);

#endif
