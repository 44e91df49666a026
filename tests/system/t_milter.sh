#! /usr/bin/env atf-sh
# Milters in Petrel, with real milters: tests/tools/test-milter.py (Debian's
# python3-milter, Sendmail's libmilter underneath) driven by a script per
# case, and tests/tools/garbage-milter.py for broken protocol.  A private
# instance (smtpd, pickup, cleanup, qmgr, smtp) relays everything to
# smtp-sink, which saves what it receives; the SMTP client is chat.bash
# (common.subr) or swaks.  Each verdict at each stage, each modification
# checked in the message the sink got, quarantine, the macros the milter
# saw, non_smtpd_milters for sendmail mail, two milters in a row, and
# milter_default_action with a milter that is down, hangs, crashes or
# talks garbage.  The replies are Postfix's: MILTER_MTA=postfix runs the
# same cases against Debian's Postfix (milter.subr).

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
SRCDIR=@SRCDIR@
. @SRCDIR@/tests/system/milter.subr
. @SRCDIR@/tests/system/dovecot.subr

# Helpers only this file uses (the shared ones are in milter.subr):
#   need_milter_python          skips unless /usr/bin/python3 has the
#                               Milter module (python3-milter)
#   start_milter_inet NAME [RULE...]   start_milter on 127.0.0.1: $milter
#                               is inet:127.0.0.1:PORT
#   start_garbage NAME MODE     garbage-milter.py (MODE: length, reply,
#                               oversized) on $PWD/NAME.sock
#   restart_milter NAME [RULE...]  the milter NAME again, on the same
#                               socket, with new rules (its log kept)
#   mta_held_count              messages in the MTA's hold queue
#   mta_queue_count             messages in any of its queues
#   timed_chat NAME SECS        chat NAME; fails if it took more than
#                               SECS seconds
#   send_ok FROM RCPT...        one message (msg_script) in chat s; the
#                               final dot must get 250 2.0.0 Ok: queued as
#   expect_rcpts RCPT...        the envelope recipients of the newest
#                               message at the sink are the RCPTs (each
#                               "<addr>" and any ESMTP arguments but
#                               ORCPT, which is the relay's business)
#   nothing_delivered           after half a second, the sink has no
#                               message and the MTA's queue is empty

GARBAGE_MILTER=$SRCDIR/tests/tools/garbage-milter.py

