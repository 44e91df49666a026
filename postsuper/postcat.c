/* postcat: show a queue file in readable form.
 *
 *	postcat [-c config_dir] [-q] [-e | -b | -h] QUEUEID... | FILE...
 *
 * The file is walked record by record with the validating scanner, so a
 * damaged file is shown as far as it can be read, followed by a line
 * saying where the damage starts and why (exit status 1).  See
 * man/postcat.1 and doc/queue-file.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "config.h"
#include "dsn_notify.h"
#include "file.h"
#include "log.h"
#include "pconfig.h"
#include "qfile.h"
#include "stream.h"

enum mode { SHOW_ALL, SHOW_ENVELOPE, SHOW_HEADER, SHOW_BODY };

static stream_t *out;

static void usage(void)
{
	fprintf(stderr, "usage: postcat [-c config_dir] [-q] [-e | -b | -h] "
	    "QUEUEID... | FILE...\n");
	exit(2);
}

static void put(const void *data, size_t len)
{
	(void)stream_write(out, data, len);
}

static void puts_(const char *s)
{
	put(s, strlen(s));
}

/* "name: value" with the value made printable. */
static void field(const char *name, const char *data, size_t len)
{
	str_t v = STR_INIT;

	str_quote_printable(&v, data, len);
	(void)stream_printf(out, "%s: %s\n", name, str_cstr(&v));
	str_release(&v);
}

