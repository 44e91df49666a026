#! /usr/bin/env atf-sh
# Petrel's mail log read by the tools Postfix administrators use on
# theirs: pflogsumm and prometheus-postfix-exporter (Debian packages,
# tools/install-deps).  One mixed workload whose truth is known:
#
#   received  16: 10 over SMTP (smtplib: 3 sessions), 6 through
#                 sendmail -> postdrop -> pickup
#   delivered 14: 5 to alice, 2 to bob (local), 5 relayed to the sink,
#                 and the 2 non-delivery notices (to bob, local)
#   deferred   2: tempfail@remote.example (the sink answers 450)
#   bounced    2: permfail@remote.example (the sink answers 550)
#   rejected   3: RCPT to unknown local users (550 5.1.1)
#
# Both tools count by the process that wrote a line (smtpd client=,
# pickup uid=, qmgr from=/size=, the agents' to=... status=), and
# pflogsumm counts a message's size only when its client=/uid= line
# comes before qmgr's.  The exporter 0.3.0 knows only the syslog name
# "postfix" (its line pattern is "postfix/SERVICE[PID]"), so the instance
# runs with syslog_name = postfix; pflogsumm is also run on the same log
# with Petrel's default name.  The exporter counts no local deliveries
# (it has no "local" service, on Postfix's own log neither), so local
# deliveries are compared through pflogsumm only.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr

EXPORTER=/usr/bin/prometheus-postfix-exporter
# Debian puts it in /usr/sbin, which an unprivileged PATH may lack.
PFLOGSUMM=$(command -v pflogsumm 2>/dev/null || echo /usr/sbin/pflogsumm)

need_tools() {
	command -v python3 >/dev/null 2>&1 || atf_skip "python3 is not installed"
	for p in pickup cleanup qmgr smtp local bounce smtpd sendmail postdrop; do
		[ -x $B/bin/$p ] || atf_skip "$p is not built"
	done
}

# The instance: local users alice and bob (directories under
# local_mail_root, listed for smtpd in etc/users), everything else to the
# sink at $1; no retries during the test.
log_instance() {
	mk_submit "myhostname = mx.example.test" "mydomain = example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "syslog_name = postfix" \
	    "local_mail_root = $PWD/mail" "mail_spool_directory = $PWD/spool" \
	    "alias_maps =" "alias_database =" \
	    "local_recipient_maps = texthash:$PWD/etc/users" \
	    "relayhost = [127.0.0.1]:$1" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 3600s" "minimal_backoff_time = 3600s" \
	    "maximal_backoff_time = 3600s" "smtp_connect_timeout = 5s" \
	    "inet_protocols = ipv4"
	mkdir -p mail/alice mail/bob spool
	printf 'alice x\nbob x\n' > etc/users
	sport=$(free_port)
	mcf "$sport inet n - n - - smtpd" \
	    "pickup unix-dgram n - n 60 1 pickup" \
	    "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 3600 1 qmgr" \
	    "smtp unix - - n - - smtp" \
	    "scache unix - - n - 1 scache" \
	    "local unix - n n - - local" \
	    "bounce unix - - n - 0 bounce"
	start_instance
}

# The SMTP part: three sessions (local mail, relayed mail, refused
# recipients).
smtp_workload() {
	cat > smtp.py <<'EOF'
import smtplib, sys
port = int(sys.argv[1])
def session():
    s = smtplib.SMTP('127.0.0.1', port, timeout=20)
    s.ehlo('client.example')
    return s
def msg(n):
    return 'Subject: %s\r\n\r\nbody of %s\r\n' % (n, n)
s = session()
for i, r in enumerate(['alice', 'alice', 'bob', 'bob']):
    s.sendmail('carol@client.example', [r + '@mx.example.test'], msg('l%d' % i))
s.quit()
s = session()
for i in range(1, 5):
    s.sendmail('relay@client.example', ['user%d@remote.example' % i], msg('r%d' % i))
s.sendmail('dave@client.example', ['tempfail@remote.example'], msg('t'))
s.sendmail('bob@mx.example.test', ['permfail@remote.example'], msg('p'))
s.quit()
s = session()
s.mail('eve@client.example')
for i in range(1, 4):
    code, _ = s.rcpt('nosuch%d@mx.example.test' % i)
    if code != 550:
        sys.exit('RCPT nosuch%d: %d, not 550' % (i, code))
s.quit()
EOF
	python3 smtp.py $sport > smtp.out 2>&1 || { cat smtp.out >&2; atf_fail "SMTP workload"; }
}

