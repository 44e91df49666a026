"""The two private mail systems the bench compares, configured alike.

Each run gets a fresh instance in its own directory (configuration in
etc/, queue in queue/, log in maillog).  SETTINGS is the one list of what
both get; doc/performance.md explains it.  Neither instance touches the
machine's own configuration or queue: Postfix is always started with
`postfix -c DIR`, and every path in its main.cf is below DIR's parent.
"""

import os
import pwd
import subprocess
import time

SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

BENCH_USER = "petrelbench"          # the local workload's recipient
POSTFIX = "/usr/sbin/postfix"       # Debian's; postconf and postalias beside it
POSTCONF = "/usr/sbin/postconf"
POSTALIAS = "/usr/sbin/postalias"
POSTFIX_MASTER_CF = "/usr/share/postfix/master.cf.dist"

# (parameter, value, why).  {etc} is the instance's configuration
# directory, {relay} the port of the sink that takes remote mail.
SETTINGS = [
    ("myhostname", "bench.test", "no host name lookup; the same name in both"),
    ("mydestination", "$myhostname, localhost", "local mail: petrelbench@localhost"),
    ("inet_interfaces", "127.0.0.1", "loopback only"),
    ("inet_protocols", "ipv4", "the sinks listen on 127.0.0.1"),
    ("mynetworks", "127.0.0.0/8", "smtp-source may relay from 127.0.0.1"),
    ("relayhost", "[127.0.0.1]:{relay}", "all remote mail to the sink, no MX lookup"),
    ("transport_maps", "texthash:{etc}/transport",
     "workload 4's second destination; texthash needs no map compiler"),
    ("smtpd_peername_lookup", "no", "no DNS: the client's name is not looked up"),
    ("default_process_limit", "100", "processes per service"),
    ("default_destination_concurrency_limit", "20", "parallel deliveries per destination"),
    ("initial_destination_concurrency", "5", "start of the concurrency window"),
    ("default_destination_recipient_limit", "50", "recipients per delivery"),
    ("default_destination_concurrency_positive_feedback", "1", "window growth (both defaults)"),
    ("default_destination_concurrency_negative_feedback", "1", "window shrink (both defaults)"),
    ("default_destination_concurrency_failed_cohort_limit", "1", "when a destination is dead (both defaults)"),
    ("local_destination_concurrency_limit", "2", "parallel local deliveries per user"),
    ("local_destination_recipient_limit", "1", "one recipient per local delivery"),
    ("max_use", "100", "requests a daemon serves before it exits"),
    ("max_idle", "100s", "idle time before a daemon exits"),
    ("smtp_connection_cache_on_demand", "yes", "SMTP connection caching on"),
    ("smtp_connection_cache_time_limit", "2s", "how long an idle session is kept (both defaults)"),
    ("smtp_connection_reuse_time_limit", "300s", "how long a session is reused (both defaults)"),
    ("smtp_tls_security_level", "none", "TLS off (Petrel's default is may)"),
    ("smtpd_tls_security_level", "none", "TLS off"),
    ("smtpd_recipient_limit", "10000", "workloads 3-4 send 2,000 recipients in one message (default 1000 in both)"),
    ("qmgr_message_active_limit", "20000", "messages in the active queue (both defaults)"),
    ("qmgr_message_recipient_limit", "20000", "recipients in memory (both defaults)"),
    ("queue_run_delay", "1s", "workload 5 ends through retries: the same short retry cycle in both"),
    ("minimal_backoff_time", "1s", "(defaults 300s would measure the timer, not the MTA)"),
    ("maximal_backoff_time", "10s", ""),
    ("home_mailbox", "Maildir/", "local delivery into ~/Maildir/new"),
    ("alias_maps", "hash:{etc}/aliases", "the same small alias table, built by each one's postalias"),
    ("alias_database", "hash:{etc}/aliases", ""),
    ("message_size_limit", "10240000", "(both defaults)"),
]

# Only Postfix has these.
POSTFIX_SETTINGS = [
    ("compatibility_level", "3.6", "current defaults, no compatibility warnings"),
    ("biff", "no", "Petrel has no biff notification (Debian's main.cf turns it off too)"),
    ("smtp_dns_support_level", "disabled", "no DNS"),
]

