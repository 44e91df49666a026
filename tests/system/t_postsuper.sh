#! /usr/bin/env atf-sh
# postsuper on a private queue directory with no system running: delete,
# hold, release and requeue on single IDs, standard input and ALL, with
# their log lines; the structure repair of a broken queue tree; purging
# stale temporary files; the requests that need qmgr.

B=@BUILDDIR@
POSTQ=$B/bin/postq
PS=$B/bin/postsuper
MKQ=$B/tests/tools/mkqfile
BC=$B/tests/tools/bounce-call
. @SRCDIR@/tests/system/queue.subr

# ab_msg QUEUE: a message from a@example.org to b@example.org in QUEUE;
# prints its ID.
ab_msg() {
	msg "$1" -f a@example.org -r b@example.org
}

where() {
	for q in maildrop incoming active deferred hold corrupt; do
		in_queue $q $1 && echo $q
	done
}

# expect_where ID QUEUE: the message is in QUEUE only ("" for nowhere).
expect_where() {
	_w=$(where $1 | tr '\n' ' ' | sed 's/ $//')
	[ "$_w" = "$2" ] || atf_fail "$1 is in '$_w', want '$2'"
}

log_has() {
	grep -q -- "postsuper\[[0-9]*\]: $1\$" maillog ||
	    atf_fail "no log line '$1' in maillog"
}

atf_test_case single
single_head() {
	atf_set descr "-h, -H, -r, -d on single IDs: the files move, one log line each, a summary"
}
single_body() {
	mkconf
	I=$(ab_msg incoming)
	D=$(ab_msg deferred)
	# a defer log to see removed with the message
	atf_check -s exit:0 $BC -c $PWD/etc append defer $D "b@example.org|300|delayed|4.0.0|later"
	atf_check -s exit:0 -e inline:'postsuper: Placed on hold: 1 message\n' $PS -c $PWD/etc -h $I
	expect_where $I hold
	log_has "$I: placed on hold"
	# already held: -h again finds nothing in its default queues
	atf_check -s exit:1 -e match:"$I: no such message in the selected queues" $PS -c $PWD/etc -h $I
	atf_check -s exit:0 -e inline:'postsuper: Released from hold: 1 message\n' $PS -c $PWD/etc -H $I
	expect_where $I deferred
	log_has "$I: released from hold"
	# released mail is due now
	[ $(stat -c %Y $(qpath deferred $I)) -le $(date +%s) ] || atf_fail "not due"
	# requeue: to incoming, its defer log gone
	touch -d 2099-01-01 $(qpath deferred $D)
	atf_check -s exit:0 -e inline:'postsuper: Requeued: 1 message\n' $PS -c $PWD/etc -r $D
	expect_where $D incoming
	atf_check -s exit:0 -o empty find q/defer -type f -name $D
	log_has "$D: requeued"
	# delete, its logs with it
	atf_check -s exit:0 $BC -c $PWD/etc append bounce $D "b@example.org|300|failed|5.0.0|no"
	atf_check -s exit:0 -e inline:'postsuper: Deleted: 2 messages\n' $PS -c $PWD/etc -d $D -d $I
	expect_where $D ""
	expect_where $I ""
	atf_check -s exit:0 -o empty find q/defer q/bounce -type f
	log_has "$D: removed"
	log_has "$I: removed"
	atf_check -s exit:0 -o inline:'Mail queue is empty\n' $POSTQ -C $PWD/etc
	# one line per message and action, nothing else
	atf_check -s exit:0 -o inline:'6\n' sh -c "grep -c postsuper maillog"
	# bad and unknown IDs
	atf_check -s exit:1 -e match:'nonsense: not a valid queue ID' $PS -c $PWD/etc -d nonsense
	atf_check -s exit:1 -e match:'1NB6Q3P0B4K7G2: no such message' $PS -c $PWD/etc -d 1NB6Q3P0B4K7G2
}

