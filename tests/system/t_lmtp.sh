#! /usr/bin/env atf-sh
# LMTP delivery (the lmtp agent, RFC 2033) to virtual mailbox domains:
# a private Dovecot (dovecot.subr: its own dovecot.conf, sockets, log and
# Maildirs in the test's directory) serves LMTP on a UNIX socket and on
# 127.0.0.1; users of two virtual domains come from a passwd-file, one
# of them with a tiny quota.  Petrel takes mail over SMTP (smtpd on a
# port free at run time), checks recipients of virtual_mailbox_domains
# against virtual_mailbox_maps at RCPT, and its lmtp agent delivers
# through virtual_transport; what Dovecot stored is read back with
# doveadm fetch.  A scripted LMTP server (Python) plays the replies
# Dovecot cannot be made to give: a 4xx for one recipient after DATA
# and a malformed reply.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/dovecot.subr

# The users Dovecot knows: alice@one.test, bob@two.test, dave@two.test
# (the senders' mailbox, for bounces), carol@two.test with a quota of
# 1 KiB (every message here is larger: over quota, 552 5.2.2 after
# DATA).  Petrel's table also lists ghost@two.test, whom Dovecot does
# not know (550 5.1.1 to RCPT, from Dovecot).
lmtp_users() {
	mkdir -p dovecot
	{
		echo 'alice@one.test:{PLAIN}x::::::'
		echo 'bob@two.test:{PLAIN}x::::::'
		echo 'dave@two.test:{PLAIN}x::::::'
		echo 'carol@two.test:{PLAIN}x::::::userdb_quota_rule=*:storage=1K'
	} > dovecot/passwd
	printf '%s x\n' alice@one.test bob@two.test dave@two.test \
	    carol@two.test ghost@two.test > vmailbox
}

# lmtp_instance TRANSPORT [main.cf line...]: smtpd on $port, cleanup,
# qmgr, lmtp (one process: the reuse test counts connections), bounce;
# one.test and two.test are virtual mailbox domains.
lmtp_instance() {
	_vt=$1
	shift
	port=$(free_port)
	mk_instance "myhostname = mx.example.test" \
	    "mydestination = mx.example.test" \
	    "local_recipient_maps =" \
	    "virtual_mailbox_domains = one.test, two.test" \
	    "virtual_mailbox_maps = texthash:$PWD/vmailbox" \
	    "virtual_transport = $_vt" \
	    "lmtp_connection_cache_time_limit = 20s" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 3600s" "qmgr_ipc_timeout = 5s" \
	    "inet_protocols = ipv4" "$@"
	mcf "$port inet n - n - - smtpd" \
	    "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 3600 1 qmgr" \
	    "lmtp unix - - n - 1 lmtp" \
	    "bounce unix - - n - 0 bounce"
	start_instance
}

lmtp_cleanup() {
	stop_instance
	dovecot_stop
	[ -f fake.pid ] && kill "$(cat fake.pid)" 2>/dev/null
	stop_all
}

# send FROM RCPT... : one message over SMTP; prints "RCPT CODE" for each
# recipient, then "DATA CODE" (or "DATA none" when nobody was accepted).
# The body is larger than carol's quota.
send() {
	python3 - "$port" "$@" <<'EOF'
import smtplib, sys
port, sender, rcpts = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
s = smtplib.SMTP("127.0.0.1", port, timeout=10)
s.ehlo("client.test")
s.mail(sender)
ok = 0
for r in rcpts:
    code, text = s.rcpt(r)
    print(r, code, text.decode())
    ok += code == 250
body = "Subject: lmtp test %s\r\n\r\n" % sys.argv[-1] + "filler line\r\n" * 200
if ok:
    code, text = s.data(body)
    print("DATA", code)
else:
    print("DATA none")
s.quit()
EOF
}

# assert_count USER N: USER's INBOX holds N messages.
assert_count() {
	_c=$(dovecot_fetch "$1" uid | grep -c '^uid:')
	[ "$_c" = "$2" ] || atf_fail "$1 has $_c messages, not $2"
}

