"""One benchmark run: the sinks, one MTA instance, the measurement window.

A workload (workloads.py) calls, in this order:

    sink = h.sink(NAME, SINK_OPTIONS...)   # smtp-sinks, before the MTA
    h.start(relay=sink, transport={...})   # the MTA; the window opens
    ...inject (h.source, or its own SMTP client), wait for the result...
    h.finish(units)                        # the window closes; MTA stopped

and returns its own figures; finish() records the common ones (CPU,
processes, PSS, fsyncs, connections) in h.figures.  close() stops
whatever is still running; the driver always calls it.
"""

import os
import shutil
import subprocess
import time

import measure
import mta

BOUND_START = 10        # s: the instance and the sinks get ready within this
BOUND_DRAIN = 30        # s: the queue empties after the workload's last event


class Timeout(Exception):
    pass


def wait_until(what, cond, deadline, step=0.05):
    """Polls COND until it returns something true (that value is
    returned) or DEADLINE (time.time()) passes: raises Timeout."""
    while True:
        v = cond()
        if v:
            return v
        if time.time() >= deadline:
            raise Timeout(what)
        time.sleep(step)


class Sink:
    """An smtp-sink on 127.0.0.1, port chosen by the kernel."""

    def __init__(self, tools, rundir, name, args, save):
        self.name = name
        base = os.path.join(rundir, name)
        self.stats = base + ".stats"
        self.portfile = base + ".port"
        self.savedir = base + ".saved" if save else None
        cmd = [os.path.join(tools, "smtp-sink"), "-P", self.portfile, "-s", self.stats]
        if save:
            os.makedirs(self.savedir)
            cmd += ["-d", self.savedir]
        cmd += list(args) + ["127.0.0.1:0"]
        self.p = subprocess.Popen(cmd, stdout=open(base + ".out", "w"),
                                  stderr=open(base + ".err", "w"))
        wait_until("smtp-sink %s to listen" % name,
                   lambda: self.p.poll() is not None or
                   (os.path.exists(self.portfile) and os.path.getsize(self.portfile) > 0),
                   time.time() + BOUND_START)
        if self.p.poll() is not None:
            raise RuntimeError("smtp-sink %s did not start: %s" % (name, open(base + ".err").read()))
        self.port = int(open(self.portfile).read())

    def read(self):
        """(counters, mtime of the stats file) read from one open file."""
        try:
            with open(self.stats) as f:
                text = f.read()
                mtime = os.fstat(f.fileno()).st_mtime
        except OSError:
            return {}, None
        vals = {}
        for line in text.splitlines():
            k, _, v = line.partition("=")
            if v.isdigit():
                vals[k] = int(v)
        return vals, mtime

    def value(self, key):
        return self.read()[0].get(key, 0)

    def wait(self, key, n, deadline):
        """Waits until counter KEY reaches N; returns when that happened:
        the stats file's mtime (the sink rewrites it within 20 ms of a
        change)."""
        def reached():
            vals, mtime = self.read()
            return mtime if vals.get(key, 0) >= n else None
        return wait_until("%s %s=%d" % (self.name, key, n), reached, deadline)

    def saved(self):
        """The saved messages: [(mtime, subject, recipients)]."""
        out = []
        for e in sorted(os.scandir(self.savedir), key=lambda e: e.name):
            if not e.name.startswith("msg-"):
                continue
            rcpts, subject = 0, ""
            with open(e.path, errors="replace") as f:
                for line in f:
                    if line in ("\r\n", "\n"):
                        break
                    if line.startswith("X-Sink-Rcpt-To:"):
                        rcpts += 1
                    elif line.lower().startswith("subject:"):
                        subject = line.split(":", 1)[1].strip()
            out.append((e.stat().st_mtime, subject, rcpts))
        return out

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


