/* Helpers shared by the unit tests (tests/unit/t_*.c): include this
 * instead of copying them.  Each test program is built from its own t_*.c
 * only, so the helpers are static inline here (no warning in a test that
 * does not use one of them). */
#ifndef PETREL_TESTUTIL_H
#define PETREL_TESTUTIL_H
#include <atf-c.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "dict.h"
#include "str.h"

/* Writes text to path (replacing it); fails the test case on error. */
static inline void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ATF_REQUIRE(f != NULL);
	fputs(text, f);
	ATF_REQUIRE(fclose(f) == 0);
}

/* True if all (lines ending in '\n', as error collections are) holds
 * line as a whole line. */
static inline bool has_line(const char *all, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = all; *p;) {
		size_t l = strcspn(p, "\n");
		if (l == n && strncmp(p, line, n) == 0)
			return true;
		p += l + (p[l] == '\n');
	}
	return false;
}

#define CHECK_LINE(all, line) \
	ATF_CHECK_MSG(has_line((all), (line)), "want line '%s' in:\n%s", (line), (all))

/* dict_open, failing the test case with the error if it fails. */
static inline dict_t *open_ok(const char *spec, int flags)
{
	str_t err = STR_INIT;
	dict_t *d = dict_open(spec, flags, &err);
	if (d == NULL)
		atf_tc_fail("%s: %s", spec, str_cstr(&err));
	str_release(&err);
	return d;
}

/* Looking key up in d gives want; want NULL: no entry, and no error. */
static inline void check_value(dict_t *d, const char *key, const char *want)
{
	const char *v = dict_lookup(d, key);
	if (want == NULL) {
		ATF_CHECK_MSG(v == NULL, "%s: %s: got \"%s\", want none",
		    dict_spec(d), key, v);
		ATF_CHECK_MSG(!dict_error(d), "%s: %s: error %s", dict_spec(d),
		    key, dict_errmsg(d));
	} else {
		ATF_CHECK_MSG(v != NULL && strcmp(v, want) == 0,
		    "%s: %s: got \"%s\", want \"%s\" (%s)", dict_spec(d), key,
		    v ? v : "(none)", want, dict_errmsg(d));
	}
}

#endif
