/* libFuzzer target for smtpd's SMTP command handling: the input is what
 * a client sends, fed to a whole session in memory (command parser,
 * address and parameter parsing, state machine, DATA and BDAT content,
 * restrictions without DNS).  The first byte picks a configuration and
 * how the input is cut into reads.  abort() when an invariant breaks:
 *   - every reply line is "NNN" + " " or "-" + printable text + CR LF,
 *     with NNN from 200 to 599 (and the last line of a reply has " ");
 *   - no message is left open at the destination after the session;
 *   - a message is only finished between an open and the session end,
 *     and every open is finished or aborted.
 * The command parser and the BDAT argument parser also run on the raw
 * bytes alone.
 *
 * SMTP AUTH runs against a fake authentication server in this process
 * (a fuzzer cannot run Dovecot): PLAIN, LOGIN and ANONYMOUS with
 * Dovecot's challenges, one known user, temporary failures and final
 * server data on demand.  It aborts when smtpd breaks the one-exchange-
 * at-a-time rule: start during an exchange, next outside one, an
 * exchange left open at the end, or a response that is not base64. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base64.h"
#include "log.h"
#include "pconfig.h"
#include "smtpd/smtpd.h"

static void check(bool ok)
{
	if (!ok)
		abort();
}

typedef struct memio {
	const uint8_t *in;
	size_t len, pos, step;
	str_t out;
} memio_t;

static ssize_t m_read(void *ctx, int fd, void *buf, size_t len, int *want)
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

static ssize_t m_write(void *ctx, int fd, const void *buf, size_t len, int *want)
{
	memio_t *m = ctx;
	(void)fd;
	(void)want;
	str_append(&m->out, buf, len);
	return (ssize_t)len;
}

static const stream_io_t m_io = { m_read, m_write };

typedef struct fdest {
	smtpd_dest_t base;
	int opens, closes;
	bool open;
	uint64_t bytes;
} fdest_t;

static int f_open(smtpd_dest_t *d, const smtpd_txn_info_t *t, str_t *why)
{
	fdest_t *f = (fdest_t *)d;
	check(!f->open && t->nrcpts > 0 && t->sender != NULL);
	(void)why;
	f->open = true;
	f->opens++;
	f->bytes = 0;
	return 0;
}

static int f_write(smtpd_dest_t *d, const void *buf, size_t len)
{
	fdest_t *f = (fdest_t *)d;
	check(f->open);
	(void)buf;
	f->bytes += len;
	return 0;
}

static void f_finish(smtpd_dest_t *d, cleanup_reply_t *r)
{
	fdest_t *f = (fdest_t *)d;
	check(f->open);
	f->open = false;
	f->closes++;
	/* Every third message fails, to walk the error paths too. */
	if (f->closes % 3 == 0)
		cleanup_reply_set(r, CLEANUP_STAT_TEMP, "4.3.0", "test failure");
	else
		cleanup_reply_set(r, CLEANUP_STAT_OK, "2.0.0", "queued");
	bcopy_str(r->queue_id, sizeof(r->queue_id), f->closes % 3 ? "QID" : "");
}

static void f_abort(smtpd_dest_t *d)
{
	fdest_t *f = (fdest_t *)d;
	check(f->open);
	f->open = false;
	f->closes++;
}

static void f_free(smtpd_dest_t *d)
{
	(void)d;
}

/* ---- A fake authentication server ---------------------------------- */

typedef struct fsasl {
	smtpd_sasl_backend_t base;
	bool pending;
	int step;		/* LOGIN: 1 user asked, 2 password asked */
	bool user_ok;
	unsigned calls;
} fsasl_t;

static const smtpd_sasl_mech_t f_mechs[] = {
	{ "PLAIN", SMTPD_SASL_P_PLAINTEXT },
	{ "LOGIN", SMTPD_SASL_P_PLAINTEXT },
	{ "ANONYMOUS", SMTPD_SASL_P_ANONYMOUS },
	{ "X-FINAL", 0 },
};

