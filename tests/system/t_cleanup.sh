#! /usr/bin/env atf-sh
# cleanup under master in a private instance: messages submitted with the
# cleanup-submit test client (libglobal/cleanup_clnt), queue files
# checked with postcat, limits, rewriting, -t, bad input, the qmgr trigger.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/cleanup.subr

POSTCAT=$B/bin/postcat

incoming_count() {
	ls q/incoming | wc -l | tr -d ' '
}

assert_nothing_queued() {
	test "$(incoming_count)" -eq "$1" || { ls q/incoming >&2; atf_fail "incoming has the wrong number of files"; }
}

atf_test_case local_mail cleanup
local_mail_head() {
	atf_set descr "a local submission: completed headers, envelope, content byte for byte, log lines, qmgr triggered"
	atf_set require.user unprivileged
}
local_mail_body() {
	cl_instance
	printf 'Subject: hello\nTo: Bob <bob@example.net>\n\nline 1\n\xe9t\xe9 8-bit\n\nlast\n' > msg
	atf_check -s exit:0 -o match:'^0 2\.0\.0 [0-9A-Z]+ queued as ' \
	    $SUBMIT -s $CL -f alice -u 1000 -F 'Alice Smith' msg bob@example.net
	submit out -f alice -u 1000 -F 'Alice Smith' msg bob@example.net ||
	    { cat out >&2; atf_fail "failed"; }
	id=$(qid out)
	test -f q/incoming/$id || atf_fail "no q/incoming/$id"
	atf_check -s exit:0 -o match:'^sender: alice@host\.example\.com$' \
	    -o match:'^recipient: bob@example\.net$' $POSTCAT -e q/incoming/$id
	$POSTCAT -h q/incoming/$id > hdr || atf_fail "postcat -h"
	grep -q "^Received: by host.example.com (Petrel, from userid 1000)$" hdr ||
	    { cat hdr >&2; atf_fail "no Received"; }
	grep -q "^	id $id; " hdr || atf_fail "Received without id"
	grep -q '^Subject: hello$' hdr || atf_fail "Subject lost"
	grep -q '^To: Bob <bob@example.net>$' hdr || atf_fail "To changed"
	grep -q "^Message-ID: <[0-9]*\.$id@host\.example\.com>$" hdr ||
	    { cat hdr >&2; atf_fail "no Message-ID"; }
	grep -Eq '^Date: [A-Z][a-z]{2}, [0-9]{1,2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} [-+][0-9]{4}' hdr ||
	    atf_fail "no Date"
	grep -q '^From: Alice Smith <alice@host\.example\.com>$' hdr ||
	    atf_fail "no From"
	# the body byte for byte
	printf 'line 1\n\xe9t\xe9 8-bit\n\nlast\n' > body.want
	$POSTCAT -b q/incoming/$id > body.got
	cmp body.want body.got || atf_fail "body differs"
	# log lines in Postfix's formats: cleanup's own is message-id=; the
	# "uid= from=" line is pickup's, "from=, size=, nrcpt=" qmgr's
	wait_for in_log "cleanup\[[0-9]*\]: $id: message-id=<[0-9]*\.$id@host.example.com>" ||
	    atf_fail "no message-id= line"
	! in_log "cleanup\[[0-9]*\]: $id: uid=" || atf_fail "cleanup logged uid="
	! in_log "cleanup\[[0-9]*\]: $id: from=" || atf_fail "cleanup logged from="
	# qmgr heard about both messages
	wait_for lines_ge 2 ' I$' qmgr.out || { cat qmgr.out >&2; atf_fail "qmgr not triggered"; }
	assert_log_clean
}
local_mail_cleanup() {
	stop_instance
}

