/* postdrop: write a locally submitted message into maildrop/.
 *
 *   postdrop [-v] [-c config_dir]
 *
 * Reads a submission stream (doc/submission.md) on standard input,
 * normally from sendmail(1), checks every part of it as if it came from
 * an adversary (in a system installation postdrop is set-gid
 * setgid_group and anyone can run it with any input), writes one queue
 * file into maildrop/ durably (temporary name, fsync, rename, directory
 * fsync), and tells pickup.  Exit status 0 means the message is safely
 * on disk; otherwise a sysexits(3) status and a message on stderr. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "addr.h"
#include "attr.h"
#include "cmd_log.h"
#include "dsn_notify.h"
#include "hdr_scan.h"
#include "log.h"
#include "mastercf.h"
#include "mem.h"
#include "pconfig.h"
#include "qfile.h"
#include "queue_path.h"
#include "server.h"
#include "str.h"
#include "submit.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PD_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(PD_ASAN)
/* Sanitizer builds (tests) only.  A set-gid process may not read its own
 * /proc/self/environ, where ASan looks for ASAN_OPTIONS, and
 * LeakSanitizer cannot work in a process that may not be traced: leak
 * checking is off when we run set-gid. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return getgid() != getegid() ? "detect_leaks=0" : "";
}
#endif

/* The temporary file, for the signal handler: removed if we are
 * interrupted before the commit. */
static char tmp_path[PATH_MAX];
static volatile sig_atomic_t tmp_armed;

static void on_signal(int sig)
{
	if (tmp_armed)
		unlink(tmp_path);
	/* Die of the signal (the handler was reset and the signal is not
	 * blocked in it), so that our parent knows what happened. */
	raise(sig);
	_exit(EX_TEMPFAIL);
}

__attribute__((noreturn, format(printf, 2, 3)))
static void die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LVL_FATAL, fmt, ap);
	va_end(ap);
	if (tmp_armed)
		unlink(tmp_path);
	exit(status);
}

static void usage(void)
{
	fprintf(stderr, "usage: postdrop [-v] [-c config_dir]\n");
	exit(EX_USAGE);
}

/* Set-gid and run by someone other than root: only the default
 * configuration directory or one listed in its
 * alternate_config_directories, so nobody points us at a main.cf that
 * names another queue. */
static void check_config_dir(const char *dir)
{
	char real[PATH_MAX], def[PATH_MAX];
	char *list, *p, *item;
	bool ok = false;

	if (getuid() == 0 || getgid() == getegid())
		return;
	if (realpath(dir, real) == NULL)
		die(EX_CONFIG, "configuration directory %s: %s", dir,
		    strerror(errno));
	if (realpath(DEF_CONFIG_DIR, def) != NULL && strcmp(real, def) == 0)
		return;
	/* A default main.cf that is missing or broken lists nothing. */
	list = xstrdup(pconfig_load(DEF_CONFIG_DIR) == 0 ?
	    pconfig_get_str("alternate_config_directories") : "");
	for (p = list; !ok && (item = str_token(&p, ", \t\n")) != NULL;) {
		char r2[PATH_MAX];
		ok = realpath(item, r2) != NULL && strcmp(r2, real) == 0;
	}
	free(list);
	if (!ok)
		die(EX_NOPERM, "configuration directory %s is not the default "
		    "and not listed in alternate_config_directories", dir);
}

static void trigger_pickup(const char *config_dir)
{
	str_t rel = STR_INIT, path = STR_INIT;

	if (mastercf_trigger_path(config_dir, "pickup", &rel, NULL) <= 0) {
		log_debug("master.cf has no pickup service to tell");
		str_release(&rel);
		return;
	}
	str_setf(&path, "%s/%s", pconfig_get_str("queue_directory"),
	    str_cstr(&rel));
	/* Not running: the mail waits in maildrop for the next start.  A
	 * full queue at pickup means wake-ups are pending: nothing waits. */
	if (trigger_wakeup(str_cstr(&path), TRIGGER_WAKEUP) < 0)
		log_debug("cannot tell pickup (%s): %s", str_cstr(&path),
		    strerror(errno));
	str_release(&rel);
	str_release(&path);
}

