#! /usr/bin/env atf-sh
# Tests of the smtp-sink test tool: what it accepts, what it counts, and
# each of its fault modes.  Every sink listens on 127.0.0.1 with a port
# chosen by the kernel (port 0, -P portfile) and is killed in cleanup.

BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr

atf_test_case swaks_accepts cleanup
swaks_accepts_head() {
	atf_set descr "A message from swaks is accepted, counted and saved" \
		"with its envelope, dot-unstuffed"
	atf_set require.progs swaks
}
swaks_accepts_body() {
	mkdir saved
	start_sink s -d saved
	# swaks dot-stuffs the body; the sink must undo it.
	printf 'line one\n.starts with a dot\nlast\n' > body.txt
	atf_check -o match:"250 2.0.0 Ok: queued as" -e ignore \
		swaks --server 127.0.0.1:$port --timeout 10 --helo client.test \
		--from sender@example.com --to a@example.com,b@example.com \
		--body body.txt
	stat_is s.stats connections 1
	stat_is s.stats messages 1
	stat_is s.stats recipients 2
	stat_is s.stats rcpt_ok 2
	stat_is s.stats ehlo 1
	stat_is s.stats quit 1
	stat_is s.stats active 0
	atf_check -o inline:"1\n" sh -c 'ls saved | grep -c "^msg-.*\.eml$"'
	f=$(ls saved/msg-*.eml)
	atf_check -o match:"^X-Sink-Envelope: session=1 client=127.0.0.1:[0-9]+ helo=client.test" \
		-o match:"^X-Sink-Mail-From: <sender@example.com>" \
		-o match:"^X-Sink-Rcpt-To: <a@example.com>" \
		-o match:"^X-Sink-Rcpt-To: <b@example.com>" \
		-o match:"^\.starts with a dot$" -o not-match:"^\.\." \
		tr -d '\r' < "$f"
	# Lines are kept as sent, with CRLF.
	atf_check -o inline:"1\n" grep -c "^$(printf 'line one\r')\$" "$f"
	finish
}
swaks_accepts_cleanup() { stop_all; }

atf_test_case pipelining cleanup
pipelining_head() {
	atf_set descr "Pipelined commands sent in one write are all answered," \
		"in order; DATA removes dot-stuffing and counts bare LFs"
}
pipelining_body() {
	need_bash
	mkdir saved
	start_sink s -d saved
	printf 'EHLO c.test\r\nMAIL FROM:<s@example.com> SIZE=100 BODY=8BITMIME\r\nRCPT TO:<a@example.com> NOTIFY=NEVER\r\nRCPT TO:<tempfail@example.com>\r\nRCPT TO:<b@example.com>\r\nDATA\r\nSubject: x\r\n\r\n..dot\r\nbare\nend\r\n.\r\nMAIL FROM:<s2@example.com>\r\nRCPT TO:<c@example.com>\r\nDATA\r\nsecond\r\n.\r\nQUIT\r\n' > in.txt
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; cat in.txt >&3; timeout 10 cat <&3' _ $port > reply.txt
	tr -d '\r' < reply.txt | sed -n 's/^\([0-9][0-9][0-9]\)[ -].*/\1/p' | tr '\n' ' ' > codes.txt
	atf_check -o inline:"220 250 250 250 250 250 250 250 250 450 250 354 250 250 250 354 250 221 " cat codes.txt
	stat_is s.stats messages 2
	stat_is s.stats recipients 3
	stat_is s.stats rcpt_tempfail 1
	stat_is s.stats bare_lf 1
	atf_check -o match:"^X-Sink-Mail-From: <s@example.com> SIZE=100 BODY=8BITMIME" \
		-o match:"^X-Sink-Rcpt-To: <a@example.com> NOTIFY=NEVER" \
		-o not-match:"tempfail" -o match:"^\.dot$" \
		tr -d '\r' < saved/msg-00000001.eml
	finish
}
pipelining_cleanup() { stop_all; }

