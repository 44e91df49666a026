/* local(8) settings from the configuration (see local.h). */
#include <stdlib.h>
#include <string.h>
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
#define S(f, name) c->f = xstrdup(config_get_str(name))
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
	c->command_time_limit = config_get_time("command_time_limit");
	c->mailbox_size_limit = config_get_size("mailbox_size_limit");
	c->ipc_timeout = config_get_time("ipc_timeout");
	if (c->ipc_timeout > 600)
		c->ipc_timeout = 600;
	c->lock_wait = 10;
	c->owner_request_special = config_get_bool("owner_request_special");
	c->expand_owner_alias = config_get_bool("expand_owner_alias");
	if (words("allow_mail_to_commands",
	    config_get_str("allow_mail_to_commands"), classes, class_bits, 3,
	    &c->allow_commands, err) < 0
	    || words("allow_mail_to_files", config_get_str("allow_mail_to_files"),
	    classes, class_bits, 3, &c->allow_files, err) < 0
	    || words("prepend_delivered_header",
	    config_get_str("prepend_delivered_header"), dt, dt_bits, 3,
	    &c->prepend_delivered, err) < 0
	    || words("mailbox_delivery_lock",
	    config_get_str("mailbox_delivery_lock"), locks, lock_bits, 2, &lk,
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
