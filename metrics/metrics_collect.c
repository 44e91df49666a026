/* What the metrics service exports: qmgr's status reply
 * (doc/protocol-qmgr-control.md) and the queue counts, turned into metric
 * families through tables of (reply field, metric name, help, type).  A
 * new field of qmgr's reply is exported by one line in a table.
 * doc/metrics.md lists every metric. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "metrics.h"
#include "queue_walk.h"
#include "qmgr_clnt.h"

const char *const metrics_queues[METRICS_NQUEUES + 1] = {
	QUEUE_MAILDROP, QUEUE_INCOMING, QUEUE_ACTIVE, QUEUE_DEFERRED,
	QUEUE_HOLD, QUEUE_CORRUPT, NULL,
};

typedef struct field {
	const char *field;	/* in the reply (I, L, or S holding a number) */
	const char *name;	/* the metric */
	const char *help;
	expo_type_t type;
} field_t;

/* The reply itself. */
static const field_t qmgr_fields[] = {
	{ "new_messages", "petrel_qmgr_messages_received_total",
	  "Messages that entered the scheduler on their first pass, since qmgr started.",
	  EXPO_COUNTER },
	{ "rcpt_sent", "petrel_qmgr_recipients_delivered_total",
	  "Recipients delivered, since qmgr started.", EXPO_COUNTER },
	{ "rcpt_deferred", "petrel_qmgr_recipients_deferred_total",
	  "Recipient deferrals (each pass counts), since qmgr started.",
	  EXPO_COUNTER },
	{ "rcpt_bounced", "petrel_qmgr_recipients_bounced_total",
	  "Recipients returned to the sender, since qmgr started.",
	  EXPO_COUNTER },
	{ "messages", "petrel_qmgr_active_messages",
	  "Messages in the scheduler (the active queue).", EXPO_GAUGE },
	{ "rcpt_in_core", "petrel_qmgr_recipients_in_memory",
	  "Recipients qmgr holds in memory.", EXPO_GAUGE },
	{ "dsc_count", "petrel_qmgr_dsc_entries",
	  "Entries in the destination status cache (dead destinations).",
	  EXPO_GAUGE },
	{ "dsc_limit", "petrel_qmgr_dsc_limit",
	  "Size limit of the destination status cache.", EXPO_GAUGE },
	{ "dsc_omitted", "petrel_qmgr_dsc_entries_omitted",
	  "Status cache entries left out of this scrape (more than 1000).",
	  EXPO_GAUGE },
	{ "queues_omitted", "petrel_qmgr_destinations_omitted",
	  "Destination queues left out of this scrape (more than 5000).",
	  EXPO_GAUGE },
};

/* One group per transport, label "transport" from "name". */
static const field_t transport_fields[] = {
	{ "busy", "petrel_transport_busy", "Deliveries in flight.", EXPO_GAUGE },
	{ "process_limit", "petrel_transport_process_limit",
	  "Most deliveries at a time (the delivery agent's process limit).",
	  EXPO_GAUGE },
	{ "jobs", "petrel_transport_jobs",
	  "Jobs (messages) on the transport's scheduler job list.", EXPO_GAUGE },
	{ "queues", "petrel_transport_destinations",
	  "Destination queues of the transport.", EXPO_GAUGE },
	{ "rcpt_in_core", "petrel_transport_recipients_in_memory",
	  "Recipients in memory for the transport.", EXPO_GAUGE },
	{ "rcpt_limit", "petrel_transport_recipient_limit",
	  "The transport's in-memory recipient limit.", EXPO_GAUGE },
};

