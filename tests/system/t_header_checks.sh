#! /usr/bin/env atf-sh
# header_checks and body_checks in cleanup: each action on a crafted
# message (cleanup under master, fed by cleanup-submit, the queue file
# read back with postcat), the SMTP reply through smtpd, a rejection of
# sendmail mail through pickup, body_checks_size_limit, and a malformed
# pattern reported with file:line.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr
. @SRCDIR@/tests/system/cleanup.subr

incoming_count() {
	find q/incoming -type f ! -name 'tmp.*' | wc -l | tr -d ' '
}

atf_test_case header_actions cleanup
header_actions_head() {
	atf_set descr "header_checks: WARN logs, IGNORE removes, REPLACE replaces, PREPEND inserts before, DUNNO/OK keep; a folded header is matched as one logical line; body lines are not header-checked"
	atf_set require.user unprivileged
}
header_actions_body() {
	cat > hc <<'T'
# header checks
/^X-Warn: (.*)/          WARN looked at $1
/^X-Drop:/               IGNORE
/^Subject: old (.*)/     REPLACE Subject: new $1
/^X-Fold: one two[[:blank:]]three$/ PREPEND X-Seen: folded header joined
/^X-Keep:/               DUNNO
/^X-Ok:/                 OK
T
	cl_instance "header_checks = regexp:$PWD/hc"
	printf 'Subject: old news\nX-Warn: yes\nX-Drop: me\n  and my continuation\nX-Fold: one\n two\n\tthree\nX-Keep: k\nX-Ok: o\n\nSubject: old body line\nX-Drop: body\n' > msg
	submit out -f alice -u 1000 msg bob@example.net || { cat out out.err >&2; atf_fail "not queued"; }
	id=$(qid out)
	$POSTCAT -h q/incoming/$id > hdr || atf_fail "postcat -h"
	grep -qx 'Subject: new news' hdr || { cat hdr >&2; atf_fail "Subject not replaced"; }
	! grep -q 'old news' hdr || atf_fail "old Subject kept"
	! grep -q 'X-Drop\|and my continuation' hdr || { cat hdr >&2; atf_fail "IGNOREd header (or its continuation) kept"; }
	grep -qx 'X-Warn: yes' hdr || atf_fail "WARN changed the header"
	grep -qx 'X-Keep: k' hdr && grep -qx 'X-Ok: o' hdr || atf_fail "DUNNO/OK header lost"
	# PREPEND: the new line just before the (folded, unchanged) field
	grep -A3 -x 'X-Seen: folded header joined' hdr > fold
	printf 'X-Seen: folded header joined\nX-Fold: one\n two\n\tthree\n' | cmp - fold ||
	    { cat hdr >&2; atf_fail "PREPEND not before the folded header"; }
	# the body is untouched: header_checks see headers only
	$POSTCAT -b q/incoming/$id > body
	printf 'Subject: old body line\nX-Drop: body\n' | cmp - body || { cat body >&2; atf_fail "body changed"; }
	wait_for in_log "cleanup\[[0-9]*\]: $id: warning: header X-Warn: yes from local; from=<alice> to=<bob@example.net>: looked at yes$" ||
	    { cat maillog >&2; atf_fail "no WARN log line"; }
	assert_log_clean
}
header_actions_cleanup() {
	stop_instance
}

atf_test_case header_reject cleanup
header_reject_head() {
	atf_set descr "header_checks REJECT: the message is refused with 5.7.1 and the table's text (a default text without one), nothing is queued, Postfix's log line; SMTP client attributes in the log line"
	atf_set require.user unprivileged
}
header_reject_body() {
	cat > hc <<'T'
/^Subject: .*viagra/     REJECT no pills here
/^X-Bare:/               REJECT
T
	cl_instance "header_checks = regexp:$PWD/hc"
	printf 'From: a@example.org\nSubject: cheap\n viagra\n\nbody\n' > msg
	submit out -f alice -u 1000 msg bob@example.net
	test $? = 5 || { cat out out.err >&2; atf_fail "not refused"; }
	grep -q '^5 5\.7\.1 - no pills here$' out || { cat out >&2; atf_fail "reply"; }
	test "$(incoming_count)" = 0 || atf_fail "something queued"
	wait_for in_log "cleanup\[[0-9]*\]: [0-9A-Z]*: reject: header Subject: cheap viagra from local; from=<alice> to=<bob@example.net>: 5\.7\.1 no pills here$" ||
	    { cat maillog >&2; atf_fail "no reject line"; }
	# no second, generic reject line
	test "$(grep -c 'reject:' maillog)" = 1 || { cat maillog >&2; atf_fail "two reject lines"; }
	printf 'X-Bare: 1\n\nbody\n' > msg2
	submit out2 -S -C client.example.org -I 192.0.2.1 -H helo.example.org \
	    -P ESMTP -f a@example.org msg2 b@example.net
	test $? = 5 || atf_fail "X-Bare not refused"
	grep -q '^5 5\.7\.1 - message content rejected$' out2 || { cat out2 >&2; atf_fail "default text"; }
	wait_for in_log ": reject: header X-Bare: 1 from client\.example\.org\[192\.0\.2\.1\]; from=<a@example\.org> to=<b@example\.net> proto=ESMTP helo=<helo\.example\.org>: 5\.7\.1 message content rejected$" ||
	    { cat maillog >&2; atf_fail "no SMTP reject line"; }
	test "$(incoming_count)" = 0 || atf_fail "something queued"
	assert_log_clean
}
header_reject_cleanup() {
	stop_instance
}

