/* Unit tests for libutil/log: levels, file output format, sanitising of
 * control characters, fatal and panic exits. */
#include <atf-c.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "log.h"
#include "str.h"
#include "file.h"

static void read_log(str_t *out)
{
	str_reset(out);
	ATF_REQUIRE(file_read_all("maillog", out, 1 << 20) == 0);
}

ATF_TC_WITHOUT_HEAD(file_format_and_levels);
ATF_TC_BODY(file_format_and_levels, tc)
{
	str_t text = STR_INIT;
	log_init("petrel/test");
	ATF_REQUIRE(log_to_file("maillog") == 0);
	log_verbose = 0;
	log_debug("hidden %d", 1);
	log_info("QUEUEID: removed");
	log_warning("disk %s", "full");
	log_error("bad thing");
	log_verbose = 1;
	log_debug("shown");
	log_verbose = 0;
	log_to_stderr();
	read_log(&text);
	const char *t = str_cstr(&text);
	ATF_CHECK(strstr(t, "hidden") == NULL);
	ATF_CHECK(strstr(t, "petrel/test[") != NULL);
	ATF_CHECK(strstr(t, "]: QUEUEID: removed\n") != NULL);
	ATF_CHECK(strstr(t, "]: warning: disk full\n") != NULL);
	ATF_CHECK(strstr(t, "]: error: bad thing\n") != NULL);
	ATF_CHECK(strstr(t, "]: shown\n") != NULL);
	/* Each line starts with a syslog-style date: "Mon dd hh:mm:ss host". */
	int lines = 0;
	for (const char *p = t; *p; p = strchr(p, '\n') + 1) {
		ATF_CHECK(p[3] == ' ' && p[6] == ' ' && p[9] == ':' && p[12] == ':');
		lines++;
	}
	ATF_CHECK_EQ(lines, 4);
	str_release(&text);
}

/* Untrusted text must not be able to forge a second log line. */
ATF_TC_WITHOUT_HEAD(control_characters);
ATF_TC_BODY(control_characters, tc)
{
	str_t text = STR_INIT;
	ATF_REQUIRE(log_to_file("maillog") == 0);
	log_info("from=<%s>", "evil\nFeb  1 00:00:00 host postfix: fake\r\x7f");
	log_info("ends with a newline\n");
	log_to_stderr();
	read_log(&text);
	ATF_CHECK(strstr(str_cstr(&text), "from=<evil?Feb  1 00:00:00 host postfix: fake?" "?>\n") != NULL);
	ATF_CHECK(strstr(str_cstr(&text), "]: ends with a newline\n") != NULL);
	str_release(&text);
}

static void hook(void)
{
	log_info("hook ran");
}

ATF_TC_WITHOUT_HEAD(fatal_and_panic);
ATF_TC_BODY(fatal_and_panic, tc)
{
	int status;
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		if (log_to_file("maillog") < 0)
			_exit(99);
		log_set_fatal_hook(hook);
		log_fatal("cannot go on: %s", "config");
	}
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	ATF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);

	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		if (log_to_file("maillog") < 0)
			_exit(99);
		log_panic("invariant broken");
	}
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	ATF_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);

	str_t text = STR_INIT;
	read_log(&text);
	const char *t = str_cstr(&text);
	ATF_CHECK(strstr(t, "fatal: cannot go on: config\n") != NULL);
	ATF_CHECK(strstr(t, "hook ran\n") != NULL);
	ATF_CHECK(strstr(t, "panic: invariant broken\n") != NULL);
	str_release(&text);
}

ATF_TC_WITHOUT_HEAD(bad_log_file);
ATF_TC_BODY(bad_log_file, tc)
{
	ATF_CHECK(log_to_file("no/such/dir/maillog") == -1);
}

/* The process id is looked up once per process, not per line: a child
 * made by fork() after the parent logged must still log its own. */
