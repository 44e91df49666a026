/* The per-recipient delivery log line, in Postfix's format: the one
 * formatter, used by every delivery agent (dlv_log_reply, from
 * dlv_agent_serve_fd) and by qmgr for the outcomes it decides itself. */
#include <string.h>
#include "addr.h"
#include "delivery.h"
#include "log.h"

/* A time in seconds as Postfix prints delays: two significant digits,
 * at most `digits` decimals (delay_logging_resolution_limit, 0..6),
 * rounded, trailing zeros dropped; whole seconds from 10 s up; "0" for
 * what rounds to nothing.  So 1.234 is "1.2", 0.394 "0.39", 0.2 "0.2",
 * 12.7 "13", 0.0001 "0". */
static void put_delay(str_t *out, double d, int digits)
{
	static const int64_t pow10[] = { 1, 10, 100, 1000, 10000, 100000,
	    1000000 };
	const int64_t million = 1000000, wid = 100;	/* 2 digits */
	int64_t us, sec, usec, res;

	if (!(d > 0))
		d = 0;
	if (d > 1e12)
		d = 1e12;
	if (digits < 0)
		digits = 0;
	if (digits > 6)
		digits = 6;
	us = (int64_t)(d * 1e6 + 0.5);
	sec = us / million;
	usec = us % million;
	/* The unit of the last digit shown. */
	res = million / pow10[digits];
	if (res < million) {
		if (sec > 0) {
			int64_t n = 1;
			while (sec >= n && n <= wid / 10)
				n *= 10;
			res = million / wid * n;
		} else {
			while (usec >= wid * res)
				res *= 10;
		}
	}
	if (res > 1) {
		usec += res / 2;
		if (usec >= million) {
			sec++;
			usec -= million;
		}
	}
	str_catf(out, "%lld", (long long)sec);
	if (usec >= res) {
		int64_t rem = usec;
		str_putc(out, '.');
		for (int64_t n = million / 10; rem >= res && n > 0; n /= 10) {
			str_putc(out, (char)('0' + rem / n));
			rem %= n;
		}
	}
}

static const char *status_word(dlv_action_t a)
{
	switch (a) {
	case DLV_ACT_FAILED:
		return "bounced";
	case DLV_ACT_DELAYED:
		return "deferred";
	default:
		return "sent";
	}
}

void dlv_log_format(str_t *out, const char *queue_id, const dlv_rcpt_t *r,
    const dlv_status_t *st, const dlv_delays_t *dl, int digits)
{
	const char *relay = st->relay && *st->relay ? st->relay : "none";

	str_cat(out, queue_id);
	str_cat(out, ": to=<");
	addr_externalize(r->address, out);
	if (r->orig && *r->orig && strcmp(r->orig, r->address) != 0) {
		str_cat(out, ">, orig_to=<");
		addr_externalize(r->orig, out);
	}
	str_catf(out, ">, relay=%s, delay=", relay);
	put_delay(out, dl ? dl->total : 0, digits);
	str_cat(out, ", delays=");
	put_delay(out, dl ? dl->a : 0, digits);
	str_putc(out, '/');
	put_delay(out, dl ? dl->b : 0, digits);
	str_putc(out, '/');
	put_delay(out, dl ? dl->c : 0, digits);
	str_putc(out, '/');
	put_delay(out, dl ? dl->d : 0, digits);
	str_catf(out, ", dsn=%s, status=%s (%s)", st->status,
	    status_word(st->action), st->reason ? st->reason : "");
}

void dlv_delays_compute(dlv_delays_t *dl, int64_t arrival, int64_t active,
    int64_t handoff, int64_t conn_us, int64_t xfer_us, int64_t now)
{
	memset(dl, 0, sizeof(*dl));
	if (arrival > 0 && now > arrival)
		dl->total = (double)(now - arrival) / 1e6;
	if (arrival > 0 && active > arrival)
		dl->a = (double)(active - arrival) / 1e6;
	if (active > 0 && handoff > active)
		dl->b = (double)(handoff - active) / 1e6;
	/* As Postfix: c ends when the connection is set up, d is the rest;
	 * without a connection (local, discard, error) d is all of it.  An
	 * agent that timed only the transfer gives that. */
	if (conn_us > 0)
		dl->c = (double)conn_us / 1e6;
	if (handoff > 0 && now > handoff + (conn_us > 0 ? conn_us : 0))
		dl->d = (double)(now - handoff - (conn_us > 0 ? conn_us : 0))
		    / 1e6;
	else if (xfer_us > 0)
		dl->d = (double)xfer_us / 1e6;
}

void dlv_log_reply(const dlv_request_t *req, const dlv_reply_t *rep,
    int64_t handoff, int64_t now, int digits)
{
	/* One buffer for the life of the process: no allocation per
	 * recipient once it has grown to the longest line. */
	static str_t line = STR_INIT;
	dlv_delays_t dl;

	dlv_delays_compute(&dl, req->arrival, req->active, handoff,
	    rep->conn_us, rep->xfer_us, now);
	for (size_t i = 0; i < rep->n && i < req->nrcpt; i++) {
		str_reset(&line);
		dlv_log_format(&line, req->queue_id, &req->rcpt[i], &rep->st[i],
		    &dl, digits);
		log_info("%s", str_cstr(&line));
	}
}
