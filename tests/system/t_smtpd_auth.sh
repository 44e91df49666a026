#! /usr/bin/env atf-sh
# SMTP AUTH in smtpd (RFC 4954) against a real, private Dovecot started
# in the test's directory (dovecot.subr): swaks and Python's smtplib log
# in with PLAIN and LOGIN over STARTTLS (a port playing 587) and over
# implicit TLS (playing 465); relay control by login with mynetworks not
# holding 127.0.0.1; sender login mismatch; a dead or silent auth server;
# hostile exchanges.  The instance runs smtpd and cleanup only: accepted
# mail stays in incoming/.  The _jail variant runs smtpd chrooted, as
# shipped: the socket is then reached inside the queue directory.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/dovecot.subr

# auth_instance [main.cf line...]: Dovecot's socket at q/private/auth
# (the default smtpd_sasl_path, relative to the queue directory); smtpd
# on $port with STARTTLS and AUTH; cleanup.  127.0.0.1 is not in
# mynetworks: only a login lets it relay.  $smtpd_args: more arguments
# for smtpd (-v); $with_anvil set: anvil runs too (client rate limits).
auth_instance() {
	make_cert
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test" \
	    "local_recipient_maps = inline:{ alice=x, bob=x }" \
	    "mynetworks = 192.0.2.0/24" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "smtpd_tls_security_level = may" \
	    "smtpd_tls_cert_file = $PWD/cert.pem" \
	    "smtpd_tls_key_file = $PWD/key.pem" \
	    "smtpd_sasl_auth_enable = yes" \
	    "smtpd_relay_restrictions = permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination" \
	    "$@"
	if [ -n "${with_anvil:-}" ]; then
		mcf "$port inet n - n - - smtpd ${smtpd_args:-}" \
		    "cleanup unix n - n - 0 cleanup" "anvil unix - - n - 1 anvil"
	else
		mcf "$port inet n - n - - smtpd ${smtpd_args:-}" \
		    "cleanup unix n - n - 0 cleanup"
	fi
	# petrel check makes the queue tree, where Dovecot puts its socket.
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc check
	dovecot_start $PWD/q/private/auth
	start_instance
}

auth_cleanup() {
	stop_instance
	dovecot_stop
	stop_all
}

# sess.py PORT MODE: one SMTP session (MODE plain, starttls: EHLO and
# STARTTLS and EHLO again first, tls: implicit TLS), then a line
# "--- ready"; sends each line of standard input and prints each
# complete reply (CR removed); "<" only reads a reply.  Prints CLOSED
# when the server hangs up.
write_sess() {
	cat > sess.py <<'EOF'
import socket, ssl, sys
port, mode = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = socket.create_connection(("127.0.0.1", port), timeout=10)
if mode == "tls":
    s = ctx.wrap_socket(s)
f = s.makefile("rb")
def reply():
    out = []
    while True:
        l = f.readline()
        if not l:
            print("CLOSED"); sys.stdout.flush(); sys.exit(0)
        l = l.decode("latin-1").rstrip("\r\n")
        out.append(l)
        if len(l) < 4 or l[3] != "-":
            break
    print("\n".join(out)); sys.stdout.flush()
reply()
if mode == "starttls":
    s.sendall(b"EHLO client.test\r\n"); reply()
    s.sendall(b"STARTTLS\r\n"); reply()
    s = ctx.wrap_socket(s)
    f = s.makefile("rb")
    s.sendall(b"EHLO client.test\r\n"); reply()
print("--- ready"); sys.stdout.flush()
for line in sys.stdin:
    line = line.rstrip("\n")
    if line != "<":
        s.sendall(line.encode("latin-1") + b"\r\n")
    reply()
EOF
}

# b64 TEXT: base64 of TEXT with \0 for NUL (printf's escapes).
b64() {
	printf "$1" | base64 -w 0
}

