/* Runs smtpd sessions in memory for the smtpd unit tests: the client's
 * bytes come from a string through a stream I/O layer, the replies go
 * into another string, and accepted mail goes to a recording
 * destination instead of cleanup. */
#ifndef T_SMTPD_HARNESS_H
#define T_SMTPD_HARNESS_H
#include <atf-c.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "smtpd/smtpd.h"
#include "testutil.h"

typedef struct memio {
	const char *in;
	size_t len, pos;
	size_t step;		/* most bytes one read returns (0: all) */
	str_t out;
} memio_t;

static inline ssize_t m_read(void *ctx, int fd, void *buf, size_t len, int *want)
{
	memio_t *m = ctx;
	size_t n = m->len - m->pos;

	(void)fd;
	(void)want;
	if (n > len)
		n = len;
	if (m->step && n > m->step)
		n = m->step;
	memcpy(buf, m->in + m->pos, n);
	m->pos += n;
	return (ssize_t)n;
}

static inline ssize_t m_write(void *ctx, int fd, const void *buf, size_t len,
    int *want)
{
	memio_t *m = ctx;
	(void)fd;
	(void)want;
	str_append(&m->out, buf, len);
	return (ssize_t)len;
}

static const stream_io_t m_io = { m_read, m_write };

/* A destination that records everything. */
typedef struct tdest {
	smtpd_dest_t base;
	int opens, writes, finishes, aborts;
	bool fail_open;
	cleanup_reply_t next;		/* what finish answers */
	/* Static buffers (reachable at exit, so the leak checker of the
	 * sanitizer build does not count them), shared by all tdests. */
	str_t *content;			/* of the open message */
	str_t *last;			/* of the last finished message */
	str_t *env;			/* the last envelope, one field a line */
	bool open;
} tdest_t;

static inline int td_open(smtpd_dest_t *d, const smtpd_txn_info_t *t, str_t *why)
{
	tdest_t *td = (tdest_t *)d;

	td->opens++;
	if (td->fail_open) {
		str_set(why, "test: open fails");
		return -1;
	}
	ATF_REQUIRE(!td->open);
	td->open = true;
	str_reset(td->content);
	str_reset(td->env);
	str_catf(td->env, "sender=%s\n", t->sender);
	for (size_t i = 0; i < t->nrcpts; i++)
		str_catf(td->env, "rcpt=%s orcpt=%s notify=%d\n", t->rcpts[i].addr,
		    t->rcpts[i].orcpt ? t->rcpts[i].orcpt : "-", t->rcpts[i].notify);
	str_catf(td->env, "envid=%s ret=%d body=%s smtputf8=%d\n",
	    t->envid ? t->envid : "-", t->ret, t->body ? t->body : "-",
	    t->smtputf8);
	str_catf(td->env, "client=%s[%s] port=%s helo=%s proto=%s tls=%s\n",
	    t->client_name, t->client_addr, t->client_port ? t->client_port : "-",
	    t->helo ? t->helo : "-", t->protocol, t->tls_info ? t->tls_info : "-");
	return 0;
}

static inline int td_write(smtpd_dest_t *d, const void *buf, size_t len)
{
	tdest_t *td = (tdest_t *)d;
	ATF_REQUIRE(td->open);
	td->writes++;
	str_append(td->content, buf, len);
	return 0;
}

static inline void td_finish(smtpd_dest_t *d, cleanup_reply_t *r)
{
	tdest_t *td = (tdest_t *)d;
	ATF_REQUIRE(td->open);
	td->open = false;
	td->finishes++;
	str_set(td->last, str_cstr(td->content));
	*r = td->next;
}

static inline void td_abort(smtpd_dest_t *d)
{
	tdest_t *td = (tdest_t *)d;
	ATF_REQUIRE(td->open);
	td->open = false;
	td->aborts++;
}

static inline void td_free(smtpd_dest_t *d)
{
	(void)d;
}

static str_t td_bufs[3];

static inline void td_init(tdest_t *td)
{
	memset(td, 0, sizeof(*td));
	td->content = &td_bufs[0];
	td->last = &td_bufs[1];
	td->env = &td_bufs[2];
	str_reset(td->content);
	str_reset(td->last);
	str_reset(td->env);
	td->base.open = td_open;
	td->base.write = td_write;
	td->base.finish = td_finish;
	td->base.abort = td_abort;
	td->base.free = td_free;
	cleanup_reply_set(&td->next, CLEANUP_STAT_OK, "2.0.0", "queued as QID1");
	bcopy_str(td->next.queue_id, sizeof(td->next.queue_id), "QID1");
}

