/* libutil/dirsync: the group commit of directory fsyncs across processes
 * (doc/queue-file.md §4).  Writers are child processes; a hook lets a
 * test stop one inside its fsync, hold it there while others rename and
 * take tickets, fail it, or kill it, and records the order of events in a
 * log that every process appends to. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "dirsync.h"
#include "file.h"
#include "log.h"
#include "str.h"
#include "testutil.h"

#define STATE	"state"
#define DIR	"d"

/* What a child's hook does. */
enum {
	H_BLOCK_FSYNC = 1,	/* tell the parent 'F', wait for a byte on go */
	H_FAIL_FSYNC = 2,	/* the fsync fails with EIO */
	H_NOTE_TICKET = 4,	/* tell the parent 'T' */
	H_HANG_FSYNC = 8,	/* tell the parent 'F', never return */
	H_HANG_LOCKED = 16,	/* holding the record lock: 'L', never return */
	H_LOG = 32,		/* append every event to the event log */
	H_BEGIN_WAIT = 64,	/* dirsync_begin, tell 'B', wait for go, then
				 * rename and commit */
	H_BEGIN_HANG = 128,	/* dirsync_begin, tell 'B', never go on */
	H_NOTE_PAIR = 256,	/* tell the parent 'W' when waiting for one */
	/* Like SIGSTOP from outside, at a chosen point: tell the parent,
	 * then stop until SIGCONT. */
	H_STOP_FSYNC = 512,	/* in its fsync (the sync lock held): 'F' */
	H_STOP_LOCKED = 1024,	/* holding the record lock: 'L' */
	H_BEGIN_STOP = 2048,	/* dirsync_begin (a mark held): 'B' */
	H_MASK_ALL = 4096,	/* commit with every signal blocked */
	H_NOTE_WAIT = 8192,	/* tell 'Q' when about to wait for a lock */
	H_STOP_BETWEEN = 16384,	/* between commits: tell 'D', stop */
	H_PATIENT_LATER = 32768,	/* after the first commit: patient() */
};

static int pair_waits, gave_ups;

static int hook_mode;
static int to_parent[2], go[2], results[2];
static int evlog = -1;

typedef struct res {
	int who, rc, err;
	unsigned long fsyncs;
	int pair_waits, gave_ups;
	long ms;		/* how long its commits took */
} res_t;

static void note(char c)
{
	if (write(to_parent[1], &c, 1) != 1)
		_exit(90);
}

static void log_event(const char *what, uint64_t v)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%s %ld %llu\n", what,
	    (long)getpid(), (unsigned long long)v);

	if (evlog >= 0 && write(evlog, line, (size_t)n) != n)
		_exit(91);
}

static int test_hook(enum dirsync_event ev, uint64_t v)
{
	char b;

	if (hook_mode & H_LOG) {
		static const char *names[] = { "L", "T", "F", "E", "C", "W",
		    "Q", "G" };
		if ((size_t)ev < sizeof(names) / sizeof(names[0]))
			log_event(names[ev], v);
	}
	switch (ev) {
	case DIRSYNC_EV_TICKET_LOCKED:
		if (hook_mode & H_HANG_LOCKED) {
			note('L');
			for (;;)
				pause();
		}
		if (hook_mode & H_STOP_LOCKED) {
			note('L');
			raise(SIGSTOP);
		}
		break;
	case DIRSYNC_EV_TICKET:
		if (hook_mode & H_NOTE_TICKET)
			note('T');
		break;
	case DIRSYNC_EV_FSYNC:
		if (hook_mode & H_HANG_FSYNC) {
			note('F');
			for (;;)
				pause();
		}
		if (hook_mode & H_STOP_FSYNC) {
			note('F');
			raise(SIGSTOP);
		}
		if (hook_mode & H_BLOCK_FSYNC) {
			note('F');
			if (read(go[0], &b, 1) != 1)
				_exit(92);
		}
		if (hook_mode & H_FAIL_FSYNC) {
			errno = EIO;
			return -1;
		}
		break;
	case DIRSYNC_EV_PAIR_WAIT:
		pair_waits++;
		if (hook_mode & H_NOTE_PAIR)
			note('W');
		break;
	case DIRSYNC_EV_WAIT:
		if (hook_mode & H_NOTE_WAIT)
			note('Q');
		break;
	case DIRSYNC_EV_GAVE_UP:
		gave_ups++;
		break;
	default:
		break;
	}
	return 0;
}

static void pipes(void)
{
	ATF_REQUIRE(pipe(to_parent) == 0);
	ATF_REQUIRE(pipe(go) == 0);
	ATF_REQUIRE(pipe(results) == 0);
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	dirsync_hook = test_hook;
}

/* For the tests that hold a writer still on purpose (blocked on the go
 * pipe) while others queue behind it: with the normal bound a slow
 * machine could end those waits before the test lets the writer go,
 * and the counts the tests check would change.  (Still a bound.) */
static void patient(void)
{
	dirsync_wait_ms = 60000;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long)(t.tv_sec - t0->tv_sec) * 1000
	    + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Creates a file in dir and renames it to a new name there (what a
 * queue-file writer does before its commit). */
static void rename_into(const char *dir)
{
	static unsigned long n;
	char tmp[256], fin[256];
	int fd;

	n++;
	snprintf(tmp, sizeof(tmp), "%s/tmp.%ld.%lu", dir, (long)getpid(), n);
	snprintf(fin, sizeof(fin), "%s/f.%ld.%lu", dir, (long)getpid(), n);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || close(fd) < 0 || rename(tmp, fin) < 0)
		_exit(93);
}

/* A child: n times rename into DIR and commit (stopping at the first
 * failure), send the result, exit. */