class Harness:
    def __init__(self, ctx, mta_class, rundir):
        self.ctx = ctx
        self.dir = rundir
        os.makedirs(rundir)
        os.chmod(rundir, 0o755)
        self.inst = mta_class(os.path.join(rundir, "mta"), ctx.build, ctx.home)
        self.sinks = []
        self.sources = []
        self.sampler = None
        self.perf = None
        self.account = None
        self.figures = {}
        self.notes = []
        self.t = {"created": time.time()}
        self.maildir = os.path.join(ctx.home, "Maildir")
        shutil.rmtree(self.maildir, ignore_errors=True)

    # ---- the pieces a workload uses ----

    def sink(self, name, *args, save=False):
        s = Sink(self.ctx.tools, self.dir, name, args, save)
        self.sinks.append(s)
        return s

    def start(self, relay, transport=None):
        """Configures and starts the MTA, starts measuring."""
        inst = self.inst
        self.smtpd_port = mta.free_port()
        os.makedirs(inst.queue, exist_ok=True)
        if not inst.configure(self.smtpd_port, relay.port,
                              {d: s.port for d, s in (transport or {}).items()}):
            raise RuntimeError("%s: cannot build the aliases (see %s)" % (inst.name, inst.cmdlog))
        if self.ctx.cgroups:
            self.account = measure.CgroupAccount("%d-%s" % (os.getpid(), os.path.basename(self.dir)))
        else:
            self.account = measure.ProcAccount(inst.etc)
        if not inst.start(self.account):
            raise RuntimeError("%s did not start: %s" % (inst.name, tail(inst.cmdlog, inst.log)))
        self.sampler = measure.Sampler(self.account)
        self.sampler.start()
        # Ready when qmgr runs (master starts it at once, by its wakeup).
        def qmgr_runs():
            return any((measure.proc_stat(p) or ("",))[0] == "qmgr" for p in self.account.pids())
        wait_until("%s's qmgr to start" % inst.name, qmgr_runs, time.time() + BOUND_START)
        time.sleep(0.3)
        if self.ctx.perf:
            self.perf = measure.FsyncCounter(self.account.rel, os.path.join(self.dir, "perf.out"))
        self.sampler.start_window()
        self.t["window"] = time.time()

    def source(self, *args):
        """smtp-source against the MTA, in the background."""
        base = os.path.join(self.dir, "source%d" % len(self.sources))
        cmd = [os.path.join(self.ctx.tools, "smtp-source")] + list(args) + \
              ["127.0.0.1:%d" % self.smtpd_port]
        p = subprocess.Popen(cmd, stdout=open(base + ".out", "w"), stderr=open(base + ".err", "w"))
        p.base = base
        self.sources.append(p)
        return p

    def wait_source(self, p, deadline):
        wait_until("smtp-source to end", lambda: p.poll() is not None, deadline)
        out = open(p.base + ".out").read()
        vals = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        if p.returncode != 0 or vals.get("failed", "0") != "0":
            self.notes.append("smtp-source: %s of %s messages not accepted" %
                              (vals.get("failed", "?"), vals.get("messages", "?")))

    def deadline(self, seconds):
        return time.time() + seconds

    def finish(self, units):
        """Waits for the queue to empty, closes the window, stops the MTA
        and the sinks.  UNITS: the messages (or recipients) the per-unit
        figures are divided by."""
        try:
            wait_until("%s's queue to empty" % self.inst.name, self.inst.queue_empty,
                       time.time() + BOUND_DRAIN, step=0.1)
        except Timeout:
            self.notes.append("queue not empty %d s after the end" % BOUND_DRAIN)
        self.t["drained"] = time.time()
        cpu, peak, peak_total, pss = self.sampler.end_window()
        if self.sampler.error:
            self.notes.append("sampler: %s" % self.sampler.error)
        fsyncs = self.perf.stop() if self.perf else None
        self.perf = None
        self.inst.stop(self.account)
        self.t["stopped"] = time.time()
        f = self.figures
        f["phases"] = {k: round(v - self.t["created"], 2) for k, v in self.t.items()}
        f["cpu_seconds"] = {k or "(instance)": round(v, 4) for k, v in cpu.items()}
        named = set(measure.NAMED)
        total = cpu.get("", 0.0)
        f["cpu.total"] = total * 1000.0 / units
        for d in measure.NAMED:
            f["cpu." + d] = cpu.get(d, 0.0) * 1000.0 / units
        f["cpu.others"] = max(0.0, total - sum(cpu.get(d, 0.0) for d in named)) * 1000.0 / units
        for d in measure.NAMED:
            f["procs." + d] = peak.get(d, 0)
        f["procs.others"] = peak.get("others", 0)
        f["procs.total"] = peak_total
        f["pss.peak"] = pss["peak"]
        f["pss.median"] = pss["median"]
        f["fsync"] = fsyncs / units if fsyncs is not None else None
        f["connections"] = sum(s.value("connections") for s in self.sinks)
        for s in self.sinks:
            s.stop()

    # ---- always ----

    def close(self):
        """Stops everything this run started; safe to call twice."""
        if self.perf:
            self.perf.kill()
            self.perf = None
        if self.sampler:
            self.sampler.stop()
        if self.account:
            self.inst.stop(self.account)
            self.account.remove()
        for p in self.sources:
            if p.poll() is None:
                p.kill()
                p.wait()
        for s in self.sinks:
            s.stop()
        shutil.rmtree(self.maildir, ignore_errors=True)
        if not self.ctx.keep:
            shutil.rmtree(self.inst.queue, ignore_errors=True)
            for s in self.sinks:
                if s.savedir:
                    shutil.rmtree(s.savedir, ignore_errors=True)


def tail(*files):
    out = []
    for f in files:
        try:
            out += open(f, errors="replace").read().splitlines()[-5:]
        except OSError:
            pass
    return " | ".join(out)
