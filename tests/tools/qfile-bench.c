/* qfile-bench: CPU cost of the queue-file writer and reader, without the
 * fsyncs (which fsync-bench measures).
 *
 *	qfile-bench [-m msgs] [-s size] [-r rcpts] [-l line] DIR
 *
 * DIR is a queue directory (created when missing).  write: msgs times,
 * a message of about size bytes in lines of line bytes (default 4096
 * and 72) with rcpts recipients (default 3) is written with the writer
 * and abandoned before the commit (qfw_free removes it).  read: one such
 * message, committed once, is opened (validated), its recipients and
 * its lines read back, msgs times.  Prints
 *
 *	file=4612 bytes write=3.1 us/msg read=7.9 us/msg (126582 msgs/s)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "file.h"
#include "qfile.h"
#include "str.h"

static double now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

static qfw_t *make(const queue_layout_t *ql, const str_t *body, int rcpts)
{
	str_t err = STR_INIT;
	char addr[64];
	qfw_t *w = qfw_create(ql, QUEUE_INCOMING, 0600, &err);

	if (w == NULL) {
		fprintf(stderr, "qfile-bench: %s\n", str_cstr(&err));
		exit(1);
	}
	qfw_sender(w, "sender@example.org");
	qfw_attr(w, "client", "host.example.com[192.0.2.1]");
	for (int i = 0; i < rcpts; i++) {
		snprintf(addr, sizeof(addr), "recipient%d@example.net", i);
		qf_rcpt_in_t r = { addr, NULL, NULL, 0 };
		qfw_rcpt(w, &r);
	}
	qfw_content(w, body->buf, body->len);
	str_release(&err);
	return w;
}

int main(int argc, char **argv)
{
	long msgs = 20000, size = 4096, rcpts = 3, linelen = 72;
	str_t body = STR_INIT, err = STR_INIT, line = STR_INIT, path = STR_INIT;
	queue_layout_t ql;
	qf_rcpt_batch_t b = { 0 };
	int c;

	while ((c = getopt(argc, argv, "m:s:r:l:")) != -1) {
		switch (c) {
		case 'm': msgs = atol(optarg); break;
		case 's': size = atol(optarg); break;
		case 'r': rcpts = atol(optarg); break;
		case 'l': linelen = atol(optarg); break;
		default:
			fprintf(stderr, "usage: qfile-bench [-m msgs] [-s size] "
			    "[-r rcpts] [-l line] DIR\n");
			return 2;
		}
	}
	if (optind + 1 != argc || msgs < 1 || linelen < 2)
		return 2;
	if (queue_layout_init(&ql, argv[optind], "deferred", 1, &err) < 0
	    || queue_create_dirs(&ql, &err) < 0) {
		fprintf(stderr, "qfile-bench: %s\n", str_cstr(&err));
		return 1;
	}
	str_cat(&body, "Subject: benchmark\n\n");
	while ((long)body.len < size) {
		for (long i = 0; i < linelen - 1; i++)
			str_putc(&body, 'a' + (int)((body.len + i) % 26));
		str_putc(&body, '\n');
	}

	double t0 = now();
	for (long i = 0; i < msgs; i++)
		qfw_free(make(&ql, &body, (int)rcpts));
	double tw = now() - t0;

	qfw_t *w = make(&ql, &body, (int)rcpts);
	if (qfw_commit(w) < 0) {
		fprintf(stderr, "qfile-bench: %s\n", qfw_error(w));
		return 1;
	}
	str_set(&path, qfw_path(w));
	qfw_free(w);
	t0 = now();
	for (long i = 0; i < msgs; i++) {
		qf_err_t qe;
		qfile_t *qf = qfile_open_path(str_cstr(&path), 0, &qe);
		if (qf == NULL) {
			fprintf(stderr, "qfile-bench: %s\n", qe.reason);
			return 1;
		}
		while (qfile_rcpt_read(qf, &b, 100, 0) > 0)
			;
		while (qfile_read_line(qf, &line, 4096) > 0)
			;
		qfile_close(qf);
	}
	double tr = now() - t0;
	str_t all = STR_INIT;
	(void)file_read_all(str_cstr(&path), &all, 64 << 20);
	printf("file=%zu bytes write=%.2f us/msg read=%.2f us/msg (%.0f msgs/s)\n",
	    all.len, tw / msgs * 1e6, tr / msgs * 1e6, msgs / tr);
	(void)unlink(str_cstr(&path));
	qf_rcpt_batch_free(&b);
	str_release(&all);
	str_release(&body);
	str_release(&err);
	str_release(&line);
	str_release(&path);
	queue_layout_free(&ql);
	return 0;
}
