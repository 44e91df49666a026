#! /usr/bin/env atf-sh
# The mail path with every helper daemon chrooted, as conf/master.cf ships
# it: SMTP in with STARTTLS and a restriction that reads a table, relay
# through the smtp client with MX lookups (fakedns) and a verified TLS
# session against a test CA, local delivery to Maildir directly and
# through an alias, a bounce back to a local sender through pickup and
# bounce, postq as an unprivileged user through showq, petrel reload in
# the middle, and each daemon's root directory read from /proc.  Then the
# jail's copies: refreshed by reload, missing ones named, and a table
# rebuilt under a chrooted smtpd.  All as root (chroot); skipped
# otherwise.

B=@BUILDDIR@
BUILDDIR=@BUILDDIR@
. @SRCDIR@/tests/system/common.subr
. @SRCDIR@/tests/system/master.subr
SRCDIR=@SRCDIR@
PM=$B/bin/postmap
PA=$B/bin/postalias
POSTQ=$B/bin/postq
SENDMAIL=$B/bin/sendmail

# Chrooted per conf/master.cf, and what is not.
JAILED="smtpd pickup cleanup qmgr smtp bounce showq scache anvil discard error"
# Those the whole path uses (scache: not with verified TLS sessions).
USED="smtpd pickup cleanup qmgr smtp bounce showq"
UNJAILED="master local"

require_root() {
	[ "$(id -u)" = 0 ] || atf_skip "needs root (chroot)"
	id nobody >/dev/null 2>&1 || atf_skip "no 'nobody' account to use as mail_owner"
	id daemon >/dev/null 2>&1 || atf_skip "no 'daemon' account to use as mail_owner"
	command -v useradd >/dev/null 2>&1 || [ -x /usr/sbin/useradd ] ||
	    atf_skip "no useradd"
	su -s /bin/sh nobody -c true 2>/dev/null || atf_skip "cannot su to nobody"
}

# Children (mail_owner), local and nobody's postq must reach the build
# and the work directory.
open_path() {
	chmod 755 .
	d=$PWD
	while [ "$d" != / ]; do chmod o+x "$d" 2>/dev/null; d=$(dirname "$d"); done
}

ACCOUNT_PREFIX=ptj

# A test CA; the next hop's certificate (mx.far.test) signed by it; a
# self-signed one for smtpd.
mk_pki() {
	{
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		    -nodes -days 2 -subj "/CN=Petrel chroot test CA" \
		    -addext basicConstraints=critical,CA:TRUE \
		    -addext keyUsage=critical,keyCertSign \
		    -keyout ca.key -out ca.pem &&
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		    -nodes -subj /CN=mx.far.test -keyout mx.key -out mx.csr &&
		printf 'subjectAltName=DNS:mx.far.test\n' > mx.ext &&
		openssl x509 -req -in mx.csr -CA ca.pem -CAkey ca.key \
		    -CAcreateserial -days 2 -extfile mx.ext -out mx.pem &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		    -nodes -days 2 -subj /CN=mx.example.test \
		    -keyout smtpd.key -out smtpd.pem
	} > pki.log 2>&1 || { cat pki.log >&2; atf_fail "cannot make the test PKI"; }
	chmod 644 ca.pem mx.pem smtpd.pem
}

# The shipped master.cf with smtpd on $port.
shipped_mcf() {
	awk -v port="$port" '
	/^smtp[ \t]+inet[ \t]/ { sub(/^smtp/, port) }
	{ print }' $SRCDIR/conf/master.cf > etc/master.cf
}

