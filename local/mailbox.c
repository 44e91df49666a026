/* mbox and Maildir delivery (see mailbox.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "file.h"
#include "mailbox.h"
#include "mem.h"

/* A dot-lock older than this is left over by a crashed writer. */
#define DOTLOCK_STALE	300

unsigned long mailbox_fsync_count;

static int counted_fsync(int fd)
{
	mailbox_fsync_count++;
	return file_fsync(fd);
}

void mailbox_error_status(lstatus_t *st, int err, const char *what,
    const char *path)
{
	switch (err) {
	case ENOSPC:
#ifdef EDQUOT
	case EDQUOT:
#endif
		lstatus_set(st, "4.2.2", "mailbox full: cannot %s %s: %s", what,
		    path, strerror(err));
		break;
	case EFBIG:
		lstatus_set(st, "5.2.2", "mailbox full: cannot %s %s: %s", what,
		    path, strerror(err));
		break;
	default:
		lstatus_set(st, "4.2.0", "cannot %s %s: %s", what, path,
		    strerror(err));
		break;
	}
}

/* ---- Writing with a size limit ----------------------------------------- */

typedef struct wctx {
	int fd;
	long limit;		/* bytes this write may add; < 0: none */
	long written;
} wctx_t;

static int fd_sink(const void *data, size_t len, void *ctx)
{
	wctx_t *w = ctx;

	if (w->limit >= 0 && (long)len > w->limit - w->written) {
		errno = EFBIG;
		return -1;
	}
	if (file_write_all(w->fd, data, len) < 0)
		return -1;
	w->written += (long)len;
	return 0;
}

/* Copies the message to fd and fsyncs it; 0, or -1 with st set. */
static int write_message(int fd, long limit, lmsg_t *m,
    const lmsg_copy_t *copy, const char *what, const char *path,
    lstatus_t *st)
{
	wctx_t w = { fd, limit, 0 };
	str_t err = STR_INIT;
	int r = lmsg_copy(m, copy, fd_sink, &w, &err);

	if (r == LMSG_EREAD) {
		lstatus_set(st, "4.3.0", "%s", str_cstr(&err));
		str_release(&err);
		return -1;
	}
	str_release(&err);
	if (r == LMSG_EWRITE) {
		mailbox_error_status(st, errno, what, path);
		return -1;
	}
	if (counted_fsync(fd) < 0) {
		mailbox_error_status(st, errno, what, path);
		return -1;
	}
	return 0;
}

/* ---- mbox -------------------------------------------------------------- */

/* Takes PATH.lock: 1 taken, 0 not possible here (the directory is not
 * writable for us: the fcntl lock must do), -1 with st set. */
static int dotlock_take(const char *lock, int wait, lstatus_t *st)
{
	for (int tries = 0;; tries++) {
		int fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW
		    | O_CLOEXEC, 0600);
		if (fd >= 0) {
			close(fd);
			return 1;
		}
		if (errno == EACCES || errno == EPERM)
			return 0;
		if (errno != EEXIST) {
			mailbox_error_status(st, errno, "create lock file", lock);
			return -1;
		}
		struct stat sb;
		if (lstat(lock, &sb) == 0 && time(NULL) - sb.st_mtime > DOTLOCK_STALE
		    && unlink(lock) == 0)
			continue;
		if (tries >= wait) {
			lstatus_set(st, "4.2.0", "cannot lock %s: lock file is busy "
			    "(waited %d s)", lock, wait);
			return -1;
		}
		sleep(1);
	}
}

static int fcntl_take(int fd, const char *path, int wait, lstatus_t *st)
{
	for (int tries = 0;; tries++) {
		if (file_lock(fd, FILE_LOCK_EXCLUSIVE | FILE_LOCK_NOWAIT) == 0)
			return 0;
		if (errno != EAGAIN && errno != EACCES && errno != EINTR) {
			mailbox_error_status(st, errno, "lock", path);
			return -1;
		}
		if (tries >= wait) {
			lstatus_set(st, "4.2.0", "cannot lock %s: locked by another "
			    "process (waited %d s)", path, wait);
			return -1;
		}
		sleep(1);
	}
}

