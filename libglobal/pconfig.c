/* The process-wide configuration (see pconfig.h).
 *
 * State: the settings (main.cf lines and overrides, by canonical name),
 * a cache of expanded values (dropped whenever a setting changes), and
 * the messages of the last load.  Expansion keeps one stack of the names
 * being expanded for the whole process, so that a loop is caught even
 * when it runs through a computed default (mydomain reads myhostname). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "file.h"
#include "htable.h"
#include "lines.h"
#include "log.h"
#include "mastercf.h"
#include "mem.h"
#include "pconfig.h"
#include "postfix_compat.h"

#define MAIN_CF_LIMIT (4 << 20)	/* a main.cf larger than this is a mistake */
#define EXPAND_DEPTH 64		/* parameters within parameters */
#define NEST_DEPTH 32		/* ${name?...} within ${name?...} */
#define EXPAND_MAX (1 << 20)	/* longest value after expansion */

struct setting {
	char *name;		/* canonical (table) name */
	char *written;		/* as written, for messages */
	char *value;
	char *file;		/* main.cf path, or override origin */
	int line;
	enum pconfig_origin origin;
	unsigned seq;		/* order of appearance */
};

static htable_t *settings;	/* canonical name -> struct setting */
static htable_t *cache;		/* canonical name -> expanded value */
static htable_t *pool;		/* interned strings (see intern) */
static htable_t *services;	/* master.cf service names, NULL if unknown */
static str_t errors = STR_INIT, warnings = STR_INIT;
static char *loaded_file;
static unsigned seq_counter;

/* Expansion state. */
static const char *xstack[EXPAND_DEPTH];
static int xdepth;

/* Validation context: set while checking a load or an override, so that
 * expansion reports loops and unknown names instead of staying quiet. */
struct xctx {
	htable_t *referenced;	/* names some value refers to */
	htable_t *reported;	/* loop members and (owner, name) pairs already reported */
	str_t *errs, *warns;
};
static struct xctx *xc;

static int expand_text(const char *text, str_t *out);

static void init(void)
{
	if (settings)
		return;
	settings = htable_new(128, 0);
	cache = htable_new(256, 0);
	pool = htable_new(64, 0);
}

/* A copy of s that lives as long as the process; equal strings share
 * one copy, so repeated computations do not grow memory. */
static const char *intern(const char *s)
{
	htable_entry_t *e = htable_find(pool, s);
	if (e == NULL)
		e = htable_add(pool, s, NULL);
	return e->key;
}

static void free_setting(void *p)
{
	struct setting *s = p;
	free(s->name);
	free(s->written);
	free(s->value);
	free(s->file);
	free(s);
}

static void clear_cache(void)
{
	htable_free(cache, free);
	cache = htable_new(256, 0);
}

void pconfig_reset(void)
{
	init();
	htable_free(settings, free_setting);
	settings = htable_new(128, 0);
	clear_cache();
	if (services)
		htable_free(services, NULL);
	services = NULL;
	str_reset(&errors);
	str_reset(&warnings);
	free(loaded_file);
	loaded_file = NULL;
	xdepth = 0;
}

const char *pconfig_errors(void)
{
	return str_cstr(&errors);
}

const char *pconfig_warnings(void)
{
	return str_cstr(&warnings);
}

const char *pconfig_file(void)
{
	return loaded_file;
}

/* The name under which a setting is stored: the table name, also for the
 * bare X of a default_X entry. */
static const char *canon(const char *name)
{
	if (param_find(name))
		return name;
	const param_def_t *d = param_transport_default(name);
	return d ? d->name : name;
}

/* Type information for name: a table entry, or the default entry of a
 * TRANSPORT_X name.  NULL for anything else. */
static const param_def_t *def_of(const char *cname)
{
	const param_def_t *d = param_find(cname);
	return d ? d : param_split_transport(cname, NULL);
}

static struct setting *setting_of(const char *cname)
{
	init();
	return htable_get(settings, cname);
}

/* "file:line", "origin" or "" for messages. */
static void where(str_t *out, const struct setting *s)
{
	if (s == NULL || s->file == NULL)
		return;
	if (s->line > 0)
		str_catf(out, "%s:%d: ", s->file, s->line);
	else
		str_catf(out, "%s: ", s->file);
}

