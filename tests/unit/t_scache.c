/* The connection cache: the store (limits, expiry, both indexes, without
 * I/O), the request checks, and the scache daemon under a private master
 * instance driven through the client library and raw sockets: save and
 * find with real descriptors (a socketpair: what goes in one end of the
 * cached socket comes out of the other), expiry, the per-destination and
 * total bounds (the evicted session gets QUIT and is closed), a session
 * whose peer hangs up, malformed requests of every kind, a client that
 * vanishes or stalls in the middle of a request; after each, the daemon
 * still serves and still holds what it held. */
#include <atf-c.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "file.h"
#include "log.h"
#include "mem.h"
#include "scache.h"
#include "scache/scache_store.h"
#include "sock.h"
#include "str.h"

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* ---- the store ---- */

typedef struct drops {
	int fd[64];
	enum scache_drop why[64];
	int n, added;
} drops_t;

static void hook_added(void *ctx, scache_sess_t *ss)
{
	(void)ss;
	((drops_t *)ctx)->added++;
}

static void hook_dropped(void *ctx, scache_sess_t *ss, enum scache_drop why)
{
	drops_t *d = ctx;
	if (d->n < 64) {
		d->fd[d->n] = ss->fd;
		d->why[d->n] = why;
		d->n++;
	}
}

static scache_store_t *store(drops_t *d, size_t per_dest, size_t total,
    int64_t ttl_limit)
{
	scache_hooks_t h = { hook_added, hook_dropped, d };
	memset(d, 0, sizeof(*d));
	return scache_store_new(per_dest, total, ttl_limit, &h);
}

ATF_TC_WITHOUT_HEAD(store_save_find);
ATF_TC_BODY(store_save_find, tc)
{
	drops_t d;
	scache_store_t *st = store(&d, 10, 100, 2000);
	scache_sess_t *ss;

	(void)tc;
	scache_store_save(st, 0, "smtp/a.example", "smtp/192.0.2.1:25", 1000,
	    "p1", 10, NULL);
	scache_store_save(st, 1, "smtp/a.example", "smtp/192.0.2.1:25", 1000,
	    "p2", 11, NULL);
	scache_store_save(st, 2, "smtp/b.example", "smtp/192.0.2.1:25", 1000,
	    "p3", 12, NULL);
	ATF_CHECK_EQ(d.added, 3);
	ATF_CHECK_EQ(scache_store_count(st), 3);
	ATF_CHECK_EQ(scache_store_count_dest(st, "smtp/a.example"), 2);
	ATF_CHECK_EQ(scache_store_count_endpoint(st, "smtp/192.0.2.1:25"), 3);

	/* By destination: the one of that destination idle longest. */
	ss = scache_store_take(st, false, "smtp/a.example");
	ATF_REQUIRE(ss != NULL);
	ATF_CHECK_EQ(ss->fd, 10);
	ATF_CHECK_STREQ(ss->props, "p1");
	ATF_CHECK_STREQ(ss->endpoint, "smtp/192.0.2.1:25");
	scache_sess_free(ss);
	/* Taken means gone from the endpoint index too. */
	ATF_CHECK_EQ(scache_store_count_endpoint(st, "smtp/192.0.2.1:25"), 2);
	/* By endpoint: the oldest of any destination. */
	ss = scache_store_take(st, true, "smtp/192.0.2.1:25");
	ATF_REQUIRE(ss != NULL);
	ATF_CHECK_EQ(ss->fd, 11);
	ATF_CHECK_STREQ(ss->dest, "smtp/a.example");
	ATF_CHECK_STREQ(ss->props, "p2");
	scache_sess_free(ss);
	/* ...and gone from the destination index. */
	ATF_CHECK(scache_store_take(st, false, "smtp/a.example") == NULL);
	ss = scache_store_take(st, false, "smtp/b.example");
	ATF_REQUIRE(ss != NULL);
	ATF_CHECK_EQ(ss->fd, 12);
	scache_sess_free(ss);
	ATF_CHECK(scache_store_take(st, true, "smtp/192.0.2.1:25") == NULL);
	ATF_CHECK_EQ(scache_store_count(st), 0);
	ATF_CHECK_EQ(scache_store_stats(st)->dest_hits, 2);
	ATF_CHECK_EQ(scache_store_stats(st)->dest_misses, 1);
	ATF_CHECK_EQ(scache_store_stats(st)->endp_hits, 1);
	ATF_CHECK_EQ(scache_store_stats(st)->endp_misses, 1);
	/* Taken sessions are the caller's: the store closed nothing. */
	ATF_CHECK_EQ(d.n, 0);
	scache_store_free(st);
}

