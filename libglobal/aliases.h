/* The aliases(5) format and the target lists of aliases, .forward and
 * :include: files.  postalias uses it to check and build alias tables;
 * local uses it to expand what the tables and files say.  man/aliases.5
 * is the reference for the syntax.
 *
 * An aliases file is made of logical lines (dict_text_lines: '#'
 * comments, blank lines, indented continuation lines), each
 *
 *	name: target, target, ...
 *	"name with spaces": target
 *
 * A target list is split at commas outside double quotes.  Each target,
 * trimmed, is one of:
 *
 *	|command          a command for /bin/sh -c
 *	/path/file        a file, appended to (mbox format)
 *	/path/dir/        a Maildir (trailing slash)
 *	:include:/path    more targets, read from that file
 *	\user             user's own mailbox (no alias or .forward lookup)
 *	user, user@domain an address (RFC 5321 form; <...> accepted)
 *
 * A target wholly in double quotes ("|cmd a, b", "john doe") is
 * unquoted first (\" and \\ inside); a quoted text that is not a command,
 * file or include is an address already in internal form (its local
 * part as is). */
#ifndef PETREL_ALIASES_H
#define PETREL_ALIASES_H
#include <stdbool.h>
#include <stddef.h>
#include "str.h"

/* Longest alias name; longer names are an error when building and are
 * never found. */
#define ALIAS_NAME_MAX	256

/* Splits one logical line of an aliases file.  name gets the name,
 * unquoted; *value points into line at the value (trimmed, not empty).
 * Returns 0, or -1 with a reason in why (no file:line prefix). */
int alias_entry_parse(char *line, str_t *name, char **value, str_t *why);

enum alias_kind {
	ALIAS_T_ADDRESS,	/* text: internal form, maybe without @domain */
	ALIAS_T_MAILBOX,	/* \user: text is the user name */
	ALIAS_T_COMMAND,	/* text: the command, without '|' */
	ALIAS_T_FILE,		/* text: absolute path */
	ALIAS_T_MAILDIR,	/* text: absolute path ending in '/' */
	ALIAS_T_INCLUDE,	/* text: absolute path of the :include: file */
};

typedef struct alias_target {
	enum alias_kind kind;
	char *text;
} alias_target_t;

typedef struct alias_list {
	alias_target_t *v;
	size_t n, cap;
} alias_list_t;

#define ALIAS_LIST_INIT { NULL, 0, 0 }

/* Appends the targets of a comma-separated list of len bytes.  Empty
 * elements (",,") are skipped.  Returns 0, or -1 with a reason in why
 * (what was parsed before the bad target stays in out). */
int alias_targets_parse(const char *list, size_t len, alias_list_t *out,
    str_t *why);
void alias_list_free(alias_list_t *l);

/* "address", "mailbox", "command", "file", "maildir", "include". */
const char *alias_kind_name(enum alias_kind k);

#endif
