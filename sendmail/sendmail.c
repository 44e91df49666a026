/* sendmail: the sendmail-compatible command line of Petrel.
 *
 *   sendmail [options] [recipient ...]     send a message (stdin)
 *   mailq, sendmail -bp                   list the queue (postq)
 *   newaliases, sendmail -bi              rebuild the aliases (postalias)
 *   sendmail -q                           flush the queue (petrel flush)
 *   sendmail -bs                          SMTP on stdin/stdout (smtpd -S)
 *   sendmail -bd                          start the mail system
 *
 * A message goes to postdrop(1) as a submission stream on a pipe
 * (doc/submission.md); postdrop writes it into maildrop/ and exits 0 once
 * it is on disk, and so do we.  Errors: a message on stderr and a
 * sysexits(3) status.  See sendmail(1). */
#include "config.h"
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "addr.h"
#include "attr.h"
#include "cmd_log.h"
#include "dsn_notify.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "qfile.h"
#include "server.h"
#include "str.h"
#include "stream.h"
#include "submit.h"

enum mode {
	MODE_SEND,		/* -bm, the default */
	MODE_LIST,		/* -bp, mailq */
	MODE_ALIASES,		/* -bi, -I, newaliases */
	MODE_FLUSH,		/* -q */
	MODE_SMTP,		/* -bs */
	MODE_DAEMON,		/* -bd */
	MODE_NOTHING,		/* -q30m without -bd: Petrel runs its queue */
};

static struct {
	enum mode mode;
	const char *config;	/* -C */
	const char *sender;	/* -f, -r */
	const char *full_name;	/* -F */
	int notify;		/* -N, 0 = not given */
	int ret;		/* -R */
	const char *envid;	/* -V */
	bool extract;		/* -t */
	bool ignore_dots;	/* -i, -oi */
	bool interval;		/* -q with an interval */
} opt;

__attribute__((noreturn, format(printf, 2, 3)))
static void die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(LOG_LVL_FATAL, fmt, ap);
	va_end(ap);
	exit(status);
}

static void usage(void)
{
	fprintf(stderr,
	    "usage: sendmail [-tiv] [-f sender] [-F full_name] [-N dsn] "
	    "[-R ret] [-V envid]\n"
	    "                [-C config] [-B type] [-o option] recipient ...\n"
	    "       sendmail -bp | -bi | -bs | -bd | -q\n");
	exit(EX_USAGE);
}

/* -b: the mode letter. */
static void set_b(const char *arg)
{
	if (strcmp(arg, "m") == 0)
		opt.mode = MODE_SEND;
	else if (strcmp(arg, "p") == 0)
		opt.mode = MODE_LIST;
	else if (strcmp(arg, "i") == 0)
		opt.mode = MODE_ALIASES;
	else if (strcmp(arg, "s") == 0)
		opt.mode = MODE_SMTP;
	else if (strcmp(arg, "d") == 0)
		opt.mode = MODE_DAEMON;
	else
		die(EX_USAGE, "-b%s is not supported (supported: -bm, -bp, -bi, "
		    "-bs, -bd)", arg);
}

/* -q: flush, or an interval (a daemon option). */
static void set_q(const char *arg)
{
	if (*arg == 0) {
		opt.mode = MODE_FLUSH;
		return;
	}
	if (strchr("RSIL", *arg) != NULL || *arg == '!')
		die(EX_USAGE, "-q%s: flushing only some messages is not "
		    "supported; use sendmail -q to flush the whole queue", arg);
	if (arg[strspn(arg, "0123456789smhdw")] != 0)
		die(EX_USAGE, "-q%s: bad queue interval", arg);
	opt.interval = true;
}

/* -o: sendmail.cf options; only -oi means something to us. */
static void set_o(const char *arg)
{
	if (strcmp(arg, "i") == 0)
		opt.ignore_dots = true;
	else
		log_debug("ignoring option -o%s", arg);
}

/* Parses the options the sendmail way: letters may be grouped, a value
 * is attached or the next argument, and the options end at the first
 * argument that is not one (or at "--").  Returns the index of the first
 * recipient. */
