#! /usr/bin/env atf-sh
# Ends of a running system: master killed while SMTP sessions are open
# (its children notice at once, release the listening socket and finish
# only what they are in the middle of, so a new master starts at once),
# and a stop that drains (deliveries in flight finish and are recorded:
# no message is sent twice).  doc/master.md, "Stopping" and "When master
# dies".

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr


# Message-IDs the sink saved, and how many of them it got more than once.
saved_ids() {
	cat saved/msg-* 2>/dev/null | tr -d '\r' | sed -n 's/^Message-ID: //p'
}
unique_ge() {
	[ "$(saved_ids | sort -u | wc -l)" -ge "$1" ]
}
duplicates() {
	saved_ids | sort | uniq -d | wc -l
}

sink_messages_ge() {
	[ "$(value s.stats messages 2>/dev/null)" -ge "$1" ] 2>/dev/null
}

has_line() {
	grep -Eq "$2" "$1" 2>/dev/null
}

# A process that is gone or a zombie (with master dead, nobody may reap
# it) is not alive.
any_alive() {
	for _p in "$@"; do
		case "$(ps -o stat= -p "$_p" 2>/dev/null)" in
		""|Z*) ;;
		*) return 0 ;;
		esac
	done
	return 1
}
none_alive() {
	! any_alive "$@"
}