ALIASES = "postmaster: root\nMAILER-DAEMON: postmaster\nabuse: postmaster\n"


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(cmd, log, env=None, timeout=60):
    """CMD with its output appended to LOG; True if it exited 0."""
    with open(log, "a") as f:
        f.write("$ %s\n" % " ".join(cmd))
        f.flush()
        try:
            return subprocess.call(cmd, stdout=f, stderr=f, env=env,
                                   timeout=timeout) == 0
        except (OSError, subprocess.TimeoutExpired) as e:
            f.write("%s\n" % e)
            return False


def bench_home(work):
    """The local recipient's home: the account's home as root, else a
    directory under local_mail_root (Petrel only)."""
    if os.geteuid() == 0:
        return os.path.join(work, "home")
    return os.path.join(work, "mailroot", BENCH_USER)


def ensure_bench_user(work, log):
    """As root: the system account petrelbench exists and its home is
    WORK/home (created, or moved there: the caller holds the bench lock).
    Returns the home directory, or raises RuntimeError."""
    home = bench_home(work)
    os.makedirs(home, exist_ok=True)
    if os.geteuid() != 0:
        return home
    try:
        pw = pwd.getpwnam(BENCH_USER)
    except KeyError:
        if not run(["useradd", "--system", "--user-group", "--no-create-home",
                    "--home-dir", home, "--shell", "/usr/sbin/nologin",
                    "--comment", "Petrel benchmark recipient", BENCH_USER], log):
            raise RuntimeError("cannot create the account %s (see %s)" % (BENCH_USER, log))
        pw = pwd.getpwnam(BENCH_USER)
    if pw.pw_dir != home:
        if not run(["usermod", "--home", home, BENCH_USER], log):
            raise RuntimeError("cannot set the home of %s to %s" % (BENCH_USER, home))
        pw = pwd.getpwnam(BENCH_USER)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    os.chmod(home, 0o700)
    return home


class Instance:
    name = "?"

    def __init__(self, workdir, build, home):
        self.dir = workdir
        self.build = build
        self.home = home
        self.etc = os.path.join(workdir, "etc")
        self.queue = os.path.join(workdir, "queue")
        self.log = os.path.join(workdir, "maillog")
        self.cmdlog = os.path.join(workdir, "commands.log")
        self.started = False
        os.makedirs(self.etc, exist_ok=True)
        os.chmod(workdir, 0o755)

    def configure(self, smtpd_port, relay_port, transport):
        """main.cf, master.cf, transport and aliases for this run."""
        self.smtpd_port = smtpd_port
        lines = []
        for name, value, _ in SETTINGS + self.own_settings():
            lines.append("%s = %s" % (name, value.format(etc=self.etc, relay=relay_port)))
        with open(os.path.join(self.etc, "main.cf"), "w") as f:
            f.write("# Written by bench/mta.py for one benchmark run.\n")
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(self.etc, "transport"), "w") as f:
            for domain, port in sorted(transport.items()):
                f.write("%s smtp:[127.0.0.1]:%d\n" % (domain, port))
        with open(os.path.join(self.etc, "master.cf"), "w") as f:
            f.write(self.master_cf(smtpd_port))
        with open(os.path.join(self.etc, "aliases"), "w") as f:
            f.write(ALIASES)
        return self.make_aliases()

    def queue_empty(self):
        for sub in ("maildrop", "incoming", "active", "deferred", "hold"):
            for _, _, files in os.walk(os.path.join(self.queue, sub)):
                if files:
                    return False
        return True

    def stop(self, account):
        """Stop it (its own stop command), then anything left in ACCOUNT."""
        if self.started:
            run(self.stop_cmd(), self.cmdlog, timeout=40)
            self.started = False
        deadline = time.time() + 15
        while not account.empty() and time.time() < deadline:
            time.sleep(0.05)
        if not account.empty():
            account.kill_all()
            deadline = time.time() + 5
            while not account.empty() and time.time() < deadline:
                time.sleep(0.05)

    def start(self, account):
        ok = run(account.wrap(self.start_cmd()), self.cmdlog, env=self.env(), timeout=60)
        self.started = True     # even half-started: stop() cleans up
        return ok

    def env(self):
        return None