atf_test_case unix_socket cleanup
unix_socket_head() {
	atf_set descr "lmtp:unix:PATH to Dovecot: two virtual domains delivered, an unknown user refused at RCPT, an over-quota recipient bounced while the others get the message once"
	atf_set require.progs python3
	atf_set timeout 60
}
unix_socket_body() {
	lmtp_users
	dovecot_lmtp_start $PWD/dovecot/lmtp "$(free_port)"
	lmtp_instance "lmtp:unix:$PWD/dovecot/lmtp"

	send dave@two.test alice@one.test bob@two.test carol@two.test \
	    nobody@one.test > send.out
	cat send.out
	atf_check -s exit:0 -o ignore grep '^alice@one.test 250' send.out
	atf_check -s exit:0 -o ignore grep '^bob@two.test 250' send.out
	atf_check -s exit:0 -o ignore grep '^carol@two.test 250' send.out
	# virtual_mailbox_maps at RCPT, as reject_unlisted_recipient does.
	atf_check -s exit:0 -o ignore grep \
	    '^nobody@one.test 550 5.1.1 <nobody@one.test>: Recipient address rejected: User unknown in virtual mailbox table' \
	    send.out
	atf_check -s exit:0 -o ignore grep '^DATA 250' send.out

	wait_for lines_ge 1 'to=<carol@two.test>.*status=bounced' maillog ||
	    { cat maillog dovecot/dovecot.log; atf_fail "carol not bounced"; }
	wait_for lines_ge 2 'to=<.*status=sent' maillog ||
	    { cat maillog; atf_fail "alice and bob not delivered"; }
	# Each recipient has its own status from its own reply after DATA.
	atf_check -s exit:0 -o ignore grep \
	    "to=<alice@one.test>, relay=localhost\[$PWD/dovecot/lmtp\],.*dsn=2.0.0, status=sent (250 2.0.0 <alice@one.test> .* Saved)" \
	    maillog
	atf_check -s exit:0 -o ignore grep \
	    "to=<bob@two.test>, relay=localhost\[.*dsn=2.0.0, status=sent" maillog
	atf_check -s exit:0 -o ignore grep \
	    "to=<carol@two.test>, relay=localhost\[.*dsn=5.2.2, status=bounced (host localhost\[$PWD/dovecot/lmtp\] said: 552 5.2.2 <carol@two.test> Quota exceeded" \
	    maillog
	# The bounce reaches the sender (over LMTP too).
	WAIT_MAX=100 wait_for lines_ge 1 'to=<dave@two.test>.*status=sent' maillog ||
	    { cat maillog; atf_fail "no bounce delivered to dave"; }
	assert_count alice@one.test 1
	assert_count bob@two.test 1
	assert_count carol@two.test 0
	dovecot_fetch alice@one.test hdr.subject > alice.out
	atf_check -s exit:0 -o ignore grep "hdr.subject: lmtp test nobody@one.test" alice.out
	dovecot_fetch dave@two.test body > dave.out
	atf_check -s exit:0 -o ignore grep "Quota exceeded" dave.out

	# A user Petrel's table knows and Dovecot does not: Dovecot's 550 to
	# RCPT bounces that one; alice gets this message once.  The session
	# kept from the first delivery is used again: Dovecot saw one
	# connection from us for the message and for the bounce and this.
	send dave@two.test ghost@two.test alice@one.test > send2.out
	atf_check -s exit:0 -o ignore grep '^ghost@two.test 250' send2.out
	wait_for lines_ge 1 'to=<ghost@two.test>.*status=bounced' maillog ||
	    { cat maillog; atf_fail "ghost not bounced"; }
	atf_check -s exit:0 -o ignore grep \
	    "to=<ghost@two.test>, .*dsn=5.1.1, status=bounced (host localhost\[.*said: 550 5.1.1 .*(in reply to RCPT TO command))" \
	    maillog
	wait_for lines_ge 4 'to=<alice@one.test>.*status=sent\|to=<bob@two.test>.*status=sent\|to=<dave@two.test>.*status=sent' maillog
	wait_for lines_ge 2 'to=<alice@one.test>.*status=sent' maillog ||
	    { cat maillog; atf_fail "second message not delivered to alice"; }
	assert_count alice@one.test 2
	atf_check -s exit:0 -o inline:"1\n" grep -c 'lmtp([0-9]*): Info: Connect from local' \
	    dovecot/dovecot.log
	assert_log_clean
}
unix_socket_cleanup() {
	lmtp_cleanup
}

