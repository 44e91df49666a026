#! /usr/bin/env atf-sh
# The side-by-side benchmark (bench/bench.py, doc/performance.md) at a
# tiny size, so that it cannot rot: it runs, every row of its table is
# there with a number in it, no run failed, and the machine's own Postfix
# (configuration and running state) is as it was.  No performance figure
# is ever checked.
#
# As root with Debian's postfix installed both sides run.  Otherwise the
# Petrel side alone is checked and the test ends skipped, saying what it
# did not check.

BUILDDIR=@BUILDDIR@
SRCDIR=@SRCDIR@

WORKLOADS="relay local bulk-same bulk-other busy"
DAEMONS="master smtpd cleanup qmgr smtp local bounce trivial-rewrite"
PROCS="smtpd cleanup smtp local bounce trivial-rewrite others total"

# rows WORKLOAD: the metric labels the table must have for it, one a line.
rows() {
	case $1 in
	relay | local)
		u=msg
		echo "msg/s"
		;;
	bulk-*)
		u=rcpt
		echo "small msgs: median latency s"
		echo "bulk msg: completion s"
		;;
	busy)
		u=rcpt
		echo "first-pass deferral ratio"
		echo "completion s"
		echo "msg/s"
		;;
	esac
	for d in total $DAEMONS others; do echo "CPU s/1k $u: $d"; done
	for d in $PROCS; do echo "peak processes: $d"; done
	echo "PSS MiB: peak"
	echo "PSS MiB: median"
	echo "fsync+fdatasync per $u"
	echo "SMTP connections to the sink(s)"
}

# cell "WORKLOAD LABEL" N: column N (1 Postfix, 2 Petrel, 3 ratio,
# 4 better) of that row of table.out; MISSING if there is no such row.
cell() {
	awk -v key="$1" -v col="$2" '
		NF >= 5 {
			label = $1
			for (i = 2; i <= NF - 4; i++) label = label " " $i
			if (label == key) { print $(NF - 4 + col); found = 1; exit }
		}
		END { if (!found) print "MISSING" }' table.out
}

numeric() {
	echo "$1" | grep -Eq '^-?[0-9]+(\.[0-9]+)?$'
}

# The machine's Postfix: its configuration files and whether it runs.
system_postfix() {
	if [ -d /etc/postfix ]; then
		find /etc/postfix -newer started.mark -print 2>/dev/null | sed 's/^/changed: /'
	fi
	if [ -x /usr/sbin/postfix ] && [ -f /etc/postfix/main.cf ]; then
		/usr/sbin/postfix status >/dev/null 2>&1 && echo "system postfix: running" ||
		    echo "system postfix: not running"
	fi
	true
}

atf_test_case tiny
tiny_head() {
	atf_set descr "bench/bench.py --size tiny: the table has every row with numbers; the machine's Postfix untouched"
	atf_set require.progs python3
	# Another benchmark may hold the lock for up to 120 s.
	atf_set timeout 300
}
tiny_body() {
	# The MTAs' own users (postfix, petrel, petrelbench) must reach the
	# work directory.
	chmod 755 .
	touch started.mark
	sleep 1
	system_postfix > before.txt
	python3 -B "$SRCDIR/bench/bench.py" --build "$BUILDDIR" --size tiny \
	    --work "$PWD/w" --lock-wait 120 > table.out 2> bench.err
	rc=$?
	[ $rc = 75 ] && atf_skip "another benchmark held the lock for 120 s"
	if [ $rc != 0 ]; then
		cat bench.err table.out >&2
		atf_fail "bench.py exited $rc"
	fi
	cat table.out

	both=no
	grep -q '^Postfix   not run' table.out || both=yes
	root=no
	[ "$(id -u)" = 0 ] && root=yes

	for h in date commit machine disk Postfix Petrel sizes; do
		grep -q "^$h " table.out || atf_fail "no '$h' line in the table's header"
	done
	if grep -E '^- round [0-9]+ ' table.out >&2; then
		atf_fail "a run failed (the notes above)"
	fi
	bad=0
	for w in $WORKLOADS; do
		rows $w > rows.txt
		while IFS= read -r label; do
			pf=$(cell "$w $label" 1)
			pt=$(cell "$w $label" 2)
			ratio=$(cell "$w $label" 3)
			better=$(cell "$w $label" 4)
			case $pt in
			MISSING) echo "missing row: $w $label" >&2; bad=1; continue ;;
			esac
			# fsync counts need root (perf); everything else has a number.
			if ! numeric "$pt"; then
				case "$root $label $pt" in
				"no fsync"*" n/a") ;;
				*) echo "$w $label: Petrel '$pt'" >&2; bad=1 ;;
				esac
			fi
			if [ $both = yes ]; then
				numeric "$pf" || { echo "$w $label: Postfix '$pf'" >&2; bad=1; }
				numeric "$ratio" || [ "$ratio" = - ] || [ "$ratio" = n/a ] ||
				    { echo "$w $label: ratio '$ratio'" >&2; bad=1; }
			else
				[ "$pf" = n/a ] || { echo "$w $label: Postfix '$pf' without Postfix" >&2; bad=1; }
			fi
			case $better in
			higher | lower) ;;
			*) echo "$w $label: better '$better'" >&2; bad=1 ;;
			esac
		done < rows.txt
	done
	[ $bad = 0 ] || atf_fail "the table is incomplete (above)"

	# The Petrel instances' logs: no sanitizer report (SANITIZE=1 builds).
	if grep -l -E 'Sanitizer|runtime error:' w/runs/*petrel*/mta/maillog >&2 2>/dev/null; then
		atf_fail "sanitizer report in a Petrel maillog"
	fi

	system_postfix > after.txt
	if ! cmp -s before.txt after.txt; then
		diff before.txt after.txt >&2
		atf_fail "the machine's Postfix changed during the benchmark"
	fi

	if [ $both = no ]; then
		why=$(sed -n 's/^Postfix   not run: //p' table.out)
		what="the Postfix column"
		[ $root = yes ] || what="$what, the exact CPU totals (cgroups) and the fsync counts (perf)"
		atf_skip "checked the Petrel side only ($why): $what not checked"
	fi
}

atf_init_test_cases() {
	atf_add_test_case tiny
}
