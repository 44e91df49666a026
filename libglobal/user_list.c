#include <ctype.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "dict.h"
#include "maps.h"
#include "mem.h"
#include "pconfig.h"
#include "user_list.h"

/* Does one item name user?  1 yes, 0 no, -1 table error. */
static int item_matches(const char *param, const char *item,
    const char *user, str_t *why)
{
	if (strchr(item, ':') == NULL)
		return *user && strcasecmp(item, user) == 0;

	str_t err = STR_INIT;
	dict_t *d = dict_open(item, 0, &err);
	if (d == NULL) {
		str_setf(why, "%s: %s", param, str_cstr(&err));
		str_release(&err);
		return -1;
	}
	str_release(&err);
	int match;
	switch (dict_get(d, user, NULL)) {
	case DICT_STAT_FOUND:
		match = 1;
		break;
	case DICT_STAT_NOTFOUND:
		match = 0;
		break;
	default:
		str_setf(why, "%s: %s: %s", param, item, dict_errmsg(d));
		match = -1;
		break;
	}
	dict_close(d);
	return match;
}

int user_list_match(const char *param, const char *user, str_t *why)
{
	char *copy = xstrdup(pconfig_get_str(param)), *p = copy, *item;
	int result = 0;

	/* "inline:{ a=x, b=y }" is one item (maps.h). */
	while ((item = maps_token_cut(&p)) != NULL) {
		bool neg = false;
		while (*item == '!') {
			neg = !neg;
			item++;
		}
		int match = item_matches(param, item, user, why);
		if (match < 0) {
			result = -1;
			break;
		}
		if (match) {
			result = neg ? 0 : 1;
			break;
		}
	}
	free(copy);
	return result;
}

int user_list_uid_match(const char *param, uid_t uid, const char *unknown,
    const char **user, str_t *why)
{
	struct passwd *pw = getpwuid(uid);

	*user = pw ? pw->pw_name : unknown;
	return user_list_match(param, *user, why);
}

/* Root may always look; everyone else as the list parameter says. */
int user_list_uid_allowed(const char *param, uid_t uid, str_t *why)
{
	const char *user;
	int result;

	if (uid == 0)
		return 1;
	result = user_list_uid_match(param, uid, "", &user, why);
	if (result == 0)
		str_setf(why, "user %s (uid %ld) is not allowed by %s", *user ? user
		    : "?", (long)uid, param);
	return result;
}
