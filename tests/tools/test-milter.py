#!/usr/bin/python3
"""A scripted milter for Petrel's whole-system tests.

Run it with Debian's /usr/bin/python3 (python3-milter: pymilter on
Sendmail's libmilter):

    test-milter.py [-n NAME] -s SCRIPT -l LOG (-u SOCKET | -p PORTFILE)
    test-milter.py get LOG STAGE KEY

The first form serves the milter protocol on the UNIX socket SOCKET or on
127.0.0.1 at a port it picks (written to PORTFILE once it accepts
connections; for -u, SOCKET.ready is written then).  It appends one JSON
object a line to LOG for every callback it gets: stage, connection
number, what the MTA passed (arguments, header name and value, body
digest) and the macros it could read.

SCRIPT says what to answer, one rule a line (# starts a comment):

    STAGE[=ADDR] ACTION [ARGS...]

STAGE is connect, helo, envfrom, envrcpt, data, header, eoh, body or
eom; envrcpt=ADDR (or header=NAME) limits the rule to that recipient (or
header name), compared without angle brackets and case.  The first
verdict rule that matches a callback decides its answer; without one the
answer is continue.  Verdicts:

    continue | accept | reject | tempfail | discard
    reply CODE XCODE TEXT       a custom reply; "|" separates the lines
                                of a multi-line reply
    hang [SECS]                 sleep SECS (default 600) first, then
                                continue (the MTA should have given up)
    sleep SECS                  sleep SECS, then look at the next rules
    crash                       the whole milter exits at once (exit 3)
    progress                    (eom) tell the MTA to wait, then go on

At eom, modification rules run in script order before the verdict:

    addheader NAME VALUE        append a header
    insheader INDEX NAME VALUE  insert at INDEX (0: first)
    chgheader NAME INDEX VALUE  change the INDEXth NAME (1-based)
    delheader NAME INDEX        delete the INDEXth NAME
    replacebody TEXT            the whole new body; \\n is CR LF
    addrcpt ADDR [ARGS...]      add a recipient (with ESMTP arguments)
    delrcpt ADDR
    chgfrom ADDR [ARGS...]      change the sender (with ESMTP arguments)
    quarantine REASON...

"get LOG STAGE KEY" prints KEY of every record of STAGE, one a line:
KEY is a record field (arg, args, name, value, body, body_sha256,
body_len, conn, headers) or macro:NAME (macro:{client_addr}, macro:i);
a missing value prints as "-".
"""

import hashlib
import json
import os
import socket
import sys
import threading
import time

MACROS = ['i', 'j', '_', 'v', '{daemon_name}', '{daemon_addr}',
          '{daemon_port}', '{if_name}', '{if_addr}', '{client_addr}',
          '{client_port}', '{client_name}', '{client_ptr}',
          '{client_resolve}', '{client_connections}', '{auth_type}',
          '{auth_authen}', '{auth_author}', '{tls_version}', '{cipher}',
          '{cipher_bits}', '{cert_subject}', '{cert_issuer}',
          '{mail_addr}', '{mail_host}', '{mail_mailer}', '{rcpt_addr}',
          '{rcpt_host}', '{rcpt_mailer}']

STAGES = ('connect', 'helo', 'envfrom', 'envrcpt', 'data', 'header',
          'eoh', 'body', 'eom')
VERDICTS = ('continue', 'accept', 'reject', 'tempfail', 'discard',
            'reply', 'hang', 'crash', 'sleep', 'progress')
MODS = ('addheader', 'insheader', 'chgheader', 'delheader',
        'replacebody', 'addrcpt', 'delrcpt', 'chgfrom', 'quarantine')


def die(msg):
    sys.stderr.write('test-milter: %s\n' % msg)
    sys.exit(2)


