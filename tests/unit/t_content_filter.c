/* Unit tests of libglobal/content_filter.c (doc/content-filter.md):
 * content filter values, where qmgr sends a filtered recipient, and
 * receive_override_options; and the queue-file rule that an attribute
 * of the extracted section replaces the envelope's. */
#include <atf-c.h>
#include <stdio.h>
#include <string.h>
#include "cleanup_clnt.h"
#include "content_filter.h"
#include "qfile.h"
#include "queue_path.h"

static void valid(const char *v, bool want, const char *why_part)
{
	str_t why = STR_INIT;
	bool got = filter_valid(v, &why);

	ATF_CHECK_MSG(got == want, "\"%s\": %d (%s)", v, got, str_cstr(&why));
	if (!want && why_part != NULL)
		ATF_CHECK_MSG(strstr(str_cstr(&why), why_part) != NULL,
		    "\"%s\": reason \"%s\"", v, str_cstr(&why));
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(values);
ATF_TC_BODY(values, tc)
{
	str_t t = STR_INIT, n = STR_INIT, big = STR_INIT;

	valid("smtp:[127.0.0.1]:10025", true, NULL);
	valid("scan:", true, NULL);
	valid("lmtp:unix:private/amavis", true, NULL);
	valid("amavis:[::1]:10024", true, NULL);
	valid("smtp", false, "no colon");
	valid("", false, "no colon");
	valid(":[127.0.0.1]:25", false, "bad transport");
	valid("sm tp:x", false, "bad transport");
	valid("bad@:x", false, "bad transport");
	valid("smtp:a b", false, "blank");
	valid("smtp:a\tb", false, "blank");
	valid("smtp:a\x01", false, "control");
	str_set(&big, "smtp:");
	while (str_len(&big) <= FILTER_VALUE_MAX)
		str_putc(&big, 'x');
	valid(str_cstr(&big), false, "longer");

	ATF_REQUIRE(filter_split("smtp:[127.0.0.1]:10025", &t, &n));
	ATF_CHECK_STREQ(str_cstr(&t), "smtp");
	ATF_CHECK_STREQ(str_cstr(&n), "[127.0.0.1]:10025");
	ATF_REQUIRE(filter_split("scan:", &t, &n));
	ATF_CHECK_STREQ(str_cstr(&t), "scan");
	ATF_CHECK_STREQ(str_cstr(&n), "");
	ATF_CHECK(!filter_split("nocolon", &t, &n));
	str_release(&t);
	str_release(&n);
	str_release(&big);
}

ATF_TC_WITHOUT_HEAD(route);
ATF_TC_BODY(route, tc)
{
	str_t t = STR_INIT, n = STR_INIT;

	/* the filter's own nexthop */
	filter_route("scan", "[127.0.0.1]:10024", "other", "bob@example.net",
	    "me.example", &t, &n);
	ATF_CHECK_STREQ(str_cstr(&t), "scan");
	ATF_CHECK_STREQ(str_cstr(&n), "[127.0.0.1]:10024");
	/* none: default_filter_nexthop */
	filter_route("scan", "", "[10.0.0.9]:25", "bob@example.net",
	    "me.example", &t, &n);
	ATF_CHECK_STREQ(str_cstr(&n), "[10.0.0.9]:25");
	/* neither: the recipient's domain */
	filter_route("scan", "", "", "bob@Example.NET", "me.example", &t, &n);
	ATF_CHECK_STREQ(str_cstr(&n), "Example.NET");
	/* no domain at all: the fallback */
	filter_route("scan", NULL, NULL, "bob", "me.example", &t, &n);
	ATF_CHECK_STREQ(str_cstr(&t), "scan");
	ATF_CHECK_STREQ(str_cstr(&n), "me.example");
	str_release(&t);
	str_release(&n);
}

ATF_TC_WITHOUT_HEAD(override_options);
ATF_TC_BODY(override_options, tc)
{
	str_t err = STR_INIT;
	int bits = -1;

	ATF_CHECK_EQ(recv_override_parse("", &bits, &err), 0);
	ATF_CHECK_EQ(bits, 0);
	ATF_CHECK_EQ(recv_override_parse(NULL, &bits, &err), 0);
	ATF_CHECK_EQ(bits, 0);
	ATF_CHECK_EQ(recv_override_parse(
	    "no_header_body_checks,no_unknown_recipient_checks", &bits, &err), 0);
	ATF_CHECK_EQ(bits, RECV_NO_CHECKS | RECV_NO_UNKNOWN_RCPT);
	ATF_CHECK_EQ(recv_override_parse(" No_Address_Mappings ,\tno_milters ",
	    &bits, &err), 0);
	ATF_CHECK_EQ(bits, RECV_NO_MAPPINGS | RECV_NO_MILTERS);
	ATF_CHECK_EQ(recv_override_parse("no_milters, no_such", &bits, &err), -1);
	ATF_CHECK(strstr(str_cstr(&err), "unknown option \"no_such\"") != NULL);
	ATF_CHECK_EQ(recv_override_parse("no_milter", &bits, &err), -1);

	ATF_CHECK_EQ(filter_cleanup_flags(0), 0);
	ATF_CHECK_EQ(filter_cleanup_flags(RECV_NO_UNKNOWN_RCPT), 0);
	ATF_CHECK_EQ(filter_cleanup_flags(RECV_NO_CHECKS | RECV_NO_MAPPINGS |
	    RECV_NO_MILTERS), CLEANUP_FLAG_NO_CHECKS | CLEANUP_FLAG_NO_MAPPINGS |
	    CLEANUP_FLAG_NO_MILTERS);
	ATF_CHECK((CLEANUP_FLAG_NO_CHECKS | CLEANUP_FLAG_NO_MAPPINGS |
	    CLEANUP_FLAG_NO_MILTERS) & CLEANUP_FLAG_MASK);
	str_release(&err);
}

/* The content filter written after the content replaces the envelope's
 * attribute of that name; a name twice in one section is damage. */
ATF_TC_WITHOUT_HEAD(late_attribute);
ATF_TC_BODY(late_attribute, tc)
{
	queue_layout_t ql;
	str_t err = STR_INIT;
	qf_err_t qe;
	char id[QUEUE_ID_SIZE];
	const char *name, *value;

	ATF_REQUIRE(queue_layout_init(&ql, "q", "", 1, &err) == 0);
	ATF_REQUIRE_MSG(queue_create_dirs(&ql, &err) == 0, "%s",
	    str_cstr(&err));

	qfw_t *w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err);
	ATF_REQUIRE(w != NULL);
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	ATF_REQUIRE(qfw_sender(w, "a@b") == 0);
	ATF_REQUIRE(qfw_attr(w, FILTER_ATTR, "smtp:[10.0.0.1]:25") == 0);
	ATF_REQUIRE(qfw_attr(w, "log_ident", "test") == 0);
	qf_rcpt_in_t r = { "c@d", NULL, NULL, 0 };
	ATF_REQUIRE(qfw_rcpt(w, &r) == 0);
	ATF_REQUIRE(qfw_content(w, "Subject: x\n\nbody\n", 17) == 0);
	ATF_REQUIRE(qfw_attr(w, FILTER_ATTR, "scan:[127.0.0.1]:10024") == 0);
	ATF_REQUIRE(qfw_commit(w) == 0);
	qfw_free(w);

	qfile_t *qf = qfile_open(&ql, QUEUE_INCOMING, id, 0, &qe);
	ATF_REQUIRE_MSG(qf != NULL, "%s", qe.reason);
	ATF_CHECK_STREQ(qfile_attr(qf, FILTER_ATTR), "scan:[127.0.0.1]:10024");
	ATF_CHECK_STREQ(qfile_attr(qf, "log_ident"), "test");
	/* one entry for the name, in the envelope's place */
	ATF_REQUIRE(qfile_attr_at(qf, 0, &name, &value));
	ATF_CHECK_STREQ(name, FILTER_ATTR);
	ATF_CHECK(qfile_attr_at(qf, 1, &name, &value));
	ATF_CHECK(!qfile_attr_at(qf, 2, &name, &value));
	ATF_CHECK_EQ(qfile_rcpt_count(qf), 1);
	qfile_close(qf);

	/* twice after the content: damage, said with the offset */
	w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err);
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	ATF_REQUIRE(qfw_sender(w, "a@b") == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r) == 0);
	ATF_REQUIRE(qfw_content(w, "x\n", 2) == 0);
	ATF_REQUIRE(qfw_attr(w, FILTER_ATTR, "a:") == 0);
	ATF_REQUIRE(qfw_attr(w, FILTER_ATTR, "b:") == 0);
	ATF_REQUIRE(qfw_commit(w) == 0);
	qfw_free(w);
	qf = qfile_open(&ql, QUEUE_INCOMING, id, 0, &qe);
	ATF_CHECK(qf == NULL && qe.damaged);
	ATF_CHECK(strstr(qe.reason, "second attribute 'content_filter'") != NULL);
	if (qf != NULL)
		qfile_close(qf);
	queue_layout_free(&ql);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, values);
	ATF_TP_ADD_TC(tp, route);
	ATF_TP_ADD_TC(tp, override_options);
	ATF_TP_ADD_TC(tp, late_attribute);
	return 0;
}
