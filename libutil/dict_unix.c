/* unix: the system's user and group databases (through getpwnam_r and
 * getgrnam_r, so NSS sources count), as Postfix's unix: tables:
 *
 *   unix:passwd.byname   name -> "name:passwd:uid:gid:gecos:dir:shell"
 *   unix:group.byname    name -> "name:passwd:gid:member,member,..."
 *
 * A name that does not exist is not found; a failure of the database
 * itself (an NSS source that cannot be reached, ...) is an error, so mail
 * waits.  Keys are folded to lower case unless the table is opened case
 * sensitive.  The tables cannot be listed.  In a chroot the system files
 * may be missing: use them in daemons that do not run chrooted (local). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>
#include "dict.h"
#include "mem.h"

typedef struct dict_unix {
	dict_t d;
	bool group;
	char *buf;		/* for getpwnam_r/getgrnam_r, grows on ERANGE */
	size_t bufsize;
	str_t val;
} dict_unix_t;

static enum dict_status unix_get(dict_t *d, const char *key, const char **value)
{
	dict_unix_t *u = (dict_unix_t *)d;
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	int ret;

	for (;;) {
		if (u->group)
			ret = getgrnam_r(key, &gr, u->buf, u->bufsize, &grp);
		else
			ret = getpwnam_r(key, &pw, u->buf, u->bufsize, &pwp);
		if (ret != ERANGE || u->bufsize >= 1024 * 1024)
			break;
		u->bufsize *= 2;
		u->buf = xrealloc(u->buf, u->bufsize);
	}
	/* Not found is 0 with no result; some systems say ENOENT etc. */
	if (ret == ENOENT || ret == ESRCH || ret == EBADF || ret == EPERM)
		ret = 0;
	if (ret != 0) {
		dict_set_error(d, "%s: lookup failed: %s", d->spec, strerror(ret));
		return DICT_STAT_ERROR;
	}
	str_reset(&u->val);
	if (u->group) {
		if (grp == NULL)
			return DICT_STAT_NOTFOUND;
		str_catf(&u->val, "%s:%s:%ld:", grp->gr_name,
		    grp->gr_passwd ? grp->gr_passwd : "", (long)grp->gr_gid);
		for (char **m = grp->gr_mem; m && *m; m++)
			str_catf(&u->val, "%s%s", m == grp->gr_mem ? "" : ",", *m);
	} else {
		if (pwp == NULL)
			return DICT_STAT_NOTFOUND;
		str_catf(&u->val, "%s:%s:%ld:%ld:%s:%s:%s", pwp->pw_name,
		    pwp->pw_passwd ? pwp->pw_passwd : "", (long)pwp->pw_uid,
		    (long)pwp->pw_gid, pwp->pw_gecos ? pwp->pw_gecos : "",
		    pwp->pw_dir ? pwp->pw_dir : "", pwp->pw_shell ? pwp->pw_shell : "");
	}
	*value = str_cstr(&u->val);
	return DICT_STAT_FOUND;
}

static void unix_free(dict_t *d)
{
	dict_unix_t *u = (dict_unix_t *)d;

	free(u->buf);
	str_release(&u->val);
}

dict_t *dict_unix_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	dict_unix_t *u;
	bool group;

	if (strcmp(name, "passwd.byname") == 0)
		group = false;
	else if (strcmp(name, "group.byname") == 0)
		group = true;
	else {
		str_setf(err, "%s: unknown unix: table \"%s\" (known: passwd.byname, "
		    "group.byname)", spec, name);
		return NULL;
	}
	u = (dict_unix_t *)dict_alloc(sizeof(*u), spec, flags);
	u->group = group;
	u->bufsize = 4096;
	u->buf = xmalloc(u->bufsize);
	u->d.get = unix_get;
	u->d.free = unix_free;
	return &u->d;
}
