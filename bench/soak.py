#!/usr/bin/env python3
"""Soak test: a private Petrel instance under mixed traffic for a fixed
time while daemons are killed at random; then nothing may be lost.

    python3 bench/soak.py --build build [--duration 30m] [--rate 20] [--keep]

(make soak [DURATION=2m]).  doc/performance.md, "Soak", says what it does
and how to read the report.  Loopback only; every loop is bounded in
count and time; the instance, the sinks and the clients are stopped at
the end.  As root, the instance, the sinks and the clients run as the
user nobody (a private instance, local delivery under local_mail_root);
this script stays root to watch and kill them.

Traffic, every second, as messages of smtp-source (-N numbers them all
apart, -o lists those that got a 250):
  relay   to the main sink (2% of recipients get a 450: retries)
  local   to a Maildir (user u)
  bounce  to permfail+N at the main sink: a 550, so a DSN to the sender
          (soak@localhost, a local Maildir)
  flap    to flap.test, a sink that is up 20 s and down 10 s
  limit   to limit.test, a sink that takes 2 sessions at once (421 beyond)
Kills: every 2-5 s a SIGKILL to a random process of smtpd, cleanup,
smtp, local or bounce; in the first half also qmgr and scache (so the
second half shows their memory undisturbed).  master is never killed.
"""

import argparse
import os
import pwd
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POOL_KILL = ["smtpd", "cleanup", "smtp", "local", "bounce"]
LONG_KILL = ["qmgr", "scache"]
WATCH = ["master", "qmgr", "scache", "smtpd", "cleanup", "smtp", "local", "bounce"]
LONG_RUNNING = ["master", "qmgr", "scache"]
CLASSES = [  # name, share of the rate, recipient pattern
    ("relay", 0.40, "r%n@far.test"),
    ("local", 0.20, "u+%n@localhost"),
    ("bounce", 0.05, "permfail+%n@far.test"),
    ("flap", 0.15, "f%n@flap.test"),
    ("limit", 0.20, "l%n@limit.test"),
]
FLAP_UP, FLAP_DOWN = 20, 10
AS_USER = {}                # Popen arguments: run as nobody when root
SUBJECT = re.compile(rb"^Subject: smtp-source message (\d+)\r?$", re.M)


def duration(text):
    m = re.fullmatch(r"(\d+)([smh]?)", text.strip())
    if not m:
        raise argparse.ArgumentTypeError("a duration: N, Ns, Nm or Nh")
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def log(msg):
    print("soak: %s" % msg, flush=True)


def wait_until(cond, seconds, step=0.1):
    end = time.time() + seconds
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


class Sink:
    def __init__(self, tools, work, name, args, port=0):
        self.tools, self.work, self.name, self.args = tools, work, name, args
        self.port = port
        self.incarnation = 0
        self.p = None
        self.start()

    def start(self):
        self.incarnation += 1
        base = os.path.join(self.work, "%s.%d" % (self.name, self.incarnation))
        self.saved = base + ".saved"
        os.makedirs(self.saved)
        own(self.saved)
        portfile = base + ".port"
        cmd = [os.path.join(self.tools, "smtp-sink"), "-P", portfile, "-s", base + ".stats",
               "-d", self.saved] + self.args + ["127.0.0.1:%d" % self.port]
        self.p = subprocess.Popen(cmd, stdout=open(base + ".out", "w"),
                                  stderr=open(base + ".err", "w"), **AS_USER)
        ok = wait_until(lambda: self.p.poll() is not None or
                        (os.path.exists(portfile) and os.path.getsize(portfile) > 0), 10)
        if not ok or self.p.poll() is not None:
            raise RuntimeError("smtp-sink %s did not start" % self.name)
        self.port = int(open(portfile).read())

    def stop(self):
        if self.p and self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)
        self.p = None

    def up(self):
        return self.p is not None and self.p.poll() is None

    def saved_dirs(self):
        return [os.path.join(self.work, "%s.%d.saved" % (self.name, i))
                for i in range(1, self.incarnation + 1)]


