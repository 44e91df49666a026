#! /usr/bin/env atf-sh
# After-queue content filters (doc/content-filter.md): content_filter
# sends a message's every recipient to the filter instead of its
# destination; a full loop through a filter (tests/tools/content-filter.py)
# and back into a second smtpd with -o content_filter= delivers once;
# FILTER from header_checks and from check_recipient_access;
# receive_override_options on the reinjection service; bad values.
# Private instances on loopback, smtp-sink as the filter and as the
# final destination (relayhost), no DNS.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

FILTER_PY=@SRCDIR@/tests/tools/content-filter.py
PY=/usr/bin/python3

# cf_instance FINALPORT [main.cf lines...]: smtpd on $port, cleanup,
# qmgr, smtp; non-local mail goes to the sink at FINALPORT.  $MCF_MORE:
# more master.cf lines.
cf_instance() {
	_fp=$1
	shift
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "local_recipient_maps =" \
	    "relayhost = [127.0.0.1]:$_fp" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 3600s" "qmgr_ipc_timeout = 5s" \
	    "smtp_connect_timeout = 5s" "smtp_helo_timeout = 10s" \
	    "inet_protocols = ipv4" "$@"
	mcf "$port inet n - n - - smtpd" \
	    "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 3600 1 qmgr" \
	    "smtp unix - - n - - smtp" \
	    "scache unix - - n - 1 scache" \
	    "anvil unix - - n - 1 anvil" \
	    "bounce unix - - n - 0 bounce" \
	    ${MCF_MORE:+"$MCF_MORE"}
	start_instance
}

# send PORT SENDER RCPT... < message: one SMTP transaction; the status
# says whether it was accepted (the refusal goes to stderr).
send() {
	$PY -c '
import smtplib, sys
port, sender, rcpts = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
data = sys.stdin.buffer.read()
with smtplib.SMTP("127.0.0.1", port, local_hostname="client.example",
                  timeout=30) as s:
    s.sendmail(sender, rcpts, data)
' "$@"
}

# msg SUBJECT [HEADER]: a small message.
msg() {
	printf 'From: alice@client.example\r\nSubject: %s\r\n' "$1"
	[ -z "${2:-}" ] || printf '%s\r\n' "$2"
	printf '\r\nhello\r\n'
}

# two_sinks: smtp-sinks "filt" (a filter, port $fport, messages saved in
# fdir) and "dest" (the destination, $dport, ddir).
two_sinks() {
	mkdir fdir
	start_sink filt -d fdir
	fport=$port
	dest_sink
}

# dest_sink: the destination alone.
dest_sink() {
	mkdir ddir
	start_sink dest -d ddir
	dport=$port
}

# sink_count DIR: the messages a sink saved.
sink_count() {
	ls "$1" 2>/dev/null | grep -c '^msg-' || true
}

atf_test_case to_sink cleanup
to_sink_head() {
	atf_set descr "content_filter = smtp:[127.0.0.1]:PORT: mail for a local user and for another domain goes to the filter with its envelope, not to the destination"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
}
to_sink_body() {
	two_sinks
	cf_instance $dport "content_filter = smtp:[127.0.0.1]:$fport"
	msg "to the filter" | send $port alice@client.example \
	    bob@mx.example.test carol@remote.example ||
	    atf_fail "message refused"
	stat_is filt.stats messages 1
	stat_is filt.stats recipients 2
	f=fdir/$(ls fdir | head -1)
	grep -q '^X-Sink-Mail-From: <alice@client.example>' $f ||
	    { cat $f >&2; atf_fail "sender not kept"; }
	grep -q '^X-Sink-Rcpt-To: <bob@mx.example.test>' $f &&
	    grep -q '^X-Sink-Rcpt-To: <carol@remote.example>' $f ||
	    { cat $f >&2; atf_fail "recipients not kept"; }
	grep -q '^Subject: to the filter' $f || atf_fail "content not passed"
	wait_for lines_ge 2 "relay=127.0.0.1\[127.0.0.1\]:$fport,.*status=sent" maillog ||
	    { cat maillog >&2; atf_fail "no delivery to the filter logged"; }
	# nothing went to the destination (nor was tried)
	sleep 1
	atf_check_equal 0 "$(sink_count ddir)"
	atf_check_equal 0 "$(value dest.stats sessions)"
	assert_log_clean
}
to_sink_cleanup() {
	stop_instance
	stop_all
}

