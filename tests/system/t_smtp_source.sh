#! /usr/bin/env atf-sh
# Tests of the smtp-source load generator, run against smtp-sink on
# 127.0.0.1 (port 0, -P portfile); every sink is killed in cleanup.

BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr

atf_test_case sends_and_reports cleanup
sends_and_reports_head() {
	atf_set descr "Parallel sessions send every message with its" \
		"recipients; the report (rate, reply counts) matches the sink's counts"
}
sends_and_reports_body() {
	mkdir saved
	start_sink s -d saved
	atf_check -o save:src.out \
		"$SOURCE" -s 4 -m 20 -r 3 -M 5 -l 2000 127.0.0.1:$port
	cat src.out
	atf_check -o match:"^smtp-source: 20 of 20 messages accepted in [0-9.]+ s: [0-9.]+ messages/s$" \
		-o match:"^accepted=20$" -o match:"^failed=0$" \
		-o match:"^recipients_ok=60$" -o match:"^rate=[0-9]+\.[0-9]$" \
		-o match:"^replies_4xx=0$" -o match:"^replies_5xx=0$" cat src.out
	stat_is s.stats messages 20
	stat_is s.stats recipients 60
	stat_is s.stats active 0
	conns=$(value src.out connections)
	stat_is s.stats connections "$conns"
	stat_is s.stats quit "$conns"
	[ "$conns" -ge 4 ] && [ "$conns" -le 20 ] ||
		atf_fail "$conns connections for 20 messages at 5 per connection"
	# Replies: greeting, EHLO, QUIT per connection; MAIL, 3 RCPT, dot
	# per message (the 354s are counted apart).
	atf_check_equal "$((conns * 3 + 20 * 5))" "$(value src.out replies_2xx)"
	atf_check_equal 20 "$(value src.out replies_3xx)"

	atf_check -o inline:"20\n" sh -c 'ls saved/msg-*.eml | wc -l | tr -d " "'
	f=saved/msg-00000001.eml
	atf_check -o match:"^X-Sink-Mail-From: <sender@smtp-source.test> SIZE=" \
		-o match:"^X-Sink-Rcpt-To: <user1@example.com>" \
		-o match:"^X-Sink-Rcpt-To: <user3@example.com>" \
		-o match:"^Subject: smtp-source message [0-9]+$" \
		-o match:"^\.000002 " -o not-match:"^\.\." \
		tr -d '\r' < $f
	# -l is the size of the message as sent, near enough.
	size=$(sed '/^X-Sink-/d' $f | wc -c)
	[ "$size" -ge 1900 ] && [ "$size" -le 2100 ] || atf_fail "message of $size bytes for -l 2000"
	finish
}
sends_and_reports_cleanup() { stop_all; }

atf_test_case connection_reuse cleanup
connection_reuse_head() {
	atf_set descr "-M sets how many messages share a connection"
}
connection_reuse_body() {
	start_sink a
	atf_check -o match:"^connections=10$" "$SOURCE" -m 10 -M 1 127.0.0.1:$port
	stat_is a.stats connections 10
	start_sink b
	atf_check -o match:"^connections=1$" "$SOURCE" -m 10 -M 0 127.0.0.1:$port
	stat_is b.stats connections 1
	stat_is b.stats messages 10
	start_sink c
	atf_check -o match:"^connections=4$" "$SOURCE" -m 10 -M 3 127.0.0.1:$port
	stat_is c.stats connections 4
	finish
}
connection_reuse_cleanup() { stop_all; }