static void set_value(const char *written, const char *value, const char *file,
    int line, enum pconfig_origin origin)
{
	const char *cname = canon(written);
	struct setting *s = xcalloc(1, sizeof(*s));
	s->name = xstrdup(cname);
	s->written = xstrdup(written);
	s->value = xstrdup(value);
	s->file = file ? xstrdup(file) : NULL;
	s->line = line;
	s->origin = origin;
	s->seq = ++seq_counter;
	struct setting *old = htable_put(settings, cname, s);
	if (old)
		free_setting(old);
	clear_cache();
}

/* Appends to the warnings of the current check, once per key. */
static void xc_warn_once(const char *key, const struct setting *s, const char *fmt,
    const char *a, const char *b)
{
	if (xc == NULL || htable_find(xc->reported, key))
		return;
	htable_add(xc->reported, key, NULL);
	where(xc->warns, s);
	str_catf(xc->warns, fmt, a, b);
	str_putc(xc->warns, '\n');
}

/* Expands parameter cname into out.  -1 on a loop. */
static int expand_name(const char *name, str_t *out)
{
	const char *cname = canon(name);
	const char *c = htable_get(cache, cname);
	if (c) {
		str_cat(out, c);
		return 0;
	}
	struct setting *s = setting_of(cname);
	const param_def_t *d = def_of(cname);
	if (s == NULL && d == NULL) {
		/* Unknown: nothing.  Tell the owner of the text, unless the
		 * owner is itself a Postfix parameter Petrel ignores (its
		 * value is never used; it gets its own warning). */
		const char *owner = xdepth > 0 ? xstack[xdepth - 1] : "";
		if (xc && (def_of(owner) != NULL || !postfix_param_known(owner))) {
			str_t key = STR_INIT;
			str_setf(&key, "undef %s %s", owner, cname);
			if (postfix_param_known(cname))
				xc_warn_once(str_cstr(&key), setting_of(owner),
				    "$%s in the value of %s: a Postfix parameter "
				    "that Petrel does not implement (expands to "
				    "nothing)", cname, owner);
			else
				xc_warn_once(str_cstr(&key), setting_of(owner),
				    "undefined parameter $%s in the value of %s "
				    "(expands to nothing)", cname, owner);
			str_release(&key);
		}
		return 0;
	}
	int loop_at = -1;
	bool too_deep = false;
	for (int i = 0; i < xdepth && loop_at < 0; i++)
		if (strcmp(xstack[i], cname) == 0)
			loop_at = i;
	if (loop_at < 0 && xdepth >= EXPAND_DEPTH) {
		loop_at = 0;
		too_deep = true;
	}
	if (loop_at >= 0) {
		/* xstack[loop_at..] and back to cname */
		if (xc) {
			bool seen = false;
			for (int j = loop_at; j < xdepth; j++)
				if (htable_find(xc->reported, xstack[j]))
					seen = true;
			if (!seen) {
				where(xc->errs, setting_of(xstack[loop_at]));
				str_cat(xc->errs, too_deep ? "parameters refer to parameters "
				    "more than 64 deep: " : "parameter expansion loop: ");
				for (int j = loop_at; j < xdepth; j++) {
					str_catf(xc->errs, "$%s -> ", xstack[j]);
					htable_put(xc->reported, xstack[j], NULL);
				}
				str_catf(xc->errs, "$%s\n", cname);
			}
		}
		return -1;
	}
	/* Push before resolving: a computed default may read parameters. */
	xstack[xdepth++] = s ? s->name : intern(cname);
	int rc = 0;
	str_t tmp = STR_INIT;
	if (s == NULL && param_find(cname) == NULL) {
		/* TRANSPORT_X not set: default_X */
		rc = expand_name(d->name, &tmp);
	} else {
		/* A computed default lives in a buffer its function reuses:
		 * keep a stable copy while it is expanded. */
		const char *raw = s ? s->value : param_default(d);
		if (s == NULL && raw && (d->flags & PARAM_F_COMPUTED))
			raw = intern(raw);
		if (d && (d->flags & PARAM_F_RAW))
			str_cat(&tmp, raw);
		else
			rc = expand_text(raw ? raw : "", &tmp);
	}
	xdepth--;
	/* A computed default may already have cached this name through a
	 * nested lookup: replace it and free the old copy. */
	if (rc == 0)
		free(htable_put(cache, cname, xstrdup(str_cstr(&tmp))));
	str_append(out, str_cstr(&tmp), str_len(&tmp));
	str_release(&tmp);
	return rc;
}

