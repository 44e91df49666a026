/* The client side of the showq service (postq, for a user who cannot
 * read the queue directories).  doc/postq.md describes the protocol:
 * the client sends one line, "text" or "json"; showq answers with the
 * listing postq prints and closes, or with one line
 * "postq: permission denied: ..." / "postq: bad request: ..." and
 * closes.  showq/showq.h has the server's side. */
#ifndef PETREL_SHOWQ_CLNT_H
#define PETREL_SHOWQ_CLNT_H
#include <stdbool.h>
#include <stdio.h>
#include "str.h"

#define SHOWQ_SERVICE	"showq"	/* public/showq under queue_directory */

/* Connects to queue_dir/public/showq, asks for the listing (json or
 * text) and copies it to out; the "postq: ..." lines showq sends for a
 * refusal or an error go to errout.  Returns 0 (listed), 1 (refused or
 * failed; the message was written to errout), or -1 with err when the
 * service cannot be reached (errno from connect: ENOENT, ECONNREFUSED,
 * EACCES...) or the connection fails (errno EPROTO). */
int showq_clnt_list(const char *queue_dir, bool json, FILE *out,
    FILE *errout, str_t *err);

#endif
