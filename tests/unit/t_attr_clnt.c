/* Unit tests for libglobal/attr_clnt: the kept connection that the
 * anvil and scache client libraries share (connect on use, timeouts on
 * the socket, closing, and leaving a failed service alone). */
#include <atf-c.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "attr_clnt.h"
#include "event.h"
#include "sock.h"
#include "str.h"

static const attr_spec_t reply_spec[] = {
	{ "status", ATTR_TYPE_INT, ATTR_REQUIRED, NULL },
	{ NULL, 0, 0, NULL },
};

/* What the owner was told, and how often. */
static str_t warned = STR_INIT;
static int nwarned;

static void warn(attr_clnt_t *c, const char *why)
{
	str_setf(&warned, "%s: %s", c->path, why);
	nwarned++;
}

static void init(attr_clnt_t *c, const char *path, int timeout_ms)
{
	nwarned = 0;
	str_reset(&warned);
	attr_clnt_init(c, path, timeout_ms,
	    attr_reader_new(reply_spec, ATTR_READ_STRICT, NULL), 60000, warn);
}

ATF_TC_WITHOUT_HEAD(no_service);
ATF_TC_BODY(no_service, tc)
{
	attr_clnt_t c;

	init(&c, "nothing-here", 0);
	ATF_CHECK_EQ(c.fd, -1);
	ATF_CHECK_EQ(c.timeout_ms, 1);	/* never "no limit" */
	ATF_CHECK(attr_clnt_usable(&c));
	ATF_CHECK(!attr_clnt_connect(&c));
	ATF_CHECK_EQ(c.fd, -1);
	ATF_CHECK_EQ(nwarned, 1);
	ATF_CHECK_STREQ(str_cstr(&warned),
	    "nothing-here: connect: No such file or directory");
	/* a failure leaves the service alone for the back-off */
	ATF_CHECK(!attr_clnt_usable(&c));
	ATF_CHECK(c.down_until >= event_now_ms() + 59000);
	attr_clnt_release(&c);
}

ATF_TC_WITHOUT_HEAD(connect_and_close);
ATF_TC_BODY(connect_and_close, tc)
{
	attr_clnt_t c;
	struct timeval tv;
	socklen_t len = sizeof(tv);
	int lfd = sock_unix_listen("svc", 8, 0600);

	ATF_REQUIRE(lfd >= 0);
	init(&c, "svc", 2500);
	ATF_REQUIRE(attr_clnt_connect(&c));
	ATF_REQUIRE(c.fd >= 0);
	ATF_CHECK_EQ(nwarned, 0);
	/* blocking, with the timeout on each receive (and send) */
	ATF_REQUIRE(getsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0);
	ATF_CHECK_EQ(tv.tv_sec, 2);
	ATF_CHECK_EQ(tv.tv_usec, 500000);
	/* closing is not a failure */
	attr_clnt_close(&c);
	ATF_CHECK_EQ(c.fd, -1);
	attr_clnt_close(&c);		/* twice is harmless */
	ATF_CHECK(attr_clnt_usable(&c));
	ATF_CHECK_EQ(nwarned, 0);
	attr_clnt_release(&c);
	close(lfd);
}

ATF_TC_WITHOUT_HEAD(fail);
ATF_TC_BODY(fail, tc)
{
	attr_clnt_t c;
	int lfd = sock_unix_listen("svc", 8, 0600);

	ATF_REQUIRE(lfd >= 0);
	init(&c, "svc", 1000);
	ATF_REQUIRE(attr_clnt_connect(&c));
	attr_clnt_fail(&c, "malformed reply: %zu bytes after it", (size_t)3);
	ATF_CHECK_EQ(c.fd, -1);		/* closed */
	ATF_CHECK(!attr_clnt_usable(&c));
	ATF_CHECK_EQ(nwarned, 1);
	ATF_CHECK_STREQ(str_cstr(&warned),
	    "svc: malformed reply: 3 bytes after it");
	/* once the time has passed it is tried again */
	c.down_until = event_now_ms();
	ATF_CHECK(attr_clnt_usable(&c));
	ATF_CHECK(attr_clnt_connect(&c));
	attr_clnt_release(&c);
	close(lfd);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, no_service);
	ATF_TP_ADD_TC(tp, connect_and_close);
	ATF_TP_ADD_TC(tp, fail);
	return atf_no_error();
}
