/* The self-pipe. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "selfpipe.h"

static int pipe_fd[2] = { -1, -1 };
static volatile sig_atomic_t caught[NSIG];

static void selfpipe_handler(int sig)
{
	int saved = errno;
	unsigned char c = (unsigned char)sig;

	if (sig > 0 && sig < NSIG)
		caught[sig] = 1;
	if (pipe_fd[1] >= 0 && write(pipe_fd[1], &c, 1) < 0) {
		/* full: a wake-up is pending anyway */
	}
	errno = saved;
}

static int set_flags(int fd)
{
	int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);

	if (fl < 0 || fdfl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0
	    || fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC) < 0)
		return -1;
	return 0;
}

int selfpipe_open(void)
{
	int fd[2];

	if (pipe_fd[0] >= 0)
		return 0;
	if (pipe(fd) < 0)
		return -1;
	if (set_flags(fd[0]) < 0 || set_flags(fd[1]) < 0) {
		int saved = errno;
		close(fd[0]);
		close(fd[1]);
		errno = saved;
		return -1;
	}
	pipe_fd[0] = fd[0];
	pipe_fd[1] = fd[1];
	return 0;
}

int selfpipe_catch(int sig, int sa_flags)
{
	struct sigaction sa;

	if (sig <= 0 || sig >= NSIG) {
		errno = EINVAL;
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = sa_flags;
	sa.sa_handler = selfpipe_handler;
	return sigaction(sig, &sa, NULL);
}

int selfpipe_fd(void)
{
	return pipe_fd[0];
}

bool selfpipe_raised(int sig)
{
	return sig > 0 && sig < NSIG && caught[sig] != 0;
}

bool selfpipe_take(int sig)
{
	if (!selfpipe_raised(sig))
		return false;
	caught[sig] = 0;
	return true;
}

void selfpipe_drain(void)
{
	char buf[64];

	if (pipe_fd[0] < 0)
		return;
	while (read(pipe_fd[0], buf, sizeof(buf)) > 0)
		;
}

int selfpipe_read(void)
{
	unsigned char c;

	if (pipe_fd[0] < 0 || read(pipe_fd[0], &c, 1) != 1)
		return 0;
	return c;
}