/* Name characters after a bare '$', and inside ${...}. */
static bool bare_name_char(int c)
{
	return isalnum(c) || c == '_';
}

static bool brace_name_char(int c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '.';
}

static void mark_referenced(const char *name)
{
	if (xc)
		htable_put(xc->referenced, canon(name), NULL);
}

static void syntax_warning(const char *what, const char *text)
{
	if (xc == NULL)
		return;
	const char *owner = xdepth > 0 ? xstack[xdepth - 1] : "";
	str_t key = STR_INIT;
	str_setf(&key, "syntax %s %s", owner, text);
	xc_warn_once(str_cstr(&key), setting_of(owner), "%s in the value of %s", what, owner);
	str_release(&key);
}

/* Reports a value that cannot be expanded (too long, too deep) as an
 * error of the parameter being expanded. */
static void expand_error(const char *what)
{
	if (xc == NULL)
		return;
	const char *owner = xdepth > 0 ? xstack[xdepth - 1] : "";
	str_t key = STR_INIT;
	str_setf(&key, "error %s %s", owner, what);
	if (!htable_find(xc->reported, str_cstr(&key))) {
		htable_add(xc->reported, str_cstr(&key), NULL);
		where(xc->errs, setting_of(owner));
		str_catf(xc->errs, "parameter %s: %s\n", owner, what);
	}
	str_release(&key);
}

static int expand_text_nested(const char *t, str_t *out);

/* Conditional text being expanded within conditional text. */
static int cond_nest;

static int expand_text(const char *t, str_t *out)
{
	/* Bounds, so that a hostile or mistaken value can neither exhaust
	 * memory (each $name may multiply the length) nor the stack (the
	 * depth of parameters is bounded by EXPAND_DEPTH, of conditionals
	 * by NEST_DEPTH). */
	int rc = expand_text_nested(t, out);
	if (rc == 0 && str_len(out) > EXPAND_MAX) {
		expand_error("value too long after expansion (more than 1 MB)");
		rc = -1;
	}
	return rc;
}

static int expand_text_nested(const char *t, str_t *out)
{
	int rc = 0;
	const char *start = t;
	while (*t && str_len(out) <= EXPAND_MAX) {
		if (*t != '$') {
			size_t n = strcspn(t, "$");
			str_append(out, t, n);
			t += n;
			continue;
		}
		t++;
		if (*t == '$') {
			str_putc(out, '$');
			t++;
		} else if (*t == '{' || *t == '(') {
			char open = *t, close = open == '{' ? '}' : ')';
			int depth = 1;
			const char *p = t + 1;
			for (; *p && depth > 0; p++) {
				if (*p == open)
					depth++;
				else if (*p == close)
					depth--;
			}
			if (depth > 0) {
				syntax_warning(open == '{' ? "unmatched '${'" : "unmatched '$('", start);
				str_putc(out, '$');
				continue;	/* the rest is copied as text */
			}
			/* t+1 .. p-2 is the inside */
			const char *in = t + 1, *end = p - 1;
			const char *n = in;
			while (n < end && brace_name_char((unsigned char)*n))
				n++;
			char *name = xstrndup(in, (size_t)(n - in));
			if (n == in || (n < end && *n != '?' && *n != ':')) {
				syntax_warning("bad parameter name after '$'", start);
				str_putc(out, '$');
				str_append(out, t, (size_t)(p - t));
			} else if (n == end) {
				mark_referenced(name);
				if (expand_name(name, out) < 0)
					rc = -1;
			} else {
				str_t val = STR_INIT;
				mark_referenced(name);
				if (expand_name(name, &val) < 0)
					rc = -1;
				bool nonempty = str_len(&val) > 0;
				str_release(&val);
				if ((*n == '?') == nonempty && cond_nest >= NEST_DEPTH) {
					expand_error("${...} nested too deeply");
					rc = -1;
				} else if ((*n == '?') == nonempty) {
					char *sub = xstrndup(n + 1, (size_t)(end - n - 1));
					cond_nest++;
					if (expand_text(sub, out) < 0)
						rc = -1;
					cond_nest--;
					free(sub);
				}
			}
			free(name);
			t = p;
		} else if (bare_name_char((unsigned char)*t)) {
			const char *n = t;
			while (bare_name_char((unsigned char)*n))
				n++;
			char *name = xstrndup(t, (size_t)(n - t));
			mark_referenced(name);
			if (expand_name(name, out) < 0)
				rc = -1;
			free(name);
			t = n;
		} else {
			str_putc(out, '$');	/* a lone '$' stays */
		}
	}
	return rc;
}