atf_test_case recipient_keywords cleanup
recipient_keywords_head() {
	atf_set descr "tempfail@/permfail@ recipients and senders, and the" \
		"-data/-dot keywords, get their replies"
}
recipient_keywords_body() {
	need_bash
	start_sink s
	cat > rcpt.txt <<'EOF'
EHLO c.test
MAIL FROM:<s@example.com>
RCPT TO:<TempFail+1@example.com>
RCPT TO:<permfail@example.com>
RCPT TO:<ok@example.com>
QUIT
EOF
	atf_check -o match:"^450 4.2.0 <TempFail\+1@example.com>" \
		-o match:"^550 5.1.1 <permfail@example.com>" \
		-o match:"^250 2.1.5 Ok" bash chat.bash $port rcpt.txt
	stat_is s.stats rcpt_tempfail 1
	stat_is s.stats rcpt_permfail 1
	stat_is s.stats rcpt_ok 1

	mail_script m.txt tempfail@example.com
	atf_check -o match:"^451 4.3.0 Error: sender" bash chat.bash $port m.txt
	mail_script m.txt permfail@example.com
	atf_check -o match:"^550 5.7.1 Error: sender" bash chat.bash $port m.txt
	stat_is s.stats mail_rejected 2

	mail_script m.txt s@example.com tempfail-data@example.com
	atf_check -o match:"^451 4.3.0 Error: DATA" bash chat.bash $port m.txt
	mail_script m.txt s@example.com permfail-data@example.com
	atf_check -o match:"^554 5.5.0 Error: DATA" bash chat.bash $port m.txt
	mail_script m.txt s@example.com tempfail-dot@example.com
	atf_check -o match:"^354" -o match:"^451 4.3.0 Error: message" bash chat.bash $port m.txt
	mail_script m.txt s@example.com permfail-dot@example.com
	atf_check -o match:"^354" -o match:"^554 5.6.0 Error: message" bash chat.bash $port m.txt
	stat_is s.stats messages_tempfail 1
	stat_is s.stats messages_permfail 1
	stat_is s.stats messages 0

	mail_script m.txt s@example.com drop-dot@example.com
	bash chat.bash $port m.txt > o.txt
	atf_check -o inline:"354 End data with <CR><LF>.<CR><LF>\nCLOSED\n" tail -n 2 o.txt
	mail_script m.txt s@example.com drop-rcpt@example.com
	bash chat.bash $port m.txt > o.txt
	atf_check -o inline:"250 2.1.0 Ok\nCLOSED\n" tail -n 2 o.txt
	stat_is s.stats dropped 2
	stat_is s.stats messages 0
	finish
}
recipient_keywords_cleanup() { stop_all; }

atf_test_case reject_options cleanup
reject_options_head() {
	atf_set descr "--mail-reply, --data-reply and --dot-reply reject" \
		"every MAIL, DATA or end of data with 4xx or 5xx"
}
reject_options_body() {
	need_bash
	mail_script m.txt
	start_sink a --mail-reply=4
	atf_check -o match:"^451 4.3.0" bash chat.bash $port m.txt
	start_sink b --mail-reply=5
	atf_check -o match:"^550 5.7.1" bash chat.bash $port m.txt
	start_sink c --data-reply=4
	atf_check -o match:"^451 4.3.0 Error: DATA" -o not-match:"^354" bash chat.bash $port m.txt
	start_sink d --data-reply=5
	atf_check -o match:"^554 5.5.0 Error: DATA" bash chat.bash $port m.txt
	start_sink e --dot-reply=4
	atf_check -o match:"^354" -o match:"^451 4.3.0 Error: message" bash chat.bash $port m.txt
	start_sink f --dot-reply=5
	atf_check -o match:"^354" -o match:"^554 5.6.0 Error: message" bash chat.bash $port m.txt
	stat_is f.stats messages_permfail 1
	stat_is f.stats messages 0
	atf_check -s exit:1 -e match:"4 or 5" "$SINK" --dot-reply=3 127.0.0.1:0
	finish
}
reject_options_cleanup() { stop_all; }

