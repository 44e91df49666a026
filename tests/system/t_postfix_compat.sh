#! /usr/bin/env atf-sh
# Tables shared with Postfix: hash: (and lmdb:) files built by Postfix's
# own postmap/postalias are read by Petrel unchanged (Postfix stores keys
# and values with a trailing NUL), and Petrel's are read by Postfix.
# Postfix's tools run with -c on a private main.cf in the test directory;
# /etc/postfix is never touched.  Skipped when Postfix is not installed.

BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
PM=$BIN/postmap
PA=$BIN/postalias
PF_POSTMAP=/usr/sbin/postmap
PF_POSTALIAS=/usr/sbin/postalias

# Skips unless Postfix's tools are here; writes pf/main.cf.
need_postfix() {
	[ -x $PF_POSTMAP ] && [ -x $PF_POSTALIAS ] ||
	    atf_skip "Postfix is not installed ($PF_POSTMAP; tools/install-deps installs Debian's postfix)"
	# Postfix's postmap refuses to run as a different user than the
	# owner of its configuration in some setups: keep it ours.
	mkdir -p pf
	printf '# private configuration for Postfix tools in a test\ncompatibility_level = 3.6\n' > pf/main.cf
	PFC="-c $PWD/pf"
}

# pf_supports TYPE: Postfix was built with (or has the plugin for) TYPE.
pf_supports() {
	/usr/sbin/postconf $PFC -m 2>/dev/null | grep -qx "$1"
}

atf_test_case postfix_hash_read_by_petrel
postfix_hash_read_by_petrel_head() {
	atf_set descr "a hash: table built by Postfix's postmap is read by Petrel's postmap -q and -s"
}
postfix_hash_read_by_petrel_body() {
	need_postfix
	cat > transport <<'EOF2'
Example.COM     smtp:[mx.example.com]:2525
example.org     relay:[10.0.0.1]
long            first part
	second part
EOF2
	atf_check -s exit:0 -o empty $PF_POSTMAP $PFC hash:transport
	# Really written the Postfix way: the key has its trailing NUL.
	if command -v db5.3_dump >/dev/null 2>&1; then
		db5.3_dump -p transport.db | grep -q 'example.org\\00' ||
		    atf_fail "Postfix did not write keys with a NUL"
	fi
	atf_check -s exit:0 -o inline:"smtp:[mx.example.com]:2525\n" $PM -q example.com transport
	atf_check -s exit:0 -o inline:"smtp:[mx.example.com]:2525\n" $PM -q EXAMPLE.com hash:transport
	atf_check -s exit:0 -o inline:"relay:[10.0.0.1]\n" $PM -q example.org transport
	# a continuation line is kept as Postfix stored it
	$PF_POSTMAP $PFC -q long hash:transport > want
	atf_check -s exit:0 -o file:want $PM -q long transport
	atf_check -s exit:1 -o empty -e empty $PM -q example.net transport
	atf_check -s exit:0 -o save:dump $PM -s transport
	# Postfix separates key and value with a tab, Petrel with a space
	$PF_POSTMAP $PFC -s hash:transport | sed 's/	/ /' | sort > want
	atf_check -o file:want sort dump
}

atf_test_case postfix_aliases_read_by_petrel
postfix_aliases_read_by_petrel_head() {
	atf_set descr "an aliases.db built by Postfix's postalias works with Petrel's postalias -q (what local reads)"
}
postfix_aliases_read_by_petrel_body() {
	need_postfix
	cat > aliases <<'EOF2'
# Debian's default /etc/aliases, and more
mailer-daemon: postmaster
postmaster: root
nobody: root
hostmaster: root
Staff:  alice, bob,
	carol@example.org
pipe: "|/usr/bin/logger -t x"
EOF2
	atf_check -s exit:0 -o empty $PF_POSTALIAS $PFC aliases
	atf_check -s exit:0 -o inline:"root\n" $PA -q postmaster aliases
	atf_check -s exit:0 -o inline:"postmaster\n" $PA -q MAILER-DAEMON aliases
	atf_check -s exit:0 -o inline:"alice, bob, carol@example.org\n" $PA -q staff aliases
	atf_check -s exit:0 -o inline:"\"|/usr/bin/logger -t x\"\n" $PA -q pipe aliases
	atf_check -s exit:1 -o empty -e empty $PA -q alice aliases
	# Postfix adds its own "@" record; listing shows every alias.
	atf_check -s exit:0 -o save:dump $PA -s aliases
	grep -q '^postmaster: root$' dump || atf_fail "postmaster missing from the listing"
	grep -q '^staff: alice, bob, carol@example.org$' dump || atf_fail "staff missing"
}