atf_test_case starttls cleanup
starttls_head() {
	atf_set descr "over STARTTLS (587): AUTH is offered only after" \
	    "STARTTLS; swaks and smtplib log in with PLAIN and LOGIN; the" \
	    "logged-in client relays from outside mynetworks, the anonymous" \
	    "one may not; client= logs sasl_method and sasl_username"
	atf_set require.progs "swaks openssl python3"
	atf_set timeout 60
}
starttls_body() {
	# -v: every command is logged, but no password, not even in base64
	smtpd_args=-v
	auth_instance
	write_sess
	# Before STARTTLS: no AUTH in EHLO, and AUTH is refused (538).
	printf 'EHLO client.test\nAUTH PLAIN %s\nQUIT\n' "$(b64 '\0alice\0wonderland')" |
	    python3 sess.py $port plain > plain.out 2>&1
	atf_check -o not-match:"^250-AUTH" -o not-match:"^250 AUTH" \
	    -o match:"^538 5.7.11 Encryption required for requested authentication mechanism$" \
	    cat plain.out
	# After STARTTLS: AUTH PLAIN LOGIN; Dovecot's ANONYMOUS is not
	# offered (noanonymous) and refused.
	printf 'AUTH ANONYMOUS\nQUIT\n' | python3 sess.py $port starttls > tls.out 2>&1
	atf_check -o match:"^250-AUTH PLAIN LOGIN$" -o not-match:"AUTH=" \
	    -o match:"^504 5.5.4 Error: unsupported authentication mechanism$" \
	    sed -n '/^220 2.0.0 Ready to start TLS/,$p' tls.out

	# swaks, PLAIN and LOGIN, relaying to another domain.
	for m in PLAIN LOGIN; do
		atf_check -s exit:0 -o save:swaks-$m.out -e ignore swaks \
		    --server 127.0.0.1:$port -tls --helo client.test \
		    --auth $m --auth-user alice --auth-password wonderland \
		    --from alice@example.org --to someone@elsewhere.example
		atf_check -o match:"235 2.7.0 Authentication successful" \
		    -o match:"250 2.0.0 Ok: queued as" cat swaks-$m.out
	done
	grep_wait maillog "client=unknown\[127.0.0.1\], sasl_method=PLAIN, sasl_username=alice$"
	grep_wait maillog "client=unknown\[127.0.0.1\], sasl_method=LOGIN, sasl_username=alice$"
	# The protocol says it: ESMTPSA.
	id=$(sed -n 's/.*250 2\.0\.0 Ok: queued as \([0-9A-Z]*\).*/\1/p' swaks-PLAIN.out | head -n 1)
	atf_check -o match:"with ESMTPSA id $id" -o not-match:"Authenticated sender" \
	    sh -c "$BIN/postcat -c $PWD/etc -q $id | tr -d '\r'"

	# Python's smtplib, both mechanisms, bob.
	cat > lib.py <<'EOF'
import smtplib, ssl, sys
port, mech = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = smtplib.SMTP("127.0.0.1", port, local_hostname="client.test", timeout=10)
s.starttls(context=ctx)
s.ehlo("client.test")
s.user, s.password = "bob", "builder"
code, text = s.auth(mech, getattr(s, "auth_" + mech.lower()), initial_response_ok=(mech == "PLAIN"))
print(code, text.decode())
s.sendmail("bob@example.org", ["x@elsewhere.example"], "Subject: t\r\n\r\nhello\r\n")
s.quit()
print("sent")
EOF
	for m in PLAIN LOGIN; do
		atf_check -s exit:0 -o match:"^235 2.7.0 Authentication successful$" \
		    -o match:"^sent$" python3 lib.py $port $m
		grep_wait maillog "sasl_method=$m, sasl_username=bob$"
	done

	# An AUTH line may be longer than line_length_limit (2048), up to
	# smtpd_sasl_response_limit (RFC 4954 section 4); other commands
	# may not.
	big=$(head -c 2500 /dev/zero | tr '\0' x)
	printf 'AUTH PLAIN %s\nNOOP %s\nQUIT\n' "$(b64 "\\0alice\\0$big")" "$big" |
	    python3 sess.py $port starttls > long.out 2>&1
	atf_check -o match:"^535 5.7.8 Error: authentication failed$" \
	    -o match:"^500 5.5.2 Error: line too long$" -o match:"^221 " cat long.out

	# Without a login, relaying from 127.0.0.1 is refused.
	atf_check -s not-exit:0 -o save:anon.out -e ignore swaks \
	    --server 127.0.0.1:$port -tls --helo client.test \
	    --from alice@example.org --to someone@elsewhere.example
	atf_check -o match:"554 5.7.1 <someone@elsewhere.example>: Relay access denied" cat anon.out
	# Mail for us needs no login.
	atf_check -s exit:0 -o ignore -e ignore swaks --server 127.0.0.1:$port \
	    --helo client.test --from a@example.org --to alice@mx.example.test
	grep_wait maillog "< unknown\[127.0.0.1\]: AUTH PLAIN \\(initial response not logged\\)$"
	for secret in wonderland builder "$(b64 '\0alice\0wonderland')" \
	    "$(b64 '\0bob\0builder')" "$(b64 wonderland)" "$(b64 builder)"; do
		grep -q -- "$secret" maillog && atf_fail "a password in the log: $secret"
	done
	assert_log_clean
}
starttls_cleanup() { auth_cleanup; }

