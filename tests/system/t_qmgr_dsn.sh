#! /usr/bin/env atf-sh
# qmgr and the bounce daemon: the notices qmgr asks for, read back from
# the queue and parsed (structure, Final-Recipient, Action, Status):
# non-delivery, expiry, delay warning, success; bounces of bounces go to
# the postmaster once and never loop.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/queue.subr
. @SRCDIR@/tests/system/qmgr.subr

require_notices() {
	require_test_agent
	[ -x $B/bin/bounce ] && [ -x $B/bin/cleanup ] ||
	    atf_skip "bounce or cleanup is not built"
}

# dsn_instance [main.cf lines]: notices for senders at s.example and the
# postmaster at pm.example are held in the queue (the retry transport),
# where the test reads them.
dsn_instance() {
	qmgr_instance "2bounce_notice_recipient = pm@pm.example" "$@"
	echo "s.example	retry:4.0.0 held for the test" >> etc/transport
	echo "pm.example	retry:4.0.0 held for the test" >> etc/transport
}

# notice_of ID KIND: waits for the notice the bounce daemon queued for
# message ID ("sender non-delivery", "sender delay", ...); its ID in $N
# and its content in notice.txt.
notice_of() {
	WAIT_MAX=150 wait_for in_log "$1: $2 notification: " ||
	    atf_fail "no $2 notification for $1"
	N=$(sed -n "s/.*$1: $2 notification: \([0-9A-Z]*\).*/\1/p" maillog | tail -n 1)
	test -n "$N" || atf_fail "no notice ID"
	WAIT_MAX=150 wait_for in_queue deferred $N || atf_fail "notice $N not held"
	atf_check -s exit:0 -o save:notice.env $POSTCAT -e $(qpath deferred $N)
	atf_check -s exit:0 -o save:notice.txt $POSTCAT -b $(qpath deferred $N)
	$POSTCAT -h $(qpath deferred $N) > notice.hdr
}

# The message/delivery-status part of notice.txt (body), to ds.txt.
status_part() {
	b=$(sed -n 's/.*boundary="\([^"]*\)".*/\1/p' notice.hdr | head -n 1)
	test -n "$b" || atf_fail "no boundary"
	grep -qi '^Content-Type: multipart/report; report-type=delivery-status' notice.hdr ||
	    atf_fail "not a delivery status report"
	test "$(grep -c -- "^--$b\$" notice.txt)" -eq 3 || atf_fail "not three parts"
	grep -q -- "^--$b--\$" notice.txt || atf_fail "no closing boundary"
	awk -v b="--$b" '
	    $0 == b { part++; next }
	    part == 2 { print }' notice.txt | tr -d '\r' > ds.txt
	grep -q '^Content-Type: message/delivery-status' ds.txt ||
	    atf_fail "second part is not message/delivery-status"
	grep -q '^Reporting-MTA: dns; ' ds.txt || atf_fail "no Reporting-MTA"
}

# rcpt_field ADDRESS FIELD: the field of the recipient block for ADDRESS.
rcpt_field() {
	awk -v a="Final-Recipient: rfc822; $1" -v f="$2:" '
	    $0 == a { inb = 1; next }
	    inb && $0 == "" { inb = 0 }
	    inb && index($0, f) == 1 { sub(f " *", ""); print; exit }' ds.txt
}

