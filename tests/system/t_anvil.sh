#! /usr/bin/env atf-sh
# anvil(8) and smtpd's client limits in a private instance: smtpd (port
# from test-service freeport on 127.0.0.1), cleanup (no qmgr) and anvil.
# Clients are Python sockets bound to a loopback source address
# (127.0.0.1 or 127.0.0.2), so two clients of different addresses can be
# told apart; anvil itself is asked over its socket in the attribute
# protocol (doc/protocol-anvil.md).  Limits are small and each test uses
# its own instance, so the counts start from zero.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr

# anvil_instance [main.cf line...]: smtpd on $port, cleanup, anvil; the
# limited clients are outside mynetworks (127.0.0.9 only), so the
# default smtpd_client_event_limit_exceptions ($mynetworks) spares none.
anvil_instance() {
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "local_recipient_maps =" "mynetworks = 127.0.0.9/32" \
	    "smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" "$@"
	mcf "$port inet n - n - - smtpd" "cleanup unix n - n - 0 cleanup" \
	    "anvil unix - - n - 1 anvil"
	start_instance
	write_tools
}

# The clients: smtpc.py speaks SMTP from a chosen source address,
# anvilq.py asks anvil.
write_tools() {
	cat > smtpc.py <<'EOF'
# smtpc.py SRC PORT [CMD...]: connects from SRC, prints the last line of
# the greeting and of the reply to each CMD, up to a 421 (CLOSED when
# the server has hung up).  A 220 to STARTTLS starts TLS (no
# verification); READ reads a reply without sending anything.  "HOLD NAME" writes the greeting to NAME.banner and keeps the
# session open until the file NAME.stop appears (at most 60 s).
import os, socket, ssl, sys, time
src, port, cmds = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
s = socket.socket()
s.settimeout(10)
s.bind((src, 0))
s.connect(("127.0.0.1", port))
f = s.makefile("rb")
def reply():
    while True:
        l = f.readline()
        if not l:
            return "CLOSED"
        l = l.decode().rstrip("\r\n")
        if len(l) < 4 or l[3] != "-":
            return l
banner = reply()
if cmds[:1] == ["HOLD"]:
    with open(cmds[1] + ".banner.tmp", "w") as o:
        o.write(banner + "\n")
    os.rename(cmds[1] + ".banner.tmp", cmds[1] + ".banner")
    for _ in range(600):
        if os.path.exists(cmds[1] + ".stop"):
            break
        time.sleep(0.1)
    sys.exit(0)
print(banner)
for c in cmds:
    if banner == "CLOSED" or banner.startswith("421 "):
        break
    try:
        if c != "READ":
            s.sendall((c + "\r\n").encode())
        banner = reply()
        if c.upper() == "STARTTLS" and banner.startswith("220 "):
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            s = ctx.wrap_socket(s)
            f = s.makefile("rb")
    except OSError:
        banner = "CLOSED"
    print(banner)
EOF
	cat > anvilq.py <<'EOF'
# anvilq.py SOCKET REQUEST IDENT [REQUEST IDENT...]: one connection, the
# requests in order; each reply is printed as name=value ... on a line.
# "RAW:text" sends text (\n escapes) as it is and prints what comes back
# (EOF when anvil closed the connection).
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
f = s.makefile("rb")
args = sys.argv[2:]
def item(t, n, v):
    if t == "S":
        return b"S %s %d:%s\n" % (n.encode(), len(v), v.encode())
    return b"I %s %d\n" % (n.encode(), v)
def read_reply():
    out = []
    while True:
        l = f.readline()
        if not l:
            return "EOF"
        l = l.decode().rstrip("\n")
        if l == ".":
            return " ".join(out)
        t, n, v = l.split(" ", 2)
        out.append("%s=%s" % (n, v))
while args:
    if args[0].startswith("RAW:"):
        s.sendall(args[0][4:].encode().decode("unicode_escape").encode("latin-1"))
        args = args[1:]
        try:
            print(read_reply())
        except OSError:
            print("EOF")
        continue
    req, ident, args = args[0], args[1], args[2:]
    s.sendall(item("S", "request", req) + item("S", "ident", ident) + b".\n")
    if req != "disconnect":
        print(read_reply())
EOF
	# Commands for atf_check (which runs programs, not functions).
	printf '#!/bin/sh\nexec python3 %s/smtpc.py "$@"\n' "$PWD" > smtpc
	printf '#!/bin/sh\nexec python3 %s/anvilq.py %s/q/private/anvil "$@"\n' \
	    "$PWD" "$PWD" > anvilq
	chmod +x smtpc anvilq
}


