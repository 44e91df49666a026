#! /usr/bin/env atf-sh
# Packaging (doc/packaging.md): make install's layout against the FreeBSD
# port's pkg-plist and the Debian package's file list; make install
# refusing another package's files; and the Debian package built,
# checked by lintian, installed into a throwaway root (an overlay of /
# in private mount, network and process namespaces), used, stopped and
# purged.  The machine itself is never changed: everything the package
# does happens in the overlay, and the deb case checks afterwards that
# dpkg's database, postfix and /etc are as they were.

B=@BUILDDIR@
SRC=@SRCDIR@
PORT=$SRC/ports/mail/petrel

require_built() {
	for p in sendmail postdrop petrel master local; do
		[ -x $B/bin/$p ] || atf_skip "$p is not built"
	done
	[ -f $SRC/Makefile ] || atf_skip "the source tree is not configured (no Makefile)"
}

# make install from the source tree, with the build's programs; never
# rebuilds (-o all).  Extra arguments are make variables.
MAKEI="make -s --no-print-directory -C $SRC -f Makefile -o all B=$B"

PORT_DIRS="sbindir=/usr/local/sbin bindir=/usr/local/bin
	daemon_directory=/usr/local/libexec/petrel
	config_directory=/usr/local/etc/petrel mandir=/usr/local/share/man"
DEB_DIRS="sbindir=/usr/sbin bindir=/usr/bin daemon_directory=/usr/lib/petrel
	config_directory=/etc/petrel mandir=/usr/share/man"

# Files and symlinks under $1, one path a line, sorted, without $1.
tree() {
	(cd "$1" && find . \( -type f -o -type l \) | sed 's|^\.||' | LC_ALL=C sort)
}

# pkg-plist as paths: "@sample X.sample" is X (the port renames the
# configuration files), "@(owner,group,mode) X" is X, a manual page is
# listed compressed; lines the port adds itself (examples) are left out.
plist_paths() {
	sed -e '/%%PORTEXAMPLES%%/d' -e 's/^@([^)]*) //' \
	    -e 's/^@sample \(.*\)\.sample$/\1/' -e 's|^\(share/man/.*\)\.gz$|\1|' \
	    -e 's|^|/usr/local/|' $PORT/pkg-plist | LC_ALL=C sort
}

atf_test_case port_files
port_files_head() {
	atf_set descr "the port's rc.d script parses and has petrel_enable; mailer.conf covers mailwrapper's names"
}
port_files_body() {
	atf_check -s exit:0 sh -n $PORT/files/petrel.in
	atf_check -s exit:0 -o match:'_enable:=NO' cat $PORT/files/petrel.in
	atf_check -s exit:0 -o match:'^# PROVIDE: petrel mail$' cat $PORT/files/petrel.in
	for k in sendmail send-mail mailq newaliases hoststat purgestat; do
		grep -q "^$k[[:space:]]" $PORT/files/mailer.conf.petrel || atf_fail "mailer.conf: no $k"
	done
	# the port's accounts are configure's defaults
	atf_check -s exit:0 -o match:'with-mail-owner=petrel' -o match:'with-setgid-group=petrdrop' \
	    cat $PORT/Makefile
	atf_check -s exit:0 -o match:'mail_owner=petrel$' -o match:'setgid_group=petrdrop$' \
	    cat $SRC/configure
}

atf_test_case port_plist
port_plist_head() {
	atf_set descr "make install DESTDIR= with the port's directories installs exactly pkg-plist, and install-list says so"
}
port_plist_body() {
	require_built
	[ -f $PORT/pkg-plist ] || atf_fail "no $PORT/pkg-plist"
	atf_check -s exit:0 -o ignore $MAKEI install DESTDIR=$PWD/stage $PORT_DIRS
	tree stage > installed
	plist_paths > plist
	diff -u plist installed || atf_fail "pkg-plist and make install differ (above); after adding a program or a page: tools/gen-pkg-plist > ports/mail/petrel/pkg-plist"
	# and the generator writes the committed pkg-plist
	atf_check -s exit:0 -o file:$PORT/pkg-plist $SRC/tools/gen-pkg-plist
	$MAKEI install-list $PORT_DIRS | LC_ALL=C sort > listed
	atf_check -s exit:0 -o empty diff -u listed installed
	# mailq and newaliases are sendmail, in bindir (Debian's and the
	# ports' place), through a relative link
	atf_check -s exit:0 -o inline:"../sbin/sendmail\n" readlink stage/usr/local/bin/mailq
	atf_check -s exit:0 -o inline:"../sbin/sendmail\n" readlink stage/usr/local/bin/newaliases
	atf_check -s exit:0 cmp $B/bin/sendmail stage/usr/local/bin/mailq
	# config_directory is --sysconfdir itself, not a petrel/ below it
	test -f stage/usr/local/etc/petrel/main.cf || atf_fail "main.cf not in config_directory"
}

