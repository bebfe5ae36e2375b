#!/usr/bin/python3
"""Loopback-only front of an `openssl ocsp -port` responder that runs inside a
network namespace (Debian's openssl binds every interface: inside the
namespace that is only its own lo).

  ocsp_forward.py LISTEN_PORT NETNS_NAME TARGET_PORT DIR

Listens on 127.0.0.1:LISTEN_PORT in the caller's namespace; each connection is
relayed to 127.0.0.1:TARGET_PORT inside /run/netns/NETNS_NAME.  Each request
appends a line to DIR/requests.log.  When DIR/override.der exists, the request
is answered with that file instead (a crafted response) without asking the
responder.  When DIR/hang exists, the request is read and never answered
(a responder that accepts and then stalls): the client waits for its own
timeout.  Exits on SIGTERM."""
import ctypes
import os
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000


def relay(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def read_request(conn):
    """Read one HTTP request (headers + Content-Length body); bounded."""
    buf = b""
    while b"\r\n\r\n" not in buf and len(buf) < 65536:
        chunk = conn.recv(4096)
        if not chunk:
            return buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(body) < min(length, 65536):
        chunk = conn.recv(4096)
        if not chunk:
            break
        body += chunk
    return buf


def main():
    port, netns, target, d = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("127.0.0.1", port))
    lst.listen(16)
    # From here on, sockets this thread creates live in the responder's namespace.
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/run/netns/" + netns, os.O_RDONLY)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        sys.exit("setns: errno %d" % ctypes.get_errno())
    os.close(fd)
    print("listening on 127.0.0.1:%d" % port, flush=True)
    held = []
    while True:
        conn, _ = lst.accept()
        with open(os.path.join(d, "requests.log"), "a") as f:
            f.write("request\n")
        if os.path.exists(os.path.join(d, "hang")):
            read_request(conn)
            held.append(conn)  # kept open, never answered
            continue
        override = os.path.join(d, "override.der")
        if os.path.exists(override):
            read_request(conn)
            data = open(override, "rb").read()
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/ocsp-response\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(data) + data)
            conn.close()
            continue
        try:
            back = socket.create_connection(("127.0.0.1", target), timeout=2)
            back.settimeout(None)
        except OSError:
            conn.close()  # responder down: the client sees the connection drop
            continue
        threading.Thread(target=relay, args=(conn, back), daemon=True).start()
        threading.Thread(target=relay, args=(back, conn), daemon=True).start()


if __name__ == "__main__":
    main()
