#! /usr/bin/env atf-sh
# SMTP AUTH in Petrel's smtp client through a real smarthost: a private
# Postfix (Debian's package, its own main.cf and master.cf here, queue and
# data directories here, on 127.0.0.1 and a port free at run time) with
# smtpd_sasl_auth_enable and Dovecot SASL (a private Dovecot, its own
# dovecot.conf, base_dir here, no mail protocols, a passwd-file of users).
# Postfix relays what it accepts to smtp-sink.  Petrel relays to Postfix
# with relayhost = [127.0.0.1]:PORT and credentials from
# smtp_sasl_password_maps.  Root only (Postfix and Dovecot drop to their
# own users); /etc/postfix and /etc/dovecot are never read or touched.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/common.subr

# Skips unless this can run: root, Postfix, Dovecot, swaks, and a work
# directory the postfix and dovecot users can reach.
need_smarthost_tools() {
	[ "$(id -u)" = 0 ] ||
	    atf_skip "needs root: Postfix and Dovecot switch to their own users"
	[ -x /usr/sbin/postfix ] ||
	    atf_skip "Postfix is not installed (tools/install-deps installs Debian's postfix)"
	[ -x /usr/sbin/dovecot ] ||
	    atf_skip "Dovecot is not installed (tools/install-deps installs dovecot-core)"
	id postfix >/dev/null 2>&1 || atf_skip "no postfix account"
	chmod 755 .
	runuser -u postfix -- test -x "$PWD" ||
	    atf_skip "the postfix user cannot reach $PWD"
	# Unix socket paths are short.
	[ ${#PWD} -lt 80 ] || atf_skip "work directory path too long for sockets"
}

# start_dovecot: Dovecot's auth service alone, users alice (alicepw) and
# bob (bobpw), its client socket at $PWD/dc/auth-client.
start_dovecot() {
	mkdir -p dc dc-state
	cat > dovecot.conf <<EOD
base_dir = $PWD/dc
state_dir = $PWD/dc-state
log_path = $PWD/dovecot.log
protocols = none
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u $PWD/users
}
userdb {
  driver = static
  args = uid=nobody gid=nogroup home=/nonexistent
}
service auth {
  unix_listener auth-client {
    mode = 0666
  }
}
EOD
	printf 'alice:{PLAIN}alicepw\nbob:{PLAIN}bobpw\n' > users
	chmod 644 users
	/usr/sbin/dovecot -c $PWD/dovecot.conf ||
	    { cat dovecot.log >&2; atf_fail "Dovecot did not start"; }
	retry test -S dc/auth-client ||
	    { cat dovecot.log >&2; atf_fail "no Dovecot auth socket"; }
}

# start_postfix [main.cf lines...]: Postfix on 127.0.0.1:$PFPORT,
# relaying to the sink on $SINKPORT; 127.0.0.1 is not in mynetworks,
# so relaying needs a login.  TLS with cert.pem unless the lines say
# otherwise (later lines win).
start_postfix() {
	PFPORT=$(free_port)
	mkdir -p pf pfq pfdata
	chown postfix pfdata
	{
		echo "compatibility_level = 3.6"
		echo "queue_directory = $PWD/pfq"
		echo "data_directory = $PWD/pfdata"
		echo "maillog_file = $PWD/postfix.log"
		echo "maillog_file_prefixes = $PWD"
		echo "inet_interfaces = 127.0.0.1"
		echo "inet_protocols = ipv4"
		echo "myhostname = smarthost.test"
		echo "mydestination ="
		echo "mynetworks = 192.0.2.1/32"
		echo "relayhost = [127.0.0.1]:$SINKPORT"
		echo "smtp_dns_support_level = disabled"
		echo "smtp_tls_security_level = none"
		echo "alias_maps ="
		echo "alias_database ="
		echo "biff = no"
		echo "smtpd_error_sleep_time = 0"
		echo "smtpd_relay_restrictions = permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination"
		echo "smtpd_sasl_auth_enable = yes"
		echo "smtpd_sasl_type = dovecot"
		echo "smtpd_sasl_path = $PWD/dc/auth-client"
		echo "smtpd_tls_security_level = may"
		echo "smtpd_tls_auth_only = yes"
		echo "smtpd_tls_cert_file = $PWD/cert.pem"
		echo "smtpd_tls_key_file = $PWD/key.pem"
		for l in "$@"; do echo "$l"; done
	} > pf/main.cf
	cat > pf/master.cf <<EOD
127.0.0.1:$PFPORT inet n - n - - smtpd
cleanup unix n - n - 0 cleanup
qmgr unix n - n 300 1 qmgr
tlsmgr unix - - n 1000? 1 tlsmgr
rewrite unix - - n - - trivial-rewrite
bounce unix - - n - 0 bounce
defer unix - - n - 0 bounce
trace unix - - n - 0 bounce
verify unix - - n - 1 verify
flush unix n - n 1000? 0 flush
proxymap unix - - n - - proxymap
smtp unix - - n - - smtp
relay unix - - n - - smtp
showq unix n - n - - showq
error unix - - n - - error
retry unix - - n - - error
discard unix - - n - - discard
anvil unix - - n - 1 anvil
scache unix - - n - 1 scache
postlog unix-dgram n - n - 1 postlogd
EOD
	/usr/sbin/postfix -c $PWD/pf start > postfix-start.out 2>&1 ||
	    { cat postfix-start.out postfix.log >&2; atf_fail "Postfix did not start"; }
	retry bash -c "exec 3<>/dev/tcp/127.0.0.1/$PFPORT" 2>/dev/null ||
	    { cat postfix.log >&2; atf_fail "Postfix does not listen on $PFPORT"; }
}

# A process that has exited (a zombie nobody reaped yet counts: kill -0
# would still find it).
_dead() {
	[ ! -d /proc/$1 ] || grep -q '^State:[[:space:]]*Z' /proc/$1/status 2>/dev/null
}

# kill_group PIDFILE: the process in PIDFILE leads a process group of its
# own (Postfix's and Dovecot's masters do: every process of the private
# instance, nothing else); the whole group is killed at once.  An orderly
# "postfix stop" or "dovecot stop" would take two seconds of each test
# (both masters wait before they exit), and nothing here needs one: their
# state goes with the work directory.
kill_group() {
	_kg=$(tr -d ' \n' < "$1" 2>/dev/null)
	[ -n "$_kg" ] || return 0
	[ "$(ps -o pgid= -p "$_kg" | tr -d ' ')" = "$_kg" ] || return 0
	kill -9 -- "-$_kg" 2>/dev/null
	retry _dead "$_kg"
	true
}

stop_postfix() {
	kill_group pfq/pid/master.pid
}

stop_dovecot() {
	kill_group dc/master.pid
}

# smarthost [main.cf lines for Postfix...]: certificate, sink, Dovecot
# and Postfix.
smarthost() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	    -nodes -keyout key.pem -out cert.pem -days 2 \
	    -subj /CN=smarthost.test > pki.log 2>&1 ||
	    { cat pki.log >&2; atf_fail "cannot make a test certificate"; }
	mkdir -p saved
	start_sink sink -d saved
	SINKPORT=$port
	start_dovecot
	start_postfix "$@"
}

