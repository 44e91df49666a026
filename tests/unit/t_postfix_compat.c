/* Unit tests for libglobal/postfix_compat and the Postfix-configuration
 * behaviour of pconfig: a Postfix parameter Petrel lacks is named as
 * such (not as a typing mistake), Debian's "myorigin = /etc/mailname",
 * and master.cf services whose Postfix daemon Petrel does not have are
 * left out with a warning naming file:line. */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mastercf.h"
#include "pconfig.h"
#include "postfix_compat.h"
#include "str.h"

ATF_TC_WITHOUT_HEAD(param_names);
ATF_TC_BODY(param_names, tc)
{
	ATF_CHECK(postfix_param_known("biff"));
	ATF_CHECK(postfix_param_known("compatibility_level"));
	ATF_CHECK(postfix_param_known("2bounce_notice_recipient"));
	ATF_CHECK(postfix_param_known("virtual_transport"));
	ATF_CHECK(postfix_param_known("myhostname"));
	ATF_CHECK(!postfix_param_known("typo_parameter"));
	ATF_CHECK(!postfix_param_known(""));
	ATF_CHECK(!postfix_param_known("bif"));

	ATF_REQUIRE(pconfig_load_text("biff = no\ncompatibility_level = 3.6\n"
	    "typo_parameter = 1\nsmtp_tls_session_cache_database = "
	    "btree:${data_directory}/smtp_scache\n"
	    "myhostname = $data_directory.example\n", "main.cf") == 0);
	const char *w = pconfig_warnings();
	ATF_CHECK_MATCH("main.cf:1: Postfix parameter biff is not implemented "
	    "by Petrel \\(ignored\\)", w);
	ATF_CHECK_MATCH("main.cf:2: Postfix parameter compatibility_level is "
	    "not implemented", w);
	ATF_CHECK_MATCH("main.cf:3: unknown parameter typo_parameter "
	    "\\(ignored\\)", w);
	/* The value of an ignored parameter is not looked into; a Petrel
	 * parameter that uses a Postfix-only one is told so. */
	ATF_CHECK(strstr(w, "in the value of smtp_tls_session_cache_database")
	    == NULL);
	ATF_CHECK_MATCH("main.cf:5: \\$data_directory in the value of "
	    "myhostname: a Postfix parameter that Petrel does not implement",
	    w);
}

ATF_TC_WITHOUT_HEAD(myorigin_file);
ATF_TC_BODY(myorigin_file, tc)
{
	FILE *f = fopen("mailname", "w");
	char cwd[4096];
	str_t text = STR_INIT;

	ATF_REQUIRE(f != NULL);
	fputs("  example.org  \nsecond.line\n", f);
	fclose(f);
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	str_setf(&text, "myorigin = %s/mailname\n", cwd);
	ATF_REQUIRE_MSG(pconfig_load_text(str_cstr(&text), "main.cf") == 0, "%s",
	    pconfig_errors());
	ATF_CHECK_STREQ(pconfig_get_str("myorigin"), "example.org");
	/* Missing, or no name in it: an error of that line. */
	str_setf(&text, "\nmyorigin = %s/nothere\n", cwd);
	ATF_CHECK(pconfig_load_text(str_cstr(&text), "main.cf") < 0);
	ATF_CHECK_MATCH("main.cf:2: myorigin: cannot read .*nothere: No such "
	    "file", pconfig_errors());
	f = fopen("empty", "w");
	ATF_REQUIRE(f != NULL);
	fclose(f);
	str_setf(&text, "myorigin = %s/empty\n", cwd);
	ATF_CHECK(pconfig_load_text(str_cstr(&text), "main.cf") < 0);
	ATF_CHECK_MATCH("no domain name", pconfig_errors());
	/* Not a path: as written. */
	ATF_REQUIRE(pconfig_load_text("myorigin = example.net\n", "main.cf") == 0);
	ATF_CHECK_STREQ(pconfig_get_str("myorigin"), "example.net");
	str_release(&text);
}

ATF_TC_WITHOUT_HEAD(mastercf_filter);
ATF_TC_BODY(mastercf_filter, tc)
{
	static const char text[] =
	    "smtp      inet  n       -       y       -       -       smtpd\n"
	    "tlsmgr    unix  -       -       y       1000?   1       tlsmgr\n"
	    "rewrite   unix  -       -       y       -       -       trivial-rewrite\n"
	    "cleanup   unix  n       -       y       -       0       cleanup\n"
	    "maildrop  unix  -       n       n       -       -       pipe\n"
	    "  flags=DRXhu user=vmail argv=/usr/bin/maildrop -d ${recipient}\n"
	    "mine      unix  -       n       n       -       -       /bin/true\n"
	    "virtual   unix  -       n       n       -       -       /usr/lib/postfix/sbin/virtual\n";
	str_t errors = STR_INIT, warn = STR_INIT;
	mastercf_t *m;

	ATF_REQUIRE(pconfig_load_text("", "main.cf") == 0);
	m = mastercf_parse(text, "master.cf", &errors);
	ATF_REQUIRE_MSG(str_len(&errors) == 0, "%s", str_cstr(&errors));
	ATF_REQUIRE_EQ(m->count, 7);
	ATF_CHECK_EQ(postfix_mastercf_filter(m, "/nonexistent", &warn), 4);
	ATF_REQUIRE_EQ(m->count, 3);
	ATF_CHECK_STREQ(m->entries[0]->service, "smtp");
	ATF_CHECK_STREQ(m->entries[1]->service, "cleanup");
	ATF_CHECK_STREQ(m->entries[2]->service, "mine");
	ATF_CHECK_MATCH("master.cf:2: service tlsmgr/unix: Postfix's tlsmgr "
	    "\\(the TLS session cache and random pool\\) is not implemented by "
	    "Petrel; the service is not started", str_cstr(&warn));
	ATF_CHECK_MATCH("master.cf:3: service rewrite/unix: Postfix's "
	    "trivial-rewrite is not needed by Petrel", str_cstr(&warn));
	ATF_CHECK_MATCH("master.cf:5: service maildrop/unix: Postfix's pipe",
	    str_cstr(&warn));
	ATF_CHECK_MATCH("master.cf:8: service virtual/unix: Postfix's "
	    "/usr/lib/postfix/sbin/virtual", str_cstr(&warn));
	mastercf_free(m);

	/* A program of that name installed in daemon_directory is
	 * someone's own and is kept; the same name elsewhere is not. */
	ATF_REQUIRE(mkdir("dd", 0755) == 0);
	FILE *f = fopen("dd/pipe", "w");
	ATF_REQUIRE(f != NULL);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	ATF_REQUIRE(chmod("dd/pipe", 0755) == 0);
	m = mastercf_parse("t unix - - n - - pipe\n", "master.cf", &errors);
	str_reset(&warn);
	ATF_CHECK_EQ(postfix_mastercf_filter(m, "dd", &warn), 0);
	ATF_CHECK_EQ(m->count, 1);
	ATF_CHECK_EQ(str_len(&warn), 0);
	mastercf_free(m);
	m = mastercf_parse("t unix - - n - - /elsewhere/pipe\n", "master.cf",
	    &errors);
	ATF_CHECK_EQ(postfix_mastercf_filter(m, "dd", &warn), 1);
	ATF_CHECK_EQ(m->count, 0);
	mastercf_free(m);
	str_release(&errors);
	str_release(&warn);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, param_names);
	ATF_TP_ADD_TC(tp, myorigin_file);
	ATF_TP_ADD_TC(tp, mastercf_filter);
	return atf_no_error();
}
