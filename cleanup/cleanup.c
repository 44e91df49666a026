/* cleanup(8): the only way into the queue.  A SERVER_SINGLE daemon on a
 * UNIX socket; each connection carries transactions of the cleanup
 * protocol (doc/protocol-cleanup.md).  The work is in libcleanup.a:
 * cleanup_session.c (protocol), cleanup_msg.c (one message),
 * cleanup_addr.c (rewriting), cleanup_hdr.c (headers), cleanup_cfg.c. */
#include "cleanup.h"
#include "log.h"
#include "server.h"
#include "stream.h"

static cleanup_cfg_t cfg;

/* Tables may live outside a chroot jail: open them before it. */
static void pre_jail(void *ctx)
{
	str_t err = STR_INIT;

	(void)ctx;
	if (cleanup_cfg_load(&cfg, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	/* The daemon is in queue_directory (its root, once chrooted). */
	queue_layout_free(&cfg.ql);
	if (queue_layout_here(&cfg.ql, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	str_release(&err);
}

/* petrel check: what pre_jail would refuse. */
static int check(void *ctx, str_t *err)
{
	(void)ctx;
	return cleanup_cfg_load(&cfg, err) < 0 ? -1 : 0;
}

static void serve(stream_t *client, void *ctx)
{
	(void)ctx;
	cleanup_session(&cfg, stream_fd(client));
}

int main(int argc, char **argv)
{
	server_spec_t spec = {
		.model = SERVER_SINGLE,
		.pre_jail = pre_jail,
		.serve = serve,
		.check = check,
	};

	server_main(argc, argv, &spec);
}
