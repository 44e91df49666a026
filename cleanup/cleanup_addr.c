/* cleanup: address checks, completion, canonical rewriting, virtual alias
 * expansion and the duplicate filter (doc/cleanup.md). */
#include <string.h>
#include <strings.h>
#include "cleanup.h"
#include "log.h"
#include "maps.h"
#include "mem.h"

/* canonical rewriting repeats while the address changes; a chain longer
 * than this is a loop in the tables. */
#define CANON_ROUNDS	100

bool cleanup_addr_valid(const char *s, size_t len, str_t *why)
{
	str_t ext = STR_INIT, back = STR_INIT;
	addr_err_t err;
	bool ok = false;

	if (len == 0) {
		str_set(why, "empty address");
		return false;
	}
	if (memchr(s, '\0', len) != NULL) {
		str_set(why, "NUL byte in address");
		return false;
	}
	if (len > 2048) {
		str_set(why, "address longer than 2048 bytes");
		return false;
	}
	/* Internal form is what the client sends; the round trip through
	 * the external form is the definition of well formed (doc/
	 * addresses.md), and it checks the domain and the local part. */
	addr_externalize(s, &ext);
	if (addr_internalize(str_cstr(&ext), str_len(&ext), ADDR_F_NO_DOMAIN |
	    ADDR_F_LAX_DOTS | ADDR_F_LONG_LOCAL | ADDR_F_SMTPUTF8, &back,
	    &err) != ADDR_OK)
		str_set(why, err.text);
	else if (str_len(&back) != len || memcmp(str_cstr(&back), s, len) != 0)
		str_set(why, "ambiguous address");
	else
		ok = true;
	str_release(&ext);
	str_release(&back);
	return ok;
}

void cleanup_addr_complete(const cleanup_cfg_t *cfg, const char *addr,
    str_t *out)
{
	str_set(out, addr);
	if (*addr != '\0' && strrchr(addr, '@') == NULL &&
	    cfg->append_at_myorigin) {
		str_putc(out, '@');
		str_cat(out, cfg->myorigin);
	}
}

/* ---- Table lookups -------------------------------------------------------- */

/* 1 found (value copied), 0 not, -1 error. */
static int lookup(maps_t *m, const char *key, str_t *value, str_t *err)
{
	const char *v, *reason;
	int rc = maps_get(m, key, &v, NULL);

	if (rc > 0)
		str_set(value, v);
	else if (rc < 0) {
		(void)maps_failed(m, &reason);
		str_setf(err, "%s lookup error for \"%s\": %s", maps_param(m),
		    key, reason);
	}
	return rc;
}

/* The Postfix key order; *prop gets "+ext" to add to a result when the
 * matching key lacked the extension. */
static int maps_find(const cleanup_cfg_t *cfg, maps_t *maps, const char *addr,
    str_t *value, str_t *prop, bool *domain_key, str_t *err)
{
	const char *at = strrchr(addr, '@');
	const char *domain = at != NULL ? at + 1 : NULL;
	size_t llen = at != NULL ? (size_t)(at - addr) : strlen(addr);
	addr_split_t sp;
	str_t key = STR_INIT;
	int rc;
	bool local;

	str_reset(prop);
	*domain_key = false;
	if (maps_count(maps) == 0)
		return 0;
	addr_split(addr, cfg->recipient_delimiter != NULL ?
	    cfg->recipient_delimiter : "", &sp);
	/* 1. the whole address */
	if ((rc = lookup(maps, addr, value, err)) != 0)
		goto done;
	/* 2. without the extension */
	if (sp.ext != NULL && domain != NULL) {
		str_setf(&key, "%s@%s", sp.user, domain);
		if ((rc = lookup(maps, str_cstr(&key), value, err)) != 0) {
			if (rc > 0)
				str_setf(prop, "%c%s", sp.delim, sp.ext);
			goto done;
		}
	}
	/* 3. the local part alone, for local domains */
	local = domain == NULL;
	if (domain != NULL && cfg->local_domains != NULL) {
		int lm = addr_domlist_match(cfg->local_domains, domain, err);
		if (lm < 0) {
			rc = -1;
			goto done;
		}
		local = lm > 0;
	}
	if (local && domain != NULL) {
		str_reset(&key);
		str_append(&key, addr, llen);
		if ((rc = lookup(maps, str_cstr(&key), value, err)) != 0)
			goto done;
	}
	if (local && sp.ext != NULL) {
		if ((rc = lookup(maps, sp.user, value, err)) != 0) {
			if (rc > 0)
				str_setf(prop, "%c%s", sp.delim, sp.ext);
			goto done;
		}
	}
	/* 4. the domain */
	if (domain != NULL && *domain != '\0') {
		str_setf(&key, "@%s", domain);
		if ((rc = lookup(maps, str_cstr(&key), value, err)) != 0) {
			*domain_key = rc > 0;
			goto done;
		}
	}
	rc = 0;
done:
	addr_split_free(&sp);
	str_release(&key);
	return rc;
}

