#!/usr/bin/python3
# A small milter for tests/system/t_milter_smtpd.sh, on Debian's
# python3-milter (libmilter underneath).  What it does with a message is
# chosen by words in the Subject:
#   reject / tempfail / discard / quarantine   that verdict at the end
#   edit       add X-Smoke, insert X-First at 0, prefix the Subject,
#              delete X-Remove, add rcpt added@far.example.test,
#              delete rcpt gone@far.example.test
#   replbody   replace the body with "replaced body"
# and a recipient whose local part is "refused" gets 550 5.7.1 at RCPT.
# The macros it was given go to the log file, one "stage name=value" a
# line.  Usage: smoke-milter.py SOCKET LOGFILE  (SOCKET: unix:/path)
import sys
import Milter

LOG = None


def log(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")


class Smoke(Milter.Base):
    def __init__(self):
        self.subject = ""
        self.headers = []

    def _macros(self, stage, names):
        for n in names:
            v = self.getsymval(n)
            if v is not None:
                log("%s %s=%s" % (stage, n, v))

    def connect(self, hostname, family, hostaddr):
        self._macros("connect", ["j", "{daemon_name}", "v", "_"])
        log("connect host=%s" % hostname)
        return Milter.CONTINUE

    def hello(self, name):
        log("helo %s" % name)
        return Milter.CONTINUE

    def envfrom(self, f, *args):
        self._macros("mail", ["{mail_addr}"])
        log("mail %s %s" % (f, " ".join(args)))
        return Milter.CONTINUE

    def envrcpt(self, to, *args):
        self._macros("rcpt", ["{rcpt_addr}"])
        log("rcpt %s" % to)
        if to.lower().startswith("<refused@"):
            self.setreply("550", "5.7.1", "recipient refused by smoke")
            return Milter.REJECT
        return Milter.CONTINUE

    def header(self, name, value):
        if name.lower() == "subject":
            self.subject = value
        self.headers.append(name)
        return Milter.CONTINUE

    def eoh(self):
        self._macros("eoh", ["i"])
        return Milter.CONTINUE

    def body(self, chunk):
        return Milter.CONTINUE

    def eom(self):
        self._macros("eom", ["i"])
        log("eom headers=%s" % ",".join(self.headers))
        s = self.subject
        if "reject" in s:
            self.setreply("554", "5.7.1", "rejected by smoke")
            return Milter.REJECT
        if "tempfail" in s:
            return Milter.TEMPFAIL
        if "discard" in s:
            return Milter.DISCARD
        if "quarantine" in s:
            self.quarantine("smoke says hold")
        if "edit" in s:
            self.addheader("X-Smoke", "yes")
            self.addheader("X-First", "1", 0)
            self.chgheader("Subject", 1, "[smoke] " + s)
            self.chgheader("X-Remove", 1, "")
            self.addrcpt("<added@far.example.test>")
            self.delrcpt("<gone@far.example.test>")
        if "replbody" in s:
            self.replacebody(b"replaced body\r\n")
        return Milter.ACCEPT


def main():
    global LOG
    LOG = sys.argv[2]
    Milter.factory = Smoke
    Milter.set_flags(Milter.ADDHDRS | Milter.CHGHDRS | Milter.CHGBODY |
                     Milter.ADDRCPT | Milter.DELRCPT | Milter.QUARANTINE)
    Milter.runmilter("smoke", sys.argv[1], 30)


if __name__ == "__main__":
    main()
