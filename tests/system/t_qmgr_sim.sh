#! /usr/bin/env atf-sh
# qmgr-sim runs the real scheduler core on the scenarios in tests/sim/ and
# these tests check its output: the sequences of doc/scheduling-rules.md §3.8,
# preemption, the section 4 reference server (and the learn feedback mode
# against it, against no limit and against a changing one), dead
# destinations, fairness, a million recipients in bounded memory, and the
# scenario parser.

SIM=@BUILDDIR@/bin/qmgr-sim
SC=@SRCDIR@/tests/sim

# value FILE LINE-PREFIX KEY: the number after KEY= on the first line
# that starts with LINE-PREFIX.
value()
{
	v=$(grep -m1 "^$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p" | head -n1)
	[ -n "$v" ] || atf_fail "no $3= on a line starting with '$2' in $1"
	echo "$v"
}

# deferred_pct FILE DEST: DEST's first-attempt deferral percentage.
deferred_pct()
{
	grep "^dest $2: first" "$1" | sed -n 's/.*(\([0-9.]*\)%).*/\1/p'
}

# both POSTFIX LEARN: run the two scenarios into pf.out and learn.out.
both()
{
	atf_check -o save:pf.out $SIM $SC/$1.sim
	atf_check -o save:learn.out $SIM $SC/$2.sim
}

# sent_ratio LO HI: recipients sent in learn.out over those in pf.out is
# within [LO, HI].
sent_ratio()
{
	spf=$(value pf.out recipients: sent)
	slearn=$(value learn.out recipients: sent)
	echo "recipients sent: postfix mode $spf, learn mode $slearn"
	awk -v a="$slearn" -v b="$spf" -v lo="$1" -v hi="$2" \
	    'BEGIN { exit !(b > 0 && a / b >= lo && a / b <= hi) }' ||
	    atf_fail "learn mode sent $slearn, postfix mode $spf: not within [$1, $2] of it"
}

# check_le A B MSG / check_ge A B MSG: numeric comparisons (floats).
check_le()
{
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }' || atf_fail "$3: $1 > $2"
}
check_ge()
{
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }' || atf_fail "$3: $1 < $2"
}

atf_test_case sequences
sequences_head()
{
	atf_set "descr" "The two worked sequences of doc/scheduling-rules.md §3.8"
}
sequences_body()
{
	atf_check -o inline:"order: 11112211113311\n" $SIM --order $SC/seq-noloan.sim
	atf_check -o inline:"order: 11221111331111\n" $SIM --order $SC/seq-loan.sim
}

atf_test_case preemption
preemption_head()
{
	atf_set "descr" "20 one-recipient messages slip past a 2000-recipient one within the k/(k-1) bound; not with a huge slot cost"
}
preemption_body()
{
	atf_check -o save:on.out $SIM $SC/preempt.sim
	atf_check -o save:alone.out $SIM $SC/preempt-alone.sim
	atf_check -o save:off.out $SIM $SC/preempt-off.sim
	bulk=$(value on.out "label B:" last_done)
	alone=$(value alone.out "label B:" last_done)
	small=$(value on.out "label s:" last_done)
	echo "bulk alone ${alone}s, with 20 small ones ${bulk}s, small ones done by ${small}s"
	atf_check -o match:'delivered=20 ' grep '^label s:' on.out
	# Long before: the last small one is done before half the bulk time.
	check_le "$small" "$(awk -v b="$bulk" 'BEGIN { print b / 2 }')" "small messages late"
	# k = 5: the bulk message may slow down by at most 5/4.
	check_le "$bulk" "$(awk -v a="$alone" 'BEGIN { print a * 1.25 }')" "bulk slowed beyond k/(k-1)"
	check_ge "$(value on.out core: preemptions)" 20 "preemptions"
	# Without preemption every small one waits for the bulk one.
	offmin=$(value off.out "label s:" min)
	offbulk=$(value off.out "label B:" last_done)
	echo "without preemption the first small one waits ${offmin}s"
	check_ge "$offmin" "$(awk -v b="$offbulk" 'BEGIN { print b * 0.9 }')" "small ones did not wait"
	atf_check -o match:'preemptions=0 ' grep '^core:' off.out
}

