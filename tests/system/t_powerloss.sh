#! /usr/bin/env atf-sh
# Power loss, simulated: every daemon runs with libpowerloss.so preloaded,
# which records what an fsync made durable (file data, directory entries,
# renames between directories); "cutting the power" is SIGKILL to the
# whole instance and plcrash building the queue (and the Maildirs) as a
# power cut would have left them: everything not fsynced is gone.  An
# instance started on that tree must deliver every message whose client
# got a 250, intact (doc/queue-file.md, "Power loss, simulated").
#
# The lost_* cases prove that the test catches a broken writer: the layer
# drops cleanup's directory fsync of incoming/, or its file fsyncs, and
# the same check must then find lost mail.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

LIB=$B/tests/tools/libpowerloss.so
PLCRASH=$B/tests/tools/plcrash
SIZE=3000	# bytes a message

# pl_setup [PL_DROP]: the layer works here (else skip), wrappers that
# preload it into every program master starts, the sinks, the reference
# body.  Sets sinkport.
pl_setup() {
	[ -f "$LIB" ] && [ -x "$PLCRASH" ] || atf_skip "libpowerloss.so or plcrash not built"
	mkdir -p probe/d img
	: > probe/d/f
	env LD_PRELOAD="$LIB" PL_IMAGE="$PWD/img" "$PLCRASH" sync probe >/dev/null 2>&1
	ls img/f.* >/dev/null 2>&1 ||
	    atf_skip "the preload layer does not work here (a sanitizer build refuses it)"
	rm -rf probe img
	mkdir img libexec saved refsaved
	for p in "$B"/bin/*; do
		cat > "libexec/${p##*/}" <<EOF
#!/bin/sh
LD_PRELOAD=$LIB PL_IMAGE=$PWD/img PL_DROP=${1:-} exec $p "\$@"
EOF
		chmod 755 "libexec/${p##*/}"
	done
	start_sink ref -d refsaved
	atf_check -s exit:0 -o ignore -e ignore "$SOURCE" -m 1 -l $SIZE 127.0.0.1:$port
	stat_is ref.stats messages 1
	body_of refsaved/msg-00000001.eml > ref.body
	[ -s ref.body ] || atf_fail "no reference body"
	start_sink s -d saved
	sinkport=$port
}

# body_of FILE: what follows the first empty line, line ends as LF (a
# Maildir file has LF, the sink keeps CRLF).
body_of() {
	sed '1,/^\r\{0,1\}$/d' "$1" | tr -d '\r'
}

# pl_instance DAEMON_DIR MASTER.CF-LINES...: smtpd on $smtpport, relay to
# the sink, local delivery into mailroot/pl/Maildir/.
pl_instance() {
	_dd=$1
	shift
	smtpport=$(free_port)
	mkdir -p mailroot/pl
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "relayhost = [127.0.0.1]:$sinkport" \
	    "local_mail_root = $PWD/mailroot" "home_mailbox = Maildir/" \
	    "alias_maps =" "local_recipient_maps =" "recipient_delimiter = +" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 1s" "minimal_backoff_time = 1s" \
	    "maximal_backoff_time = 2s" "qmgr_ipc_timeout = 5s" \
	    "smtp_connect_timeout = 5s" "smtp_helo_timeout = 10s" \
	    "inet_protocols = ipv4" "service_throttle_time = 1s"
	sed "s|^daemon_directory = .*|daemon_directory = $_dd|" etc/main.cf > etc/main.cf.new
	mv etc/main.cf.new etc/main.cf
	mcf "$smtpport inet n - n - - smtpd" "$@"
}

# services: master.cf with the whole system (the smtpd line as before).
ALL_SERVICES="cleanup unix n - n - 0 cleanup|qmgr unix-dgram n - n 3600 1 qmgr|smtp unix - - n - - smtp|scache unix - - n - 1 scache|bounce unix - - n - 0 bounce|defer unix - - n - 0 bounce|local unix - n n - - local"

services() {
	_IFS=$IFS
	IFS='|'
	set -- $ALL_SERVICES
	IFS=$_IFS
	mcf "$smtpport inet n - n - - smtpd" "$@"
}

