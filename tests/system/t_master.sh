#! /usr/bin/env atf-sh
# master under a private instance: endpoints, on-demand children,
# respawn, throttling, recycling, the watchdog, wakeups, stop.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr

# start_instance_try: like start_instance, but returns the status.
start_instance_try() {
	jail_mcf
	$PETREL -c $PWD/etc start >/dev/null 2>&1
}

procs_ge() {
	[ "$(instance_pids | wc -l)" -ge "$1" ]
}

atf_test_case unix_and_tcp cleanup
unix_and_tcp_head() {
	atf_set descr "a private instance serves on a UNIX socket and a TCP port; stop leaves nothing"
	atf_set require.user unprivileged
}
unix_and_tcp_body() {
	port=$(free_port)
	mk_instance
	mcf "echo unix - n n - 2 TS" \
	    "$port inet n n n - - TS multi"
	start_instance
	atf_check -s exit:0 -o inline:'hello\n' $ASK q/private/echo "echo hello"
	atf_check -s exit:0 -o inline:'over tcp\n' $ASK 127.0.0.1:$port "echo over tcp"
	# the children run as we do: a private instance
	atf_check -s exit:0 -o match:"^uid=$(id -u) gid=$(id -g) " $ASK q/private/echo id
	atf_check -s exit:0 -o inline:"echo unix\n" $ASK q/private/echo service
	# status: exit 0 and master's pid, which is the pid file's
	atf_check -s exit:0 -o save:pid -e match:'is running: master pid' $PETREL -c $PWD/etc status
	test "$(cat pid)" -eq "$(tr -d ' ' < q/pid/master.pid)" || atf_fail "pid file"
	in_log "private instance: every process runs as" || atf_fail "private instance not logged"
	in_log "daemon started" || atf_fail "start not logged"
	# the socket directory and sockets
	test -S q/private/echo || atf_fail "no socket"

	atf_check -s exit:0 -o ignore -e match:'stopping' $PETREL -c $PWD/etc stop
	atf_check -s exit:1 -o empty -e match:'not running' $PETREL -c $PWD/etc status
	wait_for no_process_left || atf_fail "processes left: $(instance_pids)"
	in_log "all processes stopped" || atf_fail "stop not logged"
	assert_log_clean
}
unix_and_tcp_cleanup() {
	stop_instance
}

atf_test_case one_master cleanup
one_master_head() {
	atf_set descr "a second master for the same queue directory refuses to run"
	atf_set require.user unprivileged
}
one_master_body() {
	mk_instance
	mcf "echo unix - n n - 1 TS"
	start_instance
	pid=$(master_pid)
	atf_check -s exit:1 -o empty -e match:"already running.*master pid $pid" \
	    $MASTER -c $PWD/etc
	atf_check -s exit:1 -o empty -e match:"already running.*master pid $pid" \
	    $MASTER -d -c $PWD/etc
	atf_check -s exit:1 -o empty -e match:"already running \\(master pid $pid\\)" \
	    $PETREL -c $PWD/etc start
	atf_check -s exit:1 $MASTER -t -c $PWD/etc
	atf_check -s exit:0 -o inline:"$pid\n" -e ignore $PETREL -c $PWD/etc status
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	atf_check -s exit:0 $MASTER -t -c $PWD/etc
}
one_master_cleanup() {
	stop_instance
}

atf_test_case respawn cleanup
respawn_head() {
	atf_set descr "kill -9 of a child: a new one serves the next client"
	atf_set require.user unprivileged
}
respawn_body() {
	mk_instance
	mcf "echo unix - n n - 1 TS"
	start_instance
	atf_check -s exit:0 -o save:p1 $ASK q/private/echo pid
	p1=$(cat p1)
	kill -9 $p1
	wait_for pid_gone $p1 || atf_fail "child did not die"
	atf_check -s exit:0 -o save:p2 $ASK q/private/echo pid
	test "$(cat p2)" != "$p1" || atf_fail "same pid after kill"
	atf_check -s exit:0 -o inline:'again\n' $ASK q/private/echo "echo again"
	wait_for in_log "pid $p1 was killed by signal 9" || atf_fail "kill not logged"
	# a child that crashes in a request: the client sees the end, the
	# service goes on
	atf_check -s exit:2 -o inline:'EOF\n' $ASK q/private/echo crash
	atf_check -s exit:0 -o inline:'after crash\n' $ASK q/private/echo "echo after crash"
	if in_log "echo/unix.*throttling"; then
		atf_fail "a ready child's death throttled the service"
	fi
	assert_log_clean
}
respawn_cleanup() {
	stop_instance
}

