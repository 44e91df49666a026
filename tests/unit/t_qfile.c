/* Unit tests for queue files (libglobal/qfile): writing and reading
 * back, content byte for byte, recipients in batches, in-place updates,
 * the durability protocol. */
#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "dirsync.h"
#include "file.h"
#include "log.h"
#include "qfile.h"
#include "str.h"

static queue_layout_t ql;

static void setup(const char *hashed)
{
	str_t err = STR_INIT;
	ATF_REQUIRE(queue_layout_init(&ql, "q", hashed, 1, &err) == 0);
	ATF_REQUIRE_MSG(queue_create_dirs(&ql, &err) == 0, "%s", str_cstr(&err));
	str_release(&err);
}

static qfw_t *new_writer(void)
{
	str_t err = STR_INIT;
	qfw_t *w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err);
	ATF_REQUIRE_MSG(w != NULL, "%s", str_cstr(&err));
	str_release(&err);
	return w;
}

static void commit(qfw_t *w)
{
	ATF_REQUIRE_MSG(qfw_commit(w) == 0, "%s", qfw_error(w));
}

static qfile_t *open_ok(const char *id, int flags)
{
	qf_err_t err;
	qfile_t *qf = qfile_open(&ql, QUEUE_INCOMING, id, flags, &err);
	ATF_REQUIRE_MSG(qf != NULL, "open %s: %s (offset %lld)", id, err.reason,
	    (long long)err.offset);
	return qf;
}

/* The content, reassembled from qfile_read_line pieces with max. */
static void read_content(qfile_t *qf, str_t *out, size_t max, size_t *lines)
{
	str_t line = STR_INIT;
	int r;

	str_reset(out);
	*lines = 0;
	qfile_content_rewind(qf);
	while ((r = qfile_read_line(qf, &line, max)) > 0) {
		ATF_REQUIRE(str_len(&line) <= max);
		str_append(out, line.buf, line.len);
		if (r == QF_LINE_LF)
			str_putc(out, '\n');
		else if (r == QF_LINE_CRLF)
			str_append(out, "\r\n", 2);
		if (r != QF_LINE_MORE)
			(*lines)++;
	}
	ATF_REQUIRE_MSG(r == QF_LINE_END, "read_line: %s",
	    qfile_error(qf)->reason);
	str_release(&line);
}

/* Content with everything the format must keep byte for byte. */
static void make_content(str_t *c)
{
	str_reset(c);
	str_cat(c, "From: Alice <alice@example.org>\r\n");
	str_cat(c, "Subject: =?utf-8?q?caf=C3=A9?=\n");
	str_cat(c, "X-Eight-Bit: caf\xc3\xa9 \xff\xfe\r\n");
	str_cat(c, "\r\n");
	str_cat(c, "bare LF line\n");
	str_cat(c, "CRLF line\r\n");
	str_cat(c, "a lone CR \r inside\n");
	str_append(c, "NUL \0 byte\n", 11);
	str_cat(c, "\n");
	/* A 1 MB line, split by the writer and reassembled. */
	for (int i = 0; i < 1024 * 1024; i++)
		str_putc(c, 'a' + i % 26);
	str_cat(c, "\r\n");
	str_cat(c, "last line without newline");
}

ATF_TC_WITHOUT_HEAD(write_read_back);
ATF_TC_BODY(write_read_back, tc)
{
	str_t content = STR_INIT, got = STR_INIT;
	char id[QUEUE_ID_SIZE];
	struct timeval arr = { 1700000000, 42 }, tv;
	size_t lines;

	setup("deferred");
	make_content(&content);
	qfw_t *w = new_writer();
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	ATF_REQUIRE(qfw_arrival(w, &arr) == 0);
	ATF_REQUIRE(qfw_sender(w, "alice@example.org") == 0);
	ATF_REQUIRE(qfw_envid(w, "QQ+2B314") == 0);
	ATF_REQUIRE(qfw_ret(w, QF_RET_HDRS) == 0);
	ATF_REQUIRE(qfw_attr(w, "rewrite_context", "local") == 0);
	ATF_REQUIRE(qfw_attr(w, "client_name", "host.example.com[192.0.2.1]") == 0);
	ATF_REQUIRE(qfw_attr(w, "log_ident", "") == 0);
	ATF_REQUIRE(qfw_warn_time(w, 1700014400) == 0);
	qf_rcpt_in_t r1 = { "bob@example.net", "bob", "rfc822;bob@example.net",
		DSN_NOTIFY_SUCCESS | DSN_NOTIFY_FAILURE };
	qf_rcpt_in_t r2 = { "carol@example.net", NULL, NULL, DSN_NOTIFY_NEVER };
	qf_rcpt_in_t r3 = { "dave@example.net", "", NULL, 0 };
	ATF_REQUIRE(qfw_rcpt(w, &r1) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r2) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r3) == 0);
	/* The content in awkward pieces: 1, 7, 4096, ... bytes. */
	size_t pieces[] = { 1, 7, 4096, 3, 65536, 1 };
	size_t pos = 0;
	for (int i = 0; pos < content.len; i++) {
		size_t n = pieces[i % 6];
		if (n > content.len - pos)
			n = content.len - pos;
		ATF_REQUIRE(qfw_content(w, content.buf + pos, n) == 0);
		pos += n;
	}
	/* Envelope values after the content are refused (attributes
	 * go to the extracted section: t_content_filter). */
	ATF_CHECK(qfw_envid(w, "late") < 0);
	qfw_free(w);

	/* That writer failed: nothing visible, no temporary file left. */
	DIR *d = opendir("q/incoming");
	struct dirent *de;
	ATF_REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL)
		ATF_CHECK_MSG(de->d_name[0] == '.', "left behind: %s", de->d_name);
	closedir(d);

	/* Again, properly. */
	w = new_writer();
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	ATF_REQUIRE(qfw_arrival(w, &arr) == 0);
	ATF_REQUIRE(qfw_sender(w, "alice@example.org") == 0);
	ATF_REQUIRE(qfw_envid(w, "QQ+2B314") == 0);
	ATF_REQUIRE(qfw_ret(w, QF_RET_HDRS) == 0);
	ATF_REQUIRE(qfw_attr(w, "rewrite_context", "local") == 0);
	ATF_REQUIRE(qfw_attr(w, "client_name", "host.example.com[192.0.2.1]") == 0);
	ATF_REQUIRE(qfw_attr(w, "log_ident", "") == 0);
	ATF_REQUIRE(qfw_warn_time(w, 1700014400) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r1) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r2) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r3) == 0);
	pos = 0;
	for (int i = 0; pos < content.len; i++) {
		size_t n = pieces[i % 6];
		if (n > content.len - pos)
			n = content.len - pos;
		ATF_REQUIRE(qfw_content(w, content.buf + pos, n) == 0);
		pos += n;
	}
	unsigned long before = qfw_fsync_count;
	commit(w);
	/* One file fsync and, with nobody else committing, the writer's own
	 * directory fsync. */
	ATF_CHECK_EQ(qfw_fsync_count - before, 2);
	ATF_CHECK(strstr(qfw_path(w), id) != NULL);
	qfw_free(w);

	qfile_t *qf = open_ok(id, 0);
	ATF_CHECK_STREQ(qfile_id(qf), id);
	ATF_CHECK_STREQ(qfile_sender(qf), "alice@example.org");
	ATF_CHECK_STREQ(qfile_envid(qf), "QQ+2B314");
	ATF_CHECK_EQ(qfile_ret(qf), QF_RET_HDRS);
	qfile_arrival(qf, &tv);
	ATF_CHECK_EQ(tv.tv_sec, arr.tv_sec);
	ATF_CHECK_EQ(tv.tv_usec, arr.tv_usec);
	ATF_CHECK_STREQ(qfile_attr(qf, "rewrite_context"), "local");
	ATF_CHECK_STREQ(qfile_attr(qf, "client_name"), "host.example.com[192.0.2.1]");
	ATF_CHECK_STREQ(qfile_attr(qf, "log_ident"), "");
	ATF_CHECK(qfile_attr(qf, "nosuch") == NULL);
	const char *an, *av;
	ATF_CHECK(qfile_attr_at(qf, 0, &an, &av) && strcmp(an, "rewrite_context") == 0);
	ATF_CHECK(qfile_attr_at(qf, 2, &an, &av) && strcmp(an, "log_ident") == 0);
	ATF_CHECK(!qfile_attr_at(qf, 3, &an, &av));
	ATF_CHECK_EQ(qfile_attempts(qf), 0);
	ATF_CHECK_EQ(qfile_warn_time(qf), 1700014400);
	ATF_CHECK_EQ(qfile_torn_slots(qf), 0);
	ATF_CHECK_EQ(qfile_content_size(qf), content.len);
	ATF_CHECK_EQ(qfile_rcpt_count(qf), 3);

	qf_rcpt_batch_t b = { 0 };
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, 0), 3);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].address), "bob@example.net");
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].orig), "bob");
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].orcpt), "rfc822;bob@example.net");
	ATF_CHECK_EQ(b.rcpt[0].notify, DSN_NOTIFY_SUCCESS | DSN_NOTIFY_FAILURE);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[1].address), "carol@example.net");
	ATF_CHECK_EQ(str_len(&b.rcpt[1].orig), 0);
	ATF_CHECK_EQ(str_len(&b.rcpt[1].orcpt), 0);
	ATF_CHECK_EQ(b.rcpt[1].notify, DSN_NOTIFY_NEVER);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[2].address), "dave@example.net");
	ATF_CHECK_EQ(b.rcpt[2].notify, 0);
	for (int i = 0; i < 3; i++)
		ATF_CHECK(!b.rcpt[i].done && !b.rcpt[i].extracted);
	ATF_CHECK_EQ(qfile_rcpt_read(qf, &b, 10, 0), 0);

	/* Content: whole lines, then in small pieces. */
	read_content(qf, &got, (size_t)-1, &lines);
	ATF_CHECK_EQ(got.len, content.len);
	ATF_CHECK(got.len == content.len && memcmp(got.buf, content.buf, got.len) == 0);
	ATF_CHECK_EQ(lines, 11);
	read_content(qf, &got, 100, &lines);
	ATF_CHECK(got.len == content.len && memcmp(got.buf, content.buf, got.len) == 0);
	ATF_CHECK_EQ(lines, 11);
	read_content(qf, &got, 1, &lines);
	ATF_CHECK(got.len == content.len && memcmp(got.buf, content.buf, got.len) == 0);

	/* Line kinds. */
	str_t line = STR_INIT;
	qfile_content_rewind(qf);
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 4096), QF_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "From: Alice <alice@example.org>");
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 4096), QF_LINE_LF);
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 4096), QF_LINE_CRLF);
	ATF_CHECK_STREQ(str_cstr(&line), "X-Eight-Bit: caf\xc3\xa9 \xff\xfe");
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 4096), QF_LINE_CRLF);
	ATF_CHECK_EQ(str_len(&line), 0);
	str_release(&line);
	qf_rcpt_batch_free(&b);
	qfile_close(qf);
	str_release(&content);
	str_release(&got);
	queue_layout_free(&ql);
}

