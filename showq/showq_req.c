/* The showq request line. */
#include <string.h>
#include "queue_list.h"
#include "showq.h"

int showq_parse_request(const char *line, int *flags, str_t *err)
{
	if (strcmp(line, "text") == 0) {
		*flags = 0;
		return 0;
	}
	if (strcmp(line, "json") == 0) {
		*flags = QUEUE_LIST_JSON;
		return 0;
	}
	str_set(err, "expected \"text\" or \"json\", got \"");
	str_quote_printable(err, line, strlen(line));
	str_cat(err, "\"");
	return -1;
}
