/* libglobal/user_list: a list of user names and tables (through the maps
 * layer), the first item that matches deciding; braces keep an inline
 * table whole; a table is read afresh at every check; a table that does
 * not open names the parameter and the table's error. */
#include <atf-c.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "pconfig.h"
#include "str.h"
#include "user_list.h"

static void conf(const char *text)
{
	ATF_REQUIRE(pconfig_load_text(text, "main.cf") == 0);
}

ATF_TC_WITHOUT_HEAD(names_and_braces);
ATF_TC_BODY(names_and_braces, tc)
{
	str_t why = STR_INIT;

	conf("authorized_submit_users = Alice, inline:{ bob=1, carol=1 }, !dave, static:x\n");
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "alice", &why), 1);
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "bob", &why), 1);
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "carol", &why), 1);
	/* the negated name comes before the table that allows everyone */
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "dave", &why), 0);
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "erin", &why), 1);
	conf("authorized_submit_users = inline:{ bob=1, carol=1 }\n");
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "erin", &why), 0);
	/* "" (a uid without a name) matches no name */
	conf("authorized_submit_users = alice\n");
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "", &why), 0);
	pconfig_reset();
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(table_read_afresh);
ATF_TC_BODY(table_read_afresh, tc)
{
	str_t why = STR_INIT;
	FILE *f;

	ATF_REQUIRE((f = fopen("users", "w")) != NULL);
	fputs("alice ok\n", f);
	fclose(f);
	conf("authorized_submit_users = texthash:users\n");
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "alice", &why), 1);
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "bob", &why), 0);
	ATF_REQUIRE((f = fopen("users", "w")) != NULL);
	fputs("bob ok\n", f);
	fclose(f);
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "alice", &why), 0);
	ATF_CHECK_EQ(user_list_match("authorized_submit_users", "bob", &why), 1);
	pconfig_reset();
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(table_errors);
ATF_TC_BODY(table_errors, tc)
{
	str_t why = STR_INIT;

	conf("authorized_flush_users = nosuchtype:x, alice\n");
	ATF_CHECK_EQ(user_list_match("authorized_flush_users", "alice", &why), -1);
	ATF_CHECK_MSG(strncmp(str_cstr(&why), "authorized_flush_users: ", 24) == 0
	    && strstr(str_cstr(&why), "nosuchtype") != NULL, "why: %s",
	    str_cstr(&why));
	/* a table whose file is missing does not open either */
	conf("authorized_flush_users = texthash:no-such-file\n");
	ATF_CHECK_EQ(user_list_match("authorized_flush_users", "alice", &why), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&why), "no-such-file") != NULL, "why: %s",
	    str_cstr(&why));
	pconfig_reset();
	str_release(&why);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, names_and_braces);
	ATF_TP_ADD_TC(tp, table_read_afresh);
	ATF_TP_ADD_TC(tp, table_errors);
	return atf_no_error();
}
