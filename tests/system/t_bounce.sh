#! /usr/bin/env atf-sh
# bounce(8) under master with cleanup(8): notices built from the status
# logs enter the queue through cleanup (incoming/), with the right
# envelope and RFC 3464 structure; bounces of bounces go to the
# postmaster once and never loop.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr

BC=$B/tests/tools/bounce-call
MKQ=$B/tests/tools/mkqfile
POSTCAT=$B/bin/postcat

# bounce_instance [main.cf lines...]: cleanup and bounce, no qmgr.
bounce_instance() {
	mk_instance "myhostname = mx.example.com" "mydomain = example.com" "$@"
	mcf "cleanup unix n n n - 0 cleanup" \
	    "bounce unix - n n - 0 bounce" \
	    "nocleanup unix - n n - 0 bounce cleanup=private/nosuch"
	start_instance
}

# original SENDER [mkqfile options...]: a message in active/; prints its ID.
original() {
	_s=$1
	shift
	printf 'From: Alice <alice@example.org>\nTo: bob@example.net\nSubject: quarterly report\nMessage-Id: <orig-1@example.org>\n\nHello Bob,\nthe numbers.\n' |
	    $MKQ -d q -q active -f "$_s" "$@" -r bob@example.net -r carol@example.net
}

# notice ID: dumps incoming/ID into ID.txt (envelope and content).
notice() {
	atf_check -s exit:0 -o save:$1.txt $POSTCAT -c $PWD/etc -q $1
}

# The fields every non-delivery notice has, checked in NOTICE.txt.
check_dsn_structure() {
	_f=$1.txt
	grep -q '^Content-Type: multipart/report; report-type=delivery-status;$' $_f ||
	    atf_fail "no multipart/report in $_f"
	_b=$(sed -n 's/^ boundary="\(.*\)"$/\1/p' $_f)
	test -n "$_b" || atf_fail "no boundary"
	# three parts and the closing delimiter, in order
	test "$(grep -c -x -F -- "--$_b" $_f)" -eq "${2:-3}" || atf_fail "part count"
	test "$(grep -c -x -F -- "--$_b--" $_f)" -eq 1 || atf_fail "no closing delimiter"
	grep -q '^Content-Type: message/delivery-status$' $_f || atf_fail "no delivery-status part"
	grep -q '^Reporting-MTA: dns; mx.example.com$' $_f || atf_fail "no Reporting-MTA"
	grep -q '^Arrival-Date: ' $_f || atf_fail "no Arrival-Date"
	grep -q '^Auto-Submitted: auto-replied$' $_f || atf_fail "no Auto-Submitted"
}

