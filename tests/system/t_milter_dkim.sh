#! /usr/bin/env atf-sh
# DKIM with OpenDKIM as a milter: Debian's opendkim, run in the
# foreground as a private instance (its own opendkim.conf and UNIX socket
# in the work directory, a key made by opendkim-genkey in the test) as
# smtpd_milters and non_smtpd_milters.  Mail over SMTP and mail from
# sendmail arrive at smtp-sink signed, and the signature verifies with
# python3-dkim given the public key from the generated .txt file (no
# DNS); a body changed after signing fails.  In verify mode OpenDKIM
# (its TestDNSData holding the key, no DNS) adds Authentication-Results
# to a signed incoming message.  doc/milter-setup.md shows this
# configuration.  MILTER_MTA=postfix runs it against Debian's Postfix
# (milter.subr).

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
SRCDIR=@SRCDIR@
. @SRCDIR@/tests/system/milter.subr

need_dkim() {
	[ -x /usr/sbin/opendkim ] ||
	    atf_skip "opendkim is not installed (tools/install-deps)"
	command -v opendkim-genkey >/dev/null 2>&1 ||
	    atf_skip "opendkim-genkey is not installed (opendkim-tools)"
	[ -x $MILTER_PY ] && $MILTER_PY -c 'import dkim' 2>/dev/null ||
	    atf_skip "python3-dkim is not installed for $MILTER_PY (tools/install-deps)"
	[ ${#PWD} -lt 90 ] || atf_skip "work directory path too long for UNIX sockets"
	if [ "${MILTER_MTA:-petrel}" = postfix ]; then
		[ "$(id -u)" = 0 ] || atf_skip "MILTER_MTA=postfix needs root"
		chmod 755 .
	fi
}

# genkey: keys/test.private and keys/test.txt for selector "test" of
# example.com.
genkey() {
	mkdir -p keys
	opendkim-genkey -D keys -d example.com -s test > genkey.out 2>&1 ||
	    { cat genkey.out >&2; atf_fail "opendkim-genkey failed"; }
	chmod 600 keys/test.private
}

# start_opendkim NAME MODE [conf lines...]: OpenDKIM in the foreground,
# mode s (sign) or v (verify), on $PWD/NAME.sock; sets $milter.
start_opendkim() {
	_od=$1
	_mode=$2
	shift 2
	{
		echo "Syslog no"
		echo "LogWhy yes"
		echo "Background no"
		echo "Mode $_mode"
		echo "Socket local:$PWD/$_od.sock"
		echo "PidFile $PWD/$_od.pidfile"
		echo "UMask 000"
		echo "Domain example.com"
		echo "Selector test"
		echo "KeyFile $PWD/keys/test.private"
		# the MTA's client address, 127.0.0.1, is internal (mail
		# from it is signed) for the signer only: OpenDKIM does not
		# verify mail from internal hosts
		if [ $_mode = s ]; then
			echo "InternalHosts 127.0.0.1"
		else
			echo "InternalHosts 192.0.2.1"
		fi
		echo "Canonicalization relaxed/simple"
		echo "SignatureAlgorithm rsa-sha256"
		# the key is the test's file, owned by whoever runs the test
		echo "RequireSafeKeys no"
		for l in "$@"; do echo "$l"; done
	} > $_od.conf
	spawn $_od /usr/sbin/opendkim -f -x $PWD/$_od.conf
	retry test -S $_od.sock ||
	    { cat $_od.err $_od.out >&2; atf_fail "opendkim $_od made no socket"; }
	milter=unix:$PWD/$_od.sock
}

# verify.py FILE: verifies the DKIM signature of the message the sink
# saved in FILE (its X-Sink-* envelope lines dropped), with the key of
# keys/test.txt for test._domainkey.example.com; exit 0 if it verifies.
write_verify() {
	cat > verify.py <<'EOF'
import re, sys, dkim
txt = open('keys/test.txt').read()
record = ''.join(re.findall(r'"([^"]*)"', txt)).encode()
def dnsfunc(name, timeout=5):
    if name.rstrip(b'.').lower() == b'test._domainkey.example.com':
        return record
    return None
raw = open(sys.argv[1], 'rb').read()
lines = raw.split(b'\r\n')
while lines and lines[0].startswith(b'X-Sink-'):
    lines.pop(0)
msg = b'\r\n'.join(lines)
ok = dkim.verify(msg, dnsfunc=dnsfunc)
print('verified' if ok else 'failed')
sys.exit(0 if ok else 1)
EOF
}

dkim_verifies() {
	$MILTER_PY verify.py "$1" > "$1.verify" 2>&1
}

atf_test_case sign cleanup
sign_head() {
	atf_set descr "OpenDKIM signing as smtpd_milters and non_smtpd_milters: a message over SMTP and one from sendmail arrive with a DKIM-Signature (d=example.com, s=test) that verifies; the same message with its body changed does not"
	atf_set require.user unprivileged
}
sign_body() {
	need_dkim
	need_bash
	genkey
	write_verify
	start_opendkim dkim s
	setup "smtpd_milters = $milter" "non_smtpd_milters = $milter" \
	    "milter_default_action = tempfail"
	msg_script s.in sender@example.com rcpt@example.net
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
	wait_sink 1
	m1=$(sink_msgs)
	grep -q '^DKIM-Signature: .*d=example\.com' $m1 ||
	    { cat $m1 dkim.err >&2; atf_fail "SMTP message not signed"; }
	grep -A3 '^DKIM-Signature:' $m1 | tr -d '\r\n\t ' | grep -q 's=test;' ||
	    atf_fail "not selector test"
	dkim_verifies $m1 || { cat $m1 $m1.verify >&2; atf_fail "signature of the SMTP message does not verify"; }

	printf 'From: sender@example.com\nTo: rcpt@example.net\nSubject: local\n\nfrom sendmail\n' > msg
	mta_sendmail -f sender@example.com rcpt@example.net < msg ||
	    atf_fail "sendmail failed"
	wait_sink 2
	m2=$(sink_msgs | tail -n 1)
	grep -q '^Subject: local' $m2 || atf_fail "second message is not the sendmail one"
	grep -q '^DKIM-Signature: .*d=example\.com' $m2 ||
	    { cat $m2 dkim.err >&2; atf_fail "sendmail message not signed"; }
	dkim_verifies $m2 || { cat $m2 $m2.verify >&2; atf_fail "signature of the sendmail message does not verify"; }

	# the check can fail: change the body after signing
	sed 's/^from sendmail/from someone else/' $m2 > tampered
	! dkim_verifies tampered || atf_fail "a changed body still verifies"
	grep -q 'failed' tampered.verify || { cat tampered.verify >&2; atf_fail "verify.py did not say failed"; }
	mta_log_clean
}
sign_cleanup() {
	common_cleanup
}

atf_test_case sign_after_milter cleanup
sign_after_milter_head() {
	atf_set descr "smtpd_milters = a milter that rewrites the Subject, then OpenDKIM signing: OpenDKIM signs the rewritten Subject (as Postfix shows it the first milter's edits), so the signature verifies at the sink"
	atf_set require.user unprivileged
}
sign_after_milter_body() {
	need_dkim
	need_bash
	[ -x $MILTER_PY ] && $MILTER_PY -c 'import Milter' 2>/dev/null ||
	    atf_skip "python3-milter is not installed for $MILTER_PY (tools/install-deps)"
	genkey
	write_verify
	start_milter rewrite "eom chgheader Subject 1 [tagged] milter test"
	m1=$milter
	start_opendkim dkim s
	setup "smtpd_milters = $m1, $milter" "milter_default_action = tempfail"
	msg_script s.in sender@example.com rcpt@example.net
	chat s
	expect_reply s . '^250 2\.0\.0 Ok: queued as '
	wait_sink 1
	m1=$(sink_msgs)
	tr -d '\r' < $m1 | grep -qx 'Subject: \[tagged\] milter test' ||
	    { cat $m1 >&2; atf_fail "the Subject was not rewritten"; }
	grep -q '^DKIM-Signature: .*d=example\.com' $m1 ||
	    { cat $m1 dkim.err >&2; atf_fail "message not signed"; }
	dkim_verifies $m1 ||
	    { cat $m1 $m1.verify >&2; atf_fail "the signature does not verify: OpenDKIM did not sign the rewritten Subject"; }
	mta_log_clean
}
sign_after_milter_cleanup() {
	common_cleanup
}

atf_test_case verify cleanup
verify_head() {
	atf_set descr "OpenDKIM verifying as smtpd_milters: a message signed for example.com gets Authentication-Results with dkim=pass, the same message changed after signing gets dkim=fail; both are delivered"
	atf_set require.user unprivileged
}
verify_body() {
	need_dkim
	need_bash
	genkey
	# TestDNSData: the key record without DNS
	printf 'test._domainkey.example.com %s\n' \
	    "$(sed -n 's/[^"]*"\([^"]*\)"[^"]*/\1/gp' keys/test.txt | tr -d '\n')" > dnsdata
	start_opendkim dkimv v "TestDNSData file:$PWD/dnsdata" \
	    "AuthservID mx.example.test"
	setup "smtpd_milters = $milter"
	cat > sign.py <<'EOF'
