/* Local delivery of one recipient (see local.h and doc/local.md): the
 * mailbox, files, commands, forwarding through cleanup, and the result;
 * expand.c finds what the recipient expands to. */
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
#include "command.h"
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

void deliver_result(dstate_t *s, const lstatus_t *st)
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

void deliver_fail(dstate_t *s, const char *dsn, const char *fmt, ...)
{
	lstatus_t st = LSTATUS_INIT;
	va_list ap;

	bcopy_str(st.dsn, sizeof(st.dsn), dsn);
	va_start(ap, fmt);
	str_vcatf(&st.text, fmt, ap);
	va_end(ap);
	deliver_result(s, &st);
	lstatus_free(&st);
}

/* True once for each distinct target (kind + text, case folded for
 * addresses); false for a repeat. */
bool deliver_first_time(dstate_t *s, const char *kind, const char *text)
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

bool deliver_too_many(dstate_t *s)
{
	if (++s->count <= LOCAL_EXPANSION_MAX)
		return false;
	if (s->count == LOCAL_EXPANSION_MAX + 1)
		deliver_fail(s, "5.3.4",
		    "alias expansion of %s has more than %d targets",
		    s->rcpt->address, LOCAL_EXPANSION_MAX);
	return true;
}

/* The variables of forward_path, mailbox_command and luser_relay. */
size_t deliver_vars(dstate_t *s, const luser_t *u, const char **names,
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

void deliver_command(dstate_t *s, const ident_t *id, const char *cmd)
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
	deliver_result(s, &st);
	free_env(env);
	lstatus_free(&st);
}

/* Runs fn with the effective ids of id (when local can switch). */
bool deliver_enter(dstate_t *s, const ident_t *id)
{
	str_t err = STR_INIT;

	if (priv_enter(id->uid, id->gid, &err) < 0) {
		deliver_fail(s, "4.3.0", "%s", str_cstr(&err));
		str_release(&err);
		return false;
	}
	return true;
}

void deliver_file(dstate_t *s, const ident_t *id, const char *path,
    bool maildir)
{
	lstatus_t st = LSTATUS_INIT;
	mbox_opts_t o = MBOX_OPTS_INIT;
	lmsg_copy_t c;
	bool dt = (s->l->conf.prepend_delivered & LOCAL_DT_FILE) != 0;

	if (strcmp(path, "/dev/null") == 0) {
		lstatus_set(&st, "2.0.0", "delivered to file: /dev/null");
		deliver_result(s, &st);
		lstatus_free(&st);
		return;
	}
	if (!deliver_enter(s, id))
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
	deliver_result(s, &st);
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

	if (!deliver_first_time(s, "mailbox", u->name))
		return;
	s->mailbox_done = true;
	if (*cf->mailbox_command) {
		const char *names[16], *values[16];
		size_t n = deliver_vars(s, u, names, values);
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
		if (!deliver_enter(s, &id))
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
		if (as_user && !deliver_enter(s, &id))
			goto out_nostatus;
		copy_opts(s, &c, LMSG_FROM_LINE | LMSG_QUOTE_FROM | LMSG_BLANK_END
		    | LMSG_RETURN_PATH, true);
		(void)mbox_deliver(str_cstr(&path), &o, s->msg->content, &c, &st);
		if (as_user)
			priv_leave();
	}
out:
	deliver_result(s, &st);
out_nostatus:
	lstatus_free(&st);
	str_release(&path);
}

void deliver_add_forward(dstate_t *s, const char *addr)
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

static int to_cleanup(const void *data, size_t len, void *ctx)
{
	/* Errors are sticky in the client and come back from finish. */
	(void)cleanup_clnt_write(ctx, data, len);
	return 0;
}

/* Forwards the collected addresses as one new message through cleanup,
 * with a Delivered-To: header for loop detection. */
