/* Group commit of directory fsyncs (see dirsync.h; the design and the
 * crash argument are in doc/queue-file.md §4). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "dirsync.h"
#include "file.h"
#include "log.h"
#include "mem.h"

unsigned long dirsync_fsync_count;
int (*dirsync_hook)(enum dirsync_event ev, uint64_t value);

/* Counters stay below this; a slot that would reach it starts over. */
#define COUNTER_LIMIT	((uint64_t)1 << 63)

static const char magic[8] = "PDIRSYN1";

/* A slot, as stored: eight little-endian 64-bit words. */
enum { W_MAGIC, W_DEV, W_INO, W_RENAMED, W_SYNCED, W_FAILED, W_SPARE, W_CHECK,
	W_COUNT };

typedef struct slot {
	uint64_t dev, ino, renamed, synced, failed;
} slot_t;

enum slot_state { SLOT_MINE, SLOT_FREE, SLOT_OTHER, SLOT_DAMAGED, SLOT_ERROR };

struct dirsync {
	char *path;
	int sfd;		/* the state file, -1 when not open */
	bool tried;		/* an open was attempted */
	bool unusable;		/* every commit fsyncs on its own */
	bool warned;		/* an I/O problem was logged */
	/* The directory of the last commit. */
	char *dir;
	int dfd;
	dev_t ddev;
	ino_t dino;
	off_t mark;		/* the byte of our in-flight mark, or -1 */
	/* Bounded waits (below).  This commit: */
	unsigned slot;		/* its slot */
	int64_t waited;		/* ns it has waited for other processes */
	bool seen;		/* it has read the slot, */
	uint64_t seen_s;	/* and S was this */
	bool timed_out;		/* the last wait ran into the deadline */
	/* After a wait was cut short: no waiting in that slot until its S
	 * is seen to change (someone got the sync lock since). */
	bool holdoff;
	bool holdoff_known;	/* holdoff_s is known (else: any S will do) */
	unsigned holdoff_slot;
	uint64_t holdoff_s;
	/* The last in-flight mark waited for in vain, and its holder. */
	off_t cut_mark;
	pid_t cut_pid;
};

static int hook(enum dirsync_event ev, uint64_t value)
{
	return dirsync_hook ? dirsync_hook(ev, value) : 0;
}

/* ---- The slot format ---- */

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* FNV-1a, 64 bits, over the words before the check. */
static uint64_t check_of(const unsigned char *b)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < W_CHECK * 8; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

unsigned dirsync_slot_index(dev_t dev, ino_t ino)
{
	uint64_t h = (uint64_t)dev * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ino;

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 29;
	return (unsigned)(h % DIRSYNC_SLOTS);
}

static off_t slot_offset(unsigned k)
{
	return (off_t)k * DIRSYNC_SLOT_SIZE;
}

/* Reads slot k; why says what is wrong with a damaged one. */
static enum slot_state slot_read(dirsync_t *ds, unsigned k, slot_t *s,
    const char **why)
{
	unsigned char b[DIRSYNC_SLOT_SIZE];
	ssize_t n;
	bool zero = true;

	do
		n = pread(ds->sfd, b, sizeof(b), slot_offset(k));
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return SLOT_ERROR;
	/* Past the end of the file (a new or truncated file) reads as
	 * zeros, like the holes of a sparse one. */
	memset(b + n, 0, sizeof(b) - (size_t)n);
	for (size_t i = 0; i < sizeof(b) && zero; i++)
		zero = b[i] == 0;
	if (zero)
		return SLOT_FREE;
	if (memcmp(b, magic, sizeof(magic)) != 0) {
		*why = "bad magic";
		return SLOT_DAMAGED;
	}
	if (get64(b + 8 * W_CHECK) != check_of(b)) {
		*why = "bad check value";
		return SLOT_DAMAGED;
	}
	s->dev = get64(b + 8 * W_DEV);
	s->ino = get64(b + 8 * W_INO);
	s->renamed = get64(b + 8 * W_RENAMED);
	s->synced = get64(b + 8 * W_SYNCED);
	s->failed = get64(b + 8 * W_FAILED);
	if (s->renamed >= COUNTER_LIMIT || s->synced > s->renamed
	    || s->failed > s->renamed) {
		*why = "counters out of range";
		return SLOT_DAMAGED;
	}
	if (s->dev != (uint64_t)ds->ddev || s->ino != (uint64_t)ds->dino)
		return SLOT_OTHER;
	return SLOT_MINE;
}

