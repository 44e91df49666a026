/* libpostq: queue shape (postq -q), like Postfix's qshape: for each
 * queue, a table of messages per recipient domain (or sender domain)
 * against age buckets.  A message counts once in every domain it has a
 * pending recipient in, and once in TOTAL. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "json.h"
#include "mem.h"
#include "pq.h"
#include "queue_msg.h"

static const char *const shape_queues[] = { QUEUE_INCOMING, QUEUE_ACTIVE,
    QUEUE_DEFERRED, QUEUE_HOLD, NULL };

void pq_shape_defaults(pq_shape_opts_t *o)
{
	memset(o, 0, sizeof(*o));
	o->buckets = 10;
	o->minutes = 5;
	o->now = time(NULL);
}

typedef struct row {
	char *name;		/* NULL: TOTAL */
	long total;
	long *n;
} row_t;

typedef struct table {
	int nb;
	htable_t *rows;		/* domain -> row_t */
	row_t total;
} table_t;

/* Upper limit in minutes of bucket i (the last has none). */
static long limit_of(const pq_shape_opts_t *o, int i)
{
	long v = o->minutes;

	for (int k = 0; k < i && v < 100000000L; k++)
		v *= 2;
	return v;
}

static int bucket_of(const pq_shape_opts_t *o, double age_min)
{
	for (int i = 0; i < o->buckets - 1; i++)
		if (age_min < (double)limit_of(o, i))
			return i;
	return o->buckets - 1;
}

static row_t *row_get(table_t *t, const char *name)
{
	row_t *r = htable_get(t->rows, name);

	if (r == NULL) {
		r = xcalloc(1, sizeof(*r));
		r->name = xstrdup(name);
		r->n = xcalloc((size_t)t->nb, sizeof(long));
		htable_add(t->rows, r->name, r);
	}
	return r;
}

static void row_free(void *v)
{
	row_t *r = v;

	free(r->name);
	free(r->n);
	free(r);
}

/* The domain of an address, lower case; "" for none. */
static void domain_of(const char *addr, str_t *out)
{
	const char *at = strrchr(addr, '@');

	str_set(out, at ? at + 1 : "");
	str_lower((char *)str_cstr(out));
}

