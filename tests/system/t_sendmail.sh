#! /usr/bin/env atf-sh
# sendmail and postdrop without a running mail system: what lands in
# maildrop/ (envelope and content, checked with postcat), the options,
# and every error with its exit status.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr

no_tmp_files() {
	[ -z "$(find q -name 'tmp.*' 2>/dev/null)" ]
}

# check_content FILE WANT: the content of queue file FILE is WANT's bytes.
# (postcat -h is the header up to the first empty line, -b what follows
# it; the empty line itself is LF or CR LF.)
check_content() {
	$POSTCAT -h "$1" > got.h || atf_fail "postcat -h $1"
	$POSTCAT -b "$1" > got.b || atf_fail "postcat -b $1"
	if cmp -s "$2" got.h; then
		# no empty line: everything is header
		[ -s got.b ] && atf_fail "body without header/body separator"
		return 0
	fi
	{ cat got.h; printf '\n'; cat got.b; } > got.all
	{ cat got.h; printf '\r\n'; cat got.b; } > got.all2
	cmp -s "$2" got.all || cmp -s "$2" got.all2 ||
	    atf_fail "content of $1 differs from $2: $(cmp "$2" got.all 2>&1)"
}

atf_test_case recipients
recipients_head() {
	atf_set descr "sendmail rcpt...: envelope and content in maildrop/ as sent"
	atf_set require.user unprivileged
}
recipients_body() {
	mk_submit
	printf 'From: Alice <alice@example.org>\nSubject: hello\n\nline 1\n..two dots stay\n' > msg
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -f alice@example.org \
	    bob@example.com 'Carol <carol@example.net>, dave' '"john doe"@example.org' < msg
	f=$(one_maildrop)
	atf_check -s exit:0 -o save:env -e empty $POSTCAT -e $f
	for l in 'sender: alice@example.org' 'recipient: bob@example.com' \
	    'recipient: carol@example.net' 'recipient: dave' \
	    'recipient: john doe@example.org' "attribute: uid=$(id -u)" \
	    'recipient_count: 4'; do
		grep -qx "$l" env || atf_fail "no '$l' in: $(cat env)"
	done
	grep -q '^attribute: extract\|^attribute: full_name\|^notify\|^envid\|^ret:' env && atf_fail "unexpected: $(cat env)"
	check_content $f msg
	# readable by the mail system only through the directory; never writable
	atf_check -s exit:0 -o inline:'444\n' stat -c %a $f
	no_tmp_files || atf_fail "temporary file left"
	# the default sender is the login name
	rm -f $f
	printf 'Subject: x\n\nx\n' | $SENDMAIL bob@example.com || atf_fail "send"
	atf_check -s exit:0 -o match:"^sender: $(id -un)\$" $POSTCAT -e $(one_maildrop)
}

atf_test_case options
options_head() {
	atf_set descr "-f -F -N -R -V -t -r reach the maildrop file"
	atf_set require.user unprivileged
}
options_body() {
	mk_submit
	printf 'To: bob@example.com\nBcc: secret@example.com\nSubject: s\n\nbody\n' > msg
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -t -f '<alice@example.org>' \
	    -F 'Alice Liddell' -N success,delay -R hdrs -V 'env+1' < msg
	f=$(one_maildrop)
	atf_check -s exit:0 -o save:env -e empty $POSTCAT -e $f
	for l in 'sender: alice@example.org' 'attribute: full_name=Alice Liddell' \
	    'attribute: extract=yes' 'attribute: notify=5' 'ret: HDRS' \
	    'envid: env+2B1' 'recipient_count: 0'; do
		grep -qx "$l" env || atf_fail "no '$l' in: $(cat env)"
	done
	check_content $f msg
	rm -f $f
	# grouped and attached forms; -r is -f; -N never; -R full; <> sender
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -oi -Nnever -Rfull -r '<>' \
	    -Fx bob@example.com < msg
	f=$(one_maildrop)
	atf_check -s exit:0 -o save:env -e empty $POSTCAT -e $f
	for l in 'sender: ' 'notify: NEVER' 'ret: FULL' 'recipient: bob@example.com' \
	    'attribute: full_name=x'; do
		grep -qx "$l" env || atf_fail "no '$l' in: $(cat env)"
	done
	rm -f $f
	# NAME gives the full name when -F does not; options ignored as
	# sendmail does; -- ends the options
	NAME='From Env' atf_check -s exit:0 -o empty -e empty $SENDMAIL -B 8BITMIME \
	    -om -oem -odb -h 10 -L x -O x=y -X /dev/null -m -n -U -G -i -- -bob@example.com < msg
	f=$(one_maildrop)
	atf_check -s exit:0 -o save:env -e empty $POSTCAT -e $f
	grep -qx 'attribute: full_name=From Env' env || atf_fail "NAME: $(cat env)"
	grep -qx 'recipient: -bob@example.com' env || atf_fail "--: $(cat env)"
}

