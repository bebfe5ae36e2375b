#!/bin/bash
# HTTP semantics a review found wrong, with real clients: an HTTP/2 CONNECT
# (RFC 9113 8.5) is answered as HTTP/1.1 answers it, 405 with Allow, not
# 400; :authority and host name one host whatever the case of its letters,
# IPv6 literals included (RFC 9110 4.2.3), on the same port; and a date in
# If-Range counts only when it is a strong validator (RFC 9110 13.1.5,
# 8.8.2.2): a file dated less than a second before the answer (or after it)
# gets its whole body, never a range.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.workers=1 --set site.access_log=stderr
ok $? "tlsboxd serves the site"
W="$TB_TMP/www"
C=(curl -s --cacert "$CA" --max-time 10)
# The raw HTTP/2 client reads the answer's fields with python3-hpack, a
# Debian package: Debian's python3, whatever python3 PATH finds first.
H2S() { /usr/bin/python3 "$top_srcdir/plugins/site/tests/h2_streams.py" "$@"; }

# ---- CONNECT ---------------------------------------------------------------------------------
# HTTP/1.1's answer: the status and the Allow field.
h1=$("${C[@]}" --http1.1 -X CONNECT --request-target localhost:443 -D - -o /dev/null "$URL/" |
    tr -d '\r' | sed -n -e 's/^HTTP\/1.1 \([0-9]*\).*/status=\1/p' -e 's/^allow: /allow=/Ip' |
    paste -sd ' ')
is "$h1" "status=405 allow=GET, HEAD" "HTTP/1.1 CONNECT localhost:443: 405, Allow: GET, HEAD"
# :method and :authority only, no :scheme or :path: well-formed (RFC 9113 8.5).
out=$(H2S fields 127.0.0.1 "$P_HTTPS" :method=CONNECT :authority=localhost:443)
is "$out" "$h1
enable_connect_protocol=-" "HTTP/2 CONNECT localhost:443: the same 405 and Allow as HTTP/1.1, not 400"
# Extended CONNECT (RFC 8441) is not offered (no SETTINGS_ENABLE_CONNECT_PROTOCOL):
# a :protocol field is a stream error, PROTOCOL_ERROR (1).
out=$(H2S fields 127.0.0.1 "$P_HTTPS" :method=CONNECT :protocol=websocket :scheme=https \
    :path=/ :authority=localhost:443)
is "$out" "reset=1
enable_connect_protocol=-" "HTTP/2 CONNECT with :protocol: stream reset (PROTOCOL_ERROR)"
# A CONNECT with :scheme and :path but no :protocol is malformed (RFC 9113 8.5).
out=$(H2S fields 127.0.0.1 "$P_HTTPS" :method=CONNECT :scheme=https :path=/ \
    :authority=localhost:443)
is "$out" "reset=1
enable_connect_protocol=-" "HTTP/2 CONNECT with :scheme and :path: stream reset (PROTOCOL_ERROR)"
is "$(H2S fields 127.0.0.1 "$P_HTTPS" :method=GET :scheme=https :path=/ :authority=localhost |
    sed -n 1p)" "status=200 allow=-" "and a GET from the same raw client: 200"
is "$(grep -ao 'site access: 127.0.0.1 CONNECT .*' "$TB_TMP/daemon.log" | cut -d' ' -f4-7)" \
    "CONNECT localhost:443 HTTP/1.1 405
CONNECT localhost:443 HTTP/2 405" "the access log names the authority as the target, over both"

# ---- :authority and host ---------------------------------------------------------------------
# h2st AUTHORITY HOST: the :status nghttp gets for / with these two fields.
h2st() {
    nghttp -n -v -H ":authority: $1" -H "host: $2" "https://127.0.0.1:$P_HTTPS/" 2>&1 |
        sed -n 's/.*recv.*:status: //p'
}
is "$(h2st '[2001:DB8::1]:8443' '[2001:db8::1]:8443')" 200 \
    "h2 :authority [2001:DB8::1]:8443 and host [2001:db8::1]:8443 name one host: 200"
is "$(h2st '[2001:db8::a]' '[2001:DB8::A]')" 200 "the same without a port: 200"
is "$(h2st 'LocalHost:8443' 'localhost:8443')" 200 "a name in another case: 200"
is "$(h2st '[2001:db8::1]:8443' '[2001:db8::2]:8443')" 400 "two IPv6 hosts: 400"
is "$(h2st 'localhost:8443' 'localhost:9443')" 400 "one host on two ports: 400"
is "$(h2st '[2001:db8::1]:8443' '[2001:db8::1]:9443')" 400 "one IPv6 host on two ports: 400"
is "$(h2st 'localhost:8443' 'LOCALHOST')" 200 "a host without a port agrees with any (as before): 200"

# ---- If-Range with a date --------------------------------------------------------------------
# ifr PROTO NAME IF-RANGE: "STATUS BODY" for bytes 4- of NAME under If-Range.
ifr() {
    "${C[@]}" "$1" -r 4- -H "If-Range: $3" -w ' %{http_code}' "$URL/$2"
}
lastmod() {
    "${C[@]}" "$1" -D - -o /dev/null "$URL/$2" | tr -d '\r' | sed -n 's/^last-modified: //Ip'
}
now=$(date +%s)
echo "0123456789" >"$W/future.txt"
echo "0123456789" >"$W/past.txt"
# Dated an hour ahead of the clock: its Last-Modified is not a strong
# validator for a long while, however slowly the test runs.
touch -d "@$((now + 3600))" "$W/future.txt"
# Dated 5 s back: at least a second before any answer to come.
touch -d "@$((now - 5))" "$W/past.txt"
for proto in --http1.1 --http2; do
    lm=$(lastmod $proto future.txt)
    is "$lm" "$(TZ=GMT date -d "@$((now + 3600))" '+%a, %d %b %Y %H:%M:%S GMT')" \
        "$proto: Last-Modified of future.txt is its mtime"
    is "$(ifr $proto future.txt "$lm")" "0123456789
 200" "$proto: If-Range with the date of a file dated after the answer: the whole file, 200"
    et=$("${C[@]}" $proto -D - -o /dev/null "$URL/future.txt" | tr -d '\r' | sed -n 's/^etag: //Ip')
    is "$(ifr $proto future.txt "$et")" "456789
 206" "$proto: If-Range with its ETag (strong): 206"
    lm=$(lastmod $proto past.txt)
    is "$(ifr $proto past.txt "$lm")" "456789
 206" "$proto: If-Range with the date of a file dated 5 s before the answer: 206"
    is "$(ifr $proto past.txt "Sat, 01 Jan 2000 00:00:00 GMT")" "0123456789
 200" "$proto: If-Range with another date: 200"
done

tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
