/* postalias: build, query and list alias tables (aliases(5) format).
 *
 *	postalias [-c config_dir] [-frv] [type:]file...
 *	postalias [-c config_dir] [-f] -q key|- [type:]file...
 *	postalias [-c config_dir] [-f] -s [type:]file...
 *	postalias [-c config_dir] [-frv] -i [type:]file
 *	postalias [-c config_dir] [-f] -d key|- [type:]file...
 *
 * Each entry "name: target, ..." is checked (names, quoting, every
 * target) before it is stored as name -> the value as written; a bad
 * entry names file:line and nothing is changed.  newaliases and
 * sendmail -bi run postalias for each table of alias_database.
 * man/postalias.1, man/aliases.5. */
#include <string.h>
#include "dict.h"
#include "aliases.h"
#include "mapcmd.h"

static int entry(char *line, const char *file, int lineno, void *ctx,
    str_t *err)
{
	str_t name = STR_INIT, why = STR_INIT;
	alias_list_t targets = ALIAS_LIST_INIT;
	char *value;
	int rc = -1;

	if (alias_entry_parse(line, &name, &value, &why) < 0
	    || alias_targets_parse(value, strlen(value), &targets, &why) < 0) {
		str_setf(err, "%s:%d: %s", file, lineno, str_cstr(&why));
		goto out;
	}
	if (targets.n == 0) {
		str_setf(err, "%s:%d: no target for alias \"%s\"", file, lineno,
		    str_cstr(&name));
		goto out;
	}
	rc = mapcmd_put(ctx, str_cstr(&name), value, file, lineno, err);
out:
	alias_list_free(&targets);
	str_release(&name);
	str_release(&why);
	return rc;
}

static int load(const char *path, mapcmd_build_t *b, str_t *err)
{
	return dict_text_lines(path, entry, b, err);
}

int main(int argc, char **argv)
{
	static const mapcmd_spec_t spec = {
		.name = "postalias",
		.load = load,
		.dump_sep = ": ",
	};

	return mapcmd_main(argc, argv, &spec);
}
