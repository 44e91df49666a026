/* Sockets: UNIX-domain and TCP listen/connect, descriptor flags, passing
 * descriptors, and numeric address parsing and formatting.
 *
 * Only numeric addresses are handled here ("127.0.0.1", "[::1]"); host
 * names belong to the DNS code.  Address specs are "host:port" and
 * "[v6addr]:port" (an IPv6 address always goes in brackets, which also
 * keeps its colons apart from the port's) and, for listening, "*:port" or
 * ":port" for every address.
 *
 * Every socket made here is close-on-exec.  Listening sockets are
 * blocking; sockets returned by the connect functions are non-blocking
 * (give them to a stream with timeouts, or clear it with
 * sock_set_nonblock()).
 *
 * Conventions: functions returning a descriptor return -1 with errno on
 * failure; the connect functions return 0 or the errno value itself, so a
 * caller can tell ECONNREFUSED from ETIMEDOUT from the rest at a glance. */
#ifndef PETREL_SOCK_H
#define PETREL_SOCK_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* Room for any text sock_addr_str()/sock_addr_port_str() produce for IP
 * addresses, "[" addr "%" scope "]:" port and the NUL. */
#define SOCK_ADDR_STRLEN 96
/* Most sockets one sock_tcp_listen() spec opens ("*": IPv4 and IPv6). */
#define SOCK_LISTEN_MAX 2

/* UNIX domain.  Listen: binds path with permissions mode (exactly, not
 * subject to the umask).  An existing socket file nobody listens on is
 * removed first; a live socket gives EADDRINUSE and a file that is not a
 * socket EEXIST (it is left alone).  ENAMETOOLONG if path does not fit. */
int sock_unix_listen(const char *path, int backlog, mode_t mode);
/* A close-on-exec socket, non-blocking if asked, in one system call
 * where the system allows (SOCK_CLOEXEC, SOCK_NONBLOCK). */
int sock_new(int domain, int type, bool nonblock);
/* The address of the socket at path (relative or absolute): 0, or -1
 * with errno EINVAL (empty) or ENAMETOOLONG. */
int sock_unix_addr(const char *path, struct sockaddr_un *sun, socklen_t *len);
/* Connect, waiting up to timeout_ms (0 = no limit; negative: not at all,
 * EAGAIN at once) if the listener's queue is full.  Returns 0 with *fdp
 * set, or an errno value: ENOENT (no such socket), ECONNREFUSED (nobody
 * listening), ETIMEDOUT, EAGAIN, ... */
int sock_unix_connect(const char *path, int timeout_ms, int *fdp);

/* TCP listen on a spec; fills fds and returns how many sockets were opened
 * (2 only for a wildcard host on a system with IPv6), or -1 with errno
 * (EINVAL for a bad spec).  SO_REUSEADDR is set, and IPV6_V6ONLY on IPv6
 * sockets, so IPv4 and IPv6 listeners never overlap. */
int sock_tcp_listen(const char *spec, int backlog, int fds[SOCK_LISTEN_MAX]);
/* Listen on n addresses; when their port is 0 they all get the port the
 * first one was given.  Returns n with fds filled, or -1 with errno (and
 * nothing left open). */
int sock_tcp_listen_addrs(const struct sockaddr_storage *addrs, int n,
    int backlog, int *fds);
/* The local port of a bound IPv4/IPv6 socket, or -1 with errno. */
int sock_local_port(int fd);
/* accept() giving a close-on-exec descriptor; peer and len may be NULL.
 * Retries on EINTR and on a connection aborted before it was accepted. */
int sock_accept(int lfd, struct sockaddr_storage *peer, socklen_t *len);
/* sock_accept() of a non-blocking connection, in one system call where
 * accept4() exists (a daemon's accept path: no fcntl() per client). */
int sock_accept_nonblock(int lfd);
/* The user ID of the process at the other end of a connected UNIX-domain
 * socket, as the kernel recorded it at connect time (SO_PEERCRED, or
 * getpeereid() where that is missing): what a daemon checks before it
 * serves a local client.  0 with *uid set, or -1 with errno (ENOTSOCK
 * for a descriptor that is no socket, EBADF, ...).  Only meaningful on a
 * connected socket. */
int sock_peer_uid(int fd, uid_t *uid);

/* Non-blocking TCP connect with a timeout (0 = no limit).  Returns 0 with
 * *fdp set, or an errno value: ECONNREFUSED, ETIMEDOUT, ENETUNREACH, ...
 * (EINVAL for a bad spec or address). */
int sock_tcp_connect(const struct sockaddr *sa, socklen_t len, int timeout_ms,
    int *fdp);
int sock_tcp_connect_str(const char *spec, int timeout_ms, int *fdp);

/* Descriptor flags: 0, or -1 with errno. */
int sock_set_nonblock(int fd, bool on);
/* Blocking, with every send and receive waiting at most timeout_ms (> 0;
 * then EAGAIN): a client's request is one send and its reply one
 * receive, however slow the other side.  0, or -1 with errno. */
