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

# blast IN OUT [SECS]: sends file IN to smtpd in one go, the replies
# into OUT (IN should end with QUIT; we hang up after SECS, default 20).
blast() {
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1 || exit 1; cat "$2" >&3 &
		timeout $3 cat <&3' sh "$port" "$1" "${3:-20}" > "$2"
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
	# No TLS on a pipe: the (missing) certificate is not even looked at.
	atf_check -s exit:1 grep -q "TLS is not available" maillog
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

# well_formed FILE: every line of FILE (CR removed) is an SMTP reply.
well_formed() {
	tr -d '\r' < "$1" | grep -Ev '^[2-5][0-9][0-9][ -]' > bad.lines
	[ ! -s bad.lines ] || { cat bad.lines >&2; atf_fail "not a reply in $1"; }
}

atf_test_case hostile cleanup
hostile_head() {
	atf_set descr "hostile clients (garbage, NUL bytes, 100 KB lines, 2000" \
	    "RCPTs, an oversized message, commands out of order, input after" \
	    "STARTTLS, slow-loris pauses, error floods) get their documented" \
	    "replies or are cut off; master and smtpd stay up and legitimate" \
	    "mail sent alongside is queued"
	atf_set require.progs openssl
	atf_set timeout 120
}
hostile_body() {
	need_bash
	make_cert
	smtpd_instance "local_recipient_maps =" "smtpd_timeout = 3s" \
	    "message_size_limit = 300000" \
	    "smtpd_tls_security_level = may" "smtpd_tls_cert_file = $PWD/cert.pem" \
	    "smtpd_tls_key_file = $PWD/key.pem"
	# Legitimate mail, slowly, the whole time.
	"$SOURCE" -s 2 -m 30 -M 1 -w 30 -t "good%d@mx.example.test" 127.0.0.1:$port \
	    > good.out 2> good.err &
	echo $! > good.pid

	# Garbage: a TLS hello where a command belongs, bytes that are no
	# command word, an HTTP request.
	printf '\026\003\001\002\000\001\000\001\374\003\003\r\n\377\376\375 x\r\nNOOP\r\n' > g1.in
	blast g1.in g1.out
	atf_check -o inline:"220 mx.example.test ESMTP Petrel\n500 5.5.2 Error: NUL character in command\n221 2.7.0 Error: I can break rules, too. Goodbye.\n" \
	    tr -d '\r' < g1.out
	printf 'GET / HTTP/1.1\r\nHost: mx\r\n\r\n' > g2.in
	blast g2.in g2.out
	atf_check -o match:"^221 2.7.0 Error: I can break rules, too. Goodbye.$" tr -d '\r' < g2.out
	grep_wait maillog "warning: non-SMTP command from unknown\[127.0.0.1\]: GET / HTTP/1.1"
	# Random bytes: whatever happens, only well-formed replies and an end.
	head -c 20000 /dev/urandom > g3.in
	printf '\r\nQUIT\r\n' >> g3.in
	blast g3.in g3.out
	well_formed g3.out

	# NUL bytes: refused in commands, kept in a message body.
	printf 'NOOP\000\000\r\nEHLO c\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\nDATA\r\nSubject: nul\r\n\r\nbody \000 byte\r\n.\r\nQUIT\r\n' > nul.in
	blast nul.in nul.out
	atf_check -o match:"^500 5.5.2 Error: NUL character in command$" \
	    -o match:"^250 2.0.0 Ok: queued as" tr -d '\r' < nul.out

	# 100 KB lines: a command is refused whole and the session goes on;
	# in a message it passes whole.
	awk 'BEGIN { printf "NOOP "; for (i = 0; i < 102400; i++) printf "x"; printf "\r\nNOOP\r\nEHLO c\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\nDATA\r\nSubject: long\r\n\r\n"; for (i = 0; i < 102400; i++) printf "y"; printf "\r\n.\r\nQUIT\r\n" }' > long.in
	blast long.in long.out
	atf_check -o match:"^500 5.5.2 Error: line too long$" -o match:"^250 2.0.0 Ok$" \
	    -o match:"^250 2.0.0 Ok: queued as" tr -d '\r' < long.out
	id=$(queued long.out)
	$BIN/postcat -c $PWD/etc -q $id | tr -d '\r' | awk 'length($0) == 102400 { n++ } END { exit n == 1 ? 0 : 1 }' ||
	    atf_fail "the 100 KB line did not arrive whole"

	# 2000 recipients: 1000 taken, then 452 (flow control, not errors).
	awk 'BEGIN { printf "EHLO c\r\nMAIL FROM:<a@example.org>\r\n"; for (i = 1; i <= 2000; i++) printf "RCPT TO:<u%d@mx.example.test>\r\n", i; printf "DATA\r\n" }' > rcpt.in
	printf 'Subject: many\r\n\r\nx\r\n.\r\nQUIT\r\n' >> rcpt.in
	blast rcpt.in rcpt.out
	atf_check_equal 1000 "$(grep -c '^250 2.1.5 Ok' rcpt.out)"
	atf_check_equal 1000 "$(grep -c '^452 4.5.3 Error: too many recipients' rcpt.out)"
	id=$(queued rcpt.out)
	[ -n "$id" ] || atf_fail "2000 RCPTs: no message queued"
	atf_check -o match:"^recipient_count: 1000$" $BIN/postcat -c $PWD/etc -q $id

	# Over message_size_limit: 552 after the dot, nothing queued.
	n=$(nfiles)
	awk 'BEGIN { printf "EHLO c\r\nMAIL FROM:<a@example.org> SIZE=400000\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\nDATA\r\n"; for (i = 0; i < 5000; i++) printf "%0100d\r\n", i; printf ".\r\nQUIT\r\n" }' > big.in
	blast big.in big.out
	atf_check -o match:"^552 5.3.4 Message size exceeds fixed limit$" \
	    -o match:"^354 " -o not-match:"queued as" tr -d '\r' < big.out
	atf_check_equal 2 "$(grep -c '^552 5.3.4' big.out)"

	# Out of order.
	printf 'RCPT TO:<alice@mx.example.test>\r\nDATA\r\nMAIL FROM:<a@example.org>\r\nMAIL FROM:<a@example.org>\r\nDATA\r\nBDAT 3 LAST\r\nabcQUIT\r\n' > order.in
	blast order.in order.out
	atf_check -o inline:"220 mx.example.test ESMTP Petrel\n503 5.5.1 Error: need MAIL command\n503 5.5.1 Error: need RCPT command\n250 2.1.0 Ok\n503 5.5.1 Error: nested MAIL command\n554 5.5.1 Error: no valid recipients\n554 5.5.1 Error: no valid recipients\n221 2.0.0 Bye\n" \
	    tr -d '\r' < order.out

	# Commands pipelined behind STARTTLS are thrown away (the client
	# then sends no TLS: the handshake fails and the session ends).
	printf 'EHLO c\r\nSTARTTLS\r\nMAIL FROM:<injected@example.org>\r\n' > tls.in
	blast tls.in tls.out 2
	atf_check -o match:"^220 2.0.0 Ready to start TLS$" -o not-match:"^250 2.1.0" \
	    tr -d '\r' < tls.out
	grep_wait maillog "warning: unknown\[127.0.0.1\]: discarding 34 bytes of input pipelined after STARTTLS"

	# Slow loris: a pause longer than smtpd_timeout, between commands
	# and in the middle of a message.
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; printf "EHLO c\r\n" >&3; timeout 20 cat <&3' sh $port > slow1.out
	atf_check -o match:"^421 4.4.2 mx.example.test Error: timeout exceeded$" tr -d '\r' < slow1.out
	grep_wait maillog "timeout after EHLO from unknown\[127.0.0.1\]"
	n=$(nfiles)
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; printf "HELO c\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<alice@mx.example.test>\r\nDATA\r\n" >&3; sleep 1; printf "Subject: half" >&3; timeout 20 cat <&3' sh $port > slow2.out
	atf_check -o match:"^354 " -o match:"^421 4.4.2 mx.example.test Error: timeout exceeded$" \
	    tr -d '\r' < slow2.out
	grep_wait maillog "timeout after DATA \([0-9]+ bytes\) from unknown\[127.0.0.1\]"

	# An error flood is cut off at smtpd_hard_error_limit (20).
	awk 'BEGIN { for (i = 0; i < 30; i++) printf "XYZZY\r\n" }' > flood.in
	blast flood.in flood.out
	atf_check_equal 20 "$(grep -c '^500 5.5.2' flood.out)"
	atf_check -o match:"^421 4.7.0 mx.example.test Error: too many errors$" tr -d '\r' < flood.out

	# Still up, and the legitimate mail all got through.
	wait $(cat good.pid) || true
	rm -f good.pid
	atf_check -o match:"^accepted=30$" cat good.out
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc status
	atf_check -s exit:0 -o match:"^accepted=1$" "$SOURCE" -m 1 \
	    -t "last%d@mx.example.test" 127.0.0.1:$port
	if grep -E "smtpd\[[0-9]+\]: (fatal|panic)|was killed|exited with status" maillog >&2; then
		atf_fail "smtpd died"
	fi
	assert_log_clean
}
hostile_cleanup() {
	[ -f good.pid ] && kill $(cat good.pid) 2>/dev/null
	stop_instance
}

atf_test_case starttls cleanup
starttls_head() {
	atf_set descr "STARTTLS: TLS 1.3 with swaks and openssl s_client and a" \
	    "certificate made at test time; the Received header says ESMTPS and" \
	    "the cipher; encrypt refuses MAIL before STARTTLS with 530"
	atf_set require.progs "swaks openssl"
}
starttls_body() {
	make_cert
	smtpd_instance "smtpd_tls_security_level = may" \
	    "smtpd_tls_cert_file = $PWD/cert.pem" "smtpd_tls_key_file = $PWD/key.pem" \
	    "smtpd_tls_received_header = yes" "local_recipient_maps ="
	atf_check -s exit:0 -o save:swaks.out -e ignore swaks --server 127.0.0.1:$port \
	    -tls --helo client.test --from a@example.org --to alice@mx.example.test
	atf_check -o match:"STARTTLS" -o match:"220 2.0.0 Ready to start TLS" \
	    -o match:"TLS started" cat swaks.out
	id=$(queued swaks.out)
	[ -n "$id" ] || atf_fail "no queue ID in $(cat swaks.out)"
	atf_check -o match:"^	\(using TLSv1\.3 with cipher [A-Z0-9_]+ \([0-9]+/[0-9]+ bits\)\)$" \
	    -o match:"with ESMTPS id $id$" -o match:"^attribute: protocol=ESMTPS$" \
	    sh -c "$BIN/postcat -c $PWD/etc -q $id | tr -d '\r'"
	grep_wait maillog "Anonymous TLS connection established from unknown\[127.0.0.1\]: TLSv1\.3 with cipher"
	# openssl's client, TLS 1.3 only.
	printf 'EHLO openssl.test\r\nQUIT\r\n' > q.in
	atf_check -s exit:0 -o save:ossl.out -e save:ossl.err openssl s_client \
	    -starttls smtp -tls1_3 -connect 127.0.0.1:$port -ign_eof < q.in
	atf_check -o match:"TLSv1\.3" cat ossl.out ossl.err
	atf_check -o match:"^250-mx.example.test" -o match:"^221 2.0.0 Bye" tr -d '\r' < ossl.out
	# A client that knows only TLS 1.1 is refused (if this openssl
	# can even try).
	if openssl s_client -help 2>&1 | grep -q -- '-tls1_1'; then
		openssl s_client -starttls smtp -tls1_1 -connect 127.0.0.1:$port \
		    < /dev/null > old.out 2>&1 && atf_fail "TLS 1.1 accepted"
	fi

	# encrypt: no mail without TLS.
	sed -i.bak 's/smtpd_tls_security_level = may/smtpd_tls_security_level = encrypt/' etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for sh -c "swaks --server 127.0.0.1:$port --from a@example.org --to alice@mx.example.test 2>&1 | grep -q '530 5.7.0 Must issue a STARTTLS command first'" ||
	    atf_fail "no 530 without STARTTLS"
	atf_check -s exit:0 -o match:"^accepted=2$" -o match:"^tls=[1-9]" "$SOURCE" -T -m 2 \
	    -t "user%d@mx.example.test" -f a@example.org 127.0.0.1:$port
	assert_log_clean
}
starttls_cleanup() { stop_instance; }

atf_test_case verbose_log cleanup
verbose_log_head() {
	atf_set descr "smtpd -v logs each command and each reply (the reply text, never (null))"
	atf_set require.progs swaks
	atf_set require.user unprivileged
}
verbose_log_body() {
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test" \
	    "local_recipient_maps = inline:{ alice=x }" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0"
	mcf "$port inet n - n - - smtpd -v" "cleanup unix n - n - 0 cleanup"
	start_instance
	atf_check -s exit:0 -o ignore -e ignore swaks --server 127.0.0.1:$port \
	    --helo client.test --from sender@example.org --to alice@mx.example.test
	grep_wait maillog '> unknown\[127.0.0.1\]: 221 2.0.0 Bye'
	in_log '> unknown\[127.0.0.1\]: 220 mx.example.test ESMTP' ||
	    atf_fail "no greeting logged"
	in_log '< unknown\[127.0.0.1\]: RCPT TO:<alice@mx.example.test>' ||
	    atf_fail "no command logged"
	in_log '> unknown\[127.0.0.1\]: 250 2.1.5 Ok' || atf_fail "no reply logged"
	in_log '(null)' && atf_fail "a (null) in the log"
	stop_instance
	finish
}
verbose_log_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case verbose_log
	atf_add_test_case swaks_queued
	atf_add_test_case smtp_source_load
	atf_add_test_case relay_denied
	atf_add_test_case recipients
	atf_add_test_case cleanup_failures
	atf_add_test_case stand_alone
	atf_add_test_case connection_limit
	atf_add_test_case hostile
	atf_add_test_case starttls
}
