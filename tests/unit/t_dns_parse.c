/* Unit tests of the DNS reply parser (libglobal/dns_parse.c) on packets
 * built here: valid replies, and every way of breaking one that the
 * parser must catch.  No network. */
#include <atf-c.h>
#include <arpa/inet.h>
#include <string.h>
#include "dns.h"
#include "t_dns_pkt.h"

/* Parses p as the reply to qname/qtype; the reason is kept in why. */
static enum dns_status parse(const pkt_t *p, const char *qname, uint16_t qtype,
    dns_reply_t *r, str_t *why)
{
	return dns_parse_reply(p->b, p->n, qname, qtype, r, why);
}

/* Expects DNS_MALFORMED with a reason containing frag. */
static void expect_malformed(const pkt_t *p, const char *qname, uint16_t qtype,
    const char *frag)
{
	dns_reply_t r;
	str_t why = STR_INIT;
	enum dns_status st = parse(p, qname, qtype, &r, &why);

	ATF_CHECK_EQ_MSG(st, DNS_MALFORMED, "status %s (%s), expected malformed (%s)",
	    dns_status_str(st), str_cstr(&why), frag);
	ATF_CHECK_MSG(strstr(str_cstr(&why), frag) != NULL,
	    "reason \"%s\" lacks \"%s\"", str_cstr(&why), frag);
	ATF_CHECK(r.nrr == 0 && r.rr == NULL);
	dns_reply_free(&r);
	str_release(&why);
}

/* An MX reply using compression the way servers do: exchange names end in
 * a pointer to the question's domain, additional A/AAAA records have
 * compressed owners. */
