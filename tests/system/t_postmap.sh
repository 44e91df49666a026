#! /usr/bin/env atf-sh
# postmap: build hash: tables atomically from text, query them (-q, -q -),
# list them (-s); errors name file:line and leave the old table alone; a
# reader that has the table open sees a rebuilt one without reopening.

BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
PM=$BIN/postmap

atf_test_case build_query
build_query_head() {
	atf_set descr "build, query (case-insensitive, first table that has the key), list"
}
build_query_body() {
	cat > t <<'EOF'
# a comment
Alice@Example.COM   relay:[mx.example.net]

example.org  smtp:
long  first part
	second part
EOF
	atf_check -s exit:0 -o empty -e empty $PM t
	test -f t.db || atf_fail "no t.db"
	atf_check -s exit:0 -o inline:"relay:[mx.example.net]\n" $PM -q alice@example.com t
	atf_check -s exit:0 -o inline:"relay:[mx.example.net]\n" $PM -q ALICE@EXAMPLE.COM hash:t
	atf_check -s exit:0 -o inline:"first part	second part\n" $PM -q long t
	atf_check -s exit:1 -o empty -e empty $PM -q nobody@example.com t
	atf_check -s exit:0 -o save:dump $PM -s t
	atf_check -s exit:0 -o inline:"alice@example.com relay:[mx.example.net]\nexample.org smtp:\nlong first part	second part\n" sort dump
	# several tables: the first one with the key answers
	printf 'example.org other:\nonly.here x\n' > u
	atf_check -s exit:0 $PM u
	atf_check -s exit:0 -o inline:"other:\n" $PM -q example.org u t
	atf_check -s exit:0 -o inline:"smtp:\n" $PM -q example.org t u
	atf_check -s exit:0 -o inline:"x\n" $PM -q only.here t u
	# no temporary files left behind
	atf_check -s exit:1 -o empty sh -c 'ls | grep tmp'
}

atf_test_case case_sensitive
case_sensitive_head() {
	atf_set descr "-f keeps the case of keys when building and querying"
}
case_sensitive_body() {
	printf 'Key value\n' > t
	atf_check -s exit:0 $PM -f t
	atf_check -s exit:0 -o inline:"value\n" $PM -f -q Key t
	atf_check -s exit:1 $PM -f -q key t
}

atf_test_case query_stdin
query_stdin_head() {
	atf_set descr "-q - answers one key a line, key and value, only the keys found"
}
query_stdin_body() {
	printf 'a 1\nb 2\n' > t
	atf_check -s exit:0 $PM t
	printf 'a\nzz\nB\n' > keys
	atf_check -s exit:0 -o inline:"a 1\nB 2\n" -x "$PM -q - t < keys"
	printf 'zz\n' > keys
	atf_check -s exit:1 -o empty -x "$PM -q - t < keys"
}

atf_test_case malformed
malformed_head() {
	atf_set descr "a malformed line gives file:line, a non-zero exit and an unchanged table"
}
malformed_body() {
	printf 'good old\n' > t
	atf_check -s exit:0 $PM t
	cp t.db t.db.before
	printf 'good new\n\nbadline\nother x\n' > t
	atf_check -s exit:1 -o empty -e match:"^postmap.*error: t:3: missing value for key \"badline\"" $PM t
	cmp -s t.db t.db.before || atf_fail "t.db changed after an error"
	atf_check -s exit:0 -o inline:"old\n" $PM -q good t
	# an indented first line continues nothing
	printf '  orphan x\n' > t2
	atf_check -s exit:1 -e match:"t2:1:" $PM t2
	test ! -e t2.db || atf_fail "t2.db created after an error"
	# a NUL byte in the source
	printf 'a b\nc \000d\n' > t3
	atf_check -s exit:1 -e match:"t3:2:" $PM t3
	atf_check -s exit:1 -o empty sh -c 'ls | grep tmp'
}

atf_test_case duplicates
duplicates_head() {
	atf_set descr "a duplicate key warns with file:line and keeps the first value; -r keeps the last"
}
duplicates_body() {
	printf 'k first\nK second\n' > t
	atf_check -s exit:0 -e match:"warning: t:2: duplicate key \"K\"" $PM t
	atf_check -s exit:0 -o inline:"first\n" $PM -q k t
	atf_check -s exit:0 -e empty $PM -r t
	atf_check -s exit:0 -o inline:"second\n" $PM -q k t
}

atf_test_case errors
errors_head() {
	atf_set descr "missing source, unsupported types, unreadable tables, usage"
}
errors_body() {
	atf_check -s exit:1 -e match:"nosuch: No such file" $PM nosuch
	printf 'a b\n' > t
	atf_check -s exit:1 -e match:"only hash: and lmdb: tables are built" $PM texthash:t
	atf_check -s exit:1 -e match:"only hash: and lmdb: tables are built" $PM cidr:t
	# texthash: can be queried, though
	atf_check -s exit:0 -o inline:"b\n" $PM -q a texthash:t
	# a table that was never built: an error (2), not "not found"
	atf_check -s exit:2 -e not-empty $PM -q a t
	atf_check -s exit:2 -e not-empty $PM -s t
	atf_check -s exit:64 -e match:usage $PM
	atf_check -s exit:64 -e match:usage $PM -q a -s t
	# a file that is not a Berkeley DB
	echo junk > j.db
	atf_check -s exit:2 -e not-empty $PM -q a j
}