int pconfig_expand(const char *text, str_t *out)
{
	init();
	return expand_text(text, out);
}

/* The expanded value of a known name, cached. */
static const char *get_expanded(const char *name)
{
	init();
	const char *cname = canon(name);
	const char *c = htable_get(cache, cname);
	if (c)
		return c;
	if (setting_of(cname) == NULL && def_of(cname) == NULL)
		log_panic("configuration: unknown parameter %s requested", name);
	str_t tmp = STR_INIT;
	/* (during a check the loop is reported as an error already) */
	if (expand_name(cname, &tmp) < 0 && xc == NULL)
		log_warning("parameter %s: expansion failed (a loop, or a value far "
		    "too long); using what could be expanded", name);
	c = htable_get(cache, cname);
	if (c == NULL) {
		char *v = str_steal(&tmp);
		htable_put(cache, cname, v);
		c = v;
	}
	str_release(&tmp);
	return c;
}

const char *pconfig_get_raw(const char *name)
{
	pconfig_item_t it;
	return pconfig_item(name, &it) ? it.value : NULL;
}

const char *pconfig_get_str(const char *name)
{
	return get_expanded(name);
}

/* The value of name parsed as type; a bad value cannot normally get
 * here (loads and overrides check), but if it does the program stops
 * with the reason rather than running on a guess. */
static long get_typed(const char *name, const param_def_t *d, enum param_type type)
{
	static const char *const getter[] = { "str", "int", "bool", "time", "size" };
	if (d == NULL)
		log_panic("config_get_%s: unknown parameter %s", getter[type], name);
	if (d->type != type)
		log_panic("config_get_%s: parameter %s is of type %s", getter[type],
		    name, param_type_name(d->type));
	const char *v = get_expanded(name);
	str_t why = STR_INIT;
	if (!param_check_value(d, name, v, &why))
		log_fatal("%s", str_cstr(&why));
	str_release(&why);
	long n = 0;
	bool b = false;
	switch (type) {
	case PARAM_INT:
		param_parse_int(v, &n);
		break;
	case PARAM_SIZE:
		param_parse_size(v, &n);
		break;
	case PARAM_TIME:
		param_parse_time(v, d->unit, &n);
		break;
	case PARAM_BOOL:
		param_parse_bool(v, &b);
		n = b;
		break;
	case PARAM_STR:
		break;
	}
	return n;
}

long pconfig_get_int(const char *name)
{
	return get_typed(name, def_of(canon(name)), PARAM_INT);
}

bool pconfig_get_bool(const char *name)
{
	return get_typed(name, def_of(canon(name)), PARAM_BOOL) != 0;
}

long pconfig_get_time(const char *name)
{
	return get_typed(name, def_of(canon(name)), PARAM_TIME);
}

long pconfig_get_size(const char *name)
{
	return get_typed(name, def_of(canon(name)), PARAM_SIZE);
}

/* TRANSPORT_X if it is set or is a table entry, else the fallback.  The
 * fallback is chosen from the suffix given, not guessed from the name. */
static const char *tr_name(const char *transport, const char *suffix,
    const param_def_t **def, str_t *buf)
{
	const param_def_t *fb = param_transport_default(suffix);
	if (fb == NULL)
		log_panic("configuration: %s is not a per-transport parameter", suffix);
	str_setf(buf, "%s_%s", transport, suffix);
	const param_def_t *own = param_find(str_cstr(buf));
	if (own) {
		*def = own;
		return str_cstr(buf);
	}
	*def = fb;
	return setting_of(str_cstr(buf)) ? str_cstr(buf) : fb->name;
}

const char *pconfig_get_str_tr(const char *transport, const char *name)
{
	str_t buf = STR_INIT;
	const param_def_t *d;
	const char *v = get_expanded(tr_name(transport, name, &d, &buf));
	str_release(&buf);
	return v;
}

static long get_typed_tr(const char *transport, const char *name, enum param_type type)
{
	str_t buf = STR_INIT;
	const param_def_t *d = NULL;
	const char *full = tr_name(transport, name, &d, &buf);
	long v = get_typed(full, d, type);
	str_release(&buf);
	return v;
}

long pconfig_get_int_tr(const char *transport, const char *name)
{
	return get_typed_tr(transport, name, PARAM_INT);
}