# The ident of a client address for our smtpd service.
ident() {
	echo "$(service):$1"
}

# The master.cf service name smtpd runs as (the first column).
service() {
	echo "$port"
}

# hold NAME SRC: an SMTP session from SRC held open (greeting in
# NAME.banner) until release NAME.
hold() {
	spawn "$1" python3 smtpc.py "$2" "$port" HOLD "$1"
	retry test -s "$1.banner" || atf_fail "session $1 got no greeting"
}
release() {
	touch "$1.stop"
	wait_gone "$(cat "$1.pid")" "session $1"
	rm -f "$1.pid"
}

# pids_of PROGRAM: the instance's processes running PROGRAM.
pids_of() {
	for p in $(instance_pids); do
		case "$(tr '\0' '\n' < /proc/$p/cmdline 2>/dev/null | head -n 1)" in
		*/$1) echo $p ;;
		esac
	done
}

atf_test_case connection_rate cleanup
connection_rate_head() {
	atf_set descr "smtpd_client_connection_rate_limit: the third connection" \
	    "from 127.0.0.1 in a time unit gets 421 and a warning; 127.0.0.2" \
	    "is not affected; anvil counts per service and address"
	atf_set require.progs python3
}
connection_rate_body() {
	anvil_instance "smtpd_client_connection_rate_limit = 2"
	for i in 1 2; do
		atf_check -o inline:"220 mx.example.test ESMTP Petrel\n221 2.0.0 Bye\n" \
		    ./smtpc 127.0.0.1 $port QUIT
	done
	atf_check -o inline:"421 4.7.0 mx.example.test Error: too many connections from 127.0.0.1\n" \
	    ./smtpc 127.0.0.1 $port QUIT
	grep_wait maillog "warning: Connection rate limit exceeded: 3 from unknown\[127\.0\.0\.1\] for service $(service)\$"
	# Another address has its own count.
	atf_check -o match:"^220 " ./smtpc 127.0.0.2 $port QUIT
	# What anvil holds: three connections from .1, none open now.
	retry sh -c "./anvilq lookup $(ident 127.0.0.1) | grep -q '^status=0 count=0 rate=3 '" ||
	    atf_fail "anvil: $(./anvilq lookup $(ident 127.0.0.1))"
	atf_check -o inline:"status=0 count=0 rate=1 message=0 recipient=0 newtls=0 auth=0\n" \
	    ./anvilq lookup $(ident 127.0.0.2)
	# No message or recipient events were sent: their limits are off.
	assert_log_clean
}
connection_rate_cleanup() {
	stop_instance
}

atf_test_case exceptions cleanup
exceptions_head() {
	atf_set descr "clients in smtpd_client_event_limit_exceptions" \
	    "(\$mynetworks by default) are neither limited nor counted"
	atf_set require.progs python3
}
exceptions_body() {
	anvil_instance "smtpd_client_connection_rate_limit = 1" \
	    "smtpd_client_message_rate_limit = 1" "mynetworks = 127.0.0.2/32"
	for i in 1 2 3; do
		atf_check -o inline:"220 mx.example.test ESMTP Petrel\n250 2.1.0 Ok\n250 2.0.0 Ok\n250 2.1.0 Ok\n" \
		    ./smtpc 127.0.0.2 $port "MAIL FROM:<a@x.test>" RSET "MAIL FROM:<b@x.test>"
	done
	atf_check -o inline:"status=0 count=0 rate=0 message=0 recipient=0 newtls=0 auth=0\n" \
	    ./anvilq lookup $(ident 127.0.0.2)
	# The one outside is limited.
	atf_check -o match:"^220 " ./smtpc 127.0.0.1 $port QUIT
	atf_check -o match:"^421 4.7.0 " ./smtpc 127.0.0.1 $port QUIT
	assert_log_clean
}
exceptions_cleanup() {
	stop_instance
}

