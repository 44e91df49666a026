/* qmgr: the queue manager daemon.  A trigger server under master that
 * never recycles: it owns the active and deferred queues, feeds the
 * scheduler core (sched.h) with the messages it moves into active/,
 * hands the entries the core selects to delivery agents and records what
 * they report.  Everything runs in one event loop; nothing waits for an
 * agent.  doc/qmgr.md and qmgr(8) describe it. */
#include "log.h"
#include "qmgr_control.h"
#include "qmgr_int.h"
#include "server.h"

static void pre_jail(void *ctx)
{
	(void)ctx;
	qmgr_conf_preload();
}

static void post_jail(void *ctx)
{
	static const qmgr_control_ops_t ops = { qmgr_now, qmgr_trigger, qmgr_kick };
	(void)ctx;
	qmgr_init(server_loop());
	(void)qmgr_control_start(server_loop(), Q.s, &Q.ql, &ops);
}

static void trigger(const char *buf, size_t len, void *ctx)
{
	(void)ctx;
	qmgr_trigger(buf, len);
}

static void pre_exit(void *ctx)
{
	(void)ctx;
	qmgr_shutdown();
}

int main(int argc, char **argv)
{
	server_spec_t spec = {
		.model = SERVER_TRIGGER,
		.flags = SERVER_F_UNLIMITED,
		.pre_jail = pre_jail,
		.post_jail = post_jail,
		.trigger = trigger,
		.pre_exit = pre_exit,
	};

	server_main(argc, argv, &spec);
}
