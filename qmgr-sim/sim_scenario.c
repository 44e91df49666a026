/* qmgr-sim scenario files: a small line-based format, documented in
 * doc/qmgr-sim.md.  Every error names the file and line. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sim.h"
#include "mem.h"

typedef struct parse {
	sim_t *sim;
	const char *name;
	int line;
	str_t *err;
	char **tdefs;			/* default_X settings, "name=value" */
	int ntdefs;
} parse_t;

static bool perr(parse_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool perr(parse_t *p, const char *fmt, ...)
{
	va_list ap;
	str_setf(p->err, "%s:%d: ", p->name, p->line);
	va_start(ap, fmt);
	str_vcatf(p->err, fmt, ap);
	va_end(ap);
	return false;
}

static bool get_time(parse_t *p, const char *key, const char *v, double *out)
{
	if (!sched_parse_time(v, out))
		return perr(p, "bad time for %s: \"%s\" (e.g. 1.5s, 5m, 2h)", key, v);
	return true;
}

static bool get_long(parse_t *p, const char *key, const char *v, long lo,
    long *out)
{
	char *end;
	long l;
	errno = 0;
	l = strtol(v, &end, 10);
	if (*v == 0 || *end || errno || l < lo)
		return perr(p, "bad number for %s: \"%s\" (an integer >= %ld)", key, v, lo);
	*out = l;
	return true;
}

static bool get_prob(parse_t *p, const char *key, const char *v, double *out)
{
	char *end;
	double d;
	errno = 0;
	d = strtod(v, &end);
	if (*v == 0 || *end || errno || !(d >= 0 && d <= 1))
		return perr(p, "bad probability for %s: \"%s\" (0 to 1)", key, v);
	*out = d;
	return true;
}

static int find_dest(const sim_t *s, const char *name)
{
	for (int i = 0; i < s->ndests; i++)
		if (strcasecmp(s->dests[i].name, name) == 0)
			return i;
	return -1;
}

static int find_transport(const sim_t *s, const char *name)
{
	for (int i = 0; i < s->ntransports; i++)
		if (strcmp(s->transports[i].name, name) == 0)
			return i;
	return -1;
}

/* Split "key=value"; value NULL for a bare word. */
static char *split_kv(char *tok, char **value)
{
	char *eq = strchr(tok, '=');
	if (eq) {
		*eq = 0;
		*value = eq + 1;
	} else {
		*value = NULL;
	}
	return tok;
}

static bool do_set(parse_t *p, char *name, char *value)
{
	sim_t *s = p->sim;
	str_t e = STR_INIT;
	long l;
	int ti;

	if (strcmp(name, "qmgr_message_active_limit") == 0)
		return get_long(p, name, value, 1, &l) && ((s->active_limit = l), true);
	if (strcmp(name, "queue_run_delay") == 0)
		return get_time(p, name, value, &s->queue_run_delay);
	if (sched_params_set(&s->sp, name, value, &e)) {
		str_release(&e);
		return true;
	}
	if (strncmp(str_cstr(&e), "unknown", 7) != 0)
		goto bad;
	/* A transport default (default_X, or a name without prefix) for
	 * transports declared after this line. */
	{
		sched_tparams_t tp = s->tdefaults;
		if (sched_tparams_set(&tp, name, value, &e)) {
			p->tdefs = xreallocarray(p->tdefs, (size_t)p->ntdefs + 1,
			    sizeof(*p->tdefs));
			str_setf(&e, "%s=%s", name, value);
			p->tdefs[p->ntdefs++] = str_steal(&e);
			s->tdefaults = tp;
			str_release(&e);
			return true;
		}
		if (strncmp(str_cstr(&e), "unknown", 7) != 0)
			goto bad;
	}
	/* TRANSPORT_X for a declared transport. */
	for (ti = 0; ti < s->ntransports; ti++) {
		size_t n = strlen(s->transports[ti].name);
		if (strncmp(name, s->transports[ti].name, n) == 0 && name[n] == '_') {
			if (!sched_tparams_set(&s->transports[ti].p, name + n + 1, value, &e))
				goto bad;
			str_release(&e);
			return true;
		}
	}
	perr(p, "unknown parameter \"%s\"", name);
	str_release(&e);
	return false;
bad:
	perr(p, "%s", str_cstr(&e));
	str_release(&e);
	return false;
}

static bool do_transport(parse_t *p, char **tok, int ntok)
{
	sim_t *s = p->sim;
	sim_transport_t *t;
	str_t e = STR_INIT;

	if (ntok < 2)
		return perr(p, "usage: transport NAME [parameter=value ...]");
	if (find_transport(s, tok[1]) >= 0)
		return perr(p, "transport \"%s\" declared twice", tok[1]);
	s->transports = xreallocarray(s->transports, (size_t)s->ntransports + 1,
	    sizeof(*s->transports));
	t = &s->transports[s->ntransports++];
	t->name = xstrdup(tok[1]);
	sched_tparams_init(&t->p, t->name);
	for (int i = 0; i < p->ntdefs; i++) {
		char buf[256], *v;
		bcopy_str(buf, sizeof(buf), p->tdefs[i]);
		split_kv(buf, &v);
		sched_tparams_set(&t->p, buf, v, NULL);
	}
	for (int i = 2; i < ntok; i++) {
		char *v, *k = split_kv(tok[i], &v);
		if (v == NULL)
			return perr(p, "expected parameter=value, got \"%s\"", k);
		if (!sched_tparams_set(&t->p, k, v, &e)) {
			perr(p, "%s", str_cstr(&e));
			str_release(&e);
			return false;
		}
	}
	if (!sched_tparams_check(&t->p, &e)) {
		perr(p, "transport %s: %s", t->name, str_cstr(&e));
		str_release(&e);
		return false;
	}
	str_release(&e);
	return true;
}

static bool parse_periods(parse_t *p, sim_dest_t *d, char *v)
{
	char *item;
	while ((item = str_token(&v, ",")) != NULL) {
		char *dots = strstr(item, "..");
		sim_period_t per;
		if (dots == NULL)
			return perr(p, "bad dead period \"%s\" (START..END)", item);
		*dots = 0;
		if (!get_time(p, "dead", item, &per.start)
		    || !get_time(p, "dead", dots + 2, &per.end))
			return false;
		if (per.end <= per.start)
			return perr(p, "dead period ends before it starts");
		d->dead = xreallocarray(d->dead, (size_t)d->ndead + 1, sizeof(*d->dead));
		d->dead[d->ndead++] = per;
	}
	return true;
}

/* limit_at=TIME:N[,TIME:N...], times increasing. */
static bool parse_limit_changes(parse_t *p, sim_dest_t *d, char *v)
{
	char *item;
	while ((item = str_token(&v, ",")) != NULL) {
		char *colon = strrchr(item, ':');
		sim_limit_change_t ch;
		long l;
		if (colon == NULL)
			return perr(p, "bad limit change \"%s\" (TIME:SESSIONS)", item);
		*colon = 0;
		if (!get_time(p, "limit_at", item, &ch.at)
		    || !get_long(p, "limit_at", colon + 1, 0, &l))
			return false;
		if (l > 1000000000L)
			return perr(p, "limit_at: too many sessions");
		ch.limit = (int)l;
		if (d->nlimit_at > 0 && ch.at <= d->limit_at[d->nlimit_at - 1].at)
			return perr(p, "limit_at: times must increase");
		d->limit_at = xreallocarray(d->limit_at, (size_t)d->nlimit_at + 1,
		    sizeof(*d->limit_at));
		d->limit_at[d->nlimit_at++] = ch;
	}
	return true;
}

static bool do_dest(parse_t *p, char **tok, int ntok)
{
	sim_t *s = p->sim;
	sim_dest_t *d;
	long l;

	if (ntok < 2)
		return perr(p, "usage: dest NAME [key=value ...]");
	if (find_dest(s, tok[1]) >= 0)
		return perr(p, "destination \"%s\" declared twice", tok[1]);
	s->dests = xreallocarray(s->dests, (size_t)s->ndests + 1, sizeof(*s->dests));
	d = &s->dests[s->ndests++];
	memset(d, 0, sizeof(*d));
	d->name = xstrdup(tok[1]);
	d->transport = xstrdup(s->ntransports ? s->transports[0].name : "smtp");
	d->service = 1;
	d->timeout_time = 30;
	for (int i = 2; i < ntok; i++) {
		char *v, *k = split_kv(tok[i], &v);
		bool ok;
		if (v == NULL)
			return perr(p, "expected key=value, got \"%s\"", k);
		if (strcmp(k, "transport") == 0) {
			free(d->transport);
			d->transport = xstrdup(v);
			ok = true;
		} else if (strcmp(k, "mx") == 0) {
			if (*v == 0 || strpbrk(v, "{},") != NULL)
				return perr(p, "mx needs a host name");
			free(d->mx);
			d->mx = xstrdup(v);
			ok = true;
		} else if (strcmp(k, "service") == 0)
			ok = get_time(p, k, v, &d->service);
		else if (strcmp(k, "connect") == 0)
			ok = get_time(p, k, v, &d->connect);
		else if (strcmp(k, "reject") == 0)
			ok = get_time(p, k, v, &d->reject);
		else if (strcmp(k, "timeout_time") == 0)
			ok = get_time(p, k, v, &d->timeout_time);
		else if (strcmp(k, "limit") == 0) {
			ok = get_long(p, k, v, 0, &l);
			d->limit = (int)l;
		} else if (strcmp(k, "refuse") == 0)
			ok = get_prob(p, k, v, &d->refuse_p);
		else if (strcmp(k, "timeout") == 0)
			ok = get_prob(p, k, v, &d->timeout_p);
		else if (strcmp(k, "tempfail") == 0)
			ok = get_prob(p, k, v, &d->tempfail_p);
		else if (strcmp(k, "permfail") == 0)
			ok = get_prob(p, k, v, &d->permfail_p);
		else if (strcmp(k, "dead") == 0)
			ok = parse_periods(p, d, v);
		else if (strcmp(k, "limit_at") == 0)
			ok = parse_limit_changes(p, d, v);
		else if (strcmp(k, "dead_mode") == 0) {
			if (strcmp(v, "refuse") == 0)
				d->dead_mode = SIM_FAIL_REFUSE;
			else if (strcmp(v, "timeout") == 0)
				d->dead_mode = SIM_FAIL_TIMEOUT;
			else
				return perr(p, "dead_mode must be refuse or timeout");
			ok = true;
		} else if (strcmp(k, "messages") == 0 || strcmp(k, "burst") == 0
		    || strcmp(k, "connections") == 0
		    || strcmp(k, "connection_burst") == 0
		    || strcmp(k, "messages_per_connection") == 0) {
			/* Rate limits, as in a rate table's value. */
			str_t l = STR_INIT;
			str_setf(&l, "%s%s%s=%s", d->limits ? d->limits : "",
			    d->limits ? " " : "", k, v);
			free(d->limits);
			d->limits = str_steal(&l);
			ok = true;
		} else
			return perr(p, "unknown destination key \"%s\"", k);
		if (!ok)
			return false;
	}
	if (d->limits) {
		sched_limits_t base, l;
		str_t e = STR_INIT;
		bool ok;
		sched_limits_init(&base);
		if (!(ok = sched_limits_parse(d->limits, &base, &l, &e)))
			perr(p, "destination %s: %s", d->name, str_cstr(&e));
		str_release(&e);
		return ok;
	}
	return true;
}

static bool do_at(parse_t *p, char **tok, int ntok)
{
	sim_t *s = p->sim;
	sim_arrival_t a;
	double dur = -1, until = -1;
	bool have_rcpts = false;

	memset(&a, 0, sizeof(a));
	a.count = 1;
	if (ntok < 2)
		return perr(p, "usage: at TIME [count=N] [every=T for=T|until=T] "
		    "rcpts=N to=DEST[,DEST...] [label=L] [null_sender]");
	if (!get_time(p, "at", tok[1], &a.at))
		return false;
	for (int i = 2; i < ntok; i++) {
		char *v, *k = split_kv(tok[i], &v);
		if (v == NULL) {
			if (strcmp(k, "null_sender") == 0) {
				a.null_sender = true;
				continue;
			}
			free(a.dests);
			free(a.label);
			return perr(p, "expected key=value, got \"%s\"", k);
		}
		bool ok = true;
		if (strcmp(k, "count") == 0)
			ok = get_long(p, k, v, 1, &a.count);
		else if (strcmp(k, "rcpts") == 0) {
			ok = get_long(p, k, v, 1, &a.rcpts);
			have_rcpts = true;
		} else if (strcmp(k, "every") == 0)
			ok = get_time(p, k, v, &a.every);
		else if (strcmp(k, "for") == 0)
			ok = get_time(p, k, v, &dur);
		else if (strcmp(k, "until") == 0)
			ok = get_time(p, k, v, &until);
		else if (strcmp(k, "label") == 0) {
			free(a.label);
			a.label = xstrdup(v);
		} else if (strcmp(k, "to") == 0) {
			char *d;
			while ((d = str_token(&v, ",")) != NULL) {
				int di = find_dest(s, d);
				if (di < 0) {
					perr(p, "unknown destination \"%s\" (declare it "
					    "with a dest line first)", d);
					ok = false;
					break;
				}
				a.dests = xreallocarray(a.dests, (size_t)a.ndests + 1,
				    sizeof(*a.dests));
				a.dests[a.ndests++] = di;
			}
		} else {
			perr(p, "unknown arrival key \"%s\"", k);
			ok = false;
		}
		if (!ok) {
			free(a.dests);
			free(a.label);
			return false;
		}
	}
	if (!have_rcpts || a.ndests == 0) {
		free(a.dests);
		free(a.label);
		return perr(p, "an arrival needs rcpts=N and to=DEST");
	}
	/* Arrivals at at + k * every: for=D gives those before at + D,
	 * until=U those up to U (computed once: no accumulated rounding). */
	a.repeat = 1;
	if (a.every > 0) {
		double n;
		if (dur >= 0)
			n = ceil(dur / a.every - 1e-9);
		else if (until >= 0)
			n = until < a.at ? 0 : floor((until - a.at) / a.every + 1e-9) + 1;
		else {
			free(a.dests);
			free(a.label);
			return perr(p, "every= needs for= or until=");
		}
		if (n > 1e9) {
			free(a.dests);
			free(a.label);
			return perr(p, "too many arrivals (more than 10^9)");
		}
		a.repeat = (long)n;
	}
	if (a.label == NULL)
		a.label = xstrdup(".");
	s->arrivals = xreallocarray(s->arrivals, (size_t)s->narrivals + 1,
	    sizeof(*s->arrivals));
	s->arrivals[s->narrivals++] = a;
	return true;
}

static bool parse_line(parse_t *p, char *line)
{
	char *tok[64], *cp = line, *hash;
	int ntok = 0;
	sim_t *s = p->sim;

	if ((hash = strchr(line, '#')) != NULL)
		*hash = 0;
	while (ntok < 64 && (tok[ntok] = str_token(&cp, " \t\r\n")) != NULL)
		ntok++;
	if (ntok == 0)
		return true;
	if (ntok == 64)
		return perr(p, "too many words on one line");
	if (strcmp(tok[0], "set") == 0) {
		if (ntok != 3)
			return perr(p, "usage: set NAME VALUE");
		return do_set(p, tok[1], tok[2]);
	}
	if (strcmp(tok[0], "seed") == 0) {
		long l;
		if (ntok != 2 || !get_long(p, "seed", tok[1], 0, &l))
			return ntok != 2 ? perr(p, "usage: seed N") : false;
		s->seed = (uint64_t)l;
		return true;
	}
	if (strcmp(tok[0], "run") == 0) {
		if (ntok != 2)
			return perr(p, "usage: run TIME");
		return get_time(p, "run", tok[1], &s->run_end);
	}
	if (strcmp(tok[0], "sample") == 0) {
		if (ntok != 2)
			return perr(p, "usage: sample TIME");
		if (!get_time(p, "sample", tok[1], &s->sample))
			return false;
		if (s->sample <= 0)
			return perr(p, "sample must be positive");
		return true;
	}
	if (strcmp(tok[0], "transport") == 0)
		return do_transport(p, tok, ntok);
	if (strcmp(tok[0], "dest") == 0)
		return do_dest(p, tok, ntok);
	if (strcmp(tok[0], "at") == 0)
		return do_at(p, tok, ntok);
	return perr(p, "unknown command \"%s\" (set, seed, run, sample, "
	    "transport, dest, at)", tok[0]);
}

sim_t *sim_parse(const char *name, const char *text, str_t *err)
{
	parse_t p;
	sim_t *s = xcalloc(1, sizeof(*s));
	const char *cp = text;
	bool ok = true;
	str_t e = STR_INIT;

	s->name = xstrdup(name);
	sched_params_init(&s->sp);
	sched_tparams_init(&s->tdefaults, NULL);
	s->active_limit = 20000;
	s->queue_run_delay = 300;
	s->seed = 1;
	s->run_end = INFINITY;
	s->sample = 1;
	memset(&p, 0, sizeof(p));
	p.sim = s;
	p.name = name;
	p.err = err;

	while (ok && *cp) {
		const char *nl = strchr(cp, '\n');
		size_t len = nl ? (size_t)(nl - cp) : strlen(cp);
		char *line = xstrndup(cp, len);
		p.line++;
		ok = parse_line(&p, line);
		free(line);
		cp += len + (nl ? 1 : 0);
	}
	if (ok && s->ntransports == 0) {
		char *tok[2] = { "transport", "smtp" };
		ok = do_transport(&p, tok, 2);
	}
	for (int i = 0; ok && i < s->ndests; i++) {
		sim_dest_t *d = &s->dests[i];
		int ti = find_transport(s, d->transport);
		if (ti < 0) {
			str_setf(err, "%s: destination %s: unknown transport \"%s\"",
			    name, d->name, d->transport);
			ok = false;
		} else if (d->mx && s->transports[ti].p.destination_grouping
		    == SCHED_GROUP_MX) {
			str_t k = STR_INIT;
			str_setf(&k, "{%s}", d->mx);
			d->key = str_steal(&k);
		}
	}
	if (ok && !sched_params_check(&s->sp, &e)) {
		str_setf(err, "%s: %s", name, str_cstr(&e));
		ok = false;
	}
	str_release(&e);
	for (int i = 0; i < p.ntdefs; i++)
		free(p.tdefs[i]);
	free(p.tdefs);
	if (!ok) {
		sim_free(s);
		return NULL;
	}
	return s;
}

sim_t *sim_load(const char *path, str_t *err)
{
	FILE *fp = fopen(path, "r");
	str_t text = STR_INIT;
	char buf[4096];
	size_t n;
	sim_t *s;

	if (fp == NULL) {
		str_setf(err, "%s: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0) {
		str_append(&text, buf, n);
		if (str_len(&text) > 16 * 1024 * 1024) {
			fclose(fp);
			str_release(&text);
			str_setf(err, "%s: scenario file too large", path);
			return NULL;
		}
	}
	if (ferror(fp)) {
		str_setf(err, "%s: read error", path);
		fclose(fp);
		str_release(&text);
		return NULL;
	}
	fclose(fp);
	if (memchr(str_cstr(&text), 0, str_len(&text)) != NULL) {
		str_setf(err, "%s: NUL byte in scenario file", path);
		str_release(&text);
		return NULL;
	}
	s = sim_parse(path, str_cstr(&text), err);
	str_release(&text);
	return s;
}