bool pconfig_get_bool_tr(const char *transport, const char *name)
{
	return get_typed_tr(transport, name, PARAM_BOOL) != 0;
}

long pconfig_get_time_tr(const char *transport, const char *name)
{
	return get_typed_tr(transport, name, PARAM_TIME);
}

long pconfig_get_size_tr(const char *transport, const char *name)
{
	return get_typed_tr(transport, name, PARAM_SIZE);
}

/* ---- checking ---- */

static void xc_begin(struct xctx *x, str_t *errs, str_t *warns)
{
	x->referenced = htable_new(64, 0);
	x->reported = htable_new(16, 0);
	x->errs = errs;
	x->warns = warns;
	xc = x;
}

static void xc_end(struct xctx *x)
{
	htable_free(x->referenced, NULL);
	htable_free(x->reported, NULL);
	xc = NULL;
}

/* Expands setting s and checks its value against its type. */
static void check_setting(const struct setting *s)
{
	str_t v = STR_INIT, why = STR_INIT;
	int rc = expand_name(s->name, &v);
	const param_def_t *d = def_of(s->name);
	if (rc == 0 && d && !(d->flags & PARAM_F_RAW) &&
	    !param_check_value(d, s->written, str_cstr(&v), &why)) {
		where(xc->errs, s);
		str_cat(xc->errs, str_cstr(&why));
		if (strcmp(str_cstr(&v), s->value) != 0)
			str_catf(xc->errs, " (expanded from '%s')", s->value);
		str_putc(xc->errs, '\n');
	}
	str_release(&v);
	str_release(&why);
}

/* Is name a TRANSPORT_X whose TRANSPORT is a known service?  (True when
 * master.cf is unknown: nothing to check against.) */
static bool service_known(const char *name)
{
	if (services == NULL)
		return true;
	for (const char *p = name; (p = strchr(p, '_')) != NULL; p++) {
		if (p == name || param_transport_default(p + 1) == NULL)
			continue;
		char *svc = xstrndup(name, (size_t)(p - name));
		bool ok = htable_find(services, svc) != NULL;
		free(svc);
		if (ok)
			return true;
	}
	return false;
}