atf_test_case pickup_filter cleanup
pickup_filter_head() {
	atf_set descr "sendmail mail: pickup passes content_filter on to cleanup; a bounce notice gets none"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
}
pickup_filter_body() {
	two_sinks
	MCF_MORE="pickup unix-dgram n - n 1 1 pickup" cf_instance $dport \
	    "content_filter = smtp:[127.0.0.1]:$fport" \
	    "command_directory = $B/bin"
	msg "local submission" | MAIL_CONFIG=$PWD/etc $B/bin/sendmail -f alice@mx.example.test \
	    carol@remote.example || atf_fail "sendmail failed"
	stat_is filt.stats messages 1
	f=fdir/$(ls fdir | head -1)
	grep -q '^X-Sink-Rcpt-To: <carol@remote.example>' $f ||
	    { cat $f >&2; atf_fail "not at the filter"; }
	# A bounce notice (here: for a recipient the filter refuses) goes
	# to its sender's destination, never through the filter.
	msg "refused by the filter" | send $port someone@remote.example \
	    permfail@remote.example || atf_fail "message refused"
	stat_is dest.stats messages 1
	d=ddir/$(ls ddir | head -1)
	grep -q '^X-Sink-Rcpt-To: <someone@remote.example>' $d &&
	    grep -q '^X-Sink-Mail-From: <>' $d ||
	    { cat $d >&2; atf_fail "the bounce notice did not go to the sender's destination"; }
	stat_is filt.stats messages 1
	assert_log_clean
}
pickup_filter_cleanup() {
	stop_instance
	stop_all
}

atf_test_case after_queue_loop cleanup
after_queue_loop_head() {
	atf_set descr "an after-queue filter loop: smtpd -> scan transport -> filter -> reinjection smtpd (-o content_filter=) -> destination: delivered once with the filter's header; receive_override_options=no_header_body_checks there keeps a header check that would REJECT from firing"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
}
after_queue_loop_body() {
	dest_sink
	rport=$($TS freeport)
	start_server filter content-filter $PY $FILTER_PY -P filter.port \
	    -r 127.0.0.1:$rport -l filter.log -H "X-Scanned: by the test filter"
	fport=$port
	echo '/^X-Scanned:/ REJECT scanned mail must not come in here' > hc
	# the reinjection smtpd, and a dedicated filter transport, as
	# Postfix sites have them
	MCF_MORE="127.0.0.1:$rport inet n - n - - smtpd -o content_filter= -o receive_override_options=no_header_body_checks,no_unknown_recipient_checks
scan unix - - n - 2 smtp" \
	    cf_instance $dport \
	    "content_filter = scan:[127.0.0.1]:$fport" \
	    "header_checks = regexp:$PWD/hc"
	msg "through the filter" | send $port alice@client.example \
	    carol@remote.example dave@remote.example ||
	    atf_fail "message refused"
	stat_is dest.stats messages 1
	stat_is dest.stats recipients 2
	d=ddir/$(ls ddir | head -1)
	grep -q '^X-Scanned: by the test filter' $d ||
	    { cat $d >&2; atf_fail "the filter's header is missing"; }
	grep -q '^X-Sink-Mail-From: <alice@client.example>' $d ||
	    atf_fail "sender changed"
	# once through the filter, once to the destination: no loop
	sleep 2
	atf_check_equal 1 "$(wc -l < filter.log)"
	atf_check_equal 1 "$(sink_count ddir)"
	grep -q "relay=127.0.0.1\[127.0.0.1\]:$fport,.*status=sent" maillog ||
	    { cat maillog >&2; atf_fail "no delivery to the filter through scan"; }
	# The same header sent straight to the public smtpd is refused:
	# the check works where it is not turned off.
	msg "scanned already" "X-Scanned: forged" | send $port \
	    alice@client.example carol@remote.example 2> refused &&
	    atf_fail "a header check that should REJECT did not"
	grep -q 'scanned mail must not come in here' refused ||
	    { cat refused >&2; atf_fail "not refused by the header check"; }
	atf_check_equal 1 "$(wc -l < filter.log)"
	assert_log_clean
}
after_queue_loop_cleanup() {
	stop_instance
	stop_all
}

