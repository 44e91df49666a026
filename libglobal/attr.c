/* The attribute protocol codec; doc/protocol.md is the specification.
 *
 * The reader is a byte-at-a-time state machine (values are copied in bulk)
 * so that it can be fed any split of the input and gives the same result
 * at the same byte whatever the split.  Every size it allocates was first
 * checked against a limit.  Names and values of one message live in an
 * arena owned by the message, so decoding a request costs a few mallocs,
 * not two per attribute. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "attr.h"
#include "event.h"
#include "log.h"
#include "mem.h"
#include "str.h"

const attr_limits_t attr_default_limits = {
	.max_value = 1024 * 1024,
	.max_attrs = 65536,
	.max_group_attrs = 256,
	.max_total = 16 * 1024 * 1024,
	.max_depth = 4,
};

/* ---- Arena ----------------------------------------------------------- */

#define ARENA_BLOCK	4096
#define ARENA_ALIGN	16

/* Under AddressSanitizer every allocation gets its own block of the exact
 * size, so that an overflow of a name or value is caught (inside a shared
 * block it would not be). */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_EXACT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_EXACT 1
#endif
#endif
#ifndef ARENA_EXACT
#define ARENA_EXACT 0
#endif

struct arena_blk {
	struct arena_blk *next;
	size_t size;
	size_t used;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

static void *arena_alloc(struct arena_blk **head, size_t n)
{
	struct arena_blk *b = *head;

	if (n > SIZE_MAX - ARENA_ALIGN - sizeof(*b))
		log_panic("attr: arena request too large");
	if (ARENA_EXACT) {
		b = xmalloc(sizeof(*b) + n);
		b->size = b->used = n;
		b->next = *head;
		*head = b;
		return b->data;
	}
	n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if (b != NULL && b->size - b->used >= n) {
		void *p = b->data + b->used;
		b->used += n;
		return p;
	}
	/* Big requests get a block of their own, linked behind the current
	 * one so that the current block's free space is not lost. */
	if (n > ARENA_BLOCK / 4 && b != NULL) {
		struct arena_blk *big = xmalloc(sizeof(*big) + n);
		big->size = big->used = n;
		big->next = b->next;
		b->next = big;
		return big->data;
	}
	size_t size = n > ARENA_BLOCK ? n : ARENA_BLOCK;
	b = xmalloc(sizeof(*b) + size);
	b->size = size;
	b->used = n;
	b->next = *head;
	*head = b;
	return b->data;
}

static void arena_free(struct arena_blk *b)
{
	while (b != NULL) {
		struct arena_blk *next = b->next;
		free(b);
		b = next;
	}
}

/* ---- Messages -------------------------------------------------------- */

struct attr_msg {
	attr_t *v;		/* attributes in the order received */
	size_t n, cap;
	const char **unk;	/* names skipped in lenient mode (duplicates) */
	size_t nunk, unkcap;
	struct arena_blk *arena;	/* the top message only */
};

struct attr_list {
	attr_msg_t **g;
	size_t n, cap;
};

static const char type_letter[] = {
	[ATTR_TYPE_END] = '.', [ATTR_TYPE_INT] = 'I', [ATTR_TYPE_LONG] = 'L',
	[ATTR_TYPE_STR] = 'S', [ATTR_TYPE_DATA] = 'D', [ATTR_TYPE_LIST] = 'N',
};

const char *attr_type_name(enum attr_type t)
{
	switch (t) {
	case ATTR_TYPE_END: return "end";
	case ATTR_TYPE_INT: return "integer";
	case ATTR_TYPE_LONG: return "long";
	case ATTR_TYPE_STR: return "string";
	case ATTR_TYPE_DATA: return "data";
	case ATTR_TYPE_LIST: return "list";
	}
	return "invalid";
}

static enum attr_type letter_type(int c)
{
	switch (c) {
	case 'I': return ATTR_TYPE_INT;
	case 'L': return ATTR_TYPE_LONG;
	case 'S': return ATTR_TYPE_STR;
	case 'D': return ATTR_TYPE_DATA;
	case 'N': return ATTR_TYPE_LIST;
	}
	return ATTR_TYPE_END;
}

static void msg_release(attr_msg_t *m)
{
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].type != ATTR_TYPE_LIST)
			continue;
		attr_list_t *l = m->v[i].u.list;
		for (size_t j = 0; j < l->n; j++)
			msg_release(l->g[j]);
		free(l->g);
	}
	free(m->v);
	free(m->unk);
}