atf_test_case rebuild_reader
rebuild_reader_head() {
	atf_set descr "a reader with the table open sees each rebuild (atomic replacement, automatic reopen)"
}
rebuild_reader_body() {
	printf 'key v1\n' > t
	atf_check -s exit:0 $PM t
	mkfifo in
	# The reader keeps the table open between questions, as a daemon does.
	$PM -q - t < in > answers 2> reader.err &
	echo $! > reader.pid
	exec 3> in
	echo key >&3
	grep_wait answers '^key v1$'
	for v in v2 v3 v4; do
		printf 'key %s\nother x\n' $v > t
		atf_check -s exit:0 $PM t
		# The reader looks at the file at most once a second.
		_ask() { echo key >&3; grep -q "^key $v\$" answers; }
		retry _ask || { cat answers; atf_fail "reader still has the old table ($v)"; }
	done
	! grep -v '^key v[1-4]$' answers || atf_fail "a reader saw something else"
	exec 3>&-
	wait_gone "$(cat reader.pid)" reader
	rm -f reader.pid
	grep -q "reopened rebuilt file" reader.err || atf_fail "no reopen logged"
	! grep -E "error|warning|fatal" reader.err || atf_fail "reader errors"
}

atf_test_case lmdb
lmdb_head() {
	atf_set descr "lmdb: tables: build, query, list, rebuild errors leave the old table"
}
lmdb_body() {
	$PM -q x lmdb:/nonexistent 2>&1 | grep -q "not supported by this build" &&
	    atf_skip "built without LMDB (liblmdb-dev)"
	printf 'Alice@Example.COM local:alice
bob  smtp:[relay]
' > t
	atf_check -s exit:0 -o empty -e empty $PM lmdb:t
	test -f t.lmdb || atf_fail "no t.lmdb"
	test -e t.lmdb-lock && atf_fail "a lock file was left"
	atf_check -s exit:0 -o inline:"local:alice\n" $PM -q ALICE@example.com lmdb:t
	atf_check -s exit:1 -o empty $PM -q carol lmdb:t
	atf_check -s exit:0 -o inline:"alice@example.com local:alice\nbob smtp:[relay]\n" $PM -s lmdb:t
	printf 'k v\nbroken\n' > t
	atf_check -s exit:1 -e match:"t:2: missing value" -e match:"t.lmdb not changed" $PM lmdb:t
	atf_check -s exit:0 -o inline:"smtp:[relay]\n" $PM -q bob lmdb:t
	atf_check -s exit:1 -o empty sh -c 'ls | grep tmp'
	# lmdb: beside hash:, the first table with the key answers
	printf 'bob other\n' > u
	atf_check -s exit:0 $PM u
	atf_check -s exit:0 -o inline:"other\n" $PM -q bob hash:u lmdb:t
}

atf_test_case pattern_tables
pattern_tables_head() {
	atf_set descr "-q on cidr:, regexp:, pcre: and unix: tables; syntax errors as file:line"
}
pattern_tables_body() {
	printf '10.0.0.0/8 ten\n2001:db8::/32 doc\n' > net
	atf_check -s exit:0 -o inline:"ten\n" $PM -q 10.1.2.3 cidr:net
	atf_check -s exit:0 -o inline:"doc\n" $PM -q 2001:db8::1 cidr:net
	atf_check -s exit:1 -o empty $PM -q 11.1.2.3 cidr:net
	printf '/^(.*)@example\\.com$/ user $1\n' > re
	atf_check -s exit:0 -o inline:"user Bob\n" $PM -q Bob@Example.COM regexp:re
	atf_check -s exit:2 -e match:"a cidr: table cannot be listed" $PM -s cidr:net
	printf '/ok/ fine\n/(broken/ x\n' > bad
	atf_check -s exit:2 -e match:"bad:2: bad regular expression" $PM -q a regexp:bad
	printf '10.0.0.1/8 x\n' > badnet
	atf_check -s exit:2 -e match:"badnet:1: non-zero host bits" $PM -q a cidr:badnet
	atf_check -s exit:0 -o match:"^root:[^:]*:0:0:" $PM -q root unix:passwd.byname
}

atf_init_test_cases() {
	atf_add_test_case lmdb
	atf_add_test_case pattern_tables
	atf_add_test_case build_query
	atf_add_test_case case_sensitive
	atf_add_test_case query_stdin
	atf_add_test_case malformed
	atf_add_test_case duplicates
	atf_add_test_case errors
	atf_add_test_case rebuild_reader
}
