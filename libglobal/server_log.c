/* Logging multi-line text (configuration error lists) one line at a
 * time: the logger turns a newline into '?', and log tools want one
 * message a line anyway. */
#include <string.h>
#include "log.h"
#include "server.h"

static void log_level(enum log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void log_level(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(lvl, fmt, ap);
	va_end(ap);
}

void log_lines(enum log_level lvl, const char *text)
{
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		size_t len = nl ? (size_t)(nl - text) : strlen(text);
		if (len > 0)
			log_level(lvl, "%.*s", (int)len, text);
		text += len + (nl != NULL);
	}
}
