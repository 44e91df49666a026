/* Queue-file records: CRC, slots, and the validating scanner.
 * doc/queue-file.md §3 is the specification this code follows. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "crc32c.h"
#include "mem.h"
#include "qfile_int.h"

/* ------------------------------------------------------------------ */
/* CRC-32, reflected polynomial 0xEDB88320 (zlib's). */

static uint32_t crc_table[256];
static bool crc_ready;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
	crc_ready = true;
}

uint32_t qf_crc32(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	if (!crc_ready)
		crc_init();
	crc = ~crc;
	while (len-- > 0)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

uint32_t qf_crc_rcpt_type(void)
{
	static uint32_t c;
	static bool ready;

	/* Benign race: every thread computes the same value. */
	if (!ready) {
		const char t = QF_REC_RCPT;
		c = crc32c(0, &t, 1);
		ready = true;
	}
	return c;
}

/* ------------------------------------------------------------------ */
/* Slots. */

static const char hexdig[] = "0123456789abcdef";

static void put_hex(char *out, uint64_t v, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		out[i] = hexdig[v & 15];
		v >>= 4;
	}
}

static bool get_hex(const char *in, int width, uint64_t *v)
{
	uint64_t r = 0;

	for (int i = 0; i < width; i++) {
		char c = in[i];
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			return false;
		r = r << 4 | (unsigned)d;
	}
	*v = r;
	return true;
}

void qf_slot_encode(char *out, const uint64_t *v, int n)
{
	for (int i = 0; i < n; i++)
		put_hex(out + i * QF_SLOT_VALUE_LEN, v[i], QF_SLOT_VALUE_LEN);
	put_hex(out + n * QF_SLOT_VALUE_LEN,
	    qf_crc32(0, out, (size_t)n * QF_SLOT_VALUE_LEN), QF_SLOT_CHECK_LEN);
}

/* 1 good, 0 hex digits but a wrong check (torn), -1 not a slot at all. */
static int slot_decode(const char *data, size_t len, uint64_t *v, int n)
{
	uint64_t check;

	if (len != (size_t)n * QF_SLOT_VALUE_LEN + QF_SLOT_CHECK_LEN)
		return -1;
	for (int i = 0; i < n; i++)
		if (!get_hex(data + i * QF_SLOT_VALUE_LEN, QF_SLOT_VALUE_LEN,
		    &v[i]))
			return -1;
	if (!get_hex(data + n * QF_SLOT_VALUE_LEN, QF_SLOT_CHECK_LEN, &check))
		return -1;
	if (check != qf_crc32(0, data, (size_t)n * QF_SLOT_VALUE_LEN))
		return 0;
	return 1;
}

bool qf_slot_decode(const char *data, size_t len, uint64_t *v, int n)
{
	return slot_decode(data, len, v, n) == 1;
}

/* ------------------------------------------------------------------ */
/* Record types. */

struct rec_info {
	int type;
	const char *name;
	size_t min, max;	/* data length bounds */
	bool text;		/* no NUL allowed */
};

static const struct rec_info rec_infos[] = {
	{ QF_REC_VERSION, "version", 1, 1, true },
	{ QF_REC_SIZES, "sizes", QF_SIZES_LEN, QF_SIZES_LEN, true },
	{ QF_REC_ATTEMPTS, "attempts", QF_SLOT1_LEN, QF_SLOT1_LEN, true },
	{ QF_REC_WARN, "warning time", QF_SLOT1_LEN, QF_SLOT1_LEN, true },
	{ QF_REC_TIME, "arrival time", 8, 32, true },
	{ QF_REC_SENDER, "sender", 0, 4096, true },
	{ QF_REC_ENVID, "envid", 1, 512, true },
	{ QF_REC_RET, "ret", 4, 4, true },
	{ QF_REC_ATTR, "attribute", 2, 8192, true },
	{ QF_REC_ORIG, "original recipient", 0, 4096, true },
	{ QF_REC_ORCPT, "orcpt", 1, 1024, true },
	{ QF_REC_NOTIFY, "notify", 1, 2, true },
	{ QF_REC_RCPT, "recipient", 1, 4096, true },
	{ QF_REC_DONE, "done recipient", 1, 4096, true },
	{ QF_REC_MESSAGE, "content start", 0, 0, true },
	{ QF_REC_LINE, "line", 1, QF_MAX_RECORD, false },
	{ QF_REC_PART, "line part", 1, QF_MAX_RECORD, false },
	{ QF_REC_EXTRACTED, "extracted start", 0, 0, true },
	{ QF_REC_END, "end", QF_END_LEN, QF_END_LEN, true },
};

