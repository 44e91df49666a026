#! /usr/bin/env atf-sh
# qmgr under master with the test delivery agent: recipient outcomes in
# the queue file and the status logs, back-off times, flush, expiry,
# crash recovery, the active queue limit and its alternation.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/queue.subr
. @SRCDIR@/tests/system/qmgr.subr

# mtime FILE: its modification time, seconds since the epoch.
mtime() {
	stat -c %Y "$1" 2>/dev/null || stat -f %m "$1"
}

atf_test_case mixed cleanup
mixed_head() {
	atf_set descr "mixed outcomes: done recipients, defer and bounce logs, retry time from the back-off function"
	atf_set require.user unprivileged
}
mixed_body() {
	require_test_agent
	qmgr_instance
	id=$(inject -f sender@s.example -r ok@t.example -r defer@t.example \
	    -O orig@o.example -r bounce@t.example -r ok2@u.example) ||
	    atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred"
	now=$(date +%s)

	# one log line per recipient, in Postfix's format
	in_log "$id: from=<sender@s.example>, size=[0-9]*, nrcpt=4 (queue active)" ||
	    atf_fail "no queue active line"
	grep -q "$id: to=<ok@t.example>, relay=test-agent, delay=[0-9.]*, delays=[0-9.]*/[0-9.]*/[0-9.]*/[0-9.]*, dsn=2.0.0, status=sent (" maillog ||
	    atf_fail "no sent line"
	grep -q "$id: to=<defer@t.example>, relay=[^,]*, delay=.*, dsn=4\.[0-9.]*, status=deferred (" maillog ||
	    atf_fail "no deferred line"
	grep -q "$id: to=<bounce@t.example>, orig_to=<orig@o.example>, relay=.*, dsn=5\.[0-9.]*, status=bounced (" maillog ||
	    atf_fail "no bounced line"
	in_log "$id: to=<ok2@u.example>.* status=sent" || atf_fail "second transport"

	# the queue file: delivered and bounced recipients done, one attempt
	f=$(qpath deferred $id)
	atf_check -s exit:0 -o save:cat.out $POSTCAT $f
	grep -q '^done_recipient: ok@t.example$' cat.out || atf_fail "ok not done"
	grep -q '^done_recipient: ok2@u.example$' cat.out || atf_fail "ok2 not done"
	grep -q '^done_recipient: bounce@t.example$' cat.out || atf_fail "bounce not done"
	grep -q '^recipient: defer@t.example$' cat.out || atf_fail "defer done"
	grep -q '^attempts: 1$' cat.out || atf_fail "attempts"

	# the defer log has the deferred recipient and only it
	d=$(find q/defer -type f -name $id)
	test -n "$d" || atf_fail "no defer log"
	grep -aq 'defer@t.example' $d || atf_fail "defer log lacks the recipient"
	grep -aq 'ok@t.example' $d && atf_fail "delivered recipient in the defer log"
	# bounced: in the bounce log, or already handed to the bounce daemon
	if [ -x $B/bin/bounce ] && [ -x $B/bin/cleanup ]; then
		# the notice was asked for before the file went to deferred
		in_log "$id: sender non-delivery notification: " ||
		    atf_fail "no non-delivery notice"
		test -z "$(find q/bounce -type f -name $id)" || atf_fail "bounce log left"
	else
		b=$(find q/bounce -type f -name $id)
		test -n "$b" || atf_fail "no bounce log"
		grep -aq 'bounce@t.example' $b || atf_fail "bounce log lacks the recipient"
	fi

	# retry time: linear, MIN 100 MAX 1000 NUM 10: t(1) = 100 s
	t=$(mtime $f)
	delta=$((t - now))
	[ $delta -ge 97 ] && [ $delta -le 101 ] || atf_fail "retry in $delta s, want 100"

	# the agent saw every recipient once
	for r in ok@t.example defer@t.example bounce@t.example ok2@u.example; do
		test "$(count " $r " agent.log)" -eq 1 || atf_fail "$r delivered $(count " $r " agent.log) times"
	done

	# flush: a second attempt at once, only for the deferred recipient;
	# t(2) = 100 + 90 s
	flush
	WAIT_MAX=100 wait_for lines_ge 2 "$id: from=" maillog || atf_fail "no second pass"
	WAIT_MAX=100 wait_for lines_ge 2 "$id: to=<defer@t.example>" maillog ||
	    atf_fail "no second attempt"
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred again"
	now=$(date +%s)
	sleep 0.2
	f=$(qpath deferred $id)
	atf_check -s exit:0 -o save:cat2.out $POSTCAT $f
	grep -q '^attempts: 2$' cat2.out || atf_fail "attempts after the second pass"
	t=$(mtime $f)
	delta=$((t - now))
	[ $delta -ge 187 ] && [ $delta -le 191 ] || atf_fail "retry in $delta s, want 190"
	test "$(count " ok@t.example " agent.log)" -eq 1 || atf_fail "ok delivered again"
	test "$(count " defer@t.example " agent.log)" -eq 2 || atf_fail "defer not tried twice"
	has_qmgr || atf_fail "qmgr died"
	assert_log_clean
}
mixed_cleanup() {
	stop_instance
}

