#! /usr/bin/env atf-sh
# postconf as a user runs it: listing, single names, editing main.cf,
# master.cf entries, error messages and exit statuses.

POSTCONF=@BUILDDIR@/bin/postconf
SRCDIR=@SRCDIR@

# A configuration directory "etc" with the given main.cf text.
mkconf() {
	mkdir -p etc
	printf '%s' "$1" > etc/main.cf
}

atf_test_case defaults
defaults_head() {
	atf_set descr "postconf -d lists every parameter with its default, sorted"
}
defaults_body() {
	atf_check -s exit:0 -o save:d.out -e empty $POSTCONF -d
	for line in 'line_length_limit = 2048' 'message_size_limit = 10240000' \
	    'default_process_limit = 100' 'service_throttle_time = 60s' \
	    'max_idle = 100s' 'max_use = 100' 'myorigin = $myhostname' \
	    'mydestination = $myhostname, localhost.$mydomain, localhost' \
	    'default_destination_concurrency_limit = 20' \
	    'local_destination_concurrency_limit = 2' \
	    'default_delivery_slot_cost = 5' 'backoff_function = postfix' \
	    'qmgr_message_active_limit = 20000' 'queue_run_delay = 300s' \
	    'maximal_queue_lifetime = 5d' 'relayhost =' \
	    'smtpd_banner = $myhostname ESMTP $mail_name'; do
		grep -qxF "$line" d.out || atf_fail "missing: $line"
	done
	# sorted by name, one line per parameter of the table
	cut -d' ' -f1 d.out > names
	LC_ALL=C sort names > sorted
	atf_check -s exit:0 cmp -s names sorted
	atf_check -s exit:0 -o save:table $POSTCONF -T
	test "$(wc -l < d.out)" -eq "$(wc -l < table)" || atf_fail "count differs from -T"
	test "$(wc -l < d.out)" -gt 150 || atf_fail "too few parameters"
	# the host name default is computed, not empty
	atf_check -s exit:0 -o not-match:'^$' $POSTCONF -dh myhostname
	# -d ignores main.cf
	mkconf 'max_use = 7
'
	atf_check -s exit:0 -o inline:'max_use = 100\n' $POSTCONF -c etc -d max_use
}

atf_test_case effective_and_set
effective_and_set_head() {
	atf_set descr "postconf shows effective values; -n only what main.cf sets"
}
effective_and_set_body() {
	mkconf '# comment
myhostname = mx.example.com
max_use = 50
mynetworks = 127.0.0.0/8
    192.0.2.0/24
smtp_destination_concurrency_limit = 4
'
	atf_check -s exit:0 -o save:all.out -e empty $POSTCONF -c etc
	grep -qxF 'max_use = 50' all.out || atf_fail "effective max_use"
	grep -qxF 'max_idle = 100s' all.out || atf_fail "default max_idle"
	grep -qxF 'smtp_destination_concurrency_limit = 4' all.out || atf_fail "per-transport"
	atf_check -s exit:0 -e empty -o inline:'max_use = 50
myhostname = mx.example.com
mynetworks = 127.0.0.0/8 192.0.2.0/24
smtp_destination_concurrency_limit = 4
' $POSTCONF -c etc -n
	# names, -h, -x
	atf_check -s exit:0 -o inline:'myorigin = $myhostname\nmax_use = 50\n' \
	    $POSTCONF -c etc myorigin max_use
	atf_check -s exit:0 -o inline:'mx.example.com\n' $POSTCONF -c etc -h -x myorigin
	atf_check -s exit:0 -o inline:'example.com\n' $POSTCONF -c etc -h mydomain
	atf_check -s exit:0 \
	    -o inline:'mydestination = mx.example.com, localhost.example.com, localhost\n' \
	    $POSTCONF -c etc -x mydestination
	atf_check -s exit:0 -o inline:'max_use = 100\n' $POSTCONF -c etc -d max_use
	# per-transport names: any service, falling back to default_X
	atf_check -s exit:0 \
	    -o inline:'relay_destination_concurrency_limit = $default_destination_concurrency_limit\n' \
	    $POSTCONF -c etc relay_destination_concurrency_limit
	atf_check -s exit:0 -o inline:'20\n' \
	    $POSTCONF -c etc -hx relay_destination_concurrency_limit
}

