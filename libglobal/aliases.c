/* The aliases(5) format and target lists (see aliases.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "addr.h"
#include "aliases.h"
#include "mem.h"

static bool is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v'
	    || c == '\f';
}

/* Unquotes the quoted string at s (s[0] == '"') into out; returns the
 * length consumed including both quotes, or 0 when it is unterminated. */
static size_t unquote(const char *s, size_t len, str_t *out)
{
	for (size_t i = 1; i < len; i++) {
		if (s[i] == '\\' && i + 1 < len) {
			str_putc(out, s[++i]);
			continue;
		}
		if (s[i] == '"')
			return i + 1;
		str_putc(out, s[i]);
	}
	return 0;
}

static bool has_control(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return true;
	return false;
}

int alias_entry_parse(char *line, str_t *name, char **value, str_t *why)
{
	size_t len = strlen(line);
	char *p;

	str_reset(name);
	while (len > 0 && is_blank(line[len - 1]))
		line[--len] = 0;
	while (is_blank(*line))
		line++, len--;
	if (*line == '"') {
		size_t used = unquote(line, len, name);
		if (used == 0) {
			str_setf(why, "unterminated quoted alias name");
			return -1;
		}
		p = line + used;
		while (is_blank(*p))
			p++;
		if (*p != ':') {
			str_setf(why, "missing \":\" after alias name \"%s\"",
			    str_cstr(name));
			return -1;
		}
	} else {
		char *colon = strchr(line, ':');
		char *end;

		if (colon == NULL) {
			str_setf(why, "missing \":\" after alias name in \"%.60s\"",
			    line);
			return -1;
		}
		end = colon;
		while (end > line && is_blank(end[-1]))
			end--;
		for (char *q = line; q < end; q++) {
			if (is_blank(*q) || *q == '"') {
				str_setf(why, "alias name \"%.*s\" contains %s "
				    "(quote the name)", (int)(end - line), line,
				    *q == '"' ? "a quote" : "white space");
				return -1;
			}
		}
		str_append(name, line, (size_t)(end - line));
		p = colon;
	}
	if (str_len(name) == 0) {
		str_setf(why, "empty alias name");
		return -1;
	}
	if (str_len(name) > ALIAS_NAME_MAX) {
		str_setf(why, "alias name longer than %d bytes", ALIAS_NAME_MAX);
		return -1;
	}
	if (has_control(str_cstr(name), str_len(name))) {
		str_setf(why, "control character in alias name");
		return -1;
	}
	p++;			/* the colon */
	while (is_blank(*p))
		p++;
	if (*p == 0) {
		str_setf(why, "missing value for alias \"%s\"", str_cstr(name));
		return -1;
	}
	*value = p;
	return 0;
}

static void add(alias_list_t *l, enum alias_kind kind, const char *text,
    size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 8;
		l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	l->v[l->n].kind = kind;
	l->v[l->n].text = xstrndup(text, len);
	l->n++;
}

/* One trimmed, non-empty element. */
static int one_target(const char *s, size_t len, alias_list_t *out,
    str_t *why)
{
	str_t un = STR_INIT, addr = STR_INIT;
	bool quoted = false;
	int rc = -1;

	if (s[0] == '"') {
		size_t used = unquote(s, len, &un);
		if (used == len) {
			quoted = true;
			s = str_cstr(&un);
			len = str_len(&un);
		}
	}
	if (len == 0) {
		str_setf(why, "empty quoted target");
		goto out;
	}
	if (has_control(s, len)) {
		str_setf(why, "control character in target \"%.*s\"",
		    (int)(len > 60 ? 60 : len), s);
		goto out;
	}
	if (s[0] == '|') {
		size_t i = 1;
		while (i < len && is_blank(s[i]))
			i++;
		if (i == len) {
			str_setf(why, "empty command after \"|\"");
			goto out;
		}
		add(out, ALIAS_T_COMMAND, s + i, len - i);
	} else if (len >= 9 && strncasecmp(s, ":include:", 9) == 0) {
		size_t i = 9;
		while (i < len && is_blank(s[i]))
			i++;
		if (i == len || s[i] != '/') {
			str_setf(why, ":include: needs an absolute path: \"%.*s\"",
			    (int)len, s);
			goto out;
		}
		add(out, ALIAS_T_INCLUDE, s + i, len - i);
	} else if (s[0] == '/') {
		add(out, s[len - 1] == '/' ? ALIAS_T_MAILDIR : ALIAS_T_FILE, s,
		    len);
	} else if (s[0] == '\\' && !quoted) {
		size_t i = 1;
		while (i < len && is_blank(s[i]))
			i++;
		if (i == len) {
			str_setf(why, "empty user name after \"\\\"");
			goto out;
		}
		add(out, ALIAS_T_MAILBOX, s + i, len - i);
	} else if (quoted) {
		add(out, ALIAS_T_ADDRESS, s, len);
	} else {
		addr_err_t err;

		if (len >= 2 && s[0] == '<' && s[len - 1] == '>')
			s++, len -= 2;
		if (addr_internalize(s, len, ADDR_F_NO_DOMAIN | ADDR_F_LAX_DOTS
		    | ADDR_F_LONG_LOCAL | ADDR_F_SMTPUTF8, &addr, &err) != ADDR_OK) {
			str_setf(why, "bad address \"%.*s\": %s",
			    (int)(len > 100 ? 100 : len), s, err.text);
			goto out;
		}
		if (str_len(&addr) == 0) {
			str_setf(why, "empty address");
			goto out;
		}
		add(out, ALIAS_T_ADDRESS, str_cstr(&addr), str_len(&addr));
	}
	rc = 0;
out:
	str_release(&un);
	str_release(&addr);
	return rc;
}

int alias_targets_parse(const char *list, size_t len, alias_list_t *out,
    str_t *why)
{
	size_t start = 0;
	bool inq = false;

	for (size_t i = 0; i <= len; i++) {
		if (i < len && inq) {
			if (list[i] == '\\' && i + 1 < len)
				i++;
			else if (list[i] == '"')
				inq = false;
			continue;
		}
		if (i < len && list[i] == '"') {
			inq = true;
			continue;
		}
		if (i < len && list[i] != ',' && list[i] != '\n')
			continue;
		if (inq) {
			str_setf(why, "unterminated quoted string");
			return -1;
		}
		/* An element ends at i. */
		size_t a = start, b = i;
		while (a < b && is_blank(list[a]))
			a++;
		while (b > a && is_blank(list[b - 1]))
			b--;
		if (b > a && one_target(list + a, b - a, out, why) < 0)
			return -1;
		start = i + 1;
	}
	return 0;
}

void alias_list_free(alias_list_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

const char *alias_kind_name(enum alias_kind k)
{
	switch (k) {
	case ALIAS_T_ADDRESS:
		return "address";
	case ALIAS_T_MAILBOX:
		return "mailbox";
	case ALIAS_T_COMMAND:
		return "command";
	case ALIAS_T_FILE:
		return "file";
	case ALIAS_T_MAILDIR:
		return "maildir";
	case ALIAS_T_INCLUDE:
		return "include";
	}
	return "?";
}
