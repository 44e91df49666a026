/* libutil/nametab: names of enum values, both ways; entry 0 is the
 * answer for what is not in the table. */
#include <atf-c.h>
#include <string.h>
#include "nametab.h"

enum colour { COLOUR_NONE, COLOUR_RED, COLOUR_GAP, COLOUR_BLUE };

static const char *const colour_names[] = {
	[COLOUR_NONE] = "none",
	[COLOUR_RED] = "red",
	[COLOUR_BLUE] = "blue",
};

ATF_TC_WITHOUT_HEAD(nametab_name);
ATF_TC_BODY(nametab_name, tc)
{
	size_t n = NAMETAB_SIZE(colour_names);

	ATF_CHECK_EQ(n, 4);
	ATF_CHECK_STREQ(nametab_name(colour_names, n, COLOUR_RED), "red");
	ATF_CHECK_STREQ(nametab_name(colour_names, n, COLOUR_NONE), "none");
	ATF_CHECK_STREQ(nametab_name(colour_names, n, COLOUR_BLUE), "blue");
	/* No name, out of range either way: entry 0's name. */
	ATF_CHECK_STREQ(nametab_name(colour_names, n, COLOUR_GAP), "none");
	ATF_CHECK_STREQ(nametab_name(colour_names, n, 4), "none");
	ATF_CHECK_STREQ(nametab_name(colour_names, n, -1), "none");
}

ATF_TC_WITHOUT_HEAD(nametab_value);
ATF_TC_BODY(nametab_value, tc)
{
	size_t n = NAMETAB_SIZE(colour_names);

	ATF_CHECK_EQ(nametab_value(colour_names, n, "red"), COLOUR_RED);
	ATF_CHECK_EQ(nametab_value(colour_names, n, "blue"), COLOUR_BLUE);
	/* Entry 0 is what is not found, its own name included. */
	ATF_CHECK_EQ(nametab_value(colour_names, n, "none"), COLOUR_NONE);
	ATF_CHECK_EQ(nametab_value(colour_names, n, "Red"), COLOUR_NONE);
	ATF_CHECK_EQ(nametab_value(colour_names, n, "re"), COLOUR_NONE);
	ATF_CHECK_EQ(nametab_value(colour_names, n, "reds"), COLOUR_NONE);
	ATF_CHECK_EQ(nametab_value(colour_names, n, ""), COLOUR_NONE);
	ATF_CHECK_EQ(nametab_value(colour_names, n, NULL), COLOUR_NONE);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, nametab_name);
	ATF_TP_ADD_TC(tp, nametab_value);
	return atf_no_error();
}
