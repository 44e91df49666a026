/* postq: qmgr's attribute replies as JSON. */
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "pq.h"

/* Integer attributes that are yes/no, and string attributes that carry
 * decimal fractions (the protocol has no floating-point type). */
static const char *const flag_names[] = { "dead", "suspended", "probing",
    "held", "blocker", "current", NULL };
static const char *const num_names[] = { "success", "failure",
    "fail_cohorts", "message_rate", "message_tokens", "connection_rate",
    "connection_tokens", "next_token_in", NULL };

static bool in(const char *const *v, const char *name)
{
	for (; *v; v++)
		if (strcmp(*v, name) == 0)
			return true;
	return false;
}

static bool numeric(const char *s)
{
	char *end;

	if (*s == 0)
		return false;
	(void)strtod(s, &end);
	return *end == 0 && strspn(s, "-0123456789.") == strlen(s);
}

void pq_json_attr(str_t *out, const attr_msg_t *m)
{
	str_putc(out, '{');
	for (size_t i = 0; i < attr_msg_count(m); i++) {
		const attr_t *a = attr_msg_at(m, i);
		if (i)
			str_putc(out, ',');
		json_str(out, a->name);
		str_putc(out, ':');
		switch (a->type) {
		case ATTR_TYPE_INT:
			if (in(flag_names, a->name))
				str_cat(out, a->u.i ? "true" : "false");
			else
				str_catf(out, "%d", (int)a->u.i);
			break;
		case ATTR_TYPE_LONG:
			str_catf(out, "%lld", (long long)a->u.l);
			break;
		case ATTR_TYPE_STR:
		case ATTR_TYPE_DATA:
			if (in(num_names, a->name) && numeric(a->u.b.p))
				str_cat(out, a->u.b.p);
			else
				json_str(out, a->u.b.p);
			break;
		case ATTR_TYPE_LIST: {
			const attr_list_t *l = a->u.list;
			str_putc(out, '[');
			for (size_t k = 0; k < attr_list_count(l); k++) {
				if (k)
					str_putc(out, ',');
				pq_json_attr(out, attr_list_group(l, k));
			}
			str_putc(out, ']');
			break;
		}
		default:
			str_cat(out, "null");
			break;
		}
	}
	str_putc(out, '}');
}
