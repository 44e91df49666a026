/* master: services, their endpoints, and reloading master.cf/main.cf. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "endpoint.h"
#include "jail.h"
#include "master.h"
#include "postfix_compat.h"
#include "mem.h"
#include "pconfig.h"
#include "sock.h"

#define LISTEN_BACKLOG 100

/* ---- inet addresses ---- */

/* Which families inet_protocols allows. */
static void protocols(bool *v4, bool *v6)
{
	const char *p = pconfig_get_str("inet_protocols");

	*v4 = strstr(p, "all") || strstr(p, "ipv4");
	*v6 = strstr(p, "all") || strstr(p, "ipv6");
}

static int resolve_port(const char *port, str_t *err)
{
	unsigned long v;
	struct servent *se;

	if (str_to_ulong(port, &v) && v >= 1 && v <= 65535)
		return (int)v;
	if ((se = getservbyname(port, "tcp")) != NULL)
		return ntohs((uint16_t)se->s_port);
	str_catf(err, "unknown TCP service name '%s'", port);
	return -1;
}

static void add_addr(struct sockaddr_storage **a, int *n, const struct sockaddr *sa,
    socklen_t len, int port)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, sa, len);
	if (ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
	/* inet_interfaces may name one address twice (a host name and its
	 * address): bind it once. */
	for (int i = 0; i < *n; i++)
		if (memcmp(&(*a)[i], &ss, sizeof(ss)) == 0)
			return;
	*a = xreallocarray(*a, (size_t)*n + 1, sizeof(**a));
	(*a)[(*n)++] = ss;
}

/* Addresses of one inet_interfaces item (or the host column). */
static int host_addrs(const char *host, int port, bool v4, bool v6,
    struct sockaddr_storage **a, int *n, str_t *err)
{
	struct addrinfo hints, *res, *ai;
	char h[256];
	size_t l = strlen(host);
	int r;

	if (strcmp(host, "loopback-only") == 0) {
		if (v4)
			host_addrs("127.0.0.1", port, true, false, a, n, err);
		if (v6)
			host_addrs("::1", port, false, true, a, n, err);
		return *n > 0 ? 0 : -1;
	}
	if (host[0] == '[' && l > 2 && host[l - 1] == ']') {
		host++;
		l -= 2;
	}
	if (l >= sizeof(h)) {
		str_catf(err, "host name too long: %s", host);
		return -1;
	}
	memcpy(h, host, l);
	h[l] = 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = v4 && v6 ? AF_UNSPEC : v4 ? AF_INET : AF_INET6;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if ((r = getaddrinfo(h, NULL, &hints, &res)) != 0) {
		str_catf(err, "address %s: %s", h, gai_strerror(r));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next)
		if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6)
			add_addr(a, n, ai->ai_addr, ai->ai_addrlen, port);
	freeaddrinfo(res);
	return 0;
}

/* The listening addresses of an inet entry, in "spec,spec" form for
 * the endpoint identity; wildcard says "every address".  -1 on error. */
static int inet_addrs(const mastercf_entry_t *e, struct sockaddr_storage **a,
    int *n, bool *wildcard, int *portp, str_t *err)
{
	bool v4, v6;
	int port = resolve_port(e->port, err);
	const char *hosts = *e->host ? e->host :
	    pconfig_get_str("inet_interfaces");
	char *copy, *p, *tok;

	*a = NULL;
	*n = 0;
	*wildcard = false;
	if (port < 0)
		return -1;
	*portp = port;
	protocols(&v4, &v6);
	copy = xstrdup(hosts);
	p = copy;
	while ((tok = str_token(&p, ", \t\n")) != NULL) {
		if (strcmp(tok, "all") == 0 || strcmp(tok, "*") == 0) {
			*wildcard = true;
			continue;
		}
		if (host_addrs(tok, port, v4, v6, a, n, err) < 0) {
			free(copy);
			free(*a);
			*a = NULL;
			return -1;
		}
	}
	free(copy);
	if (!*wildcard && *n == 0) {
		str_catf(err, "no address to listen on (inet_interfaces = %s)", hosts);
		return -1;
	}
	return 0;
}

/* ---- endpoints ---- */

/* An old socket or fifo at path goes: its previous owner (an earlier
 * master, or a service being replaced) no longer serves it, and we hold
 * the master lock of this queue directory. */
