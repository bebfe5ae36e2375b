#!/bin/bash
# The site attacked the way a security read found it weak: hidden files,
# open redirects, oversized headers, timeouts changed live, smuggling-shaped
# header values and log injection.  Each block fails on the code before the fix.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
w="$TB_TMP/www"
mkdir -p "$w/.git" "$w/.well-known" "$w/img" "$w/sub/.cache"
printf '[core]\n\tbare = false\n' >"$w/.git/config"
echo "SECRET=hunter2" >"$w/.env"
echo "cached" >"$w/sub/.cache/x"
echo "Contact: mailto:security@example.org" >"$w/.well-known/security.txt"
echo "img" >"$w/img/index.html"
mkdir -p "$w/loop/index.html"
long=$(printf 'd%.0s' $(seq 1 200))
mkdir -p "$w/$long/$long/$long/$long/$long/$long/$long"
site_start --set site.workers=1 --set site.access_log=stderr
ok $? "tlsboxd serves the site"
code() { curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

# ---- hidden files ----------------------------------------------------------------------------
is "$(code "$URL/.git/config")" 404 "GET /.git/config: 404"
is "$(code "$URL/.env")" 404 "GET /.env: 404"
is "$(code --path-as-is "$URL/%2egit/config")" 404 "GET /%2egit/config (encoded dot): 404"
is "$(code --path-as-is "$URL/img/../.env")" 404 "GET /img/../.env: 404"
is "$(code "$URL/sub/.cache/x")" 404 "a hidden directory deeper down: 404"
is "$(code --http2 "$URL/.env")" 404 "over HTTP/2 as well: 404"
is "$(curl -s --cacert "$CA" "$URL/.well-known/security.txt")" \
    "Contact: mailto:security@example.org" "/.well-known/ (RFC 8615) is served"
site_set site.dotfiles allow
is "$(curl -s --cacert "$CA" "$URL/.env")" "SECRET=hunter2" \
    "site.dotfiles=allow (set live) serves them for those who want it"
site_set site.dotfiles deny
is "$(code "$URL/.env")" 404 "and deny again"

# ---- open redirect ---------------------------------------------------------------------------
loc() { curl -s --cacert "$CA" -o /dev/null -w '%{http_code} %{redirect_url}|%header{location}' \
    --max-time 10 "$@"; }
is "$(loc --path-as-is "$URL//evil.example/..%2Fimg")" "301 $URL/img/|/img/" \
    "GET //evil.example/..%2Fimg: Location /img/, not //evil.example/..."
is "$(loc --http2 --path-as-is "$URL//evil.example/..%2Fimg")" "301 $URL/img/|/img/" \
    "the same over HTTP/2"
is "$(loc --http1.1 --request-target "https://evil.example/img" "$URL/img")" "301 $URL/img/|/img/" \
    "absolute-form https://evil.example/img: Location /img/"
is "$(loc --path-as-is "$URL/img?next=//evil.example")" "301 $URL/img/?next=//evil.example|/img/?next=//evil.example" \
    "the query follows the slash, the host stays"
mkdir -p "$w/a\\b"
is "$(loc --path-as-is "$URL/a%5Cb")" "301 $URL/a%5Cb/|/a%5Cb/" \
    "a backslash in Location is encoded (browsers read '\\' as '/')"
# A directory named index.html: "/loop/" would redirect to itself for ever.
is "$(loc "$URL/loop/")" "500 |" "a directory named index.html: 500, no redirect loop"
# A Location longer than the header buffer: refused, not a 301 without Location.
ll="/$long/$long/$long/$long/$long/$long/$long"
is "$(loc "$URL$ll")" "414 |" "a ${#ll}-byte directory redirect that does not fit: 414"
is "$(loc "$URL$ll/" -o /dev/null)" "404 |" "and the directory itself: 404 (no index)"
like "$(cat "$TB_TMP/daemon.log")" "does not fit; 414|is a directory, not an index file" \
    "the refusal is logged"

# ---- header values, Content-Length, log injection ------------------------------------------
# raw 'REQUEST' (printf escapes): send it over TLS, print the status code.
# rawall 'REQUEST': the same, read to the end: "STATUS body=B" (B: bytes
# after the head).
rawreq() {
    printf "$2" | python3 -c '
import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["http/1.1"])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5),
                    server_hostname="localhost")