int cleanup_addr_maps_find(const cleanup_cfg_t *cfg, maps_t *maps,
    const char *addr, str_t *value, str_t *prop, str_t *err)
{
	bool dk;

	return maps_find(cfg, maps, addr, value, prop, &dk, err);
}

void cleanup_addr_list_free(char **list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* Adds prop ("+ext") at the end of the local part of a. */
static char *add_ext(const char *a, const char *prop)
{
	const char *at = strrchr(a, '@');
	str_t s = STR_INIT;

	if (*prop == '\0' || *a == '\0')
		return xstrdup(a);
	if (at == NULL) {
		str_setf(&s, "%s%s", a, prop);
	} else {
		str_append(&s, a, (size_t)(at - a));
		str_cat(&s, prop);
		str_cat(&s, at);
	}
	return str_steal(&s);
}

int cleanup_addr_parse_value(const cleanup_cfg_t *cfg, const char *value,
    char ***list, size_t *n, str_t *err)
{
	const char *p = value;
	size_t cap = 0;
	str_t one = STR_INIT, full = STR_INIT;

	*list = NULL;
	*n = 0;
	for (;;) {
		const char *start;
		bool quoted = false;
		addr_err_t ae;

		while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\r' ||
		    *p == '\n')
			p++;
		if (*p == '\0')
			break;
		/* One address: up to a separator outside quotes. */
		for (start = p; *p != '\0'; p++) {
			if (*p == '\\' && quoted && p[1] != '\0')
				p++;
			else if (*p == '"')
				quoted = !quoted;
			else if (!quoted && (*p == ',' || *p == ' ' ||
			    *p == '\t' || *p == '\r' || *p == '\n'))
				break;
		}
		str_reset(&one);
		if (addr_internalize(start, (size_t)(p - start), ADDR_F_NO_DOMAIN |
		    ADDR_F_LAX_DOTS | ADDR_F_LONG_LOCAL | ADDR_F_SMTPUTF8, &one,
		    &ae) != ADDR_OK || str_len(&one) == 0) {
			str_setf(err, "bad address \"%.*s\" in table value: %s",
			    (int)(p - start > 200 ? 200 : p - start), start,
			    str_len(&one) == 0 && ae.status == ADDR_OK ?
			    "empty" : ae.text);
			cleanup_addr_list_free(*list, *n);
			*list = NULL;
			*n = 0;
			str_release(&one);
			str_release(&full);
			return -1;
		}
		cleanup_addr_complete(cfg, str_cstr(&one), &full);
		if (*n == cap) {
			cap = cap ? 2 * cap : 4;
			*list = xreallocarray(*list, cap, sizeof(**list));
		}
		(*list)[(*n)++] = xstrdup(str_cstr(&full));
	}
	str_release(&one);
	str_release(&full);
	return 0;
}

/* Looks addr up and turns the value into addresses: "@domain" keeps the
 * local part (of a domain-key match: the whole local part), unmatched
 * extensions are added.  1 found, 0 not found, -1 error. */
static int map_to_list(const cleanup_cfg_t *cfg, maps_t *maps,
    const char *addr, char ***list, size_t *n, str_t *err)
{
	str_t value = STR_INIT, prop = STR_INIT;
	bool dk;
	int rc;
	const char *v;

	*list = NULL;
	*n = 0;
	rc = maps_find(cfg, maps, addr, &value, &prop, &dk, err);
	if (rc <= 0)
		goto out;
	v = str_cstr(&value);
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v == '@' && strpbrk(v + 1, "@, \t\"") == NULL) {
		/* "@domain": the same local part in another domain. */
		const char *at = strrchr(addr, '@');
		size_t llen = at != NULL ? (size_t)(at - addr) : strlen(addr);
		str_t s = STR_INIT;

		str_append(&s, addr, llen);
		str_cat(&s, v);
		*list = xmalloc(sizeof(**list));
		(*list)[0] = str_steal(&s);
		*n = 1;
		goto out;
	}
	if (cleanup_addr_parse_value(cfg, v, list, n, err) < 0) {
		str_setf(&value, "%s: %s", maps_param(maps), str_cstr(err));
		str_set(err, str_cstr(&value));
		rc = -1;
		goto out;
	}
	if (*n == 0) {
		str_setf(err, "%s: empty value for \"%s\"", maps_param(maps),
		    addr);
		rc = -1;
		goto out;
	}
	if (str_len(&prop) > 0) {
		for (size_t i = 0; i < *n; i++) {
			char *x = add_ext((*list)[i], str_cstr(&prop));
			free((*list)[i]);
			(*list)[i] = x;
		}
	}
