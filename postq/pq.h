/* postq's own modules: the queue shape tables (pq_shape.c), qmgr's
 * scheduler and status-cache views from its control channel
 * (pq_sched.c, with pq_json.c for attribute replies as JSON) and
 * flushing one message (pq_flush.c).  What postq shares with showq,
 * postsuper and metrics is in libglobal: queue_walk.h, queue_msg.h,
 * queue_list.h, queue_flush.h.  doc/postq.md has the output formats. */
#ifndef PETREL_POSTQ_PQ_H
#define PETREL_POSTQ_PQ_H
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include "attr.h"
#include "queue_path.h"
#include "str.h"

/* ---- Attribute replies as JSON (pq_json.c) ------------------------------ */

/* Appends an attribute message as a JSON object: integers as numbers,
 * the integers named in flags_names as true/false, the strings named in
 * num_names as numbers (when they are numbers), lists as arrays of
 * objects. */
void pq_json_attr(str_t *out, const attr_msg_t *m);

/* ---- Queue shape (pq_shape.c) ------------------------------------------- */

typedef struct pq_shape_opts {
	int buckets;		/* columns, >= 2 (default 10) */
	int minutes;		/* first bucket's limit (default 5) */
	bool by_sender;		/* sender domains, not recipient domains */
	bool json;
	time_t now;
	const char *const *queues;	/* NULL: incoming active deferred hold */
} pq_shape_opts_t;

void pq_shape_defaults(pq_shape_opts_t *o);
int pq_shape(const queue_layout_t *ql, const pq_shape_opts_t *o, FILE *out,
    str_t *err);

/* ---- qmgr's views (pq_sched.c) ------------------------------------------ */

/* postq -S and postq -D from a control-channel reply. */
void pq_sched_text(str_t *out, const attr_msg_t *status, bool verbose);
void pq_sched_json(str_t *out, const attr_msg_t *status);
void pq_dsc_text(str_t *out, const attr_msg_t *reply);
void pq_dsc_json(str_t *out, const attr_msg_t *reply);

/* ---- Flushing one message (pq_flush.c) ---------------------------------- */

/* Makes one message eligible now (postq -i): 0, or -1 with err. *queue
 * gets where it was. */
int pq_flush_id(const queue_layout_t *ql, const char *id, const char **queue,
    str_t *err);

#endif