ATF_TC_WITHOUT_HEAD(store_expiry);
ATF_TC_BODY(store_expiry, tc)
{
	drops_t d;
	scache_store_t *st = store(&d, 10, 100, 2000);

	(void)tc;
	scache_store_save(st, 1000, "d1", "e1", 500, "", 20, NULL);
	/* More than the limit is cut to it. */
	scache_store_save(st, 1000, "d2", "e2", 60000, "", 21, NULL);
	scache_store_save(st, 1100, "d3", "e3", 100, "", 22, NULL);
	ATF_CHECK_EQ(scache_store_next_expiry(st), 1200);
	ATF_CHECK_EQ(scache_store_expire(st, 1199), 0);
	ATF_CHECK_EQ(scache_store_expire(st, 1200), 1);
	ATF_CHECK_EQ(d.fd[0], 22);
	ATF_CHECK_EQ(d.why[0], SCACHE_DROP_EXPIRED);
	ATF_CHECK_EQ(scache_store_next_expiry(st), 1500);
	ATF_CHECK_EQ(scache_store_expire(st, 2999), 1);
	ATF_CHECK_EQ(d.fd[1], 20);
	ATF_CHECK_EQ(scache_store_next_expiry(st), 3000);
	ATF_CHECK_EQ(scache_store_expire(st, 3000), 1);
	ATF_CHECK_EQ(d.fd[2], 21);
	ATF_CHECK_EQ(scache_store_next_expiry(st), -1);
	ATF_CHECK(scache_store_take(st, false, "d2") == NULL);
	ATF_CHECK_EQ(scache_store_stats(st)->expired, 3);
	scache_store_free(st);
	ATF_CHECK_EQ(d.n, 3);
}

ATF_TC_WITHOUT_HEAD(store_limits);
ATF_TC_BODY(store_limits, tc)
{
	drops_t d;
	scache_store_t *st = store(&d, 2, 4, 2000);
	scache_sess_t *ss;

	(void)tc;
	/* Per destination: the third for d1 makes the oldest of d1 go. */
	scache_store_save(st, 0, "d1", "e", 1000, "", 30, NULL);
	scache_store_save(st, 1, "d2", "e", 1000, "", 31, NULL);
	scache_store_save(st, 2, "d1", "e", 1000, "", 32, NULL);
	scache_store_save(st, 3, "d1", "e", 1000, "", 33, NULL);
	ATF_REQUIRE_EQ(d.n, 1);
	ATF_CHECK_EQ(d.fd[0], 30);
	ATF_CHECK_EQ(d.why[0], SCACHE_DROP_EVICTED);
	ATF_CHECK_EQ(scache_store_count_dest(st, "d1"), 2);
	/* In all: the fifth makes the oldest of all (d2's) go. */
	scache_store_save(st, 4, "d3", "e", 1000, "", 34, NULL);
	scache_store_save(st, 5, "d4", "e", 1000, "", 35, NULL);
	ATF_REQUIRE_EQ(d.n, 2);
	ATF_CHECK_EQ(d.fd[1], 31);
	ATF_CHECK_EQ(scache_store_count(st), 4);
	ATF_CHECK_EQ(scache_store_count_dest(st, "d2"), 0);
	ATF_CHECK_EQ(scache_store_stats(st)->evicted, 2);
	ATF_CHECK_EQ(scache_store_stats(st)->max_sessions, 4);
	/* A session dropped for its server, and the rest at the end. */
	ss = scache_store_take(st, false, "d3");
	ATF_REQUIRE(ss != NULL);
	scache_sess_free(ss);
	ss = scache_store_save(st, 6, "d3", "e", 1000, "", 36, NULL);
	scache_store_drop(st, ss, SCACHE_DROP_SERVER);
	ATF_CHECK_EQ(d.why[2], SCACHE_DROP_SERVER);
	ATF_CHECK_EQ(scache_store_stats(st)->server_closed, 1);
	scache_store_free(st);
	ATF_CHECK_EQ(d.n, 6);
	ATF_CHECK_EQ(d.why[5], SCACHE_DROP_EXIT);
}

ATF_TC_WITHOUT_HEAD(store_duplicate);
ATF_TC_BODY(store_duplicate, tc)
{
	drops_t d;
	scache_store_t *st = store(&d, 2, 4, 2000);
	scache_sess_t *ss;

	(void)tc;
	ATF_CHECK(scache_store_save(st, 0, "d1", "e", 1000, "", 40, "1:77") != NULL);
	/* The same socket again (another descriptor for it): refused. */
	ATF_CHECK(scache_store_save(st, 0, "d2", "e2", 1000, "", 41, "1:77") == NULL);
	ATF_CHECK_EQ(scache_store_count(st), 1);
	/* Once taken, it may come back. */
	ss = scache_store_take(st, false, "d1");
	ATF_REQUIRE(ss != NULL);
	scache_sess_free(ss);
	ATF_CHECK(scache_store_save(st, 0, "d2", "e2", 1000, "", 42, "1:77") != NULL);
	scache_store_free(st);
}

/* ---- request checks ---- */

/* Decodes text with the request schema and checks it: 0, or -1 with the
 * reader's or the check's reason in err. */