atf_test_case smtp_mail cleanup
smtp_mail_head() {
	atf_set descr "SMTP mail: Received from the client attributes, client= log line, CRLF kept, Bcc kept"
	atf_set require.user unprivileged
}
smtp_mail_body() {
	cl_instance
	printf 'Subject: s\r\nBcc: x@example.net\r\n\r\nbody\r\n' > msg
	submit out -S -C client.example.org -I 127.0.0.1 -H helo.example.org \
	    -P ESMTP -f a@example.org msg b@example.net || { cat out >&2; atf_fail "failed"; }
	id=$(qid out)
	$POSTCAT -h q/incoming/$id > hdr
	printf 'Received: from helo.example.org (client.example.org [127.0.0.1])\r\n\tby host.example.com (Petrel) with ESMTP id %s\r\n\tfor <b@example.net>; ' $id > want
	head -c $(wc -c < want) hdr | cmp - want || { cat -A hdr >&2; atf_fail "Received"; }
	grep -q "^Bcc: x@example.net$(printf '\r')\$" hdr || atf_fail "Bcc removed"
	$POSTCAT -b q/incoming/$id > body.got
	printf 'body\r\n' | cmp - body.got || atf_fail "body"
	# client= is smtpd's line, not cleanup's
	wait_for in_log "cleanup\[[0-9]*\]: $id: message-id=" || atf_fail "no message-id="
	! in_log "client=" || atf_fail "cleanup logged client="
	assert_log_clean
}
smtp_mail_cleanup() {
	stop_instance
}

atf_test_case early_queue_id cleanup
early_queue_id_head() {
	atf_set descr "CLEANUP_FLAG_QUEUE_ID: the queue ID comes right after the envelope, is the final one, is empty when the envelope failed, and a client that does not read it still gets its reply"
	atf_set require.user unprivileged
}
early_queue_id_body() {
	cl_instance
	printf 'Subject: e\n\nbody\n' > msg
	# two transactions on one connection, each ID read before the end
	submit out -q -n 2 -f a@example.org msg b@example.net ||
	    { cat out out.err >&2; atf_fail "failed"; }
	test "$(grep -c '^early [0-9A-Z]*$' out)" = 2 || { cat out >&2; atf_fail "early IDs"; }
	awk '$1 == "early" { e = $2 } $1 == "0" { if ($3 != e) bad = 1; n++ }
	    END { exit bad || n != 2 }' out || { cat out >&2; atf_fail "early ID is not the queued one"; }
	# asked for and never read: cleanup_finish skips it
	submit out2 -k -n 2 -f a@example.org msg b@example.net ||
	    { cat out2 out2.err >&2; atf_fail "failed without reading the ID"; }
	test "$(grep -c '^0 2\.0\.0 ' out2)" = 2 || { cat out2 >&2; atf_fail "replies"; }
	# a bad sender: no ID, the reply says why
	submit out3 -q -f 'bad@example..org' msg b@example.net
	grep -q '^early -$' out3 || { cat out3 >&2; atf_fail "an ID for a failed envelope"; }
	grep -q '^5 5\.1\.7 - ' out3 || { cat out3 >&2; atf_fail "reply"; }
	assert_nothing_queued 4
	assert_log_clean
}
early_queue_id_cleanup() {
	stop_instance
}

