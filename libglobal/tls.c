/* TLS on OpenSSL 3 for smtpd and smtp; see tls.h and doc/tls.md. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include "event.h"
#include "log.h"
#include "mem.h"
#include "pconfig.h"
#include "sock.h"
#include "tls.h"

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0		/* e.g. macOS: the daemon ignores SIGPIPE */
#endif

/* Deepest certificate chain accepted from a server (as Postfix). */
#define VERIFY_DEPTH 9
/* Most certificate names quoted in a mismatch message. */
#define MAX_QUOTED_NAMES 5

struct tls_ctx {
	SSL_CTX *ssl_ctx;
	bool server;
};

struct tls_sess {
	SSL *ssl;
	int fd;
	bool server;
	bool is_sock;
	bool bio_eof;		/* the descriptor reached end of file */
	bool failed;		/* fatal TLS error: SSL must not be used again */
	bool shut;		/* close_notify sent (or given up) */
	int sys_errno;		/* errno of the last failed read/write */
	int fail_errno;		/* errno reported for every call after failed */
	int verify_err;		/* first chain error seen (X509_V_OK if none) */
	int verify_depth;
	enum tls_trust trust;
	bool name_matched;
	str_t desc;
	str_t reason;		/* why not trusted / name mismatch */
	str_t error;		/* last TLS-level I/O failure */
	str_t peer_cn;
	str_t issuer_cn;
};

/* Waits for events on fd until deadline (0 = none): 0 ready, 1 timed out,
 * -1 poll failed (errno). */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p;
	int tmo, r;

	p.fd = fd;
	p.events = events;
	for (;;) {
		tmo = -1;
		if (deadline) {
			int64_t left = deadline - event_now_ms();
			tmo = left > 0 ? (left > INT_MAX ? INT_MAX : (int)left) : 0;
		}
		p.revents = 0;
		r = poll(&p, 1, tmo);
		if (r > 0) {
			if (p.revents & POLLNVAL) {
				errno = EBADF;
				return -1;
			}
			return 0;	/* hang-up and errors: the next call says */
		}
		if (r == 0)
			return 1;
		if (errno != EINTR)
			return -1;
	}
}

void tls_drain_errors(str_t *out)
{
	const char *data;
	unsigned long e;
	bool any = false;
	char buf[256];
	int flags;

	unsigned long prev = 0;

	while ((e = ERR_get_error_all(NULL, NULL, NULL, &data, &flags)) != 0) {
		bool text = (flags & ERR_TXT_STRING) && data != NULL && *data;
		if (e == prev && !text)	/* OpenSSL repeats itself */
			continue;
		prev = e;
		ERR_error_string_n(e, buf, sizeof(buf));
		if (any)
			str_cat(out, "; ");
		str_cat(out, buf);
		if (text)
			str_catf(out, " (%s)", data);
		any = true;
	}
	if (!any)
		str_cat(out, "no further detail");
}

/* ---- names ---- */

static const struct {
	const char *name;
	enum tls_level level;
} level_names[] = {
	{ "none", TLS_LEVEL_NONE },
	{ "may", TLS_LEVEL_MAY },
	{ "encrypt", TLS_LEVEL_ENCRYPT },
	{ "verify", TLS_LEVEL_VERIFY },
	{ "secure", TLS_LEVEL_SECURE },
};

bool tls_level_parse(const char *name, enum tls_level *level)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (name != NULL && strcmp(name, level_names[i].name) == 0) {
			*level = level_names[i].level;
			return true;
		}
	}
	return false;
}

const char *tls_level_name(enum tls_level level)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (level_names[i].level == level)
			return level_names[i].name;
	return "unknown";
}

const char *tls_trust_name(enum tls_trust trust)
{
	switch (trust) {
	case TLS_ANONYMOUS:
		return "Anonymous";
	case TLS_UNTRUSTED:
		return "Untrusted";
	case TLS_TRUSTED:
		return "Trusted";
	}
	return "Unknown";
}

const char *tls_status_name(int status)
{
	switch (status) {
	case TLS_OK:
		return "ok";
	case TLS_ERR_HANDSHAKE:
		return "handshake failed";
	case TLS_ERR_TIMEOUT:
		return "handshake timed out";
	case TLS_ERR_VERIFY:
		return "verification failed";
	}
	return "unknown status";
}

/* ---- protocols ---- */

/* Versions we can enable, lowest first; SSLv2/SSLv3 sort below them. */
static const struct {
	const char *name;
	int ordinal;		/* index into versions[], negative: below */
} proto_names[] = {
	{ "SSLv2", -2 }, { "SSLv3", -1 }, { "TLSv1", 0 }, { "TLSv1.1", 1 },
	{ "TLSv1.2", 2 }, { "TLSv1.3", 3 },
};
static const int versions[] = {
	TLS1_VERSION, TLS1_1_VERSION, TLS1_2_VERSION, TLS1_3_VERSION,
};
#define NVERSIONS 4
#define DEFAULT_PROTOCOLS ">=TLSv1.2"

static bool proto_ordinal(const char *name, int *ord)
{
	for (size_t i = 0; i < sizeof(proto_names) / sizeof(proto_names[0]); i++) {
		if (strcasecmp(name, proto_names[i].name) == 0) {
			*ord = proto_names[i].ordinal;
			return true;
		}
	}
	return false;
}

