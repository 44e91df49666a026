#! /usr/bin/env atf-sh
# The whole mail path under master: sendmail -> postdrop -> maildrop ->
# pickup -> cleanup -> qmgr -> local -> Maildir / mbox / commands / files,
# and bounce -> cleanup -> local for the notices.  Private instances
# (users are directories under local_mail_root) run as an unprivileged
# user; the *_root cases run a system-style instance as root with a real,
# temporary account.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr
PA=$B/bin/postalias

# The daemons the path needs.
require_path() {
	for p in pickup cleanup qmgr local bounce sendmail postdrop; do
		[ -x $B/bin/$p ] || atf_skip "$p is not built"
	done
}

# e2e_instance [main.cf lines...]: a private instance with users alice,
# bob and carol, aliases in etc/aliases, Maildir delivery unless a line
# says otherwise; no retries unless a test flushes.
e2e_instance() {
	require_path
	mk_submit "myhostname = host.test" "mydomain = test" \
	    "local_mail_root = $PWD/mail" "mail_spool_directory = $PWD/spool" \
	    "alias_maps = hash:$PWD/etc/aliases" \
	    "alias_database = hash:$PWD/etc/aliases" \
	    "queue_run_delay = 3600s" "minimal_backoff_time = 3600s" \
	    "maximal_backoff_time = 3600s" "$@"
	mkdir -p mail/alice mail/bob mail/carol spool
	mcf "pickup unix-dgram n - n 60 1 pickup" "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 300 1 qmgr" "local unix - n n - - local" \
	    "bounce unix - - n - 0 bounce"
	{
		echo "postmaster: alice"
		echo "MAILER-DAEMON: postmaster"
		echo "staff: alice, bob,"
		echo "	carol"
		echo "pipe: \"|cat > $PWD/pipe.out; echo \$RECIPIENT > $PWD/pipe.env\""
		echo "file: $PWD/file.mbox"
		echo "loop1: loop2"
		echo "loop2: loop1"
	} > etc/aliases
	atf_check -s exit:0 $PA etc/aliases
}

# send [-f sender] rcpt... < message
send() {
	atf_check -s exit:0 -o empty -e empty $SENDMAIL "$@"
}

msg() {
	printf 'From: Alice <alice@host.test>\nSubject: %s\n\nhello %s\nFrom the start\n' "$1" "$1"
}