need_milter_python() {
	[ -x $MILTER_PY ] || atf_skip "$MILTER_PY is missing (Debian's python3)"
	$MILTER_PY -c 'import Milter' 2>/dev/null ||
	    atf_skip "python3-milter is not installed for $MILTER_PY (tools/install-deps)"
	[ ${#PWD} -lt 90 ] || atf_skip "work directory path too long for UNIX sockets"
	if [ "${MILTER_MTA:-petrel}" = postfix ]; then
		[ "$(id -u)" = 0 ] || atf_skip "MILTER_MTA=postfix needs root"
		[ -x /usr/sbin/postfix ] || atf_skip "Postfix is not installed"
		chmod 755 .
	fi
}

start_milter_inet() {
	_mr_name=$1
	_milter_rules "$@"
	start_server "$_mr_name" test-milter $MILTER_PY $TEST_MILTER \
	    -n "$_mr_name" -s "$_mr_name.rules" -l "$_mr_name.log" \
	    -p "$_mr_name.port"
	milter=inet:127.0.0.1:$port
	: >> "$_mr_name.log"
}

start_garbage() {
	spawn "$1" $MILTER_PY $GARBAGE_MILTER "$2" "$PWD/$1.sock"
	retry test -f "$1.sock.ready" ||
	    { cat "$1.err" >&2; atf_fail "garbage milter $1 did not start"; }
	chmod 666 "$1.sock"
	milter=unix:$PWD/$1.sock
}

_mta_qdir() {
	if [ "${MILTER_MTA:-petrel}" = postfix ]; then echo pfq; else echo q; fi
}

mta_held_count() {
	find "$(_mta_qdir)/hold" -type f 2>/dev/null | wc -l | tr -d ' '
}

mta_queue_count() {
	_q=$(_mta_qdir)
	find $_q/incoming $_q/active $_q/deferred $_q/hold $_q/maildrop \
	    -type f ! -name 'tmp.*' 2>/dev/null | wc -l | tr -d ' '
}

timed_chat() {
	_tc0=$(date +%s)
	chat "$1"
	_tc1=$(date +%s)
	[ $((_tc1 - _tc0)) -le "$2" ] ||
	    atf_fail "session $1 took $((_tc1 - _tc0)) s (at most $2 expected)"
}

send_ok() {
	msg_script s.in "$@"
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
}

expect_rcpts() {
	tr -d '\r' < "$(sink_msgs | tail -n 1)" |
	    sed -n 's/^X-Sink-Rcpt-To: //p' | sed 's/ ORCPT=[^ ]*//' |
	    sort > rcpts.got
	printf '%s\n' "$@" | sort > rcpts.want
	cmp -s rcpts.want rcpts.got ||
	    atf_fail "recipients at the sink: $(tr '\n' ' ' < rcpts.got), expected $(tr '\n' ' ' < rcpts.want)"
}

nothing_delivered() {
	sleep 0.5
	[ "$(sink_count)" = 0 ] || atf_fail "a message reached the sink"
	[ "$(mta_queue_count)" = 0 ] || atf_fail "a message is in the queue"
}

# restart_milter NAME [RULE...]: the milter NAME again (same socket) with
# new rules; its log is kept.
restart_milter() {
	[ -f "$1.pid" ] && kill -9 "$(cat "$1.pid")" 2>/dev/null
	rm -f "$1.sock.ready" "$1.pid"
	start_milter "$@"
}

atf_test_case connect_reject cleanup
connect_reject_head() {
	atf_set descr "a milter that rejects the connection: the greeting is 554, MAIL gets 550 5.7.1, nothing is queued; tempfail: greeting 220, MAIL gets 451 4.7.1 (as Postfix)"
	atf_set require.user unprivileged
}
connect_reject_body() {
	need_milter_python
	start_milter m "connect reject"
	setup "smtpd_milters = $milter"
	printf '%s\n' "EHLO client.test" "MAIL FROM:<sender@example.com>" \
	    "RCPT TO:<rcpt@example.net>" DATA QUIT > s.in
	chat s
	head -n 1 s.out | grep -q '^554 ' || atf_fail "greeting: $(head -n 1 s.out)"
	expect_reply s MAIL '^550 5\.7\.1 Command rejected$'
	expect_reply s RCPT '^5[0-9][0-9] '
	expect_reply s DATA '^5[0-9][0-9] '
	expect_reply s QUIT '^221 '
	test "$(seen m connect arg | wc -l)" = 1 || atf_fail "milter not asked at connect"
	test -z "$(seen m helo arg)" || atf_fail "milter was asked at HELO after rejecting the connection"

	restart_milter m "connect tempfail"
	chat s
	head -n 1 s.out | grep -q '^220 ' || atf_fail "greeting: $(head -n 1 s.out)"
	expect_reply s MAIL '^451 4\.7\.1 Service unavailable - try again later$'
	expect_reply s RCPT '^5[0-9][0-9] '
	nothing_delivered
	mta_log_clean
}
connect_reject_cleanup() {
	common_cleanup
}

atf_test_case helo_verdicts cleanup
helo_verdicts_head() {
	atf_set descr "a milter's reject or tempfail at HELO: EHLO is answered 250, the next MAIL gets 550 5.7.1 / 451 4.7.1 (as Postfix)"
	atf_set require.user unprivileged
}
helo_verdicts_body() {
	need_milter_python
	start_milter m "helo reject"
	setup "smtpd_milters = $milter"
	msg_script s.in sender@example.com rcpt@example.net
	chat s
	expect_reply s EHLO '^250[ -]'
	expect_reply s MAIL '^550 5\.7\.1 Command rejected$'
	restart_milter m "helo tempfail"
	chat s
	expect_reply s EHLO '^250[ -]'
	expect_reply s MAIL '^451 4\.7\.1 Service unavailable - try again later$'
	test "$(seen m helo arg | sort -u)" = client.test || atf_fail "milter did not see the HELO name"
	mta_log_clean
}
helo_verdicts_cleanup() {
	common_cleanup
}

atf_test_case mail_verdicts cleanup
mail_verdicts_head() {
	atf_set descr "MAIL FROM: reject 550 5.7.1, tempfail 451 4.7.1, a custom reply (multi-line) as the milter wrote it; the session goes on (a second MAIL is asked again)"
	atf_set require.user unprivileged
}
mail_verdicts_body() {
	need_milter_python
	start_milter m "envfrom=bad@example.com reject" \
	    "envfrom=soft@example.com tempfail" \
	    "envfrom=custom@example.com reply 553 5.7.9 first line|second line"
	setup "smtpd_milters = $milter"
	printf '%s\n' "EHLO client.test" "MAIL FROM:<bad@example.com>" \
	    "MAIL FROM:<soft@example.com>" "MAIL FROM:<custom@example.com>" \
	    "MAIL FROM:<good@example.com>" "QUIT" > s.in
	chat s
	expect_reply s "MAIL FROM:<bad" '^550 5\.7\.1 Command rejected$'
	expect_reply s "MAIL FROM:<soft" '^451 4\.7\.1 Service unavailable - try again later$'
	expect_reply s "MAIL FROM:<custom" '^553-5\.7\.9 first line\\n553 5\.7\.9 second line$'
	expect_reply s "MAIL FROM:<good" '^250 '
	seen m envfrom arg > from.seen
	printf '<bad@example.com>\n<soft@example.com>\n<custom@example.com>\n<good@example.com>\n' |
	    cmp -s - from.seen || { cat from.seen >&2; atf_fail "milter did not see each MAIL FROM"; }
	mta_log_clean
}
mail_verdicts_cleanup() {
	common_cleanup
}

atf_test_case rcpt_verdicts cleanup
rcpt_verdicts_head() {
	atf_set descr "RCPT TO: a recipient the milter rejects (550 5.7.1) or tempfails (451 4.7.1) or answers with its own reply is refused, the others are accepted and the message reaches the sink for them only"
	atf_set require.user unprivileged
}
rcpt_verdicts_body() {
	need_milter_python
	start_milter m "envrcpt=no@example.net reject" \
	    "envrcpt=later@example.net tempfail" \
	    "envrcpt=own@example.net reply 550 5.1.1 <own@example.net>: no such user"
	setup "smtpd_milters = $milter"
	msg_script s.in sender@example.com a@example.net no@example.net \
	    later@example.net own@example.net b@example.net
	chat s
	expect_reply s "RCPT TO:<a@" '^250 '
	expect_reply s "RCPT TO:<no@" '^550 5\.7\.1 Command rejected$'
	expect_reply s "RCPT TO:<later@" '^451 4\.7\.1 Service unavailable - try again later$'
	expect_reply s "RCPT TO:<own@" '^550 5\.1\.1 <own@example\.net>: no such user$'
	expect_reply s "RCPT TO:<b@" '^250 '
	expect_reply s "." '^250 2\.0\.0 Ok: queued as '
	wait_sink 1
	expect_rcpts "<a@example.net>" "<b@example.net>"
	test "$(seen m envrcpt arg | wc -l)" = 5 || atf_fail "milter not asked for each RCPT"
	mta_log_clean
}
rcpt_verdicts_cleanup() {
	common_cleanup
}

atf_test_case content_reject cleanup
content_reject_head() {
	atf_set descr "reject at DATA, at a header, at the end of headers, at a body chunk and at the end of message: 550 5.7.1 to the DATA command or the final dot; tempfail 451 4.7.1; nothing reaches the sink, the session goes on"
	atf_set require.user unprivileged
}
content_reject_body() {
	need_milter_python
	start_milter m "data reject"
	setup "smtpd_milters = $milter"
	msg_script s.in sender@example.com rcpt@example.net
	chat s
	expect_reply s DATA '^550 5\.7\.1 Command rejected$'
	for st in header=x-mark eoh body eom; do
		restart_milter m "$st reject"
		chat s
		expect_reply s DATA '^354 '
		expect_reply s . '^550 5\.7\.1 Command rejected$'
		expect_reply s QUIT '^221 '
		restart_milter m "$st tempfail"
		chat s
		expect_reply s . '^451 4\.7\.1 Service unavailable - try again later$'
	done
	nothing_delivered
	mta_log_clean
}
content_reject_cleanup() {
	common_cleanup
}

atf_test_case eom_verdicts cleanup
eom_verdicts_head() {
	atf_set descr "end of message: a custom multi-line reply is the reply to the dot; discard: 250 to the client and nothing delivered; accept: delivered"
	atf_set require.user unprivileged
}
eom_verdicts_body() {
	need_milter_python
	start_milter m "eom reply 554 5.7.0 Your message|looks like spam|go away"
	setup "smtpd_milters = $milter"
	msg_script s.in sender@example.com rcpt@example.net
	chat s
	expect_reply s . '^554-5\.7\.0 Your message\\n554-5\.7\.0 looks like spam\\n554 5\.7\.0 go away$'
	restart_milter m "eom discard"
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
	restart_milter m "eom accept"
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
	wait_sink 1
	sleep 0.5
	test "$(sink_count)" = 1 || atf_fail "the discarded message was delivered"
	grep -q 'discard' "$(mta_log)" || atf_fail "no discard in the log"
	mta_log_clean
}
eom_verdicts_cleanup() {
	common_cleanup
}

atf_test_case accept_early cleanup
accept_early_head() {
	atf_set descr "accept at MAIL FROM: the milter is not asked again for this message (no header, no end of message), the message is delivered unchanged; the next message in the same session is asked again"
	atf_set require.user unprivileged
}
accept_early_body() {
	need_milter_python
	start_milter m "envfrom=vip@example.com accept" "eom addheader X-Checked yes"
	setup "smtpd_milters = $milter"
	msg_script s.in vip@example.com rcpt@example.net
	sed '$d' s.in > s2.in
	sed -n '/^MAIL/,$p' s.in | sed 's/vip@/other@/' >> s2.in
	cp s2.in s.in
	chat s
	wait_sink 2
	set -- $(sink_msgs)
	grep -q '^X-Checked' $1 && atf_fail "accepted message went through the milter's eom"
	grep -q '^X-Checked: yes' $2 || atf_fail "second message not checked"
	test "$(seen m eom conn | wc -l)" = 1 || atf_fail "eom called $(seen m eom conn | wc -l) times"
	mta_log_clean
}
accept_early_cleanup() {
	common_cleanup
}

# The message of msg_script at the sink, its header part (up to the
# empty line), CR removed, envelope lines of the sink dropped.
sink_header() {
	tr -d '\r' < "$1" | sed '/^$/q' | grep -v '^X-Sink-'
}
sink_body() {
	tr -d '\r' < "$1" | sed '1,/^$/d'
}

atf_test_case header_mods cleanup
header_mods_head() {
	atf_set descr "addheader appends, insheader 0 puts a header first, chgheader changes the Nth of a name, chgheader with no value deletes it; the sink gets them in the right places"
	atf_set require.user unprivileged
}
header_mods_body() {
	need_milter_python
	start_milter m "eom addheader X-Added appended value" \
	    "eom insheader 0 X-First at the top" \
	    "eom chgheader X-Mark 2 changed two" \
	    "eom delheader X-Mark 1" \
	    "eom chgheader Subject 1 new subject"
	setup "smtpd_milters = $milter"
	send_ok sender@example.com rcpt@example.net
	wait_sink 1
	m1=$(sink_msgs)
	sink_header $m1 > hdr
	head -n 1 hdr | grep -qx 'X-First: at the top' ||
	    { cat hdr >&2; atf_fail "insheader 0 is not the first header"; }
	grep -x 'X-Mark: .*' hdr > marks
	echo 'X-Mark: changed two' | cmp -s - marks ||
	    { cat hdr >&2; atf_fail "X-Mark: not changed/deleted as asked"; }
	grep -qx 'Subject: new subject' hdr || atf_fail "Subject not changed"
	! grep -q 'milter test' hdr || atf_fail "old Subject kept"
	# appended: after the message's own headers
	last=$(grep -v '^$' hdr | tail -n 1)
	test "$last" = "X-Added: appended value" ||
	    { cat hdr >&2; atf_fail "addheader not last"; }
	# the original order of the others is kept
	grep -E '^(From|To|Subject|X-Mark):' hdr | cut -d: -f1 | tr '\n' ' ' > order
	test "$(cat order)" = "From To Subject X-Mark " ||
	    { cat hdr >&2; atf_fail "header order changed: $(cat order)"; }
	sink_body $m1 > body
	printf 'first line\nsecond line\n' | cmp -s - body || atf_fail "body changed"
	mta_log_clean
}
header_mods_cleanup() {
	common_cleanup
}

atf_test_case body_replace cleanup
body_replace_body() {
	need_milter_python
	start_milter m 'eom replacebody replaced line one\nreplaced line two\n'
	setup "smtpd_milters = $milter"
	send_ok sender@example.com rcpt@example.net
	wait_sink 1
	m1=$(sink_msgs)
	sink_body $m1 > body
	printf 'replaced line one\nreplaced line two\n' | cmp -s - body ||
	    { cat body >&2; atf_fail "body not replaced"; }
	grep -q '^Subject: milter test' $m1 || atf_fail "headers lost"
	# what the milter saw: the original body
	test "$(seen m eom body)" = "$(printf 'first line\r\nsecond line\r\n')" ||
	    atf_fail "milter saw the body as '$(seen m eom body)'"
	mta_log_clean
}
body_replace_head() {
	atf_set descr "replacebody: the sink gets the milter's body, the headers unchanged; the milter saw the original body with CR LF line ends"
	atf_set require.user unprivileged
}
body_replace_cleanup() {
	common_cleanup
}

atf_test_case rcpt_mods cleanup
rcpt_mods_head() {
	atf_set descr "addrcpt and delrcpt at the end of message: the sink's envelope has the added recipient and not the deleted one"
	atf_set require.user unprivileged
}
rcpt_mods_body() {
	need_milter_python
	start_milter m "eom addrcpt <added@example.net>" \
	    "eom delrcpt <gone@example.net>"
	setup "smtpd_milters = $milter"
	send_ok sender@example.com kept@example.net gone@example.net
	wait_sink 1
	expect_rcpts "<added@example.net>" "<kept@example.net>"
	mta_log_clean
}
rcpt_mods_cleanup() {
	common_cleanup
}

atf_test_case addrcpt_args cleanup
addrcpt_args_head() {
	atf_set descr "addrcpt with ESMTP arguments (SMFIR_ADDRCPT_PAR, NOTIFY=NEVER): the recipient is added and relayed with its NOTIFY, as Postfix does"
	atf_set require.user unprivileged
}
addrcpt_args_body() {
	need_milter_python
	start_milter m "eom addrcpt <withargs@example.net> NOTIFY=NEVER"
	setup "smtpd_milters = $milter"
	send_ok sender@example.com kept@example.net
	wait_sink 1
	expect_rcpts "<kept@example.net>" "<withargs@example.net> NOTIFY=NEVER"
	mta_log_clean
}
addrcpt_args_cleanup() {
	common_cleanup
}

atf_test_case chgfrom cleanup
chgfrom_head() {
	atf_set descr "chgfrom at the end of message, with RET=HDRS and without arguments: the sink's MAIL FROM is the new sender (with RET=HDRS)"
	atf_set require.user unprivileged
}
chgfrom_body() {
	need_milter_python
	start_milter m "eom chgfrom <new-sender@example.org> RET=HDRS"
	setup "smtpd_milters = $milter"
	send_ok sender@example.com rcpt@example.net
	wait_sink 1
	tr -d '\r' < $(sink_msgs) | grep -q '^X-Sink-Mail-From: <new-sender@example.org>.* RET=HDRS' ||
	    { cat $(sink_msgs) >&2; atf_fail "sender not changed with RET=HDRS"; }
	restart_milter m "eom chgfrom <plain@example.org>"
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
	wait_sink 2
	m2=$(sink_msgs | tail -n 1)
	tr -d '\r' < $m2 | grep -q '^X-Sink-Mail-From: <plain@example.org>' ||
	    { cat $m2 >&2; atf_fail "sender not changed"; }
	mta_log_clean
}
chgfrom_cleanup() {
	common_cleanup
}

atf_test_case quarantine cleanup
quarantine_head() {
	atf_set descr "quarantine: the client gets 250, the message is on hold (postq shows it held), not delivered; the log says why"
	atf_set require.user unprivileged
}
quarantine_body() {
	need_milter_python
	start_milter m "eom quarantine looks suspicious"
	setup "smtpd_milters = $milter"
	send_ok sender@example.com rcpt@example.net
	id=$(reply_to s . | sed -n 's/.*queued as \([0-9A-Za-z]*\).*/\1/p')
	WAIT_MAX=50 wait_for test "$(mta_held_count)" = 1 ||
	    atf_fail "message not in the hold queue"
	sleep 1
	test "$(sink_count)" = 0 || atf_fail "a quarantined message was delivered"
	if [ "${MILTER_MTA:-petrel}" = postfix ]; then
		/usr/sbin/postqueue -c $PWD/pf -p > q.out
	else
		$B/bin/postq > q.out
	fi
	grep -Eq "^$id!" q.out || { cat q.out >&2; atf_fail "postq does not show $id held"; }
	grep -q "$id: milter-hold: END-OF-MESSAGE from .*: milter triggers HOLD action; from=<sender@example.com> to=<rcpt@example.net>" "$(mta_log)" ||
	    { cat "$(mta_log)" >&2; atf_fail "no milter-hold log line"; }
	mta_log_clean
}
quarantine_cleanup() {
	common_cleanup
}

atf_test_case macros cleanup
macros_head() {
	atf_set descr "the macros the milter sees with the default milter_*_macros plus {client_addr}: j, {daemon_name}, v, _ at connect; {mail_addr} at MAIL; {rcpt_addr} at RCPT; i at DATA and at the end of message is the queue ID of the 250 reply"
	atf_set require.user unprivileged
}
macros_body() {
	need_milter_python
	start_milter m
	setup "smtpd_milters = $milter" \
	    "milter_connect_macros = j {daemon_name} {daemon_addr} v _ {client_addr}"
	send_ok sender@example.com rcpt@example.net
	id=$(reply_to s . | sed -n 's/.*queued as \([0-9A-Za-z]*\).*/\1/p')
	test "$(seen m connect 'macro:j')" = mx.example.test || atf_fail "j at connect: $(seen m connect macro:j)"
	test "$(seen m connect 'macro:{daemon_name}')" = mx.example.test || atf_fail "{daemon_name}"
	test "$(seen m connect 'macro:{client_addr}')" = 127.0.0.1 || atf_fail "{client_addr}: $(seen m connect 'macro:{client_addr}')"
	test "$(seen m connect 'macro:{daemon_addr}')" = 127.0.0.1 || atf_fail "{daemon_addr}"
	seen m connect 'macro:_' | grep -q '127\.0\.0\.1' || atf_fail "_: $(seen m connect macro:_)"
	test "$(seen m connect 'macro:v')" != - || atf_fail "no v"
	test "$(seen m connect addr)" = 127.0.0.1 || atf_fail "connect address: $(seen m connect addr)"
	test "$(seen m envfrom 'macro:{mail_addr}')" = sender@example.com || atf_fail "{mail_addr}: $(seen m envfrom 'macro:{mail_addr}')"
	test "$(seen m envrcpt 'macro:{rcpt_addr}')" = rcpt@example.net || atf_fail "{rcpt_addr}: $(seen m envrcpt 'macro:{rcpt_addr}')"
	test "$(seen m eom 'macro:i')" = "$id" || atf_fail "i at eom: '$(seen m eom macro:i)', queue ID $id"
	test "$(seen m data 'macro:i')" = "$id" || atf_fail "i at DATA: '$(seen m data macro:i)'"
	# no TLS, no login: none of their macros
	test "$(seen m helo 'macro:{tls_version}')" = - || atf_fail "{tls_version} without TLS"
	test "$(seen m envfrom 'macro:{auth_authen}')" = - || atf_fail "{auth_authen} without AUTH"
	mta_log_clean
}
macros_cleanup() {
	common_cleanup
}

# tls_setup [main.cf lines]: a certificate, the milter m (no rules),
# and setup with STARTTLS offered.
tls_setup() {
	make_cert
	start_milter m
	setup "smtpd_milters = $milter" \
	    "smtpd_tls_security_level = may" \
	    "smtpd_tls_cert_file = $PWD/cert.pem" \
	    "smtpd_tls_key_file = $PWD/key.pem" "$@"
}

atf_test_case macros_tls cleanup
macros_tls_head() {
	atf_set descr "after STARTTLS the milter sees {tls_version} and {cipher} at HELO (the EHLO after the handshake)"
	atf_set require.user unprivileged
	atf_set require.progs "swaks openssl"
}
macros_tls_body() {
	need_milter_python
	tls_setup
	atf_check -s exit:0 -o save:swaks.out -e ignore swaks --server 127.0.0.1:$port \
	    --tls --helo client.test --from sender@example.com --to rcpt@example.net
	seen m helo 'macro:{tls_version}' | grep -Eq '^TLSv1\.[23]$' ||
	    { seen m helo 'macro:{tls_version}' >&2; atf_fail "no {tls_version} after STARTTLS"; }
	seen m helo 'macro:{cipher}' | grep -q '[A-Z]' || atf_fail "no {cipher}"
	wait_sink 1
	mta_log_clean
}
macros_tls_cleanup() {
	common_cleanup
}

atf_test_case macros_auth cleanup
macros_auth_head() {
	atf_set descr "after SMTP AUTH (Dovecot, a private instance) the milter sees {auth_authen} and {auth_type} at MAIL FROM"
	atf_set require.user unprivileged
	atf_set require.progs "swaks openssl"
}
macros_auth_body() {
	need_milter_python
	tls_setup \
	    "smtpd_sasl_auth_enable = yes" "smtpd_sasl_type = dovecot" \
	    "smtpd_sasl_path = private/auth"
	if [ "${MILTER_MTA:-petrel}" = postfix ]; then
		dovecot_start $PWD/pfq/private/auth
	else
		dovecot_start $PWD/q/private/auth
	fi
	atf_check -s exit:0 -o save:swaks.out -e ignore swaks --server 127.0.0.1:$port \
	    --tls --helo client.test --auth PLAIN --auth-user alice \
	    --auth-password wonderland \
	    --from sender@example.com --to rcpt@example.net
	test "$(seen m envfrom 'macro:{auth_authen}')" = alice ||
	    atf_fail "{auth_authen} at MAIL: '$(seen m envfrom 'macro:{auth_authen}')'"
	test "$(seen m envfrom 'macro:{auth_type}')" = PLAIN ||
	    atf_fail "{auth_type} at MAIL: '$(seen m envfrom 'macro:{auth_type}')'"
	wait_sink 1
	mta_log_clean
}
macros_auth_cleanup() {
	dovecot_stop
	common_cleanup
}

atf_test_case inet_milter cleanup
inet_milter_head() {
	atf_set descr "an inet:127.0.0.1:PORT milter address works like a unix: one"
	atf_set require.user unprivileged
}
inet_milter_body() {
	need_milter_python
	start_milter_inet m "eom addheader X-Inet yes"
	setup "smtpd_milters = $milter"
	msg_script s.in sender@example.com rcpt@example.net
	chat s
	wait_sink 1
	grep -q '^X-Inet: yes' $(sink_msgs) || atf_fail "inet milter not applied"
	mta_log_clean
}
inet_milter_cleanup() {
	common_cleanup
}

atf_test_case two_milters cleanup
two_milters_head() {
	atf_set descr "two smtpd_milters in a row: both are asked, in order, and both edits applied; a reject by the first means the second is not asked; the second is shown the first one's header (as Postfix), the first does not see the second's"
	atf_set require.user unprivileged
}
two_milters_body() {
	need_milter_python
	start_milter one "eom addheader X-One first" "envrcpt=blocked@example.net reject"
	m1=$milter
	start_milter two "eom addheader X-Two second"
	m2=$milter
	setup "smtpd_milters = $m1, $m2"
	msg_script s.in sender@example.com rcpt@example.net blocked@example.net
	chat s
	expect_reply s "RCPT TO:<blocked" '^550 5\.7\.1 '
	wait_sink 1
	sink_header $(sink_msgs) > hdr
	grep -qx 'X-One: first' hdr && grep -qx 'X-Two: second' hdr ||
	    { cat hdr >&2; atf_fail "not both milters' headers"; }
	seen two eom headers | grep -q '"X-One", "first"' ||
	    { seen two eom headers >&2; atf_fail "the second milter did not see the first one's header"; }
	! seen one eom headers | grep -q 'X-Two' ||
	    atf_fail "the first milter saw the second one's header"
	test "$(seen two envrcpt arg)" = "<rcpt@example.net>" ||
	    atf_fail "second milter asked about a recipient the first rejected"
	mta_log_clean
}
two_milters_cleanup() {
	common_cleanup
}

atf_test_case two_milters_edits cleanup
two_milters_edits_head() {
	atf_set descr "two smtpd_milters: the first changes the Subject, deletes and inserts headers and replaces the body; the second sees the header as edited (in order) and the new body, and its own edits (made against that message) and the first one's both reach the sink"
	atf_set require.user unprivileged
}
two_milters_edits_body() {
	need_milter_python
	start_milter one "eom chgheader Subject 1 rewritten by one" \
	    "eom delheader X-Mark 1" "eom insheader 1 X-Ins one" \
	    'eom replacebody body from one\n'
	m1=$milter
	# the second's indices are those of the message it is shown:
	# X-Mark 1 is what was "X-Mark: two", index 2 is after X-Ins
	start_milter two "eom chgheader X-Mark 1 changed by two" \
	    "eom insheader 2 X-Two-Ins two" "eom addheader X-Two second"
	m2=$milter
	setup "smtpd_milters = $m1, $m2"
	send_ok sender@example.com rcpt@example.net
	wait_sink 1
	m=$(sink_msgs)
	# what the second milter saw
	seen two eom headers > h2
	grep -q '\["Subject", "rewritten by one"\]' h2 ||
	    { cat h2 >&2; atf_fail "the second milter did not see the new Subject"; }
	grep -q '"milter test"' h2 && { cat h2 >&2; atf_fail "the second milter saw the old Subject"; }
	grep -q '\["From", "<sender@example.com>"\], \["X-Ins", "one"\], \["To", "<rcpt@example.net>"\], \["Subject", "rewritten by one"\], \["X-Mark", "two"\]\]' h2 ||
	    { cat h2 >&2; atf_fail "the second milter saw the header in another order"; }
	want=$(printf 'body from one\r\n' | sha256sum | cut -d' ' -f1)
	test "$(seen two eom body_sha256)" = "$want" ||
	    atf_fail "the second milter saw the body '$(seen two eom body)'"
	test "$(seen one eom body)" = "$(printf 'first line\r\nsecond line\r\n')" ||
	    atf_fail "the first milter saw the body '$(seen one eom body)'"
	! grep -q '"X-Ins"' one.log || atf_fail "the first milter saw its own header"
	# the sink: both milters' edits
	sink_header $m | grep -v '^Received:\|^	\|^Message-ID:\|^Date:\|^$' > hdr
	printf '%s\n' 'From: <sender@example.com>' 'X-Ins: one' \
	    'X-Two-Ins: two' 'To: <rcpt@example.net>' \
	    'Subject: rewritten by one' 'X-Mark: changed by two' \
	    'X-Two: second' | cmp -s - hdr ||
	    { cat hdr >&2; atf_fail "the sink's header is not both milters' edits"; }
	sink_body $m > body
	printf 'body from one\n' | cmp -s - body ||
	    { cat body >&2; atf_fail "the body is not the first milter's"; }
	mta_log_clean
}
two_milters_edits_cleanup() {
	common_cleanup
}

atf_test_case non_smtpd cleanup
non_smtpd_head() {
	atf_set descr "non_smtpd_milters for sendmail mail: the milter sees the sender, recipient and message, its header reaches the sink; smtpd_milters are not used for it"
	atf_set require.user unprivileged
}
non_smtpd_body() {
	need_milter_python
	start_milter local "eom addheader X-Local-Milter yes"
	ml=$milter
	start_milter remote "eom addheader X-Smtpd-Milter yes"
	setup "non_smtpd_milters = $ml" "smtpd_milters = $milter"
	printf 'Subject: from sendmail\n\nhello\n' > msg
	mta_sendmail -f sender@example.com rcpt@example.net < msg ||
	    atf_fail "sendmail failed"
	wait_sink 1
	m1=$(sink_msgs)
	grep -q '^X-Local-Milter: yes' $m1 || atf_fail "non_smtpd milter not applied"
	! grep -q '^X-Smtpd-Milter' $m1 || atf_fail "smtpd milter applied to sendmail mail"
	# Postfix passes the addresses of local mail without <>; milters
	# take either.
	test "$(seen local envfrom arg | tr -d '<>')" = "sender@example.com" ||
	    atf_fail "non_smtpd milter saw sender '$(seen local envfrom arg)'"
	test "$(seen local envrcpt arg | tr -d '<>')" = "rcpt@example.net" ||
	    atf_fail "non_smtpd milter saw recipient '$(seen local envrcpt arg)'"
	mta_log_clean
}
non_smtpd_cleanup() {
	common_cleanup
}

atf_test_case non_smtpd_reject cleanup
non_smtpd_reject_head() {
	atf_set descr "a non_smtpd milter that rejects sendmail mail: not delivered to the recipient, the sender gets a bounce, nothing is left in the queue"
	atf_set require.user unprivileged
}
non_smtpd_reject_body() {
	need_milter_python
	start_milter local "eom reply 550 5.7.1 no local spam"
	setup "non_smtpd_milters = $milter"
	printf 'Subject: from sendmail\n\nhello\n' > msg
	mta_sendmail -f sender@example.com rcpt@example.net < msg ||
	    atf_fail "sendmail failed"
	wait_sink 1
	m1=$(sink_msgs)
	tr -d '\r' < $m1 > bounce
	grep -q '^X-Sink-Mail-From: <>' bounce || { cat bounce >&2; atf_fail "not a bounce"; }
	grep -q '^X-Sink-Rcpt-To: <sender@example.com>' bounce || atf_fail "bounce not to the sender"
	grep -q 'no local spam' bounce || atf_fail "bounce does not give the milter's reason"
	WAIT_MAX=50 wait_for test "$(mta_queue_count)" = 0 || atf_fail "message left in the queue"
	mta_log_clean
}
non_smtpd_reject_cleanup() {
	common_cleanup
}

# default_case ACTION REPLY_REGEX: with milter_default_action = ACTION and
# the milter at $milter broken, one transaction; the reply to the final
# dot (or the first refused command) matches REPLY_REGEX; then checks
# that the MTA still works with no milter in the way.
broken_session() {
	msg_script s.in sender@example.com rcpt@example.net
	chat s
}

atf_test_case default_down cleanup
default_down_head() {
	atf_set descr "milter_default_action with a milter that is not running: tempfail gives 451 4.7.1 to MAIL, accept delivers, reject gives 550 5.7.1, quarantine holds; no daemon dies"
	atf_set require.user unprivileged
}
default_down_body() {
	need_milter_python
	for action in tempfail accept reject quarantine; do
		mkdir $action
		(
			cd $action
			setup "smtpd_milters = unix:$PWD/nothing.sock" \
			    "milter_default_action = $action" \
			    "milter_connect_timeout = 2s"
			broken_session
			case $action in
			tempfail)
				expect_reply s MAIL '^451 4\.7\.1 Service unavailable - try again later$'
				;;
			reject)
				head -n 1 s.out | grep -q '^554 ' ||
				    atf_fail "greeting: $(head -n 1 s.out)"
				expect_reply s MAIL '^550 5\.5\.0 Service unavailable$'
				;;
			accept)
				expect_reply s . '^250 2\.0\.0 Ok: queued as '
				wait_sink 1
				;;
			quarantine)
				expect_reply s . '^250 2\.0\.0 Ok: queued as '
				WAIT_MAX=50 wait_for test "$(mta_held_count)" = 1 ||
				    atf_fail "quarantine: not held"
				;;
			esac
			mta_log_clean
			common_cleanup
		) || atf_fail "$action failed"
	done
}
default_down_cleanup() {
	for d in tempfail accept reject quarantine; do
		[ -d $d ] && (cd $d && common_cleanup)
	done
	true
}

