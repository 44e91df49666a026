#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "file.h"
#include "mem.h"

/* Keeps errno across cleanup calls (close, unlink) that may change it. */
#define KEEP_ERRNO(stmt) do { int saved_ = errno; stmt; errno = saved_; } while (0)

static int open_regular(const char *path, uid_t owner, int extra)
{
	struct stat st;
	/* O_NONBLOCK so that opening a FIFO planted in place of a file does
	 * not hang. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | extra);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		KEEP_ERRNO(close(fd));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		return -1;
	}
	if (owner != FILE_ANY_OWNER && st.st_uid != owner) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	/* O_NONBLOCK stays: it has no effect on a regular file, and
	 * clearing it would cost two system calls per open. */
	return fd;
}

int file_open_read(const char *path, uid_t owner)
{
	return open_regular(path, owner, O_NOFOLLOW);
}

int file_open_read_follow(const char *path, uid_t owner)
{
	return open_regular(path, owner, 0);
}

int file_create_excl(const char *path, mode_t mode)
{
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

int file_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int file_fsync(int fd)
{
	int rc;
	do
		rc = fsync(fd);
	while (rc < 0 && errno == EINTR);
	return rc;
}

int file_fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (file_fsync(fd) < 0) {
		KEEP_ERRNO(close(fd));
		return -1;
	}
	return close(fd);
}

int file_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	/* Some file systems refuse fsync on a directory (EINVAL); their
	 * metadata is then as durable as they can make it. */
	if (file_fsync(fd) < 0 && errno != EINVAL) {
		KEEP_ERRNO(close(fd));
		return -1;
	}
	return close(fd);
}

/* The directory part of path, as a malloc'ed string. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

int file_fsync_parent(const char *path)
{
	char *dir = dir_of(path);
	int rc = file_fsync_dir(dir);
	KEEP_ERRNO(free(dir));
	return rc;
}

int file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
	struct stat st;
	bool have_old = false;
	str_t tmp = STR_INIT;
	int fd = -1;

	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
		have_old = true;
		mode = st.st_mode & 07777;
	}
	/* A unique name next to the target, so that rename() stays within
	 * one file system; O_EXCL means a name someone planted is never
	 * written through. */
	for (int tries = 0; tries < 100 && fd < 0; tries++) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		str_setf(&tmp, "%s.tmp.%ld.%lx%d", path, (long)getpid(),
		    (unsigned long)ts.tv_nsec, tries);
		fd = file_create_excl(str_cstr(&tmp), mode & 0777);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		goto fail;
	/* The creation mode went through the umask; give the file the mode
	 * asked for (or the old file's) exactly. */
	if (fchmod(fd, mode) < 0)
		goto fail_unlink;
	if (have_old && geteuid() == 0 &&
	    (st.st_uid != geteuid() || st.st_gid != getegid()) &&
	    fchown(fd, st.st_uid, st.st_gid) < 0)
		goto fail_unlink;
	if (file_write_all(fd, data, len) < 0 || file_fsync(fd) < 0)
		goto fail_unlink;
	if (close(fd) < 0) {
		fd = -1;
		goto fail_unlink;
	}
	fd = -1;
	if (rename(str_cstr(&tmp), path) < 0)
		goto fail_unlink;
	str_release(&tmp);
	return file_fsync_parent(path);

fail_unlink:
	KEEP_ERRNO(unlink(str_cstr(&tmp)));
fail:
	if (fd >= 0)
		KEEP_ERRNO(close(fd));
	KEEP_ERRNO(str_release(&tmp));
	return -1;
}

