#! /usr/bin/env atf-sh
# Submission in a system-like installation (as root): a user who is not
# in setgid_group submits through a set-gid postdrop into maildrop/
# (mode 1730), pickup (mail_owner) reads and removes what that user
# wrote; postdrop refuses a configuration directory that the default
# main.cf does not list.  mail_owner is the system's "nobody",
# setgid_group the group "mail", the submitter "daemon": nothing is
# created.  The default configuration directory is replaced, for the
# test's processes only, by a bind mount in a private mount namespace.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr

USER_=daemon
GROUP_=mail

require_setup() {
	[ "$(id -u)" = 0 ] || atf_skip "needs root"
	id nobody >/dev/null 2>&1 || atf_skip "no 'nobody' account"
	id $USER_ >/dev/null 2>&1 || atf_skip "no '$USER_' account"
	getent group $GROUP_ >/dev/null || atf_skip "no '$GROUP_' group"
	id -Gn $USER_ | tr ' ' '\n' | grep -qx $GROUP_ &&
	    atf_skip "$USER_ is in group $GROUP_"
	command -v unshare >/dev/null || atf_skip "no unshare(1)"
	unshare -m true 2>/dev/null || atf_skip "cannot make a mount namespace"
	# the directory that holds the default configuration directory
	DEFCONF=$($B/bin/postconf -d config_directory | sed 's/^config_directory = //')
	DEFPARENT=$(dirname $DEFCONF)
	[ -d $DEFPARENT ] || atf_skip "$DEFPARENT does not exist"
}

# A system-like instance: our own copies of sendmail and a set-gid
# postdrop, readable by everyone involved.
mk_system() {
	chmod 755 .
	mk_instance "mail_owner = nobody" "setgid_group = $GROUP_" \
	    "command_directory = $PWD/bin"
	mcf "pickup unix n - n 60 1 pickup" "cleanup unix n - n - 0 cleanup"
	mkdir bin
	cp $SENDMAIL bin/sendmail
	cp $POSTDROP bin/postdrop
	chgrp $GROUP_ bin/postdrop
	chmod 2755 bin/postdrop
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc check
	atf_check -s exit:0 -o inline:"nobody $GROUP_ 1730\n" stat -c '%U %G %a' q/maildrop
	# A fake default configuration directory, listing ours or not.
	mkdir -p fakeetc/$(basename $DEFCONF)
	: > fakeetc/$(basename $DEFCONF)/main.cf
	chmod -R a+rX fakeetc etc
}

# as_user CMD: runs the shell command CMD as the submitter, in the
# namespace where the default configuration is ours.  Sanitizers cannot
# track leaks in a set-gid process.
as_user() {
	unshare -m sh -c "mount --bind $PWD/fakeetc $DEFPARENT &&
	    su $USER_ -s /bin/sh -c 'cd $PWD && ASAN_OPTIONS=detect_leaks=0 $1'"
}

atf_test_case setgid_submission cleanup
setgid_submission_head() {
	atf_set descr "a user outside setgid_group submits through the set-gid postdrop; pickup (mail_owner) queues and removes the file"
	atf_set require.user root
}
setgid_submission_body() {
	require_setup
	mk_system
	echo "alternate_config_directories = $PWD/etc" > fakeetc/$(basename $DEFCONF)/main.cf
	printf 'Subject: from daemon\n\nmarker setgid\n' > msg
	chmod 644 msg
	as_user "MAIL_CONFIG=$PWD/etc bin/sendmail bob@example.com < msg" > out 2>&1 ||
	    atf_fail "sendmail as $USER_ failed: $(cat out)"
	f=$(one_maildrop)
	atf_check -s exit:0 -o inline:"$USER_ $GROUP_ 444\n" stat -c '%U %G %a' $f
	atf_check -s exit:0 -o match:"attribute: uid=$(id -u $USER_)" $POSTCAT -e $f
	# the submitter cannot look into maildrop/ or read the file
	as_user "ls $PWD/q/maildrop" > out 2>&1 && atf_fail "$USER_ can list maildrop/"
	as_user "cat $PWD/$f" > out 2>&1 && atf_fail "$USER_ can read $f"
	start_instance
	wait_for qcount_is maildrop 0 || atf_fail "not picked up: $(tail maillog)"
	qcount_is incoming 1 || atf_fail "not queued: $(tail maillog)"
	in_log ": uid=$(id -u $USER_) from=<$USER_>" || atf_fail "no uid= line: $(tail maillog)"
	atf_check -s exit:0 -o match:'marker setgid' $POSTCAT -b $(qfiles incoming)
	assert_log_clean
}
setgid_submission_cleanup() {
	stop_instance
}

atf_test_case alternate_config cleanup
alternate_config_head() {
	atf_set descr "the set-gid postdrop refuses a configuration directory that the default main.cf does not list in alternate_config_directories"
	atf_set require.user root
}
alternate_config_body() {
	require_setup
	mk_system
	printf 'Subject: x\n\nx\n' > msg
	chmod 644 msg
	as_user "MAIL_CONFIG=$PWD/etc bin/sendmail bob@example.com < msg; echo rc=\$?" > out 2>&1
	grep -q "rc=$EX_NOPERM" out || atf_fail "expected exit $EX_NOPERM: $(cat out)"
	grep -q "configuration directory $PWD/etc is not the default and not listed in alternate_config_directories" out ||
	    atf_fail "no message: $(cat out)"
	echo "alternate_config_directories = /elsewhere, $PWD/etc2" > fakeetc/$(basename $DEFCONF)/main.cf
	as_user "bin/postdrop -c $PWD/etc < msg; echo rc=\$?" > out 2>&1
	grep -q "rc=$EX_NOPERM" out || atf_fail "expected exit $EX_NOPERM: $(cat out)"
	qcount_is maildrop 0 || atf_fail "queued anyway"
	# root may name any directory
	atf_check -s exit:0 -o empty -e empty env MAIL_CONFIG=$PWD/etc bin/sendmail bob@example.com < msg
	qcount_is maildrop 1 || atf_fail "root's message not queued"
}
alternate_config_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case setgid_submission
	atf_add_test_case alternate_config
}
