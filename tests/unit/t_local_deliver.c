/* local/deliver: one recipient from start to end, as a private instance
 * does it (users are directories under local_mail_root, everything runs
 * as the test's user): mailboxes, aliases, .forward (and its permission
 * checks), :include:, commands, files, restrictions, unknown users, loops,
 * table failures, the $name expansion.  Forwarding to addresses needs
 * cleanup and is tested end to end (t_e2e); here only its failure. */
#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dict.h"
#include "file.h"
#include "aliases.h"
#include "local/local.h"
#include "pconfig.h"
#include "testutil.h"

static char cwd[1024];

static void setup(void)
{
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	ATF_REQUIRE(mkdir("mail", 0755) == 0);
	ATF_REQUIRE(mkdir("mail/alice", 0700) == 0);
	ATF_REQUIRE(mkdir("mail/bob", 0700) == 0);
	ATF_REQUIRE(mkdir("spool", 0755) == 0);
}

/* Builds hash:aliases from aliases(5) text, as postalias does. */
static void aliases(const char *text)
{
	char spec[1200], *copy = strdup(text), *save = NULL;
	str_t err = STR_INIT, name = STR_INIT;
	dict_writer_t *w;

	snprintf(spec, sizeof(spec), "hash:%s/aliases", cwd);
	ATF_REQUIRE((w = dict_writer_open(spec, 0, &err)) != NULL);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *v;
		ATF_REQUIRE_MSG(alias_entry_parse(l, &name, &v, &err) == 0, "%s",
		    str_cstr(&err));
		ATF_REQUIRE(dict_writer_put(w, str_cstr(&name), v, &err) == DICT_PUT_NEW);
	}
	ATF_REQUIRE(dict_writer_commit(w, &err) == 0);
	free(copy);
	str_release(&err);
	str_release(&name);
}

static char *path(const char *rel)
{
	static char buf[8][1200];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", cwd, rel);
	return buf[i];
}

typedef struct over {
	const char *home_mailbox;
	const char *local_recipient_maps;
	const char *mailbox_command;
	const char *alias_maps;
	int allow_commands, allow_files;
	const char *luser_relay;
} over_t;

static local_t *mk(const over_t *ov)
{
	char amaps[1200], rmaps[1300], fwd[200];
	local_conf_t c = { 0 };
	str_t err = STR_INIT;
	local_t *l;

	snprintf(amaps, sizeof(amaps), "hash:%s/aliases", cwd);
	snprintf(rmaps, sizeof(rmaps), "unix:passwd.byname %s", amaps);
	snprintf(fwd, sizeof(fwd), "%s",
	    "$home/.forward${recipient_delimiter}${extension}, $home/.forward");
	c.alias_maps = (char *)(ov && ov->alias_maps ? ov->alias_maps : amaps);
	c.local_recipient_maps = (char *)(ov && ov->local_recipient_maps
	    ? ov->local_recipient_maps : rmaps);
	c.recipient_delimiter = "+";
	c.home_mailbox = (char *)(ov && ov->home_mailbox ? ov->home_mailbox : "");
	c.mail_spool_directory = path("spool");
	c.mailbox_command = (char *)(ov && ov->mailbox_command
	    ? ov->mailbox_command : "");
	c.forward_path = fwd;
	c.luser_relay = (char *)(ov && ov->luser_relay ? ov->luser_relay : "");
	c.mail_root = path("mail");
	c.default_privs = "nobody";
	c.mydestination = "localhost, example.test";
	c.myorigin = "example.test";
	c.cleanup_service = path("no-cleanup-here");
	c.allow_commands = ov && ov->allow_commands >= 0 && ov->allow_commands != 0
	    ? ov->allow_commands : LOCAL_CLASS_ALIAS | LOCAL_CLASS_FORWARD;
	if (ov && ov->allow_commands < 0)
		c.allow_commands = 0;
	c.allow_files = ov && ov->allow_files > 0 ? ov->allow_files
	    : LOCAL_CLASS_ALIAS | LOCAL_CLASS_FORWARD;
	c.prepend_delivered = LOCAL_DT_COMMAND | LOCAL_DT_FILE | LOCAL_DT_FORWARD;
	c.command_time_limit = 10;
	c.ipc_timeout = 5;
	c.lock_dotlock = c.lock_fcntl = true;
	c.lock_wait = 1;
	c.owner_request_special = true;
	l = local_new(&c, &err);
	ATF_REQUIRE_MSG(l != NULL, "%s", str_cstr(&err));
	str_release(&err);
	return l;
}