int tls_protocols_parse(const char *spec, int *min, int *max, str_t *err)
{
	unsigned incl = 0, excl = 0, set;
	bool seen_incl = false;
	int lo = 0, hi = NVERSIONS - 1, first = -1, last = -1;
	char *copy, *cp, *tok;

	if (spec == NULL || *spec == '\0')
		spec = DEFAULT_PROTOCOLS;
	copy = xstrdup(spec);
	cp = copy;
	while ((tok = str_token(&cp, " \t\r\n,:")) != NULL) {
		const char *name = tok;
		int kind = 0, ord;	/* 0 include, '!' exclude, '>' >=, '<' <= */

		if (tok[0] == '!') {
			kind = '!';
			name = tok + 1;
		} else if ((tok[0] == '>' || tok[0] == '<') && tok[1] == '=') {
			kind = tok[0];
			name = tok + 2;
		}
		if (!proto_ordinal(name, &ord)) {
			str_setf(err, "unknown TLS protocol \"%s\" in \"%s\"", name, spec);
			free(copy);
			return -1;
		}
		switch (kind) {
		case 0:
			seen_incl = true;
			if (ord >= 0)
				incl |= 1u << ord;
			break;
		case '!':
			if (ord >= 0)
				excl |= 1u << ord;
			break;
		case '>':
			if (ord > lo)
				lo = ord;
			break;
		case '<':
			if (ord < hi)
				hi = ord;
			break;
		}
	}
	free(copy);
	set = seen_incl ? incl : (1u << NVERSIONS) - 1;
	set &= ~excl;
	for (int i = 0; i < NVERSIONS; i++) {
		if (i < lo || i > hi || !(set & (1u << i)))
			continue;
		if (first < 0)
			first = i;
		else if (last != i - 1) {
			str_setf(err, "TLS protocols \"%s\" leave a gap between versions"
			    " (only a contiguous range is supported)", spec);
			return -1;
		}
		last = i;
	}
	if (first < 0) {
		str_setf(err, "TLS protocols \"%s\" leave no version enabled", spec);
		return -1;
	}
	*min = versions[first];
	*max = versions[last];
	return 0;
}

/* ---- contexts ---- */

/* Keys are never read with a pass phrase: a daemon must not prompt.
 * Being called means the key is encrypted, which the message then says. */
static bool password_wanted;

static int no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	password_wanted = true;
	return -1;
}

static bool empty(const char *s)
{
	return s == NULL || *s == '\0';
}

/* open() first so that the message says plainly which file is missing. */
static bool check_file(const char *kind, const char *path, str_t *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		str_setf(err, "cannot open %s %s: %s", kind, path, strerror(errno));
		return false;
	}
	if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
		str_setf(err, "%s %s is not a regular file", kind, path);
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

static bool load_chain_file(SSL_CTX *c, const char *path, str_t *err)
{
	BIO *in;
	X509 *x;
	int count = 0;

	if (!check_file("certificate chain file", path, err))
		return false;
	if ((in = BIO_new_file(path, "r")) == NULL) {
		str_setf(err, "cannot read certificate chain file %s: ", path);
		tls_drain_errors(err);
		return false;
	}
	while ((x = PEM_read_bio_X509(in, NULL, no_password, NULL)) != NULL) {
		if (!SSL_CTX_add0_chain_cert(c, x)) {
			X509_free(x);
			BIO_free(in);
			str_setf(err, "cannot use chain certificate %d of %s: ",
			    count + 1, path);
			tls_drain_errors(err);
			return false;
		}
		count++;
	}
	BIO_free(in);
	/* The loop ends with "no start line" at end of file: that is fine
	 * once something was read; anything else is damage. */
	unsigned long e = ERR_peek_last_error();
	if (count == 0 || !(ERR_GET_LIB(e) == ERR_LIB_PEM &&
	    ERR_GET_REASON(e) == PEM_R_NO_START_LINE)) {
		str_setf(err, "cannot load certificate chain from %s: ", path);
		tls_drain_errors(err);
		return false;
	}
	ERR_clear_error();
	return true;
}

/* Certificate (with its chain), optional extra chain, key, and whether
 * they belong together. */
static bool load_cert_key(SSL_CTX *c, const char *cert, const char *key,
    const char *chain, str_t *err)
{
	if (empty(key))
		key = cert;
	if (!check_file("certificate file", cert, err))
		return false;
	ERR_clear_error();
	if (SSL_CTX_use_certificate_chain_file(c, cert) != 1) {
		str_setf(err, "cannot load certificate from %s: ", cert);
		tls_drain_errors(err);
		return false;
	}
	if (!empty(chain) && !load_chain_file(c, chain, err))
		return false;
	if (!check_file("private key file", key, err))
		return false;
	password_wanted = false;
	if (SSL_CTX_use_PrivateKey_file(c, key, SSL_FILETYPE_PEM) != 1) {
		unsigned long e = ERR_peek_error();
		if (ERR_GET_LIB(e) == ERR_LIB_X509 &&
		    ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
			str_setf(err, "private key in %s does not match the "
			    "certificate in %s", key, cert);
			ERR_clear_error();
		} else if (password_wanted) {
			str_setf(err, "cannot load private key from %s: it is "
			    "encrypted with a pass phrase, which nobody is there to "
			    "type; store it unencrypted, readable only by root", key);
			ERR_clear_error();
		} else {
			str_setf(err, "cannot load private key from %s: ", key);
			tls_drain_errors(err);
		}
		return false;
	}
	/* A key of another type than the certificate lands in another slot
	 * and OpenSSL's own message is then "no certificate assigned": check
	 * the pair ourselves and say what is wrong. */
	X509 *x = SSL_CTX_get0_certificate(c);
	EVP_PKEY *k = SSL_CTX_get0_privatekey(c);
	if (x == NULL || k == NULL || X509_check_private_key(x, k) != 1 ||
	    SSL_CTX_check_private_key(c) != 1) {
		str_setf(err, "private key in %s does not match the certificate"
		    " in %s", key, cert);
		ERR_clear_error();
		return false;
	}
	return true;
}