/* qfw_commit failed after the rename, because the directory could not be
 * opened to fsync it: the set-gid postdrop may write into maildrop/
 * (mode 1730) but not read it.  The file is complete and named.  An
 * fsync of the file after the rename makes the rename durable on the
 * journalling file systems (ext4, xfs, btrfs commit the rename with the
 * inode, whose ctime it changed); should a crash still lose the rename,
 * the complete file survives under its temporary name and pickup
 * restores it.  True when that is the case and the fsync worked. */
static bool commit_without_dir_fsync(qfw_t *w)
{
	const char *path = qfw_path(w), *slash = strrchr(path, '/');
	str_t dir = STR_INIT;
	struct stat st;
	int fd, e;

	if (slash == NULL || lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	str_append(&dir, path, (size_t)(slash - path));
	fd = open(str_cstr(&dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	e = errno;
	str_release(&dir);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	if (e != EACCES)
		return false;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return false;
	if (fsync(fd) < 0) {
		close(fd);
		return false;
	}
	close(fd);
	log_debug("%s: %s is not readable; synced the file after the rename",
	    qfw_id(w), QUEUE_MAILDROP);
	return true;
}

/* Reads one message of the stream; dies on anything but a message. */
static attr_msg_t *read_msg(attr_reader_t *r, const char *what)
{
	switch (attr_read_fd(r, 0, -1)) {
	case ATTR_DONE:
		return attr_reader_take(r);
	case ATTR_EOF:
		die(EX_DATAERR, "unexpected end of input before the %s; "
		    "nothing was queued", what);
	default:
		die(EX_DATAERR, "malformed input in the %s: %s; nothing was "
		    "queued", what, attr_reader_error(r));
	}
}

int main(int argc, char **argv)
{
	const char *config_dir = NULL, *s;
	str_t err = STR_INIT, addr = STR_INIT;
	queue_layout_t ql;
	attr_reader_t *r;
	attr_msg_t *env, *m;
	const attr_list_t *rcpts = NULL;
	submit_err_t serr;
	hdr_scan_t hs;
	qfw_t *w;
	int32_t version, flags = 0, notify = 0;
	int ret = QF_RET_NONE, c;
	long limit;
	uint64_t total = 0;
	size_t nrcpt = 0;
	char num[32];
	sigset_t block;

	log_init("petrel/postdrop");
	umask(022);
	signal(SIGPIPE, SIG_IGN);
	while ((c = getopt(argc, argv, "c:v")) != -1) {
		switch (c) {
		case 'c': config_dir = optarg; break;
		case 'v': log_verbose++; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (config_dir == NULL && (config_dir = getenv("MAIL_CONFIG")) == NULL)
		config_dir = DEF_CONFIG_DIR;
	pconfig_defer_warnings();
	check_config_dir(config_dir);
	if (pconfig_load(config_dir) < 0) {
		log_lines(LOG_LVL_ERROR, pconfig_errors());
		die(EX_CONFIG, "errors in %s/main.cf", config_dir);
	}
	cmd_log_init("postdrop");
	/* Configuration warnings go to the mail log, not to the user. */
	pconfig_log_warnings();
	log_also_stderr(1);

	switch (submit_user_allowed(getuid(), &err)) {
	case 1: break;
	case 0: die(EX_NOPERM, "%s", str_cstr(&err));
	default: die(EX_TEMPFAIL, "%s", str_cstr(&err));
	}
	if (queue_layout_from_config(&ql, &err) < 0)
		die(EX_CONFIG, "%s", str_cstr(&err));

	/* The envelope, checked in full before anything is written. */
	r = submit_reader();
	env = read_msg(r, "envelope");
	if (!attr_get_int(env, SUBMIT_A_VERSION, &version) ||
	    !attr_get_str(env, SUBMIT_A_SENDER, &s) ||
	    attr_find(env, SUBMIT_A_DATA) || attr_find(env, SUBMIT_A_END) ||
	    attr_find(env, SUBMIT_A_ABORT))
		die(EX_DATAERR, "malformed input: the envelope needs a version "
		    "and a sender and no content; nothing was queued");
	if (version != SUBMIT_VERSION)
		die(EX_DATAERR, "unsupported submission stream version %ld",
		    (long)version);
	attr_get_int(env, SUBMIT_A_FLAGS, &flags);
	if (flags & ~SUBMIT_F_ALL)
		die(EX_DATAERR, "unknown flags 0x%lx in the envelope",
		    (unsigned long)flags);
	attr_get_str(env, SUBMIT_A_SENDER, &s);
	if (!submit_addr(s, strlen(s), true, &addr, &serr))
		die(serr.status, "%s", serr.text);
	if (attr_get_str(env, SUBMIT_A_FULL_NAME, &s) &&
	    !submit_full_name_ok(s, strlen(s)))
		die(EX_DATAERR, "bad full name: control characters, or longer "
		    "than %d bytes", SUBMIT_FULL_NAME_MAX);
	if (attr_get_str(env, SUBMIT_A_ENVID, &s) && !submit_envid_ok(s, NULL))
		die(EX_DATAERR, "bad envelope ID: printable ASCII only, at most "
		    "%d bytes xtext-encoded", ADDR_ENVID_MAX);
	if (attr_get_str(env, SUBMIT_A_RET, &s) &&
	    (ret = submit_parse_ret(s)) < 0)
		die(EX_DATAERR, "bad RET value (FULL or HDRS)");
	if (attr_get_int(env, SUBMIT_A_NOTIFY, &notify) && (notify == 0 ||
	    !dsn_notify_valid(notify)))
		die(EX_DATAERR, "bad NOTIFY value %ld", (long)notify);
	if (attr_get_list(env, SUBMIT_A_RCPT, &rcpts))
		nrcpt = attr_list_count(rcpts);
	if (nrcpt > SUBMIT_RCPT_MAX)
		die(EX_DATAERR, "too many recipients (%zu; at most %d)", nrcpt,
		    SUBMIT_RCPT_MAX);
	if (nrcpt == 0 && !(flags & SUBMIT_F_EXTRACT))
		die(EX_USAGE, "no recipients given");
	for (size_t i = 0; i < nrcpt; i++) {
		const attr_msg_t *g = attr_list_group(rcpts, i);
		attr_get_str(g, SUBMIT_A_ADDRESS, &s);
		if (!submit_addr(s, strlen(s), false, &addr, &serr))
			die(serr.status, "%s", serr.text);
	}

	/* Interrupted from here on: remove what was written. */
	if ((w = qfw_create(&ql, QUEUE_MAILDROP, 0444, &err)) == NULL)
		die(EX_TEMPFAIL, "cannot create a file in %s/%s: %s",
		    ql.dir, QUEUE_MAILDROP, str_cstr(&err));
	bcopy_str(tmp_path, sizeof(tmp_path), qfw_path(w));
	tmp_armed = 1;
	{
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
		sigaction(SIGQUIT, &sa, NULL);
	}

	attr_get_str(env, SUBMIT_A_SENDER, &s);
	submit_addr(s, strlen(s), true, &addr, &serr);
	qfw_sender(w, str_cstr(&addr));
	if (attr_get_str(env, SUBMIT_A_ENVID, &s)) {
		str_reset(&addr);
		submit_envid_ok(s, &addr);
		qfw_envid(w, str_cstr(&addr));
	}
	if (ret != QF_RET_NONE)
		qfw_ret(w, ret);
	bfmt(num, sizeof(num), "%ld", (long)getuid());
	qfw_attr(w, MAILDROP_A_UID, num);
	if (attr_get_str(env, SUBMIT_A_FULL_NAME, &s))
		qfw_attr(w, MAILDROP_A_FULL_NAME, s);
	if (flags & SUBMIT_F_EXTRACT)
		qfw_attr(w, MAILDROP_A_EXTRACT, "yes");
	if (notify) {
		bfmt(num, sizeof(num), "%ld", (long)notify);
		qfw_attr(w, MAILDROP_A_NOTIFY, num);
	}
	for (size_t i = 0; i < nrcpt; i++) {
		qf_rcpt_in_t rin = { 0 };
		attr_get_str(attr_list_group(rcpts, i), SUBMIT_A_ADDRESS, &s);
		submit_addr(s, strlen(s), false, &addr, &serr);
		rin.address = str_cstr(&addr);
		rin.notify = notify;
		qfw_rcpt(w, &rin);
	}

	/* The content. */
	limit = pconfig_get_size("message_size_limit");
	hdr_scan_init(&hs, (size_t)pconfig_get_size("header_size_limit"),
	    pconfig_get_int("hopcount_limit"));
	for (;;) {
		const void *data;
		size_t len;
		int64_t end;

		m = read_msg(r, "message content");
		if (attr_get_str(m, SUBMIT_A_ABORT, &s)) {
			/* sendmail gave up and tells the user why itself. */
			log_debug("the client aborted the submission: %s", s);
			unlink(tmp_path);
			exit(EX_DATAERR);
		}
		if (attr_get_long(m, SUBMIT_A_END, &end)) {
			if (attr_msg_count(m) != 1 || end < 0 ||
			    (uint64_t)end != total)
				die(EX_DATAERR, "malformed input: the end says %lld "
				    "content bytes, %llu arrived; nothing was "
				    "queued", (long long)end,
				    (unsigned long long)total);
			attr_msg_free(m);
			break;
		}
		if (!attr_get_data(m, SUBMIT_A_DATA, &data, &len) ||
		    attr_msg_count(m) != 1)
			die(EX_DATAERR, "malformed input: expected content, an "
			    "end or an abort; nothing was queued");
		total += len;
		if (limit > 0 && total > (uint64_t)limit)
			die(EX_DATAERR, "message is too big: more than %ld bytes "
			    "(message_size_limit); nothing was queued", limit);
		if (!hdr_scan_feed(&hs, data, len, &serr))
			die(serr.status, "%s; nothing was queued", serr.text);
		qfw_content(w, data, len);
		attr_msg_free(m);
	}
	attr_reader_free(r);
	if (!hdr_scan_finish(&hs, &serr))
		die(serr.status, "%s; nothing was queued", serr.text);
	if (flags & SUBMIT_F_EXTRACT) {
		const hdr_rcpts_t *hr = hdr_scan_rcpts(&hs);
		if (hr->bad > 0)
			die(EX_NOUSER, "bad recipient address in the message "
			    "header: %s; nothing was queued", hr->first_bad);
		if (nrcpt == 0 && hr->good == 0)
			die(EX_NOUSER, "no recipient addresses found in the "
			    "message header (To:, Cc:, Bcc:); nothing was "
			    "queued");
	}

	/* A signal after the rename must not remove anything or change the
	 * status: the message is accepted once the commit returns. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, NULL);
	if (qfw_commit(w) < 0 && !commit_without_dir_fsync(w)) {
		tmp_armed = 0;
		die(EX_TEMPFAIL, "cannot write the message into %s/%s: %s",
		    ql.dir, QUEUE_MAILDROP, qfw_error(w));
	}
	tmp_armed = 0;
	log_debug("%s: queued in %s (%llu bytes, %zu recipients)", qfw_id(w),
	    QUEUE_MAILDROP, (unsigned long long)total, nrcpt);
	qfw_free(w);
	attr_msg_free(env);
	hdr_scan_free(&hs);
	trigger_pickup(config_dir);
	queue_layout_free(&ql);
	str_release(&err);
	str_release(&addr);
	return 0;
}
