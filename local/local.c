/* local: the local delivery agent.
 *
 * Runs under master (master.cf: unpriv n, so it keeps root and takes
 * each recipient's identity as it delivers; see doc/local.md).  For each
 * delivery request from qmgr it opens the queue file and hands every
 * recipient to local_deliver() (deliver.c), which answers with a DSN
 * action, status code and text; the reply goes back to qmgr, which logs
 * and acts on it. */
#include <string.h>
#include "delivery.h"
#include "local.h"
#include "log.h"
#include "mailbox.h"
#include "pconfig.h"
#include "qfile.h"
#include "queue_path.h"
#include "server.h"

static local_t *the_local;
static queue_layout_t layout;

static void post_jail(void *ctx)
{
	local_conf_t conf;
	str_t err = STR_INIT;

	(void)ctx;
	if (local_conf_from_config(&conf, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	if ((the_local = local_new(&conf, &err)) == NULL)
		log_fatal("%s", str_cstr(&err));
	local_conf_free(&conf);
	if (queue_layout_here(&layout, &err) < 0)
		log_fatal("%s", str_cstr(&err));
	str_release(&err);
}

static void pre_exit(void *ctx)
{
	(void)ctx;
	local_free(the_local);
	the_local = NULL;
	queue_layout_free(&layout);
}

static void deliver(const dlv_request_t *req, dlv_reply_t *rep, void *ctx)
{
	qf_err_t err;
	qfile_t *qf;
	lmsg_t *content;
	local_msg_t msg;

	(void)ctx;
	qf = qfile_open(&layout, req->queue, req->queue_id, 0, &err);
	if (qf == NULL) {
		log_warning("%s: cannot open queue file: %s", req->queue_id,
		    err.reason);
		dlv_status_set_all(rep, false, DLV_ACT_DELAYED, "4.3.0", "local",
		    "cannot open queue file %s: %s", req->queue_id, err.reason);
		return;
	}
	local_refresh(the_local);
	content = lmsg_from_qfile(qf);
	msg.queue_id = req->queue_id;
	msg.sender = req->sender;
	msg.envid = req->envid;
	msg.ret = req->ret;
	msg.content = content;
	for (size_t i = 0; i < req->nrcpt; i++) {
		lstatus_t st = LSTATUS_INIT;
		dlv_action_t a = local_deliver(the_local, &msg, &req->rcpt[i], &st);

		dlv_status_set(rep, i, a, st.dsn, "local", "%s",
		    str_cstr(&st.text));
		lstatus_free(&st);
		server_watchdog_pet();
	}
	lmsg_free(content);
	qfile_close(qf);
}

int main(int argc, char **argv)
{
	dlv_agent_t agent = {
		.deliver = deliver,
		.post_jail = post_jail,
		.pre_exit = pre_exit,
	};

	dlv_agent_main(argc, argv, &agent);
}
