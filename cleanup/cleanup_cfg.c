/* cleanup: configuration and lookup tables. */
#include <limits.h>
#include <string.h>
#include <strings.h>
#include "cleanup.h"
#include "content_filter.h"
#include "log.h"
#include "maps.h"
#include "mem.h"
#include "pconfig.h"

/* A table list that must open whole: "param: reason" otherwise. */
static int tables_open(struct maps **m, const char *param, str_t *err)
{
	*m = maps_open(param, pconfig_get_str(param), MAPS_FLAG_STRICT, NULL,
	    err);
	return *m == NULL ? -1 : 0;
}

static int ms(long seconds)
{
	if (seconds <= 0)
		return 1000;
	if (seconds > INT_MAX / 1000)
		return INT_MAX;
	return (int)(seconds * 1000);
}

/* What the walk over a table's rules needs. */
typedef struct rule_ctx {
	const char *param;
	str_t *err;		/* a malformed FILTER: the error */
} rule_ctx_t;

/* An action a rule of a check table gives that Petrel will not do:
 * said once, with the rule's file:line, when the table is opened (the
 * rule is then ignored at each match, with a warning naming the
 * message).  A FILTER whose value is not transport:nexthop is an
 * error, as a bad pattern is (1 stops the walk). */
static int warn_rule(const char *file, int line, const char *result,
    void *ctx)
{
	rule_ctx_t *rc = ctx;
	const char *param = rc->param, *text;
	size_t tlen, n = strcspn(result, " \t");
	enum cleanup_checks_act act;

	if (result[0] == '$')
		return 0;		/* decided by the match */
	act = cleanup_checks_act_parse(result, &text, &tlen);
	if (act == CA_FILTER && strchr(text, '$') == NULL) {
		str_t v = STR_INIT, why = STR_INIT;
		bool good;

		str_append(&v, text, tlen);
		good = filter_valid(str_cstr(&v), &why);
		if (!good)
			str_setf(rc->err, "%s:%d: %s: bad FILTER \"%.100s\": %s",
			    file, line, param, str_cstr(&v), str_cstr(&why));
		str_release(&v);
		str_release(&why);
		return good ? 0 : 1;
	}
	if (act == CA_UNSUPPORTED)
		log_warning("%s:%d: %s: action \"%.*s\" is not supported by "
		    "Petrel; the rule will be ignored", file, line, param,
		    (int)(n > 40 ? 40 : n), result);
	else if ((act == CA_IGNORE || act == CA_PREPEND ||
	    act == CA_REPLACE) && strcmp(param, "body_checks") == 0)
		log_warning("%s:%d: %s: action \"%.*s\" edits headers, not "
		    "body lines; the rule will be ignored", file, line, param,
		    (int)(n > 40 ? 40 : n), result);
	return 0;
}

/* A list of check tables; none configured leaves *m NULL.  A table that
 * does not open (a malformed pattern: "file:line: ...") is an error. */
static int checks_open(struct maps **m, const char *param, str_t *err)
{
	const char *spec = pconfig_get_str(param);

	*m = NULL;
	if (spec == NULL || spec[strspn(spec, MAPS_SEPARATORS)] == '\0')
		return 0;
	*m = maps_open(param, spec, MAPS_FLAG_STRICT, NULL, err);
	if (*m == NULL)
		return -1;
	rule_ctx_t rc = { param, err };
	str_reset(err);
	for (size_t i = 0; i < maps_count(*m); i++)
		if (maps_dict(*m, i) != NULL)
			dict_pattern_results(maps_dict(*m, i), warn_rule, &rc);
	if (str_len(err) > 0) {
		maps_free(*m);
		*m = NULL;
		return -1;
	}
	return 0;
}

