/* petrel logrotate: rotation of maillog_file.
 *
 * 1. maillog_file is renamed to FILE.SUFFIX (strftime of
 *    maillog_file_rotate_suffix); nothing is copied, no line is lost:
 *    whoever still has the old file open keeps appending to it.
 * 2. master gets SIGUSR1 and opens FILE again; it is the only process
 *    that writes the file for the daemons (master_log.c), so from then
 *    on every daemon's next line is in the new file.  We wait (bounded)
 *    until the new file exists.
 * 3. The renamed file is compressed (maillog_file_compressor FILE.SUFFIX).
 * 4. Of the renamed files (FILE.SUFFIX, FILE.SUFFIX.EXT), the newest
 *    maillog_file_rotate_count are kept; the names are compared as
 *    strings, which is their age order for the default suffix.  Only a
 *    name whose suffix is made of digits, '-' and '_' (and one
 *    compressor extension) counts as a rotated file: nothing else in
 *    the directory is touched. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "petrel_logrotate.h"
#include "str.h"

#define REOPEN_WAIT_MS	10000
#define STEP_MS		20
#define MAX_ROTATED	10000	/* names looked at when pruning */

/* "20261126-1230.gz" after BASE. : digits, '-', '_', then at most one
 * ".ext" of letters and digits. */
static int rotated_suffix(const char *s)
{
	const char *p = s;

	while (isdigit((unsigned char)*p) || *p == '-' || *p == '_')
		p++;
	if (p == s || !isdigit((unsigned char)s[0]))
		return 0;
	if (*p == 0)
		return 1;
	if (*p++ != '.' || *p == 0)
		return 0;
	while (isalnum((unsigned char)*p))
		p++;
	return *p == 0;
}

static int cmp_desc(const void *a, const void *b)
{
	return -strcmp(*(char *const *)a, *(char *const *)b);
}

static int prune(const char *file, long keep)
{
	const char *slash = strrchr(file, '/');
	str_t dir = STR_INIT, path = STR_INIT;
	const char *base = slash ? slash + 1 : file;
	size_t blen = strlen(base), n = 0;
	char **names;
	struct dirent *d;
	DIR *dp;
	int rc = 0;

	if (keep <= 0)
		return 0;
	if (slash == file)
		str_set(&dir, "/");
	else if (slash)
		str_append(&dir, file, (size_t)(slash - file));
	else
		str_set(&dir, ".");
	if ((dp = opendir(str_cstr(&dir))) == NULL) {
		log_error("logrotate: %s: %s", str_cstr(&dir), strerror(errno));
		str_release(&dir);
		return 1;
	}
	names = xcalloc(MAX_ROTATED, sizeof(char *));
	while ((d = readdir(dp)) != NULL && n < MAX_ROTATED) {
		if (strncmp(d->d_name, base, blen) == 0 && d->d_name[blen] == '.' &&
		    rotated_suffix(d->d_name + blen + 1))
			names[n++] = xstrdup(d->d_name);
	}
	closedir(dp);
	qsort(names, n, sizeof(char *), cmp_desc);
	for (size_t i = 0; i < n; i++) {
		if (i >= (size_t)keep) {
			str_setf(&path, "%s/%s", str_cstr(&dir), names[i]);
			if (unlink(str_cstr(&path)) < 0 && errno != ENOENT) {
				log_error("logrotate: cannot remove %s: %s",
				    str_cstr(&path), strerror(errno));
				rc = 1;
			} else {
				log_info("logrotate: removed %s (maillog_file_rotate_count "
				    "= %ld)", str_cstr(&path), keep);
			}
		}
		free(names[i]);
	}
	free(names);
	str_release(&dir);
	str_release(&path);
	return rc;
}

static int compress(const char *compressor, const char *file)
{
	int status;
	pid_t pid;

	if ((pid = fork()) < 0) {
		log_error("logrotate: fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		char *argv[] = { (char *)compressor, (char *)file, NULL };
		execvp(compressor, argv);
		log_error("logrotate: maillog_file_compressor %s: %s", compressor,
		    strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			log_error("logrotate: waitpid: %s", strerror(errno));
			return 1;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_error("logrotate: %s %s failed (status %d); %s stays as it is",
		    compressor, file, status, file);
		return 1;
	}
	return 0;
}

int petrel_logrotate(pid_t master_pid)
{
	const char *file = pconfig_get_str("maillog_file");
	const char *fmt = pconfig_get_str("maillog_file_rotate_suffix");
	const char *compressor = pconfig_get_str("maillog_file_compressor");
	char suffix[256];
	str_t rotated = STR_INIT;
	struct stat st;
	struct tm tm;
	time_t now = time(NULL);
	int rc = 0;

	if (*file == 0) {
		log_error("logrotate: maillog_file is not set: the logs go to syslog; "
		    "rotate them with the syslog daemon's tools");
		return 1;
	}
	if (lstat(file, &st) < 0) {
		log_error("logrotate: maillog_file %s: %s", file, strerror(errno));
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		log_error("logrotate: maillog_file %s is not a regular file; "
		    "nothing to rotate", file);
		return 1;
	}
	localtime_r(&now, &tm);
	if (*fmt == 0 || strftime(suffix, sizeof(suffix), fmt, &tm) == 0 ||
	    strchr(suffix, '/') != NULL) {
		log_error("logrotate: maillog_file_rotate_suffix '%s' gives no "
		    "usable file name suffix", fmt);
		return 1;
	}
	str_setf(&rotated, "%s.%s", file, suffix);
	if (lstat(str_cstr(&rotated), &st) == 0) {
		log_error("logrotate: %s already exists (a rotation in the same "
		    "second?); nothing done", str_cstr(&rotated));
		str_release(&rotated);
		return 1;
	}
	if (rename(file, str_cstr(&rotated)) < 0) {
		log_error("logrotate: rename %s to %s: %s", file, str_cstr(&rotated),
		    strerror(errno));
		str_release(&rotated);
		return 1;
	}
	if (master_pid > 0) {
		int waited = 0;
		if (kill(master_pid, SIGUSR1) < 0) {
			log_error("logrotate: kill %ld: %s", (long)master_pid,
			    strerror(errno));
			rc = 1;
		}
		/* master opens (creates) the file again, then logs there. */
		while (rc == 0 && lstat(file, &st) < 0 && waited < REOPEN_WAIT_MS) {
			struct timespec ts = { 0, STEP_MS * 1000000L };
			nanosleep(&ts, NULL);
			waited += STEP_MS;
		}
		if (rc == 0 && waited >= REOPEN_WAIT_MS) {
			log_error("logrotate: master (pid %ld) did not open %s again "
			    "within %d s", (long)master_pid, file, REOPEN_WAIT_MS / 1000);
			rc = 1;
		}
	}
	(void)log_reopen();
	log_info("logrotate: %s renamed to %s%s", file, str_cstr(&rotated),
	    master_pid > 0 ? "" : " (the mail system is not running)");
	if (*compressor && compress(compressor, str_cstr(&rotated)) != 0)
		rc = 1;
	if (prune(file, pconfig_get_int("maillog_file_rotate_count")) != 0)
		rc = 1;
	str_release(&rotated);
	return rc;
}