atf_test_case all_sent cleanup
all_sent_head() {
	atf_set descr "a message whose recipients are all delivered is removed, with its logs"
	atf_set require.user unprivileged
}
all_sent_body() {
	require_test_agent
	qmgr_instance
	start_instance
	id=$(inject -f a@s.example -r ok1@t.example -r ok2@t.example -r ok3@u.example) ||
	    atf_fail "mkqfile"
	# cleanup would trigger qmgr; a flush does it too
	flush
	WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "not removed"
	for qq in incoming active deferred defer bounce; do
		not_in_queue $qq $id || atf_fail "left in $qq"
	done
	# one request for the two recipients of one destination
	test "$(grep -c "^$id t.example " agent.log)" -eq 2 || atf_fail "agent log"
	assert_log_clean
}
all_sent_cleanup() {
	stop_instance
}

atf_test_case done_skipped cleanup
done_skipped_head() {
	atf_set descr "recipients marked done in the file are not delivered again"
	atf_set require.user unprivileged
}
done_skipped_body() {
	require_test_agent
	qmgr_instance
	id=$(inject -r a@t.example -r b@t.example -r c@t.example -k 0 -k 2) ||
	    atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "not removed"
	test "$(grep -c "^$id " agent.log)" -eq 1 || atf_fail "done recipients delivered"
	grep -q "^$id t.example b@t.example " agent.log || atf_fail "b not delivered"
	assert_log_clean
}
done_skipped_cleanup() {
	stop_instance
}

atf_test_case expire cleanup
expire_head() {
	atf_set descr "past maximal_queue_lifetime a deferred message is returned: status=expired"
	atf_set require.user unprivileged
}
expire_body() {
	require_test_agent
	qmgr_instance "maximal_queue_lifetime = 1h"
	# arrived two hours ago
	t=$(($(date +%s) - 7200))
	id=$(inject -T $t.0 -f sender@s.example -r ok@t.example -r defer@t.example) ||
	    atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_log "$id: from=<sender@s.example>, status=expired, returned to sender" ||
	    atf_fail "not expired"
	in_log "$id: to=<defer@t.example>.*status=deferred" || atf_fail "no deferral"
	if [ -x $B/bin/bounce ]; then
		WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "not removed"
		not_in_queue deferred $id || atf_fail "still deferred"
	else
		# no bounce daemon: the notice waits, the recipient is failed
		# in the bounce log with its deferral reason
		b=$(find q/bounce -type f -name $id)
		test -n "$b" || atf_fail "no bounce log"
		grep -aq 'defer@t.example' $b || atf_fail "bounce log"
		WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not kept"
		atf_check -s exit:0 -o save:cat.out $POSTCAT $(qpath deferred $id)
		grep -q '^done_recipient: defer@t.example$' cat.out ||
		    atf_fail "expired recipient not done"
	fi
	test "$(count " defer@t.example " agent.log)" -eq 1 || atf_fail "tried again"
	# the defer log is gone: nothing waits
	test -z "$(find q/defer -type f -name $id)" || atf_fail "defer log left"
	assert_log_clean
}
expire_cleanup() {
	stop_instance
}

