/* Safe file operations: opening without following symlinks, exclusive
 * creation, durable writes (file and directory fsync), atomic replacement
 * of a file's contents, advisory locks, bounded whole-file reads and
 * mkdir -p.
 *
 * Every function returns -1 with errno set on failure and logs nothing:
 * the caller knows what the file is for and says so in its message. */
#ifndef PETREL_FILE_H
#define PETREL_FILE_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "str.h"

/* No owner check in file_open_read. */
#define FILE_ANY_OWNER ((uid_t)-1)

/* Opens path read-only without following a final symlink (ELOOP), and
 * refuses anything but a regular file (EINVAL for a FIFO, directory,
 * device...; the open itself never blocks on a FIFO).  If owner is not
 * FILE_ANY_OWNER, the file must belong to that uid (EPERM otherwise).
 * The descriptor is close-on-exec. */
int file_open_read(const char *path, uid_t owner);

/* Like file_open_read, but a symbolic link is followed: for files only
 * their (privileged) owner can put in place, such as main.cf, which
 * configuration tools may install as links.  The file reached must still
 * be a regular file. */
int file_open_read_follow(const char *path, uid_t owner);

/* Creates path for writing with O_CREAT|O_EXCL|O_NOFOLLOW: fails with
 * EEXIST if anything (even a dangling symlink) is there.  Close-on-exec. */
int file_create_excl(const char *path, mode_t mode);

/* Writes all of data, retrying short writes and EINTR. */
int file_write_all(int fd, const void *data, size_t len);

/* fsync(2) retried on EINTR. */
int file_fsync(int fd);
/* Opens path (a file) and fsyncs it. */
int file_fsync_path(const char *path);
/* fsyncs a directory, making renames and creations in it durable. */
int file_fsync_dir(const char *dir);
/* fsyncs the directory that holds path ("." for a bare file name). */
int file_fsync_parent(const char *path);

/* Replaces the contents of path atomically: readers see either the old
 * or the new contents, never a mix or an empty file, also after a crash.
 * Writes a temporary file in the same directory, fsyncs it, renames it
 * over path and fsyncs the directory.  mode is used for a new file; an
 * existing file keeps its mode (and, when we are root, its owner).  A
 * symlink at path is replaced, not followed. */
int file_replace(const char *path, const void *data, size_t len, mode_t mode);

/* Advisory whole-file locks with fcntl(2).  They belong to the process:
 * a second lock request from the same process always succeeds, so a
 * conflict is only seen between processes.  FILE_LOCK_NOWAIT makes a
 * busy lock fail at once with EAGAIN instead of waiting. */
enum {
	FILE_LOCK_SHARED = 1,
	FILE_LOCK_EXCLUSIVE = 2,
	FILE_LOCK_UNLOCK = 3,
	FILE_LOCK_NOWAIT = 0x10,
};
int file_lock(int fd, int how);

/* Reads the rest of fd / all of path and appends it to out.  More than
 * limit bytes fails with EFBIG (out then holds what was read so far).
 * file_read_all opens with file_open_read (no symlinks, regular files). */
int file_read_fd(int fd, str_t *out, size_t limit);
int file_read_all(const char *path, str_t *out, size_t limit);
/* The same through file_open_read_follow (symlinks followed). */
int file_read_all_follow(const char *path, str_t *out, size_t limit);

/* Creates dir and any missing parents with mode (subject to the umask);
 * an existing directory is fine, an existing non-directory is ENOTDIR. */
int file_mkdirs(const char *dir, mode_t mode);
/* The same, and each directory it creates survives a crash: its parent
 * is fsynced right after the mkdir (nothing is fsynced when all exist). */
int file_mkdirs_durable(const char *dir, mode_t mode);

/* Renames from to to and fsyncs the directory of to (and of from when it
 * differs), so the rename survives a crash. */
int file_rename_durable(const char *from, const char *to);

#endif
