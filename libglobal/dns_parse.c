/* DNS reply parser.  The packet comes from the network and is trusted for
 * nothing: every read is checked against its length, every count is
 * checked against what the packet holds, and the whole packet must parse
 * (header, question, answer, authority and additional sections, and
 * nothing after them) before any record is believed. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "dns.h"
#include "mem.h"

#define HDR_LEN		12
/* Most compression jumps in one name.  Jumps must strictly decrease, so
 * they end anyway; this keeps the work per name small as well. */
#define MAX_JUMPS	64

/* One answer-section record of a kind we keep (class IN, type A, AAAA,
 * MX or CNAME), before selection. */
typedef struct raw_rr {
	char *owner;
	uint16_t type;
	uint32_t ttl;
	unsigned pref;
	char *name;		/* MX exchange, CNAME target */
	unsigned char addr[16];
} raw_rr_t;

const char *dns_status_str(enum dns_status s)
{
	switch (s) {
	case DNS_FOUND: return "found";
	case DNS_NXDOMAIN: return "host not found";
	case DNS_NODATA: return "no data";
	case DNS_TEMPFAIL: return "temporary failure";
	case DNS_MALFORMED: return "malformed reply";
	}
	return "unknown status";
}

const char *dns_type_str(uint16_t type, char *buf, size_t size)
{
	switch (type) {
	case DNS_T_A: return "A";
	case DNS_T_CNAME: return "CNAME";
	case DNS_T_MX: return "MX";
	case DNS_T_AAAA: return "AAAA";
	}
	bfmt(buf, size, "TYPE%u", (unsigned)type);
	return buf;
}

static const char *rcode_str(int rcode)
{
	switch (rcode) {
	case 0: return "NOERROR";
	case 1: return "FORMERR";
	case 2: return "SERVFAIL";
	case 3: return "NXDOMAIN";
	case 4: return "NOTIMP";
	case 5: return "REFUSED";
	}
	return NULL;
}

