#! /usr/bin/env atf-sh
# smtpd under master in a private instance (port from test-service
# freeport on 127.0.0.1), handing mail to cleanup: swaks and smtp-source
# send mail, queue files appear in incoming/ (there is no qmgr here to
# move them on); relay control from 127.0.0.2; DNS checks against
# fakedns; the stand-alone mode; the connection count limit.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

# smtpd_instance [main.cf line...]: smtpd on $port and cleanup, no qmgr.
smtpd_instance() {
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "local_recipient_maps = inline:{ alice=x, bob=x }" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" "$@"
	mcf "$port inet n - n - - smtpd" "cleanup unix n - n - 0 cleanup"
	start_instance
}

# queued FILE: the queue ID of the "queued as" reply in FILE.
queued() {
	sed -n 's/.*250 2\.0\.0 Ok: queued as \([0-9A-Z]*\).*/\1/p' "$1" | head -n 1
}


nfiles() {
	find q/incoming -type f | wc -l | tr -d ' '
}

# blast IN OUT: sends file IN to smtpd in one go, the replies into OUT
# (IN should end with QUIT; at most 20 s).
blast() {
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1 || exit 1; cat "$2" >&3 &
		timeout 20 cat <&3' sh "$port" "$1" > "$2"
}

need_loopback2() {
	"$SOURCE" -b 127.0.0.2 -m 1 -a -w 5 127.0.0.1:$port > probe.out 2>&1
	grep -q '^connect_failures=0' probe.out ||
	    atf_skip "cannot bind to 127.0.0.2 here"
}

atf_test_case swaks_queued cleanup
swaks_queued_head() {
	atf_set descr "swaks sends a message; it is queued in incoming/ with" \
	    "the Received header and the queue ID of the 250 reply"
	atf_set require.progs swaks
}
swaks_queued_body() {
	smtpd_instance
	atf_check -s exit:0 -o save:swaks.out -e ignore swaks --server 127.0.0.1:$port \
	    --helo client.test --from sender@example.org --to alice@mx.example.test \
	    --header "Subject: hello"
	id=$(queued swaks.out)
	[ -n "$id" ] || atf_fail "no queue ID in $(cat swaks.out)"
	atf_check test -f q/incoming/$id
	atf_check -o save:pc.out $BIN/postcat -c $PWD/etc -q $id
	atf_check -o match:"^sender: sender@example.org$" \
	    -o match:"^recipient: alice@mx.example.test$" \
	    -o match:"^attribute: client_address=127.0.0.1$" \
	    -o match:"^attribute: helo_name=client.test$" \
	    -o match:"^attribute: protocol=ESMTP$" \
	    -o match:"^Received: from client.test \(unknown \[127.0.0.1\]\)$" \
	    -o match:"^	by mx.example.test \(Petrel\) with ESMTP id $id$" \
	    -o match:"^	for <alice@mx.example.test>; .*[0-9]{4}" \
	    -o match:"^Subject: hello$" tr -d '\r' < pc.out
	grep_wait maillog "smtpd\[[0-9]+\]: connect from unknown\[127.0.0.1\]"
	grep_wait maillog "$id: client=unknown\[127.0.0.1\]"
	grep_wait maillog "smtpd\[[0-9]+\]: disconnect from unknown\[127.0.0.1\] ehlo=1 mail=1 rcpt=1 data=1 quit=1 commands=5"
	assert_log_clean
}
swaks_queued_cleanup() { stop_instance; }

atf_test_case smtp_source_load cleanup
smtp_source_load_head() {
	atf_set descr "smtp-source: 4 parallel sessions, 40 pipelined messages of" \
	    "2 recipients, all queued"
}
smtp_source_load_body() {
	smtpd_instance "local_recipient_maps ="
	atf_check -s exit:0 -o save:src.out "$SOURCE" -s 4 -m 40 -r 2 -M 5 -l 3000 \
	    -t "user%d@mx.example.test" 127.0.0.1:$port
	cat src.out
	atf_check -o match:"^accepted=40$" -o match:"^recipients_ok=80$" cat src.out
	atf_check_equal 40 "$(nfiles)"
	# smtp-source stuffs dots; every queue file has them back to one.
	id=$(ls q/incoming | head -n 1)
	atf_check -o match:"^recipient: user2@mx.example.test$" \
	    -o match:"^\.000002 " -o not-match:"^\.\." $BIN/postcat -c $PWD/etc -q $id
	# and without pipelining, with HELO
	atf_check -s exit:0 -o match:"^accepted=3$" "$SOURCE" -P -E -m 3 \
	    -t "user%d@mx.example.test" 127.0.0.1:$port
	atf_check_equal 43 "$(nfiles)"
	assert_log_clean
}
smtp_source_load_cleanup() { stop_instance; }