atf_test_case concurrency_reference
concurrency_reference_head()
{
	atf_set "descr" "The 421-beyond-5-sessions server of doc/scheduling-rules.md §4: about 1/6 deferred with 1/N feedback, 1/2 with feedback 1"
}
concurrency_reference_body()
{
	atf_check -o save:inv.out $SIM $SC/conc-inverse.sim
	atf_check -o save:one.out $SIM $SC/conc-one.sim
	pinv=$(deferred_pct inv.out busy.example)
	pone=$(deferred_pct one.out busy.example)
	winv=$(value inv.out "dest busy.example: first" mean_window)
	wone=$(value one.out "dest busy.example: first" mean_window)
	echo "1/N feedback: ${pinv}% deferred on the first attempt, mean window $winv"
	echo "feedback 1:   ${pone}% deferred on the first attempt, mean window $wone"
	check_ge "$pinv" 12 "1/N deferred share"
	check_le "$pinv" 21 "1/N deferred share"
	check_ge "$pone" 40 "feedback 1 deferred share"
	check_le "$pone" 60 "feedback 1 deferred share"
	check_ge "$winv" 4.5 "1/N mean window"
	check_le "$winv" 6 "1/N mean window"
	check_ge "$wone" "$winv" "feedback 1 runs a larger window"
}

atf_test_case bulk_same_destination
bulk_same_destination_head()
{
	atf_set "descr" "The bench's bulk+small workload: the window grows 5, 10, 20 and the bulk message needs four waves; one small delivery before the bulk fills the window (Postfix's case in the bench) saves a wave"
}
bulk_same_destination_body()
{
	atf_check -o save:same.out $SIM $SC/bulk-same.sim
	atf_check -o save:head.out $SIM $SC/bulk-same-headstart.sim
	atf_check -o match:'delivered=20 ' grep '^label s:' same.out
	bulk=$(value same.out "label B:" last_done)
	small=$(value same.out "label s:" p50)
	hbulk=$(value head.out "label B:" last_done)
	hsmall=$(value head.out "label s:" p50)
	echo "bulk ${bulk}s small p50 ${small}s; with a head start: ${hbulk}s / ${hsmall}s"
	# Four waves of 5 s (5 + 10 + 20 + 5 deliveries of 50 recipients).
	check_ge "$bulk" 19.9 "bulk completion"
	check_le "$bulk" 20.5 "bulk completion"
	# The head start saves the fourth wave, and the small messages go
	# with the third.
	check_le "$hbulk" 15.5 "bulk completion with a head start"
	check_le "$hsmall" 10.5 "small median with a head start"
	check_le "$hsmall" "$small" "small median"
}

atf_test_case dead_destination
dead_destination_head()
{
	atf_set "descr" "10,000 messages for a refusing site: a handful of connections per retry interval, all deferred with the reason, recovery by the half-open probe"
}
dead_destination_body()
{
	atf_check -o save:dead.out $SIM $SC/dead.sim
	cat dead.out
	fails=$(value dead.out "dest dead.example: transport" conn_failures)
	check_le "$fails" 10 "connection failures"
	# Every interval before the recovery has at most a handful of
	# attempts (5 at the start: the initial window).
	list=$(value dead.out "dest dead.example: attempts" attempts_per_300s)
	echo "$list" | tr ',' '\n' | awk '
	    $1 > 0 { n++; v[n] = $1 }
	    END {
		if (n < 3) { print "too few active intervals"; exit 1 }
		for (i = 1; i < n; i++)
			if (v[i] > 5) { print "interval with " v[i] " attempts"; exit 1 }
		if (v[n] < 10000) { print "no recovery"; exit 1 }
	    }' || atf_fail "attempts per interval: $list"
	# All 10,000 recipients were deferred in each of the three dead
	# retries, nearly all at once by the destination status cache.
	susp=$(sed -n 's/^deferral: \([0-9]*\) "delivery temporarily suspended: connect to dead.example\[192.0.2.1\]:25: Connection refused"$/\1/p' dead.out)
	check_ge "${susp:-0}" 29900 "suspended deferrals"
	atf_check -o match:'deferrals=30000$' grep '^recipients:' dead.out
	atf_check -o match:'delivered=10000 ' grep '^messages:' dead.out
	atf_check -o match:'sent=10000 ' grep '^dest dead.example: transport' dead.out
}