atf_test_case filter_actions cleanup
filter_actions_head() {
	atf_set descr "FILTER from header_checks and from check_recipient_access routes the message to the filter; other mail goes to its destination"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
}
filter_actions_body() {
	two_sinks
	mkdir gdir
	start_sink filt2 -d gdir
	gport=$port
	echo "/^X-Route: filter/ FILTER smtp:[127.0.0.1]:$fport" > hc
	echo "special@remote.example FILTER smtp:[127.0.0.1]:$gport" > access
	cf_instance $dport "header_checks = regexp:$PWD/hc" \
	    "smtpd_recipient_restrictions = check_recipient_access texthash:$PWD/access, permit_mynetworks, reject_unauth_destination"
	msg "header" "X-Route: filter" | send $port alice@client.example \
	    carol@remote.example || atf_fail "refused (header)"
	stat_is filt.stats messages 1
	grep -q "filter: header X-Route: filter from client.example\|: filter: header X-Route: filter" maillog ||
	    { cat maillog >&2; atf_fail "FILTER not logged"; }
	msg "access" | send $port alice@client.example special@remote.example \
	    carol@remote.example || atf_fail "refused (access)"
	stat_is filt2.stats messages 1
	stat_is filt2.stats recipients 2
	grep -q "special@remote.example.*triggers FILTER smtp:\[127.0.0.1\]:$gport" maillog ||
	    { cat maillog >&2; atf_fail "access FILTER not logged"; }
	# both: the header check's FILTER comes last and wins
	msg "both" "X-Route: filter" | send $port alice@client.example \
	    special@remote.example || atf_fail "refused (both)"
	stat_is filt.stats messages 2
	msg "plain" | send $port alice@client.example carol@remote.example ||
	    atf_fail "refused (plain)"
	stat_is dest.stats messages 1
	stat_is filt.stats messages 2
	stat_is filt2.stats messages 1
	assert_log_clean
}
filter_actions_cleanup() {
	stop_instance
	stop_all
}

atf_test_case bad_values cleanup
bad_values_head() {
	atf_set descr "bad content_filter, FILTER and receive_override_options values: clear errors with where they come from"
	atf_set require.user unprivileged
}
bad_values_body() {
	port=$(free_port)
	base() {
		mk_instance "myhostname = mx.example.test" "inet_protocols = ipv4" "$@"
		mcf "$port inet n - n - - smtpd" \
		    "cleanup unix n - n - 0 cleanup" \
		    "qmgr unix-dgram n - n 3600 1 qmgr" \
		    "smtp unix - - n - - smtp" \
		    "pickup unix n - n 60 1 pickup"
	}
	base "content_filter = smtp"
	atf_check -s not-exit:0 -o ignore -e match:"content_filter = smtp: no colon" \
	    $PETREL -c $PWD/etc check
	base "content_filter = nosuch:[127.0.0.1]:10025"
	atf_check -s not-exit:0 -o ignore \
	    -e match:"main.cf: content_filter = nosuch:\[127.0.0.1\]:10025 names no master.cf service \"nosuch\"" \
	    $PETREL -c $PWD/etc check
	base "receive_override_options = no_header_body_checks, no_such_thing"
	atf_check -s not-exit:0 -o ignore \
	    -e match:"receive_override_options: unknown option \"no_such_thing\"" \
	    $PETREL -c $PWD/etc check
	base
	echo "127.0.0.1:$(free_port) inet n - n - - smtpd -o content_filter=bad@:x" >> etc/master.cf
	atf_check -s not-exit:0 -o ignore \
	    -e match:"content_filter = bad@:x: bad transport name" \
	    $PETREL -c $PWD/etc check
	base
	echo "127.0.0.1:$(free_port) inet n - n - - smtpd -o content_filter=relay:[127.0.0.1]:1" >> etc/master.cf
	atf_check -s not-exit:0 -o ignore \
	    -e match:"master.cf:6: content_filter = relay:\[127.0.0.1\]:1 names no master.cf service \"relay\"" \
	    $PETREL -c $PWD/etc check
	printf '/^X-A:/ WARN a\n/^X-B:/ FILTER nocolon\n' > hc
	base "header_checks = regexp:$PWD/hc"
	atf_check -s not-exit:0 -o ignore \
	    -e match:"$PWD/hc:2: header_checks: bad FILTER \"nocolon\": no colon" \
	    $PETREL -c $PWD/etc check
	# a good configuration passes
	printf '/^X-B:/ FILTER smtp:[127.0.0.1]:10025\n' > hc
	base "header_checks = regexp:$PWD/hc" "content_filter = smtp:" \
	    "receive_override_options = no_address_mappings"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc check
}
bad_values_cleanup() {
	stop_instance
}