atf_test_case tcp cleanup
tcp_head() {
	atf_set descr "lmtp:inet:127.0.0.1:PORT and lmtp:[127.0.0.1]:PORT to Dovecot over TCP"
	atf_set require.progs python3
	atf_set timeout 60
}
tcp_body() {
	lmtp_users
	lport=$(free_port)
	dovecot_lmtp_start $PWD/dovecot/lmtp "$lport"
	lmtp_instance "lmtp:inet:127.0.0.1:$lport" \
	    "transport_maps = inline:{ two.test=lmtp:[127.0.0.1]:$lport }"
	send dave@two.test alice@one.test bob@two.test > send.out
	atf_check -s exit:0 -o ignore grep '^DATA 250' send.out
	wait_for lines_ge 2 'status=sent' maillog ||
	    { cat maillog dovecot/dovecot.log; atf_fail "not delivered over TCP"; }
	atf_check -s exit:0 -o ignore grep \
	    "to=<alice@one.test>, relay=127.0.0.1\[127.0.0.1\]:$lport,.*status=sent (250 2.0.0 <alice@one.test>" \
	    maillog
	atf_check -s exit:0 -o ignore grep \
	    "to=<bob@two.test>, relay=127.0.0.1\[127.0.0.1\]:$lport,.*status=sent" \
	    maillog
	assert_count alice@one.test 1
	assert_count bob@two.test 1
	assert_log_clean
}
tcp_cleanup() {
	lmtp_cleanup
}

# fake_lmtp SOCKET: a scripted LMTP server on a UNIX socket, one
# connection at a time, logging to fake.log.  After DATA it answers the
# accepted recipients in order: ok@ and ok2@ 250, later@ 451 4.2.0, bad@ a line
# that is no reply (then it hangs up), anyone else 550 5.1.1.
fake_lmtp() {
	cat > fake.py <<'EOF'
import os, socket, sys
path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
os.chmod(path, 0o666)	# lmtp runs as mail_owner under root
srv.listen(5)
log = open("fake.log", "a", buffering=1)
# FAKE_AUTH=user:password: AUTH PLAIN offered, those credentials taken.
auth = os.environ.get("FAKE_AUTH")
while True:
    c, _ = srv.accept()
    c.settimeout(10)
    f = c.makefile("rb")
    def send(l):
        c.sendall((l + "\r\n").encode())
    send("220 fake LMTP")
    rcpts = []
    try:
        while True:
            l = f.readline()
            if not l:
                break
            l = l.decode().rstrip("\r\n")
            log.write(l + "\n")
            u = l.upper()
            if u.startswith("LHLO"):
                send("250-fake"); send("250-ENHANCEDSTATUSCODES")
                if auth:
                    send("250-AUTH PLAIN")
                send("250 PIPELINING")
            elif auth and u.startswith("AUTH PLAIN "):
                import base64
                parts = base64.b64decode(l.split()[2]).decode().split("\0")
                if len(parts) == 3 and ":".join(parts[1:]) == auth:
                    log.write("authenticated " + parts[1] + "\n")
                    send("235 2.7.0 ok")
                else:
                    send("535 5.7.8 bad credentials")
            elif u.startswith("MAIL") or u.startswith("RSET"):
                rcpts = [] if u.startswith("RSET") else rcpts; send("250 2.1.0 ok")
            elif u.startswith("RCPT"):
                rcpts.append(l[l.index("<") + 1:l.index(">")]); send("250 2.1.5 ok")
            elif u == "DATA":
                send("354 go")
                while f.readline().rstrip(b"\r\n") != b".":
                    pass
                for r in rcpts:
                    if r.split("@")[0] in ("ok", "ok2"):
                        send("250 2.0.0 <%s> stored" % r)
                    elif r.startswith("later@"):
                        send("451 4.2.0 <%s> mailbox busy" % r)
                    elif r.startswith("bad@"):
                        send("this is no reply")
                        raise EOFError
                    else:
                        send("550 5.1.1 <%s> unknown" % r)
                rcpts = []
            elif u == "QUIT":
                send("221 bye"); break
            else:
                send("502 5.5.2 what")
    except (EOFError, OSError):
        pass
    c.close()
EOF
	python3 fake.py "$1" > fake.out 2>&1 &
	echo $! > fake.pid
	retry test -S "$1" || atf_fail "fake LMTP server made no socket"
}

