/* master's internals: services (endpoints and their processes) and the
 * children it supervises.  See doc/master.md. */
#ifndef PETREL_MASTER_H
#define PETREL_MASTER_H
#include <stdbool.h>
#include <sys/types.h>
#include "event.h"
#include "list.h"
#include "mastercf.h"
#include "server.h"
#include "str.h"

typedef struct master_service {
	list_node_t node;		/* in master.services */
	const mastercf_entry_t *ent;	/* belongs to master.mcf */
	char *key;			/* "service/type" */
	char *label;			/* for log lines: "service/type" */
	char *endpoint;			/* identity of the endpoint, for reload */
	char *path;			/* local types: path under queue_directory */
	char *command;			/* program to run (absolute) */
	int nfds;
	int *fds;			/* listening descriptors */
	int status_rd, status_wr;	/* the status pipe */
	struct server_status sbuf;	/* partial status message */
	size_t slen;
	int maxproc;			/* 0 = no limit */
	int total;			/* children counted against maxproc */
	int avail;			/* of those, ready for a client */
	bool listening;			/* fds watched for clients */
	bool throttled;
	bool used;			/* a child has taken a request */
	bool endpoint_changed;		/* reload: to be replaced */
	event_timer_t throttle_timer;
	event_timer_t wakeup_timer;
	list_t children;
} master_service_t;

typedef struct master_child {
	list_node_t node;	/* service's children, or master.detached */
	pid_t pid;
	master_service_t *svc;	/* NULL once detached (service removed) */
	char *label;		/* service label, kept after detaching */
	bool avail;		/* counted in svc->avail */
	bool ready;		/* sent a status message: start-up done */
	bool retiring;		/* told to finish and exit */
	int signalled;		/* signal we sent, expected as its end */
} master_child_t;

struct master_state {
	const char *config_dir;		/* absolute */
	char *queue_dir;
	char **envp;			/* children's environment */
	mastercf_t *mcf;
	str_t maincf_text;		/* main.cf as last loaded */
	list_t services;
	list_t detached;		/* children of removed services */
	event_loop_t *loop;
	bool private_instance;		/* not root */
	bool stopping;
	bool foreground;		/* -d */
	int children;			/* all children, detached too */
	event_timer_t kill_timer;	/* stop: SIGKILL stragglers */
	int log_rd, log_wr;		/* children's log lines (datagrams) */
};

extern struct master_state master;

/* master_service.c */
/* Builds services from master.mcf; at start-up any failure is fatal
 * (fatal true), on reload the service is skipped with a log line. */
int master_services_start(bool fatal);
/* SIGHUP: re-reads main.cf and master.cf and applies the difference. */
void master_reload(void);
void master_service_free(master_service_t *s);
/* Closes the service's listening descriptors (stop); the paths stay. */
void master_close_endpoint(master_service_t *s);

/* master_spawn.c */
void master_update_listen(master_service_t *s);
void master_status_event(int fd, int events, void *ctx);
void master_reap(void);
void master_throttle_expired(void *ctx);
void master_wakeup_event(void *ctx);
void master_wakeup_arm(master_service_t *s, bool now);
/* Tells the children to finish and exit (SIGHUP); with detach they
 * stop counting for their service (it is going away). */
void master_retire_children(master_service_t *s, bool detach);
/* SIGTERM (graceful: children finish their transaction, at most
 * stop_drain_timeout) or SIGQUIT (abort: killed at once); exits once
 * every child is gone. */
void master_stop(bool abort_now);

/* master_log.c: the log relay.  With maillog_file, children send each
 * line as a datagram on their fd 2; master writes them into the one
 * descriptor of the file, which it alone reopens (SIGUSR1, reload). */
void master_log_init(void);
/* Writes out whatever children have sent (also before master exits). */
void master_log_drain(void);
/* Opens maillog_file again: petrel logrotate (SIGUSR1) and reload. */
void master_log_reopen(const char *why);

/* Environment handed to children (built once). */
char **master_child_env(const char *config_dir);

#endif
