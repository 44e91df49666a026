/* postdrop's scan of the message header as the bytes arrive: the
 * checks cleanup will make, done early (doc/submission.md lists them).
 * Errors are reported as submit_err_t (submit.h): the exit status and
 * the text the submitter sees. */
#ifndef PETREL_POSTDROP_HDR_SCAN_H
#define PETREL_POSTDROP_HDR_SCAN_H
#include <stdbool.h>
#include <stddef.h>
#include "str.h"
#include "submit.h"

/* Checks the header of a message as its bytes arrive, in pieces of any
 * size, the way cleanup will, so that the submitter gets the error at
 * once instead of a rejection later: a NUL byte in the header, too many
 * Received: fields (hopcount_limit), a header over header_size_limit;
 * and it counts the addresses of To/Cc/Bcc and of Resent-To/Cc/Bcc (for
 * -t, which uses the Resent- ones when there are any).  The header ends
 * at the first empty line or at a line that is neither a field nor a
 * continuation.  Memory is bounded by header_size_limit. */
typedef struct hdr_rcpts {
	size_t fields;		/* fields seen */
	size_t good;		/* good addresses */
	size_t bad;		/* bad entries */
	char first_bad[200];	/* the first bad entry and why */
} hdr_rcpts_t;

typedef struct hdr_scan {
	bool in_body;
	bool field_open;	/* a field has started and not yet ended */
	int field_rcpt;		/* 0, 1 To/Cc/Bcc, 2 Resent-To/Cc/Bcc */
	bool failed;
	size_t header_bytes;
	size_t header_limit;
	long hop_limit;
	str_t line;		/* the current line */
	str_t value;		/* To/Cc/Bcc value, folded lines included */
	long received;		/* Received: fields */
	hdr_rcpts_t rcpt[2];	/* [0] To/Cc/Bcc, [1] Resent- */
} hdr_scan_t;

void hdr_scan_init(hdr_scan_t *h, size_t header_limit, long hop_limit);
/* Feeds bytes.  false (and err) on NUL in the header or too many hops;
 * the scan then stays failed. */
bool hdr_scan_feed(hdr_scan_t *h, const char *buf, size_t len,
    submit_err_t *err);
/* The end of the message (a last line without LF is checked too). */
bool hdr_scan_finish(hdr_scan_t *h, submit_err_t *err);
/* The recipient fields -t uses: the Resent- ones if any, else To/Cc/Bcc. */
const hdr_rcpts_t *hdr_scan_rcpts(const hdr_scan_t *h);
void hdr_scan_free(hdr_scan_t *h);

#endif