static int clear_path(const char *path, bool fifo_ok)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISSOCK(st.st_mode) || (fifo_ok && S_ISFIFO(st.st_mode)))
		return unlink(path);
	errno = EEXIST;
	return -1;
}

/* Fills s->endpoint (and path) without opening anything. */
static int endpoint_identity(master_service_t *s, struct sockaddr_storage **addrs,
    int *naddr, bool *wildcard, int *port, str_t *err)
{
	str_t id = STR_INIT;
	const mastercf_entry_t *e = s->ent;

	str_setf(&id, "%s:", mastercf_type_name(e->type));
	if (e->type == MCF_INET) {
		if (inet_addrs(e, addrs, naddr, wildcard, port, err) < 0) {
			str_release(&id);
			return -1;
		}
		bool v4, v6;
		protocols(&v4, &v6);
		if (*wildcard)
			str_catf(&id, "*%s%s:%d", v4 ? "4" : "", v6 ? "6" : "", *port);
		for (int i = 0; i < *naddr; i++) {
			char b[SOCK_ADDR_STRLEN];
			sock_addr_port_str((struct sockaddr *)&(*addrs)[i], b, sizeof(b));
			str_catf(&id, "%s%s", i > 0 || *wildcard ? "," : "", b);
		}
	} else {
		s->path = master_local_path(e);
		str_cat(&id, s->path);
	}
	s->endpoint = str_steal(&id);
	return 0;
}

static void add_fd(master_service_t *s, int fd)
{
	s->fds = xreallocarray(s->fds, (size_t)s->nfds + 1, sizeof(int));
	s->fds[s->nfds++] = fd;
}

/* At start-up an address in use may still be held by the processes of a
 * master that has just died: they close their copies of the listening
 * sockets within moments of noticing (doc/master.md).  So a start
 * retries for up to BIND_WAIT_MS before it gives up; a reload does not
 * wait.  True if another try is due (errno is kept). */
#define BIND_WAIT_MS	3000
#define BIND_STEP_MS	100
static int bind_waited = -1;	/* ms so far; -1: do not wait */

static bool bind_wait(void)
{
	struct timespec ts = { 0, BIND_STEP_MS * 1000000L };
	int saved = errno;

	if (saved != EADDRINUSE || bind_waited < 0 || bind_waited >= BIND_WAIT_MS)
		return false;
	if (bind_waited == 0)
		log_info("address in use; waiting up to %d s for it",
		    BIND_WAIT_MS / 1000);
	nanosleep(&ts, NULL);
	bind_waited += BIND_STEP_MS;
	errno = saved;
	return true;
}