/* Per-record lookup: a table indexed by the type byte. */
static const struct rec_info *rec_by_type[256];
static bool rec_ready;

static const struct rec_info *rec_info(int type)
{
	if (!rec_ready) {
		/* Benign race: every thread writes the same values. */
		for (size_t i = 0; i < sizeof(rec_infos) / sizeof(rec_infos[0]); i++)
			rec_by_type[rec_infos[i].type] = &rec_infos[i];
		rec_ready = true;
	}
	return rec_by_type[type & 0xff];
}

const char *qf_rec_name(int type)
{
	const struct rec_info *ri = rec_info(type);

	return ri ? ri->name : NULL;
}

/* ------------------------------------------------------------------ */
/* Errors. */

void qf_err_damage(qf_err_t *err, off_t offset, const char *fmt, ...)
{
	va_list ap;

	err->damaged = true;
	err->errnum = 0;
	err->offset = offset;
	va_start(ap, fmt);
	vsnprintf(err->reason, sizeof(err->reason), fmt, ap);
	va_end(ap);
}

void qf_err_sys(qf_err_t *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	err->damaged = false;
	err->errnum = errnum;
	err->offset = -1;
	va_start(ap, fmt);
	vsnprintf(err->reason, sizeof(err->reason), fmt, ap);
	va_end(ap);
	n = strlen(err->reason);
	snprintf(err->reason + n, sizeof(err->reason) - n, ": %s",
	    strerror(errnum));
}

