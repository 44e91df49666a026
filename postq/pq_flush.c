/* postq -i queue_id: one message due now. */
#include <errno.h>
#include <string.h>
#include <sys/time.h>
#include "pq.h"
#include "queue_list.h"

int pq_flush_id(const queue_layout_t *ql, const char *id, const char **queue,
    str_t *err)
{
	str_t path = STR_INIT;
	int q, rc = -1;

	*queue = NULL;
	if (!queue_id_valid(id)) {
		str_setf(err, "%s: not a valid queue ID", id);
		return -1;
	}
	for (q = 0; queue_list_queues[q] != NULL; q++)
		if (queue_find(ql, queue_list_queues[q], id, &path) == 0)
			break;
	if (queue_list_queues[q] == NULL) {
		str_setf(err, "%s: no such message in the queue", id);
		goto out;
	}
	*queue = queue_list_queues[q];
	if (strcmp(*queue, QUEUE_HOLD) == 0) {
		str_setf(err, "%s: the message is on hold (postsuper -H releases "
		    "it)", id);
		goto out;
	}
	if (strcmp(*queue, QUEUE_DEFERRED) == 0 && utimes(str_cstr(&path),
	    NULL) < 0) {
		str_setf(err, "%s: %s", str_cstr(&path), strerror(errno));
		goto out;
	}
	rc = 0;
out:
	str_release(&path);
	return rc;
}
