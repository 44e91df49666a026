/* The client side of the milter protocol (Sendmail's libmilter, protocol
 * version 6 with option negotiation; doc/milter.md).
 *
 *	milters_t *ms = milters_new(pconfig_get_str("smtpd_milters"),
 *	    &params, &err);			// NULL: bad list (err)
 *	milters_set_macros(ms, my_macro_fn, ctx);
 *	milters_connect(ms, "host", "192.0.2.1", 4711, AF_INET, &r);
 *	milters_helo(ms, "client.example", &r);
 *	milters_mail(ms, argv, &r); milters_rcpt(ms, argv, &r); ...
 *	milters_data(ms, &r);
 *	milters_content(ms, buf, len, &r);	// raw message bytes, any split
 *	milters_eom(ms, &edits, &r);		// verdict + modifications
 *	milters_abort(ms);			// after a transaction ends early
 *	milters_free(ms);			// quit, close
 *
 * Every call returns the combined verdict of the milters of the list,
 * asked in order: the first that does not say "continue" decides (its
 * reply is in r), later ones are not asked for this command.  A milter
 * that cannot be reached, times out, closes or sends something that is
 * not the protocol is closed, logged with its name, and from then on
 * stands for its default action (milter_default_action).
 *
 * With two or more milters for a message, the content goes to the first
 * only as it comes; milters_eom then shows each later one the message
 * with the earlier ones' header and body modifications applied (the
 * header kept in memory, the body in an unlinked spool file in saved/
 * of the working directory, else in it), as Postfix does. */
#ifndef PETREL_MILTER_H
#define PETREL_MILTER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "str.h"

/* Commands (MTA to milter). */
#define SMFIC_ABORT	'A'
#define SMFIC_BODY	'B'
#define SMFIC_CONNECT	'C'
#define SMFIC_MACRO	'D'
#define SMFIC_BODYEOB	'E'
#define SMFIC_HELO	'H'
#define SMFIC_QUIT_NC	'K'
#define SMFIC_HEADER	'L'
#define SMFIC_MAIL	'M'
#define SMFIC_EOH	'N'
#define SMFIC_OPTNEG	'O'
#define SMFIC_QUIT	'Q'
#define SMFIC_RCPT	'R'
#define SMFIC_DATA	'T'
#define SMFIC_UNKNOWN	'U'

/* Replies and modification requests (milter to MTA). */
#define SMFIR_ADDRCPT	'+'
#define SMFIR_DELRCPT	'-'
#define SMFIR_ADDRCPT_PAR '2'
#define SMFIR_SHUTDOWN	'4'
#define SMFIR_ACCEPT	'a'
#define SMFIR_REPLBODY	'b'
#define SMFIR_CONTINUE	'c'
#define SMFIR_DISCARD	'd'
#define SMFIR_CHGFROM	'e'
#define SMFIR_CONN_FAIL	'f'
#define SMFIR_ADDHEADER	'h'
#define SMFIR_INSHEADER	'i'
#define SMFIR_SETSYMLIST 'l'
#define SMFIR_CHGHEADER	'm'
#define SMFIR_PROGRESS	'p'
#define SMFIR_QUARANTINE 'q'
#define SMFIR_REJECT	'r'
#define SMFIR_SKIP	's'
#define SMFIR_TEMPFAIL	't'
#define SMFIR_REPLYCODE	'y'

/* Actions the MTA allows (SMFIC_OPTNEG). */
#define SMFIF_ADDHDRS	0x001
#define SMFIF_CHGBODY	0x002
#define SMFIF_ADDRCPT	0x004
#define SMFIF_DELRCPT	0x008
#define SMFIF_CHGHDRS	0x010
#define SMFIF_QUARANTINE 0x020
#define SMFIF_CHGFROM	0x040
#define SMFIF_ADDRCPT_PAR 0x080
#define SMFIF_SETSYMLIST 0x100

