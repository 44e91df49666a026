/* libFuzzer target for the attribute protocol reader (libglobal/attr).
 *
 * Arbitrary bytes go to the decoder as a stream of pipelined messages:
 * whole, and again in pseudo-random chunk sizes; without a schema, and
 * with a schema in strict and lenient modes; with the default limits and
 * with tiny ones.  Besides the sanitizers' crash and leak checks it aborts
 * when:
 *   - chunked feeding gives another result, length or error text than
 *     feeding the whole buffer (the reader must not depend on chunking);
 *   - a message decoded without a schema does not re-encode to exactly the
 *     bytes it came from (the encoding is canonical);
 *   - a message decoded with a schema does not re-encode to something that
 *     decodes again, in strict mode, to the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attr.h"
#include "str.h"

#define MAX_MSGS	8	/* pipelined messages looked at per input */

static const attr_spec_t note_spec[] = {
	{ "text", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "code", ATTR_TYPE_INT, 0, NULL },
	{ NULL, 0, 0, NULL },
};
static const attr_spec_t rcpt_spec[] = {
	{ "address", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "orig_address", ATTR_TYPE_STR, 0, NULL },
	{ "notify", ATTR_TYPE_INT, 0, NULL },
	{ "orcpt", ATTR_TYPE_STR, 0, NULL },
	{ "offset", ATTR_TYPE_LONG, ATTR_REQUIRED, NULL },
	{ "notes", ATTR_TYPE_LIST, 0, note_spec },
	{ NULL, 0, 0, NULL },
};
static const attr_spec_t req_spec[] = {
	{ "queue_id", ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ "sender", ATTR_TYPE_STR, 0, NULL },
	{ "size", ATTR_TYPE_LONG, 0, NULL },
	{ "flags", ATTR_TYPE_INT, 0, NULL },
	{ "blob", ATTR_TYPE_DATA, 0, NULL },
	{ "rcpt", ATTR_TYPE_LIST, 0, rcpt_spec },
	{ "any", ATTR_TYPE_LIST, 0, NULL },
	{ NULL, 0, 0, NULL },
};

static const attr_limits_t tiny = {
	.max_value = 16, .max_attrs = 12, .max_group_attrs = 4,
	.max_total = 200, .max_depth = 2,
};

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "fuzz_attr: check failed at line %d: %s\n", __LINE__, #cond); \
	abort(); } } while (0)

/* The outcome of reading one message, to compare the two feedings. */
struct outcome {
	enum attr_result res;
	size_t used;
	str_t err;
};

static uint32_t next_rand(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* Checks a decoded message's re-encoding; exact is true without a schema,
 * where the encoding must reproduce the input bytes. */
static void check_encoding(attr_msg_t *m, const uint8_t *in, size_t len,
	const attr_spec_t *spec, const attr_limits_t *lim, int exact)
{
	str_t out = STR_INIT, again = STR_INIT;
	attr_msg_encode(&out, m);
	if (exact) {
		CHECK(out.len == len && memcmp(out.buf, in, len) == 0);
	} else {
		/* What a schema let through is valid for that schema, strictly
		 * (unknowns were dropped), and is now canonical. */
		attr_reader_t *r = attr_reader_new(spec, ATTR_READ_STRICT, lim);
		size_t used;
		CHECK(attr_reader_feed(r, out.buf, out.len, &used) == ATTR_DONE);
		CHECK(used == out.len);
		attr_msg_t *m2 = attr_reader_take(r);
		attr_msg_encode(&again, m2);
		CHECK(again.len == out.len && memcmp(again.buf, out.buf, out.len) == 0);
		attr_msg_free(m2);
		attr_reader_free(r);
	}
	str_release(&out);
	str_release(&again);
}

/* Reads up to MAX_MSGS messages from data, in chunks when seed != 0;
 * returns how many outcomes were recorded. */
static int run(const uint8_t *data, size_t size, const attr_spec_t *spec,
	int flags, const attr_limits_t *lim, uint32_t seed, struct outcome *o)
{
	attr_reader_t *r = attr_reader_new(spec, flags, lim);
	size_t off = 0;
	int n = 0;

	while (n < MAX_MSGS) {
		size_t start = off, used;
		enum attr_result res = ATTR_NEED_MORE;
		while (res == ATTR_NEED_MORE && off < size) {
			size_t chunk = size - off;
			if (seed != 0) {
				uint32_t x = next_rand(&seed);
				/* Mostly small chunks, sometimes big ones. */
				size_t c = (x & 3) == 0 ? (x >> 4) % 4096 : (x >> 4) % 8;
				if (c == 0)
					c = 1;
				if (c < chunk)
					chunk = c;
			}
			res = attr_reader_feed(r, data + off, chunk, &used);
			CHECK(used <= chunk);
			CHECK(res != ATTR_NEED_MORE || used == chunk);
			off += used;
		}
		o[n].res = res;
		o[n].used = off - start;
		o[n].err = (str_t)STR_INIT;
		str_set(&o[n].err, attr_reader_error(r));
		n++;
		if (res != ATTR_DONE) {
			CHECK((res == ATTR_ERROR) == (attr_reader_errcode(r) != ATTR_E_NONE));
			CHECK(res != ATTR_ERROR || o[n - 1].err.len > 0);
			break;
		}
		attr_msg_t *m = attr_reader_take(r);
		CHECK(m != NULL);
		if (seed == 0)
			check_encoding(m, data + start, off - start, spec, lim, spec == NULL);
		attr_msg_free(m);
	}
	attr_reader_free(r);
	return n;
}

static void both_ways(const uint8_t *data, size_t size, const attr_spec_t *spec,
	int flags, const attr_limits_t *lim, uint32_t seed)
{
	struct outcome whole[MAX_MSGS], chunked[MAX_MSGS];
	int n1 = run(data, size, spec, flags, lim, 0, whole);
	int n2 = run(data, size, spec, flags, lim, seed | 1, chunked);

	CHECK(n1 == n2);
	for (int i = 0; i < n1; i++) {
		CHECK(whole[i].res == chunked[i].res);
		CHECK(whole[i].used == chunked[i].used);
		CHECK(strcmp(str_cstr(&whole[i].err), str_cstr(&chunked[i].err)) == 0);
		str_release(&whole[i].err);
		str_release(&chunked[i].err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The chunk sizes follow from the input, so a crash reproduces. */
	uint32_t seed = 2166136261u;
	for (size_t i = 0; i < size; i++)
		seed = (seed ^ data[i]) * 16777619u;

	both_ways(data, size, NULL, ATTR_READ_STRICT, NULL, seed);
	both_ways(data, size, req_spec, ATTR_READ_STRICT, NULL, seed);
	both_ways(data, size, req_spec, ATTR_READ_LENIENT, NULL, seed);
	both_ways(data, size, NULL, ATTR_READ_STRICT, &tiny, seed);
	both_ways(data, size, req_spec, ATTR_READ_LENIENT, &tiny, seed);
	return 0;
}
