/* Group commit of directory fsyncs, shared by processes that rename files
 * into the same directory at the same time.
 *
 * A rename is durable once an fsync of its directory that began after the
 * rename has succeeded; that fsync may be another process's.  Writers
 * find out through a state file of slots (one per directory, chosen by
 * device and inode): a writer takes a ticket after its rename, and either
 * sees that an fsync covering its ticket has completed, or fsyncs the
 * directory itself and publishes what its fsync covered.  fcntl locks
 * serialise the slot and choose the one process that fsyncs; they die
 * with their process.  The design and the argument that no writer returns
 * before its own rename is durable are in doc/queue-file.md §4.
 *
 * The state file must belong to the effective user, be writable by
 * nobody else and have one link; when it cannot be used every commit
 * fsyncs the directory itself (one warning per handle).  Processes are
 * assumed single-threaded, with one handle per state file: fcntl locks
 * do not exclude threads, and closing any descriptor of the file drops
 * all of the process's locks on it.
 *
 * A commit never waits for other processes for long: after 50 ms of
 * waiting in all (a stopped or hung holder of a lock) it goes on without
 * them and fsyncs the directory itself, and it then only takes locks
 * that are free at once until it sees that the holder has moved on.  A
 * wait is ended by a POSIX timer that sends the real-time signal
 * SIGRTMIN + 2; the first wait that needs it installs a handler for it
 * that does nothing (no SA_RESTART).  The process must leave that signal
 * alone; it is unblocked during the wait whatever the caller's mask. */
#ifndef PETREL_DIRSYNC_H
#define PETREL_DIRSYNC_H
#include <stdint.h>
#include <sys/types.h>

typedef struct dirsync dirsync_t;

#define DIRSYNC_SLOTS		1024
#define DIRSYNC_SLOT_SIZE	64

/* A handle for the state file at path.  Nothing is opened yet: the file
 * is opened (created, mode 0600) by dirsync_prepare or by the first
 * commit, and never again after a failure (so a process that later
 * changes its effective user cannot create it under another owner). */
dirsync_t *dirsync_new(const char *path);
/* Opens the state file now: 0, or -1 when it cannot be used (logged). */
int dirsync_prepare(dirsync_t *ds);
/* Optional, just before fsyncing a file that will then be renamed into
 * dir: marks this process as about to rename into dir, so that a writer
 * that would fsync dir now may first wait for that rename and make one
 * fsync for both (without it, two writers settle into taking turns and
 * never share).  The mark is dropped by dirsync_commit or dirsync_cancel:
 * hold it only across that fsync and the rename. */
void dirsync_begin(dirsync_t *ds, const char *dir);
void dirsync_cancel(dirsync_t *ds);
/* To be called after a rename (or link) into dir has completed: returns
 * 0 once it is durable, or -1 with errno (the directory cannot be
 * opened, or an fsync that had to cover the rename failed).  With ds
 * NULL, or an unusable state file, it is a plain fsync of dir. */
int dirsync_commit(dirsync_t *ds, const char *dir);
void dirsync_free(dirsync_t *ds);

/* ---- For tests and tools ---- */

/* Directory fsyncs made by commits in this process. */
extern unsigned long dirsync_fsync_count;

/* Called at each step of a commit.  For DIRSYNC_EV_FSYNC, returning -1
 * makes the fsync fail with the errno the hook set, without calling
 * fsync(2). */
enum dirsync_event {
	DIRSYNC_EV_TICKET_LOCKED,	/* holding the record lock for a ticket */
	DIRSYNC_EV_TICKET,		/* value: the ticket taken */
	DIRSYNC_EV_FSYNC,		/* about to fsync; value: the renames it
					 * covers (R), 0 outside the protocol */
	DIRSYNC_EV_FSYNC_DONE,		/* value: 0 or the errno */
	DIRSYNC_EV_COVERED,		/* durable by another's fsync; value: S */
	DIRSYNC_EV_PAIR_WAIT,		/* waiting for a writer about to rename */
	DIRSYNC_EV_WAIT,		/* a lock is busy: about to wait for it;
					 * value: an enum dirsync_wait */
	DIRSYNC_EV_GAVE_UP,		/* the commit's bound is spent: it goes
					 * on without that lock (value: which) */
};
extern int (*dirsync_hook)(enum dirsync_event ev, uint64_t value);

/* What a commit can wait for (held by another process). */
enum dirsync_wait {
	DIRSYNC_WAIT_TICKET = 1,	/* the record lock, to take a ticket */
	DIRSYNC_WAIT_PAIR,		/* an in-flight writer's mark */
	DIRSYNC_WAIT_SYNC,		/* both locks: another writer fsyncs */
	DIRSYNC_WAIT_PUBLISH,		/* the record lock, to store S or F */
};

/* How long, in milliseconds, one commit waits for other processes in
 * all (50).  Tests that hold a writer still on purpose while others
 * queue behind it raise it, so that a slow machine cannot end their
 * waits early; nothing else should change it. */
extern unsigned dirsync_wait_ms;

typedef struct dirsync_counters {
	uint64_t renamed, synced, failed;
} dirsync_counters_t;

/* The slot a directory uses. */
unsigned dirsync_slot_index(dev_t dev, ino_t ino);
/* The counters of dir's slot: 1 (filled in), 0 when the slot is free,
 * damaged or another directory's, -1 on error (errno). */
int dirsync_counters_get(dirsync_t *ds, const char *dir, dirsync_counters_t *c);
/* Writes dir's slot with these counters (not checked) and a right check
 * value: 0 or -1 (errno). */
int dirsync_counters_set(dirsync_t *ds, const char *dir,
    const dirsync_counters_t *c);

#endif