atf_test_case learn_reference
learn_reference_head()
{
	atf_set "descr" "The learn feedback mode against the 5-session server: at most 1/12 (aim 3%) of first deliveries deferred, throughput at least 98% of the postfix mode's"
}
learn_reference_body()
{
	both conc-inverse learn-inverse
	ppf=$(deferred_pct pf.out busy.example)
	plearn=$(deferred_pct learn.out busy.example)
	echo "deferred on the first attempt: postfix ${ppf}%, learn ${plearn}%"
	check_le "$plearn" 3 "learn deferred share"
	sent_ratio 0.98 1.1
	# it does refuse now and then: the probes
	check_ge "$(value learn.out "dest busy.example: transport" rejected_421)" 2 "probes"
	check_le "$(value learn.out "dest busy.example: first" max_window)" 6 "learn max window"
}

atf_test_case learn_no_limit
learn_no_limit_head()
{
	atf_set "descr" "Against a server without a session limit the learn mode delivers as much as the postfix mode and its window reaches the transport's limit"
}
learn_no_limit_body()
{
	both nolimit nolimit-learn
	sent_ratio 0.98 1.02
	atf_check -o match:' max_window=20 ' grep '^dest open.example: first' learn.out
	atf_check -o match:'conn_failures=0 ' grep '^dest open.example: transport' learn.out
}

atf_test_case learn_limit_change
learn_limit_change_head()
{
	atf_set "descr" "A server whose limit goes 5, 10 at 100 s, 3 at 200 s: the learn mode's window follows each change within 60 s"
}
learn_limit_change_body()
{
	atf_check -o save:learn.csv $SIM --csv $SC/limit-change-learn.sim
	atf_check -o save:pf.csv $SIM --csv $SC/limit-change.sim
	for f in pf learn; do
		awk -F, '$2 == "smtp" { t = $1 + 0; w = $4 + 0
		    if (t >= 100 && rise == "" && w >= 10) rise = t
		    if (t >= 200 && w > 4) fall = t }
		    END { printf "%s: window at 10 by %s s, last above 4 at %s s\n", f, rise, fall }' f=$f $f.csv
	done
	awk -F, '$2 == "smtp" { t = $1 + 0; w = $4 + 0
	    if (t >= 50 && t < 100 && (w < 5 || w > 6)) { print "before 100 s: window " w " at " t; bad = 1 }
	    if (t >= 100 && rise == "" && w >= 10) rise = t
	    if (t >= 160 && t < 200 && (w < 10 || w > 11)) { print "before 200 s: window " w " at " t; bad = 1 }
	    if (t >= 200 && w > 4) fall = t
	    if (t >= 200 && w == 0) { print "dead at " t; bad = 1 } }
	    END {
		if (rise == "" || rise > 160) { print "window did not reach 10 by 160 s"; bad = 1 }
		if (fall > 260) { print "window above 4 at " fall " s"; bad = 1 }
		exit bad }' learn.csv || atf_fail "the window did not follow the limit"
	both limit-change limit-change-learn
	plearn=$(deferred_pct learn.out busy.example)
	ppf=$(deferred_pct pf.out busy.example)
	echo "deferred on the first attempt: postfix ${ppf}%, learn ${plearn}%"
	check_le "$plearn" "$ppf" "learn deferred share"
}

atf_test_case learn_dead
learn_dead_head()
{
	atf_set "descr" "dead.sim in the learn mode: the same figures as in the postfix mode"
}
learn_dead_body()
{
	both dead dead-learn
	sed 1d pf.out > pf.body
	sed 1d learn.out > learn.body
	atf_check -o empty diff pf.body learn.body
}

atf_test_case fairness_backlog
fairness_backlog_head()
{
	atf_set "descr" "New mail keeps flowing while a 5,000-message deferred backlog is retried"
}
fairness_backlog_body()
{
	atf_check -o save:fb.out $SIM $SC/fair-backlog.sim
	grep -E '^label' fb.out
	maxnew=$(value fb.out "label new:" max)
	check_le "$maxnew" 30 "new mail latency during the backlog"
	atf_check -o match:'delivered=5000 ' grep '^label old:' fb.out
	atf_check -o match:'messages=2400 delivered=2400 ' grep '^label new:' fb.out
	# The backlog really was being retried while new mail flowed.
	first_old=$(value fb.out "label old:" min)
	last_old=$(value fb.out "label old:" last_done)
	check_le "$first_old" 700 "backlog retried late"
	check_ge "$last_old" 1000 "backlog too small to matter"
}