static void build_mx_reply(pkt_t *p)
{
	size_t q = p_reply(p, "example.com", DNS_T_MX, 0);
	size_t dom = q + 8;	/* "example.com" inside the question name */
	size_t rl, mx1, mx2;

	(void)dom;
	p_name_ptr(p, "", q);
	rl = p_rr_fixed(p, DNS_T_MX, 1, 3600);
	p_u16(p, 20);
	mx2 = p->n;
	p_name_ptr(p, "mx2", q);
	p_rr_end(p, rl);
	p_name_ptr(p, "", q);
	rl = p_rr_fixed(p, DNS_T_MX, 1, 3600);
	p_u16(p, 10);
	mx1 = p->n;
	p_name_ptr(p, "mx1", q);
	p_rr_end(p, rl);
	p_count(p, SEC_AN, 2);
	/* Authority: NS with a compressed name. */
	p_name_ptr(p, "", q);
	rl = p_rr_fixed(p, 2, 1, 3600);
	p_name_ptr(p, "ns", q);
	p_rr_end(p, rl);
	p_count(p, SEC_NS, 1);
	/* Additional: addresses of the exchanges, owners as pointers. */
	p_name_ptr(p, "", mx1);
	rl = p_rr_fixed(p, DNS_T_A, 1, 3600);
	p_bytes(p, "\xC0\x00\x02\x01", 4);
	p_rr_end(p, rl);
	p_name_ptr(p, "", mx2);
	rl = p_rr_fixed(p, DNS_T_AAAA, 1, 3600);
	p_bytes(p, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x02", 16);
	p_rr_end(p, rl);
	p_count(p, SEC_AR, 2);
}

ATF_TC_WITHOUT_HEAD(mx_valid);
ATF_TC_BODY(mx_valid, tc)
{
	pkt_t p;
	dns_reply_t r;
	str_t why = STR_INIT;

	build_mx_reply(&p);
	ATF_REQUIRE_EQ_MSG(parse(&p, "example.com", DNS_T_MX, &r, &why), DNS_FOUND,
	    "%s", str_cstr(&why));
	ATF_REQUIRE_EQ(r.nrr, 2);
	ATF_CHECK_EQ(r.rcode, 0);
	ATF_CHECK_EQ(r.rr[0].type, DNS_T_MX);
	ATF_CHECK_EQ(r.rr[0].pref, 20);
	ATF_CHECK_STREQ(r.rr[0].name, "mx2.example.com");
	ATF_CHECK_EQ(r.rr[0].ttl, 3600);
	ATF_CHECK_EQ(r.rr[1].pref, 10);
	ATF_CHECK_STREQ(r.rr[1].name, "mx1.example.com");
	ATF_CHECK_STREQ(r.canon, "example.com");
	dns_reply_free(&r);

	/* The question name matches without regard to case or a
	 * trailing dot; NULL takes the reply's own question. */
	ATF_CHECK_EQ(parse(&p, "EXAMPLE.Com.", DNS_T_MX, &r, &why), DNS_FOUND);
	dns_reply_free(&r);
	ATF_CHECK_EQ(parse(&p, NULL, DNS_T_MX, &r, &why), DNS_FOUND);
	dns_reply_free(&r);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(a_aaaa_valid);
ATF_TC_BODY(a_aaaa_valid, tc)
{
	pkt_t p;
	dns_reply_t r;
	str_t why = STR_INIT;
	char text[64];

	p_reply(&p, "host.example.com", DNS_T_A, 0);
	p_a(&p, SEC_AN, "host.example.com", "192.0.2.1");
	p_a(&p, SEC_AN, "HOST.example.com", "192.0.2.2");
	p_aaaa(&p, SEC_AN, "host.example.com", "2001:db8::1");	/* other type: ignored */
	p_a(&p, SEC_AN, "other.example.com", "192.0.2.9");	/* other owner: ignored */
	ATF_REQUIRE_EQ_MSG(parse(&p, "host.example.com", DNS_T_A, &r, &why), DNS_FOUND,
	    "%s", str_cstr(&why));
	ATF_REQUIRE_EQ(r.nrr, 2);
	inet_ntop(AF_INET, r.rr[0].addr, text, sizeof(text));
	ATF_CHECK_STREQ(text, "192.0.2.1");
	inet_ntop(AF_INET, r.rr[1].addr, text, sizeof(text));
	ATF_CHECK_STREQ(text, "192.0.2.2");
	dns_reply_free(&r);

	p_reply(&p, "host.example.com", DNS_T_AAAA, 0);
	p_aaaa(&p, SEC_AN, "host.example.com", "2001:db8::1");
	ATF_REQUIRE_EQ(parse(&p, "host.example.com", DNS_T_AAAA, &r, &why), DNS_FOUND);
	ATF_REQUIRE_EQ(r.nrr, 1);
	inet_ntop(AF_INET6, r.rr[0].addr, text, sizeof(text));
	ATF_CHECK_STREQ(text, "2001:db8::1");
	dns_reply_free(&r);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(rcodes);
ATF_TC_BODY(rcodes, tc)
{
	static const struct { unsigned rcode; enum dns_status st; const char *why; } t[] = {
		{ 3, DNS_NXDOMAIN, "NXDOMAIN" },
		{ 2, DNS_TEMPFAIL, "SERVFAIL" },
		{ 5, DNS_TEMPFAIL, "REFUSED" },
		{ 1, DNS_TEMPFAIL, "FORMERR" },
		{ 4, DNS_TEMPFAIL, "NOTIMP" },
		{ 9, DNS_TEMPFAIL, "rcode 9" },
	};
	pkt_t p;
	dns_reply_t r;
	str_t why = STR_INIT;

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		p_reply(&p, "example.com", DNS_T_MX, t[i].rcode);
		ATF_CHECK_EQ_MSG(parse(&p, "example.com", DNS_T_MX, &r, &why), t[i].st,
		    "rcode %u", t[i].rcode);
		ATF_CHECK_EQ(r.rcode, (int)t[i].rcode);
		ATF_CHECK_MSG(strstr(str_cstr(&why), t[i].why) != NULL, "%s", str_cstr(&why));
		ATF_CHECK_EQ(r.nrr, 0);
		dns_reply_free(&r);
	}
	/* NOERROR without records of the type: NODATA. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_a(&p, SEC_AN, "example.com", "192.0.2.1");
	ATF_CHECK_EQ(parse(&p, "example.com", DNS_T_MX, &r, &why), DNS_NODATA);
	ATF_CHECK_STREQ(str_cstr(&why), "no MX record");
	dns_reply_free(&r);
	/* A record of class CH is not an IN answer. */
	p_reply(&p, "example.com", DNS_T_A, 0);
	p_name(&p, "example.com");
	size_t rl = p_rr_fixed(&p, DNS_T_A, 3, 0);
	p_bytes(&p, "\x7f\0\0\x01", 4);
	p_rr_end(&p, rl);
	p_count(&p, SEC_AN, 1);
	ATF_CHECK_EQ(parse(&p, "example.com", DNS_T_A, &r, &why), DNS_NODATA);
	dns_reply_free(&r);
	/* Truncated (TC): temporary, whatever it holds. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_mx(&p, SEC_AN, "example.com", 10, "mx.example.com");
	p.b[2] |= 0x02;
	ATF_CHECK_EQ(parse(&p, "example.com", DNS_T_MX, &r, &why), DNS_TEMPFAIL);
	ATF_CHECK(strstr(str_cstr(&why), "truncated") != NULL);
	dns_reply_free(&r);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(cname);
ATF_TC_BODY(cname, tc)
{
	pkt_t p;
	dns_reply_t r;
	str_t why = STR_INIT;
	char name[32];

	/* www -> web -> host, A at host. */
	p_reply(&p, "www.example.com", DNS_T_A, 0);
	p_cname(&p, SEC_AN, "www.example.com", "web.example.com");
	p_cname(&p, SEC_AN, "web.example.com", "host.example.net");
	p_a(&p, SEC_AN, "host.example.net", "192.0.2.7");
	ATF_REQUIRE_EQ_MSG(parse(&p, "www.example.com", DNS_T_A, &r, &why), DNS_FOUND,
	    "%s", str_cstr(&why));
	ATF_CHECK_EQ(r.nrr, 1);
	ATF_CHECK_STREQ(r.canon, "host.example.net");
	dns_reply_free(&r);

	/* A CNAME to a name without the type: NODATA for the target. */
	p_reply(&p, "www.example.com", DNS_T_A, 0);
	p_cname(&p, SEC_AN, "www.example.com", "web.example.com");
	ATF_CHECK_EQ(parse(&p, "www.example.com", DNS_T_A, &r, &why), DNS_NODATA);
	ATF_CHECK_STREQ(r.canon, "web.example.com");
	dns_reply_free(&r);

	/* A loop. */
	p_reply(&p, "a.example.com", DNS_T_A, 0);
	p_cname(&p, SEC_AN, "a.example.com", "b.example.com");
	p_cname(&p, SEC_AN, "b.example.com", "a.example.com");
	expect_malformed(&p, "a.example.com", DNS_T_A, "CNAME");

	/* Chains: DNS_CNAME_MAX hops are followed, one more is not. */
	for (int hops = DNS_CNAME_MAX; hops <= DNS_CNAME_MAX + 1; hops++) {
		p_reply(&p, "c0.example.com", DNS_T_A, 0);
		for (int i = 0; i < hops; i++) {
			char from[32];
			snprintf(from, sizeof(from), "c%d.example.com", i);
			snprintf(name, sizeof(name), "c%d.example.com", i + 1);
			p_cname(&p, SEC_AN, from, name);
		}
		p_a(&p, SEC_AN, name, "192.0.2.8");
		if (hops == DNS_CNAME_MAX) {
			ATF_CHECK_EQ_MSG(parse(&p, "c0.example.com", DNS_T_A, &r, &why),
			    DNS_FOUND, "%s", str_cstr(&why));
			dns_reply_free(&r);
		} else {
			expect_malformed(&p, "c0.example.com", DNS_T_A, "more than");
		}
	}
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(header_and_question);
ATF_TC_BODY(header_and_question, tc)
{
	pkt_t p;

	/* A query, not a reply. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p.b[2] &= 0x7F;
	expect_malformed(&p, "example.com", DNS_T_MX, "query");
	/* Another opcode. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p.b[2] |= 2 << 3;
	expect_malformed(&p, "example.com", DNS_T_MX, "opcode");
	/* Two questions, or none. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_count(&p, SEC_QD, 2);
	expect_malformed(&p, "example.com", DNS_T_MX, "2 questions");
	p_header(&p, 1, 0);
	expect_malformed(&p, "example.com", DNS_T_MX, "0 questions");
	/* The answer to another question. */
	p_reply(&p, "example.org", DNS_T_MX, 0);
	expect_malformed(&p, "example.com", DNS_T_MX, "answers example.org/MX");
	p_reply(&p, "example.com", DNS_T_A, 0);
	expect_malformed(&p, "example.com", DNS_T_MX, "answers example.com/A");
	/* Class CH question. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p.b[p.n - 1] = 3;
	expect_malformed(&p, "example.com", DNS_T_MX, "class");
	/* More records announced than present. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_mx(&p, SEC_AN, "example.com", 10, "mx.example.com");
	p_count(&p, SEC_AN, 2);
	expect_malformed(&p, "example.com", DNS_T_MX, "end of the packet");
	p_count(&p, SEC_AN, 65535);
	expect_malformed(&p, "example.com", DNS_T_MX, "end of the packet");
	/* Bytes after the last record. */
	p_count(&p, SEC_AN, 1);
	p_u8(&p, 0);
	expect_malformed(&p, "example.com", DNS_T_MX, "after the last record");
	/* Shorter than a header. */
	p.n = 11;
	expect_malformed(&p, "example.com", DNS_T_MX, "shorter than a header");
}

ATF_TC_WITHOUT_HEAD(compression_bad);
ATF_TC_BODY(compression_bad, tc)
{
	pkt_t p;
	size_t rl, at;

	/* An owner name pointing at itself. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	at = p.n;
	p_name_ptr(&p, "", at);
	rl = p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_u16(&p, 10);
	p_name(&p, "mx.example.com");
	p_rr_end(&p, rl);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "does not point backwards");

	/* Label then a pointer back to the name's own start: a loop. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	at = p.n;
	p_name_ptr(&p, "x", at);
	p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "loops");

	/* Two names pointing at each other: the first jump is backwards,
	 * the second (to the later name) is not allowed. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	size_t n1 = p.n;
	p_name_ptr(&p, "a", n1 + 4);	/* forward: to n2 */
	ATF_REQUIRE_EQ(p.n, n1 + 4);
	p_name_ptr(&p, "b", n1);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "does not point backwards");
	/* A pointer chain going back and then forward again. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	size_t x = p.n;
	p_name_ptr(&p, "x", x + 4);	/* at x: "x" then pointer to x+4 */
	p_name_ptr(&p, "", x);		/* at x+4: pointer to x */
	p_name_ptr(&p, "", x + 4);	/* the owner: -> x+4 -> x -> x+4 */
	p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "compression pointer");

	/* Pointer beyond the end of the packet (forward, out of bounds). */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_name_ptr(&p, "", 0x3FFF);
	p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "does not point backwards");

	/* Pointer into the header. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_name_ptr(&p, "", 4);
	p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "header");

	/* A pointer cut by the end of the packet. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_u8(&p, 0xC0);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "cut by the end");

	/* In record data: an MX exchange whose pointer points forward. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_name_ptr(&p, "", 12);
	rl = p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_u16(&p, 10);
	p_name_ptr(&p, "mx", p.n + 8);
	p_rr_end(&p, rl);
	p_count(&p, SEC_AN, 1);
	p_name(&p, "example.com");	/* something to point at, after */
	expect_malformed(&p, "example.com", DNS_T_MX, "does not point backwards");
}

