/* master: the log relay.
 *
 * With maillog_file set, every child gets, as its descriptor 2, one end
 * of a datagram socket pair whose other end master reads.  The skeleton
 * (-l) sends each formatted log line there as one datagram, so lines of
 * concurrent processes never mix, and master appends them to the only
 * descriptor of the file that counts.  Reopening the log after a
 * rotation is then master's business alone: chrooted daemons could not
 * open the file by name again, and nothing in a child has to notice.
 * Anything else a child writes to its standard error (early errors,
 * sanitizer reports) reaches the file the same way.  doc/master.md,
 * "Logs", has the reasons and the measurements. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "event.h"
#include "log.h"
#include "master.h"
#include "pconfig.h"
#include "sock.h"
#include "str.h"

#define RELAY_BATCH	(64 * 1024)	/* bytes written at once */
#define RELAY_DGRAM_MAX	(256 * 1024)	/* longer writes to stderr are cut */
#define RELAY_ROUNDS	256		/* datagrams per event, at most */
#define RELAY_BUFSIZE	(1 << 20)	/* socket buffers asked for */

static void relay(void)
{
	/* A log line is one datagram of at most ~4.4 KiB; a child's other
	 * writes to stderr (a sanitizer report) may be longer. */
	static char buf[RELAY_BATCH + RELAY_DGRAM_MAX];
	size_t used = 0;

	for (int i = 0; i < RELAY_ROUNDS; i++) {
		ssize_t n = recv(master.log_rd, buf + used, sizeof(buf) - used, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used >= RELAY_BATCH) {
			log_write_raw(buf, used);
			used = 0;
		}
	}
	if (used > 0)
		log_write_raw(buf, used);
}

static void relay_event(int fd, int events, void *ctx)
{
	(void)fd;
	(void)events;
	(void)ctx;
	relay();
}

void master_log_init(void)
{
	int sv[2], size = RELAY_BUFSIZE;

	master.log_rd = master.log_wr = -1;
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0) {
		log_warning("log relay: socketpair: %s; children write maillog_file "
		    "themselves and keep the old file after a rotation until they "
		    "exit", strerror(errno));
		return;
	}
	/* Larger buffers absorb bursts; the kernel may cap them. */
	(void)setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	(void)setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	sock_set_cloexec(sv[0], true);
	sock_set_cloexec(sv[1], true);
	sock_set_nonblock(sv[0], true);
	/* Children's sends block when master falls behind: no line lost. */
	master.log_rd = sv[0];
	master.log_wr = sv[1];
	event_add(master.loop, master.log_rd, EVENT_READ, relay_event, NULL);
}

void master_log_drain(void)
{
	if (master.log_rd >= 0)
		for (int i = 0; i < 64; i++) {
			char c;
			if (recv(master.log_rd, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
				break;
			relay();
		}
}

void master_log_reopen(const char *why)
{
	const char *file = pconfig_get_str("maillog_file");
	str_t name = STR_INIT;
	int fd;

	/* What was sent before belongs in the old file. */
	master_log_drain();
	/* A reload may have changed syslog_name (multi_instance_name). */
	str_setf(&name, "%s/master", pconfig_get_str("syslog_name"));
	log_init(str_cstr(&name));
	str_release(&name);
	if (*file == 0) {
		/* maillog_file removed by a reload: back to syslog; daemons
		 * started from now on log there themselves. */
		if (log_file_fd() >= 0) {
			log_info("%s: maillog_file is no longer set; logging to syslog",
			    why);
			log_to_syslog();
		}
		return;
	}
	if (log_to_file(file) < 0) {
		log_error("%s: cannot reopen maillog_file %s: %s; still writing "
		    "to the file opened before", why, file, strerror(errno));
		return;
	}
	/* A detached master's own standard error is the log file too. */
	if ((fd = log_file_fd()) >= 0 && !master.foreground)
		dup2(fd, 2);
	log_info("%s: reopened maillog_file %s", why, file);
}
