/* smtpd(8): the SMTP server.
 *
 *   smtpd ... (from master.cf)   a SERVER_SINGLE daemon: one SMTP session
 *                                per accepted connection
 *   smtpd -S [-c dir] [-v]       stand-alone: one session on standard
 *                                input and output for a local user
 *                                (sendmail -bs runs this)
 *
 * doc/smtpd.md and man/smtpd.8 describe the protocol, the restrictions,
 * the limits and the log lines; smtpd/smtpd.h maps the code. */
#include "config.h"
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "server.h"
#include "smtpd.h"

static smtpd_cfg_t *cfg;
static smtpd_anvil_t *anvil;
static smtpd_dest_t *dest;
static smtpd_sasl_backend_t *sasl;

static void pet(void *ctx)
{
	(void)ctx;
	server_watchdog_pet();
}

/* Before the chroot: certificates and tables may live outside the queue
 * directory. */
static void pre_jail(void *ctx)
{
	str_t err = STR_INIT;

	(void)ctx;
	cfg = smtpd_cfg_load(&err);
	if (cfg == NULL)
		log_fatal("%s", str_cstr(&err));
	dest = smtpd_dest_cleanup(cfg->cleanup_service, (int)cfg->ipc_timeout_ms);
	/* Connected when first needed, from inside the jail: a relative
	 * smtpd_sasl_path is found in the queue directory either way. */
	if (cfg->sasl_enable)
		sasl = smtpd_sasl_dovecot(cfg->sasl_path, cfg->sasl_service,
		    (int)cfg->sasl_timeout_ms);
	str_release(&err);
}

/* In the jail: what the C library will look for there. */
static void post_jail(void *ctx)
{
	(void)ctx;
	const char *users = local_rcpt_user_source(cfg->lrcpt);
	if (users != NULL && !server_jail_has(users, "unix:passwd.byname in "
	    "local_recipient_maps; mail to local users gets 451")) {
		str_t why = STR_INIT;
		str_setf(&why, "%s is missing in the chroot jail", users);
		local_rcpt_passwd_broken(cfg->lrcpt, str_cstr(&why));
		str_release(&why);
	}
	/* anvil's endpoint is relative to the queue directory, in the jail
	 * or not; nothing is opened until the first client. */
	anvil = smtpd_anvil_new(cfg, SMTPD_ANVIL_PATH, server_service_name());
	/* Dovecot's socket is opened later, from inside the jail: an
	 * absolute path names a file in the jail, not the one outside. */
	if (cfg->sasl_enable && server_jailed() && cfg->sasl_path[0] == '/')
		log_warning("smtpd_sasl_path = %s is an absolute path and "
		    "smtpd runs chrooted in the queue directory: the socket is "
		    "looked for inside it; give a path relative to "
		    "queue_directory (private/auth)", cfg->sasl_path);
	if (pconfig_get_bool("smtpd_peername_lookup"))
		(void)server_jail_has("/etc/resolv.conf", "client name lookups "
		    "(smtpd_peername_lookup)");
}

/* petrel check: what pre_jail would refuse (restriction lists, networks,
 * domain lists, the open-relay guard). */
static int check(void *ctx, str_t *err)
{
	smtpd_cfg_t *c;

	(void)ctx;
	if ((c = smtpd_cfg_load(err)) == NULL)
		return -1;
	smtpd_cfg_free(c);
	return 0;
}

static void serve(stream_t *client, void *ctx)
{
	smtpd_session_opts_t opts = { 0 };
	smtpd_peer_t peer;
	stream_t *s;
	int fd;

	(void)ctx;
	/* The session owns its stream (STARTTLS puts a TLS layer on it that
	 * must be shut down and freed with it); the skeleton closes its own
	 * on the same connection afterwards. */
	fd = dup(stream_fd(client));
	if (fd < 0) {
		log_warning("dup: %s", strerror(errno));
		return;
	}
	s = stream_open(fd);
	smtpd_peer_from_fd(cfg, fd, &peer);
	opts.anvil = anvil;
	opts.progress = pet;
	opts.sasl = sasl;
	smtpd_session_run(cfg, s, &peer, dest, &opts);
}

