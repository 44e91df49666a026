/* test-agent: a scripted delivery agent for tests, run by master like any
 * agent (doc/protocol-delivery.md section 9).
 *
 *   test  unix  -  n  n  -  -  /path/test-agent [rules=FILE] [log=FILE]
 *
 * (Arguments are words, not options: the daemon skeleton owns the
 * options.)  Each recipient gets the action of the first rule matching it,
 * else of its local part's leading word, else "ok". */
#define _GNU_SOURCE 1	/* FNM_CASEFOLD on glibc */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "delivery.h"
#include "dict.h"
#include "file.h"
#include "log.h"
#include "mem.h"
#include "server.h"
#include "str.h"

enum act {
	A_OK, A_RELAY, A_DEFER, A_BOUNCE, A_CONN_FAIL, A_SITE_FAIL, A_HANG,
	A_CRASH, A_GARBAGE, A_SLOW, A_COUNT
};

static const char *const act_names[A_COUNT] = {
	"ok", "relay", "defer", "bounce", "conn-fail", "site-fail", "hang",
	"crash", "garbage", "slow",
};

typedef struct rule {
	char *pattern;		/* glob on the address, or NULL */
	char *nexthop;		/* glob on the nexthop, or NULL */
	enum act act;
	char *status;		/* or NULL */
	char *text;		/* or NULL */
} rule_t;

static rule_t *rules;
static size_t nrules;
static const char *rules_path;
static const char *log_path;

static int act_parse(const char *s)
{
	for (int i = 0; i < A_COUNT; i++)
		if (strcmp(s, act_names[i]) == 0)
			return i;
	return -1;
}

static int rule_line(char *line, const char *file, int lineno, void *ctx,
    str_t *err)
{
	char *cp = line, *pat, *act, *status, *text;
	rule_t r;
	int a;
	(void)ctx;

	pat = str_token(&cp, " \t");
	act = str_token(&cp, " \t");
	if (!pat || !act || (a = act_parse(act)) < 0) {
		str_setf(err, "%s:%d: expected PATTERN ACTION [STATUS] [TEXT]",
		    file, lineno);
		return -1;
	}
	memset(&r, 0, sizeof(r));
	r.act = (enum act)a;
	if (strncmp(pat, "nexthop:", 8) == 0)
		r.nexthop = xstrdup(pat + 8);
	else
		r.pattern = xstrdup(pat);
	status = str_token(&cp, " \t");
	if (status && strcmp(status, "-") != 0)
		r.status = xstrdup(status);
	text = cp ? str_trim(cp) : NULL;
	if (text && *text)
		r.text = xstrdup(text);
	rules = xreallocarray(rules, nrules + 1, sizeof(*rules));
	rules[nrules++] = r;
	return 0;
}

