/* What a local recipient expands to: alias_maps (with owner- aliases
 * and the identity an alias runs with), the user's .forward, :include:
 * files, and the target lists they hold (deliver.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "addr.h"
#include "aliases.h"
#include "cleanup_clnt.h"
#include "deliver.h"
#include "file.h"
#include "htable.h"
#include "local.h"
#include "local_rcpt.h"
#include "log.h"
#include "mailbox.h"
#include "maps.h"
#include "mem.h"
#include "user.h"

/* Largest .forward or :include: file read. */
#define TARGET_FILE_MAX	(1024 * 1024)

/* Why the last lookup in m failed, as local has always said it: what
 * dict_open said for a table that does not open, else "spec: reason". */
static void expand_why(const maps_t *m, str_t *err)
{
	const char *reason, *spec = maps_failed(m, &reason);

	if (maps_failed_open(m))
		str_set(err, reason);
	else
		str_setf(err, "%s: %s", spec, reason);
}

static void expand_list(dstate_t *s, int cls, const char *list, size_t len,
    const ident_t *id, int depth, const char *where);

/* :include:path, read with id's effective ids.  A file owned by someone
 * other than root gives its targets that owner's identity. */
static void expand_include(dstate_t *s, const char *path, const ident_t *id,
    int depth)
{
	ident_t inc = *id;
	str_t text = STR_INIT;
	struct passwd *pw;
	struct stat sb;
	int fd;

	if (depth >= LOCAL_INCLUDE_DEPTH) {
		deliver_fail(s, "5.4.6",
		    ":include: files nested more than %d deep at %s "
		    "(a loop?)", LOCAL_INCLUDE_DEPTH, path);
		return;
	}
	if (!deliver_enter(s, id))
		return;
	fd = file_open_read(path, FILE_ANY_OWNER);
	if (fd < 0 || fstat(fd, &sb) < 0 || file_read_fd(fd, &text,
	    TARGET_FILE_MAX) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		priv_leave();
		if (e == ENOENT || e == ELOOP || e == EINVAL || e == EFBIG)
			deliver_fail(s, "5.3.0",
			    "cannot use :include: file %s: %s", path,
			    e == ELOOP ? "it is a symbolic link" : e == EINVAL
			    ? "not a regular file" : strerror(e));
		else
			deliver_fail(s, "4.3.0",
			    "cannot read :include: file %s: %s", path,
			    strerror(e));
		str_release(&text);
		return;
	}
	close(fd);
	priv_leave();
	if (sb.st_mode & 0002) {
		deliver_fail(s, "5.7.1",
		    ":include: file %s is world-writable: not used", path);
		str_release(&text);
		return;
	}
	if (sb.st_uid != 0 && priv_can_switch() && sb.st_uid != id->uid) {
		if ((pw = getpwuid(sb.st_uid)) == NULL) {
			deliver_fail(s, "4.3.0",
			    ":include: file %s: owner uid %lu has no "
			    "account", path, (unsigned long)sb.st_uid);
			str_release(&text);
			return;
		}
		inc.uid = pw->pw_uid;
		inc.gid = pw->pw_gid;
		inc.home = NULL;	/* commands start in "/" */
	}
	{
		/* Comment lines are dropped; each line is a target list. */
		char *save = NULL;
		str_t where = STR_INIT;
		for (char *line = strtok_r(text.buf ? text.buf : (char *)"", "\n",
		    &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
			char *p = line;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == '#' || *p == 0)
				continue;
			str_setf(&where, ":include: file %s", path);
			expand_list(s, LOCAL_CLASS_INCLUDE, p, strlen(p), &inc,
			    depth + 1, str_cstr(&where));
		}
		str_release(&where);
	}
	str_release(&text);
}

/* Is addr (internal form) the recipient itself? */
static bool expand_is_self(dstate_t *s, const char *addr)
{
	const char *at = strrchr(addr, '@');
	size_t llen = at ? (size_t)(at - addr) : strlen(addr);

	if (!((strlen(s->user) == llen && strncasecmp(addr, s->user, llen) == 0)
	    || (strlen(s->local) == llen
		&& strncasecmp(addr, s->local, llen) == 0)))
		return false;
	return at == NULL || addr_domlist_match(s->l->mydest, at + 1, NULL) == 1;
}