static unsigned get16(const unsigned char *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static void why_set(str_t *why, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void why_set(str_t *why, const char *fmt, ...)
{
	va_list ap;
	if (why == NULL)
		return;
	str_reset(why);
	va_start(ap, fmt);
	str_vcatf(why, fmt, ap);
	va_end(ap);
}

/* Bytes kept as they are in the text form; everything else is \DDD, so
 * a label's dots, backslashes and control bytes cannot fake structure or
 * reach a log line raw. */
static bool plain_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int dns_name_read(const unsigned char *pkt, size_t len, size_t *offp,
    char *out, size_t outsize, str_t *why)
{
	size_t pos = *offp, limit = *offp, next = 0, o = 0, wire = 0;
	int jumps = 0;

	if (outsize < 2) {
		why_set(why, "name buffer too small");
		return -1;
	}
	for (;;) {
		if (pos >= len) {
			why_set(why, "name at offset %zu runs past the end of the packet", *offp);
			return -1;
		}
		unsigned c = pkt[pos];
		if ((c & 0xC0) == 0xC0) {
			if (pos + 1 >= len) {
				why_set(why, "compression pointer at offset %zu cut by the end of the packet", pos);
				return -1;
			}
			size_t target = (size_t)(c & 0x3F) << 8 | pkt[pos + 1];
			/* Backwards only, and before the previous jump's
			 * target: a chain of such jumps cannot loop. */
			if (target >= limit) {
				why_set(why, "compression pointer at offset %zu to offset %zu %s",
				    pos, target, target >= pos ? "does not point backwards" : "loops");
				return -1;
			}
			if (target < HDR_LEN) {
				why_set(why, "compression pointer at offset %zu points into the header", pos);
				return -1;
			}
			if (++jumps > MAX_JUMPS) {
				why_set(why, "name at offset %zu has more than %d compression pointers",
				    *offp, MAX_JUMPS);
				return -1;
			}
			if (next == 0)
				next = pos + 2;
			limit = target;
			pos = target;
			continue;
		}
		if (c & 0xC0) {
			why_set(why, "label at offset %zu: length byte 0x%02x (a label is at most 63 bytes; extended label types are not supported)",
			    pos, c);
			return -1;
		}
		if (c == 0) {
			if (next == 0)
				next = pos + 1;
			break;
		}
		if (pos + 1 + c > len) {
			why_set(why, "label at offset %zu runs past the end of the packet", pos);
			return -1;
		}
		wire += 1 + c;
		if (wire + 1 > DNS_NAME_WIRE_MAX) {
			why_set(why, "name at offset %zu is longer than %d bytes", *offp,
			    DNS_NAME_WIRE_MAX);
			return -1;
		}
		if (o > 0)
			out[o++] = '.';
		for (unsigned i = 1; i <= c; i++) {
			unsigned char b = pkt[pos + i];
			/* Room for \DDD, a dot and the NUL. */
			if (o + 6 > outsize) {
				why_set(why, "name at offset %zu does not fit the buffer", *offp);
				return -1;
			}
			if (plain_byte(b)) {
				out[o++] = (char)b;
			} else {
				out[o++] = '\\';
				out[o++] = (char)('0' + b / 100);
				out[o++] = (char)('0' + b / 10 % 10);
				out[o++] = (char)('0' + b % 10);
			}
		}
		pos += 1 + c;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	*offp = next;
	return 0;
}

bool dns_name_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 1 && a[la - 1] == '.')
		la--;
	if (lb > 1 && b[lb - 1] == '.')
		lb--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

bool dns_valid_hostname(const char *name)
{
	size_t len = strlen(name), label = 0;

	if (len > 1 && name[len - 1] == '.')
		len--;
	if (len == 0 || len > 253)
		return false;
	for (size_t i = 0; i <= len; i++) {
		unsigned char c = i < len ? (unsigned char)name[i] : '.';
		if (c == '.') {
			if (label == 0 || label > 63 || name[i - 1] == '-')
				return false;
			label = 0;
		} else if (plain_byte(c)) {
			if (label == 0 && c == '-')
				return false;
			label++;
		} else {
			return false;
		}
	}
	return true;
}

static void raw_free(raw_rr_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].owner);
		free(v[i].name);
	}
	free(v);
}

void dns_reply_free(dns_reply_t *reply)
{
	for (size_t i = 0; i < reply->nrr; i++)
		free(reply->rr[i].name);
	free(reply->rr);
	free(reply->canon);
	*reply = (dns_reply_t)DNS_REPLY_INIT;
}

static const char *section_name(int s)
{
	static const char *const names[] = { "question", "answer", "authority", "additional" };
	return names[s];
}

/* Parses the whole packet; keeps the answer section's records of kinds we
 * use in *rawp.  Returns 0, or -1 with a reason. */
