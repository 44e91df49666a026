/* local/mailbox: mbox appends (creation, locking, refusal of links and
 * odd files, size limit, truncation back after a failed write) and
 * Maildir deliveries (tmp -> new, unique names, clean-up on failure). */
#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "file.h"
#include "local/mailbox.h"
#include "testutil.h"

static const char *MSG = "Subject: hello\n\nFrom me\nbody\n";

static int deliver_mbox(const char *path, const mbox_opts_t *o,
    const char *text, lstatus_t *st)
{
	lmsg_t *m = lmsg_from_mem(text, strlen(text));
	lmsg_copy_t c = { LMSG_FROM_LINE | LMSG_QUOTE_FROM | LMSG_BLANK_END
	    | LMSG_RETURN_PATH, "alice@example.org", "bob@example.net", 0 };
	int r = mbox_deliver(path, o, m, &c, st);

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

static off_t size_of(const char *path)
{
	struct stat sb;

	ATF_REQUIRE(stat(path, &sb) == 0);
	return sb.st_size;
}

static int count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ATF_REQUIRE(d != NULL);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

ATF_TC_WITHOUT_HEAD(mbox_create_append);
ATF_TC_BODY(mbox_create_append, tc)
{
	mbox_opts_t o = MBOX_OPTS_INIT;
	lstatus_t st = LSTATUS_INIT;
	struct stat sb;
	char *text;

	ATF_REQUIRE_EQ(deliver_mbox("mbox", &o, MSG, &st), 0);
	ATF_CHECK_STREQ(st.dsn, "2.0.0");
	ATF_CHECK_STREQ(str_cstr(&st.text), "delivered to mailbox");
	ATF_REQUIRE(stat("mbox", &sb) == 0);
	ATF_CHECK_EQ(sb.st_mode & 07777, 0600);
	ATF_REQUIRE_EQ(deliver_mbox("mbox", &o, "Subject: two\n\nx", &st), 0);
	text = slurp("mbox");
	/* Two messages, each "From " line first, headers in front, body
	 * quoted, a blank line at the end; no lock file left. */
	ATF_CHECK_MSG(strncmp(text, "From alice@example.org ", 23) == 0, "%s", text);
	ATF_CHECK(strstr(text, "\nReturn-Path: <alice@example.org>\n"
	    "Delivered-To: bob@example.net\nSubject: hello\n\n>From me\nbody\n\n"
	    "From alice@example.org ") != NULL);
	ATF_CHECK(strstr(text, "Subject: two\n\nx\n\n") != NULL);
	ATF_CHECK(text[strlen(text) - 1] == '\n' && text[strlen(text) - 2] == '\n');
	ATF_CHECK(access("mbox.lock", F_OK) < 0);
	free(text);
	lstatus_free(&st);
}

/* Fails a delivery half-way with EFBIG: RLIMIT_FSIZE lets the file grow
 * by only some bytes (a disk filling up).  The file must be exactly as
 * before. */
ATF_TC_WITHOUT_HEAD(mbox_truncate_on_failure);
ATF_TC_BODY(mbox_truncate_on_failure, tc)
{
	mbox_opts_t o = MBOX_OPTS_INIT;
	lstatus_t st = LSTATUS_INIT;
	str_t big = STR_INIT;
	char *before, *after;
	pid_t pid;
	int ws;

	ATF_REQUIRE_EQ(deliver_mbox("mbox", &o, MSG, &st), 0);
	before = slurp("mbox");
	str_cat(&big, "Subject: big\n\n");
	for (int i = 0; i < 200000; i++)
		str_cat(&big, "0123456789012345678901234567890123456789\n");
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { (rlim_t)size_of("mbox") + 100000,
		    (rlim_t)size_of("mbox") + 100000 };
		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
			_exit(90);
		if (deliver_mbox("mbox", &o, big.buf, &st) == 0)
			_exit(91);
		/* EFBIG: a permanent "mailbox full" */
		_exit(strcmp(st.dsn, "5.2.2") == 0
		    && strstr(str_cstr(&st.text), "mailbox full") != NULL ? 0 : 92);
	}
	ATF_REQUIRE(waitpid(pid, &ws, 0) == pid);
	ATF_REQUIRE_MSG(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "child: %d", ws);
	after = slurp("mbox");
	ATF_CHECK_STREQ(after, before);
	/* And the mailbox still takes mail afterwards. */
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), 0);
	free(before);
	free(after);
	str_release(&big);
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(mbox_size_limit);
ATF_TC_BODY(mbox_size_limit, tc)
{
	mbox_opts_t o = MBOX_OPTS_INIT;
	lstatus_t st = LSTATUS_INIT;
	off_t before;

	ATF_REQUIRE_EQ(deliver_mbox("mbox", &o, MSG, &st), 0);
	before = size_of("mbox");
	/* Room for less than the message: refused, nothing left behind. */
	o.size_limit = (long)before + 20;
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "5.2.2");
	ATF_CHECK_EQ(size_of("mbox"), before);
	/* Already at the limit. */
	o.size_limit = (long)before;
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "5.2.2");
	ATF_CHECK(strstr(str_cstr(&st.text), "mailbox_size_limit") != NULL);
	/* Enough room. */
	o.size_limit = (long)before * 3;
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), 0);
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(mbox_refuses_odd_files);
ATF_TC_BODY(mbox_refuses_odd_files, tc)
{
	mbox_opts_t o = MBOX_OPTS_INIT;
	lstatus_t st = LSTATUS_INIT;

	put_file("target", "precious\n");
	ATF_REQUIRE(symlink("target", "link") == 0);
	ATF_CHECK_EQ(deliver_mbox("link", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "4.2.0");
	ATF_CHECK(strstr(str_cstr(&st.text), "symbolic link") != NULL);

	ATF_REQUIRE(link("target", "hard") == 0);
	ATF_CHECK_EQ(deliver_mbox("hard", &o, MSG, &st), -1);
	ATF_CHECK(strstr(str_cstr(&st.text), "hard links") != NULL);

	/* A FIFO: refused without blocking in open (with no reader the
	 * open itself fails, ENXIO). */
	ATF_REQUIRE(mkfifo("fifo", 0600) == 0);
	ATF_CHECK_EQ(deliver_mbox("fifo", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "4.2.0");

	ATF_REQUIRE(mkdir("dir", 0700) == 0);
	ATF_CHECK_EQ(deliver_mbox("dir", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "4.2.0");

	/* Someone else's file. */
	unlink("hard");
	o.owner = getuid() + 1;
	ATF_CHECK_EQ(deliver_mbox("target", &o, MSG, &st), -1);
	ATF_CHECK(strstr(str_cstr(&st.text), "not by the recipient") != NULL);

	char *t = slurp("target");
	ATF_CHECK_STREQ(t, "precious\n");
	free(t);
	/* Missing directory: deferred. */
	o.owner = (uid_t)-1;
	ATF_CHECK_EQ(deliver_mbox("nodir/mbox", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "4.2.0");
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(mbox_dotlock);
ATF_TC_BODY(mbox_dotlock, tc)
{
	mbox_opts_t o = MBOX_OPTS_INIT;
	lstatus_t st = LSTATUS_INIT;
	struct timeval old[2] = { { 1000, 0 }, { 1000, 0 } };

	o.lock_wait = 1;
	put_file("mbox.lock", "");
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "4.2.0");
	ATF_CHECK(strstr(str_cstr(&st.text), "lock file is busy") != NULL);
	ATF_CHECK(access("mbox", F_OK) < 0);
	/* Someone else's lock stays. */
	ATF_CHECK(access("mbox.lock", F_OK) == 0);
	/* A stale lock is broken. */
	ATF_REQUIRE(utimes("mbox.lock", old) == 0);
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), 0);
	ATF_CHECK(access("mbox.lock", F_OK) < 0);
	/* Without dot-locking the lock file is not looked at. */
	put_file("mbox.lock", "");
	o.dotlock = false;
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), 0);
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(mbox_fcntl_lock);
ATF_TC_BODY(mbox_fcntl_lock, tc)
{
	mbox_opts_t o = MBOX_OPTS_INIT;
	lstatus_t st = LSTATUS_INIT;
	int p[2], fd;
	char c;
	pid_t pid;

	put_file("mbox", "");
	ATF_REQUIRE(pipe(p) == 0);
	pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		fd = open("mbox", O_RDWR);
		if (fd < 0 || file_lock(fd, FILE_LOCK_EXCLUSIVE) < 0)
			_exit(1);
		(void)write(p[1], "x", 1);
		sleep(30);
		_exit(0);
	}
	ATF_REQUIRE(read(p[0], &c, 1) == 1);
	o.lock_wait = 1;
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "4.2.0");
	ATF_CHECK(strstr(str_cstr(&st.text), "locked by another process") != NULL);
	ATF_CHECK_EQ(size_of("mbox"), 0);
	/* The dot-lock taken for the attempt is gone again. */
	ATF_CHECK(access("mbox.lock", F_OK) < 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ATF_CHECK_EQ(deliver_mbox("mbox", &o, MSG, &st), 0);
	lstatus_free(&st);
}

