/* The Prometheus text exposition format, version 0.0.4: metric families
 * (HELP and TYPE lines) and samples, with the format's escapes.  See
 * doc/metrics.md, "The exposition format". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "metrics.h"
#include "str.h"

static bool name_ok(const char *name, bool colon)
{
	const char *p = name;

	if (*p == 0 || (*p >= '0' && *p <= '9'))
		return false;
	for (; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		    || (c >= '0' && c <= '9') || c == '_' || (colon && c == ':')))
			return false;
	}
	return true;
}

bool expo_metric_name_ok(const char *name)
{
	return name_ok(name, true);
}

bool expo_label_name_ok(const char *name)
{
	return name_ok(name, false) && strncmp(name, "__", 2) != 0;
}

void expo_help_text(str_t *out, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (*p == '\\')
			str_cat(out, "\\\\");
		else if (*p == '\n')
			str_cat(out, "\\n");
		else
			str_putc(out, *p);
	}
}

void expo_label_value(str_t *out, const char *value)
{
	const unsigned char *p = (const unsigned char *)value;
	size_t left = strlen(value);

	while (left > 0) {
		size_t n = 1;
		if (*p == '\\')
			str_cat(out, "\\\\");
		else if (*p == '"')
			str_cat(out, "\\\"");
		else if (*p == '\n')
			str_cat(out, "\\n");
		else if (*p < 0x80)
			str_putc(out, *p);
		else if ((n = str_utf8_len(p, left)) > 0)
			str_append(out, p, n);
		else {
			str_cat(out, "\xef\xbf\xbd");	/* U+FFFD */
			n = 1;
		}
		p += n;
		left -= n;
	}
}

void expo_number(str_t *out, double v)
{
	char buf[40];

	if (isnan(v)) {
		str_cat(out, "NaN");
		return;
	}
	if (isinf(v)) {
		str_cat(out, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == 0) {
		str_cat(out, "0");	/* -0 too */
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		(void)bfmt(buf, sizeof(buf), "%lld", (long long)v);
		str_cat(out, buf);
		return;
	}
	/* The shortest of %.1g ... %.17g that reads back exactly. */
	for (int prec = 1; prec <= 17; prec++) {
		(void)bfmt(buf, sizeof(buf), "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	str_cat(out, buf);
}

void expo_family(str_t *out, const char *name, const char *help,
    expo_type_t type)
{
	if (!expo_metric_name_ok(name))
		log_panic("metrics: bad metric name \"%s\"", name);
	str_catf(out, "# HELP %s ", name);
	expo_help_text(out, help);
	str_catf(out, "\n# TYPE %s %s\n", name,
	    type == EXPO_COUNTER ? "counter" : "gauge");
}

void expo_sample(str_t *out, const char *name, const char *const *labels,
    double value)
{
	str_cat(out, name);
	if (labels != NULL && labels[0] != NULL) {
		str_putc(out, '{');
		for (size_t i = 0; labels[i] != NULL && labels[i + 1] != NULL;
		    i += 2) {
			if (!expo_label_name_ok(labels[i]))
				log_panic("metrics: bad label name \"%s\"", labels[i]);
			if (i > 0)
				str_putc(out, ',');
			str_catf(out, "%s=\"", labels[i]);
			expo_label_value(out, labels[i + 1]);
			str_putc(out, '"');
		}
		str_putc(out, '}');
	}
	str_putc(out, ' ');
	expo_number(out, value);
	str_putc(out, '\n');
}
