/* Queue IDs: formatting and strict parsing. */
#include <string.h>
#include "queue_id.h"

const char queue_id_alphabet[33] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

#define SEC_DIGITS 7
#define USEC_DIGITS 4

/* Value of one digit, or -1. */
static int digit_value(unsigned char c)
{
	static signed char map[256];
	static bool ready;

	if (!ready) {
		/* Benign race: every thread computes the same table. */
		memset(map, -1, sizeof(map));
		for (int i = 0; i < 32; i++)
			map[(unsigned char)queue_id_alphabet[i]] = (signed char)i;
		ready = true;
	}
	return map[c];
}

/* Writes v as exactly width digits, most significant first. */
static void put_fixed(char *out, unsigned long long v, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		out[i] = queue_id_alphabet[v & 31];
		v >>= 5;
	}
}

void queue_id_make(char buf[QUEUE_ID_SIZE], const struct timeval *tv,
    ino_t ino)
{
	unsigned long long sec, usec, max_sec = (1ULL << (5 * SEC_DIGITS)) - 1;
	char tmp[16];
	int n = 0;

	sec = tv->tv_sec < 0 ? 0 : (unsigned long long)tv->tv_sec;
	if (sec > max_sec)
		sec = max_sec;
	usec = tv->tv_usec < 0 ? 0 : (unsigned long long)tv->tv_usec;
	if (usec > 999999)
		usec = 999999;
	put_fixed(buf, sec, SEC_DIGITS);
	put_fixed(buf + SEC_DIGITS, usec, USEC_DIGITS);

	/* Inode: variable length, no leading zeros ("0" for inode 0, which
	 * no real file has; the parser rejects it). */
	unsigned long long v = (unsigned long long)ino;
	do {
		tmp[n++] = queue_id_alphabet[v & 31];
		v >>= 5;
	} while (v != 0);
	for (int i = 0; i < n; i++)
		buf[QUEUE_ID_TIME_LEN + i] = tmp[n - 1 - i];
	buf[QUEUE_ID_TIME_LEN + n] = '\0';
}

bool queue_id_parse(const char *id, struct timeval *tv, ino_t *ino)
{
	size_t len = strnlen(id, QUEUE_ID_MAX_LEN + 1);
	unsigned long long sec = 0, usec = 0, in = 0;

	if (len < QUEUE_ID_MIN_LEN || len > QUEUE_ID_MAX_LEN)
		return false;
	for (size_t i = 0; i < len; i++) {
		int d = digit_value((unsigned char)id[i]);
		if (d < 0)
			return false;
		if (i < SEC_DIGITS) {
			sec = sec << 5 | (unsigned)d;
		} else if (i < QUEUE_ID_TIME_LEN) {
			usec = usec << 5 | (unsigned)d;
		} else {
			if (i == QUEUE_ID_TIME_LEN && d == 0)
				return false;	/* leading zero / inode 0 */
			if (in >> 59)
				return false;	/* would overflow 64 bits */
			in = in << 5 | (unsigned)d;
		}
	}
	if (usec > 999999)
		return false;
	/* An inode that does not fit ino_t cannot name a file here. */
	if ((unsigned long long)(ino_t)in != in)
		return false;
	if (tv != NULL) {
		tv->tv_sec = (time_t)sec;
		tv->tv_usec = (suseconds_t)usec;
	}
	if (ino != NULL)
		*ino = (ino_t)in;
	return true;
}

bool queue_id_valid(const char *id)
{
	return queue_id_parse(id, NULL, NULL);
}

bool queue_id_matches_inode(const char *id, ino_t ino)
{
	ino_t got;

	return queue_id_parse(id, NULL, &got) && got == ino;
}
