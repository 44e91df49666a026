/* Logging to syslog (mail facility), a file, or stderr.
 *
 * Lines follow Postfix's layout so log tools read them:
 *   "Nov 22 10:30:00 host petrel/qmgr[123]: warning: text"
 * (the date/host prefix only for file output; syslog adds its own).
 * log_fatal() logs and exits 1 (a clean exit: configuration or input the
 * process cannot work with); log_panic() logs and aborts (a broken
 * invariant: a bug). */
#ifndef PETREL_LOG_H
#define PETREL_LOG_H
#include <stdarg.h>
#include <stddef.h>

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARNING,
	LOG_LVL_ERROR, LOG_LVL_FATAL, LOG_LVL_PANIC };

/* Program name in log lines, e.g. "petrel/qmgr".  Logging goes to stderr
 * until one of the log_to_* calls says otherwise. */
void log_init(const char *progname);
const char *log_progname(void);
void log_to_stderr(void);
void log_to_syslog(void);
/* The syslog facility by name (mail, daemon, user, local0..local7; the
 * default is mail), for log_to_syslog now and later; -1 for a name that
 * is none of those. */
int log_set_syslog_facility(const char *name);
/* Appends to a file (maillog_file); returns -1 with errno on failure. */
int log_to_file(const char *path);
/* Opens the file of log_to_file again (after it was renamed); 0 when
 * not logging to a file; -1 with errno (the old descriptor stays). */
int log_reopen(void);
/* The file's descriptor, or -1 when not logging to a file. */
int log_file_fd(void);
/* Lines for the file go as one datagram each to fd (a socket whose
 * reader, master, writes them into its own descriptor of the file); the
 * file opened by log_to_file is used only when a send fails (master
 * gone).  -1 turns it off. */
void log_relay_to(int fd);
/* Bytes relayed from another process, written as they are. */
void log_write_raw(const char *buf, size_t len);
/* Also copy every line to stderr (for commands run by a person). */
void log_also_stderr(int on);
/* 0 = no debug lines; each -v adds one. */
extern int log_verbose;
/* Hook called by log_fatal before exit (e.g. remove a pid file). */
void log_set_fatal_hook(void (*hook)(void));

void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void log_panic(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void log_vmsg(enum log_level lvl, const char *fmt, va_list ap);

#endif
