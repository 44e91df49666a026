/* Unit tests for libglobal/params and libglobal/pconfig: the parameter
 * table, main.cf parsing, expansion, typed and per-transport getters,
 * overrides and their error messages. */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "params.h"
#include "pconfig.h"
#include "str.h"
#include "testutil.h"

/* Loads text as main.cf; returns pconfig_load_text's result. */
static int load(const char *text)
{
	return pconfig_load_text(text, "main.cf");
}

static int count_lines(const char *all)
{
	int n = 0;
	for (const char *p = all; *p; p++)
		n += *p == '\n';
	return n;
}

ATF_TC_WITHOUT_HEAD(defaults);
ATF_TC_BODY(defaults, tc)
{
	pconfig_reset();
	ATF_CHECK_EQ(pconfig_get_int("line_length_limit"), 2048);
	ATF_CHECK_EQ(pconfig_get_size("message_size_limit"), 10240000);
	ATF_CHECK_EQ(pconfig_get_int("default_process_limit"), 100);
	ATF_CHECK_EQ(pconfig_get_time("service_throttle_time"), 60);
	ATF_CHECK_EQ(pconfig_get_time("max_idle"), 100);
	ATF_CHECK_EQ(pconfig_get_int("max_use"), 100);
	ATF_CHECK_EQ(pconfig_get_time("queue_run_delay"), 300);
	ATF_CHECK_EQ(pconfig_get_time("minimal_backoff_time"), 300);
	ATF_CHECK_EQ(pconfig_get_time("maximal_backoff_time"), 4000);
	ATF_CHECK_EQ(pconfig_get_time("maximal_queue_lifetime"), 5 * 86400);
	ATF_CHECK_EQ(pconfig_get_time("bounce_queue_lifetime"), 5 * 86400);
	ATF_CHECK_EQ(pconfig_get_int("qmgr_message_active_limit"), 20000);
	ATF_CHECK_EQ(pconfig_get_int("backoff_retry_count"), 10);
	ATF_CHECK_STREQ(pconfig_get_str("backoff_function"), "postfix");
	ATF_CHECK(pconfig_get_bool("disable_vrfy_command"));
	ATF_CHECK(!pconfig_get_bool("destination_concurrency_feedback_debug"));
	ATF_CHECK_STREQ(pconfig_get_str("default_transport"), "smtp");
	ATF_CHECK_STREQ(pconfig_get_str("smtp_tls_security_level"), "may");
	/* $-references in defaults */
	ATF_CHECK_STREQ(pconfig_get_str("myorigin"), pconfig_get_str("myhostname"));
	str_t want = STR_INIT;
	str_setf(&want, "%s, localhost.%s, localhost", pconfig_get_str("myhostname"),
	    pconfig_get_str("mydomain"));
	ATF_CHECK_STREQ(pconfig_get_str("mydestination"), str_cstr(&want));
	str_setf(&want, "%s ESMTP Petrel", pconfig_get_str("myhostname"));
	ATF_CHECK_STREQ(pconfig_get_str("smtpd_banner"), str_cstr(&want));
	str_release(&want);
	ATF_CHECK(strlen(pconfig_get_str("myhostname")) > 0);
	ATF_CHECK_EQ(pconfig_get_time("default_time_limit"), 1000);
}

/* Every default is a valid value of its type and expands cleanly: a
 * parameter added to the table with a typo in its default fails here. */
