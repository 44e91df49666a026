/* Unit tests for libglobal/attr: the attribute protocol of
 * doc/protocol.md (writer, incremental and fd readers, schema modes,
 * limits, malformed input). */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attr.h"
#include "str.h"

/* Decodes buf whole and again one byte at a time; the two must agree on
 * the result, the bytes used and the error text (the reader's results do
 * not depend on chunking).  On ATTR_DONE *out gets the message. */
static enum attr_result decode(const void *buf, size_t len,
	const attr_spec_t *spec, int flags, const attr_limits_t *lim,
	attr_msg_t **out, str_t *err)
{
	attr_reader_t *r = attr_reader_new(spec, flags, lim);
	size_t used;
	enum attr_result res = attr_reader_feed(r, buf, len, &used);
	if (err)
		str_set(err, attr_reader_error(r));
	if (res == ATTR_ERROR)
		ATF_CHECK(attr_reader_errcode(r) != ATTR_E_NONE);
	attr_msg_t *m = res == ATTR_DONE ? attr_reader_take(r) : NULL;
	if (out)
		*out = m;
	else
		attr_msg_free(m);

	/* Same input, one byte at a time. */
	attr_reader_t *r2 = attr_reader_new(spec, flags, lim);
	enum attr_result res2 = ATTR_NEED_MORE;
	size_t used2 = 0;
	while (used2 < len && res2 == ATTR_NEED_MORE) {
		size_t u;
		res2 = attr_reader_feed(r2, (const char *)buf + used2, 1, &u);
		ATF_REQUIRE(u <= 1);
		used2 += u;
	}
	ATF_CHECK_EQ(res, res2);
	ATF_CHECK_EQ(used, used2);
	ATF_CHECK_STREQ(attr_reader_error(r), attr_reader_error(r2));
	ATF_CHECK_EQ(attr_reader_errcode(r), attr_reader_errcode(r2));
	attr_reader_free(r);
	attr_reader_free(r2);
	return res;
}

#define DEC(lit, ...)	decode((lit), sizeof(lit) - 1, __VA_ARGS__)

/* Decodes a C string that must fail with error kind e; returns the text. */
static void expect_error(const char *in, size_t len, const attr_spec_t *spec,
	int flags, const attr_limits_t *lim, enum attr_err e, const char *text)
{
	attr_reader_t *r = attr_reader_new(spec, flags, lim);
	size_t used;
	enum attr_result res = attr_reader_feed(r, in, len, &used);
	ATF_CHECK_EQ_MSG(res, ATTR_ERROR, "input \"%.60s\": result %d", in, res);
	ATF_CHECK_EQ_MSG(attr_reader_errcode(r), e, "input \"%.60s\": %s",
		in, attr_reader_error(r));
	if (text != NULL)
		ATF_CHECK_MSG(strstr(attr_reader_error(r), text) != NULL,
			"error \"%s\" lacks \"%s\"", attr_reader_error(r), text);
	/* The error is sticky until reset. */
	ATF_CHECK_EQ(attr_reader_feed(r, ".\n", 2, &used), ATTR_ERROR);
	ATF_CHECK_EQ(used, 0);
	attr_reader_free(r);
	decode(in, len, spec, flags, lim, NULL, NULL);	/* chunking agrees */
}
#define EXPECT_ERROR(in, spec, flags, lim, e, text) \
	expect_error((in), sizeof(in) - 1, (spec), (flags), (lim), (e), (text))

static const attr_limits_t *small_limits(size_t value, size_t attrs,
	size_t group, size_t total, int depth)
{
	static attr_limits_t l;
	l.max_value = value;
	l.max_attrs = attrs;
	l.max_group_attrs = group;
	l.max_total = total;
	l.max_depth = depth;
	return &l;
}

ATF_TC_WITHOUT_HEAD(wire_format);
ATF_TC_BODY(wire_format, tc)
{
	/* The exact bytes of doc/protocol.md's grammar. */
	str_t out = STR_INIT;
	attr_put_items(&out, ATTR_INT("flags", -7), ATTR_LONG("size", 2048),
		ATTR_STR("queue_id", "4QmZ"), ATTR_DATA("blob", "a\0\n", 3),
		ATTR_LIST("rcpt", 1), ATTR_END);
	attr_print(&out, ATTR_STR("address", "b@x"), ATTR_END);
	attr_print(&out, ATTR_STR("empty", ""), ATTR_END);
	static const char want[] = "I flags -7\nL size 2048\nS queue_id 4:4QmZ\n"
		"D blob 3:a\0\n\nN rcpt 1\nS address 3:b@x\n.\nS empty 0:\n.\n";
	ATF_REQUIRE_EQ(str_len(&out), sizeof(want) - 1);
	ATF_CHECK(memcmp(out.buf, want, sizeof(want) - 1) == 0);
	/* Incremental calls write the same. */
	str_t inc = STR_INIT;
	attr_put_int(&inc, "flags", -7);
	attr_put_long(&inc, "size", 2048);
	attr_put_str(&inc, "queue_id", "4QmZ");
	attr_put_data(&inc, "blob", "a\0\n", 3);
	attr_put_list(&inc, "rcpt", 1);
	attr_put_str(&inc, "address", "b@x");
	attr_put_end(&inc);
	attr_put_str(&inc, "empty", "");
	attr_put_end(&inc);
	ATF_CHECK_EQ(str_len(&inc), str_len(&out));
	ATF_CHECK(memcmp(inc.buf, out.buf, str_len(&out)) == 0);
	str_release(&out);
	str_release(&inc);
}