/* Writes a message with the given content and n recipients; returns
 * the ID in id. */
static void write_msg(char *id, const char *content, size_t len, int nrcpt)
{
	qfw_t *w = new_writer();
	char addr[64];

	snprintf(id, QUEUE_ID_SIZE, "%s", qfw_id(w));
	ATF_REQUIRE(qfw_sender(w, "") == 0);
	for (int i = 0; i < nrcpt; i++) {
		snprintf(addr, sizeof(addr), "user%d@example.com", i);
		qf_rcpt_in_t r = { addr, NULL, NULL, 0 };
		ATF_REQUIRE(qfw_rcpt(w, &r) == 0);
	}
	if (len)
		ATF_REQUIRE(qfw_content(w, content, len) == 0);
	commit(w);
	qfw_free(w);
}

ATF_TC_WITHOUT_HEAD(empty_body_and_content);
ATF_TC_BODY(empty_body_and_content, tc)
{
	char id[QUEUE_ID_SIZE];
	str_t got = STR_INIT, line = STR_INIT;
	size_t lines;

	setup("");
	/* Header and the empty line, no body. */
	write_msg(id, "Subject: x\n\n", 12, 1);
	qfile_t *qf = open_ok(id, 0);
	ATF_CHECK_STREQ(qfile_sender(qf), "");
	read_content(qf, &got, 1000, &lines);
	ATF_CHECK_EQ(lines, 2);
	ATF_CHECK_STREQ(str_cstr(&got), "Subject: x\n\n");
	ATF_CHECK_EQ(qfile_content_size(qf), 12);
	qfile_close(qf);

	/* No content at all. */
	write_msg(id, NULL, 0, 1);
	qf = open_ok(id, 0);
	ATF_CHECK_EQ(qfile_content_size(qf), 0);
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 100), QF_LINE_END);
	qfile_close(qf);

	/* A single newline; a single byte without one; only CRLF. */
	write_msg(id, "\n", 1, 0);
	qf = open_ok(id, 0);
	ATF_CHECK_EQ(qfile_rcpt_count(qf), 0);
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 100), QF_LINE_LF);
	ATF_CHECK_EQ(str_len(&line), 0);
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 100), QF_LINE_END);
	qfile_close(qf);
	write_msg(id, "x", 1, 1);
	qf = open_ok(id, 0);
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 100), QF_LINE_NONE);
	ATF_CHECK_STREQ(str_cstr(&line), "x");
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 100), QF_LINE_END);
	qfile_close(qf);
	write_msg(id, "a\r", 2, 1);
	qf = open_ok(id, 0);
	ATF_CHECK_EQ(qfile_read_line(qf, &line, 100), QF_LINE_NONE);
	ATF_CHECK_STREQ(str_cstr(&line), "a\r");
	qfile_close(qf);
	str_release(&got);
	str_release(&line);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(crlf_never_split);
ATF_TC_BODY(crlf_never_split, tc)
{
	/* A line whose CR and LF the writer puts in different records
	 * (the CR is the last byte of an 8192-byte piece), read with every
	 * max around the split: a piece never ends in the CR of the CRLF. */
	char id[QUEUE_ID_SIZE];
	str_t c = STR_INIT, line = STR_INIT;

	setup("");
	for (int i = 0; i < QF_LINE_CHUNK - 1; i++)
		str_putc(&c, 'x');
	str_cat(&c, "\r\nnext\r\n");
	write_msg(id, c.buf, c.len, 1);
	qfile_t *qf = open_ok(id, 0);
	size_t maxes[] = { QF_LINE_CHUNK - 2, QF_LINE_CHUNK - 1, QF_LINE_CHUNK,
		QF_LINE_CHUNK + 1, 1, 3 };
	for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
		size_t total = 0;
		int r;
		qfile_content_rewind(qf);
		while ((r = qfile_read_line(qf, &line, maxes[m])) == QF_LINE_MORE)
			total += line.len;
		total += line.len;
		ATF_CHECK_EQ_MSG(r, QF_LINE_CRLF, "max %zu", maxes[m]);
		ATF_CHECK_EQ(total, QF_LINE_CHUNK - 1);
		ATF_CHECK_EQ(qfile_read_line(qf, &line, maxes[m] > 4 ? maxes[m] : 4),
		    QF_LINE_CRLF);
		ATF_CHECK_STREQ(str_cstr(&line), "next");
	}
	qfile_close(qf);
	str_release(&c);
	str_release(&line);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(extracted_recipients);