static void expand_list(dstate_t *s, int cls, const char *list, size_t len,
    const ident_t *id, int depth, const char *where)
{
	const local_conf_t *cf = &s->l->conf;
	alias_list_t t = ALIAS_LIST_INIT;
	str_t why = STR_INIT;

	if (alias_targets_parse(list, len, &t, &why) < 0) {
		/* What parsed before the error is still delivered. */
		log_warning("%s: %s: %s", s->msg->queue_id, where, str_cstr(&why));
		deliver_fail(s, "5.3.5", "%s: %s", where, str_cstr(&why));
	}
	for (size_t i = 0; i < t.n; i++) {
		alias_target_t *tg = &t.v[i];
		str_setf(&why, "target-%s", alias_kind_name(tg->kind));
		if (!deliver_first_time(s, str_cstr(&why), tg->text))
			continue;
		if (deliver_too_many(s))
			break;
		switch (tg->kind) {
		case ALIAS_T_ADDRESS:
			if (expand_is_self(s, tg->text)) {
				/* "alice: alice, bob" and a .forward naming its
				 * owner: the user's own mailbox (an alias still
				 * lets the .forward speak). */
				deliver_user(s, s->user, cls == LOCAL_CLASS_ALIAS);
				break;
			}
			deliver_add_forward(s, tg->text);
			break;
		case ALIAS_T_MAILBOX:
			/* \name: that user's own mailbox, no alias or .forward
			 * (delivered with that user's identity). */
			deliver_user(s, tg->text, false);
			break;
		case ALIAS_T_COMMAND:
			if (!(cf->allow_commands & cls)) {
				deliver_fail(s, "5.7.1",
				    "mail to command is restricted "
				    "(allow_mail_to_commands): %s in %s", tg->text,
				    where);
				break;
			}
			deliver_command(s, id, tg->text);
			break;
		case ALIAS_T_FILE:
		case ALIAS_T_MAILDIR:
			if (!(cf->allow_files & cls)) {
				deliver_fail(s, "5.7.1",
				    "mail to file is restricted "
				    "(allow_mail_to_files): %s in %s", tg->text,
				    where);
				break;
			}
			deliver_file(s, id, tg->text, tg->kind == ALIAS_T_MAILDIR);
			break;
		case ALIAS_T_INCLUDE:
			expand_include(s, tg->text, id, depth);
			break;
		}
	}
	alias_list_free(&t);
	str_release(&why);
}

/* Reads each line of text (comment lines skipped) as a target list. */
static size_t expand_lines(dstate_t *s, int cls, char *text,
    const ident_t *id, const char *where)
{
	char *save = NULL;
	size_t lists = 0;

	for (char *line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *p = line;
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (*p == '#' || *p == 0)
			continue;
		lists++;
		expand_list(s, cls, p, strlen(p), id, 0, where);
	}
	return lists;
}

/* The user's .forward: true when one was used (or failed in a way that
 * defers), false when there is none to use. */
bool expand_forward(dstate_t *s, const luser_t *u)
{
	const local_conf_t *cf = &s->l->conf;
	const char *names[16], *values[16];
	size_t n = deliver_vars(s, u, names, values);
	ident_t id = { u->uid, u->gid, u->home, u->shell, u->name };
	char *list = xstrdup(cf->forward_path), *p = list, *elem;
	str_t path = STR_INIT, text = STR_INIT, where = STR_INIT;
	bool used = false;

	while (!used && (elem = str_token(&p, ", \t\r\n")) != NULL) {
		struct stat sb;
		const char *bad = NULL;
		int fd;

		str_reset(&path);
		if (!local_expand(elem, names, values, n, false, &path)
		    || path.len == 0 || !deliver_first_time(s, "forward_path",
		    str_cstr(&path)))
			continue;
		if (!deliver_enter(s, &id)) {
			used = true;
			break;
		}
		fd = open(str_cstr(&path), O_RDONLY | O_NOFOLLOW | O_NONBLOCK
		    | O_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			priv_leave();
			if (e == ENOENT || e == ENOTDIR)
				continue;
			if (e == ELOOP) {
				log_warning("%s: ignoring .forward file %s of %s: it is "
				    "a symbolic link", s->msg->queue_id,
				    str_cstr(&path), u->name);
				continue;
			}
			deliver_fail(s, "4.3.0",
			    "cannot open .forward file %s: %s",
			    str_cstr(&path), strerror(e));
			used = true;
			break;
		}
		if (fstat(fd, &sb) < 0) {
			int e = errno;
			close(fd);
			priv_leave();
			deliver_fail(s, "4.3.0",
			    "cannot read .forward file %s: %s",
			    str_cstr(&path), strerror(e));
			used = true;
			break;
		}
		if (!S_ISREG(sb.st_mode))
			bad = "it is not a regular file";
		else if (sb.st_uid != u->uid)
			bad = "it is not owned by the user";
		else if (sb.st_mode & 0022)
			bad = (sb.st_mode & 0002) ? "it is world-writable"
			    : "it is group-writable";
		if (bad != NULL) {
			close(fd);
			priv_leave();
			log_warning("%s: ignoring insecure .forward file %s of %s: "
			    "%s", s->msg->queue_id, str_cstr(&path), u->name, bad);
			continue;
		}
		(void)fcntl(fd, F_SETFL, 0);
		str_reset(&text);
		if (file_read_fd(fd, &text, TARGET_FILE_MAX) < 0) {
			int e = errno;
			close(fd);
			priv_leave();
			deliver_fail(s, e == EFBIG ? "5.3.0" : "4.3.0",
			    "cannot read "
			    ".forward file %s: %s", str_cstr(&path), strerror(e));
			used = true;
			break;
		}
		close(fd);
		priv_leave();
		str_setf(&where, ".forward file %s", str_cstr(&path));
		if (expand_lines(s, LOCAL_CLASS_FORWARD, text.buf ? text.buf
		    : (char *)"", &id, str_cstr(&where)) > 0) {
			s->expanded = true;
			used = true;
		}
	}
	free(list);
	str_release(&path);
	str_release(&text);
	str_release(&where);
	return used;
}