static void deliver_forwards(dstate_t *s)
{
	const local_conf_t *cf = &s->l->conf;
	cleanup_envelope_t env = CLEANUP_ENVELOPE_INIT;
	cleanup_reply_t reply;
	cleanup_clnt_t *c;
	str_t err = STR_INIT, envid = STR_INIT, ident = STR_INIT;
	lmsg_copy_t cp;
	const char *orcpt;
	int notify;

	if (s->fwd.n == 0)
		return;
	c = cleanup_clnt_connect(*cf->cleanup_service ? cf->cleanup_service :
	    NULL, (int)(cf->ipc_timeout * 1000), &err);
	if (c == NULL) {
		deliver_fail(s, "4.3.0", "cannot forward mail: %s",
		    str_cstr(&err));
		goto out;
	}
	/* RFC 3461 section 6.2.7: forwarded through an alias or .forward,
	 * the copies keep ENVID, RET, ORCPT and NOTIFY, except SUCCESS: the
	 * success notice for this recipient is ours ("expanded"), not one
	 * per forwarding address.  A mailing list (an owner-NAME alias
	 * replaces the sender) is a new submission: none of them. */
	notify = s->rcpt->notify & ~DSN_NOTIFY_SUCCESS;
	if (s->rcpt->notify != 0 && notify == 0)
		notify = DSN_NOTIFY_NEVER;
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
	(void)cleanup_clnt_send_envelope(c, &env);
	for (size_t i = 0; i < s->fwd.n; i++)
		(void)cleanup_clnt_send_rcpt(c, s->fwd.v[i].text, orcpt,
		    notify);
	copy_opts(s, &cp, 0, (cf->prepend_delivered & LOCAL_DT_FORWARD) != 0);
	if (lmsg_copy(s->msg->content, &cp, to_cleanup, c, &err) == LMSG_EREAD) {
		(void)cleanup_clnt_abort(c, NULL);
		cleanup_clnt_close(c);
		deliver_fail(s, "4.3.0", "%s", str_cstr(&err));
		goto out;
	}
	if (cleanup_clnt_finish(c, &reply) == 0) {
		lstatus_t st = LSTATUS_INIT;
		lstatus_set(&st, "2.0.0", "forwarded as %s", reply.queue_id);
		deliver_result(s, &st);
		lstatus_free(&st);
	} else if (reply.status == CLEANUP_STAT_PERM) {
		deliver_fail(s, reply.dsn[0] == '5' ? reply.dsn : "5.3.0",
		    "cannot forward mail: %s", reply.text);
	} else {
		deliver_fail(s, reply.dsn[0] == '4' ? reply.dsn : "4.3.0",
		    "cannot forward mail: %s", reply.text);
	}
	cleanup_clnt_close(c);
out:
	str_release(&err);
	str_release(&envid);
	str_release(&ident);
}

void deliver_user(dstate_t *s, const char *name, bool forward)
{
	const local_conf_t *cf = &s->l->conf;
	luser_t u = LUSER_INIT;
	str_t err = STR_INIT, lc = STR_INIT;
	int r;

	str_set(&lc, name);
	str_lower(lc.buf);
	if (!deliver_first_time(s, forward ? "user" : "user-mailbox",
	    str_cstr(&lc)))
		goto out;
	r = luser_find(cf->mail_root, str_cstr(&lc), &u, &err);
	if (r < 0) {
		deliver_fail(s, "4.3.0", "%s", str_cstr(&err));
		goto out;
	}
	if (r == 0) {
		if (*cf->luser_relay) {
			const char *names[16], *values[16];
			size_t n = deliver_vars(s, NULL, names, values);
			str_t ext = STR_INIT, addr = STR_INIT;
			addr_err_t ae;
			(void)local_expand(cf->luser_relay, names, values, n, false,
			    &ext);
			if (addr_internalize(ext.buf ? ext.buf : "", ext.len,
			    ADDR_F_NO_DOMAIN | ADDR_F_LONG_LOCAL | ADDR_F_SMTPUTF8,
			    &addr, &ae) != ADDR_OK || addr.len == 0)
				deliver_fail(s, "4.3.5",
				    "bad luser_relay address \"%s\": %s",
				    str_cstr(&ext), ae.text);
			else if (deliver_first_time(s, "address",
			    str_cstr(&addr)))
				deliver_add_forward(s, str_cstr(&addr));
			str_release(&ext);
			str_release(&addr);
			goto out;
		}
		deliver_fail(s, "5.1.1", "unknown user: \"%s\"", str_cstr(&lc));
		goto out;
	}
	if (forward && *cf->forward_path && expand_forward(s, &u))
		goto out;
	deliver_mailbox(s, &u);
out:
	luser_free(&u);
	str_release(&err);
	str_release(&lc);
}

/* local_recipient_maps (the rule smtpd checks at RCPT too:
 * local_rcpt.h): 1 known, 0 unknown, -1 deferred (status set). */
static int deliver_known(dstate_t *s)
{
	str_t err = STR_INIT;
	int r = local_rcpt_known(s->l->recipients, s->local, s->domain, &err);

	if (r < 0)
		deliver_fail(s, "4.3.0", "local_recipient_maps: %s",
		    str_cstr(&err));
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
		deliver_fail(&s, "4.3.0",
		    "cannot read the message header of %s", msg->queue_id);
	else if (r > 0)
		deliver_fail(&s, "5.4.6", "mail forwarding loop for %s",
		    rcpt->address);
	else if ((r = deliver_known(&s)) == 0)
		deliver_fail(&s, "5.1.1",
		    "User unknown in local recipient table");
	else if (r > 0 && !expand_alias(&s))
		deliver_user(&s, s.user, true);
	deliver_forwards(&s);

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
