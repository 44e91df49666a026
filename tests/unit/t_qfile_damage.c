/* Unit tests for damaged queue files: truncation at every offset,
 * random corruption, hand-made files that break each rule, and the move
 * to corrupt/. */
#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crc32c.h"
#include "file.h"
#include "log.h"
#include "qfile.h"
#include "str.h"

static queue_layout_t ql;

static void setup(void)
{
	str_t err = STR_INIT;
	ATF_REQUIRE(queue_layout_init(&ql, "q", "deferred", 1, &err) == 0);
	ATF_REQUIRE(queue_create_dirs(&ql, &err) == 0);
	str_release(&err);
}

/* A small valid file with every kind of record; its bytes in out. */
static void small_file(str_t *out, bool long_line, char *id)
{
	str_t err = STR_INIT, path = STR_INIT;
	qfw_t *w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err);
	ATF_REQUIRE_MSG(w != NULL, "%s", str_cstr(&err));
	snprintf(id, QUEUE_ID_SIZE, "%s", qfw_id(w));
	ATF_REQUIRE(qfw_sender(w, "a@example.org") == 0);
	ATF_REQUIRE(qfw_envid(w, "E1") == 0);
	ATF_REQUIRE(qfw_ret(w, QF_RET_FULL) == 0);
	ATF_REQUIRE(qfw_attr(w, "log_ident", "abc") == 0);
	qf_rcpt_in_t r1 = { "b@example.net", "b", "rfc822;b@example.net", 3 };
	qf_rcpt_in_t r2 = { "c@example.net", NULL, NULL, 0 };
	ATF_REQUIRE(qfw_rcpt(w, &r1) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r2) == 0);
	ATF_REQUIRE(qfw_content(w, "Subject: t\r\n\r\nbody\nend", 22) == 0);
	if (long_line) {
		str_t l = STR_INIT;
		for (int i = 0; i < QF_LINE_CHUNK + 100; i++)
			str_putc(&l, 'x');
		str_putc(&l, '\n');
		ATF_REQUIRE(qfw_content(w, l.buf, l.len) == 0);
		str_release(&l);
	}
	qf_rcpt_in_t r3 = { "d@example.net", NULL, NULL, DSN_NOTIFY_NEVER };
	ATF_REQUIRE(qfw_rcpt(w, &r3) == 0);
	ATF_REQUIRE_MSG(qfw_commit(w) == 0, "%s", qfw_error(w));
	str_set(&path, qfw_path(w));
	qfw_free(w);
	str_reset(out);
	ATF_REQUIRE(file_read_all(str_cstr(&path), out, 1 << 20) == 0);
	str_release(&err);
	str_release(&path);
}

static void put_bytes(const char *path, const void *data, size_t len)
{
	/* A new file each time: rewriting a truncated one makes some file
	 * systems (ext4 auto_da_alloc) flush it to disk, slowly. */
	(void)unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ATF_REQUIRE(fd >= 0);
	ATF_REQUIRE(file_write_all(fd, data, len) == 0);
	close(fd);
}

/* Opens path and, when that works, reads every recipient and line (the
 * reader must not crash on anything).  Returns true if it opened. */
static bool try_read(const char *path, qf_err_t *err)
{
	qfile_t *qf = qfile_open_path(path, 0, err);
	if (qf == NULL)
		return false;
	qf_rcpt_batch_t b = { 0 };
	str_t line = STR_INIT;
	int guard = 0;
	while (qfile_rcpt_read(qf, &b, 2, QF_RCPT_ALL) > 0 && guard++ < 1000)
		;
	while (qfile_read_line(qf, &line, 50) > 0 && guard++ < 100000)
		;
	qf_rcpt_batch_free(&b);
	str_release(&line);
	qfile_close(qf);
	return true;
}

static void check_truncations(const str_t *good)
{
	qf_err_t err;

	put_bytes("whole", good->buf, good->len);
	ATF_REQUIRE_MSG(try_read("whole", &err), "%s", err.reason);
	for (size_t n = 0; n < good->len; n++) {
		put_bytes("cut", good->buf, n);
		ATF_REQUIRE_MSG(!try_read("cut", &err),
		    "truncated to %zu of %zu bytes was accepted", n, good->len);
		ATF_REQUIRE_MSG(err.damaged, "length %zu: not damage: %s", n,
		    err.reason);
		ATF_REQUIRE_MSG(err.offset >= 0 && (size_t)err.offset <= n,
		    "length %zu: offset %lld", n, (long long)err.offset);
		ATF_REQUIRE(err.reason[0] != '\0');
	}
}