void attr_msg_free(attr_msg_t *m)
{
	if (m == NULL)
		return;
	msg_release(m);
	struct arena_blk *a = m->arena;
	free(m);
	arena_free(a);
}

static attr_t *msg_push(attr_msg_t *m)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		m->v = xreallocarray(m->v, m->cap, sizeof(*m->v));
	}
	return &m->v[m->n++];
}

const attr_t *attr_find(const attr_msg_t *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].name, name) == 0)
			return &m->v[i];
	return NULL;
}

static const attr_t *find_typed(const attr_msg_t *m, const char *name,
	enum attr_type t)
{
	const attr_t *a = attr_find(m, name);
	return a != NULL && a->type == t ? a : NULL;
}

bool attr_get_int(const attr_msg_t *m, const char *name, int32_t *v)
{
	const attr_t *a = find_typed(m, name, ATTR_TYPE_INT);
	if (a != NULL)
		*v = a->u.i;
	return a != NULL;
}

bool attr_get_long(const attr_msg_t *m, const char *name, int64_t *v)
{
	const attr_t *a = find_typed(m, name, ATTR_TYPE_LONG);
	if (a != NULL)
		*v = a->u.l;
	return a != NULL;
}

bool attr_get_str(const attr_msg_t *m, const char *name, const char **v)
{
	const attr_t *a = find_typed(m, name, ATTR_TYPE_STR);
	if (a != NULL)
		*v = a->u.b.p;
	return a != NULL;
}

bool attr_get_data(const attr_msg_t *m, const char *name, const void **v,
	size_t *len)
{
	const attr_t *a = find_typed(m, name, ATTR_TYPE_DATA);
	if (a != NULL) {
		*v = a->u.b.p;
		*len = a->u.b.len;
	}
	return a != NULL;
}

bool attr_get_list(const attr_msg_t *m, const char *name,
	const attr_list_t **v)
{
	const attr_t *a = find_typed(m, name, ATTR_TYPE_LIST);
	if (a != NULL)
		*v = a->u.list;
	return a != NULL;
}

size_t attr_list_count(const attr_list_t *l)
{
	return l->n;
}

const attr_msg_t *attr_list_group(const attr_list_t *l, size_t i)
{
	if (i >= l->n)
		log_panic("attr_list_group: index %zu of %zu", i, l->n);
	return l->g[i];
}

size_t attr_msg_count(const attr_msg_t *m)
{
	return m->n;
}

const attr_t *attr_msg_at(const attr_msg_t *m, size_t i)
{
	if (i >= m->n)
		log_panic("attr_msg_at: index %zu of %zu", i, m->n);
	return &m->v[i];
}

/* ---- Writing --------------------------------------------------------- */

static bool name_char_ok(int c, bool first)
{
	if (c >= 'a' && c <= 'z')
		return true;
	return !first && ((c >= '0' && c <= '9') || c == '_');
}

bool attr_name_ok(const char *name)
{
	size_t i;

	if (name == NULL)
		return false;
	for (i = 0; name[i] != 0; i++)
		if (i >= ATTR_MAX_NAME || !name_char_ok((unsigned char)name[i], i == 0))
			return false;
	return i > 0;
}

static void check_name(const char *name)
{
	if (!attr_name_ok(name)) {
		str_t q = STR_INIT;
		if (name != NULL)
			str_quote_printable(&q, name, strnlen(name, 200));
		log_panic("attr: invalid attribute name \"%s\"", str_cstr(&q));
	}
}

void attr_put_int(str_t *out, const char *name, int32_t v)
{
	check_name(name);
	str_catf(out, "I %s %" PRId32 "\n", name, v);
}

void attr_put_long(str_t *out, const char *name, int64_t v)
{
	check_name(name);
	str_catf(out, "L %s %" PRId64 "\n", name, v);
}