# Messages in USER's Maildir/new.
nmail() {
	find mail/$1/Maildir/new -type f 2>/dev/null | wc -l | tr -d ' '
}
nmail_is() {
	[ "$(nmail $1)" = "$2" ]
}
wait_mail() {
	WAIT_MAX=${WAIT_MAX:-100} wait_for nmail_is $1 $2 ||
	    atf_fail "$1 has $(nmail $1) messages, want $2; log: $(tail -5 maillog | tr '\n' ' ')"
}
# The Maildir file of USER that holds TEXT.
mail_with() {
	grep -l -- "$2" mail/$1/Maildir/new/* 2>/dev/null | head -n 1
}

has_files() {
	[ -n "$(find "$1" -type f 2>/dev/null)" ]
}

queue_empty() {
	[ -z "$(find q/maildrop q/incoming q/active q/deferred q/hold -type f 2>/dev/null)" ]
}
wait_has_files() {
	[ -n "$(find "$1" -type f 2>/dev/null)" ]
}

queue_empty() {
	WAIT_MAX=100 wait_for queue_empty ||
	    atf_fail "queue not empty: $(find q/maildrop q/incoming q/active q/deferred -type f | tr '\n' ' ')"
}

# valid_message FILE: an RFC 5322 message: header fields (name, colon)
# or continuation lines up to the first empty line, then the body.
valid_message() {
	awk '
		BEGIN { inhdr = 1; n = 0 }
		inhdr && /^$/ { inhdr = 0; next }
		inhdr && /^[!-9;-~]+:/ { n++; next }
		inhdr && /^[ \t]/ && n > 0 { next }
		inhdr { print "bad header line " NR ": " $0; bad = 1; exit }
		END { if (inhdr && !bad) { print "no body separator"; bad = 1 }
		      exit bad }
	' "$1" >&2 || { cat "$1" >&2; atf_fail "$1 is not a valid message"; }
}

# log_wait REGEX: a maillog line matches REGEX (grep -E) within 10 s.
log_wait() {
	WAIT_MAX=100 wait_for grep -Eq -- "$1" maillog ||
	    atf_fail "no '$1' in the log: $(tail -5 maillog | tr '\n' ' ')"
}

# has FILE REGEX...: every REGEX matches a line of FILE.
has() {
	_f=$1
	shift
	for _r in "$@"; do
		grep -Eq -- "$_r" "$_f" || { cat "$_f" >&2; atf_fail "no '$_r' in $_f"; }
	done
}

atf_test_case maildir cleanup
maildir_head() {
	atf_set descr "sendmail to a local user: a valid message in the Maildir with Return-Path and Delivered-To, the queue empty, the log line"
	atf_set require.user unprivileged
}
maildir_body() {
	e2e_instance "home_mailbox = Maildir/" "recipient_delimiter = +"
	start_instance
	msg one | send -f alice@host.test bob
	wait_mail bob 1
	f=$(mail_with bob "hello one")
	valid_message $f
	has $f '^Return-Path: <alice@host.test>$' '^Delivered-To: bob@host.test$' \
	    '^Subject: one$' '^Message-ID: <' '^hello one$' '^From the start$'
	# Return-Path and Delivered-To come first
	head -n 1 $f | grep -q '^Return-Path:' || atf_fail "Return-Path is not first"
	test -z "$(ls mail/bob/Maildir/tmp)" || atf_fail "left in tmp/"
	wait_queue_empty
	log_wait "to=<bob@host.test>, orig_to=<bob>, relay=local, .*dsn=2\.0\.0, status=sent \(delivered to maildir\)"
	# Upper case and an extension reach the same user.
	msg two | send -f alice@host.test "BOB+news@HOST.TEST"
	wait_mail bob 2
	has "$(mail_with bob 'hello two')" '^Delivered-To: BOB\+news@(HOST\.TEST|host\.test)$'
	assert_log_clean
}
maildir_cleanup() {
	stop_instance
}

atf_test_case mbox cleanup
mbox_head() {
	atf_set descr "mbox in mail_spool_directory: From line, >From quoting, headers, a blank line after each message"
	atf_set require.user unprivileged
}
mbox_body() {
	e2e_instance "recipient_delimiter = +"
	start_instance
	msg one | send -f alice@host.test carol
	msg two | send -f alice@host.test carol+x
	WAIT_MAX=100 wait_for lines_ge 2 '^From alice@host.test ' spool/carol ||
	    { cat spool/carol >&2; atf_fail "spool/carol: not two messages"; }
	wait_queue_empty
	test "$(grep -c '^From ' spool/carol)" = 2 || { cat spool/carol >&2; atf_fail "From lines"; }
	test "$(grep -c '^>From the start$' spool/carol)" = 2 || atf_fail ">From quoting"
	has spool/carol '^Return-Path: <alice@host.test>$' \
	    '^Delivered-To: carol@host.test$' '^Delivered-To: carol\+x@host.test$'
	# each message, cut at its From line, is a valid message followed by
	# a blank line
	awk '/^From /{n++; next} {print > ("part" n)}' spool/carol
	for p in part1 part2; do
		tail -n 1 $p | grep -q '^$' || atf_fail "$p does not end with a blank line"
		valid_message $p
	done
	test "$(stat -c %a spool/carol 2>/dev/null || stat -f %Lp spool/carol)" = 600 ||
	    atf_fail "mode of spool/carol"
	test ! -e spool/carol.lock || atf_fail "lock file left"
	grep -q "to=<carol@host.test>.* status=sent (delivered to mailbox)" maillog ||
	    atf_fail "no log line"
	assert_log_clean
}
mbox_cleanup() {
	stop_instance
}

atf_test_case aliases cleanup
aliases_head() {
	atf_set descr "aliases: a list of three users, a pipe, a file; each gets one copy with Delivered-To"
	atf_set require.user unprivileged
}
aliases_body() {
	e2e_instance "home_mailbox = Maildir/"
	start_instance
	msg list | send -f alice@host.test staff
	wait_mail alice 1
	wait_mail bob 1
	wait_mail carol 1
	for u in alice bob carol; do
		f=$(mail_with $u "hello list")
		valid_message $f
		has $f "^Delivered-To: $u@host.test\$" '^Delivered-To: staff@host.test$'
	done
	log_wait "to=<staff@host.test>, orig_to=<staff>, relay=local, .*status=sent \(forwarded as [0-9A-Z]+\)"

	msg pipe | send -f alice@host.test pipe
	WAIT_MAX=100 wait_for test -s pipe.env || atf_fail "the pipe did not run: $(tail -3 maillog | tr '\n' ' ')"
	has pipe.out '^From alice@host.test ' '^Delivered-To: pipe@host.test$' '^hello pipe$'
	has pipe.env '^pipe@host.test$'
	log_wait "to=<pipe@host.test>.*status=sent \(delivered to command: cat > "

	msg file | send -f alice@host.test file
	WAIT_MAX=100 wait_for grep -q '^hello file$' file.mbox || atf_fail "file.mbox"
	has file.mbox '^From alice@host.test ' '^Delivered-To: file@host.test$' '^>From the start$'
	wait_queue_empty
	assert_log_clean
}
aliases_cleanup() {
	stop_instance
}

atf_test_case postfix_aliases cleanup
postfix_aliases_head() {
	atf_set descr "an aliases.db built by Postfix's own postalias (keys and values with a NUL) works unchanged: list, pipe, file"
	atf_set require.user unprivileged
}
postfix_aliases_body() {
	[ -x /usr/sbin/postalias ] ||
	    atf_skip "Postfix is not installed (/usr/sbin/postalias; tools/install-deps installs Debian's postfix)"
	e2e_instance "home_mailbox = Maildir/"
	# Rebuilt by Postfix, with a private main.cf (never /etc/postfix).
	mkdir pf
	printf 'compatibility_level = 3.6\n' > pf/main.cf
	rm -f etc/aliases.db
	atf_check -s exit:0 -o empty /usr/sbin/postalias -c $PWD/pf etc/aliases
	if command -v db5.3_dump >/dev/null 2>&1; then
		db5.3_dump -p etc/aliases.db | grep -q 'staff\\00' ||
		    atf_fail "Postfix did not write keys with a NUL"
	fi
	start_instance
	msg list | send -f alice@host.test staff
	wait_mail alice 1
	wait_mail bob 1
	wait_mail carol 1
	has "$(mail_with carol "hello list")" '^Delivered-To: staff@host.test$'
	msg pipe | send -f alice@host.test pipe
	WAIT_MAX=100 wait_for test -s pipe.env || atf_fail "the pipe did not run: $(tail -3 maillog | tr '\n' ' ')"
	has pipe.env '^pipe@host.test$'
	msg file | send -f alice@host.test file
	WAIT_MAX=100 wait_for grep -q '^hello file$' file.mbox || atf_fail "file.mbox"
	# postmaster -> alice through MAILER-DAEMON's chain
	msg pm | send -f bob@host.test mailer-daemon
	wait_mail alice 2
	wait_queue_empty
	assert_log_clean
}
postfix_aliases_cleanup() {
	stop_instance
}

atf_test_case alias_loop cleanup
alias_loop_head() {
	atf_set descr "loop1 -> loop2 -> loop1 is caught by Delivered-To and bounced once to the sender"
	atf_set require.user unprivileged
}
alias_loop_body() {
	e2e_instance "home_mailbox = Maildir/"
	start_instance
	msg loop | send -f alice@host.test loop1
	wait_mail alice 1
	wait_queue_empty
	f=$(ls mail/alice/Maildir/new/*)
	valid_message $f
	has $f '^From: Mail Delivery System <MAILER-DAEMON@host.test>' 'mail forwarding loop for loop1@host.test' \
	    '^Status: 5\.4\.6'
	test "$(grep -c 'status=bounced (mail forwarding loop for loop1@host.test)' maillog)" = 1 ||
	    atf_fail "not bounced exactly once: $(grep bounced maillog)"
	# nothing more comes
	sleep 1
	nmail_is alice 1 || atf_fail "more than one notice"
	assert_log_clean
}
alias_loop_cleanup() {
	stop_instance
}

atf_test_case unknown_user cleanup
unknown_user_head() {
	atf_set descr "an unknown user bounces with 5.1.1 and a DSN in the sender's mailbox"
	atf_set require.user unprivileged
}
unknown_user_body() {
	e2e_instance "home_mailbox = Maildir/"
	start_instance
	msg nobody | send -f bob@host.test zed
	wait_mail bob 1
	wait_queue_empty
	f=$(ls mail/bob/Maildir/new/*)
	valid_message $f
	has $f '^From: Mail Delivery System <MAILER-DAEMON@host.test>' '^Final-Recipient: rfc822; ?zed@host.test' \
	    '^Action: failed' '^Status: 5\.1\.1' 'User unknown in local recipient table'
	grep -q "to=<zed@host.test>, orig_to=<zed>, relay=local, .*dsn=5\.1\.1, status=bounced (User unknown in local recipient table)" maillog ||
	    atf_fail "no bounced line"
	assert_log_clean
}
unknown_user_cleanup() {
	stop_instance
}

atf_test_case owner_alias cleanup
owner_alias_head() {
	atf_set descr "owner-NAME: the forwarded copies of NAME carry it as sender, so failures go to the owner, not the author"
	atf_set require.user unprivileged
}
owner_alias_body() {
	e2e_instance "home_mailbox = Maildir/"
	printf 'list: bob, ghost\nowner-list: carol\n' >> etc/aliases
	atf_check -s exit:0 $PA etc/aliases
	start_instance
	msg owned | send -f alice@host.test list
	wait_mail bob 1
	has "$(mail_with bob 'hello owned')" '^Return-Path: <owner-list@host.test>$'
	# ghost bounced: the notice goes to owner-list, that is to carol
	wait_mail carol 1
	has "$(ls mail/carol/Maildir/new/*)" '^From: Mail Delivery System <MAILER-DAEMON@host.test>' 'ghost@host.test' '^Status: 5\.1\.1'
	wait_queue_empty
	nmail_is alice 0 || atf_fail "the author got the failure"
	assert_log_clean
}
owner_alias_cleanup() {
	stop_instance
}

atf_test_case forward cleanup
forward_head() {
	atf_set descr ".forward: used when safe; group/world-writable ones are ignored with a warning"
	atf_set require.user unprivileged
}
forward_body() {
	e2e_instance "home_mailbox = Maildir/"
	echo "bob" > mail/alice/.forward
	chmod 666 mail/alice/.forward
	start_instance
	msg insecure | send -f carol@host.test alice
	wait_mail alice 1
	log_wait "warning: [0-9A-Z]+: ignoring insecure .forward file $PWD/mail/alice/.forward of alice: it is world-writable"
	nmail_is bob 0 || atf_fail "an insecure .forward was used"
	chmod 600 mail/alice/.forward
	msg secure | send -f carol@host.test alice
	wait_mail bob 1
	has "$(mail_with bob 'hello secure')" '^Delivered-To: bob@host.test$' \
	    '^Delivered-To: alice@host.test$'
	nmail_is alice 1 || atf_fail "alice got the forwarded message too"
	wait_queue_empty
	assert_log_clean
}
forward_cleanup() {
	stop_instance
}

atf_test_case rebuild_aliases cleanup
rebuild_aliases_head() {
	atf_set descr "postalias while Petrel runs: local sees the new table without a restart"
	atf_set require.user unprivileged
}
rebuild_aliases_body() {
	e2e_instance "home_mailbox = Maildir/"
	start_instance
	msg first | send -f alice@host.test staff
	wait_mail carol 1
	lp=$(pgrep -f -- "local -c $PWD/etc" | head -n 1)
	echo "newalias: carol" >> etc/aliases
	sed -i.bak 's/^staff: alice, bob,$/staff: bob,/' etc/aliases
	atf_check -s exit:0 $PA etc/aliases
	msg second | send -f alice@host.test newalias
	wait_mail carol 2
	msg third | send -f alice@host.test staff
	wait_mail bob 2
	wait_mail carol 3
	wait_queue_empty
	nmail_is alice 1 || atf_fail "the old staff alias was used"
	# (when the same local process served before and after, it reopened
	# the table by itself)
	if [ -n "$lp" ] && kill -0 $lp 2>/dev/null; then
		grep -q "petrel/local\[$lp\]: .*reopened rebuilt file" maillog ||
		    atf_fail "local $lp did not log the reopen"
	fi
	assert_log_clean
}
rebuild_aliases_cleanup() {
	stop_instance
}

atf_test_case failing_mailbox cleanup
failing_mailbox_head() {
	atf_set descr "a Maildir that cannot be written defers the mail; it is delivered once the problem is gone"
	atf_set require.user unprivileged
}
failing_mailbox_body() {
	e2e_instance "home_mailbox = Maildir/"
	mkdir -p mail/bob/Maildir/new mail/bob/Maildir/tmp mail/bob/Maildir/cur
	chmod 555 mail/bob/Maildir/tmp
	start_instance
	msg deferred | send -f alice@host.test bob
	log_wait "to=<bob@host.test>.*dsn=4\.2\.0, status=deferred \(cannot create $PWD/mail/bob/Maildir/tmp/"
	WAIT_MAX=100 wait_for has_files q/deferred || atf_fail "not in deferred/"
	nmail_is bob 0 || atf_fail "delivered"
	chmod 700 mail/bob/Maildir/tmp
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc flush
	wait_mail bob 1
	wait_queue_empty
	test "$(grep -c 'to=<bob@host.test>.*status=sent' maillog)" = 1 || atf_fail "sent lines"
	assert_log_clean
}
failing_mailbox_cleanup() {
	stop_instance
}

# ---- As root: a real account ------------------------------------------

require_root() {
	[ "$(id -u)" = 0 ] || atf_skip "needs root (privileges of local)"
	id nobody >/dev/null 2>&1 || atf_skip "no 'nobody' account to use as mail_owner"
	command -v useradd >/dev/null 2>&1 || [ -x /usr/sbin/useradd ] ||
	    atf_skip "no useradd"
}


root_instance() {
	require_path
	# Children (mail_owner) must reach the work directory.
	chmod 755 .
	mk_account
	mkdir -p spool
	chmod 755 spool
	mk_submit "mail_owner = nobody" "setgid_group = $(id -gn nobody)" \
	    "myhostname = host.test" "mydomain = test" \
	    "mail_spool_directory = $PWD/spool" \
	    "alias_maps = hash:$PWD/etc/aliases" \
	    "queue_run_delay = 3600s" "minimal_backoff_time = 3600s" \
	    "maximal_backoff_time = 3600s" "$@"
	mcf "pickup unix n - n 60 1 pickup" "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix n - n 300 1 qmgr" "local unix - n n - - local" \
	    "bounce unix - - n - 0 bounce"
	mkdir -m 777 out
	{
		echo "postmaster: root"
		echo "rootcmd: \"|id -u > $PWD/out/rootcmd\""
		echo "rootfile: $PWD/out/rootfile.mbox"
	} > etc/aliases
	atf_check -s exit:0 $PA etc/aliases
}

atf_test_case real_user_root cleanup
real_user_root_head() {
	atf_set descr "as root: the mailbox belongs to the recipient, a .forward command runs with the recipient's uid"
	atf_set require.user root
}
real_user_root_body() {
	require_root
	root_instance
	# first a .forward the user does not own: ignored, with a warning
	echo "\"|touch $PWD/out/bad\"" > home/$U/.forward
	chmod 644 home/$U/.forward
	start_instance
	msg notowned | send -f root@host.test $U
	log_wait "warning: [0-9A-Z]+: ignoring insecure .forward file $PWD/home/$U/.forward of $U: it is not owned by the user"
	WAIT_MAX=100 wait_for grep -q '^hello notowned$' spool/$U || atf_fail "not delivered to the mailbox"
	test ! -e out/bad || atf_fail "a .forward owned by root was used"
	atf_check -s exit:0 -e ignore $PETREL -c $PWD/etc stop
	wait_for no_process_left
	rm spool/$U
	printf '"|id -u > %s/home/%s/id.out; id -G >> %s/home/%s/id.out", \\%s\n' \
	    "$PWD" $U "$PWD" $U $U > home/$U/.forward
	chown $U home/$U/.forward
	chmod 644 home/$U/.forward
	start_instance
	msg root | send -f root@host.test $U
	WAIT_MAX=100 wait_for test -s spool/$U || atf_fail "no mailbox: $(tail -3 maillog | tr '\n' ' ')"
	WAIT_MAX=100 wait_for test -s home/$U/id.out || atf_fail "the command did not run"
	wait_queue_empty
	# the mailbox: created for the user, only theirs
	test "$(stat -c '%U %a' spool/$U)" = "$U 600" ||
	    atf_fail "spool/$U: $(stat -c '%U %G %a' spool/$U)"
	has spool/$U "^Delivered-To: $U@host.test\$" '^hello root$'
	# the command: the user's uid, and only the user's group
	test "$(head -n 1 home/$U/id.out)" = "$UID_" || atf_fail "uid: $(head -n 1 home/$U/id.out)"
	test "$(sed -n 2p home/$U/id.out)" = "$(id -g $U)" || atf_fail "groups: $(sed -n 2p home/$U/id.out)"
	test "$(stat -c %U home/$U/id.out)" = $U || atf_fail "id.out owner"
	# commands and files of a root-owned alias table: default_privs
	msg alias | send -f root@host.test rootcmd rootfile
	WAIT_MAX=100 wait_for test -s out/rootcmd || atf_fail "rootcmd did not run"
	WAIT_MAX=100 wait_for test -s out/rootfile.mbox || atf_fail "rootfile"
	test "$(cat out/rootcmd)" = "$(id -u nobody)" || atf_fail "rootcmd ran as uid $(cat out/rootcmd)"
	test "$(stat -c %U out/rootfile.mbox)" = nobody || atf_fail "rootfile.mbox owner"
	# a Maildir in the home directory belongs to the user too
	atf_check -s exit:0 -e ignore $PETREL -c $PWD/etc stop
	wait_for no_process_left
	rm home/$U/.forward
	echo "home_mailbox = Maildir/" >> etc/main.cf
	start_instance
	msg maildir | send -f root@host.test $U
	WAIT_MAX=100 wait_for has_files home/$U/Maildir/new ||
	    atf_fail "no Maildir delivery: $(tail -3 maillog | tr '\n' ' ')"
	test -z "$(find home/$U/Maildir ! -user $U)" ||
	    atf_fail "not the user's: $(find home/$U/Maildir ! -user $U)"
	assert_log_clean
}
real_user_root_cleanup() {
	stop_instance
	rm_account
}

atf_test_case full_disk_root cleanup
full_disk_root_head() {
	atf_set descr "as root: a full file system defers (4.2.2) without a partial message in the mbox; delivered once there is room"
	atf_set require.user root
}
full_disk_root_body() {
	require_root
	root_instance
	mkdir -p spool
	mount -t tmpfs -o size=256k,mode=755 tmpfs spool 2>/dev/null ||
	    atf_skip "cannot mount a tmpfs here"
	touch mounted
	start_instance
	msg small | send -f root@host.test $U
	WAIT_MAX=100 wait_for grep -q '^hello small$' spool/$U || atf_fail "first delivery"
	cp spool/$U before
	# fill the file system, leaving some room, and send more than that
	dd if=/dev/zero of=spool/filler bs=1k count=1000 2>/dev/null
	rm -f spool/filler.small
	{ printf 'Subject: big\n\n'; i=0; while [ $i -lt 3000 ]; do
		echo "0123456789012345678901234567890123456789012345678901234567890123456789"
		i=$((i + 1)); done; } > big
	send -f root@host.test $U < big
	log_wait "to=<$U@host.test>.*dsn=4\.2\.2, status=deferred \(mailbox full"
	cmp -s before spool/$U || atf_fail "the mbox changed after a failed delivery"
	rm spool/filler
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc flush
	WAIT_MAX=100 wait_for lines_ge 2 '^From root@host.test ' spool/$U ||
	    atf_fail "not delivered after the flush: $(tail -3 maillog | tr '\n' ' ')"
	wait_queue_empty
	test "$(grep -c '^0123456789' spool/$U)" = 3000 || atf_fail "big message incomplete"
	assert_log_clean
}
full_disk_root_cleanup() {
	stop_instance
	[ -f mounted ] && umount spool 2>/dev/null
	rm_account
}

atf_init_test_cases() {
	atf_add_test_case maildir
	atf_add_test_case mbox
	atf_add_test_case aliases
	atf_add_test_case postfix_aliases
	atf_add_test_case alias_loop
	atf_add_test_case unknown_user
	atf_add_test_case owner_alias
	atf_add_test_case forward
	atf_add_test_case rebuild_aliases
	atf_add_test_case failing_mailbox
	atf_add_test_case real_user_root
	atf_add_test_case full_disk_root
}
