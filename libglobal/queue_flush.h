/* Flushing: making deferred mail due now (a deferred queue file's time
 * is its retry time) and waking qmgr, for postq -f/-s and postsuper -U.
 * qmgr learns of due mail from the trigger, or at its next scan of the
 * deferred queue when the trigger cannot be sent. */
#ifndef PETREL_QUEUE_FLUSH_H
#define PETREL_QUEUE_FLUSH_H
#include "queue_path.h"
#include "str.h"

/* Sends trigger bytes to qmgr's trigger service as the master.cf of
 * config_dir names it (mastercf_trigger_path), under queue_directory,
 * within trigger_timeout; for callers that word their own messages.
 * Returns QUEUE_FLUSH_SENT, or what went wrong with where it happened
 * in where: QUEUE_FLUSH_NO_MASTER_CF (where: master.cf's path; errors:
 * why it cannot be read), QUEUE_FLUSH_NO_QMGR (where: master.cf's path),
 * QUEUE_FLUSH_UNREACHABLE (where: qmgr's socket or fifo; errno says
 * why). */
enum queue_flush_send {
	QUEUE_FLUSH_SENT,
	QUEUE_FLUSH_NO_MASTER_CF,
	QUEUE_FLUSH_NO_QMGR,
	QUEUE_FLUSH_UNREACHABLE,
};
enum queue_flush_send queue_flush_send(const char *config_dir,
    const char *bytes, str_t *where, str_t *errors);
/* The same with one message in err: sends trigger bytes to the qmgr
 * service of master.cf in config_dir
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