atf_test_case discard cleanup
discard_head() {
	atf_set descr "DISCARD (header and body): the client is told the message is queued, nothing is kept, the log says discard"
	atf_set require.user unprivileged
}
discard_body() {
	printf '/^X-Junk:/ DISCARD junk header\n' > hc
	printf '/^drop this line$/ DISCARD\n' > bc
	cl_instance "header_checks = regexp:$PWD/hc" "body_checks = pcre:$PWD/bc"
	printf 'X-Junk: yes\n\nbody\n' > msg
	submit out -f alice -u 1000 msg bob@example.net || { cat out >&2; atf_fail "not accepted"; }
	id=$(qid out)
	test -n "$id" || atf_fail "no queue ID"
	wait_for in_log "cleanup\[[0-9]*\]: $id: discard: header X-Junk: yes from local; from=<alice> to=<bob@example.net>: junk header$" ||
	    { cat maillog >&2; atf_fail "no discard line"; }
	printf 'Subject: b\n\nfirst\ndrop this line\r\nlast\n' > msg2
	submit out2 -f alice -u 1000 msg2 bob@example.net || { cat out2 >&2; atf_fail "not accepted"; }
	id2=$(qid out2)
	wait_for in_log "cleanup\[[0-9]*\]: $id2: discard: body drop this line from local; from=<alice> to=<bob@example.net>$" ||
	    { cat maillog >&2; atf_fail "no body discard line"; }
	test "$(incoming_count)" = 0 || atf_fail "a discarded message was queued"
	# the same without the trigger lines is queued
	printf 'Subject: c\n\nfirst\nlast\n' > msg3
	submit out3 -f alice -u 1000 msg3 bob@example.net || atf_fail "clean message refused"
	test "$(incoming_count)" = 1 || atf_fail "clean message not queued"
	assert_log_clean
}
discard_cleanup() {
	stop_instance
}

atf_test_case body_checks cleanup
body_checks_head() {
	atf_set descr "body_checks see body lines (CR LF or LF off, in any chunking), not headers: REJECT and WARN"
	atf_set require.user unprivileged
}
body_checks_body() {
	cat > bc <<'T'
/badword/                REJECT body says $0
/^warn me (.*)$/         WARN saw $1
T
	sed -i 's/\$0/it/' bc
	cl_instance "body_checks = regexp:$PWD/bc"
	# the word in a header only: queued
	printf 'Subject: badword\n\nclean\nwarn me please\r\n' > msg
	submit out -c 3 -f alice -u 1000 msg bob@example.net || { cat out >&2; atf_fail "header line body-checked"; }
	id=$(qid out)
	wait_for in_log "cleanup\[[0-9]*\]: $id: warning: body warn me please from local; from=<alice> to=<bob@example.net>: saw please$" ||
	    { cat maillog >&2; atf_fail "no body warning"; }
	# in the body, split over small writes, and as a last line without LF
	printf 'Subject: x\n\nline\nthis has a badword inside\nmore\n' > msg2
	submit out2 -c 5 -f alice -u 1000 msg2 bob@example.net
	test $? = 5 || { cat out2 >&2; atf_fail "body line not refused"; }
	grep -q '^5 5\.7\.1 - body says it$' out2 || { cat out2 >&2; atf_fail "reply"; }
	wait_for in_log ": reject: body this has a badword inside from local; from=<alice> to=<bob@example.net>: 5\.7\.1 body says it$" ||
	    { cat maillog >&2; atf_fail "no reject line"; }
	printf 'Subject: x\n\nline\nbadword' > msg3
	submit out3 -f alice -u 1000 msg3 bob@example.net
	test $? = 5 || { cat out3 >&2; atf_fail "unterminated last line not checked"; }
	# a body that starts without an empty line (no header at all)
	printf 'badword at the top\n' > msg4
	submit out4 -f alice -u 1000 msg4 bob@example.net
	test $? = 5 || { cat out4 >&2; atf_fail "first line of a headerless body not checked"; }
	test "$(incoming_count)" = 1 || atf_fail "wrong number queued"
	assert_log_clean
}
body_checks_cleanup() {
	stop_instance
}