static int parse_packet(const unsigned char *pkt, size_t len, char *qname_out,
    unsigned *qtype_out, raw_rr_t **rawp, size_t *nrawp, str_t *why)
{
	char name[DNS_NAME_TEXTLEN], rdname[DNS_NAME_TEXTLEN];
	unsigned counts[4];
	size_t pos = HDR_LEN, nraw = 0;
	raw_rr_t *raw = NULL;
	str_t err = STR_INIT;

	*rawp = NULL;
	*nrawp = 0;
	if (len < HDR_LEN) {
		why_set(why, "packet of %zu bytes is shorter than a header", len);
		return -1;
	}
	if ((pkt[2] & 0x80) == 0) {
		why_set(why, "packet is a query, not a reply");
		return -1;
	}
	if (((pkt[2] >> 3) & 0x0F) != 0) {
		why_set(why, "reply has opcode %u, not QUERY", (pkt[2] >> 3) & 0x0F);
		return -1;
	}
	for (int s = 0; s < 4; s++)
		counts[s] = get16(pkt + 4 + 2 * s);
	if (counts[0] != 1) {
		why_set(why, "reply has %u questions, not 1", counts[0]);
		return -1;
	}
	/* The question. */
	if (dns_name_read(pkt, len, &pos, qname_out, DNS_NAME_TEXTLEN, &err) < 0)
		goto bad_err;
	if (pos + 4 > len) {
		why_set(why, "question cut by the end of the packet");
		goto bad;
	}
	*qtype_out = get16(pkt + pos);
	if (get16(pkt + pos + 2) != DNS_C_IN) {
		why_set(why, "question class %u is not IN", get16(pkt + pos + 2));
		goto bad;
	}
	pos += 4;

	/* Every record of the other sections is read; only the answer
	 * section's are kept.  Each record takes at least 11 bytes, so a
	 * count the packet cannot hold fails at the end of the packet. */
	for (int s = 1; s < 4; s++) {
		for (unsigned i = 0; i < counts[s]; i++) {
			size_t rstart = pos;
			if (dns_name_read(pkt, len, &pos, name, sizeof(name), &err) < 0)
				goto bad_err;
			if (pos + 10 > len) {
				why_set(why, "%s record %u at offset %zu cut by the end of the packet",
				    section_name(s), i + 1, rstart);
				goto bad;
			}
			unsigned type = get16(pkt + pos), class = get16(pkt + pos + 2);
			uint32_t ttl = get32(pkt + pos + 4);
			size_t rdlen = get16(pkt + pos + 8);
			size_t rd = pos + 10;
			if (rd + rdlen > len) {
				why_set(why, "%s record %u: data of %zu bytes runs past the end of the packet",
				    section_name(s), i + 1, rdlen);
				goto bad;
			}
			pos = rd + rdlen;
			bool keep = s == 1 && class == DNS_C_IN;
			raw_rr_t r = { .type = (uint16_t)type, .ttl = ttl };
			char tb[16];
			switch (type) {
			case DNS_T_A:
			case DNS_T_AAAA:
				if (class == DNS_C_IN && rdlen != (type == DNS_T_A ? 4u : 16u)) {
					why_set(why, "%s record %u: %s record with %zu bytes of data, not %u",
					    section_name(s), i + 1, dns_type_str((uint16_t)type, tb, sizeof(tb)),
					    rdlen, type == DNS_T_A ? 4 : 16);
					goto bad;
				}
				if (keep)
					memcpy(r.addr, pkt + rd, rdlen);
				break;
			case DNS_T_MX:
			case DNS_T_CNAME: {
				/* The name must fill the data exactly. */
				size_t np = rd;
				if (type == DNS_T_MX) {
					if (rdlen < 3) {
						why_set(why, "%s record %u: MX record with %zu bytes of data",
						    section_name(s), i + 1, rdlen);
						goto bad;
					}
					r.pref = get16(pkt + rd);
					np += 2;
				}
				/* Read within the record's data only: a name
				 * may point back anywhere, but its own labels
				 * must not run past the data. */
				if (dns_name_read(pkt, rd + rdlen, &np, rdname, sizeof(rdname), &err) < 0)
					goto bad_err;
				if (np != rd + rdlen) {
					why_set(why, "%s record %u: %s name ends %zu bytes before its data",
					    section_name(s), i + 1,
					    dns_type_str((uint16_t)type, tb, sizeof(tb)), rd + rdlen - np);
					goto bad;
				}
				if (keep)
					r.name = xstrdup(rdname);
				break;
			}
			default:
				keep = false;
				break;
			}
			if (keep) {
				r.owner = xstrdup(name);
				raw = xreallocarray(raw, nraw + 1, sizeof(*raw));
				raw[nraw++] = r;
			}
		}
	}
	if (pos != len) {
		why_set(why, "%zu bytes after the last record", len - pos);
		goto bad;
	}
	str_release(&err);
	*rawp = raw;
	*nrawp = nraw;
	return 0;

bad_err:
	why_set(why, "%s", str_cstr(&err));
bad:
	str_release(&err);
	raw_free(raw, nraw);
	return -1;
}