# broken_milter_case NAME RULES...: the milter hangs or crashes as RULES
# say, milter_default_action tempfail and then accept; every reply within
# the timeouts; a new session afterwards works (the milter restarted).
atf_test_case hang cleanup
hang_head() {
	atf_set descr "a milter that hangs at MAIL FROM or at the end of message costs milter_command_timeout / milter_content_timeout (2 s) and gets milter_default_action: tempfail 451 4.7.1, accept delivers; the session and smtpd live on"
	atf_set require.user unprivileged
}
hang_body() {
	need_milter_python
	start_milter m "envfrom hang 30"
	setup "smtpd_milters = $milter" "milter_command_timeout = 2s" \
	    "milter_content_timeout = 2s" "milter_default_action = tempfail"
	msg_script s.in sender@example.com rcpt@example.net
	timed_chat s 10
	expect_reply s MAIL '^451 4\.7\.1 Service unavailable - try again later$'
	restart_milter m "eom hang 30"
	timed_chat s 10
	expect_reply s . '^451 4\.7\.1 Service unavailable - try again later$'
	test "$(seen m hang at | tail -n 1)" = eom || atf_fail "milter did not hang at eom"
	nothing_delivered
	# the same milter, a well-behaved one now: all works again
	restart_milter m "eom addheader X-After yes"
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
	wait_sink 1
	mta_log_clean
}
hang_cleanup() {
	common_cleanup
}