atf_test_case bad_access_filter cleanup
bad_access_filter_head() {
	atf_set descr "a malformed FILTER in an access table is logged with the table and ignored; the mail goes to its destination"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
}
bad_access_filter_body() {
	dest_sink
	echo "carol@remote.example FILTER nocolon" > access
	cf_instance $dport \
	    "smtpd_recipient_restrictions = check_recipient_access texthash:$PWD/access, permit_mynetworks, reject_unauth_destination"
	msg "bad filter" | send $port alice@client.example carol@remote.example ||
	    atf_fail "refused"
	stat_is dest.stats messages 1
	grep -q 'warning: texthash:.*bad FILTER "nocolon" for <carol@remote.example>: no colon' maillog ||
	    { cat maillog >&2; atf_fail "no warning"; }
	assert_log_clean
}
bad_access_filter_cleanup() {
	stop_instance
	stop_all
}

atf_test_case no_unknown_rcpt cleanup
no_unknown_rcpt_head() {
	atf_set descr "receive_override_options=no_unknown_recipient_checks on a second smtpd: an unknown local user refused by the first (550 5.1.1) is accepted there"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
}
no_unknown_rcpt_body() {
	mkdir fdir mail mail/alice
	start_sink filt -d fdir
	fport=$port
	rport=$(free_port)
	MCF_MORE="127.0.0.1:$rport inet n - n - - smtpd -o receive_override_options=no_unknown_recipient_checks" \
	    cf_instance $fport "content_filter = smtp:[127.0.0.1]:$fport" \
	    "local_mail_root = $PWD/mail" "local_recipient_maps = \$alias_maps unix:passwd.byname"
	msg "unknown" | send $port bob@client.example nosuch@mx.example.test 2> refused &&
	    atf_fail "unknown user accepted by the first smtpd"
	grep -q "550.*5.1.1 <nosuch@mx.example.test>: Recipient address rejected: User unknown" refused ||
	    { cat refused >&2; atf_fail "not refused as unknown"; }
	msg "known" | send $port bob@client.example alice@mx.example.test ||
	    atf_fail "known user refused"
	msg "unknown, second port" | send $rport bob@client.example nosuch@mx.example.test ||
	    atf_fail "unknown user refused despite no_unknown_recipient_checks"
	stat_is filt.stats messages 2
	assert_log_clean
}
no_unknown_rcpt_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case no_unknown_rcpt
	atf_add_test_case to_sink
	atf_add_test_case pickup_filter
	atf_add_test_case after_queue_loop
	atf_add_test_case filter_actions
	atf_add_test_case bad_values
	atf_add_test_case bad_access_filter
}
