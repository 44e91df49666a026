/* regexp: and pcre: tables, files of regular expression rules read and
 * compiled once, when the table is opened (regexp_table(5) and
 * pcre_table(5) of Postfix describe the same syntax):
 *
 *   # comment
 *   /^(.*)@example\.com$/       relay:[mx.example.com] $1
 *   !/@example\.org$/i          outside
 *   if /@example\.net$/
 *   /^postmaster@/              local:postmaster
 *   endif
 *
 * A rule is a pattern between two delimiters ('/' or any other character
 * that is neither white space nor a letter or digit, backslash escapes
 * one), optional flags right after the closing delimiter, and a result.
 * "!" before the pattern negates it (its result cannot use $n); "if" opens
 * a block of rules tried only when the pattern matches, "endif" closes it;
 * blocks nest.  Rules are tried in file order, the first match answers.
 * Matching is case-insensitive unless the flag i toggles it; the key is
 * matched as the caller wrote it.  In the result $1..$9 (or ${n}, $(n))
 * stand for what the n-th group matched (nothing when it did not take
 * part), $$ for a "$".  An expansion that comes out empty is no answer:
 * the search goes on with the next rule.
 *
 * regexp: uses POSIX extended expressions (regcomp): flags i (case), x
 * (extended syntax, on by default), m (newline-sensitive).  pcre: uses
 * PCRE2: flags i (caseless), m (multiline), s (dotall), x (extended), A
 * (anchored), E (dollar at the very end only), U (ungreedy), X (ignored:
 * PCRE2 is always strict).  Syntax errors are reported at open time as
 * "file:line: ...", so a daemon never runs with half a table. */
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include "config.h"
#include "dict.h"
#include "mem.h"
#ifdef HAVE_PCRE2
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#endif

enum re_kind { RE_MATCH, RE_IF, RE_ENDIF };

struct re_rule {
	enum re_kind kind;
	bool negate;
	bool subst;		/* the result uses $n */
	size_t endif;		/* RE_IF: index of its endif */
	char *result;		/* RE_MATCH */
	regex_t posix;		/* regexp: */
#ifdef HAVE_PCRE2
	pcre2_code *pcre;	/* pcre: */
#endif
	bool compiled;
	int line;		/* in the table file */
};

typedef struct dict_re {
	dict_t d;
	bool pcre;
	struct re_rule *rules;
	size_t n, cap;
	str_t out;		/* expansion, reused by every lookup */
	dict_nest_t nest;	/* parse state: the open if rules */
#ifdef HAVE_PCRE2
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	uint32_t maxgroups;
#endif
} dict_re_t;

#define RE_GROUPS 10		/* $0..$9 */

static bool blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v'
	    || c == '\f';
}

static bool alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	    || (c >= '0' && c <= '9');
}

/* Checks a result: every '$' is "$$", "$n", "${n}" or "$(n)" with n no
 * more than groups.  Sets *subst when the result has any '$'. */
static bool check_result(const char *r, unsigned groups, bool *subst,
    str_t *why)
{
	*subst = false;
	for (const char *p = r; *p; p++) {
		unsigned n;
		if (*p != '$')
			continue;
		p++;
		*subst = true;	/* even "$$" needs the expansion */
		if (*p == '$')
			continue;
		if ((*p == '{' || *p == '(') && p[1] >= '1' && p[1] <= '9'
		    && p[2] == (*p == '{' ? '}' : ')')) {
			n = (unsigned)(p[1] - '0');
			p += 2;
		} else if (*p >= '1' && *p <= '9') {
			n = (unsigned)(*p - '0');
		} else {
			str_set(why, "bad \"$\" in result (use $1..$9 for a group, $$ for a \"$\")");
			return false;
		}
		if (n > groups) {
			str_setf(why, "$%u in result but the pattern has %u group%s",
			    n, groups, groups == 1 ? "" : "s");
			return false;
		}
	}
	return true;
}

/* Appends result to out, $n from the match of key (so[n], eo[n]; -1:
 * the group did not take part). */
static void expand(str_t *out, const char *result, const char *key,
    const long *so, const long *eo)
{
	str_reset(out);
	for (const char *p = result; *p; p++) {
		const char *s = p;
		unsigned n;

		while (*p && *p != '$')
			p++;
		if (p > s)
			str_append(out, s, (size_t)(p - s));
		if (*p == 0)
			break;
		p++;
		if (*p == '$') {
			str_append(out, "$", 1);
			continue;
		}
		if (*p == '{' || *p == '(') {
			n = (unsigned)(p[1] - '0');
			p += 2;
		} else {
			n = (unsigned)(*p - '0');
		}
		if (so[n] >= 0 && eo[n] >= so[n])
			str_append(out, key + so[n], (size_t)(eo[n] - so[n]));
	}
	if (out->buf == NULL)
		str_set(out, "");
}

