/* Lists of lookup tables: the value of a parameter such as alias_maps,
 * canonical_maps, transport_maps or smtpd_sender_login_maps, "type:name"
 * entries separated by commas and/or white space, each opened with
 * dict_open (dict.h) and asked in turn, the first that finds a key
 * answering.  This is the one place that splits such a list and asks
 * its tables; doc/lookup-tables.md describes the syntax and what each
 * parameter does with a table that cannot be read.
 *
 * maps_token() is the one tokeniser of such lists, and of the lists
 * that mix tables with other items (mydestination, mynetworks,
 * restriction lists): the braces of "inline:{ a=x, b=y }" (nested ones
 * too) keep their separators, so that table is one entry.  Such a mixed
 * list keeps its own items and gives each of its tables to a maps_t
 * (maps_add), which opens, asks and reports it as for any list.
 *
 * A lookup has three outcomes: found, not found, and failed (a table
 * could not be read or opened: the caller defers, it never takes a
 * failure for "not found").  A rebuilt hash: or lmdb: file is reopened
 * by the table itself (dict.h); maps_refresh() asks every open table to
 * check now. */
#ifndef PETREL_MAPS_H
#define PETREL_MAPS_H
#include <stdbool.h>
#include <stddef.h>
#include "str.h"

/* The separators of a list: blanks and commas. */
#define MAPS_SEPARATORS	", \t\r\n"

/* The next entry of the list at *pp: *tok and *len get it and *pp moves
 * past it.  1 an entry, 0 none left, -1 an entry with a '{' never
 * closed (it runs to the end of the list). */
int maps_token(const char **pp, const char **tok, size_t *len);
/* The same on a writable copy: the entry is cut out (NUL-terminated in
 * place) and returned, NULL when none is left; an entry with a '{'
 * never closed is returned as it is, to the end of the list. */
char *maps_token_cut(char **cp);

typedef struct maps maps_t;

/* The caller's own answer for one entry, which is then not opened with
 * dict_open (smtpd answers unix:passwd.byname with getpwnam): 1 found
 * (*value, when value is not NULL), 0 not found. */
typedef struct maps_own {
	const char *spec;	/* the entry, spelled exactly so */
	int (*get)(const char *key, const char **value);
} maps_own_t;
/* A get for an entry the caller handles outside the lookup (local's
 * unix:passwd.byname): it answers no key. */
int maps_own_none(const char *key, const char **value);

enum {
	/* A table that cannot be opened, or a '{' never closed, makes
	 * maps_open fail (NULL, err "param: reason" or "param: missing
	 * '}'") at the first such entry.  Without it the entry is kept as
	 * broken (its reason: what dict_open said) and its lookups fail. */
	MAPS_FLAG_STRICT = 1 << 0,
	/* A table that fails does not end a lookup: a later one that finds
	 * the key answers, and the lookup fails only when none does.
	 * Without it the first table that fails ends the lookup. */
	MAPS_FLAG_PAST_ERRORS = 1 << 1,
	/* Each table is opened at its first lookup, not by maps_open (which
	 * then fails for nothing but a '{' never closed, with STRICT).  A
	 * table that does not open fails that lookup and is tried again at
	 * the next one. */
	MAPS_FLAG_LAZY = 1 << 2,
};

/* Opens the tables that spec (NULL: none) lists, for parameter param.
 * own may be NULL.  An empty list gives an empty maps_t. */
maps_t *maps_open(const char *param, const char *spec, int flags,
    const maps_own_t *own, str_t *err);
/* Appends one entry, the len bytes at spec taken whole (the caller cut
 * it from a list of its own with maps_token, so braces and separators
 * belong to it), and opens it as maps_open would have with m's flags
 * and own entry: false, err "param: reason" and nothing added when
 * MAPS_FLAG_STRICT refuses a table that does not open; else true, the
 * entry being number maps_count(m) - 1.  The lists that mix tables with
 * items of their own (domain lists, mynetworks, restriction lists) hold
 * their tables so, each looked up with maps_get_entry. */
bool maps_add(maps_t *m, const char *spec, size_t len, str_t *err);
void maps_free(maps_t *m);

const char *maps_param(const maps_t *m);
size_t maps_count(const maps_t *m);
/* Entry i: as written, and why it could not be opened (NULL when it
 * was). */
const char *maps_spec(const maps_t *m, size_t i);
const char *maps_broken(const maps_t *m, size_t i);
/* Entry i's open table; NULL when it is broken, the caller's own, or
 * not opened yet (MAPS_FLAG_LAZY). */
struct dict *maps_dict(const maps_t *m, size_t i);
/* Asks every open table to check for a rebuilt file now (dict_refresh);
 * a table that became unreadable fails its next lookup. */
void maps_refresh(maps_t *m);

/* Looks key up in each table in order: 1 found (*value, when value is
 * not NULL, valid until the next lookup), 0 not found, -1 a table failed
 * (a lookup error, or a broken table): why, when not NULL, gets "spec:
 * reason", and maps_failed() tells the same in parts. */
int maps_get(maps_t *m, const char *key, const char **value, str_t *why);
/* The same in entry i alone (a caller whose keys depend on the entry).
 * An own entry answers as its get does. */
int maps_get_entry(maps_t *m, size_t i, const char *key, const char **value,
    str_t *why);
/* With MAPS_FLAG_LAZY: opens every table not open yet, now (a daemon
 * about to chroot).  Returns how many do not open (they are tried again
 * at their lookups); why, when not NULL, gets "spec: reason" of the
 * last. */
size_t maps_open_now(maps_t *m, str_t *why);
/* After maps_get returned -1: the spec of the table that failed (the
 * last one with MAPS_FLAG_PAST_ERRORS); *reason gets why.  Valid until
 * the next lookup. */
const char *maps_failed(const maps_t *m, const char **reason);
/* After maps_get returned -1: true when that table could not be opened
 * (the reason is then what dict_open said), false for a lookup error. */
bool maps_failed_open(const maps_t *m);
/* After maps_get returned 1: the spec of the table that answered. */
const char *maps_found(const maps_t *m);

#endif
