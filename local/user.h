/* The identities local delivers with (who the users are: luser.h).
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
#include "luser.h"
#include "str.h"

/* True when local can take other identities (its real uid is root). */
bool priv_can_switch(void);
/* Takes uid/gid as effective ids (supplementary groups: gid only).
 * Does nothing without root or for uid 0.  Returns 0, or -1 with err. */
int priv_enter(uid_t uid, gid_t gid, str_t *err);
/* Back to root after priv_enter; a failure is fatal (the process must
 * never go on with the wrong identity). */
void priv_leave(void);

#endif
