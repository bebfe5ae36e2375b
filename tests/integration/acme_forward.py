#!/usr/bin/python3
"""An HTTPS front of the real pebble that can answer like a CA that pebble
cannot imitate (rate limits, a broken order).

  acme_forward.py LISTEN_PORT PEBBLE_PORT CERT KEY CA DIR

Serves HTTPS on 127.0.0.1:LISTEN_PORT with CERT/KEY and forwards every request
to pebble on 127.0.0.1:PEBBLE_PORT (trusting CA).  The client's Host header
goes along unchanged: pebble builds its URLs (directory, Location, Link) from
it and checks the JWS "url" against it, so the client only ever sees this
front.  Each request appends "TIME KIND METHOD PATH STATUS" to
DIR/requests.log (TIME when it came in), KIND being newOrder, order,
finalize, cert, authz or revoke (a POST to an order's URL, finalize URL,
certificate URL or authorization URL pebble handed out, or to revokeCert)
or -.  STATUS tells pebble's badNonce
rejections (400, retried at once by design) from the answers that count.

Injections, read at each request:
  DIR/ratelimit       newOrder is answered 429 with "Retry-After: <the file's
                      number>" and an RFC 8555 rateLimited problem document
                      (with a fresh Replay-Nonce from pebble); pebble does not
                      see the order.
  DIR/order_pending   an order fetch is forwarded, and pebble's order comes
                      back as "pending" (its authorizations all valid).
  DIR/order_no_authz  the same, and without its "authorizations" too.
  DIR/order_retry_after  order fetches carry "Retry-After: <the file's number>".
  DIR/finalize_ready  a finalize is forwarded, and its answer (the order) comes
                      back still "ready".
  DIR/order_invalid   order fetches come back "invalid" (no "error" member).
  DIR/ari             ARI (RFC 9773), which pebble 2.4.0 lacks: the directory
                      gains "renewalInfo" (at this front), and GET
                      renewalInfo/<id> is answered 200 with a suggestedWindow
                      that ended an hour ago when <id> is a line of this file
                      (renew now), else one 30 to 31 days ahead.
  DIR/replaces_refuse "STATUS TYPE" (e.g. "403 unauthorized"): a newOrder whose
                      JWS payload has "replaces" is answered STATUS with the
                      problem urn:ietf:params:acme:error:TYPE (and a fresh
                      Replay-Nonce), as a CA refusing to let the order replace
                      a certificate; pebble does not see it.  A newOrder
                      without "replaces" is forwarded.
  DIR/cert_expired    a certificate download is answered with a certificate
                      for the CSR of the last finalize that expired on
                      2020-01-02, issued by a CA of the front's own (made in
                      DIR/expired-ca), then that CA: the key matches and the
                      chain verifies, but it can never be installed.
  DIR/authz_flap      a CA (or a cache in front of it) that cannot make up its
                      mind: order fetches come back "pending" (as with
                      order_pending), and an authorization pebble answers
                      "valid" comes back "pending" on every other fetch of it
                      (the 1st, 3rd, ... valid answer while this file is
                      there); those are logged with KIND authz+pending.
  DIR/revoke_lost     a revoke is forwarded to pebble (which revokes), and its
                      answer lost: the front answers 504 with no problem
                      document, as a proxy whose wait for the CA ran out.
                      A revoke pebble answers badNonce (it refuses some
                      nonces at random) is passed on, logged with KIND
                      revoke+badNonce, with or without this file.
  DIR/unavailable_once "KIND SECS" (e.g. "order 3"): the next request of that
                      KIND is answered 503 serverInternal (with a fresh
                      Replay-Nonce) and "Retry-After: SECS" unless SECS is 0,
                      as a CA busy for a moment; pebble does not see it, and
                      the file is removed.
  DIR/huge_once       "KIND" (e.g. "cert"): the next answer pebble gives with
                      status 200 to a request of that KIND comes with 2 MiB
                      of blank lines after its body, as a broken or hostile
                      CA; logged with KIND KIND+huge, and the file is removed.
A newOrder whose payload has "replaces" is logged with KIND newOrder+replaces,
and "TIME ID STATUS" goes to DIR/replaces.log.  A POST to an authorization URL
of an order is logged with KIND authz, and the token of each of its challenges
goes to DIR/tokens.log once.
Exits on SIGTERM."""
import base64
import http.client
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

