/* libFuzzer target for the pattern tables of libutil/dict: cidr:,
 * regexp: and pcre: files of arbitrary bytes are opened (the first input
 * byte picks the type) and, when they open, looked up with a few fixed
 * keys and with a key taken from the input.  Invariants (abort() when
 * broken): an open either succeeds or says why, starting with the spec;
 * a lookup never fails on a table that opened (only pcre: may, when a
 * match limit is hit, and then it says why). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dict.h"
#include "log.h"

static char path[64];

static void check(bool ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *types[] = { "cidr", "regexp", "pcre" };
	static const char *keys[] = { "10.1.2.3", "::1", "::ffff:10.0.0.1",
		"user@example.com", "Postmaster@Example.ORG", "a" };
	char spec[128], key[65];
	str_t err = STR_INIT;
	const char *type;
	FILE *f;
	dict_t *d;

	if (size < 1)
		return 0;
	if (path[0] == 0) {
		char dir[] = "/tmp/fuzz_tables.XXXXXX";
		check(mkdtemp(dir) != NULL);
		snprintf(path, sizeof(path), "%s/t", dir);
		log_init("fuzz_tables");
	}
	type = types[data[0] % 3];
	/* glibc's regcomp expands counted repetitions into copies:
	 * "((a{1,99}){1,99}){1,99}" is legal and costs gigabytes.  Such a
	 * table is its administrator's problem (the same in Postfix), not a
	 * bug to find here. */
	if (strcmp(type, "regexp") == 0 && memchr(data, '{', size) != NULL) {
		size_t braces = 0;
		for (size_t i = 0; i < size; i++)
			braces += data[i] == '{';
		if (braces > 2)
			return 0;
	}
	check((f = fopen(path, "w")) != NULL);
	if (size > 1)
		check(fwrite(data + 1, 1, size - 1, f) == size - 1);
	check(fclose(f) == 0);
	snprintf(spec, sizeof(spec), "%s:%s", type, path);
	d = dict_open(spec, 0, &err);
	if (d == NULL) {
		check(strncmp(str_cstr(&err), spec, strlen(spec)) == 0);
		str_release(&err);
		return 0;
	}
	/* a key from the input's end: at most 64 bytes up to a NUL */
	size_t n = size - 1 > 64 ? 64 : size - 1;
	memcpy(key, data + size - n, n);
	key[n] = 0;
	for (size_t i = 0; i <= sizeof(keys) / sizeof(keys[0]); i++) {
		const char *k = i < sizeof(keys) / sizeof(keys[0]) ? keys[i] : key;
		const char *v = NULL;
		enum dict_status st = dict_get(d, k, &v);
		if (st == DICT_STAT_FOUND)
			check(v != NULL && strlen(v) <= DICT_VALUE_MAX);
		else if (st == DICT_STAT_ERROR)
			check(strcmp(type, "pcre") == 0 && *dict_errmsg(d) != 0);
	}
	dict_close(d);
	str_release(&err);
	return 0;
}
