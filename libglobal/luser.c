/* Local users (see luser.h). */
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "luser.h"
#include "mem.h"

bool luser_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 255 || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c <= ' ' || c >= 0x7f || c == '/')
			return false;
	}
	return true;
}

void luser_free(luser_t *u)
{
	free(u->name);
	free(u->home);
	free(u->shell);
	u->name = u->home = u->shell = NULL;
}

void luser_copy(luser_t *dst, const luser_t *src)
{
	dst->name = xstrdup(src->name);
	dst->uid = src->uid;
	dst->gid = src->gid;
	dst->home = xstrdup(src->home);
	dst->shell = xstrdup(src->shell);
}

static int find_root(int root_fd, const char *root, const char *name,
    luser_t *u, str_t *err)
{
	str_t path = STR_INIT;
	struct stat sb;
	int rc, st;

	str_setf(&path, "%s/%s", root, name);
	st = root_fd >= 0 ? fstatat(root_fd, name, &sb, 0) :
	    stat(str_cstr(&path), &sb);
	if (st < 0) {
		if (errno == ENOENT || errno == ENOTDIR) {
			rc = 0;
		} else {
			str_setf(err, "local_mail_root: cannot look at %s: %s",
			    str_cstr(&path), strerror(errno));
			rc = -1;
		}
	} else if (!S_ISDIR(sb.st_mode)) {
		rc = 0;
	} else if (u == NULL) {
		rc = 1;
	} else {
		u->name = xstrdup(name);
		u->uid = getuid() == 0 ? sb.st_uid : getuid();
		u->gid = getuid() == 0 ? sb.st_gid : getgid();
		u->home = str_steal(&path);
		u->shell = xstrdup("/bin/sh");
		rc = 1;
	}
	str_release(&path);
	return rc;
}

int luser_find_at(int root_fd, const char *mail_root, const char *name,
    luser_t *u, str_t *err)
{
	if (!luser_name_ok(name))
		return 0;
	if (root_fd >= 0 && mail_root != NULL && *mail_root)
		return find_root(root_fd, mail_root, name, u, err);
	return luser_find(mail_root, name, u, err);
}

int luser_find(const char *mail_root, const char *name, luser_t *u,
    str_t *err)
{
	struct passwd pw, *res = NULL;
	char *buf;
	long size = sysconf(_SC_GETPW_R_SIZE_MAX);
	int e;

	if (!luser_name_ok(name))
		return 0;
	if (mail_root != NULL && *mail_root)
		return find_root(-1, mail_root, name, u, err);
	if (size < 1024)
		size = 1024;
	for (;;) {
		buf = xmalloc((size_t)size);
		e = getpwnam_r(name, &pw, buf, (size_t)size, &res);
		if (e != ERANGE || size > 1024 * 1024)
			break;
		free(buf);
		size *= 4;
	}
	if (res == NULL) {
		free(buf);
		/* Not found is reported as 0 or one of these, depending on
		 * the C library and the name service. */
		if (e == 0 || e == ENOENT || e == ESRCH || e == EBADF
		    || e == EPERM)
			return 0;
		str_setf(err, "cannot look up user \"%s\": %s", name,
		    strerror(e));
		return -1;
	}
	if (u == NULL) {
		free(buf);
		return 1;
	}
	u->name = xstrdup(pw.pw_name);
	u->uid = pw.pw_uid;
	u->gid = pw.pw_gid;
	u->home = xstrdup(pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
	u->shell = xstrdup(pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
	free(buf);
	return 1;
}
