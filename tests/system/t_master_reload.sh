#! /usr/bin/env atf-sh
# petrel reload (SIGHUP to master): services added, removed, changed and
# kept, with their connections.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr

# hold NAME ENDPOINT: a client that asks for the pid, waits for the file
# go.NAME, then asks "echo after"; its output goes to NAME.out.
hold() {
	$TS client -t 20000 "$2" pid "wait:go.$1" "echo after" > "$1.out" 2>&1 &
	eval "hold_$1=\$!"
	wait_for test -s "$1.out" || atf_fail "$1: no answer"
}

# release NAME: lets the held client go on and checks its connection
# survived.
release() {
	touch "go.$1"
	eval "wait \$hold_$1" || atf_fail "$1: client failed: $(cat $1.out)"
	test "$(sed -n 2p $1.out)" = after || atf_fail "$1: connection lost: $(cat $1.out)"
}

atf_test_case add_remove_keep cleanup
add_remove_keep_head() {
	atf_set descr "reload adds and removes services; an unchanged service keeps its connections and processes"
	atf_set require.user unprivileged
}
add_remove_keep_body() {
	port=$(free_port)
	mk_instance
	mcf "keep unix - n n - 2 TS" \
	    "old unix - n n - 1 TS" \
	    "$port inet n n n - 2 TS"
	start_instance
	mpid=$(master_pid)
	atf_check -s exit:0 -o save:old.pid $ASK q/private/old pid
	hold keep q/private/keep
	hold tcp 127.0.0.1:$port
	mcf "keep unix - n n - 2 TS" \
	    "$port inet n n n - 2 TS" \
	    "new unix - n n - 1 TS"
	atf_check -s exit:0 -o ignore -e match:'refreshing' $PETREL -c $PWD/etc reload
	wait_for in_log "service new/unix: started" || atf_fail "new service not started"
	in_log "service old/unix: removed from master.cf; stopping it" || atf_fail "removal not logged"
	atf_check -s exit:0 -o inline:'new\n' $ASK q/private/new "echo new"
	# the removed service: no endpoint, its idle process gone
	atf_check -s exit:1 -o empty -e match:'No such file' $ASK q/private/old pid
	wait_for pid_gone "$(cat old.pid)" || atf_fail "removed service's process still there"
	# the kept services: same processes, connections alive
	pid_alive "$(head -1 keep.out)" || atf_fail "kept service's process ended"
	release keep
	release tcp
	atf_check -s exit:0 -o inline:'tcp still\n' $ASK 127.0.0.1:$port "echo tcp still"
	test "$(master_pid)" = "$mpid" || atf_fail "master changed"
	if grep -q "keep/unix.*\(retir\|restart\|stopping\)" maillog; then
		atf_fail "unchanged service touched"
	fi
	assert_log_clean
}
add_remove_keep_cleanup() {
	stop_instance
}

atf_test_case changed cleanup
changed_head() {
	atf_set descr "reload restarts a changed service: busy processes finish their client, new ones run the new command line"
	atf_set require.user unprivileged
}
changed_body() {
	port=$(free_port)
	mk_instance
	mcf "svc unix - n n - 2 TS single one" \
	    "$port inet n n n - 2 TS single one"
	start_instance
	atf_check -s exit:0 -o save:idle.pid $ASK q/private/svc pid
	hold busy q/private/svc
	hold tcp 127.0.0.1:$port
	mcf "svc unix - n n - 2 TS single two" \
	    "$port inet n n n - 2 TS single two"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	wait_for in_log "service svc/unix: changed; restarting its processes" ||
	    atf_fail "change not noticed"
	atf_check -s exit:0 -o inline:'svc unix single two\n' $ASK q/private/svc service
	# same port, no rebinding gap: the listening socket was handed over
	atf_check -s exit:0 -o inline:"$port inet single two\n" $ASK 127.0.0.1:$port service
	release busy
	release tcp
	wait_for pid_gone "$(head -1 busy.out)" || atf_fail "old busy process did not exit"
	wait_for pid_gone "$(cat idle.pid)" || atf_fail "old idle process did not exit"
	assert_log_clean
}
changed_cleanup() {
	stop_instance
}

