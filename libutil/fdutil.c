#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "fdutil.h"

void fd_sane_stdio(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		int n = open("/dev/null", O_RDWR);
		if (n < 0)
			_exit(1);
		if (n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
}

void fd_close_from(int first)
{
#if defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__) || \
    defined(__DragonFly__)
	closefrom(first);
#else
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
		return;
#endif
	long max = sysconf(_SC_OPEN_MAX);
	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = first; fd < max; fd++)
		close(fd);
#endif
}
