#! /usr/bin/env atf-sh
# The whole way in: sendmail -> postdrop -> maildrop/ -> pickup ->
# cleanup -> incoming/, under master, checked with postcat.  (No qmgr:
# mail rests in incoming/.)

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr

# find_marker / wait_queued MARKER: a file in incoming/ has the body line
# MARKER (now / within 5 s); its path in $Q.
find_marker() {
	for f in $(qfiles incoming); do
		if $POSTCAT -b $f 2>/dev/null | grep -qx "$1"; then
			Q=$f
			return 0
		fi
	done
	return 1
}
wait_queued() {
	wait_for find_marker "$1" || atf_fail "'$1' did not reach incoming/: \
maildrop: $(ls q/maildrop) corrupt: $(ls q/corrupt) log: $(tail -5 maillog)"
	find_marker "$1"
}

# has_lines FILE LINE...: every LINE is a whole line of FILE.
has_lines() {
	_f=$1
	shift
	for _l in "$@"; do
		grep -qxF -- "$_l" $_f || atf_fail "no line '$_l' in $_f: $(cat $_f)"
	done
}

# The services; a long wakeup, so that postdrop's trigger does the work.
start_submit() {
	PICKUP_WAKEUP=${PICKUP_WAKEUP:-60} mcf_submit
	start_instance
}