atf_test_case configure_sysconfdir
configure_sysconfdir_head() {
	atf_set descr "./configure --sysconfdir=DIR makes DIR config_directory (autoconf's meaning); without it PREFIX/etc/petrel"
}
configure_sysconfdir_body() {
	# configure writes into the current directory; run a copy of it
	# (Makefile.in is found through srcdir).
	mkdir cfg && cd cfg
	cp $SRC/configure $SRC/Makefile.in .
	atf_check -s exit:0 -o ignore -e ignore ./configure --prefix=/usr --sysconfdir=/etc/petrel \
	    --localstatedir=/var --libexecdir=/usr/lib
	atf_check -s exit:0 -o match:'^#define DEF_CONFIG_DIR "/etc/petrel"$' cat config.h
	atf_check -s exit:0 -o match:'^#define DEF_QUEUE_DIR "/var/spool/petrel"$' cat config.h
	atf_check -s exit:0 -o match:'^#define DEF_DAEMON_DIR "/usr/lib/petrel"$' cat config.h
	atf_check -s exit:0 -o match:'^config_directory = \$\(sysconfdir\)$' cat Makefile
	atf_check -s exit:0 -o match:'^sysconfdir *= /etc/petrel$' cat Makefile
	atf_check -s exit:0 -o ignore -e ignore ./configure --prefix=/opt/p
	atf_check -s exit:0 -o match:'^#define DEF_CONFIG_DIR "/opt/p/etc/petrel"$' cat config.h
}

atf_test_case refuses_foreign
refuses_foreign_head() {
	atf_set descr "make install refuses files that are not Petrel's (names them, installs nothing), PETREL_FORCE=1 overwrites, a reinstall over Petrel's own files works and keeps main.cf"
}
refuses_foreign_body() {
	require_built
	D=$PWD/stage
	mkdir -p $D/usr/sbin $D/usr/bin $D/usr/share/man/man1
	printf 'Postfix postconf, not ours\n' > $D/usr/sbin/postconf
	ln -s /usr/sbin/exim4 $D/usr/bin/mailq
	printf '.TH SENDMAIL 1 Exim\n' > $D/usr/share/man/man1/sendmail.1
	printf 'compressed page of another MTA\n' | gzip > $D/usr/share/man/man1/postconf.1.gz
	cp $D/usr/sbin/postconf foreign.orig
	atf_check -s exit:2 -o empty -e save:err $MAKEI install DESTDIR=$D $DEB_DIRS
	for f in /usr/sbin/postconf /usr/bin/mailq /usr/share/man/man1/sendmail.1 \
	    /usr/share/man/man1/postconf.1.gz; do
		grep -q "^  $f (not Petrel's)" err || { cat err >&2; atf_fail "$f not named"; }
	done
	grep -q 'PETREL_FORCE=1' err || atf_fail "the way out is not named"
	# nothing was installed, the foreign files are untouched
	test ! -e $D/usr/sbin/sendmail || atf_fail "installed although refused"
	test ! -e $D/etc/petrel || atf_fail "configuration installed although refused"
	atf_check -s exit:0 cmp foreign.orig $D/usr/sbin/postconf
	atf_check -s exit:0 -o inline:"/usr/sbin/exim4\n" readlink $D/usr/bin/mailq

	atf_check -s exit:0 -o ignore -e match:'PETREL_FORCE=1: overwriting' \
	    $MAKEI install DESTDIR=$D $DEB_DIRS PETREL_FORCE=1
	atf_check -s exit:0 cmp $B/bin/postconf $D/usr/sbin/postconf
	atf_check -s exit:0 -o inline:"../sbin/sendmail\n" readlink $D/usr/bin/mailq

	# (the other MTA's compressed page is still there: forcing does not
	# delete what Petrel does not install)
	test -f $D/usr/share/man/man1/postconf.1.gz || atf_fail "postconf.1.gz removed"
	rm $D/usr/share/man/man1/postconf.1.gz
	# Petrel's own files are replaced without being asked; an edited
	# main.cf is kept and the new one goes beside it
	echo "myhostname = edited.example" >> $D/etc/petrel/main.cf
	cp $D/etc/petrel/main.cf main.cf.edited
	atf_check -s exit:0 -o match:'keep /etc/petrel/main.cf' -e empty \
	    $MAKEI install DESTDIR=$D $DEB_DIRS
	atf_check -s exit:0 cmp main.cf.edited $D/etc/petrel/main.cf
	atf_check -s exit:0 cmp $SRC/conf/main.cf $D/etc/petrel/main.cf.dist
}

