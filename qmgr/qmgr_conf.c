/* qmgr: parameters, the scheduler core, transports from master.cf. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "dict.h"
#include "log.h"
#include "maps.h"
#include "mastercf.h"
#include "mem.h"
#include "pconfig.h"
#include "qmgr_int.h"
#include "server.h"

/* maxproc 0 means "no limit" to master; the core needs a number. */
#define QMGR_UNLIMITED_PROCS	1000
/* Descriptors kept for everything but queue files and agents. */
#define QMGR_FD_RESERVE		32

static double jitter_rand(void *ctx)
{
	(void)ctx;
	return (double)random() / ((double)RAND_MAX + 1.0);
}

static void sched_params_from_config(sched_params_t *p)
{
	str_t err = STR_INIT;

	sched_params_init(p);
	p->message_recipient_limit =
	    pconfig_get_int("qmgr_message_recipient_limit");
	p->message_recipient_minimum =
	    pconfig_get_int("qmgr_message_recipient_minimum");
	p->dsc_limit =
	    (size_t)pconfig_get_int("destination_status_cache_limit");
	if (!backoff_parse_function(pconfig_get_str("backoff_function"),
	    &p->backoff.function, &err))
		log_fatal("%s", str_cstr(&err));
	p->backoff.min_time = (double)pconfig_get_time("minimal_backoff_time");
	p->backoff.max_time = (double)pconfig_get_time("maximal_backoff_time");
	p->backoff.retry_count = (int)pconfig_get_int("backoff_retry_count");
	p->backoff.jitter = (double)pconfig_get_int("backoff_jitter");
	p->backoff.queue_lifetime =
	    (double)pconfig_get_time("maximal_queue_lifetime");
	p->backoff.bounce_lifetime =
	    (double)pconfig_get_time("bounce_queue_lifetime");
	if (p->backoff.jitter > 0) {
		srandom((unsigned)time(NULL) ^ (unsigned)getpid());
		p->backoff.rand = jitter_rand;
	}
	if (!sched_params_check(p, &err))
		log_fatal("%s", str_cstr(&err));
	str_release(&err);
}

/* Rate tables (TRANSPORT_destination_rate_maps), by transport name,
 * opened before the chroot (qmgr_conf_preload). */
static htable_t *rate_maps;

/* The one key of a destination in the rate tables: its queue's key,
 * the nexthop as address resolution gave it ("example.com",
 * "[192.0.2.1]:2525"), or, with TRANSPORT_destination_grouping = mx,
 * the MX group ("{mx1.example.net,mx2.example.net}"): the domains of a
 * group share one bucket, found under the group's key. */
const char *qmgr_rate_key(const char *transport, const char *nexthop)
{
	(void)transport;
	return nexthop;
}

/* Each entry of a table read from text, checked at start. */
typedef struct rate_check {
	const char *param, *table;
	const sched_limits_t *base;
	str_t *err;
} rate_check_t;

/* 0, or -1 with err "WHERE: PARAM: destination "KEY": reason". */
static int rate_value_check(rate_check_t *rc, const char *where,
    const char *key, const char *value, str_t *err)
{
	sched_limits_t l;
	str_t why = STR_INIT;
	int r = 0;

	if (!sched_limits_parse(value, rc->base, &l, &why)) {
		str_setf(err, "%s: %s: destination \"%s\": %s", where,
		    rc->param, key, str_cstr(&why));
		r = -1;
	}
	str_release(&why);
	return r;
}

static int rate_pair_check(const char *key, const char *value,
    const char *file, int lineno, void *ctx, str_t *err)
{
	str_t where = STR_INIT;
	int r;

	str_setf(&where, "%s:%d", file, lineno);
	r = rate_value_check(ctx, str_cstr(&where), key, value, err);
	str_release(&where);
	return r;
}

static int rate_walk_check(const char *key, const char *value, void *ctx)
{
	rate_check_t *rc = ctx;

	return rate_value_check(rc, rc->table, key, value, rc->err);
}

