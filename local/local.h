/* Local delivery: what local(8) does for one recipient, as a library
 * (the daemon in local.c reads requests and calls local_deliver for each
 * recipient).  doc/local.md describes the behaviour; in short:
 *
 *   1. a message that already has "Delivered-To: <recipient>" is looping:
 *      5.4.6 bounce;
 *   2. local_recipient_maps (when not empty) must know the local part
 *      (user+ext or user): else 5.1.1 "User unknown in local recipient
 *      table";
 *   3. alias_maps: user+ext, then user; targets are delivered (commands,
 *      files, Maildirs, :include: files) or forwarded through cleanup
 *      (addresses, with a Delivered-To: header and the owner-NAME alias
 *      as sender when there is one);
 *   4. the user (password database, or local_mail_root): unknown ->
 *      luser_relay or 5.1.1;
 *   5. the first of forward_path that exists and is safe (owned by the
 *      user, not group or world writable, a regular file): its targets;
 *   6. the mailbox: mailbox_command, else home_mailbox (Maildir when it
 *      ends in '/', else mbox) in the home directory, else an mbox in
 *      mail_spool_directory.
 *
 * Local parts are compared without case (ASCII); recipient_delimiter
 * splits user+ext.  Every file and command is handled with the identity
 * of whoever controls it (user.h): the recipient for its mailbox and
 * .forward, the owner of the alias table (default_privs when that is
 * root) for alias commands and files, the owner of an :include: file. */
#ifndef PETREL_LOCAL_LOCAL_H
#define PETREL_LOCAL_LOCAL_H
#include <stdbool.h>
#include <stdint.h>
#include "delivery.h"
#include "msg.h"

/* Where a target was found, for allow_mail_to_commands / _files. */
enum {
	LOCAL_CLASS_ALIAS = 1 << 0,
	LOCAL_CLASS_FORWARD = 1 << 1,
	LOCAL_CLASS_INCLUDE = 1 << 2,
};

/* prepend_delivered_header: deliveries that get Delivered-To: (the
 * mailbox always does). */
enum {
	LOCAL_DT_COMMAND = 1 << 0,
	LOCAL_DT_FILE = 1 << 1,
	LOCAL_DT_FORWARD = 1 << 2,
};

/* Most targets one recipient may expand to, and the deepest nesting of
 * :include: files. */
#define LOCAL_EXPANSION_MAX	1000
#define LOCAL_INCLUDE_DEPTH	10

/* The settings (every string malloc'ed; empty strings, not NULL). */
typedef struct local_conf {
	char *alias_maps;
	char *local_recipient_maps;
	char *recipient_delimiter;
	char *home_mailbox;
	char *mail_spool_directory;
	char *mailbox_command;		/* $names expanded at delivery */
	char *forward_path;		/* idem */
	char *luser_relay;		/* idem */
	char *mail_root;		/* local_mail_root */
	char *default_privs;
	char *mydestination;
	char *myorigin;
	char *cleanup_service;		/* "" = cleanup */
	int allow_commands;		/* LOCAL_CLASS_* */
	int allow_files;
	int prepend_delivered;		/* LOCAL_DT_* */
	long command_time_limit;	/* seconds */
	long mailbox_size_limit;	/* bytes, 0 = none */
	long ipc_timeout;		/* seconds, talking to cleanup */
	bool lock_dotlock;
	bool lock_fcntl;
	int lock_wait;			/* seconds for each lock */
	bool owner_request_special;
	bool expand_owner_alias;
} local_conf_t;

/* Fills conf from the loaded configuration (pconfig.h).  Returns 0, or
 * -1 with err for a bad value (an unknown word in allow_mail_to_*...). */
int local_conf_from_config(local_conf_t *conf, str_t *err);
void local_conf_free(local_conf_t *conf);
/* Parses a list of the words alias, forward, include. */
int local_class_parse(const char *value, int *out, str_t *err);

typedef struct local local_t;

/* Takes a copy of conf.  Tables are opened when first needed (a table
 * that cannot be opened defers mail, and is tried again for the next
 * recipient).  NULL with err for a configuration that cannot work
 * (a bad mydestination pattern, ...). */
local_t *local_new(const local_conf_t *conf, str_t *err);
void local_free(local_t *l);

/* Looks at every open hash: table for a rebuilt file now.  The daemon
 * calls it once per delivery request, so that mail that arrives after
 * postalias/postmap finished is delivered with the new table (the tables
 * themselves look at most once a second). */
void local_refresh(local_t *l);

/* The message being delivered. */
typedef struct local_msg {
	const char *queue_id;
	const char *sender;		/* internal form, "" = <> */
	const char *envid;		/* DSN ENVID (decoded) or "" */
	int ret;			/* QF_RET_* */
	lmsg_t *content;
} local_msg_t;

/* Delivers to one recipient.  Returns the DSN action, with st set (the
 * code agrees with the action). */
dlv_action_t local_deliver(local_t *l, const local_msg_t *msg,
    const dlv_rcpt_t *rcpt, lstatus_t *st);

/* Expands $name, ${name}, ${name?text} (text when name is not empty),
 * ${name:text} (text when it is empty) and $$ in tmpl with the
 * variables of a delivery (names[i] = values[i], n of them), appending
 * to out.  With quote, values are quoted for /bin/sh.  Returns true when
 * every $name used directly had a non-empty value (forward_path skips
 * an element for which this is false). */
bool local_expand(const char *tmpl, const char *const *names,
    const char *const *values, size_t n, bool quote, str_t *out);

#endif
