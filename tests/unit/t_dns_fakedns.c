/* Integration tests of libglobal/dns against a real server: each test
 * starts tests/tools/fakedns on 127.0.0.1 with a port the kernel picks
 * and a zone file written here, and points a resolver at it explicitly
 * (dns_resolver_new("127.0.0.1:PORT")), so the queries go through
 * res_nmkquery/res_nsend and a socket, and never to the machine's own
 * name servers.  fakedns is found next to this program, in
 * ../tools/ (atf's srcdir is the program's directory). */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>
#include "dns.h"
#include "file.h"
#include "pconfig.h"

static const char zone_text[] =
    "example.com MX 20 mx2.example.com\n"
    "example.com MX 10 mx1.example.com.\n"
    "example.com MX 30 mx3.example.com\n"
    "mx1.example.com A 127.0.0.1\n"
    "mx1.example.com AAAA ::1\n"
    "mx2.example.com A 127.0.0.2\n"
    "mx3.example.com A 127.0.0.3\n"
    "nomx.example.com A 127.0.0.4\n"
    "nomx.example.com AAAA ::1\n"
    "nullmx.example.com MX 0 .\n"
    "nullmx.example.com A 127.0.0.5\n"
    "broken.example.com SERVFAIL\n"
    "refused.example.com REFUSED\n"
    "gone.example.com NXDOMAIN\n"
    "slow.example.com DROP\n"
    "alias.example.com CNAME mx1.example.com\n"
    "viaalias.example.com MX 10 alias.example.com\n"
    "self.example.com MX 10 mx1.example.com\n"
    "self.example.com MX 20 mx2.example.com\n"
    "backup.example.com MX 10 mx2.example.com\n"
    "backup.example.com MX 20 mx1.example.com\n"
    "txtonly.example.com TXT \"hello\"\n"
    "deadmx.example.com MX 10 broken.example.com\n";

/* The running server: pid and port, in files too so the cleanup part
 * can stop it after a failed body. */
static pid_t dns_pid = -1;
static int dns_port;