atf_test_case dots
dots_head() {
	atf_set descr "without -i a line with a single dot ends the message; -i/-oi keep it; a leading From_ line is dropped"
	atf_set require.user unprivileged
}
dots_body() {
	mk_submit
	printf 'Subject: s\n\na\n..\n. \n.\nnot sent\n' > msg
	printf 'Subject: s\n\na\n..\n. \n' > want
	atf_check -s exit:0 $SENDMAIL bob@example.com < msg
	check_content $(one_maildrop) want
	rm -f q/maildrop/*
	printf 'Subject: s\r\n\r\na\r\n.\r\nnot sent\r\n' > msg2
	printf 'Subject: s\r\n\r\na\r\n' > want2
	atf_check -s exit:0 $SENDMAIL bob@example.com < msg2
	check_content $(one_maildrop) want2
	rm -f q/maildrop/*
	for o in -i -oi; do
		atf_check -s exit:0 $SENDMAIL $o bob@example.com < msg
		check_content $(one_maildrop) msg
		rm -f q/maildrop/*
	done
	# a dot alone on the last line without newline also ends it
	printf 'Subject: s\n\nx\n.' > msg3
	printf 'Subject: s\n\nx\n' > want3
	atf_check -s exit:0 $SENDMAIL bob@example.com < msg3
	check_content $(one_maildrop) want3
	rm -f q/maildrop/*
	# mbox separator first: dropped; later: kept
	printf 'From alice Mon Jan  1 00:00:00 2024\nSubject: s\n\nFrom here\n' > msg4
	printf 'Subject: s\n\nFrom here\n' > want4
	atf_check -s exit:0 $SENDMAIL -i bob@example.com < msg4
	check_content $(one_maildrop) want4
}

atf_test_case bytes
bytes_head() {
	atf_set descr "content byte for byte: CRLF and LF, 8-bit, NUL in the body, a 1 MB line, no final newline, an empty message"
	atf_set require.user unprivileged
}
bytes_body() {
	mk_submit
	{
		printf 'Subject: caf\303\251\r\nX: \377\n\r\nbody\0with NUL\r\n'
		head -c 1048576 /dev/zero | tr '\0' 'x'
		printf '\nlast line without newline'
	} > msg
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -i bob@example.com < msg
	f=$(one_maildrop)
	check_content $f msg
	atf_check -s exit:0 -o match:"message_size: $(wc -c < msg)" $POSTCAT -e $f
	rm -f $f
	# a 1 MB header line is over header_size_limit: refused
	{ printf 'Subject: '; head -c 1048576 /dev/zero | tr '\0' 'y'; printf '\n\nb\n'; } > big
	atf_check -s exit:$EX_DATAERR -o empty \
	    -e match:'header is too big: more than 102400 bytes \(header_size_limit\)' \
	    $SENDMAIL bob@example.com < big
	qcount_is maildrop 0 || atf_fail "queued anyway"
	# empty input is an empty message
	atf_check -s exit:0 $SENDMAIL bob@example.com < /dev/null
	atf_check -s exit:0 -o match:'message_size: 0' $POSTCAT -e $(one_maildrop)
}

atf_test_case usage_errors
usage_errors_head() {
	atf_set descr "bad options and values: a clear message and EX_USAGE, nothing queued, stdin not read"
	atf_set require.user unprivileged
}
usage_errors_body() {
	mk_submit
	echo 'Subject: x' > msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'no recipient addresses' $SENDMAIL < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'unsupported option -Z' \
	    -e match:usage $SENDMAIL -Z bob@example.com < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'-N sometimes: expected never' \
	    $SENDMAIL -N sometimes bob@example.com < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'-N never,success' \
	    $SENDMAIL -N never,success bob@example.com < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'-R body: expected full or hdrs' \
	    $SENDMAIL -R body bob@example.com < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'-V: bad envelope ID' \
	    $SENDMAIL -V 'a b' bob@example.com < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'-F: bad full name' \
	    $SENDMAIL -F "$(printf 'a\nBcc: x')" bob@example.com < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'option -f needs a value' $SENDMAIL -f
	atf_check -s exit:$EX_USAGE -o empty -e match:'-bv is not supported' \
	    $SENDMAIL -bv bob@example.com < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'-B 9bit' \
	    $SENDMAIL -B 9bit bob@example.com < msg
	atf_check -s exit:$EX_USAGE -o empty -e match:'flushing only some messages' \
	    $SENDMAIL -qRexample.com
	# -q with an interval (a daemon option) is accepted and does nothing
	atf_check -s exit:0 -o empty -e empty $SENDMAIL -q30m
	qcount_is maildrop 0 || atf_fail "queued anyway"
}

atf_test_case address_errors
address_errors_head() {
	atf_set descr "malformed sender and recipient addresses: EX_NOUSER with the reason; -t without or with bad header recipients"
	atf_set require.user unprivileged
}
address_errors_body() {
	mk_submit
	printf 'Subject: x\n\nx\n' > msg
	atf_check -s exit:$EX_NOUSER -o empty -e match:'bad recipient address syntax' \
	    $SENDMAIL 'bob@@example.com' < msg
	atf_check -s exit:$EX_NOUSER -o empty -e match:'bad recipient address syntax' \
	    $SENDMAIL 'Bob <bob@example.com' < msg
	atf_check -s exit:$EX_NOUSER -o empty -e match:'bad sender address syntax' \
	    $SENDMAIL -f 'a b c@' bob@example.com < msg
	atf_check -s exit:$EX_NOUSER -o empty -e match:"bad recipient address syntax in '<>': empty address" \
	    $SENDMAIL '<>' < msg
	atf_check -s exit:$EX_NOUSER -o empty \
	    -e match:'no recipient addresses found in the message header' $SENDMAIL -t < msg
	printf 'To: ok@example.com, bad@@example.com\n\nx\n' > msg2
	atf_check -s exit:$EX_NOUSER -o empty \
	    -e match:"bad recipient address in the message header: 'bad@@example.com'" \
	    $SENDMAIL -t < msg2
	qcount_is maildrop 0 || atf_fail "queued anyway"
	# a good -t message with Resent- fields and an undisclosed group
	printf 'To: undisclosed-recipients:;\nResent-To: x@example.com\n\nx\n' > msg3
	atf_check -s exit:0 $SENDMAIL -t < msg3
}

atf_test_case content_errors
content_errors_head() {
	atf_set descr "oversized message, header loop, NUL in the header: EX_DATAERR, nothing queued, no temporary file left"
	atf_set require.user unprivileged
}
content_errors_body() {
	mk_submit "message_size_limit = 100000"
	{ printf 'Subject: big\n\n'; head -c 200000 /dev/zero | tr '\0' 'z'; } > big
	atf_check -s exit:$EX_DATAERR -o empty \
	    -e inline:'petrel/sendmail: fatal: message is too big: more than 100000 bytes (message_size_limit); the message was not sent\n' \
	    $SENDMAIL -i bob@example.com < big
	# exactly at the limit is fine
	head -c 100000 big > fits
	atf_check -s exit:0 $SENDMAIL -i bob@example.com < fits
	rm -f q/maildrop/*
	: > loop
	for i in $(seq 1 50); do echo "Received: from h$i by h$((i + 1))" >> loop; done
	printf 'Subject: loop\n\nx\n' >> loop
	atf_check -s exit:$EX_DATAERR -o empty -e match:'too many hops' \
	    $SENDMAIL bob@example.com < loop
	sed 1d loop > loop49
	atf_check -s exit:0 $SENDMAIL bob@example.com < loop49
	rm -f q/maildrop/*
	printf 'Subject: a\0b\n\nx\n' > nul
	atf_check -s exit:$EX_DATAERR -o empty -e match:'header contains a NUL byte' \
	    $SENDMAIL bob@example.com < nul
	qcount_is maildrop 0 || atf_fail "queued anyway"
	no_tmp_files || atf_fail "temporary file left: $(ls q/maildrop)"
}

atf_test_case system_errors
system_errors_head() {
	atf_set descr "no maildrop, a bad main.cf, a user not allowed to submit, a missing postdrop: clear errors and sysexits statuses"
	atf_set require.user unprivileged
}
system_errors_body() {
	mk_submit
	printf 'Subject: x\n\nx\n' > msg
	rmdir q/maildrop
	atf_check -s exit:$EX_TEMPFAIL -o empty -e match:'cannot create a file in .*/maildrop' \
	    $SENDMAIL bob@example.com < msg
	mkdir q/maildrop
	echo "authorized_submit_users = root, somebody" >> etc/main.cf
	atf_check -s exit:$EX_NOPERM -o empty -e match:"user $(id -un) .* is not allowed to submit mail" \
	    $SENDMAIL bob@example.com < msg
	echo "authorized_submit_users = $(id -un)" >> etc/main.cf
	atf_check -s exit:0 $SENDMAIL bob@example.com < msg
	echo "message_size_limit = lots" >> etc/main.cf
	atf_check -s exit:$EX_CONFIG -o empty -e match:'errors in .*/main.cf' \
	    $SENDMAIL bob@example.com < msg
	sed -i '$d' etc/main.cf
	echo "command_directory = $PWD/nowhere" >> etc/main.cf
	atf_check -s exit:$EX_UNAVAILABLE -o empty -e match:"cannot send: $PWD/nowhere/postdrop" \
	    $SENDMAIL bob@example.com < msg
	# -C names the configuration (a directory or its main.cf)
	sed -i '$d' etc/main.cf
	unset MAIL_CONFIG
	atf_check -s exit:0 $SENDMAIL -C $PWD/etc/main.cf bob@example.com < msg
	atf_check -s exit:0 $SENDMAIL -C $PWD/etc bob@example.com < msg
	atf_check -s exit:$EX_CONFIG -o empty -e match:'configuration /nonexistent' \
	    $SENDMAIL -C /nonexistent bob@example.com < msg
	qcount_is maildrop 3 || atf_fail "expected 3 files: $(qfiles maildrop)"
}

