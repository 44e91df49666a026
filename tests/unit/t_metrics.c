/* The metrics service's parts (metrics/): the exposition encoder
 * (escapes, numbers, names), the HTTP request reader and its answers,
 * the rendering of a qmgr status reply and the queue counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "testutil.h"
#include "attr.h"
#include "qmgr_clnt.h"
#include "queue_dirs.h"
#include "metrics/metrics.h"

static const char *label_value(const char *v)
{
	static str_t s = STR_INIT;

	str_reset(&s);
	expo_label_value(&s, v);
	return str_cstr(&s) ? str_cstr(&s) : "";
}

static const char *help_text(const char *v)
{
	static str_t s = STR_INIT;

	str_reset(&s);
	expo_help_text(&s, v);
	return str_cstr(&s) ? str_cstr(&s) : "";
}

static const char *number(double v)
{
	static str_t s = STR_INIT;

	str_reset(&s);
	expo_number(&s, v);
	return str_cstr(&s);
}

ATF_TC_WITHOUT_HEAD(escapes);
ATF_TC_BODY(escapes, tc)
{
	ATF_CHECK_STREQ(label_value("mx.example.com"), "mx.example.com");
	ATF_CHECK_STREQ(label_value("[192.0.2.1]:25"), "[192.0.2.1]:25");
	ATF_CHECK_STREQ(label_value("a\\b"), "a\\\\b");
	ATF_CHECK_STREQ(label_value("say \"hi\""), "say \\\"hi\\\"");
	ATF_CHECK_STREQ(label_value("two\nlines"), "two\\nlines");
	ATF_CHECK_STREQ(label_value(""), "");
	/* UTF-8 kept; bytes that are not UTF-8 become U+FFFD, one each. */
	ATF_CHECK_STREQ(label_value("b\xc3\xbcro"), "b\xc3\xbcro");
	ATF_CHECK_STREQ(label_value("a\xff" "b"), "a\xef\xbf\xbd" "b");
	ATF_CHECK_STREQ(label_value("\xc3"), "\xef\xbf\xbd");
	ATF_CHECK_STREQ(label_value("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");
	ATF_CHECK_STREQ(label_value("\xed\xa0\x80"),
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	/* Help text: backslash and line feed only; quotes stay. */
	ATF_CHECK_STREQ(help_text("a \"b\" \\ c\nd"), "a \"b\" \\\\ c\\nd");
}

ATF_TC_WITHOUT_HEAD(numbers);
ATF_TC_BODY(numbers, tc)
{
	ATF_CHECK_STREQ(number(0), "0");
	ATF_CHECK_STREQ(number(-0.0), "0");
	ATF_CHECK_STREQ(number(1), "1");
	ATF_CHECK_STREQ(number(-42), "-42");
	ATF_CHECK_STREQ(number(10000), "10000");
	ATF_CHECK_STREQ(number(4294967296.0), "4294967296");
	ATF_CHECK_STREQ(number(9007199254740991.0), "9007199254740991");
	ATF_CHECK_STREQ(number(0.5), "0.5");
	ATF_CHECK_STREQ(number(0.1), "0.1");
	ATF_CHECK_STREQ(number(0.001), "0.001");
	ATF_CHECK_STREQ(number(1.0 / 3), "0.3333333333333333");
	ATF_CHECK_STREQ(number(1e300), "1e+300");
	ATF_CHECK_STREQ(number(2.5e-7), "2.5e-07");
	ATF_CHECK_STREQ(number(NAN), "NaN");
	ATF_CHECK_STREQ(number(INFINITY), "+Inf");
	ATF_CHECK_STREQ(number(-INFINITY), "-Inf");
	/* Whatever the form, it reads back exactly. */
	for (double v = 1e-9; v < 1e12; v *= 7.3)
		ATF_CHECK_EQ(strtod(number(v), NULL), v);
}

ATF_TC_WITHOUT_HEAD(families);
ATF_TC_BODY(families, tc)
{
	str_t s = STR_INIT;
	const char *labels[] = { "transport", "smtp", "nexthop", "a\"b", NULL };

	expo_family(&s, "petrel_x_total", "Things \\ done.\nSince start.",
	    EXPO_COUNTER);
	expo_sample(&s, "petrel_x_total", labels, 3);
	expo_sample(&s, "petrel_x_total", NULL, 0.25);
	expo_family(&s, "petrel_g", "A gauge.", EXPO_GAUGE);
	ATF_CHECK_STREQ(str_cstr(&s),
	    "# HELP petrel_x_total Things \\\\ done.\\nSince start.\n"
	    "# TYPE petrel_x_total counter\n"
	    "petrel_x_total{transport=\"smtp\",nexthop=\"a\\\"b\"} 3\n"
	    "petrel_x_total 0.25\n"
	    "# HELP petrel_g A gauge.\n"
	    "# TYPE petrel_g gauge\n");
	str_release(&s);

	ATF_CHECK(expo_metric_name_ok("petrel_up"));
	ATF_CHECK(expo_metric_name_ok("a:b_c9"));
	ATF_CHECK(!expo_metric_name_ok("9a"));
	ATF_CHECK(!expo_metric_name_ok(""));
	ATF_CHECK(!expo_metric_name_ok("a-b"));
	ATF_CHECK(expo_label_name_ok("nexthop"));
	ATF_CHECK(!expo_label_name_ok("a:b"));
	ATF_CHECK(!expo_label_name_ok("__name"));
}

/* Feeds the lines of text (LF-separated, no CR) to a fresh reader;
 * returns its status (0 when it wants more). */
static int http(const char *text, http_req_t *r)
{
	http_req_init(r);
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		if (http_req_line(r, p, n))
			return r->status;
		p += n + (p[n] == '\n');
	}
	return r->status;
}

