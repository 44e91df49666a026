#! /usr/bin/env atf-sh
# rspamd as a spam-filtering milter: Debian's rspamd with its proxy
# worker in milter mode (self_scan, so no normal worker), a private
# configuration (local.d and override.d in the work directory over the
# package's /etc/rspamd, which is only read), run, database and log
# directories in the work directory, DNS from the project's fakedns, no
# redis.  A GTUBE message is rejected at the end of data with rspamd's
# reply; a clean message in the same session is delivered.  If rspamd
# cannot run here the test skips with its error.  doc/milter-setup.md
# shows this
# configuration.  MILTER_MTA=postfix runs it against Debian's Postfix
# (milter.subr).

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
SRCDIR=@SRCDIR@
. @SRCDIR@/tests/system/milter.subr

GTUBE='XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X'

# start_rspamd: rspamd in the foreground, its milter socket at
# $PWD/rspamd/run/proxy.sock; sets $milter.  rspamd compiles its rules
# at start (up to half a minute on a busy machine): the wait is bounded
# at 120 s.
start_rspamd() {
	command -v rspamd >/dev/null 2>&1 ||
	    atf_skip "rspamd is not installed (tools/install-deps)"
	[ -f /etc/rspamd/rspamd.conf ] ||
	    atf_skip "rspamd's configuration /etc/rspamd/rspamd.conf is missing"
	[ ${#PWD} -lt 80 ] || atf_skip "work directory path too long for UNIX sockets"
	R=$PWD/rspamd
	mkdir -p $R/local.d $R/override.d $R/run $R/db $R/log
	# every DNS question goes to fakedns, which knows nothing
	: > zone
	start_dns dns
	cat > $R/local.d/options.inc <<EOF
dns {
  nameserver = ["127.0.0.1:$port"];
  timeout = 1s;
  retransmits = 1;
}
EOF
	cat > $R/local.d/logging.inc <<EOF
type = "file";
filename = "$R/log/rspamd.log";
level = "info";
EOF
	# The proxy scans by itself; the normal and controller workers
	# (fixed TCP ports in the package's rspamd.conf) are off.
	cat > $R/override.d/worker-proxy.inc <<EOF
bind_socket = "$R/run/proxy.sock mode=0666";
milter = yes;
timeout = 120s;
upstream "local" {
  default = yes;
  self_scan = yes;
}
count = 1;
max_retries = 5;
discard_on_reject = false;
quarantine_on_reject = false;
spam_header = "X-Spam";
reject_message = "Spam message rejected";
EOF
	for w in normal controller; do
		printf 'enabled = false;\nbind_socket = "%s";\n' \
		    "$R/run/$w.sock" > $R/override.d/worker-$w.inc
	done
	# As root rspamd wants -u/-g or -i; the test's files are ours.
	_rs_opt=
	[ "$(id -u)" = 0 ] && _rs_opt=-i
	spawn rspamd rspamd -f $_rs_opt -c /etc/rspamd/rspamd.conf \
	    --var=LOCAL_CONFDIR=$R --var=RUNDIR=$R/run --var=DBDIR=$R/db \
	    --var=LOGDIR=$R/log
	WAIT_MAX=1200 wait_for _rspamd_up
	if ! test -S $R/run/proxy.sock; then
		cat rspamd.err >&2
		tail -n 20 $R/log/rspamd.log >&2
		if ! kill -0 "$(cat rspamd.pid)" 2>/dev/null; then
			atf_skip "rspamd does not run here: $(grep -i -m1 'error\|fatal\|cannot' rspamd.err $R/log/rspamd.log)"
		fi
		atf_fail "rspamd made no milter socket in 120 s"
	fi
	milter=unix:$R/run/proxy.sock
}

_rspamd_up() {
	test -S $R/run/proxy.sock || ! kill -0 "$(cat rspamd.pid)"
}

# rspamd's workers are its children; TERM makes it wait for them for up
# to 16 s: they are all killed at once instead.
stop_rspamd() {
	[ -f rspamd.pid ] || return 0
	_rp=$(cat rspamd.pid)
	kill -9 $_rp $(pgrep -P $_rp 2>/dev/null) 2>/dev/null
	rm -f rspamd.pid
}

atf_test_case gtube cleanup
gtube_head() {
	atf_set descr "rspamd in milter mode as smtpd_milters: a GTUBE message is refused after the final dot with rspamd's 554 5.7.1 reply and not delivered; a clean message in the same session is delivered"
	atf_set require.user unprivileged
	atf_set timeout 300
}
gtube_body() {
	need_bash
	start_rspamd
	setup "smtpd_milters = $milter" "milter_default_action = tempfail" \
	    "milter_content_timeout = 60s"
	{
		echo "EHLO client.test"
		echo "MAIL FROM:<sender@example.com>"
		echo "RCPT TO:<rcpt@example.net>"
		echo "DATA"
		echo "From: sender@example.com"
		echo "To: rcpt@example.net"
		echo "Subject: spam"
		echo "Message-ID: <gtube@example.com>"
		echo "Date: Thu, 26 Nov 2026 12:00:00 +0000"
		echo ""
		echo "$GTUBE"
		echo "."
		echo "MAIL FROM:<sender@example.com>"
		echo "RCPT TO:<rcpt@example.net>"
		echo "DATA"
		echo "From: sender@example.com"
		echo "To: rcpt@example.net"
		echo "Subject: lunch"
		echo "Message-ID: <clean@example.com>"
		echo "Date: Thu, 26 Nov 2026 12:00:00 +0000"
		echo ""
		echo "Shall we meet at noon?"
		echo "."
		echo "QUIT"
	} > s.in
	CHAT_TIMEOUT=60 chat s
	expect_reply s . '^554 5\.7\.1 Gtube pattern$'
	# the second dot: the clean message
	tail -n 3 s.out | grep -q '^250 2\.0\.0 Ok: queued as ' ||
	    { cat s.out >&2; atf_fail "clean message not accepted"; }
	wait_sink 1
	grep -q '^Subject: lunch' $(sink_msgs) || atf_fail "the wrong message was delivered"
	! grep -q 'GTUBE' $(sink_msgs) || atf_fail "GTUBE delivered"
	grep -q 'GTUBE' rspamd/log/rspamd.log || atf_fail "rspamd log does not name GTUBE"
	mta_log_clean
}
gtube_cleanup() {
	stop_rspamd
	common_cleanup
}

atf_init_test_cases() {
	atf_add_test_case gtube
}
