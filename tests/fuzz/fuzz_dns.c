/* libFuzzer target for the DNS reply parser and the MX logic on top of it
 * (libglobal/dns_parse.c, dns_mx.c).
 *
 * 1. The input is a reply, parsed for MX, A and AAAA with the question
 *    taken from the packet.  Besides the sanitizers' checks it aborts
 *    when:
 *    - a status other than "found" comes with records, or without a
 *      reason; "found" comes without records, or with records of another
 *      type, or with a name that is not NUL-terminated in its buffer;
 *    - a parse is not repeatable (same input, same outcome);
 *    - a reply that was read to its end (any status but "malformed") is
 *      not malformed when cut by one byte or lengthened by one byte: a
 *      part of a reply, or a reply with junk after it, is never believed.
 * 2. The input's header and everything after its question become the
 *    reply to every query dns_find_servers() makes for "example.com"
 *    (with the question rewritten to match), so the MX ordering, pruning
 *    and limits run on arbitrary records.  It aborts when a success has
 *    no servers, servers out of preference order, more than the address
 *    limit, or a bad host name; or a failure has servers, no reason, or
 *    a DSN class other than 4 for defer and 5 for bounce. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dns.h"

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "fuzz_dns: check failed at line %d: %s\n", __LINE__, #cond); \
	abort(); } } while (0)

static void check_reply(const uint8_t *data, size_t size, uint16_t qtype)
{
	dns_reply_t r, r2;
	str_t why = STR_INIT, why2 = STR_INIT;
	enum dns_status st = dns_parse_reply(data, size, NULL, qtype, &r, &why);
	enum dns_status st2 = dns_parse_reply(data, size, NULL, qtype, &r2, &why2);

	CHECK(st == st2);
	CHECK(r.nrr == r2.nrr);
	CHECK(strcmp(str_cstr(&why), str_cstr(&why2)) == 0);
	if (st == DNS_FOUND) {
		CHECK(r.nrr > 0);
		CHECK(r.canon != NULL);
		for (size_t i = 0; i < r.nrr; i++) {
			CHECK(r.rr[i].type == qtype);
			if (qtype == DNS_T_MX) {
				CHECK(r.rr[i].name != NULL);
				CHECK(strlen(r.rr[i].name) < DNS_NAME_TEXTLEN);
				CHECK(r.rr[i].pref <= 65535);
			}
		}
	} else {
		CHECK(r.nrr == 0 && r.rr == NULL);
		CHECK(str_len(&why) > 0);
	}
	if (st != DNS_MALFORMED) {
		/* The whole packet was read: a byte less or more breaks it. */
		uint8_t *copy = malloc(size + 1);
		CHECK(copy != NULL);
		memcpy(copy, data, size);
		dns_reply_free(&r2);
		CHECK(size > 0);
		CHECK(dns_parse_reply(copy, size - 1, NULL, qtype, &r2, &why2) == DNS_MALFORMED);
		dns_reply_free(&r2);
		copy[size] = 0;
		CHECK(dns_parse_reply(copy, size + 1, NULL, qtype, &r2, &why2) == DNS_MALFORMED);
		free(copy);
	}
	dns_reply_free(&r);
	dns_reply_free(&r2);
	str_release(&why);
	str_release(&why2);
}

/* The fuzz input as the answer to any question. */
struct canned {
	const uint8_t *data;
	size_t size;
	size_t rest;		/* where the input's own question ends */
	int queries;
};

static ssize_t canned_transport(void *ctx, const char *name, uint16_t type,
    unsigned char *buf, size_t size)
{
	struct canned *c = ctx;
	size_t n = 0;
	const char *cp = name;

	c->queries++;
	if (c->size < 12 || size < 12 + 260 + 4 + c->size)
		return 0;
	memcpy(buf, c->data, 12);
	buf[4] = 0;
	buf[5] = 1;
	n = 12;
	while (*cp != '\0') {
		const char *dot = strchr(cp, '.');
		size_t len = dot ? (size_t)(dot - cp) : strlen(cp);
		if (len == 0 || len > 63)
			break;
		buf[n++] = (unsigned char)len;
		memcpy(buf + n, cp, len);
		n += len;
		cp += len;
		if (*cp == '.')
			cp++;
	}
	buf[n++] = 0;
	buf[n++] = (unsigned char)(type >> 8);
	buf[n++] = (unsigned char)type;
	buf[n++] = 0;
	buf[n++] = 1;
	memcpy(buf + n, c->data + c->rest, c->size - c->rest);
	return (ssize_t)(n + c->size - c->rest);
}

static uint32_t fixed_rand(void *ctx)
{
	uint32_t *s = ctx;
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void check_servers(const uint8_t *data, size_t size)
{
	struct canned c = { data, size, 12, 0 };
	char qn[DNS_NAME_TEXTLEN];
	size_t off = 12;
	dns_nexthop_t nh;
	dns_opts_t o;
	dns_servers_t out;
	struct sockaddr_storage own;
	str_t why = STR_INIT;
	uint32_t seed = 1;

	if (size < 13)
		return;
	if (dns_name_read(data, size, &off, qn, sizeof(qn), NULL) == 0 && off + 4 <= size)
		c.rest = off + 4;
	dns_resolver_t *r = dns_resolver_new(NULL, NULL);
	dns_resolver_set_transport(r, canned_transport, &c);
	memset(&o, 0, sizeof(o));
	o.lookup = DNS_LOOKUP_DNS;
	o.families = (data[size - 1] & 3) == 0 ? DNS_INET4 | DNS_INET6 : data[size - 1] & 3;
	o.prefer = (enum dns_addr_pref)((data[size - 1] >> 2) % 3);
	o.address_limit = (data[size - 1] >> 4) & 7;
	o.defer_if_no_mx_address = data[size - 1] & 0x80;
	o.myhostname = "a.example.com";
	memset(&own, 0, sizeof(own));
	CHECK(sock_addr_parse("127.0.0.1", 0, &own, NULL) == 0);
	o.own_addrs = &own;
	o.n_own_addrs = 1;
	o.rand = fixed_rand;
	o.rand_ctx = &seed;
	o.resolver = r;
	CHECK(dns_nexthop_parse("example.com", 25, &nh, &why) == 0);

	enum dns_result res = dns_find_servers(&nh, &o, &out);
	CHECK(res == out.result);
	if (res == DNS_RESULT_OK) {
		CHECK(out.n > 0);
		CHECK(o.address_limit == 0 || out.n <= o.address_limit);
		for (size_t i = 0; i < out.n; i++) {
			CHECK(dns_valid_hostname(out.v[i].hostname));
			CHECK(out.v[i].port == 25);
			CHECK(out.v[i].addrlen > 0);
			CHECK(out.v[i].addr.ss_family == AF_INET ? (o.families & DNS_INET4) :
			    (o.families & DNS_INET6));
			if (i > 0)
				CHECK(out.v[i].pref >= out.v[i - 1].pref);
		}
	} else {
		CHECK(out.n == 0);
		CHECK(str_len(&out.reason) > 0);
		CHECK(out.dsn[0] == (res == DNS_RESULT_DEFER ? '4' : '5'));
	}
	/* One MX query, then at most two address queries per host, for a
	 * bounded number of hosts. */
	CHECK(c.queries <= 1 + 2 * 50);
	dns_servers_free(&out);
	dns_resolver_free(r);
	str_release(&why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_reply(data, size, DNS_T_MX);
	check_reply(data, size, DNS_T_A);
	check_reply(data, size, DNS_T_AAAA);
	check_servers(data, size);
	return 0;
}
