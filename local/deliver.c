/* Local delivery of one recipient (see local.h and doc/local.md). */
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
#include "cleanup_client.h"
#include "command.h"
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

/* unix:passwd.byname in alias_maps is no alias table: it answers no
 * key, users are found by deliver_user. */
static const maps_own_t userdb = { "unix:passwd.byname", maps_own_none };

/* Why the last lookup in m failed, as local has always said it: what
 * dict_open said for a table that does not open, else "spec: reason". */
static void alias_why(const maps_t *m, str_t *err)
{
	const char *reason, *spec = maps_failed(m, &reason);

	if (maps_failed_open(m))
		str_set(err, reason);
	else
		str_setf(err, "%s: %s", spec, reason);
}

/* ---- Configuration ------------------------------------------------------ */

struct local {
	local_conf_t conf;
	maps_t *aliases;	/* alias_maps, opened when first used */
	local_rcpt_t *recipients;	/* local_recipient_maps */
	addr_domlist_t *mydest;
};

static void copy_conf(local_conf_t *dst, const local_conf_t *src)
{
	*dst = *src;
#define DUP(f) dst->f = xstrdup(src->f ? src->f : "")
	DUP(alias_maps);
	DUP(local_recipient_maps);
	DUP(recipient_delimiter);
	DUP(home_mailbox);
	DUP(mail_spool_directory);
	DUP(mailbox_command);
	DUP(forward_path);
	DUP(luser_relay);
	DUP(mail_root);
	DUP(default_privs);
	DUP(mydestination);
	DUP(myorigin);
	DUP(cleanup_service);
#undef DUP
}

void local_conf_free(local_conf_t *c)
{
	free(c->alias_maps);
	free(c->local_recipient_maps);
	free(c->recipient_delimiter);
	free(c->home_mailbox);
	free(c->mail_spool_directory);
	free(c->mailbox_command);
	free(c->forward_path);
	free(c->luser_relay);
	free(c->mail_root);
	free(c->default_privs);
	free(c->mydestination);
	free(c->myorigin);
	free(c->cleanup_service);
	memset(c, 0, sizeof(*c));
}

local_t *local_new(const local_conf_t *conf, str_t *err)
{
	local_t *l = xcalloc(1, sizeof(*l));

	copy_conf(&l->conf, conf);
	l->mydest = addr_domlist_new("mydestination", l->conf.mydestination,
	    0, err);
	if (l->mydest == NULL) {
		local_conf_free(&l->conf);
		free(l);
		return NULL;
	}
	l->aliases = maps_open("alias_maps", l->conf.alias_maps, MAPS_FLAG_LAZY,
	    &userdb, NULL);
	l->recipients = local_rcpt_new(l->conf.local_recipient_maps,
	    l->conf.mail_root, l->conf.recipient_delimiter);
	return l;
}

void local_free(local_t *l)
{
	if (l == NULL)
		return;
	maps_free(l->aliases);
	local_rcpt_free(l->recipients);
	addr_domlist_free(l->mydest);
	local_conf_free(&l->conf);
	free(l);
}

void local_refresh(local_t *l)
{
	maps_refresh(l->aliases);
	local_rcpt_refresh(l->recipients);
}

/* ---- $name expansion ---------------------------------------------------- */

static const char *var_value(const char *name, size_t len,
    const char *const *names, const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
			return values[i] ? values[i] : "";
	return "";
}

static void shell_quote(const char *v, str_t *out)
{
	str_putc(out, '\'');
	for (; *v; v++) {
		if (*v == '\'')
			str_cat(out, "'\\''");
		else
			str_putc(out, *v);
	}
	str_putc(out, '\'');
}

static void put_value(const char *v, bool quote, str_t *out)
{
	if (quote && *v)
		shell_quote(v, out);
	else
		str_cat(out, v);
}

