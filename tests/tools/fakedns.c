/* fakedns: a small authoritative DNS server for tests.
 *
 * It answers A, AAAA, MX, CNAME and TXT questions from a zone file in a
 * line format (doc/test-tools.md), over UDP and TCP on one loopback port,
 * and can fail on purpose per name (SERVFAIL, REFUSED, NXDOMAIN, or no
 * answer at all).  Queries are untrusted input: every read is
 * bounds-checked and anything malformed gets FORMERR or is ignored.
 * SIGHUP reloads the zone file; SIGTERM/SIGINT end the server. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "log.h"
#include "mem.h"
#include "selfpipe.h"
#include "sock.h"
#include "str.h"

#define T_A	1
#define T_CNAME	5
#define T_MX	15
#define T_TXT	16
#define T_AAAA	28
#define T_ANY	255
#define C_IN	1

#define R_NOERROR	0
#define R_FORMERR	1
#define R_SERVFAIL	2
#define R_NXDOMAIN	3
#define R_NOTIMP	4
#define R_REFUSED	5
#define R_DROP		-1	/* pseudo: send nothing */

#define MAX_NAME	255	/* text form, without the trailing dot */
#define UDP_LIMIT	512

struct record {
	char name[MAX_NAME + 1];	/* lowercase, no trailing dot; "" = root */
	uint32_t ttl;
	int type;			/* a T_ value, or 0 for a behaviour */
	int rcode;			/* behaviour: R_SERVFAIL, ..., R_DROP */
	uint16_t pref;
	uint8_t addr[16];
	char target[MAX_NAME + 1];	/* MX/CNAME target, TXT text */
};

struct zone {
	struct record *recs;
	size_t count;
};

static struct zone zone;
static const char *zone_path;

static const struct { const char *name; int type; } types[] = {
	{ "A", T_A }, { "AAAA", T_AAAA }, { "MX", T_MX }, { "CNAME", T_CNAME },
	{ "TXT", T_TXT }, { "ANY", T_ANY },
};

static const char *type_name(int type, char *buf, size_t size)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return types[i].name;
	bfmt(buf, size, "TYPE%d", type);
	return buf;
}

static const char *rcode_name(int rcode)
{
	static const char *const names[] = { "NOERROR", "FORMERR", "SERVFAIL",
		"NXDOMAIN", "NOTIMP", "REFUSED" };
	if (rcode == R_DROP)
		return "DROP";
	return rcode >= 0 && rcode <= 5 ? names[rcode] : "?";
}

/* Normalizes a zone-file name: lowercase, no trailing dot, "." is the
 * root.  False if it is not a plausible host name. */
static bool norm_name(const char *in, char *out)
{
	size_t len = strlen(in), label = 0;
	if (strcmp(in, ".") == 0) {
		out[0] = 0;
		return true;
	}
	if (len > 0 && in[len - 1] == '.')
		len--;
	if (len == 0 || len > MAX_NAME)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (isalnum(c) || c == '-' || c == '_' || c == '*') {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
		out[i] = (char)tolower(c);
	}
	if (label == 0)
		return false;
	out[len] = 0;
	return true;
}

/* Parses one zone-file line (comment already cut) into r.  Returns 0 for
 * a record, 1 for a blank line, -1 on error (logged). */