/* head, n times unit, tail. */
static const char *build(str_t *s, const char *head, const char *unit, int n,
    const char *tail)
{
	str_set(s, head);
	for (int i = 0; i < n; i++)
		str_cat(s, unit);
	str_cat(s, tail);
	return str_cstr(s);
}

ATF_TC_WITHOUT_HEAD(http_requests);
ATF_TC_BODY(http_requests, tc)
{
	http_req_t r;
	str_t big = STR_INIT, line = STR_INIT;

	ATF_CHECK_EQ(http("GET /metrics HTTP/1.1\nHost: x\n\n", &r), 200);
	ATF_CHECK(!r.head && r.v11);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\n\n", &r), 200);
	ATF_CHECK_EQ(http("HEAD /metrics HTTP/1.0\nAccept: */*\n\n", &r), 200);
	ATF_CHECK(r.head);
	ATF_CHECK_EQ(http("GET /metrics?name[]=x HTTP/1.1\nHOST: x\n"
	    "Content-Length: 0\n\n", &r), 200);
	/* Not finished before the empty line. */
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.1\nHost: x\n", &r), 0);

	ATF_CHECK_EQ(http("GET / HTTP/1.1\nHost: x\n\n", &r), 404);
	ATF_CHECK_EQ(http("GET /metrics/ HTTP/1.0\n\n", &r), 404);
	ATF_CHECK_EQ(http("GET /metricsx HTTP/1.0\n\n", &r), 404);
	ATF_CHECK_EQ(http("POST /metrics HTTP/1.1\n", &r), 405);
	ATF_CHECK_EQ(http("get /metrics HTTP/1.1\n", &r), 405);
	ATF_CHECK_EQ(http("GET /metrics HTTP/2.0\n", &r), 505);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.2\n", &r), 505);

	ATF_CHECK_EQ(http("GARBAGE\n", &r), 400);
	ATF_CHECK_EQ(http("\n", &r), 400);
	ATF_CHECK_EQ(http("GET  /metrics HTTP/1.0\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics  HTTP/1.0\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0 \n", &r), 400);
	ATF_CHECK_EQ(http("GET metrics HTTP/1.0\n", &r), 400);
	ATF_CHECK_EQ(http("GET http://x/metrics HTTP/1.0\n", &r), 400);
	ATF_CHECK_EQ(http("GET /met\x01rics HTTP/1.0\n", &r), 400);
	ATF_CHECK_EQ(http("GET /m\xc3\xa9trics HTTP/1.0\n", &r), 400);
	ATF_CHECK_EQ(http("G(T /metrics HTTP/1.0\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.x\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics http/1.0\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.1\n\n", &r), 400);
	ATF_CHECK_STREQ(r.why, "HTTP/1.1 request without Host");
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\nHost: a\nHost: b\n\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\nno colon\n\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\nBad Name: x\n\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\n: x\n\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\nA: b\n c\n\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\nA: b\x7f\n\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\nA: b\rc\n\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\nContent-Length: 5\n\n", &r), 400);
	ATF_CHECK_EQ(http("GET /metrics HTTP/1.0\nTransfer-Encoding: chunked\n\n",
	    &r), 400);

	/* Limits: the request line, one header line, the number of lines,
	 * the bytes of header. */
	ATF_CHECK_EQ(http(build(&big, "GET /metrics?", "a", HTTP_REQLINE_MAX - 22,
	    " HTTP/1.0\n\n"), &r), 200);
	ATF_CHECK_EQ(http(build(&big, "GET /metrics?", "a", HTTP_REQLINE_MAX - 21,
	    " HTTP/1.0\n\n"), &r), 400);
	ATF_CHECK_STREQ(r.why, "request line too long");
	ATF_CHECK_EQ(http(build(&big, "GET /metrics HTTP/1.0\nA: ", "a",
	    HTTP_HEADER_MAX - 3, "\n\n"), &r), 200);
	ATF_CHECK_EQ(http(build(&big, "GET /metrics HTTP/1.0\nA: ", "a",
	    HTTP_HEADER_MAX - 2, "\n\n"), &r), 400);
	ATF_CHECK_EQ(http(build(&big, "GET /metrics HTTP/1.0\n", "A: b\n",
	    HTTP_HEADERS_MAX, "\n"), &r), 200);
	ATF_CHECK_EQ(http(build(&big, "GET /metrics HTTP/1.0\n", "A: b\n",
	    HTTP_HEADERS_MAX + 1, "\n"), &r), 400);
	ATF_CHECK_STREQ(r.why, "too many header lines");
	build(&line, "A: ", "a", 3000, "\n");
	ATF_CHECK_EQ(http(build(&big, "GET /metrics HTTP/1.0\n", str_cstr(&line),
	    6, "\n"), &r), 400);
	ATF_CHECK_STREQ(r.why, "header too large");
	/* A NUL inside a line (the length is what counts). */
	http_req_init(&r);
	ATF_CHECK(http_req_line(&r, "GET /\0metrics HTTP/1.0", 22));
	ATF_CHECK_EQ(r.status, 400);
	str_release(&big);
	str_release(&line);
}

