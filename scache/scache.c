/* scache(8): the connection cache.
 *
 * One event-driven process (SERVER_MULTI, never blocks) that holds idle
 * SMTP sessions for every smtp process: a process hands over a connected
 * socket it will not use itself (save), another takes it before it opens
 * a connection of its own (find by destination or by endpoint).  The
 * sessions live in the store (scache_store.c); this file does the I/O:
 * clients and their requests (descriptors come and go with SCM_RIGHTS),
 * the watch on every cached socket (a server that speaks or hangs up is
 * closed at once), expiry, the limits on descriptors, and the statistics
 * line.  doc/protocol-scache.md is the specification; man/scache.8. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "event.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "scache.h"
#include "scache_store.h"
#include "server.h"
#include "server_conn.h"
#include "sock.h"

/* Descriptors kept free for the skeleton, logging and accept(). */
#define FD_RESERVE 32

typedef struct client {
	server_conn_t conn;	/* first: the connection (server_conn.h) */
	int fds[SCACHE_FDS_PENDING];	/* received, not yet taken by a save */
	int nfds;
	list_node_t node;
} client_t;

static struct {
	scache_store_t *store;
	list_t clients;
	size_t nclients;
	size_t max_clients;
	size_t peak_clients;
	unsigned long next_id;
	int timeout_ms;
	int64_t status_ms;
	event_timer_t expire_timer;
	event_timer_t status_timer;
	server_idle_t idle;		/* the exit after max_idle */
	bool refused_logged;
	str_t out;
} D;

static void idle_check(void);
static void client_close(struct client *c);

/* ---- cached sessions ---- */

/* The server spoke (a 421 before it hangs up) or hung up: the session is
 * useless; close it now, not when someone takes it. */
static void sess_event(int fd, int events, void *ctx)
{
	(void)fd;
	(void)events;
	scache_store_drop(D.store, ctx, SCACHE_DROP_SERVER);
	idle_check();
}

static void sess_added(void *ctx, scache_sess_t *ss)
{
	(void)ctx;
	if (event_add(server_loop(), ss->fd, EVENT_READ, sess_event, ss) < 0)
		log_warning("cannot watch a cached session: %s", strerror(errno));
}