out:
	str_release(&value);
	str_release(&prop);
	return rc;
}

int cleanup_addr_canonical(const cleanup_cfg_t *cfg, maps_t *maps,
    const char *addr, str_t *out, str_t *err)
{
	str_set(out, addr);
	if (maps_count(maps) == 0 || *addr == '\0')
		return CLEANUP_ADDR_OK;
	for (int round = 0; round < CANON_ROUNDS; round++) {
		char **list;
		size_t n;
		int rc = map_to_list(cfg, maps, str_cstr(out), &list, &n, err);

		if (rc < 0)
			return CLEANUP_ADDR_TEMP;
		if (rc == 0)
			return CLEANUP_ADDR_OK;
		if (n > 1)
			log_warning("%s: \"%s\" maps to %zu addresses; only the "
			    "first is used", maps_param(maps), str_cstr(out),
			    n);
		if (strcmp(list[0], str_cstr(out)) == 0) {
			cleanup_addr_list_free(list, n);
			return CLEANUP_ADDR_OK;
		}
		str_set(out, list[0]);
		cleanup_addr_list_free(list, n);
	}
	str_setf(err, "%s: mapping loop for \"%s\" (more than %d rewrites)",
	    maps_param(maps), addr, CANON_ROUNDS);
	return CLEANUP_ADDR_TEMP;
}

static int rewrite(const cleanup_cfg_t *cfg, maps_t *first, const char *addr,
    str_t *out, str_t *err)
{
	str_t tmp = STR_INIT;
	int rc;

	cleanup_addr_complete(cfg, addr, &tmp);
	rc = cleanup_addr_canonical(cfg, first, str_cstr(&tmp), out, err);
	if (rc == CLEANUP_ADDR_OK) {
		str_set(&tmp, str_cstr(out));
		/* const: the tables are only read; dict_get updates its
		 * own state. */
		rc = cleanup_addr_canonical(cfg, cfg->canonical,
		    str_cstr(&tmp), out, err);
	}
	str_release(&tmp);
	return rc;
}

int cleanup_addr_rewrite_sender(const cleanup_cfg_t *cfg, const char *addr,
    str_t *out, str_t *err)
{
	return rewrite(cfg, cfg->sender_canonical, addr, out,
	    err);
}

int cleanup_addr_rewrite_recipient(const cleanup_cfg_t *cfg, const char *addr,
    str_t *out, str_t *err)
{
	return rewrite(cfg, cfg->recipient_canonical, addr,
	    out, err);
}

/* ---- Virtual alias expansion ---------------------------------------------- */

/* The duplicate and visit key: the domain folded, the local part kept
 * (local parts are case-sensitive). */
static void fold_key(const char *a, str_t *key)
{
	const char *at = strrchr(a, '@');

	str_set(key, a);
	if (at != NULL)
		str_lower(key->buf + (at - a));
}

/* Visit marks (addresses of these, never read). */
static char v_busy, v_done;
#define V_BUSY (&v_busy)
#define V_DONE (&v_done)

typedef struct vframe {
	char *addr;
	char **list;
	size_t n, i;
} vframe_t;

static void out_add(char ***list, size_t *n, size_t *cap, const char *a)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 4;
		*list = xreallocarray(*list, *cap, sizeof(**list));
	}
	(*list)[(*n)++] = xstrdup(a);
}