atf_test_case fairness_stream
fairness_stream_head()
{
	atf_set "descr" "A stream of one-recipient messages does not starve a two-recipient message"
}
fairness_stream_body()
{
	atf_check -o save:fs.out $SIM $SC/fair-stream.sim
	grep -E '^label' fs.out
	two=$(value fs.out "label 2:" last_done)
	bulk=$(value fs.out "label B:" last_done)
	check_le "$two" 100 "two-recipient message"
	check_ge "$bulk" 3000 "bulk message"
	# The stream itself kept preempting before and after it.
	atf_check -o match:'^order: BBBBBsB*s' $SIM --order $SC/fair-stream.sim
}

atf_test_case million_recipients
million_recipients_head()
{
	atf_set "descr" "A 1,000,000-recipient message within the in-memory recipient limits"
}
million_recipients_body()
{
	atf_check -o save:m.out $SIM $SC/million.sim
	atf_check -o match:'sent=1000000 ' grep '^recipients:' m.out
	atf_check -o match:'delivered=1 ' grep '^messages:' m.out
	core=$(value m.out core: peak_rcpt)
	tpeak=$(value m.out "transport smtp:" peak_rcpt)
	echo "peak in-memory recipients: core $core (limit 5000), smtp $tpeak (limit 3000)"
	check_le "$core" 5000 "global recipient limit"
	check_le "$tpeak" 3000 "transport recipient limit"
	check_ge "$(value m.out core: reads)" 300 "read in batches"
}

atf_test_case many_blocked
many_blocked_head()
{
	atf_set "descr" "20,000 messages for one saturated destination: all delivered, FIFO (the run time is printed, not checked)"
}
many_blocked_body()
{
	start=$(date +%s)
	atf_check -o save:hot.out $SIM --latency --summary $SC/hot.sim
	echo "qmgr-sim hot.sim took $(( $(date +%s) - start ))s"
	atf_check -o match:'delivered=20000 ' grep '^messages:' hot.out
	check_ge "$(value hot.out "core:" peak_rcpt)" 10000 "jobs waiting at once"
	# FIFO per destination: completion times grow with arrival order.
	grep '^M' hot.out | awk -F, '$4 < last { bad = 1 } { last = $4 } END { exit bad }' ||
	    atf_fail "deliveries out of arrival order"
}

atf_test_case mx_group
mx_group_head()
{
	atf_set "descr" "Three domains of one provider (5 sessions in sum): grouped by MX they share one window and the provider sees no more than it; grouped by domain it sees the sum of three windows"
}
mx_group_body()
{
	atf_check -o save:on.out $SIM --check $SC/mx-group.sim
	atf_check -o save:off.out $SIM $SC/mx-group-off.sim
	on=$(grep '^mx mx.provider.example:' on.out)
	off=$(grep '^mx mx.provider.example:' off.out)
	echo "grouped:   $on"
	echo "by domain: $off"
	# Grouped: one queue, so every dest reports the same window; the
	# connections in flight at the provider never exceed it.
	conn_on=$(value on.out "mx mx.provider.example:" max_connections)
	win_on=$(grep '^dest [abc].example: first' on.out | tr ' ' '\n' |
	    sed -n 's/^max_window=//p' | sort -n | tail -n1)
	check_le "$conn_on" "$win_on" "grouped: connections above the shared window"
	# The figures (deterministic): at most 6 at once (the 1/N window
	# probes one above the server's 5, as for a single domain:
	# conc-inverse.sim), 16.6% of the first attempts deferred.
	atf_check -o match:'max_connections=6 max_sessions=5 ' echo "$on"
	atf_check -o match:'first_attempt_deferred=199 \(16\.6%\)' echo "$on"
	atf_check -o match:'messages: arrived=600 delivered=600 ' grep '^messages:' on.out
	# By domain: three windows of 5 hit the provider at once.
	atf_check -o match:'max_connections=15 max_sessions=5 ' echo "$off"
	rej_on=$(value on.out "mx mx.provider.example:" rejected_421)
	rej_off=$(value off.out "mx mx.provider.example:" rejected_421)
	check_ge "$rej_off" "$(($rej_on + 100))" "grouping saved too few 421s"
	def_on=$(value on.out recipients: deferrals)
	def_off=$(value off.out recipients: deferrals)
	check_ge "$def_off" "$(($def_on * 10))" "grouping saved too few deferrals"
}