ATF_TC_WITHOUT_HEAD(truncation_every_offset);
ATF_TC_BODY(truncation_every_offset, tc)
{
	str_t good = STR_INIT;
	char id[QUEUE_ID_SIZE];
	qf_err_t err;

	setup();
	small_file(&good, false, id);
	check_truncations(&good);
	/* The reasons for a few typical cuts. */
	put_bytes("cut", good.buf, 0);
	ATF_CHECK(!try_read("cut", &err));
	ATF_CHECK_STREQ(err.reason, "empty file");
	/* The end record: E, 0x10, 16 digits, 4 check bytes. */
	put_bytes("cut", good.buf, good.len - 22);
	ATF_CHECK(!try_read("cut", &err));
	ATF_CHECK(strstr(err.reason, "missing end record") != NULL);
	ATF_CHECK_EQ((size_t)err.offset, good.len - 22);
	put_bytes("cut", good.buf, good.len - 9);
	ATF_CHECK(!try_read("cut", &err));
	ATF_CHECK_STREQ(err.reason,
	    "truncated end record (11 of 16 data bytes present)");
	ATF_CHECK_EQ((size_t)err.offset, good.len - 22);
	put_bytes("cut", good.buf, good.len - 2);
	ATF_CHECK(!try_read("cut", &err));
	ATF_CHECK_STREQ(err.reason, "truncated end record (check value cut "
	    "short)");
	ATF_CHECK_EQ((size_t)err.offset, good.len - 22);
	/* With a split long line too (l records). */
	small_file(&good, true, id);
	ATF_REQUIRE(good.len > QF_LINE_CHUNK);
	check_truncations(&good);
	str_release(&good);
	queue_layout_free(&ql);
}

ATF_TC(random_corruption);
ATF_TC_HEAD(random_corruption, tc)
{
	atf_tc_set_md_var(tc, "descr", "Random byte changes, insertions and "
	    "deletions never crash the reader");
	atf_tc_set_md_var(tc, "timeout", "120");
}
ATF_TC_BODY(random_corruption, tc)
{
	enum { ROUNDS = 4000 };
	str_t good = STR_INIT, bad = STR_INIT;
	char id[QUEUE_ID_SIZE];
	qf_err_t err;
	int accepted = 0, damaged = 0;

	setup();
	small_file(&good, true, id);
	srandom(4711);
	for (int round = 0; round < ROUNDS; round++) {
		str_reset(&bad);
		str_append(&bad, good.buf, good.len);
		int changes = 1 + (int)(random() % 4);
		for (int c = 0; c < changes; c++) {
			size_t at = (size_t)random() % bad.len;
			switch (random() % 4) {
			case 0:	/* one byte to anything */
			case 1:
				bad.buf[at] = (char)(random() & 0xff);
				break;
			case 2:	/* delete a byte */
				memmove(bad.buf + at, bad.buf + at + 1, bad.len - at - 1);
				str_truncate(&bad, bad.len - 1);
				break;
			default: {	/* insert a byte */
				char b = (char)(random() & 0xff);
				str_putc(&bad, 0);
				memmove(bad.buf + at + 1, bad.buf + at, bad.len - at - 1);
				bad.buf[at] = b;
			}
			}
		}
		put_bytes("bad", bad.buf, bad.len);
		if (try_read("bad", &err)) {
			accepted++;
		} else {
			damaged++;
			ATF_REQUIRE_MSG(err.damaged, "%s", err.reason);
			ATF_REQUIRE(err.offset >= 0 && (size_t)err.offset <= bad.len);
		}
	}
	/* Changes inside line data or addresses are not detectable by
	 * structure; the rest must be.  Informational. */
	printf("accepted %d, damaged %d\n", accepted, damaged);
	ATF_CHECK(damaged > ROUNDS / 2);
	str_release(&good);
	str_release(&bad);
	queue_layout_free(&ql);
}

/* ------------------------------------------------------------------ */
/* Hand-made files. */

typedef struct raw {
	str_t body;		/* records after the head */
	uint64_t sizes[4];
	bool fix_sizes;		/* compute Z from the records */
	bool has_x;
	uint64_t content;
	uint64_t nrcpt;
} raw_t;

/* The format version the builder writes (1: no checks). */
static int raw_version = 1;

