/* Unit tests for libglobal/mail_date: the RFC 5322 date-time that the
 * Date: header (with the zone's name) and DSN fields (without) carry. */
#include <atf-c.h>
#include <stdlib.h>
#include <time.h>
#include "mail_date.h"
#include "str.h"

static void check(const char *tz, time_t t, int flags, const char *want)
{
	str_t s = STR_INIT;

	setenv("TZ", tz, 1);
	tzset();
	str_set(&s, "Date: ");
	mail_date_format(t, flags, &s);
	ATF_CHECK_STREQ_MSG(str_cstr(&s) + 6, want, "TZ=%s flags=%d", tz,
	    flags);
	ATF_CHECK_EQ(str_cstr(&s)[0], 'D');	/* appended, not replaced */
	str_release(&s);
}

ATF_TC_WITHOUT_HEAD(utc);
ATF_TC_BODY(utc, tc)
{
	check("UTC", 0, 0, "Thu, 1 Jan 1970 00:00:00 +0000");
	check("UTC", 0, MAIL_DATE_ZONE_NAME,
	    "Thu, 1 Jan 1970 00:00:00 +0000 (UTC)");
	check("UTC", 1767225600, 0, "Thu, 1 Jan 2026 00:00:00 +0000");
}

ATF_TC_WITHOUT_HEAD(offsets);
ATF_TC_BODY(offsets, tc)
{
	/* east of Greenwich, with half hours */
	check("IST-5:30", 1700000000, 0, "Wed, 15 Nov 2023 03:43:20 +0530");
	check("IST-5:30", 1700000000, MAIL_DATE_ZONE_NAME,
	    "Wed, 15 Nov 2023 03:43:20 +0530 (IST)");
	/* west, across midnight and the year */
	check("NST+3:30", 1700000000, MAIL_DATE_ZONE_NAME,
	    "Tue, 14 Nov 2023 18:43:20 -0330 (NST)");
	check("EST5", 1767225600, 0, "Wed, 31 Dec 2025 19:00:00 -0500");
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, utc);
	ATF_TP_ADD_TC(tp, offsets);
	return atf_no_error();
}
