/* Unit tests for libutil/file: safe open, exclusive create, atomic
 * replace, locking between processes, bounded reads, mkdir -p. */
#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "file.h"
#include "str.h"
#include "testutil.h"

static char *get_file(const char *path)
{
	str_t s = STR_INIT;
	ATF_REQUIRE_MSG(file_read_all(path, &s, 1 << 20) == 0, "read %s: %s",
	    path, strerror(errno));
	return str_steal(&s);
}

/* Number of directory entries whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	ATF_REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return n;
}

ATF_TC_WITHOUT_HEAD(open_read_regular);
ATF_TC_BODY(open_read_regular, tc)
{
	put_file("f", "hello\n");
	int fd = file_open_read("f", FILE_ANY_OWNER);
	ATF_REQUIRE(fd >= 0);
	char buf[16];
	ATF_CHECK_EQ(read(fd, buf, sizeof(buf)), 6);
	/* close-on-exec, so daemons do not leak it into children */
	ATF_CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* O_NONBLOCK from the safe open stays (it means nothing for a
	 * regular file): reading to the end works as with a blocking one */
	ATF_CHECK_EQ(read(fd, buf, sizeof(buf)), 0);
	close(fd);
	errno = 0;
	ATF_CHECK_EQ(file_open_read("missing", FILE_ANY_OWNER), -1);
	ATF_CHECK_EQ(errno, ENOENT);
}

