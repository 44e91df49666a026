/* smtpd_client_connection_count_limit across processes.
 *
 * master runs one smtpd process per connection, so the count of
 * connections from one address must be shared.  It lives in a small file
 * of fixed-size slots: a process serving a client writes the client's
 * address into a free slot and holds an fcntl write lock on that slot
 * for as long as the session lasts.  A slot is in use exactly while
 * somebody holds its lock, so a process that crashes frees its slot
 * by dying (the kernel drops the lock): nothing to clean up, no stale
 * counts.  Counting and claiming happen under a lock on the file's first
 * byte, so two new connections cannot both take the last place.
 *
 * Cost: one F_GETLK per slot in use on each new connection; the file has
 * as many slots as smtpd processes ever ran at once. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mem.h"
#include "smtpd.h"

#define SLOT 64			/* an IPv6 address in text fits */

struct smtpd_conn {
	int fd;
	long held;		/* our slot, or -1 */
};

static int lock(int fd, int type, off_t start, off_t len, bool wait)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = (short)type;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = len;
	while (fcntl(fd, wait ? F_SETLKW : F_SETLK, &fl) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

static bool slot_busy(int fd, long i)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)SLOT * (i + 1);
	fl.l_len = SLOT;
	if (fcntl(fd, F_GETLK, &fl) < 0)
		return false;
	return fl.l_type != F_UNLCK;
}

smtpd_conn_t *smtpd_conn_open(const char *path, str_t *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	smtpd_conn_t *c;

	if (fd < 0) {
		str_setf(err, "cannot open %s: %s", path, strerror(errno));
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->held = -1;
	return c;
}

int smtpd_conn_claim(smtpd_conn_t *c, const char *addr, long limit,
    long *count, str_t *err)
{
	struct stat st;
	char buf[SLOT], want[SLOT];
	long nslots, freeslot = -1, n = 0;
	int rc = -1;

	*count = 0;
	if (strlen(addr) >= SLOT) {
		str_setf(err, "address too long for the count file: %s", addr);
		return -1;
	}
	memset(want, 0, sizeof(want));
	memcpy(want, addr, strlen(addr));
	smtpd_conn_release(c);
	if (lock(c->fd, F_WRLCK, 0, 1, true) < 0) {
		str_setf(err, "lock: %s", strerror(errno));
		return -1;
	}
	if (fstat(c->fd, &st) < 0) {
		str_setf(err, "fstat: %s", strerror(errno));
		goto out;
	}
	nslots = st.st_size >= SLOT ? (long)(st.st_size / SLOT) - 1 : 0;
	for (long i = 0; i < nslots; i++) {
		if (!slot_busy(c->fd, i)) {
			if (freeslot < 0)
				freeslot = i;
			continue;
		}
		if (pread(c->fd, buf, SLOT, (off_t)SLOT * (i + 1)) == SLOT &&
		    memcmp(buf, want, SLOT) == 0)
			n++;
	}
	*count = n;
	if (n >= limit) {
		rc = 0;
		goto out;
	}
	if (freeslot < 0)
		freeslot = nslots;
	if (pwrite(c->fd, want, SLOT, (off_t)SLOT * (freeslot + 1)) != SLOT ||
	    lock(c->fd, F_WRLCK, (off_t)SLOT * (freeslot + 1), SLOT, false) < 0) {
		str_setf(err, "claiming a slot: %s", strerror(errno));
		goto out;
	}
	c->held = freeslot;
	rc = 1;
out:
	(void)lock(c->fd, F_UNLCK, 0, 1, false);
	return rc;
}

void smtpd_conn_release(smtpd_conn_t *c)
{
	if (c == NULL || c->held < 0)
		return;
	(void)lock(c->fd, F_UNLCK, (off_t)SLOT * (c->held + 1), SLOT, false);
	c->held = -1;
}

void smtpd_conn_close(smtpd_conn_t *c)
{
	if (c == NULL)
		return;
	smtpd_conn_release(c);
	close(c->fd);
	free(c);
}