s.sendall(sys.stdin.buffer.read())
d = b""
try:
    while sys.argv[2] == "all" or b"\r\n" not in d:
        b = s.recv(4096)
        if not b:
            break
        d += b
except OSError:
    pass
head, _, body = d.partition(b"\r\n\r\n")
status = head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "none"
print("%s body=%d" % (status, len(body)) if sys.argv[2] == "all" else status)
' "$P_HTTPS" "$1"
}
raw() { rawreq status "$1"; }
rawall() { rawreq all "$1"; }
# A HEAD refused before it was whole gets no body either (RFC 9110 9.3.2):
# the error page would be read as the start of the next answer.
like "$(rawall 'GET / HTTP/1.1\r\n\r\n')" "^400 body=[1-9][0-9]+$" "GET without Host: 400 with its page"
is "$(rawall 'HEAD / HTTP/1.1\r\n\r\n')" "400 body=0" "HEAD without Host: 400, no body"
is "$(rawall 'HEAD / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n')" "400 body=0" "HEAD with two Hosts: the same"
is "$(rawall 'HEAD / HTTP/2.0\r\nHost: localhost\r\n\r\n')" "505 body=0" "HEAD / HTTP/2.0: 505, no body"
is "$(raw 'GET / HTTP/1.1\r\nHost: local\rhost\r\n\r\n')" 400 "a bare CR inside a header value: 400"
is "$(raw 'GET / HTTP/1.1\r\nHost: localhost\r\nX-A: a\r\r\n\r\n')" 400 "a bare CR ending a header value: 400"
is "$(raw 'GET / HTTP/1.1\r\nHost: localhost\r\nX-A: \033[2J\r\n\r\n')" 400 "an ESC in a header value: 400"
is "$(raw 'GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: \r\n\r\n')" 400 "an empty Content-Length: 400"
is "$(raw 'G\033[31mET / HTTP/1.1\r\nHost: localhost\r\n\r\n')" 400 "control bytes in the method: 400"
is "$(raw 'GET / HTTP/1.1\r\nHost: localhost\r\nX-A: a\tb\r\n\r\n')" 200 "a tab inside a value is fine: 200"
is "$(raw 'GET /\377probe\033 HTTP/1.1\r\nHost: localhost\r\n\r\n')" 400 "an ESC in the target: 400"
is "$(raw 'GET /\377probe\"x HTTP/1.1\r\nHost: localhost\r\n\r\n')" 404 "a 0xff byte in the target: 404"
# A Host is uri-host [":" port] (RFC 9110 7.2; RFC 9112 3.2: a bad one is a 400):
# no user info, not empty.  Over h2 the same holds for :authority and host,
# and the two must name the same host (RFC 9113 8.3.1).
is "$(raw 'GET / HTTP/1.1\r\nHost: me@localhost\r\n\r\n')" 400 "Host with user info: 400"
is "$(raw 'GET / HTTP/1.1\r\nHost: a@b@localhost:443\r\n\r\n')" 400 "Host a@b@localhost:443: 400"
is "$(raw 'GET / HTTP/1.1\r\nHost:\r\n\r\n')" 400 "an empty Host: 400"
is "$(raw 'GET / HTTP/1.1\r\nHost: LocalHost:443\r\n\r\n')" 200 "Host LocalHost:443: 200"
is "$(raw 'GET / HTTP/1.0\r\n\r\n')" 200 "HTTP/1.0 without a Host: 200"
# HTTP-version is "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3): 505 only for a
# version we do not speak, a malformed request line is a 400.
is "$(raw 'GET / HTTP/1.1 \r\nHost: localhost\r\n\r\n')" 400 "a space after HTTP/1.1: 400"
is "$(raw 'GET / HTTP/1.10\r\nHost: localhost\r\n\r\n')" 400 "HTTP/1.10: 400"
is "$(raw 'GET / HTTP/3.0\r\nHost: localhost\r\n\r\n')" 505 "HTTP/3.0: 505"
# Absolute-form (RFC 9112 3.2.2): the authority ends at '/', '?' or '#', so
# a query right after the host is a query of "/", not the path.
is "$(raw 'GET https://localhost?/nothing/here HTTP/1.1\r\nHost: localhost\r\n\r\n')" 200 \
    "GET https://localhost?/nothing/here is / with a query: 200, not the 404 of /nothing/here"