static void put_bytes(str_t *out, int letter, const char *name,
	const void *v, size_t len)
{
	check_name(name);
	str_catf(out, "%c %s %zu:", letter, name, len);
	str_append(out, v, len);
	str_putc(out, '\n');
}

void attr_put_str(str_t *out, const char *name, const char *v)
{
	put_bytes(out, 'S', name, v, strlen(v));
}

void attr_put_data(str_t *out, const char *name, const void *v, size_t len)
{
	put_bytes(out, 'D', name, v, len);
}

void attr_put_list(str_t *out, const char *name, size_t ngroups)
{
	check_name(name);
	str_catf(out, "N %s %zu\n", name, ngroups);
}

void attr_put_end(str_t *out)
{
	str_append(out, ".\n", 2);
}

static void vput(str_t *out, va_list ap)
{
	int t;

	while ((t = va_arg(ap, int)) != ATTR_TYPE_END) {
		const char *name = va_arg(ap, const char *);
		switch (t) {
		case ATTR_TYPE_INT:
			attr_put_int(out, name, va_arg(ap, int32_t));
			break;
		case ATTR_TYPE_LONG:
			attr_put_long(out, name, va_arg(ap, int64_t));
			break;
		case ATTR_TYPE_STR:
			attr_put_str(out, name, va_arg(ap, const char *));
			break;
		case ATTR_TYPE_DATA: {
			const void *p = va_arg(ap, const void *);
			attr_put_data(out, name, p, va_arg(ap, size_t));
			break;
		}
		case ATTR_TYPE_LIST:
			attr_put_list(out, name, va_arg(ap, size_t));
			break;
		default:
			log_panic("attr_print: bad item type %d", t);
		}
	}
}

void attr_put_items(str_t *out, ...)
{
	va_list ap;

	va_start(ap, out);
	vput(out, ap);
	va_end(ap);
}

void attr_print(str_t *out, ...)
{
	va_list ap;

	va_start(ap, out);
	vput(out, ap);
	va_end(ap);
	attr_put_end(out);
}

void attr_msg_encode(str_t *out, const attr_msg_t *m)
{
	for (size_t i = 0; i < m->n; i++) {
		const attr_t *a = &m->v[i];
		switch (a->type) {
		case ATTR_TYPE_INT:
			attr_put_int(out, a->name, a->u.i);
			break;
		case ATTR_TYPE_LONG:
			attr_put_long(out, a->name, a->u.l);
			break;
		case ATTR_TYPE_STR:
		case ATTR_TYPE_DATA:
			put_bytes(out, type_letter[a->type], a->name,
				a->u.b.p, a->u.b.len);
			break;
		case ATTR_TYPE_LIST:
			attr_put_list(out, a->name, a->u.list->n);
			for (size_t j = 0; j < a->u.list->n; j++)
				attr_msg_encode(out, a->u.list->g[j]);
			break;
		case ATTR_TYPE_END:
			break;
		}
	}
	attr_put_end(out);
}

/* ---- Reading --------------------------------------------------------- */

enum state {
	ST_ITEM,		/* at an item type letter or "." */
	ST_SP,			/* after the type letter */
	ST_NAME,
	ST_NUM,			/* number, length or count */
	ST_VALUE,		/* octets of a string or data value */
	ST_VALUE_LF,
	ST_END_LF,		/* after "." */
	ST_DONE,
	ST_ERROR,
};

/* One open group: the message itself (depth 0) or a group of a list. */
struct frame {
	attr_msg_t *msg;		/* NULL while skipping */
	const attr_spec_t *spec;	/* NULL: no schema */
	bool skip;
	attr_list_t *list;		/* the list this group is in */
	const char *list_name;		/* for error texts */
	size_t index;			/* of this group in its list */
	uint64_t left;			/* groups of the list after this one */
	size_t count;			/* attributes seen in this group */
};

