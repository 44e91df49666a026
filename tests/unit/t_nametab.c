/* libutil/nametab: names of enum values, both ways. */
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
	ATF_CHECK_STREQ(nametab_name(colour_names, n, COLOUR_RED, "?"), "red");
	ATF_CHECK_STREQ(nametab_name(colour_names, n, COLOUR_NONE, "?"),
	    "none");
	ATF_CHECK_STREQ(nametab_name(colour_names, n, COLOUR_BLUE, "?"),
	    "blue");
	/* No name, out of range either way: the caller's default. */
	ATF_CHECK_STREQ(nametab_name(colour_names, n, COLOUR_GAP, "?"), "?");
	ATF_CHECK_STREQ(nametab_name(colour_names, n, 4, "?"), "?");
	ATF_CHECK_STREQ(nametab_name(colour_names, n, -1, "?"), "?");
	ATF_CHECK(nametab_name(colour_names, n, 9, NULL) == NULL);
}

ATF_TC_WITHOUT_HEAD(nametab_value);
ATF_TC_BODY(nametab_value, tc)
{
	size_t n = NAMETAB_SIZE(colour_names);

	ATF_CHECK_EQ(nametab_value(colour_names, n, 0, "red"), COLOUR_RED);
	ATF_CHECK_EQ(nametab_value(colour_names, n, 0, "blue"), COLOUR_BLUE);
	ATF_CHECK_EQ(nametab_value(colour_names, n, 0, "none"), COLOUR_NONE);
	/* Values below first are not names for the parser. */
	ATF_CHECK_EQ(nametab_value(colour_names, n, COLOUR_RED, "none"), -1);
	ATF_CHECK_EQ(nametab_value(colour_names, n, COLOUR_RED, "red"),
	    COLOUR_RED);
	/* Exact match only; unknown and NULL are not found. */
	ATF_CHECK_EQ(nametab_value(colour_names, n, 0, "Red"), -1);
	ATF_CHECK_EQ(nametab_value(colour_names, n, 0, "re"), -1);
	ATF_CHECK_EQ(nametab_value(colour_names, n, 0, "reds"), -1);
	ATF_CHECK_EQ(nametab_value(colour_names, n, 0, ""), -1);
	ATF_CHECK_EQ(nametab_value(colour_names, n, 0, NULL), -1);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, nametab_name);
	ATF_TP_ADD_TC(tp, nametab_value);
	return atf_no_error();
}
