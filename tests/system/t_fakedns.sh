#! /usr/bin/env atf-sh
# Tests of fakedns through dnsq, i.e. through the system resolver library
# pointed at 127.0.0.1:PORT (the way smtp will be pointed at it).  Every
# server listens on 127.0.0.1 (port 0, -P portfile) and is killed in
# cleanup.

BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr

write_zone() {
	cat > zone <<'EOF'
# A test zone.
example.com MX 10 mx1.example.com
example.com MX 20 mx2.example.com.
mx1.example.com A 127.0.0.1
mx1.example.com AAAA ::1
mx2.example.com 60 A 127.0.0.2     # with a TTL
nomx.example.com A 127.0.0.2
nullmx.example.com MX 0 .
broken.example.com SERVFAIL
refused.example.com REFUSED
gone.example.com NXDOMAIN
slow.example.com DROP
alias.example.com CNAME mx1.example.com
txt.example.com TXT "v=spf1 -all"
host.deep.example.org A 127.0.0.9
EOF
}

atf_test_case answers cleanup
answers_head() {
	atf_set descr "MX (with additional addresses), A, AAAA, CNAME, TXT," \
		"null MX through the resolver library"
}
answers_body() {
	write_zone
	start_dns d
	atf_check -o inline:"NOERROR\nexample.com MX 10 mx1.example.com\nexample.com MX 20 mx2.example.com\nadditional mx1.example.com A 127.0.0.1\nadditional mx1.example.com AAAA ::1\nadditional mx2.example.com A 127.0.0.2\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t MX example.com
	# Names match without regard to case; the answer keeps the question's.
	atf_check -o inline:"NOERROR\nMX1.Example.COM A 127.0.0.1\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t A MX1.Example.COM.
	atf_check -o inline:"NOERROR\nmx1.example.com AAAA ::1\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t AAAA mx1.example.com
	atf_check -o inline:"NOERROR\nnullmx.example.com MX 0 .\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t MX nullmx.example.com
	atf_check -o inline:"NOERROR\nalias.example.com CNAME mx1.example.com\nmx1.example.com A 127.0.0.1\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t A alias.example.com
	atf_check -o inline:"NOERROR\ntxt.example.com TXT \"v=spf1 -all\"\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t TXT txt.example.com
	grep_wait d.err "udp 127\.0\.0\.1:[0-9]+: id=[0-9]+ example\.com/MX -> NOERROR an=2 ar=3"
	finish
}
answers_cleanup() { stop_all; }

atf_test_case negative cleanup
negative_head() {
	atf_set descr "NXDOMAIN, NODATA (other type, empty non-terminal)," \
		"SERVFAIL, REFUSED, explicit NXDOMAIN, and no answer (DROP)"
}
negative_body() {
	write_zone
	start_dns d
	atf_check -s exit:1 -o inline:"NXDOMAIN\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t A nosuch.example.com
	atf_check -s exit:1 -o inline:"NODATA\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t MX nomx.example.com
	atf_check -s exit:1 -o inline:"NODATA\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t A deep.example.org
	atf_check -s exit:1 -o inline:"SERVFAIL\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t MX broken.example.com
	atf_check -s exit:1 -o inline:"REFUSED\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t MX refused.example.com
	atf_check -s exit:1 -o inline:"NXDOMAIN\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t MX gone.example.com
	atf_check -s exit:1 -o inline:"TIMEOUT\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -w 1 -t A slow.example.com
	grep_wait d.err "broken\.example\.com/MX -> SERVFAIL"
	grep_wait d.err "slow\.example\.com/A -> DROP"
	finish
}
negative_cleanup() { stop_all; }

atf_test_case tcp_and_truncation cleanup
tcp_and_truncation_head() {
	atf_set descr "Queries over TCP; a UDP answer over 512 bytes is" \
		"truncated (TC) and the resolver retries over TCP"
}
tcp_and_truncation_body() {
	write_zone
	i=1
	while [ $i -le 60 ]; do
		echo "many.example.com A 127.0.1.$i"
		i=$((i + 1))
	done >> zone
	start_dns d
	atf_check -o inline:"NOERROR\nmx1.example.com A 127.0.0.1\n" \
		"$DNSQ" -T -s 127.0.0.1 -p $port -t A mx1.example.com
	grep_wait d.err "tcp 127\.0\.0\.1:[0-9]+: id=[0-9]+ mx1\.example\.com/A -> NOERROR"
	"$DNSQ" -s 127.0.0.1 -p $port -t A many.example.com > many.out
	atf_check_equal 0 $?
	atf_check -o inline:"60\n" grep -c "^many.example.com A 127\.0\.1\." many.out
	grep_wait d.err "udp .*many\.example\.com/A -> NOERROR .*\(truncated\)"
	grep_wait d.err "tcp .*many\.example\.com/A -> NOERROR an=60"
	finish
}
tcp_and_truncation_cleanup() { stop_all; }