static int parse(const char *text, scache_req_t *req, attr_msg_t **mp,
    str_t *err)
{
	attr_reader_t *r = scache_request_reader_new();
	size_t used;
	int rc = -1;

	*mp = NULL;
	if (attr_reader_feed(r, text, strlen(text), &used) != ATTR_DONE) {
		str_set(err, attr_reader_error(r));
	} else {
		*mp = attr_reader_take(r);
		rc = scache_request_parse(*mp, req, err);
	}
	attr_reader_free(r);
	return rc;
}

static void check_refused(const char *text, const char *why)
{
	scache_req_t req;
	attr_msg_t *m;
	str_t err = STR_INIT;

	ATF_CHECK_MSG(parse(text, &req, &m, &err) < 0, "accepted: %s", text);
	ATF_CHECK_MSG(strstr(str_cstr(&err), why) != NULL,
	    "'%s': got '%s', want '%s'", text, str_cstr(&err), why);
	if (m != NULL)
		attr_msg_free(m);
	str_release(&err);
}

ATF_TC_WITHOUT_HEAD(requests);
ATF_TC_BODY(requests, tc)
{
	scache_req_t req;
	attr_msg_t *m;
	str_t s = STR_INIT, err = STR_INIT;
	char big[SCACHE_LABEL_MAX + 2];

	(void)tc;
	scache_save_encode(&s, "smtp/a.example", "smtp/192.0.2.1:25", 2000,
	    "props");
	ATF_REQUIRE_MSG(parse(str_cstr(&s), &req, &m, &err) == 0, "%s",
	    str_cstr(&err));
	ATF_CHECK_EQ(req.op, SCACHE_OP_SAVE);
	ATF_CHECK_STREQ(req.dest, "smtp/a.example");
	ATF_CHECK_STREQ(req.endpoint, "smtp/192.0.2.1:25");
	ATF_CHECK_STREQ(req.props, "props");
	ATF_CHECK_EQ(req.ttl_ms, 2000);
	attr_msg_free(m);
	str_reset(&s);
	scache_find_encode(&s, SCACHE_OP_FIND_ENDP, "smtp/[2001:db8::1]:25");
	ATF_REQUIRE(parse(str_cstr(&s), &req, &m, &err) == 0);
	ATF_CHECK_EQ(req.op, SCACHE_OP_FIND_ENDP);
	ATF_CHECK_STREQ(req.endpoint, "smtp/[2001:db8::1]:25");
	ATF_CHECK(req.dest == NULL);
	attr_msg_free(m);
	str_reset(&s);
	scache_find_encode(&s, SCACHE_OP_FIND_DEST, "smtp/a.example");
	ATF_REQUIRE(parse(str_cstr(&s), &req, &m, &err) == 0);
	ATF_CHECK_EQ(req.op, SCACHE_OP_FIND_DEST);
	attr_msg_free(m);

	check_refused("S request 4:list\n.\n", "unknown request");
	check_refused("S request 9:find_dest\n.\n", "without a dest");
	check_refused("S request 9:find_dest\nS dest 1:d\nS endpoint 1:e\n.\n",
	    "with a endpoint");
	check_refused("S request 9:find_dest\nS dest 1:d\nI ttl 5\n.\n",
	    "with a ttl");
	check_refused("S request 4:save\nS dest 1:d\nS endpoint 1:e\nS props 0:\n.\n",
	    "without a ttl");
	check_refused("S request 4:save\nS dest 1:d\nS endpoint 1:e\nI ttl 0\n"
	    "S props 0:\n.\n", "ttl 0");
	check_refused("S request 4:save\nS dest 3:a b\nS endpoint 1:e\nI ttl 5\n"
	    "S props 0:\n.\n", "bad dest label");
	check_refused("S request 13:find_endpoint\nS endpoint 0:\n.\n",
	    "bad endpoint label");
	check_refused("S request 13:find_endpoint\nS endpoint 2:a\x01\n.\n",
	    "bad endpoint label");
	check_refused("S request 9:find_dest\nS dest 1:d\nS other 1:x\n.\n",
	    "unknown");
	check_refused("S request 9:find_dest\nN dest 0\n.\n", "");
	check_refused("I request 4\n.\n", "wrong type");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	str_reset(&s);
	scache_find_encode(&s, SCACHE_OP_FIND_DEST, big);
	check_refused(str_cstr(&s), "bad dest label");
	str_release(&s);
	str_release(&err);
}

/* ---- the daemon under master ---- */

static char bindir[4096];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	str_t cmd = STR_INIT;
	va_list ap;

	va_start(ap, fmt);
	str_vcatf(&cmd, fmt, ap);
	va_end(ap);
	if (system(str_cstr(&cmd)) != 0)
		(void)0;
	str_release(&cmd);
}

