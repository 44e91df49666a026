/* Unit tests for libutil/dict unix: tables: passwd.byname and
 * group.byname give the entries in the system's format, unknown names
 * are not found, unknown unix: tables fail to open. */
#include <atf-c.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "dict.h"
#include "str.h"
#include "testutil.h"

ATF_TC_WITHOUT_HEAD(passwd);
ATF_TC_BODY(passwd, tc)
{
	struct passwd *pw = getpwuid(0);
	char want[1024];

	if (pw == NULL)
		atf_tc_skip("no passwd entry for uid 0");
	snprintf(want, sizeof(want), "%s:%s:0:%ld:%s:%s:%s", pw->pw_name,
	    pw->pw_passwd, (long)pw->pw_gid, pw->pw_gecos, pw->pw_dir,
	    pw->pw_shell);
	char name[256];
	snprintf(name, sizeof(name), "%s", pw->pw_name);
	dict_t *d = open_ok("unix:passwd.byname", 0);
	check_value(d, name, want);
	check_value(d, "no-such-user-petrel-test", NULL);
	ATF_CHECK_EQ(dict_walk(d, NULL, NULL), -1);
	dict_close(d);
}

ATF_TC_WITHOUT_HEAD(group);
ATF_TC_BODY(group, tc)
{
	struct group *gr = getgrgid(0);
	str_t want = STR_INIT;

	if (gr == NULL)
		atf_tc_skip("no group entry for gid 0");
	str_catf(&want, "%s:%s:0:", gr->gr_name, gr->gr_passwd);
	for (char **m = gr->gr_mem; *m; m++)
		str_catf(&want, "%s%s", m == gr->gr_mem ? "" : ",", *m);
	char name[256];
	snprintf(name, sizeof(name), "%s", gr->gr_name);
	dict_t *d = open_ok("unix:group.byname", 0);
	check_value(d, name, str_cstr(&want));
	check_value(d, "no-such-group-petrel-test", NULL);
	dict_close(d);
	str_release(&want);
}

ATF_TC_WITHOUT_HEAD(unknown_table);
ATF_TC_BODY(unknown_table, tc)
{
	str_t err = STR_INIT;
	ATF_CHECK(dict_open("unix:shadow.byname", 0, &err) == NULL);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "unknown unix: table \"shadow.byname\"") != NULL,
	    "%s", str_cstr(&err));
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, passwd);
	ATF_TP_ADD_TC(tp, group);
	ATF_TP_ADD_TC(tp, unknown_table);
	return atf_no_error();
}
