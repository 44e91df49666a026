/* Unit tests for libutil/fdutil: stdio repair and closing before exec. */
#include <atf-c.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "fdutil.h"

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* Runs body in a child; the child's exit status is the number of failed
 * checks (descriptor games must not disturb the test process). */
static void in_child(int (*body)(void))
{
	int st;
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(body());
	ATF_REQUIRE(waitpid(pid, &st, 0) == pid);
	ATF_CHECK(WIFEXITED(st));
	ATF_CHECK_EQ(WEXITSTATUS(st), 0);
}

static int stdio_body(void)
{
	int bad = 0;
	close(0);
	close(2);
	fd_sane_stdio();
	bad += !is_open(0);
	bad += !is_open(1);
	bad += !is_open(2);
	/* The next descriptor cannot be one of 0-2. */
	int fd = open("/dev/null", O_RDONLY);
	bad += fd < 3;
	return bad;
}

ATF_TC_WITHOUT_HEAD(sane_stdio);
ATF_TC_BODY(sane_stdio, tc)
{
	in_child(stdio_body);
}

static int close_body(void)
{
	int bad = 0, p[2], q[2];
	if (pipe(p) < 0 || pipe(q) < 0)
		return 100;
	int keep = dup2(p[0], 10), gone1 = dup2(p[1], 11), gone2 = dup2(q[0], 200);
	fd_close_from(11);
	bad += !is_open(keep);
	bad += is_open(gone1);
	bad += is_open(gone2);
	bad += !is_open(2);
	return bad;
}

ATF_TC_WITHOUT_HEAD(close_from);
ATF_TC_BODY(close_from, tc)
{
	in_child(close_body);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, sane_stdio);
	ATF_TP_ADD_TC(tp, close_from);
	return atf_no_error();
}
