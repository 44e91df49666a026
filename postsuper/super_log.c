/* postsuper's logging: errors on stderr too, one line per message
 * acted on only when asked. */
#include <stdarg.h>
#include "cmd_log.h"
#include "log.h"
#include "super.h"

static bool log_set_up, echo;

void super_log_setup(bool echo_actions)
{
	cmd_log_target();
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