static int cmp_rows(const void *a, const void *b)
{
	const row_t *x = *(row_t *const *)a, *y = *(row_t *const *)b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void count_message(const pq_shape_opts_t *o, table_t *t, queue_msg_t *m)
{
	double age = ((double)o->now - (double)m->arrival.tv_sec) / 60.0;
	int b = bucket_of(o, age < 0 ? 0 : age);
	str_t dom = STR_INIT;
	htable_t *seen = htable_new(4, 0);
	const char *addr, *reason;

	t->total.total++;
	t->total.n[b]++;
	if (o->by_sender) {
		if (*m->sender)
			domain_of(m->sender, &dom);
		else
			str_set(&dom, "MAILER-DAEMON");
		htable_add(seen, str_cstr(&dom), NULL);
	} else {
		while (queue_msg_next_rcpt(m, &addr, &reason) > 0) {
			domain_of(addr, &dom);
			if (!htable_find(seen, str_cstr(&dom)))
				htable_add(seen, str_cstr(&dom), NULL);
		}
	}
	{
		size_t n;
		htable_entry_t **v = htable_list(seen, &n);
		for (size_t i = 0; i < n; i++) {
			row_t *r = row_get(t, v[i]->key);
			r->total++;
			r->n[b]++;
		}
		free(v);
	}
	htable_free(seen, NULL);
	str_release(&dom);
}

static void print_text(str_t *out, const pq_shape_opts_t *o, const char *queue,
    table_t *t, row_t **rows, size_t nrows)
{
	int wname = 5;			/* "TOTAL" */
	int *w = xcalloc((size_t)o->buckets + 1, sizeof(int));
	char label[32];

	for (size_t i = 0; i < nrows; i++)
		if ((int)strlen(rows[i]->name) > wname)
			wname = (int)strlen(rows[i]->name);
	/* Column widths: the label or the largest count. */
	(void)bfmt(label, sizeof(label), "%ld", t->total.total);
	w[0] = (int)strlen(label) > 1 ? (int)strlen(label) : 1;
	for (int i = 0; i < o->buckets; i++) {
		long lim = limit_of(o, i == o->buckets - 1 ? i - 1 : i);
		(void)bfmt(label, sizeof(label), i == o->buckets - 1 ? "%ld+" : "%ld",
		    lim);
		w[i + 1] = (int)strlen(label);
		(void)bfmt(label, sizeof(label), "%ld", t->total.n[i]);
		if ((int)strlen(label) > w[i + 1])
			w[i + 1] = (int)strlen(label);
	}
	str_catf(out, "%s:\n%*s %*s", queue, wname, "", w[0], "T");
	for (int i = 0; i < o->buckets; i++) {
		long lim = limit_of(o, i == o->buckets - 1 ? i - 1 : i);
		(void)bfmt(label, sizeof(label), i == o->buckets - 1 ? "%ld+" : "%ld",
		    lim);
		str_catf(out, " %*s", w[i + 1], label);
	}
	str_putc(out, '\n');
	for (size_t k = 0; k <= nrows; k++) {
		row_t *r = k == 0 ? &t->total : rows[k - 1];
		str_t name = STR_INIT;
		if (k == 0)
			str_set(&name, "TOTAL");
		else
			str_quote_printable(&name, r->name, strlen(r->name));
		str_catf(out, "%*s %*ld", wname, str_cstr(&name), w[0], r->total);
		for (int i = 0; i < o->buckets; i++)
			str_catf(out, " %*ld", w[i + 1], r->n[i]);
		str_putc(out, '\n');
		str_release(&name);
	}
	str_putc(out, '\n');
	free(w);
}

static void print_json(str_t *out, const pq_shape_opts_t *o, const char *queue,
    table_t *t, row_t **rows, size_t nrows)
{
	for (size_t k = 0; k <= nrows; k++) {
		row_t *r = k == 0 ? &t->total : rows[k - 1];
		str_cat(out, "{\"queue_name\":");
		json_str(out, queue);
		str_catf(out, ",\"%s\":", o->by_sender ? "sender_domain"
		    : "recipient_domain");
		if (k == 0)
			str_cat(out, "null");
		else
			json_str(out, r->name);
		str_catf(out, ",\"total\":%ld,\"buckets\":[", r->total);
		for (int i = 0; i < o->buckets; i++)
			str_catf(out, "%s%ld", i ? "," : "", r->n[i]);
		str_cat(out, "],\"bucket_limits\":[");
		for (int i = 0; i < o->buckets - 1; i++)
			str_catf(out, "%s%ld", i ? "," : "", limit_of(o, i));
		str_cat(out, ",null]}\n");
	}
}

int pq_shape(const queue_layout_t *ql, const pq_shape_opts_t *o, FILE *out,
    str_t *err)
{
	const char *const *queues = o->queues ? o->queues : shape_queues;
	str_t buf = STR_INIT;
	int rc = 0;

	if (o->buckets < 2 || o->buckets > 30 || o->minutes < 1) {
		str_setf(err, "bad bucket settings: at least 2, at most 30 "
		    "buckets; first bucket at least 1 minute");
		return -1;
	}
	for (int q = 0; queues[q] != NULL && rc == 0; q++) {
		queue_walk_files_t files = QUEUE_WALK_FILES_INIT;
		table_t t;
		row_t **rows;
		size_t n;
		htable_entry_t **v;

		memset(&t, 0, sizeof(t));
		t.nb = o->buckets;
		t.rows = htable_new(64, 0);
		t.total.n = xcalloc((size_t)t.nb, sizeof(long));
		if (queue_walk_collect(ql, queues[q], &files, err) < 0)
			rc = -1;
		for (size_t i = 0; rc == 0 && i < files.n; i++) {
			queue_msg_t m;
			if (queue_msg_open(ql, &files.v[i], &m) == 0)
				count_message(o, &t, &m);
			queue_msg_close(&m);
		}
		queue_walk_files_free(&files);
		if (rc == 0) {
			v = htable_list(t.rows, &n);
			rows = xcalloc(n ? n : 1, sizeof(*rows));
			for (size_t i = 0; i < n; i++)
				rows[i] = v[i]->value;
			free(v);
			qsort(rows, n, sizeof(*rows), cmp_rows);
			if (o->json)
				print_json(&buf, o, queues[q], &t, rows, n);
			else
				print_text(&buf, o, queues[q], &t, rows, n);
			free(rows);
		}
		htable_free(t.rows, row_free);
		free(t.total.n);
	}
	if (rc == 0 && (fwrite(str_cstr(&buf), 1, str_len(&buf), out)
	    != str_len(&buf) || fflush(out) != 0)) {
		str_setf(err, "write error: %s", strerror(errno));
		rc = -1;
	}
	str_release(&buf);
	return rc;
}