atf_test_case postdrop_untrusted
postdrop_untrusted_head() {
	atf_set descr "postdrop checks its input itself: garbage, bad fields, a cut stream and an abort queue nothing"
	atf_set require.user unprivileged
}
postdrop_untrusted_body() {
	mk_submit
	atf_check -s exit:$EX_DATAERR -o empty -e match:'unexpected end of input before the envelope' \
	    $POSTDROP < /dev/null
	printf 'hello\n' > garbage
	atf_check -s exit:$EX_DATAERR -o empty -e match:'malformed input in the envelope' \
	    $POSTDROP < garbage
	env='I version 1\nS sender 3:a@b\n'
	rcpt='N rcpt 1\nS address 3:x@y\n.\n'
	# an attribute the stream does not have
	printf "${env}S client_address 7:1.2.3.4\n${rcpt}.\n" > in
	atf_check -s exit:$EX_DATAERR -o empty -e match:'malformed input' $POSTDROP < in
	# bad values
	printf "I version 1\nS sender 4:a b@\n${rcpt}.\n" > in
	atf_check -s exit:$EX_NOUSER -o empty -e match:'bad sender address syntax' $POSTDROP < in
	printf "${env}S full_name 3:a\tb\n${rcpt}.\n" > in
	atf_check -s exit:$EX_DATAERR -o empty -e match:'bad full name' $POSTDROP < in
	printf "${env}I notify 9\n${rcpt}.\n" > in
	atf_check -s exit:$EX_DATAERR -o empty -e match:'bad NOTIFY' $POSTDROP < in
	printf "${env}I flags 6\n${rcpt}.\n" > in
	atf_check -s exit:$EX_DATAERR -o empty -e match:'unknown flags' $POSTDROP < in
	printf "I version 2\nS sender 3:a@b\n${rcpt}.\n" > in
	atf_check -s exit:$EX_DATAERR -o empty -e match:'unsupported submission stream version' \
	    $POSTDROP < in
	printf "${env}.\n" > in
	atf_check -s exit:$EX_USAGE -o empty -e match:'no recipients given' $POSTDROP < in
	# content cut short (no end), a wrong total, an abort
	printf "${env}${rcpt}.\nD data 3:hi\n\n.\n" > in
	atf_check -s exit:$EX_DATAERR -o empty -e match:'unexpected end of input before the message content' \
	    $POSTDROP < in
	printf "${env}${rcpt}.\nD data 3:hi\n\n.\nL end 4\n.\n" > in
	atf_check -s exit:$EX_DATAERR -o empty -e match:'the end says 4 content bytes, 3 arrived' \
	    $POSTDROP < in
	printf "${env}${rcpt}.\nD data 3:hi\n\n.\nS abort 4:stop\n.\n" > in
	# (quietly: sendmail, which aborts, says why)
	atf_check -s exit:$EX_DATAERR -o empty -e empty $POSTDROP < in
	qcount_is maildrop 0 || atf_fail "queued anyway"
	no_tmp_files || atf_fail "temporary file left"
	# and the same stream, complete, is queued
	printf "${env}${rcpt}.\nD data 3:hi\n\n.\nL end 3\n.\n" > in
	atf_check -s exit:0 -o empty -e empty $POSTDROP < in
	qcount_is maildrop 1 || atf_fail "not queued"
	# a configuration directory other than the default is refused only
	# when postdrop runs set-gid (not here): -c works
	atf_check -s exit:0 -o empty -e empty $POSTDROP -c $PWD/etc < in
	atf_check -s exit:$EX_USAGE -o empty -e match:usage $POSTDROP extra
}

