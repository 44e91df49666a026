/* Unit tests for libutil/str: growable strings and the string helpers. */
#include <atf-c.h>
#include <stdlib.h>
#include <string.h>
#include "str.h"

ATF_TC_WITHOUT_HEAD(grow_and_format);
ATF_TC_BODY(grow_and_format, tc)
{
	str_t *s = str_new(1);
	for (int i = 0; i < 1000; i++)
		str_catf(s, "%d,", i);
	ATF_CHECK_EQ(strlen(str_cstr(s)), str_len(s));
	ATF_CHECK(strncmp(str_cstr(s), "0,1,2,", 6) == 0);
	ATF_CHECK(strcmp(str_cstr(s) + str_len(s) - 4, "999,") == 0);
	str_setf(s, "%s-%05d", "x", 42);
	ATF_CHECK_STREQ(str_cstr(s), "x-00042");
	str_truncate(s, 1);
	ATF_CHECK_STREQ(str_cstr(s), "x");
	str_truncate(s, 100);	/* longer than the string: no change */
	ATF_CHECK_EQ(str_len(s), 1);
	str_free(s);
}

ATF_TC_WITHOUT_HEAD(binary_data);
ATF_TC_BODY(binary_data, tc)
{
	str_t s = STR_INIT;
	str_append(&s, "a\0b", 3);
	ATF_CHECK_EQ(str_len(&s), 3);
	ATF_CHECK(memcmp(s.buf, "a\0b", 4) == 0);	/* NUL kept after data */
	char *p = str_steal(&s);
	ATF_CHECK(p[1] == 0 && p[2] == 'b');
	ATF_CHECK_EQ(str_len(&s), 0);
	ATF_CHECK_STREQ(str_cstr(&s), "");
	free(p);
}

ATF_TC_WITHOUT_HEAD(bounded);
ATF_TC_BODY(bounded, tc)
{
	char buf[8];
	ATF_CHECK(bfmt(buf, sizeof(buf), "%s", "1234567"));
	ATF_CHECK(!bfmt(buf, sizeof(buf), "%s", "12345678"));
	ATF_CHECK_STREQ(buf, "1234567");
	ATF_CHECK(bcopy_str(buf, sizeof(buf), "abc"));
	ATF_CHECK(!bcopy_str(buf, 4, "abcdef"));
	ATF_CHECK_STREQ(buf, "abc");
}

ATF_TC_WITHOUT_HEAD(tokens);
ATF_TC_BODY(tokens, tc)
{
	char line[] = " ,a,, b ,c";
	char *cp = line, *t;
	const char *want[] = { "a", "b", "c" };
	int n = 0;
	while ((t = str_token(&cp, ", ")) != NULL) {
		ATF_REQUIRE(n < 3);
		ATF_CHECK_STREQ(t, want[n]);
		n++;
	}
	ATF_CHECK_EQ(n, 3);
	char sp[] = "  \tpad me \n";
	ATF_CHECK_STREQ(str_trim(sp), "pad me");
	char up[] = "MiXeD.Example.COM";
	ATF_CHECK_STREQ(str_lower(up), "mixed.example.com");
}

ATF_TC_WITHOUT_HEAD(quote_and_numbers);
ATF_TC_BODY(quote_and_numbers, tc)
{
	str_t s = STR_INIT;
	str_quote_printable(&s, "a\nb\\\001", 5);
	ATF_CHECK_STREQ(str_cstr(&s), "a\\012b\\\\\\001");
	str_release(&s);
	unsigned long u;
	long l;
	ATF_CHECK(str_to_ulong("42", &u) && u == 42);
	ATF_CHECK(!str_to_ulong("-1", &u));
	ATF_CHECK(!str_to_ulong("12x", &u));
	ATF_CHECK(!str_to_ulong("", &u));
	ATF_CHECK(!str_to_ulong("99999999999999999999999", &u));
	ATF_CHECK(str_to_long("-7", &l) && l == -7);
	ATF_CHECK(!str_to_long("- 7", &l));
}

ATF_TC_WITHOUT_HEAD(utf8_len);
ATF_TC_BODY(utf8_len, tc)
{
	ATF_CHECK_EQ(str_utf8_len("a", 1), 1);
	ATF_CHECK_EQ(str_utf8_len("", 1), 1);		/* NUL is ASCII */
	ATF_CHECK_EQ(str_utf8_len("a", 0), 0);
	ATF_CHECK_EQ(str_utf8_len("\xc3\xa9", 2), 2);	/* U+00E9 */
	ATF_CHECK_EQ(str_utf8_len("\xe2\x82\xac", 3), 3);	/* U+20AC */
	ATF_CHECK_EQ(str_utf8_len("\xf0\x9f\x90\xa6", 4), 4);	/* U+1F426 */
	ATF_CHECK_EQ(str_utf8_len("\xf4\x8f\xbf\xbf", 4), 4);	/* U+10FFFF */
	/* Cut by avail, or by the string's end. */
	ATF_CHECK_EQ(str_utf8_len("\xe2\x82\xac", 2), 0);
	ATF_CHECK_EQ(str_utf8_len("\xe2\x82", 3), 0);
	/* Stray continuation, overlong forms, surrogates, past U+10FFFF. */
	ATF_CHECK_EQ(str_utf8_len("\x80", 1), 0);
	ATF_CHECK_EQ(str_utf8_len("\xc0\xaf", 2), 0);
	ATF_CHECK_EQ(str_utf8_len("\xc1\xbf", 2), 0);
	ATF_CHECK_EQ(str_utf8_len("\xe0\x80\xaf", 3), 0);
	ATF_CHECK_EQ(str_utf8_len("\xf0\x80\x80\xaf", 4), 0);
	ATF_CHECK_EQ(str_utf8_len("\xed\xa0\x80", 3), 0);
	ATF_CHECK_EQ(str_utf8_len("\xf4\x90\x80\x80", 4), 0);
	ATF_CHECK_EQ(str_utf8_len("\xf5\x80\x80\x80", 4), 0);
	ATF_CHECK_EQ(str_utf8_len("\xff", 1), 0);
	/* Only the first character counts. */
	ATF_CHECK_EQ(str_utf8_len("\xc3\xa9\xc3\xa9", 4), 2);
}

ATF_TC_WITHOUT_HEAD(time_unit);
ATF_TC_BODY(time_unit, tc)
{
	ATF_CHECK_EQ(str_time_unit('s'), 1);
	ATF_CHECK_EQ(str_time_unit('m'), 60);
	ATF_CHECK_EQ(str_time_unit('h'), 3600);
	ATF_CHECK_EQ(str_time_unit('d'), 86400);
	ATF_CHECK_EQ(str_time_unit('w'), 604800);
	ATF_CHECK_EQ(str_time_unit('S'), 0);
	ATF_CHECK_EQ(str_time_unit('y'), 0);
	ATF_CHECK_EQ(str_time_unit(0), 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, grow_and_format);
	ATF_TP_ADD_TC(tp, binary_data);
	ATF_TP_ADD_TC(tp, bounded);
	ATF_TP_ADD_TC(tp, tokens);
	ATF_TP_ADD_TC(tp, quote_and_numbers);
	ATF_TP_ADD_TC(tp, utf8_len);
	ATF_TP_ADD_TC(tp, time_unit);
	return atf_no_error();
}