atf_test_case message_recipient cleanup
message_recipient_head() {
	atf_set descr "smtpd_client_message_rate_limit answers MAIL with 450" \
	    "and smtpd_client_recipient_rate_limit answers RCPT with 450," \
	    "counted across sessions; another client is not affected"
	atf_set require.progs python3
}
message_recipient_body() {
	anvil_instance "smtpd_client_message_rate_limit = 2" \
	    "smtpd_client_recipient_rate_limit = 3"
	cat > want1 <<EOF
220 mx.example.test ESMTP Petrel
250 mx.example.test
250 2.1.0 Ok
250 2.1.5 Ok
250 2.1.5 Ok
250 2.0.0 Ok
EOF
	atf_check -o file:want1 ./smtpc 127.0.0.1 $port "HELO c.test" \
	    "MAIL FROM:<a@c.test>" "RCPT TO:<a@mx.example.test>" \
	    "RCPT TO:<b@mx.example.test>" RSET
	# A new session: the counts go on.
	cat > want2 <<EOF
220 mx.example.test ESMTP Petrel
250 mx.example.test
250 2.1.0 Ok
250 2.1.5 Ok
450 4.7.1 Error: too many recipients from 127.0.0.1
250 2.0.0 Ok
450 4.7.1 Error: too much mail from 127.0.0.1
221 2.0.0 Bye
EOF
	atf_check -o file:want2 ./smtpc 127.0.0.1 $port "HELO c.test" \
	    "MAIL FROM:<a@c.test>" "RCPT TO:<c@mx.example.test>" \
	    "RCPT TO:<d@mx.example.test>" RSET "MAIL FROM:<b@c.test>" QUIT
	grep_wait maillog "warning: Recipient address rate limit exceeded: 4 from unknown\[127\.0\.0\.1\] for service $(service)\$"
	grep_wait maillog "warning: Message delivery request rate limit exceeded: 3 from unknown\[127\.0\.0\.1\] for service $(service)\$"
	# 127.0.0.2 has its own counts.
	cat > want3 <<EOF
220 mx.example.test ESMTP Petrel
250 mx.example.test
250 2.1.0 Ok
250 2.1.5 Ok
221 2.0.0 Bye
EOF
	atf_check -o file:want3 ./smtpc 127.0.0.2 $port "HELO c.test" \
	    "MAIL FROM:<a@c.test>" "RCPT TO:<a@mx.example.test>" QUIT
	atf_check -o inline:"status=0 count=0 rate=2 message=3 recipient=4 newtls=0 auth=0\n" \
	    ./anvilq lookup $(ident 127.0.0.1)
	assert_log_clean
}
message_recipient_cleanup() {
	stop_instance
}

atf_test_case connection_count cleanup
connection_count_head() {
	atf_set descr "smtpd_client_connection_count_limit with sessions held" \
	    "open: the third gets 421 while two are open, 127.0.0.2 is" \
	    "welcome, and when one ends a new one is welcome again"
	atf_set require.progs python3
}
connection_count_body() {
	anvil_instance "smtpd_client_connection_count_limit = 2"
	hold s1 127.0.0.1
	hold s2 127.0.0.1
	atf_check -o match:"^220 " cat s1.banner s2.banner
	atf_check -o inline:"421 4.7.0 mx.example.test Error: too many connections from 127.0.0.1\n" \
	    ./smtpc 127.0.0.1 $port QUIT
	grep_wait maillog "warning: Connection concurrency limit exceeded: 3 from unknown\[127\.0\.0\.1\] for service $(service)\$"
	atf_check -o match:"^220 " ./smtpc 127.0.0.2 $port QUIT
	release s1
	retry sh -c "./smtpc 127.0.0.1 $port QUIT | grep -q '^220 '" ||
	    atf_fail "no 220 after a session ended"
	release s2
	assert_log_clean
}
connection_count_cleanup() {
	touch s1.stop s2.stop
	stop_all
	stop_instance
}

