/* One queued message read for display. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "mem.h"
#include "queue_msg.h"
#include "statuslog.h"

/* Recipients read at a time; defer-log records kept at most. */
#define RCPT_BATCH	1000
#define MAX_REASONS	100000

static void load_reasons(const queue_layout_t *ql, queue_msg_t *m)
{
	sl_list_t list = SL_LIST_INIT;
	str_t err = STR_INIT;
	char key[32];

	/* A missing or unreadable log only means no reasons to show. */
	if (statuslog_read(ql, QUEUE_DEFER, m->id, &list, MAX_REASONS,
	    &err) < 0) {
		sl_list_free(&list);
		str_release(&err);
		return;
	}
	sl_list_dedup(&list);
	m->reasons = htable_new(list.n ? list.n : 1, 0);
	for (size_t i = 0; i < list.n; i++) {
		const sl_rec_t *r = &list.v[i];
		(void)bfmt(key, sizeof(key), "%" PRId64, r->rcpt.offset);
		free(htable_put(m->reasons, key,
		    xstrdup(r->st.reason ? r->st.reason : "")));
	}
	sl_list_free(&list);
	str_release(&err);
}

int queue_msg_open(const queue_layout_t *ql, const queue_walk_file_t *f,
    queue_msg_t *m)
{
	qf_err_t err;
	struct stat st;

	memset(m, 0, sizeof(*m));
	m->queue = f->queue;
	bcopy_str(m->id, sizeof(m->id), f->id);
	m->qf = qfile_open_path(f->path, 0, &err);
	if (m->qf == NULL) {
		if (!err.damaged && err.errnum == ENOENT)
			return -1;
		if (err.damaged)
			str_setf(&m->error, "damaged queue file: at offset %lld: %s",
			    (long long)err.offset, err.reason);
		else
			str_setf(&m->error, "cannot read queue file: %s", err.reason);
		return 1;
	}
	m->size = qfile_content_size(m->qf);
	qfile_arrival(m->qf, &m->arrival);
	m->sender = qfile_sender(m->qf);
	m->attempts = qfile_attempts(m->qf);
	/* A deferred file's time is its retry time. */
	if (strcmp(m->queue, QUEUE_DEFERRED) == 0
	    && fstat(qfile_fd(m->qf), &st) == 0)
		m->next_retry = st.st_mtime;
	load_reasons(ql, m);
	return 0;
}

int queue_msg_next_rcpt(queue_msg_t *m, const char **addr, const char **reason)
{
	const qf_rcpt_t *r;
	char key[32];

	if (m->qf == NULL || m->rcpt_error)
		return -1;
	if (m->bpos >= m->batch.count) {
		long n = qfile_rcpt_read(m->qf, &m->batch, RCPT_BATCH, 0);
		m->bpos = 0;
		if (n < 0) {
			m->rcpt_error = true;
			str_setf(&m->error, "reading recipients: %s",
			    qfile_error(m->qf)->reason);
			return -1;
		}
		if (n == 0)
			return 0;
	}
	r = &m->batch.rcpt[m->bpos++];
	*addr = str_cstr(&r->address);
	*reason = NULL;
	if (m->reasons != NULL) {
		(void)bfmt(key, sizeof(key), "%lld", (long long)r->offset);
		*reason = htable_get(m->reasons, key);
	}
	return 1;
}

void queue_msg_close(queue_msg_t *m)
{
	if (m->qf)
		qfile_close(m->qf);
	m->qf = NULL;
	if (m->reasons)
		htable_free(m->reasons, free);
	m->reasons = NULL;
	qf_rcpt_batch_free(&m->batch);
	str_release(&m->error);
}