atf_test_case warns_shadowed
warns_shadowed_head() {
	atf_set descr "make install under /usr/local warns about the other mail system's commands of the same name in /usr/sbin and /usr/bin"
}
warns_shadowed_body() {
	require_built
	D=$PWD/stage
	mkdir -p $D/usr/sbin $D/usr/bin
	printf 'another sendmail\n' > $D/usr/sbin/sendmail
	printf 'another mailq\n' > $D/usr/bin/mailq
	atf_check -s exit:0 -o ignore -e save:err $MAKEI install DESTDIR=$D $PORT_DIRS
	atf_check -s exit:0 -o match:"same name: /usr/sbin/sendmail /usr/bin/mailq\$" cat err
	# Petrel's own commands elsewhere are not reported
	rm -rf $D && mkdir -p $D/usr/sbin && cp $B/bin/sendmail $D/usr/sbin/sendmail
	atf_check -s exit:0 -o ignore -e empty $MAKEI install DESTDIR=$D $PORT_DIRS
}

# ---------------------------------------------------------------------
# The Debian package.

require_deb_tools() {
	[ "$(id -u)" = 0 ] || atf_skip "needs root (mount namespace, overlayfs, chroot, dpkg in the throwaway root)"
	for t in dpkg-buildpackage dh fakeroot dpkg-deb lintian unshare chroot ip; do
		command -v $t >/dev/null 2>&1 ||
		    atf_skip "$t is missing (tools/install-deps installs the packaging tools)"
	done
	(cd $SRC && dpkg-checkbuilddeps) >/dev/null 2>&1 ||
	    atf_skip "build dependencies missing: $(cd $SRC && dpkg-checkbuilddeps 2>&1)"
	grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null ||
	    atf_skip "no overlayfs"
	unshare -m -n -p -f true 2>/dev/null || atf_skip "unshare -m -n -p cannot run here"
}

# The machine's state that must not change: dpkg's database, postfix's
# state, the package's paths, the test account.
machine_state() {
	md5sum /var/lib/dpkg/status
	dpkg-query -W -f '${Package} ${Status}\n' postfix petrel 2>&1
	for p in /etc/petrel /etc/aliases /etc/aliases.db /var/spool/petrel \
	    /usr/lib/petrel /usr/sbin/sendmail /usr/sbin/petrel /lib/systemd/system/petrel.service; do
		if [ -e $p ]; then stat -c '%n %s %Y %a' $p; else echo "$p absent"; fi
	done
	getent passwd pkgtest || echo "no pkgtest"
}