atf_test_case wrappermode cleanup
wrappermode_head() {
	atf_set descr "implicit TLS (465, smtpd_tls_wrappermode): TLS from the" \
	    "first byte, AUTH offered at once; swaks and smtplib (SMTP_SSL)" \
	    "log in with PLAIN and LOGIN; a plain-text client gets nothing"
	atf_set require.progs "swaks openssl python3"
	atf_set timeout 60
}
wrappermode_body() {
	auth_instance "smtpd_tls_wrappermode = yes" "smtpd_tls_security_level = encrypt"
	write_sess
	printf 'EHLO client.test\nQUIT\n' | python3 sess.py $port tls > ehlo.out 2>&1
	atf_check -o match:"^220 mx.example.test" -o match:"^250-AUTH PLAIN LOGIN$" \
	    -o not-match:"STARTTLS" cat ehlo.out
	for m in PLAIN LOGIN; do
		atf_check -s exit:0 -o save:swaks-$m.out -e ignore swaks \
		    --server 127.0.0.1:$port --tls-on-connect --helo client.test \
		    --auth $m --auth-user bob --auth-password builder \
		    --from bob@example.org --to someone@elsewhere.example
		atf_check -o match:"235 2.7.0 Authentication successful" \
		    -o match:"250 2.0.0 Ok: queued as" cat swaks-$m.out
		grep_wait maillog "sasl_method=$m, sasl_username=bob$"
	done
	cat > lib.py <<'EOF'
import smtplib, ssl, sys
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
s = smtplib.SMTP_SSL("127.0.0.1", int(sys.argv[1]), local_hostname="client.test", timeout=10, context=ctx)
s.login("alice", "wonderland")
s.sendmail("alice@example.org", ["x@elsewhere.example"], "Subject: t\r\n\r\nhello\r\n")
s.quit()
print("sent")
EOF
	atf_check -s exit:0 -o match:"^sent$" python3 lib.py $port
	grep_wait maillog "sasl_username=alice$"
	grep_wait maillog "Anonymous TLS connection established from unknown\[127.0.0.1\]"
	# Plain text on the TLS port: a failed handshake, logged; smtpd
	# lives on.
	printf 'EHLO client.test\r\n' | timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port; cat >&3; timeout 5 cat <&3" > plain.out 2>&1
	atf_check -o not-match:"^220" tr -d '\r' < plain.out
	grep_wait maillog "TLS handshake failed for unknown\[127.0.0.1\]"
	atf_check -s exit:0 -o match:"^sent$" python3 lib.py $port
	assert_log_clean
}
wrappermode_cleanup() { auth_cleanup; }

