/* Mail addresses: parsing, forms and helpers (RFC 5321, RFC 5322).
 *
 * Everything here takes untrusted bytes with an explicit length (NUL and
 * control bytes are errors, not terminators), does work linear in the input
 * and never aborts on bad input: it answers with a status and a clear,
 * printable one-line reason.  doc/addresses.md describes the accepted
 * syntax, the limits and the strict/lenient choices.
 *
 * Internal form.  Petrel stores an address as the local part WITHOUT its
 * quoting, then "@" and the domain as written: <"john doe"@example.com> is
 * stored as `john doe@example.com`, the null sender <> as the empty string,
 * and an address without a domain (RCPT TO:<postmaster>, a bare `user` in
 * a header) as the local part alone.  The domain is the text after the
 * LAST "@" (domains never contain "@"; quoted local parts can).
 * addr_externalize() adds quoting back for the wire and headers.
 *
 * Parts:
 *   errors ..................... addr_err_t, addr_err_reply()
 *   SMTP MAIL/RCPT ............. addr_smtp_mail(), addr_smtp_rcpt()
 *   internal <-> external ...... addr_externalize(), addr_internalize()
 *   xtext (RFC 3461) ........... addr_xtext_decode(), addr_xtext_encode()
 *   RFC 5322 header lists ...... addr_hdr_parse(), addr_hdr_rewrite()
 *   helpers .................... addr_split(), addr_lower(),
 *                                addr_valid_domain(), addr_ip_literal()
 *   domain lists ............... addr_domlist_*() (mydestination, ...) */
#ifndef PETREL_ADDR_H
#define PETREL_ADDR_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dsn_notify.h"
#include "str.h"

/* RFC 5321 section 4.5.3.1 limits, in octets as sent. */
#define ADDR_LOCAL_MAX	64	/* local part (with quotes and escapes) */
#define ADDR_DOMAIN_MAX	255	/* domain or address literal */
#define ADDR_LABEL_MAX	63	/* one domain label */
#define ADDR_PATH_MAX	256	/* "<" [route ":"] mailbox ">" */
/* Parameters in one MAIL/RCPT command; more is an error. */
#define ADDR_SMTP_PARAMS_MAX	16
/* RFC 3461: longest ENVID and ORCPT values (encoded). */
#define ADDR_ENVID_MAX	100
#define ADDR_ORCPT_MAX	500
/* Header lists: addresses kept per parse (the rest is counted and
 * dropped) and the longest single address accepted (RFC 5322 line). */
#define ADDR_HDR_ADDRS_MAX	10000
#define ADDR_HDR_ADDR_MAX	998

/* ---- Errors ---------------------------------------------------------- */

/* What went wrong, so that smtpd can pick a reply without reading text. */
typedef enum addr_status {
	ADDR_OK = 0,
	ADDR_ERR_CMD,		/* command syntax: no "FROM:", missing path */
	ADDR_ERR_SYNTAX,	/* address syntax */
	ADDR_ERR_TOOLONG,	/* local part, domain or path too long */
	ADDR_ERR_8BIT,		/* non-ASCII address without SMTPUTF8 */
	ADDR_ERR_PARAM,		/* bad ESMTP parameter syntax or value */
	ADDR_ERR_PARAM_UNSUPP,	/* known parameter, wrong command */
} addr_status_t;

typedef struct addr_err {
	addr_status_t status;
	char text[160];		/* printable ASCII, no CR/LF */
} addr_err_t;

/* The SMTP reply for an error in a MAIL (is_rcpt false) or RCPT command:
 * code 501/553/555 and the enhanced status ("5.5.4", "5.1.7" for a bad
 * sender, "5.1.3" for a bad recipient, "5.6.7" for 8-bit). */
void addr_err_reply(const addr_err_t *e, bool is_rcpt, int *code,
    const char **dsn);

/* ---- SMTP MAIL FROM / RCPT TO (RFC 5321, 3461, 6152, 1870, 6531) ----- */

