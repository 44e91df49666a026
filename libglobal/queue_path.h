/* Queue directories, hashed subdirectories, paths of queue files and
 * durable moves between queues.  See doc/queue-file.md §2. */
#ifndef PETREL_QUEUE_PATH_H
#define PETREL_QUEUE_PATH_H
#include <stdbool.h>
#include <sys/types.h>
#include "str.h"

/* Queue names. */
#define QUEUE_MAILDROP "maildrop"
#define QUEUE_INCOMING "incoming"
#define QUEUE_ACTIVE "active"
#define QUEUE_DEFERRED "deferred"
#define QUEUE_HOLD "hold"
#define QUEUE_CORRUPT "corrupt"
#define QUEUE_DEFER "defer"
#define QUEUE_BOUNCE "bounce"
#define QUEUE_TRACE "trace"

#define QUEUE_HASH_MAX_DEPTH 4

/* Not a queue: state the daemons keep, under queue_directory. */
#define QUEUE_SAVED_DIR "saved"
/* Finished queue files kept for reuse (qfile_recycle, qfw_create). */
#define QUEUE_SPARE_DIR "spare"
/* The queue-file writer's directory-fsync group commit (queue-file.md §4). */
#define QUEUE_DIRSYNC_STATE QUEUE_SAVED_DIR "/dirsync.queue"

typedef struct queue_layout {
	char *dir;		/* queue_directory */
	unsigned hashed;	/* bit i: queue_names[i] is hashed */
	int depth;		/* hash_queue_depth */
} queue_layout_t;

/* Every queue name, NULL-terminated: the message queues first
 * (maildrop incoming active deferred hold corrupt), then the status
 * log directories (defer bounce trace). */
extern const char *const queue_names[];
/* The queues that hold queue files, NULL-terminated. */
extern const char *const queue_message_names[];

/* Index in queue_names, or -1 for an unknown name. */
int queue_index(const char *name);
bool queue_name_valid(const char *name);

/* Sets up a layout.  hash_names lists queue names separated by commas
 * and/or white space; depth is 1..QUEUE_HASH_MAX_DEPTH.  An unknown name
 * or a bad depth fails with a message in err (-1). */
int queue_layout_init(queue_layout_t *ql, const char *queue_dir,
    const char *hash_names, long depth, str_t *err);
/* The same from queue_directory, hash_queue_names, hash_queue_depth. */
int queue_layout_from_config(queue_layout_t *ql, str_t *err);
/* The same for a daemon, whose current directory is queue_directory (and
 * its root, once chrooted): every path is relative ("./incoming/..."). */
int queue_layout_here(queue_layout_t *ql, str_t *err);
void queue_layout_free(queue_layout_t *ql);

bool queue_is_hashed(const queue_layout_t *ql, const char *queue);

/* The directory holding id in queue, with depth levels of hashing (0 =
 * none), replacing out's contents.  The caller has checked that id is
 * valid (panics otherwise: a bug). */
void queue_dir_path_depth(const queue_layout_t *ql, const char *queue,
    const char *id, int depth, str_t *out);
/* The directory for the configured layout. */
void queue_dir_path(const queue_layout_t *ql, const char *queue,
    const char *id, str_t *out);
/* queue_directory/QUEUE[/H1...]/ID for the configured layout. */
void queue_path(const queue_layout_t *ql, const char *queue,
    const char *id, str_t *out);

/* Finds an existing file: the configured path first, then where another
 * hash depth (0..4) would put it.  Returns 0 with the path in out, or -1
 * with errno (ENOENT when it is nowhere, EINVAL for a bad queue or ID). */
int queue_find(const queue_layout_t *ql, const char *queue, const char *id,
    str_t *out);

/* Renames id from queue from to queue to (found with queue_find, placed
 * by the configured layout), creating a missing hashed subdirectory, and
 * fsyncs the target directory and the source directory when it differs.
 * Returns 0, or -1 with errno and a message in err (may be NULL). */
int queue_move(const queue_layout_t *ql, const char *from, const char *to,
    const char *id, str_t *err);

/* Creates queue_directory and every queue directory that is missing
 * (mode 0700), and saved/ (state kept by the daemons, such as the
 * queue-file writer's group commit: queue-file.md §4).  Returns 0 or -1
 * with a message in err. */
int queue_create_dirs(const queue_layout_t *ql, str_t *err);

#endif
