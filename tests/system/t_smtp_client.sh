#! /usr/bin/env atf-sh
# The SMTP client end to end: a private instance with qmgr and the smtp
# delivery agent under master, mail injected into incoming/, smtp-sink
# (and fakedns) as the outside world.  Delivery via relayhost, a
# transport-table [address]:port and MX lookup with fallback; connection
# reuse counted by the sink; qmgr's concurrency feedback against a sink
# that refuses sessions beyond 5, in the postfix and the learn feedback
# modes; a dead port with 1,000 waiting messages.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/smtp_client.subr
. @SRCDIR@/tests/system/queue.subr

# inject [mkqfile options...]: a message in incoming/; prints its ID.
inject() {
	printf 'Subject: smtp client test\n\n.leading dot\nbody\n' |
	    $MKQ -d $PWD/q -f sender@client.test "$@"
}

flush() {
	$PETREL -c $PWD/etc flush >/dev/null 2>&1
}

# A sink on ADDR (127.0.0.x:port): sink_at NAME ADDR [OPT...]
sink_at() {
	_n=$1
	_a=$2
	shift 2
	start_server "$_n" smtp-sink "$SINK" -P "$_n.port" -s "$_n.stats" "$@" "$_a"
}

stat_ge() {
	[ "$(value "$1" "$2" 2>/dev/null)" -ge "$3" ] 2>/dev/null
}

