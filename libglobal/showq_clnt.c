/* The client side of the showq protocol. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "showq_clnt.h"
#include "sock.h"
#include "stream.h"

int showq_clnt_list(const char *queue_dir, bool json, FILE *out, FILE *errout,
    str_t *err)
{
	str_t path = STR_INIT, line = STR_INIT;
	stream_t *st;
	int fd, e, r, rc = 0;
	bool at_start = true;	/* at the start of a line */
	FILE *dest = out;

	str_setf(&path, "%s/public/%s", queue_dir, SHOWQ_SERVICE);
	if ((e = sock_unix_connect(str_cstr(&path), 10000, &fd)) != 0) {
		str_setf(err, "%s: %s", str_cstr(&path), strerror(e));
		str_release(&path);
		errno = e;
		return -1;
	}
	st = stream_open(fd);
	/* A big queue takes time to list; the watchdog of the daemon bounds
	 * it anyway. */
	stream_set_timeouts(st, 300000, 10000);
	if (stream_puts(st, json ? "json\n" : "text\n") < 0 || stream_flush(st) < 0) {
		str_setf(err, "%s: write: %s", str_cstr(&path),
		    strerror(stream_errno(st)));
		rc = -1;
		goto out;
	}
	/* Lines starting with "postq: " are showq's messages (a listing line
	 * never starts so: it is a header, a queue ID, blanks or '{'). */
	while ((r = stream_getline(st, &line, 8192)) != STREAM_LINE_NONE) {
		if (at_start) {
			dest = strncmp(str_cstr(&line), "postq: ", 7) == 0 ? errout : out;
			if (dest == errout)
				rc = 1;
		}
		fwrite(str_cstr(&line), 1, str_len(&line), dest);
		at_start = r == STREAM_LINE_LF || r == STREAM_LINE_CRLF;
		if (at_start)
			fputc('\n', dest);
		if (r == STREAM_LINE_PARTIAL)
			break;
	}
	if (stream_error(st) || stream_timedout(st)) {
		str_setf(err, "%s: %s", str_cstr(&path), stream_timedout(st)
		    ? "timed out" : strerror(stream_errno(st)));
		rc = -1;
	} else if (!at_start) {
		str_setf(err, "%s: the listing ends in mid-line", str_cstr(&path));
		rc = -1;
	}
	if (fflush(out) != 0 && rc == 0) {
		str_setf(err, "write error: %s", strerror(errno));
		rc = -1;
	}
out:
	stream_close(st);
	str_release(&path);
	str_release(&line);
	if (rc < 0)
		errno = EPROTO;	/* reached but failed: not "no service" */
	return rc;
}