static int parse_line(char *line, struct record *r, const char *where)
{
	char *tok[16], *p = line, *t;
	int n = 0, i = 1;
	unsigned long ttl;

	while ((t = str_token(&p, " \t\r\n")) != NULL) {
		if (n == 16) {
			log_error("%s: too many fields", where);
			return -1;
		}
		tok[n++] = t;
	}
	if (n == 0)
		return 1;
	memset(r, 0, sizeof(*r));
	r->ttl = 300;
	if (!norm_name(tok[0], r->name)) {
		log_error("%s: bad name '%s'", where, tok[0]);
		return -1;
	}
	if (i < n && str_to_ulong(tok[i], &ttl)) {
		if (ttl > 0x7fffffffUL) {
			log_error("%s: TTL too large", where);
			return -1;
		}
		r->ttl = (uint32_t)ttl;
		i++;
	}
	if (i >= n) {
		log_error("%s: no type", where);
		return -1;
	}
	const char *type = tok[i++];
	int nd = n - i;			/* data fields */
	char **d = tok + i;

	if (strcasecmp(type, "SERVFAIL") == 0)
		r->rcode = R_SERVFAIL;
	else if (strcasecmp(type, "REFUSED") == 0)
		r->rcode = R_REFUSED;
	else if (strcasecmp(type, "NXDOMAIN") == 0)
		r->rcode = R_NXDOMAIN;
	else if (strcasecmp(type, "DROP") == 0)
		r->rcode = R_DROP;
	if (r->rcode != 0) {
		if (nd != 0) {
			log_error("%s: %s takes no data", where, type);
			return -1;
		}
		return 0;
	}
	if (strcasecmp(type, "A") == 0 || strcasecmp(type, "AAAA") == 0) {
		bool v6 = strcasecmp(type, "AAAA") == 0;
		r->type = v6 ? T_AAAA : T_A;
		if (nd != 1 || inet_pton(v6 ? AF_INET6 : AF_INET, d[0], r->addr) != 1) {
			log_error("%s: %s wants one IPv%d address", where, type, v6 ? 6 : 4);
			return -1;
		}
	} else if (strcasecmp(type, "MX") == 0) {
		unsigned long pref;
		r->type = T_MX;
		if (nd != 2 || !str_to_ulong(d[0], &pref) || pref > 65535 ||
		    !norm_name(d[1], r->target)) {
			log_error("%s: MX wants 'PREFERENCE HOST'", where);
			return -1;
		}
		r->pref = (uint16_t)pref;
	} else if (strcasecmp(type, "CNAME") == 0) {
		r->type = T_CNAME;
		if (nd != 1 || !norm_name(d[0], r->target) || r->target[0] == 0) {
			log_error("%s: CNAME wants one host name", where);
			return -1;
		}
	} else if (strcasecmp(type, "TXT") == 0) {
		/* The words, joined by single spaces, quotes around removed. */
		str_t txt = STR_INIT;
		r->type = T_TXT;
		for (int k = 0; k < nd; k++)
			str_catf(&txt, "%s%s", k ? " " : "", d[k]);
		size_t len = str_len(&txt);
		const char *text = str_cstr(&txt);
		if (len >= 2 && text[0] == '"' && text[len - 1] == '"') {
			text++;
			len -= 2;
		}
		if (len > 255) {
			str_release(&txt);
			log_error("%s: TXT longer than 255 bytes", where);
			return -1;
		}
		memcpy(r->target, text, len);
		r->target[len] = 0;
		str_release(&txt);
	} else {
		log_error("%s: unknown type '%s'", where, type);
		return -1;
	}
	return 0;
}

/* Parses the zone file into z.  On error, logs the file and line and
 * returns false (z is left empty). */
static bool load_zone(const char *path, struct zone *z)
{
	FILE *fp = fopen(path, "r");
	char line[1024], where[600];
	unsigned lineno = 0;
	size_t cap = 0;

	z->recs = NULL;
	z->count = 0;
	if (fp == NULL) {
		log_error("open %s: %s", path, strerror(errno));
		return false;
	}
	while (fgets(line, sizeof(line), fp) != NULL) {
		struct record r;
		char *hash;
		int rc;

		lineno++;
		bfmt(where, sizeof(where), "%s:%u", path, lineno);
		if (strchr(line, '\n') == NULL && !feof(fp)) {
			log_error("%s: line too long", where);
			goto bad;
		}
		if ((hash = strchr(line, '#')) != NULL)
			*hash = 0;
		if ((rc = parse_line(line, &r, where)) < 0)
			goto bad;
		if (rc > 0)
			continue;
		if (z->count == cap) {
			cap = cap ? cap * 2 : 16;
			z->recs = xreallocarray(z->recs, cap, sizeof(*z->recs));
		}
		z->recs[z->count++] = r;
	}
	fclose(fp);
	return true;
bad:
	fclose(fp);
	free(z->recs);
	z->recs = NULL;
	z->count = 0;
	return false;
}

/* ---- wire format ---- */

struct query {
	uint16_t id, flags, qtype, qclass;
	char name[MAX_NAME + 1];	/* lowercase text; "" = root */
	bool matchable;			/* false if a label had odd bytes */
	const uint8_t *question;	/* the question as received */
	size_t question_len;
};