PORT, PEBBLE, CERT, KEY, CA, DIR = (int(sys.argv[1]), int(sys.argv[2]), *sys.argv[3:7])
state = {"newOrder": None, "newNonce": None, "orders": set(), "finalize": set(), "certs": set(),
         "csr": None, "revokeCert": None, "authz": set(), "valid_seen": {}, "tokens": set()}
lock = threading.Lock()
# Hop-by-hop or recomputed: never copied from pebble's answer.
SKIP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


def pebble(method, path, host, body=None, headers=None):
    ctx = ssl.create_default_context(cafile=CA)
    conn = http.client.HTTPSConnection("127.0.0.1", PEBBLE, context=ctx, timeout=30)
    h = dict(headers or {})
    h["Host"] = host
    conn.request(method, path, body=body, headers=h)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, resp.getheaders(), data


def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def payload_of(body):
    """The JWS payload of a request body as JSON, or None."""
    try:
        return json.loads(b64url(json.loads(body)["payload"]) or b"null")
    except (ValueError, KeyError, TypeError):
        return None


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def expired_chain(csr_der):
    """A certificate for the CSR valid only on 2020-01-01, then its CA (PEM)."""
    d = os.path.join(DIR, "expired-ca")
    with lock:
        if not os.path.exists(os.path.join(d, "ca.pem")):
            os.makedirs(d, exist_ok=True)
            subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                            "ec_paramgen_curve:P-256", "-nodes", "-keyout", d + "/ca.key",
                            "-out", d + "/ca.pem", "-days", "30",
                            "-subj", "/CN=acme_forward expired-certificate CA"],
                           check=True, capture_output=True)
            open(d + "/index.txt", "w").close()
            with open(d + "/serial", "w") as f:
                f.write("1000\n")
            with open(d + "/ca.cnf", "w") as f:
                f.write("[ca]\ndefault_ca = c\n[c]\ndatabase = %s/index.txt\n"
                        "new_certs_dir = %s\nserial = %s/serial\ndefault_md = sha256\n"
                        "policy = p\ncopy_extensions = copy\nunique_subject = no\n"
                        "x509_extensions = x\n[p]\ncommonName = optional\n"
                        "[x]\nbasicConstraints = CA:FALSE\n"
                        "authorityKeyIdentifier = keyid\n" % (d, d, d))
        pem = "-----BEGIN CERTIFICATE REQUEST-----\n%s\n-----END CERTIFICATE REQUEST-----\n" % \
            base64.encodebytes(csr_der).decode().strip()
        out = subprocess.run(["openssl", "ca", "-batch", "-notext", "-config", d + "/ca.cnf",
                              "-cert", d + "/ca.pem", "-keyfile", d + "/ca.key",
                              "-startdate", "20200101000000Z", "-enddate", "20200102000000Z",
                              "-in", "/dev/stdin", "-out", "/dev/stdout"],
                             input=pem.encode(), check=True, capture_output=True).stdout
    return out + open(d + "/ca.pem", "rb").read()


