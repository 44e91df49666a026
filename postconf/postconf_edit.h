/* postconf -e / -X: editing main.cf in place.
 *
 * The file is rewritten atomically (libutil file_replace): comments,
 * blank lines and the order of entries stay as they were.  An entry that
 * is set is replaced where it stands, continuation lines included; later
 * entries for the same parameter (which would override it) are removed;
 * a parameter not yet in the file is appended.  The bare name X of a
 * default_X parameter counts as the same parameter. */
#ifndef PETREL_POSTCONF_EDIT_H
#define PETREL_POSTCONF_EDIT_H
#include "str.h"

/* Applies "name=value" items to the file at path (created if missing).
 * A malformed item, or a bad value for a typed parameter (when it holds
 * no $name to expand), is logged and nothing is written.  0 or -1. */
int postconf_edit(const char *path, char **items, int n);

/* Removes the named parameters from the file.  0 or -1. */
int postconf_remove(const char *path, char **names, int n);

/* The in-memory part: applies name = value (value NULL: remove) to the
 * main.cf text in out.  Returns how many entries it found. */
int postconf_edit_text(str_t *text, const char *name, const char *value);

#endif
