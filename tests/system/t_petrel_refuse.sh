#! /usr/bin/env atf-sh
# Broken configurations are refused by petrel start, up front, with the
# file and line at fault, a non-zero exit and no process left -- rather
# than started in a broken state (a service whose processes die at
# start-up, throttled).  Each breakage also in a variant where nothing
# uses it yet (a service no client has come to, a parameter the daemon
# does not read): refused too, since master offers every master.cf
# service and starts its program when the first client comes.
# doc/master.md, "petrel check".

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

# relay_config [main.cf lines...]: a relay (smtpd on $port, cleanup,
# qmgr, smtp, bounce) in master.cf lines 1-5; nothing started.
relay_config() {
	port=$(free_port)
	port2=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "local_recipient_maps =" \
	    "relayhost = [127.0.0.1]:9" \
	    "inet_protocols = ipv4" "$@"
	mcf "$port inet n - n - - smtpd" \
	    "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 3600 1 qmgr" \
	    "smtp unix - - n - - smtp" \
	    "bounce unix - - n - 0 bounce"
}

# refused REGEX: petrel start fails, says REGEX on standard error, and
# leaves nothing running; petrel check says the same.
refused() {
	atf_check -s exit:1 -o empty -e save:start.err $PETREL -c $PWD/etc start
	grep -Eq -- "$1" start.err || atf_fail "no '$1' in: $(cat start.err)"
	grep -q "not starting the mail system" start.err || atf_fail "no refusal in: $(cat start.err)"
	no_process_left || atf_fail "processes left: $(instance_pids)"
	atf_check -s exit:1 -o empty -e not-empty $PETREL -c $PWD/etc status
	atf_check -s exit:1 -o empty -e save:check.err $PETREL -c $PWD/etc check
	grep -Eq -- "$1" check.err || atf_fail "check: no '$1' in: $(cat check.err)"
}

atf_test_case good_config_starts cleanup
good_config_starts_head() {
	atf_set descr "the configuration the other cases break starts and stops cleanly"
	atf_set require.user unprivileged
}
good_config_starts_body() {
	relay_config
	start_instance
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	wait_for no_process_left || atf_fail "left: $(instance_pids)"
}
good_config_starts_cleanup() {
	stop_instance
}

atf_test_case restriction_used cleanup
restriction_used_head() {
	atf_set descr "an unknown restriction in main.cf, read by the smtpd service: refused with main.cf's line and master.cf's"
	atf_set require.user unprivileged
}
restriction_used_body() {
	relay_config "smtpd_recipient_restrictions = permit_mynetworks, no_such_restriction, reject_unauth_destination"
	line=$(grep -n '^smtpd_recipient_restrictions' etc/main.cf | cut -d: -f1)
	refused "etc/main.cf:$line: smtpd_recipient_restrictions: unknown restriction \"no_such_restriction\""
	grep -Eq 'etc/master.cf:1: service [0-9]+/inet: .*smtpd refuses this configuration' start.err ||
	    atf_fail "no master.cf line in: $(cat start.err)"
}
restriction_used_cleanup() {
	stop_instance
}

atf_test_case restriction_unused cleanup
restriction_unused_head() {
	atf_set descr "an unknown restriction in the -o of a second smtpd service no client has used: refused with its master.cf line"
	atf_set require.user unprivileged
}
restriction_unused_body() {
	relay_config
	echo "$port2 inet n - n - - smtpd -o smtpd_client_restrictions=no_such_restriction" >> etc/master.cf
	refused "etc/master.cf:6: service $port2/inet: smtpd: smtpd_client_restrictions: unknown restriction \"no_such_restriction\""
}
restriction_unused_cleanup() {
	stop_instance
}

atf_test_case program_missing_used cleanup
program_missing_used_head() {
	atf_set descr "the relay transport's program does not exist: refused with its master.cf line"
	atf_set require.user unprivileged
}
program_missing_used_body() {
	relay_config
	sed 's|- smtp$|- no-such-smtp|' etc/master.cf > etc/mcf.new && mv etc/mcf.new etc/master.cf
	grep -q no-such-smtp etc/master.cf || atf_fail "test set-up"
	refused "etc/master.cf:4: service smtp/unix: .*/no-such-smtp: No such file or directory"
}
program_missing_used_cleanup() {
	stop_instance
}

atf_test_case program_missing_unused cleanup
program_missing_unused_head() {
	atf_set descr "a service nothing refers to whose program does not exist: refused with its master.cf line"
	atf_set require.user unprivileged
}
program_missing_unused_body() {
	relay_config
	echo "spare unix - - n - - $PWD/no-such-program" >> etc/master.cf
	refused "etc/master.cf:6: service spare/unix: $PWD/no-such-program: No such file or directory"
}
program_missing_unused_cleanup() {
	stop_instance
}

atf_test_case bad_o_used cleanup
bad_o_used_head() {
	atf_set descr "a bad -o value of a parameter the service reads (smtpd_timeout on smtpd): refused with its master.cf line"
	atf_set require.user unprivileged
}
bad_o_used_body() {
	relay_config
	sed "1s|smtpd\$|smtpd -o smtpd_timeout=soon|" etc/master.cf > etc/mcf.new && mv etc/mcf.new etc/master.cf
	refused "etc/master.cf:1: service $port/inet: smtpd: .*smtpd_timeout.*soon"
}
bad_o_used_cleanup() {
	stop_instance
}

atf_test_case bad_o_unused cleanup
bad_o_unused_head() {
	atf_set descr "a bad -o value on a service nothing uses, of a parameter its daemon does not read: refused with its master.cf line"
	atf_set require.user unprivileged
}
bad_o_unused_body() {
	relay_config
	echo "spare unix n - n - 0 cleanup -o smtpd_timeout=soon" >> etc/master.cf
	refused "etc/master.cf:6: service spare/unix: cleanup: .*smtpd_timeout.*soon"
}
bad_o_unused_cleanup() {
	stop_instance
}

atf_test_case unknown_o_warns cleanup
unknown_o_warns_head() {
	atf_set descr "an -o of a parameter Petrel does not know is only a warning, as in Postfix: the system starts"
	atf_set require.user unprivileged
}
unknown_o_warns_body() {
	relay_config
	echo "spare unix n - n - 0 cleanup -o no_such_parameter_anywhere=1" >> etc/master.cf
	start_instance
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	wait_for no_process_left || atf_fail "left: $(instance_pids)"
}
unknown_o_warns_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case good_config_starts
	atf_add_test_case restriction_used
	atf_add_test_case restriction_unused
	atf_add_test_case program_missing_used
	atf_add_test_case program_missing_unused
	atf_add_test_case bad_o_used
	atf_add_test_case bad_o_unused
	atf_add_test_case unknown_o_warns
}
