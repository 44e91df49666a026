/* cleanup: header field classification and the text of the headers
 * cleanup adds (dates, Message-ID, display names). */
#include <string.h>
#include <strings.h>
#include <time.h>
#include "base64.h"
#include "cleanup.h"
#include "mail_date.h"

long cleanup_hdr_name_len(const char *line, size_t len, bool complete)
{
	size_t i = 0, n;

	/* field-name = 1*(%d33-57 / %d59-126); obsolete syntax allows white
	 * space before the colon (RFC 5322 section 4.5.8). */
	while (i < len && (unsigned char)line[i] >= 33 &&
	    (unsigned char)line[i] <= 126 && line[i] != ':')
		i++;
	n = i;
	if (n == 0)
		return i < len || complete ? 0 : -1;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len)
		return complete ? 0 : -1;
	return line[i] == ':' ? (long)n : 0;
}

static const struct {
	const char *name;
	enum cleanup_hdr_kind kind;
} kinds[] = {
	{ "return-path", HK_RETURN_PATH },
	{ "received", HK_RECEIVED },
	{ "message-id", HK_MESSAGE_ID },
	{ "date", HK_DATE },
	{ "from", HK_FROM },
	{ "sender", HK_SENDER_ADDR },
	{ "reply-to", HK_SENDER_ADDR },
	{ "errors-to", HK_SENDER_ADDR },
	{ "return-receipt-to", HK_SENDER_ADDR },
	{ "disposition-notification-to", HK_SENDER_ADDR },
	{ "to", HK_TO },
	{ "cc", HK_CC },
	{ "bcc", HK_BCC },
	{ "apparently-to", HK_RCPT_ADDR },
	{ "resent-from", HK_RESENT_FROM },
	{ "resent-sender", HK_RESENT_FROM },
	{ "resent-reply-to", HK_RESENT_FROM },
	{ "resent-to", HK_RESENT_TO },
	{ "resent-cc", HK_RESENT_CC },
	{ "resent-bcc", HK_RESENT_BCC },
};

enum cleanup_hdr_kind cleanup_hdr_kind(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strlen(kinds[i].name) == len &&
		    strncasecmp(kinds[i].name, name, len) == 0)
			return kinds[i].kind;
	return HK_OTHER;
}

bool cleanup_hdr_is_sender(enum cleanup_hdr_kind k)
{
	return k == HK_FROM || k == HK_SENDER_ADDR || k == HK_RESENT_FROM;
}

bool cleanup_hdr_is_address(enum cleanup_hdr_kind k)
{
	switch (k) {
	case HK_FROM: case HK_SENDER_ADDR: case HK_TO: case HK_CC:
	case HK_BCC: case HK_RESENT_FROM: case HK_RESENT_TO:
	case HK_RESENT_CC: case HK_RESENT_BCC: case HK_RCPT_ADDR:
		return true;
	default:
		return false;
	}
}

void cleanup_hdr_date(time_t t, str_t *out)
{
	mail_date_format(t, MAIL_DATE_ZONE_NAME, out);
}

void cleanup_hdr_message_id(time_t t, const char *queue_id, const char *host,
    str_t *out)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	str_catf(out, "<%04d%02d%02d%02d%02d%02d.%s@%s>", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    queue_id, host);
}

static bool is_atext_or_space(unsigned char c)
{
	return c == ' ' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || strchr("!#$%&'*+-/=?^_`{|}~", c) != NULL;
}

/* Length of the UTF-8 sequence starting at p (1 for anything else, so
 * bad input still advances). */
static size_t u8len(const unsigned char *p, size_t left)
{
	size_t n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : *p >= 0xc0 ? 2 : 1;

	if (n > left)
		return 1;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 1;
	return n;
}

void cleanup_hdr_phrase(const char *name, str_t *out)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t len = strlen(name);
	bool eight = false, special = false;

	for (size_t i = 0; i < len; i++) {
		if (p[i] >= 0x80)
			eight = true;
		else if (!is_atext_or_space(p[i]))
			special = true;
	}
	if (eight) {
		/* RFC 2047 encoded words of at most 45 bytes each (60 base64
		 * characters, 72 with the wrapper: under the 75 allowed),
		 * never splitting a UTF-8 character. */
		size_t i = 0;
		while (i < len) {
			size_t j = i;
			while (j < len) {
				size_t k = u8len(p + j, len - j);
				if (j + k - i > 45)
					break;
				j += k;
			}
			if (i > 0)
				str_putc(out, ' ');
			str_cat(out, "=?UTF-8?B?");
			base64_encode(out, p + i, j - i);
			str_cat(out, "?=");
			i = j;
		}
	} else if (special || len == 0 || p[0] == ' ' ||
	    p[len - 1] == ' ' || strstr(name, "  ") != NULL) {
		str_putc(out, '"');
		for (size_t i = 0; i < len; i++) {
			if (p[i] == '"' || p[i] == '\\')
				str_putc(out, '\\');
			str_putc(out, p[i]);
		}
		str_putc(out, '"');
	} else {
		str_cat(out, name);
	}
}
