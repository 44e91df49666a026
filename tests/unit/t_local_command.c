/* local/command: delivery to a command: input, clean environment, exit
 * status mapping, output in the status text, time limit with the whole
 * process group killed, identity switch as root. */
#include <atf-c.h>
#include <errno.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>
#include "file.h"
#include "local/command.h"
#include "testutil.h"

static char *env_min[] = { "PATH=/usr/bin:/bin", "RECIPIENT=bob@example.net",
	NULL };

static int run(const char *cmd, const char *text, long limit, lstatus_t *st)
{
	lmsg_t *m = lmsg_from_mem(text, strlen(text));
	lmsg_copy_t c = { LMSG_FROM_LINE | LMSG_RETURN_PATH, "alice@example.org",
	    "bob@example.net", 1767225600 };
	command_opts_t o = { cmd, getuid(), getgid(), NULL, env_min, limit };
	int r = command_deliver(&o, m, &c, st);

	lmsg_free(m);
	return r;
}

static char *slurp(const char *path)
{
	str_t s = STR_INIT;

	if (file_read_all(path, &s, 1 << 24) < 0)
		atf_tc_fail("read %s: %s", path, strerror(errno));
	if (s.buf == NULL)
		str_set(&s, "");
	return str_steal(&s);
}

ATF_TC_WITHOUT_HEAD(input);
ATF_TC_BODY(input, tc)
{
	lstatus_t st = LSTATUS_INIT;
	char cmd[2048], cwd[512], *t;

	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(cmd, sizeof(cmd), "cat > %s/out", cwd);
	ATF_REQUIRE_EQ(run(cmd, "Subject: x\r\n\r\nbody\r\n", 10, &st), 0);
	ATF_CHECK_STREQ(st.dsn, "2.0.0");
	t = slurp("out");
	ATF_CHECK_MSG(strncmp(t, "From alice@example.org ", 23) == 0, "%s", t);
	ATF_CHECK(strstr(t, "\nReturn-Path: <alice@example.org>\n"
	    "Delivered-To: bob@example.net\nSubject: x\n\nbody\n") != NULL);
	free(t);
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(environment);
ATF_TC_BODY(environment, tc)
{
	lstatus_t st = LSTATUS_INIT;
	char cmd[2048], cwd[512], *t;

	setenv("PETREL_SECRET", "leak", 1);
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(cmd, sizeof(cmd), "env > %s/env; umask > %s/umask; pwd > %s/pwd",
	    cwd, cwd, cwd);
	ATF_REQUIRE_EQ(run(cmd, "S: x\n\nb\n", 10, &st), 0);
	t = slurp("env");
	ATF_CHECK_MSG(strstr(t, "PETREL_SECRET") == NULL, "%s", t);
	ATF_CHECK(strstr(t, "RECIPIENT=bob@example.net\n") != NULL);
	ATF_CHECK(strstr(t, "PATH=/usr/bin:/bin\n") != NULL);
	free(t);
	t = slurp("umask");
	ATF_CHECK_STREQ(t, "0077\n");
	free(t);
	/* No working directory given: "/". */
	t = slurp("pwd");
	ATF_CHECK_STREQ(t, "/\n");
	free(t);
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(exit_codes);
ATF_TC_BODY(exit_codes, tc)
{
	static const struct { const char *cmd; const char *dsn; const char *text; }
	cases[] = {
		{ "exit 0", "2.0.0", "delivered to command exit 0" },
		{ "echo try later; exit 75", "4.3.0", "failed with exit status 75: try later" },
		{ "exit 71", "4.3.0", "exit status 71" },
		{ "exit 74", "4.3.0", "exit status 74" },
		{ "echo no such user >&2; exit 67", "5.1.1", "exit status 67: no such user" },
		{ "exit 68", "5.1.2", "exit status 68" },
		{ "exit 77", "5.7.1", "exit status 77" },
		{ "exit 78", "5.3.5", "exit status 78" },
		{ "exit 65", "5.6.0", "exit status 65" },
		{ "exit 76", "5.5.0", "exit status 76" },
		{ "exit 1", "5.3.0", "failed with exit status 1" },
		{ "exit 69", "5.3.0", "exit status 69" },
		{ "kill -9 $$", "5.3.0", "killed by signal 9" },
		{ "printf 'two\\nlines\\n'; exit 1", "5.3.0", "exit status 1: two lines" },
		{ "printf 'bad\\001byte'; exit 1", "5.3.0", ": bad?byte" },
	};
	lstatus_t st = LSTATUS_INIT;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = run(cases[i].cmd, "S: x\n\nb\n", 10, &st);
		ATF_CHECK_EQ_MSG(r, cases[i].dsn[0] == '2' ? 0 : -1, "%s",
		    cases[i].cmd);
		ATF_CHECK_MSG(strcmp(st.dsn, cases[i].dsn) == 0, "%s: %s", cases[i].cmd,
		    st.dsn);
		ATF_CHECK_MSG(strstr(str_cstr(&st.text), cases[i].text) != NULL,
		    "%s: %s", cases[i].cmd, str_cstr(&st.text));
	}
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(output_bounded);
ATF_TC_BODY(output_bounded, tc)
{
	lstatus_t st = LSTATUS_INIT;
	str_t big = STR_INIT;

	/* The command echoes a 4 MB message while we write it: neither side
	 * may block the other; only the start of the output is kept. */
	str_cat(&big, "S: x\n\n");
	for (int i = 0; i < 100000; i++)
		str_cat(&big, "0123456789012345678901234567890123456789\n");
	ATF_CHECK_EQ(run("cat; exit 1", big.buf, 60, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "5.3.0");
	ATF_CHECK(str_len(&st.text) < 1200);
	ATF_CHECK(strstr(str_cstr(&st.text), "...") != NULL);
	/* A command that takes nothing and succeeds: fine. */
	ATF_CHECK_EQ(run("exit 0", big.buf, 60, &st), 0);
	ATF_CHECK_EQ(run("head -c 10 > /dev/null", big.buf, 60, &st), 0);
	str_release(&big);
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(time_limit);
ATF_TC_BODY(time_limit, tc)
{
	lstatus_t st = LSTATUS_INIT;
	char cmd[2048], cwd[512];
	time_t t0 = time(NULL);
	long pid;

	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	/* A background process in the command's group is killed too. */
	snprintf(cmd, sizeof(cmd), "sleep 60 & echo $! > %s/bg; sleep 60", cwd);
	ATF_CHECK_EQ(run(cmd, "S: x\n\nb\n", 1, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "5.3.0");
	ATF_CHECK_MSG(strstr(str_cstr(&st.text), "time limit (1 s) exceeded") != NULL,
	    "%s", str_cstr(&st.text));
	ATF_CHECK(time(NULL) - t0 < 30);
	char *t = slurp("bg");
	pid = atol(t);
	free(t);
	ATF_REQUIRE(pid > 0);
	for (int i = 0; i < 50 && kill((pid_t)pid, 0) == 0; i++)
		usleep(100000);
	ATF_CHECK_MSG(kill((pid_t)pid, 0) < 0, "background process %ld alive", pid);
	/* A command that does not read a large input and hangs: the time
	 * limit applies while writing too. */
	str_t big = STR_INIT;
	str_cat(&big, "S: x\n\n");
	for (int i = 0; i < 100000; i++)
		str_cat(&big, "0123456789012345678901234567890123456789\n");
	ATF_CHECK_EQ(run("sleep 60", big.buf, 1, &st), -1);
	ATF_CHECK(strstr(str_cstr(&st.text), "time limit") != NULL);
	str_release(&big);
	lstatus_free(&st);
}

ATF_TC(identity);
ATF_TC_HEAD(identity, tc)
{
	atf_tc_set_md_var(tc, "descr", "as root, the command runs with the given uid and gid only");
	atf_tc_set_md_var(tc, "require.user", "root");
}
ATF_TC_BODY(identity, tc)
{
	struct passwd *pw = getpwnam("nobody");
	lstatus_t st = LSTATUS_INIT;
	char want[100];

	if (pw == NULL)
		atf_tc_skip("no nobody account");
	lmsg_t *m = lmsg_from_mem("S: x\n\nb\n", 8);
	lmsg_copy_t c = { 0, "a@b", NULL, 0 };
	command_opts_t o = { "echo $(id -u) $(id -g) $(id -G); exit 1",
	    pw->pw_uid, pw->pw_gid, "/", env_min, 10 };
	ATF_CHECK_EQ(command_deliver(&o, m, &c, &st), -1);
	snprintf(want, sizeof(want), ": %lu %lu %lu", (unsigned long)pw->pw_uid,
	    (unsigned long)pw->pw_gid, (unsigned long)pw->pw_gid);
	ATF_CHECK_MSG(strstr(str_cstr(&st.text), want) != NULL, "%s",
	    str_cstr(&st.text));
	/* We are still root. */
	ATF_CHECK_EQ(geteuid(), 0);
	lmsg_free(m);
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(exit_status_mapping);
ATF_TC_BODY(exit_status_mapping, tc)
{
	lstatus_t st = LSTATUS_INIT;

	command_exit_status(&st, 0, "command x", "");
	ATF_CHECK_STREQ(st.dsn, "2.0.0");
	ATF_CHECK_STREQ(str_cstr(&st.text), "delivered to command x");
	command_exit_status(&st, EX_TEMPFAIL << 8, "command x", "busy");
	ATF_CHECK_STREQ(st.dsn, "4.3.0");
	ATF_CHECK_STREQ(str_cstr(&st.text), "command x failed with exit status 75: busy");
	lstatus_free(&st);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, input);
	ATF_TP_ADD_TC(tp, environment);
	ATF_TP_ADD_TC(tp, exit_codes);
	ATF_TP_ADD_TC(tp, output_bounded);
	ATF_TP_ADD_TC(tp, time_limit);
	ATF_TP_ADD_TC(tp, identity);
	ATF_TP_ADD_TC(tp, exit_status_mapping);
	return atf_no_error();
}
