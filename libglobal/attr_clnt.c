/* Kept connections of client libraries to local services (attr_clnt.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attr_clnt.h"
#include "event.h"
#include "mem.h"
#include "sock.h"

void attr_clnt_init(attr_clnt_t *c, const char *path, int timeout_ms,
    attr_reader_t *r, int backoff_ms, attr_clnt_warn_fn warn)
{
	memset(c, 0, sizeof(*c));
	c->path = xstrdup(path);
	c->fd = -1;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
	c->backoff_ms = backoff_ms;
	c->warn = warn;
	c->r = r;
	c->buf = (str_t)STR_INIT;
}

void attr_clnt_close(attr_clnt_t *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	attr_reader_reset(c->r);
}

void attr_clnt_release(attr_clnt_t *c)
{
	attr_clnt_close(c);
	attr_reader_free(c->r);
	str_release(&c->buf);
	free(c->path);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

bool attr_clnt_usable(const attr_clnt_t *c)
{
	return c->down_until == 0 || event_now_ms() >= c->down_until;
}

void attr_clnt_fail(attr_clnt_t *c, const char *fmt, ...)
{
	str_t why = STR_INIT;
	va_list ap;

	va_start(ap, fmt);
	str_vcatf(&why, fmt, ap);
	va_end(ap);
	attr_clnt_close(c);
	c->down_until = event_now_ms() + c->backoff_ms;
	c->warn(c, str_cstr(&why));
	str_release(&why);
}

bool attr_clnt_connect(attr_clnt_t *c)
{
	int err;

	err = sock_unix_connect(c->path, c->timeout_ms, &c->fd);
	if (err != 0) {
		c->fd = -1;
		attr_clnt_fail(c, "connect: %s", err == ETIMEDOUT ?
		    "timed out" : strerror(err));
		return false;
	}
	if (sock_set_blocking_timeout(c->fd, c->timeout_ms) < 0) {
		attr_clnt_fail(c, "socket options: %s", strerror(errno));
		return false;
	}
	attr_reader_reset(c->r);
	return true;
}