import sys, dkim
key = open('keys/test.private', 'rb').read()
msg = (b'From: sender@example.com\r\nTo: rcpt@example.net\r\n'
       b'Subject: signed elsewhere\r\n\r\nsigned body\r\n')
sig = dkim.sign(msg, b'test', b'example.com', key,
                include_headers=[b'from', b'to', b'subject'])
out = sig + msg
if sys.argv[1] == 'tamper':
    out = out.replace(b'signed body', b'changed body')
sys.stdout.buffer.write(out.replace(b'\r\n', b'\n'))
EOF
	for kind in good tamper; do
		$MILTER_PY sign.py $kind > $kind.msg || atf_fail "cannot sign"
		{
			echo "EHLO client.test"
			echo "MAIL FROM:<sender@example.com>"
			echo "RCPT TO:<rcpt@example.net>"
			echo "DATA"
			cat $kind.msg
			echo "."
			echo "QUIT"
		} > $kind.in
		chat $kind
		expect_reply $kind . '^250 2\.0\.0 Ok: queued as '
	done
	wait_sink 2
	set -- $(sink_msgs)
	tr -d '\r' < $1 | sed -n '/^Authentication-Results:/,/^[^ 	]/p' > ar1
	grep -q 'mx\.example\.test' ar1 && grep -q 'dkim=pass' ar1 ||
	    { cat $1 dkimv.err >&2; atf_fail "no dkim=pass for the signed message"; }
	tr -d '\r' < $2 | sed -n '/^Authentication-Results:/,/^[^ 	]/p' > ar2
	grep -q 'dkim=fail' ar2 ||
	    { cat $2 dkimv.err >&2; atf_fail "no dkim=fail for the changed message"; }
	mta_log_clean
}
verify_cleanup() {
	common_cleanup
}

atf_init_test_cases() {
	atf_add_test_case sign
	atf_add_test_case sign_after_milter
	atf_add_test_case verify
}
