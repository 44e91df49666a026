/* The milter client: framing, option negotiation, macros, the stages and
 * their replies, modifications at the end of a message, and what happens
 * when a milter fails (doc/milter.md).
 *
 * I/O is blocking in effect: each write and each wait for a reply is
 * bounded by the stage's timeout with poll(2); a progress reply restarts
 * the wait.  A milter that breaks the protocol or its time is closed and
 * from then on answers with its default action, without any more I/O. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "attr.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "milter.h"
#include "params.h"
#include "pconfig.h"
#include "sock.h"

/* Protocol steps each version may negotiate (the MTA offers these). */
static unsigned version_pflags(int v)
{
	if (v <= 2)
		return 0x00003f;
	if (v == 3)
		return 0x00007f;
	if (v < 6)
		return 0x0003ff;
	return 0x1fffff;
}

#define ACTIONS_ALL 0x1ff

typedef struct milter {
	char *name;		/* the address, for the log */
	char *addr;
	int connect_ms, command_ms, content_ms;
	enum milter_defact defact;
	int protocol;
	int fd;
	unsigned version, actions, pflags;
	char *macros[MILTER_M_COUNT];	/* the milter's own lists (v6) */
	bool failed;		/* closed: stands for its default action */
	bool sess_done;		/* accepted (or refused) for the session */
	bool msg_done;		/* accepted for this message */
	bool in_msg;		/* got MAIL of the current message */
	bool skip_body;		/* SMFIR_SKIP */
	bool quarantine;	/* default action quarantine was used */
} milter_t;

enum cstate { CS_LINE, CS_BODY };

struct milters {
	milter_t *m;
	size_t n;
	milter_params_t p;
	char *pmacros[MILTER_M_COUNT];
	milter_macro_fn macro;
	void *macro_ctx;
	str_t pkt, rbuf, why;
	/* content */
	enum cstate cs;
	bool eoh_sent;
	str_t line;		/* header state: the line being collected */
	str_t hdr;		/* the logical header being collected */
	str_t body;		/* body bytes not sent yet */
	bool body_cr;		/* the last body byte was CR */
	enum milter_verdict content_v;	/* a refusal during the content */
	milter_reply_t content_r;
	/* Two or more milters for this message (doc/milter.md, "Several
	 * milters"): the content streams to the first (index first) only;
	 * the others are shown it one at a time at the end, with the
	 * earlier ones' header and body modifications applied.  The
	 * header fields ("Name: value", folds joined by LF) are kept in
	 * hl, the body (CR LF lines) in an unlinked spool file. */
	bool seq;
	size_t first;
	str_t *hl;
	size_t nh, hcap, hbytes;
	int spool_fd;		/* -1: none yet */
	uint64_t spooled;
	bool spool_bad;		/* could not spool, or over the bound */
};

/* ---- Small helpers -------------------------------------------------- */

void milter_reply_release(milter_reply_t *r)
{
	str_release(&r->text);
	r->who = NULL;
	r->verdict = MILTER_CONTINUE;
}

void milter_edits_release(milter_edits_t *ed)
{
	for (size_t i = 0; i < ed->n; i++) {
		free(ed->e[i].name);
		free(ed->e[i].value);
	}
	free(ed->e);
	ed->e = NULL;
	ed->n = ed->cap = 0;
	ed->body_replaced = false;
}

static milter_edit_t *edit_add(milter_edits_t *ed, enum milter_edit_type t,
    const char *who)
{
	milter_edit_t *e;

	if (ed->n == ed->cap) {
		ed->cap = ed->cap ? ed->cap * 2 : 8;
		ed->e = xreallocarray(ed->e, ed->cap, sizeof(*ed->e));
	}
	e = &ed->e[ed->n++];
	memset(e, 0, sizeof(*e));
	e->type = t;
	e->who = who;
	return e;
}

bool milter_defact_parse(const char *s, enum milter_defact *out)
{
	static const char *const names[] = { "tempfail", "accept", "reject",
	    "quarantine" };

	for (int i = 0; i < 4; i++)
		if (strcasecmp(s, names[i]) == 0) {
			*out = (enum milter_defact)i;
			return true;
		}
	return false;
}

static const char *const stage_params[MILTER_M_COUNT] = {
	"milter_connect_macros", "milter_helo_macros", "milter_mail_macros",
	"milter_rcpt_macros", "milter_data_macros",
	"milter_end_of_data_macros", "milter_end_of_header_macros",
	"milter_unknown_command_macros",
};

void milter_params_load(milter_params_t *p)
{
	memset(p, 0, sizeof(*p));
	p->connect_ms = (int)pconfig_get_time("milter_connect_timeout") * 1000;
	p->command_ms = (int)pconfig_get_time("milter_command_timeout") * 1000;
	p->content_ms = (int)pconfig_get_time("milter_content_timeout") * 1000;
	if (!milter_defact_parse(pconfig_get_str("milter_default_action"),
	    &p->default_action))
		p->default_action = MILTER_DEF_TEMPFAIL;	/* checked at load */
	p->protocol = (int)pconfig_get_int("milter_protocol");
	for (int i = 0; i < MILTER_M_COUNT; i++)
		p->macros[i] = pconfig_get_str(stage_params[i]);
	p->actions = ACTIONS_ALL;
	p->body_limit = (size_t)pconfig_get_size("message_size_limit");
}

/* ---- The list ------------------------------------------------------- */

/* The next element of a list: a word, or a brace group "{ ... }" (its
 * inside, trimmed).  NULL at the end; *err set for an open brace. */
static char *next_elem(char **cp, bool *braced, str_t *err)
{
	char *s = *cp, *start;
	int depth = 0;

	while (*s == ' ' || *s == '\t' || *s == ',' || *s == '\n' || *s == '\r')
		s++;
	if (*s == '\0')
		return NULL;
	*braced = *s == '{';
	if (*braced) {
		start = ++s;
		for (depth = 1; *s && depth > 0; s++)
			depth += *s == '{' ? 1 : *s == '}' ? -1 : 0;
		if (depth > 0) {
			str_set(err, "missing \"}\"");
			return NULL;
		}
		s[-1] = '\0';
		*cp = s;
		return str_trim(start);
	}
	start = s;
	while (*s && *s != ' ' && *s != '\t' && *s != ',' && *s != '\n' &&
	    *s != '\r')
		s++;
	if (*s)
		*s++ = '\0';
	*cp = s;
	return start;
}

static bool addr_check(const char *a, str_t *why)
{
	char host[256];
	unsigned port;

	if (strncmp(a, "unix:", 5) == 0 || strncmp(a, "local:", 6) == 0) {
		const char *path = strchr(a, ':') + 1;
		if (*path == '\0' || strlen(path) > 100) {
			str_setf(why, "bad milter address \"%s\": empty or too "
			    "long socket path", a);
			return false;
		}
		return true;
	}
	if (strncmp(a, "inet:", 5) == 0) {
		if (sock_split_hostport(a + 5, -1, host, sizeof(host), &port) < 0
		    || host[0] == '\0' || port == 0) {
			str_setf(why, "bad milter address \"%s\": want "
			    "inet:host:port or inet:[ipv6]:port", a);
			return false;
		}
		return true;
	}
	str_setf(why, "bad milter address \"%s\": want inet:host:port or "
	    "unix:/path", a);
	return false;
}

/* One element: the address and its settings into m (m may be NULL: a
 * check only). */