atf_test_case petrel_tables_read_by_postfix
petrel_tables_read_by_postfix_head() {
	atf_set descr "hash: tables and aliases built by Petrel are read by Postfix's postmap/postalias -q"
}
petrel_tables_read_by_postfix_body() {
	need_postfix
	printf 'Example.COM smtp:[mx.example.com]\nexample.org relay:x\n' > transport
	atf_check -s exit:0 -o empty $PM transport
	atf_check -s exit:0 -o inline:"smtp:[mx.example.com]\n" $PF_POSTMAP $PFC -q example.com hash:transport
	atf_check -s exit:0 -o inline:"relay:x\n" $PF_POSTMAP $PFC -q EXAMPLE.ORG hash:transport
	atf_check -s exit:1 -o empty $PF_POSTMAP $PFC -q example.net hash:transport
	printf 'postmaster: root\nstaff: alice, bob\n' > aliases
	atf_check -s exit:0 -o empty $PA aliases
	atf_check -s exit:0 -o inline:"root\n" $PF_POSTALIAS $PFC -q postmaster hash:aliases
	atf_check -s exit:0 -o inline:"alice, bob\n" $PF_POSTALIAS $PFC -q staff hash:aliases
}

atf_test_case lmdb_both_ways
lmdb_both_ways_head() {
	atf_set descr "lmdb: tables built by Postfix are read by Petrel and the reverse (when Postfix has lmdb:)"
}
lmdb_both_ways_body() {
	need_postfix
	pf_supports lmdb || atf_skip "this Postfix has no lmdb: support (Debian: package postfix-lmdb)"
	$PM -q x lmdb:/nonexistent 2>&1 | grep -q "not supported by this build" &&
	    atf_skip "Petrel was built without LMDB"
	printf 'Key1 value one\nkey2 value two\n' > t
	atf_check -s exit:0 -o empty $PF_POSTMAP $PFC lmdb:t
	atf_check -s exit:0 -o inline:"value one\n" $PM -q key1 lmdb:t
	atf_check -s exit:0 -o inline:"value two\n" $PM -q KEY2 lmdb:t
	printf 'Key3 value three\n' > u
	atf_check -s exit:0 -o empty $PM lmdb:u
	atf_check -s exit:0 -o inline:"value three\n" $PF_POSTMAP $PFC -q key3 lmdb:u
}

atf_test_case regexp_cidr_same_answers
regexp_cidr_same_answers_head() {
	atf_set descr "regexp:, pcre: and cidr: tables give the answers Postfix gives for the same file"
}
regexp_cidr_same_answers_body() {
	need_postfix
	cat > re <<'EOF2'
# rules
/^(.*)@(example)\.com$/   user=$1 domain=${2}
!/@example\.org$/i        not-org
if /^a/
/b@/                      a-and-b
endif
/^postmaster@/            $$literal
EOF2
	cat > net <<'EOF2'
10.0.0.0/8        ten
192.168.1.0/24    lan
if 172.16.0.0/12
172.16.5.0/24     inner
endif
2001:db8::/32     doc6
0.0.0.0/0         any4
EOF2
	keys_re="Bob@EXAMPLE.com x@example.org X@EXAMPLE.ORG ab@example.org postmaster@example.org"
	types=regexp
	pf_supports pcre && types="$types pcre"
	for t in $types; do
		for k in $keys_re; do
			want=$($PF_POSTMAP $PFC -q "$k" $t:re) ; wrc=$?
			got=$($PM -q "$k" $t:re) ; grc=$?
			[ "$want" = "$got" ] && [ $wrc = $grc ] ||
			    atf_fail "$t: $k: Postfix says '$want' ($wrc), Petrel '$got' ($grc)"
		done
	done
	for k in 10.1.2.3 192.168.1.9 192.168.2.9 172.16.5.1 172.17.0.1 2001:db8::5 2001:db9::1 8.8.8.8; do
		want=$($PF_POSTMAP $PFC -q "$k" cidr:net) ; wrc=$?
		got=$($PM -q "$k" cidr:net) ; grc=$?
		[ "$want" = "$got" ] && [ $wrc = $grc ] ||
		    atf_fail "cidr: $k: Postfix says '$want' ($wrc), Petrel '$got' ($grc)"
	done
}

atf_init_test_cases() {
	atf_add_test_case postfix_hash_read_by_petrel
	atf_add_test_case postfix_aliases_read_by_petrel
	atf_add_test_case petrel_tables_read_by_postfix
	atf_add_test_case lmdb_both_ways
	atf_add_test_case regexp_cidr_same_answers
}
