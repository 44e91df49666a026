/* libpowerloss.so: an LD_PRELOAD layer that records what a power cut
 * would leave on disk, for the power-loss tests (doc/test-tools.md,
 * doc/queue-file.md "Power loss, simulated").
 *
 * Model.  After a power cut a file system holds, at least and (in this
 * model) at most:
 *   - of a file's data: what it held when an fsync or fdatasync of the
 *     file last began (and then succeeded);
 *   - of a directory's entries: what it held when an fsync of the
 *     directory last began (and then succeeded);
 *   - a rename or link between two directories: kept whole when either
 *     directory was fsynced after it (journalled file systems commit
 *     both sides of a rename together; neither side alone is kept).
 * Everything else written since is lost.  Nothing is kept in memory:
 * the layer takes a copy ("snapshot") of the file or of the directory
 * listing at the moment the fsync is called, publishes it into an image
 * directory when the real fsync returned success, and appends each
 * cross-directory rename and link to a log.  plcrash(1) (plcrash.c)
 * builds the post-crash tree from the image.
 *
 * Environment:
 *   PL_IMAGE=DIR   the image directory (must exist); without it the layer
 *                  only passes calls through
 *   PL_DROP=LIST   test knob for proving the test catches a broken
 *                  writer: comma-separated PROG:KIND[:NAME], where KIND
 *                  is "dir" or "file" and NAME a directory's last path
 *                  component.  In the process named PROG, an fsync of
 *                  such a descriptor returns 0 without syncing anything
 *                  (nothing is snapshotted: the data is not durable).
 *
 * Image layout: d.KEY (a directory's listing), f.KEY (a file's content),
 * renames (the log), lock (flock, and the sequence counter).  KEY is
 * device.inode.birth-time, so a reused inode number is a new key.  Every
 * snapshot and log record gets a sequence number taken under the lock;
 * a listing taken under the lock never sees half of a rename, since the
 * layer holds the lock across the rename system call.
 *
 * Not modelled: O_SYNC/O_DSYNC writes, sync(2), syncfs(2), msync(2)
 * (Petrel uses none of them); symbolic links, sockets and FIFOs (not
 * kept: sockets are recreated); owners; names containing a newline.
 * A write that was partly on disk (torn) is not produced: data is
 * either the last snapshot or nothing. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SEQ_LEN 21			/* "%020llu\n" */
#define KEY_MAX 96

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_linkat)(int, const char *, int, const char *, int);

static char image[2048];		/* short enough for every path built from it */
static int lock_fd = -1;
static pid_t lock_pid;
static unsigned long tmp_counter;

__attribute__((constructor))
static void pl_init(void)
{
	const char *im = getenv("PL_IMAGE");

	real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	real_rename = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
	real_renameat = (int (*)(int, const char *, int, const char *))dlsym(RTLD_NEXT, "renameat");
	real_linkat = (int (*)(int, const char *, int, const char *, int))dlsym(RTLD_NEXT, "linkat");
	if (im != NULL && *im == '/' && strlen(im) < sizeof(image) - 64)
		snprintf(image, sizeof(image), "%s", im);
}

static void complain(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n = snprintf(buf, sizeof(buf), "libpowerloss[%ld]: ", (long)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	n = (int)strnlen(buf, sizeof(buf) - 2);
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0) {
		/* nothing else to do */
	}
}

/* ---- the lock and the sequence counter ---- */