static pid_t writer_n(int who, int mode, int n)
{
	pid_t pid = fork();

	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		dirsync_t *ds = dirsync_new(STATE);
		res_t r = { who, 0, 0, 0, 0, 0, 0 };
		unsigned long before = dirsync_fsync_count;
		struct timespec t0;
		char b;

		hook_mode = mode;
		if (mode & (H_BEGIN_WAIT | H_BEGIN_HANG | H_BEGIN_STOP)) {
			dirsync_begin(ds, DIR);
			note('B');
			if (mode & H_BEGIN_HANG)
				for (;;)
					pause();
			if (mode & H_BEGIN_STOP)
				raise(SIGSTOP);
			else if (read(go[0], &b, 1) != 1)
				_exit(95);
		}
		if (mode & H_MASK_ALL) {
			sigset_t all;
			sigfillset(&all);
			sigprocmask(SIG_BLOCK, &all, NULL);
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int i = 0; i < n && r.rc == 0; i++) {
			if (i > 0 && (mode & H_STOP_BETWEEN)) {
				note('D');
				raise(SIGSTOP);
			}
			if (i > 0 && (mode & H_PATIENT_LATER))
				patient();
			rename_into(DIR);
			r.rc = dirsync_commit(ds, DIR);
		}
		r.ms = ms_since(&t0);
		r.err = r.rc < 0 ? errno : 0;
		r.fsyncs = dirsync_fsync_count - before;
		r.pair_waits = pair_waits;
		r.gave_ups = gave_ups;
		if (write(results[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			_exit(94);
		dirsync_free(ds);
		_exit(0);
	}
	return pid;
}

/* A child: rename into DIR, commit, send the result, exit. */
static pid_t writer(int who, int mode)
{
	return writer_n(who, mode, 1);
}

static char wait_note(void)
{
	char c;

	ATF_REQUIRE(read(to_parent[0], &c, 1) == 1);
	return c;
}

/* A note that must come within ms; if not, the writers in pids are
 * killed and the test fails with what. */
static char wait_note_within(int ms, const pid_t *pids, int n,
    const char *what)
{
	struct pollfd p = { to_parent[0], POLLIN, 0 };
	int rc;

	do
		rc = poll(&p, 1, ms);
	while (rc < 0 && errno == EINTR);
	if (rc != 1) {
		for (int i = 0; i < n; i++) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		ATF_REQUIRE_MSG(false, "%s", what);
	}
	return wait_note();
}

static void release(void)
{
	ATF_REQUIRE(write(go[1], "g", 1) == 1);
}

static res_t get_result(void)
{
	res_t r;

	ATF_REQUIRE(read(results[0], &r, sizeof(r)) == (ssize_t)sizeof(r));
	return r;
}

static void reap(pid_t pid)
{
	int status;

	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
}

/* A result that must come within ms while the writer whose pid is
 * stopped stays stopped; if none comes, that writer is killed (which
 * frees the others) and the test fails. */
static res_t result_within(int ms, pid_t stopped)
{
	struct pollfd p = { results[0], POLLIN, 0 };
	int n;

	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	if (n != 1) {
		kill(stopped, SIGKILL);
		reap(stopped);
		ATF_REQUIRE_MSG(false, "a commit waited more than %d ms for a "
		    "stopped writer", ms);
	}
	return get_result();
}

/* Waits until child pid has stopped. */
static void wait_stopped(pid_t pid)
{
	int status;

	ATF_REQUIRE(waitpid(pid, &status, WUNTRACED) == pid);
	ATF_REQUIRE(WIFSTOPPED(status));
}

/* Nobody holds a lock on any byte of the state file. */
static void check_nothing_locked(void)
{
	struct flock fl;
	int fd = open(STATE, O_RDWR);

	ATF_REQUIRE(fd >= 0);
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	ATF_REQUIRE(fcntl(fd, F_GETLK, &fl) == 0);
	ATF_CHECK_MSG(fl.l_type == F_UNLCK, "byte %lld still locked by %ld",
	    (long long)fl.l_start, (long)fl.l_pid);
	close(fd);
}

/* The counters of DIR's slot (the test fails when it is not DIR's). */
static dirsync_counters_t counters(const char *dir)
{
	dirsync_t *ds = dirsync_new(STATE);
	dirsync_counters_t c;

	ATF_REQUIRE_EQ_MSG(dirsync_counters_get(ds, dir, &c), 1,
	    "slot of %s is not valid", dir);
	dirsync_free(ds);
	return c;
}

static void set_counters(const char *dir, uint64_t r, uint64_t s, uint64_t f)
{
	dirsync_t *ds = dirsync_new(STATE);
	dirsync_counters_t c = { r, s, f };

	ATF_REQUIRE(dirsync_counters_set(ds, dir, &c) == 0);
	dirsync_free(ds);
}

/* One commit in this process: its result, and fsyncs in *n. */
static int commit_here(const char *state, const char *dir, unsigned long *n)
{
	dirsync_t *ds = dirsync_new(state);
	unsigned long before = dirsync_fsync_count;
	int rc;

	rename_into(dir);
	rc = dirsync_commit(ds, dir);
	*n = dirsync_fsync_count - before;
	dirsync_free(ds);
	return rc;
}

ATF_TC_WITHOUT_HEAD(alone);
ATF_TC_BODY(alone, tc)
{
	unsigned long n;
	struct stat st;

	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	for (int i = 1; i <= 3; i++) {
		ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
		/* Nobody else: each commit fsyncs the directory itself. */
		ATF_CHECK_EQ(n, 1);
		dirsync_counters_t c = counters(DIR);
		ATF_CHECK_EQ(c.renamed, (uint64_t)i);
		ATF_CHECK_EQ(c.synced, (uint64_t)i);
		ATF_CHECK_EQ(c.failed, 0);
	}
	ATF_REQUIRE(stat(STATE, &st) == 0);
	ATF_CHECK_EQ(st.st_mode & 077, 0);
	/* No state at all: a plain fsync. */
	ATF_CHECK_EQ(dirsync_commit(NULL, DIR), 0);
	/* No directory: the error of opening it. */
	dirsync_t *ds = dirsync_new(STATE);
	errno = 0;
	ATF_CHECK_EQ(dirsync_commit(ds, "d/none"), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	dirsync_free(ds);
}

ATF_TC_WITHOUT_HEAD(rename_during_fsync);
ATF_TC_BODY(rename_during_fsync, tc)
{
	/* A's fsync began before B's rename: it must not count for B. */
	pipes();
	patient();
	pid_t a = writer(0, H_BLOCK_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	pid_t b = writer(1, H_NOTE_TICKET);
	ATF_REQUIRE_EQ(wait_note(), 'T');
	release();
	for (int i = 0; i < 2; i++) {
		res_t r = get_result();
		ATF_CHECK_EQ_MSG(r.rc, 0, "writer %d: %s", r.who, strerror(r.err));
		ATF_CHECK_EQ_MSG(r.fsyncs, 1, "writer %d made %lu fsyncs", r.who,
		    r.fsyncs);
	}
	reap(a);
	reap(b);
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 2);
	ATF_CHECK_EQ(c.synced, 2);
}

ATF_TC_WITHOUT_HEAD(shared_fsync);
ATF_TC_BODY(shared_fsync, tc)
{
	enum { N = 6 };
	pid_t pid[N];
	unsigned long total = 0;
	int zero = 0;

	/* While A fsyncs, five others rename and take tickets; then one
	 * fsync serves all five. */
	pipes();
	patient();
	pid[0] = writer(0, H_BLOCK_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	for (int i = 1; i < N; i++)
		pid[i] = writer(i, H_NOTE_TICKET);
	for (int i = 1; i < N; i++)
		ATF_REQUIRE_EQ(wait_note(), 'T');
	release();
	for (int i = 0; i < N; i++) {
		res_t r = get_result();
		ATF_CHECK_EQ_MSG(r.rc, 0, "writer %d: %s", r.who, strerror(r.err));
		total += r.fsyncs;
		zero += r.fsyncs == 0;
	}
	for (int i = 0; i < N; i++)
		reap(pid[i]);
	ATF_CHECK_EQ_MSG(total, 2, "%d writers made %lu directory fsyncs", N,
	    total);
	ATF_CHECK_EQ(zero, N - 2);
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, N);
	ATF_CHECK_EQ(c.synced, N);
}

ATF_TC_WITHOUT_HEAD(failed_fsync);
ATF_TC_BODY(failed_fsync, tc)
{
	res_t r;
	unsigned long n;

	/* B and C rename while A fsyncs; then one of them fsyncs for both
	 * and that fsync fails: both must fail, also the one that did not
	 * fsync.  A later writer is not affected. */
	pipes();
	patient();
	pid_t a = writer(0, H_BLOCK_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	pid_t b = writer(1, H_NOTE_TICKET | H_FAIL_FSYNC);
	pid_t c = writer(2, H_NOTE_TICKET | H_FAIL_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'T');
	ATF_REQUIRE_EQ(wait_note(), 'T');
	release();
	unsigned long total = 0;
	for (int i = 0; i < 3; i++) {
		r = get_result();
		total += r.fsyncs;
		if (r.who == 0) {
			ATF_CHECK_EQ(r.rc, 0);
		} else {
			ATF_CHECK_EQ_MSG(r.rc, -1, "writer %d succeeded", r.who);
			ATF_CHECK_EQ(r.err, EIO);
		}
	}
	ATF_CHECK_EQ(total, 2);
	reap(a);
	reap(b);
	reap(c);
	dirsync_counters_t cs = counters(DIR);
	ATF_CHECK_EQ(cs.renamed, 3);
	ATF_CHECK_EQ(cs.synced, 1);
	ATF_CHECK_EQ(cs.failed, 3);
	dirsync_hook = NULL;
	ATF_CHECK_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
}

ATF_TC(killed_in_fsync);
ATF_TC_HEAD(killed_in_fsync, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer killed while it holds the "
	    "sync lock (in its fsync) does not hold up the others");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(killed_in_fsync, tc)
{
	int status;

	pipes();
	patient();
	pid_t a = writer(0, H_HANG_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	pid_t b = writer(1, H_NOTE_TICKET);
	ATF_REQUIRE_EQ(wait_note(), 'T');
	ATF_REQUIRE(kill(a, SIGKILL) == 0);
	ATF_REQUIRE(waitpid(a, &status, 0) == a);
	res_t r = get_result();
	ATF_CHECK_EQ(r.who, 1);
	ATF_CHECK_EQ(r.rc, 0);
	/* Not covered by the fsync that never finished. */
	ATF_CHECK_EQ(r.fsyncs, 1);
	reap(b);
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 2);
	ATF_CHECK_EQ(c.synced, 2);
}

ATF_TC(killed_holding_record);
ATF_TC_HEAD(killed_holding_record, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer killed while it holds the "
	    "record lock does not hold up the others");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(killed_holding_record, tc)
{
	int status;

	pipes();
	patient();
	pid_t a = writer(0, H_HANG_LOCKED);
	ATF_REQUIRE_EQ(wait_note(), 'L');
	pid_t b = writer(1, 0);
	/* b is now waiting for the record lock (or about to). */
	usleep(50000);
	ATF_REQUIRE(kill(a, SIGKILL) == 0);
	ATF_REQUIRE(waitpid(a, &status, 0) == a);
	res_t r = get_result();
	ATF_CHECK_EQ(r.who, 1);
	ATF_CHECK_EQ(r.rc, 0);
	ATF_CHECK_EQ(r.fsyncs, 1);
	reap(b);
}


/* ---- Writers about to rename (dirsync_begin) ---- */

ATF_TC(waits_for_writer_in_flight);
ATF_TC_HEAD(waits_for_writer_in_flight, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer that would fsync waits for "
	    "one that is about to rename, and one fsync serves both");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(waits_for_writer_in_flight, tc)
{
	unsigned long n;

	/* B is in its file fsync (marked) when A would fsync the directory:
	 * A waits for B's rename, and one fsync serves both.  (The slot is
	 * in use already: the first writer into a free slot does not wait.) */
	pipes();
	patient();
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	pid_t b = writer(1, H_BEGIN_WAIT);
	ATF_REQUIRE_EQ(wait_note(), 'B');
	pid_t a = writer(0, H_NOTE_PAIR);
	ATF_REQUIRE_EQ(wait_note(), 'W');
	release();
	unsigned long total = 0;
	for (int i = 0; i < 2; i++) {
		res_t r = get_result();
		ATF_CHECK_EQ_MSG(r.rc, 0, "writer %d: %s", r.who, strerror(r.err));
		total += r.fsyncs;
		if (r.who == 0)
			ATF_CHECK_EQ(r.pair_waits, 1);
	}
	ATF_CHECK_EQ_MSG(total, 1, "two writers made %lu fsyncs", total);
	reap(a);
	reap(b);
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 3);
	ATF_CHECK_EQ(c.synced, 3);
}

ATF_TC(in_flight_writer_killed);
ATF_TC_HEAD(in_flight_writer_killed, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer killed while others wait "
	    "for its rename does not hold them up");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(in_flight_writer_killed, tc)
{
	unsigned long n;
	int status;

	pipes();
	patient();
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	pid_t b = writer(1, H_BEGIN_HANG);
	ATF_REQUIRE_EQ(wait_note(), 'B');
	pid_t a = writer(0, H_NOTE_PAIR);
	ATF_REQUIRE_EQ(wait_note(), 'W');
	ATF_REQUIRE(kill(b, SIGKILL) == 0);
	ATF_REQUIRE(waitpid(b, &status, 0) == b);
	res_t r = get_result();
	ATF_CHECK_EQ(r.who, 0);
	ATF_CHECK_EQ(r.rc, 0);
	ATF_CHECK_EQ(r.fsyncs, 1);
	reap(a);
}

ATF_TC_WITHOUT_HEAD(cancelled_mark);
ATF_TC_BODY(cancelled_mark, tc)
{
	unsigned long n;

	/* A writer that gave up (dirsync_cancel), and one whose process
	 * is gone, are waited for by nobody. */
	pipes();
	pid_t b = fork();
	ATF_REQUIRE(b >= 0);
	if (b == 0) {
		dirsync_t *ds = dirsync_new(STATE);
		dirsync_begin(ds, DIR);
		dirsync_cancel(ds);
		note('B');
		pause();
		_exit(0);
	}
	ATF_REQUIRE_EQ(wait_note(), 'B');
	pair_waits = 0;
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
	ATF_CHECK_EQ(pair_waits, 0);
	ATF_REQUIRE(kill(b, SIGKILL) == 0);
	reap(b);
}

/* ---- Stopped writers (SIGSTOP, a debugger): nobody waits for them ---- */

/* Generous: it only shows that the commit did not wait for the stopped
 * writer; the bound itself is 50 ms. */
#define PROMPT_MS	2000

ATF_TC(stopped_in_fsync);
ATF_TC_HEAD(stopped_in_fsync, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer stopped while it holds the "
	    "sync lock does not hold up another: that one fsyncs itself");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(stopped_in_fsync, tc)
{
	unsigned long n;

	pipes();
	pid_t a = writer(0, H_STOP_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	wait_stopped(a);
	/* B takes ticket 2 and finds the sync lock held. */
	pid_t b = writer(1, 0);
	res_t r = result_within(PROMPT_MS, a);
	ATF_CHECK_EQ(r.who, 1);
	ATF_CHECK_EQ_MSG(r.rc, 0, "%s", strerror(r.err));
	ATF_CHECK_EQ(r.fsyncs, 1);	/* durable by its own fsync */
	ATF_CHECK_EQ(r.gave_ups, 1);
	ATF_CHECK_MSG(r.ms < PROMPT_MS, "took %ld ms", r.ms);
	reap(b);
	/* A goes on and completes with its own fsync. */
	ATF_REQUIRE(kill(a, SIGCONT) == 0);
	r = get_result();
	ATF_CHECK_EQ(r.who, 0);
	ATF_CHECK_EQ(r.rc, 0);
	ATF_CHECK_EQ(r.fsyncs, 1);
	ATF_CHECK_EQ(r.gave_ups, 0);
	reap(a);
	check_nothing_locked();
	/* A's fsync began before B's ticket and covers only its own; B,
	 * without the sync lock, published nothing. */
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 2);
	ATF_CHECK_EQ(c.synced, 1);
	/* The next writer finds everything free and brings S up to R. */
	gave_ups = 0;
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
	ATF_CHECK_EQ(gave_ups, 0);
	c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 3);
	ATF_CHECK_EQ(c.synced, 3);
}

ATF_TC(stopped_holding_record);
ATF_TC_HEAD(stopped_holding_record, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer stopped while it holds the "
	    "record lock does not hold up another: that one fsyncs itself");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(stopped_holding_record, tc)
{
	unsigned long n;

	pipes();
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	pid_t a = writer(0, H_STOP_LOCKED);
	ATF_REQUIRE_EQ(wait_note(), 'L');
	wait_stopped(a);
	/* B cannot take a ticket. */
	pid_t b = writer(1, 0);
	res_t r = result_within(PROMPT_MS, a);
	ATF_CHECK_EQ(r.who, 1);
	ATF_CHECK_EQ_MSG(r.rc, 0, "%s", strerror(r.err));
	ATF_CHECK_EQ(r.fsyncs, 1);
	ATF_CHECK_EQ(r.gave_ups, 1);
	ATF_CHECK_MSG(r.ms < PROMPT_MS, "took %ld ms", r.ms);
	reap(b);
	ATF_REQUIRE(kill(a, SIGCONT) == 0);
	r = get_result();
	ATF_CHECK_EQ(r.who, 0);
	ATF_CHECK_EQ(r.rc, 0);
	ATF_CHECK_EQ(r.fsyncs, 1);
	reap(a);
	check_nothing_locked();
	/* B took no ticket; A took ticket 2 and fsynced for it. */
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 2);
	ATF_CHECK_EQ(c.synced, 2);
}

ATF_TC(stopped_in_flight);
ATF_TC_HEAD(stopped_in_flight, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer stopped while it holds its "
	    "in-flight mark does not hold up one that waits for its rename");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(stopped_in_flight, tc)
{
	unsigned long n;

	pipes();
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	pid_t a = writer(0, H_BEGIN_STOP);
	ATF_REQUIRE_EQ(wait_note(), 'B');
	wait_stopped(a);
	/* B would fsync, sees A's mark and waits for A's rename, once:
	 * its next commits do not wait for that mark again. */
	pid_t b = writer_n(1, 0, 3);
	res_t r = result_within(PROMPT_MS, a);
	ATF_CHECK_EQ(r.who, 1);
	ATF_CHECK_EQ_MSG(r.rc, 0, "%s", strerror(r.err));
	ATF_CHECK_EQ(r.fsyncs, 3);
	ATF_CHECK_EQ(r.pair_waits, 1);
	ATF_CHECK_EQ(r.gave_ups, 1);
	ATF_CHECK_MSG(r.ms < PROMPT_MS, "took %ld ms", r.ms);
	reap(b);
	/* B still took both locks (free) and published its fsyncs. */
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 4);
	ATF_CHECK_EQ(c.synced, 4);
	ATF_REQUIRE(kill(a, SIGCONT) == 0);
	r = get_result();
	ATF_CHECK_EQ(r.who, 0);
	ATF_CHECK_EQ(r.rc, 0);
	ATF_CHECK_EQ(r.fsyncs, 1);
	reap(a);
	check_nothing_locked();
	c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 5);
	ATF_CHECK_EQ(c.synced, 5);
}

