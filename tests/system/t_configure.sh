#! /usr/bin/env atf-sh
# Plain make on a machine without the libraries: configure (run by the
# GNUmakefile of a fresh tree) names what is missing and how to install
# it, instead of the build stopping at "db.h: No such file or directory".
# A compiler wrapper stands in for the missing headers.

SRC=@SRCDIR@

# fresh_tree: configure, Makefile.in and GNUmakefile, nothing configured.
fresh_tree() {
	mkdir tree
	cp "$SRC/configure" "$SRC/Makefile.in" "$SRC/GNUmakefile" tree/
}

# fakecc HEADER...: a compiler that has no such headers.
fakecc() {
	{
		echo '#!/bin/sh'
		echo 'for a in "$@"; do case $a in *.c)'
		for h in "$@"; do
			echo "grep -q '$h' \"\$a\" && { echo \"\$a:1:10: fatal error: $h: No such file or directory\" >&2; exit 1; }"
		done
		echo ';; esac; done'
		echo 'exec cc "$@"'
	} > fakecc
	chmod 755 fakecc
}

atf_test_case no_db
no_db_head() {
	atf_set descr "plain make without Berkeley DB: the message names db.h, libdb5.3-dev and tools/install-deps; no compile starts"
	atf_set require.progs cc make
}
no_db_body() {
	fresh_tree
	fakecc db.h
	command -v gmake >/dev/null && MAKE=gmake || MAKE=make
	(cd tree && CC=$PWD/../fakecc $MAKE) > make.out 2> make.err && atf_fail "make succeeded"
	grep -q "cannot build Petrel: missing Berkeley DB 5 (db.h, -ldb)$" make.err ||
	    { cat make.err >&2; atf_fail "no missing-library message"; }
	grep -q "sudo tools/install-deps" make.err || atf_fail "no install hint"
	grep -q "apt-get install libdb5.3-dev;" make.err || atf_fail "no Debian package name"
	! grep -q "fatal error" make.err || atf_fail "a compile failed instead"
	[ ! -f tree/Makefile ] || atf_fail "a Makefile was written anyway"
}

atf_test_case no_db_no_ssl
no_db_no_ssl_head() {
	atf_set descr "both libraries missing: both are named, with both Debian packages"
	atf_set require.progs cc
}
no_db_no_ssl_body() {
	fresh_tree
	fakecc db.h openssl/ssl.h
	(cd tree && ./configure CC=$PWD/../fakecc) > out 2> err && atf_fail "configure succeeded"
	grep -q "missing Berkeley DB 5 (db.h, -ldb), OpenSSL (openssl/ssl.h, -lssl)$" err ||
	    { cat err >&2; atf_fail "not both named"; }
	grep -q "apt-get install libdb5.3-dev libssl-dev;" err || atf_fail "packages"
}

atf_test_case present
present_head() {
	atf_set descr "with the libraries (this machine builds Petrel) configure succeeds and writes the Makefile"
	atf_set require.progs cc
}
present_body() {
	fresh_tree
	(cd tree && ./configure) > out 2> err || { cat err >&2; atf_fail "configure failed"; }
	! grep -q "cannot build" err || atf_fail "a library reported missing"
	[ -f tree/Makefile ] && [ -f tree/config.h ] || atf_fail "no Makefile or config.h"
}

atf_init_test_cases() {
	atf_add_test_case no_db
	atf_add_test_case no_db_no_ssl
	atf_add_test_case present
}
