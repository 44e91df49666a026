/* Private to libglobal/qfile_*.c: the scanner's state, so the reader can
 * restart it in the middle of a file it has already validated. */
#ifndef PETREL_QFILE_INT_H
#define PETREL_QFILE_INT_H
#include "qfile.h"

enum qf_state {
	QF_ST_VERSION, QF_ST_SIZES, QF_ST_ATTEMPTS, QF_ST_WARN,
	QF_ST_ENVELOPE, QF_ST_CONTENT, QF_ST_EXTRACTED, QF_ST_END,
	QF_ST_DONE,
};

/* Where each envelope value was seen (bits). */
#define QF_SEEN_TIME 1
#define QF_SEEN_SENDER 2
#define QF_SEEN_ENVID 4
#define QF_SEEN_RET 8

struct qf_scan {
	int fd;
	char *buf;
	size_t cap;
	size_t start, end;	/* buf[start..end) holds the file from base */
	off_t base;		/* file offset of buf[start] */
	bool eof;		/* a read hit the end of the file */
	size_t nul_at;		/* restore buf[nul_at] = nul_byte next call */
	char nul_byte;
	bool nul_pending;

	enum qf_state state;
	bool full;		/* scanning from offset 0: check Z totals */
	bool failed;
	qf_err_t err;

	uint64_t sizes[4];	/* Z: content offset, size, X offset, rcpts */
	uint64_t attempts, warn;
	int torn;
	int version;		/* 1 or 2 once V was read */
	uint64_t half_marked;	/* recipients, in a full scan */
	int seen;
	unsigned group;		/* bits of O/D/N seen in the open group */
	size_t nattrs;
	uint64_t nrcpt;
	uint64_t content_bytes;
	bool part_open;		/* an 'l' awaits its 'L' */
	bool last_line;		/* an 'L' without LF: nothing may follow */
	bool have_x;
};

/* The CRC-32C of the one byte 'R': where the check of an R or r record
 * starts (the type byte of either counts as R). */
uint32_t qf_crc_rcpt_type(void);
/* Restarts sc at offset in state (a validated file); totals unchecked. */
void qf_scan_seek(qf_scan_t *sc, off_t offset, enum qf_state state);
/* Frees the read buffer (it comes back when needed). */
void qf_scan_drop_buffer(qf_scan_t *sc);
/* Sets a damage error at offset with a printf-style reason. */
void qf_err_damage(qf_err_t *err, off_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void qf_err_sys(qf_err_t *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Parses the decimal time "SEC.USEC" (6 digits); false if malformed. */
bool qf_parse_time(const char *s, size_t len, struct timeval *tv);

#endif