atf_test_case random_failures cleanup
random_failures_head() {
	atf_set descr "-t/-p fail a share of recipients, the same way for" \
		"the same seed, and the counters match the replies"
}
random_failures_body() {
	need_bash
	{
		echo "EHLO c.test"
		echo "MAIL FROM:<s@example.com>"
		i=0
		while [ $i -lt 100 ]; do
			echo "RCPT TO:<user$i@example.com>"
			i=$((i + 1))
		done
		echo QUIT
	} > rcpts.txt
	start_sink a -t 30 -p 20 -r 7
	bash chat.bash $port rcpts.txt > a.txt
	start_sink b -t 30 -p 20 -r 7
	bash chat.bash $port rcpts.txt > b.txt
	atf_check cmp a.txt b.txt
	t=$(grep -c "^450 " a.txt)
	p=$(grep -c "^550 " a.txt)
	ok=$(grep -c "^250 2.1.5" a.txt)
	echo "tempfail=$t permfail=$p ok=$ok"
	[ $((t + p + ok)) -eq 100 ] || atf_fail "replies do not add up to 100"
	[ "$t" -gt 0 ] && [ "$p" -gt 0 ] && [ "$ok" -gt 0 ] ||
		atf_fail "expected some of each reply"
	stat_is a.stats rcpt_tempfail $t
	stat_is a.stats rcpt_permfail $p
	stat_is a.stats rcpt_ok $ok
	stat_is a.stats rcpt 100
	finish
}
random_failures_cleanup() { stop_all; }

atf_test_case session_limit cleanup
session_limit_head() {
	atf_set descr "Beyond -S sessions the sink answers 421 and hangs up"
}
session_limit_body() {
	need_bash
	start_sink s -S 2
	for h in 1 2; do
		bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; head -n 1 <&3 > hold$2.txt; exec sleep 30' _ $port $h &
		echo $! > hold$h.pid
	done
	for h in 1 2; do
		grep_wait hold$h.txt "^220 "
	done
	stat_is s.stats active 2
	mail_script m.txt
	atf_check -o inline:"421 4.7.0 Error: too many sessions, try again later\nCLOSED\n" \
		bash chat.bash $port m.txt
	stat_is s.stats rejected_sessions 1
	stat_is s.stats connections 3
	stat_is s.stats sessions 2
	stat_is s.stats max_active 2
	# Once a session ends, there is room again.
	kill "$(cat hold1.pid)"
	stat_is s.stats active 1
	atf_check -o match:"^250 2.0.0 Ok: queued" bash chat.bash $port m.txt
	finish
}
session_limit_cleanup() { stop_all; }

atf_test_case session_limit_file cleanup
session_limit_file_head() {
	atf_set descr "--limit-file: the -S limit is read from a file at start and again on SIGHUP; a bad file leaves it as it was"
}
session_limit_file_body() {
	need_bash
	echo 1 > limit
	start_sink s -S 5 --limit-file=limit
	grep_wait s.err "session limit 1 \(from limit\)"
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; head -n 1 <&3 > hold.txt; exec sleep 30' _ $port &
	echo $! > hold.pid
	grep_wait hold.txt "^220 "
	stat_is s.stats active 1
	mail_script m.txt
	atf_check -o match:"^421 4.7.0 Error: too many sessions" bash chat.bash $port m.txt
	stat_is s.stats rejected_sessions 1
	# raised while the first session stays open
	echo 2 > limit.new && mv limit.new limit
	kill -HUP "$(cat s.pid)"
	grep_wait s.err "session limit 2 \(from limit\)"
	atf_check -o match:"^250 2.0.0 Ok: queued" bash chat.bash $port m.txt
	# a bad file changes nothing
	echo lots > limit.new && mv limit.new limit
	kill -HUP "$(cat s.pid)"
	grep_wait s.err 'limit: bad session limit "lots" \(0..1000000\); it stays 2'
	rm limit
	kill -HUP "$(cat s.pid)"
	grep_wait s.err "limit: No such file or directory; the session limit stays 2"
	atf_check -o match:"^250 2.0.0 Ok: queued" bash chat.bash $port m.txt
	# lowered below the open sessions: new ones are refused
	echo 1 > limit.new && mv limit.new limit
	kill -HUP "$(cat s.pid)"
	grep_wait s.err "session limit 1 \(from limit\)"
	atf_check -o match:"^421 4.7.0" bash chat.bash $port m.txt
	stat_is s.stats rejected_sessions 2
	finish
}
session_limit_file_cleanup() { stop_all; }

