/* postsuper's logging: errors on stderr too, one line per message
 * acted on only when asked. */
#include <stdarg.h>
#include "log.h"
#include "pconfig.h"
#include "super.h"

static bool log_set_up, echo;

void super_log_setup(bool echo_actions)
{
	const char *file = pconfig_get_str("maillog_file");

	if (file == NULL || *file == 0)
		log_to_syslog();
	else if (log_to_file(file) < 0)
		log_to_stderr();
	log_also_stderr(1);
	log_set_up = true;
	echo = echo_actions;
}

void super_log_action(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (log_set_up && !echo)
		log_also_stderr(0);
	log_vmsg(LOG_LVL_INFO, fmt, ap);
	if (log_set_up && !echo)
		log_also_stderr(1);
	va_end(ap);
}