def log(t, kind, method, path, status):
    with lock, open(os.path.join(DIR, "requests.log"), "a") as f:
        f.write("%.3f %s %s %s %d\n" % (t, kind, method, path, status))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, headers, data):
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in SKIP:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def problem(self, host, status, ptype, detail, extra=()):
        """An RFC 8555 problem answer, with a fresh nonce from pebble."""
        _, nh, _ = pebble("HEAD", state["newNonce"], host)
        body = json.dumps({"type": "urn:ietf:params:acme:error:" + ptype, "detail": detail,
                           "status": status}).encode()
        self.reply(status, [(k, v) for k, v in nh if k.lower() == "replay-nonce"] +
                   [("Content-Type", "application/problem+json")] + list(extra), body)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        host = self.headers.get("Host", "127.0.0.1:%d" % PORT)
        path = self.path
        with lock:
            kind = ("newOrder" if path == state["newOrder"] else
                    "order" if self.command == "POST" and path in state["orders"] else
                    "finalize" if self.command == "POST" and path in state["finalize"] else
                    "cert" if self.command == "POST" and path in state["certs"] else
                    "authz" if self.command == "POST" and path in state["authz"] else
                    "revoke" if self.command == "POST" and path == state["revokeCert"] else "-")
        t = time.time()
        fwd = {k: v for k, v in self.headers.items()
               if k.lower() in ("content-type", "accept", "user-agent")}
        ari = os.path.join(DIR, "ari")
        if path.startswith("/renewal-info/") and self.command == "GET":
            due = os.path.exists(ari) and path[len("/renewal-info/"):] in \
                open(ari).read().split()
            start = t - 7200 if due else t + 30 * 86400
            self.reply(200, [("Content-Type", "application/json")], json.dumps({
                "suggestedWindow": {"start": rfc3339(start), "end": rfc3339(start + 3600 if due
                                                                          else start + 86400)}
            }).encode())
            log(t, "renewalInfo", self.command, path, 200)
            return
        replaces = None
        if kind == "newOrder":
            replaces = (payload_of(body) or {}).get("replaces")
            if replaces is not None:
                kind = "newOrder+replaces"
        once = os.path.join(DIR, "unavailable_once")
        with lock:
            spec = open(once).read().split() if os.path.exists(once) else []
            busy = len(spec) == 2 and spec[0] == kind
            if busy:
                os.remove(once)
        if busy:
            self.problem(host, 503, "serverInternal", "the CA is busy: try again later",
                         [("Retry-After", spec[1])] if spec[1] != "0" else [])
            log(t, kind, self.command, path, 503)
            return
        limit = os.path.join(DIR, "ratelimit")
        if kind.startswith("newOrder") and os.path.exists(limit):
            secs = open(limit).read().strip()
            self.problem(host, 429, "rateLimited",
                         "too many new orders recently: retry after %s s" % secs,
                         [("Retry-After", secs)])
            log(t, kind, self.command, path, 429)
            return
        refuse = os.path.join(DIR, "replaces_refuse")
        if replaces is not None and os.path.exists(refuse):
            code, ptype = open(refuse).read().split()[:2]
            self.problem(host, int(code), ptype,
                         "the certificate being replaced (%s) was not issued to the requester "
                         "account" % replaces)
            log(t, kind, self.command, path, int(code))
            with lock, open(os.path.join(DIR, "replaces.log"), "a") as f:
                f.write("%.3f %s %s\n" % (t, replaces, code))
            return
        status, headers, data = pebble(self.command, path, host, body, fwd)
        if kind == "revoke" and status == 400 and b"badNonce" in data:
            # pebble refuses some nonces at random: not an answer to the
            # revoke (nothing was revoked), passed on for the client to retry
            # at once and logged apart from the answers.
            kind = "revoke+badNonce"
        elif kind == "revoke" and status == 200 and os.path.exists(
                os.path.join(DIR, "revoke_lost")):
            # Lost only once pebble revoked: a refused nonce is retried.
            # (not a dropped connection: libcurl would send it again at once)
            self.reply(504, [("Content-Type", "text/plain")], b"gateway timeout\n")
            log(t, kind, self.command, path, 504)
            return
        if path == "/dir" and status == 200:
            d = json.loads(data)
            with lock:
                state["newOrder"] = urlsplit(d["newOrder"]).path
                state["newNonce"] = urlsplit(d["newNonce"]).path
                state["revokeCert"] = urlsplit(d.get("revokeCert", "")).path or None
            if os.path.exists(ari):
                d["renewalInfo"] = "https://%s/renewal-info/" % host
                data = json.dumps(d).encode()
        if replaces is not None:
            with lock, open(os.path.join(DIR, "replaces.log"), "a") as f:
                f.write("%.3f %s %d\n" % (t, replaces, status))
        if kind.startswith("newOrder") and status == 201:
            loc = dict((k.lower(), v) for k, v in headers).get("location")
            fin = json.loads(data).get("finalize")
            with lock:
                if loc:
                    state["orders"].add(urlsplit(loc).path)
                if fin:
                    state["finalize"].add(urlsplit(fin).path)
        if kind in ("newOrder", "newOrder+replaces", "order") and status in (200, 201):
            with lock:
                state["authz"].update(urlsplit(u).path
                                      for u in json.loads(data).get("authorizations") or [])
        flap = os.path.exists(os.path.join(DIR, "authz_flap"))
        if kind == "authz" and status == 200:
            a = json.loads(data)
            with lock:
                new = {c["token"] for c in a.get("challenges") or [] if "token" in c} - \
                    state["tokens"]
                state["tokens"] |= new
                if new:
                    with open(os.path.join(DIR, "tokens.log"), "a") as f:
                        f.write("".join(tok + "\n" for tok in sorted(new)))
                n = 0
                if flap and a.get("status") == "valid":
                    n = state["valid_seen"][path] = state["valid_seen"].get(path, 0) + 1
            if flap and n % 2 == 1:
                a["status"] = "pending"
                data = json.dumps(a).encode()
                kind = "authz+pending"
        no_authz = os.path.exists(os.path.join(DIR, "order_no_authz"))
        if kind == "order" and status == 200 and (
                no_authz or flap or os.path.exists(os.path.join(DIR, "order_pending"))):
            o = json.loads(data)
            o["status"] = "pending"
            if no_authz:
                o.pop("authorizations", None)
            data = json.dumps(o).encode()
        if kind == "finalize":
            with lock:
                state["csr"] = (payload_of(body) or {}).get("csr")
        if kind in ("order", "finalize") and status == 200:
            cert = json.loads(data).get("certificate")
            if cert:
                with lock:
                    state["certs"].add(urlsplit(cert).path)
        if kind == "cert" and status == 200 and state["csr"] and os.path.exists(
                os.path.join(DIR, "cert_expired")):
            data = expired_chain(b64url(state["csr"]))
        if kind == "order" and status == 200 and os.path.exists(
                os.path.join(DIR, "order_invalid")):
            o = json.loads(data)
            o["status"] = "invalid"
            o.pop("error", None)
            data = json.dumps(o).encode()
        if kind == "finalize" and status == 200 and os.path.exists(
                os.path.join(DIR, "finalize_ready")):
            o = json.loads(data)
            o["status"] = "ready"
            data = json.dumps(o).encode()
        huge = os.path.join(DIR, "huge_once")
        with lock:
            pad = status == 200 and os.path.exists(huge) and open(huge).read().split() == [kind]
            if pad:
                os.remove(huge)
        if pad:
            # Logged first: the client stops reading and closes the connection.
            log(t, kind + "+huge", self.command, path, status)
            try:
                self.reply(status, headers, data + b"\n" * (2 << 20))
            except OSError:
                pass
            return
        ra = os.path.join(DIR, "order_retry_after")
        if kind == "order" and os.path.exists(ra):
            headers = [(k, v) for k, v in headers if k.lower() != "retry-after"]
            headers.append(("Retry-After", open(ra).read().strip()))
        self.reply(status, headers, data)
        log(t, kind, self.command, path, status)

    do_GET = do_POST = do_HEAD = handle_any


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("listening on 127.0.0.1:%d" % PORT, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