static const char *MSG = "From: alice@example.org\nSubject: test\n\nhello\n";

static dlv_action_t dlv(local_t *l, const char *text, const char *rcpt,
    lstatus_t *st)
{
	lmsg_t *m = lmsg_from_mem(text, strlen(text));
	local_msg_t msg = { "QID1", "sender@example.org", "", 0, m };
	dlv_rcpt_t r = { (char *)rcpt, "", "", 0, 0 };
	dlv_action_t a = local_deliver(l, &msg, &r, st);

	lmsg_free(m);
	return a;
}

#define CHECK_DLV(L_, R_, A_, D_, T_) do { \
	lstatus_t _st = LSTATUS_INIT; \
	dlv_action_t _a = dlv((L_), MSG, (R_), &_st); \
	ATF_CHECK_MSG(_a == (A_), "%s: action %s (%s %s)", (R_), \
	    dlv_action_name(_a), _st.dsn, str_cstr(&_st.text)); \
	ATF_CHECK_MSG(strcmp(_st.dsn, (D_)) == 0, "%s: dsn %s (%s)", (R_), \
	    _st.dsn, str_cstr(&_st.text)); \
	ATF_CHECK_MSG(strstr(str_cstr(&_st.text), (T_)) != NULL, \
	    "%s: text \"%s\", want \"%s\"", (R_), str_cstr(&_st.text), (T_)); \
	lstatus_free(&_st); \
} while (0)

static char *slurp(const char *p)
{
	str_t s = STR_INIT;

	if (file_read_all(p, &s, 1 << 24) < 0)
		return strdup("");
	if (s.buf == NULL)
		str_set(&s, "");
	return str_steal(&s);
}

static int count(const char *p, const char *needle)
{
	char *t = slurp(p);
	int n = 0;

	for (char *q = t; (q = strstr(q, needle)) != NULL; q++)
		n++;
	free(t);
	return n;
}

static int files_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

#define PRIVATE_TC(name, what) \
	ATF_TC(name); \
	ATF_TC_HEAD(name, tc) \
	{ \
		atf_tc_set_md_var(tc, "descr", what); \
		atf_tc_set_md_var(tc, "require.user", "unprivileged"); \
	} \
	ATF_TC_BODY(name, tc)