/* Settings both sides share. */
static SSL_CTX *ctx_common(const SSL_METHOD *method, const char *protocols,
    const char *ciphers, str_t *err)
{
	SSL_CTX *c;
	int min, max;

	if (tls_protocols_parse(protocols, &min, &max, err) < 0)
		return NULL;
	ERR_clear_error();
	if ((c = SSL_CTX_new(method)) == NULL) {
		str_set(err, "cannot create TLS context: ");
		tls_drain_errors(err);
		return NULL;
	}
	if (!SSL_CTX_set_min_proto_version(c, min) ||
	    !SSL_CTX_set_max_proto_version(c, max)) {
		str_setf(err, "cannot set TLS protocols \"%s\": ",
		    empty(protocols) ? DEFAULT_PROTOCOLS : protocols);
		tls_drain_errors(err);
		SSL_CTX_free(c);
		return NULL;
	}
	/* No renegotiation (a denial of service lever), no compression
	 * (CRIME), no session resumption (each process handles one
	 * connection; tickets would only cost bytes); a peer that hangs up
	 * without close_notify is end of input, as SMTP frames its own data. */
	SSL_CTX_set_options(c, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_TICKET | SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_session_cache_mode(c, SSL_SESS_CACHE_OFF);
	/* The stream retries a write with the same bytes but possibly from
	 * another address, and counts partial progress. */
	SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_default_passwd_cb(c, no_password);
	if (empty(ciphers))
		ciphers = TLS_DEFAULT_CIPHERS;
	if (SSL_CTX_set_cipher_list(c, ciphers) != 1) {
		str_setf(err, "bad TLS cipher list \"%s\": ", ciphers);
		tls_drain_errors(err);
		SSL_CTX_free(c);
		return NULL;
	}
	return c;
}

tls_ctx_t *tls_server_ctx(const tls_server_config_t *cfg, str_t *err)
{
	SSL_CTX *c;
	tls_ctx_t *ctx;

	str_reset(err);
	if (empty(cfg->cert_file)) {
		str_set(err, "no server certificate file given");
		return NULL;
	}
	if ((c = ctx_common(TLS_server_method(), cfg->protocols, cfg->ciphers,
	    err)) == NULL)
		return NULL;
	SSL_CTX_set_options(c, SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_num_tickets(c, 0);
	SSL_CTX_set_dh_auto(c, 1);
	SSL_CTX_set_verify(c, SSL_VERIFY_NONE, NULL);
	if (!load_cert_key(c, cfg->cert_file, cfg->key_file, cfg->chain_file,
	    err)) {
		SSL_CTX_free(c);
		return NULL;
	}
	ctx = xcalloc(1, sizeof(*ctx));
	ctx->ssl_ctx = c;
	ctx->server = true;
	return ctx;
}

/* Records the first chain error and lets the handshake finish: the
 * security level decides afterwards, with the whole picture. */
static int verify_cb(int ok, X509_STORE_CTX *xs)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(xs,
	    SSL_get_ex_data_X509_STORE_CTX_idx());
	tls_sess_t *t = ssl != NULL ? SSL_get_app_data(ssl) : NULL;

	if (!ok && t != NULL && t->verify_err == X509_V_OK) {
		t->verify_err = X509_STORE_CTX_get_error(xs);
		t->verify_depth = X509_STORE_CTX_get_error_depth(xs);
		if (t->verify_err == X509_V_OK)	/* never leave it "ok" */
			t->verify_err = X509_V_ERR_UNSPECIFIED;
	}
	return 1;
}

/* The system's CA store when none is configured.  Its hashed directory
 * is searched only when a chain is verified; the bundle file would be
 * read whole now (15-25 ms for Debian's, at every start of an smtp
 * process).  Only a system without the directory gets the file. */
/* A CA directory read whole: its hashed names (HHHHHHHH.N) and *.pem /
 * *.crt files.  Unreadable or foreign files are skipped (the lazy lookup
 * would skip them too).  Returns the number of files loaded. */
static int load_dir_now(SSL_CTX *c, const char *dir)
{
	X509_STORE *store = SSL_CTX_get_cert_store(c);
	DIR *d = opendir(dir);
	struct dirent *de;
	str_t path = STR_INIT;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		const char *nm = de->d_name, *dot = strrchr(nm, '.');
		size_t len = strlen(nm);
		bool hashed = dot != NULL && dot - nm == 8 && dot[1] != '\0' &&
		    strspn(nm, "0123456789abcdef") == 8 &&
		    strspn(dot + 1, "0123456789") == strlen(dot + 1);
		bool pem = len > 4 && (strcmp(nm + len - 4, ".pem") == 0 ||
		    strcmp(nm + len - 4, ".crt") == 0);
		struct stat st;
		if (!hashed && !pem)
			continue;
		str_setf(&path, "%s/%s", dir, nm);
		if (stat(str_cstr(&path), &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (X509_STORE_load_file(store, str_cstr(&path)) == 1)
			n++;
		ERR_clear_error();
	}
	closedir(d);
	str_release(&path);
	return n;
}

static void default_trust(SSL_CTX *c, bool load_now)
{
	struct stat st;
	const char *dir = getenv(X509_get_default_cert_dir_env());
	const char *file = getenv(X509_get_default_cert_file_env());
	int ok;

	if (dir == NULL)
		dir = X509_get_default_cert_dir();
	if (file == NULL)
		file = X509_get_default_cert_file();
	if (load_now) {
		/* The bundle when there is one (one file, 15-25 ms), else
		 * the directory's files one by one. */
		if (stat(file, &st) == 0 && S_ISREG(st.st_mode) &&
		    SSL_CTX_load_verify_file(c, file) == 1)
			return;
		ERR_clear_error();
		(void)load_dir_now(c, dir);
		return;
	}
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		ok = SSL_CTX_set_default_verify_dir(c);
	else
		ok = SSL_CTX_set_default_verify_paths(c);
	if (ok != 1)
		ERR_clear_error();	/* no system store: nothing is trusted */
}

tls_ctx_t *tls_client_ctx(const tls_client_config_t *cfg, str_t *err)
{
	SSL_CTX *c;
	tls_ctx_t *ctx;

	str_reset(err);
	if ((c = ctx_common(TLS_client_method(), cfg->protocols, cfg->ciphers,
	    err)) == NULL)
		return NULL;
	if (!empty(cfg->CAfile)) {
		if (!check_file("CA file", cfg->CAfile, err))
			goto fail;
		if (SSL_CTX_load_verify_file(c, cfg->CAfile) != 1) {
			str_setf(err, "cannot load CA certificates from %s: ",
			    cfg->CAfile);
			tls_drain_errors(err);
			goto fail;
		}
	}
	if (!empty(cfg->CApath)) {
		struct stat st;
		if (stat(cfg->CApath, &st) < 0) {
			str_setf(err, "cannot use CA directory %s: %s",
			    cfg->CApath, strerror(errno));
			goto fail;
		}
		if (!S_ISDIR(st.st_mode)) {
			str_setf(err, "CA directory %s is not a directory",
			    cfg->CApath);
			goto fail;
		}
		if (cfg->load_now) {
			if (load_dir_now(c, cfg->CApath) == 0) {
				str_setf(err, "CA directory %s: no certificate "
				    "could be read", cfg->CApath);
				goto fail;
			}
		} else if (SSL_CTX_load_verify_dir(c, cfg->CApath) != 1) {
			str_setf(err, "cannot use CA directory %s: ", cfg->CApath);
			tls_drain_errors(err);
			goto fail;
		}
	}
	if (empty(cfg->CAfile) && empty(cfg->CApath))
		default_trust(c, cfg->load_now);
	SSL_CTX_set_verify(c, SSL_VERIFY_PEER, verify_cb);
	SSL_CTX_set_verify_depth(c, VERIFY_DEPTH);
	if (!empty(cfg->cert_file) &&
	    !load_cert_key(c, cfg->cert_file, cfg->key_file, NULL, err))
		goto fail;
	ctx = xcalloc(1, sizeof(*ctx));
	ctx->ssl_ctx = c;
	ctx->server = false;
	return ctx;
fail:
	SSL_CTX_free(c);
	return NULL;
}

int tls_ctx_trust_objects(const tls_ctx_t *ctx)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx->ssl_ctx);

	return st ? sk_X509_OBJECT_num(X509_STORE_get0_objects(st)) : 0;
}

