#!/usr/bin/env python3
"""Petrel and Postfix side by side.  `make bench` runs it through
bench/run.sh; doc/performance.md says what it measures and how.

    bench/bench.py --build BUILD_DIR [--size full|quick|tiny] [--rounds N]
                   [--work DIR] [--only WORKLOAD,...] [--mta postfix,petrel]

Each round runs every workload once with each MTA, Postfix first, each
time on a fresh private instance; the table gives the median over the
rounds.  Figures are printed, never judged.
"""

import argparse
import fcntl
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True

import harness      # noqa: E402
import measure      # noqa: E402
import mta          # noqa: E402
import workloads    # noqa: E402

SIZES = {
    # relay/local: messages; bulk: recipients of the bulk message; small:
    # the small messages after it; busy: messages of 2 recipients.
    "full": dict(rounds=3, relay=20000, local=5000, bulk=2000, small=20, slow_ms=100,
                 busy=100, busy_ms=1000),
    "quick": dict(rounds=1, relay=2000, local=500, bulk=250, small=20, slow_ms=100,
                  busy=15, busy_ms=1000),
    # make check (tests/system/t_bench.sh): only that the harness works.
    "tiny": dict(rounds=1, relay=100, local=20, bulk=20, small=3, slow_ms=100,
                 busy=6, busy_ms=200),
}

LOCK_ROOT = "/run/lock/petrel-bench.lock" if os.path.isdir("/run/lock") else "/tmp/petrel-bench.lock"

HIGHER, LOWER = "higher", "lower"


def rows(unit_of):
    """[(workload, key, label, better)] in table order."""
    own = {
        "relay": [("rate", "msg/s", HIGHER)],
        "local": [("rate", "msg/s", HIGHER)],
        "bulk-same": [("latency", "small msgs: median latency s", LOWER),
                      ("completion", "bulk msg: completion s", LOWER)],
        "bulk-other": [("latency", "small msgs: median latency s", LOWER),
                       ("completion", "bulk msg: completion s", LOWER)],
        "busy": [("deferral", "first-pass deferral ratio", LOWER),
                 ("completion", "completion s", LOWER),
                 ("rate", "msg/s", HIGHER)],
    }
    out = []
    for w, _, unit, _ in workloads.WORKLOADS:
        if w not in unit_of:
            continue
        for key, label, better in own[w]:
            out.append((w, key, label, better))
        for d in ["total"] + measure.NAMED + ["others"]:
            out.append((w, "cpu." + d, "CPU s/1k %s: %s" % (unit, d), LOWER))
        for d in [d for d in measure.NAMED if d not in ("master", "qmgr")] + ["others", "total"]:
            out.append((w, "procs." + d, "peak processes: %s" % d, LOWER))
        out.append((w, "pss.peak", "PSS MiB: peak", LOWER))
        out.append((w, "pss.median", "PSS MiB: median", LOWER))
        out.append((w, "fsync", "fsync+fdatasync per %s" % unit, LOWER))
        out.append((w, "connections", "SMTP connections to the sink(s)", LOWER))
    return out


def fmt(v, key=""):
    if v is None:
        return "n/a"
    if key.startswith("procs.") or key == "connections":
        return "%d" % round(v)
    a = abs(v)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3f" % v


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def table(results, mtas, unit_of):
    """results[mta][workload] = [figures of each round]."""
    lines = []
    head = "%-52s %10s %10s %15s  %s" % ("workload  metric", "Postfix", "Petrel",
                                         "Petrel/Postfix", "better")
    lines.append(head)
    lines.append("-" * len(head))
    last = None
    for w, key, label, better in rows(unit_of):
        if w != last and last is not None:
            lines.append("")
        last = w
        med = {}
        for m in ("Postfix", "Petrel"):
            runs = results.get(m, {}).get(w)
            med[m] = median([r.get(key) for r in runs]) if runs else None
        pf, pt = med["Postfix"], med["Petrel"]
        if pf is not None and pt is not None and pf != 0:
            ratio = "%.2f" % (pt / pf)
        elif pf == 0 and pt == 0:
            ratio = "-"
        else:
            ratio = "n/a"
        lines.append("%-52s %10s %10s %15s  %s" % (
            "%-10s %s" % (w, label),
            fmt(pf, key) if "Postfix" in mtas else "n/a",
            fmt(pt, key) if "Petrel" in mtas else "n/a", ratio, better))
    return lines


