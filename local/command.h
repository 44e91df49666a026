/* Delivery to a command: "|command" targets of aliases, .forward and
 * :include: files, and mailbox_command.
 *
 * The command runs as /bin/sh -c COMMAND in a new session, with the
 * message (as lmsg_copy writes it) on its standard input and its standard
 * output and error captured (the first 1000 bytes go into the status
 * text).  Started as root, the child takes uid/gid for good (setgroups,
 * setgid, setuid, checked) before it runs anything.  The environment is
 * exactly env (never local's own); the working directory is cwd when the
 * user may enter it, else "/"; umask 077.  After time_limit seconds the
 * whole process group is killed.
 *
 * Status from the exit: 0 is success (2.0.0); sysexits(3) codes give
 * their meaning: EX_TEMPFAIL, EX_OSERR, EX_IOERR defer (4.3.0); EX_NOUSER
 * 5.1.1, EX_NOHOST 5.1.2, EX_NOPERM 5.7.1, EX_CONFIG 5.3.5, EX_DATAERR
 * 5.6.0, EX_PROTOCOL 5.5.0, others bounce with 5.3.0, as does a command
 * killed by a signal or over its time limit.  A command that cannot be
 * started at all (fork or pipe failure) defers with 4.3.0. */
#ifndef PETREL_LOCAL_COMMAND_H
#define PETREL_LOCAL_COMMAND_H
#include <sys/types.h>
#include "msg.h"

typedef struct command_opts {
	const char *command;
	uid_t uid;		/* taken by the child when local runs as root */
	gid_t gid;
	const char *cwd;	/* NULL: "/" */
	char *const *env;	/* NULL-terminated "NAME=value" */
	long time_limit;	/* seconds; 0 = none */
} command_opts_t;

/* Runs the command; returns 0 on success, -1 with st set otherwise. */
int command_deliver(const command_opts_t *o, lmsg_t *m,
    const lmsg_copy_t *copy, lstatus_t *st);

/* The status for an exit status (wait(2) form). */
void command_exit_status(lstatus_t *st, int wstatus, const char *what,
    const char *output);

#endif