atf_test_case relay_denied cleanup
relay_denied_head() {
	atf_set descr "a client outside mynetworks (127.0.0.2) cannot relay:" \
	    "554 5.7.1 Relay access denied, logged as Postfix does"
	atf_set require.progs swaks
}
relay_denied_body() {
	smtpd_instance "mynetworks = 127.0.0.1/32"
	need_loopback2
	atf_check -s not-exit:0 -o save:relay.out -e ignore swaks --server 127.0.0.1:$port \
	    --local-interface 127.0.0.2 --helo stranger.test \
	    --from spammer@example.org --to victim@elsewhere.example
	atf_check -o match:"<\*\* +554 5.7.1 <victim@elsewhere.example>: Relay access denied" cat relay.out
	grep_wait maillog "NOQUEUE: reject: RCPT from unknown\[127.0.0.2\]: 554 5.7.1 <victim@elsewhere.example>: Relay access denied; from=<spammer@example.org> to=<victim@elsewhere.example> proto=ESMTP helo=<stranger.test>"
	# The same stranger may send to us...
	atf_check -s exit:0 -o match:"queued as" -e ignore swaks --server 127.0.0.1:$port \
	    --local-interface 127.0.0.2 --from a@example.org --to alice@mx.example.test
	# ...and mynetworks may send anywhere.
	atf_check -s exit:0 -o match:"queued as" -e ignore swaks --server 127.0.0.1:$port \
	    --from a@example.org --to someone@elsewhere.example
	# smtp-source from 127.0.0.2: every recipient refused, nothing queued.
	n=$(nfiles)
	atf_check -s exit:1 -o match:"^accepted=0$" -o match:"^recipients_rejected=3$" \
	    -e match:"message 3 not accepted: 554 5.5.1 Error: no valid recipients" \
	    "$SOURCE" -b 127.0.0.2 -m 3 127.0.0.1:$port
	atf_check_equal "$n" "$(nfiles)"
	assert_log_clean
}
relay_denied_cleanup() { stop_instance; }

atf_test_case recipients cleanup
recipients_head() {
	atf_set descr "unknown local users get 550 at RCPT; unknown domains" \
	    "(reject_unknown_recipient_domain, asked of fakedns) 450"
	atf_set require.progs swaks
}
recipients_body() {
	need_bash
	cat > zone <<'EOF'
exists.example MX 10 mx.exists.example
mx.exists.example A 127.0.0.1
EOF
	start_dns dns
	smtpd_instance "dns_server_address = 127.0.0.1:$port" \
	    "smtpd_recipient_restrictions = reject_unknown_recipient_domain"
	cat > s1 <<'EOF'
HELO client.test
MAIL FROM:<a@example.org>
RCPT TO:<nobody@mx.example.test>
RCPT TO:<x@nowhere.example>
RCPT TO:<x@exists.example>
RCPT TO:<alice@mx.example.test>
QUIT
EOF
	atf_check -o save:s1.out bash chat.bash $port s1
	atf_check -o match:"^550 5.1.1 <nobody@mx.example.test>: Recipient address rejected: User unknown in local recipient table$" \
	    -o match:"^450 4.1.2 <x@nowhere.example>: Recipient address rejected: Domain not found$" \
	    cat s1.out
	atf_check_equal 2 "$(grep -c '^250 2.1.5 Ok$' s1.out)"
	grep_wait dns.err "exists.example/MX -> NOERROR"
	grep_wait dns.err "nowhere.example/MX -> NXDOMAIN"
	finish
	assert_log_clean
}
recipients_cleanup() { stop_instance; stop_all; }

atf_test_case cleanup_failures cleanup
cleanup_failures_head() {
	atf_set descr "no cleanup service: 451 at DATA; cleanup refuses the" \
	    "message: its error at the final dot; nothing is queued either way"
}
cleanup_failures_body() {
	need_bash
	smtpd_instance
	mail_script m alice@mx.example.test alice@mx.example.test
	printf 'HELO c\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\nDATA\r\nSubject: nul \000 here\r\n\r\nbody\r\n.\r\nQUIT\r\n' > nul.in
	blast nul.in nul.out
	atf_check -o match:"^554 5.6.0 Error: .*NUL" tr -d '\r' < nul.out
	atf_check_equal 0 "$(nfiles)"
	# Take cleanup away.
	mcf "$port inet n - n - - smtpd"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	wait_for test ! -S q/private/cleanup || atf_fail "cleanup still there"
	atf_check -o save:m.out bash chat.bash $port m
	atf_check -o match:"^451 4.3.0 Error: queue file write error$" cat m.out
	grep_wait maillog "warning: DATA from unknown\[127.0.0.1\]: cannot hand the message on: "
	atf_check_equal 0 "$(nfiles)"
	assert_log_clean
}
cleanup_failures_cleanup() { stop_instance; }