/* A private instance running only scache, with extra main.cf lines. */
static void instance(const atf_tc_t *tc, const char *extra)
{
	char cwd[2048];
	FILE *fp;
	str_t cmd = STR_INIT;

	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(bindir, sizeof(bindir), "%s/../../bin",
	    atf_tc_get_config_var(tc, "srcdir"));
	ATF_REQUIRE(mkdir("etc", 0755) == 0 || errno == EEXIST);
	fp = fopen("etc/main.cf", "w");
	ATF_REQUIRE(fp != NULL);
	fprintf(fp, "queue_directory = %s/q\ndaemon_directory = %s\n"
	    "maillog_file = %s/maillog\ninet_interfaces = 127.0.0.1\n"
	    "connection_cache_protocol_timeout = 1s\n"
	    "connection_cache_status_update_time = 1s\n%s", cwd, bindir, cwd,
	    extra != NULL ? extra : "");
	ATF_REQUIRE(fclose(fp) == 0);
	fp = fopen("etc/master.cf", "w");
	ATF_REQUIRE(fp != NULL);
	fputs("scache unix - n n - 1 scache\n", fp);
	ATF_REQUIRE(fclose(fp) == 0);
	str_setf(&cmd, "%s/petrel -c %s/etc start >petrel.out 2>&1", bindir, cwd);
	ATF_REQUIRE_MSG(system(str_cstr(&cmd)) == 0, "petrel start failed");
	str_release(&cmd);
}

