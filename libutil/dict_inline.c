/* inline: and static: tables, written in the table name itself.
 *
 *   inline:{ key1=value1, key2=value2 }
 *   inline:{ { key = value with spaces, or commas }, key2=value2 }
 *   static:value
 *   static:{ value with spaces }
 *
 * Elements of inline: are separated by commas and/or white space; an
 * element in braces may hold both, and keeps balanced inner braces. */
#include <string.h>
#include "dict.h"
#include "mem.h"

static bool blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v'
	    || c == '\f';
}

/* p points at '{'; returns the matching '}' or NULL. */
static const char *match_brace(const char *p)
{
	int depth = 0;

	for (; *p; p++) {
		if (*p == '{')
			depth++;
		else if (*p == '}' && --depth == 0)
			return p;
	}
	return NULL;
}

/* Trimmed copy of [b, e). */
static char *trimmed(const char *b, const char *e)
{
	while (b < e && blank((unsigned char)*b))
		b++;
	while (e > b && blank((unsigned char)e[-1]))
		e--;
	return xstrndup(b, (size_t)(e - b));
}

/* Parses "{ ... }" around the whole name: sets *inner to a trimmed copy
 * of the contents. */
static int outer_braces(const char *spec, const char *name, char **inner,
    str_t *err)
{
	const char *open = name, *close;

	while (blank((unsigned char)*open))
		open++;
	if (*open != '{') {
		str_setf(err, "%s: expected \"{\" after \"%.*s\"", spec,
		    (int)(name - spec), spec);
		return -1;
	}
	if ((close = match_brace(open)) == NULL) {
		str_setf(err, "%s: unbalanced \"{\": missing \"}\"", spec);
		return -1;
	}
	for (const char *p = close + 1; *p; p++) {
		if (!blank((unsigned char)*p)) {
			str_setf(err, "%s: unexpected text after the closing \"}\": \"%s\"",
			    spec, p);
			return -1;
		}
	}
	*inner = trimmed(open + 1, close);
	return 0;
}

static int add_element(dict_t *d, const char *spec, const char *b,
    const char *e, str_t *err)
{
	const char *eq = memchr(b, '=', (size_t)(e - b));
	char *key, *value;
	int rc;

	if (eq == NULL) {
		str_setf(err, "%s: missing \"=\" in \"%.*s\" (expected key=value)",
		    spec, (int)(e - b), b);
		return -1;
	}
	key = trimmed(b, eq);
	value = trimmed(eq + 1, e);
	rc = dict_mem_add(d, key, value, spec, err);
	free(key);
	free(value);
	return rc;
}

dict_t *dict_inline_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	char *inner;
	const char *p, *e;
	dict_t *d;

	if (outer_braces(spec, name, &inner, err) < 0)
		return NULL;
	d = dict_mem_new(spec, flags);
	for (p = inner;;) {
		while (*p == ',' || blank((unsigned char)*p))
			p++;
		if (*p == 0)
			break;
		if (*p == '{') {
			/* Balanced: outer_braces checked the whole text. */
			if ((e = match_brace(p)) == NULL) {
				str_setf(err, "%s: unbalanced \"{\"", spec);
				goto fail;
			}
			if (add_element(d, spec, p + 1, e, err) < 0)
				goto fail;
			p = e + 1;
			continue;
		}
		for (e = p; *e && *e != ',' && !blank((unsigned char)*e); e++) {
			if (*e == '{' || *e == '}') {
				str_setf(err, "%s: unexpected \"%c\" in \"%.*s\" (put the whole element in braces)",
				    spec, *e, (int)strcspn(p, ", \t\r\n"), p);
				goto fail;
			}
		}
		if (add_element(d, spec, p, e, err) < 0)
			goto fail;
		p = e;
	}
	free(inner);
	return d;
fail:
	free(inner);
	dict_close(d);
	return NULL;
}

typedef struct dict_static {
	dict_t d;
	char *value;
} dict_static_t;

static enum dict_status static_get(dict_t *d, const char *key,
    const char **value)
{
	(void)key;
	*value = ((dict_static_t *)d)->value;
	return DICT_STAT_FOUND;
}

static void static_free(dict_t *d)
{
	free(((dict_static_t *)d)->value);
}

dict_t *dict_static_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	const char *p = name;
	dict_static_t *s;
	char *value;

	while (blank((unsigned char)*p))
		p++;
	if (*p == '{') {
		if (outer_braces(spec, name, &value, err) < 0)
			return NULL;
	} else {
		for (const char *q = p; *q; q++) {
			if (*q == '}') {
				str_setf(err, "%s: unbalanced \"}\"", spec);
				return NULL;
			}
		}
		value = trimmed(p, p + strlen(p));
	}
	if (*value == 0) {
		str_setf(err, "%s: missing value", spec);
		free(value);
		return NULL;
	}
	if (strlen(value) > DICT_VALUE_MAX) {
		str_setf(err, "%s: value too long", spec);
		free(value);
		return NULL;
	}
	s = (dict_static_t *)dict_alloc(sizeof(*s), spec, flags);
	s->value = value;
	s->d.get = static_get;
	s->d.free = static_free;
	s->d.any_key = true;
	return &s->d;
}
