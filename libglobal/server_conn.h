/* One client of a SERVER_MULTI daemon that speaks the attribute protocol
 * (anvil, scache): what comes is read as it comes, each complete request
 * is handed to the daemon, a request begun must end within the
 * protocol's timeout, a client that breaks the protocol is named in a
 * warning and closed (the daemon lives on), and a reply is sent in one
 * go without waiting for a client that does not take it.
 *
 * The daemon's own per-client structure holds a server_conn_t and gives
 * the callbacks below; it keeps its list of clients and what each holds. */
#ifndef PETREL_SERVER_CONN_H
#define PETREL_SERVER_CONN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "attr.h"
#include "event.h"
#include "str.h"

/* Most bytes taken from a client at once. */
#define SERVER_CONN_READ_MAX	8192

/* What a recv callback returns when it closed the client itself. */
#define SERVER_CONN_CLOSED	(-2)

typedef struct server_conn server_conn_t;

typedef struct server_conn_ops {
	/* One request; false when the client is gone (closed). */
	bool (*request)(server_conn_t *c, const attr_msg_t *m);
	/* Gives back what the client holds, server_conn_stop()s it and frees
	 * the daemon's structure. */
	void (*close)(server_conn_t *c);
	/* Reads without waiting, as recv(2) does, or SERVER_CONN_CLOSED.
	 * NULL: recv(2) itself (scache's takes descriptors too). */
	ssize_t (*recv)(server_conn_t *c, char *buf, size_t size);
} server_conn_ops_t;

struct server_conn {
	int fd;
	unsigned long id;	/* for log lines: "client ID: ..." */
	attr_reader_t *r;	/* requests */
	int timeout_ms;		/* for a request begun */
	size_t read_max;	/* bytes read at once, at most READ_MAX */
	const server_conn_ops_t *ops;
	event_timer_t timer;
};

/* Sets c up for the new client fd with reader r (taken over) and starts
 * reading.  false (after a warning; r freed, fd disconnected) when fd
 * cannot be watched: the caller then frees its structure. */
bool server_conn_start(server_conn_t *c, int fd, unsigned long id,
    attr_reader_t *r, int timeout_ms, size_t read_max,
    const server_conn_ops_t *ops);
/* Stops reading, frees the reader, disconnects (server_disconnect). */
void server_conn_stop(server_conn_t *c);

/* A client that broke the protocol: "client ID: malformed request: ...",
 * then ops->close. */
void server_conn_bad(server_conn_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sends out in one go, with descriptor fd (-1: none) on its first byte.
 * false when the client did not take it all (it is closed then). */
bool server_conn_reply(server_conn_t *c, const str_t *out, int fd);

/* The exit of a daemon that holds state and so is not recycled
 * (SERVER_F_UNLIMITED: anvil's counts, scache's sessions): once it has
 * had no client and held nothing for max_idle, it says so (debug),
 * stops and exits. */
typedef struct server_idle {
	event_timer_t timer;
	int64_t max_idle_ms;	/* 0: never */
	bool (*busy)(void);	/* a client, or something held */
	void (*stop)(void);	/* before the exit */
} server_idle_t;

void server_idle_init(server_idle_t *idle, int64_t max_idle_ms,
    bool (*busy)(void), void (*stop)(void));
/* After anything that may change busy(): the wait starts (when not
 * already waiting) or is called off. */
void server_idle_check(server_idle_t *idle);
void server_idle_cancel(server_idle_t *idle);

#endif
