#! /usr/bin/env atf-sh
# One definition of a local user for smtpd and local (libglobal/
# local_rcpt.h): in a private instance whose users are the directories
# under local_mail_root, smtpd accepts at RCPT exactly the recipients
# local delivers (users, aliases from the instance's own aliases file,
# address extensions) and refuses the rest with 550 5.1.1.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

# A private instance: smtpd on $port, cleanup, qmgr, local; users alice
# and bob under ./mail; alias_maps and local_recipient_maps left at their
# defaults, so that both daemons must find etc/aliases by themselves.
lr_instance() {
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "local_mail_root = $PWD/mail" "home_mailbox = Maildir/" \
	    "recipient_delimiter = +" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 3600s" "inet_protocols = ipv4" "$@"
	mkdir -p mail/alice mail/bob
	printf 'staff: alice, bob\npostmaster: alice\n' > etc/aliases
	atf_check -s exit:0 -o empty -e empty $B/bin/postalias -c $PWD/etc etc/aliases
	mcf "$port inet n - n - - smtpd" "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 3600 1 qmgr" "local unix - n n - - local" \
	    "bounce unix - - n - 0 bounce"
	start_instance
}

nmail() {
	find mail/$1/Maildir/new -type f 2>/dev/null | wc -l | tr -d ' '
}
nmail_is() {
	[ "$(nmail $1)" = "$2" ]
}

atf_test_case private_instance cleanup
private_instance_head() {
	atf_set descr "local_mail_root users, their +extensions and aliases" \
	    "are accepted at RCPT and delivered; a password-database user" \
	    "local does not deliver to here (root) and an unknown name get" \
	    "550 5.1.1 at RCPT"
	atf_set require.user unprivileged
}
private_instance_body() {
	need_bash
	lr_instance
	cat > s <<'EOF2'
EHLO client.test
MAIL FROM:<sender@example.org>
RCPT TO:<alice@mx.example.test>
RCPT TO:<Bob+news@mx.example.test>
RCPT TO:<staff@mx.example.test>
RCPT TO:<root@mx.example.test>
RCPT TO:<nosuchuser@mx.example.test>
RCPT TO:<carol@localhost>
DATA
Subject: local recipients

hello
.
QUIT
EOF2
	atf_check -o save:s.out bash chat.bash $port s
	for r in root@mx.example.test nosuchuser@mx.example.test carol@localhost; do
		grep -q "^550 5.1.1 <$r>: Recipient address rejected: User unknown in local recipient table$" s.out ||
		    { cat s.out >&2; atf_fail "$r not refused with 550 5.1.1"; }
	done
	atf_check_equal 3 "$(grep -c '^250 2.1.5 Ok$' s.out)"
	grep -q '^250 2.0.0 Ok: queued as' s.out || { cat s.out >&2; atf_fail "not queued"; }
	# alice directly and through staff (one copy each: two recipients),
	# bob through his extension and through staff.
	WAIT_MAX=100 wait_for nmail_is alice 2 ||
	    atf_fail "alice has $(nmail alice) messages: $(tail -5 maillog)"
	WAIT_MAX=100 wait_for nmail_is bob 2 ||
	    atf_fail "bob has $(nmail bob) messages: $(tail -5 maillog)"
	grep -q 'to=<Bob+news@mx.example.test>.*status=sent' maillog ||
	    atf_fail "no delivery line for Bob+news"
	# A user who appears after the start is known at once to both.
	mkdir mail/carol
	mail_script c sender@example.org carol@localhost
	atf_check -o save:c.out bash chat.bash $port c
	atf_check -o match:'^250 2.1.5 Ok$' -o match:'^250 2.0.0 Ok: queued as' cat c.out
	WAIT_MAX=100 wait_for nmail_is carol 1 ||
	    atf_fail "carol has $(nmail carol) messages: $(tail -5 maillog)"
	assert_log_clean
}
private_instance_cleanup() { stop_instance; }