ATF_TC(stopped_holdoff);
ATF_TC_HEAD(stopped_holdoff, tc)
{
	atf_tc_set_md_var(tc, "descr", "After one wait cut short, a writer "
	    "does not wait again for the stopped holder at every commit");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(stopped_holdoff, tc)
{
	enum { M = 5 };

	pipes();
	pid_t a = writer(0, H_STOP_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	wait_stopped(a);
	/* M commits in one process: the first waits 50 ms and gives up,
	 * the others do not wait; each fsyncs the directory itself. */
	pid_t b = writer_n(1, 0, M);
	res_t r = result_within(PROMPT_MS, a);
	ATF_CHECK_EQ_MSG(r.rc, 0, "%s", strerror(r.err));
	ATF_CHECK_EQ(r.fsyncs, M);
	ATF_CHECK_EQ_MSG(r.gave_ups, 1, "%d waits cut short", r.gave_ups);
	reap(b);
	ATF_REQUIRE(kill(a, SIGCONT) == 0);
	r = get_result();
	ATF_CHECK_EQ(r.rc, 0);
	reap(a);
	check_nothing_locked();
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, M + 1);
	ATF_CHECK_EQ(c.synced, 1);
}

ATF_TC(stopped_holdoff_ends);
ATF_TC_HEAD(stopped_holdoff_ends, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer that gave up waiting waits "
	    "again once the sync lock has moved on (S changed)");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(stopped_holdoff_ends, tc)
{
	pid_t pids[3];

	pipes();
	pid_t a = writer(0, H_STOP_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	wait_stopped(a);
	/* B's first commit gives up waiting for A; B stops after it. */
	pid_t b = writer_n(1, H_NOTE_WAIT | H_STOP_BETWEEN | H_PATIENT_LATER,
	    2);
	pids[0] = a;
	pids[1] = b;
	ATF_REQUIRE_EQ(wait_note_within(PROMPT_MS, pids, 2, "B did not wait"),
	    'Q');
	ATF_REQUIRE_EQ(wait_note_within(PROMPT_MS, pids, 2,
	    "B waited more than 2 s for a stopped writer"), 'D');
	wait_stopped(b);
	/* A goes on and publishes S = 1. */
	ATF_REQUIRE(kill(a, SIGCONT) == 0);
	res_t r = get_result();
	ATF_CHECK_EQ(r.who, 0);
	ATF_CHECK_EQ(r.rc, 0);
	reap(a);
	/* C holds the sync lock (in its fsync, until released) when B
	 * commits again: B, having seen S move, waits for it. */
	pid_t c = writer(2, H_BLOCK_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	ATF_REQUIRE(kill(b, SIGCONT) == 0);
	pids[0] = c;
	ATF_REQUIRE_EQ(wait_note_within(PROMPT_MS, pids, 2,
	    "B's next commit did not wait (still holding off)"), 'Q');
	release();
	for (int i = 0; i < 2; i++) {
		r = get_result();
		ATF_CHECK_EQ_MSG(r.rc, 0, "writer %d: %s", r.who,
		    strerror(r.err));
		if (r.who == 1) {
			ATF_CHECK_EQ(r.gave_ups, 1);
			ATF_CHECK_EQ(r.fsyncs, 2);
		} else {
			ATF_CHECK_EQ(r.fsyncs, 1);
		}
	}
	reap(b);
	reap(c);
	check_nothing_locked();
	dirsync_counters_t cs = counters(DIR);
	ATF_CHECK_EQ(cs.renamed, 4);
	ATF_CHECK_EQ(cs.synced, 4);
}

ATF_TC(stopped_signals_blocked);
ATF_TC_HEAD(stopped_signals_blocked, tc)
{
	atf_tc_set_md_var(tc, "descr", "The bound holds when the committing "
	    "process blocks every signal");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(stopped_signals_blocked, tc)
{
	pipes();
	pid_t a = writer(0, H_STOP_FSYNC);
	ATF_REQUIRE_EQ(wait_note(), 'F');
	wait_stopped(a);
	pid_t b = writer(1, H_MASK_ALL);
	res_t r = result_within(PROMPT_MS, a);
	ATF_CHECK_EQ_MSG(r.rc, 0, "%s", strerror(r.err));
	ATF_CHECK_EQ(r.fsyncs, 1);
	ATF_CHECK_EQ(r.gave_ups, 1);
	reap(b);
	ATF_REQUIRE(kill(a, SIGCONT) == 0);
	r = get_result();
	ATF_CHECK_EQ(r.rc, 0);
	reap(a);
	check_nothing_locked();
}

/* ---- Many writers at once, checked against the event log ---- */

typedef struct ev {
	char what;
	long pid;
	unsigned long long v;
} ev_t;

/* Every commit that returned without its own fsync (C) was preceded,
 * after the writer's rename (R), by an fsync that began (F) and ended
 * without error (E 0), in log order.  Log order is real order: each line
 * is one write with O_APPEND, R is written after rename() returned, F
 * before fsync() is called, E after it returned, C before the commit
 * returns. */
static void check_log(const char *path, int *covered, int *fsyncs,
    int *gave_up)
{
	str_t s = STR_INIT;
	ev_t *e = NULL;
	size_t n = 0, cap = 0;

	ATF_REQUIRE(file_read_all(path, &s, 1 << 26) == 0);
	for (char *p = s.buf; p && *p;) {
		char *nl = strchr(p, '\n');
		ATF_REQUIRE(nl != NULL);
		*nl = 0;
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			e = realloc(e, cap * sizeof(*e));
			ATF_REQUIRE(e != NULL);
		}
		ATF_REQUIRE(sscanf(p, "%c %ld %llu", &e[n].what, &e[n].pid,
		    &e[n].v) == 3);
		n++;
		p = nl + 1;
	}
	*covered = *fsyncs = *gave_up = 0;
	for (size_t i = 0; i < n; i++) {
		if (e[i].what == 'F')
			(*fsyncs)++;
		if (e[i].what == 'G')
			(*gave_up)++;
		if (e[i].what != 'C')
			continue;
		(*covered)++;
		size_t r = i;
		while (r > 0 && !(e[r - 1].what == 'R' && e[r - 1].pid == e[i].pid))
			r--;
		ATF_REQUIRE_MSG(r > 0, "no rename before line %zu", i + 1);
		bool ok = false;
		for (size_t f = r; f < i && !ok; f++) {
			if (e[f].what != 'F')
				continue;
			/* its end: the next E of the same process */
			for (size_t j = f + 1; j < i; j++) {
				if (e[j].what == 'E' && e[j].pid == e[f].pid) {
					ok = e[j].v == 0;
					break;
				}
			}
		}
		ATF_CHECK_MSG(ok, "log line %zu: pid %ld returned without an fsync "
		    "that began after its rename", i + 1, e[i].pid);
	}
	free(e);
	str_release(&s);
}

ATF_TC(many_writers);
ATF_TC_HEAD(many_writers, tc)
{
	atf_tc_set_md_var(tc, "descr", "8 processes commit 40 renames each "
	    "at once: each returns only after an fsync that began after its "
	    "rename (from the event log)");
	atf_tc_set_md_var(tc, "timeout", "120");
}
ATF_TC_BODY(many_writers, tc)
{
	enum { N = 8, M = 40 };
	pid_t pid[N];
	int covered, fsyncs, gave_up, status;

	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	evlog = open("events", O_WRONLY | O_CREAT | O_APPEND, 0600);
	ATF_REQUIRE(evlog >= 0);
	dirsync_hook = test_hook;
	hook_mode = H_LOG;
	for (int i = 0; i < N; i++) {
		pid[i] = fork();
		ATF_REQUIRE(pid[i] >= 0);
		if (pid[i] == 0) {
			dirsync_t *ds = dirsync_new(STATE);
			for (int m = 0; m < M; m++) {
				/* Half of them say they are about to rename. */
				if (i % 2)
					dirsync_begin(ds, DIR);
				rename_into(DIR);
				log_event("R", 0);
				if (dirsync_commit(ds, DIR) < 0)
					_exit(1);
			}
			dirsync_free(ds);
			_exit(0);
		}
	}
	for (int i = 0; i < N; i++) {
		ATF_REQUIRE(waitpid(pid[i], &status, 0) == pid[i]);
		ATF_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "writer %d failed", i);
	}
	check_log("events", &covered, &fsyncs, &gave_up);
	/* Informational: how much was shared this time. */
	printf("%d commits, %d directory fsyncs, %d commits covered by "
	    "another's fsync, %d waits cut short\n", N * M, fsyncs, covered,
	    gave_up);
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, N * M);
	/* A writer that stopped waiting (a very slow machine) fsynced on its
	 * own and published nothing: S may then stay behind R. */
	if (gave_up == 0)
		ATF_CHECK_EQ(c.synced, N * M);
	else
		ATF_CHECK(c.synced <= N * M);
}

/* ---- The state file: damage, limits, other directories ---- */

static void start_log(void)
{
	ATF_REQUIRE(log_to_file("log") == 0);
}

static bool log_has(const char *what)
{
	str_t s = STR_INIT;
	bool r;

	if (file_read_all("log", &s, 1 << 20) < 0)
		return false;
	r = s.buf && strstr(s.buf, what) != NULL;
	str_release(&s);
	return r;
}

/* Overwrites bytes of dir's slot, from byte off of the slot. */
static void damage(const char *dir, off_t off, const void *bytes, size_t len)
{
	struct stat st;
	int fd;

	ATF_REQUIRE(stat(dir, &st) == 0);
	fd = open(STATE, O_WRONLY);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE(pwrite(fd, bytes, len, (off_t)dirsync_slot_index(st.st_dev,
	    st.st_ino) * DIRSYNC_SLOT_SIZE + off) == (ssize_t)len);
	close(fd);
}

ATF_TC_WITHOUT_HEAD(damaged_slot);
ATF_TC_BODY(damaged_slot, tc)
{
	unsigned long n;

	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	start_log();
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	/* Make the counters say "synced far ahead" (S is the fifth word):
	 * with a check value that no longer matches, the slot must not be
	 * believed. */
	damage(DIR, 32, "\xff\xff\xff\xff", 4);
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
	ATF_CHECK(log_has("damaged (bad check value); reset"));
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 1);
	ATF_CHECK_EQ(c.synced, 1);
}

