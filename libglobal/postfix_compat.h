/* What a Postfix configuration may name that Petrel does not implement,
 * so that Petrel can say so plainly (a warning naming the thing, never
 * a refusal) instead of calling it a typing mistake or failing on it.
 * doc/configuration.md, "Postfix configurations", lists the cases. */
#ifndef PETREL_POSTFIX_COMPAT_H
#define PETREL_POSTFIX_COMPAT_H
#include <stdbool.h>
#include "mastercf.h"
#include "str.h"

/* True when name is a parameter of Postfix (3.7, postfix_params.inc). */
bool postfix_param_known(const char *name);

/* When prog (a master.cf command, a path or a bare name) is a Postfix
 * daemon Petrel does not have, a few words on what it does in Postfix;
 * NULL otherwise. */
const char *postfix_daemon_missing(const char *prog);

/* Leaves out of m the services whose command is such a Postfix daemon
 * (unless a program of that name is installed in daemon_dir and the
 * command names that one: someone's own), with one line a service in
 * warnings: "FILE:LINE: service NAME/TYPE: Postfix's DAEMON (what) is
 * not implemented by Petrel; the service is not started" (or "is not
 * needed by Petrel (why)" for what Petrel does without a service).  Returns how
 * many were left out. */
size_t postfix_mastercf_filter(mastercf_t *m, const char *daemon_dir,
    str_t *warnings);

#endif