static int deliver_maildir(const char *dir, long limit, lstatus_t *st)
{
	lmsg_t *m = lmsg_from_mem(MSG, strlen(MSG));
	lmsg_copy_t c = { LMSG_RETURN_PATH, "alice@example.org",
	    "bob@example.net", 0 };
	int r = maildir_deliver(dir, limit, m, &c, st);

	lmsg_free(m);
	return r;
}

ATF_TC_WITHOUT_HEAD(maildir);
ATF_TC_BODY(maildir, tc)
{
	lstatus_t st = LSTATUS_INIT;
	DIR *d;
	struct dirent *e;
	int n = 0;

	unsigned long before = mailbox_fsync_count;
	ATF_REQUIRE_EQ(deliver_maildir("home/Maildir/", 0, &st), 0);
	/* The file, then new/ (no group commit state: its own fsync). */
	ATF_CHECK_EQ(mailbox_fsync_count - before, 2);
	ATF_CHECK_STREQ(st.dsn, "2.0.0");
	ATF_CHECK_STREQ(str_cstr(&st.text), "delivered to maildir");
	ATF_REQUIRE_EQ(deliver_maildir("home/Maildir", 0, &st), 0);
	ATF_CHECK_EQ(count_files("home/Maildir/tmp"), 0);
	ATF_CHECK_EQ(count_files("home/Maildir/cur"), 0);
	ATF_REQUIRE_EQ(count_files("home/Maildir/new"), 2);
	d = opendir("home/Maildir/new");
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[600];
		snprintf(path, sizeof(path), "home/Maildir/new/%s", e->d_name);
		char *t = slurp(path);
		/* No From line, no quoting: a plain message. */
		ATF_CHECK_STREQ(t, "Return-Path: <alice@example.org>\n"
		    "Delivered-To: bob@example.net\n"
		    "Subject: hello\n\nFrom me\nbody\n");
		free(t);
		ATF_CHECK(strchr(e->d_name, '/') == NULL);
		ATF_CHECK(strchr(e->d_name, ':') == NULL);
		n++;
	}
	closedir(d);
	ATF_CHECK_EQ(n, 2);
	/* Over the size limit: nothing delivered, nothing left in tmp. */
	ATF_CHECK_EQ(deliver_maildir("home/Maildir", 20, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "5.2.2");
	ATF_CHECK_EQ(count_files("home/Maildir/tmp"), 0);
	ATF_CHECK_EQ(count_files("home/Maildir/new"), 2);
	lstatus_free(&st);
}