atf_test_case drop_stages cleanup
drop_stages_head() {
	atf_set descr "-D STAGE hangs up at each stage, before answering it"
}
drop_stages_body() {
	need_bash
	mail_script m.txt
	for st in greeting:220 ehlo:250 mail:250 rcpt:250 data:354 body:250 dot:250; do
		stage=${st%:*}
		start_sink $stage -D $stage
		bash chat.bash $port m.txt > $stage.txt
		atf_check -o inline:"CLOSED\n" tail -n 1 $stage.txt
		stat_is $stage.stats dropped 1
		stat_is $stage.stats messages 0
	done
	atf_check -o inline:"CLOSED\n" cat greeting.txt
	atf_check -o inline:"220 smtp-sink.test ESMTP smtp-sink\nCLOSED\n" cat ehlo.txt
	atf_check -o inline:"250 ENHANCEDSTATUSCODES\nCLOSED\n" tail -n 2 mail.txt
	atf_check -o inline:"250 2.1.0 Ok\nCLOSED\n" tail -n 2 rcpt.txt
	atf_check -o inline:"250 2.1.5 Ok\nCLOSED\n" tail -n 2 data.txt
	atf_check -o inline:"354 End data with <CR><LF>.<CR><LF>\nCLOSED\n" tail -n 2 body.txt
	atf_check -o inline:"354 End data with <CR><LF>.<CR><LF>\nCLOSED\n" tail -n 2 dot.txt
	stat_is body.stats bytes 0
	stat_is dot.stats bytes 23

	# dot:2 drops only the second message.
	start_sink two -D dot:2
	for i in 1 2 3; do bash chat.bash $port m.txt > two$i.txt; done
	atf_check -o match:"^221 " cat two1.txt
	atf_check -o inline:"CLOSED\n" tail -n 1 two2.txt
	atf_check -o match:"^221 " cat two3.txt
	stat_is two.stats messages 2
	atf_check -s exit:1 -e match:"bad -D stage" "$SINK" -D nowhere 127.0.0.1:0
	finish
}
drop_stages_cleanup() { stop_all; }

atf_test_case greeting_modes cleanup
greeting_modes_head() {
	atf_set descr "--greeting=421 refuses at connect; --greeting=hang" \
		"never greets and the client gives up"
}
greeting_modes_body() {
	need_bash
	mail_script m.txt
	start_sink a --greeting=421
	atf_check -o match:"^421 4.3.2 Service not available" bash chat.bash $port m.txt
	start_sink b --greeting=hang
	atf_check -o inline:"TIMEOUT\n" env CHAT_TIMEOUT=1 bash chat.bash $port m.txt
	stat_is b.stats sessions 1
	stat_is b.stats ehlo 0
	finish
}
greeting_modes_cleanup() { stop_all; }

atf_test_case delays cleanup
delays_head() {
	atf_set descr "-w delays every reply, -W and delayN@ delay RCPT" \
		"replies (a client with a 1 s timeout gives up on a 5 s delay)"
}
delays_body() {
	need_bash
	mail_script m.txt
	start_sink a -w 5000
	atf_check -o inline:"TIMEOUT\n" env CHAT_TIMEOUT=1 bash chat.bash $port m.txt
	start_sink b -W 5000
	env CHAT_TIMEOUT=1 bash chat.bash $port m.txt > b.txt
	atf_check -o inline:"250 2.1.0 Ok\nTIMEOUT\n" tail -n 2 b.txt
	start_sink c
	mail_script m.txt s@example.com delay5000@example.com
	env CHAT_TIMEOUT=1 bash chat.bash $port m.txt > c.txt
	atf_check -o inline:"250 2.1.0 Ok\nTIMEOUT\n" tail -n 2 c.txt
	# A short delay is just slower.
	start_sink d -w 10 -W 10
	atf_check -o match:"^250 2.0.0 Ok: queued" bash chat.bash $port m.txt
	finish
}
delays_cleanup() { stop_all; }

