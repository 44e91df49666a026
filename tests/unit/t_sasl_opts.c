/* Unit tests for libglobal/sasl_opts: the words of the SASL security
 * options, in any case, blank or comma separated, and the first word
 * that is none of them. */
#include <atf-c.h>
#include <string.h>
#include "sasl_opts.h"

ATF_TC_WITHOUT_HEAD(words);
ATF_TC_BODY(words, tc)
{
	str_t err = STR_INIT;
	unsigned m = 99;

	ATF_CHECK_EQ(sasl_opts_parse("", &m, &err), 0);
	ATF_CHECK_EQ(m, 0);
	ATF_CHECK_EQ(sasl_opts_parse(NULL, &m, &err), 0);
	ATF_CHECK_EQ(m, 0);
	ATF_CHECK_EQ(sasl_opts_parse(" , \t", &m, &err), 0);
	ATF_CHECK_EQ(m, 0);
	ATF_CHECK_EQ(sasl_opts_parse("noplaintext, noanonymous", &m, &err), 0);
	ATF_CHECK_EQ(m, SASL_OPT_NOPLAINTEXT | SASL_OPT_NOANONYMOUS);
	ATF_CHECK_EQ(sasl_opts_parse("NoActive\tNODICTIONARY,,mutual_auth "
	    "Forward_Secrecy", &m, &err), 0);
	ATF_CHECK_EQ(m, SASL_OPT_NOACTIVE | SASL_OPT_NODICTIONARY |
	    SASL_OPT_MUTUAL_AUTH | SASL_OPT_FORWARD_SECRECY);
	ATF_CHECK_EQ(sasl_opts_parse("noanonymous noanonymous", &m, &err), 0);
	ATF_CHECK_EQ(m, SASL_OPT_NOANONYMOUS);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(bad_word);
ATF_TC_BODY(bad_word, tc)
{
	str_t err = STR_INIT;
	unsigned m;
	size_t n = 0;
	const char *v = "noanonymous, noplain noactive";
	const char *bad = sasl_opts_scan(v, &m, &n);

	ATF_REQUIRE(bad != NULL);
	ATF_CHECK_EQ(bad, v + 13);
	ATF_CHECK_EQ(n, 7);
	ATF_CHECK_EQ(m, SASL_OPT_NOANONYMOUS);
	ATF_CHECK_EQ(sasl_opts_parse(v, &m, &err), -1);
	ATF_CHECK_STREQ(str_cstr(&err),
	    "unknown SASL security option \"noplain\"");
	/* A prefix or an extension of a word is no word. */
	ATF_CHECK(sasl_opts_scan("noanonymousx", &m, &n) != NULL);
	ATF_CHECK(sasl_opts_scan("mutual", &m, &n) != NULL);
	ATF_CHECK(sasl_opts_scan("noplaintext;", &m, &n) != NULL);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, words);
	ATF_TP_ADD_TC(tp, bad_word);
	return atf_no_error();
}