/* Protocol steps (SMFIC_OPTNEG). */
#define SMFIP_NOCONNECT	0x000001
#define SMFIP_NOHELO	0x000002
#define SMFIP_NOMAIL	0x000004
#define SMFIP_NORCPT	0x000008
#define SMFIP_NOBODY	0x000010
#define SMFIP_NOHDRS	0x000020
#define SMFIP_NOEOH	0x000040
#define SMFIP_NR_HDR	0x000080
#define SMFIP_NOUNKNOWN	0x000100
#define SMFIP_NODATA	0x000200
#define SMFIP_SKIP	0x000400
#define SMFIP_RCPT_REJ	0x000800
#define SMFIP_NR_CONN	0x001000
#define SMFIP_NR_HELO	0x002000
#define SMFIP_NR_MAIL	0x004000
#define SMFIP_NR_RCPT	0x008000
#define SMFIP_NR_DATA	0x010000
#define SMFIP_NR_UNKN	0x020000
#define SMFIP_NR_EOH	0x040000
#define SMFIP_NR_BODY	0x080000
#define SMFIP_HDR_LEADSPC 0x100000

/* Macro stages of a v6 negotiation reply. */
enum milter_stage {
	MILTER_M_CONNECT = 0, MILTER_M_HELO, MILTER_M_MAIL, MILTER_M_RCPT,
	MILTER_M_DATA, MILTER_M_EOM, MILTER_M_EOH, MILTER_M_UNKNOWN,
	MILTER_M_COUNT
};

/* Largest packet accepted from a milter (a replaced body comes in many
 * packets; each is at most this), and the body chunk size sent. */
#define MILTER_PACKET_MAX (1024 * 1024)
#define MILTER_CHUNK 65535

/* Verdicts, for the caller. */
enum milter_verdict {
	MILTER_CONTINUE = 0,	/* go on (accept included) */
	MILTER_REJECT,		/* refuse with r->text (5xx) */
	MILTER_TEMPFAIL,	/* refuse with r->text (4xx) */
	MILTER_DISCARD,		/* accept and drop the message */
};

/* milter_default_action */
enum milter_defact {
	MILTER_DEF_TEMPFAIL = 0, MILTER_DEF_ACCEPT, MILTER_DEF_REJECT,
	MILTER_DEF_QUARANTINE,
};

typedef struct milter_reply {
	enum milter_verdict verdict;
	/* The SMTP reply: one or more lines "550 5.7.1 text" joined by
	 * "\r\n" (no final one); a default when the milter gave none. */
	str_t text;
	const char *who;	/* the milter that decided (its name) */
} milter_reply_t;
#define MILTER_REPLY_INIT { MILTER_CONTINUE, STR_INIT, NULL }
void milter_reply_release(milter_reply_t *r);

/* Modifications at the end of a message, in the order the milters sent
 * them (milters in list order). */
enum milter_edit_type {
	MILTER_E_ADDHDR = 1,	/* name, value: after the last header */
	MILTER_E_INSHDR,	/* index (0 = first), name, value */
	MILTER_E_CHGHDR,	/* index (1 = first of that name), name, value;
				 * value "" deletes it */
	MILTER_E_ADDRCPT,	/* name = address, value = ESMTP args or NULL */
	MILTER_E_DELRCPT,	/* name = address */
	MILTER_E_CHGFROM,	/* name = address, value = ESMTP args or NULL */
	MILTER_E_REPLBODY,	/* value: the new body (CR LF lines) */
	MILTER_E_QUARANTINE,	/* value: the reason */
};

typedef struct milter_edit {
	enum milter_edit_type type;
	uint32_t index;
	char *name;
	char *value;		/* NUL-terminated; vlen for the body */
	size_t vlen;
	const char *who;
} milter_edit_t;

typedef struct milter_edits {
	milter_edit_t *e;
	size_t n, cap;
	bool body_replaced;	/* one REPLBODY edit collects every chunk */
} milter_edits_t;
#define MILTER_EDITS_INIT { NULL, 0, 0, false }
void milter_edits_release(milter_edits_t *ed);

/* Settings shared by the milters of a list (from the parameters); a
 * milter may override the first five in braces. */