# The baseline: the tree as it is now counts as synced.
baseline() {
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc check
	env LD_PRELOAD="$LIB" PL_IMAGE="$PWD/img" "$PLCRASH" sync q mailroot ||
	    atf_fail "baseline sync failed"
	[ -n "$(ls img)" ] || atf_fail "the layer recorded nothing"
}

# cut_power: SIGKILL to every process of the instance (master first),
# and to the client; then the post-crash trees replace q and mailroot.
cut_power() {
	_i=0
	while [ $_i -lt 50 ]; do
		_p=$(master_pid)
		[ -n "$_p" ] && kill -9 $_p 2>/dev/null
		_p=$(instance_pids)
		[ -z "$_p" ] && break
		kill -9 $_p 2>/dev/null
		_i=$((_i + 1))
		sleep 0.05
	done
	no_process_left || atf_fail "instance processes survived the power cut: $(instance_pids)"
	for _f in src.pid src2.pid; do
		[ -f $_f ] && { kill -9 "$(cat $_f)" 2>/dev/null; rm -f $_f; }
	done
	mv q q.cut
	mv mailroot mailroot.cut
	"$PLCRASH" build img q.cut q > build.out 2> build.err || {
		cat build.err >&2; atf_fail "plcrash build q"; }
	"$PLCRASH" build img mailroot.cut mailroot >> build.out 2>> build.err || {
		cat build.err >&2; atf_fail "plcrash build mailroot"; }
	cat build.out
	echo "after the cut: incoming $(qn incoming), active $(qn active)," \
	    "deferred $(qn deferred), Maildir $(find mailroot -path '*/new/*' -type f | wc -l)"
}

qn() {
	find q/$1 -type f ! -name 'tmp.*' 2>/dev/null | wc -l | tr -d ' '
}

queue_empty() {
	[ -z "$(find q/incoming q/active q/deferred q/maildrop -type f ! -name 'tmp.*' 2>/dev/null)" ]
}

# restart: an instance without the layer on the post-crash tree, until
# the queue is empty (at most 60 s).
restart() {
	sed "s|^daemon_directory = .*|daemon_directory = $B/bin|" etc/main.cf > etc/main.cf.new
	mv etc/main.cf.new etc/main.cf
	start_instance
	WAIT_MAX=600 wait_for queue_empty ||
	    atf_fail "the queue did not drain after the power cut: $(find q/incoming q/active q/deferred -type f)"
	stop_instance
}

# check_delivered: every message in accepted.list (numbers the client
# saw a 250 for) is at the sink or in the Maildir, with its body intact.
# Sets lost; prints the counts.
check_delivered() {
	: > copies
	for f in saved/msg-* mailroot/pl/Maildir/new/* mailroot/pl/Maildir/cur/*; do
		[ -f "$f" ] || continue
		n=$(sed -n 's/^Subject: smtp-source message \([0-9]*\).*/\1/p' "$f" | head -n 1)
		[ -n "$n" ] || continue
		if body_of "$f" | cmp -s - ref.body; then
			echo "$n" >> copies
		else
			echo "message $n damaged in $f" >&2
		fi
	done
	sort -n copies | uniq -c > copies.count
	accepted=$(wc -l < accepted.list | tr -d ' ')
	lost=0
	for n in $(cut -d' ' -f1 accepted.list); do
		grep -q " $n\$" copies.count || { lost=$((lost + 1)); echo "lost: message $n ($(grep "^$n " accepted.list))" >&2; }
	done
	dups=$(awk '$1 > 1 { d += $1 - 1 } END { print d + 0 }' copies.count)
	corrupt=$(find q/corrupt -type f 2>/dev/null | wc -l | tr -d ' ')
	echo "accepted (250) $accepted; delivered intact $(wc -l < copies.count | tr -d ' ')" \
	    "distinct; lost $lost; duplicates $dups; files in corrupt/ $corrupt"
}

