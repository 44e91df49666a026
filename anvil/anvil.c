/* anvil(8): client connection counts and event rates for every smtpd.
 *
 * One event-driven process (SERVER_MULTI, never blocks) that counts, per
 * (service, client address), the connections open now and the
 * connections, messages, recipients, new TLS sessions and AUTH commands
 * of the current time unit, for all smtpd processes: the counts are
 * shared across the pool and survive an smtpd process that exits.  The
 * counters live in the store (anvil_store.c); this file does the I/O:
 * clients and their requests, the connections each client holds (a
 * client that goes away, even killed, gives them back), expiry, and the
 * statistics lines.  doc/protocol-anvil.md is the specification;
 * man/anvil.8. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "anvil.h"
#include "anvil_store.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "server.h"
#include "server_conn.h"

/* Connections one client (an smtpd process, which serves one session at
 * a time) may hold at once. */
#define HELD_MAX 1024

typedef struct client {
	server_conn_t conn;	/* first: the connection (server_conn.h) */
	anvil_entry_t **held;	/* its open connections */
	size_t nheld, cap;
	list_node_t node;
} client_t;

static struct {
	anvil_store_t *store;
	list_t clients;
	unsigned long next_id;
	long unit_s;
	int64_t status_ms;
	unsigned long dropped_logged;	/* drops already warned about */
	event_timer_t expire_timer;
	event_timer_t status_timer;
	server_idle_t idle;		/* the exit after max_idle */
	str_t out;
} D;

static void client_close(client_t *c);
static void idle_check(void);

/* ---- expiry and statistics ---- */

static void expire_arm(void)
{
	int64_t next = anvil_store_next_expiry(D.store);

	if (next < 0)
		event_timer_cancel(&D.expire_timer);
	else if (!event_timer_pending(&D.expire_timer))
		event_timer_start(server_loop(), &D.expire_timer,
		    next > event_now_ms() ? next - event_now_ms() : 0);
}

static void expire_tick(void *ctx)
{
	(void)ctx;
	anvil_store_expire(D.store, event_now_ms());
	expire_arm();
	idle_check();
}

/* "Nov 26 12:00:00" for a moment of the monotonic clock. */
static void when_text(int64_t when_ms, char *buf, size_t size)
{
	struct timespec rt;
	struct tm tm;
	time_t t;

	clock_gettime(CLOCK_REALTIME, &rt);
	t = (time_t)(((int64_t)rt.tv_sec * 1000 + rt.tv_nsec / 1000000 -
	    (event_now_ms() - when_ms)) / 1000);

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(buf, size, "%b %e %H:%M:%S", &tm) == 0)
		bfmt(buf, size, "?");
}

static void status_log(void)
{
	static const struct {
		const char *what;
		bool rate;
	} names[ANVIL_PEAK_COUNT] = {
		[ANVIL_PEAK_CONN_RATE] = { "connection", true },
		[ANVIL_PEAK_CONN_COUNT] = { "connection", false },
		[ANVIL_PEAK_MESSAGE] = { "message", true },
		[ANVIL_PEAK_RECIPIENT] = { "recipient", true },
		[ANVIL_PEAK_NEWTLS] = { "newtls", true },
		[ANVIL_PEAK_AUTH] = { "auth", true },
	};
	const anvil_stats_t *s = anvil_store_stats(D.store);
	char when[32];

	for (int k = 0; k < ANVIL_PEAK_COUNT; k++) {
		const anvil_peak_t *p = &s->peak[k];
		if (p->value <= 0)
			continue;
		when_text(p->when_ms, when, sizeof(when));
		if (names[k].rate)
			log_info("statistics: max %s rate %ld/%lds for (%s) at %s",
			    names[k].what, (long)p->value, D.unit_s, p->ident,
			    when);
		else
			log_info("statistics: max %s count %ld for (%s) at %s",
			    names[k].what, (long)p->value, p->ident, when);
	}
	if (s->max_size > 0) {
		when_text(s->max_size_ms, when, sizeof(when));
		log_info("statistics: max cache size %zu at %s", s->max_size,
		    when);
	}
	if (s->dropped > 0)
		log_info("statistics: %lu idle clients forgotten early "
		    "(anvil_client_limit)", s->dropped);
	anvil_store_stats_reset(D.store);
	D.dropped_logged = 0;
}

static void status_tick(void *ctx)
{
	(void)ctx;
	status_log();
	event_timer_start(server_loop(), &D.status_timer, D.status_ms);
}

/* The cap made the store forget clients: say so once per status
 * period (the statistics line has the count). */
static void dropped_check(void)
{
	const anvil_stats_t *s = anvil_store_stats(D.store);

	if (s->dropped > 0 && D.dropped_logged == 0)
		log_warning("more than %ld clients tracked (anvil_client_limit): "
		    "forgetting the idle ones unused longest; their rates "
		    "start again from zero",
		    pconfig_get_int("anvil_client_limit"));
	D.dropped_logged = s->dropped;
}