static void raw_rec(raw_t *r, int type, const char *data, size_t len)
{
	size_t v = len, start = r->body.len;
	str_putc(&r->body, type);
	do {
		str_putc(&r->body, (int)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
		v >>= 7;
	} while (v);
	str_append(&r->body, data, len);
	if (raw_version == 2) {
		bool rcpt = type == 'R' || type == 'r';
		char t = 'R';
		uint32_t c = rcpt ? crc32c(crc32c(0, &t, 1), r->body.buf + start + 1,
		    r->body.len - start - 1) : crc32c(0, r->body.buf + start,
		    r->body.len - start);
		if (rcpt)
			str_putc(&r->body, type);
		for (int i = 0; i < 4; i++)
			str_putc(&r->body, (int)((c >> (8 * i)) & 0xff));
	}
	if (type == 'M' && r->sizes[0] == 0)
		r->sizes[0] = QF_HEAD_SIZE + r->body.len;
	if (type == 'X') {
		r->sizes[2] = QF_HEAD_SIZE + start;
		r->has_x = true;
	}
	if (type == 'L' || type == 'l')
		r->content += len;
	if (type == 'R' || type == 'r')
		r->nrcpt++;
}

static void raw_s(raw_t *r, int type, const char *s)
{
	raw_rec(r, type, s, strlen(s));
}

/* The envelope every good file needs. */
static void raw_start(raw_t *r)
{
	memset(r, 0, sizeof(*r));
	r->fix_sizes = true;
	raw_s(r, 'T', "1700000000.000001");
	raw_s(r, 'S', "s@example.com");
}

/* Writes head + body + end record into "raw". */
static void raw_write(raw_t *r, bool end)
{
	str_t f = STR_INIT;
	char slot[QF_SIZES_LEN], e[17];
	uint64_t zero = 0;

	if (r->fix_sizes) {
		r->sizes[1] = r->content;
		r->sizes[3] = r->nrcpt;
	}
	str_putc(&f, 'V');
	str_putc(&f, 1);
	str_putc(&f, raw_version == 2 ? '2' : '1');
	qf_slot_encode(slot, r->sizes, 4);
	str_putc(&f, 'Z');
	str_putc(&f, QF_SIZES_LEN);
	str_append(&f, slot, QF_SIZES_LEN);
	qf_slot_encode(slot, &zero, 1);
	str_putc(&f, 'A');
	str_putc(&f, QF_SLOT1_LEN);
	str_append(&f, slot, QF_SLOT1_LEN);
	str_putc(&f, 'W');
	str_putc(&f, QF_SLOT1_LEN);
	str_append(&f, slot, QF_SLOT1_LEN);
	ATF_REQUIRE_EQ(f.len, QF_HEAD_SIZE);
	str_append(&f, r->body.buf, r->body.len);
	if (end) {
		raw_t t = { 0 };
		snprintf(e, sizeof(e), "%016llx", (unsigned long long)f.len);
		raw_rec(&t, 'E', e, 16);
		str_append(&f, t.body.buf, t.body.len);
		str_release(&t.body);
	}
	put_bytes("raw", f.buf, f.len);
	str_release(&f);
	str_release(&r->body);
}

/* The raw file fails with a reason containing want. */
static void expect_damage(const char *what, const char *want)
{
	qf_err_t err;
	bool ok = try_read("raw", &err);
	ATF_CHECK_MSG(!ok, "%s: accepted", what);
	if (!ok) {
		ATF_CHECK_MSG(err.damaged, "%s: %s", what, err.reason);
		ATF_CHECK_MSG(strstr(err.reason, want) != NULL,
		    "%s: reason '%s', wanted '%s'", what, err.reason, want);
	}
}

static void handmade(void);

ATF_TC_WITHOUT_HEAD(handmade_files);
ATF_TC_BODY(handmade_files, tc)
{
	raw_version = 1;
	handmade();
}

/* The same rules in version 2 (records with checks). */
ATF_TC_WITHOUT_HEAD(handmade_files_v2);
ATF_TC_BODY(handmade_files_v2, tc)
{
	raw_version = 2;
	handmade();
}

static void handmade(void)
{
	raw_t r;
	qf_err_t err;

	/* The builder itself makes valid files. */
	raw_start(&r);
	raw_s(&r, 'O', "o");
	raw_s(&r, 'N', "8");
	raw_s(&r, 'R', "x@y");
	raw_rec(&r, 'M', "", 0);
	raw_s(&r, 'l', "abc");
	raw_s(&r, 'L', "def\n");
	raw_s(&r, 'L', "tail");
	raw_rec(&r, 'X', "", 0);
	raw_s(&r, 'R', "z@y");
	raw_write(&r, true);
	ATF_REQUIRE_MSG(try_read("raw", &err), "%s at %lld", err.reason,
	    (long long)err.offset);

	put_bytes("raw", "hello world\n", 12);
	expect_damage("text file", "not a queue file");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, false);
	expect_damage("no end", "missing end record (the file ends in the content)");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	put_bytes("raw2", "", 0);
	{
		str_t s = STR_INIT;
		ATF_REQUIRE(file_read_all("raw", &s, 1 << 20) == 0);
		str_putc(&s, '\n');
		put_bytes("raw", s.buf, s.len);
		str_release(&s);
	}
	expect_damage("trailing byte", "data after end record");

	raw_start(&r);
	raw_s(&r, 'S', "again");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("two senders", "second sender record");

	memset(&r, 0, sizeof(r));
	r.fix_sizes = true;
	raw_s(&r, 'S', "s");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("no time", "no arrival time");

	memset(&r, 0, sizeof(r));
	r.fix_sizes = true;
	raw_s(&r, 'T', "1.000000");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("no sender", "no sender");

	raw_start(&r);
	raw_s(&r, 'O', "o");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("open group", "not ended by a recipient");

	raw_start(&r);
	raw_s(&r, 'O', "o");
	raw_s(&r, 'O', "o");
	raw_s(&r, 'R', "r");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("two O", "second original recipient record");

	raw_start(&r);
	raw_s(&r, 'N', "9");
	raw_s(&r, 'R', "r");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("NEVER+SUCCESS", "bad NOTIFY value '9'");

	raw_start(&r);
	raw_s(&r, 'N', "07");
	raw_s(&r, 'R', "r");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("leading zero", "bad NOTIFY value");

	raw_start(&r);
	raw_rec(&r, 'R', "a\0b", 3);
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("NUL in address", "contains a NUL byte");

	raw_start(&r);
	raw_s(&r, 'F', "NONE");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("RET", "bad RET value 'NONE'");

	raw_start(&r);
	raw_s(&r, 'a', "Bad=1");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("attr name", "bad attribute name in 'Bad=1'");

	raw_start(&r);
	raw_s(&r, 'a', "x=1");
	raw_s(&r, 'a', "x=2");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("attr twice", "second attribute 'x'");

	raw_start(&r);
	raw_s(&r, 'T', "1700000000.000001");
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("two times", "second arrival time record");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_s(&r, 'L', "no newline");
	raw_s(&r, 'L', "more\n");
	raw_write(&r, true);
	expect_damage("line after last", "followed by more content");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_s(&r, 'L', "two\nlines\n");
	raw_write(&r, true);
	expect_damage("two lines", "more than one line");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_s(&r, 'l', "part\n");
	raw_s(&r, 'L', "x\n");
	raw_write(&r, true);
	expect_damage("LF in part", "line part contains a newline");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_s(&r, 'l', "part");
	raw_write(&r, true);
	expect_damage("part at end", "line continued past the end");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_s(&r, 'S', "s");
	raw_write(&r, true);
	expect_damage("sender in content", "sender record not allowed in the content");

	/* An attribute may follow the content (it replaces the
	 * envelope's), once a name; a sender may not. */
	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_rec(&r, 'X', "", 0);
	raw_s(&r, 'a', "x=1");
	raw_s(&r, 'a', "x=2");
	raw_write(&r, true);
	expect_damage("attr twice extracted", "second attribute 'x'");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_rec(&r, 'X', "", 0);
	raw_s(&r, 'a', "Bad=1");
	raw_write(&r, true);
	expect_damage("bad attr extracted", "bad attribute name");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_rec(&r, 'X', "", 0);
	raw_s(&r, 'S', "s");
	raw_write(&r, true);
	expect_damage("sender extracted", "sender record not allowed in the extracted");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_rec(&r, 'M', "", 0);
	raw_write(&r, true);
	expect_damage("two M", "not allowed in the content");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_s(&r, 'L', "x\n");
	r.fix_sizes = false;
	r.sizes[1] = 5;
	r.sizes[3] = 0;
	raw_write(&r, true);
	expect_damage("size", "sizes slot says content size 5, content has 2 bytes");

	raw_start(&r);
	raw_s(&r, 'R', "r");
	raw_rec(&r, 'M', "", 0);
	r.fix_sizes = false;
	r.sizes[3] = 2;
	raw_write(&r, true);
	expect_damage("count", "sizes slot says 2 recipients, the file has 1");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	r.sizes[0] = 7;
	r.fix_sizes = false;
	raw_write(&r, true);
	expect_damage("offset", "content at offset 7");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	r.sizes[2] = 300;
	raw_write(&r, true);
	expect_damage("x offset", "extracted recipients at offset 300, there are none");

	raw_start(&r);
	raw_rec(&r, 0x07, "", 0);
	raw_write(&r, true);
	expect_damage("type", "unknown record type 0x07");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	/* a non-canonical length: 1 encoded as 0x81 0x00 */
	str_append(&r.body, "L\x81\x00\n", 4);
	r.content += 1;
	raw_write(&r, true);
	expect_damage("non-canonical", "length is not canonical");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	str_append(&r.body, "L\xff\xff\xff\xff\x01", 6);
	raw_write(&r, false);
	expect_damage("long length", "longer than 4 bytes");

	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	/* 70000 bytes claimed for a line: over the limit, not allocated */
	str_append(&r.body, "L\xf0\xa2\x04", 4);
	raw_write(&r, false);
	expect_damage("huge line", "line record has 70000 data bytes (allowed 1 to 65536)");

	memset(&r, 0, sizeof(r));
	r.fix_sizes = true;
	raw_s(&r, 'T', "17000000.1");
	raw_write(&r, true);
	expect_damage("time", "bad arrival time");

	/* The end record must name its own offset. */
	raw_start(&r);
	raw_rec(&r, 'M', "", 0);
	raw_s(&r, 'E', "0000000000000000");
	raw_s(&r, 'L', "x\n");
	raw_write(&r, true);
	expect_damage("early end", "end record does not hold its own offset");

	/* Version and head order. */
	put_bytes("raw", "V\0013", 3);
	expect_damage("version", "unsupported queue file version '3'");
	put_bytes("raw", "V\0011A\030", 5);
	expect_damage("head order", "where the sizes slot must be");
}

