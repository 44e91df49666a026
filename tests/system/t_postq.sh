#! /usr/bin/env atf-sh
# postq on a private queue directory, without a running system: the
# mailq layout, JSON lines (parsed), defer-log reasons, retry times and
# attempts, damaged files, queue shape, flushing, postq -c, permissions.

B=@BUILDDIR@
POSTQ=$B/bin/postq
MKQ=$B/tests/tools/mkqfile
BC=$B/tests/tools/bounce-call
. @SRCDIR@/tests/system/queue.subr

# Offsets of the recipient records of a queue file: "OFFSET ADDRESS".
rcpt_offsets() {
	python3 - "$1" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
v2 = d[2] == ord('2')   # version 2: a check after each record but the
i = 0                   # head (129 bytes), a done mark before it in R, r
while i < len(d):
    start = i
    t = d[i]; i += 1
    n = 0; s = 0
    while True:
        b = d[i]; i += 1
        n |= (b & 0x7f) << s; s += 7
        if not b & 0x80:
            break
    data = d[i:i + n]; i += n
    if v2 and start >= 129:
        i += 4 + (t in (ord('R'), ord('r')))
    if t in (ord('R'), ord('r')):
        sys.stdout.buffer.write(b'%d %s\n' % (start, data))
EOF
}

offset_of() {
	rcpt_offsets "$1" | awk -v a="$2" '$2 == a { print $1 }'
}

pq() {
	$POSTQ -C $PWD/etc "$@"
}

atf_test_case empty
empty_head() {
	atf_set descr "an empty queue: 'Mail queue is empty', no JSON lines"
}
empty_body() {
	mkconf
	atf_check -s exit:0 -o inline:'Mail queue is empty\n' -e empty $POSTQ -C $PWD/etc
	atf_check -s exit:0 -o empty -e empty $POSTQ -C $PWD/etc -j
	# mailq is postq
	ln -s $POSTQ mailq
	MAIL_CONFIG=$PWD/etc atf_check -s exit:0 -o inline:'Mail queue is empty\n' ./mailq
	# a queue directory that does not exist yet is empty too
	rm -rf q
	atf_check -s exit:0 -o inline:'Mail queue is empty\n' $POSTQ -C $PWD/etc
}

# The fixture of the listing tests: one message in each queue; the
# deferred one has two reasons in its defer log and a retry time.
fixture() {
	mkconf
	export TZ=UTC
	I=$(msg incoming -f alice@example.org -T 1700000000.000001 -r bob@example.net)
	A=$(msg active -f carol@example.org -T 1700000100.000002 -r dan@example.com -r erin@example.com)
	D=$(msg deferred -f '' -T 1700000200.000003 -r u1@dead.example -r u2@dead.example \
	    -r u3@slow.example -r u4@done.example -k 3 -A 4)
	H=$(msg hold -f frank@example.org -T 1700000300.000004 -r gina@example.net)
	f=$(qpath deferred $D)
	o1=$(offset_of $f u1@dead.example)
	o2=$(offset_of $f u2@dead.example)
	o3=$(offset_of $f u3@slow.example)
	[ -n "$o1" ] && [ -n "$o3" ] || atf_fail "no recipient offsets"
	atf_check -s exit:0 $BC -c $PWD/etc append defer $D \
	    "u1@dead.example|$o1|delayed|4.4.1|connect to mx.dead.example[192.0.2.1]:25: Connection refused" \
	    "u2@dead.example|$o2|delayed|4.4.1|connect to mx.dead.example[192.0.2.1]:25: Connection refused" \
	    "u3@slow.example|$o3|delayed|4.2.0|host mx.slow.example said: 451 try later"
	# the retry time is the file time
	touch -d '2023-11-15 00:00:00 UTC' $f
}

atf_test_case list_text
list_text_head() {
	atf_set descr "the mailq layout: markers, sizes, times, senders, recipients, reasons, retry and attempts, total"
}
list_text_body() {
	fixture
	atf_check -s exit:0 -o save:out -e empty $POSTQ -C $PWD/etc
	line() {
		printf '%-18s %8s %-19s  %s\n' "$1" "$2" "$3" "$4"
	}
	r() {
		printf '%49s%s\n' '' "$1"
	}
	{
		line -Queue\ ID- --Size-- ----Arrival\ Time--- -Sender/Recipient-------
		line $I 25 "Tue Nov 14 22:13:20" alice@example.org
		r bob@example.net
		echo
		line "$A*" 25 "Tue Nov 14 22:15:00" carol@example.org
		r dan@example.com
		r erin@example.com
		echo
		line $D 25 "Tue Nov 14 22:16:40" MAILER-DAEMON
		echo "        [next retry: Wed Nov 15 00:00:00, attempts: 4]"
		echo "        (connect to mx.dead.example[192.0.2.1]:25: Connection refused)"
		r u1@dead.example
		r u2@dead.example
		echo "        (host mx.slow.example said: 451 try later)"
		r u3@slow.example
		echo
		line "$H!" 25 "Tue Nov 14 22:18:20" frank@example.org
		r gina@example.net
		echo
		echo "-- 1 Kbytes in 4 Requests."
	} > want
	atf_check -s exit:0 -o empty diff -u want out
	# a recipient already done (u4) is not listed
	atf_check -s exit:1 -o empty grep u4@done.example out
	# one message: singular
	rm $(qpath incoming $I) $(qpath active $A) $(qpath hold $H)
	atf_check -s exit:0 -o match:'^-- 1 Kbytes in 1 Request\.$' $POSTQ -C $PWD/etc
}

