/* The chroot jail of chrooted daemons: queue_directory, plus copies of the
 * few system files the C library opens after the chroot (time zone,
 * services, resolver configuration, hosts, passwd, ...).  master and
 * `petrel check` keep the copies current; doc/master.md, "The jail". */
#ifndef PETREL_JAIL_H
#define PETREL_JAIL_H
#include <stdbool.h>
#include "mastercf.h"
#include "str.h"

/* True when some service of mcf is chrooted. */
bool jail_wanted(const mastercf_t *mcf);

/* Copies every file of spec (the chroot_files parameter: entries
 * "/path", or "/source=/path", separated by commas or white space) from
 * the system to qdir/path, where it differs.  Missing sources are
 * skipped.  One log line names the files that changed.  Returns the
 * number of entries that could not be handled (each logged), 0 when all
 * went well; a malformed spec is one problem per bad entry. */
int jail_refresh(const char *qdir, const char *spec);

#endif