atf_test_case relayhost cleanup
relayhost_head() {
	atf_set descr "mail for a remote domain goes to relayhost; per-recipient results in the log and the queue"
	atf_set require.user unprivileged
	atf_set timeout 120
}
relayhost_body() {
	mkdir -p saved
	start_sink s -d saved
	smtp_instance "relayhost = [127.0.0.1]:$port"
	ok=$(inject -r a@far.test -r b@far.test) || atf_fail "mkqfile"
	mixed=$(inject -r c@far.test -r tempfail@far.test -r permfail@far.test) ||
	    atf_fail "mkqfile"
	start_instance
	stat_is s.stats messages 2
	WAIT_MAX=100 wait_for in_log "$ok: removed" || atf_fail "$ok not removed"
	WAIT_MAX=100 wait_for in_queue deferred $mixed || atf_fail "$mixed not deferred"
	grep -q "$ok: to=<a@far.test>, relay=127.0.0.1\[127.0.0.1\]:$port, delay=[0-9.]*, delays=[0-9.]*/[0-9.]*/[0-9.]*/[0-9.]*, dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as" maillog ||
	    atf_fail "no sent line"
	grep -q "$mixed: to=<tempfail@far.test>, relay=127.0.0.1\[127.0.0.1\]:$port, .*dsn=4.2.0, status=deferred (host 127.0.0.1\[127.0.0.1\] said: 450 4.2.0 .*(in reply to RCPT TO command))" maillog ||
	    atf_fail "no deferred line"
	grep -q "$mixed: to=<permfail@far.test>, .*dsn=5.1.1, status=bounced (host 127.0.0.1\[127.0.0.1\] said: 550 5.1.1" maillog ||
	    atf_fail "no bounced line"
	# the sink got the content dot-stuffed and undid it
	grep -l "^\.leading dot" saved/* >/dev/null || atf_fail "content"
	test "$(value s.stats recipients)" -eq 3 || atf_fail "recipients"
	stop_instance
	assert_log_clean
	finish
}
relayhost_cleanup() {
	stop_instance
	stop_all
}

atf_test_case transport_literal cleanup
transport_literal_head() {
	atf_set descr "a transport table entry smtp:[127.0.0.1]:port"
	atf_set require.user unprivileged
	atf_set timeout 120
}
transport_literal_body() {
	start_sink s
	smtp_instance
	echo "lit.test smtp:[127.0.0.1]:$port" > etc/transport
	id=$(inject -r user@lit.test) || atf_fail "mkqfile"
	start_instance
	stat_is s.stats messages 1
	WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "not removed"
	in_log "$id: to=<user@lit.test>, relay=127.0.0.1\[127.0.0.1\]:$port, .*status=sent" ||
	    atf_fail "no sent line"
	stop_instance
	assert_log_clean
	finish
}
transport_literal_cleanup() {
	stop_instance
	stop_all
}

atf_test_case mx_fallback cleanup
mx_fallback_head() {
	atf_set descr "MX lookup through fakedns: the first MX refuses, the second takes the mail"
	atf_set require.user unprivileged
	atf_set timeout 120
}
mx_fallback_body() {
	cat > zone <<EOF
far.test MX 10 mx1.far.test
far.test MX 20 mx2.far.test
mx1.far.test A 127.0.0.3
mx2.far.test A 127.0.0.2
EOF
	start_dns dns
	dport=$port
	sink_at s 127.0.0.2:0
	smtp_instance "dns_server_address = 127.0.0.1:$dport"
	echo "far.test smtp:far.test:$port" > etc/transport
	id=$(inject -r user@far.test) || atf_fail "mkqfile"
	start_instance
	stat_is s.stats messages 1
	WAIT_MAX=100 wait_for in_log "$id: removed" || atf_fail "not removed"
	in_log "connect to mx1.far.test\[127.0.0.3\]:$port: Connection refused" ||
	    atf_fail "first MX not tried"
	in_log "$id: to=<user@far.test>, relay=mx2.far.test\[127.0.0.2\]:$port, .*status=sent" ||
	    atf_fail "no sent line via mx2"
	stop_instance
	assert_log_clean
	finish
}
mx_fallback_cleanup() {
	stop_instance
	stop_all
}

atf_test_case reuse cleanup
reuse_head() {
	atf_set descr "200 messages to one destination use far fewer than 200 connections"
	atf_set require.user unprivileged
	atf_set timeout 300
}
reuse_body() {
	start_sink s
	smtp_instance "relayhost = [127.0.0.1]:$port"
	i=0
	while [ $i -lt 200 ]; do
		inject -r user$i@far.test > /dev/null || atf_fail "mkqfile"
		i=$((i + 1))
	done
	start_instance
	WAIT_MAX=600 wait_for stat_ge s.stats messages 200 || atf_fail "not all delivered: $(value s.stats messages)"
	conns=$(value s.stats connections)
	echo "200 messages over $conns connections" >&2
	[ "$conns" -le 40 ] || atf_fail "$conns connections for 200 messages"
	test "$(value s.stats messages)" -eq 200 || atf_fail "duplicates"
	stop_instance
	assert_log_clean
	finish
}
reuse_cleanup() {
	stop_instance
	stop_all
}

# sink5_setup [main.cf lines...]: a sink that takes 5 sessions and answers
# 421 beyond (0.2 s per recipient keeps sessions open long enough to
# overlap), an instance relaying to it with 1/N feedback and the feedback
# debug log, and 100 two-recipient messages in incoming/.  Variables
# sink_w (ms per recipient), sink_opts (more sink options) and nmsg
# (messages) change those figures.
sink5_setup() {
	start_sink s -S 5 -W ${sink_w:-200} ${sink_opts:-}
	smtp_instance "relayhost = [127.0.0.1]:$port" \
	    "initial_destination_concurrency = 5" \
	    "default_destination_concurrency_limit = 20" \
	    "destination_concurrency_positive_feedback = 1/concurrency" \
	    "destination_concurrency_negative_feedback = 1/concurrency" \
	    "destination_concurrency_failed_cohort_limit = 10" \
	    "destination_concurrency_feedback_debug = yes" \
	    "smtp_connection_cache_on_demand = no" \
	    "$@"
	i=0
	while [ $i -lt ${nmsg:-100} ]; do
		inject -r a$i@far.test -r b$i@far.test > /dev/null || atf_fail "mkqfile"
		i=$((i + 1))
	done
}

atf_test_case feedback_421 cleanup
feedback_421_head() {
	atf_set descr "a server refusing sessions beyond 5 with 421: qmgr's window stays near 5; the deferral ratio is printed; every message arrives once"
	atf_set require.user unprivileged
	atf_set timeout 600
}
feedback_421_body() {
	sink5_setup
	start_instance
	# every message is delivered or deferred once
	WAIT_MAX=900 wait_for lines_ge 200 ": to=<" maillog ||
	    atf_fail "first pass incomplete: $(count ': to=<' maillog) lines"
	sent=$(count 'status=sent' maillog)
	deferred=$(count 'status=deferred' maillog)
	rejected=$(value s.stats rejected_sessions)
	windows=$(sed -n 's/.*feedback: [^ ]* [a-z]*: window [0-9]*->\([0-9]*\) .*/\1/p' maillog)
	n=$(echo "$windows" | grep -c .)
	mean=$(echo "$windows" | awk '{ s += $1 } END { if (NR) printf "%.2f", s / NR }')
	max=$(echo "$windows" | sort -n | tail -n 1)
	echo "first pass: $sent recipients sent, $deferred deferred (deferral ratio $(awk "BEGIN { printf \"%.3f\", $deferred / ($sent + $deferred) }")), $rejected sessions refused, window mean $mean over $n changes, max $max" >&2
	[ "$rejected" -gt 0 ] || atf_fail "the sink never refused a session: no overload"
	[ -n "$max" ] && [ "$max" -le 12 ] || atf_fail "window grew to $max"
	# flush until everything is in; each message exactly once
	tries=0
	while ! stat_ge s.stats recipients 200; do
		tries=$((tries + 1))
		[ $tries -le 20 ] || atf_fail "not all delivered: $(value s.stats recipients)"
		flush
		sleep 3
	done
	test "$(value s.stats recipients)" -eq 200 || atf_fail "duplicates: $(value s.stats recipients)"
	stop_instance
	assert_log_clean
	finish
}
feedback_421_cleanup() {
	stop_instance
	stop_all
}

