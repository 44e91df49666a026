/* The one NOTIFY encoding (libglobal/dsn_notify.c): validation, the
 * three input syntaxes, the formatter, and that what the formatter
 * writes the strict parser reads back. */
#include <atf-c.h>
#include <string.h>
#include "dsn_notify.h"
#include "str.h"

enum { S = DSN_NOTIFY_SUCCESS, F = DSN_NOTIFY_FAILURE, D = DSN_NOTIFY_DELAY,
	N = DSN_NOTIFY_NEVER };

static int parse(const char *text, enum dsn_notify_syntax syn,
    const char **why)
{
	*why = NULL;
	return dsn_notify_parse(text, strlen(text), syn, why);
}

ATF_TC_WITHOUT_HEAD(wire_values);
ATF_TC_BODY(wire_values, tc)
{
	/* Part of the queue file and the delivery protocol. */
	ATF_CHECK_EQ(S, 1);
	ATF_CHECK_EQ(F, 2);
	ATF_CHECK_EQ(D, 4);
	ATF_CHECK_EQ(N, 8);
	ATF_CHECK_EQ(DSN_NOTIFY_ANY, 7);
}

ATF_TC_WITHOUT_HEAD(valid);
ATF_TC_BODY(valid, tc)
{
	for (long v = -2; v <= 17; v++) {
		bool want = v >= 0 && (v <= 7 || v == 8);
		ATF_CHECK_MSG(dsn_notify_valid(v) == want, "value %ld", v);
	}
	ATF_CHECK(!dsn_notify_valid(N | S));
	ATF_CHECK(!dsn_notify_valid(1L << 40));
}

ATF_TC_WITHOUT_HEAD(parse_smtp);
ATF_TC_BODY(parse_smtp, tc)
{
	const char *why;

	ATF_CHECK_EQ(parse("NEVER", DSN_NOTIFY_SMTP, &why), N);
	ATF_CHECK_EQ(parse("delay,Success", DSN_NOTIFY_SMTP, &why), S | D);
	ATF_CHECK_EQ(parse("SUCCESS,FAILURE,DELAY", DSN_NOTIFY_SMTP, &why),
	    S | F | D);
	ATF_CHECK_EQ(parse("FAILURE,FAILURE", DSN_NOTIFY_SMTP, &why), F);
	ATF_CHECK(why == NULL);

	ATF_CHECK_EQ(parse("NEVER,SUCCESS", DSN_NOTIFY_SMTP, &why), -1);
	ATF_CHECK_STREQ(why, "NOTIFY=NEVER cannot be combined with other "
	    "values");
	const char *bad[] = { "", ",", "SUCCESS,", ",SUCCESS", "SUCCESS,,DELAY",
		"ALWAYS", "SUCCESSFUL", "SUCCESS DELAY", " SUCCESS", "NEVER,X" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ATF_CHECK_EQ_MSG(parse(bad[i], DSN_NOTIFY_SMTP, &why), -1,
		    "\"%s\"", bad[i]);
		ATF_CHECK_STREQ(why, "NOTIFY must be NEVER or a list of "
		    "SUCCESS, FAILURE, DELAY");
	}
	/* Only len bytes count. */
	ATF_CHECK_EQ(dsn_notify_parse("DELAYED", 5, DSN_NOTIFY_SMTP, NULL), D);
}

ATF_TC_WITHOUT_HEAD(parse_list);
ATF_TC_BODY(parse_list, tc)
{
	const char *why;

	ATF_CHECK_EQ(parse("never", DSN_NOTIFY_LIST, &why), N);
	ATF_CHECK_EQ(parse(" Failure , success ", DSN_NOTIFY_LIST, &why), S | F);
	ATF_CHECK_EQ(parse("delay\tsuccess,,", DSN_NOTIFY_LIST, &why), S | D);
	ATF_CHECK_EQ(parse("never,success", DSN_NOTIFY_LIST, &why), -1);
	ATF_CHECK(why != NULL);
	ATF_CHECK_EQ(parse("", DSN_NOTIFY_LIST, &why), -1);
	ATF_CHECK_EQ(parse(" , ", DSN_NOTIFY_LIST, &why), -1);
	ATF_CHECK_EQ(parse("sometimes", DSN_NOTIFY_LIST, &why), -1);
}

ATF_TC_WITHOUT_HEAD(parse_lenient);
ATF_TC_BODY(parse_lenient, tc)
{
	const char *why;

	/* Unknown words count as nothing; NEVER is left to the validator. */
	ATF_CHECK_EQ(parse("SUCCESS,bogus,,delay", DSN_NOTIFY_LENIENT, &why),
	    S | D);
	ATF_CHECK_EQ(parse("bogus", DSN_NOTIFY_LENIENT, &why), 0);
	ATF_CHECK_EQ(parse("", DSN_NOTIFY_LENIENT, &why), 0);
	ATF_CHECK_EQ(parse("NEVER,SUCCESS", DSN_NOTIFY_LENIENT, &why), N | S);
	ATF_CHECK(why == NULL);
}

ATF_TC_WITHOUT_HEAD(format);
ATF_TC_BODY(format, tc)
{
	str_t s = STR_INIT;

	dsn_notify_format(0, false, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "");
	dsn_notify_format(N, false, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "NEVER");
	str_reset(&s);
	dsn_notify_format(D | S, false, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "SUCCESS,DELAY");
	str_set(&s, "-N ");
	dsn_notify_format(F | D | S, true, &s);
	ATF_CHECK_STREQ(str_cstr(&s), "-N success,failure,delay");
	str_release(&s);
}

ATF_TC_WITHOUT_HEAD(round_trip);
ATF_TC_BODY(round_trip, tc)
{
	str_t s = STR_INIT;

	for (int v = 1; v <= 15; v++) {
		if (!dsn_notify_valid(v))
			continue;
		for (int lower = 0; lower <= 1; lower++) {
			str_reset(&s);
			dsn_notify_format(v, lower, &s);
			ATF_CHECK_EQ_MSG(dsn_notify_parse(str_cstr(&s),
			    str_len(&s), DSN_NOTIFY_SMTP, NULL), v, "%d: %s", v,
			    str_cstr(&s));
			ATF_CHECK_EQ(dsn_notify_parse(str_cstr(&s), str_len(&s),
			    DSN_NOTIFY_LIST, NULL), v);
		}
	}
	str_release(&s);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, wire_values);
	ATF_TP_ADD_TC(tp, valid);
	ATF_TP_ADD_TC(tp, parse_smtp);
	ATF_TP_ADD_TC(tp, parse_list);
	ATF_TP_ADD_TC(tp, parse_lenient);
	ATF_TP_ADD_TC(tp, format);
	ATF_TP_ADD_TC(tp, round_trip);
	return atf_no_error();
}
