#! /usr/bin/env atf-sh
# showq under master as root: root's postq reads the queue itself; an
# unprivileged user ("nobody") gets the same listing through showq,
# JSON too; authorized_mailq_users refuses through showq; a stopped
# showq gives a clear "cannot connect".  mail_owner is "daemon" so that
# "nobody" is an ordinary user.

B=@BUILDDIR@
. @SRCDIR@/tests/system/master.subr
POSTQ=$B/bin/postq
MKQ=$B/tests/tools/mkqfile

require() {
	[ "$(id -u)" = 0 ] || atf_skip "needs root (a daemon as mail_owner, a client as nobody)"
	id nobody >/dev/null 2>&1 || atf_skip "no 'nobody' account"
	id daemon >/dev/null 2>&1 || atf_skip "no 'daemon' account to use as mail_owner"
	su -s /bin/sh nobody -c true 2>/dev/null || atf_skip "cannot su to nobody"
}

setup() {
	# nobody and daemon must reach the binaries, the work directory and
	# the configuration; the queue itself is daemon's alone.
	chmod 755 .
	d=$PWD
	while [ "$d" != / ]; do chmod o+x "$d" 2>/dev/null; d=$(dirname "$d"); done
	mk_instance "mail_owner = daemon" "setgid_group = $(id -gn nobody)" "$@"
	mcf "showq unix n - n - - showq"
	chmod 755 etc
	chmod 644 etc/main.cf etc/master.cf
	mkdir -p q
	for m in 1 2 3; do
		printf 'Subject: t%s\n\nbody\n' $m |
		    $MKQ -d $PWD/q -q deferred -f s$m@example.org -r r$m@example.net >> ids ||
		    atf_fail "mkqfile failed"
	done
	chown -R daemon q
	chmod 755 q
	start_instance
	wait_for test -S q/public/showq || atf_fail "no showq endpoint"
}


ids_of() {
	awk '/^[0-9A-Z]+[*!]? /{ sub(/[*!]$/, "", $1); print $1 }' "$1" | sort
}

atf_test_case listing cleanup
listing_head() {
	atf_set descr "root lists directly; nobody gets the same messages through showq, text and JSON"
}
listing_body() {
	require
	setup
	sort ids > want
	atf_check -s exit:0 -o save:root.out -e empty $POSTQ -C $PWD/etc
	ids_of root.out > root.ids
	atf_check -s exit:0 -o empty diff -u want root.ids
	# nobody cannot read the queue itself
	atf_check -s not-exit:0 -o ignore -e ignore su -s /bin/sh nobody -c "ls $PWD/q/deferred"
	atf_check -s exit:0 -o save:nobody.out -e empty su -s /bin/sh nobody -c "$POSTQ -C $PWD/etc"
	ids_of nobody.out > nobody.ids
	atf_check -s exit:0 -o empty diff -u want nobody.ids
	atf_check -s exit:0 -o match:'^-- 1 Kbytes in 3 Requests\.$' cat nobody.out
	atf_check -s exit:0 -o save:nobody.json -e empty su -s /bin/sh nobody -c "$POSTQ -C $PWD/etc -j"
	atf_check -s exit:0 -o empty python3 -c 'import json,sys; [json.loads(l) for l in sys.stdin]' < nobody.json
	python3 -c 'import json,sys; print("\n".join(sorted(json.loads(l)["queue_id"] for l in sys.stdin)))' \
	    < nobody.json > json.ids
	atf_check -s exit:0 -o empty diff -u want json.ids
	assert_log_clean
}
listing_cleanup() {
	stop_instance
}

atf_test_case refused cleanup
refused_head() {
	atf_set descr "authorized_mailq_users = root: nobody is refused by showq, daemon (mail_owner) is not"
}
refused_body() {
	require
	setup "authorized_mailq_users = root"
	atf_check -s exit:1 -o empty \
	    -e match:'^postq: permission denied: user nobody .* is not allowed by authorized_mailq_users' \
	    su -s /bin/sh nobody -c "$POSTQ -C $PWD/etc"
	wait_for in_log "refused: user nobody" || atf_fail "no log line for the refusal"
	# mail_owner reads the queue itself
	atf_check -s exit:0 -o match:'in 3 Requests' -e empty \
	    su -s /bin/sh daemon -c "$POSTQ -C $PWD/etc"
	assert_log_clean
}
refused_cleanup() {
	stop_instance
}

atf_test_case bad_request cleanup
bad_request_head() {
	atf_set descr "a bad request gets an error line and a log line; showq keeps serving"
}
bad_request_body() {
	require
	setup
	atf_check -s ignore -o match:'^postq: bad request: expected "text" or "json"' -e ignore \
	    $TS client -t 5000 q/public/showq bogus
	wait_for in_log "bad request" || atf_fail "no log line for the bad request"
	atf_check -s exit:0 -o match:'in 3 Requests' -e empty su -s /bin/sh nobody -c "$POSTQ -C $PWD/etc"
	assert_log_clean
}
bad_request_cleanup() {
	stop_instance
}

atf_test_case not_running cleanup
not_running_head() {
	atf_set descr "no showq running: nobody gets a clear 'cannot connect to the showq service'"
}
not_running_body() {
	require
	setup
	stop_instance
	atf_check -s exit:1 -o empty -e match:'cannot connect to the showq service' \
	    su -s /bin/sh nobody -c "$POSTQ -C $PWD/etc"
}
not_running_cleanup() {
	stop_instance
}

atf_init_test_cases() {
	atf_add_test_case listing
	atf_add_test_case refused
	atf_add_test_case bad_request
	atf_add_test_case not_running
}