/* base64 of "\0alice\0pw", "alice", "pw", "TEMP" */
#define F_PLAIN "AGFsaWNlAHB3"
#define F_USER "YWxpY2U="
#define F_PASS "cHc="
#define F_TEMP "VEVNUA=="

static int fs_mechs(smtpd_sasl_backend_t *b, const smtpd_sasl_mech_t **v,
    size_t *n, str_t *why)
{
	fsasl_t *f = (fsasl_t *)b;
	/* Every 7th call: the server is down. */
	if (++f->calls % 7 == 0) {
		str_set(why, "fake: down");
		return -1;
	}
	*v = f_mechs;
	*n = sizeof(f_mechs) / sizeof(f_mechs[0]);
	return 0;
}

static enum smtpd_sasl_status fs_answer(fsasl_t *f, const char *resp,
    str_t *out, str_t *user)
{
	if (strcmp(resp, F_TEMP) == 0) {
		f->pending = false;
		str_set(out, "fake: temporary");
		return SMTPD_SASL_TEMP;
	}
	if (f->step == 1) {
		f->user_ok = strcmp(resp, F_USER) == 0;
		f->step = 2;
		str_set(out, "UGFzc3dvcmQ6");
		return SMTPD_SASL_CONT;
	}
	f->pending = false;
	str_set(user, "alice");
	if (f->step == 2 ? f->user_ok && strcmp(resp, F_PASS) == 0 :
	    strcmp(resp, F_PLAIN) == 0)
		return SMTPD_SASL_OK;
	str_set(out, "fake: wrong password\tand a TAB");
	return SMTPD_SASL_FAIL;
}

static enum smtpd_sasl_status fs_start(smtpd_sasl_backend_t *b,
    const smtpd_sasl_req_t *req, str_t *out, str_t *user)
{
	fsasl_t *f = (fsasl_t *)b;

	check(!f->pending);
	check(req->resp == NULL ||
	    base64_well_formed(req->resp, strlen(req->resp)));
	str_reset(out);
	str_reset(user);
	f->pending = true;
	f->step = 0;
	if (strcmp(req->mech, "X-FINAL") == 0) {
		f->pending = false;
		str_set(user, "final\001user");
		str_set(out, "ZmluYWw=");
		return SMTPD_SASL_OK;
	}
	if (strcmp(req->mech, "ANONYMOUS") == 0) {
		f->pending = false;
		str_set(user, "anonymous");
		return SMTPD_SASL_OK;
	}
	if (strcmp(req->mech, "LOGIN") == 0) {
		f->step = 1;
		if (req->resp == NULL || *req->resp == 0) {
			str_set(out, "VXNlcm5hbWU6");
			return SMTPD_SASL_CONT;
		}
	}
	if (req->resp == NULL) {
		str_set(out, "");
		return SMTPD_SASL_CONT;
	}
	return fs_answer(f, req->resp, out, user);
}

static enum smtpd_sasl_status fs_next(smtpd_sasl_backend_t *b,
    const char *resp, str_t *out, str_t *user)
{
	fsasl_t *f = (fsasl_t *)b;

	check(f->pending);
	check(base64_well_formed(resp, strlen(resp)));
	str_reset(out);
	str_reset(user);
	return fs_answer(f, resp, out, user);
}

static void fs_abort(smtpd_sasl_backend_t *b)
{
	fsasl_t *f = (fsasl_t *)b;
	f->pending = false;
}

static void fs_free(smtpd_sasl_backend_t *b)
{
	(void)b;
}

static smtpd_cfg_t *cfgs[2];

