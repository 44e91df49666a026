/* RFC 5322 date-time of a moment (mail_date.h). */
#include <string.h>
#include <time.h>
#include "mail_date.h"

static const char *const wday[] = {
	"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char *const month[] = {
	"Jan", "Feb", "Mar", "Apr", "May", "Jun",
	"Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

void mail_date_format(time_t t, int flags, str_t *out)
{
	struct tm tm;
	long off;
	char sign = '+';

	if (localtime_r(&t, &tm) == NULL)
		gmtime_r(&t, &tm);
	off = tm.tm_gmtoff / 60;
	if (off < 0) {
		sign = '-';
		off = -off;
	}
	str_catf(out, "%s, %d %s %d %02d:%02d:%02d %c%02ld%02ld",
	    wday[tm.tm_wday % 7], tm.tm_mday, month[tm.tm_mon % 12],
	    tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec, sign,
	    off / 60, off % 60);
	if ((flags & MAIL_DATE_ZONE_NAME) && tm.tm_zone != NULL &&
	    tm.tm_zone[0] != '\0' &&
	    strspn(tm.tm_zone, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+-") == strlen(tm.tm_zone))
		str_catf(out, " (%s)", tm.tm_zone);
}
