/* showq's request line: "text" and "json" only, anything else refused
 * with the offending text quoted. */
#include <atf-c.h>
#include <string.h>
#include "queue_list.h"
#include "showq/showq.h"

ATF_TC_WITHOUT_HEAD(requests);
ATF_TC_BODY(requests, tc)
{
	str_t err = STR_INIT;
	int flags = -1;

	ATF_CHECK_EQ(showq_parse_request("text", &flags, &err), 0);
	ATF_CHECK_EQ(flags, 0);
	ATF_CHECK_EQ(showq_parse_request("json", &flags, &err), 0);
	ATF_CHECK_EQ(flags, QUEUE_LIST_JSON);
	ATF_CHECK_EQ(showq_parse_request("", &flags, &err), -1);
	ATF_CHECK_EQ(showq_parse_request("JSON", &flags, &err), -1);
	ATF_CHECK_EQ(showq_parse_request("text ", &flags, &err), -1);
	ATF_CHECK_EQ(showq_parse_request("bo\001gus", &flags, &err), -1);
	ATF_CHECK_MSG(strstr(str_cstr(&err), "expected \"text\" or \"json\"")
	    != NULL, "%s", str_cstr(&err));
	ATF_CHECK_MSG(strchr(str_cstr(&err), '\001') == NULL,
	    "control character not quoted: %s", str_cstr(&err));
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, requests);
	return atf_no_error();
}