atf_test_case failures cleanup
failures_head() {
	atf_set descr "a wrong password gets 535 5.7.8 and a warning naming the" \
	    "client, the mechanism and the user, never the password; hostile" \
	    "exchanges: malformed base64 (501 5.5.2), * (501 5.7.0), AUTH in" \
	    "a transaction and twice (503), an over-long response (500 5.5.6)," \
	    "an unknown mechanism (504); the session goes on after each"
	atf_set require.progs "openssl python3"
	atf_set timeout 60
}
failures_body() {
	auth_instance "smtpd_sasl_response_limit = 100"
	write_sess
	long=$(head -c 300 /dev/zero | tr '\0' 'A')
	cat > hostile.in <<EOF
AUTH PLAIN $(b64 '\0alice\0wrong-secret')
AUTH LOGIN
$(b64 'alice')
$(b64 'bad-secret-2')
AUTH PLAIN not*base64!
AUTH PLAIN
QUJD=RA==
AUTH LOGIN
*
AUTH LOGIN
$long
AUTH CRAM-MD5
AUTH X-UNKNOWN
AUTH
AUTH PLAIN =
*
MAIL FROM:<a@example.org>
AUTH PLAIN $(b64 '\0alice\0wonderland')
RSET
AUTH PLAIN $(b64 '\0alice\0wonderland')
AUTH PLAIN $(b64 '\0alice\0wonderland')
MAIL FROM:<alice@example.org>
RCPT TO:<x@elsewhere.example>
QUIT
EOF
	python3 sess.py $port starttls < hostile.in > hostile.out 2>&1
	cat > expected <<'EOF'
535 5.7.8 Error: authentication failed
334 VXNlcm5hbWU6
334 UGFzc3dvcmQ6
535 5.7.8 Error: authentication failed
501 5.5.2 Error: invalid base64 data in the initial response
334 
501 5.5.2 Error: invalid base64 data in the response
334 VXNlcm5hbWU6
501 5.7.0 Authentication aborted
334 VXNlcm5hbWU6
500 5.5.6 Authentication exchange line is too long
504 5.5.4 Error: unsupported authentication mechanism
504 5.5.4 Error: unsupported authentication mechanism
501 5.5.4 Syntax: AUTH mechanism
334 
501 5.7.0 Authentication aborted
250 2.1.0 Ok
503 5.5.1 Error: MAIL transaction in progress
250 2.0.0 Ok
235 2.7.0 Authentication successful
503 5.5.1 Error: already authenticated
250 2.1.0 Ok
250 2.1.5 Ok
221 2.0.0 Bye
EOF
	sed -n '/^--- ready$/,$p' hostile.out | sed 1d > got
	atf_check -o file:expected cat got
	grep_wait maillog "warning: unknown\[127.0.0.1\]: SASL PLAIN authentication failed: .*, sasl_username=alice$"
	grep_wait maillog "warning: unknown\[127.0.0.1\]: SASL LOGIN authentication failed: .*, sasl_username=alice$"
	grep_wait maillog "warning: unknown\[127.0.0.1\]: SASL LOGIN authentication aborted$"
	grep_wait maillog "SASL LOGIN authentication failed: response exceeds length limit of 100 bytes"
	grep_wait maillog "disconnect from unknown\[127.0.0.1\] ehlo=2 starttls=1 auth=1/13"
	if grep -e "wrong-secret" -e "bad-secret" -e "$(b64 '\0alice\0wrong-secret')" \
	    -e "$(b64 'bad-secret-2')" maillog dovecot/dovecot.log; then
		atf_fail "a password in a log"
	fi
	# noplaintext: PLAIN and LOGIN are not offered, so AUTH is not.
	echo "smtpd_sasl_tls_security_options = noanonymous, noplaintext" >> etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for sh -c "printf 'AUTH PLAIN =\nQUIT\n' | python3 sess.py $port starttls | grep -q '^504 5.5.4'" ||
	    atf_fail "PLAIN accepted with noplaintext"
	echo QUIT | python3 sess.py $port starttls > ehlo.out 2>&1
	atf_check -o match:"^--- ready" -o not-match:"AUTH" cat ehlo.out
	# No options at all: Dovecot's ANONYMOUS is offered and works.
	echo "smtpd_sasl_tls_security_options =" >> etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for sh -c "echo QUIT | python3 sess.py $port starttls | grep -q '^250-AUTH PLAIN LOGIN ANONYMOUS$'" ||
	    atf_fail "ANONYMOUS not offered without noanonymous"
	printf 'AUTH ANONYMOUS %s\nQUIT\n' "$(b64 'trace')" |
	    python3 sess.py $port starttls > anon.out 2>&1
	atf_check -o match:"^235 2.7.0 Authentication successful$" cat anon.out
	assert_log_clean
}
failures_cleanup() { auth_cleanup; }

