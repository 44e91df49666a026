/* The queue listing, in the mailq layout and as JSON lines: what postq
 * prints for a user who may read the queue and what the showq service
 * sends to one who may not.  doc/postq.md and postq(1) have the
 * formats; they are an interface (scripts parse them), so a change here
 * is a change of the tools' output. */
#ifndef PETREL_QUEUE_LIST_H
#define PETREL_QUEUE_LIST_H
#include <stdio.h>
#include <time.h>
#include "queue_msg.h"
#include "queue_path.h"
#include "str.h"

/* The queues a listing shows, in order: maildrop incoming active deferred
 * hold. */
extern const char *const queue_list_queues[];

enum { QUEUE_LIST_JSON = 1 };

/* Appends one message in the mailq layout or as one JSON line. */
void queue_list_msg_text(str_t *out, queue_msg_t *m);
void queue_list_msg_json(str_t *out, queue_msg_t *m);
/* Lists every queue of queue_list_queues to out (flushed as it goes).
 * Returns 0, or -1 with err (a queue directory that cannot be read:
 * errno EACCES for a user without access). */
int queue_list_print(const queue_layout_t *ql, FILE *out, int flags,
    str_t *err);
/* "Sun Nov 22 10:00:00" (local time), the listing's time format. */
const char *queue_list_time_text(time_t t, char buf[64]);

#endif