/* One pwrite of the whole slot: another process sees all of it or none. */
static int slot_write(dirsync_t *ds, unsigned k, const slot_t *s)
{
	unsigned char b[DIRSYNC_SLOT_SIZE];
	ssize_t n;

	memset(b, 0, sizeof(b));
	memcpy(b, magic, sizeof(magic));
	put64(b + 8 * W_DEV, s->dev);
	put64(b + 8 * W_INO, s->ino);
	put64(b + 8 * W_RENAMED, s->renamed);
	put64(b + 8 * W_SYNCED, s->synced);
	put64(b + 8 * W_FAILED, s->failed);
	put64(b + 8 * W_CHECK, check_of(b));
	do
		n = pwrite(ds->sfd, b, sizeof(b), slot_offset(k));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(b)) {
		if (n >= 0)
			errno = EIO;
		return -1;
	}
	return 0;
}

/* ---- Locks: byte 2k is slot k's record lock, byte 2k+1 its sync lock ---- */

static int lock_range(int fd, short type, off_t start, off_t len, bool wait)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = len;
	for (;;) {
		if (fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl) == 0)
			return 0;
		if (errno == EINTR && wait)
			continue;
		if (errno == EACCES)
			errno = EAGAIN;
		return -1;
	}
}

/* Blocking, for dirsync_counters_get/set only (tests and tools, never a
 * commit): a commit waits for nobody without a bound (below). */
static int lock_record(dirsync_t *ds, unsigned k)
{
	return lock_range(ds->sfd, F_WRLCK, 2 * (off_t)k, 1, true);
}

static int lock_both(dirsync_t *ds, unsigned k)
{
	return lock_range(ds->sfd, F_WRLCK, 2 * (off_t)k, 2, true);
}

static int try_lock_both(dirsync_t *ds, unsigned k)
{
	return lock_range(ds->sfd, F_WRLCK, 2 * (off_t)k, 2, false);
}

static int try_lock_sync(dirsync_t *ds, unsigned k)
{
	return lock_range(ds->sfd, F_WRLCK, 2 * (off_t)k + 1, 1, false);
}

static void unlock_record(dirsync_t *ds, unsigned k)
{
	(void)lock_range(ds->sfd, F_UNLCK, 2 * (off_t)k, 1, false);
}

static void unlock_both(dirsync_t *ds, unsigned k)
{
	(void)lock_range(ds->sfd, F_UNLCK, 2 * (off_t)k, 2, false);
}

/* In-flight marks: slot k has MARKS bytes from mark_base(k); a writer
 * about to rename into the directory holds a write lock on one of them. */
#define MARKS	64

static off_t mark_base(unsigned k)
{
	return 2 * (off_t)DIRSYNC_SLOTS + (off_t)k * MARKS;
}

