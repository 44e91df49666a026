/* master.cf parsing (see mastercf.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "file.h"
#include "lines.h"
#include "log.h"
#include "mastercf.h"
#include "mem.h"
#include "params.h"
#include "pconfig.h"

#define MASTER_CF_LIMIT (4 << 20)

static const char *const type_names[] = {
	[MCF_INET] = "inet", [MCF_UNIX] = "unix", [MCF_UNIX_DGRAM] = "unix-dgram",
	[MCF_FIFO] = "fifo", [MCF_PASS] = "pass",
};

const char *mastercf_type_name(mastercf_type_t type)
{
	return type_names[type];
}

bool mastercf_type_parse(const char *name, mastercf_type_t *type)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (strcmp(name, type_names[i]) == 0) {
			*type = (mastercf_type_t)i;
			return true;
		}
	return false;
}

static void free_entry(mastercf_entry_t *e)
{
	if (e == NULL)
		return;
	free(e->service);
	free(e->host);
	free(e->port);
	for (int i = 0; i < 7; i++)
		free(e->column[i]);
	for (int i = 0; i < e->argc; i++)
		free(e->argv[i]);
	free(e->argv);
	for (int i = 0; i < e->noverride; i++) {
		free(e->override_name[i]);
		free(e->override_value[i]);
	}
	free(e->override_name);
	free(e->override_value);
	free(e->file);
	free(e);
}

void mastercf_entry_free(mastercf_entry_t *e)
{
	free_entry(e);
}

void mastercf_free(mastercf_t *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->count; i++)
		free_entry(m->entries[i]);
	free(m->entries);
	free(m);
}

/* Splits a logical line into fields: white space separates them, and
 * "{ text }" is one field (text trimmed, may hold blanks and nested
 * braces).  Returns -1 on an unmatched '{'. */
static int split_fields(const char *line, char ***out, int *count)
{
	char **v = NULL;
	int n = 0;
	const char *p = line;
	for (;;) {
		p += strspn(p, " \t");
		if (*p == 0)
			break;
		char *f;
		if (*p == '{') {
			int depth = 0;
			const char *q = p;
			for (; *q; q++) {
				if (*q == '{')
					depth++;
				else if (*q == '}' && --depth == 0)
					break;
			}
			if (*q == 0) {
				for (int i = 0; i < n; i++)
					free(v[i]);
				free(v);
				return -1;
			}
			char *inner = xstrndup(p + 1, (size_t)(q - p - 1));
			f = xstrdup(str_trim(inner));
			free(inner);
			p = q + 1;
		} else {
			size_t len = strcspn(p, " \t");
			f = xstrndup(p, len);
			p += len;
		}
		v = xreallocarray(v, (size_t)n + 1, sizeof(*v));
		v[n++] = f;
	}
	*out = v;
	*count = n;
	return 0;
}

static bool parse_yn(const char *s, bool dflt, bool *out)
{
	if (strcmp(s, "-") == 0)
		*out = dflt;
	else if (strcmp(s, "y") == 0)
		*out = true;
	else if (strcmp(s, "n") == 0)
		*out = false;
	else
		return false;
	return true;
}

/* A count: '-' gives dflt; else digits within an int. */
static bool parse_count(const char *s, int dflt, int *out)
{
	unsigned long v;
	if (strcmp(s, "-") == 0) {
		*out = dflt;
		return true;
	}
	if (!str_to_ulong(s, &v) || v > 1000000000UL)
		return false;
	*out = (int)v;
	return true;
}

static bool port_ok(const char *port)
{
	unsigned long v;
	if (*port == 0)
		return false;
	if (isdigit((unsigned char)*port))
		return str_to_ulong(port, &v) && v >= 1 && v <= 65535;
	for (const char *p = port; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_')
			return false;
	return true;
}

/* Splits an inet service [host:]port; false with why on a bad one. */
static bool split_inet(mastercf_entry_t *e, const char **why)
{
	const char *s = e->service, *colon;
	if (*s == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':') {
			*why = "expected [host]:port";
			return false;
		}
		e->host = xstrndup(s + 1, (size_t)(close - s - 1));
		colon = close + 1;
	} else if ((colon = strrchr(s, ':')) != NULL) {
		e->host = xstrndup(s, (size_t)(colon - s));
		if (*e->host == 0 || strchr(e->host, ':')) {
			*why = "expected [host:]port (an IPv6 host goes in brackets)";
			return false;
		}
	} else {
		e->host = xstrdup("");
		colon = s - 1;
	}
	e->port = xstrdup(colon + 1);
	if (!port_ok(e->port)) {
		*why = "bad port (a number from 1 to 65535 or a service name)";
		return false;
	}
	return true;
}

static bool local_name_ok(const char *s)
{
	if (*s == 0 || *s == '.')
		return false;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-' && *p != '.')
			return false;
	return true;
}