atf_test_case login_mismatch cleanup
login_mismatch_head() {
	atf_set descr "smtpd_sender_login_maps with reject_sender_login_mismatch:" \
	    "a user sends only as the addresses it owns (553 5.7.1 not owned" \
	    "by user), an owned address needs a login (553 5.7.1 not logged" \
	    "in), unowned addresses need none; the authenticated and" \
	    "unauthenticated variants each check one half"
	atf_set require.progs "swaks openssl python3"
	atf_set timeout 60
}
login_mismatch_body() {
	auth_instance \
	    "smtpd_sender_login_maps = inline:{ alice@example.org=alice, {@team.example = alice, bob} }" \
	    "smtpd_sender_restrictions = reject_sender_login_mismatch"
	write_sess
	cat > s.in <<EOF
AUTH PLAIN $(b64 '\0bob\0builder')
MAIL FROM:<alice@example.org>
RCPT TO:<alice@mx.example.test>
RSET
MAIL FROM:<any@team.example>
RCPT TO:<alice@mx.example.test>
RSET
MAIL FROM:<bob@unowned.example>
RCPT TO:<alice@mx.example.test>
QUIT
EOF
	python3 sess.py $port starttls < s.in > s.out 2>&1
	atf_check -o match:"^553 5.7.1 <alice@example.org>: Sender address rejected: not owned by user bob$" \
	    -o match:"^553 5.7.1 <bob@unowned.example>: Sender address rejected: not owned by user bob$" \
	    cat s.out
	[ "$(grep -c '^250 2.1.5 Ok' s.out)" = 1 ] || atf_fail "team.example not accepted: $(cat s.out)"
	grep_wait maillog "NOQUEUE: reject: RCPT from unknown\[127.0.0.1\]: 553 5.7.1 <alice@example.org>: Sender address rejected: not owned by user bob;"
	# Not logged in: an owned address is refused, another is not.
	atf_check -s not-exit:0 -o save:anon.out -e ignore swaks --server 127.0.0.1:$port \
	    --helo client.test --from alice@example.org --to alice@mx.example.test
	atf_check -o match:"553 5.7.1 <alice@example.org>: Sender address rejected: not logged in" cat anon.out
	atf_check -s exit:0 -o ignore -e ignore swaks --server 127.0.0.1:$port \
	    --helo client.test --from carol@example.net --to alice@mx.example.test
	# The owner is accepted.
	atf_check -s exit:0 -o match:"250 2.0.0 Ok: queued" -e ignore swaks --server 127.0.0.1:$port \
	    -tls --helo client.test --auth PLAIN --auth-user alice --auth-password wonderland \
	    --from alice@example.org --to alice@mx.example.test

	# Each variant checks one half.
	sed -i.bak 's/reject_sender_login_mismatch/reject_authenticated_sender_login_mismatch/' etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for sh -c "swaks --server 127.0.0.1:$port --helo client.test --from alice@example.org --to alice@mx.example.test >/dev/null 2>&1" ||
	    atf_fail "authenticated-only check refuses a client that did not log in"
	python3 sess.py $port starttls < s.in > s2.out 2>&1
	atf_check -o match:"^553 5.7.1 <alice@example.org>: Sender address rejected: not owned by user bob$" cat s2.out
	sed -i.bak 's/reject_authenticated_sender_login_mismatch/reject_unauthenticated_sender_login_mismatch/' etc/main.cf
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for sh -c "python3 sess.py $port starttls < s.in | grep -q 'Sender address rejected' && false || true"
	WAIT_MAX=50 wait_for sh -c "swaks --server 127.0.0.1:$port --helo client.test --from alice@example.org --to alice@mx.example.test 2>&1 | grep -q 'not logged in'" ||
	    atf_fail "unauthenticated check lets an owned address in"
	python3 sess.py $port starttls < s.in > s3.out 2>&1
	atf_check -o not-match:"Sender address rejected" cat s3.out
	assert_log_clean
}
login_mismatch_cleanup() { auth_cleanup; }