int cleanup_cfg_load(cleanup_cfg_t *cfg, str_t *err)
{
	str_t spec = STR_INIT;

	memset(cfg, 0, sizeof(*cfg));
	cfg->myhostname = xstrdup(pconfig_get_str("myhostname"));
	cfg->myorigin = xstrdup(pconfig_get_str("myorigin"));
	cfg->mail_name = xstrdup(pconfig_get_str("mail_name"));
	cfg->append_at_myorigin = pconfig_get_bool("append_at_myorigin");
	cfg->recipient_delimiter =
	    xstrdup(pconfig_get_str("recipient_delimiter"));
	cfg->message_size_limit = pconfig_get_size("message_size_limit");
	cfg->header_size_limit = pconfig_get_size("header_size_limit");
	cfg->hopcount_limit = pconfig_get_int("hopcount_limit");
	cfg->recipient_limit = pconfig_get_int("cleanup_recipient_limit");
	cfg->virt_recursion_limit =
	    pconfig_get_int("virtual_alias_recursion_limit");
	cfg->virt_expansion_limit =
	    pconfig_get_int("virtual_alias_expansion_limit");
	cfg->dup_filter_limit = pconfig_get_int("duplicate_filter_limit");
	cfg->enable_original_recipient =
	    pconfig_get_bool("enable_original_recipient");
	cfg->ipc_timeout_ms = ms(pconfig_get_time("ipc_timeout"));
	cfg->queue = QUEUE_INCOMING;
	if (cfg->header_size_limit <= 0)
		cfg->header_size_limit = LONG_MAX;

	str_setf(&spec, "%s, %s", cfg->myorigin,
	    pconfig_get_str("mydestination"));
	cfg->local_domains = addr_domlist_new("mydestination", str_cstr(&spec),
	    0, err);
	str_release(&spec);
	if (cfg->local_domains == NULL)
		goto fail;
	if (tables_open(&cfg->canonical, "canonical_maps", err) < 0 ||
	    tables_open(&cfg->sender_canonical, "sender_canonical_maps",
	    err) < 0 ||
	    tables_open(&cfg->recipient_canonical,
	    "recipient_canonical_maps", err) < 0 ||
	    tables_open(&cfg->virtual_alias, "virtual_alias_maps", err) < 0)
		goto fail;
	if (checks_open(&cfg->header_checks, "header_checks", err) < 0 ||
	    checks_open(&cfg->mime_header_checks, "mime_header_checks",
	    err) < 0 ||
	    checks_open(&cfg->nested_header_checks, "nested_header_checks",
	    err) < 0 ||
	    checks_open(&cfg->body_checks, "body_checks", err) < 0)
		goto fail;
	cfg->body_checks_size_limit =
	    pconfig_get_size("body_checks_size_limit");
	cfg->non_smtpd_milters = xstrdup(pconfig_get_str("non_smtpd_milters"));
	if (queue_layout_from_config(&cfg->ql, err) < 0)
		goto fail;
	return 0;
fail:
	cleanup_cfg_free(cfg);
	return -1;
}

void cleanup_cfg_free(cleanup_cfg_t *cfg)
{
	free(cfg->myhostname);
	free(cfg->myorigin);
	free(cfg->mail_name);
	free(cfg->recipient_delimiter);
	free(cfg->non_smtpd_milters);
	if (cfg->local_domains != NULL)
		addr_domlist_free(cfg->local_domains);
	maps_free(cfg->canonical);
	maps_free(cfg->sender_canonical);
	maps_free(cfg->recipient_canonical);
	maps_free(cfg->virtual_alias);
	if (cfg->header_checks != NULL)
		maps_free(cfg->header_checks);
	if (cfg->mime_header_checks != NULL)
		maps_free(cfg->mime_header_checks);
	if (cfg->nested_header_checks != NULL)
		maps_free(cfg->nested_header_checks);
	if (cfg->body_checks != NULL)
		maps_free(cfg->body_checks);
	queue_layout_free(&cfg->ql);
	memset(cfg, 0, sizeof(*cfg));
}
