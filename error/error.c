/* error(8): the pseudo-transport that fails every recipient with the text
 * of the request's nexthop ("error:5.1.1 mailbox closed" in
 * transport_maps).  Started as the "retry" service, or with the argument
 * word "retry" in master.cf, it defers instead (4.x.x), which is how
 * "retry:text" routes mail that must wait.
 *
 * A leading status code in the text whose class fits the mode (5 for
 * error, 4 for retry) becomes the recipients' status and is dropped from
 * the reason; otherwise the status is 5.0.0 / 4.0.0 and the reason the
 * whole text. */
#include <stdbool.h>
#include <string.h>
#include "delivery.h"
#include "dsn.h"
#include "server.h"

static bool retry_mode;

static void post_jail(void *ctx)
{
	(void)ctx;
	retry_mode = strcmp(server_service_name(), "retry") == 0;
	for (int i = 0; i < server_argc(); i++)
		if (strcmp(server_argv()[i], "retry") == 0)
			retry_mode = true;
}

static void deliver(const dlv_request_t *req, dlv_reply_t *rep, void *ctx)
{
	char code[DSN_STATUS_SIZE];
	const char *text = req->nexthop, *status = NULL;
	size_t n = dsn_status_in_reply(text, code);
	char want = retry_mode ? '4' : '5';
	(void)ctx;

	if (n > 0 && code[0] == want) {
		status = code;
		text += n;
		while (*text == ' ')
			text++;
	}
	if (!*text)
		text = retry_mode ? "delivery deferred by the retry transport" :
		    "mail for this destination is refused";
	dlv_status_set_all(rep, true,
	    retry_mode ? DLV_ACT_DELAYED : DLV_ACT_FAILED, status, "none", "%s",
	    text);
}

int main(int argc, char **argv)
{
	dlv_agent_t agent = { .deliver = deliver, .post_jail = post_jail };

	dlv_agent_main(argc, argv, &agent);
}