static void pre_exit(void *ctx)
{
	(void)ctx;
	if (dest)
		dest->free(dest);
	smtpd_anvil_free(anvil);
	if (sasl)
		sasl->free(sasl);
	sasl = NULL;
	smtpd_cfg_free(cfg);
	dest = NULL;
	anvil = NULL;
	cfg = NULL;
}

/* ---- Stand-alone mode ------------------------------------------------ */

/* Standard input and output as one stream: reads from 0, writes to 1.
 * "Nothing ready" is EAGAIN so that the stream flushes our replies and
 * waits on descriptor 0 with smtpd_timeout. */
static ssize_t sa_read(void *ctx, int fd, void *buf, size_t len, int *want)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	(void)ctx;
	*want = STREAM_WANT_READ;
	if (poll(&p, 1, 0) == 0) {
		errno = EAGAIN;
		return -1;
	}
	return read(fd, buf, len);
}

static ssize_t sa_write(void *ctx, int fd, const void *buf, size_t len,
    int *want)
{
	(void)ctx;
	(void)fd;
	*want = STREAM_WANT_WRITE;
	return write(1, buf, len);
}

static const stream_io_t sa_io = { sa_read, sa_write };

__attribute__((noreturn))
static void stand_alone(int argc, char **argv)
{
	const char *dir = getenv("MAIL_CONFIG");
	str_t name = STR_INIT, err = STR_INIT;
	smtpd_peer_t peer;
	stream_t *s;
	const char *file;
	int c;

	log_init("smtpd");
	optind = 1;
	while ((c = getopt(argc, argv, "Sc:v")) != -1) {
		switch (c) {
		case 'S':
			break;
		case 'c':
			dir = optarg;
			break;
		case 'v':
			log_verbose++;
			break;
		default:
			fprintf(stderr, "usage: smtpd -S [-c config_dir] [-v]\n");
			exit(64);
		}
	}
	if (dir == NULL || *dir == 0)
		dir = DEF_CONFIG_DIR;
	if (pconfig_load(dir) < 0) {
		log_lines(LOG_LVL_ERROR, pconfig_errors());
		log_fatal("%s/main.cf has errors", dir);
	}
	str_setf(&name, "%s/smtpd", pconfig_get_str("syslog_name"));
	log_init(str_cstr(&name));
	file = pconfig_get_str("maillog_file");
	if (*file) {
		if (log_to_file(file) < 0)
			log_fatal("maillog_file %s: %s", file, strerror(errno));
	} else {
		log_to_syslog();
	}
	/* No STARTTLS on a pipe: do not even load the certificate (the
	 * user may not be allowed to read its key). */
	if (pconfig_override("smtpd_tls_security_level", "none", "smtpd -S",
	    &err) < 0)
		log_fatal("%s", str_cstr(&err));
	cfg = smtpd_cfg_load(&err);
	if (cfg == NULL)
		log_fatal("%s", str_cstr(&err));
	smtpd_peer_stand_alone(&peer);
	dest = smtpd_dest_sendmail(cfg->sendmail_path);
	s = stream_open(0);
	stream_set_io(s, &sa_io, NULL);
	smtpd_session_run(cfg, s, &peer, dest, NULL);
	pre_exit(NULL);
	str_release(&name);
	str_release(&err);
	exit(0);
}

int main(int argc, char **argv)
{
	server_spec_t spec = {
		.model = SERVER_SINGLE,
		.pre_jail = pre_jail,
		.post_jail = post_jail,
		.serve = serve,
		.pre_exit = pre_exit,
		.check = check,
	};

	/* -S selects the stand-alone mode (master never passes it). */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-S") == 0)
			stand_alone(argc, argv);
	server_main(argc, argv, &spec);
}
