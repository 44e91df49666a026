/* dnsq: asks one DNS question through the system resolver library, sent
 * to a server given on the command line instead of /etc/resolv.conf.
 *
 * This is the way Petrel's smtp is pointed at fakedns in tests: res_ninit()
 * a private resolver state, then replace its name server list with one
 * address and port (nsaddr_list/nscount, which glibc and the BSD resolvers
 * both honour), then res_nquery().  No root, no resolv.conf, no port 53.
 *
 * Output: the outcome (NOERROR, NXDOMAIN, NODATA, SERVFAIL, REFUSED,
 * FORMERR, NOTIMP or TIMEOUT) on the first line, then one line per answer
 * record ("NAME TYPE DATA", the zone-file format of fakedns) and one per
 * additional record (prefixed with "additional ").  Exit 0 if there were
 * answers, 1 for any other outcome, 2 for usage errors. */
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netinet/in.h>
#include <resolv.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "log.h"
#include "str.h"

static const struct { const char *name; int type; } types[] = {
	{ "A", 1 }, { "NS", 2 }, { "CNAME", 5 }, { "SOA", 6 }, { "PTR", 12 },
	{ "MX", 15 }, { "TXT", 16 }, { "AAAA", 28 }, { "ANY", 255 },
};

static const char *type_name(int type, char *buf, size_t size)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return types[i].name;
	bfmt(buf, size, "TYPE%d", type);
	return buf;
}

