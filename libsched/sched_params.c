/* Scheduler parameters: defaults, setting by main.cf name, checks
 * (doc/scheduling-rules.md §1.2; the defaults are quoted with each rule). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sched.h"
#include "str.h"

void sched_tparams_init(sched_tparams_t *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->process_limit = 100;
	p->delivery_slot_cost = 5;
	p->delivery_slot_loan = 3;
	p->delivery_slot_discount = 50;
	p->minimum_delivery_slots = 3;
	p->destination_recipient_limit = 50;
	p->recipient_limit = 20000;
	p->extra_recipient_limit = 1000;
	p->recipient_refill_limit = 100;
	p->recipient_refill_delay = 5;
	feedback_settings_init(&p->conc);
	sched_limits_init(&p->limits);
	if (name && strcmp(name, "local") == 0) {
		p->destination_recipient_limit = 1;
		p->conc.concurrency_limit = 2;
	}
}

int sched_grouping_parse(const char *value)
{
	if (value && strcasecmp(value, "domain") == 0)
		return SCHED_GROUP_DOMAIN;
	if (value && strcasecmp(value, "mx") == 0)
		return SCHED_GROUP_MX;
	return -1;
}

const char *sched_grouping_str(int g)
{
	return g == SCHED_GROUP_MX ? "mx" : "domain";
}

bool sched_parse_time(const char *text, double *out)
{
	char *end;
	double v, mult = 1;

	if (text == NULL)
		return false;
	while (isspace((unsigned char)*text))
		text++;
	if (*text == 0 || *text == '-' || *text == '+')
		return false;
	errno = 0;
	v = strtod(text, &end);
	if (end == text || errno || !isfinite(v) || v < 0)
		return false;
	if (strcmp(end, "ms") == 0)
		mult = 0.001;
	else if (*end && end[1] == 0) {
		long unit = str_time_unit(*end);
		if (unit == 0)
			return false;
		mult = (double)unit;
	} else if (*end)
		return false;
	*out = v * mult;
	return true;
}

bool sched_parse_long(const char *value, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (value == NULL || *value == 0)
		return false;
	errno = 0;
	v = strtol(value, &end, 10);
	if (*end || errno || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool parse_bool(const char *value, bool *out)
{
	if (strcasecmp(value, "yes") == 0 || strcasecmp(value, "true") == 0
	    || strcmp(value, "1") == 0)
		*out = true;
	else if (strcasecmp(value, "no") == 0 || strcasecmp(value, "false") == 0
	    || strcmp(value, "0") == 0)
		*out = false;
	else
		return false;
	return true;
}

static bool bad(str_t *err, const char *name, const char *value,
    const char *what)
{
	if (err)
		str_setf(err, "bad %s value \"%s\": expected %s", name, value, what);
	return false;
}

bool sched_tparams_set(sched_tparams_t *p, const char *name,
    const char *value, str_t *err)
{
	long l;
	double d;

	if (strncmp(name, "default_", 8) == 0)
		name += 8;
#define INTPARAM(pname, field, lo, hi) \
	if (strcmp(name, pname) == 0) { \
		if (!sched_parse_long(value, lo, hi, &l)) \
			return bad(err, name, value, "an integer in [" #lo ", " #hi "]"); \
		field = l; \
		return true; \
	}
	INTPARAM("process_limit", p->process_limit, 1, 1000000);
	INTPARAM("delivery_slot_cost", p->delivery_slot_cost, 0, 1000000);
	INTPARAM("delivery_slot_loan", p->delivery_slot_loan, 0, 1000000);
	INTPARAM("delivery_slot_discount", p->delivery_slot_discount, 0, 100);
	INTPARAM("minimum_delivery_slots", p->minimum_delivery_slots, 0, 1000000);
	INTPARAM("destination_recipient_limit", p->destination_recipient_limit, 1, 1000000);
	INTPARAM("recipient_limit", p->recipient_limit, 1, 100000000);
	INTPARAM("extra_recipient_limit", p->extra_recipient_limit, 0, 100000000);
	INTPARAM("recipient_refill_limit", p->recipient_refill_limit, 1, 100000000);
	INTPARAM("destination_concurrency_limit", p->conc.concurrency_limit, 0, 1000000);
	INTPARAM("initial_destination_concurrency", p->conc.initial_concurrency, 1, 1000000);
#undef INTPARAM
	if (strcmp(name, "recipient_refill_delay") == 0) {
		if (!sched_parse_time(value, &d))
			return bad(err, name, value, "a time (e.g. 5s)");
		p->recipient_refill_delay = d;
		return true;
	}
	if (strcmp(name, "destination_grouping") == 0) {
		int g = sched_grouping_parse(value);
		if (g < 0)
			return bad(err, name, value, "domain or mx");
		p->destination_grouping = g;
		return true;
	}
	if (strcmp(name, "destination_rate_delay") == 0) {
		if (!sched_parse_time(value, &d))
			return bad(err, name, value, "a time (e.g. 1s)");
		p->conc.rate_delay = d;
		return true;
	}
	if (strcmp(name, "destination_concurrency_failed_cohort_limit") == 0) {
		char *end;
		errno = 0;
		d = strtod(value, &end);
		if (*value == 0 || *end || errno || !isfinite(d) || d < 0)
			return bad(err, name, value, "a number >= 0");
		p->conc.failed_cohort_limit = d;
		return true;
	}
	if (strcmp(name, "destination_concurrency_positive_feedback") == 0)
		return feedback_func_parse(value, name, &p->conc.positive, err);
	if (strcmp(name, "destination_concurrency_negative_feedback") == 0)
		return feedback_func_parse(value, name, &p->conc.negative, err);
	if (strcmp(name, "destination_message_rate") == 0)
		return tb_rate_parse(value, &p->limits.msg_rate, err);
	if (strcmp(name, "destination_connection_rate") == 0)
		return tb_rate_parse(value, &p->limits.conn_rate, err);
	if (strcmp(name, "destination_message_burst") == 0
	    || strcmp(name, "destination_connection_burst") == 0) {
		if (!sched_parse_long(value, 1, 1000000000L, &l))
			return bad(err, name, value, "an integer >= 1");
		*(name[12] == 'm' ? &p->limits.msg_burst : &p->limits.conn_burst)
		    = (double)l;
		return true;
	}
	if (strcmp(name, "destination_messages_per_connection") == 0) {
		if (!sched_parse_long(value, 0, 1000000000L, &l))
			return bad(err, name, value, "an integer >= 0");
		p->limits.msgs_per_conn = l;
		return true;
	}
	if (strcmp(name, "destination_concurrency_feedback_mode") == 0)
		return feedback_mode_parse(value, name, &p->conc.mode, err);
	if (strcmp(name, "destination_concurrency_feedback_debug") == 0) {
		if (!parse_bool(value, &p->conc.debug))
			return bad(err, name, value, "yes or no");
		return true;
	}
	if (err)
		str_setf(err, "unknown transport parameter \"%s\"", name);
	return false;
}

bool sched_tparams_check(const sched_tparams_t *p, str_t *err)
{
	if (p->process_limit < 1) {
		if (err)
			str_setf(err, "process_limit must be at least 1");
		return false;
	}
	if (p->destination_recipient_limit < 1) {
		if (err)
			str_setf(err, "destination_recipient_limit must be at least 1");
		return false;
	}
	if (p->delivery_slot_discount < 0 || p->delivery_slot_discount > 100) {
		if (err)
			str_setf(err, "delivery_slot_discount must be in [0, 100]");
		return false;
	}
	if (p->delivery_slot_cost < 0 || p->delivery_slot_loan < 0
	    || p->minimum_delivery_slots < 0) {
		if (err)
			str_setf(err, "delivery slot parameters must not be negative");
		return false;
	}
	if (p->recipient_limit < 1 || p->extra_recipient_limit < 0
	    || p->recipient_refill_limit < 1 || p->recipient_refill_delay < 0) {
		if (err)
			str_setf(err, "recipient limits must be positive");
		return false;
	}
	if (p->limits.msg_rate < 0 || p->limits.conn_rate < 0
	    || p->limits.msg_burst < 1 || p->limits.conn_burst < 1
	    || p->limits.msgs_per_conn < 0) {
		if (err)
			str_setf(err, "rates must be >= 0 and bursts >= 1");
		return false;
	}
	return feedback_settings_check(&p->conc, err);
}

void sched_params_init(sched_params_t *p)
{
	memset(p, 0, sizeof(*p));
	p->message_recipient_limit = 20000;
	p->message_recipient_minimum = 10;
	p->dsc_limit = DSC_DEF_LIMIT;
	backoff_params_init(&p->backoff);
}

bool sched_params_set(sched_params_t *p, const char *name,
    const char *value, str_t *err)
{
	long l;
	double d;

	if (strcmp(name, "qmgr_message_recipient_limit") == 0) {
		if (!sched_parse_long(value, 1, 1000000000L, &l))
			return bad(err, name, value, "a positive integer");
		p->message_recipient_limit = l;
		return true;
	}
	if (strcmp(name, "qmgr_message_recipient_minimum") == 0) {
		if (!sched_parse_long(value, 1, 1000000000L, &l))
			return bad(err, name, value, "a positive integer");
		p->message_recipient_minimum = l;
		return true;
	}
	if (strcmp(name, "destination_status_cache_limit") == 0) {
		if (!sched_parse_long(value, 0, 1000000000L, &l))
			return bad(err, name, value, "an integer >= 0");
		p->dsc_limit = (size_t)l;
		return true;
	}
	if (strcmp(name, "backoff_function") == 0)
		return backoff_parse_function(value, &p->backoff.function, err);
	if (strcmp(name, "backoff_retry_count") == 0) {
		if (!sched_parse_long(value, 1, 1000000, &l))
			return bad(err, name, value, "a positive integer");
		p->backoff.retry_count = (int)l;
		return true;
	}
	if (strcmp(name, "backoff_jitter") == 0) {
		char *end;
		errno = 0;
		d = strtod(value, &end);
		if (*value == 0 || *end || errno || !(d >= 0 && d <= 100))
			return bad(err, name, value, "a percentage in [0, 100]");
		p->backoff.jitter = d;
		return true;
	}
	{
		static const struct { const char *name; size_t off; } times[] = {
			{ "minimal_backoff_time", offsetof(backoff_params_t, min_time) },
			{ "maximal_backoff_time", offsetof(backoff_params_t, max_time) },
			{ "maximal_queue_lifetime", offsetof(backoff_params_t, queue_lifetime) },
			{ "bounce_queue_lifetime", offsetof(backoff_params_t, bounce_lifetime) },
		};
		for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
			if (strcmp(name, times[i].name) != 0)
				continue;
			if (!sched_parse_time(value, &d))
				return bad(err, name, value, "a time (e.g. 300s, 5d)");
			*(double *)((char *)&p->backoff + times[i].off) = d;
			return true;
		}
	}
	if (err)
		str_setf(err, "unknown parameter \"%s\"", name);
	return false;
}

bool sched_params_check(const sched_params_t *p, str_t *err)
{
	if (p->message_recipient_limit < 1 || p->message_recipient_minimum < 1) {
		if (err)
			str_setf(err, "qmgr_message_recipient_limit and "
			    "qmgr_message_recipient_minimum must be positive");
		return false;
	}
	return backoff_params_check(&p->backoff, err);
}
