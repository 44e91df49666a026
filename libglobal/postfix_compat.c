/* Postfix configuration items Petrel does not implement (see
 * postfix_compat.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "postfix_compat.h"

static const char *const postfix_params[] = {
#include "postfix_params.inc"
};

static int cmp_name(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

bool postfix_param_known(const char *name)
{
	return bsearch(name, postfix_params,
	    sizeof(postfix_params) / sizeof(postfix_params[0]),
	    sizeof(postfix_params[0]), cmp_name) != NULL;
}

/* what starting with '=': Petrel does this without a service. */
static const struct {
	const char *name;
	const char *what;
} missing[] = {
	{ "anvil", "connection and rate statistics" },
	{ "dnsblog", "DNS blocklist lookups for postscreen" },
	{ "flush", "the fast ETRN/sendmail -qR queue" },
	{ "lmtp", "the LMTP client" },
	{ "oqmgr", "the old queue manager" },
	{ "pipe", "delivery to external commands" },
	{ "postlogd", "logging to a file through a daemon" },
	{ "postscreen", "the zombie blocker in front of smtpd" },
	{ "proxymap", "=Petrel's chrooted daemons open their tables before the chroot" },
	{ "qmqpd", "the QMQP server" },
	{ "spawn", "external policy servers" },
	{ "tlsmgr", "the TLS session cache and random pool" },
	{ "tlsproxy", "TLS for postscreen" },
	{ "trivial-rewrite", "=address rewriting and resolution are built into the daemons that need them" },
	{ "verify", "address verification" },
	{ "virtual", "delivery to virtual mailboxes" },
};

const char *postfix_daemon_missing(const char *prog)
{
	const char *base = strrchr(prog, '/');

	base = base ? base + 1 : prog;
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++)
		if (strcmp(base, missing[i].name) == 0)
			return missing[i].what;
	return NULL;
}

size_t postfix_mastercf_filter(mastercf_t *m, const char *daemon_dir,
    str_t *warnings)
{
	str_t path = STR_INIT;
	size_t kept = 0, dropped = 0;

	for (size_t i = 0; i < m->count; i++) {
		mastercf_entry_t *e = m->entries[i];
		const char *prog = e->argv[0];
		const char *what = postfix_daemon_missing(prog);

		/* A program of that name in daemon_directory is someone's own
		 * and runs; one elsewhere (/usr/lib/postfix/sbin/...) is
		 * Postfix's, which cannot talk to Petrel's master. */
		if (what != NULL) {
			const char *base = strrchr(prog, '/');
			str_setf(&path, "%s/%s", daemon_dir, base ? base + 1 : prog);
			if ((base == NULL || strcmp(prog, str_cstr(&path)) == 0)
			    && access(str_cstr(&path), X_OK) == 0)
				what = NULL;
		}
		if (what == NULL) {
			m->entries[kept++] = e;
			continue;
		}
		if (*what == '=')
			str_catf(warnings, "%s:%d: service %s/%s: Postfix's %s is "
			    "not needed by Petrel (%s); the service is not "
			    "started\n", e->file, e->line, e->service,
			    mastercf_type_name(e->type), prog, what + 1);
		else
			str_catf(warnings, "%s:%d: service %s/%s: Postfix's %s "
			    "(%s) is not implemented by Petrel; the service is "
			    "not started\n", e->file, e->line, e->service,
			    mastercf_type_name(e->type), prog, what);
		mastercf_entry_free(e);
		dropped++;
	}
	m->count = kept;
	str_release(&path);
	return dropped;
}
