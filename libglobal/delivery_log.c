/* The per-recipient delivery log line, in Postfix's format. */
#include <string.h>
#include "delivery.h"

static void put_delay(str_t *out, double d, int digits)
{
	if (d < 0)
		d = 0;
	if (digits <= 0)
		str_catf(out, "%.0f", d);
	else
		str_catf(out, "%.*f", digits > 6 ? 6 : digits, d);
}

/* Postfix prints small values in the a/b/c/d list with the configured
 * precision, but a value that rounds to zero as plain "0": that keeps
 * the common "delays=0.01/0/0/0" short. */
static void put_part(str_t *out, double d, int digits)
{
	double unit = 1;

	for (int i = 0; i < digits && i < 6; i++)
		unit /= 10;
	if (d < unit / 2)
		str_cat(out, "0");
	else
		put_delay(out, d, digits);
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

	str_catf(out, "%s: to=<%s>", queue_id, r->address);
	if (r->orig && *r->orig && strcmp(r->orig, r->address) != 0)
		str_catf(out, ", orig_to=<%s>", r->orig);
	str_catf(out, ", relay=%s, delay=", relay);
	put_delay(out, dl ? dl->total : 0, digits);
	str_cat(out, ", delays=");
	put_part(out, dl ? dl->a : 0, digits);
	str_putc(out, '/');
	put_part(out, dl ? dl->b : 0, digits);
	str_putc(out, '/');
	put_part(out, dl ? dl->c : 0, digits);
	str_putc(out, '/');
	put_part(out, dl ? dl->d : 0, digits);
	str_catf(out, ", dsn=%s, status=%s (%s)", st->status,
	    status_word(st->action), st->reason ? st->reason : "");
}