ATF_TC_WITHOUT_HEAD(labels_and_length);
ATF_TC_BODY(labels_and_length, tc)
{
	pkt_t p;
	dns_reply_t r;
	str_t why = STR_INIT;
	char l63[64], name[300];
	size_t rl;

	memset(l63, 'a', 63);
	l63[63] = '\0';

	/* A label of 63 is fine; 64 (0x40) and 0x80 length bytes are not. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	snprintf(name, sizeof(name), "%s.example.com", l63);
	p_mx(&p, SEC_AN, "example.com", 10, name);
	ATF_CHECK_EQ_MSG(parse(&p, "example.com", DNS_T_MX, &r, &why), DNS_FOUND,
	    "%s", str_cstr(&why));
	dns_reply_free(&r);
	for (unsigned bad = 0x40; bad <= 0x80; bad += 0x40) {
		p_reply(&p, "example.com", DNS_T_MX, 0);
		p_name(&p, "example.com");
		rl = p_rr_fixed(&p, DNS_T_MX, 1, 1);
		p_u16(&p, 10);
		p_u8(&p, bad);
		for (unsigned i = 0; i < bad; i++)
			p_u8(&p, 'a');
		p_u8(&p, 0);
		p_rr_end(&p, rl);
		p_count(&p, SEC_AN, 1);
		expect_malformed(&p, "example.com", DNS_T_MX, "at most 63 bytes");
	}

	/* 255 bytes on the wire is the most: 3 labels of 63 and one of 61
	 * make 3*64 + 62 + 1 = 255; one byte more is too long. */
	for (int extra = 0; extra <= 1; extra++) {
		char last[64];
		memset(last, 'b', sizeof(last));
		last[61 + extra] = '\0';
		snprintf(name, sizeof(name), "%s.%s.%s.%s", l63, l63, l63, last);
		p_reply(&p, "example.com", DNS_T_MX, 0);
		p_mx(&p, SEC_AN, "example.com", 10, name);
		if (extra == 0) {
			ATF_CHECK_EQ_MSG(parse(&p, "example.com", DNS_T_MX, &r, &why),
			    DNS_FOUND, "%s", str_cstr(&why));
			ATF_CHECK_STREQ(r.nrr ? r.rr[0].name : "", name);
			dns_reply_free(&r);
		} else {
			expect_malformed(&p, "example.com", DNS_T_MX, "longer than 255");
		}
	}
	/* Too long through compression: two labels in front of a
	 * pointer to a 249-byte name (the owner of a skipped TXT record):
	 * 4 + 4 + 249 = 257 bytes. */
	snprintf(name, sizeof(name), "%s.%s.%s.%.55s", l63, l63, l63, l63);
	p_reply(&p, "example.com", DNS_T_MX, 0);
	size_t longname = p.n;
	p_name(&p, name);
	rl = p_rr_fixed(&p, 16, 1, 1);	/* TXT: skipped */
	p_rr_end(&p, rl);
	p_name(&p, "example.com");
	rl = p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_u16(&p, 10);
	p_name_ptr(&p, "abc.def", longname);
	p_rr_end(&p, rl);
	p_count(&p, SEC_AN, 2);
	expect_malformed(&p, "example.com", DNS_T_MX, "longer than 255");
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(rdlength);
ATF_TC_BODY(rdlength, tc)
{
	pkt_t p;
	size_t rl;

	/* A with 3 and 5 bytes, AAAA with 4 and 17. */
	static const struct { unsigned type; unsigned len; } bad[] = {
		{ DNS_T_A, 3 }, { DNS_T_A, 5 }, { DNS_T_AAAA, 4 }, { DNS_T_AAAA, 17 },
		{ DNS_T_A, 0 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p_reply(&p, "h.example.com", bad[i].type, 0);
		p_name(&p, "h.example.com");
		rl = p_rr_fixed(&p, bad[i].type, 1, 1);
		for (unsigned k = 0; k < bad[i].len; k++)
			p_u8(&p, 1);
		p_rr_end(&p, rl);
		p_count(&p, SEC_AN, 1);
		expect_malformed(&p, "h.example.com", (uint16_t)bad[i].type, "bytes of data, not");
	}
	/* Also in the additional section. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_mx(&p, SEC_AN, "example.com", 10, "mx.example.com");
	p_name(&p, "mx.example.com");
	rl = p_rr_fixed(&p, DNS_T_A, 1, 1);
	p_bytes(&p, "\1\2\3\4\5\6", 6);
	p_rr_end(&p, rl);
	p_count(&p, SEC_AR, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "additional record 1");

	/* MX data longer than preference + name. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_name(&p, "example.com");
	rl = p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_u16(&p, 10);
	p_name(&p, "mx.example.com");
	p_u8(&p, 0);
	p_rr_end(&p, rl);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "ends 1 bytes before");

	/* MX data shorter than its name: the name runs out of the data
	 * (rdlength cut by 2, the rest looks like extra bytes). */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_name(&p, "example.com");
	rl = p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_u16(&p, 10);
	p_name(&p, "mx.example.com");
	p_rr_end(&p, rl);
	p.b[rl + 1] -= 2;
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "runs past the end");

	/* MX with only a preference. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_name(&p, "example.com");
	rl = p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_u16(&p, 10);
	p_rr_end(&p, rl);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "example.com", DNS_T_MX, "MX record with 2 bytes");

	/* CNAME data longer than its name. */
	p_reply(&p, "www.example.com", DNS_T_A, 0);
	p_name(&p, "www.example.com");
	rl = p_rr_fixed(&p, DNS_T_CNAME, 1, 1);
	p_name(&p, "web.example.com");
	p_u16(&p, 0);
	p_rr_end(&p, rl);
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "www.example.com", DNS_T_A, "CNAME name ends 2 bytes before");

	/* rdlength past the end of the packet. */
	p_reply(&p, "h.example.com", DNS_T_A, 0);
	p_name(&p, "h.example.com");
	rl = p_rr_fixed(&p, DNS_T_A, 1, 1);
	p_bytes(&p, "\1\2\3\4", 4);
	p_rr_end(&p, rl);
	p.b[rl] = 0x10;
	p_count(&p, SEC_AN, 1);
	expect_malformed(&p, "h.example.com", DNS_T_A, "runs past the end");
}

