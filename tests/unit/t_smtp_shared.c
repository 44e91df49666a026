/* The SMTP client engine with a shared session cache (what the scache
 * daemon is to the agent), here a fake in memory that two clients (two
 * "processes") share: a session goes to the cache after each delivery and
 * the next delivery, from either client, takes it (one connection for
 * all); the labels, ttl and properties it is given; lookup by endpoint
 * for another next hop with the same server; the reuse limits across
 * clients; a cached session whose server hung up; a cache that is down
 * (sessions stay in the process as before, and move to the cache when it
 * is back); a save whose outcome is unknown (no QUIT); properties that do
 * not decode; no sharing without connection caching. */
#include "t_smtp_harness.h"
#include "attr.h"
#include "scache.h"

static const char *const one_rcpt[] = { "a@example.com", NULL };

/* ---- the fake cache ---- */

#define FAKE_MAX 32
typedef struct fake_sess {
	char dest[SCACHE_LABEL_MAX + 1];
	char endpoint[SCACHE_LABEL_MAX + 1];
	char props[SCACHE_PROPS_MAX + 1];
	int ttl;
	int fd;
} fake_sess_t;

static struct {
	fake_sess_t s[FAKE_MAX];
	int n;
	int save_result;	/* what save answers; SCACHE_UNSENT: down */
	bool down;		/* find finds nothing */
	int saves, finds_dest, finds_endp;
	fake_sess_t last;	/* the last save, as given */
} F;

static int fake_save(void *ctx, const char *dest, const char *endpoint,
    int ttl_ms, const char *props, int fd)
{
	(void)ctx;
	F.saves++;
	snprintf(F.last.dest, sizeof(F.last.dest), "%s", dest);
	snprintf(F.last.endpoint, sizeof(F.last.endpoint), "%s", endpoint);
	snprintf(F.last.props, sizeof(F.last.props), "%s", props);
	F.last.ttl = ttl_ms;
	if (F.save_result == SCACHE_UNSENT || F.n >= FAKE_MAX)
		return SCACHE_UNSENT;
	/* Saved, or maybe saved: the cache holds its own copy. */
	F.s[F.n] = F.last;
	F.s[F.n].fd = dup(fd);
	ATF_REQUIRE(F.s[F.n].fd >= 0);
	F.n++;
	return F.save_result;
}

static int fake_find(void *ctx, bool by_endpoint, const char *label,
    str_t *props)
{
	(void)ctx;
	if (by_endpoint)
		F.finds_endp++;
	else
		F.finds_dest++;
	if (F.down)
		return -1;
	for (int i = 0; i < F.n; i++) {
		if (strcmp(by_endpoint ? F.s[i].endpoint : F.s[i].dest, label) != 0)
			continue;
		int fd = F.s[i].fd;
		str_set(props, F.s[i].props);
		F.s[i] = F.s[--F.n];
		return fd;
	}
	return -1;
}

static void fake_init(void)
{
	memset(&F, 0, sizeof(F));
	F.save_result = SCACHE_SAVED;
}

/* The cache closes what it holds (no QUIT, as the daemon at SIGTERM). */
static void fake_clear(void)
{
	for (int i = 0; i < F.n; i++)
		close(F.s[i].fd);
	F.n = 0;
}

static smtp_client_t *client(const char *service)
{
	smtp_client_t *cl = smtp_client_new(&cfg, NULL);
	smtp_shared_t sh = { fake_save, fake_find, NULL };

	smtp_client_set_shared(cl, &sh, service);
	return cl;
}

static void run(delivery_t *d, smtp_client_t *cl, const char *nexthop)
{
	dl_init(d, nexthop, "s@example.com", MSG_TEXT, one_rcpt);
	smtp_deliver(cl, &d->req);
}

/* ---- tests ---- */