atf_test_case hidden_extensions cleanup
hidden_extensions_head() {
	atf_set descr "-x hides extensions (and refuses their parameters);" \
		"--no-ehlo makes a HELO-only server"
}
hidden_extensions_body() {
	need_bash
	printf 'EHLO c.test\nMAIL FROM:<s@example.com> RET=FULL\nRSET\nMAIL FROM:<s@example.com> SIZE=10\nRSET\nMAIL FROM:<s@example.com>\nRCPT TO:<a@example.com>\nQUIT\n' > m.txt
	start_sink a -x pipelining,dsn
	bash chat.bash $port m.txt > a.txt
	atf_check -o match:"^250-SIZE 52428800" -o match:"^250-8BITMIME" \
		-o not-match:"PIPELINING" -o not-match:"DSN" \
		-o match:"^555 5.5.4 Unsupported option: RET=FULL" \
		-o match:"^250 2.1.5 Ok" cat a.txt
	start_sink b -x enhancedstatuscodes,size,8bitmime
	bash chat.bash $port m.txt > b.txt
	atf_check -o not-match:"^250.SIZE" -o not-match:"8BITMIME" \
		-o not-match:"ENHANCEDSTATUSCODES" -o match:"^250 DSN" \
		-o match:"^555 Unsupported option: SIZE=10" \
		-o match:"^250 Ok" -o not-match:"2\.1\.5" cat b.txt
	start_sink c --no-ehlo
	printf 'EHLO c.test\nHELO c.test\nMAIL FROM:<s@example.com>\nQUIT\n' > h.txt
	atf_check -o match:"^502 5.5.2" -o match:"^250 smtp-sink.test$" \
		-o match:"^250 2.1.0 Ok" bash chat.bash $port h.txt
	stat_is c.stats helo 1
	atf_check -s exit:1 -e match:"bad -x extension" "$SINK" -x nosuch 127.0.0.1:0
	finish
}
hidden_extensions_cleanup() { stop_all; }

atf_test_case limits cleanup
limits_head() {
	atf_set descr "Size limit (SIZE= and actual), line length limit," \
		"error limit, recipient limit, idle timeout"
}
limits_body() {
	need_bash
	start_sink a -z 100 -L 100 -n 2 -e 3 -T 1
	printf 'EHLO c.test\nMAIL FROM:<s@example.com> SIZE=1000\nMAIL FROM:<s@example.com>\nRCPT TO:<a@example.com>\nRCPT TO:<b@example.com>\nRCPT TO:<c@example.com>\nDATA\n' > big.txt
	i=0
	while [ $i -lt 5 ]; do
		echo "0123456789012345678901234567890123456789"
		i=$((i + 1))
	done >> big.txt
	printf '.\nNOOP %0300d\nNOOP\nQUIT\n' 0 >> big.txt
	bash chat.bash $port big.txt > big.out
	atf_check -o match:"^250-SIZE 100$" \
		-o match:"^552 5.3.4 Message size exceeds fixed limit" \
		-o match:"^452 4.5.3 Error: too many recipients" \
		-o match:"^552 5.3.4 Error: message too big" \
		-o match:"^500 5.5.2 Error: line too long" \
		-o match:"^221 2.0.0 Bye" cat big.out
	stat_is a.stats messages 0
	stat_is a.stats messages_permfail 1

	printf 'FOO\nBAR\nBAZ\nNOOP\nQUIT\n' > err.txt
	atf_check -o match:"^502 5.5.2" -o match:"^421 4.7.0 Error: too many errors" \
		-o match:"CLOSED" -o not-match:"^250 2.0.0" bash chat.bash $port err.txt

	printf '<\n' > idle.txt
	atf_check -o match:"^421 4.4.2 Error: timeout exceeded" bash chat.bash $port idle.txt
	stat_is a.stats timeouts 1
	finish
}
limits_cleanup() { stop_all; }

