#include <ctype.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "maps.h"
#include "mem.h"
#include "pconfig.h"
#include "user_list.h"

/* Does one item name user?  1 yes, 0 no, -1 table error.  A table item
 * is opened through the maps layer for this one check (m holds it), so
 * a rebuilt table is always read afresh. */
static int item_matches(maps_t *m, const char *param, const char *item,
    const char *user, str_t *why)
{
	if (strchr(item, ':') == NULL)
		return *user && strcasecmp(item, user) == 0;

	str_t err = STR_INIT;
	maps_add(m, item, strlen(item), &err);	/* not strict: never fails */
	str_release(&err);
	size_t i = maps_count(m) - 1;
	if (maps_broken(m, i) != NULL) {
		str_setf(why, "%s: %s", param, maps_broken(m, i));
		return -1;
	}
	str_t w = STR_INIT;
	int match = maps_get_entry(m, i, user, NULL, &w);
	if (match < 0)
		str_setf(why, "%s: %s", param, str_cstr(&w));
	str_release(&w);
	return match;
}

int user_list_match(const char *param, const char *user, str_t *why)
{
	char *copy = xstrdup(pconfig_get_str(param)), *p = copy, *item;
	int result = 0;
	maps_t *m = maps_open(param, NULL, 0, NULL, NULL);

	/* "inline:{ a=x, b=y }" is one item (maps.h). */
	while ((item = maps_token_cut(&p)) != NULL) {
		bool neg = false;
		while (*item == '!') {
			neg = !neg;
			item++;
		}
		int match = item_matches(m, param, item, user, why);
		if (match < 0) {
			result = -1;
			break;
		}
		if (match) {
			result = neg ? 0 : 1;
			break;
		}
	}
	maps_free(m);
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
