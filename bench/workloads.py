"""The five workloads, one function each: f(h, z) -> {figure: value}.

h is the run's Harness (harness.py), z the sizes (bench.py SIZES).  Every
wait has a deadline; a workload that misses it raises harness.Timeout
and its figures are n/a for that run.  Times are wall-clock (time.time()
and file mtimes share the clock).
"""

import email.utils
import os
import smtplib
import statistics
import time

import mta
from harness import wait_until

SENDER = "sender@client.bench.test"


def relay(h, z):
    """1. smtp-source -s 20 sends N x 1 KiB messages, the MTA relays them
    to smtp-sink.  msg/s from the source's start to the sink's last
    message."""
    n = z["relay"]
    sink = h.sink("sink")
    h.start(relay=sink)
    t0 = time.time()
    src = h.source("-s", "20", "-m", str(n), "-t", "user%n@example.com")
    end = sink.wait("messages", n, h.deadline(60 + n / 20))
    h.wait_source(src, h.deadline(30))
    h.finish(units=n)
    return {"rate": n / (end - t0)}


def local(h, z):
    """2. N x 1 KiB messages over SMTP to one local user (Maildir).
    msg/s until the last file is in Maildir/new."""
    n = z["local"]
    sink = h.sink("sink")                 # relayhost needs one; unused
    h.start(relay=sink)
    new = os.path.join(h.maildir, "new")
    t0 = time.time()
    src = h.source("-s", "20", "-m", str(n), "-t", mta.BENCH_USER + "@localhost")

    def all_there():
        # Each delivery renames a file into new/, which sets the
        # directory's mtime: once all N are there, that is the last one.
        try:
            if len(os.listdir(new)) >= n:
                return os.stat(new).st_mtime
        except OSError:
            pass
        return None
    end = wait_until("%d files in %s" % (n, new), all_there, h.deadline(60 + n / 10))
    h.wait_source(src, h.deadline(30))
    h.finish(units=n)
    return {"rate": n / (end - t0)}


def bulk_small(h, z, other):
    """3 and 4. One message with B recipients, then (right after it was
    accepted) S one-recipient messages; the sink answers each RCPT
    z["slow_ms"] late.  OTHER: the small ones go to a second sink (a
    second destination, through transport_maps), else to the same one.
    Figures: the small messages' median latency (accepted by the MTA ->
    saved by the sink) and the bulk message's completion time (accepted
    -> its last recipient saved)."""
    b, s = z["bulk"], z["small"]
    slow = ("-W", str(z["slow_ms"]))
    main = h.sink("sink", *slow, save=True)
    second = h.sink("other", *slow, save=True) if other else None
    h.start(relay=main, transport={"other.test": second} if other else None)
    small_domain = "other.test" if other else "example.com"
    client = smtplib.SMTP("127.0.0.1", h.smtpd_port, "client.bench.test", timeout=120)
    client.sendmail(SENDER, ["bulk%d@example.com" % i for i in range(1, b + 1)],
                    message("bench bulk"))
    t_bulk = time.time()
    accepted = {}
    for i in range(1, s + 1):
        client.sendmail(SENDER, ["small%d@%s" % (i, small_domain)], message("bench small %d" % i))
        accepted["bench small %d" % i] = time.time()
    client.quit()
    deadline = h.deadline(60 + b * z["slow_ms"] / 1000.0)
    if other:
        main.wait("recipients", b, deadline)
        second.wait("recipients", s, deadline)
    else:
        main.wait("recipients", b + s, deadline)
    saved = main.saved() + (second.saved() if other else [])
    h.finish(units=b + s)
    bulk_done = max(t for t, subj, _ in saved if subj == "bench bulk")
    latencies = [t - accepted[subj] for t, subj, _ in saved if subj in accepted]
    if len(latencies) != s:
        h.notes.append("%d small messages saved, %d sent" % (len(latencies), s))
    return {"latency": statistics.median(latencies), "completion": bulk_done - t_bulk}


def bulk_same(h, z):
    return bulk_small(h, z, other=False)


def bulk_other(h, z):
    return bulk_small(h, z, other=True)


def busy(h, z):
    """5. A server that takes 5 sessions and answers 421 beyond them, and
    is slow (z["busy_ms"] per recipient); M messages of 2 recipients.
    Figures: the first-pass deferral ratio (recipients whose first
    delivery attempt was deferred / recipients, from the MTA's log) and
    the completion time (first submission -> last recipient at the
    sink)."""
    m = z["busy"]
    sink = h.sink("sink", "-S", "5", "-W", str(z["busy_ms"]))
    h.start(relay=sink)
    t0 = time.time()
    src = h.source("-s", "5", "-m", str(m), "-r", "2", "-t", "rcpt%d-%n@example.com")
    end = sink.wait("recipients", 2 * m, h.deadline(60 + 2 * m * z["busy_ms"] / 1000.0))
    h.wait_source(src, h.deadline(30))
    h.finish(units=2 * m)
    first = first_attempts(h.inst.log)
    deferred = sum(1 for st in first.values() if st != "sent")
    if len(first) != 2 * m:
        h.notes.append("log: first attempts for %d recipients, %d sent" % (len(first), 2 * m))
    return {"deferral": deferred / len(first) if first else None, "completion": end - t0,
            "rate": m / (end - t0)}


def first_attempts(log):
    """{(queue id, recipient): status of its first logged attempt} from a
    Postfix-format log (both MTAs write "QID: to=<a>, ... status=X")."""
    first = {}
    with open(log, errors="replace") as f:
        for line in f:
            i = line.find(": to=<")
            if i < 0 or " status=" not in line:
                continue
            qid = line[:i].rsplit(" ", 1)[-1]
            rcpt = line[i + 6:line.find(">", i)]
            status = line.split(" status=", 1)[1].split()[0]
            first.setdefault((qid, rcpt), status)
    return first


def message(subject, size=1024):
    """About SIZE bytes with headers, CRLF lines."""
    head = ("From: <%s>\r\nTo: undisclosed-recipients:;\r\nSubject: %s\r\n"
            "Date: %s\r\nMessage-ID: <%s@client.bench.test>\r\n\r\n" %
            (SENDER, subject, email.utils.formatdate(), subject.replace(" ", ".")))
    line = "x" * 70 + "\r\n"
    body = line * max(1, (size - len(head)) // len(line))
    return (head + body).encode()


WORKLOADS = [
    ("relay", relay, "msg", "1. relay: smtp-source -s 20 -> MTA -> smtp-sink"),
    ("local", local, "msg", "2. local: smtp-source -s 20 -> MTA -> one user's Maildir"),
    ("bulk-same", bulk_same, "rcpt", "3. bulk + 20 small, same destination (sink -W)"),
    ("bulk-other", bulk_other, "rcpt", "4. bulk + 20 small, small ones to another destination"),
    ("busy", busy, "rcpt", "5. server with 5 sessions, 421 beyond (sink -S 5 -W)"),
]