int sock_set_blocking_timeout(int fd, int timeout_ms);
int sock_set_cloexec(int fd, bool on);

/* Descriptor passing over a UNIX stream socket (one byte of data carries
 * the SCM_RIGHTS message).  send: 0 or -1 with errno.  recv: the new
 * descriptor (close-on-exec), or -1 with errno: ECONNRESET if the peer
 * closed, EBADMSG if the message carried no descriptor or more than one
 * (any received are closed), EAGAIN on a non-blocking socket. */
int sock_send_fd(int sock, int fd);
int sock_recv_fd(int sock);
/* A message and a descriptor in one sendmsg(): fd (-1: none) rides on the
 * first byte of buf.  flags are sendmsg() flags (MSG_DONTWAIT); SIGPIPE is
 * never raised.  Returns the bytes sent (possibly fewer than len: the
 * descriptor went with the first of them), or -1 with errno. */
ssize_t sock_send_with_fd(int sock, const void *buf, size_t len, int fd,
    int flags);
/* recvmsg() of up to len bytes, keeping the descriptors that came with
 * them (close-on-exec): up to maxfds go to fds with *nfds set; more are
 * closed and *extra is set to true (so is it when the kernel truncated
 * the control data).  Returns the bytes read (0: the peer closed), or -1
 * with errno (EAGAIN on a non-blocking socket or after SO_RCVTIMEO). */
ssize_t sock_recv_with_fds(int sock, void *buf, size_t len, int *fds,
    int maxfds, int *nfds, bool *extra, int flags);

/* Splits a spec into host (without brackets) and port.  A spec without a
 * port takes default_port, or is an error if default_port is negative.
 * Returns 0, or -1 with errno EINVAL (syntax, port not a number from 0 to
 * 65535, several colons without brackets) or ENAMETOOLONG (host does not
 * fit in hsize). */
int sock_split_hostport(const char *spec, int default_port, char *host,
    size_t hsize, unsigned *port);
/* A numeric spec to an address (AF_INET or AF_INET6, IPv6 with an optional
 * "%scope"); *lenp gets its length if lenp is not NULL.  0, or -1 with
 * errno EINVAL. */
int sock_addr_parse(const char *spec, int default_port,
    struct sockaddr_storage *ss, socklen_t *lenp);
/* Address as text: "192.0.2.1", "2001:db8::1", a UNIX socket's path.
 * sock_addr_port_str adds the port: "192.0.2.1:25", "[2001:db8::1]:25".
 * Return false (with "?" in buf if it fits) for an unknown family or if
 * the text was cut to fit size. */
bool sock_addr_str(const struct sockaddr *sa, char *buf, size_t size);
bool sock_addr_port_str(const struct sockaddr *sa, char *buf, size_t size);
/* True for a loopback address: 127.0.0.0/8, ::1, or 127.0.0.0/8 mapped
 * into IPv6 (::ffff:127.x.y.z); false for anything else, other families
 * included. */
bool sock_addr_is_loopback(const struct sockaddr *sa);

/* UNIX-domain datagrams and connections driven by an event loop. */

/* A datagram socket bound at path (which must not exist: the caller
 * clears it), its file given permissions mode with chmod (so the
 * umask's bits count until then).  Blocking.  Returns the descriptor, or
 * -1 with errno (ENAMETOOLONG if path does not fit). */
int sock_unix_dgram_listen(const char *path, mode_t mode);
/* A datagram socket connected to the one at path: send() then fails
 * at once with ECONNREFUSED when nobody has it bound any more, and the
 * socket polls writable only when the receiver's queue has room.
 * Returns 0 with *fdp set, or an errno value (ENOENT, ECONNREFUSED,
 * EPROTOTYPE for a stream socket...). */
int sock_unix_dgram_connect(const char *path, int *fdp);
/* One datagram to the socket at path from an unconnected datagram
 * socket fd (sock_new(AF_UNIX, SOCK_DGRAM, ...)), never waiting
 * (MSG_DONTWAIT).  Returns the bytes sent, or -1 with errno: EAGAIN or
 * ENOBUFS when the receiver's queue is full, ECONNREFUSED (nobody bound,
 * or a fifo), EPROTOTYPE (a stream socket), EINVAL/ENAMETOOLONG for a
 * bad path. */
ssize_t sock_unix_sendto(int fd, const char *path, const void *buf,
    size_t len);
/* Starts connecting a non-blocking stream socket to path, for a caller
 * that waits in its own event loop.  Returns 0 with *fdp set (connected
 * at once), EINPROGRESS with *fdp set (wait until the socket is
 * writable, then ask sock_connect_error), or another errno value with
 * nothing open: EAGAIN (the listener's queue is full: try again later),
 * ENOENT, ECONNREFUSED, ENAMETOOLONG... */
int sock_unix_connect_start(const char *path, int *fdp);
/* How a non-blocking connect that has finished (the socket polled
 * writable) ended: 0 connected, or its errno value. */
int sock_connect_error(int fd);

#endif
