/* The kept connection of a client library to a local service that
 * speaks the attribute protocol (anvil_clnt in anvil.c, scache_clnt in
 * scache.c): what the two share, below their own requests and replies.
 *
 *   attr_clnt_init(&c, path, timeout_ms, reply_reader)
 *   if (!attr_clnt_usable(&c)) fail at once
 *   if (c.fd < 0 && !attr_clnt_connect(&c, &why)) owner's failure
 *   send c.buf on c.fd, read the reply with c.r
 *   on any failure: attr_clnt_down(&c, backoff_ms), then the owner warns
 *   attr_clnt_release(&c)
 *
 * The socket is connected on first use and kept between requests.  It
 * is blocking, and each send and receive on it waits at most timeout_ms
 * (sock_set_blocking_timeout), so a request is one send and its reply
 * one receive.  After a failure the connection is closed and the
 * service left alone for a while: every caller then fails at once
 * rather than wait on a service that is gone.  What a failure means,
 * and the warning that says so, are the owner's.  One request at a
 * time; not for use from more than one thread. */
#ifndef PETREL_ATTR_CLNT_H
#define PETREL_ATTR_CLNT_H
#include <stdbool.h>
#include <stdint.h>
#include "attr.h"
#include "str.h"

typedef struct attr_clnt {
	char *path;		/* the service's socket */
	int fd;			/* -1: not connected */
	int timeout_ms;		/* each send and receive, > 0 */
	int64_t down_until;	/* left alone until then (event_now_ms());
				 * 0: never failed */
	attr_reader_t *r;	/* the owner's reply reader; owned */
	str_t buf;		/* the owner's request to send */
} attr_clnt_t;

/* Not connected, usable.  timeout_ms <= 0 counts as 1.  Takes r. */
void attr_clnt_init(attr_clnt_t *c, const char *path, int timeout_ms,
    attr_reader_t *r);
/* Closes and frees what init made (and r); c can be inited again. */
void attr_clnt_release(attr_clnt_t *c);
/* Closes the connection (if any) and resets the reply reader. */
void attr_clnt_close(attr_clnt_t *c);
/* false while the service is left alone after a failure. */
bool attr_clnt_usable(const attr_clnt_t *c);
/* A failure: closes, and leaves the service alone for for_ms. */
void attr_clnt_down(attr_clnt_t *c, int64_t for_ms);
/* Connects to path with the timeouts set, the reply reader reset.
 * true; or false, not connected, with why set: "connect: timed out",
 * "connect: " strerror, or "socket options: " strerror. */
bool attr_clnt_connect(attr_clnt_t *c, str_t *why);

#endif