int file_lock(int fd, int how)
{
	struct flock fl;
	memset(&fl, 0, sizeof(fl));
	switch (how & ~FILE_LOCK_NOWAIT) {
	case FILE_LOCK_SHARED:
		fl.l_type = F_RDLCK;
		break;
	case FILE_LOCK_EXCLUSIVE:
		fl.l_type = F_WRLCK;
		break;
	case FILE_LOCK_UNLOCK:
		fl.l_type = F_UNLCK;
		break;
	default:
		errno = EINVAL;
		return -1;
	}
	fl.l_whence = SEEK_SET;
	fl.l_start = 0;
	fl.l_len = 0;		/* the whole file, also as it grows */
	int cmd = (how & FILE_LOCK_NOWAIT) ? F_SETLK : F_SETLKW;
	for (;;) {
		if (fcntl(fd, cmd, &fl) == 0)
			return 0;
		if (errno == EINTR && cmd == F_SETLKW)
			continue;
		/* POSIX allows EACCES for a busy lock; callers test EAGAIN. */
		if (errno == EACCES)
			errno = EAGAIN;
		return -1;
	}
}

int file_read_fd(int fd, str_t *out, size_t limit)
{
	size_t got = 0;
	for (;;) {
		/* Read up to one byte past the limit to tell "exactly limit"
		 * from "more than limit". */
		size_t room = limit - got >= 65536 ? 65536 : limit - got + 1;
		str_reserve(out, room);
		ssize_t n = read(fd, out->buf + out->len, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			out->buf[out->len] = 0;
			return -1;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		got += (size_t)n;
		out->buf[out->len] = 0;
		if (got > limit) {
			errno = EFBIG;
			return -1;
		}
	}
	if (out->buf)
		out->buf[out->len] = 0;
	return 0;
}

static int read_path(int fd, str_t *out, size_t limit)
{
	if (fd < 0)
		return -1;
	int rc = file_read_fd(fd, out, limit);
	KEEP_ERRNO(close(fd));
	return rc;
}

int file_read_all(const char *path, str_t *out, size_t limit)
{
	return read_path(file_open_read(path, FILE_ANY_OWNER), out, limit);
}

int file_read_all_follow(const char *path, str_t *out, size_t limit)
{
	return read_path(file_open_read_follow(path, FILE_ANY_OWNER), out, limit);
}

static int mkdirs(const char *dir, mode_t mode, bool durable)
{
	struct stat st;
	if (*dir == 0) {
		errno = ENOENT;
		return -1;
	}
	char *buf = xstrdup(dir);
	size_t len = strlen(buf);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = 0;
	/* Walk the components, creating each missing one. */
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char saved = *p;
		*p = 0;
		if (mkdir(buf, mode) < 0) {
			int err = errno;
			if (err != EEXIST || stat(buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
				if (err == EEXIST)
					err = ENOTDIR;
				free(buf);
				errno = err;
				return -1;
			}
		} else if (durable) {
			/* Made here: its entry is durable once its parent is
			 * fsynced. */
			char *slash = strrchr(buf, '/');
			int r;
			if (slash == NULL)
				r = file_fsync_dir(".");
			else if (slash == buf)
				r = file_fsync_dir("/");
			else {
				*slash = 0;
				r = file_fsync_dir(buf);
				*slash = '/';
			}
			if (r < 0) {
				KEEP_ERRNO(free(buf));
				return -1;
			}
		}
		*p = saved;
		if (saved == 0)
			break;
		while (p[1] == '/')
			p++;
	}
	free(buf);
	return 0;
}

int file_mkdirs(const char *dir, mode_t mode)
{
	return mkdirs(dir, mode, false);
}

int file_mkdirs_durable(const char *dir, mode_t mode)
{
	return mkdirs(dir, mode, true);
}

int file_rename_durable(const char *from, const char *to)
{
	if (rename(from, to) < 0)
		return -1;
	char *d1 = dir_of(to), *d2 = dir_of(from);
	int rc = file_fsync_dir(d1);
	if (rc == 0 && strcmp(d1, d2) != 0)
		rc = file_fsync_dir(d2);
	KEEP_ERRNO(free(d1); free(d2));
	return rc;
}
