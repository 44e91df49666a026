/* Unit tests for the pieces of the daemon skeleton that work without
 * master: trigger_send to every kind of endpoint, the queue directory
 * check, and master's lock file. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include "master/pidfile.h"
#include "queue_dirs.h"
#include "server.h"
#include "sock.h"

ATF_TC_WITHOUT_HEAD(trigger_errors);
ATF_TC_BODY(trigger_errors, tc)
{
	int fd;

	errno = 0;
	ATF_CHECK(trigger_send("nothing-here", "W", 1, 1000) < 0 && errno == ENOENT);
	fd = open("plain", O_CREAT | O_WRONLY, 0644);
	ATF_REQUIRE(fd >= 0);
	close(fd);
	errno = 0;
	ATF_CHECK(trigger_send("plain", "W", 1, 1000) < 0 && errno == ENOTSOCK);
	/* A fifo nobody reads. */
	ATF_REQUIRE(mkfifo("fifo", 0600) == 0);
	errno = 0;
	ATF_CHECK(trigger_send("fifo", "W", 1, 1000) < 0 && errno == ENXIO);
	/* A socket nobody listens on any more. */
	fd = sock_unix_listen("dead", 5, 0600);
	ATF_REQUIRE(fd >= 0);
	close(fd);
	errno = 0;
	ATF_CHECK(trigger_send("dead", "W", 1, 1000) < 0 && errno == ECONNREFUSED);
}

ATF_TC_WITHOUT_HEAD(trigger_fifo);
ATF_TC_BODY(trigger_fifo, tc)
{
	char buf[16];
	int fd;

	ATF_REQUIRE(mkfifo("fifo", 0600) == 0);
	fd = open("fifo", O_RDWR | O_NONBLOCK);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE(trigger_send("fifo", "FA", 2, 1000) == 0);
	ATF_REQUIRE_EQ(read(fd, buf, sizeof(buf)), 2);
	ATF_CHECK(memcmp(buf, "FA", 2) == 0);
	close(fd);
}

ATF_TC_WITHOUT_HEAD(trigger_stream);
ATF_TC_BODY(trigger_stream, tc)
{
	char buf[16];
	ssize_t n, got = 0;
	int lfd, cfd;

	lfd = sock_unix_listen("sock", 5, 0600);
	ATF_REQUIRE(lfd >= 0);
	/* The connection waits in the backlog: the sender does not need
	 * the receiver to accept first. */
	ATF_REQUIRE(trigger_send("sock", "W", 1, 1000) == 0);
	cfd = accept(lfd, NULL, NULL);
	ATF_REQUIRE(cfd >= 0);
	while ((n = read(cfd, buf + got, sizeof(buf) - (size_t)got)) > 0)
		got += n;
	ATF_CHECK_EQ(got, 1);
	ATF_CHECK_EQ(buf[0], 'W');
	close(cfd);
	close(lfd);
}