static void sess_dropped(void *ctx, scache_sess_t *ss, enum scache_drop why)
{
	(void)ctx;
	event_remove(server_loop(), ss->fd);
	/* Goodbye without waiting for the reply: we never wait on a remote
	 * server.  Not to one that already hung up or spoke. */
	if (why != SCACHE_DROP_SERVER &&
	    send(ss->fd, "QUIT\r\n", 6, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* gone or full: closing is all that is left */
	}
	close(ss->fd);
}

/* The timer follows the earliest expiry. */
static void expire_arm(void)
{
	int64_t next = scache_store_next_expiry(D.store);

	if (next < 0)
		event_timer_cancel(&D.expire_timer);
	else
		event_timer_start(server_loop(), &D.expire_timer,
		    next - event_now_ms());
}

static void expire_tick(void *ctx)
{
	(void)ctx;
	scache_store_expire(D.store, event_now_ms());
	expire_arm();
	idle_check();
}

/* ---- statistics ---- */

static void status_log(bool final)
{
	const scache_stats_t *s = scache_store_stats(D.store);
	unsigned long found = s->dest_hits + s->endp_hits;

	if (s->saved + s->dest_hits + s->dest_misses + s->endp_hits +
	    s->endp_misses + s->expired + s->server_closed + s->evicted > 0)
		log_info("statistics: %lu saved, %lu found (destination %lu/%lu, "
		    "endpoint %lu/%lu), %lu expired, %lu closed by the server, "
		    "%lu evicted, at most %zu sessions and %zu clients",
		    s->saved, found, s->dest_hits, s->dest_hits + s->dest_misses,
		    s->endp_hits, s->endp_hits + s->endp_misses, s->expired,
		    s->server_closed, s->evicted, s->max_sessions,
		    D.peak_clients);
	if (!final) {
		scache_store_stats_reset(D.store);
		D.peak_clients = D.nclients;
	}
}

static void status_tick(void *ctx)
{
	(void)ctx;
	status_log(false);
	event_timer_start(server_loop(), &D.status_timer, D.status_ms);
}

/* ---- exit ---- */

static void cleanup(void)
{
	list_node_t *n;

	status_log(true);
	while ((n = list_first(&D.clients)) != NULL)
		client_close(list_entry(n, client_t, node));
	scache_store_free(D.store);	/* QUIT to every session left */
	D.store = NULL;
	event_timer_cancel(&D.expire_timer);
	event_timer_cancel(&D.status_timer);
	server_idle_cancel(&D.idle);
	str_release(&D.out);
}

static void pre_exit(void *ctx)
{
	(void)ctx;
	if (D.store != NULL)
		cleanup();
}

/* Not recycled by max_use (that would throw sessions away): the process
 * leaves by itself only when it has had nothing to hold and nobody to
 * serve for max_idle. */
static bool busy(void)
{
	return D.nclients > 0 || scache_store_count(D.store) > 0;
}

static void idle_check(void)
{
	server_idle_check(&D.idle);
}

/* ---- clients ---- */

static void client_close(client_t *c)
{
	list_remove(&c->node);
	D.nclients--;
	for (int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	server_conn_stop(&c->conn);
	free(c);
	idle_check();
}

static void conn_close(server_conn_t *conn)
{
	client_close((client_t *)conn);
}

/* The descriptor of a save: a stream socket not held already.  Its
 * identity (device and inode) goes to ident.  true, or false after
 * server_conn_bad(). */
static bool check_session_fd(client_t *c, int fd, char *ident, size_t size)
{
	struct stat sb;
	int type = 0;
	socklen_t len = sizeof(type);

	if (fstat(fd, &sb) < 0 || !S_ISSOCK(sb.st_mode)) {
		server_conn_bad(&c->conn, "the descriptor of a save is not a socket");
		return false;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    type != SOCK_STREAM) {
		server_conn_bad(&c->conn, "the descriptor of a save is not a stream socket");
		return false;
	}
	bfmt(ident, size, "%ju:%ju", (uintmax_t)sb.st_dev, (uintmax_t)sb.st_ino);
	return true;
}

/* One request.  false when the client is gone (closed here). */
static bool client_request(server_conn_t *conn, const attr_msg_t *m)
{
	client_t *c = (client_t *)conn;
	scache_req_t req;
	str_t err = STR_INIT;
	scache_sess_t *ss;
	char ident[64];
	int fd;

	if (scache_request_parse(m, &req, &err) < 0) {
		server_conn_bad(&c->conn, "%s", str_cstr(&err));
		str_release(&err);
		return false;
	}
	str_release(&err);
	str_reset(&D.out);
	if (req.op == SCACHE_OP_SAVE) {
		if (c->nfds == 0) {
			server_conn_bad(&c->conn, "save without a descriptor");
			return false;
		}
		fd = c->fds[0];
		memmove(c->fds, c->fds + 1, (size_t)(c->nfds - 1) * sizeof(int));
		c->nfds--;
		if (!check_session_fd(c, fd, ident, sizeof(ident))) {
			close(fd);
			return false;
		}
		ss = scache_store_save(D.store, event_now_ms(), req.dest,
		    req.endpoint, req.ttl_ms, req.props, fd, ident);
		if (ss == NULL) {
			close(fd);
			server_conn_bad(&c->conn, "save of a session the cache holds already");
			return false;
		}
		expire_arm();
		scache_reply_encode(&D.out, SCACHE_STAT_OK, NULL, NULL, NULL);
		return server_conn_reply(&c->conn, &D.out, -1);
	}
	ss = scache_store_take(D.store, req.op == SCACHE_OP_FIND_ENDP,
	    req.op == SCACHE_OP_FIND_ENDP ? req.endpoint : req.dest);
	if (ss == NULL) {
		scache_reply_encode(&D.out, SCACHE_STAT_NONE, NULL, NULL, NULL);
		return server_conn_reply(&c->conn, &D.out, -1);
	}
	event_remove(server_loop(), ss->fd);
	expire_arm();
	scache_reply_encode(&D.out, SCACHE_STAT_OK, ss->dest, ss->endpoint,
	    ss->props);
	fd = ss->fd;
	scache_sess_free(ss);
	/* Sent or not, the session has left the cache: our copy goes. */
	bool ok = server_conn_reply(&c->conn, &D.out, fd);
	close(fd);
	idle_check();
	return ok;
}

/* Reads what came, with the descriptors clients send ahead of their
 * save requests. */
static ssize_t client_recv(server_conn_t *conn, char *buf, size_t size)
{
	client_t *c = (client_t *)conn;
	int fds[SCACHE_FDS_PENDING], nfds;
	bool extra;
	ssize_t n;

	n = sock_recv_with_fds(conn->fd, buf, size, fds,
	    SCACHE_FDS_PENDING - c->nfds, &nfds, &extra, MSG_DONTWAIT);
	if (n < 0)
		return n;
	for (int i = 0; i < nfds; i++)
		c->fds[c->nfds++] = fds[i];
	if (extra) {
		server_conn_bad(conn, "more than %d descriptors waiting for "
		    "their request", SCACHE_FDS_PENDING);
		return SERVER_CONN_CLOSED;
	}
	/* Gone, maybe in the middle of a request: nothing to say. */
	if (n == 0 && c->nfds > 0)
		log_debug("client %lu: left %d descriptor(s) without a "
		    "request", conn->id, c->nfds);
	return n;
}

static const server_conn_ops_t conn_ops = {
	.request = client_request,
	.close = conn_close,
	.recv = client_recv,
};

static void on_connect(int fd, void *ctx)
{
	client_t *c;

	(void)ctx;
	if (D.nclients >= D.max_clients) {
		if (!D.refused_logged)
			log_warning("%zu clients already: closing new ones (the "
			    "descriptor limit, ulimit -n, allows no more)",
			    D.nclients);
		D.refused_logged = true;
		server_disconnect(fd);
		return;
	}
	D.refused_logged = false;
	c = xcalloc(1, sizeof(*c));
	if (!server_conn_start(&c->conn, fd, ++D.next_id,
	    scache_request_reader_new(), D.timeout_ms, SCACHE_MSG_MAX,
	    &conn_ops)) {
		free(c);
		return;
	}
	list_append(&D.clients, &c->node);
	D.nclients++;
	if (D.nclients > D.peak_clients)
		D.peak_clients = D.nclients;
	server_idle_cancel(&D.idle);
}

/* ---- start ---- */

static int ms_of(const char *name)
{
	long s = pconfig_get_time(name);

	return s > INT_MAX / 1000 ? INT_MAX : (int)(s * 1000);
}

static void post_jail(void *ctx)
{
	scache_hooks_t hooks = { sess_added, sess_dropped, NULL };
	size_t per_dest, total, budget;
	struct rlimit rl;

	(void)ctx;
	D.timeout_ms = ms_of("connection_cache_protocol_timeout");
	D.status_ms = ms_of("connection_cache_status_update_time");
	per_dest =
	    (size_t)pconfig_get_int("connection_cache_destination_limit");
	total = (size_t)pconfig_get_int("connection_cache_session_limit");

	/* Sessions, clients and the descriptors clients send ahead of their
	 * requests must all fit in the descriptor limit: half of what is
	 * free at most for sessions, the rest for clients. */
	budget = 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		/* Descriptors are what this daemon holds: take what the
		 * hard limit allows (within reason). */
		rlim_t want = rl.rlim_max == RLIM_INFINITY ||
		    rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
		if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
			rl.rlim_cur = want;
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				(void)getrlimit(RLIMIT_NOFILE, &rl);
		}
		budget = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 ?
		    65536 : (size_t)rl.rlim_cur;
	}
	budget = budget > 2 * FD_RESERVE ? budget - FD_RESERVE : FD_RESERVE;
	if (total > budget / 2) {
		log_warning("connection_cache_session_limit %zu reduced to %zu: "
		    "the process may open only %zu files (ulimit -n)", total,
		    budget / 2, budget + FD_RESERVE);
		total = budget / 2;
	}
	if (per_dest > total)
		per_dest = total;
	D.max_clients = (budget - total) / (1 + SCACHE_FDS_PENDING);
	if (D.max_clients < 1)
		D.max_clients = 1;

	list_init(&D.clients);
	D.store = scache_store_new(per_dest, total,
	    ms_of("connection_cache_ttl_limit"), &hooks);
	event_timer_init(&D.expire_timer, expire_tick, NULL);
	event_timer_init(&D.status_timer, status_tick, NULL);
	server_idle_init(&D.idle, (int64_t)pconfig_get_time("max_idle") * 1000,
	    busy, cleanup);
	event_timer_start(server_loop(), &D.status_timer, D.status_ms);
	idle_check();
}

int main(int argc, char **argv)
{
	server_spec_t spec;

	memset(&spec, 0, sizeof(spec));
	spec.model = SERVER_MULTI;
	/* One process holds every session: recycling it would drop them. */
	spec.flags = SERVER_F_UNLIMITED;
	spec.post_jail = post_jail;
	spec.connect = on_connect;
	spec.pre_exit = pre_exit;
	server_main(argc, argv, &spec);
}