ATF_TC_WITHOUT_HEAD(open_read_refuses_symlink);
ATF_TC_BODY(open_read_refuses_symlink, tc)
{
	put_file("target", "secret\n");
	ATF_REQUIRE(symlink("target", "link") == 0);
	errno = 0;
	ATF_CHECK_EQ(file_open_read("link", FILE_ANY_OWNER), -1);
	ATF_CHECK_EQ(errno, ELOOP);
	str_t s = STR_INIT;
	ATF_CHECK_EQ(file_read_all("link", &s, 100), -1);
	ATF_CHECK_EQ(str_len(&s), 0);
	/* the _follow variants are for files only privileged users place */
	int fd = file_open_read_follow("link", FILE_ANY_OWNER);
	ATF_CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	ATF_CHECK_EQ(file_read_all_follow("link", &s, 100), 0);
	ATF_CHECK_STREQ(str_cstr(&s), "secret\n");
	/* they still want a regular file at the end */
	ATF_REQUIRE(mkfifo("fifo", 0600) == 0);
	ATF_REQUIRE(symlink("fifo", "fifolink") == 0);
	errno = 0;
	ATF_CHECK_EQ(file_open_read_follow("fifolink", FILE_ANY_OWNER), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	str_release(&s);
}

ATF_TC_WITHOUT_HEAD(open_read_refuses_non_regular);
ATF_TC_BODY(open_read_refuses_non_regular, tc)
{
	ATF_REQUIRE(mkfifo("fifo", 0600) == 0);
	/* must neither hang (no writer) nor succeed */
	errno = 0;
	ATF_CHECK_EQ(file_open_read("fifo", FILE_ANY_OWNER), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_REQUIRE(mkdir("dir", 0700) == 0);
	errno = 0;
	ATF_CHECK_EQ(file_open_read("dir", FILE_ANY_OWNER), -1);
	ATF_CHECK_EQ(errno, EISDIR);
}

ATF_TC_WITHOUT_HEAD(open_read_owner_check);
ATF_TC_BODY(open_read_owner_check, tc)
{
	put_file("mine", "x");
	int fd = file_open_read("mine", geteuid());
	ATF_CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	errno = 0;
	ATF_CHECK_EQ(file_open_read("mine", geteuid() + 1), -1);
	ATF_CHECK_EQ(errno, EPERM);
}

ATF_TC_WITHOUT_HEAD(create_excl);
ATF_TC_BODY(create_excl, tc)
{
	int fd = file_create_excl("new", 0600);
	ATF_REQUIRE(fd >= 0);
	ATF_CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	errno = 0;
	ATF_CHECK_EQ(file_create_excl("new", 0600), -1);
	ATF_CHECK_EQ(errno, EEXIST);
	/* A dangling symlink must not be followed to create its target. */
	ATF_REQUIRE(symlink("victim", "trap") == 0);
	errno = 0;
	ATF_CHECK_EQ(file_create_excl("trap", 0600), -1);
	ATF_CHECK_EQ(errno, EEXIST);
	ATF_CHECK(access("victim", F_OK) < 0);
}

ATF_TC_WITHOUT_HEAD(replace_basic);
ATF_TC_BODY(replace_basic, tc)
{
	mode_t old = umask(022);
	/* new file: the mode asked for, exactly (not cut by the umask) */
	ATF_REQUIRE(file_replace("cf", "one\n", 4, 0664) == 0);
	umask(old);
	struct stat st;
	ATF_REQUIRE(stat("cf", &st) == 0);
	ATF_CHECK_EQ(st.st_mode & 07777, 0664);
	char *s = get_file("cf");
	ATF_CHECK_STREQ(s, "one\n");
	free(s);
	/* existing file: new contents, old mode kept */
	ATF_REQUIRE(chmod("cf", 0640) == 0);
	ATF_REQUIRE(file_replace("cf", "two lines\nhere\n", 15, 0600) == 0);
	ATF_REQUIRE(stat("cf", &st) == 0);
	ATF_CHECK_EQ(st.st_mode & 07777, 0640);
	s = get_file("cf");
	ATF_CHECK_STREQ(s, "two lines\nhere\n");
	free(s);
	/* no temporary file left behind */
	ATF_CHECK_EQ(count_prefixed(".", "cf.tmp"), 0);
	/* empty contents are fine */
	ATF_REQUIRE(file_replace("cf", "", 0, 0600) == 0);
	s = get_file("cf");
	ATF_CHECK_STREQ(s, "");
	free(s);
}

ATF_TC_WITHOUT_HEAD(replace_does_not_follow_symlink);
ATF_TC_BODY(replace_does_not_follow_symlink, tc)
{
	put_file("target", "keep me\n");
	ATF_REQUIRE(symlink("target", "cf") == 0);
	ATF_REQUIRE(file_replace("cf", "new\n", 4, 0644) == 0);
	struct stat st;
	ATF_REQUIRE(lstat("cf", &st) == 0);
	ATF_CHECK(S_ISREG(st.st_mode));
	char *s = get_file("target");
	ATF_CHECK_STREQ(s, "keep me\n");
	free(s);
}

ATF_TC_WITHOUT_HEAD(replace_failure_keeps_old);
ATF_TC_BODY(replace_failure_keeps_old, tc)
{
	put_file("cf", "old contents\n");
	/* The write fails half-way (file size limit) in a child process:
	 * the old contents must survive and no temp file may remain. */
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 1000, 1000 };
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(2);
		static char big[100000];
		memset(big, 'x', sizeof(big));
		int rc = file_replace("cf", big, sizeof(big), 0644);
		_exit(rc == -1 && errno == EFBIG ? 0 : 1);
	}
	int status;
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	ATF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	char *s = get_file("cf");
	ATF_CHECK_STREQ(s, "old contents\n");
	free(s);
	ATF_CHECK_EQ(count_prefixed(".", "cf.tmp"), 0);
	/* a missing directory: error, nothing created */
	errno = 0;
	ATF_CHECK_EQ(file_replace("nodir/cf", "x", 1, 0644), -1);
	ATF_CHECK_EQ(errno, ENOENT);
}

/* A writer process replaces the file over and over while we read it:
 * every read must see one whole version, never a mix or a short file. */