ATF_TC_WITHOUT_HEAD(http_answers);
ATF_TC_BODY(http_answers, tc)
{
	str_t s = STR_INIT;

	http_answer(&s, 200, false, "text/plain; version=0.0.4; charset=utf-8",
	    "a 1\n", 4);
	ATF_CHECK_STREQ(str_cstr(&s), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
	    "Content-Length: 4\r\nConnection: close\r\n\r\na 1\n");
	str_reset(&s);
	http_answer(&s, 200, true, "text/plain", "a 1\n", 4);
	ATF_CHECK_STREQ(str_cstr(&s), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 4\r\n"
	    "Connection: close\r\n\r\n");
	str_reset(&s);
	http_answer(&s, 405, false, NULL, "405 Method Not Allowed\n", 23);
	ATF_CHECK_STREQ(str_cstr(&s), "HTTP/1.1 405 Method Not Allowed\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 23\r\n"
	    "Allow: GET, HEAD\r\nConnection: close\r\n\r\n"
	    "405 Method Not Allowed\n");
	str_release(&s);
}

/* A status reply as qmgr writes it, decoded. */
static attr_msg_t *reply(const str_t *enc)
{
	attr_reader_t *rd = attr_reader_new(NULL, ATTR_READ_LENIENT, NULL);
	size_t used = 0;
	attr_msg_t *m;

	ATF_REQUIRE_EQ(attr_reader_feed(rd, str_cstr(enc), str_len(enc), &used),
	    ATTR_DONE);
	m = attr_reader_take(rd);
	attr_reader_free(rd);
	return m;
}

