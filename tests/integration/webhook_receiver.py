#!/usr/bin/python3
"""A webhook receiver on loopback for the notify plugin's tests.

usage: webhook_receiver.py PORT LOG [FAILFILE [HOLDFILE]]

Each POST is appended to LOG as one JSON line: path, the X-Tlsbox-Event,
X-Tlsbox-Signature, Content-Type and User-Agent headers, and the body as
text.  While FAILFILE holds a number N > 0, the next N requests are answered
500 (the number counted down); the rest 204.  While HOLDFILE exists, a
request is read and then held unanswered (a slow webhook), HOLDFILE.held
written meanwhile; one whose client hung up by the time HOLDFILE is gone
was not taken: neither answered nor logged.  Runs until killed (the test
bounds it with timeout)."""
import json
import os
import select
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

PORT, LOG = int(sys.argv[1]), sys.argv[2]
FAIL = sys.argv[3] if len(sys.argv) > 3 else None
HOLD = sys.argv[4] if len(sys.argv) > 4 else None


def held_and_gone(sock):
    """Hold while HOLDFILE exists (at most 120 s); then whether the client
    hung up meanwhile (its end of the connection closed)."""
    if not HOLD or not os.path.exists(HOLD):
        return False
    with open(HOLD + ".held", "w") as f:
        f.write("1")
    for _ in range(1200):
        if not os.path.exists(HOLD):
            break
        time.sleep(0.1)
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""


def failing():
    if not FAIL or not os.path.exists(FAIL):
        return False
    with open(FAIL) as f:
        n = int(f.read().strip() or 0)
    if n <= 0:
        return False
    with open(FAIL, "w") as f:
        f.write(str(n - 1))
    return True


class Hook(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if held_and_gone(self.connection):
            self.close_connection = True
            return
        rec = {"path": self.path, "event": self.headers.get("X-Tlsbox-Event"),
               "signature": self.headers.get("X-Tlsbox-Signature"),
               "type": self.headers.get("Content-Type"), "agent": self.headers.get("User-Agent"),
               "body": body.decode()}
        code = 500 if failing() else 204
        rec["answered"] = code
        with open(LOG, "a") as f:
            f.write(json.dumps(rec) + "\n")
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


HTTPServer(("127.0.0.1", PORT), Hook).serve_forever()
