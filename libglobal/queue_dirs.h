/* The queue directory tree: which subdirectories exist, their owners and
 * modes, and a check that creates what is missing and repairs what is
 * wrong ("petrel check").
 *
 *   maildrop  mail_owner:setgid_group 1730  (postdrop drops files in)
 *   public    mail_owner:setgid_group 0710  (sockets for set-gid tools)
 *   pid       master's user           0755  (master.pid; written by master)
 *   private, incoming, active, deferred, hold, corrupt, defer, bounce,
 *   trace, saved: mail_owner 0700
 *
 * In a private instance (not root) every directory belongs to the
 * invoking user and that user's group. */
#ifndef PETREL_QUEUE_DIRS_H
#define PETREL_QUEUE_DIRS_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum queue_dir_owner {
	QD_MAIL_OWNER,		/* mail_owner */
	QD_MASTER,		/* the user master runs as (root) */
};

typedef struct queue_dir_spec {
	const char *name;
	mode_t mode;
	enum queue_dir_owner owner;
	bool setgid_group;	/* group is setgid_group, not the owner's */
} queue_dir_spec_t;

/* The table above, in a fixed order. */
const queue_dir_spec_t *queue_dir_table(size_t *count);

typedef struct queue_owners {
	uid_t mail_uid;
	gid_t mail_gid;
	uid_t master_uid;
	gid_t master_gid;
	gid_t setgid_gid;
} queue_owners_t;

/* Checks queue_dir (created with its parents when missing, owned by
 * master's user, mode 0755) and every directory of the table: missing
 * ones are created, a wrong owner, group or mode is logged as a warning
 * and, with fix, corrected.  A symbolic link or a non-directory where a
 * directory belongs is an error (never followed or replaced).  Returns
 * the number of problems left (0: all good or all fixed), or -1 if
 * queue_dir itself cannot be used. */
int queue_dirs_check(const char *queue_dir, const queue_owners_t *o, bool fix);

#endif
