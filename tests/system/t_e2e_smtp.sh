#! /usr/bin/env atf-sh
# The whole relay path: an SMTP client (swaks, smtp-source) -> smtpd ->
# cleanup -> qmgr -> smtp -> smtp-sink standing in for the next MTA.
# Checks the queue ID of smtpd's 250 reply against the Received header
# the sink saved, the relay refusal for a stranger, and that the queue is
# empty afterwards.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr


# queued FILE: the queue ID of the first "queued as" reply in FILE.
queued() {
	sed -n 's/.*250 2\.0\.0 Ok: queued as \([0-9A-Z]*\).*/\1/p' "$1" | head -n 1
}

queue_empty() {
	test -z "$(find q/incoming q/active q/deferred -type f 2>/dev/null)"
}

atf_test_case swaks_to_sink cleanup
swaks_to_sink_head() {
	atf_set descr "swaks -> smtpd -> cleanup -> qmgr -> smtp -> sink: Received header and queue ID"
	atf_set require.progs swaks
	atf_set require.user unprivileged
	atf_set timeout 120
}
swaks_to_sink_body() {
	mkdir -p saved
	start_sink s -d saved
	relay_instance "$port"
	atf_check -s exit:0 -o save:swaks.out -e ignore swaks --server 127.0.0.1:$port \
	    --timeout 20 --helo client.example.test --from alice@client.example.test \
	    --to bob@far.example.test --header "Subject: e2e" --body "end to end body"
	id=$(queued swaks.out)
	[ -n "$id" ] || atf_fail "no queue ID in the 250 reply"
	stat_is s.stats messages 1
	WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "$id not removed"
	in_log "$id: to=<bob@far.example.test>, relay=127.0.0.1\[127.0.0.1\]:[0-9]*, .*dsn=2.0.0, status=sent" ||
	    atf_fail "no sent line for $id"
	f=$(ls saved/* | head -n 1)
	# Our Received header: HELO, client address, protocol, queue ID, recipient.
	grep -q "^Received: from client.example.test (.*127.0.0.1\])" "$f" ||
	    atf_fail "no Received from the client in $(cat $f)"
	grep -A3 "^Received: from client.example.test" "$f" | grep -q "by mx.example.test (Petrel) with ESMTP id $id" ||
	    atf_fail "Received header lacks 'with ESMTP id $id'"
	grep -A3 "^Received: from client.example.test" "$f" | grep -q "for <bob@far.example.test>" ||
	    atf_fail "Received header lacks the single recipient"
	grep -qi "^Message-ID: " "$f" || atf_fail "no Message-ID"
	grep -q "^end to end body" "$f" || atf_fail "body"
	grep -q "alice@client.example.test" "$f" || atf_fail "envelope sender"
	queue_empty || atf_fail "queue not empty"
	stop_instance
	assert_log_clean
	finish
}
swaks_to_sink_cleanup() {
	stop_instance
	stop_all
}

atf_test_case source_to_sink cleanup
source_to_sink_head() {
	atf_set descr "smtp-source: 50 pipelined messages x 2 recipients relayed to the sink, none lost, none doubled"
	atf_set require.user unprivileged
	atf_set timeout 180
}
source_to_sink_body() {
	start_sink s
	relay_instance "$port"
	atf_check -s exit:0 -o save:src.out -e ignore $SOURCE -s 4 -m 50 -r 2 \
	    -f sender@client.example.test -t "rcpt%d@far.example.test" \
	    127.0.0.1:$port
	WAIT_MAX=300 wait_for stat_is s.stats recipients 100 ||
	    atf_fail "sink has $(value s.stats recipients) of 100 recipients"
	test "$(value s.stats messages)" -eq 50 || atf_fail "messages: $(value s.stats messages)"
	WAIT_MAX=100 wait_for queue_empty || atf_fail "queue not empty"
	stop_instance
	assert_log_clean
	finish
}
source_to_sink_cleanup() {
	stop_instance
	stop_all
}

atf_test_case stranger_refused cleanup
stranger_refused_head() {
	atf_set descr "a client outside mynetworks cannot relay: 554 5.7.1, nothing queued, nothing sent"
	atf_set require.progs swaks
	atf_set require.user unprivileged
	atf_set timeout 120
}
stranger_refused_body() {
	start_sink s
	relay_instance "$port" "mynetworks = 127.0.0.1/32"
	atf_check -s not-exit:0 -o save:swaks.out -e ignore swaks --server 127.0.0.1:$port \
	    --local-interface 127.0.0.2 --timeout 20 --from a@client.example.test \
	    --to victim@far.example.test
	grep -q "554 5.7.1 <victim@far.example.test>: Relay access denied" swaks.out ||
	    atf_fail "no relay refusal: $(cat swaks.out)"
	queue_empty || atf_fail "something was queued"
	test "$(value s.stats messages)" -eq 0 || atf_fail "the sink got mail"
	stop_instance
	assert_log_clean
	finish
}
stranger_refused_cleanup() {
	stop_instance
	stop_all
}

atf_test_case notify_success_dsn_hop cleanup
notify_success_dsn_hop_head() {
	atf_set descr "NOTIFY=SUCCESS relayed to a DSN server: NOTIFY is passed on and Petrel sends no success notice of its own; to a server without DSN: one 'relayed' notice"
	atf_set require.user unprivileged
	atf_set require.progs bash
	atf_set timeout 120
}
notify_success_dsn_hop_body() {
	need_bash
	mkdir -p saved
	start_sink s -d saved
	relay_instance "$port"
	mail_script m alice@client.example.test bob@far.example.test
	sed -i 's/^RCPT TO:<bob@far.example.test>.*/RCPT TO:<bob@far.example.test> NOTIFY=SUCCESS/' m
	atf_check -o save:m.out bash chat.bash $port m
	grep -q "^250 2.0.0 Ok: queued" m.out || atf_fail "not queued: $(cat m.out)"
	stat_is s.stats messages 1
	WAIT_MAX=100 wait_for in_log ": removed" || atf_fail "not removed"
	sleep 1
	test "$(value s.stats messages)" = 1 ||
	    atf_fail "a second message (a success notice of ours): $(value s.stats messages)"
	test -z "$(find q/trace -type f 2>/dev/null)" || atf_fail "a trace log was kept"
	stop_instance

	# The same to a server without DSN: the notice is ours ("relayed").
	stop_all
	rm -rf saved q maillog s.stats s.port
	mkdir -p saved
	start_sink s -d saved -x dsn
	relay_instance "$port"
	atf_check -o save:m2.out bash chat.bash $port m
	stat_is s.stats messages 2
	grep -l "^Action: relayed" saved/* >/dev/null ||
	    atf_fail "no relayed notice: $(ls saved)"
	stop_instance
	finish
}
notify_success_dsn_hop_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case notify_success_dsn_hop
	atf_add_test_case swaks_to_sink
	atf_add_test_case source_to_sink
	atf_add_test_case stranger_refused
}
