/* Unit tests for libglobal/mastercf: master.cf parsing, defaults,
 * -o overrides, errors with file:line, normalised output. */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mastercf.h"
#include "pconfig.h"
#include "str.h"
#include "testutil.h"

static const char good[] =
    "# service type  private unpriv  chroot  wakeup  maxproc command + args\n"
    "smtp      inet  n       -       n       -       -       smtpd\n"
    "    -o smtpd_timeout=60s\n"
    "    # a comment between continuation lines\n"
    "\n"
    "    -o { smtpd_banner = $myhostname ESMTP ready }\n"
    "127.0.0.1:2525 inet n - n - 4 smtpd -v\n"
    "[::1]:submission inet - - - - - smtpd\n"
    "pickup    unix  n       -       n       60      1       pickup\n"
    "qmgr      unix  n       -       n       300?    1       qmgr\n"
    "cleanup   unix  n       -       n       -       0       cleanup\n"
    "local     unix  -       n       n       -       -       local\n"
    "relay     unix  -       -       n       -       -       smtp\r\n"
    "  -o smtp_helo_timeout=5s -o smtp_connect_timeout=\n"
    "trig      fifo  n       -       n       -       1       pickup\n"
    "log       unix-dgram n  -       n       -       1       postlogd\n"
    "tlsproxy  pass  -       -       n       -       -       tlsproxy { arg with spaces }\n";