static void post_jail(void *ctx)
{
	str_t err = STR_INIT;
	(void)ctx;

	for (int i = 0; i < server_argc(); i++) {
		const char *a = server_argv()[i];
		if (strncmp(a, "rules=", 6) == 0)
			rules_path = a + 6;
		else if (strncmp(a, "log=", 4) == 0)
			log_path = a + 4;
		else
			log_fatal("unknown argument \"%s\" (rules=FILE log=FILE)", a);
	}
	if (rules_path && dict_text_lines(rules_path, rule_line, NULL, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	str_release(&err);
}

/* The rule for one recipient; a static default rule when none. */
static const rule_t *choose(const char *addr, const char *nexthop)
{
	static rule_t dflt[A_COUNT];
	char word[32];
	size_t n;
	int a;

	for (size_t i = 0; i < nrules; i++) {
		const rule_t *r = &rules[i];
		if (r->pattern && fnmatch(r->pattern, addr, FNM_CASEFOLD) == 0)
			return r;
		if (r->nexthop && fnmatch(r->nexthop, nexthop, FNM_CASEFOLD) == 0)
			return r;
	}
	n = strcspn(addr, "+.@");
	a = A_OK;
	if (n < sizeof(word)) {
		memcpy(word, addr, n);
		word[n] = 0;
		for (char *p = word; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		if ((a = act_parse(word)) < 0)
			a = A_OK;
	}
	dflt[a].act = (enum act)a;
	return &dflt[a];
}

static void log_line(const dlv_request_t *req, size_t i, const char *act,
    const char *status)
{
	str_t line = STR_INIT;
	int fd;

	if (!log_path)
		return;
	str_catf(&line, "%s %s %s %s %s\n", req->queue_id, req->nexthop,
	    req->rcpt[i].address, act, status);
	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || file_write_all(fd, line.buf, line.len) < 0)
		log_warning("%s: %s", log_path, strerror(errno));
	if (fd >= 0)
		close(fd);
	str_release(&line);
}

static void deliver(const dlv_request_t *req, dlv_reply_t *rep, void *ctx)
{
	const rule_t *whole = NULL;
	(void)ctx;

	/* A whole-request action: the first recipient choosing one decides. */
	for (size_t i = 0; i < req->nrcpt && !whole; i++) {
		const rule_t *r = choose(req->rcpt[i].address, req->nexthop);
		if (r->act == A_CONN_FAIL || r->act == A_SITE_FAIL ||
		    r->act == A_HANG || r->act == A_CRASH || r->act == A_GARBAGE)
			whole = r;
	}
	if (whole) {
		for (size_t i = 0; i < req->nrcpt; i++)
			log_line(req, i, act_names[whole->act],
			    whole->status ? whole->status : "-");
		switch (whole->act) {
		case A_HANG:
			for (int s = 0; s < 3600; s++)
				sleep(1);
			_exit(1);
		case A_CRASH:
			kill(getpid(), SIGKILL);
			_exit(1);
		case A_GARBAGE: {
			/* Bytes that are no reply at all, then hang up. */
			static const char junk[] = "250 this is not a reply\n\x01\n";
			(void)!write(dlv_agent_client_fd(), junk, sizeof(junk) - 1);
			_exit(0);
		}
		default:
			break;
		}
		for (size_t i = 0; i < rep->n; i++) {
			if (whole->text)
				dlv_status_set(rep, i, DLV_ACT_DELAYED,
				    whole->status ? whole->status : "4.4.1",
				    "none", "%s", whole->text);
			else
				dlv_status_set(rep, i, DLV_ACT_DELAYED,
				    whole->status ? whole->status : "4.4.1",
				    "none", "connect to %s: Connection refused",
				    req->nexthop);
		}
		dlv_reply_set_flags(rep, DLV_R_CONN_FAIL |
		    (whole->act == A_SITE_FAIL ? DLV_R_AVOID : 0),
		    "connect to %s: Connection refused", req->nexthop);
		return;
	}
	for (size_t i = 0; i < req->nrcpt; i++) {
		const rule_t *r = choose(req->rcpt[i].address, req->nexthop);
		const char *text = r->text;
		dlv_action_t a;

		switch (r->act) {
		case A_SLOW: {
			long ms = r->status ? strtol(r->status, NULL, 10) : 1000;
			struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
			if (ms > 0 && ms < 600000)
				nanosleep(&ts, NULL);
			a = DLV_ACT_DELIVERED;
			break;
		}
		case A_RELAY: a = DLV_ACT_RELAYED; break;
		case A_DEFER: a = DLV_ACT_DELAYED; break;
		case A_BOUNCE: a = DLV_ACT_FAILED; break;
		default: a = DLV_ACT_DELIVERED; break;
		}
		dlv_status_set(rep, i, a, r->act == A_SLOW ? NULL : r->status,
		    "test-agent", "%s%s", text ? "" : "test-agent: ",
		    text ? text : act_names[r->act]);
		if (a == DLV_ACT_FAILED || a == DLV_ACT_DELAYED)
			dlv_status_diag(rep, i, "x-test", rep->st[i].reason,
			    "test-agent.invalid");
		log_line(req, i, act_names[r->act], rep->st[i].status);
	}
}

int main(int argc, char **argv)
{
	dlv_agent_t agent = { .deliver = deliver, .post_jail = post_jail };

	dlv_agent_main(argc, argv, &agent);
}
