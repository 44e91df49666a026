/* showq: the queue listing for local users who cannot read the queue
 * directories (postq runs as the user; showq as mail_owner).  One client
 * at a time: read the request line, check the peer's uid (sock_peer_uid)
 * against authorized_mailq_users (root and mail_owner always pass), write
 * the listing postq prints, close.  doc/postq.md has the protocol. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#include "log.h"
#include "pconfig.h"
#include "queue_list.h"
#include "queue_path.h"
#include "server.h"
#include "showq.h"
#include "sock.h"
#include "user_list.h"

/* 1 allowed; 0 refused or the list could not be checked (why says). */
static int allowed(uid_t uid, str_t *why)
{
	struct passwd *pw;
	int r;

	if (uid == 0)
		return 1;
	if ((pw = getpwuid(uid)) != NULL
	    && strcmp(pw->pw_name, pconfig_get_str("mail_owner")) == 0)
		return 1;
	r = user_list_uid_allowed("authorized_mailq_users", uid, why);
	if (r < 0)
		log_warning("authorized_mailq_users: %s", str_cstr(why));
	return r == 1;
}

static void reply_line(stream_t *st, const char *what, const str_t *text)
{
	stream_printf(st, "postq: %s: %s\n", what, str_cstr(text));
	stream_flush(st);
}

static void serve(stream_t *st, void *ctx)
{
	str_t line = STR_INIT, why = STR_INIT;
	queue_layout_t ql;
	uid_t uid;
	int r, flags, fd;
	FILE *out;
	(void)ctx;

	stream_set_timeouts(st, 10000, 60000);
	if (sock_peer_uid(stream_fd(st), &uid) < 0) {
		log_warning("cannot get the client's credentials: %s",
		    strerror(errno));
		goto out;
	}
	r = stream_getline(st, &line, SHOWQ_REQ_MAX);
	if (r != STREAM_LINE_LF && r != STREAM_LINE_CRLF) {
		str_set(&why, r == STREAM_LINE_MORE ? "request line too long"
		    : "no complete request line");
		log_warning("uid %ld: bad request: %s", (long)uid, str_cstr(&why));
		reply_line(st, "bad request", &why);
		goto out;
	}
	if (showq_parse_request(str_cstr(&line), &flags, &why) < 0) {
		log_warning("uid %ld: bad request: %s", (long)uid, str_cstr(&why));
		reply_line(st, "bad request", &why);
		goto out;
	}
	if (!allowed(uid, &why)) {
		log_info("uid %ld: refused: %s", (long)uid, str_cstr(&why));
		reply_line(st, "permission denied", &why);
		goto out;
	}
	str_reset(&why);
	if (queue_layout_here(&ql, &why) < 0) {
		log_error("%s", str_cstr(&why));
		reply_line(st, "error", &why);
		goto out;
	}
	/* queue_list_print writes to a stdio stream: give it its own
	 * descriptor so that fclose leaves the skeleton's stream intact. */
	if (stream_flush(st) < 0 || (fd = dup(stream_fd(st))) < 0
	    || (out = fdopen(fd, "w")) == NULL) {
		log_error("cannot set up the reply: %s", strerror(errno));
		queue_layout_free(&ql);
		goto out;
	}
	str_reset(&why);
	if (queue_list_print(&ql, out, flags, &why) < 0) {
		log_error("listing for uid %ld: %s", (long)uid, str_cstr(&why));
		fprintf(out, "postq: error: %s\n", str_cstr(&why));
	}
	if (fclose(out) != 0)
		log_warning("uid %ld: write error: %s", (long)uid, strerror(errno));
	queue_layout_free(&ql);
out:
	str_release(&line);
	str_release(&why);
}

int main(int argc, char **argv)
{
	static const server_spec_t spec = {
		.model = SERVER_SINGLE,
		.serve = serve,
	};

	server_main(argc, argv, &spec);
}
