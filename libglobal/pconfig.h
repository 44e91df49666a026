/* The process-wide configuration: main.cf, master.cf -o overrides, and
 * typed access to every parameter of params.h.
 *
 * (The header is pconfig.h, not config.h: the build's generated config.h
 * with DEF_CONFIG_DIR etc. lives at the top of the tree and a second
 * config.h here would shadow it for files in libglobal/.)
 *
 * Typical daemon start-up:
 *
 *	if (pconfig_load(dir) < 0)
 *		log_fatal("%s", pconfig_errors()); // every error, file:line
 *	... apply master.cf -o with pconfig_override() ...
 *	long n = pconfig_get_int("smtpd_recipient_limit");
 *	long w = pconfig_get_int_tr("smtp", "destination_concurrency_limit");
 *
 * Values are read with $name / ${name} expanded (see doc/configuration.md).
 * Strings returned by the getters stay valid until the configuration
 * changes (pconfig_load, pconfig_override, pconfig_reset).  Asking for a name
 * the table does not know is a programming error (log_panic). */
#ifndef PETREL_PCONFIG_H
#define PETREL_PCONFIG_H
#include <stdbool.h>
#include <stddef.h>
#include "params.h"
#include "str.h"

/* Resets to defaults, then reads DIR/main.cf.  Service names for the
 * TRANSPORT_X check come from DIR/master.cf when it is readable.
 * config_directory becomes dir.  Returns 0, or -1 when main.cf cannot be
 * read or has errors: pconfig_errors() then holds one line per error,
 * "FILE:LINE: message".  Warnings (unknown parameters, $names that
 * expand to nothing) are logged with log_warning() and kept in
 * pconfig_warnings().  After an error the configuration holds every good
 * line, so a tool can still show it; a daemon must refuse to start. */
int pconfig_load(const char *dir);

/* Like pconfig_load, but parses text as if it were the file named
 * filename, with no master.cf (tests, tools). */
int pconfig_load_text(const char *text, const char *filename);

/* Text of the errors/warnings of the last load (empty if none); lines
 * end with '\n'. */
const char *pconfig_errors(void);
const char *pconfig_warnings(void);

/* Commands that users run (sendmail, postdrop, mailq): warnings are not
 * logged by pconfig_load; the command logs them with
 * pconfig_log_warnings() once its log goes to the mail log only, so that
 * an unknown parameter never reaches a user's (or cron's) stderr. */
void pconfig_defer_warnings(void);
void pconfig_log_warnings(void);

/* The main.cf path of the last pconfig_load (NULL if none). */
const char *pconfig_file(void);

/* Back to the built-in defaults. */
void pconfig_reset(void);

/* Sets name = value on top of main.cf (master.cf -o, command options).
 * origin names the source for messages, e.g. "master.cf:12" or NULL.
 * A bad name or a bad typed value fails (-1, the message in err, the old
 * value kept); an unknown name only warns. */
int pconfig_override(const char *name, const char *value, const char *origin,
    str_t *err);

/* Typed getters.  Time is in seconds, size in bytes. */
const char *pconfig_get_str(const char *name);
long pconfig_get_int(const char *name);
bool pconfig_get_bool(const char *name);
long pconfig_get_time(const char *name);
long pconfig_get_size(const char *name);

/* Per-transport getters: name is the suffix X of a per-transport
 * parameter ("destination_concurrency_limit", "delivery_slot_cost",
 * "initial_destination_concurrency"); the value is TRANSPORT_X if that
 * is set (or is a parameter of its own, like
 * local_destination_recipient_limit), else default_X (or X). */
const char *pconfig_get_str_tr(const char *transport, const char *name);
long pconfig_get_int_tr(const char *transport, const char *name);
bool pconfig_get_bool_tr(const char *transport, const char *name);
long pconfig_get_time_tr(const char *transport, const char *name);
long pconfig_get_size_tr(const char *transport, const char *name);

/* The value as written (no expansion); NULL for an unknown name. */
const char *pconfig_get_raw(const char *name);

/* Expands $name, ${name}, ${name?text}, ${name:text} and $$ in text,
 * appending to out.  Returns 0, or -1 on a loop (out has what could be
 * expanded). */
int pconfig_expand(const char *text, str_t *out);

/* Where a value comes from. */
enum pconfig_origin {
	PCONFIG_DEFAULT,		/* the table */
	PCONFIG_FILE,		/* main.cf */
	PCONFIG_OVERRIDE,	/* pconfig_override */
	PCONFIG_RUNTIME,	/* set by the program (config_directory) */
};

typedef struct pconfig_item {
	const char *name;
	const char *value;	/* effective value as written, unexpanded */
	const char *defval;	/* default as written ("" if none) */
	enum pconfig_origin origin;
	const char *file;	/* PCONFIG_FILE: file and line */
	int line;
	const param_def_t *def;	/* type information; NULL if unknown */
} pconfig_item_t;

/* Describes one parameter: a table name, another name of one (the bare
 * X of default_X; item->name is then the table name), a TRANSPORT_X
 * name, or any name set in main.cf.  False for an unknown name. */
bool pconfig_item(const char *name, pconfig_item_t *item);

/* Every table parameter plus every other name that has a value, sorted
 * by name.  The array is malloc'ed (free it); its strings belong to the
 * configuration. */
pconfig_item_t *pconfig_list(size_t *count);

#endif