bool qf_parse_time(const char *s, size_t len, struct timeval *tv)
{
	const char *dot = memchr(s, '.', len);
	long long sec = 0;
	long usec = 0;

	/* 1..19 digits, a dot, exactly 6 digits; no sign, no spaces. */
	if (dot == NULL || dot == s || dot - s > 19 || s + len - dot != 7)
		return false;
	for (const char *p = s; p < dot; p++) {
		if (*p < '0' || *p > '9')
			return false;
		if (sec > (0x7fffffffffffffffLL - 9) / 10)
			return false;
		sec = sec * 10 + (*p - '0');
	}
	for (const char *p = dot + 1; p < s + len; p++) {
		if (*p < '0' || *p > '9')
			return false;
		usec = usec * 10 + (*p - '0');
	}
	if ((long long)(time_t)sec != sec)
		return false;
	if (tv) {
		tv->tv_sec = (time_t)sec;
		tv->tv_usec = (suseconds_t)usec;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* The scanner. */

#define SCAN_MIN_BUF 65536
/* Room for the largest record: type, 3 length bytes, data, mark, check,
 * our NUL (put where the mark or check is, and put back). */
#define SCAN_MAX_BUF (QF_MAX_RECORD + 16)

qf_scan_t *qf_scan_new(int fd)
{
	qf_scan_t *sc = xcalloc(1, sizeof(*sc));

	sc->fd = fd;
	sc->full = true;
	sc->state = QF_ST_VERSION;
	return sc;
}

void qf_scan_free(qf_scan_t *sc)
{
	if (sc == NULL)
		return;
	free(sc->buf);
	free(sc);
}

void qf_scan_drop_buffer(qf_scan_t *sc)
{
	/* Keep the position: the next read refills from base. */
	free(sc->buf);
	sc->buf = NULL;
	sc->cap = sc->start = sc->end = 0;
	sc->eof = false;
	sc->nul_pending = false;
}

void qf_scan_seek(qf_scan_t *sc, off_t offset, enum qf_state state)
{
	sc->nul_pending = false;
	sc->start = sc->end = 0;
	sc->base = offset;
	sc->eof = false;
	sc->state = state;
	sc->full = false;
	sc->failed = false;
	sc->group = 0;
	sc->part_open = false;
	sc->last_line = false;
}

void qf_scan_sizes(const qf_scan_t *sc, uint64_t v[4])
{
	memcpy(v, sc->sizes, sizeof(sc->sizes));
}

int qf_scan_version(const qf_scan_t *sc)
{
	return sc->version;
}

void qf_scan_slots(const qf_scan_t *sc, uint64_t *attempts, uint64_t *warn,
    int *torn)
{
	*attempts = sc->attempts;
	*warn = sc->warn;
	*torn = sc->torn;
}

/* Makes at least n bytes available at buf[start] unless the file ends
 * first.  Returns the bytes available, or -1 on a read error. */
static ssize_t fill(qf_scan_t *sc, size_t n)
{
	size_t have = sc->end - sc->start;

	if (have >= n || sc->eof)
		return (ssize_t)have;
	if (sc->start > 0) {
		memmove(sc->buf, sc->buf + sc->start, have);
		sc->start = 0;
		sc->end = have;
	}
	if (sc->cap < n + 1 || sc->cap < SCAN_MIN_BUF) {
		size_t cap = sc->cap < SCAN_MIN_BUF ? SCAN_MIN_BUF : sc->cap;
		while (cap < n + 1)
			cap *= 2;
		if (cap > SCAN_MAX_BUF && n + 1 <= SCAN_MAX_BUF)
			cap = SCAN_MAX_BUF;
		sc->buf = xrealloc(sc->buf, cap);
		sc->cap = cap;
	}
	while (sc->end < n) {
		/* Leave one byte for the NUL after the data. */
		ssize_t r = pread(sc->fd, sc->buf + sc->end,
		    sc->cap - 1 - sc->end, sc->base + (off_t)sc->end);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			sc->eof = true;
			break;
		}
		sc->end += (size_t)r;
	}
	return (ssize_t)(sc->end - sc->start);
}

static int fail(qf_scan_t *sc, qf_err_t *err)
{
	sc->failed = true;
	if (err != NULL && err != &sc->err)
		*err = sc->err;
	return -1;
}

#define DAMAGE(off, ...) do { \
	qf_err_damage(&sc->err, (off), __VA_ARGS__); \
	return fail(sc, err); \
} while (0)

static const char *state_name(enum qf_state st)
{
	switch (st) {
	case QF_ST_VERSION:
	case QF_ST_SIZES:
	case QF_ST_ATTEMPTS:
	case QF_ST_WARN:
		return "the head";
	case QF_ST_ENVELOPE:
		return "the envelope";
	case QF_ST_CONTENT:
		return "the content";
	case QF_ST_EXTRACTED:
		return "the extracted recipients";
	default:
		return "the end of the file";
	}
}

/* A short printable rendering of record data for error messages (the
 * reasons end up in logs: no control characters). */