ATF_TC_BODY(extracted_recipients, tc)
{
	char id[QUEUE_ID_SIZE];
	str_t got = STR_INIT;
	size_t lines;

	setup("");
	qfw_t *w = new_writer();
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	ATF_REQUIRE(qfw_sender(w, "a@b") == 0);
	qf_rcpt_in_t env = { "env@example.com", NULL, NULL, 0 };
	ATF_REQUIRE(qfw_rcpt(w, &env) == 0);
	ATF_REQUIRE(qfw_content(w, "To: x@example.com\n\nbody no newline", 34) == 0);
	qf_rcpt_in_t x1 = { "x@example.com", "x@example.com", NULL, DSN_NOTIFY_DELAY };
	qf_rcpt_in_t x2 = { "y@example.com", NULL, NULL, 0 };
	ATF_REQUIRE(qfw_rcpt(w, &x1) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &x2) == 0);
	ATF_CHECK(qfw_content(w, "more", 4) < 0);	/* content is over */
	ATF_CHECK(strstr(qfw_error(w), "extracted") != NULL);
	ATF_CHECK(qfw_commit(w) < 0);
	qfw_free(w);

	w = new_writer();
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	ATF_REQUIRE(qfw_sender(w, "a@b") == 0);
	ATF_REQUIRE(qfw_rcpt(w, &env) == 0);
	ATF_REQUIRE(qfw_content(w, "To: x@example.com\n\nbody no newline", 34) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &x1) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &x2) == 0);
	commit(w);
	qfw_free(w);

	qfile_t *qf = open_ok(id, 0);
	ATF_CHECK_EQ(qfile_rcpt_count(qf), 3);
	qf_rcpt_batch_t b = { 0 };
	/* In batches of 1: envelope, then extracted after the content. */
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 1, 0), 1);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].address), "env@example.com");
	ATF_CHECK(!b.rcpt[0].extracted);
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 1, 0), 1);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].address), "x@example.com");
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].orig), "x@example.com");
	ATF_CHECK_EQ(b.rcpt[0].notify, DSN_NOTIFY_DELAY);
	ATF_CHECK(b.rcpt[0].extracted);
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 1, 0), 1);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].address), "y@example.com");
	ATF_CHECK(b.rcpt[0].extracted);
	ATF_CHECK_EQ(qfile_rcpt_read(qf, &b, 1, 0), 0);
	ATF_CHECK_EQ(b.cap, 1);
	read_content(qf, &got, 1000, &lines);
	ATF_CHECK_STREQ(str_cstr(&got), "To: x@example.com\n\nbody no newline");
	qfile_rcpt_rewind(qf);
	ATF_CHECK_EQ(qfile_rcpt_read(qf, &b, 100, 0), 3);
	qf_rcpt_batch_free(&b);
	qfile_close(qf);
	str_release(&got);
	queue_layout_free(&ql);
}

/* cleanup's REDIRECT and HOLD: recipients written before are marked
 * done (on disk already, or still in the writer's buffer; both file
 * versions), the new one stays; the file is committed into hold/. */
static void rcpts_done_case(int version, size_t content_len)
{
	char id[QUEUE_ID_SIZE];
	str_t c = STR_INIT;
	qf_err_t err;

	qfw_version = version;
	qfw_t *w = new_writer();
	qfw_version = 2;
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	qfw_track_rcpts(w);
	ATF_REQUIRE(qfw_sender(w, "a@b") == 0);
	qf_rcpt_in_t r1 = { "one@example.com", NULL, NULL, DSN_NOTIFY_NEVER };
	qf_rcpt_in_t r2 = { "two@example.com", "orig@example.com", NULL, 0 };
	ATF_REQUIRE(qfw_rcpt(w, &r1) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r2) == 0);
	str_cat(&c, "Subject: s\n\n");
	while (str_len(&c) < content_len)
		str_cat(&c, "0123456789abcdef0123456789abcdef0123456789abcdef\n");
	ATF_REQUIRE(qfw_content(w, c.buf, c.len) == 0);
	ATF_REQUIRE_MSG(qfw_rcpts_done(w) == 0, "%s", qfw_error(w));
	qf_rcpt_in_t nr = { "new@example.com", NULL, NULL, 0 };
	ATF_REQUIRE(qfw_rcpt(w, &nr) == 0);
	ATF_REQUIRE(qfw_set_queue(w, &ql, QUEUE_HOLD) == 0);
	commit(w);
	ATF_CHECK(qfw_set_queue(w, &ql, QUEUE_INCOMING) < 0);	/* too late */
	qfw_free(w);

	ATF_CHECK(qfile_open(&ql, QUEUE_INCOMING, id, 0, &err) == NULL);
	qfile_t *qf = qfile_open(&ql, QUEUE_HOLD, id, 0, &err);
	ATF_REQUIRE_MSG(qf != NULL, "open: %s", err.reason);
	qf_rcpt_batch_t b = { 0 };
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, 0), 1);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].address), "new@example.com");
	qfile_rcpt_rewind(qf);
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, QF_RCPT_ALL), 3);
	ATF_CHECK(b.rcpt[0].done && b.rcpt[1].done && !b.rcpt[2].done);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[1].orig), "orig@example.com");
	qf_rcpt_batch_free(&b);
	qfile_close(qf);
	str_release(&c);
}

ATF_TC_WITHOUT_HEAD(rcpts_done_and_hold);
ATF_TC_BODY(rcpts_done_and_hold, tc)
{
	setup("");
	rcpts_done_case(2, 100);		/* still buffered */
	rcpts_done_case(2, 200000);		/* written out */
	rcpts_done_case(1, 100);
	rcpts_done_case(1, 200000);
	/* not tracked: refused */
	qfw_t *w = new_writer();
	ATF_REQUIRE(qfw_sender(w, "a@b") == 0);
	ATF_CHECK(qfw_rcpts_done(w) < 0);
	qfw_free(w);
	queue_layout_free(&ql);
}

/* Milter edits (cleanup): the content read back as it was given,
 * lines split over records included, and the file cut back so that new
 * content replaces it; the committed file has only the new content, and
 * a recipient marked done by its index. */
ATF_TC_WITHOUT_HEAD(content_take);
ATF_TC_BODY(content_take, tc)
{
	str_t big = STR_INIT, got = STR_INIT, line = STR_INIT;
	char path[] = "spool.XXXXXX";
	qf_err_t err;
	char buf[65536];
	ssize_t n;
	int fd;

	setup("");
	for (int i = 0; i < 20000; i++)
		str_putc(&big, 'a' + i % 26);
	str_cat(&big, "\n");
	qfw_t *w = new_writer();
	qfw_track_rcpts(w);
	qf_rcpt_in_t r1 = { "a@b", NULL, NULL, 0 }, r2 = { "c@d", NULL, NULL, 0 };
	ATF_REQUIRE(qfw_sender(w, "s@x") == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r1) == 0 && qfw_rcpt(w, &r2) == 0);
	ATF_REQUIRE(qfw_content(w, "Subject: s\r\n\r\nbody ", 19) == 0);
	ATF_REQUIRE(qfw_content(w, big.buf, big.len) == 0);
	ATF_REQUIRE(qfw_content(w, "no end", 6) == 0);
	fd = mkstemp(path);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE_MSG(qfw_content_take(w, fd) == 0, "%s", qfw_error(w));
	ATF_REQUIRE(lseek(fd, 0, SEEK_SET) == 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		str_append(&got, buf, (size_t)n);
	close(fd);
	ATF_CHECK_EQ(str_len(&got), 19 + big.len + 6);
	ATF_CHECK(memcmp(got.buf, "Subject: s\r\n\r\nbody abcd", 23) == 0);
	ATF_CHECK(memcmp(got.buf + got.len - 7, "\nno end", 7) == 0);
	ATF_REQUIRE(qfw_content(w, "X-New: 1\n\nnew\n", 14) == 0);
	ATF_REQUIRE(qfw_rcpt_done_at(w, 1) == 0);
	char id[QUEUE_ID_SIZE];
	bcopy_str(id, sizeof(id), qfw_id(w));
	commit(w);
	qfw_free(w);
	qfile_t *qf = qfile_open(&ql, QUEUE_INCOMING, id, 0, &err);
	ATF_REQUIRE_MSG(qf != NULL, "%s", err.reason);
	ATF_CHECK_EQ(qfile_content_size(qf), 14);
	qfile_content_rewind(qf);
	str_reset(&got);
	while (qfile_read_line(qf, &line, 1 << 20) == QF_LINE_LF) {
		str_append(&got, line.buf, line.len);
		str_putc(&got, '\n');
	}
	ATF_CHECK_STREQ(str_cstr(&got), "X-New: 1\n\nnew\n");
	/* a@b is left, c@d is done */
	qf_rcpt_batch_t b = { 0 };
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, 0), 1);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].address), "a@b");
	qf_rcpt_batch_free(&b);
	qfile_close(qf);
	/* an index past the recipients written is refused */
	w = new_writer();
	qfw_track_rcpts(w);
	ATF_REQUIRE(qfw_sender(w, "s@x") == 0 && qfw_rcpt(w, &r1) == 0);
	ATF_CHECK(qfw_rcpt_done_at(w, 1) < 0);
	qfw_free(w);
	str_release(&big);
	str_release(&got);
	str_release(&line);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(writer_errors);
