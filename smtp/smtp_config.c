/* The client's settings from the smtp_* parameters. */
#include <limits.h>
#include <string.h>
#include "pconfig.h"
#include "smtp/smtp_int.h"

static int ms(const char *name)
{
	long s = config_get_time(name);

	if (s > INT_MAX / 1000)
		return INT_MAX;
	return s < 0 ? 0 : (int)(s * 1000);
}

int smtp_config_load(smtp_config_t *c, str_t *err)
{
	const char *v;
	dns_resolver_t *r;

	smtp_config_defaults(c);
	c->connect_timeout_ms = ms("smtp_connect_timeout");
	c->helo_timeout_ms = ms("smtp_helo_timeout");
	c->starttls_timeout_ms = ms("smtp_starttls_timeout");
	c->mail_timeout_ms = ms("smtp_mail_timeout");
	c->rcpt_timeout_ms = ms("smtp_rcpt_timeout");
	c->data_init_timeout_ms = ms("smtp_data_init_timeout");
	c->data_xfer_timeout_ms = ms("smtp_data_xfer_timeout");
	c->data_done_timeout_ms = ms("smtp_data_done_timeout");
	c->rset_timeout_ms = ms("smtp_rset_timeout");
	c->quit_timeout_ms = ms("smtp_quit_timeout");
	v = config_get_str("smtp_helo_name");
	if (v[0] == '\0' || strpbrk(v, " \t\r\n") != NULL ||
	    !bcopy_str(c->helo_name, sizeof(c->helo_name), v)) {
		str_setf(err, "smtp_helo_name: bad value \"%s\"", v);
		return -1;
	}
	c->mx_session_limit = (size_t)config_get_int("smtp_mx_session_limit");
	c->line_length_limit = (size_t)config_get_int("smtp_line_length_limit");
	c->skip_5xx_greeting = config_get_bool("smtp_skip_5xx_greeting");
	c->always_send_ehlo = config_get_bool("smtp_always_send_ehlo");
	v = config_get_str("smtp_tls_security_level");
	if (!tls_level_parse(v, &c->tls_level)) {
		str_setf(err, "smtp_tls_security_level: unknown level \"%s\"", v);
		return -1;
	}
	c->connection_cache = config_get_bool("smtp_connection_cache_on_demand");
	c->cache_time_limit_ms = ms("smtp_connection_cache_time_limit");
	c->reuse_time_limit_ms = ms("smtp_connection_reuse_time_limit");
	c->reuse_count_limit =
	    (unsigned)config_get_int("smtp_connection_reuse_count_limit");
	if (dns_opts_from_config(&c->dns, err) < 0)
		return -1;
	if ((c->dns.lookup & DNS_LOOKUP_DNS) != 0) {
		if ((r = dns_resolver_from_config(err)) == NULL)
			return -1;
		c->dns.resolver = r;
	}
	return 0;
}

void smtp_config_release(smtp_config_t *c)
{
	if (c->dns.resolver != NULL)
		dns_resolver_free(c->dns.resolver);
	c->dns.resolver = NULL;
}