atf_test_case size_limit cleanup
size_limit_head() {
	atf_set descr "body_checks_size_limit: a line that begins past the limit is not checked, one before it is"
	atf_set require.user unprivileged
}
size_limit_body() {
	printf '/^badword/ REJECT\n' > bc
	cl_instance "body_checks = regexp:$PWD/bc" "body_checks_size_limit = 100"
	# 10 lines of 10 bytes = 100 bytes, then the word at offset 100
	{ printf 'Subject: s\n\n'; for i in 0 1 2 3 4 5 6 7 8 9; do printf '123456789\n'; done; printf 'badword\n'; } > late
	submit out -f alice -u 1000 late bob@example.net || { cat out >&2; atf_fail "line past the limit checked"; }
	# at offset 90: checked
	{ printf 'Subject: s\n\n'; for i in 0 1 2 3 4 5 6 7 8; do printf '123456789\n'; done; printf 'badword\n'; } > early
	submit out2 -f alice -u 1000 early bob@example.net
	test $? = 5 || { cat out2 >&2; atf_fail "line within the limit not checked"; }
	test "$(incoming_count)" = 1 || atf_fail "wrong number queued"
	assert_log_clean
}
size_limit_cleanup() {
	stop_instance
}

atf_test_case hold cleanup
hold_head() {
	atf_set descr "HOLD (header and body): the message is committed into the hold queue, not incoming; postq shows it held (ID!); the log says hold"
	atf_set require.user unprivileged
}
hold_body() {
	printf '/^X-Hold: (.*)/ HOLD look at $1\n' > hc
	printf '/^quarantine me$/ HOLD\n' > bc
	cl_instance "header_checks = regexp:$PWD/hc" "body_checks = regexp:$PWD/bc"
	printf 'X-Hold: this\n\nbody\n' > msg
	submit out -f alice -u 1000 msg bob@example.net || { cat out >&2; atf_fail "not accepted"; }
	id=$(qid out)
	test -n "$(find q/hold -type f -name $id)" || atf_fail "$id not in hold/"
	test "$(incoming_count)" = 0 || atf_fail "held message in incoming/"
	wait_for in_log "cleanup\[[0-9]*\]: $id: hold: header X-Hold: this from local; from=<alice> to=<bob@example.net>: look at this$" ||
	    { cat maillog >&2; atf_fail "no hold line"; }
	$B/bin/postq -C $PWD/etc > pq || atf_fail "postq"
	grep -q "^$id!" pq || { cat pq >&2; atf_fail "postq does not show $id held"; }
	printf 'Subject: b\n\nquarantine me\n' > msg2
	submit out2 -f alice -u 1000 msg2 bob@example.net || atf_fail "not accepted"
	id2=$(qid out2)
	test -n "$(find q/hold -type f -name $id2)" || atf_fail "$id2 not in hold/"
	$POSTCAT -b $(find q/hold -type f -name $id2) | grep -qx 'quarantine me' || atf_fail "held content"
	in_log "$id2: hold: body quarantine me from local;" || atf_fail "no body hold line"
	test "$(incoming_count)" = 0 || atf_fail "held message in incoming/"
	assert_log_clean
}
hold_cleanup() {
	stop_instance
}

# mime_msg FILE: multipart/mixed with a text part and an attached message.
mime_msg() {
	cat > "$1" <<'M'
Subject: top
MIME-Version: 1.0
Content-Type: multipart/mixed;
	boundary="BND-1"

preamble line
--BND-1
Content-Type: text/plain
X-Part: p1

part body line
--BND-1
Content-Type: message/rfc822

Subject: nested secret
X-Nested: n

nested body line
--BND-1--
epilogue line
M
}

