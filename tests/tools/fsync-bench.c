/* fsync-bench: the cost of making messages durable when several processes
 * write into one directory at once.
 *
 *	fsync-bench queue   [-k procs] [-m msgs] [-s size] [-H hashed] DIR
 *	fsync-bench maildir [-k procs] [-m msgs] [-s size] DIR
 *
 * queue: DIR is a queue directory (created when missing); each of procs
 * processes writes and commits msgs queue files of about size bytes
 * into incoming/ with the queue-file writer (what cleanup does per
 * message).  maildir: each process delivers msgs messages into the
 * Maildir DIR/Maildir/ with local's Maildir delivery (each fsyncs new/
 * itself, as local does).  All processes
 * start together; the figures are for the whole run:
 *
 *	queue k=4 msgs=800 secs=1.234 msgs/s=648.3 fsyncs=1200 fsyncs/msg=1.500
 *	    waits=310 cut=0
 *
 * fsyncs counts every fsync(2) the commits or deliveries made (file and
 * directory), from the libraries' own counters; "n/a" when the library
 * has none (an older tree: count with strace -f -c -e fsync then).
 * waits: how often a commit found a lock busy and waited for another
 * process; cut: how many of those waits reached dirsync's bound (the
 * commit then fsynced on its own).  The messages are left in place
 * (remove DIR between runs). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "dirsync.h"
#include "file.h"
#include "local/mailbox.h"
#include "qfile.h"
#include "str.h"

/* Counters of the libraries, when they have them. */
extern unsigned long qfw_fsync_count __attribute__((weak));
extern unsigned long mailbox_fsync_count __attribute__((weak));

/* Waits and waits cut short, counted through the dirsync hook. */
static long waits, cut;

static int count_hook(enum dirsync_event ev, uint64_t value)
{
	(void)value;
	if (ev == DIRSYNC_EV_WAIT)
		waits++;
	else if (ev == DIRSYNC_EV_GAVE_UP)
		cut++;
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: fsync-bench queue|maildir [-k procs] [-m msgs] "
	    "[-s size] [-H hashed] DIR\n");
	exit(2);
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "fsync-bench: %s: %s\n", what, why);
	exit(1);
}

static double now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* A message of about size bytes: a header and lines of 72 characters. */
static void make_message(str_t *out, size_t size, int proc)
{
	str_setf(out, "From: bench@example.org\nTo: rcpt@example.com\n"
	    "Subject: fsync-bench %d\n\n", proc);
	while (str_len(out) < size) {
		for (int i = 0; i < 72; i++)
			str_putc(out, (char)('a' + (int)((str_len(out) + (size_t)i) % 26)));
		str_putc(out, '\n');
	}
}

/* One writer process: returns its fsync count, or -1. */
static long run_queue(const char *dir, const char *hashed, int msgs,
    size_t size, int proc)
{
	queue_layout_t ql;
	str_t err = STR_INIT, msg = STR_INIT;
	qf_rcpt_in_t r = { "rcpt@example.com", NULL, NULL, 0 };
	unsigned long before = &qfw_fsync_count ? qfw_fsync_count : 0;

	if (queue_layout_init(&ql, dir, hashed, 1, &err) < 0)
		die(dir, str_cstr(&err));
	make_message(&msg, size, proc);
	for (int i = 0; i < msgs; i++) {
		qfw_t *w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err);
		if (w == NULL)
			die("create", str_cstr(&err));
		if (qfw_sender(w, "bench@example.org") < 0
		    || qfw_rcpt(w, &r) < 0
		    || qfw_content(w, msg.buf, msg.len) < 0
		    || qfw_commit(w) < 0)
			die("write", qfw_error(w));
		qfw_free(w);
	}
	str_release(&msg);
	str_release(&err);
	queue_layout_free(&ql);
	return &qfw_fsync_count ? (long)(qfw_fsync_count - before) : -1;
}

