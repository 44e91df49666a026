/* qmgr's MX lookups for destination grouping (doc/scheduler.md section
 * 11): one non-blocking UDP query per domain, sent from the event loop,
 * never waited for.  A message whose next recipient needs a group that
 * is being looked up waits in the active queue (sched_msg_wait) and is
 * read on when the lookup ends (sched_msg_resume). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "qmgr_int.h"
#include "mxgroup.h"
#include "dns.h"
#include "log.h"
#include "mem.h"
#include "mastercf.h"
#include "pconfig.h"
#include "sock.h"

#define MXG_TIMEOUT_MS	5000	/* per attempt */
#define MXG_ATTEMPTS	2

typedef struct mxg_lookup {
	mxg_entry_t *e;
	char host[DNS_NAME_TEXTLEN];
	unsigned port;
	unsigned char q[DNS_NAME_WIRE_MAX + 64];
	size_t qlen;
	char id[8];			/* in M.pending */
	int tries;
	event_timer_t timer;
} mxg_lookup_t;

static struct {
	bool wanted;			/* some transport groups by mx */
	dns_resolver_t *r;
	int fd;				/* UDP, connected to the server */
	str_t why;			/* why there is no socket */
	mxg_cache_t *cache;
	htable_t *pending;		/* query ID -> mxg_lookup_t */
	unsigned char *buf;
} M = { .fd = -1 };

