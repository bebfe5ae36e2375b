#!/bin/bash
# A ClientHello split into several TLS records that arrive together (one
# segment): a client that fragments its hello (as anti-censorship tools do)
# completes its handshake at once.  GnuTLS takes one record per call, and the
# site used to wait for a new socket event for the rest, which never came:
# the handshake hung until site.handshake_timeout, and the connection kept
# its slot of site.max_connections_per_ip after the client gave up.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.handshake_timeout=20
ok $? "tlsboxd serves the site"

cat >"$TB_TMP/frag.py" <<'PY'
import socket, ssl, sys, time
port, ca, nrec = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
ctx = ssl.create_default_context(cafile=ca)
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out, server_hostname="localhost")
try:
    tls.do_handshake()
except ssl.SSLWantReadError:
    pass
hello = out.read()
body, recs = hello[5:], b""
step = (len(body) + nrec - 1) // nrec
for i in range(0, len(body), step):
    part = body[i:i + step]
    recs += hello[:3] + len(part).to_bytes(2, "big") + part
s = socket.create_connection(("127.0.0.1", port), timeout=5)
s.sendall(recs)  # every record in one send
def pump():
    d = s.recv(65536)
    if not d:
        raise EOFError
    inc.write(d)
try:
    while True:
        pump()
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            s.sendall(out.read())
    tls.write(b"GET /sub/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    s.sendall(out.read())
    resp = b""
    while b"\r\n" not in resp:
        pump()
        try:
            resp += tls.read(65536)
        except ssl.SSLWantReadError:
            pass
    print(resp.split(b"\r\n")[0].decode())
except socket.timeout:
    print("no answer in 5 s")
except EOFError:
    print("closed")
PY
for n in 2 3 8 64; do
    is "$(python3 "$TB_TMP/frag.py" "$P_HTTPS" "$CA" "$n")" "HTTP/1.1 200 OK" \
        "a ClientHello in $n records sent together: handshake done, request served"
done

# Records that make no hello, then the client's FIN: the connection ends with
# it, not at the handshake timeout, and gives back its per-address slot.
site_set site.max_connections_per_ip 2
for i in 1 2 3; do
    python3 - "$P_HTTPS" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"\x16\x03\x01\x00\x05hello" * 3)
s.settimeout(1)
try:
    s.recv(100)
except OSError:
    pass
s.close()
PY
done
sleep 0.5
is "$(site_metric tlsbox_site_connections_open)" 0 "three such clients gone: no connection left open"
is "$(curl -s --cacert "$CA" --max-time 5 -o /dev/null -w '%{http_code}' "$URL/sub/")" 200 \
    "and the same address is served (max_connections_per_ip 2)"
done_testing