/* POSIX leaves a repetition operator right after another one ("a**",
 * "a+{2}") undefined, and glibc expands each one more into a copy of the
 * whole, so a typo like "x++++++++" costs gigabytes at open time.  Two in
 * a row are accepted (".*?" is a common Perl habit in Postfix tables,
 * glibc reads it as "(.*)?"); three or more are refused with a message.
 * Extended syntax only. */
static bool stacked_repetition(const char *pat)
{
	int after_rep = 0;

	for (const char *p = pat; *p; p++) {
		if (*p == '\\' && p[1] != 0) {
			p++;
			after_rep = 0;
		} else if (*p == '[') {
			/* bracket expression: "]" first is a member */
			p++;
			if (*p == '^')
				p++;
			if (*p == ']')
				p++;
			while (*p && *p != ']')
				p++;
			if (*p == 0)
				return false;	/* regcomp reports it */
			after_rep = 0;
		} else if (*p == '*' || *p == '+' || *p == '?' || *p == '{') {
			if (++after_rep > 2)
				return true;
			if (*p == '{')
				while (p[1] && *p != '}')
					p++;
		} else {
			after_rep = 0;
		}
	}
	return false;
}

/* Compiles pat for r with flags; number of groups in *groups. */
static bool compile(dict_re_t *t, struct re_rule *r, const char *pat,
    const char *flags, unsigned *groups, str_t *why)
{
	if (!t->pcre) {
		int cf = REG_EXTENDED | REG_ICASE, ret;
		char buf[256];

		for (const char *f = flags; *f; f++) {
			switch (*f) {
			case 'i': cf ^= REG_ICASE; break;
			case 'x': cf ^= REG_EXTENDED; break;
			case 'm': cf ^= REG_NEWLINE; break;
			default:
				str_setf(why, "unknown flag \"%c\" (regexp: knows i, x, m)", *f);
				return false;
			}
		}
		if ((cf & REG_EXTENDED) && stacked_repetition(pat)) {
			str_setf(why, "bad regular expression \"%s\": three or more "
			    "repetition operators (*, +, ?, {}) in a row", pat);
			return false;
		}
		if ((ret = regcomp(&r->posix, pat, cf)) != 0) {
			regerror(ret, &r->posix, buf, sizeof(buf));
			str_setf(why, "bad regular expression \"%s\": %s", pat, buf);
			return false;
		}
		r->compiled = true;
		*groups = (unsigned)r->posix.re_nsub;
		return true;
	}
#ifdef HAVE_PCRE2
	{
		uint32_t opt = PCRE2_CASELESS, cap;
		int code;
		PCRE2_SIZE off;
		PCRE2_UCHAR msg[256];

		for (const char *f = flags; *f; f++) {
			switch (*f) {
			case 'i': opt ^= PCRE2_CASELESS; break;
			case 'm': opt ^= PCRE2_MULTILINE; break;
			case 's': opt ^= PCRE2_DOTALL; break;
			case 'x': opt ^= PCRE2_EXTENDED; break;
			case 'A': opt ^= PCRE2_ANCHORED; break;
			case 'E': opt ^= PCRE2_DOLLAR_ENDONLY; break;
			case 'U': opt ^= PCRE2_UNGREEDY; break;
			case 'X': break;
			default:
				str_setf(why, "unknown flag \"%c\" (pcre: knows i, m, s, x, A, E, U, X)", *f);
				return false;
			}
		}
		r->pcre = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, opt,
		    &code, &off, NULL);
		if (r->pcre == NULL) {
			pcre2_get_error_message(code, msg, sizeof(msg));
			str_setf(why, "bad regular expression \"%s\": %s at offset %zu",
			    pat, (const char *)msg, (size_t)off);
			return false;
		}
		r->compiled = true;
		/* Faster matching where the platform has a JIT; without one
		 * the interpreter serves. */
		(void)pcre2_jit_compile(r->pcre, PCRE2_JIT_COMPLETE);
		pcre2_pattern_info(r->pcre, PCRE2_INFO_CAPTURECOUNT, &cap);
		*groups = cap;
		if (cap + 1 > t->maxgroups)
			t->maxgroups = cap + 1;
		return true;
	}
#else
	(void)flags;
	(void)groups;
	str_set(why, "pcre: is not supported by this build");
	return false;
#endif
}

