/* A small DNS message builder for the DNS unit tests: enough to write
 * valid replies by hand and then break them on purpose.  Every writer
 * checks the buffer bound (a test bug aborts, it does not overflow). */
#ifndef T_DNS_PKT_H
#define T_DNS_PKT_H
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pkt {
	unsigned char b[8192];
	size_t n;
} pkt_t;

#define SEC_QD 0
#define SEC_AN 1
#define SEC_NS 2
#define SEC_AR 3

static inline void p_room(pkt_t *p, size_t k)
{
	if (p->n + k > sizeof(p->b)) {
		fprintf(stderr, "t_dns_pkt: test packet too big\n");
		abort();
	}
}

static inline void p_u8(pkt_t *p, unsigned v)
{
	p_room(p, 1);
	p->b[p->n++] = (unsigned char)v;
}

static inline void p_u16(pkt_t *p, unsigned v)
{
	p_u8(p, v >> 8 & 0xFF);
	p_u8(p, v & 0xFF);
}

static inline void p_u32(pkt_t *p, uint32_t v)
{
	p_u16(p, v >> 16);
	p_u16(p, v & 0xFFFF);
}

static inline void p_bytes(pkt_t *p, const void *d, size_t k)
{
	p_room(p, k);
	memcpy(p->b + p->n, d, k);
	p->n += k;
}

/* Labels of a dotted name, without the terminating zero. */
static inline void p_labels(pkt_t *p, const char *name)
{
	const char *cp = name;
	while (*cp != '\0' && strcmp(cp, ".") != 0) {
		const char *dot = strchr(cp, '.');
		size_t len = dot ? (size_t)(dot - cp) : strlen(cp);
		p_u8(p, (unsigned)len);
		p_bytes(p, cp, len);
		cp += len;
		if (*cp == '.')
			cp++;
	}
}

/* A whole uncompressed name ("." or "" is the root); returns its offset. */
static inline size_t p_name(pkt_t *p, const char *name)
{
	size_t at = p->n;
	p_labels(p, name);
	p_u8(p, 0);
	return at;
}

/* Labels of prefix (may be "") followed by a pointer to offset target. */
static inline size_t p_name_ptr(pkt_t *p, const char *prefix, size_t target)
{
	size_t at = p->n;
	p_labels(p, prefix);
	p_u16(p, 0xC000 | (unsigned)target);
	return at;
}

/* Header: a reply (QR) with RD and RA, the rcode, and counts of zero
 * (set them with p_count after adding records). */
static inline void p_header(pkt_t *p, unsigned id, unsigned rcode)
{
	p->n = 0;
	p_u16(p, id);
	p_u8(p, 0x81);		/* QR, opcode 0, RD */
	p_u8(p, 0x80 | (rcode & 0x0F));	/* RA, rcode */
	p_u16(p, 0);
	p_u16(p, 0);
	p_u16(p, 0);
	p_u16(p, 0);
}

static inline void p_count(pkt_t *p, int section, unsigned count)
{
	p->b[4 + 2 * section] = (unsigned char)(count >> 8);
	p->b[5 + 2 * section] = (unsigned char)count;
}

static inline unsigned p_get_count(const pkt_t *p, int section)
{
	return (unsigned)p->b[4 + 2 * section] << 8 | p->b[5 + 2 * section];
}

/* A reply header plus the question; returns the question name's offset
 * (for compression pointers). */
static inline size_t p_reply(pkt_t *p, const char *qname, unsigned qtype,
    unsigned rcode)
{
	size_t at;
	p_header(p, 0x1234, rcode);
	at = p_name(p, qname);
	p_u16(p, qtype);
	p_u16(p, 1);
	p_count(p, SEC_QD, 1);
	return at;
}

/* Fixed part of a record after its owner name; returns the offset of
 * rdlength, to be filled by p_rr_end(). */
static inline size_t p_rr_fixed(pkt_t *p, unsigned type, unsigned class,
    uint32_t ttl)
{
	size_t at;
	p_u16(p, type);
	p_u16(p, class);
	p_u32(p, ttl);
	at = p->n;
	p_u16(p, 0);
	return at;
}

static inline void p_rr_end(pkt_t *p, size_t rdlen_at)
{
	size_t len = p->n - rdlen_at - 2;
	p->b[rdlen_at] = (unsigned char)(len >> 8);
	p->b[rdlen_at + 1] = (unsigned char)len;
}

static inline void p_bump(pkt_t *p, int section)
{
	p_count(p, section, p_get_count(p, section) + 1);
}

/* Whole records with an uncompressed owner. */
static inline void p_a(pkt_t *p, int section, const char *owner, const char *addr)
{
	unsigned char a[4];
	if (inet_pton(AF_INET, addr, a) != 1)
		abort();
	p_name(p, owner);
	size_t rl = p_rr_fixed(p, 1, 1, 300);
	p_bytes(p, a, 4);
	p_rr_end(p, rl);
	p_bump(p, section);
}

static inline void p_aaaa(pkt_t *p, int section, const char *owner, const char *addr)
{
	unsigned char a[16];
	if (inet_pton(AF_INET6, addr, a) != 1)
		abort();
	p_name(p, owner);
	size_t rl = p_rr_fixed(p, 28, 1, 300);
	p_bytes(p, a, 16);
	p_rr_end(p, rl);
	p_bump(p, section);
}

static inline void p_mx(pkt_t *p, int section, const char *owner, unsigned pref,
    const char *exchange)
{
	p_name(p, owner);
	size_t rl = p_rr_fixed(p, 15, 1, 300);
	p_u16(p, pref);
	p_name(p, exchange);
	p_rr_end(p, rl);
	p_bump(p, section);
}

static inline void p_cname(pkt_t *p, int section, const char *owner, const char *target)
{
	p_name(p, owner);
	size_t rl = p_rr_fixed(p, 5, 1, 300);
	p_name(p, target);
	p_rr_end(p, rl);
	p_bump(p, section);
}

#endif