static void show_time(const char *name, time_t t)
{
	char buf[64];
	struct tm tm;

	if (localtime_r(&t, &tm) != NULL
	    && strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S %z", &tm) > 0)
		(void)stream_printf(out, "%s: %lld (%s)\n", name, (long long)t, buf);
	else
		(void)stream_printf(out, "%s: %lld\n", name, (long long)t);
}

static void show_notify(const char *data)
{
	int v = atoi(data);
	str_t s = STR_INIT;

	dsn_notify_format(v, false, &s);
	(void)stream_printf(out, "notify: %s\n", str_cstr(&s));
	str_release(&s);
}

/* Header/body split for -h and -b: the first empty line (LF or CRLF
 * alone) ends the header and belongs to neither. */
typedef struct split {
	bool in_body;
	size_t line_len;	/* bytes of the current line seen so far */
	bool held_cr;		/* a lone "\r" piece held back at line start */
} split_t;

static void content_piece(enum mode mode, split_t *sp, int type,
    const char *data, size_t len)
{
	bool ends = type == QF_REC_LINE;

	if (mode == SHOW_ALL) {
		put(data, len);
		return;
	}
	if (mode == SHOW_ENVELOPE)
		return;
	if (sp->in_body) {
		if (mode == SHOW_BODY)
			put(data, len);
		return;
	}
	/* In the header: is this line the empty separator? */
	if (sp->line_len == 0 && !sp->held_cr && !ends && len == 1
	    && data[0] == '\r') {
		sp->held_cr = true;	/* maybe the start of "\r\n" */
		return;
	}
	bool empty = ends && ((sp->line_len == 0 && !sp->held_cr
	    && ((len == 1 && data[0] == '\n')
		|| (len == 2 && data[0] == '\r' && data[1] == '\n')))
	    || (sp->held_cr && len == 1 && data[0] == '\n'));
	if (empty) {
		sp->in_body = true;
		sp->held_cr = false;
		return;
	}
	if (mode == SHOW_HEADER) {
		if (sp->held_cr)
			put("\r", 1);
		put(data, len);
	}
	sp->line_len += len + (sp->held_cr ? 1 : 0);
	sp->held_cr = false;
	if (ends)
		sp->line_len = 0;
}

/* Shows one file; returns 0, or 1 when it is damaged or unreadable. */
static int postcat(const char *path, const char *label, enum mode mode)
{
	qf_err_t err;
	qf_rec_t rec;
	qf_scan_t *sc;
	split_t sp = { 0 };
	bool content_nl = true;	/* the content so far ends with LF */
	int fd, r;

	if ((fd = file_open_read(path, FILE_ANY_OWNER)) < 0) {
		log_error("open %s: %s", path, strerror(errno));
		return 1;
	}
	sc = qf_scan_new(fd);
	if (mode == SHOW_ALL || mode == SHOW_ENVELOPE)
		(void)stream_printf(out, "*** ENVELOPE RECORDS %s ***\n", label);
	while ((r = qf_scan_next(sc, &rec, &err)) > 0) {
		bool env = mode == SHOW_ALL || mode == SHOW_ENVELOPE;
		const char *d = rec.data;
		size_t n = rec.len;
		uint64_t v[4];

		switch (rec.type) {
		case QF_REC_VERSION:
			if (env)
				field("version", d, n);
			break;
		case QF_REC_SIZES:
			qf_scan_sizes(sc, v);
			if (env)
				(void)stream_printf(out, "message_size: %llu\n"
				    "content_offset: %llu\nextracted_offset: %llu\n"
				    "recipient_count: %llu\n",
				    (unsigned long long)v[1], (unsigned long long)v[0],
				    (unsigned long long)v[2], (unsigned long long)v[3]);
			break;
		case QF_REC_ATTEMPTS:
		case QF_REC_WARN: {
			uint64_t att, warn;
			int torn;
			if (!env)
				break;
			/* The scanner's values: it re-reads a slot caught in
			 * mid-update. */
			qf_scan_slots(sc, &att, &warn, &torn);
			if (rec.type == QF_REC_ATTEMPTS) {
				if (torn & QF_TORN_ATTEMPTS)
					puts_("attempts: unknown (torn slot)\n");
				else
					(void)stream_printf(out, "attempts: %llu\n",
					    (unsigned long long)att);
			} else if (torn & QF_TORN_WARN) {
				puts_("next_warning_time: unknown (torn slot)\n");
			} else if (warn == 0) {
				puts_("next_warning_time: none\n");
			} else {
				show_time("next_warning_time", (time_t)warn);
			}
			break;
		}
		case QF_REC_TIME:
			if (env) {
				char buf[64];
				struct tm tm;
				time_t t = (time_t)strtoll(d, NULL, 10);
				if (localtime_r(&t, &tm) != NULL && strftime(buf,
				    sizeof(buf), "%a, %d %b %Y %H:%M:%S %z", &tm) > 0)
					(void)stream_printf(out,
					    "arrival_time: %s (%s)\n", d, buf);
				else
					field("arrival_time", d, n);
			}
			break;
		case QF_REC_SENDER:
			if (env)
				field("sender", d, n);
			break;
		case QF_REC_ENVID:
			if (env)
				field("envid", d, n);
			break;
		case QF_REC_RET:
			if (env)
				field("ret", d, n);
			break;
		case QF_REC_ATTR:
			if (env)
				field("attribute", d, n);
			break;
		case QF_REC_ORIG:
			if (env)
				field("original_recipient", d, n);
			break;
		case QF_REC_ORCPT:
			if (env)
				field("orcpt", d, n);
			break;
		case QF_REC_NOTIFY:
			if (env)
				show_notify(d);
			break;
		case QF_REC_RCPT:
			if (env)
				field(rec.half_marked ? "half_marked_recipient"
				    : "recipient", d, n);
			break;
		case QF_REC_DONE:
			if (env)
				field("done_recipient", d, n);
			break;
		case QF_REC_MESSAGE:
			if (mode == SHOW_ALL)
				(void)stream_printf(out, "*** MESSAGE CONTENTS %s ***\n",
				    label);
			break;
		case QF_REC_LINE:
		case QF_REC_PART:
			content_piece(mode, &sp, rec.type, d, n);
			content_nl = n > 0 && d[n - 1] == '\n';
			break;
		case QF_REC_EXTRACTED:
			if (mode == SHOW_ALL && !content_nl)
				put("\n", 1);
			content_nl = true;
			if (env)
				(void)stream_printf(out, "*** HEADER EXTRACTED %s ***\n",
				    label);
			break;
		case QF_REC_END:
			if (mode == SHOW_ALL && !content_nl)
				put("\n", 1);
			content_nl = true;
			if (env)
				(void)stream_printf(out, "*** MESSAGE FILE END %s ***\n",
				    label);
			break;
		}
	}
	if (r < 0) {
		if (mode == SHOW_ALL && !content_nl)
			put("\n", 1);
		if (err.damaged) {
			(void)stream_printf(out, "*** DAMAGED FILE %s: at offset "
			    "%lld: %s ***\n", label, (long long)err.offset, err.reason);
			log_error("%s: damaged queue file: at offset %lld: %s", label,
			    (long long)err.offset, err.reason);
		} else {
			log_error("%s: %s", label, err.reason);
		}
	}
	qf_scan_free(sc);
	close(fd);
	return r < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	enum mode mode = SHOW_ALL;
	bool by_id = false;
	int c, rc = 0;

	log_init("postcat");
	while ((c = getopt(argc, argv, "c:qebh")) != -1) {
		switch (c) {
		case 'c':
			dir = optarg;
			break;
		case 'q':
			by_id = true;
			break;
		case 'e':
		case 'b':
		case 'h':
			if (mode != SHOW_ALL)
				usage();
			mode = c == 'e' ? SHOW_ENVELOPE : c == 'b' ? SHOW_BODY
			    : SHOW_HEADER;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		usage();

	queue_layout_t ql = { 0 };
	if (by_id) {
		str_t err = STR_INIT;
		if (dir == NULL)
			dir = getenv("MAIL_CONFIG");
		if (dir == NULL || *dir == 0)
			dir = DEF_CONFIG_DIR;
		if (pconfig_load(dir) < 0)
			log_fatal("%s", pconfig_errors());
		if (queue_layout_from_config(&ql, &err) < 0)
			log_fatal("%s", str_cstr(&err));
		str_release(&err);
	}
	out = stream_open(STDOUT_FILENO);
	for (int i = 0; i < argc; i++) {
		str_t path = STR_INIT, label = STR_INIT;
		if (!by_id) {
			if (access(argv[i], F_OK) < 0 && errno == ENOENT
			    && queue_id_valid(argv[i]))
				log_warning("%s: no such file (use -q to look a queue "
				    "ID up in the queues)", argv[i]);
			rc |= postcat(argv[i], argv[i], mode);
			continue;
		}
		if (!queue_id_valid(argv[i])) {
			log_error("%s: not a valid queue ID", argv[i]);
			rc = 1;
			continue;
		}
		int q;
		for (q = 0; queue_message_names[q] != NULL; q++)
			if (queue_find(&ql, queue_message_names[q], argv[i],
			    &path) == 0)
				break;
		if (queue_message_names[q] == NULL) {
			log_error("%s: not found in any queue of %s", argv[i], ql.dir);
			rc = 1;
		} else {
			str_setf(&label, "%s/%s", queue_message_names[q], argv[i]);
			rc |= postcat(str_cstr(&path), str_cstr(&label), mode);
		}
		str_release(&path);
		str_release(&label);
	}
	if (stream_flush(out) < 0) {
		log_error("write error on standard output: %s",
		    strerror(stream_errno(out)));
		rc = 1;
	}
	(void)stream_detach(out);
	queue_layout_free(&ql);
	return rc;
}