ATF_TC_WITHOUT_HEAD(synced_ahead);
ATF_TC_BODY(synced_ahead, tc)
{
	unsigned long n;

	/* A slot whose check is right but whose S is ahead of R (no
	 * honest run writes that): the next ticket would look covered. */
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	start_log();
	set_counters(DIR, 5, 9, 0);
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
	ATF_CHECK(log_has("damaged (counters out of range); reset"));
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 1);
	ATF_CHECK_EQ(c.synced, 1);
}

ATF_TC_WITHOUT_HEAD(counter_limits);
ATF_TC_BODY(counter_limits, tc)
{
	const uint64_t lim = (uint64_t)1 << 63;
	unsigned long n;

	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	start_log();
	/* Values a wrapping counter would have: the next ticket would be
	 * 0, "covered" by S = 2^64-1.  They are out of range. */
	set_counters(DIR, UINT64_MAX, UINT64_MAX, 0);
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 1);
	ATF_CHECK_EQ(c.synced, 1);
	/* The last ticket below the limit, then a fresh start. */
	set_counters(DIR, lim - 2, lim - 2, 0);
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
	c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, lim - 1);
	ATF_CHECK_EQ(c.synced, lim - 1);
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
	c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 1);
	ATF_CHECK_EQ(c.synced, 1);
}

