/* libpostq: flushing (postq -f, -s site, -i queue_id): make deferred mail
 * due now and tell qmgr. */
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include "mastercf.h"
#include "pconfig.h"
#include "pq.h"
#include "resolve.h"
#include "server.h"

int pq_qmgr_trigger(const char *config_dir, const char *bytes, str_t *err)
{
	str_t path = STR_INIT, errors = STR_INIT;
	const mastercf_entry_t *e = NULL;
	mastercf_t *m;
	int rc = -1;

	str_setf(&path, "%s/master.cf", config_dir);
	if ((m = mastercf_load(str_cstr(&path), &errors)) == NULL) {
		str_setf(err, "cannot read %s: %s", str_cstr(&path),
		    str_cstr(&errors));
		goto out;
	}
	for (size_t i = 0; i < m->count && e == NULL; i++) {
		const mastercf_entry_t *x = m->entries[i];
		if (strcmp(x->service, "qmgr") == 0 && (x->type == MCF_UNIX
		    || x->type == MCF_FIFO || x->type == MCF_UNIX_DGRAM))
			e = x;
	}
	if (e == NULL) {
		str_setf(err, "%s has no qmgr service", str_cstr(&path));
		goto out;
	}
	str_setf(&path, "%s/%s/%s", config_get_str("queue_directory"),
	    e->private_svc ? "private" : "public", e->service);
	if (trigger_send(str_cstr(&path), bytes, strlen(bytes),
	    (int)config_get_time("trigger_timeout") * 1000) < 0) {
		str_setf(err, "cannot reach qmgr at %s: %s%s", str_cstr(&path),
		    strerror(errno), errno == ENOENT || errno == ECONNREFUSED
		    || errno == ENXIO ? " (is Petrel running?)" : "");
		goto out;
	}
	rc = 0;
out:
	if (m)
		mastercf_free(m);
	str_release(&path);
	str_release(&errors);
	return rc;
}

/* Does a recipient of m go to site?  Its domain, or the nexthop the
 * resolver gives (which follows transport_maps and relayhost). */
static bool for_site(pq_msg_t *m, const char *site, resolver_t *res)
{
	resolve_reply_t rr = RESOLVE_REPLY_INIT;
	const char *addr, *reason;
	bool hit = false;

	while (!hit && pq_msg_next_rcpt(m, &addr, &reason) > 0) {
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

long pq_flush_site(const queue_layout_t *ql, const char *site, str_t *err)
{
	pq_files_t files = PQ_FILES_INIT;
	resolver_t *res;
	str_t rerr = STR_INIT;
	long n = 0;

	/* Without a resolver (a broken table) the domain still matches. */
	res = resolver_from_config(&rerr);
	str_release(&rerr);
	if (pq_collect(ql, QUEUE_DEFERRED, &files, err) < 0) {
		resolver_free(res);
		return -1;
	}
	for (size_t i = 0; i < files.n; i++) {
		pq_msg_t m;
		if (pq_msg_open(ql, &files.v[i], &m) == 0 && for_site(&m, site, res)
		    && utimes(files.v[i].path, NULL) == 0)
			n++;
		pq_msg_close(&m);
	}
	pq_files_free(&files);
	resolver_free(res);
	return n;
}

int pq_flush_id(const queue_layout_t *ql, const char *id, const char **queue,
    str_t *err)
{
	str_t path = STR_INIT;
	int q, rc = -1;

	*queue = NULL;
	if (!queue_id_valid(id)) {
		str_setf(err, "%s: not a valid queue ID", id);
		return -1;
	}
	for (q = 0; pq_list_queues[q] != NULL; q++)
		if (queue_find(ql, pq_list_queues[q], id, &path) == 0)
			break;
	if (pq_list_queues[q] == NULL) {
		str_setf(err, "%s: no such message in the queue", id);
		goto out;
	}
	*queue = pq_list_queues[q];
	if (strcmp(*queue, QUEUE_HOLD) == 0) {
		str_setf(err, "%s: the message is on hold (postsuper -H releases "
		    "it)", id);
		goto out;
	}
	if (strcmp(*queue, QUEUE_DEFERRED) == 0 && utimes(str_cstr(&path),
	    NULL) < 0) {
		str_setf(err, "%s: %s", str_cstr(&path), strerror(errno));
		goto out;
	}
	rc = 0;
out:
	str_release(&path);
	return rc;
}