atf_test_case consistency
consistency_head()
{
	atf_set "descr" "The core's full self-check holds after every event of a mixed scenario and of the dead destination one"
}
consistency_body()
{
	atf_check -o save:mixed.out $SIM --check $SC/mixed.sim
	atf_check -o match:'^core: selected=[0-9]+ preemptions=[1-9]' cat mixed.out
	atf_check -o match:'bounced=[1-9]' grep '^recipients:' mixed.out
	atf_check -o ignore $SIM --check $SC/fair-backlog.sim
	atf_check -o ignore $SIM --check $SC/preempt.sim
}

atf_test_case outputs
outputs_head()
{
	atf_set "descr" "CSV window samples, per-message latency, summary lines"
}
outputs_body()
{
	atf_check -o save:csv.out $SIM --csv $SC/seq-loan.sim
	atf_check -o inline:"time,transport,destination,window,busy,todo,state\n" head -n1 csv.out
	atf_check -o match:'^1\.000,smtp,d\.example,[0-9]+,1,[0-9]+,ok$' cat csv.out
	atf_check -o save:lat.out $SIM --latency $SC/seq-loan.sim
	atf_check -o inline:"message,label,arrival,final,latency,attempts,status\nM1,1,0.000,14.000,14.000,1,delivered\nM2,2,0.000,4.000,4.000,1,delivered\nM3,3,0.000,10.000,10.000,1,delivered\n" cat lat.out
	atf_check -o save:both.out $SIM --order --summary $SC/seq-loan.sim
	atf_check -o match:'^order: 11221111331111$' cat both.out
	atf_check -o match:'^core: selected=14 preemptions=2 ' cat both.out
}

# is A B WHAT: exact equality.
is()
{
	[ "$1" = "$2" ] || atf_fail "$3: $1, expected $2"
}

atf_test_case rate_limit
rate_limit_head()
{
	atf_set "descr" "Shaping: a destination limited to 10/m with burst 5 gets 5 at once and then one every 6 s, without deferrals; the fast one next to it has the figures of a run without the limit"
}
rate_limit_body()
{
	atf_check -o save:on.out $SIM --check $SC/rate-limit.sim
	atf_check -o save:off.out $SIM $SC/rate-limit-off.sim
	# The limited one: 120 messages, 5 at t=0, the 120th starts at
	# (120 - 5) x 6 = 690 s and takes 1 s.
	is "$(value on.out "label s:" last_done)" 691.000 "on.out label s: last_done"
	is "$(value on.out "dest slow.example: transport" sent)" 120 "on.out dest slow.example: transport sent"
	is "$(value on.out "dest slow.example: transport" deferred)" 0 "on.out dest slow.example: transport deferred"
	is "$(value on.out "dest slow.example: transport" conn_failures)" 0 "on.out dest slow.example: transport conn_failures"
	is "$(value on.out "recipients:" deferrals)" 0 "on.out recipients: deferrals"
	is "$(value on.out "messages:" retries)" 0 "on.out messages: retries"
	atf_check -o match:'limits="messages=10/m burst=5"' grep '^dest slow.example: limits' on.out
	# Without the limit it is done with the arrivals.
	is "$(value off.out "label s:" last_done)" 60.000 "off.out label s: last_done"
	# The fast one is unaffected: the same figures in both runs.
	grep -E '^(label f:|dest fast.example: (transport|first))' on.out > fast-on
	grep -E '^(label f:|dest fast.example: (transport|first))' off.out > fast-off
	atf_check -o match:'delivered=120' cat fast-on
	atf_check -o empty diff fast-on fast-off
	# Deliveries of the limited one, in time: never more than 5 + t/6 by
	# time t (the bucket's allowance).
	atf_check -o save:lat.out $SIM --latency $SC/rate-limit.sim
	awk -F, '$2 == "s" && $4 != "" { print $4 - 1 }' lat.out | sort -n > starts
	atf_check -o inline:"120\n" sh -c 'wc -l < starts | tr -d " "'
	atf_check -o empty awk '{ n++; if (n > 5 + int($1 / 6 + 1e-6)) print "too early: " n " by " $1 }' starts
}