atf_test_case per_recipient cleanup
per_recipient_head() {
	atf_set descr "each recipient's reply after DATA decides it alone: 250 sent, 451 deferred, 550 bounced; a malformed reply defers the rest and the agent lives on"
	atf_set require.progs python3
	atf_set timeout 60
}
per_recipient_body() {
	printf '%s x\n' ok@one.test later@one.test gone@one.test \
	    bad@one.test ok2@one.test cfg@one.test nosock@one.test > vmailbox
	fake_lmtp $PWD/fake.sock
	lmtp_instance "lmtp:unix:$PWD/fake.sock" \
	    "transport_maps = inline:{ cfg@one.test=lmtp:unix:, nosock@one.test=lmtp:unix:$PWD/nosock }"
	send s@mx.example.test ok@one.test later@one.test gone@one.test > send.out
	atf_check -s exit:0 -o ignore grep '^DATA 250' send.out
	wait_for lines_ge 1 'to=<gone@one.test>.*status=' maillog ||
	    { cat maillog fake.log; atf_fail "no status for each recipient"; }
	atf_check -s exit:0 -o ignore grep \
	    "to=<ok@one.test>, relay=localhost\[$PWD/fake.sock\],.*dsn=2.0.0, status=sent (250 2.0.0 <ok@one.test> stored)" \
	    maillog
	atf_check -s exit:0 -o ignore grep \
	    "to=<later@one.test>, .*dsn=4.2.0, status=deferred (host localhost\[$PWD/fake.sock\] said: 451 4.2.0 <later@one.test> mailbox busy (in reply to end of DATA command))" \
	    maillog
	atf_check -s exit:0 -o ignore grep \
	    "to=<gone@one.test>, .*dsn=5.1.1, status=bounced (host localhost\[.*said: 550 5.1.1 <gone@one.test> unknown (in reply to end of DATA command))" \
	    maillog
	# The malformed reply: ok2 before it is sent, bad and what follows
	# are deferred; the agent is still there for the next message.
	send s@mx.example.test ok2@one.test bad@one.test ok@one.test > send2.out
	atf_check -s exit:0 -o ignore grep '^DATA 250' send2.out
	wait_for lines_ge 1 'to=<bad@one.test>.*status=' maillog ||
	    { cat maillog fake.log; atf_fail "no status after the malformed reply"; }
	atf_check -s exit:0 -o ignore grep "to=<ok2@one.test>, .*status=sent" maillog
	atf_check -s exit:0 -o ignore grep \
	    "to=<bad@one.test>, .*dsn=4.5.0, status=deferred (host localhost\[$PWD/fake.sock\] sent a malformed reply while sending end of data -- message may be sent more than once: this is no reply)" \
	    maillog
	atf_check -s exit:0 -o ignore grep \
	    "to=<ok@one.test>, .*dsn=4.5.0, status=deferred (host .* sent a malformed reply" \
	    maillog
	# The first message went on the same connection (RSET, no LHLO).
	atf_check -s exit:0 -o inline:"1\n" grep -c '^LHLO' fake.log
	atf_check -s exit:0 -o inline:"1\n" grep -c '^RSET' fake.log
	send s@mx.example.test ok@one.test > send3.out
	wait_for lines_ge 2 'to=<ok@one.test>.*status=sent' maillog ||
	    { cat maillog; atf_fail "the agent did not deliver after the malformed reply"; }
	# A next hop that is no socket path is a configuration error; a
	# socket that is not there a connection failure: both deferred.
	send s@mx.example.test cfg@one.test nosock@one.test > send4.out
	wait_for lines_ge 1 'to=<nosock@one.test>.*status=' maillog ||
	    { cat maillog; atf_fail "no status for nosock"; }
	wait_for lines_ge 1 'to=<cfg@one.test>.*status=' maillog ||
	    { cat maillog; atf_fail "no status for cfg"; }
	atf_check -s exit:0 -o ignore grep \
	    'to=<cfg@one.test>, relay=none, .*dsn=4.3.5, status=deferred (bad next hop "unix:": empty socket path (configuration error))' \
	    maillog
	atf_check -s exit:0 -o ignore grep \
	    "to=<nosock@one.test>, relay=none, .*dsn=4.4.1, status=deferred (connect to $PWD/nosock: No such file or directory)" \
	    maillog
	atf_check -s exit:0 -o ignore grep '^LHLO mx.example.test$' fake.log
	atf_check -s exit:1 -o ignore grep -i '^EHLO\|^HELO' fake.log
	assert_log_clean
}
per_recipient_cleanup() {
	lmtp_cleanup
}