ATF_TC_WITHOUT_HEAD(move_to_corrupt);
ATF_TC_BODY(move_to_corrupt, tc)
{
	str_t good = STR_INIT, path = STR_INIT, logged = STR_INIT;
	char id[QUEUE_ID_SIZE];
	qf_err_t err;
	struct stat st;

	setup();
	ATF_REQUIRE(log_to_file("maillog") == 0);
	small_file(&good, false, id);
	queue_path(&ql, QUEUE_INCOMING, id, &path);
	ATF_REQUIRE(truncate(str_cstr(&path), (off_t)good.len / 2) == 0);
	ATF_CHECK(qfile_open(&ql, QUEUE_INCOMING, id, 0, &err) == NULL);
	ATF_REQUIRE(err.damaged);
	ATF_REQUIRE(qfile_move_corrupt(&ql, QUEUE_INCOMING, id, err.reason) == 0);
	ATF_CHECK(stat(str_cstr(&path), &st) < 0 && errno == ENOENT);
	str_setf(&path, "q/corrupt/%s", id);
	ATF_REQUIRE(stat(str_cstr(&path), &st) == 0);
	ATF_CHECK_EQ((size_t)st.st_size, good.len / 2);	/* kept as it was */

	/* Same name again (a file put back by hand): never replaced. */
	queue_path(&ql, QUEUE_INCOMING, id, &path);
	put_bytes(str_cstr(&path), "junk", 4);
	ATF_REQUIRE(qfile_move_corrupt(&ql, QUEUE_INCOMING, id, "junk") == 0);
	str_setf(&path, "q/corrupt/%s.1", id);
	ATF_REQUIRE(stat(str_cstr(&path), &st) == 0);
	ATF_CHECK_EQ(st.st_size, 4);
	str_setf(&path, "q/corrupt/%s", id);
	ATF_REQUIRE(stat(str_cstr(&path), &st) == 0);
	ATF_CHECK_EQ((size_t)st.st_size, good.len / 2);

	/* From a hashed queue too. */
	queue_path(&ql, QUEUE_DEFERRED, id, &path);
	ATF_REQUIRE(file_mkdirs("q/deferred", 0700) == 0);
	{
		str_t dir = STR_INIT;
		queue_dir_path(&ql, QUEUE_DEFERRED, id, &dir);
		ATF_REQUIRE(file_mkdirs(str_cstr(&dir), 0700) == 0);
		str_release(&dir);
	}
	put_bytes(str_cstr(&path), "x", 1);
	ATF_REQUIRE(qfile_move_corrupt(&ql, QUEUE_DEFERRED, id, "test") == 0);
	str_setf(&path, "q/corrupt/%s.2", id);
	ATF_CHECK(stat(str_cstr(&path), &st) == 0);

	/* A file that is not there: an error, nothing moved. */
	ATF_CHECK(qfile_move_corrupt(&ql, QUEUE_HOLD, id, "x") < 0);
	ATF_CHECK_EQ(errno, ENOENT);

	ATF_REQUIRE(file_read_all("maillog", &logged, 1 << 20) == 0);
	str_t want = STR_INIT;
	str_setf(&want, "warning: %s: damaged queue file in incoming: %s; "
	    "moved to corrupt/%s\n", id, err.reason, id);
	ATF_CHECK_MSG(strstr(str_cstr(&logged), str_cstr(&want)) != NULL,
	    "log: %s", str_cstr(&logged));
	str_setf(&want, "moved to corrupt/%s.1\n", id);
	ATF_CHECK(strstr(str_cstr(&logged), str_cstr(&want)) != NULL);
	str_release(&want);
	str_release(&good);
	str_release(&path);
	str_release(&logged);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(io_error_is_not_damage);
ATF_TC_BODY(io_error_is_not_damage, tc)
{
	qf_err_t err;

	setup();
	ATF_CHECK(qfile_open(&ql, QUEUE_INCOMING, "1NB6Q3P0B4K7G2", 0, &err) == NULL);
	ATF_CHECK(!err.damaged);
	ATF_CHECK_EQ(err.errnum, ENOENT);
	ATF_CHECK(qfile_open_path("q/incoming", 0, &err) == NULL);
	ATF_CHECK(!err.damaged);
	ATF_CHECK(symlink("/etc/passwd", "q/incoming/1NB6Q3P0B4K7G2") == 0);
	ATF_CHECK(qfile_open(&ql, QUEUE_INCOMING, "1NB6Q3P0B4K7G2", 0, &err) == NULL);
	ATF_CHECK(!err.damaged);
	ATF_CHECK_EQ(err.errnum, ELOOP);
	queue_layout_free(&ql);
}

/* ------------------------------------------------------------------ */
/* Record checks (version 2). */

/* Opens path and reads everything; torn slots and half-marked
 * recipients of a file that opened; false with err when it did not. */
static bool read_info(const char *path, qf_err_t *err, int *torn,
    uint64_t *half)
{
	qfile_t *qf = qfile_open_path(path, 0, err);
	if (qf == NULL)
		return false;
	*torn = qfile_torn_slots(qf);
	*half = qfile_half_marked(qf);
	qf_rcpt_batch_t b = { 0 };
	str_t line = STR_INIT;
	while (qfile_rcpt_read(qf, &b, 2, QF_RCPT_ALL) > 0)
		;
	while (qfile_read_line(qf, &line, 50) > 0)
		;
	qf_rcpt_batch_free(&b);
	str_release(&line);
	qfile_close(qf);
	return true;
}

/* The records of a good file: start offset and type, by scanning it. */
typedef struct recmap {
	off_t start[64];
	int type[64];
	size_t n;
} recmap_t;

static void map_records(const char *path, recmap_t *m)
{
	int fd = open(path, O_RDONLY);
	qf_scan_t *sc = qf_scan_new(fd);
	qf_rec_t rec;
	qf_err_t err;
	int r;

	ATF_REQUIRE(fd >= 0);
	m->n = 0;
	while ((r = qf_scan_next(sc, &rec, &err)) > 0) {
		ATF_REQUIRE(m->n < 64);
		m->start[m->n] = rec.offset;
		m->type[m->n++] = rec.type;
	}
	ATF_REQUIRE_MSG(r == 0, "%s", err.reason);
	ATF_CHECK_EQ(qf_scan_version(sc), 2);
	qf_scan_free(sc);
	close(fd);
}

/* Index of the record holding byte i. */
static size_t record_of(const recmap_t *m, size_t i)
{
	size_t k = 0;
	while (k + 1 < m->n && (size_t)m->start[k + 1] <= i)
		k++;
	return k;
}

/* Offset of recipient n's record (file order, done ones included). */
static off_t rcpt_offset(const char *path, int n, bool *done)
{
	qf_err_t err;
	qf_rcpt_batch_t b = { 0 };
	qfile_t *qf = qfile_open_path(path, 0, &err);
	ATF_REQUIRE_MSG(qf != NULL, "%s", err.reason);
	ATF_REQUIRE(qfile_rcpt_read(qf, &b, 50, QF_RCPT_ALL) > n);
	off_t off = b.rcpt[n].offset;
	if (done)
		*done = b.rcpt[n].done;
	qf_rcpt_batch_free(&b);
	qfile_close(qf);
	return off;
}

static void mark_done(const char *path, off_t off)
{
	qf_err_t err;
	qfile_t *qf = qfile_open_path(path, QF_OPEN_RDWR, &err);
	ATF_REQUIRE_MSG(qf != NULL, "%s", err.reason);
	ATF_REQUIRE_MSG(qfile_rcpt_done(qf, off, 0) == 0, "%s",
	    qfile_error(qf)->reason);
	qfile_close(qf);
}

ATF_TC(flip_every_byte);
ATF_TC_HEAD(flip_every_byte, tc)
{
	atf_tc_set_md_var(tc, "descr", "Every byte of a small queue file "
	    "changed to each other value in turn: damage at the record that "
	    "holds it, or harmless by design (torn A/W slot, half-marked "
	    "recipient; doc/queue-file.md §3)");
	atf_tc_set_md_var(tc, "timeout", "600");
}
ATF_TC_BODY(flip_every_byte, tc)
{
	str_t good = STR_INIT, path = STR_INIT;
	char id[QUEUE_ID_SIZE];
	recmap_t m;
	long detected = 0, torn_n = 0, half_n = 0;

	setup();
	ATF_REQUIRE(log_to_file("maillog") == 0);	/* torn, half: logged */
	small_file(&good, false, id);
	/* A done recipient too (r records and their mark). */
	put_bytes("flip", good.buf, good.len);
	mark_done("flip", rcpt_offset("flip", 1, NULL));
	str_reset(&good);
	ATF_REQUIRE(file_read_all("flip", &good, 1 << 20) == 0);
	map_records("flip", &m);
	ATF_REQUIRE(m.n >= 15);
	int fd = open("flip", O_WRONLY);
	ATF_REQUIRE(fd >= 0);
	for (size_t i = 0; i < good.len; i++) {
		size_t k = record_of(&m, i);
		unsigned char orig = (unsigned char)good.buf[i];
		bool rcpt = m.type[k] == 'R' || m.type[k] == 'r';
		/* The type byte and the mark of a recipient record. */
		bool flag = rcpt && (i == (size_t)m.start[k] || (k + 1 < m.n
		    && i == (size_t)m.start[k + 1] - 5));
		bool slot = (i >= QF_OFF_ATTEMPTS + 2
		    && i < QF_OFF_ATTEMPTS + 2 + QF_SLOT1_LEN)
		    || (i >= QF_OFF_WARN + 2 && i < QF_OFF_WARN + 2 + QF_SLOT1_LEN);
		for (int x = 1; x < 256; x++) {
			unsigned char c = (unsigned char)(orig ^ x);
			qf_err_t err;
			int torn = 0;
			uint64_t half = 0;
			ATF_REQUIRE(pwrite(fd, &c, 1, (off_t)i) == 1);
			bool ok = read_info("flip", &err, &torn, &half);
			if (ok) {
				if (slot && torn != 0 && half == 0) {
					torn_n++;
				} else if (flag && (c == 'R' || c == 'r') && half == 1
				    && torn == 0) {
					half_n++;
				} else {
					atf_tc_fail("byte %zu (record %zu, type '%c' at "
					    "%lld) changed from 0x%02x to 0x%02x was "
					    "accepted (torn %d, half %llu)", i, k,
					    m.type[k], (long long)m.start[k], orig, c,
					    torn, (unsigned long long)half);
				}
			} else {
				ATF_REQUIRE_MSG(err.damaged, "byte %zu: %s", i,
				    err.reason);
				/* The version byte made '1': read as version 1,
				 * which fails further on. */
				if (!(i == 2 && c == '1'))
					ATF_REQUIRE_MSG(err.offset == m.start[k],
					    "byte %zu changed to 0x%02x: damage reported "
					    "at %lld, the record is at %lld (%s)", i, c,
					    (long long)err.offset, (long long)m.start[k],
					    err.reason);
				detected++;
			}
		}
		ATF_REQUIRE(pwrite(fd, &orig, 1, (off_t)i) == 1);
	}
	close(fd);
	printf("%zu bytes, %zu records: %ld changes detected, %ld torn slots, "
	    "%ld half-marked recipients\n", good.len, m.n, detected, torn_n,
	    half_n);
	/* Three recipients, two flag bytes each, one value (R for r, r
	 * for R) each. */
	ATF_CHECK_EQ(half_n, 3 * 2);
	ATF_CHECK(torn_n > 0);
	str_release(&good);
	str_release(&path);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(half_marked);
ATF_TC_BODY(half_marked, tc)
{
	str_t good = STR_INIT, logged = STR_INIT;
	char id[QUEUE_ID_SIZE];
	qf_err_t err;
	bool done;
	int torn;
	uint64_t half;
	char c = 'r';

	setup();
	ATF_REQUIRE(log_to_file("maillog") == 0);
	small_file(&good, false, id);
	put_bytes("h", good.buf, good.len);
	off_t off = rcpt_offset("h", 0, &done);
	ATF_CHECK(!done);
	/* The type byte alone says done: not done (a crash between the
	 * two bytes, or one damaged byte), counted, logged. */
	int fd = open("h", O_WRONLY);
	ATF_REQUIRE(pwrite(fd, &c, 1, off) == 1);
	ATF_REQUIRE(read_info("h", &err, &torn, &half));
	ATF_CHECK_EQ(half, 1);
	rcpt_offset("h", 0, &done);
	ATF_CHECK(!done);
	ATF_REQUIRE(file_read_all("maillog", &logged, 1 << 20) == 0);
	ATF_CHECK_MSG(strstr(str_cstr(&logged), "1 recipient half marked done")
	    != NULL, "%s", str_cstr(&logged));
	/* Marking it done writes both. */
	mark_done("h", off);
	ATF_REQUIRE(read_info("h", &err, &torn, &half));
	ATF_CHECK_EQ(half, 0);
	rcpt_offset("h", 0, &done);
	ATF_CHECK(done);
	/* A done recipient whose type byte went back to R: not done (at
	 * worst delivered again, never lost). */
	c = 'R';
	ATF_REQUIRE(pwrite(fd, &c, 1, off) == 1);
	rcpt_offset("h", 0, &done);
	ATF_CHECK(!done);
	close(fd);
	str_release(&good);
	str_release(&logged);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(damaged_record_to_corrupt);
ATF_TC_BODY(damaged_record_to_corrupt, tc)
{
	str_t err_s = STR_INIT, path = STR_INIT, before = STR_INIT,
	    after = STR_INIT, logged = STR_INIT, want = STR_INIT;
	qf_err_t err;

	setup();
	ATF_REQUIRE(log_to_file("maillog") == 0);
	qfw_t *w = qfw_create(&ql, QUEUE_INCOMING, 0600, &err_s);
	ATF_REQUIRE(w != NULL);
	char id[QUEUE_ID_SIZE];
	snprintf(id, sizeof(id), "%s", qfw_id(w));
	ATF_REQUIRE(qfw_sender(w, "sender@example.org") == 0);
	qf_rcpt_in_t r1 = { "delivered@example.net", NULL, NULL, 0 };
	qf_rcpt_in_t r2 = { "victim04@example.net", NULL, NULL, 0 };
	ATF_REQUIRE(qfw_rcpt(w, &r1) == 0);
	ATF_REQUIRE(qfw_rcpt(w, &r2) == 0);
	ATF_REQUIRE(qfw_content(w, "Subject: x\n\nbody\n", 17) == 0);
	ATF_REQUIRE(qfw_commit(w) == 0);
	str_set(&path, qfw_path(w));
	qfw_free(w);
	/* The first recipient was delivered; then one byte of the second
	 * changes: "victim04" becomes "v3ctim04". */
	off_t off1 = rcpt_offset(str_cstr(&path), 0, NULL);
	off_t off2 = rcpt_offset(str_cstr(&path), 1, NULL);
	mark_done(str_cstr(&path), off1);
	ATF_REQUIRE(file_read_all(str_cstr(&path), &before, 1 << 20) == 0);
	char *v = NULL;
	for (size_t i = 0; v == NULL && i + 8 <= before.len; i++)
		if (memcmp(before.buf + i, "victim04", 8) == 0)
			v = before.buf + i;
	ATF_REQUIRE(v != NULL);
	v[1] = '3';
	put_bytes(str_cstr(&path), before.buf, before.len);
	ATF_CHECK(qfile_open(&ql, QUEUE_INCOMING, id, 0, &err) == NULL);
	ATF_REQUIRE(err.damaged);
	ATF_CHECK_EQ(err.offset, off2);
	ATF_CHECK_MSG(strstr(err.reason, "recipient record fails its check")
	    != NULL, "%s", err.reason);
	ATF_REQUIRE(qfile_move_damaged(&ql, QUEUE_INCOMING, id, &err) == 0);
	ATF_REQUIRE(file_read_all("maillog", &logged, 1 << 20) == 0);
	str_setf(&want, "warning: %s: damaged queue file in incoming: at offset "
	    "%lld: %s; moved to corrupt/%s\n", id, (long long)off2, err.reason, id);
	ATF_CHECK_MSG(strstr(str_cstr(&logged), str_cstr(&want)) != NULL,
	    "log: %s", str_cstr(&logged));
	/* Moved as it was: the delivered recipient is still marked done. */
	str_setf(&path, "q/corrupt/%s", id);
	ATF_REQUIRE(file_read_all(str_cstr(&path), &after, 1 << 20) == 0);
	ATF_CHECK(after.len == before.len
	    && memcmp(after.buf, before.buf, before.len) == 0);
	ATF_CHECK_EQ(after.buf[off1], 'r');
	str_release(&err_s);
	str_release(&path);
	str_release(&before);
	str_release(&after);
	str_release(&logged);
	str_release(&want);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(mark_done_checks_record);
ATF_TC_BODY(mark_done_checks_record, tc)
{
	str_t good = STR_INIT, now = STR_INIT;
	char id[QUEUE_ID_SIZE];
	qf_err_t err;

	setup();
	small_file(&good, false, id);
	put_bytes("d", good.buf, good.len);
	off_t off = rcpt_offset("d", 0, NULL);
	qfile_t *qf = qfile_open_path("d", QF_OPEN_RDWR, &err);
	ATF_REQUIRE(qf != NULL);
	/* Damaged after the open: the mark is refused, nothing written. */
	int fd = open("d", O_WRONLY);
	char c = 'X';
	ATF_REQUIRE(pwrite(fd, &c, 1, off + 3) == 1);
	close(fd);
	ATF_CHECK(qfile_rcpt_done(qf, off, 0) < 0);
	ATF_CHECK(qfile_error(qf)->damaged);
	ATF_CHECK(strstr(qfile_error(qf)->reason, "fails its check") != NULL);
	ATF_REQUIRE(file_read_all("d", &now, 1 << 20) == 0);
	ATF_CHECK_EQ(now.buf[off], 'R');
	qfile_close(qf);
	str_release(&good);
	str_release(&now);
	queue_layout_free(&ql);
}

ATF_TC_WITHOUT_HEAD(version_1_still_read);
ATF_TC_BODY(version_1_still_read, tc)
{
	str_t v1 = STR_INIT, v2 = STR_INIT;
	char id[QUEUE_ID_SIZE];
	qf_err_t err;
	bool done;
	int torn;
	uint64_t half;

	setup();
	small_file(&v2, true, id);
	qfw_version = 1;
	small_file(&v1, true, id);
	qfw_version = 2;
	ATF_CHECK_EQ(v1.buf[2], '1');
	ATF_CHECK_EQ(v2.buf[2], '2');
	ATF_CHECK(v1.len < v2.len);
	put_bytes("v1", v1.buf, v1.len);
	ATF_REQUIRE_MSG(read_info("v1", &err, &torn, &half), "%s", err.reason);
	/* Every recipient and line as in the version 2 file. */
	qfile_t *a = qfile_open_path("v1", 0, &err);
	put_bytes("v2", v2.buf, v2.len);
	qfile_t *b = qfile_open_path("v2", 0, &err);
	ATF_REQUIRE(a != NULL && b != NULL);
	qf_rcpt_batch_t ba = { 0 }, bb = { 0 };
	ATF_REQUIRE_EQ(qfile_rcpt_read(a, &ba, 50, 0), 3);
	ATF_REQUIRE_EQ(qfile_rcpt_read(b, &bb, 50, 0), 3);
	for (int i = 0; i < 3; i++) {
		ATF_CHECK_STREQ(str_cstr(&ba.rcpt[i].address),
		    str_cstr(&bb.rcpt[i].address));
		ATF_CHECK_STREQ(str_cstr(&ba.rcpt[i].orcpt),
		    str_cstr(&bb.rcpt[i].orcpt));
	}
	str_t la = STR_INIT, lb = STR_INIT;
	int ka, kb;
	do {
		ka = qfile_read_line(a, &la, 100);
		kb = qfile_read_line(b, &lb, 100);
		ATF_REQUIRE_EQ(ka, kb);
		ATF_REQUIRE_STREQ(str_cstr(&la), str_cstr(&lb));
	} while (ka > 0);
	qfile_close(a);
	qfile_close(b);
	/* Marking done: the type byte alone, as version 1 says. */
	off_t off = ba.rcpt[1].offset;
	mark_done("v1", off);
	rcpt_offset("v1", 1, &done);
	ATF_CHECK(done);
	str_t now = STR_INIT;
	ATF_REQUIRE(file_read_all("v1", &now, 1 << 20) == 0);
	ATF_CHECK_EQ(now.len, v1.len);
	for (size_t i = 0; i < v1.len; i++)
		if ((off_t)i != off)
			ATF_REQUIRE(now.buf[i] == v1.buf[i]);
	qf_rcpt_batch_free(&ba);
	qf_rcpt_batch_free(&bb);
	str_release(&la);
	str_release(&lb);
	str_release(&now);
	str_release(&v1);
	str_release(&v2);
	queue_layout_free(&ql);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, truncation_every_offset);
	ATF_TP_ADD_TC(tp, random_corruption);
	ATF_TP_ADD_TC(tp, handmade_files);
	ATF_TP_ADD_TC(tp, handmade_files_v2);
	ATF_TP_ADD_TC(tp, move_to_corrupt);
	ATF_TP_ADD_TC(tp, io_error_is_not_damage);
	ATF_TP_ADD_TC(tp, flip_every_byte);
	ATF_TP_ADD_TC(tp, half_marked);
	ATF_TP_ADD_TC(tp, damaged_record_to_corrupt);
	ATF_TP_ADD_TC(tp, mark_done_checks_record);
	ATF_TP_ADD_TC(tp, version_1_still_read);
	return atf_no_error();
}
