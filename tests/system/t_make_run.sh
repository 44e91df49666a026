#! /usr/bin/env atf-sh
# make run (tools/run-instance): a private instance in the foreground that
# prints how to send mail, where it lands and how to see the queue,
# delivers local mail to run/mail/USER/Maildir, shows the log, and stops
# cleanly on Ctrl-C (SIGINT) or SIGTERM.

B=@BUILDDIR@
SRC=@SRCDIR@
. @SRCDIR@/tests/system/master.subr
RI=$SRC/tools/run-instance

require_path() {
	for p in master pickup cleanup qmgr local bounce sendmail postdrop postalias petrel; do
		[ -x $B/bin/$p ] || atf_skip "$p is not built"
	done
}

# Runs tools/run-instance in the background with RUN_DIR=./run; SIGINT
# reaches it as a terminal's Ctrl-C would (a background job of a script
# would otherwise start with SIGINT ignored).
# SMTP on a free port (PORT), never the default 2525: tests run at once.
start_run() {
	PORT=$(free_port)
	export PORT
	if env --default-signal=INT true 2>/dev/null; then
		RUN_DIR=$PWD/run env --default-signal=INT $RI $B > run.out 2>&1 &
		SIG=INT
	else
		RUN_DIR=$PWD/run $RI $B > run.out 2>&1 &
		SIG=TERM
	fi
	echo $! > run.pid
	WAIT_MAX=150 wait_for grep -q "Petrel is running" run.out ||
	    { cat run.out >&2; atf_fail "make run did not start"; }
}

run_pids() {
	pgrep -f -- "-c $PWD/run/etc" 2>/dev/null || true
}
none_left() {
	test -z "$(run_pids)"
}
gone() {
	! kill -0 "$1" 2>/dev/null
}

# stop_run: the signal, then the script must end by itself, with 0, and
# leave no process behind.
stop_run() {
	pid=$(cat run.pid)
	kill -$SIG $pid
	WAIT_MAX=150 wait_for gone $pid || atf_fail "run-instance did not stop on SIG$SIG"
	wait $pid
	rc=$?
	rm -f run.pid
	test $rc = 0 || { cat run.out >&2; atf_fail "run-instance exited $rc"; }
	grep -q "make run: stopped" run.out || atf_fail "no 'stopped' line"
	WAIT_MAX=100 wait_for none_left || atf_fail "processes left: $(run_pids)"
}

cleanup_run() {
	if [ -f run.pid ]; then
		kill -TERM $(cat run.pid) 2>/dev/null
		WAIT_MAX=100 wait_for gone $(cat run.pid)
	fi
	if [ -f run/etc/main.cf ]; then
		$B/bin/petrel -c $PWD/run/etc stop >/dev/null 2>&1 ||
		    $B/bin/petrel -c $PWD/run/etc abort >/dev/null 2>&1
	fi
	true
}

maildir_count() {
	find run/mail/$1/Maildir/new -type f 2>/dev/null | wc -l | tr -d ' '
}
maildir_has() {
	[ "$(maildir_count $1)" -ge "$2" ]
}

