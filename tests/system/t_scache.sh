#! /usr/bin/env atf-sh
# The shared connection cache end to end: a private instance with qmgr,
# smtp recycled after 5 deliveries (max_use) and scache; mail injected
# into incoming/, smtp-sink as the next hop.  With the cache the sink
# sees a handful of connections for 200 messages (each process hands its
# session on); without it, or with it stopped (it never answers), every
# message still arrives exactly once.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/common.subr

MKQ=$B/tests/tools/mkqfile

# cache_instance SINKPORT with|without [main.cf lines...]
cache_instance() {
	_sp=$1
	_with=$2
	shift 2
	mk_instance \
	    "myhostname = client.test" \
	    "mydestination = localhost" \
	    "relayhost = [127.0.0.1]:$_sp" \
	    "queue_run_delay = 3600s" \
	    "minimal_backoff_time = 3000s" \
	    "maximal_backoff_time = 4000s" \
	    "qmgr_ipc_timeout = 5s" \
	    "inet_protocols = ipv4" \
	    "smtp_helo_timeout = 10s" \
	    "smtp_connect_timeout = 5s" \
	    "default_destination_concurrency_limit = 5" \
	    "connection_cache_protocol_timeout = 1s" \
	    "$@"
	{
		echo "qmgr unix n - n 3600 1 $B/bin/qmgr"
		echo "smtp unix - n n - - $B/bin/smtp -o max_use=5"
		[ "$_with" = with ] && echo "scache unix - n n - 1 $B/bin/scache"
	} > etc/master.cf
}

# inject_n N FIRST: N messages with recipients userFIRST.. userFIRST+N-1.
inject_n() {
	_i=$2
	_end=$(($2 + $1))
	while [ $_i -lt $_end ]; do
		printf 'Subject: scache test\n\nbody\n' |
		    $MKQ -d $PWD/q -f sender@client.test -r user$_i@far.test \
		    > /dev/null || atf_fail "mkqfile"
		_i=$((_i + 1))
	done
}

stat_ge() {
	[ "$(value "$1" "$2" 2>/dev/null)" -ge "$3" ] 2>/dev/null
}

queue_empty() {
	test -z "$(find q/incoming q/active q/deferred -type f 2>/dev/null)"
}

# Every message arrived exactly once: the count, the queue empty, and
# each recipient once among the saved messages.
exactly_once() {
	WAIT_MAX=600 wait_for stat_ge s.stats messages $1 ||
	    atf_fail "not all delivered: $(value s.stats messages) of $1"
	WAIT_MAX=100 wait_for queue_empty || atf_fail "queue not empty"
	sleep 1
	test "$(value s.stats messages)" -eq $1 ||
	    atf_fail "duplicates: $(value s.stats messages) messages for $1"
	dups=$(cat saved/* | sed -n 's/^X-Sink-Rcpt-To: //p' | sort | uniq -d)
	[ -z "$dups" ] || atf_fail "delivered twice: $dups"
	test "$(cat saved/* | grep -c '^X-Sink-Rcpt-To: ')" -eq $1 ||
	    atf_fail "recipients missing among the saved messages"
}

scache_pid() {
	pgrep -f -- "bin/scache -c $PWD/etc" 2>/dev/null | head -n 1
}

atf_test_case recycled cleanup
recycled_head() {
	atf_set descr "smtp recycled every 5 deliveries: 200 messages take a handful of connections through scache, each arrives once"
	atf_set require.user unprivileged
	atf_set timeout 600
}
recycled_body() {
	mkdir saved
	start_sink s -d saved
	cache_instance "$port" with
	inject_n 200 0
	start_instance
	exactly_once 200
	conns=$(value s.stats connections)
	echo "200 messages, smtp max_use 5, with scache: $conns connections" >&2
	# Without sharing every process opens its own: at least 200/5.
	[ "$conns" -le 10 ] || atf_fail "$conns connections for 200 messages"
	stop_instance
	assert_log_clean
	# Nothing went wrong between the agents and the cache.
	grep -E "petrel/(smtp|scache)\[[0-9]+\]: warning" maillog >&2 &&
	    atf_fail "warnings from smtp or scache in the log"
	finish
}
recycled_cleanup() {
	stop_instance
	stop_all
}

atf_test_case absent cleanup
absent_head() {
	atf_set descr "no scache in master.cf: every smtp process connects itself, every message arrives once"
	atf_set require.user unprivileged
	atf_set timeout 600
}
absent_body() {
	mkdir saved
	start_sink s -d saved
	cache_instance "$port" without
	inject_n 200 0
	start_instance
	exactly_once 200
	conns=$(value s.stats connections)
	echo "200 messages, smtp max_use 5, without scache: $conns connections" >&2
	[ "$conns" -ge 40 ] || atf_fail "only $conns connections without the cache?"
	in_log "connection cache private/scache: connect: No such file or directory; not used for 60 s" ||
	    atf_fail "no warning about the missing cache"
	stop_instance
	assert_log_clean
	finish
}
absent_cleanup() {
	stop_instance
	stop_all
}

atf_test_case stopped cleanup
stopped_head() {
	atf_set descr "scache stopped (it never answers): each process waits connection_cache_protocol_timeout once, connects itself, every message arrives once"
	atf_set require.user unprivileged
	atf_set timeout 600
}
stopped_body() {
	mkdir saved
	start_sink s -d saved
	cache_instance "$port" with
	inject_n 5 0
	start_instance
	WAIT_MAX=300 wait_for stat_ge s.stats messages 5 || atf_fail "first messages"
	pid=$(scache_pid)
	[ -n "$pid" ] || atf_fail "scache is not running"
	echo "$pid" > scache.stopped
	kill -STOP "$pid"
	inject_n 100 5
	flush_t0=$(date +%s)
	$PETREL -c $PWD/etc flush > /dev/null 2>&1
	exactly_once 105
	took=$(($(date +%s) - flush_t0))
	echo "100 messages with scache stopped: $(value s.stats connections) connections, $took s" >&2
	in_log "connection cache private/scache: timed out waiting for a reply; not used for 60 s" ||
	    atf_fail "no warning about the silent cache"
	kill -CONT "$pid"
	rm -f scache.stopped
	stop_instance
	assert_log_clean
	finish
}
stopped_cleanup() {
	[ -f scache.stopped ] && kill -CONT "$(cat scache.stopped)" 2>/dev/null
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case recycled
	atf_add_test_case absent
	atf_add_test_case stopped
}
