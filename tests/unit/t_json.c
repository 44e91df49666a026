/* libutil/json: strings made safe for JSON, UTF-8 kept when valid. */
#include <atf-c.h>
#include <string.h>
#include "json.h"

static void json_is(const char *in, const char *want)
{
	str_t out = STR_INIT;

	json_str(&out, in);
	ATF_CHECK_MSG(strcmp(str_cstr(&out), want) == 0, "%s: got %s, want %s",
	    in, str_cstr(&out), want);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(json_strings);
ATF_TC_BODY(json_strings, tc)
{
	json_is("", "\"\"");
	json_is("plain text", "\"plain text\"");
	json_is("q\"b\\", "\"q\\\"b\\\\\"");
	json_is("a\nb\rc\td", "\"a\\nb\\rc\\td\"");
	json_is("\001\037\177", "\"\\u0001\\u001f\\u007f\"");
	/* UTF-8 kept, 2 to 4 bytes */
	json_is("caf\303\251 \342\202\254 \360\237\230\200", "\"caf\303\251 \342\202\254 \360\237\230\200\"");
	/* not UTF-8: each byte escaped as the code point of its value */
	json_is("\377", "\"\\u00ff\"");
	json_is("\303", "\"\\u00c3\"");			/* cut sequence */
	json_is("\303(", "\"\\u00c3(\"");
	json_is("\300\257", "\"\\u00c0\\u00af\"");	/* overlong */
	json_is("\355\240\200", "\"\\u00ed\\u00a0\\u0080\"");	/* surrogate */
	json_is("\364\220\200\200", "\"\\u00f4\\u0090\\u0080\\u0080\"");	/* > U+10FFFF */
	json_is(NULL, "\"\"");
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, json_strings);
	return atf_no_error();
}
