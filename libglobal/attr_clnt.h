/* The kept connection of a client library to a local service that
 * speaks the attribute protocol (anvil_clnt in anvil.c, scache_clnt in
 * scache.c): what the two share, below their own requests and replies.
 *
 *   attr_clnt_init(&c, path, timeout_ms, reply_reader, backoff_ms, warn)
 *   if (!attr_clnt_usable(&c)) fail at once
 *   if (c.fd < 0 && !attr_clnt_connect(&c)) fail
 *   send c.buf on c.fd, read the reply with c.r
 *   on any failure: attr_clnt_fail(&c, "what went wrong: %s", ...)
 *   attr_clnt_release(&c)
 *
 * The socket is connected on first use and kept between requests.  It
 * is blocking, and each send and receive on it waits at most timeout_ms
 * (sock_set_blocking_timeout), so a request is one send and its reply
 * one receive.  After a failure the connection is closed and the
 * service left alone for backoff_ms: every caller then fails at once
 * rather than wait on a service that is gone.  What a failure means,
 * and the warning that says so, are the owner's (warn).  One request at
 * a time; not for use from more than one thread. */
#ifndef PETREL_ATTR_CLNT_H
#define PETREL_ATTR_CLNT_H
#include <stdbool.h>
#include <stdint.h>
#include "attr.h"
#include "str.h"

typedef struct attr_clnt attr_clnt_t;
/* Says that c failed and why ("connect: timed out", ...); c is the
 * first member of the owner's client, which may keep state of its own
 * (how often it warns). */
typedef void (*attr_clnt_warn_fn)(attr_clnt_t *c, const char *why);

struct attr_clnt {
	char *path;		/* the service's socket */
	int fd;			/* -1: not connected */
	int timeout_ms;		/* each send and receive, > 0 */
	int backoff_ms;		/* how long a failed service is left alone */
	int64_t down_until;	/* left alone until then (event_now_ms());
				 * 0: never failed */
	attr_clnt_warn_fn warn;
	attr_reader_t *r;	/* the owner's reply reader; owned */
	str_t buf;		/* the owner's request to send */
};

/* Not connected, usable.  timeout_ms <= 0 counts as 1.  Takes r. */
void attr_clnt_init(attr_clnt_t *c, const char *path, int timeout_ms,
    attr_reader_t *r, int backoff_ms, attr_clnt_warn_fn warn);
/* Closes and frees what init made (and r). */
void attr_clnt_release(attr_clnt_t *c);
/* Closes the connection (if any) and resets the reply reader, without
 * a failure (a connection the owner drops). */
void attr_clnt_close(attr_clnt_t *c);
/* false while the service is left alone after a failure. */
bool attr_clnt_usable(const attr_clnt_t *c);
/* A failure: closes, leaves the service alone for backoff_ms, and
 * calls warn with the reason formatted from fmt. */
void attr_clnt_fail(attr_clnt_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Connects to path with the timeouts set, the reply reader reset:
 * true; or false after attr_clnt_fail() with "connect: timed out",
 * "connect: " strerror, or "socket options: " strerror. */
bool attr_clnt_connect(attr_clnt_t *c);

#endif