static void instance_stop(void)
{
	char cwd[2048], line[4096];
	const char *bin = NULL;
	FILE *fp;

	if (getcwd(cwd, sizeof(cwd)) == NULL ||
	    (fp = fopen("etc/main.cf", "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strncmp(line, "daemon_directory = ", 19) == 0) {
			line[strcspn(line, "\n")] = '\0';
			bin = line + 19;
			break;
		}
	fclose(fp);
	if (bin != NULL)
		sh("%s/petrel -c %s/etc stop >/dev/null 2>&1 || "
		    "%s/petrel -c %s/etc abort >/dev/null 2>&1", bin, cwd, bin, cwd);
}

static bool log_has(const char *what)
{
	str_t t = STR_INIT;
	bool yes;

	file_read_all("maillog", &t, 1 << 22);
	yes = strstr(str_cstr(&t), what) != NULL;
	str_release(&t);
	return yes;
}

/* Waits (5 s at most) for text in the log. */
static bool log_wait(const char *what)
{
	for (int i = 0; i < 100; i++) {
		if (log_has(what))
			return true;
		sleep_ms(50);
	}
	return false;
}

static void log_clean(void)
{
	ATF_CHECK_MSG(!log_has("Sanitizer") && !log_has("runtime error"),
	    "sanitizer report in maillog");
	ATF_CHECK_MSG(!log_has("fatal:") && !log_has("panic:"),
	    "fatal error in maillog");
}

/* The daemon's statistics lines added up (each covers an interval):
 * saved, destination hits, lookups, endpoint hits, lookups, expired,
 * closed by the server, evicted. */
enum { ST_SAVED, ST_DHITS, ST_DLOOK, ST_EHITS, ST_ELOOK, ST_EXPIRED,
	ST_SERVER, ST_EVICTED, ST_N };

static void stats_sum(unsigned long v[ST_N])
{
	str_t t = STR_INIT;
	const char *p;

	memset(v, 0, ST_N * sizeof(v[0]));
	file_read_all("maillog", &t, 1 << 22);
	for (p = str_cstr(&t); (p = strstr(p, "statistics: ")) != NULL; p++) {
		unsigned long x[ST_N], found;
		if (sscanf(p, "statistics: %lu saved, %lu found (destination "
		    "%lu/%lu, endpoint %lu/%lu), %lu expired, %lu closed by the "
		    "server, %lu evicted", &x[ST_SAVED], &found, &x[ST_DHITS],
		    &x[ST_DLOOK], &x[ST_EHITS], &x[ST_ELOOK], &x[ST_EXPIRED],
		    &x[ST_SERVER], &x[ST_EVICTED]) != 9)
			continue;
		for (int i = 0; i < ST_N; i++)
			v[i] += x[i];
	}
	str_release(&t);
}

/* Waits (5 s at most) until the statistics count at least n of what. */
static void stats_wait(int what, unsigned long n, unsigned long v[ST_N])
{
	for (int i = 0; i < 100; i++) {
		stats_sum(v);
		if (v[what] >= n)
			return;
		sleep_ms(50);
	}
}

#define SCACHE_TC(name)							\
	ATF_TC_WITH_CLEANUP(name);					\
	ATF_TC_HEAD(name, tc)						\
	{								\
		atf_tc_set_md_var(tc, "descr", "scache daemon: " #name); \
		atf_tc_set_md_var(tc, "require.user", "unprivileged");	\
		atf_tc_set_md_var(tc, "timeout", "120");		\
	}								\
	ATF_TC_CLEANUP(name, tc)					\
	{								\
		(void)tc;						\
		instance_stop();					\
	}								\
	ATF_TC_BODY(name, tc)

#define PATH "q/private/scache"

/* A "session": our end is held by the cache, the peer stays with the
 * test to check what the cache does with it. */
typedef struct pair {
	int mine;	/* given to the cache (then closed here) */
	int peer;
} pair_t;

static void pair_new(pair_t *p)
{
	int sv[2];
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	p->mine = sv[0];
	p->peer = sv[1];
}

static void save(scache_clnt_t *sc, const char *dest, const char *endp,
    int ttl, const char *props, pair_t *p)
{
	ATF_REQUIRE_EQ(scache_clnt_save(sc, dest, endp, ttl, props, p->mine),
	    SCACHE_SAVED);
	close(p->mine);
	p->mine = -1;
}

/* The descriptor found is the pair's socket: bytes written to it come
 * out at the peer. */
static void same_socket(int fd, const pair_t *p)
{
	char buf[8];
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE_EQ(write(fd, "ping", 4), 4);
	ATF_REQUIRE_EQ(read(p->peer, buf, 4), 4);
	ATF_CHECK(memcmp(buf, "ping", 4) == 0);
}

/* What the peer gets within wait_ms: the bytes before EOF, "" if none;
 * NULL if the connection is still open and silent. */
static const char *peer_end(const pair_t *p, char *buf, size_t size,
    int wait_ms)
{
	size_t got = 0;
	struct pollfd pf = { .fd = p->peer, .events = POLLIN };

	while (got + 1 < size && poll(&pf, 1, wait_ms) > 0) {
		ssize_t n = read(p->peer, buf + got, size - 1 - got);
		if (n <= 0) {
			buf[got] = '\0';
			return buf;
		}
		got += (size_t)n;
	}
	return NULL;
}

static scache_clnt_t *clnt(void)
{
	return scache_clnt_new(PATH, 2000, 5000);
}

SCACHE_TC(save_find)
{
	scache_clnt_t *sc;
	pair_t a, b, c;
	str_t props = STR_INIT;
	int fd;

	instance(tc, NULL);
	sc = clnt();
	pair_new(&a);
	pair_new(&b);
	pair_new(&c);
	save(sc, "smtp/a.example", "smtp/192.0.2.1:25", 2000, "props of a", &a);
	save(sc, "smtp/b.example", "smtp/192.0.2.1:25", 2000, "props of b", &b);
	save(sc, "smtp/c.example", "smtp/192.0.2.3:25", 2000, "props of c", &c);
	/* By destination. */
	fd = scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a.example", &props);
	same_socket(fd, &a);
	ATF_CHECK_STREQ(str_cstr(&props), "props of a");
	close(fd);
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a.example",
	    &props), -1);
	/* By endpoint: b.example's session, saved under another name. */
	fd = scache_clnt_find(sc, SCACHE_OP_FIND_ENDP, "smtp/192.0.2.1:25", &props);
	same_socket(fd, &b);
	ATF_CHECK_STREQ(str_cstr(&props), "props of b");
	close(fd);
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/b.example",
	    &props), -1);
	/* Another client (another smtp process) finds what this one saved. */
	scache_clnt_free(sc);
	sc = clnt();
	fd = scache_clnt_find(sc, SCACHE_OP_FIND_ENDP, "smtp/192.0.2.3:25", &props);
	same_socket(fd, &c);
	close(fd);
	ATF_CHECK(scache_clnt_usable(sc));
	scache_clnt_free(sc);
	close(a.peer);
	close(b.peer);
	close(c.peer);
	str_release(&props);
	{
		unsigned long v[ST_N];
		stats_wait(ST_ELOOK, 2, v);
		ATF_CHECK_EQ(v[ST_SAVED], 3);
		ATF_CHECK_EQ(v[ST_DHITS], 1);
		ATF_CHECK_EQ(v[ST_DLOOK], 3);
		ATF_CHECK_EQ(v[ST_EHITS], 2);
		ATF_CHECK_EQ(v[ST_ELOOK], 2);
	}
	instance_stop();
	log_clean();
}

SCACHE_TC(expiry)
{
	scache_clnt_t *sc;
	pair_t a, b;
	str_t props = STR_INIT;
	char buf[64];
	const char *end;

	instance(tc, "connection_cache_ttl_limit = 1s\n");
	sc = clnt();
	pair_new(&a);
	pair_new(&b);
	save(sc, "smtp/a.example", "smtp/192.0.2.1:25", 300, "", &a);
	/* Asks for a minute, gets the limit (1 s). */
	save(sc, "smtp/b.example", "smtp/192.0.2.2:25", 60000, "", &b);
	/* a's 300 ms pass: QUIT, then closed. */
	end = peer_end(&a, buf, sizeof(buf), 3000);
	ATF_CHECK_MSG(end != NULL && strcmp(end, "QUIT\r\n") == 0,
	    "expired session got '%s'", end != NULL ? end : "(still open)");
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a.example",
	    &props), -1);
	/* b is gone after its second. */
	end = peer_end(&b, buf, sizeof(buf), 3000);
	ATF_CHECK_MSG(end != NULL && strcmp(end, "QUIT\r\n") == 0,
	    "session past the limit got '%s'", end != NULL ? end : "(still open)");
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/b.example",
	    &props), -1);
	scache_clnt_free(sc);
	close(a.peer);
	close(b.peer);
	str_release(&props);
	{
		unsigned long v[ST_N];
		stats_wait(ST_EXPIRED, 2, v);
		ATF_CHECK_EQ(v[ST_EXPIRED], 2);
	}
	instance_stop();
	log_clean();
}