/* ---- Bounded waits ----
 *
 * Every lock a commit may have to wait for can be held by another
 * process, and that process may be stopped (SIGSTOP, a debugger), hung or
 * swapped out.  Durability never needs it: a writer can always fsync the
 * directory itself.  So a commit waits for other processes no longer than
 * dirsync_wait_ms in all (its own fsync does not count); then it stops
 * waiting and makes its rename durable without them: with its own fsync,
 * or through the protocol where the locks are free at once
 * (doc/queue-file.md §4, "Bounded waits", says why that is safe at each
 * wait).
 *
 * WAIT_MS: a healthy holder keeps the record lock for one pread and one
 * pwrite (microseconds), the sync lock for one directory fsync (about
 * 0.1 ms on this project's development VM, 5 to 30 ms for a journal
 * commit on a rotating disk) and a mark for a file fsync and a rename
 * (longer for a big message).  50 ms is above all but the worst of those,
 * so sharing is not lost to the bound in normal operation, and a timed
 * out wait costs a client one 50 ms delay, against the hours of
 * daemon_timeout that bounded it before.  A false alarm costs only an
 * extra fsync.
 *
 * Holding off: after a wait was cut short the holder may well be stopped,
 * and every commit of this process would pay the whole bound again (a
 * cleanup held to 20 messages a second makes master start more of them).
 * So the process then only tries the slot's locks, without waiting, until
 * it reads a value of S other than the one it saw before (only a holder
 * of the sync lock changes S, so the lock has moved on), and it does not
 * wait again for the same in-flight mark of the same process.  A wait cut
 * short on a machine that is merely busy (measured: 20 writers on 2
 * CPUs) thus costs one extra fsync, not a period without sharing; where
 * the locks are free the process shares as usual.
 *
 * The wait itself is a blocking F_SETLKW, which the kernel ends as soon
 * as the lock is released (polling would add up to a poll interval to
 * every contended wait, comparable to an fsync here).  A POSIX timer,
 * armed only when the lock was busy, sends DIRSYNC_SIGNAL at the
 * deadline; its handler does nothing and is installed without SA_RESTART,
 * so F_SETLKW fails with EINTR.  The timer repeats every TICK_NS after the
 * deadline, in case the signal came just before F_SETLKW began to sleep;
 * it is disarmed before the wait returns, and a signal it sent meanwhile
 * has been handled by then (it is unblocked, and pending signals are
 * delivered on the return from that system call).  SIGALRM and alarm()
 * belong to the daemon skeleton's watchdog (libglobal/server.c).  The
 * uncontended path is one F_SETLK, as before; a contended wait adds
 * getpid, sigprocmask and two timer_settime calls.  Without POSIX timers
 * (or if timer_create fails) the wait polls with F_SETLK and short
 * sleeps up to the same deadline. */
#define WAIT_MS		50
#define TICK_NS		1000000
#define MS		((int64_t)1000000)

unsigned dirsync_wait_ms = WAIT_MS;

#if defined(_POSIX_TIMERS) && _POSIX_TIMERS > 0 && defined(SIGRTMIN) \
    && !defined(DIRSYNC_NO_TIMER)
#define HAVE_WAIT_TIMER 1
#define DIRSYNC_SIGNAL	(SIGRTMIN + 2)
#endif

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec ns_to_ts(int64_t ns)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	return ts;
}