struct attr_reader {
	const attr_spec_t *spec;
	int flags;
	attr_limits_t lim;
	enum state st;
	enum attr_err err;
	str_t errmsg;
	size_t total;		/* bytes of this message consumed */
	size_t nattrs;
	attr_msg_t *msg;
	struct frame fr[ATTR_DEPTH_CAP + 1];
	int depth;
	/* The item being read. */
	enum attr_type type;
	char name[ATTR_MAX_NAME + 1];
	size_t name_len;
	bool have_name;
	const char *iname;	/* stable copy of name, or NULL */
	const attr_spec_t *ispec;
	bool iskip;
	bool neg;
	unsigned ndigits;
	uint64_t num;
	char *val;
	size_t vlen, vgot;
	/* attr_read_fd's input buffer; bytes from inpos are unconsumed. */
	str_t in;
	size_t inpos;
};

static void check_spec(const attr_spec_t *spec, int depth)
{
	/* A schema may refer to itself; checking stops at the depth no
	 * message can exceed. */
	if (spec == NULL || depth > ATTR_DEPTH_CAP)
		return;
	for (const attr_spec_t *e = spec; e->name != NULL; e++) {
		check_name(e->name);
		if (e->type < ATTR_TYPE_INT || e->type > ATTR_TYPE_LIST)
			log_panic("attr schema: %s: bad type %d", e->name, e->type);
		if (e->group != NULL && e->type != ATTR_TYPE_LIST)
			log_panic("attr schema: %s: group schema on a %s",
				e->name, attr_type_name(e->type));
		for (const attr_spec_t *d = spec; d != e; d++)
			if (strcmp(d->name, e->name) == 0)
				log_panic("attr schema: %s named twice", e->name);
		check_spec(e->group, depth + 1);
	}
}

attr_reader_t *attr_reader_new(const attr_spec_t *spec, int flags,
	const attr_limits_t *limits)
{
	attr_reader_t *r = xcalloc(1, sizeof(*r));

	check_spec(spec, 0);
	r->spec = spec;
	r->flags = flags;
	r->lim = limits ? *limits : attr_default_limits;
	if (r->lim.max_depth < 0)
		r->lim.max_depth = 0;
	if (r->lim.max_depth > ATTR_DEPTH_CAP)
		r->lim.max_depth = ATTR_DEPTH_CAP;
	r->errmsg = (str_t)STR_INIT;
	r->in = (str_t)STR_INIT;
	r->st = ST_ITEM;
	return r;
}

void attr_reader_reset(attr_reader_t *r)
{
	attr_msg_free(r->msg);
	r->msg = NULL;
	r->st = ST_ITEM;
	r->err = ATTR_E_NONE;
	str_reset(&r->errmsg);
	r->total = 0;
	r->nattrs = 0;
	r->depth = 0;
	r->have_name = false;
}

void attr_reader_free(attr_reader_t *r)
{
	if (r == NULL)
		return;
	attr_msg_free(r->msg);
	str_release(&r->errmsg);
	str_release(&r->in);
	free(r);
}

attr_msg_t *attr_reader_take(attr_reader_t *r)
{
	if (r->st != ST_DONE)
		return NULL;
	attr_msg_t *m = r->msg;
	r->msg = NULL;
	attr_reader_reset(r);
	return m;
}

const char *attr_reader_error(const attr_reader_t *r)
{
	return str_cstr(&r->errmsg);
}

enum attr_err attr_reader_errcode(const attr_reader_t *r)
{
	return r->err;
}

/* The list path of the open groups, e.g. "rcpt[2].dsn[0]". */
static void put_path(attr_reader_t *r, str_t *s)
{
	for (int d = 1; d <= r->depth; d++)
		str_catf(s, "%s%s[%zu]", d > 1 ? "." : "",
			r->fr[d].list_name, r->fr[d].index);
}

/* Records an error at byte offset off and stops the reader. */
static enum attr_result __attribute__((format(printf, 4, 5)))
fail(attr_reader_t *r, enum attr_err err, size_t off, const char *fmt, ...)
{
	va_list ap;

	str_reset(&r->errmsg);
	va_start(ap, fmt);
	str_vcatf(&r->errmsg, fmt, ap);
	va_end(ap);
	str_catf(&r->errmsg, " (byte %zu", off);
	if (r->have_name) {
		str_cat(&r->errmsg, ", attribute ");
		put_path(r, &r->errmsg);
		str_catf(&r->errmsg, "%s%s", r->depth > 0 ? "." : "", r->name);
	} else if (r->depth > 0) {
		str_cat(&r->errmsg, ", in ");
		put_path(r, &r->errmsg);
	}
	str_putc(&r->errmsg, ')');
	r->err = err;
	r->st = ST_ERROR;
	return ATTR_ERROR;
}