atf_test_case interrupted
interrupted_head() {
	atf_set descr "a postdrop killed while it writes leaves no file visible; SIGTERM removes its temporary file"
	atf_set require.user unprivileged
}
interrupted_body() {
	mk_submit
	mkfifo in
	# sendmail reads from a fifo we keep open, so postdrop waits mid-message
	$SENDMAIL -i bob@example.com < in > out 2> err &
	sm=$!
	exec 3> in
	printf 'Subject: slow\n\nfirst part\n' >&3
	wait_for pgrep -P $sm postdrop || atf_fail "no postdrop"
	pd=$(pgrep -P $sm postdrop)
	wait_for nonempty find q/maildrop -name 'tmp.*' || atf_fail "no temporary file"
	qcount_is maildrop 0 || atf_fail "visible before the end"
	kill -TERM $pd
	exec 3>&-
	wait $sm
	rc=$?
	[ $rc = $EX_TEMPFAIL ] || atf_fail "sendmail exit $rc, expected $EX_TEMPFAIL: $(cat err)"
	grep -q 'postdrop was killed by signal 15; the message was not sent' err ||
	    atf_fail "no message: $(cat err)"
	no_tmp_files || atf_fail "temporary file left"
	qcount_is maildrop 0 || atf_fail "queued anyway"
}