atf_test_case limits cleanup
limits_head() {
	atf_set descr "oversized message, header loop, too many recipients, malformed addresses, NUL in the header: each refused with its error, nothing queued, other mail flows"
	atf_set require.user unprivileged
}
limits_body() {
	cl_instance "message_size_limit = 20000" "hopcount_limit = 10" \
	    "cleanup_recipient_limit = 3" "header_size_limit = 4096"
	# oversized
	{ printf 'Subject: big\n\n'; head -c 30000 /dev/zero | tr '\0' x; } > big
	atf_check -s exit:5 -o match:'^5 5\.3\.4 - message size exceeds fixed limit of 20000 bytes' \
	    $SUBMIT -s $CL -f a@example.org big b@example.net
	# a header loop
	: > loop
	for i in 1 2 3 4 5 6 7 8 9 10 11; do
		echo "Received: from hop$i.example by hop$((i+1)).example; Mon, 1 Jan 2024 00:00:00 +0000" >> loop
	done
	printf 'Subject: loop\n\nbody\n' >> loop
	atf_check -s exit:5 -o match:'^5 5\.4\.6 - too many hops' \
	    $SUBMIT -s $CL -f a@example.org loop b@example.net
	# too many recipients (after duplicates are removed)
	printf 'Subject: x\n\nbody\n' > small
	atf_check -s exit:5 -o match:'^5 5\.5\.3 - too many recipients' \
	    $SUBMIT -s $CL -f a@example.org small 1@x.example 2@x.example 3@x.example 4@x.example
	atf_check -s exit:0 -o match:'^0 ' \
	    $SUBMIT -s $CL -f a@example.org small 1@x.example 2@x.example 3@x.example 1@X.example
	assert_nothing_queued 1
	# malformed addresses
	atf_check -s exit:5 -o match:'^5 5\.1\.7 - bad sender address <a@exa\.\.mple\.org>' \
	    $SUBMIT -s $CL -f a@exa..mple.org small b@example.net
	atf_check -s exit:5 -o match:'^5 5\.1\.3 - bad recipient address <b@-example\.net>' \
	    $SUBMIT -s $CL -f a@example.org small b@-example.net
	atf_check -s exit:5 -o match:'^5 5\.1\.0 - no recipients' \
	    $SUBMIT -s $CL -f a@example.org small
	# NUL in the header; in the body it is kept
	printf 'Subject: a\000b\n\nbody\n' > nulhdr
	atf_check -s exit:5 -o match:'^5 5\.6\.0 - NUL byte in message header Subject:' \
	    $SUBMIT -s $CL -f a@example.org nulhdr b@example.net
	printf 'Subject: s\n\nbo\000dy\n' > nulbody
	submit out -f a@example.org nulbody b@example.net || { cat out >&2; atf_fail "failed"; }
	$POSTCAT -b q/incoming/$(qid out) > got
	printf 'bo\000dy\n' | cmp - got || atf_fail "NUL in body not kept"
	# a header over header_size_limit
	{ printf 'Subject: '; head -c 5000 /dev/zero | tr '\0' y; printf '\n\nb\n'; } > bighdr
	atf_check -s exit:5 -o match:'^5 5\.3\.4 - message header larger than header_size_limit' \
	    $SUBMIT -s $CL -f a@example.org bighdr b@example.net
	assert_nothing_queued 2
	# every refusal is logged with its reason
	for e in '5.3.4 message size' '5.4.6 too many hops' '5.5.3 too many' \
	    '5.1.7 bad sender' '5.1.3 bad recipient' '5.6.0 NUL byte'; do
		in_log "cleanup\[[0-9]*\]: [0-9A-Z]*: reject: $e" || atf_fail "not logged: $e"
	done
	assert_log_clean
}
limits_cleanup() {
	stop_instance
}

atf_test_case long_lines cleanup
long_lines_head() {
	atf_set descr "a 1 MB line and 8-bit bytes pass byte for byte, in pieces of any size"
	atf_set require.user unprivileged
}
long_lines_body() {
	cl_instance
	{ printf 'Subject: long \xff\xfe\r\n\r\n'; head -c 1048576 /dev/zero | tr '\0' L;
	  printf '\r\n\xe9\xe8\r\nend'; } > msg
	for chunk in 1000 65536 999999; do
		submit out -c $chunk -f a@example.org msg b@example.net || { cat out >&2; atf_fail "failed"; }
		id=$(qid out)
		tail -c +$(( $(printf 'Subject: long \xff\xfe\r\n\r\n' | wc -c) + 1 )) msg > body.want
		$POSTCAT -b q/incoming/$id > body.got
		cmp body.want body.got || atf_fail "body differs (chunk $chunk)"
		$POSTCAT -h q/incoming/$id | head -1 > hdr.got
		printf 'Subject: long \xff\xfe\r\n' | cmp - hdr.got || atf_fail "8-bit header"
	done
	assert_log_clean
}
long_lines_cleanup() {
	stop_instance
}

