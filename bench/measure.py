"""Measuring a mail system from outside it: cgroups, /proc and perf.

Nothing here changes the MTA being measured.  Two ways to find and
account its processes:

- as root (CgroupAccount): the instance is started inside its own cgroup
  (cgroup v1 cpuacct for CPU time, cgroup v2 for perf's per-cgroup
  counters).  The instance's total CPU time is exact (cpuacct.usage).
  For the split per daemon, a sampler moves each new process into a
  child cgroup named after its program (smtpd, cleanup, ...) as soon as
  it has executed it; what the process used before the move (read from
  /proc/PID/schedstat, in ns) is added to its daemon.  master stays in
  the instance's own cgroup and is measured from /proc.
- otherwise (ProcAccount): the processes are found in /proc by the
  configuration directory on their command line, and each one's CPU time
  is sampled; the total comes from master's own and reaped children's
  times (exact for processes master reaped) plus the live ones.

The Sampler thread also records the peak number of processes per
program and the instance's summed PSS (/proc/PID/smaps_rollup).
"""

import os
import signal
import statistics
import subprocess
import threading
import time

CPUACCT = "/sys/fs/cgroup/cpuacct"
UNIFIED = "/sys/fs/cgroup/unified"
TOP = "petrel-bench"
TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")

# The daemons the table reports one by one; everything else is "others".
NAMED = ["master", "smtpd", "cleanup", "qmgr", "smtp", "local", "bounce",
         "trivial-rewrite"]


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def proc_stat(pid):
    """(comm, ppid, utime+stime ticks, cutime+cstime ticks) or None."""
    s = read("/proc/%d/stat" % pid)
    if not s:
        return None
    # comm is in parentheses and may hold blanks: split after the last ')'.
    lp, rp = s.find("("), s.rfind(")")
    comm = s[lp + 1:rp]
    f = s[rp + 2:].split()
    # f[0] is the state (field 3); utime is field 14, so f[11].
    return comm, int(f[1]), int(f[11]) + int(f[12]), int(f[13]) + int(f[14])


def runtime_ns(pid):
    """CPU time of process PID so far, in ns (/proc/PID/schedstat; the
    processes measured here are single-threaded).  /proc/PID/stat only
    has clock ticks, which would round a process that lived a few ms to
    nothing."""
    s = read("/proc/%d/schedstat" % pid)
    try:
        return int(s.split()[0])
    except (AttributeError, IndexError, ValueError):
        return 0


def pss_kib(pid):
    s = read("/proc/%d/smaps_rollup" % pid, "")
    for line in s.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def cgroups_usable():
    """Why cgroup accounting cannot be used, or None if it can."""
    if os.geteuid() != 0:
        return "not root"
    for d in (CPUACCT, UNIFIED):
        if not os.path.isfile(os.path.join(d, "cgroup.procs")):
            return "%s is not mounted" % d
    return None


def perf_usable():
    if os.geteuid() != 0:
        return "not root (perf tracepoints need root)"
    if subprocess.call(["sh", "-c", "command -v perf"],
                       stdout=subprocess.DEVNULL) != 0:
        return "perf is not installed (linux-perf)"
    if read(UNIFIED + "/cgroup.procs") is None:
        return "no cgroup v2 hierarchy at %s for perf -G" % UNIFIED
    return None


def remove_cgroup_tree(path):
    """rmdir PATH and its subdirectories, deepest first (cgroups must be empty)."""
    if not os.path.isdir(path):
        return
    for root, dirs, _ in os.walk(path, topdown=False):
        for d in dirs:
            try:
                os.rmdir(os.path.join(root, d))
            except OSError:
                pass
    try:
        os.rmdir(path)
    except OSError:
        pass


def remove_stale_cgroups():
    """Left over by a bench that was killed: remove the empty ones."""
    for base in (CPUACCT, UNIFIED):
        top = os.path.join(base, TOP)
        if os.path.isdir(top):
            for d in os.listdir(top):
                remove_cgroup_tree(os.path.join(top, d))


