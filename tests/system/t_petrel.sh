#! /usr/bin/env atf-sh
# The petrel command: check, flush, status, start-fg, usage errors.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr

atf_test_case check_creates cleanup
check_creates_head() {
	atf_set descr "petrel check creates a missing queue directory tree with the right modes"
	atf_set require.user unprivileged
}
check_creates_body() {
	mk_instance
	sed -i "s|^queue_directory = .*|queue_directory = $PWD/deep/er/q|" etc/main.cf
	atf_check -s exit:0 -o empty -e save:err $PETREL -c $PWD/etc check
	grep -q "created queue_directory $PWD/deep/er/q" err || atf_fail "no message: $(cat err)"
	me="$(id -un) $(id -gn)"
	for d in incoming active deferred hold corrupt defer bounce trace saved private; do
		atf_check -s exit:0 -o inline:"$me 700\n" stat -c '%U %G %a' deep/er/q/$d
	done
	atf_check -s exit:0 -o inline:"$me 1730\n" stat -c '%U %G %a' deep/er/q/maildrop
	atf_check -s exit:0 -o inline:"$me 710\n" stat -c '%U %G %a' deep/er/q/public
	atf_check -s exit:0 -o inline:"$me 755\n" stat -c '%U %G %a' deep/er/q/pid
	atf_check -s exit:0 -o inline:"$me 755\n" stat -c '%U %G %a' deep/er/q
	# all good now: silent
	atf_check -s exit:0 -o empty -e empty $PETREL -c $PWD/etc check
}
check_creates_cleanup() {
	stop_instance
}

atf_test_case check_fixes cleanup
check_fixes_head() {
	atf_set descr "petrel check warns about and fixes wrong modes; refuses a symlink or file in place of a directory"
	atf_set require.user unprivileged
}
check_fixes_body() {
	mk_instance
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc check
	chmod 0755 q/incoming
	chmod 0777 q/maildrop
	atf_check -s exit:0 -o empty \
	    -e match:"warning: $PWD/q/incoming: mode 0755, expected 0700 -- fixing" \
	    $PETREL -c $PWD/etc check
	atf_check -s exit:0 -o inline:'700\n' stat -c '%a' q/incoming
	atf_check -s exit:0 -o inline:'1730\n' stat -c '%a' q/maildrop
	in_log "q/maildrop: mode 0777, expected 1730 -- fixing" || atf_fail "not logged"
	# a symlink where a directory belongs is never followed
	rmdir q/hold
	mkdir elsewhere
	ln -s ../elsewhere q/hold
	atf_check -s exit:1 -o empty -e match:"q/hold: not a directory \\(or a symbolic link\\)" \
	    $PETREL -c $PWD/etc check
	atf_check -s exit:0 -o inline:"$(stat -c %a elsewhere)\n" stat -c %a elsewhere
	# and start refuses while check fails
	rm q/hold
	touch q/hold
	atf_check -s exit:1 -o empty -e match:'not starting' $PETREL -c $PWD/etc start
	no_process_left || atf_fail "started anyway"
}
check_fixes_cleanup() {
	stop_instance
}

atf_test_case flush cleanup
flush_head() {
	atf_set descr "petrel flush sends FA to qmgr; a clear error without qmgr or master"
	atf_set require.user unprivileged
}
flush_body() {
	mk_instance
	mcf "qmgr unix n n n - 1 TS trigger $PWD/qmgr.out"
	atf_check -s exit:1 -o empty -e match:'cannot flush: the Petrel mail system is not running' \
	    $PETREL -c $PWD/etc flush
	start_instance
	atf_check -s exit:0 -o empty -e match:'flush request sent' $PETREL -c $PWD/etc flush
	wait_for grep -q ' FA$' qmgr.out || atf_fail "qmgr got no flush: $(cat qmgr.out)"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	# fifo qmgr
	mcf "qmgr fifo n n n - 1 TS trigger $PWD/qmgr2.out"
	start_instance
	atf_check -s exit:0 -o empty -e ignore $PETREL -c $PWD/etc flush
	wait_for grep -q ' FA$' qmgr2.out || atf_fail "fifo qmgr got no flush"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	# no qmgr service at all
	mcf "other unix - n n - 1 TS"
	start_instance
	atf_check -s exit:1 -o empty -e match:'cannot flush: .*master.cf has no qmgr service' \
	    $PETREL -c $PWD/etc flush
	# qmgr in master.cf but not running: the fifo of the earlier run has
	# no reader; then no endpoint at all
	mcf "other unix - n n - 1 TS" "qmgr fifo n n n - 1 TS trigger $PWD/qmgr.out"
	atf_check -s exit:1 -o empty -e match:'cannot flush: qmgr service .*public/qmgr: No such device.*is qmgr running' \
	    $PETREL -c $PWD/etc flush
	rm q/public/qmgr
	atf_check -s exit:1 -o empty -e match:'cannot flush: qmgr service .*public/qmgr: No such file.*is qmgr running' \
	    $PETREL -c $PWD/etc flush
}
flush_cleanup() {
	stop_instance
}

atf_test_case start_fg cleanup
start_fg_head() {
	atf_set descr "petrel start-fg runs master in the foreground until it is stopped"
	atf_set require.user unprivileged
}
start_fg_body() {
	mk_instance
	mcf "echo unix - n n - 1 TS"
	$PETREL -c $PWD/etc start-fg > fg.out 2>&1 &
	fg=$!
	wait_for master_pid || atf_fail "master did not come up"
	# the foreground process is master itself
	test "$(master_pid)" = "$fg" || atf_fail "master pid $(master_pid), started $fg"
	atf_check -s exit:0 -o inline:'fg\n' $ASK q/private/echo "echo fg"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	wait $fg || atf_fail "start-fg exit status $?"
	grep -q 'daemon started' fg.out || atf_fail "no log on the terminal: $(cat fg.out)"
	no_process_left || atf_fail "left: $(instance_pids)"
}
start_fg_cleanup() {
	stop_instance
}

atf_test_case usage
usage_head() {
	atf_set descr "petrel rejects unknown commands and options; status says not running"
}
usage_body() {
	mk_instance
	atf_check -s exit:64 -o empty -e match:'usage: petrel' $PETREL -c $PWD/etc
	atf_check -s exit:64 -o empty -e match:"unknown command 'bogus'" $PETREL -c $PWD/etc bogus
	atf_check -s exit:64 -o empty -e match:'usage: petrel' $PETREL -x status
	atf_check -s exit:64 -o empty -e match:'usage: petrel' $PETREL -c $PWD/etc status extra
	atf_check -s exit:1 -o empty -e match:'not running' $PETREL -c $PWD/etc status
	atf_check -s exit:1 -o empty -e match:'not running' $PETREL -c $PWD/etc reload
	atf_check -s exit:1 -o empty -e match:'configuration directory .*nowhere' \
	    $PETREL -c $PWD/nowhere status
	atf_check -s exit:64 -o empty -e match:'usage: master' $MASTER -x
}

atf_init_test_cases() {
	atf_add_test_case check_creates
	atf_add_test_case check_fixes
	atf_add_test_case flush
	atf_add_test_case start_fg
	atf_add_test_case usage
}
