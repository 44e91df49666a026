#! /usr/bin/env atf-sh
# The metrics service (doc/metrics.md): a private instance with qmgr,
# smtp and the metrics service on a free loopback port; mail delivered to
# smtp-sink, mail deferred (a refused port, and a 450 from a slow sink),
# a message on hold; /metrics fetched over HTTP, checked with promtool
# and with a parser against what the test did; garbage requests; qmgr
# down; an address that cannot be bound.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/common.subr

MKQ=$B/tests/tools/mkqfile
PY=/usr/bin/python3

# metrics_instance MPORT [main.cf lines...]: qmgr, smtp (7 processes:
# the transport limit the metrics must show) and metrics on
# 127.0.0.1:MPORT; destinations in etc/transport.
metrics_instance() {
	_mp=$1
	shift
	# One recipient a delivery: the 450 of one recipient of a message
	# is counted while the other is still being delivered.
	mk_instance "transport_maps = texthash:$PWD/etc/transport" \
	    "smtp_destination_recipient_limit = 1" \
	    "queue_run_delay = 3600s" "inet_protocols = ipv4" \
	    "myhostname = client.test" "mydestination = localhost" "$@"
	touch etc/transport
	{
		echo "qmgr unix-dgram n - n 3600 1 $B/bin/qmgr"
		echo "smtp unix - n n - 7 $B/bin/smtp"
		echo "scache unix - n n - 1 $B/bin/scache"
		echo "127.0.0.1:$_mp inet n - n - 1 $B/bin/metrics"
	} > etc/master.cf
}

in_deferred() {
	test -n "$(find q/deferred -type f -name "$1")"
}

# qmgr_down PORT: a scrape that says petrel_qmgr_up 0 (in down.txt).
qmgr_down() {
	fetch $1 down.txt && grep -q '^petrel_qmgr_up 0$' down.txt
}

inject() {
	printf 'Subject: metrics test\n\nbody\n' |
	    $MKQ -d $PWD/q -f sender@client.test "$@"
}

need_promtool() {
	command -v promtool >/dev/null 2>&1 ||
	    atf_skip "promtool is missing (Debian package prometheus; tools/install-deps)"
}

# fetch PORT FILE: GET /metrics into FILE (the body); fails on anything
# but 200 with the exposition content type.
fetch() {
	$PY - "$1" "$2" <<'EOF'
import sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10) as r:
    if r.status != 200:
        sys.exit("status %d" % r.status)
    ct = r.headers.get("Content-Type", "")
    if ct != "text/plain; version=0.0.4; charset=utf-8":
        sys.exit("content type %r" % ct)
    if r.headers.get("Connection", "").lower() != "close":
        sys.exit("no Connection: close")
    open(out, "wb").write(r.read())
EOF
}

# raw PORT BYTES: sends BYTES (a Python bytes literal) on one connection
# and prints the status line of the answer, or NONE when the connection
# closed without one.
raw() {
	$PY - "$1" "$2" <<'EOF'
import socket, sys
port, data = int(sys.argv[1]), eval(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port), timeout=15)
s.sendall(data)
got = b""
while True:
    try:
        b = s.recv(65536)
    except ConnectionResetError:
        break
    if not b:
        break
    got += b
head, _, body = got.partition(b"\r\n\r\n")
lines = head.split(b"\r\n")
print(lines[0].decode("latin-1") if got else "NONE")
for l in lines[1:]:
    print(l.decode("latin-1"))
print("BODY %d" % len(body))
EOF
}