ATF_TC_WITHOUT_HEAD(table_is_consistent);
ATF_TC_BODY(table_is_consistent, tc)
{
	size_t n;
	const param_def_t *t = param_table(&n);
	ATF_REQUIRE(n > 150);
	ATF_CHECK_EQ(load(""), 0);
	ATF_CHECK_STREQ(pconfig_errors(), "");
	ATF_CHECK_STREQ(pconfig_warnings(), "");
	for (size_t i = 0; i < n; i++) {
		str_t why = STR_INIT;
		ATF_CHECK_MSG(param_name_ok(t[i].name), "name %s", t[i].name);
		ATF_CHECK_MSG(param_find(t[i].name) == &t[i], "lookup %s", t[i].name);
		ATF_CHECK_MSG(t[i].desc && *t[i].desc, "%s has no description", t[i].name);
		ATF_CHECK_MSG(param_default(&t[i]) != NULL, "%s has no default", t[i].name);
		if (t[i].flags & (PARAM_F_BUILD | PARAM_F_COMPUTED))
			ATF_CHECK_MSG(t[i].defdesc != NULL, "%s: defdesc", t[i].name);
		if (!(t[i].flags & PARAM_F_RAW)) {
			const char *v = pconfig_get_str(t[i].name);
			ATF_CHECK_MSG(param_check_value(&t[i], t[i].name, v, &why),
			    "default of %s: %s", t[i].name, str_cstr(&why));
		}
		if (t[i].type == PARAM_TIME)
			ATF_CHECK_MSG(strchr("smhdw", t[i].unit) && t[i].unit,
			    "%s: unit", t[i].name);
		str_release(&why);
	}
	/* the parameters the issues and doc/scheduling-rules.md name are there */
	const char *must[] = { "myhostname", "mydomain", "myorigin", "mydestination",
		"mynetworks", "inet_interfaces", "inet_protocols", "relayhost",
		"relay_domains", "transport_maps", "default_transport", "local_transport",
		"alias_maps", "alias_database", "local_recipient_maps",
		"recipient_delimiter", "home_mailbox", "mail_spool_directory",
		"message_size_limit", "header_size_limit", "hopcount_limit",
		"line_length_limit", "default_process_limit", "service_throttle_time",
		"max_idle", "max_use", "daemon_timeout", "ipc_timeout", "maillog_file",
		"syslog_facility", "smtpd_banner", "smtpd_timeout",
		"smtpd_hard_error_limit", "smtpd_soft_error_limit",
		"smtpd_recipient_limit", "smtpd_client_connection_count_limit",
		"smtpd_relay_restrictions", "smtpd_recipient_restrictions",
		"smtpd_helo_required", "smtpd_delay_reject", "disable_vrfy_command",
		"smtpd_tls_security_level", "smtpd_tls_cert_file", "smtpd_tls_key_file",
		"smtp_connect_timeout", "smtp_helo_timeout", "smtp_mail_timeout",
		"smtp_rcpt_timeout", "smtp_data_init_timeout", "smtp_data_xfer_timeout",
		"smtp_data_done_timeout", "smtp_quit_timeout", "smtp_host_lookup",
		"smtp_mx_address_limit", "smtp_mx_session_limit",
		"smtp_connection_cache_time_limit", "smtp_connection_reuse_count_limit",
		"smtp_tls_security_level", "smtp_tls_CAfile", "smtp_tls_CApath",
		"delay_warning_time", "notify_classes", "2bounce_notice_recipient",
		"authorized_mailq_users", "hash_queue_names", "hash_queue_depth",
		"backoff_function", "minimal_backoff_time", "maximal_backoff_time",
		"backoff_retry_count", "backoff_jitter", "maximal_queue_lifetime",
		"bounce_queue_lifetime", "queue_run_delay", "qmgr_message_active_limit",
		"qmgr_message_recipient_limit", "destination_status_cache_limit",
		"destination_concurrency_feedback_debug", "transport_retry_time",
		"initial_destination_concurrency", "default_destination_concurrency_limit",
		"default_destination_recipient_limit", "default_delivery_slot_cost",
		"default_delivery_slot_loan", "default_delivery_slot_discount",
		"default_minimum_delivery_slots", "default_recipient_limit",
		"default_extra_recipient_limit", "default_recipient_refill_limit",
		"default_recipient_refill_delay", "default_destination_rate_delay",
		"default_destination_concurrency_failed_cohort_limit",
		"default_destination_concurrency_positive_feedback",
		"default_destination_concurrency_negative_feedback",
		"config_directory", "queue_directory", "daemon_directory",
		"command_directory", "mail_owner", "setgid_group",
		"canonical_maps", "virtual_alias_maps", "virtual_alias_expansion_limit",
		"command_time_limit", "allow_mail_to_commands", "allow_mail_to_files",
		"qmgr_clog_warn_time", "bounce_notice_recipient", "smtputf8_enable" };
	for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
		ATF_CHECK_MSG(param_find(must[i]) != NULL, "missing %s", must[i]);
}

ATF_TC_WITHOUT_HEAD(syntax);
ATF_TC_BODY(syntax, tc)
{
	const char *text =
	    "# a comment\n"
	    "\n"
	    "myhostname=mx.example.com\n"
	    "relayhost   =   [gw.example.com]:587   \n"
	    "mynetworks = 127.0.0.0/8,\n"
	    "    192.0.2.0/24\n"
	    "# a comment inside a continued entry is skipped\n"
	    "\n"
	    "\t10.0.0.0/8\n"
	    "smtpd_banner = $myhostname ESMTP # not a comment\n"
	    "alias_maps = hash:/etc/aliases\r\n"
	    "recipient_delimiter =\n"
	    "recipient_delimiter = +\n"	/* the last one wins */
	    "  # an indented comment line\n";
	ATF_CHECK_EQ(load(text), 0);
	ATF_CHECK_STREQ(pconfig_errors(), "");
	ATF_CHECK_STREQ(pconfig_get_str("myhostname"), "mx.example.com");
	ATF_CHECK_STREQ(pconfig_get_str("relayhost"), "[gw.example.com]:587");
	ATF_CHECK_STREQ(pconfig_get_str("mynetworks"),
	    "127.0.0.0/8, 192.0.2.0/24 10.0.0.0/8");
	ATF_CHECK_STREQ(pconfig_get_str("smtpd_banner"), "mx.example.com ESMTP # not a comment");
	ATF_CHECK_STREQ(pconfig_get_str("alias_maps"), "hash:/etc/aliases");
	ATF_CHECK_STREQ(pconfig_get_str("recipient_delimiter"), "+");
	pconfig_item_t it;
	ATF_REQUIRE(pconfig_item("mynetworks", &it));
	ATF_CHECK_EQ(it.origin, PCONFIG_FILE);
	ATF_CHECK_EQ(it.line, 5);
	ATF_CHECK_STREQ(it.file, "main.cf");
	ATF_CHECK_STREQ(it.defval, "127.0.0.0/8 [::1]/128");
	ATF_REQUIRE(pconfig_item("recipient_delimiter", &it));
	ATF_CHECK_EQ(it.line, 13);
	/* values from the file change what defaults expand to */
	ATF_CHECK_STREQ(pconfig_get_str("mydomain"), "example.com");
	ATF_CHECK_STREQ(pconfig_get_str("mydestination"),
	    "mx.example.com, localhost.example.com, localhost");
}