atf_test_case new_alias cleanup
new_alias_head() {
	atf_set descr "an alias added with postalias while the instance runs" \
	    "is accepted at RCPT (smtpd reopens the rebuilt table) and delivered"
	atf_set require.user unprivileged
}
new_alias_body() {
	need_bash
	lr_instance
	mail_script a sender@example.org team@mx.example.test
	atf_check -o match:'^550 5.1.1 <team@mx.example.test>' bash chat.bash $port a
	echo 'team: bob' >> etc/aliases
	atf_check -s exit:0 -o empty -e empty $B/bin/postalias -c $PWD/etc etc/aliases
	# Tables are checked for a rebuild at most once a second.
	accepted() {
		bash chat.bash $port a > a.out
		grep -q '^250 2.0.0 Ok: queued as' a.out
	}
	WAIT_MAX=40 wait_for accepted || { cat a.out >&2; atf_fail "team still refused"; }
	WAIT_MAX=100 wait_for nmail_is bob 1 ||
	    atf_fail "bob has $(nmail bob) messages: $(tail -5 maillog)"
	assert_log_clean
}
new_alias_cleanup() { stop_instance; }

atf_test_case inline_aliases cleanup
inline_aliases_head() {
	atf_set descr "alias_maps = inline:{ ... } with several entries and" \
	    "a braced one whose value has a comma: smtpd accepts the aliases" \
	    "(local_recipient_maps follows alias_maps) and local delivers them"
	atf_set require.user unprivileged
}
inline_aliases_body() {
	need_bash
	lr_instance "alias_maps = inline:{ team=bob, { crew = alice, bob } }"
	cat > s <<'EOF2'
EHLO client.test
MAIL FROM:<sender@example.org>
RCPT TO:<crew@mx.example.test>
RCPT TO:<team@mx.example.test>
DATA
Subject: inline aliases

hello
.
QUIT
EOF2
	atf_check -o save:s.out bash chat.bash $port s
	atf_check_equal 2 "$(grep -c '^250 2.1.5 Ok$' s.out)"
	grep -q '^250 2.0.0 Ok: queued as' s.out || { cat s.out >&2; atf_fail "not queued"; }
	# alice through crew; bob through crew and through team.
	WAIT_MAX=100 wait_for nmail_is alice 1 ||
	    atf_fail "alice has $(nmail alice) messages: $(tail -5 maillog)"
	WAIT_MAX=100 wait_for nmail_is bob 2 ||
	    atf_fail "bob has $(nmail bob) messages: $(tail -5 maillog)"
	assert_log_clean
}
inline_aliases_cleanup() { stop_instance; }

atf_test_case chrooted_smtpd cleanup
chrooted_smtpd_head() {
	atf_set descr "a chrooted smtpd checks local_mail_root's users" \
	    "through the directory it opened before the chroot (alice 250," \
	    "bob 550 5.1.1, aliases too); a local_mail_root that did not" \
	    "exist at start answers 451 4.3.0 (never 550) and is named"
	atf_set require.user root
}
chrooted_smtpd_body() {
	need_bash
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test" \
	    "local_mail_root = $PWD/mail" \
	    "alias_maps = hash:$PWD/etc/aliases" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0"
	mkdir -p mail/alice
	printf 'staff: alice\n' > etc/aliases
	atf_check -s exit:0 $B/bin/postalias etc/aliases
	mcf "$port inet n n y - - smtpd" "cleanup unix n n y - 0 cleanup"
	start_instance
	cat > s <<'EOF2'
HELO client.test
MAIL FROM:<a@example.org>
RCPT TO:<alice@mx.example.test>
RCPT TO:<bob@mx.example.test>
RCPT TO:<staff@mx.example.test>
QUIT
EOF2
	atf_check -o save:s.out bash chat.bash $port s
	atf_check -s exit:0 -o inline:"2\n" grep -c '^250 2.1.5 Ok$' s.out
	atf_check -o match:'^550 5.1.1 <bob@mx.example.test>: Recipient address rejected' cat s.out
	atf_check -s exit:1 grep -q 'missing' maillog
	stop_instance
	# A root that is not there when smtpd starts: 451, and the log
	# names it.
	rm -rf mail
	start_instance
	atf_check -o save:s2.out bash chat.bash $port s
	atf_check -o match:'^451 4.3.0 <alice@mx.example.test>: Temporary lookup failure$' cat s2.out
	grep_wait maillog "chroot jail .*: $PWD/mail is missing"
}
chrooted_smtpd_cleanup() { stop_instance; }

atf_init_test_cases() {
	atf_add_test_case private_instance
	atf_add_test_case new_alias
	atf_add_test_case inline_aliases
	atf_add_test_case chrooted_smtpd
}
