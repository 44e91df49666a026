/* local(8) internals shared by deliver.c (one recipient's delivery:
 * mailbox, file, command, forwarding, the result) and expand.c (what a
 * recipient expands to: alias_maps, .forward, :include: and their
 * target lists).  Not part of the library's interface (local.h).
 *
 * Every deliver_* and expand_* function records what it did in the
 * dstate_t with deliver_result/deliver_fail; none returns an error of
 * its own.  The worst outcome wins: the first deferral, else the first
 * bounce (local.h, "Result"). */
#ifndef PETREL_LOCAL_DELIVER_H
#define PETREL_LOCAL_DELIVER_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "aliases.h"
#include "htable.h"
#include "local.h"
#include "luser.h"
#include "maps.h"
#include "str.h"

/* What local_new made of the settings (conf.c). */
struct local {
	local_conf_t conf;
	maps_t *aliases;	/* alias_maps, opened when first used */
	struct local_rcpt *recipients;	/* local_recipient_maps */
	struct addr_domlist *mydest;
};

/* An identity deliveries run with. */
typedef struct ident {
	uid_t uid;
	gid_t gid;
	const char *home;	/* working directory of commands */
	const char *shell;
	const char *name;	/* user name for the environment */
} ident_t;

typedef struct dstate {
	local_t *l;
	const local_msg_t *msg;
	const dlv_rcpt_t *rcpt;
	/* The recipient, split: local part (lower case), user, extension,
	 * domain (may be NULL). */
	char *local;
	char *user;
	char *ext;
	char delim[2];
	char *domain;
	/* Results. */
	lstatus_t worst;	/* first defer, else first bounce */
	str_t ok_text;		/* successes, joined */
	unsigned nok;
	bool expanded;		/* an alias or .forward was used */
	/* Addresses to forward, and every target seen. */
	alias_list_t fwd;
	htable_t *seen;
	size_t count;
	char *fwd_sender;	/* owner-NAME, or NULL: the message's sender */
	bool mailbox_done;	/* the user's own mailbox was delivered to */
} dstate_t;

/* ---- deliver.c ---- */

/* Records one outcome. */
void deliver_result(dstate_t *s, const lstatus_t *st);
void deliver_fail(dstate_t *s, const char *dsn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True once for each distinct target (kind + text, case folded for
 * addresses); false for a repeat. */
bool deliver_first_time(dstate_t *s, const char *kind, const char *text);
/* True (and a 5.3.4 failure, once) past LOCAL_EXPANSION_MAX targets. */
bool deliver_too_many(dstate_t *s);
/* The variables of forward_path, mailbox_command and luser_relay (at
 * most 16): their count. */
size_t deliver_vars(dstate_t *s, const luser_t *u, const char **names,
    const char **values);
/* Takes id's effective ids (priv_enter); false with a 4.3.0 failure. */
bool deliver_enter(dstate_t *s, const ident_t *id);
void deliver_command(dstate_t *s, const ident_t *id, const char *cmd);
void deliver_file(dstate_t *s, const ident_t *id, const char *path,
    bool maildir);
/* The user's .forward (when forward) or else mailbox. */
void deliver_user(dstate_t *s, const char *name, bool forward);
/* Adds an address to the copy forwarded through cleanup. */
void deliver_add_forward(dstate_t *s, const char *addr);

/* ---- expand.c ---- */

/* alias_maps: true when an alias answered (or the tables failed). */
bool expand_alias(dstate_t *s);
/* The user's .forward: true when one was used (or failed in a way that
 * defers), false when there is none to use. */
bool expand_forward(dstate_t *s, const luser_t *u);

#endif