atf_test_case hang_accept cleanup
hang_accept_head() {
	atf_set descr "milter_default_action = accept with a milter that hangs at the end of message: the message is delivered after the timeout"
	atf_set require.user unprivileged
}
hang_accept_body() {
	need_milter_python
	start_milter m "eom addheader X-Never yes" "eom hang 30"
	setup "smtpd_milters = $milter" "milter_command_timeout = 2s" \
	    "milter_content_timeout = 2s" "milter_default_action = accept"
	send_ok sender@example.com rcpt@example.net
	test "$(seen m hang at)" = eom || atf_fail "the milter was not asked"
	wait_sink 1
	# Whether X-Never (sent before the hang) is applied is left open:
	# Postfix keeps the modifications it read before the timeout.
	grep -q '^Subject: milter test' $(sink_msgs) || atf_fail "message changed"
	mta_log_clean
}
hang_accept_cleanup() {
	common_cleanup
}

atf_test_case crash cleanup
crash_head() {
	atf_set descr "a milter that exits at RCPT or at the end of message: milter_default_action (tempfail: 451 4.7.1; reject: 550 5.7.1), nothing delivered, no daemon dies, a new session works"
	atf_set require.user unprivileged
}
crash_body() {
	need_milter_python
	start_milter m "envrcpt crash"
	setup "smtpd_milters = $milter" "milter_default_action = tempfail" \
	    "milter_command_timeout = 5s" "milter_content_timeout = 5s"
	msg_script s.in sender@example.com rcpt@example.net
	chat s
	expect_reply s RCPT '^451 4\.7\.1 Service unavailable - try again later$'
	restart_milter m "eom crash"
	chat s
	expect_reply s . '^451 4\.7\.1 Service unavailable - try again later$'
	nothing_delivered
	restart_milter m
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
	wait_sink 1
	mta_log_clean
}
crash_cleanup() {
	common_cleanup
}

