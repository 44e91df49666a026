#! /usr/bin/env atf-sh
# Destination grouping by MX hosts (doc/scheduler.md section 11), end to
# end: qmgr and smtp under master, fakedns saying that three domains have
# one MX host (127.0.0.2, where smtp-sink listens with -S 5: a provider
# that takes 5 sessions in all and answers 421 beyond).  Grouped by mx,
# the three domains share one window of 5 and the provider is not
# overrun; grouped by domain, three windows of 5 overrun it.  A dead
# provider is found dead once, for all its domains.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/smtp_client.subr

MKQ=$B/tests/tools/mkqfile
POSTQ=$B/bin/postq

# group_instance GROUPING DNSPORT SMTPPORT [main.cf lines...]: the smtp
# client's instance (smtp_client.subr); a.test ... f.test reach port
# SMTPPORT of their MX hosts through etc/transport; one connection per
# delivery (no connection cache), so the sink's session count is the
# concurrency.
group_instance() {
	_g=$1 _dp=$2 _sp=$3
	shift 3
	smtp_instance \
	    "dns_server_address = 127.0.0.1:$_dp" \
	    "smtp_connection_cache_on_demand = no" \
	    "smtp_destination_grouping = $_g" \
	    "$@"
	for _d in a b c d e f; do
		echo "$_d.test smtp:$_d.test:$_sp" >> etc/transport
	done
}

# start_sink_at NAME [OPT...]: smtp-sink on 127.0.0.2 (the MX hosts'
# address: the smtp client takes 127.0.0.1 for itself, a mail loop).
start_sink_at() {
	_s=$1
	shift
	start_server "$_s" smtp-sink "$SINK" -P "$_s.port" -s "$_s.stats" "$@" \
	    127.0.0.2:0
}

# The provider's domains (c.test spells its MX differently: the same
# host) and a dead provider's.
provider_zone() {
	cat > zone <<'ZONE'
a.test MX 10 mx.provider.test
b.test MX 10 mx.provider.test
c.test MX 20 MX.Provider.Test.
mx.provider.test A 127.0.0.2
d.test MX 10 mx.dead.test
e.test MX 10 mx.dead.test
f.test MX 10 mx.dead.test
mx.dead.test A 127.0.0.2
ZONE
}

# inject_spread N: N messages of two recipients each, at a.test, b.test
# and c.test in turn.
inject_spread() {
	_i=0
	while [ $_i -lt $1 ]; do
		case $((_i % 3)) in
		0) _d=a.test ;; 1) _d=b.test ;; *) _d=c.test ;;
		esac
		printf 'Subject: mx group test\n\nbody\n' |
		    $MKQ -d $PWD/q -f sender@client.test -r x$_i@$_d -r y$_i@$_d \
		    > /dev/null || atf_fail "mkqfile"
		_i=$((_i + 1))
	done
}

# run_wave GROUPING: 60 messages (120 recipients) for the provider; runs
# until every recipient was tried once and prints the sink's figures.
run_wave() {
	provider_zone
	start_dns dns
	dport=$port
	start_sink_at s -S 5 -W 200
	group_instance $1 $dport $port \
	    "initial_destination_concurrency = 5" \
	    "smtp_destination_concurrency_limit = 5" \
	    "destination_concurrency_failed_cohort_limit = 100"
	inject_spread 60
	start_instance
	WAIT_MAX=900 wait_for lines_ge 120 ": to=<" maillog ||
	    atf_fail "first pass incomplete: $(grep -c ': to=<' maillog) lines"
	stop_instance
	echo "grouping=$1: sink max_active=$(value s.stats max_active)" \
	    "rejected_sessions=$(value s.stats rejected_sessions)" \
	    "sessions=$(value s.stats sessions)" \
	    "recipients=$(value s.stats recipients)" \
	    "deferred=$(grep -c 'status=deferred' maillog)" >&2
}

atf_test_case shared_window cleanup
shared_window_head() {
	atf_set descr "three domains with one MX host and a transport window of 5: grouped by mx the provider (5 sessions) is never overrun; grouped by domain it is"
	atf_set require.user unprivileged
	atf_set timeout 600
}
shared_window_body() {
	mkdir on off
	cd on || atf_fail "cd"
	run_wave mx
	rej=$(value s.stats rejected_sessions)
	# The group was known before the first delivery of each domain
	# (logged once per domain, the same group for all three).
	for d in a b c; do
		in_log "mx group of $d.test:$port: {mx.provider.test}:$port" ||
		    atf_fail "no group logged for $d.test"
	done
	# At most 5 deliveries at once in all.  A delivery has ended for
	# qmgr when the agent reports it, which can be a moment before the
	# sink has seen the QUIT and closed the session; a new connection
	# in that moment is refused.  Allow 3 such races in 120 deliveries.
	[ "$rej" -le 3 ] || atf_fail "grouped: the provider refused $rej sessions"
	[ "$(value s.stats recipients)" -ge 114 ] ||
	    atf_fail "grouped: only $(value s.stats recipients) of 120 delivered on the first pass"
	assert_log_clean
	stop_all
	# The same by domain: three windows of 5 at a 5-session provider.
	cd ../off || atf_fail "cd"
	run_wave domain
	rej_off=$(value s.stats rejected_sessions)
	[ "$rej_off" -ge $((rej + 5)) ] ||
	    atf_fail "grouping made no difference: $rej against $rej_off refused sessions"
	in_log "mx group of" && atf_fail "lookups with grouping off"
	assert_log_clean
	finish
}
shared_window_cleanup() {
	for d in on off; do
		if [ -d "$d" ]; then
			(cd "$d" && stop_instance; stop_all)
		fi
	done
}