ATF_TC_WITHOUT_HEAD(other_directory);
ATF_TC_BODY(other_directory, tc)
{
	struct stat st;
	char other[64];
	unsigned long n;
	unsigned k;
	int i;

	/* A second directory that uses the same slot as DIR. */
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	ATF_REQUIRE(stat(DIR, &st) == 0);
	k = dirsync_slot_index(st.st_dev, st.st_ino);
	for (i = 0; i < 20000; i++) {
		snprintf(other, sizeof(other), "o%d", i);
		ATF_REQUIRE(mkdir(other, 0700) == 0);
		ATF_REQUIRE(stat(other, &st) == 0);
		/* (Kept: a removed directory's inode would come back.) */
		if (dirsync_slot_index(st.st_dev, st.st_ino) == k)
			break;
	}
	ATF_REQUIRE_MSG(i < 20000, "no directory with the same slot");
	/* The other directory's slot says everything is synced: that is no
	 * reason to skip DIR's fsync. */
	set_counters(other, 100, 100, 0);
	ATF_REQUIRE_EQ(commit_here(STATE, DIR, &n), 0);
	ATF_CHECK_EQ(n, 1);
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 1);
	ATF_CHECK_EQ(c.synced, 1);
	/* And back. */
	ATF_REQUIRE_EQ(commit_here(STATE, other, &n), 0);
	ATF_CHECK_EQ(n, 1);
	c = counters(other);
	ATF_CHECK_EQ(c.renamed, 1);
}