atf_test_case maps cleanup
maps_head() {
	atf_set descr "canonical_maps (inline:), virtual_alias_maps (texthash:) with recursion, duplicate removal, and the recursion limit as a temporary failure"
	atf_set require.user unprivileged
}
maps_body() {
	cat > virtual <<EOF
team@lists.example    alice@example.org, bob@example.org, sub@lists.example
sub@lists.example     carol@example.org, alice@example.org
deep1@lists.example   deep2@lists.example
deep2@lists.example   deep3@lists.example
deep3@lists.example   deep4@lists.example
deep4@lists.example   end@example.org
EOF
	cl_instance "canonical_maps = inline:{ old@example.org=new@example.org, { @legacy.example = @example.org } }" \
	    "virtual_alias_maps = texthash:$PWD/virtual" "virtual_alias_recursion_limit = 3"
	printf 'From: old@example.org\nTo: x@legacy.example, Team <team@lists.example>\n\nbody\n' > msg
	submit out -f old@example.org msg team@lists.example carol@example.org x@legacy.example ||
	    { cat out >&2; atf_fail "failed"; }
	id=$(qid out)
	$POSTCAT -e q/incoming/$id > env
	grep -q '^sender: new@example.org$' env || { cat env >&2; atf_fail "sender"; }
	grep '^recipient: ' env > rcpts
	cat > rcpts.want <<EOF
recipient: alice@example.org
recipient: bob@example.org
recipient: carol@example.org
recipient: x@example.org
EOF
	diff rcpts.want rcpts || atf_fail "recipients"
	test "$(grep -c '^original_recipient: team@lists.example$' env)" -eq 3 ||
	    { cat env >&2; atf_fail "original recipient lost"; }
	$POSTCAT -h q/incoming/$id > hdr
	grep -q '^From: new@example.org$' hdr || { cat hdr >&2; atf_fail "From"; }
	grep -q '^To: x@example.org, Team <team@lists.example>$' hdr ||
	    { cat hdr >&2; atf_fail "To"; }
	# nesting deeper than virtual_alias_recursion_limit: try again later
	atf_check -s exit:4 -o match:'^4 4\.3\.0 - virtual_alias_maps: nesting deeper than virtual_alias_recursion_limit' \
	    $SUBMIT -s $CL -f a@example.org msg deep1@lists.example
	assert_nothing_queued 1
	in_log "warning: [0-9A-Z]*: message not accepted, try again later: 4.3.0 virtual_alias_maps" ||
	    atf_fail "not logged"
	assert_log_clean
}
maps_cleanup() {
	stop_instance
}

atf_test_case extract cleanup
extract_head() {
	atf_set descr "-t: recipients from To/Cc/Bcc, Bcc removed, bare names completed"
	atf_set require.user unprivileged
}
extract_body() {
	cl_instance "myorigin = example.com"
	cat > msg <<EOF
From: me
To: "Ann" <ann@example.net>, bob
Cc: undisclosed:;, carl@example.net (Carl)
Bcc: secret@example.net
Subject: -t

body
Bcc: not a header
EOF
	submit out -x -u 1000 -f me msg || { cat out >&2; atf_fail "failed"; }
	id=$(qid out)
	$POSTCAT -e q/incoming/$id | grep '^recipient: ' > rcpts
	cat > rcpts.want <<EOF
recipient: ann@example.net
recipient: bob@example.com
recipient: carl@example.net
recipient: secret@example.net
EOF
	diff rcpts.want rcpts || atf_fail "recipients"
	$POSTCAT -h q/incoming/$id > hdr
	grep -q '^Bcc' hdr && atf_fail "Bcc kept"
	grep -q '^To: "Ann" <ann@example.net>, bob@example.com$' hdr || { cat hdr >&2; atf_fail "To"; }
	grep -q '^From: me@example.com$' hdr || { cat hdr >&2; atf_fail "From"; }
	$POSTCAT -b q/incoming/$id | grep -q '^Bcc: not a header$' || atf_fail "body changed"
	printf 'To: a@example.net, bad@@\n\nx\n' > bad
	atf_check -s exit:5 -o match:'^5 5\.1\.3 - bad address' $SUBMIT -s $CL -x -f me bad
	assert_log_clean
}
extract_cleanup() {
	stop_instance
}