atf_test_case unknown_name
unknown_name_head() {
	atf_set descr "an unknown parameter name is an error, exit status 1"
}
unknown_name_body() {
	mkconf 'max_use = 50
'
	atf_check -s exit:1 -o empty -e match:'error: unknown parameter: no_such_thing' \
	    $POSTCONF -c etc no_such_thing
	# the known ones are still shown
	atf_check -s exit:1 -o inline:'max_use = 50\n' -e match:'unknown parameter: bogus' \
	    $POSTCONF -c etc max_use bogus
	atf_check -s exit:1 -e match:'unknown parameter: bogus' $POSTCONF -d bogus
	atf_check -s exit:1 -e match:usage $POSTCONF -Q
}

atf_test_case config_directory
config_directory_head() {
	atf_set descr "-c and MAIL_CONFIG choose the configuration directory"
}
config_directory_body() {
	mkconf 'max_use = 11
'
	mkdir other
	echo 'max_use = 22' > other/main.cf
	atf_check -s exit:0 -o inline:'11\n' env MAIL_CONFIG=etc $POSTCONF -h max_use
	atf_check -s exit:0 -o inline:'22\n' env MAIL_CONFIG=etc $POSTCONF -c other -h max_use
	atf_check -s exit:0 -o inline:'other\n' $POSTCONF -c other -h config_directory
	atf_check -s exit:1 -e match:'nowhere/main.cf: cannot read: No such file' \
	    -o ignore $POSTCONF -c nowhere
}

atf_test_case edit_round_trip
edit_round_trip_head() {
	atf_set descr "postconf -e replaces, appends, keeps comments and order"
}
edit_round_trip_body() {
	mkconf '# Top comment
myhostname = old.example.com

# about mynetworks
mynetworks = 127.0.0.0/8,
    10.0.0.0/8
    # inside the entry
    192.0.2.0/24
relayhost = [a]:25
queue_run_delay = 5m
relayhost = [b]:25
# end
'
	chmod 640 etc/main.cf
	atf_check -s exit:0 -o empty -e empty $POSTCONF -c etc -e \
	    myhostname=new.example.com 'mynetworks = 127.0.0.0/8' \
	    'relayhost=[c]:587' maillog_file=/var/log/petrel.log
	cat > expected <<'EOF'
# Top comment
myhostname = new.example.com

# about mynetworks
mynetworks = 127.0.0.0/8
    # inside the entry
relayhost = [c]:587
queue_run_delay = 5m
# end
maillog_file = /var/log/petrel.log
EOF
	# relayhost: the first entry replaced, the later one (which would
	# have won) removed
	atf_check -s exit:0 -o file:expected cat etc/main.cf
	atf_check -s exit:0 -o inline:'640\n' stat -c %a etc/main.cf
	# what was written reads back
	atf_check -s exit:0 -o inline:'new.example.com\n127.0.0.0/8\n[c]:587\n/var/log/petrel.log\n' \
	    $POSTCONF -c etc -h myhostname mynetworks relayhost maillog_file
	# "postconf name=value" is -e; an empty value is fine
	atf_check -s exit:0 $POSTCONF -c etc relayhost=
	atf_check -s exit:0 -o inline:'relayhost =\n' $POSTCONF -c etc -n relayhost
	# no temporary files left over
	atf_check -s exit:0 -o inline:'main.cf\n' ls etc
	# a main.cf that is a symbolic link is edited where it points
	mkdir linked shared
	echo 'max_use = 1' > shared/main.cf
	ln -s ../shared/main.cf linked/main.cf
	atf_check -s exit:0 $POSTCONF -c linked -e max_use=2
	atf_check -s exit:0 test -L linked/main.cf
	atf_check -s exit:0 -o inline:'max_use = 2\n' cat shared/main.cf
	# a missing main.cf is created
	mkdir new
	atf_check -s exit:0 $POSTCONF -c new -e max_use=5
	atf_check -s exit:0 -o inline:'max_use = 5\n' cat new/main.cf
}

