/* Where local (unix, unix-dgram, fifo, pass) service endpoints live. */
#ifndef PETREL_ENDPOINT_H
#define PETREL_ENDPOINT_H
#include "mastercf.h"

/* "private/NAME" or "public/NAME", relative to queue_directory
 * (malloc'ed). */
char *master_local_path(const mastercf_entry_t *e);

#endif
