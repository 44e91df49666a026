#! /usr/bin/env atf-sh
# A Debian Postfix configuration, unchanged but for what a private
# instance must change: main.cf.debian and main.cf.tls as Debian's
# postinst puts them together for an "Internet Site" (its postconf -e
# settings applied with Postfix's own postconf, on a private copy),
# Debian's master.cf.dist, and an aliases.db built by Postfix's
# postalias.  Petrel must start with it (petrel check clean), accept
# mail over SMTP and from sendmail, deliver to mbox in the spool
# directory honouring Postfix's aliases.db, relay to a sink, and say in
# the log what of these files it does not implement.  /etc/postfix is
# never touched; skipped when Postfix is not installed.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

PF=/usr/share/postfix
PF_POSTCONF=/usr/sbin/postconf
PF_POSTALIAS=/usr/sbin/postalias

need_postfix() {
	for f in $PF/main.cf.debian $PF/main.cf.tls $PF/master.cf.dist \
	    $PF_POSTCONF $PF_POSTALIAS; do
		[ -e $f ] || atf_skip "Postfix is not installed ($f; tools/install-deps installs Debian's postfix)"
	done
}

# set_postconf NAME=VALUE...: what postinst's set_postconf does, with
# Postfix's postconf on our copy.
set_postconf() {
	atf_check -s exit:0 -o ignore -e ignore $PF_POSTCONF -c $PWD/etc -e "$@"
}

# debian_instance SINKPORT: etc/ as Debian's postinst leaves it for an
# Internet Site, then the private instance's paths and ports.
debian_instance() {
	_sink=$1
	port=$(free_port)
	mkdir -p etc mail/alice mail/bob spool data
	chmod 1777 spool
	# postinst: main.cf.debian, main.cf.tls when there is a certificate
	# (here one of the test's own instead of the snakeoil one, which
	# only root may read), then the debconf answers.
	cp $PF/main.cf.debian etc/main.cf
	cp $PF/master.cf.dist etc/master.cf
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=mx.example.test \
	    -keyout etc/key.pem -out etc/cert.pem > /dev/null 2>&1 ||
	    atf_fail "openssl could not make a certificate"
	sed -e "s|/etc/ssl/certs/ssl-cert-snakeoil.pem|$PWD/etc/cert.pem|" \
	    -e "s|/etc/ssl/private/ssl-cert-snakeoil.key|$PWD/etc/key.pem|" \
	    $PF/main.cf.tls >> etc/main.cf
	set_postconf "smtpd_relay_restrictions=permit_mynetworks permit_sasl_authenticated defer_unauth_destination"
	set_postconf "myhostname=mx.example.test"
	set_postconf "alias_maps=hash:$PWD/etc/aliases"
	set_postconf "alias_database=hash:$PWD/etc/aliases"
	echo example.test > etc/mailname
	set_postconf "myorigin=$PWD/etc/mailname"
	set_postconf 'mydestination=$myhostname, example.test, localhost.example.test, , localhost'
	set_postconf "relayhost=[127.0.0.1]:$_sink"
	set_postconf "mynetworks=127.0.0.0/8 [::ffff:127.0.0.0]/104 [::1]/128"
	set_postconf "mailbox_size_limit=0"
	set_postconf "recipient_delimiter=+"
	set_postconf "inet_interfaces=all"
	set_postconf "inet_protocols=all"
	# What a private instance must change: paths, interfaces, port.
	set_postconf "inet_interfaces=127.0.0.1"
	set_postconf "data_directory=$PWD/data"
	set_postconf "mail_spool_directory=$PWD/spool"
	# Debian's /etc/aliases, plus what postinst adds for root.
	printf '# See man 5 aliases for format\npostmaster:    root\nroot: alice\nstaff: alice, bob\n' > etc/aliases
	atf_check -s exit:0 -o ignore -e ignore $PF_POSTALIAS -c $PWD/etc etc/aliases
	test -f etc/aliases.db || atf_fail "Postfix's postalias made no aliases.db"
	# Petrel's own (Postfix's postalias, run above, would refuse a
	# maillog_file outside its maillog_file_prefixes).
	cat >> etc/main.cf <<EOF2

# Petrel private instance
queue_directory = $PWD/q
daemon_directory = $B/bin
command_directory = $B/bin
maillog_file = $PWD/maillog
local_mail_root = $PWD/mail
EOF2
	sed -i "s/^smtp      inet/$port inet/" etc/master.cf
	grep -q "^$port inet" etc/master.cf || atf_fail "no smtp inet line in master.cf.dist"
	MAIL_CONFIG=$PWD/etc
	export MAIL_CONFIG
}

mbox_count() {
	grep -c '^From ' spool/$1 2>/dev/null || echo 0
}
mbox_is() {
	[ "$(mbox_count $1)" = "$2" ]
}

