#! /usr/bin/env atf-sh
# master as root: unpriv=y services run as mail_owner, chroot=y ones in
# the queue directory, unpriv=n ones keep root; petrel check creates a
# missing mail_owner and setgid_group.  The tests use the system's
# "nobody" account as mail_owner, so no account is created except in
# check_creates_accounts (a unique name, removed afterwards).

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr

# nobody's group, whatever the system calls it.
nobody_group() {
	id -gn nobody
}

require_root() {
	[ "$(id -u)" = 0 ] || atf_skip "needs root (privilege separation)"
	id nobody >/dev/null 2>&1 || atf_skip "no 'nobody' account to use as mail_owner"
}

atf_test_case privileges cleanup
privileges_head() {
	atf_set descr "as root: unpriv=y runs as mail_owner, chroot=y in queue_directory, unpriv=n as root"
	atf_set require.user root
}
privileges_body() {
	require_root
	# Children (mail_owner) must reach the test tool and the work
	# directory.
	chmod 755 .
	uid=$(id -u nobody)
	gid=$(id -g nobody)
	mk_instance "mail_owner = nobody" "setgid_group = $(nobody_group)"
	mcf "unpriv unix - y n - 1 TS" \
	    "jail unix - y y - 1 TS" \
	    "rootsvc unix - n n - 1 TS" \
	    "rootjail unix - n y - 1 TS"
	start_instance
	atf_check -s exit:0 -o inline:"uid=$uid gid=$gid euid=$uid egid=$gid groups=$gid\n" \
	    $ASK q/private/unpriv id
	atf_check -s exit:0 -o inline:"uid=$uid gid=$gid euid=$uid egid=$gid groups=$gid\n" \
	    $ASK q/private/jail id
	atf_check -s exit:0 -o match:'^uid=0 gid=0 euid=0 egid=0 ' $ASK q/private/rootsvc id

	# chroot: the process's root is the queue directory, seen from
	# outside (/proc) and from inside ("/" is the queue directory's inode)
	q=$(cd q && pwd -P)
	qid=$(stat -c '%d:%i' q)
	atf_check -s exit:0 -o inline:"$qid\n" $ASK q/private/jail root
	atf_check -s exit:0 -o inline:"$qid\n" $ASK q/private/rootjail root
	atf_check -s exit:0 -o save:jail.pid $ASK q/private/jail pid
	test "$(readlink /proc/$(cat jail.pid)/root)" = "$q" || atf_fail "jail root: $(readlink /proc/$(cat jail.pid)/root)"
	atf_check -s exit:0 -o save:unpriv.pid $ASK q/private/unpriv pid
	test "$(readlink /proc/$(cat unpriv.pid)/root)" = / || atf_fail "unpriv service chrooted"
	atf_check -s exit:0 -o not-inline:"$(stat -c '%d:%i' /)\n" -x \
	    "$ASK q/private/jail root"

	# the queue tree as petrel check made it
	atf_check -s exit:0 -o inline:"nobody $(nobody_group) 700\n" stat -c '%U %G %a' q/private
	atf_check -s exit:0 -o inline:"nobody $(nobody_group) 1730\n" stat -c '%U %G %a' q/maildrop
	atf_check -s exit:0 -o inline:"nobody $(nobody_group) 710\n" stat -c '%U %G %a' q/public
	atf_check -s exit:0 -o inline:"root root 755\n" stat -c '%U %G %a' q/pid
	atf_check -s exit:0 -o inline:"root root 755\n" stat -c '%U %G %a' q
	in_log "private instance" && atf_fail "root instance calls itself private"

	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	wait_for no_process_left || atf_fail "processes left: $(instance_pids)"
	assert_log_clean
}
privileges_cleanup() {
	stop_instance
}

atf_test_case refuses_root_owner cleanup
refuses_root_owner_head() {
	atf_set descr "as root: a mail_owner that does not exist or is root stops master with a clear message"
	atf_set require.user root
}
refuses_root_owner_body() {
	require_root
	mk_instance "mail_owner = root" "setgid_group = $(nobody_group)"
	mcf "svc unix - y n - 1 TS"
	mkdir -p q/pid
	atf_check -s exit:1 -o ignore -e match:"mail_owner 'root' has uid 0" $MASTER -c $PWD/etc
	mk_instance "mail_owner = petrel-no-such-user" "setgid_group = $(nobody_group)"
	mcf "svc unix - y n - 1 TS"
	atf_check -s exit:1 -o ignore -e match:"mail_owner account 'petrel-no-such-user' does not exist" \
	    $MASTER -c $PWD/etc
	no_process_left || atf_fail "processes left"
}
refuses_root_owner_cleanup() {
	stop_instance
}

atf_test_case check_creates_accounts cleanup
check_creates_accounts_head() {
	atf_set descr "as root: petrel check creates a missing mail_owner (no login, home = queue) and setgid_group"
	atf_set require.user root
}
check_creates_accounts_body() {
	require_root
	command -v useradd >/dev/null 2>&1 || [ -x /usr/sbin/useradd ] ||
	    atf_skip "no useradd"
	# unique names, remembered for the cleanup
	u=ptu$$
	g=ptg$$
	echo "$u $g" > accounts
	getent passwd $u >/dev/null && atf_skip "account $u exists"
	getent group $g >/dev/null && atf_skip "group $g exists"
	mk_instance "mail_owner = $u" "setgid_group = $g"
	mcf "svc unix - y n - 1 TS"
	atf_check -s exit:0 -o ignore -e save:err $PETREL -c $PWD/etc check
	grep -q "mail_owner '$u' does not exist -- creating it" err || atf_fail "no message: $(cat err)"
	grep -q "setgid_group '$g' does not exist -- creating it" err || atf_fail "no message"
	getent group $g >/dev/null || atf_fail "group not created"
	atf_check -s exit:0 -o save:pw getent passwd $u
	test "$(cut -d: -f6 pw)" = "$PWD/q" || atf_fail "home: $(cat pw)"
	case "$(cut -d: -f7 pw)" in
	*nologin|*false) ;;
	*) atf_fail "login shell: $(cat pw)" ;;
	esac
	test "$(cut -d: -f3 pw)" -ne 0 || atf_fail "uid 0"
	atf_check -s exit:0 -o inline:"$u $g 1730\n" stat -c '%U %G %a' q/maildrop
	atf_check -s exit:0 -o inline:"$u $u 700\n" stat -c '%U %G %a' q/incoming
	# a second check has nothing to do
	atf_check -s exit:0 -o ignore -e empty $PETREL -c $PWD/etc check
}
check_creates_accounts_cleanup() {
	if [ -f accounts ]; then
		read u g < accounts
		userdel $u >/dev/null 2>&1
		groupdel $u >/dev/null 2>&1
		groupdel $g >/dev/null 2>&1
	fi
	true
}

atf_init_test_cases() {
	atf_add_test_case privileges
	atf_add_test_case refuses_root_owner
	atf_add_test_case check_creates_accounts
}