static bool parse_elem(char *text, bool braced, const milter_params_t *p,
    milter_t *m, str_t *why)
{
	char *cp = text, *w;
	bool first = true;

	if (m != NULL) {
		m->connect_ms = p->connect_ms;
		m->command_ms = p->command_ms;
		m->content_ms = p->content_ms;
		m->defact = p->default_action;
		m->protocol = p->protocol;
	}
	if (!braced) {
		if (!addr_check(text, why))
			return false;
		if (m != NULL)
			m->addr = xstrdup(text);
		return true;
	}
	while ((w = str_token(&cp, ",")) != NULL) {
		char *eq, *k, *v;
		long secs, n;

		w = str_trim(w);
		if (*w == '\0')
			continue;
		if (first) {
			first = false;
			if (!addr_check(w, why))
				return false;
			if (m != NULL)
				m->addr = xstrdup(w);
			continue;
		}
		eq = strchr(w, '=');
		if (eq == NULL) {
			str_setf(why, "bad milter setting \"%s\": want name=value",
			    w);
			return false;
		}
		*eq = '\0';
		k = str_trim(w);
		v = str_trim(eq + 1);
		if (strcmp(k, "connect_timeout") == 0 ||
		    strcmp(k, "command_timeout") == 0 ||
		    strcmp(k, "content_timeout") == 0) {
			if (!param_parse_time(v, 's', &secs) || secs < 1 ||
			    secs > 86400) {
				str_setf(why, "bad milter setting %s=%s: a time "
				    "from 1s to 1d", k, v);
				return false;
			}
			if (m != NULL)
				*(k[1] == 'o' && k[3] == 'n' && k[4] == 'e' ?
				    &m->connect_ms : k[2] == 'm' ?
				    &m->command_ms : &m->content_ms) =
				    (int)secs * 1000;
		} else if (strcmp(k, "default_action") == 0) {
			enum milter_defact d;
			if (!milter_defact_parse(v, &d)) {
				str_setf(why, "bad milter setting default_action=%s: "
				    "tempfail, accept, reject or quarantine", v);
				return false;
			}
			if (m != NULL)
				m->defact = d;
		} else if (strcmp(k, "protocol") == 0) {
			if (!param_parse_int(v, &n) || n < 2 || n > 6) {
				str_setf(why, "bad milter setting protocol=%s: a "
				    "version from 2 to 6", v);
				return false;
			}
			if (m != NULL)
				m->protocol = (int)n;
		} else {
			str_setf(why, "unknown milter setting \"%s\" (connect_"
			    "timeout, command_timeout, content_timeout, "
			    "default_action, protocol)", k);
			return false;
		}
	}
	if (first) {
		str_set(why, "empty milter in braces");
		return false;
	}
	return true;
}

static milters_t *parse_list(const char *list, const milter_params_t *p,
    bool keep, str_t *err)
{
	char *copy = xstrdup(list), *cp = copy, *e;
	bool braced;
	milters_t *ms = keep ? xcalloc(1, sizeof(*ms)) : NULL;
	milter_t tmp;

	if (ms != NULL)
		ms->spool_fd = -1;

	str_reset(err);
	while ((e = next_elem(&cp, &braced, err)) != NULL) {
		memset(&tmp, 0, sizeof(tmp));
		if (!parse_elem(e, braced, p, keep ? &tmp : NULL, err))
			goto bad;
		if (!keep)
			continue;
		tmp.fd = -1;
		tmp.name = xstrdup(tmp.addr);
		ms->m = xreallocarray(ms->m, ms->n + 1, sizeof(*ms->m));
		ms->m[ms->n++] = tmp;
	}
	if (str_len(err) > 0)
		goto bad;
	free(copy);
	return keep ? ms : (milters_t *)1;
bad:
	free(tmp.addr);
	free(copy);
	if (ms != NULL)
		milters_free(ms);
	return NULL;
}

bool milter_list_check(const char *list, str_t *why)
{
	milter_params_t p;

	memset(&p, 0, sizeof(p));
	return parse_list(list, &p, false, why) != NULL;
}

milters_t *milters_new(const char *list, const milter_params_t *p,
    str_t *err)
{
	str_t why = STR_INIT;
	milters_t *ms = parse_list(list, p, true, &why);

	if (ms == NULL) {
		str_set(err, str_cstr(&why));
		str_release(&why);
		return NULL;
	}
	str_release(&why);
	ms->p = *p;
	for (int i = 0; i < MILTER_M_COUNT; i++) {
		ms->pmacros[i] = p->macros[i] ? xstrdup(p->macros[i]) : NULL;
		ms->p.macros[i] = ms->pmacros[i];
	}
	if (ms->p.protocol < 2 || ms->p.protocol > 6)
		ms->p.protocol = 6;
	ms->spool_fd = -1;
	return ms;
}

size_t milters_count(const milters_t *ms)
{
	return ms != NULL ? ms->n : 0;
}

void milters_set_macros(milters_t *ms, milter_macro_fn fn, void *ctx)
{
	ms->macro = fn;
	ms->macro_ctx = ctx;
}

/* ---- Framing -------------------------------------------------------- */

void milter_packet(str_t *out, int cmd, const void *data, size_t len)
{
	uint32_t n = htonl((uint32_t)(len + 1));
	char c = (char)cmd;

	str_append(out, &n, 4);
	str_append(out, &c, 1);
	if (len > 0)
		str_append(out, data, len);
}

/* Waits for fd to be ready for events before the deadline: 1, 0 timeout,
 * -1 error. */
static int wait_fd(int fd, short events, long deadline)
{
	for (;;) {
		struct pollfd pfd = { fd, events, 0 };
		long left = deadline - event_now_ms();
		int r;

		if (left <= 0)
			return 0;
		r = poll(&pfd, 1, (int)(left > 86400000 ? 86400000 : left));
		if (r > 0)
			return 1;
		if (r == 0)
			continue;
		if (errno != EINTR)
			return -1;
	}
}

/* Writes a whole packet: attr_write_fd (bounded, no SIGPIPE). */
static int write_all(int fd, const char *buf, size_t len, int timeout_ms,
    str_t *why)
{
	if (attr_write_fd(fd, buf, len, timeout_ms) == 0)
		return 0;
	str_setf(why, errno == ETIMEDOUT ? "timeout sending a command" :
	    "cannot send: %s", strerror(errno));
	return -1;
}

