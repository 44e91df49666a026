#! /usr/bin/env atf-sh
# The delivery agents under master: discard, error, retry and the scripted
# test-agent answer the delivery protocol (doc/protocol-delivery.md).

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr

CALL=$B/tests/tools/dlv-call
AGENT=$B/tests/tools/test-agent

# agents_instance [master.cf lines...]: discard, error, retry and test.
agents_instance() {
	mk_instance
	mcf "discard unix - n n - - discard" \
	    "error unix - n n - - error" \
	    "retry unix - n n - - error" \
	    "defer2 unix - n n - - error retry" \
	    "test unix - n n - - $AGENT log=$PWD/agent.log" \
	    "$@"
	start_instance
}

atf_test_case pseudo_transports cleanup
pseudo_transports_head() {
	atf_set descr "discard delivers, error bounces, retry defers, with the nexthop text"
	atf_set require.user unprivileged
}
pseudo_transports_body() {
	agents_instance
	atf_check -s exit:0 -o inline:"flags=0 reason=\na@x delivered 2.0.0 none spam trap\nb@y delivered 2.0.0 none spam trap\n" \
	    $CALL q/private/discard "spam trap" a@x b@y
	atf_check -s exit:0 -o inline:"flags=0 reason=\na@x failed 5.1.1 none mailbox closed\n" \
	    $CALL q/private/error "5.1.1 mailbox closed" a@x
	# no code, or one of the wrong class: 5.0.0 and the whole text
	atf_check -s exit:0 -o inline:"flags=0 reason=\na@x failed 5.0.0 none 4.1.1 odd\n" \
	    $CALL q/private/error "4.1.1 odd" a@x
	atf_check -s exit:0 -o inline:"flags=0 reason=\na@x delayed 4.3.2 none system down for maintenance\n" \
	    $CALL q/private/retry "4.3.2 system down for maintenance" a@x
	atf_check -s exit:0 -o inline:"flags=0 reason=\na@x delayed 4.0.0 none try later\n" \
	    $CALL q/private/retry "try later" a@x
	# the "retry" argument word, under another service name
	atf_check -s exit:0 -o inline:"flags=0 reason=\na@x delayed 4.0.0 none wait\n" \
	    $CALL q/private/defer2 "wait" a@x
	# several requests on one connection
	atf_check -s exit:0 -o match:"^a@x failed 5.0.0 none no$" \
	    -o save:three $CALL -n 3 q/private/error "no" a@x
	test "$(grep -c '^a@x failed' three)" -eq 3 || atf_fail "three replies"
	assert_log_clean
}
pseudo_transports_cleanup() {
	stop_instance
}

atf_test_case test_agent_local_parts cleanup
test_agent_local_parts_head() {
	atf_set descr "test-agent answers each recipient by its local part"
	atf_set require.user unprivileged
}
test_agent_local_parts_body() {
	agents_instance
	atf_check -s exit:0 -o save:out $CALL q/private/test dest.example \
	    ok@x bounce+1@x defer.2@x relay@x Bounce@x someone@x
	cat > expect <<EOF
flags=0 reason=
ok@x delivered 2.0.0 test-agent test-agent: ok
bounce+1@x failed 5.0.0 test-agent test-agent: bounce
defer.2@x delayed 4.0.0 test-agent test-agent: defer
relay@x relayed 2.0.0 test-agent test-agent: relay
Bounce@x failed 5.0.0 test-agent test-agent: bounce
someone@x delivered 2.0.0 test-agent test-agent: ok
EOF
	atf_check -o file:expect cat out
	# every recipient logged once, in order
	atf_check -o inline:"6\n" sh -c "grep -c 'dest.example' agent.log"
	atf_check -o match:"^4QMZ7X2KCB7H dest.example bounce\\+1@x bounce 5.0.0$" cat agent.log
	assert_log_clean
}
test_agent_local_parts_cleanup() {
	stop_instance
}