# jail_instance [main.cf lines...]: the whole system chrooted, relaying
# far.test through MX lookups to the sink ($sport) with verified TLS.
jail_instance() {
	port=$(free_port)
	# mail_owner daemon: nobody is an ordinary user, whose postq goes
	# through showq.
	mk_instance "mail_owner = daemon" "setgid_group = $(id -gn nobody)" \
	    "command_directory = $B/bin" \
	    "myhostname = mx.example.test" "mydomain = example.test" \
	    "mydestination = mx.example.test, localhost" \
	    "mynetworks = 127.0.0.0/8" \
	    "alias_maps = hash:$PWD/etc/aliases" \
	    "alias_database = hash:$PWD/etc/aliases" \
	    "home_mailbox = Maildir/" \
	    "transport_maps = hash:$PWD/etc/transport" \
	    "smtpd_recipient_restrictions = check_recipient_access hash:$PWD/etc/access, permit_mynetworks, reject_unauth_destination" \
	    "smtpd_tls_security_level = may" \
	    "smtpd_tls_cert_file = $PWD/smtpd.pem" \
	    "smtpd_tls_key_file = $PWD/smtpd.key" \
	    "smtp_tls_security_level = verify" \
	    "smtp_tls_CAfile = $PWD/ca.pem" \
	    "smtp_host_lookup = dns" \
	    "dns_server_address = 127.0.0.1:$dport" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "queue_run_delay = 3600s" "minimal_backoff_time = 3600s" \
	    "maximal_backoff_time = 3600s" "inet_protocols = ipv4" \
	    "smtp_connect_timeout = 5s" "smtp_helo_timeout = 10s" "$@"
	shipped_mcf
	echo "far.test smtp:far.test:$sport" > etc/transport
	printf 'blocked@far.test REJECT blocked by the access table\n' > etc/access
	{
		echo "postmaster: root"
		echo "alias1: $U"
	} > etc/aliases
	atf_check -s exit:0 $PM etc/transport
	atf_check -s exit:0 $PM etc/access
	atf_check -s exit:0 $PA etc/aliases
	chmod 755 etc
	chmod 644 etc/*
	chmod 600 smtpd.key mx.key ca.key
	MAIL_CONFIG=$PWD/etc
	export MAIL_CONFIG
}

# swaks_to RCPT [FROM]: one message over SMTP with STARTTLS; the reply
# transcript in swaks.out.
swaks_to() {
	swaks --server 127.0.0.1:$port --timeout 20 -tls \
	    --helo client.example.test --from "${2:-alice@client.example.test}" \
	    --to "$1" --header "Subject: chroot test to $1" \
	    --body "body for $1" > swaks.out 2>&1
}

nmail() {
	find home/$U/Maildir/new -type f 2>/dev/null | wc -l | tr -d ' '
}
nmail_is() {
	[ "$(nmail)" = "$1" ]
}

log_wait() {
	WAIT_MAX=${WAIT_MAX:-150} wait_for grep -Eq -- "$1" maillog ||
	    atf_fail "no '$1' in the log: $(tail -5 maillog | tr '\n' ' ')"
}

# Program name of PID: its argv[0]'s last component.
prog_of() {
	tr '\0' '\n' < /proc/$1/cmdline 2>/dev/null | head -n 1 | sed 's|.*/||'
}

# Every process of the instance: the jailed programs have the queue
# directory as their root, master and local the real one; $USED must
# all have been seen.
check_roots() {
	q=$(cd q && pwd -P)
	seen=
	for p in $(instance_pids); do
		n=$(prog_of $p)
		r=$(readlink /proc/$p/root 2>/dev/null) || continue
		case " $JAILED " in
		*" $n "*)
			[ "$r" = "$q" ] || atf_fail "$n (pid $p) has root $r, not $q"
			seen="$seen $n" ;;
		esac
		case " $UNJAILED " in
		*" $n "*)
			[ "$r" = / ] || atf_fail "$n (pid $p) is chrooted to $r" ;;
		esac
	done
	for n in $USED; do
		case " $seen " in
		*" $n "*) ;;
		*) atf_fail "no $n process seen (saw:$seen)" ;;
		esac
	done
}