def git(*args):
    try:
        return subprocess.run(["git", "-c", "safe.directory=" + mta.SRCDIR, "-C", mta.SRCDIR] +
                              list(args), capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def disk_of(path):
    """'SOURCE FSTYPE (details)' of the file system holding PATH."""
    st = os.stat(path)
    dev = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    src = fstype = "?"
    for line in open("/proc/self/mountinfo"):
        f = line.split()
        if f[2] == dev:
            tail = line.split(" - ", 1)[1].split()
            fstype, src = tail[0], tail[1]
    details = []
    name = os.path.basename(src)
    sysdir = "/sys/class/block/%s" % name
    if os.path.exists(sysdir + "/partition"):
        sysdir = os.path.dirname(os.path.realpath(sysdir))
    rot = measure.read(sysdir + "/queue/rotational")
    model = (measure.read(sysdir + "/device/model") or "").strip()
    vendor = (measure.read(sysdir + "/device/vendor") or "").strip()
    if vendor == "0x1af4":
        details.append("virtio")
    elif model:
        details.append(model)
    if rot:
        details.append("rotational=%s" % rot.strip())
    return "%s %s%s" % (src, fstype, " (%s)" % ", ".join(details) if details else "")


def header(args, z, mtas, ctx):
    commit = git("rev-parse", "--short", "HEAD") or "?"
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    dirty = " (uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else ""
    mem = int(measure.read("/proc/meminfo", "MemTotal: 0 kB").split()[1]) / 1048576.0
    out = [
        "Petrel vs Postfix, side by side (bench/bench.py, size %s: %d round%s, medians)"
        % (args.size, z["rounds"], "" if z["rounds"] == 1 else "s"),
        "date      %s" % time.strftime("%Y-%m-%d %H:%M %Z"),
        "commit    %s on %s%s" % (commit, branch or "?", dirty),
        "machine   %d CPUs (nproc), kernel %s, %.1f GiB RAM" % (os.cpu_count(), platform.release(), mem),
        "disk      %s, holding %s" % (disk_of(args.work), args.work),
        "Postfix   %s" % ("%s (%s)" % (mta.Postfix.version(), mta.POSTFIX) if "Postfix" in mtas
                          else "not run: " + (ctx.postfix_why or "not asked for (--mta)")),
        "Petrel    %s (%s)" % (mta.Petrel.version(args.build), args.build),
        "sizes     relay %d msg, local %d msg, bulk %d rcpt + %d small (RCPT %d ms late), "
        "busy %d msg x 2 rcpt (%d ms per RCPT)" % (z["relay"], z["local"], z["bulk"], z["small"],
                                                    z["slow_ms"], z["busy"], z["busy_ms"]),
    ]
    return out


class Ctx:
    pass


def lock(path, wait):
    """An exclusive lock held until exit: one bench at a time (they would
    share the bench account and disturb each other's figures)."""
    f = open(path, "a+")
    deadline = time.time() + wait
    said = False
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except BlockingIOError:
            if time.time() >= deadline:
                return None
            if not said:
                print("bench: another benchmark holds %s; waiting up to %d s" % (path, wait),
                      file=sys.stderr)
                said = True
            time.sleep(1)


def interrupted(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def shielded(fn):
    """FN with Ctrl-C and SIGTERM ignored, so that stopping cannot be cut short."""
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        fn()
    finally:
        for s, h in saved.items():
            signal.signal(s, h)


def main():
    ap = argparse.ArgumentParser(description="Petrel and Postfix side by side (doc/performance.md)")
    ap.add_argument("--build", required=True, help="Petrel's build directory")
    ap.add_argument("--work", help="work directory (default BUILD/bench)")
    ap.add_argument("--size", choices=sorted(SIZES), default="full")
    ap.add_argument("--quick", action="store_const", dest="size", const="quick",
                    help="same as --size quick")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--only", help="workloads, comma-separated: " +
                    ",".join(w[0] for w in workloads.WORKLOADS))
    ap.add_argument("--mta", default="postfix,petrel", help="postfix,petrel")
    ap.add_argument("--lock-wait", type=int, default=900, help="seconds to wait for another bench")
    ap.add_argument("--keep", action="store_true", help="keep queues and saved messages")
    args = ap.parse_args()
    # postfix, postconf, postalias, useradd: also when run with a short PATH.
    os.environ["PATH"] = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"

    args.build = os.path.abspath(args.build)
    args.work = os.path.abspath(args.work or os.path.join(args.build, "bench"))
    z = dict(SIZES[args.size])
    if args.rounds:
        z["rounds"] = max(1, min(args.rounds, 20))
    chosen = [w for w in workloads.WORKLOADS
              if not args.only or w[0] in args.only.split(",")]
    unit_of = {w[0]: w[2] for w in chosen}

    ctx = Ctx()
    ctx.build = args.build
    ctx.tools = os.path.join(args.build, "tests", "tools")
    ctx.keep = args.keep
    for p in [os.path.join(args.build, "bin", b) for b in
              ("master", "petrel", "smtpd", "cleanup", "qmgr", "smtp", "local", "bounce", "postalias")] + \
             [os.path.join(ctx.tools, t) for t in ("smtp-sink", "smtp-source")]:
        if not os.access(p, os.X_OK):
            print("bench: %s is not built (make all tests)" % p, file=sys.stderr)
            return 1

    notes = []
    mtas = []
    ctx.postfix_why = mta.Postfix.missing()
    if "postfix" in args.mta.split(","):
        if ctx.postfix_why:
            notes.append("Postfix not run (%s; it needs root and Debian's postfix package): "
                         "Petrel side only." % ctx.postfix_why)
        else:
            mtas.append("Postfix")
    if "petrel" in args.mta.split(","):
        mtas.append("Petrel")
    why = measure.cgroups_usable()
    ctx.cgroups = why is None
    if why:
        notes.append("CPU: %s, so no cgroups: totals from master's own and reaped children's "
                     "times plus the live processes, per daemon sampled from /proc (approximate)." % why)
    why = measure.perf_usable() if ctx.cgroups else "no cgroups (not root)"
    ctx.perf = why is None
    if why:
        notes.append("fsyncs: n/a, %s." % why)

    os.makedirs(args.work, exist_ok=True)
    os.chmod(args.work, 0o755)
    for d in mta_parents(args.work):
        if os.geteuid() == 0 and not os.stat(d).st_mode & 0o001:
            print("bench: %s is not searchable by others: the MTAs' users cannot reach %s"
                  % (d, args.work), file=sys.stderr)
            return 1
    held = lock(LOCK_ROOT if os.geteuid() == 0 else os.path.join(args.work, ".lock"), args.lock_wait)
    if held is None:
        print("bench: another benchmark is still running; giving up", file=sys.stderr)
        return 75

    # Also SIGINT: a shell may have started us with it ignored.
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, interrupted)
    if ctx.cgroups:
        measure.remove_stale_cgroups()
    rundirs = os.path.join(args.work, "runs")
    shutil.rmtree(rundirs, ignore_errors=True)
    os.makedirs(rundirs)
    setup_log = os.path.join(args.work, "setup.log")
    try:
        ctx.home = mta.ensure_bench_user(args.work, setup_log)
    except RuntimeError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1

    hdr = header(args, z, mtas, ctx)
    print("\n".join(hdr), file=sys.stderr)
    results = {m: {} for m in mtas}
    log = []
    total = z["rounds"] * len(chosen) * len(mtas)
    k = 0
    t_start = time.time()
    try:
        for r in range(1, z["rounds"] + 1):
            for w, fn, unit, _ in chosen:
                for m in mtas:
                    k += 1
                    rundir = os.path.join(rundirs, "r%d-%s-%s" % (r, w, m.lower()))
                    h = harness.Harness(ctx, mta.Postfix if m == "Postfix" else mta.Petrel, rundir)
                    t0 = time.time()
                    figures, error = {}, None
                    try:
                        figures = fn(h, z)
                    except Exception as e:      # a failed run: n/a, and said why
                        error = "%s: %s" % (type(e).__name__, e)
                    finally:
                        shielded(h.close)
                    figures.update(h.figures)
                    results[m].setdefault(w, []).append(figures)
                    problems = h.notes + ([error] if error else [])
                    for p in problems:
                        notes.append("round %d %s %s: %s (see %s)" % (r, w, m, p, rundir))
                    log.append({"round": r, "workload": w, "mta": m, "seconds": time.time() - t0,
                                "figures": figures, "problems": problems})
                    print("[%2d/%d] round %d %-10s %-7s %5.1f s  %s" % (
                        k, total, r, w, m, time.time() - t0,
                        ", ".join("%s %s" % (key, fmt(figures.get(key))) for key in
                                  ("rate", "latency", "completion", "deferral") if key in figures)
                        or (error or "")), file=sys.stderr)
    except KeyboardInterrupt:
        print("bench: interrupted; everything it started is stopped", file=sys.stderr)
        return 130
    finally:
        if ctx.cgroups:
            measure.remove_stale_cgroups()

    out = hdr + ["elapsed   %.0f s" % (time.time() - t_start), ""] + table(results, mtas, unit_of)
    if notes:
        out += ["", "Notes:"] + ["- " + n for n in notes]
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(args.work, "results.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(args.work, "results.json"), "w") as f:
        json.dump({"header": hdr, "sizes": z, "runs": log}, f, indent=1)
    return 0


def mta_parents(path):
    out = []
    while True:
        out.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            return out
        path = parent


if __name__ == "__main__":
    sys.exit(main())
