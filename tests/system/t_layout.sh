#! /usr/bin/env atf-sh
# The layout check of the build (doc/build.md, "What may include and link
# what"): product code names headers by file name, so that the include
# paths of its folder decide what it can see.  Each case runs the
# Makefile's build/layout-ok rule on a small tree of its own.

SRC=@SRCDIR@

# check FILE LINE: FILE (under a fresh tree) holds LINE; runs the layout
# rule of the project's Makefile there, output in out and err.
check() {
	mkdir -p tree/"$(dirname "$1")"
	printf '%s\nint x;\n' "$2" > tree/"$1"
	command -v gmake >/dev/null && MAKE=gmake || MAKE=make
	(cd tree && $MAKE -s -f "$SRC/Makefile" B="$PWD/b" "$PWD/b/layout-ok") \
	    > out 2> err
}

atf_test_case by_name
by_name_head() {
	atf_set descr "headers named by file name, and system headers, pass"
	atf_set require.progs make
}
by_name_body() {
	check libsched/a.c '#include "sched.h"' ||
	    { cat err >&2; atf_fail "a header by name refused"; }
	check qmgr/b.c '#include <sys/socket.h>' ||
	    { cat err >&2; atf_fail "a system header refused"; }
	[ -f tree/b/layout-ok ] || atf_fail "no stamp"
}

atf_test_case quoted_path
quoted_path_head() {
	atf_set descr "\"../libglobal/dns.h\" in libsched stops the build"
	atf_set require.progs make
}
quoted_path_body() {
	check libsched/a.c '#include "../libglobal/dns.h"' &&
	    atf_fail "the layout check let it through"
	grep -q 'include product headers by file name' err ||
	    { cat err >&2; atf_fail "no layout message"; }
	grep -q 'libglobal/dns.h' out || atf_fail "the line is not shown"
}

atf_test_case angle_path
angle_path_head() {
	atf_set descr "<../libglobal/dns.h> (found through -Ilibutil) and an absolute <...> path stop the build too"
	atf_set require.progs make
}
angle_path_body() {
	check libsched/a.c '#include <../libglobal/dns.h>' &&
	    atf_fail "<../libglobal/dns.h> let through"
	grep -q 'include product headers by file name' err ||
	    { cat err >&2; atf_fail "no layout message"; }
	grep -q 'libglobal/dns.h' out || atf_fail "the line is not shown"
	rm -rf tree
	check smtp/b.c '#  include </usr/include/stdio.h>' &&
	    atf_fail "an absolute <...> path let through"
	grep -q 'include </usr/include/stdio.h>' out ||
	    atf_fail "the line is not shown"
}

atf_init_test_cases() {
	atf_add_test_case by_name
	atf_add_test_case quoted_path
	atf_add_test_case angle_path
}