SCACHE_TC(bounds)
{
	scache_clnt_t *sc;
	pair_t p[5];
	str_t props = STR_INIT;
	char buf[64];
	const char *end;
	int fd;

	instance(tc, "connection_cache_destination_limit = 2\n"
	    "connection_cache_session_limit = 3\n"
	    "connection_cache_ttl_limit = 60s\n");
	sc = clnt();
	for (int i = 0; i < 5; i++)
		pair_new(&p[i]);
	save(sc, "smtp/a.example", "smtp/192.0.2.1:25", 60000, "0", &p[0]);
	save(sc, "smtp/a.example", "smtp/192.0.2.1:25", 60000, "1", &p[1]);
	/* A third for a.example: the oldest of a.example goes. */
	save(sc, "smtp/a.example", "smtp/192.0.2.1:25", 60000, "2", &p[2]);
	end = peer_end(&p[0], buf, sizeof(buf), 3000);
	ATF_CHECK_MSG(end != NULL && strcmp(end, "QUIT\r\n") == 0,
	    "evicted session got '%s'", end != NULL ? end : "(still open)");
	/* A third in all: nothing goes. */
	save(sc, "smtp/b.example", "smtp/192.0.2.2:25", 60000, "3", &p[3]);
	ATF_CHECK(peer_end(&p[1], buf, sizeof(buf), 200) == NULL);
	/* A fourth: the oldest of all (1) goes. */
	save(sc, "smtp/c.example", "smtp/192.0.2.3:25", 60000, "4", &p[4]);
	ATF_CHECK(peer_end(&p[1], buf, sizeof(buf), 3000) != NULL);
	ATF_CHECK(peer_end(&p[2], buf, sizeof(buf), 200) == NULL);
	ATF_CHECK(peer_end(&p[3], buf, sizeof(buf), 200) == NULL);
	fd = scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/c.example", &props);
	same_socket(fd, &p[4]);
	ATF_CHECK_STREQ(str_cstr(&props), "4");
	close(fd);
	fd = scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a.example", &props);
	same_socket(fd, &p[2]);
	close(fd);
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a.example",
	    &props), -1);
	scache_clnt_free(sc);
	for (int i = 0; i < 5; i++)
		close(p[i].peer);
	str_release(&props);
	{
		unsigned long v[ST_N];
		stats_wait(ST_EVICTED, 2, v);
		ATF_CHECK_EQ(v[ST_EVICTED], 2);
		ATF_CHECK_EQ(v[ST_SAVED], 5);
	}
	instance_stop();
	log_clean();
}

SCACHE_TC(server_hangs_up)
{
	scache_clnt_t *sc;
	pair_t a, b;
	str_t props = STR_INIT;
	int fd;

	instance(tc, NULL);
	sc = clnt();
	pair_new(&a);
	pair_new(&b);
	save(sc, "smtp/a.example", "smtp/192.0.2.1:25", 2000, "", &a);
	save(sc, "smtp/b.example", "smtp/192.0.2.2:25", 2000, "", &b);
	/* One server hangs up, the other says 421: both sessions go at
	 * once, without waiting for their time. */
	close(a.peer);
	ATF_REQUIRE_EQ(write(b.peer, "421 4.4.2 idle\r\n", 16), 16);
	sleep_ms(300);
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a.example",
	    &props), -1);
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_ENDP,
	    "smtp/192.0.2.2:25", &props), -1);
	/* The cache let go of b without a QUIT. */
	{
		char buf[64];
		const char *end = peer_end(&b, buf, sizeof(buf), 3000);
		ATF_CHECK(end != NULL && strcmp(end, "") == 0);
	}
	fd = scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/b.example", &props);
	ATF_CHECK_EQ(fd, -1);
	scache_clnt_free(sc);
	close(b.peer);
	str_release(&props);
	{
		unsigned long v[ST_N];
		stats_wait(ST_SERVER, 2, v);
		ATF_CHECK_EQ(v[ST_SERVER], 2);
	}
	instance_stop();
	log_clean();
}

/* Raw requests: connect, send bytes (with a descriptor or not), and see
 * whether the daemon closes the connection without a reply. */
static int raw_connect(void)
{
	int fd;
	ATF_REQUIRE_EQ(sock_unix_connect(PATH, 2000, &fd), 0);
	ATF_REQUIRE_EQ(sock_set_nonblock(fd, false), 0);
	return fd;
}

/* Sends text with fd (-1: none); true if the daemon closed the
 * connection without answering within 3 s. */
