/* Logging set-up of the commands (cmd_log.h). */
#include "cmd_log.h"
#include "log.h"
#include "pconfig.h"
#include "str.h"

void cmd_log_init(const char *prog)
{
	str_t name = STR_INIT;

	str_setf(&name, "%s/%s", pconfig_get_str("syslog_name"), prog);
	log_init(str_cstr(&name));
	str_release(&name);
	cmd_log_target();
}

void cmd_log_target(void)
{
	const char *file = pconfig_get_str("maillog_file");

	if (file == NULL || *file == 0)
		log_to_syslog();
	else if (log_to_file(file) < 0)
		log_to_stderr();
}