atf_test_case private_instance cleanup
private_instance_head() {
	atf_set descr "make run as a user: the newcomer lines are right, mail lands in run/mail/USER/Maildir, the log shows, Ctrl-C stops everything"
	atf_set require.user unprivileged
}
private_instance_body() {
	require_path
	me=$(id -un)
	start_run
	# the three lines, with this instance's paths
	grep -q "Send mail: .*/run/bin/sendmail $me@localhost < message.txt" run.out ||
	    { cat run.out >&2; atf_fail "no send line"; }
	grep -q "It lands in: .*/run/mail/$me/Maildir/new/" run.out ||
	    { cat run.out >&2; atf_fail "no 'lands in' line"; }
	grep -q "See the queue: " run.out || { cat run.out >&2; atf_fail "no queue line"; }
	# PORT=N: smtpd listens there, and the line says so
	if [ -x $B/bin/smtpd ]; then
		grep -q "SMTP: *127.0.0.1:$PORT " run.out || { cat run.out >&2; atf_fail "no SMTP line for PORT=$PORT"; }
		grep -q "^127.0.0.1:$PORT inet" run/etc/master.cf || atf_fail "smtpd not on PORT=$PORT"
		atf_check -s exit:0 -o match:"^220 " $TS client -t 5000 127.0.0.1:$PORT QUIT
	fi
	# doing what they say works
	printf 'Subject: first\n\nhello from make run\n' > message.txt
	atf_check -s exit:0 -o empty -e empty run/bin/sendmail $me@localhost < message.txt
	WAIT_MAX=100 wait_for maildir_has $me 1 ||
	    { cat run.out >&2; atf_fail "no mail in run/mail/$me/Maildir/new"; }
	grep -q '^hello from make run$' run/mail/$me/Maildir/new/* || atf_fail "content"
	# postmaster reaches you too
	atf_check -s exit:0 run/bin/sendmail postmaster@localhost < message.txt
	WAIT_MAX=100 wait_for maildir_has $me 2 || atf_fail "postmaster's mail"
	# the log is on the terminal
	WAIT_MAX=100 wait_for grep -q "status=sent (delivered to maildir)" run.out ||
	    atf_fail "no delivery in the output"
	# the queue is empty afterwards
	test -z "$(find run/queue/incoming run/queue/active run/queue/deferred -type f)" ||
	    atf_fail "queue not empty"
	# a second one while this runs: refused
	atf_check -s exit:1 -e match:"already running" env RUN_DIR=$PWD/run $RI $B
	atf_check -s exit:1 -e match:"PORT=x25 is not a port number" env RUN_DIR=$PWD/run2 PORT=x25 $RI $B
	stop_run
	! grep -E "Sanitizer|runtime error" run/maillog || atf_fail "sanitizer report"

	# again: the same directory, mail still there, works again
	start_run
	atf_check -s exit:0 run/bin/sendmail $me@localhost < message.txt
	WAIT_MAX=100 wait_for maildir_has $me 3 || atf_fail "second run"
	stop_run
}
private_instance_cleanup() {
	cleanup_run
}

atf_test_case as_root cleanup
as_root_head() {
	atf_set descr "make run as root: the daemons run as mail_owner, local delivers the mail"
	atf_set require.user root
}
as_root_body() {
	require_path
	id nobody >/dev/null 2>&1 || atf_skip "no nobody account to use as mail_owner"
	chmod 755 .
	mkdir -p run/etc
	# (the default mail_owner would be created by petrel check; the test
	# uses an existing account instead of adding one to the system)
	printf 'mail_owner = nobody\nsetgid_group = %s\n' "$(id -gn nobody)" > run/etc/main.cf.local
	start_run
	qp=$(pgrep -f -- "qmgr -c $PWD/run/etc" | head -n 1)
	test -n "$qp" || atf_fail "no qmgr"
	test "$(ps -o user= -p $qp | tr -d ' ')" = nobody || atf_fail "qmgr runs as $(ps -o user= -p $qp)"
	printf 'Subject: root\n\nhello root\n' > message.txt
	atf_check -s exit:0 run/bin/sendmail root@localhost < message.txt
	WAIT_MAX=100 wait_for maildir_has root 1 ||
	    { tail run.out >&2; atf_fail "no mail for root"; }
	# Over SMTP too: smtpd runs chrooted here and checks the recipient
	# against run/mail, which it opened before its chroot.
	atf_check -s exit:0 -o save:smtp.out -e ignore /usr/bin/python3 -c "
import smtplib
s = smtplib.SMTP('127.0.0.1', $PORT, timeout=20)
s.sendmail('me@example.org', ['root@localhost'], 'Subject: smtp\\r\\n\\r\\nhello over smtp\\r\\n')
s.quit()
print('sent')"
	WAIT_MAX=100 wait_for maildir_has root 2 ||
	    { tail run.out >&2; atf_fail "no SMTP mail for root"; }
	! grep -q 'missing in the chroot jail' run/maillog ||
	    atf_fail "smtpd could not see run/mail from its jail"
	stop_run
}
as_root_cleanup() {
	cleanup_run
}

atf_init_test_cases() {
	atf_add_test_case private_instance
	atf_add_test_case as_root
}