/* Tables read from text are checked whole now (file:line); hash: and
 * lmdb: entries are checked at lookup.  False with err set. */
static bool rate_maps_check(maps_t *m, str_t *err)
{
	sched_limits_t base;

	sched_limits_init(&base);
	for (size_t i = 0; i < maps_count(m); i++) {
		struct dict *d = maps_dict(m, i);
		rate_check_t rc = { maps_param(m), maps_spec(m, i), &base, err };
		const char *type, *v;

		if (d == NULL)
			continue;
		type = dict_type(d);
		if (strcmp(type, "texthash") == 0) {
			if (dict_text_parse(dict_name(d), rate_pair_check, &rc,
			    err) < 0)
				return false;
		} else if (strcmp(type, "inline") == 0) {
			if (dict_walk(d, rate_walk_check, &rc) != 0) {
				if (str_len(err) == 0)
					str_setf(err, "%s: %s: cannot be read",
					    maps_param(m), maps_spec(m, i));
				return false;
			}
		} else if (strcmp(type, "static") == 0
		    && (v = dict_lookup(d, "static")) != NULL) {
			if (rate_walk_check("(any)", v, &rc) != 0)
				return false;
		}
	}
	return true;
}

static void rate_maps_open(const mastercf_t *mcf)
{
	str_t err = STR_INIT, param = STR_INIT;

	rate_maps = htable_new(16, 0);
	for (size_t i = 0; i < mcf->count; i++) {
		const mastercf_entry_t *me = mcf->entries[i];
		const char *spec;
		maps_t *m;

		if (me->type != MCF_UNIX
		    || htable_get(rate_maps, me->service) != NULL)
			continue;
		spec = pconfig_get_str_tr(me->service, "destination_rate_maps");
		if (spec == NULL || *spec == 0)
			continue;
		str_setf(&param, "%s_destination_rate_maps", me->service);
		m = maps_open(str_cstr(&param), spec, MAPS_FLAG_STRICT, NULL,
		    &err);
		if (m == NULL)
			log_fatal("%s", str_cstr(&err));
		str_reset(&err);
		if (!rate_maps_check(m, &err))
			log_fatal("%s", str_cstr(&err));
		htable_add(rate_maps, me->service, m);
	}
	str_release(&err);
	str_release(&param);
}

/* driver.dest_limits: a new destination queue of a transport with a
 * rate table.  A table that fails or an entry that does not parse gets
 * a warning naming the table and the key, and the transport's limits. */
void qmgr_dest_limits(void *ctx, const char *transport, const char *nexthop,
    sched_limits_t *lim)
{
	maps_t *m = rate_maps ? htable_get(rate_maps, transport) : NULL;
	const char *key = qmgr_rate_key(transport, nexthop), *value;
	str_t why = STR_INIT;
	sched_limits_t l;
	int r;

	(void)ctx;
	if (m == NULL)
		return;
	r = maps_get(m, key, &value, &why);
	if (r < 0)
		log_warning("%s: lookup of \"%s\" failed: %s; using the "
		    "transport's limits", maps_param(m), key, str_cstr(&why));
	else if (r > 0 && !sched_limits_parse(value, lim, &l, &why))
		log_warning("%s: destination \"%s\": %s; using the "
		    "transport's limits", maps_param(m), key, str_cstr(&why));
	else if (r > 0)
		*lim = l;
	str_release(&why);
}