#define FAIL(r, e, ...)	fail((r), (e), (r)->total - 1, __VA_ARGS__)

static char *arena_strdup(attr_reader_t *r, const char *s, size_t len)
{
	char *p = arena_alloc(&r->msg->arena, len + 1);
	memcpy(p, s, len);
	p[len] = 0;
	return p;
}

static attr_msg_t *new_group(attr_reader_t *r, attr_list_t *l)
{
	attr_msg_t *g = arena_alloc(&r->msg->arena, sizeof(*g));
	memset(g, 0, sizeof(*g));
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 4;
		l->g = xreallocarray(l->g, l->cap, sizeof(*l->g));
	}
	l->g[l->n++] = g;
	return g;
}

static bool is_duplicate(const attr_msg_t *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].name, name) == 0)
			return true;
	for (size_t i = 0; i < m->nunk; i++)
		if (strcmp(m->unk[i], name) == 0)
			return true;
	return false;
}

/* The name of an item is complete: check it against the limits, the
 * group and the schema. */
static enum attr_result name_done(attr_reader_t *r)
{
	struct frame *f = &r->fr[r->depth];

	r->name[r->name_len] = 0;
	r->have_name = true;
	if (++r->nattrs > r->lim.max_attrs)
		return FAIL(r, ATTR_E_LIMIT, "too many attributes in message (limit %zu)",
			r->lim.max_attrs);
	if (++f->count > r->lim.max_group_attrs)
		return FAIL(r, ATTR_E_LIMIT, "too many attributes in group (limit %zu)",
			r->lim.max_group_attrs);
	if (!f->skip && is_duplicate(f->msg, r->name))
		return FAIL(r, ATTR_E_DUPLICATE, "duplicate attribute");
	if (r->type == ATTR_TYPE_LIST && r->depth >= r->lim.max_depth)
		return FAIL(r, ATTR_E_LIMIT, "list nesting exceeds depth limit %d",
			r->lim.max_depth);
	r->ispec = NULL;
	r->iskip = f->skip;
	r->iname = NULL;
	if (!f->skip && f->spec != NULL) {
		const attr_spec_t *e;
		for (e = f->spec; e->name != NULL; e++)
			if (strcmp(e->name, r->name) == 0)
				break;
		if (e->name != NULL) {
			if (e->type != r->type)
				return FAIL(r, ATTR_E_TYPE, "wrong type: got %s, expected %s",
					attr_type_name(r->type), attr_type_name(e->type));
			r->ispec = e;
			r->iname = e->name;
		} else if (r->flags & ATTR_READ_STRICT) {
			return FAIL(r, ATTR_E_UNKNOWN, "unknown attribute");
		} else {
			/* Skipped, but remembered to catch a duplicate. */
			attr_msg_t *m = f->msg;
			if (m->nunk == m->unkcap) {
				m->unkcap = m->unkcap ? m->unkcap * 2 : 4;
				m->unk = xreallocarray(m->unk, m->unkcap, sizeof(*m->unk));
			}
			r->iname = arena_strdup(r, r->name, r->name_len);
			m->unk[m->nunk++] = r->iname;
			r->iskip = true;
		}
	} else if (!f->skip || r->type == ATTR_TYPE_LIST) {
		/* Kept, or (a skipped list) needed for error paths. */
		r->iname = arena_strdup(r, r->name, r->name_len);
	}
	r->neg = false;
	r->ndigits = 0;
	r->num = 0;
	r->st = ST_NUM;
	return ATTR_NEED_MORE;
}

/* One digit of a number, length or count, checked against its bound so
 * that nothing overflows and no over-limit size is ever accepted. */
static enum attr_result num_digit(attr_reader_t *r, int c)
{
	uint64_t bound, d = (uint64_t)(c - '0');

