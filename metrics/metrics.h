/* The metrics service: the scheduler's state and counters, and the queue
 * sizes, in the Prometheus text exposition format (version 0.0.4) over a
 * minimal HTTP server.  doc/metrics.md is the specification; man/metrics.8.
 *
 *   metrics_expo.c     the exposition encoder (HELP/TYPE lines, label
 *                      escaping, numbers)
 *   metrics_http.c     the request reader and the answer
 *   metrics_collect.c  what is exported: qmgr's status reply and the
 *                      queue counts, through tables
 *   metrics.c          the daemon */
#ifndef PETREL_METRICS_H
#define PETREL_METRICS_H
#include <stdbool.h>
#include <stddef.h>
#include "attr.h"
#include "queue_path.h"
#include "str.h"

/* ---- Exposition (metrics_expo.c) ---------------------------------------- */

typedef enum expo_type {
	EXPO_GAUGE,
	EXPO_COUNTER,
} expo_type_t;

/* True for a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name
 * ([a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"). */
bool expo_metric_name_ok(const char *name);
bool expo_label_name_ok(const char *name);
/* Appends "# HELP name help" and "# TYPE name type" lines.  A bad name
 * is a programming error (panics). */
void expo_family(str_t *out, const char *name, const char *help,
    expo_type_t type);
/* Appends one sample line: name{l1="v1",...} value.  labels is NULL or a
 * NULL-terminated array of name, value, name, value... */
void expo_sample(str_t *out, const char *name, const char *const *labels,
    double value);
/* The escapes: help text (\\, \n) and label values (\\, \", \n; a byte
 * that is not part of valid UTF-8 becomes U+FFFD). */
void expo_help_text(str_t *out, const char *text);
void expo_label_value(str_t *out, const char *value);
/* A value: integers exactly (below 2^53), else the shortest decimal that
 * reads back as the same double; NaN, +Inf, -Inf. */
void expo_number(str_t *out, double v);

/* ---- HTTP (metrics_http.c) ---------------------------------------------- */

#define HTTP_REQLINE_MAX	1024	/* bytes in the request line */
#define HTTP_HEADER_MAX		4096	/* bytes in one header line */
#define HTTP_HEADERS_MAX	64	/* header lines */
#define HTTP_HEADER_BYTES	16384	/* bytes of header in all */
#define HTTP_READ_MS		10000	/* the whole request, from accept */

typedef struct http_req {
	int status;		/* 0: fine so far; else the answer's code */
	const char *why;	/* for the log, when status is not 200 */
	bool done;		/* the empty line that ends the head was read */
	bool head;		/* HEAD (no body in the answer) */
	bool v11;		/* HTTP/1.1 */
	int lines;		/* lines read, the request line included */
	int hosts;		/* Host header lines */
	size_t bytes;		/* header bytes */
} http_req_t;

void http_req_init(http_req_t *r);
/* Feeds one line without its terminator (LF or CR LF).  Returns true when
 * the head is complete or the request is refused; r->status is then the
 * answer's code: 200 (GET or HEAD of /metrics), 400, 404, 405 or 505. */
bool http_req_line(http_req_t *r, const char *line, size_t len);
/* Refuses the request (a line too long, the head cut short). */
void http_req_fail(http_req_t *r, int status, const char *why);
/* The whole answer: status line, Content-Type (ctype, or text/plain for
 * an error), Content-Length, Connection: close, Allow for 405; the body
 * unless head. */
void http_answer(str_t *out, int status, bool head, const char *ctype,
    const char *body, size_t blen);
const char *http_status_text(int status);

/* ---- What is exported (metrics_collect.c) ------------------------------- */

/* The queues counted, in order: maildrop incoming active deferred hold
 * corrupt. */
extern const char *const metrics_queues[];
#define METRICS_NQUEUES 6

typedef struct metrics_input {
	const attr_msg_t *status;	/* qmgr's status reply; NULL: none */
	long queue[METRICS_NQUEUES];	/* -1: could not be counted */
	double duration;		/* seconds this scrape took */
} metrics_input_t;

/* Counts the files of one queue as metrics_queues names it: queue files
 * (valid IDs) at any hash depth; in corrupt every regular file.  0 with
 * *n, or -1 with err. */
int metrics_count_queue(const queue_layout_t *ql, const char *queue, long *n,
    str_t *err);
/* Appends the exposition of everything in in to out. */
void metrics_render(str_t *out, const metrics_input_t *in);

#endif