static int parse_options(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		char *p = argv[i];

		if (p[0] != '-' || p[1] == 0)
			break;
		if (strcmp(p, "--") == 0)
			return i + 1;
		for (p++; *p;) {
			int c = *p++;
			const char *val = NULL;

			/* Options that take a value. */
			if (strchr("BCFLNORVXbefhopr", c) != NULL) {
				if (*p)
					val = p;
				else if (i + 1 < argc)
					val = argv[++i];
				else
					die(EX_USAGE, "option -%c needs a value", c);
				p = "";
			}
			switch (c) {
			case 'B':
				if (strcasecmp(val, "7bit") != 0 &&
				    strcasecmp(val, "8bitmime") != 0)
					die(EX_USAGE, "-B %s: the body type is "
					    "7BIT or 8BITMIME", val);
				break;
			case 'C': opt.config = val; break;
			case 'F':
				if (!submit_full_name_ok(val, strlen(val)))
					die(EX_USAGE, "-F: bad full name (no "
					    "control characters, at most %d "
					    "bytes)", SUBMIT_FULL_NAME_MAX);
				opt.full_name = val;
				break;
			case 'N':
				if ((opt.notify = dsn_notify_parse(val,
				    strlen(val), DSN_NOTIFY_LIST, NULL)) < 0)
					die(EX_USAGE, "-N %s: expected never, or "
					    "one or more of success, failure, "
					    "delay separated by commas", val);
				break;
			case 'R':
				if ((opt.ret = submit_parse_ret(val)) < 0)
					die(EX_USAGE, "-R %s: expected full or "
					    "hdrs", val);
				break;
			case 'V':
				if (!submit_envid_ok(val, NULL))
					die(EX_USAGE, "-V: bad envelope ID "
					    "(printable ASCII without spaces, "
					    "at most %d bytes as xtext)",
					    ADDR_ENVID_MAX);
				opt.envid = val;
				break;
			case 'b': set_b(val); break;
			case 'f': case 'r': opt.sender = val; break;
			case 'o': set_o(val); break;
			case 'q': set_q(p); p = ""; break;
			case 'I': opt.mode = MODE_ALIASES; break;
			case 'i': opt.ignore_dots = true; break;
			case 't': opt.extract = true; break;
			case 'v': log_verbose++; break;
			/* Accepted and ignored, as other implementations do. */
			case 'L': case 'O': case 'X': case 'e': case 'h':
			case 'p': case 'G': case 'U': case 'm': case 'n':
				break;
			default:
				log_error("unsupported option -%c", c);
				usage();
			}
		}
	}
	return i;
}

/* The configuration directory of -C (a directory, or a main.cf in it),
 * MAIL_CONFIG, or the default. */