atf_test_case stand_alone cleanup
stand_alone_head() {
	atf_set descr "smtpd -S (for sendmail -bs): SMTP on stdin/stdout, each" \
	    "message piped to sendmail_path with the envelope as arguments"
}
stand_alone_body() {
	mkdir etc
	cat > fake-sendmail <<EOF
#! /bin/sh
printf '%s\n' "\$@" > $PWD/args.\$\$
cat > $PWD/msg.\$\$
[ -f $PWD/fail ] && exit 75
exit 0
EOF
	chmod +x fake-sendmail
	cat > etc/main.cf <<EOF
queue_directory = $PWD/q
maillog_file = $PWD/maillog
myhostname = mx.example.test
sendmail_path = $PWD/fake-sendmail
smtpd_tls_security_level = encrypt
EOF
	printf 'EHLO me\r\nMAIL FROM:<me@example.org> RET=HDRS\r\nRCPT TO:<a@elsewhere.example> NOTIFY=FAILURE\r\nRCPT TO:<b@x.example> NOTIFY=FAILURE\r\nDATA\r\nSubject: x\r\n\r\n..dot\r\n.\r\nQUIT\r\n' > in
	atf_check -s exit:0 -o save:out -e empty $BIN/smtpd -S -c $PWD/etc < in
	atf_check -o match:"^250 2.0.0 Ok: queued$" -o not-match:"STARTTLS" \
	    -o match:"^221 2.0.0 Bye$" tr -d '\r' < out
	atf_check -o inline:"-i\n-f\nme@example.org\n-N\nfailure\n-R\nhdrs\n--\na@elsewhere.example\nb@x.example\n" cat args.*
	atf_check -o inline:"Subject: x\r\n\r\n.dot\r\n" cat msg.*
	grep_wait maillog "smtpd\[[0-9]+\]: connect from localhost\[127.0.0.1\]"
	# MAIL_CONFIG names the configuration (sendmail sets it); a failed
	# submission is a temporary error.
	touch fail
	MAIL_CONFIG=$PWD/etc atf_check -s exit:0 -o save:out2 -e empty $BIN/smtpd -S < in
	atf_check -o match:"^451 4.3.0 Error: local submission failed: .*exit status 75$" \
	    tr -d '\r' < out2
}
stand_alone_cleanup() { true; }

atf_test_case connection_limit cleanup
connection_limit_head() {
	atf_set descr "smtpd_client_connection_count_limit across smtpd processes:" \
	    "the third connection from one address gets 421 while two are open"
}
connection_limit_body() {
	smtpd_instance "smtpd_client_connection_count_limit = 2" \
	    "smtpd_client_event_limit_exceptions =" "smtpd_timeout = 10s"
	# Two clients that hold their connection for a while.
	for i in 1 2; do
		bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; IFS= read -r l <&3; echo "$l" > held$2; exec sleep 8' \
		    sh $port $i &
		echo $! > holder$i.pid
	done
	wait_for test -s held1 -a -s held2 || atf_fail "holders did not connect"
	atf_check -o match:"^220 " cat held1 held2
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; IFS= read -r l <&3; echo "$l"' sh $port > third
	atf_check -o match:"^421 4.7.0 mx.example.test Error: too many connections from 127.0.0.1" cat third
	grep_wait maillog "warning: Connection concurrency limit exceeded: 3 from unknown\[127.0.0.1\]"
	# When they are gone, a new client is welcome again.
	kill $(cat holder1.pid holder2.pid) 2>/dev/null
	rm -f holder*.pid
	WAIT_MAX=100 wait_for sh -c "bash -c 'exec 3<>/dev/tcp/127.0.0.1/$port; IFS= read -r l <&3; echo \"\$l\"' | grep -q '^220 '" ||
	    atf_fail "no 220 after the holders left"
	assert_log_clean
}
connection_limit_cleanup() {
	for f in holder*.pid; do [ -f "$f" ] && kill $(cat $f) 2>/dev/null; done
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case swaks_queued
	atf_add_test_case smtp_source_load
	atf_add_test_case relay_denied
	atf_add_test_case recipients
	atf_add_test_case cleanup_failures
	atf_add_test_case stand_alone
	atf_add_test_case connection_limit
}
