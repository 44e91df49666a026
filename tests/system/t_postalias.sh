#! /usr/bin/env atf-sh
# postalias: aliases(5) files -> hash: tables.  Names (quoted or not,
# case-insensitive), continuation lines, every kind of target kept as
# written, :include: included; a bad entry names file:line and leaves the
# table alone.

BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
PA=$BIN/postalias

atf_test_case build_query
build_query_head() {
	atf_set descr "every target kind, quoted names, continuation lines, case-insensitive names"
}
build_query_body() {
	cat > aliases <<'EOF'
# Standard aliases
postmaster:	root
MAILER-DAEMON: postmaster
root: alice, \root
staff: alice, bob,
	carol@example.org,
	"|/usr/bin/logger -t staff, mail",
	/var/log/staff.mbox
"john doe" : john
archive:  /srv/archive/Maildir/
lists : :include:/etc/petrel/lists.txt
weird: "john smith"@example.com, <dan@example.net>
EOF
	atf_check -s exit:0 -o empty -e empty $PA aliases
	atf_check -s exit:0 -o inline:"root\n" $PA -q postmaster aliases
	atf_check -s exit:0 -o inline:"postmaster\n" $PA -q mailer-daemon aliases
	atf_check -s exit:0 -o inline:"alice, \\\\root\n" $PA -q ROOT aliases
	atf_check -s exit:0 -o inline:"alice, bob,	carol@example.org,	\"|/usr/bin/logger -t staff, mail\",	/var/log/staff.mbox\n" \
	    $PA -q staff aliases
	atf_check -s exit:0 -o inline:"john\n" $PA -q "John Doe" aliases
	atf_check -s exit:0 -o inline:"/srv/archive/Maildir/\n" $PA -q archive aliases
	atf_check -s exit:0 -o inline:":include:/etc/petrel/lists.txt\n" $PA -q lists aliases
	atf_check -s exit:1 -o empty $PA -q nobody aliases
	atf_check -s exit:0 -o save:dump $PA -s aliases
	grep -qx "john doe: john" dump || { cat dump; atf_fail "-s: no john doe"; }
	test "$(wc -l < dump)" -eq 8 || { cat dump; atf_fail "-s: wrong entry count"; }
}

atf_test_case malformed
malformed_head() {
	atf_set descr "bad entries: file:line, a non-zero exit, the old table kept"
}
malformed_body() {
	printf 'a: b\n' > aliases
	atf_check -s exit:0 $PA aliases
	cp aliases.db before.db
	check_bad() {
		printf "$1" > aliases
		atf_check -s exit:1 -o empty -e match:"error: aliases:$2: $3" $PA aliases
		cmp -s aliases.db before.db || atf_fail "aliases.db changed after: $1"
	}
	check_bad 'a: c\nnocolon\n' 2 'missing ":" after alias name'
	check_bad 'a: c\n\n# x\nfoo bar: x\n' 4 'alias name "foo bar" contains white space'
	check_bad 'empty:\n' 1 'missing value for alias "empty"'
	check_bad 'empty:  ,  ,\n' 1 'no target for alias "empty"'
	check_bad '"open: x\n' 1 'unterminated quoted alias name'
	check_bad 'a: "|cmd\n' 1 'unterminated quoted string'
	check_bad 'a: b,\n  |\n' 1 'empty command'
	check_bad 'a: :include:relative\n' 1 ':include: needs an absolute path'
	check_bad 'a: b@@c\n' 1 'bad address'
	check_bad ': x\n' 1 'empty alias name'
	check_bad '  a: x\n' 1 ''
	atf_check -s exit:0 -o inline:"b\n" $PA -q a aliases
	atf_check -s exit:1 -o empty sh -c 'ls | grep tmp'
}

atf_test_case duplicates
duplicates_head() {
	atf_set descr "a name given twice warns with file:line; the first entry wins"
}
duplicates_body() {
	printf 'a: first\nA: second\n' > aliases
	atf_check -s exit:0 -e match:"warning: aliases:2: duplicate key" $PA aliases
	atf_check -s exit:0 -o inline:"first\n" $PA -q a aliases
}

atf_test_case sendmail_bi
sendmail_bi_head() {
	atf_set descr "newaliases rebuilds each table of alias_database (when sendmail is built)"
}
sendmail_bi_body() {
	[ -x "$BIN/sendmail" ] || atf_skip "sendmail is not built yet"
	mkdir etc
	printf 'x: y\n' > a1
	printf 'z: w\n' > a2
	cat > etc/main.cf <<EOF
alias_database = hash:$PWD/a1, hash:$PWD/a2
command_directory = $BIN
queue_directory = $PWD/q
EOF
	atf_check -s exit:0 -o ignore -e ignore env MAIL_CONFIG=$PWD/etc $BIN/sendmail -bi
	atf_check -s exit:0 -o inline:"y\n" $PA -q x a1
	atf_check -s exit:0 -o inline:"w\n" $PA -q z a2
}

atf_test_case incremental_delete
incremental_delete_head() {
	atf_set descr "-i adds aliases(5) entries from stdin (each checked," \
	    "a bad one changes nothing), -d and -d - delete names"
}
incremental_delete_body() {
	printf 'postmaster: root\nstaff: alice, bob\n' > aliases
	atf_check -s exit:0 $PA aliases
	printf 'Webmaster: alice\nlist: bob,\n\tcarol\n' > in
	atf_check -s exit:0 -o empty -e empty $PA -i aliases < in
	atf_check -s exit:0 -o inline:"alice\n" $PA -q webmaster aliases
	atf_check -s exit:0 -o inline:"bob,	carol\n" $PA -q list aliases
	atf_check -s exit:0 -o inline:"root\n" $PA -q postmaster aliases
	printf 'ok: alice\nbad: "|unterminated\n' > bad
	atf_check -s exit:1 -e match:"/dev/stdin:2:" -e match:"not changed" $PA -i aliases < bad
	atf_check -s exit:1 -o empty $PA -q ok aliases
	atf_check -s exit:0 -o empty -e empty $PA -d STAFF aliases
	atf_check -s exit:1 -o empty $PA -q staff aliases
	atf_check -s exit:1 $PA -d staff aliases
	printf 'webmaster\nlist\n' | atf_check -s exit:0 $PA -d - aliases
	atf_check -s exit:0 -o inline:"postmaster: root\n" $PA -s aliases
}

atf_init_test_cases() {
	atf_add_test_case build_query
	atf_add_test_case malformed
	atf_add_test_case duplicates
	atf_add_test_case sendmail_bi
	atf_add_test_case incremental_delete
}