# parse FILE CHECKS...: parses the exposition strictly (the grammar of
# the text format 0.0.4: HELP and TYPE before the samples of a family,
# one block per family, escapes, values) and checks each CHECK, written
# "name{label="v",...} OP value" with OP one of == >= <=, or "!name{...}"
# for a series that must be absent.
parse() {
	$PY - "$@" <<'EOF'
import math, re, sys
NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
LNAME = r'[a-zA-Z_][a-zA-Z0-9_]*'
LVAL = r'"(?:[^"\\\n]|\\\\|\\"|\\n)*"'
SAMPLE = re.compile(r'^(%s)(?:\{((?:%s=%s)(?:,%s=%s)*)?\})? (\S+)$' % (NAME, LNAME, LVAL, LNAME, LVAL))
LABEL = re.compile(r'(%s)=(%s)' % (LNAME, LVAL))
def unesc(v):
    return re.sub(r'\\(.)', lambda m: {'n': '\n'}.get(m.group(1), m.group(1)), v[1:-1])
def num(v):
    if v in ("NaN", "+Inf", "-Inf"):
        return float(v.replace("+", ""))
    if not re.match(r'^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$', v):
        raise ValueError("bad value %r" % v)
    return float(v)
text = open(sys.argv[1], encoding="utf-8").read()
if not text.endswith("\n"):
    sys.exit("no final line feed")
series, helps, types, done, cur = {}, {}, {}, set(), None
for n, line in enumerate(text.split("\n")[:-1], 1):
    m = re.match(r'^# (HELP|TYPE) (%s) (.*)$' % NAME, line)
    if m:
        kind, name, rest = m.groups()
        if name != cur:
            if name in done:
                sys.exit("line %d: family %s appears twice" % (n, name))
            if cur:
                done.add(cur)
            cur = name
        if kind == "TYPE":
            if rest not in ("counter", "gauge"):
                sys.exit("line %d: type %r" % (n, rest))
            if rest == "counter" and not name.endswith("_total"):
                sys.exit("line %d: counter %s without _total" % (n, name))
            types[name] = rest
        else:
            helps[name] = rest
        continue
    m = SAMPLE.match(line)
    if not m:
        sys.exit("line %d: not a sample: %r" % (n, line))
    name, labels, value = m.groups()
    if name != cur or name not in types or name not in helps:
        sys.exit("line %d: sample of %s outside its family" % (n, name))
    lab = tuple(sorted((k, unesc(v)) for k, v in LABEL.findall(labels or "")))
    if (name, lab) in series:
        sys.exit("line %d: duplicate series" % n)
    series[(name, lab)] = num(value)
    if types[name] == "counter" and series[(name, lab)] < 0:
        sys.exit("line %d: negative counter" % n)
bad = 0
for check in sys.argv[2:]:
    absent = check.startswith("!")
    m = re.match(r'^!?(%s)(?:\{(.*)\})?(?: (==|>=|<=) (\S+))?$' % NAME, check)
    name, labels, op, want = m.groups()
    lab = tuple(sorted((k, unesc(v)) for k, v in LABEL.findall(labels or "")))
    got = series.get((name, lab))
    if absent:
        ok = got is None
    elif got is None:
        ok = False
    else:
        w = float(want)
        ok = {"==": got == w, ">=": got >= w, "<=": got <= w}[op]
    if not ok:
        print("check failed: %s (got %s)" % (check, got), file=sys.stderr)
        bad += 1
sys.exit(1 if bad else 0)
EOF
}