static const char *shown(char *buf, size_t size, const char *data,
    size_t len)
{
	size_t o = 0, i;

	/* Each byte takes at most 4 characters; keep 4 for "..." + NUL. */
	for (i = 0; i < len && o + 8 < size; i++) {
		unsigned char c = (unsigned char)data[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\%03o", c);
	}
	if (i < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

static void type_str(char *buf, size_t size, int type)
{
	if (type > 0x20 && type < 0x7f)
		snprintf(buf, size, "'%c'", type);
	else
		snprintf(buf, size, "0x%02x", type & 0xff);
}

/* A torn A/W slot: read it again a few times (an update in progress). */
static int reread_slot(qf_scan_t *sc, off_t data_off, uint64_t *v)
{
	char tmp[QF_SLOT1_LEN];

	for (int i = 0; i < 3; i++) {
		ssize_t r = pread(sc->fd, tmp, sizeof(tmp), data_off);
		if (r != (ssize_t)sizeof(tmp))
			return -1;
		int ok = slot_decode(tmp, sizeof(tmp), v, 1);
		if (ok != 0)
			return ok;
		usleep(1000);
	}
	return 0;
}

int qf_scan_next(qf_scan_t *sc, qf_rec_t *rec, qf_err_t *err)
{
	const struct rec_info *ri;
	off_t off;
	ssize_t avail;
	size_t hdr, len = 0;
	const unsigned char *p;
	char tname[8], sh[64];
	int type;

	if (sc->failed)
		return fail(sc, err);
	if (sc->nul_pending) {
		sc->buf[sc->nul_at] = sc->nul_byte;
		sc->nul_pending = false;
	}
	if (sc->state == QF_ST_DONE)
		return 0;

	off = sc->base;
	if ((avail = fill(sc, 1)) < 0) {
		qf_err_sys(&sc->err, errno, "read at offset %lld", (long long)off);
		return fail(sc, err);
	}
	if (sc->state == QF_ST_END) {
		if (avail > 0)
			DAMAGE(off, "data after end record");
		sc->state = QF_ST_DONE;
		return 0;
	}
	if (avail == 0) {
		if (off == 0)
			DAMAGE(off, "empty file");
		DAMAGE(off, "missing end record (the file ends in %s)",
		    state_name(sc->state));
	}
	p = (const unsigned char *)sc->buf + sc->start;
	type = p[0];
	type_str(tname, sizeof(tname), type);
	if ((ri = rec_info(type)) == NULL) {
		if (off == 0)
			DAMAGE(off, "not a queue file (unknown first byte %s)", tname);
		DAMAGE(off, "unknown record type %s", tname);
	}
	/* Is this type allowed here at all?  (Checked before the length,
	 * so a misplaced record is reported as such even when cut short.) */
	switch (sc->state) {
	case QF_ST_VERSION:
		if (type != QF_REC_VERSION)
			DAMAGE(off, "not a queue file (no version record first)");
		break;
	case QF_ST_SIZES:
	case QF_ST_ATTEMPTS:
	case QF_ST_WARN: {
		int want = sc->state == QF_ST_SIZES ? QF_REC_SIZES
		    : sc->state == QF_ST_ATTEMPTS ? QF_REC_ATTEMPTS : QF_REC_WARN;
		if (type != want)
			DAMAGE(off, "record type %s where the %s slot must be",
			    tname, qf_rec_name(want));
		break;
	}
	case QF_ST_ENVELOPE:
		if (type == QF_REC_END)
			DAMAGE(off, "end record in the envelope (no content)");
		if (strchr("TSIFaODNRrM", type) == NULL)
			DAMAGE(off, "%s record not allowed in the envelope",
			    ri->name);
		break;
	case QF_ST_EXTRACTED:
		if (strchr("aODNRrE", type) == NULL)
			DAMAGE(off, "%s record not allowed in the extracted "
			    "recipients", ri->name);
		break;
	case QF_ST_CONTENT:
		if (strchr("LlXE", type) == NULL)
			DAMAGE(off, "%s record not allowed in the content",
			    ri->name);
		break;
	default:
		DAMAGE(off, "internal scanner state");
	}

	/* The length: LEB128, 1 to 4 bytes, canonical. */
	if ((avail = fill(sc, 5)) < 0) {
		qf_err_sys(&sc->err, errno, "read at offset %lld", (long long)off);
		return fail(sc, err);
	}
	p = (const unsigned char *)sc->buf + sc->start;
	for (hdr = 1;; hdr++) {
		if (hdr > 4)
			DAMAGE(off, "%s record length field longer than 4 bytes",
			    ri->name);
		if ((ssize_t)hdr >= avail)
			DAMAGE(off, "truncated %s record (length cut short)",
			    ri->name);
		len |= (size_t)(p[hdr] & 0x7f) << (7 * (hdr - 1));
		if ((p[hdr] & 0x80) == 0)
			break;
	}
	if (hdr > 1 && p[hdr] == 0)
		DAMAGE(off, "%s record length is not canonical", ri->name);
	hdr++;
	if (len < ri->min || len > ri->max) {
		if (ri->min == ri->max)
			DAMAGE(off, "%s record has %zu data bytes, must have %zu",
			    ri->name, len, ri->min);
		DAMAGE(off, "%s record has %zu data bytes (allowed %zu to %zu)",
		    ri->name, len, ri->min, ri->max);
	}
	/* Version 2: the mark of a recipient and the check of every record
	 * after the head. */
	bool rcpt = type == QF_REC_RCPT || type == QF_REC_DONE;
	size_t tlen = sc->version >= 2 && sc->state >= QF_ST_ENVELOPE
	    ? QF_CHECK_LEN + (rcpt ? 1 : 0) : 0;
	bool half = false;
	if ((avail = fill(sc, hdr + len + tlen)) < 0) {
		qf_err_sys(&sc->err, errno, "read at offset %lld", (long long)off);
		return fail(sc, err);
	}
	if ((size_t)avail < hdr + len)
		DAMAGE(off, "truncated %s record (%zu of %zu data bytes present)",
		    ri->name, (size_t)avail - hdr, len);
	if ((size_t)avail < hdr + len + tlen)
		DAMAGE(off, "truncated %s record (check value cut short)",
		    ri->name);
	p = (const unsigned char *)sc->buf + sc->start;
	const char *data = (const char *)p + hdr;
	if (tlen > 0) {
		/* First the check, so that a changed byte is reported as
		 * such, at its record, before anything reads the data.  The
		 * done flag (type byte and mark) is outside it. */
		const unsigned char *t = p + hdr + len;
		uint32_t want = rcpt ? crc32c(qf_crc_rcpt_type(), p + 1,
		    hdr - 1 + len) : crc32c(0, p, hdr + len);
		if (rcpt)
			t++;
		uint32_t have = (uint32_t)t[0] | (uint32_t)t[1] << 8
		    | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
		if (have != want)
			DAMAGE(off, "%s record fails its check (stored 0x%08x, "
			    "computed 0x%08x)", ri->name, have, want);
		if (rcpt) {
			int mark = p[hdr + len];
			if (mark != QF_REC_RCPT && mark != QF_REC_DONE)
				DAMAGE(off, "recipient record has a bad done mark "
				    "0x%02x", (unsigned)mark);
			if (mark != type) {
				/* Half-marked: not done (doc §3). */
				half = true;
				type = QF_REC_RCPT;
				if (sc->full)
					sc->half_marked++;
			}
		}
	}
	if (ri->text && memchr(data, '\0', len) != NULL)
		DAMAGE(off, "%s record contains a NUL byte", ri->name);

	/* Where the record may be, and what it must hold. */
	switch (sc->state) {
	case QF_ST_VERSION:
		if (type != QF_REC_VERSION)
			DAMAGE(off, "not a queue file (no version record first)");
		if (memcmp(data, QF_VERSION, len) == 0)
			sc->version = 2;
		else if (memcmp(data, QF_VERSION_1, len) == 0)
			sc->version = 1;
		else
			DAMAGE(off, "unsupported queue file version '%s'",
			    shown(sh, sizeof(sh), data, len));
		sc->state = QF_ST_SIZES;
		break;
	case QF_ST_SIZES:
		if (type != QF_REC_SIZES)
			DAMAGE(off, "record type %s where the sizes slot must be",
			    tname);
		if (slot_decode(data, len, sc->sizes, 4) != 1)
			DAMAGE(off, "damaged sizes slot");
		sc->state = QF_ST_ATTEMPTS;
		break;
	case QF_ST_ATTEMPTS:
	case QF_ST_WARN: {
		int want = sc->state == QF_ST_ATTEMPTS ? QF_REC_ATTEMPTS : QF_REC_WARN;
		uint64_t v = 0;
		int ok;
		if (type != want)
			DAMAGE(off, "record type %s where the %s slot must be",
			    tname, qf_rec_name(want));
		ok = slot_decode(data, len, &v, 1);
		if (ok < 0)
			DAMAGE(off, "%s slot is not hex digits", ri->name);
		if (ok == 0)
			ok = reread_slot(sc, off + (off_t)hdr, &v);
		if (ok < 0)
			DAMAGE(off, "%s slot changed into garbage while read",
			    ri->name);
		if (ok == 0) {
			/* Torn by a crash in mid-update: not damage (doc §6). */
			v = 0;
			sc->torn |= want == QF_REC_ATTEMPTS ? QF_TORN_ATTEMPTS
			    : QF_TORN_WARN;
		}
		if (want == QF_REC_ATTEMPTS) {
			sc->attempts = v;
			sc->state = QF_ST_WARN;
		} else {
			sc->warn = v;
			sc->state = QF_ST_ENVELOPE;
		}
		break;
	}
	case QF_ST_ENVELOPE:
	case QF_ST_EXTRACTED:
		switch (type) {
		case QF_REC_TIME:
		case QF_REC_SENDER:
		case QF_REC_ENVID:
		case QF_REC_RET:
		case QF_REC_ATTR: {
			int bit = type == QF_REC_TIME ? QF_SEEN_TIME
			    : type == QF_REC_SENDER ? QF_SEEN_SENDER
			    : type == QF_REC_ENVID ? QF_SEEN_ENVID
			    : type == QF_REC_RET ? QF_SEEN_RET : 0;
			/* Attributes also after the content (the content
			 * filter a header check set): they replace the
			 * envelope's (qfile_read.c). */
			if (sc->state != QF_ST_ENVELOPE && type != QF_REC_ATTR)
				DAMAGE(off, "%s record not allowed in %s", ri->name,
				    state_name(sc->state));
			if (sc->group)
				DAMAGE(off, "recipient group not ended by a recipient "
				    "before a %s record", ri->name);
			if (bit && sc->full && (sc->seen & bit))
				DAMAGE(off, "second %s record", ri->name);
			sc->seen |= bit;
			if (type == QF_REC_TIME && !qf_parse_time(data, len, NULL))
				DAMAGE(off, "bad arrival time '%s'",
				    shown(sh, sizeof(sh), data, len));
			if (type == QF_REC_RET && memcmp(data, "FULL", 4) != 0
			    && memcmp(data, "HDRS", 4) != 0)
				DAMAGE(off, "bad RET value '%s'",
				    shown(sh, sizeof(sh), data, len));
			if (type == QF_REC_ATTR) {
				const char *eq = memchr(data, '=', len);
				size_t nl = eq ? (size_t)(eq - data) : 0;
				bool good = nl > 0 && nl <= QF_MAX_ATTR_NAME
				    && data[0] >= 'a' && data[0] <= 'z';
				for (size_t i = 1; good && i < nl; i++)
					good = (data[i] >= 'a' && data[i] <= 'z')
					    || (data[i] >= '0' && data[i] <= '9')
					    || data[i] == '_';
				if (!good)
					DAMAGE(off, "bad attribute name in '%s'",
					    shown(sh, sizeof(sh), data, len));
				if (sc->full && ++sc->nattrs > QF_MAX_ATTRS)
					DAMAGE(off, "more than %d attributes",
					    QF_MAX_ATTRS);
			}
			break;
		}
		case QF_REC_ORIG:
		case QF_REC_ORCPT:
		case QF_REC_NOTIFY: {
			unsigned bit = type == QF_REC_ORIG ? 1 : type == QF_REC_ORCPT ? 2 : 4;
			if (sc->group & bit)
				DAMAGE(off, "second %s record in one recipient group",
				    ri->name);
			sc->group |= bit;
			if (type == QF_REC_NOTIFY) {
				int v = 0;
				for (size_t i = 0; i < len; i++) {
					if (data[i] < '0' || data[i] > '9')
						v = -1;
					else if (v >= 0)
						v = v * 10 + data[i] - '0';
				}
				if (v < 1 || (len == 2 && data[0] == '0')
				    || !dsn_notify_valid(v))
					DAMAGE(off, "bad NOTIFY value '%s'",
					    shown(sh, sizeof(sh), data, len));
			}
			break;
		}
		case QF_REC_RCPT:
		case QF_REC_DONE:
			sc->group = 0;
			sc->nrcpt++;
			break;
		case QF_REC_MESSAGE:
			if (sc->state != QF_ST_ENVELOPE)
				DAMAGE(off, "content start record in %s",
				    state_name(sc->state));
			if (sc->group)
				DAMAGE(off, "recipient group not ended by a recipient "
				    "before the content");
			if (sc->full && !(sc->seen & QF_SEEN_TIME))
				DAMAGE(off, "the envelope has no arrival time");
			if (sc->full && !(sc->seen & QF_SEEN_SENDER))
				DAMAGE(off, "the envelope has no sender");
			if (sc->full && sc->sizes[0] != (uint64_t)off + hdr + tlen)
				DAMAGE(off, "sizes slot says content at offset %llu, "
				    "it is at %llu",
				    (unsigned long long)sc->sizes[0],
				    (unsigned long long)off + hdr + tlen);
			sc->state = QF_ST_CONTENT;
			break;
		case QF_REC_END:
			if (sc->state != QF_ST_EXTRACTED)
				DAMAGE(off, "end record in the envelope (no content)");
			goto end_record;
		default:
			DAMAGE(off, "%s record not allowed in %s", ri->name,
			    state_name(sc->state));
		}
		break;
	case QF_ST_CONTENT:
		switch (type) {
		case QF_REC_LINE:
		case QF_REC_PART: {
			const char *lf = memchr(data, '\n', len);
			if (sc->last_line)
				DAMAGE(off, "a line without newline is followed by "
				    "more content");
			if (type == QF_REC_PART && lf != NULL)
				DAMAGE(off, "line part contains a newline");
			if (type == QF_REC_LINE && lf != NULL && lf != data + len - 1)
				DAMAGE(off, "line record holds more than one line");
			if (type == QF_REC_LINE && lf == NULL)
				sc->last_line = true;
			sc->part_open = type == QF_REC_PART;
			sc->content_bytes += len;
			break;
		}
		case QF_REC_EXTRACTED:
			if (sc->part_open)
				DAMAGE(off, "line continued past the end of the content");
			if (sc->full && sc->sizes[2] != (uint64_t)off)
				DAMAGE(off, "sizes slot says extracted recipients at "
				    "offset %llu, they are at %llu",
				    (unsigned long long)sc->sizes[2],
				    (unsigned long long)off);
			sc->have_x = true;
			sc->state = QF_ST_EXTRACTED;
			break;
		case QF_REC_END:
			if (sc->part_open)
				DAMAGE(off, "line continued past the end of the content");
			goto end_record;
		default:
			DAMAGE(off, "%s record not allowed in the content", ri->name);
		}
		break;
	default:
		/* QF_ST_END/DONE handled above. */
		DAMAGE(off, "internal scanner state");
	}
	goto done;

end_record:
	if (sc->group)
		DAMAGE(off, "recipient group not ended by a recipient before "
		    "the end record");
	{
		uint64_t self;
		if (!get_hex(data, QF_END_LEN, &self) || self != (uint64_t)off)
			DAMAGE(off, "end record does not hold its own offset");
	}
	if (sc->full) {
		if (sc->content_bytes != sc->sizes[1])
			DAMAGE(off, "sizes slot says content size %llu, content "
			    "has %llu bytes", (unsigned long long)sc->sizes[1],
			    (unsigned long long)sc->content_bytes);
		if (!sc->have_x && sc->sizes[2] != 0)
			DAMAGE(off, "sizes slot says extracted recipients at "
			    "offset %llu, there are none",
			    (unsigned long long)sc->sizes[2]);
		if (sc->nrcpt != sc->sizes[3])
			DAMAGE(off, "sizes slot says %llu recipients, the file "
			    "has %llu", (unsigned long long)sc->sizes[3],
			    (unsigned long long)sc->nrcpt);
	}
	sc->state = QF_ST_END;

done:
	rec->type = type;
	rec->offset = off;
	rec->data = data;
	rec->len = len;
	rec->half_marked = half;
	/* NUL-terminate in place; the byte is put back on the next call. */
	sc->nul_at = sc->start + hdr + len;
	sc->nul_byte = sc->buf[sc->nul_at];
	sc->buf[sc->nul_at] = '\0';
	sc->nul_pending = true;
	sc->start += hdr + len + tlen;
	sc->base += (off_t)(hdr + len + tlen);
	return 1;
}