atf_test_case list_json
list_json_head() {
	atf_set descr "postq -j: one JSON object per message with the documented fields"
}
list_json_body() {
	fixture
	atf_check -s exit:0 -o save:out -e empty $POSTQ -C $PWD/etc -j
	atf_check -s exit:0 -o inline:'4\n' sh -c 'wc -l < out | tr -d " "'
	cat > check.py <<'EOF'
import json, sys
msgs = [json.loads(l) for l in open('out')]
by = {m['queue_name']: m for m in msgs}
keys = ['queue_name', 'queue_id', 'arrival_time', 'message_size', 'sender',
        'attempts', 'next_retry', 'recipients']
for m in msgs:
    assert list(m.keys()) == keys, m.keys()
    for r in m['recipients']:
        assert list(r.keys()) == ['address', 'delay_reason'], r
assert [m['queue_name'] for m in msgs] == ['incoming', 'active', 'deferred', 'hold']
i, a, d, h = by['incoming'], by['active'], by['deferred'], by['hold']
assert i['queue_id'] == sys.argv[1] and i['arrival_time'] == 1700000000
assert i['sender'] == 'alice@example.org' and i['message_size'] == 25
assert i['next_retry'] is None and i['attempts'] == 0
assert i['recipients'] == [{'address': 'bob@example.net', 'delay_reason': None}]
assert [r['address'] for r in a['recipients']] == ['dan@example.com', 'erin@example.com']
assert d['queue_id'] == sys.argv[2] and d['sender'] == ''
assert d['attempts'] == 4 and d['next_retry'] == 1700006400
refused = 'connect to mx.dead.example[192.0.2.1]:25: Connection refused'
assert d['recipients'] == [
    {'address': 'u1@dead.example', 'delay_reason': refused},
    {'address': 'u2@dead.example', 'delay_reason': refused},
    {'address': 'u3@slow.example', 'delay_reason': 'host mx.slow.example said: 451 try later'},
], d['recipients']
assert h['queue_id'] == sys.argv[3] and h['next_retry'] is None
print('ok')
EOF
	atf_check -s exit:0 -o inline:'ok\n' python3 check.py $I $D $H
	# jq agrees (when installed)
	if command -v jq >/dev/null; then
		atf_check -s exit:0 -o inline:"$D\n" \
		    sh -c "jq -r 'select(.attempts == 4) | .queue_id' < out"
	fi
}