tls_ctx_t *tls_server_ctx_from_config(str_t *err)
{
	tls_server_config_t cfg;
	int min, max;
	tls_ctx_t *ctx;

	memset(&cfg, 0, sizeof(cfg));
	cfg.cert_file = pconfig_get_str("smtpd_tls_cert_file");
	cfg.key_file = pconfig_get_str("smtpd_tls_key_file");
	cfg.protocols = pconfig_get_str("smtpd_tls_protocols");
	str_reset(err);
	if (empty(cfg.cert_file)) {
		str_set(err, "smtpd_tls_cert_file is empty: no server certificate");
		return NULL;
	}
	if (tls_protocols_parse(cfg.protocols, &min, &max, err) < 0) {
		str_t msg = STR_INIT;
		str_setf(&msg, "smtpd_tls_protocols: %s", str_cstr(err));
		str_set(err, str_cstr(&msg));
		str_release(&msg);
		return NULL;
	}
	ctx = tls_server_ctx(&cfg, err);
	return ctx;
}

tls_ctx_t *tls_client_ctx_from_config(const char *proto, bool load_now,
    str_t *err)
{
	tls_client_config_t cfg;
	char n[5][64];
	int min, max;

	memset(&cfg, 0, sizeof(cfg));
	cfg.load_now = load_now;
	if (!bfmt(n[0], sizeof(n[0]), "%s_tls_CAfile", proto) ||
	    !bfmt(n[1], sizeof(n[1]), "%s_tls_CApath", proto) ||
	    !bfmt(n[2], sizeof(n[2]), "%s_tls_cert_file", proto) ||
	    !bfmt(n[3], sizeof(n[3]), "%s_tls_key_file", proto) ||
	    !bfmt(n[4], sizeof(n[4]), "%s_tls_protocols", proto)) {
		str_setf(err, "bad protocol name \"%s\"", proto);
		return NULL;
	}
	cfg.CAfile = pconfig_get_str(n[0]);
	cfg.CApath = pconfig_get_str(n[1]);
	cfg.cert_file = pconfig_get_str(n[2]);
	cfg.key_file = pconfig_get_str(n[3]);
	cfg.protocols = pconfig_get_str(n[4]);
	str_reset(err);
	if (tls_protocols_parse(cfg.protocols, &min, &max, err) < 0) {
		str_t msg = STR_INIT;
		str_setf(&msg, "%s: %s", n[4], str_cstr(err));
		str_set(err, str_cstr(&msg));
		str_release(&msg);
		return NULL;
	}
	return tls_client_ctx(&cfg, err);
}

