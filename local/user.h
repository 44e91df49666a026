/* Local users and the identities local delivers with.
 *
 * Users come from the password database, or, in a private instance with
 * local_mail_root set, from the directories under that root: user NAME
 * exists when local_mail_root/NAME is a directory, which is also the
 * home directory; its owner is the user's identity when local runs as
 * root, local's own identity otherwise.
 *
 * local runs as root and takes a recipient's identity with the effective
 * ids only (priv_enter), so that it can come back (priv_leave) for the
 * next recipient; commands get the identity for good in their own
 * process (command.h).  Started by another user (a private instance)
 * nothing can be switched: priv_enter does nothing and every delivery
 * happens as that user. */
#ifndef PETREL_LOCAL_USER_H
#define PETREL_LOCAL_USER_H
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
 * password database).  1 found (u filled; free with luser_free), 0 no
 * such user, -1 the database could not be read (err). */
int luser_find(const char *mail_root, const char *name, luser_t *u,
    str_t *err);
void luser_free(luser_t *u);
/* Copies src into dst. */
void luser_copy(luser_t *dst, const luser_t *src);

/* True when local can take other identities (its real uid is root). */
bool priv_can_switch(void);
/* Takes uid/gid as effective ids (supplementary groups: gid only).
 * Does nothing without root or for uid 0.  Returns 0, or -1 with err. */
int priv_enter(uid_t uid, gid_t gid, str_t *err);
/* Back to root after priv_enter; a failure is fatal (the process must
 * never go on with the wrong identity). */
void priv_leave(void);

#endif