atf_test_case deb
deb_head() {
	atf_set descr "dpkg-buildpackage builds petrel_*.deb from the tree; lintian finds no error; its files are make install's; installed in a throwaway root it delivers, stops on removal, and purge leaves only what policy keeps"
	atf_set require.user root
	atf_set timeout 900
}
deb_body() {
	require_built
	require_deb_tools
	machine_state > state.before

	# A copy of what a fresh clone holds (tracked and new files, not
	# the build output), built as Debian builds it.
	mkdir pkg pkg/petrel
	if git -C $SRC rev-parse >/dev/null 2>&1; then
		(cd $SRC && git ls-files -z --cached --others --exclude-standard |
		    tar --null -T - -cf -) | tar -C pkg/petrel -xf -
	else
		(cd $SRC && tar --exclude=./build --exclude=./build-san --exclude=./build-fuzz \
		    --exclude=./run --exclude=./Makefile --exclude=./config.h \
		    --exclude=./config.status -cf - .) | tar -C pkg/petrel -xf -
	fi
	(cd pkg/petrel && dpkg-buildpackage -us -uc -b) > build.log 2>&1 ||
	    { tail -40 build.log >&2; atf_fail "dpkg-buildpackage failed"; }
	deb=$(ls pkg/petrel_*.deb)
	[ -f "$deb" ] || atf_fail "no petrel_*.deb"

	lintian --tag-display-limit 0 pkg/*.changes > lintian.out 2>&1
	grep '^E:' lintian.out && atf_fail "lintian reports errors"
	cat lintian.out

	# The package holds make install's files with Debian's directories,
	# the units, /usr/lib/sendmail and the docs; /etc/petrel/aliases is
	# left out (Debian's MTAs share /etc/aliases); manual pages are
	# compressed.
	dpkg-deb -c $deb | awk '$1 !~ /^d/ {print $6}' | sed 's|^\.||' | LC_ALL=C sort > deb.files
	{ $MAKEI install-list $DEB_DIRS | grep -v '^/etc/petrel/aliases$' |
	    sed 's|^\(/usr/share/man/.*\)$|\1.gz|'
	  printf '%s\n' /lib/systemd/system/petrel.service /lib/systemd/system/petrel@.service \
	      /usr/lib/sendmail /usr/share/doc/petrel/changelog.gz /usr/share/doc/petrel/copyright
	  # dh_installlogrotate's file, when debian/ has one
	  [ ! -f $SRC/debian/petrel.logrotate ] || echo /etc/logrotate.d/petrel
	} | LC_ALL=C sort > expected.files
	atf_check -s exit:0 -o empty diff -u expected.files deb.files
	dpkg-deb -f $deb Provides Conflicts Replaces > fields
	atf_check -s exit:0 -o inline:"Provides: mail-transport-agent\nConflicts: mail-transport-agent\nReplaces: mail-transport-agent\n" cat fields

	cp $deb root.deb
	write_inner
	write_ns
	unshare -m -n -p -f sh ./ns.sh > ns.out 2>&1
	rc=$?
	cat ns.out
	[ $rc = 0 ] && grep -q '^ALL-OK$' ns.out || atf_fail "the throwaway root run failed (exit $rc; ns.out above)"

	machine_state > state.after
	atf_check -s exit:0 -o empty diff -u state.before state.after
}

# Runs in the private namespaces, as root: mounts the overlay of / and
# what a chroot needs, then runs inner.sh chrooted.
write_ns() {
	cat > ns.sh <<'EOF'
set -eu
W=$PWD
R=$W/root
mkdir -p upper work root
# The overlay's upper layer is the test directory; where the kernel
# refuses that (an upper inside the lower on some kernels), a tmpfs.
if ! mount -t overlay petrel-pkgtest -o lowerdir=/,upperdir=$W/upper,workdir=$W/work $R 2>/dev/null; then
	mkdir -p t && mount -t tmpfs -o size=1g tmpfs t && mkdir t/u t/w
	mount -t overlay petrel-pkgtest -o lowerdir=/,upperdir=$W/t/u,workdir=$W/t/w $R
fi
mount -t proc proc $R/proc
mount -t tmpfs -o mode=755 tmpfs $R/run
mount -t tmpfs -o mode=1777 tmpfs $R/tmp
mount -t tmpfs -o mode=755 tmpfs $R/dev
for d in null zero full random urandom tty; do
	touch $R/dev/$d && mount --bind /dev/$d $R/dev/$d
done
ln -s /proc/self/fd $R/dev/fd
mkdir $R/dev/shm && mount -t tmpfs tmpfs $R/dev/shm
ip link set lo up
cp root.deb $R/tmp/petrel.deb
cp inner.sh $R/tmp/inner.sh
chroot $R /bin/sh /tmp/inner.sh
EOF
}

write_inner() {
	{ echo "SRC=$SRC"; echo "B=$B"; } > inner.sh
	cat >> inner.sh <<'EOF'
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C DEBIAN_FRONTEND=noninteractive TMPDIR=/tmp HOME=/root
fail() { echo "FAIL: $*"; exit 1; }
step() { echo "== $*"; }
# waits up to 30 s for a command to succeed
waitfor() {
	i=0
	while [ $i -lt 60 ]; do "$@" && return 0; sleep 0.5; i=$((i + 1)); done
	return 1
}
petrel_procs() {
	for e in /proc/[0-9]*/exe; do
		case $(readlink $e 2>/dev/null) in
		/usr/lib/petrel/*|/usr/sbin/petrel) echo $e ;;
		esac
	done
}

# No service starts or stops through invoke-rc.d in here.
printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
chmod 755 /usr/sbin/policy-rc.d
[ ! -d /run/systemd/system ] || fail "systemd visible in the throwaway root"

step "make install refuses the files of an installed package (dpkg -S)"
if dpkg-query -W -f '${Status}\n' postfix 2>/dev/null | grep -q ' installed$' &&
    [ -x $SRC/tools/install-petrel ] && [ -x $B/bin/sendmail ]; then
	cp /usr/sbin/postconf /tmp/postconf.orig
	if B=$B SRCDIR=$SRC sbindir=/usr/sbin bindir=/usr/bin daemon_directory=/usr/lib/petrel \
	    config_directory=/etc/petrel mandir=/usr/share/man \
	    PROGRAMS="sendmail postconf postdrop" COMMANDS="sendmail postconf postdrop" \
	    $SRC/tools/install-petrel > /tmp/inst.out 2>&1; then
		cat /tmp/inst.out; fail "install over postfix's files was not refused"
	fi
	cat /tmp/inst.out
	grep -q '^  /usr/sbin/postconf (package postfix)' /tmp/inst.out || fail "postconf not named"
	cmp /tmp/postconf.orig /usr/sbin/postconf || fail "postfix's postconf changed"
	[ ! -e /etc/petrel ] || fail "/etc/petrel created"
else
	echo "(postfix or the build tree is not here: not tried)"
fi

step "another MTA goes (the package conflicts with mail-transport-agent)"
mtas=$(dpkg-query -W -f '${Package} ${Status} ${Provides}\n' 2>/dev/null |
    awk '/ installed / && /mail-transport-agent/ {print $1}')
extra=$(dpkg-query -W -f '${Package} ${Status} ${Depends}\n' 2>/dev/null |
    awk '/ installed / && /postfix \(/ {print $1}')
if [ -n "$mtas$extra" ]; then
	dpkg --remove --force-depends $extra $mtas || fail "removing $mtas $extra"
fi

# Accounts left on the machine by earlier runs (petrel check as root
# creates them) go, so that postinst is seen creating them.
getent passwd petrel >/dev/null && userdel petrel
getent group petrel >/dev/null && groupdel petrel
getent group petrdrop >/dev/null && groupdel petrdrop

step "dpkg -i"
dpkg -i /tmp/petrel.deb || fail "dpkg -i"
dpkg-query -W -f '${Status}\n' petrel | grep -q 'install ok installed' || fail "not installed"
uid=$(id -u petrel) || fail "no user petrel"
[ "$uid" -lt 1000 ] || fail "petrel is not a system account (uid $uid)"
[ "$(getent passwd petrel | cut -d: -f6)" = /var/spool/petrel ] || fail "petrel's home"
getent group petrdrop >/dev/null || fail "no group petrdrop"
[ "$(stat -c '%G %a' /usr/sbin/postdrop)" = "petrdrop 2755" ] || fail "postdrop: $(stat -c '%G %a' /usr/sbin/postdrop)"
[ "$(stat -c '%G %a' /usr/sbin/postq)" = "petrdrop 2755" ] || fail "postq: $(stat -c '%G %a' /usr/sbin/postq)"
[ -f /etc/aliases ] && [ -f /etc/aliases.db ] || fail "no /etc/aliases(.db)"
[ -d /var/spool/petrel/maildrop ] || fail "no queue tree"
[ -L /etc/systemd/system/multi-user.target.wants/petrel.service ] || fail "petrel.service not enabled"
[ "$(readlink /usr/lib/sendmail)" = ../sbin/sendmail ] || fail "/usr/lib/sendmail"
[ "$(readlink /usr/bin/mailq)" = ../sbin/sendmail ] || fail "/usr/bin/mailq"
[ "$(readlink /usr/bin/newaliases)" = ../sbin/sendmail ] || fail "/usr/bin/newaliases"
[ -z "$(petrel_procs)" ] || fail "a daemon started in spite of policy-rc.d"
for f in /etc/petrel/main.cf /etc/petrel/master.cf; do
	grep -qx "$f" /var/lib/dpkg/info/petrel.conffiles || fail "$f is not a conffile"
done

step "systemd-analyze verify"
if command -v systemd-analyze >/dev/null 2>&1; then
	systemd-analyze verify /lib/systemd/system/petrel.service || fail "petrel.service"
	systemd-analyze verify petrel@out.service || fail "petrel@.service"
else
	echo "(no systemd-analyze)"
fi

step "start by hand, on loopback, and deliver"
useradd -m -s /bin/sh pkgtest || fail "useradd"
printf '%s\n' "inet_interfaces = 127.0.0.1" "maillog_file = /tmp/maillog" >> /etc/petrel/main.cf
petrel start || fail "petrel start"
petrel status || fail "petrel status"
printf 'Subject: package test\n\nhello from the package test\n' > /tmp/msg
chmod 644 /tmp/msg
su -s /bin/sh pkgtest -c '/usr/sbin/sendmail pkgtest < /tmp/msg' || fail "sendmail as pkgtest"
/usr/lib/sendmail -f root pkgtest < /tmp/msg || fail "/usr/lib/sendmail"
count() { [ "$(grep -c '^hello from the package test$' /var/mail/pkgtest 2>/dev/null)" = 2 ]; }
waitfor count || { mailq; tail -30 /tmp/maillog; fail "not delivered to /var/mail/pkgtest"; }
grep -q '^Subject: package test$' /var/mail/pkgtest || fail "mailbox"
q=$(su -s /bin/sh pkgtest -c mailq) || fail "mailq as pkgtest"
echo "$q"
[ "$q" = "Mail queue is empty" ] || fail "mailq: $q"
# A message that cannot leave (no network in here) stays in the queue,
# and mailq (/usr/bin/mailq, as a user) shows it.
printf 'Subject: stays\n\nno network\n' | /usr/sbin/sendmail someone@remote.example ||
    fail "sendmail to a remote address"
inq() { su -s /bin/sh pkgtest -c /usr/bin/mailq > /tmp/mailq.out 2>&1 && grep -q 'someone@remote.example' /tmp/mailq.out; }
waitfor inq || { cat /tmp/mailq.out; fail "mailq does not show the queued message"; }
cat /tmp/mailq.out

step "petrel stop"
petrel stop || fail "petrel stop"
petrel status && fail "still running after stop"
[ -z "$(petrel_procs)" ] || fail "daemons left after stop: $(petrel_procs)"

step "installed again (an upgrade's path): postinst runs twice, the edited conffile stays"
dpkg -i /tmp/petrel.deb || fail "dpkg -i again"
grep -qx 'inet_interfaces = 127.0.0.1' /etc/petrel/main.cf || fail "edited main.cf replaced"
[ "$(id -u petrel)" = "$uid" ] || fail "petrel's uid changed"

step "removal stops a running Petrel; purge"
petrel start || fail "petrel start (again)"
dpkg --purge petrel || fail "dpkg --purge"
waitfor test -z "$(petrel_procs)" || fail "daemons left after removal: $(petrel_procs)"
dpkg-query -W -f '${Status}\n' petrel 2>/dev/null | grep -q ' installed$' && fail "still installed"
# (/var/cache/man: man-db's cache of formatted pages, filled when
# systemd-analyze verify checked the units' Documentation= pages and
# pruned by man-db's own daily job)
left=$(find /etc /usr /lib /var /run -path /var/cache/man -prune -o -name '*petrel*' -print 2>/dev/null)
[ -z "$left" ] || fail "left after purge: $left"
# what stays: the accounts, /etc/aliases (shared by every MTA), the mail
getent passwd petrel >/dev/null || fail "user petrel removed"
[ -f /etc/aliases ] || fail "/etc/aliases removed"
[ -s /var/mail/pkgtest ] || fail "mailbox removed"
echo ALL-OK
EOF
}

atf_init_test_cases() {
	atf_add_test_case port_plist
	atf_add_test_case port_files
	atf_add_test_case configure_sysconfdir
	atf_add_test_case refuses_foreign
	atf_add_test_case warns_shadowed
	atf_add_test_case deb
}