ATF_TC(unwritable);
ATF_TC_HEAD(unwritable, tc)
{
	atf_tc_set_md_var(tc, "descr", "read-only directories defer (4.2.0)");
	atf_tc_set_md_var(tc, "require.user", "unprivileged");
}
ATF_TC_BODY(unwritable, tc)
{
	mbox_opts_t o = MBOX_OPTS_INIT;
	lstatus_t st = LSTATUS_INIT;

	ATF_REQUIRE(mkdir("ro", 0555) == 0);
	ATF_CHECK_EQ(deliver_mbox("ro/mbox", &o, MSG, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "4.2.0");
	ATF_CHECK(strstr(str_cstr(&st.text), "Permission denied") != NULL);

	ATF_REQUIRE_EQ(deliver_maildir("md", 0, &st), 0);
	ATF_REQUIRE(chmod("md/new", 0555) == 0);
	ATF_CHECK_EQ(deliver_maildir("md", 0, &st), -1);
	ATF_CHECK_STREQ(st.dsn, "4.2.0");
	ATF_CHECK_EQ(count_files("md/tmp"), 0);
	ATF_CHECK_EQ(count_files("md/new"), 1);
	/* Once the problem is gone, mail gets through. */
	ATF_REQUIRE(chmod("md/new", 0700) == 0);
	ATF_CHECK_EQ(deliver_maildir("md", 0, &st), 0);
	ATF_CHECK_EQ(count_files("md/new"), 2);
	/* A spool file the user can write in a directory they cannot:
	 * no dot-lock possible, the fcntl lock does. */
	put_file("ro2-mbox", "");
	ATF_REQUIRE(mkdir("ro2", 0700) == 0);
	ATF_REQUIRE(rename("ro2-mbox", "ro2/mbox") == 0);
	ATF_REQUIRE(chmod("ro2", 0555) == 0);
	ATF_CHECK_EQ(deliver_mbox("ro2/mbox", &o, MSG, &st), 0);
	ATF_CHECK(size_of("ro2/mbox") > 0);
	chmod("ro2", 0700);
	chmod("ro", 0700);
	lstatus_free(&st);
}

ATF_TC_WITHOUT_HEAD(error_codes);
ATF_TC_BODY(error_codes, tc)
{
	lstatus_t st = LSTATUS_INIT;

	mailbox_error_status(&st, ENOSPC, "append to", "/m");
	ATF_CHECK_STREQ(st.dsn, "4.2.2");
	ATF_CHECK(strstr(str_cstr(&st.text), "mailbox full") != NULL);
#ifdef EDQUOT
	mailbox_error_status(&st, EDQUOT, "append to", "/m");
	ATF_CHECK_STREQ(st.dsn, "4.2.2");
#endif
	mailbox_error_status(&st, EFBIG, "append to", "/m");
	ATF_CHECK_STREQ(st.dsn, "5.2.2");
	mailbox_error_status(&st, EACCES, "open", "/m");
	ATF_CHECK_STREQ(st.dsn, "4.2.0");
	ATF_CHECK(strstr(str_cstr(&st.text), "cannot open /m") != NULL);
	mailbox_error_status(&st, EROFS, "open", "/m");
	ATF_CHECK_STREQ(st.dsn, "4.2.0");
	lstatus_free(&st);
}


/* The three directories are made for the first delivery (home/ itself
 * included), and made again if one went missing; a Maildir that is
 * complete costs no mkdir at all. */
ATF_TC_WITHOUT_HEAD(maildir_directories);
ATF_TC_BODY(maildir_directories, tc)
{
	lstatus_t st = LSTATUS_INIT;
	struct stat sb;

	ATF_REQUIRE_EQ(deliver_maildir("fresh/deep/Maildir", 0, &st), 0);
	ATF_CHECK(stat("fresh/deep/Maildir/cur", &sb) == 0 && S_ISDIR(sb.st_mode));
	ATF_CHECK_EQ(count_files("fresh/deep/Maildir/new"), 1);
	/* new/ gone (tmp/ still there): made again at the link. */
	ATF_REQUIRE(system("rm -rf fresh/deep/Maildir/new") == 0);
	ATF_REQUIRE_EQ(deliver_maildir("fresh/deep/Maildir", 0, &st), 0);
	ATF_CHECK_EQ(count_files("fresh/deep/Maildir/new"), 1);
	ATF_CHECK_EQ(count_files("fresh/deep/Maildir/tmp"), 0);
	/* tmp/ gone: made again before the write. */
	ATF_REQUIRE(system("rm -rf fresh/deep/Maildir/tmp") == 0);
	ATF_REQUIRE_EQ(deliver_maildir("fresh/deep/Maildir", 0, &st), 0);
	ATF_CHECK_EQ(count_files("fresh/deep/Maildir/new"), 2);
	/* A Maildir that cannot be made: a clear error. */
	ATF_REQUIRE(system("mkdir -p blocked && : > blocked/Maildir") == 0);
	ATF_CHECK_EQ(deliver_maildir("blocked/Maildir", 0, &st), -1);
	ATF_CHECK(strlen(str_cstr(&st.text)) > 0);
	lstatus_free(&st);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, mbox_create_append);
	ATF_TP_ADD_TC(tp, mbox_truncate_on_failure);
	ATF_TP_ADD_TC(tp, mbox_size_limit);
	ATF_TP_ADD_TC(tp, mbox_refuses_odd_files);
	ATF_TP_ADD_TC(tp, mbox_dotlock);
	ATF_TP_ADD_TC(tp, mbox_fcntl_lock);
	ATF_TP_ADD_TC(tp, maildir);
	ATF_TP_ADD_TC(tp, maildir_directories);
	ATF_TP_ADD_TC(tp, unwritable);
	ATF_TP_ADD_TC(tp, error_codes);
	return atf_no_error();
}