is "$(raw 'GET https://localhost HTTP/1.1\r\nHost: localhost\r\n\r\n')" 200 \
    "GET https://localhost (an empty path is /): 200"
is "$(code --http2 -H 'Host: me@localhost' "$URL/")" 400 "h2 :authority with user info: 400"
h2st() { nghttp -n "$@" "https://127.0.0.1:$P_HTTPS/" 2>&1 | sed -n 's/.*:status: //p'; }
is "$(h2st -v -H 'host: elsewhere.example')" 400 "h2 host naming another host than :authority: 400"
is "$(h2st -v -H 'host: 127.0.0.1')" 200 "h2 host naming the same host (no port): 200"
log="$TB_TMP/daemon.log"
like "$(grep -a 'probe' "$log")" 'GET /\\xffprobe\\x22x HTTP/1.1 404' "the access log escapes it: /\\xffprobe\\x22x"
ok "$(LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f-\xff]' "$log" | grep -qx 0; echo $?)" \
    "no raw control or high byte reaches the daemon log"

# ---- a timeout lowered live holds for new connections -------------------------------------
# Connection A sits idle under the old 60 s idle timeout; then the timeout
# goes down to 2 s and connection B arrives.  B must be closed after about
# 2 s, not wait behind A's 60 s deadline (slowloris protection after a change).
out=$(python3 - "$P_HTTPS" "$TB_TLSBOXCTL" "$TB_STATE" <<'PY'
import socket, ssl, subprocess, sys, time
port, ctl, state = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["http/1.1"])
def conn():
    return ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                           server_hostname="localhost")
def closed_within(s, limit):
    t0 = time.monotonic()
    s.settimeout(limit)
    try:
        s.recv(1)
        return "%.0f" % (time.monotonic() - t0) if time.monotonic() - t0 < limit else "open"
    except socket.timeout:
        return "open"
    except OSError:
        return "%.0f" % (time.monotonic() - t0)
a = conn()
time.sleep(0.5)
subprocess.run([ctl, "--state-dir", state, "set", "site.idle_timeout", "2"], check=True,
               stdout=subprocess.DEVNULL)
time.sleep(0.2)
b = conn()
t0 = time.monotonic()
r = closed_within(b, 8)
print("B closed" if r != "open" else "B open", "after", "under 5 s" if time.monotonic() - t0 < 5 else "5 s or more")
PY
)
is "$out" "B closed after under 5 s" "idle_timeout lowered live to 2 s: a new connection is closed in time"
tb_ctl set site.idle_timeout 60 >/dev/null

# ---- headers above 64 KB (site.max_header_size raised to 1 MiB) ----------------------------
tb_stop_daemon
ok $? "tlsboxd stops"
site_start --set site.workers=1 --set site.max_header_size=1048576 --set site.cache_size=64
ok $? "restarted with site.max_header_size=1048576, site.cache_size=64 (KiB)"
# bighead BYTES: a request whose headers take BYTES bytes; prints the status
# code and how long the answer took, or "none" after 8 s.
bighead() {
    python3 - "$P_HTTPS" "$1" <<'PY'
import socket, ssl, sys, time
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["http/1.1"])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=8),
                    server_hostname="localhost")
head = b"GET /sub/ HTTP/1.1\r\nHost: localhost\r\n"
lines = []
left = int(sys.argv[2]) - len(head) - 2
while left > 0:
    v = min(left - 8, 8000)
    lines.append(b"X-F: " + b"a" * max(v, 1) + b"\r\n")
    left -= len(lines[-1])
t0 = time.monotonic()
d = b""
try:
    s.sendall(head + b"".join(lines) + b"\r\n")
    while b"\r\n" not in d:
        b = s.recv(4096)
        if not b:
            break
        d += b