	if (r->ndigits > 0 && r->num == 0)
		return FAIL(r, ATTR_E_SYNTAX, "number with a leading zero");
	switch (r->type) {
	case ATTR_TYPE_INT:
		bound = r->neg ? (uint64_t)INT32_MAX + 1 : INT32_MAX;
		if (r->num > (bound - d) / 10)
			return FAIL(r, ATTR_E_SYNTAX, "integer out of range");
		break;
	case ATTR_TYPE_LONG:
		bound = r->neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX;
		if (r->num > (bound - d) / 10)
			return FAIL(r, ATTR_E_SYNTAX, "long integer out of range");
		break;
	case ATTR_TYPE_LIST:
		bound = r->lim.max_attrs;
		if (bound < d || r->num > (bound - d) / 10)
			return FAIL(r, ATTR_E_LIMIT, "list count exceeds limit %zu",
				r->lim.max_attrs);
		break;
	default:
		bound = r->lim.max_value;
		if (bound < d || r->num > (bound - d) / 10)
			return FAIL(r, ATTR_E_LIMIT, "value length exceeds limit %zu",
				r->lim.max_value);
		break;
	}
	r->num = r->num * 10 + d;
	r->ndigits++;
	return ATTR_NEED_MORE;
}

static void add_attr(attr_reader_t *r, attr_t *a)
{
	a->name = r->iname;
	a->type = r->type;
	*msg_push(r->fr[r->depth].msg) = *a;
}

/* The terminator of a number: store it, or start the value or list. */
static enum attr_result num_done(attr_reader_t *r)
{
	attr_t a;

	if (r->ndigits == 0)
		return FAIL(r, ATTR_E_SYNTAX, "missing number");
	if (r->neg && r->num == 0)
		return FAIL(r, ATTR_E_SYNTAX, "number \"-0\"");
	switch (r->type) {
	case ATTR_TYPE_INT:
		if (!r->iskip) {
			a.u.i = r->neg ? (int32_t)(-(int64_t)r->num) : (int32_t)r->num;
			add_attr(r, &a);
		}
		break;
	case ATTR_TYPE_LONG:
		if (!r->iskip) {
			if (!r->neg)
				a.u.l = (int64_t)r->num;
			else if (r->num == (uint64_t)INT64_MAX + 1)
				a.u.l = INT64_MIN;
			else
				a.u.l = -(int64_t)r->num;
			add_attr(r, &a);
		}
		break;
	case ATTR_TYPE_STR:
	case ATTR_TYPE_DATA:
		r->vlen = (size_t)r->num;
		r->vgot = 0;
		/* The value and its LF must fit (total <= max_total here). */
		if (r->vlen >= r->lim.max_total - r->total)
			return FAIL(r, ATTR_E_LIMIT, "message exceeds size limit %zu",
				r->lim.max_total);
		r->val = NULL;
		if (!r->iskip) {
			r->val = arena_alloc(&r->msg->arena, r->vlen + 1);
			r->val[r->vlen] = 0;
		}
		r->st = r->vlen > 0 ? ST_VALUE : ST_VALUE_LF;
		return ATTR_NEED_MORE;
	case ATTR_TYPE_LIST: {
		/* Each group costs memory even when empty (two bytes on the
		 * wire), so groups count against the attribute limit. */
		if (r->num > r->lim.max_attrs - r->nattrs)
			return FAIL(r, ATTR_E_LIMIT,
				"too many attributes and list groups in message (limit %zu)",
				r->lim.max_attrs);
		r->nattrs += (size_t)r->num;
		attr_list_t *l = NULL;
		if (!r->iskip) {
			l = arena_alloc(&r->msg->arena, sizeof(*l));
			memset(l, 0, sizeof(*l));
			a.u.list = l;
			add_attr(r, &a);
		}
		if (r->num > 0) {
			/* The depth limit was checked with the name. */
			struct frame *f = &r->fr[++r->depth];
			f->skip = r->iskip;
			f->list = l;
			f->msg = l ? new_group(r, l) : NULL;
			f->spec = r->ispec ? r->ispec->group : NULL;
			f->list_name = r->iname;
			f->index = 0;
			f->left = r->num - 1;
			f->count = 0;
		}
		break;
	}
	case ATTR_TYPE_END:
		break;
	}
	r->have_name = false;
	r->st = ST_ITEM;
	return ATTR_NEED_MORE;
}