atf_test_case whole_path cleanup
whole_path_head() {
	atf_set descr "every helper chrooted: SMTP+STARTTLS in, a table restriction, MX+verified TLS out, Maildir and alias delivery, a bounce, postq through showq, reload, /proc roots"
	atf_set require.progs "swaks openssl"
	atf_set timeout 300
}
whole_path_body() {
	require_root
	open_path
	mk_pki
	mk_account
	cat > zone <<EOF
far.test MX 10 mx.far.test
mx.far.test A 127.0.0.2
EOF
	start_dns dns
	dport=$port
	mkdir -p saved
	# Not on 127.0.0.1, which is ours (a loop).
	start_server s smtp-sink "$SINK" -P s.port -s s.stats -d saved \
	    -c mx.pem -k mx.key 127.0.0.2:0
	sport=$port
	jail_instance
	start_instance

	# In: STARTTLS, relayed out through the MX with a verified session.
	swaks_to user1@far.test || atf_fail "swaks: $(cat swaks.out)"
	grep -q "TLS started" swaks.out || atf_fail "no STARTTLS: $(cat swaks.out)"
	stat_is s.stats messages 1
	# verify level: the chain and the name were checked
	log_wait "Trusted TLS connection established to mx.far.test\[127.0.0.2\]:$sport"
	log_wait "to=<user1@far.test>, relay=mx.far.test\[127.0.0.2\]:$sport, .*status=sent"
	grep -l "body for user1@far.test" saved/* >/dev/null || atf_fail "not at the sink"

	# The restriction's table (outside the jail) still answers.
	swaks_to blocked@far.test && atf_fail "blocked recipient accepted"
	grep -q "blocked by the access table" swaks.out ||
	    atf_fail "no table rejection: $(cat swaks.out)"

	# Reload in the middle: the jail is refreshed, services keep working.
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	log_wait "reload -- re-reading the configuration"

	# Local delivery: the user (in the jail's passwd) and an alias.
	swaks_to $U@mx.example.test || atf_fail "swaks to $U: $(cat swaks.out)"
	swaks_to alias1@mx.example.test || atf_fail "swaks to alias1: $(cat swaks.out)"
	WAIT_MAX=150 wait_for nmail_is 2 || atf_fail "$U has $(nmail) messages, want 2"
	grep -l "body for alias1@mx.example.test" home/$U/Maildir/new/* >/dev/null ||
	    atf_fail "alias delivery missing"
	test "$(stat -c %U home/$U/Maildir/new/$(ls home/$U/Maildir/new | head -n 1))" = $U ||
	    atf_fail "mailbox file not owned by $U"

	# A bounce back to the local sender: sendmail -> pickup -> ... ->
	# the sink refuses -> bounce -> cleanup -> local.
	printf 'Subject: will bounce\n\nbounce me\n' |
	    atf_check -s exit:0 $SENDMAIL -f $U@mx.example.test permfail@far.test
	WAIT_MAX=150 wait_for nmail_is 3 || atf_fail "no bounce notice: $(tail -5 maillog)"
	grep -l "Undelivered Mail Returned to Sender" home/$U/Maildir/new/* >/dev/null ||
	    atf_fail "the third message is not the notice"

	# A deferred message, listed by nobody through showq.
	swaks_to tempfail@far.test || atf_fail "swaks tempfail: $(cat swaks.out)"
	log_wait "to=<tempfail@far.test>, .*status=deferred"
	id=$(sed -n 's/.*250 2\.0\.0 Ok: queued as \([0-9A-Z]*\).*/\1/p' swaks.out | head -n 1)
	[ -n "$id" ] || atf_fail "no queue ID"
	atf_check -s exit:0 -o save:nobody.out -e empty \
	    su -s /bin/sh nobody -c "$POSTQ -C $PWD/etc"
	grep -q "^$id" nobody.out || atf_fail "postq as nobody: $(cat nobody.out)"

	check_roots
	in_log "fatal:\|panic:" && atf_fail "fatal in the log: $(grep 'fatal:\|panic:' maillog)"
	in_log "is missing (" && atf_fail "a jail file is missing: $(grep 'is missing' maillog)"
	stop_instance
	wait_for no_process_left || atf_fail "processes left"
	assert_log_clean
	finish
}
whole_path_cleanup() {
	stop_instance
	stop_all
	rm_account
}

