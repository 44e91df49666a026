/* smtpd's command line parser and the small syntax helpers. */
#include <atf-c.h>
#include <string.h>
#include "smtpd/smtpd.h"

ATF_TC_WITHOUT_HEAD(parse);
ATF_TC_BODY(parse, tc)
{
	static const struct {
		const char *line;
		enum smtpd_cmd_status st;
		enum smtpd_verb verb;
		const char *word, *arg;
	} cases[] = {
		{ "EHLO client.example", SMTPD_CMD_OK, SMTPD_V_EHLO, "EHLO", "client.example" },
		{ "ehlo client.example", SMTPD_CMD_OK, SMTPD_V_EHLO, "ehlo", "client.example" },
		{ "HeLo x", SMTPD_CMD_OK, SMTPD_V_HELO, "HeLo", "x" },
		{ "MAIL FROM:<a@b> SIZE=1", SMTPD_CMD_OK, SMTPD_V_MAIL, "MAIL", "FROM:<a@b> SIZE=1" },
		{ "  RCPT \t TO:<a@b>  \t", SMTPD_CMD_OK, SMTPD_V_RCPT, "RCPT", "TO:<a@b>" },
		{ "DATA", SMTPD_CMD_OK, SMTPD_V_DATA, "DATA", "" },
		{ "DATA ", SMTPD_CMD_OK, SMTPD_V_DATA, "DATA", "" },
		{ "BDAT 10 LAST", SMTPD_CMD_OK, SMTPD_V_BDAT, "BDAT", "10 LAST" },
		{ "rset", SMTPD_CMD_OK, SMTPD_V_RSET, "rset", "" },
		{ "NOOP anything at all", SMTPD_CMD_OK, SMTPD_V_NOOP, "NOOP", "anything at all" },
		{ "QUIT", SMTPD_CMD_OK, SMTPD_V_QUIT, "QUIT", "" },
		{ "VRFY postmaster", SMTPD_CMD_OK, SMTPD_V_VRFY, "VRFY", "postmaster" },
		{ "HELP", SMTPD_CMD_OK, SMTPD_V_HELP, "HELP", "" },
		{ "StartTLS", SMTPD_CMD_OK, SMTPD_V_STARTTLS, "StartTLS", "" },
		{ "EXPN list", SMTPD_CMD_OK, SMTPD_V_EXPN, "EXPN", "list" },
		{ "ETRN example.com", SMTPD_CMD_OK, SMTPD_V_ETRN, "ETRN", "example.com" },
		{ "AUTH PLAIN", SMTPD_CMD_OK, SMTPD_V_AUTH, "AUTH", "PLAIN" },
		{ "MAILFROM:<a@b>", SMTPD_CMD_OK, SMTPD_V_UNKNOWN, "MAILFROM:<a@b>", "" },
		{ "EHLOx", SMTPD_CMD_OK, SMTPD_V_UNKNOWN, "EHLOx", "" },
		{ "GET / HTTP/1.1", SMTPD_CMD_OK, SMTPD_V_UNKNOWN, "GET", "/ HTTP/1.1" },
		{ "", SMTPD_CMD_OK, SMTPD_V_NONE, "", "" },
		{ " \t ", SMTPD_CMD_OK, SMTPD_V_NONE, "", "" },
		{ "NOOP \x01", SMTPD_CMD_CONTROL, SMTPD_V_NONE, "", "" },
		{ "NOOP a\rb", SMTPD_CMD_CONTROL, SMTPD_V_NONE, "", "" },
		{ "NOOP \x7f", SMTPD_CMD_CONTROL, SMTPD_V_NONE, "", "" },
		{ "MAIL FROM:<j\xc3\xb6rg@b>", SMTPD_CMD_OK, SMTPD_V_MAIL, "MAIL", "FROM:<j\xc3\xb6rg@b>" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		smtpd_cmd_t c;
		enum smtpd_cmd_status st = smtpd_cmd_parse(cases[i].line,
		    strlen(cases[i].line), &c);
		ATF_CHECK_EQ_MSG(st, cases[i].st, "%s", cases[i].line);
		if (st != SMTPD_CMD_OK)
			continue;
		ATF_CHECK_EQ_MSG(c.verb, cases[i].verb, "%s", cases[i].line);
		ATF_CHECK_MSG(c.wordlen == strlen(cases[i].word) &&
		    strncmp(c.word, cases[i].word, c.wordlen) == 0,
		    "%s: word %.*s", cases[i].line, (int)c.wordlen, c.word);
		ATF_CHECK_MSG(c.arglen == strlen(cases[i].arg) &&
		    strncmp(c.arg, cases[i].arg, c.arglen) == 0,
		    "%s: arg '%.*s'", cases[i].line, (int)c.arglen, c.arg);
	}
	/* A NUL byte anywhere, with an explicit length. */
	smtpd_cmd_t c;
	ATF_CHECK_EQ(smtpd_cmd_parse("NOOP\0x", 6, &c), SMTPD_CMD_NUL);
	ATF_CHECK_EQ(smtpd_cmd_parse("\0", 1, &c), SMTPD_CMD_NUL);
	ATF_CHECK_STREQ(smtpd_verb_name(SMTPD_V_STARTTLS), "STARTTLS");
	ATF_CHECK_STREQ(smtpd_verb_name(SMTPD_V_UNKNOWN), "UNKNOWN");
}

ATF_TC_WITHOUT_HEAD(bdat);
ATF_TC_BODY(bdat, tc)
{
	static const struct {
		const char *arg;
		bool ok;
		uint64_t size;
		bool last;
	} cases[] = {
		{ "0", true, 0, false },
		{ "123", true, 123, false },
		{ "123 LAST", true, 123, true },
		{ "123  last", true, 123, true },
		{ "9999999999999999999", true, 9999999999999999999ULL, false },
		{ "99999999999999999999", false, 0, false },
		{ "", false, 0, false },
		{ "LAST", false, 0, false },
		{ "-1", false, 0, false },
		{ "12x", false, 0, false },
		{ "12 LASTX", false, 0, false },
		{ "12 LAST x", false, 0, false },
		{ "12LAST", false, 0, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t size;
		bool last;
		bool ok = smtpd_bdat_parse(cases[i].arg, strlen(cases[i].arg),
		    &size, &last);
		ATF_CHECK_EQ_MSG(ok, cases[i].ok, "%s", cases[i].arg);
		if (ok && cases[i].ok) {
			ATF_CHECK_EQ_MSG(size, cases[i].size, "%s", cases[i].arg);
			ATF_CHECK_EQ_MSG(last, cases[i].last, "%s", cases[i].arg);
		}
	}
}

ATF_TC_WITHOUT_HEAD(helo);
ATF_TC_BODY(helo, tc)
{
	const char *why;
	char big[300];

	ATF_CHECK(smtpd_helo_ok("mx.example.com", 14, &why));
	ATF_CHECK(smtpd_helo_ok("[192.0.2.1]", 11, &why));
	ATF_CHECK(smtpd_helo_ok("anything_goes!", 14, &why));
	ATF_CHECK(!smtpd_helo_ok("", 0, &why));
	ATF_CHECK(!smtpd_helo_ok("two words", 9, &why));
	ATF_CHECK(!smtpd_helo_ok("tab\there", 8, &why));
	memset(big, 'a', sizeof(big));
	ATF_CHECK(smtpd_helo_ok(big, 255, &why));
	ATF_CHECK(!smtpd_helo_ok(big, 256, &why));
	ATF_CHECK_STREQ(why, "host name longer than 255 bytes");
}

ATF_TC_WITHOUT_HEAD(list_token);
ATF_TC_BODY(list_token, tc)
{
	char buf[] = " permit_mynetworks,check_client_access inline:{ {a = b c}, d=e },"
	    "\treject_unauth_destination  inline:{x} ";
	char *cp = buf, *t;
	const char *want[] = { "permit_mynetworks", "check_client_access",
		"inline:{ {a = b c}, d=e }", "reject_unauth_destination",
		"inline:{x}" };
	size_t n = 0;

	while ((t = maps_token_cut(&cp)) != NULL) {
		ATF_REQUIRE(n < 5);
		ATF_CHECK_STREQ(t, want[n]);
		n++;
	}
	ATF_CHECK_EQ(n, 5);
	/* An unclosed brace takes the rest: the table open then fails. */
	char bad[] = "a inline:{ b, c";
	cp = bad;
	ATF_CHECK_STREQ(maps_token_cut(&cp), "a");
	ATF_CHECK_STREQ(maps_token_cut(&cp), "inline:{ b, c");
	ATF_CHECK(maps_token_cut(&cp) == NULL);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, parse);
	ATF_TP_ADD_TC(tp, bdat);
	ATF_TP_ADD_TC(tp, helo);
	ATF_TP_ADD_TC(tp, list_token);
	return atf_no_error();
}
