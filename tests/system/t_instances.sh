#! /usr/bin/env atf-sh
# Two instances on one host, side by side (doc/instances.md): an
# outbound one and an inbound one, each with its own configuration
# directory, queue, log, SMTP port and multi_instance_name.  A message
# into one is in its queue, its log and its postq listing only, and the
# log lines carry the instance's name.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

POSTQ=$B/bin/postq

# instance NAME DEADPORT: ./NAME/{etc,q,maillog}; smtpd on a free port
# (in NAME.smtp); everything relays to 127.0.0.1:DEADPORT, where nobody
# listens, so accepted mail stays deferred in the queue.
instance() {
	_p=$(free_port)
	echo $_p > $1.smtp
	mkdir -p $1/etc
	cat > $1/etc/main.cf <<EOF2
multi_instance_name = petrel-$1
queue_directory = $PWD/$1/q
daemon_directory = $B/bin
maillog_file = $PWD/$1/maillog
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
myhostname = $1.example.test
mydestination =
local_recipient_maps =
mynetworks = 127.0.0.0/8
relayhost = [127.0.0.1]:$2
smtpd_peername_lookup = no
smtpd_error_sleep_time = 0
queue_run_delay = 3600s
minimal_backoff_time = 3600s
maximal_backoff_time = 3600s
smtp_connect_timeout = 5s
EOF2
	cat > $1/etc/master.cf <<EOF2
$_p inet n - n - - smtpd
cleanup unix n - n - 0 cleanup
qmgr unix-dgram n - n 3600 1 qmgr
smtp unix - - n - - smtp
bounce unix - - n - 0 bounce
defer unix - - n - 0 bounce
showq unix n - n - - showq
EOF2
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/$1/etc start
}

# send NAME RCPT: one message through NAME's smtpd; prints the queue ID.
send() {
	mail_script m.$1 sender@client.test "$2"
	bash chat.bash "$(cat $1.smtp)" m.$1 > chat.$1
	sed -n 's/^250 .*queued as \([0-9A-Z]*\).*/\1/p' chat.$1 | head -n 1
}

# deferred_in NAME ID: ID's deferral logged and its file in deferred/
# (qmgr logs before it moves the file).
deferred_in() {
	grep -q "$2: to=<.*status=deferred" $1/maillog &&
	    [ -n "$(find $1/q/deferred -name $2)" ]
}

atf_test_case side_by_side cleanup
side_by_side_head() {
	atf_set descr "an outbound and an inbound instance at once: queues, logs, ports and postq never mix; log lines carry the instance name"
	atf_set require.user unprivileged
	atf_set timeout 120
}
side_by_side_body() {
	need_bash
	dead=$(free_port)
	instance out $dead
	instance in $dead
	# Two masters, each holding its own queue's lock.
	atf_check -s exit:0 -o save:out.pid -e ignore $PETREL -c $PWD/out/etc status
	atf_check -s exit:0 -o save:in.pid -e ignore $PETREL -c $PWD/in/etc status
	[ "$(cat out.pid)" != "$(cat in.pid)" ] || atf_fail "one master for both"
	# Each port answers as its own instance.
	printf 'QUIT\n' > quit
	bash chat.bash "$(cat out.smtp)" quit | grep -q '^220 out.example.test ' || atf_fail "out's port is not out"
	bash chat.bash "$(cat in.smtp)" quit | grep -q '^220 in.example.test ' || atf_fail "in's port is not in"

	A=$(send out alice@far.example.test)
	[ -n "$A" ] || atf_fail "out refused: $(cat chat.out)"
	Bid=$(send in bob@far.example.test)
	[ -n "$Bid" ] || atf_fail "in refused: $(cat chat.in)"
	WAIT_MAX=100 wait_for deferred_in out $A || atf_fail "$A not deferred in out's queue"
	WAIT_MAX=100 wait_for deferred_in in $Bid || atf_fail "$Bid not deferred in in's queue"

	# Queues: each message in its own queue only.
	[ -z "$(find in/q -name $A)" ] || atf_fail "$A in in's queue"
	[ -z "$(find out/q -name $Bid)" ] || atf_fail "$Bid in out's queue"
	# postq on each lists its own message only.
	atf_check -s exit:0 -o save:postq.out -e empty $POSTQ -C $PWD/out/etc
	grep -q "^$A " postq.out || atf_fail "postq -C out/etc lacks $A"
	! grep -q "$Bid" postq.out || atf_fail "postq -C out/etc lists $Bid"
	atf_check -s exit:0 -o save:postq.in -e empty $POSTQ -C $PWD/in/etc
	grep -q "^$Bid " postq.in || atf_fail "postq -C in/etc lacks $Bid"
	! grep -q "$A" postq.in || atf_fail "postq -C in/etc lists $A"
	# Logs: each instance's lines in its own file, under its own name.
	! grep -q "$Bid" out/maillog || atf_fail "in's message in out's log"
	! grep -q "$A" in/maillog || atf_fail "out's message in in's log"
	grep -q " petrel-out/qmgr\[[0-9]*\]: $A: from=<sender@client.test>" out/maillog ||
	    atf_fail "out's qmgr lines are not tagged petrel-out"
	grep -q " petrel-in/cleanup\[[0-9]*\]: $Bid: " in/maillog ||
	    atf_fail "in's cleanup lines are not tagged petrel-in"
	if grep -v ' petrel-out/' out/maillog | grep -q ' petrel[-a-z]*/'; then
		grep -v ' petrel-out/' out/maillog >&2
		atf_fail "foreign tags in out's log"
	fi
	if grep -v ' petrel-in/' in/maillog | grep -q ' petrel[-a-z]*/'; then
		grep -v ' petrel-in/' in/maillog >&2
		atf_fail "foreign tags in in's log"
	fi
	# Stopping one leaves the other running.
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/out/etc stop
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/in/etc status
	bash chat.bash "$(cat in.smtp)" quit | grep -q '^220 in.example.test ' || atf_fail "in stopped with out"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/in/etc stop
	for i in out in; do
		if grep -E 'Sanitizer|runtime error:' $i/maillog >&2; then
			atf_fail "sanitizer report in $i/maillog"
		fi
	done
}
side_by_side_cleanup() {
	for i in out in; do
		[ -f $i/etc/main.cf ] || continue
		$PETREL -c $PWD/$i/etc stop >/dev/null 2>&1 ||
		    $PETREL -c $PWD/$i/etc abort >/dev/null 2>&1 || true
	done
}

atf_test_case same_queue cleanup
same_queue_head() {
	atf_set descr "a second instance configured with the queue directory of a running one refuses to start"
	atf_set require.user unprivileged
	atf_set timeout 60
}
same_queue_body() {
	dead=$(free_port)
	instance one $dead
	mkdir -p two/etc
	sed -e "s/petrel-one/petrel-two/" -e "s/^[0-9]* inet/$(free_port) inet/" one/etc/master.cf > two/etc/master.cf
	sed "s/multi_instance_name = petrel-one/multi_instance_name = petrel-two/" one/etc/main.cf > two/etc/main.cf
	atf_check -s exit:1 -o ignore -e match:"already running \(master pid [0-9]*\)" \
	    $PETREL -c $PWD/two/etc start
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/one/etc stop
}
same_queue_cleanup() {
	$PETREL -c $PWD/one/etc stop >/dev/null 2>&1 || true
}

atf_init_test_cases() {
	atf_add_test_case side_by_side
	atf_add_test_case same_queue
}
