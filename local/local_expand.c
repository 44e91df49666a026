/* $name expansion of forward_path, mailbox_command and luser_relay
 * (local_expand, local.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "local.h"
#include "mem.h"

static const char *var_value(const char *name, size_t len,
    const char *const *names, const char *const *values, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
			return values[i] ? values[i] : "";
	return "";
}

static void shell_quote(const char *v, str_t *out)
{
	str_putc(out, '\'');
	for (; *v; v++) {
		if (*v == '\'')
			str_cat(out, "'\\''");
		else
			str_putc(out, *v);
	}
	str_putc(out, '\'');
}

static void put_value(const char *v, bool quote, str_t *out)
{
	if (quote && *v)
		shell_quote(v, out);
	else
		str_cat(out, v);
}

bool local_expand(const char *t, const char *const *names,
    const char *const *values, size_t n, bool quote, str_t *out)
{
	bool all = true;

	while (*t) {
		if (*t != '$') {
			str_putc(out, *t++);
			continue;
		}
		t++;
		if (*t == '$') {
			str_putc(out, *t++);
			continue;
		}
		if (*t == '{') {
			const char *end = strchr(t, '}');
			if (end == NULL) {
				str_cat(out, "${");
				t++;
				continue;
			}
			const char *name = t + 1;
			size_t len = strcspn(name, "?:}");
			const char *v = var_value(name, len, names, values, n);
			char op = name[len];
			if (op == '?' || op == ':') {
				const char *text = name + len + 1;
				bool use = op == '?' ? *v != 0 : *v == 0;
				if (use) {
					/* The text may hold $names itself. */
					char *sub = xstrndup(text, (size_t)(end - text));
					(void)local_expand(sub, names, values, n, quote, out);
					free(sub);
				}
			} else {
				if (*v == 0)
					all = false;
				put_value(v, quote, out);
			}
			t = end + 1;
			continue;
		}
		size_t len = 0;
		while (isalnum((unsigned char)t[len]) || t[len] == '_')
			len++;
		if (len == 0) {
			str_putc(out, '$');
			continue;
		}
		const char *v = var_value(t, len, names, values, n);
		if (*v == 0)
			all = false;
		put_value(v, quote, out);
		t += len;
	}
	return all;
}