typedef struct milter_params {
	int connect_ms, command_ms, content_ms;
	enum milter_defact default_action;
	int protocol;			/* 2 .. 6 */
	/* milter_*_macros, by stage; NULL: none */
	const char *macros[MILTER_M_COUNT];
	/* Actions offered (SMFIF_*); the caller's, default all. */
	unsigned actions;
	/* Largest replaced body kept (message_size_limit; 0: none). */
	size_t body_limit;
} milter_params_t;

/* Reads the parameters (milter_*) of the loaded configuration. */
void milter_params_load(milter_params_t *p);

/* Parses one value of milter_default_action ("tempfail", "accept",
 * "reject", "quarantine").  false for anything else. */
bool milter_defact_parse(const char *s, enum milter_defact *out);

/* Checks a list (smtpd_milters, non_smtpd_milters): blank/comma
 * separated addresses inet:host:port, inet:[ipv6]:port, unix:/path,
 * each optionally in braces with settings
 * "{ inet:127.0.0.1:8891, connect_timeout=10s, default_action=accept,
 * command_timeout=.., content_timeout=.., protocol=6 }".  false with a
 * reason in why. */
bool milter_list_check(const char *list, str_t *why);

typedef struct milters milters_t;

/* The milters of list, not connected yet (milters_connect does).  NULL
 * with err for a bad list; an empty list gives an empty set. */
milters_t *milters_new(const char *list, const milter_params_t *p,
    str_t *err);
void milters_free(milters_t *ms);	/* quit and close */
size_t milters_count(const milters_t *ms);

/* Macro values: fn returns the value of a macro by its name as listed
 * ("i", "{client_addr}"), or NULL when it has none (not sent). */
typedef const char *(*milter_macro_fn)(void *ctx, const char *name);
void milters_set_macros(milters_t *ms, milter_macro_fn fn, void *ctx);

/* The stages.  family: 4, 6, or 0 for unknown; port host order.  argv:
 * the address in <> first, then the ESMTP parameters, NULL-ended. */
enum milter_verdict milters_connect(milters_t *ms, const char *host,
    const char *addr, unsigned port, int family, milter_reply_t *r);
enum milter_verdict milters_helo(milters_t *ms, const char *helo,
    milter_reply_t *r);
enum milter_verdict milters_mail(milters_t *ms, const char *const *argv,
    milter_reply_t *r);
enum milter_verdict milters_rcpt(milters_t *ms, const char *const *argv,
    milter_reply_t *r);
enum milter_verdict milters_data(milters_t *ms, milter_reply_t *r);
enum milter_verdict milters_unknown(milters_t *ms, const char *cmd,
    milter_reply_t *r);
/* Raw message bytes (header, empty line, body; lines end in LF or CR
 * LF; any split): headers one by one, end of headers, body chunks of at
 * most MILTER_CHUNK with CR LF line ends. */
enum milter_verdict milters_content(milters_t *ms, const void *buf,
    size_t len, milter_reply_t *r);
/* End of message: the modifications of the milters go to ed (the
 * caller's, empty first). */
enum milter_verdict milters_eom(milters_t *ms, milter_edits_t *ed,
    milter_reply_t *r);
/* The message ends early (RSET, a refused transaction): tells the
 * milters that got part of it. */
void milters_abort(milters_t *ms);

/* ---- The codec, for the tests -------------------------------------- */

/* Appends one packet (length, command, data) to out. */
void milter_packet(str_t *out, int cmd, const void *data, size_t len);
/* Reads one packet from fd within timeout_ms: 0 with *cmd and the data
 * in data; -1 with a reason in why (closed, timeout, length 0 or over
 * max, short). */
int milter_read_packet(int fd, int timeout_ms, size_t max, int *cmd,
    str_t *data, str_t *why);
/* A SMFIR_REPLYCODE text checked and normalized: "CODE[ -]X.Y.Z text"
 * lines separated by CR LF, all with the same code, 4xx or 5xx.  false
 * when it is not that. */
bool milter_replycode_ok(const char *s, size_t len, int *code);

#endif
