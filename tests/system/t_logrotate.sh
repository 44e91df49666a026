#! /usr/bin/env atf-sh
# maillog_file after a rotation: master writes the file for every daemon
# (master/master_log.c), so once the file is renamed, `petrel logrotate`
# or `petrel reload` puts the next line of every running daemon (smtpd,
# cleanup, qmgr, smtp, local, the same processes) into the new file.
# Also: compression and how many rotated files are kept.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

# mail_instance SINKPORT [main.cf lines]: smtpd on $port; mail for
# localhost goes to local (Maildir under ./mail), the rest to the sink.
# qmgr runs with -v: smtp and local then log a line for every delivery.
mail_instance() {
	_sp=$1
	shift
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "local_recipient_maps =" "alias_maps =" \
	    "local_mail_root = $PWD/mail" "home_mailbox = Maildir/" \
	    "mail_spool_directory = $PWD/spool" \
	    "relayhost = [127.0.0.1]:$_sp" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 3600s" "inet_protocols = ipv4" "$@"
	mkdir -p mail/alice spool
	mcf "$port inet n - n - - smtpd" \
	    "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 3600 1 qmgr -v" \
	    "smtp unix - - n - - smtp" \
	    "local unix - n n - - local" \
	    "bounce unix - - n - 0 bounce"
	start_instance
}

nmail() {
	find mail/alice/Maildir/new -type f 2>/dev/null | wc -l | tr -d ' '
}

# (a function: wait_for must count again each time)
has_mail() {
	[ "$(nmail)" -eq "$1" ]
}

# send N: one message to alice@localhost (local) and one to
# bob@far.example.test (smtp, the sink); waits until both are delivered
# (N messages in total in each place).
send() {
	mail_script m.local sender@client.test alice@localhost
	mail_script m.far sender@client.test bob@far.example.test
	bash chat.bash $port m.local > chat.out
	grep -q '^250 .*queued' chat.out || atf_fail "not accepted: $(cat chat.out)"
	bash chat.bash $port m.far > chat.out
	grep -q '^250 .*queued' chat.out || atf_fail "not accepted: $(cat chat.out)"
	WAIT_MAX=100 wait_for has_mail "$1" ||
	    { tail -n 40 maillog other.log >&2 2>/dev/null; atf_fail "local delivery $1 missing"; }
	WAIT_MAX=100 wait_for stat_is s.stats messages "$1" ||
	    { tail -n 40 maillog other.log >&2 2>/dev/null; atf_fail "relay $1 missing"; }
}

# pids FILE PROGRAM: the process ids of PROGRAM's lines in FILE.
pids() {
	sed -n "s/.* petrel\/$2\[\([0-9]*\)\]: .*/\1/p" "$1" | sort -u
}

has_lines() {
	[ -n "$(pids "$1" $2)" ]
}

# every_daemon_moved OLD NEW: each daemon that logged in OLD logs in NEW
# too, with (for the long-lived ones) the same process; OLD got nothing
# after the rotation.
every_daemon_moved() {
	for d in smtpd cleanup qmgr smtp local; do
		[ -n "$(pids "$1" $d)" ] || atf_fail "$d logged nothing before the rotation"
		# master writes what the daemons sent a moment later: wait.
		wait_for has_lines "$2" $d ||
		    { cat "$2" >&2; atf_fail "$d's lines after the rotation are not in the new file"; }
	done
	# qmgr never exits, the others were idle and alive: the same
	# processes write into the new file.
	for d in qmgr cleanup smtpd; do
		for p in $(pids "$2" $d); do
			pids "$1" $d | grep -qx "$p" || atf_fail "$d in the new file is a new process ($p): not what is tested"
		done
	done
	# Nothing of the daemons after the marker line in the old file
	# (master's "reload -- re-reading" comes before it reopens).
	if sed -n '/ROTATED-HERE/,$p' "$1" | grep -v -e ROTATED-HERE -e 'petrel/master\[' | grep -q .; then
		sed -n '/ROTATED-HERE/,$p' "$1" >&2
		atf_fail "the old file got lines after the rotation"
	fi
}

atf_test_case logrotate cleanup
logrotate_head() {
	atf_set descr "petrel logrotate: every daemon's next line is in the new file; the old one is renamed and compressed"
	atf_set require.user unprivileged
	atf_set timeout 120
}
logrotate_body() {
	need_bash
	command -v gzip >/dev/null || atf_skip "gzip is not installed"
	start_sink s
	mail_instance $port
	send 1
	echo "ROTATED-HERE" >> maillog
	atf_check -s exit:0 -o ignore -e match:"logrotate: .*maillog renamed to .*maillog\.[0-9-]*" \
	    $PETREL -c $PWD/etc logrotate
	# gzip ran on the renamed file
	old=$(ls maillog.*.gz)
	[ -f "$old" ] || atf_fail "no compressed old log: $(ls)"
	gzip -dc "$old" > old.log
	grep -q "reopened maillog_file" maillog || atf_fail "master did not reopen"
	send 2
	every_daemon_moved old.log maillog
	grep -q "maillog renamed to" maillog || atf_fail "petrel's own line not in the new file"
	stop_instance
	assert_log_clean
	finish
}
logrotate_cleanup() {
	stop_instance
	stop_all
}