ATF_TC_WITHOUT_HEAD(parse_good);
ATF_TC_BODY(parse_good, tc)
{
	str_t err = STR_INIT;
	mastercf_t *m = mastercf_parse(good, "master.cf", &err);
	ATF_CHECK_STREQ(str_cstr(&err), "");
	ATF_REQUIRE_EQ(m->count, 11);

	const mastercf_entry_t *e = mastercf_find(m, "smtp", "inet");
	ATF_REQUIRE(e != NULL);
	ATF_CHECK_EQ(e->line, 2);
	ATF_CHECK_STREQ(e->file, "master.cf");
	ATF_CHECK_EQ(e->type, MCF_INET);
	ATF_CHECK_STREQ(e->host, "");
	ATF_CHECK_STREQ(e->port, "smtp");
	ATF_CHECK(!e->private_svc);
	ATF_CHECK(e->unpriv);		/* '-' */
	ATF_CHECK(!e->chroot);
	ATF_CHECK_EQ(e->wakeup, 0);
	ATF_CHECK_EQ(e->maxproc, -1);
	ATF_CHECK_EQ(e->argc, 5);
	ATF_CHECK_STREQ(e->argv[0], "smtpd");
	ATF_CHECK_STREQ(e->argv[1], "-o");
	ATF_CHECK_STREQ(e->argv[2], "smtpd_timeout=60s");
	ATF_CHECK_STREQ(e->argv[4], "smtpd_banner=$myhostname ESMTP ready");
	ATF_CHECK(e->argv[5] == NULL);
	ATF_REQUIRE_EQ(e->noverride, 2);
	ATF_CHECK_STREQ(e->override_name[0], "smtpd_timeout");
	ATF_CHECK_STREQ(e->override_value[0], "60s");
	ATF_CHECK_STREQ(e->override_name[1], "smtpd_banner");
	ATF_CHECK_STREQ(e->override_value[1], "$myhostname ESMTP ready");

	e = mastercf_find(m, "127.0.0.1:2525", NULL);
	ATF_REQUIRE(e != NULL);
	ATF_CHECK_STREQ(e->host, "127.0.0.1");
	ATF_CHECK_STREQ(e->port, "2525");
	ATF_CHECK_EQ(e->maxproc, 4);
	ATF_CHECK_EQ(e->argc, 2);
	ATF_CHECK_EQ(e->noverride, 0);
	e = mastercf_find(m, "[::1]:submission", "inet");
	ATF_REQUIRE(e != NULL);
	ATF_CHECK_STREQ(e->host, "::1");
	ATF_CHECK_STREQ(e->port, "submission");
	ATF_CHECK(!e->private_svc);	/* '-' for inet */

	e = mastercf_find(m, "pickup", "unix");
	ATF_REQUIRE(e != NULL);
	ATF_CHECK(e->host == NULL && e->port == NULL);
	ATF_CHECK(!e->private_svc);
	ATF_CHECK_EQ(e->wakeup, 60);
	ATF_CHECK(!e->wakeup_if_used);
	ATF_CHECK_EQ(e->maxproc, 1);
	e = mastercf_find(m, "qmgr", NULL);
	ATF_REQUIRE(e != NULL);
	ATF_CHECK_EQ(e->wakeup, 300);
	ATF_CHECK(e->wakeup_if_used);
	e = mastercf_find(m, "cleanup", "unix");
	ATF_CHECK_EQ(e->maxproc, 0);
	e = mastercf_find(m, "local", "unix");
	ATF_CHECK(e->private_svc);	/* '-' for unix */
	ATF_CHECK(!e->unpriv);
	e = mastercf_find(m, "relay", "unix");
	ATF_REQUIRE_EQ(e->noverride, 2);
	ATF_CHECK_STREQ(e->override_value[1], "");
	ATF_CHECK_EQ(mastercf_find(m, "trig", "fifo")->type, MCF_FIFO);
	ATF_CHECK_EQ(mastercf_find(m, "log", "unix-dgram")->type, MCF_UNIX_DGRAM);
	e = mastercf_find(m, "tlsproxy", "pass");
	ATF_REQUIRE(e != NULL);
	ATF_CHECK_EQ(e->argc, 2);
	ATF_CHECK_STREQ(e->argv[1], "arg with spaces");
	ATF_CHECK(mastercf_find(m, "smtp", "unix") == NULL);
	ATF_CHECK(mastercf_find(m, "nonesuch", NULL) == NULL);
	mastercf_free(m);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(parse_errors);
ATF_TC_BODY(parse_errors, tc)
{
	const char *text =
	    "  -o stray=continuation\n"				/* 1 */
	    "smtp inet n - n - - smtpd\n"			/* 2 good */
	    "short unix - - n -\n"				/* 3 */
	    "a tcp - - n - - cmd\n"				/* 4 */
	    "b unix x - n - - cmd\n"				/* 5 */
	    "c unix - yes n - - cmd\n"				/* 6 */
	    "d unix - - maybe - - cmd\n"			/* 7 */
	    "e unix - - n soon - cmd\n"				/* 8 */
	    "f unix - - n - many cmd\n"				/* 9 */
	    "g unix - - n -5 - cmd\n"				/* 10 */
	    "25 inet y - n - - smtpd\n"				/* 11 */
	    "host: inet n - n - - smtpd\n"			/* 12 */
	    "99999 inet n - n - - smtpd\n"			/* 13 */
	    "::1:25 inet n - n - - smtpd\n"			/* 14 */
	    "h unix - - n - - cmd -o\n"				/* 15 */
	    "i unix - - n - - cmd -o novalue\n"			/* 16 */
	    "j unix - - n - - cmd -o bad/name=x\n"		/* 17 */
	    "k unix - - n - - cmd { unclosed\n"			/* 18 */
	    "smtp inet n - n - - smtpd\n"			/* 19 dup */
	    "../evil unix - - n - - cmd\n"			/* 20 */
	    "smtp unix - - n - - smtp\n"			/* 21 good */
	    "[::1 inet n - n - - smtpd\n";			/* 22 */
	str_t err = STR_INIT;
	mastercf_t *m = mastercf_parse(text, "/etc/petrel/master.cf", &err);
	const char *e = str_cstr(&err);
	CHECK_LINE(e, "/etc/petrel/master.cf:1: continuation line (starts with white space) without an entry before it");
	CHECK_LINE(e, "/etc/petrel/master.cf:3: expected at least 8 fields (service type private unpriv chroot wakeup maxproc command), found 6");
	CHECK_LINE(e, "/etc/petrel/master.cf:4: bad service type 'tcp' (inet, unix, unix-dgram, fifo or pass)");
	CHECK_LINE(e, "/etc/petrel/master.cf:5: bad private field 'x' (y, n or -)");
	CHECK_LINE(e, "/etc/petrel/master.cf:6: bad unpriv field 'yes' (y, n or -)");
	CHECK_LINE(e, "/etc/petrel/master.cf:7: bad chroot field 'maybe' (y, n or -)");
	CHECK_LINE(e, "/etc/petrel/master.cf:8: bad wakeup field 'soon' (seconds, optionally followed by '?', or -)");
	CHECK_LINE(e, "/etc/petrel/master.cf:9: bad maxproc field 'many' (a number or -)");
	CHECK_LINE(e, "/etc/petrel/master.cf:10: bad wakeup field '-5' (seconds, optionally followed by '?', or -)");
	CHECK_LINE(e, "/etc/petrel/master.cf:11: an inet service cannot be private (use n or -)");
	CHECK_LINE(e, "/etc/petrel/master.cf:12: bad inet service 'host:': bad port (a number from 1 to 65535 or a service name)");
	CHECK_LINE(e, "/etc/petrel/master.cf:13: bad inet service '99999': bad port (a number from 1 to 65535 or a service name)");
	CHECK_LINE(e, "/etc/petrel/master.cf:14: bad inet service '::1:25': expected [host:]port (an IPv6 host goes in brackets)");
	CHECK_LINE(e, "/etc/petrel/master.cf:15: -o without name=value");
	CHECK_LINE(e, "/etc/petrel/master.cf:16: -o novalue: missing '='");
	CHECK_LINE(e, "/etc/petrel/master.cf:17: -o bad/name=x: bad parameter name 'bad/name'");
	CHECK_LINE(e, "/etc/petrel/master.cf:18: unmatched '{'");
	CHECK_LINE(e, "/etc/petrel/master.cf:19: duplicate service smtp/inet (first at line 2)");
	CHECK_LINE(e, "/etc/petrel/master.cf:20: bad service name '../evil' (letters, digits, '_', '-' and '.', not starting with '.')");
	CHECK_LINE(e, "/etc/petrel/master.cf:22: bad inet service '[::1': expected [host]:port");
	/* the good entries are kept */
	ATF_CHECK_EQ(m->count, 2);
	ATF_CHECK(mastercf_find(m, "smtp", "inet") != NULL);
	ATF_CHECK(mastercf_find(m, "smtp", "unix") != NULL);
	int lines = 0;
	for (const char *p = e; *p; p++)
		lines += *p == '\n';
	ATF_CHECK_EQ(lines, 20);
	mastercf_free(m);
	str_release(&err);
}

/* The normalised form parses back to the same entry. */
ATF_TC_WITHOUT_HEAD(format_round_trip);
ATF_TC_BODY(format_round_trip, tc)
{
	str_t err = STR_INIT, text = STR_INIT, line = STR_INIT;
	mastercf_t *m = mastercf_parse(good, "master.cf", &err);
	ATF_REQUIRE_STREQ(str_cstr(&err), "");
	for (size_t i = 0; i < m->count; i++) {
		str_reset(&line);
		mastercf_format(m->entries[i], &line);
		ATF_CHECK(strchr(str_cstr(&line), '\n') == NULL);
		str_cat(&text, str_cstr(&line));
		str_putc(&text, '\n');
	}
	str_reset(&line);
	mastercf_format(mastercf_find(m, "smtp", "inet"), &line);
	ATF_CHECK_STREQ(str_cstr(&line), "smtp      inet  n       -       n       -       -       "
	    "smtpd -o smtpd_timeout=60s -o { smtpd_banner=$myhostname ESMTP ready }");
	mastercf_t *m2 = mastercf_parse(str_cstr(&text), "again", &err);
	ATF_CHECK_STREQ(str_cstr(&err), "");
	ATF_REQUIRE_EQ(m2->count, m->count);
	for (size_t i = 0; i < m->count; i++) {
		const mastercf_entry_t *a = m->entries[i], *b = m2->entries[i];
		ATF_CHECK_STREQ(a->service, b->service);
		ATF_CHECK_EQ(a->type, b->type);
		ATF_CHECK_EQ(a->private_svc, b->private_svc);
		ATF_CHECK_EQ(a->unpriv, b->unpriv);
		ATF_CHECK_EQ(a->chroot, b->chroot);
		ATF_CHECK_EQ(a->wakeup, b->wakeup);
		ATF_CHECK_EQ(a->wakeup_if_used, b->wakeup_if_used);
		ATF_CHECK_EQ(a->maxproc, b->maxproc);
		ATF_REQUIRE_EQ(a->argc, b->argc);
		for (int j = 0; j < a->argc; j++)
			ATF_CHECK_STREQ(a->argv[j], b->argv[j]);
		ATF_REQUIRE_EQ(a->noverride, b->noverride);
		for (int j = 0; j < a->noverride; j++)
			ATF_CHECK_STREQ(a->override_value[j], b->override_value[j]);
	}
	mastercf_free(m);
	mastercf_free(m2);
	str_release(&err);
	str_release(&text);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(apply_overrides);
ATF_TC_BODY(apply_overrides, tc)
{
	str_t err = STR_INIT;
	ATF_REQUIRE_EQ(pconfig_load_text("myhostname = mx.example\n", "main.cf"), 0);
	str_t text = STR_INIT;
	str_set(&text, good);
	/* line 18 */
	str_cat(&text, "bad unix - - n - - smtpd -o smtpd_timeout=never\n");
	mastercf_t *m = mastercf_parse(str_cstr(&text), "master.cf", &err);
	str_release(&text);
	ATF_REQUIRE_STREQ(str_cstr(&err), "");
	ATF_CHECK_EQ(mastercf_apply_overrides(mastercf_find(m, "smtp", "inet"), &err), 0);
	ATF_CHECK_EQ(pconfig_get_time("smtpd_timeout"), 60);
	ATF_CHECK_STREQ(pconfig_get_str("smtpd_banner"), "mx.example ESMTP ready");
	ATF_CHECK_EQ(mastercf_apply_overrides(mastercf_find(m, "bad", "unix"), &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err), "master.cf:18: bad time value 'never' for "
	    "parameter smtpd_timeout (a number with an optional unit s, m, h, d or w)");
	ATF_CHECK_EQ(pconfig_get_time("smtpd_timeout"), 60);
	/* maxproc '-' is default_process_limit */
	ATF_CHECK_EQ(mastercf_maxproc(mastercf_find(m, "smtp", "inet")), 100);
	ATF_CHECK_EQ(mastercf_maxproc(mastercf_find(m, "pickup", NULL)), 1);
	mastercf_free(m);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(load_file);
ATF_TC_BODY(load_file, tc)
{
	str_t err = STR_INIT;
	ATF_CHECK(mastercf_load("missing.cf", &err) == NULL);
	ATF_CHECK_STREQ(str_cstr(&err), "missing.cf: cannot read: No such file or directory\n");
	FILE *f = fopen("master.cf", "w");
	ATF_REQUIRE(f != NULL);
	fputs(good, f);
	fclose(f);
	str_reset(&err);
	mastercf_t *m = mastercf_load("master.cf", &err);
	ATF_REQUIRE(m != NULL);
	ATF_CHECK_EQ(m->count, 11);
	ATF_CHECK_STREQ(str_cstr(&err), "");
	mastercf_free(m);
	/* an empty file is an empty table */
	f = fopen("empty.cf", "w");
	fclose(f);
	m = mastercf_load("empty.cf", &err);
	ATF_REQUIRE(m != NULL);
	ATF_CHECK_EQ(m->count, 0);
	mastercf_free(m);
	str_release(&err);
}

/* mastercf_trigger_path: the first entry of that name that takes
 * triggers, as a path under queue_directory. */
ATF_TC_WITHOUT_HEAD(trigger_path);
ATF_TC_BODY(trigger_path, tc)
{
	str_t out = STR_INIT, err = STR_INIT;

	ATF_CHECK_EQ(mastercf_trigger_path("nodir", "qmgr", &out, &err), -1);
	ATF_CHECK(strstr(str_cstr(&err), "nodir/master.cf: cannot read")
	    != NULL);
	ATF_CHECK_EQ(mastercf_trigger_path("nodir", "qmgr", &out, NULL), -1);
	put_file("master.cf",
	    "qmgr inet n - n - - smtpd\n"
	    "qmgr unix n - n 300 1 qmgr\n"
	    "pickup fifo n - n 60 1 pickup\n"
	    "flush unix-dgram - - n - 0 flush\n"
	    "smtp inet n - n - - smtpd\n");
	ATF_CHECK_EQ(mastercf_trigger_path(".", "qmgr", &out, &err), 1);
	ATF_CHECK_STREQ(str_cstr(&out), "public/qmgr");
	ATF_CHECK_EQ(mastercf_trigger_path(".", "pickup", &out, NULL), 1);
	ATF_CHECK_STREQ(str_cstr(&out), "public/pickup");
	ATF_CHECK_EQ(mastercf_trigger_path(".", "flush", &out, NULL), 1);
	ATF_CHECK_STREQ(str_cstr(&out), "private/flush");
	str_set(&out, "untouched");
	ATF_CHECK_EQ(mastercf_trigger_path(".", "smtp", &out, NULL), 0);
	ATF_CHECK_EQ(mastercf_trigger_path(".", "bounce", &out, NULL), 0);
	ATF_CHECK_STREQ(str_cstr(&out), "untouched");
	str_release(&out);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, parse_good);
	ATF_TP_ADD_TC(tp, parse_errors);
	ATF_TP_ADD_TC(tp, format_round_trip);
	ATF_TP_ADD_TC(tp, apply_overrides);
	ATF_TP_ADD_TC(tp, load_file);
	ATF_TP_ADD_TC(tp, trigger_path);
	return atf_no_error();
}