def read_script(path):
    rules = []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            words = line.split()
            if len(words) < 2:
                die('%s:%d: want STAGE ACTION [ARGS]' % (path, n))
            stage, _, match = words[0].partition('=')
            action = words[1]
            if stage not in STAGES:
                die('%s:%d: unknown stage %s' % (path, n, stage))
            if action not in VERDICTS + MODS:
                die('%s:%d: unknown action %s' % (path, n, action))
            if action in MODS and stage != 'eom':
                die('%s:%d: %s is only for eom' % (path, n, action))
            if action == 'reply' and (len(words) < 4 or
                                      words[2][0] not in '45'):
                die('%s:%d: want reply CODE XCODE TEXT' % (path, n))
            rest = line.split(None, 2)[2] if len(words) > 2 else ''
            rules.append({'stage': stage, 'match': match.strip('<>').lower(),
                          'action': action, 'args': words[2:], 'rest': rest,
                          'where': '%s:%d' % (path, n)})
    return rules


def get(logfile, stage, key):
    with open(logfile, encoding='utf-8') as f:
        for line in f:
            rec = json.loads(line)
            if rec['stage'] != stage:
                continue
            if key.startswith('macro:'):
                val = rec.get('macros', {}).get(key[6:])
            else:
                val = rec.get(key)
            if val is None:
                val = '-'
            elif not isinstance(val, str):
                val = json.dumps(val, sort_keys=True)
            print(val)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == 'get':
        get(*sys.argv[2:])
        return
    import getopt
    import Milter

    try:
        opts, args = getopt.getopt(sys.argv[1:], 'n:s:l:u:p:')
    except getopt.GetoptError as e:
        die(str(e))
    o = dict(opts)
    if args or '-s' not in o or '-l' not in o or ('-u' in o) == ('-p' in o):
        die('usage: test-milter.py [-n NAME] -s SCRIPT -l LOG '
            '(-u SOCKET | -p PORTFILE)')
    rules = read_script(o['-s'])
    logfile = o['-l']
    name = o.get('-n', 'test-milter')
    lock = threading.Lock()
    counter = [0]

    def record(rec):
        with lock:
            with open(logfile, 'a', encoding='utf-8') as f:
                f.write(json.dumps(rec, sort_keys=True) + '\n')
                f.flush()

    class TestMilter(Milter.Base):
        def __init__(self):
            with lock:
                counter[0] += 1
                self.conn = counter[0]
            self.body_parts = []

        def macros(self):
            got = {}
            for m in MACROS:
                try:
                    v = self.getsymval(m)
                except Exception:
                    v = None
                if v is not None:
                    got[m] = v
            return got

        def log(self, stage, **kw):
            rec = {'stage': stage, 'conn': self.conn, 'name': name,
                   'macros': self.macros()}
            rec.update(kw)
            record(rec)

        def verdict(self, stage, match=''):
            for r in rules:
                if r['stage'] != stage:
                    continue
                if r['match'] and r['match'] != match.strip('<>').lower():
                    continue
                a = r['action']
                if a in MODS:
                    continue
                if a == 'sleep':
                    time.sleep(float(r['args'][0]))
                    continue
                if a == 'progress':
                    self.progress()
                    continue
                if a == 'crash':
                    record({'stage': 'crash', 'conn': self.conn,
                            'at': stage, 'name': name})
                    os._exit(3)
                if a == 'hang':
                    record({'stage': 'hang', 'conn': self.conn,
                            'at': stage, 'name': name})
                    time.sleep(float(r['args'][0]) if r['args'] else 600)
                    return Milter.CONTINUE
                if a == 'reply':
                    words = r['rest'].split(None, 2)
                    lines = (words[2] if len(words) > 2 else '').split('|')
                    self.setreply(r['args'][0], r['args'][1], *lines)
                    return (Milter.TEMPFAIL if r['args'][0][0] == '4'
                            else Milter.REJECT)
                return {'continue': Milter.CONTINUE,
                        'accept': Milter.ACCEPT,
                        'reject': Milter.REJECT,
                        'tempfail': Milter.TEMPFAIL,
                        'discard': Milter.DISCARD}[a]
            return Milter.CONTINUE

        def connect(self, hostname, family, hostaddr):
            addr = hostaddr[0] if isinstance(hostaddr, tuple) else hostaddr
            self.log('connect', arg=hostname, addr=addr)
            return self.verdict('connect')

        def hello(self, heloname):
            self.log('helo', arg=heloname)
            return self.verdict('helo')

        def envfrom(self, f, *params):
            self.body_parts = []
            self.headers = []
            self.log('envfrom', arg=f, args=list(params))
            return self.verdict('envfrom', f)

        def envrcpt(self, to, *params):
            self.log('envrcpt', arg=to, args=list(params))
            return self.verdict('envrcpt', to)

        def data(self):
            self.log('data')
            return self.verdict('data')

        def header(self, field, value):
            self.headers.append([field, value])
            self.log('header', arg=field, value=value)
            return self.verdict('header', field)

        def eoh(self):
            self.log('eoh', headers=self.headers)
            return self.verdict('eoh')

        def body(self, chunk):
            self.body_parts.append(chunk)
            self.log('body', body_len=len(chunk))
            return self.verdict('body')

        def eom(self):
            body = b''.join(self.body_parts)
            self.log('eom', body_len=len(body),
                     body_sha256=hashlib.sha256(body).hexdigest(),
                     body=body.decode('utf-8', 'replace'),
                     headers=self.headers)
            for r in rules:
                if r['stage'] != 'eom' or r['action'] not in MODS:
                    continue
                self.modify(r)
            return self.verdict('eom')

        def modify(self, r):
            a, w, rest = r['action'], r['args'], r['rest']
            if a == 'addheader':
                self.addheader(w[0], rest.split(None, 1)[1])
            elif a == 'insheader':
                self.addheader(w[1], rest.split(None, 2)[2], int(w[0]))
            elif a == 'chgheader':
                self.chgheader(w[0], int(w[1]), rest.split(None, 2)[2])
            elif a == 'delheader':
                self.chgheader(w[0], int(w[1]), None)
            elif a == 'replacebody':
                self.replacebody(rest.replace('\\n', '\r\n').encode())
            elif a == 'addrcpt':
                self.addrcpt(w[0], ' '.join(w[1:]) or None)
            elif a == 'delrcpt':
                self.delrcpt(w[0])
            elif a == 'chgfrom':
                self.chgfrom(w[0], ' '.join(w[1:]) or None)
            elif a == 'quarantine':
                self.quarantine(rest)

        def abort(self):
            self.log('abort')
            return Milter.CONTINUE

        def close(self):
            self.log('close')
            return Milter.CONTINUE

    if '-u' in o:
        conn = 'unix:' + o['-u']
        ready = o['-u'] + '.ready'
        probe = (socket.AF_UNIX, o['-u'])
    else:
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
        s.close()
        conn = 'inet:%d@127.0.0.1' % port
        ready = o['-p']
        probe = (socket.AF_INET, ('127.0.0.1', port))

    def announce():
        # Written once a connect succeeds, so the test never races the
        # listen.  Bounded: 20 s.
        for _ in range(400):
            try:
                c = socket.socket(probe[0])
                c.connect(probe[1])
                c.close()
                with open(ready + '.tmp', 'w') as f:
                    f.write('%s\n' % (port if '-p' in o else 'ready'))
                os.rename(ready + '.tmp', ready)
                return
            except OSError:
                time.sleep(0.05)
        sys.stderr.write('test-milter: never became ready\n')
        os._exit(2)

    # Only the actions the script uses are asked for: libmilter drops
    # the connection when the MTA does not offer one it asked for, and a
    # case must not fail for an action it does not test.
    flags = 0
    for r in rules:
        a = r['action']
        flags |= {'addheader': Milter.ADDHDRS, 'insheader': Milter.ADDHDRS,
                  'chgheader': Milter.CHGHDRS, 'delheader': Milter.CHGHDRS,
                  'replacebody': Milter.CHGBODY, 'delrcpt': Milter.DELRCPT,
                  'chgfrom': Milter.CHGFROM,
                  'quarantine': Milter.QUARANTINE}.get(a, 0)
        if a == 'addrcpt':
            flags |= Milter.ADDRCPT
            if len(r['args']) > 1:
                flags |= Milter.ADDRCPT_PAR
    Milter.factory = TestMilter
    Milter.set_flags(flags)
    threading.Thread(target=announce, daemon=True).start()
    sys.stdout.flush()
    Milter.runmilter(name, conn, 600)


if __name__ == '__main__':
    main()
