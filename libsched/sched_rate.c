/* Rate limits of destination queues: the value syntax shared by main.cf,
 * rate tables and qmgr-sim (doc/scheduling-rules.md §9.1). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "sched_int.h"
#include "mem.h"

void sched_limits_init(sched_limits_t *l)
{
	memset(l, 0, sizeof(*l));
	l->msg_burst = 1;
	l->conn_burst = 1;
}

bool sched_limits_any(const sched_limits_t *l)
{
	return l->msg_rate > 0 || l->conn_rate > 0 || l->msgs_per_conn > 0;
}

bool sched_limits_parse(const char *text, const sched_limits_t *base,
    sched_limits_t *out, str_t *err)
{
	char *copy = xstrdup(text ? text : ""), *cp = copy, *w;
	str_t why = STR_INIT;
	int words = 0;
	bool ok = true;
	long n;

	*out = *base;
	while (ok && (w = str_token(&cp, " \t,")) != NULL) {
		char *v = strchr(w, '=');
		words++;
		if (v == NULL || v == w || v[1] == 0) {
			str_setf(&why, "\"%s\": expected name=value", w);
			ok = false;
			break;
		}
		*v++ = 0;
		if (strcmp(w, "messages") == 0) {
			ok = tb_rate_parse(v, &out->msg_rate, &why);
		} else if (strcmp(w, "connections") == 0) {
			ok = tb_rate_parse(v, &out->conn_rate, &why);
		} else if (strcmp(w, "burst") == 0
		    || strcmp(w, "connection_burst") == 0) {
			if ((ok = sched_parse_long(v, 1, INT_MAX, &n)))
				*(w[0] == 'b' ? &out->msg_burst : &out->conn_burst)
				    = (double)n;
			else
				str_setf(&why, "bad %s \"%s\": expected an integer "
				    ">= 1", w, v);
		} else if (strcmp(w, "messages_per_connection") == 0) {
			if ((ok = sched_parse_long(v, 0, INT_MAX, &n)))
				out->msgs_per_conn = n;
			else
				str_setf(&why, "bad %s \"%s\": expected an integer "
				    ">= 0", w, v);
		} else {
			str_setf(&why, "unknown limit \"%s\" (messages, burst, "
			    "connections, connection_burst, "
			    "messages_per_connection)", w);
			ok = false;
		}
	}
	if (ok && words == 0) {
		str_set(&why, "empty value: expected limits such as "
		    "\"messages=500/h burst=20\"");
		ok = false;
	}
	if (!ok && err)
		str_set(err, str_cstr(&why));
	str_release(&why);
	free(copy);
	return ok;
}

const char *sched_limits_format(const sched_limits_t *l, str_t *out)
{
	str_t r = STR_INIT;

	str_reset(out);
	if (l->msg_rate > 0)
		str_catf(out, " messages=%s burst=%.0f",
		    tb_rate_format(l->msg_rate, &r), l->msg_burst);
	if (l->conn_rate > 0)
		str_catf(out, " connections=%s connection_burst=%.0f",
		    tb_rate_format(l->conn_rate, &r), l->conn_burst);
	if (l->msgs_per_conn > 0)
		str_catf(out, " messages_per_connection=%ld", l->msgs_per_conn);
	str_release(&r);
	if (str_len(out) == 0)
		str_set(out, "none");
	else {
		/* Drop the leading blank. */
		char *t = xstrdup(str_cstr(out) + 1);
		str_set(out, t);
		free(t);
	}
	return str_cstr(out);
}