/* Parses a query.  Returns R_NOERROR, an rcode to answer with (the
 * header fields read so far are set), or R_DROP to ignore the datagram. */
static int parse_query(const uint8_t *msg, size_t len, struct query *q)
{
	size_t off = 12, tlen = 0;

	memset(q, 0, sizeof(*q));
	if (len < 12)
		return R_DROP;
	q->id = (uint16_t)(msg[0] << 8 | msg[1]);
	q->flags = (uint16_t)(msg[2] << 8 | msg[3]);
	if (q->flags & 0x8000)
		return R_DROP;		/* a response: never answer those */
	if (((q->flags >> 11) & 0xf) != 0)
		return R_NOTIMP;
	if (msg[4] != 0 || msg[5] != 1)
		return R_FORMERR;
	q->matchable = true;
	for (;;) {
		if (off >= len)
			return R_FORMERR;
		uint8_t l = msg[off++];
		if (l == 0)
			break;
		if (l > 63)		/* compression or reserved: not in a question */
			return R_FORMERR;
		if (off + l > len || tlen + l + 1 > MAX_NAME + 1)
			return R_FORMERR;
		if (tlen > 0)
			q->name[tlen++] = '.';
		for (unsigned i = 0; i < l; i++) {
			unsigned char c = msg[off + i];
			if (c == '.' || c < 0x21 || c > 0x7e) {
				q->matchable = false;
				c = '?';
			}
			q->name[tlen++] = (char)tolower(c);
		}
		off += l;
	}
	q->name[tlen] = 0;
	if (off + 4 > len)
		return R_FORMERR;
	q->qtype = (uint16_t)(msg[off] << 8 | msg[off + 1]);
	q->qclass = (uint16_t)(msg[off + 2] << 8 | msg[off + 3]);
	off += 4;
	q->question = msg + 12;
	q->question_len = off - 12;
	if (q->qclass != C_IN && q->qclass != T_ANY)
		return R_REFUSED;
	return R_NOERROR;
}

struct answer {
	uint8_t buf[65535];
	size_t len, limit;
	bool truncated;
	unsigned an, ar;
};

static bool put(struct answer *a, const void *data, size_t n)
{
	if (a->len + n > a->limit) {
		a->truncated = true;
		return false;
	}
	memcpy(a->buf + a->len, data, n);
	a->len += n;
	return true;
}

static bool put16(struct answer *a, unsigned v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	return put(a, b, 2);
}

static bool put_name(struct answer *a, const char *name, const struct query *q)
{
	/* The question's name is at offset 12: point to it. */
	if (q != NULL && q->matchable && strcmp(name, q->name) == 0)
		return put16(a, 0xC000 | 12);
	const char *p = name;
	while (*p) {
		size_t l = strcspn(p, ".");
		uint8_t lb = (uint8_t)l;
		if (!put(a, &lb, 1) || !put(a, p, l))
			return false;
		p += l;
		if (*p == '.')
			p++;
	}
	return put(a, "", 1);
}

/* Appends one resource record; false (and nothing kept) if it does not
 * fit. */
static bool put_rr(struct answer *a, const struct record *r, const struct query *q)
{
	size_t start = a->len, rdlen_at;
	uint8_t ttl[4] = { (uint8_t)(r->ttl >> 24), (uint8_t)(r->ttl >> 16),
		(uint8_t)(r->ttl >> 8), (uint8_t)r->ttl };
	bool ok = put_name(a, r->name, q) && put16(a, (unsigned)r->type) &&
	    put16(a, C_IN) && put(a, ttl, 4);
	rdlen_at = a->len;
	ok = ok && put16(a, 0);
	switch (r->type) {
	case T_A:
		ok = ok && put(a, r->addr, 4);
		break;
	case T_AAAA:
		ok = ok && put(a, r->addr, 16);
		break;
	case T_MX:
		ok = ok && put16(a, r->pref) && put_name(a, r->target, NULL);
		break;
	case T_CNAME:
		ok = ok && put_name(a, r->target, NULL);
		break;
	case T_TXT: {
		uint8_t l = (uint8_t)strlen(r->target);
		ok = ok && put(a, &l, 1) && put(a, r->target, l);
		break;
	}
	}
	if (!ok) {
		a->len = start;
		return false;
	}
	size_t rdlen = a->len - rdlen_at - 2;
	a->buf[rdlen_at] = (uint8_t)(rdlen >> 8);
	a->buf[rdlen_at + 1] = (uint8_t)rdlen;
	return true;
}