ATF_TC_WITHOUT_HEAD(pid_after_fork);
ATF_TC_BODY(pid_after_fork, tc)
{
	str_t text = STR_INIT;
	char want[64];
	int status;
	pid_t pid;

	log_init("petrel/test");
	ATF_REQUIRE(log_to_file("maillog") == 0);
	log_info("parent line");
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		log_info("child line");
		_exit(0);
	}
	ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
	log_to_stderr();
	read_log(&text);
	snprintf(want, sizeof(want), "[%ld]: child line\n", (long)pid);
	ATF_CHECK_MSG(strstr(str_cstr(&text), want) != NULL, "no '%s' in:\n%s",
	    want, str_cstr(&text));
	snprintf(want, sizeof(want), "[%ld]: parent line\n", (long)getpid());
	ATF_CHECK(strstr(str_cstr(&text), want) != NULL);
	str_release(&text);
}

/* log_relay_to: each line is one datagram to the relay and nothing goes
 * into the file; once the reader is gone (master killed) the lines go
 * into the file the process opened itself. */
ATF_TC_WITHOUT_HEAD(relay_and_fallback);
ATF_TC_BODY(relay_and_fallback, tc)
{
	str_t text = STR_INIT;
	char buf[8192];
	int sv[2];
	ssize_t n;

	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	log_init("petrel/test");
	ATF_REQUIRE(log_to_file("maillog") == 0);
	log_relay_to(sv[1]);
	log_info("first %d", 1);
	log_warning("second");
	n = recv(sv[0], buf, sizeof(buf) - 1, MSG_DONTWAIT);
	ATF_REQUIRE(n > 0);
	buf[n] = 0;
	ATF_CHECK(strstr(buf, "petrel/test[") != NULL);
	ATF_CHECK(strstr(buf, "]: first 1\n") != NULL);
	ATF_CHECK(strchr(buf, '\n') == buf + n - 1);	/* one line a datagram */
	n = recv(sv[0], buf, sizeof(buf) - 1, MSG_DONTWAIT);
	ATF_REQUIRE(n > 0);
	buf[n] = 0;
	ATF_CHECK(strstr(buf, "]: warning: second\n") != NULL);
	read_log(&text);
	ATF_CHECK_EQ(str_len(&text), 0);
	/* The reader goes away. */
	close(sv[0]);
	log_info("after master");
	read_log(&text);
	ATF_CHECK(strstr(str_cstr(&text), "]: after master\n") != NULL);
	log_relay_to(-1);
	close(sv[1]);
	log_to_stderr();
	str_release(&text);
}

/* log_reopen: after the file was renamed the next line is in a new file
 * of the same name; log_write_raw appends bytes as they are. */
ATF_TC_WITHOUT_HEAD(reopen_and_raw);
ATF_TC_BODY(reopen_and_raw, tc)
{
	str_t text = STR_INIT;

	log_init("petrel/test");
	ATF_REQUIRE(log_to_file("maillog") == 0);
	log_info("before");
	ATF_REQUIRE(rename("maillog", "maillog.old") == 0);
	log_info("still old");
	ATF_REQUIRE(log_reopen() == 0);
	ATF_REQUIRE(log_file_fd() >= 0);
	log_info("after");
	log_write_raw("relayed line\n", 13);
	read_log(&text);
	ATF_CHECK(strstr(str_cstr(&text), "before") == NULL);
	ATF_CHECK(strstr(str_cstr(&text), "still old") == NULL);
	ATF_CHECK(strstr(str_cstr(&text), "]: after\nrelayed line\n") != NULL);
	str_reset(&text);
	ATF_REQUIRE(file_read_all("maillog.old", &text, 1 << 20) == 0);
	ATF_CHECK(strstr(str_cstr(&text), "]: before\n") != NULL);
	ATF_CHECK(strstr(str_cstr(&text), "]: still old\n") != NULL);
	log_to_stderr();
	ATF_CHECK_EQ(log_file_fd(), -1);
	ATF_CHECK_EQ(log_reopen(), 0);	/* not logging to a file: nothing */
	str_release(&text);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, file_format_and_levels);
	ATF_TP_ADD_TC(tp, control_characters);
	ATF_TP_ADD_TC(tp, fatal_and_panic);
	ATF_TP_ADD_TC(tp, bad_log_file);
	ATF_TP_ADD_TC(tp, pid_after_fork);
	ATF_TP_ADD_TC(tp, relay_and_fallback);
	ATF_TP_ADD_TC(tp, reopen_and_raw);
	return atf_no_error();
}
