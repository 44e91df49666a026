/* local(8) settings from the configuration (see local.h). */
#include <stdlib.h>
#include <string.h>
#include "addr.h"
#include "deliver.h"
#include "local.h"
#include "local_rcpt.h"
#include "mem.h"
#include "pconfig.h"
#include "user.h"

/* Parses a list of words into bits; -1 with err for an unknown word. */
static int words(const char *param, const char *value, const char *const *names,
    const int *bits, size_t n, int *out, str_t *err)
{
	char *copy = xstrdup(value), *p = copy, *w;
	int rc = 0;

	*out = 0;
	while ((w = str_token(&p, ", \t\r\n")) != NULL) {
		size_t i;
		for (i = 0; i < n; i++)
			if (strcmp(w, names[i]) == 0)
				break;
		if (i == n) {
			str_setf(err, "%s: unknown word \"%s\"", param, w);
			rc = -1;
			break;
		}
		*out |= bits[i];
	}
	free(copy);
	return rc;
}

int local_class_parse(const char *value, int *out, str_t *err)
{
	static const char *const names[] = { "alias", "forward", "include" };
	static const int bits[] = { LOCAL_CLASS_ALIAS, LOCAL_CLASS_FORWARD,
	    LOCAL_CLASS_INCLUDE };

	return words("value", value, names, bits, 3, out, err);
}

int local_conf_from_config(local_conf_t *c, str_t *err)
{
	static const char *const classes[] = { "alias", "forward", "include" };
	static const int class_bits[] = { LOCAL_CLASS_ALIAS,
	    LOCAL_CLASS_FORWARD, LOCAL_CLASS_INCLUDE };
	static const char *const dt[] = { "command", "file", "forward" };
	static const int dt_bits[] = { LOCAL_DT_COMMAND, LOCAL_DT_FILE,
	    LOCAL_DT_FORWARD };
	static const char *const locks[] = { "fcntl", "dotlock" };
	static const int lock_bits[] = { 1, 2 };
	int lk;

	memset(c, 0, sizeof(*c));
#define S(f, name) c->f = xstrdup(pconfig_get_str(name))
	S(alias_maps, "alias_maps");
	S(local_recipient_maps, "local_recipient_maps");
	S(recipient_delimiter, "recipient_delimiter");
	S(home_mailbox, "home_mailbox");
	S(mail_spool_directory, "mail_spool_directory");
	S(mailbox_command, "mailbox_command");
	S(forward_path, "forward_path");
	S(luser_relay, "luser_relay");
	S(mail_root, "local_mail_root");
	S(default_privs, "default_privs");
	S(mydestination, "mydestination");
	S(myorigin, "myorigin");
#undef S
	/* A private instance reads its own aliases by default, and smtpd
	 * knows the same recipients (local_rcpt.h). */
	{
		str_t am = STR_INIT, rm = STR_INIT;
		local_rcpt_maps_from_config(&am, &rm);
		free(c->alias_maps);
		free(c->local_recipient_maps);
		c->alias_maps = str_steal(&am);
		c->local_recipient_maps = str_steal(&rm);
	}
	c->cleanup_service = xstrdup("");
	c->command_time_limit = pconfig_get_time("command_time_limit");
	c->mailbox_size_limit = pconfig_get_size("mailbox_size_limit");
	c->ipc_timeout = pconfig_get_time("ipc_timeout");
	if (c->ipc_timeout > 600)
		c->ipc_timeout = 600;
	c->lock_wait = 10;
	c->owner_request_special = pconfig_get_bool("owner_request_special");
	c->expand_owner_alias = pconfig_get_bool("expand_owner_alias");
	if (words("allow_mail_to_commands",
	    pconfig_get_str("allow_mail_to_commands"), classes, class_bits, 3,
	    &c->allow_commands, err) < 0
	    || words("allow_mail_to_files",
	    pconfig_get_str("allow_mail_to_files"), classes, class_bits, 3,
	    &c->allow_files, err) < 0
	    || words("prepend_delivered_header",
	    pconfig_get_str("prepend_delivered_header"), dt, dt_bits, 3,
	    &c->prepend_delivered, err) < 0
	    || words("mailbox_delivery_lock",
	    pconfig_get_str("mailbox_delivery_lock"), locks, lock_bits, 2, &lk,
	    err) < 0) {
		local_conf_free(c);
		return -1;
	}
	c->lock_fcntl = (lk & 1) != 0;
	c->lock_dotlock = (lk & 2) != 0;
	if (*c->mail_root && c->mail_root[0] != '/') {
		str_setf(err, "local_mail_root: \"%s\" is not an absolute path",
		    c->mail_root);
		local_conf_free(c);
		return -1;
	}
	return 0;
}

/* ---- The tables and lists the settings name -------------------------- */

/* unix:passwd.byname in alias_maps is no alias table: it answers no
 * key, users are found by deliver_user. */
static const maps_own_t userdb = { "unix:passwd.byname", maps_own_none };

static void conf_copy(local_conf_t *dst, const local_conf_t *src)
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

	conf_copy(&l->conf, conf);
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
