/* Unit tests for libutil/crc32c: known values, the instruction and the
 * tables agree with a bit-by-bit reference for every length and
 * alignment, and chaining. */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "crc32c.h"

/* The definition, one bit at a time. */
static uint32_t ref(uint32_t crc, const unsigned char *p, size_t len)
{
	crc = ~crc;
	while (len-- > 0) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? 0x82F63B78U ^ (crc >> 1) : crc >> 1;
	}
	return ~crc;
}

ATF_TC_WITHOUT_HEAD(known_values);
ATF_TC_BODY(known_values, tc)
{
	unsigned char zeros[32] = { 0 }, ones[32];

	memset(ones, 0xff, sizeof(ones));
	ATF_CHECK_EQ(crc32c(0, "123456789", 9), 0xE3069283U);
	ATF_CHECK_EQ(crc32c_sw(0, "123456789", 9), 0xE3069283U);
	ATF_CHECK_EQ(crc32c(0, "", 0), 0);
	/* RFC 3720 (iSCSI), B.4. */
	ATF_CHECK_EQ(crc32c(0, zeros, 32), 0x8A9136AAU);
	ATF_CHECK_EQ(crc32c(0, ones, 32), 0x62A8AB43U);
	printf("crc32c uses the %s\n", crc32c_hw() ? "instruction" : "tables");
}

ATF_TC_WITHOUT_HEAD(every_length_and_alignment);
ATF_TC_BODY(every_length_and_alignment, tc)
{
	unsigned char buf[600];

	srandom(1234);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)random();
	for (size_t off = 0; off < 16; off++) {
		for (size_t len = 0; len + off <= sizeof(buf); len++) {
			uint32_t want = ref(0, buf + off, len);
			ATF_REQUIRE_EQ_MSG(crc32c(0, buf + off, len), want,
			    "offset %zu length %zu", off, len);
			ATF_REQUIRE_EQ_MSG(crc32c_sw(0, buf + off, len), want,
			    "tables: offset %zu length %zu", off, len);
		}
	}
}

ATF_TC_WITHOUT_HEAD(chaining);
ATF_TC_BODY(chaining, tc)
{
	unsigned char buf[300];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 7 + 3);
	uint32_t whole = crc32c(0, buf, sizeof(buf));
	for (size_t cut = 0; cut <= sizeof(buf); cut++) {
		ATF_REQUIRE_EQ(crc32c(crc32c(0, buf, cut), buf + cut,
		    sizeof(buf) - cut), whole);
		ATF_REQUIRE_EQ(crc32c_sw(crc32c(0, buf, cut), buf + cut,
		    sizeof(buf) - cut), whole);
	}
}

/* What the queue files rely on: every change of one byte changes the
 * CRC (any error within 32 bits is detected). */
ATF_TC_WITHOUT_HEAD(one_byte_changes);
ATF_TC_BODY(one_byte_changes, tc)
{
	unsigned char buf[200];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i ^ 0x5a);
	uint32_t good = crc32c(0, buf, sizeof(buf));
	for (size_t i = 0; i < sizeof(buf); i++) {
		unsigned char keep = buf[i];
		for (int x = 1; x < 256; x++) {
			buf[i] = (unsigned char)(keep ^ x);
			ATF_REQUIRE(crc32c(0, buf, sizeof(buf)) != good);
		}
		buf[i] = keep;
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, known_values);
	ATF_TP_ADD_TC(tp, every_length_and_alignment);
	ATF_TP_ADD_TC(tp, chaining);
	ATF_TP_ADD_TC(tp, one_byte_changes);
	return atf_no_error();
}