static bool name_exists(const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < zone.count; i++) {
		const char *rn = zone.recs[i].name;
		size_t rl = strlen(rn);
		if (strcmp(rn, name) == 0)
			return true;
		/* An empty non-terminal (a name with names below it) exists
		 * too, with no data: NODATA, not NXDOMAIN. */
		if (nl == 0 || (rl > nl && rn[rl - nl - 1] == '.' &&
		    strcmp(rn + rl - nl, name) == 0))
			return true;
	}
	return false;
}

static int behaviour(const char *name)
{
	for (size_t i = 0; i < zone.count; i++)
		if (zone.recs[i].type == 0 && strcmp(zone.recs[i].name, name) == 0)
			return zone.recs[i].rcode;
	return R_NOERROR;
}

/* Builds the answer to q into a.  Returns the rcode (R_DROP: none). */
static int resolve(const struct query *q, int rcode, struct answer *a)
{
	const char *name = q->name;
	char chain[8][MAX_NAME + 1];
	int depth = 0;

	a->len = 12;
	a->an = a->ar = 0;
	a->truncated = false;
	if (q->question != NULL && !put(a, q->question, q->question_len))
		return R_SERVFAIL;
	if (rcode != R_NOERROR)
		return rcode;
	if (!q->matchable)
		return R_NXDOMAIN;
	if ((rcode = behaviour(name)) != R_NOERROR)
		return rcode;
	if (!name_exists(name))
		return R_NXDOMAIN;
	/* Follow CNAMEs (a bounded chain) unless CNAME itself is asked. */
	for (;;) {
		const struct record *cname = NULL;
		for (size_t i = 0; i < zone.count; i++)
			if (zone.recs[i].type == T_CNAME &&
			    strcmp(zone.recs[i].name, name) == 0)
				cname = &zone.recs[i];
		if (cname == NULL || q->qtype == T_CNAME || q->qtype == T_ANY ||
		    depth == 8)
			break;
		if (put_rr(a, cname, q))
			a->an++;
		bcopy_str(chain[depth], sizeof(chain[depth]), cname->target);
		name = chain[depth++];
		if (behaviour(name) != R_NOERROR)
			break;
	}
	for (size_t i = 0; i < zone.count; i++) {
		const struct record *r = &zone.recs[i];
		if (r->type == 0 || strcmp(r->name, name) != 0)
			continue;
		if (q->qtype != T_ANY && r->type != q->qtype)
			continue;
		if (put_rr(a, r, q))
			a->an++;
	}
	/* Addresses of the mail exchangers, to spare a lookup.  They may be
	 * left out when there is no room, without setting TC. */
	bool answer_cut = a->truncated;
	for (size_t i = 0; i < zone.count && !a->truncated; i++) {
		const struct record *mx = &zone.recs[i];
		if (mx->type != T_MX || strcmp(mx->name, name) != 0 ||
		    (q->qtype != T_MX && q->qtype != T_ANY))
			continue;
		for (size_t j = 0; j < zone.count; j++) {
			const struct record *r = &zone.recs[j];
			if ((r->type == T_A || r->type == T_AAAA) &&
			    strcmp(r->name, mx->target) == 0 && put_rr(a, r, NULL))
				a->ar++;
		}
	}
	a->truncated = answer_cut;
	return R_NOERROR;
}