bool local_expand(const char *t, const char *const *names,
    const char *const *values, size_t n, bool quote, str_t *out)
{
	bool all = true;

	while (*t) {
		if (*t != '$') {
			str_putc(out, *t++);
			continue;
		}
		t++;
		if (*t == '$') {
			str_putc(out, *t++);
			continue;
		}
		if (*t == '{') {
			const char *end = strchr(t, '}');
			if (end == NULL) {
				str_cat(out, "${");
				t++;
				continue;
			}
			const char *name = t + 1;
			size_t len = strcspn(name, "?:}");
			const char *v = var_value(name, len, names, values, n);
			char op = name[len];
			if (op == '?' || op == ':') {
				const char *text = name + len + 1;
				bool use = op == '?' ? *v != 0 : *v == 0;
				if (use) {
					/* The text may hold $names itself. */
					char *sub = xstrndup(text, (size_t)(end - text));
					(void)local_expand(sub, names, values, n, quote, out);
					free(sub);
				}
			} else {
				if (*v == 0)
					all = false;
				put_value(v, quote, out);
			}
			t = end + 1;
			continue;
		}
		size_t len = 0;
		while (isalnum((unsigned char)t[len]) || t[len] == '_')
			len++;
		if (len == 0) {
			str_putc(out, '$');
			continue;
		}
		const char *v = var_value(t, len, names, values, n);
		if (*v == 0)
			all = false;
		put_value(v, quote, out);
		t += len;
	}
	return all;
}

/* ---- One recipient's delivery -------------------------------------------- */

/* An identity deliveries run with. */
typedef struct ident {
	uid_t uid;
	gid_t gid;
	const char *home;	/* working directory of commands */
	const char *shell;
	const char *name;	/* user name for the environment */
} ident_t;

typedef struct dstate {
	local_t *l;
	const local_msg_t *msg;
	const dlv_rcpt_t *rcpt;
	/* The recipient, split: local part (lower case), user, extension,
	 * domain (may be NULL). */
	char *local;
	char *user;
	char *ext;
	char delim[2];
	char *domain;
	/* Results. */
	lstatus_t worst;	/* first defer, else first bounce */
	str_t ok_text;		/* successes, joined */
	unsigned nok;
	bool expanded;		/* an alias or .forward was used */
	/* Addresses to forward, and every target seen. */
	alias_list_t fwd;
	htable_t *seen;
	size_t count;
	char *fwd_sender;	/* owner-NAME, or NULL: the message's sender */
	bool mailbox_done;	/* the user's own mailbox was delivered to */
} dstate_t;

static void result(dstate_t *s, const lstatus_t *st)
{
	char c = lstatus_class(st);

	if (c == '2') {
		s->nok++;
		if (s->ok_text.len < 400) {
			if (s->ok_text.len)
				str_cat(&s->ok_text, "; ");
			str_cat(&s->ok_text, str_cstr(&st->text));
		}
		return;
	}
	if (c == '4' && lstatus_class(&s->worst) != '4')
		lstatus_copy(&s->worst, st);
	else if (c == '5' && lstatus_class(&s->worst) == 0)
		lstatus_copy(&s->worst, st);
}

