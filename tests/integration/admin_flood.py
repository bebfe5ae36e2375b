"""Clients of the admin port for 63_admin_conn_flood*.sh (real sockets).

  admin_flood.py flood HOST PORT READY HOLD CLOSED STOP SOURCE...
      64 slow readers of Chart.js, connection i from SOURCE i (64 of them),
      each opened anew every 3 s.  A small receive buffer and a 1400-byte MSS
      (as in 63_admin_slow_read) make the server's answer wait on the
      reader, who reads 64 raw bytes of it every 50 ms.  A connection 3 s
      old is reset and opened again (again and again while the server still
      counts the old one against its client's 16).  One the server closes is
      counted with its age and opened again at once.  Once each of the 64
      has been opened anew, READY gets "64".  Once HOLD exists, all are
      opened anew once more and then no more, and HOLD.age gets the
      oldest's age (all 64 are held and young, with no gap between a reset
      and its next one for a newcomer to slip in).  CLOSED says "N AGE...": how many the server has closed,
      and their ages.  Up to 60 s, or until STOP exists.
  admin_flood.py admin HOST PORT SOURCE OUT
      A new admin on one connection from SOURCE: logs in, gets the page, the
      session and Chart.js.  OUT gets the statuses (000 for none) and how
      many connections it opened; OUT.login, OUT.index, ... the bodies.
"""
import concurrent.futures
import http.client
import os
import socket
import ssl
import struct
import sys
import time

CHART = "/vendor/chart.js/chart.min.js"
REOPEN_S = 3
CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE


def open_reader(host, port, src):
    for _ in range(250):  # 5 s
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
        s.bind((src, 0))
        s.settimeout(5)
        try:
            s.connect((host, port))
            t = CTX.wrap_socket(s)
            t.sendall(b"GET %s HTTP/1.1\r\nHost: tlsbox\r\n\r\n" % CHART.encode())
            if t.recv(4096).startswith(b"HTTP/1.1 200 "):
                raw = socket.socket(fileno=os.dup(t.fileno()))
                raw.setblocking(False)
                return [t, raw, time.time()]
        except OSError:  # refused: the client's old one is still counted
            pass
        s.close()
        time.sleep(0.02)
    sys.exit("a connection from %s could not be opened again" % src)


def reset(c):
    c[0].setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c[1].close()
    c[0].close()


def alive(raw):  # tcpi_state 1: established
    if struct.unpack("B", raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1))[0] != 1:
        return False
    try:
        return raw.recv(64) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def write(path, text):
    open(path + ".new", "w").write(text)
    os.rename(path + ".new", path)


def flood(host, port, ready, hold, closed_file, stop, sources):
    pool = concurrent.futures.ThreadPoolExecutor(8)
    conns = list(pool.map(lambda src: open_reader(host, port, src), sources))
    renewed, closed, end = set(), [], time.time() + 60
    while time.time() < end and not os.path.exists(stop):
        holding, again = os.path.exists(hold), []
        # Into the hold with all opened anew once more, as young as can be.
        renew_all = holding and not os.path.exists(hold + ".age")
        for i, c in enumerate(conns):
            age = time.time() - c[2]
            if not alive(c[1]):
                closed.append(age)
                write(closed_file, "%d %s\n" % (len(closed), " ".join("%.1f" % a for a in closed)))
            elif (age < REOPEN_S or holding) and not renew_all:
                continue
            else:
                renewed.add(i)
            reset(c)
            again.append(i)
        # All reset first: by the time each is opened again the server has
        # seen most resets, and need not be asked again and again.  Eight
        # at a time: a TLS handshake each keeps one opener below 64 per 3 s.
        for i, c in zip(again, pool.map(lambda i: open_reader(host, port, sources[i]), again)):
            conns[i] = c
        if len(renewed) == len(conns) and not os.path.exists(ready):
            write(ready, "%d\n" % len(conns))
        if holding and not os.path.exists(hold + ".age"):
            write(hold + ".age", "%.1f\n" % (time.time() - min(c[2] for c in conns)))
        time.sleep(0.05)


def admin(host, port, src, out):
    codes, cookie, socks = [], "", set()
    c = http.client.HTTPSConnection(host, port, timeout=10, context=CTX,
                                    source_address=(src, 0))
    asks = [("POST", "/api/v1/session/login", "login",
             b'{"user":"admin","password":"admins password is long"}'),
            ("GET", "/", "index", None), ("GET", "/api/v1/session", "session", None),
            ("GET", CHART, "chart", None)]
    try:
        for method, url, name, body in asks:
            c.request(method, url, body=body,
                      headers={"Content-Type": "application/json", "Cookie": cookie})
            socks.add(c.sock.getsockname())
            r = c.getresponse()
            codes.append(str(r.status))
            if r.getheader("Set-Cookie", "").startswith("__Host-tlsbox="):
                cookie = r.getheader("Set-Cookie").split(";")[0]
            open("%s.%s" % (out, name), "wb").write(r.read())
    except (OSError, http.client.HTTPException):
        pass
    codes += ["000"] * (len(asks) - len(codes))
    open(out, "w").write("%s %d\n" % (" ".join(codes), len(socks)))


if sys.argv[1] == "flood":
    flood(sys.argv[2], int(sys.argv[3]), *sys.argv[4:8], sys.argv[8:])
else:
    admin(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
