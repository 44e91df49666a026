#! /usr/bin/env atf-sh
# The layout check of the build (doc/build.md, "What may include and link
# what"): product code names headers by file name, so that the include
# paths of its folder decide what it can see.  Each case runs the
# Makefile's build/layout-ok rule on a small tree of its own, or
# tools/check-link-layout (the link side) on small archives.

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

# archive NAME FILE...: build/NAME.a from small C files under lk/.
archive() {
	_n=$1; shift
	mkdir -p lk/b
	for _f in "$@"; do
		cc -c -o lk/"${_f%.c}".o lk/"$_f" || atf_fail "cc $_f"
	done
	(cd lk && ar rcs b/"$_n".a $(for _f in "$@"; do echo "${_f%.c}.o"; done)) ||
	    atf_fail "ar $_n"
}

atf_test_case link_calls
link_calls_head() {
	atf_set descr "tools/check-link-layout: libsched calling into libglobal, or libutil into a program folder, through a prototype written by hand, is refused; calls downwards pass"
	atf_set require.progs cc ar nm
}
link_calls_body() {
	mkdir -p lk
	echo 'int util_f(void) { return 1; }' > lk/u.c
	echo 'int util_f(void); int sched_f(void) { return util_f(); }' > lk/s.c
	echo 'int util_f(void); int glob_f(void) { return util_f(); }' > lk/g.c
	echo 'int glob_f(void); int prog_f(void) { return glob_f(); }' > lk/p.c
	archive libutil u.c; archive libsched s.c; archive libglobal g.c
	archive libqmgr p.c
	atf_check "$SRC/tools/check-link-layout" lk/b lk/b/libqmgr.a
	# libsched calls libglobal
	echo 'int util_f(void); int glob_f(void); int sched_f(void) { return util_f() + glob_f(); }' > lk/s.c
	archive libsched s.c
	atf_check -s exit:1 -e match:'libsched.a calls glob_f' \
	    "$SRC/tools/check-link-layout" lk/b lk/b/libqmgr.a
	# libutil calls a program folder's function
	echo 'int util_f(void); int sched_f(void) { return util_f(); }' > lk/s.c
	archive libsched s.c
	echo 'int prog_f(void); int util_f(void) { return prog_f(); }' > lk/u.c
	archive libutil u.c
	atf_check -s exit:1 -e match:'libutil.a calls prog_f' \
	    "$SRC/tools/check-link-layout" lk/b lk/b/libqmgr.a
}

atf_init_test_cases() {
	atf_add_test_case by_name
	atf_add_test_case quoted_path
	atf_add_test_case angle_path
	atf_add_test_case link_calls
}