/* Opens or creates the mbox for appending; -1 with st set. */
static int mbox_open(const char *path, const mbox_opts_t *o, lstatus_t *st)
{
	struct stat sb;
	int fd;

	for (int tries = 0; tries < 3; tries++) {
		fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK
		    | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT) {
			fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL
			    | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd < 0 && errno == EEXIST)
				continue;	/* created meanwhile: open it */
			if (fd >= 0 && o->create_uid != (uid_t)-1
			    && fchown(fd, o->create_uid, o->create_gid) < 0) {
				int e = errno;
				(void)unlink(path);
				close(fd);
				mailbox_error_status(st, e, "set the owner of", path);
				return -1;
			}
			/* A new mailbox's name must survive a crash like the
			 * message that will be in it (once, at creation). */
			if (fd >= 0 && file_fsync_parent(path) < 0) {
				int e = errno;
				(void)unlink(path);
				close(fd);
				mailbox_error_status(st, e, "sync the directory of", path);
				return -1;
			}
		}
		break;
	}
	if (fd < 0) {
		if (errno == ELOOP)
			lstatus_set(st, "4.2.0", "cannot open %s: it is a symbolic "
			    "link", path);
		else
			mailbox_error_status(st, errno, "open", path);
		return -1;
	}
	if (fstat(fd, &sb) < 0) {
		mailbox_error_status(st, errno, "open", path);
		close(fd);
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		lstatus_set(st, "4.2.0", "cannot deliver to %s: not a regular "
		    "file", path);
		close(fd);
		return -1;
	}
	if (sb.st_nlink != 1) {
		lstatus_set(st, "4.2.0", "cannot deliver to %s: the file has %lu "
		    "hard links", path, (unsigned long)sb.st_nlink);
		close(fd);
		return -1;
	}
	if (o->owner != (uid_t)-1 && sb.st_uid != o->owner) {
		lstatus_set(st, "4.2.0", "cannot deliver to %s: owned by uid %lu, "
		    "not by the recipient (uid %lu)", path,
		    (unsigned long)sb.st_uid, (unsigned long)o->owner);
		close(fd);
		return -1;
	}
	/* Back to blocking writes (O_NONBLOCK only kept the open itself
	 * from hanging on a FIFO planted at the path). */
	(void)fcntl(fd, F_SETFL, O_APPEND);
	return fd;
}

int mbox_deliver(const char *path, const mbox_opts_t *o, lmsg_t *m,
    const lmsg_copy_t *copy, lstatus_t *st)
{
	str_t lock = STR_INIT;
	bool have_dotlock = false;
	struct stat sb;
	int fd = -1, rc = -1;

	if (o->dotlock) {
		str_setf(&lock, "%s.lock", path);
		int r = dotlock_take(str_cstr(&lock), o->lock_wait, st);
		if (r < 0)
			goto out;
		have_dotlock = r == 1;
	}
	if ((fd = mbox_open(path, o, st)) < 0)
		goto out;
	if (o->fcntl_lock && fcntl_take(fd, path, o->lock_wait, st) < 0)
		goto out;
	if (fstat(fd, &sb) < 0) {
		mailbox_error_status(st, errno, "open", path);
		goto out;
	}
	off_t orig = sb.st_size;
	long room = -1;
	if (o->size_limit > 0) {
		if (orig >= o->size_limit) {
			lstatus_set(st, "5.2.2", "mailbox full: %s has reached "
			    "mailbox_size_limit (%ld bytes)", path, o->size_limit);
			goto out;
		}
		room = o->size_limit - (long)orig;
	}
	if (write_message(fd, room, m, copy, "append to", path, st) < 0) {
		/* Take back what was written: an mbox must never hold part
		 * of a message (the next one would be glued to it). */
		if (ftruncate(fd, orig) < 0 || counted_fsync(fd) < 0)
			str_catf(&st->text, "; cannot truncate %s back to %lld "
			    "bytes: %s", path, (long long)orig, strerror(errno));
		goto out;
	}
	lstatus_set(st, "2.0.0", "delivered to mailbox");
	rc = 0;
out:
	if (fd >= 0)
		close(fd);	/* drops the fcntl lock */
	if (have_dotlock)
		(void)unlink(str_cstr(&lock));
	str_release(&lock);
	return rc;
}

/* ---- Maildir ----------------------------------------------------------- */

/* The host name part of unique names: '/' and ':' are special in
 * Maildir file names, so they are encoded as the Maildir convention
 * says (\057 and \072). */
/* The host part of a Maildir file name, looked up once per process. */
static void unique_host(str_t *out)
{
	static char host[256];

	if (host[0] == 0) {
		if (gethostname(host, sizeof(host)) < 0 || host[0] == 0)
			bcopy_str(host, sizeof(host), "localhost");
		host[sizeof(host) - 1] = 0;
	}
	for (const char *p = host; *p; p++) {
		if (*p == '/')
			str_cat(out, "\\057");
		else if (*p == ':')
			str_cat(out, "\\072");
		else
			str_putc(out, *p);
	}
}