atf_test_case nondelivery cleanup
nondelivery_head() {
	atf_set descr "bounced recipients: one non-delivery notice to the sender, parsed back"
	atf_set require.user unprivileged
}
nondelivery_body() {
	require_notices
	dsn_instance
	id=$(inject -f sender@s.example -r ok@t.example -O orig@o.example \
	    -r bounce@t.example -r bounce+2@t.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=150 wait_for in_log "$id: removed" || atf_fail "not removed"
	notice_of $id "sender non-delivery"
	grep -q '^sender: $' notice.env || atf_fail "notice not from <>"
	grep -q '^recipient: sender@s.example$' notice.env || atf_fail "notice recipient"
	status_part
	test "$(grep -c '^Final-Recipient: ' ds.txt)" -eq 2 || atf_fail "recipients in the report"
	test "$(rcpt_field bounce@t.example Action)" = failed || atf_fail "action"
	test "$(rcpt_field bounce@t.example Status)" = 5.0.0 || atf_fail "status"
	test "$(rcpt_field bounce@t.example Original-Recipient)" = "rfc822; orig@o.example" ||
	    atf_fail "original recipient"
	test "$(rcpt_field bounce+2@t.example Action)" = failed || atf_fail "second"
	grep -q 'ok@t.example' ds.txt && atf_fail "delivered recipient reported"
	# exactly one notice, and the logs are gone
	test "$(count "$id: sender non-delivery notification" maillog)" -eq 1 ||
	    atf_fail "more than one notice"
	test -z "$(find q/bounce q/defer -type f -name $id)" || atf_fail "logs left"
	assert_log_clean
}
nondelivery_cleanup() {
	stop_instance
}

atf_test_case expired cleanup
expired_head() {
	atf_set descr "expiry: the deferred recipients are returned (Action failed, their deferral's status) and the message removed"
	atf_set require.user unprivileged
}
expired_body() {
	require_notices
	dsn_instance "maximal_queue_lifetime = 1h"
	t=$(($(date +%s) - 7200))
	id=$(inject -T $t.0 -f sender@s.example -r ok@t.example -r defer@t.example \
	    -r defer+2@t.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=150 wait_for in_log "$id: removed" || atf_fail "not removed"
	in_log "$id: from=<sender@s.example>, status=expired, returned to sender" ||
	    atf_fail "no expiry line"
	notice_of $id "sender non-delivery"
	status_part
	test "$(grep -c '^Final-Recipient: ' ds.txt)" -eq 2 || atf_fail "recipients"
	test "$(rcpt_field defer@t.example Action)" = failed || atf_fail "action"
	test "$(rcpt_field defer@t.example Status)" = 4.0.0 || atf_fail "status"
	rcpt_field defer@t.example Diagnostic-Code | grep -q 'test-agent: defer' ||
	    atf_fail "reason"
	not_in_queue deferred $id || atf_fail "kept"
	test -z "$(find q/bounce q/defer -type f -name $id)" || atf_fail "logs left"
	assert_log_clean
}
expired_cleanup() {
	stop_instance
}

atf_test_case delay_warning cleanup
delay_warning_head() {
	atf_set descr "past delay_warning_time: one delay warning (Action delayed), not repeated"
	atf_set require.user unprivileged
}
delay_warning_body() {
	require_notices
	dsn_instance "delay_warning_time = 1h"
	t=$(($(date +%s) - 7200))
	id=$(inject -T $t.0 -f sender@s.example -r defer@t.example) || atf_fail "mkqfile"
	start_instance
	notice_of $id "sender delay"
	in_log "$id: delay warning sent to <sender@s.example>" || atf_fail "qmgr line"
	status_part
	test "$(rcpt_field defer@t.example Action)" = delayed || atf_fail "action"
	test "$(rcpt_field defer@t.example Status)" = 4.0.0 || atf_fail "status"
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred"
	atf_check -s exit:0 -o save:cat.out $POSTCAT $(qpath deferred $id)
	grep -q '^next_warning_time: none' cat.out || atf_fail "warning time not cleared"
	# another attempt: no second warning
	flush
	WAIT_MAX=100 wait_for lines_ge 2 "$id: to=<defer@t.example>" maillog ||
	    atf_fail "no second attempt"
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred again"
	test "$(count "$id: sender delay notification" maillog)" -eq 1 ||
	    atf_fail "warned twice"
	assert_log_clean
}
delay_warning_cleanup() {
	stop_instance
}

atf_test_case success cleanup
success_head() {
	atf_set descr "NOTIFY=SUCCESS: a success notice (Action delivered) for that recipient only"
	atf_set require.user unprivileged
}
success_body() {
	require_notices
	dsn_instance
	id=$(inject -f sender@s.example -N 1 -r ok@t.example -r ok2@t.example) ||
	    atf_fail "mkqfile"
	start_instance
	WAIT_MAX=150 wait_for in_log "$id: removed" || atf_fail "not removed"
	notice_of $id "sender delivery status"
	status_part
	test "$(grep -c '^Final-Recipient: ' ds.txt)" -eq 1 || atf_fail "recipients"
	test "$(rcpt_field ok@t.example Action)" = delivered || atf_fail "action"
	test "$(rcpt_field ok@t.example Status)" = 2.0.0 || atf_fail "status"
	test -z "$(find q/trace -type f -name $id)" || atf_fail "trace log left"
	assert_log_clean
}
success_cleanup() {
	stop_instance
}

atf_test_case double_bounce cleanup
double_bounce_head() {
	atf_set descr "a bounce that bounces goes to the postmaster once; when that fails too it is dropped, no loop"
	atf_set require.user unprivileged
}
double_bounce_body() {
	require_notices
	qmgr_instance "2bounce_notice_recipient = pm@pm.example"
	# the postmaster's address fails too
	echo "pm.example	error:5.1.1 no postmaster here" >> etc/transport
	id=$(inject -f '' -r bounce@t.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=150 wait_for in_log "$id: removed" || atf_fail "not removed"
	WAIT_MAX=150 wait_for in_log "undeliverable postmaster notification discarded" ||
	    atf_fail "double bounce not dropped"
	# let anything that would loop show itself
	WAIT_MAX=20 wait_for in_log "nothing-to-wait-for" || true
	test "$(count "postmaster non-delivery notification" maillog)" -eq 1 ||
	    atf_fail "postmaster notified $(count "postmaster non-delivery notification" maillog) times"
	test "$(count "undeliverable postmaster notification discarded" maillog)" -eq 1 ||
	    atf_fail "dropped more than once"
	test "$(count "sender non-delivery notification" maillog)" -eq 0 ||
	    atf_fail "a bounce to <>"
	for qq in incoming active deferred; do
		test -z "$(find q/$qq -type f)" || atf_fail "mail left in $qq"
	done
	assert_log_clean
}
double_bounce_cleanup() {
	stop_instance
}

atf_test_case notice_retry cleanup
notice_retry_head() {
	atf_set descr "a notice the bounce daemon cannot send keeps the message and its bounce log; a later pass sends it"
	atf_set require.user unprivileged
	atf_set timeout 120
}
notice_retry_body() {
	require_notices
	dsn_instance
	# no cleanup: the bounce daemon cannot queue the notice
	grep -v '^cleanup ' etc/master.cf > etc/master.cf.new
	mv etc/master.cf.new etc/master.cf
	id=$(inject -f sender@s.example -r bounce@t.example -r ok@t.example) ||
	    atf_fail "mkqfile"
	start_instance
	WAIT_MAX=150 wait_for in_queue deferred $id || atf_fail "not kept"
	in_log "$id: non-delivery notice not sent: " || atf_fail "no warning"
	b=$(find q/bounce -type f -name $id)
	test -n "$b" || atf_fail "bounce log lost"
	atf_check -s exit:0 -o save:cat.out $POSTCAT $(qpath deferred $id)
	grep -q '^done_recipient: bounce@t.example$' cat.out || atf_fail "not done"
	# cleanup is back: the next pass only asks for the notice
	echo "cleanup unix - n n - 0 $B/bin/cleanup" >> etc/master.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for test -S q/private/cleanup || atf_fail "no cleanup"
	flush
	WAIT_MAX=150 wait_for in_log "$id: removed" || atf_fail "not removed"
	notice_of $id "sender non-delivery"
	status_part
	test "$(rcpt_field bounce@t.example Action)" = failed || atf_fail "action"
	test "$(count " bounce@t.example " agent.log)" -eq 1 || atf_fail "delivered again"
	test "$(count " ok@t.example " agent.log)" -eq 1 || atf_fail "delivered again"
	assert_log_clean
}
notice_retry_cleanup() {
	stop_instance
}

atf_test_case notice_after_qmgr_kill cleanup
notice_after_qmgr_kill_head() {
	atf_set descr "qmgr killed after a bounced recipient was logged and marked done, before the notice went out: the next qmgr sends the notice (first pass: attempts still 0)"
	atf_set require.user unprivileged
	atf_set timeout 120
}
notice_after_qmgr_kill_body() {
	require_notices
	# qmgr waits for the stopped bounce daemon longer than the test;
	# one bounce daemon at most, so that master starts no other
	dsn_instance "qmgr_ipc_timeout = 60s"
	sed 's|^bounce unix - n n - 0 |bounce unix - n n - 1 |' etc/master.cf > etc/master.cf.new
	mv etc/master.cf.new etc/master.cf
	grep -q '^bounce unix - n n - 1 ' etc/master.cf || atf_fail "master.cf edit"
	start_instance
	# A first bounce starts a bounce daemon, which then waits for more.
	m0=$(inject -f sender@s.example -r bounce@t.example) || atf_fail "mkqfile"
	flush
	WAIT_MAX=150 wait_for in_log "$m0: removed" || atf_fail "$m0 not removed"
	bp=$(pgrep -P "$(master_pid)" -f -- "bin/bounce -c $PWD/etc" | head -n 1)
	test -n "$bp" || atf_fail "no bounce daemon"
	# Stopped, it never takes the next notice request.
	kill -STOP $bp
	m1=$(inject -f sender@s.example -r bounce@t.example) || atf_fail "mkqfile"
	flush
	WAIT_MAX=100 wait_for in_log "$m1: to=<bounce@t.example>.*status=bounced" ||
	    atf_fail "$m1 not bounced"
	# the bounce log is synced and the recipient marked done at the end
	# of that event (the status line is the agent's: it may come before
	# qmgr has handled the result); the notice request waits for the
	# stopped daemon
	WAIT_MAX=100 wait_for nonempty find q/bounce -type f -name $m1 ||
	    atf_fail "no bounce log"
	sleep 0.3
	in_log "$m1: removed" && atf_fail "the notice went out before qmgr could be killed"
	kill -9 $(qmgr_pid)
	# Without the bounce service the request qmgr left unanswered is
	# dropped (a new daemon would otherwise still take it).
	grep -v '^bounce ' etc/master.cf > etc/master.cf.new
	cp etc/master.cf etc/master.cf.saved
	mv etc/master.cf.new etc/master.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	kill -9 $bp
	WAIT_MAX=50 wait_for test ! -S q/private/bounce || atf_fail "bounce service still there"
	atf_check -s exit:0 -o save:cat.out $POSTCAT $(qpath active $m1)
	grep -q '^done_recipient: bounce@t.example$' cat.out || atf_fail "not done before the kill"
	in_log "$m1: removed" && atf_fail "removed before qmgr was killed"
	# The bounce service is back; a new qmgr finds the message in
	# active/ on its first pass (attempts still 0).
	mv etc/master.cf.saved etc/master.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for test -S q/private/bounce || atf_fail "no bounce service"
	flush
	WAIT_MAX=150 wait_for in_log "$m1: removed" || atf_fail "$m1 not removed"
	notice_of $m1 "sender non-delivery"
	status_part
	test "$(rcpt_field bounce@t.example Action)" = failed || atf_fail "action"
	assert_log_clean
}
notice_after_qmgr_kill_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case notice_after_qmgr_kill
	atf_add_test_case notice_retry
	atf_add_test_case nondelivery
	atf_add_test_case expired
	atf_add_test_case delay_warning
	atf_add_test_case success
	atf_add_test_case double_bounce
}
