/* Local recipients, one rule for smtpd and local (see local_rcpt.h). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "addr.h"
#include "local_rcpt.h"
#include "luser.h"
#include "maps.h"
#include "mem.h"
#include "pconfig.h"

#define USERDB_SPEC	"unix:passwd.byname"

/* Answered by luser.h, not a table: local_rcpt_known asks it. */
static const maps_own_t userdb = { USERDB_SPEC, maps_own_none };

struct local_rcpt {
	maps_t *maps;		/* opened when first used */
	char *mail_root;
	int root_fd;		/* mail_root opened at creation, or -1 */
	char *delims;
	char *userdb_broken;	/* why the password database cannot be used */
};

/* A private instance: not root, and the queue directory (owned by the
 * user master runs as) not root's either.  The second part matters for
 * smtpd -S, which sendmail -bs runs as any user of a system install. */
static bool private_instance(void)
{
	struct stat st;

	if (geteuid() == 0)
		return false;
	return stat(pconfig_get_str("queue_directory"), &st) < 0
	    || st.st_uid != 0;
}

static bool is_userdb(const local_rcpt_t *lr, size_t i)
{
	return strcmp(maps_spec(lr->maps, i), USERDB_SPEC) == 0;
}

void local_rcpt_maps_from_config(str_t *alias_maps, str_t *recipient_maps)
{
	pconfig_item_t it;

	str_set(alias_maps, pconfig_get_str("alias_maps"));
	str_set(recipient_maps, pconfig_get_str("local_recipient_maps"));
	if (!private_instance() || !pconfig_item("alias_maps", &it)
	    || it.origin != PCONFIG_DEFAULT)
		return;
	str_setf(alias_maps, "hash:%s/aliases",
	    pconfig_get_str("config_directory"));
	if (pconfig_item("local_recipient_maps", &it)
	    && it.origin == PCONFIG_DEFAULT)
		str_setf(recipient_maps, "%s %s", USERDB_SPEC,
		    str_cstr(alias_maps));
}

local_rcpt_t *local_rcpt_new(const char *maps, const char *mail_root,
    const char *delims)
{
	local_rcpt_t *lr = xcalloc(1, sizeof(*lr));

	/* "inline:{ a=b, c=d }" is one table (maps.h). */
	lr->maps = maps_open("local_recipient_maps", maps, MAPS_FLAG_LAZY,
	    &userdb, NULL);
	lr->mail_root = xstrdup(mail_root ? mail_root : "");
	/* Opened now, before a chroot (smtpd's), as every table: users are
	 * looked up through it from inside the jail too. */
	lr->root_fd = *lr->mail_root ? open(lr->mail_root,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	lr->delims = xstrdup(delims ? delims : "");
	return lr;
}

local_rcpt_t *local_rcpt_from_config(void)
{
	str_t aliases = STR_INIT, maps = STR_INIT;
	local_rcpt_t *lr;

	local_rcpt_maps_from_config(&aliases, &maps);
	lr = local_rcpt_new(str_cstr(&maps), pconfig_get_str("local_mail_root"),
	    pconfig_get_str("recipient_delimiter"));
	str_release(&aliases);
	str_release(&maps);
	return lr;
}

void local_rcpt_free(local_rcpt_t *lr)
{
	if (lr == NULL)
		return;
	maps_free(lr->maps);
	free(lr->mail_root);
	if (lr->root_fd >= 0)
		close(lr->root_fd);
	free(lr->delims);
	free(lr->userdb_broken);
	free(lr);
}

bool local_rcpt_enabled(const local_rcpt_t *lr)
{
	return maps_count(lr->maps) > 0;
}

const char *local_rcpt_user_source(const local_rcpt_t *lr)
{
	for (size_t i = 0; i < maps_count(lr->maps); i++)
		if (is_userdb(lr, i)) {
			if (*lr->mail_root == '\0')
				return "/etc/passwd";
			/* Opened before the chroot: nothing needed in it. */
			return lr->root_fd >= 0 ? NULL : lr->mail_root;
		}
	return NULL;
}

void local_rcpt_passwd_broken(local_rcpt_t *lr, const char *why)
{
	free(lr->userdb_broken);
	lr->userdb_broken = xstrdup(why);
}

int local_rcpt_open(local_rcpt_t *lr, str_t *err)
{
	return (int)maps_open_now(lr->maps, err);
}

void local_rcpt_refresh(local_rcpt_t *lr)
{
	maps_refresh(lr->maps);
}

/* 1 found, 0 not, -1 error (err). */
static int get(local_rcpt_t *lr, size_t i, const char *key, str_t *err)
{
	return maps_get_entry(lr->maps, i, key, NULL, err);
}

int local_rcpt_known(local_rcpt_t *lr, const char *local, const char *domain,
    str_t *err)
{
	str_t lc = STR_INIT, k = STR_INIT;
	addr_split_t sp;
	const char *user;
	bool failed = false;
	int rc = 0;

	if (maps_count(lr->maps) == 0)
		return 1;
	if (local == NULL || *local == 0)
		return 0;		/* no local part: nobody */
	str_set(&lc, local);
	str_lower(lc.buf);
	addr_split(str_cstr(&lc), lr->delims, &sp);
	user = sp.ext != NULL && sp.user != NULL ? sp.user : NULL;
	/* A table that fails does not hide the others: found in any one is
	 * known; else a failure is a temporary error (err: the last one). */
	for (size_t i = 0; i < maps_count(lr->maps) && rc <= 0; i++) {
		int r = 0;
		if (is_userdb(lr, i)) {
			if (lr->userdb_broken != NULL) {
				str_setf(err, "%s: %s", USERDB_SPEC,
				    lr->userdb_broken);
				r = -1;
			} else {
				r = luser_find_at(lr->root_fd, lr->mail_root,
				    user ? user : str_cstr(&lc), NULL, err);
			}
		} else {
			if (domain != NULL && *domain) {
				str_setf(&k, "%s@%s", str_cstr(&lc), domain);
				str_lower(k.buf);
				r = get(lr, i, str_cstr(&k), err);
				if (r == 0 && user != NULL) {
					str_setf(&k, "%s@%s", user, domain);
					str_lower(k.buf);
					r = get(lr, i, str_cstr(&k), err);
				}
			}
			if (r == 0)
				r = get(lr, i, str_cstr(&lc), err);
			if (r == 0 && user != NULL)
				r = get(lr, i, user, err);
		}
		if (r > 0)
			rc = 1;
		else if (r < 0)
			failed = true;
	}
	if (rc == 0 && failed)
		rc = -1;
	addr_split_free(&sp);
	str_release(&lc);
	str_release(&k);
	return rc;
}