ATF_TC_BODY(writer_errors, tc)
{
	str_t err = STR_INIT, big = STR_INIT;

	setup("");
	ATF_CHECK(qfw_create(&ql, "nosuch", 0600, &err) == NULL);
	ATF_CHECK(strstr(str_cstr(&err), "nosuch") != NULL);

	qfw_t *w = new_writer();
	ATF_CHECK(qfw_content(w, "x\n", 2) < 0);
	ATF_CHECK(strstr(qfw_error(w), "sender") != NULL);
	ATF_CHECK(qfw_sender(w, "a@b") < 0);		/* sticky */
	ATF_CHECK(qfw_commit(w) < 0);
	qfw_free(w);

	w = new_writer();
	ATF_CHECK(qfw_attr(w, "Bad-Name", "x") < 0);
	qfw_free(w);
	w = new_writer();
	ATF_CHECK(qfw_attr(w, "9x", "x") < 0);
	qfw_free(w);
	w = new_writer();
	qf_rcpt_in_t r = { "", NULL, NULL, 0 };
	ATF_CHECK(qfw_rcpt(w, &r) < 0);
	qfw_free(w);
	w = new_writer();
	qf_rcpt_in_t r2 = { "a@b", NULL, NULL, DSN_NOTIFY_NEVER | DSN_NOTIFY_DELAY };
	ATF_CHECK(qfw_rcpt(w, &r2) < 0);
	qfw_free(w);
	w = new_writer();
	for (int i = 0; i < 5000; i++)
		str_putc(&big, 'x');
	ATF_CHECK(qfw_sender(w, big.buf) < 0);
	qfw_free(w);
	w = new_writer();
	ATF_CHECK(qfw_sender(w, "a") == 0);
	ATF_CHECK(qfw_sender(w, "b") < 0);
	qfw_free(w);
	w = new_writer();
	struct timeval tv = { 1, 0 };
	ATF_CHECK(qfw_sender(w, "a") == 0);
	ATF_CHECK(qfw_arrival(w, &tv) < 0);
	ATF_CHECK(strstr(qfw_error(w), "arrival time after") != NULL);
	qfw_free(w);

	/* No file of any of them is left. */
	DIR *d = opendir("q/incoming");
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		ATF_CHECK_MSG(de->d_name[0] == '.', "left behind: %s", de->d_name);
	closedir(d);
	str_release(&err);
	str_release(&big);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(mark_done_in_place);
ATF_TC_BODY(mark_done_in_place, tc)
{
	char id[QUEUE_ID_SIZE];
	qf_rcpt_batch_t b = { 0 };

	setup("");
	write_msg(id, "x\n", 2, 5);
	qfile_t *qf = open_ok(id, QF_OPEN_RDWR);
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, 0), 5);
	off_t off1 = b.rcpt[1].offset, off3 = b.rcpt[3].offset;
	ATF_REQUIRE(qfile_rcpt_done(qf, off1, QF_SYNC) == 0);
	ATF_REQUIRE(qfile_rcpt_done(qf, off3, 0) == 0);
	ATF_REQUIRE(qfile_rcpt_done(qf, off3, 0) == 0);	/* idempotent */
	/* Offsets that are not a recipient record are refused. */
	ATF_CHECK(qfile_rcpt_done(qf, off1 + 1, 0) < 0);
	ATF_CHECK(qfile_rcpt_done(qf, 0, 0) < 0);
	ATF_CHECK(qfile_rcpt_done(qf, QF_OFF_ATTEMPTS, 0) < 0);
	ATF_CHECK(qfile_rcpt_done(qf, qfile_content_offset(qf), 0) < 0);
	ATF_CHECK(qfile_rcpt_done(qf, 1 << 30, 0) < 0);
	/* The same handle sees it on the next pass. */
	qfile_rcpt_rewind(qf);
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, 0), 3);
	qfile_close(qf);

	/* Reopened: the file is still valid, done recipients skipped. */
	qf = open_ok(id, 0);
	ATF_CHECK_EQ(qfile_rcpt_count(qf), 5);
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, 0), 3);
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[0].address), "user0@example.com");
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[1].address), "user2@example.com");
	ATF_CHECK_STREQ(str_cstr(&b.rcpt[2].address), "user4@example.com");
	qfile_rcpt_rewind(qf);
	ATF_REQUIRE_EQ(qfile_rcpt_read(qf, &b, 10, QF_RCPT_ALL), 5);
	ATF_CHECK(!b.rcpt[0].done && b.rcpt[1].done && !b.rcpt[2].done
	    && b.rcpt[3].done && !b.rcpt[4].done);
	/* Read-only handles cannot update. */
	ATF_CHECK(qfile_rcpt_done(qf, b.rcpt[0].offset, 0) < 0);
	ATF_CHECK_EQ(errno, EBADF);
	ATF_CHECK(qfile_set_attempts(qf, 1, 0) < 0);
	qfile_close(qf);
	qf_rcpt_batch_free(&b);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(slots_update);
