/* The smtpd configuration snapshot: every parameter read once, tables,
 * lists and the TLS context opened once per process. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "server.h"
#include "smtpd.h"

static const struct {
	const char *name;
	int bit;
} ehlo_keywords[] = {
	{ "pipelining", SMTPD_EXT_PIPELINING }, { "size", SMTPD_EXT_SIZE },
	{ "8bitmime", SMTPD_EXT_8BITMIME }, { "dsn", SMTPD_EXT_DSN },
	{ "enhancedstatuscodes", SMTPD_EXT_ENHANCED },
	{ "smtputf8", SMTPD_EXT_SMTPUTF8 }, { "chunking", SMTPD_EXT_CHUNKING },
	{ "starttls", SMTPD_EXT_STARTTLS }, { "vrfy", SMTPD_EXT_VRFY },
	{ "auth", SMTPD_EXT_AUTH },
};

static int discard_mask(const char *value)
{
	char *copy = xstrdup(value), *cp = copy, *t;
	int mask = 0;

	while ((t = maps_token_cut(&cp)) != NULL) {
		size_t k;
		for (k = 0; k < sizeof(ehlo_keywords) / sizeof(ehlo_keywords[0]); k++)
			if (strcasecmp(t, ehlo_keywords[k].name) == 0) {
				mask |= ehlo_keywords[k].bit;
				break;
			}
		if (k == sizeof(ehlo_keywords) / sizeof(ehlo_keywords[0]))
			log_warning("smtpd_discard_ehlo_keywords: unknown keyword "
			    "\"%s\" ignored", t);
	}
	free(copy);
	return mask;
}

static char **word_list(const char *value)
{
	char *copy = xstrdup(value), *cp = copy, *t;
	char **v = xcalloc(1, sizeof(*v));
	size_t n = 0;

	while ((t = maps_token_cut(&cp)) != NULL) {
		v = xreallocarray(v, n + 2, sizeof(*v));
		v[n++] = xstrdup(t);
		v[n] = NULL;
	}
	free(copy);
	return v;
}

/* local_recipient_maps: the rule local delivers by (local_rcpt.h).  The
 * tables are opened now, before a chroot; one that cannot be is tried
 * again when used, and unknown local recipients get 451 4.3.0 meanwhile. */
static void load_lrmaps(smtpd_cfg_t *cfg)
{
	str_t err = STR_INIT;

	cfg->lrcpt = local_rcpt_from_config();
	if (local_rcpt_open(cfg->lrcpt, &err) > 0)
		log_warning("local_recipient_maps: %s; unknown local "
		    "recipients get 451 4.3.0 until it can be read",
		    str_cstr(&err));
	str_release(&err);
}

/* SMTP AUTH and the sender login checks. */
static int load_sasl(smtpd_cfg_t *cfg, str_t *err)
{
	str_t why = STR_INIT;
	const char *v;
	bool uses_login = false;

	cfg->sasl_enable = pconfig_get_bool("smtpd_sasl_auth_enable");
	cfg->tls_auth_only = pconfig_get_bool("smtpd_tls_auth_only");
	cfg->tls_wrapper = pconfig_get_bool("smtpd_tls_wrappermode");
	cfg->sasl_header = pconfig_get_bool("smtpd_sasl_authenticated_header");
	cfg->broken_sasl = pconfig_get_bool("broken_sasl_auth_clients");
	cfg->sasl_timeout_ms = pconfig_get_time("smtpd_sasl_timeout") * 1000;
	cfg->sasl_resp_limit =
	    (size_t)pconfig_get_int("smtpd_sasl_response_limit");
	cfg->sasl_path = xstrdup(pconfig_get_str("smtpd_sasl_path"));
	cfg->sasl_service = xstrdup(pconfig_get_str("smtpd_sasl_service"));
	if (sasl_opts_parse(pconfig_get_str("smtpd_sasl_security_options"),
	    &cfg->sasl_opts, &why) < 0 ||
	    sasl_opts_parse(pconfig_get_str("smtpd_sasl_tls_security_options"),
	    &cfg->sasl_tls_opts, &why) < 0) {
		str_setf(err, "smtpd_sasl_security_options: %s", str_cstr(&why));
		str_release(&why);
		return -1;
	}
	str_release(&why);
	v = pconfig_get_str("smtpd_sasl_type");
	if (strcmp(v, "dovecot") != 0) {
		str_setf(err, "smtpd_sasl_type = %s: only dovecot is supported", v);
		return -1;
	}
	/* The service name goes into the protocol as it is. */
	if (!smtpd_sasl_mech_name_ok(cfg->sasl_service, strlen(cfg->sasl_service))) {
		str_setf(err, "smtpd_sasl_service = %s: not a service name",
		    cfg->sasl_service);
		return -1;
	}
	if (cfg->sasl_enable && *cfg->sasl_path == 0) {
		str_set(err, "smtpd_sasl_auth_enable = yes with an empty "
		    "smtpd_sasl_path");
		return -1;
	}
	if (cfg->sasl_enable && cfg->tls_auth_only && cfg->tls == NULL)
		log_warning("smtpd_sasl_auth_enable = yes but AUTH is never "
		    "offered: smtpd_tls_auth_only = yes and TLS is not "
		    "available (smtpd_tls_security_level, smtpd_tls_cert_file)");
	if (cfg->tls_wrapper && cfg->tls == NULL)
		log_warning("smtpd_tls_wrappermode = yes without a TLS "
		    "certificate (smtpd_tls_security_level, smtpd_tls_cert_file): "
		    "every connection is closed");
	cfg->login_maps = smtpd_maps_open("smtpd_sender_login_maps",
	    pconfig_get_str("smtpd_sender_login_maps"));
	uses_login = smtpd_restr_uses_login_maps(cfg->client_restr) ||
	    smtpd_restr_uses_login_maps(cfg->helo_restr) ||
	    smtpd_restr_uses_login_maps(cfg->sender_restr) ||
	    smtpd_restr_uses_login_maps(cfg->relay_restr) ||
	    smtpd_restr_uses_login_maps(cfg->rcpt_restr) ||
	    smtpd_restr_uses_login_maps(cfg->data_restr) ||
	    smtpd_restr_uses_login_maps(cfg->eod_restr);
	if (uses_login && cfg->login_maps == NULL)
		log_warning("reject_*sender_login_mismatch has no effect: "
		    "smtpd_sender_login_maps is empty");
	return 0;
}