static int pl_lock(void)
{
	char path[PATH_MAX];

	if (lock_fd >= 0 && lock_pid != getpid()) {
		close(lock_fd);		/* inherited across fork: not ours */
		lock_fd = -1;
	}
	if (lock_fd < 0) {
		snprintf(path, sizeof(path), "%s/lock", image);
		lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (lock_fd < 0) {
			complain("%s: %s", path, strerror(errno));
			return -1;
		}
		lock_pid = getpid();
	}
	while (flock(lock_fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			complain("flock: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void pl_unlock(void)
{
	flock(lock_fd, LOCK_UN);
}

/* Under the lock: the next sequence number (kept in the lock file). */
static unsigned long long next_seq(void)
{
	char buf[SEQ_LEN + 1];
	unsigned long long seq = 0;
	ssize_t n = pread(lock_fd, buf, SEQ_LEN, 0);

	if (n > 0) {
		buf[n] = '\0';
		seq = strtoull(buf, NULL, 10);
	}
	seq++;
	snprintf(buf, sizeof(buf), "%020llu\n", seq);
	if (pwrite(lock_fd, buf, SEQ_LEN, 0) != SEQ_LEN)
		complain("cannot write the sequence counter: %s", strerror(errno));
	return seq;
}

/* ---- keys ---- */

static int key_of_stx(const struct statx *sx, char *key, size_t size)
{
	unsigned long long bs = 0, bn = 0;
	if (sx->stx_mask & STATX_BTIME) {
		bs = (unsigned long long)sx->stx_btime.tv_sec;
		bn = sx->stx_btime.tv_nsec;
	}
	return snprintf(key, size, "%x.%x.%llx.%llx.%llx", sx->stx_dev_major,
	    sx->stx_dev_minor, (unsigned long long)sx->stx_ino, bs, bn) < (int)size ? 0 : -1;
}

static int pl_statx(int dirfd, const char *path, int flags, struct statx *sx)
{
	return statx(dirfd, path, flags | AT_NO_AUTOMOUNT,
	    STATX_TYPE | STATX_MODE | STATX_INO | STATX_MTIME | STATX_BTIME, sx);
}

/* ---- snapshots ---- */

static int open_tmp(char *path, size_t size)
{
	snprintf(path, size, "%s/tmp.%ld.%lu", image, (long)getpid(), ++tmp_counter);
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
}

static unsigned long long published_seq(const char *path)
{
	char buf[SEQ_LEN + 1];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, buf, SEQ_LEN, 0);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

/* The listing of directory fd into a temporary file; its path in tmp. */
static int snap_dir(int fd, unsigned long long seq, char *tmp, size_t size)
{
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int out;
	DIR *d;
	FILE *f;
	struct dirent *e;

	if (dfd < 0)
		return -1;
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return -1;
	}
	if ((out = open_tmp(tmp, size)) < 0 || (f = fdopen(out, "w")) == NULL) {
		if (out >= 0)
			close(out);
		closedir(d);
		return -1;
	}
	fprintf(f, "%020llu\n", seq);
	while ((e = readdir(d)) != NULL) {
		struct statx sx;
		char key[KEY_MAX];
		char type;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (strchr(e->d_name, '\n') != NULL)
			continue;
		if (pl_statx(dirfd(d), e->d_name, AT_SYMLINK_NOFOLLOW, &sx) < 0)
			continue;	/* removed meanwhile */
		if (S_ISDIR(sx.stx_mode))
			type = 'd';
		else if (S_ISREG(sx.stx_mode))
			type = 'f';
		else
			continue;
		if (key_of_stx(&sx, key, sizeof(key)) < 0)
			continue;
		fprintf(f, "%c %s %o %lld.%09u %s\n", type, key,
		    (unsigned)(sx.stx_mode & 07777), (long long)sx.stx_mtime.tv_sec,
		    sx.stx_mtime.tv_nsec, e->d_name);
	}
	closedir(d);
	if (fclose(f) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* The content of file fd into a temporary file. */
static int snap_file(int fd, unsigned long long seq, char *tmp, size_t size)
{
	char buf[65536];
	char proc[64];
	int in, out;
	off_t off = 0;
	int rc = 0;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	in = open(proc, O_RDONLY | O_CLOEXEC);
	if ((out = open_tmp(tmp, size)) < 0) {
		if (in >= 0)
			close(in);
		return -1;
	}
	snprintf(buf, sizeof(buf), "%020llu\n", seq);
	if (write(out, buf, SEQ_LEN) != SEQ_LEN)
		rc = -1;
	for (int i = 0; rc == 0 && i < (1 << 20); i++) {
		/* A descriptor opened write-only is read through /proc. */
		ssize_t n = in >= 0 ? read(in, buf, sizeof(buf)) : pread(fd, buf, sizeof(buf), off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -1;
			break;
		}
		if (n == 0)
			break;
		off += n;
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	}
	if (in >= 0)
		close(in);
	if (close(out) < 0)
		rc = -1;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/* Under the lock: the snapshot in tmp becomes the published one for
 * name, unless a later one was published meanwhile. */
static void publish(const char *tmp, const char *name, unsigned long long seq)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", image, name);
	if (published_seq(path) < seq) {
		if (real_rename(tmp, path) < 0)
			complain("rename %s: %s", path, strerror(errno));
	} else {
		unlink(tmp);
	}
}

/* Is this fsync one that PL_DROP says to skip? */
static int dropped(const struct statx *sx, int fd)
{
	const char *drop = getenv("PL_DROP");
	const char *prog = program_invocation_short_name;
	char want_kind[8], last[NAME_MAX + 1] = "";
	char list[512];
	char *save = NULL;

	if (drop == NULL || *drop == '\0')
		return 0;
	snprintf(want_kind, sizeof(want_kind), "%s", S_ISDIR(sx->stx_mode) ? "dir" : "file");
	if (S_ISDIR(sx->stx_mode)) {
		char proc[64], target[PATH_MAX];
		ssize_t n;
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		n = readlink(proc, target, sizeof(target) - 1);
		if (n > 0) {
			const char *slash, *base;
			size_t len;
			target[n] = '\0';
			slash = strrchr(target, '/');
			base = slash ? slash + 1 : target;
			len = strnlen(base, sizeof(last) - 1);
			memcpy(last, base, len);
			last[len] = '\0';
		}
	}
	snprintf(list, sizeof(list), "%s", drop);
	for (char *item = strtok_r(list, ",", &save); item != NULL;
	    item = strtok_r(NULL, ",", &save)) {
		char *kind = strchr(item, ':'), *name;
		if (kind == NULL)
			continue;
		*kind++ = '\0';
		if ((name = strchr(kind, ':')) != NULL)
			*name++ = '\0';
		if (strcmp(item, prog) != 0 || strcmp(kind, want_kind) != 0)
			continue;
		if (name == NULL || strcmp(name, last) == 0)
			return 1;
	}
	return 0;
}

static int pl_sync(int fd, int (*real)(int))
{
	struct statx sx;
	char key[KEY_MAX], tmp[PATH_MAX], name[KEY_MAX + 4];
	unsigned long long seq;
	int rc, err, snap;

	if (image[0] == '\0' || pl_statx(fd, "", AT_EMPTY_PATH, &sx) < 0
	    || (!S_ISDIR(sx.stx_mode) && !S_ISREG(sx.stx_mode))
	    || key_of_stx(&sx, key, sizeof(key)) < 0)
		return real(fd);
	if (dropped(&sx, fd))
		return 0;
	if (pl_lock() < 0)
		return real(fd);
	seq = next_seq();
	snap = S_ISDIR(sx.stx_mode) ? snap_dir(fd, seq, tmp, sizeof(tmp))
	    : snap_file(fd, seq, tmp, sizeof(tmp));
	pl_unlock();
	if (snap < 0)
		complain("cannot snapshot %s: %s", key, strerror(errno));
	rc = real(fd);
	err = errno;
	if (snap == 0) {
		if (rc == 0 && pl_lock() == 0) {
			snprintf(name, sizeof(name), "%c.%s", S_ISDIR(sx.stx_mode) ? 'd' : 'f', key);
			publish(tmp, name, seq);
			pl_unlock();
		} else {
			unlink(tmp);
		}
	}
	errno = err;
	return rc;
}

int fsync(int fd)
{
	return pl_sync(fd, real_fsync);
}

int fdatasync(int fd)
{
	return pl_sync(fd, real_fdatasync);
}

/* ---- renames and links between directories ---- */

/* The key of the directory holding path (relative to dirfd), and its
 * last component. */
static int parent_of(int dirfd, const char *path, char *key, size_t size,
    char *last, size_t lsize)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct statx sx;

	if (slash == NULL) {
		snprintf(dir, sizeof(dir), ".");
		snprintf(last, lsize, "%s", path);
	} else {
		size_t n = (size_t)(slash - path);
		if (n == 0)
			n = 1;		/* "/name" */
		if (n >= sizeof(dir) || slash[1] == '\0')
			return -1;
		memcpy(dir, path, n);
		dir[n] = '\0';
		snprintf(last, lsize, "%s", slash + 1);
	}
	if (strchr(last, '\n') != NULL || pl_statx(dirfd, dir, 0, &sx) < 0)
		return -1;
	return key_of_stx(&sx, key, size);
}

/* Under the lock, after a successful rename ('R') or link ('L'). */
static void log_move(char op, int olddirfd, const char *oldpath, int newdirfd,
    const char *newpath)
{
	char skey[KEY_MAX], dkey[KEY_MAX], ikey[KEY_MAX];
	char sname[NAME_MAX + 1], dname[NAME_MAX + 1];
	char line[3 * KEY_MAX + 2 * NAME_MAX + 64], path[PATH_MAX];
	struct statx sx;
	int fd, n;

	if (parent_of(olddirfd, oldpath, skey, sizeof(skey), sname, sizeof(sname)) < 0
	    || parent_of(newdirfd, newpath, dkey, sizeof(dkey), dname, sizeof(dname)) < 0
	    || pl_statx(newdirfd, newpath, AT_SYMLINK_NOFOLLOW, &sx) < 0
	    || key_of_stx(&sx, ikey, sizeof(ikey)) < 0)
		return;
	if (strcmp(skey, dkey) == 0)
		return;			/* within one directory: the listing has it */
	n = snprintf(line, sizeof(line), "%c %020llu %s %s %s %c /%s/%s\n", op, next_seq(),
	    skey, dkey, ikey, S_ISDIR(sx.stx_mode) ? 'd' : 'f', sname, dname);
	if (n <= 0 || n >= (int)sizeof(line))
		return;
	snprintf(path, sizeof(path), "%s/renames", image);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		complain("%s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static int pl_move(char op, int olddirfd, const char *oldpath, int newdirfd,
    const char *newpath, int flags)
{
	int rc, err, locked;

	locked = image[0] != '\0' && pl_lock() == 0;
	if (op == 'R')
		rc = real_renameat(olddirfd, oldpath, newdirfd, newpath);
	else
		rc = real_linkat(olddirfd, oldpath, newdirfd, newpath, flags);
	err = errno;
	if (locked) {
		if (rc == 0)
			log_move(op, olddirfd, oldpath, newdirfd, newpath);
		pl_unlock();
	}
	errno = err;
	return rc;
}

int rename(const char *oldpath, const char *newpath)
{
	return pl_move('R', AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	return pl_move('R', olddirfd, oldpath, newdirfd, newpath, 0);
}

int link(const char *oldpath, const char *newpath)
{
	return pl_move('L', AT_FDCWD, oldpath, AT_FDCWD, newpath, 0);
}

int linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags)
{
	return pl_move('L', olddirfd, oldpath, newdirfd, newpath, flags);
}
