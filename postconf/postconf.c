/* postconf: show and edit Petrel's configuration.
 *
 *   postconf [-c dir] [-d | -n] [-h] [-x] [name ...]
 *   postconf [-c dir] -e name=value ...     (also: postconf name=value ...)
 *   postconf [-c dir] -X name ...
 *   postconf [-c dir] -M [service[/type] ...]
 *   postconf -T
 *
 * See man/postconf.1.  Exit status 1 on any error (unknown name, bad
 * configuration, failed edit), 0 otherwise. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"
#include "log.h"
#include "mastercf.h"
#include "mem.h"
#include "params.h"
#include "pconfig.h"
#include "postconf_edit.h"
#include "str.h"

static void usage(void)
{
	fprintf(stderr,
	    "usage: postconf [-c dir] [-d | -n] [-h] [-x] [name ...]\n"
	    "       postconf [-c dir] -e name=value ...\n"
	    "       postconf [-c dir] -X name ...\n"
	    "       postconf [-c dir] -M [service[/type] ...]\n"
	    "       postconf -T\n");
	exit(1);
}

enum { SHOW_EFFECTIVE, SHOW_DEFAULTS, SHOW_SET };

/* Prints one item as "name = value" (or the value only). */
static void print_item(const pconfig_item_t *it, int show, bool value_only,
    bool expand)
{
	const char *v = show == SHOW_DEFAULTS ? it->defval : it->value;
	str_t x = STR_INIT;
	if (expand && !(it->def && (it->def->flags & PARAM_F_RAW))) {
		pconfig_expand(v, &x);
		v = str_cstr(&x);
	}
	if (value_only)
		printf("%s\n", v);
	else if (*v)
		printf("%s = %s\n", it->name, v);
	else
		printf("%s =\n", it->name);
	str_release(&x);
}

static int show_params(int show, bool value_only, bool expand, char **names, int n)
{
	int rc = 0;
	if (n == 0) {
		size_t count;
		pconfig_item_t *items = pconfig_list(&count);
		for (size_t i = 0; i < count; i++) {
			if (show == SHOW_SET && items[i].origin != PCONFIG_FILE)
				continue;
			/* names nobody defined (per-transport names only
			 * exist once set) have no default to show */
			if (show == SHOW_DEFAULTS && items[i].def == NULL)
				continue;
			print_item(&items[i], show, value_only, expand);
		}
		free(items);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		pconfig_item_t it;
		if (!pconfig_item(names[i], &it)) {
			log_error("unknown parameter: %s", names[i]);
			rc = 1;
			continue;
		}
		if (show == SHOW_SET && it.origin != PCONFIG_FILE)
			continue;
		print_item(&it, show, value_only, expand);
	}
	return rc;
}

/* -M: master.cf entries, all or the ones named service or service/type. */
static int show_master(const char *dir, char **names, int n)
{
	str_t path = STR_INIT, errs = STR_INIT, line = STR_INIT;
	int rc = 0;
	str_setf(&path, "%s/master.cf", dir);
	mastercf_t *m = mastercf_load(str_cstr(&path), &errs);
	for (const char *p = str_cstr(&errs); *p;) {
		size_t l = strcspn(p, "\n");
		log_error("%.*s", (int)l, p);
		p += l + (p[l] == '\n');
		rc = 1;
	}
	if (m == NULL)
		goto out;
	for (size_t i = 0; i < m->count; i++) {
		const mastercf_entry_t *e = m->entries[i];
		bool want = n == 0;
		for (int j = 0; j < n && !want; j++) {
			const char *slash = strrchr(names[j], '/');
			size_t sl = slash ? (size_t)(slash - names[j]) : strlen(names[j]);
			want = strlen(e->service) == sl && strncmp(e->service, names[j], sl) == 0 &&
			    (slash == NULL || strcmp(slash + 1, mastercf_type_name(e->type)) == 0);
		}
		if (!want)
			continue;
		str_reset(&line);
		mastercf_format(e, &line);
		printf("%s\n", str_cstr(&line));
	}
	for (int j = 0; j < n; j++) {
		const char *slash = strrchr(names[j], '/');
		char *svc = slash ? xstrndup(names[j], (size_t)(slash - names[j])) : xstrdup(names[j]);
		if (slash && !mastercf_type_parse(slash + 1, &(mastercf_type_t){ 0 })) {
			log_error("bad service type in %s (inet, unix, unix-dgram, fifo or pass)", names[j]);
			rc = 1;
		} else if (mastercf_find(m, svc, slash ? slash + 1 : NULL) == NULL) {
			log_error("%s: no service %s", str_cstr(&path), names[j]);
			rc = 1;
		}
		free(svc);
	}
	mastercf_free(m);
out:
	str_release(&path);
	str_release(&errs);
	str_release(&line);
	return rc;
}