atf_test_case bad_input
bad_input_head()
{
	atf_set "descr" "Scenario errors name the file and line; no crash"
}
bad_input_body()
{
	printf 'transport smtp\nfoo bar\n' > a.sim
	atf_check -s exit:2 -e match:'a.sim:2: unknown command "foo"' $SIM a.sim
	printf 'transport smtp delivery_slot_discount=200\n' > b.sim
	atf_check -s exit:2 -e match:'b.sim:1: .*delivery_slot_discount' $SIM b.sim
	printf 'dest a.example\nat 0 rcpts=1 to=b.example\n' > c.sim
	atf_check -s exit:2 -e match:'c.sim:2: unknown destination "b.example"' $SIM c.sim
	printf 'dest a.example service=fast\n' > d.sim
	atf_check -s exit:2 -e match:'d.sim:1: bad time for service' $SIM d.sim
	printf 'at 0 every=1s rcpts=1 to=x\n' > e.sim
	atf_check -s exit:2 -e match:'e.sim:1:' $SIM e.sim
	printf 'dest a.example transport=relay\n' > f.sim
	atf_check -s exit:2 -e match:'unknown transport "relay"' $SIM f.sim
	atf_check -s exit:2 -e match:'nosuch.sim' $SIM nosuch.sim
	atf_check -s exit:2 -e match:'usage' $SIM
	atf_check -s exit:2 -e match:'unknown option' $SIM --bogus a.sim
	printf 'dest a.example mx=\n' > h.sim
	atf_check -s exit:2 -e match:'h.sim:1: mx needs a host name' $SIM h.sim
	printf 'transport smtp destination_grouping=provider\n' > i.sim
	atf_check -s exit:2 -e match:'i.sim:1: .*destination_grouping.*domain or mx' $SIM i.sim
	printf 'set minimal_backoff_time 1h\nset maximal_backoff_time 1m\n' > g.sim
	atf_check -s exit:2 -e match:'g.sim' $SIM g.sim
	# Impossible rates and bursts: each line alone is a scenario.
	while IFS='|' read -r line want; do
		echo "$line" > r.sim
		atf_check -s exit:2 -e match:"r.sim:1: .*$want" $SIM r.sim
	done <<-EOF
	dest b.example messages=0/s|bad rate "0/s"
	dest a.example messages=5/fortnight|unknown unit
	dest a.example messages=5/h burst=-1|bad burst "-1"
	set default_destination_message_rate -3/m|bad rate
	EOF
	printf 'transport smtp\ndest a.example limit_at=100s:5,50s:3\n' > h.sim
	atf_check -s exit:2 -e match:'h.sim:2: limit_at: times must increase' $SIM h.sim
	printf 'dest a.example limit_at=100s\n' > i.sim
	atf_check -s exit:2 -e match:'i.sim:1: bad limit change "100s"' $SIM i.sim
	printf 'dest a.example limit_at=10s:-1\n' > j.sim
	atf_check -s exit:2 -e match:'j.sim:1: bad number for limit_at' $SIM j.sim
	printf 'transport smtp destination_concurrency_feedback_mode=fast\n' > k.sim
	atf_check -s exit:2 -e match:'k.sim:1: .*unknown feedback mode "fast": expected postfix or learn' $SIM k.sim
}

atf_init_test_cases()
{
	atf_add_test_case sequences
	atf_add_test_case preemption
	atf_add_test_case bulk_same_destination
	atf_add_test_case concurrency_reference
	atf_add_test_case dead_destination
	atf_add_test_case learn_reference
	atf_add_test_case learn_no_limit
	atf_add_test_case learn_limit_change
	atf_add_test_case learn_dead
	atf_add_test_case fairness_backlog
	atf_add_test_case fairness_stream
	atf_add_test_case million_recipients
	atf_add_test_case many_blocked
	atf_add_test_case mx_group
	atf_add_test_case consistency
	atf_add_test_case outputs
	atf_add_test_case rate_limit
	atf_add_test_case bad_input
}