atf_test_case throttle cleanup
throttle_head() {
	atf_set descr "a service whose processes die at start-up is throttled; master and other services live on"
	atf_set require.user unprivileged
}
throttle_body() {
	mk_instance
	mcf "good unix - n n - 1 TS" \
	    "bad unix - n n - 1 TS fail" \
	    "false unix - n n - 1 /bin/false" \
	    "missing unix - n n - 1 $PWD/no-such-program"
	# petrel start refuses the last two up front (t_petrel_refuse.sh);
	# master itself must still survive them.
	start_master_unchecked
	mpid=$(master_pid)
	# clients of the broken services wait in vain (no process accepts)
	atf_check -s exit:2 -o inline:'TIMEOUT\n' $ASK -t 300 q/private/bad pid
	atf_check -s exit:2 -o inline:'TIMEOUT\n' $ASK -t 300 q/private/false pid
	atf_check -s exit:2 -o inline:'TIMEOUT\n' $ASK -t 300 q/private/missing pid
	wait_for in_log "bad/unix: .* at start-up -- throttling" || atf_fail "bad not throttled"
	wait_for in_log "false/unix: /bin/false exited with status 1 at start-up -- throttling" ||
	    atf_fail "false not throttled"
	wait_for in_log "missing/unix: .*no-such-program exited with status 127 at start-up -- throttling" ||
	    atf_fail "missing not throttled"
	in_log "cannot run $PWD/no-such-program" || atf_fail "exec failure not logged"
	in_log "failing at start-up as asked" || atf_fail "child's own message missing"
	# master is alive and the good service answers
	atf_check -s exit:0 -o inline:"$mpid\n" -e ignore $PETREL -c $PWD/etc status
	atf_check -s exit:0 -o inline:'fine\n' $ASK q/private/good "echo fine"
	# throttled: no second attempt within service_throttle_time (60 s)
	atf_check -s exit:2 -o inline:'TIMEOUT\n' $ASK -t 300 q/private/bad pid
	test "$(grep -c 'bad/unix: process pid' maillog)" -eq 1 || atf_fail "bad restarted while throttled"
	assert_log_clean
}
throttle_cleanup() {
	stop_instance
}

atf_test_case throttle_expires cleanup
throttle_expires_head() {
	atf_set descr "after service_throttle_time master tries the service again"
	atf_set require.user unprivileged
}
throttle_expires_body() {
	mk_instance "service_throttle_time = 1s"
	mcf "bad unix - n n - 1 TS fail"
	start_instance
	atf_check -s exit:2 -o ignore $ASK -t 300 q/private/bad pid
	wait_for in_log "bad/unix: .* throttling: no new process for 1 s" || atf_fail "not throttled"
	wait_for in_log "bad/unix: throttle time over" || atf_fail "throttle never ended"
	# the pending client from above makes master try again
	wait_for lines_ge 2 'bad/unix: process pid' maillog ||
	    atf_fail "no second attempt"
}
throttle_expires_cleanup() {
	stop_instance
}