atf_test_case test_agent_whole_request cleanup
test_agent_whole_request_head() {
	atf_set descr "conn-fail and site-fail answer for the whole request with feedback flags"
	atf_set require.user unprivileged
}
test_agent_whole_request_body() {
	agents_instance
	atf_check -s exit:0 -o save:out $CALL q/private/test mx.example ok@x conn-fail@x
	cat > expect <<EOF
flags=1 reason=connect to mx.example: Connection refused
ok@x delayed 4.4.1 none connect to mx.example: Connection refused
conn-fail@x delayed 4.4.1 none connect to mx.example: Connection refused
EOF
	atf_check -o file:expect cat out
	atf_check -s exit:0 -o match:"^flags=3 reason=connect to mx.example" \
	    $CALL q/private/test mx.example site-fail@x
	assert_log_clean
}
test_agent_whole_request_cleanup() {
	stop_instance
}

atf_test_case test_agent_failures cleanup
test_agent_failures_head() {
	atf_set descr "crash, hang and garbage: the client gets a clear error, the service lives on"
	atf_set require.user unprivileged
}
test_agent_failures_body() {
	agents_instance
	atf_check -s exit:1 -e match:"closed without a reply" \
	    $CALL q/private/test x crash@x
	atf_check -s exit:1 -e match:"malformed reply" \
	    $CALL q/private/test x ok@x garbage@x
	atf_check -s exit:1 -e match:"timed out" \
	    $CALL -t 500 q/private/test x hang@x
	# the service still answers (master starts another process)
	atf_check -s exit:0 -o match:"^ok@x delivered" $CALL q/private/test x ok@x
	# the hung process is still there; stop_instance ends it
	assert_log_clean
}
test_agent_failures_cleanup() {
	stop_instance
}

atf_test_case test_agent_rules cleanup
test_agent_rules_head() {
	atf_set descr "a rules file: globs on addresses and nexthops, status and text"
	atf_set require.user unprivileged
}
test_agent_rules_body() {
	cat > rules <<'EOF'
# address globs, first match wins
vip*@example.com  ok      2.1.5  delivered to the VIP queue
*@full.example    bounce  5.2.2  mailbox full
*@slow.example    defer   -      greylisted, come back later
nexthop:dead.*    site-fail
EOF
	echo "bad-line-without-action" > badrules
	mk_instance
	mcf "test unix - n n - - $AGENT rules=$PWD/rules log=$PWD/agent.log" \
	    "bad unix - n n - - $AGENT rules=$PWD/badrules"
	start_instance
	atf_check -s exit:0 -o save:out $CALL q/private/test example.com \
	    vip1@example.com ann@full.example bob@slow.example bounce@other.example
	cat > expect <<EOF
flags=0 reason=
vip1@example.com delivered 2.1.5 test-agent delivered to the VIP queue
ann@full.example failed 5.2.2 test-agent mailbox full
bob@slow.example delayed 4.0.0 test-agent greylisted, come back later
bounce@other.example failed 5.0.0 test-agent test-agent: bounce
EOF
	atf_check -o file:expect cat out
	atf_check -s exit:0 -o match:"^flags=3 " $CALL q/private/test dead.example ok@x
	# a broken rules file: the agent refuses to start and says why
	atf_check -s exit:1 -e ignore $CALL -t 2000 q/private/bad x ok@x
	WAIT_MAX=50 wait_for in_log "badrules:1: expected PATTERN ACTION" ||
	    atf_fail "no log line for the bad rules file"
	assert_log_clean
}
test_agent_rules_cleanup() {
	stop_instance
}

atf_test_case malformed_request cleanup
malformed_request_head() {
	atf_set descr "an agent given a malformed request logs it, closes, and serves the next client"
	atf_set require.user unprivileged
}
malformed_request_body() {
	agents_instance
	atf_check -s exit:2 -o inline:"EOF\n" $ASK q/private/discard "garbage"
	WAIT_MAX=50 wait_for in_log "malformed delivery request" ||
	    atf_fail "not logged"
	atf_check -s exit:0 -o match:"^a@x delivered" $CALL q/private/discard x a@x
	assert_log_clean
}
malformed_request_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case pseudo_transports
	atf_add_test_case test_agent_local_parts
	atf_add_test_case test_agent_whole_request
	atf_add_test_case test_agent_failures
	atf_add_test_case test_agent_rules
	atf_add_test_case malformed_request
}