atf_test_case backend_down cleanup
backend_down_head() {
	atf_set descr "Dovecot stopped in the middle of a session: AUTH gets" \
	    "454 4.7.0 and the session goes on (mail for us is still taken);" \
	    "Dovecot back: the next session logs in (a new connection); an" \
	    "auth server that never answers: 454 after smtpd_sasl_timeout"
	atf_set require.progs "openssl python3"
	atf_set timeout 90
}
backend_down_body() {
	auth_instance "smtpd_sasl_timeout = 2s"
	write_sess
	spawn held python3 -c "
import socket, ssl, sys, time, os
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
s = socket.create_connection(('127.0.0.1', $port), timeout=20)
f = s.makefile('rb')
def reply():
    while True:
        l = f.readline().decode('latin-1').rstrip('\r\n')
        print(l, flush=True)
        if len(l) < 4 or l[3] != '-': return
def cmd(c):
    s.sendall(c.encode() + b'\r\n'); reply()
reply(); cmd('EHLO client.test'); cmd('STARTTLS')
s = ctx.wrap_socket(s); f = s.makefile('rb')
cmd('EHLO client.test')
print('READY', flush=True)
while not os.path.exists('go'): time.sleep(0.1)
cmd('AUTH PLAIN $(b64 '\0alice\0wonderland')')
cmd('NOOP')
cmd('MAIL FROM:<a@example.org>'); cmd('RCPT TO:<alice@mx.example.test>')
cmd('DATA'); s.sendall(b'Subject: t\r\n\r\nhi\r\n.\r\n'); reply()
cmd('QUIT')
"
	grep_wait held.out "^READY$"
	dovecot_stop
	touch go
	grep_wait held.out "^221 2.0.0 Bye$"
	atf_check -o match:"^454 4.7.0 Temporary authentication failure$" \
	    -o match:"^250 2.0.0 Ok$" -o match:"^250 2.0.0 Ok: queued as" cat held.out
	grep_wait maillog "SASL PLAIN authentication failed: Connection lost to authentication server"
	# Dovecot again: a new session logs in.
	dovecot_start $PWD/q/private/auth
	printf 'AUTH PLAIN %s\nQUIT\n' "$(b64 '\0alice\0wonderland')" |
	    python3 sess.py $port starttls > again.out 2>&1
	atf_check -o match:"^235 2.7.0 Authentication successful$" cat again.out
	dovecot_stop

	# A server that takes the connection and says nothing.
	cat > mute.py <<EOF
import socket, os, time
s = socket.socket(socket.AF_UNIX)
s.bind("$PWD/q/private/auth"); s.listen(5)
os.chmod("$PWD/q/private/auth", 0o666)
held = []
while True:
    c, _ = s.accept(); held.append(c)
EOF
	rm -f q/private/auth
	spawn mute python3 mute.py
	retry test -S q/private/auth || atf_fail "no mute socket: $(cat mute.err)"
	start=$(date +%s)
	printf 'AUTH PLAIN %s\nNOOP\nQUIT\n' "$(b64 '\0alice\0wonderland')" |
	    python3 sess.py $port starttls > mute.out 2>&1
	end=$(date +%s)
	atf_check -o match:"^454 4.7.0 Temporary authentication failure$" \
	    -o match:"^250 2.0.0 Ok$" -o match:"^221 2.0.0 Bye$" cat mute.out
	[ $((end - start)) -le 8 ] || atf_fail "took $((end - start)) s"
	grep_wait maillog "SASL: .*timeout exceeded"
	assert_log_clean
}
backend_down_cleanup() {
	auth_cleanup
	rm -f q/private/auth
}