atf_test_case recycle cleanup
recycle_head() {
	atf_set descr "max_use and max_idle (master.cf -o) end a daemon; master starts a new one"
	atf_set require.user unprivileged
}
recycle_body() {
	mk_instance
	mcf "use unix - n n - 1 TS -o max_use=2" \
	    "idle unix - n n - 1 TS -o max_idle=1s" \
	    "muse unix - n n - 1 TS -o max_use=2 multi"
	start_instance
	atf_check -s exit:0 -o inline:'2\n' $ASK q/private/use "param max_use"
	atf_check -s exit:0 -o save:a $ASK q/private/use pid
	atf_check -s exit:0 -o save:c $ASK q/private/use pid
	test "$(cat a)" != "$(cat c)" || atf_fail "served a third client after max_use=2"
	wait_for pid_gone "$(cat a)" || atf_fail "used-up daemon still there"
	atf_check -s exit:0 -o save:d $ASK q/private/use "pid" "uses"
	test "$(head -1 d)" = "$(cat c)" || atf_fail "second client not served by the new process"
	test "$(sed -n 2p d)" = 2 || atf_fail "use count: $(sed -n 2p d)"
	wait_for pid_gone "$(cat c)" || atf_fail "second daemon did not exit after max_use"

	atf_check -s exit:0 -o save:i $ASK q/private/idle pid
	wait_for pid_gone "$(cat i)" || atf_fail "idle daemon did not exit after max_idle"
	atf_check -s exit:0 -o not-inline:"$(cat i)\n" $ASK q/private/idle pid

	# event-driven: two clients, then the process ends
	atf_check -s exit:0 -o save:m1 $ASK q/private/muse pid
	atf_check -s exit:0 -o save:m2 $ASK q/private/muse pid
	cmp -s m1 m2 || atf_fail "multi server did not keep its process"
	wait_for pid_gone "$(cat m1)" || atf_fail "multi server did not exit after max_use"
	atf_check -s exit:0 -o not-inline:"$(cat m1)\n" $ASK q/private/muse pid
	if grep -q 'warning: service use/unix' maillog; then
		atf_fail "a recycled daemon was reported as failing"
	fi
	assert_log_clean
}
recycle_cleanup() {
	stop_instance
}

atf_test_case accept_lock cleanup
accept_lock_head() {
	atf_set descr "accept_lock = yes: a pool of single-client processes hands one lock around; every client is served, idle holders of nothing retire on reload and die on stop"
	atf_set require.user unprivileged
}
accept_lock_body() {
	mk_instance
	mcf "pool unix - n n - 3 TS -o accept_lock=yes"
	start_instance
	# Three clients at once: three processes.
	for i in 1 2 3; do
		$ASK q/private/pool pid wait:go "echo c$i" > c$i &
	done
	wait_for procs_ge 4 || atf_fail "no pool of three"
	wait_for test -s c1 -a -s c2 -a -s c3 || atf_fail "a held client got nothing"
	touch go
	wait || true
	for i in 1 2 3; do
		test "$(sed -n 2p c$i)" = c$i || atf_fail "client $i: $(cat c$i)"
	done
	test "$(cat c1 c2 c3 | grep -v '^c' | sort -u | wc -l)" -eq 3 ||
	    atf_fail "three clients at once were not served by three processes"
	test -f q/pid/unix.pool || atf_fail "no lock file"
	in_log "accept lock in use" || true
	# Now idle: one holds the lock, two wait for it.  Sequential clients
	# are all served.
	i=0
	while [ $i -lt 20 ]; do
		atf_check -s exit:0 -o save:p $ASK q/private/pool pid
		i=$((i + 1))
	done
	old=$(pgrep -f -- "-c $PWD/etc -n pool")
	# A reload with a changed main.cf retires them all, the ones waiting
	# for the lock included.
	echo "# changed" >> etc/main.cf
	atf_check -s exit:0 -e ignore $PETREL -c $PWD/etc reload
	for p in $old; do
		wait_for pid_gone $p || atf_fail "pool process $p did not retire"
	done
	atf_check -s exit:0 -o not-inline:"\n" $ASK q/private/pool pid
	assert_log_clean
}
accept_lock_cleanup() {
	stop_instance
}

atf_test_case multi_clients cleanup
multi_clients_head() {
	atf_set descr "an event-driven daemon serves several clients at once in one process"
	atf_set require.user unprivileged
}
multi_clients_body() {
	mk_instance
	mcf "multi unix - n n - - TS multi"
	start_instance
	$ASK q/private/multi pid wait:go "echo first" > first &
	cpid=$!
	wait_for test -s first || atf_fail "first client got nothing"
	atf_check -s exit:0 -o save:second $ASK q/private/multi pid
	cmp -s second first || atf_fail "second client served by another process"
	touch go
	wait $cpid || atf_fail "first client failed"
	test "$(sed -n 2p first)" = first || atf_fail "first client lost its connection"
	test "$(pgrep -f -- "-c $PWD/etc -n multi" | wc -l)" -eq 1 || atf_fail "more than one process"
	assert_log_clean
}
multi_clients_cleanup() {
	stop_instance
}