/* main.cf TRANSPORT_X / default_X values for one transport. */
static void tparams_from_config(sched_tparams_t *tp, const char *name,
    int maxproc)
{
	str_t err = STR_INIT;
	long drl;

	sched_tparams_init(tp, name);
	tp->process_limit = maxproc > 0 ? maxproc : QMGR_UNLIMITED_PROCS;
	tp->delivery_slot_cost =
	    (int)pconfig_get_int_tr(name, "delivery_slot_cost");
	tp->delivery_slot_loan =
	    (int)pconfig_get_int_tr(name, "delivery_slot_loan");
	tp->delivery_slot_discount =
	    (int)pconfig_get_int_tr(name, "delivery_slot_discount");
	tp->minimum_delivery_slots =
	    (int)pconfig_get_int_tr(name, "minimum_delivery_slots");
	/* 0 is "no limit"; one request carries at most DLV_MAX_RCPT. */
	drl = pconfig_get_int_tr(name, "destination_recipient_limit");
	tp->destination_recipient_limit = drl <= 0 || drl > DLV_MAX_RCPT ?
	    DLV_MAX_RCPT : (int)drl;
	tp->recipient_limit = pconfig_get_int_tr(name, "recipient_limit");
	tp->extra_recipient_limit =
	    pconfig_get_int_tr(name, "extra_recipient_limit");
	tp->recipient_refill_limit =
	    pconfig_get_int_tr(name, "recipient_refill_limit");
	tp->recipient_refill_delay =
	    (double)pconfig_get_time_tr(name, "recipient_refill_delay");
	tp->conc.initial_concurrency = (int)pconfig_get_int_tr(name,
	    "initial_destination_concurrency");
	tp->conc.concurrency_limit = (int)pconfig_get_int_tr(name,
	    "destination_concurrency_limit");
	tp->conc.failed_cohort_limit = (double)pconfig_get_int_tr(name,
	    "destination_concurrency_failed_cohort_limit");
	tp->conc.rate_delay =
	    (double)pconfig_get_time_tr(name, "destination_rate_delay");
	tp->conc.debug =
	    pconfig_get_bool("destination_concurrency_feedback_debug");
	if (!tb_rate_parse(pconfig_get_str_tr(name, "destination_message_rate"),
	    &tp->limits.msg_rate, &err)
	    || !tb_rate_parse(pconfig_get_str_tr(name,
	    "destination_connection_rate"), &tp->limits.conn_rate, &err))
		log_fatal("transport %s: %s", name, str_cstr(&err));
	tp->limits.msg_burst = (double)pconfig_get_int_tr(name,
	    "destination_message_burst");
	tp->limits.conn_burst = (double)pconfig_get_int_tr(name,
	    "destination_connection_burst");
	tp->limits.msgs_per_conn = pconfig_get_int_tr(name,
	    "destination_messages_per_connection");
	tp->dest_limits = rate_maps && htable_get(rate_maps, name) != NULL;
	/* The value was checked against its choices when main.cf was read. */
	tp->destination_grouping = sched_grouping_parse(pconfig_get_str_tr(name,
	    "destination_grouping")) == SCHED_GROUP_MX ? SCHED_GROUP_MX
	    : SCHED_GROUP_DOMAIN;
	if (!feedback_mode_parse(pconfig_get_str_tr(name,
	    "destination_concurrency_feedback_mode"),
	    "destination_concurrency_feedback_mode", &tp->conc.mode, &err)
	    || !feedback_func_parse(pconfig_get_str_tr(name,
	    "destination_concurrency_positive_feedback"),
	    "destination_concurrency_positive_feedback", &tp->conc.positive, &err)
	    || !feedback_func_parse(pconfig_get_str_tr(name,
	    "destination_concurrency_negative_feedback"),
	    "destination_concurrency_negative_feedback", &tp->conc.negative, &err)
	    || !sched_tparams_check(tp, &err))
		log_fatal("transport %s: %s", name, str_cstr(&err));
	str_release(&err);
}

