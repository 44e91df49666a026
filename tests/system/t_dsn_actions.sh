#! /usr/bin/env atf-sh
# The action of success notices (RFC 3464 section 2.3.3, RFC 3461
# section 6.2.7) for NOTIFY=SUCCESS recipients that local expands: an
# alias or a .forward gets one notice, "Action: expanded", with the
# Original-Recipient the client gave; the forwarded copies go on without
# SUCCESS, so neither the local deliveries they lead to nor a next hop
# without DSN (smtp-sink -x dsn) cause a second notice.  A mailing list
# (an owner- alias) took the mail: "delivered", and its copies carry
# none of the original DSN parameters.  ("relayed" to a next hop without
# DSN: t_e2e_smtp:notify_success_dsn_hop.)

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

# dsn_instance SINKPORT: smtpd on $port, local users alice, bob, carol
# under ./mail, everything else relayed to the sink.
dsn_instance() {
	_sp=$1
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test" \
	    "local_mail_root = $PWD/mail" "home_mailbox = Maildir/" \
	    "relayhost = [127.0.0.1]:$_sp" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 3600s" "inet_protocols = ipv4" \
	    "smtp_connect_timeout = 5s"
	mkdir -p mail/alice mail/bob mail/carol
	{
		echo "staff: bob, remote@far.example"
		echo "list: bob, carol"
		echo "owner-list: alice"
	} > etc/aliases
	echo "bob, remote2@far.example" > mail/carol/.forward
	chmod 644 mail/carol/.forward
	atf_check -s exit:0 -o empty -e empty $B/bin/postalias -c $PWD/etc etc/aliases
	mcf "$port inet n - n - - smtpd" "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 3600 1 qmgr" "local unix - n n - - local" \
	    "smtp unix - - n - - smtp" "bounce unix - - n - 0 bounce"
	start_instance
}

# send RCPT-LINE-PARAMS...: one message from alice, one RCPT a recipient.
send() {
	{
		echo "EHLO client.test"
		echo "MAIL FROM:<alice@mx.example.test> ENVID=e-1"
		for r in "$@"; do echo "RCPT TO:$r"; done
		printf 'DATA\nSubject: dsn\n\nhello\n.\nQUIT\n'
	} > m
	atf_check -o save:m.out bash chat.bash $port m
	grep -q '^250 2.0.0 Ok: queued' m.out || atf_fail "not queued: $(cat m.out)"
}

nmail() {
	find mail/$1/Maildir/new -type f 2>/dev/null | wc -l | tr -d ' '
}
nmail_is() {
	[ "$(nmail $1)" = "$2" ]
}
idle() {
	[ -z "$(find q/incoming q/active q/deferred -type f 2>/dev/null)" ]
}