atf_test_case other_modes
other_modes_head() {
	atf_set descr "mailq/-bp, newaliases/-bi, -bs, -q, -bd when their programs are missing or the system is down: clear messages"
	atf_set require.user unprivileged
}
other_modes_body() {
	mk_instance "command_directory = $PWD/bin" "daemon_directory = $PWD/bin"
	export MAIL_CONFIG=$PWD/etc
	mkdir bin
	ln -s $SENDMAIL bin/mailq
	ln -s $SENDMAIL bin/newaliases
	atf_check -s exit:$EX_UNAVAILABLE -o empty -e match:"cannot list the queue: $PWD/bin/postq is not installed" \
	    bin/mailq
	atf_check -s exit:$EX_UNAVAILABLE -o empty -e match:"postq is not installed" $SENDMAIL -bp
	atf_check -s exit:$EX_UNAVAILABLE -o empty \
	    -e match:"cannot rebuild hash:/etc/aliases: $PWD/bin/postalias is not installed" bin/newaliases
	atf_check -s exit:$EX_UNAVAILABLE -o empty -e match:"postalias is not installed" $SENDMAIL -bi
	atf_check -s exit:$EX_UNAVAILABLE -o empty -e match:"postalias is not installed" $SENDMAIL -I
	atf_check -s exit:$EX_UNAVAILABLE -o empty \
	    -e match:"SMTP on standard input \(-bs\) is not supported yet: $PWD/bin/smtpd is not installed" \
	    $SENDMAIL -bs
	atf_check -s exit:$EX_UNAVAILABLE -o empty -e match:"petrel is not installed" $SENDMAIL -q
	# with stand-ins: the right program runs, with the configuration
	for p in postq postalias smtpd petrel; do
		printf '#!/bin/sh\necho "%s $* $MAIL_CONFIG"\n' $p > bin/$p
		chmod +x bin/$p
	done
	atf_check -s exit:0 -o inline:"postq  $PWD/etc\n" -e empty bin/mailq
	atf_check -s exit:0 -o inline:"postalias hash:/etc/aliases $PWD/etc\n" -e empty bin/newaliases
	echo 'alias_database = hash:/a/one, texthash:/a/two' >> etc/main.cf
	atf_check -s exit:0 -o inline:"postalias hash:/a/one $PWD/etc\npostalias texthash:/a/two $PWD/etc\n" \
	    -e empty $SENDMAIL -bi
	atf_check -s exit:0 -o inline:"smtpd -S $PWD/etc\n" -e empty $SENDMAIL -bs
	atf_check -s exit:0 -o inline:"petrel flush $PWD/etc\n" -e empty $SENDMAIL -q
	atf_check -s exit:0 -o inline:"petrel start $PWD/etc\n" -e empty $SENDMAIL -bd -q1h
	printf '#!/bin/sh\nexit 1\n' > bin/petrel
	atf_check -s exit:$EX_UNAVAILABLE -o empty $SENDMAIL -q
}