atf_test_case crash_reject cleanup
crash_reject_head() {
	atf_set descr "milter_default_action = reject with a milter that exits at the end of message: 550 5.7.1 to the dot"
	atf_set require.user unprivileged
}
crash_reject_body() {
	need_milter_python
	start_milter m "eom crash"
	setup "smtpd_milters = $milter" "milter_default_action = reject"
	msg_script s.in sender@example.com rcpt@example.net
	chat s
	expect_reply s . '^550 5\.5\.0 Service unavailable$'
	nothing_delivered
	mta_log_clean
}
crash_reject_cleanup() {
	common_cleanup
}

atf_test_case garbage cleanup
garbage_head() {
	atf_set descr "a milter that sends a zero length, an unknown reply code, an oversized packet or a short packet (at connect and at the end of message): milter_default_action tempfail (451 4.7.1), no daemon dies, nothing delivered; then a good milter works"
	atf_set require.user unprivileged
}
garbage_body() {
	need_milter_python
	start_garbage g length
	setup "smtpd_milters = $milter" "milter_default_action = tempfail" \
	    "milter_command_timeout = 2s" "milter_content_timeout = 2s"
	for mode in length reply oversized short; do
		for st in connect eom; do
			kill -9 "$(cat g.pid)"
			rm -f g.sock.ready g.pid
			start_garbage g $mode:$st
			msg_script s.in sender@example.com rcpt@example.net
			chat s
			case $st in
			connect) expect_reply s MAIL '^451 4\.7\.1 Service unavailable - try again later$' ;;
			eom) expect_reply s . '^451 4\.7\.1 Service unavailable - try again later$' ;;
			esac
		done
	done
	nothing_delivered
	kill -9 "$(cat g.pid)"
	rm -f g.sock.ready g.pid g.sock
	start_milter g "eom addheader X-Good yes"
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
	wait_sink 1
	mta_log_clean
}
garbage_cleanup() {
	common_cleanup
}

