/* The queue directory tree and its check; see queue_dirs.h. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "queue_dirs.h"

static const queue_dir_spec_t table[] = {
	{ "maildrop", 01730, QD_MAIL_OWNER, true },
	{ "incoming", 0700, QD_MAIL_OWNER, false },
	{ "active", 0700, QD_MAIL_OWNER, false },
	{ "deferred", 0700, QD_MAIL_OWNER, false },
	{ "hold", 0700, QD_MAIL_OWNER, false },
	{ "corrupt", 0700, QD_MAIL_OWNER, false },
	{ "defer", 0700, QD_MAIL_OWNER, false },
	{ "bounce", 0700, QD_MAIL_OWNER, false },
	{ "trace", 0700, QD_MAIL_OWNER, false },
	{ "saved", 0700, QD_MAIL_OWNER, false },
	{ "spare", 0700, QD_MAIL_OWNER, false },
	{ "private", 0700, QD_MAIL_OWNER, false },
	{ "public", 0710, QD_MAIL_OWNER, true },
	{ "pid", 0755, QD_MASTER, false },
};

const queue_dir_spec_t *queue_dir_table(size_t *count)
{
	*count = sizeof(table) / sizeof(table[0]);
	return table;
}

/* Compares an open directory with what it should be; fixes if asked.
 * Returns the problems left. */
static int check_fd(int fd, const char *path, uid_t uid, gid_t gid, mode_t mode,
    bool fix)
{
	struct stat st;
	int left = 0;

	if (fstat(fd, &st) < 0) {
		log_error("%s: %s", path, strerror(errno));
		return 1;
	}
	if (st.st_uid != uid || st.st_gid != gid) {
		log_warning("%s: owner %ld:%ld, expected %ld:%ld%s", path,
		    (long)st.st_uid, (long)st.st_gid, (long)uid, (long)gid,
		    fix ? " -- fixing" : "");
		if (!fix) {
			left++;
		} else if (fchown(fd, uid, gid) < 0) {
			log_error("%s: chown: %s", path, strerror(errno));
			left++;
		} else if (fstat(fd, &st) < 0) {
			left++;
		}
	}
	/* chown may have cleared set-id bits: compare the mode after it. */
	if ((st.st_mode & 07777) != mode) {
		log_warning("%s: mode %04o, expected %04o%s", path,
		    (unsigned)(st.st_mode & 07777), (unsigned)mode,
		    fix ? " -- fixing" : "");
		if (!fix) {
			left++;
		} else if (fchmod(fd, mode) < 0) {
			log_error("%s: chmod: %s", path, strerror(errno));
			left++;
		}
	}
	return left;
}

/* Opens dirfd/name as a directory without following a symlink,
 * creating it if missing. */
static int open_dir(int dirfd, const char *name, const char *path, mode_t mode,
    bool create, bool *created)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	*created = false;
	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dirfd, name, mode & 0777) < 0 && errno != EEXIST) {
			log_error("%s: mkdir: %s", path, strerror(errno));
			return -1;
		}
		*created = true;
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			log_error("%s: not a directory (or a symbolic link); "
			    "move it away", path);
		else
			log_error("%s: %s", path, strerror(errno));
	}
	return fd;
}

int queue_dirs_check(const char *queue_dir, const queue_owners_t *o, bool fix)
{
	struct stat st;
	int qfd, left = 0;
	bool created;

	if (lstat(queue_dir, &st) < 0 && errno == ENOENT) {
		if (!fix) {
			log_warning("queue_directory %s does not exist", queue_dir);
			return -1;
		}
		if (file_mkdirs(queue_dir, 0755) < 0) {
			log_error("queue_directory %s: mkdir: %s", queue_dir,
			    strerror(errno));
			return -1;
		}
		log_info("created queue_directory %s", queue_dir);
	}
	qfd = open_dir(AT_FDCWD, queue_dir, queue_dir, 0755, false, &created);
	if (qfd < 0)
		return -1;
	left += check_fd(qfd, queue_dir, o->master_uid, o->master_gid, 0755, fix);

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const queue_dir_spec_t *d = &table[i];
		char path[4096];
		uid_t uid = d->owner == QD_MASTER ? o->master_uid : o->mail_uid;
		gid_t gid = d->setgid_group ? o->setgid_gid :
		    d->owner == QD_MASTER ? o->master_gid : o->mail_gid;
		int fd;

		if (!bfmt(path, sizeof(path), "%s/%s", queue_dir, d->name)) {
			log_error("%s/%s: path too long", queue_dir, d->name);
			left++;
			continue;
		}
		fd = open_dir(qfd, d->name, path, d->mode, fix, &created);
		if (fd < 0) {
			if (!fix && errno == ENOENT)
				log_warning("%s does not exist", path);
			left++;
			continue;
		}
		if (created) {
			log_info("created %s", path);
			/* New: set owner and mode without a warning. */
			if (fchown(fd, uid, gid) < 0 || fchmod(fd, d->mode) < 0) {
				log_error("%s: %s", path, strerror(errno));
				left++;
			}
		} else {
			left += check_fd(fd, path, uid, gid, d->mode, fix);
		}
		close(fd);
	}
	close(qfd);
	return left;
}