SMTP_TC(shared_reuse)
{
	delivery_t d;
	smtp_client_t *c1, *c2;
	char nh[64];
	int port, sent = 0;

	cfg_init();
	fake_init();
	port = sink_start(tc, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	c1 = client("smtp");
	c2 = client("smtp");
	/* Two processes taking turns: one connection for all. */
	for (int i = 0; i < 20; i++) {
		run(&d, i % 2 ? c2 : c1, nh);
		sent += d.rcpt[0].status == SMTP_R_SENT;
		dl_free(&d);
		/* Nothing stays in the process: it is all in the cache. */
		ATF_CHECK_EQ(smtp_client_cached(i % 2 ? c2 : c1), 0);
		ATF_CHECK_EQ(F.n, 1);
	}
	ATF_CHECK_EQ(sent, 20);
	ATF_CHECK_EQ(smtp_client_stats(c1)->connects +
	    smtp_client_stats(c2)->connects, 1);
	ATF_CHECK_EQ(smtp_client_stats(c1)->shared_saved, 10);
	ATF_CHECK_EQ(smtp_client_stats(c2)->shared_found, 10);
	ATF_CHECK_EQ(smtp_client_stats(c1)->shared_found, 9);
	/* The clients end; the session stays with the cache. */
	smtp_client_free(c1);
	smtp_client_free(c2);
	ATF_CHECK_EQ(F.n, 1);
	ATF_CHECK(sink_stat_wait(0, "messages", 20));
	ATF_CHECK_EQ(sink_stat(0, "quit"), 0);
	ATF_CHECK_EQ(sink_stat(0, "rset"), 19);
	fake_clear();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
}

SMTP_TC(shared_labels)
{
	delivery_t d;
	smtp_client_t *cl;
	char nh[64], want[128];
	attr_reader_t *r;
	attr_msg_t *m;
	const char *s;
	int32_t i32;
	int64_t i64;
	size_t used;
	int port;

	cfg_init();
	fake_init();
	cfg.cache_time_limit_ms = 1500;
	port = sink_start(tc, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	cl = client("relay");
	run(&d, cl, nh);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_REQUIRE_EQ(F.saves, 1);
	snprintf(want, sizeof(want), "relay/[127.0.0.1]:%d", port);
	ATF_CHECK_STREQ(F.last.dest, want);
	snprintf(want, sizeof(want), "relay/127.0.0.1:%d", port);
	ATF_CHECK_STREQ(F.last.endpoint, want);
	/* Fresh from the delivery: the whole idle time. */
	ATF_CHECK_MSG(F.last.ttl > 1400 && F.last.ttl <= 1500, "ttl %d",
	    F.last.ttl);
	r = attr_reader_new(NULL, ATTR_READ_LENIENT, NULL);
	ATF_REQUIRE_EQ(attr_reader_feed(r, F.last.props, strlen(F.last.props),
	    &used), ATTR_DONE);
	m = attr_reader_take(r);
	ATF_CHECK(attr_get_str(m, "host", &s) && strcmp(s, "127.0.0.1") == 0);
	ATF_CHECK(attr_get_str(m, "addr", &s) && strcmp(s, "127.0.0.1") == 0);
	ATF_CHECK(attr_get_int(m, "port", &i32) && i32 == port);
	/* The sink offers PIPELINING, SIZE 52428800, ... */
	ATF_CHECK(attr_get_int(m, "features", &i32) && (i32 & 2) != 0);
	ATF_CHECK(attr_get_long(m, "size_limit", &i64) && i64 == 52428800);
	ATF_CHECK(attr_get_long(m, "born", &i64) && i64 > 0);
	ATF_CHECK(attr_get_int(m, "uses", &i32) && i32 == 1);
	attr_msg_free(m);
	attr_reader_free(r);
	smtp_client_free(cl);
	fake_clear();
	sink_stop(0);
}

/* Another next hop whose server is the same: the destination lookup
 * misses, the endpoint lookup finds the session. */
SMTP_TC(shared_endpoint)
{
	delivery_t d;
	smtp_client_t *c1, *c2;
	char nh1[64], nh2[64];
	int port;

	cfg_init();
	fake_init();
	port = sink_start(tc, NULL);
	snprintf(nh1, sizeof(nh1), "[127.0.0.1]:%d", port);
	snprintf(nh2, sizeof(nh2), "127.0.0.1:%d", port);
	c1 = client("smtp");
	c2 = client("smtp");
	run(&d, c1, nh1);
	dl_free(&d);
	run(&d, c2, nh2);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	ATF_CHECK_EQ(F.finds_dest, 2);
	ATF_CHECK_EQ(F.finds_endp, 2);	/* c1 (nothing), c2 (found) */
	ATF_CHECK_EQ(smtp_client_stats(c2)->shared_found, 1);
	ATF_CHECK_EQ(smtp_client_stats(c2)->connects, 0);
	/* Saved again, under the next hop that used it last. */
	ATF_CHECK(strstr(F.last.dest, "smtp/127.0.0.1:") == F.last.dest);
	smtp_client_free(c1);
	smtp_client_free(c2);
	fake_clear();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 2);
}

/* smtp_connection_reuse_count_limit and _time_limit hold across
 * processes: the count and the age travel with the session. */
SMTP_TC(shared_limits)
{
	delivery_t d;
	smtp_client_t *c1, *c2;
	char nh[64];
	int port;

	cfg_init();
	fake_init();
	cfg.reuse_count_limit = 4;	/* five deliveries a connection */
	port = sink_start(tc, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	c1 = client("smtp");
	c2 = client("smtp");
	for (int i = 0; i < 20; i++) {
		run(&d, i % 2 ? c2 : c1, nh);
		CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
		dl_free(&d);
	}
	smtp_client_free(c1);
	smtp_client_free(c2);
	fake_clear();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 4);
	/* Each closed after its fifth delivery, wherever that was. */
	ATF_CHECK_EQ(sink_stat(0, "quit"), 4);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 20);

	/* Age: the ttl given to the cache ends at the reuse time limit, and
	 * a session found past it is not used. */
	fake_init();
	cfg.reuse_count_limit = 0;
	cfg.reuse_time_limit_ms = 400;
	port = sink_start(tc, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	c1 = client("smtp");
	c2 = client("smtp");
	run(&d, c1, nh);
	dl_free(&d);
	ATF_CHECK_MSG(F.last.ttl > 0 && F.last.ttl <= 400, "ttl %d", F.last.ttl);
	h_sleep_ms(500);
	run(&d, c2, nh);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_stats(c2)->shared_found, 1);
	ATF_CHECK_EQ(smtp_client_stats(c2)->connects, 1);
	smtp_client_free(c1);
	smtp_client_free(c2);
	fake_clear();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 2);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 2);
}

