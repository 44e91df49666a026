#! /usr/bin/env atf-sh
# The milter client with a real milter (tests/tools/smoke-milter.py on
# Debian's python3-milter, that is libmilter): smtpd_milters verdicts at
# RCPT and at the end of DATA, every modification as the next hop (an
# smtp-sink) receives the message, quarantine into hold/, the macros the
# milter was given, a milter that cannot be reached (default actions),
# and non_smtpd_milters for sendmail mail.  The broader scripted cases
# are in t_milter.sh (OpenDKIM and rspamd in t_milter_dkim, t_milter_rspamd).

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
SRCDIR=@SRCDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr

SMOKE=$SRCDIR/tests/tools/smoke-milter.py
PY=/usr/bin/python3

need_milter() {
	[ -x $PY ] || atf_skip "$PY is missing (Debian's python3)"
	$PY -c 'import Milter' 2>/dev/null ||
	    atf_skip "python3-milter is not installed for $PY (tools/install-deps)"
	[ ${#PWD} -lt 90 ] || atf_skip "work directory path too long for a UNIX socket"
}

# start_smoke: the milter on $PWD/m.sock, its records in m.log.
start_smoke() {
	spawn smoke $PY $SMOKE "unix:$PWD/m.sock" "$PWD/m.log"
	retry test -S m.sock || { cat smoke.err >&2; atf_fail "the milter did not start"; }
	: >> m.log
}

# send OUT SUBJECT RCPT[,RCPT...] [swaks args]: a message through smtpd.
send() {
	_o=$1 _s=$2 _r=$3
	shift 3
	swaks --server 127.0.0.1:$port --timeout 20 --helo client.example.test \
	    --from alice@client.example.test --to "$_r" \
	    --header "Subject: $_s" --body "the body" "$@" > "$_o" 2>&1
}

queued_id() {
	sed -n 's/.*250 2\.0\.0 Ok: queued as \([0-9A-Z]*\).*/\1/p' "$1" | head -n 1
}

atf_test_case verdicts cleanup
verdicts_head() {
	atf_set descr "smtpd_milters: a recipient the milter refuses gets its 550 alone, the others are accepted; reject, tempfail and discard at the end of DATA become the SMTP reply (discard: 250, nothing delivered); milter-reject and milter-discard are logged"
	atf_set require.progs swaks
	atf_set require.user unprivileged
	atf_set timeout 90
}
verdicts_body() {
	need_milter
	start_smoke
	mkdir -p saved
	start_sink s -d saved
	relay_instance "$(cat s.port)" "smtpd_milters = unix:$PWD/m.sock"
	send sw1 "plain" "refused@far.example.test,bob@far.example.test" ||
	    { cat sw1 >&2; atf_fail "message refused"; }
	grep -q '<\*\* *550 5\.7\.1 recipient refused by smoke' sw1 ||
	    { cat sw1 >&2; atf_fail "no 550 for the refused recipient"; }
	WAIT_MAX=100 wait_for stat_is s.stats messages 1 || atf_fail "not relayed"
	in_log "NOQUEUE: milter-reject: RCPT from unknown\[127\.0\.0\.1\]: 550 5\.7\.1 recipient refused by smoke; from=<alice@client\.example\.test> to=<refused@far\.example\.test> proto=ESMTP helo=<client\.example\.test>" ||
	    { cat maillog >&2; atf_fail "no milter-reject log line for RCPT"; }
	send sw2 "please reject" bob@far.example.test
	grep -q '<\*\* *554 5\.7\.1 rejected by smoke' sw2 || { cat sw2 >&2; atf_fail "no 554 at the end of DATA"; }
	wait_for in_log "[0-9A-Z]*: milter-reject: END-OF-MESSAGE from unknown\[127\.0\.0\.1\]: 554 5\.7\.1 rejected by smoke; from=<alice@client\.example\.test>" ||
	    { cat maillog >&2; atf_fail "no milter-reject log line"; }
	send sw3 "please tempfail" bob@far.example.test
	grep -q '<\*\* *451 4\.7\.1 ' sw3 || { cat sw3 >&2; atf_fail "no 451 4.7.1"; }
	send sw4 "please discard" bob@far.example.test || { cat sw4 >&2; atf_fail "discard not answered with 250"; }
	id=$(queued_id sw4)
	test -n "$id" || { cat sw4 >&2; atf_fail "no queue ID in the 250 reply"; }
	wait_for in_log "$id: milter-discard: END-OF-MESSAGE from unknown\[127\.0\.0\.1\]: milter triggers DISCARD action" ||
	    { cat maillog >&2; atf_fail "no milter-discard log line"; }
	sleep 1
	stat_is s.stats messages 1 || atf_fail "a refused or discarded message was delivered"
	test "$(qcount incoming)$(qcount active)$(qcount deferred)" = 000 || atf_fail "something left in the queue"
	assert_log_clean
}
verdicts_cleanup() {
	stop_instance
	stop_all
}

atf_test_case edits cleanup
edits_head() {
	atf_set descr "smtpd_milters: header added, inserted at 0, changed and deleted, body replaced, recipient added and deleted: the next hop receives the edited message, for the recipients the milter left; the milter got the i, j, {mail_addr}, {rcpt_addr} macros"
	atf_set require.progs swaks
	atf_set require.user unprivileged
	atf_set timeout 90
}
edits_body() {
	need_milter
	start_smoke
	mkdir -p saved
	start_sink s -d saved
	relay_instance "$(cat s.port)" "smtpd_milters = unix:$PWD/m.sock"
	send sw1 "edit replbody" "bob@far.example.test,gone@far.example.test" \
	    --add-header "X-Remove: me" || { cat sw1 >&2; atf_fail "refused"; }
	id=$(queued_id sw1)
	WAIT_MAX=100 wait_for in_log "$id: removed" || { cat maillog >&2; atf_fail "$id not delivered"; }
	in_log "$id: to=<bob@far.example.test>, relay=.*status=sent" || { cat maillog >&2; atf_fail "bob not sent"; }
	in_log "$id: to=<added@far.example.test>, relay=.*status=sent" || { cat maillog >&2; atf_fail "added recipient not sent"; }
	! in_log "$id: to=<gone@far" || { cat maillog >&2; atf_fail "deleted recipient sent"; }
	f=$(ls saved/* | head -n 1)
	tr -d '\r' < "$f" > got
	grep -qx 'X-Smoke: yes' got || { cat got >&2; atf_fail "added header missing"; }
	grep -qx 'Subject: \[smoke\] edit replbody' got || { cat got >&2; atf_fail "Subject not changed"; }
	! grep -q '^Subject: edit' got || { cat got >&2; atf_fail "old Subject kept"; }
	! grep -q '^X-Remove' got || { cat got >&2; atf_fail "deleted header kept"; }
	# inserted at 0: the first header of the message, as in Postfix
	grep -v '^X-Sink-' got | head -n 1 | grep -qx 'X-First: 1' || { cat got >&2; atf_fail "X-First not first"; }
	sed '1,/^$/d' got > body
	printf 'replaced body\n' | cmp -s - body || { cat got >&2; atf_fail "body not replaced"; }
	grep -q "^eoh i=$id$" m.log || { cat m.log >&2; atf_fail "no i macro at the end of header"; }
	grep -q '^connect j=mx.example.test$' m.log || { cat m.log >&2; atf_fail "no j macro"; }
	grep -q '^mail {mail_addr}=alice@client.example.test$' m.log || { cat m.log >&2; atf_fail "no {mail_addr}"; }
	grep -q '^rcpt {rcpt_addr}=gone@far.example.test$' m.log || { cat m.log >&2; atf_fail "no {rcpt_addr}"; }
	assert_log_clean
}
edits_cleanup() {
	stop_instance
	stop_all
}

atf_test_case quarantine cleanup
quarantine_head() {
	atf_set descr "smtpd_milters: quarantine puts the message into hold/ with the reason logged, and it is not delivered"
	atf_set require.progs swaks
	atf_set require.user unprivileged
	atf_set timeout 60
}
quarantine_body() {
	need_milter
	start_smoke
	start_sink s
	relay_instance "$(cat s.port)" "smtpd_milters = unix:$PWD/m.sock"
	send sw1 "quarantine me" bob@far.example.test || { cat sw1 >&2; atf_fail "refused"; }
	id=$(queued_id sw1)
	wait_for in_log "$id: milter-hold: END-OF-MESSAGE from unknown\[127\.0\.0\.1\]: milter triggers HOLD action; from=<alice@client\.example\.test> to=<bob@far\.example\.test> proto=ESMTP helo=<client\.example\.test>: smoke says hold" ||
	    { cat maillog >&2; atf_fail "no milter-hold line"; }
	wait_for qcount_is hold 1 || atf_fail "not in hold/"
	stat_is s.stats messages 0 || atf_fail "delivered"
	assert_log_clean
}
quarantine_cleanup() {
	stop_instance
	stop_all
}

atf_test_case unreachable cleanup
unreachable_head() {
	atf_set descr "a milter nobody listens for: milter_default_action tempfail answers MAIL with 451 4.7.1 and logs the milter's name; reject greets with 554; a per-milter default_action=accept in braces wins and lets the mail through"
	atf_set require.progs swaks
	atf_set require.user unprivileged
	atf_set timeout 90
}
unreachable_body() {
	mkdir -p saved
	start_sink s -d saved
	relay_instance "$(cat s.port)" "smtpd_milters = unix:$PWD/nobody.sock"
	send sw1 "hello" bob@far.example.test
	grep -q '<\*\* *451 4\.7\.1 Service unavailable - try again later' sw1 ||
	    { cat sw1 >&2; atf_fail "no 451 4.7.1"; }
	wait_for in_log "warning: milter unix:$PWD/nobody.sock: cannot connect: .*; default action tempfail" ||
	    { cat maillog >&2; atf_fail "no warning naming the milter"; }
	stop_instance
	relay_instance "$(cat s.port)" "smtpd_milters = unix:$PWD/nobody.sock" \
	    "milter_default_action = reject"
	send sw2 "hello" bob@far.example.test
	grep -q '<\*\* *554 mx\.example\.test ESMTP not accepting connections' sw2 ||
	    { cat sw2 >&2; atf_fail "no 554 greeting"; }
	stop_instance
	relay_instance "$(cat s.port)" \
	    "smtpd_milters = { unix:$PWD/nobody.sock, default_action = accept, connect_timeout = 5s }"
	send sw3 "hello" bob@far.example.test || { cat sw3 >&2; atf_fail "refused with default_action=accept"; }
	WAIT_MAX=100 wait_for stat_is s.stats messages 1 || atf_fail "not relayed"
	assert_log_clean
}
unreachable_cleanup() {
	stop_instance
	stop_all
}

atf_test_case bad_config cleanup
bad_config_head() {
	atf_set descr "a malformed milter address or setting is refused at start with file:line"
	atf_set require.user unprivileged
}
bad_config_body() {
	mk_instance "smtpd_milters = inet:127.0.0.1"
	mcf "cleanup unix - n n - 0 cleanup"
	atf_check -s not-exit:0 -o ignore -e match:"$PWD/etc/main.cf:5: .*smtpd_milters.*inet:host:port" \
	    $PETREL -c $PWD/etc check
	mk_instance "non_smtpd_milters = { unix:/x, timeout=3 }"
	mcf "cleanup unix - n n - 0 cleanup"
	atf_check -s not-exit:0 -o ignore -e match:"$PWD/etc/main.cf:5: .*unknown milter setting \"timeout\"" \
	    $PETREL -c $PWD/etc check
	mk_instance "milter_default_action = maybe"
	mcf "cleanup unix - n n - 0 cleanup"
	atf_check -s not-exit:0 -o ignore -e match:"$PWD/etc/main.cf:5: .*milter_default_action" \
	    $PETREL -c $PWD/etc check
}
bad_config_cleanup() {
	:
}

atf_test_case non_smtpd cleanup
non_smtpd_head() {
	atf_set descr "non_smtpd_milters: sendmail mail goes through the milter in cleanup (its edits are in the queued message, the milter saw the local client); a reject queues the message with every recipient done and a bounce log with the milter's reason, for qmgr to bounce (as Postfix)"
	atf_set require.user unprivileged
	atf_set timeout 60
}
non_smtpd_body() {
	need_milter
	start_smoke
	mk_submit "non_smtpd_milters = unix:$PWD/m.sock"
	mcf_submit
	start_instance
	printf 'Subject: edit\nX-Remove: x\n\nbody\n' | $SENDMAIL -f alice@example.org bob@example.com gone@far.example.test ||
	    atf_fail "sendmail failed"
	wait_for qcount_is incoming 1 || { cat maillog >&2; atf_fail "not queued"; }
	f=$(qfiles incoming)
	$POSTCAT -h "$f" > hdr
	grep -qx 'X-Smoke: yes' hdr || { cat hdr >&2; atf_fail "added header missing"; }
	grep -qx 'Subject: \[smoke\] edit' hdr || { cat hdr >&2; atf_fail "Subject not changed"; }
	! grep -q '^X-Remove' hdr || { cat hdr >&2; atf_fail "header not deleted"; }
	$POSTCAT -e "$f" | grep -qx 'recipient: added@far.example.test' || { $POSTCAT -e "$f" >&2; atf_fail "recipient not added"; }
	grep -q '^connect host=localhost$' m.log || { cat m.log >&2; atf_fail "milter did not see the local client"; }
	printf 'Subject: reject\n\nbody\n' | $SENDMAIL -f alice@example.org bob@example.com ||
	    atf_fail "sendmail failed"
	wait_for in_log "milter-reject: END-OF-MESSAGE from localhost\[127\.0\.0\.1\]: 554 5\.7\.1 rejected by smoke; from=<alice@example.org>" ||
	    { cat maillog >&2; atf_fail "not rejected"; }
	id=$(sed -n 's/.*cleanup\[[0-9]*\]: \([0-9A-Z]*\): milter-reject: .*/\1/p' maillog | head -n 1)
	wait_for qcount_is incoming 2 || { cat maillog >&2; atf_fail "rejected message not queued for its bounce"; }
	f=$(qfiles incoming | grep "/$id\$")
	$POSTCAT -e "$f" | grep -qx 'done_recipient: bob@example.com' || { $POSTCAT -e "$f" >&2; atf_fail "recipient not done"; }
	b=$(find q/bounce -type f -name "$id")
	test -n "$b" && grep -q 'message rejected by a milter: rejected by smoke' "$b" ||
	    { ls -R q/bounce >&2; atf_fail "no bounce log with the reason"; }
	assert_log_clean
}
non_smtpd_cleanup() {
	stop_instance
	stop_all
}

atf_test_case no_milters cleanup
no_milters_head() {
	atf_set descr "receive_override_options = no_milters: an smtpd service with it accepts mail the unreachable smtpd_milters would tempfail on the main port; pickup with it queues sendmail mail without the non_smtpd_milters edits"
	atf_set require.progs swaks
	atf_set require.user unprivileged
	atf_set timeout 90
}
no_milters_body() {
	need_milter
	mkdir -p saved
	start_sink s -d saved
	relay_instance "$(cat s.port)" "smtpd_milters = unix:$PWD/nobody.sock"
	stop_instance
	p2=$(free_port)
	echo "$p2 inet n - n - - smtpd -o receive_override_options=no_milters" >> etc/master.cf
	start_instance
	send sw1 "main port" bob@far.example.test
	grep -q '<\*\* *451 4\.7\.1' sw1 || { cat sw1 >&2; atf_fail "the main port did not tempfail"; }
	port=$p2 send sw2 "no milters" bob@far.example.test ||
	    { cat sw2 >&2; atf_fail "refused on the no_milters service"; }
	WAIT_MAX=100 wait_for stat_is s.stats messages 1 || atf_fail "not relayed"
	stop_instance
	# pickup: the milter's edits only without the option.
	start_smoke
	mk_submit "non_smtpd_milters = unix:$PWD/m.sock"
	mcf_submit
	start_instance
	printf 'Subject: edit with\n\nbody\n' | $SENDMAIL -f alice@example.org bob@example.com ||
	    atf_fail "sendmail failed"
	wait_for qcount_is incoming 1 || { cat maillog >&2; atf_fail "not queued"; }
	$POSTCAT -h "$(qfiles incoming)" | grep -qx 'X-Smoke: yes' ||
	    atf_fail "non_smtpd_milters did not run without the option"
	stop_instance
	rm -rf q/incoming/*
	mcf "pickup unix-dgram n - n 1 1 pickup -o receive_override_options=no_milters" \
	    "cleanup unix n - n - 0 cleanup"
	start_instance
	printf 'Subject: edit without\n\nbody\n' | $SENDMAIL -f alice@example.org bob@example.com ||
	    atf_fail "sendmail failed"
	wait_for qcount_is incoming 1 || { cat maillog >&2; atf_fail "not queued"; }
	$POSTCAT -h "$(qfiles incoming)" > hdr
	grep -qx 'Subject: edit without' hdr || { cat hdr >&2; atf_fail "not the second message"; }
	! grep -q '^X-Smoke' hdr || { cat hdr >&2; atf_fail "the milter ran despite no_milters"; }
}
no_milters_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case verdicts
	atf_add_test_case edits
	atf_add_test_case quarantine
	atf_add_test_case unreachable
	atf_add_test_case bad_config
	atf_add_test_case non_smtpd
	atf_add_test_case no_milters
}