ATF_TC_WITHOUT_HEAD(round_trip_types);
ATF_TC_BODY(round_trip_types, tc)
{
	static const unsigned char bin[] = { 0, 0xff, '\n', '.', 0, ':', 0xfe, 0 };
	str_t out = STR_INIT;
	attr_print(&out, ATTR_INT("imin", INT32_MIN), ATTR_INT("imax", INT32_MAX),
		ATTR_INT("zero", 0), ATTR_LONG("lmin", INT64_MIN),
		ATTR_LONG("lmax", INT64_MAX), ATTR_LONG("lneg", -1),
		ATTR_STR("text", "hello, world\n.\n"), ATTR_STR("empty", ""),
		ATTR_DATA("bin", bin, sizeof(bin)), ATTR_DATA("nodata", "", 0),
		ATTR_LIST("nolist", 0), ATTR_END);
	attr_msg_t *m;
	ATF_REQUIRE_EQ(decode(out.buf, out.len, NULL, ATTR_READ_STRICT, NULL, &m, NULL),
		ATTR_DONE);
	int32_t i;
	int64_t l;
	const char *s;
	const void *p;
	size_t n;
	const attr_list_t *list;
	ATF_CHECK(attr_get_int(m, "imin", &i) && i == INT32_MIN);
	ATF_CHECK(attr_get_int(m, "imax", &i) && i == INT32_MAX);
	ATF_CHECK(attr_get_int(m, "zero", &i) && i == 0);
	ATF_CHECK(attr_get_long(m, "lmin", &l) && l == INT64_MIN);
	ATF_CHECK(attr_get_long(m, "lmax", &l) && l == INT64_MAX);
	ATF_CHECK(attr_get_long(m, "lneg", &l) && l == -1);
	ATF_CHECK(attr_get_str(m, "text", &s) && strcmp(s, "hello, world\n.\n") == 0);
	ATF_CHECK(attr_get_str(m, "empty", &s) && strcmp(s, "") == 0);
	ATF_CHECK(attr_get_data(m, "bin", &p, &n) && n == sizeof(bin)
		&& memcmp(p, bin, n) == 0);
	ATF_CHECK(attr_get_data(m, "nodata", &p, &n) && n == 0);
	ATF_CHECK(attr_get_list(m, "nolist", &list) && attr_list_count(list) == 0);
	/* Absent, and present with another type: both false. */
	ATF_CHECK(!attr_get_int(m, "absent", &i));
	ATF_CHECK(!attr_get_int(m, "text", &i));
	ATF_CHECK(!attr_get_str(m, "imin", &s));
	ATF_CHECK(!attr_get_long(m, "imax", &l));
	ATF_CHECK(!attr_get_data(m, "text", &p, &n));
	ATF_CHECK(!attr_get_list(m, "bin", &list));
	/* Generic access keeps the order. */
	ATF_CHECK_EQ(attr_msg_count(m), 11);
	ATF_CHECK_STREQ(attr_msg_at(m, 0)->name, "imin");
	ATF_CHECK_EQ(attr_msg_at(m, 8)->type, ATTR_TYPE_DATA);
	ATF_CHECK(attr_find(m, "lmax") == attr_msg_at(m, 4));
	/* Re-encoding gives the same bytes (the encoding is canonical). */
	str_t again = STR_INIT;
	attr_msg_encode(&again, m);
	ATF_CHECK_EQ(again.len, out.len);
	ATF_CHECK(memcmp(again.buf, out.buf, out.len) == 0);
	attr_msg_free(m);
	str_release(&again);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(large_values);
ATF_TC_BODY(large_values, tc)
{
	const size_t max = 1024 * 1024;
	ATF_REQUIRE_EQ(attr_default_limits.max_value, max);
	char *big = malloc(max + 2);
	ATF_REQUIRE(big != NULL);
	for (size_t i = 0; i < max + 1; i++)
		big[i] = (char)('a' + i % 26);
	big[max] = 0;
	unsigned char *bin = malloc(max + 1);
	ATF_REQUIRE(bin != NULL);
	for (size_t i = 0; i < max + 1; i++)
		bin[i] = (unsigned char)(i * 7);

	str_t out = STR_INIT;
	attr_print(&out, ATTR_STR("text", big), ATTR_DATA("bin", bin, max), ATTR_END);
	attr_msg_t *m;
	ATF_REQUIRE_EQ(decode(out.buf, out.len, NULL, 0, NULL, &m, NULL), ATTR_DONE);
	const char *s;
	const void *p;
	size_t n;
	ATF_CHECK(attr_get_str(m, "text", &s) && strlen(s) == max
		&& memcmp(s, big, max) == 0);
	ATF_CHECK(attr_get_data(m, "bin", &p, &n) && n == max && memcmp(p, bin, max) == 0);
	attr_msg_free(m);

	/* One byte more is over the default limit, for both types. */
	big[max] = 'x';
	big[max + 1] = 0;
	str_reset(&out);
	attr_print(&out, ATTR_STR("text", big), ATTR_END);
	expect_error(out.buf, out.len, NULL, 0, NULL, ATTR_E_LIMIT, "value length exceeds limit");
	str_reset(&out);
	attr_print(&out, ATTR_DATA("bin", bin, max + 1), ATTR_END);
	expect_error(out.buf, out.len, NULL, 0, NULL, ATTR_E_LIMIT, "value length exceeds limit");
	free(big);
	free(bin);
	str_release(&out);
}

/* A delivery request: recipients, each with a nested list of notes. */
static const attr_spec_t note_spec[] = {
	{ "text", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ NULL, 0, 0, NULL },
};
static const attr_spec_t rcpt_spec[] = {
	{ "address", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "orig_address", ATTR_TYPE_STR, 0, NULL },
	{ "notify", ATTR_TYPE_INT, 0, NULL },
	{ "orcpt", ATTR_TYPE_STR, 0, NULL },
	{ "offset", ATTR_TYPE_LONG, ATTR_REQUIRED, NULL },
	{ "notes", ATTR_TYPE_LIST, 0, note_spec },
	{ NULL, 0, 0, NULL },
};
static const attr_spec_t req_spec[] = {
	{ "queue_id", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "flags", ATTR_TYPE_INT, 0, NULL },
	{ "rcpt", ATTR_TYPE_LIST, ATTR_REQUIRED, rcpt_spec },
	{ NULL, 0, 0, NULL },
};

static void put_request(str_t *out)
{
	attr_put_items(out, ATTR_STR("queue_id", "4QmZ7x2KcB"), ATTR_LIST("rcpt", 3),
		ATTR_END);
	attr_put_items(out, ATTR_STR("address", "bob@example.net"),
		ATTR_STR("orig_address", "Bob@Example.NET"), ATTR_INT("notify", 6),
		ATTR_STR("orcpt", "rfc822;bob@example.net"), ATTR_LONG("offset", 1170),
		ATTR_LIST("notes", 2), ATTR_END);
	attr_print(out, ATTR_STR("text", "first"), ATTR_END);
	attr_print(out, ATTR_STR("text", "second"), ATTR_END);
	attr_put_end(out);
	attr_print(out, ATTR_STR("address", "eve@example.net"),
		ATTR_LONG("offset", 1236), ATTR_END);
	attr_print(out, ATTR_STR("address", "carol@example.org"),
		ATTR_LONG("offset", 5000000000LL), ATTR_LIST("notes", 0), ATTR_END);
	attr_print(out, ATTR_INT("flags", 3), ATTR_END);
}

ATF_TC_WITHOUT_HEAD(nested_lists);
ATF_TC_BODY(nested_lists, tc)
{
	str_t out = STR_INIT;
	put_request(&out);
	attr_msg_t *m;
	str_t err = STR_INIT;
	ATF_REQUIRE_EQ_MSG(decode(out.buf, out.len, req_spec, ATTR_READ_STRICT,
		NULL, &m, &err), ATTR_DONE, "%s", str_cstr(&err));
	const char *s;
	int32_t i;
	int64_t l;
	const attr_list_t *rcpt, *notes;
	ATF_CHECK(attr_get_str(m, "queue_id", &s) && strcmp(s, "4QmZ7x2KcB") == 0);
	ATF_CHECK(attr_get_int(m, "flags", &i) && i == 3);
	ATF_REQUIRE(attr_get_list(m, "rcpt", &rcpt));
	ATF_REQUIRE_EQ(attr_list_count(rcpt), 3);
	const attr_msg_t *g0 = attr_list_group(rcpt, 0), *g1 = attr_list_group(rcpt, 1),
		*g2 = attr_list_group(rcpt, 2);
	ATF_CHECK(attr_get_str(g0, "address", &s) && strcmp(s, "bob@example.net") == 0);
	ATF_CHECK(attr_get_str(g0, "orig_address", &s) && strcmp(s, "Bob@Example.NET") == 0);
	ATF_CHECK(attr_get_int(g0, "notify", &i) && i == 6);
	ATF_CHECK(attr_get_str(g0, "orcpt", &s) && strcmp(s, "rfc822;bob@example.net") == 0);
	ATF_CHECK(attr_get_long(g0, "offset", &l) && l == 1170);
	ATF_REQUIRE(attr_get_list(g0, "notes", &notes));
	ATF_REQUIRE_EQ(attr_list_count(notes), 2);
	ATF_CHECK(attr_get_str(attr_list_group(notes, 0), "text", &s) && strcmp(s, "first") == 0);
	ATF_CHECK(attr_get_str(attr_list_group(notes, 1), "text", &s) && strcmp(s, "second") == 0);
	ATF_CHECK(attr_get_str(g1, "address", &s) && strcmp(s, "eve@example.net") == 0);
	ATF_CHECK(!attr_get_int(g1, "notify", &i));	/* optional, absent */
	ATF_CHECK(!attr_get_list(g1, "notes", &notes));
	ATF_CHECK(attr_get_long(g2, "offset", &l) && l == 5000000000LL);
	ATF_CHECK(attr_get_list(g2, "notes", &notes) && attr_list_count(notes) == 0);
	/* Group names do not leak between groups or levels. */
	ATF_CHECK(!attr_get_str(m, "address", &s));
	str_t again = STR_INIT;
	attr_msg_encode(&again, m);
	ATF_CHECK_EQ(again.len, out.len);
	ATF_CHECK(memcmp(again.buf, out.buf, out.len) == 0);
	attr_msg_free(m);
	str_release(&again);
	str_release(&out);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(strict_and_lenient);
ATF_TC_BODY(strict_and_lenient, tc)
{
	static const attr_spec_t spec[] = {
		{ "known", ATTR_TYPE_INT, ATTR_REQUIRED, NULL },
		{ NULL, 0, 0, NULL },
	};
	str_t out = STR_INIT;
	attr_put_items(&out, ATTR_STR("newer", "x"), ATTR_INT("known", 5),
		ATTR_DATA("blob", "\0\0", 2), ATTR_LIST("extra", 2), ATTR_END);
	/* A skipped list is parsed through, nested lists included. */
	attr_put_items(&out, ATTR_STR("a", "1"), ATTR_LIST("deeper", 1), ATTR_END);
	attr_print(&out, ATTR_INT("b", 2), ATTR_END);
	attr_put_end(&out);
	attr_print(&out, ATTR_INT("known", 9), ATTR_END);	/* same name, other group */
	attr_print(&out, ATTR_LONG("later", 1), ATTR_END);

	EXPECT_ERROR("S newer 1:x\nI known 5\n.\n", spec, ATTR_READ_STRICT, NULL,
		ATTR_E_UNKNOWN, "unknown attribute (byte 7, attribute newer)");
	attr_msg_t *m;
	str_t err = STR_INIT;
	ATF_REQUIRE_EQ_MSG(decode(out.buf, out.len, spec, ATTR_READ_LENIENT, NULL,
		&m, &err), ATTR_DONE, "%s", str_cstr(&err));
	int32_t v;
	const char *s;
	ATF_CHECK(attr_get_int(m, "known", &v) && v == 5);
	ATF_CHECK(!attr_get_str(m, "newer", &s));
	ATF_CHECK(attr_find(m, "extra") == NULL);
	ATF_CHECK(attr_find(m, "later") == NULL);
	ATF_CHECK_EQ(attr_msg_count(m), 1);
	/* Re-encoding drops what was skipped. */
	str_t again = STR_INIT;
	attr_msg_encode(&again, m);
	ATF_CHECK_STREQ(str_cstr(&again), "I known 5\n.\n");
	attr_msg_free(m);
	/* Strict also rejects an unknown list, and one inside a group. */
	expect_error(out.buf, out.len, spec, ATTR_READ_STRICT, NULL, ATTR_E_UNKNOWN, "newer");
	ATF_CHECK_EQ(decode(out.buf, out.len, req_spec, ATTR_READ_STRICT, NULL, NULL,
		NULL), ATTR_ERROR);
	EXPECT_ERROR("S queue_id 1:q\nN rcpt 1\nS address 1:a\nL offset 1\nI new 1\n.\n.\n",
		req_spec, ATTR_READ_STRICT, NULL, ATTR_E_UNKNOWN, "attribute rcpt[0].new");
	ATF_CHECK_EQ(DEC("S queue_id 1:q\nN rcpt 1\nS address 1:a\nL offset 1\nI new 1\n.\n.\n",
		req_spec, ATTR_READ_LENIENT, NULL, NULL, NULL), ATTR_DONE);
	str_release(&again);
	str_release(&out);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(no_schema_accepts_anything);
ATF_TC_BODY(no_schema_accepts_anything, tc)
{
	/* Without a schema the mode does not matter. */
	attr_msg_t *m;
	ATF_REQUIRE_EQ(DEC("I x 1\nS y 0:\n.\n", NULL, ATTR_READ_STRICT, NULL,
		&m, NULL), ATTR_DONE);
	ATF_CHECK_EQ(attr_msg_count(m), 2);
	attr_msg_free(m);
	/* A list entry without a group schema accepts any group content. */
	static const attr_spec_t spec[] = {
		{ "any", ATTR_TYPE_LIST, 0, NULL }, { NULL, 0, 0, NULL },
	};
	ATF_REQUIRE_EQ(DEC("N any 1\nI what 1\n.\n.\n", spec, ATTR_READ_STRICT,
		NULL, &m, NULL), ATTR_DONE);
	const attr_list_t *l;
	int32_t v;
	ATF_CHECK(attr_get_list(m, "any", &l) && attr_get_int(attr_list_group(l, 0), "what", &v)
		&& v == 1);
	attr_msg_free(m);
}

ATF_TC_WITHOUT_HEAD(duplicates);
ATF_TC_BODY(duplicates, tc)
{
	static const attr_spec_t spec[] = {
		{ "a", ATTR_TYPE_INT, 0, NULL }, { NULL, 0, 0, NULL },
	};
	EXPECT_ERROR("I a 1\nI a 1\n.\n", NULL, 0, NULL, ATTR_E_DUPLICATE,
		"duplicate attribute (byte 9, attribute a)");
	/* Another type does not make it another attribute. */
	EXPECT_ERROR("I a 1\nS a 1:x\n.\n", NULL, 0, NULL, ATTR_E_DUPLICATE, NULL);
	EXPECT_ERROR("I a 1\nI a 1\n.\n", spec, ATTR_READ_STRICT, NULL, ATTR_E_DUPLICATE, NULL);
	/* Unknown attributes are not interpreted, but twice is still twice. */
	EXPECT_ERROR("I z 1\nI a 1\nI z 2\n.\n", spec, ATTR_READ_LENIENT, NULL,
		ATTR_E_DUPLICATE, "attribute z");
	/* Inside a group, with the path in the error. */
	EXPECT_ERROR("N l 2\nI a 1\n.\nI a 1\nI b 1\nI a 2\n.\n.\n", NULL, 0, NULL,
		ATTR_E_DUPLICATE, "attribute l[1].a");
	ATF_CHECK_EQ(DEC("N l 2\nI a 1\n.\nI a 1\n.\nI a 1\n.\n", NULL, 0, NULL,
		NULL, NULL), ATTR_DONE);
}

ATF_TC_WITHOUT_HEAD(wrong_type);
ATF_TC_BODY(wrong_type, tc)
{
	EXPECT_ERROR("S queue_id 1:q\nS flags 1:1\n.\n", req_spec, ATTR_READ_LENIENT, NULL,
		ATTR_E_TYPE, "wrong type: got string, expected integer (byte 22, attribute flags)");
	EXPECT_ERROR("S queue_id 1:q\nI rcpt 0\n.\n", req_spec, ATTR_READ_STRICT, NULL,
		ATTR_E_TYPE, "got integer, expected list");
	EXPECT_ERROR("S queue_id 1:q\nN rcpt 1\nS address 1:a\nI offset 1\n.\n.\n",
		req_spec, ATTR_READ_STRICT, NULL, ATTR_E_TYPE, "rcpt[0].offset");
	EXPECT_ERROR("D queue_id 1:q\n.\n", req_spec, ATTR_READ_STRICT, NULL,
		ATTR_E_TYPE, "got data, expected string");
}

ATF_TC_WITHOUT_HEAD(missing_required);
ATF_TC_BODY(missing_required, tc)
{
	EXPECT_ERROR("S queue_id 1:q\n.\n", req_spec, ATTR_READ_STRICT, NULL,
		ATTR_E_MISSING, "missing required attribute rcpt");
	EXPECT_ERROR("S queue_id 1:q\nN rcpt 2\nS address 1:a\nL offset 1\n.\nS address 1:b\n.\n.\n",
		req_spec, ATTR_READ_STRICT, NULL, ATTR_E_MISSING,
		"missing required attribute offset (byte 66, in rcpt[1])");
	/* All optional ones absent is fine. */
	ATF_CHECK_EQ(DEC("N rcpt 0\nS queue_id 1:q\n.\n", req_spec, ATTR_READ_STRICT,
		NULL, NULL, NULL), ATTR_DONE);
}

ATF_TC_WITHOUT_HEAD(limits);
ATF_TC_BODY(limits, tc)
{
	/* Name: 64 bytes is fine, 65 is not. */
	char name[80], in[200];
	memset(name, 'n', 64);
	name[64] = 0;
	snprintf(in, sizeof(in), "I %s 1\n.\n", name);
	ATF_CHECK_EQ(decode(in, strlen(in), NULL, 0, NULL, NULL, NULL), ATTR_DONE);
	snprintf(in, sizeof(in), "I %sn 1\n.\n", name);
	expect_error(in, strlen(in), NULL, 0, NULL, ATTR_E_LIMIT, "name longer than 64");

	/* Value size. */
	const attr_limits_t *l = small_limits(4, 100, 100, 1000, 4);
	ATF_CHECK_EQ(DEC("S a 4:abcd\nD b 4:\0\0\0\0\n.\n", NULL, 0, l, NULL, NULL),
		ATTR_DONE);
	EXPECT_ERROR("S a 5:abcde\n.\n", NULL, 0, l, ATTR_E_LIMIT,
		"value length exceeds limit 4 (byte 4, attribute a)");
	/* Detected at the digit, long before the value arrives. */
	EXPECT_ERROR("D a 99999999999999999999999", NULL, 0, NULL, ATTR_E_LIMIT,
		"value length exceeds limit 1048576 (byte 10");
	/* Skipped values count too. */
	static const attr_spec_t spec[] = {
		{ "k", ATTR_TYPE_INT, 0, NULL }, { NULL, 0, 0, NULL },
	};
	EXPECT_ERROR("S u 5:abcde\n.\n", spec, ATTR_READ_LENIENT, l, ATTR_E_LIMIT, NULL);

	/* Attributes per message: lists, their groups and contents included. */
	l = small_limits(100, 4, 100, 1000, 4);
	ATF_CHECK_EQ(DEC("I a 1\nN l 1\nI b 1\n.\n.\n", NULL, 0, l, NULL, NULL),
		ATTR_DONE);
	EXPECT_ERROR("I a 1\nN l 1\nI b 1\nI c 1\n.\n.\n", NULL, 0, l, ATTR_E_LIMIT,
		"too many attributes in message (limit 4) (byte 21, attribute l[0].c)");
	/* ... also in a skipped list. */
	EXPECT_ERROR("N l 1\nI b 1\nI c 1\nI d 1\n.\n.\n", spec, ATTR_READ_LENIENT, l,
		ATTR_E_LIMIT, "too many attributes in message");
	/* Empty groups count, so many cheap groups cannot add up. */
	ATF_CHECK_EQ(DEC("N l 3\n.\n.\n.\n.\n", NULL, 0, l, NULL, NULL), ATTR_DONE);
	EXPECT_ERROR("N l 4\n", NULL, 0, l, ATTR_E_LIMIT,
		"too many attributes and list groups in message (limit 4) (byte 5, attribute l)");
	EXPECT_ERROR("I a 1\nN l 3\n", NULL, 0, l, ATTR_E_LIMIT, "list groups");
	EXPECT_ERROR("N l 5\n", NULL, 0, l, ATTR_E_LIMIT, "list count exceeds limit 4");
	EXPECT_ERROR("N l 99999999999999999999999\n", NULL, 0, NULL, ATTR_E_LIMIT,
		"list count exceeds limit 65536");

	/* Attributes per group. */
	l = small_limits(100, 100, 2, 1000, 4);
	ATF_CHECK_EQ(DEC("I a 1\nN l 1\nI b 1\nI c 1\n.\n.\n", NULL, 0, l, NULL, NULL),
		ATTR_DONE);
	EXPECT_ERROR("I a 1\nI b 1\nI c 1\n.\n", NULL, 0, l, ATTR_E_LIMIT,
		"too many attributes in group (limit 2) (byte 15, attribute c)");
	EXPECT_ERROR("N l 1\nI a 1\nI b 1\nI c 1\n.\n.\n", NULL, 0, l, ATTR_E_LIMIT,
		"in group (limit 2) (byte 21, attribute l[0].c)");

	/* Total size: exactly at the limit is fine. */
	l = small_limits(100, 100, 100, 20, 4);
	ATF_CHECK_EQ(DEC("S a 9:123456789\n.\n", NULL, 0, l, NULL, NULL), ATTR_DONE);
	ATF_CHECK_EQ(DEC("I abcdefg 1234567\n.\n", NULL, 0, l, NULL, NULL), ATTR_DONE);
	EXPECT_ERROR("I abcdefghij 12345678\n.\n", NULL, 0, l, ATTR_E_LIMIT,
		"message exceeds size limit 20 (byte 20");
	/* A declared length that cannot fit fails at its ":". */
	EXPECT_ERROR("S a 14:", NULL, 0, l, ATTR_E_LIMIT, "exceeds size limit 20 (byte 6");

	/* Nesting depth. */
	l = small_limits(100, 100, 100, 1000, 2);
	ATF_CHECK_EQ(DEC("N a 1\nN b 1\nI x 1\n.\n.\n.\n", NULL, 0, l, NULL, NULL),
		ATTR_DONE);
	EXPECT_ERROR("N a 1\nN b 1\nN c 1\n.\n.\n.\n.\n", NULL, 0, l, ATTR_E_LIMIT,
		"list nesting exceeds depth limit 2 (byte 15, attribute a[0].b[0].c)");
	/* Even an empty list at the limit. */
	EXPECT_ERROR("N a 1\nN b 1\nN c 0\n.\n.\n.\n", NULL, 0, l, ATTR_E_LIMIT, "depth");
	EXPECT_ERROR("N a 0\n.\n", NULL, 0, small_limits(100, 100, 100, 1000, 0),
		ATTR_E_LIMIT, "depth limit 0");
	/* The default depth, and the hard cap on what a caller may ask. */
	str_t deep = STR_INIT;
	for (int i = 0; i < 5; i++)
		attr_put_list(&deep, "d", 1);
	EXPECT_ERROR("N d 1\nN d 1\nN d 1\nN d 1\nN d 1\n", NULL, 0, NULL, ATTR_E_LIMIT,
		"depth limit 4");
	ATF_CHECK_EQ(decode(deep.buf, deep.len, NULL, 0,
		small_limits(100, 100, 100, 1000, 1000), NULL, NULL), ATTR_NEED_MORE);
	str_reset(&deep);
	for (int i = 0; i < ATTR_DEPTH_CAP + 1; i++)
		attr_put_list(&deep, "d", 1);
	expect_error(deep.buf, deep.len, NULL, 0, small_limits(100, 100, 100, 1000, 1000),
		ATTR_E_LIMIT, "depth limit 16");
	str_release(&deep);
}

ATF_TC_WITHOUT_HEAD(numbers);
ATF_TC_BODY(numbers, tc)
{
	EXPECT_ERROR("I a 2147483648\n", NULL, 0, NULL, ATTR_E_SYNTAX, "integer out of range");
	EXPECT_ERROR("I a -2147483649\n", NULL, 0, NULL, ATTR_E_SYNTAX, "integer out of range");
	EXPECT_ERROR("L a 9223372036854775808\n", NULL, 0, NULL, ATTR_E_SYNTAX, "out of range");
	EXPECT_ERROR("L a -9223372036854775809\n", NULL, 0, NULL, ATTR_E_SYNTAX, "out of range");
	EXPECT_ERROR("L a 99999999999999999999999999\n", NULL, 0, NULL, ATTR_E_SYNTAX,
		"out of range (byte 22");
	EXPECT_ERROR("I a 01\n", NULL, 0, NULL, ATTR_E_SYNTAX, "leading zero");
	EXPECT_ERROR("S a 01:x\n", NULL, 0, NULL, ATTR_E_SYNTAX, "leading zero");
	EXPECT_ERROR("I a -0\n", NULL, 0, NULL, ATTR_E_SYNTAX, "\"-0\"");
	EXPECT_ERROR("I a +1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "0x2b in number");
	EXPECT_ERROR("I a --1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "in number");
	EXPECT_ERROR("I a 1-\n", NULL, 0, NULL, ATTR_E_SYNTAX, "in number");
	EXPECT_ERROR("I a \n", NULL, 0, NULL, ATTR_E_SYNTAX, "missing number");
	EXPECT_ERROR("I a -\n", NULL, 0, NULL, ATTR_E_SYNTAX, "missing number");
	EXPECT_ERROR("S a -1:x\n", NULL, 0, NULL, ATTR_E_SYNTAX, "in number");
	EXPECT_ERROR("N a -1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "in number");
	EXPECT_ERROR("S a 1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "0x0a in number");
	EXPECT_ERROR("I a 1:\n", NULL, 0, NULL, ATTR_E_SYNTAX, "0x3a in number");
	EXPECT_ERROR("I a 1 \n", NULL, 0, NULL, ATTR_E_SYNTAX, "0x20 in number");
}

ATF_TC_WITHOUT_HEAD(garbage);
ATF_TC_BODY(garbage, tc)
{
	EXPECT_ERROR("?", NULL, 0, NULL, ATTR_E_SYNTAX,
		"unexpected byte 0x3f, expected an item type or end marker (byte 0)");
	EXPECT_ERROR("GET / HTTP/1.0\r\n\r\n", NULL, 0, NULL, ATTR_E_SYNTAX, "byte 0)");
	EXPECT_ERROR("i a 1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "0x69");
	EXPECT_ERROR("\n", NULL, 0, NULL, ATTR_E_SYNTAX, NULL);
	EXPECT_ERROR("\0\0\0", NULL, 0, NULL, ATTR_E_SYNTAX, "0x00");
	EXPECT_ERROR("I  a 1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "empty attribute name");
	EXPECT_ERROR("Ia 1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "expected a space");
	EXPECT_ERROR("I A 1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "0x41 in attribute name");
	EXPECT_ERROR("I 1a 1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "in attribute name");
	EXPECT_ERROR("I a-b 1\n", NULL, 0, NULL, ATTR_E_SYNTAX, "0x2d in attribute name");
	EXPECT_ERROR("I a\n", NULL, 0, NULL, ATTR_E_SYNTAX, "in attribute name");
	EXPECT_ERROR(". \n", NULL, 0, NULL, ATTR_E_SYNTAX, "after \".\"");
	EXPECT_ERROR(".\r\n", NULL, 0, NULL, ATTR_E_SYNTAX, "after \".\"");
	/* A wrong length shows at the missing LF. */
	EXPECT_ERROR("S a 3:ab\n.\n", NULL, 0, NULL, ATTR_E_SYNTAX,
		"0x2e after value, expected a line feed (wrong length?) (byte 9, attribute a)");
	EXPECT_ERROR("S a 1:ab\n.\n", NULL, 0, NULL, ATTR_E_SYNTAX, "wrong length");
	EXPECT_ERROR("S a 3:a\0b\n.\n", NULL, 0, NULL, ATTR_E_SYNTAX,
		"NUL byte in a string (byte 7, attribute a)");
	/* Data may hold NUL; a string value skipped in lenient mode may not. */
	ATF_CHECK_EQ(DEC("D a 3:a\0b\n.\n", NULL, 0, NULL, NULL, NULL), ATTR_DONE);
	static const attr_spec_t spec[] = {
		{ "k", ATTR_TYPE_INT, 0, NULL }, { NULL, 0, 0, NULL },
	};
	EXPECT_ERROR("S a 3:a\0b\n.\n", spec, ATTR_READ_LENIENT, NULL, ATTR_E_SYNTAX, "NUL");

	/* Random bytes, and random mutations of a valid message: never a
	 * crash; anything that decodes re-encodes to the bytes it came from. */
	str_t valid = STR_INIT, buf = STR_INIT, again = STR_INIT;
	put_request(&valid);
	uint32_t seed = 12345;
	for (int round = 0; round < 3000; round++) {
		str_reset(&buf);
		if (round % 2 == 0) {
			size_t n = 1 + round % 97;
			for (size_t i = 0; i < n; i++) {
				seed = seed * 1103515245 + 12345;
				str_putc(&buf, (int)(seed >> 16) & 0xff);
			}
		} else {
			str_append(&buf, valid.buf, valid.len);
			for (int k = 0; k < 1 + round % 4; k++) {
				seed = seed * 1103515245 + 12345;
				buf.buf[(seed >> 8) % buf.len] = (char)(seed >> 24);
			}
		}
		attr_reader_t *r = attr_reader_new(NULL, 0, NULL);
		size_t used;
		enum attr_result res = attr_reader_feed(r, buf.buf, buf.len, &used);
		ATF_REQUIRE(used <= buf.len);
		if (res == ATTR_DONE) {
			attr_msg_t *m = attr_reader_take(r);
			str_reset(&again);
			attr_msg_encode(&again, m);
			ATF_CHECK_EQ(again.len, used);
			ATF_CHECK(memcmp(again.buf, buf.buf, used) == 0);
			attr_msg_free(m);
		} else if (res == ATTR_ERROR) {
			ATF_CHECK(attr_reader_error(r)[0] != 0);
		} else {
			ATF_CHECK_EQ(used, buf.len);
		}
		attr_reader_free(r);
		/* The schema'd readers must not crash on it either. */
		decode(buf.buf, buf.len, req_spec, ATTR_READ_STRICT, NULL, NULL, NULL);
		decode(buf.buf, buf.len, req_spec, ATTR_READ_LENIENT, NULL, NULL, NULL);
	}
	str_release(&valid);
	str_release(&buf);
	str_release(&again);
}

ATF_TC_WITHOUT_HEAD(truncated);
ATF_TC_BODY(truncated, tc)
{
	str_t out = STR_INIT;
	put_request(&out);
	/* Every proper prefix is valid so far: need-more, all bytes used. */
	for (size_t off = 0; off < out.len; off++) {
		for (int strict = 0; strict < 2; strict++) {
			attr_reader_t *r = attr_reader_new(req_spec,
				strict ? ATTR_READ_STRICT : ATTR_READ_LENIENT, NULL);
			size_t used;
			enum attr_result res = attr_reader_feed(r, out.buf, off, &used);
			ATF_CHECK_EQ_MSG(res, ATTR_NEED_MORE, "offset %zu: %d %s", off, res,
				attr_reader_error(r));
			ATF_CHECK_EQ(used, off);
			ATF_CHECK(attr_reader_take(r) == NULL);
			/* The rest completes it. */
			res = attr_reader_feed(r, out.buf + off, out.len - off, &used);
			ATF_CHECK_EQ_MSG(res, ATTR_DONE, "offset %zu: %s", off, attr_reader_error(r));
			ATF_CHECK_EQ(used, out.len - off);
			attr_reader_free(r);	/* frees the untaken message */
		}
	}
	/* A truncated message with a bad byte (NUL: wrong everywhere in this
	 * message, which has no data values) is an error, not success. */
	for (size_t off = 0; off < out.len; off++) {
		str_t bad = STR_INIT;
		str_append(&bad, out.buf, off);
		str_append(&bad, "\0", 1);
		ATF_CHECK_EQ_MSG(decode(bad.buf, bad.len, req_spec, ATTR_READ_STRICT, NULL,
			NULL, NULL), ATTR_ERROR, "offset %zu", off);
		str_release(&bad);
	}
	/* The same through a descriptor whose writer closes early. */
	for (size_t off = 0; off < out.len; off++) {
		int sv[2];
		ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		ATF_REQUIRE_EQ(attr_write_fd(sv[0], out.buf, off, 5000), 0);
		close(sv[0]);
		attr_reader_t *r = attr_reader_new(req_spec, ATTR_READ_STRICT, NULL);
		enum attr_result res = attr_read_fd(r, sv[1], 5000);
		ATF_CHECK_EQ_MSG(res, off == 0 ? ATTR_EOF : ATTR_ERROR, "offset %zu", off);
		if (off > 0)
			ATF_CHECK_EQ(attr_reader_errcode(r), ATTR_E_IO);
		attr_reader_free(r);
		close(sv[1]);
	}
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(pipelined);
ATF_TC_BODY(pipelined, tc)
{
	str_t out = STR_INIT;
	attr_print(&out, ATTR_INT("n", 1), ATTR_END);
	size_t first = out.len;
	attr_print(&out, ATTR_INT("n", 2), ATTR_END);
	attr_reader_t *r = attr_reader_new(NULL, 0, NULL);
	size_t used;
	ATF_REQUIRE_EQ(attr_reader_feed(r, out.buf, out.len, &used), ATTR_DONE);
	ATF_CHECK_EQ(used, first);
	/* Until taken, the reader holds the message and uses nothing more. */
	ATF_CHECK_EQ(attr_reader_feed(r, out.buf + used, out.len - used, &used), ATTR_DONE);
	ATF_CHECK_EQ(used, 0);
	attr_msg_t *m = attr_reader_take(r);
	int32_t v;
	ATF_CHECK(attr_get_int(m, "n", &v) && v == 1);
	attr_msg_free(m);
	ATF_REQUIRE_EQ(attr_reader_feed(r, out.buf + first, out.len - first, &used), ATTR_DONE);
	m = attr_reader_take(r);
	ATF_CHECK(attr_get_int(m, "n", &v) && v == 2);
	attr_msg_free(m);
	/* After an error, reset makes the reader usable again. */
	ATF_CHECK_EQ(attr_reader_feed(r, "!", 1, &used), ATTR_ERROR);
	attr_reader_reset(r);
	ATF_CHECK_EQ(attr_reader_errcode(r), ATTR_E_NONE);
	ATF_CHECK_STREQ(attr_reader_error(r), "");
	ATF_CHECK_EQ(attr_reader_feed(r, out.buf, first, &used), ATTR_DONE);
	attr_reader_free(r);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(fd_read);
ATF_TC_BODY(fd_read, tc)
{
	int sv[2];
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	str_t out = STR_INIT;
	put_request(&out);
	size_t one = out.len;
	put_request(&out);
	/* Two messages in one write: the second comes from the buffer. */
	ATF_REQUIRE_EQ(attr_write_fd(sv[0], out.buf, out.len, 5000), 0);
	ATF_REQUIRE(close(sv[0]) == 0);
	attr_reader_t *r = attr_reader_new(req_spec, ATTR_READ_STRICT, NULL);
	for (int i = 0; i < 2; i++) {
		ATF_REQUIRE_EQ_MSG(attr_read_fd(r, sv[1], 5000), ATTR_DONE, "%s",
			attr_reader_error(r));
		attr_msg_t *m = attr_reader_take(r);
		str_t again = STR_INIT;
		attr_msg_encode(&again, m);
		ATF_CHECK_EQ(again.len, one);
		ATF_CHECK(memcmp(again.buf, out.buf, one) == 0);
		str_release(&again);
		attr_msg_free(m);
	}
	/* Closed between messages: EOF, not an error. */
	ATF_CHECK_EQ(attr_read_fd(r, sv[1], 5000), ATTR_EOF);
	attr_reader_free(r);
	close(sv[1]);

	/* Closed inside a message: an error. */
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	ATF_REQUIRE_EQ(attr_write_fd(sv[0], out.buf, 20, 5000), 0);
	close(sv[0]);
	r = attr_reader_new(req_spec, ATTR_READ_STRICT, NULL);
	ATF_CHECK_EQ(attr_read_fd(r, sv[1], 5000), ATTR_ERROR);
	ATF_CHECK_EQ(attr_reader_errcode(r), ATTR_E_IO);
	ATF_CHECK(strstr(attr_reader_error(r), "closed inside a message (byte 20") != NULL);
	attr_reader_free(r);
	close(sv[1]);

	/* Malformed input on a descriptor. */
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	ATF_REQUIRE_EQ(attr_write_fd(sv[0], "I x y\n", 6, 5000), 0);
	r = attr_reader_new(NULL, 0, NULL);
	ATF_CHECK_EQ(attr_read_fd(r, sv[1], 5000), ATTR_ERROR);
	ATF_CHECK_EQ(attr_reader_errcode(r), ATTR_E_SYNTAX);
	attr_reader_free(r);
	/* A read error (here: not readable at all). */
	r = attr_reader_new(NULL, 0, NULL);
	int wr = open("/dev/null", O_WRONLY);
	ATF_REQUIRE(wr >= 0);
	ATF_CHECK_EQ(attr_read_fd(r, wr, 1000), ATTR_ERROR);
	ATF_CHECK_EQ(attr_reader_errcode(r), ATTR_E_IO);
	ATF_CHECK(strstr(attr_reader_error(r), "read: ") != NULL);
	close(wr);
	attr_reader_free(r);
	close(sv[0]);
	close(sv[1]);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(fd_timeout);
ATF_TC_BODY(fd_timeout, tc)
{
	int sv[2];
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	str_t out = STR_INIT;
	put_request(&out);
	attr_reader_t *r = attr_reader_new(req_spec, ATTR_READ_STRICT, NULL);
	/* Nothing at all, then a writer that stalls mid-message. */
	ATF_CHECK_EQ(attr_read_fd(r, sv[1], 0), ATTR_TIMEOUT);
	ATF_REQUIRE_EQ(attr_write_fd(sv[0], out.buf, 30, 5000), 0);
	ATF_CHECK_EQ(attr_read_fd(r, sv[1], 200), ATTR_TIMEOUT);
	ATF_CHECK_EQ(attr_reader_errcode(r), ATTR_E_IO);
	ATF_CHECK_MSG(strstr(attr_reader_error(r), "timeout after 200 ms with 30 bytes") != NULL,
		"%s", attr_reader_error(r));
	/* The partial message survives; the rest completes it. */
	ATF_REQUIRE_EQ(attr_write_fd(sv[0], out.buf + 30, out.len - 30, 5000), 0);
	ATF_CHECK_EQ(attr_read_fd(r, sv[1], 5000), ATTR_DONE);
	attr_msg_t *m = attr_reader_take(r);
	ATF_CHECK(m != NULL);
	attr_msg_free(m);
	attr_reader_free(r);

	/* A writer whose peer never reads times out too. */
	int sz = 4096;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	size_t big = 8 << 20;
	char *p = calloc(1, big);
	ATF_REQUIRE(p != NULL);
	errno = 0;
	ATF_CHECK_EQ(attr_write_fd(sv[0], p, big, 100), -1);
	ATF_CHECK_EQ(errno, ETIMEDOUT);
	free(p);
	close(sv[0]);
	close(sv[1]);
	str_release(&out);
}

ATF_TC_WITHOUT_HEAD(writer_rejects_bad_names);
ATF_TC_BODY(writer_rejects_bad_names, tc)
{
	ATF_CHECK(attr_name_ok("queue_id"));
	ATF_CHECK(attr_name_ok("a1_"));
	ATF_CHECK(!attr_name_ok(""));
	ATF_CHECK(!attr_name_ok(NULL));
	ATF_CHECK(!attr_name_ok("Queue"));
	ATF_CHECK(!attr_name_ok("_a"));
	ATF_CHECK(!attr_name_ok("a b"));
	char longname[70];
	memset(longname, 'a', 65);
	longname[65] = 0;
	ATF_CHECK(!attr_name_ok(longname));
	longname[64] = 0;
	ATF_CHECK(attr_name_ok(longname));
	/* A bad name is a bug in the caller: the writer panics. */
	pid_t pid = fork();
	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		close(2);	/* keep the panic line out of the test output */
		str_t s = STR_INIT;
		attr_print(&s, ATTR_INT("Bad name", 1), ATTR_END);
		_exit(0);
	}
	int st;
	ATF_REQUIRE(waitpid(pid, &st, 0) == pid);
	ATF_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, wire_format);
	ATF_TP_ADD_TC(tp, round_trip_types);
	ATF_TP_ADD_TC(tp, large_values);
	ATF_TP_ADD_TC(tp, nested_lists);
	ATF_TP_ADD_TC(tp, strict_and_lenient);
	ATF_TP_ADD_TC(tp, no_schema_accepts_anything);
	ATF_TP_ADD_TC(tp, duplicates);
	ATF_TP_ADD_TC(tp, wrong_type);
	ATF_TP_ADD_TC(tp, missing_required);
	ATF_TP_ADD_TC(tp, limits);
	ATF_TP_ADD_TC(tp, numbers);
	ATF_TP_ADD_TC(tp, garbage);
	ATF_TP_ADD_TC(tp, truncated);
	ATF_TP_ADD_TC(tp, pipelined);
	ATF_TP_ADD_TC(tp, fd_read);
	ATF_TP_ADD_TC(tp, fd_timeout);
	ATF_TP_ADD_TC(tp, writer_rejects_bad_names);
	return atf_no_error();
}