atf_test_case maincf cleanup
maincf_head() {
	atf_set descr "reload with a changed main.cf retires running daemons so new ones read it; without a change they stay"
	atf_set require.user unprivileged
}
maincf_body() {
	mk_instance
	mcf "svc unix - n n - 1 TS"
	start_instance
	atf_check -s exit:0 -o save:p1 $ASK q/private/svc pid
	# nothing changed: the process stays
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	wait_for lines_ge 1 'reload -- re-reading' maillog || atf_fail "no reload"
	atf_check -s exit:0 -o file:p1 $ASK q/private/svc pid
	# main.cf changed: the process retires, the next one has the value
	echo "max_use = 55" >> etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	wait_for lines_ge 2 'reload -- re-reading' maillog || atf_fail "no second reload"
	wait_for pid_gone "$(cat p1)" || atf_fail "old process did not retire"
	atf_check -s exit:0 -o inline:'55\n' $ASK q/private/svc "param max_use"
	assert_log_clean
}
maincf_cleanup() {
	stop_instance
}

atf_test_case bad_reload cleanup
bad_reload_head() {
	atf_set descr "a reload with a broken master.cf or main.cf changes nothing and says why"
	atf_set require.user unprivileged
}
bad_reload_body() {
	mk_instance
	mcf "svc unix - n n - 1 TS"
	start_instance
	atf_check -s exit:0 -o save:p1 $ASK q/private/svc pid
	mcf "svc unix - n n - 1 TS" "other bogus - n n - 1 TS"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	wait_for in_log "reload: errors in master.cf; services unchanged" || atf_fail "not reported"
	in_log "master.cf:2: bad service type 'bogus'" || atf_fail "line not named"
	atf_check -s exit:0 -o file:p1 $ASK q/private/svc pid
	mcf "svc unix - n n - 1 TS"
	echo "max_use = lots" >> etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	wait_for in_log "reload: errors in main.cf; configuration unchanged" || atf_fail "not reported"
	atf_check -s exit:0 -o file:p1 $ASK q/private/svc pid
	atf_check -s exit:0 -o ignore -e match:'is running' $PETREL -c $PWD/etc status
	assert_log_clean
}
bad_reload_cleanup() {
	stop_instance
}

atf_test_case type_change cleanup
type_change_head() {
	atf_set descr "reload moving a service to another type or place: the old endpoint goes, the new one works"
	atf_set require.user unprivileged
}
type_change_body() {
	mk_instance
	mcf "trig unix - n n - 1 TS trigger $PWD/t.out" \
	    "svc unix - n n - 1 TS"
	start_instance
	atf_check -s exit:0 $TS trigger-send q/private/trig one
	wait_for grep -q ' one$' t.out || atf_fail "unix trigger lost"
	mcf "trig fifo - n n - 1 TS trigger $PWD/t.out" \
	    "svc unix n n n - 1 TS"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	wait_for in_log "service svc/unix: endpoint changed; stopping it" || atf_fail "move not noticed"
	wait_for in_log "service trig/fifo: started" || atf_fail "fifo not started"
	test -p q/private/trig || atf_fail "the fifo is not there"
	atf_check -s exit:0 $TS trigger-send q/private/trig two
	wait_for grep -q ' two$' t.out || atf_fail "fifo trigger lost"
	test ! -e q/private/svc || atf_fail "old socket left"
	atf_check -s exit:0 -o inline:'moved\n' $ASK q/public/svc "echo moved"
	assert_log_clean
}
type_change_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case add_remove_keep
	atf_add_test_case changed
	atf_add_test_case maincf
	atf_add_test_case bad_reload
	atf_add_test_case type_change
}
