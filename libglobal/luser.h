/* Local users: who "a user" is for local delivery and for smtpd's
 * recipient check (local_rcpt.h), one definition for both.
 *
 * Users come from the password database, or, in a private instance with
 * local_mail_root set, from the directories under that root: user NAME
 * exists when local_mail_root/NAME is a directory, which is also the
 * home directory; its owner is the user's identity when the caller runs
 * as root, the caller's own identity otherwise. */
#ifndef PETREL_LUSER_H
#define PETREL_LUSER_H
#include <stdbool.h>
#include <sys/types.h>
#include "str.h"

typedef struct luser {
	char *name;
	uid_t uid;
	gid_t gid;
	char *home;
	char *shell;
} luser_t;

#define LUSER_INIT { NULL, 0, 0, NULL, NULL }

/* A user name local accepts: 1..255 bytes, printable ASCII without '/',
 * not starting with '.' or '-'. */
bool luser_name_ok(const char *name);

/* Looks name up (in mail_root when it is not NULL or "", else in the
 * password database).  1 found (u filled, unless u is NULL; free with
 * luser_free), 0 no such user, -1 the database could not be read (err). */
int luser_find(const char *mail_root, const char *name, luser_t *u,
    str_t *err);
/* The same with local_mail_root opened beforehand (root_fd, a directory
 * descriptor, or -1 for the path): what a chrooted process opened before
 * its chroot still works in the jail. */
int luser_find_at(int root_fd, const char *mail_root, const char *name,
    luser_t *u, str_t *err);
void luser_free(luser_t *u);
/* Copies src into dst. */
void luser_copy(luser_t *dst, const luser_t *src);

#endif