static bool raw_refused(const char *text, size_t len, int fd)
{
	int s = raw_connect();
	struct pollfd pf = { .fd = s, .events = POLLIN };
	char buf[256];
	bool closed = false;

	ATF_REQUIRE_EQ(sock_send_with_fd(s, text, len, fd, 0), (ssize_t)len);
	/* EOF, or a reset when the daemon left bytes unread. */
	if (poll(&pf, 1, 3000) > 0)
		closed = read(s, buf, sizeof(buf)) <= 0;
	close(s);
	return closed;
}

/* The daemon still serves and still holds the session it held. */
static void still_serving(pair_t *held)
{
	scache_clnt_t *sc = clnt();
	str_t props = STR_INIT;
	int fd;

	fd = scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/held.example",
	    &props);
	same_socket(fd, held);
	/* And puts it back. */
	ATF_REQUIRE_EQ(scache_clnt_save(sc, "smtp/held.example",
	    "smtp/192.0.2.9:25", 60000, "", fd), SCACHE_SAVED);
	close(fd);
	scache_clnt_free(sc);
	str_release(&props);
}

#define SAVE_MSG "S request 4:save\nS dest 11:smtp/x.test\nS endpoint " \
	"17:smtp/192.0.2.1:25\nI ttl 1000\nS props 0:\n.\n"
#define FIND_MSG "S request 9:find_dest\nS dest 11:smtp/x.test\n.\n"

SCACHE_TC(malformed)
{
	scache_clnt_t *sc;
	pair_t held, extra;
	int p[2], sv[2];
	char big[SCACHE_MSG_MAX + 64];

	instance(tc, "connection_cache_ttl_limit = 60s\n");
	sc = clnt();
	pair_new(&held);
	save(sc, "smtp/held.example", "smtp/192.0.2.9:25", 60000, "", &held);
	scache_clnt_free(sc);

	/* Not the protocol at all. */
	ATF_CHECK(raw_refused("GET / HTTP/1.0\r\n\r\n", 18, -1));
	ATF_CHECK(log_wait("malformed request: unexpected byte 0x47"));
	still_serving(&held);
	/* An unknown request. */
	ATF_CHECK(raw_refused("S request 4:list\n.\n", 19, -1));
	ATF_CHECK(log_wait("malformed request: unknown request \"list\""));
	/* An unknown attribute. */
	ATF_CHECK(raw_refused("S request 9:find_dest\nS dest 1:d\nI x 1\n.\n", 41, -1));
	/* A save without a descriptor. */
	ATF_CHECK(raw_refused(SAVE_MSG, strlen(SAVE_MSG), -1));
	ATF_CHECK(log_wait("malformed request: save without a descriptor"));
	still_serving(&held);
	/* A save of something that is not a socket. */
	ATF_REQUIRE(pipe(p) == 0);
	ATF_CHECK(raw_refused(SAVE_MSG, strlen(SAVE_MSG), p[0]));
	ATF_CHECK(log_wait("is not a socket"));
	/* The daemon closed its copy: the pipe's reader is only ours. */
	close(p[0]);
	/* A datagram socket. */
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	ATF_CHECK(raw_refused(SAVE_MSG, strlen(SAVE_MSG), sv[0]));
	ATF_CHECK(log_wait("is not a stream socket"));
	close(sv[0]);
	close(sv[1]);
	/* Descriptors without a save: a find with one is answered (the
	 * descriptor waits), but three waiting are too many. */
	pair_new(&extra);
	{
		int s = raw_connect();
		struct pollfd pf = { .fd = s, .events = POLLIN };
		char buf[256];
		ATF_REQUIRE_EQ(sock_send_with_fd(s, FIND_MSG, strlen(FIND_MSG),
		    extra.mine, 0), (ssize_t)strlen(FIND_MSG));
		ATF_REQUIRE(poll(&pf, 1, 3000) > 0);
		ATF_CHECK(read(s, buf, sizeof(buf)) > 0);	/* "I status 1" */
		ATF_REQUIRE_EQ(sock_send_with_fd(s, "S", 1, extra.mine, 0), 1);
		ATF_REQUIRE_EQ(sock_send_with_fd(s, " ", 1, extra.mine, 0), 1);
		ATF_REQUIRE(poll(&pf, 1, 3000) > 0);
		ATF_CHECK_EQ(read(s, buf, sizeof(buf)), 0);
		close(s);
	}
	ATF_CHECK(log_wait("more than 2 descriptors waiting"));
	/* The daemon kept none of them: our end is the only one left. */
	close(extra.mine);
	{
		char buf[8];
		ATF_CHECK_EQ(read(extra.peer, buf, sizeof(buf)), 0);
	}
	close(extra.peer);
	/* A label with a space, a request over the size limit. */
	ATF_CHECK(raw_refused("S request 9:find_dest\nS dest 3:a b\n.\n", 37, -1));
	ATF_CHECK(log_wait("bad dest label"));
	memset(big, 'a', sizeof(big));
	memcpy(big, "S request 9:find_dest\nS dest 9000:", 35);
	ATF_CHECK(raw_refused(big, sizeof(big), -1));
	ATF_CHECK(log_wait("exceeds limit"));
	still_serving(&held);
	close(held.peer);
	instance_stop();
	log_clean();
}

