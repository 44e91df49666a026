/* master.cf: the services master runs.
 *
 * One entry a logical line (a line starting with white space continues
 * the previous one; blank lines and lines starting with '#' are
 * skipped):
 *
 *   service type private unpriv chroot wakeup maxproc command [args...]
 *
 * type is inet, unix, unix-dgram, fifo or pass; for inet the service is
 * [host:]port (host may be [ipv6]).  private/unpriv/chroot are y or n;
 * wakeup is seconds, optionally followed by '?' (wake only a service
 * that has been used); maxproc is a count (0 = no limit).  '-' means
 * the default (private y, n for inet; unpriv y; chroot n; wakeup 0 =
 * never; maxproc = default_process_limit).  Arguments "-o name=value"
 * or "-o { name = value with spaces }" override main.cf for that
 * service; "{ text }" is one argument that may hold white space. */
#ifndef PETREL_MASTERCF_H
#define PETREL_MASTERCF_H
#include <stdbool.h>
#include <stddef.h>
#include "str.h"

typedef enum {
	MCF_INET, MCF_UNIX, MCF_UNIX_DGRAM, MCF_FIFO, MCF_PASS
} mastercf_type_t;

typedef struct mastercf_entry {
	char *service;		/* first column as written */
	char *host;		/* inet: host part ("" = inet_interfaces); else NULL */
	char *port;		/* inet: port (number or service name); else NULL */
	mastercf_type_t type;
	bool private_svc;	/* resolved y/n */
	bool unpriv;
	bool chroot;
	int wakeup;		/* seconds, 0 = none */
	bool wakeup_if_used;	/* the '?' suffix */
	int maxproc;		/* -1 = default_process_limit, 0 = no limit */
	char *column[7];	/* service..maxproc as written */
	int argc;		/* command and arguments; argv[0] = command */
	char **argv;		/* "-o" and "name=value" as separate items */
	int noverride;		/* the -o settings, in order */
	char **override_name;
	char **override_value;
	char *file;
	int line;
} mastercf_entry_t;

typedef struct mastercf {
	mastercf_entry_t **entries;
	size_t count;
} mastercf_t;

/* Parses text as file filename.  Every bad line appends one line
 * "FILE:LINE: message\n" to errors and is left out; the good entries
 * are returned (never NULL). */
mastercf_t *mastercf_parse(const char *text, const char *filename, str_t *errors);

/* Reads and parses path.  NULL (and a message in errors) when the file
 * cannot be read. */
mastercf_t *mastercf_load(const char *path, str_t *errors);

void mastercf_free(mastercf_t *m);
/* One entry taken out of a mastercf_t (the caller fixes entries/count). */
void mastercf_entry_free(mastercf_entry_t *e);

/* The entry for service and type (type NULL: the first with that
 * service name), or NULL. */
const mastercf_entry_t *mastercf_find(const mastercf_t *m, const char *service,
    const char *type);

/* Where to send triggers to service: reads config_dir/master.cf and
 * takes its first entry named service whose type takes triggers (unix,
 * fifo, unix-dgram).  Returns 1 with the entry's local path, relative
 * to queue_directory ("private/qmgr"), in out; 0 if master.cf has no
 * such entry; -1 if master.cf cannot be read or parsed, with
 * mastercf_load()'s lines in errors (errors may be NULL). */
int mastercf_trigger_path(const char *config_dir, const char *service,
    str_t *out, str_t *errors);

const char *mastercf_type_name(mastercf_type_t type);
bool mastercf_type_parse(const char *name, mastercf_type_t *type);

/* One normalised line (no newline): aligned columns, then the command
 * and its arguments, "{ }" around arguments with white space. */
void mastercf_format(const mastercf_entry_t *e, str_t *out);

/* Applies the entry's -o settings with pconfig_override().  -1 with the
 * first error in err ("FILE:LINE: ..."). */
int mastercf_apply_overrides(const mastercf_entry_t *e, str_t *err);

/* maxproc with '-' resolved to default_process_limit. */
int mastercf_maxproc(const mastercf_entry_t *e);

#endif