static void fail(dstate_t *s, const char *dsn, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(dstate_t *s, const char *dsn, const char *fmt, ...)
{
	lstatus_t st = LSTATUS_INIT;
	va_list ap;

	bcopy_str(st.dsn, sizeof(st.dsn), dsn);
	va_start(ap, fmt);
	str_vcatf(&st.text, fmt, ap);
	va_end(ap);
	result(s, &st);
	lstatus_free(&st);
}

/* True once for each distinct target (kind + text, case folded for
 * addresses); false for a repeat. */
static bool first_time(dstate_t *s, const char *kind, const char *text)
{
	str_t key = STR_INIT;
	bool fresh;

	str_setf(&key, "%s:%s", kind, text);
	if (strcmp(kind, "address") == 0)
		str_lower(key.buf);
	fresh = htable_find(s->seen, str_cstr(&key)) == NULL;
	if (fresh)
		htable_add(s->seen, str_cstr(&key), NULL);
	str_release(&key);
	return fresh;
}

static bool too_many(dstate_t *s)
{
	if (++s->count <= LOCAL_EXPANSION_MAX)
		return false;
	if (s->count == LOCAL_EXPANSION_MAX + 1)
		fail(s, "5.3.4", "alias expansion of %s has more than %d targets",
		    s->rcpt->address, LOCAL_EXPANSION_MAX);
	return true;
}

/* The variables of forward_path, mailbox_command and luser_relay. */
static size_t vars(dstate_t *s, const luser_t *u, const char **names,
    const char **values)
{
	size_t n = 0;
#define V(k, v) (names[n] = (k), values[n++] = (v) ? (v) : "")
	V("user", u ? u->name : s->user);
	V("home", u ? u->home : "");
	V("shell", u ? u->shell : "");
	V("extension", s->ext);
	V("recipient_delimiter", s->ext ? s->delim : "");
	V("local", s->local);
	V("domain", s->domain);
	V("recipient", s->rcpt->address);
	V("sender", s->msg->sender);
#undef V
	return n;
}

/* The clean environment of a command. */
static char **command_env(dstate_t *s, const ident_t *id)
{
	const char *names[] = { "HOME", "USER", "LOGNAME", "SHELL", "SENDER",
	    "RECIPIENT", "ORIGINAL_RECIPIENT", "LOCAL", "EXTENSION", "DOMAIN",
	    "QUEUE_ID" };
	const char *vals[] = { id->home, id->name, id->name, id->shell,
	    s->msg->sender, s->rcpt->address,
	    *s->rcpt->orig ? s->rcpt->orig : s->rcpt->address, s->local,
	    s->ext, s->domain, s->msg->queue_id };
	size_t n = sizeof(names) / sizeof(names[0]), k = 0;
	char **env = xcalloc(n + 3, sizeof(*env));
	str_t v = STR_INIT;

	env[k++] = xstrdup("PATH=/usr/bin:/bin");
	if (getenv("TZ") != NULL) {
		str_setf(&v, "TZ=%s", getenv("TZ"));
		env[k++] = str_steal(&v);
	}
	for (size_t i = 0; i < n; i++) {
		if (vals[i] == NULL)
			continue;
		str_setf(&v, "%s=%s", names[i], vals[i]);
		env[k++] = str_steal(&v);
	}
	return env;
}

static void free_env(char **env)
{
	for (char **e = env; *e; e++)
		free(*e);
	free(env);
}

static void copy_opts(dstate_t *s, lmsg_copy_t *c, int flags, bool dt)
{
	memset(c, 0, sizeof(*c));
	c->flags = flags;
	c->sender = s->msg->sender;
	c->delivered_to = dt ? s->rcpt->address : NULL;
}

static void deliver_command(dstate_t *s, const ident_t *id, const char *cmd)
{
	lstatus_t st = LSTATUS_INIT;
	lmsg_copy_t c;
	command_opts_t o = {
		.command = cmd,
		.uid = id->uid,
		.gid = id->gid,
		.cwd = id->home,
		.time_limit = s->l->conf.command_time_limit,
	};

	char **env = command_env(s, id);

	o.env = env;
	copy_opts(s, &c, LMSG_FROM_LINE | LMSG_RETURN_PATH,
	    (s->l->conf.prepend_delivered & LOCAL_DT_COMMAND) != 0);
	if (command_deliver(&o, s->msg->content, &c, &st) == 0)
		lstatus_set(&st, "2.0.0", "delivered to command: %s", cmd);
	result(s, &st);
	free_env(env);
	lstatus_free(&st);
}

/* Runs fn with the effective ids of id (when local can switch). */
static bool enter(dstate_t *s, const ident_t *id)
{
	str_t err = STR_INIT;

	if (priv_enter(id->uid, id->gid, &err) < 0) {
		fail(s, "4.3.0", "%s", str_cstr(&err));
		str_release(&err);
		return false;
	}
	return true;
}

static void deliver_file(dstate_t *s, const ident_t *id, const char *path,
    bool maildir)
{
	lstatus_t st = LSTATUS_INIT;
	mbox_opts_t o = MBOX_OPTS_INIT;
	lmsg_copy_t c;
	bool dt = (s->l->conf.prepend_delivered & LOCAL_DT_FILE) != 0;

	if (strcmp(path, "/dev/null") == 0) {
		lstatus_set(&st, "2.0.0", "delivered to file: /dev/null");
		result(s, &st);
		lstatus_free(&st);
		return;
	}
	if (!enter(s, id))
		return;
	if (maildir) {
		copy_opts(s, &c, LMSG_RETURN_PATH, dt);
		if (maildir_deliver(path, s->l->conf.mailbox_size_limit,
		    s->msg->content, &c, &st) == 0)
			lstatus_set(&st, "2.0.0", "delivered to maildir: %s", path);
	} else {
		o.dotlock = s->l->conf.lock_dotlock;
		o.fcntl_lock = s->l->conf.lock_fcntl;
		o.lock_wait = s->l->conf.lock_wait;
		o.size_limit = s->l->conf.mailbox_size_limit;
		copy_opts(s, &c, LMSG_FROM_LINE | LMSG_QUOTE_FROM | LMSG_BLANK_END
		    | LMSG_RETURN_PATH, dt);
		if (mbox_deliver(path, &o, s->msg->content, &c, &st) == 0)
			lstatus_set(&st, "2.0.0", "delivered to file: %s", path);
	}
	priv_leave();
	result(s, &st);
	lstatus_free(&st);
}

/* The user's mailbox: mailbox_command, home_mailbox or the spool. */
static void deliver_mailbox(dstate_t *s, const luser_t *u)
{
	const local_conf_t *cf = &s->l->conf;
	ident_t id = { u->uid, u->gid, u->home, u->shell, u->name };
	lstatus_t st = LSTATUS_INIT;
	str_t path = STR_INIT;
	lmsg_copy_t c;

	if (!first_time(s, "mailbox", u->name))
		return;
	s->mailbox_done = true;
	if (*cf->mailbox_command) {
		const char *names[16], *values[16];
		size_t n = vars(s, u, names, values);
		str_t cmd = STR_INIT;
		command_opts_t o = {
			.uid = u->uid, .gid = u->gid, .cwd = u->home,
			.time_limit = cf->command_time_limit,
		};
		(void)local_expand(cf->mailbox_command, names, values, n, true,
		    &cmd);
		char **env = command_env(s, &id);
		o.command = str_cstr(&cmd);
		o.env = env;
		copy_opts(s, &c, LMSG_FROM_LINE | LMSG_RETURN_PATH, true);
		if (command_deliver(&o, s->msg->content, &c, &st) == 0)
			lstatus_set(&st, "2.0.0", "delivered to command: %s",
			    str_cstr(&cmd));
		free_env(env);
		str_release(&cmd);
		goto out;
	}
	if (*cf->home_mailbox) {
		str_setf(&path, "%s/%s", u->home, cf->home_mailbox);
		if (!enter(s, &id))
			goto out_nostatus;
		if (cf->home_mailbox[strlen(cf->home_mailbox) - 1] == '/') {
			copy_opts(s, &c, LMSG_RETURN_PATH, true);
			(void)maildir_deliver(str_cstr(&path),
			    cf->mailbox_size_limit, s->msg->content, &c, &st);
		} else {
			mbox_opts_t o = MBOX_OPTS_INIT;
			o.dotlock = cf->lock_dotlock;
			o.fcntl_lock = cf->lock_fcntl;
			o.lock_wait = cf->lock_wait;
			o.size_limit = cf->mailbox_size_limit;
			copy_opts(s, &c, LMSG_FROM_LINE | LMSG_QUOTE_FROM
			    | LMSG_BLANK_END | LMSG_RETURN_PATH, true);
			(void)mbox_deliver(str_cstr(&path), &o, s->msg->content,
			    &c, &st);
		}
		priv_leave();
		goto out;
	}
	/* The spool.  A directory only root may write to (root:mail 0775,
	 * say) means the file and its lock are made as root, for the user;
	 * a world-writable sticky one (1777) is the user's to write in. */
	{
		struct stat sb;
		mbox_opts_t o = MBOX_OPTS_INIT;
		bool as_user = true;

		str_setf(&path, "%s/%s", cf->mail_spool_directory, u->name);
		if (stat(cf->mail_spool_directory, &sb) < 0) {
			mailbox_error_status(&st, errno, "use mail spool directory",
			    cf->mail_spool_directory);
			goto out;
		}
		if (priv_can_switch() && !((sb.st_mode & S_ISVTX)
		    && (sb.st_mode & 0002)))
			as_user = false;
		o.dotlock = cf->lock_dotlock;
		o.fcntl_lock = cf->lock_fcntl;
		o.lock_wait = cf->lock_wait;
		o.size_limit = cf->mailbox_size_limit;
		if (priv_can_switch()) {
			o.owner = u->uid;
			o.create_uid = u->uid;
			o.create_gid = u->gid;
		}
		if (as_user && !enter(s, &id))
			goto out_nostatus;
		copy_opts(s, &c, LMSG_FROM_LINE | LMSG_QUOTE_FROM | LMSG_BLANK_END
		    | LMSG_RETURN_PATH, true);
		(void)mbox_deliver(str_cstr(&path), &o, s->msg->content, &c, &st);
		if (as_user)
			priv_leave();
	}
out:
	result(s, &st);
out_nostatus:
	lstatus_free(&st);
	str_release(&path);
}

static void deliver_list(dstate_t *s, int cls, const char *list, size_t len,
    const ident_t *id, int depth, const char *where);
static void deliver_user(dstate_t *s, const char *name, bool forward);

/* :include:path, read with id's effective ids.  A file owned by someone
 * other than root gives its targets that owner's identity. */
static void deliver_include(dstate_t *s, const char *path, const ident_t *id,
    int depth)
{
	ident_t inc = *id;
	str_t text = STR_INIT;
	struct passwd *pw;
	struct stat sb;
	int fd;

	if (depth >= LOCAL_INCLUDE_DEPTH) {
		fail(s, "5.4.6", ":include: files nested more than %d deep at %s "
		    "(a loop?)", LOCAL_INCLUDE_DEPTH, path);
		return;
	}
	if (!enter(s, id))
		return;
	fd = file_open_read(path, FILE_ANY_OWNER);
	if (fd < 0 || fstat(fd, &sb) < 0 || file_read_fd(fd, &text,
	    TARGET_FILE_MAX) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		priv_leave();
		if (e == ENOENT || e == ELOOP || e == EINVAL || e == EFBIG)
			fail(s, "5.3.0", "cannot use :include: file %s: %s", path,
			    e == ELOOP ? "it is a symbolic link" : e == EINVAL
			    ? "not a regular file" : strerror(e));
		else
			fail(s, "4.3.0", "cannot read :include: file %s: %s", path,
			    strerror(e));
		str_release(&text);
		return;
	}
	close(fd);
	priv_leave();
	if (sb.st_mode & 0002) {
		fail(s, "5.7.1", ":include: file %s is world-writable: not used",
		    path);
		str_release(&text);
		return;
	}
	if (sb.st_uid != 0 && priv_can_switch() && sb.st_uid != id->uid) {
		if ((pw = getpwuid(sb.st_uid)) == NULL) {
			fail(s, "4.3.0", ":include: file %s: owner uid %lu has no "
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
			deliver_list(s, LOCAL_CLASS_INCLUDE, p, strlen(p), &inc,
			    depth + 1, str_cstr(&where));
		}
		str_release(&where);
	}
	str_release(&text);
}

static void add_forward(dstate_t *s, const char *addr)
{
	alias_list_t *f = &s->fwd;

	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 8;
		f->v = xreallocarray(f->v, f->cap, sizeof(*f->v));
	}
	f->v[f->n].kind = ALIAS_T_ADDRESS;
	f->v[f->n].text = xstrdup(addr);
	f->n++;
}

/* Is addr (internal form) the recipient itself? */
static bool is_self(dstate_t *s, const char *addr)
{
	const char *at = strrchr(addr, '@');
	size_t llen = at ? (size_t)(at - addr) : strlen(addr);

	if (!((strlen(s->user) == llen && strncasecmp(addr, s->user, llen) == 0)
	    || (strlen(s->local) == llen
		&& strncasecmp(addr, s->local, llen) == 0)))
		return false;
	return at == NULL || addr_domlist_match(s->l->mydest, at + 1, NULL) == 1;
}

static void deliver_list(dstate_t *s, int cls, const char *list, size_t len,
    const ident_t *id, int depth, const char *where)
{
	const local_conf_t *cf = &s->l->conf;
	alias_list_t t = ALIAS_LIST_INIT;
	str_t why = STR_INIT;

	if (alias_targets_parse(list, len, &t, &why) < 0) {
		/* What parsed before the error is still delivered. */
		log_warning("%s: %s: %s", s->msg->queue_id, where, str_cstr(&why));
		fail(s, "5.3.5", "%s: %s", where, str_cstr(&why));
	}
	for (size_t i = 0; i < t.n; i++) {
		alias_target_t *tg = &t.v[i];
		str_setf(&why, "target-%s", alias_kind_name(tg->kind));
		if (!first_time(s, str_cstr(&why), tg->text))
			continue;
		if (too_many(s))
			break;
		switch (tg->kind) {
		case ALIAS_T_ADDRESS:
			if (is_self(s, tg->text)) {
				/* "alice: alice, bob" and a .forward naming its
				 * owner: the user's own mailbox (an alias still
				 * lets the .forward speak). */
				deliver_user(s, s->user, cls == LOCAL_CLASS_ALIAS);
				break;
			}
			add_forward(s, tg->text);
			break;
		case ALIAS_T_MAILBOX:
			/* \name: that user's own mailbox, no alias or .forward
			 * (delivered with that user's identity). */
			deliver_user(s, tg->text, false);
			break;
		case ALIAS_T_COMMAND:
			if (!(cf->allow_commands & cls)) {
				fail(s, "5.7.1", "mail to command is restricted "
				    "(allow_mail_to_commands): %s in %s", tg->text,
				    where);
				break;
			}
			deliver_command(s, id, tg->text);
			break;
		case ALIAS_T_FILE:
		case ALIAS_T_MAILDIR:
			if (!(cf->allow_files & cls)) {
				fail(s, "5.7.1", "mail to file is restricted "
				    "(allow_mail_to_files): %s in %s", tg->text,
				    where);
				break;
			}
			deliver_file(s, id, tg->text, tg->kind == ALIAS_T_MAILDIR);
			break;
		case ALIAS_T_INCLUDE:
			deliver_include(s, tg->text, id, depth);
			break;
		}
	}
	alias_list_free(&t);
	str_release(&why);
}


static int to_cleanup(const void *data, size_t len, void *ctx)
{
	/* Errors are sticky in the client and come back from finish. */
	(void)cleanup_write(ctx, data, len);
	return 0;
}

/* Forwards the collected addresses as one new message through cleanup,
 * with a Delivered-To: header for loop detection. */
static void flush_forward(dstate_t *s)
{
	const local_conf_t *cf = &s->l->conf;
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	cleanup_reply_t reply;
	cleanup_client_t *c;
	str_t err = STR_INIT, envid = STR_INIT, ident = STR_INIT;
	lmsg_copy_t cp;
	const char *orcpt;
	int notify;

	if (s->fwd.n == 0)
		return;
	c = cleanup_connect(*cf->cleanup_service ? cf->cleanup_service : NULL,
	    (int)(cf->ipc_timeout * 1000), &err);
	if (c == NULL) {
		fail(s, "4.3.0", "cannot forward mail: %s", str_cstr(&err));
		goto out;
	}
	/* RFC 3461 section 6.2.7: forwarded through an alias or .forward,
	 * the copies keep ENVID, RET, ORCPT and NOTIFY, except SUCCESS: the
	 * success notice for this recipient is ours ("expanded"), not one
	 * per forwarding address.  A mailing list (an owner-NAME alias
	 * replaces the sender) is a new submission: none of them. */
	notify = s->rcpt->notify & ~QF_NOTIFY_SUCCESS;
	if (s->rcpt->notify != 0 && notify == 0)
		notify = QF_NOTIFY_NEVER;
	orcpt = *s->rcpt->orcpt ? s->rcpt->orcpt : NULL;
	env.sender = s->fwd_sender ? s->fwd_sender : s->msg->sender;
	if (s->fwd_sender != NULL) {
		notify = 0;
		orcpt = NULL;
	} else {
		if (s->msg->envid && *s->msg->envid) {
			addr_xtext_encode(s->msg->envid, strlen(s->msg->envid),
			    &envid);
			env.envid = str_cstr(&envid);
		}
		env.ret = s->msg->ret;
	}
	str_setf(&ident, "local %s", s->msg->queue_id);
	env.log_ident = str_cstr(&ident);
	(void)cleanup_send_envelope(c, &env);
	for (size_t i = 0; i < s->fwd.n; i++)
		(void)cleanup_send_rcpt(c, s->fwd.v[i].text, orcpt, notify);
	copy_opts(s, &cp, 0, (cf->prepend_delivered & LOCAL_DT_FORWARD) != 0);
	if (lmsg_copy(s->msg->content, &cp, to_cleanup, c, &err) == LMSG_EREAD) {
		(void)cleanup_abort(c, NULL);
		cleanup_close(c);
		fail(s, "4.3.0", "%s", str_cstr(&err));
		goto out;
	}
	if (cleanup_finish(c, &reply) == 0) {
		lstatus_t st = LSTATUS_INIT;
		lstatus_set(&st, "2.0.0", "forwarded as %s", reply.queue_id);
		result(s, &st);
		lstatus_free(&st);
	} else if (reply.status == CLEANUP_STAT_PERM) {
		fail(s, reply.dsn[0] == '5' ? reply.dsn : "5.3.0",
		    "cannot forward mail: %s", reply.text);
	} else {
		fail(s, reply.dsn[0] == '4' ? reply.dsn : "4.3.0",
		    "cannot forward mail: %s", reply.text);
	}
	cleanup_close(c);
out:
	str_release(&err);
	str_release(&envid);
	str_release(&ident);
}

/* Reads each line of text (comment lines skipped) as a target list. */
static size_t deliver_lines(dstate_t *s, int cls, char *text,
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
		deliver_list(s, cls, p, strlen(p), id, 0, where);
	}
	return lists;
}