static void setup(void)
{
	static const char *text[2] = {
		"myhostname = mx.example.test\nmydestination = mx.example.test\n"
		"local_recipient_maps = inline:{ alice=x }\n"
		"smtpd_error_sleep_time = 0\nsmtpd_hard_error_limit = 1000\n"
		"smtpd_junk_command_limit = 1000\nmessage_size_limit = 4000\n"
		"line_length_limit = 100\nsmtpd_recipient_limit = 5\n"
		"disable_vrfy_command = no\nrecipient_delimiter = +\n"
		"smtpd_recipient_restrictions = check_recipient_access "
		"inline:{ {bad@example.com = 550 5.1.1 no}, ok.example=OK }, "
		"reject_non_fqdn_recipient\n"
		"smtpd_sender_restrictions = check_sender_access inline:{ <>=DUNNO }, "
		"reject_sender_login_mismatch\n"
		"smtpd_relay_restrictions = permit_sasl_authenticated, "
		"reject_unauth_destination\n"
		"smtpd_sasl_auth_enable = yes\nsmtpd_tls_auth_only = no\n"
		"smtpd_sasl_security_options =\nsmtpd_sasl_response_limit = 40\n"
		"broken_sasl_auth_clients = yes\n"
		"smtpd_sender_login_maps = inline:{ alice@example.org=alice, "
		"{@team.example = alice, bob} }\n",
		"myhostname = mx.example.test\nsmtpd_error_sleep_time = 0\n"
		"smtpd_forbid_bare_newline = yes\nsmtpd_delay_reject = no\n"
		"smtputf8_enable = no\nstrict_rfc821_envelopes = yes\n"
		"smtpd_helo_required = yes\nlocal_recipient_maps =\n"
		"smtpd_helo_restrictions = reject_invalid_helo_hostname\n"
		"smtpd_discard_ehlo_keywords = dsn, chunking, enhancedstatuscodes\n",
	};
	str_t err = STR_INIT;

	log_init("fuzz_smtpd");
	if (log_to_file("/dev/null") < 0)
		abort();
	for (int i = 0; i < 2; i++) {
		check(pconfig_load_text(text[i], "main.cf") == 0);
		cfgs[i] = smtpd_cfg_load(&err);
		check(cfgs[i] != NULL);
	}
	str_release(&err);
}

/* Every reply line well-formed. */
static void check_output(const str_t *out)
{
	const char *p = out->buf ? out->buf : "";
	const char *end = p + out->len;

	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		check(e != NULL && e - p >= 5 && e[-1] == '\r');
		check(p[0] >= '2' && p[0] <= '5' && p[1] >= '0' && p[1] <= '9' &&
		    p[2] >= '0' && p[2] <= '9');
		check(p[3] == ' ' || p[3] == '-');
		for (const char *q = p + 4; q < e - 1; q++)
			check((unsigned char)*q >= 0x20 && *q != 0x7f);
		p = e + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	smtpd_peer_t peer;
	smtpd_cmd_t c;
	uint64_t n;
	bool last;

	if (!ready) {
		setup();
		ready = true;
	}
	if (size < 1 || size > 64 * 1024)
		return 0;
	(void)smtpd_cmd_parse((const char *)data + 1, size - 1, &c);
	(void)smtpd_bdat_parse((const char *)data + 1, size - 1, &n, &last);

	memio_t m = { data + 1, size - 1, 0, (size_t)(data[0] >> 1) % 17, STR_INIT };
	fdest_t f = { .base = { .open = f_open, .write = f_write,
	    .finish = f_finish, .abort = f_abort, .free = f_free } };
	fsasl_t fs = { .base = { fs_mechs, fs_start, fs_next, fs_abort, fs_free } };
	smtpd_session_opts_t opts = { .sasl = &fs.base };
	stream_t *s = stream_open(-1);

	memset(&peer, 0, sizeof(peer));
	bcopy_str(peer.name, sizeof(peer.name), "unknown");
	bcopy_str(peer.addr, sizeof(peer.addr), data[0] & 0x40 ? "127.0.0.1" : "192.0.2.1");
	bcopy_str(peer.local_addr, sizeof(peer.local_addr), "192.0.2.25");
	if (stream_set_io(s, &m_io, &m) < 0)
		abort();
	smtpd_session_run(cfgs[data[0] & 1], s, &peer, &f.base, &opts);
	check(!f.open && f.opens == f.closes);
	check(!fs.pending);
	check(m.out.len >= 5);
	check_output(&m.out);
	str_release(&m.out);
	return 0;
}