static char *config_dir(void)
{
	const char *c = opt.config ? opt.config : getenv("MAIL_CONFIG");
	struct stat st;
	char *copy, *dir;

	if (c == NULL || *c == 0)
		return xstrdup(DEF_CONFIG_DIR);
	if (stat(c, &st) < 0)
		die(EX_CONFIG, "configuration %s: %s", c, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return xstrdup(c);
	copy = xstrdup(c);
	dir = xstrdup(dirname(copy));
	free(copy);
	return dir;
}

/* Runs command_directory/NAME (or path) with args and waits; returns its
 * exit status, or dies if it cannot run.  what says what it is for. */
static int run(const char *path, char *const args[], const char *what)
{
	pid_t pid;
	int st;

	if (access(path, X_OK) < 0)
		die(EX_UNAVAILABLE, "cannot %s: %s is not installed (%s)", what,
		    path, strerror(errno));
	if ((pid = fork()) < 0)
		die(EX_OSERR, "fork: %s", strerror(errno));
	if (pid == 0) {
		execv(path, args);
		log_error("cannot run %s: %s", path, strerror(errno));
		_exit(EX_UNAVAILABLE);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die(EX_OSERR, "waitpid: %s", strerror(errno));
	if (WIFSIGNALED(st))
		die(EX_SOFTWARE, "%s was killed by signal %d", path,
		    WTERMSIG(st));
	return WEXITSTATUS(st);
}

static char *command_path(const char *name)
{
	str_t p = STR_INIT;
	str_setf(&p, "%s/%s", pconfig_get_str("command_directory"), name);
	return str_steal(&p);
}

static int do_list(void)
{
	char *path = command_path("postq");
	char *args[] = { "postq", NULL };

	if (access(path, X_OK) < 0)
		die(EX_UNAVAILABLE, "cannot list the queue: %s is not installed "
		    "yet (mailq and sendmail -bp run postq)", path);
	execv(path, args);
	die(EX_UNAVAILABLE, "cannot run %s: %s", path, strerror(errno));
}

static int do_aliases(void)
{
	char *path = command_path("postalias");
	char *list = xstrdup(pconfig_get_str("alias_database")), *p = list;
	char *item;
	int rc = 0;

	while ((item = str_token(&p, ", \t\n")) != NULL) {
		char *args[] = { "postalias", item, NULL };
		if (access(path, X_OK) < 0)
			die(EX_UNAVAILABLE, "cannot rebuild %s: %s is not "
			    "installed yet (newaliases and sendmail -bi run "
			    "postalias)", item, path);
		if (run(path, args, "rebuild the aliases") != 0)
			rc = EX_UNAVAILABLE;
	}
	free(list);
	free(path);
	return rc;
}

static int do_petrel(const char *cmd, const char *what)
{
	char *path = command_path("petrel");
	char *args[] = { "petrel", (char *)cmd, NULL };
	int rc = run(path, args, what);

	free(path);
	/* petrel said why. */
	return rc == 0 ? 0 : EX_UNAVAILABLE;
}

static int do_smtp(void)
{
	str_t p = STR_INIT;
	char *args[] = { "smtpd", "-S", NULL };

	str_setf(&p, "%s/smtpd", pconfig_get_str("daemon_directory"));
	if (access(str_cstr(&p), X_OK) < 0)
		die(EX_UNAVAILABLE, "SMTP on standard input (-bs) is not "
		    "supported yet: %s is not installed", str_cstr(&p));
	execv(str_cstr(&p), args);
	die(EX_UNAVAILABLE, "cannot run %s: %s", str_cstr(&p), strerror(errno));
}

/* ---- Sending --------------------------------------------------------- */

static int pd_fd = -1;		/* the pipe to postdrop */
static pid_t pd_pid;

/* Waits for postdrop; returns its exit status. */
static int postdrop_wait(void)
{
	int st;

	if (pd_fd >= 0) {
		close(pd_fd);
		pd_fd = -1;
	}
	while (waitpid(pd_pid, &st, 0) < 0)
		if (errno != EINTR)
			die(EX_OSERR, "waitpid: %s", strerror(errno));
	if (WIFSIGNALED(st)) {
		log_error("postdrop was killed by signal %d; the message was "
		    "not sent", WTERMSIG(st));
		return EX_TEMPFAIL;
	}
	return WEXITSTATUS(st);
}

/* Sends one message of the stream.  If postdrop went away it has said
 * why: we exit with its status. */
static void pd_send(str_t *msg)
{
	if (attr_write_fd(pd_fd, str_cstr(msg), str_len(msg), -1) < 0) {
		int rc = postdrop_wait();
		if (rc == 0)
			die(EX_SOFTWARE, "postdrop exited before it got the "
			    "whole message");
		exit(rc);
	}
	str_reset(msg);
}

static void pd_start(void)
{
	char *path = command_path("postdrop");
	char *args[] = { "postdrop", NULL, NULL };
	int fds[2];

	if (log_verbose)
		args[1] = "-v";
	if (access(path, X_OK) < 0)
		die(EX_UNAVAILABLE, "cannot send: %s: %s", path, strerror(errno));
	if (pipe(fds) < 0)
		die(EX_OSERR, "pipe: %s", strerror(errno));
	if ((pd_pid = fork()) < 0)
		die(EX_OSERR, "fork: %s", strerror(errno));
	if (pd_pid == 0) {
		close(fds[1]);
		if (fds[0] != 0) {
			dup2(fds[0], 0);
			close(fds[0]);
		}
		execv(path, args);
		log_error("cannot run %s: %s", path, strerror(errno));
		_exit(EX_UNAVAILABLE);
	}
	close(fds[0]);
	pd_fd = fds[1];
	free(path);
}

/* The recipients of the command line, each argument an address list
 * ("Name <a@b>, c"), in external form. */
static size_t parse_recipients(int argc, char **argv, char ***out)
{
	char **v = NULL;
	size_t n = 0, cap = 0;
	str_t ext = STR_INIT, internal = STR_INIT;
	submit_err_t err;

	for (int i = 0; i < argc; i++) {
		addr_hdr_list_t list = ADDR_HDR_LIST_INIT;
		addr_hdr_parse(argv[i], strlen(argv[i]), &list);
		for (size_t k = 0; k < list.n; k++) {
			const addr_hdr_entry_t *e = &list.v[k];
			if (e->flags & ADDR_H_BAD)
				die(EX_NOUSER, "bad recipient address syntax "
				    "in '%s': %s", argv[i], e->error);
			str_reset(&ext);
			addr_externalize(e->addr, &ext);
			if (!submit_addr(str_cstr(&ext), str_len(&ext), false,
			    &internal, &err))
				die(err.status, "%s", err.text);
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				v = xreallocarray(v, cap, sizeof(*v));
			}
			v[n++] = xstrdup(str_cstr(&ext));
		}
		if (list.dropped > 0 || n > SUBMIT_RCPT_MAX)
			die(EX_USAGE, "too many recipients (at most %d)",
			    SUBMIT_RCPT_MAX);
		addr_hdr_list_free(&list);
	}
	str_release(&ext);
	str_release(&internal);
	*out = v;
	return n;
}

/* The sender: -f (angle brackets allowed; "<>" is the null sender), or
 * the login name. */
static char *sender_address(void)
{
	str_t internal = STR_INIT;
	submit_err_t err;
	char *s;

	if (opt.sender == NULL) {
		struct passwd *pw = getpwuid(getuid());
		if (pw == NULL)
			die(EX_NOUSER, "cannot find the login name of uid %ld; "
			    "give a sender with -f", (long)getuid());
		return xstrdup(pw->pw_name);
	}
	s = xstrdup(opt.sender);
	{
		size_t len = strlen(s);
		if (len >= 2 && s[0] == '<' && s[len - 1] == '>') {
			memmove(s, s + 1, len - 2);
			s[len - 2] = 0;
		}
	}
	if (!submit_addr(s, strlen(s), true, &internal, &err))
		die(err.status, "%s", err.text);
	str_release(&internal);
	return s;
}

static int do_send(int nargs, char **args)
{
	char **rcpt, *sender;
	size_t nrcpt;
	str_t msg = STR_INIT, buf = STR_INIT, line = STR_INIT;
	const char *full_name = opt.full_name;
	long limit = pconfig_get_size("message_size_limit");
	uint64_t total = 0;
	stream_t *in;
	bool at_start = true, done = false, first_line = true;
	bool skip_line = false;
	str_t why = STR_INIT;

	switch (submit_user_allowed(getuid(), &why)) {
	case 1: break;
	case 0: die(EX_NOPERM, "%s", str_cstr(&why));
	default: die(EX_TEMPFAIL, "%s", str_cstr(&why));
	}
	sender = sender_address();
	nrcpt = parse_recipients(nargs, args, &rcpt);
	if (nrcpt == 0 && !opt.extract)
		die(EX_USAGE, "no recipient addresses: give them as arguments, "
		    "or use -t to take them from the message header");
	if (full_name == NULL && (full_name = getenv("NAME")) != NULL &&
	    !submit_full_name_ok(full_name, strlen(full_name)))
		full_name = NULL;

	signal(SIGPIPE, SIG_IGN);
	pd_start();

	attr_put_items(&msg, ATTR_INT(SUBMIT_A_VERSION, SUBMIT_VERSION),
	    ATTR_STR(SUBMIT_A_SENDER, sender), ATTR_END);
	if (full_name)
		attr_put_str(&msg, SUBMIT_A_FULL_NAME, full_name);
	if (opt.extract)
		attr_put_int(&msg, SUBMIT_A_FLAGS, SUBMIT_F_EXTRACT);
	if (opt.envid)
		attr_put_str(&msg, SUBMIT_A_ENVID, opt.envid);
	if (opt.ret)
		attr_put_str(&msg, SUBMIT_A_RET,
		    opt.ret == QF_RET_FULL ? "FULL" : "HDRS");
	if (opt.notify)
		attr_put_int(&msg, SUBMIT_A_NOTIFY, opt.notify);
	if (nrcpt > 0) {
		attr_put_list(&msg, SUBMIT_A_RCPT, nrcpt);
		for (size_t i = 0; i < nrcpt; i++)
			attr_print(&msg, ATTR_STR(SUBMIT_A_ADDRESS, rcpt[i]),
			    ATTR_END);
	}
	attr_put_end(&msg);
	pd_send(&msg);

	/* The content: bytes as they are, except that a first line
	 * "From " (an mbox separator) is dropped, and that without -i a
	 * line holding a single dot ends the message. */
	in = stream_open(0);
	while (!done) {
		ssize_t n;
		int r = stream_getline(in, &line, SUBMIT_CHUNK);
		const char *term = r == STREAM_LINE_LF ? "\n" :
		    r == STREAM_LINE_CRLF ? "\r\n" : "";
		bool starts = at_start;

		if (r == STREAM_LINE_NONE)
			break;
		at_start = r != STREAM_LINE_MORE;
		if (first_line) {
			first_line = false;
			if (str_len(&line) >= 5 &&
			    memcmp(str_cstr(&line), "From ", 5) == 0) {
				/* Skip the rest of it too. */
				skip_line = r == STREAM_LINE_MORE;
				continue;
			}
		}
		if (skip_line) {
			skip_line = r == STREAM_LINE_MORE;
			continue;
		}
		if (!opt.ignore_dots && starts && r != STREAM_LINE_MORE &&
		    str_len(&line) == 1 && str_cstr(&line)[0] == '.')
			break;
		str_append(&buf, str_cstr(&line), str_len(&line));
		str_cat(&buf, term);
		n = (ssize_t)(str_len(&line) + strlen(term));
		done = r == STREAM_LINE_PARTIAL;
		total += (uint64_t)(n > 0 ? n : 0);
		if (limit > 0 && total > (uint64_t)limit) {
			attr_print(&msg, ATTR_STR(SUBMIT_A_ABORT,
			    "message too big"), ATTR_END);
			if (attr_write_fd(pd_fd, str_cstr(&msg), str_len(&msg),
			    -1) == 0)
				(void)postdrop_wait();
			die(EX_DATAERR, "message is too big: more than %ld bytes "
			    "(message_size_limit); the message was not sent",
			    limit);
		}
		/* Whole chunks go out; the rest waits for more. */
		while (str_len(&buf) >= SUBMIT_CHUNK ||
		    (done && str_len(&buf) > 0)) {
			size_t k = str_len(&buf) < SUBMIT_CHUNK ?
			    str_len(&buf) : SUBMIT_CHUNK;
			attr_print(&msg, ATTR_DATA(SUBMIT_A_DATA, buf.buf, k),
			    ATTR_END);
			pd_send(&msg);
			memmove(buf.buf, buf.buf + k, str_len(&buf) - k);
			str_truncate(&buf, str_len(&buf) - k);
		}
	}
	if (stream_error(in))
		die(EX_IOERR, "reading the message from standard input: %s",
		    strerror(stream_errno(in)));
	if (str_len(&buf) > 0) {
		attr_print(&msg, ATTR_DATA(SUBMIT_A_DATA, buf.buf, buf.len),
		    ATTR_END);
		pd_send(&msg);
	}
	attr_print(&msg, ATTR_LONG(SUBMIT_A_END, (int64_t)total), ATTR_END);
	pd_send(&msg);
	stream_detach(in);
	str_release(&msg);
	str_release(&buf);
	str_release(&line);
	str_release(&why);
	for (size_t i = 0; i < nrcpt; i++)
		free(rcpt[i]);
	free(rcpt);
	free(sender);
	return postdrop_wait();
}

int main(int argc, char **argv)
{
	char *base, *dir;
	int first, rc;

	log_init("sendmail");
	base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strcmp(base, "mailq") == 0)
		opt.mode = MODE_LIST;
	else if (strcmp(base, "newaliases") == 0)
		opt.mode = MODE_ALIASES;
	first = parse_options(argc, argv);
	if (opt.interval && opt.mode == MODE_SEND)
		opt.mode = MODE_NOTHING;

	dir = config_dir();
	pconfig_defer_warnings();
	if (pconfig_load(dir) < 0) {
		log_lines(LOG_LVL_ERROR, pconfig_errors());
		die(EX_CONFIG, "errors in %s/main.cf", dir);
	}
	/* Every program we run uses the same configuration. */
	if (setenv("MAIL_CONFIG", dir, 1) < 0)
		die(EX_OSERR, "setenv: %s", strerror(errno));
	cmd_log_init("sendmail");
	/* Configuration warnings go to the mail log, not to the user. */
	pconfig_log_warnings();
	log_also_stderr(1);

	switch (opt.mode) {
	case MODE_LIST: rc = do_list(); break;
	case MODE_ALIASES: rc = do_aliases(); break;
	case MODE_FLUSH: rc = do_petrel("flush", "flush the queue"); break;
	case MODE_SMTP: rc = do_smtp(); break;
	case MODE_DAEMON: rc = do_petrel("start", "start the mail system"); break;
	case MODE_NOTHING:
		log_debug("-q with an interval: ignored (Petrel runs its "
		    "queue by itself)");
		rc = 0;
		break;
	default:
		rc = do_send(argc - first, argv + first);
	}
	free(dir);
	return rc;
}