void tls_ctx_free(tls_ctx_t *ctx)
{
	if (ctx == NULL)
		return;
	SSL_CTX_free(ctx->ssl_ctx);
	free(ctx);
}

/* ---- a BIO on the descriptor ----
 * OpenSSL's socket BIO uses write(), which raises SIGPIPE when the peer is
 * gone; this one uses send(MSG_NOSIGNAL) and remembers errno and EOF for
 * the messages. */

static BIO_METHOD *fd_bio_method;

static int fdbio_write(BIO *b, const char *buf, int len)
{
	tls_sess_t *t = BIO_get_data(b);
	ssize_t n;

	BIO_clear_retry_flags(b);
	if (len <= 0)
		return 0;
	if (t->is_sock)
		n = send(t->fd, buf, (size_t)len, MSG_NOSIGNAL);
	else
		n = write(t->fd, buf, (size_t)len);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			BIO_set_retry_write(b);
		else
			t->sys_errno = errno;
		return -1;
	}
	return (int)n;
}

static int fdbio_read(BIO *b, char *buf, int len)
{
	tls_sess_t *t = BIO_get_data(b);
	ssize_t n;

	BIO_clear_retry_flags(b);
	if (len <= 0)
		return 0;
	n = read(t->fd, buf, (size_t)len);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			BIO_set_retry_read(b);
		else
			t->sys_errno = errno;
		return -1;
	}
	if (n == 0)
		t->bio_eof = true;
	return (int)n;
}

static long fdbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	tls_sess_t *t = BIO_get_data(b);

	(void)num;
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_EOF:
		return t != NULL && t->bio_eof;
	case BIO_C_GET_FD:
		if (t == NULL)
			return -1;
		if (ptr != NULL)
			*(int *)ptr = t->fd;
		return t->fd;
	default:
		return 0;
	}
}

static BIO *fd_bio_new(tls_sess_t *t)
{
	BIO *b;

	if (fd_bio_method == NULL) {
		BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() |
		    BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "petrel fd");
		if (m == NULL)
			return NULL;
		BIO_meth_set_write(m, fdbio_write);
		BIO_meth_set_read(m, fdbio_read);
		BIO_meth_set_ctrl(m, fdbio_ctrl);
		fd_bio_method = m;
	}
	if ((b = BIO_new(fd_bio_method)) == NULL)
		return NULL;
	BIO_set_data(b, t);
	BIO_set_init(b, 1);
	return b;
}

/* ---- sessions ---- */

static void sess_free(tls_sess_t *t)
{
	if (t == NULL)
		return;
	SSL_free(t->ssl);
	str_release(&t->desc);
	str_release(&t->reason);
	str_release(&t->error);
	str_release(&t->peer_cn);
	str_release(&t->issuer_cn);
	free(t);
}

void tls_sess_free(tls_sess_t *t)
{
	sess_free(t);
}

/* Why an SSL call with result r failed, after SSL_get_error gave e. */
static void describe_failure(tls_sess_t *t, int e, str_t *out)
{
	switch (e) {
	case SSL_ERROR_ZERO_RETURN:
		str_cat(out, "connection closed by peer");
		ERR_clear_error();
		return;
	case SSL_ERROR_SYSCALL:
		if (t->sys_errno) {
			str_cat(out, strerror(t->sys_errno));
		} else if (t->bio_eof) {
			str_cat(out, "connection closed by peer");
		} else {
			tls_drain_errors(out);
			return;
		}
		if (ERR_peek_error() != 0) {
			str_cat(out, ": ");
			tls_drain_errors(out);
		}
		return;
	default:
		if (t->bio_eof && ERR_peek_error() == 0) {
			str_cat(out, "connection closed by peer");
			return;
		}
		tls_drain_errors(out);
		if (t->bio_eof)
			str_cat(out, " (connection closed by peer)");
		return;
	}
}