atf_test_case non_delivery cleanup
non_delivery_head() {
	atf_set descr "a bounce log becomes a notice to the sender from <>, queued through cleanup"
	atf_set require.user unprivileged
}
non_delivery_body() {
	bounce_instance
	id=$(original alice@example.org -R FULL)
	atf_check $BC -c etc append bounce $id \
	    "bob@example.net|1|failed|5.1.1|host mx.example.net said: 550 5.1.1 no such user|0|Bob@example.net" \
	    "carol@example.net|2|failed|4.4.1|connect to mx.example.net: Connection refused|2" \
	    "never@example.net|3|failed|5.1.1|not reported|8"
	atf_check -s exit:0 -o save:reply $BC send q/private/bounce bounce active $id
	atf_check -o match:"^status=0 id=[0-9A-Z]+ reason=non-delivery notice sent to <alice@example.org>" cat reply
	nid=$(sed 's/.*id=\([0-9A-Z]*\) .*/\1/' reply)
	test -f q/incoming/$nid || atf_fail "notice not in incoming/"
	notice $nid
	# envelope: from <>, to the sender
	atf_check -o inline:"sender: \nrecipient: alice@example.org\n" \
	    grep -E '^(sender|recipient):' $nid.txt
	check_dsn_structure $nid
	grep -q '^Subject: Undelivered Mail Returned to Sender$' $nid.txt || atf_fail subject
	grep -q '^To: <alice@example.org>$' $nid.txt || atf_fail to
	# per recipient; NOTIFY=NEVER is left out
	atf_check -o inline:"Final-Recipient: rfc822; bob@example.net\nFinal-Recipient: rfc822; carol@example.net\n" \
	    grep '^Final-Recipient:' $nid.txt
	grep -q '^Original-Recipient: rfc822; Bob@example.net$' $nid.txt || atf_fail orcpt
	atf_check -o inline:"Status: 5.1.1\nStatus: 4.4.1\n" grep '^Status:' $nid.txt
	test "$(grep -c '^Action: failed$' $nid.txt)" -eq 2 || atf_fail action
	grep -q 'not reported' $nid.txt && atf_fail "NOTIFY=NEVER recipient reported"
	# RET=FULL: the whole original
	grep -q '^Content-Type: message/rfc822$' $nid.txt || atf_fail "no message/rfc822"
	grep -q '^Subject: quarterly report$' $nid.txt || atf_fail "original header missing"
	grep -q '^the numbers.$' $nid.txt || atf_fail "original body missing"
	# the bounce log is gone, the original untouched
	test -e q/bounce/$id && atf_fail "bounce log left"
	test -f q/active/$id || atf_fail "original removed"
	in_log "$id: sender non-delivery notification: $nid" || atf_fail "not logged"
	assert_log_clean
}
non_delivery_cleanup() {
	stop_instance
}

atf_test_case ret_hdrs_and_notify_never cleanup
ret_hdrs_and_notify_never_head() {
	atf_set descr "RET=HDRS returns the header only; only NOTIFY=NEVER recipients: no notice"
	atf_set require.user unprivileged
}
ret_hdrs_and_notify_never_body() {
	bounce_instance
	id=$(original alice@example.org -R HDRS)
	atf_check $BC -c etc append bounce $id "bob@example.net|1|failed|5.1.1|no such user"
	atf_check -s exit:0 -o save:reply $BC send q/private/bounce bounce active $id
	nid=$(sed 's/.*id=\([0-9A-Z]*\) .*/\1/' reply)
	notice $nid
	check_dsn_structure $nid
	grep -q '^Content-Type: text/rfc822-headers$' $nid.txt || atf_fail "not headers"
	grep -q '^Subject: quarterly report$' $nid.txt || atf_fail "header missing"
	grep -q '^the numbers.$' $nid.txt && atf_fail "body returned"

	id2=$(original alice@example.org)
	atf_check $BC -c etc append bounce $id2 "bob@example.net|1|failed|5.1.1|no|8"
	atf_check -s exit:0 -o match:"^status=0 id= reason=no non-delivery notice requested" \
	    $BC send q/private/bounce bounce active $id2
	test -e q/bounce/$id2 && atf_fail "bounce log left"
	test "$(ls q/incoming | wc -l)" -eq 1 || atf_fail "a notice was sent"
	assert_log_clean
}
ret_hdrs_and_notify_never_cleanup() {
	stop_instance
}

