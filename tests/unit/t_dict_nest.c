/* Unit tests for dict_nest (libutil/dict.c): the if/endif stack that
 * the cidr:, regexp: and pcre: tables keep while their file is read. */
#include <atf-c.h>
#include "dict.h"
#include "str.h"

ATF_TC_WITHOUT_HEAD(nesting);
ATF_TC_BODY(nesting, tc)
{
	dict_nest_t n = { 0 };
	str_t err = STR_INIT;
	size_t rule = 99;

	ATF_CHECK(dict_nest_closed(&n, "t", &err));
	/* deeper than the first allocation */
	for (size_t i = 0; i < 20; i++)
		dict_nest_push(&n, 10 * i, (int)i + 1);
	ATF_CHECK(!dict_nest_closed(&n, "t", &err));
	ATF_CHECK_STREQ(str_cstr(&err), "t:20: \"if\" without \"endif\"");
	for (size_t i = 20; i-- > 0;) {
		ATF_REQUIRE(dict_nest_pop(&n, &rule, "t", 50, &err));
		ATF_CHECK_EQ(rule, 10 * i);	/* innermost first */
	}
	ATF_CHECK(dict_nest_closed(&n, "t", &err));
	rule = 99;
	ATF_CHECK(!dict_nest_pop(&n, &rule, "t", 51, &err));
	ATF_CHECK_STREQ(str_cstr(&err), "t:51: \"endif\" without \"if\"");
	ATF_CHECK_EQ(rule, 99);
	dict_nest_free(&n);
	ATF_CHECK_EQ(n.depth, 0);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, nesting);
	return atf_no_error();
}
