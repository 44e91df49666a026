/* The queue listing, in the mailq layout and as JSON lines.  The
 * formats are in doc/postq.md and postq(1). */
#include <errno.h>
#include <string.h>
#include "json.h"
#include "queue_list.h"

const char *const queue_list_queues[] = { QUEUE_MAILDROP, QUEUE_INCOMING,
    QUEUE_ACTIVE, QUEUE_DEFERRED, QUEUE_HOLD, NULL };

/* Column widths of the mailq layout. */
#define W_ID	17		/* queue ID (longer ones push the line) */
#define W_SIZE	8
#define W_INDENT 49		/* where senders and recipients start */

static char queue_flag(const char *queue)
{
	if (strcmp(queue, QUEUE_ACTIVE) == 0)
		return '*';
	if (strcmp(queue, QUEUE_HOLD) == 0)
		return '!';
	return ' ';
}

/* "ID*" padded to the column, as mailq does (the mark right after the
 * ID, so "ID*" and "ID!" can be cut out as one word). */
static void id_column(str_t *out, const queue_msg_t *m)
{
	size_t start = str_len(out);
	char flag = queue_flag(m->queue);

	str_cat(out, m->id);
	if (flag != ' ')
		str_putc(out, flag);
	while (str_len(out) - start < W_ID + 1)
		str_putc(out, ' ');
}

static void indent(str_t *out, int n)
{
	for (int i = 0; i < n; i++)
		str_putc(out, ' ');
}

/* Text from the queue file or a log, made safe for one terminal line. */
static void safe(str_t *out, const char *s)
{
	str_quote_printable(out, s, strlen(s));
}

void queue_list_msg_text(str_t *out, queue_msg_t *m)
{
	char tbuf[64];
	const char *addr, *reason, *last = NULL;
	int r;

	if (m->qf == NULL) {
		id_column(out, m);
		str_catf(out, " %*s %-19s  (", W_SIZE, "?", "?");
		safe(out, str_cstr(&m->error));
		str_cat(out, ")\n\n");
		return;
	}
	id_column(out, m);
	str_catf(out, " %*llu %-19s  ", W_SIZE, (unsigned long long)m->size,
	    queue_list_time_text(m->arrival.tv_sec, tbuf));
	if (*m->sender)
		safe(out, m->sender);
	else
		str_cat(out, "MAILER-DAEMON");
	str_putc(out, '\n');
	if (m->next_retry > 0)
		str_catf(out, "        [next retry: %s, attempts: %lu]\n",
		    queue_list_time_text(m->next_retry, tbuf), m->attempts);
	/* Recipients in file order; a reason line before each run of
	 * recipients with the same reason. */
	while ((r = queue_msg_next_rcpt(m, &addr, &reason)) > 0) {
		if (reason != NULL && (last == NULL || strcmp(reason, last) != 0)) {
			str_cat(out, "        (");
			safe(out, reason);
			str_cat(out, ")\n");
		}
		last = reason;
		indent(out, W_INDENT);
		safe(out, addr);
		str_putc(out, '\n');
	}
	if (r < 0) {
		str_cat(out, "        (");
		safe(out, str_cstr(&m->error));
		str_cat(out, ")\n");
	}
	str_putc(out, '\n');
}

void queue_list_msg_json(str_t *out, queue_msg_t *m)
{
	const char *addr, *reason;
	bool first = true;
	int r;

	str_cat(out, "{\"queue_name\":");
	json_str(out, m->queue);
	str_cat(out, ",\"queue_id\":");
	json_str(out, m->id);
	if (m->qf == NULL) {
		str_cat(out, ",\"error\":");
		json_str(out, str_cstr(&m->error));
		str_cat(out, "}\n");
		return;
	}
	str_catf(out, ",\"arrival_time\":%lld,\"message_size\":%llu,\"sender\":",
	    (long long)m->arrival.tv_sec, (unsigned long long)m->size);
	json_str(out, m->sender);
	str_catf(out, ",\"attempts\":%lu,\"next_retry\":", m->attempts);
	if (m->next_retry > 0)
		str_catf(out, "%lld", (long long)m->next_retry);
	else
		str_cat(out, "null");
	str_cat(out, ",\"recipients\":[");
	while ((r = queue_msg_next_rcpt(m, &addr, &reason)) > 0) {
		if (!first)
			str_putc(out, ',');
		first = false;
		str_cat(out, "{\"address\":");
		json_str(out, addr);
		str_cat(out, ",\"delay_reason\":");
		if (reason)
			json_str(out, reason);
		else
			str_cat(out, "null");
		str_putc(out, '}');
	}
	str_putc(out, ']');
	if (r < 0) {
		str_cat(out, ",\"error\":");
		json_str(out, str_cstr(&m->error));
	}
	str_cat(out, "}\n");
}

static int flush_out(FILE *out, str_t *buf, str_t *err)
{
	if (str_len(buf) > 0 && fwrite(str_cstr(buf), 1, str_len(buf), out)
	    != str_len(buf)) {
		str_setf(err, "write error: %s", strerror(errno));
		return -1;
	}
	str_reset(buf);
	return 0;
}

int queue_list_print(const queue_layout_t *ql, FILE *out, int flags, str_t *err)
{
	bool json = flags & QUEUE_LIST_JSON;
	unsigned long long total = 0;
	unsigned long count = 0;
	str_t buf = STR_INIT;
	int rc = 0;

	for (int q = 0; queue_list_queues[q] != NULL && rc == 0; q++) {
		queue_walk_files_t files = QUEUE_WALK_FILES_INIT;
		if (queue_walk_collect(ql, queue_list_queues[q], &files,
		    err) < 0) {
			rc = -1;
			queue_walk_files_free(&files);
			break;
		}
		for (size_t i = 0; i < files.n && rc == 0; i++) {
			queue_msg_t m;
			int o = queue_msg_open(ql, &files.v[i], &m);
			if (o >= 0) {
				if (!json && count == 0)
					str_catf(&buf, "%-*s %*s %-19s  %s\n", W_ID + 1,
					    "-Queue ID-", W_SIZE, "--Size--",
					    "----Arrival Time---",
					    "-Sender/Recipient-------");
				count++;
				total += m.size;
				if (json)
					queue_list_msg_json(&buf, &m);
				else
					queue_list_msg_text(&buf, &m);
			}
			queue_msg_close(&m);
			if (str_len(&buf) > 65536)
				rc = flush_out(out, &buf, err);
		}
		queue_walk_files_free(&files);
	}
	if (rc == 0 && !json) {
		if (count == 0)
			str_cat(&buf, "Mail queue is empty\n");
		else
			str_catf(&buf, "-- %llu Kbytes in %lu Request%s.\n",
			    (total + 1023) / 1024, count, count == 1 ? "" : "s");
	}
	if (rc == 0)
		rc = flush_out(out, &buf, err);
	str_release(&buf);
	if (rc == 0 && fflush(out) != 0) {
		str_setf(err, "write error: %s", strerror(errno));
		rc = -1;
	}
	return rc;
}

const char *queue_list_time_text(time_t t, char buf[64])
{
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL
	    || strftime(buf, 64, "%a %b %e %H:%M:%S", &tm) == 0)
		(void)bfmt(buf, 64, "%lld", (long long)t);
	return buf;
}
