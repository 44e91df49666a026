#! /usr/bin/env atf-sh
# pickup under master, with cleanup: good files are queued and removed,
# damaged, unreadable and odd files go to corrupt/ with a log line,
# temporary failures leave the file for the next scan, permanent
# rejections are parked in corrupt/; other mail flows through it all.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr
MKQFILE=$B/tests/tools/mkqfile

# send N: a good message with marker N (sendmail, Petrel may be down).
send() {
	printf 'Subject: msg %s\n\nmarker %s\n' "$1" "$1" |
	    $SENDMAIL -f alice@example.org bob@example.com ||
	    atf_fail "sendmail failed for $1"
}

# in_incoming N: a queue file in incoming/ has marker N.
in_incoming() {
	for f in $(qfiles incoming); do
		$POSTCAT -b $f 2>/dev/null | grep -qx "marker $1" && return 0
	done
	return 1
}

atf_test_case queued_then_removed cleanup
queued_then_removed_head() {
	atf_set descr "pickup sends a maildrop file to cleanup and removes it once queued; cleanup logs uid= and the arrival time is kept"
	atf_set require.user unprivileged
}
queued_then_removed_body() {
	mk_submit
	PICKUP_WAKEUP=60 mcf_submit
	send 1
	f=$(one_maildrop)
	id=${f##*/}
	arrival=$($POSTCAT -e $f | sed -n 's/^arrival_time: \([0-9.]*\) .*/\1/p')
	start_instance
	wait_for qcount_is maildrop 0 || atf_fail "still in maildrop: $(qfiles maildrop)"
	qcount_is incoming 1 || atf_fail "not in incoming"
	g=$(qfiles incoming)
	atf_check -s exit:0 -o save:env $POSTCAT -e $g
	grep -qx "arrival_time: $arrival .*" env || grep -q "^arrival_time: $arrival " env ||
	    atf_fail "arrival time $arrival not kept: $(cat env)"
	grep -qx "attribute: log_ident=pickup maildrop/$id" env || atf_fail "log_ident: $(cat env)"
	wait_for in_log "${g##*/}: uid=$(id -u) from=<alice@example.org>" ||
	    atf_fail "no uid= line: $(cat maillog)"
	# postdrop's trigger wakes pickup (the wakeup is 60 s away)
	send 2
	wait_for in_incoming 2 || atf_fail "not picked up on postdrop's trigger"
	qcount_is maildrop 0 || atf_fail "left in maildrop"
	assert_log_clean
}
queued_then_removed_cleanup() {
	stop_instance
}

atf_test_case damaged cleanup
damaged_head() {
	atf_set descr "a truncated, a garbage, an unreadable and a non-regular maildrop file go to corrupt/ with a log line; good mail still flows"
	atf_set require.user unprivileged
}
damaged_body() {
	mk_submit
	mcf_submit
	send 1
	f=$(one_maildrop)
	cut=${f##*/}
	head -c 100 $f > short
	rm -f $f
	cp short $f
	send 2
	g=$(qfiles maildrop | grep -v $cut)
	unread=${g##*/}
	chmod 000 $g
	printf 'not a queue file at all\n' > q/maildrop/1NG5KD6240WAGSGZ
	mkdir q/maildrop/1NG5KD6240WAGSGH
	ln -s /etc/passwd q/maildrop/1NG5KD6240WAGSGJ
	send 3
	start_instance
	wait_for in_incoming 3 || atf_fail "good mail did not flow"
	wait_for qcount_is maildrop 0 || atf_fail "left in maildrop: $(ls -l q/maildrop)"
	[ -z "$(ls q/maildrop)" ] || atf_fail "left in maildrop: $(ls -l q/maildrop)"
	for x in $cut $unread 1NG5KD6240WAGSGZ 1NG5KD6240WAGSGH 1NG5KD6240WAGSGJ; do
		[ -e q/corrupt/$x ] || [ -L q/corrupt/$x ] || atf_fail "$x not in corrupt/"
	done
	wait_for in_log "warning: $cut: damaged queue file in maildrop: .*; moved to corrupt/" ||
	    atf_fail "no log line for the truncated file"
	in_log "warning: $unread: damaged queue file in maildrop: open .*Permission denied; moved to corrupt/" ||
	    atf_fail "no log line for the unreadable file: $(cat maillog)"
	in_log "1NG5KD6240WAGSGH: damaged queue file in maildrop: not a regular file" ||
	    atf_fail "no log line for the directory"
	in_log "1NG5KD6240WAGSGJ: damaged queue file in maildrop: not a regular file" ||
	    atf_fail "no log line for the symlink"
	# corrupt files are kept as they were
	cmp -s short q/corrupt/$cut || atf_fail "truncated file changed"
	qcount_is incoming 1 || atf_fail "expected one queued message: $(qfiles incoming)"
	assert_log_clean
}
damaged_cleanup() {
	stop_instance
}

atf_test_case cleanup_down cleanup
cleanup_down_head() {
	atf_set descr "without cleanup mail stays in maildrop (temporary failure, logged) and is queued once cleanup is there"
	atf_set require.user unprivileged
}
cleanup_down_body() {
	mk_submit
	mcf "pickup unix n - n 1 1 pickup"
	start_instance
	send 1
	send 2
	wait_for in_log "cannot connect to cleanup: .*mail stays in maildrop/" ||
	    atf_fail "no warning: $(cat maillog)"
	qcount_is maildrop 2 || atf_fail "maildrop should hold 2 files"
	mcf_submit
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	wait_for qcount_is maildrop 0 || atf_fail "not picked up after cleanup came"
	in_incoming 1 && in_incoming 2 || atf_fail "not queued"
	assert_log_clean
}
cleanup_down_cleanup() {
	stop_instance
}

atf_test_case temporary_failure cleanup
temporary_failure_head() {
	atf_set descr "a message cleanup cannot take now stays in maildrop and does not hold up the files after it"
	atf_set require.user unprivileged
}
temporary_failure_body() {
	mk_submit "virtual_alias_expansion_limit = 1" \
	    "virtual_alias_maps = inline:{ { big@example.com = one@example.com, two@example.com } }"
	PICKUP_WAKEUP=60 mcf_submit
	printf 'Subject: big\n\nmarker 1\n' | $SENDMAIL big@example.com || atf_fail sendmail
	big=$(one_maildrop)
	send 2
	start_instance
	wait_for in_incoming 2 || atf_fail "the file after the failing one was not queued"
	wait_for in_log "${big##*/}: not queued: 4.3.0 .*virtual_alias_expansion_limit.*; it stays in maildrop/" ||
	    atf_fail "no log line: $(cat maillog)"
	[ -f $big ] || atf_fail "the failing file was removed"
	qcount_is corrupt 0 || atf_fail "a temporary failure went to corrupt/"
	# once the configuration allows it, the next scan queues it
	sed -i '/virtual_alias_expansion_limit/d' etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	send 3
	wait_for in_incoming 1 || atf_fail "not queued after the fix"
	# pickup takes the files in ID order: message 3 comes just after 1
	wait_for qcount_is maildrop 0 || atf_fail "left in maildrop"
	assert_log_clean
}
temporary_failure_cleanup() {
	stop_instance
}

atf_test_case rejected cleanup
rejected_head() {
	atf_set descr "a file cleanup refuses for good is moved to corrupt/ with cleanup's reason, not retried for ever; the uid cross-check"
	atf_set require.user unprivileged
}
rejected_body() {
	mk_submit
	mcf_submit
	# written as a hostile member of the maildrop group could: a bad
	# sender, and a uid that is not the file's owner
	printf 'Subject: bad\n\nx\n' |
	    $MKQFILE -d q -q maildrop -f 'a b@@' -r bob@example.com > id1 ||
	    atf_fail mkqfile
	printf 'Subject: liar\n\nmarker 2\n' |
	    $MKQFILE -d q -q maildrop -f eve@example.org -a uid=0 -r bob@example.com > id2 ||
	    atf_fail mkqfile
	# postdrop accepted it, but main.cf changed before pickup came
	{ printf 'Subject: big\n\n'; head -c 5000 /dev/zero | tr '\0' z; echo; } > big
	$SENDMAIL -i bob@example.com < big || atf_fail sendmail
	big=$(qfiles maildrop | grep -v -e $(cat id1) -e $(cat id2))
	echo "message_size_limit = 1000" >> etc/main.cf
	start_instance
	wait_for qcount_is maildrop 0 || atf_fail "left in maildrop: $(ls q/maildrop)"
	[ -f q/corrupt/$(cat id1) ] || atf_fail "bad sender not in corrupt/"
	[ -f q/corrupt/${big##*/} ] || atf_fail "big message not in corrupt/"
	wait_for in_log "$(cat id1): rejected by cleanup: 5.1.7 .*; moved to corrupt/" ||
	    atf_fail "no log line: $(cat maillog)"
	in_log "${big##*/}: rejected by cleanup: 5.3.4 message size exceeds" ||
	    atf_fail "no log line: $(cat maillog)"
	in_incoming 2 || atf_fail "the uid=0 message was not queued"
	in_log "$(cat id2): file owner uid $(id -u) differs from the recorded uid 0; using the owner" ||
	    atf_fail "no uid warning"
	in_log ": uid=$(id -u) from=<eve@example.org>" || atf_fail "cleanup was told uid 0"
	assert_log_clean
}
rejected_cleanup() {
	stop_instance
}

atf_test_case hashed_and_stale cleanup
hashed_and_stale_head() {
	atf_set descr "files in hashed maildrop subdirectories are found; a stale temporary file is recovered when complete, removed when not; a fresh one is left alone"
	atf_set require.user unprivileged
}
hashed_and_stale_body() {
	mk_submit
	mcf_submit
	printf 'Subject: h\n\nmarker 1\n' |
	    $MKQFILE -d q -q maildrop -H maildrop -f a@example.org -r bob@example.com > id ||
	    atf_fail mkqfile
	[ -n "$(find q/maildrop -mindepth 2 -type f)" ] || atf_fail "not hashed"
	# a complete file whose rename a crash lost
	printf 'Subject: r\n\nmarker 2\n' |
	    $MKQFILE -d q -q maildrop -f a@example.org -r bob@example.com > id2 ||
	    atf_fail mkqfile
	mv q/maildrop/$(cat id2) q/maildrop/tmp.7.8.9
	printf 'x' > q/maildrop/tmp.1.2.3
	printf 'x' > q/maildrop/tmp.4.5.6
	touch -d '2 hours ago' q/maildrop/tmp.1.2.3 q/maildrop/tmp.7.8.9
	start_instance
	wait_for in_incoming 1 || atf_fail "hashed file not picked up"
	wait_for in_incoming 2 || atf_fail "complete temporary file not recovered"
	in_log "recovered maildrop/tmp.7.8.9, a complete maildrop file that had lost its rename" ||
	    atf_fail "no log line for the recovery"
	wait_for in_log "removed maildrop/tmp.1.2.3: an incomplete file left by a postdrop" ||
	    atf_fail "stale file not removed: $(ls q/maildrop)"
	[ -e q/maildrop/tmp.1.2.3 ] && atf_fail "stale file still there"
	[ -e q/maildrop/tmp.4.5.6 ] || atf_fail "fresh temporary file removed"
	assert_log_clean
}
hashed_and_stale_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case queued_then_removed
	atf_add_test_case damaged
	atf_add_test_case cleanup_down
	atf_add_test_case temporary_failure
	atf_add_test_case rejected
	atf_add_test_case hashed_and_stale
}
