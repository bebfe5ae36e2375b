#!/usr/bin/env python3
"""A loopback HTTP/1.1 peer for bench's tests: the first ENDLESS connections
that send a request get an answer whose body never ends (Content-Length
10**15, streamed as fast as the socket takes it); every other request gets
"HTTP/1.1 200 OK" and a 5-byte body, keep-alive.  Connections that send
nothing (port probes) do not count.  With --tls CERT KEY it speaks TLS.

Usage: endless_peer.py PORT [--endless N] [--tls CERT KEY]
"""
import socket
import ssl
import sys
import tempfile
import threading

CHUNK = b"x" * (1 << 20)
lock = threading.Lock()
state = {"endless_left": 1}


def take_endless():
    with lock:
        if state["endless_left"] > 0:
            state["endless_left"] -= 1
            return True
        return False


def stream_forever(c):
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000\r\n\r\n")
    if isinstance(c, ssl.SSLSocket):
        while True:
            c.sendall(CHUNK)
    # Plain TCP: sendfile from a sparse file, as fast as the kernel goes.
    with tempfile.TemporaryFile() as f:
        f.truncate(1 << 40)
        while True:
            f.seek(0)
            c.sendfile(f)


def serve(c, ctx):
    try:
        if ctx:
            c = ctx.wrap_socket(c, server_side=True)
        buf = b""
        first = True
        while True:
            d = c.recv(65536)
            if not d:
                break
            buf += d
            while b"\r\n\r\n" in buf:
                _, buf = buf.split(b"\r\n\r\n", 1)
                if first and take_endless():
                    stream_forever(c)
                first = False
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    except (OSError, ssl.SSLError):
        pass
    c.close()


def main():
    port = int(sys.argv[1])
    ctx = None
    args = sys.argv[2:]
    while args:
        if args[0] == "--endless":
            state["endless_left"] = int(args[1])
            args = args[2:]
        elif args[0] == "--tls":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args[1], args[2])
            args = args[3:]
        else:
            sys.exit("endless_peer.py: unknown argument " + args[0])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c, ctx), daemon=True).start()


main()