atf_test_case watchdog cleanup
watchdog_head() {
	atf_set descr "a daemon stuck in one request longer than daemon_timeout is killed by its watchdog"
	atf_set require.user unprivileged
}
watchdog_body() {
	mk_instance
	mcf "stuck unix - n n - 1 TS -o daemon_timeout=1s"
	start_instance
	atf_check -s exit:0 -o save:p $ASK q/private/stuck pid
	atf_check -s exit:2 -o inline:'EOF\n' $ASK q/private/stuck hang
	wait_for in_log "watchdog timeout" || atf_fail "watchdog not logged"
	wait_for pid_gone "$(cat p)" || atf_fail "stuck daemon still there"
	atf_check -s exit:0 -o inline:'next\n' $ASK q/private/stuck "echo next"
	assert_log_clean
}
watchdog_cleanup() {
	stop_instance
}

atf_test_case wakeup cleanup
wakeup_head() {
	atf_set descr "wakeup sends periodic triggers to UNIX-socket and fifo trigger services; triggers reach them"
	atf_set require.user unprivileged
}
wakeup_body() {
	mk_instance
	mcf "tick unix - n n 1 1 TS trigger $PWD/tick.out" \
	    "tock fifo - n n 1 1 TS trigger $PWD/tock.out" \
	    "lazy unix - n n 1? 1 TS trigger $PWD/lazy.out" \
	    "dgram unix-dgram - n n - 1 TS trigger $PWD/dgram.out"
	start_instance
	wait_for lines_ge 2 ' W$' tick.out ||
	    atf_fail "unix trigger service: fewer than 2 wakeups"
	wait_for lines_ge 2 ' W$' tock.out ||
	    atf_fail "fifo trigger service: fewer than 2 wakeups"
	test -p q/private/tock || atf_fail "no fifo"
	# other trigger bytes get through as sent
	atf_check -s exit:0 $TS trigger-send q/private/tock XY
	wait_for grep -q ' XY$' tock.out || atf_fail "fifo trigger lost"
	atf_check -s exit:0 $TS trigger-send q/private/tick Z
	wait_for grep -q ' Z$' tick.out || atf_fail "unix trigger lost"
	atf_check -s exit:0 $TS trigger-send q/private/dgram D
	wait_for grep -q ' D$' dgram.out || atf_fail "datagram trigger lost"
	# "1?": no wakeup until used; then wakeups
	test ! -s lazy.out || atf_fail "unused service woken"
	atf_check -s exit:0 $TS trigger-send q/private/lazy U
	wait_for grep -q ' W$' lazy.out || atf_fail "used service not woken"
	# one process each (maxproc 1) served every trigger
	test "$(cut -d' ' -f1 tick.out | sort -u | wc -l)" -eq 1 || atf_fail "tick: several processes"
	assert_log_clean
}
wakeup_cleanup() {
	stop_instance
}

atf_test_case wakeup_never_waits cleanup
wakeup_never_waits_head() {
	atf_set descr "wake-ups to a stopped trigger service never wait; what is pending reaches it in one call, each request byte once"
	atf_set require.user unprivileged
}
wakeup_never_waits_body() {
	mk_instance
	mcf "dg unix-dgram - n n - 1 TS trigger $PWD/dg.out" \
	    "st unix - n n - 1 TS trigger $PWD/st.out"
	start_instance
	atf_check -s exit:0 $TS trigger-wakeup q/private/dg W
	wait_for grep -q ' W$' dg.out || atf_fail "first wake-up lost"
	pid=$(cut -d' ' -f1 dg.out | head -n 1)
	kill -STOP "$pid"
	# Room for a few datagrams: these are queued ...
	atf_check -s exit:0 $TS trigger-wakeup q/private/dg IIIF
	# ... and these find the queue full: dropped, and nobody waits.
	atf_check -s exit:0 $TS trigger-wakeup q/private/dg I 2000
	kill -CONT "$pid"
	wait_for grep -q ' IF$' dg.out || atf_fail "no coalesced IF in $(cat dg.out)"
	sleep 0.5
	test "$(wc -l < dg.out)" -eq 2 ||
	    atf_fail "pending wake-ups took several calls: $(cat dg.out)"

	# A stream trigger service, stopped: connections fill its listen
	# queue, then wake-ups are dropped; the sender never waits.
	atf_check -s exit:0 $TS trigger-wakeup q/private/st W
	wait_for grep -q ' W$' st.out || atf_fail "first stream wake-up lost"
	pid=$(cut -d' ' -f1 st.out | head -n 1)
	kill -STOP "$pid"
	atf_check -s exit:0 $TS trigger-wakeup q/private/st I 500
	kill -CONT "$pid"
	wait_for grep -q ' I$' st.out || atf_fail "stream wake-ups lost"
	assert_log_clean
}
wakeup_never_waits_cleanup() {
	stop_instance
}

