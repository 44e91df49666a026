/* Where the commands that users run (sendmail, postdrop, petrel,
 * postsuper) send their log lines, as main.cf says: to maillog_file when
 * it is set, else to syslog; to stderr alone when the file cannot be
 * opened (a user without write access to it still sees the messages).
 *
 * main.cf must be loaded first.  These functions do not touch the
 * stderr copy (log_also_stderr) nor the configuration warnings: each
 * command decides those itself, after the call. */
#ifndef PETREL_CMD_LOG_H
#define PETREL_CMD_LOG_H

/* Names the process "SYSLOG_NAME/prog" in log lines, then
 * cmd_log_target(). */
void cmd_log_init(const char *prog);
/* Sends log lines to maillog_file, syslog or stderr as above. */
void cmd_log_target(void);

#endif
