#! /usr/bin/env atf-sh
# Who writes the delivery lines (doc/logging.md): the delivery agent, for
# every recipient it reported, exactly once, after soft_bounce; qmgr only
# for what no agent reported (here: an agent that crashed).  With qmgr, the test agent and the error agent.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/queue.subr
. @SRCDIR@/tests/system/qmgr.subr

# lines_from PROG REGEX: how many maillog lines of PROG match REGEX.
lines_from() {
	grep -E "/$1\[[0-9]+\]: .*$2" maillog | wc -l | tr -d ' '
}

# once REGEX PROG: exactly one line matches REGEX, and it is PROG's.
once() {
	[ "$(grep -Ec -- "$1" maillog)" = 1 ] ||
	    { cat maillog >&2; atf_fail "not exactly one line '$1'"; }
	grep -E -- "$1" maillog | grep -Eq "/$2\[[0-9]+\]: " ||
	    { cat maillog >&2; atf_fail "'$1' is not $2's"; }
}

atf_test_case agents_log cleanup
agents_log_head() {
	atf_set descr "each recipient's to= line comes once, from the agent that delivered it (test-agent, error), with delays from the request; qmgr logs only what it decided (an agent's failure)"
	atf_set require.user unprivileged
}
agents_log_body() {
	require_test_agent
	[ -x $B/bin/error ] || atf_skip "error is not built"
	qmgr_instance
	id=$(inject -f sender@s.example -r ok@t.example -r defer@t.example \
	    -r bounce@t.example -r x@error.example -r crash@u.example) ||
	    atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $id || { cat maillog >&2; atf_fail "not deferred"; }
	once "$id: to=<ok@t.example>, relay=test-agent, delay=[0-9.]+, delays=[0-9.]+/[0-9.]+/0/[0-9.]+, dsn=2\.0\.0, status=sent \(" test-agent
	once "$id: to=<defer@t.example>, .*status=deferred \(" test-agent
	once "$id: to=<bounce@t.example>, .*status=bounced \(" test-agent
	once "$id: to=<x@error.example>, relay=[^,]*, .*dsn=5\.1\.1, status=bounced \(mailbox closed for the test\)" error
	# no reply from the agent: qmgr's verdict, qmgr's line
	once "$id: to=<crash@u.example>, relay=none, .*dsn=4\.3\.0, status=deferred \(delivery agent crashed" qmgr
	# qmgr's other lines stay its own, once
	once "$id: from=<sender@s.example>, size=[0-9]+, nrcpt=5 \(queue active\)" qmgr
	[ "$(lines_from qmgr ': to=<(ok|defer|bounce)@t.example>')" = 0 ] ||
	    atf_fail "qmgr logged an agent's verdict"
	assert_log_clean
}
agents_log_cleanup() {
	stop_instance
}

atf_test_case soft_bounce cleanup
soft_bounce_head() {
	atf_set descr "soft_bounce = yes: the agent logs a would-be bounce as deferred (4.x.x), never bounced, and the message stays queued"
	atf_set require.user unprivileged
}
soft_bounce_body() {
	require_test_agent
	qmgr_instance "soft_bounce = yes"
	id=$(inject -f sender@s.example -r bounce@t.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $id || { cat maillog >&2; atf_fail "not deferred"; }
	once "$id: to=<bounce@t.example>, relay=test-agent, .*dsn=4\.0\.0, status=deferred \(" test-agent
	! grep -q "status=bounced" maillog || { cat maillog >&2; atf_fail "a bounced line"; }
	assert_log_clean
}
soft_bounce_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case agents_log
	atf_add_test_case soft_bounce
}