atf_test_case scrape cleanup
scrape_head() {
	atf_set descr "delivered, deferred and held mail: /metrics is valid for promtool and shows what happened"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
	atf_set timeout 180
}
scrape_body() {
	need_promtool
	start_sink s
	okport=$port
	# The slow sink holds the delayN recipient 60 s: the destination
	# queue of slow.test is still in qmgr's memory at the scrape, with
	# the 450 of tempfail@slow.test counted.
	start_sink slow
	slowport=$port
	deadport=$(free_port)
	mport=$(free_port)
	metrics_instance $mport
	{
		echo "ok.test smtp:[127.0.0.1]:$okport"
		echo "slow.test smtp:[127.0.0.1]:$slowport"
		echo "dead.test smtp:[127.0.0.1]:$deadport"
	} > etc/transport
	for i in 1 2 3; do
		inject -r u$i@ok.test >/dev/null || atf_fail "mkqfile"
	done
	dead=$(inject -r u@dead.test) || atf_fail "mkqfile"
	slow=$(inject -r tempfail@slow.test -r delay60000@slow.test) ||
	    atf_fail "mkqfile"
	inject -q hold -r held@ok.test >/dev/null || atf_fail "mkqfile"
	start_instance
	stat_is s.stats messages 3
	WAIT_MAX=100 wait_for lines_ge 3 ": removed" maillog ||
	    atf_fail "the ok.test mail was not delivered"
	WAIT_MAX=100 wait_for in_log "$dead: to=<u@dead.test>, .*status=deferred" ||
	    atf_fail "no deferral for dead.test"
	WAIT_MAX=100 wait_for in_log "$slow: to=<tempfail@slow.test>, .*status=deferred" ||
	    atf_fail "no deferral for tempfail@slow.test"
	WAIT_MAX=100 wait_for in_deferred "$dead" ||
	    atf_fail "$dead not in deferred"

	fetch $mport m.txt || atf_fail "GET /metrics failed"
	cat m.txt
	atf_check -s exit:0 -o ignore -e ignore promtool check metrics < m.txt
	# promtool prints lint problems (and exits 0 on some versions):
	# there must be none.
	promtool check metrics < m.txt > lint.out 2>&1
	[ ! -s lint.out ] || { cat lint.out; atf_fail "promtool lint output"; }
	parse m.txt \
	    'petrel_qmgr_up == 1' \
	    'petrel_qmgr_messages_received_total == 5' \
	    'petrel_qmgr_recipients_delivered_total == 3' \
	    'petrel_qmgr_recipients_deferred_total >= 2' \
	    'petrel_qmgr_recipients_bounced_total == 0' \
	    'petrel_queue_messages{queue="hold"} == 1' \
	    'petrel_queue_messages{queue="deferred"} == 1' \
	    'petrel_queue_messages{queue="active"} == 1' \
	    'petrel_queue_messages{queue="incoming"} == 0' \
	    'petrel_queue_messages{queue="maildrop"} == 0' \
	    'petrel_queue_messages{queue="corrupt"} == 0' \
	    'petrel_queue_scan_error == 0' \
	    'petrel_qmgr_active_messages == 1' \
	    'petrel_qmgr_dsc_entries >= 1' \
	    "petrel_dsc_failures{transport=\"smtp\",nexthop=\"[127.0.0.1]:$deadport\",extra=\"\"} >= 1" \
	    "petrel_dsc_retry_timestamp_seconds{transport=\"smtp\",nexthop=\"[127.0.0.1]:$deadport\",extra=\"\"} >= $(date +%s)" \
	    'petrel_transport_process_limit{transport="smtp"} == 7' \
	    'petrel_transport_busy{transport="smtp"} == 1' \
	    "petrel_destination_deferrals_total{transport=\"smtp\",nexthop=\"[127.0.0.1]:$slowport\"} >= 1" \
	    "petrel_destination_busy{transport=\"smtp\",nexthop=\"[127.0.0.1]:$slowport\"} == 1" \
	    "petrel_destination_deliveries_total{transport=\"smtp\",nexthop=\"[127.0.0.1]:$slowport\"} == 2" \
	    "petrel_destination_window{transport=\"smtp\",nexthop=\"[127.0.0.1]:$slowport\"} >= 1" \
	    "petrel_destination_dead{transport=\"smtp\",nexthop=\"[127.0.0.1]:$slowport\"} == 0" \
	    "!petrel_destination_window{transport=\"smtp\",nexthop=\"[127.0.0.1]:$okport\"}" ||
	    atf_fail "the metrics do not show what happened"

	# qmgr gone (taken out of master.cf): still 200, petrel_qmgr_up 0
	# and the queue counts.
	kill "$(cat slow.pid)"
	grep -v "^qmgr " etc/master.cf > etc/master.cf.new
	mv etc/master.cf.new etc/master.cf
	petrel reload >/dev/null 2>&1 || atf_fail "petrel reload"
	WAIT_MAX=100 wait_for qmgr_down $mport ||
	    { cat down.txt; atf_fail "petrel_qmgr_up stays 1 without qmgr"; }
	promtool check metrics < down.txt > lint.out 2>&1 ||
	    { cat lint.out; atf_fail "promtool without qmgr"; }
	parse down.txt 'petrel_qmgr_up == 0' \
	    'petrel_queue_messages{queue="hold"} == 1' \
	    '!petrel_qmgr_messages_received_total' ||
	    atf_fail "the metrics without qmgr"
	stop_instance
	assert_log_clean
	finish
}
scrape_cleanup() {
	stop_instance
	stop_all
}

