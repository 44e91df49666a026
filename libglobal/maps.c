/* Lists of lookup tables (maps.h). */
#include <stdlib.h>
#include <string.h>
#include "dict.h"
#include "maps.h"
#include "mem.h"

typedef struct maps_entry {
	char *spec;
	dict_t *dict;		/* NULL when own or broken */
	const maps_own_t *own;
	char *broken;		/* why dict_open failed, or NULL */
} maps_entry_t;

struct maps {
	char *param;
	int flags;
	const maps_own_t *own;		/* the caller's own entry, or NULL */
	maps_entry_t *v;
	size_t n;
	const char *failed_spec;	/* the last lookup's failure */
	const char *failed_reason;
	bool failed_open;
	const char *found_spec;		/* the last lookup's answer */
	str_t open_err;			/* why a lazy open failed */
};

static bool separator(char c)
{
	return c != '\0' && strchr(MAPS_SEPARATORS, c) != NULL;
}

int maps_token(const char **pp, const char **tok, size_t *len)
{
	const char *p = *pp, *start;
	int depth = 0;

	while (separator(*p))
		p++;
	if (*p == '\0') {
		*pp = p;
		return 0;
	}
	/* Separators inside braces belong to the entry. */
	for (start = p; *p != '\0'; p++) {
		if (*p == '{')
			depth++;
		else if (*p == '}' && depth > 0)
			depth--;
		else if (depth == 0 && separator(*p))
			break;
	}
	*tok = start;
	*len = (size_t)(p - start);
	*pp = p;
	return depth > 0 ? -1 : 1;
}

char *maps_token_cut(char **cp)
{
	const char *p = *cp, *tok;
	size_t len;
	char *t;

	if (maps_token(&p, &tok, &len) == 0) {
		*cp += p - *cp;		/* at the end */
		return NULL;
	}
	t = *cp + (tok - *cp);		/* the same bytes, writable */
	*cp = t + len;
	if (**cp != '\0')
		*(*cp)++ = '\0';
	return t;
}

bool maps_add(maps_t *m, const char *spec, size_t len, str_t *err)
{
	char *s = xstrndup(spec, len);
	const maps_own_t *own = NULL;
	dict_t *d = NULL;
	str_t why = STR_INIT;
	maps_entry_t *e;

	if (m->own != NULL && strcmp(s, m->own->spec) == 0)
		own = m->own;
	else if (!(m->flags & MAPS_FLAG_LAZY) &&
	    (d = dict_open(s, 0, &why)) == NULL &&
	    (m->flags & MAPS_FLAG_STRICT)) {
		str_setf(err, "%s: %s", m->param, str_cstr(&why));
		str_release(&why);
		free(s);
		return false;
	}
	m->v = xreallocarray(m->v, m->n + 1, sizeof(*m->v));
	e = &m->v[m->n++];
	memset(e, 0, sizeof(*e));
	e->spec = s;
	e->own = own;
	e->dict = d;
	if (own == NULL && d == NULL && !(m->flags & MAPS_FLAG_LAZY))
		e->broken = xstrdup(str_cstr(&why));
	str_release(&why);
	return true;
}

maps_t *maps_open(const char *param, const char *spec, int flags,
    const maps_own_t *own, str_t *err)
{
	maps_t *m = xcalloc(1, sizeof(*m));
	const char *p = spec != NULL ? spec : "", *tok;
	size_t len;
	int rc;

	m->param = xstrdup(param);
	m->flags = flags;
	m->own = own;
	while ((rc = maps_token(&p, &tok, &len)) != 0) {
		if (rc < 0 && (flags & MAPS_FLAG_STRICT)) {
			str_setf(err, "%s: missing '}'", param);
			goto fail;
		}
		if (!maps_add(m, tok, len, err))
			goto fail;
	}
	return m;
fail:
	maps_free(m);
	return NULL;
}

void maps_free(maps_t *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].dict != NULL)
			dict_close(m->v[i].dict);
		free(m->v[i].spec);
		free(m->v[i].broken);
	}
	free(m->v);
	free(m->param);
	str_release(&m->open_err);
	free(m);
}