/* The fallback: F_SETLK, with sleeps from 50 us doubling to 1 ms. */
static int poll_until(int fd, struct flock *fl, int64_t deadline)
{
	int64_t step = 50000, left;
	struct timespec ts;

	for (;;) {
		if ((left = deadline - now_ns()) <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		ts = ns_to_ts(step < left ? step : left);
		(void)nanosleep(&ts, NULL);
		if (fcntl(fd, F_SETLK, fl) == 0)
			return 0;
		if (errno != EAGAIN && errno != EACCES && errno != EINTR)
			return -1;
		if (step < MS)
			step *= 2;
	}
}

#ifdef HAVE_WAIT_TIMER
static bool wake_handler;	/* inherited by fork, reset by exec */
static pid_t wake_pid;		/* the process that made wake_timer */
static timer_t wake_timer;	/* (timers are not inherited by fork) */

static void on_wake(int sig)
{
	(void)sig;
}

/* The process's timer, made at its first contended wait. */
static bool wake_ready(void)
{
	struct sigevent sev;
	struct sigaction sa;
	pid_t pid = getpid();

	if (wake_pid == pid)
		return true;
	if (!wake_handler) {
		memset(&sa, 0, sizeof(sa));
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = 0;		/* no SA_RESTART: F_SETLKW ends */
		sa.sa_handler = on_wake;
		if (sigaction(DIRSYNC_SIGNAL, &sa, NULL) < 0)
			return false;
		wake_handler = true;
	}
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = DIRSYNC_SIGNAL;
	if (timer_create(CLOCK_MONOTONIC, &sev, &wake_timer) < 0)
		return false;
	wake_pid = pid;
	return true;
}
#endif

/* F_SETLKW on fl until the lock is had (0) or the deadline passes (-1,
 * ETIMEDOUT); -1 with another errno on other errors. */
static int wait_until(int fd, struct flock *fl, int64_t deadline)
{
#ifdef HAVE_WAIT_TIMER
	struct itimerspec its;
	sigset_t set, old;
	int rc = -1, e = 0;

	if (!wake_ready())
		return poll_until(fd, fl, deadline);
	/* Whatever the caller blocks, this signal must get through. */
	sigemptyset(&set);
	sigaddset(&set, DIRSYNC_SIGNAL);
	if (sigprocmask(SIG_UNBLOCK, &set, &old) < 0)
		return poll_until(fd, fl, deadline);
	memset(&its, 0, sizeof(its));
	its.it_value = ns_to_ts(deadline);
	its.it_interval = ns_to_ts(TICK_NS);
	if (timer_settime(wake_timer, TIMER_ABSTIME, &its, NULL) < 0) {
		rc = poll_until(fd, fl, deadline);
		e = errno;
		goto out;
	}
	for (;;) {
		if (fcntl(fd, F_SETLKW, fl) == 0) {
			rc = 0;
			break;
		}
		e = errno;
		if (e != EINTR)
			break;
		/* Ours, or another signal (then wait on). */
		if (now_ns() >= deadline) {
			e = ETIMEDOUT;
			break;
		}
	}
	memset(&its, 0, sizeof(its));
	(void)timer_settime(wake_timer, 0, &its, NULL);
out:
	if (sigismember(&old, DIRSYNC_SIGNAL))
		(void)sigprocmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return rc;
#else
	return poll_until(fd, fl, deadline);
#endif
}

/* Waits for a lock that was busy a moment ago (the caller's F_SETLK
 * failed with EAGAIN), within this commit's bound: 0 when it is had, -1
 * with ETIMEDOUT when this commit waits no more (it goes on without the
 * lock), or -1 with another errno. */
static int wait_bounded(dirsync_t *ds, enum dirsync_wait what, short type,
    off_t start, off_t len)
{
	struct flock fl;
	int64_t now, left = (int64_t)dirsync_wait_ms * MS - ds->waited;
	int rc, e;

	ds->timed_out = false;
	if (ds->holdoff && ds->holdoff_slot == ds->slot) {
		errno = ETIMEDOUT;
		return -1;
	}
	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = len;
	if (left <= 0) {
		rc = -1;
		errno = ETIMEDOUT;
	} else {
		(void)hook(DIRSYNC_EV_WAIT, (uint64_t)what);
		now = now_ns();
		rc = wait_until(ds->sfd, &fl, now + left);
		e = rc < 0 && errno == EACCES ? EAGAIN : errno;
		/* Only waiting counts, not the commit's own fsync. */
		ds->waited += now_ns() - now;
		ds->timed_out = rc < 0 && e == ETIMEDOUT;
		errno = e;
	}
	if (rc < 0 && errno == ETIMEDOUT) {
		ds->holdoff = true;
		ds->holdoff_slot = ds->slot;
		ds->holdoff_known = ds->seen;
		ds->holdoff_s = ds->seen_s;
		(void)hook(DIRSYNC_EV_GAVE_UP, (uint64_t)what);
		errno = ETIMEDOUT;
	}
	return rc;
}

/* This commit read S from its slot: the end of a holdoff when S moved. */
static void saw_synced(dirsync_t *ds, uint64_t synced)
{
	ds->seen = true;
	ds->seen_s = synced;
	if (ds->holdoff && ds->holdoff_slot == ds->slot
	    && (!ds->holdoff_known || ds->holdoff_s != synced))
		ds->holdoff = false;
}

/* A lock that another process may hold: tried once (all the uncontended
 * path costs), then waited for within the bound. */
static int lock_bounded(dirsync_t *ds, enum dirsync_wait what, short type,
    off_t start, off_t len)
{
	if (lock_range(ds->sfd, type, start, len, false) == 0)
		return 0;
	if (errno != EAGAIN)
		return -1;
	return wait_bounded(ds, what, type, start, len);
}

/* ---- The handle ---- */

dirsync_t *dirsync_new(const char *path)
{
	dirsync_t *ds = xcalloc(1, sizeof(*ds));

	ds->path = xstrdup(path);
	ds->sfd = -1;
	ds->dfd = -1;
	ds->mark = -1;
	ds->cut_mark = -1;
	return ds;
}

void dirsync_free(dirsync_t *ds)
{
	if (ds == NULL)
		return;
	dirsync_cancel(ds);
	if (ds->sfd >= 0)
		close(ds->sfd);
	if (ds->dfd >= 0)
		close(ds->dfd);
	free(ds->path);
	free(ds->dir);
	free(ds);
}

static void give_up_at(dirsync_t *ds, enum log_level lvl, const char *why,
    int err)
{
	if (ds->sfd >= 0)
		close(ds->sfd);
	ds->sfd = -1;
	ds->mark = -1;		/* (closing dropped our locks) */
	ds->unusable = true;
	if (lvl == LOG_LVL_DEBUG)
		log_debug("dirsync state %s: %s%s%s; every commit fsyncs its "
		    "own directory", ds->path, why, err ? ": " : "",
		    err ? strerror(err) : "");
	else
		log_warning("dirsync state %s: %s%s%s; every commit fsyncs its "
		    "own directory", ds->path, why, err ? ": " : "",
		    err ? strerror(err) : "");
}

static void give_up(dirsync_t *ds, const char *why, int err)
{
	give_up_at(ds, LOG_LVL_WARNING, why, err);
}

/* The owner of the directory that holds path (-1 when it cannot be
 * read: errno). */
static uid_t dir_owner(const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	struct stat dst;
	uid_t uid = (uid_t)-1;

	if (slash == dir)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	if (stat(slash ? dir : ".", &dst) == 0)
		uid = dst.st_uid;
	free(dir);
	return uid;
}

/* Opens the state file and checks that only we (or, for root, the owner
 * of its directory: mail_owner's saved/) can write it.  It belongs to
 * the owner of its directory: made by that user, or by root on its
 * behalf, so that a root process (postdrop for root's mail, a daemon run
 * with unpriv n) never leaves a file the unprivileged writers cannot
 * open. */
static int state_open(dirsync_t *ds)
{
	struct stat st;
	uid_t owner = (uid_t)-1;
	int fd, fl;

	ds->tried = true;
	/* What was learnt of the other processes was about another file. */
	ds->holdoff = false;
	ds->cut_mark = -1;
	fd = open(ds->path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		owner = dir_owner(ds->path);
		if (owner == (uid_t)-1)
			;	/* errno says why */
		else if (owner == geteuid() || geteuid() == 0) {
			fd = open(ds->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_NONBLOCK | O_CLOEXEC, 0600);
			if (fd >= 0 && owner != geteuid() &&
			    fchown(fd, owner, (gid_t)-1) < 0) {
				int e = errno;
				close(fd);
				(void)unlink(ds->path);
				fd = -1;
				errno = e;
			}
		} else {
			errno = EPERM;
		}
		if (fd < 0 && errno == EEXIST)
			fd = open(ds->path, O_RDWR | O_NOFOLLOW | O_NONBLOCK |
			    O_CLOEXEC);
		else if (fd < 0 && errno == EPERM) {
			give_up_at(ds, LOG_LVL_DEBUG, "not there, and its "
			    "directory is another user's", 0);
			return -1;
		}
	}
	if (fd < 0) {
		/* A writer that cannot reach the state (postdrop run by a
		 * user: saved/ is mail_owner's) is expected too. */
		give_up_at(ds, errno == EACCES ? LOG_LVL_DEBUG : LOG_LVL_WARNING,
		    "cannot open", errno);
		return -1;
	}
	ds->sfd = fd;
	if (fstat(fd, &st) < 0) {
		give_up(ds, "cannot stat", errno);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		give_up(ds, "not a regular file", 0);
		return -1;
	}
	if (st.st_uid != geteuid() && (geteuid() != 0 ||
	    st.st_uid != (owner != (uid_t)-1 ? owner : dir_owner(ds->path)))) {
		/* Expected of postdrop run by a user other than mail_owner:
		 * no warning for that. */
		give_up_at(ds, LOG_LVL_DEBUG, "not owned by this process's user", 0);
		return -1;
	}
	if (st.st_mode & 022) {
		give_up(ds, "writable by group or others", 0);
		return -1;
	}
	if (st.st_nlink != 1) {
		give_up(ds, "more than one link", 0);
		return -1;
	}
	if ((fl = fcntl(fd, F_GETFL)) < 0
	    || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		give_up(ds, "fcntl", errno);
		return -1;
	}
	return 0;
}

int dirsync_prepare(dirsync_t *ds)
{
	if (ds->unusable)
		return -1;
	if (ds->sfd >= 0)
		return 0;
	return state_open(ds);
}

/* True when the state file can be used for this commit.  A state file
 * that was removed or replaced since it was opened is opened again (so
 * that this process shares with those that opened the new one); a failed
 * open is never retried. */
static bool state_ready(dirsync_t *ds)
{
	struct stat st;

	if (ds->unusable)
		return false;
	if (ds->sfd >= 0) {
		if (fstat(ds->sfd, &st) == 0 && st.st_nlink == 1)
			return true;
		close(ds->sfd);
		ds->sfd = -1;
		ds->mark = -1;
	}
	return state_open(ds) == 0;
}

/* Makes ds->dfd a descriptor of dir as it is now. */
static int dir_open(dirsync_t *ds, const char *dir)
{
	struct stat st;
	int fd;

	if (stat(dir, &st) < 0)
		return -1;
	if (ds->dfd >= 0 && strcmp(ds->dir, dir) == 0 && st.st_dev == ds->ddev
	    && st.st_ino == ds->dino)
		return 0;
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (ds->dfd >= 0)
		close(ds->dfd);
	free(ds->dir);
	ds->dir = xstrdup(dir);
	ds->dfd = fd;
	ds->ddev = st.st_dev;
	ds->dino = st.st_ino;
	return 0;
}

/* fsync of the directory, counted; a file system that cannot fsync a
 * directory (EINVAL) makes it as durable as it can. */
static int dir_fsync(int fd, uint64_t covers)
{
	int rc, e;

	dirsync_fsync_count++;
	if (hook(DIRSYNC_EV_FSYNC, covers) < 0)
		rc = -1;
	else if ((rc = file_fsync(fd)) < 0 && errno == EINVAL)
		rc = 0;
	e = rc < 0 ? errno : 0;
	(void)hook(DIRSYNC_EV_FSYNC_DONE, (uint64_t)e);
	errno = e;
	return rc;
}

static void io_warning(dirsync_t *ds, const char *what)
{
	if (ds->warned)
		return;
	ds->warned = true;
	log_warning("dirsync state %s: %s: %s; fsyncing without it", ds->path,
	    what, strerror(errno));
}

static void slot_init(dirsync_t *ds, slot_t *s)
{
	s->dev = (uint64_t)ds->ddev;
	s->ino = (uint64_t)ds->dino;
	s->renamed = s->synced = s->failed = 0;
}

void dirsync_begin(dirsync_t *ds, const char *dir)
{
	off_t base;

	dirsync_cancel(ds);
	if (ds == NULL || dir_open(ds, dir) < 0 || !state_ready(ds))
		return;
	base = mark_base(dirsync_slot_index(ds->ddev, ds->dino));
	/* Our own byte; another process that happens to use it makes us
	 * try the next ones (no mark at all is fine too). */
	for (unsigned i = 0; i < MARKS; i++) {
		off_t b = base + (off_t)(((unsigned)getpid() + i) % MARKS);
		if (lock_range(ds->sfd, F_WRLCK, b, 1, false) == 0) {
			ds->mark = b;
			return;
		}
	}
}

void dirsync_cancel(dirsync_t *ds)
{
	if (ds == NULL || ds->mark < 0)
		return;
	if (ds->sfd >= 0)
		(void)lock_range(ds->sfd, F_UNLCK, ds->mark, 1, false);
	ds->mark = -1;
}

/* Another process's in-flight mark on slot k: its byte (and in *pid its
 * holder), or -1. */
static off_t other_in_flight(dirsync_t *ds, unsigned k, pid_t *pid)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = mark_base(k);
	fl.l_len = MARKS;
	if (fcntl(ds->sfd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
		return -1;
	*pid = fl.l_pid;
	return fl.l_start;
}

/* Waits until process pid lets go of mark byte b (it has renamed and
 * taken its ticket, given up, or died), or this commit's bound is spent:
 * either way the caller goes on, but it does not wait for that mark of
 * that process again. */
static void wait_mark(dirsync_t *ds, off_t b, pid_t pid)
{
	(void)hook(DIRSYNC_EV_PAIR_WAIT, (uint64_t)b);
	ds->timed_out = false;
	if (lock_bounded(ds, DIRSYNC_WAIT_PAIR, F_RDLCK, b, 1) == 0) {
		(void)lock_range(ds->sfd, F_UNLCK, b, 1, false);
	} else if (ds->timed_out) {
		/* (Not when this commit had no time left or holds off:
		 * then the holder was not waited for at all.) */
		ds->cut_mark = b;
		ds->cut_pid = pid;
	}
}

/* slot_read, for the steps before the fsync: notes what S was. */
static enum slot_state read_slot(dirsync_t *ds, unsigned k, slot_t *s,
    const char **why)
{
	enum slot_state st = slot_read(ds, k, s, why);

	if (st == SLOT_MINE)
		saw_synced(ds, s->synced);
	return st;
}

/* The protocol of doc/queue-file.md §4, steps 1 to 4. */
static int group_commit(dirsync_t *ds)
{
	unsigned k = dirsync_slot_index(ds->ddev, ds->dino);
	const char *why = "";
	enum slot_state st;
	uint64_t t = 0, r;
	slot_t s;
	int rc, e;

	/* No waiting yet in this commit (the bound, above). */
	ds->slot = k;
	ds->waited = 0;
	ds->seen = false;

	/* 1. A ticket, under the record lock.  Not had in time: no ticket,
	 * our own fsync. */
	if (lock_bounded(ds, DIRSYNC_WAIT_TICKET, F_WRLCK, 2 * (off_t)k, 1) < 0) {
		if (errno != ETIMEDOUT)
			io_warning(ds, "lock");
		goto plain;
	}
	(void)hook(DIRSYNC_EV_TICKET_LOCKED, 0);
	st = read_slot(ds, k, &s, &why);
	if (st == SLOT_MINE && s.renamed < COUNTER_LIMIT - 1) {
		s.renamed++;
		if (slot_write(ds, k, &s) < 0) {
			io_warning(ds, "write");
			unlock_record(ds, k);
			goto plain;
		}
		t = s.renamed;
		unlock_record(ds, k);
		(void)hook(DIRSYNC_EV_TICKET, t);
		/* Our rename is in R: whoever waits for it may go on. */
		dirsync_cancel(ds);
		/* 2. Wait while another writer fsyncs.  When nobody does and
		 * we would fsync at once, first let one writer that is about
		 * to rename (in its file fsync) do so, and share with it.
		 * Both locks not had in time: our own fsync, without them, and
		 * nothing published (§4: only a holder of the sync lock
		 * stores S or F). */
		off_t other;
		pid_t holder;
		if (try_lock_both(ds, k) == 0) {
			st = read_slot(ds, k, &s, &why);
			if (st == SLOT_MINE && s.synced < t && s.failed < t
			    && (other = other_in_flight(ds, k, &holder)) >= 0
			    && (other != ds->cut_mark || holder != ds->cut_pid)) {
				unlock_both(ds, k);
				wait_mark(ds, other, holder);
				if (lock_bounded(ds, DIRSYNC_WAIT_SYNC, F_WRLCK,
				    2 * (off_t)k, 2) < 0)
					goto plain_unlocked;
				st = read_slot(ds, k, &s, &why);
			}
		} else if (errno != EAGAIN || wait_bounded(ds, DIRSYNC_WAIT_SYNC,
		    F_WRLCK, 2 * (off_t)k, 2) < 0) {
			goto plain_unlocked;
		} else {
			st = read_slot(ds, k, &s, &why);
		}
	} else if (try_lock_sync(ds, k) < 0) {
		/* The slot must be (re)initialised, which needs the sync lock
		 * too, and someone is fsyncing: do not wait for it. */
		unlock_record(ds, k);
		goto plain;
	}

	/* 3. Both locks held. */
	dirsync_cancel(ds);
	if (st == SLOT_ERROR) {
		io_warning(ds, "read");
		goto plain_locked;
	}
	if (t == 0 || st != SLOT_MINE) {
		/* Free, another directory's, damaged, or out of tickets: the
		 * slot starts over for this directory, with our ticket 1
		 * (taken after our rename, like any ticket). */
		if (st == SLOT_DAMAGED)
			log_warning("dirsync state %s: slot %u damaged (%s); reset",
			    ds->path, k, why);
		slot_init(ds, &s);
		s.renamed = 1;
		if (slot_write(ds, k, &s) < 0) {
			io_warning(ds, "write");
			goto plain_locked;
		}
		t = 1;
		(void)hook(DIRSYNC_EV_TICKET, t);
	}
	if (s.failed >= t) {
		/* An fsync that began after our rename failed. */
		unlock_both(ds, k);
		errno = EIO;
		return -1;
	}
	if (s.synced >= t) {
		unlock_both(ds, k);
		(void)hook(DIRSYNC_EV_COVERED, s.synced);
		return 0;
	}

	/* 4. Our fsync covers every ticket up to r; others may take tickets
	 * meanwhile (the record lock is free) but wait for the sync lock.
	 * The record lock not had in time afterwards: our result is ours
	 * all the same, only the others do not learn of it. */
	r = s.renamed;
	unlock_record(ds, k);
	rc = dir_fsync(ds->dfd, r);
	e = errno;
	if (lock_bounded(ds, DIRSYNC_WAIT_PUBLISH, F_WRLCK, 2 * (off_t)k, 1) == 0) {
		if (slot_read(ds, k, &s, &why) == SLOT_MINE) {
			bool changed = false;
			if (rc == 0 && r > s.synced) {
				s.synced = r;
				changed = true;
			} else if (rc < 0 && r > s.failed) {
				s.failed = r;
				changed = true;
			}
			if (changed && slot_write(ds, k, &s) < 0)
				io_warning(ds, "write");
		}
	} else if (errno != ETIMEDOUT) {
		io_warning(ds, "lock");
	}
	unlock_both(ds, k);
	errno = e;
	return rc;

plain_unlocked:
	if (errno != ETIMEDOUT)
		io_warning(ds, "lock");
	goto plain;
plain_locked:
	unlock_both(ds, k);
plain:
	dirsync_cancel(ds);
	return dir_fsync(ds->dfd, 0);
}

int dirsync_commit(dirsync_t *ds, const char *dir)
{
	if (ds == NULL) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc, e;
		if (fd < 0)
			return -1;
		rc = dir_fsync(fd, 0);
		e = errno;
		close(fd);
		errno = e;
		return rc;
	}
	if (dir_open(ds, dir) < 0) {
		int e = errno;
		dirsync_cancel(ds);
		errno = e;
		return -1;
	}
	if (!state_ready(ds)) {
		dirsync_cancel(ds);
		return dir_fsync(ds->dfd, 0);
	}
	return group_commit(ds);
}

/* ---- Tests and tools ---- */

int dirsync_counters_get(dirsync_t *ds, const char *dir, dirsync_counters_t *c)
{
	unsigned k;
	const char *why;
	enum slot_state st;
	slot_t s;

	if (dir_open(ds, dir) < 0 || dirsync_prepare(ds) < 0)
		return -1;
	k = dirsync_slot_index(ds->ddev, ds->dino);
	if (lock_record(ds, k) < 0)
		return -1;
	st = slot_read(ds, k, &s, &why);
	unlock_record(ds, k);
	if (st == SLOT_ERROR)
		return -1;
	if (st != SLOT_MINE)
		return 0;
	c->renamed = s.renamed;
	c->synced = s.synced;
	c->failed = s.failed;
	return 1;
}

int dirsync_counters_set(dirsync_t *ds, const char *dir,
    const dirsync_counters_t *c)
{
	unsigned k;
	slot_t s;
	int rc;

	if (dir_open(ds, dir) < 0 || dirsync_prepare(ds) < 0)
		return -1;
	k = dirsync_slot_index(ds->ddev, ds->dino);
	if (lock_both(ds, k) < 0)
		return -1;
	slot_init(ds, &s);
	s.renamed = c->renamed;
	s.synced = c->synced;
	s.failed = c->failed;
	rc = slot_write(ds, k, &s);
	unlock_both(ds, k);
	return rc;
}