# sendmail FROM RCPT: one local submission.
submit_one() {
	printf 'Subject: s\n\nbody\n' | $SENDMAIL -f "$1" "$2" ||
	    atf_fail "sendmail -f $1 $2"
}

pickup_workload() {
	for r in alice alice alice; do submit_one pick@mx.example.test $r@mx.example.test; done
	submit_one pick@mx.example.test far@remote.example
	submit_one pick@mx.example.test tempfail@remote.example
	submit_one bob@mx.example.test permfail@remote.example
}

# Everything settled: 14 sent, 2 deferred, 2 bounced, 16 removed.
settled() {
	[ "$(grep -c 'status=sent' maillog)" -ge 14 ] &&
	[ "$(grep -c 'status=deferred' maillog)" -ge 2 ] &&
	[ "$(grep -c 'status=bounced' maillog)" -ge 2 ] &&
	[ "$(grep -c ': removed$' maillog)" -ge 16 ]
}

# pflogsumm's grand total for WHAT ("received", "delivered", ...).
total() {
	awk -v w="$2" '$0 ~ "^ +[0-9]+[km]? +" w "( |$)" { print $1; exit }' "$1"
}

# is FILE WHAT N: pflogsumm's total WHAT in FILE is N.
is() {
	_got=$(total "$1" "$2")
	[ "$_got" = "$3" ] || { cat "$1" >&2; atf_fail "pflogsumm: $_got $2, want $3"; }
}

# in_section FILE TITLE COUNT WHO: the line "COUNT ... WHO" in section TITLE.
in_section() {
	awk -v t="$2" -v n="$3" -v w="$4" '
	    $0 == t { on = 1; next }
	    on && /^[A-Z]/ { on = 0 }
	    on && $1 == n && $NF == w { found = 1 }
	    END { exit !found }' "$1" ||
	    { cat "$1" >&2; atf_fail "pflogsumm: no '$3 ... $4' under '$2'"; }
}

atf_test_case pflogsumm cleanup
pflogsumm_head() {
	atf_set descr "pflogsumm counts Petrel's log exactly: received, delivered, deferred, bounced, rejected, bytes, senders and recipients"
	atf_set require.user unprivileged
	atf_set timeout 120
}
pflogsumm_body() {
	[ -x "$PFLOGSUMM" ] ||
	    atf_skip "pflogsumm is not installed (tools/install-deps installs it)"
	need_tools
	start_sink sink
	log_instance $port
	smtp_workload
	pickup_workload
	WAIT_MAX=200 wait_for settled || { cat maillog >&2; atf_fail "the workload did not settle"; }
	stop_instance

	$PFLOGSUMM --syslog-name=postfix maillog > sum.txt 2> sum.err ||
	    { cat sum.err >&2; atf_fail "pflogsumm failed"; }
	is sum.txt received 16
	is sum.txt delivered 14
	is sum.txt forwarded 0
	is sum.txt deferred 2
	grep -Eq '^ +2 +deferred +[(]2 +deferrals[)]$' sum.txt ||
	    { cat sum.txt >&2; atf_fail "pflogsumm: not 2 deferrals"; }
	is sum.txt bounced 2
	is sum.txt rejected 3
	# Every received message's size counted: its client=/uid= line came
	# before qmgr's from=, size= line.  The truth: qmgr's sizes of the
	# messages smtpd and pickup logged.
	awk '/(smtpd|pickup)\[[0-9]+\]: [0-9A-Z]+: (client|uid)=/ { sub(":", "", $6); r[$6] = 1 }
	    /qmgr\[[0-9]+\]: [0-9A-Z]+: from=<.*>, size=/ {
		id = $6; sub(":", "", id); s = $0; sub(/.*, size=/, "", s); sub(/,.*/, "", s)
		if (id in r) sum += s }
	    END { print sum }' maillog > bytes.want
	bytes=$(total sum.txt "bytes received")
	[ "$bytes" = "$(cat bytes.want)" ] ||
	    { cat sum.txt >&2; atf_fail "bytes received $bytes, want $(cat bytes.want)"; }
	in_section sum.txt "Senders by message count" 5 pick@mx.example.test
	in_section sum.txt "Senders by message count" 4 relay@client.example
	in_section sum.txt "Senders by message count" 4 carol@client.example
	in_section sum.txt "Senders by message count" 2 bob@mx.example.test
	in_section sum.txt "Senders by message count" 1 dave@client.example
	in_section sum.txt "Recipients by message count" 5 alice@mx.example.test
	in_section sum.txt "Recipients by message count" 4 bob@mx.example.test
	in_section sum.txt "Recipients by message count" 1 far@remote.example

	# The same log under Petrel's default syslog name.
	sed 's/ postfix\// petrel\//' maillog > maillog.petrel
	$PFLOGSUMM --syslog-name=petrel maillog.petrel > sum2.txt 2>&1 ||
	    atf_fail "pflogsumm --syslog-name=petrel failed"
	is sum2.txt received 16
	is sum2.txt delivered 14
	assert_log_clean
	finish
}
pflogsumm_cleanup() {
	stop_instance
	stop_all
}