/* A session in the cache whose server hung up: seen before use, the
 * delivery connects anew and nobody is blamed. */
SMTP_TC(shared_stale)
{
	delivery_t d;
	smtp_client_t *c1, *c2;
	char nh[64];
	int port;

	cfg_init();
	fake_init();
	port = sink_start(tc, "-T", "1", NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	c1 = client("smtp");
	c2 = client("smtp");
	run(&d, c1, nh);
	dl_free(&d);
	ATF_REQUIRE_EQ(F.n, 1);
	ATF_REQUIRE(sink_stat_wait(0, "timeouts", 1));
	h_sleep_ms(100);
	run(&d, c2, nh);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	ATF_CHECK(!d.req.conn_failed);
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_stats(c2)->shared_found, 1);
	ATF_CHECK_EQ(smtp_client_stats(c2)->connects, 1);
	smtp_client_free(c1);
	smtp_client_free(c2);
	fake_clear();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 2);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 2);
}

/* The cache down: sessions stay in the process (reuse as without a
 * cache); back up: a kept session moves there when a request for another
 * next hop comes, and when the client ends. */
SMTP_TC(shared_down)
{
	delivery_t d;
	smtp_client_t *cl;
	char nh1[64], nh2[64];
	int p1, p2;

	cfg_init();
	fake_init();
	F.save_result = SCACHE_UNSENT;
	F.down = true;
	p1 = sink_start(tc, NULL);
	p2 = sink_start_v(tc, 1, "127.0.0.1:0", NULL);
	snprintf(nh1, sizeof(nh1), "[127.0.0.1]:%d", p1);
	snprintf(nh2, sizeof(nh2), "[127.0.0.1]:%d", p2);
	cl = client("smtp");
	for (int i = 0; i < 5; i++) {
		run(&d, cl, nh1);
		CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
		dl_free(&d);
	}
	ATF_CHECK_EQ(smtp_client_stats(cl)->connects, 1);
	ATF_CHECK_EQ(smtp_client_cached(cl), 1);
	ATF_CHECK_EQ(F.n, 0);
	/* Back: the next request is for another next hop; nh1's session
	 * goes to the cache before this process turns to nh2. */
	F.save_result = SCACHE_SAVED;
	F.down = false;
	run(&d, cl, nh2);
	dl_free(&d);
	ATF_CHECK_EQ(F.n, 2);	/* nh1's, and nh2's after its delivery */
	ATF_CHECK_EQ(smtp_client_cached(cl), 0);
	/* Down again: nh2's next session stays, and goes at the end if the
	 * cache is back by then. */
	fake_clear();
	F.save_result = SCACHE_UNSENT;
	run(&d, cl, nh2);
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_cached(cl), 1);
	F.save_result = SCACHE_SAVED;
	smtp_client_free(cl);
	ATF_CHECK_EQ(F.n, 1);
	ATF_CHECK_EQ(sink_stat(1, "quit"), 0);
	fake_clear();
	sink_stop(0);
	sink_stop(1);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 1);
	ATF_CHECK_EQ(sink_stat(1, "connections"), 2);

	/* Down at the end: QUIT, as without a cache. */
	fake_init();
	F.save_result = SCACHE_UNSENT;
	p1 = sink_start(tc, NULL);
	snprintf(nh1, sizeof(nh1), "[127.0.0.1]:%d", p1);
	cl = client("smtp");
	run(&d, cl, nh1);
	dl_free(&d);
	smtp_client_free(cl);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "quit"), 1);
}