smtpd_cfg_t *smtpd_cfg_load(str_t *err)
{
	smtpd_cfg_t *cfg = xcalloc(1, sizeof(*cfg));
	str_t warn = STR_INIT;
	const char *v;
	static const struct {
		const char *param;
		size_t off;
	} lists[] = {
		{ "smtpd_client_restrictions", offsetof(smtpd_cfg_t, client_restr) },
		{ "smtpd_helo_restrictions", offsetof(smtpd_cfg_t, helo_restr) },
		{ "smtpd_sender_restrictions", offsetof(smtpd_cfg_t, sender_restr) },
		{ "smtpd_relay_restrictions", offsetof(smtpd_cfg_t, relay_restr) },
		{ "smtpd_recipient_restrictions", offsetof(smtpd_cfg_t, rcpt_restr) },
		{ "smtpd_data_restrictions", offsetof(smtpd_cfg_t, data_restr) },
		{ "smtpd_end_of_data_restrictions", offsetof(smtpd_cfg_t, eod_restr) },
	};

	cfg->myhostname = xstrdup(pconfig_get_str("myhostname"));
	cfg->myorigin = xstrdup(pconfig_get_str("myorigin"));
	cfg->banner = xstrdup(pconfig_get_str("smtpd_banner"));
	cfg->timeout_ms = pconfig_get_time("smtpd_timeout") * 1000;
	cfg->starttls_timeout_ms =
	    pconfig_get_time("smtpd_starttls_timeout") * 1000;
	cfg->ipc_timeout_ms = pconfig_get_time("ipc_timeout") * 1000;
	cfg->hard_limit = pconfig_get_int("smtpd_hard_error_limit");
	cfg->soft_limit = pconfig_get_int("smtpd_soft_error_limit");
	cfg->junk_limit = pconfig_get_int("smtpd_junk_command_limit");
	cfg->error_sleep = pconfig_get_time("smtpd_error_sleep_time");
	cfg->rcpt_limit = pconfig_get_int("smtpd_recipient_limit");
	cfg->rcpt_overshoot =
	    pconfig_get_int("smtpd_recipient_overshoot_limit");
	cfg->size_limit = (uint64_t)pconfig_get_size("message_size_limit");
	cfg->line_limit = (size_t)pconfig_get_int("line_length_limit");
	cfg->conn_limit =
	    pconfig_get_int("smtpd_client_connection_count_limit");
	cfg->conn_rate_limit =
	    pconfig_get_int("smtpd_client_connection_rate_limit");
	cfg->mail_rate_limit =
	    pconfig_get_int("smtpd_client_message_rate_limit");
	cfg->rcpt_rate_limit =
	    pconfig_get_int("smtpd_client_recipient_rate_limit");
	cfg->newtls_rate_limit =
	    pconfig_get_int("smtpd_client_new_tls_session_rate_limit");
	cfg->auth_rate_limit = pconfig_get_int("smtpd_client_auth_rate_limit");
	cfg->helo_required = pconfig_get_bool("smtpd_helo_required");
	cfg->delay_reject = pconfig_get_bool("smtpd_delay_reject");
	cfg->disable_vrfy = pconfig_get_bool("disable_vrfy_command");
	cfg->reject_unlisted =
	    pconfig_get_bool("smtpd_reject_unlisted_recipient");
	cfg->content_filter = xstrdup(pconfig_get_str("content_filter"));
	if (recv_override_parse(pconfig_get_str("receive_override_options"),
	    &cfg->recv_override, err) < 0)
		goto fail;
	if (cfg->content_filter[0] != '\0') {
		str_t why = STR_INIT;
		if (!filter_valid(cfg->content_filter, &why)) {
			str_setf(err, "content_filter = %.100s: %s",
			    cfg->content_filter, str_cstr(&why));
			str_release(&why);
			goto fail;
		}
		str_release(&why);
	}
	cfg->peername_lookup = pconfig_get_bool("smtpd_peername_lookup");
	cfg->smtputf8 = pconfig_get_bool("smtputf8_enable");
	cfg->strict_envelopes = pconfig_get_bool("strict_rfc821_envelopes");
	cfg->port_logging = pconfig_get_bool("smtpd_client_port_logging");
	cfg->tls_received = pconfig_get_bool("smtpd_tls_received_header");
	v = pconfig_get_str("smtpd_forbid_bare_newline");
	cfg->bare_lf = strcmp(v, "yes") == 0 ? SMTPD_LF_REJECT :
	    strcmp(v, "no") == 0 ? SMTPD_LF_ACCEPT : SMTPD_LF_NORMALIZE;
	cfg->ext_discard =
	    discard_mask(pconfig_get_str("smtpd_discard_ehlo_keywords"));
	if (!cfg->smtputf8)
		cfg->ext_discard |= SMTPD_EXT_SMTPUTF8;
	if (cfg->disable_vrfy)
		cfg->ext_discard |= SMTPD_EXT_VRFY;
	cfg->recipient_delimiter =
	    xstrdup(pconfig_get_str("recipient_delimiter"));
	cfg->relay_code = (int)pconfig_get_int("relay_domains_reject_code");
	cfg->access_code = (int)pconfig_get_int("access_map_reject_code");
	cfg->unknown_addr_code =
	    atoi(pconfig_get_str("unknown_address_reject_code"));
	cfg->unknown_local_code =
	    (int)pconfig_get_int("unknown_local_recipient_reject_code");
	cfg->unknown_virtual_code =
	    (int)pconfig_get_int("unknown_virtual_mailbox_reject_code");
	cfg->unknown_alias_code =
	    (int)pconfig_get_int("unknown_virtual_alias_reject_code");
	cfg->non_fqdn_code = (int)pconfig_get_int("non_fqdn_reject_code");
	cfg->forbidden = word_list(pconfig_get_str("smtpd_forbidden_commands"));
	cfg->sendmail_path = xstrdup(pconfig_get_str("sendmail_path"));
	cfg->cleanup_service = xstrdup(pconfig_get_str("cleanup_service_name"));
	cfg->milters = xstrdup(pconfig_get_str("smtpd_milters"));
	milter_params_load(&cfg->milter_params);
	/* The stage lists point into the configuration: copied. */
	for (int i = 0; i < MILTER_M_COUNT; i++)
		cfg->milter_params.macros[i] = cfg->milter_params.macros[i] ?
		    xstrdup(cfg->milter_params.macros[i]) : NULL;
	cfg->milter_macro_v = xstrdup(pconfig_get_str("milter_macro_v"));
	cfg->milter_daemon_name =
	    xstrdup(pconfig_get_str("milter_macro_daemon_name"));

	v = pconfig_get_str("smtpd_tls_security_level");
	cfg->tls_level = strcmp(v, "encrypt") == 0 ? SMTPD_TLS_ENCRYPT :
	    strcmp(v, "may") == 0 ? SMTPD_TLS_MAY : SMTPD_TLS_NONE;
	/* Implicit TLS needs the certificate whatever the level says. */
	if (cfg->tls_level != SMTPD_TLS_NONE ||
	    pconfig_get_bool("smtpd_tls_wrappermode")) {
		str_t terr = STR_INIT;
		cfg->tls = tls_server_ctx_from_config(&terr);
		if (cfg->tls == NULL) {
			cfg->tls_error = xstrdup(str_cstr(&terr));
			log_warning("TLS is not available: %s%s", cfg->tls_error,
			    cfg->tls_level == SMTPD_TLS_ENCRYPT ?
			    "; smtpd_tls_security_level = encrypt: no mail "
			    "is accepted" : "; STARTTLS is not offered");
		}
		str_release(&terr);
	}

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		smtpd_restr_t *r = smtpd_restr_parse(lists[i].param,
		    pconfig_get_str(lists[i].param), err, &warn);
		if (r == NULL)
			goto fail;
		*(smtpd_restr_t **)((char *)cfg + lists[i].off) = r;
	}
	if (!smtpd_restr_stops_relay(cfg->relay_restr) &&
	    !smtpd_restr_stops_relay(cfg->rcpt_restr)) {
		str_set(err, "smtpd_relay_restrictions and smtpd_recipient_"
		    "restrictions: neither has reject_unauth_destination, "
		    "defer_unauth_destination, reject or defer; refusing to "
		    "run as an open relay");
		goto fail;
	}
	cfg->mynetworks = smtpd_netlist_new("mynetworks",
	    pconfig_get_str("mynetworks"), err);
	if (cfg->mynetworks == NULL)
		goto fail;
	cfg->limit_exceptions = smtpd_netlist_new("smtpd_client_event_limit_exceptions",
	    pconfig_get_str("smtpd_client_event_limit_exceptions"), err);
	if (cfg->limit_exceptions == NULL)
		goto fail;
	cfg->mydestination = addr_domlist_new("mydestination",
	    pconfig_get_str("mydestination"), 0, err);
	if (cfg->mydestination == NULL)
		goto fail;
	cfg->relay_domains = addr_domlist_new("relay_domains",
	    pconfig_get_str("relay_domains"), 0, err);
	if (cfg->relay_domains == NULL)
		goto fail;
	cfg->virtual_domains = addr_domlist_new("virtual_mailbox_domains",
	    pconfig_get_str("virtual_mailbox_domains"), 0, err);
	if (cfg->virtual_domains == NULL)
		goto fail;
	cfg->virtual_maps = smtpd_maps_open("virtual_mailbox_maps",
	    pconfig_get_str("virtual_mailbox_maps"));
	cfg->alias_domains = addr_domlist_new("virtual_alias_domains",
	    pconfig_get_str("virtual_alias_domains"), 0, err);
	if (cfg->alias_domains == NULL)
		goto fail;
	cfg->alias_maps = smtpd_maps_open("virtual_alias_maps",
	    pconfig_get_str("virtual_alias_maps"));
	load_lrmaps(cfg);
	if (load_sasl(cfg, err) < 0)
		goto fail;
	if (str_len(&warn) > 0)
		log_lines(LOG_LVL_WARNING, str_cstr(&warn));
	str_release(&warn);
	return cfg;