atf_test_case stdin_and_all
stdin_and_all_head() {
	atf_set descr "IDs from standard input (postq output too), ALL, and queue names restricting them"
}
stdin_and_all_body() {
	mkconf
	for i in 1 2 3; do ab_msg incoming > /dev/null; done
	for i in 1 2; do ab_msg deferred > /dev/null; done
	H=$(ab_msg hold)
	# from postq -j, through jq or python
	$POSTQ -C $PWD/etc -j | python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m["queue_name"] == "incoming": print(m["queue_id"])' > ids
	atf_check -s exit:0 -o inline:'3\n' sh -c 'wc -l < ids | tr -d " "'
	atf_check -s exit:0 -e inline:'postsuper: Placed on hold: 3 messages\n' \
	    sh -c "$PS -c $PWD/etc -h - < ids"
	for id in $(cat ids); do log_has "$id: placed on hold"; done
	# the mailq marks (ID!) are accepted too
	$POSTQ -C $PWD/etc | awk '/^[0-9A-Z]+!/ { print $1 }' > held
	atf_check -s exit:0 -o inline:'4\n' sh -c 'wc -l < held | tr -d " "'
	atf_check -s exit:0 -e inline:'postsuper: Released from hold: 4 messages\n' \
	    sh -c "$PS -c $PWD/etc -H - < held"
	# only one option may read standard input
	atf_check -s exit:1 -e match:'only one option' sh -c "echo $H | $PS -c $PWD/etc -h - -d -"
	# ALL of one queue
	atf_check -s exit:0 -o inline:'6\n' sh -c "find q/deferred -type f | wc -l | tr -d ' '"
	atf_check -s exit:0 -e inline:'postsuper: Placed on hold: 6 messages\n' $PS -c $PWD/etc -h ALL
	atf_check -s exit:0 -e inline:'postsuper: Requeued: 6 messages\n' $PS -c $PWD/etc -r ALL maildrop incoming hold </dev/null
	atf_check -s exit:0 -o inline:'6\n' sh -c "find q/incoming -type f | wc -l | tr -d ' '"
	set -- $(head -n 2 ids)
	atf_check -s exit:0 -e inline:'postsuper: Placed on hold: 2 messages\n' $PS -c $PWD/etc -h $1 -h $2
	atf_check -s exit:0 -e inline:'postsuper: Deleted: 2 messages\n' $PS -c $PWD/etc -d ALL hold
	expect_where $1 ""
	atf_check -s exit:0 -o match:'in 4 Requests' $POSTQ -C $PWD/etc
	atf_check -s exit:0 -e inline:'postsuper: Deleted: 4 messages\n' $PS -c $PWD/etc -d ALL
	atf_check -s exit:0 -o inline:'Mail queue is empty\n' $POSTQ -C $PWD/etc
	# maildrop and corrupt only when named
	M=$(ab_msg maildrop)
	C=$(ab_msg corrupt)
	atf_check -s exit:1 -e match:"$M: no such message" $PS -c $PWD/etc -d $M
	atf_check -s exit:0 -e inline:'postsuper: Deleted: 2 messages\n' $PS -c $PWD/etc -d $M -d $C maildrop corrupt
	atf_check -s exit:1 -e match:'active1: not a message queue name' $PS -c $PWD/etc -d ALL active1
	atf_check -s exit:1 -e match:'defer: not a message queue name' $PS -c $PWD/etc -d ALL defer
}

atf_test_case active_no_qmgr
active_no_qmgr_head() {
	atf_set descr "with no qmgr running, the active queue is nobody's and postsuper handles it"
}
active_no_qmgr_body() {
	mkconf
	A=$(ab_msg active)
	atf_check -s exit:0 -e inline:'postsuper: Placed on hold: 1 message\n' $PS -c $PWD/etc -h $A
	expect_where $A hold
	A=$(ab_msg active)
	atf_check -s exit:0 -e inline:'postsuper: Deleted: 1 message\n' $PS -c $PWD/etc -d ALL active
}

# The broken tree: every kind of damage -s repairs.
break_tree() {
	mkconf
	OK=$(ab_msg incoming)
	WRONG=$(ab_msg deferred)
	# deferred is hashed: put one at the top level, one two levels deep
	mv $(qpath deferred $WRONG) q/deferred/$WRONG
	DEEP=$(ab_msg deferred)
	h1=$(printf %s $DEEP | cut -c11)
	h2=$(printf %s $DEEP | cut -c10)
	mkdir -p q/deferred/$h1/$h2
	mv $(qpath deferred $DEEP) q/deferred/$h1/$h2/$DEEP
	# a copied file: its name no longer matches its inode; with a log
	COPY=$(ab_msg hold)
	atf_check -s exit:0 $BC -c $PWD/etc append defer $COPY "b@example.org|300|delayed|4.0.0|later"
	cp $(qpath hold $COPY) copy && rm $(qpath hold $COPY) && mv copy q/hold/x.tmp
	# (the new file must get a different inode than the old one had)
	mv q/hold/x.tmp q/hold/$COPY
	# stray things
	echo junk > q/incoming/junk
	echo junk2 > q/defer/README
	ln -s /etc/passwd q/hold/link
	mkdir q/incoming/subdir
	# a writer's temporary file is not stray
	echo partial > q/incoming/tmp.123.1.456
	# a missing queue
	rm -rf q/trace q/corrupt
}

