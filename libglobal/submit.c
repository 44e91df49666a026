/* Local submission: the stream between sendmail and postdrop, checks of
 * its values, and the header scan.  See submit.h and doc/submission.md. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "addr.h"
#include "dict.h"
#include "mem.h"
#include "pconfig.h"
#include "qfile.h"
#include "submit.h"
#include "user_list.h"

/* ---- The stream ------------------------------------------------------ */

static const attr_spec_t rcpt_spec[] = {
	{ SUBMIT_A_ADDRESS, ATTR_TYPE_STR, ATTR_REQUIRED, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

/* One schema for the whole stream (a reader keeps the bytes it read
 * past a message, so the stream needs one reader); postdrop checks which
 * attributes each message may have. */
static const attr_spec_t stream_spec[] = {
	{ SUBMIT_A_VERSION, ATTR_TYPE_INT, 0, NULL },
	{ SUBMIT_A_SENDER, ATTR_TYPE_STR, 0, NULL },
	{ SUBMIT_A_FULL_NAME, ATTR_TYPE_STR, 0, NULL },
	{ SUBMIT_A_FLAGS, ATTR_TYPE_INT, 0, NULL },
	{ SUBMIT_A_ENVID, ATTR_TYPE_STR, 0, NULL },
	{ SUBMIT_A_RET, ATTR_TYPE_STR, 0, NULL },
	{ SUBMIT_A_NOTIFY, ATTR_TYPE_INT, 0, NULL },
	{ SUBMIT_A_RCPT, ATTR_TYPE_LIST, 0, rcpt_spec },
	{ SUBMIT_A_DATA, ATTR_TYPE_DATA, 0, NULL },
	{ SUBMIT_A_END, ATTR_TYPE_LONG, 0, NULL },
	{ SUBMIT_A_ABORT, ATTR_TYPE_STR, 0, NULL },
	{ NULL, ATTR_TYPE_END, 0, NULL },
};

/* An envelope of SUBMIT_RCPT_MAX recipients of SUBMIT_ADDR_MAX bytes
 * stays below max_total; content comes in SUBMIT_CHUNK pieces. */
static const attr_limits_t stream_limits = {
	.max_value = SUBMIT_CHUNK,
	.max_attrs = 2 * SUBMIT_RCPT_MAX + 16,
	.max_group_attrs = 16,
	.max_total = 4 * 1024 * 1024,
	.max_depth = 1,
};

attr_reader_t *submit_reader(void)
{
	return attr_reader_new(stream_spec, ATTR_READ_STRICT, &stream_limits);
}

bool submit_fail(submit_err_t *err, int status, const char *fmt, ...)
{
	va_list ap;

	err->status = status;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	/* The text may quote input: keep it on one printable line. */
	for (char *p = err->text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return false;
}

/* ---- Values ---------------------------------------------------------- */

bool submit_addr(const char *ext, size_t len, bool is_sender, str_t *out,
    submit_err_t *err)
{
	addr_err_t aerr;
	str_t shown = STR_INIT;
	bool ok;

	str_reset(out);
	if (len == 0 && !is_sender)
		return submit_fail(err, EX_NOUSER, "empty recipient address");
	if (len > SUBMIT_ADDR_MAX)
		return submit_fail(err, EX_NOUSER, "%s address is too long "
		    "(%zu bytes)", is_sender ? "sender" : "recipient", len);
	ok = addr_internalize(ext, len, ADDR_F_NO_DOMAIN | ADDR_F_LAX_DOTS |
	    ADDR_F_LONG_LOCAL | ADDR_F_SMTPUTF8, out, &aerr) == ADDR_OK;
	if (!ok) {
		str_quote_printable(&shown, ext, len > 200 ? 200 : len);
		submit_fail(err, EX_NOUSER, "bad %s address syntax: <%s>: %s",
		    is_sender ? "sender" : "recipient", str_cstr(&shown),
		    aerr.text);
		str_release(&shown);
		return false;
	}
	if (!is_sender && str_len(out) == 0)
		return submit_fail(err, EX_NOUSER, "empty recipient address");
	return true;
}

int submit_parse_ret(const char *s)
{
	if (strcasecmp(s, "full") == 0)
		return QF_RET_FULL;
	if (strcasecmp(s, "hdrs") == 0)
		return QF_RET_HDRS;
	return -1;
}

bool submit_envid_ok(const char *s, str_t *xtext)
{
	str_t enc = STR_INIT;
	bool ok = *s != 0;

	for (const char *p = s; *p && ok; p++)
		if (*p < 0x21 || *p > 0x7e)
			ok = false;
	if (ok) {
		addr_xtext_encode(s, strlen(s), &enc);
		ok = str_len(&enc) <= ADDR_ENVID_MAX;
		if (ok && xtext)
			str_append(xtext, str_cstr(&enc), str_len(&enc));
	}
	str_release(&enc);
	return ok;
}

bool submit_full_name_ok(const char *s, size_t len)
{
	if (len > SUBMIT_FULL_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int submit_user_allowed(uid_t uid, str_t *why)
{
	const char *user;
	int result = user_list_uid_match("authorized_submit_users", uid,
	    "unknown", &user, why);

	if (result == 0)
		str_setf(why, "user %s (uid %ld) is not allowed to submit mail "
		    "(authorized_submit_users)", user, (long)uid);
	return result;
}