atf_test_case master_killed cleanup
master_killed_head() {
	atf_set descr "kill -9 of master with 3 idle SMTP sessions and one in DATA: idle ones get 421 at once, the busy one finishes its message, the old processes exit, and petrel start succeeds at once and greets new clients"
	atf_set require.user unprivileged
	atf_set timeout 120
}
master_killed_body() {
	need_bash
	mkdir -p saved
	start_sink s -d saved
	# smtpd_timeout is long: before the fix the old smtpd processes lived
	# on for that long, holding the listening socket.
	relay_instance "$port" "smtpd_timeout = 300s"
	for i in 1 2 3; do
		echo "EHLO idle$i.example.test" > idle$i.in
		spawn idle$i bash hold.bash $port idle$i
	done
	{
		echo "EHLO busy.example.test"
		echo "MAIL FROM:<alice@client.example.test>"
		echo "RCPT TO:<bob@far.example.test>"
		echo "DATA"
		echo "Subject: sent across the death of master"
		echo ""
		echo "first line"
	} > busy.in
	spawn busy bash hold.bash $port busy
	for n in idle1 idle2 idle3; do
		grep_wait $n.log '^250 '
	done
	grep_wait busy.log '^354 '
	mpid=$(master_pid)
	[ -n "$mpid" ] || atf_fail "no master"
	# Every process of the old instance but master.
	old=$(instance_pids | grep -vx "$mpid" | tr '\n' ' ')
	[ "$(echo $old | wc -w)" -ge 5 ] || atf_fail "expected 4 smtpd and a cleanup at least: $old"

	kill -9 "$mpid"
	wait_for pid_gone "$mpid" || atf_fail "master did not die"
	# A new instance starts at once: the old processes have let go of
	# the listening socket, and the dead master's lock is free.
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc start
	# ... and greets a new client.
	printf 'QUIT\n' > quit.txt
	CHAT_TIMEOUT=10 bash chat.bash $port quit.txt > new.out
	grep -q '^220 ' new.out || atf_fail "new client not greeted: $(cat new.out)"
	grep -q '^221 ' new.out || atf_fail "no reply to QUIT: $(cat new.out)"

	# The idle sessions were told to go.
	for n in idle1 idle2 idle3; do
		grep_wait $n.log '^421 4\.3\.2 '
		grep_wait $n.log '^CLOSED'
	done
	# The session in DATA finishes its message, then is told to go.
	has_line busy.log '^421 ' && atf_fail "busy session ended before its message"
	{
		echo "last line"
		echo "."
	} >> busy.in
	grep_wait busy.log '^250 2\.0\.0 Ok: queued as '
	grep_wait busy.log '^421 4\.3\.2 '
	grep_wait busy.log '^CLOSED'
	# Every old process is gone.
	wait_for none_alive $old || atf_fail "old processes left: $(ps -o pid,args -p "$(echo $old | tr ' ' ',')" 2>&1)"
	# The message accepted across the death of master is delivered by
	# the new instance.
	WAIT_MAX=200 wait_for sink_messages_ge 1 || atf_fail "message not delivered"
	grep -l "sent across the death of master" saved/* > /dev/null || atf_fail "wrong message"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	wait_for no_process_left || atf_fail "left: $(instance_pids)"
	assert_log_clean
	finish
}
master_killed_cleanup() {
	stop_instance
	stop_all
}

atf_test_case stop_drains cleanup
stop_drains_head() {
	atf_set descr "petrel stop twice during deliveries to a slow server (0.2 s a message, 10 sessions): the deliveries in flight finish and are recorded, none is sent twice"
	atf_set require.user unprivileged
	atf_set timeout 300
}
stop_drains_body() {
	total=300
	mkdir -p saved
	# The sink takes 0.2 s to confirm each message it has already saved:
	# a delivery cut off then is made again after the restart.
	start_sink s -d saved -y 200
	relay_instance "$port" "initial_destination_concurrency = 10" \
	    "default_destination_concurrency_limit = 10"
	atf_check -s exit:0 -o ignore -e ignore $SOURCE -s 4 -m $total \
	    -f sender@client.example.test -t "rcpt%n@far.example.test" \
	    127.0.0.1:$port
	for at in 30 120; do
		WAIT_MAX=300 wait_for unique_ge $at || atf_fail "fewer than $at messages arrived"
		atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
		wait_for no_process_left || atf_fail "left after stop: $(instance_pids)"
		unique_ge $total && atf_fail "all delivered before the stop: nothing was in flight"
		start_instance
	done
	WAIT_MAX=600 wait_for unique_ge $total ||
	    atf_fail "$(saved_ids | sort -u | wc -l) of $total messages arrived"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	d=$(duplicates)
	[ "$d" -eq 0 ] || atf_fail "$d messages delivered twice"
	test "$(ls saved | wc -l)" -eq $total || atf_fail "$(ls saved | wc -l) messages saved for $total"
	# Deliveries ended by themselves: nothing was killed.
	in_log "still running after stop_drain_timeout" && atf_fail "processes were killed"
	test "$(grep -c "terminating on signal: stopping every process" maillog)" -eq 3 || atf_fail "three stops expected in the log"
	assert_log_clean
	finish
}
stop_drains_cleanup() {
	stop_instance
	stop_all
}

atf_test_case abort_is_immediate cleanup
abort_is_immediate_head() {
	atf_set descr "petrel abort does not drain: an SMTP session in DATA is cut off and every process is gone at once"
	atf_set require.user unprivileged
	atf_set timeout 120
}
abort_is_immediate_body() {
	need_bash
	start_sink s
	relay_instance "$port" "stop_drain_timeout = 60s"
	printf 'EHLO busy.example.test\nMAIL FROM:<a@client.example.test>\nRCPT TO:<b@far.example.test>\nDATA\n' > busy.in
	spawn busy bash hold.bash $port busy
	grep_wait busy.log '^354 '
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc abort
	wait_for no_process_left || atf_fail "left after abort: $(instance_pids)"
	grep_wait busy.log '^CLOSED'
	has_line busy.log '^421 ' && atf_fail "abort drained the session"
	finish
}
abort_is_immediate_cleanup() {
	stop_instance
	stop_all
}

atf_test_case stop_waits_for_transaction cleanup
stop_waits_for_transaction_head() {
	atf_set descr "petrel stop lets an SMTP session in DATA finish its message (within stop_drain_timeout); an idle session gets 421 at once"
	atf_set require.user unprivileged
	atf_set timeout 120
}
stop_waits_for_transaction_body() {
	need_bash
	mkdir -p saved
	start_sink s -d saved
	relay_instance "$port" "stop_drain_timeout = 30s"
	echo "EHLO idle.example.test" > idle.in
	spawn idle bash hold.bash $port idle
	printf 'EHLO busy.example.test\nMAIL FROM:<a@client.example.test>\nRCPT TO:<b@far.example.test>\nDATA\nSubject: finished during a stop\n\n' > busy.in
	spawn busy bash hold.bash $port busy
	grep_wait idle.log '^250 '
	grep_wait busy.log '^354 '
	$PETREL -c $PWD/etc stop > stop.out 2>&1 &
	stopper=$!
	grep_wait idle.log '^421 4\.3\.2 '
	grep_wait idle.log '^CLOSED'
	has_line busy.log '^421 ' && atf_fail "busy session ended before its message"
	pid_alive $stopper || atf_fail "stop did not wait for the transaction"
	printf 'body\n.\n' >> busy.in
	grep_wait busy.log '^250 2\.0\.0 Ok: queued as '
	grep_wait busy.log '^421 4\.3\.2 '
	WAIT_MAX=100 wait_for pid_gone $stopper || atf_fail "stop did not end"
	wait $stopper || atf_fail "petrel stop failed: $(cat stop.out)"
	wait_for no_process_left || atf_fail "left: $(instance_pids)"
	# Accepted during the stop: on disk, and delivered after a start.
	start_instance
	WAIT_MAX=200 wait_for sink_messages_ge 1 || atf_fail "message not delivered"
	grep -l "finished during a stop" saved/* > /dev/null || atf_fail "wrong message"
	finish
}
stop_waits_for_transaction_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case master_killed
	atf_add_test_case stop_drains
	atf_add_test_case abort_is_immediate
	atf_add_test_case stop_waits_for_transaction
}