class Postfix(Instance):
    name = "Postfix"

    @staticmethod
    def missing():
        """Why Postfix cannot run here, or None."""
        if os.geteuid() != 0:
            return "not root"
        if not os.access(POSTFIX, os.X_OK):
            return "not installed (tools/install-deps installs Debian's package)"
        if not os.path.isfile(POSTFIX_MASTER_CF):
            return "%s is missing" % POSTFIX_MASTER_CF
        return None

    @staticmethod
    def version():
        try:
            out = subprocess.run([POSTCONF, "-d", "-h", "mail_version"],
                                 capture_output=True, text=True, timeout=10).stdout
            return out.strip() or "?"
        except (OSError, subprocess.TimeoutExpired):
            return "?"

    def own_settings(self):
        data = os.path.join(self.dir, "data")
        os.makedirs(data, exist_ok=True)
        pw = pwd.getpwnam("postfix")
        os.chown(data, pw.pw_uid, pw.pw_gid)
        return POSTFIX_SETTINGS + [
            ("queue_directory", self.queue, ""),
            ("data_directory", data, ""),
            ("maillog_file", self.log, ""),
            ("maillog_file_prefixes", self.dir, ""),
        ]

    def master_cf(self, port):
        """Debian's stock master.cf: the smtp listener on our port, no
        chroot, without the pipe(8) services (never used here)."""
        out = ["# From %s by bench/mta.py: smtpd on 127.0.0.1:%d, chroot off, no pipe services."
               % (POSTFIX_MASTER_CF, port)]
        keep = True
        with open(POSTFIX_MASTER_CF) as f:
            for line in f:
                line = line.rstrip("\n")
                if not line.strip() or line.startswith("#"):
                    continue
                if line[0].isspace():
                    if keep:
                        out.append(line)
                    continue
                f8 = line.split()
                keep = len(f8) >= 8 and f8[7] != "pipe"
                if not keep:
                    continue
                if f8[0] == "smtp" and f8[1] == "inet":
                    f8[0] = "127.0.0.1:%d" % port
                f8[4] = "n"
                out.append(" ".join(f8[:8]) + ("" if len(f8) == 8 else " " + " ".join(f8[8:])))
        return "\n".join(out) + "\n"

    def make_aliases(self):
        return run([POSTALIAS, "-c", self.etc, os.path.join(self.etc, "aliases")], self.cmdlog)

    def start_cmd(self):
        return [POSTFIX, "-c", self.etc, "start"]

    def stop_cmd(self):
        return [POSTFIX, "-c", self.etc, "stop"]


class Petrel(Instance):
    name = "Petrel"

    @staticmethod
    def version(build):
        try:
            out = subprocess.run([os.path.join(build, "bin", "postconf"), "-d", "-h", "mail_version"],
                                 capture_output=True, text=True, timeout=10).stdout
            return out.strip() or "?"
        except (OSError, subprocess.TimeoutExpired):
            return "?"

    def own_settings(self):
        bindir = os.path.join(self.build, "bin")
        out = [("queue_directory", self.queue, ""),
               ("daemon_directory", bindir, ""),
               ("command_directory", bindir, ""),
               ("maillog_file", self.log, "")]
        if os.geteuid() != 0:
            # A private instance cannot switch users: the recipient is a
            # directory under local_mail_root (doc/local.md).
            out.append(("local_mail_root", os.path.dirname(self.home), ""))
        return out

    def master_cf(self, port):
        """conf/master.cf from the tree, with smtpd on our port and
        chroot off (as Postfix's here)."""
        out = ["# From conf/master.cf by bench/mta.py: smtpd on 127.0.0.1:%d, chroot off." % port]
        with open(os.path.join(SRCDIR, "conf", "master.cf")) as f:
            for line in f:
                line = line.rstrip("\n")
                f8 = line.split()
                if len(f8) >= 8 and not line[0].isspace() and not line.startswith("#"):
                    if f8[0] == "smtp" and f8[1] == "inet":
                        f8[0] = "127.0.0.1:%d" % port
                    f8[4] = "n"
                    line = " ".join(f8)
                out.append(line)
        return "\n".join(out) + "\n"

    def env(self):
        e = dict(os.environ)
        e["MAIL_CONFIG"] = self.etc
        return e

    def make_aliases(self):
        return run([os.path.join(self.build, "bin", "postalias"), os.path.join(self.etc, "aliases")],
                   self.cmdlog, env=self.env())

    def start_cmd(self):
        return [os.path.join(self.build, "bin", "petrel"), "-c", self.etc, "start"]

    def stop_cmd(self):
        return [os.path.join(self.build, "bin", "petrel"), "-c", self.etc, "stop"]
