/* "petrel check" (petrel_check.c). */
#ifndef PETREL_PETREL_CHECK_H
#define PETREL_PETREL_CHECK_H

/* Verifies the configuration files, the accounts (as root: creates a
 * missing mail_owner or setgid_group) and the queue directory tree
 * (created and repaired).  Returns the number of problems left. */
int petrel_check(const char *config_dir);

#endif
