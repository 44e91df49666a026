#! /usr/bin/env atf-sh
# postq and postsuper against a running private instance with qmgr and
# the test delivery agent: mail held at a dead destination listed with
# its reasons and retry time (text and JSON), the scheduler view and the
# status cache showing the destination dead, postsuper -x forgetting it,
# the message actions while qmgr runs, suspend/resume of one destination.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/queue.subr
. @SRCDIR@/tests/system/qmgr.subr

POSTQ=$B/bin/postq
PS=$B/bin/postsuper

has_control() {
	test -S q/private/qmgr-control
}

# The control channel is up.  A qmgr built without it (qmgr/qmgr.c does
# not call qmgr_control_start) skips the test; one that has it must
# listen.
require_control() {
	wait_for has_control && return 0
	grep -a -q 'private/qmgr-control' $B/bin/qmgr ||
	    atf_skip "qmgr does not start the control channel (qmgr/qmgr.c)"
	atf_fail "no control channel"
}

# Mail for dead.example deferred, the destination in qmgr's status cache.
dead_fixture() {
	require_test_agent
	qmgr_instance "$@"
	D1=$(inject -f alice@example.org -r site-fail@dead.example) || atf_fail "mkqfile"
	start_instance
	WAIT_MAX=100 wait_for in_queue deferred $D1 || atf_fail "$D1 not deferred"
	D2=$(inject -f bob@example.org -r ok+1@dead.example -r ok+2@dead.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for in_queue deferred $D2 || atf_fail "$D2 not deferred"
	require_control
}

atf_test_case dead_listing cleanup
dead_listing_head() {
	atf_set descr "mail held at a dead destination: postq lists it with reasons, retry time and attempts; the JSON parses and agrees"
	atf_set require.user unprivileged
	atf_set timeout 120
}
dead_listing_body() {
	dead_fixture
	atf_check -s exit:0 -o save:out -e empty $POSTQ -C $PWD/etc
	atf_check -s exit:0 -o match:"^$D1 .* alice@example.org$" cat out
	atf_check -s exit:0 -o match:'^        \[next retry: .*, attempts: 1\]$' cat out
	atf_check -s exit:0 -o match:'^        \(connect to dead.example: Connection refused\)$' cat out
	atf_check -s exit:0 -o match:'^        \(delivery temporarily suspended: connect to dead.example: Connection refused\)$' cat out
	atf_check -s exit:0 -o match:'^-- 1 Kbytes in 2 Requests\.$' cat out
	atf_check -s exit:0 -o save:json $POSTQ -C $PWD/etc -j
	atf_check -s exit:0 -o inline:'ok\n' python3 -c "
import json, os, time
ms = {m['queue_id']: m for m in map(json.loads, open('json'))}
d1, d2 = ms['$D1'], ms['$D2']
assert d1['queue_name'] == d2['queue_name'] == 'deferred'
assert d1['sender'] == 'alice@example.org' and d1['attempts'] == 1
assert d1['next_retry'] > time.time() - 5, d1
path = [os.path.join(r, f) for r, _, fs in os.walk('q/deferred') for f in fs if f == '$D1'][0]
assert d1['next_retry'] == int(os.stat(path).st_mtime)
assert d1['recipients'] == [{'address': 'site-fail@dead.example',
    'delay_reason': 'connect to dead.example: Connection refused'}], d1
assert [r['address'] for r in d2['recipients']] == ['ok+1@dead.example', 'ok+2@dead.example']
for r in d2['recipients']:
    assert r['delay_reason'] == 'delivery temporarily suspended: connect to dead.example: Connection refused', r
print('ok')"
	# the queue shape sees them too
	atf_check -s exit:0 -o match:'^dead.example 2 2 ' $POSTQ -C $PWD/etc -q deferred
}
dead_listing_cleanup() {
	stop_instance
}

atf_test_case scheduler_view cleanup
scheduler_view_head() {
	atf_set descr "postq -S and -D show the dead destination with its reason; postsuper -x clears it; -S -j parses"
	atf_set require.user unprivileged
	atf_set timeout 120
}
scheduler_view_body() {
	dead_fixture
	atf_check -s exit:0 -o save:s -e empty $POSTQ -C $PWD/etc -S
	atf_check -s exit:0 -o match:'^qmgr at .*: 0 messages in the active queue' cat s
	atf_check -s exit:0 -o match:'^  test +0/10 ' cat s
	atf_check -s exit:0 -o match:'^Dead destinations \(status cache: 1 of 10000\):$' cat s
	atf_check -s exit:0 -o match:'^  test dead.example state=suspended failures=1 probes=0 age=[0-9]+ retry_in=[0-9]+ reason=connect to dead.example: Connection refused$' cat s
	atf_check -s exit:0 -o save:sj $POSTQ -C $PWD/etc -S -j
	atf_check -s exit:0 -o inline:'ok\n' python3 -c "
import json
s = json.loads(open('sj').read())
assert s['status'] == 0 and s['messages'] == 0
t = {x['name']: x for x in s['transport']}
assert t['test']['process_limit'] == 10 and t['test']['busy'] == 0
assert s['dsc_count'] == 1
e = s['dsc'][0]
assert e['transport'] == 'test' and e['nexthop'] == 'dead.example'
assert e['reason'] == 'connect to dead.example: Connection refused'
assert e['state'] == 'suspended' and e['retry_at'] > s['time']
print('ok')"
	atf_check -s exit:0 -o match:'^test dead.example state=suspended .*reason=connect to dead.example: Connection refused$' $POSTQ -C $PWD/etc -D
	atf_check -s exit:0 -o save:dj $POSTQ -C $PWD/etc -D -j
	atf_check -s exit:0 -o inline:'dead.example\n' python3 -c "
import json
for l in open('dj'): print(json.loads(l)['nexthop'])"
	# forget it
	atf_check -s exit:0 -e inline:'postsuper: 1 dead destination forgotten\n' \
	    $PS -c $PWD/etc -x dead.example
	atf_check -s exit:0 -o inline:'Destination status cache is empty\n' $POSTQ -C $PWD/etc -D
	WAIT_MAX=50 wait_for in_log 'destination status cache: 1 entry for dead.example cleared by administrator' ||
	    atf_fail "no log line"
	atf_check -s exit:0 -e inline:'postsuper: 0 dead destinations forgotten\n' \
	    $PS -c $PWD/etc -x ALL
	assert_log_clean
}
scheduler_view_cleanup() {
	stop_instance
}

atf_test_case actions_running cleanup
actions_running_head() {
	atf_set descr "hold, release, delete, requeue while qmgr runs, on single IDs, standard input and ALL, with their log lines"
	atf_set require.user unprivileged
	atf_set timeout 120
}
actions_running_body() {
	dead_fixture
	atf_check -s exit:0 -e inline:'postsuper: Placed on hold: 1 message\n' $PS -c $PWD/etc -h $D1
	in_queue hold $D1 || atf_fail "$D1 not on hold"
	in_log "postsuper\[[0-9]*\]: $D1: placed on hold" || atf_fail "no hold log line"
	atf_check -s exit:0 -o match:"^$D1! " $POSTQ -C $PWD/etc
	atf_check -s exit:0 -e inline:'postsuper: Released from hold: 1 message\n' $PS -c $PWD/etc -H ALL
	in_log "postsuper\[[0-9]*\]: $D1: released from hold" || atf_fail "no release log line"
	# released: due now, qmgr told; it is tried again (and deferred again)
	WAIT_MAX=100 wait_for lines_ge 2 "$D1: to=<site-fail@dead.example>" maillog ||
	    atf_fail "$D1 not retried after release"
	WAIT_MAX=100 wait_for in_queue deferred $D1 || atf_fail "$D1 not back in deferred"
	# requeue from standard input: to incoming, qmgr takes it at once
	echo "$D1 $D2" > ids
	atf_check -s exit:0 -e match:'postsuper: Requeued: 2 messages' sh -c "$PS -c $PWD/etc -r - < ids"
	in_log "postsuper\[[0-9]*\]: $D2: requeued" || atf_fail "no requeue log line"
	WAIT_MAX=100 wait_for lines_ge 2 "$D2: to=<ok+1@dead.example>" maillog ||
	    atf_fail "$D2 not tried again after requeue"
	WAIT_MAX=100 wait_for in_queue deferred $D2 || atf_fail "$D2 not deferred again"
	WAIT_MAX=100 wait_for in_queue deferred $D1 || atf_fail "$D1 not deferred again"
	# delete ALL
	atf_check -s exit:0 -e inline:'postsuper: Deleted: 2 messages\n' $PS -c $PWD/etc -d ALL
	in_log "$D1: removed" && in_log "$D2: removed" || atf_fail "no removal log lines"
	atf_check -s exit:0 -o inline:'Mail queue is empty\n' $POSTQ -C $PWD/etc
	atf_check -s exit:0 -o empty find q/defer -type f
	has_qmgr || atf_fail "qmgr died"
	assert_log_clean
}
actions_running_cleanup() {
	stop_instance
}

atf_test_case suspend_resume cleanup
suspend_resume_head() {
	atf_set descr "postsuper -P keeps one destination's mail queued while others flow; postq -S shows it; -U delivers it"
	atf_set require.user unprivileged
	atf_set timeout 120
}
suspend_resume_body() {
	require_test_agent
	qmgr_instance
	start_instance
	require_control
	atf_check -s exit:0 -e match:'delivery to t.example suspended' $PS -c $PWD/etc -P t.example
	WAIT_MAX=50 wait_for in_log 't.example: delivery suspended by administrator' ||
	    atf_fail "no qmgr log line"
	grep -q '^t.example	' q/saved/qmgr-suspended || atf_fail "not saved"
	T1=$(inject -r ok+1@t.example) || atf_fail "mkqfile"
	T2=$(inject -r ok+2@t.example -r ok+3@u.example) || atf_fail "mkqfile"
	U1=$(inject -r ok+4@u.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	# other destinations flow
	WAIT_MAX=100 wait_for in_log "$U1: removed" || atf_fail "u.example mail not delivered"
	WAIT_MAX=100 wait_for in_queue deferred $T1 || atf_fail "$T1 not deferred"
	WAIT_MAX=100 wait_for in_queue deferred $T2 || atf_fail "$T2 not deferred"
	test $(count 'ok+3@u.example' agent.log) -eq 1 || atf_fail "ok+3 not delivered"
	test $(count '@t.example' agent.log) -eq 0 || atf_fail "t.example was tried"
	in_log "$T1: to=<ok+1@t.example>.*status=deferred (delivery suspended by administrator)" ||
	    atf_fail "deferral reason"
	# visible: listing and scheduler view
	atf_check -s exit:0 -o match:'^        \(delivery suspended by administrator\)$' $POSTQ -C $PWD/etc
	atf_check -s exit:0 -o match:'^Suspended by administrator \(1\):$' \
	    -o match:'^  t.example since .* \(delivery suspended by administrator\)$' $POSTQ -C $PWD/etc -S
	# a restarted qmgr keeps the suspension
	old=$(qmgr_pid)
	kill $old
	WAIT_MAX=100 wait_for pid_gone $old || atf_fail "qmgr did not exit"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for has_qmgr || atf_fail "qmgr not restarted"
	WAIT_MAX=50 wait_for in_log '1 destination suspended by administrator' || atf_fail "not reloaded"
	WAIT_MAX=50 wait_for sh -c "$POSTQ -C $PWD/etc -S | grep -q '^  t.example since'" ||
	    atf_fail "suspension lost across a restart"
	# resume: delivered now
	atf_check -s exit:0 -e match:'delivery to t.example resumed; 2 deferred messages due now' \
	    $PS -c $PWD/etc -U t.example
	WAIT_MAX=100 wait_for in_log "$T1: removed" || atf_fail "$T1 not delivered after resume"
	WAIT_MAX=100 wait_for in_log "$T2: removed" || atf_fail "$T2 not delivered after resume"
	test $(count 'ok+2@t.example' agent.log) -eq 1 || atf_fail "ok+2 not delivered once"
	test $(count 'ok+3@u.example' agent.log) -eq 1 || atf_fail "ok+3 delivered twice"
	atf_check -s exit:0 -e match:'t.example: destination not suspended' $PS -c $PWD/etc -U t.example
	atf_check -s exit:0 -o match:'^Suspended by administrator \(0\):$' $POSTQ -C $PWD/etc -S
	assert_log_clean
}
suspend_resume_cleanup() {
	stop_instance
}

atf_test_case delete_in_delivery cleanup
delete_in_delivery_head() {
	atf_set descr "deleting, holding and requeueing messages that are being delivered: qmgr stops them, waits for the agent, acts; other mail is not lost"
	atf_set require.user unprivileged
	atf_set timeout 180
}
delete_in_delivery_body() {
	require_test_agent
	qmgr_instance "test_destination_recipient_limit = 1" \
	    "test_destination_concurrency_limit = 1" \
	    "initial_destination_concurrency = 1"
	start_instance
	require_control
	# five slow recipients, one at a time: one in flight, four waiting
	M=$(inject -r slow+1@t.example -r slow+2@t.example -r slow+3@t.example \
	    -r slow+4@t.example -r slow+5@t.example) || atf_fail "mkqfile"
	O=$(inject -r ok+1@u.example -r ok+2@u.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for in_log "$M: from=<.*(queue active)" || atf_fail "$M not active"
	atf_check -s exit:0 -e inline:'postsuper: Deleted: 1 message\n' $PS -c $PWD/etc -d $M
	# qmgr did it after the delivery in flight ended, and said so (the
	# lines reach maillog_file through master, maybe after the reply)
	wait_for in_log "qmgr\[[0-9]*\]: $M: stopping delivery: delete requested by administrator" ||
	    atf_fail "no stop line"
	wait_for in_log "qmgr\[[0-9]*\]: $M: removed" || atf_fail "no removal line"
	wait_for in_log "$M: to=<slow+5@t.example>.*status=deferred (delivery stopped: message deleted by administrator)" ||
	    atf_fail "pending recipients not stopped"
	not_in_queue active $M && not_in_queue deferred $M || atf_fail "$M still queued"
	[ $(count "$M t.example slow" agent.log) -le 2 ] || atf_fail "all were delivered"
	# the other message was delivered, qmgr lives
	WAIT_MAX=100 wait_for in_log "$O: removed" || atf_fail "$O lost"
	has_qmgr || atf_fail "qmgr died"

	# hold and requeue, the same way
	H=$(inject -r slow+1@t.example -r slow+2@t.example -r slow+3@t.example \
	    -r slow+4@t.example -r slow+5@t.example -r slow+6@t.example) || atf_fail "mkqfile"
	atf_check -s exit:0 $TS trigger-send q/public/qmgr I
	WAIT_MAX=100 wait_for in_log "$H: from=<.*(queue active)" || atf_fail "$H not active"
	atf_check -s exit:0 -e inline:'postsuper: Placed on hold: 1 message\n' $PS -c $PWD/etc -h $H
	in_queue hold $H || atf_fail "$H not on hold"
	in_log "qmgr\[[0-9]*\]: $H: placed on hold" || atf_fail "no hold line"
	# a held message shows why it stopped
	atf_check -s exit:0 -o match:'\(delivery stopped: message placed on hold by administrator\)' $POSTQ -C $PWD/etc
	atf_check -s exit:0 -e ignore $PS -c $PWD/etc -H $H
	WAIT_MAX=100 wait_for in_log "$H: from=<.*(queue active)" || atf_fail "$H not active again"
	# no waiting: qmgr finishes the request after postsuper is gone
	R=$H
	WAIT_MAX=100 wait_for sh -c "find q/active -name $R | grep -q ."
	atf_check -s exit:0 -e match:"$R: being delivered; qmgr will log \"$R: requeued\"" \
	    -e match:'Requeued when their deliveries end: 1 message' $PS -c $PWD/etc -w 0 -r $R
	WAIT_MAX=100 wait_for in_log "qmgr\[[0-9]*\]: $R: requeued" || atf_fail "requeue not carried out"
	WAIT_MAX=150 wait_for in_log "$R: removed" || atf_fail "$R not delivered after requeue"
	has_qmgr || atf_fail "qmgr died"
	! grep -E 'panic|fatal' maillog || atf_fail "panic or fatal in the log"
	assert_log_clean
}
delete_in_delivery_cleanup() {
	stop_instance
}

atf_test_case structure_running cleanup
structure_running_head() {
	atf_set descr "postsuper -s while qmgr runs leaves the active queue alone"
	atf_set require.user unprivileged
	atf_set timeout 120
}
structure_running_body() {
	require_test_agent
	qmgr_instance
	start_instance
	require_control
	echo junk > q/active/junk
	echo junk > q/incoming/junk
	atf_check -s exit:0 -e match:'qmgr is running: the active queue is left alone' \
	    -e match:'1 to corrupt' $PS -c $PWD/etc -s
	test -f q/active/junk || atf_fail "active touched"
	test -f q/corrupt/junk || atf_fail "incoming junk not moved"
}
structure_running_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case dead_listing
	atf_add_test_case scheduler_view
	atf_add_test_case actions_running
	atf_add_test_case suspend_resume
	atf_add_test_case delete_in_delivery
	atf_add_test_case structure_running
}