ATF_TC_WITHOUT_HEAD(replace_is_atomic_for_readers);
ATF_TC_BODY(replace_is_atomic_for_readers, tc)
{
	enum { LEN_A = 70000, LEN_B = 30000, ROUNDS = 60 };
	static char a[LEN_A], b[LEN_B];
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	ATF_REQUIRE(file_replace("cf", a, sizeof(a), 0644) == 0);
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < ROUNDS; i++) {
			const char *d = (i & 1) ? a : b;
			size_t n = (i & 1) ? sizeof(a) : sizeof(b);
			if (file_replace("cf", d, n, 0644) < 0)
				_exit(1);
		}
		_exit(0);
	}
	int reads = 0, bad = 0, done = 0, status = 0;
	str_t s = STR_INIT;
	/* Bounded: stop when the writer is done or after many reads. */
	while (!done && reads < 200000) {
		str_reset(&s);
		if (file_read_all("cf", &s, 1 << 20) < 0) {
			bad++;
			break;
		}
		reads++;
		bool is_a = str_len(&s) == LEN_A && memcmp(s.buf, a, LEN_A) == 0;
		bool is_b = str_len(&s) == LEN_B && memcmp(s.buf, b, LEN_B) == 0;
		if (!is_a && !is_b)
			bad++;
		if (waitpid(pid, &status, WNOHANG) == pid)
			done = 1;
	}
	if (!done)
		ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	str_release(&s);
	ATF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ATF_CHECK_EQ(bad, 0);
	ATF_CHECK(reads > 0);
	ATF_CHECK_EQ(count_prefixed(".", "cf.tmp"), 0);
}

/* Runs in a child: tries a no-wait lock of kind how on path and exits 0
 * if it got it, 1 if it was busy (EAGAIN), 2 on any other error. */
static int child_try_lock(const char *path, int how)
{
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		if (fd < 0)
			_exit(2);
		if (file_lock(fd, how | FILE_LOCK_NOWAIT) == 0)
			_exit(0);
		_exit(errno == EAGAIN ? 1 : 2);
	}
	int status;
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	ATF_REQUIRE(WIFEXITED(status));
	return WEXITSTATUS(status);
}

ATF_TC_WITHOUT_HEAD(lock_conflicts_between_processes);
ATF_TC_BODY(lock_conflicts_between_processes, tc)
{
	put_file("lockfile", "");
	int fd = open("lockfile", O_RDWR);
	ATF_REQUIRE(fd >= 0);
	/* free: the child gets either kind */
	ATF_CHECK_EQ(child_try_lock("lockfile", FILE_LOCK_EXCLUSIVE), 0);
	/* exclusive held here: the child gets neither */
	ATF_REQUIRE(file_lock(fd, FILE_LOCK_EXCLUSIVE) == 0);
	ATF_CHECK_EQ(child_try_lock("lockfile", FILE_LOCK_EXCLUSIVE), 1);
	ATF_CHECK_EQ(child_try_lock("lockfile", FILE_LOCK_SHARED), 1);
	/* shared held here: another shared is fine, exclusive is not */
	ATF_REQUIRE(file_lock(fd, FILE_LOCK_SHARED) == 0);
	ATF_CHECK_EQ(child_try_lock("lockfile", FILE_LOCK_SHARED), 0);
	ATF_CHECK_EQ(child_try_lock("lockfile", FILE_LOCK_EXCLUSIVE), 1);
	/* released: free again */
	ATF_REQUIRE(file_lock(fd, FILE_LOCK_UNLOCK) == 0);
	ATF_CHECK_EQ(child_try_lock("lockfile", FILE_LOCK_EXCLUSIVE), 0);
	close(fd);
	errno = 0;
	ATF_CHECK_EQ(file_lock(fd, FILE_LOCK_EXCLUSIVE), -1);
	ATF_CHECK_EQ(errno, EBADF);
	ATF_CHECK_EQ(file_lock(0, 99), -1);
}