atf_test_case tls cleanup
tls_head() {
	atf_set descr "lmtp_tls_security_level = encrypt: STARTTLS to Dovecot's LMTP over TCP; a server without STARTTLS is deferred, not sent in clear"
	atf_set require.progs python3 openssl
	atf_set timeout 90
}
tls_body() {
	lmtp_users
	make_cert
	lport=$(free_port)
	dovecot_lmtp_start $PWD/dovecot/lmtp "$lport" tls
	lmtp_instance "lmtp:inet:127.0.0.1:$lport" \
	    "lmtp_tls_security_level = encrypt"
	send dave@two.test alice@one.test > send.out
	atf_check -s exit:0 -o ignore grep '^DATA 250' send.out
	wait_for lines_ge 1 'to=<alice@one.test>.*status=' maillog ||
	    { cat maillog dovecot/dovecot.log; atf_fail "no status for alice"; }
	grep "to=<alice@one.test>, .*status=sent" maillog >/dev/null ||
	    { cat maillog dovecot/dovecot.log; atf_fail "alice not sent"; }
	# Dovecot's own Received: line says the session was LMTP over TLS.
	dovecot_fetch alice@one.test hdr > alice.hdr
	atf_check -s exit:0 -o ignore grep 'with LMTPS' alice.hdr
	assert_log_clean
	# The same level against a Dovecot without TLS: deferred.
	stop_instance
	dovecot_stop
	rm -f maillog
	dovecot_lmtp_start $PWD/dovecot/lmtp "$lport"
	lmtp_instance "lmtp:inet:127.0.0.1:$lport" \
	    "lmtp_tls_security_level = encrypt"
	send dave@two.test bob@two.test > send2.out
	wait_for lines_ge 1 'to=<bob@two.test>.*status=' maillog ||
	    { cat maillog; atf_fail "no status for bob"; }
	atf_check -s exit:0 -o ignore grep \
	    "to=<bob@two.test>, .*dsn=4.7.4, status=deferred (TLS is required, but was not offered by host 127.0.0.1\[127.0.0.1\]" \
	    maillog
	assert_count bob@two.test 0
}
tls_cleanup() {
	lmtp_cleanup
}

atf_test_case sasl cleanup
sasl_head() {
	atf_set descr "lmtp_sasl_auth_enable: AUTH PLAIN to an LMTP server with the credentials lmtp_sasl_password_maps has for unix:PATH; wrong ones defer"
	atf_set require.progs python3
	atf_set timeout 60
}
sasl_body() {
	printf '%s x\n' ok@one.test ok2@one.test > vmailbox
	export FAKE_AUTH=alice:secret
	fake_lmtp $PWD/fake.sock
	lmtp_instance "lmtp:unix:$PWD/fake.sock" \
	    "lmtp_sasl_auth_enable = yes" \
	    "lmtp_sasl_security_options = noanonymous" \
	    "lmtp_sasl_password_maps = inline:{ unix:$PWD/fake.sock=alice:secret }"
	send s@mx.example.test ok@one.test > send.out
	atf_check -s exit:0 -o ignore grep '^DATA 250' send.out
	wait_for lines_ge 1 'to=<ok@one.test>.*status=' maillog ||
	    { cat maillog fake.log; atf_fail "no status for ok@"; }
	atf_check -s exit:0 -o ignore grep "to=<ok@one.test>, .*status=sent" \
	    maillog
	atf_check -s exit:0 -o ignore grep '^authenticated alice$' fake.log
	# The default security options refuse PLAIN without TLS: no login,
	# and the server (which wants none) still takes the mail.  With a
	# wrong password the login fails and the mail is deferred.
	stop_instance
	rm -f maillog
	lmtp_instance "lmtp:unix:$PWD/fake.sock" \
	    "lmtp_sasl_auth_enable = yes" \
	    "lmtp_sasl_security_options = noanonymous" \
	    "lmtp_sasl_password_maps = inline:{ $PWD/fake.sock=alice:wrong }"
	send s@mx.example.test ok2@one.test > send2.out
	wait_for lines_ge 1 'to=<ok2@one.test>.*status=' maillog ||
	    { cat maillog fake.log; atf_fail "no status for ok2@"; }
	atf_check -s exit:0 -o ignore grep \
	    "to=<ok2@one.test>, .*status=deferred (.*535 5.7.8 bad credentials" \
	    maillog
}
sasl_cleanup() {
	lmtp_cleanup
}

