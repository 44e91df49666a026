/* One queued message read for display (postq, showq, the flushing by
 * site of postq and postsuper): its envelope, its recipients not yet
 * done with the defer log's reason for each, its retry time.  Read-only:
 * nothing here changes the queue file or the logs.  doc/postq.md shows
 * what the listings make of it. */
#ifndef PETREL_QUEUE_MSG_H
#define PETREL_QUEUE_MSG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>
#include "htable.h"
#include "qfile.h"
#include "queue_walk.h"
#include "str.h"

typedef struct queue_msg {
	const char *queue;
	char id[QUEUE_ID_SIZE];
	qfile_t *qf;
	str_t error;		/* why it cannot be shown (damaged...) */
	uint64_t size;
	struct timeval arrival;
	const char *sender;	/* "" = null sender */
	unsigned long attempts;
	time_t next_retry;	/* deferred: the file time; else 0 */
	htable_t *reasons;	/* defer log: recipient offset -> reason */
	qf_rcpt_batch_t batch;
	size_t bpos;
	bool rcpt_error;
} queue_msg_t;

/* Opens f for display.  0: ready; 1: cannot be shown (m->error says
 * why: damaged, unreadable); -1: gone (moved or removed meanwhile:
 * skip it).  queue_msg_close in every case. */
int queue_msg_open(const queue_layout_t *ql, const queue_walk_file_t *f,
    queue_msg_t *m);
/* The next recipient not yet done: 1 with *addr and *reason (NULL when
 * the defer log has none for it), 0 at the end, -1 on a read error
 * (m->error). */
int queue_msg_next_rcpt(queue_msg_t *m, const char **addr,
    const char **reason);
void queue_msg_close(queue_msg_t *m);

#endif