ATF_TC_WITHOUT_HEAD(trigger_dgram);
ATF_TC_BODY(trigger_dgram, tc)
{
	struct sockaddr_un sun;
	char buf[16];
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	ATF_REQUIRE(fd >= 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, "dgram", 6);
	ATF_REQUIRE(bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	ATF_REQUIRE(trigger_send("dgram", "ID", 2, 1000) == 0);
	ATF_REQUIRE_EQ(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 2);
	ATF_CHECK(memcmp(buf, "ID", 2) == 0);
	close(fd);
}

/* Wake-ups never wait.  The datagram endpoint (the shipped master.cf's
 * qmgr and pickup) takes one sendto(); when its queue is full the wake-up
 * is dropped and reported as delivered, because wake-ups are pending. */
static int64_t ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int bind_dgram(const char *path)
{
	struct sockaddr_un sun;
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	ATF_REQUIRE(fd >= 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	ATF_REQUIRE(bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	return fd;
}

ATF_TC_WITHOUT_HEAD(wakeup_dgram);
ATF_TC_BODY(wakeup_dgram, tc)
{
	char buf[16];
	int fd = bind_dgram("dgram"), sent = 0;
	int64_t t0;

	ATF_REQUIRE(trigger_wakeup("dgram", 'I') == 0);
	ATF_REQUIRE_EQ(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 1);
	ATF_CHECK_EQ(buf[0], 'I');
	/* Nobody reads: the queue fills, and still nothing waits. */
	t0 = ms_now();
	for (int i = 0; i < 5000; i++)
		sent += trigger_wakeup("dgram", 'I') == 0;
	ATF_CHECK_EQ(sent, 5000);
	ATF_CHECK_MSG(ms_now() - t0 < 3000, "5000 wake-ups took %lld ms",
	    (long long)(ms_now() - t0));
	/* Some are queued, far fewer than were sent. */
	int queued = 0;
	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 1)
		queued++;
	ATF_CHECK(queued >= 1 && queued < 5000);
	close(fd);
	/* Bound by nobody any more. */
	errno = 0;
	ATF_CHECK(trigger_wakeup("dgram", 'I') < 0 && errno == ECONNREFUSED);
	errno = 0;
	ATF_CHECK(trigger_wakeup("nothing-here", 'I') < 0 && errno == ENOENT);
}

ATF_TC_WITHOUT_HEAD(wakeup_stream);
ATF_TC_BODY(wakeup_stream, tc)
{
	char buf[16];
	int lfd = sock_unix_listen("sock", 1, 0600), cfd, sent = 0;
	int64_t t0;

	ATF_REQUIRE(lfd >= 0);
	ATF_REQUIRE(trigger_wakeup("sock", 'W') == 0);
	cfd = accept(lfd, NULL, NULL);
	ATF_REQUIRE(cfd >= 0);
	ATF_CHECK_EQ(read(cfd, buf, sizeof(buf)), 1);
	ATF_CHECK_EQ(buf[0], 'W');
	close(cfd);
	/* Nobody accepts: the backlog fills and the sender never waits. */
	t0 = ms_now();
	for (int i = 0; i < 200; i++)
		sent += trigger_wakeup("sock", 'W') == 0;
	ATF_CHECK_EQ(sent, 200);
	ATF_CHECK_MSG(ms_now() - t0 < 3000, "200 wake-ups took %lld ms",
	    (long long)(ms_now() - t0));
	close(lfd);
}

ATF_TC_WITHOUT_HEAD(wakeup_fifo);
ATF_TC_BODY(wakeup_fifo, tc)
{
	char buf[16];
	int fd;

	ATF_REQUIRE(mkfifo("fifo", 0600) == 0);
	errno = 0;
	ATF_CHECK(trigger_wakeup("fifo", 'W') < 0 && errno == ENXIO);
	fd = open("fifo", O_RDWR | O_NONBLOCK);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE(trigger_wakeup("fifo", 'W') == 0);
	ATF_REQUIRE_EQ(read(fd, buf, sizeof(buf)), 1);
	ATF_CHECK_EQ(buf[0], 'W');
	/* A full fifo holds wake-ups already. */
	for (int i = 0; i < 100000; i++)
		if (write(fd, "W", 1) != 1)
			break;
	ATF_CHECK(trigger_wakeup("fifo", 'W') == 0);
	close(fd);
}

/* A request that must arrive waits for room at a datagram endpoint (up
 * to its time limit), where a wake-up would be dropped. */
ATF_TC_WITHOUT_HEAD(trigger_dgram_full);
ATF_TC_BODY(trigger_dgram_full, tc)
{
	char buf[16];
	int fd = bind_dgram("dgram");
	int64_t t0;

	while (trigger_send("dgram", "I", 1, 10) == 0)
		;
	t0 = ms_now();
	errno = 0;
	ATF_CHECK(trigger_send("dgram", "FA", 2, 300) < 0 && errno == ETIMEDOUT);
	ATF_CHECK(ms_now() - t0 >= 250);
	/* Room again: it arrives. */
	ATF_REQUIRE(recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 1);
	ATF_CHECK(trigger_send("dgram", "FA", 2, 1000) == 0);
	close(fd);
}

static queue_owners_t me(void)
{
	queue_owners_t o = {
		.mail_uid = geteuid(), .mail_gid = getegid(),
		.master_uid = geteuid(), .master_gid = getegid(),
		.setgid_gid = getegid(),
	};
	return o;
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	ATF_REQUIRE_MSG(lstat(path, &st) == 0, "%s: %s", path, strerror(errno));
	return st.st_mode & 07777;
}

ATF_TC_WITHOUT_HEAD(queue_tree);
ATF_TC_BODY(queue_tree, tc)
{
	queue_owners_t o = me();
	const queue_dir_spec_t *t;
	size_t n;
	char path[256];

	t = queue_dir_table(&n);
	ATF_REQUIRE(n == 14);
	/* Without fix nothing is created. */
	ATF_CHECK_EQ(queue_dirs_check("a/q", &o, false), -1);
	ATF_CHECK(access("a", F_OK) < 0);
	ATF_REQUIRE_EQ(queue_dirs_check("a/q", &o, true), 0);
	ATF_CHECK_EQ(mode_of("a/q"), 0755);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "a/q/%s", t[i].name);
		ATF_CHECK_EQ_MSG(mode_of(path), t[i].mode, "%s", path);
	}
	ATF_CHECK_EQ(mode_of("a/q/maildrop"), 01730);
	ATF_CHECK_EQ(mode_of("a/q/public"), 0710);
	ATF_CHECK_EQ(mode_of("a/q/active"), 0700);
	ATF_CHECK_EQ(mode_of("a/q/spare"), 0700);
	/* Wrong modes: counted without fix, repaired with it. */
	ATF_REQUIRE(chmod("a/q/active", 0777) == 0);
	ATF_REQUIRE(chmod("a/q/maildrop", 0700) == 0);
	ATF_CHECK_EQ(queue_dirs_check("a/q", &o, false), 2);
	ATF_CHECK_EQ(mode_of("a/q/active"), 0777);
	ATF_CHECK_EQ(queue_dirs_check("a/q", &o, true), 0);
	ATF_CHECK_EQ(mode_of("a/q/active"), 0700);
	ATF_CHECK_EQ(mode_of("a/q/spare"), 0700);
	ATF_CHECK_EQ(mode_of("a/q/maildrop"), 01730);
	/* A symlink is never followed, a file never replaced. */
	ATF_REQUIRE(rmdir("a/q/hold") == 0);
	ATF_REQUIRE(mkdir("outside", 0777) == 0);
	ATF_REQUIRE(chmod("outside", 0777) == 0);
	ATF_REQUIRE(symlink("../../outside", "a/q/hold") == 0);
	ATF_CHECK_EQ(queue_dirs_check("a/q", &o, true), 1);
	ATF_CHECK_EQ(mode_of("outside"), 0777);
	ATF_REQUIRE(unlink("a/q/hold") == 0);
	ATF_REQUIRE(close(open("a/q/hold", O_CREAT | O_WRONLY, 0600)) == 0);
	ATF_CHECK_EQ(queue_dirs_check("a/q", &o, true), 1);
	ATF_CHECK_EQ(mode_of("a/q/hold"), 0600);
}