# first_pass_421 MODE: in directory MODE, 100 two-recipient messages
# through a sink that takes 5 sessions and answers 421 beyond, with
# destination_concurrency_feedback_mode MODE for the smtp transport;
# waits for the first pass and leaves the sink's count of refused sessions
# in MODE/refused.
first_pass_421() {
	mkdir "$1" && cd "$1" || atf_fail "mkdir $1"
	sink5_setup "smtp_destination_concurrency_feedback_mode = $1"
	start_instance
	WAIT_MAX=900 wait_for lines_ge 200 ": to=<" maillog ||
	    atf_fail "$1: first pass incomplete: $(count ': to=<' maillog) lines"
	value s.stats rejected_sessions > refused
	echo "$1 mode: $(count 'status=sent' maillog) recipients sent, $(count 'status=deferred' maillog) deferred, $(cat refused) sessions refused" >&2
	stop_instance
	assert_log_clean
	finish
	cd ..
}

atf_test_case feedback_learn cleanup
feedback_learn_head() {
	atf_set descr "the learn feedback mode against a server refusing sessions beyond 5: fewer 421s than the simulator's bound for it, which the postfix mode exceeds"
	atf_set require.user unprivileged
	atf_set timeout 900
}
feedback_learn_body() {
	# The bound: the simulator's count for this test (tests/sim/
	# sink5-learn.sim), doubled, plus 2.  Real timing is not lockstep: a
	# session the sink still counts while qmgr already heard of its end
	# makes an extra refusal now and then.
	sim=$($BUILDDIR/bin/qmgr-sim @SRCDIR@/tests/sim/sink5-learn.sim |
	    sed -n 's/^dest far.test: transport.* rejected_421=\([0-9]*\) .*/\1/p')
	[ -n "$sim" ] || atf_fail "no refusal count from qmgr-sim"
	bound=$((2 * sim + 2))
	first_pass_421 learn
	first_pass_421 postfix
	learn=$(cat learn/refused)
	pf=$(cat postfix/refused)
	echo "sessions refused: learn $learn, postfix $pf, bound $bound (qmgr-sim: $sim)" >&2
	grep -q 'feedback: smtp:.* ceiling [1-9]' learn/maillog ||
	    atf_fail "learn mode: no ceiling learned"
	[ "$learn" -le "$bound" ] || atf_fail "learn mode: $learn sessions refused, bound $bound"
	[ "$pf" -gt "$bound" ] || atf_fail "postfix mode: only $pf sessions refused: the bound $bound does not tell the modes apart"
}
feedback_learn_cleanup() {
	for d in learn postfix; do
		[ -d "$d" ] || continue
		(cd "$d" && stop_instance; stop_all)
	done
}

# set_limit N: the sink's session limit becomes N (--limit-file=limit).
set_limit() {
	echo "$1" > limit.new && mv limit.new limit
	kill -HUP "$(cat s.pid)"
	grep_wait s.err "session limit $1 "
}