atf_test_case reload cleanup
reload_head() {
	atf_set descr "a log file moved away, then petrel reload: every daemon's next line is in a new file"
	atf_set require.user unprivileged
	atf_set timeout 120
}
reload_body() {
	need_bash
	start_sink s
	mail_instance $port
	send 1
	echo "ROTATED-HERE" >> maillog
	mv maillog moved.log
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for in_log "reload: reopened maillog_file" || atf_fail "no new log file after reload"
	send 2
	every_daemon_moved moved.log maillog
	stop_instance
	assert_log_clean
	finish
}
reload_cleanup() {
	stop_instance
	stop_all
}

atf_test_case reload_new_file cleanup
reload_new_file_head() {
	atf_set descr "a reload that names another maillog_file and another multi_instance_name: master and the daemons log there, under the new name"
	atf_set require.user unprivileged
	atf_set timeout 120
}
reload_new_file_body() {
	need_bash
	start_sink s
	mail_instance $port
	send 1
	sed -e "s|^maillog_file = .*|maillog_file = $PWD/other.log|" etc/main.cf > etc/main.cf.new
	echo "multi_instance_name = petrel-two" >> etc/main.cf.new
	mv etc/main.cf.new etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for grep -q "petrel-two/master\[[0-9]*\]: reload: reopened maillog_file $PWD/other.log" other.log ||
	    atf_fail "master did not move to other.log under its new name"
	send 2
	for d in smtpd cleanup qmgr; do
		wait_for grep -q " petrel-two/$d\[" other.log ||
		    { cat other.log >&2; atf_fail "$d does not log into other.log as petrel-two"; }
	done
	# (the processes the reload retires say goodbye under the old name,
	# into the new file: they still send their lines to master)
	stop_instance
	finish
}
reload_new_file_cleanup() {
	stop_instance
	stop_all
}

atf_test_case logrotate_snippet cleanup
logrotate_snippet_head() {
	atf_set descr "conf/logrotate.petrel run by logrotate(8): the file renamed, SIGUSR1, every daemon's next line in the new file"
	atf_set require.user unprivileged
	atf_set require.progs logrotate
	atf_set timeout 120
}
logrotate_snippet_body() {
	need_bash
	start_sink s
	mail_instance $port
	send 1
	# The shipped snippet with this instance's log and petrel command.
	sed -e "s|/var/log/petrel.log|$PWD/maillog|" \
	    -e "s|/usr/sbin/petrel|$PETREL -c $PWD/etc|g" \
	    @SRCDIR@/conf/logrotate.petrel > logrotate.conf
	grep -q "$PWD/maillog {" logrotate.conf || atf_fail "the snippet no longer names /var/log/petrel.log"
	echo "ROTATED-HERE" >> maillog
	atf_check -s exit:0 -o ignore -e ignore logrotate -f -s $PWD/logrotate.state logrotate.conf
	[ -f maillog.1 ] || atf_fail "logrotate did not rename the log: $(ls)"
	WAIT_MAX=50 wait_for in_log "logrotate: reopened maillog_file" || atf_fail "master did not reopen"
	send 2
	every_daemon_moved maillog.1 maillog
	stop_instance
	finish
}
logrotate_snippet_cleanup() {
	stop_instance
	stop_all
}

atf_test_case keep_count cleanup
keep_count_head() {
	atf_set descr "petrel logrotate keeps maillog_file_rotate_count renamed files (the newest), touches no other file, and works with master stopped"
	atf_set require.user unprivileged
}
keep_count_body() {
	mk_instance "maillog_file_rotate_count = 2" "maillog_file_compressor ="
	echo old1 > maillog.20200101-000000.gz
	echo old2 > maillog.20200102-000000
	echo old3 > maillog.20200103-000000.gz
	echo mine > maillog.keep-me
	echo mine > maillog.2020notes.txt
	echo current > maillog
	atf_check -s exit:0 -o ignore -e match:"not running" $PETREL -c $PWD/etc logrotate
	# today's file and 20200103 stay; 0101 and 0102 are gone
	n=$(ls maillog.2* | grep -c '^maillog\.[0-9]\{8\}-[0-9]\{6\}')
	[ "$n" -eq 2 ] || atf_fail "kept $n rotated files: $(ls)"
	[ -f maillog.20200103-000000.gz ] || atf_fail "the newest old file was removed"
	[ ! -e maillog.20200101-000000.gz ] && [ ! -e maillog.20200102-000000 ] ||
	    atf_fail "older files kept: $(ls)"
	[ -f maillog.keep-me ] && [ -f maillog.2020notes.txt ] || atf_fail "an unrelated file was removed"
	grep -lqx current maillog.2* || atf_fail "the current log was not renamed: $(ls)"
	[ -f maillog ] || atf_fail "no new log file"
}

atf_test_case no_file
no_file_head() {
	atf_set descr "petrel logrotate refuses clearly without maillog_file (syslog) or with a non-regular file"
	atf_set require.user unprivileged
}
no_file_body() {
	mkdir -p etc
	echo "queue_directory = $PWD/q" > etc/main.cf
	: > etc/master.cf
	atf_check -s exit:1 -o ignore -e match:"maillog_file is not set: the logs go to syslog" \
	    $PETREL -c $PWD/etc logrotate
	echo "maillog_file = /dev/null" >> etc/main.cf
	atf_check -s exit:1 -o ignore -e match:"/dev/null is not a regular file" \
	    $PETREL -c $PWD/etc logrotate
}

atf_init_test_cases() {
	atf_add_test_case logrotate
	atf_add_test_case reload
	atf_add_test_case reload_new_file
	atf_add_test_case logrotate_snippet
	atf_add_test_case keep_count
	atf_add_test_case no_file
}