static int re_line(char *line, const char *file, int lineno, void *ctx,
    str_t *err)
{
	dict_re_t *t = ctx;
	struct re_rule r;
	str_t why = STR_INIT;
	char *p = line, *pat, *flags, *rest;
	size_t open;
	char delim;
	unsigned groups = 0;

	memset(&r, 0, sizeof(r));
	if (strcmp(line, "endif") == 0) {
		if (!dict_nest_pop(&t->nest, &open, file, lineno, err))
			return -1;
		t->rules[open].endif = t->n;
		r.kind = RE_ENDIF;
		goto add;
	}
	if (strncmp(p, "if", 2) == 0 && (blank((unsigned char)p[2]) || p[2] == '!'
	    || (p[2] != 0 && !alnum((unsigned char)p[2])))) {
		r.kind = RE_IF;
		p += 2;
		while (blank((unsigned char)*p))
			p++;
	}
	if (*p == '!') {
		r.negate = true;
		p++;
	}
	delim = *p;
	if (delim == 0 || blank((unsigned char)delim) || alnum((unsigned char)delim)
	    || delim == '\\') {
		str_setf(err, "%s:%d: expected /pattern/ (a pattern between two delimiters)",
		    file, lineno);
		return -1;
	}
	pat = ++p;
	while (*p && *p != delim) {
		if (*p == '\\' && p[1] != 0)
			p++;
		p++;
	}
	if (*p == 0) {
		str_setf(err, "%s:%d: missing closing \"%c\" after the pattern",
		    file, lineno, delim);
		return -1;
	}
	*p++ = 0;
	flags = p;
	while (*p && !blank((unsigned char)*p))
		p++;
	rest = p;
	if (*rest)
		*rest++ = 0;
	while (blank((unsigned char)*rest))
		rest++;
	if (r.kind == RE_IF && *rest != 0) {
		str_setf(err, "%s:%d: text after the \"if\" pattern", file, lineno);
		return -1;
	}
	if (r.kind == RE_MATCH && *rest == 0) {
		str_setf(err, "%s:%d: missing result after the pattern", file, lineno);
		return -1;
	}
	if (!compile(t, &r, pat, flags, &groups, &why))
		goto fail;
	if (r.kind == RE_MATCH) {
		if (!check_result(rest, r.negate ? 0 : groups, &r.subst, &why)) {
			if (r.negate)
				str_set(&why, "a negated pattern has no groups: $n cannot "
				    "be used in its result ($$ for a \"$\")");
			goto fail;
		}
		if (strlen(rest) > DICT_VALUE_MAX) {
			str_set(&why, "result too long");
			goto fail;
		}
		r.result = xstrdup(rest);
	} else {
		dict_nest_push(&t->nest, t->n, lineno);
	}
add:
	r.line = lineno;
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->rules = xreallocarray(t->rules, t->cap, sizeof(*t->rules));
	}
	t->rules[t->n++] = r;
	str_release(&why);
	return 0;
fail:
	str_setf(err, "%s:%d: %s", file, lineno, str_cstr(&why));
	str_release(&why);
	if (r.compiled) {
		if (!t->pcre)
			regfree(&r.posix);
#ifdef HAVE_PCRE2
		else
			pcre2_code_free(r.pcre);
#endif
	}
	return -1;
}

/* 1 match, 0 no match, -1 error (set on d); so/eo filled when want. */
static int rule_match(dict_re_t *t, const struct re_rule *r, const char *key,
    long *so, long *eo, bool want)
{
	if (!t->pcre) {
		regmatch_t m[RE_GROUPS];
		int ret = regexec(&r->posix, key, want ? RE_GROUPS : 0,
		    want ? m : NULL, 0);

		if (ret == REG_NOMATCH)
			return 0;
		if (ret != 0) {
			dict_set_error(&t->d, "%s: regexec failed (%d)", t->d.spec, ret);
			return -1;
		}
		if (want) {
			for (int i = 0; i < RE_GROUPS; i++) {
				/* re_nsub may be less than RE_GROUPS - 1: regexec
				 * sets the rest to -1. */
				so[i] = (long)m[i].rm_so;
				eo[i] = (long)m[i].rm_eo;
			}
		}
		return 1;
	}
#ifdef HAVE_PCRE2
	{
		int ret = pcre2_match(r->pcre, (PCRE2_SPTR)key, PCRE2_ZERO_TERMINATED,
		    0, 0, t->md, t->mctx);

		if (ret == PCRE2_ERROR_NOMATCH)
			return 0;
		if (ret < 0) {
			PCRE2_UCHAR msg[256];
			pcre2_get_error_message(ret, msg, sizeof(msg));
			dict_set_error(&t->d, "%s: matching failed: %s", t->d.spec,
			    (const char *)msg);
			return -1;
		}
		if (want) {
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
			uint32_t n = pcre2_get_ovector_count(t->md);
			for (uint32_t i = 0; i < RE_GROUPS; i++) {
				if (i < n && i < (uint32_t)ret && ov[2 * i] != PCRE2_UNSET) {
					so[i] = (long)ov[2 * i];
					eo[i] = (long)ov[2 * i + 1];
				} else {
					so[i] = eo[i] = -1;
				}
			}
		}
		return 1;
	}
#else
	(void)key;
	(void)so;
	(void)eo;
	(void)want;
	return 0;
#endif
}