# metric NAME: its value in metrics.txt (labels included in NAME).
metric() {
	awk -v m="$1" '$1 == m { print $2; found = 1 } END { if (!found) print "none" }' metrics.txt
}

# scrape: /metrics of the exporter into metrics.txt.
scrape() {
	python3 - "$eport" > metrics.txt 2>/dev/null <<'EOF'
import sys, urllib.request
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
sys.stdout.write(opener.open('http://127.0.0.1:%s/metrics' % sys.argv[1], timeout=5).read().decode())
EOF
}

# The exporter's counters, as they must be once it read the whole log.
# smtp: 9 lines (5 sent, 2 deferred, 2 bounced); the exporter 0.3.0 puts
# the four parts of delays=a/b/c/d of a line into one series (stage="",
# its own bug, the same on Postfix's log), so it counts 4 per line.
WANT='postfix_smtpd_connects_total 3
postfix_smtpd_disconnects_total 3
postfix_smtpd_messages_processed_total{sasl_method=""} 10
postfix_smtpd_messages_rejected_total{code="550"} 3
postfix_qmgr_messages_inserted_receipients_count 18
postfix_qmgr_messages_removed_total 16
postfix_cleanup_messages_processed_total 18
postfix_smtp_delivery_delay_seconds_count{stage=""} 36
postfix_smtp_status_deferred 2'

counters_right() {
	scrape || return 1
	echo "$WANT" | while read -r name value; do
		[ "$(metric "$name")" = "$value" ] || return 1
	done
}

atf_test_case exporter cleanup
exporter_head() {
	atf_set descr "prometheus-postfix-exporter counts Petrel's log exactly: smtpd connects, messages and rejects, qmgr inserts and removals, cleanup, smtp deliveries and deferrals"
	atf_set require.user unprivileged
	atf_set timeout 120
}
exporter_body() {
	[ -x $EXPORTER ] ||
	    atf_skip "prometheus-postfix-exporter is not installed (tools/install-deps installs it)"
	need_tools
	start_sink sink
	# It reads the log from its end as it grows: started first, on the
	# file the instance will write to; it listens where we say (it
	# cannot take port 0).
	: > maillog
	eport=$(free_port)
	spawn exporter $EXPORTER --web.listen-address=127.0.0.1:$eport \
	    --postfix.logfile_path=$PWD/maillog \
	    --postfix.showq_path=$PWD/no-showq
	WAIT_MAX=100 wait_for scrape ||
	    { cat exporter.err >&2; atf_fail "the exporter does not answer"; }
	log_instance $port
	smtp_workload
	pickup_workload
	WAIT_MAX=200 wait_for settled || { cat maillog >&2; atf_fail "the workload did not settle"; }
	stop_instance
	if ! WAIT_MAX=100 wait_for counters_right; then
		echo "$WANT" | while read -r name value; do
			echo "$name: $(metric "$name"), want $value"
		done >&2
		atf_fail "the exporter's counters differ from the truth"
	fi
	assert_log_clean
	finish
}
exporter_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case pflogsumm
	atf_add_test_case exporter
}