atf_test_case jail_refresh cleanup
jail_refresh_head() {
	atf_set descr "chroot_files: petrel start copies the jail's files, petrel reload refreshes them and a chrooted smtpd sees the change"
	atf_set require.progs swaks
	atf_set timeout 120
}
jail_refresh_body() {
	require_root
	open_path
	mkdir -p src
	cp /etc/passwd src/passwd
	printf 'hosts: files\npasswd: files\ngroup: files\n' > src/nsswitch.conf
	port=$(free_port)
	mk_instance "mail_owner = nobody" "setgid_group = $(id -gn nobody)" \
	    "myhostname = mx.example.test" "mydestination = mx.example.test" \
	    "local_recipient_maps = unix:passwd.byname" \
	    "chroot_files = $PWD/src/passwd=/etc/passwd, $PWD/src/nsswitch.conf=/etc/nsswitch.conf, $PWD/src/none=/etc/none" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "inet_protocols = ipv4"
	mcf "$port inet n - y - 1 smtpd" "cleanup unix n - y - - cleanup"
	start_instance
	cmp src/passwd q/etc/passwd || atf_fail "passwd not copied into the jail"
	test "$(stat -c '%U %a' q/etc/passwd)" = "root 644" || atf_fail "copy's owner/mode"
	test ! -e q/etc/none || atf_fail "a missing source made a file"
	in_log "chroot jail .*: updated /etc/passwd, /etc/nsswitch.conf" ||
	    atf_fail "no log line for the copies"

	# Unknown to the jail: rejected by the chrooted smtpd.
	swaks --server 127.0.0.1:$port --timeout 20 --from a@b.test \
	    --to ghost$$@mx.example.test --quit-after RCPT > s1.out 2>&1
	grep -Eq "^<[-~*]+ +550 5.1.1 .*User unknown" s1.out || atf_fail "ghost accepted: $(cat s1.out)"

	# The source gains the account; reload refreshes the jail.
	echo "ghost$$:x:64999:64999::/nonexistent:/usr/sbin/nologin" >> src/passwd
	lines=$(grep -c "chroot jail" maillog)
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	WAIT_MAX=50 wait_for lines_ge $((lines + 1)) "chroot jail .*: updated " maillog ||
	    atf_fail "no refresh line after reload"
	in_log "chroot jail .*: updated /etc/passwd$" || atf_fail "refresh line names other files"
	cmp src/passwd q/etc/passwd || atf_fail "jail copy not refreshed"
	# The retired smtpd is replaced: a new session sees the account.
	ok=
	for i in 1 2 3 4 5 6 7 8 9 10; do
		swaks --server 127.0.0.1:$port --timeout 20 --from a@b.test \
		    --to ghost$$@mx.example.test --quit-after RCPT > s2.out 2>&1
		if grep -Eq "^<[-~*]+ +250 2.1.5" s2.out; then
			ok=1
			break
		fi
		sleep 0.5
	done
	[ -n "$ok" ] || atf_fail "ghost still unknown after reload: $(cat s2.out)"
	# Unchanged files are not rewritten (no new line), and the copy is
	# replaced, never written in place.
	lines=$(grep -c "chroot jail" maillog)
	atf_check -s exit:0 -o ignore -e ignore $PETREL -c $PWD/etc reload
	log_wait "reload -- .*" 
	sleep 0.5
	test "$(grep -c "chroot jail" maillog)" = "$lines" || atf_fail "unchanged files logged as updated"
	stop_instance
	assert_log_clean
	finish
}
jail_refresh_cleanup() {
	stop_instance
	stop_all
}