/* Cutting a valid reply anywhere must give DNS_MALFORMED: never a crash
 * (the sanitizer build checks reads), never a success on part of it. */
static void truncate_everywhere(const pkt_t *full, const char *qname, uint16_t qtype)
{
	pkt_t p;
	dns_reply_t r;
	str_t why = STR_INIT;

	ATF_REQUIRE_EQ(parse(full, qname, qtype, &r, &why), DNS_FOUND);
	dns_reply_free(&r);
	for (size_t len = 0; len < full->n; len++) {
		/* A copy of exactly len bytes, so reading past it is an
		 * ASan error rather than a read of stale bytes. */
		unsigned char *cut = malloc(len ? len : 1);
		memcpy(cut, full->b, len);
		enum dns_status st = dns_parse_reply(cut, len, qname, qtype, &r, &why);
		ATF_CHECK_EQ_MSG(st, DNS_MALFORMED, "cut at %zu of %zu: %s (%s)", len,
		    full->n, dns_status_str(st), str_cstr(&why));
		ATF_CHECK(r.nrr == 0);
		dns_reply_free(&r);
		free(cut);
	}
	(void)p;
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(truncation);
ATF_TC_BODY(truncation, tc)
{
	pkt_t p;

	build_mx_reply(&p);
	truncate_everywhere(&p, "example.com", DNS_T_MX);
	p_reply(&p, "www.example.com", DNS_T_A, 0);
	p_cname(&p, SEC_AN, "www.example.com", "host.example.com");
	p_a(&p, SEC_AN, "host.example.com", "192.0.2.1");
	p_aaaa(&p, SEC_AR, "host.example.com", "2001:db8::1");
	truncate_everywhere(&p, "www.example.com", DNS_T_A);
}

ATF_TC_WITHOUT_HEAD(name_text);
ATF_TC_BODY(name_text, tc)
{
	pkt_t p;
	dns_reply_t r;
	str_t why = STR_INIT;
	size_t rl;

	/* Dots, backslashes, spaces and control bytes inside a label come
	 * out escaped, so they cannot pass for structure or reach a log
	 * raw; such names are not host names. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_name(&p, "example.com");
	rl = p_rr_fixed(&p, DNS_T_MX, 1, 1);
	p_u16(&p, 10);
	p_u8(&p, 5);
	p_bytes(&p, "a.b\\\n", 5);
	p_u8(&p, 2);
	p_bytes(&p, "x ", 2);
	p_u8(&p, 0);
	p_rr_end(&p, rl);
	p_count(&p, SEC_AN, 1);
	ATF_REQUIRE_EQ(parse(&p, "example.com", DNS_T_MX, &r, &why), DNS_FOUND);
	ATF_CHECK_STREQ(r.rr[0].name, "a\\046b\\092\\010.x\\032");
	ATF_CHECK(!dns_valid_hostname(r.rr[0].name));
	dns_reply_free(&r);

	/* The root is ".". */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	p_mx(&p, SEC_AN, "example.com", 0, ".");
	ATF_REQUIRE_EQ(parse(&p, "example.com", DNS_T_MX, &r, &why), DNS_FOUND);
	ATF_CHECK_STREQ(r.rr[0].name, ".");
	ATF_CHECK_EQ(r.rr[0].pref, 0);
	dns_reply_free(&r);

	/* dns_name_read: the offset moves past the pointer, not the
	 * name it points to. */
	p_reply(&p, "example.com", DNS_T_MX, 0);
	size_t at = p.n;
	p_name_ptr(&p, "mx", 12);
	char text[DNS_NAME_TEXTLEN];
	size_t off = at;
	ATF_REQUIRE_EQ(dns_name_read(p.b, p.n, &off, text, sizeof(text), &why), 0);
	ATF_CHECK_STREQ(text, "mx.example.com");
	ATF_CHECK_EQ(off, at + 5);
	/* A too small buffer is an error, not an overflow. */
	off = at;
	ATF_CHECK_EQ(dns_name_read(p.b, p.n, &off, text, 8, &why), -1);
	str_release(&why);
}

ATF_TC_WITHOUT_HEAD(hostnames);
ATF_TC_BODY(hostnames, tc)
{
	ATF_CHECK(dns_valid_hostname("example.com"));
	ATF_CHECK(dns_valid_hostname("example.com."));
	ATF_CHECK(dns_valid_hostname("localhost"));
	ATF_CHECK(dns_valid_hostname("_srv.a-b.example"));
	ATF_CHECK(dns_valid_hostname("1.2.3.4"));
	ATF_CHECK(!dns_valid_hostname(""));
	ATF_CHECK(!dns_valid_hostname("."));
	ATF_CHECK(!dns_valid_hostname("a..b"));
	ATF_CHECK(!dns_valid_hostname(".a"));
	ATF_CHECK(!dns_valid_hostname("-a.b"));
	ATF_CHECK(!dns_valid_hostname("a-.b"));
	ATF_CHECK(!dns_valid_hostname("a b"));
	ATF_CHECK(!dns_valid_hostname("a\\046b"));
	ATF_CHECK(!dns_valid_hostname("a.b.."));
	char l64[80];
	memset(l64, 'a', 64);
	l64[64] = '\0';
	ATF_CHECK(!dns_valid_hostname(l64));
	l64[63] = '\0';
	ATF_CHECK(dns_valid_hostname(l64));

	ATF_CHECK(dns_name_equal("Example.COM", "example.com."));
	ATF_CHECK(!dns_name_equal("example.com", "example.co"));
	ATF_CHECK(dns_name_equal(".", "."));
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, mx_valid);
	ATF_TP_ADD_TC(tp, a_aaaa_valid);
	ATF_TP_ADD_TC(tp, rcodes);
	ATF_TP_ADD_TC(tp, cname);
	ATF_TP_ADD_TC(tp, header_and_question);
	ATF_TP_ADD_TC(tp, compression_bad);
	ATF_TP_ADD_TC(tp, labels_and_length);
	ATF_TP_ADD_TC(tp, rdlength);
	ATF_TP_ADD_TC(tp, truncation);
	ATF_TP_ADD_TC(tp, name_text);
	ATF_TP_ADD_TC(tp, hostnames);
	return atf_no_error();
}