static int run_handshake(tls_sess_t *t, int timeout_ms, str_t *err)
{
	int64_t deadline = timeout_ms > 0 ? event_now_ms() + timeout_ms : 0;

	for (;;) {
		int r, e, w;

		ERR_clear_error();
		t->sys_errno = 0;
		r = SSL_do_handshake(t->ssl);
		if (r == 1)
			return TLS_OK;
		e = SSL_get_error(t->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			w = wait_fd(t->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
			    deadline);
			if (w == 0)
				continue;
			t->failed = true;
			if (w == 1) {
				str_setf(err, "TLS handshake timed out after %d ms",
				    timeout_ms);
				return TLS_ERR_TIMEOUT;
			}
			str_setf(err, "TLS handshake failed: poll: %s",
			    strerror(errno));
			return TLS_ERR_HANDSHAKE;
		}
		t->failed = true;
		str_set(err, "TLS handshake failed: ");
		describe_failure(t, e, err);
		return TLS_ERR_HANDSHAKE;
	}
}

/* Printable text of an ASN.1 string (names come from the peer: keep
 * control characters out of logs). */
static void asn1_text(const ASN1_STRING *as, str_t *out)
{
	unsigned char *utf8 = NULL;
	int n = ASN1_STRING_to_UTF8(&utf8, as);

	if (n < 0) {
		str_cat(out, "?");
		return;
	}
	str_quote_printable(out, utf8, (size_t)n);
	OPENSSL_free(utf8);
}

static void name_cn(const X509_NAME *name, str_t *out)
{
	int i = name ? X509_NAME_get_index_by_NID(name, NID_commonName, -1) : -1;
	X509_NAME_ENTRY *ent;

	str_reset(out);
	if (i < 0)
		return;
	ent = X509_NAME_get_entry(name, i);
	if (ent != NULL)
		asn1_text(X509_NAME_ENTRY_get_data(ent), out);
}

/* "DNS:a.example, DNS:b.example" (subject CN if there are no DNS names). */
static void cert_names(X509 *cert, str_t *out)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(cert, NID_subject_alt_name,
	    NULL, NULL);
	int shown = 0, total = 0;

	for (int i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		if (g->type != GEN_DNS)
			continue;
		total++;
		if (shown == MAX_QUOTED_NAMES)
			continue;
		if (shown++)
			str_cat(out, ", ");
		str_cat(out, "DNS:");
		asn1_text(g->d.dNSName, out);
	}
	GENERAL_NAMES_free(gens);
	if (total > shown)
		str_catf(out, ", ... (%d more)", total - shown);
	if (total == 0) {
		str_t cn = STR_INIT;
		name_cn(X509_get_subject_name(cert), &cn);
		if (str_len(&cn))
			str_catf(out, "CN=%s", str_cstr(&cn));
		else
			str_cat(out, "none");
		str_release(&cn);
	}
}

static bool is_ip_literal(const char *name)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, name, buf) == 1 ||
	    inet_pton(AF_INET6, name, buf) == 1;
}

/* A name without a trailing dot, "" for NULL. */
static char *bare_name(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	while (len > 0 && name[len - 1] == '.')
		len--;
	return xstrndup(name ? name : "", len);
}

static bool match_one(X509 *cert, const char *name, bool subdomains)
{
	str_t dot = STR_INIT;
	bool ok;

	if (*name == '\0')
		return false;
	if (is_ip_literal(name))
		return !subdomains && X509_check_ip_asc(cert, name, 0) == 1;
	if (X509_check_host(cert, name, 0, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS,
	    NULL) == 1)
		return true;
	if (!subdomains)
		return false;
	/* A leading dot asks OpenSSL for any subdomain of the name. */
	str_setf(&dot, ".%s", name);
	ok = X509_check_host(cert, str_cstr(&dot), 0,
	    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, NULL) == 1;
	str_release(&dot);
	return ok;
}

/* Sets trust, name_matched and reason from the peer certificate; returns
 * TLS_OK, or TLS_ERR_VERIFY with err set when the level is not met. */
static int client_checks(tls_sess_t *t, const tls_peer_t *peer, str_t *err)
{
	X509 *cert = SSL_get0_peer_certificate(t->ssl);
	char *host = bare_name(peer->host), *nexthop = bare_name(peer->nexthop);
	bool secure = peer->level == TLS_LEVEL_SECURE;
	str_t expected = STR_INIT, names = STR_INIT;
	int status = TLS_OK;

	if (cert == NULL) {
		t->trust = TLS_ANONYMOUS;
		str_set(&t->reason, "server presented no certificate");
	} else {
		long vr = SSL_get_verify_result(t->ssl);
		int e = t->verify_err != X509_V_OK ? t->verify_err : (int)vr;

		name_cn(X509_get_subject_name(cert), &t->peer_cn);
		name_cn(X509_get_issuer_name(cert), &t->issuer_cn);
		t->trust = e == X509_V_OK ? TLS_TRUSTED : TLS_UNTRUSTED;
		if (e != X509_V_OK) {
			str_setf(&t->reason, "server certificate not trusted: %s",
			    X509_verify_cert_error_string(e));
			if (t->verify_depth > 0)
				str_catf(&t->reason, " (at depth %d)", t->verify_depth);
		}
		/* secure: the nexthop domain or a subdomain (host only when
		 * there is no nexthop); otherwise host or nexthop exactly. */
		if (secure) {
			const char *dom = *nexthop ? nexthop : host;
			t->name_matched = match_one(cert, dom, true);
			str_setf(&expected, "%s or a subdomain of it", dom);
		} else {
			t->name_matched = match_one(cert, host, false) ||
			    match_one(cert, nexthop, false);
			str_set(&expected, host);
			if (*nexthop && strcasecmp(host, nexthop) != 0)
				str_catf(&expected, "%s%s", *host ? " or " : "",
				    nexthop);
		}
		if (!t->name_matched) {
			cert_names(cert, &names);
			if (str_len(&t->reason))
				str_cat(&t->reason, "; ");
			if (str_len(&expected))
				str_catf(&t->reason, "hostname mismatch: expected %s,"
				    " certificate names: %s", str_cstr(&expected),
				    str_cstr(&names));
			else
				str_catf(&t->reason, "no server name to verify,"
				    " certificate names: %s", str_cstr(&names));
		}
	}
	if (peer->level >= TLS_LEVEL_VERIFY) {
		if (t->trust != TLS_TRUSTED || !t->name_matched) {
			str_set(err, str_cstr(&t->reason));
			status = TLS_ERR_VERIFY;
		}
	}
	str_release(&expected);
	str_release(&names);
	free(host);
	free(nexthop);
	return status;
}