/* A waiting lock blocks until the holder lets go. */
ATF_TC_WITHOUT_HEAD(lock_wait);
ATF_TC_BODY(lock_wait, tc)
{
	put_file("lockfile", "");
	int fd = open("lockfile", O_RDWR);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE(file_lock(fd, FILE_LOCK_EXCLUSIVE) == 0);
	int p[2];
	ATF_REQUIRE(pipe(p) == 0);
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		int cfd = open("lockfile", O_RDWR);
		if (cfd < 0 || file_lock(cfd, FILE_LOCK_EXCLUSIVE) < 0)
			_exit(2);
		(void)!write(p[1], "L", 1);
		_exit(0);
	}
	close(p[1]);
	/* The child cannot have the lock yet: nothing to read for a while.
	 * (Not a timing assertion: a premature byte would be a bug.) */
	struct timeval tv = { 0, 200000 };
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	ATF_CHECK_EQ(select(p[0] + 1, &rs, NULL, NULL, &tv), 0);
	ATF_REQUIRE(file_lock(fd, FILE_LOCK_UNLOCK) == 0);
	char c;
	ATF_CHECK_EQ(read(p[0], &c, 1), 1);
	int status;
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	ATF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
	close(p[0]);
}

ATF_TC_WITHOUT_HEAD(read_all_limit);
ATF_TC_BODY(read_all_limit, tc)
{
	str_t s = STR_INIT;
	put_file("ten", "0123456789");
	ATF_CHECK_EQ(file_read_all("ten", &s, 10), 0);
	ATF_CHECK_STREQ(str_cstr(&s), "0123456789");
	str_reset(&s);
	errno = 0;
	ATF_CHECK_EQ(file_read_all("ten", &s, 9), -1);
	ATF_CHECK_EQ(errno, EFBIG);
	/* appends to what is there */
	str_set(&s, ">");
	ATF_CHECK_EQ(file_read_all("ten", &s, 100), 0);
	ATF_CHECK_STREQ(str_cstr(&s), ">0123456789");
	put_file("empty", "");
	str_reset(&s);
	ATF_CHECK_EQ(file_read_all("empty", &s, 0), 0);
	ATF_CHECK_EQ(str_len(&s), 0);
	/* a big file with no practical limit */
	static char big[300000];
	memset(big, 'z', sizeof(big));
	ATF_REQUIRE(file_replace("big", big, sizeof(big), 0644) == 0);
	str_reset(&s);
	ATF_CHECK_EQ(file_read_all("big", &s, (size_t)-1), 0);
	ATF_CHECK_EQ(str_len(&s), sizeof(big));
	str_release(&s);
}

ATF_TC_WITHOUT_HEAD(mkdirs);
ATF_TC_BODY(mkdirs, tc)
{
	struct stat st;
	mode_t old = umask(0);
	ATF_CHECK_EQ(file_mkdirs("a/b//c/", 0750), 0);
	umask(old);
	ATF_REQUIRE(stat("a/b/c", &st) == 0);
	ATF_CHECK(S_ISDIR(st.st_mode));
	ATF_CHECK_EQ(st.st_mode & 0777, 0750);
	ATF_REQUIRE(stat("a", &st) == 0);
	ATF_CHECK_EQ(st.st_mode & 0777, 0750);
	/* existing: fine */
	ATF_CHECK_EQ(file_mkdirs("a/b/c", 0700), 0);
	/* absolute path */
	char cwd[4096], abs[4200];
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(abs, sizeof(abs), "%s/x/y", cwd);
	ATF_CHECK_EQ(file_mkdirs(abs, 0700), 0);
	ATF_CHECK(stat("x/y", &st) == 0 && S_ISDIR(st.st_mode));
	/* a file in the way */
	put_file("a/file", "");
	errno = 0;
	ATF_CHECK_EQ(file_mkdirs("a/file/d", 0700), -1);
	ATF_CHECK_EQ(errno, ENOTDIR);
	errno = 0;
	ATF_CHECK_EQ(file_mkdirs("a/file", 0700), -1);
	ATF_CHECK_EQ(errno, ENOTDIR);
	ATF_CHECK_EQ(file_mkdirs("", 0700), -1);
}

