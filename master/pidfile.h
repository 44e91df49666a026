/* master's lock and pid file: queue_directory/process_id_directory/
 * master.pid.  master holds an exclusive fcntl lock on it for as long as
 * it runs; the lock, not the text, says whether master runs and which
 * process it is (fcntl F_GETLK names the holder), so a stale or forged
 * file never leads petrel to signal the wrong process. */
#ifndef PETREL_PIDFILE_H
#define PETREL_PIDFILE_H
#include <sys/types.h>
#include "str.h"

/* The pid file path for the current configuration. */
void master_pidfile_path(str_t *out);

/* Creates/opens the pid file, takes the lock and writes our pid.
 * Returns the descriptor (keep it open), or -1: *holder is then the pid
 * of the master that has the lock (errno EAGAIN), or 0 for another error
 * (errno says which). */
int master_pidfile_lock(const char *path, pid_t *holder);

/* The pid of the running master, 0 if none runs (no file or no lock),
 * -1 with errno if the file cannot be examined. */
pid_t master_running(const char *path);

#endif