atf_test_case alias_and_forward cleanup
alias_and_forward_head() {
	atf_set descr "NOTIFY=SUCCESS to an alias and to a user with a" \
	    ".forward: one notice, Action: expanded for each, Original-Recipient" \
	    "from ORCPT; no notice for the forwarded copies (local or relayed" \
	    "to a server without DSN), which carry NOTIFY without SUCCESS"
	atf_set require.user unprivileged
	atf_set require.progs bash
}
alias_and_forward_body() {
	need_bash
	mkdir saved
	start_sink s -x dsn -d saved
	dsn_instance $port
	send "<staff@mx.example.test> NOTIFY=SUCCESS ORCPT=rfc822;Staff@mx.example.test" \
	    "<carol@mx.example.test> NOTIFY=SUCCESS,FAILURE"
	# bob twice (staff, carol's .forward), the sink twice (remote,
	# remote2), alice one notice for both recipients.
	WAIT_MAX=100 wait_for nmail_is bob 2 || atf_fail "bob: $(nmail bob)"
	stat_is s.stats messages 2
	WAIT_MAX=100 wait_for nmail_is alice 1 || atf_fail "alice: $(nmail alice)"
	WAIT_MAX=100 wait_for idle || atf_fail "queue not empty"
	sleep 1
	atf_check_equal 1 "$(nmail alice)"
	atf_check_equal 2 "$(nmail bob)"
	atf_check_equal 0 "$(nmail carol)"
	cat mail/alice/Maildir/new/* > notices
	atf_check_equal 2 "$(grep -c '^Action: ' notices)"
	atf_check_equal 2 "$(grep -c '^Action: expanded$' notices)"
	grep -q '^Original-Recipient: rfc822; Staff@mx.example.test$' notices ||
	    { cat notices >&2; atf_fail "no Original-Recipient"; }
	grep -q '^Final-Recipient: rfc822; staff@mx.example.test$' notices ||
	    atf_fail "no Final-Recipient for staff"
	grep -q '^Final-Recipient: rfc822; carol@mx.example.test$' notices ||
	    atf_fail "no Final-Recipient for carol"
	grep -q '^Original-Envelope-Id: e-1$' notices || atf_fail "ENVID"
	# No notice went to the sink either, and the notices are success
	# notices (no bounce).
	! grep -l '^Action:' saved/* >/dev/null 2>&1 || atf_fail "a notice went out"
	! grep -q '^Action: \(failed\|relayed\|delivered\)' notices || atf_fail "wrong action"
	finish
	assert_log_clean
}
alias_and_forward_cleanup() { stop_instance; stop_all; }

atf_test_case forwarded_notify cleanup
forwarded_notify_head() {
	atf_set descr "copies forwarded by an alias keep ORCPT and NOTIFY" \
	    "without SUCCESS (NEVER when SUCCESS was all); a mailing list" \
	    "(owner- alias) is Action: delivered and its copies carry no" \
	    "ORCPT, NOTIFY or ENVID"
	atf_set require.user unprivileged
	atf_set require.progs bash
}
forwarded_notify_body() {
	need_bash
	mkdir saved
	start_sink s -d saved
	dsn_instance $port
	send "<staff@mx.example.test> NOTIFY=SUCCESS,DELAY ORCPT=rfc822;Staff@mx.example.test"
	stat_is s.stats messages 1
	grep -q '^X-Sink-Rcpt-To: <remote@far.example> NOTIFY=DELAY ORCPT=rfc822;Staff@mx.example.test' saved/* ||
	    { grep '^X-Sink' saved/* >&2; atf_fail "NOTIFY/ORCPT of the forwarded copy"; }
	grep -q '^X-Sink-Mail-From: <alice@mx.example.test> .*ENVID=e-1' saved/* ||
	    { grep '^X-Sink' saved/* >&2; atf_fail "ENVID of the forwarded copy"; }
	WAIT_MAX=100 wait_for nmail_is alice 1 || atf_fail "alice: $(nmail alice)"
	rm saved/*
	send "<staff@mx.example.test> NOTIFY=SUCCESS"
	stat_is s.stats messages 2
	grep -q '^X-Sink-Rcpt-To: <remote@far.example> NOTIFY=NEVER' saved/* ||
	    { grep '^X-Sink' saved/* >&2; atf_fail "NOTIFY=NEVER expected"; }
	WAIT_MAX=100 wait_for nmail_is alice 2 || { cat maillog >&2; atf_fail "alice: $(nmail alice)"; }
	# The list: alice is its owner and the sender; her mailbox gets the
	# one notice (delivered), carol's .forward goes to the sink.
	rm saved/*
	send "<list@mx.example.test> NOTIFY=SUCCESS ORCPT=rfc822;List@mx.example.test"
	stat_is s.stats messages 3
	WAIT_MAX=100 wait_for nmail_is alice 3 || atf_fail "alice: $(nmail alice)"
	WAIT_MAX=100 wait_for idle || atf_fail "queue not empty"
	tr -d '\r' < saved/* > list.eml
	grep -q '^X-Sink-Rcpt-To: <remote2@far.example>$' list.eml ||
	    { grep '^X-Sink' list.eml >&2; atf_fail "list copy carries DSN parameters"; }
	grep -q '^X-Sink-Mail-From: <owner-list@mx.example.test> SIZE=[0-9]*$' list.eml ||
	    { grep '^X-Sink' list.eml >&2; atf_fail "list sender, or ENVID/RET passed on"; }
	n=$(grep -l 'Final-Recipient: rfc822; list@mx.example.test' mail/alice/Maildir/new/*)
	test -n "$n" || atf_fail "no notice for list"
	grep -q '^Action: delivered$' $n || atf_fail "list: not delivered"
	finish
	assert_log_clean
}
forwarded_notify_cleanup() { stop_instance; stop_all; }

atf_init_test_cases() {
	atf_add_test_case alias_and_forward
	atf_add_test_case forwarded_notify
}