atf_test_case garbage cleanup
garbage_head() {
	atf_set descr "garbage, a half request, a client that goes away: logged, nothing queued, the same daemon serves the next client"
	atf_set require.user unprivileged
}
garbage_body() {
	cl_instance
	printf 'GET / HTTP/1.0\r\n\r\n' > junk
	atf_check -s exit:0 -o match:'protocol error: unexpected byte 0x47' -o match:CLOSED \
	    $SUBMIT -s $CL -g junk
	printf 'S op 8:envelope\nS sender 0:\n.\nS op 4:rcpt\nS address 1' > half
	atf_check -s exit:0 -o inline:'\nCLOSED\n' $SUBMIT -s $CL -g half
	head -c 100000 /dev/urandom > random
	atf_check -s exit:0 -o match:CLOSED $SUBMIT -s $CL -g random
	printf 'S op 3:end\n.\n' > noenv
	atf_check -s exit:0 -o match:'protocol error: end without a transaction' \
	    $SUBMIT -s $CL -g noenv
	# the daemon lives on: the same process takes good mail
	printf 'Subject: after\n\nstill works\n' > msg
	submit out -f a@example.org msg b@example.net || { cat out >&2; atf_fail "failed"; }
	assert_nothing_queued 1
	wait_for in_log "protocol error from cleanup client: unexpected byte 0x47" || atf_fail "not logged"
	p1=$(sed -n 's/.*cleanup\[\([0-9]*\)\]: warning: protocol error from cleanup client: unexpected byte 0x47.*/\1/p' maillog | head -1)
	p2=$(sed -n 's/.*cleanup\[\([0-9]*\)\]: [0-9A-Z]*: message-id=.*/\1/p' maillog | tail -1)
	test -n "$p1" && test "$p1" = "$p2" || atf_fail "cleanup process changed ($p1, $p2)"
	assert_log_clean
}
garbage_cleanup() {
	stop_instance
}

atf_test_case transactions cleanup
transactions_head() {
	atf_set descr "several messages over one connection, abort, and the public socket found by service name"
	atf_set require.user unprivileged
}
transactions_body() {
	mk_instance "myhostname = host.example.com"
	mcf "cleanup unix n n n - 0 cleanup"
	start_instance
	printf 'Subject: x\n\nbody\n' > msg
	# by service name from queue_directory: private/cleanup does not
	# exist, public/cleanup does; no qmgr: not an error
	(cd q && $SUBMIT -n 5 -f a@example.org ../msg b@example.net) > out ||
	    { cat out >&2; atf_fail "failed"; }
	test "$(grep -c '^0 2\.0\.0 ' out)" -eq 5 || { cat out >&2; atf_fail "failed"; }
	test "$(awk '{print $3}' out | sort -u | wc -l)" -eq 5 || atf_fail "IDs not unique"
	assert_nothing_queued 5
	atf_check -s exit:4 -o inline:'4 4.3.0 - message aborted by client\n' \
	    $SUBMIT -s q/public/cleanup -A -f a@example.org msg b@example.net
	assert_nothing_queued 5
	ls q/incoming | grep -v '^[0-9A-Z]*$' && atf_fail "temporary files left"
	assert_log_clean
}
transactions_cleanup() {
	stop_instance
}

atf_test_case kill cleanup
kill_head() {
	atf_set descr "cleanup killed with SIGKILL at random moments during 300 submissions: every accepted message is a complete queue file, no incomplete file is ever visible"
	atf_set require.user unprivileged
}
# Kills every cleanup process of this instance, every 20-70 ms, until
# ./stop exists (at most 1000 rounds).
killer() {
	_i=0
	while [ $_i -lt 1000 ] && [ ! -f stop ]; do
		for _p in $(pgrep -f -- "cleanup -c $PWD/etc" 2>/dev/null); do
			kill -9 $_p 2>/dev/null
		done
		sleep 0.0$(( (_i % 6) + 2 ))
		_i=$((_i + 1))
	done
}
kill_body() {
	cl_instance "service_throttle_time = 1s"
	{ printf 'Subject: k\n\n'; head -c 30000 /dev/urandom | od -An -tx1; } > msg
	killer &
	kpid=$!
	i=0
	while [ $i -lt 300 ]; do
		$SUBMIT -s $CL -t 5000 -f a@example.org msg b@example.net >> results 2>/dev/null
		i=$((i + 1))
	done
	touch stop
	wait $kpid
	ok=$(grep -c '^0 2\.0\.0 ' results)
	lost=$(grep -c '^4 4\.3\.0 ' results)
	echo "accepted $ok, failed $lost of 300" >&2
	test $((ok + lost)) -eq 300 || { cat results >&2; atf_fail "odd replies"; }
	test "$ok" -gt 0 || atf_fail "nothing accepted"
	# every accepted message is there and complete
	for id in $(awk '$1 == 0 { print $3 }' results); do
		$POSTCAT -e q/incoming/$id > /dev/null 2>&1 ||
		    atf_fail "accepted message $id missing or damaged"
	done
	# every visible queue file is complete (temporary files are not
	# visible: their names are not queue IDs)
	n=0
	for f in q/incoming/*; do
		case ${f##*/} in tmp.*) continue ;; esac
		$POSTCAT -e $f > /dev/null 2>&1 || atf_fail "damaged visible file $f"
		n=$((n + 1))
	done
	# a file may exist whose reply was lost (at-least-once), never fewer
	test $n -ge "$ok" || atf_fail "$n files for $ok accepted messages"
	# the daemon recovers
	rm -f results
	$SUBMIT -s $CL -t 5000 -f a@example.org msg b@example.net > results ||
	    { cat results >&2; atf_fail "no recovery"; }
	assert_log_clean
}
kill_cleanup() {
	touch stop
	stop_instance
}

