#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "log.h"

int log_verbose;

static char progname[64] = "petrel";
static enum { TO_STDERR, TO_SYSLOG, TO_FILE } target = TO_STDERR;
static int log_fd = -1;
static char log_path[PATH_MAX];	/* what log_to_file opened, for log_reopen */
static int relay_fd = -1;	/* master's log socket (log_relay_to) */
static int also_stderr;
static int syslog_facility = LOG_MAIL;
static void (*fatal_hook)(void);
static int in_fatal;
/* Looked up once, not for every line: the process id (again in a child
 * after fork) and the host name. */
static long my_pid;
static char my_host[64];

static void forget_pid(void)
{
	my_pid = 0;
}

static long log_pid(void)
{
	static bool hooked;

	if (!hooked) {
		pthread_atfork(NULL, NULL, forget_pid);
		hooked = true;
	}
	if (my_pid == 0)
		my_pid = (long)getpid();
	return my_pid;
}

static const char *log_host(void)
{
	if (my_host[0] == 0) {
		if (gethostname(my_host, sizeof(my_host) - 1) < 0 || my_host[0] == 0)
			snprintf(my_host, sizeof(my_host), "localhost");
		my_host[sizeof(my_host) - 1] = 0;
	}
	return my_host;
}

static void write_all(int fd, const char *buf, size_t len);

void log_init(const char *name)
{
	snprintf(progname, sizeof(progname), "%s", name);
}

const char *log_progname(void)
{
	return progname;
}

void log_to_stderr(void)
{
	target = TO_STDERR;
}

void log_to_syslog(void)
{
	openlog(progname, LOG_PID | LOG_NDELAY, syslog_facility);
	target = TO_SYSLOG;
}

static const struct {
	const char *name;
	int code;
} facilities[] = {
	{ "mail", LOG_MAIL }, { "daemon", LOG_DAEMON }, { "user", LOG_USER },
	{ "local0", LOG_LOCAL0 }, { "local1", LOG_LOCAL1 },
	{ "local2", LOG_LOCAL2 }, { "local3", LOG_LOCAL3 },
	{ "local4", LOG_LOCAL4 }, { "local5", LOG_LOCAL5 },
	{ "local6", LOG_LOCAL6 }, { "local7", LOG_LOCAL7 },
};

int log_set_syslog_facility(const char *name)
{
	for (size_t i = 0; i < sizeof(facilities) / sizeof(facilities[0]); i++)
		if (strcasecmp(name, facilities[i].name) == 0) {
			if (facilities[i].code != syslog_facility) {
				syslog_facility = facilities[i].code;
				/* Already logging there: from now on with the
				 * new facility. */
				if (target == TO_SYSLOG)
					log_to_syslog();
			}
			return 0;
		}
	return -1;
}

int log_to_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (log_fd >= 0)
		close(log_fd);
	log_fd = fd;
	target = TO_FILE;
	if (path != log_path)
		snprintf(log_path, sizeof(log_path), "%s", path);
	return 0;
}

int log_reopen(void)
{
	if (target != TO_FILE || log_path[0] == 0)
		return 0;
	return log_to_file(log_path);
}

int log_file_fd(void)
{
	return target == TO_FILE ? log_fd : -1;
}

void log_relay_to(int fd)
{
	relay_fd = fd;
}

void log_write_raw(const char *buf, size_t len)
{
	if (target == TO_FILE)
		write_all(log_fd, buf, len);
	else if (target == TO_STDERR)
		write_all(2, buf, len);
	else
		syslog(LOG_INFO, "%.*s", (int)len, buf);
}

void log_also_stderr(int on)
{
	also_stderr = on;
}

void log_set_fatal_hook(void (*hook)(void))
{
	fatal_hook = hook;
}

static const char *const lvl_prefix[] = {
	[LOG_LVL_DEBUG] = "", [LOG_LVL_INFO] = "",
	[LOG_LVL_WARNING] = "warning: ", [LOG_LVL_ERROR] = "error: ",
	[LOG_LVL_FATAL] = "fatal: ", [LOG_LVL_PANIC] = "panic: ",
};

static const int lvl_syslog[] = {
	[LOG_LVL_DEBUG] = LOG_DEBUG, [LOG_LVL_INFO] = LOG_INFO,
	[LOG_LVL_WARNING] = LOG_WARNING, [LOG_LVL_ERROR] = LOG_ERR,
	[LOG_LVL_FATAL] = LOG_CRIT, [LOG_LVL_PANIC] = LOG_CRIT,
};

/* Writes the whole buffer; log output must not be lost to a short write. */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

void log_vmsg(enum log_level lvl, const char *fmt, va_list ap)
{
	char text[4096];
	char line[4400];
	int saved = errno;
	size_t len;

	if (lvl == LOG_LVL_DEBUG && log_verbose == 0)
		return;
	vsnprintf(text, sizeof(text), fmt, ap);
	/* A trailing newline (error lists end with one) is not part of the
	 * message. */
	for (size_t n = strlen(text); n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'); n--)
		text[n - 1] = 0;
	/* Control characters from untrusted input must not forge log lines. */
	for (char *p = text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';

	if (target == TO_SYSLOG) {
		syslog(lvl_syslog[lvl], "%s%s", lvl_prefix[lvl], text);
	} else {
		char stamp[32] = "";
		if (target == TO_FILE) {
			time_t now = time(NULL);
			struct tm tm;
			localtime_r(&now, &tm);
			strftime(stamp, sizeof(stamp), "%b %e %H:%M:%S ", &tm);
			snprintf(line, sizeof(line), "%s%s %s[%ld]: %s%s\n", stamp,
			    log_host(), progname, log_pid(), lvl_prefix[lvl], text);
		} else {
			snprintf(line, sizeof(line), "%s[%ld]: %s%s\n", progname,
			    log_pid(), lvl_prefix[lvl], text);
		}
		len = strlen(line);
		if (target == TO_FILE && relay_fd >= 0) {
			/* One datagram a line: lines of many processes never
			 * mix.  Master gone: the file we opened ourselves. */
			ssize_t n;
			do
				n = send(relay_fd, line, len, MSG_NOSIGNAL);
			while (n < 0 && errno == EINTR);
			if (n == (ssize_t)len)
				goto copied;
			relay_fd = -1;
		}
		write_all(target == TO_FILE ? log_fd : 2, line, len);
	copied:;
	}
	if (also_stderr && target != TO_STDERR) {
		snprintf(line, sizeof(line), "%s: %s%s\n", progname,
		    lvl_prefix[lvl], text);
		write_all(2, line, strlen(line));
	}
	errno = saved;
}

#define LOG_BODY(lvl) do { va_list ap; va_start(ap, fmt); \
	log_vmsg(lvl, fmt, ap); va_end(ap); } while (0)

void log_debug(const char *fmt, ...) { LOG_BODY(LOG_LVL_DEBUG); }
void log_info(const char *fmt, ...) { LOG_BODY(LOG_LVL_INFO); }
void log_warning(const char *fmt, ...) { LOG_BODY(LOG_LVL_WARNING); }
void log_error(const char *fmt, ...) { LOG_BODY(LOG_LVL_ERROR); }

void log_fatal(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_FATAL);
	if (fatal_hook && !in_fatal) {
		in_fatal = 1;
		fatal_hook();
	}
	exit(1);
}

void log_panic(const char *fmt, ...)
{
	LOG_BODY(LOG_LVL_PANIC);
	abort();
}