atf_test_case pipelining cleanup
pipelining_head() {
	atf_set descr "MAIL, RCPT and DATA go in one batch when the server" \
		"offers PIPELINING, one at a time with -P or when it does not"
}
pipelining_body() {
	start_sink a
	atf_check -o ignore -e save:pipe.err "$SOURCE" -v -r 2 127.0.0.1:$port
	# The DATA command is written before the reply to MAIL is read.
	atf_check -o inline:"> MAIL\n> RCPT\n> RCPT\n> DATA\n< 250\n< 250\n< 250\n< 354\n" \
		sh -c "sed -n 's/^smtp-source[^:]*: 1 \([<>] [A-Z0-9]*\).*/\1/p' pipe.err | sed -n '/> MAIL/,/< 354/p'"
	atf_check -o ignore -e save:nopipe.err "$SOURCE" -v -P -r 2 127.0.0.1:$port
	atf_check -o inline:"> MAIL\n< 250\n> RCPT\n< 250\n> RCPT\n< 250\n> DATA\n< 354\n" \
		sh -c "sed -n 's/^smtp-source[^:]*: 1 \([<>] [A-Z0-9]*\).*/\1/p' nopipe.err | sed -n '/> MAIL/,/< 354/p'"
	start_sink b -x pipelining
	atf_check -o ignore -e save:hidden.err "$SOURCE" -v -r 2 127.0.0.1:$port
	atf_check -o inline:"> MAIL\n< 250\n> RCPT\n< 250\n> RCPT\n< 250\n> DATA\n< 354\n" \
		sh -c "sed -n 's/^smtp-source[^:]*: 1 \([<>] [A-Z0-9]*\).*/\1/p' hidden.err | sed -n '/> MAIL/,/< 354/p'"
	stat_is a.stats messages 2
	stat_is b.stats messages 1
	finish
}
pipelining_cleanup() { stop_all; }

atf_test_case starttls cleanup
starttls_head() {
	atf_set descr "-T negotiates TLS (1.2+) and says EHLO again; it fails" \
		"if the server offers no STARTTLS"
	atf_set require.progs openssl
}
starttls_body() {
	atf_check -o ignore -e ignore openssl req -x509 -newkey ec \
		-pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout key.pem \
		-out cert.pem -days 1 -subj /CN=localhost
	start_sink t -c cert.pem -k key.pem
	atf_check -o match:"^tls=3$" -o match:"^accepted=3$" \
		-e match:"TLS established: TLSv1\.[23]" \
		"$SOURCE" -v -T -m 3 -M 1 127.0.0.1:$port
	stat_is t.stats starttls 3
	stat_is t.stats ehlo 6
	stat_is t.stats messages 3
	start_sink n
	atf_check -s exit:1 -o match:"^accepted=0$" \
		-e match:"does not offer STARTTLS" "$SOURCE" -T 127.0.0.1:$port
	stat_is n.stats messages 0
	finish
}
starttls_cleanup() { stop_all; }

atf_test_case failures cleanup
failures_head() {
	atf_set descr "Messages not accepted (4xx, 5xx, dropped, refused" \
		"connection) are counted and make the exit status 1, unless -a"
}
failures_body() {
	start_sink s
	atf_check -s exit:1 -o match:"^accepted=0$" -o match:"^failed=3$" \
		-o match:"^replies_4xx=3$" -o match:"^recipients_rejected=3$" \
		-e ignore "$SOURCE" -m 3 -t "tempfail+%n@example.com" 127.0.0.1:$port
	atf_check -s exit:0 -o match:"^accepted=0$" -o match:"^replies_5xx=3$" \
		-e ignore "$SOURCE" -a -m 3 -P -t "permfail@example.com" 127.0.0.1:$port
	atf_check -s exit:1 -o match:"^accepted=0$" -o match:"^replies_5xx=1$" \
		-e ignore "$SOURCE" -t "permfail-dot@example.com" 127.0.0.1:$port

	# A share of the recipients fails (a message with one good recipient
	# of two is accepted): accepted + failed = sent, and the sink agrees.
	# One session, so the seeded draws fall the same way every run.
	start_sink r -p 40 -r 3
	"$SOURCE" -m 30 -r 2 -M 0 127.0.0.1:$port > r.out 2> r.err
	[ $? -eq 1 ] || atf_fail "expected exit 1"
	acc=$(value r.out accepted)
	fail=$(value r.out failed)
	[ $((acc + fail)) -eq 30 ] && [ "$fail" -gt 0 ] && [ "$acc" -gt 0 ] ||
		atf_fail "accepted=$acc failed=$fail"
	stat_is r.stats messages "$acc"
	stat_is r.stats rcpt_permfail "$(value r.out recipients_rejected)"
	stat_is r.stats rcpt_ok "$(value r.out recipients_ok)"

	# Dropped at the end of data: the session breaks, the next message
	# gets a new connection.
	start_sink d -D dot:1
	atf_check -s exit:1 -o match:"^accepted=1$" -o match:"^failed=1$" \
		-o match:"^connections=2$" -e ignore \
		"$SOURCE" -m 2 -M 0 127.0.0.1:$port
	start_sink g --greeting=421
	atf_check -s exit:1 -o match:"^failed=2$" -o match:"^replies_4xx=2$" \
		-e ignore "$SOURCE" -m 2 127.0.0.1:$port

	# Nobody listening.
	start_sink x
	kill "$(cat x.pid)"
	wait "$(cat x.pid)"
	rm x.pid
	atf_check -s exit:1 -o match:"^connect_failures=2$" -o match:"^failed=2$" \
		-e match:"cannot connect" "$SOURCE" -m 2 127.0.0.1:$port
	finish
}
failures_cleanup() { stop_all; }