ATF_TC_WITHOUT_HEAD(render);
ATF_TC_BODY(render, tc)
{
	str_t enc = STR_INIT, out = STR_INIT;
	metrics_input_t in;
	attr_msg_t *m;

	attr_put_int(&enc, "status", QMGR_CLNT_OK);
	attr_put_long(&enc, "messages", 2);
	attr_put_long(&enc, "new_messages", 12);
	attr_put_long(&enc, "rcpt_sent", 30);
	attr_put_long(&enc, "rcpt_bounced", 1);
	attr_put_long(&enc, "rcpt_deferred", 5);
	attr_put_list(&enc, "transport", 1);
	attr_put_str(&enc, "name", "smtp");
	attr_put_int(&enc, "busy", 3);
	attr_put_int(&enc, "process_limit", 100);
	attr_put_end(&enc);
	attr_put_long(&enc, "queues_omitted", 0);
	attr_put_list(&enc, "queue", 2);
	attr_put_str(&enc, "transport", "smtp");
	attr_put_str(&enc, "nexthop", "we\"ird\n.example");
	attr_put_int(&enc, "window", 4);
	attr_put_str(&enc, "failure", "0.500");
	attr_put_long(&enc, "deferrals", 7);
	attr_put_end(&enc);
	attr_put_str(&enc, "nexthop", "no-transport.example");	/* skipped */
	attr_put_int(&enc, "window", 9);
	attr_put_end(&enc);
	attr_put_list(&enc, "held", 1);
	attr_put_str(&enc, "nexthop", "held.example");
	attr_put_end(&enc);
	attr_put_long(&enc, "dsc_count", 4);
	attr_put_list(&enc, "dsc", 2);
	attr_put_str(&enc, "transport", "smtp");
	attr_put_str(&enc, "nexthop", "dead.example");
	attr_put_str(&enc, "state", "suspended");
	attr_put_int(&enc, "failures", 3);
	attr_put_long(&enc, "retry_at", 1700000300);
	attr_put_end(&enc);
	attr_put_str(&enc, "transport", "smtp");
	attr_put_str(&enc, "nexthop", "mx.example");
	attr_put_str(&enc, "extra", "mx1.example,mx2.example");
	attr_put_int(&enc, "failures", 1);
	attr_put_end(&enc);
	attr_put_end(&enc);
	m = reply(&enc);

	memset(&in, 0, sizeof(in));
	in.status = m;
	for (int i = 0; i < METRICS_NQUEUES; i++)
		in.queue[i] = i;
	in.queue[5] = -1;	/* corrupt could not be counted */
	in.duration = 0.125;
	metrics_render(&out, &in);
	CHECK_LINE(str_cstr(&out), "petrel_qmgr_up 1");
	CHECK_LINE(str_cstr(&out), "# TYPE petrel_qmgr_messages_received_total counter");
	CHECK_LINE(str_cstr(&out), "petrel_qmgr_messages_received_total 12");
	CHECK_LINE(str_cstr(&out), "petrel_qmgr_recipients_delivered_total 30");
	CHECK_LINE(str_cstr(&out), "petrel_qmgr_recipients_bounced_total 1");
	CHECK_LINE(str_cstr(&out), "petrel_qmgr_recipients_deferred_total 5");
	CHECK_LINE(str_cstr(&out), "petrel_qmgr_active_messages 2");
	CHECK_LINE(str_cstr(&out), "petrel_qmgr_dsc_entries 4");
	CHECK_LINE(str_cstr(&out), "petrel_qmgr_destinations_suspended 1");
	CHECK_LINE(str_cstr(&out), "petrel_transport_busy{transport=\"smtp\"} 3");
	CHECK_LINE(str_cstr(&out),
	    "petrel_transport_process_limit{transport=\"smtp\"} 100");
	CHECK_LINE(str_cstr(&out), "petrel_destination_window{transport=\"smtp\","
	    "nexthop=\"we\\\"ird\\n.example\"} 4");
	CHECK_LINE(str_cstr(&out), "petrel_destination_deferrals_total{"
	    "transport=\"smtp\",nexthop=\"we\\\"ird\\n.example\"} 7");
	ATF_CHECK(strstr(str_cstr(&out), "no-transport") == NULL);
	/* Status cache entries: the MX set is a label, empty when absent. */
	CHECK_LINE(str_cstr(&out), "petrel_dsc_failures{transport=\"smtp\","
	    "nexthop=\"dead.example\",extra=\"\"} 3");
	CHECK_LINE(str_cstr(&out), "petrel_dsc_retry_timestamp_seconds{"
	    "transport=\"smtp\",nexthop=\"dead.example\",extra=\"\"} 1700000300");
	CHECK_LINE(str_cstr(&out), "petrel_dsc_failures{transport=\"smtp\","
	    "nexthop=\"mx.example\",extra=\"mx1.example,mx2.example\"} 1");
	CHECK_LINE(str_cstr(&out), "petrel_queue_messages{queue=\"maildrop\"} 0");
	CHECK_LINE(str_cstr(&out), "petrel_queue_messages{queue=\"hold\"} 4");
	ATF_CHECK(strstr(str_cstr(&out), "queue=\"corrupt\"") == NULL);
	CHECK_LINE(str_cstr(&out), "petrel_queue_scan_error 1");
	CHECK_LINE(str_cstr(&out), "petrel_scrape_duration_seconds 0.125");
	attr_msg_free(m);

	/* qmgr not there, or refusing: up 0 and nothing of the scheduler. */
	str_reset(&enc);
	attr_put_int(&enc, "status", QMGR_CLNT_FAIL);
	attr_put_long(&enc, "new_messages", 12);
	attr_put_end(&enc);
	m = reply(&enc);
	for (int k = 0; k < 2; k++) {
		in.status = k == 0 ? NULL : m;
		in.queue[5] = 0;
		str_reset(&out);
		metrics_render(&out, &in);
		CHECK_LINE(str_cstr(&out), "petrel_qmgr_up 0");
		CHECK_LINE(str_cstr(&out), "petrel_queue_scan_error 0");
		CHECK_LINE(str_cstr(&out), "petrel_queue_messages{queue=\"corrupt\"} 0");
		ATF_CHECK(strstr(str_cstr(&out), "received") == NULL);
	}
	attr_msg_free(m);
	str_release(&enc);
	str_release(&out);
}