PRIVATE_TC(mailbox_spool, "the spool mbox: headers, case, extensions")
{
	setup();
	aliases("postmaster: alice");
	local_t *l = mk(NULL);
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	CHECK_DLV(l, "ALICE+news@Example.TEST", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	ATF_CHECK_EQ(count("spool/alice", "\nFrom: alice@example.org\n"), 2);
	ATF_CHECK_EQ(count("spool/alice", "Return-Path: <sender@example.org>\n"), 2);
	ATF_CHECK_EQ(count("spool/alice", "Delivered-To: alice@example.test\n"), 1);
	ATF_CHECK_EQ(count("spool/alice", "Delivered-To: ALICE+news@Example.TEST\n"), 1);
	char *t = slurp("spool/alice");
	ATF_CHECK(strncmp(t, "From sender@example.org ", 24) == 0);
	free(t);
	local_free(l);
}

PRIVATE_TC(maildir_home, "home_mailbox = Maildir/")
{
	setup();
	aliases("postmaster: alice");
	over_t ov = { .home_mailbox = "Maildir/" };
	local_t *l = mk(&ov);
	CHECK_DLV(l, "bob@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to maildir");
	ATF_CHECK_EQ(files_in("mail/bob/Maildir/new"), 1);
	ATF_CHECK_EQ(files_in("mail/bob/Maildir/tmp"), 0);
	ATF_CHECK(access("spool/bob", F_OK) < 0);
	/* home_mailbox without the slash: an mbox in the home directory */
	local_free(l);
	ov.home_mailbox = "Mailbox";
	l = mk(&ov);
	CHECK_DLV(l, "bob@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	ATF_CHECK_EQ(count("mail/bob/Mailbox", "\nhello\n\n"), 1);
	local_free(l);
}

PRIVATE_TC(unknown_user, "unknown users: 5.1.1, with and without local_recipient_maps")
{
	setup();
	aliases("postmaster: \\alice");
	local_t *l = mk(NULL);
	CHECK_DLV(l, "zed@example.test", DLV_ACT_FAILED, "5.1.1",
	    "User unknown in local recipient table");
	/* An alias is a known recipient. */
	CHECK_DLV(l, "postmaster@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to mailbox");
	local_free(l);
	over_t ov = { .local_recipient_maps = " " };
	l = mk(&ov);
	CHECK_DLV(l, "zed@example.test", DLV_ACT_FAILED, "5.1.1",
	    "unknown user: \"zed\"");
	/* A name local cannot have as a user. */
	CHECK_DLV(l, "../alice@example.test", DLV_ACT_FAILED, "5.1.1",
	    "unknown user");
	local_free(l);
	/* luser_relay takes the unknown ones (forwarding: no cleanup here,
	 * so it is deferred, not bounced). */
	ov.luser_relay = "catchall+$user@example.net";
	l = mk(&ov);
	CHECK_DLV(l, "zed@example.test", DLV_ACT_DELAYED, "4.3.0",
	    "cannot forward mail");
	local_free(l);
}

PRIVATE_TC(loop, "a message with Delivered-To: the recipient bounces with 5.4.6")
{
	setup();
	aliases("postmaster: alice");
	local_t *l = mk(NULL);
	lstatus_t st = LSTATUS_INIT;
	ATF_CHECK_EQ(dlv(l, "Delivered-To: Alice@example.test\nSubject: x\n\nb\n",
	    "alice@example.test", &st), DLV_ACT_FAILED);
	ATF_CHECK_STREQ(st.dsn, "5.4.6");
	ATF_CHECK_STREQ(str_cstr(&st.text), "mail forwarding loop for alice@example.test");
	ATF_CHECK(access("spool/alice", F_OK) < 0);
	/* Another recipient's Delivered-To is no loop. */
	ATF_CHECK_EQ(dlv(l, "Delivered-To: bob@example.test\nSubject: x\n\nb\n",
	    "alice@example.test", &st), DLV_ACT_DELIVERED);
	lstatus_free(&st);
	local_free(l);
}

PRIVATE_TC(alias_targets, "alias to files, commands, Maildirs, mailboxes, itself")
{
	char text[8192];

	setup();
	snprintf(text, sizeof(text),
	    "log: %s/log.mbox, \"|cat > %s/cmd.out\", %s/archive/\n"
	    "alice: alice, \\bob\n"
	    "Both: log, x\n"
	    "null: /dev/null\n"
	    "dup: %s/d.mbox, %s/d.mbox, \\bob, \\BOB\n",
	    cwd, cwd, cwd, cwd, cwd);
	aliases(text);
	local_t *l = mk(NULL);
	CHECK_DLV(l, "log@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to file: ");
	ATF_CHECK_EQ(count("log.mbox", "Delivered-To: log@example.test\n"), 1);
	ATF_CHECK_EQ(count("cmd.out", "Delivered-To: log@example.test\n"), 1);
	ATF_CHECK_EQ(count("cmd.out", "\nhello\n"), 1);
	ATF_CHECK_EQ(files_in("archive/new"), 1);
	/* alice: her own mailbox (self-reference) and bob's (\bob) */
	CHECK_DLV(l, "alice@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to mailbox; delivered to mailbox");
	ATF_CHECK_EQ(count("spool/alice", "\nhello\n"), 1);
	ATF_CHECK_EQ(count("spool/bob", "\nhello\n"), 1);
	CHECK_DLV(l, "null@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to file: /dev/null");
	/* Repeated targets are delivered once. */
	CHECK_DLV(l, "dup@example.test", DLV_ACT_EXPANDED, "2.0.0", "");
	ATF_CHECK_EQ(count("d.mbox", "\nhello\n"), 1);
	ATF_CHECK_EQ(count("spool/bob", "\nhello\n"), 2);
	/* A local address that is not the alias itself is forwarded through
	 * cleanup: with no cleanup the recipient is deferred (and retried:
	 * what was delivered may be delivered again). */
	CHECK_DLV(l, "both@example.test", DLV_ACT_DELAYED, "4.3.0",
	    "cannot forward mail");
	local_free(l);
}

PRIVATE_TC(restrictions, "allow_mail_to_commands and allow_mail_to_files")
{
	char text[8192];

	setup();
	snprintf(text, sizeof(text), "c: \"|cat > %s/c.out\"\nf: %s/f.mbox\n"
	    "i: :include:%s/list\n", cwd, cwd, cwd);
	aliases(text);
	snprintf(text, sizeof(text), "# a comment\n%s/inc.mbox\n", cwd);
	put_file("list", text);
	over_t ov = { .allow_commands = -1, .allow_files = LOCAL_CLASS_FORWARD };
	local_t *l = mk(&ov);
	CHECK_DLV(l, "c@example.test", DLV_ACT_FAILED, "5.7.1",
	    "mail to command is restricted");
	CHECK_DLV(l, "f@example.test", DLV_ACT_FAILED, "5.7.1",
	    "mail to file is restricted");
	ATF_CHECK(access("c.out", F_OK) < 0);
	ATF_CHECK(access("f.mbox", F_OK) < 0);
	local_free(l);
	/* Files in an :include: file need "include". */
	l = mk(NULL);
	CHECK_DLV(l, "i@example.test", DLV_ACT_FAILED, "5.7.1",
	    "allow_mail_to_files");
	local_free(l);
	ov.allow_commands = 0;
	ov.allow_files = LOCAL_CLASS_ALIAS | LOCAL_CLASS_INCLUDE;
	l = mk(&ov);
	CHECK_DLV(l, "i@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to file: ");
	ATF_CHECK_EQ(count("inc.mbox", "\nhello\n"), 1);
	local_free(l);
}

PRIVATE_TC(include_files, ":include: nesting, loops, missing and unsafe files")
{
	char text[8192];

	setup();
	snprintf(text, sizeof(text), "loop: :include:%s/l1\n"
	    "missing: :include:%s/nonexistent\n"
	    "ww: :include:%s/ww\n", cwd, cwd, cwd);
	aliases(text);
	snprintf(text, sizeof(text), ":include:%s/l2\n", cwd);
	put_file("l1", text);
	snprintf(text, sizeof(text), ":include:%s/l1, \\alice\n", cwd);
	put_file("l2", text);
	put_file("ww", "\\bob\n");
	ATF_REQUIRE(chmod("ww", 0666) == 0);
	local_t *l = mk(NULL);
	/* l1 -> l2 -> l1 is seen once each; alice gets it once. */
	CHECK_DLV(l, "loop@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to mailbox");
	ATF_CHECK_EQ(count("spool/alice", "\nhello\n"), 1);
	CHECK_DLV(l, "missing@example.test", DLV_ACT_FAILED, "5.3.0",
	    "cannot use :include: file");
	CHECK_DLV(l, "ww@example.test", DLV_ACT_FAILED, "5.7.1",
	    "world-writable");
	ATF_CHECK(access("spool/bob", F_OK) < 0);
	local_free(l);
}

PRIVATE_TC(dot_forward, ".forward: targets, \\self, extensions, insecure files ignored")
{
	char text[8192];

	setup();
	aliases("postmaster: alice");
	snprintf(text, sizeof(text), "# forward\n\"|cat > %s/fwd.out\", \\alice\n",
	    cwd);
	put_file("mail/alice/.forward", text);
	ATF_REQUIRE(chmod("mail/alice/.forward", 0644) == 0);
	snprintf(text, sizeof(text), "%s/lists.mbox\n", cwd);
	put_file("mail/alice/.forward+lists", text);
	local_t *l = mk(NULL);
	CHECK_DLV(l, "alice@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to command: cat > ");
	ATF_CHECK_EQ(count("fwd.out", "\nhello\n"), 1);
	ATF_CHECK_EQ(count("spool/alice", "\nhello\n"), 1);
	/* user+ext: .forward+ext first */
	CHECK_DLV(l, "alice+lists@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to file: ");
	ATF_CHECK_EQ(count("lists.mbox", "\nhello\n"), 1);
	ATF_CHECK_EQ(count("fwd.out", "\nhello\n"), 1);
	/* Group- or world-writable: ignored, the mailbox gets the mail. */
	ATF_REQUIRE(chmod("mail/alice/.forward", 0664) == 0);
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	ATF_CHECK_EQ(count("spool/alice", "\nhello\n"), 2);
	ATF_REQUIRE(chmod("mail/alice/.forward", 0646) == 0);
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	ATF_CHECK_EQ(count("fwd.out", "\nhello\n"), 1);
	/* A symbolic link: ignored too. */
	ATF_REQUIRE(chmod("mail/alice/.forward", 0600) == 0);
	ATF_REQUIRE(rename("mail/alice/.forward", "mail/alice/real") == 0);
	ATF_REQUIRE(symlink("real", "mail/alice/.forward") == 0);
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	ATF_CHECK_EQ(count("fwd.out", "\nhello\n"), 1);
	/* An empty .forward (comments only) is as good as none. */
	unlink("mail/alice/.forward");
	put_file("mail/alice/.forward", "# nothing\n\n");
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	/* A .forward naming another address forwards (no cleanup: defer). */
	put_file("mail/alice/.forward", "carol@example.net\n");
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELAYED, "4.3.0",
	    "cannot forward mail");
	/* A syntax error: bounced, with where it is. */
	put_file("mail/alice/.forward", "\"|open quote\n");
	CHECK_DLV(l, "alice@example.test", DLV_ACT_FAILED, "5.3.5",
	    ".forward file");
	local_free(l);
}

PRIVATE_TC(mailbox_command, "mailbox_command with $names quoted for the shell")
{
	char cmd[4096];

	setup();
	aliases("postmaster: alice");
	snprintf(cmd, sizeof(cmd), "cat > %s/mc.$user; echo $extension > %s/ext",
	    cwd, cwd);
	over_t ov = { .mailbox_command = cmd };
	local_t *l = mk(&ov);
	CHECK_DLV(l, "bob+a;b@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to command: ");
	ATF_CHECK_EQ(count("mc.bob", "\nhello\n"), 1);
	char *t = slurp("ext");
	ATF_CHECK_STREQ(t, "a;b\n");
	free(t);
	local_free(l);
}

PRIVATE_TC(failures_defer, "a table or a mailbox that fails defers")
{
	setup();
	aliases("postmaster: alice");
	over_t ov = { .alias_maps = "hash:/nonexistent/aliases",
	    .local_recipient_maps = " " };
	local_t *l = mk(&ov);
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELAYED, "4.3.0",
	    "alias database unavailable");
	local_free(l);
	ov.alias_maps = NULL;
	ov.local_recipient_maps = "hash:/nonexistent/x";
	l = mk(&ov);
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELAYED, "4.3.0",
	    "local_recipient_maps");
	local_free(l);
	/* A spool directory that cannot be written: deferred, then
	 * delivered once it is fixed. */
	l = mk(NULL);
	ATF_REQUIRE(chmod("spool", 0555) == 0);
	CHECK_DLV(l, "bob@example.test", DLV_ACT_DELAYED, "4.2.0",
	    "Permission denied");
	ATF_REQUIRE(chmod("spool", 0755) == 0);
	CHECK_DLV(l, "bob@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	local_free(l);
}