atf_test_case mime cleanup
mime_head() {
	atf_set descr "MIME: header_checks see the primary header only; mime_header_checks see Content-*/MIME-Version headers (primary too) and part headers; nested_header_checks the headers of an attached message; body_checks body lines, not part headers"
	atf_set require.user unprivileged
}
mime_body() {
	printf '/^Subject: nested/ REJECT primary table saw a nested header\n/^Content-Type:/ REJECT primary table saw a MIME header\n/^X-Part:/ REJECT primary table saw a part header\n/^Subject: top$/ WARN primary\n' > hc
	printf '/^Content-Type: multipart\\/mixed;[[:space:]]*boundary/ WARN mime top\n/^Content-Type: text\\/plain/ WARN mime part\n/^X-Part: p1$/ WARN part header\n' > mc
	printf '/^Subject: nested secret$/ WARN nested\n/^X-Part:/ WARN nested table saw a part header\n' > nc
	printf '/^(X-Part|X-Nested|Subject|Content-Type)/ WARN hdrseen\n/ line$/ WARN bodyseen\n' > bc
	cl_instance "header_checks = regexp:$PWD/hc" "mime_header_checks = regexp:$PWD/mc" \
	    "nested_header_checks = regexp:$PWD/nc" "body_checks = regexp:$PWD/bc"
	mime_msg msg
	submit out -c 7 -f alice -u 1000 msg bob@example.net || { cat out maillog >&2; atf_fail "refused"; }
	id=$(qid out)
	sfx="from local; from=<alice> to=<bob@example.net>"
	for want in "warning: header Subject: top $sfx: primary" \
	    "warning: header Content-Type: multipart/mixed;\\011boundary=\"BND-1\" $sfx: mime top" \
	    "warning: header Content-Type: text/plain $sfx: mime part" \
	    "warning: header X-Part: p1 $sfx: part header" \
	    "warning: header Subject: nested secret $sfx: nested" \
	    "warning: body preamble line $sfx: bodyseen" \
	    "warning: body part body line $sfx: bodyseen" \
	    "warning: body nested body line $sfx: bodyseen" \
	    "warning: body epilogue line $sfx: bodyseen"; do
		grep -qF "$id: $want" maillog || { cat maillog >&2; atf_fail "missing: $want"; }
	done
	! grep -q "hdrseen\|nested table saw" maillog || { cat maillog >&2; atf_fail "a header reached the wrong checks"; }
	# the content is unchanged
	$POSTCAT -b q/incoming/$id > body
	sed '1,/^$/d' msg | cmp - body || atf_fail "body changed"
	assert_log_clean
}
mime_cleanup() {
	stop_instance
}

atf_test_case nested_default cleanup
nested_default_head() {
	atf_set descr "mime_header_checks and nested_header_checks default to \$header_checks: a header of an attached message is refused by the header_checks table; the same text as a body line is not"
	atf_set require.user unprivileged
}
nested_default_body() {
	printf '/^Subject: nested secret/ REJECT nested refused\n' > hc
	cl_instance "header_checks = regexp:$PWD/hc"
	mime_msg msg
	submit out -f alice -u 1000 msg bob@example.net
	test $? = 5 || { cat out >&2; atf_fail "nested header not refused"; }
	grep -q '^5 5\.7\.1 - nested refused$' out || { cat out >&2; atf_fail "reply"; }
	# "Content-Type :" (blank before the colon) in the primary header
	sed 's/^Content-Type: multipart/Content-Type : multipart/' msg > msg1b
	submit out1b -f alice -u 1000 msg1b bob@example.net
	test $? = 5 || { cat out1b >&2; atf_fail "\"Content-Type :\" not read"; }
	printf 'Subject: plain\n\nSubject: nested secret\n' > msg2
	submit out2 -f alice -u 1000 msg2 bob@example.net || atf_fail "a body line was header-checked"
	test "$(incoming_count)" = 1 || atf_fail "wrong number queued"
	assert_log_clean
}
nested_default_cleanup() {
	stop_instance
}