enum dns_status dns_parse_reply(const unsigned char *pkt, size_t len,
    const char *qname, uint16_t qtype, dns_reply_t *reply, str_t *why)
{
	char pq[DNS_NAME_TEXTLEN], tb[16], tb2[16];
	unsigned pqtype = 0;
	raw_rr_t *raw;
	size_t nraw;
	str_t err = STR_INIT;
	enum dns_status st;

	*reply = (dns_reply_t)DNS_REPLY_INIT;
	if (why != NULL)
		str_reset(why);
	if (parse_packet(pkt, len, pq, &pqtype, &raw, &nraw, &err) < 0) {
		why_set(why, "malformed DNS reply: %s", str_cstr(&err));
		str_release(&err);
		return DNS_MALFORMED;
	}
	str_release(&err);
	if (qname == NULL)
		qname = pq;
	if (!dns_name_equal(pq, qname) || pqtype != qtype) {
		why_set(why, "malformed DNS reply: it answers %s/%s, not %s/%s", pq,
		    dns_type_str((uint16_t)pqtype, tb, sizeof(tb)), qname,
		    dns_type_str(qtype, tb2, sizeof(tb2)));
		raw_free(raw, nraw);
		return DNS_MALFORMED;
	}
	reply->rcode = pkt[3] & 0x0F;
	if (pkt[2] & 0x02) {
		/* The resolver retries a truncated reply over TCP; one
		 * that still comes back cut holds an unknown part of the
		 * answer. */
		why_set(why, "DNS reply truncated (TC bit set)");
		st = DNS_TEMPFAIL;
	} else if (reply->rcode == 3) {
		why_set(why, "NXDOMAIN");
		st = DNS_NXDOMAIN;
	} else if (reply->rcode != 0) {
		const char *rs = rcode_str(reply->rcode);
		if (rs != NULL)
			why_set(why, "server reply %s", rs);
		else
			why_set(why, "server reply with rcode %d", reply->rcode);
		st = DNS_TEMPFAIL;
	} else {
		/* Follow CNAMEs from qname, then take the records of
		 * qtype for the name reached. */
		const char *cur = qname;
		st = DNS_NODATA;
		for (int hops = 0;; hops++) {
			size_t nfound = 0;
			const char *cname = NULL;
			for (size_t i = 0; i < nraw; i++) {
				if (!dns_name_equal(raw[i].owner, cur))
					continue;
				if (raw[i].type == qtype)
					nfound++;
				else if (raw[i].type == DNS_T_CNAME && cname == NULL)
					cname = raw[i].name;
			}
			if (nfound > 0) {
				reply->rr = xcalloc(nfound, sizeof(*reply->rr));
				for (size_t i = 0; i < nraw; i++) {
					if (raw[i].type != qtype || !dns_name_equal(raw[i].owner, cur))
						continue;
					dns_rr_t *r = &reply->rr[reply->nrr++];
					r->type = raw[i].type;
					r->ttl = raw[i].ttl;
					r->pref = raw[i].pref;
					memcpy(r->addr, raw[i].addr, sizeof(r->addr));
					if (raw[i].name != NULL)
						r->name = xstrdup(raw[i].name);
				}
				st = DNS_FOUND;
				break;
			}
			if (cname == NULL) {
				why_set(why, "no %s record", dns_type_str(qtype, tb, sizeof(tb)));
				break;
			}
			if (hops >= DNS_CNAME_MAX) {
				why_set(why, "malformed DNS reply: more than %d CNAMEs from %s (a loop?)",
				    DNS_CNAME_MAX, qname);
				st = DNS_MALFORMED;
				break;
			}
			cur = cname;
		}
		reply->canon = xstrdup(cur);
	}
	if (reply->canon == NULL)
		reply->canon = xstrdup(qname);
	raw_free(raw, nraw);
	return st;
}