SCACHE_TC(client_vanishes)
{
	scache_clnt_t *sc;
	pair_t held, lost;
	int s;

	instance(tc, "connection_cache_ttl_limit = 60s\n");
	sc = clnt();
	pair_new(&held);
	save(sc, "smtp/held.example", "smtp/192.0.2.9:25", 60000, "", &held);
	/* This client goes away without a word: its connection stays open
	 * in the daemon until it sees EOF. */
	scache_clnt_free(sc);
	/* Half a request, then gone; half a save with its descriptor, then
	 * gone (the descriptor must not stay in the daemon). */
	s = raw_connect();
	ATF_REQUIRE_EQ(write(s, "S request 9:find", 16), 16);
	close(s);
	pair_new(&lost);
	s = raw_connect();
	ATF_REQUIRE_EQ(sock_send_with_fd(s, SAVE_MSG, 20, lost.mine, 0), 20);
	close(s);
	close(lost.mine);
	{
		char buf[8];
		struct pollfd pf = { .fd = lost.peer, .events = POLLIN };
		ATF_REQUIRE(poll(&pf, 1, 3000) > 0);
		ATF_CHECK_EQ(read(lost.peer, buf, sizeof(buf)), 0);
	}
	close(lost.peer);
	/* A client that stalls in the middle of a request is closed after
	 * connection_cache_protocol_timeout (1 s here). */
	s = raw_connect();
	ATF_REQUIRE_EQ(write(s, "S request 9:find", 16), 16);
	{
		char buf[8];
		struct pollfd pf = { .fd = s, .events = POLLIN };
		ATF_REQUIRE(poll(&pf, 1, 5000) > 0);
		ATF_CHECK_EQ(read(s, buf, sizeof(buf)), 0);
	}
	close(s);
	ATF_CHECK(log_wait("request not complete within 1000 ms"));
	still_serving(&held);
	close(held.peer);
	instance_stop();
	log_clean();
}

/* The client: nobody there costs one warning and then nothing for a
 * while; a cache that does not answer costs the timeout once. */
SCACHE_TC(client_down)
{
	scache_clnt_t *sc;
	str_t props = STR_INIT;
	pair_t a;
	struct timespec t0, t1;
	int lfd, fd;
	double took;

	(void)tc;
	log_init("t_scache");
	ATF_REQUIRE(mkdir("q", 0755) == 0 || errno == EEXIST);
	ATF_REQUIRE(mkdir("q/private", 0755) == 0 || errno == EEXIST);
	sc = clnt();
	pair_new(&a);
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a", &props), -1);
	ATF_CHECK(!scache_clnt_usable(sc));
	ATF_CHECK_EQ(scache_clnt_save(sc, "smtp/a", "smtp/e", 1000, "", a.mine),
	    SCACHE_UNSENT);
	scache_clnt_free(sc);
	/* Someone listens but never answers (a stopped daemon). */
	lfd = sock_unix_listen(PATH, 10, 0600);
	ATF_REQUIRE(lfd >= 0);
	sc = scache_clnt_new(PATH, 500, 5000);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a", &props);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	ATF_CHECK_EQ(fd, -1);
	ATF_CHECK_MSG(took >= 0.4 && took < 1.5, "waited %.2f s", took);
	ATF_CHECK(!scache_clnt_usable(sc));
	/* The next requests do not wait at all. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ATF_CHECK_EQ(scache_clnt_save(sc, "smtp/a", "smtp/e", 1000, "", a.mine),
	    SCACHE_UNSENT);
	ATF_CHECK_EQ(scache_clnt_find(sc, SCACHE_OP_FIND_DEST, "smtp/a", &props), -1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	ATF_CHECK_MSG(took < 0.2, "waited %.2f s while backing off", took);
	scache_clnt_free(sc);
	close(lfd);
	close(a.mine);
	close(a.peer);
	str_release(&props);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, store_save_find);
	ATF_TP_ADD_TC(tp, store_expiry);
	ATF_TP_ADD_TC(tp, store_limits);
	ATF_TP_ADD_TC(tp, store_duplicate);
	ATF_TP_ADD_TC(tp, requests);
	ATF_TP_ADD_TC(tp, save_find);
	ATF_TP_ADD_TC(tp, expiry);
	ATF_TP_ADD_TC(tp, bounds);
	ATF_TP_ADD_TC(tp, server_hangs_up);
	ATF_TP_ADD_TC(tp, malformed);
	ATF_TP_ADD_TC(tp, client_vanishes);
	ATF_TP_ADD_TC(tp, client_down);
	return atf_no_error();
}