except OSError:
    pass
code = d.split(b" ")[1].decode() if d.startswith(b"HTTP/1.1 ") else "none"
print("%s in %s" % (code, "under 5 s" if time.monotonic() - t0 < 5 else "5 s or more"))
PY
}
is "$(bighead 200000)" "200 in under 5 s" "a 200 KB head under a 1 MiB limit: answered (200)"
is "$(bighead 1200000)" "431 in under 5 s" "a 1.2 MB head over the 1 MiB limit: 431 at once, not a hang"

# ---- a flood of misses does not churn the cache -----------------------------------------------
# f16k.txt is cached; then it is rewritten in place with the same size, inode
# and mtime, which the cache cannot tell from the original: while it stays
# cached the old bytes are served.  2000 requests for random .gz names (each
# a "missing" entry) must not push it out of the 64 KiB cache.
f="$TB_TMP/www/f16k.txt"
old=$(sha256sum <"$f")
is "$(curl -s --cacert "$CA" "$URL/f16k.txt" | sha256sum)" "$old" "f16k.txt served (and cached)"
cp -p "$f" "$TB_TMP/f16k.ref"
head -c 16127 /dev/urandom | dd of="$f" conv=notrunc status=none
touch -r "$TB_TMP/f16k.ref" "$f"
for i in $(seq 1 2000); do echo "$URL/miss-$i-$RANDOM.gz"; done >"$TB_TMP/uris"
timeout 60 h2load -c 4 -m 8 -n 2000 -i "$TB_TMP/uris" >"$TB_TMP/miss.out" 2>&1
like "$(grep '^status codes' "$TB_TMP/miss.out")" "0 2xx, 0 3xx, 2000 4xx" "2000 misses answered 404"
is "$(curl -s --cacert "$CA" "$URL/f16k.txt" | sha256sum)" "$old" \
    "f16k.txt is still served from the cache after the miss flood"

# ---- without openat2: long paths are refused, not truncated ----------------------------------
# The daemon runs with openat2(2) failing (ENOSYS, as on kernels before 5.6),
# so files are opened by the fallback walk.  A 4099-byte path whose first 4095
# bytes name an existing file must not open that file.
tb_stop_daemon
ok $? "tlsboxd stops"
seg=$(printf 'p%.0s' $(seq 1 250))
tail=$(printf 'f%.0s' $(seq 1 79))
p=""
for i in $(seq 1 16); do p="$p$seg/"; done
# Made one directory at a time: the absolute path is longer than PATH_MAX.
(cd "$TB_TMP/www" && for i in $(seq 1 16); do mkdir "$seg" && cd "$seg" || exit 1; done &&
    echo "not this one" >"$tail")
ok $? "a file whose path under the root is $((${#p} + ${#tail})) bytes long"
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$top_builddir/plugins/site/tests/no_openat2" \
    "$TB_TLSBOXD" >"$TB_TMP/tlsboxd-no-openat2"
chmod +x "$TB_TMP/tlsboxd-no-openat2"
TB_TLSBOXD="$TB_TMP/tlsboxd-no-openat2" site_start --set site.workers=1
ok $? "restarted with openat2 failing (ENOSYS)"
is "$(curl -s --cacert "$CA" "$URL/sub/")" "sub page" "files are served through the fallback"
is "$(code "$URL/$p${tail}ZZZZ")" 414 "a 4099-byte path: 414, not the file its first 4095 bytes name"
is "$(curl -s --cacert "$CA" "$URL/$p$tail")" "not this one" "the 4095-byte path itself is served"
q=$(head -c 3000 /dev/zero | tr '\0' q)
is "$(curl -s --cacert "$CA" "$URL/$p$tail?utm=$q")" "not this one" \
    "and with a 3,000-byte query string (a 7,150-byte target, under max_request_line)"
is "$(curl -s --cacert "$CA" --http2 "$URL/$p$tail?utm=$q")" "not this one" "the same over HTTP/2"

# ---- end -------------------------------------------------------------------------------------
tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
