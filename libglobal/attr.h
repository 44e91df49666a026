/* The attribute protocol: the encoding of every request and reply between
 * Petrel processes.  doc/protocol.md is the specification; in short, a
 * message is a sequence of typed, named items, one a line, with lengths in
 * front of string and data values, ending with ".\n":
 *
 *     I flags 0
 *     S queue_id 10:4QmZ7x2KcB
 *     N rcpt 1
 *     S address 15:bob@example.net
 *     .
 *     .
 *
 * Writing appends to a str_t.  Reading decodes into an attr_msg_t that is
 * queried by name with type checks, either incrementally (feed bytes as they
 * arrive) or from a file descriptor with a timeout. */
#ifndef PETREL_ATTR_H
#define PETREL_ATTR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "str.h"

enum attr_type {
	ATTR_TYPE_END = 0,	/* end marker; also the varargs terminator */
	ATTR_TYPE_INT,		/* int32_t */
	ATTR_TYPE_LONG,		/* int64_t */
	ATTR_TYPE_STR,		/* text without NUL */
	ATTR_TYPE_DATA,		/* any bytes */
	ATTR_TYPE_LIST,		/* a sequence of groups */
};

/* Fixed limit on names; the others are in attr_limits_t. */
#define ATTR_MAX_NAME	64
/* Hard cap on attr_limits_t.max_depth. */
#define ATTR_DEPTH_CAP	16

typedef struct attr_limits {
	size_t max_value;	/* octets in one string or data value */
	size_t max_attrs;	/* attributes and list groups in a message */
	size_t max_group_attrs;	/* attributes in one group */
	size_t max_total;	/* bytes in one encoded message */
	int max_depth;		/* list nesting, 0..ATTR_DEPTH_CAP */
} attr_limits_t;

/* 1 MiB, 65536, 256, 16 MiB, 4. */
extern const attr_limits_t attr_default_limits;

/* ---- Writing ------------------------------------------------------- */

/* Varargs items for attr_print()/attr_put_items().  The macros cast, so the
 * arguments have the types the reader of the list expects. */
#define ATTR_INT(name, v)	ATTR_TYPE_INT, (const char *)(name), (int32_t)(v)
#define ATTR_LONG(name, v)	ATTR_TYPE_LONG, (const char *)(name), (int64_t)(v)
#define ATTR_STR(name, v)	ATTR_TYPE_STR, (const char *)(name), (const char *)(v)
#define ATTR_DATA(name, p, n)	ATTR_TYPE_DATA, (const char *)(name), \
				(const void *)(p), (size_t)(n)
/* A list header: exactly n groups must follow, each ended by an end
 * marker (attr_put_end(), or an attr_print() call). */
#define ATTR_LIST(name, n)	ATTR_TYPE_LIST, (const char *)(name), (size_t)(n)
#define ATTR_END		ATTR_TYPE_END

/* Appends the items, then an end marker.  An invalid name panics (names
 * are constants in the code); values are not checked against the limits
 * (see doc/protocol.md: the sender cuts oversized text). */
void attr_print(str_t *out, ...);
/* Appends the items only (e.g. the head of a message up to a list). */
void attr_put_items(str_t *out, ...);
void attr_put_int(str_t *out, const char *name, int32_t v);
void attr_put_long(str_t *out, const char *name, int64_t v);
void attr_put_str(str_t *out, const char *name, const char *v);
void attr_put_data(str_t *out, const char *name, const void *v, size_t len);
void attr_put_list(str_t *out, const char *name, size_t ngroups);
void attr_put_end(str_t *out);
/* True if name is a valid attribute name. */
bool attr_name_ok(const char *name);

/* ---- Decoded messages ---------------------------------------------- */

typedef struct attr_msg attr_msg_t;	/* a message, or one group of a list */
typedef struct attr_list attr_list_t;

/* One decoded attribute; read-only for callers. */
typedef struct attr {
	const char *name;
	enum attr_type type;
	union {
		int32_t i;
		int64_t l;
		struct {
			const char *p;	/* NUL after the last byte */
			size_t len;
		} b;			/* string and data */
		attr_list_t *list;
	} u;
} attr_t;

/* The getters return false if the attribute is absent or has another
 * type (with a schema the type was already checked when reading). */
bool attr_get_int(const attr_msg_t *m, const char *name, int32_t *v);
bool attr_get_long(const attr_msg_t *m, const char *name, int64_t *v);
/* The string stays valid until the message is freed. */
bool attr_get_str(const attr_msg_t *m, const char *name, const char **v);
bool attr_get_data(const attr_msg_t *m, const char *name,
	const void **v, size_t *len);
