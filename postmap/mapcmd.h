/* What postmap(1) and postalias(1) share: options, building a hash:
 * table from a source file atomically, updating one (-i, -d) the same
 * way under the table's lock, -q queries and -s dumps.  The two
 * differ only in how a source file is read (key value lines, or
 * "name: targets" entries) and in how -s prints an entry. */
#ifndef PETREL_POSTMAP_MAPCMD_H
#define PETREL_POSTMAP_MAPCMD_H
#include "dict.h"
#include "str.h"

/* Exit status. */
#define MAPCMD_EX_OK		0
#define MAPCMD_EX_NOTFOUND	1	/* -q, -d: no table has the key */
#define MAPCMD_EX_FAIL		1	/* build: the table was not built */
#define MAPCMD_EX_ERROR		2	/* -q/-s: a table could not be read */
#define MAPCMD_EX_USAGE		64

/* Adds one entry while building; file and lineno for messages.  Returns
 * 0, or -1 with err set (the build fails).  A duplicate key is reported
 * here (a warning, or replaced with -r). */
typedef struct mapcmd_build mapcmd_build_t;
int mapcmd_put(mapcmd_build_t *b, const char *key, const char *value,
    const char *file, int lineno, str_t *err);

typedef struct mapcmd_spec {
	const char *name;		/* "postmap" */
	/* Reads source file path, calling mapcmd_put for each entry.
	 * Returns 0, or -1 with err set ("file:line: reason"). */
	int (*load)(const char *path, mapcmd_build_t *b, str_t *err);
	/* Separator between key and value in -s output: " " or ": ". */
	const char *dump_sep;
} mapcmd_spec_t;

/* The whole command: parses argv, builds, queries or dumps; returns the
 * exit status. */
int mapcmd_main(int argc, char **argv, const mapcmd_spec_t *spec);

#endif