atf_test_case smtpd_killed cleanup
smtpd_killed_head() {
	atf_set descr "counts live in anvil: an smtpd killed with -9 gives back" \
	    "its open connection, and the rate it counted survives it"
	atf_set require.progs python3
}
smtpd_killed_body() {
	anvil_instance "smtpd_client_connection_rate_limit = 2"
	hold s1 127.0.0.1
	atf_check -o match:"^status=0 count=1 rate=1 " ./anvilq lookup $(ident 127.0.0.1)
	for p in $(pids_of smtpd); do kill -9 $p; done
	retry sh -c "./anvilq lookup $(ident 127.0.0.1) | grep -q '^status=0 count=0 rate=1 '" ||
	    atf_fail "the killed session is still counted: $(./anvilq lookup $(ident 127.0.0.1))"
	release s1
	# A new smtpd process: the second connection of the unit is let in,
	# the third is over the limit.
	atf_check -o match:"^220 " ./smtpc 127.0.0.1 $port QUIT
	atf_check -o match:"^421 4.7.0 " ./smtpc 127.0.0.1 $port QUIT
	assert_log_clean
}
smtpd_killed_cleanup() {
	touch s1.stop
	stop_all
	stop_instance
}

atf_test_case new_tls cleanup
new_tls_head() {
	atf_set descr "smtpd_client_new_tls_session_rate_limit: a handshake over" \
	    "the limit gets 421 over TLS, a STARTTLS after that 454; another" \
	    "client is not affected"
	atf_set require.progs "python3 openssl"
}
new_tls_body() {
	make_cert
	anvil_instance "smtpd_client_new_tls_session_rate_limit = 1" \
	    "smtpd_tls_security_level = may" "smtpd_tls_cert_file = $PWD/cert.pem" \
	    "smtpd_tls_key_file = $PWD/key.pem"
	cat > want1 <<EOF
220 mx.example.test ESMTP Petrel
220 2.0.0 Ready to start TLS
250 mx.example.test
221 2.0.0 Bye
EOF
	atf_check -o file:want1 ./smtpc 127.0.0.1 $port STARTTLS "HELO c.test" QUIT
	cat > want2 <<EOF
220 mx.example.test ESMTP Petrel
220 2.0.0 Ready to start TLS
421 4.7.0 mx.example.test Error: too many new TLS sessions from unknown[127.0.0.1]
EOF
	atf_check -o file:want2 ./smtpc 127.0.0.1 $port STARTTLS READ
	grep_wait maillog "warning: New TLS session rate limit exceeded: 2 from unknown\[127\.0\.0\.1\] for service $(service)\$"
	cat > want3 <<EOF
220 mx.example.test ESMTP Petrel
454 4.7.0 Error: too many new TLS sessions from unknown[127.0.0.1]
221 2.0.0 Bye
EOF
	atf_check -o file:want3 ./smtpc 127.0.0.1 $port STARTTLS QUIT
	grep_wait maillog "warning: Refusing STARTTLS request from unknown\[127\.0\.0\.1\] for service $(service)\$"
	atf_check -o file:want1 ./smtpc 127.0.0.2 $port STARTTLS "HELO c.test" QUIT
	assert_log_clean
}
new_tls_cleanup() {
	stop_instance
}

atf_test_case anvil_down cleanup
anvil_down_head() {
	atf_set descr "without anvil smtpd accepts mail with no limit and warns" \
	    "once per process, not per connection; anvil killed -9 is" \
	    "started again by master and smtpd goes on; a hung anvil" \
	    "costs a session 2 s, not its mail"
	atf_set require.progs python3
}
anvil_down_body() {
	anvil_instance "smtpd_client_connection_rate_limit = 1"
	atf_check -o match:"^220 " ./smtpc 127.0.0.1 $port QUIT
	# Killed: master starts another on the next request; its counts
	# start from zero, and nobody is refused for anvil's sake.
	apid=$(pids_of anvil)
	[ -n "$apid" ] || atf_fail "no anvil process"
	kill -9 $apid
	wait_for pid_gone $apid || atf_fail "anvil did not die"
	atf_check -o match:"^220 " ./smtpc 127.0.0.1 $port QUIT
	atf_check -o match:"^421 4.7.0 " ./smtpc 127.0.0.1 $port QUIT

	# Hung: the session waits 2 s for it, then goes on without limits
	# (this client is over its rate).
	apid=$(pids_of anvil)
	kill -STOP $apid
	atf_check -o match:"^220 " ./smtpc 127.0.0.1 $port QUIT
	kill -CONT $apid
	grep_wait maillog "smtpd\[[0-9]+\]: warning: anvil private/anvil: timed out waiting for a reply; client connection and rate limits are not enforced for 10 s"

	# No anvil service at all (one smtpd process, so that the
	# warning's rate limit shows): every connection is accepted.
	stop_instance
	mcf "$port inet n - n - 1 smtpd" "cleanup unix n - n - 0 cleanup"
	mv maillog maillog.1
	start_instance
	for i in 1 2 3 4; do
		atf_check -o inline:"220 mx.example.test ESMTP Petrel\n250 2.1.0 Ok\n221 2.0.0 Bye\n" \
		    ./smtpc 127.0.0.1 $port "MAIL FROM:<a@c.test>" QUIT
	done
	grep_wait maillog "warning: anvil private/anvil: connect: .*; client connection and rate limits are not enforced for 10 s"
	atf_check -o inline:"1\n" grep -c "warning: anvil private/anvil" maillog
	cat maillog.1 >> maillog
	assert_log_clean
}
anvil_down_cleanup() {
	stop_instance
}

