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
#include "pq.h"

/* The next item of a list separated by commas or white space; a type:name
 * table spec may hold "{...}" with separators inside. */
static char *next_item(char **pp)
{
	char *p = *pp, *start;
	int depth = 0;

	while (*p && (*p == ',' || isspace((unsigned char)*p)))
		p++;
	if (*p == 0)
		return NULL;
	start = p;
	for (; *p; p++) {
		if (*p == '{')
			depth++;
		else if (*p == '}' && depth > 0)
			depth--;
		else if (depth == 0 && (*p == ',' || isspace((unsigned char)*p)))
			break;
	}
	if (*p)
		*p++ = 0;
	*pp = p;
	return start;
}

int pq_user_allowed(const char *param, uid_t uid, str_t *why)
{
	struct passwd *pw;
	const char *user;
	char *copy, *p, *item;
	int result = 0;

	if (uid == 0)
		return 1;
	pw = getpwuid(uid);
	user = pw ? pw->pw_name : "";
	copy = xstrdup(config_get_str(param));
	p = copy;
	while ((item = next_item(&p)) != NULL) {
		bool neg = false;
		int match = 0;
		while (*item == '!') {
			neg = !neg;
			item++;
		}
		if (strchr(item, ':') != NULL) {
			str_t err = STR_INIT;
			dict_t *d = dict_open(item, 0, &err);
			if (d == NULL) {
				str_setf(why, "%s: %s", param, str_cstr(&err));
				str_release(&err);
				result = -1;
				break;
			}
			str_release(&err);
			switch (dict_get(d, user, NULL)) {
			case DICT_STAT_FOUND:
				match = 1;
				break;
			case DICT_STAT_NOTFOUND:
				break;
			default:
				str_setf(why, "%s: %s: %s", param, item, dict_errmsg(d));
				match = -1;
				break;
			}
			dict_close(d);
			if (match < 0) {
				result = -1;
				break;
			}
		} else {
			match = *user && strcasecmp(item, user) == 0;
		}
		if (match) {
			result = neg ? 0 : 1;
			break;
		}
	}
	if (result == 0)
		str_setf(why, "user %s (uid %ld) is not allowed by %s", *user ? user
		    : "?", (long)uid, param);
	free(copy);
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