atf_test_case lookup_error cleanup
lookup_error_head() {
	atf_set descr "a check table that fails to answer (pcre: over its match limit) defers the message (4.3.0) with a warning naming the parameter"
	atf_set require.user unprivileged
}
lookup_error_body() {
	printf '/^(a+)+$/ REJECT never\n' > bc
	cl_instance "body_checks = pcre:$PWD/bc"
	{ printf 'Subject: s\n\n'; printf 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n'; } > msg
	submit out -f alice -u 1000 msg bob@example.net
	test $? = 4 || { cat out >&2; atf_fail "not deferred"; }
	grep -q '^4 4\.3\.0 - body_checks map lookup problem$' out || { cat out >&2; atf_fail "reply"; }
	in_log "warning: [0-9A-Z]*: body_checks lookup error: pcre:$PWD/bc: " ||
	    { cat maillog >&2; atf_fail "no warning"; }
	test "$(incoming_count)" = 0 || atf_fail "queued"
	assert_log_clean
}
lookup_error_cleanup() {
	stop_instance
}

atf_test_case redirect cleanup
redirect_head() {
	atf_set descr "REDIRECT (header and body): every recipient, envelope and -t ones, is marked done and the one address is added; a value that is not one address is logged and ignored"
	atf_set require.user unprivileged
}
redirect_body() {
	printf '/^X-Redirect: yes/ REDIRECT admin@example.org\n/^X-Bad:/ REDIRECT a@x b@y\n' > hc
	printf '/^send to the boss$/ REDIRECT boss\n' > bc
	cl_instance "header_checks = regexp:$PWD/hc" "body_checks = regexp:$PWD/bc"
	printf 'X-Redirect: yes\nTo: carol@example.net\n\nbody\n' > msg
	submit out -x -f alice -u 1000 msg bob@example.net dave@example.net ||
	    { cat out >&2; atf_fail "not queued"; }
	id=$(qid out)
	$POSTCAT -e q/incoming/$id > env || atf_fail "postcat"
	for r in bob@example.net dave@example.net carol@example.net; do
		grep -qx "done_recipient: $r" env || { cat env >&2; atf_fail "$r not done"; }
	done
	test "$(grep -c '^recipient: ' env)" = 1 && grep -qx 'recipient: admin@example.org' env ||
	    { cat env >&2; atf_fail "not redirected"; }
	wait_for in_log "cleanup\[[0-9]*\]: $id: redirect: header X-Redirect: yes from local; from=<alice> to=<bob@example.net>: admin@example.org$" ||
	    { cat maillog >&2; atf_fail "no redirect line"; }
	# in the body, after the content: the bare name gets @$myorigin
	printf 'Subject: s\n\nsend to the boss\nmore\n' > msg2
	submit out2 -f alice -u 1000 msg2 bob@example.net || atf_fail "not queued"
	id2=$(qid out2)
	$POSTCAT -e q/incoming/$id2 > env2
	grep -qx 'done_recipient: bob@example.net' env2 && grep -qx 'recipient: boss@host.example.com' env2 ||
	    { cat env2 >&2; atf_fail "body REDIRECT"; }
	$POSTCAT -b q/incoming/$id2 | grep -qx more || atf_fail "content"
	printf 'X-Bad: 1\n\nbody\n' > msg3
	submit out3 -f alice -u 1000 msg3 bob@example.net || atf_fail "not queued"
	id3=$(qid out3)
	in_log "$id3: REDIRECT needs one address, not \"a@x b@y\"; ignored" ||
	    { cat maillog >&2; atf_fail "no warning"; }
	$POSTCAT -e q/incoming/$id3 | grep -qx 'recipient: bob@example.net' || atf_fail "recipient changed"
	assert_log_clean
}
redirect_cleanup() {
	stop_instance
}

atf_test_case unsupported cleanup
unsupported_head() {
	atf_set descr "an action Petrel does not do (STRIP, BCC; PREPEND in body_checks) is logged with the rule's file:line when cleanup opens the table, and with the message when it matches, and ignored: the message is queued unchanged"
	atf_set require.user unprivileged
}
unsupported_body() {
	printf '/^X-F:/ STRIP\n/^X-H:/ BCC x@example.org\n' > hc
	printf '/^body line$/ PREPEND X-Nope: 1\n' > bc
	cl_instance "header_checks = regexp:$PWD/hc" "body_checks = regexp:$PWD/bc"
	printf 'X-F: 1\nX-H: 2\n\nbody line\n' > msg
	submit out -f alice -u 1000 msg bob@example.net || { cat out >&2; atf_fail "not queued"; }
	id=$(qid out)
	in_log "$id: header_checks: action \"STRIP\" is not supported by Petrel (header X-F: 1); ignored" ||
	    { cat maillog >&2; atf_fail "no STRIP warning"; }
	# said once with file:line when cleanup opens the tables
	in_log "warning: $PWD/hc:1: header_checks: action \"STRIP\" is not supported by Petrel; the rule will be ignored" ||
	    { cat maillog >&2; atf_fail "no STRIP file:line warning"; }
	in_log "warning: $PWD/hc:2: header_checks: action \"BCC\" is not supported by Petrel; the rule will be ignored" ||
	    { cat maillog >&2; atf_fail "no BCC file:line warning"; }
	in_log "warning: $PWD/bc:1: body_checks: action \"PREPEND\" edits headers, not body lines; the rule will be ignored" ||
	    { cat maillog >&2; atf_fail "no body PREPEND file:line warning"; }
	in_log "$id: header_checks: action \"BCC\" is not supported by Petrel (header X-H: 2); ignored" ||
	    { cat maillog >&2; atf_fail "no BCC warning"; }
	in_log "$id: body_checks: action \"PREPEND\" is not supported by Petrel (body body line); ignored" ||
	    { cat maillog >&2; atf_fail "no body PREPEND warning"; }
	$POSTCAT -h q/incoming/$id | grep -qx 'X-F: 1' || atf_fail "header changed"
	$POSTCAT -b q/incoming/$id > body
	printf 'body line\n' | cmp - body || atf_fail "body changed"
	assert_log_clean
}
unsupported_cleanup() {
	stop_instance
}

atf_test_case bad_regexp cleanup
bad_regexp_head() {
	atf_set descr "a malformed pattern in header_checks or body_checks: petrel check names file:line, and cleanup says the same in the log"
	atf_set require.user unprivileged
}
bad_regexp_body() {
	printf '# fine\n/^X-A:/ WARN\n/^Subject: (a/ REJECT\n' > hc
	printf '/ok/ WARN\n\n/[z-a]/ REJECT\n' > bc
	mk_instance "header_checks = regexp:$PWD/hc"
	mcf "cleanup unix - n n - 0 cleanup"
	atf_check -s not-exit:0 -o ignore -e match:"$PWD/hc:3: bad regular expression" \
	    $PETREL -c $PWD/etc check
	mk_instance "body_checks = pcre:$PWD/bc"
	mcf "cleanup unix - n n - 0 cleanup"
	atf_check -s not-exit:0 -o ignore -e match:"$PWD/bc:3: bad regular expression" \
	    $PETREL -c $PWD/etc check
	# the daemon, started anyway, logs it and refuses no mail silently
	mk_instance "header_checks = regexp:$PWD/hc"
	mcf "cleanup unix - n n - 0 cleanup"
	start_master_unchecked
	printf 'Subject: s\n\nb\n' > msg
	submit out -t 3000 -f alice msg bob@example.net
	test $? != 0 || atf_fail "queued with a broken table"
	wait_for in_log "cleanup.*$PWD/hc:3: bad regular expression" ||
	    { cat maillog >&2; atf_fail "no file:line in the log"; }
	test "$(incoming_count)" = 0 || atf_fail "queued"
}
bad_regexp_cleanup() {
	stop_instance
}

atf_test_case smtp cleanup
smtp_head() {
	atf_set descr "through smtpd: a REJECT is smtpd's 550 5.7.1 with the table's text at the end of DATA; a REPLACEd header arrives replaced at the next hop (smtp-sink); a REDIRECTed one goes to the new address only"
	atf_set require.progs swaks
	atf_set require.user unprivileged
	atf_set timeout 60
}
smtp_body() {
	printf '/^X-Spam: yes/ REJECT spam is not welcome\n/^Subject: (.*)/ REPLACE Subject: [checked] $1\n/^X-Redirect:/ REDIRECT abuse@far.example.test\n' > hc
	mkdir -p saved
	start_sink s -d saved
	relay_instance "$(cat s.port)" "header_checks = regexp:$PWD/hc"
	swaks --server 127.0.0.1:$port --timeout 20 --helo client.example.test \
	    --from alice@client.example.test --to bob@far.example.test \
	    --header "X-Spam: yes" --body "b" > sw1.out 2>&1
	grep -q '<\*\* *550 5\.7\.1 spam is not welcome' sw1.out ||
	    { cat sw1.out >&2; atf_fail "no 550 5.7.1 reply"; }
	wait_for in_log "cleanup\[[0-9]*\]: [0-9A-Z]*: reject: header X-Spam: yes from unknown\[127\.0\.0\.1\]; from=<alice@client\.example\.test> to=<bob@far\.example\.test> proto=ESMTP helo=<client\.example\.test>: 5\.7\.1 spam is not welcome$" ||
	    { cat maillog >&2; atf_fail "no reject log line"; }
	swaks --server 127.0.0.1:$port --timeout 20 --helo client.example.test \
	    --from alice@client.example.test --to bob@far.example.test \
	    --header "Subject: hello" --body "b" > sw2.out 2>&1 ||
	    { cat sw2.out >&2; atf_fail "clean message refused"; }
	WAIT_MAX=100 wait_for stat_is s.stats messages 1 || atf_fail "not relayed"
	f=$(ls saved/* | head -n 1)
	grep -q '^Subject: \[checked\] hello' "$f" || { cat "$f" >&2; atf_fail "Subject not replaced"; }
	# REDIRECT: delivered to the new address only
	swaks --server 127.0.0.1:$port --timeout 20 --helo client.example.test \
	    --from alice@client.example.test --to bob@far.example.test,eve@far.example.test \
	    --header "X-Redirect: 1" --body "b" > sw3.out 2>&1 ||
	    { cat sw3.out >&2; atf_fail "redirected message refused"; }
	id=$(sed -n 's/.*250 2\.0\.0 Ok: queued as \([0-9A-Z]*\).*/\1/p' sw3.out | head -n 1)
	WAIT_MAX=100 wait_for in_log "$id: removed" || { cat maillog >&2; atf_fail "$id not delivered"; }
	in_log "$id: to=<abuse@far.example.test>, relay=.*status=sent" || { cat maillog >&2; atf_fail "not sent to the new address"; }
	! in_log "$id: to=<bob@far\\|$id: to=<eve@far" || { cat maillog >&2; atf_fail "sent to an original recipient"; }
	assert_log_clean
}
smtp_cleanup() {
	stop_instance
	stop_all
}

atf_test_case sendmail cleanup
sendmail_head() {
	atf_set descr "sendmail mail refused by header_checks: pickup parks it in corrupt/ with cleanup's reason, cleanup logs the reject; body_checks WARN on sendmail mail"
	atf_set require.user unprivileged
}
sendmail_body() {
	printf '/^Subject: forbidden/ REJECT local spam\n' > hc
	printf '/^watch (.*)/ WARN w $1\n' > bc
	mk_submit "header_checks = regexp:$PWD/hc" "body_checks = regexp:$PWD/bc"
	mcf_submit
	start_instance
	printf 'Subject: forbidden fruit\n\nbody\n' | $SENDMAIL -f alice@example.org bob@example.com ||
	    atf_fail "sendmail failed"
	wait_for in_log "cleanup\[[0-9]*\]: [0-9A-Z]*: reject: header Subject: forbidden fruit from local; from=<alice@example.org> to=<bob@example.com>: 5\.7\.1 local spam$" ||
	    { cat maillog >&2; atf_fail "no reject line"; }
	wait_for in_log "rejected by cleanup: 5\.7\.1 local spam; moved to corrupt/" ||
	    { cat maillog >&2; atf_fail "pickup did not park it"; }
	qcount_is incoming 0 || atf_fail "queued"
	printf 'Subject: fine\n\nwatch this\n' | $SENDMAIL -f alice@example.org bob@example.com ||
	    atf_fail "sendmail failed"
	wait_for in_log ": warning: body watch this from local; from=<alice@example.org> to=<bob@example.com>: w this$" ||
	    { cat maillog >&2; atf_fail "no body warning"; }
	wait_for qcount_is incoming 1 || atf_fail "clean message not queued"
	assert_log_clean
}
sendmail_cleanup() {
	stop_instance
}

atf_test_case filter_action cleanup
filter_action_head() {
	atf_set descr "FILTER in header_checks and body_checks: the message's content_filter attribute, after the content; the last FILTER wins over an earlier one and over the client's content_filter; a malformed one found at run time is logged and ignored"
	atf_set require.user unprivileged
}
filter_action_body() {
	printf '/^X-F1:/ FILTER smtp:[127.0.0.1]:10025\n' > hc
	printf '/^route me$/ FILTER scan:[127.0.0.1]:10026\n' > bc
	cl_instance "header_checks = regexp:$PWD/hc" "body_checks = regexp:$PWD/bc"
	# the client's filter alone
	printf 'X-Other: 1\n\nplain\n' > msg
	submit out -f alice -u 1000 -o relay:[10.0.0.1] msg bob@example.net ||
	    { cat out out.err >&2; atf_fail "not queued"; }
	$POSTCAT q/incoming/$(qid out) > pc
	grep -q 'content_filter=relay:\[10.0.0.1\]$' pc || { cat pc >&2; atf_fail "client filter not stored"; }
	# a header's FILTER replaces it
	printf 'X-F1: 1\n\nplain\n' > msg
	submit out -f alice -u 1000 -o relay:[10.0.0.1] msg bob@example.net ||
	    atf_fail "not queued"
	id=$(qid out)
	$POSTCAT q/incoming/$id > pc
	grep -q 'content_filter=smtp:\[127.0.0.1\]:10025$' pc || { cat pc >&2; atf_fail "header FILTER not stored"; }
	atf_check_equal 1 "$(grep -c content_filter= pc)"
	in_log "$id: filter: header X-F1: 1 from local; from=<alice> to=<bob@example.net>: smtp:\[127.0.0.1\]:10025" ||
	    { cat maillog >&2; atf_fail "no filter log line"; }
	# header then body: the body's comes last and wins
	printf 'X-F1: 1\n\nroute me\n' > msg
	submit out -f alice -u 1000 msg bob@example.net || atf_fail "not queued"
	$POSTCAT q/incoming/$(qid out) > pc
	grep -q 'content_filter=scan:\[127.0.0.1\]:10026$' pc || { cat pc >&2; atf_fail "body FILTER did not win"; }
	# no_header_body_checks (flag 8): no FILTER from the checks
	submit out -f alice -u 1000 -X 8 msg bob@example.net || atf_fail "not queued"
	$POSTCAT q/incoming/$(qid out) > pc
	! grep -q content_filter= pc || { cat pc >&2; atf_fail "checks ran despite no_header_body_checks"; }
	# a client filter that is not transport:nexthop is refused
	submit out -f alice -u 1000 -o nocolon msg bob@example.net &&
	    atf_fail "bad content_filter accepted"
	grep -q '^5 5.5.4 .*bad content_filter "nocolon": no colon' out ||
	    { cat out >&2; atf_fail "no clear refusal"; }
	assert_log_clean
}
filter_action_cleanup() {
	stop_instance
}

atf_test_case no_address_mappings cleanup
no_address_mappings_head() {
	atf_set descr "envelope flag NO_MAPPINGS (receive_override_options=no_address_mappings): no canonical rewriting of envelope and headers, no virtual alias expansion; completion with @myorigin stays"
	atf_set require.user unprivileged
}
no_address_mappings_body() {
	cl_instance "canonical_maps = inline:{ bob@example.net=robert@example.net, alice@host.example.com=a.smith@example.com }" \
	    "virtual_alias_maps = inline:{ carol@example.net=dave@example.net }"
	printf 'From: alice\nTo: bob@example.net\n\nhi\n' > msg
	submit out -f alice -u 1000 msg bob@example.net carol@example.net ||
	    atf_fail "not queued"
	$POSTCAT q/incoming/$(qid out) > pc
	grep -q 'robert@example.net' pc && grep -q 'dave@example.net' pc &&
	    grep -q 'a.smith@example.com' pc ||
	    { cat pc >&2; atf_fail "mappings not applied without the flag"; }
	submit out -f alice -u 1000 -X 16 msg bob@example.net carol@example.net ||
	    atf_fail "not queued"
	$POSTCAT q/incoming/$(qid out) > pc
	! grep -q 'robert@example.net\|dave@example.net\|a.smith' pc ||
	    { cat pc >&2; atf_fail "mappings applied with no_address_mappings"; }
	grep -q 'alice@host.example.com' pc && grep -q 'carol@example.net' pc ||
	    { cat pc >&2; atf_fail "addresses not completed or recipients lost"; }
	assert_log_clean
}
no_address_mappings_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case filter_action
	atf_add_test_case no_address_mappings
	atf_add_test_case smtp
	atf_add_test_case sendmail
	atf_add_test_case header_actions
	atf_add_test_case header_reject
	atf_add_test_case discard
	atf_add_test_case hold
	atf_add_test_case redirect
	atf_add_test_case mime
	atf_add_test_case nested_default
	atf_add_test_case body_checks
	atf_add_test_case size_limit
	atf_add_test_case unsupported
	atf_add_test_case lookup_error
	atf_add_test_case bad_regexp
}
