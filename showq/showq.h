/* The showq service: the queue listing for users who cannot read the
 * queue directories themselves.  doc/postq.md describes the protocol;
 * libglobal/showq_clnt.h is the client's side. */
#ifndef PETREL_SHOWQ_H
#define PETREL_SHOWQ_H
#include "showq_clnt.h"
#include "str.h"

#define SHOWQ_REQ_MAX	64	/* longest request line read */

/* Parses a request line (without its terminator).  Returns 0 with *flags
 * (0 or QUEUE_LIST_JSON), or -1 with err. */
int showq_parse_request(const char *line, int *flags, str_t *err);

#endif
