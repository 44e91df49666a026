#! /usr/bin/env atf-sh
# Shaping (doc/scheduler.md section 8a) on the real daemons: qmgr holds a
# rate-limited destination's mail in the active queue and releases it at
# the bucket's rate while another destination is served at once; postq -S
# shows the limit and the tokens; bad rates and bad rate table lines are
# refused at start with file:line.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

POSTQ=$B/bin/postq
PY=/usr/bin/python3

nothing_deferred() {
	test -z "$(find q/deferred -type f 2>/dev/null)"
}

saved_count() {
	ls "$1" 2>/dev/null | wc -l | tr -d ' '
}

saved_ge() {
	[ "$(saved_count "$1")" -ge "$2" ]
}

atf_test_case limited_and_fast cleanup
limited_and_fast_head() {
	atf_set descr "30 messages to a destination limited to 60/m burst 5 and 30 to an unlimited one: the unlimited one gets them at once, the limited one no faster than its bucket allows, nothing deferred, postq -S shows the limit and tokens"
	atf_set require.user unprivileged
	atf_set timeout 240
}
limited_and_fast_body() {
	mkdir -p slow fast
	start_sink sl -d slow
	slport=$port
	start_sink fa -d fast
	faport=$port
	mkdir -p etc
	relay_instance "$faport" \
	    "transport_maps = inline:{ limited.example=smtp:[127.0.0.1]:$slport }" \
	    "smtp_destination_rate_maps = texthash:$PWD/etc/rates"
	stop_instance
	printf '# per-destination limits\n[127.0.0.1]:%s messages=60/m burst=5\n' \
	    "$slport" > etc/rates
	# The metrics service too: it must export the bucket.
	mport=$(free_port)
	echo "127.0.0.1:$mport inet n - n - 1 $B/bin/metrics" >> etc/master.cf
	start_instance
	atf_check -s exit:0 -o ignore -e ignore $SOURCE -s 2 -m 30 \
	    -f sender@client.example.test -t "rcpt%d@limited.example" \
	    127.0.0.1:$port
	atf_check -s exit:0 -o ignore -e ignore $SOURCE -s 2 -m 30 \
	    -f sender@client.example.test -t "rcpt%d@fast.example" \
	    127.0.0.1:$port
	# The unlimited destination is served at once, while the limited one
	# is still far from done (it needs 25 s after its first 5).
	WAIT_MAX=300 wait_for saved_ge fast 30 || atf_fail "fast: $(saved_count fast) of 30"
	n=$(saved_count slow)
	echo "when the fast destination had all 30, the limited one had $n"
	[ "$n" -lt 25 ] || atf_fail "the limited destination was not held back ($n of 30)"
	# postq -S while mail waits: the limit and the tokens.
	atf_check -s exit:0 -o save:s -e empty $POSTQ -C $PWD/etc -S
	atf_check -s exit:0 -o match:"^  smtp:\[127.0.0.1\]:$slport " cat s
	atf_check -s exit:0 -o match:'^    limits: messages=1/s burst=5; message tokens [0-9]+\.[0-9]{3} of 5; ' cat s
	atf_check -s exit:0 -o save:sj -e empty $POSTQ -C $PWD/etc -S -j
	atf_check -s exit:0 -o inline:'ok\n' $PY -c "
import json
s = json.loads(open('sj').read())
q = [x for x in s['queue'] if x['nexthop'] == '[127.0.0.1]:$slport'][0]
assert q['limits'] == 'messages=1/s burst=5', q
assert q['message_burst'] == 5 and abs(q['message_rate'] - 1.0) < 1e-9, q
assert 0 <= q['message_tokens'] <= 5, q
assert 0 <= q['next_token_in'] <= 1, q
assert q['todo'] > 0 and q['rate_held'] > 0, q
for x in s['queue']:
    if x['nexthop'] != '[127.0.0.1]:$slport':
        assert 'limits' not in x and 'message_tokens' not in x, x
print('ok')"
	# The same in Prometheus' format (doc/metrics.md).
	atf_check -s exit:0 -o inline:'ok\n' $PY -c "
import re, urllib.request
t = urllib.request.urlopen('http://127.0.0.1:$mport/metrics', timeout=10).read().decode()
lab = '{transport=\"smtp\",nexthop=\"[127.0.0.1]:$slport\"}'
def val(name):
    m = re.search('^' + re.escape(name + lab) + ' (\\S+)$', t, re.M)
    assert m, (name, t)
    return float(m.group(1))
assert val('petrel_destination_message_rate') == 1.0
assert val('petrel_destination_message_burst') == 5.0
assert 0 <= val('petrel_destination_message_tokens') <= 5
assert 0 <= val('petrel_destination_next_token_seconds') <= 1
assert 'petrel_destination_message_tokens{transport=\"smtp\",nexthop=\"[127.0.0.1]:$faport\"}' not in t
print('ok')"
	nothing_deferred || atf_fail "mail in deferred/ while held by the rate limit"
	WAIT_MAX=600 wait_for saved_ge slow 30 || atf_fail "slow: $(saved_count slow) of 30"
	nothing_deferred || atf_fail "mail in deferred/"
	! grep -q 'status=deferred' maillog || atf_fail "deferred deliveries in the log"
	# The bucket's allowance: the n-th arrival (1-based) comes no sooner
	# than n - 5 s after the first (5 at once, then one a second); 0.3 s
	# for the first arrival's own lag behind its start.
	atf_check -s exit:0 -o save:spacing $PY -c "
import os
t = sorted(os.stat(os.path.join('slow', f)).st_mtime for f in os.listdir('slow'))
assert len(t) == 30, len(t)
bad = [(n, t[n - 1] - t[0]) for n in range(6, 31) if t[n - 1] - t[0] < n - 5 - 0.3]
print('span %.2f s' % (t[-1] - t[0]))
assert not bad, bad
"
	cat spacing
	stop_instance
	assert_log_clean
	finish
}
limited_and_fast_cleanup() {
	stop_instance
	stop_all
}

