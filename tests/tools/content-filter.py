#!/usr/bin/python3
"""A small after-queue content filter for the tests (doc/content-filter.md).

    content-filter.py -P PORTFILE -r HOST:PORT -l LOG [-H HEADER]

Listens on 127.0.0.1 at a port the kernel chooses (written to PORTFILE),
speaks enough SMTP for Petrel's smtp client (EHLO/HELO, MAIL, RCPT, DATA,
RSET, NOOP, QUIT), and passes every message on to HOST:PORT (the
reinjection smtpd) with HEADER (default "X-Content-Filter: passed")
inserted at the top, as amavisd-new does.  It answers the final dot with
the reinjection server's verdict: 250 only once the message was passed
on, 451 when that failed, so mail is never lost in the filter.  Each
message passed on appends one line to LOG: "from=<S> to=<R>,<R>".

One session at a time is enough for the tests; every socket operation
has a timeout, and the filter exits on SIGTERM or after 600 s.
"""
import argparse
import os
import signal
import smtplib
import socket
import sys


def reply(conn, text):
    conn.sendall(text.encode("ascii") + b"\r\n")


def read_line(f):
    line = f.readline(4096)
    if not line:
        raise EOFError
    return line.rstrip(b"\r\n").decode("utf-8", "replace")


def addr_arg(arg):
    # "FROM:<a@b> SIZE=12" -> "a@b"
    colon = arg.find(":")
    rest = arg[colon + 1:].strip() if colon >= 0 else ""
    if rest.startswith("<"):
        end = rest.find(">")
        return rest[1:end] if end > 0 else rest[1:]
    return rest.split(" ")[0]


def read_data(f):
    lines = []
    while True:
        line = f.readline(1 << 20)
        if not line:
            raise EOFError
        if line in (b".\r\n", b".\n"):
            return b"".join(lines)
        if line.startswith(b"."):
            line = line[1:]
        lines.append(line)


def relay(args, sender, rcpts, data):
    host, port = args.relay.rsplit(":", 1)
    msg = args.header.encode("utf-8") + b"\r\n" + data
    with smtplib.SMTP(host, int(port), local_hostname="filter.test",
                      timeout=30) as s:
        s.sendmail(sender, rcpts, msg)
    with open(args.log, "a") as log:
        log.write("from=<%s> to=<%s>\n" % (sender, ">,<".join(rcpts)))


def session(args, conn):
    conn.settimeout(60)
    f = conn.makefile("rb")
    reply(conn, "220 filter.test ESMTP test filter")
    sender, rcpts = None, []
    while True:
        line = read_line(f)
        verb = line.split(" ", 1)[0].upper()
        arg = line[len(verb):].strip()
        if verb in ("EHLO", "HELO"):
            reply(conn, "250 filter.test")
        elif verb == "MAIL":
            sender, rcpts = addr_arg(arg), []
            reply(conn, "250 2.1.0 Ok")
        elif verb == "RCPT":
            if sender is None:
                reply(conn, "503 5.5.1 need MAIL")
                continue
            rcpts.append(addr_arg(arg))
            reply(conn, "250 2.1.5 Ok")
        elif verb == "DATA":
            if not rcpts:
                reply(conn, "503 5.5.1 need RCPT")
                continue
            reply(conn, "354 End data with <CR><LF>.<CR><LF>")
            data = read_data(f)
            try:
                relay(args, sender, rcpts, data)
                reply(conn, "250 2.0.0 Ok: passed on")
            except (OSError, smtplib.SMTPException) as e:
                reply(conn, "451 4.3.0 reinjection failed: %s"
                      % str(e).replace("\r", " ").replace("\n", " ")[:200])
            sender, rcpts = None, []
        elif verb == "RSET":
            sender, rcpts = None, []
            reply(conn, "250 2.0.0 Ok")
        elif verb == "NOOP":
            reply(conn, "250 2.0.0 Ok")
        elif verb == "QUIT":
            reply(conn, "221 2.0.0 Bye")
            return
        else:
            reply(conn, "502 5.5.2 command not implemented")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("-P", dest="portfile", required=True)
    p.add_argument("-r", dest="relay", required=True)
    p.add_argument("-l", dest="log", required=True)
    p.add_argument("-H", dest="header", default="X-Content-Filter: passed")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    signal.alarm(600)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    with open(args.portfile + ".tmp", "w") as pf:
        pf.write("%d\n" % ls.getsockname()[1])
    os.rename(args.portfile + ".tmp", args.portfile)
    while True:
        conn, _ = ls.accept()
        try:
            session(args, conn)
        except (EOFError, OSError):
            pass
        finally:
            conn.close()


if __name__ == "__main__":
    main()
