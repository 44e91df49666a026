#! /usr/bin/env atf-sh
# Crash safety of the way in: cleanup is killed with SIGKILL at random
# moments while hundreds of messages are submitted.  Every message must
# end up as a complete queue file in incoming/ (or be in maildrop/ and
# get queued once cleanup runs again); no incomplete file may ever be
# visible in incoming/; nothing may be lost (duplicates are allowed: the
# guarantee is at-least-once).

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr

N=320		# messages
P=4		# parallel submitters

# A random digit 1..9.
rnd() {
	echo $(( $(od -An -N1 -tu1 /dev/urandom) % 9 + 1 ))
}

# The distinct markers in the queue files (not temporary files, which a
# killed cleanup leaves) of the queues named, in that order.  Give
# maildrop before incoming: a message leaves maildrop only after it is
# in incoming, and nothing leaves incoming (no qmgr), so looking in that
# order misses nothing that moves meanwhile.
markers() {
	for q in "$@"; do
		[ -d q/$q ] && grep -raoh --exclude='tmp.*' 'marker m[0-9]*' q/$q 2>/dev/null
	done | sort -u | wc -l | tr -d ' '
}

# Every file in incoming/ is a complete queue file (one postcat for all).
incoming_valid() {
	_f=$(qfiles incoming)
	[ -z "$_f" ] && return 0
	$POSTCAT $_f > /dev/null 2> postcat.err
}

atf_test_case kill_cleanup cleanup
kill_cleanup_head() {
	atf_set descr "SIGKILL to cleanup at random moments while $N messages are submitted: each message is queued or still in maildrop, no incomplete file is visible, nothing is lost"
	atf_set require.user unprivileged
	atf_set timeout 300
}
kill_cleanup_body() {
	# A cleanup killed before it said it was ready counts as a start-up
	# failure: keep master's pause short.
	mk_submit "service_throttle_time = 1s"
	PICKUP_WAKEUP=1 mcf_submit
	start_instance
	start=$(date +%s)

	# The killer: every 10..90 ms, SIGKILL to every cleanup process.
	(
		i=0
		while [ ! -e stop ] && [ $i -lt 3000 ]; do
			i=$((i + 1))
			sleep 0.0$(rnd)
			for p in $(pgrep -f -- "/cleanup -c $PWD/etc"); do
				kill -9 $p 2>/dev/null && echo $p >> kills
			done
		done
	) &
	killer=$!
	# The watcher: whatever is visible in incoming/ is complete.
	(
		i=0
		while [ ! -e stop ] && [ $i -lt 1000 ]; do
			i=$((i + 1))
			incoming_valid || { cat postcat.err >> invalid; }
			echo >> checks
			sleep 0.2
		done
	) &
	watcher=$!
	pids=
	for w in $(seq 1 $P); do
		(
			i=$w
			while [ $i -le $N ]; do
				printf 'Subject: m%s\nX-Marker: m%s\n\nmarker m%s\n' $i $i $i |
				    $SENDMAIL -f alice@example.org bob@example.com \
				    2>> sendmail.err || echo $i >> failed
				i=$((i + P))
			done
		) &
		pids="$pids $!"
	done
	for p in $pids; do wait $p; done
	touch stop
	wait $killer
	wait $watcher
	echo "submitted $N messages in $(( $(date +%s) - start )) s;" \
	    "cleanup was killed $(wc -l < kills 2>/dev/null || echo 0) times;" \
	    "incoming/ validated $(wc -l < checks) times;" \
	    "pickup lost $(grep -c 'not queued:\|cannot connect to cleanup' maillog) transactions"
	[ -s checks ] || atf_fail "incoming/ was never checked while cleanup was killed"

	[ -s failed ] && atf_fail "sendmail failed for: $(cat failed): $(cat sendmail.err)"
	[ -s invalid ] && atf_fail "an incomplete file was visible: $(cat invalid)"
	[ -s kills ] || atf_fail "cleanup was never killed"
	# Right after the last kill: each message is in incoming/ or maildrop/.
	got=$(markers maildrop incoming)
	[ "$got" = $N ] || atf_fail "after the kills only $got of $N messages are in incoming/ or maildrop/"
	# With cleanup left alone, maildrop/ drains.
	WAIT_MAX=300 wait_for qcount_is maildrop 0 ||
	    atf_fail "maildrop did not drain: $(qcount maildrop) files left"
	incoming_valid || atf_fail "invalid file in incoming/: $(cat postcat.err)"
	got=$(markers incoming)
	[ "$got" = $N ] || atf_fail "only $got of $N messages reached incoming/"
	qcount_is corrupt 0 || atf_fail "files in corrupt/: $(qfiles corrupt)"
	# The commits (postdrop's into maildrop/, cleanup's into incoming/)
	# went through the directory-fsync group commit, whose state stayed
	# usable although cleanup was killed in the middle of it.
	test -s q/saved/dirsync.queue || atf_fail "no group commit state"
	if grep 'dirsync state' maillog >&2; then
		atf_fail "the group commit state was not usable"
	fi
	echo "$(qcount incoming) queue files for $N messages" \
	    "($(( $(qcount incoming) - N )) duplicates); total $(( $(date +%s) - start )) s"
	assert_log_clean
}
kill_cleanup_cleanup() {
	touch stop
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case kill_cleanup
}