atf_test_case crash_restart cleanup
crash_restart_head() {
	atf_set descr "kill -9 of qmgr during deliveries: after the restart nothing is lost and done recipients are not delivered again"
	atf_set require.user unprivileged
	atf_set timeout 120
}
crash_restart_body() {
	require_test_agent
	qmgr_instance "default_time_limit = 20s"
	cat > etc/rules <<EOF
*@slow.example slow 4000
EOF
	sed -i.bak "s|$TA log=|$TA rules=$PWD/etc/rules log=|" etc/master.cf
	ids=
	for i in 1 2 3 4 5; do
		id=$(inject -r ok$i@t.example -r slow$i@slow.example) || atf_fail "mkqfile"
		ids="$ids $id"
	done
	start_instance
	# the fast recipients are done, the slow ones are in flight
	WAIT_MAX=100 wait_for lines_ge 5 "to=<ok[0-9]@t.example>.*status=sent" maillog ||
	    atf_fail "fast deliveries"
	test "$(count 'status=sent.*slow' maillog)" -eq 0 || atf_fail "slow too fast"
	p=$(qmgr_pid)
	test -n "$p" || atf_fail "no qmgr"
	kill -9 $p
	wait_for pid_gone $p || atf_fail "qmgr did not die"
	for id in $ids; do
		in_queue active $id || atf_fail "$id not in active"
	done
	# a new qmgr: master starts it for the next trigger
	flush
	WAIT_MAX=100 wait_for has_qmgr || atf_fail "qmgr not restarted"
	test "$(qmgr_pid)" != "$p" || atf_fail "same qmgr"
	in_log "recovered 5 messages left in the active queue" || atf_fail "no recovery"
	for id in $ids; do
		WAIT_MAX=200 wait_for in_log "$id: removed" || atf_fail "$id not delivered"
	done
	# at least once for the ones in flight, exactly once for the others
	for i in 1 2 3 4 5; do
		test "$(count " ok$i@t.example " agent.log)" -eq 1 ||
		    atf_fail "ok$i delivered $(count " ok$i@t.example " agent.log) times"
		test "$(count " slow$i@slow.example " agent.log)" -ge 1 ||
		    atf_fail "slow$i lost"
	done
	for qq in incoming active deferred; do
		test -z "$(find q/$qq -type f)" || atf_fail "mail left in $qq"
	done
	assert_log_clean
}
crash_restart_cleanup() {
	stop_instance
}

