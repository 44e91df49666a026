/* The showq service: the queue listing for users who cannot read the
 * queue directories themselves.  doc/postq.md describes the protocol:
 * the client sends one line, "text" or "json"; showq answers with the
 * listing postq prints and closes, or with one line
 * "postq: permission denied: ..." / "postq: bad request: ..." and
 * closes. */
#ifndef PETREL_SHOWQ_H
#define PETREL_SHOWQ_H
#include "str.h"

#define SHOWQ_SERVICE	"showq"	/* public/showq under queue_directory */
#define SHOWQ_REQ_MAX	64	/* longest request line read */

/* Parses a request line (without its terminator).  Returns 0 with *flags
 * (0 or PQ_LIST_JSON), or -1 with err. */
int showq_parse_request(const char *line, int *flags, str_t *err);

/* Client side (postq): connects to queue_dir/public/showq, asks for the
 * listing (json or text) and copies it to out; the "postq: ..." lines
 * showq sends for a refusal or an error go to errout.  Returns 0 (listed),
 * 1 (refused or failed; the message was written to errout), or -1 with
 * err when the service cannot be reached (errno from connect: ENOENT,
 * ECONNREFUSED, EACCES...) or the connection fails (errno EPROTO). */
#include <stdbool.h>
#include <stdio.h>
int showq_client(const char *queue_dir, bool json, FILE *out, FILE *errout,
    str_t *err);

#endif
