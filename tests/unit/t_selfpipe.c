/* libutil/selfpipe: a caught signal sets its flag and writes its number
 * into the pipe; flags and bytes are consumed separately. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include "selfpipe.h"

static bool readable(void)
{
	struct pollfd p = { .fd = selfpipe_fd(), .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

ATF_TC_WITHOUT_HEAD(open_and_flags);
ATF_TC_BODY(open_and_flags, tc)
{
	int fd;

	ATF_CHECK_EQ(selfpipe_fd(), -1);
	ATF_REQUIRE_EQ(selfpipe_open(), 0);
	fd = selfpipe_fd();
	ATF_REQUIRE(fd >= 0);
	ATF_CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
	ATF_CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* Once per process. */
	ATF_CHECK_EQ(selfpipe_open(), 0);
	ATF_CHECK_EQ(selfpipe_fd(), fd);
	/* Nothing caught yet. */
	ATF_CHECK(!readable());
	ATF_CHECK_EQ(selfpipe_read(), 0);
	ATF_CHECK(!selfpipe_raised(SIGUSR1));
	/* Out of range. */
	errno = 0;
	ATF_CHECK_EQ(selfpipe_catch(0, 0), -1);
	ATF_CHECK_EQ(errno, EINVAL);
	ATF_CHECK_EQ(selfpipe_catch(-1, 0), -1);
	ATF_CHECK_EQ(selfpipe_catch(NSIG, 0), -1);
	ATF_CHECK(!selfpipe_raised(0) && !selfpipe_raised(NSIG));
	ATF_CHECK(!selfpipe_take(-1));
}

ATF_TC_WITHOUT_HEAD(arrival_order);
ATF_TC_BODY(arrival_order, tc)
{
	ATF_REQUIRE_EQ(selfpipe_open(), 0);
	ATF_REQUIRE_EQ(selfpipe_catch(SIGUSR1, SA_RESTART), 0);
	ATF_REQUIRE_EQ(selfpipe_catch(SIGUSR2, SA_RESTART), 0);
	raise(SIGUSR2);
	raise(SIGUSR1);
	raise(SIGUSR2);
	ATF_CHECK(readable());
	ATF_CHECK_EQ(selfpipe_read(), SIGUSR2);
	ATF_CHECK_EQ(selfpipe_read(), SIGUSR1);
	ATF_CHECK_EQ(selfpipe_read(), SIGUSR2);
	ATF_CHECK_EQ(selfpipe_read(), 0);
	ATF_CHECK(!readable());
	/* Reading leaves the flags. */
	ATF_CHECK(selfpipe_raised(SIGUSR1) && selfpipe_raised(SIGUSR2));
}

ATF_TC_WITHOUT_HEAD(flags);
ATF_TC_BODY(flags, tc)
{
	ATF_REQUIRE_EQ(selfpipe_open(), 0);
	ATF_REQUIRE_EQ(selfpipe_catch(SIGUSR1, 0), 0);
	ATF_REQUIRE_EQ(selfpipe_catch(SIGHUP, 0), 0);
	raise(SIGUSR1);
	raise(SIGUSR1);
	ATF_CHECK(readable());
	selfpipe_drain();
	ATF_CHECK(!readable());
	/* Draining leaves the flags; two deliveries are one flag. */
	ATF_CHECK(selfpipe_raised(SIGUSR1));
	ATF_CHECK(!selfpipe_raised(SIGHUP));
	ATF_CHECK(selfpipe_take(SIGUSR1));
	ATF_CHECK(!selfpipe_take(SIGUSR1));
	ATF_CHECK(!selfpipe_raised(SIGUSR1));
	/* The handler keeps errno. */
	errno = ENOSPC;
	raise(SIGHUP);
	ATF_CHECK_EQ(errno, ENOSPC);
	ATF_CHECK(selfpipe_take(SIGHUP));
	ATF_CHECK_EQ(selfpipe_read(), SIGHUP);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, open_and_flags);
	ATF_TP_ADD_TC(tp, arrival_order);
	ATF_TP_ADD_TC(tp, flags);
	return atf_no_error();
}
