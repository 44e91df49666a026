/* Making deferred mail due now and telling qmgr: postq -f and -s,
 * postsuper -U. */
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include "mastercf.h"
#include "pconfig.h"
#include "queue_flush.h"
#include "queue_msg.h"
#include "resolve.h"
#include "server.h"

enum queue_flush_send queue_flush_send(const char *config_dir,
    const char *bytes, str_t *where, str_t *errors)
{
	str_t rel = STR_INIT;
	int found;

	str_setf(where, "%s/master.cf", config_dir);
	found = mastercf_trigger_path(config_dir, "qmgr", &rel, errors);
	if (found <= 0) {
		str_release(&rel);
		return found < 0 ? QUEUE_FLUSH_NO_MASTER_CF :
		    QUEUE_FLUSH_NO_QMGR;
	}
	str_setf(where, "%s/%s", pconfig_get_str("queue_directory"),
	    str_cstr(&rel));
	str_release(&rel);
	if (trigger_send(str_cstr(where), bytes, strlen(bytes),
	    (int)pconfig_get_time("trigger_timeout") * 1000) < 0)
		return QUEUE_FLUSH_UNREACHABLE;
	return QUEUE_FLUSH_SENT;
}

int queue_flush_trigger(const char *config_dir, const char *bytes, str_t *err)
{
	str_t where = STR_INIT, errors = STR_INIT;
	int rc = -1;

	switch (queue_flush_send(config_dir, bytes, &where, &errors)) {
	case QUEUE_FLUSH_SENT:
		rc = 0;
		break;
	case QUEUE_FLUSH_NO_MASTER_CF:
		str_setf(err, "cannot read %s: %s", str_cstr(&where),
		    str_cstr(&errors));
		break;
	case QUEUE_FLUSH_NO_QMGR:
		str_setf(err, "%s has no qmgr service", str_cstr(&where));
		break;
	case QUEUE_FLUSH_UNREACHABLE:
		str_setf(err, "cannot reach qmgr at %s: %s%s", str_cstr(&where),
		    strerror(errno), errno == ENOENT || errno == ECONNREFUSED
		    || errno == ENXIO ? " (is Petrel running?)" : "");
		break;
	}
	str_release(&where);
	str_release(&errors);
	return rc;
}

/* Does a recipient of m go to site?  Its domain, or the nexthop the
 * resolver gives (which follows transport_maps and relayhost). */
static bool for_site(queue_msg_t *m, const char *site, resolver_t *res)
{
	resolve_reply_t rr = RESOLVE_REPLY_INIT;
	const char *addr, *reason;
	bool hit = false;

	while (!hit && queue_msg_next_rcpt(m, &addr, &reason) > 0) {
		const char *at = strrchr(addr, '@');
		if (at && strcasecmp(at + 1, site) == 0)
			hit = true;
		else if (res && resolve_addr(res, addr, &rr) == RESOLVE_OK
		    && strcasecmp(str_cstr(&rr.nexthop), site) == 0)
			hit = true;
	}
	resolve_reply_free(&rr);
	return hit;
}

long queue_flush_site(const queue_layout_t *ql, const char *site, str_t *err)
{
	queue_walk_files_t files = QUEUE_WALK_FILES_INIT;
	resolver_t *res;
	str_t rerr = STR_INIT;
	long n = 0;

	/* Without a resolver (a broken table) the domain still matches. */
	res = resolver_from_config(&rerr);
	str_release(&rerr);
	if (queue_walk_collect(ql, QUEUE_DEFERRED, &files, err) < 0) {
		resolver_free(res);
		return -1;
	}
	for (size_t i = 0; i < files.n; i++) {
		queue_msg_t m;
		if (queue_msg_open(ql, &files.v[i], &m) == 0
		    && for_site(&m, site, res)
		    && utimes(files.v[i].path, NULL) == 0)
			n++;
		queue_msg_close(&m);
	}
	queue_walk_files_free(&files);
	resolver_free(res);
	return n;
}