atf_test_case structure
structure_head() {
	atf_set descr "-s repairs a deliberately broken queue tree and reports what it did"
}
structure_body() {
	break_tree
	atf_check -s exit:1 -e save:err $PS -c $PWD/etc -s
	atf_check -s exit:0 -o match:'structure: 2 directories created, 2 files moved, 1 renamed, 3 to corrupt, 1 left' cat err
	# the missing queues exist again
	test -d q/trace && test -d q/corrupt || atf_fail "missing queues not created"
	atf_check -s exit:0 -o match:'created the missing queue directory .*/q/trace' cat maillog
	# files at the wrong hash level are where the layout puts them
	h=$(printf %s $WRONG | cut -c11)
	test -f q/deferred/$h/$WRONG || atf_fail "$WRONG not moved"
	h=$(printf %s $DEEP | cut -c11)
	test -f q/deferred/$h/$DEEP || atf_fail "$DEEP not moved"
	# the copy has a new name matching its inode, and its log followed
	test -f q/hold/$COPY && atf_fail "$COPY kept its old name"
	NEW=$(ls q/hold)
	[ $(echo "$NEW" | wc -l) -eq 1 ] || atf_fail "hold: $NEW"
	[ "$(printf %s $NEW | cut -c1-11)" = "$(printf %s $COPY | cut -c1-11)" ] ||
	    atf_fail "the time part changed: $COPY -> $NEW"
	atf_check -s exit:0 -o match:"$COPY: renamed to $NEW in hold" cat maillog
	atf_check -s exit:0 -o not-empty find q/defer -name $NEW
	atf_check -s exit:0 -o empty find q/defer -name $COPY
	# stray files went to corrupt, nothing was deleted
	test -f q/corrupt/junk && test -f q/corrupt/README && test -L q/corrupt/link ||
	    atf_fail "stray files not in corrupt: $(ls q/corrupt)"
	test -d q/incoming/subdir || atf_fail "the directory was removed"
	test -f q/incoming/tmp.123.1.456 || atf_fail "the temporary file was touched"
	atf_check -s exit:0 -o match:'subdir: unexpected directory' cat err
	# every message is listed and readable
	atf_check -s exit:0 -o match:'in 4 Requests' $POSTQ -C $PWD/etc
	atf_check -s exit:0 -o match:"^\*\*\* MESSAGE FILE END hold/$NEW" $POSTQ -C $PWD/etc -c $NEW
	# a second run has only the directory left to report
	rmdir q/incoming/subdir
	atf_check -s exit:0 -e match:'structure: 0 directories created, 0 files moved, 0 renamed, 0 to corrupt, 0 left' $PS -c $PWD/etc -s
}

atf_test_case purge
purge_head() {
	atf_set descr "-p removes stale temporary files, never young ones or those a writer holds"
}
purge_body() {
	mkconf
	ab_msg incoming > /dev/null
	echo a > q/incoming/tmp.1.1.1
	echo b > q/maildrop/tmp.2.1.1
	echo c > q/incoming/tmp.3.1.1
	echo d > q/deferred/tmp.4.1.1
	touch -d '2020-01-01' q/incoming/tmp.1.1.1 q/maildrop/tmp.2.1.1 q/deferred/tmp.4.1.1
	# a live writer holds tmp.4 (an fcntl lock)
	python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "r+")
fcntl.lockf(f, fcntl.LOCK_EX)
open("locked", "w").close()
time.sleep(60)' q/deferred/tmp.4.1.1 &
pid=$!
	n=0
	while [ ! -f locked ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
	test -f locked || atf_fail "the lock holder did not start"
	atf_check -s exit:0 -e inline:'postsuper: purged 2 stale temporary files\n' $PS -c $PWD/etc -p
	kill $pid
	wait $pid 2>/dev/null
	test -f q/incoming/tmp.1.1.1 && atf_fail "stale tmp.1 kept"
	test -f q/maildrop/tmp.2.1.1 && atf_fail "stale tmp.2 kept"
	test -f q/incoming/tmp.3.1.1 || atf_fail "young tmp.3 removed"
	test -f q/deferred/tmp.4.1.1 || atf_fail "locked tmp.4 removed"
	atf_check -s exit:0 -o match:'removed stale temporary file .*/q/incoming/tmp.1.1.1' cat maillog
	# the messages are untouched
	atf_check -s exit:0 -o match:'in 1 Request\.' $POSTQ -C $PWD/etc
	# the lock is gone: now it is stale
	atf_check -s exit:0 -e inline:'postsuper: purged 1 stale temporary file\n' $PS -c $PWD/etc -p
}

atf_test_case no_qmgr
no_qmgr_head() {
	atf_set descr "-x, -P, -U need qmgr and say so"
}
no_qmgr_body() {
	mkconf
	atf_check -s exit:1 -e match:'qmgr is not running' $PS -c $PWD/etc -x ALL
	atf_check -s exit:1 -e match:'qmgr is not running' $PS -c $PWD/etc -P example.com
	atf_check -s exit:1 -e match:'qmgr is not running' $PS -c $PWD/etc -U example.com
}

atf_test_case usage
usage_head() {
	atf_set descr "postsuper without work, or with bad options, prints its usage"
}
usage_body() {
	mkconf
	atf_check -s exit:2 -e match:usage $PS -c $PWD/etc
	atf_check -s exit:2 -e match:usage $PS -c $PWD/etc -Z
	atf_check -s exit:2 -e match:usage $PS -c $PWD/etc -w -1 -s
	atf_check -s exit:2 -e match:usage $PS -c $PWD/etc deferred
}

atf_init_test_cases() {
	atf_add_test_case single
	atf_add_test_case stdin_and_all
	atf_add_test_case active_no_qmgr
	atf_add_test_case structure
	atf_add_test_case purge
	atf_add_test_case no_qmgr
	atf_add_test_case usage
}