atf_test_case environment cleanup
environment_head() {
	atf_set descr "children get a clean environment with MAIL_CONFIG, and master.cf arguments"
	atf_set require.user unprivileged
}
environment_body() {
	mk_instance
	mcf "echo unix - n n - 1 TS -o max_use=7 -o { syslog_name = petrel-test } single extra"
	PETREL_TEST_JUNK=1 $PETREL -c $PWD/etc start >/dev/null 2>&1 || atf_fail "start"
	atf_check -s exit:0 -o inline:'(unset)\n' $ASK q/private/echo "env PETREL_TEST_JUNK"
	atf_check -s exit:0 -o inline:"$PWD/etc\n" $ASK q/private/echo "env MAIL_CONFIG"
	atf_check -s exit:0 -o inline:'7\npetrel-test\n' $ASK q/private/echo \
	    "param max_use" "param syslog_name"
	atf_check -s exit:0 -o inline:'echo unix single extra\n' $ASK q/private/echo service
}
environment_cleanup() {
	stop_instance
}

atf_test_case debugger cleanup
debugger_head() {
	atf_set descr "-D runs debugger_command with the process name and id"
	atf_set require.user unprivileged
}
debugger_body() {
	mk_instance "debugger_command = echo \$process_name \${process_id} > $PWD/dbg.out"
	mcf "echo unix - n n - 1 TS -D"
	start_instance
	atf_check -s exit:0 -o save:p $ASK q/private/echo pid
	atf_check -s exit:0 -o inline:"test-service $(cat p)\n" cat dbg.out
}
debugger_cleanup() {
	stop_instance
}

atf_test_case stop_busy cleanup
stop_busy_head() {
	atf_set descr "stop ends busy children too; abort kills everything at once"
	atf_set require.user unprivileged
}
stop_busy_body() {
	mk_instance
	mcf "stuck unix - n n - 2 TS"
	start_instance
	$ASK q/private/stuck hang > /dev/null 2>&1 &
	wait_for procs_ge 2 || atf_fail "no child"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	wait_for no_process_left || atf_fail "left: $(instance_pids)"

	start_instance
	$ASK q/private/stuck hang > /dev/null 2>&1 &
	wait_for procs_ge 2 || atf_fail "no child"
	atf_check -s exit:0 -o ignore -e match:'aborting' $PETREL -c $PWD/etc abort
	wait_for no_process_left || atf_fail "left after abort: $(instance_pids)"
	in_log "abort: killing every process" || atf_fail "abort not logged"
	atf_check -s exit:1 -o ignore -e match:'not running' $PETREL -c $PWD/etc stop
	atf_check -s exit:1 -o ignore -e match:'not running' $PETREL -c $PWD/etc abort
	assert_log_clean
}
stop_busy_cleanup() {
	stop_instance
}

atf_test_case bad_config cleanup
bad_config_head() {
	atf_set descr "master refuses a broken master.cf or an endpoint it cannot open, with a clear message"
	atf_set require.user unprivileged
}
bad_config_body() {
	mk_instance
	mcf "echo unix - n n - 1 TS" "broken unix - n n x 1 TS"
	atf_check -s exit:1 -o ignore -e match:'master.cf:2: bad wakeup field' $PETREL -c $PWD/etc start
	no_process_left || atf_fail "processes left"
	port=$(free_port)
	mcf "$port inet n n n - 1 TS" "$port inet n n n - 1 TS"
	atf_check -s exit:1 -o ignore -e match:'duplicate service' $PETREL -c $PWD/etc start
	# one name, two local types: one path
	mcf "x unix - n n - 1 TS" "x fifo - n n - 1 TS trigger $PWD/x.out"
	atf_check -s exit:1 -o ignore -e match:'private/x is already the endpoint of service x/unix' \
	    $PETREL -c $PWD/etc start
	# an inet service on an address we do not have
	mcf "192.0.2.1:$port inet n n n - 1 TS"
	atf_check -s exit:1 -o ignore -e match:'listen on .*192.0.2.1' $PETREL -c $PWD/etc start
	no_process_left || atf_fail "processes left"
}
bad_config_cleanup() {
	stop_instance
}