PRIVATE_TC(inline_braces, "alias_maps: the braces of inline:{ } keep a "
    "table whole")
{
	setup();
	aliases("postmaster: \\alice");
	/* One table with a braced element whose value holds a comma, then
	 * the hash: table: both asked, in order. */
	char amaps[1400];
	snprintf(amaps, sizeof(amaps), "inline:{ team=\\bob, { staff = \\alice, "
	    "\\bob } }, hash:%s/aliases", cwd);
	over_t ov = { .alias_maps = amaps, .local_recipient_maps = " " };
	local_t *l = mk(&ov);
	CHECK_DLV(l, "staff@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to mailbox");
	CHECK_DLV(l, "team@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to mailbox");
	CHECK_DLV(l, "postmaster@example.test", DLV_ACT_EXPANDED, "2.0.0",
	    "delivered to mailbox");
	ATF_CHECK_EQ(count("spool/alice", "Delivered-To: staff@example.test\n"), 1);
	ATF_CHECK_EQ(count("spool/bob", "Delivered-To: staff@example.test\n"), 1);
	ATF_CHECK_EQ(count("spool/bob", "Delivered-To: team@example.test\n"), 1);
	local_free(l);

	/* local_recipient_maps (local_rcpt.h) the same way. */
	ov.alias_maps = NULL;
	ov.local_recipient_maps = "inline:{ x=1, { alice = known, really } }";
	l = mk(&ov);
	CHECK_DLV(l, "alice@example.test", DLV_ACT_DELIVERED, "2.0.0",
	    "delivered to mailbox");
	CHECK_DLV(l, "bob@example.test", DLV_ACT_FAILED, "5.1.1",
	    "User unknown in local recipient table");
	local_free(l);
}