static long run_maildir(const char *dir, int msgs, size_t size, int proc)
{
	str_t msg = STR_INIT, md = STR_INIT;
	lmsg_copy_t c = { LMSG_RETURN_PATH, "bench@example.org",
	    "rcpt@example.com", 0 };
	unsigned long before = &mailbox_fsync_count ? mailbox_fsync_count : 0;

	make_message(&msg, size, proc);
	str_setf(&md, "%s/Maildir/", dir);
	for (int i = 0; i < msgs; i++) {
		lmsg_t *m = lmsg_from_mem(msg.buf, msg.len);
		lstatus_t st = LSTATUS_INIT;

		if (maildir_deliver(str_cstr(&md), 0, m, &c, &st) < 0)
			die("deliver", str_cstr(&st.text));
		lstatus_free(&st);
		lmsg_free(m);
	}
	str_release(&msg);
	str_release(&md);
	return &mailbox_fsync_count ? (long)(mailbox_fsync_count - before) : -1;
}

int main(int argc, char **argv)
{
	const char *mode, *dir, *hashed = "";
	int procs = 1, msgs = 200, c, go[2], res[2];
	size_t size = 2000;
	long total = 0, all_waits = 0, all_cut = 0;
	bool counted = true;
	double t0, t1;

	if (argc < 2)
		usage();
	mode = argv[1];
	if (strcmp(mode, "queue") != 0 && strcmp(mode, "maildir") != 0)
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "k:m:s:H:")) != -1) {
		switch (c) {
		case 'k': procs = atoi(optarg); break;
		case 'm': msgs = atoi(optarg); break;
		case 's': size = (size_t)atol(optarg); break;
		case 'H': hashed = optarg; break;
		default: usage();
		}
	}
	if (optind != argc - 1 || procs < 1 || msgs < 1)
		usage();
	dir = argv[optind];
	if (mode[0] == 'q') {
		queue_layout_t ql;
		str_t err = STR_INIT;

		if (queue_layout_init(&ql, dir, hashed, 1, &err) < 0
		    || queue_create_dirs(&ql, &err) < 0)
			die(dir, str_cstr(&err));
		queue_layout_free(&ql);
		str_release(&err);
	} else if (file_mkdirs(dir, 0700) < 0) {
		die(dir, strerror(errno));
	}
	if (pipe(go) < 0 || pipe(res) < 0)
		die("pipe", strerror(errno));
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork", strerror(errno));
		if (pid == 0) {
			char b;
			long n[3];

			close(go[1]);
			close(res[0]);
			dirsync_hook = count_hook;
			/* Wait for the start: the parent closes its end. */
			(void)read(go[0], &b, 1);
			n[0] = mode[0] == 'q' ? run_queue(dir, hashed, msgs, size, p)
			    : run_maildir(dir, msgs, size, p);
			n[1] = waits;
			n[2] = cut;
			if (write(res[1], n, sizeof(n)) != (ssize_t)sizeof(n))
				_exit(1);
			_exit(0);
		}
	}
	close(go[0]);
	close(res[1]);
	t0 = now();
	close(go[1]);
	for (int p = 0; p < procs; p++) {
		long n[3];
		if (read(res[0], n, sizeof(n)) != (ssize_t)sizeof(n))
			die("a writer", "failed");
		if (n[0] < 0)
			counted = false;
		total += n[0];
		all_waits += n[1];
		all_cut += n[2];
	}
	t1 = now();
	for (int p = 0; p < procs; p++) {
		int status;
		if (wait(&status) < 0 || !WIFEXITED(status)
		    || WEXITSTATUS(status) != 0)
			die("a writer", "failed");
	}
	long all = (long)procs * msgs;
	printf("%s k=%d msgs=%ld secs=%.3f msgs/s=%.1f", mode, procs, all,
	    t1 - t0, (double)all / (t1 - t0));
	if (counted)
		printf(" fsyncs=%ld fsyncs/msg=%.3f", total,
		    (double)total / (double)all);
	else
		printf(" fsyncs=n/a");
	printf(" waits=%ld cut=%ld\n", all_waits, all_cut);
	return 0;
}