atf_test_case dead_provider cleanup
dead_provider_head() {
	atf_set descr "a provider that refuses connections is declared dead once, for all its domains: one DSC entry keyed by the group, the other domains' mail suspended without a connection"
	atf_set require.user unprivileged
	atf_set timeout 300
}
dead_provider_body() {
	provider_zone
	start_dns dns
	dport=$port
	closed=$(free_port)
	group_instance mx $dport $closed
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
		for d in d e f; do
			printf 'Subject: dead\n\nbody\n' |
			    $MKQ -d $PWD/q -f sender@client.test -r u$i@$d.test \
			    > /dev/null || atf_fail "mkqfile"
		done
	done
	start_instance
	WAIT_MAX=600 wait_for lines_ge 36 ": to=<" maillog ||
	    atf_fail "first pass incomplete: $(grep -c ': to=<' maillog) lines"
	refused=$(grep -c 'status=deferred (connect to mx.dead.test\[127.0.0.2\]:[0-9]*: Connection refused)' maillog)
	for d in d e f; do
		n=$(grep -c "to=<u[0-9]*@$d.test>.*status=deferred (delivery temporarily suspended: connect to mx.dead.test" maillog)
		echo "$d.test: $n recipients suspended without a connection" >&2
		[ "$n" -ge 1 ] || atf_fail "$d.test not suspended with its group"
	done
	echo "$refused connection attempts for 36 recipients at three domains" >&2
	# Window 5 and a failed-cohort limit of 1: the group dies within one
	# window of refused connections (by domain: one window per domain).
	[ "$refused" -le 6 ] || atf_fail "$refused connection attempts"
	atf_check -s exit:0 -o save:dsc $POSTQ -C $PWD/etc -D
	cat dsc >&2
	atf_check -o match:"^smtp \{mx.dead.test\}:$closed state=suspended .*reason=connect to mx.dead.test" cat dsc
	[ "$(grep -c . dsc)" -eq 1 ] || atf_fail "more than one DSC entry"
	stop_instance
	assert_log_clean
	finish
}
dead_provider_cleanup() {
	stop_instance
	stop_all
}

atf_test_case fallback cleanup
fallback_head() {
	atf_set descr "a domain without MX is its own group, a bracketed nexthop is not looked up, a failing lookup falls back to the domain (logged); mail still goes"
	atf_set require.user unprivileged
	atf_set timeout 200
}
fallback_body() {
	cat > zone <<'ZONE'
broken.test SERVFAIL
nomx.test A 127.0.0.2
ZONE
	start_dns dns
	dport=$port
	start_sink_at s
	group_instance mx $dport $port
	echo "nomx.test smtp:nomx.test:$port" >> etc/transport
	echo "lit.test smtp:[127.0.0.2]:$port" >> etc/transport
	echo "broken.test smtp:broken.test:$port" >> etc/transport
	for r in u@nomx.test u@lit.test u@broken.test; do
		printf 'Subject: fb\n\nbody\n' | $MKQ -d $PWD/q \
		    -f sender@client.test -r $r > /dev/null || atf_fail "mkqfile"
	done
	start_instance
	stat_is s.stats recipients 2
	WAIT_MAX=200 wait_for in_log "to=<u@broken.test>" || atf_fail "broken.test not tried"
	in_log "mx group of nomx.test:$port: {nomx.test}:$port" ||
	    atf_fail "implicit MX not its own group"
	in_log "mx group of \[127.0.0.2\]" && atf_fail "a bracketed nexthop was looked up"
	in_log "warning: mx group of broken.test:$port: MX lookup failed.*; scheduling it by domain" ||
	    atf_fail "no fallback warning"
	stop_instance
	assert_log_clean
	finish
}
fallback_cleanup() {
	stop_instance
	stop_all
}

atf_test_case bad_value
bad_value_head() {
	atf_set descr "an unknown destination_grouping value is refused with file:line; the default is domain"
}
bad_value_body() {
	mkdir etc
	printf 'smtp_destination_grouping = provider\n' > etc/main.cf
	atf_check -s exit:1 -o ignore \
	    -e match:"etc/main.cf:1: bad value 'provider' for parameter smtp_destination_grouping \(one of: domain, mx\)" \
	    $B/bin/postconf -c $PWD/etc smtp_destination_grouping
	atf_check -o inline:'default_destination_grouping = domain\n' \
	    $B/bin/postconf -d default_destination_grouping
}

atf_init_test_cases() {
	atf_add_test_case bad_value
	atf_add_test_case shared_window
	atf_add_test_case dead_provider
	atf_add_test_case fallback
}