connections_ge() {
	[ "$(value s.stats connections)" -ge "$1" ]
}

atf_test_case messages_per_connection cleanup
messages_per_connection_head() {
	atf_set descr "messages_per_connection=3 from the rate table: 10 messages one at a time over connections that carry at most 3 each (4 connections, not 1)"
	atf_set require.user unprivileged
	atf_set timeout 120
}
messages_per_connection_body() {
	start_sink s
	sport=$port
	mkdir -p etc
	printf '[127.0.0.1]:%s messages_per_connection=3\n' "$sport" > etc/rates
	relay_instance "$sport" \
	    "smtp_destination_concurrency_limit = 1" \
	    "smtp_destination_rate_maps = texthash:$PWD/etc/rates"
	atf_check -s exit:0 -o ignore -e ignore $SOURCE -s 1 -m 10 \
	    -f sender@client.example.test -t "rcpt%d@far.example.test" \
	    127.0.0.1:$port
	stat_is s.stats messages 10
	conns=$(value s.stats connections)
	echo "10 messages over $conns connections"
	[ "$conns" -ge 4 ] || atf_fail "$conns connections: a connection carried more than 3 messages"
	atf_check -s exit:0 -o save:sj -e empty $POSTQ -C $PWD/etc -S -j
	stop_instance
	assert_log_clean
	finish
}
messages_per_connection_cleanup() {
	stop_instance
	stop_all
}

atf_test_case bad_rates cleanup
bad_rates_head() {
	atf_set descr "an impossible rate in main.cf is refused by petrel start; a bad rate table line stops qmgr at start with file:line; the daemons live on"
	atf_set require.user unprivileged
	atf_set timeout 120
}
bad_rates_body() {
	start_sink fa
	relay_instance "$port"
	stop_instance
	echo "default_destination_message_rate = 0/s" >> etc/main.cf
	atf_check -s not-exit:0 -o ignore -e match:'default_destination_message_rate' \
	    $PETREL -c $PWD/etc check
	sed -i 's|^default_destination_message_rate = 0/s$|smtp_destination_message_burst = -1|' etc/main.cf
	atf_check -s not-exit:0 -o ignore -e match:'smtp_destination_message_burst' \
	    $PETREL -c $PWD/etc check
	sed -i 's|^smtp_destination_message_burst = -1$|smtp_destination_rate_maps = texthash:'"$PWD"'/etc/rates|' etc/main.cf
	printf 'good.example messages=10/m\nbad.example messages=5/fortnight\n' > etc/rates
	start_instance
	WAIT_MAX=100 wait_for in_log "etc/rates:2: smtp_destination_rate_maps: destination \"bad.example\": bad rate \"5/fortnight\": unknown unit" ||
	    atf_fail "no file:line error for the bad table line: $(tail -5 maillog)"
	# The instance (master, smtpd) lives on.
	master_pid >/dev/null || atf_fail "master gone"
	stop_instance
	finish
}
bad_rates_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case limited_and_fast
	atf_add_test_case messages_per_connection
	atf_add_test_case bad_rates
}