static ssize_t io_fail(tls_sess_t *t, int r, int *want, bool reading)
{
	int e = SSL_get_error(t->ssl, r);

	switch (e) {
	case SSL_ERROR_WANT_READ:
		*want = STREAM_WANT_READ;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		*want = STREAM_WANT_WRITE;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		/* close_notify, or end of file (IGNORE_UNEXPECTED_EOF). */
		ERR_clear_error();
		if (reading)
			return 0;
		str_set(&t->error, "TLS write: connection closed by peer");
		errno = EPIPE;
		return -1;
	case SSL_ERROR_SYSCALL:
		if (reading && t->sys_errno == 0 && t->bio_eof &&
		    ERR_peek_error() == 0)
			return 0;
		t->fail_errno = t->sys_errno ? t->sys_errno : EIO;
		break;
	default:
		t->fail_errno = EPROTO;
		break;
	}
	t->failed = true;
	str_set(&t->error, reading ? "TLS read: " : "TLS write: ");
	describe_failure(t, e, &t->error);
	errno = t->fail_errno;
	return -1;
}

static ssize_t io_read(void *ctx, int fd, void *buf, size_t len, int *want)
{
	tls_sess_t *t = ctx;
	size_t n = 0;
	int r;

	(void)fd;
	if (t->failed) {
		errno = t->fail_errno ? t->fail_errno : EIO;
		return -1;
	}
	ERR_clear_error();
	t->sys_errno = 0;
	r = SSL_read_ex(t->ssl, buf, len, &n);
	if (r == 1)
		return (ssize_t)n;
	return io_fail(t, r, want, true);
}

static ssize_t io_write(void *ctx, int fd, const void *buf, size_t len,
    int *want)
{
	tls_sess_t *t = ctx;
	size_t n = 0;
	int r;

	(void)fd;
	if (t->failed || t->shut) {
		errno = t->failed ? (t->fail_errno ? t->fail_errno : EIO) : EPIPE;
		return -1;
	}
	ERR_clear_error();
	t->sys_errno = 0;
	r = SSL_write_ex(t->ssl, buf, len, &n);
	if (r == 1)
		return (ssize_t)n;
	return io_fail(t, r, want, false);
}

static const stream_io_t tls_stream_io = { io_read, io_write };

/* Everything both handshakes do; check (client only) runs after the
 * handshake. */
static int start(tls_ctx_t *ctx, stream_t *s, bool server,
    const tls_peer_t *peer, int timeout_ms, tls_sess_t **sessp, str_t *err)
{
	tls_sess_t *t;
	struct stat st;
	BIO *bio;
	int fd = stream_fd(s), status;
	size_t pending;

	*sessp = NULL;
	str_reset(err);
	if (ctx == NULL || ctx->server != server) {
		str_set(err, server ? "TLS: not a server context" :
		    "TLS: not a client context");
		return TLS_ERR_HANDSHAKE;
	}
	if (!server && peer == NULL) {
		str_set(err, "TLS: no peer given for a client handshake");
		return TLS_ERR_HANDSHAKE;
	}
	if (!server && peer->level == TLS_LEVEL_NONE) {
		str_set(err, "TLS: security level none does not use TLS");
		return TLS_ERR_HANDSHAKE;
	}
	if ((pending = stream_pending(s)) > 0) {
		str_setf(err, "TLS: %zu bytes of plaintext input received before"
		    " the TLS handshake", pending);
		return TLS_ERR_HANDSHAKE;
	}
	if (stream_flush(s) < 0) {
		str_setf(err, "TLS: cannot send before the handshake: %s",
		    strerror(stream_errno(s)));
		return stream_timedout(s) ? TLS_ERR_TIMEOUT : TLS_ERR_HANDSHAKE;
	}
	if (sock_set_nonblock(fd, true) < 0) {
		str_setf(err, "TLS: cannot make the connection non-blocking: %s",
		    strerror(errno));
		return TLS_ERR_HANDSHAKE;
	}
	t = xcalloc(1, sizeof(*t));
	t->fd = fd;
	t->server = server;
	t->is_sock = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
	t->verify_err = X509_V_OK;
	t->trust = TLS_ANONYMOUS;
	ERR_clear_error();
	if ((t->ssl = SSL_new(ctx->ssl_ctx)) == NULL ||
	    (bio = fd_bio_new(t)) == NULL) {
		str_set(err, "TLS: cannot create a session: ");
		tls_drain_errors(err);
		sess_free(t);
		return TLS_ERR_HANDSHAKE;
	}
	SSL_set_bio(t->ssl, bio, bio);
	SSL_set_app_data(t->ssl, t);
	if (server) {
		SSL_set_accept_state(t->ssl);
	} else {
		char *sni = bare_name(peer->host);
		SSL_set_connect_state(t->ssl);
		/* RFC 6066: SNI carries DNS names only, never addresses. */
		if (*sni && !is_ip_literal(sni) &&
		    SSL_set_tlsext_host_name(t->ssl, sni) != 1) {
			str_setf(err, "TLS: bad server name \"%s\" for SNI: ", sni);
			tls_drain_errors(err);
			free(sni);
			sess_free(t);
			return TLS_ERR_HANDSHAKE;
		}
		free(sni);
	}
	status = run_handshake(t, timeout_ms, err);
	if (status != TLS_OK) {
		sess_free(t);
		return status;
	}
	{
		const SSL_CIPHER *c = SSL_get_current_cipher(t->ssl);
		int alg_bits = 0, bits = SSL_CIPHER_get_bits(c, &alg_bits);
		str_setf(&t->desc, "%s with cipher %s (%d/%d bits)",
		    SSL_get_version(t->ssl), SSL_CIPHER_get_name(c), bits,
		    alg_bits);
	}
	if (!server && (status = client_checks(t, peer, err)) != TLS_OK) {
		/* Tell the server we are leaving; no waiting. */
		ERR_clear_error();
		SSL_shutdown(t->ssl);
		ERR_clear_error();
		sess_free(t);
		return status;
	}
	if (stream_set_io(s, &tls_stream_io, t) < 0) {
		str_setf(err, "TLS: cannot install the stream layer: %s",
		    strerror(errno));
		sess_free(t);
		return TLS_ERR_HANDSHAKE;
	}
	*sessp = t;
	return TLS_OK;
}