atf_test_case helo cleanup
helo_head() {
	atf_set descr "-E says HELO, EHLO falls back to HELO, -H names the client"
}
helo_body() {
	mkdir saved
	start_sink s -d saved
	atf_check -o match:"^accepted=1$" "$SOURCE" -E -H client.test 127.0.0.1:$port
	stat_is s.stats helo 1
	stat_is s.stats ehlo 0
	atf_check -o match:"helo=client.test" cat saved/msg-00000001.eml
	start_sink n --no-ehlo
	atf_check -o match:"^accepted=1$" "$SOURCE" 127.0.0.1:$port
	stat_is n.stats helo 1
	stat_is n.stats errors 1
	finish
}
helo_cleanup() { stop_all; }

atf_test_case bind_address cleanup
bind_address_head() {
	atf_set descr "-b binds the client to another loopback address"
}
bind_address_body() {
	mkdir saved
	start_sink s -d saved
	if ! "$SOURCE" -b 127.0.0.2 127.0.0.1:$port > b.out 2> b.err; then
		grep -q "assign requested address" b.err &&
			atf_skip "127.0.0.2 is not configured here"
		cat b.err >&2
		atf_fail "smtp-source -b 127.0.0.2 failed"
	fi
	atf_check -o match:"^X-Sink-Envelope: .*client=127\.0\.0\.2:" \
		cat saved/msg-00000001.eml
	atf_check -s exit:1 -e match:"cannot connect" -o ignore \
		"$SOURCE" -b 192.0.2.1 127.0.0.1:$port
	finish
}
bind_address_cleanup() { stop_all; }

atf_test_case bad_arguments
bad_arguments_head() {
	atf_set descr "Bad options are refused with a message"
}
bad_arguments_body() {
	atf_check -s exit:1 -e match:"only %d, %n" "$SOURCE" -t "u%s@x" 127.0.0.1:25
	atf_check -s exit:1 -e match:"no brackets" "$SOURCE" -f "a>b@x" 127.0.0.1:25
	atf_check -s exit:1 -e match:"bad value for -s" "$SOURCE" -s 0 127.0.0.1:25
	atf_check -s exit:1 -e match:"bad server" "$SOURCE" 127.0.0.1
	# An IPv6 address goes in brackets; the port is a number to 65535.
	atf_check -s exit:1 -e match:"bad server" "$SOURCE" ::1:25
	atf_check -s exit:1 -e match:"bad server" "$SOURCE" "[::1]"
	atf_check -s exit:1 -e match:"bad server" "$SOURCE" 127.0.0.1:65536
	atf_check -s exit:1 -e match:"bad server" "$SOURCE" :25
	atf_check -s exit:2 -e match:"usage" "$SOURCE"
}

atf_init_test_cases() {
	atf_add_test_case sends_and_reports
	atf_add_test_case connection_reuse
	atf_add_test_case pipelining
	atf_add_test_case starttls
	atf_add_test_case failures
	atf_add_test_case helo
	atf_add_test_case bind_address
	atf_add_test_case bad_arguments
}