atf_test_case internet_site cleanup
internet_site_head() {
	atf_set descr "Debian's Internet Site main.cf, master.cf.dist and a" \
	    "Postfix-built aliases.db: petrel check is clean and names what" \
	    "Petrel lacks, SMTP (with STARTTLS) and sendmail mail is" \
	    "delivered to mbox through the aliases, unknown users get 550," \
	    "other domains are relayed to the sink"
	atf_set require.user unprivileged
	atf_set require.progs bash openssl
	atf_set timeout 120
}
internet_site_body() {
	need_postfix
	need_bash
	mkdir saved
	start_sink s -d saved
	debian_instance $port
	atf_check -s exit:0 -o ignore -e save:check.err $PETREL -c $PWD/etc check
	# Warnings, never errors, and each names what is not implemented.
	! grep -E 'error|fatal|refuse' check.err || atf_fail "petrel check complained"
	for w in "main.cf:[0-9]*: Postfix parameter biff is not implemented by Petrel" \
	    "main.cf:[0-9]*: Postfix parameter compatibility_level is not implemented by Petrel" \
	    "main.cf:[0-9]*: Postfix parameter readme_directory is not implemented by Petrel" \
	    "main.cf:[0-9]*: Postfix parameter smtp_tls_session_cache_database is not implemented by Petrel" \
	    "service tlsmgr/unix: Postfix's tlsmgr .* is not implemented by Petrel; the service is not started" \
	    "service rewrite/unix: Postfix's trivial-rewrite is not needed by Petrel" \
	    "service maildrop/unix: Postfix's pipe .* is not implemented by Petrel" \
	    "service postlog/unix-dgram: Postfix's postlogd"; do
		grep -q -- "$w" check.err || { cat check.err >&2; atf_fail "petrel check does not say: $w"; }
	done
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc start
	grep_wait maillog "Postfix's tlsmgr .* is not implemented by Petrel"

	cat > m <<'EOF2'
EHLO client.test
MAIL FROM:<sender@client.test>
RCPT TO:<alice@mx.example.test>
RCPT TO:<staff@example.test>
RCPT TO:<Alice+debian@localhost>
RCPT TO:<remote@far.example>
RCPT TO:<nosuchuser@mx.example.test>
DATA
Subject: from a Debian configuration

hello
.
QUIT
EOF2
	atf_check -o save:m.out bash chat.bash $port m
	grep -q '^250-STARTTLS' m.out || { cat m.out >&2; atf_fail "no STARTTLS (main.cf.tls)"; }
	grep -q '^220 mx.example.test ESMTP .* (Debian/GNU)$' m.out ||
	    { head -1 m.out >&2; atf_fail "smtpd_banner of main.cf.debian"; }
	grep -q '^550 5.1.1 <nosuchuser@mx.example.test>' m.out ||
	    { cat m.out >&2; atf_fail "unknown user not refused"; }
	atf_check_equal 4 "$(grep -c '^250 2.1.5 Ok$' m.out)"
	grep -q '^250 2.0.0 Ok: queued as' m.out || { cat m.out >&2; atf_fail "not queued"; }
	# sendmail: postmaster -> root -> alice, through Postfix's aliases.db.
	printf 'Subject: by sendmail\n\nlocal\n' > s.msg
	atf_check -s exit:0 -o empty -e empty $B/bin/sendmail -f bob postmaster < s.msg
	# alice: direct, staff, +debian, postmaster; bob: staff.
	WAIT_MAX=150 wait_for mbox_is alice 4 ||
	    { tail -20 maillog >&2; atf_fail "alice has $(mbox_count alice) messages"; }
	WAIT_MAX=50 wait_for mbox_is bob 1 || atf_fail "bob has $(mbox_count bob)"
	stat_is s.stats messages 1
	grep -q '^X-Sink-Rcpt-To: <remote@far.example>' saved/* || atf_fail "relay"
	# myorigin from the mailname file: sendmail's sender bob is bob@example.test.
	grep -q '^Return-Path: <bob@example.test>$' spool/alice ||
	    { grep Return-Path spool/alice >&2; atf_fail "myorigin = /path/mailname not used"; }
	grep -q 'to=<postmaster@example.test>.*status=sent' maillog ||
	    atf_fail "no delivery line for postmaster"
	! grep -E ' (error|fatal|panic):' maillog || atf_fail "errors in the log"
	# The main.cf warnings are master's, logged once at start: not again
	# by each daemon process that started (smtpd, cleanup, qmgr, local,
	# smtp, ... have run by now).  sendmail and postdrop log theirs.
	n=$(grep -c 'master\[[0-9]*\]: warning: .*Postfix parameter biff is not implemented by Petrel' maillog)
	[ "$n" = 1 ] || { grep 'parameter biff' maillog >&2; atf_fail "master warned $n times"; }
	! grep -E '/(smtpd|cleanup|qmgr|local|smtp|pickup|bounce)\[[0-9]+\]: .*parameter biff' maillog ||
	    atf_fail "a daemon repeats main.cf's warnings"
	finish
	assert_log_clean
}
internet_site_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case internet_site
}