# accept_then_cut [PL_DROP]: smtpd and cleanup only (nothing leaves
# incoming/), 200 messages (1-100 relayed, 1001-1100 local), power cut,
# restart with the whole system.
accept_then_cut() {
	pl_setup "$@"
	pl_instance "$PWD/libexec" "cleanup unix n - n - 0 cleanup"
	baseline
	start_instance
	"$SOURCE" -a -s 2 -m 100 -l $SIZE -M 10 -o accepted.list \
	    -t 'rcpt%n@far.example.test' 127.0.0.1:$smtpport > src1.out 2> src1.err
	"$SOURCE" -a -s 2 -m 100 -N 1001 -l $SIZE -M 10 -o accepted.list \
	    -t 'pl+%n@localhost' 127.0.0.1:$smtpport > src2.out 2> src2.err
	[ "$(wc -l < accepted.list)" -ge 150 ] ||
	    atf_fail "too few messages accepted before the cut: $(wc -l < accepted.list); $(cat src1.err src2.err)"
	cut_power
	services
	restart
	check_delivered
}

atf_test_case accept cleanup
accept_head() {
	atf_set descr "250 means on disk: 200 messages accepted by smtpd/cleanup under the power-loss layer, power cut, restart: every 250'd message is delivered intact"
	atf_set require.user unprivileged
	atf_set timeout 120
}
accept_body() {
	accept_then_cut
	[ "$lost" = 0 ] || atf_fail "$lost messages that got a 250 were lost by the power cut"
	[ "$corrupt" = 0 ] || atf_fail "files in corrupt/ after the power cut"
	stop_instance
	finish
}
accept_cleanup() {
	stop_instance
	stop_all
}

atf_test_case lost_dir_fsync cleanup
lost_dir_fsync_head() {
	atf_set descr "the test catches a writer that skips the directory fsync: with cleanup's fsync of incoming/ dropped, 250'd messages are lost"
	atf_set require.user unprivileged
	atf_set timeout 120
}
lost_dir_fsync_body() {
	accept_then_cut cleanup:dir:incoming
	[ "$lost" -gt 0 ] || atf_fail "no message lost although the directory fsync was dropped: the test cannot see that"
	stop_instance
	finish
}
lost_dir_fsync_cleanup() {
	stop_instance
	stop_all
}

atf_test_case lost_file_fsync cleanup
lost_file_fsync_head() {
	atf_set descr "the test catches a writer that skips the file fsync: with cleanup's file fsyncs dropped, 250'd messages are lost or damaged"
	atf_set require.user unprivileged
	atf_set timeout 120
}
lost_file_fsync_body() {
	accept_then_cut cleanup:file
	[ "$lost" -gt 0 ] || atf_fail "no message lost although the file fsync was dropped: the test cannot see that"
	stop_instance
	finish
}
lost_file_fsync_cleanup() {
	stop_instance
	stop_all
}

atf_test_case flow cleanup
flow_head() {
	atf_set descr "power cut in full flow: messages are accepted, queued, relayed and delivered into a Maildir while the power is cut at a random moment; every 250'd message is delivered intact afterwards (duplicates allowed)"
	atf_set require.user unprivileged
	atf_set timeout 120
}
flow_body() {
	pl_setup
	pl_instance "$PWD/libexec"
	services
	baseline
	start_instance
	spawn src "$SOURCE" -a -s 3 -m 300 -l $SIZE -M 5 -o accepted.list \
	    -t 'rcpt%n@far.example.test' 127.0.0.1:$smtpport
	spawn src2 "$SOURCE" -a -s 2 -m 200 -N 1001 -l $SIZE -M 5 -o accepted.list \
	    -t 'pl+%n@localhost' 127.0.0.1:$smtpport
	WAIT_MAX=300 wait_for lines_ge 60 . accepted.list ||
	    atf_fail "fewer than 60 messages accepted: $(cat src.err src2.err)"
	sleep 0.$(( $(od -An -N1 -tu1 /dev/urandom) % 6 ))
	echo "power cut with $(wc -l < accepted.list) messages accepted," \
	    "$(value s.stats messages) at the sink," \
	    "$(find mailroot -path '*/new/*' -type f | wc -l) in the Maildir"
	cut_power
	restart
	check_delivered
	[ "$lost" = 0 ] || atf_fail "$lost messages that got a 250 were lost by the power cut"
	[ "$corrupt" = 0 ] || atf_fail "files in corrupt/ after the power cut"
	stop_instance
	finish
}
flow_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case accept
	atf_add_test_case lost_dir_fsync
	atf_add_test_case lost_file_fsync
	atf_add_test_case flow
}