/* tmp/, new/ and cur/ of the Maildir at base, with their parents. */
static int maildir_make(const str_t *base, str_t *sub, lstatus_t *st)
{
	static const char *const subs[] = { "tmp", "new", "cur" };

	for (size_t i = 0; i < 3; i++) {
		str_setf(sub, "%s/%s", str_cstr(base), subs[i]);
		/* Durable: a message linked into new/ is only as durable as
		 * new/ itself, and the Maildir above it. */
		if (file_mkdirs_durable(str_cstr(sub), 0700) < 0) {
			mailbox_error_status(st, errno, "create maildir directory",
			    str_cstr(sub));
			return -1;
		}
	}
	return 0;
}

int maildir_deliver(const char *dir, long size_limit, lmsg_t *m,
    const lmsg_copy_t *copy, lstatus_t *st)
{
	static unsigned long serial;
	str_t base = STR_INIT, sub = STR_INIT, name = STR_INIT;
	str_t tmp = STR_INIT, final = STR_INIT;
	struct timeval tv;
	bool made = false;
	int fd = -1, rc = -1;

	str_set(&base, dir);
	while (base.len > 1 && base.buf[base.len - 1] == '/')
		str_truncate(&base, base.len - 1);
	for (int tries = 0; tries < 10; tries++) {
		gettimeofday(&tv, NULL);
		str_setf(&name, "%lld.M%06ldP%ldQ%lu.", (long long)tv.tv_sec,
		    (long)tv.tv_usec, (long)getpid(), ++serial);
		unique_host(&name);
		str_setf(&tmp, "%s/tmp/%s", str_cstr(&base), str_cstr(&name));
		fd = file_create_excl(str_cstr(&tmp), 0600);
		if (fd >= 0 || (errno != EEXIST && errno != ENOENT) || made)
			break;
		/* No tmp/: a Maildir to make (all three directories) before
		 * the first delivery; an existing one costs nothing more. */
		if (errno == ENOENT) {
			if (maildir_make(&base, &sub, st) < 0)
				goto out;
			made = true;
		}
	}
	if (fd < 0) {
		mailbox_error_status(st, errno, "create", str_cstr(&tmp));
		goto out;
	}
	str_setf(&sub, "%s/new", str_cstr(&base));
	if (write_message(fd, size_limit > 0 ? size_limit : -1, m, copy,
	    "write", str_cstr(&tmp), st) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		mailbox_error_status(st, errno, "write", str_cstr(&tmp));
		goto fail;
	}
	fd = -1;
	str_setf(&final, "%s/new/%s", str_cstr(&base), str_cstr(&name));
	/* link() rather than rename(): it never replaces an existing file
	 * (the name is unique, but a clock going backwards is no reason to
	 * lose a message). */
	int lr = link(str_cstr(&tmp), str_cstr(&final));
	if (lr < 0 && errno == ENOENT && !made) {
		/* tmp/ was there but new/ is not: make what is missing. */
		if (maildir_make(&base, &sub, st) < 0)
			goto fail;
		made = true;
		str_setf(&sub, "%s/new", str_cstr(&base));
		lr = link(str_cstr(&tmp), str_cstr(&final));
	}
	if (lr == 0) {
		(void)unlink(str_cstr(&tmp));
	} else if ((errno != EPERM && errno != ENOTSUP)
	    || rename(str_cstr(&tmp), str_cstr(&final)) < 0) {
		/* (No hard links on this file system: rename instead.) */
		mailbox_error_status(st, errno, "create", str_cstr(&final));
		goto fail;
	}
	/* The new name is durable once new/ has been fsynced after the
	 * link.  (No group commit here, unlike the queue: two deliveries at
	 * most go into one Maildir at once, and waiting for the other's
	 * file fsync to share one of new/ cost more time than the fsync;
	 * doc/local.md.) */
	mailbox_fsync_count++;
	if (file_fsync_dir(str_cstr(&sub)) < 0) {
		mailbox_error_status(st, errno, "sync", str_cstr(&sub));
		(void)unlink(str_cstr(&final));
		goto out;
	}
	lstatus_set(st, "2.0.0", "delivered to maildir");
	rc = 0;
	goto out;
fail:
	if (fd >= 0)
		close(fd);
	(void)unlink(str_cstr(&tmp));
out:
	str_release(&base);
	str_release(&sub);
	str_release(&name);
	str_release(&tmp);
	str_release(&final);
	return rc;
}