atf_test_case received_header cleanup
received_header_head() {
	atf_set descr "smtpd_sasl_authenticated_header = yes puts" \
	    "(Authenticated sender: NAME) in the Received: header"
	atf_set require.progs "swaks openssl"
	atf_set timeout 60
}
received_header_body() {
	# An absolute smtpd_sasl_path, except in the chrooted variant,
	# where only a path inside the queue directory can be reached.
	if [ -n "${PETREL_JAIL:-}" ]; then
		path=private/auth
	else
		path=$PWD/q/private/auth
	fi
	auth_instance "smtpd_sasl_authenticated_header = yes" \
	    "smtpd_sasl_path = $path" "broken_sasl_auth_clients = yes"
	atf_check -s exit:0 -o save:swaks.out -e ignore swaks \
	    --server 127.0.0.1:$port -tls --helo client.test \
	    --auth LOGIN --auth-user alice --auth-password wonderland \
	    --from alice@example.org --to someone@elsewhere.example
	atf_check -o match:"250-AUTH PLAIN LOGIN" -o match:"250-AUTH=PLAIN LOGIN" cat swaks.out
	id=$(sed -n 's/.*250 2\.0\.0 Ok: queued as \([0-9A-Z]*\).*/\1/p' swaks.out | head -n 1)
	atf_check -o match:"^	\(Authenticated sender: alice\)$" -o match:"with ESMTPSA id $id" \
	    sh -c "$BIN/postcat -c $PWD/etc -q $id | tr -d '\r'"
	assert_log_clean
}
received_header_cleanup() { auth_cleanup; }

atf_test_case unprivileged cleanup
unprivileged_head() {
	atf_set descr "the same as a user other than root: the private" \
	    "Dovecot runs as that user too, and a login over STARTTLS works"
	atf_set require.progs "swaks openssl"
	atf_set require.user unprivileged
	atf_set timeout 60
}
unprivileged_body() {
	auth_instance
	atf_check -s exit:0 -o save:swaks.out -e ignore swaks \
	    --server 127.0.0.1:$port -tls --helo client.test \
	    --auth PLAIN --auth-user bob --auth-password builder \
	    --from bob@example.org --to someone@elsewhere.example
	atf_check -o match:"235 2.7.0 Authentication successful" \
	    -o match:"250 2.0.0 Ok: queued as" cat swaks.out
	grep_wait maillog "sasl_method=PLAIN, sasl_username=bob$"
	assert_log_clean
}
unprivileged_cleanup() { auth_cleanup; }

atf_test_case auth_rate_limit cleanup
auth_rate_limit_head() {
	atf_set descr "smtpd_client_auth_rate_limit: the AUTH command over the" \
	    "limit gets 450 4.7.1 before Dovecot is asked, also in the next" \
	    "session (anvil counts for all smtpd processes); a warning is logged"
}
auth_rate_limit_body() {
	with_anvil=1 auth_instance "smtpd_client_auth_rate_limit = 2" \
	    "smtpd_client_event_limit_exceptions ="
	write_sess
	cat > rate.in <<EOF
AUTH PLAIN $(b64 '\0alice\0wrong-secret')
AUTH PLAIN $(b64 '\0alice\0wrong-secret')
AUTH PLAIN $(b64 '\0alice\0wonderland')
QUIT
EOF
	python3 sess.py $port starttls < rate.in > rate.out 2>&1
	cat > expected <<'EOF'
535 5.7.8 Error: authentication failed
535 5.7.8 Error: authentication failed
450 4.7.1 Error: too many AUTH commands from 127.0.0.1
221 2.0.0 Bye
EOF
	sed -n '/^--- ready$/,$p' rate.out | sed 1d > got
	diff -u expected got || atf_fail "AUTH over its rate: $(cat rate.out)"
	# A new session: anvil still counts, so the right password gets no
	# further than the limit.
	printf 'AUTH PLAIN %s\nQUIT\n' "$(b64 '\0alice\0wonderland')" |
	    python3 sess.py $port starttls > rate2.out 2>&1
	grep -q '^450 4.7.1 Error: too many AUTH commands from 127.0.0.1$' rate2.out ||
	    atf_fail "next session: $(cat rate2.out)"
	grep_wait maillog "warning: AUTH command rate limit exceeded: 3 from unknown\[127.0.0.1\] for service $port"
}
auth_rate_limit_cleanup() { auth_cleanup; }

