/* The table of every configuration parameter Petrel knows.
 *
 * One entry per parameter: name, type, default (text, which may refer to
 * other parameters as $name), allowed range or values, and a one-line
 * description (postconf -T and man/petrel.5 are made from it).  Adding a
 * parameter means adding one line to the table in params.c; main.cf
 * parsing, postconf and the typed getters of config.h pick it up.
 *
 * Per-transport parameters: an entry default_X with PARAM_F_TRANSPORT
 * (e.g. default_destination_concurrency_limit) can be overridden for one
 * master.cf service with TRANSPORT_X (smtp_destination_concurrency_limit),
 * which falls back to default_X.  An entry X without the default_ prefix
 * may carry the flag too (initial_destination_concurrency): TRANSPORT_X
 * then falls back to X.  The bare name X of a default_X entry is accepted
 * as another name for default_X (the scheduler documents use it). */
#ifndef PETREL_PARAMS_H
#define PETREL_PARAMS_H
#include <stdbool.h>
#include <stddef.h>
#include "str.h"

enum param_type {
	PARAM_STR,		/* text, $name expanded when read */
	PARAM_INT,		/* decimal integer within [min, max] */
	PARAM_BOOL,		/* yes or no */
	PARAM_TIME,		/* number with unit s/m/h/d/w; read as seconds */
	PARAM_SIZE,		/* bytes */
};

enum {
	PARAM_F_TRANSPORT = 1,	/* TRANSPORT_X overrides exist (see above) */
	PARAM_F_BUILD = 2,	/* default chosen by ./configure (config.h) */
	PARAM_F_COMPUTED = 4,	/* default computed at run time */
	PARAM_F_RAW = 8,	/* never $-expanded by the config layer: the
				 * program expands it with its own variables
				 * ($user, $home...) at use */
};

typedef struct param_def {
	const char *name;
	enum param_type type;
	const char *defval;	/* default text; NULL when computed */
	long min, max;		/* INT, TIME (seconds), SIZE range */
	char unit;		/* TIME: unit of a bare number */
	int flags;
	const char *choices;	/* STR: allowed values, blank-separated */
	/* STR: extra check of the (expanded) value; fills why. */
	bool (*check)(const char *value, str_t *why);
	/* PARAM_F_COMPUTED: the default (a string that stays valid). */
	const char *(*compute)(void);
	/* For the reference: what the default is when it is not a constant
	 * (computed or from configure), e.g. "the system's host name". */
	const char *defdesc;
	const char *desc;
} param_def_t;

/* The whole table, in source order. */
const param_def_t *param_table(size_t *count);

/* The entry named exactly name, or NULL. */
const param_def_t *param_find(const char *name);

/* The entry for name, also accepting the bare X of a default_X entry
 * (returns the default_X entry).  NULL if neither. */
const param_def_t *param_lookup(const char *name);

/* For a per-transport suffix X ("destination_concurrency_limit"), the
 * entry TRANSPORT_X falls back to (default_X, or X itself); NULL if X is
 * not a per-transport parameter. */
const param_def_t *param_transport_default(const char *suffix);

/* The suffix X of a per-transport entry (name without "default_"). */
const char *param_transport_suffix(const param_def_t *def);

/* If name looks like SERVICE_X for a per-transport suffix X (the longest
 * matching X wins), returns the default entry and sets *service_len to
 * the length of SERVICE.  Exact table names are not special-cased here:
 * callers look those up first. */
const param_def_t *param_split_transport(const char *name, size_t *service_len);

/* The default text of def (computing it if need be). */
const char *param_default(const param_def_t *def);

/* A parameter name: letters, digits, '_', '-', '.', starting with a
 * letter or digit (service names in TRANSPORT_X may have '-' and '.'). */
bool param_name_ok(const char *name);

/* Value parsers: the whole string must match; false on a syntax error or
 * overflow.  Time: digits with an optional unit s, m, h, d or w (a bare
 * number is in unit); result in seconds.  Bool: yes/no/true/false, any
 * case.  Size: bytes, digits only. */
bool param_parse_int(const char *value, long *out);
bool param_parse_time(const char *value, char unit, long *out);
bool param_parse_bool(const char *value, bool *out);
bool param_parse_size(const char *value, long *out);

/* Checks an (expanded) value against def's type, range and choices.
 * name is the parameter as written (maybe smtp_X for default_X).  On
 * failure why gets e.g. "bad time value 'xyz' for parameter
 * queue_run_delay". */
bool param_check_value(const param_def_t *def, const char *name,
    const char *value, str_t *why);

/* Names of the types, for messages and postconf -T. */
const char *param_type_name(enum param_type type);

/* The host name default: gethostname(), made fully qualified through the
 * resolver (getaddrinfo AI_CANONNAME) when it is not already. */
const char *param_system_hostname(void);

#endif