atf_test_case double_bounce cleanup
double_bounce_head() {
	atf_set descr "a failed bounce goes to 2bounce_notice_recipient from double_bounce_sender; a failed double bounce is dropped"
	atf_set require.user unprivileged
}
double_bounce_body() {
	bounce_instance "2bounce_notice_recipient = hostmaster"
	# a bounce (from <>) that could not be delivered
	id=$(original "")
	atf_check $BC -c etc append bounce $id "bob@example.net|1|failed|5.1.1|no such user|8"
	atf_check -s exit:0 -o save:reply $BC send q/private/bounce bounce active $id
	atf_check -o match:"^status=0 id=[0-9A-Z]+ reason=double bounce sent to hostmaster" cat reply
	nid=$(sed 's/.*id=\([0-9A-Z]*\) .*/\1/' reply)
	notice $nid
	# from double-bounce (qualified by cleanup), to the postmaster; every
	# recipient reported, NOTIFY notwithstanding
	atf_check -o match:"^sender: double-bounce(@.*)?$" grep '^sender:' $nid.txt
	atf_check -o match:"^recipient: hostmaster(@.*)?$" grep '^recipient:' $nid.txt
	grep -q '^Subject: Postmaster Notice: Undeliverable Bounce$' $nid.txt || atf_fail subject
	grep -q '^Final-Recipient: rfc822; bob@example.net$' $nid.txt || atf_fail rcpt
	check_dsn_structure $nid
	test -e q/bounce/$id && atf_fail "bounce log left"

	# now that double bounce fails too: logged and dropped, no new mail
	sender=$(sed -n 's/^sender: //p' $nid.txt)
	id2=$(original "$sender")
	atf_check $BC -c etc append bounce $id2 "hostmaster@mx.example.com|1|failed|5.1.1|no such user"
	atf_check -s exit:0 -o match:"^status=0 id= reason=mail from double-bounce is not reported" \
	    $BC send q/private/bounce bounce active $id2
	in_log "$id2: undeliverable postmaster notification discarded" || atf_fail "not logged"
	test "$(ls q/incoming | wc -l)" -eq 1 || atf_fail "the double bounce bounced"
	test -e q/bounce/$id2 && atf_fail "bounce log left"
	# the bare double-bounce address is recognised too
	id3=$(original double-bounce)
	atf_check $BC -c etc append bounce $id3 "x@y|1|failed|5.1.1|no"
	atf_check -s exit:0 -o match:"^status=0 id= " $BC send q/private/bounce bounce active $id3
	test "$(ls q/incoming | wc -l)" -eq 1 || atf_fail "bounced"
	assert_log_clean
}
double_bounce_cleanup() {
	stop_instance
}

atf_test_case postmaster_copy cleanup
postmaster_copy_head() {
	atf_set descr "notify_classes = bounce adds a header-only copy for bounce_notice_recipient"
	atf_set require.user unprivileged
}
postmaster_copy_body() {
	bounce_instance "notify_classes = bounce, delay" "bounce_notice_recipient = pm"
	id=$(original alice@example.org -R FULL)
	atf_check $BC -c etc append bounce $id "bob@example.net|1|failed|5.1.1|no such user"
	atf_check -s exit:0 -o match:"^status=0 " $BC send q/private/bounce bounce active $id
	test "$(ls q/incoming | wc -l)" -eq 2 || atf_fail "expected two notices"
	for n in $(ls q/incoming); do notice $n; done
	pm=$(grep -l '^recipient: pm' *.txt)
	test -n "$pm" || atf_fail "no copy for pm"
	grep -q '^Subject: Postmaster Copy: Undelivered Mail$' $pm || atf_fail subject
	grep -q '^Content-Type: text/rfc822-headers$' $pm || atf_fail "copy has the body"
	atf_check -o match:"^sender: double-bounce" grep '^sender:' $pm
	in_log "$id: postmaster non-delivery notification:" || atf_fail "copy not logged"
	assert_log_clean
}
postmaster_copy_cleanup() {
	stop_instance
}