static void stop_fakedns(void)
{
	FILE *fp;
	int pid = (int)dns_pid, i;

	if (pid <= 0 && (fp = fopen("fakedns.pid", "r")) != NULL) {
		if (fscanf(fp, "%d", &pid) != 1)
			pid = -1;
		fclose(fp);
	}
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (i = 0; i < 100; i++) {
		if (waitpid(pid, NULL, WNOHANG) != 0)
			break;
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (i == 100) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	dns_pid = -1;
	unlink("fakedns.pid");
}

/* Starts fakedns with zone_text plus extra; fails the test if it does not
 * come up within 5 s. */
static void start_fakedns(const atf_tc_t *tc, const char *extra)
{
	char path[4096];
	str_t zone = STR_INIT;
	FILE *fp;
	int i;

	ATF_REQUIRE(atf_tc_has_config_var(tc, "srcdir"));
	snprintf(path, sizeof(path), "%s/../tools/fakedns", atf_tc_get_config_var(tc, "srcdir"));
	ATF_REQUIRE_MSG(access(path, X_OK) == 0, "%s: %s (make tests builds it)", path,
	    strerror(errno));
	str_set(&zone, zone_text);
	if (extra != NULL)
		str_cat(&zone, extra);
	fp = fopen("zone", "w");
	ATF_REQUIRE(fp != NULL);
	fputs(str_cstr(&zone), fp);
	ATF_REQUIRE(fclose(fp) == 0);
	str_release(&zone);
	unlink("fakedns.port");

	dns_pid = fork();
	ATF_REQUIRE(dns_pid >= 0);
	if (dns_pid == 0) {
		int fd = open("fakedns.err", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		execl(path, "fakedns", "-v", "-P", "fakedns.port", "-z", "zone",
		    "127.0.0.1:0", (char *)NULL);
		_exit(127);
	}
	fp = fopen("fakedns.pid", "w");
	ATF_REQUIRE(fp != NULL);
	fprintf(fp, "%d\n", (int)dns_pid);
	fclose(fp);
	for (i = 0; i < 100; i++) {
		if ((fp = fopen("fakedns.port", "r")) != NULL) {
			int ok = fscanf(fp, "%d", &dns_port) == 1;
			fclose(fp);
			if (ok && dns_port > 0)
				return;
		}
		if (waitpid(dns_pid, NULL, WNOHANG) != 0) {
			dns_pid = -1;
			atf_tc_fail("fakedns exited at start; see fakedns.err");
		}
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	atf_tc_fail("fakedns did not write its port within 5 s");
}

/* Stops the server and fails on a sanitizer report in its output. */
static void finish(void)
{
	str_t text = STR_INIT;

	stop_fakedns();
	if (file_read_all("fakedns.err", &text, 1 << 20) == 0) {
		ATF_CHECK_MSG(strstr(str_cstr(&text), "Sanitizer") == NULL &&
		    strstr(str_cstr(&text), "runtime error") == NULL,
		    "fakedns reported: %s", str_cstr(&text));
	}
	str_release(&text);
}

static dns_resolver_t *resolver(void)
{
	char spec[64];
	str_t why = STR_INIT;
	dns_resolver_t *r;

	snprintf(spec, sizeof(spec), "127.0.0.1:%d", dns_port);
	r = dns_resolver_new(spec, &why);
	ATF_REQUIRE_MSG(r != NULL, "%s", str_cstr(&why));
	/* Bounded: a lost datagram costs 2 s, never minutes. */
	dns_resolver_set_limits(r, 2, 2);
	str_release(&why);
	return r;
}

static uint32_t keep_order(void *ctx)
{
	(void)ctx;
	return 1;
}

static void opts(dns_opts_t *o, dns_resolver_t *r)
{
	memset(o, 0, sizeof(*o));
	o->lookup = DNS_LOOKUP_DNS;
	o->families = DNS_INET4 | DNS_INET6;
	o->resolver = r;
	o->myhostname = "petrel.test";
	o->rand = keep_order;
}

static void render(const dns_servers_t *s, str_t *out)
{
	str_reset(out);
	for (size_t i = 0; i < s->n; i++) {
		char pb[16] = "-";
		if (s->v[i].pref != DNS_PREF_NONE)
			snprintf(pb, sizeof(pb), "%d", s->v[i].pref);
		str_catf(out, "%s%s[%s]:%u/%s", i ? " " : "", s->v[i].hostname,
		    s->v[i].addrstr, s->v[i].port, pb);
	}
}

static void check_find(const char *spec, const dns_opts_t *o, enum dns_result want,
    const char *want_text)
{
	dns_nexthop_t nh;
	dns_servers_t s;
	str_t why = STR_INIT, text = STR_INIT;

	ATF_REQUIRE_EQ_MSG(dns_nexthop_parse(spec, 25, &nh, &why), 0, "%s", str_cstr(&why));
	enum dns_result res = dns_find_servers(&nh, o, &s);
	ATF_CHECK_EQ_MSG(res, want, "%s: %s %s", spec, s.dsn, str_cstr(&s.reason));
	if (res == DNS_RESULT_OK) {
		render(&s, &text);
		ATF_CHECK_STREQ_MSG(str_cstr(&text), want_text, "%s", spec);
	} else {
		str_setf(&text, "%s %s", s.dsn, str_cstr(&s.reason));
		ATF_CHECK_MSG(strstr(str_cstr(&text), want_text) != NULL,
		    "%s: \"%s\" lacks \"%s\"", spec, str_cstr(&text), want_text);
	}
	dns_servers_free(&s);
	str_release(&why);
	str_release(&text);
}

ATF_TC_WITH_CLEANUP(mx_order);
ATF_TC_HEAD(mx_order, tc)
{
	atf_tc_set_md_var(tc, "descr", "MX hosts in preference order with their "
	    "A and AAAA addresses, through a real server");
}
ATF_TC_BODY(mx_order, tc)
{
	dns_resolver_t *r;
	dns_opts_t o;

	start_fakedns(tc, NULL);
	r = resolver();
	opts(&o, r);
	check_find("example.com", &o, DNS_RESULT_OK,
	    "mx1.example.com[127.0.0.1]:25/10 mx1.example.com[::1]:25/10 "
	    "mx2.example.com[127.0.0.2]:25/20 mx3.example.com[127.0.0.3]:25/30");
	/* Case and trailing dot do not matter; the port is kept. */
	check_find("EXAMPLE.com.:2525", &o, DNS_RESULT_OK,
	    "mx1.example.com[127.0.0.1]:2525/10 mx1.example.com[::1]:2525/10 "
	    "mx2.example.com[127.0.0.2]:2525/20 mx3.example.com[127.0.0.3]:2525/30");
	o.families = DNS_INET4;
	o.address_limit = 2;
	check_find("example.com", &o, DNS_RESULT_OK,
	    "mx1.example.com[127.0.0.1]:25/10 mx2.example.com[127.0.0.2]:25/20");
	/* An MX host that is a CNAME is followed. */
	check_find("viaalias.example.com", &o, DNS_RESULT_OK,
	    "alias.example.com[127.0.0.1]:25/10");
	/* [host]: no MX lookup. */
	check_find("[mx3.example.com]:26", &o, DNS_RESULT_OK,
	    "mx3.example.com[127.0.0.3]:26/-");
	dns_resolver_free(r);
	finish();
}
ATF_TC_CLEANUP(mx_order, tc)
{
	(void)tc;
	stop_fakedns();
}

ATF_TC_WITH_CLEANUP(negative);
ATF_TC_HEAD(negative, tc)
{
	atf_tc_set_md_var(tc, "descr", "NXDOMAIN bounces (5.4.4), SERVFAIL, REFUSED "
	    "and no answer defer (4.4.3), NODATA");
}
ATF_TC_BODY(negative, tc)
{
	dns_resolver_t *r;
	dns_opts_t o;
	dns_reply_t reply;
	str_t why = STR_INIT;

	start_fakedns(tc, NULL);
	r = resolver();
	opts(&o, r);
	check_find("nosuch.example.com", &o, DNS_RESULT_BOUNCE,
	    "5.4.4 Host or domain name not found. Name service error for "
	    "name=nosuch.example.com type=MX: Host not found");
	check_find("gone.example.com", &o, DNS_RESULT_BOUNCE, "5.4.4");
	check_find("broken.example.com", &o, DNS_RESULT_DEFER,
	    "4.4.3 Host or domain name not found. Name service error for "
	    "name=broken.example.com type=MX: Host not found, try again (server reply SERVFAIL)");
	check_find("refused.example.com", &o, DNS_RESULT_DEFER, "4.4.3");
	check_find("refused.example.com", &o, DNS_RESULT_DEFER, "REFUSED");
	/* The only MX host's address lookup fails: defer. */
	check_find("deadmx.example.com", &o, DNS_RESULT_DEFER,
	    "4.4.3 Host or domain name not found. Name service error for "
	    "name=broken.example.com type=A");
	/* A name without MX records, or without any address. */
	ATF_CHECK_EQ(dns_lookup(r, "nomx.example.com", DNS_T_MX, &reply, &why), DNS_NODATA);
	dns_reply_free(&reply);
	ATF_CHECK_EQ(dns_lookup(r, "txtonly.example.com", DNS_T_A, &reply, &why), DNS_NODATA);
	dns_reply_free(&reply);
	check_find("txtonly.example.com", &o, DNS_RESULT_BOUNCE,
	    "5.4.4 Host or domain name not found. Name service error for "
	    "name=txtonly.example.com type=A: No address associated with the name");
	ATF_CHECK_EQ(dns_lookup(r, "gone.example.com", DNS_T_A, &reply, &why), DNS_NXDOMAIN);
	dns_reply_free(&reply);
	/* CNAME in the answer. */
	ATF_CHECK_EQ(dns_lookup(r, "alias.example.com", DNS_T_A, &reply, &why), DNS_FOUND);
	ATF_CHECK_STREQ(reply.canon, "mx1.example.com");
	dns_reply_free(&reply);
	dns_resolver_free(r);
	str_release(&why);
	finish();
}
ATF_TC_CLEANUP(negative, tc)
{
	(void)tc;
	stop_fakedns();
}

ATF_TC_WITH_CLEANUP(timeout);
ATF_TC_HEAD(timeout, tc)
{
	atf_tc_set_md_var(tc, "descr", "A server that never answers: a bounded "
	    "wait, then a temporary failure");
	atf_tc_set_md_var(tc, "timeout", "60");
}
ATF_TC_BODY(timeout, tc)
{
	dns_resolver_t *r;
	dns_opts_t o;

	start_fakedns(tc, NULL);
	r = resolver();
	dns_resolver_set_limits(r, 1, 1);
	opts(&o, r);
	check_find("slow.example.com", &o, DNS_RESULT_DEFER,
	    "4.4.3 Host or domain name not found. Name service error for "
	    "name=slow.example.com type=MX: Host not found, try again "
	    "(no reply from the name server (timeout))");
	/* The server still answers other names afterwards. */
	check_find("[mx2.example.com]", &o, DNS_RESULT_OK, "mx2.example.com[127.0.0.2]:25/-");
	dns_resolver_free(r);
	finish();
}
ATF_TC_CLEANUP(timeout, tc)
{
	(void)tc;
	stop_fakedns();
}

ATF_TC_WITH_CLEANUP(null_and_implicit_mx);
ATF_TC_HEAD(null_and_implicit_mx, tc)
{
	atf_tc_set_md_var(tc, "descr", "RFC 7505 null MX bounces 5.1.10; a domain "
	    "without MX is its own MX");
}
ATF_TC_BODY(null_and_implicit_mx, tc)
{
	dns_resolver_t *r;
	dns_opts_t o;

	start_fakedns(tc, NULL);
	r = resolver();
	opts(&o, r);
	check_find("nullmx.example.com", &o, DNS_RESULT_BOUNCE,
	    "5.1.10 Domain nullmx.example.com does not accept mail (nullMX)");
	check_find("nomx.example.com", &o, DNS_RESULT_OK,
	    "nomx.example.com[127.0.0.4]:25/- nomx.example.com[::1]:25/-");
	o.prefer = DNS_PREFER_IPV6;
	check_find("nomx.example.com", &o, DNS_RESULT_OK,
	    "nomx.example.com[::1]:25/- nomx.example.com[127.0.0.4]:25/-");
	dns_resolver_free(r);
	finish();
}
ATF_TC_CLEANUP(null_and_implicit_mx, tc)
{
	(void)tc;
	stop_fakedns();
}

ATF_TC_WITH_CLEANUP(loops);
ATF_TC_HEAD(loops, tc)
{
	atf_tc_set_md_var(tc, "descr", "Our own MX preference and worse are dropped; "
	    "as best MX, a mail loop (5.4.6)");
}
ATF_TC_BODY(loops, tc)
{
	dns_resolver_t *r;
	dns_opts_t o;
	struct sockaddr_storage own;

	start_fakedns(tc, NULL);
	r = resolver();
	opts(&o, r);
	o.families = DNS_INET4;
	/* By name. */
	o.myhostname = "mx2.example.com";
	check_find("self.example.com", &o, DNS_RESULT_OK, "mx1.example.com[127.0.0.1]:25/10");
	check_find("backup.example.com", &o, DNS_RESULT_BOUNCE,
	    "5.4.6 mail for backup.example.com loops back to myself");
	/* By address. */
	o.myhostname = "petrel.test";
	ATF_REQUIRE_EQ(sock_addr_parse("127.0.0.2", 0, &own, NULL), 0);
	o.own_addrs = &own;
	o.n_own_addrs = 1;
	check_find("self.example.com", &o, DNS_RESULT_OK, "mx1.example.com[127.0.0.1]:25/10");
	check_find("backup.example.com", &o, DNS_RESULT_BOUNCE,
	    "5.4.6 mail for backup.example.com loops back to myself");
	dns_resolver_free(r);
	finish();
}
ATF_TC_CLEANUP(loops, tc)
{
	(void)tc;
	stop_fakedns();
}

ATF_TC_WITH_CLEANUP(tcp_retry);
ATF_TC_HEAD(tcp_retry, tc)
{
	atf_tc_set_md_var(tc, "descr", "An answer too big for UDP comes truncated "
	    "and is fetched again over TCP, whole");
}
ATF_TC_BODY(tcp_retry, tc)
{
	str_t extra = STR_INIT, why = STR_INIT;
	dns_resolver_t *r;
	dns_reply_t reply;

	for (int i = 1; i <= 60; i++)
		str_catf(&extra, "many.example.com MX %d mx%02d.many.example.com\n", i, i);
	start_fakedns(tc, str_cstr(&extra));
	r = resolver();
	ATF_CHECK_EQ_MSG(dns_lookup(r, "many.example.com", DNS_T_MX, &reply, &why),
	    DNS_FOUND, "%s", str_cstr(&why));
	ATF_CHECK_EQ(reply.nrr, 60);
	dns_reply_free(&reply);
	dns_resolver_free(r);
	str_release(&extra);
	str_release(&why);
	finish();
}
ATF_TC_CLEANUP(tcp_retry, tc)
{
	(void)tc;
	stop_fakedns();
}

ATF_TC_WITH_CLEANUP(config);
ATF_TC_HEAD(config, tc)
{
	atf_tc_set_md_var(tc, "descr", "dns_server_address and the smtp_* "
	    "parameters from main.cf drive a lookup");
}
ATF_TC_BODY(config, tc)
{
	str_t cf = STR_INIT, why = STR_INIT;
	dns_resolver_t *r;
	dns_opts_t o;

	start_fakedns(tc, NULL);
	str_setf(&cf, "dns_server_address = 127.0.0.1:%d\n"
	    "inet_protocols = ipv4\n"
	    "smtp_mx_address_limit = 1\n"
	    "myhostname = petrel.test\n", dns_port);
	ATF_REQUIRE_EQ(pconfig_load_text(str_cstr(&cf), "main.cf"), 0);
	r = dns_resolver_from_config(&why);
	ATF_REQUIRE_MSG(r != NULL, "%s", str_cstr(&why));
	ATF_REQUIRE_EQ(dns_opts_from_config(&o, &why), 0);
	o.resolver = r;
	check_find("example.com", &o, DNS_RESULT_OK, "mx1.example.com[127.0.0.1]:25/10");
	dns_resolver_free(r);
	pconfig_reset();
	str_release(&cf);
	str_release(&why);
	finish();
}
ATF_TC_CLEANUP(config, tc)
{
	(void)tc;
	stop_fakedns();
}

/* No server listening: the port of a socket just closed.  Over UDP the
 * kernel's ICMP reply makes this a quick "refused". */
ATF_TC_WITHOUT_HEAD(no_server);
ATF_TC_BODY(no_server, tc)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	char spec[64];
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	dns_resolver_t *r;
	dns_reply_t reply;
	str_t why = STR_INIT;

	ATF_REQUIRE(fd >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ATF_REQUIRE(bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	ATF_REQUIRE(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
	close(fd);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", ntohs(sin.sin_port));
	r = dns_resolver_new(spec, &why);
	ATF_REQUIRE(r != NULL);
	dns_resolver_set_limits(r, 1, 1);
	ATF_CHECK_EQ(dns_lookup(r, "example.com", DNS_T_MX, &reply, &why), DNS_TEMPFAIL);
	ATF_CHECK_MSG(strstr(str_cstr(&why), "name server") != NULL, "%s", str_cstr(&why));
	dns_reply_free(&reply);
	dns_resolver_free(r);
	str_release(&why);
	(void)tc;
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, mx_order);
	ATF_TP_ADD_TC(tp, negative);
	ATF_TP_ADD_TC(tp, timeout);
	ATF_TP_ADD_TC(tp, null_and_implicit_mx);
	ATF_TP_ADD_TC(tp, loops);
	ATF_TP_ADD_TC(tp, tcp_retry);
	ATF_TP_ADD_TC(tp, config);
	ATF_TP_ADD_TC(tp, no_server);
	return atf_no_error();
}