static void transport_add(const mastercf_entry_t *me)
{
	qmgr_transport_t *tr;
	sched_tparams_t tp;
	str_t err = STR_INIT;
	int maxproc = mastercf_maxproc(me);

	if (htable_get(Q.transports, me->service) != NULL) {
		log_warning("%s:%d: service %s defined twice; using the first",
		    me->file ? me->file : "master.cf", me->line, me->service);
		return;
	}
	tparams_from_config(&tp, me->service, maxproc);
	tr = xcalloc(1, sizeof(*tr));
	tr->name = xstrdup(me->service);
	str_setf(&tr->suspend_reason, "%s", "");
	{
		str_t ep = STR_INIT;
		str_setf(&ep, "%s/%s", me->private_svc ? "private" : "public",
		    me->service);
		tr->endpoint = str_steal(&ep);
	}
	tr->time_limit = pconfig_get_time_tr(me->service, "time_limit");
	if (tp.destination_grouping == SCHED_GROUP_MX) {
		tr->group_mx = true;
		Q.group_mx++;
	}
	tr->st = sched_transport_add(Q.s, tr->name, &tp, &err);
	if (tr->st == NULL)
		log_fatal("transport %s: %s", tr->name, str_cstr(&err));
	htable_add(Q.transports, tr->name, tr);
	log_debug("transport %s: %s, process limit %d, %d recipients per "
	    "delivery, concurrency %d..%d", tr->name, tr->endpoint,
	    tp.process_limit, tp.destination_recipient_limit,
	    tp.conc.initial_concurrency, tp.conc.concurrency_limit);
	str_release(&err);
}

/* Queue files stay open while their messages are active: the active
 * queue limit must fit the descriptors we may have. */
static void fit_descriptors(long agents)
{
	struct rlimit rl;
	long avail;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = rl;
		want.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl = want;
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return;
	if (agents > (long)rl.rlim_cur / 2)
		agents = (long)rl.rlim_cur / 2;
	avail = (long)rl.rlim_cur - QMGR_FD_RESERVE - agents;
	if (avail < 1)
		avail = 1;
	if (Q.active_limit > avail) {
		/* A few percent less is routine (20,000 against a limit of
		 * 20,000 descriptors); a large cut deserves attention. */
		if (avail < Q.active_limit / 2)
			log_warning("qmgr_message_active_limit %ld reduced to %ld: "
			    "the process may open only %ld files (ulimit -n)",
			    Q.active_limit, avail, (long)rl.rlim_cur);
		else
			log_info("qmgr_message_active_limit %ld reduced to %ld: the "
			    "process may open only %ld files (ulimit -n)",
			    Q.active_limit, avail, (long)rl.rlim_cur);
		Q.active_limit = avail;
	}
}

/* Read before the chroot (qmgr_conf_preload): master.cf and the lookup
 * tables of address resolution live outside the queue directory. */
static mastercf_t *pre_mcf;
static str_t pre_mcf_warnings = STR_INIT;
static resolver_t *pre_resolver;

void qmgr_conf_preload(void)
{
	str_t err = STR_INIT, path = STR_INIT;

	str_setf(&path, "%s/master.cf", pconfig_get_str("config_directory"));
	pre_mcf = mastercf_load(str_cstr(&path), &err);
	if (pre_mcf == NULL)
		log_fatal("%s", str_cstr(&err));
	str_set(&pre_mcf_warnings, str_cstr(&err));
	str_reset(&err);
	rate_maps_open(pre_mcf);
	qmgr_mxgroup_preload(pre_mcf);
	pre_resolver = resolver_from_config(&err);
	if (pre_resolver == NULL)
		log_fatal("address resolution: %s", str_cstr(&err));
	str_release(&err);
	str_release(&path);
}