/* One group per destination queue, labels "transport" and "nexthop". */
static const field_t destination_fields[] = {
	{ "window", "petrel_destination_window",
	  "Concurrency window (0 while dead).", EXPO_GAUGE },
	{ "busy", "petrel_destination_busy", "Deliveries in flight.",
	  EXPO_GAUGE },
	{ "todo", "petrel_destination_pending", "Deliveries waiting.",
	  EXPO_GAUGE },
	{ "dead", "petrel_destination_dead",
	  "1 when declared dead (waiting for a probe).", EXPO_GAUGE },
	{ "suspended", "petrel_destination_suspended",
	  "1 when in the status cache: new mail is deferred at once.",
	  EXPO_GAUGE },
	{ "deliveries", "petrel_destination_deliveries_total",
	  "Deliveries started since the destination queue was made.",
	  EXPO_COUNTER },
	{ "deferrals", "petrel_destination_deferrals_total",
	  "Recipients deferred since the destination queue was made.",
	  EXPO_COUNTER },
	{ "conn_failures", "petrel_destination_connection_failures_total",
	  "Deliveries that failed while connecting or in the handshake, since "
	  "the destination queue was made.", EXPO_COUNTER },
	/* Rate limits (doc/scheduler.md section 8a): only for a limited
	 * destination. */
	{ "message_rate", "petrel_destination_message_rate",
	  "Message rate limit, per second.", EXPO_GAUGE },
	{ "message_burst", "petrel_destination_message_burst",
	  "Message bucket size (burst).", EXPO_GAUGE },
	{ "message_tokens", "petrel_destination_message_tokens",
	  "Tokens left in the destination's message rate bucket.", EXPO_GAUGE },
	{ "connection_rate", "petrel_destination_connection_rate",
	  "Connection rate limit, per second.", EXPO_GAUGE },
	{ "connection_burst", "petrel_destination_connection_burst",
	  "Connection bucket size (burst).", EXPO_GAUGE },
	{ "connection_tokens", "petrel_destination_connection_tokens",
	  "Tokens left in the destination's connection rate bucket.",
	  EXPO_GAUGE },
	{ "messages_per_connection",
	  "petrel_destination_messages_per_connection",
	  "Deliveries after which a session is not reused.", EXPO_GAUGE },
	{ "next_token_in", "petrel_destination_next_token_seconds",
	  "Seconds until the destination's buckets allow the next delivery.",
	  EXPO_GAUGE },
};

/* One group per entry of the destination status cache: the dead
 * destinations, also those with no mail in the active queue (whose
 * destination queue is gone); labels "transport", "nexthop" and "extra"
 * (the MX set, when the entry has one). */
