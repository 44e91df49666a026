/* The daemon skeleton: everything a Petrel daemon started by master(8)
 * shares, written once.  doc/master.md describes the contract with master
 * (descriptors, arguments, environment, status messages, signals).
 *
 * A daemon's main() fills a server_spec_t and calls server_main(), which
 * never returns.  Start-up order:
 *
 *   1. arguments: -c config_dir, -D (debugger hook), -n service, -o
 *      name=value (master.cf overrides), -s count (listening descriptors
 *      from master), -t type, -u (unprivileged), -j (chroot), -v;
 *      the first non-option argument and the rest go to the daemon
 *      (server_argc()/server_argv());
 *   2. main.cf, then the -o overrides; logging (maillog_file or syslog);
 *   3. -D: run debugger_command;
 *   4. chdir(queue_directory); spec->pre_jail (open what cannot be opened
 *      after the chroot or without privileges);
 *   5. chroot(queue_directory) if -j, and as root only;
 *   6. as root with -u: setgroups/setgid/setuid to mail_owner, verified
 *      (the process never continues as root);
 *   7. spec->post_jail; then serve in one of three models:
 *
 * SERVER_SINGLE   one client at a time: spec->serve gets a stream on an
 *                 accepted connection (for a "pass" service: on the
 *                 descriptor passed over it) and returns when done; the
 *                 skeleton closes it.
 * SERVER_MULTI    event driven: spec->connect gets each new client
 *                 descriptor (non-blocking); the daemon registers it with
 *                 server_loop() and calls server_disconnect() when done.
 * SERVER_TRIGGER  spec->trigger gets the bytes of each trigger (a fifo
 *                 write, a short UNIX/TCP connection, a datagram).
 *
 * Recycling: a daemon exits after max_use requests (connections or
 * triggers) or max_idle seconds without one, unless spec->flags has
 * SERVER_F_UNLIMITED (qmgr).  A watchdog (daemon_timeout) kills a daemon
 * stuck in one request.  SIGHUP makes a daemon retire: it stops taking
 * new work, finishes what it is doing and exits (master then starts a
 * fresh one with the new configuration).  SIGTERM (petrel stop), or
 * master's death, makes it stop: it retires, and server_stopping() tells
 * the daemon to end what it serves at the next boundary (smtpd: after
 * the current mail transaction, with 421); master's status pipe and the
 * signals are watched by the event loop and by every stream wait
 * (stream_watch_add), so a daemon busy with a client notices at once.
 * SIGKILL (petrel abort, or stop_drain_timeout passed) ends it at once.
 *
 * Check mode (-C, run by petrel check for every master.cf service): the
 * configuration and the -o settings are loaded, spec->check (if any)
 * validates what the daemon would refuse at start-up, and the process
 * exits 0 or 1 (messages on standard error) without serving. */
#ifndef PETREL_SERVER_H
#define PETREL_SERVER_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "event.h"
#include "log.h"
#include "str.h"
#include "stream.h"

/* The descriptors master gives a child. */
#define SERVER_STATUS_FD	3	/* write end of the status pipe */
#define SERVER_LISTEN_FD	4	/* first listening descriptor */
#define SERVER_LISTEN_MAX	64	/* most listening descriptors */

/* Status messages, child -> master: a struct server_status written in one
 * write() (atomic on a pipe). */
enum {
	SERVER_STAT_AVAIL = 1,	/* ready for a client */
	SERVER_STAT_BUSY = 2,	/* serving, or no longer taking clients */
};
struct server_status {
	int32_t pid;
	int32_t status;
};

/* Trigger requests: single bytes written to a trigger service. */
#define TRIGGER_WAKEUP		'W'	/* master's periodic wakeup */
#define TRIGGER_SCAN_INCOMING	'I'	/* new mail in incoming/ */
#define TRIGGER_SCAN_DEFERRED	'D'	/* scan deferred/ now */
#define TRIGGER_SCAN_ALL	'A'	/* scan every queue now */
#define TRIGGER_FLUSH		'F'	/* forget dead destinations */
/* What "petrel flush" sends to qmgr. */
#define TRIGGER_FLUSH_REQUEST	"FA"

