/* Unit tests for libutil/base64: the RFC 4648 test vectors both ways,
 * the SMTP AUTH strings, round trips of every byte value and length, and
 * what the strict decoder refuses. */
#include <atf-c.h>
#include <stdlib.h>
#include <string.h>
#include "base64.h"

static const struct { const char *plain, *enc; } vectors[] = {
	/* RFC 4648, section 10. */
	{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
	/* LOGIN's prompts. */
	{ "Username:", "VXNlcm5hbWU6" }, { "Password:", "UGFzc3dvcmQ6" },
};

ATF_TC_WITHOUT_HEAD(rfc4648_vectors);
ATF_TC_BODY(rfc4648_vectors, tc)
{
	str_t s = STR_INIT;

	for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		str_reset(&s);
		base64_encode(&s, vectors[i].plain, strlen(vectors[i].plain));
		ATF_CHECK_STREQ(str_cstr(&s), vectors[i].enc);
		ATF_CHECK_EQ(base64_encoded_len(strlen(vectors[i].plain)),
		    strlen(vectors[i].enc));
		str_reset(&s);
		ATF_CHECK(base64_decode(&s, vectors[i].enc,
		    strlen(vectors[i].enc)));
		ATF_CHECK_STREQ(str_cstr(&s), vectors[i].plain);
	}
	str_release(&s);
}

/* AUTH PLAIN's initial response: authzid NUL authcid NUL password. */
ATF_TC_WITHOUT_HEAD(plain_response);
ATF_TC_BODY(plain_response, tc)
{
	str_t s = STR_INIT, d = STR_INIT;

	base64_encode(&s, "\0alice\0s3cret", 13);
	ATF_CHECK_STREQ(str_cstr(&s), "AGFsaWNlAHMzY3JldA==");
	ATF_REQUIRE(base64_decode(&d, str_cstr(&s), str_len(&s)));
	ATF_CHECK_EQ(str_len(&d), 13);
	ATF_CHECK(memcmp(d.buf, "\0alice\0s3cret", 13) == 0);
	/* Appends to what is there. */
	str_set(&s, "AUTH PLAIN ");
	base64_encode(&s, "\0u\0p", 4);
	ATF_CHECK_STREQ(str_cstr(&s), "AUTH PLAIN AHUAcA==");
	str_release(&s);
	str_release(&d);
}

ATF_TC_WITHOUT_HEAD(round_trip);
ATF_TC_BODY(round_trip, tc)
{
	unsigned char buf[300];
	str_t e = STR_INIT, d = STR_INIT;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	for (size_t n = 0; n <= sizeof(buf); n++) {
		str_reset(&e);
		str_reset(&d);
		base64_encode(&e, buf, n);
		ATF_REQUIRE_EQ(str_len(&e), base64_encoded_len(n));
		ATF_REQUIRE_MSG(base64_decode(&d, str_cstr(&e), str_len(&e)),
		    "length %zu", n);
		ATF_REQUIRE_EQ(str_len(&d), n);
		ATF_REQUIRE(n == 0 || memcmp(d.buf, buf, n) == 0);
	}
	str_release(&e);
	str_release(&d);
}

ATF_TC_WITHOUT_HEAD(strict_decoder);
ATF_TC_BODY(strict_decoder, tc)
{
	static const char *const bad[] = {
		"Zg=", "Zg", "Z", "Zm9", "Zm 9v", "Zm9v\r\n", "Zm9v=", "====",
		"Z===", "Zg==Zg==", "Zm=v", "Zh==", "Zm9=", "Zm*v", "=Zm9",
		"Zm9vYg=\x80", NULL,
	};
	str_t s = STR_INIT;

	str_set(&s, "kept");
	for (int i = 0; bad[i] != NULL; i++) {
		ATF_CHECK_MSG(!base64_decode(&s, bad[i], strlen(bad[i])),
		    "\"%s\" decoded", bad[i]);
		ATF_CHECK_STREQ(str_cstr(&s), "kept");
	}
	str_release(&s);
}

/* The form alone, as smtpd checks a client's SASL response before it
 * goes to the authentication server: padded, no blanks, "" is fine; the
 * unused bits of a padded group are the decoder's business. */
ATF_TC_WITHOUT_HEAD(well_formed);
ATF_TC_BODY(well_formed, tc)
{
	static const struct {
		const char *s;
		bool ok;
	} b64[] = {
		{ "", true }, { "AGFsaWNlAHB3", true }, { "YWxpY2U=", true },
		{ "cHc=", true }, { "YQ==", true }, { "+/+/", true },
		{ "Zh==", true }, { "Zm9=", true },
		{ "YQ=", false }, { "YQ", false }, { "Y===", false },
		{ "YQ==YQ==", false }, { "Y=Q=", false }, { "YW xp", false },
		{ "YWxp\tY2U=", false }, { "*", false }, { "=", false },
		{ "====", false }, { "=Zm9", false }, { "Zm=v", false },
		{ "YWx-", false }, { "YWx_", false }, { "YWxpY2U=\n", false },
		{ "Zm9vYg=\x80", false },
	};
	str_t d = STR_INIT;

	for (size_t i = 0; i < sizeof(b64) / sizeof(b64[0]); i++) {
		size_t n = strlen(b64[i].s);

		ATF_CHECK_MSG(base64_well_formed(b64[i].s, n) == b64[i].ok,
		    "\"%s\"", b64[i].s);
		/* What decodes is well formed. */
		str_reset(&d);
		if (base64_decode(&d, b64[i].s, n))
			ATF_CHECK_MSG(b64[i].ok, "\"%s\" decoded", b64[i].s);
	}
	str_release(&d);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, rfc4648_vectors);
	ATF_TP_ADD_TC(tp, plain_response);
	ATF_TP_ADD_TC(tp, round_trip);
	ATF_TP_ADD_TC(tp, strict_decoder);
	ATF_TP_ADD_TC(tp, well_formed);
	return atf_no_error();
}
