/* Flushing: making deferred mail due now (a deferred queue file's time
 * is its retry time) and waking qmgr, for postq -f/-s and postsuper -U.
 * qmgr learns of due mail from the trigger, or at its next scan of the
 * deferred queue when the trigger cannot be sent. */
#ifndef PETREL_QUEUE_FLUSH_H
#define PETREL_QUEUE_FLUSH_H
#include "queue_path.h"
#include "str.h"

/* Sends trigger bytes to the qmgr service of master.cf in config_dir
 * (under queue_directory, as master.cf names it: unix, fifo or
 * unix-dgram).  0, or -1 with err. */
int queue_flush_trigger(const char *config_dir, const char *bytes,
    str_t *err);
/* Makes every deferred message with a recipient for site (its domain,
 * or the nexthop the resolver gives) due now.  Returns how many, or -1
 * with err. */
long queue_flush_site(const queue_layout_t *ql, const char *site,
    str_t *err);

#endif