static int read_full(int fd, char *buf, size_t len, long deadline,
    str_t *why, bool *got_any)
{
	while (len > 0) {
		ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			*got_any = true;
			continue;
		}
		if (n == 0) {
			str_set(why, *got_any ? "connection closed in the middle "
			    "of a reply (short packet)" : "connection closed");
			return -1;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			int w = wait_fd(fd, POLLIN, deadline);
			if (w > 0)
				continue;
			str_set(why, w == 0 ? "timeout waiting for a reply" :
			    strerror(errno));
			return -1;
		}
		str_setf(why, "cannot read: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int milter_read_packet(int fd, int timeout_ms, size_t max, int *cmd,
    str_t *data, str_t *why)
{
	long deadline = event_now_ms() + timeout_ms;
	uint32_t nlen;
	size_t len;
	char c;
	bool any = false;

	str_reset(data);
	if (read_full(fd, (char *)&nlen, 4, deadline, why, &any) < 0)
		return -1;
	len = ntohl(nlen);
	if (len == 0) {
		str_set(why, "malformed reply: packet of length 0");
		return -1;
	}
	if (len - 1 > max) {
		str_setf(why, "malformed reply: packet of %zu bytes, more than "
		    "%zu", len, max + 1);
		return -1;
	}
	if (read_full(fd, &c, 1, deadline, why, &any) < 0)
		return -1;
	str_reserve(data, len);
	if (len > 1 && read_full(fd, data->buf, len - 1, deadline, why,
	    &any) < 0)
		return -1;
	data->len = len - 1;
	data->buf[data->len] = '\0';
	*cmd = (unsigned char)c;
	return 0;
}

/* ---- One milter ----------------------------------------------------- */

static void close_milter(milter_t *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

static void mfail(milters_t *ms, milter_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void mfail(milters_t *ms, milter_t *m, const char *fmt, ...)
{
	static const char *const acts[] = { "tempfail", "accept", "reject",
	    "quarantine" };
	va_list ap;

	str_reset(&ms->why);
	va_start(ap, fmt);
	str_vcatf(&ms->why, fmt, ap);
	va_end(ap);
	log_warning("milter %s: %s; default action %s", m->name,
	    str_cstr(&ms->why), acts[m->defact]);
	close_milter(m);
	m->failed = true;
}

static int send_raw(milters_t *ms, milter_t *m, int timeout_ms)
{
	str_t why = STR_INIT;

	if (write_all(m->fd, str_cstr(&ms->pkt), str_len(&ms->pkt), timeout_ms,
	    &why) < 0) {
		mfail(ms, m, "%s", str_cstr(&why));
		str_release(&why);
		return -1;
	}
	str_release(&why);
	return 0;
}

static int open_milter(milters_t *ms, milter_t *m)
{
	int fd = -1, e;

	if (strncmp(m->addr, "inet:", 5) == 0) {
		char host[256], pstr[16];
		unsigned port;
		struct addrinfo hints, *res = NULL, *ai;

		(void)sock_split_hostport(m->addr + 5, -1, host, sizeof(host),
		    &port);
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		snprintf(pstr, sizeof(pstr), "%u", port);
		e = getaddrinfo(host, pstr, &hints, &res);
		if (e != 0) {
			mfail(ms, m, "cannot find host %s: %s", host,
			    gai_strerror(e));
			return -1;
		}
		e = ENOENT;
		for (ai = res; ai != NULL; ai = ai->ai_next) {
			e = sock_tcp_connect(ai->ai_addr, ai->ai_addrlen,
			    m->connect_ms, &fd);
			if (e == 0)
				break;
		}
		freeaddrinfo(res);
	} else {
		e = sock_unix_connect(strchr(m->addr, ':') + 1, m->connect_ms,
		    &fd);
	}
	if (e != 0) {
		mfail(ms, m, "cannot connect: %s", strerror(e));
		return -1;
	}
	(void)sock_set_nonblock(fd, true);
	m->fd = fd;
	return 0;
}

static int negotiate(milters_t *ms, milter_t *m)
{
	uint32_t v[3];
	int cmd;
	str_t why = STR_INIT;
	const char *d;
	size_t len, off;
	unsigned offered_p = version_pflags(m->protocol);
	unsigned offered_a = ms->p.actions & ACTIONS_ALL;

	v[0] = htonl((uint32_t)m->protocol);
	v[1] = htonl(offered_a);
	v[2] = htonl(offered_p);
	str_reset(&ms->pkt);
	milter_packet(&ms->pkt, SMFIC_OPTNEG, v, sizeof(v));
	if (send_raw(ms, m, m->command_ms) < 0)
		return -1;
	if (milter_read_packet(m->fd, m->command_ms, 65536, &cmd, &ms->rbuf,
	    &why) < 0) {
		mfail(ms, m, "negotiation: %s", str_cstr(&why));
		str_release(&why);
		return -1;
	}
	str_release(&why);
	d = str_cstr(&ms->rbuf);
	len = str_len(&ms->rbuf);
	if (cmd != SMFIC_OPTNEG || len < 12) {
		mfail(ms, m, "negotiation: malformed reply (command 0x%02x, %zu "
		    "bytes)", cmd, len);
		return -1;
	}
	memcpy(v, d, 12);
	m->version = ntohl(v[0]);
	m->actions = ntohl(v[1]);
	m->pflags = ntohl(v[2]);
	if (m->version < 2 || m->version > 6) {
		mfail(ms, m, "negotiation: protocol version %u is not 2 to 6",
		    m->version);
		return -1;
	}
	if (m->version > (unsigned)m->protocol)
		m->version = (unsigned)m->protocol;
	if (m->actions & ~offered_a) {
		mfail(ms, m, "negotiation: requested actions 0x%x, only 0x%x "
		    "are offered", m->actions, offered_a);
		return -1;
	}
	if (m->pflags & ~version_pflags((int)m->version)) {
		mfail(ms, m, "negotiation: protocol flags 0x%x, more than "
		    "version %u has (0x%x)", m->pflags, m->version,
		    version_pflags((int)m->version));
		return -1;
	}
	/* v6: the macros the milter wants, per stage. */
	for (off = 12; off < len;) {
		uint32_t st;
		const char *s, *nul;

		if (len - off < 5) {
			mfail(ms, m, "negotiation: malformed macro list");
			return -1;
		}
		memcpy(&st, d + off, 4);
		st = ntohl(st);
		s = d + off + 4;
		nul = memchr(s, '\0', len - off - 4);
		if (nul == NULL || st >= MILTER_M_COUNT) {
			mfail(ms, m, "negotiation: malformed macro list (stage "
			    "%u)", st);
			return -1;
		}
		free(m->macros[st]);
		m->macros[st] = xstrdup(s);
		off = (size_t)(nul - d) + 1;
	}
	return 0;
}

/* The macros of stage for command cmd: one SMFIC_MACRO packet into pkt
 * (nothing when no macro has a value). */
static void put_macros(milters_t *ms, milter_t *m, int stage, int cmd)
{
	const char *list;
	char *copy, *cp, *name;
	str_t data = STR_INIT;
	char c = (char)cmd;
	bool any = false;

	if (stage < 0 || ms->macro == NULL)
		return;
	list = m->macros[stage] != NULL ? m->macros[stage] : ms->p.macros[stage];
	if (list == NULL || *list == '\0')
		return;
	str_append(&data, &c, 1);
	copy = cp = xstrdup(list);
	while ((name = str_token(&cp, " \t,")) != NULL) {
		const char *v;

		if (*name == '\0')
			continue;
		v = ms->macro(ms->macro_ctx, name);
		if (v == NULL)
			continue;
		str_append(&data, name, strlen(name) + 1);
		str_append(&data, v, strlen(v) + 1);
		any = true;
	}
	free(copy);
	if (any)
		milter_packet(&ms->pkt, SMFIC_MACRO, str_cstr(&data),
		    str_len(&data));
	str_release(&data);
}

bool milter_replycode_ok(const char *s, size_t len, int *code)
{
	int first = -1;

	if (len == 0)
		return false;
	for (size_t off = 0; off < len;) {
		const char *l = s + off, *e = memchr(l, '\r', len - off);
		size_t ll = e != NULL ? (size_t)(e - l) : len - off;
		int c;

		if (ll < 3 || (l[0] != '4' && l[0] != '5') || l[1] < '0' ||
		    l[1] > '9' || l[2] < '0' || l[2] > '9')
			return false;
		c = (l[0] - '0') * 100 + (l[1] - '0') * 10 + (l[2] - '0');
		if (first >= 0 && c != first)
			return false;
		first = c;
		if (ll > 3 && l[3] != ' ' && l[3] != '-')
			return false;
		if (e != NULL && (e[1] != '\n' || (ll > 3 && l[3] == ' ')))
			return false;	/* CR without LF; a last line before the end */
		if (e == NULL && ll > 3 && l[3] == '-')
			return false;	/* the last line says more follow */
		for (size_t i = 0; i < ll; i++)
			if ((unsigned char)l[i] < 0x20 || l[i] == 0x7f)
				return false;
		off += ll + (e != NULL ? 2 : 0);
		if (e != NULL && off == len)
			return false;	/* ends with CR LF */
	}
	*code = first;
	return true;
}

/* Outcome of one milter for one command. */
enum res { R_CONT, R_ACCEPT, R_REJECT, R_TEMPFAIL, R_DISCARD, R_SKIP,
	R_FAILED };

/* Is edit type t allowed by what the milter negotiated? */
static bool edit_allowed(const milter_t *m, int cmd)
{
	switch (cmd) {
	case SMFIR_ADDHEADER: return m->actions & SMFIF_ADDHDRS;
	case SMFIR_INSHEADER: return m->actions & SMFIF_ADDHDRS;
	case SMFIR_CHGHEADER: return m->actions & SMFIF_CHGHDRS;
	case SMFIR_ADDRCPT: return m->actions & SMFIF_ADDRCPT;
	case SMFIR_ADDRCPT_PAR: return m->actions & SMFIF_ADDRCPT_PAR;
	case SMFIR_DELRCPT: return m->actions & SMFIF_DELRCPT;
	case SMFIR_CHGFROM: return m->actions & SMFIF_CHGFROM;
	case SMFIR_REPLBODY: return m->actions & SMFIF_CHGBODY;
	case SMFIR_QUARANTINE: return m->actions & SMFIF_QUARANTINE;
	default: return false;
	}
}

/* Splits data into NUL-terminated strings: at most max, at least min. */
static int split_strings(const char *d, size_t len, const char **out,
    int min, int max)
{
	int n = 0;
	size_t off = 0;

	while (off < len && n < max) {
		const char *nul = memchr(d + off, '\0', len - off);
		if (nul == NULL)
			return -1;
		out[n++] = d + off;
		off = (size_t)(nul - d) + 1;
	}
	if (off != len || n < min)
		return -1;
	return n;
}

/* A modification request at the end of the message: into ed.  -1 on a
 * malformed one (the milter failed). */
static int take_edit(milters_t *ms, milter_t *m, int cmd, milter_edits_t *ed)
{
	const char *d = str_cstr(&ms->rbuf), *s[3];
	size_t len = str_len(&ms->rbuf);
	milter_edit_t *e;
	uint32_t idx = 0;
	int n;

	if (ed == NULL) {
		mfail(ms, m, "modification request 0x%02x outside the end of "
		    "the message", cmd);
		return -1;
	}
	if (!edit_allowed(m, cmd)) {
		mfail(ms, m, "modification request '%c' that was not "
		    "negotiated", cmd);
		return -1;
	}
	if (cmd == SMFIR_REPLBODY) {
		milter_edit_t *b = NULL;
		for (size_t i = 0; i < ed->n; i++)
			if (ed->e[i].type == MILTER_E_REPLBODY && ed->e[i].who ==
			    m->name)
				b = &ed->e[i];
		if (b == NULL) {
			/* A later milter's body replaces an earlier one's. */
			for (size_t i = 0; i < ed->n; i++)
				if (ed->e[i].type == MILTER_E_REPLBODY) {
					free(ed->e[i].value);
					ed->e[i].value = xstrdup("");
					ed->e[i].vlen = 0;
					ed->e[i].type = MILTER_E_REPLBODY;
				}
			b = edit_add(ed, MILTER_E_REPLBODY, m->name);
			b->value = xstrdup("");
		}
		if (ms->p.body_limit > 0 && b->vlen + len > ms->p.body_limit) {
			mfail(ms, m, "replacement body larger than "
			    "message_size_limit (%zu bytes)", ms->p.body_limit);
			return -1;
		}
		b->value = xrealloc(b->value, b->vlen + len + 1);
		memcpy(b->value + b->vlen, d, len);
		b->vlen += len;
		b->value[b->vlen] = '\0';
		ed->body_replaced = true;
		return 0;
	}
	if (cmd == SMFIR_INSHEADER || cmd == SMFIR_CHGHEADER) {
		if (len < 4)
			goto bad;
		memcpy(&idx, d, 4);
		idx = ntohl(idx);
		d += 4;
		len -= 4;
	}
	switch (cmd) {
	case SMFIR_ADDHEADER: case SMFIR_INSHEADER: case SMFIR_CHGHEADER:
		if (split_strings(d, len, s, 2, 2) != 2 || s[0][0] == '\0')
			goto bad;
		e = edit_add(ed, cmd == SMFIR_ADDHEADER ? MILTER_E_ADDHDR :
		    cmd == SMFIR_INSHEADER ? MILTER_E_INSHDR : MILTER_E_CHGHDR,
		    m->name);
		e->index = idx;
		e->name = xstrdup(s[0]);
		e->value = xstrdup(s[1]);
		e->vlen = strlen(s[1]);
		return 0;
	case SMFIR_ADDRCPT: case SMFIR_DELRCPT: case SMFIR_ADDRCPT_PAR:
	case SMFIR_CHGFROM: case SMFIR_QUARANTINE:
		n = split_strings(d, len, s, 1, cmd == SMFIR_ADDRCPT ||
		    cmd == SMFIR_DELRCPT || cmd == SMFIR_QUARANTINE ? 1 : 2);
		if (n < 1 || (cmd != SMFIR_QUARANTINE && s[0][0] == '\0'))
			goto bad;
		e = edit_add(ed, cmd == SMFIR_ADDRCPT ||
		    cmd == SMFIR_ADDRCPT_PAR ? MILTER_E_ADDRCPT :
		    cmd == SMFIR_DELRCPT ? MILTER_E_DELRCPT : cmd ==
		    SMFIR_CHGFROM ? MILTER_E_CHGFROM : MILTER_E_QUARANTINE,
		    m->name);
		if (cmd == SMFIR_QUARANTINE) {
			e->value = xstrdup(s[0]);
			e->vlen = strlen(s[0]);
		} else {
			e->name = xstrdup(s[0]);
			if (n == 2 && s[1][0] != '\0')
				e->value = xstrdup(s[1]);
		}
		return 0;
	}
bad:
	mfail(ms, m, "malformed modification request '%c' (%zu bytes)", cmd,
	    str_len(&ms->rbuf));
	return -1;
}

/* Sends what is in ms->pkt and, unless noreply, reads the reply.  r gets
 * the text of a refusal; ed (eom only) the modifications. */
static enum res exchange(milters_t *ms, milter_t *m, int timeout_ms,
    bool noreply, milter_reply_t *r, milter_edits_t *ed)
{
	str_t why = STR_INIT;
	int cmd, code;

	if (send_raw(ms, m, timeout_ms) < 0)
		return R_FAILED;
	if (noreply)
		return R_CONT;
	for (;;) {
		if (milter_read_packet(m->fd, timeout_ms, MILTER_PACKET_MAX, &cmd,
		    &ms->rbuf, &why) < 0) {
			mfail(ms, m, "%s", str_cstr(&why));
			str_release(&why);
			return R_FAILED;
		}
		switch (cmd) {
		case SMFIR_PROGRESS:
			continue;	/* the wait starts again */
		case SMFIR_CONTINUE:
			return R_CONT;
		case SMFIR_ACCEPT:
			return R_ACCEPT;
		case SMFIR_SKIP:
			return R_SKIP;
		case SMFIR_DISCARD:
			return R_DISCARD;
		case SMFIR_REJECT:
			str_set(&r->text, "550 5.7.1 Command rejected");
			return R_REJECT;
		case SMFIR_TEMPFAIL:
			str_set(&r->text, "451 4.7.1 Service unavailable - try "
			    "again later");
			return R_TEMPFAIL;
		case SMFIR_SHUTDOWN:
			str_set(&r->text, "421 4.7.0 Service unavailable - try "
			    "again later");
			return R_TEMPFAIL;
		case SMFIR_REPLYCODE: {
			size_t l = str_len(&ms->rbuf);
			const char *t = str_cstr(&ms->rbuf);
			if (l > 0 && t[l - 1] == '\0')
				l--;
			if (memchr(t, '\0', l) != NULL ||
			    !milter_replycode_ok(t, l, &code)) {
				str_t q = STR_INIT;
				str_quote_printable(&q, t, l > 200 ? 200 : l);
				mfail(ms, m, "malformed reply code text \"%s\"",
				    str_cstr(&q));
				str_release(&q);
				return R_FAILED;
			}
			str_reset(&r->text);
			str_append(&r->text, t, l);
			return code >= 500 ? R_REJECT : R_TEMPFAIL;
		}
		case SMFIR_ADDHEADER: case SMFIR_INSHEADER: case SMFIR_CHGHEADER:
		case SMFIR_ADDRCPT: case SMFIR_ADDRCPT_PAR: case SMFIR_DELRCPT:
		case SMFIR_CHGFROM: case SMFIR_REPLBODY: case SMFIR_QUARANTINE:
			if (take_edit(ms, m, cmd, ed) < 0)
				return R_FAILED;
			continue;
		default:
			if (cmd >= 0x20 && cmd < 0x7f)
				mfail(ms, m, "unknown reply '%c'", cmd);
			else
				mfail(ms, m, "unknown reply 0x%02x", cmd);
			return R_FAILED;
		}
	}
}

/* ---- The list, per stage -------------------------------------------- */

enum scope { SC_SESSION, SC_MESSAGE, SC_RCPT };

/* The verdict a failed milter stands for; quarantine and accept let the
 * mail go on (quarantine marks the message). */
static enum milter_verdict def_verdict(milters_t *ms, milter_t *m,
    milter_reply_t *r)
{
	switch (m->defact) {
	case MILTER_DEF_ACCEPT:
		m->sess_done = true;
		return MILTER_CONTINUE;
	case MILTER_DEF_QUARANTINE:
		m->quarantine = true;
		m->msg_done = true;
		return MILTER_CONTINUE;
	case MILTER_DEF_REJECT:
		/* Postfix's words for a milter that failed */
		str_set(&r->text, "550 5.5.0 Service unavailable");
		r->who = m->name;
		return MILTER_REJECT;
	default:
		str_set(&r->text, "451 4.7.1 Service unavailable - try again "
		    "later");
		r->who = m->name;
		(void)ms;
		return MILTER_TEMPFAIL;
	}
}

/* One command to every milter in turn.  build fills ms->pkt (after the
 * macros) for milter m; skip_flag: the SMFIP_NO* step that spares it;
 * nr_flag: the SMFIP_NR_* that says it does not reply. */
typedef void (*build_fn)(milters_t *ms, milter_t *m, const void *arg);

static enum milter_verdict each(milters_t *ms, enum scope scope, int stage,
    int cmd, unsigned skip_flag, unsigned nr_flag, int timeout_kind,
    build_fn build, const void *arg, milter_reply_t *r)
{
	milter_reply_release(r);
	for (size_t i = 0; i < ms->n; i++) {
		milter_t *m = &ms->m[i];
		enum res res;
		int tmo;

		if (m->sess_done || (scope != SC_SESSION && m->msg_done))
			continue;
		if (m->failed) {
			enum milter_verdict v = def_verdict(ms, m, r);
			if (v != MILTER_CONTINUE)
				return v;
			continue;
		}
		if (m->pflags & skip_flag)
			continue;
		/* Two or more milters: only the first gets the content as
		 * it arrives (the others get it at the end). */
		if (ms->seq && i != ms->first && (cmd == SMFIC_HEADER ||
		    cmd == SMFIC_EOH || cmd == SMFIC_BODY))
			continue;
		/* Milters that said SKIP get no more body. */
		if (cmd == SMFIC_BODY && m->skip_body)
			continue;
		if (cmd == SMFIC_DATA && m->version < 4)
			continue;
		if (cmd == SMFIC_UNKNOWN && m->version < 3)
			continue;
		str_reset(&ms->pkt);
		put_macros(ms, m, stage, cmd);
		build(ms, m, arg);
		tmo = timeout_kind ? m->content_ms : m->command_ms;
		res = exchange(ms, m, tmo, (m->pflags & nr_flag) != 0, r, NULL);
		if (scope == SC_MESSAGE || scope == SC_RCPT)
			m->in_msg = true;
		switch (res) {
		case R_SKIP:
			if (cmd == SMFIC_BODY)
				m->skip_body = true;
			continue;
		case R_CONT:
			continue;
		case R_ACCEPT:
			if (scope == SC_SESSION)
				m->sess_done = true;
			else
				m->msg_done = true;
			continue;
		case R_FAILED: {
			enum milter_verdict v = def_verdict(ms, m, r);
			if (v != MILTER_CONTINUE)
				return v;
			continue;
		}
		case R_DISCARD:
			if (scope == SC_SESSION) {
				/* Not a connection verdict: refuse as Postfix
				 * does for a reply that makes no sense here. */
				str_set(&r->text, "451 4.7.1 Service unavailable "
				    "- try again later");
				r->who = m->name;
				log_warning("milter %s: discard at the connection "
				    "stage; answered with a temporary failure",
				    m->name);
				return MILTER_TEMPFAIL;
			}
			r->who = m->name;
			return MILTER_DISCARD;
		case R_REJECT:
			r->who = m->name;
			return MILTER_REJECT;
		case R_TEMPFAIL:
			r->who = m->name;
			return MILTER_TEMPFAIL;
		}
	}
	return MILTER_CONTINUE;
}

static void b_connect(milters_t *ms, milter_t *m, const void *arg)
{
	const char *const *a = arg;	/* host, addr, port, family */
	str_t d = STR_INIT;
	int fam = *(const int *)a[3];
	uint16_t port = htons((uint16_t)*(const unsigned *)a[2]);
	char f = fam == 4 ? '4' : fam == 6 ? '6' : 'U';

	(void)m;
	str_append(&d, a[0], strlen(a[0]) + 1);
	str_append(&d, &f, 1);
	if (f != 'U') {
		str_append(&d, &port, 2);
		str_append(&d, a[1], strlen(a[1]) + 1);
	}
	milter_packet(&ms->pkt, SMFIC_CONNECT, str_cstr(&d), str_len(&d));
	str_release(&d);
}

enum milter_verdict milters_connect(milters_t *ms, const char *host,
    const char *addr, unsigned port, int family, milter_reply_t *r)
{
	const void *a[4] = { host, addr, &port, &family };

	milter_reply_release(r);
	for (size_t i = 0; i < ms->n; i++) {
		milter_t *m = &ms->m[i];
		if (m->fd >= 0 || m->failed)
			continue;
		if (open_milter(ms, m) == 0)
			(void)negotiate(ms, m);
	}
	return each(ms, SC_SESSION, MILTER_M_CONNECT, SMFIC_CONNECT,
	    SMFIP_NOCONNECT, SMFIP_NR_CONN, 0, b_connect, a, r);
}

static void b_str(milters_t *ms, milter_t *m, const void *arg)
{
	const char *const *a = arg;	/* cmd as string, text */

	(void)m;
	milter_packet(&ms->pkt, a[0][0], a[1], strlen(a[1]) + 1);
}

enum milter_verdict milters_helo(milters_t *ms, const char *helo,
    milter_reply_t *r)
{
	const char *a[2] = { "H", helo };

	return each(ms, SC_SESSION, MILTER_M_HELO, SMFIC_HELO, SMFIP_NOHELO,
	    SMFIP_NR_HELO, 0, b_str, a, r);
}

enum milter_verdict milters_unknown(milters_t *ms, const char *cmd,
    milter_reply_t *r)
{
	const char *a[2] = { "U", cmd };

	return each(ms, SC_MESSAGE, MILTER_M_UNKNOWN, SMFIC_UNKNOWN,
	    SMFIP_NOUNKNOWN, SMFIP_NR_UNKN, 0, b_str, a, r);
}

static void b_argv(milters_t *ms, milter_t *m, const void *arg)
{
	const char *const *a = arg;	/* cmd as string, then argv */
	str_t d = STR_INIT;

	(void)m;
	for (size_t i = 1; a[i] != NULL; i++)
		str_append(&d, a[i], strlen(a[i]) + 1);
	milter_packet(&ms->pkt, a[0][0], str_cstr(&d), str_len(&d));
	str_release(&d);
}

static void seq_reset(milters_t *ms)
{
	for (size_t i = 0; i < ms->nh; i++)
		str_release(&ms->hl[i]);
	free(ms->hl);
	ms->hl = NULL;
	ms->nh = ms->hcap = ms->hbytes = 0;
	if (ms->spool_fd >= 0)
		close(ms->spool_fd);
	ms->spool_fd = -1;
	ms->spooled = 0;
	ms->spool_bad = false;
	ms->seq = false;
	ms->first = 0;
}

static void content_reset(milters_t *ms)
{
	ms->cs = CS_LINE;
	ms->eoh_sent = false;
	str_reset(&ms->line);
	str_reset(&ms->hdr);
	str_reset(&ms->body);
	ms->body_cr = false;
	ms->content_v = MILTER_CONTINUE;
	milter_reply_release(&ms->content_r);
	seq_reset(ms);
}

static enum milter_verdict argv_stage(milters_t *ms, int cmd, int stage,
    unsigned skip, unsigned nr, const char *const *argv, milter_reply_t *r)
{
	const char *a[66];
	size_t n = 0;

	a[n++] = cmd == SMFIC_MAIL ? "M" : "R";
	for (size_t i = 0; argv[i] != NULL && n < 65; i++)
		a[n++] = argv[i];
	a[n] = NULL;
	return each(ms, cmd == SMFIC_MAIL ? SC_MESSAGE : SC_RCPT, stage, cmd,
	    skip, nr, 0, b_argv, a, r);
}

enum milter_verdict milters_mail(milters_t *ms, const char *const *argv,
    milter_reply_t *r)
{
	for (size_t i = 0; i < ms->n; i++) {
		ms->m[i].msg_done = false;
		ms->m[i].skip_body = false;
		ms->m[i].quarantine = false;
	}
	content_reset(ms);
	return argv_stage(ms, SMFIC_MAIL, MILTER_M_MAIL, SMFIP_NOMAIL,
	    SMFIP_NR_MAIL, argv, r);
}

enum milter_verdict milters_rcpt(milters_t *ms, const char *const *argv,
    milter_reply_t *r)
{
	return argv_stage(ms, SMFIC_RCPT, MILTER_M_RCPT, SMFIP_NORCPT,
	    SMFIP_NR_RCPT, argv, r);
}

static void b_empty(milters_t *ms, milter_t *m, const void *arg)
{
	(void)m;
	milter_packet(&ms->pkt, *(const char *)arg, NULL, 0);
}

enum milter_verdict milters_data(milters_t *ms, milter_reply_t *r)
{
	char c = SMFIC_DATA;
	enum milter_verdict v;
	size_t live = 0;

	content_reset(ms);
	v = each(ms, SC_MESSAGE, MILTER_M_DATA, SMFIC_DATA, SMFIP_NODATA,
	    SMFIP_NR_DATA, 0, b_empty, &c, r);
	for (size_t i = ms->n; i-- > 0; )
		if (!ms->m[i].failed && !ms->m[i].sess_done &&
		    !ms->m[i].msg_done) {
			live++;
			ms->first = i;
		}
	ms->seq = v == MILTER_CONTINUE && live >= 2;
	return v;
}

/* ---- Content -------------------------------------------------------- */

/* One logical header "Name: value" (folded lines joined by LF) in hdr. */
static void b_header(milters_t *ms, milter_t *m, const void *arg)
{
	const str_t *h = arg;
	const char *s = str_cstr(h), *colon = memchr(s, ':', str_len(h));
	size_t nl = (size_t)(colon - s), vl;
	const char *v = colon + 1;
	str_t d = STR_INIT;

	while (nl > 0 && (s[nl - 1] == ' ' || s[nl - 1] == '\t'))
		nl--;
	if (!(m->pflags & SMFIP_HDR_LEADSPC))
		while (*v == ' ' || *v == '\t')
			v++;
	vl = str_len(h) - (size_t)(v - s);
	str_append(&d, s, nl);
	str_putc(&d, '\0');
	str_append(&d, v, vl);
	str_putc(&d, '\0');
	milter_packet(&ms->pkt, SMFIC_HEADER, str_cstr(&d), str_len(&d));
	str_release(&d);
}

static void content_refused(milters_t *ms, enum milter_verdict v,
    milter_reply_t *r)
{
	ms->content_v = v;
	str_set(&ms->content_r.text, str_cstr(&r->text));
	ms->content_r.who = r->who;
	ms->content_r.verdict = v;
}

/* ---- Several milters: the content kept for the later ones ---------- */

static void b_body(milters_t *ms, milter_t *m, const void *arg);

/* At most this much header and body is kept (the message is refused as
 * too big long before, when message_size_limit is set): the body's CR LF
 * line ends may double a message of bare LFs. */
static uint64_t seq_bound(const milters_t *ms)
{
	return ms->p.body_limit > 0 ? 2 * (uint64_t)ms->p.body_limit +
	    MILTER_CHUNK : UINT64_MAX;
}

static void seq_insert(milters_t *ms, size_t at, const char *h, size_t len)
{
	if (ms->nh == ms->hcap) {
		ms->hcap = ms->hcap ? 2 * ms->hcap : 32;
		ms->hl = xreallocarray(ms->hl, ms->hcap, sizeof(*ms->hl));
	}
	if (at > ms->nh)
		at = ms->nh;
	memmove(&ms->hl[at + 1], &ms->hl[at], (ms->nh - at) * sizeof(*ms->hl));
	ms->hl[at] = (str_t)STR_INIT;
	str_append(&ms->hl[at], h, len);
	ms->nh++;
	ms->hbytes += len;
}

static void seq_keep_header(milters_t *ms, const char *h, size_t len)
{
	if (ms->spool_bad)
		return;
	if (ms->hbytes + len > seq_bound(ms)) {
		ms->spool_bad = true;
		return;
	}
	seq_insert(ms, ms->nh, h, len);
}

/* An unlinked file in the daemon's directory (queue_directory or its
 * chroot: saved/ is mail_owner's), else in the current directory. */
static int seq_spool_open(void)
{
	static const char *const dirs[] = { "saved", "." };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char path[64];
		int fd;
#ifdef O_TMPFILE
		fd = open(dirs[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd >= 0)
			return fd;
#endif
		(void)snprintf(path, sizeof(path), "%s/milter.XXXXXX", dirs[i]);
		fd = mkstemp(path);
		if (fd >= 0) {
			(void)unlink(path);
			(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
			return fd;
		}
	}
	return -1;
}

static void seq_spool(milters_t *ms, const char *p, size_t n)
{
	if (ms->spool_bad)
		return;
	if (ms->spooled + n > seq_bound(ms)) {
		ms->spool_bad = true;
		return;
	}
	if (ms->spool_fd < 0 && (ms->spool_fd = seq_spool_open()) < 0) {
		log_warning("milters: cannot create a spool file for the "
		    "body: %s", strerror(errno));
		ms->spool_bad = true;
		return;
	}
	while (n > 0) {
		ssize_t w = pwrite(ms->spool_fd, p, n, (off_t)ms->spooled);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			log_warning("milters: spool file write: %s",
			    w < 0 ? strerror(errno) : "no progress");
			ms->spool_bad = true;
			return;
		}
		p += w;
		n -= (size_t)w;
		ms->spooled += (uint64_t)w;
	}
}

/* The length of a field's name (trailing blanks not counted). */
static size_t seq_name_len(const str_t *h)
{
	const char *s = str_cstr(h), *c = memchr(s, ':', str_len(h));
	size_t nl = c != NULL ? (size_t)(c - s) : str_len(h);

	while (nl > 0 && (s[nl - 1] == ' ' || s[nl - 1] == '\t'))
		nl--;
	return nl;
}

/* "Name: value" as cleanup writes a milter's field (no space added when
 * the value begins with white space), the folds joined by LF. */
static void seq_field(str_t *out, const char *name, const char *value)
{
	str_reset(out);
	str_cat(out, name);
	str_putc(out, ':');
	if (*value != ' ' && *value != '\t')
		str_putc(out, ' ');
	for (const char *v = value; *v != '\0'; v++)
		if (!(v[0] == '\r' && v[1] == '\n'))
			str_putc(out, *v);
}

/* The header and body modifications ed->e[from..] applied to the kept
 * header, as cleanup applies them to the queue file
 * (cleanup/cleanup_msg.c, apply_content_edits). */
static void seq_apply(milters_t *ms, const milter_edits_t *ed, size_t from)
{
	str_t f = STR_INIT;

	for (size_t i = from; i < ed->n; i++) {
		const milter_edit_t *e = &ed->e[i];
		const char *val = e->value != NULL ? e->value : "";
		size_t want, seen = 0, nlen, k;

		switch (e->type) {
		case MILTER_E_ADDHDR:
			seq_field(&f, e->name, val);
			seq_insert(ms, ms->nh, str_cstr(&f), str_len(&f));
			break;
		case MILTER_E_INSHDR:
			seq_field(&f, e->name, val);
			seq_insert(ms, e->index, str_cstr(&f), str_len(&f));
			break;
		case MILTER_E_CHGHDR:
			want = e->index ? e->index : 1;
			nlen = strlen(e->name);
			for (k = 0; k < ms->nh; k++)
				if (seq_name_len(&ms->hl[k]) == nlen &&
				    strncasecmp(str_cstr(&ms->hl[k]), e->name,
				    nlen) == 0 && ++seen == want)
					break;
			if (*val == '\0') {
				if (k < ms->nh) {
					str_release(&ms->hl[k]);
					memmove(&ms->hl[k], &ms->hl[k + 1],
					    (ms->nh - k - 1) * sizeof(*ms->hl));
					ms->nh--;
				}
				break;
			}
			seq_field(&f, e->name, val);
			if (k < ms->nh) {
				str_reset(&ms->hl[k]);
				str_append(&ms->hl[k], str_cstr(&f), str_len(&f));
			} else {
				seq_insert(ms, ms->nh, str_cstr(&f), str_len(&f));
			}
			break;
		default:
			break;
		}
	}
	str_release(&f);
}

/* One content command to milter m alone. */
static enum res seq_cmd(milters_t *ms, milter_t *m, int stage, int cmd,
    unsigned skip_flag, unsigned nr_flag, build_fn build, const void *arg,
    milter_reply_t *r)
{
	if (m->pflags & skip_flag)
		return R_CONT;
	str_reset(&ms->pkt);
	put_macros(ms, m, stage, cmd);
	build(ms, m, arg);
	return exchange(ms, m, m->content_ms, (m->pflags & nr_flag) != 0, r,
	    NULL);
}

/* Shows milter m (not the first) the message as the milters before it
 * left it: the kept header as edited, the end of the header, the body
 * (the last replacement in ed, else the spooled one).  R_CONT when the
 * end of the message is to be sent to it. */
static enum res seq_replay(milters_t *ms, milter_t *m,
    const milter_edits_t *ed, milter_reply_t *r)
{
	const milter_edit_t *body = NULL;
	str_t chunk = STR_INIT;
	enum res res = R_CONT;
	char c = SMFIC_EOH;
	uint64_t off = 0, len;
	static char buf[MILTER_CHUNK];

	m->in_msg = true;
	for (size_t i = 0; i < ms->nh && res == R_CONT; i++)
		res = seq_cmd(ms, m, -1, SMFIC_HEADER, SMFIP_NOHDRS,
		    SMFIP_NR_HDR, b_header, &ms->hl[i], r);
	if (res == R_SKIP)
		res = R_CONT;
	if (res == R_CONT)
		res = seq_cmd(ms, m, MILTER_M_EOH, SMFIC_EOH, SMFIP_NOEOH,
		    SMFIP_NR_EOH, b_empty, &c, r);
	if (res == R_SKIP)
		res = R_CONT;
	for (size_t i = 0; i < ed->n; i++)
		if (ed->e[i].type == MILTER_E_REPLBODY)
			body = &ed->e[i];
	len = body != NULL ? body->vlen : ms->spooled;
	while (res == R_CONT && off < len) {
		size_t n = len - off > MILTER_CHUNK ? MILTER_CHUNK :
		    (size_t)(len - off);

		str_reset(&chunk);
		if (body != NULL) {
			str_append(&chunk, body->value + off, n);
		} else {
			ssize_t got;
			do
				got = pread(ms->spool_fd, buf, n, (off_t)off);
			while (got < 0 && errno == EINTR);
			if (got <= 0) {
				log_warning("milters: spool file read: %s",
				    got < 0 ? strerror(errno) : "short file");
				str_set(&r->text, "451 4.3.0 Error: internal "
				    "error");
				res = R_TEMPFAIL;
				break;
			}
			n = (size_t)got;
			str_append(&chunk, buf, n);
		}
		off += n;
		res = seq_cmd(ms, m, -1, SMFIC_BODY, SMFIP_NOBODY, SMFIP_NR_BODY,
		    b_body, &chunk, r);
		if (res == R_SKIP) {
			m->skip_body = true;
			res = R_CONT;
			break;
		}
	}
	str_release(&chunk);
	return res;
}

static enum milter_verdict send_header(milters_t *ms, milter_reply_t *r)
{
	enum milter_verdict v;

	if (str_len(&ms->hdr) == 0)
		return MILTER_CONTINUE;
	/* A header too big for a packet is cut (cleanup refuses such a
	 * header anyway: header_size_limit). */
	if (str_len(&ms->hdr) > MILTER_PACKET_MAX - 64)
		str_truncate(&ms->hdr, MILTER_PACKET_MAX - 64);
	if (ms->seq)
		seq_keep_header(ms, str_cstr(&ms->hdr), str_len(&ms->hdr));
	v = each(ms, SC_MESSAGE, -1, SMFIC_HEADER, SMFIP_NOHDRS, SMFIP_NR_HDR,
	    1, b_header, &ms->hdr, r);
	str_reset(&ms->hdr);
	return v;
}

static enum milter_verdict send_eoh(milters_t *ms, milter_reply_t *r)
{
	char c = SMFIC_EOH;
	enum milter_verdict v = send_header(ms, r);

	ms->eoh_sent = true;
	if (v != MILTER_CONTINUE)
		return v;
	return each(ms, SC_MESSAGE, MILTER_M_EOH, SMFIC_EOH, SMFIP_NOEOH,
	    SMFIP_NR_EOH, 1, b_empty, &c, r);
}

static void b_body(milters_t *ms, milter_t *m, const void *arg)
{
	const str_t *b = arg;

	(void)m;
	milter_packet(&ms->pkt, SMFIC_BODY, str_cstr(b), str_len(b));
}

/* Sends body chunks while at least MILTER_CHUNK bytes wait (all with
 * final). */
static enum milter_verdict send_body(milters_t *ms, bool final,
    milter_reply_t *r)
{
	enum milter_verdict v = MILTER_CONTINUE;
	str_t chunk = STR_INIT;
	size_t off = 0, len = str_len(&ms->body);

	while (v == MILTER_CONTINUE && (len - off >= MILTER_CHUNK ||
	    (final && len > off))) {
		size_t n = len - off > MILTER_CHUNK ? MILTER_CHUNK : len - off;
		str_reset(&chunk);
		str_append(&chunk, str_cstr(&ms->body) + off, n);
		off += n;
		if (ms->seq)
			seq_spool(ms, str_cstr(&chunk), n);
		v = each(ms, SC_MESSAGE, -1, SMFIC_BODY, SMFIP_NOBODY,
		    SMFIP_NR_BODY, 1, b_body, &chunk, r);
	}
	str_release(&chunk);
	if (off > 0) {
		memmove(ms->body.buf, ms->body.buf + off, len - off);
		str_truncate(&ms->body, len - off);
	}
	return v;
}

/* A complete header-section line (terminator taken off). */
static enum milter_verdict header_line(milters_t *ms, const char *l,
    size_t len, milter_reply_t *r)
{
	enum milter_verdict v;
	const char *colon;

	if (len > 0 && (l[0] == ' ' || l[0] == '\t') && str_len(&ms->hdr) > 0) {
		str_putc(&ms->hdr, '\n');
		str_append(&ms->hdr, l, len);
		return MILTER_CONTINUE;
	}
	v = send_header(ms, r);
	if (v != MILTER_CONTINUE)
		return v;
	colon = memchr(l, ':', len);
	if (len == 0 || colon == NULL || colon == l) {
		/* The empty line, or a line that is not a header field: the
		 * body begins (with that line, unless it is the empty one). */
		v = send_eoh(ms, r);
		ms->cs = CS_BODY;
		if (len > 0) {
			str_append(&ms->body, l, len);
			str_append(&ms->body, "\r\n", 2);
		}
		return v;
	}
	for (const char *p = l; p < colon; p++)
		if ((unsigned char)*p <= ' ' && *p != '\t' && *p != ' ')
			goto body;
	str_append(&ms->hdr, l, len);
	return MILTER_CONTINUE;
body:
	v = send_eoh(ms, r);
	ms->cs = CS_BODY;
	str_append(&ms->body, l, len);
	str_append(&ms->body, "\r\n", 2);
	return v;
}

/* Body bytes, bare LF made CR LF. */
static void body_bytes(milters_t *ms, const char *p, size_t n)
{
	while (n > 0) {
		const char *lf = memchr(p, '\n', n);
		size_t k = lf != NULL ? (size_t)(lf - p) : n;

		str_append(&ms->body, p, k);
		if (k > 0)
			ms->body_cr = p[k - 1] == '\r';
		if (lf == NULL)
			break;
		if (!ms->body_cr)
			str_putc(&ms->body, '\r');
		str_putc(&ms->body, '\n');
		ms->body_cr = false;
		p += k + 1;
		n -= k + 1;
	}
}

enum milter_verdict milters_content(milters_t *ms, const void *buf,
    size_t len, milter_reply_t *r)
{
	const char *p = buf;
	enum milter_verdict v = MILTER_CONTINUE;

	milter_reply_release(r);
	if (ms->content_v != MILTER_CONTINUE)
		return ms->content_v;
	while (len > 0 && ms->cs == CS_LINE) {
		const char *lf = memchr(p, '\n', len);
		size_t k = lf != NULL ? (size_t)(lf - p) + 1 : len;
		const char *l;
		size_t ll;

		str_append(&ms->line, p, k);
		p += k;
		len -= k;
		if (lf == NULL) {
			/* A header line longer than a packet is cut. */
			if (str_len(&ms->line) > MILTER_PACKET_MAX)
				str_truncate(&ms->line, MILTER_PACKET_MAX);
			return MILTER_CONTINUE;
		}
		l = str_cstr(&ms->line);
		ll = str_len(&ms->line) - 1;
		if (ll > 0 && l[ll - 1] == '\r')
			ll--;
		v = header_line(ms, l, ll, r);
		str_reset(&ms->line);
		if (v != MILTER_CONTINUE)
			goto refused;
	}
	if (len > 0) {
		body_bytes(ms, p, len);
		v = send_body(ms, false, r);
		if (v != MILTER_CONTINUE)
			goto refused;
	}
	return MILTER_CONTINUE;
refused:
	content_refused(ms, v, r);
	return v;
}

enum milter_verdict milters_eom(milters_t *ms, milter_edits_t *ed,
    milter_reply_t *r)
{
	enum milter_verdict v = MILTER_CONTINUE;
	bool quarantine = false;
	const char *qwho = NULL;

	milter_reply_release(r);
	if (ms->content_v != MILTER_CONTINUE) {
		str_set(&r->text, str_cstr(&ms->content_r.text));
		r->who = ms->content_r.who;
		v = ms->content_v;
		goto out;
	}
	if (ms->cs == CS_LINE) {
		/* The content ended in the header. */
		if (str_len(&ms->line) > 0) {
			const char *l = str_cstr(&ms->line);
			size_t ll = str_len(&ms->line);
			if (ll > 0 && l[ll - 1] == '\r')
				ll--;
			v = header_line(ms, l, ll, r);
			str_reset(&ms->line);
		}
		if (v == MILTER_CONTINUE && !ms->eoh_sent)
			v = send_eoh(ms, r);
		ms->cs = CS_BODY;
	}
	if (v == MILTER_CONTINUE)
		v = send_body(ms, true, r);
	for (size_t i = 0; i < ms->n && v == MILTER_CONTINUE; i++) {
		milter_t *m = &ms->m[i];
		size_t mark = ed->n;
		enum res res;

		if (m->quarantine) {
			quarantine = true;
			qwho = m->name;
		}
		if (m->sess_done || m->msg_done)
			continue;
		if (m->failed) {
			v = def_verdict(ms, m, r);
			if (m->quarantine) {
				quarantine = true;
				qwho = m->name;
			}
			continue;
		}
		res = R_CONT;
		if (ms->seq && i != ms->first) {
			/* A later milter of several: the message as the
			 * ones before it left it, now. */
			if (ms->spool_bad) {
				str_set(&r->text, "451 4.3.0 Error: message "
				    "too big or spool file error");
				res = R_TEMPFAIL;
			} else {
				res = seq_replay(ms, m, ed, r);
			}
			if (res == R_ACCEPT) {
				m->msg_done = true;
				continue;
			}
		}
		if (res == R_CONT) {
			str_reset(&ms->pkt);
			put_macros(ms, m, MILTER_M_EOM, SMFIC_BODYEOB);
			milter_packet(&ms->pkt, SMFIC_BODYEOB, NULL, 0);
			res = exchange(ms, m, m->content_ms, false, r, ed);
		}
		switch (res) {
		case R_CONT: case R_ACCEPT: case R_SKIP:
			if (ms->seq)
				seq_apply(ms, ed, mark);
			break;
		case R_FAILED:
			/* What it asked for before it failed is dropped. */
			for (size_t k = mark; k < ed->n; k++) {
				free(ed->e[k].name);
				free(ed->e[k].value);
			}
			ed->n = mark;
			v = def_verdict(ms, m, r);
			if (m->quarantine) {
				quarantine = true;
				qwho = m->name;
			}
			break;
		case R_DISCARD:
			r->who = m->name;
			v = MILTER_DISCARD;
			break;
		case R_REJECT:
			r->who = m->name;
			v = MILTER_REJECT;
			break;
		case R_TEMPFAIL:
			r->who = m->name;
			v = MILTER_TEMPFAIL;
			break;
		}
	}
	if (v == MILTER_CONTINUE && quarantine) {
		milter_edit_t *e = edit_add(ed, MILTER_E_QUARANTINE, qwho);
		e->value = xstrdup("milter failure, default action quarantine");
		e->vlen = strlen(e->value);
	}
out:
	for (size_t i = 0; i < ms->n; i++) {
		ms->m[i].in_msg = false;
		ms->m[i].msg_done = false;
		ms->m[i].skip_body = false;
		ms->m[i].quarantine = false;
	}
	content_reset(ms);
	return v;
}

void milters_abort(milters_t *ms)
{
	for (size_t i = 0; i < ms->n; i++) {
		milter_t *m = &ms->m[i];
		if (m->fd >= 0 && !m->failed && m->in_msg) {
			str_reset(&ms->pkt);
			milter_packet(&ms->pkt, SMFIC_ABORT, NULL, 0);
			(void)send_raw(ms, m, m->command_ms);
		}
		m->in_msg = false;
		m->msg_done = false;
		m->skip_body = false;
		m->quarantine = false;
	}
	content_reset(ms);
}

void milters_free(milters_t *ms)
{
	if (ms == NULL)
		return;
	for (size_t i = 0; i < ms->n; i++) {
		milter_t *m = &ms->m[i];
		if (m->fd >= 0 && !m->failed) {
			str_reset(&ms->pkt);
			milter_packet(&ms->pkt, SMFIC_QUIT, NULL, 0);
			(void)write_all(m->fd, str_cstr(&ms->pkt),
			    str_len(&ms->pkt), 1000, &ms->why);
		}
		close_milter(m);
		free(m->name);
		free(m->addr);
		for (int k = 0; k < MILTER_M_COUNT; k++)
			free(m->macros[k]);
	}
	free(ms->m);
	for (int k = 0; k < MILTER_M_COUNT; k++)
		free(ms->pmacros[k]);
	str_release(&ms->pkt);
	str_release(&ms->rbuf);
	str_release(&ms->why);
	str_release(&ms->line);
	str_release(&ms->hdr);
	str_release(&ms->body);
	milter_reply_release(&ms->content_r);
	seq_reset(ms);
	free(ms);
}