atf_test_case protocol cleanup
protocol_head() {
	atf_set descr "anvil's protocol: the auth and newtls counters and" \
	    "newtls_report; a stray disconnect changes nothing; malformed" \
	    "requests are logged and close that connection, anvil lives on"
	atf_set require.progs python3
}
protocol_body() {
	anvil_instance
	atf_check -o match:"^status=0 count=0 rate=0 " ./anvilq lookup smtp:192.0.2.9
	apid=$(pids_of anvil)
	[ -n "$apid" ] || atf_fail "no anvil process"
	cat > want <<EOF
status=0 rate=1
status=0 rate=2
status=0 rate=3
status=0 rate=0
status=0 rate=1
status=0 rate=1
status=0 count=1 rate=1 message=0 recipient=0 newtls=1 auth=3
EOF
	atf_check -o file:want ./anvilq auth smtp:192.0.2.9 auth smtp:192.0.2.9 \
	    auth smtp:192.0.2.9 newtls_report smtp:192.0.2.9 \
	    newtls smtp:192.0.2.9 newtls_report smtp:192.0.2.9 \
	    disconnect smtp:192.0.2.1 lookup smtp:192.0.2.9
	# That connection is gone: what it held (the ident it made known
	# by its first event) is given back; the rates stay.
	retry sh -c "./anvilq lookup smtp:192.0.2.9 | grep -q '^status=0 count=0 rate=1 message=0 recipient=0 newtls=1 auth=3$'" ||
	    atf_fail "after the client left: $(./anvilq lookup smtp:192.0.2.9)"
	# Malformed: bytes that are not the protocol, an unknown request,
	# a bad ident, an attribute too many.
	atf_check -o inline:"EOF\n" ./anvilq "RAW:GET / HTTP/1.0\r\n\r\n"
	atf_check -o inline:"EOF\n" ./anvilq "RAW:S request 4:kill\nS ident 6:smtp:x\n.\n"
	atf_check -o inline:"EOF\n" ./anvilq "RAW:S request 7:connect\nS ident 8:smtp:a b\n.\n"
	atf_check -o inline:"EOF\n" ./anvilq "RAW:S request 6:lookup\nS ident 6:smtp:x\nI extra 1\n.\n"
	grep_wait maillog "anvil\[[0-9]+\]: warning: client [0-9]+: malformed request: unexpected byte 0x47"
	grep_wait maillog "anvil\[[0-9]+\]: warning: client [0-9]+: malformed request: unknown request \"kill\""
	grep_wait maillog "anvil\[[0-9]+\]: warning: client [0-9]+: malformed request: connect request: bad ident"
	grep_wait maillog "anvil\[[0-9]+\]: warning: client [0-9]+: malformed request: unknown attribute"
	# Still there, with its counts.
	atf_check -o match:"auth=3$" ./anvilq lookup smtp:192.0.2.9
	[ "$(pids_of anvil)" = "$apid" ] || atf_fail "anvil did not live on"
	assert_log_clean
}
protocol_cleanup() {
	stop_instance
}

