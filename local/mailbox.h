/* Writing a message into an mbox file or a Maildir, durably, with the
 * status a delivery reports.  The caller has already taken the identity
 * the files are to be written with (user.h); these functions only do
 * file work with the current effective ids.
 *
 * mbox (mbox_deliver): the file is opened without following a symbolic
 * link and must be a regular file with one link; a missing file is
 * created (mode 0600, and given to create_uid/create_gid when they are
 * set).  It is locked (a PATH.lock dot-lock file and/or an fcntl lock,
 * each tried for at most lock_wait seconds), the message is appended in
 * mboxrd form (From line, Return-Path:, Delivered-To:, ">From " quoting,
 * a blank line at the end) and fsync'ed.  Any failure after the first
 * byte truncates the file back to its size before the delivery, so a
 * reader never sees part of a message.
 *
 * Maildir (maildir_deliver): DIR/tmp, DIR/new and DIR/cur are created when
 * missing (0700); the message goes to tmp/UNIQUE, is fsync'ed, linked (or
 * renamed) to new/UNIQUE, and delivery succeeds once new/ has been
 * fsync'ed after that.  A failure removes the tmp file.
 *
 * Status: 2.0.0 "delivered to mailbox"/"delivered to maildir" (the
 * caller may change the text); errors as errno says: ENOSPC/EDQUOT
 * 4.2.2 "mailbox full" (deferred: space may come back), EFBIG or
 * mailbox_size_limit 5.2.2 (bounced), anything else 4.2.0 (deferred,
 * e.g. a read-only directory); a message that cannot be read 4.3.0. */
#ifndef PETREL_LOCAL_MAILBOX_H
#define PETREL_LOCAL_MAILBOX_H
#include <stdbool.h>
#include <sys/types.h>
#include "msg.h"

typedef struct mbox_opts {
	bool dotlock;		/* PATH.lock */
	bool fcntl_lock;
	int lock_wait;		/* seconds to wait for each lock */
	long size_limit;	/* bytes the file may reach; 0 = no limit */
	uid_t create_uid;	/* owner of a created file; (uid_t)-1: as is */
	gid_t create_gid;
	/* The file must belong to this uid ((uid_t)-1: any owner). */
	uid_t owner;
} mbox_opts_t;

#define MBOX_OPTS_INIT { true, true, 10, 0, (uid_t)-1, (gid_t)-1, (uid_t)-1 }

int mbox_deliver(const char *path, const mbox_opts_t *o, lmsg_t *m,
    const lmsg_copy_t *copy, lstatus_t *st);

/* dir is the Maildir (with or without a trailing '/'); size_limit as
 * for mbox, for the one message file. */
int maildir_deliver(const char *dir, long size_limit, lmsg_t *m,
    const lmsg_copy_t *copy, lstatus_t *st);

/* Testing hook: fsync(2) calls made by deliveries of this process (the
 * message files, and new/). */
extern unsigned long mailbox_fsync_count;

/* The status for a failed write or open of a mailbox: errno -> code. */
void mailbox_error_status(lstatus_t *st, int err, const char *what,
    const char *path);

#endif
