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

static attr_reader_t *reader(void)
{
	return attr_reader_new(reply_spec, ATTR_READ_STRICT, NULL);
}

ATF_TC_WITHOUT_HEAD(no_service);
ATF_TC_BODY(no_service, tc)
{
	attr_clnt_t c;
	str_t why = STR_INIT;

	attr_clnt_init(&c, "nothing-here", 0, reader());
	ATF_CHECK_EQ(c.fd, -1);
	ATF_CHECK_EQ(c.timeout_ms, 1);	/* never "no limit" */
	ATF_CHECK(attr_clnt_usable(&c));
	ATF_CHECK(!attr_clnt_connect(&c, &why));
	ATF_CHECK_EQ(c.fd, -1);
	ATF_CHECK_STREQ(str_cstr(&why), "connect: No such file or directory");
	/* a failed connect alone does not leave the service alone: the
	 * owner decides with attr_clnt_down() */
	ATF_CHECK(attr_clnt_usable(&c));
	attr_clnt_release(&c);
	ATF_CHECK_EQ(c.fd, -1);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(connect_and_close);
ATF_TC_BODY(connect_and_close, tc)
{
	attr_clnt_t c;
	str_t why = STR_INIT;
	struct timeval tv;
	socklen_t len = sizeof(tv);
	int lfd = sock_unix_listen("svc", 8, 0600);

	ATF_REQUIRE(lfd >= 0);
	attr_clnt_init(&c, "svc", 2500, reader());
	ATF_REQUIRE(attr_clnt_connect(&c, &why));
	ATF_REQUIRE(c.fd >= 0);
	/* blocking, with the timeout on each receive (and send) */
	ATF_REQUIRE(getsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0);
	ATF_CHECK_EQ(tv.tv_sec, 2);
	ATF_CHECK_EQ(tv.tv_usec, 500000);
	attr_clnt_close(&c);
	ATF_CHECK_EQ(c.fd, -1);
	attr_clnt_close(&c);		/* twice is harmless */
	ATF_CHECK(attr_clnt_usable(&c));
	attr_clnt_release(&c);
	close(lfd);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(down);
ATF_TC_BODY(down, tc)
{
	attr_clnt_t c;
	str_t why = STR_INIT;
	int lfd = sock_unix_listen("svc", 8, 0600);

	ATF_REQUIRE(lfd >= 0);
	attr_clnt_init(&c, "svc", 1000, reader());
	ATF_REQUIRE(attr_clnt_connect(&c, &why));
	attr_clnt_down(&c, 60000);
	ATF_CHECK_EQ(c.fd, -1);		/* closed */
	ATF_CHECK(!attr_clnt_usable(&c));
	ATF_CHECK(c.down_until >= event_now_ms() + 59000);
	/* once the time has passed it is tried again */
	attr_clnt_down(&c, 0);
	ATF_CHECK(attr_clnt_usable(&c));
	attr_clnt_release(&c);
	close(lfd);
	str_release(&why);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, no_service);
	ATF_TP_ADD_TC(tp, connect_and_close);
	ATF_TP_ADD_TC(tp, down);
	return atf_no_error();
}