static enum dict_status re_get(dict_t *d, const char *key, const char **value)
{
	dict_re_t *t = (dict_re_t *)d;
	long so[RE_GROUPS], eo[RE_GROUPS];
	size_t i = 0;
	int m;

	while (i < t->n) {
		const struct re_rule *r = &t->rules[i];

		switch (r->kind) {
		case RE_ENDIF:
			i++;
			break;
		case RE_IF:
			if ((m = rule_match(t, r, key, so, eo, false)) < 0)
				return DICT_STAT_ERROR;
			i = (m == 1) != r->negate ? i + 1 : r->endif + 1;
			break;
		case RE_MATCH:
			if ((m = rule_match(t, r, key, so, eo, r->subst && !r->negate)) < 0)
				return DICT_STAT_ERROR;
			i++;
			if ((m == 1) == r->negate)
				break;
			if (!r->subst) {
				*value = r->result;
				return DICT_STAT_FOUND;
			}
			expand(&t->out, r->result, key, so, eo);
			if (str_len(&t->out) == 0)
				break;
			*value = str_cstr(&t->out);
			return DICT_STAT_FOUND;
		}
	}
	return DICT_STAT_NOTFOUND;
}

static void re_free(dict_t *d)
{
	dict_re_t *t = (dict_re_t *)d;

	for (size_t i = 0; i < t->n; i++) {
		struct re_rule *r = &t->rules[i];
		free(r->result);
		if (!r->compiled)
			continue;
		if (!t->pcre)
			regfree(&r->posix);
#ifdef HAVE_PCRE2
		else
			pcre2_code_free(r->pcre);
#endif
	}
	free(t->rules);
	dict_nest_free(&t->nest);
	str_release(&t->out);
#ifdef HAVE_PCRE2
	if (t->md)
		pcre2_match_data_free(t->md);
	if (t->mctx)
		pcre2_match_context_free(t->mctx);
#endif
}

static dict_t *re_open(const char *spec, const char *name, int flags,
    bool pcre, str_t *err)
{
	dict_re_t *t = (dict_re_t *)dict_alloc(sizeof(*t), spec, flags);
	str_t why = STR_INIT;
	int rc;

	t->pcre = pcre;
	t->d.get = re_get;
	t->d.free = re_free;
	t->d.raw_key = true;
	rc = dict_text_lines(name, re_line, t, &why);
	if (rc == 0 && !dict_nest_closed(&t->nest, name, &why))
		rc = -1;
#ifdef HAVE_PCRE2
	if (rc == 0 && pcre) {
		/* One match block for every rule: no allocation per lookup.
		 * Keys are short; the limit stops a pathological pattern from
		 * stalling a daemon (the lookup then fails and mail waits). */
		t->md = pcre2_match_data_create(t->maxgroups ? t->maxgroups : 1, NULL);
		t->mctx = pcre2_match_context_create(NULL);
		pcre2_set_match_limit(t->mctx, 1000000);
		pcre2_set_depth_limit(t->mctx, 10000);
	}
#endif
	if (rc < 0) {
		str_setf(err, "%s: %s", spec, str_cstr(&why));
		str_release(&why);
		dict_close(&t->d);
		return NULL;
	}
	str_release(&why);
	return &t->d;
}

int dict_pattern_results(dict_t *d, dict_result_fn fn, void *ctx)
{
	dict_re_t *t = (dict_re_t *)d;

	if (d->get != re_get)
		return -1;
	for (size_t i = 0; i < t->n; i++)
		if (t->rules[i].kind == RE_MATCH &&
		    fn(d->name, t->rules[i].line, t->rules[i].result, ctx) != 0)
			return 1;
	return 0;
}

dict_t *dict_regexp_open(const char *spec, const char *name, int flags,
    str_t *err)
{
	return re_open(spec, name, flags, false, err);
}

dict_t *dict_pcre_open(const char *spec, const char *name, int flags,
    str_t *err)
{
#ifndef HAVE_PCRE2
	(void)name;
	(void)flags;
	str_setf(err, "%s: pcre: tables are not supported by this build "
	    "(PCRE2 was not found by configure)", spec);
	return NULL;
#else
	return re_open(spec, name, flags, true, err);
#endif
}
