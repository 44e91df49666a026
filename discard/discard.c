/* discard(8): the delivery agent that accepts every recipient and drops
 * the message.  The reason logged (status=sent) is the request's nexthop:
 * "discard:spam trap" in transport_maps logs "(spam trap)"; with the
 * default nexthop it is the recipient's domain, as Postfix does. */
#include <stddef.h>
#include "delivery.h"

static void deliver(const dlv_request_t *req, dlv_reply_t *rep, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < req->nrcpt; i++)
		dlv_status_set(rep, i, DLV_ACT_DELIVERED, "2.0.0", "none",
		    "%s", req->nexthop);
}

int main(int argc, char **argv)
{
	dlv_agent_t agent = { .deliver = deliver };

	dlv_agent_main(argc, argv, &agent);
}