fail:
	str_release(&warn);
	smtpd_cfg_free(cfg);
	return NULL;
}

void smtpd_cfg_free(smtpd_cfg_t *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->myhostname);
	free(cfg->content_filter);
	free(cfg->myorigin);
	free(cfg->banner);
	free(cfg->recipient_delimiter);
	free(cfg->tls_error);
	free(cfg->sendmail_path);
	free(cfg->cleanup_service);
	free(cfg->milters);
	for (int i = 0; i < MILTER_M_COUNT; i++)
		free((char *)cfg->milter_params.macros[i]);
	free(cfg->milter_macro_v);
	free(cfg->milter_daemon_name);
	if (cfg->tls)
		tls_ctx_free(cfg->tls);
	smtpd_restr_free(cfg->client_restr);
	smtpd_restr_free(cfg->helo_restr);
	smtpd_restr_free(cfg->sender_restr);
	smtpd_restr_free(cfg->relay_restr);
	smtpd_restr_free(cfg->rcpt_restr);
	smtpd_restr_free(cfg->data_restr);
	smtpd_restr_free(cfg->eod_restr);
	smtpd_netlist_free(cfg->mynetworks);
	smtpd_netlist_free(cfg->limit_exceptions);
	addr_domlist_free(cfg->mydestination);
	addr_domlist_free(cfg->relay_domains);
	addr_domlist_free(cfg->virtual_domains);
	maps_free(cfg->virtual_maps);
	addr_domlist_free(cfg->alias_domains);
	maps_free(cfg->alias_maps);
	local_rcpt_free(cfg->lrcpt);
	maps_free(cfg->login_maps);
	free(cfg->sasl_path);
	free(cfg->sasl_service);
	if (cfg->forbidden) {
		for (char **p = cfg->forbidden; *p; p++)
			free(*p);
		free(cfg->forbidden);
	}
	if (cfg->dns)
		dns_resolver_free(cfg->dns);
	free(cfg);
}