def instance_procs(etc):
    """{pid: name} of every process with "-c ETC" on its command line."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        for i in range(len(argv) - 1):
            if argv[i] == b"-c" and argv[i + 1] == etc.encode():
                out[int(d)] = os.path.basename(argv[0].decode(errors="replace"))
                break
    return out


def rss_fds(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            rss = next((int(l.split()[1]) for l in f if l.startswith("VmRSS:")), 0)
        return rss, len(os.listdir("/proc/%d/fd" % pid))
    except (OSError, StopIteration):
        return None


def sample(etc):
    """{name: [(pid, rss_kib, fds)]} of the watched daemons."""
    out = {}
    for pid, name in instance_procs(etc).items():
        if name in WATCH:
            v = rss_fds(pid)
            if v:
                out.setdefault(name, []).append((pid, v[0], v[1]))
    return out


def own(path):
    """As root: path and everything below it belong to nobody."""
    if not AS_USER:
        return
    os.chown(path, AS_USER["user"], AS_USER["group"])
    for root, dirs, files in os.walk(path):
        for n in [root] + [os.path.join(root, f) for f in files]:
            os.chown(n, AS_USER["user"], AS_USER["group"])


def configure(work, build, smtpd_port, sinks):
    etc = os.path.join(work, "etc")
    os.makedirs(etc)
    for u in ("u", "soak"):
        os.makedirs(os.path.join(work, "mailroot", u))
    bindir = os.path.join(build, "bin")
    settings = [
        ("queue_directory", os.path.join(work, "queue")),
        ("daemon_directory", bindir), ("command_directory", bindir),
        ("maillog_file", os.path.join(work, "maillog")),
        ("myhostname", "soak.test"), ("mydestination", "localhost"),
        ("inet_interfaces", "127.0.0.1"), ("inet_protocols", "ipv4"),
        ("mynetworks", "127.0.0.0/8"),
        ("relayhost", "[127.0.0.1]:%d" % sinks["main"].port),
        ("transport_maps", "texthash:%s/transport" % etc),
        ("local_mail_root", os.path.join(work, "mailroot")),
        ("home_mailbox", "Maildir/"), ("alias_maps", ""), ("alias_database", ""),
        ("local_recipient_maps", ""), ("recipient_delimiter", "+"),
        ("smtpd_peername_lookup", "no"), ("smtpd_error_sleep_time", "0"),
        ("smtp_tls_security_level", "none"), ("smtpd_tls_security_level", "none"),
        ("smtp_connect_timeout", "5s"), ("smtp_helo_timeout", "10s"),
        ("queue_run_delay", "5s"), ("minimal_backoff_time", "5s"),
        ("maximal_backoff_time", "20s"), ("service_throttle_time", "1s"),
        ("max_use", "100"), ("max_idle", "100s"),
    ]
    with open(os.path.join(etc, "main.cf"), "w") as f:
        f.write("# Written by bench/soak.py.\n")
        for k, v in settings:
            f.write("%s = %s\n" % (k, v))
    with open(os.path.join(etc, "transport"), "w") as f:
        f.write("flap.test smtp:[127.0.0.1]:%d\n" % sinks["flap"].port)
        f.write("limit.test smtp:[127.0.0.1]:%d\n" % sinks["limit"].port)
    with open(os.path.join(SRCDIR, "conf", "master.cf")) as src, \
            open(os.path.join(etc, "master.cf"), "w") as f:
        for line in src:
            w = line.split()
            if len(w) >= 2 and not line[0].isspace() and w[0] == "smtp" and w[1] == "inet":
                line = "127.0.0.1:%d %s" % (smtpd_port, line.split(None, 1)[1])
            f.write(line)
    return etc


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def petrel(build, etc, *args):
    return subprocess.run([os.path.join(build, "bin", "petrel"), "-c", etc] + list(args),
                          capture_output=True, text=True, timeout=60, **AS_USER)


def queue_files(work):
    n = 0
    for q in ("maildrop", "incoming", "active", "deferred", "hold"):
        for _, _, files in os.walk(os.path.join(work, "queue", q)):
            n += sum(1 for f in files if not f.startswith("tmp."))
    return n


def copies_in(dirs, first_only):
    """{message number: [mtime, ...]} of the copies in the files of dirs.
    first_only: the message's own Subject (its first); else every
    Subject in the file (a DSN carries the bounced message's)."""
    out = {}
    for d in dirs:
        if not os.path.isdir(d):
            continue
        for e in os.scandir(d):
            if not e.is_file():
                continue
            with open(e.path, "rb") as f:
                data = f.read(1 << 20)
            nums = [int(m.group(1)) for m in SUBJECT.finditer(data)]
            if first_only:
                nums = nums[:1]
            for n in set(nums):
                out.setdefault(n, []).append(e.stat().st_mtime)
    return out


def interrupted(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def main():
    # SIGTERM and SIGINT (even when inherited as ignored, as in a
    # background job) stop the run through the clean-up below.
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRCDIR, "build"))
    ap.add_argument("--duration", type=duration, default=duration("30m"))
    ap.add_argument("--rate", type=int, default=20, help="messages a second (default 20)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    tools = os.path.join(build, "tests", "tools")
    for p in ("bin/petrel", "bin/master", "tests/tools/smtp-sink", "tests/tools/smtp-source"):
        if not os.access(os.path.join(build, p), os.X_OK):
            sys.exit("soak: %s/%s missing: make all tests first" % (build, p))
    seed = a.seed if a.seed is not None else int(time.time())
    rnd = random.Random(seed)
    work = tempfile.mkdtemp(prefix="petrel-soak.")
    os.chmod(work, 0o755)
    if os.geteuid() == 0:
        pw = pwd.getpwnam("nobody")
        AS_USER.update(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
        own(work)
    log("work directory %s, duration %d s, %d messages/s, seed %d" % (work, a.duration, a.rate, seed))
    sinks, sources, etc, ok = {}, [], None, False
    try:
        sinks["main"] = Sink(tools, work, "main", ["-t", "2", "-r", str(seed)])
        sinks["flap"] = Sink(tools, work, "flap", [])
        sinks["limit"] = Sink(tools, work, "limit", ["-S", "2"])
        smtpd_port = free_port()
        etc = configure(work, build, smtpd_port, sinks)
        own(work)
        r = petrel(build, etc, "start")
        if r.returncode != 0:
            raise RuntimeError("petrel start: %s%s" % (r.stdout, r.stderr))
        if not wait_until(lambda: "qmgr" in instance_procs(etc).values(), 10):
            raise RuntimeError("qmgr did not start")
        ok = run(a, rnd, work, build, tools, etc, smtpd_port, sinks, sources)
    finally:
        for p in sources:
            if p.poll() is None:
                p.kill()
                p.wait()
        if etc:
            petrel(build, etc, "stop")
            wait_until(lambda: not instance_procs(etc), 15)
            for pid in instance_procs(etc):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for s in sinks.values():
            s.stop()
    if ok and not a.keep:
        subprocess.run(["rm", "-rf", work])
    else:
        log("work directory kept: %s" % work)
    sys.exit(0 if ok else 1)


def run(a, rnd, work, build, tools, etc, smtpd_port, sinks, sources):
    accepted_file = os.path.join(work, "accepted.list")
    open(accepted_file, "a").close()
    own(accepted_file)
    next_num = 1
    plan = {}                   # number -> class, for every message submitted
    kills = []                  # (time, name, pid)
    flaps = []                  # times the flapping sink went down
    samples = {}                # label -> sample
    series = open(os.path.join(work, "rss.csv"), "w")
    series.write("seconds,name,pid,rss_kib,fds\n")
    t0 = time.time()
    end = t0 + a.duration
    next_kill = t0 + rnd.uniform(2, 5)
    flap_next = t0 + FLAP_UP
    marks = [("start", t0 + min(60, a.duration * 0.1)), ("middle", t0 + a.duration * 0.5)]
    next_series = t0
    tick = 0
    credit = dict((c[0], 0.0) for c in CLASSES)
    max_ticks = a.duration + 10
    while time.time() < end and tick < max_ticks:
        tick += 1
        now = time.time()
        # Traffic: each class gets its share of the rate, as one
        # smtp-source run a tick (fractions carried over).
        sources[:] = [p for p in sources if p.poll() is None]
        if len(sources) < 40:
            for name, share, pattern in CLASSES:
                credit[name] += a.rate * share
                n = int(credit[name])
                if n < 1:
                    continue
                credit[name] -= n
                for i in range(n):
                    plan[next_num + i] = name
                cmd = [os.path.join(tools, "smtp-source"), "-a", "-s", "2", "-m", str(n),
                       "-M", "5", "-N", str(next_num), "-l", "2000", "-w", "20",
                       "-f", "soak@localhost", "-t", pattern, "-o", accepted_file,
                       "127.0.0.1:%d" % smtpd_port]
                next_num += n
                sources.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                                stderr=open(os.path.join(work, "source.err"), "a"),
                                                **AS_USER))
        # The flapping destination.
        if now >= flap_next:
            if sinks["flap"].up():
                sinks["flap"].stop()
                flaps.append(now)
                flap_next = now + FLAP_DOWN
            else:
                sinks["flap"].start()
                flap_next = now + FLAP_UP
        # Kills.
        if now >= next_kill:
            next_kill = now + rnd.uniform(2, 5)
            names = POOL_KILL + (LONG_KILL if now < t0 + a.duration / 2 else [])
            procs = [(pid, n) for pid, n in instance_procs(etc).items() if n in names]
            if procs:
                pid, name = rnd.choice(procs)
                try:
                    os.kill(pid, signal.SIGKILL)
                    kills.append((now, name, pid))
                except OSError:
                    pass
        # Memory and descriptors.
        for label, when in marks:
            if label not in samples and now >= when:
                samples[label] = sample(etc)
        if now >= next_series:
            next_series = now + 10
            for name, rows in sorted(sample(etc).items()):
                for pid, rss, fds in rows:
                    series.write("%d,%s,%d,%d,%d\n" % (now - t0, name, pid, rss, fds))
            series.flush()
        time.sleep(max(0.0, 1.0 - (time.time() - now)))
    samples["end"] = sample(etc)
    log("traffic and kills stopped after %d s; draining" % (time.time() - t0))
    # Drain: no more kills, the flapping sink up, clients done.
    if not sinks["flap"].up():
        sinks["flap"].start()
    deadline = time.time() + 60
    for p in sources:
        try:
            p.wait(max(1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    drained = wait_until(lambda: queue_files(work) == 0, 300, step=1)
    series.close()
    return report(a, work, plan, kills, flaps, samples, sinks, drained, accepted_file, t0)


def report(a, work, plan, kills, flaps, samples, sinks, drained, accepted_file, t0):
    accepted = {}
    with open(accepted_file) as f:
        for line in f:
            w = line.split(None, 1)
            if w and w[0].isdigit():
                accepted[int(w[0])] = w[1].strip() if len(w) > 1 else ""
    # Queue IDs whose delivery the log says may have happened although
    # it failed (the connection was lost after the end of the data).
    maybe_twice = set()
    with open(os.path.join(work, "maillog"), errors="replace") as f:
        for line in f:
            if "may be sent more than once" in line:
                m = re.search(r"\]: ([0-9A-Z]+): to=", line)
                if m:
                    maybe_twice.add(m.group(1))
    remote = {}
    for name in ("main", "flap", "limit"):
        for n, ts in copies_in(sinks[name].saved_dirs(), True).items():
            remote.setdefault(n, []).extend(ts)
    mailroot = os.path.join(work, "mailroot")
    local = copies_in([os.path.join(mailroot, "u", "Maildir", d) for d in ("new", "cur")], True)
    dsns = copies_in([os.path.join(mailroot, "soak", "Maildir", d) for d in ("new", "cur")], False)

    by_class = {}
    lost, dups, unexplained, unaccepted = [], [], [], 0
    why = {"kill": 0, "lost connection after the data": 0, "destination went down": 0}
    kill_times = [(t, n) for t, n, _ in kills]
    for n, cls in plan.items():
        got = dsns.get(n, []) if cls == "bounce" else (local if cls == "local" else remote).get(n, [])
        st = by_class.setdefault(cls, {"submitted": 0, "accepted": 0, "delivered": 0, "copies": 0})
        st["submitted"] += 1
        if n in accepted:
            st["accepted"] += 1
        if got:
            st["delivered"] += 1
            st["copies"] += len(got)
        if n in accepted and not got:
            lost.append(n)
        if got and n not in accepted:
            unaccepted += 1
        if len(got) > 1:
            dups.append(n)
            ts = sorted(got)
            # A duplicate is explained by a kill, between the first copy
            # and the last, of a process that can deliver twice: the agent
            # (after the remote took it, before it reported) or qmgr
            # (before the done mark).
            agents = {"relay": ("smtp", "qmgr"), "flap": ("smtp", "qmgr"),
                      "limit": ("smtp", "qmgr"), "local": ("local", "qmgr"),
                      "bounce": ("bounce", "qmgr", "local", "smtp", "cleanup")}[cls]
            qid = accepted.get(n, "").rsplit(" ", 1)[-1]
            if any(ts[0] - 2 <= t <= ts[-1] + 1 and k in agents for t, k in kill_times):
                why["kill"] += 1
            elif qid in maybe_twice:
                why["lost connection after the data"] += 1
            elif cls == "flap" and any(ts[0] - 1 <= t <= ts[-1] + 1 for t in flaps):
                why["destination went down"] += 1
            else:
                unexplained.append(n)
    total_sub = sum(s["submitted"] for s in by_class.values())
    total_acc = sum(s["accepted"] for s in by_class.values())
    ndup = sum(len((dsns if plan[n] == "bounce" else local if plan[n] == "local" else remote)[n]) - 1
               for n in dups)
    out = []
    out.append("Soak report: %d s of traffic at %d messages/s, %d kills, queue %s" %
               (a.duration, a.rate, len(kills), "drained" if drained else
                "NOT drained (%d files left)" % queue_files(work)))
    out.append("")
    out.append("%-8s %10s %10s %10s %10s" % ("class", "submitted", "accepted", "delivered", "copies"))
    for cls, _, _ in CLASSES:
        s = by_class.get(cls, {"submitted": 0, "accepted": 0, "delivered": 0, "copies": 0})
        out.append("%-8s %10d %10d %10d %10d" % (cls, s["submitted"], s["accepted"], s["delivered"], s["copies"]))
    out.append("%-8s %10d %10d" % ("total", total_sub, total_acc))
    out.append("(delivered: distinct messages found at their destination; for bounce,"
               " a DSN back to the sender)")
    out.append("")
    out.append("lost (250 but never delivered): %d%s" % (len(lost), (": " + " ".join(map(str, sorted(lost)[:20]))) if lost else ""))
    out.append("duplicates: %d extra copies of %d messages: %d unexplained%s" %
               (ndup, len(dups), len(unexplained),
                (": " + " ".join(map(str, unexplained[:20]))) if unexplained else ""))
    out.append("  explained: %d by a kill of the delivering agent or qmgr between the copies,"
               " %d by a connection lost after the end of the data (logged 'may be sent"
               " more than once'), %d by the flapping destination going down between them" %
               (why["kill"], why["lost connection after the data"], why["destination went down"]))
    out.append("delivered without a 250 (the client lost the reply: smtpd or cleanup "
               "killed after the commit): %d" % unaccepted)
    out.append("flapping destination went down %d times" % len(flaps))
    kc = {}
    for _, n, _ in kills:
        kc[n] = kc.get(n, 0) + 1
    out.append("kills: " + ", ".join("%s %d" % (n, kc[n]) for n in sorted(kc)))
    out.append("")
    out.append("Memory (RSS, KiB) and descriptors of the daemons: long-running ones per process,")
    out.append("pools as count/max RSS/max fds.  (qmgr and scache are killed in the first half only.)")
    out.append("%-8s %-26s %-26s %-26s" % ("", "start", "middle", "end"))
    for name in WATCH:
        cells = []
        for label in ("start", "middle", "end"):
            rows = samples.get(label, {}).get(name, [])
            if not rows:
                cells.append("-")
            elif name in LONG_RUNNING:
                cells.append(" ".join("pid %d %d/%dfd" % (p, r, f) for p, r, f in rows))
            else:
                cells.append("%d procs, %d, %dfd" % (len(rows), max(r for _, r, _ in rows),
                                                   max(f for _, _, f in rows)))
        out.append("%-8s %-26s %-26s %-26s" % (name, cells[0], cells[1], cells[2]))
    verdict = []
    for name in LONG_RUNNING:
        mid = samples.get("middle", {}).get(name, [])
        end = samples.get("end", {}).get(name, [])
        if mid and end and mid[0][0] == end[0][0]:
            d_rss = end[0][1] - mid[0][1]
            d_fd = end[0][2] - mid[0][2]
            verdict.append("%s %+d KiB %+d fds" % (name, d_rss, d_fd))
        else:
            verdict.append("%s restarted between middle and end" % name)
    out.append("middle -> end, same process: " + "; ".join(verdict))
    out.append("(every 10 s: %s/rss.csv)" % work)
    text = "\n".join(out)
    print(text, flush=True)
    with open(os.path.join(work, "report.txt"), "w") as f:
        f.write(text + "\n")
    return not lost and drained


if __name__ == "__main__":
    main()