static int cmp_seq(const void *a, const void *b)
{
	const struct setting *x = (*(htable_entry_t *const *)a)->value;
	const struct setting *y = (*(htable_entry_t *const *)b)->value;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Checks the whole configuration after a load. */
static void check_all(void)
{
	struct xctx x;
	size_t n, tn;
	xc_begin(&x, &errors, &warnings);
	clear_cache();
	htable_entry_t **list = htable_list(settings, &n);
	qsort(list, n, sizeof(*list), cmp_seq);
	for (size_t i = 0; i < n; i++)
		check_setting(list[i]->value);
	/* Defaults can take part in a loop through a setting. */
	const param_def_t *t = param_table(&tn);
	for (size_t i = 0; i < tn; i++) {
		str_t v = STR_INIT;
		expand_name(t[i].name, &v);
		str_release(&v);
	}
	/* Names nobody knows or uses are probably typing mistakes. */
	for (size_t i = 0; i < n; i++) {
		const struct setting *s = list[i]->value;
		if (s->origin != PCONFIG_FILE || param_find(s->name))
			continue;
		if (param_split_transport(s->name, NULL)) {
			if (!service_known(s->name)) {
				where(&warnings, s);
				str_catf(&warnings, "parameter %s: no master.cf service matches "
				    "the part before _%s\n", s->written,
				    param_transport_suffix(param_split_transport(s->name, NULL)));
			}
		} else if (postfix_param_known(s->name)) {
			where(&warnings, s);
			str_catf(&warnings, "Postfix parameter %s is not implemented "
			    "by Petrel (ignored)\n", s->written);
		} else if (!htable_find(x.referenced, s->name)) {
			where(&warnings, s);
			str_catf(&warnings, "unknown parameter %s (ignored)\n", s->written);
		}
	}
	free(list);
	xc_end(&x);
}

/* ---- main.cf ---- */

static void parse_logical(const char *line, const char *file, int lineno)
{
	const char *eq = strchr(line, '=');
	if (eq == NULL) {
		str_catf(&errors, "%s:%d: missing '=' after parameter name: %s\n",
		    file, lineno, line);
		return;
	}
	char *name_buf = xstrndup(line, (size_t)(eq - line));
	char *name = str_trim(name_buf);
	char *value = xstrdup(eq + 1);
	char *v = str_trim(value);
	if (*name == 0)
		str_catf(&errors, "%s:%d: missing parameter name before '='\n", file, lineno);
	else if (!param_name_ok(name))
		str_catf(&errors, "%s:%d: bad parameter name '%s' (letters, digits, "
		    "'_', '-' and '.' only)\n", file, lineno, name);
	else
		set_value(name, v, file, lineno, PCONFIG_FILE);
	free(name_buf);
	free(value);
}

static int main_cf_line(char *line, int lineno, void *ctx)
{
	parse_logical(line, ctx, lineno);
	return 0;
}

/* Only LINES_ORPHAN can come: there is no length limit and parse_text
 * refuses NUL bytes first.  Errors are collected, never fatal. */
static int main_cf_error(enum lines_error what, int lineno, void *ctx)
{
	if (what != LINES_ORPHAN)
		log_panic("main.cf: unexpected line error %d", (int)what);
	str_catf(&errors, "%s:%d: continuation line (starts with white space) "
	    "without a parameter before it\n", (const char *)ctx, lineno);
	return 0;
}

static void parse_text(const char *text, size_t len, const char *file)
{
	lines_opts_t o = { .line = main_cf_line, .error = main_cf_error,
		.ctx = (void *)file };

	if (strlen(text) != len) {
		str_catf(&errors, "%s: contains a NUL byte\n", file);
		return;
	}
	lines_walk(text, len, &o);
}

static bool defer_warnings;

void pconfig_defer_warnings(void)
{
	defer_warnings = true;
}

void pconfig_log_warnings(void)
{
	const char *p = str_cstr(&warnings);
	while (*p) {
		size_t n = strcspn(p, "\n");
		log_warning("%.*s", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

static void log_warnings(void)
{
	if (!defer_warnings)
		pconfig_log_warnings();
}

/* Debian's Postfix reads myorigin from a file when its value is a path
 * (its default main.cf and postinst write "myorigin = /etc/mailname"):
 * the first line of that file, trimmed.  Petrel does the same, so the
 * value everything uses is the domain; a file that cannot be read or
 * has no name in it is an error of the myorigin line. */
static void myorigin_from_file(void)
{
	struct setting *s = setting_of("myorigin");
	str_t text = STR_INIT, path = STR_INIT;
	char *line, *nl;

	if (s == NULL || s->origin != PCONFIG_FILE || s->value[0] != '/')
		return;
	str_set(&path, s->value);
	if (file_read_all_follow(str_cstr(&path), &text, 4096) < 0) {
		str_catf(&errors, "%s:%d: myorigin: cannot read %s: %s\n",
		    s->file, s->line, str_cstr(&path),
		    errno == EFBIG ? "file too large" : strerror(errno));
		goto out;
	}
	line = text.buf ? text.buf : (char *)"";
	if ((nl = strchr(line, '\n')) != NULL)
		*nl = 0;
	line = str_trim(line);
	if (*line == 0 || strchr(line, ' ') || strchr(line, '\t')) {
		str_catf(&errors, "%s:%d: myorigin: %s has no domain name on its "
		    "first line\n", s->file, s->line, str_cstr(&path));
		goto out;
	}
	{
		char *file = s->file ? xstrdup(s->file) : NULL;
		int lineno = s->line;
		set_value("myorigin", line, file, lineno, PCONFIG_FILE);
		free(file);
	}
out:
	str_release(&text);
	str_release(&path);
}

/* What the logging library takes from the configuration: the syslog
 * facility (syslog_facility was checked against its choices). */
static void apply_logging(void)
{
	(void)log_set_syslog_facility(pconfig_get_str("syslog_facility"));
}

/* What every load does once main.cf's text is parsed: the values
 * derived from others, the checks, the warnings, the logging set-up. */
static int load_finish(void)
{
	myorigin_from_file();
	check_all();
	log_warnings();
	if (str_len(&errors) == 0)
		apply_logging();
	return str_len(&errors) ? -1 : 0;
}

int pconfig_load_text(const char *text, const char *filename)
{
	pconfig_reset();
	loaded_file = xstrdup(filename);
	parse_text(text, strlen(text), filename);
	return load_finish();
}

int pconfig_load(const char *dir)
{
	str_t path = STR_INIT, text = STR_INIT, mcf_errs = STR_INIT;

	pconfig_reset();
	str_setf(&path, "%s/master.cf", dir);
	mastercf_t *m = mastercf_load(str_cstr(&path), &mcf_errs);
	if (m) {
		services = htable_new(32, 0);
		for (size_t i = 0; i < m->count; i++)
			htable_put(services, m->entries[i]->service, NULL);
		mastercf_free(m);
	}
	str_release(&mcf_errs);
	str_setf(&path, "%s/main.cf", dir);
	loaded_file = str_steal(&path);
	if (file_read_all_follow(loaded_file, &text, MAIN_CF_LIMIT) < 0) {
		str_catf(&errors, "%s: cannot read: %s\n", loaded_file,
		    errno == EFBIG ? "file too large" : strerror(errno));
		str_release(&text);
		return -1;
	}
	parse_text(str_cstr(&text), str_len(&text), loaded_file);
	str_release(&text);
	/* The directory we were told to use is the configuration directory,
	 * whatever main.cf says (it could not have been read otherwise). */
	set_value("config_directory", dir, NULL, 0, PCONFIG_RUNTIME);
	return load_finish();
}

int pconfig_override(const char *name, const char *value, const char *origin,
    str_t *err)
{
	init();
	if (!param_name_ok(name)) {
		str_setf(err, "%s%sbad parameter name '%s'", origin ? origin : "",
		    origin ? ": " : "", name);
		return -1;
	}
	const char *cname = canon(name);
	struct setting *old = htable_delete(settings, cname);
	set_value(name, value, origin, 0, PCONFIG_OVERRIDE);

	struct xctx x;
	str_t errs = STR_INIT, warns = STR_INIT;
	xc_begin(&x, &errs, &warns);
	check_setting(setting_of(cname));
	xc_end(&x);
	int rc = 0;
	if (str_len(&errs)) {
		str_set(err, str_cstr(&errs));
		str_truncate(err, str_len(err) - 1);	/* the newline */
		free_setting(htable_delete(settings, cname));
		if (old)
			htable_put(settings, cname, old);
		old = NULL;
		clear_cache();
		rc = -1;
	} else {
		if (str_len(&warns))
			log_warning("%.*s", (int)str_len(&warns) - 1, str_cstr(&warns));
		if (def_of(cname) == NULL)
			log_warning("%s%sunknown parameter %s", origin ? origin : "",
			    origin ? ": " : "", name);
		else if (strcmp(cname, "syslog_facility") == 0)
			apply_logging();
	}
	if (old)
		free_setting(old);
	str_release(&errs);
	str_release(&warns);
	return rc;
}

/* ---- listing ---- */

bool pconfig_item(const char *name, pconfig_item_t *item)
{
	init();
	const char *cname = canon(name);
	struct setting *s = setting_of(cname);
	const param_def_t *d = param_find(cname);
	memset(item, 0, sizeof(*item));
	if (d) {
		const char *dv = param_default(d);
		item->name = d->name;
		item->defval = dv ? intern(dv) : "";
	} else if ((d = param_split_transport(cname, NULL)) != NULL) {
		str_t t = STR_INIT;
		str_setf(&t, "$%s", d->name);
		item->name = s ? s->name : name;
		item->defval = intern(str_cstr(&t));
		str_release(&t);
	} else if (s) {
		item->name = s->name;
		item->defval = "";
	} else {
		return false;
	}
	item->def = d;
	item->value = s ? s->value : item->defval;
	item->origin = s ? s->origin : PCONFIG_DEFAULT;
	if (s && s->origin == PCONFIG_FILE) {
		item->file = s->file;
		item->line = s->line;
	}
	return true;
}

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const pconfig_item_t *)a)->name,
	    ((const pconfig_item_t *)b)->name);
}

pconfig_item_t *pconfig_list(size_t *count)
{
	size_t tn, sn, n = 0;
	init();
	const param_def_t *t = param_table(&tn);
	htable_entry_t **set = htable_list(settings, &sn);
	pconfig_item_t *items =
	    xreallocarray(NULL, tn + sn + 1, sizeof(*items));
	for (size_t i = 0; i < tn; i++)
		pconfig_item(t[i].name, &items[n++]);
	for (size_t i = 0; i < sn; i++)
		if (param_find(set[i]->key) == NULL)
			pconfig_item(set[i]->key, &items[n++]);
	free(set);
	qsort(items, n, sizeof(*items), cmp_item);
	*count = n;
	return items;
}