atf_test_case on_demand cleanup
on_demand_head() {
	atf_set descr "a new process starts only when all are busy, up to maxproc; then clients wait"
	atf_set require.user unprivileged
}
on_demand_body() {
	mk_instance
	mcf "two unix - n n - 2 TS"
	start_instance
	# one idle process serves consecutive clients
	atf_check -s exit:0 -o save:p0 $ASK q/private/two pid
	atf_check -s exit:0 -o file:p0 $ASK q/private/two pid
	$TS client -t 20000 q/private/two pid wait:go.a "echo a" > a.out &
	ca=$!
	wait_for test -s a.out || atf_fail "a not served"
	$TS client -t 20000 q/private/two pid wait:go.b "echo b" > b.out &
	cb=$!
	wait_for test -s b.out || atf_fail "b not served"
	test "$(head -1 a.out)" != "$(head -1 b.out)" || atf_fail "one process for two busy clients"
	# maxproc 2 reached: a third client waits
	atf_check -s exit:2 -o inline:'TIMEOUT\n' $ASK -t 500 q/private/two pid
	test "$(pgrep -f -- "-c $PWD/etc -n two" | wc -l)" -eq 2 || atf_fail "not 2 processes"
	touch go.a go.b
	wait $ca && wait $cb || atf_fail "held clients failed"
	atf_check -s exit:0 -o inline:'c\n' $ASK q/private/two "echo c"
	assert_log_clean
}
on_demand_cleanup() {
	stop_instance
}

atf_test_case endpoints cleanup
endpoints_head() {
	atf_set descr "pass services, public sockets, IPv6 and loopback-only inet services"
	atf_set require.user unprivileged
}
endpoints_body() {
	p4=$(free_port)
	p6=$(free_port)
	mk_instance "inet_interfaces = loopback-only"
	mcf "passvc pass - n n - 1 TS" \
	    "pub unix n n n - 1 TS" \
	    "$p4 inet n n n - 1 TS" \
	    "[::1]:$p6 inet n n n - 1 TS"
	if ! start_instance_try; then
		# no IPv6 loopback here: the IPv4 part alone
		mk_instance "inet_interfaces = 127.0.0.1"
		mcf "passvc pass - n n - 1 TS" "pub unix n n n - 1 TS" "$p4 inet n n n - 1 TS"
		start_instance
		nov6=1
	fi
	atf_check -s exit:0 -o inline:'passed\n' $ASK pass:q/private/passvc "echo passed"
	atf_check -s exit:0 -o inline:'passvc pass\n' $ASK pass:q/private/passvc service
	atf_check -s exit:0 -o inline:'public\n' $ASK q/public/pub "echo public"
	test ! -e q/private/pub || atf_fail "public service in private/"
	atf_check -s exit:0 -o inline:'v4\n' $ASK 127.0.0.1:$p4 "echo v4"
	if [ -z "$nov6" ]; then
		# loopback-only: both loopback addresses, nothing else
		atf_check -s exit:0 -o inline:'v6 loopback\n' $ASK "[::1]:$p4" "echo v6 loopback"
		atf_check -s exit:0 -o inline:'v6\n' $ASK "[::1]:$p6" "echo v6"
		atf_check -s exit:1 -o empty -e match:'refused' $ASK 127.0.0.1:$p6 pid
	fi
	assert_log_clean
}
endpoints_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case unix_and_tcp
	atf_add_test_case one_master
	atf_add_test_case respawn
	atf_add_test_case throttle
	atf_add_test_case throttle_expires
	atf_add_test_case recycle
	atf_add_test_case multi_clients
	atf_add_test_case accept_lock
	atf_add_test_case watchdog
	atf_add_test_case wakeup
	atf_add_test_case wakeup_never_waits
	atf_add_test_case environment
	atf_add_test_case debugger
	atf_add_test_case stop_busy
	atf_add_test_case bad_config
	atf_add_test_case on_demand
	atf_add_test_case endpoints
}