static const field_t dsc_fields[] = {
	{ "failures", "petrel_dsc_failures",
	  "Consecutive failures of a destination in the status cache.",
	  EXPO_GAUGE },
	{ "died_at", "petrel_dsc_died_timestamp_seconds",
	  "When the destination was declared dead (seconds since the epoch).",
	  EXPO_GAUGE },
	{ "retry_at", "petrel_dsc_retry_timestamp_seconds",
	  "When the destination's next probe is due (seconds since the epoch).",
	  EXPO_GAUGE },
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* A number from an I or L attribute, or an S holding a decimal number
 * (the feedback accumulators, "0.500"). */
static bool number(const attr_msg_t *m, const char *name, double *v)
{
	int32_t i;
	int64_t l;
	const char *s;
	char *end;

	if (attr_get_int(m, name, &i)) {
		*v = i;
		return true;
	}
	if (attr_get_long(m, name, &l)) {
		*v = (double)l;
		return true;
	}
	if (attr_get_str(m, name, &s) && *s) {
		errno = 0;
		*v = strtod(s, &end);
		return *end == 0 && errno == 0;
	}
	return false;
}

/* One family per field over the groups of list: labels from the string
 * attributes label_attrs (a group without one is skipped, but for the
 * last nopt, which are "" when absent). */
#define MAX_LABELS 3
static void render_groups(str_t *out, const attr_msg_t *m, const char *list,
    const char *const *label_names, const char *const *label_attrs,
    size_t nlabels, size_t nopt, const field_t *fields, size_t nfields)
{
	const attr_list_t *l;
	const char *labels[2 * MAX_LABELS + 1];

	if (!attr_get_list(m, list, &l))
		return;
	for (size_t f = 0; f < nfields; f++) {
		expo_family(out, fields[f].name, fields[f].help, fields[f].type);
		for (size_t i = 0; i < attr_list_count(l); i++) {
			const attr_msg_t *g = attr_list_group(l, i);
			double v;
			size_t k;
			for (k = 0; k < nlabels; k++) {
				labels[2 * k] = label_names[k];
				if (attr_get_str(g, label_attrs[k], &labels[2 * k + 1]))
					continue;
				if (k < nlabels - nopt)
					break;
				labels[2 * k + 1] = "";
			}
			labels[2 * k] = NULL;
			if (k == nlabels && number(g, fields[f].field, &v))
				expo_sample(out, fields[f].name, labels, v);
		}
	}
}

static void render_qmgr(str_t *out, const attr_msg_t *m)
{
	static const char *const tnames[] = { "transport" };
	static const char *const tattrs[] = { "name" };
	static const char *const dnames[] = { "transport", "nexthop" };
	static const char *const dattrs[] = { "transport", "nexthop" };
	static const char *const cnames[] = { "transport", "nexthop", "extra" };
	const attr_list_t *held;

	for (size_t f = 0; f < NELEM(qmgr_fields); f++) {
		double v;
		if (!number(m, qmgr_fields[f].field, &v))
			continue;
		expo_family(out, qmgr_fields[f].name, qmgr_fields[f].help,
		    qmgr_fields[f].type);
		expo_sample(out, qmgr_fields[f].name, NULL, v);
	}
	if (attr_get_list(m, "held", &held)) {
		expo_family(out, "petrel_qmgr_destinations_suspended",
		    "Destinations suspended by the administrator (postsuper -P).",
		    EXPO_GAUGE);
		expo_sample(out, "petrel_qmgr_destinations_suspended", NULL,
		    (double)attr_list_count(held));
	}
	render_groups(out, m, "transport", tnames, tattrs, 1, 0,
	    transport_fields, NELEM(transport_fields));
	render_groups(out, m, "queue", dnames, dattrs, 2, 0, destination_fields,
	    NELEM(destination_fields));
	render_groups(out, m, "dsc", cnames, cnames, 3, 1, dsc_fields,
	    NELEM(dsc_fields));
}

void metrics_render(str_t *out, const metrics_input_t *in)
{
	bool up = in->status != NULL &&
	    qmgr_clnt_reply_status(in->status) == QMGR_CLNT_OK;
	bool scan_error = false;

	expo_family(out, "petrel_qmgr_up",
	    "1 when qmgr answered this scrape, 0 when it could not be reached.",
	    EXPO_GAUGE);
	expo_sample(out, "petrel_qmgr_up", NULL, up ? 1 : 0);
	if (up)
		render_qmgr(out, in->status);

	expo_family(out, "petrel_queue_messages",
	    "Messages in each queue (in corrupt: every file).", EXPO_GAUGE);
	for (size_t i = 0; i < METRICS_NQUEUES; i++) {
		const char *labels[] = { "queue", metrics_queues[i], NULL };
		if (in->queue[i] < 0)
			scan_error = true;
		else
			expo_sample(out, "petrel_queue_messages", labels,
			    (double)in->queue[i]);
	}
	expo_family(out, "petrel_queue_scan_error",
	    "1 when a queue directory could not be read this scrape.",
	    EXPO_GAUGE);
	expo_sample(out, "petrel_queue_scan_error", NULL, scan_error ? 1 : 0);
	expo_family(out, "petrel_scrape_duration_seconds",
	    "Time this scrape took.", EXPO_GAUGE);
	expo_sample(out, "petrel_scrape_duration_seconds", NULL, in->duration);
}

/* ---- Counting a queue ---- */

struct count {
	bool every_file;
	long n;
};

static int count_one(const queue_walk_ent_t *d, void *ctx)
{
	struct count *c = ctx;

	if (d->kind == QUEUE_WALK_MSG
	    || (c->every_file && d->kind == QUEUE_WALK_STRAY_FILE))
		c->n++;
	return 0;
}

int metrics_count_queue(const queue_layout_t *ql, const char *queue, long *n,
    str_t *err)
{
	struct count c = { strcmp(queue, QUEUE_CORRUPT) == 0, 0 };

	if (queue_walk_each(ql, queue, count_one, &c, err) < 0)
		return -1;
	*n = c.n;
	return 0;
}
