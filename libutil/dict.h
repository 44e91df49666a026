/* Lookup tables: one "type:name" interface over several back ends.
 *
 *   hash:/path/file      Berkeley DB hash file /path/file.db (read-only;
 *                        reopened when the file is rebuilt)
 *   texthash:/path/file  "key value" text file read into memory
 *   inline:{ k=v, { k = v with spaces } }
 *   static:value, static:{ value with spaces }
 *   cidr:/path/file      "network/prefix result" rules, first match wins
 *   regexp:/path/file    "/pattern/flags result" POSIX regular expressions
 *   pcre:/path/file      the same with PCRE2 (Perl) expressions
 *   lmdb:/path/file      LMDB file /path/file.lmdb (reopened like hash:)
 *   unix:passwd.byname, unix:group.byname   the system's users and groups
 *
 * Keys are NUL-terminated strings; they fold ASCII case unless the table is
 * opened with DICT_FLAG_CASE_SENSITIVE (tables must be built and read with
 * the same setting).  A lookup tells "not found" from "error": a mail
 * system defers mail when a table cannot be read, it must never bounce it.
 * Not thread-safe: a dict belongs to one thread.  doc/lookup-tables.md
 * describes the syntax and the on-disk encoding. */
#ifndef PETREL_DICT_H
#define PETREL_DICT_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include "str.h"

/* Longest key and value any table stores or returns.  A longer lookup key
 * is simply not found (no table can hold it); a longer stored value is
 * treated as damage. */
#define DICT_KEY_MAX	4096
#define DICT_VALUE_MAX	(1024 * 1024)

enum {
	/* Compare keys exactly instead of folding ASCII case. */
	DICT_FLAG_CASE_SENSITIVE = 1 << 0,
	/* Duplicate keys while building (texthash:, inline:, writer): the
	 * default keeps the first and warns; REPLACE keeps the last;
	 * ERROR makes texthash:/inline: fail to open. */
	DICT_FLAG_DUP_REPLACE = 1 << 1,
	DICT_FLAG_DUP_ERROR = 1 << 2,
	/* hash: check for a rebuilt file on every lookup rather than at most
	 * once a second. */
	DICT_FLAG_RECHECK_ALWAYS = 1 << 3,
};

/* Lookup result. */
enum dict_status {
	DICT_STAT_ERROR = -1,	/* table unreadable: defer, do not bounce */
	DICT_STAT_NOTFOUND = 0,
	DICT_STAT_FOUND = 1,
};

typedef struct dict dict_t;

/* Opens spec "type:name".  On failure returns NULL and sets err to a
 * one-line reason (unknown type, malformed spec, missing file, syntax
 * error as "file:line: ..."). */
dict_t *dict_open(const char *spec, int flags, str_t *err);
void dict_close(dict_t *d);

/* Looks key up.  *value (may be NULL) gets the value when found.  The
 * value stays valid until the next call on d (lookup, walk, refresh,
 * close); copy it to keep it. */
enum dict_status dict_get(dict_t *d, const char *key, const char **value);
/* Returns the value, or NULL when not found or on error; dict_error()
 * tells which. */
const char *dict_lookup(dict_t *d, const char *key);
/* True when the last lookup/walk/refresh failed; dict_errmsg says why. */
bool dict_error(const dict_t *d);
const char *dict_errmsg(const dict_t *d);

/* Calls fn for every entry (hash: in database order, texthash:/inline:
 * in file order).  fn returns 0 to go on, non-zero to stop.  Returns 0
 * when all entries were seen, 1 when fn stopped the walk, -1 on error
 * (dict_errmsg) or for a table that cannot be listed (static:). */
typedef int (*dict_walk_fn)(const char *key, const char *value, void *ctx);
int dict_walk(dict_t *d, dict_walk_fn fn, void *ctx);

/* hash: checks now whether the file was rebuilt and reopens it (otherwise
 * this happens by itself at most once a second).  Returns -1 when the
 * table is unreadable; other types return 0. */
int dict_refresh(dict_t *d);

/* After a chroot the file names of tables opened before it no longer
 * resolve (or name other files).  A process that chroots calls this once,
 * after the chroot: from then on a hash: table keeps the file it has open
 * and checks that file itself (fstat), at most once a second; when it was
 * replaced or changed, changed(spec) is called once for that table (the
 * daemon skeleton retires the process, and its successor opens the new
 * file before its own chroot) and the old contents keep being served
 * meanwhile.  changed may be NULL. */
void dict_set_jailed(void (*changed)(const char *spec));
bool dict_jailed(void);
void dict_report_changed(const char *spec);

const char *dict_spec(const dict_t *d);	/* "type:name" as opened */
const char *dict_type(const dict_t *d);
const char *dict_name(const dict_t *d);
int dict_flags(const dict_t *d);