/* The durable variant makes the same directories (that it fsyncs each
 * new one's parent is what t_powerloss checks). */
ATF_TC_WITHOUT_HEAD(mkdirs_durable);
ATF_TC_BODY(mkdirs_durable, tc)
{
	struct stat st;
	char cwd[4096], abs[4200];

	ATF_CHECK_EQ(file_mkdirs_durable("d/e/f", 0700), 0);
	ATF_CHECK(stat("d/e/f", &st) == 0 && S_ISDIR(st.st_mode));
	ATF_CHECK_EQ(file_mkdirs_durable("d/e/f", 0700), 0);
	ATF_CHECK_EQ(file_mkdirs_durable("g", 0700), 0);
	ATF_CHECK(stat("g", &st) == 0 && S_ISDIR(st.st_mode));
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(abs, sizeof(abs), "%s/h/i", cwd);
	ATF_CHECK_EQ(file_mkdirs_durable(abs, 0700), 0);
	ATF_CHECK(stat("h/i", &st) == 0 && S_ISDIR(st.st_mode));
	put_file("d/file", "");
	errno = 0;
	ATF_CHECK_EQ(file_mkdirs_durable("d/file/x", 0700), -1);
	ATF_CHECK_EQ(errno, ENOTDIR);
}

ATF_TC_WITHOUT_HEAD(fsync_and_rename);
ATF_TC_BODY(fsync_and_rename, tc)
{
	put_file("f", "data");
	ATF_CHECK_EQ(file_fsync_path("f"), 0);
	ATF_CHECK_EQ(file_fsync_dir("."), 0);
	ATF_CHECK_EQ(file_fsync_parent("f"), 0);
	errno = 0;
	ATF_CHECK_EQ(file_fsync_dir("nodir"), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	errno = 0;
	ATF_CHECK_EQ(file_fsync_parent("nodir/f"), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	ATF_REQUIRE(mkdir("d", 0700) == 0);
	ATF_CHECK_EQ(file_rename_durable("f", "d/g"), 0);
	ATF_CHECK(access("f", F_OK) < 0);
	char *s = get_file("d/g");
	ATF_CHECK_STREQ(s, "data");
	free(s);
	errno = 0;
	ATF_CHECK_EQ(file_rename_durable("f", "d/h"), -1);
	ATF_CHECK_EQ(errno, ENOENT);
	int fd = open("d/g", O_RDONLY);
	ATF_REQUIRE(fd >= 0);
	ATF_CHECK_EQ(file_write_all(fd, "x", 1), -1);	/* read-only fd */
	ATF_CHECK_EQ(errno, EBADF);
	close(fd);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, open_read_regular);
	ATF_TP_ADD_TC(tp, open_read_refuses_symlink);
	ATF_TP_ADD_TC(tp, open_read_refuses_non_regular);
	ATF_TP_ADD_TC(tp, open_read_owner_check);
	ATF_TP_ADD_TC(tp, create_excl);
	ATF_TP_ADD_TC(tp, replace_basic);
	ATF_TP_ADD_TC(tp, replace_does_not_follow_symlink);
	ATF_TP_ADD_TC(tp, replace_failure_keeps_old);
	ATF_TP_ADD_TC(tp, replace_is_atomic_for_readers);
	ATF_TP_ADD_TC(tp, lock_conflicts_between_processes);
	ATF_TP_ADD_TC(tp, lock_wait);
	ATF_TP_ADD_TC(tp, read_all_limit);
	ATF_TP_ADD_TC(tp, mkdirs);
	ATF_TP_ADD_TC(tp, mkdirs_durable);
	ATF_TP_ADD_TC(tp, fsync_and_rename);
	return atf_no_error();
}