bool attr_get_list(const attr_msg_t *m, const char *name,
	const attr_list_t **v);
size_t attr_list_count(const attr_list_t *l);
/* The i-th group; i must be below attr_list_count(). */
const attr_msg_t *attr_list_group(const attr_list_t *l, size_t i);
/* Generic access in the order received, for dumping. */
const attr_t *attr_find(const attr_msg_t *m, const char *name);
size_t attr_msg_count(const attr_msg_t *m);
const attr_t *attr_msg_at(const attr_msg_t *m, size_t i);
/* Appends the message in wire format (the same bytes it was decoded from,
 * minus skipped attributes). */
void attr_msg_encode(str_t *out, const attr_msg_t *m);
/* Frees a message returned by attr_reader_take() (not a group). */
void attr_msg_free(attr_msg_t *m);
const char *attr_type_name(enum attr_type t);

/* ---- Reading ------------------------------------------------------- */

#define ATTR_REQUIRED	(1 << 0)

/* A schema: an array of these ending with a NULL name. */
typedef struct attr_spec {
	const char *name;
	enum attr_type type;
	int flags;			/* ATTR_REQUIRED */
	const struct attr_spec *group;	/* ATTR_TYPE_LIST: schema of each
					 * group; NULL accepts anything */
} attr_spec_t;

/* Modes: what to do with an attribute the schema does not name. */
#define ATTR_READ_LENIENT	0	/* skip it */
#define ATTR_READ_STRICT	(1 << 0)	/* error */

enum attr_result {
	ATTR_NEED_MORE,		/* valid so far, incomplete */
	ATTR_DONE,		/* a message is complete: attr_reader_take() */
	ATTR_ERROR,		/* malformed, over a limit, or I/O error */
	ATTR_EOF,		/* attr_read_fd: closed before a message began */
	ATTR_TIMEOUT,		/* attr_read_fd: deadline passed */
};

enum attr_err {
	ATTR_E_NONE,
	ATTR_E_SYNTAX,		/* not the grammar of doc/protocol.md */
	ATTR_E_LIMIT,		/* a limit was exceeded */
	ATTR_E_UNKNOWN,		/* strict mode: not in the schema */
	ATTR_E_DUPLICATE,	/* a name twice in one group */
	ATTR_E_TYPE,		/* the schema says another type */
	ATTR_E_MISSING,		/* a required attribute is absent */
	ATTR_E_IO,		/* read error, EOF inside a message, timeout */
};

typedef struct attr_reader attr_reader_t;

/* spec NULL accepts any well-formed message; limits NULL means
 * attr_default_limits.  An invalid schema panics. */
attr_reader_t *attr_reader_new(const attr_spec_t *spec, int flags,
	const attr_limits_t *limits);
void attr_reader_free(attr_reader_t *r);
/* Feeds len bytes; *used says how many were consumed (on ATTR_DONE the
 * rest belongs to the next message).  After ATTR_ERROR the reader stays in
 * error until attr_reader_reset(); the caller should close the
 * connection.  The result does not depend on how input is chunked. */
enum attr_result attr_reader_feed(attr_reader_t *r, const void *buf,
	size_t len, size_t *used);
/* Reads one message from fd, waiting at most timeout_ms in total (-1:
 * no limit).  Works with blocking and non-blocking descriptors.  Bytes
 * read past the message are kept for the next call.  After ATTR_TIMEOUT
 * the partial message is kept and a further call continues it. */
enum attr_result attr_read_fd(attr_reader_t *r, int fd, int timeout_ms);
/* After ATTR_DONE: the message, now the caller's (attr_msg_free()); the
 * reader is ready for the next message. */
attr_msg_t *attr_reader_take(attr_reader_t *r);
/* Drops any partial message and error; keeps bytes buffered by
 * attr_read_fd. */
void attr_reader_reset(attr_reader_t *r);
/* The last error or timeout as one loggable line ("" if none). */
const char *attr_reader_error(const attr_reader_t *r);
enum attr_err attr_reader_errcode(const attr_reader_t *r);

/* Writes all of buf to fd, waiting at most timeout_ms in total (-1: no
 * limit).  Returns 0, or -1 with errno (ETIMEDOUT on timeout).  On a
 * socket it never blocks past the deadline and never raises SIGPIPE; any
 * other descriptor must be non-blocking for the timeout to hold. */
int attr_write_fd(int fd, const void *buf, size_t len, int timeout_ms);

#endif