atf_test_case hostile_input cleanup
hostile_input_head() {
	atf_set descr "Garbage, NUL bytes, a 1 MB line and out-of-order" \
		"commands get error replies; the sink lives on"
}
hostile_input_body() {
	need_bash
	start_sink s
	printf 'DATA\r\nRCPT TO:<a@b>\r\nMAIL FROM:<a@b>\r\nEHLO\r\nMAIL FROM:a@b\r\nNO\000OP\r\n' > bad.txt
	head -c 1048576 /dev/zero | tr '\0' 'A' >> bad.txt
	printf '\r\nQUIT\r\n' >> bad.txt
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; cat bad.txt >&3; timeout 10 cat <&3' _ $port > bad.out
	atf_check -o match:"^503 5.5.1 Error: need MAIL command" \
		-o match:"^503 5.5.1 Error: send HELO/EHLO first" \
		-o match:"^501 5.5.4 Syntax: EHLO hostname" \
		-o match:"^500 5.5.2 Error: NUL byte" \
		-o match:"^500 5.5.2 Error: line too long" \
		-o match:"^221 2.0.0 Bye" tr -d '\r' < bad.out
	head -c 200000 /dev/urandom > noise.bin
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; cat noise.bin >&3; timeout 5 cat <&3 >/dev/null' _ $port
	mail_script m.txt
	atf_check -o match:"^250 2.0.0 Ok: queued" bash chat.bash $port m.txt
	stat_is s.stats messages 1
	finish
}
hostile_input_cleanup() { stop_all; }

atf_test_case starttls cleanup
starttls_head() {
	atf_set descr "STARTTLS with a throwaway certificate: TLS 1.2+, the" \
		"client must EHLO again, plaintext pipelined after STARTTLS is dropped"
	atf_set require.progs "openssl swaks"
}
starttls_body() {
	need_bash
	atf_check -o ignore -e ignore openssl req -x509 -newkey ec \
		-pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout key.pem \
		-out cert.pem -days 1 -subj /CN=localhost
	mkdir saved
	start_sink s -c cert.pem -k key.pem -d saved
	atf_check -o match:"^<-  250 STARTTLS" -o match:"TLS started with cipher TLSv1\.[23]" \
		-o match:"^<~  250 2.0.0 Ok: queued" -e ignore \
		swaks --server 127.0.0.1:$port --timeout 10 --tls \
		--from s@example.com --to a@example.com
	stat_is s.stats starttls 1
	stat_is s.stats messages 1
	atf_check -o match:"^X-Sink-Envelope: .* tls=TLSv1\.[23]/" \
		tr -d '\r' < "$(ls saved/msg-*.eml)"

	# After the handshake the session starts over: MAIL needs EHLO first.
	printf 'MAIL FROM:<s@example.com>\nEHLO again.test\nQUIT\n' > after.txt
	timeout 20 openssl s_client -starttls smtp -connect 127.0.0.1:$port \
		-quiet -crlf < after.txt > after.out 2> /dev/null
	atf_check -o match:"^503 5.5.1 Error: send HELO/EHLO first" \
		-o match:"^250-smtp-sink.test" -o not-match:"STARTTLS" \
		tr -d '\r' < after.out

	# Plaintext sent in the same write as STARTTLS is thrown away.
	printf 'EHLO c.test\r\nSTARTTLS\r\nNOOP\r\n' > inject.txt
	bash -c 'exec 3<>/dev/tcp/127.0.0.1/$1; cat inject.txt >&3; timeout 2 cat <&3' _ $port > inject.out
	atf_check -o match:"^220 2.0.0 Ready to start TLS" -o not-match:"^250 2.0.0 Ok" \
		tr -d '\r' < inject.out
	stat_is s.stats tls_failed 1
	atf_check -o match:"discarding 6 bytes pipelined after STARTTLS" cat s.err

	# Without a certificate there is no STARTTLS.
	start_sink n
	printf 'EHLO c.test\nSTARTTLS\nQUIT\n' > no.txt
	atf_check -o not-match:"250.STARTTLS" -o match:"^502 5.5.1" bash chat.bash $port no.txt
	finish
}
starttls_cleanup() { stop_all; }