atf_test_case aliases cleanup
aliases_head() {
	atf_set descr "virtual_alias_domains and virtual_alias_maps with virtual mailbox domains: aliases delivered over LMTP, unknown alias-domain recipients refused at RCPT, an alias accepted in a mailbox domain"
	atf_set require.progs python3
	atf_set timeout 60
}
aliases_body() {
	lmtp_users
	printf '%s\n' 'info@alias.test alice@one.test' \
	    'sales@one.test bob@two.test' > valias
	dovecot_lmtp_start $PWD/dovecot/lmtp "$(free_port)"
	lmtp_instance "lmtp:unix:$PWD/dovecot/lmtp" \
	    "virtual_alias_domains = alias.test" \
	    "virtual_alias_maps = texthash:$PWD/valias"
	send dave@two.test info@alias.test sales@one.test nobody@alias.test \
	    > send.out
	cat send.out
	atf_check -s exit:0 -o ignore grep '^info@alias.test 250' send.out
	# Not in virtual_mailbox_maps, but an alias: accepted.
	atf_check -s exit:0 -o ignore grep '^sales@one.test 250' send.out
	atf_check -s exit:0 -o ignore grep \
	    '^nobody@alias.test 550 5.1.1 <nobody@alias.test>: Recipient address rejected: User unknown in virtual alias table' \
	    send.out
	wait_for lines_ge 2 'status=sent' maillog ||
	    { cat maillog dovecot/dovecot.log; atf_fail "aliases not delivered"; }
	atf_check -s exit:0 -o ignore grep \
	    'to=<alice@one.test>, orig_to=<info@alias.test>, relay=localhost\[.*status=sent' \
	    maillog
	atf_check -s exit:0 -o ignore grep \
	    'to=<bob@two.test>, orig_to=<sales@one.test>, relay=localhost\[.*status=sent' \
	    maillog
	assert_count alice@one.test 1
	assert_count bob@two.test 1
	assert_log_clean
}
aliases_cleanup() {
	lmtp_cleanup
}

atf_test_case config cleanup
config_head() {
	atf_set descr "a virtual_transport that names no master.cf service: petrel check warns"
}
config_body() {
	mk_instance "virtual_mailbox_domains = one.test" \
	    "virtual_mailbox_maps = inline:{ a@one.test=x }"
	mcf "cleanup unix n - n - 0 cleanup"
	atf_check -s exit:0 -o ignore \
	    -e match:"virtual_transport = virtual names no master.cf service" \
	    $PETREL -c $PWD/etc check
	mk_instance "virtual_mailbox_domains = one.test" \
	    "virtual_transport = lmtp:unix:private/dovecot-lmtp"
	mcf "cleanup unix n - n - 0 cleanup" "lmtp unix - - n - - lmtp"
	atf_check -s exit:0 -o ignore -e not-match:"virtual_transport" \
	    $PETREL -c $PWD/etc check
}
config_cleanup() {
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case unix_socket
	atf_add_test_case tcp
	atf_add_test_case tls
	atf_add_test_case sasl
	atf_add_test_case per_recipient
	atf_add_test_case aliases
	atf_add_test_case config
}