atf_test_case edit_refuses_bad_input
edit_refuses_bad_input_head() {
	atf_set descr "postconf -e checks values and writes nothing on error"
}
edit_refuses_bad_input_body() {
	mkconf 'max_use = 50
'
	cp etc/main.cf before
	atf_check -s exit:1 -e match:"bad time value 'xyz' for parameter queue_run_delay" \
	    $POSTCONF -c etc -e max_use=60 queue_run_delay=xyz
	atf_check -s exit:1 -e match:"bad parameter name 'bad name'" \
	    $POSTCONF -c etc -e 'bad name=1'
	atf_check -s exit:1 -e match:'expected name=value' $POSTCONF -c etc -e max_use
	atf_check -s exit:0 cmp -s before etc/main.cf
	# unknown names are written, with a warning
	atf_check -s exit:0 -e match:'unknown parameter my_thing' \
	    $POSTCONF -c etc -e my_thing=1
	atf_check -s exit:0 -o match:'^my_thing = 1$' cat etc/main.cf
	# values with $name are checked when loaded
	atf_check -s exit:0 $POSTCONF -c etc -e 'queue_run_delay=$my_thing'
	atf_check -s exit:0 -o inline:'1\n' $POSTCONF -c etc -hx queue_run_delay
}

atf_test_case remove
remove_head() {
	atf_set descr "postconf -X removes parameters, continuation lines included"
}
remove_body() {
	mkconf '# keep
mynetworks = 127.0.0.0/8,
    10.0.0.0/8
max_use = 50
# keep too
max_use = 60
'
	atf_check -s exit:0 -e empty $POSTCONF -c etc -X mynetworks max_use not_there
	atf_check -s exit:0 -o inline:'# keep\n# keep too\n' cat etc/main.cf
	atf_check -s exit:0 -o inline:'max_use = 100\n' $POSTCONF -c etc max_use
	atf_check -s exit:1 -e match:usage $POSTCONF -c etc -X
}

atf_test_case master_entries
master_entries_head() {
	atf_set descr "postconf -M prints master.cf entries, one normalised line each"
}
master_entries_body() {
	mkconf ''
	cat > etc/master.cf <<'EOF'
# comment
smtp      inet  n       -       n       -       -       smtpd
  -o smtpd_timeout=60s
     -o { smtpd_banner = $myhostname ready }
qmgr      unix  n       -       n       300?    1       qmgr
smtp      unix  -       -       n       -       -       smtp
EOF
	atf_check -s exit:0 -e empty -o save:m.out $POSTCONF -c etc -M
	test "$(wc -l < m.out)" -eq 3 || atf_fail "three entries expected"
	atf_check -s exit:0 -o match:'^smtp +inet +n +- +n +- +- +smtpd -o smtpd_timeout=60s -o \{ smtpd_banner=\$myhostname ready \}$' cat m.out
	atf_check -s exit:0 -o match:'^qmgr +unix +n +- +n +300\? +1 +qmgr$' \
	    -o not-match:smtp $POSTCONF -c etc -M qmgr/unix
	test "$($POSTCONF -c etc -M smtp | wc -l)" -eq 2 || atf_fail "-M smtp"
	atf_check -s exit:1 -e match:'no service nosuch' $POSTCONF -c etc -M nosuch
	atf_check -s exit:1 -e match:'no service qmgr/inet' $POSTCONF -c etc -M qmgr/inet
	atf_check -s exit:1 -e match:'bad service type' $POSTCONF -c etc -M qmgr/tcp
	# the normalised output is itself a valid master.cf
	mkdir again
	cp m.out again/master.cf
	atf_check -s exit:0 -o file:m.out $POSTCONF -c again -M
}