/* Parse flags; the default (0) is strict RFC 5321. */
enum {
	/* SMTPUTF8 is in effect: 8-bit UTF-8 allowed in the address.  For
	 * MAIL the SMTPUTF8 parameter of the same command also enables it;
	 * for RCPT pass this when the transaction's MAIL had it. */
	ADDR_F_SMTPUTF8 = 1 << 0,
	/* Accept MAIL FROM:user@example.com without angle brackets (the
	 * address then ends at the first space). */
	ADDR_F_NO_BRACKETS = 1 << 1,
	/* Accept an address without "@domain" (always accepted for
	 * RCPT TO:<postmaster>). */
	ADDR_F_NO_DOMAIN = 1 << 2,
	/* Accept an unquoted local part with leading, trailing or double
	 * dots (user.@example.com), as some phone mailers send. */
	ADDR_F_LAX_DOTS = 1 << 3,
	/* Do not enforce the 64-octet local part limit (long SRS/VERP
	 * addresses); the 256-octet path limit still holds. */
	ADDR_F_LONG_LOCAL = 1 << 4,
	ADDR_F_LENIENT = ADDR_F_NO_BRACKETS | ADDR_F_NO_DOMAIN |
	    ADDR_F_LAX_DOTS | ADDR_F_LONG_LOCAL,
};

enum addr_param_kind {
	ADDR_P_UNKNOWN = 0,	/* any other well-formed keyword */
	ADDR_P_SIZE, ADDR_P_BODY, ADDR_P_RET, ADDR_P_ENVID, ADDR_P_SMTPUTF8,
	ADDR_P_AUTH,		/* MAIL parameters */
	ADDR_P_NOTIFY, ADDR_P_ORCPT,	/* RCPT parameters */
};

typedef struct addr_param {
	enum addr_param_kind kind;
	char *keyword;		/* as sent */
	char *value;		/* as sent; NULL when there was no "=" */
} addr_param_t;

enum addr_body { ADDR_BODY_NONE, ADDR_BODY_7BIT, ADDR_BODY_8BITMIME,
	ADDR_BODY_BINARYMIME };
enum addr_ret { ADDR_RET_NONE, ADDR_RET_FULL, ADDR_RET_HDRS };

typedef struct addr_smtp {
	char *addr;		/* internal form; "" for <> */
	char *local;		/* unquoted local part ("" for <>) */
	char *domain;		/* NULL for <> and domain-less addresses */
	bool null_path;		/* MAIL FROM:<> */
	bool postmaster;	/* RCPT TO:<postmaster> (any case) */
	bool had_route;		/* a source route was given and dropped */
	bool bracketed;		/* false: lenient form without <> */
	bool eightbit;		/* the address has non-ASCII octets */
	/* All parameters in order, known or not. */
	addr_param_t params[ADDR_SMTP_PARAMS_MAX];
	size_t nparams;
	size_t nunknown;	/* how many are ADDR_P_UNKNOWN */
	/* Decoded values of the known ones. */
	bool has_size;
	uintmax_t size;
	enum addr_body body;
	enum addr_ret ret;
	char *envid;		/* xtext-decoded, or NULL */
	char *auth;		/* xtext-decoded AUTH=, or NULL */
	bool smtputf8;		/* SMTPUTF8 parameter given */
	int notify;		/* DSN_NOTIFY_* bits (dsn_notify.h), 0 if
				 * not given */
	char *orcpt_type;	/* ORCPT address type as sent ("rfc822") */
	char *orcpt;		/* ORCPT address, xtext-decoded */
} addr_smtp_t;

/* Parse the argument of a MAIL or RCPT command, that is, the text after
 * "MAIL " or "RCPT " without CRLF ("FROM:<a@b> SIZE=10").  The keyword
 * is case-insensitive; spaces after the colon are tolerated in every
 * mode.  On success fills *out (free with addr_smtp_free) and returns
 * ADDR_OK; otherwise *out is empty and err says why.  Unknown parameter
 * keywords are not errors: they come back as ADDR_P_UNKNOWN (nunknown
 * counts them) for the caller to refuse with 555. */
addr_status_t addr_smtp_mail(const char *arg, size_t len, int flags,
    addr_smtp_t *out, addr_err_t *err);
addr_status_t addr_smtp_rcpt(const char *arg, size_t len, int flags,
    addr_smtp_t *out, addr_err_t *err);
void addr_smtp_free(addr_smtp_t *p);

/* ---- Internal and external forms --------------------------------------- */

/* True when the local part must be quoted on the wire: empty, a byte
 * outside atext (RFC 5322; non-ASCII counts as atext, RFC 6532), or a
 * leading, trailing or double dot. */
bool addr_local_needs_quote(const char *local, size_t len);
/* Appends the external form of an internal address: the local part
 * quoted when needed ('"' and '\' escaped), "@domain" unchanged.  The
 * empty (null) address gives the empty string. */