ATF_TC_WITHOUT_HEAD(expand);
ATF_TC_BODY(expand, tc)
{
	const char *names[] = { "user", "extension", "home", "recipient_delimiter" };
	const char *values[] = { "alice", "", "/home/alice", "+" };
	str_t out = STR_INIT;

	ATF_CHECK(local_expand("$home/.forward", names, values, 4, false, &out));
	ATF_CHECK_STREQ(str_cstr(&out), "/home/alice/.forward");
	str_reset(&out);
	/* An empty $name used directly: not all defined. */
	ATF_CHECK(!local_expand("$home/.forward${recipient_delimiter}${extension}",
	    names, values, 4, false, &out));
	str_reset(&out);
	ATF_CHECK(local_expand("${extension?x$user}${extension:none}$$ $unknown_",
	    names, values, 4, false, &out) == false);
	ATF_CHECK_STREQ(str_cstr(&out), "none$ ");
	str_reset(&out);
	values[1] = "it's";
	ATF_CHECK(local_expand("echo $extension ${extension?[$user]}", names,
	    values, 4, true, &out));
	ATF_CHECK_STREQ(str_cstr(&out), "echo 'it'\\''s' ['alice']");
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(classes);
ATF_TC_BODY(classes, tc)
{
	str_t err = STR_INIT;
	int v;

	ATF_CHECK(local_class_parse("alias, forward include", &v, &err) == 0);
	ATF_CHECK_EQ(v, LOCAL_CLASS_ALIAS | LOCAL_CLASS_FORWARD | LOCAL_CLASS_INCLUDE);
	ATF_CHECK(local_class_parse("", &v, &err) == 0);
	ATF_CHECK_EQ(v, 0);
	ATF_CHECK(local_class_parse("alias, bogus", &v, &err) < 0);
	ATF_CHECK(strstr(str_cstr(&err), "bogus") != NULL);
	str_release(&err);
}

PRIVATE_TC(conf_private, "settings: a private instance reads its own aliases by default")
{
	local_conf_t c;
	str_t err = STR_INIT, want = STR_INIT;

	char cwd[4096];
	str_t text = STR_INIT;

	/* The instance's queue directory is the user's (here the work
	 * directory). */
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	str_setf(&text, "queue_directory = %s\nrecipient_delimiter = +\n"
	    "allow_mail_to_files = alias\n"
	    "prepend_delivered_header = forward\n"
	    "mailbox_delivery_lock = dotlock\n", cwd);
	ATF_REQUIRE(pconfig_load_text(str_cstr(&text), "main.cf") == 0);
	ATF_REQUIRE_MSG(local_conf_from_config(&c, &err) == 0, "%s", str_cstr(&err));
	str_setf(&want, "hash:%s/aliases", pconfig_get_str("config_directory"));
	ATF_CHECK_STREQ(c.alias_maps, str_cstr(&want));
	str_setf(&want, "unix:passwd.byname hash:%s/aliases",
	    pconfig_get_str("config_directory"));
	ATF_CHECK_STREQ(c.local_recipient_maps, str_cstr(&want));
	ATF_CHECK_STREQ(c.recipient_delimiter, "+");
	ATF_CHECK_EQ(c.allow_files, LOCAL_CLASS_ALIAS);
	ATF_CHECK_EQ(c.allow_commands, LOCAL_CLASS_ALIAS | LOCAL_CLASS_FORWARD);
	ATF_CHECK_EQ(c.prepend_delivered, LOCAL_DT_FORWARD);
	ATF_CHECK(c.lock_dotlock && !c.lock_fcntl);
	local_conf_free(&c);

	/* Not root, but root's queue directory (smtpd -S, which sendmail
	 * -bs runs as any user of a system install): the system's aliases. */
	ATF_REQUIRE(pconfig_load_text("queue_directory = /\n", "main.cf") == 0);
	ATF_REQUIRE(local_conf_from_config(&c, &err) == 0);
	ATF_CHECK_STREQ(c.alias_maps, "hash:/etc/aliases");
	ATF_CHECK_STREQ(c.local_recipient_maps, "unix:passwd.byname hash:/etc/aliases");
	local_conf_free(&c);
	str_release(&text);

	/* Set in main.cf: used as it is. */
	ATF_REQUIRE(pconfig_load_text("alias_maps = hash:/x/aliases\n", "main.cf") == 0);
	ATF_REQUIRE(local_conf_from_config(&c, &err) == 0);
	ATF_CHECK_STREQ(c.alias_maps, "hash:/x/aliases");
	ATF_CHECK_STREQ(c.local_recipient_maps, "unix:passwd.byname hash:/x/aliases");
	local_conf_free(&c);

	/* Bad words and a relative mail root are refused. */
	ATF_REQUIRE(pconfig_load_text("allow_mail_to_commands = alias, everyone\n",
	    "main.cf") == 0);
	ATF_CHECK(local_conf_from_config(&c, &err) < 0);
	ATF_CHECK(strstr(str_cstr(&err), "everyone") != NULL);
	ATF_REQUIRE(pconfig_load_text("mailbox_delivery_lock = flock\n", "main.cf") == 0);
	ATF_CHECK(local_conf_from_config(&c, &err) < 0);
	ATF_REQUIRE(pconfig_load_text("local_mail_root = run/mail\n", "main.cf") == 0);
	ATF_CHECK(local_conf_from_config(&c, &err) < 0);
	ATF_CHECK(strstr(str_cstr(&err), "absolute") != NULL);
	str_release(&err);
	str_release(&want);
}

ATF_TC(conf_root);
ATF_TC_HEAD(conf_root, tc)
{
	atf_tc_set_md_var(tc, "descr", "settings: as root the system's aliases are the default");
	atf_tc_set_md_var(tc, "require.user", "root");
}
ATF_TC_BODY(conf_root, tc)
{
	local_conf_t c;
	str_t err = STR_INIT;

	ATF_REQUIRE(pconfig_load_text("", "main.cf") == 0);
	ATF_REQUIRE(local_conf_from_config(&c, &err) == 0);
	ATF_CHECK_STREQ(c.alias_maps, "hash:/etc/aliases");
	ATF_CHECK_STREQ(c.local_recipient_maps, "unix:passwd.byname hash:/etc/aliases");
	local_conf_free(&c);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, conf_private);
	ATF_TP_ADD_TC(tp, conf_root);
	ATF_TP_ADD_TC(tp, mailbox_spool);
	ATF_TP_ADD_TC(tp, maildir_home);
	ATF_TP_ADD_TC(tp, unknown_user);
	ATF_TP_ADD_TC(tp, loop);
	ATF_TP_ADD_TC(tp, alias_targets);
	ATF_TP_ADD_TC(tp, restrictions);
	ATF_TP_ADD_TC(tp, include_files);
	ATF_TP_ADD_TC(tp, dot_forward);
	ATF_TP_ADD_TC(tp, mailbox_command);
	ATF_TP_ADD_TC(tp, failures_defer);
	ATF_TP_ADD_TC(tp, inline_braces);
	ATF_TP_ADD_TC(tp, expand);
	ATF_TP_ADD_TC(tp, classes);
	return atf_no_error();
}
