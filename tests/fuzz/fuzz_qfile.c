/* libFuzzer target for the queue-file reader (libglobal/qfile_*): any
 * bytes as a queue file.  Invariants (abort() when broken):
 *   - the scanner (postcat's path) and qfile_open agree on whether the
 *     file is good;
 *   - a file that opens reads back all its recipients and lines, and
 *     marking every recipient done keeps it good, with every recipient
 *     done and none half-marked.
 * The input goes into one temporary file, rewritten for each run. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "log.h"
#include "qfile.h"

static char path[64];
static int fd = -1;

static void check(bool ok)
{
	if (!ok)
		abort();
}

static bool scan_ok(void)
{
	qf_scan_t *sc = qf_scan_new(fd);
	qf_rec_t rec;
	qf_err_t err;
	int r;

	while ((r = qf_scan_next(sc, &rec, &err)) > 0)
		;
	qf_scan_free(sc);
	return r == 0;
}

static long read_all(qfile_t *qf, bool all_done)
{
	qf_rcpt_batch_t b = { 0 };
	str_t line = STR_INIT;
	long n, total = 0;

	while ((n = qfile_rcpt_read(qf, &b, 3, QF_RCPT_ALL)) > 0) {
		for (long i = 0; i < n; i++)
			check(!all_done || b.rcpt[i].done);
		total += n;
	}
	check(n == 0);
	while ((n = qfile_read_line(qf, &line, 40)) > 0)
		;
	check(n == 0);
	qf_rcpt_batch_free(&b);
	str_release(&line);
	return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	qf_err_t err;
	qfile_t *qf;

	if (fd < 0) {
		snprintf(path, sizeof(path), "/tmp/fuzz_qfile.%ld", (long)getpid());
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		check(fd >= 0);
		log_to_file("/dev/null");
	}
	check(ftruncate(fd, 0) == 0);
	check(pwrite(fd, data, size, 0) == (ssize_t)size);
	bool good = scan_ok();
	qf = qfile_open_path(path, QF_OPEN_RDWR, &err);
	/* The reader also rejects a second attribute of one name. */
	check(qf == NULL || good);
	if (qf == NULL)
		return 0;
	long n = read_all(qf, false);
	qf_rcpt_batch_t b = { 0 };
	qfile_rcpt_rewind(qf);
	long k;
	while ((k = qfile_rcpt_read(qf, &b, 3, QF_RCPT_ALL)) > 0)
		for (long i = 0; i < k; i++)
			check(qfile_rcpt_done(qf, b.rcpt[i].offset, 0) == 0);
	qf_rcpt_batch_free(&b);
	qfile_close(qf);
	qf = qfile_open_path(path, 0, &err);
	check(qf != NULL);
	check(qfile_half_marked(qf) == 0);
	check(read_all(qf, true) == n);
	qfile_close(qf);
	return 0;
}