/* Parses one logical line; NULL (with a message) on error. */
static mastercf_entry_t *parse_entry(const char *line, const char *file, int lineno,
    str_t *errors)
{
	static const char *const colname[] = { "service", "type", "private",
		"unpriv", "chroot", "wakeup", "maxproc" };
	char **f = NULL;
	int nf = 0;
	const char *why = NULL;
	const char *bad = NULL;
	mastercf_entry_t *e = NULL;

	if (split_fields(line, &f, &nf) < 0) {
		str_catf(errors, "%s:%d: unmatched '{'\n", file, lineno);
		return NULL;
	}
	if (nf < 8) {
		str_catf(errors, "%s:%d: expected at least 8 fields (service type private "
		    "unpriv chroot wakeup maxproc command), found %d\n", file, lineno, nf);
		goto out;
	}
	e = xcalloc(1, sizeof(*e));
	e->file = xstrdup(file);
	e->line = lineno;
	e->service = xstrdup(f[0]);
	for (int i = 0; i < 7; i++)
		e->column[i] = xstrdup(f[i]);
	if (!mastercf_type_parse(f[1], &e->type)) {
		str_catf(errors, "%s:%d: bad service type '%s' (inet, unix, unix-dgram, "
		    "fifo or pass)\n", file, lineno, f[1]);
		goto fail;
	}
	if (e->type == MCF_INET) {
		if (!split_inet(e, &why)) {
			str_catf(errors, "%s:%d: bad inet service '%s': %s\n", file, lineno,
			    f[0], why);
			goto fail;
		}
	} else if (!local_name_ok(f[0])) {
		str_catf(errors, "%s:%d: bad service name '%s' (letters, digits, '_', "
		    "'-' and '.', not starting with '.')\n", file, lineno, f[0]);
		goto fail;
	}
	if (!parse_yn(f[2], e->type != MCF_INET, &e->private_svc))
		bad = colname[2];
	else if (!parse_yn(f[3], true, &e->unpriv))
		bad = colname[3];
	else if (!parse_yn(f[4], false, &e->chroot))
		bad = colname[4];
	if (bad) {
		int i = bad == colname[2] ? 2 : bad == colname[3] ? 3 : 4;
		str_catf(errors, "%s:%d: bad %s field '%s' (y, n or -)\n", file, lineno,
		    bad, f[i]);
		goto fail;
	}
	if (e->type == MCF_INET && e->private_svc) {
		str_catf(errors, "%s:%d: an inet service cannot be private (use n or -)\n",
		    file, lineno);
		goto fail;
	}
	{
		char *w = xstrdup(f[5]);
		size_t wl = strlen(w);
		if (wl > 1 && w[wl - 1] == '?') {
			e->wakeup_if_used = true;
			w[wl - 1] = 0;
		}
		bool ok = parse_count(w, 0, &e->wakeup);
		free(w);
		if (!ok) {
			str_catf(errors, "%s:%d: bad wakeup field '%s' (seconds, optionally "
			    "followed by '?', or -)\n", file, lineno, f[5]);
			goto fail;
		}
	}
	if (!parse_count(f[6], -1, &e->maxproc)) {
		str_catf(errors, "%s:%d: bad maxproc field '%s' (a number or -)\n", file,
		    lineno, f[6]);
		goto fail;
	}
	/* The command and its arguments, with the -o settings collected. */
	e->argv = xreallocarray(NULL, (size_t)(nf - 7) + 1, sizeof(char *));
	for (int i = 7; i < nf; i++) {
		e->argv[e->argc++] = xstrdup(f[i]);
		if (i == 7 || strcmp(f[i], "-o") != 0)
			continue;
		if (i + 1 >= nf) {
			str_catf(errors, "%s:%d: -o without name=value\n", file, lineno);
			goto fail;
		}
		const char *a = f[++i];
		const char *eq = strchr(a, '=');
		char *name = eq ? xstrndup(a, (size_t)(eq - a)) : NULL;
		char *nm = name ? str_trim(name) : NULL;
		if (nm == NULL || !param_name_ok(nm)) {
			if (eq == NULL)
				str_catf(errors, "%s:%d: -o %s: missing '='\n", file, lineno, a);
			else
				str_catf(errors, "%s:%d: -o %s: bad parameter name '%s'\n",
				    file, lineno, a, nm);
			free(name);
			goto fail;
		}
		char *val = xstrdup(eq + 1);
		char *v = str_trim(val);
		e->override_name = xreallocarray(e->override_name,
		    (size_t)e->noverride + 1, sizeof(char *));
		e->override_value = xreallocarray(e->override_value,
		    (size_t)e->noverride + 1, sizeof(char *));
		e->override_name[e->noverride] = xstrdup(nm);
		e->override_value[e->noverride++] = xstrdup(v);
		str_t norm = STR_INIT;
		str_setf(&norm, "%s=%s", nm, v);
		e->argv[e->argc++] = str_steal(&norm);
		free(name);
		free(val);
	}
	e->argv[e->argc] = NULL;
	goto out;
fail:
	free_entry(e);
	e = NULL;
out:
	for (int i = 0; i < nf; i++)
		free(f[i]);
	free(f);
	return e;
}

struct mcf_walk {
	mastercf_t *m;
	const char *filename;
	str_t *errors;
};

