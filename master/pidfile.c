/* master's lock and pid file; see pidfile.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "file.h"
#include "pconfig.h"
#include "pidfile.h"

void master_pidfile_path(str_t *out)
{
	const char *piddir = pconfig_get_str("process_id_directory");

	str_reset(out);
	if (*piddir != '/')
		str_catf(out, "%s/", pconfig_get_str("queue_directory"));
	str_catf(out, "%s/master.pid", piddir);
}

/* The pid holding a write lock on fd, 0 if none. */
static pid_t lock_holder(int fd)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_GETLK, &fl) < 0)
		return -1;
	return fl.l_type == F_UNLCK ? 0 : fl.l_pid;
}

int master_pidfile_lock(const char *path, pid_t *holder)
{
	char buf[32];
	struct stat st;
	int fd, len;

	*holder = 0;
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	if (file_lock(fd, FILE_LOCK_EXCLUSIVE | FILE_LOCK_NOWAIT) < 0) {
		int saved = errno;
		if (saved == EAGAIN || saved == EACCES) {
			*holder = lock_holder(fd);
			saved = EAGAIN;
		}
		close(fd);
		errno = saved;
		return -1;
	}
	len = snprintf(buf, sizeof(buf), "%10ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)len, 0) != len) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

pid_t master_running(const char *path)
{
	pid_t pid;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	pid = lock_holder(fd);
	close(fd);
	return pid;
}
