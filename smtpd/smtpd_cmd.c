/* SMTP command lines: verb and argument.  Pure functions on untrusted
 * bytes with explicit lengths (tests/fuzz/fuzz_smtpd.c runs them on
 * anything). */
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include "smtpd.h"

static const struct {
	const char *name;
	enum smtpd_verb verb;
} verbs[] = {
	{ "HELO", SMTPD_V_HELO }, { "EHLO", SMTPD_V_EHLO },
	{ "MAIL", SMTPD_V_MAIL }, { "RCPT", SMTPD_V_RCPT },
	{ "DATA", SMTPD_V_DATA }, { "BDAT", SMTPD_V_BDAT },
	{ "RSET", SMTPD_V_RSET }, { "NOOP", SMTPD_V_NOOP },
	{ "QUIT", SMTPD_V_QUIT }, { "VRFY", SMTPD_V_VRFY },
	{ "HELP", SMTPD_V_HELP }, { "STARTTLS", SMTPD_V_STARTTLS },
	{ "EXPN", SMTPD_V_EXPN }, { "ETRN", SMTPD_V_ETRN },
	{ "AUTH", SMTPD_V_AUTH },
};

const char *smtpd_verb_name(enum smtpd_verb v)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (verbs[i].verb == v)
			return verbs[i].name;
	return v == SMTPD_V_UNKNOWN ? "UNKNOWN" : "";
}

static bool blank(int c)
{
	return c == ' ' || c == '\t';
}

enum smtpd_cmd_status smtpd_cmd_parse(const char *line, size_t len,
    smtpd_cmd_t *cmd)
{
	size_t i = 0, end = len;

	memset(cmd, 0, sizeof(*cmd));
	cmd->arg = "";
	cmd->word = line;
	/* NUL first: it is the more specific complaint.  A bare CR inside
	 * a line is refused with the other controls (it has no business
	 * in a command and some software treats it as a line end). */
	if (memchr(line, '\0', len) != NULL)
		return SMTPD_CMD_NUL;
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)line[k];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return SMTPD_CMD_CONTROL;
	}
	/* Leading blanks are tolerated (some clients indent). */
	while (i < end && blank(line[i]))
		i++;
	while (end > i && blank(line[end - 1]))
		end--;
	if (i == end) {
		cmd->verb = SMTPD_V_NONE;
		return SMTPD_CMD_OK;
	}
	cmd->word = line + i;
	while (i < end && !blank(line[i]))
		i++;
	cmd->wordlen = (size_t)(line + i - cmd->word);
	while (i < end && blank(line[i]))
		i++;
	cmd->arg = line + i;
	cmd->arglen = end - i;
	cmd->verb = SMTPD_V_UNKNOWN;
	for (size_t k = 0; k < sizeof(verbs) / sizeof(verbs[0]); k++) {
		size_t n = strlen(verbs[k].name);
		if (n == cmd->wordlen && strncasecmp(cmd->word, verbs[k].name, n) == 0) {
			cmd->verb = verbs[k].verb;
			break;
		}
	}
	return SMTPD_CMD_OK;
}

bool smtpd_bdat_parse(const char *arg, size_t len, uint64_t *size, bool *last)
{
	size_t i = 0, nd;
	uint64_t v = 0;

	*size = 0;
	*last = false;
	while (i < len && isdigit((unsigned char)arg[i])) {
		v = v * 10 + (uint64_t)(arg[i] - '0');
		i++;
		if (i > 19)	/* 10^19 - 1 fits; more digits is nonsense */
			return false;
	}
	nd = i;
	if (nd == 0)
		return false;
	if (i < len) {
		if (!blank(arg[i]))
			return false;
		while (i < len && blank(arg[i]))
			i++;
		if (len - i != 4 || strncasecmp(arg + i, "LAST", 4) != 0)
			return false;
		*last = true;
	}
	*size = v;
	return true;
}

bool smtpd_helo_ok(const char *arg, size_t len, const char **why)
{
	if (len == 0) {
		*why = "missing host name";
		return false;
	}
	if (len > 255) {
		*why = "host name longer than 255 bytes";
		return false;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)arg[i];
		if (c <= 0x20 || c == 0x7f) {
			*why = "blank or control character in host name";
			return false;
		}
	}
	return true;
}
