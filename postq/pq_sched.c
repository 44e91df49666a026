/* libpostq: postq -S (the scheduler seen from qmgr's control channel)
 * and postq -D (the destination status cache).  The JSON forms carry the
 * control protocol's attribute names (doc/protocol-qmgr-control.md). */
#include <string.h>
#include "pq.h"
#include "queue_list.h"

static long long L(const attr_msg_t *m, const char *name)
{
	int64_t v;
	int32_t i;

	if (attr_get_long(m, name, &v))
		return (long long)v;
	if (attr_get_int(m, name, &i))
		return i;
	return 0;
}

static const char *S(const attr_msg_t *m, const char *name)
{
	const char *v;

	return attr_get_str(m, name, &v) ? v : "";
}

static void safe(str_t *out, const char *s)
{
	str_quote_printable(out, s, strlen(s));
}

static size_t count(const attr_msg_t *m, const char *name)
{
	const attr_list_t *l;

	return attr_get_list(m, name, &l) ? attr_list_count(l) : 0;
}

static const attr_msg_t *group(const attr_msg_t *m, const char *name,
    size_t i)
{
	const attr_list_t *l;

	(void)attr_get_list(m, name, &l);
	return attr_list_group(l, i);
}

static void dsc_lines(str_t *out, const attr_msg_t *m, const char *prefix)
{
	for (size_t i = 0; i < count(m, "dsc"); i++) {
		str_cat(out, prefix);
		str_cat(out, S(group(m, "dsc", i), "line"));
		str_putc(out, '\n');
	}
}

