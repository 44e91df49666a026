/* "petrel logrotate" (petrel_logrotate.c). */
#ifndef PETREL_PETREL_LOGROTATE_H
#define PETREL_PETREL_LOGROTATE_H
#include <sys/types.h>

/* Renames maillog_file with maillog_file_rotate_suffix, has master (pid
 * master_pid, 0 when it does not run) open a new one, compresses the
 * old one with maillog_file_compressor and keeps the newest
 * maillog_file_rotate_count renamed files.  Returns the exit status. */
int petrel_logrotate(pid_t master_pid);

#endif