atf_test_case flush_deferred cleanup
flush_deferred_head() {
	atf_set descr "deferred mail waits for its retry time; a flush makes it eligible at once"
	atf_set require.user unprivileged
}
flush_deferred_body() {
	require_test_agent
	qmgr_instance
	id=$(inject -r defer@t.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred"
	# new mail ("I", what cleanup sends) and a deferred scan ("D") do
	# not take deferred mail before its retry time
	id2=$(inject -r ok@t.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for in_log "$id2: removed" || atf_fail "new mail"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr D
	atf_check -s exit:0 $TS trigger-send q/public/qmgr W
	id3=$(inject -r ok@t.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for in_log "$id3: removed" || atf_fail "new mail"
	test "$(count " defer@t.example " agent.log)" -eq 1 ||
	    atf_fail "deferred mail retried early"
	test "$(grep -c "$id: from=" maillog)" -eq 1 || atf_fail "taken early"
	# a flush: at once
	flush
	WAIT_MAX=100 wait_for lines_ge 2 " defer@t.example " agent.log ||
	    atf_fail "flush did not retry"
	WAIT_MAX=100 wait_for lines_ge 2 "$id: to=<defer@t.example>" maillog ||
	    atf_fail "no second deferral"
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred again"
	assert_log_clean
}
flush_deferred_cleanup() {
	stop_instance
}

atf_test_case alternate cleanup
alternate_head() {
	atf_set descr "with a full active queue, new and deferred mail take turns"
	atf_set require.user unprivileged
}
alternate_body() {
	require_test_agent
	qmgr_instance "qmgr_message_active_limit = 1"
	inc=
	def=
	for i in 1 2 3; do
		inc="$inc $(inject -r new$i@t.example)" || atf_fail "mkqfile"
		# due now: a deferred file's time is its retry time
		def="$def $(inject -q deferred -r old$i@t.example)" || atf_fail "mkqfile"
	done
	start_instance
	for id in $inc $def; do
		WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "$id not delivered"
	done
	# the order in which they entered the active queue
	order=
	for id in $(sed -n 's/.*: \([0-9A-Z]*\): from=.*(queue active)$/\1/p' maillog); do
		case " $inc " in *" $id "*) order="${order}I";; *) order="${order}D";; esac
	done
	test "$order" = IDIDID || atf_fail "order $order, want IDIDID"
	assert_log_clean
}
alternate_cleanup() {
	stop_instance
}

atf_test_case recover_and_corrupt cleanup
recover_and_corrupt_head() {
	atf_set descr "at start, mail left in active is delivered; a damaged file goes to corrupt/"
	atf_set require.user unprivileged
}
recover_and_corrupt_body() {
	require_test_agent
	qmgr_instance
	id=$(inject -q active -r ok@t.example) || atf_fail "mkqfile"
	bad=$(inject -r ok@u.example) || atf_fail "mkqfile"
	f=$(qpath incoming $bad)
	# cut the end record off
	head -c $(($(wc -c < $f) - 5)) $f > $f.tmp && mv $f.tmp $f
	start_instance
	WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "recovered mail"
	in_log "recovered 1 message left in the active queue" || atf_fail "no recovery line"
	WAIT_MAX=100 wait_for in_queue corrupt $bad || atf_fail "not moved to corrupt"
	in_log "$bad: damaged queue file" || atf_fail "no damage line"
	has_qmgr || atf_fail "qmgr died"
	assert_log_clean
}
recover_and_corrupt_cleanup() {
	stop_instance
}

atf_test_case changed_byte cleanup
changed_byte_head() {
	atf_set descr "a byte changed inside a recipient: the file goes to corrupt/ with the offset logged, nothing is delivered, the done recipient stays done"
	atf_set require.user unprivileged
}
changed_byte_body() {
	require_test_agent
	qmgr_instance
	id=$(inject -r done@t.example -r victim04@t.example -k 0) ||
	    atf_fail "mkqfile"
	f=$(qpath incoming $id)
	off=$(grep -boa 'victim04' $f | cut -d: -f1)
	printf '3' | dd of=$f bs=1 seek=$((off + 1)) conv=notrunc 2>/dev/null
	grep -q v3ctim04 $f || atf_fail "the byte was not changed"
	start_instance
	WAIT_MAX=100 wait_for in_queue corrupt $id || atf_fail "not moved to corrupt"
	in_log "$id: damaged queue file in active: at offset $((off - 2)): recipient record fails its check" ||
	    atf_fail "no damage line with the offset: $(grep $id maillog)"
	grep -q 'v3ctim04\|victim04' agent.log 2>/dev/null && atf_fail "delivered"
	atf_check -s exit:1 -o match:'^done_recipient: done@t.example$' \
	    -e ignore $POSTCAT $(qpath corrupt $id)
	has_qmgr || atf_fail "qmgr died"
}
changed_byte_cleanup() {
	stop_instance
}

atf_test_case torn_attempts cleanup
torn_attempts_head() {
	atf_set descr "a torn attempts slot (read as 0) does not hide the logs of earlier passes"
	atf_set require.user unprivileged
}
torn_attempts_body() {
	require_test_agent
	qmgr_instance
	id=$(inject -r ok@t.example -A 2) || atf_fail "mkqfile"
	f=$(qpath incoming $id)
	# one digit of the attempts slot changed (offset 77 + 2): torn
	printf '1' | dd of=$f bs=1 seek=79 conv=notrunc 2>/dev/null
	# a defer log of an earlier pass, where an earlier hash_queue_depth
	# (0) put it
	mkdir -p q/defer
	echo 'from an earlier pass' > q/defer/$id
	start_instance
	WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "not delivered"
	in_log "$id: torn attempts slot" || atf_fail "no torn slot warning"
	test -e q/defer/$id && atf_fail "the earlier pass's defer log was left behind"
	has_qmgr || atf_fail "qmgr died"
}
torn_attempts_cleanup() {
	stop_instance
}

atf_test_case congestion cleanup
congestion_head() {
	atf_set descr "a full active queue with mail waiting is logged; everything is delivered"
	atf_set require.user unprivileged
}
congestion_body() {
	require_test_agent
	qmgr_instance "qmgr_message_active_limit = 2" "qmgr_clog_warn_time = 1s"
	ids=
	for i in 1 2 3 4 5 6; do
		ids="$ids $(inject -r slow+$i@t.example)" || atf_fail "mkqfile"
	done
	start_instance
	for id in $ids; do
		WAIT_MAX=200 wait_for in_log "$id: removed" || atf_fail "$id not delivered"
	done
	in_log "warning: active queue congested: 2 of 2 messages" ||
	    atf_fail "no congestion warning"
	in_log "mail for test:t.example holds" || atf_fail "destination not named"
	assert_log_clean
}
congestion_cleanup() {
	stop_instance
}

atf_test_case reload_drain cleanup
reload_drain_head() {
	atf_set descr "a reload retires qmgr: replies of deliveries in flight are still recorded, nothing is delivered twice"
	atf_set require.user unprivileged
	atf_set timeout 120
}
reload_drain_body() {
	require_test_agent
	qmgr_instance "default_time_limit = 20s"
	echo '*@slow.example slow 2000' > etc/rules
	sed -i.bak "s|$TA log=|$TA rules=$PWD/etc/rules log=|" etc/master.cf
	id=$(inject -r a@slow.example -r ok@t.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_log "$id: to=<ok@t.example>.*status=sent" ||
	    atf_fail "fast delivery"
	p=$(qmgr_pid)
	# a changed main.cf: master retires its daemons at the reload
	echo "qmgr_clog_warn_time = 301s" >> etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=100 wait_for pid_gone $p || atf_fail "qmgr not retired"
	in_log "$id: to=<a@slow.example>.*status=sent" || atf_fail "reply not recorded"
	in_log "$id: removed" || atf_fail "not removed by the old qmgr"
	flush
	WAIT_MAX=100 wait_for has_qmgr || atf_fail "no new qmgr"
	sleep 1
	test "$(count " a@slow.example " agent.log)" -eq 1 || atf_fail "delivered twice"
	not_in_queue active $id || atf_fail "left in active"
	assert_log_clean
}
reload_drain_cleanup() {
	stop_instance
}

atf_test_case via_cleanup cleanup
via_cleanup_head() {
	atf_set descr "mail from cleanup is picked up at once (its trigger); discard, error and retry transports"
	atf_set require.user unprivileged
}
via_cleanup_body() {
	require_test_agent
	[ -x $B/bin/cleanup ] || atf_skip "cleanup is not built"
	[ -x $B/bin/discard ] && [ -x $B/bin/error ] || atf_skip "discard/error agents not built"
	qmgr_instance
	start_instance
	printf 'Subject: via cleanup\n\nbody\n' > msg
	atf_check -s exit:0 -o save:sub.out $B/tests/tools/cleanup-submit \
	    -s $PWD/q/private/cleanup -f s@s.example msg ok@t.example \
	    x@discard.example e@error.example r@retry.example
	id=$(awk '{print $3}' sub.out)
	test -n "$id" || atf_fail "no queue ID"
	# no flush: cleanup's trigger is enough
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not processed"
	in_log "$id: to=<ok@t.example>.*status=sent" || atf_fail "ok"
	in_log "$id: to=<x@discard.example>.*dsn=2\.[0-9.]*, status=sent (" ||
	    atf_fail "discard"
	in_log "$id: to=<e@error.example>.*dsn=5\.1\.1, status=bounced (.*mailbox closed for the test" ||
	    atf_fail "error"
	in_log "$id: to=<r@retry.example>.*dsn=4\.2\.2, status=deferred (.*try again for the test" ||
	    atf_fail "retry"
	atf_check -s exit:0 -o save:cat.out $POSTCAT $(qpath deferred $id)
	grep -q '^recipient: r@retry.example$' cat.out || atf_fail "retry recipient done"
	test "$(grep -c '^done_recipient:' cat.out)" -eq 3 || atf_fail "done recipients"
	assert_log_clean
}
via_cleanup_cleanup() {
	stop_instance
}

atf_test_case retry_timer cleanup
retry_timer_head() {
	atf_set descr "deferred mail is retried on its own once its retry time has come (queue_run_delay scans)"
	atf_set require.user unprivileged
}
retry_timer_body() {
	require_test_agent
	qmgr_instance "queue_run_delay = 1s" "minimal_backoff_time = 2s" \
	    "maximal_backoff_time = 2s"
	id=$(inject -r defer@t.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred"
	# no trigger, no flush
	WAIT_MAX=300 wait_for lines_ge 3 " defer@t.example " agent.log ||
	    atf_fail "not retried"
	# and not before its time: 2 s apart at least
	grep "$id: from=" maillog | sed 's/^[A-Z][a-z]* *[0-9]* \([0-9:]*\) .*/\1/' > times
	t1=$(sed -n 1p times | awk -F: '{print $1*3600+$2*60+$3}')
	t3=$(sed -n 3p times | awk -F: '{print $1*3600+$2*60+$3}')
	[ $((t3 - t1)) -ge 3 ] || atf_fail "retried too early: $(cat times)"
	assert_log_clean
}
retry_timer_cleanup() {
	stop_instance
}

atf_test_case many_bounces cleanup
many_bounces_head() {
	atf_set descr "120 failed recipients in three deliveries: all in the bounce log, all marked done"
	atf_set require.user unprivileged
}
many_bounces_body() {
	require_test_agent
	qmgr_instance
	args="-r defer@t.example"
	i=1
	while [ $i -le 120 ]; do
		args="$args -r bounce+$i@t.example"
		i=$((i + 1))
	done
	# mkqfile takes at most 64 recipients: the rest as extracted ones
	args=$(echo $args | awk '{ for (i = 1; i <= NF; i += 2) printf "%s %s ", (i > 120 ? "-x" : $i), $(i+1) }')
	id=$(inject $args) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $id || atf_fail "not deferred"
	test "$(count "$id: to=<bounce+[0-9]*@t.example>.*status=bounced" maillog)" -eq 120 ||
	    atf_fail "bounced lines"
	atf_check -s exit:0 -o save:cat.out $POSTCAT $(qpath deferred $id)
	test "$(grep -c '^done_recipient: bounce+' cat.out)" -eq 120 || atf_fail "done"
	if [ ! -x $B/bin/bounce ]; then
		b=$(find q/bounce -type f -name $id)
		test "$(grep -ac 'bounce+[0-9]*@t.example' $b)" -eq 120 ||
		    atf_fail "bounce log records"
	fi
	assert_log_clean
}
many_bounces_cleanup() {
	stop_instance
}

atf_test_case big_message cleanup
big_message_head() {
	atf_set descr "a message with 3000 recipients and room for 100 in memory is read in batches; each recipient delivered once"
	atf_set require.user unprivileged
	atf_set timeout 300
}
big_message_body() {
	require_test_agent
	[ -x $B/bin/cleanup ] || atf_skip "cleanup is not built"
	qmgr_instance "qmgr_message_recipient_limit = 100" \
	    "default_recipient_limit = 100" "qmgr_message_recipient_minimum = 10" \
	    "default_recipient_refill_limit = 20"
	start_instance
	printf 'Subject: big\n\nbody\n' > msg
	rcpts=$(awk 'BEGIN { for (i = 1; i <= 3000; i++) printf "r%d@t.example ", i }')
	atf_check -s exit:0 -o save:sub.out $B/tests/tools/cleanup-submit \
	    -s $PWD/q/private/cleanup -f s@s.example msg $rcpts
	id=$(awk '{print $3}' sub.out)
	WAIT_MAX=1200 wait_for in_log "$id: removed" || atf_fail "not removed"
	test "$(grep -c "^$id t.example r[0-9]*@t.example ok " agent.log)" -eq 3000 ||
	    atf_fail "$(grep -c "^$id " agent.log) deliveries"
	test "$(awk '{print $3}' agent.log | sort -u | wc -l)" -eq 3000 ||
	    atf_fail "duplicates"
	# 50 recipients a delivery (default_destination_recipient_limit)
	test "$(count "$id: to=<r[0-9]*@t.example>.*status=sent" maillog)" -eq 3000 ||
	    atf_fail "log lines"
	assert_log_clean
}
big_message_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case big_message
	atf_add_test_case many_bounces
	atf_add_test_case retry_timer
	atf_add_test_case via_cleanup
	atf_add_test_case reload_drain
	atf_add_test_case mixed
	atf_add_test_case all_sent
	atf_add_test_case done_skipped
	atf_add_test_case expire
	atf_add_test_case crash_restart
	atf_add_test_case flush_deferred
	atf_add_test_case alternate
	atf_add_test_case recover_and_corrupt
	atf_add_test_case changed_byte
	atf_add_test_case torn_attempts
	atf_add_test_case congestion
}
