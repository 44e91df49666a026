#!/usr/bin/python3
"""A milter that breaks the protocol on purpose, for Petrel's tests.

    garbage-milter.py MODE[:STAGE] SOCKET

Listens on the UNIX socket SOCKET (SOCKET.ready is written once it
does), answers the option negotiation properly (version 6, every action,
no protocol step left out), answers "continue" to every command that
wants a reply until STAGE (connect, helo, mail, rcpt, data, header, eoh,
body, eom; default connect), and there sends, instead of a reply:

    length      a packet whose length field is 0 (there is no command byte)
    reply       a well-formed packet with an unknown reply code 'Z'
    oversized   a length field of 2^31-1 followed by 64 KiB of junk
    short       a length field of 100 and 3 bytes, then silence (the
                connection stays open until the MTA closes it)
    mute        (STAGE ignored) never answers the option negotiation:
                reads until the MTA closes the connection

It never exits on its own; every connection is served in a thread.
One line per packet goes to standard error.
"""

import os
import socket
import socketserver
import struct
import sys
import threading

STAGE_CMD = {'connect': b'C', 'helo': b'H', 'mail': b'M', 'rcpt': b'R',
             'data': b'T', 'header': b'L', 'eoh': b'N', 'body': b'B',
             'eom': b'E'}
NO_REPLY = (b'D', b'A', b'Q')


def log(msg):
    sys.stderr.write('garbage-milter: %s\n' % msg)
    sys.stderr.flush()


def recv_exact(sock, n):
    buf = b''
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        s = self.request
        while True:
            head = recv_exact(s, 4)
            if head is None:
                return
            (n,) = struct.unpack('>I', head)
            if n < 1 or n > 1 << 20:
                log('bad length %d from the MTA' % n)
                return
            pkt = recv_exact(s, n)
            if pkt is None:
                return
            cmd, data = pkt[:1], pkt[1:]
            log('got %r (%d bytes)' % (cmd, n))
            if cmd == b'O' and MODE == 'mute':
                log('not answering the negotiation')
                while s.recv(4096):
                    pass
                return
            if cmd == b'O':
                # version 6, all actions, all protocol steps
                s.sendall(struct.pack('>IcIII', 13, b'O', 6, 0x1ff, 0))
                continue
            if cmd == b'Q':
                return
            if cmd in NO_REPLY:
                continue
            if cmd == STAGE_CMD[STAGE]:
                self.garbage(s)
                if MODE == 'short':
                    # wait for the MTA to give up and close
                    while s.recv(4096):
                        pass
                return
            s.sendall(struct.pack('>Ic', 1, b'c'))

    def garbage(self, s):
        log('sending %s garbage' % MODE)
        try:
            if MODE == 'length':
                s.sendall(struct.pack('>I', 0))
            elif MODE == 'reply':
                s.sendall(struct.pack('>Ic', 1, b'Z'))
            elif MODE == 'oversized':
                s.sendall(struct.pack('>I', 0x7fffffff) + b'x' * 65536)
            elif MODE == 'short':
                s.sendall(struct.pack('>I', 100) + b'abc')
        except OSError as e:
            log('send: %s' % e)


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


if len(sys.argv) != 3:
    sys.stderr.write('usage: garbage-milter.py MODE[:STAGE] SOCKET\n')
    sys.exit(2)
MODE, _, STAGE = sys.argv[1].partition(':')
STAGE = STAGE or 'connect'
if MODE not in ('length', 'reply', 'oversized', 'short', 'mute') or \
        STAGE not in STAGE_CMD:
    sys.stderr.write('garbage-milter: bad mode %s\n' % sys.argv[1])
    sys.exit(2)
path = sys.argv[2]
if os.path.exists(path):
    os.unlink(path)
server = Server(path, Handler)
with open(path + '.ready.tmp', 'w') as f:
    f.write('ready\n')
os.rename(path + '.ready.tmp', path + '.ready')
threading.current_thread().name = 'main'
server.serve_forever()
