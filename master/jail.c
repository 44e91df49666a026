/* The jail's copies of system files (jail.h).
 *
 * A copy is replaced whole (file_replace: a temporary file renamed over
 * the old one), so a chrooted daemon that opens it meanwhile reads the
 * old or the new contents.  Directories inside the jail are made by root
 * with mode 0755; a path whose existing part is a symbolic link is
 * refused, so that no entry leads a copy outside queue_directory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "file.h"
#include "jail.h"
#include "log.h"
#include "mem.h"

#define JAIL_FILE_MAX	(16 << 20)	/* no system file is bigger */

bool jail_wanted(const mastercf_t *mcf)
{
	for (size_t i = 0; mcf != NULL && i < mcf->count; i++)
		if (mcf->entries[i]->chroot)
			return true;
	return false;
}

/* An absolute path without "." or ".." components or empty ones. */
static bool clean_path(const char *p)
{
	if (p[0] != '/' || p[1] == '\0')
		return false;
	for (const char *c = p + 1; *c != '\0';) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/')
			c++;
	}
	return p[strlen(p) - 1] != '/';
}

/* Makes the directories above qdir/path (none a symlink). */
static int make_parents(const char *qdir, const char *path, str_t *why)
{
	str_t dir = STR_INIT;
	const char *c = path + 1;
	int rc = 0;

	str_set(&dir, qdir);
	for (;;) {
		size_t n = strcspn(c, "/");
		struct stat st;
		if (c[n] != '/')
			break;		/* the last component: the file */
		str_catf(&dir, "/%.*s", (int)n, c);
		if (lstat(str_cstr(&dir), &st) == 0) {
			if (!S_ISDIR(st.st_mode)) {
				str_setf(why, "%s is not a directory",
				    str_cstr(&dir));
				rc = -1;
				break;
			}
		} else if (errno != ENOENT || mkdir(str_cstr(&dir), 0755) < 0) {
			str_setf(why, "%s: %s", str_cstr(&dir), strerror(errno));
			rc = -1;
			break;
		}
		c += n + 1;
	}
	str_release(&dir);
	return rc;
}

/* One entry: 1 when the copy changed, 0 when not, -1 on a problem. */
static int refresh_one(const char *qdir, const char *entry)
{
	const char *eq = strchr(entry, '=');
	char *src = eq ? xstrndup(entry, (size_t)(eq - entry)) : xstrdup(entry);
	const char *dst = eq ? eq + 1 : entry;
	str_t data = STR_INIT, old = STR_INIT, target = STR_INIT, why = STR_INIT;
	struct stat st;
	int rc = 0;

	if (src[0] != '/' || !clean_path(dst)) {
		log_error("chroot_files: bad entry '%s': want /path or "
		    "/source=/path (absolute, no . or ..)", entry);
		rc = -1;
		goto out;
	}
	if (file_read_all_follow(src, &data, JAIL_FILE_MAX) < 0) {
		if (errno != ENOENT) {
			log_warning("chroot_files: cannot read %s: %s", src,
			    strerror(errno));
			rc = -1;
		}
		goto out;
	}
	str_setf(&target, "%s%s", qdir, dst);
	if (lstat(str_cstr(&target), &st) == 0 && S_ISREG(st.st_mode) &&
	    file_read_all(str_cstr(&target), &old, JAIL_FILE_MAX) == 0 &&
	    str_len(&old) == str_len(&data) &&
	    memcmp(str_cstr(&old), str_cstr(&data), str_len(&data)) == 0 &&
	    (st.st_mode & 0777) == 0644)
		goto out;		/* current */
	if (make_parents(qdir, dst, &why) < 0) {
		log_error("chroot_files: %s: %s", dst, str_cstr(&why));
		rc = -1;
		goto out;
	}
	if (file_replace(str_cstr(&target), str_cstr(&data), str_len(&data),
	    0644) < 0 || chmod(str_cstr(&target), 0644) < 0) {
		log_error("chroot_files: cannot write %s: %s",
		    str_cstr(&target), strerror(errno));
		rc = -1;
		goto out;
	}
	rc = 1;
out:
	free(src);
	str_release(&data);
	str_release(&old);
	str_release(&target);
	str_release(&why);
	return rc;
}

int jail_refresh(const char *qdir, const char *spec)
{
	char *copy = xstrdup(spec), *cp = copy, *tok;
	str_t changed = STR_INIT;
	int problems = 0;

	while ((tok = strsep(&cp, ", \t\n")) != NULL) {
		int r;
		if (*tok == '\0')
			continue;
		r = refresh_one(qdir, tok);
		if (r < 0) {
			problems++;
		} else if (r > 0) {
			const char *eq = strchr(tok, '=');
			str_catf(&changed, "%s%s", str_len(&changed) ? ", " : "",
			    eq ? eq + 1 : tok);
		}
	}
	if (str_len(&changed) > 0)
		log_info("chroot jail %s: updated %s", qdir, str_cstr(&changed));
	str_release(&changed);
	free(copy);
	return problems;
}