atf_test_case quiet_warnings
quiet_warnings_head() {
	atf_set descr "an unknown parameter in main.cf: sendmail (and the postdrop it runs) and postq say nothing on stderr (cron would mail it); the mail log has the warning"
	atf_set require.user unprivileged
}
quiet_warnings_body() {
	mk_submit "no_such_parameter_here = 1"
	printf 'Subject: x\n\nx\n' > msg
	atf_check -s exit:0 -o empty -e empty $SENDMAIL bob@example.com < msg
	atf_check -s exit:0 -o ignore -e empty $B/bin/postq -C $PWD/etc
	grep -q "warning: .*unknown parameter no_such_parameter_here (ignored)" maillog ||
	    atf_fail "no warning in the mail log: $(cat maillog)"
	# the administrator's tool still says it
	atf_check -s exit:0 -o ignore -e match:"unknown parameter no_such_parameter_here" \
	    $B/bin/postconf -c $PWD/etc -n
}

atf_init_test_cases() {
	atf_add_test_case quiet_warnings
	atf_add_test_case recipients
	atf_add_test_case options
	atf_add_test_case dots
	atf_add_test_case bytes
	atf_add_test_case usage_errors
	atf_add_test_case address_errors
	atf_add_test_case content_errors
	atf_add_test_case system_errors
	atf_add_test_case postdrop_untrusted
	atf_add_test_case interrupted
	atf_add_test_case other_modes
}
