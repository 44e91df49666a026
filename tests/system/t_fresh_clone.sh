#! /usr/bin/env atf-sh
# The first hour as root, from a clone in a directory nobody else can
# enter (root's 0700 home): make run delivers, and the tests that run as
# the unprivileged user (kyua's require.user unprivileged, as nobody)
# pass through tools/run-tests, which stages the tree where nobody can
# reach it.  The clone is a git clone of the tree this test was built
# from, with that tree's uncommitted changes applied.

B=@BUILDDIR@
SRC=@SRCDIR@
. @SRCDIR@/tests/system/master.subr

gone() {
	! kill -0 "$1" 2>/dev/null
}

maildir_has() {
	[ "$(find "$C/run/mail/root/Maildir/new" -type f 2>/dev/null | wc -l)" -ge 1 ]
}

atf_test_case root_0700 cleanup
root_0700_head() {
	atf_set descr "a clone under a 0700 directory, as root: make run delivers to the Maildir, and a require.user unprivileged test program passes through run-tests"
	atf_set require.user root
	atf_set timeout 600
}
root_0700_body() {
	command -v git >/dev/null || atf_skip "git is not installed"
	git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 || atf_skip "$SRC is not a git tree"
	id nobody >/dev/null 2>&1 || atf_skip "no nobody account"
	mkdir home
	chmod 700 home
	C=$PWD/home/petrel
	atf_check -s exit:0 -o ignore -e ignore git clone -q --no-hardlinks "$SRC" "$C"
	# The tree as it is, not only as committed.
	git -C "$SRC" diff --binary HEAD > local.diff
	if [ -s local.diff ]; then
		atf_check -s exit:0 -o ignore -e ignore git -C "$C" apply --whitespace=nowarn "$PWD/local.diff"
	fi
	(cd "$SRC" && git ls-files -z -o --exclude-standard | tar --null -T - -cf -) |
	    (cd "$C" && tar xf -) || atf_fail "copying untracked files"

	# Plain make, then the pieces of the suite this test runs.
	(cd "$C" && make -j2 all build/tests/system/t_petrel \
	    build/tests/tools/test-service > make.out 2>&1) ||
	    { tail -20 "$C/make.out" >&2; atf_fail "make failed in the clone"; }

	# make run (tools/run-instance, what make run starts), as root.
	printf 'mail_owner = nobody\nsetgid_group = %s\n' "$(id -gn nobody)" > main.cf.local
	mkdir -p "$C/run/etc"
	cp main.cf.local "$C/run/etc/main.cf.local"
	(cd "$C" && PORT=$(free_port) exec tools/run-instance build) > run.out 2>&1 &
	echo $! > run.pid
	WAIT_MAX=150 wait_for grep -q "Petrel is running" run.out ||
	    { cat run.out >&2; atf_fail "make run did not start"; }
	printf 'Subject: first hour\n\nhello from a closed home\n' |
	    "$C/run/bin/sendmail" root@localhost || atf_fail "sendmail failed"
	WAIT_MAX=150 wait_for maildir_has ||
	    { tail -30 run.out >&2; atf_fail "make run delivered nothing to run/mail/root/Maildir"; }
	grep -q '^hello from a closed home$' "$C"/run/mail/root/Maildir/new/* || atf_fail "content"
	if grep -E "Permission denied|fatal:" run.out >&2; then
		atf_fail "errors in the log"
	fi
	kill -TERM "$(cat run.pid)"
	WAIT_MAX=150 wait_for gone "$(cat run.pid)" || atf_fail "make run did not stop"
	rm -f run.pid

	# One require.user unprivileged program through run-tests: without
	# the staging each case would die as nobody at once.
	printf 'syntax(2)\ntest_suite("petrel")\ninclude("system/Kyuafile")\n' > "$C/build/tests/Kyuafile"
	printf 'syntax(2)\ntest_suite("petrel")\natf_test_program{name="t_petrel"}\n' > "$C/build/tests/system/Kyuafile"
	grep -q 'require.user unprivileged' "$C/build/tests/system/t_petrel" ||
	    atf_fail "t_petrel no longer runs as the unprivileged user: pick another program"
	(cd "$C" && tools/run-tests build) > tests.out 2> tests.err
	rc=$?
	cat tests.out tests.err
	test $rc = 0 || atf_fail "run-tests failed in the clone"
	grep -q "^[1-9][0-9]* passed, 0 failed$" tests.out || atf_fail "no passing summary"
	grep -q "0 skipped" tests.out || atf_fail "tests were skipped"
	grep -q "the tests run from a copy in /var/tmp/petrel-check\." tests.err ||
	    atf_fail "run-tests did not say it staged the tree"
	stage=$(sed -n 's/.*a copy in \(\/var\/tmp\/petrel-check\.[A-Za-z0-9]*\),.*/\1/p' tests.err)
	[ -n "$stage" ] && [ ! -e "$stage" ] || atf_fail "the staged copy $stage was left behind"
}
root_0700_cleanup() {
	if [ -f run.pid ]; then
		kill -TERM "$(cat run.pid)" 2>/dev/null
		WAIT_MAX=100 wait_for gone "$(cat run.pid)"
	fi
	if [ -f home/petrel/run/etc/main.cf ]; then
		$B/bin/petrel -c $PWD/home/petrel/run/etc stop >/dev/null 2>&1 ||
		    $B/bin/petrel -c $PWD/home/petrel/run/etc abort >/dev/null 2>&1
	fi
	true
}

atf_init_test_cases() {
	atf_add_test_case root_0700
}