int tls_server_start(tls_ctx_t *ctx, stream_t *s, int timeout_ms,
    tls_sess_t **sessp, str_t *err)
{
	return start(ctx, s, true, NULL, timeout_ms, sessp, err);
}

int tls_client_start(tls_ctx_t *ctx, stream_t *s, const tls_peer_t *peer,
    int timeout_ms, tls_sess_t **sessp, str_t *err)
{
	return start(ctx, s, false, peer, timeout_ms, sessp, err);
}

const char *tls_sess_describe(const tls_sess_t *t)
{
	return str_cstr(&t->desc);
}

const char *tls_sess_protocol(const tls_sess_t *t)
{
	return SSL_get_version(t->ssl);
}

const char *tls_sess_cipher(const tls_sess_t *t)
{
	return SSL_get_cipher_name(t->ssl);
}

enum tls_trust tls_sess_trust(const tls_sess_t *t)
{
	return t->trust;
}

bool tls_sess_name_matched(const tls_sess_t *t)
{
	return t->name_matched;
}

const char *tls_sess_verify_reason(const tls_sess_t *t)
{
	return str_cstr(&t->reason);
}

const char *tls_sess_peer_cn(const tls_sess_t *t)
{
	return str_cstr(&t->peer_cn);
}

const char *tls_sess_issuer_cn(const tls_sess_t *t)
{
	return str_cstr(&t->issuer_cn);
}

const char *tls_sess_server_name(const tls_sess_t *t)
{
	const char *name = SSL_get_servername(t->ssl, TLSEXT_NAMETYPE_host_name);

	return t->server && name != NULL ? name : "";
}

const char *tls_sess_error(const tls_sess_t *t)
{
	return str_cstr(&t->error);
}

void tls_sess_log(const tls_sess_t *t, const char *peer)
{
	log_info("%s TLS connection established %s %s: %s",
	    tls_trust_name(t->trust), t->server ? "from" : "to", peer,
	    str_cstr(&t->desc));
}

int tls_shutdown(tls_sess_t *t, stream_t *s, int timeout_ms)
{
	int64_t deadline = timeout_ms > 0 ? event_now_ms() + timeout_ms : 0;
	int rc = 0;

	if (s != NULL && stream_flush(s) < 0)
		rc = -1;
	if (t->failed)
		return -1;
	if (t->shut)
		return rc;
	t->shut = true;
	for (;;) {
		int r, e;

		ERR_clear_error();
		t->sys_errno = 0;
		r = SSL_shutdown(t->ssl);
		if (r >= 0)	/* 0: ours sent, the peer's not yet seen */
			return rc;
		e = SSL_get_error(t->ssl, r);
		if (e == SSL_ERROR_WANT_WRITE &&
		    wait_fd(t->fd, POLLOUT, deadline) == 0)
			continue;
		if (e == SSL_ERROR_WANT_READ)	/* only when waiting for the peer */
			return rc;
		str_set(&t->error, "TLS shutdown: ");
		if (e == SSL_ERROR_WANT_WRITE)
			str_cat(&t->error, "timed out");
		else
			describe_failure(t, e, &t->error);
		return -1;
	}
}

int tls_close(tls_sess_t *t, stream_t *s, int timeout_ms)
{
	int r1 = tls_shutdown(t, s, timeout_ms);
	int r2 = stream_close(s);

	sess_free(t);
	return r1 < 0 || r2 < 0 ? -1 : 0;
}