atf_test_case http cleanup
http_head() {
	atf_set descr "garbage, wrong paths and methods get 400/404/405/505, a silent client is dropped, and the service answers afterwards"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
	atf_set timeout 120
}
http_body() {
	mport=$(free_port)
	metrics_instance $mport
	# The line conf/master.cf ships (commented out), on a free port.
	shipped=$(sed -n 's/^#\(127\.0\.0\.1:[0-9]* .* metrics\)$/\1/p' @SRCDIR@/conf/master.cf)
	[ -n "$shipped" ] || atf_fail "no commented metrics line in conf/master.cf"
	grep -v "/bin/metrics$" etc/master.cf > etc/master.cf.new
	echo "$shipped" | sed "s/^127\.0\.0\.1:[0-9]* /127.0.0.1:$mport /" >> etc/master.cf.new
	mv etc/master.cf.new etc/master.cf
	start_instance
	WAIT_MAX=100 wait_for fetch $mport first.txt || atf_fail "no first answer"
	expect() {
		raw $mport "$2" > raw.out
		head -n 1 raw.out | grep -q "^HTTP/1.1 $1 " ||
		    { cat raw.out; atf_fail "$2: expected $1"; }
		grep -qx "Connection: close" raw.out ||
		    { cat raw.out; atf_fail "$2: no Connection: close"; }
	}
	expect 400 "b'GARBAGE\r\n\r\n'"
	expect 400 "b'\x00\xff\xfe garbage \x01\r\n\r\n'"
	expect 400 "b'GET /metrics HTTP/1.1\r\n\r\n'"
	expect 400 "b'GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'"
	expect 400 "b'GET /metrics HTTP/1.0\r\nno colon here\r\n\r\n'"
	expect 400 "b'GET /metrics HTTP/1.0\r\nX-A: b\r\n folded\r\n\r\n'"
	expect 400 "b'GET /metrics HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello'"
	expect 400 "b'GET /' + b'a' * 5000 + b' HTTP/1.1\r\n\r\n'"
	expect 400 "b'GET /metrics HTTP/1.0\r\n' + b'X-A: b\r\n' * 100 + b'\r\n'"
	expect 400 "b'GET  /metrics HTTP/1.0\r\n\r\n'"
	expect 400 "b'GET /metrics HTTP/1.0 extra\r\n\r\n'"
	expect 404 "b'GET / HTTP/1.1\r\nHost: x\r\n\r\n'"
	expect 404 "b'GET /metricsx HTTP/1.0\r\n\r\n'"
	expect 405 "b'POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc'"
	grep -qx "Allow: GET, HEAD" raw.out || atf_fail "405 without Allow"
	expect 405 "b'DELETE /metrics HTTP/1.0\r\n\r\n'"
	expect 505 "b'GET /metrics HTTP/2.0\r\n\r\n'"
	# HEAD: the head of a 200, no body; a query string is ignored.
	expect 200 "b'HEAD /metrics HTTP/1.0\r\n\r\n'"
	grep -qx "BODY 0" raw.out || atf_fail "HEAD with a body"
	grep -q "^Content-Length: [1-9]" raw.out || atf_fail "HEAD without the length"
	expect 200 "b'GET /metrics?x=1 HTTP/1.1\r\nhost: x\r\n\r\n'"
	grep -qx "BODY 0" raw.out && atf_fail "GET without a body"
	in_log "127.0.0.1:[0-9]*: 400 Bad Request: malformed request line" ||
	    atf_fail "the refusal is not logged"
	# A client that sends half a request and goes silent is dropped
	# after 10 s without an answer.
	raw $mport "b'GET /metrics HTTP/1.0\r\n'" > silent.out
	grep -qx NONE silent.out || { cat silent.out; atf_fail "answered a silent client"; }
	in_log "no complete request within 10 s" || atf_fail "timeout not logged"
	fetch $mport last.txt || atf_fail "no answer after the garbage"
	grep -q "^petrel_qmgr_up 1$" last.txt || atf_fail "qmgr not up"
	if grep -E "fatal|panic" maillog; then
		atf_fail "a fatal error in the log"
	fi
	stop_instance
	assert_log_clean
	finish
}
http_cleanup() {
	stop_instance
	stop_all
}

atf_test_case address_in_use cleanup
address_in_use_head() {
	atf_set descr "a metrics address in use, or not of this host: petrel start fails naming master.cf:line; a reload leaves the service out"
	atf_set require.user unprivileged
	atf_set require.progs /usr/bin/python3
	atf_set timeout 90
}
address_in_use_body() {
	start_sink s		# holds 127.0.0.1:$port
	metrics_instance $port
	atf_check -s not-exit:0 -o ignore -e save:start.err $PETREL -c $PWD/etc start
	grep -q "master.cf:4: service 127.0.0.1:$port/inet: listen on inet:127.0.0.1:$port: Address already in use" start.err maillog ||
	    { cat start.err maillog; atf_fail "no error naming master.cf:4"; }
	wait_for no_process_left || atf_fail "processes left"
	# An address that is not of this host (TEST-NET-1).
	sed -i "s/^127.0.0.1:$port /192.0.2.1:$port /" etc/master.cf
	atf_check -s not-exit:0 -o ignore -e save:start2.err $PETREL -c $PWD/etc start
	grep -q "master.cf:4: service 192.0.2.1:$port/inet: listen on inet:192.0.2.1:$port: Cannot assign requested address" start2.err maillog ||
	    { cat start2.err maillog; atf_fail "no error for 192.0.2.1"; }
	wait_for no_process_left || atf_fail "processes left"
	# On a reload the service is left out, logged, and the rest runs.
	mport=$(free_port)
	sed -i "s/^192.0.2.1:$port /127.0.0.1:$mport /" etc/master.cf
	start_instance
	WAIT_MAX=100 wait_for fetch $mport ok.txt || atf_fail "no metrics"
	sed -i "s/^127.0.0.1:$mport /127.0.0.1:$port /" etc/master.cf
	petrel reload >/dev/null 2>&1 || atf_fail "petrel reload"
	WAIT_MAX=100 wait_for in_log "master.cf:4: service 127.0.0.1:$port/inet not started: listen on inet:127.0.0.1:$port: Address already in use" ||
	    { cat maillog; atf_fail "no error at reload"; }
	master_pid >/dev/null || atf_fail "master died"
	fetch $mport gone.txt && atf_fail "the old address still answers"
	stop_instance
	assert_log_clean
	finish
}
address_in_use_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case scrape
	atf_add_test_case http
	atf_add_test_case address_in_use
}
