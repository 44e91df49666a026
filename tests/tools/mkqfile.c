/* mkqfile: writes one queue file with the qfile writer, for shell tests.
 *
 *	mkqfile -d queue_dir [-H hash_queue_names] [-q queue] [-f sender]
 *	    [-T sec.usec] [-e envid] [-R FULL|HDRS] [-a name=value]...
 *	    [-O orig] [-P orcpt] [-N notify] -r rcpt ...  [-x rcpt]...
 *	    [-k index]... [-A attempts] [-W warn_time] [-V version] < content
 *
 * -O, -P and -N apply to the next -r or -x.  -x recipients are written
 * after the content (extracted).  -k marks the recipient with that index
 * (0-based, file order) done after the commit.  -V 1 writes the format
 * of before the record checks.  Prints the queue ID. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "file.h"
#include "qfile.h"

#define MAXR 64

static void die(const char *what, const char *why)
{
	fprintf(stderr, "mkqfile: %s: %s\n", what, why);
	exit(1);
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *hashed = "deferred, defer", *queue = "incoming";
	const char *sender = "", *envid = NULL, *ret = NULL, *tm = NULL;
	const char *attrs[MAXR];
	qf_rcpt_in_t rc[MAXR], xr[MAXR], next = { 0 };
	int nattr = 0, nr = 0, nx = 0, nk = 0, done[MAXR], c;
	long attempts = -1, warn = -1;

	while ((c = getopt(argc, argv, "d:H:q:f:T:e:R:a:O:P:N:r:x:k:A:W:V:")) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'H': hashed = optarg; break;
		case 'q': queue = optarg; break;
		case 'f': sender = optarg; break;
		case 'T': tm = optarg; break;
		case 'e': envid = optarg; break;
		case 'R': ret = optarg; break;
		case 'a': if (nattr < MAXR) attrs[nattr++] = optarg; break;
		case 'O': next.orig = optarg; break;
		case 'P': next.orcpt = optarg; break;
		case 'N': next.notify = atoi(optarg); break;
		case 'r':
		case 'x':
			next.address = optarg;
			if (c == 'r' && nr < MAXR)
				rc[nr++] = next;
			else if (c == 'x' && nx < MAXR)
				xr[nx++] = next;
			memset(&next, 0, sizeof(next));
			break;
		case 'k': if (nk < MAXR) done[nk++] = atoi(optarg); break;
		case 'A': attempts = atol(optarg); break;
		case 'W': warn = atol(optarg); break;
		case 'V': qfw_version = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: see the comment in mkqfile.c\n");
			return 2;
		}
	}
	if (dir == NULL)
		die("usage", "-d queue_dir is required");

	queue_layout_t ql;
	str_t err = STR_INIT, content = STR_INIT;
	if (queue_layout_init(&ql, dir, hashed, 1, &err) < 0
	    || queue_create_dirs(&ql, &err) < 0)
		die(dir, str_cstr(&err));
	if (file_read_fd(0, &content, 64 << 20) < 0)
		die("stdin", "read error");
	qfw_t *w = qfw_create(&ql, queue, 0600, &err);
	if (w == NULL)
		die("create", str_cstr(&err));
	if (tm != NULL) {
		struct timeval tv;
		tv.tv_sec = strtol(tm, NULL, 10);
		const char *dot = strchr(tm, '.');
		tv.tv_usec = dot ? strtol(dot + 1, NULL, 10) : 0;
		qfw_arrival(w, &tv);
	}
	qfw_sender(w, sender);
	if (envid)
		qfw_envid(w, envid);
	if (ret)
		qfw_ret(w, strcmp(ret, "FULL") == 0 ? QF_RET_FULL : QF_RET_HDRS);
	for (int i = 0; i < nattr; i++) {
		char *eq = strchr(attrs[i], '=');
		if (eq == NULL)
			die(attrs[i], "attribute without '='");
		*eq = '\0';
		qfw_attr(w, attrs[i], eq + 1);
	}
	if (warn >= 0)
		qfw_warn_time(w, warn);
	if (attempts >= 0)
		qfw_attempts(w, (unsigned long)attempts);
	for (int i = 0; i < nr; i++)
		qfw_rcpt(w, &rc[i]);
	qfw_content(w, content.buf, content.len);
	for (int i = 0; i < nx; i++)
		qfw_rcpt(w, &xr[i]);
	if (qfw_commit(w) < 0)
		die("commit", qfw_error(w));
	printf("%s\n", qfw_id(w));

	if (nk > 0) {
		qf_err_t qerr;
		qf_rcpt_batch_t b = { 0 };
		qfile_t *qf = qfile_open(&ql, queue, qfw_id(w), QF_OPEN_RDWR, &qerr);
		if (qf == NULL)
			die("reopen", qerr.reason);
		if (qfile_rcpt_read(qf, &b, MAXR * 2, QF_RCPT_ALL) < 0)
			die("read", qfile_error(qf)->reason);
		for (int i = 0; i < nk; i++)
			if (done[i] < 0 || (size_t)done[i] >= b.count
			    || qfile_rcpt_done(qf, b.rcpt[done[i]].offset, 0) < 0)
				die("-k", "no such recipient");
		qf_rcpt_batch_free(&b);
		qfile_close(qf);
	}
	qfw_free(w);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&content);
	return 0;
}