void pq_sched_text(str_t *out, const attr_msg_t *m, bool verbose)
{
	char tbuf[64];
	time_t now = (time_t)L(m, "time");
	size_t n;

	str_catf(out, "qmgr at %s: %lld message%s in the active queue, %lld "
	    "recipient%s in memory (peak %lld), %lld administrator request%s "
	    "waiting\n", queue_list_time_text(now, tbuf), L(m, "messages"),
	    L(m, "messages") == 1 ? "" : "s", L(m, "rcpt_in_core"),
	    L(m, "rcpt_in_core") == 1 ? "" : "s", L(m, "rcpt_peak"),
	    L(m, "pending_actions"), L(m, "pending_actions") == 1 ? "" : "s");

	str_catf(out, "\nTransports:\n  %-16s %11s %6s %7s %8s %10s %9s\n",
	    "NAME", "BUSY/LIMIT", "JOBS", "QUEUES", "RCPTS", "SELECTED",
	    "PREEMPTED");
	for (size_t i = 0; i < count(m, "transport"); i++) {
		const attr_msg_t *t = group(m, "transport", i);
		char bl[48];
		(void)bfmt(bl, sizeof(bl), "%lld/%lld", L(t, "busy"),
		    L(t, "process_limit"));
		str_cat(out, "  ");
		str_catf(out, "%-16s %11s %6lld %7lld %8lld %10lld %9lld\n",
		    S(t, "name"), bl, L(t, "jobs"), L(t, "queues"),
		    L(t, "rcpt_in_core"), L(t, "selected"), L(t, "preemptions"));
		if (!verbose)
			continue;
		for (size_t k = 0; k < count(t, "job"); k++) {
			const attr_msg_t *j = group(t, "job", k);
			str_catf(out, "    job %s%s level=%lld todo=%lld "
			    "selected=%lld unread=%lld slots=%lld%s",
			    S(j, "id"), L(j, "current") ? " (current)" : "",
			    L(j, "stack_level"), L(j, "todo_entries"),
			    L(j, "selected_entries"), L(j, "unread"),
			    L(j, "slots_available"), L(j, "blocker") ? " blocker" : "");
			if (*S(j, "parent"))
				str_catf(out, " preempts %s", S(j, "parent"));
			str_putc(out, '\n');
		}
		if (L(t, "jobs_omitted") > 0)
			str_catf(out, "    (%lld more jobs)\n", L(t, "jobs_omitted"));
	}

	n = count(m, "queue");
	str_catf(out, "\nDestination queues (%zu%s):\n", n,
	    L(m, "queues_omitted") ? ", more left out" : "");
	if (n > 0)
		str_catf(out, "  %-32s %6s %4s %5s %8s %8s %7s  %s\n",
		    "TRANSPORT:NEXTHOP", "WINDOW", "BUSY", "TODO", "SUCCESS",
		    "FAILURE", "COHORTS", "STATE");
	for (size_t i = 0; i < n; i++) {
		const attr_msg_t *q = group(m, "queue", i);
		str_t name = STR_INIT;
		str_catf(&name, "%s:%s", S(q, "transport"), S(q, "nexthop"));
		str_cat(out, "  ");
		str_catf(out, "%-32s %6lld %4lld %5lld %8s %8s %7s  ",
		    str_cstr(&name), L(q, "window"), L(q, "busy"), L(q, "todo"),
		    S(q, "success"), S(q, "failure"), S(q, "fail_cohorts"));
		if (L(q, "held"))
			str_cat(out, "suspended by administrator");
		else if (L(q, "suspended"))
			str_catf(out, "dead until %s",
			    queue_list_time_text((time_t)L(q, "retry_at"),
			    tbuf));
		else if (L(q, "probing"))
			str_cat(out, "probing");
		else if (L(q, "dead"))
			str_cat(out, "dead, awaiting probe");
		else
			str_cat(out, "ok");
		if (*S(q, "reason") && !L(q, "held")) {
			str_cat(out, " (");
			safe(out, S(q, "reason"));
			str_putc(out, ')');
		}
		str_putc(out, '\n');
		if (*S(q, "limits")) {
			str_cat(out, "    limits: ");
			safe(out, S(q, "limits"));
			if (*S(q, "message_tokens"))
				str_catf(out, "; message tokens %s of %lld",
				    S(q, "message_tokens"), L(q, "message_burst"));
			if (*S(q, "connection_tokens"))
				str_catf(out, "; connection tokens %s of %lld",
				    S(q, "connection_tokens"),
				    L(q, "connection_burst"));
			if (strcmp(S(q, "next_token_in"), "0.000") != 0
			    && *S(q, "next_token_in"))
				str_catf(out, "; next token in %ss",
				    S(q, "next_token_in"));
			str_catf(out, "; held back %lld times\n",
			    L(q, "rate_held"));
		}
		str_release(&name);
	}

	n = count(m, "held");
	str_catf(out, "\nSuspended by administrator (%zu):\n", n);
	for (size_t i = 0; i < n; i++) {
		const attr_msg_t *h = group(m, "held", i);
		str_cat(out, "  ");
		safe(out, S(h, "nexthop"));
		str_catf(out, " since %s (",
		    queue_list_time_text((time_t)L(h, "since"), tbuf));
		safe(out, S(h, "reason"));
		str_cat(out, ")\n");
	}

	str_catf(out, "\nDead destinations (status cache: %lld of %lld):\n",
	    L(m, "dsc_count"), L(m, "dsc_limit"));
	dsc_lines(out, m, "  ");
	if (L(m, "dsc_omitted") > 0)
		str_catf(out, "  (%lld more: postq -D)\n", L(m, "dsc_omitted"));
}

void pq_sched_json(str_t *out, const attr_msg_t *m)
{
	pq_json_attr(out, m);
	str_putc(out, '\n');
}

void pq_dsc_text(str_t *out, const attr_msg_t *m)
{
	if (count(m, "dsc") == 0) {
		str_cat(out, "Destination status cache is empty\n");
		return;
	}
	dsc_lines(out, m, "");
	if (L(m, "dsc_omitted") > 0)
		str_catf(out, "(%lld more not shown)\n", L(m, "dsc_omitted"));
}

void pq_dsc_json(str_t *out, const attr_msg_t *m)
{
	for (size_t i = 0; i < count(m, "dsc"); i++) {
		pq_json_attr(out, group(m, "dsc", i));
		str_putc(out, '\n');
	}
}