ATF_TC_WITHOUT_HEAD(replaced_directory);
ATF_TC_BODY(replaced_directory, tc)
{
	dirsync_t *ds = dirsync_new(STATE);
	struct stat st;

	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	rename_into(DIR);
	ATF_REQUIRE_EQ(dirsync_commit(ds, DIR), 0);
	/* The directory at the path is replaced: the next commit must
	 * fsync the new one, not the one the handle had open. */
	ATF_REQUIRE(rename(DIR, "d.old") == 0);
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	rename_into(DIR);
	ATF_REQUIRE_EQ(dirsync_commit(ds, DIR), 0);
	dirsync_counters_t c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 1);
	/* The state file removed: it is made again. */
	ATF_REQUIRE(unlink(STATE) == 0);
	rename_into(DIR);
	ATF_REQUIRE_EQ(dirsync_commit(ds, DIR), 0);
	ATF_CHECK(stat(STATE, &st) == 0);
	c = counters(DIR);
	ATF_CHECK_EQ(c.renamed, 1);
	dirsync_free(ds);
}

/* ---- Unusable state files: a plain fsync every time, one warning ---- */

static void check_fallback(const char *state, const char *reason)
{
	unsigned long n;

	start_log();
	for (int i = 0; i < 2; i++) {
		dirsync_t *ds = dirsync_new(state);
		unsigned long before = dirsync_fsync_count;
		for (int j = 0; j < 3; j++) {
			rename_into(DIR);
			ATF_CHECK_EQ(dirsync_commit(ds, DIR), 0);
		}
		n = dirsync_fsync_count - before;
		ATF_CHECK_EQ_MSG(n, 3, "%lu fsyncs for 3 commits", n);
		dirsync_free(ds);
	}
	ATF_CHECK_MSG(log_has(reason), "no warning '%s'", reason);
	ATF_CHECK(log_has("every commit fsyncs its own directory"));
}