atf_test_case start_warnings cleanup
start_warnings_head() {
	atf_set descr "smtpd warns at start about AUTH that can never be" \
	    "offered (smtpd_tls_auth_only without TLS), login checks without" \
	    "smtpd_sender_login_maps and, chrooted, an absolute smtpd_sasl_path"
	atf_set require.progs swaks
}
start_warnings_body() {
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" "mydestination = mx.example.test" \
	    "local_recipient_maps =" "smtpd_peername_lookup = no" \
	    "smtpd_sasl_auth_enable = yes" "smtpd_sasl_path = $PWD/q/private/auth" \
	    "smtpd_sender_restrictions = reject_sender_login_mismatch"
	mcf "$port inet n - n - - smtpd" "cleanup unix n - n - 0 cleanup"
	start_instance
	atf_check -s exit:0 -o save:ehlo.out -e ignore swaks --server 127.0.0.1:$port \
	    --helo client.test --quit-after EHLO
	atf_check -o not-match:"AUTH" cat ehlo.out
	grep_wait maillog "warning: smtpd_sasl_auth_enable = yes but AUTH is never offered: smtpd_tls_auth_only = yes and TLS is not available"
	grep_wait maillog "warning: reject_\*sender_login_mismatch has no effect: smtpd_sender_login_maps is empty"
	if [ -n "${PETREL_JAIL:-}" ]; then
		grep_wait maillog "warning: smtpd_sasl_path = $PWD/q/private/auth is an absolute path and smtpd runs chrooted"
	fi
}
start_warnings_cleanup() { stop_instance; }

atf_test_case config
config_head() {
	atf_set descr "petrel check: smtpd_sasl_type other than dovecot and an" \
	    "unknown security option are refused with file:line; the" \
	    "submission and submissions services of conf/master.cf are" \
	    "accepted uncommented"
}
config_body() {
	mk_instance "smtpd_sasl_type = cyrus"
	mcf "smtp inet n - n - - smtpd"
	atf_check -s not-exit:0 -o ignore -e match:"main.cf:[0-9]+: .*smtpd_sasl_type" \
	    $PETREL -c $PWD/etc check
	mk_instance "smtpd_sasl_security_options = noanonymous, nosuch"
	atf_check -s not-exit:0 -o ignore -e match:"main.cf:[0-9]+: .*nosuch" \
	    $PETREL -c $PWD/etc check
	# The shipped master.cf with its submission services uncommented.
	make_cert
	mk_instance "smtpd_tls_cert_file = $PWD/cert.pem" "smtpd_tls_key_file = $PWD/key.pem"
	sed -e '/^#submission /,$s/^#\(submissions* \|        -o\)/\1/' \
	    @SRCDIR@/conf/master.cf > etc/master.cf
	grep -q '^submissions inet' etc/master.cf || atf_fail "no submissions service"
	[ "$(grep -c '^        -o smtpd_sasl_auth_enable=yes' etc/master.cf)" = 2 ] ||
	    atf_fail "the -o lines were not uncommented"
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc check
	atf_check -o match:"smtpd_tls_wrappermode=yes" $BIN/postconf -c $PWD/etc -M submissions/inet
}

atf_init_test_cases() {
	atf_add_test_case starttls
	atf_add_test_case wrappermode
	atf_add_test_case failures
	atf_add_test_case login_mismatch
	atf_add_test_case backend_down
	atf_add_test_case received_header
	atf_add_test_case unprivileged
	atf_add_test_case auth_rate_limit
	atf_add_test_case start_warnings
	atf_add_test_case config
}
