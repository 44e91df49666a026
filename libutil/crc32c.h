/* CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected, initial value
 * and final xor 0xFFFFFFFF: the iSCSI/ext4/SCTP check).  Computed with
 * the CPU's crc32 instruction when it has one (x86-64 with SSE 4.2),
 * with tables (slicing by 8) otherwise; both give the same values.
 * Thread-safe: the tables and the choice are made before main(). */
#ifndef PETREL_CRC32C_H
#define PETREL_CRC32C_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of data, continuing from crc (0 to start): crc32c(crc32c(0,
 * a), b) is the CRC of a followed by b.  crc32c(0, "123456789", 9) is
 * 0xE3069283. */
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

/* The table version alone, and whether crc32c() uses the instruction
 * (for tests and benchmarks). */
uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len);
bool crc32c_hw(void);

#endif
