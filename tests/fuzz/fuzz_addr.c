/* libFuzzer target for libglobal/addr: every parser on arbitrary bytes,
 * plus the invariants the rest of Petrel relies on (abort() when broken):
 *   - a parsed SMTP address survives addr_externalize + addr_internalize;
 *   - rewriting a header with the identity map gives a value that parses
 *     to the same addresses;
 *   - xtext encode + decode is the identity on printable text.
 * The first input byte picks the parse flags; the rest is the text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "addr.h"

static addr_domlist_t *domlist;

static void check(bool ok)
{
	if (!ok)
		abort();
}

static bool identity(const addr_hdr_entry_t *e, str_t *out, void *ctx)
{
	(void)ctx;
	str_cat(out, e->addr);
	return true;
}

static void roundtrip(const char *internal)
{
	str_t ext = STR_INIT, back = STR_INIT;
	addr_err_t err;

	addr_externalize(internal, &ext);
	check(addr_internalize(str_cstr(&ext), str_len(&ext),
	    ADDR_F_LENIENT | ADDR_F_SMTPUTF8, &back, &err) == ADDR_OK);
	check(strcmp(str_cstr(&back), internal) == 0);
	str_release(&ext);
	str_release(&back);
}

static void smtp(const char *s, size_t n, int flags, bool rcpt)
{
	addr_smtp_t p;
	addr_err_t err;
	addr_status_t st = rcpt ? addr_smtp_rcpt(s, n, flags, &p, &err) :
	    addr_smtp_mail(s, n, flags, &p, &err);

	if (st != ADDR_OK) {
		check(p.addr == NULL && err.status == st);
		for (const char *t = err.text; *t != '\0'; t++)
			check(*t >= 32 && *t < 127);
		return;
	}
	check(p.addr != NULL && p.nparams <= ADDR_SMTP_PARAMS_MAX);
	check(strlen(p.local) <= ADDR_PATH_MAX);
	check(p.domain == NULL || strlen(p.domain) <= ADDR_DOMAIN_MAX);
	roundtrip(p.addr);
	if (p.domain != NULL) {
		char *copy = strdup(p.addr);

		check(copy != NULL);
		addr_lower(copy, 0);
		check(addr_domlist_match(domlist, strrchr(copy, '@') + 1,
		    NULL) >= 0);
		free(copy);
	}
	addr_smtp_free(&p);
}

static void header(const char *s, size_t n)
{
	addr_hdr_list_t a = ADDR_HDR_LIST_INIT, b = ADDR_HDR_LIST_INIT;
	str_t out = STR_INIT;
	size_t ga, gb, i, j;

	ga = addr_hdr_parse(s, n, &a);
	addr_hdr_rewrite(s, n, identity, NULL, &out);
	gb = addr_hdr_parse(str_cstr(&out), str_len(&out), &b);
	check(ga == gb);
	for (i = j = 0; i < a.n; i++) {
		if (a.v[i].flags & ADDR_H_BAD)
			continue;
		while (j < b.n && (b.v[j].flags & ADDR_H_BAD))
			j++;
		check(j < b.n && strcmp(a.v[i].addr, b.v[j].addr) == 0);
		check(a.v[i].end <= n && a.v[i].start <= a.v[i].end);
		roundtrip(a.v[i].addr);
		j++;
	}
	addr_hdr_list_free(&a);
	addr_hdr_list_free(&b);
	str_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int flagsets[] = {
		0, ADDR_F_LENIENT, ADDR_F_SMTPUTF8,
		ADDR_F_LENIENT | ADDR_F_SMTPUTF8, ADDR_F_NO_BRACKETS,
		ADDR_F_NO_DOMAIN, ADDR_F_LAX_DOTS, ADDR_F_LONG_LOCAL,
	};
	const char *s;
	size_t n;
	int flags;

	if (domlist == NULL) {
		str_t err = STR_INIT;

		domlist = addr_domlist_new("fuzz", "example.com .example.net "
		    "!bad.example.org inline:{ t.example=1, .u.example=1 } "
		    "[192.0.2.1]", ADDR_DOMLIST_PARENT, &err);
		check(domlist != NULL);
		str_release(&err);
	}
	if (size == 0)
		return 0;
	flags = flagsets[data[0] & 7];
	s = (const char *)data + 1;
	n = size - 1;

	smtp(s, n, flags, false);
	smtp(s, n, flags, true);
	header(s, n);

	/* Internal form from arbitrary text, then back. */
	{
		str_t in = STR_INIT;
		addr_err_t err;

		if (addr_internalize(s, n, flags | ADDR_F_SMTPUTF8, &in,
		    &err) == ADDR_OK)
			roundtrip(str_cstr(&in));
		str_release(&in);
	}
	/* Helpers on a NUL-terminated copy. */
	{
		char *z = malloc(n + 1);
		addr_split_t sp;
		const char *why;

		check(z != NULL);
		memcpy(z, s, n);
		z[n] = '\0';
		addr_split(z, "+-=", &sp);
		check(sp.user != NULL);
		addr_split_free(&sp);
		addr_lower(z, data[0] & 8 ? ADDR_LOWER_LOCAL : 0);
		if (addr_valid_domain(s, n, data[0] >> 4, &why))
			check(n > 0 && n <= ADDR_DOMAIN_MAX);
		(void)addr_ip_literal(s, n, NULL);
		(void)addr_is_ip_literal(z);
		check(addr_domlist_match(domlist, z, NULL) >= 0);
		free(z);
	}
	/* xtext both ways. */
	{
		str_t dec = STR_INIT, enc = STR_INIT, back = STR_INIT;

		if (addr_xtext_decode(s, n, &dec)) {
			addr_xtext_encode(str_cstr(&dec), str_len(&dec), &enc);
			check(addr_xtext_decode(str_cstr(&enc), str_len(&enc),
			    &back));
			check(str_len(&back) == str_len(&dec) &&
			    memcmp(str_cstr(&back), str_cstr(&dec),
			    str_len(&dec)) == 0);
		}
		str_release(&dec);
		str_release(&enc);
		str_release(&back);
	}
	return 0;
}
