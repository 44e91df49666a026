/* Walking a queue directory and collecting its messages, at any hash
 * depth: what the administration tools (postq, postsuper), the showq
 * listing and the metrics service read the queue with.  Nothing here
 * opens a queue file (queue_msg.h does); entries come sorted by name so
 * that walks, and what they report, are reproducible.
 *
 * Conventions: functions that can fail return 0 or -1 with a message in
 * err; a queue directory that does not exist is an empty queue. */
#ifndef PETREL_QUEUE_WALK_H
#define PETREL_QUEUE_WALK_H
#include <stddef.h>
#include <sys/stat.h>
#include "queue_id.h"
#include "queue_path.h"
#include "str.h"

/* What a directory entry of a queue is. */
typedef enum queue_walk_kind {
	QUEUE_WALK_MSG,		/* a regular file named by a valid queue ID */
	QUEUE_WALK_TMP,		/* a writer's temporary file (tmp.*) */
	QUEUE_WALK_STRAY_FILE,	/* any other regular file */
	QUEUE_WALK_STRAY_DIR,	/* a directory that is not a hash level */
	QUEUE_WALK_OTHER,	/* symlink, fifo, socket, device */
} queue_walk_kind_t;

typedef struct queue_walk_ent {
	const char *queue;
	const char *path;	/* queue_directory/QUEUE/[H1/...]NAME */
	const char *name;
	int depth;		/* hash levels above it (0..QUEUE_HASH_MAX_DEPTH) */
	const struct stat *st;	/* lstat */
	queue_walk_kind_t kind;
} queue_walk_ent_t;

/* Calls fn for every entry of queue, descending into hash
 * subdirectories (one character of the queue ID alphabet) up to
 * QUEUE_HASH_MAX_DEPTH levels, whatever the configured depth.  A
 * non-zero return from fn stops the walk with it.  Returns 0, fn's
 * value, or -1 with err. */
typedef int (*queue_walk_fn)(const queue_walk_ent_t *d, void *ctx);
int queue_walk_each(const queue_layout_t *ql, const char *queue,
    queue_walk_fn fn, void *ctx, str_t *err);

typedef struct queue_walk_file {
	const char *queue;	/* static queue name */
	char id[QUEUE_ID_SIZE];
	char *path;
} queue_walk_file_t;

typedef struct queue_walk_files {
	queue_walk_file_t *v;
	size_t n, cap;
} queue_walk_files_t;

#define QUEUE_WALK_FILES_INIT { NULL, 0, 0 }

/* Appends the messages of queue, sorted by ID (arrival order).  0, or -1
 * with err (also for a name that is no queue). */
int queue_walk_collect(const queue_layout_t *ql, const char *queue,
    queue_walk_files_t *out, str_t *err);
void queue_walk_files_free(queue_walk_files_t *f);

#endif