atf_test_case garbage cleanup
garbage_head() {
	atf_set descr "Garbage datagrams and malformed queries get FORMERR or" \
		"are ignored; the server keeps answering"
}
garbage_body() {
	command -v bash > /dev/null || atf_skip "bash is needed for /dev/udp"
	command -v od > /dev/null || atf_skip "od is needed"
	write_zone
	start_dns d
	cat > send.bash <<'EOF'
# send.bash PORT: malformed datagrams, one at a time.
p=$1
send() { printf "$1" > /dev/udp/127.0.0.1/$p; }
send 'x'
send '\x12\x34\x01'
send '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00'
send '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x3fabc'
send '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01\x00\x01'
send '\x12\x34\x01\x00\x00\x02\x00\x00\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01'
send '\x12\x34\x81\x80\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01'
send '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x00\x00\x01'
send '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03a\x00b\x00\x00\x01\x00\x01'
send '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x03'
send '\x12\x34\x29\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01a\x00\x00\x01\x00\x01'
head -c 3000 /dev/urandom > /dev/udp/127.0.0.1/$p
EOF
	atf_check bash send.bash $port
	for i in 1 2 3 4 5 6 7 8 9 10; do
		head -c 400 /dev/urandom > noise.bin
		bash -c 'cat noise.bin > /dev/udp/127.0.0.1/$1' _ $port
	done
	atf_check -o inline:"NOERROR\nmx1.example.com A 127.0.0.1\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t A mx1.example.com
	grep_wait d.err "ignored 1 bytes that are not a query"
	grep_wait d.err "ignored 3 bytes"
	grep_wait d.err "ignored 19 bytes"
	grep_wait d.err "id=4660 -/TYPE0 -> FORMERR"
	grep_wait d.err "id=4660 a\?b/A -> NXDOMAIN"
	grep_wait d.err "id=4660 a/A -> REFUSED"
	grep_wait d.err "id=4660 -/TYPE0 -> NOTIMP"
	atf_check kill -0 "$(cat d.pid)"

	# The reply to a malformed query: FORMERR, same id, no question.
	cat > ask.bash <<'EOF'
exec 3<>/dev/udp/127.0.0.1/$1
printf '\x43\x21\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x3fabc' >&3
timeout 5 head -c 6 <&3 | od -An -tx1 | tr -s ' \n' '  '
EOF
	atf_check -o inline:" 43 21 85 01 00 00 " bash ask.bash $port
	finish
}
garbage_cleanup() { stop_all; }

atf_test_case reload_and_exit cleanup
reload_and_exit_head() {
	atf_set descr "SIGHUP reloads the zone (a bad one is refused and the" \
		"old kept), SIGTERM ends the server"
}
reload_and_exit_body() {
	write_zone
	start_dns d
	atf_check -s exit:1 -o inline:"NXDOMAIN\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t A new.example.com
	echo "new.example.com A 127.0.0.42" >> zone
	kill -HUP "$(cat d.pid)"
	grep_wait d.err "reloaded zone: 15 records"
	atf_check -o inline:"NOERROR\nnew.example.com A 127.0.0.42\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t A new.example.com
	echo "bad.example.com A not-an-address" >> zone
	kill -HUP "$(cat d.pid)"
	grep_wait d.err "keeping the old zone"
	atf_check -o match:"zone:17: A wants one IPv4 address" cat d.err
	atf_check -o inline:"NOERROR\nnew.example.com A 127.0.0.42\n" \
		"$DNSQ" -s 127.0.0.1 -p $port -t A new.example.com
	pid=$(cat d.pid)
	kill -TERM $pid
	wait_gone $pid fakedns
	wait $pid
	atf_check_equal 0 $?
	rm d.pid
	atf_check -o match:"terminating" cat d.err
	finish
}
reload_and_exit_cleanup() { stop_all; }

atf_test_case bad_setup
bad_setup_head() {
	atf_set descr "Bad zone files and addresses are refused clearly"
}
bad_setup_body() {
	printf 'example.com MX ten mx.example.com\n' > z1
	atf_check -s exit:1 -e match:"z1:1: MX wants 'PREFERENCE HOST'" \
		"$FAKEDNS" -z z1 127.0.0.1:0
	printf '# ok\nbad..name A 127.0.0.1\n' > z2
	atf_check -s exit:1 -e match:"z2:2: bad name" "$FAKEDNS" -z z2 127.0.0.1:0
	printf 'x.example.com SOA foo\n' > z3
	atf_check -s exit:1 -e match:"z3:1: unknown type 'SOA'" "$FAKEDNS" -z z3 127.0.0.1:0
	printf 'x.example.com SERVFAIL 1.2.3.4\n' > z4
	atf_check -s exit:1 -e match:"takes no data" "$FAKEDNS" -z z4 127.0.0.1:0
	atf_check -s exit:1 -e match:"open nosuch" "$FAKEDNS" -z nosuch 127.0.0.1:0
	: > z5
	atf_check -s exit:1 -e match:"refusing to listen on a non-loopback" \
		"$FAKEDNS" -z z5 0.0.0.0:0
	atf_check -s exit:1 -e match:"bad address" "$FAKEDNS" -z z5 ::1:0
	atf_check -s exit:1 -e match:"bad address" "$FAKEDNS" -z z5 localhost:0
	atf_check -s exit:2 -e match:"usage" "$FAKEDNS" 127.0.0.1:0
	atf_check -s exit:1 -e match:"-s wants an IPv4 address" \
		"$DNSQ" -s localhost -p 53 example.com
	atf_check -s exit:1 -e match:"bad type" "$DNSQ" -s 127.0.0.1 -t BOGUS x
}

atf_init_test_cases() {
	atf_add_test_case answers
	atf_add_test_case negative
	atf_add_test_case tcp_and_truncation
	atf_add_test_case garbage
	atf_add_test_case reload_and_exit
	atf_add_test_case bad_setup
}