atf_test_case delay_and_success cleanup
delay_and_success_head() {
	atf_set descr "delay warnings from the defer log (kept) and success notices from inline records"
	atf_set require.user unprivileged
}
delay_and_success_body() {
	bounce_instance "maximal_queue_lifetime = 2d"
	id=$(original alice@example.org -e env-7)
	atf_check $BC -c etc append defer $id \
	    "bob@example.net|1|delayed|4.4.1|connect to mx.example.net: Connection refused" \
	    "carol@example.net|2|delayed|4.2.2|mailbox full|2"
	atf_check -s exit:0 -o save:reply $BC send q/private/bounce delay active $id
	atf_check -o match:"^status=0 id=[0-9A-Z]+ reason=delay notice sent" cat reply
	nid=$(sed 's/.*id=\([0-9A-Z]*\) .*/\1/' reply)
	notice $nid
	check_dsn_structure $nid
	grep -q '^Subject: Delayed Mail (still being retried)$' $nid.txt || atf_fail subject
	grep -q '^Action: delayed$' $nid.txt || atf_fail action
	grep -q '^Will-Retry-Until: ' $nid.txt || atf_fail "no Will-Retry-Until"
	grep -q '^Original-Envelope-Id: env-7$' $nid.txt || atf_fail envid
	# carol asked for FAILURE only
	atf_check -o inline:"Final-Recipient: rfc822; bob@example.net\n" grep '^Final-Recipient:' $nid.txt
	grep -q '^Content-Type: text/rfc822-headers$' $nid.txt || atf_fail "delay returns headers"
	# the defer log stays
	atf_check -o match:"^bob@example.net\\|1\\|delayed" $BC -c etc show defer $id

	rm -f q/incoming/*
	atf_check -s exit:0 -o save:reply $BC send q/private/bounce success active $id 1 \
	    "bob@example.net|1|delivered|2.0.0|delivered to mailbox|1" \
	    "carol@example.net|2|relayed|2.0.0|relayed to mx.example.net|3"
	nid=$(sed 's/.*id=\([0-9A-Z]*\) .*/\1/' reply)
	notice $nid
	grep -q '^Subject: Successful Mail Delivery Report$' $nid.txt || atf_fail subject
	atf_check -o inline:"Action: delivered\nAction: relayed\n" grep '^Action:' $nid.txt
	# no success notice for a recipient that did not ask
	rm -f q/incoming/*
	atf_check -s exit:0 -o match:"^status=0 id= " $BC send q/private/bounce success active $id 1 \
	    "bob@example.net|1|delivered|2.0.0|delivered|2"
	test -z "$(ls q/incoming)" || atf_fail "unwanted success notice"
	# and never a delay warning for a bounce
	id2=$(original "")
	atf_check $BC -c etc append defer $id2 "bob@example.net|1|delayed|4.4.1|later"
	atf_check -s exit:0 -o match:"^status=0 id= " $BC send q/private/bounce delay active $id2
	test -z "$(ls q/incoming)" || atf_fail "delay warning for a bounce"
	assert_log_clean
}
delay_and_success_cleanup() {
	stop_instance
}

atf_test_case failures cleanup
failures_head() {
	atf_set descr "cleanup unreachable or the message gone: status -1 and the log kept; bad requests are refused"
	atf_set require.user unprivileged
}
failures_body() {
	bounce_instance
	id=$(original alice@example.org)
	atf_check $BC -c etc append bounce $id "bob@example.net|1|failed|5.1.1|no"
	atf_check -s exit:0 -o match:"^status=-1 id= reason=non-delivery notice: cannot connect to cleanup" \
	    $BC send q/private/nocleanup bounce active $id
	atf_check -o match:"^bob@example.net" $BC -c etc show bounce $id
	in_log "$id: bounce notice not sent" || atf_fail "not logged"
	# no such message
	atf_check -s exit:0 -o match:"^status=-1 id= reason=cannot open active/4QMZ7X2KCB7H" \
	    $BC send q/private/bounce bounce active 4QMZ7X2KCB7H
	# a malformed request: logged, the connection closed, the daemon lives
	atf_check -s exit:2 -o inline:"EOF\n" $ASK q/private/bounce "garbage"
	WAIT_MAX=50 wait_for in_log "bounce request: " || atf_fail "not logged"
	atf_check -s exit:0 -o match:"^status=0 " $BC send q/private/bounce bounce active $id
	assert_log_clean
}
failures_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case non_delivery
	atf_add_test_case ret_hdrs_and_notify_never
	atf_add_test_case double_bounce
	atf_add_test_case postmaster_copy
	atf_add_test_case delay_and_success
	atf_add_test_case failures
}