int cleanup_addr_virtual_expand(const cleanup_cfg_t *cfg, const char *addr,
    char ***list, size_t *n, str_t *err)
{
	maps_t *maps = cfg->virtual_alias;
	htable_t *seen;
	vframe_t *stack = NULL;
	size_t depth = 0, cap = 0, ocap = 0;
	str_t key = STR_INIT, key2 = STR_INIT;
	int rc = CLEANUP_ADDR_OK;
	const char *next = addr;

	*list = NULL;
	*n = 0;
	if (maps_count(maps) == 0) {
		out_add(list, n, &ocap, addr);
		return CLEANUP_ADDR_OK;
	}
	/* Visit states: busy = on the current path (seeing it again is a
	 * loop), done = expanded already (its results are out). */
	seen = htable_new(16, 0);
	for (;;) {
		if (next != NULL) {
			char **vl;
			size_t vn;
			int found;

			fold_key(next, &key);
			found = map_to_list(cfg, maps, next, &vl, &vn, err);
			if (found < 0) {
				rc = CLEANUP_ADDR_TEMP;
				break;
			}
			if (found == 0) {
				htable_put(seen, str_cstr(&key), V_DONE);
				out_add(list, n, &ocap, next);
			} else {
				if (depth >= (size_t)cfg->virt_recursion_limit) {
					str_setf(err, "virtual_alias_maps: "
					    "nesting deeper than "
					    "virtual_alias_recursion_limit "
					    "(%ld) for \"%s\"",
					    cfg->virt_recursion_limit, addr);
					cleanup_addr_list_free(vl, vn);
					rc = CLEANUP_ADDR_TEMP;
					break;
				}
				htable_put(seen, str_cstr(&key), V_BUSY);
				if (depth == cap) {
					cap = cap ? 2 * cap : 8;
					stack = xreallocarray(stack, cap,
					    sizeof(*stack));
				}
				stack[depth].addr = xstrdup(next);
				stack[depth].list = vl;
				stack[depth].n = vn;
				stack[depth].i = 0;
				depth++;
			}
			next = NULL;
		}
		if (*n > (size_t)cfg->virt_expansion_limit) {
			str_setf(err, "virtual_alias_maps: \"%s\" expands to more "
			    "than virtual_alias_expansion_limit (%ld) addresses",
			    addr, cfg->virt_expansion_limit);
			rc = CLEANUP_ADDR_TEMP;
			break;
		}
		if (depth == 0)
			break;
		vframe_t *f = &stack[depth - 1];
		if (f->i == f->n) {
			fold_key(f->addr, &key);
			htable_put(seen, str_cstr(&key), V_DONE);
			free(f->addr);
			cleanup_addr_list_free(f->list, f->n);
			depth--;
			continue;
		}
		const char *a = f->list[f->i++];
		fold_key(a, &key);
		fold_key(f->addr, &key2);
		if (strcmp(str_cstr(&key), str_cstr(&key2)) == 0) {
			/* "a  a, b": keep a itself, do not expand it again. */
			out_add(list, n, &ocap, a);
			continue;
		}
		void *st = htable_get(seen, str_cstr(&key));
		if (st == V_BUSY) {
			str_setf(err, "virtual_alias_maps: loop: \"%s\" expands "
			    "to itself through \"%s\"", a, f->addr);
			rc = CLEANUP_ADDR_TEMP;
			break;
		}
		if (st == V_DONE)
			continue;
		next = a;
	}
	while (depth > 0) {
		depth--;
		free(stack[depth].addr);
		cleanup_addr_list_free(stack[depth].list, stack[depth].n);
	}
	free(stack);
	htable_free(seen, NULL);
	str_release(&key);
	str_release(&key2);
	if (rc != CLEANUP_ADDR_OK) {
		cleanup_addr_list_free(*list, *n);
		*list = NULL;
		*n = 0;
	}
	return rc;
}

/* ---- Duplicate filter ----------------------------------------------------- */

void cleanup_addr_dup_init(cleanup_addr_dup_t *d, long limit)
{
	d->t = htable_new(16, 0);
	d->limit = limit;
}

bool cleanup_addr_dup_seen(cleanup_addr_dup_t *d, const char *addr)
{
	str_t key = STR_INIT;
	bool seen;

	fold_key(addr, &key);
	seen = htable_find(d->t, str_cstr(&key));
	if (!seen && (d->limit <= 0 || (long)htable_size(d->t) < d->limit))
		htable_add(d->t, str_cstr(&key), NULL);
	str_release(&key);
	return seen;
}

void cleanup_addr_dup_free(cleanup_addr_dup_t *d)
{
	if (d->t != NULL)
		htable_free(d->t, NULL);
	d->t = NULL;
}
