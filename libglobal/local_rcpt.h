/* Local recipients: the one rule, shared by smtpd (RCPT TO) and local
 * (delivery), for which addresses in a local domain exist, so that
 * smtpd accepts exactly the local recipients local would deliver and
 * refuses the rest (doc/local.md, "Known recipients").
 *
 * The rule, for the local part LOCAL = USER[+EXT] of an address in a
 * local domain DOMAIN (compared in lower case):
 *   - local_recipient_maps empty: every local part exists;
 *   - else it exists when one entry of local_recipient_maps knows it:
 *       unix:passwd.byname  USER is a user of luser.h (the password
 *                           database, or a directory under
 *                           local_mail_root in a private instance);
 *       any other table     has one of LOCAL@DOMAIN, USER@DOMAIN,
 *                           LOCAL, USER (in that order; the USER keys
 *                           only when there is an extension).
 *   A table that cannot be read is a temporary failure, unless another
 *   entry knows the recipient.
 *
 * The default tables: in a private instance (the process that reads the
 * configuration is not root, and neither is the owner of
 * queue_directory, which is the user master runs as: smtpd -S run by a
 * user of a system install is no private instance) with alias_maps not
 * set in main.cf, the
 * aliases are $config_directory/aliases, not the system's /etc/aliases,
 * and local_recipient_maps, when not set either, follows. */
#ifndef PETREL_LOCAL_RCPT_H
#define PETREL_LOCAL_RCPT_H
#include <stdbool.h>
#include "str.h"

typedef struct local_rcpt local_rcpt_t;

/* The effective alias_maps and local_recipient_maps of the loaded
 * configuration, with the private-instance rule above. */
void local_rcpt_maps_from_config(str_t *alias_maps, str_t *recipient_maps);

/* A checker for the table list maps (local_recipient_maps), users under
 * mail_root (local_mail_root, NULL or "" for the password database) and
 * recipient_delimiter delims.  Tables are opened when first used. */
local_rcpt_t *local_rcpt_new(const char *maps, const char *mail_root,
    const char *delims);
/* The same from the loaded configuration. */
local_rcpt_t *local_rcpt_from_config(void);
void local_rcpt_free(local_rcpt_t *lr);

/* False when local_recipient_maps is empty (everyone exists). */
bool local_rcpt_enabled(const local_rcpt_t *lr);
/* When the list has unix:passwd.byname: the file it needs, /etc/passwd
 * or local_mail_root; NULL otherwise, and for a local_mail_root that
 * local_rcpt_new could open (it keeps the directory open, so a chrooted
 * process needs nothing of it in the jail). */
const char *local_rcpt_user_source(const local_rcpt_t *lr);
/* From now on the unix:passwd.byname entry answers "temporary failure,
 * why" (smtpd in a chroot jail without that file). */
void local_rcpt_passwd_broken(local_rcpt_t *lr, const char *why);

/* Opens every table now (before a chroot); for each one that cannot be
 * opened, err gets "spec: reason" (the last one) and the count of such
 * tables is returned (they are tried again when used). */
int local_rcpt_open(local_rcpt_t *lr, str_t *err);
/* Asks every open table whether its file was rebuilt (dict_refresh). */
void local_rcpt_refresh(local_rcpt_t *lr);

/* Does local part local (USER[+EXT]) exist in domain (NULL: none)?
 * 1 yes, 0 no, -1 a table could not be read (err). */
int local_rcpt_known(local_rcpt_t *lr, const char *local, const char *domain,
    str_t *err);

#endif