/* Queue counts: message files at any hash depth, everything in corrupt. */
ATF_TC_WITHOUT_HEAD(count);
ATF_TC_BODY(count, tc)
{
	queue_layout_t ql;
	str_t err = STR_INIT;
	long n = -1;

	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred", 1, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	ATF_REQUIRE(metrics_count_queue(&ql, "deferred", &n, &err) == 0);
	ATF_CHECK_EQ(n, 0);
	ATF_REQUIRE(mkdir("q/deferred/1", 0700) == 0);
	put_file("q/deferred/1/1NG5M7NW240AH0C5", "x");
	put_file("q/deferred/1NG5M7NW240AH0C6", "x");	/* depth 0 */
	put_file("q/deferred/tmp.123", "x");		/* not a message */
	put_file("q/deferred/README", "x");
	ATF_REQUIRE(metrics_count_queue(&ql, "deferred", &n, &err) == 0);
	ATF_CHECK_EQ(n, 2);
	put_file("q/corrupt/1NG5M7NW240AH0C7", "x");
	put_file("q/corrupt/1NG5M7NW240AH0C7.1", "x");
	ATF_REQUIRE(metrics_count_queue(&ql, "corrupt", &n, &err) == 0);
	ATF_CHECK_EQ(n, 2);
	queue_layout_free(&ql);
	str_release(&err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, escapes);
	ATF_TP_ADD_TC(tp, numbers);
	ATF_TP_ADD_TC(tp, families);
	ATF_TP_ADD_TC(tp, http_requests);
	ATF_TP_ADD_TC(tp, http_answers);
	ATF_TP_ADD_TC(tp, render);
	ATF_TP_ADD_TC(tp, count);
	return atf_no_error();
}
