#! /usr/bin/env atf-sh
# Logging to syslog: without maillog_file every program logs through
# syslog(3) with the facility of syslog_facility and the tag
# syslog_name/PROGRAM.  The test gives the instance a /dev/log of its own
# (a mount namespace in which /dev is a directory of the test's, holding
# a datagram socket the test reads and the few device nodes the programs
# open), so nothing reaches the machine's syslog.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
. @SRCDIR@/tests/system/submit.subr

# syslog_reader: receives datagrams on dev/log into syslog.out, one a
# line, for at most 60 s.
syslog_reader() {
	mkdir -p dev
	cat > reader.py <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("dev/log")
s.settimeout(1)
out = open("syslog.out", "ab", buffering=0)
end = time.time() + 60
while time.time() < end:
    try:
        d = s.recv(65536)
    except socket.timeout:
        continue
    out.write(d.rstrip(b"\n\0") + b"\n")
PY
	/usr/bin/python3 reader.py > reader.err 2>&1 &
	echo $! > reader.pid
	wait_for test -S dev/log || atf_fail "no dev/log"
	chmod 0666 dev/log
}

# in_ns CMD...: CMD in a mount namespace whose /dev is ./dev (with
# null, zero, random, urandom bound from the real /dev).
in_ns() {
	unshare --mount --propagation private sh -ec '
		for n in null zero random urandom; do
			: > dev/$n
			mount --bind /dev/$n dev/$n
		done
		mount --bind dev /dev
		exec "$@"' in_ns "$@"
}

atf_test_case facility cleanup
facility_head() {
	atf_set descr "syslog_facility and syslog_name: master's and the daemons' lines arrive with the facility's priority (local3.info = <158>) and the tag ptest/PROGRAM"
	atf_set require.user root
	atf_set require.progs unshare
	atf_set timeout 60
}
facility_body() {
	[ -x /usr/bin/python3 ] || atf_skip "/usr/bin/python3 is not installed"
	syslog_reader
	mk_submit "maillog_file =" "syslog_facility = local3" \
	    "syslog_name = ptest" "default_transport = discard" \
	    "mydestination =" "queue_run_delay = 3600s"
	mcf "pickup unix n - n 1 1 pickup" \
	    "cleanup unix n - n - 0 cleanup" \
	    "qmgr unix-dgram n - n 3600 1 qmgr" \
	    "discard unix - - n - - discard"
	jail_mcf
	in_ns $PETREL -c $PWD/etc start > start.out 2>&1 ||
	    { cat start.out; atf_fail "cannot start in the namespace"; }
	printf 'Subject: syslog\n\nbody\n' |
	    $SENDMAIL -f alice@example.org bob@example.com ||
	    atf_fail sendmail
	wait_for lines_ge 1 'status=sent' syslog.out ||
	    { cat syslog.out; atf_fail "no delivery line in the syslog stream"; }
	# <PRI> = facility * 8 + severity: local3 (19) info (6) = 158.
	atf_check -s exit:0 -o ignore grep '^<158>.* ptest/master\[[0-9]*\]: daemon started' syslog.out
	atf_check -s exit:0 -o ignore grep '^<158>.* ptest/qmgr\[[0-9]*\]: .*from=<alice@example.org>' syslog.out
	atf_check -s exit:0 -o ignore grep '^<158>.* ptest/discard\[[0-9]*\]: .*to=<bob@example.com>.*status=sent' syslog.out
	# Nothing with the default facility (mail = 2: <18> .. <23>).
	atf_check -s exit:1 grep '^<\(1[6-9]\|2[0-3]\)>' syslog.out
	[ ! -e maillog ] || atf_fail "a maillog file was written"
}
facility_cleanup() {
	stop_instance
	[ -f reader.pid ] && kill "$(cat reader.pid)" 2>/dev/null
}

atf_init_test_cases() {
	atf_add_test_case facility
}