/* Writing hash: tables (postmap, postalias).  A new table is built in a
 * temporary file next to the final one; commit makes it durable and
 * renames it over path.db in one step, so readers see the old or the new
 * table, never a mix. */
typedef struct dict_writer dict_writer_t;

enum dict_put_status {
	DICT_PUT_ERROR = -2,	/* bad key/value or I/O error (err) */
	DICT_PUT_DUPLICATE = -1,	/* key exists, first value kept */
	DICT_PUT_NEW = 0,
	DICT_PUT_REPLACED = 1,	/* key existed, DICT_FLAG_DUP_REPLACE */
};

/* spec is "hash:/path/file" (writes /path/file.db) or "lmdb:/path/file"
 * (/path/file.lmdb); flags: DICT_FLAG_CASE_SENSITIVE,
 * DICT_FLAG_DUP_REPLACE.  Mode 0644 less the umask. */
dict_writer_t *dict_writer_open(const char *spec, int flags, str_t *err);
enum dict_put_status dict_writer_put(dict_writer_t *w, const char *key,
    const char *value, str_t *err);
/* fsync, rename over the final file, fsync the directory; frees w.
 * Returns 0, or -1 with err set: the final file is untouched unless only
 * the directory fsync failed (the new table is then in place but the
 * rename may not survive a crash). */
int dict_writer_commit(dict_writer_t *w, str_t *err);
/* Discards the temporary file; frees w. */
void dict_writer_abort(dict_writer_t *w);
/* The temporary file being written (for messages). */
const char *dict_writer_path(const dict_writer_t *w);
/* The file commit will replace ("/path/file.db"). */
const char *dict_writer_target(const dict_writer_t *w);

/* The text format of texthash: and of postmap's input: logical lines as
 * in lines.h, with LINES_ANY_SPACE | LINES_VERBATIM.  Comment lines
 * (first non-blank character '#') and blank lines are skipped; a line
 * that starts with white space continues the logical line before it.
 * dict_text_lines() hands each logical line (trimmed) with the number of
 * its first physical line; dict_text_parse() splits it into key (first
 * token) and value (the rest, trimmed; it must not be empty).  A callback
 * returns 0 to go on, or -1 after setting err to stop.  Both return 0 on
 * success, -1 with err set ("file:line: reason" for syntax errors). */
typedef int (*dict_line_fn)(char *line, const char *file, int lineno,
    void *ctx, str_t *err);
typedef int (*dict_pair_fn)(const char *key, const char *value,
    const char *file, int lineno, void *ctx, str_t *err);
int dict_text_lines(const char *path, dict_line_fn fn, void *ctx, str_t *err);
int dict_text_parse(const char *path, dict_pair_fn fn, void *ctx, str_t *err);

/* ---- For back ends (dict_*.c) only. ---- */

struct dict {
	char *spec;		/* "type:name" */
	char *type;
	char *name;
	int flags;
	bool error;		/* the last call failed */
	str_t errmsg;
	str_t logged;		/* error last logged; empty when healthy */
	str_t keybuf;		/* folded key */
	/* key is folded already, non-empty and at most DICT_KEY_MAX. */
	enum dict_status (*get)(dict_t *d, const char *key, const char **value);
	int (*walk)(dict_t *d, dict_walk_fn fn, void *ctx);
	int (*refresh)(dict_t *d);
	void (*free)(dict_t *d);
	/* static: answers any key, even one no table could hold. */
	bool any_key;
	/* get receives the key as the caller wrote it (length-checked but
	 * not folded): regexp:/pcre: match case-insensitively themselves
	 * and substitute the original text, cidr: parses an address. */
	bool raw_key;
};

/* Allocates size bytes (a back end struct starting with struct dict) and
 * fills in the common part. */