/* Answers one message; returns the reply length, 0 for no reply. */
static size_t handle(const uint8_t *msg, size_t len, struct answer *a,
    size_t limit, const char *from, const char *proto)
{
	struct query q;
	int rcode = parse_query(msg, len, &q);
	char tbuf[16];

	if (rcode == R_DROP) {
		log_debug("%s %s: ignored %zu bytes that are not a query", proto, from, len);
		return 0;
	}
	a->limit = limit;
	/* q.question is set only if the whole question parsed: a FORMERR
	 * reply does not echo what could not be parsed. */
	rcode = resolve(&q, rcode, a);
	log_debug("%s %s: id=%u %s/%s -> %s an=%u ar=%u%s", proto, from, q.id,
	    q.question ? (q.name[0] ? q.name : ".") : "-",
	    type_name(q.qtype, tbuf, sizeof(tbuf)), rcode_name(rcode), a->an, a->ar,
	    a->truncated ? " (truncated)" : "");
	if (rcode == R_DROP)
		return 0;
	if (a->truncated && a->an == 0 && q.question != NULL) {
		/* Not even one answer fits: the client must use TCP. */
		a->len = 12 + q.question_len;
	}
	a->buf[0] = (uint8_t)(q.id >> 8);
	a->buf[1] = (uint8_t)q.id;
	/* QR, opcode 0, AA, TC, RD copied; RA 0 (not recursive). */
	a->buf[2] = (uint8_t)(0x80 | 0x04 | (a->truncated ? 0x02 : 0) |
	    ((q.flags >> 8) & 0x01));
	a->buf[3] = (uint8_t)(rcode & 0x0f);
	a->buf[4] = 0;
	a->buf[5] = q.question != NULL ? 1 : 0;
	a->buf[6] = (uint8_t)(a->an >> 8);
	a->buf[7] = (uint8_t)a->an;
	a->buf[8] = a->buf[9] = 0;
	a->buf[10] = (uint8_t)(a->ar >> 8);
	a->buf[11] = (uint8_t)a->ar;
	if (a->truncated && a->an == 0) {
		a->buf[6] = a->buf[7] = a->buf[10] = a->buf[11] = 0;
	}
	return a->len;
}

/* One TCP client: length-prefixed queries until it closes, errs or is
 * silent for 2 s (the server is single-threaded; tests only). */