/* The identity for commands and files of an alias found in table spec:
 * the table file's owner, or default_privs when that is root.  Without
 * root, local's own. */
static bool expand_alias_ident(dstate_t *s, const char *spec, ident_t *id,
    luser_t *holder)
{
	const local_conf_t *cf = &s->l->conf;
	str_t path = STR_INIT, err = STR_INIT;
	struct stat sb;
	struct passwd *pw;
	uid_t owner = 0;

	memset(id, 0, sizeof(*id));
	if (!priv_can_switch()) {
		id->uid = getuid();
		id->gid = getgid();
		pw = getpwuid(id->uid);
		id->name = pw ? (holder->name = xstrdup(pw->pw_name)) : "";
		return true;
	}
	if (strncmp(spec, "hash:", 5) == 0)
		str_setf(&path, "%s.db", spec + 5);
	else if (strncmp(spec, "texthash:", 9) == 0)
		str_set(&path, spec + 9);
	if (path.len > 0 && stat(str_cstr(&path), &sb) == 0)
		owner = sb.st_uid;
	str_release(&path);
	if (owner != 0) {
		pw = getpwuid(owner);
		if (pw != NULL) {
			id->uid = pw->pw_uid;
			id->gid = pw->pw_gid;
			id->name = holder->name = xstrdup(pw->pw_name);
			return true;
		}
		deliver_fail(s, "4.3.0",
		    "alias table %s: owner uid %lu has no account",
		    spec, (unsigned long)owner);
		return false;
	}
	if (luser_find(NULL, cf->default_privs, holder, &err) != 1) {
		deliver_fail(s, "4.3.5", "default_privs: no account \"%s\"%s%s",
		    cf->default_privs, err.len ? ": " : "", str_cstr(&err));
		str_release(&err);
		return false;
	}
	if (holder->uid == 0) {
		deliver_fail(s, "4.3.5", "default_privs: \"%s\" is root",
		    cf->default_privs);
		return false;
	}
	id->uid = holder->uid;
	id->gid = holder->gid;
	id->name = holder->name;
	return true;
}

/* owner-NAME: the sender of the forwarded copies when the alias has one. */
static void expand_owner(dstate_t *s, const char *name)
{
	const local_conf_t *cf = &s->l->conf;
	str_t key = STR_INIT, err = STR_INIT;
	const char *value;

	if (!cf->owner_request_special || *s->msg->sender == 0
	    || strncasecmp(name, "owner-", 6) == 0)
		return;
	str_setf(&key, "owner-%s", name);
	switch (maps_get(s->l->aliases, str_cstr(&key), &value, NULL)) {
	case -1:
		expand_why(s->l->aliases, &err);
		log_warning("%s: %s", s->msg->queue_id, str_cstr(&err));
		break;
	case 0:
		break;
	default:
		if (cf->expand_owner_alias) {
			alias_list_t t = ALIAS_LIST_INIT;
			str_t why = STR_INIT;
			if (alias_targets_parse(value, strlen(value), &t, &why) == 0
			    && t.n > 0 && t.v[0].kind == ALIAS_T_ADDRESS)
				s->fwd_sender = xstrdup(t.v[0].text);
			alias_list_free(&t);
			str_release(&why);
		}
		if (s->fwd_sender == NULL) {
			str_catf(&key, "@%s", cf->myorigin);
			s->fwd_sender = str_steal(&key);
		}
		break;
	}
	str_release(&key);
	str_release(&err);
}

/* alias_maps: true when an alias answered (or the tables failed). */
bool expand_alias(dstate_t *s)
{
	maps_t *m = s->l->aliases;
	const char *keys[2] = { s->local, s->ext ? s->user : NULL };
	str_t err = STR_INIT, where = STR_INIT;
	const char *value, *spec;

	for (size_t k = 0; k < 2 && keys[k] != NULL; k++) {
		int rc = maps_get(m, keys[k], &value, NULL);

		if (rc < 0) {
			expand_why(m, &err);
			deliver_fail(s, "4.3.0",
			    "alias database unavailable: %s", str_cstr(&err));
			str_release(&err);
			return true;
		}
		if (rc == 0)
			continue;
		char *copy = xstrdup(value);
		ident_t id;
		luser_t holder = LUSER_INIT;
		spec = maps_found(m);	/* an entry's spec: lives as long
					 * as m */
		s->expanded = true;
		if (expand_alias_ident(s, spec, &id, &holder)) {
			expand_owner(s, keys[k]);
			str_setf(&where, "alias %s in %s", keys[k], spec);
			expand_list(s, LOCAL_CLASS_ALIAS, copy, strlen(copy),
			    &id, 0, str_cstr(&where));
		}
		luser_free(&holder);
		free(copy);
		str_release(&err);
		str_release(&where);
		return true;
	}
	str_release(&err);
	return false;
}