atf_test_case signals_and_exit cleanup
signals_and_exit_head() {
	atf_set descr "SIGUSR1 prints the counters, SIGTERM prints them and" \
		"exits 0; non-loopback addresses are refused without -A"
}
signals_and_exit_body() {
	need_bash
	start_sink s
	mail_script m.txt
	atf_check -o match:"^250 2.0.0 Ok: queued" bash chat.bash $port m.txt
	kill -USR1 "$(cat s.pid)"
	stat_is s.out messages 1
	pid=$(cat s.pid)
	kill -TERM $pid
	wait_gone $pid smtp-sink
	wait $pid
	atf_check_equal 0 $?
	rm s.pid
	atf_check -o inline:"2\n" grep -c "^messages=1$" s.out
	atf_check -o match:"terminating" cat s.err

	atf_check -s exit:1 -e match:"refusing to listen on a non-loopback" \
		"$SINK" 0.0.0.0:0
	atf_check -s exit:1 -e match:"refusing to listen on a non-loopback" \
		"$SINK" "[::]:0"
	atf_check -s exit:1 -e match:"bad address" "$SINK" localhost:25
	atf_check -s exit:1 -e match:"bad address" "$SINK" ::1:25
	atf_check -s exit:1 -e match:"bad address" "$SINK" 127.0.0.1:65536
	atf_check -s exit:1 -e match:"not a writable directory" "$SINK" -d nosuch 127.0.0.1:0
	atf_check -s exit:2 -e match:"usage" "$SINK"
	finish
}
signals_and_exit_cleanup() { stop_all; }

atf_test_case ipv6 cleanup
ipv6_head() {
	atf_set descr "The sink listens on [::1] too"
	atf_set require.progs swaks
}
ipv6_body() {
	mkdir saved
	spawn p6 "$SINK" -P p6.port -s p6.stats -d saved "[::1]:0"
	if ! wait_port p6; then
		grep -q "bind" p6.err && atf_skip "no IPv6 loopback here: $(cat p6.err)"
		atf_fail "smtp-sink did not start: $(cat p6.err)"
	fi
	atf_check -o match:"250 2.0.0 Ok: queued" -e ignore \
		swaks --server "::1" --port "$port" -6 --timeout 10 \
		--from s@example.com --to a@example.com
	stat_is p6.stats messages 1
	# The client's address is bracketed, so its port stands apart.
	atf_check -o match:"^X-Sink-Envelope: session=1 client=\[::1\]:[0-9]+ " \
		cat saved/msg-00000001.eml
	finish
}
ipv6_cleanup() { stop_all; }

atf_test_case bare_port cleanup
bare_port_head() {
	atf_set descr "A bare port means 127.0.0.1"
}
bare_port_body() {
	need_bash
	start_server b smtp-sink "$SINK" -P b.port -s b.stats 0
	mail_script m.txt
	atf_check -o match:"^250 2.0.0 Ok: queued" bash chat.bash $port m.txt
	stat_is b.stats messages 1
	finish
}
bare_port_cleanup() { stop_all; }

atf_init_test_cases() {
	atf_add_test_case swaks_accepts
	atf_add_test_case pipelining
	atf_add_test_case recipient_keywords
	atf_add_test_case reject_options
	atf_add_test_case random_failures
	atf_add_test_case session_limit
	atf_add_test_case session_limit_file
	atf_add_test_case drop_stages
	atf_add_test_case greeting_modes
	atf_add_test_case delays
	atf_add_test_case hidden_extensions
	atf_add_test_case limits
	atf_add_test_case hostile_input
	atf_add_test_case starttls
	atf_add_test_case signals_and_exit
	atf_add_test_case ipv6
	atf_add_test_case bare_port
}