/* Before the chroot: the resolver configuration and the socket. */
void qmgr_mxgroup_preload(const mastercf_t *mcf)
{
	struct sockaddr_in sin;

	for (size_t i = 0; i < mcf->count && !M.wanted; i++)
		if (mcf->entries[i]->type == MCF_UNIX && sched_grouping_parse(
		    pconfig_get_str_tr(mcf->entries[i]->service,
		    "destination_grouping")) == SCHED_GROUP_MX)
			M.wanted = true;
	if (!M.wanted || M.r != NULL)
		return;
	if ((M.r = dns_resolver_from_config(&M.why)) == NULL
	    || dns_resolver_server(M.r, &sin, &M.why) < 0)
		return;
	if ((M.fd = sock_new(AF_INET, SOCK_DGRAM, true)) < 0
	    || connect(M.fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		str_setf(&M.why, "name server socket: %s", strerror(errno));
		if (M.fd >= 0)
			close(M.fd);
		M.fd = -1;
	}
}

static void lookup_end(mxg_lookup_t *l, const char *key, double ttl,
    const char *why)
{
	mxg_entry_t *e = l->e;
	double now = qmgr_now();
	list_t waiters;
	list_node_t *n;

	event_timer_cancel(&l->timer);
	htable_delete(M.pending, l->id);
	if (key)
		log_info("mx group of %s: %s (ttl %.0fs)", e->nexthop, key, ttl);
	else
		log_warning("mx group of %s: %s; scheduling it by domain",
		    e->nexthop, why);
	mxgroup_cache_set(e, key, key ? ttl : MXG_FAIL_TTL, now);
	/* Resume the waiters; they may wait again (another lookup). */
	list_init(&waiters);
	while ((n = list_first(&e->waiters)) != NULL) {
		list_remove(n);
		list_append(&waiters, n);
	}
	while ((n = list_first(&waiters)) != NULL) {
		qmgr_msg_t *msg = list_entry(n, qmgr_msg_t, mxg_node);
		list_remove(n);
		if (msg->sm)
			sched_msg_resume(msg->sm, now);
	}
	free(l);
	qmgr_kick();
}

static void lookup_send(mxg_lookup_t *l)
{
	l->tries++;
	if (send(M.fd, l->q, l->qlen, 0) < 0 && errno != EAGAIN
	    && errno != EWOULDBLOCK && errno != ENOBUFS) {
		str_t why = STR_INIT;
		str_setf(&why, "sending the MX query: %s", strerror(errno));
		lookup_end(l, NULL, 0, str_cstr(&why));
		str_release(&why);
		return;
	}
	event_timer_start(Q.loop, &l->timer, MXG_TIMEOUT_MS);
}

static void lookup_timeout(void *ctx)
{
	mxg_lookup_t *l = ctx;

	if (l->tries < MXG_ATTEMPTS)
		lookup_send(l);
	else
		lookup_end(l, NULL, 0, "MX lookup failed (no reply from the "
		    "name server (timeout))");
}

static void reply_event(int fd, int events, void *ctx)
{
	(void)events;
	(void)ctx;
	/* Bounded: at most this many datagrams per event. */
	for (int k = 0; k < 64; k++) {
		ssize_t n = recv(fd, M.buf, DNS_PACKET_MAX, 0);
		char id[8];
		mxg_lookup_t *l;
		dns_reply_t rep = DNS_REPLY_INIT;
		str_t why = STR_INIT, key = STR_INIT;
		enum dns_status st;
		double ttl = 0;

		if (n < 0)
			return;		/* EAGAIN, or an ICMP error: timeouts
					 * handle the lookups */
		if (n < 12)
			continue;
		bfmt(id, sizeof(id), "%02x%02x", M.buf[0], M.buf[1]);
		if ((l = htable_get(M.pending, id)) == NULL)
			continue;	/* stale or forged: ignored */
		st = dns_parse_reply(M.buf, (size_t)n, l->host, DNS_T_MX, &rep,
		    &why);
		if (st == DNS_MALFORMED && l->tries < MXG_ATTEMPTS) {
			/* Maybe not the answer to our question: the timer
			 * stays, the next attempt or timeout decides. */
			log_warning("mx group of %s: %s", l->e->nexthop,
			    str_cstr(&why));
		} else if (mxgroup_key_from_reply(l->host, l->port, st, &rep, &key,
		    &ttl, &why)) {
			lookup_end(l, str_cstr(&key), ttl, NULL);
		} else {
			lookup_end(l, NULL, 0, str_cstr(&why));
		}
		dns_reply_free(&rep);
		str_release(&why);
		str_release(&key);
	}
}

/* Starts the lookup of e (a pending entry).  False: no lookup possible
 * (e is then settled as a fallback). */
static void lookup_start(mxg_entry_t *e, const char *host, unsigned port)
{
	mxg_lookup_t *l;
	str_t why = STR_INIT;
	ssize_t qlen;

	if (M.fd < 0) {
		log_warning("mx group of %s: %s; scheduling it by domain",
		    e->nexthop, str_len(&M.why) ? str_cstr(&M.why)
		    : "no name server");
		mxgroup_cache_set(e, NULL, MXG_FAIL_TTL, qmgr_now());
		return;
	}
	if (M.pending == NULL) {
		M.pending = htable_new(64, 0);
		M.buf = xmalloc(DNS_PACKET_MAX);
		if (event_add(Q.loop, M.fd, EVENT_READ, reply_event, NULL) < 0)
			log_warning("mx groups: cannot watch the name server "
			    "socket: %s", strerror(errno));
	}
	l = xcalloc(1, sizeof(*l));
	l->e = e;
	l->port = port;
	bfmt(l->host, sizeof(l->host), "%s", host);
	qlen = dns_query_make(M.r, host, DNS_T_MX, l->q, sizeof(l->q), &why);
	/* A fresh ID that no lookup in flight uses. */
	for (int k = 0; qlen >= 0; k++) {
		bfmt(l->id, sizeof(l->id), "%02x%02x", l->q[0], l->q[1]);
		if (htable_get(M.pending, l->id) == NULL)
			break;
		if (k == 100) {
			qlen = -1;
			str_setf(&why, "too many lookups in flight");
			break;
		}
		l->q[0] = (unsigned char)random();
		l->q[1] = (unsigned char)random();
	}
	if (qlen < 0) {
		log_warning("mx group of %s: %s; scheduling it by domain",
		    e->nexthop, str_cstr(&why));
		mxgroup_cache_set(e, NULL, MXG_FAIL_TTL, qmgr_now());
		free(l);
		str_release(&why);
		return;
	}
	l->qlen = (size_t)qlen;
	e->lookup = l;
	htable_add(M.pending, l->id, l);
	event_timer_init(&l->timer, lookup_timeout, l);
	str_release(&why);
	lookup_send(l);
}

const char *qmgr_mxgroup_key(const char *nexthop, qmgr_msg_t *msg,
    double now)
{
	mxg_entry_t *e;
	char host[DNS_NAME_TEXTLEN];
	unsigned port;

	if (M.cache == NULL)
		M.cache = mxgroup_cache_new(MXG_CACHE_MAX);
	if ((e = mxgroup_cache_get(M.cache, nexthop, now)) == NULL) {
		if (mxgroup_nexthop(nexthop, host, sizeof(host), &port)
		    == MXG_FIXED)
			return nexthop;
		e = mxgroup_cache_add(M.cache, nexthop, now);
		lookup_start(e, host, port);
	}
	if (e->key != NULL)
		return e->key;
	/* Pending: the message waits for it (for nothing else). */
	qmgr_mxgroup_forget(msg);
	list_append(&e->waiters, &msg->mxg_node);
	return NULL;
}

void qmgr_mxgroup_forget(qmgr_msg_t *msg)
{
	if (list_linked(&msg->mxg_node))
		list_remove(&msg->mxg_node);
}
