/* local/aliases: aliases(5) entries and target lists. */
#include <atf-c.h>
#include <stdlib.h>
#include <string.h>
#include "aliases.h"

static void entry_ok(const char *line, const char *name, const char *value)
{
	char *copy = strdup(line), *v = NULL;
	str_t n = STR_INIT, why = STR_INIT;

	ATF_CHECK_MSG(alias_entry_parse(copy, &n, &v, &why) == 0, "%s: %s",
	    line, str_cstr(&why));
	ATF_CHECK_STREQ(str_cstr(&n), name);
	if (v != NULL)
		ATF_CHECK_STREQ(v, value);
	free(copy);
	str_release(&n);
	str_release(&why);
}

static void entry_bad(const char *line, const char *reason)
{
	char *copy = strdup(line), *v = NULL;
	str_t n = STR_INIT, why = STR_INIT;

	ATF_CHECK_MSG(alias_entry_parse(copy, &n, &v, &why) < 0, "accepted %s",
	    line);
	ATF_CHECK_MSG(strstr(str_cstr(&why), reason) != NULL, "%s: %s", line,
	    str_cstr(&why));
	free(copy);
	str_release(&n);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(entries);
ATF_TC_BODY(entries, tc)
{
	entry_ok("root: alice", "root", "alice");
	entry_ok("root:alice,bob  ", "root", "alice,bob");
	entry_ok("root :\talice", "root", "alice");
	entry_ok("MAILER-DAEMON: postmaster", "MAILER-DAEMON", "postmaster");
	entry_ok("\"john doe\": jd", "john doe", "jd");
	entry_ok("\"a:b\" : x", "a:b", "x");
	entry_ok("\"q\\\"uote\": x", "q\"uote", "x");
	entry_ok("x: \"|cmd: a\"", "x", "\"|cmd: a\"");

	entry_bad("nocolon", "missing \":\"");
	entry_bad("foo bar: x", "contains white space");
	entry_bad("fo\"o: x", "contains a quote");
	entry_bad(": x", "empty alias name");
	entry_bad("\"\": x", "empty alias name");
	entry_bad("a:", "missing value for alias \"a\"");
	entry_bad("a:   ", "missing value");
	entry_bad("\"open: x", "unterminated quoted alias name");
	entry_bad("\"a\" x: y", "missing \":\" after alias name \"a\"");
	char longname[400];
	memset(longname, 'a', 300);
	bcopy_str(longname + 300, sizeof(longname) - 300, ": x");
	entry_bad(longname, "longer than");
}

static void targets(const char *list, const char *want)
{
	alias_list_t l = ALIAS_LIST_INIT;
	str_t why = STR_INIT, got = STR_INIT;

	ATF_CHECK_MSG(alias_targets_parse(list, strlen(list), &l, &why) == 0,
	    "%s: %s", list, str_cstr(&why));
	for (size_t i = 0; i < l.n; i++)
		str_catf(&got, "%s%s=[%s]", i ? " " : "",
		    alias_kind_name(l.v[i].kind), l.v[i].text);
	ATF_CHECK_MSG(strcmp(str_cstr(&got), want) == 0, "%s:\n got  %s\n want %s",
	    list, str_cstr(&got), want);
	alias_list_free(&l);
	str_release(&why);
	str_release(&got);
}

static void targets_bad(const char *list, const char *reason)
{
	alias_list_t l = ALIAS_LIST_INIT;
	str_t why = STR_INIT;

	ATF_CHECK_MSG(alias_targets_parse(list, strlen(list), &l, &why) < 0,
	    "accepted %s", list);
	ATF_CHECK_MSG(strstr(str_cstr(&why), reason) != NULL, "%s: %s", list,
	    str_cstr(&why));
	alias_list_free(&l);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(target_kinds);
ATF_TC_BODY(target_kinds, tc)
{
	targets("alice", "address=[alice]");
	targets(" alice , bob@Example.ORG,,", "address=[alice] address=[bob@Example.ORG]");
	targets("<carol@example.net>", "address=[carol@example.net]");
	targets("\"john smith\"@example.com", "address=[john smith@example.com]");
	targets("\"john smith\"", "address=[john smith]");
	targets("|/usr/bin/procmail -a x", "command=[/usr/bin/procmail -a x]");
	targets("| cat > /dev/null", "command=[cat > /dev/null]");
	targets("\"|/bin/echo a, b\", x", "command=[/bin/echo a, b] address=[x]");
	targets("|/bin/sh -c \"a, b\"", "command=[/bin/sh -c \"a, b\"]");
	targets("\"|echo \\\"q\\\"\"", "command=[echo \"q\"]");
	targets("/var/log/mail.mbox", "file=[/var/log/mail.mbox]");
	targets("/srv/Maildir/", "maildir=[/srv/Maildir/]");
	targets("\"/path with space\"", "file=[/path with space]");
	targets(":include:/etc/lists/staff", "include=[/etc/lists/staff]");
	targets(":INCLUDE: /etc/x", "include=[/etc/x]");
	targets("\\root", "mailbox=[root]");
	/* A quoted backslash is a local part, not the mailbox form. */
	targets("\"\\\\root\"", "address=[\\root]");
	targets("a\nb", "address=[a] address=[b]");
	targets("", "");
	targets(" , ", "");
}

ATF_TC_WITHOUT_HEAD(target_errors);
ATF_TC_BODY(target_errors, tc)
{
	targets_bad("\"|cmd", "unterminated quoted string");
	targets_bad("a, \"b", "unterminated quoted string");
	targets_bad("|", "empty command");
	targets_bad("|   ", "empty command");
	targets_bad(":include:", ":include: needs an absolute path");
	targets_bad(":include:etc/x", ":include: needs an absolute path");
	targets_bad("\\", "empty user name");
	targets_bad("a@@b", "bad address");
	targets_bad("a b", "bad address");
	targets_bad("\"\"", "empty quoted target");
	targets_bad("x\001y", "control character");
	/* What came before the bad target is kept. */
	alias_list_t l = ALIAS_LIST_INIT;
	str_t why = STR_INIT;
	ATF_CHECK(alias_targets_parse("good, a@@b", 10, &l, &why) < 0);
	ATF_CHECK_EQ(l.n, 1);
	alias_list_free(&l);
	str_release(&why);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, entries);
	ATF_TP_ADD_TC(tp, target_kinds);
	ATF_TP_ADD_TC(tp, target_errors);
	return atf_no_error();
}