atf_test_case json_escapes
json_escapes_head() {
	atf_set descr "postq -j escapes quotes, control characters and bytes that are not UTF-8"
}
json_escapes_body() {
	mkconf
	D=$(msg deferred -f "$(printf 'a"b\\c\377@example.org')" -r "$(printf 'caf\303\251@example.org')")
	f=$(qpath deferred $D)
	o=$(offset_of $f "$(printf 'caf\303\251@example.org')")
	atf_check -s exit:0 $BC -c $PWD/etc append defer $D \
	    "x|$o|delayed|4.0.0|said: \"busy\" \\ later"
	atf_check -s exit:0 -o save:out $POSTQ -C $PWD/etc -j
	cat > check.py <<'EOF'
import json
m = json.loads(open('out', encoding='utf-8').read())
assert m['sender'] == 'a"b\\c\u00ff@example.org', m['sender']
r = m['recipients'][0]
assert r['address'] == 'caf\u00e9@example.org', r
assert r['delay_reason'] == 'said: "busy" \\ later', r
print('ok')
EOF
	atf_check -s exit:0 -o inline:'ok\n' python3 check.py
	# the text form quotes what is not printable
	atf_check -s exit:0 -o match:'a"b\\\\c\\377@example.org$' $POSTQ -C $PWD/etc
}

atf_test_case damaged
damaged_head() {
	atf_set descr "a damaged queue file is listed with the damage, the others as usual"
}
damaged_body() {
	mkconf
	export TZ=UTC
	G=$(msg deferred -f good@example.org -r r@example.org)
	X=$(msg deferred -f bad@example.org -r r@example.org)
	f=$(qpath deferred $X)
	head -c 150 $f > cut && cat cut > $f
	atf_check -s exit:0 -o save:out $POSTQ -C $PWD/etc
	atf_check -s exit:0 -o match:"^$X +\? \? +\(damaged queue file: at offset [0-9]+: " cat out
	atf_check -s exit:0 -o match:"good@example.org" cat out
	atf_check -s exit:0 -o match:'in 2 Requests' cat out
	atf_check -s exit:0 -o save:j $POSTQ -C $PWD/etc -j
	atf_check -s exit:0 -o inline:'ok\n' python3 -c "
import json
ms = [json.loads(l) for l in open('j')]
bad = [m for m in ms if m['queue_id'] == '$X'][0]
assert bad['error'].startswith('damaged queue file: at offset'), bad
assert set(bad) == {'queue_name', 'queue_id', 'error'}
print('ok')"
}

atf_test_case shape
shape_head() {
	atf_set descr "postq -q: messages per domain and age bucket for each queue; -F by sender; -j"
}
shape_body() {
	mkconf
	now=$(date +%s)
	# ages: 1 min, 7 min, 3 hours, 2 days
	msg deferred -f a@s1.example -T $((now - 60)) -r x@d1.example -r y@d1.example -r z@d2.example >/dev/null
	msg deferred -f b@s1.example -T $((now - 420)) -r x@d1.example >/dev/null
	msg deferred -f '' -T $((now - 10800)) -r x@D2.example >/dev/null
	msg hold -f c@s2.example -T $((now - 172800)) -r x@d3.example >/dev/null
	atf_check -s exit:0 -o save:out $POSTQ -C $PWD/etc -q
	cat > want <<'EOF'
incoming:
      T 5 10 20 40 80 160 320 640 1280 1280+
TOTAL 0 0  0  0  0  0   0   0   0    0     0

active:
      T 5 10 20 40 80 160 320 640 1280 1280+
TOTAL 0 0  0  0  0  0   0   0   0    0     0

deferred:
           T 5 10 20 40 80 160 320 640 1280 1280+
     TOTAL 3 1  1  0  0  0   0   1   0    0     0
d1.example 2 1  1  0  0  0   0   0   0    0     0
d2.example 2 1  0  0  0  0   0   1   0    0     0

hold:
           T 5 10 20 40 80 160 320 640 1280 1280+
     TOTAL 1 0  0  0  0  0   0   0   0    0     1
d3.example 1 0  0  0  0  0   0   0   0    0     1

EOF
	atf_check -s exit:0 -o empty diff -u want out
	# by sender domain, one queue, fewer buckets of 10 minutes
	atf_check -s exit:0 -o save:out2 $POSTQ -C $PWD/etc -q -F -b 3 -t 10 deferred
	cat > want2 <<'EOF'
deferred:
              T 10 20 20+
        TOTAL 3  2  0   1
   s1.example 2  2  0   0
MAILER-DAEMON 1  0  0   1

EOF
	atf_check -s exit:0 -o empty diff -u want2 out2
	atf_check -s exit:0 -o save:j $POSTQ -C $PWD/etc -q -j deferred
	atf_check -s exit:0 -o inline:'ok\n' python3 -c "
import json
rows = [json.loads(l) for l in open('j')]
assert rows[0]['recipient_domain'] is None and rows[0]['total'] == 3
assert rows[0]['bucket_limits'] == [5, 10, 20, 40, 80, 160, 320, 640, 1280, None]
d1 = [r for r in rows if r['recipient_domain'] == 'd1.example'][0]
assert d1['buckets'][:2] == [1, 1] and d1['queue_name'] == 'deferred'
print('ok')"
	atf_check -s exit:1 -e match:'bad bucket settings' $POSTQ -C $PWD/etc -q -b 1
	atf_check -s exit:1 -e match:"unknown queue name 'nosuch'" $POSTQ -C $PWD/etc -q nosuch
}

atf_test_case postcat
postcat_head() {
	atf_set descr "postq -c QUEUEID shows the queue file with postcat"
}
postcat_body() {
	mkconf
	D=$(msg deferred -f alice@example.org -r bob@example.net)
	atf_check -s exit:0 -o match:"^\*\*\* ENVELOPE RECORDS deferred/$D \*\*\*$" \
	    -o match:'^sender: alice@example.org$' -o match:'^body line$' \
	    $POSTQ -C $PWD/etc -c $D
	atf_check -s exit:1 -e match:'not found in any queue' $POSTQ -C $PWD/etc -c 1NB6Q3P0B4K7G2
}

atf_test_case flush
flush_head() {
	atf_set descr "postq -s and -i make deferred mail due now; -f, -s, -i need a running qmgr to tell"
}
flush_body() {
	mkconf "relayhost = "
	echo "qmgr unix n - n 300 1 qmgr" > etc/master.cf
	D1=$(msg deferred -f a@example.org -r x@dead.example)
	D2=$(msg deferred -f a@example.org -r x@other.example)
	D3=$(msg deferred -f a@example.org -r x@other.example)
	for id in $D1 $D2 $D3; do touch -d '2099-01-01' $(qpath deferred $id); done
	# no system running: the files are made due, telling qmgr fails
	atf_check -s exit:1 -e match:'1 deferred message for dead.example made due now' \
	    -e match:'is Petrel running' $POSTQ -C $PWD/etc -s dead.example
	now=$(date +%s)
	[ $(stat -c %Y $(qpath deferred $D1)) -le $now ] || atf_fail "D1 not due"
	[ $(stat -c %Y $(qpath deferred $D2)) -gt $now ] || atf_fail "D2 touched"
	atf_check -s exit:1 -e match:'is Petrel running' $POSTQ -C $PWD/etc -i $D3
	[ $(stat -c %Y $(qpath deferred $D3)) -le $now ] || atf_fail "D3 not due"
	[ $(stat -c %Y $(qpath deferred $D2)) -gt $now ] || atf_fail "D2 touched"
	atf_check -s exit:1 -e match:'is Petrel running' $POSTQ -C $PWD/etc -f
	H=$(msg hold -r x@y.example)
	atf_check -s exit:1 -e match:"$H: the message is on hold" $POSTQ -C $PWD/etc -i $H
	atf_check -s exit:1 -e match:'no such message' $POSTQ -C $PWD/etc -i 1NB6Q3P0B4K7G2
	atf_check -s exit:1 -e match:'not a valid queue ID' $POSTQ -C $PWD/etc -i nonsense
}

atf_test_case no_qmgr
no_qmgr_head() {
	atf_set descr "postq -S and -D say clearly that qmgr is not running"
}
no_qmgr_body() {
	mkconf
	atf_check -s exit:1 -o empty -e match:'qmgr is not running' $POSTQ -C $PWD/etc -S
	atf_check -s exit:1 -o empty -e match:'qmgr is not running' $POSTQ -C $PWD/etc -D -j
}

atf_test_case usage
usage_head() {
	atf_set descr "postq refuses bad option combinations"
}
usage_body() {
	mkconf
	atf_check -s exit:2 -e match:usage $POSTQ -C $PWD/etc -S -D
	atf_check -s exit:2 -e match:usage $POSTQ -C $PWD/etc -f -q
	atf_check -s exit:2 -e match:usage $POSTQ -C $PWD/etc -Z
	atf_check -s exit:2 -e match:usage $POSTQ -C $PWD/etc extra
	atf_check -s exit:2 -e match:usage $POSTQ -C $PWD/etc -c
}

atf_test_case permissions
permissions_head() {
	atf_set descr "authorized_mailq_users, and a clear refusal for a user who cannot read the queue"
	atf_set require.user unprivileged
}
permissions_body() {
	mkconf "authorized_mailq_users = someone, !$(id -un), static:anyone"
	msg incoming -r x@example.org >/dev/null
	atf_check -s exit:1 -o empty -e match:"permission denied: user $(id -un) .* is not allowed by authorized_mailq_users" \
	    $POSTQ -C $PWD/etc
	atf_check -s exit:1 -o empty -e match:"not allowed by authorized_mailq_users" \
	    $POSTQ -C $PWD/etc -q
	mkconf "authorized_mailq_users = someone, $(id -un)"
	atf_check -s exit:0 -o match:'in 1 Request' $POSTQ -C $PWD/etc
	mkconf "authorized_flush_users = root"
	atf_check -s exit:1 -e match:'not allowed by authorized_flush_users' $POSTQ -C $PWD/etc -f
	# a queue the caller cannot read
	mkconf
	chmod 000 q/incoming
	atf_check -s exit:1 -o ignore -e match:'cannot read the mail queue: .*Permission denied.*only root and mail_owner' \
	    $POSTQ -C $PWD/etc
	chmod 700 q/incoming
}

atf_init_test_cases() {
	atf_add_test_case empty
	atf_add_test_case list_text
	atf_add_test_case list_json
	atf_add_test_case json_escapes
	atf_add_test_case damaged
	atf_add_test_case shape
	atf_add_test_case postcat
	atf_add_test_case flush
	atf_add_test_case no_qmgr
	atf_add_test_case usage
	atf_add_test_case permissions
}