/* The user's .forward: true when one was used (or failed in a way that
 * defers), false when there is none to use. */
static bool dot_forward(dstate_t *s, const luser_t *u)
{
	const local_conf_t *cf = &s->l->conf;
	const char *names[16], *values[16];
	size_t n = vars(s, u, names, values);
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
		    || path.len == 0 || !first_time(s, "forward_path",
		    str_cstr(&path)))
			continue;
		if (!enter(s, &id)) {
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
			fail(s, "4.3.0", "cannot open .forward file %s: %s",
			    str_cstr(&path), strerror(e));
			used = true;
			break;
		}
		if (fstat(fd, &sb) < 0) {
			int e = errno;
			close(fd);
			priv_leave();
			fail(s, "4.3.0", "cannot read .forward file %s: %s",
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
			fail(s, e == EFBIG ? "5.3.0" : "4.3.0", "cannot read "
			    ".forward file %s: %s", str_cstr(&path), strerror(e));
			used = true;
			break;
		}
		close(fd);
		priv_leave();
		str_setf(&where, ".forward file %s", str_cstr(&path));
		if (deliver_lines(s, LOCAL_CLASS_FORWARD, text.buf ? text.buf
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

static void deliver_user(dstate_t *s, const char *name, bool forward)
{
	const local_conf_t *cf = &s->l->conf;
	luser_t u = LUSER_INIT;
	str_t err = STR_INIT, lc = STR_INIT;
	int r;

	str_set(&lc, name);
	str_lower(lc.buf);
	if (!first_time(s, forward ? "user" : "user-mailbox", str_cstr(&lc)))
		goto out;
	r = luser_find(cf->mail_root, str_cstr(&lc), &u, &err);
	if (r < 0) {
		fail(s, "4.3.0", "%s", str_cstr(&err));
		goto out;
	}
	if (r == 0) {
		if (*cf->luser_relay) {
			const char *names[16], *values[16];
			size_t n = vars(s, NULL, names, values);
			str_t ext = STR_INIT, addr = STR_INIT;
			addr_err_t ae;
			(void)local_expand(cf->luser_relay, names, values, n, false,
			    &ext);
			if (addr_internalize(ext.buf ? ext.buf : "", ext.len,
			    ADDR_F_NO_DOMAIN | ADDR_F_LONG_LOCAL | ADDR_F_SMTPUTF8,
			    &addr, &ae) != ADDR_OK || addr.len == 0)
				fail(s, "4.3.5", "bad luser_relay address \"%s\": %s",
				    str_cstr(&ext), ae.text);
			else if (first_time(s, "address", str_cstr(&addr)))
				add_forward(s, str_cstr(&addr));
			str_release(&ext);
			str_release(&addr);
			goto out;
		}
		fail(s, "5.1.1", "unknown user: \"%s\"", str_cstr(&lc));
		goto out;
	}
	if (forward && *cf->forward_path && dot_forward(s, &u))
		goto out;
	deliver_mailbox(s, &u);
out:
	luser_free(&u);
	str_release(&err);
	str_release(&lc);
}

/* The identity for commands and files of an alias found in table spec:
 * the table file's owner, or default_privs when that is root.  Without
 * root, local's own. */
static bool alias_ident(dstate_t *s, const char *spec, ident_t *id,
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
		fail(s, "4.3.0", "alias table %s: owner uid %lu has no account",
		    spec, (unsigned long)owner);
		return false;
	}
	if (luser_find(NULL, cf->default_privs, holder, &err) != 1) {
		fail(s, "4.3.5", "default_privs: no account \"%s\"%s%s",
		    cf->default_privs, err.len ? ": " : "", str_cstr(&err));
		str_release(&err);
		return false;
	}
	if (holder->uid == 0) {
		fail(s, "4.3.5", "default_privs: \"%s\" is root",
		    cf->default_privs);
		return false;
	}
	id->uid = holder->uid;
	id->gid = holder->gid;
	id->name = holder->name;
	return true;
}

/* owner-NAME: the sender of the forwarded copies when the alias has one. */
static void owner_alias(dstate_t *s, const char *name)
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
		alias_why(s->l->aliases, &err);
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
static bool try_alias(dstate_t *s)
{
	maps_t *m = s->l->aliases;
	const char *keys[2] = { s->local, s->ext ? s->user : NULL };
	str_t err = STR_INIT, where = STR_INIT;
	const char *value, *spec;

	for (size_t k = 0; k < 2 && keys[k] != NULL; k++) {
		int rc = maps_get(m, keys[k], &value, NULL);

		if (rc < 0) {
			alias_why(m, &err);
			fail(s, "4.3.0", "alias database unavailable: %s",
			    str_cstr(&err));
			str_release(&err);
			return true;
		}
		if (rc == 0)
			continue;
		char *copy = xstrdup(value);
		ident_t id;
		luser_t holder = LUSER_INIT;
		spec = maps_found(m);	/* an entry's spec: lives as long as m */
		s->expanded = true;
		if (alias_ident(s, spec, &id, &holder)) {
			owner_alias(s, keys[k]);
			str_setf(&where, "alias %s in %s", keys[k], spec);
			deliver_list(s, LOCAL_CLASS_ALIAS, copy, strlen(copy),
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

/* local_recipient_maps (the rule smtpd checks at RCPT too:
 * local_rcpt.h): 1 known, 0 unknown, -1 deferred (status set). */
static int known(dstate_t *s)
{
	str_t err = STR_INIT;
	int r = local_rcpt_known(s->l->recipients, s->local, s->domain, &err);

	if (r < 0)
		fail(s, "4.3.0", "local_recipient_maps: %s", str_cstr(&err));
	str_release(&err);
	return r;
}

dlv_action_t local_deliver(local_t *l, const local_msg_t *msg,
    const dlv_rcpt_t *rcpt, lstatus_t *st)
{
	dstate_t s = { .l = l, .msg = msg, .rcpt = rcpt,
	    .worst = LSTATUS_INIT, .ok_text = STR_INIT };
	const char *at = strrchr(rcpt->address, '@');
	addr_split_t sp;
	dlv_action_t action;
	int r;

	s.seen = htable_new(16, 0);
	s.local = at ? xstrndup(rcpt->address, (size_t)(at - rcpt->address))
	    : xstrdup(rcpt->address);
	str_lower(s.local);
	s.domain = at ? xstrdup(at + 1) : NULL;
	addr_split(s.local, l->conf.recipient_delimiter, &sp);
	s.user = xstrdup(sp.user ? sp.user : s.local);
	s.ext = sp.ext ? xstrdup(sp.ext) : NULL;
	s.delim[0] = sp.delim;
	addr_split_free(&sp);

	r = lmsg_has_delivered_to(msg->content, rcpt->address);
	if (r < 0)
		fail(&s, "4.3.0", "cannot read the message header of %s",
		    msg->queue_id);
	else if (r > 0)
		fail(&s, "5.4.6", "mail forwarding loop for %s", rcpt->address);
	else if ((r = known(&s)) == 0)
		fail(&s, "5.1.1", "User unknown in local recipient table");
	else if (r > 0 && !try_alias(&s))
		deliver_user(&s, s.user, true);
	flush_forward(&s);

	if (lstatus_class(&s.worst) != 0) {
		lstatus_copy(st, &s.worst);
		action = lstatus_class(st) == '4' ? DLV_ACT_DELAYED
		    : DLV_ACT_FAILED;
	} else if (s.nok == 0) {
		lstatus_set(st, "5.3.0", "the expansion of %s leaves no "
		    "destination", rcpt->address);
		action = DLV_ACT_FAILED;
	} else {
		lstatus_set(st, "2.0.0", "%s", str_cstr(&s.ok_text));
		/* As Postfix: an alias or .forward is "expanded", unless it
		 * is a mailing list (an owner-NAME alias): then the list
		 * took the mail, "delivered". */
		if (s.expanded && s.fwd_sender == NULL)
			action = DLV_ACT_EXPANDED;
		else
			action = DLV_ACT_DELIVERED;
	}
	htable_free(s.seen, NULL);
	alias_list_free(&s.fwd);
	lstatus_free(&s.worst);
	str_release(&s.ok_text);
	free(s.local);
	free(s.domain);
	free(s.user);
	free(s.ext);
	free(s.fwd_sender);
	return action;
}