enum server_model {
	SERVER_SINGLE,
	SERVER_MULTI,
	SERVER_TRIGGER,
};

enum {
	SERVER_F_UNLIMITED = 1,	/* no max_use / max_idle recycling */
};

typedef struct server_spec {
	enum server_model model;
	int flags;
	void *ctx;		/* passed to every callback */
	void (*pre_jail)(void *ctx);
	void (*post_jail)(void *ctx);
	void (*serve)(stream_t *client, void *ctx);		/* SINGLE */
	void (*connect)(int fd, void *ctx);			/* MULTI */
	void (*trigger)(const char *buf, size_t len, void *ctx); /* TRIGGER */
	void (*pre_exit)(void *ctx);	/* before a voluntary exit */
	/* -C: validate the configuration as start-up would, without opening
	 * anything for service; -1 with a message in err.  A message that
	 * starts with "parameter_name:" gets that parameter's file:line. */
	int (*check)(void *ctx, str_t *err);
} server_spec_t;

__attribute__((noreturn))
void server_main(int argc, char **argv, const server_spec_t *spec);

/* What the daemon was started as. */
const char *server_service_name(void);	/* master.cf service column */
const char *server_service_type(void);	/* "unix", "inet", ... */
const char *server_program_name(void);	/* basename of argv[0] */
int server_argc(void);
/* True when the process chroots into queue_directory (-j as root), from
 * spec->pre_jail on: what it needs from outside must be opened then. */
bool server_jailed(void);
/* After the chroot (spec->post_jail on): true when the C library will
 * find path (as it names it, "/etc/passwd") in the jail, or when the
 * process is not chrooted.  When not, logs once that it is missing, what
 * for, and how to add it (chroot_files, petrel reload). */
bool server_jail_has(const char *path, const char *needed_for);
char **server_argv(void);	/* the daemon's own arguments */
/* The event loop (MULTI and TRIGGER daemons add descriptors and timers;
 * valid from post_jail on). */
event_loop_t *server_loop(void);
/* MULTI: a client is done; removes fd from the loop and closes it. */
void server_disconnect(int fd);
/* Requests served so far. */
unsigned long server_use_count(void);
/* True once the daemon is stopping (SIGTERM from master, or master is
 * gone): finish the current transaction, take no new one.  The flag can
 * be given to stream_set_cancel() so that a wait for a client's next
 * command ends at once. */
bool server_stopping(void);
const volatile sig_atomic_t *server_stop_flag(void);
/* Re-arms the watchdog (a request that legitimately takes long). */
void server_watchdog_pet(void);

/* Logs each line of text as its own message (error lists). */
void log_lines(enum log_level lvl, const char *text);

/* Wakes a trigger service (qmgr, pickup) without ever waiting for it:
 * one byte to the endpoint at path (relative to the current directory
 * or absolute), a UNIX datagram socket (one sendto(); the shipped
 * master.cf), a UNIX stream socket (a non-blocking connect) or a fifo.
 * A wake-up that finds the service's queue full is dropped: wake-ups
 * are pending there, and the service scans its queue when it reads
 * them.  Returns 0 (delivered or pending), or -1 with errno: ENOENT (no
 * endpoint), ECONNREFUSED or ENXIO (nobody there). */
int trigger_wakeup(const char *path, char req);

/* Sends trigger bytes that must arrive (a flush request) to a local
 * service endpoint: a fifo, a UNIX stream socket (connect, write,
 * close) or a UNIX datagram socket, waiting at most timeout_ms for room.
 * Returns 0, or -1 with errno (ENOENT: no endpoint; ECONNREFUSED or
 * ENXIO: nobody listening; ETIMEDOUT). */
int trigger_send(const char *path, const char *buf, size_t len, int timeout_ms);

#endif