static unsigned get16(const unsigned char *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* Prints count records starting at *off; false if the message is
 * malformed (every length is checked against the end). */
static bool print_rrs(const unsigned char *msg, const unsigned char *end,
    const unsigned char **pos, unsigned count, const char *prefix)
{
	const unsigned char *p = *pos;
	for (unsigned i = 0; i < count; i++) {
		char name[NS_MAXDNAME], target[NS_MAXDNAME], tbuf[16];
		int n = dn_expand(msg, end, p, name, sizeof(name));
		unsigned type, rdlen;
		const unsigned char *rd;

		if (n < 0 || end - (p + n) < 10)
			return false;
		p += n;
		type = get16(p);
		rdlen = get16(p + 8);
		rd = p + 10;
		if ((size_t)(end - rd) < rdlen)
			return false;
		printf("%s%s %s ", prefix, name[0] ? name : ".",
		    type_name((int)type, tbuf, sizeof(tbuf)));
		switch (type) {
		case 1:
		case 28: {
			char a[INET6_ADDRSTRLEN];
			if (rdlen != (type == 1 ? 4u : 16u))
				return false;
			inet_ntop(type == 1 ? AF_INET : AF_INET6, rd, a, sizeof(a));
			printf("%s\n", a);
			break;
		}
		case 15:
			if (rdlen < 3 || dn_expand(msg, end, rd + 2, target, sizeof(target)) < 0)
				return false;
			printf("%u %s\n", get16(rd), target[0] ? target : ".");
			break;
		case 2:
		case 5:
		case 12:
			if (dn_expand(msg, end, rd, target, sizeof(target)) < 0)
				return false;
			printf("%s\n", target[0] ? target : ".");
			break;
		case 16: {
			str_t q = STR_INIT;
			if (rdlen < 1 || rd[0] + 1u > rdlen)
				return false;
			str_quote_printable(&q, rd + 1, rd[0]);
			printf("\"%s\"\n", str_cstr(&q));
			str_release(&q);
			break;
		}
		default:
			printf("(%u bytes)\n", rdlen);
		}
		p = rd + rdlen;
	}
	*pos = p;
	return true;
}

static void usage(void)
{
	fprintf(stderr,
	    "usage: dnsq -s SERVER [-p PORT] [-t TYPE] [-T] [-w SECS] [-r TRIES] NAME\n"
	    "  -s ADDR   IPv4 address of the name server (e.g. 127.0.0.1)\n"
	    "  -p PORT   its port (default 53)\n"
	    "  -t TYPE   A, AAAA, MX (default), CNAME, TXT, NS, PTR, SOA, ANY or a number\n"
	    "  -T        use TCP\n"
	    "  -w SECS   timeout per try (default 2)\n"
	    "  -r TRIES  tries (default 1)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct __res_state res;
	struct sockaddr_in ns;
	const char *server = NULL;
	unsigned long port = 53, wait = 2, tries = 1, tnum;
	int type = 15, c;
	bool tcp = false;
	unsigned char ans[65536];

	log_init("dnsq");
	while ((c = getopt(argc, argv, "p:r:s:t:Tw:")) != -1) {
		switch (c) {
		case 'p':
			if (!str_to_ulong(optarg, &port) || port == 0 || port > 65535)
				log_fatal("bad port '%s'", optarg);
			break;
		case 'r':
			if (!str_to_ulong(optarg, &tries) || tries == 0 || tries > 10)
				log_fatal("bad -r '%s' (1..10)", optarg);
			break;
		case 's': server = optarg; break;
		case 't':
			type = -1;
			for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
				if (strcasecmp(optarg, types[i].name) == 0)
					type = types[i].type;
			if (type < 0) {
				if (!str_to_ulong(optarg, &tnum) || tnum == 0 || tnum > 65535)
					log_fatal("bad type '%s'", optarg);
				type = (int)tnum;
			}
			break;
		case 'T': tcp = true; break;
		case 'w':
			if (!str_to_ulong(optarg, &wait) || wait == 0 || wait > 60)
				log_fatal("bad -w '%s' (1..60)", optarg);
			break;
		default: usage();
		}
	}
	if (argc - optind != 1 || server == NULL)
		usage();
	memset(&ns, 0, sizeof(ns));
	ns.sin_family = AF_INET;
	ns.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, server, &ns.sin_addr) != 1)
		log_fatal("-s wants an IPv4 address: '%s'", server);

	/* A private resolver state: defaults (and /etc/resolv.conf, if
	 * any) first, then our one server replaces the configured ones. */
	memset(&res, 0, sizeof(res));
	if (res_ninit(&res) != 0)
		log_fatal("res_ninit failed");
	res.nsaddr_list[0] = ns;
	res.nscount = 1;
	res.retrans = (int)wait;
	res.retry = (int)tries;
	if (tcp)
		res.options |= RES_USEVC;

	memset(ans, 0, sizeof(ans));
	int n = res_nquery(&res, argv[optind], ns_c_in, type, ans, sizeof(ans));
	int outcome = 1;
	if (n < 0) {
		/* res_nquery hides the reply's code behind h_errno; the
		 * reply itself is still in the buffer when one came. */
		if (ans[2] & 0x80) {
			static const char *const rcodes[] = { "NODATA", "FORMERR",
				"SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED" };
			unsigned rc = ans[3] & 0x0f;
			if (rc <= 5)
				printf("%s\n", rcodes[rc]);
			else
				printf("RCODE%u\n", rc);
		} else {
			printf("TIMEOUT\n");
		}
	} else {
		const unsigned char *end = ans + (n < (int)sizeof(ans) ? n : (int)sizeof(ans));
		const unsigned char *p = ans + 12;
		unsigned qd, an, ar, nscount;
		if (n < 12) {
			printf("FORMERR\n");
			goto out;
		}
		qd = get16(ans + 4);
		an = get16(ans + 6);
		nscount = get16(ans + 8);
		ar = get16(ans + 10);
		printf("NOERROR\n");
		for (unsigned i = 0; i < qd; i++) {
			char name[NS_MAXDNAME];
			int l = dn_expand(ans, end, p, name, sizeof(name));
			if (l < 0 || end - (p + l) < 4)
				goto malformed;
			p += l + 4;
		}
		if (!print_rrs(ans, end, &p, an, "") ||
		    !print_rrs(ans, end, &p, nscount, "authority ") ||
		    !print_rrs(ans, end, &p, ar, "additional "))
			goto malformed;
		outcome = an > 0 ? 0 : 1;
		goto out;
malformed:
		fprintf(stderr, "dnsq: malformed reply\n");
		outcome = 1;
	}
out:
	res_nclose(&res);
	return outcome;
}