atf_test_case errors_name_file_and_line
errors_name_file_and_line_head() {
	atf_set descr "bad lines in main.cf and master.cf are reported with file:line"
}
errors_name_file_and_line_body() {
	mkconf 'max_use = 50
no equals sign
queue_run_delay = xyz
smtpd_helo_required = perhaps
typo_parameter = 1
'
	atf_check -s exit:1 -o save:out -e save:err $POSTCONF -c etc
	grep -qF "etc/main.cf:2: missing '=' after parameter name: no equals sign" err ||
	    atf_fail "line 2: $(cat err)"
	grep -qF "etc/main.cf:3: bad time value 'xyz' for parameter queue_run_delay" err ||
	    atf_fail "line 3: $(cat err)"
	grep -qF "etc/main.cf:4: bad boolean value 'perhaps' for parameter smtpd_helo_required" err ||
	    atf_fail "line 4: $(cat err)"
	grep -qF "warning: etc/main.cf:5: unknown parameter typo_parameter" err ||
	    atf_fail "line 5: $(cat err)"
	# the rest is still shown, to help fixing it
	grep -qxF 'max_use = 50' out || atf_fail "good line not shown"
	cat > etc/master.cf <<'EOF'
smtp      inet  n       -       n       -       -       smtpd
bad       tcp   n       -       n       -       -       smtpd
short     unix  n
EOF
	atf_check -s exit:1 -o match:'^smtp +inet' \
	    -e match:"etc/master.cf:2: bad service type 'tcp'" \
	    -e match:'etc/master.cf:3: expected at least 8 fields' \
	    $POSTCONF -c etc -M
}

atf_test_case shipped_files
shipped_files_head() {
	atf_set descr "conf/main.cf and conf/master.cf load cleanly"
}
shipped_files_body() {
	atf_check -s exit:0 -e empty -o empty $POSTCONF -c $SRCDIR/conf -n
	atf_check -s exit:0 -e empty -o save:m.out $POSTCONF -c $SRCDIR/conf -M
	for s in smtp/inet pickup/unix-dgram cleanup/unix qmgr/unix-dgram \
	    smtp/unix relay/unix local/unix bounce/unix defer/unix \
	    discard/unix error/unix retry/unix showq/unix; do
		atf_check -s exit:0 -o not-empty -e empty $POSTCONF -c $SRCDIR/conf -M $s
	done
	atf_check -s exit:0 -o match:'^qmgr +unix-dgram +n +- +y +300 +1 +qmgr$' \
	    $POSTCONF -c $SRCDIR/conf -M qmgr/unix-dgram
	atf_check -s exit:0 -o match:'^local +unix +- +n +n ' \
	    $POSTCONF -c $SRCDIR/conf -M local/unix
	atf_check -s exit:0 -o match:'^pickup +unix-dgram +n +- +y +60 +1 +pickup$' \
	    $POSTCONF -c $SRCDIR/conf -M pickup
	# Every pool is bounded (maxproc 0 would be "no limit").
	if awk '$6 == "0"' m.out | grep .; then
		atf_fail "a shipped service has no process limit"
	fi
}

atf_test_case man_page_matches
man_page_matches_head() {
	atf_set descr "man/petrel.5 is generated from the current parameter table"
}
man_page_matches_body() {
	atf_check -s exit:0 -o save:petrel.5 -e empty \
	    sh $SRCDIR/tools/gen-petrel5 $POSTCONF
	if ! diff -u $SRCDIR/man/petrel.5 petrel.5 >&2; then
		atf_fail "man/petrel.5 is out of date: run sh tools/gen-petrel5 build/bin/postconf > man/petrel.5"
	fi
}

atf_init_test_cases() {
	atf_add_test_case defaults
	atf_add_test_case effective_and_set
	atf_add_test_case unknown_name
	atf_add_test_case config_directory
	atf_add_test_case edit_round_trip
	atf_add_test_case edit_refuses_bad_input
	atf_add_test_case remove
	atf_add_test_case master_entries
	atf_add_test_case errors_name_file_and_line
	atf_add_test_case shipped_files
	atf_add_test_case man_page_matches
}