atf_test_case idle_exit cleanup
idle_exit_head() {
	atf_set descr "anvil, never recycled by max_use, exits after max_idle" \
	    "with no client and nothing counted, not before; master starts" \
	    "a new one for the next request"
	atf_set require.progs python3
}
idle_exit_body() {
	anvil_instance "max_idle = 1s" "anvil_rate_time_unit = 3s"
	# Something counted: kept past max_idle, until it expires.
	atf_check -o match:"^status=0 rate=1$" ./anvilq auth smtp:192.0.2.9
	apid=$(pids_of anvil)
	[ -n "$apid" ] || atf_fail "no anvil process"
	sleep 2
	kill -0 "$apid" 2>/dev/null || atf_fail "anvil left with a count kept"
	WAIT_MAX=100 wait_for pid_gone "$apid" ||
	    atf_fail "anvil did not exit after max_idle"
	atf_check -o match:"^status=0 count=0 rate=0 " ./anvilq lookup smtp:192.0.2.9
	[ -n "$(pids_of anvil)" ] && [ "$(pids_of anvil)" != "$apid" ] ||
	    atf_fail "no new anvil process"
	assert_log_clean
}
idle_exit_cleanup() {
	stop_instance
}

atf_test_case statistics cleanup
statistics_head() {
	atf_set descr "every anvil_status_update_time anvil logs the peaks" \
	    "as Postfix does; it forgets a client idle for anvil_rate_time_unit," \
	    "and the idle one unused longest beyond anvil_client_limit"
	atf_set require.progs python3
}
statistics_body() {
	anvil_instance "smtpd_client_connection_rate_limit = 5" \
	    "anvil_status_update_time = 1s" "anvil_rate_time_unit = 2s" \
	    "anvil_client_limit = 2"
	for i in 1 2 3; do
		atf_check -o match:"^220 " ./smtpc 127.0.0.1 $port QUIT
	done
	WAIT_MAX=50 grep_wait maillog "anvil\[[0-9]+\]: statistics: max connection rate 3/2s for \($(ident 127.0.0.1)\) at [A-Z][a-z]{2} [ 0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\$"
	grep_wait maillog "anvil\[[0-9]+\]: statistics: max connection count 1 for \($(ident 127.0.0.1)\) at "
	grep_wait maillog "anvil\[[0-9]+\]: statistics: max cache size 1 at "
	# Idle for the time unit: forgotten (a lookup answers zeros).
	WAIT_MAX=50 wait_for sh -c "./anvilq lookup $(ident 127.0.0.1) | grep -q '^status=0 count=0 rate=0 '" ||
	    atf_fail "not forgotten: $(./anvilq lookup $(ident 127.0.0.1))"
	# Over the rate again after the unit passed: a new unit began.
	atf_check -o match:"^220 " ./smtpc 127.0.0.1 $port QUIT
	# The cap (2 here): a third client makes the idle one unused
	# longest go, once said; the statistics count it (two, when our
	# smtpd client above had not expired yet).
	cat > want <<EOF
status=0 count=1 rate=1
status=0 count=1 rate=1
status=0 count=1 rate=1
status=0 count=0 rate=0 message=0 recipient=0 newtls=0 auth=0
status=0 count=0 rate=1 message=0 recipient=0 newtls=0 auth=0
EOF
	atf_check -o file:want ./anvilq connect x:192.0.2.1 disconnect x:192.0.2.1 \
	    connect x:192.0.2.2 disconnect x:192.0.2.2 \
	    connect x:192.0.2.3 disconnect x:192.0.2.3 \
	    lookup x:192.0.2.1 lookup x:192.0.2.2
	grep_wait maillog "anvil\[[0-9]+\]: warning: more than 2 clients tracked \(anvil_client_limit\): forgetting the idle ones unused longest"
	grep_wait maillog "anvil\[[0-9]+\]: statistics: [12] idle clients forgotten early \(anvil_client_limit\)"
	assert_log_clean
}
statistics_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case connection_rate
	atf_add_test_case exceptions
	atf_add_test_case message_recipient
	atf_add_test_case connection_count
	atf_add_test_case smtpd_killed
	atf_add_test_case new_tls
	atf_add_test_case anvil_down
	atf_add_test_case protocol
	atf_add_test_case statistics
	atf_add_test_case idle_exit
}
