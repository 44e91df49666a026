/* texthash: a "key value" text file read into memory at open time.
 * Unlike hash: it is not reopened when the file changes: it is meant for
 * small tables and for tests, where a restart is cheap. */
#include <stdio.h>
#include "dict.h"

static int add_pair(const char *key, const char *value, const char *file,
    int lineno, void *ctx, str_t *err)
{
	char where[64 + 4096];

	/* Paths longer than where[] are cut in messages only. */
	bfmt(where, sizeof(where), "%s:%d", file, lineno);
	return dict_mem_add(ctx, key, value, where, err);
}

dict_t *dict_texthash_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	dict_t *d = dict_mem_new(spec, flags);
	str_t why = STR_INIT;

	if (dict_text_parse(name, add_pair, d, &why) < 0) {
		str_setf(err, "%s: %s", spec, str_cstr(&why));
		str_release(&why);
		dict_close(d);
		return NULL;
	}
	str_release(&why);
	return d;
}
