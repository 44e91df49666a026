#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "file.h"
#include "log.h"
#include "mem.h"
#include "params.h"
#include "postconf_edit.h"

#define MAIN_CF_LIMIT (4 << 20)

/* Blank lines and comments neither start nor end an entry. */
static bool skip_line(const char *line)
{
	line += strspn(line, " \t\r");
	return *line == 0 || *line == '#';
}

static bool continues(const char *line)
{
	return (*line == ' ' || *line == '\t') && !skip_line(line);
}

/* The table name for name (the bare X of default_X is default_X). */
static const char *canon(const char *name)
{
	const param_def_t *d = param_lookup(name);
	return d ? d->name : name;
}

/* Does the entry starting with line set the parameter cname? */
static bool entry_is(const char *line, const char *cname)
{
	const char *eq = strchr(line, '=');
	if (eq == NULL)
		return false;
	char *name = xstrndup(line, (size_t)(eq - line));
	bool same = strcmp(canon(str_trim(name)), cname) == 0;
	free(name);
	return same;
}

int postconf_edit_text(str_t *text, const char *name, const char *value)
{
	const char *cname = canon(name);
	str_t out = STR_INIT;
	const char *p = str_cstr(text);
	int found = 0;
	bool dropping = false;	/* inside an entry being replaced or removed */

	while (*p) {
		size_t l = strcspn(p, "\n");
		char *line = xstrndup(p, l);
		bool nl = p[l] == '\n';
		p += l + nl;
		if (skip_line(line)) {
			/* kept, also inside a dropped entry */
		} else if (continues(line)) {
			if (dropping) {
				free(line);
				continue;
			}
		} else {
			dropping = entry_is(line, cname);
			if (dropping) {
				if (found++ == 0 && value) {
					str_catf(&out, "%s =%s%s\n", name, *value ? " " : "", value);
				}
				free(line);
				continue;
			}
		}
		str_cat(&out, line);
		str_putc(&out, '\n');	/* a missing final newline is added */
		free(line);
	}
	if (found == 0 && value)
		str_catf(&out, "%s =%s%s\n", name, *value ? " " : "", value);
	str_release(text);
	*text = out;
	return found;
}

static int read_main_cf(const char *path, str_t *text)
{
	if (file_read_all_follow(path, text, MAIN_CF_LIMIT) < 0) {
		if (errno == ENOENT) {
			str_reset(text);
			return 0;
		}
		log_error("cannot read %s: %s", path,
		    errno == EFBIG ? "file too large" : strerror(errno));
		return -1;
	}
	if (strlen(str_cstr(text)) != str_len(text)) {
		log_error("%s: contains a NUL byte; not editing it", path);
		return -1;
	}
	return 0;
}

static int write_main_cf(const char *path, const str_t *text)
{
	if (file_replace(path, str_cstr(text), str_len(text), 0644) < 0) {
		log_error("cannot update %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Splits and checks "name=value"; false (logged) if it is unusable. */
static bool check_item(const char *item, char **name, char **value)
{
	const char *eq = strchr(item, '=');
	if (eq == NULL) {
		log_error("%s: expected name=value", item);
		return false;
	}
	char *n = xstrndup(item, (size_t)(eq - item));
	char *v = xstrdup(eq + 1);
	*name = xstrdup(str_trim(n));
	*value = xstrdup(str_trim(v));
	free(n);
	free(v);
	if (!param_name_ok(*name)) {
		log_error("bad parameter name '%s' (letters, digits, '_', '-' and '.' only)", *name);
		return false;
	}
	if (strpbrk(*value, "\n\r")) {
		log_error("parameter %s: the value may not contain a line break", *name);
		return false;
	}
	const param_def_t *d = param_lookup(*name);
	if (d == NULL)
		d = param_split_transport(*name, NULL);
	if (d == NULL) {
		log_warning("unknown parameter %s (written all the same)", *name);
		return true;
	}
	/* A value with $name is checked when the configuration is loaded. */
	str_t why = STR_INIT;
	bool ok = strchr(*value, '$') || (d->flags & PARAM_F_RAW) ||
	    param_check_value(d, *name, *value, &why);
	if (!ok)
		log_error("%s", str_cstr(&why));
	str_release(&why);
	return ok;
}

/* The file to edit: a symbolic link is edited where it points, not
 * replaced by a file.  Malloc'ed. */
static char *edit_target(const char *path)
{
	char *real = realpath(path, NULL);
	return real ? real : xstrdup(path);
}

int postconf_edit(const char *path_arg, char **items, int n)
{
	char *path = edit_target(path_arg);
	str_t text = STR_INIT;
	int rc = read_main_cf(path, &text);
	char **names = xcalloc((size_t)n + 1, sizeof(char *));
	char **values = xcalloc((size_t)n + 1, sizeof(char *));
	for (int i = 0; i < n; i++)
		if (!check_item(items[i], &names[i], &values[i]))
			rc = -1;
	if (rc == 0) {
		for (int i = 0; i < n; i++)
			postconf_edit_text(&text, names[i], values[i]);
		rc = write_main_cf(path, &text);
	}
	for (int i = 0; i < n; i++) {
		free(names[i]);
		free(values[i]);
	}
	free(names);
	free(values);
	str_release(&text);
	free(path);
	return rc;
}

int postconf_remove(const char *path_arg, char **names, int n)
{
	char *path = edit_target(path_arg);
	str_t text = STR_INIT;
	if (read_main_cf(path, &text) < 0) {
		str_release(&text);
		free(path);
		return -1;
	}
	int rc = 0;
	for (int i = 0; i < n; i++) {
		if (!param_name_ok(names[i])) {
			log_error("bad parameter name '%s'", names[i]);
			rc = -1;
		}
	}
	if (rc == 0) {
		for (int i = 0; i < n; i++)
			postconf_edit_text(&text, names[i], NULL);
		rc = write_main_cf(path, &text);
	}
	str_release(&text);
	free(path);
	return rc;
}