/* A save that got no answer may have reached the cache: the session is
 * closed here without QUIT (QUIT would end it for the cache too). */
SMTP_TC(shared_unknown)
{
	delivery_t d;
	smtp_client_t *cl;
	char nh[64];
	int port;

	cfg_init();
	fake_init();
	F.save_result = SCACHE_UNKNOWN;
	port = sink_start(tc, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	cl = client("smtp");
	run(&d, cl, nh);
	dl_free(&d);
	ATF_CHECK_EQ(smtp_client_cached(cl), 0);
	ATF_CHECK_EQ(smtp_client_stats(cl)->shared_saved, 0);
	smtp_client_free(cl);
	h_sleep_ms(100);
	ATF_CHECK_EQ(sink_stat(0, "quit"), 0);
	fake_clear();
	sink_stop(0);
}

/* Properties from the cache that do not decode, or name another server
 * than the endpoint asked for: the session is closed, the delivery goes
 * on with a connection of its own. */
SMTP_TC(shared_bad_props)
{
	delivery_t d;
	smtp_client_t *c1, *c2;
	char nh[64];
	str_t t = STR_INIT;
	int port;

	cfg_init();
	fake_init();
	port = sink_start(tc, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	c1 = client("smtp");
	c2 = client("smtp");
	run(&d, c1, nh);
	dl_free(&d);
	ATF_REQUIRE_EQ(F.n, 1);
	snprintf(F.s[0].props, sizeof(F.s[0].props), "S host 3:x y\n.\n");
	run(&d, c2, nh);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_CHECK(strstr(log_text(&t), "session for smtp/[127.0.0.1]") != NULL);
	ATF_CHECK(strstr(str_cstr(&t), "refused: properties") != NULL);
	/* Another server's session under this endpoint label. */
	ATF_REQUIRE_EQ(F.n, 1);
	{
		char *p = strstr(F.s[0].props, "S addr 9:127.0.0.1");
		ATF_REQUIRE(p != NULL);
		p[17] = '2';	/* 127.0.0.2 */
		F.s[0].dest[0] = 'x';	/* found by endpoint only */
	}
	run(&d, c2, nh);
	CHECK_RCPT(&d, 0, SMTP_R_SENT, "2.0.0", "250");
	dl_free(&d);
	ATF_CHECK(strstr(log_text(&t), "the address is not the endpoint's") != NULL);
	smtp_client_free(c1);
	smtp_client_free(c2);
	fake_clear();
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 3);
	ATF_CHECK_EQ(sink_stat(0, "messages"), 3);
	str_release(&t);
}

/* smtp_connection_cache_on_demand = no: nothing kept, nothing shared. */
SMTP_TC(shared_off)
{
	delivery_t d;
	smtp_client_t *cl;
	char nh[64];
	int port;

	cfg_init();
	fake_init();
	cfg.connection_cache = false;
	port = sink_start(tc, NULL);
	snprintf(nh, sizeof(nh), "[127.0.0.1]:%d", port);
	cl = client("smtp");
	for (int i = 0; i < 3; i++) {
		run(&d, cl, nh);
		dl_free(&d);
	}
	smtp_client_free(cl);
	ATF_CHECK_EQ(F.saves + F.finds_dest + F.finds_endp, 0);
	sink_stop(0);
	ATF_CHECK_EQ(sink_stat(0, "connections"), 3);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, shared_reuse);
	ATF_TP_ADD_TC(tp, shared_labels);
	ATF_TP_ADD_TC(tp, shared_endpoint);
	ATF_TP_ADD_TC(tp, shared_limits);
	ATF_TP_ADD_TC(tp, shared_stale);
	ATF_TP_ADD_TC(tp, shared_down);
	ATF_TP_ADD_TC(tp, shared_unknown);
	ATF_TP_ADD_TC(tp, shared_bad_props);
	ATF_TP_ADD_TC(tp, shared_off);
	return atf_no_error();
}