atf_test_case kill_parallel cleanup
kill_parallel_head() {
	atf_set descr "four clients submit at once, so several cleanup processes commit into incoming/ together and share directory fsyncs, while cleanup is killed with SIGKILL at random: every accepted message is a complete queue file, nothing stays locked"
	atf_set require.user unprivileged
	atf_set timeout 300
}
kill_parallel_body() {
	cl_instance "service_throttle_time = 1s"
	{ printf 'Subject: k\n\n'; head -c 20000 /dev/urandom | od -An -tx1; } > msg
	killer &
	kpid=$!
	pids=
	for w in 1 2 3 4; do
		(
			i=0
			while [ $i -lt 60 ]; do
				$SUBMIT -s $CL -t 5000 -f a@example.org msg \
				    b@example.net >> results.$w 2>/dev/null
				i=$((i + 1))
			done
		) &
		pids="$pids $!"
	done
	for p in $pids; do wait $p; done
	touch stop
	wait $kpid
	cat results.1 results.2 results.3 results.4 > results
	ok=$(grep -c '^0 2\.0\.0 ' results)
	lost=$(grep -c '^4 4\.3\.0 ' results)
	echo "accepted $ok, failed $lost of 240" >&2
	test $((ok + lost)) -eq 240 || { cat results >&2; atf_fail "odd replies"; }
	test "$ok" -gt 0 || atf_fail "nothing accepted"
	for id in $(awk '$1 == 0 { print $3 }' results); do
		$POSTCAT -e q/incoming/$id > /dev/null 2>&1 ||
		    atf_fail "accepted message $id missing or damaged"
	done
	n=0
	for f in q/incoming/*; do
		case ${f##*/} in tmp.*) continue ;; esac
		$POSTCAT -e $f > /dev/null 2>&1 || atf_fail "damaged visible file $f"
		n=$((n + 1))
	done
	test $n -ge "$ok" || atf_fail "$n files for $ok accepted messages"
	# The commits went through the shared state, which stayed usable.
	test -s q/saved/dirsync.queue || atf_fail "no group commit state"
	if grep 'dirsync state' maillog >&2; then
		atf_fail "the group commit state was not usable"
	fi
	# Nothing is left locked: four more at once go through.
	rm -f results
	for w in 1 2 3 4; do
		$SUBMIT -s $CL -t 5000 -f a@example.org msg b@example.net \
		    > results.$w &
	done
	wait
	cat results.1 results.2 results.3 results.4 > results
	test "$(grep -c '^0 2\.0\.0 ' results)" = 4 ||
	    { cat results >&2; atf_fail "no recovery"; }
	assert_log_clean
}
kill_parallel_cleanup() {
	touch stop
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case local_mail
	atf_add_test_case smtp_mail
	atf_add_test_case early_queue_id
	atf_add_test_case limits
	atf_add_test_case long_lines
	atf_add_test_case maps
	atf_add_test_case extract
	atf_add_test_case garbage
	atf_add_test_case transactions
	atf_add_test_case kill
	atf_add_test_case kill_parallel
}
