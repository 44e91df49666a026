#! /usr/bin/env atf-sh
# Every program the build installs has a manual page in man/ (section 1
# for commands, 8 for daemons), and each page names itself.

B=@BUILDDIR@
SRC=@SRCDIR@

atf_test_case every_program
every_program_head() {
	atf_set descr "each program in build/bin has man/NAME.1 or man/NAME.8 whose .Dt names it"
}
every_program_body() {
	n=0
	for p in "$B"/bin/*; do
		[ -x "$p" ] || continue
		name=$(basename "$p")
		page=
		for s in 1 8; do
			[ -f "$SRC/man/$name.$s" ] && page=$SRC/man/$name.$s
		done
		[ -n "$page" ] || atf_fail "no manual page for $name (man/$name.1 or man/$name.8)"
		up=$(echo "$name" | tr 'a-z' 'A-Z')
		grep -q "^\.Dt $up [18]\$" "$page" || atf_fail "$page: .Dt does not name $up"
		n=$((n + 1))
	done
	[ $n -gt 10 ] || atf_fail "only $n programs in $B/bin: is the build there?"
}

atf_init_test_cases() {
	atf_add_test_case every_program
}
