/* postmap: build, query and list lookup tables.
 *
 *	postmap [-c config_dir] [-frv] [type:]file...
 *	postmap [-c config_dir] [-f] -q key|- [type:]file...
 *	postmap [-c config_dir] [-f] -s [type:]file...
 *	postmap [-c config_dir] [-frv] -i [type:]file
 *	postmap [-c config_dir] [-f] -d key|- [type:]file...
 *
 * The source is the text format of doc/lookup-tables.md ("key value"
 * lines); file.db is written beside it atomically.  man/postmap.1. */
#include "dict.h"
#include "mapcmd.h"

struct load_ctx {
	mapcmd_build_t *b;
};

static int pair(const char *key, const char *value, const char *file,
    int lineno, void *ctx, str_t *err)
{
	return mapcmd_put(ctx, key, value, file, lineno, err);
}

static int load(const char *path, mapcmd_build_t *b, str_t *err)
{
	return dict_text_parse(path, pair, b, err);
}

int main(int argc, char **argv)
{
	static const mapcmd_spec_t spec = {
		.name = "postmap",
		.load = load,
		.dump_sep = " ",
	};

	return mapcmd_main(argc, argv, &spec);
}
