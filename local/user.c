/* Local users and identities (see user.h). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "mem.h"
#include "user.h"

bool priv_can_switch(void)
{
	return getuid() == 0;
}

int priv_enter(uid_t uid, gid_t gid, str_t *err)
{
	if (!priv_can_switch() || uid == 0)
		return 0;
	if (setgroups(1, &gid) < 0 || setegid(gid) < 0) {
		str_setf(err, "cannot take group id %lu: %s", (unsigned long)gid,
		    strerror(errno));
		priv_leave();
		return -1;
	}
	if (seteuid(uid) < 0) {
		str_setf(err, "cannot take user id %lu: %s", (unsigned long)uid,
		    strerror(errno));
		priv_leave();
		return -1;
	}
	return 0;
}

void priv_leave(void)
{
	gid_t root = 0;

	if (!priv_can_switch())
		return;
	if (geteuid() != 0 && seteuid(0) < 0)
		log_fatal("cannot take back user id 0: %s", strerror(errno));
	if (setegid(0) < 0 || setgroups(1, &root) < 0)
		log_fatal("cannot take back group id 0: %s", strerror(errno));
}