ATF_TC_WITHOUT_HEAD(bad_lines);
ATF_TC_BODY(bad_lines, tc)
{
	const char *text =
	    "  leading = white space\n"			/* 1 */
	    "myhostname = ok.example\n"			/* 2 */
	    "no equals sign here\n"			/* 3 */
	    "bad name = x\n"				/* 4 */
	    " = value\n"				/* 5: continuation of 4 */
	    "= value\n"					/* 6 */
	    "queue_run_delay = xyz\n"			/* 7 */
	    "line_length_limit = 12abc\n"		/* 8 */
	    "default_delivery_slot_discount = 150\n"	/* 9 */
	    "smtpd_helo_required = maybe\n"		/* 10 */
	    "backoff_function = cubic\n"		/* 11 */
	    "message_size_limit = -5\n"			/* 12 */
	    "default_destination_concurrency_positive_feedback = 2\n"	/* 13 */
	    "hopcount_limit = 0\n"			/* 14 */
	    "minimal_backoff_time = 99999999999999999999s\n";	/* 15 */
	ATF_CHECK_EQ(load(text), -1);
	const char *e = pconfig_errors();
	CHECK_LINE(e, "main.cf:1: continuation line (starts with white space) without a parameter before it");
	CHECK_LINE(e, "main.cf:3: missing '=' after parameter name: no equals sign here");
	CHECK_LINE(e, "main.cf:4: bad parameter name 'bad name' (letters, digits, '_', '-' and '.' only)");
	CHECK_LINE(e, "main.cf:6: missing parameter name before '='");
	CHECK_LINE(e, "main.cf:7: bad time value 'xyz' for parameter queue_run_delay (a number with an optional unit s, m, h, d or w)");
	CHECK_LINE(e, "main.cf:8: bad integer value '12abc' for parameter line_length_limit");
	CHECK_LINE(e, "main.cf:9: integer value '150' out of range for parameter default_delivery_slot_discount (0..100)");
	CHECK_LINE(e, "main.cf:10: bad boolean value 'maybe' for parameter smtpd_helo_required (yes or no)");
	CHECK_LINE(e, "main.cf:11: bad value 'cubic' for parameter backoff_function (one of: postfix, linear, arithmetic, geometric, exponential)");
	CHECK_LINE(e, "main.cf:12: bad size value '-5' for parameter message_size_limit");
	CHECK_LINE(e, "main.cf:13: bad value '2' for parameter default_destination_concurrency_positive_feedback (1/concurrency, 1/sqrt_concurrency or a number from 0 to 1)");
	CHECK_LINE(e, "main.cf:14: integer value '0' out of range for parameter hopcount_limit (at least 1)");
	CHECK_LINE(e, "main.cf:15: bad time value '99999999999999999999s' for parameter minimal_backoff_time (a number with an optional unit s, m, h, d or w)");
	ATF_CHECK_EQ(count_lines(e), 13);
	/* the good line still counts, so tools can show the rest */
	ATF_CHECK_STREQ(pconfig_get_str("myhostname"), "ok.example");
}

