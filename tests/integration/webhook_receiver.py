#!/usr/bin/python3
"""A webhook receiver on loopback for the notify plugin's tests.

usage: webhook_receiver.py PORT LOG [FAILFILE]

Each POST is appended to LOG as one JSON line: path, the X-Tlsbox-Event,
X-Tlsbox-Signature, Content-Type and User-Agent headers, and the body as
text.  While FAILFILE holds a number N > 0, the next N requests are answered
500 (the number counted down); the rest 204.  Runs until killed (the test
bounds it with timeout)."""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

PORT, LOG = int(sys.argv[1]), sys.argv[2]
FAIL = sys.argv[3] if len(sys.argv) > 3 else None


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