/* The main.cf every test starts from; extra lines are appended. */
#define BASE_CF \
	"myhostname = mx.example.test\n" \
	"mydestination = mx.example.test, localhost\n" \
	"mynetworks = 127.0.0.0/8\n" \
	"relay_domains = relay.example\n" \
	"local_recipient_maps = inline:{ alice=x, bob@mx.example.test=x }\n" \
	"smtpd_peername_lookup = no\n" \
	"smtpd_error_sleep_time = 0\n"

static inline smtpd_cfg_t *cfg_with(const char *extra)
{
	str_t text = STR_INIT, err = STR_INIT;
	smtpd_cfg_t *cfg;

	str_set(&text, BASE_CF);
	if (extra)
		str_cat(&text, extra);
	if (pconfig_load_text(str_cstr(&text), "main.cf") < 0)
		atf_tc_fail("main.cf: %s", pconfig_errors());
	cfg = smtpd_cfg_load(&err);
	if (cfg == NULL)
		atf_tc_fail("smtpd_cfg_load: %s", str_cstr(&err));
	str_release(&text);
	str_release(&err);
	return cfg;
}

static inline void peer_at(smtpd_peer_t *p, const char *addr)
{
	memset(p, 0, sizeof(*p));
	bcopy_str(p->name, sizeof(p->name), "unknown");
	bcopy_str(p->addr, sizeof(p->addr), addr);
	bcopy_str(p->port, sizeof(p->port), "4711");
	bcopy_str(p->local_addr, sizeof(p->local_addr), "192.0.2.25");
}

/* Runs one session with input in; returns the transcript (malloc'ed). */
static inline char *session_opts(const smtpd_cfg_t *cfg, const char *addr,
    const char *in, size_t inlen, tdest_t *td,
    const smtpd_session_opts_t *opts, size_t step)
{
	memio_t m = { in, inlen, 0, step, STR_INIT };
	smtpd_peer_t peer;
	stream_t *s = stream_open(-1);

	peer_at(&peer, addr);
	ATF_REQUIRE(stream_set_io(s, &m_io, &m) == 0);
	smtpd_session_run(cfg, s, &peer, &td->base, opts);
	ATF_CHECK_MSG(!td->open, "the session left a message open");
	return str_steal(&m.out);
}

static inline char *session(const smtpd_cfg_t *cfg, const char *addr,
    const char *in, tdest_t *td)
{
	return session_opts(cfg, addr, in, strlen(in), td, NULL, 0);
}

/* The reply lines of a transcript, the greeting dropped, one per line
 * ("250 2.1.0 Ok\n"), EHLO continuation lines included. */
static inline char *replies(const char *t)
{
	str_t out = STR_INIT;
	const char *p = strstr(t, "\r\n");

	ATF_REQUIRE_MSG(p != NULL && strncmp(t, "220 ", 4) == 0, "no greeting in %s", t);
	for (p += 2; *p;) {
		const char *e = strstr(p, "\r\n");
		if (e == NULL) {
			str_cat(&out, p);
			break;
		}
		str_append(&out, p, (size_t)(e - p));
		str_putc(&out, '\n');
		p = e + 2;
	}
	return str_steal(&out);
}

/* Session + replies; frees the transcript. */
static inline char *talk(const smtpd_cfg_t *cfg, const char *addr, const char *in,
    tdest_t *td)
{
	char *t = session(cfg, addr, in, td);
	char *r = replies(t);
	free(t);
	return r;
}

#define CHECK_REPLIES(got, want) \
	ATF_CHECK_MSG(strcmp((got), (want)) == 0, "replies:\n%s\nwanted:\n%s", (got), (want))

/* Logs go to FILE for tests that check log lines. */
static inline void log_into(const char *path)
{
	unlink(path);
	log_init("smtpd");
	ATF_REQUIRE(log_to_file(path) == 0);
}

static inline char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	str_t s = STR_INIT;
	char buf[4096];
	size_t n;

	if (f == NULL)
		return xstrdup("");
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		str_append(&s, buf, n);
	fclose(f);
	return str_steal(&s);
}

#endif
