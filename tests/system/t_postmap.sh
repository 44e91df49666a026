#! /usr/bin/env atf-sh
# postmap: build hash: tables atomically from text, query them (-q, -q -),
# list them (-s); errors name file:line and leave the old table alone; a
# reader that has the table open sees a rebuilt one without reopening;
# -i adds entries read from stdin, -d deletes keys, under the table's
# lock, and a running daemon sees the change.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr
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

atf_test_case incremental
incremental_head() {
	atf_set descr "-i adds the key value lines of stdin to an existing" \
	    "table (hash: and lmdb:), keeps the old entries, warns about a" \
	    "key it has (-r replaces it), creates a missing table, and a bad" \
	    "line leaves the table alone"
}
incremental_body() {
	for type in hash lmdb; do
		if [ $type = lmdb ] && $PM -q x lmdb:/nonexistent 2>&1 |
		    grep -q "not supported by this build"; then
			continue
		fi
		rm -f t t.db t.lmdb
		printf 'a 1\nB 2\n' > t
		atf_check -s exit:0 $PM $type:t
		printf 'c 3\nb 9\n' > in
		atf_check -s exit:0 -o empty -e match:'duplicate key "b"' \
		    $PM -i $type:t < in
		atf_check -s exit:0 -o inline:"a 1\nb 2\nc 3\n" -x "$PM -s $type:t | sort"
		atf_check -s exit:0 -o empty -e empty $PM -r -i $type:t < in
		atf_check -s exit:0 -o inline:"9\n" $PM -q b $type:t
		# The source file was not read: the table alone changed.
		atf_check -s exit:0 -o inline:"a 1\nB 2\n" cat t
		printf 'd 4\nbroken\n' > bad
		atf_check -s exit:1 -e match:"/dev/stdin:2: missing value" \
		    -e match:"not changed" $PM -i $type:t < bad
		atf_check -s exit:1 -o empty $PM -q d $type:t
		atf_check -s exit:0 -o inline:"3\n" $PM -q c $type:t
		# A table that does not exist yet is created.
		printf 'x y\n' | atf_check -s exit:0 $PM -i $type:new
		atf_check -s exit:0 -o inline:"y\n" $PM -q x $type:new
		rm -f new*
		atf_check -s exit:1 -o empty sh -c 'ls | grep tmp'
	done
	# One table at a time; not with -q, -s or -d.
	atf_check -s exit:64 -e match:"one table" $PM -i t t < in
	atf_check -s exit:64 -e match:usage $PM -i -s t < in
	atf_check -s exit:64 -e match:usage $PM -i -d a t < in
	# Only hash: and lmdb: are written.
	atf_check -s exit:1 -e match:"cannot update tables of type" $PM -i texthash:t < in
}

atf_test_case delete
delete_head() {
	atf_set descr "-d KEY and -d - delete keys (case folded unless -f)" \
	    "from every table named; exit 0 when one was found, 1 when none"
}
delete_body() {
	printf 'a 1\nb 2\nc 3\nd 4\n' > t
	printf 'a x\nz y\n' > u
	atf_check -s exit:0 $PM t u
	atf_check -s exit:0 -o empty -e empty $PM -d A t u
	atf_check -s exit:1 -o empty $PM -q a t u
	atf_check -s exit:0 -o inline:"y\n" $PM -q z u
	atf_check -s exit:1 -o empty -e empty $PM -d nothere t u
	printf 'b\n\nnothere\nC\n' > keys
	atf_check -s exit:0 -o empty -e empty $PM -d - t < keys
	atf_check -s exit:0 -o inline:"d 4\n" $PM -s t
	atf_check -s exit:1 -o empty -e empty $PM -d - t < keys
	# A table that does not exist is an error, not "not found".
	atf_check -s exit:2 -e match:"missing.db: No such file" $PM -d a missing
	# -f: keys as written.
	printf 'Key v\n' > f
	atf_check -s exit:0 $PM -f f
	atf_check -s exit:1 $PM -f -d key f
	atf_check -s exit:0 $PM -f -d Key f
	atf_check -s exit:0 -o empty $PM -s f
	if ! $PM -q x lmdb:/nonexistent 2>&1 | grep -q "not supported by this build"; then
		printf 'a 1\nb 2\n' > l
		atf_check -s exit:0 $PM lmdb:l
		atf_check -s exit:0 $PM -d a lmdb:l
		atf_check -s exit:0 -o inline:"b 2\n" $PM -s lmdb:l
	fi
}

atf_test_case concurrent_updates
concurrent_updates_head() {
	atf_set descr "20 postmap -i and a rebuild at once: the table's lock" \
	    "orders them, no update is lost, a reader always gets an answer"
}
concurrent_updates_body() {
	printf 'base 0\n' > t
	atf_check -s exit:0 $PM t
	mkfifo rin
	$PM -q - t < rin > answers 2> reader.err &
	echo $! > reader.pid
	exec 3> rin
	i=1
	while [ $i -le 20 ]; do
		(echo "k$i v$i" | $PM -i t 2> i$i.err; echo $? > i$i.rc) &
		echo base >&3
		i=$((i + 1))
	done
	wait_all() {
		for n in $(seq 1 20); do [ -s i$n.rc ] || return 1; done
	}
	WAIT_MAX=300 wait_for wait_all || atf_fail "updates did not finish"
	for n in $(seq 1 20); do
		atf_check_equal 0 "$(cat i$n.rc)"
		test ! -s i$n.err || { cat i$n.err; atf_fail "update $n: errors"; }
		atf_check -s exit:0 -o inline:"v$n\n" $PM -q k$n t
	done
	atf_check_equal 21 "$($PM -s t | wc -l | tr -d ' ')"
	exec 3>&-
	wait_gone "$(cat reader.pid)" reader
	rm -f reader.pid
	atf_check_equal 20 "$(grep -c '^base 0$' answers)"
	! grep -E "error|fatal" reader.err || atf_fail "reader errors"
	atf_check -s exit:1 -o empty sh -c 'ls | grep tmp'
}

atf_test_case update_running_daemon cleanup
update_running_daemon_head() {
	atf_set descr "smtpd of a running instance sees keys added with -i" \
	    "and removed with -d in its local_recipient_maps, without a reload"
}
update_running_daemon_body() {
	need_bash
	port=$(free_port)
	printf 'alice x\n' > users
	atf_check -s exit:0 $PM users
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test" \
	    "local_recipient_maps = hash:$PWD/users" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0"
	mcf "$port inet n - n - - smtpd" "cleanup unix n - n - 0 cleanup"
	start_instance
	printf 'HELO c\nMAIL FROM:<a@example.org>\nRCPT TO:<bob@mx.example.test>\nQUIT\n' > s
	atf_check -o match:"^550 5.1.1 <bob@mx.example.test>" bash chat.bash $port s
	echo 'bob x' | atf_check -s exit:0 $PM -i users
	# Tables are looked at again at most once a second.
	said() { bash chat.bash $port s > s.out; grep -q "$1" s.out; }
	WAIT_MAX=40 wait_for said '^250 2.1.5 Ok$' || { cat s.out; atf_fail "bob still refused"; }
	atf_check -s exit:0 $PM -d bob users
	WAIT_MAX=40 wait_for said '^550 5.1.1' || { cat s.out; atf_fail "bob still accepted"; }
	assert_log_clean
}
update_running_daemon_cleanup() {
	stop_instance
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
	atf_add_test_case incremental
	atf_add_test_case delete
	atf_add_test_case concurrent_updates
	atf_add_test_case update_running_daemon
}
