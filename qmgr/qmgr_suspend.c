/* qmgr's control channel: destinations suspended by the administrator
 * (postsuper -P/-U), saved in a state file so that they survive a qmgr
 * restart, and the clearing of destination status cache entries
 * (postsuper -x); see qmgr_control_int.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "file.h"
#include "log.h"
#include "mem.h"
#include "qmgr_control_int.h"

/* Nexthops and reasons given to suspend. */
#define QMGR_SUSPEND_MAX_NEXTHOP	255
#define QMGR_SUSPEND_MAX_REASON		200

static bool text_ok(const char *s, size_t max, bool spaces)
{
	size_t n = 0;

	for (; *s; s++, n++) {
		unsigned char ch = (unsigned char)*s;
		if (ch < 0x20 || ch == 0x7f || (!spaces && ch == ' '))
			return false;
	}
	return n <= max;
}

static void state_save(qmgr_control_t *c)
{
	htable_entry_t **v;
	size_t n;
	str_t data = STR_INIT, dir = STR_INIT;
	const char *slash;

	if (c->state_path == NULL)
		return;
	v = htable_list(c->reasons, &n);
	str_set(&data, "# Destinations suspended with postsuper -P (written by "
	    "qmgr): nexthop TAB reason\n");
	for (size_t i = 0; i < n; i++)
		str_catf(&data, "%s\t%s\n", v[i]->key, (char *)v[i]->value);
	free(v);
	if ((slash = strrchr(c->state_path, '/')) != NULL) {
		str_setf(&dir, "%.*s", (int)(slash - c->state_path), c->state_path);
		(void)file_mkdirs(str_cstr(&dir), 0700);
	}
	if (file_replace(c->state_path, str_cstr(&data), str_len(&data), 0600) < 0)
		log_warning("cannot save the suspended destinations in %s: %s; "
		    "they are forgotten when qmgr restarts", c->state_path,
		    strerror(errno));
	str_release(&data);
	str_release(&dir);
}

void qmgr_suspend_load(qmgr_control_t *c)
{
	str_t data = STR_INIT;
	char *p, *line;
	int n = 0;

	if (c->state_path == NULL)
		return;
	if (file_read_all(c->state_path, &data, 1 << 20) < 0) {
		if (errno != ENOENT)
			log_warning("cannot read the suspended destinations from "
			    "%s: %s", c->state_path, strerror(errno));
		str_release(&data);
		return;
	}
	p = str_cstr(&data) ? (char *)str_cstr(&data) : NULL;
	while (p != NULL && (line = strsep(&p, "\n")) != NULL) {
		char *tab = strchr(line, '\t');
		const char *reason = "";
		if (*line == 0 || *line == '#')
			continue;
		if (tab != NULL) {
			*tab = 0;
			reason = tab + 1;
		}
		if (!text_ok(line, QMGR_SUSPEND_MAX_NEXTHOP, false)
		    || *line == 0
		    || !text_ok(reason, QMGR_SUSPEND_MAX_REASON, true)) {
			log_warning("%s: bad line ignored", c->state_path);
			continue;
		}
		sched_dest_suspend(c->s, line, reason, qmgr_control_now(c));
		free(htable_put(c->reasons, line, xstrdup(reason)));
		n++;
	}
	if (n > 0)
		log_info("%d destination%s suspended by administrator (postsuper "
		    "-U to resume)", n, n == 1 ? "" : "s");
	str_release(&data);
}

void qmgr_suspend_dsc_clear(qmgr_control_t *c, const attr_msg_t *m,
    str_t *out)
{
	const char *nexthop = NULL;
	size_t n;

	(void)attr_get_str(m, "nexthop", &nexthop);
	if (nexthop != NULL && (*nexthop == 0
	    || !text_ok(nexthop, QMGR_SUSPEND_MAX_NEXTHOP, false))) {
		qmgr_control_reply_status(out, QMGR_CLNT_FAIL, "bad nexthop");
		attr_put_end(out);
		return;
	}
	n = sched_dsc_clear(c->s, nexthop, qmgr_control_now(c));
	if (nexthop)
		log_info("destination status cache: %zu entr%s for %s cleared by "
		    "administrator", n, n == 1 ? "y" : "ies", nexthop);
	else
		log_info("destination status cache: %zu entr%s cleared by "
		    "administrator", n, n == 1 ? "y" : "ies");
	qmgr_control_reply_status(out, n > 0 ? QMGR_CLNT_OK : QMGR_CLNT_NOTHING,
	    n > 0 ? NULL : "no such destination in the status cache");
	attr_put_long(out, "count", (int64_t)n);
	attr_put_end(out);
	qmgr_control_kick(c);
}

void qmgr_suspend_request(qmgr_control_t *c, const attr_msg_t *m, str_t *out,
    bool suspend)
{
	const char *nexthop = NULL, *reason = "";

	(void)attr_get_str(m, "reason", &reason);
	if (!attr_get_str(m, "nexthop", &nexthop) || *nexthop == 0
	    || !text_ok(nexthop, QMGR_SUSPEND_MAX_NEXTHOP, false)) {
		qmgr_control_reply_status(out, QMGR_CLNT_FAIL,
		    "missing or bad nexthop");
	} else if (!text_ok(reason, QMGR_SUSPEND_MAX_REASON, true)) {
		qmgr_control_reply_status(out, QMGR_CLNT_FAIL,
		    "bad reason text");
	} else if (suspend) {
		sched_dest_suspend(c->s, nexthop, reason, qmgr_control_now(c));
		free(htable_put(c->reasons, nexthop, xstrdup(reason)));
		state_save(c);
		log_info("%s: %s", nexthop, sched_dest_suspended(c->s, nexthop));
		qmgr_control_reply_status(out, QMGR_CLNT_OK, NULL);
		qmgr_control_kick(c);
	} else if (!sched_dest_resume(c->s, nexthop, qmgr_control_now(c))) {
		qmgr_control_reply_status(out, QMGR_CLNT_NOTHING,
		    "destination not suspended");
	} else {
		free(htable_delete(c->reasons, nexthop));
		state_save(c);
		log_info("%s: delivery resumed by administrator", nexthop);
		qmgr_control_reply_status(out, QMGR_CLNT_OK, NULL);
		qmgr_control_kick(c);
	}
	attr_put_end(out);
}