static void serve_tcp(int fd, const char *from, struct answer *a)
{
	static uint8_t msg[65535];
	struct timeval tv = { 2, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	for (int count = 0; count < 100; count++) {
		uint8_t lb[2];
		size_t want, got = 0;
		if (recv(fd, lb, 2, MSG_WAITALL) != 2)
			return;
		want = (size_t)(lb[0] << 8 | lb[1]);
		while (got < want) {
			ssize_t n = recv(fd, msg + got, want - got, 0);
			if (n <= 0)
				return;
			got += (size_t)n;
		}
		size_t rlen = handle(msg, want, a, 65535 - 2, from, "tcp");
		if (rlen == 0)
			continue;
		uint8_t hdr[2] = { (uint8_t)(rlen >> 8), (uint8_t)rlen };
		if (send(fd, hdr, 2, MSG_NOSIGNAL) != 2 ||
		    send(fd, a->buf, rlen, MSG_NOSIGNAL) != (ssize_t)rlen)
			return;
	}
}

/* "[addr]:port", "addr:port" (IPv4) or just "port" (127.0.0.1). */
static bool parse_endpoint(const char *text, struct sockaddr_storage *ss,
    socklen_t *len)
{
	char spec[SOCK_ADDR_STRLEN];

	if (strchr(text, ':') == NULL) {
		if (!bfmt(spec, sizeof(spec), "127.0.0.1:%s", text))
			return false;
		text = spec;
	}
	return sock_addr_parse(text, -1, ss, len) == 0;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static uint16_t get_port(int fd)
{
	int port = sock_local_port(fd);

	if (port < 0)
		log_fatal("getsockname: %s", strerror(errno));
	return (uint16_t)port;
}

static void usage(void)
{
	fprintf(stderr,
	    "usage: fakedns [-v] [-P PORTFILE] [-A] -z ZONEFILE [addr:]port\n"
	    "  -z FILE   zone file (see doc/test-tools.md)\n"
	    "  -P FILE   write the bound port to FILE (use port 0)\n"
	    "  -A        allow a non-loopback address\n"
	    "  -v        log every query to stderr\n"
	    "SIGHUP reloads the zone file.\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	const char *portfile = NULL;
	bool allow_any = false;
	int c, ufd = -1, tfd = -1, one = 1;
	static struct answer ans;

	log_init("fakedns");
	while ((c = getopt(argc, argv, "AP:vz:")) != -1) {
		switch (c) {
		case 'A': allow_any = true; break;
		case 'P': portfile = optarg; break;
		case 'v': log_verbose++; break;
		case 'z': zone_path = optarg; break;
		default: usage();
		}
	}
	if (argc - optind != 1 || zone_path == NULL)
		usage();
	if (!parse_endpoint(argv[optind], &ss, &sslen))
		log_fatal("bad address '%s' (want [addr:]port or [ipv6]:port)", argv[optind]);
	if (!allow_any && !sock_addr_is_loopback((struct sockaddr *)&ss))
		log_fatal("refusing to listen on a non-loopback address without -A: %s", argv[optind]);
	if (!load_zone(zone_path, &zone))
		log_fatal("cannot load the zone file %s", zone_path);

	/* UDP and TCP on the same port.  With port 0 the kernel picks the
	 * UDP port; if TCP cannot have it too, try again (a few times). */
	bool pick = (ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port) == 0;
	for (int attempt = 0; attempt < 20; attempt++) {
		if (pick)
			set_port(&ss, 0);
		ufd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (ufd < 0 || bind(ufd, (struct sockaddr *)&ss, sslen) < 0)
			log_fatal("bind udp %s: %s", argv[optind], strerror(errno));
		set_port(&ss, get_port(ufd));
		tfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (tfd < 0)
			log_fatal("socket: %s", strerror(errno));
		setsockopt(tfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(tfd, (struct sockaddr *)&ss, sslen) == 0 && listen(tfd, 64) == 0)
			break;
		if (!pick || errno != EADDRINUSE)
			log_fatal("bind tcp %s: %s", argv[optind], strerror(errno));
		close(ufd);
		close(tfd);
		ufd = tfd = -1;
	}
	if (ufd < 0)
		log_fatal("no port free for both UDP and TCP");

	if (selfpipe_open() < 0)
		log_fatal("pipe: %s", strerror(errno));
	selfpipe_catch(SIGTERM, SA_RESTART);
	selfpipe_catch(SIGINT, SA_RESTART);
	selfpipe_catch(SIGHUP, SA_RESTART);
	signal(SIGPIPE, SIG_IGN);

	if (portfile != NULL) {
		char text[16];
		/* Replaced atomically: a test polling for it never reads half. */
		bfmt(text, sizeof(text), "%u\n", get_port(ufd));
		if (file_replace(portfile, text, strlen(text), 0644) < 0)
			log_fatal("write %s: %s", portfile, strerror(errno));
	}
	log_info("serving %zu records on port %u (udp and tcp)", zone.count, get_port(ufd));

	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = ufd, .events = POLLIN },
			{ .fd = tfd, .events = POLLIN },
			{ .fd = selfpipe_fd(), .events = POLLIN },
		};
		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_fatal("poll: %s", strerror(errno));
		}
		if (pfd[2].revents & POLLIN) {
			int sig = selfpipe_read();
			if (sig > 0) {
				if (sig != SIGHUP)
					break;
				struct zone nz;
				if (load_zone(zone_path, &nz)) {
					free(zone.recs);
					zone = nz;
					log_info("reloaded %s: %zu records", zone_path, zone.count);
				} else {
					log_warning("keeping the old zone");
				}
			}
		}
		if (pfd[0].revents & POLLIN) {
			static uint8_t msg[65536];
			struct sockaddr_storage from;
			socklen_t flen = sizeof(from);
			char ftext[SOCK_ADDR_STRLEN];
			ssize_t n = recvfrom(ufd, msg, sizeof(msg), 0,
			    (struct sockaddr *)&from, &flen);
			if (n >= 0) {
				sock_addr_port_str((struct sockaddr *)&from, ftext, sizeof(ftext));
				size_t rlen = handle(msg, (size_t)n, &ans, UDP_LIMIT, ftext, "udp");
				if (rlen > 0)
					sendto(ufd, ans.buf, rlen, 0, (struct sockaddr *)&from, flen);
			}
		}
		if (pfd[1].revents & POLLIN) {
			struct sockaddr_storage from;
			socklen_t flen = sizeof(from);
			char ftext[SOCK_ADDR_STRLEN];
			int fd = accept(tfd, (struct sockaddr *)&from, &flen);
			if (fd >= 0) {
				sock_addr_port_str((struct sockaddr *)&from, ftext, sizeof(ftext));
				serve_tcp(fd, ftext, &ans);
				close(fd);
			}
		}
	}
	log_info("terminating");
	free(zone.recs);
	close(ufd);
	close(tfd);
	return 0;
}