/* The end marker of the current group is complete. */
static enum attr_result group_done(attr_reader_t *r)
{
	struct frame *f = &r->fr[r->depth];

	if (!f->skip && f->spec != NULL) {
		for (const attr_spec_t *e = f->spec; e->name != NULL; e++)
			if ((e->flags & ATTR_REQUIRED) && attr_find(f->msg, e->name) == NULL)
				return FAIL(r, ATTR_E_MISSING,
					"missing required attribute %s", e->name);
	}
	if (r->depth == 0) {
		r->st = ST_DONE;
		return ATTR_DONE;
	}
	if (f->left > 0) {
		f->left--;
		f->index++;
		f->count = 0;
		f->msg = f->list ? new_group(r, f->list) : NULL;
	} else {
		r->depth--;
	}
	r->st = ST_ITEM;
	return ATTR_NEED_MORE;
}

static enum attr_result step(attr_reader_t *r, int c)
{
	switch (r->st) {
	case ST_ITEM:
		if (c == '.') {
			r->st = ST_END_LF;
			return ATTR_NEED_MORE;
		}
		r->type = letter_type(c);
		if (r->type == ATTR_TYPE_END)
			return FAIL(r, ATTR_E_SYNTAX,
				"unexpected byte 0x%02x, expected an item type or end marker", c);
		r->st = ST_SP;
		return ATTR_NEED_MORE;
	case ST_SP:
		if (c != ' ')
			return FAIL(r, ATTR_E_SYNTAX,
				"unexpected byte 0x%02x, expected a space after the type", c);
		r->name_len = 0;
		r->st = ST_NAME;
		return ATTR_NEED_MORE;
	case ST_NAME:
		if (c == ' ') {
			if (r->name_len == 0)
				return FAIL(r, ATTR_E_SYNTAX, "empty attribute name");
			return name_done(r);
		}
		if (!name_char_ok(c, r->name_len == 0))
			return FAIL(r, ATTR_E_SYNTAX, "invalid byte 0x%02x in attribute name", c);
		if (r->name_len == ATTR_MAX_NAME)
			return FAIL(r, ATTR_E_LIMIT, "attribute name longer than %d bytes",
				ATTR_MAX_NAME);
		r->name[r->name_len++] = (char)c;
		return ATTR_NEED_MORE;
	case ST_NUM:
		if (c >= '0' && c <= '9')
			return num_digit(r, c);
		if (c == '-' && r->ndigits == 0 && !r->neg
		    && (r->type == ATTR_TYPE_INT || r->type == ATTR_TYPE_LONG)) {
			r->neg = true;
			return ATTR_NEED_MORE;
		}
		if (c == ((r->type == ATTR_TYPE_STR || r->type == ATTR_TYPE_DATA) ? ':' : '\n'))
			return num_done(r);
		return FAIL(r, ATTR_E_SYNTAX, "unexpected byte 0x%02x in number", c);
	case ST_VALUE_LF:
		if (c != '\n')
			return FAIL(r, ATTR_E_SYNTAX,
				"unexpected byte 0x%02x after value, expected a line feed (wrong length?)", c);
		if (!r->iskip) {
			attr_t a;
			a.u.b.p = r->val;
			a.u.b.len = r->vlen;
			add_attr(r, &a);
		}
		r->have_name = false;
		r->st = ST_ITEM;
		return ATTR_NEED_MORE;
	case ST_END_LF:
		if (c != '\n')
			return FAIL(r, ATTR_E_SYNTAX,
				"unexpected byte 0x%02x after \".\", expected a line feed", c);
		return group_done(r);
	case ST_VALUE:
	case ST_DONE:
	case ST_ERROR:
		break;
	}
	log_panic("attr reader: bad state %d", r->st);
}

