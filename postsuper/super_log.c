/* libpostq: authorized_mailq_users and authorized_flush_users. */
#include <ctype.h>
#include <stdarg.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "dict.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "postq/pq.h"
#include "user_list.h"

/* Root may always look; everyone else as the list parameter says. */
int pq_user_allowed(const char *param, uid_t uid, str_t *why)
{
	struct passwd *pw;
	const char *user;
	int result;

	if (uid == 0)
		return 1;
	pw = getpwuid(uid);
	user = pw ? pw->pw_name : "";
	result = user_list_match(param, user, why);
	if (result == 0)
		str_setf(why, "user %s (uid %ld) is not allowed by %s", *user ? user
		    : "?", (long)uid, param);
	return result;
}

static bool log_set_up, echo;

void pq_log_setup(bool echo_actions)
{
	const char *file = config_get_str("maillog_file");

	if (file == NULL || *file == 0)
		log_to_syslog();
	else if (log_to_file(file) < 0)
		log_to_stderr();
	log_also_stderr(1);
	log_set_up = true;
	echo = echo_actions;
}

void pq_log_action(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (log_set_up && !echo)
		log_also_stderr(0);
	log_vmsg(LOG_LVL_INFO, fmt, ap);
	if (log_set_up && !echo)
		log_also_stderr(1);
	va_end(ap);
}