atf_test_case connect_timeout cleanup
connect_timeout_head() {
	atf_set descr "a milter that accepts the connection but never answers the negotiation costs milter_connect_timeout (2 s) and gets milter_default_action (tempfail: 451 4.7.1 to MAIL)"
	atf_set require.user unprivileged
}
connect_timeout_body() {
	need_milter_python
	start_garbage g mute
	setup "smtpd_milters = $milter" "milter_default_action = tempfail" \
	    "milter_connect_timeout = 2s" "milter_command_timeout = 2s"
	msg_script s.in sender@example.com rcpt@example.net
	timed_chat s 10
	expect_reply s MAIL '^451 4\.7\.1 Service unavailable - try again later$'
	grep -q 'not answering the negotiation' g.err || atf_fail "the milter was not asked"
	mta_log_clean
}
connect_timeout_cleanup() {
	common_cleanup
}

atf_test_case protocol_version cleanup
protocol_version_head() {
	atf_set descr "milter_protocol = 2 and 4: a libmilter milter negotiates the older protocol and still rejects a recipient and adds a header"
	atf_set require.user unprivileged
}
protocol_version_body() {
	need_milter_python
	for v in 2 4; do
		mkdir p$v
		(
			cd p$v
			start_milter m "envrcpt=no@example.net reject" \
			    "eom addheader X-Protocol v$v"
			setup "smtpd_milters = $milter" "milter_protocol = $v"
			msg_script s.in sender@example.com rcpt@example.net no@example.net
			chat s
			expect_reply s "RCPT TO:<no@" '^550 5\.7\.1 Command rejected$'
			expect_reply s . '^250 2\.0\.0 Ok: queued as '
			wait_sink 1
			grep -q "^X-Protocol: v$v" $(sink_msgs) ||
			    atf_fail "protocol $v: header not added"
			mta_log_clean
			common_cleanup
		) || atf_fail "protocol $v failed"
	done
}
protocol_version_cleanup() {
	for d in p2 p4; do
		[ -d $d ] && (cd $d && common_cleanup)
	done
	true
}

atf_init_test_cases() {
	atf_add_test_case connect_reject
	atf_add_test_case helo_verdicts
	atf_add_test_case mail_verdicts
	atf_add_test_case rcpt_verdicts
	atf_add_test_case content_reject
	atf_add_test_case eom_verdicts
	atf_add_test_case accept_early
	atf_add_test_case header_mods
	atf_add_test_case body_replace
	atf_add_test_case rcpt_mods
	atf_add_test_case addrcpt_args
	atf_add_test_case chgfrom
	atf_add_test_case quarantine
	atf_add_test_case macros
	atf_add_test_case macros_tls
	atf_add_test_case macros_auth
	atf_add_test_case inet_milter
	atf_add_test_case two_milters
	atf_add_test_case two_milters_edits
	atf_add_test_case non_smtpd
	atf_add_test_case non_smtpd_reject
	atf_add_test_case default_down
	atf_add_test_case hang
	atf_add_test_case hang_accept
	atf_add_test_case crash
	atf_add_test_case crash_reject
	atf_add_test_case garbage
	atf_add_test_case connect_timeout
	atf_add_test_case protocol_version
}
