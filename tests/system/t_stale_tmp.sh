#! /usr/bin/env atf-sh
# Stale temporary files (tmp.*, left by a writer killed in mid-write) are
# removed by petrel start and by qmgr every temp_file_max_age; never one
# a writer holds locked, a young one, one in maildrop/ (pickup's) or a
# spare.  doc/queue-file.md §4.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/queue.subr
. @SRCDIR@/tests/system/qmgr.subr

# hold_lock FILE: a live "writer" holds an fcntl lock on FILE until
# killed; its pid in $holder.
hold_lock() {
	rm -f locked
	python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
open("locked", "w").close()
time.sleep(120)' "$1" &
	holder=$!
	wait_for test -f locked || atf_fail "the lock holder did not start"
}

atf_test_case petrel_start cleanup
petrel_start_head() {
	atf_set descr "petrel start removes stale temporary files, not young, locked, maildrop or spare ones"
	atf_set require.user unprivileged
	atf_set require.progs python3
}
petrel_start_body() {
	mk_instance
	mcf "echo unix - n n - 1 TS"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc check
	mkdir -p q/spare
	for f in incoming/tmp.1.1.1 incoming/tmp.2.1.1 deferred/tmp.3.1.1 \
	    maildrop/tmp.4.1.1 spare/1NB6Q3P0B4K7G2 hold/tmp.5.1.1; do
		echo partial > q/$f
	done
	touch -d '2 hours ago' q/incoming/tmp.1.1.1 q/deferred/tmp.3.1.1 \
	    q/maildrop/tmp.4.1.1 q/spare/1NB6Q3P0B4K7G2 q/hold/tmp.5.1.1
	hold_lock q/deferred/tmp.3.1.1
	start_instance
	kill $holder
	test -f q/incoming/tmp.1.1.1 && atf_fail "stale incoming/tmp.1 kept"
	test -f q/hold/tmp.5.1.1 && atf_fail "stale hold/tmp.5 kept"
	test -f q/incoming/tmp.2.1.1 || atf_fail "young tmp.2 removed"
	test -f q/deferred/tmp.3.1.1 || atf_fail "locked tmp.3 removed"
	test -f q/maildrop/tmp.4.1.1 || atf_fail "maildrop tmp.4 removed (pickup's)"
	test -f q/spare/1NB6Q3P0B4K7G2 || atf_fail "spare removed"
	atf_check -s exit:0 -o match:'removed stale temporary file incoming/tmp.1.1.1$' cat maillog
	atf_check -s exit:0 -o match:'removed stale temporary file hold/tmp.5.1.1$' cat maillog
}
petrel_start_cleanup() {
	[ -n "$holder" ] && kill $holder 2>/dev/null
	stop_instance
}

atf_test_case qmgr_periodic cleanup
qmgr_periodic_head() {
	atf_set descr "qmgr removes a temporary file whose writer died once it is temp_file_max_age old, and looks again every temp_file_max_age"
	atf_set require.user unprivileged
	atf_set require.progs python3
}
qmgr_periodic_body() {
	qmgr_instance "temp_file_max_age = 1s"
	start_instance
	wait_for has_qmgr || atf_fail "qmgr did not start"
	# Both appear after petrel start and qmgr's own start: only the
	# periodic pass can remove them.
	echo partial > q/incoming/tmp.7.1.1
	echo partial > q/incoming/tmp.8.1.1
	hold_lock q/incoming/tmp.8.1.1
	WAIT_MAX=100 wait_for test ! -f q/incoming/tmp.7.1.1 ||
	    atf_fail "qmgr did not remove the stale tmp.7"
	atf_check -s exit:0 -o match:'qmgr.*removed stale temporary file incoming/tmp.7.1.1$' cat maillog
	# Two passes later the locked one is still there.
	sleep 2.5
	test -f q/incoming/tmp.8.1.1 || atf_fail "qmgr removed a locked file"
	kill $holder
	# Its writer gone, it goes too.
	WAIT_MAX=100 wait_for test ! -f q/incoming/tmp.8.1.1 ||
	    atf_fail "qmgr did not remove tmp.8 once unlocked"
	has_qmgr || atf_fail "qmgr died"
}
qmgr_periodic_cleanup() {
	[ -n "$holder" ] && kill $holder 2>/dev/null
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case petrel_start
	atf_add_test_case qmgr_periodic
}