/* Collects one entry; a bad or duplicate one is reported and left out. */
static int mcf_line(char *line, int lineno, void *ctx)
{
	struct mcf_walk *w = ctx;
	mastercf_t *m = w->m;
	mastercf_entry_t *e = parse_entry(line, w->filename, lineno, w->errors);

	if (e == NULL)
		return 0;
	const mastercf_entry_t *dup = mastercf_find(m, e->service,
	    mastercf_type_name(e->type));
	if (dup) {
		str_catf(w->errors, "%s:%d: duplicate service %s/%s (first at line %d)\n",
		    w->filename, lineno, e->service, mastercf_type_name(e->type),
		    dup->line);
		free_entry(e);
		return 0;
	}
	m->entries = xreallocarray(m->entries, m->count + 1, sizeof(*m->entries));
	m->entries[m->count++] = e;
	return 0;
}

/* Only LINES_ORPHAN can come: no length limit, and text is a C string. */
static int mcf_error(enum lines_error what, int lineno, void *ctx)
{
	struct mcf_walk *w = ctx;

	if (what != LINES_ORPHAN)
		log_panic("master.cf: unexpected line error %d", (int)what);
	str_catf(w->errors, "%s:%d: continuation line (starts with white "
	    "space) without an entry before it\n", w->filename, lineno);
	return 0;
}

mastercf_t *mastercf_parse(const char *text, const char *filename, str_t *errors)
{
	struct mcf_walk w = { xcalloc(1, sizeof(mastercf_t)), filename, errors };
	lines_opts_t o = { .line = mcf_line, .error = mcf_error, .ctx = &w };

	lines_walk(text, strlen(text), &o);
	return w.m;
}

mastercf_t *mastercf_load(const char *path, str_t *errors)
{
	str_t text = STR_INIT;
	if (file_read_all_follow(path, &text, MASTER_CF_LIMIT) < 0) {
		str_catf(errors, "%s: cannot read: %s\n", path,
		    errno == EFBIG ? "file too large" : strerror(errno));
		str_release(&text);
		return NULL;
	}
	if (strlen(str_cstr(&text)) != str_len(&text)) {
		str_catf(errors, "%s: contains a NUL byte\n", path);
		str_release(&text);
		return NULL;
	}
	mastercf_t *m = mastercf_parse(str_cstr(&text), path, errors);
	str_release(&text);
	return m;
}

const mastercf_entry_t *mastercf_find(const mastercf_t *m, const char *service,
    const char *type)
{
	for (size_t i = 0; i < m->count; i++) {
		const mastercf_entry_t *e = m->entries[i];
		if (strcmp(e->service, service) == 0 &&
		    (type == NULL || strcmp(mastercf_type_name(e->type), type) == 0))
			return e;
	}
	return NULL;
}

int mastercf_trigger_path(const char *config_dir, const char *service,
    str_t *out, str_t *errors)
{
	str_t path = STR_INIT, ignored = STR_INIT;
	mastercf_t *m;
	int found = 0;

	str_setf(&path, "%s/master.cf", config_dir);
	m = mastercf_load(str_cstr(&path), errors ? errors : &ignored);
	str_release(&path);
	str_release(&ignored);
	if (m == NULL)
		return -1;
	for (size_t i = 0; i < m->count && !found; i++) {
		const mastercf_entry_t *e = m->entries[i];
		if (strcmp(e->service, service) == 0 && (e->type == MCF_UNIX
		    || e->type == MCF_FIFO || e->type == MCF_UNIX_DGRAM)) {
			str_setf(out, "%s/%s", e->private_svc ? "private" :
			    "public", e->service);
			found = 1;
		}
	}
	mastercf_free(m);
	return found;
}

static void put_arg(str_t *out, const char *a)
{
	if (*a == 0 || strpbrk(a, " \t") || *a == '{')
		str_catf(out, " { %s }", a);
	else
		str_catf(out, " %s", a);
}

void mastercf_format(const mastercf_entry_t *e, str_t *out)
{
	static const int width[] = { 10, 6, 8, 8, 8, 8, 8 };
	for (int i = 0; i < 7; i++) {
		str_cat(out, e->column[i]);
		/* at least one blank between columns */
		int pad = width[i] - (int)strlen(e->column[i]);
		str_catf(out, "%*s", pad > 1 ? pad : 1, "");
	}
	str_cat(out, e->argv[0]);
	for (int i = 1; i < e->argc; i++)
		put_arg(out, e->argv[i]);
}

int mastercf_apply_overrides(const mastercf_entry_t *e, str_t *err)
{
	str_t origin = STR_INIT;
	str_setf(&origin, "%s:%d", e->file, e->line);
	int rc = 0;
	for (int i = 0; i < e->noverride && rc == 0; i++)
		rc = pconfig_override(e->override_name[i], e->override_value[i],
		    str_cstr(&origin), err);
	str_release(&origin);
	return rc;
}

int mastercf_maxproc(const mastercf_entry_t *e)
{
	if (e->maxproc >= 0)
		return e->maxproc;
	return (int)pconfig_get_int("default_process_limit");
}