atf_test_case sendmail_rcpt cleanup
sendmail_rcpt_head() {
	atf_set descr "sendmail rcpt...: a complete queue file in incoming/ with the envelope and content sent"
	atf_set require.user unprivileged
}
sendmail_rcpt_body() {
	mk_submit "myhostname = mx.example.org"
	start_submit
	printf 'From: Alice <alice@example.org>\nSubject: hello\nMessage-ID: <m1@example.org>\n\nline 1\r\n..dots\n\nlast \303\251' > msg
	printf 'line 1\r\n..dots\n\nlast \303\251' > body
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -f alice@example.org \
	    bob@example.com 'Carol <carol@example.net>' dave < msg
	wait_queued "$(printf 'last \303\251')"
	qcount_is maildrop 0 || atf_fail "left in maildrop"
	atf_check -s exit:0 -o save:env $POSTCAT -e $Q
	has_lines env 'sender: alice@example.org' 'recipient: bob@example.com' \
	    'recipient: carol@example.net' 'recipient: dave@mx.example.org' \
	    'recipient_count: 3'
	atf_check -s exit:0 -o save:hdr $POSTCAT -h $Q
	has_lines hdr 'From: Alice <alice@example.org>' 'Subject: hello' \
	    'Message-ID: <m1@example.org>'
	grep -q "^Received: by mx.example.org (Petrel, from userid $(id -u))" hdr ||
	    atf_fail "no Received: $(cat hdr)"
	grep -q '^Date: ' hdr || atf_fail "no Date: added"
	atf_check -s exit:0 -o save:got.b $POSTCAT -b $Q
	cmp -s body got.b || atf_fail "body differs: $(od -c got.b | head)"
	id=${Q##*/}
	# Postfix's lines from Postfix's processes: uid= from pickup,
	# message-id= from cleanup; "queue active" is qmgr's (none here)
	in_log "pickup\[[0-9]*\]: $id: uid=$(id -u) from=<alice@example.org>" || atf_fail "no uid= line"
	in_log "cleanup\[[0-9]*\]: $id: message-id=<m1@example.org>" || atf_fail "no message-id= line"
	! in_log "$id: from=<alice@example.org>, size=" || atf_fail "cleanup logged queue active"
	assert_log_clean
}
sendmail_rcpt_cleanup() {
	stop_instance
}

atf_test_case sendmail_t cleanup
sendmail_t_head() {
	atf_set descr "sendmail -t: recipients from To/Cc/Bcc, Bcc removed, added to command-line recipients"
	atf_set require.user unprivileged
}
sendmail_t_body() {
	mk_submit "myhostname = mx.example.org"
	start_submit
	printf 'To: Bob <bob@example.com>, eve@example.com\nCc: carol@example.net\nBcc: secret@example.org\nSubject: t\n\nbody t\n' > msg
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -t -f alice@example.org < msg
	wait_queued 'body t'
	atf_check -s exit:0 -o save:env $POSTCAT -e $Q
	has_lines env 'recipient: bob@example.com' 'recipient: eve@example.com' \
	    'recipient: carol@example.net' 'recipient: secret@example.org' \
	    'recipient_count: 4'
	atf_check -s exit:0 -o save:hdr $POSTCAT -h $Q
	has_lines hdr 'To: Bob <bob@example.com>, eve@example.com' \
	    'Cc: carol@example.net' 'Subject: t'
	grep -qi '^bcc:' hdr && atf_fail "Bcc: kept: $(cat hdr)"
	# -t plus an argument: both
	printf 'To: bob@example.com\n\nbody t2\n' | $SENDMAIL -t extra@example.com ||
	    atf_fail sendmail
	wait_queued 'body t2'
	atf_check -s exit:0 -o save:env2 $POSTCAT -e $Q
	has_lines env2 'recipient: bob@example.com' 'recipient: extra@example.com'
	assert_log_clean
}
sendmail_t_cleanup() {
	stop_instance
}

atf_test_case options cleanup
options_head() {
	atf_set descr "-f -F -N -R -V reach the queue file in incoming/"
	atf_set require.user unprivileged
}
options_body() {
	mk_submit "myhostname = mx.example.org"
	start_submit
	printf 'Subject: opts\n\nbody opts\n' > msg
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -f alice -F 'Alice Liddell' \
	    -N failure,delay -R hdrs -V 'env-42' bob@example.com < msg
	wait_queued 'body opts'
	atf_check -s exit:0 -o save:env $POSTCAT -e $Q
	has_lines env 'sender: alice@mx.example.org' 'envid: env-42' 'ret: HDRS' \
	    'notify: FAILURE,DELAY' 'recipient: bob@example.com'
	atf_check -s exit:0 -o save:hdr $POSTCAT -h $Q
	has_lines hdr 'From: Alice Liddell <alice@mx.example.org>'
	printf 'Subject: opts2\n\nbody opts2\n' |
	    $SENDMAIL -f '<>' -N never -R full bob@example.com || atf_fail sendmail
	wait_queued 'body opts2'
	atf_check -s exit:0 -o save:env2 $POSTCAT -e $Q
	has_lines env2 'sender: ' 'ret: FULL' 'notify: NEVER'
	assert_log_clean
}
options_cleanup() {
	stop_instance
}

atf_test_case stopped cleanup
stopped_head() {
	atf_set descr "mail submitted while Petrel is stopped waits in maildrop/ (sendmail exits 0) and reaches incoming/ after petrel start"
	atf_set require.user unprivileged
}
stopped_body() {
	mk_submit
	PICKUP_WAKEUP=60 mcf_submit
	for i in 1 2 3; do
		printf 'Subject: %s\n\nwhile stopped %s\n' $i $i > msg
		atf_check -s exit:0 -o empty -e empty $SENDMAIL bob@example.com < msg
	done
	qcount_is maildrop 3 || atf_fail "not in maildrop"
	qcount_is incoming 0 || atf_fail "queued without Petrel?"
	# and after a start and a stop, too
	start_instance
	for i in 1 2 3; do wait_queued "while stopped $i"; done
	qcount_is maildrop 0 || atf_fail "left in maildrop"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	printf 'Subject: 4\n\nwhile stopped 4\n' | $SENDMAIL bob@example.com ||
	    atf_fail sendmail
	qcount_is maildrop 1 || atf_fail "not in maildrop"
	start_instance
	wait_queued "while stopped 4"
	assert_log_clean
}
stopped_cleanup() {
	stop_instance
}

atf_test_case bad_input cleanup
bad_input_head() {
	atf_set descr "oversized, looping, malformed, NUL-bearing, 1 MB-line, unreadable and damaged submissions each get their error; nothing crashes; other mail flows"
	atf_set require.user unprivileged
}
bad_input_body() {
	mk_submit "message_size_limit = 2000000"
	start_submit
	n=0
	# good MARK: a good message goes through after each bad one
	good() {
		n=$((n + 1))
		printf 'Subject: good\n\ngood %s\n' $n | $SENDMAIL bob@example.com ||
		    atf_fail "good message $n refused"
		wait_queued "good $n"
	}
	good
	{ printf 'Subject: big\n\n'; head -c 3000000 /dev/zero | tr '\0' 'b'; } > big
	atf_check -s exit:$EX_DATAERR -o empty -e match:'message is too big' \
	    $SENDMAIL -i bob@example.com < big
	good
	: > loop
	for i in $(seq 1 60); do echo "Received: from a$i by b$i" >> loop; done
	printf '\nloop\n' >> loop
	atf_check -s exit:$EX_DATAERR -o empty -e match:'too many hops' \
	    $SENDMAIL bob@example.com < loop
	good
	atf_check -s exit:$EX_NOUSER -o empty -e match:'bad recipient address syntax' \
	    $SENDMAIL 'bob@exa mple.com' < loop
	atf_check -s exit:$EX_NOUSER -o empty -e match:'bad sender address syntax' \
	    $SENDMAIL -f 'x@@y' bob@example.com < loop
	printf 'To: <unterminated@example.com\n\nx\n' > badto
	atf_check -s exit:$EX_NOUSER -o empty -e match:'bad recipient address in the message header' \
	    $SENDMAIL -t < badto
	good
	printf 'Subject: a\0b\n\nx\n' > nulh
	atf_check -s exit:$EX_DATAERR -o empty -e match:'NUL byte' $SENDMAIL bob@example.com < nulh
	# NUL in the body and a 1 MB line are accepted and kept byte for byte
	{ printf 'Subject: long\n\n'; head -c 1048576 /dev/zero | tr '\0' 'L'; printf '\nnul\0here\nend of long\n'; } > long
	{ head -c 1048576 /dev/zero | tr '\0' 'L'; printf '\nnul\0here\nend of long\n'; } > long.body
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -i bob@example.com < long
	wait_queued 'end of long'
	$POSTCAT -b $Q > got.b
	cmp -s long.body got.b || atf_fail "long message body differs"
	good
	# an unreadable and a damaged file in maildrop (Petrel stopped, so
	# that they are there when pickup looks)
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc stop
	printf 'Subject: u\n\nunreadable\n' | $SENDMAIL bob@example.com || atf_fail sendmail
	u=$(one_maildrop)
	chmod 000 $u
	# root (the chrooted variant) reads it anyway: no unreadable file then
	unreadable=y
	[ "$(id -u)" = 0 ] && unreadable=
	printf 'Subject: d\n\ndamaged\n' | $SENDMAIL bob@example.com || atf_fail sendmail
	d=$(qfiles maildrop | grep -v ${u##*/})
	head -c 200 $d > cut
	rm -f $d
	cp cut $d
	start_instance
	good
	wait_for qcount_is maildrop 0 || atf_fail "left in maildrop"
	[ -e q/corrupt/${d##*/} ] || atf_fail "not in corrupt/: $(ls q/corrupt)"
	if [ -n "$unreadable" ]; then
		[ -e q/corrupt/${u##*/} ] || atf_fail "not in corrupt/: $(ls q/corrupt)"
		in_log "${u##*/}: damaged queue file in maildrop: open .*Permission denied; moved to corrupt/" ||
		    atf_fail "no log line for the unreadable file"
	fi
	in_log "${d##*/}: damaged queue file in maildrop: .*; moved to corrupt/" ||
	    atf_fail "no log line for the damaged file"
	# nothing crashed, nothing was rejected late
	grep -E 'killed by signal|exited with status|petrel/(master|pickup|cleanup)\[[0-9]+\]: (panic|fatal)' maillog &&
	    atf_fail "a process died"
	grep -q 'rejected by cleanup' maillog && atf_fail "cleanup rejected what postdrop took"
	# every file in incoming/ is complete
	for f in $(qfiles incoming); do
		$POSTCAT $f > /dev/null || atf_fail "$f is not a valid queue file"
	done
	want=$((n + 1))
	[ -n "$unreadable" ] || want=$((want + 1))	# root queued it
	qcount_is incoming $want || atf_fail "expected $want queued messages, found $(qcount incoming)"
	assert_log_clean
}
bad_input_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case sendmail_rcpt
	atf_add_test_case sendmail_t
	atf_add_test_case options
	atf_add_test_case stopped
	atf_add_test_case bad_input
}