static int open_endpoint(master_service_t *s, struct sockaddr_storage *addrs,
    int naddr, bool wildcard, int port, str_t *err)
{
	const mastercf_entry_t *e = s->ent;
	int fd;

	switch (e->type) {
	case MCF_INET: {
		int fds[SOCK_LISTEN_MAX];
		if (wildcard) {
			bool v4, v6;
			char spec[32];
			int n;
			protocols(&v4, &v6);
			snprintf(spec, sizeof(spec), "%s:%d",
			    v4 && v6 ? "*" : v4 ? "0.0.0.0" : "[::]", port);
			while ((n = sock_tcp_listen(spec, LISTEN_BACKLOG, fds)) < 0 &&
			    bind_wait())
				;
			if (n < 0) {
				str_catf(err, "listen on %s: %s", spec, strerror(errno));
				return -1;
			}
			for (int i = 0; i < n; i++)
				add_fd(s, fds[i]);
		}
		if (naddr > 0) {
			int *f = xcalloc((size_t)naddr, sizeof(int));
			int r;
			while ((r = sock_tcp_listen_addrs(addrs, naddr,
			    LISTEN_BACKLOG, f)) < 0 && bind_wait())
				;
			if (r < 0) {
				str_catf(err, "listen on %s: %s", s->endpoint, strerror(errno));
				free(f);
				return -1;
			}
			for (int i = 0; i < naddr; i++)
				add_fd(s, f[i]);
			free(f);
		}
		return 0;
	}
	case MCF_UNIX:
	case MCF_PASS:
		if (clear_path(s->path, false) < 0 ||
		    (fd = sock_unix_listen(s->path, LISTEN_BACKLOG, 0666)) < 0)
			break;
		add_fd(s, fd);
		return 0;
	case MCF_UNIX_DGRAM:
		if (clear_path(s->path, false) < 0 ||
		    (fd = sock_unix_dgram_listen(s->path, 0666)) < 0)
			break;
		add_fd(s, fd);
		return 0;
	case MCF_FIFO:
		if (clear_path(s->path, true) < 0 || mkfifo(s->path, 0622) < 0 ||
		    chmod(s->path, 0622) < 0)
			break;
		/* Read-write: we never see end-of-file when writers come and
		 * go, and our own wakeups write to it. */
		if ((fd = open(s->path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
			break;
		add_fd(s, fd);
		return 0;
	}
	str_catf(err, "%s %s/%s: %s", mastercf_type_name(e->type),
	    master.queue_dir, s->path, strerror(errno));
	return -1;
}

static void close_endpoint(master_service_t *s, bool unlink_path)
{
	for (int i = 0; i < s->nfds; i++) {
		if (s->listening)
			event_remove(master.loop, s->fds[i]);
		close(s->fds[i]);
	}
	s->listening = false;
	free(s->fds);
	s->fds = NULL;
	s->nfds = 0;
	if (unlink_path && s->path)
		clear_path(s->path, true);
}

void master_close_endpoint(master_service_t *s)
{
	close_endpoint(s, false);
}

static int open_status_pipe(master_service_t *s)
{
	int p[2];

	if (pipe(p) < 0)
		return -1;
	for (int i = 0; i < 2; i++)
		sock_set_cloexec(p[i], true);
	sock_set_nonblock(p[0], true);
	s->status_rd = p[0];
	s->status_wr = p[1];
	s->slen = 0;
	if (event_add(master.loop, p[0], EVENT_READ, master_status_event, s) < 0)
		log_panic("status pipe: %s", strerror(errno));
	return 0;
}

static void close_status_pipe(master_service_t *s)
{
	if (s->status_rd >= 0) {
		/* Drain what is there: the last words of children. */
		master_status_event(s->status_rd, EVENT_READ, s);
		event_remove(master.loop, s->status_rd);
		close(s->status_rd);
		close(s->status_wr);
	}
	s->status_rd = s->status_wr = -1;
}

static char *command_path(const char *cmd)
{
	str_t p = STR_INIT;
	if (cmd[0] == '/')
		return xstrdup(cmd);
	str_setf(&p, "%s/%s", pconfig_get_str("daemon_directory"), cmd);
	return str_steal(&p);
}

static void settings_from_entry(master_service_t *s)
{
	s->maxproc = mastercf_maxproc(s->ent);
	free(s->command);
	s->command = command_path(s->ent->argv[0]);
}

/* A new service for entry e, endpoint open.  NULL (message in err) on
 * failure. */
static master_service_t *service_new(const mastercf_entry_t *e, str_t *err)
{
	master_service_t *s = xcalloc(1, sizeof(*s));
	struct sockaddr_storage *addrs = NULL;
	int naddr = 0, port = 0;
	bool wildcard = false;
	str_t k = STR_INIT;

	s->ent = e;
	str_setf(&k, "%s/%s", e->service, mastercf_type_name(e->type));
	s->key = str_steal(&k);
	s->label = xstrdup(s->key);
	s->status_rd = s->status_wr = -1;
	list_init(&s->children);
	event_timer_init(&s->throttle_timer, master_throttle_expired, s);
	event_timer_init(&s->wakeup_timer, master_wakeup_event, s);
	settings_from_entry(s);
	if (endpoint_identity(s, &addrs, &naddr, &wildcard, &port, err) < 0 ||
	    open_endpoint(s, addrs, naddr, wildcard, port, err) < 0) {
		free(addrs);
		master_service_free(s);
		return NULL;
	}
	free(addrs);
	open_status_pipe(s);
	if (e->wakeup > 0 && (e->type == MCF_INET || e->type == MCF_PASS))
		log_warning("%s:%d: service %s: wakeup is not supported for %s "
		    "services; ignored", e->file, e->line, s->label,
		    mastercf_type_name(e->type));
	if (e->chroot && master.private_instance)
		log_debug("service %s: chroot skipped (private instance)", s->label);
	return s;
}

void master_service_free(master_service_t *s)
{
	event_timer_cancel(&s->throttle_timer);
	event_timer_cancel(&s->wakeup_timer);
	close_endpoint(s, false);
	close_status_pipe(s);
	free(s->key);
	free(s->label);
	free(s->endpoint);
	free(s->path);
	free(s->command);
	free(s);
}

/* Two local services of different types but one name would share a
 * path: the second is refused. */
static bool endpoint_taken(const mastercf_entry_t *e, const list_t *list,
    str_t *err)
{
	char *path;
	list_node_t *n;
	bool taken = false;

	if (e->type == MCF_INET)
		return false;
	path = master_local_path(e);
	list_foreach(n, list) {
		master_service_t *s = list_entry(n, master_service_t, node);
		if (s->path && strcmp(s->path, path) == 0) {
			str_catf(err, "%s is already the endpoint of service %s",
			    path, s->label);
			taken = true;
			break;
		}
	}
	free(path);
	return taken;
}

int master_services_start(bool fatal)
{
	str_t err = STR_INIT;
	int failed = 0;

	bind_waited = fatal ? 0 : -1;

	for (size_t i = 0; i < master.mcf->count; i++) {
		const mastercf_entry_t *e = master.mcf->entries[i];
		master_service_t *s;
		str_reset(&err);
		if (endpoint_taken(e, &master.services, &err) ||
		    (s = service_new(e, &err)) == NULL) {
			if (fatal)
				log_fatal("%s:%d: service %s/%s: %s", e->file, e->line,
				    e->service, mastercf_type_name(e->type), str_cstr(&err));
			log_error("%s:%d: service %s/%s not started: %s", e->file,
			    e->line, e->service, mastercf_type_name(e->type),
			    str_cstr(&err));
			failed++;
			continue;
		}
		list_append(&master.services, &s->node);
		master_update_listen(s);
		master_wakeup_arm(s, true);
	}
	bind_waited = -1;
	str_release(&err);
	return failed ? -1 : 0;
}

/* ---- reload ---- */

static bool same_argv(const mastercf_entry_t *a, const mastercf_entry_t *b)
{
	if (a->argc != b->argc)
		return false;
	for (int i = 0; i < a->argc; i++)
		if (strcmp(a->argv[i], b->argv[i]) != 0)
			return false;
	return true;
}

/* Do processes of a and b differ (so running ones must be replaced)? */
static bool process_changed(const mastercf_entry_t *a, const mastercf_entry_t *b)
{
	return a->unpriv != b->unpriv || a->chroot != b->chroot ||
	    a->private_svc != b->private_svc || !same_argv(a, b);
}

static master_service_t *find_service(const char *key)
{
	list_node_t *n;
	list_foreach(n, &master.services) {
		master_service_t *s = list_entry(n, master_service_t, node);
		if (strcmp(s->key, key) == 0)
			return s;
	}
	return NULL;
}

static void remove_service(master_service_t *s, const char *why)
{
	log_info("service %s: %s; stopping it", s->label, why);
	master_retire_children(s, true);
	list_remove(&s->node);
	close_endpoint(s, true);
	master_service_free(s);
}

void master_reload(void)
{
	str_t errors = STR_INIT, path = STR_INIT, text = STR_INIT, err = STR_INIT;
	str_t oldtext = STR_INIT;
	mastercf_t *mcf, *old;
	list_t keep;
	list_node_t *n, *tmp;
	bool maincf_changed, *create;

	log_info("reload -- re-reading the configuration in %s", master.config_dir);
	str_set(&oldtext, str_cstr(&master.maincf_text));
	if (pconfig_load(master.config_dir) < 0) {
		log_lines(LOG_LVL_ERROR, pconfig_errors());
		log_error("reload: errors in main.cf; configuration unchanged");
		/* Back to what we ran with. */
		str_setf(&path, "%s/main.cf", master.config_dir);
		pconfig_load_text(str_cstr(&oldtext), str_cstr(&path));
		goto out;
	}
	pconfig_log_warnings();
	str_setf(&path, "%s/master.cf", master.config_dir);
	mcf = mastercf_load(str_cstr(&path), &errors);
	if (mcf == NULL || str_len(&errors) > 0) {
		log_lines(LOG_LVL_ERROR, str_cstr(&errors));
		log_error("reload: errors in master.cf; services unchanged");
		if (mcf)
			mastercf_free(mcf);
		goto out;
	}
	if (postfix_mastercf_filter(mcf, pconfig_get_str("daemon_directory"),
	    &errors) > 0)
		log_lines(LOG_LVL_WARNING, str_cstr(&errors));
	str_setf(&path, "%s/main.cf", master.config_dir);
	if (file_read_all_follow(str_cstr(&path), &text, 16 << 20) < 0)
		str_reset(&text);
	maincf_changed = strcmp(str_cstr(&text), str_cstr(&oldtext)) != 0;
	/* The jail first: the processes started from now on see it. */
	if (!master.private_instance && jail_wanted(mcf))
		(void)jail_refresh(master.queue_dir,
		    pconfig_get_str("chroot_files"));
	str_set(&master.maincf_text, str_cstr(&text));

	/* Match new entries with running services. */
	old = master.mcf;
	master.mcf = mcf;
	list_init(&keep);
	create = xcalloc(mcf->count + 1, sizeof(bool));
	for (size_t i = 0; i < mcf->count; i++) {
		const mastercf_entry_t *e = mcf->entries[i];
		str_t key = STR_INIT;
		master_service_t *s, *probe;
		struct sockaddr_storage *addrs = NULL;
		int naddr = 0, port = 0;
		bool wildcard = false;

		str_setf(&key, "%s/%s", e->service, mastercf_type_name(e->type));
		s = find_service(str_cstr(&key));
		str_release(&key);
		if (s) {
			/* Same endpoint?  Compute the new identity on a probe. */
			probe = xcalloc(1, sizeof(*probe));
			probe->ent = e;
			str_reset(&err);
			if (endpoint_identity(probe, &addrs, &naddr, &wildcard, &port,
			    &err) == 0 && strcmp(probe->endpoint, s->endpoint) == 0) {
				const mastercf_entry_t *was = s->ent;
				list_remove(&s->node);
				list_append(&keep, &s->node);
				s->ent = e;
				settings_from_entry(s);
				if (process_changed(was, e)) {
					log_info("service %s: changed; restarting its processes",
					    s->label);
					/* New pipe: old children see master hang up. */
					master_retire_children(s, false);
					close_status_pipe(s);
					open_status_pipe(s);
					master_wakeup_arm(s, true);
				} else if (maincf_changed) {
					master_retire_children(s, false);
					master_wakeup_arm(s, true);
				} else if (e->wakeup != was->wakeup ||
				    e->wakeup_if_used != was->wakeup_if_used) {
					master_wakeup_arm(s, false);
				}
				master_update_listen(s);
				free(probe->endpoint);
				free(probe->path);
				free(probe);
				free(addrs);
				continue;
			}
			free(probe->endpoint);
			free(probe->path);
			free(probe);
			free(addrs);
			/* Left in the old list: removed below, made anew. */
			s->endpoint_changed = true;
		}
		create[i] = true;
	}
	/* What is left is gone from master.cf or moved elsewhere.  Removed
	 * first, so their ports and paths are free for the new services. */
	list_foreach_safe(n, tmp, &master.services) {
		master_service_t *s = list_entry(n, master_service_t, node);
		remove_service(s, s->endpoint_changed ? "endpoint changed" :
		    "removed from master.cf");
	}
	for (size_t i = 0; i < mcf->count; i++) {
		const mastercf_entry_t *e = mcf->entries[i];
		master_service_t *s;
		if (!create[i])
			continue;
		str_reset(&err);
		if (endpoint_taken(e, &keep, &err) ||
		    (s = service_new(e, &err)) == NULL) {
			log_error("%s:%d: service %s/%s not started: %s", e->file, e->line,
			    e->service, mastercf_type_name(e->type), str_cstr(&err));
			continue;
		}
		log_info("service %s: started", s->label);
		list_append(&keep, &s->node);
		master_update_listen(s);
		master_wakeup_arm(s, true);
	}
	free(create);
	/* keep becomes the service list. */
	list_foreach_safe(n, tmp, &keep) {
		list_remove(n);
		list_append(&master.services, n);
	}
	mastercf_free(old);
out:
	/* A renamed log file (or a new maillog_file) is taken up now, also
	 * when the new configuration was refused. */
	master_log_reopen("reload");
	str_release(&errors);
	str_release(&path);
	str_release(&text);
	str_release(&err);
	str_release(&oldtext);
}