atf_test_case jail_missing cleanup
jail_missing_head() {
	atf_set descr "a chrooted smtpd without /etc/passwd in its jail says what is missing and how to fix it, and defers local mail (451) instead of rejecting it"
	atf_set require.progs swaks
	atf_set timeout 120
}
jail_missing_body() {
	require_root
	open_path
	port=$(free_port)
	mk_instance "mail_owner = nobody" "setgid_group = $(id -gn nobody)" \
	    "myhostname = mx.example.test" "mydestination = mx.example.test" \
	    "local_recipient_maps = unix:passwd.byname" \
	    "chroot_files =" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "inet_protocols = ipv4"
	mcf "$port inet n - y - 1 smtpd" "cleanup unix n - y - - cleanup"
	start_instance
	test ! -e q/etc/passwd || atf_fail "a jail passwd exists"
	swaks --server 127.0.0.1:$port --timeout 20 --from a@b.test \
	    --to root@mx.example.test --quit-after RCPT > s.out 2>&1
	grep -Eq "^<[-~*]+ +451 4.3.0 " s.out || atf_fail "want 451: $(cat s.out)"
	log_wait "warning: chroot jail $PWD/q: /etc/passwd is missing \(unix:passwd.byname in local_recipient_maps; mail to local users gets 451\): add it to chroot_files in main.cf and run \"petrel reload\""
	stop_instance
	finish
}
jail_missing_cleanup() {
	stop_instance
	stop_all
}

atf_test_case table_rebuilt cleanup
table_rebuilt_head() {
	atf_set descr "a hash: table rebuilt under a chrooted smtpd: the process notices, retires, and its successor reads the new table"
	atf_set require.progs swaks
	atf_set timeout 120
}
table_rebuilt_body() {
	require_root
	open_path
	port=$(free_port)
	mk_instance "mail_owner = nobody" "setgid_group = $(id -gn nobody)" \
	    "myhostname = mx.example.test" "mydestination = mx.example.test" \
	    "local_recipient_maps =" "mynetworks = 127.0.0.0/8" \
	    "smtpd_recipient_restrictions = check_recipient_access hash:$PWD/etc/access, permit_mynetworks, reject" \
	    "smtpd_peername_lookup = no" "smtpd_error_sleep_time = 0" \
	    "inet_protocols = ipv4"
	printf 'one@far.test REJECT first table\n' > etc/access
	atf_check -s exit:0 $PM etc/access
	chmod 755 etc
	chmod 644 etc/*
	mcf "$port inet n - y - 1 smtpd" "cleanup unix n - y - - cleanup"
	start_instance
	rcpt() {
		swaks --server 127.0.0.1:$port --timeout 20 --from a@b.test \
		    --to $1 --quit-after RCPT > rcpt.out 2>&1
	}
	rcpt one@far.test
	grep -q "first table" rcpt.out || atf_fail "table not used: $(cat rcpt.out)"
	rcpt two@far.test
	grep -Eq "^<[-~*]+ +250 2.1.5" rcpt.out || atf_fail "two refused: $(cat rcpt.out)"
	# Rebuilt (renamed over the old file) while the smtpd lives.
	printf 'one@far.test REJECT first table\ntwo@far.test REJECT second table\n' > etc/access
	atf_check -s exit:0 $PM etc/access
	sleep 1.1
	ok=
	for i in 1 2 3 4 5 6 7 8 9 10; do
		rcpt two@far.test
		if grep -q "second table" rcpt.out; then ok=1; break; fi
		sleep 0.3
	done
	[ -n "$ok" ] || atf_fail "the new table is never used: $(cat rcpt.out)"
	in_log "hash:$PWD/etc/access: $PWD/etc/access.db changed; this process keeps the old contents and is replaced" ||
	    atf_fail "no log line for the change"
	in_log "cannot open $PWD/etc/access" && atf_fail "the table broke in the jail"
	stop_instance
	assert_log_clean
	finish
}
table_rebuilt_cleanup() {
	stop_instance
	stop_all
}

atf_init_test_cases() {
	atf_add_test_case whole_path
	atf_add_test_case jail_refresh
	atf_add_test_case jail_missing
	atf_add_test_case table_rebuilt
}