dict_t *dict_alloc(size_t size, const char *spec, int flags);
/* Sets the error state and message (logged once while it persists). */
void dict_set_error(dict_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void dict_clear_error(dict_t *d);

/* Memory tables (texthash:, inline:): ordered, indexed by key. */
dict_t *dict_mem_new(const char *spec, int flags);
/* Adds a pair honouring the DUP flags; where ("file:line" or "") goes into
 * messages.  Returns -1 with err set when the pair is refused. */
int dict_mem_add(dict_t *d, const char *key, const char *value,
    const char *where, str_t *err);

/* The if/endif nesting of the rule tables (cidr:, regexp:, pcre:) while
 * their file is read: a stack of the open "if" rules, by their index
 * in the table, with the line each opened on.  Starts zeroed. */
typedef struct dict_nest {
	size_t *rule;
	int *line;
	size_t depth, cap;
} dict_nest_t;
/* An "if" rule (index rule) on line lineno opens. */
void dict_nest_push(dict_nest_t *n, size_t rule, int lineno);
/* An "endif" on line lineno of file: true with *rule the index of the
 * "if" it closes, or false with err "file:line: "endif" without "if"". */
bool dict_nest_pop(dict_nest_t *n, size_t *rule, const char *file,
    int lineno, str_t *err);
/* At the end of file: true when every "if" was closed, else false with
 * err "file:line: "if" without "endif"" for the innermost open one. */
bool dict_nest_closed(const dict_nest_t *n, const char *file, str_t *err);
void dict_nest_free(dict_nest_t *n);

/* Back end constructors, called by dict_open with the part after "type:". */
dict_t *dict_hash_open(const char *spec, const char *name, int flags, str_t *err);
dict_t *dict_texthash_open(const char *spec, const char *name, int flags, str_t *err);
dict_t *dict_inline_open(const char *spec, const char *name, int flags, str_t *err);
dict_t *dict_static_open(const char *spec, const char *name, int flags, str_t *err);
dict_t *dict_cidr_open(const char *spec, const char *name, int flags, str_t *err);
dict_t *dict_regexp_open(const char *spec, const char *name, int flags, str_t *err);
dict_t *dict_pcre_open(const char *spec, const char *name, int flags, str_t *err);
/* The results of a regexp: or pcre: table, rule by rule with the file
 * and line they come from (for a caller that checks what they say, as
 * cleanup does for header_checks actions).  fn returning non-zero stops
 * the walk (1).  -1 when d is not such a table, else 0. */
typedef int (*dict_result_fn)(const char *file, int line,
    const char *result, void *ctx);
int dict_pattern_results(dict_t *d, dict_result_fn fn, void *ctx);
dict_t *dict_lmdb_open(const char *spec, const char *name, int flags, str_t *err);
dict_t *dict_unix_open(const char *spec, const char *name, int flags, str_t *err);

/* Writers: each writable type fills in these operations. */
struct dict_writer {
	enum dict_put_status (*put)(dict_writer_t *w, const char *key,
	    const char *value, str_t *err);
	int (*commit)(dict_writer_t *w, str_t *err);
	void (*abort)(dict_writer_t *w);
	char *path;		/* final file */
	char *tmp;		/* what is written */
};
dict_writer_t *dict_hash_writer_open(const char *spec, const char *name,
    int flags, str_t *err);
dict_writer_t *dict_lmdb_writer_open(const char *spec, const char *name,
    int flags, str_t *err);
/* Checks a pair for a writer (err set, false when refused). */
bool dict_writer_check(const char *key, const char *value, str_t *err);
/* fsync a file, rename it over final, fsync the directory (writers). */
int dict_writer_install(const char *tmp, const char *final, str_t *err);
/* When a file opened before a chroot changed (jailed readers): fd is the
 * open file, st what it was when opened.  Reports once (*reported). */
void dict_jail_check(dict_t *d, int fd, const struct stat *st,
    const char *path, bool *reported);
bool dict_same_file(const struct stat *a, const struct stat *b);

/* The reopen rule of the tables read from one file (hash:, lmdb:).  At
 * a lookup or walk the file is looked at (stat) at most once a second,
 * every time with DICT_FLAG_RECHECK_ALWAYS, and always at dict_refresh()
 * (force).  A rebuilt file (dict_same_file() false) is opened anew and
 * replaces the one open ("reopened rebuilt file" is logged); one that
 * is gone or cannot be opened closes the table, whose lookups then fail
 * with the reason (why).  Jailed, the open file itself is watched
 * (dict_jail_check()).  Nothing is reopened while a walk is under way. */
typedef struct dict_file {
	char *path;		/* the file; owned */
	struct stat st;		/* of the file open now */
	time_t checked;		/* monotonic second of the last look */
	bool walking;		/* set by the back end around a walk */
	bool changed;		/* jailed: the change was reported */
	str_t why;		/* why nothing is open */
} dict_file_t;
typedef struct dict_file_ops {
	bool (*is_open)(dict_t *d);
	/* The open file's descriptor: 0, or -1. */
	int (*fd)(dict_t *d, int *fd);
	/* Opens path anew, *st from the opened file.  Either way closes
	 * what was open; true when the new one replaced it, false with
	 * why set (nothing open then). */
	bool (*reopen)(dict_t *d, struct stat *st, str_t *why);
	void (*close)(dict_t *d);
} dict_file_ops_t;
/* The file was just opened: takes path, st is what it is. */
void dict_file_init(dict_file_t *f, char *path, const struct stat *st);
/* 0, or -1 with the table's error set when nothing can be read. */
int dict_file_check(dict_t *d, dict_file_t *f, const dict_file_ops_t *ops,
    bool force);
void dict_file_release(dict_file_t *f);

/* Folds (unless DICT_FLAG_CASE_SENSITIVE) into buf; false for a key that
 * no table can hold (empty or longer than DICT_KEY_MAX). */
bool dict_fold_key(str_t *buf, const char *key, int flags);

#endif
