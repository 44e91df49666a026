#! /usr/bin/env atf-sh
# qmgr when things go wrong: delivery agents that crash, hang or answer
# garbage, a transport that keeps failing, a refusing destination (dead
# destinations and the destination status cache end to end), unknown
# transports and unresolvable addresses.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/queue.subr
. @SRCDIR@/tests/system/qmgr.subr

atf_test_case agent_failures cleanup
agent_failures_head() {
	atf_set descr "an agent that crashes, hangs or answers garbage: its recipients deferred with the reason, qmgr lives on, the transport is suspended"
	atf_set require.user unprivileged
	atf_set timeout 120
}
agent_failures_body() {
	require_test_agent
	qmgr_instance "test2_time_limit = 1s" "qmgr_ipc_timeout = 1s" \
	    "transport_retry_time = 3600s"
	start_instance
	p=$(qmgr_pid)
	c=$(inject -r crash@u.example) || atf_fail "mkqfile"
	h=$(inject -r hang@u.example) || atf_fail "mkqfile"
	g=$(inject -r garbage@u.example) || atf_fail "mkqfile"
	flush
	for id in $c $h $g; do
		WAIT_MAX=150 wait_for in_queue deferred $id || atf_fail "$id not deferred"
	done
	grep -q "$c: to=<crash@u.example>, relay=none, .*dsn=4.3.0, status=deferred (delivery agent crashed" maillog ||
	    atf_fail "crash reason"
	grep -q "$h: to=<hang@u.example>, relay=none, .*status=deferred (delivery agent timed out" maillog ||
	    atf_fail "hang reason"
	grep -q "$g: to=<garbage@u.example>, relay=none, .*status=deferred (malformed reply from delivery agent" maillog ||
	    atf_fail "garbage reason"
	# the reasons are in the defer logs too
	grep -aq 'delivery agent crashed' $(find q/defer -name $c -type f) ||
	    atf_fail "defer log of the crash"
	# the same qmgr process
	test "$(qmgr_pid)" = "$p" || atf_fail "qmgr restarted"
	# three failures in a row: the transport is suspended, its mail
	# deferred without an agent
	in_log "transport test2: 3 delivery agent failures in a row" ||
	    atf_fail "transport not suspended"
	n=$(wc -l < agent.log)
	ok=$(inject -r ok@u.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for in_queue deferred $ok || atf_fail "not deferred"
	grep -q "$ok: to=<ok@u.example>, relay=none, .*status=deferred (delivery temporarily suspended: " maillog ||
	    atf_fail "suspended transport reason"
	test "$(wc -l < agent.log)" -eq $n || atf_fail "an agent was asked"
	# the other transport is not affected
	ok2=$(inject -r ok@t.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for in_log "$ok2: removed" || atf_fail "other transport"
	# a flush lifts the suspension
	flush
	WAIT_MAX=100 wait_for in_log "$ok: removed" || atf_fail "not delivered after flush"
	test "$(qmgr_pid)" = "$p" || atf_fail "qmgr restarted"
	assert_log_clean
}
agent_failures_cleanup() {
	stop_instance
}

atf_test_case no_agent cleanup
no_agent_head() {
	atf_set descr "a transport whose agent cannot be reached: deferred, qmgr lives on"
	atf_set require.user unprivileged
}
no_agent_body() {
	require_test_agent
	qmgr_instance
	echo "gone.example	gone" >> etc/transport
	echo "gone unix - n n - - /nonexistent/agent" >> etc/master.cf
	# petrel start refuses a missing program; an agent that is gone at
	# run time is what this is about.
	start_master_unchecked
	id=$(inject -r x@gone.example) || atf_fail "mkqfile"
	flush
	WAIT_MAX=150 wait_for in_queue deferred $id || atf_fail "not deferred"
	grep -q "$id: to=<x@gone.example>, relay=none, .*status=deferred (delivery agent" maillog ||
	    atf_fail "reason"
	has_qmgr || atf_fail "qmgr died"
	assert_log_clean
}
no_agent_cleanup() {
	stop_instance
}

atf_test_case dead_destination cleanup
dead_destination_head() {
	atf_set descr "a refusing destination is tried a bounded number of times; its other mail is deferred with 'delivery temporarily suspended'"
	atf_set require.user unprivileged
	atf_set timeout 120
}
dead_destination_body() {
	require_test_agent
	qmgr_instance "initial_destination_concurrency = 2"
	ids=
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		ids="$ids $(inject -r conn-fail+$i@dead.example)" || atf_fail "mkqfile"
	done
	# a healthy destination of the same transport
	okid=$(inject -r ok@t.example) || atf_fail "mkqfile"
	start_instance
	for id in $ids; do
		WAIT_MAX=150 wait_for in_queue deferred $id || atf_fail "$id not deferred"
	done
	WAIT_MAX=100 wait_for in_log "$okid: removed" || atf_fail "other destination"
	tries=$(count ' dead.example ' agent.log)
	suspended=$(count 'to=<conn-fail+[0-9]*@dead.example>.*status=deferred (delivery temporarily suspended: connect to dead.example: Connection refused)' maillog)
	echo "attempts $tries, suspended $suspended" >&2
	# window 2, one failed cohort allowed: a handful of attempts
	[ $tries -ge 1 ] && [ $tries -le 4 ] || atf_fail "$tries attempts"
	test $((tries + suspended)) -eq 12 || atf_fail "$tries attempts + $suspended suspended"
	# a flush forgets the dead destination: tried again, bounded again
	flush
	WAIT_MAX=150 wait_for lines_ge $((tries + 1)) ' dead.example ' agent.log ||
	    atf_fail "not tried after flush"
	for id in $ids; do
		WAIT_MAX=150 wait_for lines_ge 2 "$id: to=" maillog || atf_fail "$id not retried"
	done
	tries2=$(count ' dead.example ' agent.log)
	[ $((tries2 - tries)) -le 4 ] || atf_fail "$((tries2 - tries)) attempts after flush"
	# new mail for the dead site is deferred at once, without an agent
	late=$(inject -r ok@dead.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for in_queue deferred $late || atf_fail "late not deferred"
	in_log "$late: to=<ok@dead.example>, relay=none, .*dsn=4.4.1, status=deferred (delivery temporarily suspended" ||
	    atf_fail "late reason"
	test $(count ' ok@dead.example ' agent.log) -eq 0 || atf_fail "late was tried"
	assert_log_clean
}
dead_destination_cleanup() {
	stop_instance
}

atf_test_case site_fail cleanup
site_fail_head() {
	atf_set descr "an agent that asks to avoid a site: its mail is suspended after the first failure"
	atf_set require.user unprivileged
}
site_fail_body() {
	require_test_agent
	qmgr_instance "initial_destination_concurrency = 1"
	first=$(inject -r site-fail@dead.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $first || atf_fail "not deferred"
	ids=
	for i in 1 2 3 4; do
		ids="$ids $(inject -r ok+$i@dead.example)" || atf_fail "mkqfile"
	done
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	for id in $ids; do
		WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "$id not deferred"
		in_log "$id: to=<ok+[0-9]@dead.example>.*status=deferred (delivery temporarily suspended: connect to dead.example: Connection refused)" ||
		    atf_fail "$id reason"
	done
	test $(count ' dead.example ' agent.log) -eq 1 || atf_fail "site tried again"
	assert_log_clean
}
site_fail_cleanup() {
	stop_instance
}

atf_test_case unroutable cleanup
unroutable_head() {
	atf_set descr "a transport that is not in master.cf defers; an address that cannot be resolved bounces"
	atf_set require.user unprivileged
}
unroutable_body() {
	require_test_agent
	qmgr_instance
	echo "nowhere.example	nosuch" >> etc/transport
	id=$(inject -r a@nowhere.example -r 'b@bad..example' -r ok@t.example) ||
	    atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred"
	in_log "$id: to=<a@nowhere.example>, relay=none, .*status=deferred (mail transport unavailable" ||
	    atf_fail "unknown transport"
	in_log "$id: to=<b@bad..example>, relay=none, .*dsn=5\.1\.[23], status=bounced (" ||
	    atf_fail "bad address"
	in_log "$id: to=<ok@t.example>.*status=sent" || atf_fail "good recipient"
	atf_check -s exit:0 -o save:cat.out $POSTCAT $(qpath deferred $id)
	grep -q '^done_recipient: b@bad..example$' cat.out || atf_fail "bounced not done"
	grep -q '^recipient: a@nowhere.example$' cat.out || atf_fail "deferred done"
	has_qmgr || atf_fail "qmgr died"
	assert_log_clean
}
unroutable_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case agent_failures
	atf_add_test_case no_agent
	atf_add_test_case dead_destination
	atf_add_test_case site_fail
	atf_add_test_case unroutable
}
