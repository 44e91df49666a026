/* qmgr-sim: the scheduler core (sched.h) on a virtual clock against
 * simulated destinations described by a scenario file (doc/qmgr-sim.md).
 * sim_scenario.c parses, sim_run.c runs and reports. */
#ifndef PETREL_QMGR_SIM_H
#define PETREL_QMGR_SIM_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "sched.h"
#include "str.h"

typedef struct sim_period {
	double start, end;
} sim_period_t;

/* limit_at=TIME:N: the server's session limit becomes N at TIME. */
typedef struct sim_limit_change {
	double at;
	int limit;
} sim_limit_change_t;

typedef enum sim_fail_mode {
	SIM_FAIL_REFUSE = 0,
	SIM_FAIL_TIMEOUT,
} sim_fail_mode_t;

typedef struct sim_dest {
	char *name;			/* the nexthop */
	char *transport;
	char *mx;			/* its MX group (the provider's
					 * server), or NULL: its own server */
	char *key;			/* scheduling key: "{mx}" when its
					 * transport groups by mx, else name */
	struct sim_dest *server;	/* the dest whose session count is the
					 * server's (first of its mx group) */
	int max_sessions;		/* as server: most sessions at once */
	int conns, max_conns;		/* as server: connections in flight
					 * (sessions and the ones being
					 * refused or rejected), and the most */
	double service;			/* per recipient */
	double connect;			/* per delivery, before the recipients */
	int limit;			/* server sessions; beyond: 421 (0 = none) */
	double reject;			/* time to get the 421 */
	double refuse_p, timeout_p;	/* per connection */
	double timeout_time;
	double tempfail_p, permfail_p;	/* per recipient */
	sim_period_t *dead;
	int ndead;
	sim_limit_change_t *limit_at;	/* limit changes, in time order */
	int nlimit_at;
	sim_fail_mode_t dead_mode;
	char *limits;			/* rate limits (a rate table value) or NULL */
	/* Run state and statistics. */
	int sessions;
	unsigned long deliveries, conn_fail, rejected, refused, timedout;
	unsigned long first_deliveries, first_deferred;
	unsigned long sent, deferred, bounced;
	double w_integral, b_integral, busy_time, last_t;
	int max_window;
	int obs_window, obs_busy;	/* as last observed, since last_t */
	unsigned long *attempts;	/* connection attempts per interval */
	size_t nattempts;
} sim_dest_t;

typedef struct sim_arrival {
	double at;			/* first arrival */
	double every;			/* 0 = once */
	long repeat;			/* number of arrivals (1 = once) */
	long count;			/* messages per arrival */
	long rcpts;			/* recipients per message */
	int *dests;			/* indexes into sim->dests */
	int ndests;
	char *label;
	bool null_sender;
	long done;			/* run state: arrivals so far */
} sim_arrival_t;

typedef struct sim_transport {
	char *name;
	sched_tparams_t p;
} sim_transport_t;

enum sim_msg_state {
	SIM_MSG_INCOMING, SIM_MSG_ACTIVE, SIM_MSG_DEFERRED, SIM_MSG_ELIGIBLE,
	SIM_MSG_DONE, SIM_MSG_EXPIRED,
};

typedef struct sim_msg {
	long num;
	char id[24];
	const sim_arrival_t *arr;
	double arrival;
	long nrcpt;
	uint8_t *done;			/* bitmap of final recipients, or NULL */
	long ndone;			/* recipients sent or bounced */
	long next;			/* read position in this pass */
	long offered;			/* this pass */
	long pending;			/* not final at the start of this pass */
	int attempts;
	double retry;
	double final_time;
	enum sim_msg_state state;
	struct sim_msg *qnext;		/* incoming / deferred FIFO link */
} sim_msg_t;

typedef struct sim_opts {
	bool summary, csv, latency, order;
	bool verbose;
	bool check;			/* sched_check after every event */
} sim_opts_t;

typedef struct sim sim_t;

/* Parse a scenario file; NULL with "FILE:LINE: reason" in err. */
sim_t *sim_load(const char *path, str_t *err);
/* Parse scenario text (name is used in messages). */
sim_t *sim_parse(const char *name, const char *text, str_t *err);
/* Run to the end; output goes to out as the options say. */
void sim_run(sim_t *sim, const sim_opts_t *o, FILE *out);
void sim_free(sim_t *sim);

/* Internal, shared by sim_scenario.c and sim_run.c. */
struct sim {
	char *name;
	sched_params_t sp;
	sched_tparams_t tdefaults;	/* default_X settings so far */
	long active_limit;		/* qmgr_message_active_limit */
	double queue_run_delay;
	uint64_t seed;
	double run_end;			/* INFINITY = until done */
	double sample;			/* CSV sampling interval */
	sim_transport_t *transports;
	int ntransports;
	sim_dest_t *dests;
	int ndests;
	sim_arrival_t *arrivals;
	int narrivals;
	/* Run state (sim_run.c). */
	void *run;
};

#endif