class CgroupAccount:
    """An instance's cgroups: cpuacct TOP/NAME (children per daemon) and
    unified TOP/NAME (for perf -G)."""

    def __init__(self, name):
        self.rel = "%s/%s" % (TOP, name)
        self.cpu = os.path.join(CPUACCT, self.rel)
        self.v2 = os.path.join(UNIFIED, self.rel)
        for d in (self.cpu, self.v2):
            os.makedirs(d, exist_ok=True)
        self.master = None
        self.premove = {}       # daemon -> ns used before it was moved
        self.measuring = False

    def wrap(self, cmd):
        """CMD run so that it and all it starts are in this instance's cgroups."""
        return ["sh", "-c",
                'echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" '
                '&& shift 2 && exec "$@"', "sh", self.cpu, self.v2] + cmd

    def _procs(self, d):
        s = read(os.path.join(d, "cgroup.procs"), "")
        return [int(x) for x in s.split()]

    def _children(self):
        try:
            return [e.name for e in os.scandir(self.cpu) if e.is_dir()]
        except OSError:
            return []

    def pids(self):
        out = self._procs(self.cpu)
        for d in self._children():
            out += self._procs(os.path.join(self.cpu, d))
        return out

    def _find_master(self, own):
        for pid in own:
            st = proc_stat(pid)
            if st and st[0] == "master":
                p = proc_stat(st[1])
                if not p or p[0] != "master" or st[1] not in own:
                    return pid
        return None

    def tick(self):
        """Move new processes into their daemon's cgroup; returns
        {daemon: [pids]} of everything alive."""
        own = self._procs(self.cpu)
        if self.master is None:
            self.master = self._find_master(own)
        for pid in own:
            if pid == self.master:
                continue
            st = proc_stat(pid)
            if not st:
                continue
            comm, ppid = st[0], st[1]
            # Forked by master but not yet executed: wait for the exec.
            if comm == "master" and ppid == self.master:
                continue
            ns = runtime_ns(pid)
            d = os.path.join(self.cpu, comm)
            try:
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, "cgroup.procs"), "w") as f:
                    f.write(str(pid))
            except OSError:
                continue        # gone meanwhile
            if self.measuring:
                self.premove[comm] = self.premove.get(comm, 0) + ns
        out = {}
        for pid in self._procs(self.cpu):
            st = proc_stat(pid)
            if st:
                out.setdefault(st[0], []).append(pid)
        for d in self._children():
            pids = self._procs(os.path.join(self.cpu, d))
            if pids:
                out.setdefault(d, []).extend(pids)
        return out

    def snapshot(self):
        usage = {"": int(read(self.cpu + "/cpuacct.usage", "0"))}
        for d in self._children():
            usage[d] = int(read(os.path.join(self.cpu, d, "cpuacct.usage"), "0"))
        usage["master"] = runtime_ns(self.master) if self.master else 0
        return usage

    def start_window(self):
        self.premove = {}
        self.measuring = True
        self.base = self.snapshot()

    def end_window(self):
        """CPU seconds per daemon in the window, and the exact total ("")."""
        self.measuring = False
        now = self.snapshot()
        cpu = {}
        for k, v in now.items():
            cpu[k] = (v - self.base.get(k, 0)) / 1e9
        for k, ns in self.premove.items():
            cpu[k] = cpu.get(k, 0.0) + ns / 1e9
        return cpu

    def empty(self):
        return not self.pids()

    def kill_all(self, sig=signal.SIGKILL):
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def remove(self):
        remove_cgroup_tree(self.cpu)
        remove_cgroup_tree(self.v2)


class ProcAccount:
    """Without root: processes whose command line names MARKER (the
    instance's configuration directory)."""

    def __init__(self, marker):
        self.marker = marker.encode()
        self.master = None
        self.measuring = False
        self.first = {}         # pid -> ns when first seen in the window
        self.last = {}          # pid -> (daemon, ns) last seen

    def wrap(self, cmd):
        return cmd

    def pids(self):
        out = []
        for e in os.scandir("/proc"):
            if not e.name.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % e.name, "rb") as f:
                    if self.marker in f.read():
                        out.append(int(e.name))
            except OSError:
                pass
        return out

    def tick(self):
        out = {}
        for pid in self.pids():
            st = proc_stat(pid)
            if not st:
                continue
            comm, ppid = st[0], st[1]
            if self.master is None and comm == "master":
                p = proc_stat(ppid)
                if not p or p[0] != "master":
                    self.master = pid
            out.setdefault(comm, []).append(pid)
            if self.measuring and pid != self.master:
                self.first.setdefault(pid, 0)
                self.last[pid] = (comm, runtime_ns(pid))
        return out

    def _master_times(self):
        """(own ns, own + reaped children's s)."""
        m = proc_stat(self.master) if self.master else None
        if not m:
            return 0, 0.0
        return runtime_ns(self.master), (m[2] + m[3]) * TICK_NS / 1e9

    def start_window(self):
        self.tick()
        self.master0 = self._master_times()
        self.first, self.last = {}, {}
        for pid in self.pids():
            st = proc_stat(pid)
            if st and pid != self.master:
                ns = runtime_ns(pid)
                self.first[pid] = ns
                self.last[pid] = (st[0], ns)
        self.alive0 = dict(self.first)
        self.measuring = True

    def end_window(self):
        self.tick()
        self.measuring = False
        alive = set(self.pids())
        cpu = {}
        for pid, (comm, ns) in self.last.items():
            cpu[comm] = cpu.get(comm, 0.0) + (ns - self.first.get(pid, 0)) / 1e9
        if not self.master:
            cpu[""] = sum(cpu.values())
            return cpu
        own, everything = self._master_times()
        cpu["master"] = (own - self.master0[0]) / 1e9
        # master's own time and its reaped children's (whole lives) ...
        total = everything - self.master0[1]
        # ... minus what those reaped in the window had used before it ...
        for pid, ns in self.alive0.items():
            if pid not in alive:
                total -= ns / 1e9
        # ... plus the children still alive.
        for pid in alive:
            if pid in self.last and pid != self.master:
                total += (self.last[pid][1] - self.first.get(pid, 0)) / 1e9
        cpu[""] = total
        return cpu

    def empty(self):
        return not self.pids()

    def kill_all(self, sig=signal.SIGKILL):
        for pid in self.pids():
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def remove(self):
        pass