# client [main.cf lines...]: the Petrel instance relaying to Postfix
# with SMTP AUTH and the password table ./sasl_passwd (mode 600, as an
# administrator keeps it: the smtp client opens it before it drops its
# privileges); smtpd on $port for mail to send.
client() {
	chmod 600 sasl_passwd
	relay_instance $PFPORT "myhostname = client.test" \
	    "smtp_sasl_auth_enable = yes" \
	    "smtp_sasl_password_maps = texthash:$PWD/sasl_passwd" "$@"
}

# send FROM TO: one message into Petrel.
send() {
	swaks --server 127.0.0.1:$port --helo client.test --from "$1" \
	    --to "$2" --body "sasl test" > "swaks.$1.out" 2>&1 ||
	    { cat "swaks.$1.out" >&2; atf_fail "Petrel did not take the message from $1"; }
}

# The password never appears in Petrel's log, plain or in base64.
no_password_logged() {
	! grep -E 'alicepw|bobpw|YWxpY2Vwdw|Ym9icHc|AGFsaWNlAGFsaWNlcHc|AGJvYgBib2Jwdw' maillog ||
	    atf_fail "a password is in Petrel's log"
}

common_cleanup() {
	stop_postfix
	stop_dovecot
	stop_instance
	stop_all
}

atf_test_case relay_starttls cleanup
relay_starttls_head() {
	atf_set descr "Petrel logs in to a Postfix smarthost (Dovecot SASL) over STARTTLS with the credentials of its [host]:port entry, as Debian's smarthost recipe sets it up; the message arrives and Postfix logs sasl_username=alice"
	atf_set require.progs "swaks openssl bash runuser"
	atf_set timeout 60
}
relay_starttls_body() {
	need_smarthost_tools
	smarthost
	printf '[127.0.0.1]:%s alice:alicepw\n' $PFPORT > sasl_passwd
	client "smtp_sasl_security_options = noanonymous" \
	    "smtp_tls_security_level = encrypt"
	send sender@client.test rcpt@remote.test
	grep_wait maillog "to=<rcpt@remote.test>.*status=sent" ||
	    { cat maillog >&2; atf_fail "not sent"; }
	grep_wait postfix.log "client=localhost\[127.0.0.1\], sasl_method=PLAIN, sasl_username=alice$" ||
	    { cat postfix.log >&2; atf_fail "Postfix did not log the login"; }
	grep -q "TLS connection established to 127.0.0.1\[127.0.0.1\]:$PFPORT" maillog ||
	    atf_fail "no TLS"
	stat_is sink.stats messages 1
	grep -q "^X-Sink-Rcpt-To: <rcpt@remote.test>" saved/* ||
	    atf_fail "the sink did not get the message"
	no_password_logged
	assert_log_clean
	finish
}
relay_starttls_cleanup() {
	common_cleanup
}

atf_test_case relay_login_mechanism cleanup
relay_login_mechanism_head() {
	atf_set descr "with smtp_sasl_mechanism_filter = login Petrel logs in with LOGIN (Postfix logs sasl_method=LOGIN); the credentials come from the [host] entry when there is none for [host]:port"
	atf_set require.progs "swaks openssl bash runuser"
	atf_set timeout 60
}
relay_login_mechanism_body() {
	need_smarthost_tools
	smarthost
	printf '[127.0.0.1] bob:bobpw\n' > sasl_passwd
	client "smtp_sasl_security_options = noanonymous" \
	    "smtp_tls_security_level = encrypt" \
	    "smtp_sasl_mechanism_filter = login"
	send sender@client.test rcpt@remote.test
	grep_wait maillog "to=<rcpt@remote.test>.*status=sent" ||
	    { cat maillog >&2; atf_fail "not sent"; }
	grep_wait postfix.log "sasl_method=LOGIN, sasl_username=bob$" ||
	    { cat postfix.log >&2; atf_fail "Postfix did not log a LOGIN"; }
	no_password_logged
	finish
}
relay_login_mechanism_cleanup() {
	common_cleanup
}

atf_test_case wrong_password cleanup
wrong_password_head() {
	atf_set descr "wrong credentials: Postfix answers 535, the message stays deferred and postq shows the server's reply as the reason; nothing reaches the sink"
	atf_set require.progs "swaks openssl bash runuser"
	atf_set timeout 60
}
wrong_password_body() {
	need_smarthost_tools
	smarthost
	printf '[127.0.0.1]:%s alice:not-the-password\n' $PFPORT > sasl_passwd
	client "smtp_sasl_security_options = noanonymous" \
	    "smtp_tls_security_level = encrypt"
	send sender@client.test rcpt@remote.test
	grep_wait maillog "to=<rcpt@remote.test>.*status=deferred \(SASL authentication failed; server 127.0.0.1\[127.0.0.1\] said: 535 5.7.8" ||
	    { cat maillog >&2; atf_fail "not deferred with the 535"; }
	grep_wait postfix.log "SASL PLAIN authentication failed" ||
	    { cat postfix.log >&2; atf_fail "Postfix saw no failed login"; }
	$BIN/postq -C $PWD/etc > postq.out 2>&1
	grep -q "(SASL authentication failed; server 127.0.0.1\[127.0.0.1\] said: 535 5.7.8 Error: authentication failed" postq.out ||
	    { cat postq.out >&2; atf_fail "postq does not show the 535"; }
	grep -q "rcpt@remote.test" postq.out || atf_fail "postq lost the recipient"
	test "$(value sink.stats messages)" = 0 || atf_fail "the sink got mail"
	grep -q "not-the-password" maillog && atf_fail "the password is in the log"
	finish
}
wrong_password_cleanup() {
	common_cleanup
}

atf_test_case sender_dependent cleanup
sender_dependent_head() {
	atf_set descr "smtp_sender_dependent_authentication: mail from alice@ logs in as alice, mail from anyone else at bob's domain as bob, on sessions of their own: Postfix logs each message with its own sasl_username"
	atf_set require.progs "swaks openssl bash runuser"
	atf_set timeout 60
}
sender_dependent_body() {
	need_smarthost_tools
	smarthost
	{
		echo "alice@client.test alice:alicepw"
		echo "@bobs.test bob:bobpw"
		printf '[127.0.0.1]:%s alice:wrong\n' $PFPORT
	} > sasl_passwd
	client "smtp_sasl_security_options = noanonymous" \
	    "smtp_tls_security_level = encrypt" \
	    "smtp_sender_dependent_authentication = yes"
	send alice@client.test r1@remote.test
	grep_wait maillog "to=<r1@remote.test>.*status=sent" ||
	    { cat maillog >&2; atf_fail "alice's message not sent"; }
	# While alice's session is kept, bob's message must not use it.
	send bob@bobs.test r2@remote.test
	grep_wait maillog "to=<r2@remote.test>.*status=sent" ||
	    { cat maillog >&2; atf_fail "bob's message not sent"; }
	grep_wait postfix.log "sasl_username=bob$" ||
	    { cat postfix.log >&2; atf_fail "no login as bob"; }
	for who in alice:alice@client.test bob:bob@bobs.test; do
		u=${who%%:*}
		s=${who#*:}
		id=$(sed -n "s/.*postfix\/smtpd\[[0-9]*\]: \([0-9A-F]*\): client=.*sasl_username=$u$/\1/p" postfix.log)
		[ -n "$id" ] || atf_fail "no message logged in as $u"
		grep -q "$id: from=<$s>" postfix.log ||
		    { cat postfix.log >&2; atf_fail "$u's session carried mail not from $s"; }
	done
	stat_is sink.stats messages 2
	no_password_logged
	finish
}
sender_dependent_cleanup() {
	common_cleanup
}

atf_test_case server_without_auth cleanup
server_without_auth_head() {
	atf_set descr "a smarthost that offers no AUTH (Postfix with SASL off, 127.0.0.1 in its mynetworks) gets the mail without a login although Petrel has credentials for it"
	atf_set require.progs "swaks openssl bash runuser"
	atf_set timeout 60
}
server_without_auth_body() {
	need_smarthost_tools
	smarthost "smtpd_sasl_auth_enable = no" "mynetworks = 127.0.0.0/8"
	printf '[127.0.0.1]:%s alice:alicepw\n' $PFPORT > sasl_passwd
	# No session kept: Postfix logs the disconnect line at once.
	client "smtp_sasl_security_options = noanonymous" \
	    "smtp_tls_security_level = encrypt" \
	    "smtp_connection_cache_on_demand = no"
	send sender@client.test rcpt@remote.test
	grep_wait maillog "to=<rcpt@remote.test>.*status=sent" ||
	    { cat maillog >&2; atf_fail "not sent"; }
	grep_wait postfix.log "disconnect from localhost" ||
	    { cat postfix.log >&2; atf_fail "Postfix did not log the session"; }
	grep -q "sasl_username\|auth=" postfix.log &&
	    { cat postfix.log >&2; atf_fail "there was a login"; }
	stat_is sink.stats messages 1
	finish
}
server_without_auth_cleanup() {
	common_cleanup
}

atf_test_case plaintext_default_options cleanup
plaintext_default_options_head() {
	atf_set descr "default smtp_sasl_security_options (noplaintext, noanonymous) on a session without TLS: Postfix offers AUTH PLAIN LOGIN, Petrel sends no AUTH (Postfix counts none) and defers the message saying no mechanism is available"
	atf_set require.progs "swaks openssl bash runuser"
	atf_set timeout 60
}
plaintext_default_options_body() {
	need_smarthost_tools
	smarthost "smtpd_tls_security_level = none" "smtpd_tls_auth_only = no"
	printf '[127.0.0.1]:%s alice:alicepw\n' $PFPORT > sasl_passwd
	client
	$BIN/postconf -c $PWD/etc -h smtp_sasl_security_options > opts.out
	atf_check -o inline:"noplaintext, noanonymous\n" cat opts.out
	send sender@client.test rcpt@remote.test
	grep_wait maillog "to=<rcpt@remote.test>.*status=deferred \(SASL authentication failed; cannot authenticate to server 127.0.0.1\[127.0.0.1\]: no mechanism available \(offered: PLAIN LOGIN; plaintext connection\)\)" ||
	    { cat maillog >&2; atf_fail "not deferred for want of a mechanism"; }
	grep_wait postfix.log "disconnect from localhost" ||
	    { cat postfix.log >&2; atf_fail "Postfix did not log the session"; }
	grep "disconnect from localhost" postfix.log | grep -q "auth=" &&
	    { cat postfix.log >&2; atf_fail "Petrel sent AUTH in plain text"; }
	grep -q "sasl_username" postfix.log && atf_fail "there was a login"
	test "$(value sink.stats messages)" = 0 || atf_fail "the sink got mail"
	finish
}
plaintext_default_options_cleanup() {
	common_cleanup
}

atf_test_case petrel_smarthost cleanup
petrel_smarthost_head() {
	atf_set descr "a second Petrel instance as the smarthost (smtpd_sasl_auth_enable with the same private Dovecot, TLS): Petrel's client logs in over STARTTLS and the message reaches the sink; wrong credentials are deferred with the 535"
	atf_set require.progs "swaks openssl bash runuser"
	atf_set timeout 60
}
petrel_smarthost_body() {
	$BIN/postconf -d smtpd_sasl_auth_enable >/dev/null 2>&1 ||
	    atf_skip "this build's smtpd has no SMTP AUTH (postconf does not know smtpd_sasl_auth_enable)"
	need_smarthost_tools
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
	    -nodes -keyout key.pem -out cert.pem -days 2 \
	    -subj /CN=hub.test > pki.log 2>&1 ||
	    { cat pki.log >&2; atf_fail "cannot make a test certificate"; }
	mkdir -p saved
	start_sink sink -d saved
	SINKPORT=$port
	start_dovecot
	# The hub: Petrel's smtpd with AUTH through Dovecot, relaying to the
	# sink only for those who logged in.
	mkdir hub
	(
		cd hub || exit 1
		relay_instance $SINKPORT "myhostname = hub.test" \
		    "mynetworks = 192.0.2.1/32" \
		    "smtpd_relay_restrictions = permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination" \
		    "smtpd_sasl_auth_enable = yes" "smtpd_sasl_type = dovecot" \
		    "smtpd_sasl_path = $PWD/../dc/auth-client" \
		    "smtpd_tls_security_level = may" \
		    "smtpd_tls_cert_file = $PWD/../cert.pem" \
		    "smtpd_tls_key_file = $PWD/../key.pem"
		echo $port > ../hub.port
	) || atf_fail "the hub did not start"
	PFPORT=$(cat hub.port)
	{
		printf '[127.0.0.1]:%s alice:alicepw\n' $PFPORT
		echo "wrong@client.test alice:nope"
	} > sasl_passwd
	client "smtp_sasl_security_options = noanonymous" \
	    "smtp_tls_security_level = encrypt" \
	    "smtp_sender_dependent_authentication = yes"
	send sender@client.test rcpt@remote.test
	grep_wait maillog "to=<rcpt@remote.test>.*status=sent" ||
	    { cat maillog hub/maillog >&2; atf_fail "not sent through the Petrel hub"; }
	grep_wait hub/maillog "sasl_username=alice" ||
	    { cat hub/maillog >&2; atf_fail "the hub did not log the login"; }
	stat_is sink.stats messages 1
	send wrong@client.test rcpt2@remote.test
	grep_wait maillog "to=<rcpt2@remote.test>.*status=deferred \(SASL authentication failed; server .* said: 535" ||
	    { cat maillog hub/maillog >&2; atf_fail "wrong credentials not deferred with 535"; }
	no_password_logged
	finish
}
petrel_smarthost_cleanup() {
	(cd hub 2>/dev/null && stop_instance)
	common_cleanup
}

atf_test_case configuration_errors
configuration_errors_head() {
	atf_set descr "petrel check refuses, naming main.cf and the line, a missing smtp_sasl_password_maps table, an unknown SASL security option and a lookup table as mechanism filter"
}
configuration_errors_body() {
	mk_instance "smtp_sasl_auth_enable = yes" \
	    "smtp_sasl_password_maps = texthash:$PWD/missing"
	mcf "smtp unix - - n - - smtp"
	atf_check -s not-exit:0 -o ignore \
	    -e match:"main.cf:[0-9]+: smtp_sasl_password_maps: texthash:$PWD/missing: cannot open" \
	    $PETREL -c $PWD/etc check
	: > missing
	echo "smtp_sasl_security_options = noplaintext, nosuchthing" >> etc/main.cf
	atf_check -s not-exit:0 -o ignore \
	    -e match:"main.cf:[0-9]+: bad value 'noplaintext, nosuchthing' for parameter smtp_sasl_security_options" \
	    $PETREL -c $PWD/etc check
	sed -i '$d' etc/main.cf
	echo "smtp_sasl_mechanism_filter = hash:/etc/filter" >> etc/main.cf
	atf_check -s not-exit:0 -o ignore \
	    -e match:"main.cf:[0-9]+: smtp_sasl_mechanism_filter: \"hash:/etc/filter\" is not a mechanism name" \
	    $PETREL -c $PWD/etc check
	sed -i '$d' etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc check
}

atf_init_test_cases() {
	atf_add_test_case configuration_errors
	atf_add_test_case relay_starttls
	atf_add_test_case relay_login_mechanism
	atf_add_test_case wrong_password
	atf_add_test_case sender_dependent
	atf_add_test_case server_without_auth
	atf_add_test_case plaintext_default_options
	atf_add_test_case petrel_smarthost
}