ATF_TC_WITHOUT_HEAD(pidfile_lock);
ATF_TC_BODY(pidfile_lock, tc)
{
	pid_t holder, child;
	int fd, p[2], st;
	char c;

	ATF_CHECK_EQ(master_running("master.pid"), 0);
	ATF_REQUIRE(pipe(p) == 0);
	child = fork();
	ATF_REQUIRE(child >= 0);
	if (child == 0) {
		int lfd = master_pidfile_lock("master.pid", &holder);
		if (write(p[1], lfd >= 0 ? "y" : "n", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	ATF_REQUIRE_EQ(read(p[0], &c, 1), 1);
	ATF_REQUIRE_EQ(c, 'y');
	/* The lock, not the text, names the running master. */
	ATF_CHECK_EQ(master_running("master.pid"), child);
	fd = master_pidfile_lock("master.pid", &holder);
	ATF_CHECK(fd < 0 && errno == EAGAIN);
	ATF_CHECK_EQ(holder, child);
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	/* Gone: the stale file says nothing; we can take over. */
	ATF_CHECK_EQ(master_running("master.pid"), 0);
	fd = master_pidfile_lock("master.pid", &holder);
	ATF_CHECK(fd >= 0);
	/* A symlink in its place is refused. */
	ATF_REQUIRE(symlink("master.pid", "link.pid") == 0);
	ATF_CHECK(master_pidfile_lock("link.pid", &holder) < 0);
	close(fd);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, trigger_errors);
	ATF_TP_ADD_TC(tp, trigger_fifo);
	ATF_TP_ADD_TC(tp, trigger_stream);
	ATF_TP_ADD_TC(tp, trigger_dgram);
	ATF_TP_ADD_TC(tp, trigger_dgram_full);
	ATF_TP_ADD_TC(tp, wakeup_dgram);
	ATF_TP_ADD_TC(tp, wakeup_stream);
	ATF_TP_ADD_TC(tp, wakeup_fifo);
	ATF_TP_ADD_TC(tp, queue_tree);
	ATF_TP_ADD_TC(tp, pidfile_lock);
	return atf_no_error();
}