class Sampler(threading.Thread):
    """Every INTERVAL s: account.tick() (and with it the cgroup moves);
    while measuring, the peak processes per program and, every PSS_EVERY
    ticks, the instance's summed PSS."""

    def __init__(self, account, interval=0.1, pss_every=5):
        super().__init__(daemon=True)
        self.account = account
        self.interval = interval
        self.pss_every = pss_every
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.measuring = False
        self.peak = {}
        self.peak_total = 0
        self.pss = []
        self.n = 0
        self.error = None

    def _sample(self, force_pss=False):
        byname = self.account.tick()
        if not self.measuring:
            return
        total = others = 0
        for name, pids in byname.items():
            self.peak[name] = max(self.peak.get(name, 0), len(pids))
            total += len(pids)
            if name not in NAMED:
                others += len(pids)
        self.peak["others"] = max(self.peak.get("others", 0), others)
        self.peak_total = max(self.peak_total, total)
        if force_pss or self.n % self.pss_every == 0:
            self.pss.append(sum(pss_kib(p) for ps in byname.values() for p in ps))
        self.n += 1

    def run(self):
        while not self.stopping.wait(self.interval):
            with self.lock:
                try:
                    self._sample()
                except Exception as e:      # keep sampling; the run says so
                    self.error = "%s: %s" % (type(e).__name__, e)

    def start_window(self):
        with self.lock:
            self.account.start_window()
            self.peak, self.peak_total, self.pss, self.n = {}, 0, [], 0
            self.measuring = True
            self._sample(force_pss=True)

    def end_window(self):
        with self.lock:
            self._sample(force_pss=True)
            self.measuring = False
            cpu = self.account.end_window()
        pss = {"peak": max(self.pss) / 1024.0 if self.pss else None,
               "median": statistics.median(self.pss) / 1024.0 if self.pss else None}
        return cpu, dict(self.peak), self.peak_total, pss

    def stop(self):
        self.stopping.set()
        if self.is_alive():
            self.join(5)


class FsyncCounter:
    """fsync + fdatasync calls made by the processes of one cgroup (v2),
    counted by perf's syscall tracepoints while it runs."""

    EVENTS = ["syscalls:sys_enter_fsync", "syscalls:sys_enter_fdatasync"]

    def __init__(self, cgroup_rel, outfile):
        self.out = outfile
        ready = outfile + ".ready"
        cmd = ["perf", "stat", "-a", "-x", ",", "-o", outfile]
        for e in self.EVENTS:
            cmd += ["-e", e]
        cmd += ["-G", ",".join([cgroup_rel] * len(self.EVENTS))]
        # perf enables its counters, then starts the command: once the
        # command has written its pid, perf counts.  It stops counting and
        # writes the figures when the command ends.
        cmd += ["--", "sh", "-c", 'echo $$ > "$1.tmp" && mv "$1.tmp" "$1" && exec sleep 86400',
                "sh", ready]
        self.p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                  stderr=open(outfile + ".err", "w"))
        self.child = None
        deadline = time.time() + 10
        while time.time() < deadline and self.p.poll() is None:
            s = read(ready, "")
            if s.strip().isdigit():
                self.child = int(s)
                break
            time.sleep(0.02)

    def stop(self):
        """The count, or None (with the reason in outfile.err)."""
        if self.p.poll() is None:
            try:
                os.kill(self.child, signal.SIGTERM)
            except (OSError, TypeError):
                self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
                return None
        total, seen = 0, 0
        for line in read(self.out, "").splitlines():
            f = line.split(",")
            if len(f) > 2 and f[2] in self.EVENTS:
                if not f[0].strip().isdigit():
                    return None     # <not counted> / <not supported>
                total += int(f[0])
                seen += 1
        return total if seen == len(self.EVENTS) else None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        if self.child:
            try:
                os.kill(self.child, signal.SIGKILL)
            except OSError:
                pass