void addr_externalize(const char *internal, str_t *out);
/* Parses an external address (RFC 5321 mailbox, no brackets, the whole
 * text) into internal form, appended to out.  The empty text is the null
 * address.  flags: ADDR_F_SMTPUTF8, ADDR_F_NO_DOMAIN, ADDR_F_LAX_DOTS,
 * ADDR_F_LONG_LOCAL.  Round trip: for any address this module produces,
 * addr_internalize(addr_externalize(a)) == a. */
addr_status_t addr_internalize(const char *ext, size_t len, int flags,
    str_t *out, addr_err_t *err);

/* ---- xtext (RFC 3461) --------------------------------------------------- */

/* Decodes xtext ("+XX" hex escapes, upper or lower case hex) appending
 * to out.  False for malformed xtext or a decoded byte outside printable
 * ASCII (33..126 plus space). */
bool addr_xtext_decode(const char *in, size_t len, str_t *out);
/* Encodes bytes as xtext ('+', '=', controls, space and non-ASCII as
 * "+XX"), appending to out. */
void addr_xtext_encode(const char *in, size_t len, str_t *out);

/* ---- RFC 5322 header address lists ------------------------------------ */

enum {
	ADDR_H_DOMAIN = 1 << 0,	/* the address has "@domain" */
	ADDR_H_ANGLE = 1 << 1,	/* written as <addr-spec> */
	ADDR_H_GROUP = 1 << 2,	/* inside a group; group names it */
	ADDR_H_BAD = 1 << 3,	/* could not be parsed; error says why */
};

typedef struct addr_hdr_entry {
	int flags;
	char *addr;		/* internal form; NULL when ADDR_H_BAD */
	char *local;		/* unquoted local part; NULL when bad */
	char *domain;		/* NULL without ADDR_H_DOMAIN */
	char *display;		/* display name, unquoted, or NULL */
	char *group;		/* group display name, or NULL */
	const char *error;	/* static reason when ADDR_H_BAD */
	/* Byte span in the value: of the addr-spec for good entries (what
	 * addr_hdr_rewrite replaces), of the whole entry for bad ones. */
	size_t start, end;
} addr_hdr_entry_t;

typedef struct addr_hdr_list {
	addr_hdr_entry_t *v;
	size_t n, cap;
	size_t ngroups;		/* groups seen, empty ones included */
	size_t nbad;		/* entries with ADDR_H_BAD */
	size_t dropped;		/* entries beyond ADDR_HDR_ADDRS_MAX */
} addr_hdr_list_t;

#define ADDR_HDR_LIST_INIT { NULL, 0, 0, 0, 0, 0 }

/* Parses a To/Cc/Bcc/From/Sender/Reply-To value (after the colon; folded
 * lines allowed) into list (appending).  Never fails as a whole: an
 * entry that cannot be parsed is kept with ADDR_H_BAD and its reason,
 * and parsing goes on after the next comma.  Returns the number of good
 * addresses appended.  Lenient on purpose (doc/addresses.md): bare
 * `user`, obsolete routes and spacing, ";" outside a group as a comma. */
size_t addr_hdr_parse(const char *value, size_t len, addr_hdr_list_t *list);
void addr_hdr_list_free(addr_hdr_list_t *list);

/* Rewrite callback: for entry e (always a good one) store a new internal
 * address in newaddr (empty on entry) and return true, or return false
 * to keep the address as it is. */
typedef bool (*addr_hdr_map_fn)(const addr_hdr_entry_t *e, str_t *newaddr,
    void *ctx);
/* Appends to out the header value with every good address passed through
 * fn and written back in external form; display names, comments, groups,
 * folding and bad entries are copied byte for byte.  A null new address
 * is written as "<>".  Returns how many addresses were replaced. */
size_t addr_hdr_rewrite(const char *value, size_t len, addr_hdr_map_fn fn,
    void *ctx, str_t *out);

/* ---- Helpers ------------------------------------------------------------ */

/* user+ext@domain split by a recipient_delimiter set.  The local part is
 * split at its first byte found in delims (any of them).  Not split: an
 * empty delims, no delimiter, a delimiter as first byte (the user would
 * be empty), and when '-' is in the set and the local part is
 * "owner-..." or "...-request" (mailing list conventions, as Postfix). */
