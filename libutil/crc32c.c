/* CRC-32C: the crc32 instruction where the CPU has it, else tables. */
#include <string.h>
#include "crc32c.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86_CRC 1
#include <nmmintrin.h>
#endif

/* Reflected polynomial. */
#define POLY 0x82F63B78U

/* table[k][b]: the CRC of byte b followed by k zero bytes. */
static uint32_t table[8][256];
static uint32_t (*impl)(uint32_t, const unsigned char *, size_t);

static uint32_t sw(uint32_t c, const unsigned char *p, size_t len)
{
	/* Byte by byte up to 8-byte alignment, 8 bytes a step, the rest
	 * byte by byte.  The 8-byte step reads two 32-bit words in
	 * little-endian order. */
	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8
		    | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8
		    | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
		c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff]
		    ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24]
		    ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff]
		    ^ table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len-- > 0)
		c = table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#ifdef HAVE_X86_CRC
__attribute__((target("sse4.2")))
static uint32_t hw(uint32_t c, const unsigned char *p, size_t len)
{
	uint64_t c64;

	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		c = _mm_crc32_u8(c, *p++);
		len--;
	}
	c64 = c;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c64 = _mm_crc32_u64(c64, v);
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	while (len-- > 0)
		c = _mm_crc32_u8(c, *p++);
	return c;
}
#endif

__attribute__((constructor))
static void crc32c_init(void)
{
	for (uint32_t b = 0; b < 256; b++) {
		uint32_t c = b;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? POLY ^ (c >> 1) : c >> 1;
		table[0][b] = c;
	}
	for (uint32_t b = 0; b < 256; b++)
		for (int k = 1; k < 8; k++)
			table[k][b] = table[0][table[k - 1][b] & 0xff]
			    ^ (table[k - 1][b] >> 8);
	impl = sw;
#ifdef HAVE_X86_CRC
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		impl = hw;
#endif
}

uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
	return ~impl(~crc, data, len);
}

uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len)
{
	return ~sw(~crc, data, len);
}

bool crc32c_hw(void)
{
	return impl != sw;
}