void qmgr_conf_init(void)
{
	str_t err = STR_INIT, path = STR_INIT;
	mastercf_t *mcf;
	long agents = 0;

	/* The skeleton put us in queue_directory (the root of a chroot):
	 * every path is relative to it. */
	if (queue_layout_here(&Q.ql, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	Q.active_limit = pconfig_get_int("qmgr_message_active_limit");
	Q.queue_run_delay = pconfig_get_time("queue_run_delay");
	Q.temp_max_age = pconfig_get_time("temp_file_max_age");
	Q.clog_warn_time = pconfig_get_time("qmgr_clog_warn_time");
	Q.ipc_timeout = pconfig_get_time("qmgr_ipc_timeout");
	Q.transport_retry_time = pconfig_get_time("transport_retry_time");
	Q.delay_warning_time = pconfig_get_time("delay_warning_time");
	Q.soft_bounce = pconfig_get_bool("soft_bounce");
	Q.default_filter_nexthop =
	    xstrdup(pconfig_get_str("default_filter_nexthop"));
	Q.myhostname = xstrdup(pconfig_get_str("myhostname"));
	Q.log_digits = (int)pconfig_get_int("delay_logging_resolution_limit");
	list_init(&Q.messages);
	list_init(&Q.finish);
	list_init(&Q.dlvs);
	list_init(&Q.bounce_sync);

	sched_params_from_config(&Q.sp);
	Q.s = sched_new(&Q.sp, &qmgr_driver);
	Q.transports = htable_new(32, 0);

	/* Every UNIX stream service of master.cf can be a transport; the
	 * ones no recipient resolves to cost nothing. */
	if (pre_mcf == NULL)
		qmgr_conf_preload();
	mcf = pre_mcf;
	pre_mcf = NULL;
	if (str_len(&pre_mcf_warnings) > 0)
		log_lines(LOG_LVL_WARNING, str_cstr(&pre_mcf_warnings));
	str_release(&pre_mcf_warnings);
	for (size_t i = 0; i < mcf->count; i++) {
		const mastercf_entry_t *me = mcf->entries[i];
		if (me->type != MCF_UNIX)
			continue;
		if (strcmp(me->service, "bounce") == 0 && Q.bounce_endpoint == NULL) {
			str_t ep = STR_INIT;
			str_setf(&ep, "%s/bounce", me->private_svc ? "private" : "public");
			Q.bounce_endpoint = str_steal(&ep);
		}
		transport_add(me);
		agents += mastercf_maxproc(me) > 0 ? mastercf_maxproc(me) : 100;
	}
	mastercf_free(mcf);
	if (Q.bounce_endpoint == NULL)
		log_warning("no bounce service in master.cf: non-delivery notices "
		    "cannot be sent (bounced mail stays in the queue)");

	Q.resolver = pre_resolver;
	pre_resolver = NULL;
	fit_descriptors(agents);
	str_release(&err);
	str_release(&path);
}

qmgr_transport_t *qmgr_transport_get(const char *name)
{
	return htable_get(Q.transports, name);
}

bool qmgr_transport_suspended(qmgr_transport_t *tr, double now)
{
	if (tr->suspended_until == 0)
		return false;
	if (now < tr->suspended_until)
		return true;
	tr->suspended_until = 0;
	tr->fail_count = 0;
	log_info("transport %s: deliveries resumed", tr->name);
	return false;
}

void qmgr_transport_failure(qmgr_transport_t *tr, const char *reason,
    double now)
{
	tr->agent_failures++;
	if (++tr->fail_count < QMGR_AGENT_FAIL_LIMIT || tr->suspended_until != 0)
		return;
	tr->suspended_until = now + (double)Q.transport_retry_time;
	str_set(&tr->suspend_reason, reason);
	log_warning("transport %s: %d delivery agent failures in a row (last: "
	    "%s); deliveries suspended for %lds (transport_retry_time)",
	    tr->name, tr->fail_count, reason, Q.transport_retry_time);
}

void qmgr_transport_success(qmgr_transport_t *tr)
{
	tr->fail_count = 0;
}

static void unsuspend(htable_entry_t *he, void *ctx)
{
	qmgr_transport_t *tr = he->value;
	(void)ctx;
	if (tr->suspended_until != 0) {
		tr->suspended_until = 0;
		tr->fail_count = 0;
		log_info("transport %s: deliveries resumed (flush)", tr->name);
	}
}

void qmgr_transport_unsuspend_all(void)
{
	htable_walk(Q.transports, unsuspend, NULL);
}