ATF_TC_WITHOUT_HEAD(fallback_no_directory);
ATF_TC_BODY(fallback_no_directory, tc)
{
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	check_fallback("nodir/state", "cannot open: No such file or directory");
}

ATF_TC_WITHOUT_HEAD(fallback_symlink);
ATF_TC_BODY(fallback_symlink, tc)
{
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	put_file("target", "");
	ATF_REQUIRE(symlink("target", STATE) == 0);
	check_fallback(STATE, "cannot open");
	struct stat st;
	ATF_REQUIRE(stat("target", &st) == 0);
	ATF_CHECK_EQ(st.st_size, 0);
}

ATF_TC(fallback_fifo);
ATF_TC_HEAD(fallback_fifo, tc)
{
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(fallback_fifo, tc)
{
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	ATF_REQUIRE(mkfifo(STATE, 0600) == 0);
	check_fallback(STATE, "not a regular file");
}

ATF_TC_WITHOUT_HEAD(fallback_writable_by_others);
ATF_TC_BODY(fallback_writable_by_others, tc)
{
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	put_file(STATE, "");
	ATF_REQUIRE(chmod(STATE, 0620) == 0);
	check_fallback(STATE, "writable by group or others");
}

ATF_TC_WITHOUT_HEAD(fallback_two_links);
ATF_TC_BODY(fallback_two_links, tc)
{
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	put_file(STATE, "");
	ATF_REQUIRE(chmod(STATE, 0600) == 0);
	ATF_REQUIRE(link(STATE, "second") == 0);
	check_fallback(STATE, "more than one link");
}

ATF_TC_WITHOUT_HEAD(fallback_other_owner);
ATF_TC_BODY(fallback_other_owner, tc)
{
	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	put_file(STATE, "");
	if (geteuid() == 0) {
		/* Root can write it, but it is someone else's: expected of
		 * postdrop run by root, so a debug line, not a warning. */
		ATF_REQUIRE(chown(STATE, 65534, 65534) == 0);
		ATF_REQUIRE(chmod(STATE, 0600) == 0);
		log_verbose = 1;
		check_fallback(STATE, "not owned by this process's user");
		ATF_CHECK(!log_has("warning: dirsync"));
	} else {
		ATF_REQUIRE(chmod(STATE, 0400) == 0);
		log_verbose = 1;
		check_fallback(STATE, "cannot open: Permission denied");
		ATF_CHECK(!log_has("warning: dirsync"));
	}
}

/* The state file belongs to the owner of its directory: root (postdrop
 * for root's mail) makes it for that user and uses it; it never leaves
 * a file of its own that mail_owner's writers cannot open. */
ATF_TC_WITHOUT_HEAD(state_belongs_to_directory_owner);
ATF_TC_BODY(state_belongs_to_directory_owner, tc)
{
	struct stat st;
	unsigned long before, n;

	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	ATF_REQUIRE(mkdir("sdir", 0755) == 0);
	if (geteuid() != 0)
		atf_tc_skip("needs root (a directory of another user)");
	ATF_REQUIRE(chown("sdir", 65534, 65534) == 0);
	start_log();
	log_verbose = 1;
	{
		dirsync_t *ds = dirsync_new("sdir/state");
		before = dirsync_fsync_count;
		for (int j = 0; j < 3; j++) {
			rename_into(DIR);
			ATF_CHECK_EQ(dirsync_commit(ds, DIR), 0);
		}
		n = dirsync_fsync_count - before;
		dirsync_free(ds);
	}
	ATF_REQUIRE_EQ(stat("sdir/state", &st), 0);
	ATF_CHECK_EQ(st.st_uid, 65534);
	ATF_CHECK_EQ(st.st_mode & 0777, 0600);
	ATF_CHECK_MSG(n <= 3, "%lu fsyncs for 3 commits", n);
	ATF_CHECK(!log_has("every commit fsyncs its own directory"));
	ATF_CHECK(!log_has("warning: dirsync"));
}

ATF_TC_WITHOUT_HEAD(fallback_fails_when_fsync_fails);
ATF_TC_BODY(fallback_fails_when_fsync_fails, tc)
{
	dirsync_t *ds = dirsync_new("nodir/state");

	ATF_REQUIRE(mkdir(DIR, 0700) == 0);
	dirsync_hook = test_hook;
	hook_mode = H_FAIL_FSYNC;
	rename_into(DIR);
	errno = 0;
	ATF_CHECK_EQ(dirsync_commit(ds, DIR), -1);
	ATF_CHECK_EQ(errno, EIO);
	dirsync_free(ds);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, alone);
	ATF_TP_ADD_TC(tp, rename_during_fsync);
	ATF_TP_ADD_TC(tp, shared_fsync);
	ATF_TP_ADD_TC(tp, failed_fsync);
	ATF_TP_ADD_TC(tp, killed_in_fsync);
	ATF_TP_ADD_TC(tp, killed_holding_record);
	ATF_TP_ADD_TC(tp, waits_for_writer_in_flight);
	ATF_TP_ADD_TC(tp, in_flight_writer_killed);
	ATF_TP_ADD_TC(tp, cancelled_mark);
	ATF_TP_ADD_TC(tp, stopped_in_fsync);
	ATF_TP_ADD_TC(tp, stopped_holding_record);
	ATF_TP_ADD_TC(tp, stopped_in_flight);
	ATF_TP_ADD_TC(tp, stopped_holdoff);
	ATF_TP_ADD_TC(tp, stopped_holdoff_ends);
	ATF_TP_ADD_TC(tp, stopped_signals_blocked);
	ATF_TP_ADD_TC(tp, many_writers);
	ATF_TP_ADD_TC(tp, damaged_slot);
	ATF_TP_ADD_TC(tp, synced_ahead);
	ATF_TP_ADD_TC(tp, counter_limits);
	ATF_TP_ADD_TC(tp, other_directory);
	ATF_TP_ADD_TC(tp, replaced_directory);
	ATF_TP_ADD_TC(tp, fallback_no_directory);
	ATF_TP_ADD_TC(tp, state_belongs_to_directory_owner);
	ATF_TP_ADD_TC(tp, fallback_symlink);
	ATF_TP_ADD_TC(tp, fallback_fifo);
	ATF_TP_ADD_TC(tp, fallback_writable_by_others);
	ATF_TP_ADD_TC(tp, fallback_two_links);
	ATF_TP_ADD_TC(tp, fallback_other_owner);
	ATF_TP_ADD_TC(tp, fallback_fails_when_fsync_fails);
	return atf_no_error();
}