typedef struct addr_split {
	char *user;		/* local part before the delimiter */
	char *ext;		/* after it, or NULL when not split */
	char delim;		/* the delimiter found, or 0 */
	char *domain;		/* after the last "@", or NULL */
} addr_split_t;
void addr_split(const char *internal, const char *delims, addr_split_t *out);
void addr_split_free(addr_split_t *s);

enum { ADDR_LOWER_LOCAL = 1 << 0 };	/* addr_lower: also the local part */
/* ASCII-lower-cases the domain of an internal address in place (and the
 * local part with ADDR_LOWER_LOCAL; by default it is kept, local parts
 * are case-sensitive).  Returns s. */
char *addr_lower(char *s, int flags);

/* Domain / host name validation flags. */
enum {
	ADDR_DOM_TRAILING_DOT = 1 << 0,	/* accept one final dot */
	ADDR_DOM_UTF8 = 1 << 1,		/* accept UTF-8 labels (SMTPUTF8) */
	ADDR_DOM_LITERAL = 1 << 2,	/* accept [IPv4] / [IPv6:...] */
	ADDR_DOM_NUMERIC = 1 << 3,	/* accept all-numeric names (1.2.3.4) */
};
/* LDH labels of 1..63 octets not starting or ending with '-', no empty
 * label, at most 255 octets.  A name made only of digits and dots is
 * refused unless ADDR_DOM_NUMERIC (it is an IPv4 address in disguise;
 * the SMTP form is [192.0.2.1]).  False with *why (static) when bad. */
bool addr_valid_domain(const char *name, size_t len, int flags,
    const char **why);

/* For "[192.0.2.1]" or "[IPv6:2001:db8::1]" (tag case-insensitive):
 * returns AF_INET or AF_INET6 and, when bin is not NULL, the binary
 * address (4 or 16 bytes).  0 for anything else, including the
 * RFC 5321 general literal form "[tag:text]". */
int addr_ip_literal(const char *dom, size_t len, void *bin);
bool addr_is_ip_literal(const char *dom);

/* ---- Domain lists (mydestination, relay_domains, ...) ------------------ */

/* A list of patterns separated by spaces and/or commas, first match wins:
 *   example.com       the domain itself (and its subdomains with
 *                     ADDR_DOMLIST_PARENT)
 *   .example.com      any subdomain of example.com, not itself
 *   [192.0.2.1]       that address literal
 *   type:name         a lookup table (hash:, texthash:, inline:{...}),
 *                     opened by addr_domlist_new through the maps layer
 *                     (maps.h): the domain, then ".parent" for each
 *                     parent domain (and "parent" too with
 *                     ADDR_DOMLIST_PARENT)
 *   !pattern          a match of pattern means "no match", stop
 * Case-insensitive; one trailing dot is ignored. */
enum { ADDR_DOMLIST_PARENT = 1 << 0 };	/* parent_domain_matches_subdomains */
typedef struct addr_domlist addr_domlist_t;
/* NULL with err set for a bad pattern or a table that cannot be opened;
 * name is the parameter name for messages. */
addr_domlist_t *addr_domlist_new(const char *name, const char *spec,
    int flags, str_t *err);
/* 1 match, 0 no match, -1 a table could not be read (defer, never
 * bounce; err says why when not NULL). */
int addr_domlist_match(addr_domlist_t *l, const char *domain, str_t *err);
void addr_domlist_free(addr_domlist_t *l);

/* ---- For addr*.c only --------------------------------------------------- */

/* Sets *err (when not NULL) to status and a formatted reason. */
addr_status_t addr_seterr(addr_err_t *err, addr_status_t status,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* RFC 5322 atext, ASCII only. */
bool addr_is_atext(int c);
/* Appends a printable rendering of byte c ('x' or \xHH) to a message. */
const char *addr_byte_name(int c, char buf[8]);

/* One RFC 5321 Mailbox (or bare local part) starting at *pos and ending
 * at the end of s or at a byte in stop (which is not consumed). */
typedef struct addr_mbox {
	str_t local;		/* unquoted */
	str_t domain;		/* as written (literal tag normalised) */
	bool has_domain;
	bool eightbit;
	size_t local_raw;	/* octets of the local part as sent */
} addr_mbox_t;
addr_status_t addr_parse_mailbox(const char *s, size_t len, size_t *pos,
    const char *stop, int flags, addr_mbox_t *mb, addr_err_t *err);
void addr_mbox_free(addr_mbox_t *mb);

#endif