ATF_TC_WITHOUT_HEAD(typed_values);
ATF_TC_BODY(typed_values, tc)
{
	const char *text =
	    "queue_run_delay = 10m\n"
	    "minimal_backoff_time = 90\n"		/* unit s */
	    "maximal_queue_lifetime = 3\n"		/* unit d */
	    "delay_warning_time = 4\n"			/* unit h */
	    "bounce_queue_lifetime = 1w\n"
	    "maximal_backoff_time = 2H\n"		/* unit letter in any case */
	    "smtpd_helo_required = YES\n"
	    "smtpd_delay_reject = false\n"
	    "message_size_limit = 0\n"
	    "smtp_host_lookup = native, dns\n"
	    "inet_protocols = ipv4\n"
	    "default_destination_concurrency_negative_feedback = 1/sqrt_concurrency\n"
	    "default_destination_concurrency_positive_feedback = 0.25\n"
	    "backoff_function = geometric\n";
	ATF_CHECK_EQ(load(text), 0);
	ATF_CHECK_STREQ(pconfig_errors(), "");
	ATF_CHECK_EQ(pconfig_get_time("queue_run_delay"), 600);
	ATF_CHECK_EQ(pconfig_get_time("minimal_backoff_time"), 90);
	ATF_CHECK_EQ(pconfig_get_time("maximal_queue_lifetime"), 3 * 86400);
	ATF_CHECK_EQ(pconfig_get_time("delay_warning_time"), 4 * 3600);
	ATF_CHECK_EQ(pconfig_get_time("bounce_queue_lifetime"), 7 * 86400);
	ATF_CHECK_EQ(pconfig_get_time("maximal_backoff_time"), 7200);
	ATF_CHECK(pconfig_get_bool("smtpd_helo_required"));
	ATF_CHECK(!pconfig_get_bool("smtpd_delay_reject"));
	ATF_CHECK_EQ(pconfig_get_size("message_size_limit"), 0);
	ATF_CHECK_STREQ(pconfig_get_str("default_destination_concurrency_negative_feedback"),
	    "1/sqrt_concurrency");
	ATF_CHECK_STREQ(pconfig_get_str("backoff_function"), "geometric");
	/* choices are exact, so programs can compare with strcmp */
	str_t err = STR_INIT;
	ATF_CHECK_EQ(pconfig_override("backoff_function", "Geometric", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("smtp_tls_security_level", "MAY", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("inet_protocols", "IPv4", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("inet_protocols", "ipv4, ipv6", NULL, &err), 0);
	ATF_CHECK_EQ(pconfig_override("inet_protocols", "", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("smtp_host_lookup", "dns, nis", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("unknown_address_reject_code", "250", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("unknown_address_reject_code", "550", NULL, &err), 0);
	ATF_CHECK_EQ(pconfig_override("default_destination_concurrency_positive_feedback",
	    "1/Concurrency", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("default_destination_concurrency_positive_feedback",
	    "1.5", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("default_destination_concurrency_positive_feedback",
	    "nan", NULL, &err), -1);
	ATF_CHECK_EQ(pconfig_override("default_destination_concurrency_positive_feedback",
	    "1", NULL, &err), 0);
	ATF_CHECK_EQ(pconfig_override("default_destination_concurrency_positive_feedback",
	    "0", NULL, &err), 0);
	str_release(&err);

	long v;
	ATF_CHECK(param_parse_time("0", 's', &v) && v == 0);
	ATF_CHECK(!param_parse_time("", 's', &v));
	ATF_CHECK(!param_parse_time("s", 's', &v));
	ATF_CHECK(!param_parse_time("5x", 's', &v));
	ATF_CHECK(!param_parse_time("-5s", 's', &v));
	ATF_CHECK(!param_parse_time("1 s", 's', &v));
	ATF_CHECK(!param_parse_time("1000000000000000w", 's', &v));
	ATF_CHECK(param_parse_size("123", &v) && v == 123);
	ATF_CHECK(!param_parse_size("1k", &v));
}

ATF_TC_WITHOUT_HEAD(expansion);
ATF_TC_BODY(expansion, tc)
{
	const char *text =
	    "a = x$b${c}y\n"
	    "b = B\n"
	    "c = [$d]\n"
	    "d = D\n"
	    "e =\n"
	    "cond1 = ${b?set}${e?set}\n"
	    "cond2 = ${b:empty}${e:empty}\n"
	    "cond3 = ${b?<$d>}\n"
	    "money = 5$$ and $ alone and $.\n"
	    "dotted = ${smtp_destination_concurrency_limit}\n"
	    "forward_path = $home/.forward\n"
	    "f = $a/$a\n";
	ATF_CHECK_EQ(load(text), 0);
	ATF_CHECK_STREQ(pconfig_errors(), "");
	ATF_CHECK_STREQ(pconfig_get_str("a"), "xB[D]y");
	ATF_CHECK_STREQ(pconfig_get_str("f"), "xB[D]y/xB[D]y");
	ATF_CHECK_STREQ(pconfig_get_str("cond1"), "set");
	ATF_CHECK_STREQ(pconfig_get_str("cond2"), "empty");
	ATF_CHECK_STREQ(pconfig_get_str("cond3"), "<D>");
	ATF_CHECK_STREQ(pconfig_get_str("money"), "5$ and $ alone and $.");
	ATF_CHECK_STREQ(pconfig_get_str("dotted"), "20");
	/* a "raw" parameter is left for the program that uses it */
	ATF_CHECK_STREQ(pconfig_get_str("forward_path"), "$home/.forward");
	/* user-defined names that other values use are fine; the others
	 * are probably typing mistakes */
	const char *w = pconfig_warnings();
	CHECK_LINE(w, "main.cf:6: unknown parameter cond1 (ignored)");
	CHECK_LINE(w, "main.cf:12: unknown parameter f (ignored)");
	ATF_CHECK_EQ(count_lines(w), 6);
	ATF_CHECK(strstr(w, " a ") == NULL && strstr(w, " e ") == NULL);
	str_t out = STR_INIT;
	ATF_CHECK_EQ(pconfig_expand("<$d${d}$(d)>", &out), 0);
	ATF_CHECK_STREQ(str_cstr(&out), "<DDD>");
	str_release(&out);
	/* the raw value is what was written */
	ATF_CHECK_STREQ(pconfig_get_raw("a"), "x$b${c}y");
	ATF_CHECK_STREQ(pconfig_get_raw("myorigin"), "$myhostname");
	ATF_CHECK(pconfig_get_raw("nonesuch") == NULL);
}

ATF_TC_WITHOUT_HEAD(expansion_unknown_and_unused);
ATF_TC_BODY(expansion_unknown_and_unused, tc)
{
	const char *text =
	    "myhostname = h.example\n"
	    "relayhost = [$nosuch]\n"		/* 2 */
	    "typo_parameter = 1\n"		/* 3 */
	    "bad = ${unclosed\n";		/* 4 */
	ATF_CHECK_EQ(load(text), 0);		/* warnings only */
	const char *w = pconfig_warnings();
	CHECK_LINE(w, "main.cf:2: undefined parameter $nosuch in the value of relayhost (expands to nothing)");
	CHECK_LINE(w, "main.cf:3: unknown parameter typo_parameter (ignored)");
	CHECK_LINE(w, "main.cf:4: unmatched '${' in the value of bad");
	CHECK_LINE(w, "main.cf:4: unknown parameter bad (ignored)");
	ATF_CHECK_EQ(count_lines(w), 4);
	ATF_CHECK_STREQ(pconfig_get_str("relayhost"), "[]");
	ATF_CHECK_STREQ(pconfig_get_str("bad"), "${unclosed");
}

ATF_TC_WITHOUT_HEAD(expansion_loop);
ATF_TC_BODY(expansion_loop, tc)
{
	const char *text =
	    "a = 1 $b\n"		/* 1 */
	    "b = 2 ${c}\n"		/* 2 */
	    "c = 3 $a\n"		/* 3 */
	    "uses_loop = $a\n"		/* 4 */
	    "self = x$self\n";		/* 5 */
	ATF_CHECK_EQ(load(text), -1);
	const char *e = pconfig_errors();
	CHECK_LINE(e, "main.cf:1: parameter expansion loop: $a -> $b -> $c -> $a");
	CHECK_LINE(e, "main.cf:5: parameter expansion loop: $self -> $self");
	/* each loop once, and not again for its users */
	ATF_CHECK_EQ(count_lines(e), 2);
	/* reading one anyway does not hang or crash */
	(void)pconfig_get_str("uses_loop");
}

ATF_TC_WITHOUT_HEAD(expansion_loop_through_default);
ATF_TC_BODY(expansion_loop_through_default, tc)
{
	/* myorigin's default is $myhostname */
	ATF_CHECK_EQ(load("myhostname = mail.$myorigin\n"), -1);
	CHECK_LINE(pconfig_errors(),
	    "main.cf:1: parameter expansion loop: $myhostname -> $myorigin -> $myhostname");
	/* mydomain's default is computed from myhostname */
	ATF_CHECK_EQ(load("myhostname = mail.$mydomain\n"), -1);
	ATF_CHECK_MSG(strstr(pconfig_errors(), "main.cf:1: parameter expansion loop: $myhostname -> $mydomain") != NULL,
	    "%s", pconfig_errors());
	/* the usual way round is fine */
	ATF_CHECK_EQ(load("mydomain = example.org\nmyhostname = mail.$mydomain\n"), 0);
	ATF_CHECK_STREQ(pconfig_get_str("myorigin"), "mail.example.org");
}

/* Values that would expand without bound are errors, not a crash. */
ATF_TC_WITHOUT_HEAD(expansion_bounds);
ATF_TC_BODY(expansion_bounds, tc)
{
	str_t text = STR_INIT;
	/* each level ten times the one below: 10^8 bytes at the top */
	str_cat(&text, "l0 = 0123456789\n");
	for (int i = 1; i <= 8; i++) {
		str_catf(&text, "l%d =", i);
		for (int j = 0; j < 10; j++)
			str_catf(&text, " $l%d", i - 1);
		str_putc(&text, '\n');
	}
	str_cat(&text, "top = $l8\n");
	ATF_CHECK_EQ(load(str_cstr(&text)), -1);
	ATF_CHECK_MSG(strstr(pconfig_errors(),
	    ": value too long after expansion (more than 1 MB)") != NULL, "%s", pconfig_errors());
	ATF_CHECK(strlen(pconfig_get_str("top")) < 2 * (1 << 20));
	/* a chain of 100 references: a bound, reported as such */
	str_reset(&text);
	for (int i = 0; i < 100; i++)
		str_catf(&text, "c%d = $c%d\n", i, i + 1);
	str_cat(&text, "c100 = end\n");
	ATF_CHECK_EQ(load(str_cstr(&text)), -1);
	ATF_CHECK_MSG(strncmp(pconfig_errors(), "main.cf:1: parameters refer to parameters "
	    "more than 64 deep: $c0 -> $c1 -> ", 74) == 0, "%s", pconfig_errors());
	/* conditionals nested far too deep */
	str_set(&text, "x = 1\ndeep = ");
	for (int i = 0; i < 100000; i++)
		str_cat(&text, "${x?");
	for (int i = 0; i < 100000; i++)
		str_putc(&text, '}');
	str_putc(&text, '\n');
	ATF_CHECK_EQ(load(str_cstr(&text)), -1);
	CHECK_LINE(pconfig_errors(), "main.cf:2: parameter deep: ${...} nested too deeply");
	str_release(&text);
}

ATF_TC_WITHOUT_HEAD(expanded_value_errors);
ATF_TC_BODY(expanded_value_errors, tc)
{
	ATF_CHECK_EQ(load("delay = soon\nqueue_run_delay = $delay\n"), -1);
	CHECK_LINE(pconfig_errors(), "main.cf:2: bad time value 'soon' for parameter "
	    "queue_run_delay (a number with an optional unit s, m, h, d or w) "
	    "(expanded from '$delay')");
	ATF_CHECK_EQ(load("delay = 7m\nqueue_run_delay = $delay\n"), 0);
	ATF_CHECK_EQ(pconfig_get_time("queue_run_delay"), 420);
}

ATF_TC_WITHOUT_HEAD(mydomain_from_hostname);
ATF_TC_BODY(mydomain_from_hostname, tc)
{
	ATF_CHECK_EQ(load("myhostname = mx1.mail.example.com\n"), 0);
	ATF_CHECK_STREQ(pconfig_get_str("mydomain"), "mail.example.com");
	ATF_CHECK_EQ(load("myhostname = standalone\n"), 0);
	ATF_CHECK_STREQ(pconfig_get_str("mydomain"), "localdomain");
	ATF_CHECK_STREQ(pconfig_get_str("mydestination"),
	    "standalone, localhost.localdomain, localhost");
}

ATF_TC_WITHOUT_HEAD(per_transport);
ATF_TC_BODY(per_transport, tc)
{
	const char *text =
	    "smtp_destination_concurrency_limit = 7\n"
	    "default_destination_recipient_limit = 30\n"
	    "relay_destination_recipient_limit = $default_destination_recipient_limit\n"
	    "slow_destination_rate_delay = 2m\n"
	    "local_destination_concurrency_limit = 4\n"
	    "smtp_initial_destination_concurrency = 2\n"
	    "smtp-amavis_delivery_slot_cost = 9\n"
	    "default_destination_concurrency_positive_feedback = 1/concurrency\n";
	ATF_CHECK_EQ(load(text), 0);
	ATF_CHECK_STREQ(pconfig_errors(), "");
	ATF_CHECK_STREQ(pconfig_warnings(), "");
	/* TRANSPORT_X set */
	ATF_CHECK_EQ(pconfig_get_int_tr("smtp", "destination_concurrency_limit"), 7);
	/* not set: default_X */
	ATF_CHECK_EQ(pconfig_get_int_tr("relay", "destination_concurrency_limit"), 20);
	ATF_CHECK_EQ(pconfig_get_int_tr("smtp", "destination_recipient_limit"), 30);
	ATF_CHECK_EQ(pconfig_get_int_tr("relay", "destination_recipient_limit"), 30);
	/* a TRANSPORT_X that is a parameter of its own, set or not */
	ATF_CHECK_EQ(pconfig_get_int_tr("local", "destination_concurrency_limit"), 4);
	ATF_CHECK_EQ(pconfig_get_int_tr("local", "destination_recipient_limit"), 1);
	/* time and string forms */
	ATF_CHECK_EQ(pconfig_get_time_tr("slow", "destination_rate_delay"), 120);
	ATF_CHECK_EQ(pconfig_get_time_tr("smtp", "destination_rate_delay"), 0);
	ATF_CHECK_EQ(pconfig_get_time_tr("smtp", "recipient_refill_delay"), 5);
	ATF_CHECK_STREQ(pconfig_get_str_tr("smtp", "destination_concurrency_positive_feedback"),
	    "1/concurrency");
	/* X without a default_ form falls back to X */
	ATF_CHECK_EQ(pconfig_get_int_tr("smtp", "initial_destination_concurrency"), 2);
	ATF_CHECK_EQ(pconfig_get_int_tr("relay", "initial_destination_concurrency"), 5);
	/* service names with '-' */
	ATF_CHECK_EQ(pconfig_get_int_tr("smtp-amavis", "delivery_slot_cost"), 9);
	ATF_CHECK_EQ(pconfig_get_int_tr("smtp", "delivery_slot_cost"), 5);
	/* time limit: default_time_limit = $command_time_limit */
	ATF_CHECK_EQ(pconfig_get_time_tr("smtp", "time_limit"), 1000);
	/* the generic getter knows TRANSPORT_X names too */
	ATF_CHECK_EQ(pconfig_get_int("smtp_destination_concurrency_limit"), 7);
	ATF_CHECK_EQ(pconfig_get_int("relay_destination_concurrency_limit"), 20);
	str_t out = STR_INIT;
	pconfig_expand("$relay_delivery_slot_loan", &out);
	ATF_CHECK_STREQ(str_cstr(&out), "3");
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(per_transport_errors_and_aliases);
ATF_TC_BODY(per_transport_errors_and_aliases, tc)
{
	ATF_CHECK_EQ(load("smtp_destination_concurrency_limit = lots\n"
	    "relay_delivery_slot_discount = 101\n"), -1);
	CHECK_LINE(pconfig_errors(), "main.cf:1: bad integer value 'lots' for parameter smtp_destination_concurrency_limit");
	CHECK_LINE(pconfig_errors(), "main.cf:2: integer value '101' out of range for parameter relay_delivery_slot_discount (0..100)");
	/* The bare names (doc/scheduling-rules.md §1.2) set the default_ parameter. */
	ATF_CHECK_EQ(load("destination_concurrency_limit = 11\n"
	    "delivery_slot_cost = 2\n"
	    "destination_rate_delay = 1s\n"), 0);
	ATF_CHECK_STREQ(pconfig_warnings(), "");
	ATF_CHECK_EQ(pconfig_get_int("default_destination_concurrency_limit"), 11);
	ATF_CHECK_EQ(pconfig_get_int("destination_concurrency_limit"), 11);
	ATF_CHECK_EQ(pconfig_get_int_tr("smtp", "destination_concurrency_limit"), 11);
	ATF_CHECK_EQ(pconfig_get_int_tr("relay", "delivery_slot_cost"), 2);
	ATF_CHECK_EQ(pconfig_get_time("default_destination_rate_delay"), 1);
	pconfig_item_t it;
	ATF_REQUIRE(pconfig_item("delivery_slot_cost", &it));
	ATF_CHECK_STREQ(it.name, "default_delivery_slot_cost");
	ATF_CHECK_STREQ(it.value, "2");
	ATF_CHECK_STREQ(it.defval, "5");
	ATF_REQUIRE(pconfig_item("foo_delivery_slot_cost", &it));
	ATF_CHECK_STREQ(it.value, "$default_delivery_slot_cost");
	ATF_CHECK_EQ(it.origin, PCONFIG_DEFAULT);
	ATF_CHECK(!pconfig_item("foo_delivery_slot_costs", &it));
}

/* With a master.cf, TRANSPORT must be one of its services. */
ATF_TC_WITHOUT_HEAD(load_directory);
ATF_TC_BODY(load_directory, tc)
{
	ATF_REQUIRE(mkdir("etc", 0755) == 0);
	ATF_CHECK_EQ(pconfig_load("etc"), -1);
	CHECK_LINE(pconfig_errors(), "etc/main.cf: cannot read: No such file or directory");
	put_file("etc/main.cf",
	    "relay_destination_concurrency_limit = 3\n"
	    "smpt_destination_concurrency_limit = 3\n"
	    "queue_directory = /var/tmp/q\n");
	put_file("etc/master.cf",
	    "smtp unix - - n - - smtp\n"
	    "relay unix - - n - - smtp\n");
	ATF_CHECK_EQ(pconfig_load("etc"), 0);
	ATF_CHECK_STREQ(pconfig_file(), "etc/main.cf");
	ATF_CHECK_STREQ(pconfig_get_str("config_directory"), "etc");
	ATF_CHECK_STREQ(pconfig_get_str("queue_directory"), "/var/tmp/q");
	ATF_CHECK_STREQ(pconfig_warnings(), "etc/main.cf:2: parameter "
	    "smpt_destination_concurrency_limit: no master.cf service matches the "
	    "part before _destination_concurrency_limit\n");
	/* the value is kept all the same */
	ATF_CHECK_EQ(pconfig_get_int_tr("smpt", "destination_concurrency_limit"), 3);
	/* a load starts from the defaults again */
	put_file("etc/main.cf", "# nothing\n");
	ATF_CHECK_EQ(pconfig_load("etc"), 0);
	ATF_CHECK_EQ(pconfig_get_int_tr("relay", "destination_concurrency_limit"), 20);
	/* a main.cf installed as a symbolic link is read through it... */
	put_file("real.cf", "max_use = 9\n");
	ATF_REQUIRE(unlink("etc/main.cf") == 0);
	ATF_REQUIRE(symlink("../real.cf", "etc/main.cf") == 0);
	ATF_CHECK_EQ(pconfig_load("etc"), 0);
	ATF_CHECK_EQ(pconfig_get_int("max_use"), 9);
	/* ...but it must end at a regular file */
	ATF_REQUIRE(unlink("etc/main.cf") == 0);
	ATF_REQUIRE(mkfifo("etc/main.cf", 0600) == 0);
	ATF_CHECK_EQ(pconfig_load("etc"), -1);
	CHECK_LINE(pconfig_errors(), "etc/main.cf: cannot read: Invalid argument");
}

ATF_TC_WITHOUT_HEAD(overrides);
ATF_TC_BODY(overrides, tc)
{
	str_t err = STR_INIT;
	ATF_REQUIRE_EQ(load("myhostname = a.example\nsmtpd_timeout = 60s\n"), 0);
	ATF_CHECK_STREQ(pconfig_get_str("myorigin"), "a.example");
	/* dependent values follow an override */
	ATF_CHECK_EQ(pconfig_override("myhostname", "b.example", "master.cf:3", &err), 0);
	ATF_CHECK_STREQ(pconfig_get_str("myorigin"), "b.example");
	ATF_CHECK_EQ(pconfig_override("smtpd_timeout", "5m", "master.cf:3", &err), 0);
	ATF_CHECK_EQ(pconfig_get_time("smtpd_timeout"), 300);
	/* a bad value is refused with the origin, the old value stays */
	ATF_CHECK_EQ(pconfig_override("smtpd_timeout", "forever", "master.cf:4", &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err), "master.cf:4: bad time value 'forever' for "
	    "parameter smtpd_timeout (a number with an optional unit s, m, h, d or w)");
	ATF_CHECK_EQ(pconfig_get_time("smtpd_timeout"), 300);
	ATF_CHECK_EQ(pconfig_override("bad name", "x", "master.cf:5", &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err), "master.cf:5: bad parameter name 'bad name'");
	ATF_CHECK_EQ(pconfig_override("smtp_destination_concurrency_limit", "x", NULL, &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err), "bad integer value 'x' for parameter "
	    "smtp_destination_concurrency_limit");
	/* a loop made by an override is refused too */
	ATF_CHECK_EQ(pconfig_override("myhostname", "$myorigin", "cmd", &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err), "cmd: parameter expansion loop: "
	    "$myhostname -> $myorigin -> $myhostname");
	ATF_CHECK_STREQ(pconfig_get_str("myhostname"), "b.example");
	/* overrides are not main.cf settings */
	pconfig_item_t it;
	ATF_REQUIRE(pconfig_item("smtpd_timeout", &it));
	ATF_CHECK_EQ(it.origin, PCONFIG_OVERRIDE);
	ATF_CHECK_STREQ(it.value, "5m");
	/* unknown names: accepted (with a warning in the log) */
	ATF_CHECK_EQ(pconfig_override("my_own_thing", "v", NULL, &err), 0);
	ATF_CHECK_STREQ(pconfig_get_str("my_own_thing"), "v");
	str_release(&err);
}

static bool sorted_has(const pconfig_item_t *items, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(items[i].name, name) == 0)
			return true;
	return false;
}

ATF_TC_WITHOUT_HEAD(listing);
ATF_TC_BODY(listing, tc)
{
	size_t n, tn;
	param_table(&tn);
	ATF_REQUIRE_EQ(load("smtp_destination_concurrency_limit = 3\n"
	    "my_list = a b\nmynetworks = $my_list\n"), 0);
	pconfig_item_t *items = pconfig_list(&n);
	ATF_CHECK_EQ(n, tn + 2);
	for (size_t i = 1; i < n; i++)
		ATF_CHECK_MSG(strcmp(items[i - 1].name, items[i].name) < 0,
		    "%s before %s", items[i - 1].name, items[i].name);
	ATF_CHECK(sorted_has(items, n, "smtp_destination_concurrency_limit"));
	ATF_CHECK(sorted_has(items, n, "my_list"));
	ATF_CHECK(sorted_has(items, n, "2bounce_notice_recipient"));
	int set = 0;
	for (size_t i = 0; i < n; i++) {
		if (items[i].origin == PCONFIG_FILE)
			set++;
		if (strcmp(items[i].name, "smtp_destination_concurrency_limit") == 0) {
			ATF_CHECK_STREQ(items[i].value, "3");
			ATF_CHECK_STREQ(items[i].defval, "$default_destination_concurrency_limit");
			ATF_CHECK(items[i].def == param_find("default_destination_concurrency_limit"));
		}
		if (strcmp(items[i].name, "mynetworks") == 0)
			ATF_CHECK_STREQ(items[i].value, "$my_list");
	}
	ATF_CHECK_EQ(set, 3);
	free(items);
}

ATF_TC_WITHOUT_HEAD(nul_byte);
ATF_TC_BODY(nul_byte, tc)
{
	ATF_REQUIRE(mkdir("etc", 0755) == 0);
	FILE *f = fopen("etc/main.cf", "w");
	ATF_REQUIRE(f != NULL);
	fwrite("a = b\0c\n", 1, 8, f);
	fclose(f);
	ATF_CHECK_EQ(pconfig_load("etc"), -1);
	CHECK_LINE(pconfig_errors(), "etc/main.cf: contains a NUL byte");
}

/* myhostname's default comes from the hosts file, never from DNS. */
ATF_TC_WITHOUT_HEAD(hosts_file_fqdn);
ATF_TC_BODY(hosts_file_fqdn, tc)
{
	FILE *f = fopen("hosts", "w");
	ATF_REQUIRE(f != NULL);
	fputs("# comment mentioning box box.wrong.example\n"
	    "127.0.0.1\tlocalhost\n"
	    "10.9.9.9 other other.example.net\n"
	    "192.0.2.7  Box\tmail.example.org box.example.org # trailing\n"
	    "192.0.2.8 lone\n"
	    "192.0.2.9 rooted rooted.example.com.\n", f);
	fclose(f);
	char *v = hosts_file_fqdn("hosts", "box");
	ATF_CHECK(v != NULL && strcmp(v, "mail.example.org") == 0);
	free(v);
	ATF_CHECK(hosts_file_fqdn("hosts", "lone") == NULL);	/* no dotted alias */
	ATF_CHECK(hosts_file_fqdn("hosts", "rooted") == NULL);	/* root dot refused */
	ATF_CHECK(hosts_file_fqdn("hosts", "absent") == NULL);
	ATF_CHECK(hosts_file_fqdn("no-such-file", "box") == NULL);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, defaults);
	ATF_TP_ADD_TC(tp, hosts_file_fqdn);
	ATF_TP_ADD_TC(tp, table_is_consistent);
	ATF_TP_ADD_TC(tp, syntax);
	ATF_TP_ADD_TC(tp, bad_lines);
	ATF_TP_ADD_TC(tp, typed_values);
	ATF_TP_ADD_TC(tp, expansion);
	ATF_TP_ADD_TC(tp, expansion_unknown_and_unused);
	ATF_TP_ADD_TC(tp, expansion_loop);
	ATF_TP_ADD_TC(tp, expansion_loop_through_default);
	ATF_TP_ADD_TC(tp, expansion_bounds);
	ATF_TP_ADD_TC(tp, expanded_value_errors);
	ATF_TP_ADD_TC(tp, mydomain_from_hostname);
	ATF_TP_ADD_TC(tp, per_transport);
	ATF_TP_ADD_TC(tp, per_transport_errors_and_aliases);
	ATF_TP_ADD_TC(tp, load_directory);
	ATF_TP_ADD_TC(tp, overrides);
	ATF_TP_ADD_TC(tp, listing);
	ATF_TP_ADD_TC(tp, nul_byte);
	return atf_no_error();
}
