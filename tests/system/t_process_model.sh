#! /usr/bin/env atf-sh
# The process model under load (doc/master.md, "Wake-ups" and "Process
# limits"): waking qmgr never waits for it, and no pool grows past its
# master.cf limit.  Mail goes to the discard agent: these tests are about
# getting mail in, not out.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr

# shipped NAME: the line of service NAME in the shipped conf/master.cf,
# so that these tests check the limits and endpoint types users get.
shipped() {
	sed -n "s/^$1 .*/&/p" @SRCDIR@/conf/master.cf | head -n 1
}

# discard_instance [main.cf lines...]: smtpd on $port, pickup, cleanup,
# qmgr and bounce as conf/master.cf ships them ($QMGR_LINE instead, if
# set), and the discard agent for everything.
discard_instance() {
	port=$(free_port)
	mk_submit "myhostname = mx.example.test" "mydestination =" \
	    "local_recipient_maps =" "default_transport = discard" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 3600s" "inet_protocols = ipv4" "$@"
	mcf "$port inet n - n - ${SMTPD_LIMIT:--} smtpd" \
	    "$(shipped pickup)" "$(shipped cleanup)" \
	    "${QMGR_LINE:-$(shipped qmgr)}" "$(shipped bounce)" \
	    "discard unix - - n - - discard"
	grep -q '^cleanup ' etc/master.cf && grep -q '^qmgr ' etc/master.cf ||
	    atf_fail "no cleanup or qmgr in conf/master.cf"
	start_instance
}

# The pids of one service of this instance.
service_pids() {
	pgrep -f -- "-c $PWD/etc -n $1 " 2>/dev/null || true
}

# Every cleanup process waits in its event loop: none is stuck in a
# request (e.g. waiting to wake qmgr).
cleanups_idle() {
	for _p in $(service_pids cleanup); do
		_w=$(cat /proc/$_p/wchan 2>/dev/null) || continue
		case $_w in
		*epoll*|*poll_schedule*|*do_select*|*pipe_read*|0|"") ;;
		*) echo "cleanup $_p in $_w" >&2; return 1 ;;
		esac
	done
	return 0
}

removed_count() {
	grep -c ': removed$' maillog 2>/dev/null || true
}

removed_ge() {
	[ "$(removed_count)" -ge "$1" ]
}

# submit_with_qmgr_stopped: the qmgr_stopped test on the instance made.
submit_with_qmgr_stopped() {
	WAIT_MAX=100 wait_for nonempty service_pids qmgr || atf_fail "qmgr did not start"
	qpid=$(service_pids qmgr)
	kill -STOP $qpid
	atf_check -s exit:0 -o save:src.out -e ignore $SOURCE -s 10 -m 500 \
	    -f sender@client.example.test -t "rcpt%n@far.example.test" \
	    127.0.0.1:$port
	i=0
	while [ $i -lt 200 ]; do
		printf 'Subject: local %d\n\nbody\n' $i |
		    $SENDMAIL -f local@example.test "user$i@far.example.test" ||
		    atf_fail "sendmail $i failed with qmgr stopped"
		i=$((i + 1))
	done
	# Everything is in the queue while qmgr still sleeps.
	WAIT_MAX=300 wait_for qcount_is incoming 700 ||
	    atf_fail "$(qcount incoming) of 700 messages in incoming/"
	WAIT_MAX=30 wait_for cleanups_idle || atf_fail "a cleanup process is busy"
	limit=$($BIN/postconf -c $PWD/etc -h default_process_limit)
	n=$(service_pids cleanup | wc -l)
	[ "$n" -le "$limit" ] || atf_fail "$n cleanup processes, limit $limit"
	kill -CONT $qpid
	WAIT_MAX=600 wait_for removed_ge 700 ||
	    atf_fail "$(removed_count) of 700 delivered after SIGCONT"
	in_log "status=sent" || atf_fail "no delivery line"
	assert_log_clean
	finish
}

atf_test_case qmgr_stopped cleanup
qmgr_stopped_head() {
	atf_set descr "with qmgr stopped (SIGSTOP), 500 SMTP and 200 sendmail messages are accepted, no cleanup stays busy; after SIGCONT all are delivered"
	atf_set require.user unprivileged
	atf_set timeout 300
}
qmgr_stopped_body() {
	discard_instance
	submit_with_qmgr_stopped
}
qmgr_stopped_cleanup() {
	for p in $(service_pids qmgr); do kill -CONT $p 2>/dev/null; done
	stop_instance
	stop_all
}

atf_test_case qmgr_stopped_stream cleanup
qmgr_stopped_stream_head() {
	atf_set descr "the same with qmgr on a UNIX stream socket (older master.cf files): its listen queue fills and wake-ups are dropped, never waited for"
	atf_set require.user unprivileged
	atf_set timeout 300
}
qmgr_stopped_stream_body() {
	QMGR_LINE="qmgr unix n - n 300 1 qmgr" discard_instance
	submit_with_qmgr_stopped
}
qmgr_stopped_stream_cleanup() {
	qmgr_stopped_cleanup
}

atf_test_case cleanup_bounded cleanup
cleanup_bounded_head() {
	atf_set descr "200 concurrent SMTP sessions never make more cleanup processes than default_process_limit; all mail is accepted"
	atf_set require.user unprivileged
	atf_set timeout 300
}
cleanup_bounded_body() {
	# No recycling during the run (max_use): a process that exits and
	# its successor could both be seen by one pgrep scan, a count of 9
	# that master never had.
	SMTPD_LIMIT=200 discard_instance "default_process_limit = 8" \
	    "max_use = 100000"
	$SOURCE -s 200 -m 600 -f sender@client.example.test \
	    -t "rcpt%n@far.example.test" 127.0.0.1:$port > src.out 2>src.err &
	src=$!
	echo $src > source.pid
	peak=0
	n=0
	# Sample the pool while the sessions run (at most 240 s).
	while kill -0 $src 2>/dev/null && [ $n -lt 2400 ]; do
		c=$(service_pids cleanup | wc -l)
		[ "$c" -gt "$peak" ] && peak=$c
		s=$(service_pids $port | wc -l)
		[ "$s" -gt "${speak:-0}" ] && speak=$s
		n=$((n + 1))
		sleep 0.1
	done
	wait $src || { cat src.out src.err; atf_fail "smtp-source failed"; }
	rm -f source.pid
	grep -q '^accepted=600$' src.out || atf_fail "$(cat src.out)"
	echo "peak: $peak cleanup processes, ${speak:-0} smtpd, limit 8"
	[ "$peak" -le 8 ] || atf_fail "$peak cleanup processes, limit 8"
	[ "$peak" -ge 1 ] || atf_fail "no cleanup process seen"
	WAIT_MAX=600 wait_for removed_ge 600 ||
	    atf_fail "$(removed_count) of 600 delivered"
	assert_log_clean
	finish
}
cleanup_bounded_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case qmgr_stopped
	atf_add_test_case qmgr_stopped_stream
	atf_add_test_case cleanup_bounded
}