ATF_TC_BODY(slots_update, tc)
{
	char id[QUEUE_ID_SIZE];
	str_t path = STR_INIT;
	struct stat st1, st2;

	setup("");
	write_msg(id, "x\n", 2, 1);
	queue_path(&ql, QUEUE_INCOMING, id, &path);
	ATF_REQUIRE(stat(str_cstr(&path), &st1) == 0);
	qfile_t *qf = open_ok(id, QF_OPEN_RDWR);
	ATF_REQUIRE(qfile_set_attempts(qf, 7, QF_SYNC) == 0);
	ATF_REQUIRE(qfile_set_warn_time(qf, 1800000000, 0) == 0);
	ATF_CHECK_EQ(qfile_attempts(qf), 7);
	qfile_close(qf);
	ATF_REQUIRE(stat(str_cstr(&path), &st2) == 0);
	ATF_CHECK_EQ(st1.st_size, st2.st_size);		/* no rewrite */
	ATF_CHECK_EQ(st1.st_ino, st2.st_ino);
	qf = open_ok(id, QF_OPEN_RDWR);
	ATF_CHECK_EQ(qfile_attempts(qf), 7);
	ATF_CHECK_EQ(qfile_warn_time(qf), 1800000000);
	ATF_REQUIRE(qfile_set_attempts(qf, 8, 0) == 0);
	qfile_close(qf);
	qf = open_ok(id, 0);
	ATF_CHECK_EQ(qfile_attempts(qf), 8);
	ATF_CHECK_EQ(qfile_torn_slots(qf), 0);
	qfile_close(qf);

	/* A torn attempts slot (digits of two versions): not damage; the
	 * value reads as 0, and the next update repairs it. */
	int fd = open(str_cstr(&path), O_RDWR);
	ATF_REQUIRE(fd >= 0);
	char c = '9';
	ATF_REQUIRE(pwrite(fd, &c, 1, QF_OFF_ATTEMPTS + 2 + 3) == 1);
	qf = open_ok(id, QF_OPEN_RDWR);
	ATF_CHECK_EQ(qfile_torn_slots(qf), QF_TORN_ATTEMPTS);
	ATF_CHECK_EQ(qfile_attempts(qf), 0);
	ATF_CHECK_EQ(qfile_warn_time(qf), 1800000000);
	ATF_REQUIRE(qfile_set_attempts(qf, 9, 0) == 0);
	qfile_close(qf);
	qf = open_ok(id, 0);
	ATF_CHECK_EQ(qfile_torn_slots(qf), 0);
	ATF_CHECK_EQ(qfile_attempts(qf), 9);
	qfile_close(qf);
	/* Not hex at all: damage. */
	c = 'x';
	ATF_REQUIRE(pwrite(fd, &c, 1, QF_OFF_WARN + 2 + 3) == 1);
	close(fd);
	qf_err_t err;
	ATF_CHECK(qfile_open(&ql, QUEUE_INCOMING, id, 0, &err) == NULL);
	ATF_CHECK(err.damaged);
	ATF_CHECK_EQ(err.offset, QF_OFF_WARN);
	str_release(&path);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(many_recipients_batches);
ATF_TC_BODY(many_recipients_batches, tc)
{
	enum { N = 100000, MAX = 1000 };
	char id[QUEUE_ID_SIZE], want[64];
	qf_rcpt_batch_t b = { 0 };
	long n, total = 0, calls = 0;

	setup("");
	write_msg(id, "Subject: many\n\nhi\n", 18, N);
	qfile_t *qf = open_ok(id, QF_OPEN_RDWR);
	ATF_CHECK_EQ(qfile_rcpt_count(qf), N);
	while ((n = qfile_rcpt_read(qf, &b, MAX, 0)) > 0) {
		/* Memory is bounded by the batch: never more entries. */
		ATF_REQUIRE(n <= MAX);
		ATF_REQUIRE(b.cap <= MAX);
		for (long i = 0; i < n; i++) {
			snprintf(want, sizeof(want), "user%ld@example.com", total + i);
			ATF_REQUIRE_STREQ(str_cstr(&b.rcpt[i].address), want);
		}
		/* Mark every other one done as a delivery would. */
		for (long i = 0; i < n; i += 2)
			ATF_REQUIRE(qfile_rcpt_done(qf, b.rcpt[i].offset, 0) == 0);
		total += n;
		calls++;
		ATF_REQUIRE(calls <= N / MAX + 1);
	}
	ATF_CHECK_EQ(n, 0);
	ATF_CHECK_EQ(total, N);
	ATF_CHECK_EQ(calls, N / MAX);
	ATF_CHECK_EQ(b.cap, MAX);
	qfile_close(qf);
	qf = open_ok(id, 0);
	total = 0;
	while ((n = qfile_rcpt_read(qf, &b, 333, 0)) > 0)
		total += n;
	ATF_CHECK_EQ(total, N / 2);
	qfile_close(qf);
	qf_rcpt_batch_free(&b);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(hashed_incoming);
ATF_TC_BODY(hashed_incoming, tc)
{
	/* A hashed queue: the writer makes the subdirectory on commit. */
	char id[QUEUE_ID_SIZE];
	str_t err = STR_INIT, p = STR_INIT;
	struct stat st;

	ATF_REQUIRE(queue_layout_init(&ql, "q", "incoming deferred", 2, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	write_msg(id, "x\n", 2, 1);
	str_setf(&p, "q/incoming/%c/%c/%s", id[10], id[9], id);
	ATF_CHECK_MSG(stat(str_cstr(&p), &st) == 0, "%s", str_cstr(&p));
	qfile_t *qf = open_ok(id, 0);
	qfile_close(qf);
	ATF_REQUIRE(queue_move(&ql, QUEUE_INCOMING, QUEUE_DEFERRED, id, &err) == 0);
	qf_err_t qerr;
	qf = qfile_open(&ql, QUEUE_DEFERRED, id, 0, &qerr);
	ATF_CHECK(qf != NULL);
	qfile_close(qf);
	ATF_CHECK(qfile_open(&ql, QUEUE_INCOMING, id, 0, &qerr) == NULL);
	ATF_CHECK(!qerr.damaged && qerr.errnum == ENOENT);
	str_release(&err);
	str_release(&p);
	queue_layout_free(&ql);
}

/* qfile_open looks where the layout puts a file first, then at the other
 * hash levels (a file queued before hash_queue_depth changed). */
ATF_TC_WITHOUT_HEAD(open_after_layout_change);
ATF_TC_BODY(open_after_layout_change, tc)
{
	char id[QUEUE_ID_SIZE];
	str_t err = STR_INIT;
	queue_layout_t flat;
	qf_err_t qerr;
	qfile_t *qf;

	ATF_REQUIRE(queue_layout_init(&ql, "q", "incoming", 2, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	write_msg(id, "x\n", 2, 1);
	ATF_REQUIRE(queue_layout_init(&flat, "q", "deferred", 1, &err) == 0);
	qf = qfile_open(&flat, QUEUE_INCOMING, id, 0, &qerr);
	ATF_CHECK_MSG(qf != NULL, "%s", qf ? "" : qerr.reason);
	if (qf)
		qfile_close(qf);
	ATF_CHECK(qfile_open(&flat, QUEUE_INCOMING, "no such id", 0, &qerr) == NULL);
	queue_layout_free(&flat);
	queue_layout_free(&ql);
	str_release(&err);
}

/* The path of a committed message in incoming/ (not hashed here). */
static void incoming_path(const char *id, str_t *out)
{
	str_setf(out, "q/%s/%s", QUEUE_INCOMING, id);
}

static long count_spares(void)
{
	DIR *d = opendir("q/" QUEUE_SPARE_DIR);
	struct dirent *de;
	long n = 0;

	ATF_REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A finished file goes to spare/, emptied; the next message into
 * incoming/ is written into it (same inode, a new queue ID, the new
 * content only). */
ATF_TC_WITHOUT_HEAD(recycle_reuse);
ATF_TC_BODY(recycle_reuse, tc)
{
	char id1[QUEUE_ID_SIZE], id2[QUEUE_ID_SIZE];
	str_t path = STR_INIT, got = STR_INIT;
	struct stat st1, st2;
	size_t lines;
	const char big[] = "Subject: one\n\nthe first message, longer than the second\n";

	setup("");
	write_msg(id1, big, strlen(big), 2);
	incoming_path(id1, &path);
	ATF_REQUIRE(stat(str_cstr(&path), &st1) == 0);
	unsigned long before = qfile_recycled;
	ATF_REQUIRE(qfile_recycle(&ql, str_cstr(&path), id1) == 0);
	ATF_CHECK_EQ(qfile_recycled, before + 1);
	ATF_CHECK(access(str_cstr(&path), F_OK) < 0);
	ATF_CHECK_EQ(count_spares(), 1);
	str_setf(&got, "q/%s/%s", QUEUE_SPARE_DIR, id1);
	ATF_REQUIRE(stat(str_cstr(&got), &st2) == 0);
	ATF_CHECK_EQ(st2.st_size, 0);

	unsigned long taken = qfw_spares_taken;
	write_msg(id2, "Subject: two\n\nx\n", 16, 1);
	ATF_CHECK_EQ(qfw_spares_taken, taken + 1);
	ATF_CHECK_EQ(count_spares(), 0);
	ATF_CHECK(strcmp(id1, id2) != 0);
	incoming_path(id2, &path);
	ATF_REQUIRE(stat(str_cstr(&path), &st2) == 0);
	ATF_CHECK_EQ(st1.st_ino, st2.st_ino);
	ATF_CHECK_EQ(st2.st_mode & 07777, 0600);
	qfile_t *qf = open_ok(id2, 0);
	read_content(qf, &got, 1000, &lines);
	ATF_CHECK_STREQ(str_cstr(&got), "Subject: two\n\nx\n");
	ATF_CHECK_EQ(qfile_rcpt_count(qf), 1);
	qfile_close(qf);
	/* No spare left: a new file, as before. */
	write_msg(id1, "Subject: three\n\ny\n", 18, 1);
	ATF_CHECK_EQ(qfw_spares_taken, taken + 1);
	str_release(&path);
	str_release(&got);
	queue_layout_free(&ql);
}

/* A finished file with a second name (a queue entry a power cut
 * brought back) is not emptied: only its own name goes, and the other
 * name keeps the content. */
ATF_TC_WITHOUT_HEAD(recycle_linked);
ATF_TC_BODY(recycle_linked, tc)
{
	char id[QUEUE_ID_SIZE];
	str_t path = STR_INIT, got = STR_INIT;
	struct stat st;
	const char msg[] = "Subject: linked\n\nstill here\n";

	setup("");
	write_msg(id, msg, strlen(msg), 1);
	incoming_path(id, &path);
	ATF_REQUIRE(link(str_cstr(&path), "q/" QUEUE_INCOMING "/other") == 0);
	unsigned long before = qfile_recycled;
	ATF_REQUIRE(qfile_recycle(&ql, str_cstr(&path), id) == 0);
	ATF_CHECK_EQ(qfile_recycled, before);
	ATF_CHECK(access(str_cstr(&path), F_OK) < 0);
	ATF_CHECK_EQ(count_spares(), 0);
	ATF_REQUIRE(stat("q/" QUEUE_INCOMING "/other", &st) == 0);
	ATF_CHECK_EQ(st.st_nlink, 1);
	ATF_CHECK(st.st_size > (off_t)strlen(msg));
	str_release(&path);
	str_release(&got);
	queue_layout_free(&ql);
}

/* spare/ holds at most QFILE_SPARE_MAX files; what does not fit is
 * removed.  Entries that are not plain files are left alone. */
ATF_TC_WITHOUT_HEAD(recycle_bound);
ATF_TC_BODY(recycle_bound, tc)
{
	char id[QUEUE_ID_SIZE];
	str_t path = STR_INIT;

	static char ids[QFILE_SPARE_MAX + 20][QUEUE_ID_SIZE];

	setup("");
	/* All written first (a writer would take a spare back). */
	for (int i = 0; i < QFILE_SPARE_MAX + 20; i++)
		write_msg(ids[i], "x\n", 2, 1);
	for (int i = 0; i < QFILE_SPARE_MAX + 20; i++) {
		incoming_path(ids[i], &path);
		ATF_REQUIRE(qfile_recycle(&ql, str_cstr(&path), ids[i]) == 0);
		ATF_REQUIRE(access(str_cstr(&path), F_OK) < 0);
	}
	ATF_CHECK_EQ(count_spares(), QFILE_SPARE_MAX);
	(void)id;
	str_release(&path);
	queue_layout_free(&ql);
}

/* A spare another process holds (locked: it is taking it) is not taken;
 * a directory or a file with two links in spare/ is never used. */
ATF_TC_WITHOUT_HEAD(recycle_contended);
ATF_TC_BODY(recycle_contended, tc)
{
	char id[QUEUE_ID_SIZE], id2[QUEUE_ID_SIZE];
	str_t path = STR_INIT;
	int go[2], done[2];
	pid_t pid;
	char c;

	setup("");
	write_msg(id, "x\n", 2, 1);
	incoming_path(id, &path);
	ATF_REQUIRE(qfile_recycle(&ql, str_cstr(&path), id) == 0);
	str_setf(&path, "q/%s/%s", QUEUE_SPARE_DIR, id);
	ATF_REQUIRE(pipe(go) == 0 && pipe(done) == 0);
	ATF_REQUIRE((pid = fork()) >= 0);
	if (pid == 0) {
		int fd = open(str_cstr(&path), O_WRONLY);
		if (fd < 0 || file_lock(fd, FILE_LOCK_EXCLUSIVE) < 0)
			_exit(1);
		if (write(go[1], "l", 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	ATF_REQUIRE(read(go[0], &c, 1) == 1);
	unsigned long taken = qfw_spares_taken;
	write_msg(id2, "y\n", 2, 1);
	ATF_CHECK_EQ(qfw_spares_taken, taken);
	ATF_CHECK(access(str_cstr(&path), F_OK) == 0);
	ATF_REQUIRE(write(done[1], "d", 1) == 1);
	int st;
	ATF_REQUIRE(waitpid(pid, &st, 0) == pid);
	ATF_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* Unlocked now, but hard-linked elsewhere: still not taken. */
	ATF_REQUIRE(link(str_cstr(&path), "q/extra-link") == 0);
	ATF_REQUIRE(mkdir("q/" QUEUE_SPARE_DIR "/1ZZZZZZZZZZZZZZZ", 0700) == 0 ||
	    errno == EINVAL);
	write_msg(id2, "z\n", 2, 1);
	ATF_CHECK_EQ(qfw_spares_taken, taken);
	ATF_CHECK(access(str_cstr(&path), F_OK) == 0);
	/* Once it stands alone it is used. */
	ATF_REQUIRE(unlink("q/extra-link") == 0);
	write_msg(id2, "w\n", 2, 1);
	ATF_CHECK_EQ(qfw_spares_taken, taken + 1);
	str_release(&path);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(tmp_stale);
ATF_TC_BODY(tmp_stale, tc)
{
	int pfd[2];
	char path[512];
	pid_t pid;

	setup("");
	ATF_REQUIRE(pipe(pfd) == 0);
	/* A live writer in another process (locks are per process). */
	if ((pid = fork()) == 0) {
		str_t err = STR_INIT;
		qfw_t *w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err);
		if (w == NULL)
			_exit(1);
		dprintf(pfd[1], "%s\n", qfw_path(w));
		pause();
		_exit(0);
	}
	close(pfd[1]);
	FILE *f = fdopen(pfd[0], "r");
	ATF_REQUIRE(fgets(path, sizeof(path), f) != NULL);
	path[strcspn(path, "\n")] = '\0';
	const char *base = strrchr(path, '/') + 1;
	ATF_CHECK(qfile_tmp_name(base));
	ATF_CHECK(!queue_id_valid(base));
	ATF_CHECK_EQ(qfile_tmp_is_stale(path, 0), 0);	/* locked: in use */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(f);
	ATF_CHECK_EQ(qfile_tmp_is_stale(path, 0), 1);	/* writer died */
	ATF_CHECK_EQ(qfile_tmp_is_stale(path, 3600), 0);	/* too young */
	ATF_CHECK_EQ(qfile_tmp_is_stale("q/incoming/tmp.none", 0), 0);
	ATF_CHECK(!qfile_tmp_name("1NB6Q3P0B4K7G2"));
	queue_layout_free(&ql);
}

/* qfile_tmp_purge: stale ones go, from the queues it covers; young,
 * locked, maildrop, spare and queue files stay. */
ATF_TC_WITHOUT_HEAD(tmp_purge);
ATF_TC_BODY(tmp_purge, tc)
{
	int pfd[2];
	char path[512];
	pid_t pid;
	struct timeval old[2];
	str_t log = STR_INIT;
	const char *files[] = { "q/incoming/tmp.1.1.1", "q/incoming/tmp.2.1.1",
	    "q/maildrop/tmp.3.1.1", "q/spare/1NB6Q3P0B4K7G2",
	    "q/active/tmp.4.1.1", "q/incoming/1NB6Q3P0B4K7G3", NULL };

	setup("");
	ATF_REQUIRE(log_to_file("maillog") == 0);
	gettimeofday(&old[0], NULL);
	old[0].tv_sec -= 7200;
	old[1] = old[0];
	for (int i = 0; files[i] != NULL; i++) {
		int fd = open(files[i], O_WRONLY | O_CREAT | O_EXCL, 0600);
		ATF_REQUIRE_MSG(fd >= 0, "%s", files[i]);
		close(fd);
		if (i != 1)	/* tmp.2 is young */
			ATF_REQUIRE(utimes(files[i], old) == 0);
	}
	/* A live writer in another process, its file two hours old. */
	ATF_REQUIRE(pipe(pfd) == 0);
	if ((pid = fork()) == 0) {
		str_t err = STR_INIT;
		/* Not into incoming/: it would take the spare. */
		qfw_t *w = qfw_create(&ql, QUEUE_HOLD, 0600, &err);
		if (w == NULL || utimes(qfw_path(w), old) < 0)
			_exit(1);
		dprintf(pfd[1], "%s\n", qfw_path(w));
		pause();
		_exit(0);
	}
	close(pfd[1]);
	FILE *f = fdopen(pfd[0], "r");
	ATF_REQUIRE(fgets(path, sizeof(path), f) != NULL);
	path[strcspn(path, "\n")] = '\0';
	ATF_CHECK_EQ(qfile_tmp_purge(&ql, 3600), 2);
	ATF_CHECK(access("q/incoming/tmp.1.1.1", F_OK) < 0);
	ATF_CHECK(access("q/active/tmp.4.1.1", F_OK) < 0);
	ATF_CHECK(access("q/incoming/tmp.2.1.1", F_OK) == 0);
	ATF_CHECK(access("q/maildrop/tmp.3.1.1", F_OK) == 0);
	ATF_CHECK(access("q/spare/1NB6Q3P0B4K7G2", F_OK) == 0);
	ATF_CHECK(access("q/incoming/1NB6Q3P0B4K7G3", F_OK) == 0);
	ATF_CHECK_MSG(access(path, F_OK) == 0, "locked %s removed", path);
	ATF_REQUIRE(file_read_all("maillog", &log, 1 << 20) == 0);
	ATF_CHECK(strstr(str_cstr(&log), "removed stale temporary file "
	    "incoming/tmp.1.1.1\n") != NULL);
	/* The writer dies: its file is stale now. */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fclose(f);
	ATF_CHECK_EQ(qfile_tmp_purge(&ql, 3600), 1);
	ATF_CHECK(access(path, F_OK) < 0);
	ATF_CHECK_EQ(qfile_tmp_purge(&ql, 3600), 0);
	str_release(&log);
	queue_layout_free(&ql);
}

/* Every visible file in dir (recursively one level) is a valid queue
 * file; returns how many there were. */
static int check_visible(const char *dir, int *tmps)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	ATF_REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (qfile_tmp_name(de->d_name)) {
			(*tmps)++;
			continue;
		}
		ATF_REQUIRE_MSG(queue_id_valid(de->d_name), "stray %s", de->d_name);
		qf_err_t err;
		qfile_t *qf = qfile_open(&ql, QUEUE_INCOMING, de->d_name, 0, &err);
		ATF_REQUIRE_MSG(qf != NULL, "visible but bad: %s: %s at %lld",
		    de->d_name, err.reason, (long long)err.offset);
		qf_rcpt_batch_t b = { 0 };
		long total = 0, r;
		while ((r = qfile_rcpt_read(qf, &b, 50, 0)) > 0)
			total += r;
		ATF_REQUIRE_EQ(total, 200);
		qf_rcpt_batch_free(&b);
		qfile_close(qf);
		n++;
	}
	closedir(d);
	return n;
}

ATF_TC(killed_writer);
ATF_TC_HEAD(killed_writer, tc)
{
	atf_tc_set_md_var(tc, "descr", "A writer killed with SIGKILL at "
	    "random points never leaves a visible incomplete file");
	atf_tc_set_md_var(tc, "timeout", "120");
}
ATF_TC_BODY(killed_writer, tc)
{
	enum { ROUNDS = 60 };
	int visible = 0, tmps = 0;

	setup("");
	srandom(12345);
	for (int round = 0; round < ROUNDS; round++) {
		pid_t pid = fork();
		ATF_REQUIRE(pid >= 0);
		if (pid == 0) {
			/* Writes messages (200 recipients, ~200 KB) forever. */
			str_t line = STR_INIT;
			for (int i = 0; i < 2000; i++)
				str_putc(&line, 'a' + i % 26);
			str_putc(&line, '\n');
			for (;;) {
				qfw_t *w = qfw_create(&ql, QUEUE_INCOMING, 0600, NULL);
				char a[64];
				if (w == NULL)
					_exit(1);
				qfw_sender(w, "s@example.com");
				for (int i = 0; i < 200; i++) {
					snprintf(a, sizeof(a), "r%d@example.com", i);
					qf_rcpt_in_t r = { a, NULL, NULL, 0 };
					qfw_rcpt(w, &r);
				}
				for (int i = 0; i < 100; i++)
					qfw_content(w, line.buf, line.len);
				if (qfw_commit(w) < 0)
					_exit(2);
				qfw_free(w);
			}
		}
		/* Kill it anywhere from at once to a few messages in. */
		usleep((useconds_t)(random() % 20000));
		kill(pid, SIGKILL);
		int status;
		ATF_REQUIRE(waitpid(pid, &status, 0) == pid);
		ATF_REQUIRE_MSG(WIFSIGNALED(status), "writer exited %d",
		    WEXITSTATUS(status));
		visible += check_visible("q/incoming", &tmps);
		/* Start each round clean so counts stay small. */
		DIR *d = opendir("q/incoming");
		struct dirent *de;
		char p[600];
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "q/incoming/%s", de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	/* Informational: how often the kill landed where. */
	printf("complete files seen %d, temporary files left %d\n", visible, tmps);
	queue_layout_free(&ql);
}


/* ---- Several writers at once (the group commit, §4) ---- */

static int hk_note = -1, hk_go = -1, hk_mode;

enum { HK_BLOCK_FSYNC = 1, HK_NOTE_TICKET = 2 };

static int qhook(enum dirsync_event ev, uint64_t v)
{
	char b = ev == DIRSYNC_EV_FSYNC ? 'F' : 'T';

	(void)v;
	if ((ev == DIRSYNC_EV_FSYNC && (hk_mode & HK_BLOCK_FSYNC))
	    || (ev == DIRSYNC_EV_TICKET && (hk_mode & HK_NOTE_TICKET))) {
		if (write(hk_note, &b, 1) != 1)
			_exit(90);
		if (ev == DIRSYNC_EV_FSYNC && read(hk_go, &b, 1) != 1)
			_exit(91);
	}
	return 0;
}

/* A child that commits one message and reports qfw_fsync_count. */
static pid_t commit_child(int mode, int res)
{
	pid_t pid = fork();

	ATF_REQUIRE(pid >= 0);
	if (pid == 0) {
		char id[QUEUE_ID_SIZE];
		unsigned long n;

		hk_mode = mode;
		dirsync_hook = qhook;
		write_msg(id, "x\n", 2, 1);
		n = qfw_fsync_count;
		if (write(res, &n, sizeof(n)) != (ssize_t)sizeof(n))
			_exit(92);
		_exit(0);
	}
	return pid;
}

ATF_TC_WITHOUT_HEAD(shared_directory_fsync);
ATF_TC_BODY(shared_directory_fsync, tc)
{
	int note[2], go[2], res[2];
	pid_t pid[3];
	char c;
	unsigned long n, total = 0;
	struct stat st;

	/* While A fsyncs incoming/, B and C commit: their renames then
	 * share one directory fsync (three messages, five fsyncs). */
	setup("");
	ATF_REQUIRE(pipe(note) == 0 && pipe(go) == 0 && pipe(res) == 0);
	/* A is held still on purpose: B and C must not stop waiting for
	 * it (after dirsync's 50 ms) on a slow machine. */
	dirsync_wait_ms = 60000;
	hk_note = note[1];
	hk_go = go[0];
	pid[0] = commit_child(HK_BLOCK_FSYNC, res[1]);
	ATF_REQUIRE(read(note[0], &c, 1) == 1 && c == 'F');
	pid[1] = commit_child(HK_NOTE_TICKET, res[1]);
	pid[2] = commit_child(HK_NOTE_TICKET, res[1]);
	for (int i = 0; i < 2; i++)
		ATF_REQUIRE(read(note[0], &c, 1) == 1 && c == 'T');
	ATF_REQUIRE(write(go[1], "g", 1) == 1);
	for (int i = 0; i < 3; i++) {
		ATF_REQUIRE(read(res[0], &n, sizeof(n)) == (ssize_t)sizeof(n));
		total += n;
	}
	for (int i = 0; i < 3; i++)
		ATF_REQUIRE(waitpid(pid[i], NULL, 0) == pid[i]);
	ATF_CHECK_EQ_MSG(total, 5, "3 commits made %lu fsyncs", total);
	ATF_CHECK(stat("q/" QUEUE_DIRSYNC_STATE, &st) == 0);
	queue_layout_free(&ql);
}

/* Every file under dir with a queue-ID name (in hashed subdirectories
 * too) is a complete queue file; returns how many. */
static int check_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[600];
	int n = 0;

	ATF_REQUIRE(d != NULL);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || qfile_tmp_name(de->d_name))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (!queue_id_valid(de->d_name)) {
			n += check_tree(p);
			continue;
		}
		qf_err_t err;
		qfile_t *qf = qfile_open(&ql, QUEUE_INCOMING, de->d_name, 0, &err);
		ATF_REQUIRE_MSG(qf != NULL, "visible but bad: %s: %s", p,
		    err.reason);
		qfile_close(qf);
		n++;
	}
	closedir(d);
	return n;
}

/* K writers commit messages as fast as they can and say which were
 * accepted (commit returned 0); one of them, at random, is killed with
 * SIGKILL every few ms and replaced. */
static void concurrent_kill(const char *hashed)
{
	enum { K = 4, ROUNDS = 40 };
	pid_t pid[K];
	int acc[2], accepted = 0, kills = 0, fd, status;
	str_t ids = STR_INIT;
	struct flock fl;
	char buf[4096];
	ssize_t r;

	setup(hashed);
	ATF_REQUIRE(pipe(acc) == 0);
	ATF_REQUIRE(fcntl(acc[0], F_SETFL, O_NONBLOCK) == 0);
	srandom(4242);
	for (int round = 0; round <= ROUNDS; round++) {
		for (int i = 0; i < K; i++) {
			if (round > 0 && pid[i] > 0)
				continue;
			pid[i] = fork();
			ATF_REQUIRE(pid[i] >= 0);
			if (pid[i] == 0) {
				char id[QUEUE_ID_SIZE + 1], body[8192];
				memset(body, 'b', sizeof(body));
				for (size_t j = 79; j < sizeof(body); j += 80)
					body[j] = '\n';
				for (;;) {
					write_msg(id, body, sizeof(body), 2);
					id[strlen(id) + 1] = 0;
					id[strlen(id)] = '\n';
					/* One write below PIPE_BUF: whole or not. */
					if (write(acc[1], id, strlen(id)) < 0)
						_exit(1);
				}
			}
		}
		if (round == ROUNDS)
			break;
		usleep((useconds_t)(random() % 15000));
		int v = (int)(random() % K);
		ATF_REQUIRE(kill(pid[v], SIGKILL) == 0);
		ATF_REQUIRE(waitpid(pid[v], &status, 0) == pid[v]);
		ATF_CHECK_MSG(WIFSIGNALED(status), "writer exited %d",
		    WEXITSTATUS(status));
		pid[v] = 0;
		kills++;
		while ((r = read(acc[0], buf, sizeof(buf))) > 0)
			str_append(&ids, buf, (size_t)r);
	}
	for (int i = 0; i < K; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
	close(acc[1]);
	while ((r = read(acc[0], buf, sizeof(buf))) > 0)
		str_append(&ids, buf, (size_t)r);
	/* Nothing accepted is lost: each one is there, complete. */
	for (char *p = ids.buf; p && *p;) {
		char *nl = strchr(p, '\n');
		ATF_REQUIRE(nl != NULL);
		*nl = 0;
		qf_err_t err;
		qfile_t *qf = qfile_open(&ql, QUEUE_INCOMING, p, 0, &err);
		ATF_CHECK_MSG(qf != NULL, "accepted %s: %s", p, err.reason);
		if (qf)
			qfile_close(qf);
		accepted++;
		p = nl + 1;
	}
	int visible = check_tree("q/incoming");
	ATF_CHECK(visible >= accepted);
	/* Nothing is left locked: no lock on the state file, and a commit
	 * by a lone writer makes its own directory fsync and brings S up
	 * to R. */
	fd = open("q/" QUEUE_DIRSYNC_STATE, O_RDWR);
	ATF_REQUIRE(fd >= 0);
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	ATF_REQUIRE(fcntl(fd, F_GETLK, &fl) == 0);
	ATF_CHECK_EQ(fl.l_type, F_UNLCK);
	close(fd);
	char id[QUEUE_ID_SIZE];
	unsigned long before = qfw_fsync_count;
	write_msg(id, "x\n", 2, 1);
	ATF_CHECK_EQ(qfw_fsync_count - before, 2);
	str_t dir = STR_INIT;
	queue_dir_path(&ql, QUEUE_INCOMING, id, &dir);
	dirsync_t *ds = dirsync_new("q/" QUEUE_DIRSYNC_STATE);
	dirsync_counters_t cs;
	ATF_REQUIRE_EQ(dirsync_counters_get(ds, str_cstr(&dir), &cs), 1);
	ATF_CHECK_EQ(cs.synced, cs.renamed);
	dirsync_free(ds);
	printf("%d writers killed, %d messages accepted, %d visible\n", kills,
	    accepted, visible);
	str_release(&dir);
	str_release(&ids);
	queue_layout_free(&ql);
}

ATF_TC(concurrent_kill);
ATF_TC_HEAD(concurrent_kill, tc)
{
	atf_tc_set_md_var(tc, "descr", "4 writers commit at once and are "
	    "killed at random: every accepted message is there and complete, "
	    "and nothing is left locked");
	atf_tc_set_md_var(tc, "timeout", "120");
}
ATF_TC_BODY(concurrent_kill, tc)
{
	concurrent_kill("");
}

ATF_TC(concurrent_kill_hashed);
ATF_TC_HEAD(concurrent_kill_hashed, tc)
{
	atf_tc_set_md_var(tc, "descr", "The same with incoming/ hashed "
	    "(32 directories, one state file)");
	atf_tc_set_md_var(tc, "timeout", "120");
}
ATF_TC_BODY(concurrent_kill_hashed, tc)
{
	concurrent_kill("incoming");
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, write_read_back);
	ATF_TP_ADD_TC(tp, empty_body_and_content);
	ATF_TP_ADD_TC(tp, crlf_never_split);
	ATF_TP_ADD_TC(tp, extracted_recipients);
	ATF_TP_ADD_TC(tp, writer_errors);
	ATF_TP_ADD_TC(tp, rcpts_done_and_hold);
	ATF_TP_ADD_TC(tp, mark_done_in_place);
	ATF_TP_ADD_TC(tp, slots_update);
	ATF_TP_ADD_TC(tp, many_recipients_batches);
	ATF_TP_ADD_TC(tp, hashed_incoming);
	ATF_TP_ADD_TC(tp, open_after_layout_change);
	ATF_TP_ADD_TC(tp, recycle_reuse);
	ATF_TP_ADD_TC(tp, recycle_linked);
	ATF_TP_ADD_TC(tp, recycle_bound);
	ATF_TP_ADD_TC(tp, recycle_contended);
	ATF_TP_ADD_TC(tp, tmp_stale);
	ATF_TP_ADD_TC(tp, tmp_purge);
	ATF_TP_ADD_TC(tp, killed_writer);
	ATF_TP_ADD_TC(tp, shared_directory_fsync);
	ATF_TP_ADD_TC(tp, concurrent_kill);
	ATF_TP_ADD_TC(tp, concurrent_kill_hashed);
	ATF_TP_ADD_TC(tp, content_take);
	return atf_no_error();
}