/* ---- exit ---- */

static void cleanup(void)
{
	list_node_t *n;

	status_log();
	while ((n = list_first(&D.clients)) != NULL)
		client_close(list_entry(n, client_t, node));
	anvil_store_free(D.store);
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

/* Not recycled by max_use (that would lose every count): the process
 * leaves by itself only after max_idle with no client and nothing
 * counted. */
static bool busy(void)
{
	return !list_empty(&D.clients) || anvil_store_size(D.store) > 0;
}

static void idle_check(void)
{
	server_idle_check(&D.idle);
}

/* ---- clients ---- */

/* A client that goes away gives back the connections it held: a killed
 * smtpd does not leave its client counted for ever. */
static void client_close(client_t *c)
{
	int64_t now = event_now_ms();

	list_remove(&c->node);
	for (size_t i = 0; i < c->nheld; i++)
		anvil_store_disconnect(D.store, now, c->held[i]);
	free(c->held);
	server_conn_stop(&c->conn);
	free(c);
	expire_arm();
	idle_check();
}

static void conn_close(server_conn_t *conn)
{
	client_close((client_t *)conn);
}

static bool client_hold(client_t *c, anvil_entry_t *e)
{
	if (c->nheld >= HELD_MAX) {
		anvil_store_disconnect(D.store, event_now_ms(), e);
		server_conn_bad(&c->conn, "more than %d connections open",
		    HELD_MAX);
		return false;
	}
	if (c->nheld == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 2;
		c->held = xreallocarray(c->held, c->cap, sizeof(*c->held));
	}
	c->held[c->nheld++] = e;
	return true;
}

/* One request.  false when the client is gone (closed here). */
static bool client_request(server_conn_t *conn, const attr_msg_t *m)
{
	client_t *c = (client_t *)conn;
	int64_t now = event_now_ms();
	anvil_req_t req;
	anvil_counts_t counts;
	anvil_entry_t *e;
	str_t err = STR_INIT;
	bool connected;

	if (anvil_request_parse(m, &req, &err) < 0) {
		server_conn_bad(conn, "%s", str_cstr(&err));
		str_release(&err);
		return false;
	}
	str_release(&err);
	str_reset(&D.out);
	switch (req.op) {
	case ANVIL_OP_CONNECT:
		e = anvil_store_connect(D.store, now, req.ident);
		if (!client_hold(c, e))
			return false;
		dropped_check();
		anvil_reply_encode(&D.out, req.op, &e->c);
		break;
	case ANVIL_OP_DISCONNECT:
		/* Only a connection this client holds: a stray disconnect
		 * (anvil was restarted meanwhile) changes nothing. */
		for (size_t i = c->nheld; i-- > 0;) {
			if (strcmp(c->held[i]->ident, req.ident) != 0)
				continue;
			anvil_store_disconnect(D.store, now, c->held[i]);
			c->held[i] = c->held[--c->nheld];
			expire_arm();
			break;
		}
		return true;	/* no reply */
	case ANVIL_OP_LOOKUP:
	case ANVIL_OP_NEWTLS_REPORT:
		anvil_store_lookup(D.store, now, req.ident, &counts);
		anvil_reply_encode(&D.out, req.op, &counts);
		break;
	default:
		e = anvil_store_event(D.store, now, req.op, req.ident,
		    &connected);
		if (connected && !client_hold(c, e))
			return false;
		dropped_check();
		expire_arm();
		anvil_reply_encode(&D.out, req.op, &e->c);
		break;
	}
	idle_check();
	/* Replies are small and a client waits for each. */
	return server_conn_reply(conn, &D.out, -1);
}

static const server_conn_ops_t conn_ops = {
	.request = client_request,
	.close = conn_close,
};

static void on_connect(int fd, void *ctx)
{
	client_t *c;

	(void)ctx;
	c = xcalloc(1, sizeof(*c));
	if (!server_conn_start(&c->conn, fd, ++D.next_id,
	    anvil_request_reader_new(), ANVIL_TIMEOUT_MS, 4096, &conn_ops)) {
		free(c);
		return;
	}
	list_append(&D.clients, &c->node);
	server_idle_cancel(&D.idle);
}

/* ---- start ---- */

static void post_jail(void *ctx)
{
	long status_s;

	(void)ctx;
	D.unit_s = pconfig_get_time("anvil_rate_time_unit");
	status_s = pconfig_get_time("anvil_status_update_time");
	D.status_ms = (int64_t)status_s * 1000;
	list_init(&D.clients);
	D.store = anvil_store_new((int64_t)D.unit_s * 1000,
	    (size_t)pconfig_get_int("anvil_client_limit"));
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
	/* One process holds every count: recycling it would lose them. */
	spec.flags = SERVER_F_UNLIMITED;
	spec.post_jail = post_jail;
	spec.connect = on_connect;
	spec.pre_exit = pre_exit;
	server_main(argc, argv, &spec);
}