# ceiling_since LINE RE: a learn-mode feedback line after line LINE of
# maillog shows a ceiling matching RE.
ceiling_since() {
	tail -n +$(($1 + 1)) maillog | grep -Eq "feedback: smtp:.* ceiling $2 "
}

atf_test_case feedback_learn_follow cleanup
feedback_learn_follow_head() {
	atf_set descr "the learn feedback mode follows a server whose session limit goes from 5 to 10 and then to 3, each within 60 s"
	atf_set require.user unprivileged
	atf_set timeout 900
}
feedback_learn_follow_body() {
	echo 5 > limit
	# 1 s per two-recipient session; enough mail for the whole run
	sink_w=500 sink_opts=--limit-file=limit nmsg=800
	sink5_setup "smtp_destination_concurrency_feedback_mode = learn"
	start_instance
	WAIT_MAX=300 wait_for ceiling_since 0 5 || atf_fail "limit 5 not learned"
	# let failed probes space out (1, 2, 4, 8, 16 s) before the rise; the
	# ceiling stays 5, give or take one: qmgr hears of a session's end a
	# little before or after the sink counts it closed (under load)
	mark=$(wc -l < maillog)
	sleep 20
	bad=$(tail -n +$((mark + 1)) maillog |
	    grep -E 'feedback: smtp:.* ceiling ([0-3]|[7-9]|[1-9][0-9]+) ' | head -n 1)
	[ -z "$bad" ] || atf_fail "limit 5 not kept: $bad"
	ceiling_since $mark 5 || atf_fail "no ceiling 5 while the limit was 5"
	mark=$(wc -l < maillog)
	start=$(date +%s)
	set_limit 10
	WAIT_MAX=600 wait_for ceiling_since $mark 10 ||
	    atf_fail "the rise to 10 was not followed within 60 s"
	echo "rise to 10 followed in $(($(date +%s) - start)) s" >&2
	mark=$(wc -l < maillog)
	start=$(date +%s)
	set_limit 3
	WAIT_MAX=600 wait_for ceiling_since $mark '[1-3]' ||
	    atf_fail "the fall to 3 was not followed within 60 s"
	echo "fall to 3 followed in $(($(date +%s) - start)) s" >&2
	echo "sessions refused: $(value s.stats rejected_sessions) of $(value s.stats connections) connections" >&2
	grep -q ' dead$' maillog && atf_fail "the destination was declared dead"
	stop_instance
	assert_log_clean
	finish
}
feedback_learn_follow_cleanup() {
	stop_instance
	stop_all
}

atf_test_case dead_port cleanup
dead_port_head() {
	atf_set descr "1,000 messages for a dead port: a bounded number of connection attempts, the rest suspended"
	atf_set require.user unprivileged
	atf_set timeout 600
}
dead_port_body() {
	port=$($TS freeport)
	smtp_instance "relayhost = [127.0.0.1]:$port" \
	    "initial_destination_concurrency = 5"
	i=0
	while [ $i -lt 1000 ]; do
		inject -r user$i@far.test > /dev/null || atf_fail "mkqfile"
		i=$((i + 1))
	done
	start_instance
	WAIT_MAX=1200 wait_for lines_ge 1000 ": to=<" maillog ||
	    atf_fail "not all deferred: $(count ': to=<' maillog)"
	# the agent's own line per attempt (status lines quote it too)
	attempts=$(count "\]: connect to 127.0.0.1\[127.0.0.1\]:$port: Connection refused" maillog)
	suspended=$(count 'status=deferred (delivery temporarily suspended' maillog)
	echo "1000 messages: $attempts connection attempts, $suspended suspended" >&2
	[ "$attempts" -ge 1 ] && [ "$attempts" -le 20 ] || atf_fail "$attempts connection attempts"
	[ "$suspended" -ge 980 ] || atf_fail "only $suspended suspended"
	stop_instance
	assert_log_clean
}
dead_port_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case relayhost
	atf_add_test_case transport_literal
	atf_add_test_case mx_fallback
	atf_add_test_case reuse
	atf_add_test_case feedback_421
	atf_add_test_case feedback_learn
	atf_add_test_case feedback_learn_follow
	atf_add_test_case dead_port
}