/* -T: the parameter table, one tab-separated line per parameter:
 * name, type, default, constraints, description (for tools/gen-petrel5). */
static int show_table(void)
{
	size_t n;
	const param_def_t *t = param_table(&n);
	const param_def_t **sorted = xreallocarray(NULL, n, sizeof(*sorted));
	for (size_t i = 0; i < n; i++)
		sorted[i] = &t[i];
	/* insertion sort: the table is small and this runs once */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(sorted[j - 1]->name, sorted[j]->name) > 0; j--) {
			const param_def_t *tmp = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = tmp;
		}
	for (size_t i = 0; i < n; i++) {
		const param_def_t *d = sorted[i];
		str_t info = STR_INIT;
		if (d->type == PARAM_INT || d->type == PARAM_SIZE || d->type == PARAM_TIME) {
			const char *u = d->type == PARAM_TIME ? " seconds" : d->type == PARAM_SIZE ? " bytes" : "";
			if (d->max == LONG_MAX)
				str_catf(&info, "at least %ld%s", d->min, u);
			else
				str_catf(&info, "%ld to %ld%s", d->min, d->max, u);
			if (d->type == PARAM_TIME)
				str_catf(&info, "; a bare number is in %s", d->unit == 's' ? "seconds" :
				    d->unit == 'm' ? "minutes" : d->unit == 'h' ? "hours" :
				    d->unit == 'd' ? "days" : "weeks");
		}
		if (d->choices)
			str_catf(&info, "%sone of: %s", str_len(&info) ? "; " : "", d->choices);
		if (d->flags & PARAM_F_TRANSPORT)
			str_catf(&info, "%sper transport: TRANSPORT_%s", str_len(&info) ? "; " : "",
			    param_transport_suffix(d));
		if (d->flags & PARAM_F_RAW)
			str_catf(&info, "%snot expanded by the configuration", str_len(&info) ? "; " : "");
		/* a default that is not a constant is described in parentheses */
		str_t dflt = STR_INIT;
		if (d->defdesc)
			str_setf(&dflt, "(%s)", d->defdesc);
		else
			str_set(&dflt, d->defval);
		printf("%s\t%s\t%s\t%s\t%s\n", d->name, param_type_name(d->type),
		    str_cstr(&dflt), str_cstr(&info), d->desc);
		str_release(&dflt);
		str_release(&info);
	}
	free(sorted);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int show = SHOW_EFFECTIVE, c;
	bool value_only = false, expand = false, edit = false, remove = false;
	bool master = false, table = false;

	log_init("postconf");
	while ((c = getopt(argc, argv, "c:dehnxXMT")) != -1) {
		switch (c) {
		case 'c':
			dir = optarg;
			break;
		case 'd':
			show = SHOW_DEFAULTS;
			break;
		case 'n':
			show = SHOW_SET;
			break;
		case 'h':
			value_only = true;
			break;
		case 'x':
			expand = true;
			break;
		case 'e':
			edit = true;
			break;
		case 'X':
			remove = true;
			break;
		case 'M':
			master = true;
			break;
		case 'T':
			table = true;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (dir == NULL)
		dir = getenv("MAIL_CONFIG");
	if (dir == NULL || *dir == 0)
		dir = DEF_CONFIG_DIR;
	/* "postconf name=value" means -e, as in Postfix */
	if (!edit && !remove && !master && !table && argc > 0 && strchr(argv[0], '='))
		edit = true;
	if (edit + remove + master + table > 1 || ((edit || remove) && argc == 0))
		usage();
	if (table)
		return argc ? (usage(), 1) : show_table();
	if (master)
		return show_master(dir, argv, argc);
	if (edit || remove) {
		str_t path = STR_INIT;
		str_setf(&path, "%s/main.cf", dir);
		int rc = edit ? postconf_edit(str_cstr(&path), argv, argc)
		    : postconf_remove(str_cstr(&path), argv, argc);
		str_release(&path);
		return rc < 0 ? 1 : 0;
	}
	int rc = 0;
	if (show != SHOW_DEFAULTS && pconfig_load(dir) < 0) {
		/* Show what could be read anyway: that helps to fix it. */
		const char *p = pconfig_errors();
		while (*p) {
			size_t l = strcspn(p, "\n");
			log_error("%.*s", (int)l, p);
			p += l + (p[l] == '\n');
		}
		rc = 1;
	}
	if (show_params(show, value_only, expand, argv, argc))
		rc = 1;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		log_error("write error on standard output: %s", strerror(errno));
		rc = 1;
	}
	return rc;
}