enum attr_result attr_reader_feed(attr_reader_t *r, const void *buf,
	size_t len, size_t *used)
{
	enum attr_result res = ATTR_NEED_MORE;

	if (used)
		*used = 0;
	if (r->st == ST_ERROR || r->st == ST_DONE)
		return r->st == ST_ERROR ? ATTR_ERROR : ATTR_DONE;
	if (len == 0)
		return ATTR_NEED_MORE;	/* buf may be NULL */
	const unsigned char *p = buf, *end = p + len;
	if (r->msg == NULL) {
		r->msg = xcalloc(1, sizeof(*r->msg));
		r->fr[0] = (struct frame){ .msg = r->msg, .spec = r->spec };
	}
	while (p < end && res == ATTR_NEED_MORE) {
		if (r->st == ST_VALUE) {
			/* Room for the value was checked with its length. */
			size_t n = r->vlen - r->vgot;
			if (n > (size_t)(end - p))
				n = (size_t)(end - p);
			if (r->type == ATTR_TYPE_STR) {
				const unsigned char *z = memchr(p, 0, n);
				if (z != NULL) {
					r->total += (size_t)(z - p) + 1;
					p = z + 1;
					res = FAIL(r, ATTR_E_SYNTAX, "NUL byte in a string");
					break;
				}
			}
			if (r->val != NULL)
				memcpy(r->val + r->vgot, p, n);
			r->vgot += n;
			r->total += n;
			p += n;
			if (r->vgot == r->vlen)
				r->st = ST_VALUE_LF;
			continue;
		}
		int c = *p++;
		if (++r->total > r->lim.max_total) {
			res = FAIL(r, ATTR_E_LIMIT, "message exceeds size limit %zu",
				r->lim.max_total);
			break;
		}
		res = step(r, c);
	}
	if (used)
		*used = (size_t)(p - (const unsigned char *)buf);
	return res;
}

/* ---- File descriptors ------------------------------------------------ */

/* Milliseconds to pass to poll() before the deadline; 0 if it passed. */
static int remaining_ms(int64_t deadline)
{
	if (deadline < 0)
		return -1;
	int64_t left = deadline - event_now_ms();
	if (left <= 0)
		return 0;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

#define READ_CHUNK	8192

enum attr_result attr_read_fd(attr_reader_t *r, int fd, int timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : event_now_ms() + timeout_ms;

	for (;;) {
		size_t used;
		enum attr_result res = attr_reader_feed(r, str_cstr(&r->in) + r->inpos,
			r->in.len - r->inpos, &used);
		r->inpos += used;
		if (r->inpos == r->in.len) {
			str_reset(&r->in);
			r->inpos = 0;
		}
		if (res != ATTR_NEED_MORE)
			return res;
		/* Everything buffered is consumed: wait for more. */
		int wait = remaining_ms(deadline);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n = poll(&pfd, 1, wait);
		if (n < 0 && errno != EINTR)
			return fail(r, ATTR_E_IO, r->total, "poll: %s", strerror(errno));
		if (n == 0 && remaining_ms(deadline) == 0) {
			str_reset(&r->errmsg);
			str_catf(&r->errmsg, "timeout after %d ms with %zu bytes of a message read",
				timeout_ms, r->total);
			r->err = ATTR_E_IO;
			return ATTR_TIMEOUT;
		}
		if (n <= 0)
			continue;
		str_reserve(&r->in, READ_CHUNK);
		ssize_t got = read(fd, r->in.buf + r->in.len, READ_CHUNK);
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return fail(r, ATTR_E_IO, r->total, "read: %s", strerror(errno));
		}
		if (got == 0) {
			if (r->total == 0)
				return ATTR_EOF;
			return fail(r, ATTR_E_IO, r->total,
				"connection closed inside a message");
		}
		r->in.len += (size_t)got;
		r->in.buf[r->in.len] = 0;
	}
}

int attr_write_fd(int fd, const void *buf, size_t len, int timeout_ms)
{
	const char *p = buf;
	int64_t deadline = timeout_ms < 0 ? -1 : event_now_ms() + timeout_ms;
	bool sock = true;

	while (len > 0) {
		ssize_t n;
		if (sock) {
			n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno == ENOTSOCK) {
				sock = false;
				continue;
			}
		} else {
			n = write(fd, p, len);
		}
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		int wait = remaining_ms(deadline);
		if (wait == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		if (poll(&pfd, 1, wait) < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}