const char *maps_param(const maps_t *m)
{
	return m->param;
}

size_t maps_count(const maps_t *m)
{
	return m->n;
}

const char *maps_spec(const maps_t *m, size_t i)
{
	return m->v[i].spec;
}

const char *maps_broken(const maps_t *m, size_t i)
{
	return m->v[i].broken;
}

int maps_own_none(const char *key, const char **value)
{
	(void)key;
	(void)value;
	return 0;
}

/* One entry: 1 found, 0 not found, -1 failed (m->failed_*). */
static int entry_get(maps_t *m, maps_entry_t *e, const char *key,
    const char **value)
{
	if (e->own != NULL)
		return e->own->get(key, value) > 0;
	if (e->broken != NULL) {
		m->failed_spec = e->spec;
		m->failed_reason = e->broken;
		m->failed_open = true;
		return -1;
	}
	if (e->dict == NULL) {		/* MAPS_FLAG_LAZY, not open yet */
		e->dict = dict_open(e->spec, 0, &m->open_err);
		if (e->dict == NULL) {
			m->failed_spec = e->spec;
			m->failed_reason = str_cstr(&m->open_err);
			m->failed_open = true;
			return -1;
		}
	}
	switch (dict_get(e->dict, key, value)) {
	case DICT_STAT_FOUND:
		return 1;
	case DICT_STAT_ERROR:
		m->failed_spec = dict_spec(e->dict);
		m->failed_reason = dict_errmsg(e->dict);
		m->failed_open = false;
		return -1;
	default:
		return 0;
	}
}

int maps_get_entry(maps_t *m, size_t i, const char *key, const char **value,
    str_t *why)
{
	int rc;

	m->failed_spec = m->failed_reason = m->found_spec = NULL;
	m->failed_open = false;
	rc = entry_get(m, &m->v[i], key, value);
	if (rc > 0)
		m->found_spec = m->v[i].spec;
	else if (rc < 0 && why != NULL)
		str_setf(why, "%s: %s", m->failed_spec, m->failed_reason);
	return rc;
}

size_t maps_open_now(maps_t *m, str_t *why)
{
	size_t bad = 0;

	for (size_t i = 0; i < m->n; i++) {
		maps_entry_t *e = &m->v[i];

		if (e->dict != NULL || e->own != NULL || e->broken != NULL)
			continue;
		e->dict = dict_open(e->spec, 0, &m->open_err);
		if (e->dict == NULL) {
			if (why != NULL)
				str_setf(why, "%s: %s", e->spec,
				    str_cstr(&m->open_err));
			bad++;
		}
	}
	return bad;
}

int maps_get(maps_t *m, const char *key, const char **value, str_t *why)
{
	bool failed = false;

	m->failed_spec = m->failed_reason = m->found_spec = NULL;
	m->failed_open = false;
	for (size_t i = 0; i < m->n; i++) {
		int rc = entry_get(m, &m->v[i], key, value);

		if (rc > 0) {
			m->found_spec = m->v[i].spec;
			return 1;
		}
		if (rc < 0) {
			if (why != NULL)
				str_setf(why, "%s: %s", m->failed_spec,
				    m->failed_reason);
			failed = true;
			if (!(m->flags & MAPS_FLAG_PAST_ERRORS))
				break;
		}
	}
	return failed ? -1 : 0;
}

const char *maps_failed(const maps_t *m, const char **reason)
{
	if (reason != NULL)
		*reason = m->failed_reason;
	return m->failed_spec;
}

struct dict *maps_dict(const maps_t *m, size_t i)
{
	return i < m->n ? m->v[i].dict : NULL;
}

bool maps_failed_open(const maps_t *m)
{
	return m->failed_open;
}

const char *maps_found(const maps_t *m)
{
	return m->found_spec;
}

void maps_refresh(maps_t *m)
{
	/* A failure shows at the next lookup, as an error there. */
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].dict != NULL)
			(void)dict_refresh(m->v[i].dict);
}
